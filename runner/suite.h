/*
 * suite.h - `chandy suite SUITE.json --out DIR [--jobs N]`: a handful of
 * comparisons, each a few runs side by side, run and reported together.
 *
 * A suite file (suites/demo.json is the default demo's):
 *
 *   {"name": "demo", "description": "...",
 *    "comparisons": [
 *      {"title": "...", "note": "...", "plot": "latency",
 *       "runs": ["../scenarios/backpressure.json",
 *                {"scenario": "../scenarios/backpressure.json", "label": "...",
 *                 "set": {"job.operators.1.cpu_per_record": "20kf"}}]},
 *      ...]}
 *
 * A run is a scenario file (relative to the suite file), or an object
 * with the scenario and what to change in it: "set" (configuration keys
 * or scenario paths, as a sweep's), "seed", "backend" ("simgrid" or
 * "sockets"), and a "label" for the report. Adding a comparison is adding
 * one line. Identical runs run once. Everything is checked before
 * anything runs.
 *
 * In DIR: index.html and summary.md (each comparison's chart and key
 * figures, with a link to its full report), c<k>/ (comparison k's
 * report), runs/r<i>/ (each run; runs/r<i>.log its output) and
 * scenarios/r<i>.json (the scenario of a run that changed one).
 */
#ifndef CK_SUITE_H
#define CK_SUITE_H

/* 0 when every run finished with correct output, 1 when one did not, 2 on
 * bad usage or input. */
int ck_suite_main(int argc, char **argv);

#endif
