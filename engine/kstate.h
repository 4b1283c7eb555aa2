/*
 * kstate.h - the keyed-state backend interface (Flink's KeyedStateBackend).
 *
 * A keyed operator declares its states (ck_state_desc, Flink's
 * StateDescriptor) and keeps them in one backend instance (ck_kstate) that
 * holds exactly the key groups kgr of its subtask. Every
 * state is addressed by (key, namespace), where a window's start is the
 * namespace, and a map state's entries by a user key as well:
 *
 *   VALUE  (key, ns)       -> value
 *   MAP    (key, ns, ukey) -> value
 *   LIST   (key, ns)       -> values, in the order they were added
 *
 * A value is an array of `nfields` 64-bit integers (the state's
 * serializer, in Flink's terms): in memory in host order; in a state file
 * little-endian (snapshot.h), so a file is the same on every machine.
 *
 * Access is acquire/release: acquire returns the value to read or edit,
 * release ends the access, telling whether it changed. A backend that
 * edits values in place (the heap) has no release and its acquire returns
 * the value where it lives; one that must write values back (RocksDB)
 * returns a copy and writes it at release. Between acquire and release
 * the caller makes no other call on the same state.
 *
 * Locating and prefetching are optional hooks a backend may keep for its
 * speed: locate fills ck_kkey.loc.hash with whatever the backend files the
 * entry under (the heap: its table hash), so the task can compute it a
 * record ahead and prefetch the slot (ck_chain_locate).
 *
 * Snapshots: view_take, in a checkpoint's synchronous phase, returns a
 * consistent read-only view of every state (the heap: copy-on-write); the
 * asynchronous phase visits it key group by key group in the canonical
 * form (ck_kentry), which snapshot.c writes; view_release drops it.
 * Restore inserts canonical entries with acquire and release.
 *
 * Invariants (ck_ks_check, through each backend's optional check):
 *   (1) a backend instance belongs to one operator subtask, holding
 *       key groups kgr, not empty and 1..CK_KS_MAX_STATES states;
 *   (2) every entry's key group is in kgr and is its key's
 *       group (the caller computes the group; the backend trusts it);
 *   (3) a view sees the state as it was when taken, whatever is written
 *       after.
 * A backend's own are in its header (heapstate.h, changelog.h).
 */
#ifndef CK_KSTATE_H
#define CK_KSTATE_H

#include "common.h"
#include "invariant.h"
#include "keygroup.h"

#define CK_KS_MAX_STATES 4
#define CK_KS_MAX_FIELDS 8

typedef enum ck_state_kind { CK_STATE_VALUE = 1, CK_STATE_MAP = 2, CK_STATE_LIST = 3 } ck_state_kind;

/* One state of an operator. */
typedef struct ck_state_desc {
    const char *name;
    ck_state_kind kind;
    uint32_t nfields; /* 64-bit fields of a value (a list's element), 1..CK_KS_MAX_FIELDS */
} ck_state_desc;

/* Where a (key, namespace) lives: its key group, and the backend's hash
 * (ck_kstate_ops.locate). */
typedef struct ck_keyloc {
    int32_t jhash; /* the key's Java hash */
    int kg;
    int64_t ns;
    uint32_t hash; /* the backend's (the heap: ck_heap_hash and the user key's) */
} ck_keyloc;

/* A state's address. */
typedef struct ck_kkey {
    ck_keyloc loc;
    const char *key;
    uint32_t klen;
    const uint8_t *ukey; /* MAP state: the user key; otherwise NULL */
    uint32_t uklen;
} ck_kkey;

/* One entry in canonical form, as a view visits it. */
typedef struct ck_kentry {
    int st;              /* the state's index */
    const char *key;
    uint32_t klen;
    int64_t ns;
    const uint8_t *ukey; /* MAP: the user key */
    uint32_t uklen;
    uint32_t count;       /* LIST: its elements; otherwise 1 */
    const int64_t *value; /* count x nfields values */
} ck_kentry;

typedef int (*ck_kentry_fn)(void *arg, const ck_kentry *e);

