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
 *
 * Then the rest of the fault timeline (partitions, links down, slowness,
 * damaged checkpoints) and savepoints: stop and resume in one run, and a
 * run started from another's savepoint, checked together with it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config.h"
#include "restart.h"
#include "storefs.h"
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
    /* 1, 2, 4, 5, 5 s, each within +/- 10 %, and clamped to [initial, max]
     * after the jitter: the first never under 1 s, the capped ones exactly
     * 5 s. Each failure comes a second after the restart before it. */
    const double want[] = {1, 2, 4, 5, 5};
    ck_time now = 0, d = 0;
    int jittered = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ck_restart_on_failure(&r, now, &d), CK_RESTART_NEW);
        double s = (double)d / 1e9;
        assert_true(s >= want[i] * 0.9 - 1e-9 && s <= want[i] * 1.1 + 1e-9);
        assert_true(s >= 1.0 - 1e-9 && s <= 5.0 + 1e-9);
        assert_true(d % MS == 0); /* whole milliseconds, as Flink's */
        jittered += s != want[i];
        now += d + 1000 * MS;
    }
    assert_true(jittered > 0);
    /* A minute after the last restart (not the last failure): back to the
     * initial backoff. */
    ck_time last_restart = now - 1000 * MS;
    now = last_restart + 59000 * MS; /* under a minute: still growing */
    assert_int_equal(ck_restart_on_failure(&r, now, &d), CK_RESTART_NEW);
    assert_true(d == 5000 * MS);
    now += d + 60000 * MS;
    assert_int_equal(ck_restart_on_failure(&r, now, &d), CK_RESTART_NEW);
    assert_true((double)d / 1e9 >= 1.0 - 1e-9 && (double)d / 1e9 <= 1.1);
    ck_restart_free(&r);
    /* The jitter is the run's: same seed, same delays. */
    ck_restart a, b;
    ck_restart_init(&a, &c, 42);
    ck_restart_init(&b, &c, 42);
    ck_time da, db;
    now = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ck_restart_on_failure(&a, now, &da), CK_RESTART_NEW);
        assert_int_equal(ck_restart_on_failure(&b, now, &db), CK_RESTART_NEW);
        assert_int_equal(da, db);
        now += da + MS;
    }
    ck_restart_free(&a);
    ck_restart_free(&b);
}

/*
 * Flink 1.20's ExponentialDelayRestartBackoffTimeStrategy, to the
 * millisecond, without jitter: a failure at or before the pending
 * restart's time merges into it (Flink's notifyFailure returns false): it
 * is not counted, the backoff does not grow, and the wait is what is left
 * until the first failure's restart. A failure after it is the next
 * attempt; the backoff saturates at exactly max; a failure at least
 * reset-backoff-threshold after the last restart's time starts over.
 */
static void test_restart_exponential_delay_merges(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "exponential-delay");
    set(&c, "restart-strategy.exponential-delay.initial-backoff", "1 s");
    set(&c, "restart-strategy.exponential-delay.max-backoff", "5 s");
    set(&c, "restart-strategy.exponential-delay.backoff-multiplier", "2.0");
    set(&c, "restart-strategy.exponential-delay.jitter-factor", "0");
    set(&c, "restart-strategy.exponential-delay.reset-backoff-threshold", "1 min");
    ck_restart r;
    ck_restart_init(&r, &c, 1);
    ck_time d = -1;
    assert_int_equal(ck_restart_on_failure(&r, 0, &d), CK_RESTART_NEW);
    assert_true(d == 1000 * MS); /* restart at 1 s */
    assert_int_equal(ck_restart_on_failure(&r, 500 * MS, &d), CK_RESTART_MERGED);
    assert_true(d == 500 * MS); /* ...still at 1 s */
    assert_int_equal(ck_restart_on_failure(&r, 1000 * MS, &d), CK_RESTART_MERGED);
    assert_true(d == 0);
    assert_int_equal(r.restarts, 1);
    /* After the restart: the next attempts, 2 s, 4 s, then 8 s held at 5 s. */
    const struct {
        ck_time at, delay;
    } steps[] = {{1200, 2000}, {3300, 4000}, {7400, 5000}, {12400 + 59999, 5000},
                 /* a minute after the restart at 77.399 s: over again */
                 {77399 + 60000, 1000}, {138399 + 1, 2000}};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        assert_int_equal(ck_restart_on_failure(&r, steps[i].at * MS, &d), CK_RESTART_NEW);
        assert_true(d == steps[i].delay * MS);
    }
    assert_int_equal(r.restarts, 2);
    ck_restart_free(&r);
    /* attempts-before-reset-backoff counts attempts, not merged failures:
     * with 2, a third attempt gives up; a reset starts the count over. */
    set(&c, "restart-strategy.exponential-delay.attempts-before-reset-backoff", "2");
    ck_restart_init(&r, &c, 1);
    assert_int_equal(ck_restart_on_failure(&r, 0, &d), CK_RESTART_NEW);          /* at 1 s */
    assert_int_equal(ck_restart_on_failure(&r, 10 * MS, &d), CK_RESTART_MERGED);  /* joins it */
    assert_int_equal(ck_restart_on_failure(&r, 20 * MS, &d), CK_RESTART_MERGED);
    assert_int_equal(ck_restart_on_failure(&r, 2000 * MS, &d), CK_RESTART_NEW);   /* at 4 s */
    assert_true(d == 2000 * MS);
    assert_int_equal(ck_restart_on_failure(&r, 3000 * MS, &d), CK_RESTART_MERGED);
    assert_int_equal(ck_restart_on_failure(&r, 64000 * MS, &d), CK_RESTART_NEW); /* reset */
    assert_int_equal(ck_restart_on_failure(&r, 66000 * MS, &d), CK_RESTART_NEW);
    assert_int_equal(ck_restart_on_failure(&r, 69000 * MS, &d), CK_RESTART_GIVE_UP);
    ck_restart_free(&r);
}

/*
 * Flink's calculateActualBackoffTime adds the jitter to the unclamped
 * backoff and clamps the sum: once the backoff less its jitter is past
 * max, the wait is exactly max; a backoff just past max may still come
 * out below it, by its own jitter, never by more. Over many runs' seeds:
 * with jitter 0.1, attempt 3 (8 s) is exactly 5 s; with jitter 0.5,
 * attempt 3 (8 s +/- 4 s) lies in [4 s, 5 s], and some runs come below 5.
 */
static void test_restart_exponential_delay_jitter_then_clamp(void **state)
{
    (void)state;
    ck_config c;
    ck_config_defaults(&c);
    set(&c, "restart-strategy.type", "exponential-delay");
    set(&c, "restart-strategy.exponential-delay.initial-backoff", "1 s");
    set(&c, "restart-strategy.exponential-delay.max-backoff", "5 s");
    set(&c, "restart-strategy.exponential-delay.backoff-multiplier", "2.0");
    for (int k = 0; k < 2; k++) {
        set(&c, "restart-strategy.exponential-delay.jitter-factor", k ? "0.5" : "0.1");
        int below = 0;
        for (uint64_t seed = 1; seed <= 200; seed++) {
            ck_restart r;
            ck_restart_init(&r, &c, seed);
            ck_time now = 0, d = 0;
            for (int i = 0; i < 4; i++) {
                assert_int_equal(ck_restart_on_failure(&r, now, &d), CK_RESTART_NEW);
                assert_true(d >= 1000 * MS && d <= 5000 * MS);
                now += d + MS;
            }
            if (!k)
                assert_true(d == 5000 * MS);
            else
                assert_true(d >= 4000 * MS);
            below += d < 5000 * MS;
            ck_restart_free(&r);
        }
        if (k)
            assert_true(below > 0);
    }
}

/* ---- crash runs ------------------------------------------------------------------ */

/*
 * Three task managers of one slot for a job of parallelism 2: one is spare.
 * State is spread over 20000 keys and the store is slow (1 MB/s), so
 * checkpoint uploads and restores take 100-250 ms. Checkpoints every 500 ms
 * (triggered at 0.5, 1.0, 1.5 s, ... until a failure), fixed-delay restarts
 * after 100 ms.
 */
/* Extra settings of the sinks (a test may make one slow). */
static const char *windows_sink = "", *counts_sink = "";

/* A test's own job and slots per task manager instead (NULL: the job above). */
static const char *other_job;
static int other_slots;

/* Teardown of a test that sets another job: the next runs the usual one. */
static int reset_job(void **state)
{
    (void)state;
    other_job = NULL;
    return 0;
}

