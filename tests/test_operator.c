/*
 * test_operator.c - a subtask's chain of operators when its keyed-state
 * backend cannot be opened (a full disk, no inodes, too many open files):
 * the chain init fails with the backend's line and frees only what it set
 * up, and the subtask built on it fails at its start with that line,
 * for the restart strategy to decide what next. And the buffer operator
 * (operator state): it holds records until its count, passes them on in
 * order with the watermark held back behind them, and a snapshot's list
 * state gives a restored one the records it held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bytes.h"
#include "element.h"
#include "error.h"
#include "fakeplat.h"
#include "graph.h"
#include "kstate.h"
#include "operator.h"
#include "task.h"
#include "wire.h"

/* A platform whose local disk refuses every keyed-state backend, as
 * RocksDB's open does when the disk is full; counts the attempts. */
static int open_calls;

static ck_kstate_spec last_spec; /* the last one asked for */

static int failing_kstate_open(ck_platform *p, const ck_kstate_spec *spec, ck_kstate **out,
                               char *err, size_t errlen)
{
    (void)p;
    open_calls++;
    last_spec = *spec;
    *out = NULL;
    snprintf(err, errlen, "local/a%u-op%d-%d: cannot open RocksDB: No space left on device",
             spec->attempt, spec->op, spec->subtask);
    return CK_EIO;
}

static ck_platform_ops failing_ops;

static void failing_init(fake_plat *fp, fake_world *w, uint32_t endpoint)
{
    fake_init(fp, w, endpoint);
    failing_ops = fake_ops;
    failing_ops.kstate_open = failing_kstate_open;
    fp->plat.ops = &failing_ops;
}

/* source(1) => window(1) -> map(1) -> sink(1): the window's chain has
 * operators after the keyed one that fails. */
static void build(ck_graph *g, ck_config *cfg)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 4};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "win", .kind = CK_OP_WINDOW, .parallelism = 1, .input = 0,
                               .ship = CK_SHIP_HASH, .agg_fn = CK_AGG_COUNT, .window_ms = 1000};
    spec.ops[2] = (ck_op_spec){.name = "m", .kind = CK_OP_MAP, .parallelism = 1, .input = 1};
    spec.ops[3] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 1, .input = 2};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
    assert_int_equal(g->nv, 2);
    assert_int_equal(g->v[1].nops, 3); /* window, map and sink chained */
}

static void test_chain_init_backend_fails(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    fake_world w = {0};
    fake_plat fp;
    failing_init(&fp, &w, CK_EP_TASK0 + 1);
    for (int changelog = 0; changelog <= 1; changelog++) {
        ck_chain_state st = {.type = CK_BACKEND_ROCKSDB, .plat = &fp.plat, .attempt = 3,
                             .changelog = changelog};
        ck_chain c;
        char err[300] = "";
        open_calls = 0;
        int rc = ck_chain_init(&c, &g, 1, 0, NULL, 0, &st, err, sizeof(err));
        assert_int_equal(rc, CK_EIO);
        assert_int_equal(open_calls, 1);
        /* the backend's own line, naming the instance */
        assert_non_null(strstr(err, "a3-op1-0: cannot open RocksDB: No space left on device"));
        /* nothing left set up: freeing again does nothing */
        assert_int_equal(c.nops, 0);
        ck_chain_free(&c);
        ck_chain_free(&c);
    }
    /* The same chain with the heap backend sets every operator up. */
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 1, 0, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(c.nops, 3);
    assert_int_equal(c.ops[2].spec->kind, CK_OP_SINK);
    ck_chain_free(&c);
}

/* An empty topic for the source; the window's subtask never reads it. */
static int no_parts(const void *ctx)
{
    (void)ctx;
    return 1;
}

static int64_t no_size(const void *ctx, int p)
{
    (void)ctx, (void)p;
    return 0;
}

