/*
 * sweep.h - `chandy sweep`: a scenario over a grid of settings and seeds.
 *
 * A scenario may declare
 *
 *   "sweep": {"execution.checkpointing.interval": ["500 ms", "1 s"],
 *             "cluster.taskmanagers": [2, 4],
 *             "seeds": "1..3"}
 *
 * a map from a configuration key (one `chandy config` lists, set in
 * "config") or a scenario path (such as "cluster.taskmanagers" or
 * "workload.rate": set at that place of the file) to the values to try.
 * The keys are crossed with each other; every point runs once per seed of
 * "seeds" (a range "A..B" or a list; default: the scenario's seed).
 * `chandy run` of such a file runs the scenario as written, ignoring the
 * sweep.
 *
 * ck_sweep_main writes, in the output directory:
 *   sweep.json           the points, their settings and seeds, and each run's state;
 *   points/p<k>.json     the scenario of point k (checked before anything runs);
 *   runs/p<k>-s<seed>/   each run's directory, runs/p<k>-s<seed>.log its output;
 *   report/              the report: one entry per point, figures over seeds.
 * Run again on the same directory, it resumes: a run whose run.json is
 * there is not run again (a directory holding another sweep is refused).
 */
#ifndef CK_SWEEP_H
#define CK_SWEEP_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define CK_SWEEP_MAX_KEYS 8
#define CK_SWEEP_MAX_VALUES 64
#define CK_SWEEP_MAX_POINTS 1024
#define CK_SWEEP_MAX_SEEDS 1000

/* The points of a sweep. */
typedef struct ck_sweep {
    int nkeys;
    char keys[CK_SWEEP_MAX_KEYS][128];
    int is_config[CK_SWEEP_MAX_KEYS]; /* 1: a configuration key; 0: a scenario path */
    int nvalues[CK_SWEEP_MAX_KEYS];
    int npoints;
    cJSON **points;    /* each point's scenario (no "sweep") */
    char (*labels)[256]; /* "key=value, key=value" */
    int nseeds;
    uint64_t seeds[CK_SWEEP_MAX_SEEDS];
} ck_sweep;

/*
 * Checks a scenario's "sweep" value (its shape only: an object of
 * non-empty lists, "seeds" a range or a list). Returns NULL, or what is
 * wrong, written to why.
 */
const char *ck_sweep_check(const cJSON *sweep, char *why, size_t len);

/*
 * Expands the sweep of the scenario file at path into points, each
 * checked as a scenario of its own. Returns 0, or -1 with a one-line
 * reason naming the file and the point in err.
 */
int ck_sweep_expand(ck_sweep *sw, const char *path, char *err, size_t errlen);
void ck_sweep_free(ck_sweep *sw);

/* Sets key (a configuration key, or a path under cluster, workload or
 * job) of a scenario's JSON to a copy of v. Returns NULL, or what is
 * wrong, written to why. */
const char *ck_sweep_apply(cJSON *scenario, const char *key, const cJSON *v, char *why,
                           size_t len);

/* `chandy sweep SCENARIO.json --out DIR [--jobs N] [--timeout S]`:
 * 0 when every run finished (whatever its verdict), 1 when a run did not
 * (no run.json), 2 on bad usage or input. */
int ck_sweep_main(int argc, char **argv);

#endif
