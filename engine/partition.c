#include "partition.h"

#include <stdlib.h>

#include "error.h"
#include "invariant.h"

int ck_rp_init(ck_rp *rp, ck_platform *plat, uint16_t edge, uint32_t producer,
               int nsub, const uint32_t *dst_eps, const ck_rp_config *cfg)
{
    if (nsub < 1 || cfg->segment_size < 256 || cfg->max_per_channel < 1)
        return CK_EINVAL;
    memset(rp, 0, sizeof(*rp));
    rp->subs = calloc((size_t)nsub, sizeof(*rp->subs));
    if (!rp->subs || ck_bitset_init(&rp->ready, nsub)) {
        free(rp->subs);
        rp->subs = NULL;
        return CK_ENOMEM;
    }
    rp->plat = plat;
    rp->edge = edge;
    rp->producer = producer;
    rp->nsub = nsub;
    /* Flink sizes an output pool as nsub * buffers-per-channel + floating. */
    rp->pool_size = (uint32_t)nsub * cfg->buffers_per_channel + cfg->floating_per_gate;
    if (rp->pool_size < (uint32_t)nsub + 1)
        rp->pool_size = (uint32_t)nsub + 1;
    rp->max_per_channel = cfg->max_per_channel;
    rp->max_overdraft = cfg->max_overdraft;
    rp->segment_size = cfg->segment_size;
    rp->pool = cfg->pool;
    if (!rp->pool) {
        ck_segpool_init(&rp->own, cfg->segment_size, UINT32_MAX);
        rp->pool = &rp->own;
    }
    for (int i = 0; i < nsub; i++) {
        rp->subs[i].dst_ep = dst_eps[i];
        rp->subs[i].buf_size = cfg->segment_size;
    }
    return CK_OK;
}

void ck_rp_free(ck_rp *rp)
{
    if (!rp->subs)
        return;
    for (int i = 0; i < rp->nsub; i++) {
        ck_bufq_clear(&rp->subs[i].queue);
        ck_buf_del(rp->subs[i].cur);
        rp->subs[i].bar_buf = NULL;
        free(rp->subs[i].head);
    }
    free(rp->subs);
    ck_bitset_free(&rp->ready);
    free(rp->scratch);
    ck_segpool_free(&rp->own);
    memset(rp, 0, sizeof(*rp));
}

/* A subpartition's share: finished buffers waiting to be sent. The buffer
 * being filled does not count, or a share of 1 could block a producer on a
 * half-empty buffer that nothing would ever flush. */
static inline uint32_t sub_held(const ck_subpart *s)
{
    return s->queue.n;
}

/* Subpartition i may send now (credit and a finished buffer): on the
 * ready set, so that ck_rp_send looks at these only. */
static inline void mark_ready(ck_rp *rp, int i)
{
    ck_subpart *s = &rp->subs[i];
    if (s->credit > 0 && s->queue.n > 0)
        ck_bitset_add(&rp->ready, i);
}

/* Keeps nfull in step after sub_held(s) changed from `before`. */
static inline void track_full(ck_rp *rp, const ck_subpart *s, uint32_t before)
{
    uint32_t after = sub_held(s);
    int was = before >= rp->max_per_channel, is = after >= rp->max_per_channel;
    rp->nfull += is - was;
}

static void finish_cur(ck_rp *rp, ck_subpart *s)
{
    if (!s->cur)
        return;
    if (s->cur->len == 0)
        return;
    uint32_t before = sub_held(s);
    rp->queued_bytes += s->cur->len;
    ck_bufq_push(&s->queue, s->cur);
    s->cur = NULL;
    track_full(rp, s, before);
    mark_ready(rp, (int)(s - rp->subs));
}

static int new_cur(ck_rp *rp, ck_subpart *s)
{
    ck_buf *b = ck_buf_new(rp->pool, s->buf_size);
    if (!b)
        return CK_ENOMEM;
    uint32_t before = sub_held(s);
    s->cur = b;
    rp->pool_used++;
    track_full(rp, s, before);
    return CK_OK;
}

