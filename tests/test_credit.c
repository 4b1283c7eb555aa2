/*
 * test_credit.c - credit-based flow control between two producers and one
 * slow consumer, driven by hand: every message goes through the fake
 * platform and is delivered when the test says so.
 *
 * The consumer reads one buffer per round; the producers write as much as
 * their output lets them. The test checks that producers stop when they
 * run out of credit (backpressure), that no DATA ever arrives without a
 * credit (the gate would refuse it), that the buffers held on either side
 * stay bounded, that backlog earns a channel floating buffers, and that in
 * the end every record arrived exactly once and in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "debloat.h"
#include "error.h"
#include "fakeplat.h"
#include "gate.h"
#include "invcheck.h"
#include "partition.h"

enum { NPROD = 2, PER_PRODUCER = 20000, EP_CONSUMER = 10, EP_PROD0 = 20 };

typedef struct rig {
    fake_world w;
    fake_plat pplat[NPROD], cplat;
    ck_rp rp[NPROD];
    ck_gate gate;
    int64_t next_value[NPROD]; /* what each producer writes next */
    int64_t expect[NPROD];     /* what the consumer expects next from each */
    int ended[NPROD];
    int eop_seen;
    int bp_rounds;             /* rounds in which a producer was backpressured */
    uint32_t max_queued;       /* most buffers a producer held */
    uint32_t max_owned;        /* most buffers a channel owned */
    uint32_t max_data;         /* the largest DATA payload delivered */
    uint32_t segment;
    ck_segpool ppool, cpool;   /* the producers' host's network buffers, the consumer's */
} rig;

static void rig_init(rig *r, uint32_t segment)
{
    memset(r, 0, sizeof(*r));
    r->segment = segment;
    /* Two hosts, of exactly the segments their subtasks reserve (as
     * ck_task reserves them): a partition's share and overdraft, a gate's
     * exclusive and floating buffers. */
    ck_segpool_init(&r->ppool, segment, NPROD * (1 * 2 + 8 + 5));
    ck_segpool_init(&r->cpool, segment, NPROD * 2 + 8);
    ck_rp_config cfg = {.segment_size = segment, .buffers_per_channel = 2,
                        .floating_per_gate = 8, .max_per_channel = 10, .max_overdraft = 5,
                        .pool = &r->ppool};
    uint32_t consumer = EP_CONSUMER;
    for (int i = 0; i < NPROD; i++) {
        fake_init(&r->pplat[i], &r->w, EP_PROD0 + (uint32_t)i);
        assert_int_equal(ck_rp_init(&r->rp[i], &r->pplat[i].plat, 1, (uint32_t)i, 1, &consumer, &cfg), 0);
    }
    fake_init(&r->cplat, &r->w, EP_CONSUMER);
    uint32_t eps[NPROD] = {EP_PROD0, EP_PROD0 + 1};
    assert_int_equal(ck_gate_init(&r->gate, &r->cplat.plat, 1, 0, NPROD, eps, 2, 8), 0);
    r->gate.pool = &r->cpool;
}

/* Every segment handed out is a buffer one side holds; neither host ever
 * has more out than its pool holds. */
static void check_pools(const rig *r)
{
    uint32_t held = 0;
    for (int i = 0; i < NPROD; i++)
        held += r->rp[i].pool_used;
    assert_int_equal(r->ppool.used, held);
    assert_int_equal(r->cpool.used, ck_gate_queued(&r->gate));
    assert_true(r->ppool.peak <= r->ppool.total);
    assert_true(r->cpool.peak <= r->cpool.total);
    assert_int_equal(r->ppool.used + r->ppool.nfree + r->ppool.nfree_small,
                     r->ppool.allocated + r->ppool.allocated_small);
    /* Every invariant the modules number holds at every turn. */
    assert_int_equal(ck_segpool_check(&r->ppool, NULL), 0);
    assert_int_equal(ck_segpool_check(&r->cpool, NULL), 0);
    assert_int_equal(ck_gate_check(&r->gate, NULL), 0);
    for (int i = 0; i < NPROD; i++)
        assert_int_equal(ck_rp_check(&r->rp[i], NULL), 0);
    assert_int_equal(r->cpool.used + r->cpool.nfree + r->cpool.nfree_small,
                     r->cpool.allocated + r->cpool.allocated_small);
}