static const char *scenario(char *buf, size_t len, const char *name, int seed, const char *mode,
                            int taskmanagers, const char *config, const char *events)
{
    char job[1024];
    if (other_job)
        snprintf(job, sizeof(job), "%s", other_job);
    else
        snprintf(job, sizeof(job),
                 "   {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 2,\n"
                 "    \"out_of_orderness\": \"100 ms\"},\n"
                 "   {\"name\": \"some\", \"type\": \"filter\", \"keep\": 0.9, \"parallelism\": 2},\n"
                 "   {\"name\": \"count\", \"type\": \"aggregate\", \"fn\": \"count\", \"parallelism\": 2,\n"
                 "    \"cpu_per_record\": \"50kf\"},\n"
                 "   {\"name\": \"counts\", \"type\": \"sink\", \"parallelism\": 2%s},\n"
                 "   {\"name\": \"per-200ms\", \"type\": \"window\", \"input\": \"some\",\n"
                 "    \"size\": \"200 ms\", \"fn\": \"count\", \"parallelism\": 2},\n"
                 "   {\"name\": \"windows\", \"type\": \"sink\", \"parallelism\": 2%s}",
                 counts_sink, windows_sink);
    snprintf(buf, len,
             "{\"name\": \"%s\", \"seed\": %d,\n"
             " \"cluster\": {\"taskmanagers\": %d, \"cores\": 2, \"store\": {\"bandwidth\": \"1MBps\"}},\n"
             " \"workload\": {\"duration\": \"3 s\", \"rate\": 3000, \"partitions\": 4,\n"
             "   \"keys\": 20000, \"distribution\": \"uniform\", \"record_bytes\": 80,\n"
             "   \"disorder\": \"50 ms\"},\n"
             " \"job\": {\"operators\": [\n%s]},\n"
             " \"config\": {\"taskmanager.numberOfTaskSlots\": %d,\n"
             "   \"execution.buffer-timeout.interval\": \"20 ms\",\n"
             "   \"execution.checkpointing.interval\": \"500 ms\",\n"
             "   \"execution.checkpointing.mode\": \"%s\",\n"
             "   \"restart-strategy.type\": \"fixed-delay\",\n"
             "   \"restart-strategy.fixed-delay.attempts\": 10,\n"
             "   \"restart-strategy.fixed-delay.delay\": \"100 ms\"%s},\n"
             " \"events\": [%s]}\n",
             name, seed, taskmanagers, job, other_job ? other_slots : 1, mode, config, events);
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
static cJSON *fault_run(const char *name, int seed, int exactly_once, int taskmanagers,
                        const char *config, const char *events, const char *backend,
                        int recovers);

static cJSON *crash_run(const char *name, int seed, int exactly_once, int taskmanagers,
                        const char *events, const char *backend)
{
    return fault_run(name, seed, exactly_once, taskmanagers, "", events, backend, 1);
}

/* Set by a test that damages a checkpoint: its job may fall back past the
 * damaged file to an older checkpoint, and so give exactly once up. */
static int damages;

/* Every fallback of the run to an older checkpoint went past a file a
 * corrupt_checkpoint event of the run damaged, and only in a test that
 * damages one: the run names that event, the file and the reason; one
 * that nothing explains fails the run (and is never allowed here). */
static void check_fallbacks(const cJSON *run)
{
    const cJSON *c = item(run, "correctness"), *fb;
    assert_true(is_null(c, "unexplained_fallback"));
    cJSON_ArrayForEach(fb, item(c, "fallbacks"))
    {
        assert_true(damages);
        assert_string_equal(item(fb, "reason")->valuestring, "damaged");
        assert_false(is_null(fb, "fault"));
        const cJSON *ev = cJSON_GetArrayItem(item(run, "faults"), (int)num(fb, "fault", NULL));
        assert_non_null(ev);
        assert_string_equal(item(ev, "action")->valuestring, "corrupt_checkpoint");
        assert_true(cJSON_IsTrue(item(ev, "applied")));
        assert_non_null(strstr(item(ev, "detail")->valuestring, item(fb, "file")->valuestring));
        assert_true(num(ev, "at_s", NULL) <= num(fb, "at_s", NULL));
    }
    if (!is_null(c, "degraded"))
        assert_true(cJSON_GetArraySize(item(c, "fallbacks")) > 0);
}

static cJSON *fault_run(const char *name, int seed, int exactly_once, int taskmanagers,
                        const char *config, const char *events, const char *backend,
                        int recovers)
{
    char text[4096], file[64], args[512];
    scenario(text, sizeof(text), name, seed, exactly_once ? "EXACTLY_ONCE" : "AT_LEAST_ONCE",
             taskmanagers, config, events);
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
    check_fallbacks(run);
    if (!is_null(c, "degraded"))
        exactly_once = 0;
    /* Nothing failed: exactly once whatever the mode. */
    if (cJSON_GetArraySize(item(run, "recoveries")) == 0)
        exactly_once = 1;
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
    const cJSON *r;
    if (recovers ? cJSON_GetArraySize(recs) < 1 : cJSON_GetArraySize(recs) != 0) {
        cJSON_ArrayForEach(r, recs) /* say why, for a failure seen only under load */
        {
            const cJSON *cause = cJSON_GetObjectItemCaseSensitive(r, "cause");
            fprintf(stderr, "%s (seed %d): unexpected recovery at %.3f s: %s\n", name, seed,
                    num(r, "failure_s", NULL),
                    cJSON_IsString(cause) ? cause->valuestring : "(no cause)");
        }
        /* ...and what the run logged about its connections. */
        char errf[256];
        snprintf(errf, sizeof(errf), "%s/%s.err", tmp, name);
        char *err = slurp(errf);
        for (char *line = err ? strtok(err, "\n") : NULL; line; line = strtok(NULL, "\n"))
            if (strstr(line, "connection") || strstr(line, "refused") || strstr(line, "cut"))
                fprintf(stderr, "  %s\n", line);
        free(err);
    }
    assert_true(recovers ? cJSON_GetArraySize(recs) >= 1 : cJSON_GetArraySize(recs) == 0);
    cJSON_ArrayForEach(r, recs) {
        double f = num(r, "failure_s", NULL), d = num(r, "detected_s", NULL);
        assert_true(f <= d);
        /* What restarted is whole pipelined regions, listed in order (a
         * job with a keyBy is one region: every subtask). */
        const cJSON *rsubs = item(r, "restarted_subtasks"), *tasks = item(run, "tasks");
        int ntasks = cJSON_GetArraySize(tasks), in[256] = {0}, region_in[256];
        assert_true(ntasks <= 256 && cJSON_GetArraySize(rsubs) >= 1);
        for (int k = 0; k < cJSON_GetArraySize(rsubs); k++) {
            int g = (int)cJSON_GetArrayItem(rsubs, k)->valuedouble;
            assert_true(g >= 0 && g < ntasks && !in[g]);
            assert_true(k == 0 || g > (int)cJSON_GetArrayItem(rsubs, k - 1)->valuedouble);
            in[g] = 1;
        }
        for (int k = 0; k < 256; k++)
            region_in[k] = -1;
        for (int g = 0; g < ntasks; g++) {
            int reg = (int)num(cJSON_GetArrayItem(tasks, g), "region", NULL);
            assert_true(reg >= 0 && reg < 256);
            if (region_in[reg] < 0)
                region_in[reg] = in[g];
            assert_int_equal(region_in[reg], in[g]);
        }
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
    /* What every attempt read is counted: sources report with every
     * snapshot, and cancelled subtasks their last counts, so a replay
     * from a checkpoint never leaves records_in short of the input. */
    if (cJSON_GetArraySize(recs) > 0 && !damages)
        assert_true(num(run, "records_in", NULL) >= num(item(run, "workload"), "records", NULL));
    /* The last recovery completed. */
    if (recovers) {
        const cJSON *last = cJSON_GetArrayItem(recs, cJSON_GetArraySize(recs) - 1);
        assert_false(is_null(last, "caught_up_s"));
    }
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

/* A crash 20-100 ms after checkpoint 3 was triggered (wherever the seed
 * put the first checkpoint): its state is still on its way to the store
 * (1 MB/s). The checkpoint is aborted and the job restores checkpoint 2. */
static void upload_sweep(int exactly_once)
{
    for (int seed = 1; seed <= SEEDS; seed++) {
        char name[64], ev[256];
        snprintf(name, sizeof(name), "upload-%s-%d", exactly_once ? "eo" : "alo", seed);
        int at = 20 + 20 * (seed % 5);
        snprintf(ev, sizeof(ev),
                 "{\"after\": {\"moment\": \"checkpoint_triggered\", \"nth\": 3},"
                 " \"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\","
                 " \"restart_after\": \"500 ms\"}",
                 at, seed % 2);
        cJSON *run = crash_run(name, seed, exactly_once, 3, ev, "simgrid");
        double crashed = num(cJSON_GetArrayItem(item(run, "faults"), 0), "at_s", NULL);
        /* Checkpoint 3 was in flight and never completed. */
        const cJSON *cp;
        int inflight = 0;
        cJSON_ArrayForEach(cp, item(run, "checkpoints")) {
            if (num(cp, "id", NULL) == 3) {
                assert_true(fabs(crashed - num(cp, "trigger_s", NULL) - at / 1000.0) < 1e-6);
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
/* source -> parse -> sink, forward only and not chained, parallelism 4
 * on task managers of 2 slots: four pipelined regions (one per subtask
 * index), tm0 running indices 0 and 1, tm1 indices 2 and 3. */
static const char *const forward_job =
    "   {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 4,\n"
    "    \"out_of_orderness\": \"100 ms\"},\n"
    "   {\"name\": \"parse\", \"type\": \"map\", \"fn\": \"drop_payload\", \"parallelism\": 4,\n"
    "    \"cpu_per_record\": \"50kf\"},\n"
    "   {\"name\": \"clean\", \"type\": \"sink\", \"parallelism\": 4}";

static void region_run(const char *backend, int seeds)
{
    other_job = forward_job;
    other_slots = 2;
    for (int seed = 1; seed <= seeds; seed++) {
        char name[64], ev[256];
        snprintf(name, sizeof(name), "region-%s-%d", backend, seed);
        int at = 600 + (seed * 97) % 1800, host = seed % 2;
        snprintf(ev, sizeof(ev),
                 "{\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\","
                 " \"restart_after\": \"1 s\"}",
                 at, host);
        cJSON *run = fault_run(name, seed, 1, 3, ", \"pipeline.operator-chaining.enabled\": false",
                               ev, backend, 1);
        assert_int_equal((int)num(item(run, "job"), "pipelined_regions", NULL), 4);
        const cJSON *recs = item(run, "recoveries");
        assert_int_equal(cJSON_GetArraySize(recs), 1);
        const cJSON *r = cJSON_GetArrayItem(recs, 0);
        /* Only the crashed task manager's two regions restarted: subtask
         * indices 2h and 2h+1 of each of the three vertices. */
        const cJSON *rsubs = item(r, "restarted_subtasks");
        assert_int_equal(cJSON_GetArraySize(rsubs), 6);
        for (int k = 0; k < 6; k++)
            assert_int_equal((int)cJSON_GetArrayItem(rsubs, k)->valuedouble,
                             (k / 2) * 4 + 2 * host + k % 2);
        /* ...restoring a checkpoint once there is one (the first completes
         * within about 500 ms). */
        if (at > 800)
            assert_true(restored_checkpoint(run) >= 1);
        cJSON_Delete(run);
    }
    other_job = NULL;
}

/* Region failover (Flink's default) on a job of four regions, the crash
 * at a time the seed chooses: exactly once over 20 seeds. */
static void test_region_failover(void **state)
{
    (void)state;
    region_run("simgrid", SEEDS);
}

static void test_region_failover_sockets(void **state)
{
    (void)state;
    region_run("sockets", 1);
}

/* A second task manager crashes while the first one's regions wait for
 * their restart: the failure joins the pending restart, which now covers
 * every region and so becomes a full one (one recovery), deployed once
 * enough task managers are back. */
static void test_region_failure_joins_pending_restart(void **state)
{
    (void)state;
    other_job = forward_job;
    other_slots = 2;
    const char *ev = "{\"at\": \"1200 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                     " \"restart_after\": \"1 s\"},"
                     "{\"at\": \"1250 ms\", \"action\": \"crash\", \"host\": \"tm1\","
                     " \"restart_after\": \"1 s\"}";
    cJSON *run = fault_run("region-joins", 7, 1, 3,
                           ", \"pipeline.operator-chaining.enabled\": false", ev, "simgrid", 1);
    const cJSON *recs = item(run, "recoveries");
    assert_int_equal(cJSON_GetArraySize(recs), 1);
    const cJSON *r = cJSON_GetArrayItem(recs, 0);
    assert_int_equal(cJSON_GetArraySize(item(r, "restarted_subtasks")), 12);
    /* One task manager is left until tm0 is back at 2.2 s: the job needs two. */
    assert_true(num(r, "restarted_s", NULL) >= 2.2);
    assert_true(restored_checkpoint(run) >= 1);
    cJSON_Delete(run);
    other_job = NULL;
}

/*
 * Found by swarming swarm-region.json (seeds 10 and 61 of 300): a task
 * manager crashed after a stop-with-savepoint completed, while the
 * subtasks were stopping at its barrier. Region failover restarted the
 * crashed task manager's regions from the savepoint as running ones, the
 * others stopped; the resume then restored a later checkpoint in which
 * those were finished, and the input after the barrier was never read
 * (932 and 5505 records lost). A failure while stopping now restarts
 * every subtask from the savepoint, as Flink's global failover does.
 */
static void test_region_crash_while_stopping(void **state)
{
    (void)state;
    other_job = forward_job;
    other_slots = 2;
    const char *chain_off = ", \"pipeline.operator-chaining.enabled\": false";
    const char *sp = "{\"at\": \"1000 ms\", \"action\": \"savepoint\", \"stop\": true,"
                     " \"resume_after\": \"200 ms\"}";
    /* Which completion the savepoint is. */
    cJSON *first = fault_run("stop-region-1", 3, 1, 3, chain_off, sp, "simgrid", 1);
    double sp_id = 0;
    int nth = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, item(first, "checkpoints"))
    {
        if (!strcmp(item(c, "kind")->valuestring, "stop-with-savepoint"))
            sp_id = num(c, "id", NULL);
    }
    cJSON_ArrayForEach(c, item(first, "checkpoints"))
    {
        if (!strcmp(item(c, "status")->valuestring, "completed") && num(c, "id", NULL) <= sp_id)
            nth++;
    }
    assert_true(sp_id > 0);
    cJSON_Delete(first);
    assert_true(nth >= 1);
    char ev[512];
    snprintf(ev, sizeof(ev),
             "%s, {\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": %d},"
             " \"at\": \"20 us\", \"action\": \"crash\", \"host\": \"tm0\","
             " \"restart_after\": \"1 s\"}",
             sp, nth);
    cJSON *run = fault_run("stop-region-2", 3, 1, 3, chain_off, ev, "simgrid", 1);
    const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
    assert_non_null(strstr(item(r, "cause")->valuestring, "tm0"));
    assert_int_equal(cJSON_GetArraySize(item(r, "restarted_subtasks")), 12);
    assert_int_equal((int)num(r, "checkpoint", NULL), (int)sp_id);
    cJSON_Delete(run);
    other_job = NULL;
}

/*
 * Found by swarming swarm-region.json with a slow keyed count (seed 190):
 * tm1's heartbeat timed out when every subtask had ended its input, and
 * the final checkpoint was triggered at that instant, while tm1's regions
 * waited for their restart: at their cancelled attempts. It stayed
 * pending, nothing else could start, and the job ran into the simulated
 * time limit. The scenario replays the two faults of that seed that
 * matter; the job must finish exactly once, and no checkpoint may start
 * between the failure's detection and the restored regions running.
 */
static void test_region_final_at_failover(void **state)
{
    (void)state;
    char args[512];
    snprintf(args, sizeof(args), "run tests/scenarios/region-final-at-failover.json --out %s/rfinal",
             tmp);
    assert_chandy("rfinal", args, 0);
    cJSON *run = load_run("rfinal");
    assert_string_equal(item(item(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *c = item(run, "correctness");
    assert_true(cJSON_IsTrue(item(c, "ok")));
    assert_string_equal(item(c, "guarantee")->valuestring, "exactly-once");
    assert_true(num(c, "lost", NULL) == 0 && num(c, "duplicated", NULL) == 0);
    const cJSON *recs = item(run, "recoveries"), *r, *cp;
    assert_true(cJSON_GetArraySize(recs) >= 1);
    assert_non_null(strstr(item(cJSON_GetArrayItem(recs, 0), "cause")->valuestring,
                           "tm1: heartbeat timed out"));
    cJSON_ArrayForEach(r, recs)
    {
        double d = num(r, "detected_s", NULL), ro = num(r, "restored_s", NULL);
        cJSON_ArrayForEach(cp, item(run, "checkpoints"))
        {
            double t = num(cp, "trigger_s", NULL);
            assert_false(t >= d && t < ro);
        }
    }
    /* The last checkpoint is the final one, and it completed. */
    const cJSON *cps = item(run, "checkpoints");
    const cJSON *last = cJSON_GetArrayItem(cps, cJSON_GetArraySize(cps) - 1);
    assert_string_equal(item(last, "kind")->valuestring, "final");
    assert_string_equal(item(last, "status")->valuestring, "completed");
    cJSON_Delete(run);
}

/* Every partitioner in one job: a running count behind a rebalance and a
 * rescale, and a broadcast to a sink. */
static const char *const partitioners_job =
    "   {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 2,\n"
    "    \"out_of_orderness\": \"100 ms\"},\n"
    "   {\"name\": \"spread\", \"type\": \"map\", \"fn\": \"drop_payload\",\n"
    "    \"partition\": \"rebalance\", \"parallelism\": 3},\n"
    "   {\"name\": \"narrow\", \"type\": \"filter\", \"keep\": 0.9, \"partition\": \"rescale\",\n"
    "    \"parallelism\": 2},\n"
    "   {\"name\": \"count\", \"type\": \"aggregate\", \"fn\": \"count\", \"parallelism\": 2,\n"
    "    \"cpu_per_record\": \"50kf\"},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\", \"parallelism\": 2},\n"
    "   {\"name\": \"everywhere\", \"type\": \"map\", \"input\": \"source\",\n"
    "    \"partition\": \"broadcast\", \"parallelism\": 2},\n"
    "   {\"name\": \"copies\", \"type\": \"sink\", \"parallelism\": 2}";

/* Rebalance, rescale and broadcast through a crash at a time the seed
 * chooses: the output stays exactly once (at least once in that mode),
 * the broadcast's copies and the reordered running counts included. */
static void test_partitioners_crash(void **state)
{
    (void)state;
    other_job = partitioners_job;
    other_slots = 2;
    for (int seed = 1; seed <= 8; seed++) {
        char name[64], ev[256];
        int eo = seed != 8;
        snprintf(name, sizeof(name), "partitioners-%d", seed);
        int at = 600 + (seed * 211) % 1800;
        snprintf(ev, sizeof(ev),
                 "{\"at\": \"%d ms\", \"action\": \"crash\", \"host\": \"tm%d\","
                 " \"restart_after\": \"1 s\"}",
                 at, seed % 2);
        cJSON *run = fault_run(name, seed, eo, 3, "", ev, "simgrid", 1);
        /* 9 000 records read: the broadcast doubles them at its sink. */
        const cJSON *c = item(run, "correctness");
        assert_true(num(c, "expected", NULL) > 2 * 9000 * 0.99);
        assert_true(num(c, "wrong_totals", NULL) == 0);
        assert_int_equal((int)num(item(run, "job"), "pipelined_regions", NULL), 1);
        cJSON_Delete(run);
    }
    other_job = NULL;
}

static void test_no_restart_fails_the_job(void **state)
{
    (void)state;
    char text[4096], args[512];
    scenario(text, sizeof(text), "norestart", 1, "EXACTLY_ONCE", 2, "",
             "{\"at\": \"1 s\", \"action\": \"crash\", \"host\": \"tm0\"}");
    char *p = strstr(text, "\"fixed-delay\",");
    assert_non_null(p);
    memcpy(p, "\"none\",       ", 14);
    const char *path = put_file("norestart.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/norestart", path, tmp);
    assert_chandy("norestart", args, 1);
    cJSON *run = load_run("norestart");
    const cJSON *job = item(run, "job");
    assert_string_equal(item(job, "state")->valuestring, "FAILED");
    assert_non_null(strstr(item(job, "failure")->valuestring, "tm0"));
    assert_non_null(strstr(item(job, "failure")->valuestring, "none"));
    assert_string_equal(item(job, "failed_because")->valuestring, "restarts_exhausted");
    cJSON_Delete(run);
}

/* The windows sink is slow: when the input ends at 3 s, the counts sinks
 * are done while the windows still drain for a quarter of a second. A
 * crash then must not duplicate what the finished sinks wrote: with
 * exactly-once checkpoints they commit only with the final checkpoint, taken
 * once every subtask has ended (as Flink's FLIP-147). */
static int reset_sinks(void **state)
{
    (void)state;
    windows_sink = counts_sink = "";
    return 0;
}

static void test_crash_after_some_ended(void **state)
{
    (void)state;
    windows_sink = ", \"cpu_per_record\": \"500kf\"";
    /* Two task managers: both run half the job (with a spare, which one
     * is the spare depends on the order processes register in). */
    for (int k = 0; k < 3; k++) {
        int eo = k != 1;
        const char *backend = k == 2 ? "sockets" : "simgrid";
        char name[32];
        snprintf(name, sizeof(name), "tail-%d", k);
        cJSON *run = fault_run(name, 3, eo, 2, "",
                               "{\"at\": \"3100 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                               " \"restart_after\": \"500 ms\"}",
                               backend, 1);
        if (eo && k == 0) {
            /* The last checkpoint is the final one, taken after the input ended. */
            const cJSON *cps = item(run, "checkpoints");
            const cJSON *last = cJSON_GetArrayItem(cps, cJSON_GetArraySize(cps) - 1);
            assert_string_equal(item(last, "status")->valuestring, "completed");
            assert_true(num(last, "trigger_s", NULL) > 3.1);
        }
        cJSON_Delete(run);
    }
}

/* Checkpoints after tasks finish (FLIP-147): four source subtasks on two
 * partitions, two of them idle from the start, checkpoints every second,
 * tm0 killed at 7 s. Periodic checkpoints complete all along, the restore
 * takes the latest one, and the idle sources are in the checkpoints as
 * finished. With the option off, no periodic checkpoint completes and the
 * job restarts from the beginning. Both backends. */
static void test_checkpoints_after_tasks_finish(void **state)
{
    (void)state;
    char args[600], path[512];
    for (int k = 0; k < 3; k++) {
        const char *backend = k == 1 ? "sockets" : "simgrid";
        int off = k == 2;
        char name[32];
        snprintf(name, sizeof(name), "idle-%d", k);
        const char *scen = "tests/scenarios/idle-sources.json";
        if (off) {
            char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/idle-sources.json");
            assert_non_null(text);
            cJSON *j = cJSON_Parse(text);
            free(text);
            cJSON_AddFalseToObject(cJSON_GetObjectItem(j, "config"),
                                   "execution.checkpointing.checkpoints-after-tasks-finish");
            cJSON_DeleteItemFromObject(j, "expect");
            char *out = cJSON_Print(j);
            cJSON_Delete(j);
            scen = put_file("idle-off.json", out);
            free(out);
        }
        snprintf(args, sizeof(args), "run %s --backend %s --out %s/%s", scen, backend, tmp, name);
        assert_chandy(name, args, 0);
        cJSON *run = load_run(name);
        assert_true(cJSON_IsTrue(item(item(run, "correctness"), "ok")));
        int before = 0;
        double latest = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, item(run, "checkpoints"))
        {
            if (!strcmp(item(c, "status")->valuestring, "completed") &&
                num(c, "trigger_s", NULL) < 7.0) {
                before++;
                latest = num(c, "id", NULL);
            }
        }
        const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
        if (off) {
            assert_int_equal(before, 0);
            assert_true(is_null(r, "checkpoint"));
        } else {
            assert_true(before >= 6); /* one a second, none lost to the idle sources */
            assert_true(num(r, "checkpoint", NULL) == latest);
        }
        /* The last checkpoint has the idle sources as finished. */
        if (!off) {
            const cJSON *cps = item(run, "checkpoints");
            const cJSON *last = cJSON_GetArrayItem(cps, cJSON_GetArraySize(cps) - 1);
            snprintf(path, sizeof(path), "savepoint %s/%s/store/checkpoints/*/chk-%.0f", tmp, name,
                     num(last, "id", NULL));
            assert_chandy("idle-info", path, 0);
            snprintf(path, sizeof(path), "%s/idle-info.out", tmp);
            char *info = slurp(path);
            assert_int_equal(count_of(info, ": finished"), 2);
            free(info);
        }
        cJSON_Delete(run);
    }
}

/* Pipelines that end at different times (scenarios/swarm-finish.json: its
 * partitions stop at 0.4, 0.9, 1.4 and 2 s): tm0 crashes 350 ms after the
 * second subtask finished (`after` subtask_finished), once a checkpoint
 * has recorded the first pipeline finished. Full failover restores every
 * subtask from that checkpoint, the finished ones as finished: none reads
 * its partition again, and the output stays exactly once. Both backends
 * see the moment (over sockets, a task manager's process tells the job
 * manager's). */
static void test_crash_after_subtask_finished(void **state)
{
    (void)state;
    char *text = slurp(CHANDY_SOURCE_DIR "/scenarios/swarm-finish.json");
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    cJSON_DeleteItemFromObject(j, "events");
    cJSON *ev = cJSON_Parse("[{\"after\": {\"moment\": \"subtask_finished\", \"nth\": 2},"
                            " \"at\": \"350 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                            " \"restart_after\": \"1 s\"}]");
    cJSON_AddItemToObject(j, "events", ev);
    char *out = cJSON_Print(j);
    cJSON_Delete(j);
    const char *scen = put_file("finish-crash.json", out);
    free(out);
    for (int k = 0; k < 2; k++) {
        const char *backend = k ? "sockets" : "simgrid";
        char name[32], args[600];
        snprintf(name, sizeof(name), "finish-crash-%d", k);
        snprintf(args, sizeof(args), "run %s --backend %s --out %s/%s", scen, backend, tmp, name);
        assert_chandy(name, args, 0);
        cJSON *run = load_run(name);
        const cJSON *c = item(run, "correctness");
        assert_true(cJSON_IsTrue(item(c, "ok")));
        assert_string_equal(item(c, "guarantee")->valuestring, "exactly-once");
        assert_true(num(c, "duplicated", NULL) == 0 && num(c, "lost", NULL) == 0);
        /* The crash came after the first pipeline finished (its
         * partition ends at 0.4 s, its subtasks finish once a checkpoint
         * after that completes), not at the end of the input. */
        const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
        assert_true(cJSON_IsTrue(item(f, "applied")));
        double at = num(f, "at_s", NULL);
        assert_true(at > 0.4 + 0.35 && at < 1.5);
        /* The checkpoint restored had finished subtasks: source, parse and
         * sink of the index whose partition ended first at least. */
        const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0), *cp, *restored = NULL;
        assert_non_null(r);
        cJSON_ArrayForEach(cp, item(run, "checkpoints"))
        {
            if (num(cp, "id", NULL) == num(r, "checkpoint", NULL))
                restored = cp;
        }
        assert_non_null(restored);
        assert_true(num(restored, "finished_subtasks", NULL) >= 3);
        /* Every subtask restarted (full failover), and the job read its
         * input once over all: what finished read nothing again. */
        assert_int_equal(cJSON_GetArraySize(item(r, "restarted_subtasks")),
                         cJSON_GetArraySize(item(run, "tasks")));
        cJSON_Delete(run);
    }
}

/*
 * Output faults (tests/scenarios/sink-*.json: a transaction applied twice,
 * lost, a value changed, on running sums behind a rebalance and on keyed
 * counts): the job runs as ever, the verdict counts exactly the damage
 * injected, and the run passes, its expect block asserting the counts of
 * the simulation. Without an expect block too, under both backends: the
 * output broke exactly once only as the timeline broke it.
 */
static void test_output_faults(void **state)
{
    (void)state;
    static const char *const names[] = {"sink-duplicate", "sink-drop", "sink-corrupt"};
    for (int k = 0; k < 4; k++) {
        const char *n = names[k % 3];
        const char *backend = k == 3 ? "sockets" : "simgrid";
        char path[300], out[64], args[700];
        snprintf(path, sizeof(path), CHANDY_SOURCE_DIR "/tests/scenarios/%s.json", n);
        snprintf(out, sizeof(out), "%s-%d", n, k);
        snprintf(args, sizeof(args), "run %s --out %s/%s", path, tmp, out);
        assert_chandy(out, args, 0); /* the expect block holds */
        /* again without it, the counts of this run against its own injection */
        char *text = slurp(path);
        assert_non_null(text);
        cJSON *j = cJSON_Parse(text);
        free(text);
        cJSON_DeleteItemFromObject(j, "expect");
        char *plain = cJSON_Print(j);
        cJSON_Delete(j);
        snprintf(path, sizeof(path), "%s-plain.json", n);
        const char *scen = put_file(path, plain);
        free(plain);
        snprintf(out, sizeof(out), "%s-plain-%d", n, k);
        snprintf(args, sizeof(args), "run %s --backend %s --out %s/%s", scen, backend, tmp, out);
        assert_chandy(out, args, 0);
        cJSON *run = load_run(out);
        const cJSON *c = item(run, "correctness"), *in = item(c, "injected");
        const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
        const cJSON *t = item(f, "transaction");
        assert_true(cJSON_IsTrue(item(f, "applied")) && cJSON_IsObject(t));
        double records = num(t, "records", NULL);
        assert_true(records >= 1);
        assert_false(cJSON_IsTrue(item(c, "ok")));
        assert_true(cJSON_IsTrue(item(c, "checker_ok")));
        assert_true(cJSON_IsNull(item(c, "checker_failure")));
        assert_string_equal(item(c, "guarantee")->valuestring, "exactly-once");
        for (const char *const *w = (const char *const[]){"duplicated", "lost", "unexpected",
                                                          "wrong_totals", NULL};
             *w; w++)
            assert_true(num(c, *w, NULL) == num(in, *w, NULL));
        if (k % 3 == 0) {
            assert_true(num(c, "duplicated", NULL) == records && num(c, "lost", NULL) == 0);
        } else if (k % 3 == 1) {
            assert_true(num(c, "lost", NULL) == records && num(c, "duplicated", NULL) == 0);
        } else {
            assert_true(records == 1 && num(c, "lost", NULL) == 1 &&
                        num(c, "unexpected", NULL) == 1);
            assert_true(num(t, "value_after", NULL) < -4e18);
        }
        cJSON_Delete(run);
    }
}

/* ---- network, slowness, damage ---------------------------------------------------- */

#define FAST_HEARTBEATS                                                                    \
    ",\n   \"heartbeat.interval\": \"200 ms\", \"heartbeat.timeout\": \"1 s\""

/* tm0 goes down at 1.3 s under both backends: as a killed process, its
 * peers' connections reset and the job fails over at once; as a lost host,
 * nothing resets and the job manager notices when tm0's heartbeats have
 * been missing for heartbeat.timeout (1 s, a heartbeat every 200 ms: 0.8
 * to 1 s after the crash); as a lost host back after 300 ms, its new kernel
 * refuses the old connections, and the job fails over then. */
static void test_lost_host_against_killed_process(void **state)
{
    (void)state;
    static const char *const kinds[] = {"process", "host", "host\", \"restart_after\": \"300 ms"};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 3; k++) {
            const char *backend = b ? "sockets" : "simgrid";
            char name[64], ev[256];
            snprintf(name, sizeof(name), "lost-%s-%d", backend, k);
            snprintf(ev, sizeof(ev),
                     "{\"at\": \"1300 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                     " \"kind\": \"%s\"}",
                     kinds[k]);
            cJSON *run = fault_run(name, 4, 1, 3, FAST_HEARTBEATS, ev, backend, 1);
            const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
            assert_string_equal(item(f, "kind")->valuestring, k ? "host" : "process");
            const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
            double detection = num(r, "detection_s", NULL);
            const char *cause = item(r, "cause")->valuestring;
            double slack = b ? 0.25 : 0.001; /* sockets: wall-clock scheduling */
            if (k == 0) {
                assert_true(detection < slack);
            } else if (k == 1) {
                if (!(detection >= 0.8 - slack && detection <= 1.0 + slack))
                    fprintf(stderr, "%s: detection %.3f s (%s)\n", name, detection, cause);
                assert_true(detection >= 0.8 - slack && detection <= 1.0 + slack);
                assert_non_null(strstr(cause, "heartbeat timed out"));
            } else {
                assert_true(detection >= 0.3 - slack / 5 && detection < 0.3 + slack);
            }
            cJSON_Delete(run);
        }
}

/* The processes whose parent is pid, lowest pid first (at most max). */
static int children_of(pid_t pid, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = 0;
        const char *close_paren = strrchr(buf, ')'); /* after the command's name */
        char st;
        int ppid;
        if (close_paren && sscanf(close_paren + 1, " %c %d", &st, &ppid) == 2 && ppid == pid)
            out[n++] = (pid_t)atoi(e->d_name);
    }
    if (d)
        closedir(d);
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && out[k] < out[k - 1]; k--) {
            pid_t t = out[k];
            out[k] = out[k - 1];
            out[k - 1] = t;
        }
    return n;
}

/* A task manager's process stopped from outside (kill -STOP, as a host
 * that freezes): the job manager fails over to the spare task manager
 * once its heartbeats are missing, the job finishes, and at the end the
 * launcher continues the stopped process, waits for it a bounded time and
 * kills it: the run ends, with its output exactly once. */
static void test_stopped_from_outside_sockets(void **state)
{
    (void)state;
    const char *name = "stopped-sockets";
    char text[4096], file[64], dir[256], out[256], err[256];
    scenario(text, sizeof(text), name, 5, "EXACTLY_ONCE", 3, FAST_HEARTBEATS, "");
    snprintf(file, sizeof(file), "%s.json", name);
    const char *path = put_file(file, text);
    assert_non_null(path);
    snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
    snprintf(out, sizeof(out), "%s/%s.out", tmp, name);
    snprintf(err, sizeof(err), "%s/%s.err", tmp, name);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0); /* the hang guard below kills the whole group */
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        execl(CHANDY_BIN, "chandy", "run", path, "--backend", "sockets", "--out", dir,
              (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    /* Its task managers' processes, forked in order: tm0 has the lowest
     * pid and runs half of the job (one slot each, parallelism 2). */
    pid_t kids[8];
    int n = 0;
    struct timespec ms10 = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 3000 && n < 3; i++) {
        n = children_of(pid, kids, 8);
        if (n < 3)
            nanosleep(&ms10, NULL);
    }
    assert_int_equal(n, 3);
    struct timespec mid = {1, 300 * 1000 * 1000}; /* into the 3 s of input */
    nanosleep(&mid, NULL);
    assert_int_equal(kill(kids[0], SIGSTOP), 0);
    /* A hang guard only: the run takes a few seconds; a launcher that
     * waited for the stopped process would never end. */
    int st = 0, ended = 0;
    for (int i = 0; i < 12000 && !ended; i++) {
        pid_t got = waitpid(pid, &st, WNOHANG);
        ended = got == pid;
        if (!ended)
            nanosleep(&ms10, NULL);
    }
    if (!ended) {
        fprintf(stderr, "%s: the run did not end within 120 s of a task manager's stop\n", name);
        kill(kids[0], SIGKILL);
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    assert_true(ended);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char *e = slurp(err);
        fprintf(stderr, "%s: exit %d\n%s\n", name, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                e ? e : "");
        free(e);
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(kill(kids[0], 0), -1); /* reaped, not left behind */
    cJSON *run = load_run(name);
    assert_string_equal(item(item(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *c = item(run, "correctness");
    assert_true(cJSON_IsTrue(item(c, "ok")));
    assert_string_equal(item(c, "guarantee")->valuestring, "exactly-once");
    assert_true(num(c, "lost", NULL) == 0 && num(c, "duplicated", NULL) == 0);
    /* The stop was noticed by the missing heartbeats and failed over. */
    const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
    assert_non_null(r);
    assert_non_null(strstr(item(r, "cause")->valuestring, "heartbeat timed out"));
    cJSON_Delete(run);
}

/* tm1 (running half the job) is cut off from the job manager, the store and
 * the other task managers for 2 s. Nothing breaks a connection: the job
 * manager notices the silence after heartbeat.timeout and fails over to the
 * spare; tm1 notices too and cancels its subtasks. */
static void test_partition(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        /* both modes under SimGrid, exactly once with processes */
        int eo = k != 0;
        const char *backend = k == 2 ? "sockets" : "simgrid";
        char name[32];
        snprintf(name, sizeof(name), "partition-%d", k);
        cJSON *run = fault_run(name, 5, eo, 3, FAST_HEARTBEATS,
                               "{\"at\": \"1200 ms\", \"action\": \"partition\", \"groups\":"
                               " [[\"jm\", \"tm0\", \"tm2\", \"store\"], [\"tm1\"]],"
                               " \"duration\": \"2 s\"}",
                               backend, 1);
        const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
        assert_non_null(strstr(item(r, "cause")->valuestring, "tm1: heartbeat timed out"));
        double at = num(r, "failure_s", NULL);
        assert_true(fabs(at - 1.2) < (k == 2 ? 0.05 : 1e-9));
        /* The last heartbeat got through at most one interval before the cut
         * (in real time, give the scheduler some room). */
        double d = num(r, "detected_s", NULL) - at;
        assert_true(d >= 0.79 && d <= (k == 2 ? 1.3 : 1.01));
        const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
        assert_string_equal(item(f, "action")->valuestring, "partition");
        assert_int_equal(cJSON_GetArraySize(item(f, "side_b")), 1);
        cJSON_Delete(run);
        char errf[256];
        snprintf(errf, sizeof(errf), "%s/%s.err", tmp, name);
        char *err = slurp(errf);
        assert_non_null(err);
        assert_non_null(strstr(err, "task manager 1: no heartbeat answer from the job manager"));
        free(err);
    }
}

/* A link down for less than heartbeat.timeout: nothing fails, messages wait
 * and go when it heals; a checkpoint triggered meanwhile waits for it. */
static void test_link_down_short(void **state)
{
    (void)state;
    cJSON *run = fault_run("linkdown", 2, 1, 3, FAST_HEARTBEATS,
                           "{\"at\": \"1200 ms\", \"action\": \"link_down\", \"host\": \"tm0\","
                           " \"duration\": \"500 ms\"}",
                           "simgrid", 0);
    const cJSON *cp;
    int waited = 0;
    cJSON_ArrayForEach(cp, item(run, "checkpoints")) {
        double t = num(cp, "trigger_s", NULL);
        if (t > 1.2 && t < 1.7) {
            assert_string_equal(item(cp, "status")->valuestring, "completed");
            assert_true(num(cp, "complete_s", NULL) >= 1.7);
            waited = 1;
        }
    }
    assert_true(waited);
    const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
    assert_true(fabs(num(f, "ended_s", NULL) - 1.7) < 1e-9);
    cJSON_Delete(run);
}

/* The same run three ways (at least once: latency is measured when the
 * sinks write, not at commit): as is, with tm0's CPU at 5 % of its speed,
 * and with tm1's link at a thousandth of its bandwidth plus 20 ms, for 1 s.
 * The slow runs stay correct and show it in their latency. */
static void test_slowness(void **state)
{
    (void)state;
    cJSON *base = fault_run("slow-none", 4, 0, 3, "", "", "simgrid", 0);
    cJSON *scpu = fault_run("slow-cpu", 4, 0, 3, "",
                            "{\"at\": \"1 s\", \"action\": \"slow_cpu\", \"host\": \"tm0\","
                            " \"factor\": 0.05, \"duration\": \"1 s\"}",
                            "simgrid", 0);
    cJSON *slink = fault_run("slow-link", 4, 0, 3, "",
                             "{\"at\": \"1 s\", \"action\": \"slow_link\", \"host\": \"tm1\","
                             " \"factor\": 0.001, \"latency\": \"20 ms\", \"duration\": \"1 s\"}",
                             "simgrid", 0);
    double b = num(base, "latency_ms", "p50"), c = num(scpu, "latency_ms", "p50"),
           l = num(slink, "latency_ms", "p50");
    assert_true(c > b * 2);
    assert_true(l > b * 2);
    const cJSON *f = cJSON_GetArrayItem(item(slink, "faults"), 0);
    assert_true(num(f, "factor", NULL) == 0.001);
    assert_true(fabs(num(f, "added_latency_s", NULL) - 0.02) < 1e-9);
    /* slow_operator: the keyed count costs 40 times its 50 kflop a record
     * for a second, on every host: the sources are held back (they were
     * not at all without it) and latency grows; nothing is lost. */
    const char *ev = "{\"at\": \"1 s\", \"action\": \"slow_operator\", \"operator\": \"count\","
                     " \"factor\": 40, \"duration\": \"1 s\"}";
    for (int sockets = 0; sockets <= 1; sockets++) {
        cJSON *sop = fault_run(sockets ? "slow-op-sockets" : "slow-op", 4, 0, 3, "", ev,
                               sockets ? "sockets" : "simgrid", 0);
        f = cJSON_GetArrayItem(item(sop, "faults"), 0);
        assert_string_equal(item(f, "action")->valuestring, "slow_operator");
        assert_string_equal(item(f, "operator")->valuestring, "count");
        assert_true(num(f, "factor", NULL) == 40);
        assert_true(cJSON_IsTrue(item(f, "applied")));
        const cJSON *v0 = cJSON_GetArrayItem(item(item(sop, "job"), "vertices"), 0);
        const cJSON *b0 = cJSON_GetArrayItem(item(item(base, "job"), "vertices"), 0);
        assert_true(num(b0, "backpressured_ratio", NULL) < 0.02);
        assert_true(num(v0, "backpressured_ratio", NULL) > 0.1);
        /* (over sockets against the simulated base: less margin) */
        double grew = sockets ? 1.5 : 2;
        if (num(sop, "latency_ms", "p99") <= grew * num(base, "latency_ms", "p99"))
            fprintf(stderr, "slow_operator (%s): latency p99 %.1f ms against %.1f ms\n",
                    sockets ? "sockets" : "simgrid", num(sop, "latency_ms", "p99"),
                    num(base, "latency_ms", "p99"));
        assert_true(num(sop, "latency_ms", "p99") > grew * num(base, "latency_ms", "p99"));
        cJSON_Delete(sop);
    }
    /* hot_key: for a second, 80 % of the input goes to one key, so one of
     * the two count subtasks gets most of that second's records. */
    cJSON *hot = fault_run("hot-key", 4, 0, 3, "",
                           "{\"at\": \"1 s\", \"action\": \"hot_key\", \"share\": 0.8,"
                           " \"duration\": \"1 s\"}",
                           "simgrid", 0);
    f = cJSON_GetArrayItem(item(hot, "faults"), 0);
    assert_string_equal(item(f, "action")->valuestring, "hot_key");
    assert_true(num(f, "share", NULL) == 0.8);
    double in[2][2] = {{0}}; /* base, hot: records into count subtask 0 and 1 */
    for (int run = 0; run < 2; run++) {
        const cJSON *t;
        cJSON_ArrayForEach(t, item(run ? hot : base, "tasks"))
        {
            if (!strncmp(item(t, "vertex")->valuestring, "count", 5))
                in[run][(int)num(t, "subtask", NULL)] = num(t, "records_in", NULL);
        }
    }
    double bskew = fmax(in[0][0], in[0][1]) / fmin(in[0][0], in[0][1]);
    double hskew = fmax(in[1][0], in[1][1]) / fmin(in[1][0], in[1][1]);
    assert_true(bskew < 1.1 && hskew > 1.5);
    cJSON_Delete(hot);
    cJSON_Delete(base);
    cJSON_Delete(scpu);
    cJSON_Delete(slink);
}

/* A sink whose external system takes 100 us a record keeps up (1 500
 * records/s per subtask need 0.15 s a second); 30 times slower for a
 * second, it cannot, and holds its upstream back. Waiting takes no core:
 * the other subtasks of its host compute meanwhile. */
static void test_slow_sink(void **state)
{
    (void)state;
    counts_sink = ", \"write_time\": \"100 us\"";
    cJSON *base = fault_run("sink-writes", 4, 1, 3, "", "", "simgrid", 0);
    cJSON *slow = fault_run("slow-sink", 4, 1, 3, "",
                            "{\"at\": \"1 s\", \"action\": \"slow_sink\", \"operator\": \"counts\","
                            " \"factor\": 30, \"duration\": \"1 s\"}",
                            "simgrid", 0);
    const cJSON *f = cJSON_GetArrayItem(item(slow, "faults"), 0);
    assert_string_equal(item(f, "action")->valuestring, "slow_sink");
    assert_string_equal(item(f, "operator")->valuestring, "counts");
    /* The count's vertex (count -> counts) is busy writing; the sources
     * and the filter before it are held back. */
    const cJSON *sv = cJSON_GetArrayItem(item(item(slow, "job"), "vertices"), 0);
    const cJSON *bv = cJSON_GetArrayItem(item(item(base, "job"), "vertices"), 0);
    assert_true(num(bv, "backpressured_ratio", NULL) < 0.02);
    assert_true(num(sv, "backpressured_ratio", NULL) > 0.1);
    /* Blocked on its writes, the sink's task counts as busy, as a Flink
     * task blocked in its sink's invoke() does. */
    const cJSON *sc = cJSON_GetArrayItem(item(item(slow, "job"), "vertices"), 1);
    const cJSON *bc = cJSON_GetArrayItem(item(item(base, "job"), "vertices"), 1);
    assert_true(num(sc, "busy_ratio", NULL) > 2 * num(bc, "busy_ratio", NULL));
    assert_true(num(bc, "busy_ratio", NULL) > 0.1); /* 1 500 writes a second take 0.15 s */
    assert_true(num(slow, "latency_ms", "p99") > 1.3 * num(base, "latency_ms", "p99"));
    cJSON_Delete(base);
    cJSON_Delete(slow);
}

/* Over sockets too, a crash 20 ms after the job manager sent the second
 * completed checkpoint's completion: it starts then (not at a time), that
 * checkpoint is the one restored, and the output stays exactly once
 * (test_swarm: a moment only a task manager's process sees is refused
 * there). "nth" counts completed checkpoints: on a loaded machine the
 * first trigger may find a task not yet running and be declined, and then
 * the second completed one is checkpoint 3. */
static void test_triggered_over_sockets(void **state)
{
    (void)state;
    cJSON *run = crash_run("trig-net", 4, 1, 3,
                           "{\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": 2},"
                           " \"at\": \"20 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                           " \"restart_after\": \"1 s\"}",
                           "sockets");
    const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0), *c, *second = NULL;
    const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
    int completed = 0, ok;
    cJSON_ArrayForEach(c, item(run, "checkpoints"))
    {
        if (!strcmp(item(c, "status")->valuestring, "completed") && ++completed == 2)
            second = c;
    }
    double done = second ? num(second, "complete_s", NULL) : -1, at = num(f, "at_s", NULL);
    ok = cJSON_IsTrue(item(f, "applied")) && second && r &&
         strstr(item(r, "cause")->valuestring, "tm0") &&
         num(r, "checkpoint", NULL) == num(second, "id", NULL) &&
         at >= done + 0.019 && at < done + 0.2; /* real time: a little late at most */
    if (!ok) {
        char *text = cJSON_Print(item(run, "checkpoints"));
        fprintf(stderr, "fault at %.3f s, checkpoints:\n%s\n", at, text);
        free(text);
    }
    cJSON_Delete(run);
    assert_true(ok);
}

/* Checkpoint 3 completes at about 1.75 s; at 1.8 s a file of it is damaged,
 * at 1.85 s tm0 crashes. The restore finds the damage by its checksum. */
/* 50 and 100 ms after checkpoint 3 completed: before the next one does. */
#define DAMAGE_THEN_CRASH(how)                                                              \
    "{\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": 3}, \"at\": \"50 ms\","        \
    " \"action\": \"corrupt_checkpoint\", \"how\": \"" how "\"},"                                 \
    " {\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": 3}, \"at\": \"100 ms\","     \
    " \"action\": \"crash\", \"host\": \"tm0\", \"restart_after\": \"1 s\"}"

static void test_damaged_checkpoint_falls_back(void **state)
{
    (void)state;
    const char *hows[] = {"bitflip", "truncate"};
    for (int i = 0; i < 2; i++) {
        char name[32], ev[512];
        snprintf(name, sizeof(name), "damage-%s", hows[i]);
        snprintf(ev, sizeof(ev), "%s",
                 i ? DAMAGE_THEN_CRASH("truncate") : DAMAGE_THEN_CRASH("bitflip"));
        damages = 1;
        cJSON *run = fault_run(name, 6, 1, 3,
                               ",\n   \"execution.checkpointing.num-retained\": 2", ev,
                               "simgrid", 1);
        damages = 0;
        /* Checkpoint 3 had committed its output: going back to 2 replays it.
         * The run says so and is held to at least once: nothing lost. */
        const cJSON *c = item(run, "correctness");
        assert_string_equal(item(c, "guarantee")->valuestring, "at-least-once");
        assert_non_null(strstr(item(c, "degraded")->valuestring,
                               "fell back from damaged checkpoint 3 to checkpoint 2"));
        assert_true(num(c, "lost", NULL) == 0);
        const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
        assert_true(cJSON_IsTrue(item(f, "applied")));
        assert_non_null(strstr(item(f, "detail")->valuestring, "/chk-3/"));
        /* One fallback, past the file the event damaged (check_fallbacks). */
        assert_int_equal(cJSON_GetArraySize(item(c, "fallbacks")), 1);
        const cJSON *fb = cJSON_GetArrayItem(item(c, "fallbacks"), 0);
        assert_true(num(fb, "from_checkpoint", NULL) == 3 && num(fb, "to_checkpoint", NULL) == 2);
        assert_true(num(fb, "fault", NULL) == 0);
        /* The restore of checkpoint 3 failed; the job went back to 2. */
        const cJSON *recs = item(run, "recoveries");
        assert_int_equal(cJSON_GetArraySize(recs), 2);
        const cJSON *r1 = cJSON_GetArrayItem(recs, 1);
        assert_non_null(strstr(item(r1, "cause")->valuestring, "checkpoint 3: "));
        assert_non_null(strstr(item(r1, "cause")->valuestring, "/chk-3/"));
        assert_true(num(r1, "checkpoint", NULL) == 2);
        cJSON_Delete(run);
        char errf[256];
        snprintf(errf, sizeof(errf), "%s/%s.err", tmp, name);
        char *err = slurp(errf);
        assert_non_null(strstr(err, "falling back to checkpoint 2"));
        free(err);
    }
}

/* With one checkpoint retained there is nothing to fall back to: the job
 * fails, naming the file. */
static void test_damaged_checkpoint_fails(void **state)
{
    (void)state;
    char text[4096], args[512];
    scenario(text, sizeof(text), "damage-only", 6, "EXACTLY_ONCE", 3, "",
             DAMAGE_THEN_CRASH("bitflip"));
    const char *path = put_file("damage-only.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/damage-only", path, tmp);
    assert_chandy("damage-only", args, 1);
    cJSON *run = load_run("damage-only");
    const cJSON *job = item(run, "job");
    assert_string_equal(item(job, "state")->valuestring, "FAILED");
    const char *why = item(job, "failure")->valuestring;
    assert_non_null(strstr(why, "no checkpoint left to restore"));
    assert_string_equal(item(job, "failed_because")->valuestring, "no_checkpoint");
    assert_non_null(strstr(why, "/chk-3/v"));
    assert_non_null(strstr(why, ".state"));
    /* Nothing was lost silently: the verdict says the output is incomplete. */
    const cJSON *c = item(run, "correctness");
    damages = 1;
    check_fallbacks(run); /* the one fallback went past the damaged file, to none */
    damages = 0;
    const cJSON *fb = cJSON_GetArrayItem(item(c, "fallbacks"), 0);
    assert_true(num(fb, "from_checkpoint", NULL) == 3 && is_null(fb, "to_checkpoint"));
    assert_false(cJSON_IsTrue(item(c, "ok")));
    assert_true(num(c, "lost", NULL) > 0);
    cJSON_Delete(run);
}

/* Real processes: a task manager's process is stopped and continued so that
 * it runs a quarter of the time; slowing the job manager's CPU (its process
 * runs the world) is refused up front. */
static void test_sockets_slow_and_refused(void **state)
{
    (void)state;
    cJSON *run = fault_run("sockets-slow", 3, 1, 2, "",
                           "{\"at\": \"500 ms\", \"action\": \"slow_cpu\", \"host\": \"tm1\","
                           " \"factor\": 0.25, \"duration\": \"1 s\"}",
                           "sockets", 0);
    const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
    assert_true(num(f, "ended_s", NULL) >= 1.5);
    cJSON_Delete(run);
    /* Only task managers run in processes of their own. */
    char text[4096], args[512];
    scenario(text, sizeof(text), "sockets-jm", 3, "EXACTLY_ONCE", 2, "",
             "{\"at\": \"1 s\", \"action\": \"slow_cpu\", \"host\": \"jm\", \"factor\": 0.5}");
    const char *path = put_file("sockets-jm.json", text);
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/sockets-jm", path, tmp);
    assert_chandy("sockets-jm", args, 2);
    char errf[256];
    snprintf(errf, sizeof(errf), "%s/sockets-jm.err", tmp);
    char *err = slurp(errf);
    assert_non_null(strstr(err, "events[0]: action \"slow_cpu\": only task managers' processes"));
    assert_true(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
    free(err);
}

/* As processes, tm1's link slows to a trickle with 50 ms more latency from
 * 1 s to 2 s, and the output stays exactly once. The pacing shows in what
 * the slow link forces whatever the machine's load (load only slows things
 * further): a checkpoint triggered while the link is slow waits at least
 * for the job manager's process to hold the trigger to tm1's source for the
 * added 50 ms; checkpoints go on completing after it heals. When
 * checkpoints are triggered, and how quick they are again, is wall-clock
 * timing, which the test does not bound. */
static void test_sockets_slow_link(void **state)
{
    (void)state;
    cJSON *run = fault_run("sockets-link", 5, 1, 2, "",
                           "{\"at\": \"1 s\", \"action\": \"slow_link\", \"host\": \"tm1\","
                           " \"factor\": 0.0001, \"latency\": \"50 ms\", \"duration\": \"1 s\"}",
                           "sockets", 0);
    const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), 0);
    assert_true(cJSON_IsTrue(item(f, "applied")));
    double slowed = num(f, "at_s", NULL), healed = num(f, "ended_s", NULL);
    assert_true(slowed >= 1.0 && healed >= 2.0 && healed > slowed);
    int during = 0, after = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, item(run, "checkpoints"))
    {
        double at = num(c, "trigger_s", NULL);
        if (strcmp(item(c, "status")->valuestring, "completed"))
            continue;
        if (at >= slowed && at < healed) {
            assert_true(num(c, "duration_s", NULL) >= 0.05);
            during++;
        } else if (at > healed) {
            after++;
        }
    }
    assert_true(during >= 1 && after >= 1);
    cJSON_Delete(run);
}

