/*
 * rocksrescale.h - restoring a RocksDB keyed-state instance for a new
 * key-group range from the instances of another parallelism (Flink's
 * RocksDBIncrementalRestoreOperation with a changed range).
 *
 * A new subtask owns key groups kgr (inclusive, as
 * keygroup.h and Flink's KeyGroupRange). It is given every old instance
 * whose range meets its own, each downloaded into a directory of its own
 * (a native snapshot's files: SSTs, MANIFEST, CURRENT, OPTIONS), with the
 * range it was declared to hold. Keys start with their key group as two
 * big-endian bytes (rocksstate.h), so a key-group range is one key range
 * and [be16(a), be16(b + 1)) bounds it. The instance is built in a
 * directory of its own, by one of four paths, chosen as Flink chooses
 * (ck_rrs_plan):
 *
 *   REUSE   one instance, its range the new one (no rescale): its files
 *           are put in place (SSTs hard-linked, the rest copied) and
 *           opened as they are. Only this path keeps the instance's file
 *           history: the others make a new backend, whose first
 *           incremental checkpoint uploads every file (Flink's new UUID
 *           and empty SST history). ck_rrs_stats.history_kept says which.
 *   CLIP    the initial instance, chosen by Flink's score
 *           (findTheBestStateHandleForInitial: most key groups in the new
 *           range, then the largest fraction of its own; an instance
 *           under state.backend.rocksdb.restore-overlap-fraction-threshold
 *           is never preferred to one at or over it), is put in place and
 *           opened, and clipped: in every column family holding state
 *           (not an empty default one beside CK_ROCKS_DATA_CF), first (with
 *           state.backend.rocksdb.rescaling.use-delete-files-in-range)
 *           the files lying wholly outside the new range are deleted,
 *           then DeleteRange covers [old start, new start) and
 *           [new end + 1, old end + 1). Every other instance is opened
 *           read-only as a temporary instance and the keys of the new
 *           range are copied in through write batches. Flink's default.
 *   INGEST  (state.backend.rocksdb.use-ingest-db-restore-mode, several
 *           instances) each instance is opened and its SST files' key
 *           bounds checked against its declared range; the column family
 *           of each that conforms is exported and all are imported into
 *           a new instance (hard links: no key is read or written), which
 *           is clipped from the exports' overall range to the new one;
 *           the others are copied in as above. When none conforms, the
 *           CLIP path runs instead. One instance alone always takes CLIP
 *           (or REUSE), as in Flink.
 *   COPY    (ck_rrs_opts.copy: chandy's, not a Flink key) every
 *           instance's keys of the new range are copied into an empty
 *           instance: the full rebuild, which Flink up to 1.17 made when
 *           no instance passed the overlap threshold, and the baseline
 *           bench_rescale measures the others against.
 *
 * Differences from Flink: Flink 1.20 chooses the first instance as the
 * initial one when none passes the threshold (this module does the
 * same); state.backend.rocksdb.incremental-restore-async-compact-after-rescale
 * is not modelled (the engine's own compaction runs after a restore,
 * rocksstate.h); RocksDB 7.8 imports one export per column family, so
 * several exports are merged into one import by level (rocksshim.h's
 * ck_rocks_import), and an export with more tiers than levels is copied
 * instead.
 *
 * Every restore reports what it did (ck_rrs_stats): the counts a cost
 * model charges (keys iterated and written, bytes written, files
 * linked, deleted and imported, ranges deleted) and the wall time of
 * each phase. The times are for benchmarks and calibration; a simulation
 * charges the counts, never these times.
 *
 * Invariants of a restore that returns 0:
 *   (1) the instance holds exactly the entries of the sources whose key
 *       group lies in kgr, each once, with its value: none
 *       outside is visible (clipped ones are covered by range tombstones
 *       until compaction drops them);
 *   (2) no source's SST file is changed, nor its MANIFEST read by
 *       another: the initial instance's files are hard links (SSTs are
 *       never written once made) or copies, temporary instances are
 *       opened read-only; opening may add RocksDB's own files (a LOG, and
 *       for an exported one a new MANIFEST) to a source's directory,
 *       which is a download the caller deletes after, as Flink's;
 *   (3) two sources never declare the same key group (else CK_EINVAL,
 *       before anything is done): a key cannot come from two of them.
 */
#ifndef CK_ROCKSRESCALE_H
#define CK_ROCKSRESCALE_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "common.h"
#include "keygroup.h"
#include "rocksshim.h"

/* One old instance, downloaded. */
typedef struct ck_rrs_source {
    const char *dir;
    ck_kgr kgr; /* the range it was declared to hold */
} ck_rrs_source;

/* How to restore: Flink's keys, and chandy's copy path. */
typedef struct ck_rrs_opts {
    int ingest;           /* state.backend.rocksdb.use-ingest-db-restore-mode */
    int delete_files;     /* state.backend.rocksdb.rescaling.use-delete-files-in-range */
    double overlap;       /* state.backend.rocksdb.restore-overlap-fraction-threshold, 0..1 */
    int copy;             /* 1: the COPY path, whatever the above say */
    uint64_t batch_bytes; /* a write batch is written at this many bytes or 500
                           * entries (Flink's state.backend.rocksdb.write-batch-size
                           * and RocksDBWriteBatchWrapper); 0: 2 MiB */
} ck_rrs_opts;

