/*
 * test_netframe.c - the socket backend's frame parser and frame admission
 * (backend/netframe.c), driven with byte buffers: frames split at every byte,
 * two in one read, oversized and malformed ones, the per-connection cap,
 * and frames whose source is not the peer that authenticated.
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
#include "routes.h"
#include "testgraph.h"
#include "wire.h"

/* A frame dst <- src carrying an engine message; returns its size. */
static size_t frame(uint8_t *out, uint32_t dst, uint32_t src, const ck_wire_hdr *h,
                    const uint8_t *body)
{
    ck_put_u32(out, 8 + CK_WIRE_HDR + h->len);
    ck_put_u32(out + 4, dst);
    ck_put_u32(out + 8, src);
    ck_wire_encode(out + CK_NETFRAME_HDR, h);
    if (body)
        memcpy(out + CK_NETFRAME_HDR + CK_WIRE_HDR, body, h->len);
    return CK_NETFRAME_HDR + CK_WIRE_HDR + h->len;
}

/* Two frames back to back: a heartbeat with no body, a DATA with 100 bytes. */
static size_t two_frames(uint8_t *buf)
{
    uint8_t body[100];
    for (int i = 0; i < 100; i++)
        body[i] = (uint8_t)(i * 7);
    ck_wire_hdr hb = {.type = CK_MSG_HEARTBEAT, .src = CK_EP_TM0 + 1, .dst = CK_EP_JM, .arg = 1};
    ck_wire_hdr d = {.type = CK_MSG_DATA, .edge = 0, .src = 1, .dst = 0, .len = 100};
    size_t n = frame(buf, CK_EP_JM, CK_EP_TM0 + 1, &hb, NULL);
    return n + frame(buf + n, 5000, 4099, &d, body);
}

static void check_two(const ck_netframe_msg *f)
{
    assert_int_equal(f[0].dst, CK_EP_JM);
    assert_int_equal(f[0].src, CK_EP_TM0 + 1);
    assert_int_equal(f[0].len, CK_WIRE_HDR);
    assert_int_equal(f[0].msg[0], CK_MSG_HEARTBEAT);
    assert_int_equal(f[1].dst, 5000);
    assert_int_equal(f[1].src, 4099);
    assert_int_equal(f[1].len, CK_WIRE_HDR + 100);
    assert_int_equal(f[1].msg[CK_WIRE_HDR + 99], (uint8_t)(99 * 7));
}

static void test_split_at_every_byte(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = two_frames(buf);
    for (size_t k = 0; k <= n; k++) {
        ck_netframe p;
        ck_netframe_init(&p, CK_NETFRAME_CAP);
        ck_netframe_msg got[2];
        uint8_t copy[2][256];
        int nf = 0;
        size_t cuts[2] = {k, n};
        size_t from = 0;
        for (int part = 0; part < 2; part++) {
            assert_int_equal(ck_netframe_feed(&p, buf + from, cuts[part] - from), 0);
            from = cuts[part];
            ck_netframe_msg f;
            int rc;
            while ((rc = ck_netframe_next(&p, &f)) == 1) {
                assert_true(nf < 2);
                /* msg is valid until the next call: keep a copy */
                memcpy(copy[nf], f.msg, f.len);
                got[nf] = f;
                got[nf].msg = copy[nf];
                nf++;
            }
            assert_int_equal(rc, 0);
        }
        assert_int_equal(nf, 2);
        check_two(got);
        assert_int_equal(ck_netframe_pending(&p), 0);
        ck_netframe_free(&p);
    }
}

static void test_two_frames_in_one_read(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = two_frames(buf);
    ck_netframe p;
    ck_netframe_init(&p, CK_NETFRAME_CAP);
    /* through the zero-copy path */
    uint8_t *space;
    size_t room;
    assert_int_equal(ck_netframe_reserve(&p, n, &space, &room), 0);
    assert_true(room >= n);
    memcpy(space, buf, n);
    ck_netframe_wrote(&p, n);
    ck_netframe_msg f[2];
    assert_int_equal(ck_netframe_next(&p, &f[0]), 1);
    uint8_t first[CK_WIRE_HDR];
    memcpy(first, f[0].msg, CK_WIRE_HDR);
    f[0].msg = first;
    assert_int_equal(ck_netframe_next(&p, &f[1]), 1);
    check_two(f);
    assert_int_equal(ck_netframe_next(&p, &f[0]), 0);
    ck_netframe_free(&p);
}