/* As processes, a subtask busy for seconds at a stretch (a sink at 1.5 ms
 * a record behind a full input queue: 135% of its core) does not stop its
 * task manager's heartbeats, as a Flink task thread would not: with a 1 s
 * heartbeat timeout nothing fails, the job is just backpressured. */
static void test_sockets_busy_subtask_keeps_heartbeats(void **state)
{
    (void)state;
    counts_sink = ", \"cpu_per_record\": \"1500kf\"";
    cJSON *run = fault_run("sockets-busy", 5, 1, 3, FAST_HEARTBEATS, "", "sockets", 0);
    const cJSON *t;
    int seen = 0;
    cJSON_ArrayForEach(t, item(run, "tasks"))
    {
        const char *v = item(t, "vertex")->valuestring;
        if (!strcmp(v, "count -> counts"))
            assert_true(num(t, "busy_ratio", NULL) > 0.9), seen++;
        else if (!strcmp(v, "source -> some"))
            /* Waiting, not working: also after its input ended, while what
             * it sent drains. */
            assert_true(num(t, "backpressured_ratio", NULL) > 0.4 &&
                        num(t, "busy_ratio", NULL) < 0.05),
                seen++;
    }
    assert_int_equal(seen, 4);
    /* 2 x 1350 records/s at 1.5 ms: the job runs well past its 3 s of input. */
    assert_true(num(run, "sim_time_s", NULL) > 4.5);
    cJSON_Delete(run);
}

