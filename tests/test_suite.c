/*
 * test_suite.c - `chandy suite`: comparisons run together (identical runs
 * once), an index with each comparison's chart, key figures and a link to
 * its full report; a suite file's mistakes named by JSON path before
 * anything runs; and the default demo suite (the README's main command)
 * running with every output correct and its index rendering cleanly in
 * Chromium.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runutil.h"


static int exists(const char *fmt, const char *a)
{
    char path[512];
    snprintf(path, sizeof(path), fmt, tmp, a);
    return access(path, F_OK) == 0;
}

/* The text of the cells of the first row of data (<td>) after from, up
 * to max of them; how many. */
static int row_cells(const char *from, char cells[][80], int max)
{
    const char *p = strstr(from, "<td");
    const char *end = p ? strstr(p, "</tr>") : NULL;
    int n = 0;
    while (p && p < end && n < max) {
        p = strchr(p, '>') + 1;
        const char *q = strstr(p, "</td>");
        snprintf(cells[n++], 80, "%.*s", (int)(q - p), p);
        p = strstr(q, "<td");
    }
    return n;
}

static void comparisons_side_by_side(void **state)
{
    (void)state;
    const char *suite = put_file(
        "two.json",
        "{\"name\": \"two\", \"description\": \"A test suite.\", \"comparisons\": [\n"
        " {\"title\": \"Interval\", \"plot\": \"checkpoints\", \"note\": \"300 against 600 ms.\","
        "  \"runs\": [\"" CHANDY_SOURCE_DIR "/tests/scenarios/small-cp.json\","
        "   {\"scenario\": \"" CHANDY_SOURCE_DIR "/tests/scenarios/small-cp.json\","
        "    \"label\": \"every 600 ms\", \"set\": {\"execution.checkpointing.interval\": "
        "\"600 ms\"}}]},\n"
        " {\"title\": \"Again\", \"plot\": \"throughput\","
        "  \"runs\": [\"" CHANDY_SOURCE_DIR "/tests/scenarios/small-cp.json\"]}]}\n");
    assert_non_null(suite);
    char args[600], path[512];
    snprintf(args, sizeof(args), "suite %s --out %s/s --jobs 2", suite, tmp);
    assert_chandy("suite", args, 0);
    /* Three runs listed, two different: two run. */
    assert_true(exists("%s/s/runs/r%s", "1"));
    assert_true(exists("%s/s/runs/r%s", "2"));
    assert_false(exists("%s/s/runs/r%s", "3"));
    /* The changed scenario was written, without the original's expectations. */
    snprintf(path, sizeof(path), "%s/s/scenarios/r2.json", tmp);
    char *sc = slurp(path);
    assert_non_null(strstr(sc, "\"600 ms\""));
    assert_null(strstr(sc, "\"expect\""));
    free(sc);
    cJSON *r2 = load_run("s/runs/r2");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(r2, "config"),
                                            "execution.checkpointing.interval")
                            ->valuestring,
                        "600 ms");
    cJSON_Delete(r2);

    snprintf(path, sizeof(path), "%s/s/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    assert_non_null(strstr(html, "<h2 id=\"c1\">Interval</h2>"));
    assert_non_null(strstr(html, "<h2 id=\"c2\">Again</h2>"));
    assert_non_null(strstr(html, "300 against 600 ms."));
    assert_non_null(strstr(html, "id=\"c1-plot-checkpoint-duration\""));
    assert_non_null(strstr(html, "id=\"c2-plot-throughput\""));
    assert_int_equal(count_of(html, "<caption>Key figures</caption>"), 2);
    /* The first comparison's key figures: run 1's own, each in its column
     * (no recovery; its throughput, latency p99 and correct output). */
    char cells[8][80], want[80];
    assert_int_equal(row_cells(strstr(html, "<caption>Key figures</caption>"), cells, 8), 8);
    cJSON *r1 = load_run("s/runs/r1");
    assert_string_equal(cells[3], "-");
    snprintf(want, sizeof(want), "%.0f", num(r1, "throughput_in_rps", NULL));
    assert_string_equal(cells[4], want);
    snprintf(want, sizeof(want), "%.1f", num(r1, "latency_ms", "p99"));
    assert_string_equal(cells[5], want);
    assert_string_equal(cells[7], "correct");
    cJSON_Delete(r1);
    assert_non_null(strstr(html, "#2 every 600 ms, small-cp, simgrid, seed 11"));
    assert_non_null(strstr(html, "href=\"c1/index.html\""));
    assert_non_null(strstr(html, "href=\"c1/checkpoints.csv\""));
    free(html);
    /* Each comparison's full report, with its own runs. */
    snprintf(path, sizeof(path), "%s/s/c1/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(md);
    assert_non_null(strstr(md, "# Interval"));
    assert_non_null(strstr(md, "| execution.checkpointing.interval | 300 ms | 600 ms |"));
    free(md);
    assert_true(exists("%s/s/c2/%s", "index.html"));
}

