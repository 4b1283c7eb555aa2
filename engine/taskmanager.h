/*
 * taskmanager.h - a task manager: the node on every worker host that the
 * job manager talks to. It reports alive with a heartbeat every
 * heartbeat.interval (its first heartbeat registers it), starts the
 * subtasks the job manager deploys to it and stops them when told.
 *
 * DEPLOY body: u32 attempt | u64 checkpoint to restore (0: none) |
 *              u32 subtasks | u16 host per global subtask (CK_HOST_NONE:
 *              not in this attempt, whose regions are restarting) |
 *              u32 flags of the checkpoint | u32 the graph's generation the
 *              attempt runs (graph.h) | u16 length | its directory |
 *              when restoring, per subtask deployed on this task manager,
 *              in order: u32 global subtask | u32 vertex | u32 subtask
 *              index | u32 parallelism (the snapshot's subtask it
 *              restores, as the assignment said: assign.h; all three
 *              CK_TM_ORIGIN_OWN: its own) | its state handles (handle.h),
 *              as Flink's deployment descriptor carries JobManagerTaskRestore;
 *              with the next bit set (CK_DEPLOY_TAKES: its handles are
 *              of another parallelism's subtasks), after them per handle
 *              u32 vertex | u32 subtask | u32 parallelism | u32 what
 *              (CK_ASG_* bits) | i32 first | i32 last key group taken,
 *              then u32 count | count x (u32 operator | u8 length |
 *              state name | u32 old subtask | u32 first | u32 n): the
 *              operator state entries dealt to it (assign.h); with the
 *              bits after it set (CK_DEPLOY_MOVED_IN, _OUT), its input,
 *              its output channel state moves to other channels;
 *              the global subtask's top bit set (CK_DEPLOY_EMPTY) and
 *              nothing after it: the subtask starts empty (the assignment
 *              gives it no state: a new subtask of a rescaled vertex that
 *              keeps none, assign.h)
 * CANCEL body: u32 count | count x (u32 attempt | u32 global subtask)
 *
 * The job manager answers every heartbeat. A task manager that hears
 * nothing from it for heartbeat.timeout (a network partition) takes it
 * for lost and cancels every subtask it runs, as Flink's task executor
 * does when it disconnects from its job master; it keeps sending
 * heartbeats, and the first one that gets through registers it again.
 * Its heartbeats carry, as their epoch, 1 + the attempt it cancelled so:
 * a job manager that did not see the task manager as lost (the cut was
 * shorter on its side) learns that part of the running attempt is gone
 * and fails over, as Flink's job master does when a task executor's slot
 * report no longer holds the slots it allocated.
 *
 *   CONNECTED    --no answer within heartbeat.timeout: cancel all--> DISCONNECTED
 *   DISCONNECTED --an answer arrives--> CONNECTED
 *
 * It holds no job state: a task manager that crashes and comes back
 * registers again and gets new work from the job manager.
 *
 * Invariants (ck_tm_check):
 *   (1) before its first work() it has sent nothing and is not connected
 *       (next_hb is CK_TIME_NEVER); once started, its next heartbeat is
 *       due;
 *   (2) cancelled is 0, or 1 + an attempt deployed here (<= attempt + 1);
 *   (3) its host's network buffer pool keeps its invariants (segpool.h).
 */
#ifndef CK_TASKMANAGER_H
#define CK_TASKMANAGER_H

#include "config.h"
#include "coordinator.h"
#include "graph.h"
#include "node.h"
#include "platform.h"

typedef struct ck_tm {
    ck_platform *plat;
    const ck_graph *g;    /* generation 0 */
    const ck_graph *gens; /* every generation (ck_tm_generations), NULL: g alone */
    int ngens;
    int host;
    int ntm;         /* task managers in the cluster: hosts a DEPLOY may name */
    ck_time hb_interval, hb_timeout, next_hb;
    ck_time jm_seen; /* last answer from the job manager */
    int started;
    int connected;
    int has_attempt;    /* some subtask of `attempt` was deployed here */
    uint32_t attempt;   /* the newest such attempt */
    uint32_t cancelled; /* 1 + the attempt cancelled for the job manager's silence (0: none) */
} ck_tm;

/* host: this task manager's index, of ntm in the cluster. */
void ck_tm_init(ck_tm *tm, ck_platform *plat, const ck_graph *g, const ck_config *cfg, int host,
                int ntm);

/* The job's generations (graph.h): a DEPLOY may name any of them. */
void ck_tm_generations(ck_tm *tm, const ck_graph *gens, int ngens);

ck_node ck_tm_node(ck_tm *tm);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_tm_check(const ck_tm *tm, ck_inv *v);

/* The top bit of a DEPLOY's subtask: it starts empty. */
#define CK_DEPLOY_EMPTY 0x80000000u
/* The next bit: its handles are of another parallelism's subtasks, and
 * per handle its take follows them, then the operator state dealt. */
#define CK_DEPLOY_TAKES 0x40000000u
/* And the next two: its input (MOVED_IN), its output (MOVED_OUT) channel
 * state moves to other channels (assign.h ck_asg_task.moved_in, moved_out):
 * its gate waits for recovered markers, it sends its own. */
#define CK_DEPLOY_MOVED_IN 0x20000000u
#define CK_DEPLOY_MOVED_OUT 0x10000000u

/* Builds the DEPLOY body for task manager `host` (malloc'd) of an attempt
 * of generation gen; from: NULL or id 0 to start fresh, else handles[g]
 * are the state handles subtask g restores (NULL: it starts empty), and
 * origins[3g..3g+2] the vertex, subtask index and parallelism of the
 * snapshot's subtask whose state they are, as the assignment said
 * (assign.h; origins NULL: each subtask its own, the identity assignment,
 * sent as CK_TM_ORIGIN_OWN). NULL when out of memory. */
#define CK_TM_ORIGIN_OWN UINT32_MAX

/* The generation a DEPLOY body (b, len bytes) deploys, or -1 when it is
 * too short to say: for the moment a rescale's deployment is. */
int ck_tm_deploy_generation(const uint8_t *b, size_t len);
uint8_t *ck_tm_deploy_body(uint32_t attempt, int gen, const ck_restore_point *from, uint32_t n,
                           const uint16_t *hosts, const ck_handles *const *handles,
                           const uint32_t *origins, int host, size_t *len);
/* The same, where points[g] (points NULL: none) may give subtask g's
 * takes and chunks (its handles of another parallelism's subtasks:
 * ck_restore_point.takes, .chunks), sent with CK_DEPLOY_TAKES. */
uint8_t *ck_tm_deploy_body_takes(uint32_t attempt, int gen, const ck_restore_point *from,
                                 uint32_t n, const uint16_t *hosts,
                                 const ck_handles *const *handles, const uint32_t *origins,
                                 const ck_restore_point *points, int host, size_t *len);

#endif
