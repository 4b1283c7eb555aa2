/*
 * report.c - the pages of report.h: a comparison of entries
 * (ck_report_make_entries), a suite's index (ck_report_index) and the
 * fidelity table (ck_report_fidelity), from tables and charts written once.
 *
 * Invariants: everything shown comes from run.json trees through the
 * runfile.h accessors (a field a run lacks is "-" in a table and a gap or
 * "none" in a chart, never an error); an entry of several runs shows the
 * median and the spread (agg_of), one of a single run its value; the HTML
 * and the Markdown of a table are written together (t_begin, t_row), so
 * they hold the same cells; the CSV files hold every run's own values.
 * Every string from a run.json or a suite is written through ck_sb_html,
 * ck_sb_md (ck_sb_md_block at a line's start) or ck_sb_csv, never as
 * markup or a formula; every number a chart draws is one plot.h can
 * draw (ck_plot_drawable), and a table's number too long for its cell is
 * written with six significant digits (fmt_num), never cut.
 */
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
#include "summary.h"

/* An entry: one run, or a sweep point's runs over seeds. */
typedef struct entry {
    ck_runfile *rf;
    int nrf;
    char tag[8];     /* #1 */
    char label[700]; /* #1 and what names it */
} entry;

typedef struct rep {
    entry *e;
    int n, cap; /* entries loaded, allocated */
    char idp[16]; /* prefix of the charts' ids: unique on a page of several reports */
    char csvdir[40]; /* where the CSV files are, from the page ("" or "c1/") */
    const char **keys; /* configuration keys whose values differ between entries */
    int nkeys;
    ck_sb html, md;
} rep;

#define ROOT(E, r) ((E)->rf[r].root)

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

/* ---- aggregation over an entry's runs -------------------------------------------- */

/* Median and spread of the finite values among v[0..n) (reordered). */
typedef struct agg {
    double med, lo, hi;
    int n;
} agg;

static agg agg_of(double *v, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[m++] = v[i];
    agg a = {NAN, NAN, NAN, (int)m};
    if (!m)
        return a;
    qsort(v, m, sizeof(*v), cmp_d);
    a.lo = v[0];
    a.hi = v[m - 1];
    a.med = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
    return a;
}

/* A field of every run of e (a dotted path), aggregated. */
static agg field_agg(const entry *e, const char *k)
{
    double v[CK_REPORT_MAX_SEEDS];
    int n = 0;
    for (int r = 0; r < e->nrf && n < CK_REPORT_MAX_SEEDS; r++)
        v[n++] = num_or_nan(ROOT(e, r), k);
    return agg_of(v, (size_t)n);
}

/* v with format f (one fixed-point conversion), or, when that would run
 * to more digits than a cell holds, with six significant ones. */
static void fmt_num(char *buf, size_t len, const char *f, double v)
{
    if (fabs(v) >= 1e16)
        snprintf(buf, len, "%.6g", v);
    else
        snprintf(buf, len, f, v);
}

/* "5.7", or "5.7 (5.1-6.2)" when the runs differ; "-" when none has it. */
static void fmt_agg(char *buf, size_t len, agg a, const char *f)
{
    if (!a.n) {
        snprintf(buf, len, "-");
        return;
    }
    char m[48], lo[48], hi[48];
    fmt_num(m, sizeof(m), f, a.med);
    fmt_num(lo, sizeof(lo), f, a.lo);
    fmt_num(hi, sizeof(hi), f, a.hi);
    if (a.n == 1 || !strcmp(lo, hi))
        snprintf(buf, len, "%s", m);
    else
        snprintf(buf, len, "%s (%s–%s)", m, lo, hi);
}

/* ---- naming the entries ---------------------------------------------------------- */

static int has_key(const rep *R, const char *k)
{
    for (int i = 0; i < R->nkeys; i++)
        if (!strcmp(R->keys[i], k))
            return 1;
    return 0;
}

static const cJSON *cfg_of(const entry *e)
{
    return ck_rf_get(ROOT(e, 0), "config");
}

/* The seeds of an entry: "42", "1..3" or "1, 5, 9". */
static void seeds_text(const entry *e, char *buf, size_t len)
{
    double v[CK_REPORT_MAX_SEEDS];
    int n = 0;
    for (int r = 0; r < e->nrf && n < CK_REPORT_MAX_SEEDS; r++)
        v[n++] = ck_rf_num(ROOT(e, r), "seed", 0);
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    int run = 1;
    for (int i = 1; i < n; i++)
        run &= v[i] == v[i - 1] + 1;
    char a[32], z[32];
    fmt_num(a, sizeof(a), "%.0f", v[0]);
    fmt_num(z, sizeof(z), "%.0f", v[n - 1]);
    if (n == 1)
        snprintf(buf, len, "%s", a);
    else if (run)
        snprintf(buf, len, "%s..%s", a, z);
    else {
        size_t at = 0;
        for (int i = 0; i < n && at < len; i++) {
            fmt_num(a, sizeof(a), "%.0f", v[i]);
            at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", a);
        }
    }
}

