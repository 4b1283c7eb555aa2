/*
 * test_nemesis.c - drawn fault schedules and triggered events.
 *
 * A schedule is a pure function of scenario, seed and mode; schedules of
 * different seeds differ; every drawn schedule reads back through the
 * scenario loader to the same schedule; they stay inside the cluster and
 * keep the job recoverable; over many seeds every kind of fault and every
 * moment is drawn. Two schedules in five add one or two faults inside the
 * processes (store errors, late store completions, allocations that
 * fail), of every kind, operation and point, counted against the restart
 * strategy. Triggered events (`after`) are checked like every other key,
 * and so are the new events' fields. The verdict: a fallback to an older
 * checkpoint passes only past a file the schedule damaged.
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

#include "assign.h"
#include "nemesis.h"
#include "scenario.h"

#define SCENARIO CHANDY_SOURCE_DIR "/scenarios/swarm-crash.json"

static ck_scenario sc, back;

static char *events_text(const ck_scenario *s)
{
    cJSON *ev = ck_nemesis_events_json(s);
    assert_non_null(ev);
    char *t = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    return t;
}

static void load(void)
{
    char err[1200];
    int rc = ck_scenario_load(&sc, SCENARIO, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
}

static void test_deterministic_per_seed(void **state)
{
    (void)state;
    load();
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++) {
        char *seen[50];
        int distinct = 0;
        for (uint64_t seed = 0; seed < 50; seed++) {
            ck_nemesis_draw(&sc, seed, m);
            char *a = events_text(&sc);
            ck_nemesis_draw(&sc, seed + 1000, m); /* something else in between */
            ck_nemesis_draw(&sc, seed, m);
            char *b = events_text(&sc);
            assert_string_equal(a, b);
            free(b);
            int dup = 0;
            for (int k = 0; k < distinct; k++)
                dup |= !strcmp(seen[k], a);
            if (dup)
                free(a);
            else
                seen[distinct++] = a;
        }
        /* Different seeds, different schedules. */
        assert_true(distinct >= 45);
        for (int k = 0; k < distinct; k++)
            free(seen[k]);
    }
    /* The modes draw apart. */
    ck_nemesis_draw(&sc, 7, CK_NEMESIS_SAFETY);
    char *a = events_text(&sc);
    ck_nemesis_draw(&sc, 7, CK_NEMESIS_LIVENESS);
    char *b = events_text(&sc);
    assert_string_not_equal(a, b);
    free(a);
    free(b);
    ck_scenario_free(&sc);
}

/* The scenario file with `events` replaced by the drawn ones, as text. */
static char *with_events(const char *file_text, const ck_scenario *s)
{
    cJSON *root = cJSON_Parse(file_text);
    assert_non_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "events");
    cJSON_AddItemToObject(root, "events", ck_nemesis_events_json(s));
    char *t = cJSON_Print(root);
    cJSON_Delete(root);
    return t;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

static void test_schedules_validate_and_stay_recoverable(void **state)
{
    (void)state;
    load();
    char *file = read_all(SCENARIO);
    int ntm = ck_scenario_taskmanagers(&sc);
    int spare = ntm - ck_graph_hosts_needed(&sc.graph);
    int kinds[CK_FAULT_KINDS] = {0}, moments[CK_MOMENT_COUNT] = {0};
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++)
        for (uint64_t seed = 0; seed < 400; seed++) {
            ck_nemesis_draw(&sc, seed, m);
            int inproc = 0, outputs = 0;
            for (int i = 0; i < sc.nfaults; i++) {
                inproc += ck_fault_in_process(sc.faults[i].kind);
                outputs += ck_fault_is_output(sc.faults[i].kind);
            }
            /* 1 to 5 faults, at most two inside the processes
             * (test_in_process_faults) and one output fault (test_output_faults) */
            int rest = sc.nfaults - inproc - outputs;
            assert_true(rest >= 1 && rest <= 5);
            assert_true(inproc <= 2 && outputs <= 1);
            int for_good = 0;
            for (int i = 0; i < sc.nfaults; i++) {
                const ck_fault *f = &sc.faults[i];
                kinds[f->kind]++;
                if (!ck_fault_in_process(f->kind) && !ck_fault_is_output(f->kind))
                    moments[f->moment]++;
                if (f->kind == CK_FAULT_CRASH) {
                    assert_true(f->host >= 0 && f->host < ntm); /* task managers only */
                    for_good += f->duration == 0;
                }
                if (m == CK_NEMESIS_LIVENESS && f->moment == CK_MOMENT_NONE)
                    assert_true(f->at <= sc.workload.duration * 2 / 5);
                if (m == CK_NEMESIS_LIVENESS)
                    assert_int_not_equal(f->kind, CK_FAULT_CORRUPT_CHECKPOINT);
                if (m == CK_NEMESIS_LIVENESS && f->kind == CK_FAULT_SAVEPOINT)
                    assert_true(!f->stop || f->resume_after > 0);
            }
            assert_true(for_good <= spare);
            /* Reads back as a scenario, to the same schedule. */
            char *drawn = events_text(&sc);
            char *text = with_events(file, &sc);
            char err[1200] = "";
            int rc = ck_scenario_parse(&back, "drawn.json", text, err, sizeof(err));
            if (rc)
                fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err);
            assert_int_equal(rc, 0);
            char *reread = events_text(&back);
            assert_string_equal(drawn, reread);
            ck_scenario_free(&back);
            free(drawn);
            free(text);
            free(reread);
        }
    /* Over many seeds, every kind of fault and every moment comes up; a
     * heap job without a changelog has no state backend moments. */
    for (int k = 0; k <= CK_FAULT_CORRUPT_CHECKPOINT; k++)
        assert_true(kinds[k] > 0);
    assert_true(kinds[CK_FAULT_STORE_ERRORS] > 0 && kinds[CK_FAULT_STORE_DELAY] > 0 &&
                kinds[CK_FAULT_ALLOC_FAILURE] > 0);
    for (int m = 0; m < CK_MOMENT_COUNT; m++)
        if (m < CK_MOMENT_STATE_FLUSH)
            assert_true(moments[m] > 0);
        else
            assert_int_equal(moments[m], 0);
    free(file);
    ck_scenario_free(&sc);
}

