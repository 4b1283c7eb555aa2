/*
 * test_task.c - a subtask driven by hand through its node interface: a
 * restore with input channel state (the task runs only once it has read
 * it), and priority events between records (a step ends within a short
 * span of simulated time, so that a barrier or a trigger never waits
 * behind a long batch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "error.h"
#include "fakeplat.h"
#include "gate.h"
#include "graph.h"
#include "snapshot.h"
#include "task.h"

/* src(1) -> map(1) -> out(1): the map behind a rebalance edge (unaligned
 * checkpoints may overtake data on it), the sink chained to it. */
static void build(ck_graph *g, ck_config *cfg, double map_flops)
{
    ck_config_defaults(cfg);
    cfg->v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    cfg->v[CK_CFG_CP_UNALIGNED] = 1;
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "map", .kind = CK_OP_MAP, .parallelism = 1, .input = 0,
                               .ship = CK_SHIP_REBALANCE, .cpu_flops = map_flops};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 1, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
    assert_int_equal(g->nv, 2); /* map and sink chained */
}

/* n records encoded one after another: channel state as a gate keeps it. */
static uint8_t *records(int n, size_t *len)
{
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "k";
    e.u.rec.klen = 1;
    size_t one = ck_elem_size(&e);
    uint8_t *p = malloc(one * (size_t)n);
    assert_non_null(p);
    for (int i = 0; i < n; i++) {
        e.u.rec.ts = i;
        e.u.rec.value = i;
        ck_elem_encode(p + one * (size_t)i, &e);
    }
    *len = one * (size_t)n;
    return p;
}

/* The state file of checkpoint `id` for the map's subtask: its sink's
 * transactions and, in front of its input channel, `n` records an
 * unaligned barrier overtook (none: no channel state); as an inline
 * handle in hs. */
static void map_snapshot(const ck_graph *g, uint64_t id, int n, ck_handles *hs)
{
    ck_capture cap = {.checkpoint_id = id, .vertex = 1, .subtask = 0, .parallelism = 1};
    cap.nsinks = 1;
    cap.sinks[0] = (ck_sink_capture){.op = 2, .open_txn = 7};
    if (n > 0) {
        cap.nchans = 1;
        cap.chans = calloc(1, sizeof(*cap.chans));
        assert_non_null(cap.chans);
        cap.chans[0].edge = (uint16_t)g->e[g->v[1].in_edge].id;
        cap.chans[0].data = records(n, &cap.chans[0].len);
    }
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(&cap, &file, &len), 0);
    ck_capture_free(&cap);
    assert_int_equal(ck_handles_add(hs, CK_HANDLE_SNAPSHOT, 0, "checkpoints/test-job/chk-3/v1-0.state",
                                    len, ck_get_u32(file + len - 4), 0, 0),
                     0);
    assert_int_equal(ck_handles_inline_last(hs, file, len), 0);
}

/* What the task sent so far, by type (messages freed). */
typedef struct sent {
    int running, credits, declines, acks, failed, decline_reason;
    uint64_t running_channel_ns; /* TASK_RUNNING's time reading channel state */
} sent;