/* A native snapshot (RocksDB's checkpoint): the instance's files as of a
 * checkpoint's synchronous phase, set aside so that later writes and
 * compactions leave them be. Names are in byte order. */
typedef struct ck_native_file {
    char name[64];  /* in the instance's directory (handle.h's local name) */
    uint64_t size;
    int immutable;  /* a data file (an SST) that never changes once written: a
                     * later checkpoint may refer to it instead of uploading it */
    uint64_t entries; /* the keyed-state entries it holds, versions and deletions
                       * included (RocksDB's num_entries), where the backend knows */
} ck_native_file;

typedef struct ck_native_snap {
    uint32_t n;
    ck_native_file *files;
    void *priv; /* the backend's */
} ck_native_snap;

typedef struct ck_kstate ck_kstate;
typedef struct ck_kstate_view ck_kstate_view;

/* The native files of one old instance a restore at another parallelism
 * reads (ck_kstate_ops.native_rescale). */
typedef struct ck_native_source {
    ck_kgr kgr; /* the key groups it held */
    uint32_t n; /* its files: names, contents, lengths */
    const char *const *names;
    uint8_t *const *data;
    const size_t *lens;
} ck_native_source;

typedef struct ck_kstate_ops {
    const char *name; /* state.backend.type */
    void (*free)(ck_kstate *s);

    /* Optional (NULL: none). locate fills k->loc.hash from the rest of k;
     * prefetch starts loading where k's entry would be. */
    void (*locate)(const ck_kstate *s, int st, ck_kkey *k);
    void (*prefetch)(const ck_kstate *s, int st, const ck_kkey *k);

    /* The value of k in state st (located), or NULL: absent, unless create
     * (then inserted zero-filled, *created = 1), or out of memory. */
    int64_t *(*acquire)(ck_kstate *s, int st, const ck_kkey *k, int create, int *created);
    /* Ends an access (NULL: values are edited in place); dirty: it changed.
     * Returns 0 or an error. */
    CK_MUST_CHECK int (*release)(ck_kstate *s, int st, const ck_kkey *k, int64_t *v, int dirty);
    /* Removes k (a list: all of it). Returns 0 or CK_ENOTFOUND. */
    CK_MUST_CHECK int (*remove)(ck_kstate *s, int st, const ck_kkey *k);

    /* LIST state: appends one element (nfields values); returns 0 or
     * CK_ENOMEM. list_get returns k's elements (*n of them, n x nfields
     * values, oldest first), valid until the next call on the state, or
     * NULL with *n = 0 when it has none (or memory ran out: *n = 1). */
    CK_MUST_CHECK int (*list_add)(ck_kstate *s, int st, const ck_kkey *k, const int64_t *v);
    const int64_t *(*list_get)(ck_kstate *s, int st, const ck_kkey *k, uint32_t *n);

    uint64_t (*entries)(const ck_kstate *s); /* over every state; a list counts once */

    /* Optional: a checkpoint's synchronous phase: what is buffered in
     * memory goes to the backend's files (RocksDB's memtable flush). */
    CK_MUST_CHECK int (*flush)(ck_kstate *s);

    /* Optional: a backend that wraps another (the changelog backend)
     * returns it: snapshots, views and native files are the wrapped one's,
     * and the wrapper leaves those operations NULL (native_rescale it
     * forwards: a rebuild is no change to log). */
    ck_kstate *(*inner)(ck_kstate *s);

    /* Optional (NULL: snapshots are canonical views only). native_take, in
     * a checkpoint's synchronous phase, flushes and sets the instance's
     * files aside; native_read reads file i of them (malloc'd), in the
     * asynchronous phase; native_release drops them. native_restore
     * replaces the instance's contents by the n files of a native
     * snapshot (as they were read) and opens it. Return 0 or CK_E*. */
    CK_MUST_CHECK int (*native_take)(ck_kstate *s, uint64_t id, ck_native_snap *out);
    CK_MUST_CHECK int (*native_read)(ck_kstate *s, const ck_native_snap *n, uint32_t i,
                                     uint8_t **data, size_t *len);
    void (*native_release)(ck_kstate *s, ck_native_snap *n);
    /* Optional: where file i of n lies on the local disk, into buf (for
     * ck_platform_ops.store_put_files); 0, or CK_EINVAL/CK_ERANGE. */
    CK_MUST_CHECK int (*native_path)(ck_kstate *s, const ck_native_snap *n, uint32_t i, char *buf,
                                     size_t len);
    CK_MUST_CHECK int (*native_restore)(ck_kstate *s, uint32_t n, const char *const *names,
                                        uint8_t *const *data, const size_t *lens);
    /* Optional: a restore at another parallelism (a rescale): replaces the
     * instance's contents by the entries of its key groups s->kgr held by
     * the nsrc old instances src (their native files as they were read,
     * each with the range it held; ranges do not overlap), by the path
     * the backend's rescale options choose (ck_kstate_spec.rescale), and
     * opens it. What the rebuild did is added to s->work.rebuild. The
     * instance starts a new file history: none of its files is one an
     * earlier checkpoint uploaded. Returns 0 or CK_E* (CK_ECORRUPT: the
     * files do not make the instances they claim); on failure the caller
     * frees s, as after a failed native_restore. */
    CK_MUST_CHECK int (*native_rescale)(ck_kstate *s, uint32_t nsrc, const ck_native_source *src);

    CK_MUST_CHECK int (*view_take)(ck_kstate *s, ck_kstate_view **out);
    /* Canonical entries of key group kg, over every state (a list is one). */
    uint64_t (*view_count)(const ck_kstate_view *v, int kg);
    /* Visits them (in no particular order); stops at fn's first non-zero
     * return, which it returns. */
    CK_MUST_CHECK int (*view_visit)(ck_kstate_view *v, int kg, ck_kentry_fn fn, void *arg);
    void (*view_release)(ck_kstate_view *v);

    /* Optional (NULL: nothing to check): the backend's invariants
     * (invariant.h), reading only: 0 or CK_EINVARIANT. */
    int (*check)(const ck_kstate *s, ck_inv *v);
} ck_kstate_ops;