/* Delivers every message in flight. */
static void deliver(rig *r)
{
    fake_msg *m;
    while ((m = fake_pop(&r->w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DATA) {
            assert_int_equal(m->dst, EP_CONSUMER);
            if (h.len > r->max_data)
                r->max_data = h.len;
            /* Refused (CK_EPROTO) if it came without credit or out of order. */
            assert_int_equal(ck_gate_on_data(&r->gate, &h, m->data), 0);
        } else if (h.type == CK_MSG_BUFFER_SIZE) {
            assert_int_equal(m->dst, EP_PROD0 + h.src);
            assert_int_equal(ck_rp_set_buffer_size(&r->rp[h.src], (int)h.dst, h.arg), 0);
            free(m->data);
        } else {
            assert_int_equal(h.type, CK_MSG_CREDIT);
            assert_int_equal(m->dst, EP_PROD0 + h.src);
            assert_int_equal(ck_rp_on_credit(&r->rp[h.src], (int)h.dst, h.arg), 0);
            free(m->data);
        }
        free(m);
    }
}

/* Each producer writes until it is backpressured or done. */
static void produce(rig *r, int max_records)
{
    char key[8] = "k";
    for (int i = 0; i < NPROD; i++) {
        if (r->ended[i]) {
            ck_rp_send(&r->rp[i]); /* what is still queued goes out as credit comes */
            continue;
        }
        int n = 0;
        while (ck_rp_available(&r->rp[i]) && r->next_value[i] < PER_PRODUCER && n < max_records) {
            ck_elem e = {.tag = CK_EL_RECORD};
            e.u.rec.key = key;
            e.u.rec.klen = 1;
            e.u.rec.value = r->next_value[i]++;
            e.u.rec.ts = i;
            assert_int_equal(ck_rp_emit(&r->rp[i], 0, &e), 0);
            n++;
        }
        if (!ck_rp_available(&r->rp[i]))
            r->bp_rounds++;
        if (r->next_value[i] == PER_PRODUCER) {
            ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
            assert_int_equal(ck_rp_emit(&r->rp[i], 0, &eop), 0);
            r->ended[i] = 1;
        }
        ck_rp_flush(&r->rp[i]);
        ck_rp_send(&r->rp[i]);
        uint32_t q = r->rp[i].pool_used;
        if (q > r->max_queued)
            r->max_queued = q;
        /* Never more buffers than the pool plus the overdraft, nor more
         * bytes in flight than they hold. */
        assert_true(q <= r->rp[i].pool_size + r->rp[i].max_overdraft);
        assert_true(ck_rp_inflight(&r->rp[i]) <=
                    (uint64_t)(r->rp[i].pool_size + r->rp[i].max_overdraft) * r->segment);
    }
    check_pools(r);
}

/* The consumer reads up to `buffers` buffers. */
static void consume(rig *r, int buffers)
{
    ck_elem e;
    int released, done = 0, rc;
    while (done < buffers && (rc = ck_gate_next(&r->gate, &e, &released)) >= 0) {
        done += released;
        if (rc == 0)
            break;
        if (e.tag == CK_EL_RECORD) {
            int p = (int)e.u.rec.ts;
            assert_true(e.u.rec.value == r->expect[p]); /* in order, none lost, none twice */
            r->expect[p]++;
        } else if (e.tag == CK_EL_END_OF_PARTITION) {
            assert_false(r->eop_seen);
            r->eop_seen = 1;
        }
    }
    for (int c = 0; c < NPROD; c++) {
        const ck_chan *ch = &r->gate.chans[c];
        if (ch->owned > r->max_owned)
            r->max_owned = ch->owned;
        /* Credits granted never exceed the buffers the channel owns. */
        assert_true(ch->outstanding + ch->unannounced + ch->queue.n + (ch->cur ? 1u : 0u) <=
                    ch->owned);
    }
    /* The bytes in flight in the gate fit in the buffers it has. */
    assert_true(r->gate.held_bytes <=
                (uint64_t)(NPROD * r->gate.exclusive + r->gate.floating) * r->segment);
    check_pools(r);
    ck_gate_announce(&r->gate);
}

static void rig_free(rig *r)
{
    for (int i = 0; i < NPROD; i++)
        ck_rp_free(&r->rp[i]);
    ck_gate_free(&r->gate);
    fake_clear(&r->w);
    /* Every segment came back. */
    assert_int_equal(r->ppool.used, 0);
    assert_int_equal(r->cpool.used, 0);
    ck_segpool_free(&r->ppool);
    ck_segpool_free(&r->cpool);
}

static void test_slow_consumer(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1024);
    ck_gate_announce(&r.gate); /* initial credit */
    deliver(&r);
    /* Phase 1: the consumer reads one buffer per round: the producers stall. */
    for (int round = 0; round < 200; round++) {
        produce(&r, 1000000);
        deliver(&r);
        consume(&r, 1);
        deliver(&r);
    }
    assert_true(r.bp_rounds > 100);            /* producers were held back */
    assert_true(r.next_value[0] < PER_PRODUCER); /* ... and could not run ahead */
    assert_true(r.max_owned > 2);              /* backlog earned floating buffers */
    assert_true(r.max_owned <= 2 + 8);
    /* In flight: at most what the consumer owns plus what producers hold. */
    uint32_t held = ck_gate_queued(&r.gate);
    assert_true(held <= 2 * 2 + 8);
    /* Phase 2: the consumer catches up; everything drains. */
    for (int round = 0; round < 100000 && !r.eop_seen; round++) {
        produce(&r, 1000000);
        deliver(&r);
        consume(&r, 1000);
        deliver(&r);
    }
    assert_true(r.eop_seen);
    for (int i = 0; i < NPROD; i++) {
        assert_true(r.expect[i] == PER_PRODUCER);
        assert_true(ck_rp_drained(&r.rp[i]));
    }
    /* Thousands of buffers crossed, in segments recycled: no more were
     * ever allocated than were out at once. */
    uint64_t sent = r.rp[0].subs[0].bufs_sent + r.rp[1].subs[0].bufs_sent;
    assert_true(sent > 1000);
    assert_true(r.ppool.allocated <= r.ppool.peak && r.ppool.allocated_small <= r.ppool.peak &&
                r.ppool.peak <= r.ppool.total);
    assert_true(r.cpool.allocated <= r.cpool.peak && r.cpool.allocated_small <= r.cpool.peak &&
                r.cpool.peak <= r.cpool.total);
    rig_free(&r);
}