/* Feeds bytes and returns what the first ck_netframe_next says. */
static int parse(const uint8_t *b, size_t n)
{
    ck_netframe p;
    ck_netframe_init(&p, CK_NETFRAME_CAP);
    assert_int_equal(ck_netframe_feed(&p, b, n), 0);
    ck_netframe_msg f;
    int rc = ck_netframe_next(&p, &f);
    /* a failed parser stays failed */
    if (rc < 0)
        assert_int_equal(ck_netframe_next(&p, &f), rc);
    ck_netframe_free(&p);
    return rc;
}

static void test_oversized(void **state)
{
    (void)state;
    uint8_t b[64] = {0};
    /* refused from its length alone, before the body is waited for */
    ck_put_u32(b, (uint32_t)(CK_NETFRAME_MAX - 4 + 1));
    assert_int_equal(parse(b, 4), CK_ECORRUPT);
    ck_put_u32(b, 0xffffffffu);
    assert_int_equal(parse(b, 4), CK_ECORRUPT);
    /* the largest length is accepted: it waits for more */
    ck_wire_hdr h = {.type = CK_MSG_DATA, .len = CK_WIRE_MAX_BODY};
    frame(b, 5000, 4097, &h, NULL);
    assert_int_equal(parse(b, CK_NETFRAME_HDR + CK_WIRE_HDR), 0);

    /* The cap: a connection that sends more than it may hold is refused,
     * and nothing of the feed is kept. */
    ck_netframe p;
    ck_netframe_init(&p, 1000);
    uint8_t junk[600];
    memcpy(junk, b, CK_NETFRAME_HDR + CK_WIRE_HDR); /* the start of a huge frame */
    assert_int_equal(ck_netframe_feed(&p, junk, sizeof(junk)), 0);
    ck_netframe_msg f;
    assert_int_equal(ck_netframe_next(&p, &f), 0);
    assert_int_equal(ck_netframe_feed(&p, junk, sizeof(junk)), CK_ETOOBIG);
    assert_int_equal(ck_netframe_pending(&p), sizeof(junk));
    uint8_t *space;
    size_t room;
    assert_int_equal(ck_netframe_reserve(&p, 65536, &space, &room), 0);
    assert_int_equal(room, 1000 - sizeof(junk));
    ck_netframe_wrote(&p, room);
    assert_int_equal(ck_netframe_reserve(&p, 65536, &space, &room), 0);
    assert_int_equal(room, 0);
    ck_netframe_free(&p);
}

static void test_bad_header_fields(void **state)
{
    (void)state;
    uint8_t b[128];
    ck_wire_hdr h = {.type = CK_MSG_CREDIT, .arg = 1};
    size_t n = frame(b, 5000, 4097, &h, NULL);
    assert_int_equal(parse(b, n), 1);
    /* too short to hold a message header */
    ck_put_u32(b, 8 + CK_WIRE_HDR - 1);
    assert_int_equal(parse(b, n), CK_ECORRUPT);
    ck_put_u32(b, 0);
    assert_int_equal(parse(b, 4), CK_ECORRUPT);
    /* type 0, an unknown type, another version */
    int bad[][2] = {{0, 0}, {0, CK_MSG_TYPE_MAX + 1}, {1, CK_WIRE_VERSION + 1}, {1, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        frame(b, 5000, 4097, &h, NULL);
        b[CK_NETFRAME_HDR + bad[i][0]] = (uint8_t)bad[i][1];
        assert_int_equal(parse(b, n), CK_ECORRUPT);
    }
    /* the message's body length disagrees with the frame's */
    frame(b, 5000, 4097, &h, NULL);
    ck_put_u32(b + CK_NETFRAME_HDR + 24, 1);
    assert_int_equal(parse(b, n), CK_ECORRUPT);
    frame(b, 5000, 4097, &h, NULL);
    ck_put_u32(b, (uint32_t)(n - 4 + 10));
    assert_int_equal(parse(b, CK_NETFRAME_HDR + CK_WIRE_HDR), CK_ECORRUPT);
}

/* ---- admission ---------------------------------------------------------------------- */

/* source(2) => agg(2) -> sink(2): vertex 0 (subtasks 0, 1) feeds vertex 1
 * (2, 3) over edge 0. Two task managers and the job manager (host 2). */
static ck_graph g;

static void build(void)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    test_graph_keyed(&g, &cfg, 2);
    assert_int_equal(g.nsubtasks, 4);
    assert_int_equal(g.ne, 1);
}

