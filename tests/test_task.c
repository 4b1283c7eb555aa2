/*
 * test_task.c - a subtask driven by hand through its node interface: a
 * restore with input channel state (the task runs only once it has read
 * it), and priority events between records (a step ends within a short
 * span of simulated time, so that a barrier or a trigger never waits
 * behind a long batch), and the invariants of the task's machines
 * (task.h (6) to (9)), checked from the inside (task_impl.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assign.h"
#include "element.h"
#include "error.h"
#include "fakeplat.h"
#include "gate.h"
#include "graph.h"
#include "invcheck.h"
#include "keygroup.h"
#include "operator.h"
#include "snapshot.h"
#include "task.h"
#include "task_impl.h"
#include "testgraph.h"

/* src(1) -> map(1) -> out(1): the map behind a rebalance edge (unaligned
 * checkpoints, when on, may overtake data on it), the sink chained to it;
 * each operator's cost per record as given (the sink's: its external
 * system's time). */
static void build_costs(ck_graph *g, ck_config *cfg, int unaligned, double src_flops,
                        double map_flops, int64_t write_ns)
{
    ck_config_defaults(cfg);
    cfg->v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    cfg->v[CK_CFG_CP_UNALIGNED] = unaligned;
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1,
                               .cpu_flops = src_flops};
    spec.ops[1] = (ck_op_spec){.name = "map", .kind = CK_OP_MAP, .parallelism = 1, .input = 0,
                               .ship = CK_SHIP_REBALANCE, .cpu_flops = map_flops};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 1, .input = 1,
                               .write_ns = write_ns};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
    assert_int_equal(g->nv, 2); /* map and sink chained */
}

