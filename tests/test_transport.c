/*
 * test_transport.c - one connection's sending side as both backends shape
 * it (backend/transport.h): frames leave in order, a slow link's latency
 * delays what is queued under it but not what came before, pacing slices
 * the bytes at the link's rate, a broken connection loses what it held,
 * and what leaves together parses back (netframe.h) into the same frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "invcheck.h"
#include "netframe.h"
#include "transport.h"
#include "wire.h"

#define MS INT64_C(1000000)

/* An engine message of `body` bytes from endpoint src to dst, marked with tag. */
static uint8_t *message(uint32_t src, uint32_t dst, uint8_t tag, size_t body, size_t *len)
{
    uint8_t b[256];
    assert_true(body <= sizeof(b));
    memset(b, tag, body);
    uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, src, dst, 0, b, body, len);
    assert_non_null(m);
    return m;
}

static void put(ck_tp_out *o, uint8_t tag, ck_time now, ck_time lat, int64_t rate)
{
    size_t len;
    uint8_t *m = message(CK_EP_TM0, CK_EP_JM, tag, 40, &len);
    assert_int_equal(ck_tp_put(o, CK_EP_JM, CK_EP_TM0, m, len, now, lat, rate), CK_OK);
    free(m);
    assert_int_equal(ck_tp_check(o, NULL), 0);
}

/* The tags of the frames in bytes [from, to) of o, in order. */
static int tags(const ck_tp_out *o, size_t from, size_t to, uint8_t *out, int max)
{
    ck_netframe p;
    ck_netframe_init(&p, CK_NETFRAME_CAP);
    assert_int_equal(ck_netframe_feed(&p, o->buf + from, to - from), CK_OK);
    ck_netframe_msg f;
    int n = 0, rc;
    while ((rc = ck_netframe_next(&p, &f)) == 1) {
        assert_true(n < max);
        assert_int_equal(f.dst, CK_EP_JM);
        assert_int_equal(f.src, CK_EP_TM0);
        out[n++] = f.msg[CK_WIRE_HDR];
    }
    assert_int_equal(rc, 0);
    assert_int_equal(ck_netframe_pending(&p), 0); /* whole frames only */
    ck_netframe_free(&p);
    return n;
}

static void test_fifo_and_whole_frames(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    assert_int_equal(ck_tp_due(&o, 0, 0), 0);
    assert_int_equal(ck_tp_wake(&o, 0), CK_TIME_NEVER);
    for (uint8_t i = 1; i <= 5; i++)
        put(&o, i, 0, 0, 0);
    size_t end = ck_tp_due(&o, 0, 0);
    assert_int_equal(end, o.len); /* no fault: everything may leave at once */
    uint8_t t[8];
    assert_int_equal(tags(&o, o.off, end, t, 8), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(t[i], i + 1);
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_pending(&o), 0);
    assert_int_equal(ck_tp_wake(&o, 0), CK_TIME_NEVER);
    assert_int_equal(ck_tp_next(&o, 0), CK_TIME_NEVER);
    ck_tp_free(&o);
}

static void test_latency_delays_in_order(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    put(&o, 1, 0, 0, 0);          /* before the slow link: not held by it */
    put(&o, 2, 1 * MS, 50 * MS, 0); /* due at 51 ms */
    put(&o, 3, 2 * MS, 10 * MS, 0); /* would be due at 12 ms: waits behind 2 */
    put(&o, 4, 60 * MS, 0, 0);     /* the slow link healed: due at once, behind 3 */
    size_t end = ck_tp_due(&o, 2 * MS, 0);
    uint8_t t[8];
    assert_int_equal(tags(&o, o.off, end, t, 8), 1);
    assert_int_equal(t[0], 1);
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_wake(&o, 2 * MS), 51 * MS);
    assert_int_equal(ck_tp_next(&o, 2 * MS), 51 * MS);
    /* A loop whose clock ran past 51 ms before it asked what is due: the
     * bytes may leave now (ck_tp_wake says only that they wait for no
     * time; sockets slept 100 ms on that). */
    assert_int_equal(ck_tp_wake(&o, 70 * MS), CK_TIME_NEVER);
    assert_int_equal(ck_tp_next(&o, 70 * MS), 70 * MS);
    /* At 20 ms frame 3 is past its own time, but not frame 2's. */
    assert_int_equal(ck_tp_due(&o, 20 * MS, 0), o.off);
    assert_int_equal(ck_tp_wake(&o, 20 * MS), 51 * MS);
    end = ck_tp_due(&o, 51 * MS, 0);
    assert_int_equal(tags(&o, o.off, end, t, 8), 2);
    assert_int_equal(t[0], 2);
    assert_int_equal(t[1], 3);
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_wake(&o, 51 * MS), 60 * MS);
    end = ck_tp_due(&o, 60 * MS, 0);
    assert_int_equal(tags(&o, o.off, end, t, 8), 1);
    assert_int_equal(t[0], 4);
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_pending(&o), 0);
    ck_tp_free(&o);
}

