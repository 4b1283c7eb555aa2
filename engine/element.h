/*
 * element.h - stream elements (records, watermarks, end of partition) and
 * their byte encoding in network buffers.
 *
 * An encoded element is
 *
 *   u32 len | u8 tag | body (len - 1 bytes)
 *
 * and may span any number of buffers: the writer cuts it wherever a buffer
 * ends, the reader (ck_elem_reader) puts the pieces back together. Record
 * body:
 *
 *   i64 ts (event time, ms) | i64 value | i64 ingest (ns) | u64 provenance |
 *   u16 key length | u32 payload length | i32 key hash | key bytes |
 *   payload bytes
 *
 * (CK_REC_AT_* name the offsets of the fixed fields.) The provenance says
 * which input record caused this one, so that the output check can tell
 * a lost record from a duplicated one (verify.h):
 *
 *   bits 63..40  the source partition the input record was read from
 *   bits 39..0   its offset in that partition
 *
 * set by the source (ck_prov_of) and passed on unchanged by map, filter and
 * aggregate (an aggregate's update is caused by the record it adds). A
 * window's result is caused by every record of its window: its provenance
 * is CK_PROV_WINDOW (all ones, a partition no topic has), and the window is
 * named by the result's key and event time (the window's last millisecond).
 *
 * The key hash is the key's Java String.hashCode (keygroup.h): the sender
 * that partitions by key computes it anyway, and the keyed operator that
 * receives the record needs it again for the key group and its state, so
 * it travels with the record instead of being computed twice. A decoded
 * record trusts it: a wrong one can only come from a corrupt frame, and
 * lands the key in a key group that is not this subtask's (an error) or
 * in the wrong one of its own.
 *
 * Watermark body: i64 watermark. Barrier body: u64 checkpoint id |
 * i64 trigger time (ns) | u32 flags.
 *
 * A decoded record points into the buffer it came from (or into the
 * reader's spill area when it spanned buffers): it stays valid until the
 * next call on the reader.
 */
#ifndef CK_ELEMENT_H
#define CK_ELEMENT_H

#include "common.h"
#include "error.h"
#include "keygroup.h"

typedef enum ck_elem_tag {
    CK_EL_RECORD = 1,
    CK_EL_WATERMARK = 2,
    CK_EL_END_OF_PARTITION = 3,
    CK_EL_BARRIER = 4,
    CK_EL_CANCEL = 5, /* checkpoint u.barrier.id was declined upstream (Flink's
                       * CancelCheckpointMarker); encoded as a barrier */
    CK_EL_TAG_MAX = 5
} ck_elem_tag;

/* Barrier flags. */
#define CK_BARRIER_SAVEPOINT 1u
#define CK_BARRIER_STOP 2u /* a stop-with-savepoint: sources pause after it */
#define CK_BARRIER_UNALIGNED 8u /* it overtakes in-flight data where the edge allows */
#define CK_BARRIER_TIMEOUTABLE 16u /* aligned, unaligned once the aligned-checkpoint
                                    * timeout has passed since its start (ts) */
#define CK_BARRIER_FULL 32u /* the snapshot refers to no earlier checkpoint's files */
/* Not a checkpoint's: a producer restored at another parallelism sent the
 * channel state it restored before it (gate.h ck_gate_expect_recovered) */
#define CK_BARRIER_RECOVERED 64u

#define CK_ELEM_PREFIX 5       /* u32 len + u8 tag */
#define CK_REC_FIXED 42        /* fixed part of a record body */
#define CK_REC_MAX_KEY 65535u
#define CK_REC_MAX_PAYLOAD (1u << 24)

/* Offsets of the fixed fields in a record body. */
enum {
    CK_REC_AT_TS = 0,
    CK_REC_AT_VALUE = 8,
    CK_REC_AT_INGEST = 16,
    CK_REC_AT_PROV = 24,
    CK_REC_AT_KLEN = 32,
    CK_REC_AT_PLEN = 34,
    CK_REC_AT_JHASH = 38,
};

/* Provenance (see above). Partitions fit in 24 bits (a scenario has at most
 * 100 000), offsets in 40 (10^12 records). */
#define CK_PROV_OFFSET_BITS 40
#define CK_PROV_WINDOW UINT64_MAX

/* The provenance of the record at offset of a source partition. */
static inline uint64_t ck_prov_of(int partition, int64_t offset)
{
    return (uint64_t)partition << CK_PROV_OFFSET_BITS | (uint64_t)offset;
}

typedef struct ck_rec {
    int64_t ts;     /* event time in ms */
    int64_t value;  /* the number that aggregates add up */
    int64_t ingest; /* platform time (ns) the record entered the source log */
    uint64_t prov;  /* provenance: the input record that caused it (above) */
    const char *key;
    const uint8_t *payload;
    uint32_t klen;
    uint32_t plen;
    int32_t jhash;  /* the key's Java hash, when hashed */
    uint32_t hashed;
} ck_rec;

/* The key's Java hash: carried, or computed. */
static inline int32_t ck_rec_jhash(const ck_rec *r)
{
    return r->hashed ? r->jhash : ck_kg_java_hash(r->key, r->klen);
}

