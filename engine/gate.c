#include "gate.h"

#include <stdlib.h>

#include "error.h"
#include "invariant.h"

int ck_gate_init(ck_gate *g, ck_platform *plat, uint16_t edge, uint32_t consumer,
                 int nchan, const uint32_t *producer_eps, uint32_t exclusive,
                 uint32_t floating)
{
    if (nchan < 1 || exclusive < 1)
        return CK_EINVAL;
    memset(g, 0, sizeof(*g));
    g->chans = calloc((size_t)nchan, sizeof(*g->chans));
    g->avail = calloc((size_t)nchan, sizeof(int));
    g->waiters = calloc((size_t)nchan, sizeof(int));
    int brc = ck_bitset_init(&g->announce, nchan);
    if (!g->chans || !g->avail || !g->waiters || brc) {
        ck_bitset_free(&g->announce);
        free(g->chans);
        free(g->avail);
        free(g->waiters);
        return CK_ENOMEM;
    }
    g->plat = plat;
    g->edge = edge;
    g->consumer = consumer;
    g->nchan = nchan;
    g->exclusive = exclusive;
    g->floating = floating;
    g->pool_free = floating;
    g->wm = CK_WM_MIN;
    g->wm_min = CK_WM_MIN;
    g->wm_min_n = nchan;
    g->exactly_once = 1;
    for (int i = 0; i < nchan; i++) {
        ck_chan *c = &g->chans[i];
        c->producer_ep = producer_eps[i];
        c->owned = exclusive;
        c->unannounced = exclusive; /* initial credit */
        ck_bitset_add(&g->announce, i);
        c->wm = CK_WM_MIN;
        ck_elem_reader_init(&c->reader);
        ck_elem_reader_init(&c->scan);
    }
    return CK_OK;
}

void ck_gate_free(ck_gate *g)
{
    if (!g->chans)
        return;
    for (int i = 0; i < g->nchan; i++) {
        ck_bufq_clear(&g->chans[i].queue);
        ck_bufq_clear(&g->chans[i].replay);
        ck_buf_del(g->chans[i].cur);
        ck_elem_reader_free(&g->chans[i].reader);
        ck_elem_reader_free(&g->chans[i].scan);
        if (g->uc_state)
            free(g->uc_state[i].p);
    }
    free(g->uc_state);
    free(g->chans);
    free(g->avail);
    free(g->waiters);
    ck_bitset_free(&g->announce);
    memset(g, 0, sizeof(*g));
}

static inline uint32_t held(const ck_chan *c)
{
    return c->queue.n + (c->cur && !c->cur_replay ? 1u : 0u);
}

static inline uint32_t required(const ck_gate *g, const ck_chan *c)
{
    return c->backlog + g->exclusive;
}

/* Turns every owned buffer that is neither lent out nor full into credit. */
static void recredit(ck_gate *g, ck_chan *c)
{
    uint32_t used = c->outstanding + c->unannounced + held(c);
    if (c->owned > used) {
        c->unannounced += c->owned - used;
        ck_bitset_add(&g->announce, (int)(c - g->chans));
    }
}

static void avail_push(ck_gate *g, int i)
{
    ck_chan *c = &g->chans[i];
    if (c->in_avail || c->blocked)
        return;
    c->in_avail = 1;
    g->avail[(g->avail_head + g->avail_n) % g->nchan] = i;
    g->avail_n++;
}

static int avail_pop(ck_gate *g)
{
    int i = g->avail[g->avail_head];
    g->avail_head = (g->avail_head + 1) % g->nchan;
    g->avail_n--;
    g->chans[i].in_avail = 0;
    return i;
}

/* Lends floating buffers to channel i up to what its backlog needs. */
static void request_floating(ck_gate *g, int i)
{
    ck_chan *c = &g->chans[i];
    while (c->owned < required(g, c) && g->pool_free > 0) {
        g->pool_free--;
        c->owned++;
        c->floating++;
    }
    if (c->owned < required(g, c) && !c->waiting) {
        c->waiting = 1;
        g->waiters[(g->wait_head + g->wait_n) % g->nchan] = i;
        g->wait_n++;
    }
    recredit(g, c);
}

