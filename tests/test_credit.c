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

#include "error.h"
#include "fakeplat.h"
#include "gate.h"
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
} rig;

static void rig_init(rig *r, uint32_t segment)
{
    memset(r, 0, sizeof(*r));
    ck_rp_config cfg = {.segment_size = segment, .buffers_per_channel = 2,
                        .floating_per_gate = 8, .max_per_channel = 10, .max_overdraft = 5};
    uint32_t consumer = EP_CONSUMER;
    for (int i = 0; i < NPROD; i++) {
        fake_init(&r->pplat[i], &r->w, EP_PROD0 + (uint32_t)i);
        assert_int_equal(ck_rp_init(&r->rp[i], &r->pplat[i].plat, 1, (uint32_t)i, 1, &consumer, &cfg), 0);
    }
    fake_init(&r->cplat, &r->w, EP_CONSUMER);
    uint32_t eps[NPROD] = {EP_PROD0, EP_PROD0 + 1};
    assert_int_equal(ck_gate_init(&r->gate, &r->cplat.plat, 1, 0, NPROD, eps, 2, 8), 0);
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
            /* Refused (CK_EPROTO) if it came without credit or out of order. */
            assert_int_equal(ck_gate_on_data(&r->gate, &h, m->data), 0);
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
        /* Never more buffers than the pool plus the overdraft. */
        assert_true(q <= r->rp[i].pool_size + r->rp[i].max_overdraft);
    }
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
    ck_gate_announce(&r->gate);
}

static void rig_free(rig *r)
{
    for (int i = 0; i < NPROD; i++)
        ck_rp_free(&r->rp[i]);
    ck_gate_free(&r->gate);
    fake_clear(&r->w);
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
        ck_rp_emit(&r.rp[0], 0, &e);
    ck_rp_flush(&r.rp[0]);
    ck_rp_send(&r.rp[0]);
    assert_int_equal(r.w.nmsgs, 0);
    rig_free(&r);
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
            ck_rp_emit(&r.rp[p], 0, &e);
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
    ck_rp_emit(&r.rp[0], 0, &eop);
    ck_rp_send(&r.rp[0]);
    deliver(&r);
    ck_elem e;
    int released;
    assert_int_equal(ck_gate_next(&r.gate, &e, &released), 1);
    assert_int_equal(e.tag, CK_EL_WATERMARK);
    assert_true(e.u.wm == 300);
    rig_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_consumer),
        cmocka_unit_test(test_data_without_credit_refused),
        cmocka_unit_test(test_watermark_min_over_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
