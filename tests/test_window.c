/*
 * test_window.c - event time: tumbling windows fired by watermarks, late
 * records, and the watermarks a source derives from its partitions; a
 * source restored from a checkpoint, finished or not.
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
#include "keygroup.h"
#include "operator.h"
#include "snapshot.h"
#include "task.h"
#include "udf.h"

/* source(1) => window(1) -> sink(1) */
static void build(ck_graph *g, ck_config *cfg, ck_agg_fn fn, int64_t size_ms)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "win", .kind = CK_OP_WINDOW, .parallelism = 1, .input = 0,
                               .ship = CK_SHIP_HASH, .agg_fn = fn, .window_ms = size_ms};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 1, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
    assert_int_equal(g->nv, 2); /* window and sink chained */
}

typedef struct result {
    char key[16];
    int64_t ts, value, ingest;
} result;

/* Takes what the sink staged. */
static int drain(ck_chain *c, result *out, int max)
{
    ck_op *sink = &c->ops[c->nops - 1];
    int n = 0;
    size_t pos = 0;
    while (pos < sink->out_len) {
        size_t len = ck_get_u32(sink->out + pos) + 4;
        ck_elem e;
        assert_int_equal(ck_elem_decode(sink->out + pos, len, &e), 0);
        assert_true(n < max);
        snprintf(out[n].key, sizeof(out[n].key), "%.*s", (int)e.u.rec.klen, e.u.rec.key);
        out[n].ts = e.u.rec.ts;
        out[n].value = e.u.rec.value;
        out[n].ingest = e.u.rec.ingest;
        n++;
        pos += len;
    }
    ck_op_clear_output(sink);
    return n;
}

static void rec(ck_chain *c, const char *key, int64_t ts, int64_t value, int64_t ingest)
{
    ck_rec r = {.ts = ts, .value = value, .ingest = ingest, .key = key,
                .klen = (uint32_t)strlen(key)};
    assert_int_equal(ck_chain_record(c, &r), 0);
}

static void test_tumbling_count(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_COUNT, 1000);
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    result out[16];
    rec(&c, "a", 100, 1, 10);
    rec(&c, "a", 500, 1, 30);
    rec(&c, "b", 1500, 1, 40);
    rec(&c, "a", 999, 1, 20);
    rec(&c, "c", 700, 1, 50);
    assert_int_equal(ck_chain_watermark(&c, 998), 0);
    assert_int_equal(drain(&c, out, 16), 0); /* window [0, 1000) still open */
    assert_int_equal(ck_chain_watermark(&c, 999), 0);
    int n = drain(&c, out, 16);
    assert_int_equal(n, 2);
    /* Same timestamp: fired in the order the windows were created. */
    assert_string_equal(out[0].key, "a");
    assert_true(out[0].ts == 999 && out[0].value == 3);
    assert_true(out[0].ingest == 30); /* latest input of the window */
    assert_string_equal(out[1].key, "c");
    assert_true(out[1].ts == 999 && out[1].value == 1);
    /* Late: its window's end is behind the watermark. Dropped and counted. */
    rec(&c, "a", 200, 1, 60);
    assert_int_equal(c.late_dropped, 1);
    /* On time for the next window. */
    rec(&c, "a", 1000, 1, 70);
    assert_int_equal(ck_chain_watermark(&c, 5000), 0);
    n = drain(&c, out, 16);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].key, "b");
    assert_true(out[0].ts == 1999 && out[0].value == 1);
    assert_string_equal(out[1].key, "a");
    assert_true(out[1].ts == 1999 && out[1].value == 1);
    /* Fired windows leave no state behind. */
    assert_int_equal(ck_chain_state_entries(&c), 0);
    /* A watermark that does not advance does nothing. */
    assert_int_equal(ck_chain_watermark(&c, 10), 0);
    assert_int_equal(drain(&c, out, 16), 0);
    ck_chain_free(&c);
}

