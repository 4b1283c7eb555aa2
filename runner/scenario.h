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

#include "config.h"
#include "graph.h"
#include "workload.h"

typedef struct ck_cluster_spec {
    int taskmanagers;     /* 0: as many as the job needs */
    int cores;
    double speed;         /* flops per second per core */
    double link_bw;       /* bytes per second, each host's link */
    int64_t link_lat;     /* ns */
    double store_bw;      /* store host's link */
    int64_t store_lat;
    double disk_read_bw, disk_write_bw;
    char network_model[16];
    char platform[512];   /* a SimGrid platform file to use instead, or "" */
} ck_cluster_spec;

typedef enum ck_fault_kind {
    CK_FAULT_CRASH, /* a task manager's machine goes down (and may come back) */
} ck_fault_kind;

#define CK_MAX_FAULTS 64

typedef struct ck_fault {
    ck_time at;
    ck_fault_kind kind;
    int host;              /* task manager index */
    ck_time restart_after; /* 0: stays down */
} ck_fault;

typedef struct ck_scenario {
    char path[512];
    char name[64];
    char description[512];
    uint64_t seed;
    ck_cluster_spec cluster;
    ck_workload_spec workload;
    ck_job_spec job;
    ck_config cfg;
    ck_graph graph; /* built and checked from job + cfg */
    cJSON *expect;  /* the "expect" object, or NULL */
    int nfaults;
    ck_fault faults[CK_MAX_FAULTS]; /* the "events" timeline, in order */
} ck_scenario;

/*
 * Loads and checks a scenario file. On error returns CK_EINVAL (or CK_EIO
 * when the file cannot be read) with a one-line message in err.
 */
int ck_scenario_load(ck_scenario *s, const char *path, char *err, size_t errlen);

/* Same, from text; `path` is only used in messages and for relative paths. */
int ck_scenario_parse(ck_scenario *s, const char *path, const char *text, char *err,
                      size_t errlen);

void ck_scenario_free(ck_scenario *s);

/* 1 when the fault acts on task manager `host` (crashes it, cuts it off). */
int ck_fault_involves(const ck_fault *f, int host);

/* Task managers the run uses: as given, or as many as the job needs. */
int ck_scenario_taskmanagers(const ck_scenario *s);

#endif
