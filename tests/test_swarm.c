/*
 * test_swarm.c - `chandy swarm` and triggered events, through the binary.
 *
 * A crash triggered 0 us after the second checkpoint completes lands at
 * that completion and is followed by a recovery from it; two task
 * managers crashing in one instant recover exactly once; the sockets
 * backend refuses triggered events. A CI-sized swarm over a fixed seed
 * range passes and reports every seed; a seed's replay command and its
 * scenario file reproduce its run.json; --shard partitions the seeds and
 * --merge puts the shards back together, refusing another scenario's and
 * counting the results rather than the shards' totals; a seed still
 * running after --timeout is killed and counted.
 */
#include <dirent.h>
#include <math.h>
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

#include "runutil.h"

#define SCENARIO "scenarios/swarm-crash.json"
#define SCENARIO_UC "scenarios/swarm-unaligned.json"

/* A scenario (swarm-crash.json by default) with its events replaced. */
static const char *scenario_from(const char *base, const char *name, const char *events)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", CHANDY_SOURCE_DIR, base);
    char *text = slurp(path);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "events");
    cJSON *ev = cJSON_Parse(events);
    assert_non_null(ev);
    cJSON_AddItemToObject(root, "events", ev);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    const char *p = put_file(name, out);
    free(out);
    assert_non_null(p);
    return p;
}

static const char *scenario_with(const char *name, const char *events)
{
    return scenario_from(SCENARIO, name, events);
}

static cJSON *load_json(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, rel);
    char *text = slurp(path);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static const cJSON *at(const cJSON *j, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    assert_non_null(x);
    return x;
}

/* Runs the swarm scenario with `events` instead of its own (seed 0: the
 * scenario's), asserts that it exits 0, and returns its run.json. */
static cJSON *run_base_events(const char *base, const char *name, const char *events,
                              unsigned seed)
{
    char file[80], args[800], sd[32] = "";
    snprintf(file, sizeof(file), "%s.json", name);
    const char *sc = scenario_from(base, file, events);
    if (seed)
        snprintf(sd, sizeof(sd), " --seed %u", seed);
    snprintf(args, sizeof(args), "run %s%s --out %s/%s -q", sc, sd, tmp, name);
    assert_chandy(name, args, 0);
    return load_run(name);
}

static cJSON *run_events(const char *name, const char *events, unsigned seed)
{
    return run_base_events(SCENARIO, name, events, seed);
}

static const cJSON *checkpoint_by_id(const cJSON *run, int id)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, at(run, "checkpoints"))
        if (at(c, "id")->valueint == id)
            return c;
    return NULL;
}

/*
 * Unaligned checkpoints across crashes, at the moments they are about, on
 * a backpressured job (swarm-unaligned.json), over several seeds: a crash
 * while a checkpoint's channel state is being collected (2 ms after its
 * trigger: its barriers are on their way and channels spill), one while
 * its state files (channel state in them) are being uploaded, and one
 * while the job restores channel state after a first crash. Each time the
 * job recovers from an unaligned checkpoint that stored channel state, and
 * the output is exactly once.
 */
static void test_unaligned_crashes(void **state)
{
    (void)state;
    static const char *const events[] = {
        "[{\"after\": {\"moment\": \"checkpoint_triggered\", \"nth\": 4}, \"at\": \"2 ms\","
        "  \"action\": \"crash\", \"host\": \"tm0\", \"restart_after\": \"300 ms\"}]",
        "[{\"after\": {\"moment\": \"upload_started\", \"nth\": 35}, \"at\": \"0 us\","
        "  \"action\": \"crash\", \"host\": \"tm1\", \"restart_after\": \"300 ms\"}]",
        "[{\"at\": \"900 ms\", \"action\": \"crash\", \"host\": \"tm0\", \"restart_after\": \"300 ms\"},"
        " {\"after\": {\"moment\": \"restore_started\", \"nth\": 1}, \"at\": \"0 us\","
        "  \"action\": \"crash\", \"host\": \"tm1\", \"restart_after\": \"300 ms\"}]",
    };
    for (int e = 0; e < 3; e++) {
        for (unsigned seed = 1; seed <= 3; seed++) {
            char name[32];
            snprintf(name, sizeof(name), "uc%d-%u", e, seed);
            cJSON *run = run_base_events(SCENARIO_UC, name, events[e], seed);
            const cJSON *f;
            cJSON_ArrayForEach(f, at(run, "faults"))
                assert_true(cJSON_IsTrue(at(f, "applied")));
            const cJSON *rec;
            int n = 0;
            cJSON_ArrayForEach(rec, at(run, "recoveries"))
            {
                const cJSON *cp = checkpoint_by_id(run, at(rec, "checkpoint")->valueint);
                assert_non_null(cp);
                assert_true(cJSON_IsTrue(at(cp, "unaligned")));
                assert_true(at(cp, "persisted_inflight_bytes")->valuedouble > 0);
                n++;
            }
            assert_true(n >= (e == 2 ? 2 : 1));
            if (e == 0) {
                /* The checkpoint in progress at the crash did not complete. */
                const cJSON *c, *fourth = NULL;
                int k = 0;
                cJSON_ArrayForEach(c, at(run, "checkpoints"))
                    if (!strcmp(at(c, "kind")->valuestring, "checkpoint") && ++k == 4 && !fourth)
                        fourth = c;
                assert_non_null(fourth);
                assert_string_not_equal(at(fourth, "status")->valuestring, "completed");
            }
            const cJSON *cor = at(run, "correctness");
            assert_true(cJSON_IsTrue(at(cor, "ok")));
            assert_int_equal(at(cor, "lost")->valueint, 0);
            assert_int_equal(at(cor, "duplicated")->valueint, 0);
            cJSON_Delete(run);
        }
    }
}