/* A floating buffer came back to the pool: lend it to a waiting channel. */
static void pool_returned(ck_gate *g)
{
    while (g->pool_free > 0 && g->wait_n > 0) {
        int i = g->waiters[g->wait_head];
        ck_chan *c = &g->chans[i];
        if (c->owned >= required(g, c) || c->ended) {
            g->wait_head = (g->wait_head + 1) % g->nchan;
            g->wait_n--;
            c->waiting = 0;
            continue;
        }
        g->pool_free--;
        c->owned++;
        c->floating++;
        recredit(g, c);
        if (c->owned >= required(g, c)) {
            g->wait_head = (g->wait_head + 1) % g->nchan;
            g->wait_n--;
            c->waiting = 0;
        }
    }
}

/* Channel i's spill ends: its barrier or its end came. */
static void spill_done(ck_gate *g, int i)
{
    ck_chan *c = &g->chans[i];
    c->spilling = 0;
    g->uc_pending--;
    ck_elem_reader_free(&c->scan);
    ck_elem_reader_init(&c->scan);
}

/*
 * Bytes channel i received while spilling: every element up to its
 * barrier of the checkpoint being collected (or a newer one) or its
 * END_OF_PARTITION joins the channel state; neither of those does (a
 * producer restored with its output closed sends END_OF_PARTITION again).
 * Elements may span buffers: the scan reader puts them together.
 */
static int spill(ck_gate *g, int i, const uint8_t *data, size_t len)
{
    ck_chan *c = &g->chans[i];
    ck_wbuf *w = &g->uc_state[i];
    ck_elem e;
    int rc = 0;
    ck_elem_reader_feed(&c->scan, data, len);
    while (c->spilling && (rc = ck_elem_reader_next(&c->scan, &e)) == 1) {
        if ((e.tag == CK_EL_BARRIER && e.u.barrier.id >= g->uc_id &&
             !(e.u.barrier.flags & CK_BARRIER_RECOVERED)) ||
            e.tag == CK_EL_END_OF_PARTITION) {
            spill_done(g, i);
            break;
        }
        if (e.tag == CK_EL_BARRIER && (e.u.barrier.flags & CK_BARRIER_RECOVERED))
            continue; /* of the restore this attempt made: not state */
        size_t n = ck_elem_size(&e);
        uint8_t *p = ck_wbuf_room(w, n);
        if (!p)
            return CK_ENOMEM;
        ck_elem_encode_n(p, &e, n);
    }
    if (c->spilling && rc < 0)
        return rc;
    return w->err ? CK_ENOMEM : CK_OK;
}

int ck_gate_on_data(ck_gate *g, const ck_wire_hdr *h, uint8_t *msg)
{
    uint32_t ch = h->src - g->first; /* wraps below first: refused below */
    if (ch >= (uint32_t)g->nchan || h->dst != g->consumer) {
        free(msg);
        return CK_EPROTO;
    }
    ck_chan *c = &g->chans[ch];
    if (c->outstanding == 0 || h->seq != c->next_seq || c->ended) {
        free(msg);
        return CK_EPROTO;
    }
    ck_buf *b;
    if (g->pool) {
        if (h->len > g->pool->seg_size) {
            free(msg);
            return CK_EPROTO; /* more than any credited buffer holds */
        }
        b = ck_buf_copy(g->pool, msg + CK_WIRE_HDR, h->len);
        free(msg);
    } else if (!(b = ck_buf_wrap(msg, h->len))) {
        free(msg);
    }
    if (!b)
        return CK_ENOMEM;
    c->outstanding--;
    c->next_seq++;
    c->backlog = h->arg;
    c->bytes_in += h->len;
    c->bufs_in++;
    g->bytes_in += h->len;
    g->held_bytes += h->len;
    ck_bufq_push(&c->queue, b);
    avail_push(g, (int)ch);
    if (c->owned < required(g, c))
        request_floating(g, (int)ch);
    if (c->spilling)
        return spill(g, (int)ch, ck_buf_data(b), b->len);
    return CK_OK;
}