static void test_task_fails_at_start(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    cfg.v[CK_CFG_STATE_BACKEND] = CK_BACKEND_ROCKSDB;
    /* the rescale keys reach the backend (ck_kstate_spec.rescale) */
    cfg.v[CK_CFG_ROCKS_INGEST_RESTORE] = 1;
    cfg.v[CK_CFG_ROCKS_DELETE_FILES] = 1;
    cfg.v[CK_CFG_ROCKS_OVERLAP] = 750; /* 0.75 */
    cfg.v[CK_CFG_ROCKS_FULL_COPY] = 1;
    ck_topic_ops tops = {.npartitions = no_parts, .size = no_size};
    ck_topic topic = {&tops, NULL, "t"};
    ck_job_env env = {.g = &g, .cfg = &cfg, .topic = &topic, .job_id = "test-job"};
    fake_world w = {0};
    fake_plat fp;
    failing_init(&fp, &w, ck_graph_endpoint(&g, 0, 1, 0));
    open_calls = 0;
    ck_task *t = ck_task_new(&env, &fp.plat, 1, 0, NULL); /* the window's subtask */
    assert_non_null(t); /* it exists, to fail when it starts */
    assert_int_equal(open_calls, 1);
    assert_int_equal(last_spec.rescale.ingest, 1);
    assert_int_equal(last_spec.rescale.delete_files, 1);
    assert_true(last_spec.rescale.overlap > 0.7499 && last_spec.rescale.overlap < 0.7501);
    assert_int_equal(last_spec.rescale.copy, 1);
    assert_int_equal(last_spec.max_parallelism, g.spec.ops[1].max_parallelism);
    assert_true(last_spec.max_parallelism >= 1);
    ck_node node = ck_task_node(t);
    while (node.ops->work(node.self) > 0)
        ;
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    /* It told the job manager why: a task failure (the restart strategy
     * decides), with the backend's line. */
    int failed = 0;
    fake_msg *m;
    while ((m = fake_pop(&w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_TASK_FAILED) {
            const uint8_t *body = m->data + CK_WIRE_HDR;
            assert_int_equal(ck_get_u32(body), CK_FAIL_TASK);
            /* u32 code | u64 detail | u16 key length | key | text */
            uint16_t kl = ck_get_u16(body + 12);
            assert_true(h.len >= (uint32_t)CK_FAIL_BODY_MIN + kl);
            char msg[400];
            snprintf(msg, sizeof(msg), "%.*s", (int)(h.len - CK_FAIL_BODY_MIN - kl),
                     (const char *)body + CK_FAIL_BODY_MIN + kl);
            assert_non_null(strstr(msg, "cannot open the state backend: "));
            assert_non_null(strstr(msg, "No space left on device"));
            failed++;
        }
        free(m->data);
        free(m);
    }
    assert_int_equal(failed, 1);
    ck_task_del(t);
    fake_clear(&w);
}

/* A platform whose keyed-state backend is the heap (a rebuild's counts
 * are set by hand below). */
static int heap_kstate_open(ck_platform *p, const ck_kstate_spec *spec, ck_kstate **out,
                            char *err, size_t errlen)
{
    (void)p, (void)err, (void)errlen;
    *out = ck_kstate_new(CK_BACKEND_HASHMAP, spec->kgr, spec->states, spec->nstates);
    return *out ? CK_OK : CK_ENOMEM;
}

/* A rescale's rebuild (ck_kstate_work.rebuild) is charged as background
 * work once, by ck_kstate_rebuild_cost, at the operator's weight: what a
 * restore's loading phase takes (task_restore.c restore_finish). */
static void test_chain_charges_rebuild(void **state)
{
    (void)state;
    ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, CK_EP_TASK0 + 1);
    static ck_platform_ops ops;
    ops = fake_ops;
    ops.kstate_open = heap_kstate_open;
    fp.plat.ops = &ops;
    ck_chain_state st = {.type = CK_BACKEND_ROCKSDB, .plat = &fp.plat};
    ck_chain c;
    char err[300] = "";
    assert_int_equal(ck_chain_init(&c, &g, 1, 0, NULL, 0, &st, err, sizeof(err)), 0);
    ck_kstate *ks = c.ops[0].ks;
    assert_non_null(ks);
    uint64_t disk;
    int notes;
    assert_true(ck_chain_take_background(&c, &disk, &notes) == 0.0 && disk == 0);
    /* a copy path's counts: 200k keys of 224 bytes, flushed and compacted */
    ck_kstate_rebuild rb = {.rebuilds = 1, .path = CK_KS_REBUILD_COPY, .opened = 2,
                            .keys_iterated = 200000, .keys_written = 200000,
                            .bytes_written = 200000 * 224, .flushes = 1, .flushed = 30 << 20,
                            .compactions = 1, .compacted = 30 << 20};
    ks->work.rebuild = rb;
    uint64_t want_disk;
    double want = ck_kstate_rebuild_cost(&rb, 1.0, &want_disk);
    assert_true(want > 0 && want_disk > 0);
    double got = ck_chain_take_background(&c, &disk, &notes);
    assert_true(got > want * 0.999999 && got < want * 1.000001);
    assert_int_equal(disk, want_disk);
    assert_true(notes & (1 << CK_NOTE_STATE_FLUSH));
    assert_true(notes & (1 << CK_NOTE_STATE_COMPACTION));
    /* charged once */
    assert_true(ck_chain_take_background(&c, &disk, &notes) == 0.0 && disk == 0 && !notes);
    /* the same rebuild again at four times the weight: more, its bytes x 4 */
    c.ops[0].heavy = 4.0;
    ks->work.rebuild.rebuilds++;
    ks->work.rebuild.keys_iterated += rb.keys_iterated;
    ks->work.rebuild.keys_written += rb.keys_written;
    ks->work.rebuild.bytes_written += rb.bytes_written;
    ks->work.rebuild.flushed += rb.flushed;
    ks->work.rebuild.compacted += rb.compacted;
    ks->work.rebuild.opened += rb.opened;
    uint64_t heavy_disk;
    double heavy = ck_kstate_rebuild_cost(&rb, 4.0, &heavy_disk);
    got = ck_chain_take_background(&c, &disk, &notes);
    assert_true(got > heavy * 0.999999 && got < heavy * 1.000001);
    assert_true(heavy > 2 * want);
    assert_int_equal(disk, heavy_disk);
    assert_true(heavy_disk >= 4 * want_disk - 4 && heavy_disk <= 4 * want_disk + 4);
    ck_chain_free(&c);
    fake_clear(&w);
}