/* ---- savepoints ------------------------------------------------------------------ */

/* An intermediate savepoint at 1.2 s changes nothing; a stop-with-savepoint
 * at 1.6 s ends the attempt, and the job resumes from it 500 ms later, as
 * an upgrade would: the output is exactly once across the stop. */
static void savepoint_stop_resume(const char *backend)
{
    char name[48];
    snprintf(name, sizeof(name), "sp-resume-%s", backend);
    cJSON *run = fault_run(name, 7, 1, 3, "",
                           "{\"at\": \"1200 ms\", \"action\": \"savepoint\"},"
                           " {\"at\": \"1600 ms\", \"action\": \"savepoint\", \"stop\": true,"
                           " \"resume_after\": \"500 ms\"}",
                           backend, 1);
    const cJSON *sps = item(run, "savepoints");
    assert_int_equal(cJSON_GetArraySize(sps), 2);
    const cJSON *a = cJSON_GetArrayItem(sps, 0), *b = cJSON_GetArrayItem(sps, 1);
    assert_false(cJSON_IsTrue(item(a, "stop")));
    assert_true(cJSON_IsTrue(item(b, "stop")));
    assert_string_equal(item(a, "status")->valuestring, "completed");
    assert_string_equal(item(b, "status")->valuestring, "completed");
    assert_non_null(strstr(item(b, "path")->valuestring, "/store/savepoints/savepoint-"));
    const cJSON *r = cJSON_GetArrayItem(item(run, "recoveries"), 0);
    assert_non_null(strstr(item(r, "cause")->valuestring, "stopped with savepoint"));
    assert_true(num(r, "checkpoint", NULL) == num(b, "id", NULL));
    /* The stop completes once the savepoint is durable: at once in
     * simulation; after real uploads (fsync) as processes. */
    double late = num(r, "failure_s", NULL) - 1.6;
    assert_true(late >= -1e-9 && late < (strcmp(backend, "sockets") ? 0.01 : 0.25));
    assert_true(num(r, "restarted_s", NULL) >= num(r, "detected_s", NULL) + 0.4999);
    /* Savepoints are not checkpoints: the summary counts none (it counts
     * the final checkpoint at the end of the input). */
    double completed = num(item(run, "checkpoint_summary"), "completed", NULL);
    int ncp = 0;
    const cJSON *cp;
    cJSON_ArrayForEach(cp, item(run, "checkpoints"))
        ncp += (!strcmp(item(cp, "kind")->valuestring, "checkpoint") ||
                !strcmp(item(cp, "kind")->valuestring, "final")) &&
               !strcmp(item(cp, "status")->valuestring, "completed");
    assert_true(completed == ncp);
    cJSON_Delete(run);
}

