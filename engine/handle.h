/*
 * handle.h - state handles: the files a subtask's snapshot left in the
 * durable store, as Flink's StreamStateHandle and KeyedStateHandle.
 *
 * A snapshot is a list of handles. The subtask's acknowledgement carries
 * it to the coordinator, the checkpoint's _metadata lists every subtask's,
 * and a subtask deployed to restore that checkpoint is handed the handles
 * it needs: those of its key-group range (rescaling picks them by range).
 *
 * Kinds:
 *   CK_HANDLE_SNAPSHOT  a state file in the canonical format (snapshot.h):
 *                       the subtask's state; keyed state of the key groups
 *                       kgr too, except that of operators
 *                       whose backend wrote native files;
 *   CK_HANDLE_NATIVE    a file of operator `op`'s backend instance (a
 *                       RocksDB SST, MANIFEST, CURRENT or OPTIONS file),
 *                       named `local` in the instance's directory, of key
 *                       groups kgr;
 *   CK_HANDLE_CHANGELOG a segment of operator `op`'s state changelog
 *                       (changelog.h); `local` is "<first>-<records>", its
 *                       sequence numbers;
 *   CK_HANDLE_MATERIAL  operator `op`'s keyed state as last materialized
 *                       under its changelog: a canonical state file of
 *                       that operator alone; `local` is the sequence
 *                       number of the first change it does not hold.
 *
 * Flags:
 *   CK_HANDLE_SHARED    the file is under shared/ and may be referenced by
 *                       several checkpoints (incremental ones): it is
 *                       deleted when no retained checkpoint refers to it
 *                       (Flink's SharedStateRegistry);
 *   CK_HANDLE_REUSED    an earlier checkpoint uploaded it: this one refers
 *                       to it without uploading it again;
 *   CK_HANDLE_SEGMENT   the file is the `bytes` bytes at `offset` of the
 *                       store object `key`, which holds other files of the
 *                       same snapshot beside it (file merging, Flink's
 *                       SegmentFileStateHandle); only with
 *                       CK_HANDLE_SHARED: the object lives while any
 *                       handle refers to it;
 *   CK_HANDLE_INLINE    the file is not in the store: its `bytes` bytes
 *                       travel in `data`, inside the acknowledgement and
 *                       the checkpoint's _metadata (a file smaller than
 *                       state.storage.fs.memory-threshold, Flink's
 *                       ByteStreamStateHandle); `key` is the name it would
 *                       have had, for people. Never with another flag;
 *   CK_HANDLE_OPCOUNTS  a canonical file (CK_HANDLE_SNAPSHOT) that lists
 *                       its operator state (snapshot.h's OPSTATE sections)
 *                       as Flink's OperatorStateHandle does: per
 *                       (operator, state name) its redistribution mode and
 *                       number of entries (`opc`, none when it holds no
 *                       operator state), so that the job manager, which
 *                       reads no state file, can deal it at another
 *                       parallelism (assign.h); allowed with any other flag;
 *   CK_HANDLE_MODELLED  the file stands for more state than it holds: its
 *                       `modelled` bytes (> `bytes`) are what the state
 *                       it holds weighs in production (an operator's
 *                       declared value_size, SCENARIOS.md); the store,
 *                       the network, the local disk and run.json's sizes
 *                       count those, the file's length and checksum stay
 *                       the real ones. Never with CK_HANDLE_INLINE.
 *
 * Wire form (in ACK and DEPLOY bodies and in _metadata), a list:
 *   u32 count | count x (u8 kind | u8 flags | u16 key length | key |
 *                        u64 bytes | u32 crc32c of the file |
 *                        u32 first key group | u32 end key group (one
 *                        past the last: half-open on the wire) |
 *                        u32 operator (CK_HANDLE_NO_OP: none) |
 *                        u8 local name length | local name |
 *                        u64 offset, with CK_HANDLE_SEGMENT only |
 *                        u64 modelled bytes, with CK_HANDLE_MODELLED only |
 *                        with CK_HANDLE_OPCOUNTS only: u16 count | count x
 *                        (u32 operator | u8 mode | u32 entries |
 *                        u8 name length | name) |
 *                        bytes of data, with CK_HANDLE_INLINE only)
 * A key is a store key (ck_wire_key_ok), 1..CK_HANDLE_KEY_MAX bytes. A
 * handle's key groups are a ck_kgr (keygroup.h: inclusive [start, end]),
 * CK_KGR_EMPTY for state that is not keyed; the wire keeps the half-open
 * [start, end + 1) it has always had, converted by ck_handles_put and
 * ck_handles_get alone (an empty range is written start = end). A local
 * name is 1..CK_HANDLE_LOCAL_MAX letters, digits, '.', '-' or '_' for a
 * native file and empty otherwise. An inline file is at most
 * CK_HANDLE_INLINE_MAX bytes. An operator-state count names an operator
 * below CK_HANDLE_NO_OP, a mode 1..3 (snapshot.h's ck_opstate_mode:
 * split-distribute, union, broadcast) and a state name of 1..63 bytes
 * without NUL; no (operator, name) twice; at most CK_HANDLE_MAX_OPCOUNTS.
 */
