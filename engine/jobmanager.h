/*
 * jobmanager.h - the job manager: it places and deploys the job on the
 * task managers that registered, watches them (heartbeats) and the job's
 * subtasks, coordinates checkpoints, and when something fails, cancels
 * what failed and, as the restart strategy allows, redeploys it as a new
 * attempt from the latest completed checkpoint.
 *
 * What a failure restarts (jobmanager.execution.failover-strategy, as
 * Flink's RestartPipelinedRegionFailoverStrategy and
 * RestartAllFailoverStrategy): with `region` (the default) the pipelined
 * regions of the subtasks that failed, with `full` every subtask. A job
 * with a keyBy is one region, so both restart all of it. A failure of the
 * job as a whole (too many checkpoint failures, a stop-with-savepoint that
 * failed on a task) restarts everything, as Flink's global failover does.
 * A region restart leaves the job RUNNING: the other regions go on, and
 * the checkpoint coordinator aborts the pending checkpoints and starts none
 * until the restarted subtasks run (ck_cc_hold). Every deployment is a new
 * attempt number, so subtasks of several attempts run at once; each
 * subtask's own attempt is sub_attempt[].
 *
 * State machine of the job:
 *
 *   WAITING    --every task manager registered (or enough, once the
 *                start-up grace passed): DEPLOY attempt 0--> RUNNING
 *   RUNNING    --every subtask finished--> FINISHED (exactly once: every
 *                subtask ended its input, the final checkpoint completed,
 *                the sinks committed, then they finish)
 *   RUNNING    --a subtask failed, a task manager was lost (heartbeat
 *                timeout; heartbeat.rpc-failure-threshold failed heartbeat
 *                RPCs once its connection is refused; or a new process of
 *                its host registering), or too many checkpoints failed:
 *                CANCEL what it restarts; all of it--> RESTARTING
 *   RUNNING    --the same, but some regions go on: CANCEL the failed
 *                regions--> RUNNING with them restarting; after the delay,
 *                once slots are there, DEPLOY them alone as attempt n+1
 *                restoring the latest checkpoint (a failure meanwhile joins
 *                the pending restart; one that covers every subtask makes
 *                it full)
 *   RESTARTING --the restart strategy refuses--> FAILED
 *   RESTARTING --its delay passed and enough task managers are alive:
 *                DEPLOY attempt n+1 restoring the latest checkpoint--> RUNNING
 *   RESTARTING/WAITING --no resources within the slot request timeout--> FAILED
 *   RUNNING    --a stop-with-savepoint completed and every subtask ended-->
 *                FINISHED, or RESTARTING from the savepoint when the stop
 *                asked to resume after a while (an upgrade, in one run)
 *
 * A rescale (CK_MSG_RESCALE, the timeline's `rescale` event) is recorded
 * in `rescales` and goes one of two ways:
 *
 *   via savepoint (a user of Flink's default scheduler: `flink stop`, then
 *   a resubmission at the new parallelism):
 *   RUNNING    --RESCALE: stop-with-savepoint (on_rescale_request)--> RUNNING
 *                stopping --it completed and every subtask ended
 *                (all_finished)--> RESTARTING at once --DEPLOY attempt n+1
 *                from the savepoint (deploy)--> RUNNING --every subtask
 *                running (check_restored)--> the rescale restored
 *   via checkpoint (Flink 1.20's adaptive scheduler, FLIP-461):
 *   RUNNING    --RESCALE: wait--> RUNNING --the next checkpoint completed,
 *                or rescale-trigger.max-checkpoint-failures failed, or
 *                rescale-trigger.max-delay passed: CANCEL every subtask
 *                (rescale_restart)--> RESTARTING at once --DEPLOY attempt
 *                n+1 from the latest completed checkpoint--> RUNNING
 *
 * A rescale is refused (and recorded so) when the job is not RUNNING, is
 * stopping, restoring, restarting regions or already rescaling. A failure
 * before the rescale restored interrupts it: the failover restarts the job
 * as any failure does. Rescale n redeploys the job on generation 1 + n of
 * its graph (graph.h; the runner builds every generation from the
 * scenario up front): at its redeployment the job manager and the
 * coordinator take the new generation's subtasks (regenerate), and what
 * each new subtask restores is the state assignment's (assign.h), planned
 * from the snapshot's own generation into the new one, as at every
 * deployment that restores: a subtask of a vertex that kept its
 * parallelism restores its own state; where the parallelism changed, a
 * vertex that keeps no state (ck_asg_vertex_state) starts empty, and one
 * that does is refused by ck_asg_applicable (the job fails naming it: the
 * runner refuses such a rescale up front by the same rule).
 *
 * A restore that fails on the checkpoint itself (a file damaged or
 * missing, or one that does not decode: ck_fail_is_fallback) marks it
 * unrestorable, and the next attempt falls back to the previous completed
 * checkpoint; with none left, the job fails naming the file. Each such
 * fallback is recorded (`fallbacks`: from which checkpoint, to which, the
 * file and why), since falling back past a completed checkpoint replays
 * input whose output that checkpoint already committed: whoever judges
 * the run decides whether that was allowed (a file damaged on purpose).
 * A restore that failed for a reason of its own (memory, an I/O error)
 * is an ordinary failure: the next attempt restores the same checkpoint.
 *
 * Invariants (ck_jm_check):
 *   (1) messages from a subtask's other attempts than the one it runs
 *       (sub_attempt), or while it is restarting, are ignored (on_message
 *       keeps it: no state shows it);
 *   (2) metrics arrive as increments and are added up per subtask across
 *       attempts (on_metrics keeps it);
 *   (3) every failure while RUNNING opens one entry in `recoveries`, unless
 *       a region restart is pending, which it joins; an entry's phases are
 *       in order where known: failed <= detected <= restarted <= restored
 *       <= caught_up, restored only once restarted;
 *   (4) a subtask runs an attempt deployed already (sub_attempt <=
 *       attempt), and the checkpoint coordinator addresses it at that
 *       attempt (cc.attempts);
 *   (5) nfinished, nended and nrestarting count the subtasks marked done,
 *       ended and restarting; regions restart only while the job RUNNING
 *       (or once it FAILED meanwhile); a FINISHED job's subtasks all
 *       finished;
 *   (6) the coordinator's marks of ended and finished subtasks are the
 *       job manager's;
 *   (7) the checkpoint coordinator keeps its invariants (coordinator.h);
 *   (8) a rescale's phases are in order where known: trigger <= snapshot
 *       <= stopped <= deployed <= restored <= caught_up, each only once the
 *       one before it (snapshot aside: a checkpoint rescale that fell back
 *       has none); at most one rescale is under way (`rescaling`), and
 *       every other has an outcome.
 *   (9) g is the last era's generation, the eras' first attempts rise and
 *       are at most `attempt`; every pending checkpoint is of g.
 */