/* A job on RocksDB under the changelog backend: half its triggered faults
 * wait for its state backend's moments, and all four come up; on RocksDB
 * alone, only flushes and compactions (it has no changelog). */
static void test_state_backend_moments(void **state)
{
    (void)state;
    static const char *const files[] = {
        CHANDY_SOURCE_DIR "/scenarios/keyed-state-changelog-rocksdb.json",
        CHANDY_SOURCE_DIR "/scenarios/keyed-state-incremental.json"};
    for (int i = 0; i < 2; i++) {
        ck_scenario s;
        char err[1200];
        assert_int_equal(ck_scenario_load(&s, files[i], err, sizeof(err)), 0);
        int moments[CK_MOMENT_COUNT] = {0};
        for (uint64_t seed = 0; seed < 300; seed++) {
            ck_nemesis_draw(&s, seed, CK_NEMESIS_SAFETY);
            for (int f = 0; f < s.nfaults; f++)
                /* those inside the processes have moments of their own; output
                 * faults wait for completions */
                if (!ck_fault_in_process(s.faults[f].kind) && !ck_fault_is_output(s.faults[f].kind))
                    moments[s.faults[f].moment]++;
        }
        int state_ones = 0, others = 0;
        for (int m = CK_MOMENT_CHECKPOINT_TRIGGERED; m < CK_MOMENT_COUNT; m++)
            *(m >= CK_MOMENT_STATE_FLUSH ? &state_ones : &others) += moments[m];
        assert_true(state_ones > others / 2 && others > state_ones / 2);
        assert_true(moments[CK_MOMENT_STATE_FLUSH] > 0 && moments[CK_MOMENT_STATE_COMPACTION] > 0);
        if (i == 0)
            assert_true(moments[CK_MOMENT_MATERIALIZATION] > 0 &&
                        moments[CK_MOMENT_CHANGELOG_UPLOAD] > 0);
        else
            assert_true(moments[CK_MOMENT_MATERIALIZATION] == 0 &&
                        moments[CK_MOMENT_CHANGELOG_UPLOAD] == 0);
        ck_scenario_free(&s);
    }
}

/* Where the input's partitions end at different times
 * (scenarios/swarm-finish.json), about a third of the triggered faults
 * wait for the nth subtask's finish, n within the job's subtasks, up to
 * three checkpoint intervals after it; the schedules read back through
 * the loader. Partitions that all end together draw none (swarm-crash:
 * test_schedules_validate_and_stay_recoverable). */
static void test_subtask_finished_moments(void **state)
{
    (void)state;
    const char *path = CHANDY_SOURCE_DIR "/scenarios/swarm-finish.json";
    char err[1200];
    ck_scenario s;
    assert_int_equal(ck_scenario_load(&s, path, err, sizeof(err)), 0);
    char *file = read_all(path);
    ck_time I = ck_cfg(&s.cfg, CK_CFG_CP_INTERVAL);
    int finished = 0, triggered = 0;
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++)
        for (uint64_t seed = 0; seed < 300; seed++) {
            ck_nemesis_draw(&s, seed, m);
            for (int i = 0; i < s.nfaults; i++) {
                const ck_fault *f = &s.faults[i];
                triggered += f->moment != CK_MOMENT_NONE;
                if (f->moment != CK_MOMENT_SUBTASK_FINISHED)
                    continue;
                finished++;
                assert_true(f->nth >= 1 && f->nth <= (int)s.graph.nsubtasks);
                assert_true(f->at >= 1000 && f->at <= 3 * I);
            }
            char *drawn = events_text(&s);
            char *text = with_events(file, &s);
            assert_int_equal(ck_scenario_parse(&back, "drawn.json", text, err, sizeof(err)), 0);
            char *reread = events_text(&back);
            assert_string_equal(drawn, reread);
            ck_scenario_free(&back);
            free(drawn);
            free(text);
            free(reread);
        }
    assert_true(finished * 4 > triggered && finished * 2 < triggered);
    free(file);
    ck_scenario_free(&s);
}

/* A third of the safety schedules start with a focused pair (the first
 * two triggered faults): checkpoint n's channels skewed by tens of
 * milliseconds on a task manager in use, within a millisecond of its
 * trigger, then a crash of one in use after the same checkpoint
 * completes. Liveness schedules hold none. */
