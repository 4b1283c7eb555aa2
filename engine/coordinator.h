/*
 * coordinator.h - the checkpoint coordinator of the job manager
 * (asynchronous barrier snapshotting, as Flink's CheckpointCoordinator).
 *
 * Every execution.checkpointing.interval it triggers checkpoint n at the
 * source subtasks, which inject barrier n into the stream. Each subtask
 * acknowledges once its state for n is in the durable store; when every
 * subtask has, the coordinator writes <dir>/<job-id>/chk-<n>/_metadata
 * (last, so a checkpoint without metadata is not one), and only when that
 * write completes is n complete: subtasks are notified (sinks commit) and
 * checkpoints beyond execution.checkpointing.num-retained are deleted.
 *
 * State machine of one checkpoint:
 *
 *   PENDING --every subtask acked--> (metadata write) --done--> COMPLETED
 *   PENDING --timeout--> EXPIRED          (a failure)
 *   PENDING --a subtask declined--> DECLINED (a failure unless the decline
 *                                    says "not ready" or "subsumed")
 *   PENDING --a newer checkpoint completed--> ABORTED
 *   PENDING --an ack reuses a shared file nothing refers to--> DECLINED
 *                                   (not a failure: its base was retired)
 *
 * A failed checkpoint's directory is deleted when it fails, and again
 * whenever a put of its own lands after that (its metadata, or a finished
 * subtask's state file, on its way when a newer checkpoint that overtook
 * it completed): no _metadata of a checkpoint that did not complete stays.
 *
 * Triggering respects max-concurrent-checkpoints and min-pause (measured
 * from the end of the last completed checkpoint or savepoint). More consecutive
 * failures than tolerable-failed-checkpoints make `failed` true: the job
 * must fail over. As Flink's CheckpointFailureManager counts them: an
 * expiry, a subtask's decline for a failure, or metadata (or a finished
 * subtask's state) not stored counts, once per checkpoint; an abort, a
 * decline for any other reason, or the failure of one older than the
 * last checkpoint or savepoint that completed does not; a completed
 * checkpoint or savepoint ends the run of failures.
 *
 * Checkpoints after tasks finish (FLIP-147, as Flink's
 * CheckpointPlanCalculator; execution.checkpointing.
 * checkpoints-after-tasks-finish, on by default):
 *   - a subtask that ended its input (ENDED: its outputs closed with
 *     END_OF_PARTITION) is triggered directly, takes its snapshot and sends
 *     no barrier; downstream, a channel that ended counts as aligned. One
 *     that ends while a checkpoint it has not acknowledged is pending is
 *     triggered for it then;
 *   - a subtask that finished counts as acknowledged, with a state file
 *     the coordinator writes that says "finished" (the _metadata is
 *     written once those are stored): restored, it stays finished;
 *   - once every subtask has ended or finished, the final checkpoint is
 *     triggered at once (FLINK-28386) at the ended ones.
 * With the option off, triggering stops once any subtask ends, and the
 * pending checkpoints it has not acknowledged abort.
 *
 * Savepoints are checkpoints the user asks for (ck_cc_trigger_savepoint),
 * as in Flink 1.15+: they share the id sequence, go to
 * savepoints/savepoint-<job-id prefix>-<id>/, are never deleted and not
 * used for failover; their failures count against tolerable failures
 * only when a subtask declined an intermediate one (a failover may help
 * there; a stop-with-savepoint a subtask declined fails the job over
 * instead, and one the job manager failed, expired say, is the user's to
 * ask again: handleTaskLevelCheckpointException); an
 * intermediate savepoint commits nothing (no COMPLETE is sent), while a
 * stop-with-savepoint does, and the job then ends.
 *
 * Invariants (ck_cc_check):
 *   (1) ids increase from first_id (1, or one past the savepoint the job
 *       started from) without gaps: cps[i].id = first_id + i, next_id =
 *       first_id + ncps;
 *   (2) npending = the checkpoints PENDING;
 *   (3) a pending checkpoint's nacks = its subtasks acknowledged (a
 *       finished one counts as acknowledged); its metadata is written only
 *       once every subtask acknowledged and no finished subtask's state
 *       file is still being stored; it is of the generation of the job's
 *       graph the job runs (a checkpoint keeps the generation that took
 *       it: its subtasks are that one's);
 *   (4) a checkpoint is COMPLETED only after its metadata is stored; one
 *       that is no longer PENDING has its end time, not before its trigger;
 *   (5) a completed checkpoint's files stay in the store until
 *       num-retained newer ones completed: a checkpoint is retired iff it
 *       completed, is not a savepoint, and num-retained newer checkpoints
 *       completed;
 *   (6) the shared-state registry counts exactly the references of what
 *       keeps files: the acknowledged subtasks of pending checkpoints, the
 *       completed checkpoints not retired, and the snapshot the job
 *       started from until it is retired; each key they refer to is in it
 *       (and the registry keeps its own invariants, sharedreg.h);
 *   (7) nfinished = the subtasks marked finished, and a finished subtask
 *       is acknowledged in every pending checkpoint;
 *   (8) while part of the job restores (restoring), no checkpoint is
 *       pending: none starts until the restarted subtasks run.
 */
