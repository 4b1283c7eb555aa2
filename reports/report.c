#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plot.h"
#include "published.h"
#include "runfile.h"
#include "strbuf.h"

typedef struct run {
    ck_runfile rf;
    char tag[8];     /* #1 */
    char label[600]; /* #1 scenario, backend, seed, differing keys */
} run;

typedef struct rep {
    run *runs;
    int n;
    const char **keys; /* configuration keys whose values differ */
    int nkeys;
    int diff_scenario, diff_backend, diff_seed;
    ck_sb html, md;
} rep;

/* ---- small helpers ------------------------------------------------------------ */

/* A growing array of doubles (points of a series). */
typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static void dv_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        double *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return; /* the point is left out; the report is still written */
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The p-quantile (nearest rank) of v[0..n), which it sorts; NaN when empty. */
static double quantile(double *v, size_t n, double p)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_d);
    size_t k = (size_t)ceil(p * (double)n);
    return v[k ? k - 1 : 0];
}

static double num_or_nan(const cJSON *o, const char *k)
{
    return ck_rf_has_num(o, k) ? ck_rf_num(o, k, 0) : NAN;
}

/* A value as table text: "-" when absent. */
static void fmt(char *buf, size_t len, double v, const char *f)
{
    if (isfinite(v))
        snprintf(buf, len, f, v);
    else
        snprintf(buf, len, "-");
}

/* A configuration value as text, for comparing and printing. */
static char *cfg_text(const cJSON *cfg, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!x)
        return strdup("(unset)");
    if (cJSON_IsString(x))
        return strdup(x->valuestring);
    return cJSON_PrintUnformatted(x);
}

/* ---- naming the runs ------------------------------------------------------------ */

static int has_key(const rep *R, const char *k)
{
    for (int i = 0; i < R->nkeys; i++)
        if (!strcmp(R->keys[i], k))
            return 1;
    return 0;
}

static void find_differences(rep *R)
{
    R->keys = calloc(1, sizeof(*R->keys));
    for (int i = 0; i < R->n; i++) {
        const cJSON *cfg = ck_rf_get(R->runs[i].rf.root, "config"), *e;
        cJSON_ArrayForEach(e, cfg)
        {
            if (has_key(R, e->string))
                continue;
            char *first = cfg_text(ck_rf_get(R->runs[0].rf.root, "config"), e->string);
            int differs = 0;
            for (int j = 1; j < R->n && !differs; j++) {
                char *t = cfg_text(ck_rf_get(R->runs[j].rf.root, "config"), e->string);
                differs = !first || !t || strcmp(first, t) != 0;
                free(t);
            }
            free(first);
            if (!differs)
                continue;
            const char **k = realloc(R->keys, (size_t)(R->nkeys + 1) * sizeof(*k));
            if (!k)
                continue;
            R->keys = k;
            R->keys[R->nkeys++] = e->string;
        }
    }
    for (int j = 1; j < R->n; j++) {
        const cJSON *a = R->runs[0].rf.root, *b = R->runs[j].rf.root;
        R->diff_scenario |= strcmp(ck_rf_str(a, "scenario"), ck_rf_str(b, "scenario")) != 0;
        R->diff_backend |= strcmp(ck_rf_str(a, "backend"), ck_rf_str(b, "backend")) != 0;
        R->diff_seed |= ck_rf_num(a, "seed", 0) != ck_rf_num(b, "seed", 0);
    }
    for (int i = 0; i < R->n; i++) {
        run *r = &R->runs[i];
        const cJSON *root = r->rf.root;
        snprintf(r->tag, sizeof(r->tag), "#%d", i + 1);
        ck_sb l = {0};
        ck_sb_printf(&l, "%s %s, %s, seed %.0f", r->tag, ck_rf_str(root, "scenario"),
                     ck_rf_str(root, "backend"), ck_rf_num(root, "seed", 0));
        for (int k = 0; k < R->nkeys; k++) {
            char *t = cfg_text(ck_rf_get(root, "config"), R->keys[k]);
            ck_sb_printf(&l, ", %s=%s", R->keys[k], t ? t : "?");
            free(t);
        }
        snprintf(r->label, sizeof(r->label), "%s", l.p ? l.p : r->tag);
        ck_sb_free(&l);
    }
}

/* ---- HTML and Markdown tables ------------------------------------------------------ */

/* A table is written to both documents at once: cells are plain text. */
typedef struct table {
    rep *R;
    int cols;
} table;

static void t_begin(table *t, rep *R, const char *caption, const char *const *head, int cols)
{
    t->R = R;
    t->cols = cols;
    ck_sb_puts(&R->html, "<table>\n<caption>");
    ck_sb_html(&R->html, caption);
    ck_sb_puts(&R->html, "</caption>\n<tr>");
    ck_sb_printf(&R->md, "\n**%s**\n\n|", caption);
    for (int c = 0; c < cols; c++) {
        ck_sb_puts(&R->html, "<th>");
        ck_sb_html(&R->html, head[c]);
        ck_sb_puts(&R->html, "</th>");
        ck_sb_puts(&R->md, " ");
        ck_sb_md(&R->md, head[c]);
        ck_sb_puts(&R->md, " |");
    }
    ck_sb_puts(&R->html, "</tr>\n");
    ck_sb_puts(&R->md, "\n|");
    for (int c = 0; c < cols; c++)
        ck_sb_puts(&R->md, c ? "---:|" : "---|");
    ck_sb_puts(&R->md, "\n");
}