/* Makes the buffer being filled hold n more bytes in memory (n <= its
 * cap - len): one in a small block moves to a whole segment's (segpool.h). */
static int cur_fit(ck_subpart *s, size_t n)
{
    ck_buf *b = s->cur;
    if (b->room - b->len >= n)
        return CK_OK;
    if (!(b = ck_buf_grow(b)))
        return CK_ENOMEM;
    s->cur = b;
    return CK_OK;
}

/* Room for a head of n bytes in s (partition.h). */
static int head_room(ck_subpart *s, size_t n)
{
    if (n <= s->head_cap)
        return CK_OK;
    uint8_t *h = realloc(s->head, n);
    if (!h)
        return CK_ENOMEM;
    s->head = h;
    s->head_cap = (uint32_t)n;
    return CK_OK;
}

/* Appends the n bytes of one element to subpartition s, cutting them
 * across buffers: the buffer it starts in says where (open_at), one that
 * takes a later piece starts with it (cont). */
static int write_bytes(ck_rp *rp, ck_subpart *s, const uint8_t *p, size_t n)
{
    int rc = head_room(s, n);
    if (rc)
        return rc;
    for (int first = 1; n > 0; first = 0) {
        if (!s->cur && (rc = new_cur(rp, s)))
            return rc;
        size_t take = CK_MIN((size_t)(s->cur->cap - s->cur->len), n);
        if ((rc = cur_fit(s, take)))
            return rc;
        ck_buf *b = s->cur;
        if (!first)
            b->cont = (uint32_t)take; /* a fresh buffer: finished the last round */
        else if (take < n)
            b->open_at = b->len + 1;
        memcpy(ck_buf_data(b) + b->len, p, take);
        b->len += (uint32_t)take;
        p += take;
        n -= take;
        if (b->len == b->cap)
            finish_cur(rp, s);
    }
    return CK_OK;
}

int ck_rp_emit(ck_rp *rp, int sub, const ck_elem *e)
{
    ck_subpart *s = &rp->subs[sub];
    if (s->ended)
        return CK_ESTATE;
    size_t n = ck_elem_size(e);
    int rc;
    if (!s->cur && (rc = new_cur(rp, s)))
        return rc;
    if (s->cur->cap - s->cur->len >= n) {
        /* Common case: the whole element fits in the current buffer. */
        if ((rc = cur_fit(s, n)))
            return rc;
        ck_buf *b = s->cur;
        ck_elem_encode_n(ck_buf_data(b) + b->len, e, n);
        b->len += (uint32_t)n;
        if (b->len == b->cap)
            finish_cur(rp, s);
    } else {
        if (n > rp->scratch_cap) {
            uint8_t *p = realloc(rp->scratch, n);
            if (!p)
                return CK_ENOMEM;
            rp->scratch = p;
            rp->scratch_cap = n;
        }
        ck_elem_encode_n(rp->scratch, e, n);
        if ((rc = write_bytes(rp, s, rp->scratch, n)))
            return rc;
    }
    if (e->tag == CK_EL_END_OF_PARTITION) {
        finish_cur(rp, s);
        if (s->cur) { /* empty current buffer: give it back */
            uint32_t before = sub_held(s);
            ck_buf_del(s->cur);
            s->cur = NULL;
            rp->pool_used--;
            track_full(rp, s, before);
        }
        s->ended = 1;
        rp->nended++;
    }
    return CK_OK;
}

int ck_rp_emit_rec(ck_rp *rp, int sub, const ck_rec *r)
{
    ck_subpart *s = &rp->subs[sub];
    size_t n = ck_rec_size(r, r->plen);
    ck_buf *b = s->cur;
    if (!s->ended && b && b->cap - b->len >= n && b->room - b->len >= n) {
        /* Fast path: the record fits in the buffer being filled. */
        ck_rec_encode(ck_buf_data(b) + b->len, r, r->plen, n);
        b->len += (uint32_t)n;
        if (b->len == b->cap)
            finish_cur(rp, s);
        return CK_OK;
    }
    ck_elem e;
    e.tag = CK_EL_RECORD;
    e.u.rec = *r;
    return ck_rp_emit(rp, sub, &e);
}

