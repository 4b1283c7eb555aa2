/*
 * config.h - the engine's configuration, under Flink's key names.
 *
 * CK_CONFIG_KEYS is the one table of every key chandy understands: its
 * Flink name, type, default and accepted range; CK_CONFIG_DEPRECATED the
 * older names Flink 1.20 still accepts for them (its withDeprecatedKeys).
 * The scenario loader checks a scenario's "config" object against both
 * (an unknown key is an error, not a silent no-op, with the closest known
 * key as a suggestion; a deprecated name works, with a warning naming the
 * key to use) and `chandy config` prints them.
 *
 * Durations are held in nanoseconds, memory sizes in bytes.
 */
#ifndef CK_CONFIG_H
#define CK_CONFIG_H

#include <stdint.h>

#include "common.h"

typedef enum ck_cfg_type {
    CK_CFG_INT,
    CK_CFG_BOOL,
    CK_CFG_DURATION,
    CK_CFG_MEMORY,
    CK_CFG_ENUM,    /* a choice among names; held as the choice's index */
    CK_CFG_DECIMAL, /* a decimal number; held in thousandths */
    CK_CFG_PATH,    /* a file system path; held in ck_config.path, the value is 1 when set */
} ck_cfg_type;

#define CK_MS_ INT64_C(1000000)