static void test_data_without_credit_refused(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1024);
    /* No credit announced: a producer that sends anyway is refused. */
    uint8_t *m = malloc(CK_WIRE_HDR + 8);
    ck_wire_hdr h = {.type = CK_MSG_DATA, .edge = 1, .src = 0, .dst = 0, .seq = 0, .len = 8};
    ck_wire_encode(m, &h);
    memset(m + CK_WIRE_HDR, 0, 8);
    assert_int_equal(ck_gate_on_data(&r.gate, &h, m), CK_EPROTO);
    /* Credit, then a gap in the sequence: refused too. */
    ck_gate_announce(&r.gate);
    fake_clear(&r.w);
    m = malloc(CK_WIRE_HDR + 8);
    h.seq = 1;
    ck_wire_encode(m, &h);
    assert_int_equal(ck_gate_on_data(&r.gate, &h, m), CK_EPROTO);
    /* More than a segment holds: no credited buffer could take it. */
    m = malloc(CK_WIRE_HDR + 2048);
    h.seq = 0;
    h.len = 2048;
    ck_wire_encode(m, &h);
    memset(m + CK_WIRE_HDR, 0, 2048);
    assert_int_equal(ck_gate_on_data(&r.gate, &h, m), CK_EPROTO);
    h.len = 8;
    /* A producer the gate does not know. */
    m = malloc(CK_WIRE_HDR + 8);
    h.seq = 0;
    h.src = 5;
    assert_int_equal(ck_gate_on_data(&r.gate, &h, m), CK_EPROTO);
    /* A producer never sends without credit either. */
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "k";
    e.u.rec.klen = 1;
    for (int i = 0; i < 100; i++)
        assert_int_equal(ck_rp_emit(&r.rp[0], 0, &e), 0);
    ck_rp_flush(&r.rp[0]);
    ck_rp_send(&r.rp[0]);
    assert_int_equal(r.w.nmsgs, 0);
    rig_free(&r);
}