#ifndef CK_JOBMANAGER_H
#define CK_JOBMANAGER_H

#include "coordinator.h"
#include "graph.h"
#include "metrics.h"
#include "node.h"
#include "platform.h"
#include "restart.h"
#include "task.h"

typedef enum ck_job_state {
    CK_JOB_WAITING,
    CK_JOB_RUNNING,
    CK_JOB_RESTARTING,
    CK_JOB_FINISHED,
    CK_JOB_FAILED,
} ck_job_state;

/* Why a job FAILED (Flink's job goes FAILED for the same reasons). */
typedef enum ck_job_failure {
    CK_JOBFAIL_NONE = 0,
    CK_JOBFAIL_RESTARTS_EXHAUSTED, /* the restart strategy gave up */
    CK_JOBFAIL_NO_CHECKPOINT,      /* no checkpoint left that a restore did not fail on */
    CK_JOBFAIL_NO_SLOTS,           /* no task managers within the slot request timeout */
    CK_JOBFAIL_NO_ENDPOINTS,       /* no endpoints left for another attempt */
    CK_JOBFAIL_OUT_OF_MEMORY,
    CK_JOBFAIL_STALLED,            /* the backend ended the run: nothing left to happen */
} ck_job_failure;

/* "restarts_exhausted", ...; "none" for CK_JOBFAIL_NONE. */
const char *ck_job_failure_name(ck_job_failure f);

/* How long a job waits for task managers before it fails (Flink's
 * slot.request.timeout). */
#define CK_SLOT_REQUEST_TIMEOUT (300 * CK_NS_PER_S)

/* How long the first deployment waits for every task manager of the
 * cluster to register, once enough have (as Flink's
 * resourcemanager.standalone.start-up-time): the job is then placed on task
 * managers in their order, whichever process started first. */
#define CK_STARTUP_GRACE (1 * CK_NS_PER_S)

typedef struct ck_recovery {
    ck_time failed;        /* when it stopped working, if the job manager knows */
    ck_time detected, restarted, restored, first_output, caught_up;
    /* its restore, over the subtasks it restarted: the longest download of
     * their state, the longest loading of it (decoding, replaying the
     * changelog, writing native files out), the longest reading of the
     * input channel state they restored (an unaligned checkpoint's; Flink's
     * gate restore), the bytes downloaded */
    int64_t restore_download, restore_load, restore_channels;
    uint64_t restore_bytes;
    uint64_t restore_records; /* in-flight records replayed from channel state, by all */
    uint32_t attempt;      /* the attempt that recovered */
    uint64_t checkpoint;   /* restored from (0: from the start) */
    int64_t lag_before;    /* source lag (ns) reported before the failure */
    int host;              /* the task manager whose loss caused it, or -1 */
    uint32_t nsubtasks;    /* of the generation it restarted (graph.h) */
    uint8_t *subtasks;     /* per global subtask: 1 when this recovery restarted it
                            * (full failover: every one; region failover: the
                            * failed subtasks' regions) */
    char cause[200];
} ck_recovery;