#ifndef CK_COORDINATOR_H
#define CK_COORDINATOR_H

#include "config.h"
#include "graph.h"
#include "handle.h"
#include "invariant.h"
#include "platform.h"
#include "rng.h"
#include "sharedreg.h"
#include "wire.h"

typedef enum ck_cp_status {
    CK_CP_PENDING,
    CK_CP_COMPLETED,
    CK_CP_EXPIRED,
    CK_CP_DECLINED,
    CK_CP_ABORTED,
} ck_cp_status;

/* Decline reasons (u32 after the id in a DECLINE body). */
enum {
    CK_DECLINE_FAILURE = 0,   /* counted as a failed checkpoint */
    CK_DECLINE_NOT_READY = 1, /* the subtask is not running (finished) */
    CK_DECLINE_SUBSUMED = 2,  /* a newer checkpoint overtook it */
    CK_DECLINE_CANCELLED = 3, /* declined upstream: its cancel marker came instead */
};

/* What a checkpoint is (u32 flags of TRIGGER, of barriers, of _metadata). */
#define CK_CP_FLAG_SAVEPOINT 1u /* = CK_BARRIER_SAVEPOINT */
#define CK_CP_FLAG_STOP 2u      /* = CK_BARRIER_STOP: the job stops once it completes */
#define CK_CP_FLAG_FINAL 4u     /* the final checkpoint of a job whose input ended:
                                 * triggered at every subtask, no barriers */
#define CK_CP_FLAG_UNALIGNED 8u /* = CK_BARRIER_UNALIGNED: barriers overtake data */
#define CK_CP_FLAG_TIMEOUTABLE 16u /* = CK_BARRIER_TIMEOUTABLE: aligned, then unaligned */
#define CK_CP_FLAG_FULL 32u /* = CK_BARRIER_FULL: refers to no file of an earlier
                             * checkpoint (Flink's FULL_CHECKPOINT: forced after a
                             * restore in NO_CLAIM mode) */

/* Where a job (re)starts from: a checkpoint or savepoint and its directory
 * in the store ("checkpoints/<job>/chk-3/", "savepoints/savepoint-ab12cd-7/").
 * Deploying a subtask, `handles` are the state handles it restores
 * (borrowed for the call: ck_task_new copies them), and old_vertex,
 * old_subtask, old_parallelism the snapshot's subtask whose state they
 * are, as the assignment (assign.h) said; elsewhere NULL and 0. */
/* What a subtask takes from one state handle of another parallelism's
 * subtask (a take of the assignment, assign.h): the snapshot's subtask
 * the handle is of (vertex, subtask index, parallelism), what it takes
 * (CK_ASG_* bits: KEYED, OPSTATE, CHANNELS, TXNS) and, KEYED, the key
 * groups (kgr). */
typedef struct ck_restore_take {
    uint32_t old_vertex, old_subtask, old_parallelism, what;
    ck_kgr kgr;
} ck_restore_take;