static void build(ck_graph *g, ck_config *cfg, double map_flops)
{
    build_costs(g, cfg, 1, 0, map_flops, 0);
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
    assert_int_equal(ck_handles_add(hs, CK_HANDLE_SNAPSHOT, 0,
                                    "checkpoints/test-job/chk-3/v1-0.state", len,
                                    ck_get_u32(file + len - 4), CK_KGR_EMPTY),
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
    const ck_elem e = {.tag = CK_EL_BARRIER,
                       .u.barrier = {.id = id, .flags = CK_BARRIER_UNALIGNED}};
    size_t bl = ck_elem_size(&e);
    uint8_t *m = malloc(CK_WIRE_HDR + bl);
    assert_non_null(m);
    ck_wire_hdr h = {.type = CK_MSG_EVENT, .edge = (uint16_t)g->e[g->v[1].in_edge].id,
                     .src = 0, .dst = 0, .epoch = attempt, .len = (uint32_t)bl};
    ck_wire_encode(m, &h);
    fake_encode_elem(m + CK_WIRE_HDR, &e);
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
    ck_restore_point from = {.id = 3, .handles = &hs, .old_vertex = 1, .old_parallelism = 1};
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
    ck_restore_point from = {.id = 3, .handles = &hs, .old_vertex = 1, .old_parallelism = 1};
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

/* ---- priority events between records ---------------------------------------- */

/* One partition of MANY records, all there at time 0. */
enum { MANY = 5000 };
static int many_np(const void *ctx)
{
    (void)ctx;
    return 1;
}
static int64_t many_size(const void *ctx, int p)
{
    (void)ctx;
    (void)p;
    return MANY;
}
static ck_time many_at(const void *ctx, int p, int64_t off)
{
    (void)ctx;
    (void)p;
    (void)off;
    return 0;
}
static void many_read(const void *ctx, int p, int64_t off, ck_rec *out)
{
    (void)ctx;
    (void)p;
    memset(out, 0, sizeof(*out));
    out->key = "k";
    out->klen = 1;
    out->ts = off;
}
static const ck_topic_ops many_ops = {many_np, many_size, many_at, many_read, NULL, NULL};

/* A source and the map behind it, attempt 0, the map's gate filled with as
 * much as its credit lets the source send. */
typedef struct pair {
    ck_graph g;
    ck_config cfg;
    ck_topic topic;
    ck_job_env env;
    fake_world ws, wm;
    fake_plat fs, fm;
    ck_task *src, *map;
    ck_node ns, nm;
} pair;

/* Hands every DATA or CREDIT message in from to the node it is for. */
static void deliver(fake_world *from, pair *p)
{
    fake_msg *m;
    while ((m = fake_pop(from))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DATA)
            assert_int_equal(p->nm.ops->on_message(p->nm.self, m->data, m->len), 0);
        else if (h.type == CK_MSG_CREDIT)
            assert_int_equal(p->ns.ops->on_message(p->ns.self, m->data, m->len), 0);
        else
            free(m->data);
        free(m);
    }
}

static void pair_init_slowed(pair *p, int unaligned, double src_flops, double map_flops,
                             int64_t write_ns, const ck_op_slowdown *slow, int nslow)
{
    memset(p, 0, sizeof(*p));
    build_costs(&p->g, &p->cfg, unaligned, src_flops, map_flops, write_ns);
    p->topic = (ck_topic){&many_ops, NULL, "t"};
    p->env = (ck_job_env){.g = &p->g, .cfg = &p->cfg, .topic = &p->topic, .job_id = "test-job",
                          .slowdowns = slow, .nslowdowns = nslow};
    fake_init(&p->fs, &p->ws, ck_graph_endpoint(&p->g, 0, 0, 0));
    fake_init(&p->fm, &p->wm, ck_graph_endpoint(&p->g, 0, 1, 0));
    p->src = ck_task_new(&p->env, &p->fs.plat, 0, 0, NULL);
    p->map = ck_task_new(&p->env, &p->fm.plat, 1, 0, NULL);
    assert_non_null(p->src);
    assert_non_null(p->map);
    p->ns = ck_task_node(p->src);
    p->nm = ck_task_node(p->map);
}

static void pair_init(pair *p, int unaligned, double src_flops, double map_flops, int64_t write_ns)
{
    pair_init_slowed(p, unaligned, src_flops, map_flops, write_ns, NULL, 0);
}

/* The map announces its credit, the source writes what it lets (the
 * map's gate is then full), and what both sent so far is dropped. */
static void pair_fill(pair *p)
{
    p->nm.ops->work(p->nm.self);
    deliver(&p->wm, p);
    for (int i = 0; i < 100 && p->ns.ops->work(p->ns.self) > 0; i++)
        ;
    p->ns.ops->on_deadline(p->ns.self); /* flush what is buffered */
    deliver(&p->ws, p);
    p->wm.flops = p->ws.flops = 0;
}

static void pair_free(pair *p)
{
    ck_task_del(p->src);
    ck_task_del(p->map);
    fake_clear(&p->ws);
    fake_clear(&p->wm);
}

/* ---- a source's partitions restored ------------------------------------------ */

/* Six partitions of MANY records. */
static int six_np(const void *ctx)
{
    (void)ctx;
    return 6;
}
static const ck_topic_ops six_ops = {six_np, many_size, many_at, many_read, NULL, NULL};

/* Restores source subtask 0 of src(2) -> out(2) (one chained vertex) from
 * a snapshot whose split list holds partitions parts[0..n) at offsets
 * 10 * (i + 1), its enumerator having known `known` partitions; returns
 * the task, running. */
static ck_task *restore_source_task(ck_graph *g, ck_config *cfg, ck_topic *tp, ck_job_env *env,
                                    fake_world *w, fake_plat *fp, const int *parts, int n,
                                    int known)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 2};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 0};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
    *tp = (ck_topic){&six_ops, NULL, "t"};
    *env = (ck_job_env){.g = g, .cfg = cfg, .topic = tp, .job_id = "test-job"};
    ck_capture cap = {.checkpoint_id = 3, .vertex = 0, .subtask = 0, .parallelism = 2};
    cap.has_source = 1;
    cap.source.op = 0;
    cap.source.known = known;
    cap.source.nparts = n;
    cap.source.parts = calloc((size_t)n + 1, sizeof(int));
    cap.source.offsets = calloc((size_t)n + 1, sizeof(int64_t));
    cap.source.maxts = calloc((size_t)n + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        cap.source.parts[i] = parts[i];
        cap.source.offsets[i] = 10 * (i + 1);
        cap.source.maxts[i] = 5;
    }
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(&cap, &file, &len), 0);
    ck_capture_free(&cap);
    ck_handles hs = {0};
    assert_int_equal(ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0,
                                    "checkpoints/test-job/chk-3/v0-0.state", len,
                                    ck_get_u32(file + len - 4), CK_KGR_EMPTY),
                     0);
    assert_int_equal(ck_handles_inline_last(&hs, file, len), 0); /* takes file */
    ck_restore_point from = {.id = 3, .handles = &hs, .old_vertex = 0, .old_subtask = 0,
                             .old_parallelism = 2};
    fake_init(fp, w, ck_graph_endpoint(g, 1, 0, 0));
    ck_task *t = ck_task_new(env, &fp->plat, 0, 1, &from);
    ck_handles_free(&hs);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    node.ops->work(node.self);
    assert_int_equal(node.ops->on_complete(node.self, w->bg_token, CK_OK, NULL, 0), 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    return t;
}

/*
 * A FLIP-27 source's splits are its split-distribute list state: restored,
 * the source reads exactly the partitions of its list, from their
 * offsets, whichever subtask the owner formula would give them (a
 * rescale's assignment deals them out); a partition its snapshot's
 * enumerator did not know goes by the owner formula.
 */