static void test_triggered_crash_at_completion(void **state)
{
    (void)state;
    cJSON *run = run_events("trig",
                            "[{\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": 2},"
                            "  \"at\": \"0 us\", \"action\": \"crash\", \"host\": \"tm0\","
                            "  \"restart_after\": \"500 ms\"}]",
                            3);
    const cJSON *f = cJSON_GetArrayItem(at(run, "faults"), 0);
    assert_true(cJSON_IsTrue(at(f, "applied")));
    assert_string_equal(at(at(f, "after"), "moment")->valuestring, "checkpoint_completed");
    /* The second completed checkpoint: the crash lands at its completion. */
    const cJSON *c, *second = NULL;
    int completed = 0;
    cJSON_ArrayForEach(c, at(run, "checkpoints"))
    {
        if (!strcmp(at(c, "status")->valuestring, "completed") && ++completed == 2) {
            second = c;
            break;
        }
    }
    assert_non_null(second);
    double crash = at(f, "at_s")->valuedouble, done = at(second, "complete_s")->valuedouble;
    if (fabs(crash - done) > 2e-6)
        fprintf(stderr, "crash at %.6f s, checkpoint completed at %.6f s\n", crash, done);
    assert_true(fabs(crash - done) <= 2e-6);
    /* A recovery follows, from that checkpoint, and the output stays exactly once. */
    const cJSON *rec = cJSON_GetArrayItem(at(run, "recoveries"), 0);
    assert_non_null(rec);
    assert_true(fabs(at(rec, "failure_s")->valuedouble - crash) <= 1e-6);
    assert_int_equal(at(rec, "checkpoint")->valueint, at(second, "id")->valueint);
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    cJSON_Delete(run);
}

/* Two task managers crash in one instant: the first one's failover sends
 * to the second while it is still up (SimGrid 3.32 aborted when those
 * transfers started after it went off). Both come back; exactly once. */
static void test_two_crashes_in_one_instant(void **state)
{
    (void)state;
    cJSON *run = run_events("two",
                            "[{\"after\": {\"moment\": \"checkpoint_triggered\", \"nth\": 1},"
                            "  \"at\": \"0 us\", \"action\": \"crash\", \"host\": \"tm1\","
                            "  \"restart_after\": \"200 ms\"},"
                            " {\"after\": {\"moment\": \"checkpoint_triggered\", \"nth\": 1},"
                            "  \"at\": \"0 us\", \"action\": \"crash\", \"host\": \"tm0\","
                            "  \"restart_after\": \"250 ms\"}]",
                            1);
    const cJSON *f0 = cJSON_GetArrayItem(at(run, "faults"), 0);
    const cJSON *f1 = cJSON_GetArrayItem(at(run, "faults"), 1);
    assert_true(cJSON_IsTrue(at(f0, "applied")) && cJSON_IsTrue(at(f1, "applied")));
    assert_true(at(f0, "at_s")->valuedouble == at(f1, "at_s")->valuedouble);
    assert_string_equal(at(at(run, "job"), "state")->valuestring, "FINISHED");
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    cJSON_Delete(run);
}

/* Found by the swarm (seed 9627): a stop-with-savepoint commits the sinks'
 * transactions; a crash while the job stops must restore that savepoint
 * (Flink recovers from synchronous savepoints), not the checkpoint before
 * it, which replayed what the savepoint had committed: 364 duplicates.
 * The crash comes 299 us after the stop-with-savepoint's completion (the
 * 4th completion sent: savepoints that do not stop send none), before the
 * job resumes; the asserts below check that it still lands there. */