static void test_partial_writes_keep_marks(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    /* Enough frames to make the buffer slide while marks are pending. */
    for (int i = 0; i < 3000; i++)
        put(&o, (uint8_t)(i % 250 + 1), 0, i < 1500 ? 0 : 5 * MS, 0);
    size_t end = ck_tp_due(&o, 0, 0);
    assert_true(end > o.off && end < o.len); /* the first half only */
    ck_tp_sent(&o, o.off + 7);               /* a socket took 7 bytes */
    assert_int_equal(ck_tp_wake(&o, 0), CK_TIME_NEVER); /* the rest of the half may go now */
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_wake(&o, 0), 5 * MS);
    put(&o, 1, 1 * MS, 0, 0); /* slides the buffer: the marks move with it */
    end = ck_tp_due(&o, 5 * MS, 0);
    assert_int_equal(end, o.len);
    uint8_t t[1600];
    assert_int_equal(tags(&o, o.off, end, t, 1600), 1501);
    assert_int_equal(t[0], 1500 % 250 + 1);
    assert_int_equal(t[1500], 1);
    ck_tp_free(&o);
}

/* A frame queued under a new latency, into a buffer that has to slide
 * (part of it sent, the rest not): the bytes before it may leave now, up
 * to it and no further, and never past what is queued. (The mark for
 * them once took its offset from before the slide: bytes of the delayed
 * frame left early, and past the queue's end, stale bytes; the peer saw
 * a malformed frame.) */
static void test_slide_under_new_latency(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    int n = 0;
    while (o.len + 64 <= CK_TP_FIRST) /* nearly full, no latency, no marks */
        put(&o, (uint8_t)(++n % 250 + 1), 0, 0, 0);
    size_t first = ck_tp_due(&o, 0, 0);
    assert_int_equal(first, o.len);
    size_t half = (n / 2) * (CK_TP_HDR + CK_WIRE_HDR + 40); /* whole frames */
    ck_tp_sent(&o, half);
    size_t before = o.len - o.off; /* what still waits, in front of the new frame */
    put(&o, 77, 1 * MS, 50 * MS, 0); /* slides, and is delayed */
    assert_int_equal(o.off, 0);
    size_t end = ck_tp_due(&o, 1 * MS, 0);
    assert_true(end <= o.len);
    assert_int_equal(end, before);
    uint8_t t[256];
    assert_int_equal(tags(&o, 0, end, t, 256), n - n / 2);
    ck_tp_sent(&o, end);
    assert_int_equal(ck_tp_wake(&o, 1 * MS), 51 * MS);
    end = ck_tp_due(&o, 51 * MS, 0);
    assert_int_equal(end, o.len);
    assert_int_equal(tags(&o, o.off, end, t, 256), 1);
    assert_int_equal(t[0], 77);
    ck_tp_free(&o);
}

