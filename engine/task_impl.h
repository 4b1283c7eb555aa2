/*
 * task_impl.h - the inside of a subtask (task.h), shared by the files
 * that implement it and included by nothing else but the task's unit
 * tests (tests/test_task.c), which check it from the inside.
 *
 * A subtask runs five state machines over one struct, each in a file
 * that opens with its invariants and its diagram:
 *
 *   task.c            the task's lifecycle (task.h: CREATED .. FINISHED),
 *                     its node interface, input, source, outputs, time
 *                     accounting and metrics reports;
 *   task_snapshot.c   snapshots: the synchronous phase, channel state,
 *                     serializing, uploading, acknowledging, and the job
 *                     manager's TRIGGER, COMPLETE (sinks commit), ABORT;
 *   task_mfile.c      the merged file (file merging): a snapshot's native
 *                     files packed into merged objects, and the file a
 *                     subtask keeps and appends to across checkpoints;
 *   task_changelog.c  the state changelog: segments uploaded,
 *                     materializations, what a snapshot refers to, and
 *                     the changelog's state restored;
 *   task_restore.c    the restore: downloads (ranged for merged files),
 *                     checks, and the state put in place.
 *
 * The fields are grouped below under the machine whose file keeps them
 * (ck_task_new sets them all up). Functions one file calls in another
 * are declared below and named after the file that defines them: task_*
 * (task.c), task_snap_*, task_mfile_*, task_clog_*, task_restore_*;
 * everything else is static, named snap_*, mfile_*, clog_*, restore_* in
 * those files.
 */
#ifndef CK_TASK_IMPL_H
#define CK_TASK_IMPL_H

#include "task.h"

#include "debloat.h"
#include "invariant.h"
#include "snapshot.h"

/* Snapshots in their asynchronous phase at once. */
#define MAX_SNAPS 16
/* Changelog segments on their way to the store at once, per operator. */
#define CLOG_MAX_INFLIGHT 64
/* Serializing a snapshot (its asynchronous phase, a materialization) and
 * decoding one (a restore) cost this much CPU a byte. */
#define SERIALIZE_FLOPS_PER_BYTE 10.0

/* The tokens of the task's asynchronous operations (ck_platform_ops:
 * background work, store puts and gets), told apart in task_on_complete.
 * A snapshot's: its id << 2 | its stage (SNAP_SERIALIZING, SNAP_UPLOADING). */
#define RESTORE_TOKEN UINT64_MAX
/* The work of loading what a restore downloaded ended. */
#define RESTORE_LOAD_TOKEN (UINT64_MAX - 1)
/* The state backend's background work (flushes, compactions) ended: no
 * snapshot's (checkpoint ids start at 1). */
#define STATE_WORK_TOKEN 0
/* A changelog upload: bit 62 set for a materialization, the chain index of
 * the operator in bits 32..39, the low 32 bits of a segment's first
 * sequence number. */
#define CLOG_TOKEN (UINT64_C(1) << 63)
#define CLOG_MAT (UINT64_C(1) << 62)
/* The id of a native snapshot a materialization takes (its sequence
 * number's), out of the way of checkpoint ids. */
#define CLOG_NATIVE_ID (UINT64_C(1) << 62)
/* An upload of a native file from its path (snap_upload_file): bit 61 set, the
 * file's handle in bits 40..60, below them a snapshot's upload token. */
#define FILE_TOKEN (UINT64_C(1) << 61)
#define FILE_HANDLES (UINT32_C(1) << 21)
#define FILE_BASE ((UINT64_C(1) << 40) - 1)

/* ---- a snapshot under way (task_snapshot.c) ---- */

enum { SNAP_SERIALIZING = 1, SNAP_UPLOADING = 2, SNAP_CHANNELS = 3 /* not a token */ };