/* How an instance was rebuilt for a new key-group range (a rescale
 * restore): the paths of state/rocksrescale.h, in its order. */
#define CK_KS_REBUILD_PATHS(X)                                                 \
    X(REUSE, "reuse")   /* one old instance of the same range, as it is */     \
    X(CLIP, "clip")     /* one put in place and clipped, the others copied */  \
    X(INGEST, "ingest") /* those whose files lie in their range imported */    \
    X(COPY, "copy")     /* every key of the range copied into an empty one */

typedef enum ck_ks_rebuild_path {
    CK_KS_REBUILD_NONE = -1,
#define CK_KS_REBUILD_ENUM(id, name) CK_KS_REBUILD_##id,
    CK_KS_REBUILD_PATHS(CK_KS_REBUILD_ENUM)
#undef CK_KS_REBUILD_ENUM
        CK_KS_REBUILD_NPATHS
} ck_ks_rebuild_path;

/* "reuse", "clip", ...; "none" for CK_KS_REBUILD_NONE, "?" out of range. */
const char *ck_ks_rebuild_path_name(int path);

/* What rebuilding instances for new key-group ranges did
 * (ck_kstate_ops.native_rescale), summed over the rebuilds: the counts
 * the cost model charges (ck_kstate_rebuild_cost). */
typedef struct ck_kstate_rebuild {
    uint32_t rebuilds;  /* rescale restores */
    int path;           /* the last one's: CK_KS_REBUILD_* */
    uint32_t opened;    /* instances opened: the initial, temporary and exported ones */
    uint64_t keys_iterated, keys_written, bytes_written; /* by the copies (key + value) */
    uint32_t files_linked, files_deleted, files_imported, ranges_deleted;
    uint64_t bytes_linked, bytes_deleted, bytes_imported;
    uint32_t flushes, compactions; /* the copies' memtable flushes; the compaction after */
    uint64_t flushed, compacted;   /* their bytes */
    uint64_t target_file; /* the instance's file size target (0: none): a state
                           * weighing more has as many more files as its
                           * weight fills at this size */
} ck_kstate_rebuild;

/* The work a backend did on its own store, which the task charges as
 * simulated time (a backend that works in memory leaves it at zero). */