static void test_savepoint_stop_resume(void **state)
{
    (void)state;
    savepoint_stop_resume("simgrid");
    savepoint_stop_resume("sockets");
}

/* Run A stops with a savepoint; run B starts from it (flink run -s) and is
 * checked together with A's output: exactly once over both. */
static void test_savepoint_across_runs(void **state)
{
    (void)state;
    char text[4096], args[1024], sp[600];
    scenario(text, sizeof(text), "sp-a", 8, "EXACTLY_ONCE", 3, "",
             "{\"at\": \"1500 ms\", \"action\": \"savepoint\", \"stop\": true}");
    const char *path = put_file("sp-a.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-a", path, tmp);
    assert_chandy("sp-a", args, 0);
    cJSON *a = load_run("sp-a");
    const cJSON *ja = item(a, "job");
    assert_string_equal(item(ja, "state")->valuestring, "FINISHED");
    snprintf(sp, sizeof(sp), "%s", item(ja, "stopped_with_savepoint")->valuestring);
    /* A alone: part of the output, all of it right. */
    const cJSON *ca = item(a, "correctness");
    assert_true(cJSON_IsTrue(item(ca, "partial")) && cJSON_IsTrue(item(ca, "ok")));
    assert_true(num(ca, "lost", NULL) > 0 && num(ca, "duplicated", NULL) == 0);
    /* Stopped soon after 1.5 s (a checkpoint in flight then delays it). */
    assert_true(num(a, "sim_time_s", NULL) < 2.0);
    cJSON_Delete(a);

    snprintf(args, sizeof(args), "savepoint %s", sp);
    assert_chandy("sp-info", args, 0);
    char f[256];
    snprintf(f, sizeof(f), "%s/sp-info.out", tmp);
    char *info = slurp(f);
    assert_non_null(strstr(info, "stop-with-savepoint"));
    assert_non_null(strstr(info, "6 subtasks"));
    assert_non_null(strstr(info, "keyed entries"));
    free(info);

    scenario(text, sizeof(text), "sp-b", 8, "EXACTLY_ONCE", 3, "", "");
    path = put_file("sp-b.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-b --from-savepoint %s", path, tmp, sp);
    assert_chandy("sp-b", args, 0);
    cJSON *b = load_run("sp-b");
    const cJSON *cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")));
    assert_false(cJSON_IsTrue(item(cb, "partial")));
    assert_true(num(cb, "lost", NULL) == 0 && num(cb, "duplicated", NULL) == 0);
    assert_non_null(strstr(item(cb, "includes_output_of")->valuestring, "/sp-a"));
    assert_string_equal(item(item(b, "job"), "started_from")->valuestring, sp);
    /* Checkpoint ids go on after the savepoint's. */
    const cJSON *c0 = cJSON_GetArrayItem(item(b, "checkpoints"), 0);
    const char *last = strrchr(sp, '-');
    assert_true(num(c0, "id", NULL) == atof(last + 1) + 1);
    cJSON_Delete(b);

    /* The same through the scenario's execution.state-recovery.path. */
    char cfg[800];
    snprintf(cfg, sizeof(cfg), ",\n   \"execution.state-recovery.path\": \"%s\"", sp);
    scenario(text, sizeof(text), "sp-c", 8, "EXACTLY_ONCE", 3, cfg, "");
    path = put_file("sp-c.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-c", path, tmp);
    assert_chandy("sp-c", args, 0);

    /* A chain: b2 from a's savepoint stops with one of its own, b3 starts
     * from that; b3's output is checked with b2's and a's, whole. */
    scenario(text, sizeof(text), "sp-b2", 8, "EXACTLY_ONCE", 3, "",
             "{\"at\": \"700 ms\", \"action\": \"savepoint\", \"stop\": true}");
    path = put_file("sp-b2.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-b2 --from-savepoint %s", path, tmp, sp);
    assert_chandy("sp-b2", args, 0);
    b = load_run("sp-b2");
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "partial")) && cJSON_IsTrue(item(cb, "ok")));
    char sp2[600];
    snprintf(sp2, sizeof(sp2), "%s", item(item(b, "job"), "stopped_with_savepoint")->valuestring);
    cJSON_Delete(b);
    scenario(text, sizeof(text), "sp-b3", 8, "EXACTLY_ONCE", 3, "", "");
    path = put_file("sp-b3.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-b3 --from-savepoint %s", path, tmp, sp2);
    assert_chandy("sp-b3", args, 0);
    b = load_run("sp-b3");
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")));
    assert_false(cJSON_IsTrue(item(cb, "partial")));
    assert_true(num(cb, "lost", NULL) == 0 && num(cb, "duplicated", NULL) == 0);
    assert_non_null(strstr(item(cb, "includes_output_of")->valuestring, "/sp-b2"));
    cJSON_Delete(b);
    /* Without a's output the chain is not whole: b3 again, checked as part. */
    snprintf(args, sizeof(args), "%s/sp-a/output", tmp);
    assert_int_equal(ck_storefs_rmtree(args), 0);
    snprintf(args, sizeof(args), "run %s --out %s/sp-b4 --from-savepoint %s", path, tmp, sp2);
    assert_chandy("sp-b4", args, 0);
    b = load_run("sp-b4");
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "partial")) && cJSON_IsTrue(item(cb, "ok")));
    assert_true(num(cb, "lost", NULL) > 0);
    assert_true(is_null(cb, "includes_output_of"));
    cJSON_Delete(b);
}