typedef struct snap_job {
    uint64_t id;
    int stage;
    uint8_t *data; /* until handed to the store */
    size_t len;
    uint32_t crc;
    int64_t sync_ns, align_ns;
    ck_time async_start;
    ck_time upload_start; /* its files' uploads began (after local work) */
    int aborted;   /* aborted while its upload was in flight */
    int input_ended; /* taken with the input over */
    int unaligned;   /* a barrier overtook data */
    int full;        /* CK_BARRIER_FULL: refers to no earlier checkpoint's files */
    uint64_t inflight; /* bytes of channel state */
    ck_capture *cap; /* until encoded: SNAP_CHANNELS waits for the input's channel state */
    ck_kgr kgr; /* the key groups of its keyed state */
    char key[CK_HANDLE_KEY_MAX + 1];
    /* An incremental checkpoint: the operators' native snapshots, until
     * their files are read for upload; then what it stored, for the ACK. */
    struct snap_native {
        ck_kstate *ks;
        int op; /* in the job */
        ck_native_snap snap;
        uint64_t vs; /* its operator's value_size: what an entry weighs beyond its bytes */
    } nat[CK_MAX_OPS];
    uint64_t model; /* what the canonical file's entries weigh beyond its bytes */
    ck_handle_opcount *opc; /* its operator state's counts, for its handle (malloc'd) */
    int nopc;
    int nnat;
    ck_handles handles;
    uint32_t uploads;  /* in flight */
    int upload_failed;
    uint32_t appended; /* the generation of the subtask's kept file (t->seg) it
                        * appended to, or 0 */
    /* Under the changelog: per operator, the changelog it needs in the
     * store, and its materialization and segments as of its synchronous
     * phase (appended to handles once those are uploaded). */
    uint64_t clog_need[CK_MAX_OPS];
    ck_handles clog_handles;
} snap_job;

/* ---- the changelog of one keyed operator (task_changelog.c) ---- */

/* Its last materialization, the segments after it (in the store, or on
 * their way), and a materialization in progress. */
struct task_clog {
    int k;               /* the operator's index in the chain */
    ck_clog *log;        /* its changelog (the operator's) */
    ck_handles mat;      /* the last materialization: MATERIAL handles (one canonical
                          * file, or the wrapped RocksDB's files), or none; those
                          * an acknowledged snapshot referred to are REUSED */
    ck_handles segs;     /* segments after it, in order */
    uint64_t acked;      /* segments below were in an acknowledged snapshot */
    uint64_t inflight[CLOG_MAX_INFLIGHT]; /* first sequence numbers of uploads */
    int ninflight;
    /* of those, segments truncated meanwhile that nothing refers to:
     * deleted once their upload ends (not before: it would land after) */
    char *doomed[CLOG_MAX_INFLIGHT];
    uint64_t doomed_first[CLOG_MAX_INFLIGHT];
    int ndoomed;
    int mat_busy;        /* a materialization is uploading (its files left): */
    uint64_t mat_seq;    /* it holds the changes below this, */
    ck_handles mat_next; /* and these are its handles; */
    ck_time mat_t0;      /* it began then, */
    uint64_t mat_bytes, mat_state; /* uploads this much, of a state this large; */
    ck_kstate *mat_ks;   /* its wrapped instance's files set aside, until they land, */
    ck_native_snap mat_ns; /* when the store's threads read them from their paths; */
    int mat_failed;      /* an upload of it failed (the first failure's code) */
    int mat_fails;       /* materializations that failed in a row */
};

/* ---- a merged object a restore downloaded (task_restore.c) ---- */

/* The range of an object that handles still to restore have segments in
 * (restore_seg_range). */
struct seg_obj {
    char *key;
    uint64_t at; /* where data starts in the object */
    uint8_t *data;
    size_t len;
};

struct ck_task {
    /* ---- the task (task.c) ---- */
    ck_platform *plat;
    const ck_job_env *env;
    const ck_graph *g;
    int vertex, subtask;
    uint32_t global;
    uint32_t attempt;
    ck_task_state state;