/* The channel finished reading its current buffer. */
static void release_cur(ck_gate *g, ck_chan *c)
{
    g->bytes_read += c->cur->len;
    g->held_bytes -= c->cur->len;
    ck_buf_del(c->cur);
    c->cur = NULL;
    if (c->cur_replay) {
        c->cur_replay = 0; /* restored state: none of the channel's buffers */
        g->replay_left--;
        return;
    }
    if (c->floating > 0 && (c->owned > required(g, c) || c->ended)) {
        c->owned--;
        c->floating--;
        g->pool_free++;
        pool_returned(g);
    }
    recredit(g, c);
}

/* Scans the open channels for the lowest watermark and how many hold it. */
static void scan_wm_min(ck_gate *g)
{
    int64_t m = CK_WM_MAX;
    int n = 0;
    for (int i = 0; i < g->nchan; i++) {
        const ck_chan *c = &g->chans[i];
        if (c->ended)
            continue;
        if (c->wm < m) {
            m = c->wm;
            n = 1;
        } else if (c->wm == m) {
            n++;
        }
    }
    g->wm_min = m;
    g->wm_min_n = n;
}

/* Channel c's watermark was `old` and it moved on or the channel ended:
 * the minimum over the open channels changes only if c held it last. */
static void left_wm(ck_gate *g, int64_t old)
{
    if (old == g->wm_min && --g->wm_min_n == 0)
        scan_wm_min(g);
}

/* Returns 1 and sets *e when the gate watermark rose. */
static int advance_wm(ck_gate *g, ck_elem *e)
{
    if (g->nended == g->nchan)
        return 0;
    int64_t m = g->wm_min;
    if (m > g->wm) {
        g->wm = m;
        e->tag = CK_EL_WATERMARK;
        e->u.wm = m;
        return 1;
    }
    return 0;
}

/* True when every open channel has delivered the barrier being aligned. */
static int aligned(const ck_gate *g)
{
    return g->align_have >= g->nchan - g->nended;
}

static void unblock_all(ck_gate *g)
{
    for (int i = 0; i < g->nchan; i++) {
        ck_chan *c = &g->chans[i];
        if (!c->blocked || (c->rec_held && g->rec_left > 0))
            continue;
        c->rec_held = 0;
        c->blocked = 0;
        if (c->cur || c->queue.n > 0)
            avail_push(g, i);
    }
}

/* Channel c delivered its producer's recovered marker (gate.h). */
static void on_recovered(ck_gate *g, ck_chan *c)
{
    if (g->rec_left <= 0 || c->rec_held || c->cur_replay)
        return; /* not expected: nothing moved here; or an old one, restored */
    c->rec_held = 1;
    c->blocked = 1; /* popped from the available ring at the next turn */
    if (--g->rec_left == 0)
        unblock_all(g);
}

void ck_gate_expect_recovered(ck_gate *g)
{
    g->rec_left = 0;
    for (int i = 0; i < g->nchan; i++)
        g->rec_left += !g->chans[i].ended;
}

/* Alignment done: hand the barrier up. */
static int barrier_up(ck_gate *g, ck_elem *e)
{
    e->tag = CK_EL_BARRIER;
    e->u.barrier = g->align_barrier;
    g->last_align_ns = ck_now(g->plat) - g->align_start;
    g->done_id = g->align_id;
    g->align_id = 0;
    unblock_all(g);
    return 1;
}

/* The unaligned checkpoint being collected is given up: the task hears of
 * it through uc_abandoned. */
static void uc_abandon(ck_gate *g)
{
    g->uc_abandoned = g->uc_id;
    for (int i = 0; i < g->nchan; i++) {
        if (g->chans[i].spilling)
            spill_done(g, i);
        g->uc_state[i].len = 0;
        g->uc_state[i].err = 0;
    }
    g->uc_id = 0;
    g->uc_pending = 0;
}

