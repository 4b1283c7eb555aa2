/*
 * task.h - a subtask: one parallel instance of a vertex (a chain of
 * operators), with its input gate, its result partitions and, for a source,
 * the topic partitions it reads.
 *
 * A task is a node (node.h): the backend feeds it DATA and CREDIT messages
 * and deadlines, and calls ck_task work() to let it process. Each call
 * processes a bounded batch (one input buffer, or a slice of the topic),
 * charges the batch's CPU cost through the platform, publishes sink output,
 * then sends every buffer that has credit and announces freed credit.
 *
 * State machine:
 *
 *   CREATED --first work(), nothing to restore: announce initial credit,
 *             TASK_RUNNING to the JM--> RUNNING
 *   CREATED --first work(), a checkpoint to restore: fetch its state file-->
 *             RESTORING --file checked and loaded, sinks' transactions
 *             recovered: TASK_RUNNING to the JM--> RUNNING
 *   RUNNING --input ended (END_OF_PARTITION on every channel, or every
 *             topic partition read to its end): broadcast EOP--> ENDING
 *   ENDING  --every partition drained, no checkpoints (or restored as
 *             finished): TASK_FINISHED to the JM--> FINISHED
 *   ENDING  --every partition drained, checkpoints on: TASK_ENDED to the
 *             JM--> ENDED (Flink's FLIP-147: it goes on taking part in
 *             checkpoints, triggered directly, without barriers)
 *   ENDED   --a checkpoint it took with its input over completed, sinks
 *             committed: TASK_FINISHED--> FINISHED
 *   any     --protocol or memory error, a damaged state file, a lost
 *             connection: TASK_FAILED to the JM--> FAILED
 *
 * Checkpoints: a source takes its snapshot when the job manager triggers
 * one; any other task when its input gate has aligned the barrier. The
 * synchronous phase captures state (copy-on-write), pre-commits the sinks'
 * transactions and forwards the barrier; the asynchronous phase serializes
 * the capture (background CPU), uploads it and acknowledges to the job
 * manager. When the job manager reports a checkpoint complete, sinks commit
 * the transactions it covers (two-phase commit; latency is measured then).
 *
 * Unaligned checkpoints: the first EVENT barrier at the input gate makes
 * the task snapshot at once, between batches; on hash and rebalance
 * outputs the barrier overtakes what is queued, which joins the snapshot
 * as channel state. With the aligned-checkpoint timeout, at the
 * checkpoint's start plus the timeout the gate's alignment turns
 * unaligned and barriers still queued in the outputs overtake. A snapshot
 * waits (SNAP_CHANNELS) until its channel state is complete, then goes
 * on to its asynchronous phase:
 *
 *   sync phase --channel state complete--> SERIALIZING --> UPLOADING --> ACK
 *   SNAP_CHANNELS --gate gave it up (newer barrier, cancel marker)--> DECLINE
 *   any --ABORT from the job manager--> dropped
 *
 * Buffer debloating: each period the task measures its input throughput
 * over the time it was not idle and the gate announces a new buffer size
 * upstream when it moved enough (debloat.h).
 *
 * Invariants: the task processes input only while every result partition
 * is available (otherwise it is backpressured and its unread buffers hold
 * back credit upstream); busy + backpressured + idle time add up to the
 * task's lifetime.
 */
#ifndef CK_TASK_H
#define CK_TASK_H

#include "gate.h"
#include "coordinator.h"
#include "graph.h"
#include "metrics.h"
#include "node.h"
#include "operator.h"
#include "topic.h"

typedef enum ck_task_state {
    CK_TASK_CREATED,
    CK_TASK_RESTORING,
    CK_TASK_RUNNING,
    CK_TASK_ENDING,
    CK_TASK_ENDED, /* input over, waiting for the final checkpoint */
    CK_TASK_FINISHED,
    CK_TASK_FAILED,
} ck_task_state;

/* What every task of a job shares, read-only. */
typedef struct ck_job_env {
    const ck_graph *g;
    const ck_config *cfg;
    const ck_topic *topic;
    const char *job_id;     /* names the job's checkpoints in the store */
    uint64_t input_fp;      /* fingerprint of the input, recorded in checkpoints */
    ck_restore_point start; /* a savepoint the job starts from (id 0: none) */
    const ck_handles *start_handles; /* its state handles, per global subtask */
    const ck_op_slowdown *slowdowns; /* the timeline's slow_operator faults */
    int nslowdowns;
    /* A sink's transactions of attempt a are numbered from (txn_epoch + a)
     * << 32: above those a run this one took over left pending (0: none) */
    uint32_t txn_epoch;
} ck_job_env;

typedef struct ck_task ck_task;

/*
 * Creates subtask `global` of attempt `attempt` of the job, talking through
 * plat, to restore checkpoint or savepoint `from` first (NULL: start fresh).
 * Returns NULL when out of memory (or when the platform makes the
 * allocation of CK_POINT_DEPLOY fail).
 */
ck_task *ck_task_new(const ck_job_env *env, ck_platform *plat, uint32_t global,
                     uint32_t attempt, const ck_restore_point *from);

/*
 * Subtask `global` of `attempt` could not be created (ck_task_new returned
 * NULL): it tells the job manager that it failed, through plat (the
 * platform of its own endpoint), as Flink's task executor answers a
 * submission that failed, so that the job fails over rather than waits
 * for a subtask that will never run.
 */
void ck_task_deploy_failed(const ck_job_env *env, ck_platform *plat, uint32_t global,
                           uint32_t attempt);

/* TASK_FAILED body: u32 code | u64 detail | text. The detail is the
 * checkpoint for CK_FAIL_RESTORE and CK_FAIL_RESTORE_IO, the task manager
 * for CK_FAIL_PEER. */
enum {
    CK_FAIL_TASK = 0,    /* the task failed */
    CK_FAIL_RESTORE = 1, /* the checkpoint's state file is damaged or missing */
    CK_FAIL_PEER = 2,    /* the connection to a task manager broke */
    CK_FAIL_RESTORE_IO = 3, /* the restore failed, the checkpoint not found damaged: the
                             * store answered an I/O error, memory ran out. A failure
                             * like CK_FAIL_TASK: the restart restores the same one */
};

/* Metrics reach the job manager at least this often (a metrics reporter). */
#define CK_METRICS_INTERVAL (250 * CK_NS_PER_MS)
void ck_task_del(ck_task *t);

/* The task is cancelled (its attempt failed over): it sends the job
 * manager what it measured since its last report, so that what every
 * attempt read is counted. A task on a host that crashed cannot: what it
 * read after its last report (at most CK_METRICS_INTERVAL, and never past
 * its latest snapshot, when a source reports too) is lost with it. Its
 * network buffers go back to the host's pool at once; it must not run
 * again. */
void ck_task_cancel(ck_task *t);

/* The task's host went down with it: its share of the host's network
 * buffers and the buffers it held are free again at once (a task manager
 * that comes back starts with its whole pool), though the task is freed
 * later. It must not run again. */
void ck_task_host_down(ck_task *t);

/* The node interface of the task. */
ck_node ck_task_node(ck_task *t);

ck_task_state ck_task_get_state(const ck_task *t);

/* The task's metrics so far (valid until the task is deleted). */
const ck_metrics *ck_task_metrics(const ck_task *t);

const char *ck_task_state_name(ck_task_state s);

#endif