static void t_row(table *t, const char *const *cells)
{
    rep *R = t->R;
    ck_sb_puts(&R->html, "<tr>");
    ck_sb_puts(&R->md, "|");
    for (int c = 0; c < t->cols; c++) {
        ck_sb_puts(&R->html, c ? "<td class=\"n\">" : "<td>");
        ck_sb_html(&R->html, cells[c]);
        ck_sb_puts(&R->html, "</td>");
        ck_sb_puts(&R->md, " ");
        ck_sb_md(&R->md, cells[c]);
        ck_sb_puts(&R->md, " |");
    }
    ck_sb_puts(&R->html, "</tr>\n");
    ck_sb_puts(&R->md, "\n");
}

static void t_none(table *t)
{
    rep *R = t->R;
    ck_sb_printf(&R->html, "<tr><td colspan=\"%d\" class=\"none\">none</td></tr>\n", t->cols);
    ck_sb_puts(&R->md, "| none |");
    for (int c = 1; c < t->cols; c++)
        ck_sb_puts(&R->md, " |");
    ck_sb_puts(&R->md, "\n");
}

static void t_end(table *t)
{
    ck_sb_puts(&t->R->html, "</table>\n");
}

static void section(rep *R, const char *id, const char *title, const char *note)
{
    ck_sb_printf(&R->html, "<h2 id=\"%s\">", id);
    ck_sb_html(&R->html, title);
    ck_sb_puts(&R->html, "</h2>\n");
    ck_sb_printf(&R->md, "\n## %s\n", title);
    if (note) {
        ck_sb_puts(&R->html, "<p class=\"note\">");
        ck_sb_html(&R->html, note);
        ck_sb_puts(&R->html, "</p>\n");
        ck_sb_printf(&R->md, "\n%s\n", note);
    }
}

/* ---- the tables ------------------------------------------------------------------ */

static void runs_table(rep *R)
{
    static const char *const head[] = {"run", "scenario", "backend", "seed", "job",
                                       "time (s)", "wall (s)"};
    table t;
    t_begin(&t, R, "Runs", head, 7);
    for (int i = 0; i < R->n; i++) {
        const cJSON *o = R->runs[i].rf.root;
        char seed[32], tm[32], wall[32];
        fmt(seed, sizeof(seed), ck_rf_num(o, "seed", NAN), "%.0f");
        fmt(tm, sizeof(tm), num_or_nan(o, "sim_time_s"), "%.3f");
        fmt(wall, sizeof(wall), num_or_nan(o, "wall_time_s"), "%.2f");
        const char *state = ck_rf_str(o, "job.state");
        const char *cells[] = {R->runs[i].tag, ck_rf_str(o, "scenario"), ck_rf_str(o, "backend"),
                               seed, state ? state : "-", tm, wall};
        t_row(&t, cells);
    }
    t_end(&t);
}

static void config_table(rep *R)
{
    const char *head[1 + CK_REPORT_MAX_RUNS];
    head[0] = "configuration key";
    for (int i = 0; i < R->n; i++)
        head[1 + i] = R->runs[i].tag;
    table t;
    t_begin(&t, R, "Configuration that differs between the runs", head, 1 + R->n);
    if (!R->nkeys)
        t_none(&t);
    for (int k = 0; k < R->nkeys; k++) {
        char *vals[CK_REPORT_MAX_RUNS];
        const char *cells[1 + CK_REPORT_MAX_RUNS];
        cells[0] = R->keys[k];
        for (int i = 0; i < R->n; i++) {
            vals[i] = cfg_text(ck_rf_get(R->runs[i].rf.root, "config"), R->keys[k]);
            cells[1 + i] = vals[i] ? vals[i] : "?";
        }
        t_row(&t, cells);
        for (int i = 0; i < R->n; i++)
            free(vals[i]);
    }
    t_end(&t);
}

static int is_checkpoint(const cJSON *c)
{
    const char *k = ck_rf_str(c, "kind");
    return k && (!strcmp(k, "checkpoint") || !strcmp(k, "final"));
}

static int completed(const cJSON *c)
{
    const char *s = ck_rf_str(c, "status");
    return s && !strcmp(s, "completed");
}

static void checkpoint_table(rep *R)
{
    static const char *const head[] = {
        "run", "completed", "failed", "duration p50 (ms)", "p90", "p99", "max",
        "size p50 (bytes)", "last size (bytes)", "alignment p50 (ms)", "alignment max (ms)"};
    table t;
    t_begin(&t, R, "Checkpoints (completed ones; savepoints apart)", head, 11);
    for (int i = 0; i < R->n; i++) {
        dvec dur = {0}, size = {0}, al = {0};
        int done = 0, failed = 0;
        double last = NAN;
        const cJSON *c;
        cJSON_ArrayForEach(c, ck_rf_arr(R->runs[i].rf.root, "checkpoints"))
        {
            if (!is_checkpoint(c))
                continue;
            if (!completed(c)) {
                const char *s = ck_rf_str(c, "status");
                failed += s && (!strcmp(s, "expired") || !strcmp(s, "declined"));
                continue;
            }
            done++;
            dv_push(&dur, ck_rf_num(c, "duration_s", 0) * 1e3);
            dv_push(&size, ck_rf_num(c, "bytes", 0));
            last = ck_rf_num(c, "bytes", 0);
            if (ck_rf_has_num(c, "alignment_max_s"))
                dv_push(&al, ck_rf_num(c, "alignment_max_s", 0) * 1e3);
        }
        char cells_s[11][40];
        snprintf(cells_s[1], 40, "%d", done);
        snprintf(cells_s[2], 40, "%d", failed);
        fmt(cells_s[3], 40, quantile(dur.v, dur.n, 0.5), "%.1f");
        fmt(cells_s[4], 40, quantile(dur.v, dur.n, 0.9), "%.1f");
        fmt(cells_s[5], 40, quantile(dur.v, dur.n, 0.99), "%.1f");
        fmt(cells_s[6], 40, quantile(dur.v, dur.n, 1.0), "%.1f");
        fmt(cells_s[7], 40, quantile(size.v, size.n, 0.5), "%.0f");
        fmt(cells_s[8], 40, last, "%.0f");
        fmt(cells_s[9], 40, quantile(al.v, al.n, 0.5), "%.1f");
        fmt(cells_s[10], 40, quantile(al.v, al.n, 1.0), "%.1f");
        const char *cells[11] = {R->runs[i].tag};
        for (int k = 1; k < 11; k++)
            cells[k] = cells_s[k];
        t_row(&t, cells);
        free(dur.v);
        free(size.v);
        free(al.v);
    }
    t_end(&t);
}