static void test_focused_pairs(void **state)
{
    (void)state;
    load();
    int inuse = ck_graph_hosts_needed(&sc.graph);
    int ncp = (int)(sc.workload.duration * 9 / 10 / ck_cfg(&sc.cfg, CK_CFG_CP_INTERVAL));
    int pairs[2] = {0, 0}, early = 0, slow_links = 0, slow_cpus = 0;
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++)
        for (uint64_t seed = 0; seed < 300; seed++) {
            ck_nemesis_draw(&sc, seed, m);
            int i = 0;
            while (i < sc.nfaults && sc.faults[i].moment == CK_MOMENT_NONE)
                i++;
            if (i + 1 >= sc.nfaults)
                continue;
            const ck_fault *a = &sc.faults[i], *b = &sc.faults[i + 1];
            int skew = (a->kind == CK_FAULT_SLOW_LINK && a->latency >= 5000000 &&
                        a->factor == 1.0) ||
                       (a->kind == CK_FAULT_SLOW_CPU && a->factor <= 0.1);
            if (!(skew && a->moment == CK_MOMENT_CHECKPOINT_TRIGGERED && a->at <= 1000000 &&
                  a->duration >= 20000000 && a->duration <= 200000000 &&
                  b->kind == CK_FAULT_CRASH && b->moment == CK_MOMENT_CHECKPOINT_COMPLETED &&
                  b->nth == a->nth))
                continue;
            pairs[m - CK_NEMESIS_SAFETY]++;
            assert_true(a->nth >= 1 && a->nth < ncp);
            assert_true(a->host >= 0 && a->host < inuse);
            assert_true(b->host >= 0 && b->host < inuse);
            assert_true(b->at <= ck_cfg(&sc.cfg, CK_CFG_CP_INTERVAL) / 2);
            early += b->at <= 1000000;
            slow_links += a->kind == CK_FAULT_SLOW_LINK;
            slow_cpus += a->kind == CK_FAULT_SLOW_CPU;
        }
    /* 300 draws at 1/3: 100 expected, sd 8.2. */
    assert_in_range(pairs[0], 70, 130);
    assert_int_equal(pairs[1], 0);
    assert_true(early * 2 > pairs[0]); /* mostly before the commit reaches the sinks */
    assert_true(slow_links > 0 && slow_cpus > 0);
    ck_scenario_free(&sc);
}

static void test_describe(void **state)
{
    (void)state;
    ck_fault f = {.kind = CK_FAULT_CRASH, .host = 1, .at = 300000, .duration = 1200000000,
                  .moment = CK_MOMENT_CHECKPOINT_COMPLETED, .nth = 2, .factor = 1};
    char buf[200];
    ck_nemesis_describe(&f, 3, buf, sizeof(buf));
    assert_string_equal(buf, "300us after checkpoint_completed#2 crash tm1, back after 1.2s");
    ck_nemesis_mode m;
    assert_int_equal(ck_nemesis_mode_parse("liveness", &m), 0);
    assert_int_equal(m, CK_NEMESIS_LIVENESS);
    assert_int_not_equal(ck_nemesis_mode_parse("safe", &m), 0);
}

static const char *const base =
    "{\"workload\": {\"duration\": \"1 s\", \"rate\": 100},"
    " \"cluster\": {\"taskmanagers\": 2},"
    " \"job\": {\"operators\": [{\"type\": \"source\"}, {\"type\": \"sink\"}]},"
    " \"events\": %s}";

static int parse_events(const char *events, char *err, size_t errlen)
{
    char text[2048];
    snprintf(text, sizeof(text), base, events);
    int rc = ck_scenario_parse(&back, "t.json", text, err, errlen);
    return rc;
}

/* A rescale is printed where faults are: described in one line, and
 * written as an event that reads back the same. */