static void test_crash_while_stopping_restores_the_stop_savepoint(void **state)
{
    (void)state;
    cJSON *run = run_events(
        "stopcrash",
        "[{\"at\": \"740665 us\", \"action\": \"savepoint\"},"
        " {\"at\": \"788782 us\", \"action\": \"savepoint\", \"stop\": true,"
        "  \"resume_after\": \"13276 us\"},"
        " {\"after\": {\"moment\": \"checkpoint_triggered\", \"nth\": 3}, \"at\": \"14 us\","
        "  \"action\": \"slow_link\", \"host\": \"tm1\", \"latency\": \"10 ms\","
        "  \"duration\": \"136316 us\"},"
        " {\"after\": {\"moment\": \"checkpoint_completed\", \"nth\": 4}, \"at\": \"299 us\","
        "  \"action\": \"crash\", \"host\": \"tm0\", \"restart_after\": \"91762 us\"}]",
        9627);
    int stop_id = -1;
    const cJSON *cp;
    cJSON_ArrayForEach(cp, at(run, "checkpoints"))
    {
        if (!strcmp(at(cp, "kind")->valuestring, "stop-with-savepoint"))
            stop_id = at(cp, "id")->valueint;
    }
    assert_true(stop_id > 0);
    /* The crash came after the savepoint completed, before the job resumed. */
    const cJSON *rec = cJSON_GetArrayItem(at(run, "recoveries"), 0);
    assert_non_null(strstr(at(rec, "cause")->valuestring, "tm0"));
    assert_int_equal(at(rec, "checkpoint")->valueint, stop_id);
    const cJSON *c = at(run, "correctness");
    assert_true(cJSON_IsTrue(at(c, "ok")));
    assert_int_equal(at(c, "duplicated")->valueint, 0);
    cJSON_Delete(run);
}

/* Found by the swarm (seed 49, with one connection per pair of hosts): a
 * transfer to a task manager that had crashed and restarted sat in its
 * host's mailbox, whose permanent receiver died in the crash, and never
 * reached the new receiver; the job stalled until the time limit. Each
 * incarnation of a host now has its own mailbox. */