/* A run of entries [first, first + n) of operator op's (a job operator's
 * index) list state `name` in the snapshot's subtask `old` (its index in
 * its vertex): the entries of split-distribute operator state the
 * assignment dealt a subtask (assign.h ck_asg_chunk). */
typedef struct ck_restore_chunk {
    uint32_t op;
    char name[CK_NAME_MAX];
    uint32_t old, first, n;
} ck_restore_chunk;

typedef struct ck_restore_point {
    uint64_t id;
    uint32_t flags;
    char dir[160];
    const ck_handles *handles;
    uint32_t old_vertex, old_subtask, old_parallelism;
    /* Another parallelism's state: per handle what the subtask takes of
     * it (handles->n of them; NULL: every handle is of old_subtask, taken
     * whole), and the operator state entries dealt to it. */
    const ck_restore_take *takes;
    const ck_restore_chunk *chunks;
    uint32_t nchunks;
    /* its input, its output channel state moves to other channels
     * (assign.h ck_asg_task.moved_in, moved_out) */
    int moved_in, moved_out;
} ck_restore_point;

typedef struct ck_cp_task {
    int acked;
    uint64_t bytes;     /* of its files */
    ck_handles handles; /* its files (handle.h) */
    int64_t sync_ns, async_ns, align_ns, upload_ns;
    int finished;  /* had finished: acknowledged by the coordinator's marker file */
    int input_ended; /* its snapshot was taken with its input over */
    int unaligned;   /* a barrier of its snapshot overtook data */
    uint64_t inflight; /* bytes of channel state in its file */
    uint32_t attempt; /* the attempt of the subtask that acknowledged */
} ck_cp_task;

typedef struct ck_cp_record {
    uint64_t id;
    uint32_t flags; /* CK_CP_FLAG_* */
    ck_cp_status status;
    ck_time trigger, complete;
    uint32_t nacks;
    uint64_t bytes;     /* of every file it refers to: the full state */
    uint64_t bytes_new; /* of the files it uploaded itself (incremental) */
    uint64_t bytes_changelog; /* of those, state changelog segments */
    uint64_t inflight; /* of which channel state (unaligned) */
    int unaligned;     /* a barrier overtook data somewhere */
    ck_cp_task *tasks; /* per subtask of g */
    const ck_graph *g; /* the generation of the job's graph that took it (graph.h) */
    int metadata_sent;
    int markers_pending; /* finished subtasks' state files still being stored */
    int task_declined;   /* it failed because a subtask declined it */
    int retired; /* completed, then deleted from the store (num-retained) */
    char reason[96];
} ck_cp_record;