    int has_gate;
    ck_gate gate;
    int nrps;
    ck_rp_out *rps;
    ck_chain chain;

    /* network buffers: the host's pool (the task's own when the platform
     * has none), the segments reserved in it, and why a reservation that
     * did not fit fails the task when it starts */
    ck_segpool *netpool;
    ck_segpool own_pool;
    uint32_t net_reserved;
    char setup_err[400];

    ck_time buffer_timeout; /* < 0: flush only when full */
    ck_time tick0;          /* flush ticks at tick0 + k * buffer_timeout */
    ck_time next_flush;     /* the tick that flushes pending output, or NEVER */

    /* source */
    int is_source;
    int nparts;
    int *parts;
    int64_t *off, *end, *maxts;
    int rr;
    ck_time wm_interval, next_wm;
    int64_t src_wm;
    int64_t ooo_ms;

    ck_metrics met;
    ck_time acct_t;
    ck_time acct_t0; /* the metrics' increment began (started, or the last report) */
    int acct_mode;
    int started;
    int64_t idle_total_ns; /* idle time over the task's life (met's resets at reports) */
    int timed;             /* its records cost time: a step ends by step_flops or step_wait */
    double step_flops;     /* STEP_FLOPS or BATCH_FLOPS */
    ck_time step_wait;     /* STEP_WAIT or BATCH_WAIT */
    int step_records;      /* records a step may take (>= 1), by its operators' costs
                            * (with slow_operator faults: worked out at each step) */
    int step_left;         /* of those, what the step in progress may still take */

    /* buffer debloating of the input gate: its throughput measured on its
     * own (paused while it is empty), the bytes read from it counted */
    int debloat;
    ck_debloat dbl;
    ck_tput tput;
    uint64_t dbl_read;
    ck_time dbl_period, next_debloat;

    /* Restored input channel state still to read (started, not reported
     * running: Flink's task stays INITIALIZING until its gates consumed
     * their recovered state, and no checkpoint starts before). */
    int recovering;
    int final_cp;              /* its input ends into a final checkpoint (checkpoints on) */
    int restored_finished;     /* restored from a checkpoint that had it finished */

    /* metrics reporting: totals already reported, next report */
    struct {
        uint64_t records_out, late, bytes_out, bufs_out, bytes_in, bufs_in;
    } reported;
    ck_time next_report;
    int64_t first_out_ns;
    int has_2pc; /* a sink of the chain writes in transactions */

    /* ---- snapshots (task_snapshot.c) ---- */
    int checkpointing;
    /* the aligned-checkpoint timeout (0: none) and the start of the
     * timeoutable barrier last sent into the outputs */
    ck_time aligned_timeout, bar_ts;
    int nsnaps;
    snap_job snaps[MAX_SNAPS];
    uint64_t stop_id;          /* a stop-with-savepoint this task took part in */
    uint64_t last_snap;        /* the latest checkpoint it took a snapshot of */
    uint64_t ended_snap;       /* the first snapshot it took with its input over: once
                                * a checkpoint from it on completes, it finishes */
    uint64_t completed;        /* the latest checkpoint reported complete */
    int incremental;           /* execution.checkpointing.incremental */
    uint64_t inline_below;     /* a snapshot's file smaller than this goes inline (handle.h) */
    /* Native files of the snapshots acknowledged (not yet known complete),
     * and those of the latest complete one, which later checkpoints refer
     * to instead of uploading them again (Flink's uploaded SST files). */
    struct {
        uint64_t id;
        ck_handles files;
    } acked[MAX_SNAPS];
    int nacked;
    ck_handles confirmed;

