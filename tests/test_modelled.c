/*
 * test_modelled.c - state of production size, modelled (handle.h
 * CK_HANDLE_MODELLED, an operator's value_size or state_size): a handle
 * carries what its file weighs beside its real bytes, on the wire and in
 * copies; the scenario's fields are checked; and a run charges the
 * modelled bytes: doubling the declared state doubles a checkpoint's
 * upload and a restore's download, on the heap and on RocksDB, while
 * run.json reports the modelled sizes and the process keeps kilobytes.
 * And the cost model of a rescale's rebuild (kstate.h
 * ck_kstate_rebuild_cost): it ranks the paths as bench_rescale measured
 * them and grows with the weight; a task's rebuild counts add up as it
 * reports them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "handle.h"
#include "kstate.h"
#include "runutil.h"
#include "wire.h"

/* ---- the handle ------------------------------------------------------------------- */

static void test_handle_wire_keeps_modelled(void **state)
{
    (void)state;
    ck_handles hs = {0}, back = {0}, copy = {0};
    assert_int_equal(ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0, "job/chk-1/v1-0", 1000, 7,
                                    ck_kgr_make(0, 63)),
                     CK_OK);
    assert_int_equal(ck_handles_model_last(&hs, 40000000000ull), CK_OK);
    assert_int_equal(ck_handles_add_native(&hs, CK_HANDLE_SHARED, "job/shared/a.sst", 500, 9,
                                           ck_kgr_make(0, 63), 1, "000012.sst"),
                     CK_OK);
    /* below its bytes: refused; equal: not modelled */
    assert_int_equal(ck_handles_model_last(&hs, 499), CK_EINVAL);
    assert_int_equal(ck_handles_model_last(&hs, 500), CK_OK);
    assert_int_equal(hs.v[1].flags & CK_HANDLE_MODELLED, 0);
    assert_true(hs.v[0].flags & CK_HANDLE_MODELLED);
    assert_int_equal(ck_handles_bytes(&hs), 1500);
    assert_int_equal(ck_handles_modelled(&hs), 40000000500ull);

    ck_wbuf w = {0};
    ck_handles_put(&w, &hs);
    assert_false(w.err);
    ck_rbuf r = {w.p, w.len, 0, 0};
    const char *why = NULL;
    assert_int_equal(ck_handles_get(&r, &back, 1024, &why), CK_OK);
    assert_int_equal(back.n, 2);
    assert_int_equal(back.v[0].bytes, 1000);
    assert_int_equal(back.v[0].modelled, 40000000000ull);
    assert_int_equal(back.v[1].modelled, 500);
    assert_int_equal(ck_handles_copy(&copy, &back), CK_OK);
    assert_int_equal(ck_handles_modelled(&copy), 40000000500ull);
    assert_int_equal(ck_handles_add_like(&copy, &back.v[0], CK_HANDLE_REUSED), CK_OK);
    assert_int_equal(copy.v[2].modelled, 40000000000ull);
    assert_int_equal(ck_handles_modelled_new(&copy), 40000000500ull);

    /* a modelled size not above the bytes is a corrupt handle */
    size_t at = 4 + 4 + strlen("job/chk-1/v1-0") + 8 + 4 * 4 + 1; /* its modelled u64 */
    ck_put_u64(w.p + at, 1000);
    ck_handles_free(&back);
    ck_rbuf r2 = {w.p, w.len, 0, 0};
    assert_int_equal(ck_handles_get(&r2, &back, 1024, &why), CK_ECORRUPT);
    free(w.p);
    ck_handles_free(&hs);
    ck_handles_free(&back);
    ck_handles_free(&copy);
}

/* ---- the scenario ----------------------------------------------------------------- */

static const char *scenario_with(const char *name, const char *op_extra, const char *keys)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "{\"workload\": {\"duration\": \"2 s\", \"rate\": 100, \"keys\": %s},\n"
             " \"job\": {\"operators\": [\n"
             "   {\"name\": \"source\", \"type\": \"source\"},\n"
             "   {\"name\": \"count\", \"type\": \"aggregate\"%s},\n"
             "   {\"name\": \"sink\", \"type\": \"sink\"}]}}\n",
             keys, op_extra);
    return put_file(name, text);
}