/* Placement known for attempts 0 and 1: subtask i on host i % 2. */
static int hosts(void *ctx, uint32_t ep)
{
    (void)ctx;
    if (ep == CK_EP_JM)
        return 2;
    if (ep < CK_EP_TASK0)
        return ep - CK_EP_TM0 < 2 ? (int)(ep - CK_EP_TM0) : -1;
    uint32_t a, global;
    ck_ep_task_split(&g, ep, &a, &global);
    return a <= 1 ? (int)(global % 2) : -1;
}

static ck_netframe_verdict judge(int self, int peer, uint32_t dst, uint32_t src,
                                 const ck_wire_hdr *h)
{
    uint8_t b[256] = {0};
    size_t n = frame(b, dst, src, h, NULL);
    ck_netframe_msg f = {.dst = dst, .src = src, .msg = b + CK_NETFRAME_HDR,
                         .len = n - CK_NETFRAME_HDR};
    return ck_netframe_admit(&g, self, peer, hosts, NULL, 1, &f);
}

static void test_admit(void **state)
{
    (void)state;
    build();
    uint32_t src0 = ck_graph_endpoint(&g, 1, 0, 0), src1 = ck_graph_endpoint(&g, 1, 0, 1);
    uint32_t agg0 = ck_graph_endpoint(&g, 1, 1, 0), agg1 = ck_graph_endpoint(&g, 1, 1, 1);
    /* DATA from source 1 (host 1) to agg 0 (host 0) */
    ck_wire_hdr d = {.type = CK_MSG_DATA, .edge = 0, .src = 1, .dst = 0, .epoch = 1};
    assert_int_equal(judge(0, 1, agg0, src1, &d), CK_NETFRAME_DELIVER);
    /* the same frame over a connection where host 2 authenticated: spoofed */
    assert_int_equal(judge(0, 2, agg0, src1, &d), CK_NETFRAME_SPOOFED);
    /* the frame claims source 0, which lives on host 0, from host 1 */
    ck_wire_hdr d0 = d;
    d0.src = 0;
    assert_int_equal(judge(0, 1, agg0, src0, &d0), CK_NETFRAME_SPOOFED);
    /* the message names another producer than the frame */
    assert_int_equal(judge(0, 1, agg0, src1, &d0), CK_NETFRAME_BAD);
    /* another attempt in the message than in the frame */
    ck_wire_hdr old = d;
    old.epoch = 0;
    assert_int_equal(judge(0, 1, agg0, src1, &old), CK_NETFRAME_BAD);
    /* an unknown edge */
    ck_wire_hdr e9 = d;
    e9.edge = 9;
    assert_int_equal(judge(0, 1, agg0, src1, &e9), CK_NETFRAME_BAD);
    /* to agg 1, which lives on host 1, not here */
    ck_wire_hdr d1 = d;
    d1.dst = 1;
    assert_int_equal(judge(0, 1, agg1, src1, &d1), CK_NETFRAME_UNKNOWN);
    /* CREDIT goes back: from agg 0 (host 0) to source 1 (host 1) */
    ck_wire_hdr cr = {.type = CK_MSG_CREDIT, .edge = 0, .src = 1, .dst = 0, .arg = 2, .epoch = 1};
    assert_int_equal(judge(1, 0, src1, agg0, &cr), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(1, 2, src1, agg0, &cr), CK_NETFRAME_SPOOFED);
    /* BUFFER_SIZE goes back as CREDIT does, EVENT (a priority barrier)
     * forward as DATA does; either the wrong way is refused. */
    ck_wire_hdr bs = cr;
    bs.type = CK_MSG_BUFFER_SIZE;
    bs.arg = 512;
    assert_int_equal(judge(1, 0, src1, agg0, &bs), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(0, 1, agg0, src1, &bs), CK_NETFRAME_BAD);
    ck_wire_hdr ev = d;
    ev.type = CK_MSG_EVENT;
    assert_int_equal(judge(0, 1, agg0, src1, &ev), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(1, 0, src1, agg0, &ev), CK_NETFRAME_BAD);

    /* Attempt 2 is not placed here yet: its frames wait, whoever says
     * they sent them, and are judged again at deployment; attempt 0 is
     * known and older, so a frame for it that is not placed here goes. */
    uint32_t a2agg0 = ck_graph_endpoint(&g, 2, 1, 0), a2src1 = ck_graph_endpoint(&g, 2, 0, 1);
    ck_wire_hdr d2 = d;
    d2.epoch = 2;
    assert_int_equal(judge(0, 1, a2agg0, a2src1, &d2), CK_NETFRAME_HOLD);
    uint32_t a9agg0 = ck_graph_endpoint(&g, 0, 1, 0) + 1000 * g.nsubtasks;
    ck_wire_hdr d9 = d;
    d9.epoch = 1000;
    assert_int_equal(judge(0, 1, a9agg0, a2src1 + 998 * g.nsubtasks, &d9), CK_NETFRAME_HOLD);
    /* a task manager endpoint no host has */
    ck_wire_hdr hb = {.type = CK_MSG_HEARTBEAT, .src = CK_EP_JM, .dst = CK_EP_TM0 + 7};
    assert_int_equal(judge(0, 2, CK_EP_TM0 + 7, CK_EP_JM, &hb), CK_NETFRAME_UNKNOWN);

    /* The job manager's messages come from its host only. */
    ck_wire_hdr dep = {.type = CK_MSG_CANCEL, .src = CK_EP_JM, .dst = CK_EP_TM0};
    assert_int_equal(judge(0, 2, CK_EP_TM0, CK_EP_JM, &dep), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(0, 1, CK_EP_TM0, CK_EP_JM, &dep), CK_NETFRAME_SPOOFED);
    /* a task manager cannot pass its message off as the job manager's */
    ck_wire_hdr fake = dep;
    fake.src = CK_EP_JM;
    assert_int_equal(judge(0, 1, CK_EP_TM0, CK_EP_TM0 + 1, &fake), CK_NETFRAME_BAD);

    /* Heartbeats: task manager h as itself only. */
    ck_wire_hdr beat = {.type = CK_MSG_HEARTBEAT, .src = CK_EP_TM0 + 1, .dst = CK_EP_JM, .arg = 1};
    assert_int_equal(judge(2, 1, CK_EP_JM, CK_EP_TM0 + 1, &beat), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(2, 0, CK_EP_JM, CK_EP_TM0 + 1, &beat), CK_NETFRAME_SPOOFED);
    ck_wire_hdr beat0 = beat;
    beat0.arg = 0;
    assert_int_equal(judge(2, 1, CK_EP_JM, CK_EP_TM0 + 1, &beat0), CK_NETFRAME_BAD);

    /* A subtask's report: the subtask of the message's attempt. */
    ck_wire_hdr run = {.type = CK_MSG_TASK_RUNNING, .src = 3, .dst = CK_EP_JM, .epoch = 1};
    uint32_t g3 = ck_ep_task(&g, 1, 3);
    assert_int_equal(judge(2, 1, CK_EP_JM, g3, &run), CK_NETFRAME_DELIVER);
    assert_int_equal(judge(2, 0, CK_EP_JM, g3, &run), CK_NETFRAME_SPOOFED);
    ck_wire_hdr run2 = run;
    run2.src = 2; /* says it is subtask 2 (host 0) */
    assert_int_equal(judge(2, 1, CK_EP_JM, g3, &run2), CK_NETFRAME_BAD);

    /* A client's request never comes over a connection. */
    ck_wire_hdr sp = {.type = CK_MSG_SAVEPOINT, .src = CK_EP_CLIENT, .dst = CK_EP_JM, .arg = 1};
    assert_int_equal(judge(2, 0, CK_EP_JM, CK_EP_TM0, &sp), CK_NETFRAME_BAD);
    assert_int_equal(judge(2, 0, CK_EP_JM, CK_EP_CLIENT, &sp), CK_NETFRAME_BAD);

    /* a message that is not one */
    uint8_t junk[CK_WIRE_HDR] = {0};
    ck_netframe_msg f = {.dst = CK_EP_JM, .src = CK_EP_TM0, .msg = junk, .len = sizeof(junk)};
    assert_int_equal(ck_netframe_admit(&g, 2, 0, hosts, NULL, 1, &f), CK_NETFRAME_BAD);
}

