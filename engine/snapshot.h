/*
 * snapshot.h - the state of one subtask at a checkpoint: what the
 * synchronous phase captures (ck_capture) and the file the asynchronous
 * phase writes (ck_snap_encode) and a restore reads back (ck_snap_decode).
 *
 * The file format is canonical: keyed state is written per key group as
 * (state, key, namespace[, user key], value) entries, independent of the
 * state backend (kstate.h), so the same file serves as a checkpoint and as
 * a savepoint, restores into any backend, and can be split by key group on
 * restore. All integers little-endian, values' fields too:
 *
 *   HEAD  : u32 magic "CKS1" | u32 version (5; 4 and 3 are still read) |
 *           u64 checkpoint id | u32 vertex | u32 subtask | u32 parallelism |
 *           u64 head length (HEAD's bytes, its CRC included) |
 *           u64 file length | u32 sections | sections... |
 *           INDEX: u32 first key group | u32 n | (n + 1) x u64 where key
 *           group first + g's block starts, from the file's start (the last:
 *           where the blocks end) | n x u32 each block's CRC-32C |
 *           u32 CRC-32C of HEAD's bytes before it
 *   BLOCKS: per key group first .. first + n - 1, its block: empty when
 *           it has neither entries nor timers, else per KEYED section (in
 *           their order): u32 entries | entries | u32 timers |
 *           per timer: u64 time | u64 its place in the subtask's firing
 *           order (equal times fire in it) | u64 namespace | u32 key
 *           length | key
 *   u32 CRC-32C of every byte before it (the whole file: its handle's)
 *
 * Flink's KeyGroupsStateHandle: a restore that takes key groups [a, b]
 * of the file reads HEAD, then the blocks of a .. b alone (one range),
 * each checked by its CRC, as the whole file is by the last one. The
 * index is in the file, read with a first small ranged get (HEAD's length
 * is at a fixed place of it), not in the handle: a handle travels in
 * every ACK, DEPLOY and _metadata, and would grow by 12 bytes a key group.
 * Versions 3 and 4 had no index: HEAD's fixed part without the two
 * lengths, the entries and timers in their KEYED section (below), and the
 * whole-file CRC alone.
 *
 *   section: u32 type | u32 operator index | u64 body length | body
 *   KEYED  : u32 operator kind | u32 max parallelism | u32 flags |
 *            u32 states | per state: u32 kind | u32 fields | u32 name length | name
 *            (version 5 ends here: entries and timers in BLOCKS)
 *            u32 groups | per group: u32 key group | u32 entries |
 *                 per entry: u32 state | u32 key length | u64 namespace | key |
 *                     [MAP state: u32 user key length | user key] |
 *                     [LIST state: u32 elements] | elements x fields x u64
 *            u32 timers | per timer: u64 time | u32 key group |
 *                 u64 namespace | u32 key length | key
 *            flags: CK_SNAP_NATIVE: the entries are in other files of
 *            the checkpoint, not here (groups is 0): the operator's
 *            native files (an incremental checkpoint's handles of kind
 *            CK_HANDLE_NATIVE) or its materialization and changelog
 *            (CK_HANDLE_MATERIAL, CK_HANDLE_CHANGELOG)
 *   OPSTATE: one operator's operator state (non-keyed, Flink's
 *            OperatorStateHandle): u32 lists | per list: u32 mode |
 *            u32 name length | name | u32 entries | u64 bytes |
 *            entries: per entry u32 length | bytes (opaque to the file).
 *            mode: CK_OPSTATE_SPLIT (Flink's getListState: on a rescale
 *            the entries are dealt out in contiguous chunks),
 *            CK_OPSTATE_UNION (getUnionListState: every subtask gets
 *            every entry), CK_OPSTATE_BROADCAST (broadcast state: every
 *            subtask holds the same copy). A source's partitions are its
 *            list CK_SOURCE_SPLITS (split-distribute, as a FLIP-27
 *            source's splits: u32 partition | u64 offset | u64 max ts) and
 *            CK_SOURCE_KNOWN (broadcast: u32 the partitions its
 *            enumerator knew; a partition past them is new, and goes by
 *            the owner formula)
 *   SOURCE : (version 3 only; now the source's OPSTATE section)
 *            u32 partitions | per partition: u32 id | u64 offset | u64 max ts
 *   SINK   : u64 open transaction | u32 pending | per pending: u64 transaction
 *   FINISHED: (empty) the subtask had finished before the checkpoint: it has
 *            no state, and a restore keeps it finished (Flink's
 *            FinishedOperatorSubtaskState, FLIP-147); such a file has no
 *            other section, and the job manager writes it
 *
 * A decoded snapshot points into the buffer it was decoded from.
 */
