/*
 * test_report.c - `chandy report`: two real runs side by side (every plot
 * and table, the right number of series, the configuration that differs
 * and only that), well-formed HTML with nothing fetched, CSV files that
 * hold what the plots draw, errors that name the bad run file, empty
 * series drawn as "none", Flink's published figures next to the runs of
 * their scenario, and the page rendered by headless Chromium with a clean
 * console and no request (scripts/render.sh, the README screenshot's
 * command).
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "report.h"
#include "runutil.h"

/* The text of the <svg> element with id, or of the section from it to the
 * next </svg>: a copy the caller frees. */
static char *svg_of(const char *html, const char *id)
{
    char key[128];
    snprintf(key, sizeof(key), "id=\"%s\"", id);
    const char *a = strstr(html, key);
    if (!a)
        return NULL;
    const char *z = strstr(a, "</svg>");
    if (!z)
        return NULL;
    return strndup(a, (size_t)(z - a));
}

/*
 * A strict check that the page's elements nest: every start tag but the
 * void ones is closed in order, attribute values are quoted, and nothing
 * is left open at the end. Returns NULL, or what is wrong.
 */
static const char *html_check(const char *s, char *why, size_t len)
{
    static const char *const void_tags[] = {"meta", "br", "hr", "img", "input", "link", NULL};
    char stack[256][32];
    int depth = 0;
    const char *p = s;
    if (strncmp(p, "<!DOCTYPE html>", 15))
        return "no <!DOCTYPE html> first";
    p += 15;
    while ((p = strchr(p, '<'))) {
        const char *start = p;
        int closing = p[1] == '/';
        p += closing ? 2 : 1;
        char name[32];
        size_t n = 0;
        while ((isalnum((unsigned char)*p) || *p == '-') && n < sizeof(name) - 1)
            name[n++] = (char)tolower((unsigned char)*p++);
        name[n] = 0;
        if (!n) {
            snprintf(why, len, "a '<' that starts no tag at byte %td", start - s);
            return why;
        }
        /* To the tag's end, over quoted attribute values. */
        int self = 0;
        while (*p && *p != '>') {
            if (*p == '"') {
                const char *q = strchr(p + 1, '"');
                if (!q) {
                    snprintf(why, len, "an unterminated attribute in <%s>", name);
                    return why;
                }
                p = q;
            } else if (*p == '=' && p[1] != '"') {
                snprintf(why, len, "an unquoted attribute in <%s> at byte %td", name, p - s);
                return why;
            }
            self = *p == '/';
            p++;
        }
        if (!*p) {
            snprintf(why, len, "<%s> never ends", name);
            return why;
        }
        p++;
        int is_void = 0;
        for (int i = 0; void_tags[i]; i++)
            is_void |= !strcmp(name, void_tags[i]);
        if (closing) {
            if (!depth || strcmp(stack[depth - 1], name)) {
                snprintf(why, len, "</%s> closes <%s> at byte %td", name,
                         depth ? stack[depth - 1] : "nothing", start - s);
                return why;
            }
            depth--;
        } else if (!self && !is_void) {
            if (depth == 256)
                return "nested too deep";
            snprintf(stack[depth++], sizeof(stack[0]), "%s", name);
            if (!strcmp(name, "style")) { /* text up to </style> */
                p = strstr(p, "</style>");
                if (!p)
                    return "<style> never closed";
            }
        }
    }
    if (depth) {
        snprintf(why, len, "<%s> left open", stack[depth - 1]);
        return why;
    }
    return NULL;
}

/* Lines of a file, and whether each has the header's number of fields
 * (no quoted commas in the files checked here). */
static int csv_rows(const char *path, int *ragged)
{
    char *t = slurp(path);
    assert_non_null(t);
    int rows = 0, cols = -1;
    *ragged = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        int c = 1;
        int quoted = 0;
        for (char *q = line; *q; q++) {
            if (*q == '"')
                quoted = !quoted;
            else if (*q == ',' && !quoted)
                c++;
        }
        if (cols < 0)
            cols = c;
        else if (c != cols)
            (*ragged)++;
        rows++;
    }
    free(t);
    return rows - 1;
}

