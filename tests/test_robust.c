/*
 * test_robust.c - bad input never crashes: thousands of mutated scenario
 * files, and random or damaged frames fed to a subtask. Each must be
 * refused cleanly (a one-line error, or a failed task that reports to the
 * job manager), never crash. Run under valgrind or a sanitizer to see
 * memory errors too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "assign.h"
#include "error.h"
#include "fakeplat.h"
#include "invcheck.h"
#include "rng.h"
#include "scenario.h"
#include "task.h"
#include "taskmanager.h"
#include "testgraph.h"
#include "wire.h"

static const char *base =
    "{\"name\": \"r\", \"seed\": 3, \"cluster\": {\"taskmanagers\": 2},\n"
    " \"workload\": {\"duration\": \"2 s\", \"rate\": [{\"at\": 0, \"rate\": 1000}],"
    " \"bursts\": [{\"at\": \"1 s\", \"duration\": \"100 ms\", \"rate\": 5}], \"keys\": 10},\n"
    " \"job\": {\"operators\": [{\"type\": \"source\", \"parallelism\": 2, \"out_of_orderness\": 5},"
    " {\"type\": \"map\", \"fn\": \"scale\", \"factor\": 3, \"parallelism\": 2},"
    " {\"name\": \"w\", \"type\": \"window\", \"size\": \"1 s\", \"parallelism\": 2},"
    " {\"type\": \"sink\", \"parallelism\": 2}]},\n"
    " \"config\": {\"execution.buffer-timeout\": \"10 ms\", \"pipeline.max-parallelism\": 64},\n"
    " \"expect\": {\"records_out\": {\">\": 1}}}\n";

static void test_mutated_scenarios(void **state)
{
    (void)state;
    static ck_scenario sc;
    char err[1200];
    assert_int_equal(ck_scenario_parse(&sc, "r.json", base, err, sizeof(err)), 0);
    ck_scenario_free(&sc);
    ck_rng r;
    ck_rng_init(&r, 2024, 1);
    static const char alphabet[] = "{}[]\":,0123456789-.eE tfnaul\\x";
    size_t blen = strlen(base);
    int ok = 0, refused = 0;
    for (int i = 0; i < 5000; i++) {
        char text[2048];
        memcpy(text, base, blen + 1);
        size_t len = blen;
        int edits = 1 + (int)ck_rng_below(&r, 4);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)ck_rng_below(&r, len);
            switch (ck_rng_below(&r, 3)) {
            case 0: /* replace */
                text[at] = alphabet[ck_rng_below(&r, sizeof(alphabet) - 1)];
                break;
            case 1: /* delete */
                memmove(text + at, text + at + 1, len - at);
                len--;
                break;
            default: /* insert */
                if (len + 2 < sizeof(text)) {
                    memmove(text + at + 1, text + at, len - at + 1);
                    text[at] = alphabet[ck_rng_below(&r, sizeof(alphabet) - 1)];
                    len++;
                }
            }
        }
        err[0] = 0;
        int rc = ck_scenario_parse(&sc, "r.json", text, err, sizeof(err));
        if (rc == 0) {
            ok++;
            ck_scenario_free(&sc);
        } else {
            assert_int_equal(rc, CK_EINVAL);
            assert_true(strncmp(err, "r.json: ", 8) == 0); /* names the file */
            assert_null(strchr(err, '\n'));                  /* one line */
            refused++;
        }
    }
    assert_true(refused > 1000);
    assert_true(ok > 10);
}

/* source(2) => agg(2) -> sink(2): the test plays aggregate subtask 0. */
static void build(ck_graph *g, ck_config *cfg)
{
    ck_config_defaults(cfg);
    test_graph_keyed(g, cfg, 2);
}