/* Runs scenario `name` from snapshot `from` (NULL: from nothing) with
 * extra events; returns its run.json. */
static cJSON *run_from(const char *name, const char *from, const char *events, int restarts)
{
    char text[4096], args[1400];
    scenario(text, sizeof(text), name, 8, "EXACTLY_ONCE", 3,
             ",\n   \"execution.checkpointing.num-retained\": 3", events);
    if (!restarts) { /* fails for good at its first failure */
        char *a = strstr(text, "\"restart-strategy.fixed-delay.attempts\": 10");
        assert_non_null(a);
        memcpy(strchr(a, ':') + 2, " 0", 2);
    }
    char file[200];
    snprintf(file, sizeof(file), "%s.json", name);
    const char *path = put_file(file, text);
    snprintf(args, sizeof(args), "run %s --out %s/%s%s%s", path, tmp, name, from ? " -s " : "",
             from ? from : "");
    assert_chandy(name, args, restarts ? 0 : 1); /* a job that failed exits with 1 */
    return load_run(name);
}

/* Started from a snapshot its run went on past (a savepoint taken without
 * stopping, a retained checkpoint older than a failed run's latest), the
 * run's output is checked whole, with what that run committed in
 * transactions begun before the snapshot's cut; what it committed after
 * is what the new run produces again, counted apart (Flink's output holds
 * it twice). A chain through such a run stays whole too. */