/* A materialization of a changelog backend's state (state.changelog.*):
 * subtask g's operator op, holding the changes below seq, taken at
 * `started`, in the store `duration` later; `bytes` uploaded for it, of a
 * state of `state_bytes`. */
typedef struct ck_materialization {
    uint32_t subtask, op; /* subtask: global, in generation gen's graph */
    int gen;
    uint64_t seq;
    ck_time started, duration;
    uint64_t bytes, state_bytes;
} ck_materialization;

/* A restore that failed on checkpoint `from` itself (code: one of the
 * CK_FAIL_RESTORE_* codes ck_fail_is_fallback accepts), heard of at `at`
 * from subtask `subtask`: the job went back to checkpoint `to` (0: none
 * was left, and the job failed). */
typedef struct ck_fallback {
    ck_time at;
    uint64_t from, to;
    uint32_t subtask; /* global, in generation gen's graph (graph.h) */
    int gen;
    uint32_t code;
    char key[CK_HANDLE_KEY_MAX + 1]; /* the file it could not restore ("": none named) */
    char why[320];                   /* the subtask's message */
} ck_fallback;

/* How a rescale goes (ck_rescale.via; the scenario's "via"). */
enum { CK_RESCALE_VIA_SAVEPOINT = 0, CK_RESCALE_VIA_CHECKPOINT = 1 };

/* What became of a rescale. */
typedef enum ck_rescale_outcome {
    CK_RESCALE_UNDER_WAY = 0, /* not restored yet (or the run ended first) */
    CK_RESCALE_DONE,          /* every subtask runs restored */
    CK_RESCALE_REFUSED,       /* the job could not rescale then (why) */
    CK_RESCALE_FAILED,        /* its stop-with-savepoint failed: the job went on (why) */
    CK_RESCALE_INTERRUPTED,   /* a failure came first: the job failed over (why) */
} ck_rescale_outcome;

/* "under_way", "done", "refused", "failed", "interrupted". */
const char *ck_rescale_outcome_name(ck_rescale_outcome o);

/* One rescale, its phases as the job manager saw them (CK_TIME_NEVER: not
 * reached): asked for at `trigger`; its savepoint, or the checkpoint it
 * waited for, complete at `snapshot`; the old attempt stopped (every
 * subtask ended at the savepoint, or cancelled) at `stopped`; the new one
 * deployed, restored (every subtask running), its first output and the
 * sources caught up. */
typedef struct ck_rescale {
    uint32_t number; /* its number among the timeline's rescales */
    int via;         /* CK_RESCALE_VIA_* */
    ck_time trigger, snapshot, stopped, deployed, restored, first_output, caught_up;
    ck_time deadline;    /* via checkpoint: when it stops waiting (rescale-trigger.max-delay) */
    int waited;          /* via checkpoint: 1 a checkpoint completed after the trigger, 0 it
                          * fell back (max delay or failures) */
    uint64_t checkpoint; /* the savepoint or checkpoint the new attempt restored (0: none) */
    uint64_t savepoint;  /* via savepoint: its stop-with-savepoint */
    uint32_t attempt;    /* the attempt it deployed */
    int gen;             /* the generation of the job's graph it deploys (graph.h:
                          * 1 + its number; the job's own when the job has none such) */
    /* its restore, as a recovery's: the slowest subtask's download, load
     * and channel-state reading, the bytes downloaded by all */
    int64_t restore_download, restore_load, restore_channels;
    uint64_t restore_bytes;
    uint64_t restore_records; /* in-flight records replayed from channel state, by all */
    /* the keyed-state instances its subtasks rebuilt for their new key
     * groups (kstate.h): summed, and how many by each path */
    ck_kstate_rebuild rebuild;
    uint32_t rebuild_paths[CK_KS_REBUILD_NPATHS];
    int64_t lag_before; /* the sources' lag before the trigger */
    ck_rescale_outcome outcome;
    char why[200]; /* refused, failed, interrupted: why */
} ck_rescale;

/* Reports over which a source's lag before a failure is taken: its level
 * then is the greatest of them, not one sample of a lag that jitters. */
#define CK_JM_LAG_REPORTS 4