static void test_random_frames(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    /* Checkpoints, unaligned, and debloating: EVENT and BUFFER_SIZE frames
     * reach the gate's and the partitions' checks. */
    cfg.v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    cfg.v[CK_CFG_CP_UNALIGNED] = 1;
    cfg.v[CK_CFG_DEBLOAT] = 1;
    ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
    ck_rng r;
    ck_rng_init(&r, 77, 2);
    int failed = 0, undecodable = 0;
    for (int round = 0; round < 400; round++) {
        fake_world w = {0};
        fake_plat fp;
        fake_init(&fp, &w, CK_EP_TASK0 + 2);
        ck_task *t = ck_task_new(&env, &fp.plat, 2, 0, NULL); /* agg subtask 0 */
        assert_non_null(t);
        ck_node n = ck_task_node(t);
        n.ops->work(n.self); /* announces initial credit */
        for (int k = 0; k < 20 && !n.ops->finished(n.self); k++) {
            size_t len = (size_t)ck_rng_below(&r, 300);
            uint8_t *m = malloc(len + CK_WIRE_HDR);
            for (size_t i = 0; i < len + CK_WIRE_HDR; i++)
                m[i] = (uint8_t)ck_rng_next(&r);
            if (ck_rng_below(&r, 2)) {
                /* A plausible header over a random body: DATA or an EVENT
                 * for this gate, a CREDIT or BUFFER_SIZE for its output. */
                static const uint8_t types[] = {CK_MSG_DATA, CK_MSG_DATA, CK_MSG_EVENT,
                                                CK_MSG_CREDIT, CK_MSG_BUFFER_SIZE};
                uint8_t type = types[ck_rng_below(&r, sizeof(types))];
                int back = type == CK_MSG_CREDIT || type == CK_MSG_BUFFER_SIZE;
                ck_wire_hdr h = {.type = type, .edge = (uint16_t)back,
                                 .src = (uint32_t)ck_rng_below(&r, 3), .dst = 0,
                                 .seq = (uint32_t)ck_rng_below(&r, 2), .arg = 0,
                                 .len = (uint32_t)len};
                ck_wire_encode(m, &h);
                len += CK_WIRE_HDR;
            } else {
                len += CK_WIRE_HDR - (size_t)ck_rng_below(&r, CK_WIRE_HDR);
            }
            /* The node's contract: 0, or a known error code and the task
             * failed; a frame whose header does not decode is refused. */
            ck_wire_hdr hh;
            int decodes = ck_wire_decode(m, len, &hh) == 0;
            int rc = n.ops->on_message(n.self, m, len);
            assert_true(rc <= 0);
            if (!decodes) {
                assert_true(rc < 0);
                undecodable++;
            }
            if (rc < 0) {
                assert_string_not_equal(ck_errname(rc), "CK_EUNKNOWN");
                assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
            }
            n.ops->work(n.self);
            assert_int_equal(ck_task_check(t, NULL), 0); /* a refused frame breaks nothing */
        }
        if (ck_task_get_state(t) == CK_TASK_FAILED) {
            failed++;
            /* A failed task tells the job manager why. */
            int reported = 0;
            fake_msg *msg;
            while ((msg = fake_pop(&w))) {
                ck_wire_hdr h;
                if (ck_wire_decode(msg->data, msg->len, &h) == 0 && h.type == CK_MSG_TASK_FAILED)
                    reported = msg->dst == CK_EP_JM;
                free(msg->data);
                free(msg);
            }
            assert_true(reported);
        }
        ck_task_del(t);
        fake_clear(&w);
    }
    assert_true(failed > 100);
    /* Headers that do not decode were tried often. */
    assert_true(undecodable > 100);
}

/* A task manager deploys what a DEPLOY names for it, and refuses one that
 * places a subtask on a host the cluster does not have: no routes set,
 * nothing deployed, a warning logged, the task manager still up. */
