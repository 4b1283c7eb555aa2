/*
 * test_sweep.c - `chandy sweep`: a grid of a configuration key and a
 * scenario path over seeds, every point checked before anything runs, the
 * runs in parallel, a resume that runs only what is missing, a directory of
 * another sweep refused, and a report whose figures are the median over
 * seeds with their spread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "report.h"
#include "runutil.h"
#include "scenario.h"
#include "sweep.h"

/* tests/scenarios/small-cp.json with a sweep added (or its "sweep" as given). */
static const char *sweep_file(const char *name, const char *sweep_json)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small-cp.json");
    assert_non_null(text);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    cJSON_DeleteItemFromObject(sc, "expect");
    cJSON *sw = cJSON_Parse(sweep_json);
    assert_non_null(sw);
    cJSON_AddItemToObject(sc, "sweep", sw);
    char *out = cJSON_Print(sc);
    cJSON_Delete(sc);
    static char path[256];
    const char *p = put_file(name, out);
    free(out);
    assert_non_null(p);
    snprintf(path, sizeof(path), "%s", p);
    return path;
}


static void grid_runs_and_resumes(void **state)
{
    (void)state;
    const char *sc = sweep_file("grid.json", "{\"execution.checkpointing.interval\": [\"200 ms\", "
                                             "\"500 ms\"], \"cluster.taskmanagers\": [2, 3], "
                                             "\"seeds\": \"1..2\"}");
    char args[600], path[512];
    snprintf(args, sizeof(args), "sweep %s --out %s/sw --jobs 2", sc, tmp);
    assert_chandy("sweep", args, 0);
    /* 2 x 2 points, 2 seeds each: every run finished, with its point's settings. */
    snprintf(path, sizeof(path), "%s/sw/sweep.json", tmp);
    char *text = slurp(path);
    cJSON *sw = cJSON_Parse(text);
    free(text);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sw, "points")), 4);
    const cJSON *r;
    int runs = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(sw, "runs"))
    {
        assert_string_equal(cJSON_GetObjectItem(r, "state")->valuestring, "finished");
        runs++;
    }
    assert_int_equal(runs, 8);
    cJSON_Delete(sw);
    /* Point 4 is the last of each: 500 ms, 3 task managers; seed 2. */
    cJSON *run = load_run("sw/runs/p4-s2");
    assert_int_equal((int)num(run, "job", "taskmanagers"), 3);
    assert_int_equal((int)num(run, "seed", NULL), 2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(run, "config"), "execution.checkpointing.interval")
            ->valuestring,
        "500 ms");
    cJSON_Delete(run);
    run = load_run("sw/runs/p1-s1");
    assert_int_equal((int)num(run, "job", "taskmanagers"), 2);
    cJSON_Delete(run);

    /* The report: one entry per point, over its two seeds. */
    snprintf(path, sizeof(path), "%s/sw/report/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(md);
    assert_int_equal(count_of(md, "(2 runs)"), 4);
    assert_non_null(strstr(md, "#4 execution.checkpointing.interval=500 ms, "
                               "cluster.taskmanagers=3"));
    assert_non_null(strstr(md, "| execution.checkpointing.interval | 200 ms | 200 ms | 500 ms | "
                               "500 ms |"));
    free(md);
    /* At a glance: a bar per point, with whiskers over its two seeds. */
    snprintf(path, sizeof(path), "%s/sw/report/index.html", tmp);
    char *html = slurp(path);
    const char *glance = strstr(html, "id=\"plot-glance-throughput\"");
    assert_non_null(glance);
    char *svg = strndup(glance, (size_t)(strstr(glance, "</svg>") - glance));
    assert_int_equal(count_of(svg, "<g class=\"bar\""), 4);
    assert_int_equal(count_of(svg, "class=\"whisker\""), 4);
    free(svg);
    free(html);
    snprintf(path, sizeof(path), "%s/sw/report/runs.csv", tmp);
    char *csv = slurp(path);
    assert_int_equal(count_of(csv, "\n"), 9); /* a header and every run */
    free(csv);

    /* Resumed: only the missing run runs again. */
    snprintf(path, sizeof(path), "rm -rf %s/sw/runs/p2-s1", tmp);
    assert_int_equal(system(path), 0);
    assert_chandy("resume", args, 0);
    snprintf(path, sizeof(path), "%s/resume.err", tmp);
    char *err = slurp(path);
    assert_non_null(strstr(err, "8 runs, 1 to run"));
    assert_int_equal(count_of(err, "finished in"), 1);
    free(err);
    run = load_run("sw/runs/p2-s1");
    cJSON_Delete(run);

    /* Another sweep in the same directory is refused. */
    const char *other = sweep_file("other.json", "{\"execution.checkpointing.interval\": "
                                                 "[\"300 ms\"]}");
    snprintf(args, sizeof(args), "sweep %s --out %s/sw", other, tmp);
    assert_chandy("other", args, 2);
    snprintf(path, sizeof(path), "%s/other.err", tmp);
    err = slurp(path);
    assert_non_null(strstr(err, "holds another sweep"));
    free(err);
}