static void test_restarted_host_gets_its_mail(void **state)
{
    (void)state;
    cJSON *run = run_events(
        "restarted",
        "[{\"at\": \"909407 us\", \"action\": \"partition\","
        "  \"groups\": [[\"jm\", \"tm1\", \"tm2\", \"store\"], [\"tm0\"]], \"duration\": \"2871 us\"},"
        " {\"at\": \"997834 us\", \"action\": \"crash\", \"host\": \"tm0\", \"restart_after\": \"30171 us\"},"
        " {\"at\": \"1597355 us\", \"action\": \"crash\", \"host\": \"tm1\", \"restart_after\": \"61059 us\"}]",
        49);
    assert_string_equal(at(at(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *rec;
    int restored = 0;
    cJSON_ArrayForEach(rec, at(run, "recoveries"))
    {
        restored += cJSON_IsNumber(at(rec, "restored_s"));
    }
    assert_int_equal(restored, 2);
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    cJSON_Delete(run);
}

/* Found by the swarm (seed 1649): tm1's link is down for a little less
 * than heartbeat.timeout. The task manager hears nothing for longer than
 * the timeout on its side and cancels its subtasks; the job manager still
 * heard it in time. The job hung until the time limit; now the task
 * manager's next heartbeat says it cancelled the attempt, and the job
 * manager fails over. */
static void test_job_manager_learns_a_task_manager_cancelled(void **state)
{
    (void)state;
    cJSON *run = run_events("tmcancel",
                            "[{\"at\": \"1400013 us\", \"action\": \"link_down\","
                            " \"host\": \"tm1\", \"duration\": \"477620 us\"}]",
                            0);
    assert_string_equal(at(at(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *rec = cJSON_GetArrayItem(at(run, "recoveries"), 0);
    assert_non_null(rec);
    assert_non_null(strstr(at(rec, "cause")->valuestring, "tm1 cancelled its subtasks"));
    /* Noticed once the link was back: after the cut, within a heartbeat interval or two. */
    double detected = at(rec, "detected_s")->valuedouble;
    assert_true(detected >= 1.877 && detected <= 1.877 + 0.25);
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    cJSON_Delete(run);
}

/* Over sockets an event may wait for a moment only a task manager's
 * process sees: it tells the job manager's, which plays the timeline. A
 * savepoint 0 us after the fifth upload started is taken then, after the
 * first checkpoint's uploads began. */
static void test_sockets_triggered_events(void **state)
{
    (void)state;
    const char *sc = scenario_with(
        "trig-sock.json", "[{\"after\": {\"moment\": \"upload_started\", \"nth\": 5},"
                          " \"at\": 0, \"action\": \"savepoint\"}]");
    char args[700];
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/trig-sock -q", sc, tmp);
    assert_chandy("trig-sock", args, 0);
    cJSON *run = load_json("trig-sock/run.json");
    const cJSON *ft = cJSON_GetArrayItem(at(run, "faults"), 0);
    assert_true(cJSON_IsTrue(at(ft, "applied")));
    double when = at(ft, "at_s")->valuedouble, first = -1, sp = -1;
    const cJSON *cp;
    cJSON_ArrayForEach(cp, at(run, "checkpoints"))
    {
        if (first < 0)
            first = at(cp, "trigger_s")->valuedouble;
        if (!strcmp(at(cp, "kind")->valuestring, "savepoint") &&
            !strcmp(at(cp, "status")->valuestring, "completed"))
            sp = at(cp, "trigger_s")->valuedouble;
    }
    assert_true(first >= 0 && when > first); /* after the first checkpoint's uploads began */
    assert_true(sp >= when && sp < when + 0.5); /* the savepoint, then */
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    cJSON_Delete(run);
}

static int dir_entries(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, rel);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Swarms a scenario over seeds 1..n, 2 at a time, into <tmp>/<tag>;
 * asserts no seed broke the oracle and returns swarm.json. */
static cJSON *ci_swarm(const char *tag, const char *scenario, int n)
{
    char args[700], json[80];
    snprintf(args, sizeof(args), "swarm %s --seeds 1..%d --jobs 2 --out %s/%s", scenario, n, tmp,
             tag);
    int rc = chandy(tag, args);
    snprintf(json, sizeof(json), "%s/swarm.json", tag);
    cJSON *sw = load_json(json);
    if (rc)
        fprintf(stderr, "%s\n", cJSON_Print(at(sw, "violating_seeds")));
    assert_int_equal(rc, 0);
    assert_int_equal(at(sw, "violations")->valueint, 0);
    assert_int_equal(at(sw, "runs")->valueint, n);
    return sw;
}

/* The CI-sized swarm: 12 seeds, 2 at a time. */
static void test_swarm_ci(void **state)
{
    (void)state;
    char args[700];
    /* Unaligned checkpoints too: channel state stored and restored. */
    cJSON_Delete(ci_swarm("ciuc", SCENARIO_UC, 16));

    cJSON *sw = ci_swarm("ci", SCENARIO, 12);
    assert_string_equal(at(sw, "mode")->valuestring, "safety");
    assert_string_equal(at(sw, "scenario_name")->valuestring, "swarm-crash");
    assert_true(cJSON_IsTrue(at(sw, "complete")));
    assert_true(at(sw, "seeds_per_minute")->valuedouble > 0);
    assert_int_equal(at(at(sw, "seeds"), "from")->valueint, 1);
    assert_int_equal(at(at(sw, "seeds"), "to")->valueint, 12);
    assert_int_equal(cJSON_GetArraySize(at(sw, "results")), 12);
    int seen[13] = {0};
    const cJSON *r;
    cJSON_ArrayForEach(r, at(sw, "results"))
    {
        int seed = at(r, "seed")->valueint;
        assert_true(seed >= 1 && seed <= 12 && !seen[seed]);
        seen[seed] = 1;
        assert_string_equal(at(r, "verdict")->valuestring, "ok");
        assert_int_equal(at(r, "exit_status")->valueint, 0);
        assert_true(cJSON_GetArraySize(at(r, "schedule")) >= 1);
        char want[64];
        /* Replayed as it ran: with every invariant checked (invariant.h). */
        snprintf(want, sizeof(want), " --seed %d --swarm safety --check-invariants --out ",
                 seed);
        assert_non_null(strstr(at(r, "replay")->valuestring, want));
    }
    /* Passing seeds leave nothing behind. */
    assert_int_equal(dir_entries("ci/runs"), 0);
    cJSON_Delete(sw);
    /* Bad options: exit 2. */
    assert_chandy("bad1", "swarm " SCENARIO " --seeds 5..2 --out x", 2);
    assert_chandy("bad2", "swarm " SCENARIO " --seeds 1..2 --shard 2/2 --out x", 2);
    assert_chandy("bad3", "swarm " SCENARIO " --seeds 1..2", 2);
    assert_chandy("bad4", "swarm " SCENARIO " --seeds 1..2 --mode chaos --out x", 2);
    /* An output directory with someone's files in it is refused. */
    put_file("notswarm.txt", "mine");
    snprintf(args, sizeof(args), "swarm %s --seeds 1 --out %s", SCENARIO, tmp);
    assert_chandy("bad5", args, 2);
}

/* run.json without the fields that may differ between a run and its
 * replay: wall-clock figures, the scenario file, the swarm verdict, and
 * savepoint paths (under the output directory). */
static char *comparable(cJSON *run)
{
    cJSON *sp;
    cJSON_ArrayForEach(sp, cJSON_GetObjectItemCaseSensitive(run, "savepoints"))
        cJSON_DeleteItemFromObjectCaseSensitive(sp, "path");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "wall_time_s");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "sim_speed");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "scenario_file");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "swarm");
    char *t = cJSON_PrintUnformatted(run);
    cJSON_Delete(run);
    return t;
}

/* The same over sockets: a task manager killed at 900 ms and started
 * again; the job restores an unaligned checkpoint's channel state in real
 * processes, and the output is exactly once. */
static void test_unaligned_crash_sockets(void **state)
{
    (void)state;
    const char *sc = scenario_from(SCENARIO_UC, "uc-sock.json",
                                   "[{\"at\": \"900 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                                   "  \"restart_after\": \"300 ms\"}]");
    char args[700];
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/uc-sock -q", sc, tmp);
    assert_chandy("uc-sock", args, 0);
    cJSON *run = load_run("uc-sock");
    const cJSON *rec = cJSON_GetArrayItem(at(run, "recoveries"), 0);
    assert_non_null(rec);
    const cJSON *cp = checkpoint_by_id(run, at(rec, "checkpoint")->valueint);
    assert_non_null(cp);
    assert_true(cJSON_IsTrue(at(cp, "unaligned")));
    assert_true(at(cp, "persisted_inflight_bytes")->valuedouble > 0);
    assert_true(cJSON_IsTrue(at(at(run, "correctness"), "ok")));
    assert_int_equal(at(at(run, "correctness"), "duplicated")->valueint, 0);
    cJSON_Delete(run);
}

static void test_shard_merge_replay(void **state)
{
    (void)state;
    char args[700];
    for (int i = 0; i < 2; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "shard%d", i);
        snprintf(args, sizeof(args), "swarm %s --seeds 1..6 --shard %d/2 --jobs 2 --keep --out %s/%s",
                 SCENARIO, i, tmp, tag);
        assert_chandy(tag, args, 0);
        char rel[64];
        snprintf(rel, sizeof(rel), "%s/swarm.json", tag);
        cJSON *sw = load_json(rel);
        assert_int_equal(at(sw, "runs")->valueint, 3);
        assert_int_equal(at(sw, "seeds_declared")->valueint, 3);
        assert_int_equal(at(sw, "seeds_missing")->valueint, 0);
        assert_int_equal(at(at(sw, "shard"), "index")->valueint, i);
        assert_int_equal(at(at(sw, "shard"), "count")->valueint, 2);
        const cJSON *r;
        cJSON_ArrayForEach(r, at(sw, "results"))
            assert_int_equal(at(r, "seed")->valueint % 2, i); /* seed % N == I */
        cJSON_Delete(sw);
    }
    /* Merged: every seed once, none overlapping. */
    snprintf(args, sizeof(args), "swarm --merge %s/shard0 %s/shard1 --out %s/merged", tmp, tmp,
             tmp);
    assert_chandy("merge", args, 0);
    cJSON *m = load_json("merged/swarm.json");
    assert_int_equal(at(m, "runs")->valueint, 6);
    assert_true(cJSON_IsTrue(at(m, "complete")));
    assert_int_equal(at(m, "seeds_declared")->valueint, 6);
    assert_int_equal(at(m, "seeds_missing")->valueint, 0);
    assert_int_equal(at(m, "violations")->valueint, 0);
    assert_int_equal(cJSON_GetArraySize(at(m, "overlapping_seeds")), 0);
    for (int k = 0; k < 6; k++)
        assert_int_equal(at(cJSON_GetArrayItem(at(m, "results"), k), "seed")->valueint, k + 1);
    cJSON_Delete(m);
    /* The same shard twice: its seeds are noted as overlapping, and the
     * other shard's are missing. */
    snprintf(args, sizeof(args), "swarm --merge %s/shard0 %s/shard0 --out %s/merged2", tmp, tmp,
             tmp);
    assert_chandy("merge2", args, 1);
    m = load_json("merged2/swarm.json");
    assert_int_equal(at(m, "runs")->valueint, 3);
    assert_int_equal(cJSON_GetArraySize(at(m, "overlapping_seeds")), 3);
    assert_int_equal(at(m, "seeds_missing")->valueint, 3);
    assert_false(cJSON_IsTrue(at(m, "complete")));
    cJSON_Delete(m);
    /* Another scenario's swarm is refused. */
    cJSON *other = load_json("shard1/swarm.json");
    cJSON_ReplaceItemInObjectCaseSensitive(other, "scenario_fingerprint",
                                           cJSON_CreateString("0123456789abcdef"));
    char *t = cJSON_Print(other);
    cJSON_Delete(other);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/other", tmp);
    mkdir(dir, 0755);
    assert_non_null(put_file("other/swarm.json", t));
    free(t);
    snprintf(args, sizeof(args), "swarm --merge %s/shard0 %s/other --out %s/merged3", tmp, tmp,
             tmp);
    assert_chandy("merge3", args, 2);

    /* Replay: the one-line command, and the seed's scenario file, give the
     * run.json the swarm got. */
    cJSON *sw = load_json("shard1/swarm.json");
    const cJSON *r = cJSON_GetArrayItem(at(sw, "results"), 1);
    int seed = at(r, "seed")->valueint;
    char rel[64];
    snprintf(rel, sizeof(rel), "shard1/runs/%d", seed);
    char *orig = comparable(load_run(rel));
    /* The replay command, with another output directory. */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "%s", at(r, "replay")->valuestring);
    char *outp = strstr(cmd, " --out ");
    assert_non_null(outp);
    snprintf(outp, sizeof(cmd) - (size_t)(outp - cmd), " --out %s/replay -q", tmp);
    const char *sub = strstr(cmd, " run ");
    assert_non_null(sub);
    assert_chandy("replay", sub + 1, 0);
    char *again = comparable(load_run("replay"));
    assert_string_equal(orig, again);
    free(again);
    /* The scenario file the swarm wrote for it. */
    snprintf(args, sizeof(args), "run %s/shard1/seeds/%d.json --seed %d --out %s/fromfile -q", tmp,
             seed, seed, tmp);
    assert_chandy("fromfile", args, 0);
    again = comparable(load_run("fromfile"));
    assert_string_equal(orig, again);
    free(again);
    free(orig);
    cJSON_Delete(sw);
}