static void test_sum_and_negative_time(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_SUM, 250);
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    result out[8];
    rec(&c, "k", -1, 5, 0);   /* window [-250, 0) */
    rec(&c, "k", -250, 7, 0); /* same window */
    rec(&c, "k", 0, 100, 0);  /* [0, 250) */
    assert_true(ck_udf_window_start(-1, 250) == -250);
    assert_true(ck_udf_window_start(-251, 250) == -500);
    assert_int_equal(ck_chain_watermark(&c, CK_WM_MAX), 0);
    int n = drain(&c, out, 8);
    assert_int_equal(n, 2);
    assert_true(out[0].ts == -1 && out[0].value == 12);
    assert_true(out[1].ts == 249 && out[1].value == 100);
    ck_chain_free(&c);
}

/* Found by fuzz_wire (UBSan): a record timed near the ends of the int64
 * range overflowed its window's start and end; sums overflowed too. Such a
 * record is dropped as late (no watermark can close its window), and sums
 * wrap around as Java's long does. */
static void test_extreme_times_and_sums(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_SUM, 250);
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    assert_true(ck_udf_window_start(INT64_MIN, 250) == INT64_MIN);
    assert_true(ck_udf_window_start(INT64_MIN + 250, 250) <= INT64_MIN + 250);
    rec(&c, "k", INT64_MIN, 1, 0);
    rec(&c, "k", INT64_MAX, 1, 0);
    rec(&c, "k", INT64_MAX - 100, 1, 0);
    assert_true(c.late_dropped == 3);
    rec(&c, "k", 10, INT64_MAX, 0);
    rec(&c, "k", 20, 2, 0);
    assert_int_equal(ck_chain_watermark(&c, CK_WM_MAX), 0);
    result out[4];
    assert_int_equal(drain(&c, out, 4), 1);
    assert_true(out[0].value == INT64_MIN + 1);
    ck_chain_free(&c);
}

/* ---- a source task's watermarks -------------------------------------------- */

typedef struct mini_topic {
    int n[2];
    int64_t ts[2][8];
    ck_time at[2][8];
} mini_topic;

static int mt_np(const void *ctx)
{
    (void)ctx;
    return 2;
}
static int64_t mt_size(const void *ctx, int p)
{
    return ((const mini_topic *)ctx)->n[p];
}
static ck_time mt_at(const void *ctx, int p, int64_t off)
{
    return ((const mini_topic *)ctx)->at[p][off];
}
static void mt_read(const void *ctx, int p, int64_t off, ck_rec *out)
{
    const mini_topic *t = ctx;
    memset(out, 0, sizeof(*out));
    out->key = p ? "q" : "p";
    out->klen = 1;
    out->ts = t->ts[p][off];
    out->ingest = t->at[p][off];
}
static const ck_topic_ops mt_ops = {mt_np, mt_size, mt_at, mt_read, NULL, NULL};

/* Reads the watermarks and END_OF_PARTITION out of the DATA sent so far. */
static int collect(fake_world *w, int64_t *wms, int max, int *eop, int *records)
{
    int n = 0;
    fake_msg *m;
    while ((m = fake_pop(w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DATA) {
            ck_elem_reader rd;
            ck_elem_reader_init(&rd);
            ck_elem_reader_feed(&rd, m->data + CK_WIRE_HDR, h.len);
            ck_elem e;
            while (ck_elem_reader_next(&rd, &e) == 1) {
                if (e.tag == CK_EL_WATERMARK && n < max)
                    wms[n++] = e.u.wm;
                else if (e.tag == CK_EL_END_OF_PARTITION)
                    (*eop)++;
                else if (e.tag == CK_EL_RECORD)
                    (*records)++;
            }
            ck_elem_reader_free(&rd);
        }
        free(m->data);
        free(m);
    }
    return n;
}

/* ---- a task's step and its mailbox ------------------------------------------ */

/* One partition of N records, keys "a".."z", all there at time 0. */
enum { MANY = 2000 };
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
    static const char keys[] = "abcdefghijklmnopqrstuvwxyz";
    (void)ctx;
    (void)p;
    memset(out, 0, sizeof(*out));
    out->key = &keys[off % 26];
    out->klen = 1;
    out->ts = off;
}
static const ck_topic_ops many_ops = {many_np, many_size, many_at, many_read, NULL, NULL};

/* A task with a full gate ends its input step once its platform says that
 * mail waits, after one run of records (a few dozen), and goes on at the
 * next step; without mail, one step takes far more. */