static void test_resume_from_older_snapshots(void **state)
{
    (void)state;
    char sp[600], sp2[600], chk[700], cmd[800];
    cJSON *a = run_from("older-a", NULL, "{\"at\": \"700 ms\", \"action\": \"savepoint\"}", 1);
    const cJSON *ca = item(a, "correctness");
    assert_true(cJSON_IsTrue(item(ca, "ok")) && !cJSON_IsTrue(item(ca, "partial")));
    snprintf(sp, sizeof(sp), "%s",
             item(cJSON_GetArrayItem(item(a, "savepoints"), 0), "path")->valuestring);
    cJSON_Delete(a);
    /* from the savepoint: whole, A's output after it counted */
    cJSON *b = run_from("older-b", sp, "", 1);
    const cJSON *cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")));
    assert_false(cJSON_IsTrue(item(cb, "partial")));
    assert_true(num(cb, "lost", NULL) == 0 && num(cb, "duplicated", NULL) == 0);
    assert_true(num(cb, "received", NULL) == num(cb, "expected", NULL));
    assert_non_null(strstr(item(cb, "includes_output_of")->valuestring, "/older-a"));
    assert_string_equal(item(cb, "includes_output_before")->valuestring, sp);
    double after = num(cb, "committed_after_start", NULL);
    assert_true(after > 0); /* A went on for 2.3 s after it */
    cJSON_Delete(b);
    /* a chain: b2 from A's savepoint stops with one of its own; c from
     * that is checked with b2's output and A's before the cut, whole */
    b = run_from("older-b2", sp,
                 "{\"at\": \"1500 ms\", \"action\": \"savepoint\", \"stop\": true}", 1);
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")) && cJSON_IsTrue(item(cb, "partial")));
    assert_true(num(cb, "committed_after_start", NULL) == after);
    snprintf(sp2, sizeof(sp2), "%s", item(item(b, "job"), "stopped_with_savepoint")->valuestring);
    cJSON_Delete(b);
    cJSON *c = run_from("older-c", sp2, "", 1);
    const cJSON *cc = item(c, "correctness");
    assert_true(cJSON_IsTrue(item(cc, "ok")));
    assert_false(cJSON_IsTrue(item(cc, "partial")));
    assert_true(num(cc, "lost", NULL) == 0 && num(cc, "duplicated", NULL) == 0);
    assert_true(is_null(cc, "committed_after_start")); /* stopped: nothing after */
    cJSON_Delete(c);
    /* a failed run's retained checkpoint before its latest */
    a = run_from("older-f", NULL, "{\"at\": \"2200 ms\", \"action\": \"crash\", \"host\": \"tm1\"}",
                 0);
    assert_string_equal(item(item(a, "job"), "state")->valuestring, "FAILED");
    cJSON_Delete(a);
    snprintf(cmd, sizeof(cmd), "ls -d %s/older-f/store/checkpoints/*/chk-* | sort -t- -k2 -n | tail -2 | head -1",
             tmp);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(chk, sizeof(chk), p));
    pclose(p);
    chk[strcspn(chk, "\n")] = 0;
    b = run_from("older-g", chk, "", 1);
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")));
    assert_false(cJSON_IsTrue(item(cb, "partial")));
    assert_true(num(cb, "lost", NULL) == 0 && num(cb, "duplicated", NULL) == 0);
    assert_true(num(cb, "committed_after_start", NULL) > 0); /* the latest's output, at least */
    cJSON_Delete(b);
    /* the latest itself takes over its transactions instead: nothing after */
    snprintf(cmd, sizeof(cmd), "ls -d %s/older-f/store/checkpoints/*/chk-* | sort -t- -k2 -n | tail -1",
             tmp);
    p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(chk, sizeof(chk), p));
    pclose(p);
    chk[strcspn(chk, "\n")] = 0;
    b = run_from("older-h", chk, "", 1);
    cb = item(b, "correctness");
    assert_true(cJSON_IsTrue(item(cb, "ok")) && !cJSON_IsTrue(item(cb, "partial")));
    assert_true(is_null(cb, "committed_after_start"));
    cJSON_Delete(b);
}

