/*
 * task.h - a subtask: one parallel instance of a vertex (a chain of
 * operators), with its input gate, its result partitions and, for a source,
 * the topic partitions it reads.
 *
 * A task is a node (node.h): the backend feeds it DATA and CREDIT messages
 * and deadlines, and calls ck_task work() to let it process. Each call is
 * a bounded step (input buffers or slices of the topic, until its records'
 * cost reaches the step's span), charges the step's CPU cost through the
 * platform, publishes sink output, then sends every buffer that has credit
 * and announces freed credit. Messages are taken between steps: where a
 * priority event may come (a source's trigger, an unaligned barrier) a
 * step is short (100 us of records' time, or one record), as Flink's task
 * looks at its mailbox between two records.
 *
 * State machine:
 *
 *   CREATED --first work(), nothing to restore: announce initial credit,
 *             TASK_RUNNING to the JM--> RUNNING
 *   CREATED --first work(), a checkpoint to restore: fetch its state file-->
 *             RESTORING --file checked and loaded, sinks' transactions
 *             recovered: TASK_RUNNING to the JM--> RUNNING
 *   RESTORING --the same, with input channel state (an unaligned
 *             checkpoint's): it goes in front of the gate's channels-->
 *             RUNNING, recovering: it processes that state as input, its
 *             gate announces no credit and it declines triggers and
 *             barriers (Flink's task is still INITIALIZING: its mailbox runs
 *             until every gate consumed its recovered state)
 *             --the gate read it all: TASK_RUNNING to the JM, credit
 *             announced--> RUNNING
 *   RUNNING --input ended (END_OF_PARTITION on every channel, or every
 *             topic partition read to its end): broadcast EOP--> ENDING
 *   ENDING  --every partition drained, no checkpoints (or restored as
 *             finished): TASK_FINISHED to the JM--> FINISHED
 *   ENDING  --every partition drained, checkpoints on: TASK_ENDED to the
 *             JM--> ENDED (Flink's FLIP-147: it goes on taking part in
 *             checkpoints, triggered directly, without barriers)
 *   ENDED   --a checkpoint it took with its input over completed, sinks
 *             committed: TASK_FINISHED--> FINISHED
 *   any     --protocol or memory error, a restore that failed (why: its
 *             CK_FAIL_RESTORE_* code), a lost connection: TASK_FAILED to
 *             the JM--> FAILED
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
 * the task snapshot at once, between steps; on hash and rebalance
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
 * Invariants (ck_task_check):
 *   (1) the task processes input only while every result partition is
 *       available (otherwise it is backpressured and its unread buffers
 *       hold back credit upstream): task_work keeps this one, and nothing
 *       after a step shows it;
 *   (2) busy + backpressured + idle time add up to the task's lifetime:
 *       once it runs, those of the metrics' current increment (since it
 *       started, or its last report) sum to the time it accounted since,
 *       never going back; the per-second series holds no more of each
 *       than that (less only where memory ran out for the series);
 *   (3) its input gate, result partitions, buffer debloating, keyed
 *       state and its host's network buffer pool keep their invariants
 *       (gate.h, partition.h, debloat.h, kstate.h, segpool.h);
 *   (4) once its input ended (ENDING, ENDED, FINISHED) every output has
 *       ended, and once ENDED or FINISHED every output is drained; a task
 *       a stop-with-savepoint finished did not end its input (its windows
 *       stay in the savepoint) and is exempt;
 *   (5) at most MAX_SNAPS snapshots are under way and MAX_SNAPS
 *       acknowledged ones remembered;
 *   (6) a snapshot under way is of a checkpoint it took (at most the
 *       latest), and holds what its stage holds: waiting for channel
 *       state, its capture; serializing, its encoded file; uploading,
 *       neither; none has uploads in flight before it uploads;
 *   (7) merging across checkpoints, the kept file's next append goes at
 *       a multiple of CK_STORE_APPEND_ALIGN, and a kept file still being
 *       made is made by a snapshot under way that is uploading;
 *   (8) per changelog operator: at most CLOG_MAX_INFLIGHT segment uploads
 *       in flight, and every segment doomed (deleted once its upload
 *       ends) is one of them; its segments in increasing order of
 *       sequence number; what acknowledged snapshots referred to at most
 *       what the changelog cut; a materialization's files set aside only
 *       while it uploads;
 *   (9) a restore's next handle is at most its last + 1; downloaded files
 *       are held only while RESTORING, and a downloaded range of a merged
 *       file only while a handle still to restore has a segment in it.
 *
 * Files: the lifecycle above is engine/task.c; snapshots (5, 6) are
 * engine/task_snapshot.c, file merging (7) engine/task_mfile.c, the state
 * changelog (8) engine/task_changelog.c, the restore (9)
 * engine/task_restore.c, each drawing its own state machine; they share
 * engine/task_impl.h, which nothing outside them includes (but
 * tests/test_task.c).
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
    const ck_graph *g;      /* the generation this env's subtasks run (ck_env_gen) */
    const ck_graph *gens;   /* every generation of the job's graph, gens[0] the job as
                             * submitted, 1 + n after rescale n (graph.h); NULL: g alone */
    int ngens;
    const ck_config *cfg;
    const ck_topic *topic;
    const char *job_id;     /* names the job's checkpoints in the store */
    uint64_t input_fp;      /* fingerprint of the input, recorded in checkpoints */
    ck_restore_point start; /* a savepoint the job starts from (id 0: none) */
    const ck_cp_meta *start_meta; /* its _metadata: its operators and state handles */
    const ck_op_slowdown *slowdowns; /* the timeline's slow_operator faults */
    int nslowdowns;
    /* A sink's transactions of attempt a are numbered from (txn_epoch + a)
     * << 32: above those a run this one took over left pending (0: none) */
    uint32_t txn_epoch;
} ck_job_env;