typedef struct ck_barrier {
    uint64_t id;
    int64_t ts;
    uint32_t flags;
} ck_barrier;

typedef struct ck_elem {
    int tag;
    union {
        ck_rec rec;
        int64_t wm;
        ck_barrier barrier;
    } u;
} ck_elem;

/* Copies n bytes; keys and payloads are mostly a few bytes, for which a
 * call to memcpy costs more than the copy. */
static inline void ck_copy_small(uint8_t *dst, const void *src, size_t n)
{
    const uint8_t *s = (const uint8_t *)src;
    if (n >= 8 && n <= 16) {
        memcpy(dst, s, 8); /* two overlapping words */
        memcpy(dst + n - 8, s + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(dst, s, 4);
        memcpy(dst + n - 4, s + n - 4, 4);
    } else if (n > 16) {
        memcpy(dst, s, n);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = s[i];
    }
}

/* Encoded size of an element, prefix included. */
static inline size_t ck_elem_size(const ck_elem *e)
{
    switch (e->tag) {
    case CK_EL_RECORD:
        return CK_ELEM_PREFIX + CK_REC_FIXED + e->u.rec.klen + e->u.rec.plen;
    case CK_EL_WATERMARK:
        return CK_ELEM_PREFIX + 8;
    case CK_EL_BARRIER:
    case CK_EL_CANCEL:
        return CK_ELEM_PREFIX + 20;
    default:
        return CK_ELEM_PREFIX;
    }
}

/* Encodes e, of encoded size n (ck_elem_size), into dst[0..n). Inline: it
 * is the per-record cost of every network exchange and every sink. */
static inline void ck_elem_encode_n(uint8_t *dst, const ck_elem *e, size_t n)
{
    ck_put_u32(dst, (uint32_t)(n - 4));
    dst[4] = (uint8_t)e->tag;
    uint8_t *p = dst + CK_ELEM_PREFIX;
    if (e->tag == CK_EL_RECORD) {
        const ck_rec *r = &e->u.rec;
        ck_put_u64(p + CK_REC_AT_TS, (uint64_t)r->ts);
        ck_put_u64(p + CK_REC_AT_VALUE, (uint64_t)r->value);
        ck_put_u64(p + CK_REC_AT_INGEST, (uint64_t)r->ingest);
        ck_put_u64(p + CK_REC_AT_PROV, r->prov);
        ck_put_u16(p + CK_REC_AT_KLEN, (uint16_t)r->klen);
        ck_put_u32(p + CK_REC_AT_PLEN, r->plen);
        ck_put_u32(p + CK_REC_AT_JHASH, (uint32_t)ck_rec_jhash(r));
        if (r->klen)
            ck_copy_small(p + CK_REC_FIXED, r->key, r->klen);
        if (r->plen)
            ck_copy_small(p + CK_REC_FIXED + r->klen, r->payload, r->plen);
    } else if (e->tag == CK_EL_WATERMARK) {
        ck_put_u64(p, (uint64_t)e->u.wm);
    } else if (e->tag == CK_EL_BARRIER || e->tag == CK_EL_CANCEL) {
        ck_put_u64(p, e->u.barrier.id);
        ck_put_u64(p + 8, (uint64_t)e->u.barrier.ts);
        ck_put_u32(p + 16, e->u.barrier.flags);
    }
}

/* Encoded size of a record element whose payload is left out when plen is 0. */
static inline size_t ck_rec_size(const ck_rec *r, uint32_t plen)
{
    return CK_ELEM_PREFIX + CK_REC_FIXED + r->klen + plen;
}

/* Encodes record r as an element of n = ck_rec_size(r, plen) bytes, with its
 * first plen payload bytes (0 drops the payload). */
static inline void ck_rec_encode(uint8_t *dst, const ck_rec *r, uint32_t plen, size_t n)
{
    ck_put_u32(dst, (uint32_t)(n - 4));
    dst[4] = CK_EL_RECORD;
    uint8_t *p = dst + CK_ELEM_PREFIX;
    ck_put_u64(p + CK_REC_AT_TS, (uint64_t)r->ts);
    ck_put_u64(p + CK_REC_AT_VALUE, (uint64_t)r->value);
    ck_put_u64(p + CK_REC_AT_INGEST, (uint64_t)r->ingest);
    ck_put_u64(p + CK_REC_AT_PROV, r->prov);
    ck_put_u16(p + CK_REC_AT_KLEN, (uint16_t)r->klen);
    ck_put_u32(p + CK_REC_AT_PLEN, plen);
    ck_put_u32(p + CK_REC_AT_JHASH, (uint32_t)ck_rec_jhash(r));
    if (r->klen)
        ck_copy_small(p + CK_REC_FIXED, r->key, r->klen);
    if (plen)
        ck_copy_small(p + CK_REC_FIXED + r->klen, r->payload, plen);
}

/* Encodes e into dst, which has ck_elem_size(e) bytes. */
static inline void ck_elem_encode(uint8_t *dst, const ck_elem *e)
{
    ck_elem_encode_n(dst, e, ck_elem_size(e));
}

/*
 * Decodes one element from p[0..n), which must hold exactly one encoded
 * element (prefix included). Returns 0, or CK_ECORRUPT.
 */
CK_MUST_CHECK
int ck_elem_decode(const uint8_t *p, size_t n, ck_elem *e);

/*
 * The reading side of one channel: fed buffers in order, it hands back
 * whole elements. It never owns the buffers it is fed; it copies the pieces
 * of an element that spans buffers into its spill area.
 */
typedef struct ck_elem_reader {
    const uint8_t *data; /* current buffer */
    size_t len, pos;
    uint8_t *spill;       /* a partial element being assembled */
    size_t spill_len, spill_cap;
    size_t spill_want;    /* total size once known, 0 while the prefix is partial */
} ck_elem_reader;

void ck_elem_reader_init(ck_elem_reader *r);
void ck_elem_reader_free(ck_elem_reader *r);

/* Starts reading a new buffer; the previous one must be exhausted. */
void ck_elem_reader_feed(ck_elem_reader *r, const uint8_t *data, size_t len);

/* Decodes a record body b of blen bytes (CK_REC_FIXED at least) into rec.
 * Returns 0, or CK_ECORRUPT when its lengths do not add up to blen. */
CK_MUST_CHECK
static inline int ck_rec_decode_body(const uint8_t *b, size_t blen, ck_rec *rec)
{
    rec->ts = ck_get_i64(b + CK_REC_AT_TS);
    rec->value = ck_get_i64(b + CK_REC_AT_VALUE);
    rec->ingest = ck_get_i64(b + CK_REC_AT_INGEST);
    rec->prov = ck_get_u64(b + CK_REC_AT_PROV);
    rec->klen = ck_get_u16(b + CK_REC_AT_KLEN);
    rec->plen = ck_get_u32(b + CK_REC_AT_PLEN);
    rec->jhash = (int32_t)ck_get_u32(b + CK_REC_AT_JHASH);
    rec->hashed = 1;
    if ((size_t)CK_REC_FIXED + rec->klen + rec->plen != blen)
        return CK_ECORRUPT;
    rec->key = (const char *)(b + CK_REC_FIXED);
    rec->payload = b + CK_REC_FIXED + rec->klen;
    return CK_OK;
}

/* ck_elem_reader_next for everything but a whole record in the buffer. */
CK_MUST_CHECK
int ck_elem_reader_next_slow(ck_elem_reader *r, ck_elem *e);

/*
 * Takes the next whole element. Returns 1 with *e set, 0 when the current
 * buffer is exhausted (feed the next one), CK_ECORRUPT on a malformed
 * element, CK_ENOMEM. Inline for the common case, a record that lies
 * whole in the buffer: it is the per-record cost of every input.
 */
CK_MUST_CHECK
static inline int ck_elem_reader_next(ck_elem_reader *r, ck_elem *e)
{
    size_t avail = r->len - r->pos;
    if (r->spill_len == 0 && avail >= CK_ELEM_PREFIX + CK_REC_FIXED) {
        const uint8_t *p = r->data + r->pos;
        size_t n = (size_t)ck_get_u32(p) + 4;
        if (p[4] == CK_EL_RECORD && n <= avail && n >= CK_ELEM_PREFIX + CK_REC_FIXED &&
            ck_rec_decode_body(p + CK_ELEM_PREFIX, n - CK_ELEM_PREFIX, &e->u.rec) == CK_OK) {
            e->tag = CK_EL_RECORD;
            r->pos += n;
            return 1;
        }
    }
    return ck_elem_reader_next_slow(r, e);
}

/*
 * Decodes the run of records lying whole in the current buffer from the
 * read position on, up to max, without taking them: out[i] is record i and
 * ends[i] the read position after it (ck_elem_reader_take). Stops before
 * anything else (a watermark, an event, an element cut by the buffer's end,
 * a malformed one, which ck_elem_reader_next then reports). The records
 * stay valid while the buffer does. Returns how many.
 */
static inline int ck_elem_reader_run(const ck_elem_reader *r, ck_rec *out, size_t *ends,
                                     int max)
{
    if (r->spill_len != 0)
        return 0;
    size_t pos = r->pos;
    int n = 0;
    while (n < max && r->len - pos >= CK_ELEM_PREFIX + CK_REC_FIXED) {
        const uint8_t *p = r->data + pos;
        size_t len = (size_t)ck_get_u32(p) + 4;
        if (p[4] != CK_EL_RECORD || len > r->len - pos || len < CK_ELEM_PREFIX + CK_REC_FIXED ||
            ck_rec_decode_body(p + CK_ELEM_PREFIX, len - CK_ELEM_PREFIX, &out[n]) != CK_OK)
            break;
        pos += len;
        ends[n++] = pos;
    }
    return n;
}

/* Takes what ck_elem_reader_run decoded, up to read position end. */
static inline void ck_elem_reader_take(ck_elem_reader *r, size_t end)
{
    r->pos = end;
}

/* True when a partial element is waiting for the next buffer. */
int ck_elem_reader_partial(const ck_elem_reader *r);

#endif