static void test_rescale_printable(void **state)
{
    (void)state;
    char err[1200] = "";
    int rc = parse_events("[{\"at\": \"1 s\", \"action\": \"rescale\","
                          " \"parallelism\": {\"sink\": 2, \"source\": 2}}]",
                          err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    char buf[200];
    ck_nemesis_describe(&back.faults[0], 2, buf, sizeof(buf));
    assert_string_equal(buf, "at 1s rescale 0 via savepoint to 2,2");
    char *a = events_text(&back);
    assert_non_null(strstr(a, "\"action\":\"rescale\",\"parallelism\":{\"source\":2,"
                              "\"sink\":2},\"via\":\"savepoint\""));
    char events[600];
    snprintf(events, sizeof(events), "%s", a);
    ck_scenario_free(&back);
    assert_int_equal(parse_events(events, err, sizeof(err)), 0);
    char *b = events_text(&back);
    assert_string_equal(a, b);
    free(a);
    free(b);
    ck_scenario_free(&back);
}

/* A scenario whose own timeline rescales (scenarios/swarm-rescale.json)
 * gets one or two rescales per schedule: each a job that builds and fits
 * the cluster with a spare left, forward groups at one parallelism, no
 * operator past what the timeline gives it, only vertices whose state may
 * move changed; numbered in the schedule's order; both vias, up and down,
 * at times and after checkpoints; about half with a crash on a task
 * manager the rescaled job runs on, from the moment its deployment goes
 * out. The schedules read back as the scenario format. A scenario whose
 * timeline does not rescale draws none. */
static void test_rescales_drawn(void **state)
{
    (void)state;
    const char *path = CHANDY_SOURCE_DIR "/scenarios/swarm-rescale.json";
    char err[1200] = "";
    ck_scenario rs;
    assert_int_equal(ck_scenario_load(&rs, path, err, sizeof(err)), 0);
    char *file = read_all(path);
    const ck_job_spec *js = &rs.graph.spec;
    int hi[CK_MAX_OPS];
    for (int k = 0; k < js->nops; k++)
        hi[k] = js->ops[k].parallelism;
    for (int i = 0; i < rs.nfaults; i++)
        for (int k = 0; k < js->nops; k++)
            if (rs.faults[i].kind == CK_FAULT_RESCALE && rs.faults[i].par[k] > hi[k])
                hi[k] = rs.faults[i].par[k];
    assert_int_equal(hi[1], 4); /* the map, to 4 and back */
    assert_int_equal(hi[2], 4); /* the count */
    int ntm = ck_scenario_taskmanagers(&rs);
    int rescales = 0, crashes = 0, via[2] = {0}, up = 0, down = 0, timed = 0, after = 0;
    ck_graph *g = malloc(sizeof(*g));
    ck_job_spec *spec = malloc(sizeof(*spec));
    assert_non_null(g);
    assert_non_null(spec);
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++)
        for (uint64_t seed = 0; seed < 300; seed++) {
            ck_nemesis_draw(&rs, seed, m);
            int n = 0, need[4] = {0};
            for (int i = 0; i < rs.nfaults; i++) {
                const ck_fault *f = &rs.faults[i];
                if (f->kind != CK_FAULT_RESCALE)
                    continue;
                assert_int_equal(f->rescale, n);
                *spec = *js;
                int changed = 0;
                for (int k = 0; k < js->nops; k++) {
                    assert_true(f->par[k] >= 1 && f->par[k] <= hi[k]);
                    spec->ops[k].parallelism = f->par[k];
                    if (f->par[k] != js->ops[k].parallelism)
                        changed = 1;
                    if (js->ops[k].ship == CK_SHIP_FORWARD && js->ops[k].input >= 0)
                        assert_int_equal(f->par[k], f->par[js->ops[k].input]);
                }
                up += f->par[1] > js->ops[1].parallelism;
                down += f->par[1] < js->ops[1].parallelism;
                (void)changed;
                int bad = -1;
                char why[200];
                assert_int_equal(ck_graph_build(g, spec, &rs.cfg, &bad, why, sizeof(why)), 0);
                need[n] = ck_graph_hosts_needed(g);
                assert_true(need[n] < ntm); /* a spare left */
                via[f->via ? 1 : 0]++;
                timed += f->moment == CK_MOMENT_NONE;
                after += f->moment == CK_MOMENT_CHECKPOINT_COMPLETED;
                n++;
            }
            assert_true(n >= 1 && n <= 2);
            rescales += n;
            for (int i = 0; i < rs.nfaults; i++) {
                const ck_fault *f = &rs.faults[i];
                if (f->moment != CK_MOMENT_RESCALE_DEPLOYED)
                    continue;
                assert_int_equal(f->kind, CK_FAULT_CRASH);
                assert_true(f->nth >= 1 && f->nth <= n);
                /* on a task manager one of the rescaled jobs runs on */
                assert_true(f->host >= 0 && f->host < (need[0] > need[1] ? need[0] : need[1]));
                assert_true(f->duration > 0); /* it comes back */
                crashes++;
            }
            char *drawn = events_text(&rs);
            char *text = with_events(file, &rs);
            int rc = ck_scenario_parse(&back, "drawn.json", text, err, sizeof(err));
            if (rc)
                fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err);
            assert_int_equal(rc, 0);
            char *reread = events_text(&back);
            assert_string_equal(drawn, reread);
            ck_scenario_free(&back);
            free(drawn);
            free(text);
            free(reread);
        }
    assert_true(via[0] > rescales / 4 && via[1] > rescales / 4);
    assert_true(up > rescales / 4 && down > 0);
    assert_true(timed > rescales / 3 && after > rescales / 8);
    assert_true(crashes > rescales / 4 && crashes < rescales * 3 / 4);
    free(g);
    free(spec);
    free(file);
    ck_scenario_free(&rs);
    /* swarm-crash's own timeline does not rescale: none drawn */
    load();
    for (uint64_t seed = 0; seed < 200; seed++) {
        ck_nemesis_draw(&sc, seed, CK_NEMESIS_SAFETY);
        for (int i = 0; i < sc.nfaults; i++) {
            assert_int_not_equal(sc.faults[i].kind, CK_FAULT_RESCALE);
            assert_int_not_equal(sc.faults[i].moment, CK_MOMENT_RESCALE_DEPLOYED);
        }
    }
    ck_scenario_free(&sc);
}