    /* ---- the merged file (task_mfile.c) ---- */
    uint64_t merge_max;        /* file merging on: a merged object's size; else 0 */
    int across;                /* and across checkpoints (task_mfile_upload) */
    /* Merging across checkpoints: the file of this subtask's that the next
     * merged files are appended to (its states: task_mfile.c). */
    struct {
        char key[CK_HANDLE_KEY_MAX + 1];
        uint64_t end;     /* where the next append goes (CK_STORE_APPEND_ALIGN) */
        uint64_t creator;
        int acked;        /* an acknowledgement named it (the coordinator knows it) */
        uint32_t gen;     /* counts the files kept so far (the current one's) */
        uint64_t user;    /* the newest snapshot that made or appended to one */
    } seg;

    /* ---- the state changelog (task_changelog.c) ---- */
    /* The changelog of each keyed operator that has one (state.changelog.*). */
    struct task_clog clogs[CK_MAX_OPS];
    int nclogs;
    ck_time clog_interval, next_mat; /* interval < 0: no materialization */
    int clog_max_failures;           /* state.changelog.max-failures-allowed */
    uint64_t clog_threshold;

    /* ---- the restore (task_restore.c) ---- */
    uint64_t restore_cp;       /* = from.id */
    ck_restore_point from;
    char restore_key[CK_HANDLE_KEY_MAX + 1]; /* the file being restored */
    ck_handles restore;        /* the state handles to restore */
    ck_restore_take *rtakes;   /* per handle: what it takes of it (another parallelism's
                                * state: from.takes copied), NULL: all its own, whole */
    ck_restore_chunk *rchunks; /* the operator state entries dealt to it (from.chunks) */
    uint32_t nrchunks;
    uint32_t rcanon, rfinished; /* canonical files applied, and of them finished ones */
    uint64_t rchunk_done;       /* operator state entries dealt that came from their files */
    int rknown;                 /* partitions the old enumerators knew (-1: none seen) */
    uint32_t restore_next;     /* the next one to download */
    /* the restore's phases: it began, its downloads ended; its bytes and
     * the work of loading them (decoding, replaying, writing native files
     * to the local disk), charged once all are downloaded */
    ck_time restore_t0, restore_dl;
    uint64_t restore_bytes, restore_disk;
    uint64_t restore_records; /* in-flight records of its channel state it replays */
    uint64_t restore_cost; /* what the download in flight weighs (0: its bytes) */
    double restore_flops;
    /* Native files downloaded, put in place once all are in. */
    uint8_t **rdata;
    size_t *rlen;
    /* Merged files: the ranges of objects downloaded that handles still
     * to come have segments in (restore_seg_range). */
    struct seg_obj *segobj;
    uint32_t nsegobj;
    uint64_t seg_at; /* where the range being downloaded starts (a whole object: 0) */
    /* A canonical file read by key group (restore_ranged): its head read
     * so far, then its key groups' blocks (RANGED_*). */
    int rphase;
    uint8_t *rhead;
    size_t rhead_len;
    uint64_t rfetched; /* its bytes downloaded */
};

/* Transaction ids are unique per attempt: attempt << 32 | sequence. */
static inline uint64_t task_first_txn(const ck_task *t)
{
    return ((uint64_t)(t->env->txn_epoch + t->attempt) << 32) | 1;
}

/* Edges a barrier may overtake data on: not pointwise or broadcast ones,
 * which stay aligned, as in Flink (their partitioners do not support
 * unaligned checkpoints). */
static inline int task_unaligned_edge(const ck_edge *e)
{
    return e->ship == CK_SHIP_HASH || e->ship == CK_SHIP_REBALANCE;
}

/* ---- the task (task.c) ---- */

/* Sends a message of this attempt to the job manager (lost when out of memory). */
void task_to_jm(ck_task *t, int type, const uint8_t *body, size_t len);

/* The next transfer of key costs `modelled` bytes where the platform
 * charges what state weighs (platform.h store_weigh; 0: its real bytes). */
static inline void task_weigh(ck_task *t, const char *key, uint64_t modelled)
{
    if (modelled && t->plat->ops->store_weigh)
        t->plat->ops->store_weigh(t->plat, key, modelled);
}
/* Fails the task and tells the job manager why (code CK_FAIL_*, and for a
 * restore the checkpoint and the file, key, whose restore failed). */
