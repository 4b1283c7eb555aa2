/*
 * test_rescale.c - the timeline's `rescale` event, whole runs through the
 * chandy binary: a rescale via savepoint and one via checkpoint to the
 * parallelism the job has (each still stops, snapshots and redeploys),
 * exactly once, their phases in order in run.json's rescales[], under
 * SimGrid and over sockets, the same run twice for one seed; the adaptive
 * scheduler's fallback when no checkpoint completes in time; a rescale
 * refused while another is under way, one a crash interrupts; a job
 * whose middle vertex keeps no state rescaled 2 -> 4 -> 2 -> 4 -> 2, both
 * ways each way, on a new graph per rescale, under SimGrid (the invariants
 * checked) and over sockets, the same run twice for one seed, each
 * savepoint's _metadata of the generation that took it; a savepoint
 * restored (run -s) with that vertex at another parallelism; the
 * one-line refusal of a rescale of a buffer (its list state does not
 * move yet); keyed state, sources and transactional sinks rescaled out
 * and in (heap, RocksDB, changelog; SimGrid and sockets), and a savepoint
 * taken after a rescale restored at other parallelisms; the rescale
 * scenarios shipped in scenarios/ show what their descriptions say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "runutil.h"

#define SAME "tests/scenarios/rescale-same.json"
#define STATELESS "tests/scenarios/rescale-stateless.json"
#define KEYED "tests/scenarios/rescale-keyed.json"
#define BUFFERING "tests/scenarios/rescale-buffering.json"

/* j.k as a number, or dflt when it is null or missing. */
static double at_or(const cJSON *j, const char *k, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

static const char *str(const cJSON *j, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* The job ran to its end with the output exactly once. */
static void check_exactly_once(const cJSON *run)
{
    const cJSON *job = cJSON_GetObjectItem(run, "job");
    assert_string_equal(str(job, "state"), "FINISHED");
    const cJSON *c = cJSON_GetObjectItem(run, "correctness");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")));
    assert_string_equal(str(c, "guarantee"), "exactly-once");
    assert_true(num(run, "correctness", "lost") == 0);
    assert_true(num(run, "correctness", "duplicated") == 0);
    assert_true(num(run, "correctness", "expected") > 0);
}

/* Runs `chandy args` (its files named name): exit status 0, the job ran
 * to its end with the output exactly once. Its run.json, to delete. */
static cJSON *run_exactly_once(const char *name, const char *args)
{
    assert_chandy(name, args, 0);
    cJSON *run = load_run(name);
    check_exactly_once(run);
    return run;
}

/* A rescale that completed: its phases in order, its restore measured,
 * the parallelism it names the job's after it. */
static void check_done(const cJSON *run, const cJSON *rs, const char *via)
{
    assert_string_equal(str(rs, "via"), via);
    assert_string_equal(str(rs, "outcome"), "done");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rs, "why")));
    double trigger = num(rs, "trigger_s", NULL), snapshot = num(rs, "snapshot_s", NULL);
    double stopped = num(rs, "stopped_s", NULL), deployed = num(rs, "deployed_s", NULL);
    double restored = num(rs, "restored_s", NULL), first = num(rs, "first_output_s", NULL);
    if (!(trigger <= snapshot && snapshot <= stopped && stopped <= deployed &&
          deployed <= restored && restored <= first))
        print_error("rescale phases out of order: trigger %g, snapshot %g, stopped %g, "
                    "deployed %g, restored %g, first output %g\n",
                    trigger, snapshot, stopped, deployed, restored, first);
    assert_true(trigger <= snapshot);
    assert_true(snapshot <= stopped);
    assert_true(stopped <= deployed);
    assert_true(deployed <= restored);
    assert_true(restored <= first);
    assert_true(num(rs, "caught_up_s", NULL) >= restored);
    double took = num(rs, "rescale_s", NULL);
    assert_true(took > 0 && took < restored - trigger + 1e-5 && took > restored - trigger - 1e-5);
    assert_true(num(rs, "checkpoint", NULL) >= 1);
    assert_true(num(rs, "attempt", NULL) >= 1);
    assert_true(num(rs, "restore", "download_s") >= 0);
    assert_true(num(rs, "restore", "rebuild_s") > 0); /* its state was put in place */
    assert_true(num(rs, "restore", "records_replayed") == 0); /* no channel state */
    /* Aligned checkpoints: no channel state (over sockets, a real clock may
     * see a few microseconds pass where there is none to read). */
    if (!strcmp(str(run, "backend"), "simgrid"))
        assert_true(num(rs, "restore", "channel_state_s") == 0);
    else
        assert_true(num(rs, "restore", "channel_state_s") < 0.01);
    /* Same parallelism: before and after are the job's. */
    const cJSON *before = cJSON_GetObjectItem(rs, "parallelism_before");
    const cJSON *after = cJSON_GetObjectItem(rs, "parallelism_after");
    assert_true(cJSON_Compare(before, after, 1));
    assert_true(at_or(after, "total", 0) == 3 && at_or(after, "source", 0) == 2);
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices"))
    {
        const cJSON *op0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "operators"), 0);
        assert_true(num(v, "parallelism", NULL) == at_or(after, str(op0, "name"), -1));
    }
}

static void check_same(const cJSON *run)
{
    check_exactly_once(run);
    const cJSON *rs = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rs), 2);
    check_done(run, cJSON_GetArrayItem(rs, 0), "savepoint");
    check_done(run, cJSON_GetArrayItem(rs, 1), "checkpoint");
    assert_true(num(cJSON_GetArrayItem(rs, 0), "event", NULL) == 0);
    assert_true(num(cJSON_GetArrayItem(rs, 1), "event", NULL) == 1);
    /* The checkpoint rescale waited for the next checkpoint, as Flink 1.20's
     * adaptive scheduler does; its trigger is the event's time. */
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(rs, 1),
                                                 "waited_for_checkpoint")));
    assert_true(num(cJSON_GetArrayItem(rs, 1), "trigger_s", NULL) >= 2.0);
    /* The savepoint rescale's savepoint is listed as a stop-with-savepoint. */
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(run, "savepoints")) == 1);
    /* A rescale is no failure. */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "recoveries")), 0);
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "faults"), 0);
    assert_string_equal(str(f, "action"), "rescale");
    assert_string_equal(str(f, "via"), "savepoint");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f, "applied")));
}

