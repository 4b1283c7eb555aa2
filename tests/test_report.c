/*
 * test_report.c - `chandy report`: two real runs side by side (every plot
 * and table, the right number of series, the configuration that differs
 * and only that), well-formed HTML with nothing fetched, CSV files that
 * hold what the plots draw, errors that name the bad run file, empty
 * series drawn as "none", Flink's published figures next to the runs of
 * their scenario, and the page rendered by headless Chromium with a clean
 * console and no request (scripts/render.sh, the README screenshot's
 * command). Hostile run.json files (extreme numbers, markup, formulas)
 * give finite charts and inert text; the size chart draws each kind a
 * real run has; rescales are drawn as bars of their phases, one per
 * rescale that ran, with a table row each, in a run's report and in a
 * suite's (the numbers read back from the page agree with run.json); and
 * every name the report looks up in a run.json is one real run.json files
 * hold and docs/RUN-JSON.md names.
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <strings.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plot.h"
#include "report.h"
#include "runfile.h"
#include "runutil.h"
#include "summary.h"

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



/* ---- the report reads the names run.json is written with -------------------- */

/*
 * Every lookup reports/ makes in a run.json tree is recorded here: the
 * accessors of runfile.h are wrapped at link time (CMakeLists.txt:
 * -Wl,--wrap), and each lookup becomes a pair "context/key", the context
 * being the key of the object it looks in ("" at the top level,
 * "checkpoints[]" for an element of "checkpoints"). The pairs of the real
 * run.json files the report loads are recorded too; a lookup whose pair
 * no real file has asks for a name the writer does not write.
 */
typedef struct nameset {
    char **v;
    size_t n, cap;
} nameset;

static int names_has(const nameset *s, const char *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], k))
            return 1;
    return 0;
}

static void names_put(nameset *s, const char *k)
{
    if (names_has(s, k))
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = strdup(k);
}

static void names_free(nameset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    *s = (nameset){0};
}

/* The nodes of the run.json trees loaded while tracing, with their
 * contexts (an open-addressed table; a freed tree's nodes are forgotten). */
#define NODES (1u << 20)
static struct {
    const cJSON *node;
    char *ctx;
} *nodes;
static int tracing;
static nameset schema, asked;

static size_t node_slot(const cJSON *n)
{
    size_t h = ((uintptr_t)n >> 4) * 0x9E3779B97F4A7C15ull;
    for (size_t i = h & (NODES - 1);; i = (i + 1) & (NODES - 1))
        if (!nodes[i].node || nodes[i].node == n)
            return i;
}

static void walk(const cJSON *n, const char *ctx, int add)
{
    size_t i = node_slot(n);
    free(nodes[i].ctx);
    nodes[i].node = n;
    nodes[i].ctx = add ? strdup(ctx) : NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, n)
    {
        char sub[300];
        if (cJSON_IsArray(n)) {
            snprintf(sub, sizeof(sub), "%s[]", ctx);
        } else {
            snprintf(sub, sizeof(sub), "%s/%s", ctx, c->string);
            if (add)
                names_put(&schema, sub);
            snprintf(sub, sizeof(sub), "%s", c->string);
        }
        walk(c, sub, add);
    }
}

/* A lookup of k (a dotted path) in o, if o is a node of a run.json. */
static void ask(const cJSON *o, const char *k)
{
    if (!tracing || !o || !k)
        return;
    const char *ctx = nodes[node_slot(o)].ctx;
    if (!ctx)
        return; /* not a run.json's: published.json, a scenario */
    char cur[300], part[128], pair[500];
    snprintf(cur, sizeof(cur), "%s", ctx);
    for (const char *p = k; *p;) {
        size_t n = strcspn(p, ".");
        snprintf(part, sizeof(part), "%.*s", (int)(n < 127 ? n : 127), p);
        p += n + (p[n] == '.');
        if (strspn(part, "0123456789") == strlen(part)) {
            strncat(cur, "[]", sizeof(cur) - strlen(cur) - 1);
            continue;
        }
        snprintf(pair, sizeof(pair), "%s/%s", cur, part);
        names_put(&asked, pair);
        snprintf(cur, sizeof(cur), "%s", part);
    }
}

const cJSON *__real_ck_rf_get(const cJSON *o, const char *k);
double __real_ck_rf_num(const cJSON *o, const char *k, double def);
const char *__real_ck_rf_str(const cJSON *o, const char *k);
int __real_ck_rf_bool(const cJSON *o, const char *k);
const cJSON *__real_ck_rf_arr(const cJSON *o, const char *k);
int __real_ck_rf_has_num(const cJSON *o, const char *k);
int __real_ck_runfile_load(ck_runfile *rf, const char *path, char *err, size_t errlen);
void __real_ck_runfile_free(ck_runfile *rf);
const cJSON *__wrap_ck_rf_get(const cJSON *o, const char *k);
double __wrap_ck_rf_num(const cJSON *o, const char *k, double def);
const char *__wrap_ck_rf_str(const cJSON *o, const char *k);
int __wrap_ck_rf_bool(const cJSON *o, const char *k);
const cJSON *__wrap_ck_rf_arr(const cJSON *o, const char *k);
int __wrap_ck_rf_has_num(const cJSON *o, const char *k);
int __wrap_ck_runfile_load(ck_runfile *rf, const char *path, char *err, size_t errlen);
void __wrap_ck_runfile_free(ck_runfile *rf);

const cJSON *__wrap_ck_rf_get(const cJSON *o, const char *k)
{
    ask(o, k);
    return __real_ck_rf_get(o, k);
}

double __wrap_ck_rf_num(const cJSON *o, const char *k, double def)
{
    ask(o, k);
    return __real_ck_rf_num(o, k, def);
}

const char *__wrap_ck_rf_str(const cJSON *o, const char *k)
{
    ask(o, k);
    return __real_ck_rf_str(o, k);
}

int __wrap_ck_rf_bool(const cJSON *o, const char *k)
{
    ask(o, k);
    return __real_ck_rf_bool(o, k);
}

const cJSON *__wrap_ck_rf_arr(const cJSON *o, const char *k)
{
    ask(o, k);
    return __real_ck_rf_arr(o, k);
}

int __wrap_ck_rf_has_num(const cJSON *o, const char *k)
{
    ask(o, k);
    return __real_ck_rf_has_num(o, k);
}

int __wrap_ck_runfile_load(ck_runfile *rf, const char *path, char *err, size_t errlen)
{
    int rc = __real_ck_runfile_load(rf, path, err, errlen);
    if (!rc && tracing)
        walk(rf->root, "", 1);
    return rc;
}