/* Flink's BufferSizeEMA with 20 samples (alpha 2/21): a desired size of 0
 * shrinks a 32 KiB buffer by a tenth each time, a huge one grows it by at
 * most as much (capped at twice the size). The values are those of its
 * code, which keeps the average unrounded; the example in its comment
 * (29647, 26823, 24268, ...) rounds at every step. */
static void test_debloat_ema(void **state)
{
    (void)state;
    ck_debloat d;
    ck_debloat_init(&d, 32768, CK_DEBLOAT_MIN, CK_NS_PER_S, 20, 0);
    const uint32_t shrink[] = {29647, 26824, 24269, 21958, 19867};
    for (int i = 0; i < 5; i++)
        assert_int_equal(ck_debloat_update(&d, 0, 1), shrink[i]);
    const uint32_t grow[] = {21759, 23831, 26100, 28586, 31309, 32768};
    for (int i = 0; i < 6; i++)
        assert_int_equal(ck_debloat_update(&d, UINT64_C(1) << 40, 1), grow[i]);
    assert_int_equal(ck_debloat_update(&d, UINT64_C(1) << 40, 1), 0); /* at the bound, unchanged */

    /* With a 25 % threshold only changes of a quarter are announced: the
     * first is 24269 (8499 below 32768), then one at least 6067 below it. */
    ck_debloat_init(&d, 32768, CK_DEBLOAT_MIN, CK_NS_PER_S, 20, 25);
    assert_int_equal(ck_debloat_update(&d, 0, 1), 0);
    assert_int_equal(ck_debloat_update(&d, 0, 1), 0);
    assert_int_equal(ck_debloat_update(&d, 0, 1), 24269);
    uint32_t got = 0;
    int n = 0;
    while (!(got = ck_debloat_update(&d, 0, 1)))
        n++;
    assert_true(got <= 24269 - 24269 / 4);
    assert_true(n >= 1);
    /* Never below the minimum, which is announced even though close. */
    for (int i = 0; i < 200; i++)
        ck_debloat_update(&d, 0, 1);
    assert_int_equal(d.last, CK_DEBLOAT_MIN);

    /* The steady state: throughput x target over the buffers in use. 1 MB/s
     * for 100 ms over 10 buffers is 10 000 bytes. */
    ck_debloat_init(&d, 32768, CK_DEBLOAT_MIN, 100 * CK_NS_PER_MS, 1, 0); /* alpha 1: no smoothing */
    assert_int_equal(ck_debloat_update(&d, 1000000, 10), 10000);
    assert_int_equal(ck_debloat_throughput(500000, CK_NS_PER_S / 2, 7), 1000000);
    assert_int_equal(ck_debloat_throughput(500000, 0, 7), 7); /* no busy time: as before */
}

/* taskmanager.memory.min-segment-size: the floor the size debloats to,
 * announced once reached even when close to the last; raised to the
 * network's least buffer, and a segment no smaller than it. */
static void test_debloat_min_segment(void **state)
{
    (void)state;
    ck_debloat d;
    ck_debloat_init(&d, 32768, 4096, CK_NS_PER_S, 1, 25); /* alpha 1 */
    assert_int_equal(ck_debloat_update(&d, 1000, 1), 4096); /* wants 1000: the floor */
    for (int i = 0; i < 50; i++)
        assert_int_equal(ck_debloat_update(&d, 0, 1), 0); /* stays there */
    assert_int_equal(d.last, 4096);
    assert_int_equal(ck_debloat_update(&d, 5000, 1), 0); /* 22 % above: not announced */
    assert_int_equal(ck_debloat_update(&d, 6000, 1), 6000);
    ck_debloat_init(&d, 32768, 16, CK_NS_PER_S, 1, 0);
    assert_int_equal(d.min, CK_DEBLOAT_MIN);
    ck_debloat_init(&d, 1024, 4096, CK_NS_PER_S, 1, 0);
    assert_int_equal(d.max, 4096);
}