static void test_same_parallelism_simgrid(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --out %s/sim --check-invariants", SAME, tmp);
    assert_chandy("sim", args, 0);
    cJSON *run = load_run("sim");
    check_same(run);
    cJSON_Delete(run);
    /* The summary has a line per rescale. */
    char path[256];
    snprintf(path, sizeof(path), "%s/sim.out", tmp);
    char *out = slurp(path);
    assert_non_null(out);
    assert_non_null(strstr(out, "  rescale    via savepoint at 0.800 s, snapshot +"));
    assert_non_null(strstr(out, "  rescale    via checkpoint at 2.000 s, snapshot +"));
    free(out);
}

/* What differs between two runs of one seed: the wall clock, and the
 * savepoints' paths, which name the output directory. */
static void strip_wall(cJSON *j)
{
    cJSON_DeleteItemFromObject(j, "wall_time_s");
    cJSON_DeleteItemFromObject(j, "sim_speed");
    const cJSON *sp;
    cJSON_ArrayForEach(sp, cJSON_GetObjectItem(j, "savepoints"))
        cJSON_DeleteItemFromObject((cJSON *)sp, "path");
}

static void test_determinism(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --out %s/d1 --quiet", SAME, tmp);
    assert_chandy("d1", args, 0);
    snprintf(args, sizeof(args), "run %s --out %s/d2 --quiet", SAME, tmp);
    assert_chandy("d2", args, 0);
    cJSON *a = load_run("d1"), *b = load_run("d2");
    strip_wall(a);
    strip_wall(b);
    char *ta = cJSON_Print(a), *tb = cJSON_Print(b);
    assert_string_equal(ta, tb);
    assert_non_null(strstr(ta, "\"rescales\""));
    free(ta);
    free(tb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_same_parallelism_sockets(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/net", SAME, tmp);
    assert_chandy("net", args, 0);
    cJSON *run = load_run("net");
    check_same(run);
    cJSON_Delete(run);
}

/* STATELESS's rescales, in order: the parallelism of its middle vertex
 * ("double -> some") after each, and how each went. */
static const int stateless_par[] = {4, 2, 4, 2};
static const char *const stateless_via[] = {"savepoint", "checkpoint", "checkpoint", "savepoint"};

/* A run of STATELESS: exactly once, every rescale done with its phases in
 * order, each one's parallelism before and after the generation it left
 * and the one it deployed, the job's vertices, subtasks and per-subtask
 * figures at the parallelism it ended with, and each checkpoint acknowledged
 * by the subtasks of the generation that took it. */
static void check_stateless(const cJSON *run)
{
    check_exactly_once(run);
    const cJSON *rss = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rss), 4);
    int was = 2;
    double last_restored = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *rs = cJSON_GetArrayItem(rss, i);
        assert_string_equal(str(rs, "via"), stateless_via[i]);
        assert_string_equal(str(rs, "outcome"), "done");
        double trigger = num(rs, "trigger_s", NULL), snapshot = num(rs, "snapshot_s", NULL);
        double stopped = num(rs, "stopped_s", NULL), deployed = num(rs, "deployed_s", NULL);
        double restored = num(rs, "restored_s", NULL);
        assert_true(last_restored <= trigger);
        assert_true(trigger <= snapshot && snapshot <= stopped && stopped <= deployed &&
                    deployed <= restored);
        assert_true(num(rs, "first_output_s", NULL) >= restored);
        last_restored = restored;
        const cJSON *before = cJSON_GetObjectItem(rs, "parallelism_before");
        const cJSON *after = cJSON_GetObjectItem(rs, "parallelism_after");
        assert_true(at_or(before, "double", 0) == was && at_or(before, "some", 0) == was);
        assert_true(at_or(after, "double", 0) == stateless_par[i]);
        assert_true(at_or(after, "some", 0) == stateless_par[i]);
        /* the vertices that keep state keep their parallelism */
        assert_true(at_or(after, "source", 0) == 2 && at_or(after, "total", 0) == 3 &&
                    at_or(after, "totals", 0) == 3);
        was = stateless_par[i];
    }
    const cJSON *job = cJSON_GetObjectItem(run, "job");
    const cJSON *vs = cJSON_GetObjectItem(job, "vertices");
    assert_int_equal(cJSON_GetArraySize(vs), 3);
    assert_string_equal(str(cJSON_GetArrayItem(vs, 1), "name"), "double -> some");
    assert_true(num(cJSON_GetArrayItem(vs, 0), "parallelism", NULL) == 2);
    assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == was);
    assert_true(num(cJSON_GetArrayItem(vs, 2), "parallelism", NULL) == 3);
    assert_true(num(job, "subtasks", NULL) == 2 + was + 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "tasks")), 2 + was + 3);
    /* Checkpoints of the 4-wide generations had 9 subtasks to acknowledge,
     * those of the 2-wide ones 7: both kinds completed. */
    int seen7 = 0, seen9 = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(run, "checkpoints"))
    {
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(c, "alignment_s"));
        assert_true(n == 7 || n == 9);
        if (!strcmp(str(c, "status"), "completed")) {
            assert_true(num(c, "acknowledged", NULL) == n);
            seen7 += n == 7, seen9 += n == 9;
        }
    }
    assert_true(seen7 > 0 && seen9 > 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "recoveries")), 0);
}