int ck_rp_broadcast(ck_rp *rp, const ck_elem *e)
{
    for (int i = 0; i < rp->nsub; i++) {
        int rc = ck_rp_emit(rp, i, e);
        if (rc)
            return rc;
    }
    return CK_OK;
}

void ck_rp_flush(ck_rp *rp)
{
    for (int i = 0; i < rp->nsub; i++)
        finish_cur(rp, &rp->subs[i]);
}

int ck_rp_on_credit(ck_rp *rp, int consumer, uint32_t credits)
{
    int sub = consumer - (int)rp->first;
    if (sub < 0 || sub >= rp->nsub || credits > (1u << 20) ||
        rp->subs[sub].credit > (1 << 20) - (int32_t)credits)
        return CK_EPROTO; /* more than any consumer can own */
    rp->subs[sub].credit += (int32_t)credits;
    mark_ready(rp, sub);
    return CK_OK;
}

/* Buffer b of s goes out: the head s keeps (partition.h) grows by b, or
 * ends in it, and an element that starts in b and goes on past it is the
 * new head. Its room was reserved when the element was cut. */
static void keep_head(ck_subpart *s, const ck_buf *b)
{
    if (s->head_len && b->cont == b->len && s->head_len + b->len <= s->head_cap) {
        memcpy(s->head + s->head_len, ck_buf_data(b), b->len);
        s->head_len += b->len;
        if (s->head_len >= 4 && s->head_len == 4 + (size_t)ck_get_u32(s->head))
            s->head_len = 0; /* it ended with b */
    } else {
        s->head_len = 0;
    }
    if (b->open_at) {
        s->head_len = b->len - (b->open_at - 1);
        memcpy(s->head, ck_buf_data(b) + b->open_at - 1, s->head_len);
    }
}

/* Sends subpartition i's queued buffers while it has credit. */
static int send_sub(ck_rp *rp, int i)
{
    ck_subpart *s = &rp->subs[i];
    int sent = 0;
    while (s->credit > 0 && s->queue.n > 0) {
        /* The message is made first: out of memory, the buffer stays
         * queued and goes later. */
        uint8_t *m = malloc((size_t)CK_WIRE_HDR + s->queue.head->len);
        if (!m) {
            mark_ready(rp, i); /* tried again at the next send */
            break;
        }
        uint32_t before = sub_held(s);
        ck_buf *b = ck_bufq_pop(&s->queue);
        track_full(rp, s, before);
        if (b == s->bar_buf) {
            s->bar_buf = NULL; /* the barrier leaves aligned */
            rp->bar_pending--;
        }
        rp->pool_used--;
        s->credit--;
        ck_wire_hdr h = {
            .type = CK_MSG_DATA,
            .edge = rp->edge,
            .src = rp->producer,
            .dst = rp->first + (uint32_t)i,
            .seq = s->seq++,
            .arg = s->queue.n, /* backlog */
            .epoch = rp->epoch,
            .len = b->len,
        };
        ck_wire_encode(b->mem, &h);
        keep_head(s, b);
        rp->queued_bytes -= b->len;
        s->bytes_sent += b->len;
        s->bufs_sent++;
        rp->bytes_out += b->len;
        /* The segment stays on this host: its used bytes are copied out
         * (buffer.h). */
        size_t n = (size_t)CK_WIRE_HDR + b->len;
        memcpy(m, b->mem, n);
        ck_buf_del(b);
        /* Not sent (its consumer gone, or the platform out of memory): lost
         * as on a broken connection, and the consumer, if it lives, fails
         * at the gap in sequence numbers (gate.c). */
        CK_IGNORE(rp->plat->ops->send(rp->plat, s->dst_ep, m, n));
        sent++;
    }
    return sent;
}

