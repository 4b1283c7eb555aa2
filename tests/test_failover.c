/*
 * test_failover.c - failures and recovery.
 *
 * The restart strategies alone (their delays, limits and resets), then
 * whole runs through the chandy binary with crashes: for 20 seeds and both
 * checkpointing modes, a crash at a seed-chosen time, a crash while a
 * checkpoint is being uploaded to the store, and a second crash while the
 * job is still recovering from the first. Every run must keep its
 * guarantee (exactly-once: nothing lost, nothing duplicated; at-least-once:
 * nothing lost) and report its recoveries with phases in order.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config.h"
#include "restart.h"
#include "runutil.h"

#define MS CK_NS_PER_MS
#define SEEDS 20

/* ---- restart strategies -------------------------------------------------------- */

static void set(ck_config *c, const char *key, const char *value)
{
    int id = ck_config_find(key);
    assert_true(id >= 0);
    int64_t v;
    assert_int_equal(ck_config_parse((ck_cfg_id)id, value, &v), 0);
    c->v[id] = v;
    c->set[id] = 1;
}

static void test_restart_none(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "none");
    ck_restart r;
    ck_restart_init(&r, &c, 1);
    ck_time d = -1;
    assert_int_equal(ck_restart_on_failure(&r, 0, &d), 0);
    ck_restart_free(&r);
}

static void test_restart_fixed_delay(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "fixed-delay");
    set(&c, "restart-strategy.fixed-delay.attempts", "3");
    set(&c, "restart-strategy.fixed-delay.delay", "250 ms");
    ck_restart r;
    ck_restart_init(&r, &c, 1);
    for (int i = 0; i < 3; i++) {
        ck_time d = -1;
        assert_int_equal(ck_restart_on_failure(&r, (ck_time)i * 1000 * MS, &d), 1);
        assert_int_equal(d, 250 * MS);
    }
    ck_time d;
    assert_int_equal(ck_restart_on_failure(&r, 5000 * MS, &d), 0);
    ck_restart_free(&r);
}

static void test_restart_failure_rate(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "failure-rate");
    set(&c, "restart-strategy.failure-rate.max-failures-per-interval", "2");
    set(&c, "restart-strategy.failure-rate.failure-rate-interval", "10 s");
    set(&c, "restart-strategy.failure-rate.delay", "1 s");
    ck_restart r;
    ck_restart_init(&r, &c, 1);
    ck_time d;
    assert_int_equal(ck_restart_on_failure(&r, 0, &d), 1);
    assert_int_equal(d, 1000 * MS);
    assert_int_equal(ck_restart_on_failure(&r, 4000 * MS, &d), 1);
    /* A third failure within 10 s of the first two: give up. */
    assert_int_equal(ck_restart_on_failure(&r, 9000 * MS, &d), 0);
    ck_restart_free(&r);
    /* Spread out, failures never pile up. */
    ck_restart_init(&r, &c, 1);
    for (int i = 0; i < 10; i++)
        assert_int_equal(ck_restart_on_failure(&r, (ck_time)i * 6000 * MS, &d), 1);
    ck_restart_free(&r);
}