/* ---- buffer -------------------------------------------------------------- */

/* src(p) -> buf(p, count 3, counting) -> out(p), one chained vertex. */
static void build_buffer(ck_graph *g, int p)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = p, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "buf", .kind = CK_OP_BUFFER, .parallelism = p, .input = 0,
                               .buffer_count = 3, .buffer_seen = 1};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, &cfg, &bad, err, sizeof(err)), 0);
    assert_int_equal(g->nv, 1);
}

static void feed_value(ck_chain *c, int64_t v)
{
    char key[16];
    uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "k%lld", (long long)v);
    uint8_t payload[5] = {1, 2, 3, 4, (uint8_t)v};
    ck_rec r = {.ts = 1000 + v, .value = v, .ingest = 7 * v, .prov = ck_prov_of(1, v),
                .key = key, .klen = klen, .payload = payload, .plen = sizeof(payload)};
    assert_int_equal(ck_chain_record(c, &r), 0);
}

/* The values the sink staged, in order; returns how many. */
static int sink_values(ck_chain *c, int64_t *v, int max)
{
    ck_op *sink = &c->ops[c->nops - 1];
    int n = 0;
    for (size_t at = 0; at < sink->out_len; n++) {
        size_t len = (size_t)ck_get_u32(sink->out + at) + 4;
        ck_elem e;
        assert_int_equal(ck_elem_decode(sink->out + at, len, &e), 0);
        assert_true(n < max);
        v[n] = e.u.rec.value;
        assert_int_equal(e.u.rec.prov, ck_prov_of(1, e.u.rec.value)); /* passed on unchanged */
        assert_int_equal(e.u.rec.ts, 1000 + e.u.rec.value);
        at += len;
    }
    return n;
}

