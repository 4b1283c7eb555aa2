/*
 * test_limits.c - scenarios at the edges of what the backends can hold:
 * many keys, many task managers, runs that reach their time limit, inputs
 * that cannot fit in memory, platform files SimGrid refuses, and an output
 * directory whose disk refuses the keyed state (full, no inodes, no file
 * descriptors left). Each must give a one-line error (exit 2) or a run.json
 * that says the job did not finish (exit 1), never a signal.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "error.h"
#include "memory.h"
#include "runutil.h"
#include "scenario.h"
#include "simplatform.h"
#include "workload.h"

/* A three-operator job; `cluster`, `workload` and `source` are spliced in. */
static const char *scenario_text(const char *cluster, const char *workload, const char *source,
                                 int parallelism, const char *more)
{
    static char text[4096];
    snprintf(text, sizeof(text),
             "{\"seed\": 3, \"cluster\": {%s},\n"
             " \"workload\": {\"keys\": 20, \"partitions\": 2, %s},\n"
             " \"job\": {\"operators\": [\n"
             "   {\"type\": \"source\", \"parallelism\": %d%s},\n"
             "   {\"type\": \"aggregate\", \"partition\": \"hash\", \"parallelism\": %d},\n"
             "   {\"type\": \"sink\", \"parallelism\": %d}]}%s}\n",
             cluster, workload, parallelism, source, parallelism, parallelism, more);
    return text;
}

/* <tmp>/<tag>.err: one line that contains `want`. */
static void one_line_error(const char *tag, const char *want)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *err = slurp(path);
    assert_non_null(err);
    if (!strstr(err, want))
        fprintf(stderr, "%s: got: %s", tag, err);
    assert_non_null(strstr(err, want));
    assert_non_null(strchr(err, '\n'));
    assert_true(strchr(err, '\n') == err + strlen(err) - 1);
    free(err);
}

/* The last line of <tmp>/<tag>.err contains `want` (the lines before it
 * are the job's own log of its faults). */
static void last_line_has(const char *tag, const char *want)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *err = slurp(path);
    assert_non_null(err);
    size_t n = strlen(err);
    assert_true(n > 0 && err[n - 1] == '\n');
    err[n - 1] = 0;
    const char *last = strrchr(err, '\n');
    last = last ? last + 1 : err;
    if (!strstr(last, want))
        fprintf(stderr, "%s: got: %s\n", tag, last);
    assert_non_null(strstr(last, want));
    free(err);
}

/* ---- keys --------------------------------------------------------------------- */

/* Keys from user-10000000 on take 13 bytes: the key texts were sized at 12
 * a key and overflowed from 11 111 127 keys on. */
static void test_many_keys(void **state)
{
    (void)state;
    assert_int_equal(ck_workload_key_bytes(1), 6);
    assert_int_equal(ck_workload_key_bytes(10), 60);
    assert_int_equal(ck_workload_key_bytes(11), 67);
    assert_int_equal(ck_workload_key_bytes(11111127), 133333541);
    ck_workload_spec spec = {.partitions = 3, .keys = 11200000, .record_bytes = 100};
    snprintf(spec.topic, sizeof(spec.topic), "t");
    spec.steps[0].rps = 1;
    spec.nsteps = 1;
    ck_workload w;
    assert_int_equal(ck_workload_generate(&w, &spec, 1), CK_OK);
    uint64_t bytes = w.key_off[w.nkeys];
    assert_true(bytes == ck_workload_key_bytes(spec.keys));
    /* Every key's text lies inside the allocation. */
    assert_true(malloc_usable_size(w.key_text) >= bytes);
    uint32_t len;
    const char *k = ck_workload_key(&w, (uint32_t)(spec.keys - 1), &len);
    assert_int_equal(len, 13);
    assert_memory_equal(k, "user-11199999", 13);
    k = ck_workload_key(&w, 9999999, &len);
    assert_int_equal(len, 12);
    assert_memory_equal(k, "user-9999999", 12);
    ck_workload_free(&w);
}

/* ---- task managers ---------------------------------------------------------------- */