void task_fail_with(ck_task *t, uint32_t code, uint64_t cp, const char *key, const char *msg);
/* Fails the task (CK_FAIL_TASK): while doing `what`, error rc. */
void task_fail(ck_task *t, int rc, const char *what);
/* Sends the job manager what the task measured since its last report
 * (type CK_MSG_METRICS), or the last of it (CK_MSG_TASK_FINISHED: the
 * task is FINISHED then). */
void task_report(ck_task *t, int type);
/* Charges the step's CPU and publishes what the sinks staged: 0 or an error. */
CK_MUST_CHECK int task_finish_batch(ck_task *t);
/* Finishes every output's buffer in progress / sends what has credit. */
void task_flush_all(ck_task *t);
void task_send_all(ck_task *t);
/* Tells the platform of the state backends' work a fault may wait for
 * (bits of CK_NOTE_*). */
void task_state_notes(ck_task *t, int notes);
/* Deletes key from the store; a delete that fails leaves the file there
 * (logged: an orphan, never a failure of the task's). */
void task_store_delete(ck_task *t, const char *key);
/* The task runs (after its restore, if any): RUNNING. */
void task_started(ck_task *t);

/* ---- snapshots (task_snapshot.c) ---- */

/* The synchronous phase of checkpoint b (its alignment took align_ns),
 * then the barrier goes downstream. 0 or an error (the task fails). */
CK_MUST_CHECK int task_snap_take(ck_task *t, const ck_barrier *b, int64_t align_ns);
/* Checkpoint id ends here without a snapshot (reason: CK_DECLINE_*). */
CK_MUST_CHECK int task_snap_decline(ck_task *t, uint64_t id, uint32_t reason, const char *why);
/* Commits every sink transaction that checkpoint cp covers. */
CK_MUST_CHECK int task_snap_commit_upto(ck_task *t, uint64_t cp);
/* TRIGGER, COMPLETE, ABORT from the job manager. */
CK_MUST_CHECK int task_snap_on_message(ck_task *t, const ck_wire_hdr *h, const uint8_t *body);
/* The first unaligned barrier of a checkpoint reached the input gate. */
CK_MUST_CHECK int task_snap_unaligned(ck_task *t, const ck_barrier *b);
/* Snapshots waiting for channel state: declined, or on to their
 * asynchronous phase. */
CK_MUST_CHECK int task_snap_uc_poll(ck_task *t);
/* When the aligned-checkpoint timeout next passes, and what then. */
ck_time task_snap_timeout_deadline(const ck_task *t);
CK_MUST_CHECK int task_snap_timeouts(ck_task *t, ck_time now);
/* A step of a snapshot's asynchronous phase finished (token: its id << 2
 * | stage), or a file uploaded from its path landed (its token in;
 * returns the snapshot's). */
void task_snap_progress(ck_task *t, uint64_t token, int status);
uint64_t task_snap_file_landed(ck_task *t, uint64_t token, int *status, const uint8_t *res,
                               size_t len);
/* Snapshot j is acknowledged once its uploads ended and its changelog is in. */
void task_snap_try_finish(ck_task *t, snap_job *j);
/* Cancelled: the files of snapshots still uploading go from the store. */
void task_snap_discard(ck_task *t);
/* Frees the snapshots (while the state backends are open) and the files
 * remembered. */
void task_snap_free(ck_task *t);
/* Invariants (5) and (6) (task.h). */
CK_MUST_CHECK int task_snap_check(const ck_task *t, ck_inv *v);
/* A snapshot's files, for the merged objects of task_mfile_upload: an upload
 * (data taken) or one from local paths, whether files go up from their
 * paths, and whether a file goes up at all (else its handle is added,
 * reused or inline: task_snap_kept). */