/* The check functions of the parser (netframe.h) and of the route tables
 * (routes.h): a parser holding a frame and a half, and tables of two
 * attempts, pass them; each numbered invariant, broken by one field, fails
 * with its number. */
static void test_invariants(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t n = two_frames(buf);
    ck_netframe p;
    ck_netframe_init(&p, CK_NETFRAME_CAP);
    assert_int_equal(ck_netframe_parser_check(&p, NULL), 0);
    assert_int_equal(ck_netframe_feed(&p, buf, n - 10), 0);
    ck_netframe_msg f;
    assert_int_equal(ck_netframe_next(&p, &f), 1);
    assert_int_equal(ck_netframe_next(&p, &f), 0); /* the second waits for its last bytes */
    assert_int_equal(ck_netframe_parser_check(&p, NULL), 0);
    INV_BREAK(p.off, p.len + 1, ck_netframe_parser_check(&p, &V), "netframe", 1);
    INV_BREAK(p.size, p.cap + 1, ck_netframe_parser_check(&p, &V), "netframe", 1);
    INV_BREAK(p.buf[p.off], 0xff, ck_netframe_parser_check(&p, &V), "netframe", 2);
    INV_BREAK(p.err, CK_ENOMEM, ck_netframe_parser_check(&p, &V), "netframe", 3);
    ck_netframe_free(&p);

    ck_routes rt;
    ck_routes_init(&rt, 3);
    assert_int_equal(ck_routes_check(&rt, NULL), 0);
    uint16_t hosts[3] = {0, 1, CK_HOST_NONE};
    assert_int_equal(ck_routes_set(&rt, 0, 0, 3, hosts), 0);
    assert_int_equal(ck_routes_set(&rt, 2, 0, 3, hosts), 0);
    assert_int_equal(ck_routes_set(&rt, 2, 0, 3, hosts), 0); /* set once */
    assert_int_equal(ck_routes_check(&rt, NULL), 0);
    INV_BREAK(rt.v[1].attempt, 0, ck_routes_check(&rt, &V), "routes", 1);
    INV_BREAK(rt.newest, 1, ck_routes_check(&rt, &V), "routes", 2);
    ck_routes_free(&rt);
}