#ifndef CK_SNAPSHOT_H
#define CK_SNAPSHOT_H

#include "graph.h"
#include "handle.h"
#include "kstate.h"
#include "timers.h"

#define CK_SNAP_MAGIC 0x31534b43u /* "CKS1" */
#define CK_SNAP_VERSION 5
#define CK_SNAP_VERSION_MIN 3 /* the oldest still read */
#define CK_SNAP_PREFIX 48     /* a version 5 file's fixed header: its head's length at 28 */

#define CK_SNAP_NATIVE 1u

enum { CK_SEC_KEYED = 1, CK_SEC_SOURCE = 2, CK_SEC_SINK = 3, CK_SEC_FINISHED = 4,
       CK_SEC_CHANNELS = 5, CK_SEC_OPSTATE = 6 };

/* Operator state's redistribution modes (Flink's OperatorStateHandle.Mode). */
typedef enum ck_opstate_mode {
    CK_OPSTATE_SPLIT = 1,     /* list state: contiguous chunks on a rescale */
    CK_OPSTATE_UNION = 2,     /* union list state: every entry to every subtask */
    CK_OPSTATE_BROADCAST = 3, /* broadcast state: new subtask j takes old j % oldP's */
} ck_opstate_mode;

#define CK_OPSTATE_MAX_LISTS 8
#define CK_OPSTATE_NAME_MAX 64     /* with its terminator */
#define CK_OPSTATE_MAX_ENTRY (1u << 26)
/* The lists a source keeps (see OPSTATE above). */
#define CK_SOURCE_SPLITS "source-splits"
#define CK_SOURCE_KNOWN "source-known-partitions"
#define CK_SOURCE_SPLIT_BYTES 20

/* One named list of operator state: n entries laid out as in the file
 * (u32 length | bytes each). A capture owns data; a decoded snapshot's
 * points into the file image. */
typedef struct ck_oplist {
    char name[CK_OPSTATE_NAME_MAX];
    ck_opstate_mode mode;
    uint32_t n;
    uint8_t *data;
    size_t len;
} ck_oplist;

/* The operator state of one operator (job operator index op). */
typedef struct ck_opstate {
    int op;
    int nlists;
    ck_oplist lists[CK_OPSTATE_MAX_LISTS];
} ck_opstate;

/* Appends an entry to list l (a capture's). Returns 0, CK_ETOOBIG, CK_ENOMEM. */
CK_MUST_CHECK
int ck_oplist_add(ck_oplist *l, const void *e, uint32_t len);

/* The entry at *pos of list l (start at 0): returns 1 with *e, *len set
 * and *pos moved past it, or 0 at the end. The list is well formed (a
 * capture's, or a decoded one: checked by ck_snap_decode). */
int ck_oplist_next(const ck_oplist *l, size_t *pos, const uint8_t **e, uint32_t *len);

/* List `name` of operator state o, or NULL. */
const ck_oplist *ck_opstate_list(const ck_opstate *o, const char *name);

/* Adds list `name` of mode m to o (a capture's); NULL when o has
 * CK_OPSTATE_MAX_LISTS already. */
ck_oplist *ck_opstate_add_list(ck_opstate *o, const char *name, ck_opstate_mode m);

#define CK_SNAP_MAX_PENDING 64

/* ---- captured (synchronous phase) --------------------------------------- */