static void bad_sweeps_are_named(void **state)
{
    (void)state;
    char args[600], path[512];
    static const struct {
        const char *sweep, *says;
        int validate; /* 1: `chandy validate` catches it; 0: only expanding does */
    } bad[] = {
        {"[1, 2]", "sweep: expected an object", 1},
        {"{\"execution.checkpointing.interval\": \"1 s\"}", "expected a list of 1 to", 1},
        {"{\"seeds\": \"5..2\"}", "seeds: expected a range", 1},
        {"{\"name\": [\"a\"]}", "name: cannot be swept", 1},
        {"{\"no.such.key\": [1]}", "neither a configuration key", 0},
        {"{\"events\": [1]}", "events: cannot be swept", 1},
        {"{\"events.7.at\": [\"1 s\"]}", "expected events.N.field, N an event of the scenario", 0},
        {"{\"cluster.taskmanagers\": [2, 0]}", "sweep point 2 (cluster.taskmanagers=0)", 0},
        {"{\"execution.checkpointing.interval\": [\"soon\"]}", "sweep point 1", 0},
        /* a value that is not UTF-8 text would reach run.json and the report */
        {"{\"execution.checkpointing.interval\": [\"1\xff s\"]}",
         "sweep.execution.checkpointing.interval[0]: expected a string of UTF-8 text", 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "bad%zu.json", i);
        const char *sc = sweep_file(name, bad[i].sweep);
        snprintf(args, sizeof(args), "sweep %s --out %s/bad%zu", sc, tmp, i);
        assert_chandy("bad", args, 2);
        snprintf(path, sizeof(path), "%s/bad.err", tmp);
        char *err = slurp(path);
        if (!strstr(err, bad[i].says))
            fail_msg("sweep %s: expected \"%s\" in: %s", bad[i].sweep, bad[i].says, err);
        assert_non_null(strstr(err, name));
        free(err);
        /* Nothing ran. */
        snprintf(path, sizeof(path), "%s/bad%zu/runs", tmp, i);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
        snprintf(args, sizeof(args), "validate %s", sc);
        assert_chandy("validate", args, bad[i].validate ? 2 : 0);
    }
}

/* The report of an entry of three runs shows the median and the spread. */
static void entries_aggregate_over_seeds(void **state)
{
    (void)state;
    static const double sim[3] = {1, 2, 10};
    const char *paths[3];
    char names[3][32], dirs[3][300];
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof(names[i]), "agg%d", i);
        snprintf(dirs[i], sizeof(dirs[i]), "%s/%s", tmp, names[i]);
        mkdir(dirs[i], 0755);
        char text[600], file[64];
        snprintf(text, sizeof(text),
                 "{\"scenario\": \"agg\", \"backend\": \"simgrid\", \"seed\": %d, "
                 "\"sim_time_s\": %g, \"records_in\": 100, \"config\": {},"
                 " \"timeseries\": [{\"t_s\": 0, \"in_rps\": %g}, {\"t_s\": 1, \"in_rps\": %g}],"
                 " \"correctness\": {\"guarantee\": \"exactly-once\", \"ok\": %s, \"expected\": 10,"
                 " \"received\": 10, \"lost\": %d, \"duplicated\": 0, \"unexpected\": 0}}",
                 i + 1, sim[i], 10.0 * (i + 1), 20.0 * (i + 1), i == 2 ? "false" : "true",
                 i == 2 ? 3 : 0);
        snprintf(file, sizeof(file), "%s/run.json", names[i]);
        assert_non_null(put_file(file, text));
        paths[i] = dirs[i];
    }
    ck_report_entry e = {"a point", paths, 3};
    char out[300], err[600];
    snprintf(out, sizeof(out), "%s/agg-report", tmp);
    assert_int_equal(ck_report_make_entries(&e, 1, out, "aggregated", err, sizeof(err)), 0);
    char path[400];
    snprintf(path, sizeof(path), "%s/summary.md", out);
    char *md = slurp(path);
    assert_non_null(md);
    assert_non_null(strstr(md, "# aggregated"));
    assert_non_null(strstr(md, "#1 a point, agg, simgrid, seeds 1..3 (3 runs)"));
    assert_non_null(strstr(md, "| 2.000 (1.000–10.000) |"));            /* time: median, spread */
    assert_non_null(strstr(md, "| WRONG in 1 of 3 runs | 30 | 30 | 3 |")); /* counts added up */
    free(md);
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = slurp(path);
    /* The throughput's median line, with its spread as a band. */
    assert_int_equal(count_of(html, "class=\"spread\""), 1);
    free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grid_runs_and_resumes),
        cmocka_unit_test(bad_sweeps_are_named),
        cmocka_unit_test(entries_aggregate_over_seeds),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