static void expect_refused(const char *tag, const char *op_extra, const char *keys,
                           const char *says)
{
    char args[512];
    snprintf(args, sizeof(args), "validate %s", scenario_with(tag, op_extra, keys));
    assert_chandy(tag, args, 2);
    char path[256];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *err = slurp(path);
    assert_non_null(err);
    if (!strstr(err, says))
        fprintf(stderr, "expected \"%s\" in: %s", says, err);
    assert_non_null(strstr(err, says));
    assert_non_null(strstr(err, "job.operators[1]")); /* the place */
    assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1); /* one line */
    free(err);
}

static void test_scenario_fields(void **state)
{
    (void)state;
    char args[512];
    snprintf(args, sizeof(args), "validate %s",
             scenario_with("ok1.json", ", \"value_size\": \"4 KB\"", "1000"));
    assert_chandy("ok1", args, 0);
    snprintf(args, sizeof(args), "validate %s",
             scenario_with("ok2.json", ", \"state_size\": \"40 GB\"", "10000"));
    assert_chandy("ok2", args, 0);
    expect_refused("both.json", ", \"value_size\": \"4 KB\", \"state_size\": \"1 GB\"", "1000",
                   "not both");
    expect_refused("unit.json", ", \"value_size\": \"4 parsecs\"", "1000", "a size in bytes");
    expect_refused("neg.json", ", \"value_size\": -1", "1000", "a size in bytes");
    expect_refused("huge.json", ", \"state_size\": \"100 TB\"", "10", "raise workload.keys");
}

/* A map has no keyed state to weigh. */
static void test_scenario_value_size_needs_keyed_state(void **state)
{
    (void)state;
    const char *text =
        "{\"workload\": {\"duration\": \"2 s\", \"rate\": 100},\n"
        " \"job\": {\"operators\": [\n"
        "   {\"name\": \"source\", \"type\": \"source\"},\n"
        "   {\"name\": \"m\", \"type\": \"map\", \"value_size\": \"1 KB\"},\n"
        "   {\"name\": \"sink\", \"type\": \"sink\"}]}}\n";
    char args[512];
    snprintf(args, sizeof(args), "validate %s", put_file("map.json", text));
    assert_chandy("map", args, 2);
    char path[256];
    snprintf(path, sizeof(path), "%s/map.err", tmp);
    char *err = slurp(path);
    assert_non_null(strstr(err, "job.operators[1].value_size"));
    assert_non_null(strstr(err, "not a setting of map operators"));
    free(err);
}

/* ---- a run charges what the state weighs -------------------------------------------- */

/* A running count over 4000 keys, every one seen in the first second,
 * whose state weighs `gb` GB, on `backend` (with RocksDB, incremental
 * checkpoints); checkpoints every 20 s, far apart enough that both sizes
 * take the same ones; a crash at 60 s restores the one of about 48 s. */