/* X(id, key, type, default, min, max, description) */
#define CK_CONFIG_KEYS(X)                                                      \
    X(SEGMENT_SIZE, "taskmanager.memory.segment-size", CK_CFG_MEMORY, 32768,   \
      4096, 16 << 20, "size of one network buffer (a power of two)")           \
    X(BUFFER_TIMEOUT, "execution.buffer-timeout.interval", CK_CFG_DURATION,    \
      100 * CK_MS_, -CK_MS_, 3600000 * CK_MS_,                                 \
      "flush output buffers at least this often; 0 after every record; "       \
      "-1 ms (execution.buffer-timeout's old meaning) only when full")         \
    X(BUFFER_TIMEOUT_ENABLED, "execution.buffer-timeout.enabled", CK_CFG_BOOL, \
      1, 0, 1, "false: flush output buffers only when full")                   \
    X(BUFFERS_PER_CHANNEL, "taskmanager.network.memory.buffers-per-channel",   \
      CK_CFG_INT, 2, 1, 1000, "exclusive buffers (credits) per input channel") \
    X(FLOATING_PER_GATE,                                                       \
      "taskmanager.network.memory.floating-buffers-per-gate", CK_CFG_INT, 8,   \
      0, 100000, "floating buffers shared by the channels of an input gate")   \
    X(MAX_PER_CHANNEL, "taskmanager.network.memory.max-buffers-per-channel",   \
      CK_CFG_INT, 10, 1, 100000,                                               \
      "most buffers one output subpartition may hold")                         \
    X(MAX_OVERDRAFT,                                                           \
      "taskmanager.network.memory.max-overdraft-buffers-per-gate", CK_CFG_INT, \
      5, 0, 1000, "extra output buffers a record in progress may take")        \
    X(NET_FRACTION, "taskmanager.memory.network.fraction", CK_CFG_DECIMAL,    \
      100, 0, 999, "share of a task manager's Flink memory that holds "        \
      "network buffers")                                                       \
    X(NET_MIN, "taskmanager.memory.network.min", CK_CFG_MEMORY,                \
      INT64_C(64) << 20, 0, INT64_C(1) << 40, "least network memory of a "    \
      "task manager")                                                          \
    X(NET_MAX, "taskmanager.memory.network.max", CK_CFG_MEMORY,                \
      CK_CFG_MEMORY_INFINITE, 0, CK_CFG_MEMORY_INFINITE, "most network "      \
      "memory of a task manager (Flink's default: none, Long.MAX_VALUE bytes)") \
    X(MIN_SEGMENT_SIZE, "taskmanager.memory.min-segment-size", CK_CFG_MEMORY,  \
      256, 256, 16 << 20, "the least size buffer debloating gives a network "  \
      "buffer (at most taskmanager.memory.segment-size)")                     \
    X(TM_FLINK_SIZE, "taskmanager.memory.flink.size", CK_CFG_MEMORY,           \
      INT64_C(1280) << 20, INT64_C(1) << 20, INT64_C(1) << 42,                 \
      "a task manager's Flink memory (Flink's default configuration gives "   \
      "1280 mb); chandy uses it to size network memory only")                 \
    X(DEBLOAT, "taskmanager.network.memory.buffer-debloat.enabled",           \
      CK_CFG_BOOL, 0, 0, 1, "size network buffers to the throughput, so that " \
      "the data in flight takes about the target to consume")                 \
    X(DEBLOAT_TARGET, "taskmanager.network.memory.buffer-debloat.target",     \
      CK_CFG_DURATION, 1000 * CK_MS_, CK_MS_, 3600000 * CK_MS_,                \
      "time to consume the data in flight that buffer debloating aims at")    \
    X(DEBLOAT_PERIOD, "taskmanager.network.memory.buffer-debloat.period",     \
      CK_CFG_DURATION, 200 * CK_MS_, CK_MS_, 3600000 * CK_MS_,                 \
      "how often the throughput is measured and the buffer size recomputed")  \
    X(DEBLOAT_SAMPLES, "taskmanager.network.memory.buffer-debloat.samples",   \
      CK_CFG_INT, 20, 1, 100000,                                               \
      "samples the buffer size is averaged over (EMA alpha = 2 / (n + 1))")   \
    X(DEBLOAT_THRESHOLD,                                                       \
      "taskmanager.network.memory.buffer-debloat.threshold-percentages",      \
      CK_CFG_INT, 25, 0, 100,                                                  \
      "a new buffer size differing less than this from the last is not sent") \
    X(STATE_BACKEND, "state.backend.type", CK_CFG_ENUM, 0, 0, 1,            \
      "where keyed state lives: hashmap (objects on the heap, snapshots "      \
      "copy-on-write) or rocksdb (an embedded RocksDB per operator subtask, "  \
      "on its host's local disk)")                                             \
    X(ROCKS_WRITEBUFFER, "state.backend.rocksdb.writebuffer.size",           \
      CK_CFG_MEMORY, INT64_C(64) << 20, INT64_C(64) << 10, INT64_C(1) << 34,   \
      "memtable bytes before RocksDB flushes them to a level-0 file")          \
    X(CLOG_ENABLED, "state.changelog.enabled", CK_CFG_BOOL, 0, 0, 1,           \
      "every change to keyed state also goes to a changelog uploaded "        \
      "continuously; checkpoints are the last materialization plus it")       \
    X(CLOG_MATERIALIZE_ENABLED, "state.changelog.periodic-materialize.enabled", \
      CK_CFG_BOOL, 1, 0, 1, "materialize the wrapped backend's state "         \
      "periodically; false: never (the changelog is never truncated)")        \
    X(CLOG_MATERIALIZE, "state.changelog.periodic-materialize.interval",      \
      CK_CFG_DURATION, 600000 * CK_MS_, -86400000 * CK_MS_, 86400000 * CK_MS_, \
      "how often the wrapped backend's state is materialized (at least "      \
      "10 ms); a negative interval: never")                                    \
    X(CLOG_MAX_FAILURES, "state.changelog.max-failures-allowed", CK_CFG_INT,   \
      3, 0, 1000000, "materializations failing in a row that are tolerated: " \
      "the next is tried at the next interval; one more fails the task")      \
    X(CLOG_PERSIST_THRESHOLD,                                                  \
      "state.changelog.dstl.dfs.preemptive-persist-threshold", CK_CFG_MEMORY, \
      INT64_C(5) << 20, INT64_C(1) << 10, INT64_C(1) << 34,                    \
      "changelog bytes that are uploaded without waiting for a checkpoint")   \
    X(ROCKS_TARGET_FILE,                                                       \
      "state.backend.rocksdb.compaction.level.target-file-size-base",        \
      CK_CFG_MEMORY, INT64_C(64) << 20, INT64_C(64) << 10, INT64_C(1) << 34,   \
      "size of the files compaction writes")                                   \
    X(ROCKS_LEVEL_BASE,                                                        \
      "state.backend.rocksdb.compaction.level.max-size-level-base",          \
      CK_CFG_MEMORY, INT64_C(256) << 20, INT64_C(64) << 10, INT64_C(1) << 40,  \
      "level 1's size target (each level after it ten times more)")            \
    X(ROCKS_INGEST_RESTORE, "state.backend.rocksdb.use-ingest-db-restore-mode", \
      CK_CFG_BOOL, 0, 0, 1, "a rescale restoring from several instances "      \
      "imports those whose files lie in their key groups and clips the result, " \
      "instead of clipping one and copying the others key by key")            \
    X(ROCKS_DELETE_FILES,                                                      \
      "state.backend.rocksdb.rescaling.use-delete-files-in-range", CK_CFG_BOOL, \
      0, 0, 1, "a rescale clipping an instance first deletes its files that "  \
      "lie wholly outside the new key groups")                                 \
    X(ROCKS_OVERLAP, "state.backend.rocksdb.restore-overlap-fraction-threshold", \
      CK_CFG_DECIMAL, 0, 0, 1000, "a rescale starts from an instance with at " \
      "least this fraction of its key groups in the new range, if any has")    \
    X(ROCKS_FULL_COPY, "state.backend.rocksdb.rescaling.full-copy", CK_CFG_BOOL, \
      0, 0, 1, "chandy's, not Flink's: a rescale copies every old instance's " \
      "keys of the new key groups into an empty instance (the full rebuild, " \
      "the baseline of bench_rescale), whatever the keys above say")          \
    X(MAX_PARALLELISM, "pipeline.max-parallelism", CK_CFG_INT, -1, -1, 32768,  \
      "key groups of keyed operators; -1: Flink's default rule")               \
    X(AUTO_WATERMARK_INTERVAL, "pipeline.auto-watermark-interval",             \
      CK_CFG_DURATION, 200 * CK_MS_, 0, 3600000 * CK_MS_,                      \
      "how often sources emit watermarks; 0 disables them")                    \
    X(CHAINING, "pipeline.operator-chaining.enabled", CK_CFG_BOOL, 1, 0, 1,    \
      "chain forward-connected operators of equal parallelism")                \
    X(PARALLELISM_DEFAULT, "parallelism.default", CK_CFG_INT, 1, 1, 32768,     \
      "parallelism of operators that do not set one")                          \
    X(TASK_SLOTS, "taskmanager.numberOfTaskSlots", CK_CFG_INT, 1, 1, 1024,     \
      "slots per task manager (host)")                                         \
    X(CP_INTERVAL, "execution.checkpointing.interval", CK_CFG_DURATION, 0, 0,  \
      86400000 * CK_MS_,                                                       \
      "time between checkpoints (at least 10 ms); 0 (unset) disables them")    \
    X(CP_MODE, "execution.checkpointing.mode", CK_CFG_ENUM, 0, 0, 1,           \
      "EXACTLY_ONCE (aligned barriers) or AT_LEAST_ONCE (no alignment)")       \
    X(CP_TIMEOUT, "execution.checkpointing.timeout", CK_CFG_DURATION,          \
      600000 * CK_MS_, 10 * CK_MS_, 86400000 * CK_MS_,                         \
      "a checkpoint not complete by then expires")                             \
    X(CP_MIN_PAUSE, "execution.checkpointing.min-pause", CK_CFG_DURATION, 0,   \
      0, 86400000 * CK_MS_, "least time from one checkpoint's end to the next") \
    X(CP_MAX_CONCURRENT, "execution.checkpointing.max-concurrent-checkpoints", \
      CK_CFG_INT, 1, 1, 100, "checkpoints in progress at once")               \
    X(CP_TOLERABLE, "execution.checkpointing.tolerable-failed-checkpoints",    \
      CK_CFG_INT, 0, 0, 1000000,                                               \
      "consecutive failed checkpoints tolerated before the job fails over")    \
    X(CP_RETAINED, "execution.checkpointing.num-retained", CK_CFG_INT, 1, 1,   \
      1000, "completed checkpoints kept in the store")                         \
    X(CP_INCREMENTAL, "execution.checkpointing.incremental", CK_CFG_BOOL, 0, 0, \
      1, "checkpoints upload only the state files (RocksDB's SSTs) the last " \
      "complete one did not; savepoints stay full")                          \
    X(CP_FILE_MERGING, "execution.checkpointing.file-merging.enabled",        \
      CK_CFG_BOOL, 0, 0, 1, "a checkpoint's native state files (RocksDB's) "  \
      "go to the store merged, as segments of a few files per subtask")      \
    X(CP_FILE_MERGING_MAX, "execution.checkpointing.file-merging.max-file-size", \
      CK_CFG_MEMORY, INT64_C(32) << 20, INT64_C(64) << 10, INT64_C(1) << 40,   \
      "with file merging on: a merged file takes no more files once this "    \
      "large")                                                                \
    X(CP_FILE_MERGING_ACROSS,                                                  \
      "execution.checkpointing.file-merging.across-checkpoint-boundary",       \
      CK_CFG_BOOL, 0, 0, 1, "with file merging on: a subtask appends each "    \
      "checkpoint's merged files to the file it keeps open, until it is "     \
      "max-file-size large, instead of a new file per checkpoint")            \
    X(CP_MEMORY_THRESHOLD, "execution.checkpointing.data-inline-threshold",    \
      CK_CFG_MEMORY, 20 << 10, 0, 1 << 20, "a snapshot's file smaller than "  \
      "this is not stored as a file: its bytes go inline in the checkpoint's " \
      "_metadata")                                                             \
    X(CP_UNALIGNED, "execution.checkpointing.unaligned.enabled", CK_CFG_BOOL, \
      0, 0, 1, "barriers overtake in-flight data, which is stored with the "  \
      "checkpoint (exactly-once only; savepoints stay aligned)")               \
    X(CP_ALIGNED_TIMEOUT, "execution.checkpointing.aligned-checkpoint-timeout", \
      CK_CFG_DURATION, 0, 0, 86400000 * CK_MS_,                                \
      "with unaligned checkpoints on: start aligned, and go unaligned once "   \
      "this long has passed since the checkpoint started; 0: unaligned at once") \
    X(CP_AFTER_FINISH, "execution.checkpointing.checkpoints-after-tasks-finish", \
      CK_CFG_BOOL, 1, 0, 1, "go on checkpointing the subtasks still running "  \
      "once some have finished (FLIP-147); false: checkpoints stop then")       \
    X(RS_TYPE, "restart-strategy.type", CK_CFG_ENUM, 0, 0, 4,                  \
      "how a job restarts after a failure; default: exponential-delay with "   \
      "checkpointing, none without")                                           \
    X(RS_FD_ATTEMPTS, "restart-strategy.fixed-delay.attempts", CK_CFG_INT, 1,  \
      0, 1000000, "restarts before fixed-delay gives up")                      \
    X(RS_FD_DELAY, "restart-strategy.fixed-delay.delay", CK_CFG_DURATION,      \
      1000 * CK_MS_, 0, 86400000 * CK_MS_, "wait before each restart")         \
    X(RS_FR_MAX, "restart-strategy.failure-rate.max-failures-per-interval",    \
      CK_CFG_INT, 1, 1, 1000000, "failures tolerated within the interval")     \
    X(RS_FR_INTERVAL, "restart-strategy.failure-rate.failure-rate-interval",   \
      CK_CFG_DURATION, 60000 * CK_MS_, CK_MS_, 86400000 * CK_MS_,              \
      "the window failure-rate counts failures in")                            \
    X(RS_FR_DELAY, "restart-strategy.failure-rate.delay", CK_CFG_DURATION,     \
      1000 * CK_MS_, 0, 86400000 * CK_MS_, "wait before each restart")         \
    X(RS_EXP_INITIAL, "restart-strategy.exponential-delay.initial-backoff",    \
      CK_CFG_DURATION, 1000 * CK_MS_, CK_MS_, 86400000 * CK_MS_,               \
      "wait before the first restart")                                         \
    X(RS_EXP_MAX, "restart-strategy.exponential-delay.max-backoff",            \
      CK_CFG_DURATION, 60000 * CK_MS_, CK_MS_, 86400000 * CK_MS_,              \
      "longest wait between restarts")                                         \
    X(RS_EXP_MULT, "restart-strategy.exponential-delay.backoff-multiplier",    \
      CK_CFG_DECIMAL, 1500, 1001, 1000000,                                     \
      "growth of the wait per restart (more than 1)")                          \
    X(RS_EXP_RESET, "restart-strategy.exponential-delay.reset-backoff-threshold", \
      CK_CFG_DURATION, 3600000 * CK_MS_, CK_MS_, 86400000 * CK_MS_ * 365,      \
      "a job this long without failure starts again from the initial wait")    \
    X(RS_EXP_JITTER, "restart-strategy.exponential-delay.jitter-factor",       \
      CK_CFG_DECIMAL, 100, 0, 1000, "random spread of the wait (fraction)")    \
    X(RS_EXP_ATTEMPTS,                                                         \
      "restart-strategy.exponential-delay.attempts-before-reset-backoff",      \
      CK_CFG_INT, 2147483647, 1, 2147483647,                                   \
      "restarts before exponential-delay gives up")                            \
    X(FAILOVER, "jobmanager.execution.failover-strategy", CK_CFG_ENUM, 1, 0,   \
      1, "region: a failure restarts the failed tasks' pipelined regions; "     \
      "full: every task")                                                      \
    X(RESCALE_MAX_DELAY, "jobmanager.adaptive-scheduler.rescale-trigger.max-delay", \
      CK_CFG_DURATION, 0, 0, 86400000 * CK_MS_, "a rescale via checkpoint "  \
      "waits this long at most for the next completed checkpoint, then "      \
      "restarts from the latest; 0: the checkpoint interval times "           \
      "(max-checkpoint-failures + 1)")                                         \
    X(RESCALE_MAX_FAILURES,                                                    \
      "jobmanager.adaptive-scheduler.rescale-trigger.max-checkpoint-failures", \
      CK_CFG_INT, 2, 1, 1000000, "a rescale via checkpoint waits for no more " \
      "than this many failed checkpoints")                                     \
    X(HB_INTERVAL, "heartbeat.interval", CK_CFG_DURATION, 10000 * CK_MS_,      \
      CK_MS_, 86400000 * CK_MS_, "how often task managers report to the job manager") \
    X(HB_TIMEOUT, "heartbeat.timeout", CK_CFG_DURATION, 50000 * CK_MS_,        \
      CK_MS_, 86400000 * CK_MS_, "silence after which a task manager is lost") \
    X(HB_RPC_FAILURES, "heartbeat.rpc-failure-threshold", CK_CFG_INT, 2, -1,   \
      1000000, "failed heartbeat RPCs in a row (the connection refused or "    \
      "reset) after which a task manager is lost; -1: only the timeout")       \
    X(RECOVERY_PATH, "execution.state-recovery.path", CK_CFG_PATH, 0, 0, 1,    \
      "a savepoint (or retained checkpoint) directory to start the job from")   \
    X(CLAIM_MODE, "execution.state-recovery.claim-mode", CK_CFG_ENUM, 1, 0, 2, \
      "who owns the snapshot a job starts from: NO_CLAIM (the user; the "     \
      "first checkpoint after it is full), CLAIM (the job: deleted once "     \
      "subsumed) or LEGACY (the user, its files still referred to)")