/* A recovery's phases in seconds: detection, restart, restore, catch-up
 * (NaN for a phase it never reached). */
static void phases(const cJSON *rv, double ph[4])
{
    double f = num_or_nan(rv, "failure_s"), d = num_or_nan(rv, "detected_s"),
           s = num_or_nan(rv, "restarted_s"), r = num_or_nan(rv, "restored_s"),
           c = num_or_nan(rv, "caught_up_s");
    ph[0] = d - f;
    ph[1] = s - d;
    ph[2] = r - s;
    ph[3] = c - r;
}

static const char *const phase_names[] = {"detection", "restart", "restore", "catch-up"};

static void recovery_table(rep *R)
{
    static const char *const head[] = {"run",         "recovery",    "failure at (s)",
                                       "detection (s)", "restart (s)", "restore (s)",
                                       "catch-up (s)", "total (s)",   "from checkpoint"};
    table t;
    t_begin(&t, R, "Recoveries", head, 9);
    int rows = 0;
    for (int i = 0; i < R->n; i++) {
        const cJSON *rv;
        int k = 0;
        cJSON_ArrayForEach(rv, ck_rf_arr(R->runs[i].rf.root, "recoveries"))
        {
            double ph[4];
            phases(rv, ph);
            char s[9][40];
            snprintf(s[1], 40, "%d", ++k);
            fmt(s[2], 40, num_or_nan(rv, "failure_s"), "%.3f");
            for (int p = 0; p < 4; p++)
                fmt(s[3 + p], 40, ph[p], "%.3f");
            fmt(s[7], 40, num_or_nan(rv, "recovery_s"), "%.3f");
            fmt(s[8], 40, num_or_nan(rv, "checkpoint"), "%.0f");
            if (!ck_rf_has_num(rv, "checkpoint"))
                snprintf(s[8], 40, "none (the start)");
            const char *cells[9] = {R->runs[i].tag};
            for (int c = 1; c < 9; c++)
                cells[c] = s[c];
            t_row(&t, cells);
            rows++;
        }
    }
    if (!rows)
        t_none(&t);
    t_end(&t);
}

static void throughput_table(rep *R)
{
    static const char *const head[] = {"run",
                                       "records in",
                                       "records out",
                                       "throughput in (records/s)",
                                       "out (records/s)",
                                       "latency p50 (ms)",
                                       "p99 (ms)",
                                       "max (ms)"};
    table t;
    t_begin(&t, R, "Throughput and end-to-end latency", head, 8);
    for (int i = 0; i < R->n; i++) {
        const cJSON *o = R->runs[i].rf.root;
        char s[8][40];
        fmt(s[1], 40, num_or_nan(o, "records_in"), "%.0f");
        fmt(s[2], 40, num_or_nan(o, "records_out"), "%.0f");
        fmt(s[3], 40, num_or_nan(o, "throughput_in_rps"), "%.0f");
        fmt(s[4], 40, num_or_nan(o, "throughput_out_rps"), "%.0f");
        fmt(s[5], 40, num_or_nan(o, "latency_ms.p50"), "%.2f");
        fmt(s[6], 40, num_or_nan(o, "latency_ms.p99"), "%.2f");
        fmt(s[7], 40, num_or_nan(o, "latency_ms.max"), "%.2f");
        const char *cells[8] = {R->runs[i].tag};
        for (int c = 1; c < 8; c++)
            cells[c] = s[c];
        t_row(&t, cells);
    }
    t_end(&t);
}

static void verdict_table(rep *R)
{
    static const char *const head[] = {"run",  "guarantee",  "verdict",    "expected",
                                       "received", "lost", "duplicated", "unexpected"};
    table t;
    t_begin(&t, R, "Correctness of the output", head, 8);
    for (int i = 0; i < R->n; i++) {
        const cJSON *c = ck_rf_get(R->runs[i].rf.root, "correctness");
        char s[8][60];
        const char *g = ck_rf_str(c, "guarantee");
        snprintf(s[1], 60, "%s%s", g ? g : "-", ck_rf_bool(c, "partial") ? " (partial)" : "");
        snprintf(s[2], 60, "%s", !c ? "-" : ck_rf_bool(c, "ok") ? "correct" : "WRONG");
        fmt(s[3], 60, num_or_nan(c, "expected"), "%.0f");
        fmt(s[4], 60, num_or_nan(c, "received"), "%.0f");
        fmt(s[5], 60, num_or_nan(c, "lost"), "%.0f");
        fmt(s[6], 60, num_or_nan(c, "duplicated"), "%.0f");
        fmt(s[7], 60, num_or_nan(c, "unexpected"), "%.0f");
        const char *cells[8] = {R->runs[i].tag};
        for (int k = 1; k < 8; k++)
            cells[k] = s[k];
        t_row(&t, cells);
    }
    t_end(&t);
}