/* A barrier arrived on channel c. Returns 1 when it completes an alignment. */
static int on_barrier(ck_gate *g, ck_chan *c, ck_elem *e)
{
    const ck_barrier b = e->u.barrier;
    if (g->uc_id && b.id > g->uc_id)
        uc_abandon(g); /* a newer checkpoint overtakes it */
    if (b.id <= g->done_id || b.id < g->align_id || b.id <= c->barrier)
        return 0; /* of a checkpoint handed up or abandoned already */
    if (g->align_id && b.id > g->align_id) {
        g->abandoned = g->align_id; /* a newer checkpoint overtakes this one */
        g->done_id = g->align_id;
        g->align_id = 0;
        unblock_all(g);
    }
    c->barrier = b.id;
    if (!g->align_id) {
        g->align_id = b.id;
        g->align_barrier = b;
        g->align_start = ck_now(g->plat);
        g->align_have = 0;
        for (int i = 0; i < g->nchan; i++)
            g->align_have += !g->chans[i].ended && g->chans[i].barrier >= b.id;
    } else {
        g->align_have++; /* b.id is align_id, and c had not delivered it */
    }
    if (aligned(g))
        return barrier_up(g, e);
    if (g->exactly_once)
        c->blocked = 1; /* popped from the available ring at the next turn */
    return 0;
}

/* A cancel marker arrived on channel c: checkpoint n was declined
 * upstream, and its alignment ends here at once (Flink's
 * SingleCheckpointBarrierHandler.processCancellationBarrier). Returns 1
 * when it is news, to hand up. */
static int on_cancel(ck_gate *g, ck_chan *c, const ck_elem *e)
{
    uint64_t n = e->u.barrier.id;
    if (n > c->barrier)
        c->barrier = n;
    if (g->uc_id && n >= g->uc_id)
        uc_abandon(g); /* declined upstream, or a newer one declined */
    if (n <= g->done_id || (g->align_id && n < g->align_id))
        return 0;
    if (g->align_id && n > g->align_id)
        g->abandoned = g->align_id; /* an older one is abandoned on the way */
    g->done_id = n;
    g->align_id = 0;
    unblock_all(g);
    return 1;
}

int ck_gate_next(ck_gate *g, ck_elem *e, int *released)
{
    *released = 0;
    while (g->avail_n > 0) {
        int i = g->avail[g->avail_head];
        ck_chan *c = &g->chans[i];
        if (c->blocked) {
            avail_pop(g); /* back in when the alignment ends */
            continue;
        }
        if (!c->cur) {
            c->cur = ck_bufq_pop(&c->replay);
            c->cur_replay = c->cur != NULL;
            if (!c->cur)
                c->cur = ck_bufq_pop(&c->queue);
            if (!c->cur) {
                avail_pop(g);
                continue;
            }
            ck_elem_reader_feed(&c->reader, ck_buf_data(c->cur), c->cur->len);
        }
        int rc = ck_elem_reader_next(&c->reader, e);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            /* Buffer read through: release it, rotate to the next channel. */
            release_cur(g, c);
            avail_pop(g);
            if (c->queue.n > 0 || c->replay.n > 0)
                avail_push(g, i);
            *released = 1;
            continue;
        }
        switch (e->tag) {
        case CK_EL_RECORD:
            if (c->cur_replay && g->rf_maxp > 0 &&
                !ck_kgr_contains(g->rf_kgr,
                                 ck_kg_of_hash(ck_rec_jhash(&e->u.rec), g->rf_maxp))) {
                g->replay_filtered++; /* another new subtask's key group */
                continue;
            }
            return 1;
        case CK_EL_WATERMARK:
            if (c->cur_replay && g->rf_moved) {
                g->replay_wm_dropped++; /* an old channel's */
                continue;
            }
            if (e->u.wm > c->wm) {
                int64_t old = c->wm;
                c->wm = e->u.wm;
                left_wm(g, old);
            }
            if (advance_wm(g, e))
                return 1;
            continue;
        case CK_EL_END_OF_PARTITION:
            if (c->queue.n > 0 || c->replay.n > 0 || ck_elem_reader_partial(&c->reader) ||
                c->reader.pos < c->reader.len)
                return CK_EPROTO; /* data after the end */
            c->ended = 1;
            g->nended++;
            if (c->spilling)
                spill_done(g, i); /* the scan saw its end already */
            left_wm(g, c->wm);
            if (g->align_id && c->barrier >= g->align_id)
                g->align_have--; /* counted among the open ones */
            if (g->align_id && g->nended < g->nchan && aligned(g))
                return barrier_up(g, e); /* the last missing channel ended */
            if (g->nended == g->nchan) {
                g->eop_delivered = 1;
                e->tag = CK_EL_END_OF_PARTITION;
                return 1;
            }
            if (advance_wm(g, e))
                return 1;
            continue;
        case CK_EL_BARRIER:
            if (e->u.barrier.flags & CK_BARRIER_RECOVERED) {
                on_recovered(g, c);
                continue;
            }
            if (on_barrier(g, c, e))
                return 1;
            continue;
        case CK_EL_CANCEL:
            if (on_cancel(g, c, e))
                return 1;
            continue;
        default:
            return CK_ECORRUPT;
        }
    }
    return 0;
}