/* The instance to build. */
typedef struct ck_rrs_target {
    const char *dir;               /* created: it must not exist or be empty */
    const rocksdb_options_t *opts; /* the instance's options (also the sources') */
    rocksdb_writeoptions_t *wo;    /* its writes' (the write-ahead log off) */
    ck_kgr kgr;                    /* its key groups */
    int max_parallelism;           /* every range lies in [0, max_parallelism) */
    int nlevels;                   /* the instance's levels (rocksdb num_levels) */
    uint64_t write_buffer;         /* copies flush the memtable once it holds this
                                    * (state.backend.rocksdb.writebuffer.size) */
} ck_rrs_target;

#define CK_RRS_PATHS(X)                                                        \
    X(REUSE, "reuse")                                                          \
    X(CLIP, "clip")                                                            \
    X(INGEST, "ingest")                                                        \
    X(COPY, "copy")

typedef enum ck_rrs_path {
#define CK_RRS_PATH_ENUM(id, name) CK_RRS_##id,
    CK_RRS_PATHS(CK_RRS_PATH_ENUM)
#undef CK_RRS_PATH_ENUM
        CK_RRS_NPATHS
} ck_rrs_path;

/* Phases of a restore, in the order they run. */
#define CK_RRS_PHASES(X)                                                       \
    X(LINK, "link")                 /* the initial instance's files put in place */ \
    X(OPEN, "open")                 /* instances opened (and closed) */       \
    X(CHECK, "check")               /* SST key bounds checked (ingest) */     \
    X(EXPORT, "export")             /* column families exported (ingest) */   \
    X(IMPORT, "import")             /* exports imported (ingest) */           \
    X(DELETE_FILES, "delete_files") /* files wholly outside deleted */        \
    X(DELETE_RANGE, "delete_range") /* range tombstones written */            \
    X(COPY, "copy")                 /* keys iterated and written */           \
    X(FLUSH, "flush")               /* memtables flushed during the copies */ \
    X(COMPACT, "compact")           /* the engine's compaction after (rocksstate) */

typedef enum ck_rrs_phase {
#define CK_RRS_PHASE_ENUM(id, name) CK_RRS_PH_##id,
    CK_RRS_PHASES(CK_RRS_PHASE_ENUM)
#undef CK_RRS_PHASE_ENUM
        CK_RRS_NPHASES
} ck_rrs_phase;

/* What a restore did. */
typedef struct ck_rrs_stats {
    ck_rrs_path path;
    int initial;          /* the source clipped or reused; -1: none (COPY, INGEST) */
    int history_kept;     /* 1: REUSE, the source's files are the instance's history */
    uint32_t opened;      /* instances opened, the initial one included */
    uint32_t imported;    /* sources exported and imported whole (INGEST) */
    uint32_t copied;      /* sources copied key by key */
    uint64_t keys_iterated, keys_written, bytes_written; /* by the copies (key + value bytes) */
    uint32_t files_linked;                 /* the initial's files put in place */
    uint64_t bytes_linked;
    uint32_t files_deleted;                /* by DeleteFilesInRange */
    uint64_t bytes_deleted;
    uint32_t files_imported;               /* by the import (INGEST) */
    uint64_t bytes_imported;
    uint32_t ranges_deleted;               /* DeleteRange calls (per column family) */
    uint32_t flushes;                      /* memtable flushes during the copies */
    uint64_t flushed;                      /* their SST bytes */
    uint32_t compactions;                  /* the compaction after (rocksstate) */
    uint64_t compacted;
    uint64_t ns[CK_RRS_NPHASES];           /* wall time per phase */
} ck_rrs_stats;

/* "reuse", "clip", ...; "?" for a value out of range. */
const char *ck_rrs_path_name(int path);
/* "link", "open", ...; "?" for a value out of range. */
const char *ck_rrs_phase_name(int phase);
/* The stats' wall time over every phase, in nanoseconds. */
uint64_t ck_rrs_total_ns(const ck_rrs_stats *st);

/* Flink's findTheBestStateHandleForInitial: the index of the source to
 * start from for key groups kgr, by the number of key
 * groups it has in the range, then the fraction of its own they are;
 * one under the threshold is never preferred to one at or over it, and
 * when all are under, the first is taken (Flink 1.20). -1 when n is 0. */
int ck_rrs_best_initial(const ck_rrs_source *src, int n, ck_kgr kgr,
                        double threshold);

/* The path a restore of n sources into kgr with options o
 * takes, before the INGEST path checks the sources (it may then fall
 * back to CLIP), and in *initial the source it starts from (-1: none). */
ck_rrs_path ck_rrs_plan(const ck_rrs_source *src, int n, ck_kgr kgr,
                        const ck_rrs_opts *o, int *initial);

/*
 * Builds the instance for t from the n sources src[0..n) with options o,
 * in t->dir, and leaves it open in *out (the caller closes it,
 * ck_rocks_db_close). *st gets what was done (zeroed first).
 *
 * Returns 0; CK_EINVAL (a range outside [0, max_parallelism), sources
 * whose ranges overlap, n < 1: nothing done); CK_ECORRUPT (a source, or
 * the files put in place, is not a readable database, or its keys could
 * not be read); CK_EIO (a directory or file could not be made, read or
 * linked, or RocksDB failed a write); CK_ENOMEM. err gets one line naming
 * the source (its index and directory) and the reason. On failure *out
 * is closed and t->dir may hold part of an instance: the caller destroys
 * it; export directories (t->dir with ".export<i>" appended) are removed.
 */
CK_MUST_CHECK
int ck_rrs_restore(const ck_rrs_target *t, const ck_rrs_source *src, int n,
                   const ck_rrs_opts *o, ck_rocks_dbh *out, ck_rrs_stats *st, char *err,
                   size_t errlen);

#endif