/* Flink's published figures next to the runs of the scenarios that
 * reproduce them. */
static void published_table(rep *R, const cJSON *pub)
{
    static const char *const head[] = {"run", "figure", "Flink", "chandy", "source"};
    table t;
    t_begin(&t, R, "Published Flink figures these runs reproduce", head, 5);
    int rows = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, ck_rf_arr(pub, "figures"))
    {
        const char *sc = ck_rf_str(f, "scenario"), *metric = ck_rf_str(f, "metric");
        const char *unit = ck_rf_str(f, "unit");
        for (int i = 0; sc && metric && i < R->n; i++) {
            const cJSON *o = R->runs[i].rf.root;
            if (strcmp(sc, ck_rf_str(o, "scenario")))
                continue;
            char fl[80], ch[80];
            const char *spread = ck_rf_str(f, "spread");
            snprintf(fl, sizeof(fl), "%g%s%s %s", ck_rf_num(f, "flink", NAN),
                     spread ? " " : "", spread ? spread : "", unit ? unit : "");
            const char *minus = ck_rf_str(f, "minus");
            double v = (num_or_nan(o, metric) - (minus ? num_or_nan(o, minus) : 0)) *
                       ck_rf_num(f, "scale", 1);
            if (isfinite(v))
                snprintf(ch, sizeof(ch), "%.4g %s", v, unit ? unit : "");
            else
                snprintf(ch, sizeof(ch), "- (no %s in run.json)", metric);
            const char *cells[] = {R->runs[i].tag, ck_rf_str(f, "figure"), fl, ch,
                                   ck_rf_str(f, "source")};
            t_row(&t, cells);
            rows++;
        }
    }
    if (!rows)
        t_none(&t);
    t_end(&t);
}

/* ---- the plots ------------------------------------------------------------------- */

static void chart_open(rep *R)
{
    ck_sb_puts(&R->html, "<figure>\n");
}

static void chart_close(rep *R, const char *csv)
{
    ck_sb_printf(&R->html, "<figcaption>Data: <a href=\"%s\">%s</a></figcaption>\n</figure>\n",
                 csv, csv);
}

/* Up to max_per_run series for each run are built by fill(); frees them after drawing. */
typedef struct series_set {
    ck_plot_series s[CK_REPORT_MAX_RUNS * 4];
    dvec x[CK_REPORT_MAX_RUNS * 4], y[CK_REPORT_MAX_RUNS * 4];
    char label[CK_REPORT_MAX_RUNS * 4][96];
    size_t n;
} series_set;

static int ss_add(series_set *ss, int ri, int style, const char *fmtlabel, const char *tag)
{
    if (ss->n >= sizeof(ss->s) / sizeof(ss->s[0]))
        return -1;
    size_t k = ss->n++;
    snprintf(ss->label[k], sizeof(ss->label[k]), fmtlabel, tag);
    ss->x[k] = (dvec){0};
    ss->y[k] = (dvec){0};
    ss->s[k] = (ck_plot_series){.label = ss->label[k], .run = ri, .style = style};
    return (int)k;
}

static void ss_point(series_set *ss, int k, double x, double y)
{
    if (k < 0)
        return;
    dv_push(&ss->x[k], x);
    dv_push(&ss->y[k], y);
}

static void ss_finish(series_set *ss)
{
    for (size_t k = 0; k < ss->n; k++) {
        ss->s[k].x = ss->x[k].v;
        ss->s[k].y = ss->y[k].v;
        ss->s[k].n = ss->x[k].n < ss->y[k].n ? ss->x[k].n : ss->y[k].n;
    }
}

static void ss_free(series_set *ss)
{
    for (size_t k = 0; k < ss->n; k++) {
        free(ss->x[k].v);
        free(ss->y[k].v);
    }
    ss->n = 0;
}

/* The faults of every run as shaded intervals; one shared by every run
 * (same event, same times) is drawn once, in grey. */
typedef struct bands {
    ck_plot_band b[256];
    char label[256][96];
    char what[256][80];
    int open[256];           /* lasted to the end of its run */
    unsigned long long runs[256]; /* which runs had it (bit i: run i) */
    size_t n;
} bands;