static void find_differences(rep *R, const ck_report_entry *spec)
{
    R->keys = calloc(1, sizeof(*R->keys));
    for (int i = 0; i < R->n; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cfg_of(&R->e[i]))
        {
            if (has_key(R, e->string))
                continue;
            char *first = cfg_text(cfg_of(&R->e[0]), e->string);
            int differs = 0;
            for (int j = 1; j < R->n && !differs; j++) {
                char *t = cfg_text(cfg_of(&R->e[j]), e->string);
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
    for (int i = 0; i < R->n; i++) {
        entry *E = &R->e[i];
        const cJSON *root = ROOT(E, 0);
        snprintf(E->tag, sizeof(E->tag), "#%d", i + 1);
        char seeds[200];
        seeds_text(E, seeds, sizeof(seeds));
        ck_sb l = {0};
        ck_sb_printf(&l, "%s ", E->tag);
        if (spec[i].label)
            ck_sb_printf(&l, "%s, ", spec[i].label);
        ck_sb_printf(&l, "%s, %s, seed%s %s", ck_rf_str(root, "scenario"),
                     ck_rf_str(root, "backend"), E->nrf > 1 ? "s" : "", seeds);
        for (int k = 0; k < R->nkeys && !spec[i].label; k++) {
            char *t = cfg_text(cfg_of(E), R->keys[k]);
            ck_sb_printf(&l, ", %s=%s", R->keys[k], t ? t : "?");
            free(t);
        }
        snprintf(E->label, sizeof(E->label), "%s", l.p ? l.p : E->tag);
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
    ck_sb_puts(&R->md, "\n**");
    ck_sb_md(&R->md, caption);
    ck_sb_puts(&R->md, "**\n\n|");
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
        const char *full = NULL;
        for (int i = 0; !c && i < R->n; i++)
            if (!strcmp(cells[0], R->e[i].tag))
                full = R->e[i].label;
        if (full) { /* an entry's tag: its name on hover */
            ck_sb_puts(&R->html, "<td title=\"");
            ck_sb_html(&R->html, full);
            ck_sb_puts(&R->html, "\">");
        } else {
            ck_sb_puts(&R->html, c ? "<td class=\"n\">" : "<td>");
        }
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
    ck_sb_puts(&R->md, "\n## ");
    ck_sb_md(&R->md, title);
    ck_sb_puts(&R->md, "\n");
    if (note) {
        ck_sb_puts(&R->html, "<p class=\"note\">");
        ck_sb_html(&R->html, note);
        ck_sb_puts(&R->html, "</p>\n");
        ck_sb_puts(&R->md, "\n");
        ck_sb_md_block(&R->md, note);
        ck_sb_puts(&R->md, "\n");
    }
}

/* ---- the tables ------------------------------------------------------------------ */

/* The texts v[0..n) (NULL: "-") as one: "a" when all are a, else each
 * distinct one with how many have it, "a x2, b x1", in order. */
static void distinct_text(const char *const *v, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int r = 0; r < n; r++) {
        const char *s = v[r] ? v[r] : "-";
        int seen = 0, count = 0;
        for (int q = 0; q < n; q++) {
            int same = !strcmp(v[q] ? v[q] : "-", s);
            seen |= same && q < r;
            count += same;
        }
        if (!seen && at < len)
            at += (size_t)snprintf(buf + at, len - at, count == n ? "%s%s" : "%s%s x%d",
                                   at ? ", " : "", s, count);
    }
}

static void runs_table(rep *R)
{
    static const char *const head[] = {"entry", "scenario", "backend", "seeds", "job",
                                       "time (s)", "wall (s)"};
    table t;
    t_begin(&t, R, "Runs", head, 7);
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        const cJSON *o = ROOT(E, 0);
        char seeds[200], tm[80], wall[80], state[200];
        seeds_text(E, seeds, sizeof(seeds));
        fmt_agg(tm, sizeof(tm), field_agg(E, "sim_time_s"), "%.3f");
        fmt_agg(wall, sizeof(wall), field_agg(E, "wall_time_s"), "%.2f");
        /* The job's end state, and how many runs ended so when they differ. */
        const char *st[CK_REPORT_MAX_SEEDS];
        for (int r = 0; r < E->nrf; r++)
            st[r] = ck_rf_str(ROOT(E, r), "job.state");
        distinct_text(st, E->nrf, state, sizeof(state));
        const char *cells[] = {E->tag, ck_rf_str(o, "scenario"), ck_rf_str(o, "backend"),
                               seeds, state, tm, wall};
        t_row(&t, cells);
    }
    t_end(&t);
}

static void config_table(rep *R)
{
    const char *head[1 + CK_REPORT_MAX_RUNS];
    head[0] = "configuration key";
    for (int i = 0; i < R->n; i++)
        head[1 + i] = R->e[i].tag;
    table t;
    t_begin(&t, R, "Configuration that differs between the entries", head, 1 + R->n);
    if (!R->nkeys)
        t_none(&t);
    for (int k = 0; k < R->nkeys; k++) {
        char *vals[CK_REPORT_MAX_RUNS];
        const char *cells[1 + CK_REPORT_MAX_RUNS];
        cells[0] = R->keys[k];
        for (int i = 0; i < R->n; i++) {
            vals[i] = cfg_text(cfg_of(&R->e[i]), R->keys[k]);
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

/* One run's checkpoint figures: completed, failed, duration p50 p90 p99
 * max (ms), size p50, last size (bytes), alignment p50 and max (ms). */
#define CP_FIGS 10
static void cp_figures(const cJSON *root, double out[CP_FIGS])
{
    dvec dur = {0}, size = {0}, al = {0};
    int done = 0, failed = 0;
    double last = NAN;
    const cJSON *c;
    cJSON_ArrayForEach(c, ck_rf_arr(root, "checkpoints"))
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
    out[0] = done;
    out[1] = failed;
    out[2] = quantile(dur.v, dur.n, 0.5);
    out[3] = quantile(dur.v, dur.n, 0.9);
    out[4] = quantile(dur.v, dur.n, 0.99);
    out[5] = quantile(dur.v, dur.n, 1.0);
    out[6] = quantile(size.v, size.n, 0.5);
    out[7] = last;
    out[8] = quantile(al.v, al.n, 0.5);
    out[9] = quantile(al.v, al.n, 1.0);
    free(dur.v);
    free(size.v);
    free(al.v);
}

/* A table of figures per entry: figs fills nfigs (at most FIG_MAX) of a
 * run's, and each cell aggregates them over the entry's runs. */
#define FIG_MAX 16
static void figures_table(rep *R, const char *caption, const char *const *head, int nfigs,
                          const char *const *fmt, void (*figs)(const cJSON *, double *))
{
    table t;
    t_begin(&t, R, caption, head, nfigs + 1);
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        double fig[CK_REPORT_MAX_SEEDS][FIG_MAX];
        for (int r = 0; r < E->nrf; r++)
            figs(ROOT(E, r), fig[r]);
        char cell[FIG_MAX + 1][80];
        const char *cells[FIG_MAX + 1] = {E->tag};
        for (int k = 0; k < nfigs; k++) {
            double v[CK_REPORT_MAX_SEEDS];
            for (int r = 0; r < E->nrf; r++)
                v[r] = fig[r][k];
            fmt_agg(cell[k + 1], sizeof(cell[0]), agg_of(v, (size_t)E->nrf), fmt[k]);
            cells[k + 1] = cell[k + 1];
        }
        t_row(&t, cells);
    }
    t_end(&t);
}

static void checkpoint_table(rep *R)
{
    static const char *const head[] = {
        "entry", "completed", "failed", "duration p50 (ms)", "p90", "p99", "max",
        "size p50 (bytes)", "last size (bytes)", "alignment p50 (ms)", "alignment max (ms)"};
    static const char *const f[CP_FIGS] = {"%.0f", "%.0f", "%.1f", "%.1f", "%.1f",
                                           "%.1f", "%.0f", "%.0f", "%.1f", "%.1f"};
    figures_table(R, "Checkpoints (completed ones; savepoints apart)", head, CP_FIGS, f,
                  cp_figures);
}

/* What Flink's state-backend comparisons measure, per run: checkpoint
 * duration p50 and p99, size (what each uploaded) p50 and p99, the last
 * one's full size, everything uploaded, the first recovery and its
 * restore's download and replay, the materializations and their bytes. */
#define ST_FIGS 11
static void state_figures(const cJSON *o, double v[ST_FIGS])
{
    v[0] = num_or_nan(o, "checkpoint_summary.duration_p50_s") * 1e3;
    v[1] = num_or_nan(o, "checkpoint_summary.duration_p99_s") * 1e3;
    v[2] = num_or_nan(o, "checkpoint_summary.bytes_p50") / 1e6;
    v[3] = num_or_nan(o, "checkpoint_summary.bytes_p99") / 1e6;
    v[4] = num_or_nan(o, "checkpoint_summary.last_bytes_full") / 1e6;
    double up = 0, mats = 0, mbytes = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, ck_rf_arr(o, "checkpoints"))
        if (is_checkpoint(c) && completed(c))
            up += ck_rf_num(c, "bytes", 0);
    v[5] = up / 1e6;
    v[6] = num_or_nan(o, "recoveries.0.recovery_s");
    v[7] = num_or_nan(o, "recoveries.0.restore.download_s");
    v[8] = num_or_nan(o, "recoveries.0.restore.replay_s");
    cJSON_ArrayForEach(c, ck_rf_arr(o, "materializations"))
    {
        mats++;
        mbytes += ck_rf_num(c, "bytes", 0);
    }
    v[9] = mats;
    v[10] = mbytes / 1e6;
}

static void state_table(rep *R)
{
    static const char *const head[] = {
        "entry", "duration p50 (ms)", "p99", "size p50 (MB)", "p99", "full size, last (MB)",
        "uploaded (MB)", "recovery (s)", "restore download (s)", "replay (s)",
        "materializations", "their bytes (MB)"};
    static const char *const f[ST_FIGS] = {"%.0f", "%.0f", "%.2f", "%.2f", "%.2f", "%.1f",
                                           "%.2f", "%.3f", "%.3f", "%.0f", "%.1f"};
    figures_table(R, "State backends: checkpoints, uploads and recovery", head, ST_FIGS, f,
                  state_figures);
}

/*
 * Events drawn as stacked bars of their phases, one bar per event: the
 * recoveries and the rescales of a run. An event's phases are times in
 * seconds (NaN for a phase it never reached); an entry's bar for its
 * k-th event stacks each phase's median over the runs that drew it.
 */
typedef struct phased {
    const char *arr;                /* the run.json array: "recoveries", "rescales" */
    int nph;                        /* phases, at most MAX_PHASES */
    const char *const *names;       /* of the phases: the legend */
    /* Fills ph[nph]; 0 when the event has no bar (it never ran). */
    int (*phases)(const cJSON *ev, double *ph);
    const char *total;              /* the event's own total */
    const char *mark;               /* "#1 r2": entry #1's second event */
    const char *id, *title, *csv;   /* the chart */
    double scale;                   /* seconds to the chart's unit */
    const char *ylabel;
} phased;

#define MAX_PHASES 8

/* A recovery's phases: detection, restart, restore, catch-up. */
static int recovery_phases(const cJSON *rv, double *ph)
{
    double f = num_or_nan(rv, "failure_s"), d = num_or_nan(rv, "detected_s"),
           s = num_or_nan(rv, "restarted_s"), r = num_or_nan(rv, "restored_s"),
           c = num_or_nan(rv, "caught_up_s");
    ph[0] = d - f;
    ph[1] = s - d;
    ph[2] = r - s;
    ph[3] = c - r;
    return 1;
}

static const char *const phase_names[] = {"detection", "restart", "restore", "catch-up"};

static const phased recovery_kind = {.arr = "recoveries",
                                     .nph = 4,
                                     .names = phase_names,
                                     .phases = recovery_phases,
                                     .total = "recovery_s",
                                     .mark = "r",
                                     .id = "plot-recovery",
                                     .title = "Recovery time by phase",
                                     .csv = "recoveries.csv",
                                     .scale = 1,
                                     .ylabel = "time (s)"};

/* Has the rescale run (done, or under way when the run ended)? A refused,
 * failed or interrupted one has no phases to draw. */
static int rescale_ran(const cJSON *rs)
{
    const char *o = ck_rf_str(rs, "outcome");
    return o && (!strcmp(o, "done") || !strcmp(o, "under_way"));
}

/*
 * A rescale's phases: snapshot (trigger to its savepoint or the checkpoint
 * it waited for), stop (to the old attempt gone), deploy (to the new one
 * deployed), download and rebuild (the slowest subtask's), the rest of
 * the restore (to every subtask running) and catch-up. A phase starts
 * where the last one known ended, so that a rescale via checkpoint that
 * stopped waiting (no snapshot_s) still adds up to its rescale_s; the
 * slowest download and rebuild (maybe of two subtasks) are cut to the
 * restore they are part of.
 */
static int rescale_phases(const cJSON *rs, double *ph)
{
    double t = num_or_nan(rs, "trigger_s"), sn = num_or_nan(rs, "snapshot_s"),
           st = num_or_nan(rs, "stopped_s"), de = num_or_nan(rs, "deployed_s"),
           re = num_or_nan(rs, "restored_s"), cu = num_or_nan(rs, "caught_up_s");
    double from = t;
    ph[0] = sn - from;
    from = isfinite(sn) ? sn : from;
    ph[1] = st - from;
    from = isfinite(st) ? st : from;
    ph[2] = de - from;
    double restore = re - de;
    double dl = num_or_nan(rs, "restore.download_s"), rb = num_or_nan(rs, "restore.rebuild_s");
    if (isfinite(restore)) {
        dl = fmax(0, fmin(isfinite(dl) ? dl : 0, restore));
        rb = fmax(0, fmin(isfinite(rb) ? rb : 0, restore - dl));
        ph[3] = dl;
        ph[4] = rb;
        ph[5] = restore - dl - rb;
    } else {
        ph[3] = ph[4] = ph[5] = NAN;
    }
    ph[6] = cu - re;
    return rescale_ran(rs);
}

static const char *const rescale_phase_names[] = {
    "snapshot", "stop", "deploy", "download", "rebuild", "rest of restore", "catch-up"};

static const phased rescale_kind = {.arr = "rescales",
                                    .nph = 7,
                                    .names = rescale_phase_names,
                                    .phases = rescale_phases,
                                    .total = "rescale_s",
                                    .mark = "s",
                                    .id = "plot-rescale",
                                    .title = "Rescale time by phase",
                                    .csv = "rescales.csv",
                                    .scale = 1e3,
                                    .ylabel = "time (ms)"};

/* The most events of kind P any run of e had. */
static int max_events(const entry *e, const phased *P)
{
    int m = 0;
    for (int r = 0; r < e->nrf; r++) {
        int n = cJSON_GetArraySize(ck_rf_arr(ROOT(e, r), P->arr));
        m = n > m ? n : m;
    }
    return m;
}

/* Event k of e: phase j (0 to nph - 1) or its total (j = nph), over the
 * runs whose event k has a bar. */
static agg event_agg(const entry *e, const phased *P, int k, int j)
{
    double v[CK_REPORT_MAX_SEEDS];
    int n = 0;
    for (int r = 0; r < e->nrf; r++) {
        const cJSON *ev = cJSON_GetArrayItem(ck_rf_arr(ROOT(e, r), P->arr), k);
        double ph[MAX_PHASES];
        if (!ev || !P->phases(ev, ph))
            continue;
        v[n++] = j < P->nph ? ph[j] : num_or_nan(ev, P->total);
    }
    return agg_of(v, (size_t)n);
}

/* Did event k of e run (have a bar) in any run of e? */
static int event_ran(const entry *e, const phased *P, int k)
{
    for (int r = 0; r < e->nrf; r++) {
        const cJSON *ev = cJSON_GetArrayItem(ck_rf_arr(ROOT(e, r), P->arr), k);
        double ph[MAX_PHASES];
        if (ev && P->phases(ev, ph))
            return 1;
    }
    return 0;
}

/* Event k of e: a field of it (a dotted path), over the runs that have it. */
static agg event_field_agg(const entry *e, const phased *P, int k, const char *field)
{
    double v[CK_REPORT_MAX_SEEDS];
    int n = 0;
    for (int r = 0; r < e->nrf; r++) {
        const cJSON *ev = cJSON_GetArrayItem(ck_rf_arr(ROOT(e, r), P->arr), k);
        if (ev)
            v[n++] = num_or_nan(ev, field);
    }
    return agg_of(v, (size_t)n);
}

/* a in another unit: its figures times f. */
static agg scaled(agg a, double f)
{
    a.med *= f;
    a.lo *= f;
    a.hi *= f;
    return a;
}

/* The cells of event k of e in a table of events of kind P, w bytes
 * apart from s: its number in cell 1, its phases from cell first on and
 * its total in cell total, in the unit of P's chart, with format f. */
static void event_cells(const entry *e, const phased *P, int k, const char *f, char *s, size_t w,
                        int first, int total)
{
    snprintf(s + w, w, "%d", k + 1);
    for (int p = 0; p < P->nph; p++)
        fmt_agg(s + (size_t)(first + p) * w, w, scaled(event_agg(e, P, k, p), P->scale), f);
    fmt_agg(s + (size_t)total * w, w, scaled(event_agg(e, P, k, P->nph), P->scale), f);
}

/* A row of t (at most 32 columns): e's tag, then cells 1 to t->cols - 1
 * of s, w bytes apart. */
static void event_row(table *t, const entry *e, const char *s, size_t w)
{
    const char *cells[32] = {e->tag};
    for (int c = 1; c < t->cols && c < 32; c++)
        cells[c] = s + (size_t)c * w;
    t_row(t, cells);
}

static void recovery_table(rep *R)
{
    static const char *const head[] = {"entry",         "recovery",    "failure at (s)",
                                       "detection (s)", "restart (s)", "restore (s)",
                                       "catch-up (s)",  "total (s)",   "from checkpoint",
                                       "restarted subtasks"};
    table t;
    t_begin(&t, R, "Recoveries", head, 10);
    int rows = 0;
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        for (int k = 0; k < max_events(E, &recovery_kind); k++) {
            char s[10][80];
            event_cells(E, &recovery_kind, k, "%.3f", s[0], sizeof(s[0]), 3, 7);
            fmt_agg(s[2], sizeof(s[2]), event_field_agg(E, &recovery_kind, k, "failure_s"),
                    "%.3f");
            double v[CK_REPORT_MAX_SEEDS];
            int n = 0;
            for (int r = 0; r < E->nrf; r++) {
                const cJSON *rv = cJSON_GetArrayItem(ck_rf_arr(ROOT(E, r), "recoveries"), k);
                if (rv)
                    v[n++] = ck_rf_has_num(rv, "checkpoint") ? ck_rf_num(rv, "checkpoint", 0) : 0;
            }
            agg c = agg_of(v, (size_t)n);
            if (c.n && c.hi == 0)
                snprintf(s[8], sizeof(s[8]), "none (the start)");
            else
                fmt_agg(s[8], sizeof(s[8]), c, "%.0f");
            /* How much of the job it restarted (region failover: its
             * failed regions), of how many subtasks. */
            n = 0;
            double of = 0;
            for (int r = 0; r < E->nrf; r++) {
                const cJSON *rv = cJSON_GetArrayItem(ck_rf_arr(ROOT(E, r), "recoveries"), k);
                if (rv)
                    v[n++] = cJSON_GetArraySize(ck_rf_arr(rv, "restarted_subtasks"));
                of = num_or_nan(ROOT(E, r), "job.subtasks");
            }
            fmt_agg(s[9], sizeof(s[9]), agg_of(v, (size_t)n), "%.0f");
            if (of == of && strlen(s[9]) + 24 < sizeof(s[9])) {
                char ofs[32];
                fmt_num(ofs, sizeof(ofs), "%.0f", of);
                snprintf(s[9] + strlen(s[9]), sizeof(s[9]) - strlen(s[9]), " of %s", ofs);
            }
            event_row(&t, E, s[0], sizeof(s[0]));
            rows++;
        }
    }
    if (!rows)
        t_none(&t);
    t_end(&t);
}

/* A text of each run's rescale k of e (of the run's root and the
 * rescale), as distinct_text joins them over the runs that have it. */
static void rescale_text(const entry *e, int k,
                         void (*of)(const cJSON *, const cJSON *, char *, size_t), char *buf,
                         size_t len)
{
    char t[CK_REPORT_MAX_SEEDS][400];
    const char *v[CK_REPORT_MAX_SEEDS];
    int n = 0;
    for (int r = 0; r < e->nrf; r++) {
        const cJSON *rs = cJSON_GetArrayItem(ck_rf_arr(ROOT(e, r), "rescales"), k);
        if (!rs)
            continue;
        of(ROOT(e, r), rs, t[n], sizeof(t[n]));
        v[n] = t[n];
        n++;
    }
    distinct_text(v, n, buf, len);
}

static void rescale_via(const cJSON *root, const cJSON *rs, char *buf, size_t len)
{
    (void)root;
    const char *via = ck_rf_str(rs, "via");
    snprintf(buf, len, "%s", via ? via : "-");
}

/* What it changed, "double 2->4, some 2->4"; for one that never deployed
 * (its parallelism after is the one before), what its event asked for,
 * "asked double 2->3"; else "unchanged". */
static void rescale_ops(const cJSON *root, const cJSON *rs, char *buf, size_t len)
{
    const cJSON *before = ck_rf_get(rs, "parallelism_before");
    if (ck_summary_rescaled(before, ck_rf_get(rs, "parallelism_after"), 8, buf, len))
        return;
    double at = ck_rf_num(rs, "event", -1);
    const cJSON *ev = at >= 0 && at < 1e6 ? cJSON_GetArrayItem(ck_rf_arr(root, "faults"), (int)at)
                                          : NULL;
    char asked[400];
    if (ev && ck_summary_rescaled(before, ck_rf_get(ev, "parallelism"), 8, asked, sizeof(asked)))
        snprintf(buf, len, "asked %s", asked);
    else
        snprintf(buf, len, "unchanged");
}

/* "done", or "refused: the job is rescaling already". */
static void rescale_outcome(const cJSON *root, const cJSON *rs, char *buf, size_t len)
{
    (void)root;
    const char *o = ck_rf_str(rs, "outcome"), *why = ck_rf_str(rs, "why");
    snprintf(buf, len, "%s%s%s", o ? o : "-", why ? ": " : "", why ? why : "");
}

/* Every rescale of every entry, refused ones too: what it changed, how
 * it ended, and its phases as the chart stacks them. */
static void rescale_table(rep *R)
{
    const phased *P = &rescale_kind;
    enum { COLS = 6 + 7 + 2 };
    static const char *const head[COLS] = {
        "entry",         "rescale",         "via",           "parallelism",
        "outcome",       "trigger at (s)",  "snapshot (ms)", "stop (ms)",
        "deploy (ms)",   "download (ms)",   "rebuild (ms)",  "rest of restore (ms)",
        "catch-up (ms)", "downloaded (bytes)", "rescale, to restored (ms)"};
    table t;
    t_begin(&t, R, "Rescales", head, COLS);
    int rows = 0;
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        for (int k = 0; k < max_events(E, P); k++) {
            char s[COLS][600];
            event_cells(E, P, k, "%.2f", s[0], sizeof(s[0]), 6, 14);
            rescale_text(E, k, rescale_via, s[2], sizeof(s[2]));
            rescale_text(E, k, rescale_ops, s[3], sizeof(s[3]));
            rescale_text(E, k, rescale_outcome, s[4], sizeof(s[4]));
            fmt_agg(s[5], sizeof(s[5]), event_field_agg(E, P, k, "trigger_s"), "%.3f");
            fmt_agg(s[13], sizeof(s[13]), event_field_agg(E, P, k, "restore.bytes"), "%.0f");
            event_row(&t, E, s[0], sizeof(s[0]));
            rows++;
        }
    }
    if (!rows)
        t_none(&t);
    t_end(&t);
}