static void run_sized(const char *tag, const char *backend, int gb)
{
    char text[4096], name[64], args[512];
    snprintf(text, sizeof(text),
             "{\"seed\": 3,\n"
             " \"cluster\": {\"taskmanagers\": 2, \"cores\": 2, \"speed\": \"1Gf\","
             " \"local_disk\": \"1GBps\",\n"
             "   \"store\": {\"bandwidth\": \"10Gbps\", \"latency\": \"5ms\","
             " \"disk_read\": \"2GBps\", \"disk_write\": \"2GBps\"}},\n"
             " \"workload\": {\"duration\": \"75 s\", \"partitions\": 4, \"keys\": 4000,"
             " \"record_bytes\": 64,\n"
             "   \"rate\": [{\"at\": \"0 s\", \"rate\": 40000}, {\"at\": \"1 s\", \"rate\": 500}]},\n"
             " \"job\": {\"operators\": [\n"
             "   {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 2},\n"
             "   {\"name\": \"count\", \"type\": \"aggregate\", \"parallelism\": 4,"
             " \"state_size\": \"%d GB\"},\n"
             "   {\"name\": \"sink\", \"type\": \"sink\", \"parallelism\": 4}]},\n"
             " \"config\": {\"taskmanager.numberOfTaskSlots\": 2,\n"
             "   \"execution.checkpointing.interval\": \"20 s\","
             " \"execution.checkpointing.timeout\": \"10 min\",\n"
             "   \"restart-strategy.type\": \"fixed-delay\","
             " \"restart-strategy.fixed-delay.delay\": \"1 s\",\n"
             "   \"state.backend.type\": \"%s\"%s},\n"
             " \"events\": [{\"at\": \"60 s\", \"action\": \"crash\", \"host\": \"tm1\","
             " \"restart_after\": \"1 s\"}]}\n",
             gb, backend,
             strcmp(backend, "rocksdb") ? "" : ", \"execution.checkpointing.incremental\": true");
    snprintf(name, sizeof(name), "%s.json", tag);
    snprintf(args, sizeof(args), "run %s --out %s/%s --quiet", put_file(name, text), tmp, tag);
    assert_chandy(tag, args, 0);
}

/* The checkpoint run r's first recovery restored (by then every key was
 * seen: the state has its declared size). */
static const cJSON *restored_checkpoint(const cJSON *r)
{
    const cJSON *rec = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "recoveries"), 0);
    assert_non_null(rec);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "checkpoint");
    assert_true(cJSON_IsNumber(id));
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "checkpoints"))
        if (cJSON_GetObjectItemCaseSensitive(c, "id")->valuedouble == id->valuedouble)
            return c;
    fail_msg("the checkpoint restored is not in checkpoints[]");
    return NULL;
}

static double field(const cJSON *o, const char *a)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    assert_non_null(v);
    return v->valuedouble;
}

static const cJSON *restore_of(const cJSON *r)
{
    const cJSON *rec = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "recoveries"), 0);
    assert_non_null(rec);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(rec, "checkpoint")));
    return cJSON_GetObjectItemCaseSensitive(rec, "restore");
}

/* Within tol of want, relatively. */
static void assert_near(double got, double want, double tol, const char *what)
{
    if (!(got >= want * (1 - tol) && got <= want * (1 + tol)))
        fail_msg("%s: %g, expected %g within %.0f %%", what, got, want, tol * 100);
}

static void doubling(const char *backend)
{
    char a[32], b[32];
    snprintf(a, sizeof(a), "%s-1", backend);
    snprintf(b, sizeof(b), "%s-2", backend);
    run_sized(a, backend, 1);
    run_sized(b, backend, 2);
    cJSON *ra = load_run(a), *rb = load_run(b);
    const cJSON *ca = restored_checkpoint(ra), *cb = restored_checkpoint(rb);
    /* the same checkpoint of the same records: only what it weighs differs */
    assert_true(field(ca, "id") == field(cb, "id"));
    if (!strcmp(backend, "hashmap")) /* (RocksDB's flushes, heavier, compact at other times) */
        assert_true(field(ca, "real_bytes_full") == field(cb, "real_bytes_full"));
    assert_true(field(ca, "real_bytes_full") < 4e6); /* what the files hold stays small */
    /* run.json reports what the state weighs: the heap's every entry once,
     * RocksDB's every version its live files hold (at least the state) */
    if (!strcmp(backend, "hashmap"))
        assert_near(field(ca, "bytes_full"), 1e9, 0.01, "1 GB checkpoint's bytes_full");
    else
        assert_true(field(ca, "bytes_full") >= 0.99e9);
    assert_near(field(cb, "bytes_full") / field(ca, "bytes_full"), 2.0, 0.01,
                "bytes_full, 2 GB over 1 GB");
    /* twice the state: twice the upload */
    assert_near(field(cb, "upload_max_s") / field(ca, "upload_max_s"), 2.0, 0.15,
                "upload time, 2 GB over 1 GB");
    /* ...and twice the download on restore, of the modelled bytes */
    const cJSON *xa = restore_of(ra), *xb = restore_of(rb);
    assert_near(field(xa, "bytes"), field(ca, "bytes_full"), 0.01, "restore's bytes");
    assert_near(field(xb, "bytes") / field(xa, "bytes"), 2.0, 0.01, "restore's bytes, 2 over 1");
    assert_near(field(xb, "download_s") / field(xa, "download_s"), 2.0, 0.15,
                "download time, 2 GB over 1 GB");
    assert_true(field(xa, "download_s") > 0.5); /* 1 GB at 10 Gbit/s at least 0.8 s */
    cJSON_Delete(ra);
    cJSON_Delete(rb);
}