/* Sends channel i's producer a header-only message (CREDIT, BUFFER_SIZE).
 * 0, or CK_ENOMEM (nothing sent). */
static int to_producer(ck_gate *g, int i, int type, uint32_t arg)
{
    uint8_t *m = malloc(CK_WIRE_HDR);
    if (!m)
        return CK_ENOMEM;
    ck_wire_hdr h = {
        .type = (uint8_t)type,
        .edge = g->edge,
        .src = g->first + (uint32_t)i,
        .dst = g->consumer,
        .arg = arg,
        .epoch = g->epoch,
    };
    ck_wire_encode(m, &h);
    int rc = g->plat->ops->send(g->plat, g->chans[i].producer_ep, m, CK_WIRE_HDR);
    return rc == CK_EUNREACH ? CK_OK : rc; /* a producer gone: its failover is coming */
}

/* Sends channel i's unannounced credit. 0, or CK_ENOMEM (kept for later). */
static int announce_chan(ck_gate *g, int i)
{
    ck_chan *c = &g->chans[i];
    if (c->unannounced == 0 || c->ended)
        return CK_OK;
    if (to_producer(g, i, CK_MSG_CREDIT, c->unannounced))
        return CK_ENOMEM;
    c->outstanding += c->unannounced;
    c->unannounced = 0;
    return CK_OK;
}

void ck_gate_announce(ck_gate *g)
{
    if (g->replay_left)
        return; /* its partitions are requested once the restored state is read */
    /* The channels with credit, in index order (as a scan over all of
     * them would announce), without scanning all of them. */
    for (int k = 0; g->announce.n > 0 && k < g->announce.nw; k++) {
        uint64_t bits = ck_bitset_take_word(&g->announce, k);
        while (bits) {
            int i = ck_bitset_next(&bits, k);
            if (announce_chan(g, i)) {
                /* out of memory: the rest are announced next time */
                ck_bitset_put_word(&g->announce, k, bits | ((uint64_t)1 << (i & 63)));
                return;
            }
        }
    }
}

uint32_t ck_gate_queued(const ck_gate *g)
{
    uint32_t n = 0;
    for (int i = 0; i < g->nchan; i++)
        n += held(&g->chans[i]);
    return n;
}

uint32_t ck_gate_buffers_in_use(const ck_gate *g)
{
    uint32_t n = 0;
    for (int i = 0; i < g->nchan; i++) {
        const ck_chan *c = &g->chans[i];
        if (!c->ended)
            n += held(c) + c->backlog;
    }
    return n;
}

int ck_gate_announce_size(ck_gate *g, uint32_t size)
{
    for (int i = 0; i < g->nchan; i++)
        if (!g->chans[i].ended && to_producer(g, i, CK_MSG_BUFFER_SIZE, size))
            return CK_ENOMEM;
    return CK_OK;
}

/* Channel i starts spilling: what it received and has not read goes
 * through the scan first (it may hold the barrier already). */