void __wrap_ck_runfile_free(ck_runfile *rf)
{
    if (tracing && rf->root)
        walk(rf->root, "", 0);
    __real_ck_runfile_free(rf);
}

/* Runs scenario (a path from the source tree) into <tmp>/<dir> unless
 * an earlier test did. */
static void run_once(const char *scenario, const char *dir, const char *extra)
{
    char path[400], args[700];
    snprintf(path, sizeof(path), "%s/%s/run.json", tmp, dir);
    if (!access(path, R_OK))
        return;
    snprintf(args, sizeof(args), "run %s --out %s/%s --quiet %s", scenario, tmp, dir,
             extra ? extra : "");
    assert_chandy(dir, args, 0);
}

/* ---- hostile run.json files: extreme numbers, markup, formulas ----------------- */

/* Every attribute value inside the <svg> elements of html: 1 when one of
 * them holds NaN or infinity as a number ("nan", "-nan", "inf"), which
 * Chromium rejects. */
static int svg_has_nonfinite(const char *html, char *what, size_t len)
{
    const char *p = html;
    while ((p = strstr(p, "<svg"))) {
        const char *end = strstr(p, "</svg>");
        if (!end)
            return 1;
        for (const char *a = p; (a = strstr(a, "=\"")) && a < end;) {
            a += 2;
            const char *z = strchr(a, '"');
            if (!z || z > end)
                break;
            for (const char *t = a; t < z; t++) {
                int start = t == a || t[-1] == ' ' || t[-1] == ',' || t[-1] == '-';
                if (start && (strncasecmp(t, "nan", 3) == 0 || strncasecmp(t, "inf", 3) == 0) &&
                    (t + 3 == z || !isalpha((unsigned char)t[3]))) {
                    snprintf(what, len, "%.*s", (int)(z - a < 200 ? z - a : 200), a);
                    return 1;
                }
            }
            a = z + 1;
        }
        p = end;
    }
    return 0;
}

/* A run whose every figure is as large, as small or as negative as a
 * double goes: every chart has a point, a bar or a band of it. */
static const char extreme_run[] =
    "{\"scenario\": \"extreme\", \"backend\": \"simgrid\", \"seed\": 1e308, \"sim_time_s\": 1e308,"
    " \"wall_time_s\": -1e308, \"throughput_in_rps\": 1e308, \"throughput_out_rps\": -1e308,"
    " \"records_in\": 1e308, \"latency_ms\": {\"p50\": 1e-308, \"p99\": 1e308, \"max\": -1e308},"
    " \"checkpoint_summary\": {\"duration_p50_s\": 1e308, \"bytes_p50\": -1e308},"
    " \"checkpoints\": ["
    "  {\"id\": 1, \"kind\": \"checkpoint\", \"status\": \"completed\", \"trigger_s\": -1e308,"
    "   \"duration_s\": 1e308, \"alignment_max_s\": 1e-308, \"bytes\": 1e308, \"bytes_full\": 1e308,"
    "   \"bytes_incremental\": -1e308, \"bytes_changelog\": 1e-308, \"persisted_inflight_bytes\": 1e308},"
    "  {\"id\": 2, \"kind\": \"checkpoint\", \"status\": \"completed\", \"trigger_s\": 1e308,"
    "   \"duration_s\": -1e308, \"alignment_max_s\": -1e308, \"bytes\": 1e-308, \"bytes_full\": -1e308},"
    "  {\"id\": 3, \"kind\": \"checkpoint\", \"status\": \"completed\", \"trigger_s\": 1e-308,"
    "   \"duration_s\": 1e-308, \"alignment_max_s\": 1e-308, \"bytes\": 1e-308, \"bytes_full\": 1e-308}],"
    " \"recoveries\": [{\"failure_s\": -1e308, \"detected_s\": 1e308, \"restarted_s\": 1e-308,"
    "  \"restored_s\": 1e308, \"caught_up_s\": -1e308, \"recovery_s\": 1e308, \"checkpoint\": 1e308,"
    "  \"restore\": {\"download_s\": 1e308, \"replay_s\": -1e308}}],"
    " \"rescales\": [{\"via\": \"savepoint\", \"outcome\": \"done\", \"trigger_s\": 0,"
    "  \"snapshot_s\": 1e296, \"stopped_s\": 1e308, \"deployed_s\": -1e308, \"restored_s\": 1e-308,"
    "  \"caught_up_s\": 1e308, \"rescale_s\": 1e308, \"parallelism_before\": {\"v\": 1e308},"
    "  \"parallelism_after\": {\"v\": -1e308},"
    "  \"restore\": {\"download_s\": 1e308, \"rebuild_s\": -1e308, \"bytes\": 1e308}}],"
    " \"materializations\": [{\"bytes\": 1e308}, {\"bytes\": 1e308}],"
    " \"timeseries\": [{\"t_s\": -1e308, \"in_rps\": 1e308, \"out_rps\": -1e308,"
    "  \"latency_p50_ms\": 1e-308, \"latency_p99_ms\": 1e308, \"inflight_bytes\": 1e308,"
    "  \"buffer_size_bytes\": -1e308, \"vertex_backpressured_ratio\": {\"v\": 1e308}},"
    "  {\"t_s\": 1e308, \"in_rps\": 1e-308, \"out_rps\": 1e-308, \"inflight_bytes\": 1e-308},"
    "  {\"t_s\": 1e-308, \"in_rps\": -1e-308, \"out_rps\": 0, \"latency_p50_ms\": 2,"
    "   \"latency_p99_ms\": 1e300}],"
    " \"faults\": [{\"action\": \"crash\", \"host\": \"tm0\", \"at_s\": -1e308, \"ended_s\": 1e308},"
    "  {\"action\": \"slow\", \"host\": \"tm1\", \"at_s\": 1e-308, \"ended_s\": 1e308}],"
    " \"job\": {\"state\": \"FINISHED\", \"subtasks\": 1e308, \"vertices\": [{\"name\": \"v\","
    "  \"parallelism\": 1e308, \"busy_ratio\": 1e308, \"backpressured_ratio\": -1e308,"
    "  \"idle_ratio\": 1e-308}, {\"name\": \"w\", \"busy_ratio\": 1e-308,"
    "  \"backpressured_ratio\": 1e308, \"idle_ratio\": -1e308}]},"
    " \"correctness\": {\"ok\": true, \"guarantee\": \"exactly-once\", \"expected\": 1e308,"
    "  \"received\": 1e308, \"lost\": -1e308}, \"config\": {\"k\": 1e308}}";

