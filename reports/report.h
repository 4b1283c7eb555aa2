/*
 * report.h - runs side by side: `chandy report RUN_DIR... -o OUT_DIR`.
 *
 * Reads nothing but run.json files (runfile.h) and writes, in OUT_DIR:
 *
 *   index.html  self-contained: plots as inline SVG (plot.h), tables, no
 *               script and no request leaving the page;
 *   summary.md  the tables in Markdown;
 *   *.csv       every series the plots draw, one row per point, with a
 *               `run` column: runs.csv, timeseries.csv, checkpoints.csv,
 *               recoveries.csv, vertices.csv, faults.csv.
 *
 * An entry is one run or the runs of one sweep point over several seeds
 * (figures: median, with the spread from least to greatest). It is named
 * by its number (#1, #2, ...), scenario, backend, seeds and the
 * configuration keys whose values differ between the entries. Figures
 * Flink published are kept in reports/published.json and shown next to a
 * run of the scenario that reproduces them.
 */
#ifndef CK_REPORT_H
#define CK_REPORT_H

#include <stddef.h>

/* The most entries one report compares, and runs (seeds) in one entry. */
#define CK_REPORT_MAX_RUNS 64
#define CK_REPORT_MAX_SEEDS 1000

/*
 * Writes the report of the n runs (run directories or run.json paths) to
 * outdir (created), each run an entry of its own. Returns 0, or -1 with a
 * one-line reason in err that names the file at fault.
 */
int ck_report_make(const char *const *runs, int n, const char *outdir, char *err, size_t errlen);

/* One entry of a report: one run, or the runs of one point of a sweep
 * over several seeds, whose figures are shown as their median with their
 * spread (least to greatest). */
typedef struct ck_report_entry {
    const char *label;       /* NULL: named from its runs (scenario, backend, seeds) */
    const char *const *runs; /* run directories or run.json paths */
    int nruns;
} ck_report_entry;

/* Same, for n entries, under a title (NULL: "chandy report"). */
int ck_report_make_entries(const ck_report_entry *e, int n, const char *outdir,
                           const char *title, char *err, size_t errlen);

/* One comparison of a suite's index page. */
typedef struct ck_report_section {
    const char *title, *note; /* note: what to look at (NULL: none) */
    const char *dir;          /* its full report, relative to the index */
    const char *plot;         /* the chart shown: "throughput", "latency", "checkpoints",
                               * "recovery" or "vertices" (NULL: checkpoints) */
    const ck_report_entry *entries;
    int n;
} ck_report_section;

/*
 * Writes a suite's index (index.html and summary.md in outdir): for each
 * section its title and note, one chart, a table of the key figures of
 * its entries (checkpoint duration and alignment, recovery time,
 * throughput, latency, backpressure, verdict) and a link to its full
 * report. Returns 0, or -1 with a reason in err.
 */
int ck_report_index(const ck_report_section *sec, int n, const char *outdir, const char *title,
                    const char *about, char *err, size_t errlen);

/*
 * The fidelity report of one scenario run under SimGrid (sim) and over
 * sockets (real): in outdir, index.html, summary.md and fidelity.csv with
 * each figure side by side (checkpoint duration and alignment, the first
 * recovery's phases, throughput, latency, backpressure), the ratio
 * real / simulated and a verdict against the band (0.25: agree within
 * +-25 %), and report/, the two runs' full report. Returns 0, or -1 with
 * a reason in err.
 */
int ck_report_fidelity(const char *sim, const char *real, const char *outdir, double band,
                       char *err, size_t errlen);

/* The published figures (reports/published.json, built in): a JSON text. */
const char *ck_report_published(void);

#endif