static int spill_unread(ck_gate *g, int i)
{
    ck_chan *c = &g->chans[i];
    int rc = CK_OK;
    c->spilling = 1;
    g->uc_pending++;
    if (ck_elem_reader_partial(&c->reader))
        rc = spill(g, i, c->reader.spill, c->reader.spill_len);
    if (!rc && c->cur && c->spilling)
        rc = spill(g, i, c->reader.data + c->reader.pos, c->reader.len - c->reader.pos);
    for (const ck_buf *b = c->replay.head; !rc && b && c->spilling; b = b->next)
        rc = spill(g, i, ck_buf_data(b), b->len);
    for (const ck_buf *b = c->queue.head; !rc && b && c->spilling; b = b->next)
        rc = spill(g, i, ck_buf_data(b), b->len);
    return rc;
}

/* Checkpoint n goes unaligned here: channel `except` (-1: none) had its
 * barrier come as an EVENT just now, the channels that delivered it in
 * the data are unblocked, every other open one spills. */
static int go_unaligned(ck_gate *g, uint64_t n, int except)
{
    if (!g->uc_state && !(g->uc_state = calloc((size_t)g->nchan, sizeof(*g->uc_state))))
        return CK_ENOMEM;
    if (g->align_id == n) {
        g->last_align_ns = ck_now(g->plat) - g->align_start;
        g->align_id = 0;
        unblock_all(g);
    } else {
        g->last_align_ns = 0;
    }
    g->uc_id = n;
    g->done_id = n;
    g->uc_pending = 0;
    for (int i = 0; i < g->nchan; i++) {
        ck_chan *ci = &g->chans[i];
        g->uc_state[i].len = 0;
        g->uc_state[i].err = 0;
        if (ci->ended || (i != except && ci->barrier >= n))
            continue; /* after its barrier: not state */
        int rc = spill_unread(g, i);
        /* its barrier came: all it had unread is state but the first part
         * of an element whose rest its producer queued after the barrier:
         * the producer's output state holds that element whole */
        if (!rc && i == except && ci->spilling)
            spill_done(g, i);
        if (rc)
            return rc;
    }
    return CK_OK;
}

int ck_gate_timeout(ck_gate *g, ck_barrier *b)
{
    if (!g->uc_edge || !g->align_id || !(g->align_barrier.flags & CK_BARRIER_TIMEOUTABLE))
        return 0;
    *b = g->align_barrier;
    b->flags |= CK_BARRIER_UNALIGNED;
    int rc = go_unaligned(g, b->id, -1);
    return rc ? rc : 1;
}

int ck_gate_on_event(ck_gate *g, const ck_wire_hdr *h, const uint8_t *body, ck_barrier *b)
{
    uint32_t ch = h->src - g->first;
    if (!g->uc_edge || ch >= (uint32_t)g->nchan || h->dst != g->consumer)
        return CK_EPROTO;
    ck_chan *c = &g->chans[ch];
    if (c->ended)
        return CK_EPROTO;
    ck_elem e;
    if (ck_elem_decode(body, h->len, &e) || e.tag != CK_EL_BARRIER)
        return CK_ECORRUPT;
    uint64_t n = e.u.barrier.id;
    if (n <= c->barrier || (n <= g->done_id && n != g->uc_id))
        return 0; /* of a checkpoint handed up or given up already */
    if (g->align_id && n > g->align_id) {
        g->abandoned = g->align_id; /* an aligned one in progress is overtaken */
        g->done_id = g->align_id;
        g->align_id = 0;
        unblock_all(g);
    }
    if (g->uc_id && n > g->uc_id)
        uc_abandon(g);
    if (g->uc_id == n) {
        c->barrier = n;
        if (c->spilling)
            spill_done(g, (int)ch); /* its state is complete (as above) */
        return 0;
    }
    /* The first barrier of checkpoint n to come unaligned (an alignment of
     * n in progress turns unaligned): everything received and not read
     * yet was sent before it, on every channel without its barrier; those
     * keep what they receive until it comes. */
    int rc = go_unaligned(g, n, (int)ch);
    c->barrier = n;
    if (rc)
        return rc;
    *b = e.u.barrier;
    b->flags |= CK_BARRIER_UNALIGNED;
    return 1;
}