typedef struct ck_kstate_work {
    uint64_t reads, writes;      /* accesses that reached the store */
    uint64_t flushed, compacted; /* bytes written by flushes and compactions */
    uint32_t flushes, compactions;
    ck_kstate_rebuild rebuild;   /* rescale restores (not in the fields above) */
} ck_kstate_work;

/*
 * The cost of a RocksDB backend's flushes and compactions, in flops on a
 * 1 Gflop/s core per byte written (building an SST: encoding,
 * compressing, checksums; compacting: reading, merging and writing every
 * byte again), wherever they run: after the operator's writes
 * (ck_chain_take_background) and in a rescale's rebuild. bench_rescale
 * measures 6.7 and 15 ns per byte with Flink's benchmark values of 128
 * bytes, 4.8 and 7.6 with values of 1 KiB: these lie between.
 */
#define CK_STATE_FLUSH_FLOPS_PER_BYTE 5.0
#define CK_STATE_COMPACT_FLOPS_PER_BYTE 10.0

/*
 * The cost model of a rebuild (engine/kstate.c; docs/ARCHITECTURE.md,
 * "The rebuild's cost model"): the work r counts, in CPU flops on a
 * 1 Gflop/s core (returned) and bytes read and written on the local disk
 * (*disk_bytes). Each constant is a unit cost bench_rescale measured:
 * a phase's wall time over the count it does, RocksDB over the page
 * cache, so the CPU term carries what writing there cost; the disk bytes
 * are what the simulated local disk charges on top: the copies' reads of
 * the old instances, the flushes' writes, the compaction's reads and
 * writes. For a state that weighs more than it holds (ck_op.heavy, at
 * least 1), terms in bytes are scaled by heavy, and terms in files count
 * the files its weight would fill at the instance's target file size
 * (at least as many as there were); terms per key and per instance are
 * not scaled: the keys are real.
 */
#define CK_REBUILD_OPEN_FLOPS 30e6        /* per instance opened (and closed) */
#define CK_REBUILD_KEY_FLOPS 1340.0       /* per key copied: iterated, batched, written */
#define CK_REBUILD_BYTE_FLOPS 4.0         /* per byte copied (key and value) */
#define CK_REBUILD_LINK_FLOPS 60e3        /* per file put in place (a hard link, a copy) */
#define CK_REBUILD_DELETE_FILE_FLOPS 60e3 /* per file deleted whole (as a link: not measured) */
#define CK_REBUILD_IMPORT_FILE_FLOPS 5e6  /* per file checked, exported and imported */
#define CK_REBUILD_RANGE_FLOPS 28e3       /* per range tombstone */

double ck_kstate_rebuild_cost(const ck_kstate_rebuild *r, double heavy, uint64_t *disk_bytes);

/* The counts of rebuilds as a task reports them (wire.h TASK_RUNNING):
 * u32 rebuilds by path (CK_KS_REBUILD_NPATHS of them, reuse first) | u64
 * keys iterated | u64 keys written | u64 bytes written | u32 files linked |
 * u32 files deleted | u32 files imported | u32 ranges deleted. */
#define CK_REBUILD_WIRE (4 * 4 + 3 * 8 + 4 * 4)

/* Writes r's counts, its rebuilds under its path (none: not counted),
 * at p (CK_REBUILD_WIRE bytes). */
void ck_kstate_rebuild_put(uint8_t *p, const ck_kstate_rebuild *r);

/* Adds the counts at p (ck_kstate_rebuild_put's) to r, and its rebuilds
 * by path to paths[CK_KS_REBUILD_NPATHS]. */
void ck_kstate_rebuild_add_wire(ck_kstate_rebuild *r, uint32_t *paths, const uint8_t *p);

/* a - b, field by field (the path: a's): what was done since b. */
ck_kstate_rebuild ck_kstate_rebuild_since(const ck_kstate_rebuild *a, const ck_kstate_rebuild *b);

/* What every backend instance starts with. */
struct ck_kstate {
    const ck_kstate_ops *ops;
    ck_kgr kgr;
    int nstates;
    ck_state_desc states[CK_KS_MAX_STATES];
    ck_kstate_work work;
};