static void extreme_numbers_draw_finite(void **state)
{
    (void)state;
    char path[512], what[256];
    snprintf(path, sizeof(path), "%s/extreme", tmp);
    mkdir(path, 0755);
    assert_non_null(put_file("extreme/run.json", extreme_run));
    snprintf(path, sizeof(path), "%s/extreme2", tmp);
    mkdir(path, 0755);
    assert_non_null(put_file("extreme2/run.json", extreme_run));
    /* Two entries (the glance charts), one of them of two runs (spreads). */
    char a[300], b[300], out[300], err[600];
    snprintf(a, sizeof(a), "%s/extreme", tmp);
    snprintf(b, sizeof(b), "%s/extreme2", tmp);
    const char *both[2] = {a, b};
    ck_report_entry e[2] = {{NULL, both, 1}, {"two runs", both, 2}};
    snprintf(out, sizeof(out), "%s/rep-extreme", tmp);
    if (ck_report_make_entries(e, 2, out, NULL, err, sizeof(err)))
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = slurp(path);
    assert_non_null(html);
    if (svg_has_nonfinite(html, what, sizeof(what)))
        fail_msg("a chart holds a number that is not one: \"%s\"", what);
    /* Every chart was drawn from something (none is empty). */
    static const char *const ids[] = {"plot-checkpoint-duration", "plot-checkpoint-size",
                                      "plot-throughput", "plot-latency", "plot-vertices",
                                      "plot-rescale"};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char *svg = svg_of(html, ids[i]);
        assert_non_null(svg);
        if (strstr(svg, "class=\"none\""))
            fail_msg("%s drew nothing", ids[i]);
        free(svg);
    }
    /* A number too long for a table cell is written short, not cut. */
    assert_non_null(strstr(html, "1e+308"));
    char why[200];
    const char *bad = html_check(html, why, sizeof(why));
    if (bad)
        fail_msg("index.html: %s", bad);
    free(html);
    /* Chromium takes the page: nothing on its console. */
    render_ok(path, "extreme.png");
    /* The plot functions themselves, with no report around them. */
    ck_sb sb = {0};
    double xs[4] = {-1e308, 1e-308, 1e308, 5e-324}, ys[4] = {1e308, -1e308, 1e-308, 5e-324};
    ck_plot_series se = {"s", 0, CK_PLOT_SOLID, xs, ys, ys, ys, 4};
    ck_plot_band bd = {-1e308, 1e308, "band", -1};
    ck_plot_xy_svg(&sb, &(ck_plot_xy){.title = "t", .xlabel = "x", .ylabel = "y",
                                      .series = &se, .nseries = 1, .bands = &bd, .nbands = 1,
                                      .lines = 1});
    double seg[3] = {1e308, 1e308, 5e-324};
    ck_plot_bar bar = {NULL, "b", 0, seg, 1, -1e308, 1e308};
    static const char *const names[3] = {"a", "b", "c"};
    ck_plot_bars_svg(&sb, &(ck_plot_bars){.title = "t", .ylabel = "y", .seg_names = names,
                                          .nseg = 3, .bars = &bar, .nbars = 1});
    assert_false(sb.oom);
    if (svg_has_nonfinite(sb.p, what, sizeof(what)))
        fail_msg("a chart holds a number that is not one: \"%s\"", what);
    ck_sb_free(&sb);
    /* Ticks over a span no double can divide: none, not a loop or NaN. */
    double t[16];
    assert_int_equal(ck_plot_ticks(-1e308, 1e308, 9, t), 0);
    assert_int_equal(ck_plot_ticks(0, 5e-324, 9, t), 0);
    assert_int_equal(ck_plot_ticks(0, 1, 6, t), 6);
}

/* Strings from a run.json and a suite file go into Markdown as text and
 * into CSV as text: no markup, no formula. */
static const char hostile_run[] =
    "{\"scenario\": \"=HYPERLINK(\\\"http://x.test/\\\",\\\"open\\\")<img src=x onerror=alert(1)>|a|\","
    " \"backend\": \"+sockets\","
    " \"seed\": 3, \"sim_time_s\": 2, \"config\": {},"
    " \"checkpoints\": [{\"id\": 1, \"kind\": \"@checkpoint\", \"status\": \"-completed\","
    "  \"trigger_s\": -1.5, \"duration_s\": 0.01, \"bytes\": 10}],"
    " \"timeseries\": [{\"t_s\": -1, \"in_rps\": -2.5e3, \"out_rps\": 3}],"
    " \"faults\": [{\"action\": \"\\tcrash\", \"host\": \"\\rtm0\", \"at_s\": 1, \"ended_s\": 1.5}],"
    " \"job\": {\"state\": \"-2\", \"vertices\": [{\"name\": \"<img src=x onerror=alert(1)>|a|\","
    "  \"parallelism\": 1, \"busy_ratio\": 0.5}, {\"name\": \"-7.25e-3\", \"busy_ratio\": 0.1},"
    "  {\"name\": \"--1\", \"busy_ratio\": 0.1}]}}";

/* The CSV field of row `row` (0: the header), column col of text, unquoted
 * as a spreadsheet reads it: a copy the caller frees. */