typedef struct ck_keyed_capture {
    int op;                /* operator index in the job */
    ck_op_kind kind;
    int max_parallelism;
    ck_kgr kgr;  /* the key groups its backend holds */
    int nstates;
    ck_state_desc states[CK_KS_MAX_STATES];
    const ck_kstate_ops *ops;
    ck_kstate_view *view;  /* the backend's consistent view, or NULL: */
    ck_kstate *ks;         /* native: the backend instance, */
    ck_native_snap native; /* and its native snapshot (the file holds no entries) */
    int is_native;
    int elsewhere;         /* no entries: its changelog and materialization hold them */
    ck_timer *timers;      /* copies; keys owned */
    size_t ntimers;
} ck_keyed_capture;

typedef struct ck_source_capture {
    int op;
    int known;  /* partitions the enumerator knew (-1: not recorded, version 3) */
    int nparts;
    int *parts;
    int64_t *offsets, *maxts;
} ck_source_capture;

typedef struct ck_sink_capture {
    int op;
    uint64_t open_txn;                       /* the transaction that follows */
    int npending;
    uint64_t pending[CK_SNAP_MAX_PENDING];   /* pre-committed, awaiting commit */
} ck_sink_capture;

/* Channel state of an unaligned checkpoint: the bytes of serialized
 * elements a barrier overtook on one channel, replayed on restore before
 * any new data (Flink's InputChannelStateHandle and
 * ResultSubpartitionStateHandle). */
typedef struct ck_chan_state {
    uint8_t out;   /* 1: an output subpartition's (sent again), 0: an input channel's (read again) */
    uint16_t edge;
    uint32_t peer; /* the subtask at the other end of the channel */
    uint8_t *data; /* a capture owns it; a decoded snapshot's points into the file image */
    size_t len;
} ck_chan_state;

#define CK_SNAP_MAX_CHANS (1u << 20)

typedef struct ck_capture {
    uint64_t checkpoint_id;
    int vertex, subtask, parallelism;
    int nkeyed, nsinks, has_source;
    int finished;          /* the subtask had finished: no other section */
    ck_keyed_capture keyed[CK_MAX_OPS];
    ck_sink_capture sinks[CK_MAX_OPS];
    ck_source_capture source;
    int nchans;
    ck_chan_state *chans;  /* malloc'd, data owned */
    int nopstates;
    ck_opstate *opstates;  /* malloc'd (CK_MAX_OPS), lists' data owned; not the source's */
} ck_capture;

/* The operator state slot of job operator op in a capture (allocated on
 * first use). NULL: CK_ENOMEM. */
ck_opstate *ck_capture_opstate(ck_capture *c, int op);

/* Releases views and copies held by a capture. */
void ck_capture_free(ck_capture *c);

/* Encodes a capture into a malloc'd file image. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_snap_encode(const ck_capture *c, uint8_t **out, size_t *len);

/* The operator state ck_snap_encode writes of capture c (its OPSTATE
 * sections, a source's lists included), as its canonical handle lists it
 * (handle.h, CK_HANDLE_OPCOUNTS): per (operator, list) its mode and
 * number of entries, in the file's order, into out (room for max);
 * returns how many, or CK_ETOOBIG past max. None for a finished subtask's
 * capture (it writes no other section). */
int ck_capture_opcounts(const ck_capture *c, ck_handle_opcount *out, int max);

/* ---- decoded (restore) ---------------------------------------------------- */

typedef struct ck_snap_entry {
    int st; /* the state's index */
    const char *key;
    uint32_t klen;
    int kg;
    int64_t ns;
    const uint8_t *ukey; /* MAP state: the user key */
    uint32_t uklen;
    uint32_t count;       /* LIST state: its elements; otherwise 1 */
    const uint8_t *value; /* count x the state's fields x 8 bytes, little-endian */
} ck_snap_entry;

typedef struct ck_snap_state {
    ck_state_kind kind;
    uint32_t nfields;
    const char *name; /* in the file image, not terminated */
    uint32_t name_len;
} ck_snap_state;