typedef struct ck_cc {
    ck_platform *plat;
    const ck_graph *g;
    char job_id[40];
    int enabled;
    ck_time interval, timeout, min_pause;
    int max_concurrent, tolerable, retained;
    uint32_t cp_flags;  /* of every periodic checkpoint: CK_CP_FLAG_UNALIGNED,
                         * CK_CP_FLAG_TIMEOUTABLE or 0 */
    uint64_t first_id, next_id;
    uint64_t input_fp;  /* fingerprint of the job's input, written into _metadata */
    ck_time next_trigger;
    ck_time last_complete;
    int npending;
    int consecutive_failures;
    uint64_t last_succeeded; /* the newest checkpoint or savepoint that completed (0: none) */
    int stopped;
    int paused;  /* a stop-with-savepoint is pending: no periodic checkpoints */
    int failed;
    char failure[160];
    ck_cp_record *cps; /* every checkpoint, in id order */
    size_t ncps, cap;
    uint32_t *attempts; /* per subtask: the attempt it runs (region failover restarts
                         * some subtasks in a new attempt, the others keep theirs) */
    int restoring;     /* part of the job is restarting: no checkpoint starts */
    int after_finish;  /* execution.checkpointing.checkpoints-after-tasks-finish */
    uint8_t *ended;    /* per subtask, this attempt: ended its input (TASK_ENDED) */
    uint8_t *finished; /* per subtask, this attempt: finished (TASK_FINISHED) */
    uint32_t nfinished; /* how many are */
    ck_rng rng;        /* the first checkpoint's delay of every attempt */
    ck_sreg shared;    /* references to files under shared/ (sharedreg.h) */
    /* The snapshot the job started from (ck_cc_adopt), until retired: its
     * files, per subtask (borrowed), and its directory; owned: the job
     * deletes it once subsumed (CLAIM), else it stays (NO_CLAIM, LEGACY). */
    const ck_handles *adopted;
    uint32_t nadopted; /* its subtasks (of the graph that took it) */
    char adopted_dir[160];
    int adopted_owned;
    int force_full; /* NO_CLAIM: checkpoints are full until one completes */
    uint64_t inline_below; /* state.storage.fs.memory-threshold: a finished subtask's
                            * state smaller than this goes inline in _metadata */
    /* Files merged across checkpoints (task_mfile.c): a subtask appends its
     * checkpoints' files to a file of its own under shared/ (a key ending
     * in ".seg"), the newest it made, while its attempt runs. Such a file
     * is sealed once its subtask's attempt ended (abort_all, or a region
     * restart gave it a new one) or a completed checkpoint referred to a
     * newer one of the same attempt (an earlier run's, made before the
     * checkpoint the job started from, always is); one nothing refers to
     * is deleted once sealed, and waits in limbo until then. */
    uint8_t *seg_live;     /* per subtask: its attempt may still append */
    uint64_t *seg_newest;  /* per subtask: the newest such file of its attempt a completed
                            * checkpoint referred to (seg_parse's order), 0: none */
    char **limbo;          /* keys nothing refers to, not sealed yet */
    size_t nlimbo, limbo_cap;
} ck_cc;

/* Returns 0 or CK_ENOMEM. Periodic checkpoints are off when the interval
 * is 0 (savepoints still work). Ids start at first_id. The seed draws each
 * attempt's first checkpoint time. */
CK_MUST_CHECK
int ck_cc_init(ck_cc *cc, ck_platform *plat, const ck_graph *g, const ck_config *cfg,
               const char *job_id, uint64_t first_id, uint64_t seed);

/* The job starts from snapshot `start` (its handles per subtask, ntasks
 * of them, borrowed until ck_cc_free) in claim mode `mode` (CK_CLAIM, CK_NO_CLAIM or
 * CK_CLAIM_LEGACY: execution.state-recovery.claim-mode), as Flink's
 * CheckpointCoordinator restores:
 *  - a retained checkpoint's shared files are referenced like a completed
 *    checkpoint's, in every mode, so that nothing the job deletes takes
 *    them away;
 *  - CLAIM: the job owns the snapshot, checkpoint or savepoint: its own
 *    checkpoints may refer to its files, and once num-retained of them
 *    completed it is retired like one (its files and _metadata deleted,
 *    shared ones when nothing else refers to them);
 *  - NO_CLAIM: the user owns it; it is never deleted, and every checkpoint
 *    is full (CK_CP_FLAG_FULL: it uploads every file, refers to none of
 *    the snapshot's) until one completes;
 *  - LEGACY: the user owns it; never deleted, yet referred to again.
 * Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_cc_adopt(ck_cc *cc, const ck_restore_point *start, const ck_handles *tasks,
                uint32_t ntasks, int mode);

/* The job runs generation g of its graph from its next attempt on (a
 * rescale): the per-subtask marks are g's, every one clear. No checkpoint
 * may be pending (ck_cc_abort_all first); those taken before keep their
 * own generation. Returns 0 or CK_ENOMEM (the coordinator unchanged). */
CK_MUST_CHECK
int ck_cc_regenerate(ck_cc *cc, const ck_graph *g);

/* Triggers a savepoint now (stop: stop-with-savepoint). Returns its id, or
 * 0 when no attempt is running. */
uint64_t ck_cc_trigger_savepoint(ck_cc *cc, int stop);

/* Triggers the final checkpoint at every subtask (they have all ended
 * their input). Returns its id, or 0: out of memory, or part of the job
 * restarts (between ck_cc_hold and ck_cc_release no checkpoint starts). */