/* Flink 1.20's older names of the keys above, X(name, id, flink): flink
 * is 1 for a name Flink 1.20 accepts as deprecated (withDeprecatedKeys in
 * its option classes: TaskManagerOptions, ExecutionOptions,
 * PipelineOptions, CheckpointingOptions, StateBackendOptions,
 * StateChangelogOptions, FsStateChangelogOptions, StateRecoveryOptions,
 * RestartStrategyOptions), 0 for a name chandy took from Flink's sources
 * before 1.20 came out, which Flink never released. */
#define CK_CONFIG_DEPRECATED(X)                                                \
    X("execution.buffer-timeout", BUFFER_TIMEOUT, 1)                           \
    X("taskmanager.network.memory.fraction", NET_FRACTION, 1)                  \
    X("taskmanager.network.memory.min", NET_MIN, 1)                            \
    X("taskmanager.network.memory.max", NET_MAX, 1)                            \
    X("state.backend", STATE_BACKEND, 1)                                       \
    X("state.backend.changelog.enabled", CLOG_ENABLED, 1)                      \
    X("state.backend.changelog.periodic-materialize.enabled",                  \
      CLOG_MATERIALIZE_ENABLED, 1)                                             \
    X("state.backend.changelog.periodic-materialize.interval",                 \
      CLOG_MATERIALIZE, 1)                                                     \
    X("state.backend.changelog.max-failures-allowed", CLOG_MAX_FAILURES, 1)    \
    X("dstl.dfs.preemptive-persist-threshold", CLOG_PERSIST_THRESHOLD, 1)      \
    X("pipeline.operator-chaining", CHAINING, 1)                               \
    X("state.checkpoints.num-retained", CP_RETAINED, 1)                        \
    X("state.backend.incremental", CP_INCREMENTAL, 1)                          \
    X("state.storage.fs.memory-threshold", CP_MEMORY_THRESHOLD, 1)             \
    X("state.backend.fs.memory-threshold", CP_MEMORY_THRESHOLD, 1)             \
    X("execution.checkpointing.unaligned", CP_UNALIGNED, 1)                    \
    X("execution.checkpointing.alignment-timeout", CP_ALIGNED_TIMEOUT, 1)      \
    X("execution.checkpointing.checkpoints-after-tasks-finish.enabled",        \
      CP_AFTER_FINISH, 1)                                                      \
    X("restart-strategy", RS_TYPE, 1)                                          \
    X("execution.savepoint.path", RECOVERY_PATH, 1)                            \
    X("execution.savepoint-restore-mode", CLAIM_MODE, 1)                       \
    X("state.checkpoints.file-merging.enabled", CP_FILE_MERGING, 0)            \
    X("state.checkpoints.file-merging.across-checkpoint-boundary",             \
      CP_FILE_MERGING_ACROSS, 0)