static char *csv_field(const char *text, int row, int col)
{
    const char *p = text;
    for (int r = 0; r < row && p; r++) { /* no line break within a field here */
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    assert_non_null(p);
    char *out = calloc(1, strlen(p) + 1);
    size_t n = 0;
    int c = 0, quoted = 0;
    for (; *p && *p != '\n'; p++) {
        if (quoted) {
            if (*p == '"' && p[1] == '"')
                out[c == col ? n++ : n] = '"', p++;
            else if (*p == '"')
                quoted = 0;
            else if (c == col)
                out[n++] = *p;
        } else if (*p == '"') {
            quoted = 1;
        } else if (*p == ',') {
            c++;
        } else if (c == col) {
            out[n++] = *p;
        }
    }
    return out;
}

static void strings_are_text_in_markdown_and_csv(void **state)
{
    (void)state;
    char path[512], out[300], err[600], dir[300];
    snprintf(dir, sizeof(dir), "%s/hostile", tmp);
    mkdir(dir, 0755);
    assert_non_null(put_file("hostile/run.json", hostile_run));
    const char *runs[1] = {dir};
    ck_report_entry e = {"`[click](http://x.test)` <b>*bold*</b> | ~~gone~~ $x$", runs, 1};
    ck_report_section sec = {
        "# a heading? <script>alert(1)</script>",
        "<iframe src=\"http://x.test/\"></iframe> | a | b | [link](http://x.test) ![i](http://x.test/i.png)",
        "c1", "vertices", &e, 1};
    snprintf(out, sizeof(out), "%s/rep-hostile", tmp);
    if (ck_report_index(&sec, 1, out, "- a list? <b>", "1. a list? & <i>", err, sizeof(err)))
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/summary.md", out);
    char *md = slurp(path);
    assert_non_null(md);
    /* Nothing GitHub would turn into HTML, a link or an image. */
    for (const char *p = md; *p; p++) {
        if (!strncmp(p, "\nThe full report: `", 19)) /* our own line: a code span */
            p = strchr(p + 1, '\n');
        if (!p)
            break;
        if (strchr("<>[]`*|~$&", *p) && (p == md || p[-1] != '\\')) {
            /* the tables' own pipes and the captions' bold are ours */
            int ours = (*p == '|' && (p == md || p[-1] == ' ' || p[-1] == '\n' || p[1] == '\n' ||
                                      p[1] == '-' || p[1] == ' ')) ||
                       (*p == '*' && (p[1] == '*' || (p > md && p[-1] == '*')));
            if (!ours)
                fail_msg("summary.md: an unescaped '%c' at byte %td: %.60s", *p, p - md, p);
        }
    }
    assert_non_null(strstr(md, "\\<iframe src=\"http://x.test/\"\\>\\</iframe\\> \\| a \\| b \\|"));
    assert_non_null(strstr(md, "\\[link\\](http://x.test)"));
    assert_non_null(strstr(md, "# - a list? \\<b\\>\n")); /* the title: a heading's text */
    assert_non_null(strstr(md, "\n1\\. a list? \\& \\<i\\>\n")); /* not an ordered list */
    assert_non_null(strstr(md, "## # a heading? \\<script\\>"));
    /* The scenario's name in a cell: one cell, its pipes escaped. */
    assert_non_null(strstr(md, "=HYPERLINK(\"http://x.test/\",\"open\")\\<img src=x onerror=alert(1)\\>\\|a\\|"));
    free(md);
    /* The entry's label in the full report's list and tables. */
    ck_report_entry e2 = {"- item `code` <b>", runs, 1};
    snprintf(out, sizeof(out), "%s/rep-hostile2", tmp);
    if (ck_report_make_entries(&e2, 1, out, "title *x*", err, sizeof(err)))
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/summary.md", out);
    md = slurp(path);
    assert_non_null(md);
    assert_non_null(strstr(md, "# title \\*x\\*\n"));
    assert_non_null(strstr(md, "\n- #1 - item \\`code\\` \\<b\\>")); /* a list item's text */
    assert_null(strstr(md, "<b>"));
    assert_int_equal(count_of(md, "<img"), count_of(md, "\\<img")); /* each escaped */
    assert_non_null(strstr(md, "\\<img src=x onerror=alert(1)\\>\\|a\\|"));
    /* the path of its run.json, as text (no code span a ` could end) */
    assert_non_null(strstr(md, "/hostile/run.json)\n"));
    free(md);
    /* HTML: the same strings escaped. */
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = slurp(path);
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "<b>"));
    assert_non_null(strstr(html, "&lt;img src=x onerror=alert(1)&gt;|a|"));
    char why[200];
    assert_null(html_check(html, why, sizeof(why)));
    free(html);
    /* CSV: a field a spreadsheet would evaluate is text; numbers stay numbers. */
    snprintf(path, sizeof(path), "%s/runs.csv", out);
    char *csv = slurp(path);
    assert_non_null(csv);
    char *f = csv_field(csv, 1, 3); /* scenario */
    assert_string_equal(f, "'=HYPERLINK(\"http://x.test/\",\"open\")<img src=x onerror=alert(1)>|a|");
    free(f);
    f = csv_field(csv, 1, 4); /* backend */
    assert_string_equal(f, "'+sockets");
    free(f);
    f = csv_field(csv, 1, 5); /* state: a number, as it is */
    assert_string_equal(f, "-2");
    free(f);
    assert_non_null(strstr(csv, ",-2,")); /* unquoted */
    free(csv);
    snprintf(path, sizeof(path), "%s/checkpoints.csv", out);
    csv = slurp(path);
    assert_non_null(strstr(csv, ",\"'@checkpoint\",\"'-completed\",-1.5,"));
    free(csv);
    snprintf(path, sizeof(path), "%s/timeseries.csv", out);
    csv = slurp(path);
    assert_non_null(strstr(csv, ",-1,-2500,3,,\n"));
    free(csv);
    snprintf(path, sizeof(path), "%s/faults.csv", out);
    csv = slurp(path);
    assert_non_null(strstr(csv, ",\"'\tcrash\",\"'\rtm0\","));
    free(csv);
    snprintf(path, sizeof(path), "%s/vertices.csv", out);
    csv = slurp(path);
    assert_non_null(strstr(csv, ",-7.25e-3,"));
    assert_non_null(strstr(csv, ",\"'--1\","));
    free(csv);
    /* The terminal's summary shows a control character as '?'. */
    cJSON *run = cJSON_Parse(hostile_run);
    char *buf = NULL;
    size_t blen = 0;
    FILE *mf = open_memstream(&buf, &blen);
    ck_summary_print(mf, run, "x\033]0;title\007");
    fclose(mf);
    assert_null(strchr(buf, '\033'));
    assert_null(strchr(buf, '\r'));
    assert_non_null(strstr(buf, "wrote      x?]0;title?\n"));
    free(buf);
    cJSON_Delete(run);
}

/* The size chart draws each kind a real run.json has, under the writer's
 * names: a changelog run's whole state, its uploads (incremental) and
 * its changelog; an unaligned run's channel state. */