/* A gate's throughput (Flink's ThroughputCalculatorTest): the bytes read
 * over the time it was read, not the time it stood empty. */
static void test_gate_throughput(void **state)
{
    (void)state;
    const ck_time ms = CK_NS_PER_MS;
    ck_tput t;
    ck_tput_init(&t);
    /* 10 000 bytes over 100 ms of reading */
    ck_tput_add(&t, 6666, 0);
    ck_tput_add(&t, 3333, 1 * ms);
    ck_tput_add(&t, 1, 34 * ms);
    assert_int_equal(ck_tput_calc(&t, 100 * ms), 100000);
    /* Nothing measured since: the last throughput; then 1 ms of nothing. */
    assert_int_equal(ck_tput_calc(&t, 100 * ms), 100000);
    assert_int_equal(ck_tput_calc(&t, 101 * ms), 0);
    /* Idle time is not measured: 7 bytes, empty for 9 ms, 3 bytes, 1 ms. */
    ck_tput_init(&t);
    ck_tput_add(&t, 7, 0);
    ck_tput_pause(&t, 1 * ms);
    ck_tput_add(&t, 3, 10 * ms); /* resumes */
    assert_int_equal(ck_tput_calc(&t, 11 * ms), 5000);
    /* Calculated while empty: only the time before it emptied. */
    ck_tput_init(&t);
    ck_tput_add(&t, 10, 0);
    ck_tput_pause(&t, 1 * ms);
    assert_int_equal(ck_tput_calc(&t, 10 * ms), 10000);
    ck_tput_resume(&t, 20 * ms);
    ck_tput_resume(&t, 25 * ms); /* already running: from 20 ms */
    assert_int_equal(ck_tput_calc(&t, 30 * ms), 0);
    /* No time measured at all: the last throughput (none yet: 0). */
    ck_tput_init(&t);
    assert_int_equal(ck_tput_calc(&t, 5 * ms), 0);
}

/* A gate announces a buffer size: its producers cut their buffers at it. */
static void test_buffer_size_announced(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 4096);
    consume(&r, 0); /* initial credit */
    deliver(&r);
    produce(&r, 1000);
    deliver(&r);
    assert_true(r.max_data > 1024); /* full segments first */
    /* Drain what was cut at the segment size. */
    for (int round = 0; round < 100 && (r.rp[0].pool_used || r.rp[1].pool_used); round++) {
        consume(&r, 1000);
        deliver(&r);
        ck_rp_send(&r.rp[0]);
        ck_rp_send(&r.rp[1]);
        deliver(&r);
    }
    assert_int_equal(r.rp[0].pool_used + r.rp[1].pool_used, 0);
    assert_int_equal(ck_gate_announce_size(&r.gate, 512), 0);
    deliver(&r); /* credits and the new size reach the producers */
    r.max_data = 0;
    for (int round = 0; round < 20000 && !r.eop_seen; round++) {
        produce(&r, 200);
        deliver(&r);
        consume(&r, 3);
        deliver(&r);
    }
    assert_true(r.eop_seen);
    assert_true(r.max_data > 0 && r.max_data <= 512);
    /* Debloated buffers are segments used in part: as many segments, of
     * the same size, as before, fewer bytes in each. */
    assert_true(r.cpool.peak <= r.cpool.total);
    assert_int_equal(r.cpool.seg_size, 4096);
    for (int i = 0; i < NPROD; i++)
        assert_int_equal(r.expect[i], PER_PRODUCER);
    /* Sizes no consumer may announce are refused. */
    assert_int_equal(ck_rp_set_buffer_size(&r.rp[0], 0, 255), CK_EPROTO);
    assert_int_equal(ck_rp_set_buffer_size(&r.rp[0], 0, 8192), CK_EPROTO);
    assert_int_equal(ck_rp_set_buffer_size(&r.rp[0], 3, 512), CK_EPROTO);
    assert_int_equal(ck_rp_set_buffer_size(&r.rp[0], 0, 4096), 0);
    rig_free(&r);
}