static void test_stateless_simgrid(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --out %s/sl --check-invariants", STATELESS, tmp);
    assert_chandy("sl", args, 0);
    cJSON *run = load_run("sl");
    check_stateless(run);
    cJSON_Delete(run);
    /* The summary names what each rescale changed, and only that. */
    char sumpath[256];
    snprintf(sumpath, sizeof(sumpath), "%s/sl.out", tmp);
    char *sum = slurp(sumpath);
    assert_non_null(sum);
    assert_non_null(strstr(sum, " (double 2->4, some 2->4), snapshot +"));
    assert_non_null(strstr(sum, " (double 4->2, some 4->2), snapshot +"));
    assert_null(strstr(sum, "total 3->3"));
    /* One line per rescale, in the timeline's order, each naming its own
     * change (2->4 out, 4->2 back, twice): a line with before and after
     * swapped, or another rescale's operators, fails here. */
    static const char *const lines[] = {
        "  rescale    via savepoint at 0.600 s (double 2->4, some 2->4), snapshot +",
        "  rescale    via checkpoint at 1.400 s (double 4->2, some 4->2), snapshot +",
        "  rescale    via checkpoint at 2.200 s (double 2->4, some 2->4), snapshot +",
        "  rescale    via savepoint at 3.000 s (double 4->2, some 4->2), snapshot +"};
    const char *line = sum;
    int nlines = 0;
    while ((line = strstr(line, "\n  rescale    via ")) != NULL) {
        line++;
        assert_true(nlines < 4);
        if (strncmp(line, lines[nlines], strlen(lines[nlines])))
            print_error("rescale line %d: \"%.*s\", expected it to start \"%s\"\n", nlines,
                        (int)strcspn(line, "\n"), line, lines[nlines]);
        assert_memory_equal(line, lines[nlines], strlen(lines[nlines]));
        nlines++;
    }
    assert_int_equal(nlines, 4);
    free(sum);
    /* Each savepoint's _metadata describes the generation that took it:
     * the first rescale's (3) the map at 2, the last one's (13) at 4. */
    static const struct {
        int id;
        const char *want;
    } sps[] = {{3, "vertex 1, parallelism 2: uid \"double\""},
               {13, "vertex 1, parallelism 4: uid \"double\""}};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof(args), "savepoint %s/sl/store/savepoints/savepoint-*-%d", tmp,
                 sps[k].id);
        assert_chandy("slsp", args, 0);
        char path[256];
        snprintf(path, sizeof(path), "%s/slsp.out", tmp);
        char *out = slurp(path);
        assert_non_null(out);
        assert_non_null(strstr(out, sps[k].want));
        free(out);
    }
}

static void test_stateless_determinism(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --out %s/sd1 --quiet", STATELESS, tmp);
    assert_chandy("sd1", args, 0);
    snprintf(args, sizeof(args), "run %s --out %s/sd2 --quiet", STATELESS, tmp);
    assert_chandy("sd2", args, 0);
    cJSON *a = load_run("sd1"), *b = load_run("sd2");
    strip_wall(a);
    strip_wall(b);
    char *ta = cJSON_Print(a), *tb = cJSON_Print(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_stateless_sockets(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/sls", STATELESS, tmp);
    assert_chandy("sls", args, 0);
    cJSON *run = load_run("sls");
    check_stateless(run);
    cJSON_Delete(run);
}

/* base with its events (and a config key) replaced: written to <tmp>/<name>.json. */
static const char *variant_of(const char *base, const char *name, const char *events,
                              const char *key, const char *value)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", CHANDY_SOURCE_DIR, base);
    char *text = slurp(path);
    assert_non_null(text);
    cJSON *s = cJSON_Parse(text);
    free(text);
    assert_non_null(s);
    cJSON_DeleteItemFromObject(s, "expect");
    cJSON_ReplaceItemInObject(s, "events", cJSON_Parse(events));
    if (key)
        cJSON_AddStringToObject(cJSON_GetObjectItem(s, "config"), key, value);
    /* STATELESS's sink reads over a rebalance edge: it may rescale alone */
    const cJSON *ops = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "job"), "operators");
    cJSON *sink = cJSON_GetArrayItem(ops, cJSON_GetArraySize(ops) - 1);
    if (!strcmp(base, STATELESS))
        cJSON_AddStringToObject(sink, "partition", "rebalance");
    char *out = cJSON_Print(s);
    cJSON_Delete(s);
    char file[128];
    snprintf(file, sizeof(file), "%s.json", name);
    const char *p = put_file(file, out);
    free(out);
    assert_non_null(p);
    return p;
}

static const char *variant(const char *name, const char *events, const char *key,
                           const char *value)
{
    return variant_of(SAME, name, events, key, value);
}

/* A stop-with-savepoint of the job with its map at 2 restores (chandy run
 * -s) into the job with the map at 4: the state assignment starts the
 * map's subtasks empty and the others restore their own; the output,
 * with the first run's, is exactly once. */
static void test_stateless_savepoint_other_parallelism(void **state)
{
    (void)state;
    variant_of(STATELESS, "sps",
               "[{\"at\": \"1 s\", \"action\": \"savepoint\", \"stop\": true}]", NULL, NULL);
    char args[512];
    snprintf(args, sizeof(args), "run %s/sps.json --out %s/sps -q", tmp, tmp);
    assert_chandy("sps", args, 0);
    const char *p = variant_of(STATELESS, "spr", "[]", NULL, NULL);
    char *text = slurp(p);
    assert_non_null(text);
    cJSON *s = cJSON_Parse(text);
    free(text);
    const cJSON *ops = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "job"), "operators");
    for (int k = 1; k <= 2; k++)
        cJSON_ReplaceItemInObject(cJSON_GetArrayItem(ops, k), "parallelism",
                                  cJSON_CreateNumber(4));
    char *out = cJSON_Print(s);
    cJSON_Delete(s);
    assert_non_null(put_file("spr.json", out));
    free(out);
    snprintf(args, sizeof(args), "run %s/spr.json -s %s/sps --out %s/spr --check-invariants", tmp,
             tmp, tmp);
    cJSON *run = run_exactly_once("spr", args);
    const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
    assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == 4);
    cJSON_Delete(run);
}