CK_MUST_CHECK int task_snap_upload(ck_task *t, snap_job *j, const char *key, uint8_t *data,
                                   size_t len, uint64_t modelled);
/* What native file nf of n weighs (its bytes, and value_size for each
 * entry it holds: handle.h CK_HANDLE_MODELLED), and what the
 * files snapshot j uploads itself under key weigh together. */
uint64_t task_snap_native_model(const struct snap_native *n, const ck_native_file *nf);
uint64_t task_snap_key_model(const snap_job *j, const char *key);
CK_MUST_CHECK int task_snap_upload_files_at(ck_task *t, snap_job *j, const char *key,
                                            uint64_t base, const char *const *paths,
                                            uint32_t nf, uint32_t h);
int task_snap_by_path(const ck_task *t, const snap_job *j);
/* Native file f of n kept out of snapshot j's uploads (referred to or
 * inline: 1, its handle added when rc is given), or 0: it goes up. */
int task_snap_kept(ck_task *t, snap_job *j, struct snap_native *n, uint32_t f, int *rc);

/* ---- the merged file (task_mfile.c) ---- */

/* Uploads snapshot j's new native files in merged objects under shared. */
CK_MUST_CHECK int task_mfile_upload(ck_task *t, snap_job *j, const char *shared);
/* Snapshot j's uploads all ended: the kept file is kept or let go. */
void task_mfile_settle(ck_task *t, const snap_job *j);
/* An acknowledgement with handles hs went out: whether it named the kept file. */
void task_mfile_acked(ck_task *t, const ck_handles *hs);
/* Cancelled: the kept file goes if no acknowledgement named it. */
void task_mfile_discard(ck_task *t);
/* Invariant (7) (task.h). */
CK_MUST_CHECK int task_mfile_check(const ck_task *t, ck_inv *v);

/* ---- the state changelog (task_changelog.c) ---- */

/* Cuts what c's changelog buffers into a segment and uploads it. */
CK_MUST_CHECK int task_clog_persist(ck_task *t, struct task_clog *c);
/* Takes a materialization of c's operator. */
CK_MUST_CHECK int task_clog_materialize(ck_task *t, struct task_clog *c);
/* A changelog upload (a segment or a materialization) ended. */
void task_clog_on_upload(ck_task *t, uint64_t token, int status, const uint8_t *data,
                         size_t len);
/* Snapshot j's synchronous phase under the changelog; whether the
 * changelog it refers to is in the store; it is acknowledged. */
CK_MUST_CHECK int task_clog_snapshot(ck_task *t, snap_job *j);
int task_clog_snap_ready(const ck_task *t, const snap_job *j);
void task_clog_snap_done(ck_task *t, const snap_job *j);
/* Puts every changelog operator's restored state back: 0, or non-zero
 * when the task failed. */
int task_clog_restore(ck_task *t);
/* Cancelled: segments and materializations no acknowledgement named go. */
void task_clog_discard(ck_task *t);
/* Frees the changelogs' handles (while the state backends are open). */
void task_clog_free(ck_task *t);
/* Invariant (8) (task.h). */
CK_MUST_CHECK int task_clog_check(const ck_task *t, ck_inv *v);

/* ---- the restore (task_restore.c) ---- */

/* The task begins restoring: RESTORING, its first handle asked for. */
void task_restore_start(ck_task *t);
/* A download for the restore landed: 1 when it kept data. */
int task_restore_done(ck_task *t, int status, uint8_t *data, size_t len);
/* The restore failed on the file restore_key (code: CK_FAIL_RESTORE_*). */
void task_restore_fail(ck_task *t, uint32_t code, const char *what);
/* The CK_FAIL_RESTORE_* code of a restore that failed with rc. */
uint32_t task_restore_code(int rc);
/* Frees what the restore holds. */
void task_restore_free(ck_task *t);
/* Invariant (9) (task.h). */
CK_MUST_CHECK int task_restore_check(const ck_task *t, ck_inv *v);

#endif