static void fault_bands(rep *R, bands *B)
{
    B->n = 0;
    for (int i = 0; i < R->n; i++) {
        const cJSON *root = R->runs[i].rf.root, *f;
        double end = ck_rf_num(root, "sim_time_s", 0);
        cJSON_ArrayForEach(f, ck_rf_arr(root, "faults"))
        {
            if (!ck_rf_has_num(f, "at_s") || B->n >= 256)
                continue;
            double a = ck_rf_num(f, "at_s", 0);
            int open = !ck_rf_has_num(f, "ended_s") && !ck_rf_has_num(f, "restarted_s");
            double z = ck_rf_has_num(f, "ended_s")       ? ck_rf_num(f, "ended_s", 0)
                       : ck_rf_has_num(f, "restarted_s") ? ck_rf_num(f, "restarted_s", 0)
                                                         : end;
            const char *action = ck_rf_str(f, "action"), *host = ck_rf_str(f, "host");
            char what[80];
            snprintf(what, sizeof(what), "%s%s%s%s", action ? action : "fault", host ? " " : "",
                     host ? host : "", open ? " (to the end)" : "");
            /* The same event at the same times in an earlier run: shared. */
            size_t k;
            for (k = 0; k < B->n; k++)
                if (B->b[k].x0 == a && B->open[k] == open && (open || B->b[k].x1 == z) &&
                    !strcmp(B->what[k], what))
                    break;
            if (k == B->n) {
                B->b[B->n] = (ck_plot_band){a, z, B->label[B->n], i};
                B->open[B->n] = open;
                B->runs[B->n] = 0;
                snprintf(B->what[B->n], sizeof(B->what[B->n]), "%s", what);
                B->n++;
            }
            B->runs[k] |= 1ull << i;
            if (z > B->b[k].x1)
                B->b[k].x1 = z;
        }
    }
    /* Labelled with the runs that had it, unless every run did (grey). */
    unsigned long long all = R->n >= 64 ? ~0ull : (1ull << R->n) - 1;
    for (size_t k = 0; k < B->n; k++) {
        char tags[200] = "";
        size_t at = 0;
        for (int i = 0; i < R->n && B->runs[k] != all; i++)
            if (B->runs[k] >> i & 1 && at < sizeof(tags) - 8)
                at += (size_t)snprintf(tags + at, sizeof(tags) - at, "%s ", R->runs[i].tag);
        if (B->runs[k] == all || (B->runs[k] & (B->runs[k] - 1)))
            B->b[k].run = -1; /* more than one run: grey */
        snprintf(B->label[k], sizeof(B->label[k]), "%s%s", tags, B->what[k]);
    }
}

static void plot_checkpoints(rep *R, series_set *ss)
{
    ss->n = 0;
    for (int i = 0; i < R->n; i++) {
        int d = ss_add(ss, i, CK_PLOT_SOLID, "%s duration", R->runs[i].tag);
        int a = ss_add(ss, i, CK_PLOT_DASHED, "%s alignment (longest subtask)", R->runs[i].tag);
        const cJSON *c;
        cJSON_ArrayForEach(c, ck_rf_arr(R->runs[i].rf.root, "checkpoints"))
        {
            if (!is_checkpoint(c) || !completed(c))
                continue;
            double at = ck_rf_num(c, "trigger_s", NAN);
            ss_point(ss, d, at, ck_rf_num(c, "duration_s", NAN) * 1e3);
            ss_point(ss, a, at, num_or_nan(c, "alignment_max_s") * 1e3);
        }
    }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = "plot-checkpoint-duration",
                                           .title = "Checkpoint duration and alignment",
                                           .xlabel = "checkpoint triggered at (s)",
                                           .ylabel = "duration (ms)",
                                           .series = ss->s,
                                           .nseries = ss->n,
                                           .lines = 1});
    chart_close(R, "checkpoints.csv");
    ss_free(ss);
}

/* Checkpoint size by kind: run.json's per-kind fields where a run has
 * them, else everything it wrote as a full snapshot. */
static const struct {
    const char *field, *name;
} size_kinds[] = {
    {"full_bytes", "full"},
    {"incremental_bytes", "incremental"},
    {"changelog_bytes", "changelog"},
    {"persisted_inflight_bytes", "in flight"},
};

static void plot_sizes(rep *R, series_set *ss)
{
    ss->n = 0;
    for (int i = 0; i < R->n; i++) {
        int kind_series[4] = {-1, -1, -1, -1};
        const cJSON *c;
        cJSON_ArrayForEach(c, ck_rf_arr(R->runs[i].rf.root, "checkpoints"))
        {
            if (!is_checkpoint(c) || !completed(c))
                continue;
            double at = ck_rf_num(c, "trigger_s", NAN);
            int split = 0;
            for (int k = 0; k < 4; k++)
                split |= ck_rf_has_num(c, size_kinds[k].field);
            for (int k = 0; k < 4; k++) {
                double v = split ? num_or_nan(c, size_kinds[k].field)
                                 : (k == 0 ? ck_rf_num(c, "bytes", NAN) : NAN);
                if (!isfinite(v))
                    continue;
                if (kind_series[k] < 0) {
                    char f[64];
                    snprintf(f, sizeof(f), "%%s %s", size_kinds[k].name);
                    kind_series[k] = ss_add(ss, i, k % 3, f, R->runs[i].tag);
                }
                ss_point(ss, kind_series[k], at, v / 1e6);
            }
        }
    }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = "plot-checkpoint-size",
                                           .title = "Checkpoint size by kind",
                                           .xlabel = "checkpoint triggered at (s)",
                                           .ylabel = "state written (MB)",
                                           .series = ss->s,
                                           .nseries = ss->n,
                                           .lines = 1});
    chart_close(R, "checkpoints.csv");
    ss_free(ss);
}

static void plot_timeseries(rep *R, series_set *ss, const bands *B, const char *id,
                            const char *title, const char *ylabel, const char *const field[2],
                            const char *const name[2], double scale)
{
    ss->n = 0;
    for (int i = 0; i < R->n; i++) {
        int k[2];
        for (int j = 0; j < 2; j++) {
            char f[64];
            snprintf(f, sizeof(f), "%%s %s", name[j]);
            k[j] = ss_add(ss, i, j ? CK_PLOT_DASHED : CK_PLOT_SOLID, f, R->runs[i].tag);
        }
        const cJSON *p;
        cJSON_ArrayForEach(p, ck_rf_arr(R->runs[i].rf.root, "timeseries"))
        {
            double t = ck_rf_num(p, "t_s", NAN);
            for (int j = 0; j < 2; j++)
                ss_point(ss, k[j], t, num_or_nan(p, field[j]) * scale);
        }
    }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = id,
                                           .title = title,
                                           .xlabel = "time (s)",
                                           .ylabel = ylabel,
                                           .series = ss->s,
                                           .nseries = ss->n,
                                           .bands = B->b,
                                           .nbands = B->n,
                                           .lines = 1});
    chart_close(R, "timeseries.csv");
    ss_free(ss);
}