int ck_rp_send(ck_rp *rp)
{
    int sent = 0;
    /* The subpartitions that can send, in index order (as a scan over all
     * of them would send), without scanning all of them. */
    for (int k = 0; rp->ready.n > 0 && k < rp->ready.nw; k++) {
        uint64_t bits = ck_bitset_take_word(&rp->ready, k);
        while (bits)
            sent += send_sub(rp, ck_bitset_next(&bits, k));
    }
    return sent;
}

int ck_rp_drained(const ck_rp *rp)
{
    if (rp->nended < rp->nsub)
        return 0;
    for (int i = 0; i < rp->nsub; i++)
        if (rp->subs[i].queue.n > 0 || rp->subs[i].cur)
            return 0;
    return 1;
}

uint32_t ck_rp_queued(const ck_rp *rp)
{
    uint32_t n = 0;
    for (int i = 0; i < rp->nsub; i++)
        n += rp->subs[i].queue.n;
    return n;
}

int ck_rp_set_buffer_size(ck_rp *rp, int consumer, uint32_t size)
{
    int sub = consumer - (int)rp->first;
    if (sub < 0 || sub >= rp->nsub || size < CK_RP_MIN_BUFFER || size > rp->segment_size)
        return CK_EPROTO;
    ck_subpart *s = &rp->subs[sub];
    s->buf_size = size;
    ck_buf *b = s->cur;
    if (b) {
        /* The buffer being filled is cut at the new size too (Flink trims
         * its buffer builder). */
        b->cap = CK_MAX(size, b->len); /* the segment's rest stays unused */
        if (b->len == b->cap)
            finish_cur(rp, s);
    }
    return CK_OK;
}

uint64_t ck_rp_inflight(const ck_rp *rp)
{
    uint64_t n = rp->queued_bytes;
    for (int i = 0; i < rp->nsub; i++)
        if (rp->subs[i].cur)
            n += rp->subs[i].cur->len;
    return n;
}

/* Sends message m (header room + a barrier of len bytes) to subpartition
 * i's consumer as an EVENT: no credit, no sequence number. */
static void send_event(ck_rp *rp, int i, uint8_t *m, uint32_t len)
{
    ck_wire_hdr h = {
        .type = CK_MSG_EVENT,
        .edge = rp->edge,
        .src = rp->producer,
        .dst = rp->first + (uint32_t)i,
        .epoch = rp->epoch,
        .len = len,
    };
    ck_wire_encode(m, &h);
    /* Not sent: lost as on a broken connection; the checkpoint it is the
     * barrier of expires, or a newer barrier ends its alignment. */
    CK_IGNORE(rp->plat->ops->send(rp->plat, rp->subs[i].dst_ep, m, (size_t)CK_WIRE_HDR + len));
}

/* Appends to w the output channel state of s: the head it keeps of an
 * element sent in part, then the bytes of the buffers queued before
 * `upto` (NULL: all). Whole elements (partition.h). */
static void out_state(const ck_subpart *s, const ck_buf *upto, ck_wbuf *w)
{
    if (s->head_len)
        ck_wbuf_bytes(w, s->head, s->head_len);
    for (const ck_buf *b = s->queue.head; b != upto; b = b->next)
        ck_wbuf_bytes(w, ck_buf_data(b), b->len);
}

int ck_rp_priority_barrier(ck_rp *rp, const ck_elem *e, ck_wbuf *state)
{
    size_t n = ck_elem_size(e);
    for (int i = 0; i < rp->nsub; i++) {
        ck_subpart *s = &rp->subs[i];
        if (s->ended)
            continue;
        finish_cur(rp, s);
        out_state(s, NULL, &state[i]);
        if (state[i].err)
            return CK_ENOMEM;
        uint8_t *m = malloc((size_t)CK_WIRE_HDR + n);
        if (!m)
            return CK_ENOMEM;
        ck_elem_encode_n(m + CK_WIRE_HDR, e, n);
        send_event(rp, i, m, (uint32_t)n);
    }
    return CK_OK;
}