#define SINK_RESCALES                                                                      \
    "[{\"at\": \"800 ms\", \"action\": \"rescale\", \"parallelism\": {\"totals\": 4}},"    \
    " {\"at\": \"2 s\", \"action\": \"rescale\", \"via\": \"checkpoint\","                \
    " \"parallelism\": {\"totals\": 1}}]"

/* A sink writing without transactions keeps no state: in at-least-once
 * mode it rescales 3 -> 4 -> 1, its new subtasks starting empty, and the
 * output holds. With exactly-once checkpoints it writes in transactions:
 * the same rescale moves the pending ones (old subtask k's committed by
 * new subtask k % the new parallelism, once), and the output is exactly
 * once. */
static void test_sink_rescale(void **state)
{
    (void)state;
    const char *p = variant_of(STATELESS, "alo", SINK_RESCALES, "execution.checkpointing.mode",
                               "AT_LEAST_ONCE");
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/alo --check-invariants", p, tmp);
    assert_chandy("alo", args, 0);
    cJSON *run = load_run("alo");
    assert_string_equal(str(cJSON_GetObjectItem(run, "job"), "state"), "FINISHED");
    const cJSON *c = cJSON_GetObjectItem(run, "correctness");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")));
    assert_true(num(run, "correctness", "lost") == 0);
    const cJSON *rss = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rss), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *rs = cJSON_GetArrayItem(rss, i);
        assert_string_equal(str(rs, "outcome"), "done");
        const cJSON *after = cJSON_GetObjectItem(rs, "parallelism_after");
        assert_true(at_or(after, "totals", 0) == (i == 0 ? 4 : 1));
        assert_true(at_or(after, "total", 0) == 3);
    }
    const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
    assert_int_equal(cJSON_GetArraySize(vs), 4);
    assert_string_equal(str(cJSON_GetArrayItem(vs, 3), "name"), "totals");
    assert_true(num(cJSON_GetArrayItem(vs, 3), "parallelism", NULL) == 1);
    cJSON_Delete(run);

    p = variant_of(STATELESS, "eo", SINK_RESCALES, NULL, NULL);
    snprintf(args, sizeof(args), "run %s --out %s/eo --check-invariants", p, tmp);
    run = run_exactly_once("eo", args);
    rss = cJSON_GetObjectItem(run, "rescales");
    for (int i = 0; i < 2; i++)
        assert_string_equal(str(cJSON_GetArrayItem(rss, i), "outcome"), "done");
    cJSON_Delete(run);
}

/* A crash right after a rescale out (2 -> 4): the failover restores the
 * rescale's savepoint, which the old generation took, on the new graph:
 * the subtasks that kept their parallelism restore theirs, the rescaled
 * vertex's start empty again, and the output stays exactly once. */
static void test_crash_after_rescale(void **state)
{
    (void)state;
    const char *p = variant_of(STATELESS, "after",
                               "[{\"at\": \"600 ms\", \"action\": \"rescale\","
                               " \"parallelism\": {\"double\": 4, \"some\": 4}},"
                               " {\"at\": \"650 ms\", \"action\": \"crash\", \"host\": \"tm1\","
                               " \"restart_after\": \"300 ms\"}]",
                               NULL, NULL);
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/after --check-invariants", p, tmp);
    cJSON *run = run_exactly_once("after", args);
    const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0);
    assert_string_equal(str(rs, "outcome"), "done");
    const cJSON *rc = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0);
    assert_non_null(rc);
    assert_true(num(rc, "checkpoint", NULL) == num(rs, "checkpoint", NULL));
    const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
    assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == 4);
    cJSON_Delete(run);
}

/* A crash from the moment a rescale's deployment goes out (the
 * rescale_deployed moment, which the swarm's rescales draw crashes at):
 * on the task manager the rescaled subtasks run on, it lands after the
 * deployment and before every subtask runs restored, during the
 * download and rebuild; the failover restores the rescale's snapshot
 * again, at the new parallelism, and the output stays exactly once. On
 * both backends. */
static void test_crash_during_rescale_restore(void **state)
{
    (void)state;
    const char *p = variant_of(STATELESS, "during",
                               "[{\"at\": \"600 ms\", \"action\": \"rescale\","
                               " \"parallelism\": {\"double\": 4, \"some\": 4}},"
                               " {\"after\": {\"moment\": \"rescale_deployed\"}, \"at\": \"0 us\","
                               " \"action\": \"crash\", \"host\": \"tm0\","
                               " \"restart_after\": \"300 ms\"}]",
                               NULL, NULL);
    for (int sockets = 0; sockets < 2; sockets++) {
        char args[512], name[32];
        snprintf(name, sizeof(name), "during%d", sockets);
        snprintf(args, sizeof(args), "run %s --out %s/%s --check-invariants%s", p, tmp, name,
                 sockets ? " --backend sockets" : "");
        assert_chandy(name, args, 0);
        cJSON *run = load_run(name);
        check_exactly_once(run);
        const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0);
        const cJSON *crash = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "faults"), 1);
        assert_string_equal(str(crash, "action"), "crash");
        double at = num(crash, "at_s", NULL), deployed = num(rs, "deployed_s", NULL);
        assert_true(at >= deployed && at < deployed + 0.05);
        if (!sockets) { /* the simulation: at that moment, before any subtask ran restored */
            const cJSON *restored = cJSON_GetObjectItem(rs, "restored_s");
            assert_true(at == deployed);
            assert_true(!cJSON_IsNumber(restored) || restored->valuedouble > at);
        }
        const cJSON *rc = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0);
        assert_non_null(rc);
        const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
        assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == 4);
        cJSON_Delete(run);
    }
}

/* A changelog backend's materializations after a rescale (the map 2 ->
 * 4, then back): run.json names each by its vertex and subtask in the
 * generation that ran it, where the subtasks after the map have other
 * global indices: every one names a subtask the vertex has, and the
 * aggregate's three each materialize. */
