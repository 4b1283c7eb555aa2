/*
 * backend.h - the contract between a run and a backend.
 *
 * The runner (runner/run.c) reads a scenario, generates the input and
 * hands a backend a plain description of what to run (ck_backend_job):
 * the job environment of the engine, the cluster, the events timeline,
 * the output directory and the seed. The backend runs the job manager,
 * the task managers and their subtasks on its platform (sim/: SimGrid,
 * simulated time; net/: one process per host, real sockets) until the job
 * ends or the time limit, and fills a plain result (ck_backend_result):
 * the job manager's view of the job, what the sinks committed, how each
 * fault went, and figures about the platform. The runner then verifies the
 * output and writes run.json from that result.
 *
 * A backend includes nothing from runner/; the runner reaches a backend
 * only through the table below (ck_backend_ops).
 */
#ifndef CK_BACKEND_H
#define CK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "faults.h"
#include "jobmanager.h"
#include "sinkfs.h"
#include "sinkout.h"
#include "task.h"
#include "wire.h"

/* What to run. Every pointer stays valid while the backend runs. */
typedef struct ck_backend_job {
    ck_job_env env;                 /* graph, configuration, input, job id, savepoint */
    const ck_cluster_spec *cluster; /* hosts, cores, links, the store */
    int ntm;                        /* task managers */
    const ck_fault *faults;         /* the events timeline, in order */
    int nfaults;
    ck_time input_duration;         /* how long the input lasts: the time limit grows with it */
    const char *outdir;             /* the run's directory: store/, sink/, platform.xml */
    uint64_t seed;
    int verbose;
    int check_invariants;           /* check every invariant after each step (invariant.h) */
} ck_backend_job;

/* A fault of the timeline as it happened in this run. */
typedef struct ck_fault_run {
    const ck_fault *spec;
    int applied, ended;           /* ended: restarted, healed, back to speed */
    ck_time applied_at, ended_at;
    int failed;                   /* could not be applied (see detail) */
    uint64_t hits;                /* store_errors, alloc_failure: operations it failed;
                                   * store_delay: completions it delayed (buggify.h) */
    char detail[300];             /* what it did: the file damaged, the savepoint taken */
    char key[CK_HANDLE_KEY_MAX + 1]; /* corrupt_checkpoint: the store key it damaged */
    int out_done;                 /* an output fault: applied to a committed transaction... */
    ck_sinkfs_fault out;          /* ...and what it did there (io/sinkfs.h) */
} ck_fault_run;

/* Engine messages sent between endpoints, by kind: network buffers
 * (DATA), credit grants (CREDIT), and the rest (control: checkpoints,
 * deployment, heartbeats, metrics). */
typedef struct ck_msgcount {
    uint64_t messages, bytes;
    uint64_t data, credit;
} ck_msgcount;

/* Counts msg (a wire message, header first) of len bytes. */
static inline void ck_msgcount_add(ck_msgcount *c, const uint8_t *msg, size_t len)
{
    c->messages++;
    c->bytes += len;
    c->data += msg[0] == CK_MSG_DATA;
    c->credit += msg[0] == CK_MSG_CREDIT;
}

/* What came of it. */
typedef struct ck_backend_result {
    ck_jm jm;          /* job state, end time, metrics (initialized by the backend) */
    int jm_ready;
    ck_sinkout out;    /* what every sink subtask committed */
    double wall_s;     /* wall-clock duration of the execution */
    double time_limit_s; /* the backend's limit of (simulated or real) time */
    const char *unfinished; /* NULL, or "TIME_LIMIT" (run.json's job.state): the run
                             * stopped at its time limit with the job neither
                             * finished nor failed; jm.failure says more */
    ck_msgcount msgs; /* engine messages sent between endpoints */
    uint64_t transfers; /* SimGrid: simulated network transfers (frames batched per host pair) */
    /* SimGrid: the task managers' network buffer pools (segpool.h): the
     * segments each holds, and the most any one had reserved and in use */
    uint32_t seg_bytes, segs_total, segs_reserved_max, segs_used_max;
    char network_model[16];
    /* SimGrid: the model that timed the job's transfers between hosts
     * ("fast" or "simgrid": sim/simnet.h), and why that one */
    char transfer_model[8];
    char transfer_model_why[400];
    char platform_file[600];
    int nfaults;
    ck_fault_run faults[CK_MAX_FAULTS]; /* one per job->faults, in the same order */
    char error[800]; /* why the run failed though the job ran (its output not recorded), or "" */
} ck_backend_result;

/* Readies r for a backend to fill: empty output, one ck_fault_run per
 * fault of job, nothing else set. */
void ck_backend_result_init(ck_backend_result *r, const ck_backend_job *job);

/* The job's environment per generation of its graph (graph.h), env's
 * with g the generation's: a malloc'd array of max(1, env->ngens), or
 * NULL when out of memory. A subtask of an attempt is built from its
 * generation's (the attempt's routes name it). */
ck_job_env *ck_backend_envs(const ck_job_env *env);

/* The environment of generation gen in envs (ck_backend_envs), or the
 * first when the job has no such generation. */
const ck_job_env *ck_backend_env_of(const ck_job_env *envs, int gen);

/*
 * After the run, what each output fault of r did, from the sinks'
 * directory sink_dir (io/sinkfs.h), by the same rule for both backends:
 * an armed fault that a commit claimed gets out_done, out and a detail
 * line; one that no commit of its sink claimed (the sink committed
 * nothing after it) did nothing, and is marked failed with that reason.
 * g names the sinks in the detail lines.
 */
void ck_backend_output_faults(ck_backend_result *r, const ck_graph *g, const char *sink_dir);

/* Frees what a backend left in r (the job manager, the output). */
void ck_backend_result_free(ck_backend_result *r);

/*
 * A backend: runs job to its end and fills r (readied with
 * ck_backend_result_init). Returns 0, or CK_EINVAL when the job asks what
 * the backend cannot do, or another error, with a one-line message in err.
 */
typedef struct ck_backend_ops {
    const char *name; /* "simgrid", "sockets" */
    int (*run)(const ck_backend_job *job, ck_backend_result *r, char *err, size_t errlen);
} ck_backend_ops;

#endif