uint64_t ck_cc_trigger_final(ck_cc *cc);

/* The state handles subtask `global` stored for checkpoint id (empty when
 * the coordinator has no record of it: a savepoint the job started from). */
const ck_handles *ck_cc_handles(const ck_cc *cc, uint64_t id, uint32_t global);

/* The record of checkpoint id, or NULL. */
const ck_cp_record *ck_cc_find(const ck_cc *cc, uint64_t id);
void ck_cc_free(ck_cc *cc);

/* The next time the coordinator needs on_deadline; CK_TIME_NEVER for none. */
ck_time ck_cc_deadline(const ck_cc *cc);
/* Triggers due checkpoints and expires late ones. */
void ck_cc_on_deadline(ck_cc *cc);

void ck_cc_on_ack(ck_cc *cc, uint32_t subtask, const ck_cp_ack *ack);
/* An acknowledgement from an attempt cancelled since: the state of a
 * checkpoint that failed meanwhile is deleted; nothing else happens. */
void ck_cc_on_stale_ack(ck_cc *cc, const ck_cp_ack *ack);
void ck_cc_on_decline(ck_cc *cc, uint32_t subtask, uint64_t id, uint32_t reason,
                      const char *text);
/* The metadata write of a checkpoint finished (token = id). */
void ck_cc_on_stored(ck_cc *cc, uint64_t token, int status);
/* A subtask ended its input (TASK_ENDED): triggered directly from now on,
 * and at once for the pending checkpoints it has not acknowledged. */
void ck_cc_task_ended(ck_cc *cc, uint32_t subtask);
/* A subtask finished (TASK_FINISHED): acknowledged as finished in the
 * pending checkpoints and in every later one. */
void ck_cc_task_finished(ck_cc *cc, uint32_t subtask);
/* 1 when a subtask that ended its input waits for a checkpoint no pending
 * or completed one gives it: one whose snapshot it took with its input
 * over. (While a checkpoint is pending, 0: it may be that one.) */
int ck_cc_needs_final(const ck_cc *cc);

/* A new attempt of the job runs: what is still pending aborts (it waits
 * for attempts that are gone), checkpoints resume, the first one after
 * a delay drawn uniformly in [min-pause, interval] (whole milliseconds), as
 * Flink's CheckpointCoordinator.getRandomInitDelay, so that jobs started
 * together do not checkpoint in step. */
void ck_cc_start_attempt(ck_cc *cc, uint32_t attempt, ck_time now);

/* The job fails over, stops, finishes or fails: every pending checkpoint
 * is aborted (not a failure), every attempt counts as ended (the files
 * merged across checkpoints that nothing refers to go), and no new one
 * starts until ck_cc_start_attempt. */
void ck_cc_abort_all(ck_cc *cc, const char *reason);

/*
 * Region failover, as Flink's scheduler drives its CheckpointCoordinator
 * while the job stays RUNNING:
 *  - ck_cc_hold: part of the job failed: the pending checkpoints abort (not
 *    a failure: Flink's JOB_FAILOVER_REGION), and periodic triggers are
 *    skipped meanwhile (Flink's trigger fails its pre-flight check,
 *    NOT_ALL_REQUIRED_TASKS_RUNNING, which is not counted); savepoints and
 *    the final checkpoint are refused;
 *  - ck_cc_restart_subtasks: the subtasks in mask (1 per global subtask)
 *    run again as `attempt`, their ended and finished marks cleared; a
 *    checkpoint still pending aborts (Flink aborts again when it restores
 *    the region), and a trigger a final checkpoint disarmed is armed
 *    again;
 *  - ck_cc_release: they all run: the next periodic trigger on the
 *    interval's grid starts a checkpoint.
 */
void ck_cc_hold(ck_cc *cc, const char *reason);
void ck_cc_restart_subtasks(ck_cc *cc, uint32_t attempt, const uint8_t *mask);
void ck_cc_release(ck_cc *cc, ck_time now);

/* The store's keys (checkpoint directories, state files, shared/) are
 * storekey.h's. */