static void plot_recoveries(rep *R)
{
    ck_plot_bar bars[256];
    double seg[256][4];
    char labels[256][24];
    size_t nb = 0;
    for (int i = 0; i < R->n; i++) {
        const cJSON *rv;
        int k = 0;
        cJSON_ArrayForEach(rv, ck_rf_arr(R->runs[i].rf.root, "recoveries"))
        {
            if (nb >= 256)
                break;
            phases(rv, seg[nb]);
            snprintf(labels[nb], sizeof(labels[nb]), "%s r%d", R->runs[i].tag, ++k);
            bars[nb] = (ck_plot_bar){R->runs[i].tag, labels[nb], i, seg[nb]};
            nb++;
        }
    }
    chart_open(R);
    ck_plot_bars_svg(&R->html, &(ck_plot_bars){.id = "plot-recovery",
                                               .title = "Recovery time by phase",
                                               .ylabel = "time (s)",
                                               .seg_names = phase_names,
                                               .nseg = 4,
                                               .bars = bars,
                                               .nbars = nb});
    chart_close(R, "recoveries.csv");
}

static void plot_vertices(rep *R)
{
    static const char *const names[] = {"busy", "backpressured", "idle"};
    static const char *const fields[] = {"busy_ratio", "backpressured_ratio", "idle_ratio"};
    ck_plot_bar bars[512];
    double seg[512][3];
    size_t nb = 0;
    /* Grouped by vertex, in the first run's order, then any others'. */
    const char *seen[128];
    size_t nseen = 0;
    for (int i = 0; i < R->n; i++) {
        const cJSON *v;
        cJSON_ArrayForEach(v, ck_rf_arr(R->runs[i].rf.root, "job.vertices"))
        {
            const char *name = ck_rf_str(v, "name");
            size_t k;
            for (k = 0; name && k < nseen; k++)
                if (!strcmp(seen[k], name))
                    break;
            if (name && k == nseen && nseen < 128)
                seen[nseen++] = name;
        }
    }
    for (size_t k = 0; k < nseen; k++)
        for (int i = 0; i < R->n && nb < 512; i++) {
            const cJSON *v;
            cJSON_ArrayForEach(v, ck_rf_arr(R->runs[i].rf.root, "job.vertices"))
            {
                const char *name = ck_rf_str(v, "name");
                if (!name || strcmp(name, seen[k]) || !ck_rf_has_num(v, "busy_ratio"))
                    continue;
                for (int j = 0; j < 3; j++)
                    seg[nb][j] = ck_rf_num(v, fields[j], 0) * 100;
                bars[nb] = (ck_plot_bar){seen[k], R->runs[i].tag, i, seg[nb]};
                nb++;
            }
        }
    chart_open(R);
    ck_plot_bars_svg(&R->html, &(ck_plot_bars){.id = "plot-vertices",
                                               .title = "Busy, backpressured and idle time per vertex",
                                               .ylabel = "share of the subtasks' time (%)",
                                               .seg_names = names,
                                               .nseg = 3,
                                               .bars = bars,
                                               .nbars = nb,
                                               .ymax = 100});
    chart_close(R, "vertices.csv");
}

/* ---- CSV ------------------------------------------------------------------------- */

static void csv_num(ck_sb *b, double v)
{
    if (isfinite(v))
        ck_sb_printf(b, ",%.9g", v);
    else
        ck_sb_puts(b, ",");
}