static void throughput_table(rep *R)
{
    static const char *const head[] = {"entry",
                                       "records in",
                                       "records out",
                                       "throughput in (records/s)",
                                       "out (records/s)",
                                       "latency p50 (ms)",
                                       "p99 (ms)",
                                       "max (ms)"};
    static const char *const k[] = {"records_in",        "records_out",    "throughput_in_rps",
                                    "throughput_out_rps", "latency_ms.p50", "latency_ms.p99",
                                    "latency_ms.max"};
    static const char *const f[] = {"%.0f", "%.0f", "%.0f", "%.0f", "%.2f", "%.2f", "%.2f"};
    table t;
    t_begin(&t, R, "Throughput and end-to-end latency", head, 8);
    for (int i = 0; i < R->n; i++) {
        char s[8][80];
        const char *cells[8] = {R->e[i].tag};
        for (int c = 0; c < 7; c++) {
            fmt_agg(s[c + 1], sizeof(s[0]), field_agg(&R->e[i], k[c]), f[c]);
            cells[c + 1] = s[c + 1];
        }
        t_row(&t, cells);
    }
    t_end(&t);
}

static void verdict_table(rep *R)
{
    static const char *const head[] = {"entry",    "guarantee", "verdict",    "expected",
                                       "received", "lost",      "duplicated", "unexpected"};
    static const char *const k[] = {"expected", "received", "lost", "duplicated", "unexpected"};
    table t;
    t_begin(&t, R, "Correctness of the output (counts added up over an entry's runs)", head, 8);
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        const cJSON *c0 = ck_rf_get(ROOT(E, 0), "correctness");
        char s[8][80];
        const char *g = ck_rf_str(c0, "guarantee");
        int partial = 0, wrong = 0, missing = 0;
        double sum[5] = {0};
        for (int r = 0; r < E->nrf; r++) {
            const cJSON *c = ck_rf_get(ROOT(E, r), "correctness");
            missing += !c;
            partial |= ck_rf_bool(c, "partial");
            wrong += c && !ck_rf_bool(c, "ok");
            for (int j = 0; j < 5; j++)
                sum[j] += ck_rf_num(c, k[j], 0);
        }
        snprintf(s[1], sizeof(s[1]), "%s%s", g ? g : "-", partial ? " (partial)" : "");
        if (missing == E->nrf)
            snprintf(s[2], sizeof(s[2]), "-");
        else if (!wrong)
            snprintf(s[2], sizeof(s[2]), "correct");
        else if (E->nrf == 1)
            snprintf(s[2], sizeof(s[2]), "WRONG");
        else
            snprintf(s[2], sizeof(s[2]), "WRONG in %d of %d runs", wrong, E->nrf);
        const char *cells[8] = {E->tag, s[1], s[2]};
        for (int j = 0; j < 5; j++) {
            if (missing == E->nrf)
                snprintf(s[3 + j], sizeof(s[0]), "-");
            else
                fmt_num(s[3 + j], sizeof(s[0]), "%.0f", sum[j]);
            cells[3 + j] = s[3 + j];
        }
        t_row(&t, cells);
    }
    t_end(&t);
}

/* A published figure's configuration values (its "config", if any) and
 * other run.json values (its "when": paths as metrics have) are those of
 * the run: the same scenario may be run another way. */
static int config_matches(const cJSON *fig, const cJSON *root)
{
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(fig, "config"), *kv;
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(root, "config");
    cJSON_ArrayForEach(kv, want)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(have, kv->string);
        if (!v || !cJSON_Compare(v, kv, 1))
            return 0;
    }
    cJSON_ArrayForEach(kv, cJSON_GetObjectItemCaseSensitive(fig, "when"))
    {
        const cJSON *v = ck_rf_get(root, kv->string);
        if (!v || !cJSON_Compare(v, kv, 1))
            return 0;
    }
    return 1;
}

/* Flink's published figures next to the entries of the scenarios that
 * reproduce them. */