static void test_after_is_checked(void **state)
{
    (void)state;
    char err[1200];
    /* A triggered event may stand before timed ones with a smaller "at". */
    assert_int_equal(parse_events("[{\"at\": \"2 s\", \"action\": \"savepoint\"},"
                                  " {\"after\": {\"moment\": \"upload_started\", \"nth\": 3},"
                                  "  \"at\": \"300 us\", \"action\": \"crash\", \"host\": \"tm1\"},"
                                  " {\"at\": \"2500 ms\", \"action\": \"savepoint\"}]",
                                  err, sizeof(err)),
                     0);
    assert_int_equal(back.faults[1].moment, CK_MOMENT_UPLOAD_STARTED);
    assert_int_equal(back.faults[1].nth, 3);
    assert_int_equal(back.faults[1].at, 300000);
    ck_scenario_free(&back);
    /* nth defaults to the first. */
    assert_int_equal(parse_events("[{\"after\": {\"moment\": \"restore_started\"}, \"at\": 0,"
                                  " \"action\": \"corrupt_checkpoint\"}]",
                                  err, sizeof(err)),
                     0);
    assert_int_equal(back.faults[0].nth, 1);
    ck_scenario_free(&back);
    /* Timed events still in order. */
    assert_int_not_equal(parse_events("[{\"at\": \"2 s\", \"action\": \"savepoint\"},"
                                      " {\"at\": \"1 s\", \"action\": \"savepoint\"}]",
                                      err, sizeof(err)),
                         0);
    assert_non_null(strstr(err, "events[1]"));
    static const struct {
        const char *events, *want;
    } bad[] = {
        {"[{\"after\": {\"moment\": \"lunch\"}, \"at\": 0, \"action\": \"savepoint\"}]",
         "t.json: events[0].after.moment: "},
        {"[{\"after\": {\"moment\": \"upload_started\", \"nth\": 0}, \"at\": 0, \"action\": "
         "\"savepoint\"}]",
         "t.json: events[0].after.nth: "},
        {"[{\"after\": {\"moment\": \"upload_started\", \"when\": 1}, \"at\": 0, \"action\": "
         "\"savepoint\"}]",
         "t.json: events[0].after"},
        {"[{\"after\": \"checkpoint_completed\", \"at\": 0, \"action\": \"savepoint\"}]",
         "t.json: events[0].after: expected an object"},
        {"[{\"after\": {\"nth\": 2}, \"at\": 0, \"action\": \"savepoint\"}]",
         "t.json: events[0].after.moment: "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_not_equal(parse_events(bad[i].events, err, sizeof(err)), 0);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)))
            fprintf(stderr, "got: %s\nwant: %s...\n", err, bad[i].want);
        assert_true(strncmp(err, bad[i].want, strlen(bad[i].want)) == 0);
        assert_null(strchr(err, '\n'));
    }
}

/* Whether f may fail the job over: counted against the restart strategy. */
static int disruptive(const ck_fault *f, int ntm)
{
    return f->kind == CK_FAULT_CRASH || f->kind == CK_FAULT_PARTITION ||
           (f->kind == CK_FAULT_LINK_DOWN && f->host <= ntm) ||
           (f->kind == CK_FAULT_STORE_ERRORS &&
            (f->ops & (CK_STORE_OP_PUT | CK_STORE_OP_GET))) ||
           f->kind == CK_FAULT_ALLOC_FAILURE;
}

/* The faults inside the processes: two schedules in five hold one or two
 * (drawn on a stream of their own: the rest of a schedule does not move
 * with them), of every kind, operation, point and probability, on hosts
 * that run something (or every host); with the disruptive faults they
 * stay below what the restart strategy tolerates (a fixed-delay strategy
 * of 3 attempts: 2), past which only late completions are drawn; their
 * windows are bounded; a liveness schedule's timed ones start in the
 * first 40 % of the input. */
static void test_in_process_faults(void **state)
{
    (void)state;
    static const char *const files[] = {
        SCENARIO, CHANDY_SOURCE_DIR "/scenarios/keyed-state-incremental.json"};
    int ops[8] = {0}, points[4] = {0}, delays = 0, every = 0, jm = 0, triggered = 0;
    for (int fi = 0; fi < 2; fi++) {
        ck_scenario s;
        char err[1200];
        assert_int_equal(ck_scenario_load(&s, files[fi], err, sizeof(err)), 0);
        int ntm = ck_scenario_taskmanagers(&s), inuse = ck_graph_hosts_needed(&s.graph);
        int cap = fi == 0 ? 8 : 2; /* exponential-delay (at most 8); fixed-delay, 3 attempts */
        for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++) {
            int with = 0;
            for (uint64_t seed = 0; seed < 500; seed++) {
                ck_nemesis_draw(&s, seed, m);
                int n = 0, dis = 0;
                for (int i = 0; i < s.nfaults; i++) {
                    const ck_fault *f = &s.faults[i];
                    dis += disruptive(f, ntm);
                    if (!ck_fault_in_process(f->kind))
                        continue;
                    n++;
                    assert_true(f->host == -1 || (f->host >= 0 && f->host < inuse) ||
                                (f->host == ntm && f->kind != CK_FAULT_ALLOC_FAILURE &&
                                 !(f->kind == CK_FAULT_STORE_ERRORS &&
                                   f->ops == CK_STORE_OP_GET))); /* the jm reads nothing */
                    every += f->host == -1;
                    jm += f->host == ntm;
                    assert_true(f->prob > 0 && f->prob <= 1);
                    assert_true(f->duration >= 10000000 &&
                                f->duration <= CK_MAX(s.workload.duration / 2,
                                                      4 * ck_cfg(&s.cfg, CK_CFG_CP_INTERVAL)));
                    if (f->kind == CK_FAULT_STORE_ERRORS) {
                        assert_true(f->ops > 0 && f->ops <= CK_STORE_OP_ALL);
                        ops[f->ops]++;
                    } else if (f->kind == CK_FAULT_ALLOC_FAILURE) {
                        assert_true(f->point >= CK_POINT_RESTORE && f->point <= CK_POINT_DEPLOY);
                        points[f->point]++;
                    } else {
                        assert_true(f->delay >= 1000000 && f->delay <= 500000000);
                        delays++;
                    }
                    if (f->moment != CK_MOMENT_NONE)
                        triggered++;
                    else if (m == CK_NEMESIS_LIVENESS)
                        assert_true(f->at <= s.workload.duration * 2 / 5);
                }
                assert_true(n <= 2);
                assert_true(dis <= cap);
                with += n > 0;
            }
            /* 500 draws at 2/5: 200 expected, sd 11. */
            assert_in_range(with, 160, 240);
        }
        ck_scenario_free(&s);
    }
    assert_true(ops[CK_STORE_OP_PUT] > 0 && ops[CK_STORE_OP_GET] > 0 &&
                ops[CK_STORE_OP_DELETE] > 0 && ops[CK_STORE_OP_ALL] > 0);
    assert_true(points[CK_POINT_RESTORE] > 0 && points[CK_POINT_SNAPSHOT] > 0 &&
                points[CK_POINT_DEPLOY] > 0);
    assert_true(delays > 0 && every > 0 && jm > 0 && triggered > 0);
}