static void test_deploy_names_known_hosts(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, CK_EP_TM0 + 1);
    ck_tm tm;
    ck_tm_init(&tm, &fp.plat, &g, &cfg, 1, 2);
    ck_node n = ck_tm_node(&tm);
    uint16_t hosts[64];
    assert_true(g.nsubtasks <= 64);
    int mine = 0;
    for (uint32_t i = 0; i < g.nsubtasks; i++) {
        hosts[i] = (uint16_t)(i % 2);
        mine += hosts[i] == 1;
    }
    for (int bad = 0; bad <= 2; bad++) {
        /* 0: every host known; 1: host 2 of 2; 2: host 65534. */
        if (bad)
            hosts[g.nsubtasks - 1] = bad == 1 ? 2 : 0xfffe;
        size_t blen, len;
        uint8_t *body = ck_tm_deploy_body(1, 0, NULL, g.nsubtasks, hosts, NULL, NULL, 1, &blen);
        assert_non_null(body);
        uint8_t *m = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + 1, 1, body, blen, &len);
        free(body);
        assert_non_null(m);
        int routes = w.routes_set, deploys = w.deploys, logs = w.logs;
        assert_int_equal(n.ops->on_message(n.self, m, len), 0); /* the node stays up */
        if (!bad) {
            assert_int_equal(w.routes_set, routes + 1);
            assert_int_equal(w.deploys, deploys + mine);
            assert_int_equal(w.logs, logs);
        } else {
            assert_int_equal(w.routes_set, routes);
            assert_int_equal(w.deploys, deploys);
            assert_int_equal(w.logs, logs + 1);
        }
    }
    /* A region restart's deployment names no host for the subtasks it
     * leaves alone (CK_HOST_NONE): only the others start. */
    int now_mine = 0;
    for (uint32_t i = 0; i < g.nsubtasks; i++) {
        hosts[i] = i % 3 == 0 ? CK_HOST_NONE : (uint16_t)(i % 2);
        now_mine += hosts[i] == 1;
    }
    assert_true(g.nsubtasks > 3 && now_mine < mine); /* subtask 3 is left out */
    int routes = w.routes_set, deploys = w.deploys, logs = w.logs;
    size_t blen, len;
    uint8_t *body = ck_tm_deploy_body(2, 0, NULL, g.nsubtasks, hosts, NULL, NULL, 1, &blen);
    uint8_t *m = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + 1, 2, body, blen, &len);
    free(body);
    assert_int_equal(n.ops->on_message(n.self, m, len), 0);
    assert_int_equal(w.routes_set, routes + 1);
    assert_int_equal(w.deploys, deploys + now_mine);
    assert_int_equal(w.logs, logs);
    assert_int_equal(w.deployed_from, 0);
    /* Restoring, each subtask deployed here is handed its own state handles
     * (the body carries only this task manager's); a body whose handles do
     * not add up is refused whole. */
    ck_handles hs[64];
    const ck_handles *hp[64];
    memset(hs, 0, sizeof(hs));
    for (uint32_t i = 0; i < g.nsubtasks; i++) {
        char key[64];
        snprintf(key, sizeof(key), "checkpoints/j/chk-5/v0-%u.state", i);
        assert_int_equal(ck_handles_add(&hs[i], CK_HANDLE_SNAPSHOT, 0, key, 10, 1, CK_KGR_EMPTY),
                         0);
        hp[i] = &hs[i];
    }
    ck_restore_point from = {.id = 5, .flags = 0, .dir = "checkpoints/j/chk-5/"};
    uint32_t last = g.nsubtasks - 1; /* the last subtask deployed here */
    while (hosts[last] != 1)
        last--;
    for (int bad = 0; bad <= 2; bad++) {
        body = ck_tm_deploy_body(3, 0, &from, g.nsubtasks, hosts, hp, NULL, 1, &blen);
        assert_non_null(body);
        size_t other;
        uint8_t *o = ck_tm_deploy_body(3, 0, &from, g.nsubtasks, hosts, hp, NULL, 0, &other);
        assert_true(other != blen || memcmp(o, body, blen)); /* host 0's differs */
        free(o);
        if (bad == 1)
            blen--; /* truncated */
        if (bad == 2)
            ck_put_u32(body + blen - 20 - strlen(hs[last].v[0].key) - 4 - 4 - 4, 99); /* its index */
        m = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + 1, 3, body, blen, &len);
        free(body);
        routes = w.routes_set, deploys = w.deploys, logs = w.logs;
        assert_int_equal(n.ops->on_message(n.self, m, len), 0);
        if (!bad) {
            assert_int_equal(w.deploys, deploys + now_mine);
            assert_int_equal(w.deployed_from, 5);
            assert_int_equal(w.deployed_handles, 1);
            assert_string_equal(w.deployed_key, hs[last].v[0].key);
        } else {
            assert_int_equal(w.deploys, deploys);
            assert_int_equal(w.routes_set, routes);
            assert_int_equal(w.logs, logs + 1);
        }
    }
    /* Restoring another parallelism's state, each subtask is handed per
     * handle its take (the old subtask, what it takes, its key groups)
     * and the operator state dealt; a take or a chunk that cannot be is
     * refused with the whole body: nothing taken, unknown bits, an old
     * subtask past its parallelism, key groups without KEYED or past the
     * bound, a chunk of an operator the job lacks, a truncated body. */
    ck_restore_point pts[64];
    ck_restore_take tks[64];
    ck_restore_chunk chs[64];
    for (int bad = 0; bad <= 7; bad++) {
        for (uint32_t i = 0; i < g.nsubtasks; i++) {
            tks[i] = (ck_restore_take){.old_vertex = 0, .old_subtask = i % 2,
                                       .old_parallelism = 2, .what = 1 | 2, .kgr = {3, 9}};
            chs[i] = (ck_restore_chunk){.op = 0, .name = "splits", .old = 1, .first = 2, .n = 3};
            pts[i] = (ck_restore_point){.takes = &tks[i], .chunks = &chs[i], .nchunks = 1};
        }
        ck_restore_take *tb = &tks[last];
        if (bad == 1)
            tb->what = 0;
        if (bad == 2)
            tb->what |= CK_ASG_REROUTE << 1; /* past the last bit */
        if (bad == 3)
            tb->old_subtask = 2;
        if (bad == 4)
            tb->what = 2; /* key groups without KEYED */
        if (bad == 5)
            tb->kgr.end = 1 << 20;
        if (bad == 6)
            chs[last].op = (uint32_t)g.spec.nops;
        body = ck_tm_deploy_body_takes(4, 0, &from, g.nsubtasks, hosts, hp, NULL, pts, 1, &blen);
        assert_non_null(body);
        if (bad == 7)
            blen -= 3; /* truncated in its last chunk */
        m = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + 1, 4, body, blen, &len);
        free(body);
        routes = w.routes_set, deploys = w.deploys, logs = w.logs;
        assert_int_equal(n.ops->on_message(n.self, m, len), 0);
        if (!bad) {
            assert_int_equal(w.deploys, deploys + now_mine);
            assert_int_equal(w.deployed_from, 5);
            assert_string_equal(w.deployed_key, hs[last].v[0].key);
            assert_int_equal(w.deployed_take.old_subtask, last % 2);
            assert_int_equal(w.deployed_take.old_parallelism, 2);
            assert_int_equal(w.deployed_take.what, 3);
            assert_true(ck_kgr_equal(w.deployed_take.kgr, (ck_kgr){3, 9}));
            assert_int_equal(w.deployed_nchunks, 1);
            assert_string_equal(w.deployed_chunk.name, "splits");
            assert_int_equal(w.deployed_chunk.old, 1);
            assert_int_equal(w.deployed_chunk.first, 2);
            assert_int_equal(w.deployed_chunk.n, 3);
        } else {
            assert_int_equal(w.deploys, deploys);
            assert_int_equal(w.routes_set, routes);
            assert_int_equal(w.logs, logs + 1);
        }
    }
    for (uint32_t i = 0; i < g.nsubtasks; i++)
        ck_handles_free(&hs[i]);
    /* CANCEL names attempt and subtask pairs; a body of another length is
     * refused without stopping anything. */
    uint8_t cancel[4 + 16];
    ck_put_u32(cancel, 2);
    ck_put_u32(cancel + 4, 1);
    ck_put_u32(cancel + 8, 3);
    ck_put_u32(cancel + 12, 2);
    ck_put_u32(cancel + 16, 0);
    const size_t lens[] = {20, 16, 12, 4, 0};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        int undeploys = w.undeploys;
        logs = w.logs;
        m = ck_wire_msg(CK_MSG_CANCEL, CK_EP_JM, CK_EP_TM0 + 1, 2, cancel, lens[k], &len);
        assert_int_equal(n.ops->on_message(n.self, m, len), 0);
        if (lens[k] == sizeof(cancel)) {
            assert_int_equal(w.undeploys, undeploys + 2);
            assert_int_equal(w.undeployed[0], 2);
            assert_int_equal(w.undeployed[1], 0);
            assert_int_equal(w.logs, logs);
        } else {
            assert_int_equal(w.undeploys, undeploys);
            assert_int_equal(w.logs, logs + 1);
        }
    }
    fake_clear(&w);
}