/* Writes <tmp>/<dir>/swarm.json as a swarm writes it: `head` its seeds
 * and shard fields, and a result for each seed in `seeds` (numbers as JSON
 * has them, separated by spaces), every total claiming it complete. */
static void fake_swarm(const char *dir, const char *head, const char *seeds)
{
    char path[300], text[16384], res[12000] = "", num[64];
    snprintf(path, sizeof(path), "%s/%s", tmp, dir);
    mkdir(path, 0755);
    size_t o = 0;
    for (const char *p = seeds; sscanf(p, " %63s", num) == 1; p = strstr(p, num) + strlen(num))
        o += (size_t)snprintf(res + o, sizeof(res) - o,
                              "%s{\"seed\": %s, \"verdict\": \"ok\", \"why\": \"held\", "
                              "\"exit_status\": 0, \"schedule\": [], \"replay\": \"r\"}",
                              o ? ", " : "", num);
    snprintf(text, sizeof(text),
             "{\"scenario\": \"s.json\", \"scenario_name\": \"s\", "
             "\"scenario_fingerprint\": \"00000000000000aa\", \"mode\": \"safety\", %s, "
             "\"complete\": true, \"runs\": 1000, \"passed\": 1000, \"violations\": 0, "
             "\"violating_seeds\": [], \"results\": [%s]}",
             head, res);
    snprintf(path, sizeof(path), "%s/swarm.json", dir);
    assert_non_null(put_file(path, text));
}