static void test_generation_names(void **state)
{
    (void)state;
    const char *p = variant_of(STATELESS, "gens",
                               "[{\"at\": \"500 ms\", \"action\": \"rescale\","
                               " \"parallelism\": {\"double\": 4, \"some\": 4}}]",
                               "state.changelog.periodic-materialize.interval", "300 ms");
    /* the key above is one; the changelog itself is another */
    char *text = slurp(p);
    assert_non_null(text);
    cJSON *s = cJSON_Parse(text);
    free(text);
    cJSON_AddTrueToObject(cJSON_GetObjectItem(s, "config"), "state.changelog.enabled");
    char *out = cJSON_Print(s);
    cJSON_Delete(s);
    p = put_file("gens.json", out);
    free(out);
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/gens --check-invariants", p, tmp);
    cJSON *run = run_exactly_once("gens", args);
    const cJSON *m;
    int seen[3] = {0}, late = 0;
    double rescaled = num(cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0),
                          "restored_s", NULL);
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(run, "materializations"))
    {
        const char *v = str(m, "vertex");
        int sub = (int)num(m, "subtask", NULL);
        assert_true(!strcmp(v, "total") || !strcmp(v, "source"));
        assert_true(sub >= 0 && sub < (!strcmp(v, "total") ? 3 : 2));
        if (!strcmp(v, "total") && num(m, "started_s", NULL) > rescaled) {
            seen[sub]++;
            late++;
        }
    }
    assert_true(late > 0);
    for (int k = 0; k < 3; k++)
        assert_true(seen[k] > 0);
    cJSON_Delete(run);
}

/* No checkpoint completes within rescale-trigger.max-delay: the rescale
 * restarts from the latest completed one anyway (it has no snapshot phase
 * of its own), and the output stays exactly once. */
static void test_checkpoint_fallback(void **state)
{
    (void)state;
    const char *p = variant("fallback",
                            "[{\"at\": \"1 s\", \"action\": \"rescale\", \"via\": \"checkpoint\","
                            " \"parallelism\": {\"total\": 3}}]",
                            "jobmanager.adaptive-scheduler.rescale-trigger.max-delay", "50 ms");
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/fb --quiet --check-invariants", p, tmp);
    cJSON *run = run_exactly_once("fb", args);
    const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0);
    assert_string_equal(str(rs, "outcome"), "done");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rs, "waited_for_checkpoint")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rs, "snapshot_s")));
    double trigger = num(rs, "trigger_s", NULL), stopped = num(rs, "stopped_s", NULL);
    assert_true(stopped - trigger > 0.049 && stopped - trigger < 0.051);
    assert_true(num(rs, "restored_s", NULL) >= stopped);
    cJSON_Delete(run);
}

/* A rescale asked for while another is under way is refused, and says so;
 * the first completes. */
static void test_refused_while_rescaling(void **state)
{
    (void)state;
    const char *p = variant("twice",
                            "[{\"at\": \"1 s\", \"action\": \"rescale\", \"via\": \"checkpoint\","
                            " \"parallelism\": {\"total\": 3}},"
                            " {\"at\": \"1010 ms\", \"action\": \"rescale\","
                            " \"parallelism\": {\"total\": 3}}]",
                            NULL, NULL);
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/tw", p, tmp);
    cJSON *run = run_exactly_once("tw", args);
    const cJSON *rs = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rs), 2);
    assert_string_equal(str(cJSON_GetArrayItem(rs, 0), "outcome"), "done");
    const cJSON *second = cJSON_GetArrayItem(rs, 1);
    assert_string_equal(str(second, "outcome"), "refused");
    assert_string_equal(str(second, "why"), "the job is rescaling already");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(second, "deployed_s")));
    cJSON_Delete(run);
    char path[256];
    snprintf(path, sizeof(path), "%s/tw.out", tmp);
    char *out = slurp(path);
    assert_non_null(strstr(out, "  rescale    via savepoint at 1.010 s: refused (the job is "
                                "rescaling already)"));
    free(out);
}

/* A task manager crashes while the job stops for a rescale: the rescale
 * is interrupted (and says by what), the job fails over as for any
 * failure, and the output stays exactly once. */
static void test_crash_interrupts(void **state)
{
    (void)state;
    const char *p = variant("crash",
                            "[{\"at\": \"800 ms\", \"action\": \"rescale\","
                            " \"parallelism\": {\"total\": 3}},"
                            " {\"at\": \"801 ms\", \"action\": \"crash\", \"host\": \"tm0\","
                            " \"restart_after\": \"100 ms\"}]",
                            NULL, NULL);
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/cr --quiet --check-invariants", p, tmp);
    cJSON *run = run_exactly_once("cr", args);
    const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0);
    assert_string_equal(str(rs, "outcome"), "interrupted");
    assert_string_equal(str(rs, "why"), "task manager tm0: the connection broke");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rs, "deployed_s")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(rs, "rescale_s")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "recoveries")), 1);
    assert_true(num(cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0), "restored_s",
                    NULL) > 0.8);
    cJSON_Delete(run);
}

/* The parallelism each vertex named runs at after rescale i. */
static void check_after(const cJSON *run, int i, const char *const *names, int n, int p)
{
    const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), i);
    assert_string_equal(str(rs, "outcome"), "done");
    const cJSON *after = cJSON_GetObjectItem(rs, "parallelism_after");
    for (int k = 0; k < n; k++)
        assert_true(at_or(after, names[k], 0) == p);
}

/* Channel state moves to another parallelism (scenarios/rescale-unaligned.json:
 * a keyed count 2 -> 3, then 3 -> 1 with its producers 2 -> 3, each through
 * a checkpoint taken unaligned under backpressure): both rescales restore
 * from a checkpoint that holds in-flight data, and the output stays
 * exactly once, with every invariant checked at every step. */