/* A run of attempts on one generation of the job's graph. */
typedef struct ck_jm_era {
    uint32_t first_attempt; /* the first attempt deployed on it */
    const ck_graph *g;
} ck_jm_era;

typedef struct ck_jm {
    ck_platform *plat;
    const ck_graph *g;    /* the generation the job runs (graph.h): per-subtask arrays are
                           * its nsubtasks long */
    const ck_graph *gens; /* every generation (env's), NULL: g alone */
    int ngens;
    ck_jm_era *eras;      /* the generations deployed, in order (the last: g's) */
    int neras;
    ck_task_stats retired; /* the counts of subtasks of earlier generations that this
                            * one does not have (a vertex rescaled in) */
    const ck_config *cfg;
    const ck_topic *topic; /* the job's input (env's; NULL in some tests): whose partitions
                            * the sources' restore deals out */
    ck_job_state state;
    int ntm;
    ck_time *tm_seen;    /* last heartbeat per task manager, CK_TIME_NEVER: not alive */
    ck_time *tm_refused; /* since when its connection is refused (heartbeat RPCs fail),
                          * CK_TIME_NEVER: reachable */
    uint8_t *tm_newer;   /* a new process of its host registered while the one the job
                          * runs on is still counted: its heartbeats are not that one's */
    uint16_t *placement; /* host per global subtask, its running attempt */
    uint16_t *lhost;     /* task manager per group of slots-per-task-manager slots */
    uint32_t attempt;    /* the newest attempt deployed */
    uint32_t *sub_attempt; /* per subtask: the attempt it runs */
    int region_failover; /* jobmanager.execution.failover-strategy: region */
    uint32_t *region;    /* per subtask: its pipelined region (ck_graph_regions) */
    uint8_t *restarting; /* per subtask: cancelled, its region waits to be redeployed */
    uint32_t nrestarting;
    uint64_t restore_cp;     /* = restore.id */
    ck_restore_point restore; /* what the current attempt restored */
    ck_restore_point base;   /* a savepoint the job started or resumed from */
    uint64_t start_id;       /* the savepoint the job started from (0: none), */
    const ck_cp_meta *start_meta; /* and its _metadata (env's) */
    uint64_t stop_id;        /* a stop-with-savepoint under way */
    ck_time stop_resume;     /* ...and how long after it the job resumes (0: it ends) */
    uint64_t stopped_with;   /* the savepoint the job ended with */
    uint32_t nfinished, nended;
    uint8_t *done, *running, *ended; /* per subtask, its running attempt */
    ck_metrics *tasks;   /* per subtask, summed over attempts */
    ck_metrics job;      /* merged series and histograms */
    ck_metrics *vertices; /* per vertex: its subtasks' series merged, without histograms */
    int64_t *lag_ns;     /* per source subtask: its last reported lag; -1 until the
                          * current attempt's first report */
    int64_t *lag_recent; /* per source subtask: its last CK_JM_LAG_REPORTS lags... */
    uint32_t *lag_count; /* ...of which this many are this attempt's (a ring) */
    ck_time end;
    ck_time restart_at, waiting_since;
    int restart_due;     /* RESTARTING: restart_at has not been acted on yet */
    ck_restart rs;
    ck_cc cc;
    ck_recovery *recoveries;
    size_t nrecoveries, caprecoveries;
    ck_materialization *mats; /* in the order they were reported */
    size_t nmats, capmats;    /* capmats in bytes (ck_reserve) */
    ck_rescale *rescales;   /* in the order they were asked for */
    size_t nrescales;
    size_t rescaling;       /* 1 + the index of the one under way, 0: none */
    size_t rescale_tracked; /* 1 + the index of the last deployed (its first output and
                             * catching up are measured), 0: none */
    ck_fallback *fallbacks; /* restores that failed on their checkpoint, in order: */
    size_t nfallbacks;      /* those checkpoints are never restored again */
    char failure[512];   /* FAILED: why, one line */
    ck_job_failure failed_because;
} ck_jm;

/* Returns 0 or CK_ENOMEM. ntm: task managers the cluster has; the job
 * starts from env->start when it names a savepoint. */
CK_MUST_CHECK
int ck_jm_init(ck_jm *jm, ck_platform *plat, const ck_job_env *env, int ntm, uint64_t seed);

/* The body of a SAVEPOINT request: u64 resume-after ns (stop only; 0: end).
 * The header's arg is 1 for stop-with-savepoint. */
#define CK_SAVEPOINT_BODY 8
void ck_jm_free(ck_jm *jm);

ck_node ck_jm_node(ck_jm *jm);

const char *ck_job_state_name(ck_job_state s);

/* Checks the invariants above (invariant.h), the coordinator's with them:
 * 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_jm_check(const ck_jm *jm, ck_inv *v);

#endif