static void sizes_by_kind_from_real_runs(void **state)
{
    (void)state;
    run_once("scenarios/keyed-state-changelog.json", "clog", NULL);
    run_once("scenarios/swarm-unaligned.json", "unaligned", NULL);
    char args[700], path[400];
    snprintf(args, sizeof(args), "report %s/clog %s/unaligned -o %s/rep-sizes", tmp, tmp, tmp);
    assert_chandy("report-sizes", args, 0);
    snprintf(path, sizeof(path), "%s/rep-sizes/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    char *svg = svg_of(html, "plot-checkpoint-size");
    assert_non_null(svg);
    static const struct {
        const char *series;
        int drawn;
    } want[] = {
        {"#1 full", 1},  {"#1 incremental", 1}, {"#1 changelog", 1}, {"#1 in flight", 0},
        {"#2 full", 1},  {"#2 incremental", 0}, {"#2 changelog", 0}, {"#2 in flight", 1},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char key[100];
        snprintf(key, sizeof(key), "<g class=\"series\" data-label=\"%s\">\n<polyline",
                 want[i].series);
        if (!!strstr(svg, key) != want[i].drawn)
            fail_msg("plot-checkpoint-size: series \"%s\" %s", want[i].series,
                     want[i].drawn ? "not drawn" : "drawn");
    }
    /* The points are run.json's figures: the first checkpoint's, in MB. */
    cJSON *run = load_run("clog");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "checkpoints"), 1);
    static const char *const fields[3] = {"bytes_full", "bytes_incremental", "bytes_changelog"};
    static const char *const kinds[3] = {"full", "incremental", "changelog"};
    for (int k = 0; k < 3; k++) {
        char tip[200];
        snprintf(tip, sizeof(tip), "#1 %s: %g at %g", kinds[k],
                 cJSON_GetObjectItem(c0, fields[k])->valuedouble / 1e6,
                 cJSON_GetObjectItem(c0, "trigger_s")->valuedouble);
        if (!strstr(svg, tip))
            fail_msg("plot-checkpoint-size: no point \"%s\"", tip);
    }
    cJSON_Delete(run);
    free(svg);
    free(html);
}

/* ---- rescales: a bar of phases each, a table row each ------------------------ */

/* What the rescales' tests run: rescale-stateless (four rescales, all
 * done) with a fifth a millisecond after the fourth, refused (the job is
 * rescaling already); the scenario's expectations still hold. */
static const char *refused_variant(void)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/rescale-stateless.json");
    assert_non_null(text);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    assert_non_null(sc);
    cJSON_AddItemToArray(cJSON_GetObjectItem(sc, "events"),
                         cJSON_Parse("{\"at\": \"3001 ms\", \"action\": \"rescale\", \"via\": "
                                     "\"checkpoint\", \"parallelism\": {\"double\": 3, "
                                     "\"some\": 3}}"));
    char *out = cJSON_Print(sc);
    const char *path = put_file("rescale-refused.json", out);
    assert_non_null(path);
    free(out);
    cJSON_Delete(sc);
    return path;
}