static void test_restart_exponential_delay(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "exponential-delay");
    set(&c, "restart-strategy.exponential-delay.initial-backoff", "1 s");
    set(&c, "restart-strategy.exponential-delay.max-backoff", "5 s");
    set(&c, "restart-strategy.exponential-delay.backoff-multiplier", "2.0");
    set(&c, "restart-strategy.exponential-delay.jitter-factor", "0.1");
    set(&c, "restart-strategy.exponential-delay.reset-backoff-threshold", "1 min");
    ck_restart r;
    ck_restart_init(&r, &c, 7);
    /* 1, 2, 4, 5, 5 s, each within +/- 10 %. */
    const double want[] = {1, 2, 4, 5, 5};
    ck_time now = 0, d = 0;
    int jittered = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ck_restart_on_failure(&r, now, &d), 1);
        double s = (double)d / 1e9;
        assert_true(s >= want[i] * 0.9 - 1e-9 && s <= want[i] * 1.1 + 1e-9);
        jittered += s != want[i];
        now += d + 1000 * MS;
    }
    assert_true(jittered > 0);
    /* A minute without failure: back to the initial backoff. */
    now += 61000 * MS;
    assert_int_equal(ck_restart_on_failure(&r, now, &d), 1);
    assert_true((double)d / 1e9 <= 1.1);
    ck_restart_free(&r);
    /* The jitter is the run's: same seed, same delays. */
    ck_restart a, b;
    ck_restart_init(&a, &c, 42);
    ck_restart_init(&b, &c, 42);
    ck_time da, db;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ck_restart_on_failure(&a, (ck_time)i * MS, &da), 1);
        assert_int_equal(ck_restart_on_failure(&b, (ck_time)i * MS, &db), 1);
        assert_int_equal(da, db);
    }
    ck_restart_free(&a);
    ck_restart_free(&b);
    /* attempts-before-reset-backoff bounds the restarts. */
    set(&c, "restart-strategy.exponential-delay.attempts-before-reset-backoff", "2");
    ck_restart_init(&a, &c, 1);
    assert_int_equal(ck_restart_on_failure(&a, 0, &da), 1);
    assert_int_equal(ck_restart_on_failure(&a, 10 * MS, &da), 1);
    assert_int_equal(ck_restart_on_failure(&a, 20 * MS, &da), 0);
    ck_restart_free(&a);
}

/* ---- crash runs ------------------------------------------------------------------ */

/*
 * Three task managers of one slot for a job of parallelism 2: one is spare.
 * State is spread over 20000 keys and the store is slow (1 MB/s), so
 * checkpoint uploads and restores take 100-250 ms. Checkpoints every 500 ms
 * (triggered at 0.5, 1.0, 1.5 s, ... until a failure), fixed-delay restarts
 * after 100 ms.
 */
static const char *scenario(char *buf, size_t len, const char *name, int seed, const char *mode,
                            int taskmanagers, const char *events)
{
    snprintf(buf, len,
             "{\"name\": \"%s\", \"seed\": %d,\n"
             " \"cluster\": {\"taskmanagers\": %d, \"cores\": 2, \"store\": {\"bandwidth\": \"1MBps\"}},\n"
             " \"workload\": {\"duration\": \"3 s\", \"rate\": 3000, \"partitions\": 4,\n"
             "   \"keys\": 20000, \"distribution\": \"uniform\", \"record_bytes\": 80,\n"
             "   \"disorder\": \"50 ms\"},\n"
             " \"job\": {\"operators\": [\n"
             "   {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 2,\n"
             "    \"out_of_orderness\": \"100 ms\"},\n"
             "   {\"name\": \"some\", \"type\": \"filter\", \"keep\": 0.9, \"parallelism\": 2},\n"
             "   {\"name\": \"count\", \"type\": \"aggregate\", \"fn\": \"count\", \"parallelism\": 2},\n"
             "   {\"name\": \"counts\", \"type\": \"sink\", \"parallelism\": 2},\n"
             "   {\"name\": \"per-200ms\", \"type\": \"window\", \"input\": \"some\",\n"
             "    \"size\": \"200 ms\", \"fn\": \"count\", \"parallelism\": 2},\n"
             "   {\"name\": \"windows\", \"type\": \"sink\", \"parallelism\": 2}]},\n"
             " \"config\": {\"taskmanager.numberOfTaskSlots\": 1,\n"
             "   \"execution.buffer-timeout\": \"20 ms\",\n"
             "   \"execution.checkpointing.interval\": \"500 ms\",\n"
             "   \"execution.checkpointing.mode\": \"%s\",\n"
             "   \"restart-strategy.type\": \"fixed-delay\",\n"
             "   \"restart-strategy.fixed-delay.attempts\": 10,\n"
             "   \"restart-strategy.fixed-delay.delay\": \"100 ms\"},\n"
             " \"events\": [%s]}\n",
             name, seed, taskmanagers, mode, events);
    return buf;
}