static void test_source_reads_its_restored_splits(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    ck_topic tp;
    ck_job_env env;
    fake_world w = {0};
    fake_plat fp;
    int own[6], nown = 0, other = -1;
    for (int p = 0; p < 6; p++) {
        if (ck_topic_owner("t", p, 2) == 0)
            own[nown++] = p;
        else if (other < 0)
            other = p;
    }
    assert_true(nown > 0 && other >= 0);
    /* Every partition known: the list, another subtask's partition first. */
    int parts[2] = {other, own[0]};
    ck_task *t = restore_source_task(&g, &cfg, &tp, &env, &w, &fp, parts, 2, 6);
    assert_int_equal(t->nparts, 2);
    assert_int_equal(t->parts[0], other);
    assert_int_equal(t->off[0], 10);
    assert_int_equal(t->parts[1], own[0]);
    assert_int_equal(t->off[1], 20);
    assert_int_equal(t->end[0], MANY);
    ck_task_del(t);
    fake_clear(&w);
    /* Partitions 4 and 5 are new to the snapshot: the owner formula's. */
    t = restore_source_task(&g, &cfg, &tp, &env, &w, &fp, parts, 2, 4);
    int want = 2;
    for (int p = 4; p < 6; p++)
        want += ck_topic_owner("t", p, 2) == 0 && p != other && p != own[0];
    assert_int_equal(t->nparts, want);
    for (int k = 2; k < t->nparts; k++) {
        assert_true(t->parts[k] >= 4);
        assert_int_equal(ck_topic_owner("t", t->parts[k], 2), 0);
        assert_int_equal(t->off[k], 0);
    }
    ck_task_del(t);
    fake_clear(&w);
}

/* ---- restores at another parallelism ----------------------------------------- */

/* Appends capture c's file, inline, to hs (c freed). */
static void add_file(ck_handles *hs, ck_capture *c, ck_kgr kgr)
{
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(c, &file, &len), 0);
    char key[80];
    snprintf(key, sizeof(key), "checkpoints/test-job/chk-%llu/v%d-%d.state",
             (unsigned long long)c->checkpoint_id, c->vertex, c->subtask);
    ck_capture_free(c);
    assert_int_equal(ck_handles_add(hs, CK_HANDLE_SNAPSHOT, 0, key, len,
                                    ck_get_u32(file + len - 4), kgr),
                     0);
    assert_int_equal(ck_handles_inline_last(hs, file, len), 0); /* takes file */
}

/* Deploys global subtask `global` of g (attempt 1) to restore hs with
 * per handle the takes tk and the chunks ch; runs its restore to the end
 * and returns the task, RUNNING or FAILED. */
static ck_task *restore_takes(ck_job_env *env, fake_world *w, fake_plat *fp, uint32_t global,
                              const ck_handles *hs, const ck_restore_take *tk,
                              const ck_restore_chunk *ch, uint32_t nch)
{
    const ck_graph *g = env->g;
    int v, sub;
    ck_graph_locate(g, global, &v, &sub);
    ck_restore_point from = {.id = 3, .handles = hs, .old_vertex = tk[0].old_vertex,
                             .old_subtask = UINT32_MAX, .old_parallelism = tk[0].old_parallelism,
                             .takes = tk, .chunks = ch, .nchunks = nch};
    fake_init(fp, w, ck_graph_endpoint(g, 1, v, sub));
    ck_task *t = ck_task_new(env, &fp->plat, global, 1, &from);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    node.ops->work(node.self);
    if (ck_task_get_state(t) == CK_TASK_RESTORING && w->nbackground > 0)
        assert_int_equal(node.ops->on_complete(node.self, w->bg_token, CK_OK, NULL, 0), 0);
    return t;
}

/* src(1) => agg(p) -> out(p): a keyed sum, of max parallelism 128. */
static void build_agg(ck_graph *g, ck_config *cfg, int p)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "agg", .kind = CK_OP_AGGREGATE, .parallelism = p,
                               .input = 0, .ship = CK_SHIP_HASH, .agg_fn = CK_AGG_SUM};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
}

/* Old agg subtask k of 2's state file: a running sum for each of 2000
 * keys of its key groups. */
static void agg_file(const ck_graph *g2, int k, ck_handles *hs)
{
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, g2, 1, k, NULL, 0, NULL, NULL, 0), 0);
    const ck_op *agg = &c.ops[0];
    for (int i = 0; i < 2000; i++) {
        char key[16];
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "k%d", i);
        if (!ck_kgr_contains(agg->kgr, ck_kg_of_key(key, klen, agg->spec->max_parallelism)))
            continue;
        ck_rec rec = {.ts = i, .value = 1 + i % 7, .key = key, .klen = klen};
        assert_int_equal(ck_chain_record(&c, &rec), 0);
    }
    ck_capture cap = {.checkpoint_id = 3, .vertex = 1, .subtask = k, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&c, &cap, 0), 0);
    add_file(hs, &cap, agg->kgr);
    ck_chain_free(&c);
}

/*
 * Rescaled 2 -> 3, the keyed vertex's new subtask 1 owns key groups
 * [43, 85] of 128, which old subtasks 0 ([0, 63]) and 1 ([64, 127]) held:
 * given both files, it takes from each exactly the key groups its take
 * names, the state of both accumulating: as many entries as a subtask
 * that read both files whole and kept its own key groups, none outside
 * them. A take one key group short restores fewer; the same file given
 * twice fails the restore.
 */