static void bad_suites_are_named(void **state)
{
    (void)state;
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"{\"comparisons\": []}", "comparisons: expected a list of 1 to"},
        {"{\"comparisons\": [{\"runs\": [\"x.json\"]}]}", "comparisons[0].title"},
        {"{\"comparisons\": [{\"title\": \"t\", \"runs\": [\"nowhere.json\"]}]}",
         "nowhere.json: cannot open: No such file"},
        {"{\"comparisons\": [{\"title\": \"t\", \"plot\": \"pie\", \"runs\": [\"x.json\"]}]}",
         "comparisons[0].plot"},
        {"{\"comparisons\": [{\"title\": \"t\", \"runs\": [{\"scenario\": \"" CHANDY_SOURCE_DIR
         "/tests/scenarios/small-cp.json\", \"set\": {\"no.such.key\": 1}}]}]}",
         "comparisons[0].runs[0].set: no.such.key: neither a configuration key"},
        {"{\"comparisons\": [{\"title\": \"t\", \"runs\": [{\"scenario\": \"" CHANDY_SOURCE_DIR
         "/tests/scenarios/small-cp.json\", \"set\": {\"cluster.taskmanagers\": 0}}]}]}",
         "cluster.taskmanagers"},
        {"{\"comparisons\": [{\"title\": \"t\", \"runs\": [7]}]}",
         "comparisons[0].runs[0]: expected a scenario file"},
        {"{\"comparisons\": [{\"title\": \"t\", \"extra\": 1, \"runs\": [\"x.json\"]}]}", "extra"},
        /* strings that are not text: a \u0000 would cut the title short,
         * bytes that are not UTF-8 would reach the report */
        {"{\"comparisons\": [{\"title\": \"t\\u0000<script>\", \"runs\": [\"x.json\"]}]}",
         "comparisons[0].title: expected a string of UTF-8 text without \\u0000"},
        {"{\"comparisons\": [{\"title\": \"t\", \"note\": \"n\xff\", \"runs\": [\"x.json\"]}]}",
         "comparisons[0].note: expected a string of UTF-8 text"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char name[32], args[600], path[512];
        snprintf(name, sizeof(name), "bad%zu.json", i);
        const char *f = put_file(name, bad[i].text);
        snprintf(args, sizeof(args), "suite %s --out %s/bad%zu", f, tmp, i);
        assert_chandy("bad", args, 2);
        snprintf(path, sizeof(path), "%s/bad.err", tmp);
        char *err = slurp(path);
        if (!strstr(err, bad[i].says) || !strstr(err, name))
            fail_msg("suite %s: expected \"%s\" and the file's name in: %s", bad[i].text,
                     bad[i].says, err);
        free(err);
        /* Nothing ran. */
        snprintf(path, sizeof(path), "%s/bad%zu/runs/r1", tmp, i);
        assert_int_not_equal(access(path, F_OK), 0);
    }
}