/* `chandy swarm --merge` of <tmp>/<dirs> (space-separated) into <tmp>/<tag>:
 * asserts the exit status, returns stderr (malloc'd). */
static char *merge_of(const char *tag, const char *dirs, int want)
{
    char args[1000] = "swarm --merge", d[64];
    size_t o = strlen(args);
    for (const char *p = dirs; sscanf(p, " %63s", d) == 1; p = strstr(p, d) + strlen(d))
        o += (size_t)snprintf(args + o, sizeof(args) - o, " %s/%s", tmp, d);
    snprintf(args + o, sizeof(args) - o, " --out %s/%s", tmp, tag);
    assert_chandy(tag, args, want);
    char path[300];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *err = slurp(path);
    assert_non_null(err);
    return err;
}

/* The merged swarm.json's count `key`. */
static double merged_num(const char *tag, const char *key)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "%s/swarm.json", tag);
    cJSON *m = load_json(rel);
    double v = at(m, key)->valuedouble;
    cJSON_Delete(m);
    return v;
}

/* A bad file: exit 2 and one line naming the file and the JSON path. */
static void assert_merge_refused(const char *tag, const char *dirs, const char *file,
                                 const char *where)
{
    char *err = merge_of(tag, dirs, 2);
    char want[300];
    snprintf(want, sizeof(want), "%s/%s/swarm.json: %s", tmp, file, where);
    if (!strstr(err, want))
        fprintf(stderr, "stderr: %s\nexpected: %s\n", err, want);
    assert_non_null(strstr(err, want));
    assert_non_null(strchr(err, '\n'));
    assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
    free(err);
}