static void test_step_ends_for_mail(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_COUNT, 1000);
    ck_topic topic = {&many_ops, NULL, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &topic, .job_id = "test-job"};
    fake_world ws = {0}, ww = {0};
    fake_plat fs, fw;
    fake_init(&fs, &ws, CK_EP_TASK0);
    fake_init(&fw, &ww, CK_EP_TASK0 + 1);
    ck_task *src = ck_task_new(&env, &fs.plat, 0, 0, NULL);
    ck_task *win = ck_task_new(&env, &fw.plat, 1, 0, NULL);
    assert_non_null(src);
    assert_non_null(win);
    ck_node ns = ck_task_node(src), nw = ck_task_node(win);
    /* The window announces its credit; the source writes what it lets. */
    while (nw.ops->work(nw.self) > 0)
        ;
    fake_msg *m;
    while ((m = fake_pop(&ww))) {
        if (m->dst == CK_EP_TASK0)
            assert_int_equal(ns.ops->on_message(ns.self, m->data, m->len), 0);
        else
            free(m->data);
        free(m);
    }
    while (ns.ops->work(ns.self) > 0)
        ;
    size_t sent = 0;
    while ((m = fake_pop(&ws))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DATA && m->dst == CK_EP_TASK0 + 1) {
            assert_int_equal(nw.ops->on_message(nw.self, m->data, m->len), 0);
            sent++;
        } else {
            free(m->data);
        }
        free(m);
    }
    assert_true(sent > 0);
    const ck_metrics *met = ck_task_metrics(win);
    assert_int_equal(met->task.records_in, 0);
    ww.mail = 1;
    nw.ops->work(nw.self);
    uint64_t first = met->task.records_in;
    assert_true(first > 0 && first <= 64); /* one run of records, then the mail */
    nw.ops->work(nw.self);
    assert_true(met->task.records_in > first && met->task.records_in - first <= 64);
    ww.mail = 0;
    nw.ops->work(nw.self);
    assert_true(met->task.records_in - first > 200); /* a whole step's worth */
    ck_task_del(src);
    ck_task_del(win);
    fake_clear(&ws);
    fake_clear(&ww);
}

/* Where a record's state lives, worked out ahead by the task, is only a
 * hint: right, another key's, another window's or none, the windows come
 * out the same. */