static int write_csvs(rep *R, const char *dir, char *err, size_t errlen)
{
    ck_sb f[6] = {{0}};
    static const char *const files[6] = {"runs.csv",       "timeseries.csv", "checkpoints.csv",
                                         "recoveries.csv", "vertices.csv",   "faults.csv"};
    ck_sb_puts(&f[0], "run,label,scenario,backend,seed,state,sim_time_s,records_in,records_out,"
                      "throughput_in_rps,latency_p50_ms,latency_p99_ms,ok\n");
    ck_sb_puts(&f[1], "run,t_s,in_rps,out_rps,latency_p50_ms,latency_p99_ms\n");
    ck_sb_puts(&f[2], "run,id,kind,status,trigger_s,duration_s,alignment_max_s,sync_s,async_s,"
                      "bytes\n");
    ck_sb_puts(&f[3], "run,recovery,failure_s,detected_s,restarted_s,restored_s,"
                      "first_output_s,caught_up_s,recovery_s,detection_s,restart_s,restore_s,"
                      "catch_up_s,checkpoint\n");
    ck_sb_puts(&f[4], "run,vertex,parallelism,busy_ratio,backpressured_ratio,idle_ratio\n");
    ck_sb_puts(&f[5], "run,action,host,at_s,ended_s,restarted_s,applied\n");
    for (int i = 0; i < R->n; i++) {
        const cJSON *o = R->runs[i].rf.root, *e;
        const char *tag = R->runs[i].tag;
        ck_sb_puts(&f[0], tag);
        ck_sb_puts(&f[0], ",");
        ck_sb_csv(&f[0], R->runs[i].label);
        ck_sb_puts(&f[0], ",");
        ck_sb_csv(&f[0], ck_rf_str(o, "scenario"));
        ck_sb_puts(&f[0], ",");
        ck_sb_csv(&f[0], ck_rf_str(o, "backend"));
        csv_num(&f[0], ck_rf_num(o, "seed", NAN));
        ck_sb_puts(&f[0], ",");
        ck_sb_csv(&f[0], ck_rf_str(o, "job.state"));
        csv_num(&f[0], num_or_nan(o, "sim_time_s"));
        csv_num(&f[0], num_or_nan(o, "records_in"));
        csv_num(&f[0], num_or_nan(o, "records_out"));
        csv_num(&f[0], num_or_nan(o, "throughput_in_rps"));
        csv_num(&f[0], num_or_nan(o, "latency_ms.p50"));
        csv_num(&f[0], num_or_nan(o, "latency_ms.p99"));
        ck_sb_printf(&f[0], ",%d\n", ck_rf_bool(o, "correctness.ok"));
        cJSON_ArrayForEach(e, ck_rf_arr(o, "timeseries"))
        {
            ck_sb_puts(&f[1], tag);
            csv_num(&f[1], num_or_nan(e, "t_s"));
            csv_num(&f[1], num_or_nan(e, "in_rps"));
            csv_num(&f[1], num_or_nan(e, "out_rps"));
            csv_num(&f[1], num_or_nan(e, "latency_p50_ms"));
            csv_num(&f[1], num_or_nan(e, "latency_p99_ms"));
            ck_sb_puts(&f[1], "\n");
        }
        cJSON_ArrayForEach(e, ck_rf_arr(o, "checkpoints"))
        {
            ck_sb_puts(&f[2], tag);
            csv_num(&f[2], num_or_nan(e, "id"));
            ck_sb_puts(&f[2], ",");
            ck_sb_csv(&f[2], ck_rf_str(e, "kind"));
            ck_sb_puts(&f[2], ",");
            ck_sb_csv(&f[2], ck_rf_str(e, "status"));
            static const char *const k[] = {"trigger_s", "duration_s", "alignment_max_s",
                                            "sync_s",    "async_s",    "bytes"};
            for (int j = 0; j < 6; j++)
                csv_num(&f[2], num_or_nan(e, k[j]));
            ck_sb_puts(&f[2], "\n");
        }
        int nr = 0;
        cJSON_ArrayForEach(e, ck_rf_arr(o, "recoveries"))
        {
            ck_sb_printf(&f[3], "%s,%d", tag, ++nr);
            static const char *const k[] = {"failure_s",      "detected_s",  "restarted_s",
                                            "restored_s",     "first_output_s", "caught_up_s",
                                            "recovery_s"};
            for (int j = 0; j < 7; j++)
                csv_num(&f[3], num_or_nan(e, k[j]));
            double ph[4];
            phases(e, ph);
            for (int j = 0; j < 4; j++)
                csv_num(&f[3], ph[j]);
            csv_num(&f[3], num_or_nan(e, "checkpoint"));
            ck_sb_puts(&f[3], "\n");
        }
        cJSON_ArrayForEach(e, ck_rf_arr(o, "job.vertices"))
        {
            ck_sb_printf(&f[4], "%s,", tag);
            ck_sb_csv(&f[4], ck_rf_str(e, "name"));
            csv_num(&f[4], num_or_nan(e, "parallelism"));
            csv_num(&f[4], num_or_nan(e, "busy_ratio"));
            csv_num(&f[4], num_or_nan(e, "backpressured_ratio"));
            csv_num(&f[4], num_or_nan(e, "idle_ratio"));
            ck_sb_puts(&f[4], "\n");
        }
        cJSON_ArrayForEach(e, ck_rf_arr(o, "faults"))
        {
            ck_sb_printf(&f[5], "%s,", tag);
            ck_sb_csv(&f[5], ck_rf_str(e, "action"));
            ck_sb_puts(&f[5], ",");
            ck_sb_csv(&f[5], ck_rf_str(e, "host"));
            csv_num(&f[5], num_or_nan(e, "at_s"));
            csv_num(&f[5], num_or_nan(e, "ended_s"));
            csv_num(&f[5], num_or_nan(e, "restarted_s"));
            ck_sb_printf(&f[5], ",%d\n", ck_rf_bool(e, "applied"));
        }
    }
    int rc = 0;
    for (int k = 0; k < 6; k++) {
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", dir, files[k]);
        if (!rc && ck_sb_write(&f[k], path)) {
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            rc = -1;
        }
        ck_sb_free(&f[k]);
    }
    return rc;
}

/* ---- the page -------------------------------------------------------------------- */

static const char css[] =
    "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
    "caption{text-align:left;font-weight:bold;padding:0.3em 0}"
    "th,td{border:1px solid #ccc;padding:0.25em 0.6em}th{background:#f3f3f3}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.none,.none{color:#666;font-style:italic}"
    "figure{margin:1em 0}svg.chart{max-width:100%;height:auto}"
    "figcaption{font-size:0.8em;color:#555}.note{color:#444}"
    "ul.runs li{margin:0.2em 0}.swatch{display:inline-block;width:1em;height:0.8em;"
    "margin-right:0.4em;vertical-align:baseline}"
    "@media print{h2{page-break-before:auto}figure{page-break-inside:avoid}}";