static void published_table(rep *R, const cJSON *pub)
{
    static const char *const head[] = {"entry", "figure", "Flink", "chandy", "source"};
    table t;
    t_begin(&t, R, "Published Flink figures these runs reproduce", head, 5);
    int rows = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, ck_rf_arr(pub, "figures"))
    {
        const char *sc = ck_rf_str(f, "scenario"), *metric = ck_rf_str(f, "metric");
        const char *unit = ck_rf_str(f, "unit"), *minus = ck_rf_str(f, "minus");
        for (int i = 0; sc && metric && i < R->n; i++) {
            const entry *E = &R->e[i];
            if (strcmp(sc, ck_rf_str(ROOT(E, 0), "scenario")) || !config_matches(f, ROOT(E, 0)))
                continue;
            double v[CK_REPORT_MAX_SEEDS];
            for (int r = 0; r < E->nrf; r++)
                v[r] = (num_or_nan(ROOT(E, r), metric) -
                        (minus ? num_or_nan(ROOT(E, r), minus) : 0)) *
                       ck_rf_num(f, "scale", 1);
            char fl[100], ch[120], fmtd[80];
            const char *spread = ck_rf_str(f, "spread");
            snprintf(fl, sizeof(fl), "%g%s%s %s", ck_rf_num(f, "flink", NAN), spread ? " " : "",
                     spread ? spread : "", unit ? unit : "");
            agg a = agg_of(v, (size_t)E->nrf);
            fmt_agg(fmtd, sizeof(fmtd), a, "%.4g");
            if (a.n)
                snprintf(ch, sizeof(ch), "%s %s", fmtd, unit ? unit : "");
            else
                snprintf(ch, sizeof(ch), "- (no %s in run.json)", metric);
            const char *cells[] = {E->tag, ck_rf_str(f, "figure"), fl, ch, ck_rf_str(f, "source")};
            t_row(&t, cells);
            rows++;
        }
    }
    if (!rows)
        t_none(&t);
    t_end(&t);
}

/* ---- the plots ------------------------------------------------------------------- */

/* A chart's id on the page. */
static const char *pid(const rep *R, char *buf, const char *id)
{
    snprintf(buf, 64, "%s%s", R->idp, id);
    return buf;
}

static void chart_open(rep *R)
{
    ck_sb_puts(&R->html, "<figure>\n");
}

/* Under each chart: its runs by name (scenario, backend, seeds, the keys
 * that differ), in their colours, and where its data is. */
static void chart_close(rep *R, const char *csv)
{
    ck_sb_puts(&R->html, "<figcaption>");
    for (int i = 0; i < R->n; i++) {
        ck_sb_printf(&R->html, "<span class=\"swatch\" style=\"background:%s\"></span>",
                     ck_plot_color(i));
        ck_sb_html(&R->html, R->e[i].label);
        ck_sb_puts(&R->html, "<br>");
    }
    ck_sb_printf(&R->html, "Data: <a href=\"%s%s\">%s</a></figcaption>\n</figure>\n",
                 R->csvdir, csv, csv);
}

#define MAX_SERIES (CK_REPORT_MAX_RUNS * 4)

/* The series of one chart, with their points. */
typedef struct series_set {
    ck_plot_series s[MAX_SERIES];
    dvec x[MAX_SERIES], y[MAX_SERIES], lo[MAX_SERIES], hi[MAX_SERIES];
    int spread[MAX_SERIES];
    char label[MAX_SERIES][96];
    size_t n;
} series_set;

static int ss_add(series_set *ss, int ri, int style, const char *fmtlabel, const char *tag)
{
    if (ss->n >= MAX_SERIES)
        return -1;
    size_t k = ss->n++;
    snprintf(ss->label[k], sizeof(ss->label[k]), fmtlabel, tag);
    ss->x[k] = ss->y[k] = ss->lo[k] = ss->hi[k] = (dvec){0};
    ss->spread[k] = 0;
    ss->s[k] = (ck_plot_series){.label = ss->label[k], .run = ri, .style = style};
    return (int)k;
}

/* Extracts one run's points of a series, by ordinal (the i-th point of
 * every run is aggregated with the i-th of the others). */
typedef void (*extract_fn)(const cJSON *root, const void *arg, dvec *x, dvec *y);

/* Series k: the points of e's runs, each the median over the runs that
 * have it, with the spread when there are several. */
static void ss_fill(series_set *ss, int k, const entry *e, extract_fn f, const void *arg)
{
    if (k < 0)
        return;
    dvec xs[CK_REPORT_MAX_SEEDS] = {{0}}, ys[CK_REPORT_MAX_SEEDS] = {{0}};
    size_t most = 0;
    for (int r = 0; r < e->nrf; r++) {
        f(ROOT(e, r), arg, &xs[r], &ys[r]);
        most = xs[r].n > most ? xs[r].n : most;
    }
    ss->spread[k] = e->nrf > 1;
    for (size_t i = 0; i < most; i++) {
        double xv[CK_REPORT_MAX_SEEDS], yv[CK_REPORT_MAX_SEEDS];
        int n = 0, m = 0;
        for (int r = 0; r < e->nrf; r++)
            if (i < xs[r].n && i < ys[r].n) {
                xv[n++] = xs[r].v[i];
                yv[m++] = ys[r].v[i];
            }
        agg ax = agg_of(xv, (size_t)n), ay = agg_of(yv, (size_t)m);
        dv_push(&ss->x[k], ax.med);
        dv_push(&ss->y[k], ay.med);
        dv_push(&ss->lo[k], ay.lo);
        dv_push(&ss->hi[k], ay.hi);
    }
    for (int r = 0; r < e->nrf; r++) {
        free(xs[r].v);
        free(ys[r].v);
    }
}

static void ss_finish(series_set *ss)
{
    for (size_t k = 0; k < ss->n; k++) {
        size_t n = ss->x[k].n;
        n = ss->y[k].n < n ? ss->y[k].n : n;
        n = ss->lo[k].n < n ? ss->lo[k].n : n;
        n = ss->hi[k].n < n ? ss->hi[k].n : n;
        ss->s[k].x = ss->x[k].v;
        ss->s[k].y = ss->y[k].v;
        ss->s[k].lo = ss->spread[k] ? ss->lo[k].v : NULL;
        ss->s[k].hi = ss->spread[k] ? ss->hi[k].v : NULL;
        ss->s[k].n = n;
    }
}

static void ss_free(series_set *ss)
{
    for (size_t k = 0; k < ss->n; k++) {
        free(ss->x[k].v);
        free(ss->y[k].v);
        free(ss->lo[k].v);
        free(ss->hi[k].v);
    }
    ss->n = 0;
}

/* What the time plots shade: the faults of every entry (one in several
 * entries, same event and times, is drawn once, in grey) and stretches of
 * high backpressure. */
typedef struct bands {
    ck_plot_band b[256];
    char label[256][120];
    char what[256][80];
    int open[256];                /* lasted to the end of its run */
    unsigned long long ents[256]; /* which entries had it (bit i: entry i) */
    size_t n;
} bands;

static void time_bands(rep *R, bands *B)
{
    B->n = 0;
    for (int i = 0; i < R->n; i++)
        for (int r = 0; r < R->e[i].nrf; r++) {
            const cJSON *root = ROOT(&R->e[i], r), *f;
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
                snprintf(what, sizeof(what), "%s%s%s%s", action ? action : "fault",
                         host ? " " : "", host ? host : "", open ? " (to the end)" : "");
                /* The same event at the same times already: shared. */
                size_t k;
                for (k = 0; k < B->n; k++)
                    if (B->b[k].x0 == a && B->open[k] == open && (open || B->b[k].x1 == z) &&
                        !strcmp(B->what[k], what))
                        break;
                if (k == B->n) {
                    B->b[k] = (ck_plot_band){a, z, B->label[k], i};
                    B->open[k] = open;
                    B->ents[k] = 0;
                    snprintf(B->what[k], sizeof(B->what[k]), "%s", what);
                    B->n++;
                }
                B->ents[k] |= 1ull << i;
                if (z > B->b[k].x1)
                    B->b[k].x1 = z;
            }
        }
    /* Backpressure: the stretches of seconds in which a vertex was
     * backpressured at least half of its time (Flink's HIGH), in each
     * entry's first run, named by the vertex most backpressured at their
     * start. */
    for (int i = 0; i < R->n; i++) {
        const cJSON *ts = ck_rf_arr(ROOT(&R->e[i], 0), "timeseries"), *p;
        double start = NAN, last = NAN;
        char who[80] = "";
        int idx = 0, n = cJSON_GetArraySize(ts);
        cJSON_ArrayForEach(p, ts)
        {
            double worst = 0;
            const char *wv = NULL;
            const cJSON *v;
            cJSON_ArrayForEach(v, ck_rf_get(p, "vertex_backpressured_ratio"))
            {
                if (cJSON_IsNumber(v) && v->valuedouble > worst) {
                    worst = v->valuedouble;
                    wv = v->string;
                }
            }
            double t = ck_rf_num(p, "t_s", NAN);
            int high = worst >= 0.5 && isfinite(t);
            if (high && !isfinite(start)) {
                start = t;
                snprintf(who, sizeof(who), "%s", wv);
            }
            if (high)
                last = t;
            idx++;
            if (isfinite(start) && (!high || idx == n) && B->n < 256) {
                size_t k = B->n++;
                double end = ck_rf_num(ROOT(&R->e[i], 0), "sim_time_s", last + 1);
                B->b[k] = (ck_plot_band){start, last + 1 < end ? last + 1 : end, B->label[k], i};
                B->open[k] = 0;
                B->ents[k] = 1ull << i;
                snprintf(B->what[k], sizeof(B->what[k]), "backpressure: %.50s", who);
                start = NAN;
            }
        }
    }
    /* Labelled with the entries that had it, unless every one did (grey). */
    unsigned long long all = R->n >= 64 ? ~0ull : (1ull << R->n) - 1;
    for (size_t k = 0; k < B->n; k++) {
        char tags[200] = "";
        size_t at = 0;
        for (int i = 0; i < R->n && B->ents[k] != all; i++)
            if (B->ents[k] >> i & 1 && at < sizeof(tags) - 8)
                at += (size_t)snprintf(tags + at, sizeof(tags) - at, "%s ", R->e[i].tag);
        if (B->ents[k] == all || (B->ents[k] & (B->ents[k] - 1)))
            B->b[k].run = -1; /* in more than one entry: grey */
        snprintf(B->label[k], sizeof(B->label[k]), "%s%s", tags, B->what[k]);
    }
}

/* Completed checkpoints: trigger time, and the field named by arg (s -> ms). */
static void x_checkpoints(const cJSON *root, const void *arg, dvec *x, dvec *y)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, ck_rf_arr(root, "checkpoints"))
    {
        if (!is_checkpoint(c) || !completed(c))
            continue;
        dv_push(x, ck_rf_num(c, "trigger_s", NAN));
        dv_push(y, num_or_nan(c, (const char *)arg) * 1e3);
    }
}