static void test_location_hints_change_nothing(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_SUM, 100);
    ck_chain hinted, plain;
    assert_int_equal(ck_chain_init(&hinted, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_init(&plain, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    assert_true(ck_chain_keyed(&hinted));
    static const char *keys[] = {"k1", "k2", "key-three", "a-longer-key-than-sixteen"};
    for (int i = 0; i < 400; i++) {
        const char *k = keys[(i * 7) % 4], *other = keys[(i * 7 + 1) % 4];
        int64_t ts = i * 3;
        ck_rec r = {.ts = ts, .value = i, .key = k, .klen = (uint32_t)strlen(k)};
        ck_rec o = {.ts = ts, .value = i, .key = other, .klen = (uint32_t)strlen(other)};
        ck_rec later = r;
        later.ts = ts + 1000;
        ck_keyloc l;
        switch (i % 4) {
        case 0: /* the right one */
            l = ck_chain_locate(&hinted, &r);
            break;
        case 1: /* another key's */
            l = ck_chain_locate(&hinted, &o);
            break;
        case 2: /* the right key, another window */
            l = ck_chain_locate(&hinted, &later);
            break;
        default: /* a bogus location, only prefetched; the record goes unhinted */
            l = ck_chain_locate(&hinted, &r);
            l.kg = (l.kg + 1) % 128;
            l.hash ^= 1;
            break;
        }
        ck_chain_prefetch(&hinted, &l);
        if (i % 4 == 3)
            assert_int_equal(ck_chain_record(&hinted, &r), 0); /* no hint at all */
        else
            assert_int_equal(ck_chain_record_at(&hinted, &r, &l), 0);
        rec(&plain, k, ts, i, 0);
    }
    assert_int_equal(ck_chain_watermark(&hinted, CK_WM_MAX), 0);
    assert_int_equal(ck_chain_watermark(&plain, CK_WM_MAX), 0);
    result a[64], b[64];
    int na = drain(&hinted, a, 64), nb = drain(&plain, b, 64);
    assert_int_equal(na, nb);
    assert_true(na > 4 * 10); /* 12 windows of 100 ms, 4 keys in most */
    int64_t total = 0;
    for (int i = 0; i < na; i++) {
        assert_string_equal(a[i].key, b[i].key);
        assert_int_equal(a[i].ts, b[i].ts);
        assert_int_equal(a[i].value, b[i].value);
        total += a[i].value;
    }
    assert_int_equal(total, 399 * 400 / 2);
    ck_chain_free(&hinted);
    ck_chain_free(&plain);
}

static void test_source_watermarks(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_COUNT, 1000);
    g.spec.ops[0].ooo_ms = 100;
    mini_topic mt = {.n = {3, 2},
                     .ts = {{1000, 1400, 1200}, {500, 2000}},
                     .at = {{0, 0, 900 * CK_NS_PER_MS}, {0, 500 * CK_NS_PER_MS}}};
    ck_topic topic = {&mt_ops, &mt, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &topic, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, CK_EP_TASK0);
    ck_task *t = ck_task_new(&env, &fp.plat, 0, 0, NULL);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    /* Give the source credit, as its consumer would. */
    uint8_t *credit = malloc(CK_WIRE_HDR);
    ck_wire_hdr ch = {.type = CK_MSG_CREDIT, .edge = 0, .src = 0, .dst = 0, .arg = 100};
    ck_wire_encode(credit, &ch);
    assert_int_equal(node.ops->on_message(node.self, credit, CK_WIRE_HDR), 0);

    int64_t wms[16];
    int eop = 0, records = 0, n;
    /* t = 0: both partitions have a record; nothing is emitted before the interval. */
    while (node.ops->work(node.self) > 0)
        ;
    /* Run the clock in 100 ms steps, honouring deadlines, up to 1 s. */
    int64_t all[32];
    int nall = 0;
    for (w.now = 0; w.now <= CK_NS_PER_S; w.now += 100 * CK_NS_PER_MS) {
        if (node.ops->deadline(node.self) <= w.now)
            node.ops->on_deadline(node.self);
        while (node.ops->work(node.self) > 0)
            ;
        n = collect(&w, wms, 16, &eop, &records);
        for (int i = 0; i < n; i++)
            all[nall++] = wms[i];
    }
    /* At 200 ms: partition 0 has seen 1400, partition 1 only 500:
     * min(1400, 500) - 100 - 1 = 399. At 500 ms partition 1 reads its
     * last record and ends; an ended partition no longer holds the
     * watermark back, so at 600 ms it is 1400 - 101 = 1299. At 900 ms
     * partition 0 ends too: the maximum watermark, then END_OF_PARTITION. */
    assert_int_equal(nall, 3);
    assert_true(all[0] == 399);
    assert_true(all[1] == 1299);
    assert_true(all[nall - 1] == CK_WM_MAX);
    for (int i = 1; i < nall; i++)
        assert_true(all[i] > all[i - 1]); /* watermarks only advance */
    assert_int_equal(records, 5);
    assert_int_equal(eop, 1);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FINISHED);
    /* The task reported to the job manager. */
    ck_task_del(t);
    fake_clear(&w);
}

/* ---- a source restored from a checkpoint ------------------------------------- */

/* hs and rp: checkpoint 5 of the source (subtask 0 of vertex 0), its state
 * file inline in the restore point: it had finished (CK_SEC_FINISHED,
 * what the coordinator stores for a subtask that finished), or it had read
 * its two partitions up to off[0] and off[1]. */