static void page_head(rep *R)
{
    ck_sb *h = &R->html;
    ck_sb_puts(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>chandy report</title>\n<style>");
    ck_sb_puts(h, css);
    ck_sb_puts(h, "</style>\n</head>\n<body>\n<h1>chandy report</h1>\n<ul class=\"runs\">\n");
    ck_sb_puts(&R->md, "# chandy report\n\n");
    for (int i = 0; i < R->n; i++) {
        ck_sb_printf(h, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                     ck_plot_color(i));
        ck_sb_html(h, R->runs[i].label);
        ck_sb_puts(h, " <small>(");
        ck_sb_html(h, R->runs[i].rf.path);
        ck_sb_puts(h, ")</small></li>\n");
        ck_sb_puts(&R->md, "- ");
        ck_sb_md(&R->md, R->runs[i].label);
        ck_sb_puts(&R->md, " (`");
        ck_sb_md(&R->md, R->runs[i].rf.path);
        ck_sb_puts(&R->md, "`)\n");
    }
    ck_sb_puts(h, "</ul>\n<nav><a href=\"#checkpoints\">checkpoints</a> · "
                  "<a href=\"#throughput\">throughput and latency</a> · "
                  "<a href=\"#recovery\">recovery</a> · <a href=\"#vertices\">vertices</a> · "
                  "<a href=\"#network\">in-flight data</a> · "
                  "<a href=\"#correctness\">correctness</a></nav>\n");
}

static int mkdir_p(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0755) && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

const char *ck_report_published(void)
{
    return ck_published_json;
}

/* Does any run have a time series field k? */
static int any_series(rep *R, const char *k)
{
    for (int i = 0; i < R->n; i++) {
        const cJSON *p;
        cJSON_ArrayForEach(p, ck_rf_arr(R->runs[i].rf.root, "timeseries")) if (ck_rf_has_num(p, k)) return 1;
    }
    return 0;
}

int ck_report_make(const char *const *paths, int n, const char *outdir, char *err, size_t errlen)
{
    if (n < 1 || n > CK_REPORT_MAX_RUNS) {
        snprintf(err, errlen, "report: expected 1 to %d run directories, got %d",
                 CK_REPORT_MAX_RUNS, n);
        return -1;
    }
    rep R = {0};
    R.runs = calloc((size_t)n, sizeof(*R.runs));
    series_set *ss = calloc(1, sizeof(*ss));
    bands *B = calloc(1, sizeof(*B));
    cJSON *pub = cJSON_Parse(ck_published_json);
    int rc = -1;
    if (!R.runs || !ss || !B) {
        snprintf(err, errlen, "report: out of memory");
        goto out;
    }
    for (; R.n < n; R.n++)
        if (ck_runfile_load(&R.runs[R.n].rf, paths[R.n], err, errlen))
            goto out;
    if (mkdir_p(outdir)) {
        snprintf(err, errlen, "%s: cannot create the report's directory: %s", outdir,
                 strerror(errno));
        goto out;
    }
    find_differences(&R);
    page_head(&R);
    runs_table(&R);
    config_table(&R);

    section(&R, "checkpoints", "Checkpoints", NULL);
    plot_checkpoints(&R, ss);
    plot_sizes(&R, ss);
    checkpoint_table(&R);

    section(&R, "throughput", "Throughput and latency",
            "Shaded: the faults of the timeline, from when they hit to when they ended (a "
            "crashed host: until it restarted).");
    fault_bands(&R, B);
    static const char *const tf[2] = {"in_rps", "out_rps"}, *const tn[2] = {"in", "out"};
    plot_timeseries(&R, ss, B, "plot-throughput", "Throughput over time", "records/s", tf, tn, 1);
    static const char *const lf[2] = {"latency_p50_ms", "latency_p99_ms"},
                             *const ln[2] = {"p50", "p99"};
    plot_timeseries(&R, ss, B, "plot-latency", "End-to-end latency over time", "latency (ms)",
                    lf, ln, 1);
    throughput_table(&R);

    section(&R, "recovery", "Recovery",
            "Detection: from the fault to the job manager noticing it; restart: to the next "
            "attempt's deployment; restore: to every subtask running restored; catch-up: to "
            "the sources' lag back under its level before the failure.");
    plot_recoveries(&R);
    recovery_table(&R);

    section(&R, "vertices", "Busy, backpressured and idle time", NULL);
    plot_vertices(&R);

    section(&R, "network", "In-flight data and buffer size", NULL);
    static const char *const nf[2] = {"inflight_bytes", "buffer_size_bytes"},
                             *const nn[2] = {"in flight", "buffer size"};
    if (any_series(&R, nf[0]) || any_series(&R, nf[1]))
        plot_timeseries(&R, ss, B, "plot-inflight", "In-flight data and buffer size over time",
                        "bytes", nf, nn, 1);
    else {
        ck_sb_puts(&R.html, "<p class=\"none\">none: no run recorded in-flight data.</p>\n");
        ck_sb_puts(&R.md, "\nnone: no run recorded in-flight data.\n");
    }

    section(&R, "correctness", "Correctness and published figures", NULL);
    verdict_table(&R);
    published_table(&R, pub);
    ck_sb_puts(&R.html, "<p class=\"note\">Written by <code>chandy report</code>; the data of "
                        "every plot is in the CSV files beside this page.</p>\n</body>\n</html>\n");

    char path[1100];
    snprintf(path, sizeof(path), "%s/index.html", outdir);
    if (ck_sb_write(&R.html, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof(path), "%s/summary.md", outdir);
    if (ck_sb_write(&R.md, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto out;
    }
    if (write_csvs(&R, outdir, err, errlen))
        goto out;
    rc = 0;
out:
    for (int i = 0; i < R.n; i++)
        ck_runfile_free(&R.runs[i].rf);
    free(R.runs);
    free(R.keys);
    free(ss);
    free(B);
    cJSON_Delete(pub);
    ck_sb_free(&R.html);
    ck_sb_free(&R.md);
    return rc;
}