static void test_implied_taskmanagers(void **state)
{
    (void)state;
    static ck_scenario sc;
    char err[1200];
    const char *wl = "\"duration\": \"1 s\", \"rate\": 10";
    /* Left out, the count follows from the job: 4097 slots of one each. */
    int rc = ck_scenario_parse(&sc, "big.json", scenario_text("", wl, "", 4097, ""), err,
                               sizeof(err));
    assert_int_equal(rc, CK_EINVAL);
    assert_non_null(strstr(err, "big.json: job.operators: the job needs 4097 slots"));
    assert_non_null(strstr(err, "4097 task managers, more than the 4096"));
    /* Two slots each: 2049 task managers. */
    rc = ck_scenario_parse(&sc, "big.json",
                           scenario_text("", wl, "", 4097,
                                         ", \"config\": {\"taskmanager.numberOfTaskSlots\": 2}"),
                           err, sizeof(err));
    assert_int_equal(rc, CK_OK);
    assert_int_equal(ck_scenario_taskmanagers(&sc), 2049);
    ck_scenario_free(&sc);
    rc = ck_scenario_parse(&sc, "ok.json", scenario_text("", wl, "", 4096, ""), err, sizeof(err));
    assert_int_equal(rc, CK_OK);
    assert_int_equal(ck_scenario_taskmanagers(&sc), 4096);
    ck_scenario_free(&sc);
}

/* The generated platform grows linearly with the hosts (a route per pair
 * of hosts made 4096 task managers write 2.4 GB). */
static void test_platform_linear(void **state)
{
    (void)state;
    static ck_scenario sc;
    char err[1200];
    assert_int_equal(ck_scenario_parse(&sc, "p.json",
                                       scenario_text("", "\"duration\": \"1 s\", \"rate\": 10",
                                                     "", 1, ""),
                                       err, sizeof(err)),
                     CK_OK);
    size_t size[2];
    const int ntm[2] = {10, 1000};
    for (int i = 0; i < 2; i++) {
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size[i]);
        assert_non_null(f);
        assert_int_equal(ck_simplat_write(f, &sc.cluster, sc.faults, sc.nfaults, ntm[i]), CK_OK);
        fclose(f);
        assert_non_null(strstr(buf, "<host id=\"tm9\""));
        assert_non_null(strstr(buf, "<host_link id=\"tm0\" up=\"link_tm0_UP\""));
        assert_non_null(strstr(buf, "<route src=\"store\" dst=\"store\"><link_ctn id=\"lo_store\"/>"));
        free(buf);
    }
    /* At most ~600 bytes a host, whatever the count. */
    assert_true(size[0] < 600 * 12);
    assert_true(size[1] < 600 * 1002);
    ck_scenario_free(&sc);
}

/* ---- the time limit ------------------------------------------------------------------ */

/* A job that cannot finish in time: each record costs 1000 s of CPU. It
 * ends at the limit with run.json saying so, and exit 1 even when its
 * expect block holds. */
static void test_time_limit(void **state)
{
    (void)state;
    const char *text = scenario_text(
        "\"taskmanagers\": 2", "\"duration\": \"1 s\", \"rate\": 100",
        ", \"cpu_per_record\": 1e12", 2,
        ", \"events\": [{\"at\": \"500 ms\", \"action\": \"crash\", \"host\": \"tm1\","
        " \"restart_after\": \"1 s\"}], \"expect\": {\"job.state\": \"TIME_LIMIT\"},"
        " \"config\": {\"restart-strategy.type\": \"fixed-delay\","
        " \"restart-strategy.fixed-delay.attempts\": 5}");
    const char *path = put_file("slow.json", text);
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/slow", path, tmp);
    assert_chandy("slow", args, 1);
    last_line_has("slow", "slow.json: the job did not finish: simulated time limit 411.5 s "
                          "reached with the job RUNNING");
    cJSON *run = load_run("slow");
    const cJSON *job = cJSON_GetObjectItem(run, "job");
    assert_string_equal(cJSON_GetObjectItem(job, "state")->valuestring, "TIME_LIMIT");
    const char *why = cJSON_GetObjectItem(job, "failure")->valuestring;
    assert_non_null(strstr(why, "simulated time limit"));
    assert_non_null(strstr(why, "reached with the job RUNNING"));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(job, "failed_because")));
    /* 10 x 1 s + 300 s + the crash (at 0.5 s, back 1 s later) + 2 x the 50 s heartbeat timeout. */
    double limit = num(job, "time_limit_s", NULL);
    assert_true(limit == 411.5);
    assert_true(num(run, "sim_time_s", NULL) == limit);
    /* What it wrote is checked as part of the output: right, and missing. */
    const cJSON *c = cJSON_GetObjectItem(run, "correctness");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "partial")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")));
    assert_true(num(c, "lost", NULL) > 0 && num(c, "unexpected", NULL) == 0);
    cJSON_Delete(run);
    /* A job that finishes says how long it was allowed. */
    path = put_file("quick.json", scenario_text("\"taskmanagers\": 1",
                                                "\"duration\": \"1 s\", \"rate\": 100", "", 1,
                                                ""));
    snprintf(args, sizeof(args), "run %s --out %s/quick", path, tmp);
    assert_chandy("quick", args, 0);
    run = load_run("quick");
    job = cJSON_GetObjectItem(run, "job");
    assert_string_equal(cJSON_GetObjectItem(job, "state")->valuestring, "FINISHED");
    assert_true(num(job, "time_limit_s", NULL) == 310);
    cJSON_Delete(run);
}