static void source_restore_point(ck_handles *hs, ck_restore_point *rp, int finished,
                                 const int64_t *off)
{
    int parts[2] = {0, 1};
    int64_t offsets[2] = {off ? off[0] : 0, off ? off[1] : 0}, maxts[2] = {0, 0};
    ck_capture c;
    memset(&c, 0, sizeof(c));
    c.checkpoint_id = 5;
    c.vertex = 0;
    c.subtask = 0;
    c.parallelism = 1;
    c.finished = finished;
    if (!finished) {
        c.has_source = 1;
        c.source = (ck_source_capture){.op = 0, .nparts = 2, .parts = parts,
                                       .offsets = offsets, .maxts = maxts};
    }
    uint8_t *data;
    size_t len;
    assert_int_equal(ck_snap_encode(&c, &data, &len), 0);
    memset(hs, 0, sizeof(*hs));
    assert_int_equal(ck_handles_add(hs, CK_HANDLE_SNAPSHOT, 0,
                                    "checkpoints/test-job/chk-5/v0-0.state", len,
                                    ck_get_u32(data + len - 4), CK_KGR_EMPTY),
                     0);
    assert_int_equal(ck_handles_inline_last(hs, data, len), 0);
    memset(rp, 0, sizeof(*rp));
    rp->id = 5;
    snprintf(rp->dir, sizeof(rp->dir), "checkpoints/test-job/chk-5/");
    rp->handles = hs;
    rp->old_parallelism = 1; /* of vertex 0, subtask 0 */
}

/* Checkpoints after tasks finish (FLIP-147): a source that had finished
 * when a checkpoint was taken is restored from it as finished, though its
 * partitions hold records: it reads none of them again, ends its output
 * at once (END_OF_PARTITION) and reports finished without waiting for a
 * checkpoint (it took its last one before). Restored from a snapshot of
 * offsets instead, it reads on from them. An idle source (no partition)
 * cannot tell the two apart; this one must. */
static void test_source_restored_finished(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg, CK_AGG_COUNT, 1000);
    cfg.v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    mini_topic mt = {.n = {3, 2}, .ts = {{1000, 1400, 1200}, {500, 2000}}};
    ck_topic topic = {&mt_ops, &mt, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &topic, .job_id = "test-job"};
    for (int finished = 1; finished >= 0; finished--) {
        fake_world w = {0};
        fake_plat fp;
        fake_init(&fp, &w, CK_EP_TASK0 + g.nsubtasks); /* attempt 1 */
        ck_handles hs;
        ck_restore_point rp;
        const int64_t off[2] = {1, 0};
        source_restore_point(&hs, &rp, finished, off);
        ck_task *t = ck_task_new(&env, &fp.plat, 0, 1, &rp);
        assert_non_null(t);
        ck_node node = ck_task_node(t);
        uint8_t *credit = malloc(CK_WIRE_HDR);
        ck_wire_hdr ch = {.type = CK_MSG_CREDIT, .epoch = 1, .arg = 100};
        ck_wire_encode(credit, &ch);
        assert_int_equal(node.ops->on_message(node.self, credit, CK_WIRE_HDR), 0);
        int eop = 0, records = 0, running = 0, ended = 0, done = 0, failed = 0;
        for (w.now = 0; w.now <= CK_NS_PER_S; w.now += 100 * CK_NS_PER_MS) {
            if (node.ops->deadline(node.self) <= w.now)
                node.ops->on_deadline(node.self);
            while (node.ops->work(node.self) > 0)
                ;
            /* Loading the state is background work: done when the platform says. */
            for (int i = 0; i < w.nbackground; i++)
                node.ops->on_complete(node.self, w.background[i], CK_OK, NULL, 0);
            w.nbackground = 0;
            while (node.ops->work(node.self) > 0)
                ;
            fake_msg *m;
            while ((m = fake_pop(&w))) {
                ck_wire_hdr h;
                assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
                running += h.type == CK_MSG_TASK_RUNNING;
                ended += h.type == CK_MSG_TASK_ENDED;
                done += h.type == CK_MSG_TASK_FINISHED;
                failed += h.type == CK_MSG_TASK_FAILED;
                if (h.type == CK_MSG_DATA) {
                    ck_elem_reader rd;
                    ck_elem_reader_init(&rd);
                    ck_elem_reader_feed(&rd, m->data + CK_WIRE_HDR, h.len);
                    ck_elem e;
                    while (ck_elem_reader_next(&rd, &e) == 1) {
                        records += e.tag == CK_EL_RECORD;
                        eop += e.tag == CK_EL_END_OF_PARTITION;
                    }
                    ck_elem_reader_free(&rd);
                }
                free(m->data);
                free(m);
            }
        }
        assert_int_equal(failed, 0);
        assert_int_equal(running, 1);
        assert_int_equal(eop, 1);
        if (finished) {
            /* Nothing read again; finished at once, no checkpoint awaited. */
            assert_int_equal(records, 0);
            assert_int_equal(ended, 0);
            assert_int_equal(done, 1);
            assert_int_equal(ck_task_get_state(t), CK_TASK_FINISHED);
        } else {
            /* The records past the offsets: 2 of partition 0, 2 of 1;
             * then it waits for a checkpoint taken with its input over. */
            assert_int_equal(records, 4);
            assert_int_equal(ended, 1);
            assert_int_equal(done, 0);
            assert_int_equal(ck_task_get_state(t), CK_TASK_ENDED);
        }
        ck_task_del(t);
        ck_handles_free(&hs);
        fake_clear(&w);
    }
}