/*
 * A merge counts the results, not the shards' totals: a shard with a
 * result deleted, or a range far larger than its results, is incomplete
 * (exit 1, one line saying how many seeds have no result and the first of
 * them; swarm.json lists them); a negative, fractional or out-of-range
 * seed, a result outside what its file declares, or a result without a
 * verdict is refused with the file and the JSON path.
 */
static void test_merge_counts_results(void **state)
{
    (void)state;
    const char *sh0 = "\"seeds\": {\"from\": 1, \"to\": 6}, "
                      "\"shard\": {\"index\": 0, \"count\": 2}";
    const char *sh1 = "\"seeds\": {\"from\": 1, \"to\": 6}, "
                      "\"shard\": {\"index\": 1, \"count\": 2}";
    fake_swarm("m-s0", sh0, "2 4 6");
    fake_swarm("m-s1", sh1, "1 3 5");
    free(merge_of("m-ok", "m-s0 m-s1", 0));
    assert_true(cJSON_IsTrue(at(load_json("m-ok/swarm.json"), "complete")));
    assert_int_equal(merged_num("m-ok", "seeds_declared"), 6);
    assert_int_equal(merged_num("m-ok", "seeds_missing"), 0);
    assert_int_equal(merged_num("m-ok", "runs"), 6);

    /* One result deleted from a shard that still says it is complete. */
    fake_swarm("m-s1-cut", sh1, "1 5");
    char *err = merge_of("m-cut", "m-s0 m-s1-cut", 1);
    assert_non_null(strstr(err, "incomplete: 1 of the 6 seeds declared have no result (first: 3)"));
    free(err);
    cJSON *m = load_json("m-cut/swarm.json");
    assert_false(cJSON_IsTrue(at(m, "complete")));
    assert_int_equal(at(m, "runs")->valueint, 5);
    assert_int_equal(at(m, "seeds_missing")->valueint, 1);
    assert_int_equal(cJSON_GetArraySize(at(m, "first_missing_seeds")), 1);
    assert_int_equal(cJSON_GetArrayItem(at(m, "first_missing_seeds"), 0)->valueint, 3);
    cJSON_Delete(m);
    /* A shard left out: the range's other seeds have no result. */
    err = merge_of("m-half", "m-s0", 1);
    assert_non_null(strstr(err, "incomplete: 3 of the 6 seeds declared have no result "
                                "(first: 1, 3, 5)"));
    free(err);
    /* Merged files merge again: what they declared goes with them. */
    free(merge_of("m-again", "m-cut m-s1", 0));
    assert_int_equal(merged_num("m-again", "seeds_missing"), 0);
    assert_int_equal(merged_num("m-again", "runs"), 6);

    /* The largest range with three results (2^53 - 1 is the largest seed). */
    fake_swarm("m-huge", "\"seeds\": {\"from\": 0, \"to\": 9007199254740991}, \"shard\": null",
               "0 1 2");
    err = merge_of("m-huge-out", "m-huge", 1);
    assert_non_null(strstr(err, "incomplete: 9007199254740989 of the 9007199254740992 seeds "
                                "declared have no result (first: 3, 4, 5, 6, 7, 8, 9, 10, 11, "
                                "12, ...)"));
    free(err);
    assert_false(cJSON_IsTrue(at(load_json("m-huge-out/swarm.json"), "complete")));
    /* Shards of different counts that together cover 1..12 (evens, and
     * residues 0, 1 and 2 of 3), a seed lost that only one of them ran. */
    fake_swarm("m-c2", "\"seeds\": {\"from\": 1, \"to\": 12}, \"shard\": {\"index\": 0, "
                       "\"count\": 2}", "2 4 6 8 10 12");
    fake_swarm("m-c31", "\"seeds\": {\"from\": 1, \"to\": 12}, \"shard\": {\"index\": 1, "
                        "\"count\": 3}", "1 4 7 10");
    fake_swarm("m-c32", "\"seeds\": {\"from\": 1, \"to\": 12}, \"shard\": {\"index\": 2, "
                        "\"count\": 3}", "2 5 8 11");
    fake_swarm("m-c30", "\"seeds\": {\"from\": 1, \"to\": 12}, \"shard\": {\"index\": 0, "
                        "\"count\": 3}", "3 6 12");
    err = merge_of("m-mixed", "m-c2 m-c31 m-c32 m-c30", 1);
    assert_non_null(strstr(err, "incomplete: 1 of the 12 seeds declared have no result "
                                "(first: 9)"));
    free(err);

    /* Bad files: refused before anything is written. */
    fake_swarm("m-neg", sh1, "1 -3 5");
    assert_merge_refused("m-r1", "m-s0 m-neg", "m-neg",
                         "results[1].seed: expected an integer from 0 to 9007199254740991, "
                         "got -3");
    fake_swarm("m-frac", sh1, "1 3.5 5");
    assert_merge_refused("m-r2", "m-s0 m-frac", "m-frac", "results[1].seed: expected an integer");
    fake_swarm("m-2e62", "\"seeds\": {\"from\": 0, \"to\": 4611686018427387904}", "0 1 2");
    assert_merge_refused("m-r3", "m-2e62", "m-2e62",
                         "seeds.to: expected an integer from 0 to 9007199254740991");
    fake_swarm("m-negfrom", "\"seeds\": {\"from\": -5, \"to\": 6}", "1");
    assert_merge_refused("m-r4", "m-negfrom", "m-negfrom", "seeds.from: expected an integer");
    fake_swarm("m-outside", sh1, "1 3 4");
    assert_merge_refused("m-r5", "m-s0 m-outside", "m-outside",
                         "results[2].seed: expected a seed this file declares (seeds 1..6, "
                         "shard 1/2), got 4");
    fake_swarm("m-badshard", "\"seeds\": {\"from\": 1, \"to\": 6}, \"shard\": {\"index\": 2, "
                             "\"count\": 2}", "1");
    assert_merge_refused("m-r6", "m-badshard", "m-badshard",
                         "shard.index: expected an integer from 0 to 1");
    fake_swarm("m-back", "\"seeds\": {\"from\": 6, \"to\": 1}", "1");
    assert_merge_refused("m-r7", "m-back", "m-back", "seeds.to: expected at least `from` (6)");
    char path[300];
    snprintf(path, sizeof(path), "%s/m-noverdict", tmp);
    mkdir(path, 0755);
    put_file("m-noverdict/swarm.json",
             "{\"scenario_fingerprint\": \"00000000000000aa\", \"mode\": \"safety\", "
             "\"seeds\": {\"from\": 1, \"to\": 1}, \"results\": [{\"seed\": 1}]}");
    assert_merge_refused("m-r8", "m-noverdict", "m-noverdict",
                         "results[0].verdict: missing (required)");
    /* Nothing was written for a refused merge. */
    snprintf(path, sizeof(path), "%s/m-r1/swarm.json", tmp);
    assert_null(slurp(path));

    /* --seeds takes no negative seed, and none past 2^53 - 1. */
    assert_chandy("m-seeds1", "swarm " SCENARIO " --seeds -1..3 --out x", 2);
    assert_chandy("m-seeds2", "swarm " SCENARIO " --seeds 3..-1 --out x", 2);
    assert_chandy("m-seeds3", "swarm " SCENARIO " --seeds -2 --out x", 2);
    assert_chandy("m-seeds4", "swarm " SCENARIO " --seeds 1..9007199254740992 --out x", 2);
}