static void plot_checkpoints(rep *R, series_set *ss)
{
    char idb[64];
    ss->n = 0;
    for (int i = 0; i < R->n; i++) {
        int d = ss_add(ss, i, CK_PLOT_SOLID, "%s duration", R->e[i].tag);
        int a = ss_add(ss, i, CK_PLOT_DASHED, "%s alignment (longest subtask)", R->e[i].tag);
        ss_fill(ss, d, &R->e[i], x_checkpoints, "duration_s");
        ss_fill(ss, a, &R->e[i], x_checkpoints, "alignment_max_s");
    }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = pid(R, idb, "plot-checkpoint-duration"),
                                           .title = "Checkpoint duration and alignment",
                                           .xlabel = "checkpoint triggered at (s)",
                                           .ylabel = "duration (ms)",
                                           .series = ss->s,
                                           .nseries = ss->n,
                                           .lines = 1});
    chart_close(R, "checkpoints.csv");
    ss_free(ss);
}

/* Checkpoint size by kind, under run.json's names (docs/RUN-JSON.md):
 * the whole state a checkpoint refers to, what it uploaded itself
 * (drawn where that differs from the whole: incremental checkpoints, the
 * changelog's), and of that the changelog segments and the channel state
 * (drawn where not 0). A run.json without them: its bytes, as full. */
enum { SZ_FULL, SZ_INCREMENTAL, SZ_CHANGELOG, SZ_INFLIGHT, SZ_KINDS };
static const struct {
    const char *field, *name;
} size_kinds[SZ_KINDS] = {
    {"bytes_full", "full"},
    {"bytes_incremental", "incremental"},
    {"bytes_changelog", "changelog"},
    {"persisted_inflight_bytes", "in flight"},
};

static int split_sizes(const cJSON *c)
{
    return ck_rf_has_num(c, size_kinds[SZ_FULL].field);
}

/* Sizes of kind *arg (MB) of completed checkpoints. */
static void x_sizes(const cJSON *root, const void *arg, dvec *x, dvec *y)
{
    int k = *(const int *)arg;
    const cJSON *c;
    cJSON_ArrayForEach(c, ck_rf_arr(root, "checkpoints"))
    {
        if (!is_checkpoint(c) || !completed(c))
            continue;
        double v = split_sizes(c) ? num_or_nan(c, size_kinds[k].field)
                                  : (k == SZ_FULL ? ck_rf_num(c, "bytes", NAN) : NAN);
        dv_push(x, ck_rf_num(c, "trigger_s", NAN));
        dv_push(y, v / 1e6);
    }
}

/* Does a completed checkpoint of e tell kind k apart: full always;
 * incremental where it differs from full; the others where not 0. */
static int entry_has_kind(const entry *e, int k)
{
    for (int r = 0; r < e->nrf; r++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, ck_rf_arr(ROOT(e, r), "checkpoints"))
        {
            if (!is_checkpoint(c) || !completed(c))
                continue;
            if (!split_sizes(c)) {
                if (k == SZ_FULL)
                    return 1;
                continue;
            }
            double v = num_or_nan(c, size_kinds[k].field);
            if (k == SZ_FULL ? isfinite(v)
                : k == SZ_INCREMENTAL ? isfinite(v) && v != num_or_nan(c, size_kinds[SZ_FULL].field)
                                      : isfinite(v) && v != 0)
                return 1;
        }
    }
    return 0;
}

static void plot_sizes(rep *R, series_set *ss)
{
    char idb[64];
    static const int kinds[SZ_KINDS] = {SZ_FULL, SZ_INCREMENTAL, SZ_CHANGELOG, SZ_INFLIGHT};
    ss->n = 0;
    for (int i = 0; i < R->n; i++)
        for (int k = 0; k < SZ_KINDS; k++) {
            if (!entry_has_kind(&R->e[i], k))
                continue;
            char f[64];
            snprintf(f, sizeof(f), "%%s %s", size_kinds[k].name);
            ss_fill(ss, ss_add(ss, i, k, f, R->e[i].tag), &R->e[i], x_sizes, &kinds[k]);
        }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = pid(R, idb, "plot-checkpoint-size"),
                                           .title = "Checkpoint size by kind",
                                           .xlabel = "checkpoint triggered at (s)",
                                           .ylabel = "size (MB)",
                                           .series = ss->s,
                                           .nseries = ss->n,
                                           .lines = 1});
    chart_close(R, "checkpoints.csv");
    ss_free(ss);
}

/* The per-second field named by arg. */
static void x_seconds(const cJSON *root, const void *arg, dvec *x, dvec *y)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, ck_rf_arr(root, "timeseries"))
    {
        dv_push(x, ck_rf_num(p, "t_s", NAN));
        dv_push(y, num_or_nan(p, (const char *)arg));
    }
}