/* Sends the task a checkpoint message from the job manager: 0, or an
 * error with the task failed (the node's contract). */
static void cp_msg(ck_node node, ck_task *t, int type, uint64_t id)
{
    uint8_t body[20] = {0};
    ck_put_u64(body, id);
    size_t n;
    uint8_t *m = ck_wire_msg(type, CK_EP_JM, CK_EP_TASK0, 0, body,
                             type == CK_MSG_CP_TRIGGER ? 20 : 8, &n);
    int rc = node.ops->on_message(node.self, m, n);
    assert_true(rc == 0 || (rc < 0 && ck_task_get_state(t) == CK_TASK_FAILED));
}

/* A failure in a checkpoint's synchronous phase fails the task, as in
 * Flink (not a declined checkpoint counted against tolerable failures):
 * an exactly-once source -> sink task whose checkpoints are all aborted
 * keeps their transactions pre-committed, and the 65th has no room. */
static void test_sync_phase_failure_fails_the_task(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    ck_job_spec spec = {.nops = 2};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 1, .input = 0};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(&g, &spec, &cfg, &bad, err, sizeof(err)), 0);
    mini_topic mt = {.n = {1, 0}, .ts = {{1}}, .at = {{100 * CK_NS_PER_S}}}; /* not yet */
    ck_topic topic = {&mt_ops, &mt, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &topic, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, CK_EP_TASK0);
    ck_task *t = ck_task_new(&env, &fp.plat, 0, 0, NULL);
    assert_non_null(t);
    ck_node node = ck_task_node(t);
    while (node.ops->work(node.self) > 0)
        ;
    int fails = 0, declines = 0;
    for (uint64_t id = 1; id <= 65; id++) {
        assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
        cp_msg(node, t, CK_MSG_CP_TRIGGER, id);
        cp_msg(node, t, CK_MSG_CP_ABORT, id);
        fake_msg *m;
        while ((m = fake_pop(&w))) {
            ck_wire_hdr h;
            if (ck_wire_decode(m->data, m->len, &h) == 0) {
                fails += h.type == CK_MSG_TASK_FAILED;
                declines += h.type == CK_MSG_CP_DECLINE && id == 65;
                if (h.type == CK_MSG_TASK_FAILED) {
                    char why[400] = "";
                    const uint8_t *b = m->data + CK_WIRE_HDR;
                    assert_int_equal(ck_get_u32(b), CK_FAIL_TASK);
                    assert_int_equal(ck_get_u16(b + 12), 0); /* no file */
                    size_t wl = CK_MIN(m->len - CK_WIRE_HDR - CK_FAIL_BODY_MIN, sizeof(why) - 1);
                    memcpy(why, b + CK_FAIL_BODY_MIN, wl);
                    assert_non_null(strstr(why, "checkpoint 65 failed in its synchronous phase"));
                }
            }
            free(m->data);
            free(m);
        }
    }
    assert_int_equal(fails, 1);
    assert_int_equal(declines, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    fake_clear(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tumbling_count),
        cmocka_unit_test(test_sum_and_negative_time),
        cmocka_unit_test(test_extreme_times_and_sums),
        cmocka_unit_test(test_source_watermarks),
        cmocka_unit_test(test_source_restored_finished),
        cmocka_unit_test(test_step_ends_for_mail),
        cmocka_unit_test(test_location_hints_change_nothing),
        cmocka_unit_test(test_sync_phase_failure_fails_the_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