/* A seed still running after --timeout is killed and is a violation. */
static void test_timeout_kills_a_seed(void **state)
{
    (void)state;
    /* A minute of input at 20 000 records a second: many seconds of work. */
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", CHANDY_SOURCE_DIR, SCENARIO);
    char *text = slurp(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *wl = cJSON_GetObjectItemCaseSensitive(root, "workload");
    cJSON_ReplaceItemInObjectCaseSensitive(wl, "duration", cJSON_CreateString("60 s"));
    cJSON_ReplaceItemInObjectCaseSensitive(wl, "rate", cJSON_CreateNumber(20000));
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    const char *sc = put_file("long.json", out);
    free(out);
    char args[700];
    snprintf(args, sizeof(args), "swarm %s --seeds 1 --timeout 1 --jobs 1 --out %s/long", sc,
             tmp);
    assert_chandy("long", args, 1);
    cJSON *sw = load_json("long/swarm.json");
    const cJSON *r = cJSON_GetArrayItem(at(sw, "results"), 0);
    assert_string_equal(at(r, "verdict")->valuestring, "violation");
    assert_non_null(strstr(at(r, "why")->valuestring, "--timeout"));
    assert_int_equal(at(sw, "violating_seeds")->child->valueint, 1);
    cJSON_Delete(sw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triggered_crash_at_completion),
        cmocka_unit_test(test_two_crashes_in_one_instant),
        cmocka_unit_test(test_crash_while_stopping_restores_the_stop_savepoint),
        cmocka_unit_test(test_restarted_host_gets_its_mail),
        cmocka_unit_test(test_job_manager_learns_a_task_manager_cancelled),
        cmocka_unit_test(test_sockets_triggered_events),
        cmocka_unit_test(test_swarm_ci),
        cmocka_unit_test(test_unaligned_crashes),
        cmocka_unit_test(test_unaligned_crash_sockets),
        cmocka_unit_test(test_shard_merge_replay),
        cmocka_unit_test(test_timeout_kills_a_seed),
        cmocka_unit_test(test_merge_counts_results),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