#ifndef CK_HANDLE_H
#define CK_HANDLE_H

#include "bytes.h"
#include "common.h"
#include "keygroup.h"

enum { CK_HANDLE_SNAPSHOT = 1, CK_HANDLE_NATIVE = 2, CK_HANDLE_CHANGELOG = 3,
       CK_HANDLE_MATERIAL = 4 };
#define CK_HANDLE_KIND_MAX CK_HANDLE_MATERIAL

#define CK_HANDLE_SHARED 1u
#define CK_HANDLE_REUSED 2u
#define CK_HANDLE_SEGMENT 4u
#define CK_HANDLE_INLINE 8u
#define CK_HANDLE_MODELLED 16u
#define CK_HANDLE_OPCOUNTS 32u

#define CK_HANDLE_MAX_OPCOUNTS 512 /* 64 operators x 8 lists (snapshot.h) */
#define CK_HANDLE_STATE_NAME_MAX 64 /* with its terminator, as snapshot.h's names */

/* One (operator, state name) of a canonical file's operator state. */
typedef struct ck_handle_opcount {
    uint32_t op;     /* the operator's index in the job that took it */
    uint8_t mode;    /* 1 split-distribute, 2 union, 3 broadcast */
    uint32_t entries;
    char name[CK_HANDLE_STATE_NAME_MAX];
} ck_handle_opcount;

#define CK_HANDLE_INLINE_MAX (1u << 20) /* Flink's most for the memory threshold */

#define CK_HANDLE_KEY_MAX 255
#define CK_HANDLE_LOCAL_MAX 63
#define CK_HANDLE_NO_OP UINT32_MAX

typedef struct ck_handle {
    char *key; /* malloc'd, NUL-terminated */
    uint64_t bytes;
    uint64_t modelled; /* what its state weighs (CK_HANDLE_MODELLED); else = bytes */
    uint64_t offset; /* CK_HANDLE_SEGMENT: where the file starts in the object; else 0 */
    uint32_t crc;
    uint8_t kind, flags;
    ck_kgr kgr;                           /* its key groups (keygroup.h) */
    uint32_t op;                          /* native: the operator; else CK_HANDLE_NO_OP */
    char local[CK_HANDLE_LOCAL_MAX + 1];  /* native: the file's name in the instance */
    uint8_t *data;                        /* CK_HANDLE_INLINE: the file (malloc'd); else NULL */
    ck_handle_opcount *opc; /* CK_HANDLE_OPCOUNTS: its operator state (malloc'd) */
    uint32_t nopc;
} ck_handle;

typedef struct ck_handles {
    ck_handle *v;
    uint32_t n, cap;
} ck_handles;

/* Appends a handle of the subtask's state (the key is copied). 0,
 * CK_EINVAL (a key that is empty, too long or not a store key; an unknown
 * kind or flag, or CK_HANDLE_SEGMENT: ck_handles_segment_last makes a
 * segment; a range that starts below 0 or ends more than one before it
 * starts) or CK_ENOMEM. */
CK_MUST_CHECK
int ck_handles_add(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
                   uint32_t crc, ck_kgr kgr);
/* Appends a handle of operator op's state (NATIVE, CHANGELOG, MATERIAL):
 * as ck_handles_add, and CK_EINVAL for a local name that is not one. */
CK_MUST_CHECK
int ck_handles_add_op(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
                      uint32_t crc, ck_kgr kgr, uint32_t op,
                      const char *local);
/* ck_handles_add_op of a NATIVE file. */
CK_MUST_CHECK
int ck_handles_add_native(ck_handles *hs, uint32_t flags, const char *key, uint64_t bytes,
                          uint32_t crc, ck_kgr kgr, uint32_t op,
                          const char *local);
/* Appends a copy of h with flags `flags` (its offset kept when they hold
 * CK_HANDLE_SEGMENT; what it weighs, CK_HANDLE_MODELLED, kept unless
 * CK_HANDLE_INLINE): as ck_handles_add_op. */