static void test_unaligned_rescale(void **state)
{
    (void)state;
    const char *path = "scenarios/rescale-unaligned.json";
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/uc --check-invariants", path, tmp);
    cJSON *run = run_exactly_once("uc", args);
    const cJSON *rss = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rss), 2);
    const cJSON *cps = cJSON_GetObjectItem(run, "checkpoints");
    for (int i = 0; i < 2; i++) {
        const cJSON *rs = cJSON_GetArrayItem(rss, i);
        assert_string_equal(str(rs, "via"), "checkpoint");
        assert_string_equal(str(rs, "outcome"), "done");
        double trigger = num(rs, "trigger_s", NULL), restored = num(rs, "restored_s", NULL);
        assert_true(trigger <= num(rs, "snapshot_s", NULL));
        assert_true(num(rs, "deployed_s", NULL) <= restored);
        assert_true(restored <= num(rs, "first_output_s", NULL));
        int id = (int)num(rs, "checkpoint", NULL);
        const cJSON *cp = NULL;
        for (int k = 0; k < cJSON_GetArraySize(cps); k++)
            if ((int)num(cJSON_GetArrayItem(cps, k), "id", NULL) == id)
                cp = cJSON_GetArrayItem(cps, k);
        assert_non_null(cp);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cp, "unaligned")));
        /* tens of kilobytes in flight, restored at the new parallelism */
        assert_true(num(cp, "persisted_inflight_bytes", NULL) > 20000);
        assert_true(num(cJSON_GetObjectItem(rs, "restore"), "channel_state_s", NULL) > 0);
        /* about a record of 400 bytes per 450 bytes in flight, each once */
        double recs = num(rs, "restore", "records_replayed");
        double inflight = num(cp, "persisted_inflight_bytes", NULL);
        assert_true(recs > inflight / 600 && recs < inflight / 300);
    }
    const char *all[] = {"count", "counts"};
    check_after(run, 0, all, 2, 3);
    check_after(run, 1, all, 2, 1);
    const char *up[] = {"source", "parse"};
    check_after(run, 1, up, 2, 3);
    cJSON_Delete(run);

    /* Over sockets: the same rescales, exactly once, with in-flight data
     * restored (how much depends on the real clock's timing). */
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/ucs --check-invariants", path,
             tmp);
    run = run_exactly_once("ucs", args);
    rss = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rss), 2);
    double replayed = 0;
    for (int i = 0; i < 2; i++) {
        const cJSON *rs = cJSON_GetArrayItem(rss, i);
        assert_string_equal(str(rs, "outcome"), "done");
        replayed += num(rs, "restore", "records_replayed");
    }
    assert_true(replayed > 0);
    check_after(run, 1, all, 2, 1);
    cJSON_Delete(run);
}

/* A keyed job rescaled with its state, source and sink: 2 -> 4 via a
 * stop-with-savepoint, 4 -> 2 via a checkpoint, 2 -> 4 via a checkpoint,
 * 4 -> 2 via a savepoint. Each new subtask restores the key groups,
 * partitions and pending transactions the assignment deals it from
 * several old subtasks' files: every record's running sum is right, each
 * output once, every input record counted (the invariants checked). */
static void test_keyed_rescale(void **state)
{
    (void)state;
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/kr --quiet --check-invariants", KEYED, tmp);
    cJSON *run = run_exactly_once("kr", args);
    assert_true(num(run, "correctness", "expected") == 12000);
    assert_true(num(run, "correctness", "received") == 12000);
    static const char *const names[] = {"source", "total", "totals"};
    for (int i = 0; i < 4; i++)
        check_after(run, i, names, 3, i % 2 ? 2 : 4);
    cJSON_Delete(run);
}

/* The keyed job's rescales over sockets, one process per host: the
 * DEPLOY's takes travel the real wire; exactly once. */
static void test_keyed_sockets(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s/ks --quiet", KEYED, tmp);
    cJSON *run = run_exactly_once("ks", args);
    static const char *const names[] = {"source", "total", "totals"};
    for (int i = 0; i < 4; i++)
        check_after(run, i, names, 3, i % 2 ? 2 : 4);
    cJSON_Delete(run);
}

/* A buffering job (a buffer's split-distribute list of the records it
 * holds, its union list of what it saw) rescaled 2 -> 3 via a savepoint,
 * 3 -> 2 and 2 -> 4 via checkpoints, 4 -> 1 via a savepoint, while
 * records are buffered: each new subtask holds the entries the
 * assignment dealt it of the old subtasks' lists; exactly once, the
 * invariants checked. Twice for one seed: the same run.json. */
static void test_buffer_rescale(void **state)
{
    (void)state;
    char args[512];
    snprintf(args, sizeof(args), "run %s --out %s/br --quiet --check-invariants", BUFFERING,
             tmp);
    cJSON *run = run_exactly_once("br", args);
    static const char *const names[] = {"parse", "batch", "batched"};
    static const int after[] = {3, 2, 4, 1};
    for (int i = 0; i < 4; i++)
        check_after(run, i, names, 3, after[i]);
    snprintf(args, sizeof(args), "run %s --out %s/br2 --quiet", BUFFERING, tmp);
    assert_chandy("br2", args, 0);
    cJSON *again = load_run("br2");
    strip_wall(run);
    strip_wall(again);
    char *ta = cJSON_Print(run), *tb = cJSON_Print(again);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(again);
    cJSON_Delete(run);
}