static double jnum(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItem(o, a);
    if (b)
        x = cJSON_GetObjectItem(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* A rescale's phases in ms as the report must stack them, from its
 * run.json entry: snapshot, stop, deploy, download, rebuild, the rest of
 * the restore, catch-up; each from where the last known one ended, the
 * download and rebuild cut to the restore. */
static void want_phases(const cJSON *rs, double ph[7])
{
    double t = jnum(rs, "trigger_s", NULL), sn = jnum(rs, "snapshot_s", NULL),
           st = jnum(rs, "stopped_s", NULL), de = jnum(rs, "deployed_s", NULL),
           re = jnum(rs, "restored_s", NULL), cu = jnum(rs, "caught_up_s", NULL);
    double dl = jnum(rs, "restore", "download_s"), rb = jnum(rs, "restore", "rebuild_s");
    double from = t;
    ph[0] = sn - from;
    if (sn == sn)
        from = sn;
    ph[1] = st - from;
    if (st == st)
        from = st;
    ph[2] = de - from;
    double restore = re - de;
    dl = dl == dl ? dl : 0;
    rb = rb == rb ? rb : 0;
    dl = dl < restore ? dl : restore;
    rb = rb < restore - dl ? rb : restore - dl;
    ph[3] = restore == restore ? dl : NAN;
    ph[4] = restore == restore ? rb : NAN;
    ph[5] = restore - dl - rb;
    ph[6] = cu - re;
    for (int i = 0; i < 7; i++)
        ph[i] *= 1e3;
}

static const char *const rs_phase[7] = {"snapshot", "stop",            "deploy",  "download",
                                        "rebuild",  "rest of restore", "catch-up"};

/* The bar labelled label in svg: its segments' phase names and values, in
 * stacking order (from the axis up); how many, or -1 when it has no bar. */
static int bar_segments(const char *svg, const char *label, char names[][32], double *v, int max)
{
    char key[128];
    snprintf(key, sizeof(key), "<g class=\"bar\" data-label=\"%s\">", label);
    const char *a = strstr(svg, key);
    if (!a)
        return -1;
    const char *z = strstr(a, "</g>");
    int n = 0;
    char tip[128];
    snprintf(tip, sizeof(tip), "<title>%s, ", label);
    for (const char *p = a; (p = strstr(p, tip)) && p < z && n < max; n++) {
        p += strlen(tip);
        const char *colon = strstr(p, ": ");
        snprintf(names[n], 32, "%.*s", (int)(colon - p), p);
        v[n] = strtod(colon + 2, NULL);
    }
    return n;
}

/* The cells of each row of the HTML table with caption, unescaped ("&gt;"
 * as ">"); rows[r][c], r from 0 (the header is left out); how many rows. */
static int table_cells(const char *html, const char *caption, char rows[][16][200], int max)
{
    char key[200];
    snprintf(key, sizeof(key), "<caption>%s</caption>", caption);
    const char *a = strstr(html, key);
    assert_non_null(a);
    const char *end = strstr(a, "</table>");
    int n = 0;
    const char *p = strstr(a, "</tr>"); /* past the header */
    while ((p = strstr(p, "<tr>")) && p < end && n < max) {
        const char *rz = strstr(p, "</tr>");
        int c = 0;
        for (const char *q = p; (q = strstr(q, "<td")) && q < rz && c < 16; c++) {
            q = strchr(q, '>') + 1;
            const char *qz = strstr(q, "</td>");
            char *out = rows[n][c];
            size_t o = 0;
            for (const char *x = q; x < qz && o < 199;) {
                static const struct {
                    const char *ent, *ch;
                } ents[] = {{"&gt;", ">"}, {"&lt;", "<"}, {"&amp;", "&"}, {"&#39;", "'"},
                            {"&quot;", "\""}};
                size_t k;
                for (k = 0; k < 5; k++)
                    if (!strncmp(x, ents[k].ent, strlen(ents[k].ent)))
                        break;
                if (k < 5) {
                    out[o++] = ents[k].ch[0];
                    x += strlen(ents[k].ent);
                } else {
                    out[o++] = *x++;
                }
            }
            out[o] = 0;
            q = qz;
        }
        for (; c < 16; c++)
            rows[n][c][0] = 0;
        n++;
        p = rz;
    }
    return n;
}

/* "a 1->2", the operators whose parallelism differs from before to after. */
static size_t ops_diff(const cJSON *before, const cJSON *after, char *buf, size_t len)
{
    const cJSON *op;
    size_t at = 0;
    buf[0] = 0;
    cJSON_ArrayForEach(op, after)
    {
        double was = cJSON_GetObjectItem(before, op->string)->valuedouble;
        if (was != op->valuedouble)
            at += (size_t)snprintf(buf + at, len - at, "%s%s %.0f->%.0f", at ? ", " : "",
                                   op->string, was, op->valuedouble);
    }
    return at;
}

/* "double 2->4, some 2->4": the operators a rescale changed; for one
 * that did not deploy, "asked ..." what its event in faults asked for. */
static void want_ops(const cJSON *run, const cJSON *rs, char *buf, size_t len)
{
    const cJSON *before = cJSON_GetObjectItem(rs, "parallelism_before");
    if (ops_diff(before, cJSON_GetObjectItem(rs, "parallelism_after"), buf, len))
        return;
    double event = jnum(rs, "event", NULL);
    const cJSON *ev =
        event == event ? cJSON_GetArrayItem(cJSON_GetObjectItem(run, "faults"), (int)event) : NULL;
    char want[300];
    if (ev && ops_diff(before, cJSON_GetObjectItem(ev, "parallelism"), want, sizeof(want)))
        snprintf(buf, len, "asked %s", want);
    else
        snprintf(buf, len, "unchanged");
}

/* Checks entry tag's rescales in html (its chart with id, its table
 * rows from row 0 of the Rescales table) against run's, parsed back. */
static void check_rescales(const char *html, const char *id, const char *tag, const cJSON *run)
{
    const cJSON *rss = cJSON_GetObjectItem(run, "rescales");
    int n = cJSON_GetArraySize(rss);
    char *svg = svg_of(html, id);
    assert_non_null(svg);
    static char rows[64][16][200];
    int nrows = table_cells(html, "Rescales", rows, 64);
    int at = -1; /* the entry's first row */
    for (int r = 0; r < nrows && at < 0; r++)
        if (!strcmp(rows[r][0], tag))
            at = r;
    assert_true(at >= 0);
    for (int k = 0; k < n; k++) {
        const cJSON *rs = cJSON_GetArrayItem(rss, k);
        const char *outcome = cJSON_GetObjectItem(rs, "outcome")->valuestring;
        int done = !strcmp(outcome, "done");
        double want[7];
        want_phases(rs, want);
        char label[64], names[16][32];
        double v[16];
        snprintf(label, sizeof(label), "%s s%d", tag, k + 1);
        int nseg = bar_segments(svg, label, names, v, 16);
        if (!done) {
            if (nseg >= 0)
                fail_msg("%s (%s) has a bar", label, outcome);
        } else {
            /* Every phase longer than nothing, in order, with its value. */
            int j = 0;
            for (int p = 0; p < 7; p++) {
                if (!(want[p] > 0))
                    continue;
                if (j >= nseg || strcmp(names[j], rs_phase[p]))
                    fail_msg("%s: segment %d is %s, expected %s (%g ms)", label, j,
                             j < nseg ? names[j] : "missing", rs_phase[p], want[p]);
                if (fabs(v[j] - want[p]) > 1e-5 * want[p] + 1e-9)
                    fail_msg("%s: %s is %g ms, run.json says %g", label, rs_phase[p], v[j],
                             want[p]);
                j++;
            }
            if (j != nseg)
                fail_msg("%s: %d segments, expected %d", label, nseg, j);
        }
        /* Its table row. */
        char (*c)[200] = rows[at + k];
        char num[16], ops[300], oc[300];
        snprintf(num, sizeof(num), "%d", k + 1);
        assert_string_equal(c[0], tag);
        assert_string_equal(c[1], num);
        assert_string_equal(c[2], cJSON_GetObjectItem(rs, "via")->valuestring);
        want_ops(run, rs, ops, sizeof(ops));
        assert_string_equal(c[3], ops);
        const cJSON *why = cJSON_GetObjectItem(rs, "why");
        snprintf(oc, sizeof(oc), "%s%s%s", outcome, cJSON_IsString(why) ? ": " : "",
                 cJSON_IsString(why) ? why->valuestring : "");
        assert_string_equal(c[4], oc);
        assert_true(fabs(strtod(c[5], NULL) - jnum(rs, "trigger_s", NULL)) < 0.0005 + 1e-9);
        for (int p = 0; p < 7; p++) {
            if (!done) {
                assert_string_equal(c[6 + p], "-");
                continue;
            }
            if (fabs(strtod(c[6 + p], NULL) - want[p]) > 0.005 + 1e-9)
                fail_msg("%s: the table's %s is %s ms, run.json says %g", label, rs_phase[p],
                         c[6 + p], want[p]);
        }
        assert_true(fabs(strtod(c[13], NULL) - jnum(rs, "restore", "bytes")) < 0.5);
        if (done)
            assert_true(fabs(strtod(c[14], NULL) - jnum(rs, "rescale_s", NULL) * 1e3) <
                        0.005 + 1e-9);
        else
            assert_string_equal(c[14], "-");
    }
    free(svg);
}

/*
 * A run with rescales, one of them refused: its report draws a bar of
 * phases per rescale that ran and none for the refused one, and its table
 * has a row each, with the numbers of its run.json (read back from the
 * page); the CSV file has every rescale; the terminal summary names each
 * rescale's operators; Chromium renders the page with a clean console.
 */
static void rescales_drawn_with_their_phases(void **state)
{
    (void)state;
    const char *sc = refused_variant();
    char args[700], path[512];
    snprintf(args, sizeof(args), "run %s --out %s/rs", sc, tmp);
    assert_chandy("rs", args, 0);
    /* The summary: every line names its operators (strings freed line by line). */
    snprintf(path, sizeof(path), "%s/rs.out", tmp);
    char *out = slurp(path);
    assert_non_null(out);
    assert_non_null(strstr(out, "  rescale    via savepoint at 3.000 s (double 4->2, some "
                                "4->2), snapshot +"));
    assert_non_null(strstr(out, "  rescale    via checkpoint at 3.001 s: refused (the job is "
                                "rescaling already)"));
    assert_null(strstr(out, "?"));
    free(out);
    cJSON *run = load_run("rs");
    const cJSON *rss = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rss), 5);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rss, 4), "outcome")->valuestring,
                        "refused");

    snprintf(args, sizeof(args), "report %s/rs -o %s/rep-rs", tmp, tmp);
    assert_chandy("report-rs", args, 0);
    snprintf(path, sizeof(path), "%s/rep-rs/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    assert_non_null(strstr(html, "<h2 id=\"rescales\">Rescales</h2>"));
    char *svg = svg_of(html, "plot-rescale");
    assert_int_equal(count_of(svg, "<g class=\"bar\""), 4);
    free(svg);
    check_rescales(html, "plot-rescale", "#1", run);
    char why[200];
    const char *bad = html_check(html, why, sizeof(why));
    if (bad)
        fail_msg("index.html: %s", bad);
    free(html);
    snprintf(path, sizeof(path), "%s/rep-rs/summary.md", tmp);
    char *md = slurp(path);
    assert_non_null(strstr(md, "**Rescales**"));
    assert_non_null(strstr(md, "| asked double 2-\\>3, some 2-\\>3 | refused: the job is "
                               "rescaling already |"));
    free(md);
    int ragged;
    snprintf(path, sizeof(path), "%s/rep-rs/rescales.csv", tmp);
    assert_int_equal(csv_rows(path, &ragged), 5);
    assert_int_equal(ragged, 0);
    cJSON_Delete(run);
    snprintf(path, sizeof(path), "%s/rep-rs/index.html", tmp);
    render_ok(path, "rescales.png");
}