/* A task manager's network buffer pool: sized by Flink's rule, reservations
 * refused beyond it, segments recycled. */
static void test_segpool(void **state)
{
    (void)state;
    ck_config cfg;
    ck_config_defaults(&cfg);
    /* 1280 mb x 0.1 = 128 mb, in 32 kb segments. */
    assert_int_equal(ck_segpool_segments(&cfg), 4096);
    cfg.v[CK_CFG_TM_FLINK_SIZE] = INT64_C(256) << 20; /* 25.6 mb: raised to the 64 mb min */
    assert_int_equal(ck_segpool_segments(&cfg), 2048);
    cfg.v[CK_CFG_TM_FLINK_SIZE] = INT64_C(64) << 30; /* 6.4 gb: no max by default (1.20) */
    assert_int_equal(ck_segpool_segments(&cfg), 209715);
    cfg.v[CK_CFG_NET_MAX] = INT64_C(1) << 30; /* cut to a 1 gb max */
    assert_int_equal(ck_segpool_segments(&cfg), 32768);
    cfg.v[CK_CFG_SEGMENT_SIZE] = 4096;
    assert_int_equal(ck_segpool_segments(&cfg), 262144);

    ck_segpool p;
    ck_segpool_init(&p, 1024, 10);
    assert_int_equal(ck_segpool_reserve(&p, 6), 0);
    assert_int_equal(ck_segpool_reserve(&p, 5), CK_ENOBUFS); /* 4 left */
    assert_int_equal(p.reserved, 6);
    assert_int_equal(ck_segpool_reserve(&p, 4), 0);
    ck_segpool_unreserve(&p, 6);
    assert_int_equal(ck_segpool_reserve(&p, 6), 0);
    assert_int_equal(p.reserved_peak, 10);
    void *a = ck_segpool_get(&p), *b = ck_segpool_get(&p);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(p.block_size >= 1024);
    memset(a, 0xab, p.block_size); /* the whole block is the holder's */
    ck_segpool_put(&p, a);
    assert_ptr_equal(ck_segpool_get(&p), a); /* recycled, not allocated again */
    assert_int_equal(p.allocated, 2);
    assert_int_equal(p.peak, 2);
    ck_segpool_put(&p, a);
    ck_segpool_put(&p, b);
    assert_int_equal(p.used, 0);
    assert_int_equal(p.nfree, 2);
    /* A small block counts as a segment; moved up to a whole one it keeps
     * its bytes and its count, and its small block is recycled. */
    uint8_t *sm = ck_segpool_get_small(&p);
    assert_non_null(sm);
    assert_true(p.small_size < p.block_size && p.small_size >= CK_SEGPOOL_SMALL);
    assert_int_equal(p.used, 1);
    memset(sm, 0x5c, p.small_size);
    uint8_t *up = ck_segpool_upgrade(&p, sm, 100);
    assert_non_null(up);
    assert_int_equal(up[0] == 0x5c && up[99] == 0x5c, 1);
    assert_int_equal(p.used, 1);
    assert_int_equal(p.nfree_small, 1);
    assert_int_equal(p.nfree, 1); /* a, taken from the free list */
    assert_ptr_equal(ck_segpool_get_small(&p), sm);
    ck_segpool_put_small(&p, sm);
    ck_segpool_put(&p, up);
    assert_int_equal(p.used, 0);
    assert_int_equal(p.nfree + p.nfree_small, p.allocated + p.allocated_small);
    ck_segpool_free(&p);
    assert_int_equal(p.nfree, 0);
    assert_int_equal(p.nfree_small, 0);

    /* A buffer sent leaves its segment on its host: the message is a copy
     * of its used bytes only. */
    ck_segpool_init(&p, 1024, 4);
    ck_buf *buf = ck_buf_new(&p, 512);
    assert_non_null(buf);
    assert_int_equal(buf->cap, 512);
    memcpy(ck_buf_data(buf), "abc", 3);
    buf->len = 3;
    uint8_t *m = ck_buf_to_msg(buf);
    assert_non_null(m);
    assert_memory_equal(m + CK_WIRE_HDR, "abc", 3);
    assert_int_equal(p.used, 0);
    free(m);
    ck_segpool_free(&p);
}