static void plot_timeseries(rep *R, series_set *ss, const bands *B, const char *id,
                            const char *title, const char *ylabel, const char *const field[2],
                            const char *const name[2])
{
    char idb[64];
    ss->n = 0;
    for (int i = 0; i < R->n; i++)
        for (int j = 0; j < 2; j++) {
            char f[64];
            snprintf(f, sizeof(f), "%%s %s", name[j]);
            ss_fill(ss, ss_add(ss, i, j ? CK_PLOT_DASHED : CK_PLOT_SOLID, f, R->e[i].tag),
                    &R->e[i], x_seconds, field[j]);
        }
    ss_finish(ss);
    chart_open(R);
    ck_plot_xy_svg(&R->html, &(ck_plot_xy){.id = pid(R, idb, id),
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

/* Events of kind P as stacked bars of their phases: one bar per entry
 * and event that ran, "#1 r2" for entry #1's second. */
static void plot_phases(rep *R, const phased *P)
{
    char idb[64];
    ck_plot_bar bars[256];
    double seg[256][MAX_PHASES];
    char labels[256][24];
    size_t nb = 0;
    for (int i = 0; i < R->n; i++)
        for (int k = 0; k < max_events(&R->e[i], P) && nb < 256; k++) {
            if (!event_ran(&R->e[i], P, k))
                continue; /* refused, failed or interrupted in every run: its table row says */
            for (int p = 0; p < P->nph; p++)
                seg[nb][p] = event_agg(&R->e[i], P, k, p).med * P->scale;
            snprintf(labels[nb], sizeof(labels[nb]), "%s %s%d", R->e[i].tag, P->mark, k + 1);
            bars[nb] = (ck_plot_bar){R->e[i].tag, labels[nb], i, seg[nb], 0, NAN, NAN};
            nb++;
        }
    chart_open(R);
    ck_plot_bars_svg(&R->html, &(ck_plot_bars){.id = pid(R, idb, P->id),
                                               .title = P->title,
                                               .ylabel = P->ylabel,
                                               .seg_names = P->names,
                                               .nseg = (size_t)P->nph,
                                               .bars = bars,
                                               .nbars = nb});
    chart_close(R, P->csv);
}

static void plot_recoveries(rep *R)
{
    plot_phases(R, &recovery_kind);
}

static const cJSON *vertex_of(const cJSON *root, const char *name)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, ck_rf_arr(root, "job.vertices"))
    {
        const char *n = ck_rf_str(v, "name");
        if (n && !strcmp(n, name) && ck_rf_has_num(v, "busy_ratio"))
            return v;
    }
    return NULL;
}

static void plot_vertices(rep *R)
{
    char idb[64];
    static const char *const names[] = {"busy", "backpressured", "idle"};
    static const char *const fields[] = {"busy_ratio", "backpressured_ratio", "idle_ratio"};
    ck_plot_bar bars[512];
    double seg[512][3];
    size_t nb = 0;
    /* Grouped by vertex, in the first entry's order, then any others'. */
    const char *seen[128];
    size_t nseen = 0;
    for (int i = 0; i < R->n; i++) {
        const cJSON *v;
        cJSON_ArrayForEach(v, ck_rf_arr(ROOT(&R->e[i], 0), "job.vertices"))
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
            const entry *E = &R->e[i];
            int any = 0;
            for (int j = 0; j < 3; j++) {
                double v[CK_REPORT_MAX_SEEDS];
                int n = 0;
                for (int r = 0; r < E->nrf; r++) {
                    const cJSON *vx = vertex_of(ROOT(E, r), seen[k]);
                    if (vx)
                        v[n++] = ck_rf_num(vx, fields[j], 0) * 100;
                }
                agg a = agg_of(v, (size_t)n);
                seg[nb][j] = a.med;
                any |= a.n > 0;
            }
            if (!any)
                continue;
            bars[nb] = (ck_plot_bar){seen[k], E->tag, i, seg[nb], 0, NAN, NAN};
            nb++;
        }
    chart_open(R);
    ck_plot_bars_svg(&R->html, &(ck_plot_bars){.id = pid(R, idb, "plot-vertices"),
                                               .title = "Busy, backpressured and idle time per vertex",
                                               .ylabel = "share of the subtasks' time (%)",
                                               .seg_names = names,
                                               .nseg = 3,
                                               .bars = bars,
                                               .nbars = nb,
                                               .ymax = 100});
    chart_close(R, "vertices.csv");
}

/* The headline figures of every entry as bars (median, whiskers for the
 * spread over seeds): one chart per figure that any entry has. */
static void plot_glance(rep *R)
{
    static const struct {
        const char *id, *title, *ylabel;
        int fig; /* -1 field, else cp_figures index */
        const char *field;
        double scale;
    } figs[] = {
        {"plot-glance-checkpoint", "Checkpoint duration p50", "duration (ms)", 2, NULL, 1},
        {"plot-glance-recovery", "Recovery time (all recoveries of a run)", "time (s)", -2, NULL, 1},
        {"plot-glance-throughput", "Throughput in", "records/s", -1, "throughput_in_rps", 1},
        {"plot-glance-latency", "End-to-end latency p99", "latency (ms)", -1, "latency_ms.p99", 1},
    };
    static const char *const one[] = {"median"}; /* one segment: no legend */
    char idb[64];
    for (size_t f = 0; f < sizeof(figs) / sizeof(figs[0]); f++) {
        ck_plot_bar bars[CK_REPORT_MAX_RUNS];
        double seg[CK_REPORT_MAX_RUNS][1];
        int any = 0;
        for (int i = 0; i < R->n; i++) {
            const entry *E = &R->e[i];
            double v[CK_REPORT_MAX_SEEDS];
            for (int r = 0; r < E->nrf; r++) {
                const cJSON *o = ROOT(E, r);
                if (figs[f].fig >= 0) {
                    double cp[CP_FIGS];
                    cp_figures(o, cp);
                    v[r] = cp[figs[f].fig];
                } else if (figs[f].fig == -2) {
                    double t = 0;
                    int n = 0;
                    const cJSON *rv;
                    cJSON_ArrayForEach(rv, ck_rf_arr(o, "recoveries"))
                    {
                        t += ck_rf_num(rv, "recovery_s", NAN);
                        n++;
                    }
                    v[r] = n ? t : NAN;
                } else {
                    v[r] = num_or_nan(o, figs[f].field) * figs[f].scale;
                }
            }
            agg a = agg_of(v, (size_t)E->nrf);
            any |= a.n > 0;
            seg[i][0] = a.med;
            bars[i] = (ck_plot_bar){NULL, E->tag, i, seg[i], a.n > 1, a.lo, a.hi};
        }
        if (!any)
            continue;
        chart_open(R);
        ck_plot_bars_svg(&R->html, &(ck_plot_bars){.id = pid(R, idb, figs[f].id),
                                                   .title = figs[f].title,
                                                   .ylabel = figs[f].ylabel,
                                                   .seg_names = one,
                                                   .nseg = 1,
                                                   .bars = bars,
                                                   .nbars = (size_t)R->n});
        chart_close(R, "runs.csv");
    }
}

/* ---- CSV: every run's points, not aggregated -------------------------------------- */

static void csv_num(ck_sb *b, double v)
{
    if (isfinite(v))
        ck_sb_printf(b, ",%.9g", v);
    else
        ck_sb_puts(b, ",");
}

static void csv_str(ck_sb *b, const char *s)
{
    ck_sb_puts(b, ",");
    ck_sb_csv(b, s);
}

static int write_csvs(rep *R, const char *dir, char *err, size_t errlen)
{
    enum { NF = 7 };
    ck_sb f[NF] = {{0}};
    static const char *const files[NF] = {"runs.csv",       "timeseries.csv", "checkpoints.csv",
                                          "recoveries.csv", "vertices.csv",   "faults.csv",
                                          "rescales.csv"};
    ck_sb_puts(&f[0], "entry,seed,label,scenario,backend,state,sim_time_s,records_in,records_out,"
                      "throughput_in_rps,latency_p50_ms,latency_p99_ms,ok,path\n");
    ck_sb_puts(&f[1], "entry,seed,t_s,in_rps,out_rps,latency_p50_ms,latency_p99_ms\n");
    ck_sb_puts(&f[2], "entry,seed,id,kind,status,trigger_s,duration_s,alignment_max_s,sync_s,"
                      "async_s,bytes\n");
    ck_sb_puts(&f[3], "entry,seed,recovery,failure_s,detected_s,restarted_s,restored_s,"
                      "first_output_s,caught_up_s,recovery_s,detection_s,restart_s,restore_s,"
                      "catch_up_s,checkpoint,restarted_subtasks\n");
    ck_sb_puts(&f[4], "entry,seed,vertex,parallelism,busy_ratio,backpressured_ratio,idle_ratio\n");
    ck_sb_puts(&f[5], "entry,seed,action,host,at_s,ended_s,restarted_s,applied\n");
    ck_sb_puts(&f[6], "entry,seed,rescale,via,outcome,why,trigger_s,snapshot_s,stopped_s,"
                      "deployed_s,restored_s,first_output_s,caught_up_s,rescale_s,download_s,"
                      "rebuild_s,channel_state_s,bytes,phase_snapshot_s,phase_stop_s,"
                      "phase_deploy_s,phase_download_s,phase_rebuild_s,phase_restore_rest_s,"
                      "phase_catch_up_s\n");
    for (int i = 0; i < R->n; i++)
        for (int r = 0; r < R->e[i].nrf; r++) {
            const cJSON *o = ROOT(&R->e[i], r), *e;
            char lead[64];
            double seed = ck_rf_num(o, "seed", 0);
            snprintf(lead, sizeof(lead), fabs(seed) < 1e16 ? "%s,%.0f" : "%s,%.17g", R->e[i].tag,
                     seed);
            ck_sb_puts(&f[0], lead);
            csv_str(&f[0], R->e[i].label);
            csv_str(&f[0], ck_rf_str(o, "scenario"));
            csv_str(&f[0], ck_rf_str(o, "backend"));
            csv_str(&f[0], ck_rf_str(o, "job.state"));
            static const char *const rk[] = {"sim_time_s",        "records_in",
                                             "records_out",       "throughput_in_rps",
                                             "latency_ms.p50",    "latency_ms.p99"};
            for (int j = 0; j < 6; j++)
                csv_num(&f[0], num_or_nan(o, rk[j]));
            ck_sb_printf(&f[0], ",%d", ck_rf_bool(o, "correctness.ok"));
            csv_str(&f[0], R->e[i].rf[r].path);
            ck_sb_puts(&f[0], "\n");
            cJSON_ArrayForEach(e, ck_rf_arr(o, "timeseries"))
            {
                ck_sb_puts(&f[1], lead);
                static const char *const k[] = {"t_s", "in_rps", "out_rps", "latency_p50_ms",
                                                "latency_p99_ms"};
                for (int j = 0; j < 5; j++)
                    csv_num(&f[1], num_or_nan(e, k[j]));
                ck_sb_puts(&f[1], "\n");
            }
            cJSON_ArrayForEach(e, ck_rf_arr(o, "checkpoints"))
            {
                ck_sb_puts(&f[2], lead);
                csv_num(&f[2], num_or_nan(e, "id"));
                csv_str(&f[2], ck_rf_str(e, "kind"));
                csv_str(&f[2], ck_rf_str(e, "status"));
                static const char *const k[] = {"trigger_s", "duration_s", "alignment_max_s",
                                                "sync_s",    "async_s",    "bytes"};
                for (int j = 0; j < 6; j++)
                    csv_num(&f[2], num_or_nan(e, k[j]));
                ck_sb_puts(&f[2], "\n");
            }
            int nr = 0;
            cJSON_ArrayForEach(e, ck_rf_arr(o, "recoveries"))
            {
                ck_sb_printf(&f[3], "%s,%d", lead, ++nr);
                static const char *const k[] = {"failure_s",  "detected_s",     "restarted_s",
                                                "restored_s", "first_output_s", "caught_up_s",
                                                "recovery_s"};
                for (int j = 0; j < 7; j++)
                    csv_num(&f[3], num_or_nan(e, k[j]));
                double ph[4];
                recovery_phases(e, ph);
                for (int j = 0; j < 4; j++)
                    csv_num(&f[3], ph[j]);
                csv_num(&f[3], num_or_nan(e, "checkpoint"));
                csv_num(&f[3], cJSON_GetArraySize(ck_rf_arr(e, "restarted_subtasks")));
                ck_sb_puts(&f[3], "\n");
            }
            cJSON_ArrayForEach(e, ck_rf_arr(o, "job.vertices"))
            {
                ck_sb_puts(&f[4], lead);
                csv_str(&f[4], ck_rf_str(e, "name"));
                static const char *const k[] = {"parallelism", "busy_ratio", "backpressured_ratio",
                                                "idle_ratio"};
                for (int j = 0; j < 4; j++)
                    csv_num(&f[4], num_or_nan(e, k[j]));
                ck_sb_puts(&f[4], "\n");
            }
            cJSON_ArrayForEach(e, ck_rf_arr(o, "faults"))
            {
                ck_sb_puts(&f[5], lead);
                csv_str(&f[5], ck_rf_str(e, "action"));
                csv_str(&f[5], ck_rf_str(e, "host"));
                csv_num(&f[5], num_or_nan(e, "at_s"));
                csv_num(&f[5], num_or_nan(e, "ended_s"));
                csv_num(&f[5], num_or_nan(e, "restarted_s"));
                ck_sb_printf(&f[5], ",%d\n", ck_rf_bool(e, "applied"));
            }
            nr = 0;
            cJSON_ArrayForEach(e, ck_rf_arr(o, "rescales"))
            {
                ck_sb_printf(&f[6], "%s,%d", lead, ++nr);
                csv_str(&f[6], ck_rf_str(e, "via"));
                csv_str(&f[6], ck_rf_str(e, "outcome"));
                csv_str(&f[6], ck_rf_str(e, "why"));
                static const char *const k[] = {
                    "trigger_s",      "snapshot_s",          "stopped_s",
                    "deployed_s",     "restored_s",          "first_output_s",
                    "caught_up_s",    "rescale_s",           "restore.download_s",
                    "restore.rebuild_s", "restore.channel_state_s", "restore.bytes"};
                for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++)
                    csv_num(&f[6], num_or_nan(e, k[j]));
                double ph[MAX_PHASES];
                rescale_phases(e, ph);
                for (int j = 0; j < rescale_kind.nph; j++)
                    csv_num(&f[6], ph[j]);
                ck_sb_puts(&f[6], "\n");
            }
        }
    int rc = 0;
    for (int k = 0; k < NF; k++) {
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

static void page_head(rep *R, const char *title)
{
    ck_sb *h = &R->html;
    ck_sb_puts(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>");
    ck_sb_html(h, title);
    ck_sb_puts(h, "</title>\n<style>");
    ck_sb_puts(h, css);
    ck_sb_puts(h, "</style>\n</head>\n<body>\n<h1>");
    ck_sb_html(h, title);
    ck_sb_puts(h, "</h1>\n<ul class=\"runs\">\n");
    ck_sb_puts(&R->md, "# ");
    ck_sb_md(&R->md, title);
    ck_sb_puts(&R->md, "\n\n");
    int several = 0;
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        several |= E->nrf > 1;
        ck_sb_printf(h, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                     ck_plot_color(i));
        ck_sb_html(h, E->label);
        ck_sb_puts(&R->md, "- ");
        ck_sb_md_block(&R->md, E->label);
        if (E->nrf == 1) {
            ck_sb_puts(h, " <small>(");
            ck_sb_html(h, E->rf[0].path);
            ck_sb_puts(h, ")</small>");
            ck_sb_puts(&R->md, " (");
            ck_sb_md(&R->md, E->rf[0].path);
            ck_sb_puts(&R->md, ")");
        } else {
            ck_sb_printf(h, " <small>(%d runs)</small>", E->nrf);
            ck_sb_printf(&R->md, " (%d runs)", E->nrf);
        }
        ck_sb_puts(h, "</li>\n");
        ck_sb_puts(&R->md, "\n");
    }
    ck_sb_puts(h, "</ul>\n");
    if (several) {
        static const char note[] =
            "An entry of several runs (seeds) shows the median of each figure, with the spread "
            "from the least to the greatest in brackets; plots draw the median as a line and "
            "the spread as a band.";
        ck_sb_printf(h, "<p class=\"note\">%s</p>\n", note);
        ck_sb_printf(&R->md, "\n%s\n", note);
    }
    ck_sb_puts(h, "<nav><a href=\"#checkpoints\">checkpoints</a> · "
                  "<a href=\"#throughput\">throughput and latency</a> · "
                  "<a href=\"#recovery\">recovery</a> · <a href=\"#rescales\">rescales</a> · "
                  "<a href=\"#vertices\">vertices</a> · "
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

/* Does any run have the time series field k? */
static int any_series(rep *R, const char *k)
{
    for (int i = 0; i < R->n; i++)
        for (int r = 0; r < R->e[i].nrf; r++) {
            const cJSON *p;
            cJSON_ArrayForEach(p, ck_rf_arr(ROOT(&R->e[i], r), "timeseries"))
            {
                if (ck_rf_has_num(p, k))
                    return 1;
            }
        }
    return 0;
}

/* Loads the entries' run files into R (named after find_differences). */
static int rep_load(rep *R, const ck_report_entry *spec, int n, char *err, size_t errlen)
{
    if (n < 1 || n > CK_REPORT_MAX_RUNS) {
        snprintf(err, errlen, "report: expected 1 to %d entries, got %d", CK_REPORT_MAX_RUNS, n);
        return -1;
    }
    R->e = calloc((size_t)n, sizeof(*R->e));
    if (!R->e) {
        snprintf(err, errlen, "report: out of memory");
        return -1;
    }
    R->cap = n;
    for (; R->n < n; R->n++) {
        entry *E = &R->e[R->n];
        if (spec[R->n].nruns < 1 || spec[R->n].nruns > CK_REPORT_MAX_SEEDS) {
            snprintf(err, errlen, "report: entry %d: expected 1 to %d runs, got %d", R->n + 1,
                     CK_REPORT_MAX_SEEDS, spec[R->n].nruns);
            return -1;
        }
        E->rf = calloc((size_t)spec[R->n].nruns, sizeof(*E->rf));
        if (!E->rf) {
            snprintf(err, errlen, "report: out of memory");
            return -1;
        }
        for (; E->nrf < spec[R->n].nruns; E->nrf++)
            if (ck_runfile_load(&E->rf[E->nrf], spec[R->n].runs[E->nrf], err, errlen))
                return -1;
    }
    find_differences(R, spec);
    return 0;
}

static void rep_free(rep *R)
{
    for (int i = 0; R->e && i < R->cap; i++) {
        for (int r = 0; r < R->e[i].nrf; r++)
            ck_runfile_free(&R->e[i].rf[r]);
        free(R->e[i].rf);
    }
    free(R->e);
    free(R->keys);
    ck_sb_free(&R->html);
    ck_sb_free(&R->md);
}

int ck_report_make_entries(const ck_report_entry *spec, int n, const char *outdir,
                           const char *title, char *err, size_t errlen)
{
    rep R = {0};
    series_set *ss = calloc(1, sizeof(*ss));
    bands *B = calloc(1, sizeof(*B));
    cJSON *pub = cJSON_Parse(ck_published_json);
    int rc = -1;
    if (!ss || !B) {
        snprintf(err, errlen, "report: out of memory");
        goto out;
    }
    if (rep_load(&R, spec, n, err, errlen))
        goto out;
    if (mkdir_p(outdir)) {
        snprintf(err, errlen, "%s: cannot create the report's directory: %s", outdir,
                 strerror(errno));
        goto out;
    }
    page_head(&R, title ? title : "chandy report");
    runs_table(&R);
    config_table(&R);
    if (R.n > 1) {
        section(&R, "glance", "At a glance",
                "Each entry's headline figures: the median over its runs, with whiskers from "
                "the least to the greatest where it has several.");
        plot_glance(&R);
    }

    section(&R, "checkpoints", "Checkpoints", NULL);
    plot_checkpoints(&R, ss);
    plot_sizes(&R, ss);
    checkpoint_table(&R);
    state_table(&R);

    section(&R, "throughput", "Throughput and latency",
            "Shaded: the faults of the timeline, from when they hit to when they ended (a "
            "crashed host: until it restarted), and the seconds in which a vertex was "
            "backpressured at least half of its time (Flink's HIGH).");
    time_bands(&R, B);
    static const char *const tf[2] = {"in_rps", "out_rps"}, *const tn[2] = {"in", "out"};
    plot_timeseries(&R, ss, B, "plot-throughput", "Throughput over time", "records/s", tf, tn);
    static const char *const lf[2] = {"latency_p50_ms", "latency_p99_ms"},
                             *const ln[2] = {"p50", "p99"};
    plot_timeseries(&R, ss, B, "plot-latency", "End-to-end latency over time", "latency (ms)",
                    lf, ln);
    throughput_table(&R);

    section(&R, "recovery", "Recovery",
            "Detection: from the fault to the job manager noticing it; restart: to the next "
            "attempt's deployment; restore: to every subtask running restored; catch-up: to "
            "the sources' lag back under its level before the failure.");
    plot_recoveries(&R);
    recovery_table(&R);

    section(&R, "rescales", "Rescales",
            "Snapshot: from the rescale's trigger to its savepoint (or the checkpoint it waited "
            "for) completing; stop: to the old attempt gone; deploy: to the new attempt "
            "deployed; download and rebuild: the slowest subtask's state download and rebuild; "
            "rest of restore: to every subtask running restored; catch-up: to the sources' lag "
            "back under its level before the trigger. A rescale refused, failed or interrupted "
            "has a row in the table and no bar.");
    plot_phases(&R, &rescale_kind);
    rescale_table(&R);

    section(&R, "vertices", "Busy, backpressured and idle time", NULL);
    plot_vertices(&R);

    section(&R, "network", "In-flight data and buffer size", NULL);
    static const char *const nf[2] = {"inflight_bytes", "buffer_size_bytes"},
                             *const nn[2] = {"in flight", "buffer size"};
    if (any_series(&R, nf[0]) || any_series(&R, nf[1]))
        plot_timeseries(&R, ss, B, "plot-inflight", "In-flight data and buffer size over time",
                        "bytes", nf, nn);
    else {
        ck_sb_puts(&R.html, "<p class=\"none\">none: no run recorded in-flight data.</p>\n");
        ck_sb_puts(&R.md, "\nnone: no run recorded in-flight data.\n");
    }

    section(&R, "correctness", "Correctness and published figures", NULL);
    verdict_table(&R);
    published_table(&R, pub);
    ck_sb_puts(&R.html, "<p class=\"note\">Written by <code>chandy report</code>; the data of "
                        "every plot, run by run, is in the CSV files beside this page.</p>\n"
                        "</body>\n</html>\n");

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
    rep_free(&R);
    free(ss);
    free(B);
    cJSON_Delete(pub);
    return rc;
}

int ck_report_make(const char *const *paths, int n, const char *outdir, char *err, size_t errlen)
{
    if (n < 1 || n > CK_REPORT_MAX_RUNS) {
        snprintf(err, errlen, "report: expected 1 to %d run directories, got %d",
                 CK_REPORT_MAX_RUNS, n);
        return -1;
    }
    ck_report_entry e[CK_REPORT_MAX_RUNS];
    for (int i = 0; i < n; i++)
        e[i] = (ck_report_entry){NULL, &paths[i], 1};
    return ck_report_make_entries(e, n, outdir, NULL, err, errlen);
}

/* ---- a suite's index ------------------------------------------------------------- */

/* The most backpressured vertex of a run, as a share; NaN without vertices. */
static double worst_backpressure(const cJSON *root)
{
    double worst = NAN;
    const cJSON *v;
    cJSON_ArrayForEach(v, ck_rf_arr(root, "job.vertices"))
    {
        double bp = num_or_nan(v, "backpressured_ratio");
        if (isfinite(bp) && !(bp <= worst))
            worst = bp;
    }
    return worst;
}

static void key_figures(rep *R)
{
    static const char *const head[] = {"entry",
                                       "checkpoint p50 (ms)",
                                       "alignment max (ms)",
                                       "recovery (s)",
                                       "throughput in (records/s)",
                                       "latency p99 (ms)",
                                       "most backpressured vertex (%)",
                                       "output"};
    table t;
    t_begin(&t, R, "Key figures", head, 8);
    for (int i = 0; i < R->n; i++) {
        const entry *E = &R->e[i];
        double v[6][CK_REPORT_MAX_SEEDS];
        int wrong = 0;
        for (int r = 0; r < E->nrf; r++) {
            const cJSON *o = ROOT(E, r);
            double cp[CP_FIGS];
            cp_figures(o, cp);
            v[0][r] = cp[2];
            v[1][r] = cp[9];
            /* Every recovery's total time, added up. */
            double rec = 0;
            int nrec = 0;
            const cJSON *rv;
            cJSON_ArrayForEach(rv, ck_rf_arr(o, "recoveries"))
            {
                rec += ck_rf_num(rv, "recovery_s", NAN);
                nrec++;
            }
            v[2][r] = nrec ? rec : NAN;
            v[3][r] = num_or_nan(o, "throughput_in_rps");
            v[4][r] = num_or_nan(o, "latency_ms.p99");
            v[5][r] = worst_backpressure(o) * 100;
            wrong += !ck_rf_bool(o, "correctness.ok");
        }
        static const char *const f[6] = {"%.1f", "%.1f", "%.3f", "%.0f", "%.1f", "%.0f"};
        char s[7][80];
        const char *cells[8] = {E->label};
        for (int k = 0; k < 6; k++) {
            fmt_agg(s[k], sizeof(s[k]), agg_of(v[k], (size_t)E->nrf), f[k]);
            cells[1 + k] = s[k];
        }
        snprintf(s[6], sizeof(s[6]), "%s", !wrong ? "correct" : "WRONG");
        cells[7] = s[6];
        t_row(&t, cells);
    }
    t_end(&t);
}

int ck_report_index(const ck_report_section *sec, int n, const char *outdir, const char *title,
                    const char *about, char *err, size_t errlen)
{
    ck_sb html = {0}, md = {0};
    series_set *ss = calloc(1, sizeof(*ss));
    bands *B = calloc(1, sizeof(*B));
    int rc = -1;
    if (!ss || !B) {
        snprintf(err, errlen, "report: out of memory");
        goto out;
    }
    ck_sb_puts(&html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<title>");
    ck_sb_html(&html, title);
    ck_sb_puts(&html, "</title>\n<style>");
    ck_sb_puts(&html, css);
    ck_sb_puts(&html, "</style>\n</head>\n<body>\n<h1>");
    ck_sb_html(&html, title);
    ck_sb_puts(&html, "</h1>\n");
    ck_sb_puts(&md, "# ");
    ck_sb_md(&md, title);
    ck_sb_puts(&md, "\n");
    if (about) {
        ck_sb_puts(&html, "<p>");
        ck_sb_html(&html, about);
        ck_sb_puts(&html, "</p>\n");
        ck_sb_puts(&md, "\n");
        ck_sb_md_block(&md, about);
        ck_sb_puts(&md, "\n");
    }
    ck_sb_puts(&html, "<nav>");
    for (int k = 0; k < n; k++) {
        ck_sb_printf(&html, "%s<a href=\"#c%d\">", k ? " · " : "", k + 1);
        ck_sb_html(&html, sec[k].title);
        ck_sb_puts(&html, "</a>");
    }
    ck_sb_puts(&html, "</nav>\n");
    for (int k = 0; k < n; k++) {
        rep R = {0};
        if (rep_load(&R, sec[k].entries, sec[k].n, err, errlen)) {
            rep_free(&R);
            goto out;
        }
        /* The section writes into the index's buffers. */
        R.html = html;
        R.md = md;
        char id[16];
        snprintf(id, sizeof(id), "c%d", k + 1);
        snprintf(R.idp, sizeof(R.idp), "c%d-", k + 1);
        snprintf(R.csvdir, sizeof(R.csvdir), "%.30s/", sec[k].dir);
        section(&R, id, sec[k].title, sec[k].note);
        const char *plot = sec[k].plot ? sec[k].plot : "checkpoints";
        time_bands(&R, B);
        if (!strcmp(plot, "throughput")) {
            static const char *const tf[2] = {"in_rps", "out_rps"}, *const tn[2] = {"in", "out"};
            plot_timeseries(&R, ss, B, "plot-throughput", "Throughput over time", "records/s",
                            tf, tn);
        } else if (!strcmp(plot, "latency")) {
            static const char *const lf[2] = {"latency_p50_ms", "latency_p99_ms"},
                                     *const ln[2] = {"p50", "p99"};
            plot_timeseries(&R, ss, B, "plot-latency", "End-to-end latency over time",
                            "latency (ms)", lf, ln);
        } else if (!strcmp(plot, "recovery")) {
            plot_recoveries(&R);
        } else if (!strcmp(plot, "rescale")) {
            /* one bar per rescale of each run, and what each changed */
            plot_phases(&R, &rescale_kind);
            rescale_table(&R);
        } else if (!strcmp(plot, "vertices")) {
            plot_vertices(&R);
        } else if (!strcmp(plot, "state")) {
            /* the state backends side by side, Flink's figures beside them */
            plot_checkpoints(&R, ss);
            state_table(&R);
            cJSON *pub = cJSON_Parse(ck_published_json);
            if (pub)
                published_table(&R, pub);
            cJSON_Delete(pub);
        } else {
            plot_checkpoints(&R, ss);
        }
        key_figures(&R);
        ck_sb_printf(&R.html, "<p><a href=\"%s/index.html\">The full report</a> (every chart "
                              "and table, CSV files).</p>\n",
                     sec[k].dir);
        ck_sb_printf(&R.md, "\nThe full report: `%s/index.html`.\n", sec[k].dir);
        html = R.html;
        md = R.md;
        R.html = (ck_sb){0};
        R.md = (ck_sb){0};
        rep_free(&R);
    }
    ck_sb_puts(&html, "<p class=\"note\">Written by <code>chandy suite</code>.</p>\n</body>\n"
                      "</html>\n");
    if (mkdir_p(outdir)) {
        snprintf(err, errlen, "%s: cannot create: %s", outdir, strerror(errno));
        goto out;
    }
    char path[1100];
    snprintf(path, sizeof(path), "%s/index.html", outdir);
    if (ck_sb_write(&html, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof(path), "%s/summary.md", outdir);
    if (ck_sb_write(&md, path)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    ck_sb_free(&html);
    ck_sb_free(&md);
    free(ss);
    free(B);
    return rc;
}

/* ---- simulated against real -------------------------------------------------------- */

/* The figures compared, from one run: NaN when the run has none. */
typedef struct fid_fig {
    const char *name, *unit;
    double floor; /* closer than this (in unit) agrees whatever the ratio: the two
                   * clocks' resolution and a scheduler's slice, not the system */
    const char *believe; /* which side to believe, and why */
} fid_fig;

static const fid_fig fid_figs[] = {
    {"checkpoint duration p50", "ms", 2,
     "SimGrid for a cluster you do not have (its links and store are modelled); sockets for "
     "the engine's own cost of taking the snapshot"},
    {"checkpoint alignment p50 (longest subtask)", "ms", 2,
     "SimGrid: alignment is set by buffers in flight and link latency, which it models; "
     "loopback has none"},
    {"recovery: detection", "s", 0.02,
     "both: set by configuration (a broken connection at once, else heartbeat.timeout); a "
     "difference is a bug"},
    {"recovery: restart", "s", 0.02, "both: the restart strategy's delay; a difference is a bug"},
    {"recovery: restore", "s", 0.02,
     "SimGrid for the store's bandwidth at scale; sockets for the real cost of reading and "
     "rebuilding state"},
    {"recovery: catch-up", "s", 0.02,
     "sockets for the engine's real speed at draining a backlog; SimGrid when CPU is modelled "
     "by cpu_per_record"},
    {"recovery: total", "s", 0.02, "as its phases"},
    {"throughput in", "records/s", 0,
     "sources read at the workload's rate on both; a difference means one side could not keep "
     "up"},
    {"latency p50", "ms", 5,
     "SimGrid for modelled CPU and network; sockets adds the real engine's work and the OS's "
     "scheduling"},
    {"latency p99", "ms", 5, "as p50; tails on sockets also carry the machine's noise"},
    {"most backpressured vertex", "%", 5,
     "SimGrid when the bottleneck is modelled (cpu_per_record, links); sockets when it is the "
     "engine's real work"},
};
#define NFID (sizeof(fid_figs) / sizeof(fid_figs[0]))

static void fid_values(const cJSON *o, double v[NFID])
{
    double cp[CP_FIGS];
    cp_figures(o, cp);
    v[0] = cp[2];
    v[1] = cp[8];
    const cJSON *rv = cJSON_GetArrayItem(ck_rf_arr(o, "recoveries"), 0);
    double ph[4] = {NAN, NAN, NAN, NAN};
    if (rv)
        recovery_phases(rv, ph);
    for (int k = 0; k < 4; k++)
        v[2 + k] = ph[k];
    v[6] = rv ? num_or_nan(rv, "recovery_s") : NAN;
    v[7] = num_or_nan(o, "throughput_in_rps");
    v[8] = num_or_nan(o, "latency_ms.p50");
    v[9] = num_or_nan(o, "latency_ms.p99");
    v[10] = worst_backpressure(o) * 100;
}

int ck_report_fidelity(const char *sim, const char *real, const char *outdir, double band,
                       char *err, size_t errlen)
{
    const char *paths[2] = {sim, real};
    ck_report_entry e[2] = {{"simulated (SimGrid)", &paths[0], 1},
                            {"real (sockets)", &paths[1], 1}};
    char sub[1100];
    snprintf(sub, sizeof(sub), "%s/report", outdir);
    if (ck_report_make_entries(e, 2, sub, "simulated against real: the two runs", err, errlen))
        return -1;
    rep R = {0};
    int rc = -1;
    if (rep_load(&R, e, 2, err, errlen))
        goto out;
    const char *b0 = ck_rf_str(ROOT(&R.e[0], 0), "backend"), *b1 = ck_rf_str(ROOT(&R.e[1], 0), "backend");
    if (strcmp(b0, "simgrid") || strcmp(b1, "sockets")) {
        snprintf(err, errlen, "fidelity: expected a simgrid run and a sockets run, got %s and %s",
                 b0, b1);
        goto out;
    }
    double vs[NFID], vr[NFID];
    fid_values(ROOT(&R.e[0], 0), vs);
    fid_values(ROOT(&R.e[1], 0), vr);
    char title[300];
    snprintf(title, sizeof(title), "Simulated against real: %s", ck_rf_str(ROOT(&R.e[0], 0), "scenario"));
    ck_sb *h = &R.html;
    ck_sb_puts(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    ck_sb_html(h, title);
    ck_sb_puts(h, "</title>\n<style>");
    ck_sb_puts(h, css);
    ck_sb_puts(h, "</style>\n</head>\n<body>\n<h1>");
    ck_sb_html(h, title);
    ck_sb_puts(h, "</h1>\n");
    ck_sb_puts(&R.md, "# ");
    ck_sb_md(&R.md, title);
    ck_sb_puts(&R.md, "\n");
    char note[600];
    snprintf(note, sizeof(note),
             "The same scenario and seed under SimGrid (simulated time) and over sockets (one "
             "process per host, real time). A figure agrees when real / simulated is within "
             "%.0f %% of 1, or when the two are closer than the figure's floor (2 ms for "
             "checkpoints, 20 ms for recovery phases, 5 ms for latency, 5 points of "
             "backpressure: below that, the clocks and the scheduler decide, not the system).",
             band * 100);
    ck_sb_printf(h, "<p>%s</p>\n", note);
    ck_sb_printf(&R.md, "\n%s\n", note);
    static const char *const head[] = {"figure", "simulated", "real", "real / simulated",
                                       "verdict", "believe"};
    table t;
    t_begin(&t, &R, "Figures side by side", head, 6);
    ck_sb csv = {0};
    ck_sb_puts(&csv, "figure,unit,simulated,real,ratio,verdict\n");
    int agree = 0, differ = 0;
    for (size_t k = 0; k < NFID; k++) {
        char name[120], s1[48], s2[48], ratio[48], verdict[48];
        snprintf(name, sizeof(name), "%s (%s)", fid_figs[k].name, fid_figs[k].unit);
        snprintf(s1, sizeof(s1), isfinite(vs[k]) ? "%.4g" : "-", vs[k]);
        snprintf(s2, sizeof(s2), isfinite(vr[k]) ? "%.4g" : "-", vr[k]);
        double q = vr[k] / vs[k];
        if (!isfinite(vs[k]) || !isfinite(vr[k])) {
            snprintf(ratio, sizeof(ratio), "-");
            snprintf(verdict, sizeof(verdict), "n/a (%s)", isfinite(vs[k]) || isfinite(vr[k])
                                                              ? "one side has none"
                                                              : "neither has it");
        } else if (vs[k] == 0 && vr[k] == 0) {
            snprintf(ratio, sizeof(ratio), "-");
            snprintf(verdict, sizeof(verdict), "agree (both 0)");
            agree++;
        } else {
            if (isfinite(q))
                snprintf(ratio, sizeof(ratio), "%.2f", q);
            else
                snprintf(ratio, sizeof(ratio), "inf");
            int near = fabs(vr[k] - vs[k]) <= fid_figs[k].floor;
            int ok = near || (isfinite(q) && fabs(q - 1) <= band);
            if (ok && !(isfinite(q) && fabs(q - 1) <= band))
                snprintf(verdict, sizeof(verdict), "agree (within %g %s)", fid_figs[k].floor,
                         fid_figs[k].unit);
            else
                snprintf(verdict, sizeof(verdict), "%s", ok ? "agree" : "DIFFER");
            ok ? agree++ : differ++;
        }
        const char *cells[] = {name, s1, s2, ratio, verdict, fid_figs[k].believe};
        t_row(&t, cells);
        ck_sb_csv(&csv, fid_figs[k].name);
        csv_str(&csv, fid_figs[k].unit);
        csv_num(&csv, vs[k]);
        csv_num(&csv, vr[k]);
        csv_num(&csv, isfinite(vs[k]) && isfinite(vr[k]) && vs[k] != 0 ? q : NAN);
        csv_str(&csv, verdict);
        ck_sb_puts(&csv, "\n");
    }
    t_end(&t);
    ck_sb_printf(h, "<p>%d figure%s agree, %d differ.</p>\n", agree, agree == 1 ? "" : "s",
                 differ);
    ck_sb_printf(&R.md, "\n%d figure%s agree, %d differ.\n", agree, agree == 1 ? "" : "s",
                 differ);
    runs_table(&R);
    ck_sb_puts(h, "<p><a href=\"report/index.html\">Both runs side by side</a> (every chart "
                  "and table, CSV files).</p>\n</body>\n</html>\n");
    ck_sb_puts(&R.md, "\nBoth runs side by side: `report/index.html`.\n");
    if (mkdir_p(outdir)) {
        snprintf(err, errlen, "%s: cannot create: %s", outdir, strerror(errno));
        ck_sb_free(&csv);
        goto out;
    }
    char path[1100];
    static const char *const names[3] = {"index.html", "summary.md", "fidelity.csv"};
    const ck_sb *bufs[3] = {&R.html, &R.md, &csv};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof(path), "%s/%s", outdir, names[k]);
        if (ck_sb_write(bufs[k], path)) {
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            ck_sb_free(&csv);
            goto out;
        }
    }
    ck_sb_free(&csv);
    rc = 0;
out:
    rep_free(&R);
    return rc;
}
