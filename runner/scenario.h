/*
 * scenario.h - a scenario file: the cluster, the workload, the job, the
 * engine configuration (Flink's keys) and the expectations of one run.
 *
 * ck_scenario_load reads and checks everything up front: any unknown key,
 * wrong type or value out of range is reported as one line naming the
 * file, the JSON path and what was expected, before anything runs. The
 * format is documented in docs/SCENARIOS.md.
 */
#ifndef CK_SCENARIO_H
#define CK_SCENARIO_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "config.h"
#include "faults.h"
#include "graph.h"
#include "workload.h"

#define CK_SCENARIO_NAME_MAX 63

/* What loading a scenario warned of (a deprecated configuration key, one
 * line each, naming the file, the key and the key to use instead). */
#define CK_SCENARIO_MAX_WARNINGS 32
typedef struct ck_scenario_warnings {
    int n;
    char v[CK_SCENARIO_MAX_WARNINGS][320];
} ck_scenario_warnings;

typedef struct ck_scenario {
    char path[512];
    char name[CK_SCENARIO_NAME_MAX + 1]; /* a plain file name (ck_scenario_name_ok) */
    char description[512];
    uint64_t seed;
    ck_cluster_spec cluster;
    ck_workload_spec workload;
    ck_job_spec job;
    ck_config cfg;
    ck_graph graph; /* built and checked from job + cfg */
    cJSON *expect;  /* the "expect" object, or NULL */
    ck_scenario_warnings warnings;
    int nfaults;
    ck_fault faults[CK_MAX_FAULTS]; /* the "events" timeline, in order */
    /* What the file's timeline rescales (kept when a swarm replaces the
     * events, nemesis.h): how many rescales it has, and per operator the
     * largest parallelism the job or any of them gives it. */
    int own_rescales;
    uint16_t rescale_hi[CK_FAULT_MAX_OPS];
} ck_scenario;

/*
 * Loads and checks a scenario file. On error returns CK_EINVAL (or CK_EIO
 * when the file cannot be read) with a one-line message in err. A
 * configuration key given under a deprecated name is taken, and noted in
 * s->warnings (ck_scenario_print_warnings shows them).
 */
int ck_scenario_load(ck_scenario *s, const char *path, char *err, size_t errlen);

/* Same, from text; `path` is only used in messages and for relative paths. */
int ck_scenario_parse(ck_scenario *s, const char *path, const char *text, char *err,
                      size_t errlen);

void ck_scenario_free(ck_scenario *s);

/* Prints each of the scenario's warnings as "chandy: warning: <line>". */
void ck_scenario_print_warnings(const ck_scenario *s, FILE *f);

/* 1 when name may name a run (and its default directory out/<name>): 1 to
 * CK_SCENARIO_NAME_MAX bytes, no '/', not "." or "..", no control characters. */
int ck_scenario_name_ok(const char *name);

/* The generations of the job's graph (graph.h): *gens (malloc'd, *ngens
 * of them) is the job as submitted, then per rescale of the timeline, by
 * its number, the job at the parallelism it sets; all share one endpoint
 * stride (ck_graph_share_stride), s->graph's set to it. 0, CK_ENOMEM, or
 * CK_EINVAL with a line in err (a rescale's job does not build). */
int ck_scenario_generations(ck_scenario *s, ck_graph **gens, int *ngens, char *err,
                            size_t errlen);

/* Task managers the run uses: as given, or as many as the job needs. */
int ck_scenario_taskmanagers(const ck_scenario *s);

#endif