/* A subtask's check (task.h): running, with time accounted and a report
 * sent, it passes; its time accounting broken, or its host's network
 * pool, it fails with the number, naming the subtask. */
static void test_task_invariants(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, CK_EP_TASK0 + 2);
    ck_segpool pool;
    ck_segpool_init(&pool, (uint32_t)ck_cfg(&cfg, CK_CFG_SEGMENT_SIZE), 1000);
    fp.plat.netpool = &pool;
    ck_task *t = ck_task_new(&env, &fp.plat, 2, 0, NULL); /* agg subtask 0 */
    assert_non_null(t);
    assert_int_equal(ck_task_check(t, NULL), 0);
    ck_node n = ck_task_node(t);
    for (ck_time now = 0; now <= 600 * CK_NS_PER_MS; now += 70 * CK_NS_PER_MS) {
        w.now = now;
        if (n.ops->deadline(n.self) <= now)
            n.ops->on_deadline(n.self); /* reports its metrics every 250 ms */
        n.ops->work(n.self);
        assert_int_equal(ck_task_check(t, NULL), 0);
    }
    w.now += 10 * CK_NS_PER_MS; /* idle since the last report */
    n.ops->work(n.self);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    ck_metrics *m = (ck_metrics *)ck_task_metrics(t);
    assert_true(m->task.idle_ns > 0);
    INV_BREAK(m->task.idle_ns, m->task.idle_ns + 1, ck_task_check(t, &V), "task", 2);
    INV_BREAK(m->task.start_ns, 700 * CK_NS_PER_MS, ck_task_check(t, &V), "task", 2);
    INV_BREAK(pool.reserved, pool.total + 1, ck_task_check(t, &V), "segpool", 1);
    ck_inv v;
    pool.used++;
    inv_broken(ck_task_check(t, &v), &v, "segpool", 2);
    assert_non_null(strstr(v.what, "subtask agg -> out 1/2 attempt 0 on tm0"));
    pool.used--;
    ck_task_del(t);
    fake_clear(&w);
    ck_segpool_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutated_scenarios),
        cmocka_unit_test(test_deploy_names_known_hosts),
        cmocka_unit_test(test_random_frames),
        cmocka_unit_test(test_task_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