/* The same scenario twice for one seed: the same run.json. */
static void test_keyed_determinism(void **state)
{
    (void)state;
    char args[256];
    snprintf(args, sizeof(args), "run %s --out %s/kd1 --quiet", KEYED, tmp);
    assert_chandy("kd1", args, 0);
    snprintf(args, sizeof(args), "run %s --out %s/kd2 --quiet", KEYED, tmp);
    assert_chandy("kd2", args, 0);
    cJSON *a = load_run("kd1"), *b = load_run("kd2");
    strip_wall(a);
    strip_wall(b);
    char *ta = cJSON_Print(a), *tb = cJSON_Print(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* keyed-state's job (map state, a window's list state and its timers,
 * value state) rescaled out via a savepoint and in via a checkpoint
 * (distinct in, the others out), then a crash restores a checkpoint the
 * rescaled job took: on the heap, on RocksDB (via savepoints, canonical)
 * and under the changelog backend; each exactly once with keyed-state's
 * expected output, every rescale done. */
static void test_keyed_state_rescale(void **state)
{
    (void)state;
    static const char *const scenarios[] = {
        "tests/scenarios/rescale-keyed-state.json",
        "tests/scenarios/rescale-keyed-state-rocksdb.json",
        "tests/scenarios/rescale-keyed-state-changelog.json",
    };
    for (int k = 0; k < 3; k++) {
        char args[512], tag[16];
        snprintf(tag, sizeof(tag), "ks%d", k);
        snprintf(args, sizeof(args), "run %s/%s --out %s/%s --quiet --check-invariants",
                 CHANDY_SOURCE_DIR, scenarios[k], tmp, tag);
        assert_chandy(tag, args, 0);
        cJSON *run = load_run(tag);
        check_exactly_once(run);
        assert_true(num(run, "correctness", "expected") == 94351);
        static const char *const out4[] = {"source", "median-1s", "count"};
        static const char *const in2[] = {"first-values"};
        check_after(run, 0, out4, 3, 4);
        check_after(run, 0, in2, 1, 2);
        check_after(run, 1, out4, 3, 2);
        check_after(run, 1, in2, 1, 4);
        /* A new subtask downloads, of a canonical file, the key groups it
         * takes (their blocks, by the file's index) and its head: at each
         * rescale every file is downloaded about once, where whole files,
         * each by every new subtask taking some of its key groups, made
         * the first 1.4 times the checkpoint's bytes. */
        for (int i = 0; k == 0 && i < 2; i++) {
            const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), i);
            double cp = num(rs, "checkpoint", NULL), full = 0;
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItem(run, "checkpoints"))
                if (num(c, "id", NULL) == cp)
                    full = num(c, "bytes_full", NULL);
            double got = num(rs, "restore", "bytes");
            if (!(full > 0 && got > 0 && got < 1.05 * full))
                fprintf(stderr, "rescale %d downloaded %g bytes of a checkpoint of %g\n", i,
                        got, full);
            assert_true(full > 0 && got > 0 && got < 1.05 * full);
        }
        /* the crash restored a checkpoint of the rescaled job */
        const cJSON *rec = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0);
        assert_true(num(rec, "checkpoint", NULL) >= 5);
        cJSON_Delete(run);
    }
}

/* A stop-with-savepoint of the keyed job after it rescaled 2 -> 4
 * restores (chandy run -s) at 3, 2 and 1: its sources read exactly the
 * partitions the savepoint's files hold (dealt at the rescale, not by the
 * owner formula), and the output, with the first run's, is exactly
 * once. */
static void test_keyed_savepoint_other_parallelism(void **state)
{
    (void)state;
    variant_of(KEYED, "ksp",
               "[{\"at\": \"600 ms\", \"action\": \"rescale\", \"via\": \"savepoint\","
               " \"parallelism\": {\"source\": 4, \"total\": 4, \"totals\": 4}},"
               " {\"at\": \"1400 ms\", \"action\": \"savepoint\", \"stop\": true}]",
               NULL, NULL);
    char args[512];
    snprintf(args, sizeof(args), "run %s/ksp.json --out %s/ksp -q", tmp, tmp);
    assert_chandy("ksp", args, 0);
    for (int p = 1; p <= 3; p++) {
        const char *path = variant_of(KEYED, "kspr", "[]", NULL, NULL);
        char *text = slurp(path);
        assert_non_null(text);
        cJSON *s = cJSON_Parse(text);
        free(text);
        cJSON_DeleteItemFromObject(s, "expect");
        const cJSON *ops = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "job"), "operators");
        for (int k = 0; k < 3; k++)
            cJSON_ReplaceItemInObject(cJSON_GetArrayItem(ops, k), "parallelism",
                                      cJSON_CreateNumber(p));
        char *out = cJSON_Print(s);
        cJSON_Delete(s);
        assert_non_null(put_file("kspr.json", out));
        free(out);
        char tag[16];
        snprintf(tag, sizeof(tag), "kspr%d", p);
        snprintf(args, sizeof(args), "run %s/kspr.json -s %s/ksp --out %s/%s --check-invariants",
                 tmp, tmp, tmp, tag);
        assert_chandy(tag, args, 0);
        cJSON *run = load_run(tag);
        check_exactly_once(run);
        assert_true(num(run, "correctness", "expected") == 12000);
        const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
        assert_true(num(cJSON_GetArrayItem(vs, 0), "parallelism", NULL) == p);
        cJSON_Delete(run);
    }
}

/* The first checkpoint triggered after t (the job's next after a rescale
 * restored), or NULL. */
static const cJSON *checkpoint_after(const cJSON *run, double t)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(run, "checkpoints"))
    {
        if (num(c, "trigger_s", NULL) > t && !strcmp(str(c, "status"), "completed"))
            return c;
    }
    return NULL;
}

/* The operator's parallelism after rescale i. */
static double par_after(const cJSON *run, int i, const char *op)
{
    const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), i);
    return at_or(cJSON_GetObjectItem(rs, "parallelism_after"), op, -1);
}

/* The rescale scenarios shipped in scenarios/ (each checked by its own
 * expect block: the run exits 0 only if it holds) show what their
 * descriptions say: on the heap, out via a savepoint and in via a
 * checkpoint, with no native rebuild; on RocksDB with incremental
 * checkpoints, out via a checkpoint rebuilt natively by clipping (the
 * path counted), whose first checkpoint after uploads every file and
 * later ones are incremental again, and in via a savepoint (canonical:
 * nothing rebuilt natively, the first checkpoint full); a crash just
 * after a rescale restores the rescale's checkpoint again at the new
 * parallelism, and one while the rescaled subtasks rebuild interrupts
 * it and restores the same checkpoint. */