/* The new events' fields are checked, and read back as written. */
static void test_in_process_events(void **state)
{
    (void)state;
    char err[1200];
    assert_int_equal(
        parse_events("[{\"at\": \"100 ms\", \"action\": \"store_errors\", \"host\": \"jm\","
                     "  \"ops\": [\"put\", \"delete\"], \"probability\": 0.25,"
                     "  \"duration\": \"1 s\"},"
                     " {\"at\": \"200 ms\", \"action\": \"store_delay\", \"delay\": \"30 ms\"},"
                     " {\"after\": {\"moment\": \"restore_started\"}, \"at\": 0,"
                     "  \"action\": \"alloc_failure\", \"host\": \"tm1\", \"point\": \"restore\"},"
                     " {\"at\": \"300 ms\", \"action\": \"store_errors\", \"ops\": \"get\"}]",
                     err, sizeof(err)),
        0);
    const ck_fault *f = back.faults;
    assert_int_equal(f[0].kind, CK_FAULT_STORE_ERRORS);
    assert_int_equal(f[0].host, 2); /* jm: ntm */
    assert_int_equal(f[0].ops, CK_STORE_OP_PUT | CK_STORE_OP_DELETE);
    assert_true(f[0].prob == 0.25);
    assert_int_equal(f[1].kind, CK_FAULT_STORE_DELAY);
    assert_int_equal(f[1].host, -1); /* every host */
    assert_true(f[1].prob == 1.0 && f[1].delay == 30 * 1000000);
    assert_int_equal(f[1].duration, 0); /* to the end of the run */
    assert_int_equal(f[2].kind, CK_FAULT_ALLOC_FAILURE);
    assert_int_equal(f[2].point, CK_POINT_RESTORE);
    assert_int_equal(f[2].host, 1);
    assert_int_equal(f[3].ops, CK_STORE_OP_GET);
    /* written as the scenario format reads them */
    char *a = events_text(&back);
    char text[2048];
    snprintf(text, sizeof(text), base, a);
    ck_scenario again;
    assert_int_equal(ck_scenario_parse(&again, "t.json", text, err, sizeof(err)), 0);
    char *b = events_text(&again);
    assert_string_equal(a, b);
    free(a);
    free(b);
    ck_scenario_free(&again);
    ck_fault d = back.faults[0];
    d.duration = 1000000000;
    char line[200];
    ck_nemesis_describe(&d, 2, line, sizeof(line));
    assert_string_equal(line, "at 100ms store_errors jm put+delete p0.25 for 1s");
    ck_scenario_free(&back);
    static const struct {
        const char *events, *want;
    } bad[] = {
        {"[{\"at\": 0, \"action\": \"store_errors\", \"ops\": \"write\"}]",
         "t.json: events[0].ops: expected \"put\", \"get\" or \"delete\", got \"write\""},
        {"[{\"at\": 0, \"action\": \"store_errors\", \"ops\": [\"put\", \"put\"]}]",
         "t.json: events[0].ops[1]: \"put\" is named twice"},
        {"[{\"at\": 0, \"action\": \"store_errors\", \"ops\": []}]",
         "t.json: events[0].ops: expected"},
        {"[{\"at\": 0, \"action\": \"store_errors\", \"host\": \"store\"}]",
         "t.json: events[0].host: expected a task manager or jm"},
        {"[{\"at\": 0, \"action\": \"store_errors\", \"probability\": 0}]",
         "t.json: events[0].probability: "},
        {"[{\"at\": 0, \"action\": \"store_errors\", \"probability\": 1.5}]",
         "t.json: events[0].probability: "},
        {"[{\"at\": 0, \"action\": \"store_delay\"}]", "t.json: events[0].delay: "},
        {"[{\"at\": 0, \"action\": \"store_delay\", \"delay\": \"1 ms\", \"ops\": \"put\"}]",
         "t.json: events[0].ops: unknown key"},
        {"[{\"at\": 0, \"action\": \"alloc_failure\"}]", "t.json: events[0].point: "},
        {"[{\"at\": 0, \"action\": \"alloc_failure\", \"point\": \"lunch\"}]",
         "t.json: events[0].point: expected one of \"restore\", \"snapshot\", \"deploy\""},
        {"[{\"at\": 0, \"action\": \"alloc_failure\", \"point\": \"deploy\", \"host\": \"jm\"}]",
         "t.json: events[0].host: expected a task manager"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        assert_int_not_equal(parse_events(bad[i].events, err, sizeof(err)), 0);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)))
            fprintf(stderr, "got: %s\nwant: %s...\n", err, bad[i].want);
        assert_true(strncmp(err, bad[i].want, strlen(bad[i].want)) == 0);
        assert_null(strchr(err, '\n'));
    }
}