static void test_restore_two_files_takes_its_key_groups(void **state)
{
    (void)state;
    static ck_graph g2, g3;
    ck_config cfg2, cfg3;
    build_agg(&g2, &cfg2, 2);
    build_agg(&g3, &cfg3, 3);
    ck_handles hs = {0};
    agg_file(&g2, 0, &hs);
    agg_file(&g2, 1, &hs);
    ck_kgr mine = ck_kg_range(1, 3, 128);
    assert_int_equal(mine.start, 43);
    assert_int_equal(mine.end, 85);
    /* the reference: both files restored whole into a chain of [43, 85] */
    ck_chain ref;
    assert_int_equal(ck_chain_init(&ref, &g3, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    for (uint32_t h = 0; h < 2; h++) {
        ck_snapshot s;
        const char *why;
        assert_int_equal(ck_snap_decode(hs.v[h].data, hs.v[h].bytes, &s, &why), 0);
        assert_int_equal(ck_chain_restore(&ref, &s), 0);
        ck_snapshot_free(&s);
    }
    uint64_t want = ck_chain_state_entries(&ref);
    assert_true(want > 100);
    ck_chain_free(&ref);

    ck_topic tp = {&six_ops, NULL, "t"};
    ck_job_env env = {.g = &g3, .cfg = &cfg3, .topic = &tp, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    ck_restore_take tk[2] = {
        {.old_vertex = 1, .old_subtask = 0, .old_parallelism = 2, .what = 1 /* KEYED */,
         .kgr = {43, 63}},
        {.old_vertex = 1, .old_subtask = 1, .old_parallelism = 2, .what = 1, .kgr = {64, 85}},
    };
    uint32_t global = (uint32_t)g3.v[1].base + 1;
    ck_task *t = restore_takes(&env, &w, &fp, global, &hs, tk, NULL, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_true(ck_chain_state_entries(&t->chain) == want);
    ck_task_del(t);
    fake_clear(&w);
    /* one key group short: fewer entries */
    tk[1].kgr.end = 84;
    t = restore_takes(&env, &w, &fp, global, &hs, tk, NULL, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_true(ck_chain_state_entries(&t->chain) < want);
    ck_task_del(t);
    fake_clear(&w);
    /* old subtask 0's file twice (as the take of the second): refused */
    tk[1] = (ck_restore_take){.old_vertex = 1, .old_subtask = 0, .old_parallelism = 2,
                              .what = 1, .kgr = {43, 63}};
    ck_handles dup = {0};
    for (int k = 0; k < 2; k++)
        assert_int_equal(ck_handles_add_like(&dup, &hs.v[0], hs.v[0].flags), 0);
    t = restore_takes(&env, &w, &fp, global, &dup, tk, NULL, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
    ck_handles_free(&dup);
    ck_handles_free(&hs);
}

/* Old source subtask k of src(2) -> out(2): its split list parts[0..n),
 * at offsets 100 * k + 10 * (i + 1), of 6 partitions known. */
static void source_file(int k, const int *parts, int n, ck_handles *hs)
{
    ck_capture cap = {.checkpoint_id = 3, .vertex = 0, .subtask = k, .parallelism = 2};
    cap.has_source = 1;
    cap.source.op = 0;
    cap.source.known = 6;
    cap.source.nparts = n;
    cap.source.parts = calloc((size_t)n + 1, sizeof(int));
    cap.source.offsets = calloc((size_t)n + 1, sizeof(int64_t));
    cap.source.maxts = calloc((size_t)n + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        cap.source.parts[i] = parts[i];
        cap.source.offsets[i] = 100 * k + 10 * (i + 1);
        cap.source.maxts[i] = 5 + k;
    }
    add_file(hs, &cap, CK_KGR_EMPTY);
}

/*
 * Rescaled 2 -> 3, a source subtask dealt entry 1 of old subtask 0's
 * split list and entries 0 and 1 of old subtask 1's reads exactly those
 * three partitions, from their offsets, and no other (all six known: no
 * new one by the owner formula). A chunk past a list's end fails the
 * restore; so does one whose old subtask's file it was not given.
 */
static void test_restore_source_reads_its_chunks(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 2};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 3, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 3, .input = 0};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(&g, &spec, &cfg, &bad, err, sizeof(err)), 0);
    ck_handles hs = {0};
    const int p0[3] = {0, 2, 4}, p1[3] = {1, 3, 5};
    source_file(0, p0, 3, &hs);
    source_file(1, p1, 3, &hs);
    ck_topic tp = {&six_ops, NULL, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &tp, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    ck_restore_take tk[2] = {
        {.old_vertex = 0, .old_subtask = 0, .old_parallelism = 2, .what = 2 /* OPSTATE */},
        {.old_vertex = 0, .old_subtask = 1, .old_parallelism = 2, .what = 2},
    };
    ck_restore_chunk ch[2] = {
        {.op = 0, .name = CK_SOURCE_SPLITS, .old = 0, .first = 1, .n = 1},
        {.op = 0, .name = CK_SOURCE_SPLITS, .old = 1, .first = 0, .n = 2},
    };
    ck_task *t = restore_takes(&env, &w, &fp, 1, &hs, tk, ch, 2);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(t->nparts, 3);
    assert_int_equal(t->parts[0], 2);
    assert_int_equal(t->off[0], 20);
    assert_int_equal(t->parts[1], 1);
    assert_int_equal(t->off[1], 110);
    assert_int_equal(t->parts[2], 3);
    assert_int_equal(t->off[2], 120);
    assert_int_equal(t->maxts[2], 6);
    ck_task_del(t);
    fake_clear(&w);
    /* past the end of old subtask 1's list */
    ch[1].first = 2;
    t = restore_takes(&env, &w, &fp, 1, &hs, tk, ch, 2);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
    /* a chunk of old subtask 1, whose file it was not given */
    ch[1].first = 0;
    ck_handles one = {0};
    assert_int_equal(ck_handles_add_like(&one, &hs.v[0], hs.v[0].flags), 0);
    t = restore_takes(&env, &w, &fp, 1, &one, tk, ch, 2);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
    ck_handles_free(&one);
    ck_handles_free(&hs);
}

/* src(1) -rebalance-> buf(p) -> out(p): a buffer of 100 records that
 * counts what it saw in union list state. */
static void build_buf(ck_graph *g, ck_config *cfg, int p)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "buf", .kind = CK_OP_BUFFER, .parallelism = p, .input = 0,
                               .ship = CK_SHIP_REBALANCE, .buffer_count = 100,
                               .buffer_seen = 1};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
}

/* Old buf subtask k of 2's state file: it holds n records of values
 * 100 k, 100 k + 1, ... and saw n. */
static void buf_file(const ck_graph *g2, int k, int n, ck_handles *hs)
{
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, g2, 1, k, NULL, 0, NULL, NULL, 0), 0);
    for (int i = 0; i < n; i++) {
        ck_rec rec = {.ts = i, .value = 100 * k + i, .key = "k", .klen = 1};
        assert_int_equal(ck_chain_record(&c, &rec), 0);
    }
    assert_int_equal(c.ops[0].held.n, n);
    ck_capture cap = {.checkpoint_id = 3, .vertex = 1, .subtask = k, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&c, &cap, 0), 0);
    add_file(hs, &cap, CK_KGR_EMPTY);
    ck_chain_free(&c);
}