static void test_pacing(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    const int64_t rate = 1000000; /* 1 MB/s: 10 000-byte slices every 10 ms */
    for (int i = 0; i < 1000; i++)
        put(&o, 1, 0, 0, rate);
    size_t total = ck_tp_pending(&o), sent = 0;
    ck_time now = 0;
    int slices = 0;
    while (ck_tp_pending(&o)) {
        size_t end = ck_tp_due(&o, now, rate);
        if (end > o.off) {
            assert_true(end - o.off <= 10000);
            sent += end - o.off;
            ck_tp_sent(&o, end);
            slices++;
        }
        ck_time t = ck_tp_wake(&o, now);
        if (ck_tp_pending(&o))
            assert_true(t > now && t != CK_TIME_NEVER);
        now = t == CK_TIME_NEVER ? now : t;
    }
    assert_int_equal(sent, total);
    /* total bytes at 1 MB/s: the last slice left about total/rate after the first */
    assert_true(slices >= (int)(total / 10000));
    assert_true(now >= (ck_time)((double)(total - 10000) * 1e9 / (double)rate));
    assert_true(now <= (ck_time)((double)total * 1e9 / (double)rate));
    ck_tp_free(&o);
}

static void test_reset_loses_what_waits(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    put(&o, 1, 0, 30 * MS, 0);
    put(&o, 2, 0, 0, 1000);
    ck_tp_reset(&o);
    assert_int_equal(ck_tp_pending(&o), 0);
    assert_int_equal(ck_tp_wake(&o, 0), CK_TIME_NEVER);
    put(&o, 3, 1 * MS, 0, 0); /* a new connection: no old latency or pace */
    size_t end = ck_tp_due(&o, 1 * MS, 0);
    assert_int_equal(end, o.len);
    uint8_t t[2];
    assert_int_equal(tags(&o, o.off, end, t, 2), 1);
    assert_int_equal(t[0], 3);
    ck_tp_free(&o);
}

/* The check function (transport.h): a connection with delayed frames
 * partly sent passes it; each numbered invariant, broken by one field,
 * fails with its number. */
static void test_invariants(void **state)
{
    (void)state;
    ck_tp_out o = {0};
    put(&o, 1, 0, 0, 0);
    put(&o, 2, 0, 5 * MS, 0);
    put(&o, 3, 1 * MS, 5 * MS, 0);
    put(&o, 4, 2 * MS, 1 * MS, 0); /* held behind the ones before it */
    size_t end = ck_tp_due(&o, 0, 0); /* the first frame only */
    assert_true(end > o.off && end < o.len);
    ck_tp_sent(&o, end - 10); /* a partial write */
    assert_int_equal(ck_tp_check(&o, NULL), 0);
    assert_true(o.mtail - o.mhead >= 3);
    INV_BREAK(o.off, o.len + 1, ck_tp_check(&o, &V), "transport", 1);
    INV_BREAK(o.len, o.cap + 1, ck_tp_check(&o, &V), "transport", 1);
    INV_BREAK(o.mhead, o.mtail + 1, ck_tp_check(&o, &V), "transport", 2);
    INV_BREAK(o.mtail, o.mcap + 1, ck_tp_check(&o, &V), "transport", 2);
    INV_BREAK(o.marks[o.mhead + 1].at, 0, ck_tp_check(&o, &V), "transport", 3);
    INV_BREAK(o.marks[o.mhead + 1].end, o.marks[o.mhead].end, ck_tp_check(&o, &V), "transport",
              3);
    INV_BREAK(o.marks[o.mtail - 1].end, o.len - 1, ck_tp_check(&o, &V), "transport", 3);
    INV_BREAK(o.marks[o.mhead].end, o.off, ck_tp_check(&o, &V), "transport", 3);
    ck_tp_sent(&o, ck_tp_due(&o, 10 * MS, 0));
    assert_int_equal(ck_tp_pending(&o), 0);
    assert_int_equal(ck_tp_check(&o, NULL), 0);
    ck_tp_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_whole_frames),
        cmocka_unit_test(test_latency_delays_in_order),
        cmocka_unit_test(test_partial_writes_keep_marks),
        cmocka_unit_test(test_slide_under_new_latency),
        cmocka_unit_test(test_pacing),
        cmocka_unit_test(test_reset_loses_what_waits),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