/*
 * A fifth of the safety schedules hold one output fault: each kind, on each sink of the job
 * (swarm-region: records passed through, keyed counts, running sums
 * behind a rebalance), at a time among the timed faults in order or
 * after a checkpoint completes. Liveness schedules hold none. They read
 * back through the loader.
 */
static void test_output_faults(void **state)
{
    (void)state;
    const char *path = CHANDY_SOURCE_DIR "/scenarios/swarm-region.json";
    char err[1200];
    ck_scenario s;
    assert_int_equal(ck_scenario_load(&s, path, err, sizeof(err)), 0);
    char *file = read_all(path);
    int per_sink[CK_MAX_OPS] = {0}, per_kind[3] = {0}, timed = 0, with = 0, sinks = 0;
    for (int k = 0; k < s.job.nops; k++)
        sinks += s.job.ops[k].kind == CK_OP_SINK;
    assert_int_equal(sinks, 3);
    for (ck_nemesis_mode m = CK_NEMESIS_SAFETY; m <= CK_NEMESIS_LIVENESS; m++)
        for (uint64_t seed = 0; seed < 500; seed++) {
            ck_nemesis_draw(&s, seed, m);
            int n = 0;
            ck_time last = -1;
            for (int i = 0; i < s.nfaults; i++) {
                const ck_fault *f = &s.faults[i];
                if (f->moment == CK_MOMENT_NONE) {
                    assert_true(f->at >= last); /* timed ones in order */
                    last = f->at;
                }
                if (!ck_fault_is_output(f->kind))
                    continue;
                n++;
                assert_int_equal(m, CK_NEMESIS_SAFETY);
                assert_int_equal(s.job.ops[f->op].kind, CK_OP_SINK);
                per_sink[f->op]++;
                per_kind[f->kind - CK_FAULT_SINK_DUPLICATE]++;
                timed += f->moment == CK_MOMENT_NONE;
                assert_true(f->moment == CK_MOMENT_NONE ||
                            f->moment == CK_MOMENT_CHECKPOINT_COMPLETED);
            }
            assert_true(n <= 1);
            with += n;
            if (!n)
                continue;
            char *drawn = events_text(&s);
            char *text = with_events(file, &s);
            assert_int_equal(ck_scenario_parse(&back, "drawn.json", text, err, sizeof(err)), 0);
            char *reread = events_text(&back);
            assert_string_equal(drawn, reread);
            ck_scenario_free(&back);
            free(drawn);
            free(text);
            free(reread);
        }
    /* about a fifth of 500 safety schedules, on every sink, of every kind */
    assert_true(with > 70 && with < 130);
    for (int k = 0; k < s.job.nops; k++)
        if (s.job.ops[k].kind == CK_OP_SINK)
            assert_true(per_sink[k] > with / 6);
    for (int k = 0; k < 3; k++)
        assert_true(per_kind[k] > with / 6);
    assert_true(timed > with / 4 && timed < with * 3 / 4);
    free(file);
    ck_scenario_free(&s);
}

/* One judgement of a run that fell back once, from checkpoint 3 to
 * `to`: its restore failed with `code` on `file`, at 1.5 s; the timeline
 * damaged `damaged` at `damaged_at` (NULL: it damaged nothing). Returns
 * the swarm verdict; *unexplained says whether the run's own verdict
 * failed it, and the run's degraded/unexplained lines are in r. */
static ck_run judged;