static const cJSON *item(const cJSON *j, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    assert_non_null(x);
    return x;
}

static int is_null(const cJSON *j, const char *k)
{
    return cJSON_IsNull(item(j, k));
}

/* Runs one scenario; checks the guarantee held and the recoveries make
 * sense. Returns the parsed run.json. */
static cJSON *crash_run(const char *name, int seed, int exactly_once, int taskmanagers,
                        const char *events, const char *backend)
{
    char text[4096], file[64], args[512];
    scenario(text, sizeof(text), name, seed, exactly_once ? "EXACTLY_ONCE" : "AT_LEAST_ONCE",
             taskmanagers, events);
    snprintf(file, sizeof(file), "%s.json", name);
    const char *path = put_file(file, text);
    assert_non_null(path);
    snprintf(args, sizeof(args), "run %s --backend %s --out %s/%s", path, backend, tmp, name);
    int st = chandy(name, args);
    cJSON *run = try_load_run(name);
    if (st != 0 || !run) {
        char errf[256];
        snprintf(errf, sizeof(errf), "%s/%s.err", tmp, name);
        char *err = slurp(errf);
        fprintf(stderr, "%s (seed %d): exit %d\n%s\n", name, seed, st, err ? err : "");
        free(err);
    }
    assert_int_equal(st, 0);
    assert_non_null(run);
    assert_string_equal(item(item(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *c = item(run, "correctness");
    assert_string_equal(item(c, "guarantee")->valuestring,
                        exactly_once ? "exactly-once" : "at-least-once");
    if (!cJSON_IsTrue(item(c, "ok")) || num(c, "lost", NULL) != 0 ||
        (exactly_once && num(c, "duplicated", NULL) != 0))
        fprintf(stderr, "%s (seed %d): lost %.0f, duplicated %.0f, unexpected %.0f\n", name, seed,
                num(c, "lost", NULL), num(c, "duplicated", NULL), num(c, "unexpected", NULL));
    assert_true(cJSON_IsTrue(item(c, "ok")));
    assert_true(num(c, "lost", NULL) == 0);
    assert_true(num(c, "unexpected", NULL) == 0);
    if (exactly_once)
        assert_true(num(c, "duplicated", NULL) == 0);
    assert_true(num(c, "received", NULL) >= num(c, "expected", NULL));

    /* Every recovery that finished went through its phases in order. */
    const cJSON *recs = item(run, "recoveries");
    assert_true(cJSON_GetArraySize(recs) >= 1);
    const cJSON *r;
    cJSON_ArrayForEach(r, recs) {
        double f = num(r, "failure_s", NULL), d = num(r, "detected_s", NULL);
        assert_true(f <= d);
        if (is_null(r, "restarted_s"))
            continue;
        double rs = num(r, "restarted_s", NULL);
        /* fixed-delay waits 100 ms (sockets: wall-clock scheduling adds some) */
        assert_true(rs >= d + 0.0999);
        if (is_null(r, "restored_s"))
            continue;
        double ro = num(r, "restored_s", NULL);
        assert_true(ro >= rs);
        if (is_null(r, "caught_up_s"))
            continue;
        double cu = num(r, "caught_up_s", NULL);
        assert_true(cu >= ro);
        assert_true(fabs(num(r, "recovery_s", NULL) - (cu - f)) < 1e-5); /* rounded to us */
    }
    /* The last recovery completed. */
    const cJSON *last = cJSON_GetArrayItem(recs, cJSON_GetArraySize(recs) - 1);
    assert_false(is_null(last, "caught_up_s"));
    return run;
}

/* The checkpoint the job restored from in its last recovery (0: none). */
static double restored_checkpoint(const cJSON *run)
{
    const cJSON *recs = item(run, "recoveries");
    const cJSON *last = cJSON_GetArrayItem(recs, cJSON_GetArraySize(recs) - 1);
    return is_null(last, "checkpoint") ? 0 : num(last, "checkpoint", NULL);
}

/* A crash of a task manager running the job, at a time chosen by the seed. */
static void crash_sweep(int exactly_once)
{
    for (int seed = 1; seed <= SEEDS; seed++) {
        char name[64], ev[256];
        snprintf(name, sizeof(name), "crash-%s-%d", exactly_once ? "eo" : "alo", seed);
        int at = 600 + (seed * 97) % 1800;
        snprintf(ev, sizeof(ev),
                 "{\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\","
                 " \"restart_after\": \"1 s\"}",
                 at, seed % 2);
        cJSON *run = crash_run(name, seed, exactly_once, 3, ev, "simgrid");
        const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
        assert_true(fabs(num(r, "failure_s", NULL) - at / 1000.0) < 1e-9);
        /* A spare task manager is there: the restart waits for the delay only. */
        assert_true(num(r, "restarted_s", NULL) <= num(r, "detected_s", NULL) + 0.101);
        /* After the first completed checkpoint, the job restores from one. */
        if (at > 800)
            assert_true(restored_checkpoint(run) >= 1);
        const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
        assert_string_equal(item(f, "action")->valuestring, "crash");
        cJSON_Delete(run);
    }
}

static void test_crash_exactly_once(void **state)
{
    (void)state;
    crash_sweep(1);
}

static void test_crash_at_least_once(void **state)
{
    (void)state;
    crash_sweep(0);
}

/* A crash 20-100 ms after checkpoint 3 was triggered at 1.5 s: its state
 * is still on its way to the store (1 MB/s). The checkpoint is aborted and
 * the job restores checkpoint 2. */
static void upload_sweep(int exactly_once)
{
    for (int seed = 1; seed <= SEEDS; seed++) {
        char name[64], ev[256];
        snprintf(name, sizeof(name), "upload-%s-%d", exactly_once ? "eo" : "alo", seed);
        int at = 1520 + 20 * (seed % 5);
        snprintf(ev, sizeof(ev),
                 "{\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\","
                 " \"restart_after\": \"500 ms\"}",
                 at, seed % 2);
        cJSON *run = crash_run(name, seed, exactly_once, 3, ev, "simgrid");
        /* Checkpoint 3 was in flight and never completed. */
        const cJSON *cp;
        int inflight = 0;
        cJSON_ArrayForEach(cp, item(run, "checkpoints")) {
            if (num(cp, "id", NULL) == 3) {
                assert_true(num(cp, "trigger_s", NULL) < at / 1000.0);
                assert_string_equal(item(cp, "status")->valuestring, "aborted");
                inflight = 1;
            }
        }
        assert_true(inflight);
        assert_true(restored_checkpoint(run) == 2);
        cJSON_Delete(run);
    }
}

static void test_crash_during_upload_exactly_once(void **state)
{
    (void)state;
    upload_sweep(1);
}

static void test_crash_during_upload_at_least_once(void **state)
{
    (void)state;
    upload_sweep(0);
}

/* tm0 crashes; the job restarts on tm1 and tm2 100 ms later and downloads
 * its state; 10-60 ms into that, one of them crashes too. Only one task
 * manager is left: the job waits for tm0 to come back (1 s after its
 * crash), then recovers. */
static void recovery_sweep(int exactly_once)
{
    for (int seed = 1; seed <= SEEDS; seed++) {
        char name[64], ev[512];
        snprintf(name, sizeof(name), "again-%s-%d", exactly_once ? "eo" : "alo", seed);
        int at = 1100 + 50 * (seed % 8), again = at + 110 + 10 * (seed % 6);
        snprintf(ev, sizeof(ev),
                 "{\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm0\","
                 " \"restart_after\": \"1 s\"},"
                 " {\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\"}",
                 at, again, 1 + seed % 2);
        cJSON *run = crash_run(name, seed, exactly_once, 3, ev, "simgrid");
        const cJSON *recs = item(run, "recoveries");
        assert_int_equal(cJSON_GetArraySize(recs), 2);
        const cJSON *r0 = cJSON_GetArrayItem(recs, 0), *r1 = cJSON_GetArrayItem(recs, 1);
        /* The second failure hit the first recovery before it was restored. */
        assert_true(fabs(num(r0, "failure_s", NULL) - at / 1000.0) < 1e-9);
        assert_true(fabs(num(r1, "failure_s", NULL) - again / 1000.0) < 1e-9);
        assert_true(num(r0, "restarted_s", NULL) < again / 1000.0);
        assert_true(is_null(r0, "restored_s") || num(r0, "restored_s", NULL) > again / 1000.0);
        assert_true(is_null(r0, "caught_up_s"));
        /* The second restart waited for tm0 to come back. */
        assert_true(num(r1, "restarted_s", NULL) >= at / 1000.0 + 1.0);
        cJSON_Delete(run);
    }
}

static void test_crash_during_recovery_exactly_once(void **state)
{
    (void)state;
    recovery_sweep(1);
}

static void test_crash_during_recovery_at_least_once(void **state)
{
    (void)state;
    recovery_sweep(0);
}

/* Real processes: a task manager is killed with SIGKILL and started again a
 * second later. With two task managers, both run part of the job (which
 * registers first is up to the OS) and the job waits for the restart. */
static void test_crash_sockets(void **state)
{
    (void)state;
    for (int eo = 0; eo <= 1; eo++) {
        char name[64];
        snprintf(name, sizeof(name), "sockets-%s", eo ? "eo" : "alo");
        cJSON *run = crash_run(name, 3, eo, 2,
                               "{\"at\": \"1300 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                               " \"restart_after\": \"1 s\"}",
                               "sockets");
        assert_string_equal(item(run, "backend")->valuestring, "sockets");
        if (eo)
            assert_true(restored_checkpoint(run) >= 1);
        cJSON_Delete(run);
    }
}

/* Without restarts, a crash fails the job: exit status 1, and run.json
 * says why. */
static void test_no_restart_fails_the_job(void **state)
{
    (void)state;
    char text[4096], args[512];
    scenario(text, sizeof(text), "norestart", 1, "EXACTLY_ONCE", 2,
             "{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"tm0\"}");
    char *p = strstr(text, "\"fixed-delay\",");
    assert_non_null(p);
    memcpy(p, "\"none\",       ", 14);
    const char *path = put_file("norestart.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/norestart", path, tmp);
    assert_int_equal(chandy("norestart", args), 1);
    cJSON *run = load_run("norestart");
    const cJSON *job = item(run, "job");
    assert_string_equal(item(job, "state")->valuestring, "FAILED");
    assert_non_null(strstr(item(job, "failure")->valuestring, "tm0"));
    assert_non_null(strstr(item(job, "failure")->valuestring, "none"));
    cJSON_Delete(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_none),
        cmocka_unit_test(test_restart_fixed_delay),
        cmocka_unit_test(test_restart_failure_rate),
        cmocka_unit_test(test_restart_exponential_delay),
        cmocka_unit_test(test_crash_exactly_once),
        cmocka_unit_test(test_crash_at_least_once),
        cmocka_unit_test(test_crash_during_upload_exactly_once),
        cmocka_unit_test(test_crash_during_upload_at_least_once),
        cmocka_unit_test(test_crash_during_recovery_exactly_once),
        cmocka_unit_test(test_crash_during_recovery_at_least_once),
        cmocka_unit_test(test_crash_sockets),
        cmocka_unit_test(test_no_restart_fails_the_job),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