static void test_doubling_heap(void **state)
{
    (void)state;
    doubling("hashmap");
}

static void test_doubling_rocksdb(void **state)
{
    (void)state;
    doubling("rocksdb");
}

/* ---- the rebuild's cost model ----------------------------------------------------- */

/* What bench_rescale's restores of the middle new subtask of 2 -> 3, [43,
 * 85], did on 0.5 GiB of Flink's benchmark state (keys of 96 bytes,
 * values of 128; 64 MiB files), by each path: the same state. */
static const ck_kstate_rebuild bench_copy = {
    .rebuilds = 1, .path = CK_KS_REBUILD_COPY, .opened = 2, .keys_iterated = 800000,
    .keys_written = 800000, .bytes_written = 188000000, .flushes = 3, .flushed = 188000000,
    .target_file = 64 << 20};
static const ck_kstate_rebuild bench_clip = {
    .rebuilds = 1, .path = CK_KS_REBUILD_CLIP, .opened = 2, .keys_iterated = 390000,
    .keys_written = 390000, .bytes_written = 94000000, .files_linked = 8,
    .bytes_linked = 292000000, .ranges_deleted = 1, .flushes = 1, .flushed = 94000000,
    .target_file = 64 << 20};
static const ck_kstate_rebuild bench_ingest = {
    .rebuilds = 1, .path = CK_KS_REBUILD_INGEST, .opened = 2, .files_imported = 10,
    .bytes_imported = 584000000, .ranges_deleted = 2, .target_file = 64 << 20};

/* The model ranks the paths as bench_rescale measured them, near its
 * ratios (clip/copy 0.44, ingest/copy 0.02 on this state), and a state
 * that weighs more costs more: its bytes in proportion, its keys not. */