int ck_rp_replay(ck_rp *rp, uint32_t consumer, const uint8_t *data, size_t len)
{
    uint32_t sub = consumer - rp->first;
    if (sub >= (uint32_t)rp->nsub || rp->subs[sub].ended)
        return CK_ECORRUPT;
    ck_subpart *s = &rp->subs[sub];
    /* In segments, as it was sent: the consumer's buffers are that big.
     * The state holds whole elements; each segment says where one that
     * spans segments starts (open_at) and how far it goes on (cont), as
     * write_bytes's do. */
    const uint8_t *base = data;
    size_t at = 0, next = 0, total = len; /* next: where the next element starts */
    while (len > 0) {
        uint32_t take = (uint32_t)CK_MIN((size_t)rp->segment_size, len);
        size_t last = SIZE_MAX; /* where the last element that starts in it does */
        uint32_t cont = next > at ? (uint32_t)CK_MIN(next - at, (size_t)take) : 0;
        while (next < at + take && next + 4 <= total) {
            last = next;
            next += 4 + (size_t)ck_get_u32(base + next);
        }
        if (last != SIZE_MAX && next > at + take && head_room(s, next - last))
            return CK_ENOMEM;
        ck_buf *b = ck_buf_copy(rp->pool, data, take);
        if (!b)
            return CK_ENOMEM;
        b->cont = cont;
        if (last != SIZE_MAX && next > at + take)
            b->open_at = (uint32_t)(last - at) + 1;
        at += take;
        uint32_t before = sub_held(s);
        rp->pool_used++;
        rp->queued_bytes += take;
        ck_bufq_push(&s->queue, b);
        track_full(rp, s, before);
        mark_ready(rp, (int)sub);
        data += take;
        len -= take;
    }
    return CK_OK;
}

int ck_rp_emit_timeoutable(ck_rp *rp, const ck_elem *e)
{
    for (int i = 0; i < rp->nsub; i++)
        rp->subs[i].bar_buf = NULL; /* an older one stays where it is, aligned */
    rp->bar_pending = 0;
    rp->bar_id = e->u.barrier.id;
    for (int i = 0; i < rp->nsub; i++) {
        ck_subpart *s = &rp->subs[i];
        if (s->ended)
            continue;
        finish_cur(rp, s); /* the barrier starts a buffer of its own */
        int rc = ck_rp_emit(rp, i, e);
        if (rc)
            return rc;
        ck_buf *b = s->cur;
        finish_cur(rp, s);
        s->bar_buf = b;
        rp->bar_pending++;
    }
    return CK_OK;
}

int ck_rp_timeout_barrier(ck_rp *rp, ck_wbuf *state)
{
    int n = 0;
    for (int i = 0; i < rp->nsub && rp->bar_pending > 0; i++) {
        ck_subpart *s = &rp->subs[i];
        ck_buf *bar = s->bar_buf;
        if (!bar)
            continue;
        /* What is queued before it is output channel state. */
        ck_buf *prev = NULL;
        for (ck_buf *b = s->queue.head; b != bar; b = b->next)
            prev = b;
        out_state(s, bar, &state[i]);
        if (state[i].err)
            return CK_ENOMEM;
        uint32_t before = sub_held(s);
        if (prev)
            prev->next = bar->next;
        else
            s->queue.head = bar->next;
        if (s->queue.tail == bar)
            s->queue.tail = prev;
        s->queue.n--;
        track_full(rp, s, before);
        rp->pool_used--;
        rp->queued_bytes -= bar->len;
        s->bar_buf = NULL;
        rp->bar_pending--;
        uint32_t len = bar->len;
        uint8_t *m = ck_buf_to_msg(bar);
        if (!m)
            return CK_ENOMEM;
        send_event(rp, i, m, len);
        n++;
    }
    return n;
}

/* ---- invariants (partition.h) -------------------------------------------------------- */

#define CK_INV_MODULE "partition"