/* Two real runs of crash-recovery, one with a shorter restart delay. */
static void make_runs(void)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/scenarios/crash-recovery.json");
    assert_non_null(text);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    assert_non_null(sc);
    cJSON *cfg = cJSON_GetObjectItem(sc, "config");
    cJSON_DeleteItemFromObject(cfg, "restart-strategy.fixed-delay.delay");
    cJSON_AddStringToObject(cfg, "restart-strategy.fixed-delay.delay", "200 ms");
    char *out = cJSON_Print(sc);
    const char *path = put_file("fast-restart.json", out);
    assert_non_null(path);
    free(out);
    cJSON_Delete(sc);
    char args[512];
    snprintf(args, sizeof(args), "run scenarios/crash-recovery.json --out %s/a --quiet", tmp);
    assert_chandy("run-a", args, 0);
    snprintf(args, sizeof(args), "run %s/fast-restart.json --out %s/b --quiet", tmp, tmp);
    assert_chandy("run-b", args, 0);
}

static void two_runs_side_by_side(void **state)
{
    (void)state;
    make_runs();
    char args[512], path[512];
    snprintf(args, sizeof(args), "report %s/a %s/b -o %s/rep", tmp, tmp, tmp);
    assert_chandy("report", args, 0);
    snprintf(path, sizeof(path), "%s/rep/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);

    /* Every plot, with a series per run and metric. */
    static const struct {
        const char *id;
        int series;
    } plots[] = {
        {"plot-checkpoint-duration", 4}, /* duration and alignment, per run */
        {"plot-checkpoint-size", 2},     /* full snapshots, per run */
        {"plot-throughput", 4},          /* in and out */
        {"plot-latency", 4},             /* p50 and p99 */
    };
    for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++) {
        char *svg = svg_of(html, plots[i].id);
        assert_non_null(svg);
        assert_int_equal(count_of(svg, "<g class=\"series\""), plots[i].series);
        assert_true(count_of(svg, "<polyline") >= plots[i].series);
        assert_null(strstr(svg, "class=\"none\""));
        free(svg);
    }
    /* The crash, shared by both runs, shaded once on each time plot. */
    char *svg = svg_of(html, "plot-throughput");
    assert_int_equal(count_of(svg, "class=\"band\""), 1);
    assert_non_null(strstr(svg, "crash tm0"));
    free(svg);
    /* One recovery each, in four phases; the restart phases differ as the delays. */
    svg = svg_of(html, "plot-recovery");
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<g class=\"bar\""), 2);
    assert_non_null(strstr(svg, "restart: 0.5"));
    assert_non_null(strstr(svg, "restart: 0.2"));
    free(svg);
    /* Three vertices, a bar per run each, in three shares. */
    svg = svg_of(html, "plot-vertices");
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<g class=\"bar\""), 6);
    assert_int_equal(count_of(svg, "busy: "), 6);
    free(svg);

    /* The tables; the configuration table lists the one key that differs. */
    static const char *const captions[] = {
        "Runs", "Configuration that differs between the entries", "Checkpoints (completed",
        "Throughput and end-to-end latency", "Recoveries", "Correctness of the output",
        "Published Flink figures"};
    for (size_t i = 0; i < sizeof(captions) / sizeof(captions[0]); i++)
        assert_non_null(strstr(html, captions[i]));
    const char *cfg = strstr(html, "Configuration that differs");
    const char *cfg_end = strstr(cfg, "</table>");
    char *cfg_table = strndup(cfg, (size_t)(cfg_end - cfg));
    assert_non_null(strstr(cfg_table, "restart-strategy.fixed-delay.delay"));
    assert_non_null(strstr(cfg_table, "200 ms"));
    assert_int_equal(count_of(cfg_table, "<tr>"), 2); /* the header and the one key */
    free(cfg_table);
    /* Runs are named with what differs. */
    assert_non_null(strstr(html, "#2 crash-recovery, simgrid, seed 42, "
                                 "restart-strategy.fixed-delay.delay=200 ms"));
    assert_non_null(strstr(html, "correct</td>"));

    /* Well-formed, and nothing to fetch: no script, no external resource. */
    char why[200];
    const char *bad = html_check(html, why, sizeof(why));
    if (bad)
        fail_msg("index.html: %s", bad);
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, " src="));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "url("));
    assert_null(strstr(html, "@import"));
    free(html);

    /* The Markdown has the same tables. */
    snprintf(path, sizeof(path), "%s/rep/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(md);
    assert_non_null(strstr(md, "| restart-strategy.fixed-delay.delay | 500 ms | 200 ms |"));
    assert_non_null(strstr(md, "**Recoveries**"));
    /* crash-recovery's job is one region: its 8 subtasks restart. */
    assert_non_null(strstr(md, "| 5 | 8 of 8 |"));
    free(md);

    /* The CSV files hold the points the plots draw. */
    cJSON *a = load_run("a"), *b = load_run("b");
    int ragged;
    snprintf(path, sizeof(path), "%s/rep/timeseries.csv", tmp);
    assert_int_equal(csv_rows(path, &ragged),
                     cJSON_GetArraySize(cJSON_GetObjectItem(a, "timeseries")) +
                         cJSON_GetArraySize(cJSON_GetObjectItem(b, "timeseries")));
    assert_int_equal(ragged, 0);
    snprintf(path, sizeof(path), "%s/rep/checkpoints.csv", tmp);
    assert_int_equal(csv_rows(path, &ragged),
                     cJSON_GetArraySize(cJSON_GetObjectItem(a, "checkpoints")) +
                         cJSON_GetArraySize(cJSON_GetObjectItem(b, "checkpoints")));
    assert_int_equal(ragged, 0);
    snprintf(path, sizeof(path), "%s/rep/recoveries.csv", tmp);
    assert_int_equal(csv_rows(path, &ragged), 2);
    assert_int_equal(ragged, 0);
    static const char *const others[] = {"runs.csv", "vertices.csv", "faults.csv"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/rep/%s", tmp, others[i]);
        assert_true(csv_rows(path, &ragged) >= 2);
        assert_int_equal(ragged, 0);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void rendered_by_chromium(void **state)
{
    (void)state;
    char args[700], path[512];
    snprintf(path, sizeof(path), "%s/rep/index.html", tmp);
    if (access(path, R_OK)) { /* run alone: make the report first */
        make_runs();
        snprintf(args, sizeof(args), "report %s/a %s/b -o %s/rep", tmp, tmp, tmp);
        assert_chandy("report", args, 0);
    }
    render_ok(path, "shot.png");
    char cmd[1400];
    int st;
    snprintf(path, sizeof(path), "%s/shot.png", tmp);
    char *png = slurp(path);
    assert_non_null(png);
    assert_memory_equal(png, "\x89PNG", 4);
    free(png);
    /* The check can fail: a page that logs and fetches does. */
    const char *bad = put_file("bad.html", "<!DOCTYPE html><html><body>"
                                           "<img src=\"http://example.com/x.png\">"
                                           "<script>console.error('boom')</script></body></html>");
    snprintf(cmd, sizeof(cmd), "%s/scripts/render.sh %s %s/bad.png > %s/bad.out 2>&1",
             CHANDY_SOURCE_DIR, bad, tmp, tmp);
    st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    snprintf(path, sizeof(path), "%s/bad.out", tmp);
    char *out = slurp(path);
    assert_non_null(strstr(out, "logged to the console"));
    assert_non_null(strstr(out, "http://example.com/x.png"));
    free(out);
}

/* A run.json with nothing in its series: no checkpoints, recoveries,
 * faults, time series or vertices. */
static const char empty_run[] =
    "{\"scenario\": \"empty\", \"backend\": \"simgrid\", \"seed\": 1, \"sim_time_s\": 0,"
    " \"checkpoints\": [], \"recoveries\": [], \"timeseries\": [], \"faults\": [],"
    " \"job\": {\"state\": \"FINISHED\", \"vertices\": []}, \"config\": {}}";

static void empty_series_are_none(void **state)
{
    (void)state;
    char args[512], path[512];
    snprintf(path, sizeof(path), "%s/empty", tmp);
    mkdir(path, 0755);
    assert_non_null(put_file("empty/run.json", empty_run));
    snprintf(args, sizeof(args), "report %s/empty -o %s/rep-empty", tmp, tmp);
    assert_chandy("report-empty", args, 0);
    snprintf(path, sizeof(path), "%s/rep-empty/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    static const char *const ids[] = {"plot-checkpoint-duration", "plot-checkpoint-size",
                                      "plot-throughput", "plot-latency", "plot-recovery",
                                      "plot-vertices"};
    for (size_t i = 0; i < 6; i++) {
        char *svg = svg_of(html, ids[i]);
        assert_non_null(svg);
        assert_non_null(strstr(svg, ">none</text>"));
        free(svg);
    }
    char why[200];
    assert_null(html_check(html, why, sizeof(why)));
    free(html);
}

static void bad_run_files_are_named(void **state)
{
    (void)state;
    char args[700], path[512];
    /* Missing. */
    snprintf(args, sizeof(args), "report %s/nowhere -o %s/rep-x", tmp, tmp);
    assert_chandy("missing", args, 1);
    snprintf(path, sizeof(path), "%s/missing.err", tmp);
    char *err = slurp(path);
    assert_non_null(strstr(err, "/nowhere: cannot read: No such file"));
    free(err);
    /* Malformed: the line and column of the damage. */
    const char *bad = put_file("broken.json", "{\"scenario\": \"x\",\n \"seed\": ,\n}");
    snprintf(args, sizeof(args), "report %s -o %s/rep-x", bad, tmp);
    assert_chandy("broken", args, 1);
    snprintf(path, sizeof(path), "%s/broken.err", tmp);
    err = slurp(path);
    assert_non_null(strstr(err, "broken.json:2:"));
    assert_non_null(strstr(err, "not valid JSON"));
    free(err);
    /* JSON, but not a run. */
    bad = put_file("other.json", "{\"name\": \"a scenario, not a run\"}");
    snprintf(args, sizeof(args), "report %s -o %s/rep-x", bad, tmp);
    assert_chandy("other", args, 1);
    snprintf(path, sizeof(path), "%s/other.err", tmp);
    err = slurp(path);
    assert_non_null(strstr(err, "other.json: not a run.json"));
    free(err);
    /* No output directory. */
    snprintf(args, sizeof(args), "report %s/empty", tmp);
    assert_chandy("noout", args, 2);
}

static void published_figures_beside_their_scenario(void **state)
{
    (void)state;
    /* Every published figure names its scenario, metric, value and source. */
    cJSON *pub = cJSON_Parse(ck_report_published());
    assert_non_null(pub);
    const cJSON *f;
    int n = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(pub, "figures"))
    {
        static const char *const fields[] = {"scenario", "figure", "metric", "unit", "source"};
        for (size_t i = 0; i < 5; i++)
            assert_true(cJSON_IsString(cJSON_GetObjectItem(f, fields[i])));
        assert_true(cJSON_IsNumber(cJSON_GetObjectItem(f, "flink")));
        /* ...of a scenario that exists */
        char sc[400];
        snprintf(sc, sizeof(sc), "%s/scenarios/%s.json", CHANDY_SOURCE_DIR,
                 cJSON_GetObjectItem(f, "scenario")->valuestring);
        if (access(sc, R_OK))
            fail_msg("published figure of a scenario that does not exist: %s", sc);
        n++;
    }
    assert_true(n >= 3);
    cJSON_Delete(pub);
    char args[512], path[512];
    snprintf(path, sizeof(path), "%s/debloat", tmp);
    mkdir(path, 0755);
    assert_non_null(put_file("debloat/run.json",
                             "{\"scenario\": \"exchanges-2\", \"backend\": "
                             "\"simgrid\", \"seed\": 3, \"checkpoint_summary\": "
                             "{\"duration_p50_s\": 0.9125}, \"config\": "
                             "{\"execution.checkpointing.unaligned.enabled\": false, "
                             "\"taskmanager.network.memory.buffer-debloat.enabled\": true, "
                             "\"taskmanager.network.memory.buffer-debloat.target\": "
                             "\"300 ms\"}}"));
    snprintf(args, sizeof(args), "report %s/debloat %s/empty -o %s/rep-pub", tmp, tmp, tmp);
    assert_chandy("report-pub", args, 0);
    snprintf(path, sizeof(path), "%s/rep-pub/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(md);
    assert_non_null(strstr(md, "| #1 | aligned checkpoint duration"));
    assert_non_null(strstr(md, "878.7 ± 71 ms | 912.5 ms | flink-benchmarks"));
    assert_null(strstr(md, "| #2 | aligned checkpoint duration")); /* another scenario */
    /* The unaligned figure is for the same scenario run unaligned: not this run. */
    assert_null(strstr(md, "unaligned checkpoint duration"));
    free(md);
}

/* A run.json for the fidelity report: one checkpoint and one recovery. */
static const char *fid_run(const char *dir, const char *backend, double cp_s, double detect_s,
                           double tput)
{
    static char paths[4][300];
    static int next;
    char text[1200], file[300];
    snprintf(text, sizeof(text),
             "{\"scenario\": \"fid\", \"backend\": \"%s\", \"seed\": 1, \"sim_time_s\": 10,"
             " \"throughput_in_rps\": %g, \"config\": {},"
             " \"checkpoints\": [{\"id\": 1, \"kind\": \"checkpoint\", \"status\": \"completed\","
             " \"trigger_s\": 1, \"duration_s\": %g, \"alignment_max_s\": 0.001, \"bytes\": 10}],"
             " \"recoveries\": [{\"failure_s\": 4, \"detected_s\": %g, \"restarted_s\": %g,"
             " \"restored_s\": %g, \"caught_up_s\": %g, \"recovery_s\": %g}]}",
             backend, tput, cp_s, 4 + detect_s, 4.5 + detect_s, 4.6 + detect_s, 5 + detect_s,
             1 + detect_s);
    char d[300];
    snprintf(d, sizeof(d), "%s/%s", tmp, dir);
    mkdir(d, 0755);
    snprintf(file, sizeof(file), "%s/run.json", dir);
    assert_non_null(put_file(file, text));
    char *p = paths[next++ % 4];
    snprintf(p, 300, "%s", d);
    return p;
}

/* The row of figure name in a Markdown table, or NULL. */
static char *md_row(const char *md, const char *name)
{
    char key[200];
    snprintf(key, sizeof(key), "| %s", name);
    const char *a = strstr(md, key);
    if (!a)
        return NULL;
    const char *z = strchr(a, '\n');
    return strndup(a, z ? (size_t)(z - a) : strlen(a));
}

static void fidelity_verdicts(void **state)
{
    (void)state;
    char err[600], out[300];
    snprintf(out, sizeof(out), "%s/fid", tmp);
    /* 100 ms against 120 ms: within 25 %; detection 0 against 15 ms: under
     * its 20 ms floor; throughput 1000 against 500: differs. */
    const char *sim = fid_run("fid-sim", "simgrid", 0.100, 0, 1000);
    const char *real = fid_run("fid-real", "sockets", 0.120, 0.015, 500);
    assert_int_equal(ck_report_fidelity(sim, real, out, 0.25, err, sizeof(err)), 0);
    char path[400];
    snprintf(path, sizeof(path), "%s/summary.md", out);
    char *md = slurp(path);
    assert_non_null(md);
    char *row = md_row(md, "checkpoint duration p50 (ms)");
    assert_non_null(strstr(row, "| 100 | 120 | 1.20 | agree |"));
    free(row);
    row = md_row(md, "recovery: detection (s)");
    assert_non_null(strstr(row, "| 0 | 0.015 | inf | agree (within 0.02 s) |"));
    free(row);
    row = md_row(md, "recovery: restart (s)");
    assert_non_null(strstr(row, "| agree |"));
    free(row);
    row = md_row(md, "throughput in (records/s)");
    assert_non_null(strstr(row, "| 1000 | 500 | 0.50 | DIFFER |"));
    free(row);
    row = md_row(md, "latency p50 (ms)");
    assert_non_null(strstr(row, "n/a (neither has it)"));
    free(row);
    free(md);
    snprintf(path, sizeof(path), "%s/fidelity.csv", out);
    char *csv = slurp(path);
    assert_non_null(strstr(csv, "throughput in,records/s,1000,500,0.5,DIFFER"));
    free(csv);
    snprintf(path, sizeof(path), "%s/report/index.html", out);
    assert_int_equal(access(path, R_OK), 0);
    /* A narrower band: 20 % off now differs. */
    snprintf(out, sizeof(out), "%s/fid-narrow", tmp);
    assert_int_equal(ck_report_fidelity(sim, real, out, 0.1, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/summary.md", out);
    md = slurp(path);
    row = md_row(md, "checkpoint duration p50 (ms)");
    assert_non_null(strstr(row, "| 1.20 | DIFFER |"));
    free(row);
    free(md);
    /* Two simulated runs are not a fidelity report. */
    assert_int_equal(ck_report_fidelity(sim, sim, out, 0.25, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "expected a simgrid run and a sockets run"));
}

/* The command: a short scenario under SimGrid and over sockets. */
static void fidelity_command(void **state)
{
    (void)state;
    char args[600], path[400];
    snprintf(args, sizeof(args), "fidelity tests/scenarios/small-cp.json --out %s/fc", tmp);
    assert_chandy("fidelity", args, 0);
    cJSON *sim = load_run("fc/sim"), *real = load_run("fc/real");
    assert_string_equal(cJSON_GetObjectItem(sim, "backend")->valuestring, "simgrid");
    assert_string_equal(cJSON_GetObjectItem(real, "backend")->valuestring, "sockets");
    snprintf(path, sizeof(path), "%s/fc/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(md);
    /* The simulated side is the SimGrid run's own figure. */
    char want[80];
    snprintf(want, sizeof(want), "| %.4g |", num(sim, "throughput_in_rps", NULL));
    char *row = md_row(md, "throughput in (records/s)");
    assert_non_null(strstr(row, want));
    free(row);
    assert_int_equal(count_of(md, "| recovery: "), 5); /* no crash: n/a, but listed */
    assert_non_null(strstr(md, "figures agree"));
    free(md);
    cJSON_Delete(sim);
    cJSON_Delete(real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_runs_side_by_side),
        cmocka_unit_test(rendered_by_chromium),
        cmocka_unit_test(empty_series_are_none),
        cmocka_unit_test(bad_run_files_are_named),
        cmocka_unit_test(published_figures_beside_their_scenario),
        cmocka_unit_test(fidelity_verdicts),
        cmocka_unit_test(fidelity_command),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