static void test_buffer_holds_until_count(void **state)
{
    (void)state;
    static ck_graph g;
    build_buffer(&g, 1);
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 0, 0, NULL, 0, NULL, NULL, 0), 0);
    ck_op *buf = &c.ops[1], *sink = &c.ops[2];
    int64_t v[16];
    feed_value(&c, 1);
    feed_value(&c, 2);
    assert_int_equal(sink_values(&c, v, 16), 0); /* held */
    assert_int_equal(buf->held.n, 2);
    /* A watermark waits behind the records held. */
    assert_int_equal(ck_chain_watermark(&c, 500), 0);
    assert_true(sink->wm == CK_WM_MIN);
    feed_value(&c, 3); /* the count: all three go, in order, then the watermark */
    assert_int_equal(sink_values(&c, v, 16), 3);
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 3);
    assert_int_equal(sink->wm, 500);
    assert_int_equal(buf->held.n, 0);
    ck_op_clear_output(sink);
    /* Empty: a watermark goes straight on. */
    assert_int_equal(ck_chain_watermark(&c, 600), 0);
    assert_int_equal(sink->wm, 600);
    /* The end of input (the maximum watermark) passes on what is held. */
    feed_value(&c, 4);
    assert_int_equal(ck_chain_watermark(&c, CK_WM_MAX), 0);
    assert_int_equal(sink_values(&c, v, 16), 1);
    assert_int_equal(v[0], 4);
    assert_true(sink->wm == CK_WM_MAX);
    assert_int_equal(buf->seen, 4);
    ck_chain_free(&c);
}

/* A snapshot taken while records are held: its split-distribute list
 * holds them, its union list the count seen; a fresh chain restored from
 * it passes them on before the next ones. */
static void test_buffer_snapshot_restore(void **state)
{
    (void)state;
    static ck_graph g;
    build_buffer(&g, 2);
    ck_chain a, b;
    assert_int_equal(ck_chain_init(&a, &g, 0, 1, NULL, 0, NULL, NULL, 0), 0);
    for (int64_t i = 1; i <= 5; i++) /* 3 pass, 4 and 5 held */
        feed_value(&a, i);
    ck_capture cap = {.checkpoint_id = 4, .vertex = 0, .subtask = 1, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&a, &cap, 0), 0);
    feed_value(&a, 6); /* after the capture: not in it */
    assert_int_equal(cap.nopstates, 1);
    assert_int_equal(cap.opstates[0].op, 1);
    const ck_oplist *held = ck_opstate_list(&cap.opstates[0], CK_BUFFER_LIST);
    const ck_oplist *seen = ck_opstate_list(&cap.opstates[0], CK_BUFFER_SEEN);
    assert_non_null(held);
    assert_non_null(seen);
    assert_int_equal(held->mode, CK_OPSTATE_SPLIT);
    assert_int_equal(held->n, 2);
    assert_int_equal(seen->mode, CK_OPSTATE_UNION);
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(&cap, &file, &len), 0);
    ck_capture_free(&cap);
    ck_snapshot s;
    const char *why;
    assert_int_equal(ck_snap_decode(file, len, &s, &why), 0);
    assert_int_equal(ck_chain_init(&b, &g, 0, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_restore(&b, &s), 0);
    assert_int_equal(b.ops[1].held.n, 2);
    assert_int_equal(b.ops[1].seen, 5);
    feed_value(&b, 6);
    int64_t v[16];
    assert_int_equal(sink_values(&b, v, 16), 3);
    assert_true(v[0] == 4 && v[1] == 5 && v[2] == 6);
    /* A held entry that is not a record is refused. */
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &g, 0, 1, NULL, 0, NULL, NULL, 0), 0);
    ck_oplist *l = &s.opstates[0].lists[0];
    assert_string_equal(l->name, CK_BUFFER_LIST);
    l->data[4 + 4] = CK_EL_WATERMARK; /* the first entry's tag */
    assert_int_equal(ck_chain_restore(&c, &s), CK_ECORRUPT);
    /* Operator state of an operator that keeps none is refused. */
    s.opstates[0].op = 2;
    assert_int_equal(ck_chain_restore(&c, &s), CK_ECORRUPT);
    ck_snapshot_free(&s);
    free(file);
    ck_chain_free(&a);
    ck_chain_free(&b);
    ck_chain_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_init_backend_fails),
        cmocka_unit_test(test_task_fails_at_start),
        cmocka_unit_test(test_chain_charges_rebuild),
        cmocka_unit_test(test_buffer_holds_until_count),
        cmocka_unit_test(test_buffer_snapshot_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
