/*
 * rocksstate.h - keyed state in RocksDB (Flink's EmbeddedRocksDBStateBackend)
 * behind the engine's backend interface (kstate.h): state.backend.type
 * rocksdb.
 *
 * One RocksDB instance per operator subtask, in a working directory on its
 * host's local disk that the platform gives (ck_platform_ops.kstate_open);
 * it is destroyed with the instance, as Flink disposes of its local
 * directory.
 *
 * Key layout, so that a key-group range is one contiguous range of keys:
 *   u16 key group (big-endian) | u8 state | u32 key length (BE) | key |
 *   u64 namespace (BE, sign bit flipped: namespaces sort as numbers) |
 *   MAP state: the user key
 * Values: nfields 64-bit fields, little-endian; a LIST's elements are
 * concatenated, oldest first.
 *
 * Determinism: RocksDB's writes must not depend on its threads' timing.
 * The write-ahead log is off (Flink's too: checkpoints are the durability),
 * and the memtable is sized so that RocksDB never flushes it by itself;
 * instead the instance flushes when its memtable passes
 * state.backend.rocksdb.writebuffer.size (checked every
 * CK_ROCKS_CHECK_EVERY writes, so at the same write whatever the timing)
 * and when a checkpoint's synchronous phase asks (ck_kstate_ops.flush).
 * RocksDB's automatic compactions are off: after every flush (and after
 * a restore opens an instance) the engine compacts, in its own thread, by
 * a leveled policy: level 0's files all into level 1 once there are
 * CK_ROCKS_L0_TRIGGER of them, then, level by level, one file (in key
 * order, round robin) into the next while a level holds more than its
 * target (max-size-level-base, times 10 per level), into files of
 * target-file-size-base (DB::CompactFiles, through rocksshim.h). Writes
 * never meet a running compaction, and the LSM tree after each flush
 * depends on the writes alone: the same seed gives the same files.
 *
 * Access: acquire reads a copy into the instance's scratch, release writes
 * it back when it changed (or was created); list_add reads the list and
 * writes it back longer. The count of entries is kept exactly (a list
 * counts once), as the heap backend's; after a rescale restore it is
 * counted when first asked for.
 *
 * Column families: keyed state lives in the default column family of an
 * instance ck_rocks_open made, and in CK_ROCKS_DATA_CF of one a rescale
 * imported into (rocksshim.h): an instance is opened with every column
 * family it has, and the engine's flushes, compactions and levels are
 * the keyed state's column family's.
 *
 * Rescaling: ck_rocks_rescale replaces an instance's contents by the keys
 * of its key groups taken from old instances of another parallelism, by
 * Flink's paths (rocksrescale.h); native_rescale (kstate.h) does it from
 * the old instances' native files as a restore downloaded them: each
 * source's files are written to a directory of their own beside the
 * instance's (<dir>.rs<i>), the path is the one ck_rocks_opts.rescale
 * chooses, the downloads are removed after, and the counts go to the
 * instance's work (ck_kstate_work.rebuild) for the engine to charge.
 */
#ifndef CK_ROCKSSTATE_H
#define CK_ROCKSSTATE_H

#include <stddef.h>

#include "kstate.h"
#include "rocksrescale.h"

#define CK_ROCKS_CHECK_EVERY 256
#define CK_ROCKS_L0_TRIGGER 4
#define CK_ROCKS_LEVELS 7

/* The instance's LSM tree: per level 0..CK_ROCKS_LEVELS-1, its files and
 * their bytes. 0 or CK_EIO. */
int ck_rocks_levels(ck_kstate *s, int *files, uint64_t *bytes);

/* Opens a fresh instance in directory dir (created; what was there is
 * destroyed first), with options o. NULL with a one-line reason in err. */
typedef struct ck_rocks_opts {
    uint64_t write_buffer; /* state.backend.rocksdb.writebuffer.size */
    uint64_t target_file;  /* ...compaction.level.target-file-size-base */
    uint64_t level_base;   /* ...compaction.level.max-size-level-base */
    int max_parallelism;   /* a rescale's bound on key groups (0: 32768) */
    ck_kstate_rescale rescale; /* how native_rescale rebuilds (Flink's keys) */
} ck_rocks_opts;

ck_kstate *ck_rocks_open(const char *dir, const ck_rocks_opts *o, ck_kgr kgr,
                         const ck_state_desc *d, int n, char *err, size_t errlen);

/*
 * Rescale restore: replaces the contents of instance s (ck_rocks_open's)
 * by the keys of its key groups kgr in the n old
 * instances src[0..n) (downloaded directories, each with its declared
 * range, ranges within [0, max_parallelism)), by the path Flink's keys in
 * o choose (rocksrescale.h), then runs the engine's compaction (its time
 * and bytes in st, phase "compact"). st gets what was done.
 *
 * Unless st->history_kept, the instance is a new backend: none of its
 * files is one an earlier checkpoint uploaded, and the caller starts its
 * file history empty (its first incremental checkpoint uploads every
 * file), as Flink gives a rescaled backend a new UUID.
 *
 * Returns 0 or ck_rrs_restore's errors (err says which instance and
 * why), and CK_EINVAL for an instance of another backend. On failure s
 * holds no database: the caller frees it (as after a failed
 * native_restore).
 */
CK_MUST_CHECK
int ck_rocks_rescale(ck_kstate *s, const ck_rrs_source *src, int n, int max_parallelism,
                     const ck_rrs_opts *o, ck_rrs_stats *st, char *err, size_t errlen);

/* The counts of a rescale restore st, as the engine's cost model takes
 * them (kstate.h's ck_kstate_rebuild, one rebuild). */
void ck_rocks_rebuild_counts(const ck_rrs_stats *st, ck_kstate_rebuild *out);

#endif