ck_wbuf *ck_gate_uc_take(ck_gate *g)
{
    ck_wbuf *st = g->uc_state;
    g->uc_state = NULL;
    g->uc_id = 0;
    g->uc_pending = 0;
    return st;
}

void ck_gate_uc_cancel(ck_gate *g, uint64_t id)
{
    if (g->uc_id && g->uc_id == id) {
        uc_abandon(g);
        g->uc_abandoned = 0; /* the task knows */
    }
}

void ck_gate_replay_filter(ck_gate *g, ck_kgr kgr, int maxp)
{
    g->rf_kgr = kgr;
    g->rf_maxp = maxp > 0 ? maxp : 0;
}

void ck_gate_replay_moved(ck_gate *g)
{
    g->rf_moved = 1;
}

int ck_gate_replay(ck_gate *g, uint32_t peer, const uint8_t *data, size_t len)
{
    uint32_t ch = g->rf_moved ? peer % (uint32_t)g->nchan : peer - g->first;
    if (ch >= (uint32_t)g->nchan || len == 0 || len > CK_WIRE_MAX_BODY)
        return CK_ECORRUPT;
    uint8_t *m = malloc((size_t)CK_WIRE_HDR + len);
    if (!m)
        return CK_ENOMEM;
    memcpy(m + CK_WIRE_HDR, data, len);
    ck_buf *b = ck_buf_wrap(m, (uint32_t)len);
    if (!b) {
        free(m);
        return CK_ENOMEM;
    }
    ck_bufq_push(&g->chans[ch].replay, b);
    g->replay_left++;
    g->held_bytes += len;
    avail_push(g, (int)ch);
    return CK_OK;
}

uint64_t ck_gate_bytes_consumed(const ck_gate *g)
{
    uint64_t n = g->bytes_read;
    for (int i = 0; i < g->nchan; i++)
        if (g->chans[i].cur)
            n += g->chans[i].reader.pos;
    return n;
}

/* ---- invariants (gate.h) ------------------------------------------------------------- */

#define CK_INV_MODULE "gate"

static uint64_t bufq_bytes(const ck_bufq *q)
{
    uint64_t n = 0;
    for (const ck_buf *b = q->head; b; b = b->next)
        n += b->len;
    return n;
}

static int check_chan(const ck_gate *g, int i, ck_inv *v)
{
    const ck_chan *c = &g->chans[i];
    CK_INV(v, 1, c->owned == g->exclusive + c->floating,
           "channel %d: owns %u buffers, %u exclusive + %u floating", i, c->owned, g->exclusive,
           c->floating);
    CK_INV(v, 2, (uint64_t)c->outstanding + c->unannounced + held(c) <= c->owned,
           "channel %d: %u outstanding + %u unannounced + %u held > %u owned", i, c->outstanding,
           c->unannounced, held(c), c->owned);
    CK_INV(v, 3, (uint64_t)c->next_seq == c->bufs_in,
           "channel %d: next sequence number %u after %llu buffers", i, c->next_seq,
           (unsigned long long)c->bufs_in);
    CK_INV(v, 4, c->ended || !c->unannounced || ck_bitset_has(&g->announce, i),
           "channel %d: %u credits to announce, not in the announce set", i, c->unannounced);
    CK_INV(v, 8,
           c->in_avail || c->blocked || (!c->cur && !c->queue.n && !c->replay.n),
           "channel %d: %u buffers queued, %u restored%s, yet not on the available ring", i,
           c->queue.n, c->replay.n, c->cur ? ", one being read" : "");
    CK_INV(v, 10,
           !c->blocked || (c->rec_held && g->rec_left > 0) ||
               (g->align_id && g->exactly_once && c->barrier >= g->align_id),
           "channel %d: blocked with barrier %llu delivered, aligning %llu%s%s", i,
           (unsigned long long)c->barrier, (unsigned long long)g->align_id,
           g->exactly_once ? "" : " at least once", c->rec_held ? ", held for recovery" : "");
    CK_INV(v, 11, !c->spilling || (g->uc_id && g->uc_state && !c->ended),
           "channel %d: spilling%s while collecting checkpoint %llu", i,
           c->ended ? " after its end" : "", (unsigned long long)g->uc_id);
    return 0;
}