typedef struct ck_snap_keyed {
    int op;
    ck_op_kind kind;
    int max_parallelism;
    int nstates;
    int native; /* CK_SNAP_NATIVE: its entries are in native files */
    ck_snap_state states[CK_KS_MAX_STATES];
    size_t nentries, ntimers;
    ck_snap_entry *entries;
    ck_timer *timers; /* keys point into the file image */
} ck_snap_keyed;

typedef struct ck_snapshot {
    uint64_t checkpoint_id;
    int vertex, subtask, parallelism;
    int nkeyed, nsinks, has_source;
    int finished;             /* a finished subtask's: nothing else */
    ck_snap_keyed keyed[CK_MAX_OPS];
    ck_sink_capture sinks[CK_MAX_OPS];
    ck_source_capture source; /* arrays owned by the snapshot */
    int nchans;
    ck_chan_state *chans;     /* malloc'd; data in the file image */
    int nopstates;
    ck_opstate *opstates;     /* malloc'd; lists' data in the file image; a
                               * source's lists too (also decoded into source) */
    /* version 5: the key-group index (ix_n 0: none, or an older file) */
    uint64_t head_len, file_len;
    int ix_first, ix_n;       /* the key groups ix_first .. ix_first + ix_n - 1 */
    uint64_t *ix_off;         /* ix_n + 1: where each one's block starts in the file */
    uint32_t *ix_crc;         /* ix_n: each block's CRC-32C */
} ck_snapshot;

/* The operator state of job operator op in a decoded snapshot, or NULL. */
const ck_opstate *ck_snap_opstate(const ck_snapshot *s, int op);

/*
 * Decodes and checks a file image: structure, every length against the
 * bytes present, and the CRC. Returns 0, CK_ECHECKSUM (the bytes are not
 * what was written), CK_ECORRUPT (a well-checksummed file that does not
 * parse), CK_ENOMEM. On error *why says where.
 */
CK_MUST_CHECK
int ck_snap_decode(const uint8_t *p, size_t len, ck_snapshot *s, const char **why);
void ck_snapshot_free(ck_snapshot *s);

/*
 * Reading a version 5 file by key group (a restore that takes some of
 * its key groups: a ranged get of its head, then one of the blocks of
 * its key groups).
 *
 * ck_snap_head_len: from the file's first len bytes (at least
 * CK_SNAP_PREFIX), its head's length into *head: 1; 0: an older version
 * (no index: read it whole); CK_ECHECKSUM (too short), CK_ECORRUPT (not
 * a snapshot).
 *
 * ck_snap_decode_head: decodes the head from the file's first len bytes
 * (at least its head): every section but the keyed entries and timers,
 * and the index; the head's CRC checked. 0, CK_ECHECKSUM, CK_ECORRUPT,
 * CK_ENOMEM.
 *
 * ck_snap_range: the bytes of the file (*at, *len) that hold the blocks
 * of key groups want (len 0: none of them in the file).
 *
 * ck_snap_decode_range: decodes the blocks of key groups want from p, the
 * len bytes of the file ck_snap_range gave, into s (entries and timers
 * point into p): each block's CRC checked against the index. 0,
 * CK_ECHECKSUM (short, or a block not what was written), CK_ECORRUPT,
 * CK_ENOMEM; s is unchanged on error.
 */
int ck_snap_head_len(const uint8_t *p, size_t len, uint64_t *head);
CK_MUST_CHECK
int ck_snap_decode_head(const uint8_t *p, size_t len, ck_snapshot *s, const char **why);
void ck_snap_range(const ck_snapshot *s, ck_kgr want, uint64_t *at, uint64_t *len);
CK_MUST_CHECK
int ck_snap_decode_range(ck_snapshot *s, ck_kgr want, const uint8_t *p, size_t len,
                         const char **why);

/* Puts decoded entry en of keyed section k into backend ks (its key's Java
 * hash jhash), values converted from little-endian: a restore. Returns 0,
 * CK_ENOMEM, CK_EPROTO (a key group ks does not hold). */
CK_MUST_CHECK
int ck_snap_put_entry(ck_kstate *ks, const ck_snap_keyed *k, const ck_snap_entry *en,
                      int32_t jhash);

#endif
