/*
 * changelog.h - the state changelog (Flink's FLIP-158, the DSTL): every
 * change to an operator's keyed state, appended as it happens, cut into
 * segments that are uploaded in batches; a restore replays them over the
 * state last materialized.
 *
 * A changelog backend (ck_clog_kstate_new) wraps another backend (the heap
 * or RocksDB): reads go to it, and every write goes to it and to the log.
 * The wrapped backend is materialized periodically (a snapshot of its own,
 * in either format), and a checkpoint is then the last materialization plus
 * the segments since it.
 *
 * Record: u8 change | u8 state | u16 0 | u32 key group | u64 namespace |
 *         u32 key length | key | [MAP: u32 user key length | user key] |
 *         [PUT, ADD: fields x u64 little-endian]
 *   change: CK_CLOG_PUT (a value or map entry, whole), CK_CLOG_REMOVE (a
 *   value, map entry, or list, whole), CK_CLOG_ADD (one list element)
 * Segment file: u32 magic "CKL1" | u32 operator | u64 sequence number of
 *         its first record | u32 records | u32 states | per state: u32
 *         kind | u32 fields | records | u32 CRC-32C of all before
 *
 * Sequence numbers count records from 0 over the log's life: a segment
 * holds [first, first + records), and consecutive segments meet.
 *
 * Invariants (ck_clog_check):
 *   (1) records are in the order of the changes (by construction);
 *   (2) what is buffered and not yet cut starts at `cut_seq`: buf holds
 *       exactly nbuf whole records of the log's states, and no more bytes
 *       than were ever appended;
 *   (3) a cut segment is never changed (it is the caller's once cut);
 *   (4) the log has 0..CK_KS_MAX_STATES states.
 * ck_clog_check reads what is buffered, O(bytes since the last cut), up
 * to CK_CLOG_CHECK_BYTES; past that, (2) only as far as the counts go.
 */
#ifndef CK_CHANGELOG_H
#define CK_CHANGELOG_H

#include "bytes.h"
#include "kstate.h"

#define CK_CLOG_MAGIC 0x314c4b43u /* "CKL1" */

enum { CK_CLOG_PUT = 1, CK_CLOG_REMOVE = 2, CK_CLOG_ADD = 3 };

typedef struct ck_clog {
    int op;                /* the operator (job-wide index) */
    int nstates;
    ck_state_desc states[CK_KS_MAX_STATES];
    ck_wbuf buf;           /* records since the last cut */
    uint64_t cut_seq;      /* the sequence number of buf's first record */
    uint32_t nbuf;         /* records in buf */
    uint64_t appended;     /* bytes appended over the log's life */
} ck_clog;

void ck_clog_init(ck_clog *l, int op, const ck_state_desc *d, int n);
void ck_clog_free(ck_clog *l);

/* Appends one change. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_clog_append(ck_clog *l, int change, int st, const ck_kkey *k, const int64_t *v);

/* Cuts what is buffered into a segment file (malloc'd): *first is its
 * first record's sequence number, *n its records (0: nothing buffered, and
 * no file). Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_clog_cut(ck_clog *l, uint8_t **out, size_t *len, uint64_t *first, uint32_t *n);

/* Replays a segment file into ks (the operator's backend, of max
 * parallelism maxp): every change whose key group is ks's, in order.
 * Returns 0, CK_ECHECKSUM (the bytes are not those written: a bad
 * checksum), CK_ECORRUPT (*why says what: a bad header, record, a key in
 * the wrong key group, states that are not ks's), CK_ENOMEM; *why is set
 * for both of the first two. */
CK_MUST_CHECK
int ck_clog_replay(const uint8_t *p, size_t len, ck_kstate *ks, int maxp, uint64_t *first,
                   uint32_t *n, const char **why);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
#define CK_CLOG_CHECK_BYTES (1u << 20)
CK_MUST_CHECK
int ck_clog_check(const ck_clog *l, ck_inv *v);

/* A changelog backend over `inner` (taken: freed with it), logging into l
 * (borrowed: it outlives the backend). NULL when out of memory. */
ck_kstate *ck_clog_kstate_new(ck_kstate *inner, ck_clog *l);

/* The backend a changelog backend wraps (its materializations). */
ck_kstate *ck_clog_kstate_inner(ck_kstate *s);

#endif