/* An attempt of a smaller generation (a rescale in) has a shorter table:
 * its generation is known by attempt, and an endpoint past its subtasks
 * routes nowhere; a table longer than the stride is refused. */
static void test_routes_generations(void **state)
{
    (void)state;
    ck_graph gr = {.nsubtasks = 3, .ep_stride = 5};
    ck_routes rt;
    ck_routes_init(&rt, 5);
    uint16_t big[5] = {0, 1, 1, 0, 1}, small[3] = {1, 0, 1}, huge[6] = {0};
    assert_int_equal(ck_routes_set(&rt, 0, 1, 5, big), 0);
    assert_int_equal(ck_routes_set(&rt, 1, 2, 3, small), 0);
    assert_int_equal(ck_routes_set(&rt, 2, 0, 6, huge), CK_EINVAL);
    assert_int_equal(ck_routes_gen(&rt, 0), 1);
    assert_int_equal(ck_routes_gen(&rt, 1), 2);
    assert_int_equal(ck_routes_gen(&rt, 2), -1);
    assert_int_equal(ck_routes_host(&rt, &gr, ck_ep_task(&gr, 0, 4)), 1);
    assert_int_equal(ck_routes_host(&rt, &gr, ck_ep_task(&gr, 1, 0)), 1);
    assert_int_equal(ck_routes_host(&rt, &gr, ck_ep_task(&gr, 1, 2)), 1);
    assert_int_equal(ck_routes_host(&rt, &gr, ck_ep_task(&gr, 1, 3)), -1); /* not in it */
    uint32_t a, sub;
    assert_true(ck_ep_task_split(&gr, ck_ep_task(&gr, 7, 4), &a, &sub));
    assert_int_equal(a, 7);
    assert_int_equal(sub, 4);
    ck_routes_free(&rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_generations),
        cmocka_unit_test(test_split_at_every_byte),
        cmocka_unit_test(test_two_frames_in_one_read),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_bad_header_fields),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