/* A made-up run.json: a rescale via checkpoint that stopped waiting (no
 * snapshot_s: its stop runs from the trigger), one whose slowest download
 * and rebuild add up to more than its restore (cut to it), and one
 * interrupted part way (no bar, its reason in the table). */
static const char rescale_run[] =
    "{\"scenario\": \"made\", \"backend\": \"simgrid\", \"seed\": 3, \"sim_time_s\": 9,"
    " \"checkpoints\": [], \"recoveries\": [], \"timeseries\": [], \"faults\": [],"
    " \"rescales\": ["
    "  {\"via\": \"checkpoint\", \"outcome\": \"done\", \"why\": null,"
    "   \"parallelism_before\": {\"a\": 1, \"b\": 2}, \"parallelism_after\": {\"a\": 1, \"b\": 4},"
    "   \"trigger_s\": 1, \"snapshot_s\": null, \"stopped_s\": 1.5, \"deployed_s\": 1.75,"
    "   \"restored_s\": 2.25, \"caught_up_s\": 3, \"rescale_s\": 1.25,"
    "   \"restore\": {\"download_s\": 0.125, \"rebuild_s\": 0.25, \"channel_state_s\": 0,"
    "   \"bytes\": 4096}},"
    "  {\"via\": \"savepoint\", \"outcome\": \"done\", \"why\": null,"
    "   \"parallelism_before\": {\"a\": 1, \"b\": 4}, \"parallelism_after\": {\"a\": 2, \"b\": 2},"
    "   \"trigger_s\": 4, \"snapshot_s\": 4.125, \"stopped_s\": 4.25, \"deployed_s\": 4.5,"
    "   \"restored_s\": 5, \"caught_up_s\": 5.5, \"rescale_s\": 1,"
    "   \"restore\": {\"download_s\": 0.375, \"rebuild_s\": 0.25, \"channel_state_s\": 0,"
    "   \"bytes\": 1e6}},"
    "  {\"via\": \"savepoint\", \"outcome\": \"interrupted\","
    "   \"why\": \"task manager tm1 lost\","
    "   \"parallelism_before\": {\"a\": 2, \"b\": 2}, \"parallelism_after\": {\"a\": 2, \"b\": 2},"
    "   \"trigger_s\": 6, \"snapshot_s\": 6.5, \"stopped_s\": null, \"deployed_s\": null,"
    "   \"restored_s\": null, \"caught_up_s\": null, \"rescale_s\": null,"
    "   \"restore\": {\"download_s\": null, \"rebuild_s\": null, \"channel_state_s\": null,"
    "   \"bytes\": 0}}],"
    " \"job\": {\"state\": \"FINISHED\", \"vertices\": []}, \"config\": {}}";

static void rescale_phases_add_up(void **state)
{
    (void)state;
    char path[512], out[300], err[600];
    snprintf(path, sizeof(path), "%s/made", tmp);
    mkdir(path, 0755);
    assert_non_null(put_file("made/run.json", rescale_run));
    const char *p = path;
    ck_report_entry e = {NULL, &p, 1};
    snprintf(out, sizeof(out), "%s/rep-made", tmp);
    if (ck_report_make_entries(&e, 1, out, NULL, err, sizeof(err)))
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/index.html", out);
    char *html = slurp(path);
    assert_non_null(html);
    cJSON *run = cJSON_Parse(rescale_run);
    check_rescales(html, "plot-rescale", "#1", run);
    /* The figures by hand: the first's stop from its trigger (500 ms), its
     * restore's rest 125 ms; the second's download and rebuild cut to
     * its 500 ms restore (375 and 125, nothing left). */
    char *svg = svg_of(html, "plot-rescale");
    assert_non_null(strstr(svg, "<title>#1 s1, stop: 500</title>"));
    assert_non_null(strstr(svg, "<title>#1 s1, rest of restore: 125</title>"));
    assert_non_null(strstr(svg, "<title>#1 s2, download: 375</title>"));
    assert_non_null(strstr(svg, "<title>#1 s2, rebuild: 125</title>"));
    assert_null(strstr(svg, "#1 s2, rest of restore"));
    assert_null(strstr(svg, "#1 s3"));
    free(svg);
    assert_non_null(strstr(html, "<td class=\"n\">a 1-&gt;2, b 4-&gt;2</td>"));
    assert_non_null(strstr(html, "interrupted: task manager tm1 lost"));
    free(html);
    cJSON_Delete(run);
}

/*
 * A suite comparing rescales (the heap against RocksDB): "plot": "rescale"
 * draws one bar per rescale of each run, and the table beside it, from the
 * runs' run.json files; Chromium renders the index cleanly.
 */