static void test_shipped_scenarios(void **state)
{
    (void)state;
    static const char *const names[] = {"heap-out",   "heap-in",     "rocksdb-out",
                                        "rocksdb-in", "crash-after", "crash-during"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char args[512], tag[32];
        snprintf(tag, sizeof(tag), "sh-%s", names[k]);
        snprintf(args, sizeof(args),
                 "run %s/scenarios/rescale-%s.json --out %s/%s --quiet --check-invariants",
                 CHANDY_SOURCE_DIR, names[k], tmp, tag);
        assert_chandy(tag, args, 0);
        cJSON *run = load_run(tag);
        check_exactly_once(run);
        const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "rescales"), 0);
        const cJSON *rb = cJSON_GetObjectItem(cJSON_GetObjectItem(rs, "restore"), "rebuild");
        const cJSON *paths = cJSON_GetObjectItem(rb, "paths");
        const char *n = names[k];
        int out = strstr(n, "-out") || !strcmp(n, "crash-during");
        assert_true(par_after(run, 0, "count") == (out ? 4 : 2));
        if (!strcmp(n, "crash-during")) {
            /* tm0's subtasks were rebuilding when it crashed: only tm1's
             * report their instances; the failover restores the same
             * checkpoint at the new parallelism */
            assert_string_equal(str(rs, "outcome"), "interrupted");
            const cJSON *crash = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "faults"), 1);
            assert_true(num(crash, "at_s", NULL) > num(rs, "deployed_s", NULL));
            assert_true(at_or(rb, "instances", 0) >= 1 && at_or(rb, "instances", 0) < 4);
            const cJSON *rc = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0);
            assert_true(num(rc, "checkpoint", NULL) == num(rs, "checkpoint", NULL));
            const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
            assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == 4);
            cJSON_Delete(run);
            continue;
        }
        assert_string_equal(str(rs, "outcome"), "done");
        assert_string_equal(str(rs, "via"), strstr(n, "heap-out") || strstr(n, "rocksdb-in")
                                                ? "savepoint"
                                                : "checkpoint");
        assert_true(num(rs, "restore", "download_s") > 0);
        assert_true(num(rs, "restore", "rebuild_s") > 0);
        int native = !strcmp(n, "rocksdb-out") || !strcmp(n, "crash-after");
        if (!native) {
            assert_true(at_or(rb, "instances", -1) == 0);
        } else {
            /* each new subtask's instance rebuilt from the old ones' files */
            assert_true(at_or(rb, "instances", 0) == par_after(run, 0, "count"));
            assert_true(at_or(paths, "clip", 0) == at_or(rb, "instances", 0));
            assert_true(at_or(rb, "files_linked", 0) > 0);
            if (!strcmp(n, "rocksdb-out")) /* one old instance each: clipped only */
                assert_true(at_or(rb, "ranges_deleted", 0) == 4 &&
                            at_or(rb, "keys_written", -1) == 0);
            else /* two each: one clipped, the other's keys copied in */
                assert_true(at_or(rb, "keys_written", 0) > 0);
        }
        if (strstr(n, "rocksdb")) {
            /* a rescaled instance is a new backend: its first checkpoint
             * uploads every file, far more than the last incremental one
             * before the rescale */
            double restored = num(rs, "restored_s", NULL);
            const cJSON *first = checkpoint_after(run, restored);
            assert_non_null(first);
            assert_true(num(first, "bytes", NULL) == num(first, "bytes_full", NULL));
            const cJSON *before = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "checkpoints"), 1);
            assert_true(num(before, "bytes", NULL) < num(before, "bytes_full", NULL));
            assert_true(num(first, "bytes", NULL) > 10 * num(before, "bytes", NULL));
            /* and the checkpoints go back to incremental */
            const cJSON *cps = cJSON_GetObjectItem(run, "checkpoints");
            const cJSON *last = cJSON_GetArrayItem(cps, cJSON_GetArraySize(cps) - 1);
            assert_true(num(last, "bytes", NULL) < num(last, "bytes_full", NULL));
        }
        if (!strcmp(n, "heap-in"))
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rs, "waited_for_checkpoint")));
        if (!strcmp(n, "crash-after")) {
            /* the crash came after the rescale restored; the failover
             * restored its checkpoint again at the new parallelism */
            const cJSON *crash = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "faults"), 1);
            assert_true(num(crash, "at_s", NULL) > num(rs, "restored_s", NULL));
            const cJSON *rc = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "recoveries"), 0);
            assert_true(num(rc, "checkpoint", NULL) == num(rs, "checkpoint", NULL));
            assert_true(num(rc, "restore", "replay_s") > 0);
            const cJSON *vs = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "vertices");
            assert_true(num(cJSON_GetArrayItem(vs, 1), "parallelism", NULL) == 2);
        }
        cJSON_Delete(run);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_parallelism_simgrid),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_same_parallelism_sockets),
        cmocka_unit_test(test_checkpoint_fallback),
        cmocka_unit_test(test_refused_while_rescaling),
        cmocka_unit_test(test_crash_interrupts),
        cmocka_unit_test(test_unaligned_rescale),
        cmocka_unit_test(test_buffer_rescale),
        cmocka_unit_test(test_keyed_rescale),
        cmocka_unit_test(test_keyed_determinism),
        cmocka_unit_test(test_keyed_sockets),
        cmocka_unit_test(test_keyed_state_rescale),
        cmocka_unit_test(test_keyed_savepoint_other_parallelism),
        cmocka_unit_test(test_stateless_simgrid),
        cmocka_unit_test(test_stateless_savepoint_other_parallelism),
        cmocka_unit_test(test_stateless_determinism),
        cmocka_unit_test(test_stateless_sockets),
        cmocka_unit_test(test_sink_rescale),
        cmocka_unit_test(test_crash_after_rescale),
        cmocka_unit_test(test_generation_names),
        cmocka_unit_test(test_crash_during_rescale_restore),
        cmocka_unit_test(test_shipped_scenarios),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
