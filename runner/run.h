/*
 * run.h - one run of a scenario.
 *
 * The runner loads the scenario, generates the input, prepares the output
 * directory, hands a backend what to run (backend/backend.h) and gets its
 * result back; it then verifies the output and writes run.json.
 */
#ifndef CK_RUN_H
#define CK_RUN_H

#include "backend.h"
#include "injected.h"
#include "scenario.h"
#include "workload.h"

typedef enum ck_backend { CK_BACKEND_SIMGRID, CK_BACKEND_SOCKETS } ck_backend;

typedef struct ck_run {
    const ck_scenario *sc;
    uint64_t seed;
    char outdir[512];
    ck_backend backend;
    int verbose;
    ck_workload wl;
    char job_id[40];
    char start_path[600]; /* the savepoint the job starts from, as given */
    char prior_output[600]; /* output of the run that took it, checked with ours ("": none) */
    int prior_cut;          /* of that output only what came before the snapshot's cut */
    uint64_t prior_after;   /* and so many records it committed after, which ours repeats */
    ck_cp_meta start_meta;  /* the savepoint's _metadata: its state handles, per subtask */
    ck_backend_job job;     /* what the backend was asked to run */
    ck_graph *gens;         /* the job's graph per generation (ck_scenario_generations) */
    int ngens;
    ck_op_slowdown slowdowns[CK_MAX_FAULTS]; /* its slow_operator faults, for the engine */
    ck_backend_result res;  /* what came of it (backend/backend.h) */
    /* The job's fallbacks (ck_jm.fallbacks) judged against the timeline: */
    char degraded[400];     /* why the output was held to at least once only: every
                             * fallback passed a file the timeline damaged ("": none) */
    char unexplained[400];  /* a fallback nothing the timeline did explains: the run
                             * fails, whatever its output ("": none) */
    /* The output faults that damaged committed output, judged against the
     * verdict (verify/injected.h): */
    ck_injected injected;   /* what the verdict had to show (faults 0: none) */
    int checker_ok;         /* 1: it showed exactly that */
    char checker_failure[600]; /* else why: the output check is wrong ("": none) */
    /* Per rescale of res.jm.rescales: the source offsets, per partition, of
     * the snapshot it restored, where the generation it deployed took over
     * the input (NULL: it did not deploy, or the run cannot say); for the
     * verdict and run.json's rescales[].cut */
    int64_t **cuts;
    size_t ncuts;
} ck_run;

const char *ck_backend_name(ck_backend b);

/*
 * The fault that explains the job manager's fallback i (r->res.jm.fallbacks):
 * the index of a corrupt_checkpoint event of the timeline that damaged,
 * before the restore failed, the very file the restore found damaged (by
 * its size or checksum). -1 when none does: a restore that failed on a
 * file no event damaged, or for another reason (a file missing, one that
 * does not decode), which is a fault of the engine, never the schedule's.
 */
int ck_run_fallback_cause(const ck_run *r, size_t i);

/*
 * Judges the job's fallbacks: fills r->degraded when every one is
 * explained (ck_run_fallback_cause) and one went back past a completed
 * checkpoint, r->unexplained (one line) for the first that is not.
 * Returns 1 when one is not, else 0.
 */
int ck_run_judge_fallbacks(ck_run *r);

/*
 * Judges the output check against the damage the timeline's output
 * faults injected (verify/injected.h), once v is the run's verdict:
 * fills r->injected, and r->checker_ok, or r->checker_failure (one
 * line). whole: the output is all the job's. Returns 1 when the check
 * counted other than the damage injected, else 0 (also when no output
 * fault damaged anything).
 */
int ck_run_judge_injected(ck_run *r, const ck_verdict *v, int whole);

typedef struct ck_run_opts {
    const char *from_savepoint; /* like `flink run -s`: overrides execution.state-recovery.path */
    int claim_mode; /* 1 + CK_CLAIM...: like `flink run -claimMode`, overrides
                     * execution.state-recovery.claim-mode; 0: the scenario's */
    int have_seed;
    uint64_t seed;
    const char *outdir; /* NULL: out/<scenario name> */
    ck_backend backend;
    int verbose;
    int quiet;
    int swarm; /* ck_nemesis_mode: draw the seed's fault schedule and judge the run by it */
    int check_invariants; /* 1: check every invariant after each step (invariant.h), -1:
                           * not; 0: the build's default (CMake's CHANDY_INVARIANTS) */
} ck_run_opts;

/*
 * Loads, runs, verifies and reports one scenario. Returns the process exit
 * status: 0 (ran; every expectation held), 1 (an expectation failed, or
 * the run could not complete), 2 (the scenario or the options are wrong).
 * With o->swarm, the scenario's events and expect are replaced by the
 * seed's drawn schedule and the swarm verdict (runner/nemesis.h): 0 when
 * it holds, 1 when it does not. A violated invariant (with checks on)
 * ends the process at once with CK_EXIT_INVARIANT (invariant.h).
 */
int ck_run_main(const char *scenario_path, const ck_run_opts *o);

#endif