static int judge_one(uint32_t code, const char *file, uint64_t to, const char *damaged,
                     ck_time damaged_at, int *unexplained)
{
    static ck_fault spec;
    static ck_fallback fb;
    ck_run *r = &judged;
    memset(r, 0, sizeof(*r));
    r->sc = &sc;
    r->res.jm_ready = 1;
    r->res.jm.state = to ? CK_JOB_FINISHED : CK_JOB_FAILED;
    r->res.jm.failed_because = to ? CK_JOBFAIL_NONE : CK_JOBFAIL_NO_CHECKPOINT;
    snprintf(r->res.jm.failure, sizeof(r->res.jm.failure), "%s",
             to ? "" : "no checkpoint left to restore");
    r->res.jm.end = 2 * CK_NS_PER_S;
    memset(&fb, 0, sizeof(fb));
    fb.at = 1500 * CK_NS_PER_MS;
    fb.from = 3;
    fb.to = to;
    fb.subtask = 1;
    fb.code = code;
    snprintf(fb.key, sizeof(fb.key), "%s", file);
    snprintf(fb.why, sizeof(fb.why), "checkpoint 3: %s: it broke", file);
    r->res.jm.fallbacks = &fb;
    r->res.jm.nfallbacks = 1;
    if (damaged) {
        memset(&spec, 0, sizeof(spec));
        spec.kind = CK_FAULT_CORRUPT_CHECKPOINT;
        spec.at = damaged_at;
        r->res.nfaults = 1;
        r->res.faults[0].spec = &spec;
        r->res.faults[0].applied = 1;
        r->res.faults[0].applied_at = damaged_at;
        snprintf(r->res.faults[0].key, sizeof(r->res.faults[0].key), "%s", damaged);
    }
    *unexplained = ck_run_judge_fallbacks(r);
    ck_verdict v = {.guarantee = r->degraded[0] ? CK_AT_LEAST_ONCE : CK_EXACTLY_ONCE, .ok = 1};
    ck_nemesis_verdict nv;
    ck_nemesis_judge(r, &v, CK_NEMESIS_SAFETY, &nv);
    assert_int_equal(nv.ok, !*unexplained);
    if (*unexplained)
        assert_string_equal(nv.why, r->unexplained);
    return nv.ok;
}

/* A restore that goes back to an older checkpoint replays output the
 * newer one committed. The run's verdict and the swarm's allow it only
 * past a file a corrupt_checkpoint event damaged before the restore
 * found it damaged (by its size or checksum): a restore that failed for
 * another reason (state missing: a checkpoint completed an
 * acknowledgement short), on another file, or before the damage, fails
 * the run, whatever its output. */
static void test_fallbacks_are_judged(void **state)
{
    (void)state;
    load();
    const char *f3 = "checkpoints/j/chk-3/v1-0.state", *f2 = "checkpoints/j/chk-2/v1-0.state";
    ck_time s1 = CK_NS_PER_S;
    int unexplained;
    /* Past the damaged file: allowed, and the run says at least once, why. */
    assert_true(judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 2, f3, s1, &unexplained));
    assert_false(unexplained);
    assert_non_null(strstr(judged.degraded, "fell back from damaged checkpoint 3 to checkpoint 2"));
    assert_string_equal(judged.unexplained, "");
    assert_int_equal(ck_run_fallback_cause(&judged, 0), 0);
    /* Past a shared file of several checkpoints: the same file decides. */
    const char *sst = "checkpoints/j/shared/op1-sub0-a0-c2-000009.sst";
    assert_true(judge_one(CK_FAIL_RESTORE_DAMAGED, sst, 2, sst, s1, &unexplained));
    /* The job failed with none left, past the damaged file: allowed. */
    assert_true(judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 0, f3, s1, &unexplained));
    assert_string_equal(judged.degraded, ""); /* it went back to nothing */
    /* State missing, with or without damage elsewhere: never. */
    for (int d = 0; d < 2; d++) {
        assert_false(judge_one(CK_FAIL_RESTORE_MISSING, "checkpoints/j/chk-3/", 2,
                               d ? f3 : NULL, s1, &unexplained));
        assert_true(unexplained);
        assert_non_null(strstr(judged.unexplained,
                               "the job fell back from checkpoint 3 to checkpoint 2"));
        assert_non_null(strstr(judged.unexplained, "(missing: checkpoint 3:"));
        assert_string_equal(judged.degraded, "");
        assert_int_equal(ck_run_fallback_cause(&judged, 0), -1);
    }
    /* A file that does not decode though its checksum holds: never. */
    assert_false(judge_one(CK_FAIL_RESTORE_UNREADABLE, f3, 2, f3, s1, &unexplained));
    /* Damaged, but not the file the event damaged, or before it did. */
    assert_false(judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 2, f2, s1, &unexplained));
    assert_false(judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 2, f3, 2 * s1, &unexplained));
    assert_false(judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 2, NULL, 0, &unexplained));
    /* A job that failed with none left, for no damage: not as the schedule allowed. */
    assert_false(judge_one(CK_FAIL_RESTORE_MISSING, f3, 0, f3, s1, &unexplained));
    assert_non_null(strstr(judged.unexplained, "to none (the job failed)"));
    /* An event that could not damage anything explains nothing. */
    judge_one(CK_FAIL_RESTORE_DAMAGED, f3, 2, f3, s1, &unexplained);
    judged.res.faults[0].failed = 1;
    assert_int_equal(ck_run_fallback_cause(&judged, 0), -1);
    assert_int_equal(ck_run_judge_fallbacks(&judged), 1);
    ck_scenario_free(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_per_seed),
        cmocka_unit_test(test_schedules_validate_and_stay_recoverable),
        cmocka_unit_test(test_state_backend_moments),
        cmocka_unit_test(test_focused_pairs),
        cmocka_unit_test(test_subtask_finished_moments),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_rescale_printable),
        cmocka_unit_test(test_rescales_drawn),
        cmocka_unit_test(test_after_is_checked),
        cmocka_unit_test(test_in_process_faults),
        cmocka_unit_test(test_in_process_events),
        cmocka_unit_test(test_fallbacks_are_judged),
        cmocka_unit_test(test_output_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