/*
 * _metadata, keyed by operator (Flink's CheckpointMetadata: state per
 * operator id), version 5:
 *   "CKP5" | u64 id | i64 trigger time | u32 flags | u64 input fingerprint |
 *   u32 vertices | per vertex: u32 parallelism | u32 operators |
 *       per operator (chained, inputs first): u8 uid length | uid |
 *       u8 kind (ck_op_kind) | u32 max parallelism | u32 index (its
 *       position in the job, by which state files and handles name it) |
 *   per old subtask, vertex by vertex, subtask by subtask:
 *       u32 vertex | u32 subtask index | its state handles (handle.h, at
 *       least one) |
 *   u32 crc32c of everything before.
 * A uid is 1..CK_NAME_MAX-1 bytes, none NUL, unique in the file; a max
 * parallelism is at least its vertex's parallelism and at most 32768; an
 * index is below CK_MAX_OPS, unique in the file. A canonical handle lists
 * its operator state's entry counts per (operator, state name) and mode
 * (CK_HANDLE_OPCOUNTS, handle.h), as Flink's OperatorStateHandle carries
 * its offsets and mode: the job manager deals operator state from them
 * (ck_asg_opstate_from_meta, assign.h).
 * Version 4 ("CKP4", still read; no longer written) is version 5 without
 * operator-state counts (a handle with CK_HANDLE_OPCOUNTS is corrupt).
 * Version 3 ("CKP3", still read; no longer written) has no vertices:
 *   "CKP3" | u64 id | i64 trigger time | u32 flags | u64 input fingerprint |
 *   u32 subtasks | per subtask: u32 index | its state handles | u32 crc32c;
 * decoded, it has nvertices 0 and is taken to be of the job's own
 * operators at the job's own parallelism (assign.h).
 */
typedef struct ck_cp_meta_op {
    char uid[CK_NAME_MAX];
    uint8_t kind; /* ck_op_kind */
    uint32_t max_parallelism;
    uint32_t index; /* its position in the job that took the snapshot */
} ck_cp_meta_op;

typedef struct ck_cp_meta_vertex {
    uint32_t parallelism;
    uint32_t nops;
    ck_cp_meta_op ops[CK_MAX_OPS];
} ck_cp_meta_vertex;

typedef struct ck_cp_meta {
    uint32_t version; /* of the file decoded: 5, 4 (no operator-state counts) or 3 (no
                       * vertices); encoding writes 5 */
    uint64_t id, input_fp;
    int64_t trigger;
    uint32_t flags, nsubtasks;
    uint32_t nvertices;           /* 0: an old-version file */
    ck_cp_meta_vertex *vertices;  /* malloc'd, nvertices */
    ck_handles *tasks; /* malloc'd, nsubtasks: subtask i of vertex v is
                        * tasks[parallelism of the vertices before v + i] */
} ck_cp_meta;

/* Fills m's vertices (malloc'd) with graph g's: its operators' uids,
 * kinds, parallelism and max parallelism. 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_cp_meta_vertices(ck_cp_meta *m, const ck_graph *g);
/* Encodes m (version 5; it must have its vertices, whose parallelisms sum
 * to nsubtasks) into a malloc'd _metadata file image. 0, CK_EINVAL (no
 * vertices, or they do not add up) or CK_ENOMEM. */
CK_MUST_CHECK
int ck_cp_meta_encode(const ck_cp_meta *m, uint8_t **out, size_t *len);
/* Decodes a _metadata file of version 5, 4 or 3; *why says what is wrong. 0,
 * CK_ECORRUPT (also for a bad handle: handle.h), CK_ENOMEM. */
CK_MUST_CHECK
int ck_cp_meta_decode(const uint8_t *p, size_t len, ck_cp_meta *m, const char **why);
void ck_cp_meta_free(ck_cp_meta *m);

const char *ck_cp_status_name(ck_cp_status s);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. Reads
 * every checkpoint's record and the handles of those that keep files. */
CK_MUST_CHECK
int ck_cc_check(const ck_cc *cc, ck_inv *v);

#endif