/* A damaged savepoint is refused before anything runs, naming the file;
 * so is one of another job shape. */
static void test_savepoint_refused(void **state)
{
    (void)state;
    char text[4096], args[1024], sp[600], file[700];
    scenario(text, sizeof(text), "sp-d", 9, "EXACTLY_ONCE", 3, "",
             "{\"at\": \"1 s\", \"action\": \"savepoint\", \"stop\": true}");
    const char *path = put_file("sp-d.json", text);
    snprintf(args, sizeof(args), "run %s --out %s/sp-d", path, tmp);
    assert_chandy("sp-d", args, 0);
    cJSON *d = load_run("sp-d");
    snprintf(sp, sizeof(sp), "%s", item(item(d, "job"), "stopped_with_savepoint")->valuestring);
    cJSON_Delete(d);
    /* Flip a bit in the largest state file (v1-0 is the keyed count). */
    snprintf(file, sizeof(file), "%s/v1-0.state", sp);
    FILE *f = fopen(file, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(c ^ 1, f);
    fclose(f);
    snprintf(args, sizeof(args), "savepoint %s", sp);
    assert_chandy("sp-d-info", args, 1);
    snprintf(args, sizeof(args), "run %s --out %s/sp-e -s %s", path, tmp, sp);
    assert_chandy("sp-e", args, 2);
    char ef[256];
    snprintf(ef, sizeof(ef), "%s/sp-e.err", tmp);
    char *err = slurp(ef);
    assert_non_null(strstr(err, "v1-0.state: checksum mismatch"));
    free(err);
    /* Not a savepoint at all. */
    snprintf(args, sizeof(args), "run %s --out %s/sp-f -s %s", path, tmp, tmp);
    assert_chandy("sp-f", args, 2);
    snprintf(ef, sizeof(ef), "%s/sp-f.err", tmp);
    err = slurp(ef);
    assert_non_null(strstr(err, "_metadata: no such file"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_none),
        cmocka_unit_test(test_restart_fixed_delay),
        cmocka_unit_test(test_restart_failure_rate),
        cmocka_unit_test(test_restart_exponential_delay),
        cmocka_unit_test(test_restart_exponential_delay_merges),
        cmocka_unit_test(test_restart_exponential_delay_jitter_then_clamp),
        cmocka_unit_test(test_crash_exactly_once),
        cmocka_unit_test(test_crash_at_least_once),
        cmocka_unit_test(test_crash_during_upload_exactly_once),
        cmocka_unit_test(test_crash_during_upload_at_least_once),
        cmocka_unit_test(test_crash_during_recovery_exactly_once),
        cmocka_unit_test(test_crash_during_recovery_at_least_once),
        cmocka_unit_test(test_crash_sockets),
        cmocka_unit_test_teardown(test_region_failover, reset_job),
        cmocka_unit_test_teardown(test_region_failover_sockets, reset_job),
        cmocka_unit_test_teardown(test_region_failure_joins_pending_restart, reset_job),
        cmocka_unit_test_teardown(test_region_crash_while_stopping, reset_job),
        cmocka_unit_test(test_region_final_at_failover),
        cmocka_unit_test_teardown(test_partitioners_crash, reset_job),
        cmocka_unit_test(test_no_restart_fails_the_job),
        cmocka_unit_test_teardown(test_crash_after_some_ended, reset_sinks),
        cmocka_unit_test(test_checkpoints_after_tasks_finish),
        cmocka_unit_test(test_crash_after_subtask_finished),
        cmocka_unit_test(test_lost_host_against_killed_process),
        cmocka_unit_test(test_stopped_from_outside_sockets),
        cmocka_unit_test(test_partition),
        cmocka_unit_test(test_link_down_short),
        cmocka_unit_test(test_slowness),
        cmocka_unit_test_teardown(test_slow_sink, reset_sinks),
        cmocka_unit_test(test_damaged_checkpoint_falls_back),
        cmocka_unit_test(test_triggered_over_sockets),
        cmocka_unit_test(test_damaged_checkpoint_fails),
        cmocka_unit_test(test_sockets_slow_and_refused),
        cmocka_unit_test(test_sockets_slow_link),
        cmocka_unit_test_teardown(test_sockets_busy_subtask_keeps_heartbeats, reset_sinks),
        cmocka_unit_test(test_output_faults),
        cmocka_unit_test(test_savepoint_stop_resume),
        cmocka_unit_test(test_savepoint_across_runs),
        cmocka_unit_test(test_resume_from_older_snapshots),
        cmocka_unit_test(test_savepoint_refused),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