/* The values of the records buffer op holds, in order, into v (at most
 * max); returns how many. */
static int held_values(const ck_op *op, int64_t *v, int max)
{
    size_t pos = 0;
    const uint8_t *e;
    uint32_t len;
    int n = 0;
    while (ck_oplist_next(&op->held, &pos, &e, &len)) {
        ck_elem el;
        assert_int_equal(ck_elem_decode(e, len, &el), 0);
        assert_int_equal(el.tag, CK_EL_RECORD);
        if (n < max)
            v[n] = el.u.rec.value;
        n++;
    }
    return n;
}

/*
 * A buffer rescaled 2 -> 3: old subtask 0 held 4 records, old subtask 1
 * held 5; split-distributed (assign.h), new subtask 1 gets entry 3 of
 * old 0's list and entries 0 and 1 of old 1's, and holds exactly those
 * three records, in the plan's order; the union list of what each old
 * subtask saw comes whole from both files, and it keeps old subtask 1's
 * count (1 % 3 == 1). The chunks are the ones the assignment deals. A
 * chunk past a list's end fails the restore, and so does a chunk of an
 * old subtask whose file never came.
 */
static void test_restore_buffer_takes_its_chunks(void **state)
{
    (void)state;
    static ck_graph g2, g3;
    ck_config cfg2, cfg3;
    build_buf(&g2, &cfg2, 2);
    build_buf(&g3, &cfg3, 3);
    ck_handles hs = {0};
    buf_file(&g2, 0, 4, &hs);
    buf_file(&g2, 1, 5, &hs);
    /* what the assignment deals new subtask 1 of the 9 entries */
    const uint32_t counts[2] = {4, 5};
    ck_asg_chunk *out[3] = {0};
    uint32_t nout[3] = {0};
    assert_int_equal(ck_asg_repartition(CK_ASG_SPLIT_DISTRIBUTE, 1, 2, 3, counts, out, nout), 0);
    assert_int_equal(nout[1], 2);
    assert_int_equal(out[1][0].old, 0);
    assert_int_equal(out[1][0].first, 3);
    assert_int_equal(out[1][0].n, 1);
    assert_int_equal(out[1][1].old, 1);
    assert_int_equal(out[1][1].first, 0);
    assert_int_equal(out[1][1].n, 2);
    ck_asg_chunks_free(out, 3);
    ck_topic tp = {&six_ops, NULL, "t"};
    ck_job_env env = {.g = &g3, .cfg = &cfg3, .topic = &tp, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    ck_restore_take tk[2] = {
        {.old_vertex = 1, .old_subtask = 0, .old_parallelism = 2, .what = 2 /* OPSTATE */},
        {.old_vertex = 1, .old_subtask = 1, .old_parallelism = 2, .what = 2},
    };
    ck_restore_chunk ch[4] = {
        {.op = 1, .name = CK_BUFFER_LIST, .old = 0, .first = 3, .n = 1},
        {.op = 1, .name = CK_BUFFER_LIST, .old = 1, .first = 0, .n = 2},
        {.op = 1, .name = CK_BUFFER_SEEN, .old = 0, .first = 0, .n = 1},
        {.op = 1, .name = CK_BUFFER_SEEN, .old = 1, .first = 0, .n = 1},
    };
    uint32_t global = (uint32_t)g3.v[1].base + 1;
    ck_task *t = restore_takes(&env, &w, &fp, global, &hs, tk, ch, 4);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    const ck_op *buf = &t->chain.ops[0];
    assert_int_equal(buf->spec->kind, CK_OP_BUFFER);
    int64_t v[8];
    assert_int_equal(held_values(buf, v, 8), 3);
    assert_int_equal(v[0], 3);
    assert_int_equal(v[1], 100);
    assert_int_equal(v[2], 101);
    assert_int_equal(buf->seen, 5);
    ck_task_del(t);
    fake_clear(&w);
    /* new subtask 0 of 3, dealt old 0's entries [0, 3): old 0's count */
    ck_restore_chunk ch0[3] = {
        {.op = 1, .name = CK_BUFFER_LIST, .old = 0, .first = 0, .n = 3},
        {.op = 1, .name = CK_BUFFER_SEEN, .old = 0, .first = 0, .n = 1},
        {.op = 1, .name = CK_BUFFER_SEEN, .old = 1, .first = 0, .n = 1},
    };
    t = restore_takes(&env, &w, &fp, global - 1, &hs, tk, ch0, 3);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(held_values(&t->chain.ops[0], v, 8), 3);
    assert_int_equal(v[0], 0);
    assert_int_equal(v[2], 2);
    assert_int_equal(t->chain.ops[0].seen, 4);
    ck_task_del(t);
    fake_clear(&w);
    /* past the end of old subtask 1's list */
    ch[1].first = 4;
    t = restore_takes(&env, &w, &fp, global, &hs, tk, ch, 4);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
    /* a chunk of old subtask 1, whose file it was not given */
    ch[1].first = 0;
    ck_handles one = {0};
    assert_int_equal(ck_handles_add_like(&one, &hs.v[0], hs.v[0].flags), 0);
    t = restore_takes(&env, &w, &fp, global, &one, tk, ch, 4);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
    ck_handles_free(&one);
    ck_handles_free(&hs);
}

/* Old sink subtask k of src(2) -rebalance-> out(4): pending transactions
 * 10 k + 1 and 10 k + 2, 10 k + 3 open. */
static void sink_file(int k, ck_handles *hs)
{
    ck_capture cap = {.checkpoint_id = 3, .vertex = 1, .subtask = k, .parallelism = 4};
    cap.nsinks = 1;
    cap.sinks[0] = (ck_sink_capture){.op = 1, .open_txn = 10 * (uint64_t)k + 3, .npending = 2,
                                     .pending = {10 * (uint64_t)k + 1, 10 * (uint64_t)k + 2}};
    add_file(hs, &cap, CK_KGR_EMPTY);
}

/*
 * A transactional sink rescaled 4 -> 2: new subtask 1 takes the
 * transactions of old subtasks 1 and 3 (k % 2): it commits each one's
 * pending transactions under that old subtask's sink id and aborts its
 * open one, once. A file it takes for nothing else (no TXNS) commits
 * nothing.
 */
static void test_restore_sink_commits_removed_subtasks_once(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CP_INTERVAL] = 100 * CK_NS_PER_MS;
    cfg.v[CK_CFG_CP_MODE] = CK_CP_EXACTLY_ONCE;
    ck_job_spec spec = {.nops = 2};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_REBALANCE};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(&g, &spec, &cfg, &bad, err, sizeof(err)), 0);
    ck_handles hs = {0};
    sink_file(1, &hs);
    sink_file(3, &hs);
    ck_topic tp = {&six_ops, NULL, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &tp, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    ck_restore_take tk[2] = {
        {.old_vertex = 1, .old_subtask = 1, .old_parallelism = 4, .what = 8 /* TXNS */},
        {.old_vertex = 1, .old_subtask = 3, .old_parallelism = 4, .what = 8},
    };
    uint32_t global = (uint32_t)g.v[1].base + 1;
    ck_task *t = restore_takes(&env, &w, &fp, global, &hs, tk, NULL, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(w.ncommits, 4);
    assert_int_equal(w.naborts, 2);
    for (int k = 0; k < 2; k++) {
        uint64_t old = k ? 3 : 1;
        for (int q = 0; q < 2; q++) {
            assert_true(w.commits[2 * k + q][0] == ck_sink_id(1, (int)old));
            assert_true(w.commits[2 * k + q][1] == 10 * old + 1 + (uint64_t)q);
        }
        assert_true(w.aborts[k][0] == ck_sink_id(1, (int)old));
        assert_true(w.aborts[k][1] == 10 * old + 3);
    }
    ck_task_del(t);
    fake_clear(&w);
    memset(&w, 0, sizeof(w));
    /* taken for its channel state alone: nothing committed */
    tk[0].what = tk[1].what = 4;
    t = restore_takes(&env, &w, &fp, global, &hs, tk, NULL, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(w.ncommits, 0);
    assert_int_equal(w.naborts, 0);
    ck_task_del(t);
    fake_clear(&w);
    ck_handles_free(&hs);
}

/*
 * Flink's task looks at its mailbox between two records, so an unaligned
 * barrier is taken at the next record boundary. A task whose gate takes
 * unaligned barriers ends its step once its records took 100 us (at
 * 10 us a record of a 1 Gflop/s core: 10 records), however much its gate
 * holds, and the barrier that came meanwhile makes it snapshot at once;
 * with aligned checkpoints only (barriers in the data) a step may take
 * 2 ms. A slowed operator's records count its factor more.
 */
static void test_step_short_for_unaligned_barriers(void **state)
{
    (void)state;
    static pair p;
    pair_init(&p, 1, 0, 1e4, 0);
    pair_fill(&p);
    const ck_metrics *met = ck_task_metrics(p.map);
    assert_int_equal(met->task.records_in, 0);
    assert_true(p.nm.ops->work(p.nm.self) > 0); /* more to do */
    assert_int_equal(met->task.records_in, 10);
    assert_true(p.wm.flops <= 1e5);
    int bgs = p.wm.bgs;
    assert_int_equal(send_event(p.nm, &p.g, 0, 1), 0); /* its only channel: state complete */
    assert_int_equal(p.wm.bgs, bgs + 1);                /* serializing beside the task */
    assert_int_equal(met->task.records_in, 10);
    pair_free(&p);

    pair_init(&p, 0, 0, 1e4, 0);
    pair_fill(&p);
    met = ck_task_metrics(p.map);
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 200);
    pair_free(&p);

    /* A slow_operator fault makes the map's records cost 5 times more
     * from 1 s on: 2 records a step then, 10 before. */
    static const ck_op_slowdown slow = {.op = 1, .from = CK_NS_PER_S, .to = 2 * CK_NS_PER_S,
                                        .factor = 5};
    pair_init_slowed(&p, 1, 0, 1e4, 0, &slow, 1);
    pair_fill(&p);
    met = ck_task_metrics(p.map);
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 10);
    p.wm.now = CK_NS_PER_S;
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 12);
    pair_free(&p);
}