static void test_rebuild_cost_ranks_paths(void **state)
{
    (void)state;
    uint64_t dcopy, dclip, dingest;
    double copy = ck_kstate_rebuild_cost(&bench_copy, 1.0, &dcopy);
    double clip = ck_kstate_rebuild_cost(&bench_clip, 1.0, &dclip);
    double ingest = ck_kstate_rebuild_cost(&bench_ingest, 1.0, &dingest);
    assert_true(copy > clip && clip > ingest && ingest > 0);
    assert_true(clip / copy > 0.3 && clip / copy < 0.6);
    assert_true(ingest / copy < 0.1);
    /* on a 1 Gflop/s core, copy takes bench_rescale's seconds, within a third */
    assert_true(copy / 1e9 > 2.86 / 1.33 && copy / 1e9 < 2.86 * 1.33);
    /* the local disk: the copies read and flush their bytes; an import none */
    assert_true(dcopy > dclip && dclip > dingest);
    assert_int_equal(dingest, 0);
    assert_int_equal(dcopy, 2 * 188000000ull);
    /* heavier: every path more, still in that order; bytes x 10 */
    uint64_t hcopy_d, hclip_d, hingest_d;
    double hcopy = ck_kstate_rebuild_cost(&bench_copy, 10.0, &hcopy_d);
    double hclip = ck_kstate_rebuild_cost(&bench_clip, 10.0, &hclip_d);
    double hingest = ck_kstate_rebuild_cost(&bench_ingest, 10.0, &hingest_d);
    assert_true(hcopy > copy && hclip > clip && hingest > ingest);
    assert_true(hcopy > hclip && hclip > hingest);
    assert_int_equal(hcopy_d, 10 * dcopy);
    /* the keys are real: not ten times the cost */
    assert_true(hcopy < 10 * copy);
    /* 10 x 584 MB in 64 MiB files: 88 files imported, not 10 */
    ck_kstate_rebuild one = bench_ingest;
    one.opened = 0;
    one.ranges_deleted = 0;
    uint64_t d;
    double f10 = ck_kstate_rebuild_cost(&one, 10.0, &d);
    assert_true(f10 > 87 * CK_REBUILD_IMPORT_FILE_FLOPS &&
                f10 < 88.5 * CK_REBUILD_IMPORT_FILE_FLOPS);
    /* below 1, a weight is 1 */
    assert_true(ck_kstate_rebuild_cost(&bench_copy, 0.0, &d) == copy && d == dcopy);
    /* nothing done, nothing charged */
    ck_kstate_rebuild none = {.path = CK_KS_REBUILD_NONE};
    assert_true(ck_kstate_rebuild_cost(&none, 5.0, &d) == 0.0 && d == 0);
    assert_string_equal(ck_ks_rebuild_path_name(CK_KS_REBUILD_INGEST), "ingest");
    assert_string_equal(ck_ks_rebuild_path_name(CK_KS_REBUILD_NONE), "none");
    assert_string_equal(ck_ks_rebuild_path_name(9), "?");
}

/* A task's rebuilds as it reports them (TASK_RUNNING) add up, by path. */
static void test_rebuild_wire(void **state)
{
    (void)state;
    uint8_t p[CK_REBUILD_WIRE];
    ck_kstate_rebuild sum = {0};
    uint32_t paths[CK_KS_REBUILD_NPATHS] = {0};
    ck_kstate_rebuild_put(p, &bench_clip);
    ck_kstate_rebuild_add_wire(&sum, paths, p);
    ck_kstate_rebuild_put(p, &bench_ingest);
    ck_kstate_rebuild_add_wire(&sum, paths, p);
    ck_kstate_rebuild_put(p, &bench_clip);
    ck_kstate_rebuild_add_wire(&sum, paths, p);
    ck_kstate_rebuild none = {.path = CK_KS_REBUILD_NONE}; /* nothing rebuilt */
    ck_kstate_rebuild_put(p, &none);
    ck_kstate_rebuild_add_wire(&sum, paths, p);
    assert_int_equal(sum.rebuilds, 3);
    assert_int_equal(paths[CK_KS_REBUILD_CLIP], 2);
    assert_int_equal(paths[CK_KS_REBUILD_INGEST], 1);
    assert_int_equal(paths[CK_KS_REBUILD_COPY] + paths[CK_KS_REBUILD_REUSE], 0);
    assert_int_equal(sum.keys_iterated, 2 * bench_clip.keys_iterated);
    assert_int_equal(sum.keys_written, 2 * bench_clip.keys_written);
    assert_int_equal(sum.bytes_written, 2 * bench_clip.bytes_written);
    assert_int_equal(sum.files_linked, 2 * bench_clip.files_linked);
    assert_int_equal(sum.files_imported, bench_ingest.files_imported);
    assert_int_equal(sum.ranges_deleted,
                     2 * bench_clip.ranges_deleted + bench_ingest.ranges_deleted);
    assert_int_equal(sum.files_deleted, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_wire_keeps_modelled),
        cmocka_unit_test(test_rebuild_cost_ranks_paths),
        cmocka_unit_test(test_rebuild_wire),
        cmocka_unit_test(test_scenario_fields),
        cmocka_unit_test(test_scenario_value_size_needs_keyed_state),
        cmocka_unit_test(test_doubling_heap),
        cmocka_unit_test(test_doubling_rocksdb),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