static void suite_plots_rescales(void **state)
{
    (void)state;
    const char *suite = put_file(
        "rescale-suite.json",
        "{\"name\": \"rescales\", \"description\": \"Rescales by state backend.\","
        " \"comparisons\": [\n"
        " {\"title\": \"Rescales\", \"plot\": \"rescale\", \"note\": \"Heap against RocksDB.\","
        "  \"runs\": [{\"scenario\": \"" CHANDY_SOURCE_DIR "/tests/scenarios/rescale-stateless.json\","
        "    \"label\": \"heap\"},"
        "   {\"scenario\": \"" CHANDY_SOURCE_DIR "/tests/scenarios/rescale-stateless.json\","
        "    \"label\": \"rocksdb\", \"set\": {\"state.backend.type\": \"rocksdb\"}}]}]}\n");
    assert_non_null(suite);
    char args[600], path[512];
    snprintf(args, sizeof(args), "suite %s --out %s/rsuite", suite, tmp);
    assert_chandy("rsuite", args, 0);
    snprintf(path, sizeof(path), "%s/rsuite/index.html", tmp);
    char *html = slurp(path);
    assert_non_null(html);
    char *svg = svg_of(html, "c1-plot-rescale");
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<g class=\"bar\""), 8);
    free(svg);
    for (int r = 1; r <= 2; r++) {
        char dir[64], tag[8];
        snprintf(dir, sizeof(dir), "rsuite/runs/r%d", r);
        snprintf(tag, sizeof(tag), "#%d", r);
        cJSON *run = load_run(dir);
        check_rescales(html, "c1-plot-rescale", tag, run);
        cJSON_Delete(run);
    }
    char why[200];
    const char *bad = html_check(html, why, sizeof(why));
    if (bad)
        fail_msg("index.html: %s", bad);
    free(html);
    render_ok(path, "rsuite.png");
}

/* Is `name` (in backticks) in docs/RUN-JSON.md? */
static int documented(const char *doc, const char *name)
{
    char k[140];
    snprintf(k, sizeof(k), "`%s`", name);
    return strstr(doc, k) != NULL;
}

/*
 * Every name reports/ looks up in a run.json is one the writer writes:
 * the report, a suite's index and the terminal summary made from real
 * runs of a few scenarios (full, changelog and unaligned checkpoints, a
 * recovery, a savepoint, debloated buffers, a fault that ends, rescales,
 * one refused), with every lookup recorded, and each looked up in what
 * those files hold (runner/runjson.c wrote them) and in docs/RUN-JSON.md.
 * A report that reads "full_bytes" where the writer writes "bytes_full"
 * fails here.
 */
static void report_reads_the_names_run_json_writes(void **state)
{
    (void)state;
    run_once("scenarios/crash-recovery.json", "drift-crash", NULL);
    run_once("scenarios/keyed-state-changelog.json", "clog", NULL);
    run_once("scenarios/swarm-unaligned.json", "unaligned", NULL);
    run_once("scenarios/exchanges-1.json", "drift-debloat", NULL);
    run_once("scenarios/savepoint-stop.json", "drift-savepoint", NULL);
    run_once("scenarios/partition.json", "drift-partition", NULL);
    run_once("tests/scenarios/rescale-same.json", "drift-rescale", NULL);
    run_once(refused_variant(), "drift-refused", NULL); /* a refused rescale: what it asked */
    static const char *const dirs[] = {"drift-crash",     "clog",            "unaligned",
                                       "drift-debloat",   "drift-savepoint", "drift-partition",
                                       "drift-rescale",   "drift-refused"};
    enum { ND = sizeof(dirs) / sizeof(dirs[0]) };
    char paths[ND][300];
    const char *p[ND];
    for (int i = 0; i < ND; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/%s", tmp, dirs[i]);
        p[i] = paths[i];
    }
    nodes = calloc(NODES, sizeof(*nodes));
    assert_non_null(nodes);
    tracing = 1;
    char out[300], err[600];
    /* The full report: each run an entry, and one entry of two runs. */
    ck_report_entry e[ND + 1];
    for (int i = 0; i < ND; i++)
        e[i] = (ck_report_entry){NULL, &p[i], 1};
    e[ND] = (ck_report_entry){"two", p, 2};
    snprintf(out, sizeof(out), "%s/rep-drift", tmp);
    if (ck_report_make_entries(e, ND + 1, out, NULL, err, sizeof(err)))
        fail_msg("%s", err);
    /* A suite's index with every chart it draws. */
    static const char *const plots[] = {"checkpoints", "throughput", "latency", "recovery",
                                        "vertices", "state", "rescale"};
    enum { NP = sizeof(plots) / sizeof(plots[0]) };
    ck_report_section sec[NP];
    for (int k = 0; k < NP; k++)
        sec[k] = (ck_report_section){plots[k], NULL, "c1", plots[k], e, ND + 1};
    snprintf(out, sizeof(out), "%s/rep-drift-index", tmp);
    if (ck_report_index(sec, NP, out, "drift", NULL, err, sizeof(err)))
        fail_msg("%s", err);
    /* The summary printed after each run. */
    for (int i = 0; i < ND; i++) {
        cJSON *run = load_run(dirs[i]);
        walk(run, "", 1);
        FILE *null = fopen("/dev/null", "w");
        ck_summary_print(null, run, "run.json");
        fclose(null);
        walk(run, "", 0);
        cJSON_Delete(run);
    }
    tracing = 0;
    char docpath[400];
    snprintf(docpath, sizeof(docpath), "%s/docs/RUN-JSON.md", CHANDY_SOURCE_DIR);
    char *doc = slurp(docpath);
    assert_non_null(doc);
    assert_true(asked.n > 80); /* the recording works: the report asks a lot */
    int bad = 0;
    for (size_t i = 0; i < asked.n; i++) {
        const char *key = strrchr(asked.v[i], '/') + 1;
        const char *why = !names_has(&schema, asked.v[i]) ? "no real run.json has it"
                          : !documented(doc, key)          ? "docs/RUN-JSON.md does not name it"
                                                           : NULL;
        if (why) {
            fprintf(stderr, "reports/ looks up %s: %s\n", asked.v[i], why);
            bad++;
        }
    }
    free(doc);
    for (size_t i = 0; i < NODES; i++)
        free(nodes[i].ctx);
    free(nodes);
    nodes = NULL;
    names_free(&schema);
    names_free(&asked);
    assert_int_equal(bad, 0);
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
        cmocka_unit_test(extreme_numbers_draw_finite),
        cmocka_unit_test(strings_are_text_in_markdown_and_csv),
        cmocka_unit_test(sizes_by_kind_from_real_runs),
        cmocka_unit_test(report_reads_the_names_run_json_writes),
        cmocka_unit_test(rescales_drawn_with_their_phases),
        cmocka_unit_test(rescale_phases_add_up),
        cmocka_unit_test(suite_plots_rescales),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