/* A costlier record is a step of its own: a sink whose external system
 * takes 1 ms a record writes one record a step behind a gate that takes
 * unaligned barriers (two with aligned checkpoints only). */
static void test_step_one_costly_record(void **state)
{
    (void)state;
    static pair p;
    pair_init(&p, 1, 0, 0, CK_NS_PER_MS);
    pair_fill(&p);
    const ck_metrics *met = ck_task_metrics(p.map);
    ck_time t0 = p.wm.now;
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 1);
    assert_int_equal(p.wm.now - t0, CK_NS_PER_MS);
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 2);
    pair_free(&p);

    pair_init(&p, 0, 0, 0, CK_NS_PER_MS);
    pair_fill(&p);
    met = ck_task_metrics(p.map);
    p.nm.ops->work(p.nm.self);
    assert_int_equal(met->task.records_in, 2);
    pair_free(&p);
}

/* A source takes its checkpoint's trigger at the next record boundary
 * too: with records of 1 kflop (1 us), a step reads 100 of the 5000 its
 * partition holds (not SOURCE_BATCH, 512), and the trigger that came
 * meanwhile is taken before the next 100 (the source snapshots at
 * once). */
static void test_source_step_short_for_triggers(void **state)
{
    (void)state;
    static pair p;
    pair_init(&p, 0, 1e3, 0, 0);
    p.nm.ops->work(p.nm.self);
    deliver(&p.wm, &p); /* the source's credit */
    const ck_metrics *met = ck_task_metrics(p.src);
    assert_true(p.ns.ops->work(p.ns.self) > 0); /* more to read */
    assert_int_equal(met->task.records_in, 100);
    assert_true(p.ws.flops <= 1e5);
    int bgs = p.ws.bgs;
    assert_int_equal(send_trigger(p.ns, ck_graph_endpoint(&p.g, 0, 0, 0), 0, 1), 0);
    assert_int_equal(p.ws.bgs, bgs + 1); /* its snapshot serializing beside it */
    sent s = {0};
    take_sent(&p.ws, &s);
    assert_int_equal(s.declines, 0);
    assert_int_equal(s.failed, 0);
    pair_free(&p);
}