/* The README's main command runs this suite. */
static void default_demo_suite(void **state)
{
    (void)state;
    char args[600], path[512];
    snprintf(args, sizeof(args), "suite suites/demo.json --out %s/demo", tmp);
    assert_chandy("demo", args, 0);
    snprintf(path, sizeof(path), "%s/demo/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    assert_int_equal(count_of(html, "<caption>Key figures</caption>"), 10);
    assert_int_equal(count_of(html, ">correct</td>"), 29); /* 28 runs, one in two comparisons */
    /* the state backends side by side, Flink's figures beside them */
    assert_int_equal(count_of(html, "<caption>State backends: checkpoints, uploads and recovery"), 1);
    assert_int_equal(count_of(html, "generic log-based incremental checkpoints (2022-05)"), 8);
    assert_null(strstr(html, "WRONG"));
    free(html);
    /* What each comparison is there to show. */
    cJSON *slow = load_run("demo/runs/r1"), *fast = load_run("demo/runs/r2");
    assert_true(num(slow, "latency_ms", "p99") > 10 * num(fast, "latency_ms", "p99"));
    cJSON_Delete(slow);
    cJSON_Delete(fast);
    cJSON *bp = load_run("demo/runs/r3"), *room = load_run("demo/runs/r4");
    assert_true(num(bp, "checkpoint_summary", "duration_p50_s") >
                5 * num(room, "checkpoint_summary", "duration_p50_s"));
    cJSON_Delete(bp);
    cJSON_Delete(room);
    /* Two exchanges under backpressure: full buffers take longest, debloated
     * ones less, unaligned checkpoints far less (they store the data they
     * overtook), and a 100 ms aligned-checkpoint timeout about 100 ms. */
    cJSON *full_b = load_run("demo/runs/r5"), *deb = load_run("demo/runs/r6"),
          *unal = load_run("demo/runs/r7"), *tmo = load_run("demo/runs/r8");
    double pf = num(full_b, "checkpoint_summary", "duration_p50_s"),
           pd = num(deb, "checkpoint_summary", "duration_p50_s"),
           pu = num(unal, "checkpoint_summary", "duration_p50_s"),
           pt = num(tmo, "checkpoint_summary", "duration_p50_s");
    assert_true(pf > 2 * pd && pd > 20 * pu);
    assert_true(pt >= 0.1 && pt < 0.2);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(unal, "checkpoints"), 3), "unaligned")));
    cJSON_Delete(full_b);
    cJSON_Delete(deb);
    cJSON_Delete(unal);
    cJSON_Delete(tmo);
    /* N x T: checkpoints grow with the exchanges (r6 is the second). */
    static const char *const nxt[] = {"demo/runs/r9", "demo/runs/r6", "demo/runs/r10",
                                      "demo/runs/r11", "demo/runs/r12"};
    double prev = 0;
    for (int n = 0; n < 5; n++) {
        cJSON *x = load_run(nxt[n]);
        double d = num(x, "checkpoint_summary", "duration_p50_s");
        assert_true(d > prev);
        prev = d;
        cJSON_Delete(x);
    }
    /* A killed process is noticed at once; a lost host only by the
     * heartbeat timeout, which is then most of the recovery. */
    cJSON *killed = load_run("demo/runs/r15"), *lost = load_run("demo/runs/r16"),
          *tuned = load_run("demo/runs/r17");
    double dk = num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(killed, "recoveries"), 0), "detection_s", NULL);
    const cJSON *rl = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(lost, "recoveries"), 0);
    double dl = num(rl, "detection_s", NULL);
    double dt = num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tuned, "recoveries"), 0), "detection_s", NULL);
    assert_true(dk < 0.01);
    assert_true(dl >= 40 && dl <= 50.01 && dl > 0.9 * num(rl, "recovery_s", NULL));
    assert_true(dt >= 4 && dt <= 5.01);
    cJSON_Delete(killed);
    cJSON_Delete(lost);
    cJSON_Delete(tuned);
    /* Region failover restarts tm0's two regions of four; full failover
     * all four, and reads more input again. */
    cJSON *region = load_run("demo/runs/r18"), *full = load_run("demo/runs/r19");
    const cJSON *rr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(region, "recoveries"), 0);
    const cJSON *rf = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(full, "recoveries"), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rr, "restarted_subtasks")), 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rf, "restarted_subtasks")), 4);
    assert_true(num(region, "records_in", NULL) < num(full, "records_in", NULL));
    cJSON_Delete(region);
    cJSON_Delete(full);
    /* The state backends: incremental checkpoints upload far less than
     * full ones; changelog checkpoints are shorter and smaller than
     * incremental ones at p99 (a compaction re-uploads level 1, Flink's
     * spikes); the changelog's full size is the largest (a materialization
     * plus the changelog since it) and its recovery replays, so it
     * restores slower than the incremental one; its one materialization
     * per subtask is the whole of RocksDB's files. */
    cJSON *heap = load_run("demo/runs/r21"), *inc = load_run("demo/runs/r23"),
          *clog = load_run("demo/runs/r24");
    assert_true(5 * num(inc, "checkpoint_summary", "bytes_p50") <
                num(heap, "checkpoint_summary", "bytes_p50"));
    assert_true(2 * num(clog, "checkpoint_summary", "duration_p99_s") <
                num(inc, "checkpoint_summary", "duration_p99_s"));
    assert_true(3 * num(clog, "checkpoint_summary", "bytes_p99") <
                num(inc, "checkpoint_summary", "bytes_p99"));
    assert_true(num(clog, "checkpoint_summary", "last_bytes_full") >
                num(inc, "checkpoint_summary", "last_bytes_full"));
    const cJSON *ri = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(inc, "recoveries"), 0);
    const cJSON *rc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(clog, "recoveries"), 0);
    assert_true(num(rc, "recovery_s", NULL) > num(ri, "recovery_s", NULL));
    assert_true(num(cJSON_GetObjectItemCaseSensitive(rc, "restore"), "replay_s", NULL) >
                num(cJSON_GetObjectItemCaseSensitive(ri, "restore"), "replay_s", NULL));
    const cJSON *m, *mats = cJSON_GetObjectItemCaseSensitive(clog, "materializations");
    assert_int_equal(cJSON_GetArraySize(mats), 4);
    cJSON_ArrayForEach(m, mats)
        assert_true(num(m, "bytes", NULL) > 1e6 && num(m, "bytes", NULL) == num(m, "state_bytes", NULL));
    cJSON_Delete(heap);
    cJSON_Delete(inc);
    cJSON_Delete(clog);
    /* Rescaling 8 -> 4 and back (heap, copy, clip, ingest): each run took
     * its path, both rescales done; the download dominates the rebuild but
     * for the full copy rescaling in; rescaling in, ingest rebuilds
     * fastest, then clip, then copy, and clip's rescale-in takes longer
     * than its rescale-out (FLINK-23399's discussion). */
    static const char *const rsc[] = {"demo/runs/r25", "demo/runs/r26", "demo/runs/r27",
                                      "demo/runs/r28"};
    static const char *const path_in[] = {NULL, "copy", "clip", "ingest"};
    double rebuild_in[4], rebuild_out[4], download_in[4];
    for (int k = 0; k < 4; k++) {
        cJSON *x = load_run(rsc[k]);
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(x, "rescales");
        assert_int_equal(cJSON_GetArraySize(rs), 2);
        for (int i = 0; i < 2; i++) {
            const cJSON *r = cJSON_GetArrayItem(rs, i);
            const cJSON *out = cJSON_GetObjectItemCaseSensitive(r, "outcome");
            assert_string_equal(cJSON_GetStringValue(out), "done");
            const cJSON *rst = cJSON_GetObjectItemCaseSensitive(r, "restore");
            double rb = num(rst, "rebuild_s", NULL), dn = num(rst, "download_s", NULL);
            const cJSON *rbj = cJSON_GetObjectItemCaseSensitive(rst, "rebuild");
            const cJSON *paths = cJSON_GetObjectItemCaseSensitive(rbj, "paths");
            if (path_in[k]) /* in: 4 instances by the run's path; out: 8, copied or clipped */
                assert_true(num(paths, i ? (k == 1 ? "copy" : "clip") : path_in[k], NULL) ==
                            (i ? 8 : 4));
            else
                assert_true(num(rbj, "instances", NULL) == 0);
            if (i == 0) {
                rebuild_in[k] = rb;
                download_in[k] = dn;
            } else {
                rebuild_out[k] = rb;
                assert_true(dn > rb);
            }
        }
        cJSON_Delete(x);
    }
    assert_true(download_in[2] > rebuild_in[2] && download_in[3] > rebuild_in[3] &&
                download_in[0] > rebuild_in[0]);
    assert_true(rebuild_in[1] > download_in[1]);
    assert_true(rebuild_in[3] < rebuild_in[2] && rebuild_in[2] < rebuild_in[1]);
    assert_true(rebuild_in[2] > 1.5 * rebuild_out[2]);
    /* Rendered by Chromium with nothing on the console and no request. */
    render_ok(path, "demo.png");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(comparisons_side_by_side),
        cmocka_unit_test(bad_suites_are_named),
        cmocka_unit_test(default_demo_suite),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