/* Generation gen of the job's graph, or NULL when it has none such. */
static inline const ck_graph *ck_env_gen(const ck_job_env *env, int gen)
{
    if (!env->gens)
        return gen == 0 ? env->g : NULL;
    return gen >= 0 && gen < env->ngens ? &env->gens[gen] : NULL;
}

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

/* TASK_FAILED body: u32 code | u64 detail | u16 key length | key | text.
 * The detail is the checkpoint for the CK_FAIL_RESTORE_* codes (the key:
 * the file whose restore failed) and the task manager for CK_FAIL_PEER.
 * A restore fails on the checkpoint itself (damaged, missing, unreadable:
 * restoring it again cannot work, and the job manager falls back to an
 * older one) or for a reason of its own (out of memory, an I/O error:
 * the restore is tried again from the same checkpoint). */
enum {
    CK_FAIL_TASK = 0,               /* the task failed */
    CK_FAIL_RESTORE_DAMAGED = 1,    /* a file's size or checksum is not what the
                                     * checkpoint recorded (truncated, bits flipped) */
    CK_FAIL_PEER = 2,               /* the connection to a task manager broke */
    CK_FAIL_RESTORE_MISSING = 3,    /* a file the checkpoint refers to is not in the
                                     * store, or it holds no state for the subtask */
    CK_FAIL_RESTORE_UNREADABLE = 4, /* a file as recorded that does not decode, or
                                     * does not fit the job */
    CK_FAIL_RESTORE_IO = 5,         /* the restore itself failed: memory, an I/O
                                     * error reading the store */
};
#define CK_FAIL_BODY_MIN 14 /* code, detail and key length */

/* 1 for the codes of a restore that failed on the checkpoint itself. */
static inline int ck_fail_is_fallback(uint32_t code)
{
    return code == CK_FAIL_RESTORE_DAMAGED || code == CK_FAIL_RESTORE_MISSING ||
           code == CK_FAIL_RESTORE_UNREADABLE;
}

/* "damaged", "missing", "unreadable", "io", "task", "peer" ("?" otherwise). */
const char *ck_fail_name(uint32_t code);

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

/* Checks the invariants above (invariant.h), its modules' with them: 0 or
 * CK_EINVARIANT, what names the subtask. A FAILED task is not checked. */
CK_MUST_CHECK
int ck_task_check(const ck_task *t, ck_inv *v);

#endif