/* The snapshot's and the merged file's invariants, (6) and (7): a source
 * triggered has its snapshot serializing, and the check passes; the
 * snapshot without its encoded file, in no stage, or newer than the
 * latest it took, breaks (6); the kept file's end off the append
 * alignment, or the file being made by a snapshot that is not uploading,
 * breaks (7). */
static void test_snapshot_invariants(void **state)
{
    (void)state;
    static pair p;
    pair_init(&p, 0, 0, 0, 0);
    p.nm.ops->work(p.nm.self);
    deliver(&p.wm, &p);
    p.ns.ops->work(p.ns.self);
    assert_int_equal(send_trigger(p.ns, ck_graph_endpoint(&p.g, 0, 0, 0), 0, 1), 0);
    ck_task *t = p.src;
    assert_int_equal(t->nsnaps, 1);
    snap_job *j = &t->snaps[0];
    assert_int_equal(j->stage, SNAP_SERIALIZING);
    assert_int_equal(ck_task_check(t, NULL), 0);
    INV_BREAK(j->data, NULL, ck_task_check(t, &V), "task", 6);
    INV_BREAK(j->stage, SNAP_UPLOADING, ck_task_check(t, &V), "task", 6);
    INV_BREAK(j->stage, 0, ck_task_check(t, &V), "task", 6);
    INV_BREAK(t->last_snap, 0, ck_task_check(t, &V), "task", 6);
    INV_BREAK(t->seg.end, 100, ck_task_check(t, &V), "task", 7);
    snprintf(t->seg.key, sizeof(t->seg.key), "checkpoints/test-job/shared/v0-0-a0-c1-m0.seg");
    t->seg.end = CK_STORE_APPEND_ALIGN;
    assert_int_equal(ck_task_check(t, NULL), 0); /* open */
    INV_BREAK(t->seg.creator, 1, ck_task_check(t, &V), "task", 7); /* serializing */
    INV_BREAK(t->seg.creator, 2, ck_task_check(t, &V), "task", 7); /* none */
    pair_free(&p);
}