static void take_sent(fake_world *w, sent *s)
{
    fake_msg *m;
    while ((m = fake_pop(w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        switch (h.type) {
        case CK_MSG_TASK_RUNNING:
            assert_int_equal(h.len, CK_RUNNING_BODY);
            s->running++;
            s->running_channel_ns = ck_get_u64(m->data + CK_WIRE_HDR + 24);
            break;
        case CK_MSG_CREDIT:
            s->credits++;
            break;
        case CK_MSG_CP_DECLINE:
            s->declines++;
            s->decline_reason = (int)ck_get_u32(m->data + CK_WIRE_HDR + 8);
            break;
        case CK_MSG_CP_ACK:
            s->acks++;
            break;
        case CK_MSG_TASK_FAILED:
            s->failed++;
            break;
        }
        free(m->data);
        free(m);
    }
}

/* An unaligned barrier of checkpoint id from producer 0, as an EVENT. */
static int send_event(ck_node node, const ck_graph *g, uint32_t attempt, uint64_t id)
{
    ck_elem e = {.tag = CK_EL_BARRIER};
    e.u.barrier.id = id;
    e.u.barrier.flags = CK_BARRIER_UNALIGNED;
    size_t bl = ck_elem_size(&e);
    uint8_t *m = malloc(CK_WIRE_HDR + bl);
    assert_non_null(m);
    ck_wire_hdr h = {.type = CK_MSG_EVENT, .edge = (uint16_t)g->e[g->v[1].in_edge].id,
                     .src = 0, .dst = 0, .epoch = attempt, .len = (uint32_t)bl};
    ck_wire_encode(m, &h);
    ck_elem_encode(m + CK_WIRE_HDR, &e);
    return node.ops->on_message(node.self, m, CK_WIRE_HDR + bl);
}

/* A checkpoint trigger from the job manager. */
static int send_trigger(ck_node node, uint32_t dst, uint32_t attempt, uint64_t id)
{
    uint8_t body[20] = {0};
    ck_put_u64(body, id);
    size_t n;
    uint8_t *m = ck_wire_msg(CK_MSG_CP_TRIGGER, CK_EP_JM, dst, attempt, body, sizeof(body), &n);
    assert_non_null(m);
    return node.ops->on_message(node.self, m, n);
}

/*
 * Flink's StreamTask.restoreInternal: a task restored with input channel
 * state runs its mailbox until every gate consumed that state, and only
 * then is RUNNING; its partitions are requested (here: credit announced)
 * only then, and no checkpoint starts before. The map restores 40 records
 * of channel state that cost 1 ms each: it processes them over several
 * steps, says nothing of running meanwhile, declines a trigger and an
 * unaligned barrier, and once the last is read reports running, with the
 * time it took, and announces its credit.
 */
static void test_restore_reads_channel_state_before_running(void **state)
{
    (void)state;
    enum { N = 40 };
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, 1e6);
    ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
    ck_handles hs = {0};
    map_snapshot(&g, 3, N, &hs);
    ck_restore_point from = {.id = 3, .handles = &hs};
    snprintf(from.dir, sizeof(from.dir), "checkpoints/test-job/chk-3");
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, ck_graph_endpoint(&g, 1, 1, 0));
    ck_task *t = ck_task_new(&env, &fp.plat, 1, 1, &from);
    ck_handles_free(&hs);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    const ck_metrics *met = ck_task_metrics(t);
    sent s = {0};

    /* The state file comes with the deployment; its loading is charged
     * beside the task, whose end starts it. */
    assert_int_equal(node.ops->work(node.self), 0);
    assert_int_equal(w.bgs, 1);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RESTORING);
    w.now = 1 * CK_NS_PER_MS;
    assert_int_equal(node.ops->on_complete(node.self, w.bg_token, CK_OK, NULL, 0), 0);
    ck_time started = w.now;

    int steps = 0, declined_at = -1;
    while (!s.running) {
        assert_true(steps < 10 * N);
        w.now += CK_NS_PER_MS;
        node.ops->work(node.self);
        take_sent(&w, &s);
        steps++;
        if (!s.running) {
            /* still reading what it restored: no credit yet */
            assert_int_equal(s.credits, 0);
        } else {
            /* it runs once the last record is read, and its credit
             * follows in the same step */
            assert_int_equal(met->task.records_in, N);
            assert_true(s.credits > 0);
        }
        if (declined_at < 0 && met->task.records_in >= N / 4) {
            /* a trigger and an unaligned barrier are declined, not taken */
            assert_int_equal(s.running, 0);
            assert_int_equal(send_trigger(node, ck_graph_endpoint(&g, 1, 1, 0), 1, 4), 0);
            take_sent(&w, &s);
            assert_int_equal(s.declines, 1);
            assert_int_equal(s.decline_reason, CK_DECLINE_NOT_READY);
            assert_int_equal(send_event(node, &g, 1, 4), 0);
            take_sent(&w, &s);
            assert_int_equal(s.declines, 2);
            assert_int_equal(s.decline_reason, CK_DECLINE_NOT_READY);
            declined_at = steps;
        }
    }
    assert_true(declined_at > 0);
    assert_true(steps > 2); /* the records took several steps */
    assert_int_equal(s.running_channel_ns, (uint64_t)(w.now - started));
    assert_int_equal(s.acks, 0);
    assert_int_equal(s.failed, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    /* Every restored record went through the map to the sink. */
    assert_true(w.out_len > 0);
    ck_task_del(t);
    fake_clear(&w);
}

/* Without channel state a restored task runs as soon as its state is
 * loaded, credit announced in the same step. */
static void test_restore_without_channel_state_runs_at_once(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, 1e6);
    ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
    ck_handles hs = {0};
    map_snapshot(&g, 3, 0, &hs);
    ck_restore_point from = {.id = 3, .handles = &hs};
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, ck_graph_endpoint(&g, 1, 1, 0));
    ck_task *t = ck_task_new(&env, &fp.plat, 1, 1, &from);
    ck_handles_free(&hs);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    sent s = {0};
    node.ops->work(node.self);
    assert_int_equal(node.ops->on_complete(node.self, w.bg_token, CK_OK, NULL, 0), 0);
    take_sent(&w, &s);
    assert_int_equal(s.running, 1);
    assert_int_equal(s.running_channel_ns, 0);
    node.ops->work(node.self);
    take_sent(&w, &s);
    assert_true(s.credits > 0);
    ck_task_del(t);
    fake_clear(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_reads_channel_state_before_running),
        cmocka_unit_test(test_restore_without_channel_state_runs_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
