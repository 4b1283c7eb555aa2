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
 * A run is named by its number (#1, #2, ...), scenario, backend, seed and
 * the configuration keys whose values differ between the runs. Figures
 * Flink published are kept in reports/published.json and shown next to a
 * run of the scenario that reproduces them.
 */
#ifndef CK_REPORT_H
#define CK_REPORT_H

#include <stddef.h>

/* The most runs one report compares. */
#define CK_REPORT_MAX_RUNS 64

/*
 * Writes the report of the n runs (run directories or run.json paths) to
 * outdir (created). Returns 0, or -1 with a one-line reason in err that
 * names the file at fault.
 */
int ck_report_make(const char *const *runs, int n, const char *outdir, char *err, size_t errlen);

/* The published figures (reports/published.json, built in): a JSON text. */
const char *ck_report_published(void);

#endif