int ck_gate_check(const ck_gate *g, ck_inv *v)
{
    uint64_t floating = 0, bytes = 0;
    int ended = 0, in_avail = 0, waiting = 0, spilling = 0, have = 0, unheld = 0;
    uint64_t replay = 0;
    int64_t wm = CK_WM_MAX;
    int at_wm = 0;
    for (int i = 0; i < g->nchan; i++) {
        const ck_chan *c = &g->chans[i];
        int rc = check_chan(g, i, v);
        if (rc)
            return rc;
        floating += c->floating;
        bytes += bufq_bytes(&c->queue) + bufq_bytes(&c->replay) + (c->cur ? c->cur->len : 0);
        ended += c->ended;
        in_avail += c->in_avail;
        waiting += c->waiting;
        spilling += c->spilling;
        replay += c->replay.n + c->cur_replay;
        if (!c->ended) {
            unheld += !c->rec_held;
            have += g->align_id && c->barrier >= g->align_id;
            if (c->wm < wm) {
                wm = c->wm;
                at_wm = 1;
            } else if (c->wm == wm) {
                at_wm++;
            }
        }
    }
    ck_inv bv;
    if (ck_bitset_check(&g->announce, &bv))
        return ck_inv_fail(v, CK_INV_MODULE, 4, "announce set: %s", bv.what);
    CK_INV(v, 5, g->pool_free + floating == g->floating,
           "%u floating buffers in the pool + %llu lent != %u", g->pool_free,
           (unsigned long long)floating, g->floating);
    CK_INV(v, 6, ended == g->nended && (!g->eop_delivered || ended == g->nchan),
           "%d channels ended, counted %d of %d%s", ended, g->nended, g->nchan,
           g->eop_delivered ? ", END_OF_PARTITION delivered" : "");
    CK_INV(v, 7, bytes == g->held_bytes, "holds %llu payload bytes, counted %llu",
           (unsigned long long)bytes, (unsigned long long)g->held_bytes);
    CK_INV(v, 8,
           g->avail_n == in_avail && g->avail_n <= g->nchan && g->wait_n == waiting &&
               g->wait_n <= g->nchan,
           "available ring of %d, %d channels marked; waiters %d, %d marked", g->avail_n,
           in_avail, g->wait_n, waiting);
    for (int k = 0; k < g->avail_n; k++) {
        int i = g->avail[(g->avail_head + k) % g->nchan];
        CK_INV(v, 8, i >= 0 && i < g->nchan && g->chans[i].in_avail,
               "available ring entry %d: channel %d not marked", k, i);
    }
    for (int k = 0; k < g->wait_n; k++) {
        int i = g->waiters[(g->wait_head + k) % g->nchan];
        CK_INV(v, 8, i >= 0 && i < g->nchan && g->chans[i].waiting,
               "waiters ring entry %d: channel %d not marked", k, i);
    }
    CK_INV(v, 9, g->wm_min == wm && (wm == CK_WM_MAX || g->wm_min_n == at_wm),
           "lowest open watermark %lld at %d channels, kept as %lld at %d", (long long)wm, at_wm,
           (long long)g->wm_min, g->wm_min_n);
    CK_INV(v, 10, !g->align_id || (g->align_id > g->done_id && g->align_have == have),
           "aligning %llu (done %llu): %d channels counted aligned, %d delivered it",
           (unsigned long long)g->align_id, (unsigned long long)g->done_id, g->align_have, have);
    CK_INV(v, 10, g->rec_left <= 0 || g->rec_left == unheld,
           "%d channels' recovered markers to come, %d open channels not held", g->rec_left,
           unheld);
    CK_INV(v, 11, g->uc_pending == spilling, "%d channels spilling, counted %d", spilling,
           g->uc_pending);
    CK_INV(v, 12, g->replay_left == replay, "%llu restored buffers unread, counted %u",
           (unsigned long long)replay, g->replay_left);
    return 0;
}