/* ---- memory ------------------------------------------------------------------------ */

static void test_memory_refused(void **state)
{
    (void)state;
    /* 2 000 000 000 records: refused before anything is generated. */
    const char *path = put_file("huge.json", scenario_text("\"taskmanagers\": 1",
                                                           "\"duration\": \"2 s\", \"rate\": 1e9",
                                                           "", 1, ""));
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/huge", path, tmp);
    assert_chandy("huge", args, 2);
    one_line_error("huge", "workload: needs about ");
    one_line_error("huge", " GB of memory for 2000000000 records (rate x duration); this machine has ");
    struct stat st;
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/huge", tmp);
    assert_int_not_equal(stat(dir, &st), 0); /* nothing was started */
    /* The shipped scenarios and the 10 M-record benchmark fit with room. */
    static const char *const files[] = {
        "scenarios/demo.json", "scenarios/backpressure.json",
        "scenarios/checkpoint-backpressure.json", "scenarios/crash-during-checkpoint.json",
        "bench/keyed-count.json", "bench/checkpoint-overhead.json"};
    static ck_scenario sc;
    char err[1200];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", CHANDY_SOURCE_DIR, files[i]);
        assert_int_equal(ck_scenario_load(&sc, p, err, sizeof(err)), CK_OK);
        ck_mem_estimate e;
        ck_mem_estimate_run(&sc, &e);
        assert_true(e.records > 0 && e.bytes < 2e9);
        if (strstr(files[i], "keyed-count")) {
            /* bench_throughput scales it to 10 M records and 1 M keys. */
            sc.workload.duration = 100 * CK_NS_PER_S;
            sc.workload.keys = 1000000;
            ck_mem_estimate_run(&sc, &e);
            assert_true(e.records > 9.99e6 && e.records < 1.001e7);
            assert_true(e.bytes > 1e9 && e.bytes < 4e9);
        }
        ck_scenario_free(&sc);
    }
    /* 4096 x 4096 subtasks behind a hash edge: 16 M channels. */
    assert_int_equal(ck_scenario_parse(&sc, "wide.json",
                                       scenario_text("", "\"duration\": \"1 s\", \"rate\": 10",
                                                     "", 4096,
                                                     ", \"config\": {\"taskmanager."
                                                     "numberOfTaskSlots\": 1024}"),
                                       err, sizeof(err)),
                     CK_OK);
    ck_mem_estimate e;
    ck_mem_estimate_run(&sc, &e);
    assert_true(e.bytes > 1e11);
    ck_scenario_free(&sc);
    /* 16 x 16 at first, rescaled to 4096 x 4096: its widest generation's
     * channels count. */
    assert_int_equal(ck_scenario_parse(&sc, "grows.json",
                                       scenario_text("", "\"duration\": \"1 s\", \"rate\": 10",
                                                     "", 16,
                                                     ", \"config\": {\"taskmanager."
                                                     "numberOfTaskSlots\": 1024}"),
                                       err, sizeof(err)),
                     CK_OK);
    ck_mem_estimate narrow, wide;
    ck_mem_estimate_run(&sc, &narrow);
    assert_true(narrow.bytes < 1e10);
    ck_fault *rs = &sc.faults[sc.nfaults++];
    memset(rs, 0, sizeof(*rs));
    rs->kind = CK_FAULT_RESCALE;
    for (int k = 0; k < sc.graph.spec.nops; k++)
        rs->par[k] = 4096;
    ck_mem_estimate_run(&sc, &wide);
    assert_true(wide.bytes > 1e11);
    ck_scenario_free(&sc);
    /* Records scale it: twice the input, about twice the memory. */
    assert_int_equal(ck_scenario_parse(&sc, "x.json",
                                       scenario_text("", "\"duration\": \"100 s\", \"rate\": 1e6",
                                                     "", 1, ""),
                                       err, sizeof(err)),
                     CK_OK);
    ck_mem_estimate a, b;
    ck_mem_estimate_run(&sc, &a);
    sc.workload.duration *= 2;
    ck_mem_estimate_run(&sc, &b);
    assert_true(a.records == 1e8 && b.records == 2e8);
    assert_true(b.bytes > 1.9 * a.bytes - 1e9 && b.bytes < 2 * a.bytes);
    ck_scenario_free(&sc);
}

