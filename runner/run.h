/*
 * run.h - one run of a scenario, and the contract between the runner and
 * the backends (sim/ and net/).
 *
 * The runner fills the inputs (scenario, seed, output directory, the
 * generated workload and the job environment); a backend executes the job
 * and fills the results: the job manager's view of the job (state, end
 * time, merged metrics, per-subtask metrics), what the sinks wrote, and
 * figures about the platform itself. The runner then verifies the output
 * and writes run.json.
 */
#ifndef CK_RUN_H
#define CK_RUN_H

#include "jobmanager.h"
#include "scenario.h"
#include "sinkout.h"
#include "task.h"
#include "workload.h"

typedef enum ck_backend { CK_BACKEND_SIMGRID, CK_BACKEND_SOCKETS } ck_backend;

/* A fault of the timeline as it happened in this run. */
typedef struct ck_fault_run {
    const ck_fault *spec;
    int applied, ended;           /* ended: restarted, healed, back to speed */
    ck_time applied_at, ended_at;
    int failed;                   /* could not be applied (see detail) */
    char detail[300];             /* what it did: the file damaged, the savepoint taken */
} ck_fault_run;

typedef struct ck_run {
    /* inputs */
    const ck_scenario *sc;
    uint64_t seed;
    char outdir[512];
    ck_backend backend;
    int verbose;
    ck_workload wl;
    ck_job_env env;
    char job_id[40];
    int nhosts; /* task managers */
    char start_path[600]; /* the savepoint the job starts from, as given */
    char prior_output[600]; /* output of the run that took it, checked with ours ("": none) */

    /* results */
    ck_jm jm;          /* job state, end time, metrics (initialized by the backend) */
    int jm_ready;
    ck_sinkout out;    /* what every sink subtask wrote */
    double wall_s;     /* wall-clock duration of the execution */
    double time_limit_s; /* the backend's limit of (simulated or real) time */
    const char *unfinished; /* NULL, or "TIME_LIMIT" (run.json's job.state): the run
                             * stopped at its time limit with the job neither
                             * finished nor failed; jm.failure says more */
    uint64_t messages, message_bytes;
    char network_model[16];
    char platform_file[600];
    int nfaults;
    ck_fault_run faults[CK_MAX_FAULTS];
    char error[800]; /* why the run failed though the job ran (its output not recorded), or "" */
} ck_run;

/* Backends: run the job to its end. Return 0, or an error with err set. */
int ck_sim_run(ck_run *r, char *err, size_t errlen);
int ck_net_run(ck_run *r, char *err, size_t errlen);

const char *ck_backend_name(ck_backend b);

typedef struct ck_run_opts {
    const char *from_savepoint; /* like `flink run -s`: overrides execution.state-recovery.path */
    int have_seed;
    uint64_t seed;
    const char *outdir; /* NULL: out/<scenario name> */
    ck_backend backend;
    int verbose;
    int quiet;
    int swarm; /* ck_nemesis_mode: draw the seed's fault schedule and judge the run by it */
} ck_run_opts;

/*
 * Loads, runs, verifies and reports one scenario. Returns the process exit
 * status: 0 (ran; every expectation held), 1 (an expectation failed, or
 * the run could not complete), 2 (the scenario or the options are wrong).
 * With o->swarm, the scenario's events and expect are replaced by the
 * seed's drawn schedule and the swarm verdict (runner/nemesis.h): 0 when
 * it holds, 1 when it does not.
 */
int ck_run_main(const char *scenario_path, const ck_run_opts *o);

#endif