/* A memory size with no bound: Flink's MemorySize.MAX_VALUE. */
#define CK_CFG_MEMORY_INFINITE INT64_MAX

typedef enum ck_cfg_id {
#define CK_CFG_ENUM(id, key, type, def, min, max, desc) CK_CFG_##id,
    CK_CONFIG_KEYS(CK_CFG_ENUM)
#undef CK_CFG_ENUM
        CK_CFG_COUNT
} ck_cfg_id;

typedef struct ck_cfg_def {
    const char *key;
    ck_cfg_type type;
    int64_t def, min, max;
    const char *desc;
} ck_cfg_def;

typedef struct ck_config {
    int64_t v[CK_CFG_COUNT];
    uint8_t set[CK_CFG_COUNT]; /* given explicitly */
    char path[512];            /* the one CK_CFG_PATH key: execution.state-recovery.path */
} ck_config;

/* Fills every key with its default. */
void ck_config_defaults(ck_config *c);

/* The definition of a key, or NULL. */
const ck_cfg_def *ck_config_def(ck_cfg_id id);

/* Looks a key up by its Flink name, or one of its deprecated names;
 * returns its id or -1. */
int ck_config_find(const char *key);

/* A deprecated name (CK_CONFIG_DEPRECATED): its key's id, and in *flink
 * whether Flink 1.20 accepts it too (1) or it is chandy's own (0). -1
 * when key is not a deprecated name. */