/* ---- platform files ------------------------------------------------------------------ */

static void test_platform_files(void **state)
{
    (void)state;
    char args[800], plat[300];
    const char *wl = "\"duration\": \"500 ms\", \"rate\": 100";
    /* Missing, a directory, not XML: validate refuses them. */
    static const struct {
        const char *file, *want;
    } bad[] = {
        {"/nonexistent/platform.xml", "cluster.platform: /nonexistent/platform.xml: No such file"},
        {"/etc", "cluster.platform: /etc: a directory, not a regular file"},
        {"/etc/passwd", "cluster.platform: /etc/passwd: not XML"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(plat, sizeof(plat), "\"taskmanagers\": 1, \"platform\": \"%s\"", bad[i].file);
        const char *path = put_file("plat.json", scenario_text(plat, wl, "", 1, ""));
        snprintf(args, sizeof(args), "validate %s", path);
        assert_chandy("pv", args, 2);
        one_line_error("pv", bad[i].want);
        snprintf(args, sizeof(args), "run %s --out %s/pr", path, tmp);
        assert_chandy("pr", args, 2);
        one_line_error("pr", bad[i].want);
    }
#define DOCTYPE "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    /* XML that SimGrid refuses at load: a one-line error, exit 2, no signal. */
    static const struct {
        const char *xml, *want;
    } refused[] = {
        {"<platform version=\"4.1\"><zone", "Parse error at "},
        {"<?xml version='1.0'?>\n" DOCTYPE "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
         "<host id=\"tm0\" speed=\"1Gf\"/>\n<route src=\"tm0\" dst=\"tm0\"><link_ctn id=\"nolink\"/>"
         "</route>\n</zone>\n</platform>\n",
         "Link not found: nolink"},
        /* Loads, but has no store. */
        {"<?xml version='1.0'?>\n" DOCTYPE "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
         "<host id=\"tm0\" speed=\"1Gf\"/>\n<host id=\"jm\" speed=\"1Gf\"/>\n</zone>\n</platform>\n",
         "the platform needs a host \"store\""},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_non_null(put_file("refused.xml", refused[i].xml));
        const char *path = put_file(
            "plat.json",
            scenario_text("\"taskmanagers\": 1, \"platform\": \"refused.xml\"", wl, "", 1, ""));
        snprintf(args, sizeof(args), "run %s --out %s/pl", path, tmp);
        assert_chandy("pl", args, 2);
        one_line_error("pl", refused[i].want);
    }
    /* The platform a run generated serves as a platform file. */
    const char *path = put_file("gen.json", scenario_text("\"taskmanagers\": 2", wl, "", 2, ""));
    snprintf(args, sizeof(args), "run %s --out %s/gen", path, tmp);
    assert_chandy("gen", args, 0);
    path = put_file("own.json",
                    scenario_text("\"taskmanagers\": 2, \"platform\": \"gen/platform.xml\"", wl,
                                  "", 2, ""));
    snprintf(args, sizeof(args), "run %s --out %s/own", path, tmp);
    assert_chandy("own", args, 0);
    cJSON *a = load_run("gen"), *b = load_run("own");
    assert_true(num(a, "records_out", NULL) == num(b, "records_out", NULL));
    assert_true(num(a, "sim_time_s", NULL) == num(b, "sim_time_s", NULL));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* ---- a local disk that refuses the state backend ------------------------------------ */

/* `chandy <args>` run by the shell after `prefix` (a ulimit); returns its
 * exit status (128 + the signal when one ended it). */
static int chandy_after(const char *prefix, const char *tag, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "cd %s && (%s %s %s) > %s/%s.out 2> %s/%s.err", CHANDY_SOURCE_DIR,
             prefix, CHANDY_BIN, args, tmp, tag, tmp, tag);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A keyed operator's RocksDB that cannot open (too many open files, a full
 * disk, no inodes) fails its task, and the restart strategy decides: the
 * run ends with exit 1 and a run.json that says why, or, when not even
 * run.json fits, with a last line saying so. Never a signal. */
static void test_state_backend_cannot_open(void **state)
{
    (void)state;
    char args[800];
    snprintf(args, sizeof(args), "run scenarios/keyed-state-rocksdb.json --quiet --out %s/nofd",
             tmp);
    int st = chandy_after("ulimit -n 48;", "nofd", args);
    if (st != 1)
        chandy_show_err("nofd", st, 1);
    assert_int_equal(st, 1);
    cJSON *run = try_load_run("nofd");
    if (run) {
        const cJSON *job = cJSON_GetObjectItem(run, "job");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(job, "state")), "FAILED");
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(job, "failure"));
        assert_non_null(why);
        assert_non_null(strstr(why, "cannot open the state backend: "));
        assert_non_null(strstr(why, "cannot open RocksDB"));
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(job, "failed_because")),
                            "restarts_exhausted");
        cJSON_Delete(run);
    } else {
        /* RocksDB's threads (and a sanitizer's) may still hold the
         * descriptors as run.json is written: the run then says so last. */
        last_line_has("nofd", "run.json: cannot write: Too many open files");
    }

    /* The output directory on a small tmpfs: mounting needs root. */
    static const struct {
        const char *opts, *tag;
        int has_run; /* run.json fits; else the last line of stderr says it does not */
    } disks[] = {
        {"size=2m", "full2m", 1},
        {"size=16k", "full16k", 0},
        {"nr_inodes=12", "noinodes", 0},
    };
    for (size_t i = 0; i < sizeof(disks) / sizeof(disks[0]); i++) {
        char mnt[200], cmd[600];
        snprintf(mnt, sizeof(mnt), "%s/mnt-%s", tmp, disks[i].tag);
        assert_int_equal(mkdir(mnt, 0755), 0);
        snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o %s tmpfs %s 2>/dev/null", disks[i].opts,
                 mnt);
        if (system(cmd) != 0) {
            fprintf(stderr, "skipped: cannot mount a tmpfs at %s (needs root): the full-disk "
                            "cases are not run\n",
                    mnt);
            skip();
        }
        snprintf(args, sizeof(args), "run scenarios/keyed-state-rocksdb.json --quiet --out %s/o",
                 mnt);
        st = chandy_after("", disks[i].tag, args);
        char rel[300];
        snprintf(rel, sizeof(rel), "mnt-%s/o", disks[i].tag);
        run = try_load_run(rel);
        snprintf(cmd, sizeof(cmd), "umount %s", mnt);
        int unmounted = system(cmd) == 0;
        if (st != 1)
            chandy_show_err(disks[i].tag, st, 1);
        assert_int_equal(st, 1);
        assert_true(unmounted);
        if (disks[i].has_run) {
            /* Whichever write the full disk refuses first says so: the
             * sinks' output (run.json's error), or a store upload or the
             * local disk's RocksDB, which fail the job once the restart
             * strategy gives up (job.failure). */
            assert_non_null(run);
            const char *error = cJSON_GetStringValue(cJSON_GetObjectItem(run, "error"));
            const char *failure = cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "failure"));
            if (!(error && strstr(error, "No space left on device")) &&
                !(failure && strstr(failure, "No space left on device")))
                fail_msg("%s: neither run.json's error (%s) nor job.failure (%s) names the "
                         "full disk",
                         disks[i].tag, error ? error : "null", failure ? failure : "null");
        } else {
            assert_null(run);
            last_line_has(disks[i].tag, "run.json: cannot write: No space left on device");
        }
        cJSON_Delete(run);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_implied_taskmanagers),
        cmocka_unit_test(test_platform_linear),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_memory_refused),
        cmocka_unit_test(test_platform_files),
        cmocka_unit_test(test_state_backend_cannot_open),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