CK_MUST_CHECK
int ck_handles_add_like(ck_handles *hs, const ck_handle *h, uint32_t flags);
/* Makes the last handle of hs the segment at `offset` of its key's
 * object (CK_HANDLE_SEGMENT). CK_EINVAL when hs is empty, the handle is
 * not CK_HANDLE_SHARED or the segment would end past 2^64. */
CK_MUST_CHECK
int ck_handles_segment_last(ck_handles *hs, uint64_t offset);
/* Makes the last handle of hs an inline one (CK_HANDLE_INLINE) holding
 * data, which it takes over, as its `bytes`: its file is not stored.
 * CK_EINVAL (data freed) when hs is empty, the last handle has a flag or
 * len is not its bytes or is over CK_HANDLE_INLINE_MAX. */
CK_MUST_CHECK
int ck_handles_inline_last(ck_handles *hs, uint8_t *data, size_t len);
/* Makes the last handle of hs weigh `modelled` bytes (CK_HANDLE_MODELLED
 * when more than its bytes, none when equal). CK_EINVAL when hs is empty,
 * the handle is inline or modelled is below its bytes. */
CK_MUST_CHECK
int ck_handles_model_last(ck_handles *hs, uint64_t modelled);
/* Makes the last handle of hs, a canonical file, list its operator state:
 * n counts v (copied; none: it holds none), CK_HANDLE_OPCOUNTS. 0,
 * CK_EINVAL (hs empty, not a canonical file, a count that is not one:
 * above), CK_ENOMEM. */
CK_MUST_CHECK
int ck_handles_opcounts_last(ck_handles *hs, const ck_handle_opcount *v, uint32_t n);
/* 1 when h's file is an object of the store (not CK_HANDLE_INLINE). */
int ck_handle_stored(const ck_handle *h);
/* 1 when s can name a native file: 1..CK_HANDLE_LOCAL_MAX of [A-Za-z0-9._-],
 * not "." or "..". */
int ck_handle_local_ok(const char *s);
/* 1 when h's crc is that of its whole file, as a native file's is (a
 * RocksDB file, or one in a materialization: its local name is
 * "<seq>_<file>"); 0 when its file ends with its own crc32c of the bytes
 * before it, as a canonical file or a changelog segment does. */
int ck_handle_crc_whole(const ck_handle *h);
/* What a file of kind CK_HANDLE_* is, for people: "state file", "RocksDB
 * file", "changelog segment", "materialization" ("file" if unknown). */
const char *ck_handle_kind_name(int kind);
/* Bytes of the files this checkpoint uploaded itself (not CK_HANDLE_REUSED). */
uint64_t ck_handles_bytes_new(const ck_handles *hs);
/* Bytes of hs's files held inline (CK_HANDLE_INLINE). */
uint64_t ck_handles_bytes_inline(const ck_handles *hs);
/* Drops hs's handles from the n-th on (their keys and data freed). */
void ck_handles_truncate(ck_handles *hs, uint32_t n);
/* dst (empty) becomes a copy of src. 0 or CK_ENOMEM (dst left empty). */
CK_MUST_CHECK
int ck_handles_copy(ck_handles *dst, const ck_handles *src);
void ck_handles_free(ck_handles *hs);

/* Sum of the files' sizes. */
uint64_t ck_handles_bytes(const ck_handles *hs);
/* Sums of what the files weigh (`modelled`: their bytes unless
 * CK_HANDLE_MODELLED): of all, and of those not CK_HANDLE_REUSED. */
uint64_t ck_handles_modelled(const ck_handles *hs);
uint64_t ck_handles_modelled_new(const ck_handles *hs);

/* Appends the wire form to w. */
void ck_handles_put(ck_wbuf *w, const ck_handles *hs);
/* As ck_handles_put, without the operator-state counts (CK_HANDLE_OPCOUNTS
 * cleared): for a restoring subtask, which reads its operator state from
 * its files (snapshot.h) and needs them not. */
void ck_handles_put_bare(ck_wbuf *w, const ck_handles *hs);
/* Reads a list into hs (empty) from r. 0, CK_ECORRUPT (with hs emptied,
 * *why saying what is wrong) or CK_ENOMEM. Handles whose key group range
 * ends past max_kg are corrupt. */
CK_MUST_CHECK
int ck_handles_get(ck_rbuf *r, ck_handles *hs, uint32_t max_kg, const char **why);

#endif