/* The backends, by state.backend.type (config.h). The engine builds the
 * heap backend itself; the platform opens the others
 * (ck_platform_ops.kstate_open): they do I/O. */
enum { CK_BACKEND_HASHMAP = 0, CK_BACKEND_ROCKSDB = 1 };

/* How a backend rebuilds an instance at a rescale (native_rescale):
 * Flink's keys, and chandy's full copy. */
typedef struct ck_kstate_rescale {
    int ingest;       /* state.backend.rocksdb.use-ingest-db-restore-mode */
    int delete_files; /* state.backend.rocksdb.rescaling.use-delete-files-in-range */
    double overlap;   /* state.backend.rocksdb.restore-overlap-fraction-threshold, 0..1 */
    int copy;         /* state.backend.rocksdb.rescaling.full-copy (chandy's) */
} ck_kstate_rescale;

/* What a backend instance is for, as the platform is asked to open one. */
typedef struct ck_kstate_spec {
    int type;              /* CK_BACKEND_* */
    ck_kgr kgr;
    const ck_state_desc *states;
    int nstates;
    int op;                /* the operator (job-wide index) */
    int subtask;
    uint32_t attempt;
    uint64_t write_buffer; /* state.backend.rocksdb.writebuffer.size */
    uint64_t target_file;  /* ...compaction.level.target-file-size-base */
    uint64_t level_base;   /* ...compaction.level.max-size-level-base */
    int max_parallelism;   /* the operator's key groups: [0, max_parallelism) */
    ck_kstate_rescale rescale;
} ck_kstate_spec;

/* 1 when the descriptions are valid (1..CK_KS_MAX_STATES states, each of a
 * known kind and 1..CK_KS_MAX_FIELDS fields) for key groups kgr, not empty. */
int ck_kstate_spec_ok(ck_kgr kgr, const ck_state_desc *d, int n);

/* A backend instance of type `type` for key groups kgr and
 * the n states d[0..n); NULL when out of memory or the states are not
 * valid (1..CK_KS_MAX_STATES, each of 1..CK_KS_MAX_FIELDS fields). */
ck_kstate *ck_kstate_new(int type, ck_kgr kgr, const ck_state_desc *d, int n);

static inline void ck_kstate_free(ck_kstate *s)
{
    if (s)
        s->ops->free(s);
}

CK_MUST_CHECK
static inline int ck_ks_flush(ck_kstate *s)
{
    return s->ops->flush ? s->ops->flush(s) : 0;
}

static inline void ck_ks_locate(const ck_kstate *s, int st, ck_kkey *k)
{
    if (s->ops->locate)
        s->ops->locate(s, st, k);
    else
        k->loc.hash = 0;
}

static inline void ck_ks_prefetch(const ck_kstate *s, int st, const ck_kkey *k)
{
    if (s->ops->prefetch)
        s->ops->prefetch(s, st, k);
}

static inline int64_t *ck_ks_acquire(ck_kstate *s, int st, const ck_kkey *k, int create,
                                     int *created)
{
    return s->ops->acquire(s, st, k, create, created);
}

CK_MUST_CHECK
static inline int ck_ks_release(ck_kstate *s, int st, const ck_kkey *k, int64_t *v, int dirty)
{
    return s->ops->release ? s->ops->release(s, st, k, v, dirty) : 0;
}

static inline int ck_ks_remove(ck_kstate *s, int st, const ck_kkey *k)
{
    return s->ops->remove(s, st, k);
}

/* Checks invariant (1) above and the backend's own (invariant.h): 0 or
 * CK_EINVARIANT. */
CK_MUST_CHECK
int ck_ks_check(const ck_kstate *s, ck_inv *v);

/* Puts canonical entry e (values in host order) into state e->st under
 * key group kg: a restore. The key's Java hash is jhash. Returns 0,
 * CK_ENOMEM, or CK_EPROTO (kg is not the backend's). */
CK_MUST_CHECK
int ck_ks_put_entry(ck_kstate *s, int kg, int32_t jhash, const ck_kentry *e);

#endif