static int check_sub(const ck_rp *rp, int i, uint64_t *bytes, ck_inv *v)
{
    const ck_subpart *s = &rp->subs[i];
    CK_INV(v, 1, s->credit >= 0 && s->credit <= (1 << 20), "subpartition %d: credit %d", i,
           s->credit);
    CK_INV(v, 2, (uint64_t)s->seq == s->bufs_sent,
           "subpartition %d: next sequence number %u after %llu buffers sent", i, s->seq,
           (unsigned long long)s->bufs_sent);
    CK_INV(v, 6, !(s->credit > 0 && s->queue.n > 0) || ck_bitset_has(&rp->ready, i),
           "subpartition %d: credit %d and %u buffers queued, not in the ready set", i, s->credit,
           s->queue.n);
    CK_INV(v, 7, !s->ended || !s->cur, "subpartition %d: ended, yet fills a buffer", i);
    CK_INV(v, 8, s->buf_size >= CK_RP_MIN_BUFFER && s->buf_size <= rp->segment_size,
           "subpartition %d: cuts buffers at %u bytes (segments of %u)", i, s->buf_size,
           rp->segment_size);
    const ck_buf *tail = NULL;
    uint32_t n = 0;
    int bar = 0;
    for (const ck_buf *b = s->queue.head; b; b = b->next) {
        CK_INV(v, 8, b->len > 0 && b->len <= b->cap && b->cap <= rp->segment_size,
               "subpartition %d: a queued buffer of %u bytes, cap %u", i, b->len, b->cap);
        CK_INV(v, 10, b->cont <= b->len && b->open_at <= b->len,
               "subpartition %d: a queued buffer of %u bytes goes on with an element for %u, "
               "starts one at %u",
               i, b->len, b->cont, b->open_at);
        *bytes += b->len;
        bar |= b == s->bar_buf;
        tail = b;
        n++;
    }
    CK_INV(v, 3, n == s->queue.n && tail == s->queue.tail,
           "subpartition %d: %u buffers queued, counted %u", i, n, s->queue.n);
    CK_INV(v, 8, !s->cur || (s->cur->len <= s->cur->cap && s->cur->cap <= rp->segment_size),
           "subpartition %d: the buffer being filled holds %u bytes, cap %u", i,
           s->cur ? s->cur->len : 0, s->cur ? s->cur->cap : 0);
    const ck_buf *first = s->queue.head ? s->queue.head : s->cur;
    CK_INV(v, 10,
           s->head_len <= s->head_cap && (!s->head_len || (first && first->cont > 0)),
           "subpartition %d: keeps %u bytes of an element sent in part (room %u), and the "
           "next buffer goes on with %s",
           i, s->head_len, s->head_cap, first && first->cont ? "it" : "none");
    CK_INV(v, 9, !s->bar_buf || bar,
           "subpartition %d: its timeoutable barrier's buffer is not queued", i);
    return 0;
}

int ck_rp_check(const ck_rp *rp, ck_inv *v)
{
    uint64_t used = 0, bytes = 0;
    int full = 0, ended = 0, bars = 0;
    for (int i = 0; i < rp->nsub; i++) {
        const ck_subpart *s = &rp->subs[i];
        int rc = check_sub(rp, i, &bytes, v);
        if (rc)
            return rc;
        used += s->queue.n + (s->cur != NULL);
        full += sub_held(s) >= rp->max_per_channel;
        ended += s->ended != 0;
        bars += s->bar_buf != NULL;
    }
    CK_INV(v, 3, used == rp->pool_used, "holds %llu buffers, counted %u",
           (unsigned long long)used, rp->pool_used);
    CK_INV(v, 4, full == rp->nfull, "%d subpartitions full, counted %d", full, rp->nfull);
    ck_inv bv;
    if (ck_bitset_check(&rp->ready, &bv))
        return ck_inv_fail(v, CK_INV_MODULE, 6, "ready set: %s", bv.what);
    CK_INV(v, 7, ended == rp->nended, "%d subpartitions ended, counted %d", ended, rp->nended);
    CK_INV(v, 8, bytes == rp->queued_bytes, "%llu payload bytes queued, counted %llu",
           (unsigned long long)bytes, (unsigned long long)rp->queued_bytes);
    CK_INV(v, 9, bars == rp->bar_pending, "%d timeoutable barriers queued, counted %d", bars,
           rp->bar_pending);
    return 0;
}