/* The changelog's and the restore's invariants, (8) and (9): the keyed
 * subtask with the changelog on passes once running; a doomed segment
 * whose upload is not in flight (none is, or another), snapshots
 * acknowledged past the changelog's cut, or a negative count of a
 * materialization's uploads break (8); a restore past its last handle,
 * or a downloaded range held while running, break (9). */
static void test_changelog_restore_invariants(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    cfg.v[CK_CFG_CLOG_ENABLED] = 1;
    test_graph_keyed(&g, &cfg, 2);
    ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, ck_graph_endpoint(&g, 0, 1, 0));
    ck_task *t = ck_task_new(&env, &fp.plat, 2, 0, NULL); /* agg subtask 0 */
    assert_non_null(t);
    ck_node n = ck_task_node(t);
    n.ops->work(n.self);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(t->nclogs, 1);
    struct task_clog *c = &t->clogs[0];
    assert_int_equal(ck_task_check(t, NULL), 0);
    INV_BREAK(c->ndoomed, 1, ck_task_check(t, &V), "task", 8);
    c->ninflight = c->ndoomed = 1; /* a segment uploading, deleted once it lands */
    c->inflight[0] = c->doomed_first[0] = 5;
    assert_int_equal(ck_task_check(t, NULL), 0);
    INV_BREAK(c->doomed_first[0], 6, ck_task_check(t, &V), "task", 8);
    c->ninflight = c->ndoomed = 0;
    INV_BREAK(c->acked, c->log->cut_seq + 1, ck_task_check(t, &V), "task", 8);
    INV_BREAK(c->mat_busy, -1, ck_task_check(t, &V), "task", 8);
    INV_BREAK(t->restore_next, 1, ck_task_check(t, &V), "task", 9);
    INV_BREAK(t->nsegobj, 1, ck_task_check(t, &V), "task", 9);
    ck_task_del(t);
    fake_clear(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restore_reads_channel_state_before_running),
        cmocka_unit_test(test_restore_without_channel_state_runs_at_once),
        cmocka_unit_test(test_step_short_for_unaligned_barriers),
        cmocka_unit_test(test_step_one_costly_record),
        cmocka_unit_test(test_source_step_short_for_triggers),
        cmocka_unit_test(test_snapshot_invariants),
        cmocka_unit_test(test_changelog_restore_invariants),
        cmocka_unit_test(test_source_reads_its_restored_splits),
        cmocka_unit_test(test_restore_two_files_takes_its_key_groups),
        cmocka_unit_test(test_restore_source_reads_its_chunks),
        cmocka_unit_test(test_restore_buffer_takes_its_chunks),
        cmocka_unit_test(test_restore_sink_commits_removed_subtasks_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