static void test_watermark_min_over_channels(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1024);
    ck_gate_announce(&r.gate);
    deliver(&r);
    int64_t wms[][2] = {{100, -1}, {-1, 50}, {200, -1}, {-1, 300}};
    int64_t want[] = {-1, 50, -1, 200}; /* what the gate hands up, -1 for nothing */
    for (int k = 0; k < 4; k++) {
        for (int p = 0; p < NPROD; p++) {
            if (wms[k][p] < 0)
                continue;
            ck_elem e = {.tag = CK_EL_WATERMARK};
            e.u.wm = wms[k][p];
            assert_int_equal(ck_rp_emit(&r.rp[p], 0, &e), 0);
            ck_rp_flush(&r.rp[p]);
            ck_rp_send(&r.rp[p]);
        }
        deliver(&r);
        ck_elem e;
        int released, rc, got = -1;
        while ((rc = ck_gate_next(&r.gate, &e, &released)) == 1) {
            assert_int_equal(e.tag, CK_EL_WATERMARK);
            got = (int)e.u.wm;
        }
        assert_int_equal(got, want[k]);
        ck_gate_announce(&r.gate);
        deliver(&r);
    }
    /* A channel that ends stops holding the watermark back. */
    ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
    assert_int_equal(ck_rp_emit(&r.rp[0], 0, &eop), 0);
    ck_rp_send(&r.rp[0]);
    deliver(&r);
    ck_elem e;
    int released;
    assert_int_equal(ck_gate_next(&r.gate, &e, &released), 1);
    assert_int_equal(e.tag, CK_EL_WATERMARK);
    assert_true(e.u.wm == 300);
    rig_free(&r);
}

/* The check functions of the network stack (gate.h, partition.h,
 * segpool.h, debloat.h, bitset.h): a rig mid-flow passes them; each
 * numbered invariant, broken by one field, fails with its number. */