int ck_config_deprecated(const char *key, int *flink);

/* The i-th deprecated name of key id (i from 0), or NULL past the last. */
const char *ck_config_deprecated_name(ck_cfg_id id, int i);

/* The known key (current name) closest to an unknown one, by edit
 * distance over current and deprecated names (a deprecated name's match
 * suggests its current key); NULL when none is close enough to be what
 * was meant. */
const char *ck_config_suggest(const char *key);

/*
 * Parses a Flink-style value for key id from text: durations like "100 ms",
 * "10s", "1 min" (a bare number is milliseconds), memory sizes like "32kb",
 * "32 kb", "1m" (a bare number is bytes; "infinite" for a key with no
 * upper bound, CK_CFG_MEMORY_INFINITE), booleans "true"/"false".
 * Returns 0 and sets *out, CK_EINVAL (syntax) or CK_ERANGE.
 */
CK_MUST_CHECK
int ck_config_parse(ck_cfg_id id, const char *text, int64_t *out);

/* Checks a numeric value against the key's range: 0 or CK_ERANGE. */
CK_MUST_CHECK
int ck_config_check(ck_cfg_id id, int64_t v);

/* The names of an enum key's choices (NULL-terminated), or NULL. */
const char *const *ck_config_choices(ck_cfg_id id);

enum { CK_CP_EXACTLY_ONCE = 0, CK_CP_AT_LEAST_ONCE = 1 };
enum { CK_FAILOVER_FULL = 0, CK_FAILOVER_REGION = 1 };
enum { CK_CLAIM = 0, CK_NO_CLAIM = 1, CK_CLAIM_LEGACY = 2 };
enum {
    CK_RS_DEFAULT = 0,
    CK_RS_NONE = 1,
    CK_RS_FIXED_DELAY = 2,
    CK_RS_FAILURE_RATE = 3,
    CK_RS_EXPONENTIAL_DELAY = 4,
};

/* Formats a value the way Flink would write it ("100 ms", "32 kb"). */
void ck_config_format(ck_cfg_id id, int64_t v, char *buf, unsigned len);

static inline int64_t ck_cfg(const ck_config *c, ck_cfg_id id)
{
    return c->v[id];
}

#endif