static void test_invariants(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1024);
    for (int round = 0; round < 4; round++) {
        produce(&r, 200);
        deliver(&r);
        consume(&r, 1);
        deliver(&r);
    }
    produce(&r, 200);
    ck_gate *g = &r.gate;
    ck_chan *c = &g->chans[0];
    ck_rp *rp = &r.rp[0];
    ck_subpart *s = &rp->subs[0];
    /* Mid-flow: buffers queued on both sides, floating buffers lent. */
    assert_true(s->queue.n > 0 && s->credit == 0);
    assert_true(c->queue.n > 0 || c->cur);
    assert_true(g->pool_free < g->floating);
    assert_int_equal(ck_gate_check(g, NULL), 0);
    assert_int_equal(ck_rp_check(rp, NULL), 0);

    INV_BREAK(c->owned, c->owned + 1, ck_gate_check(g, &V), "gate", 1);
    INV_BREAK(c->outstanding, c->owned + 1, ck_gate_check(g, &V), "gate", 2);
    INV_BREAK(c->next_seq, c->next_seq + 1, ck_gate_check(g, &V), "gate", 3);
    INV_BREAK(g->announce.n, g->announce.n + 1, ck_gate_check(g, &V), "gate", 4);
    INV_BREAK(c->in_avail, 0, ck_gate_check(g, &V), "gate", 8);
    INV_BREAK(c->blocked, 1, ck_gate_check(g, &V), "gate", 10);
    INV_BREAK(c->spilling, 1, ck_gate_check(g, &V), "gate", 11);
    INV_BREAK(g->pool_free, g->pool_free + 1, ck_gate_check(g, &V), "gate", 5);
    INV_BREAK(g->nended, 1, ck_gate_check(g, &V), "gate", 6);
    INV_BREAK(g->held_bytes, g->held_bytes + 1, ck_gate_check(g, &V), "gate", 7);
    INV_BREAK(g->wait_n, g->wait_n + 1, ck_gate_check(g, &V), "gate", 8);
    INV_BREAK(g->wm_min, 5, ck_gate_check(g, &V), "gate", 9);
    g->align_id = 7; /* aligning checkpoint 7, no channel has its barrier yet: valid */
    assert_int_equal(ck_gate_check(g, NULL), 0);
    INV_BREAK(g->align_have, 1, ck_gate_check(g, &V), "gate", 10);
    g->align_id = 0;
    INV_BREAK(g->uc_pending, 1, ck_gate_check(g, &V), "gate", 11);

    INV_BREAK(s->credit, -1, ck_rp_check(rp, &V), "partition", 1);
    INV_BREAK(s->seq, s->seq + 1, ck_rp_check(rp, &V), "partition", 2);
    INV_BREAK(s->queue.n, s->queue.n + 1, ck_rp_check(rp, &V), "partition", 3);
    INV_BREAK(s->credit, 5, ck_rp_check(rp, &V), "partition", 6);
    INV_BREAK(s->buf_size, 100, ck_rp_check(rp, &V), "partition", 8);
    INV_BREAK(rp->pool_used, rp->pool_used + 1, ck_rp_check(rp, &V), "partition", 3);
    INV_BREAK(rp->nfull, rp->nfull + 1, ck_rp_check(rp, &V), "partition", 4);
    INV_BREAK(rp->ready.n, rp->ready.n + 1, ck_rp_check(rp, &V), "partition", 6);
    INV_BREAK(rp->nended, rp->nended + 1, ck_rp_check(rp, &V), "partition", 7);
    INV_BREAK(rp->queued_bytes, rp->queued_bytes + 1, ck_rp_check(rp, &V), "partition", 8);
    INV_BREAK(rp->bar_pending, 1, ck_rp_check(rp, &V), "partition", 9);
    INV_BREAK(s->bar_buf, (ck_buf *)&r, ck_rp_check(rp, &V), "partition", 9);

    ck_segpool *p = &r.ppool;
    INV_BREAK(p->reserved, p->total + 1, ck_segpool_check(p, &V), "segpool", 1);
    INV_BREAK(p->peak, p->used - 1, ck_segpool_check(p, &V), "segpool", 2);
    INV_BREAK(p->nfree, p->nfree + 1, ck_segpool_check(p, &V), "segpool", 3);
    INV_BREAK(p->block_size, p->block_size + 8, ck_segpool_check(p, &V), "segpool", 4);

    ck_debloat d;
    ck_debloat_init(&d, 32768, CK_DEBLOAT_MIN, 300 * CK_NS_PER_MS, 20, 25);
    (void)ck_debloat_update(&d, 1000000, 10);
    assert_int_equal(ck_debloat_check(&d, NULL), 0);
    INV_BREAK(d.last, 100, ck_debloat_check(&d, &V), "debloat", 1);
    INV_BREAK(d.ema, 1e9, ck_debloat_check(&d, &V), "debloat", 2);

    ck_bitset b;
    assert_int_equal(ck_bitset_init(&b, 130), 0);
    ck_bitset_add(&b, 3);
    ck_bitset_add(&b, 70);
    ck_bitset_add(&b, 129);
    assert_int_equal(ck_bitset_check(&b, NULL), 0);
    INV_BREAK(b.n, 2, ck_bitset_check(&b, &V), "bitset", 1);
    ck_bitset_free(&b);
    rig_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_consumer),
        cmocka_unit_test(test_data_without_credit_refused),
        cmocka_unit_test(test_watermark_min_over_channels),
        cmocka_unit_test(test_debloat_ema),
        cmocka_unit_test(test_debloat_min_segment),
        cmocka_unit_test(test_gate_throughput),
        cmocka_unit_test(test_buffer_size_announced),
        cmocka_unit_test(test_segpool),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
