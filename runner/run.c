#include "run.h"

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "expect.h"
#include "nemesis.h"
#include "rng.h"
#include "runjson.h"
#include "savepoint.h"
#include "storefs.h"
#include "verify.h"

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    CK_UNUSED(st);
    CK_UNUSED(ftw);
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Empties what an earlier run left in the output directory: its store and
 * its sinks' output must not be mistaken for this run's. */
static int clean_outdir(const char *outdir)
{
    static const char *const parts[] = {"store", "sink", "output"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/%s", outdir, parts[i]);
        struct stat st;
        if (lstat(path, &st) == 0 && nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS))
            return CK_EIO;
    }
    return CK_OK;
}

const char *ck_backend_name(ck_backend b)
{
    return b == CK_BACKEND_SOCKETS ? "sockets" : "simgrid";
}

int ck_run_main(const char *scenario_path, const ck_run_opts *o)
{
    static ck_scenario sc; /* large: keep it off the stack */
    char err[1200];
    int rc = ck_scenario_load(&sc, scenario_path, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "chandy: %s\n", err);
        return 2;
    }
    static ck_run r;
    memset(&r, 0, sizeof(r));
    r.sc = &sc;
    r.seed = o->have_seed ? o->seed : sc.seed;
    if (o->swarm) {
        /* The seed's schedule instead of the scenario's own events, judged
         * by the swarm's verdict instead of its expect block. */
        ck_nemesis_draw(&sc, r.seed, (ck_nemesis_mode)o->swarm);
        cJSON_Delete(sc.expect);
        sc.expect = NULL;
    }
    if (o->backend == CK_BACKEND_SOCKETS)
        for (int i = 0; i < sc.nfaults; i++)
            if (sc.faults[i].moment != CK_MOMENT_NONE) {
                fprintf(stderr,
                        "chandy: %s: events[%d].after: triggered events need the simgrid "
                        "backend\n",
                        scenario_path, i);
                ck_scenario_free(&sc);
                return 2;
            }
    r.backend = o->backend;
    r.verbose = o->verbose;
    r.nhosts = ck_scenario_taskmanagers(&sc);
    if (o->outdir)
        snprintf(r.outdir, sizeof(r.outdir), "%s", o->outdir);
    else
        snprintf(r.outdir, sizeof(r.outdir), "out/%s", sc.name);
    rc = ck_workload_generate(&r.wl, &sc.workload, r.seed);
    if (rc) {
        fprintf(stderr, "chandy: %s: generating the workload: %s\n", scenario_path,
                ck_strerror(rc));
        ck_scenario_free(&sc);
        return 1;
    }
    r.env.input_fp = ck_workload_fingerprint(&r.wl);

    /* A savepoint to start from (flink run -s): read and checked before the
     * output directory is emptied, since it may live in there. */
    static ck_savepoint sp;
    static ck_sinkout prior;
    ck_sinkout_init(&prior);
    const char *sp_path = o->from_savepoint ? o->from_savepoint
                          : sc.cfg.v[CK_CFG_RECOVERY_PATH] ? sc.cfg.path
                                                           : NULL;
    int have_sp = 0;
    if (sp_path) {
        if (ck_sp_open(&sp, sp_path, err, sizeof(err)) == 0) {
            have_sp = 1;
            if (sp.meta.nsubtasks != sc.graph.nsubtasks) {
                snprintf(err, sizeof(err),
                         "%s: the savepoint holds the state of %u subtasks, the job has %u "
                         "(changing parallelism on restore is not supported yet)",
                         sp.path, sp.meta.nsubtasks, sc.graph.nsubtasks);
                rc = CK_EINVAL;
            }
        } else {
            rc = CK_EINVAL;
        }
        if (rc) {
            fprintf(stderr, "chandy: %s\n", err);
            if (have_sp)
                ck_sp_free(&sp);
            ck_workload_free(&r.wl);
            ck_scenario_free(&sc);
            return 2;
        }
        snprintf(r.start_path, sizeof(r.start_path), "%s", sp.path);
        /* Stopped with this savepoint over the same input: check our output
         * together with what that run committed before it. */
        char prev[600], outd[700];
        if ((sp.meta.flags & CK_CP_FLAG_STOP) && sp.meta.input_fp == r.env.input_fp &&
            ck_sp_run_dir(&sp, prev, sizeof(prev))) {
            snprintf(outd, sizeof(outd), "%s/output", prev);
            if (ck_sinkout_load_dir(&prior, outd) == CK_OK)
                snprintf(r.prior_output, sizeof(r.prior_output), "%s", prev);
        }
        if (sp.meta.input_fp != r.env.input_fp)
            fprintf(stderr, "chandy: %s: the savepoint was taken over other input; the "
                            "output is checked as partial\n", sp.path);
    }
    if (ck_storefs_mkdirs(r.outdir) || clean_outdir(r.outdir)) {
        fprintf(stderr, "chandy: %s: cannot prepare the output directory: %s\n", r.outdir,
                strerror(errno));
        if (have_sp)
            ck_sp_free(&sp);
        ck_sinkout_free(&prior);
        ck_workload_free(&r.wl);
        ck_scenario_free(&sc);
        return 2;
    }
    if (have_sp) {
        char store[700];
        snprintf(store, sizeof(store), "%s/store", r.outdir);
        rc = ck_sp_install(&sp, store, err, sizeof(err));
        r.env.start.id = sp.meta.id;
        r.env.start.flags = sp.meta.flags;
        snprintf(r.env.start.dir, sizeof(r.env.start.dir), "%s", sp.dir);
        ck_sp_free(&sp);
        if (rc) {
            fprintf(stderr, "chandy: %s\n", err);
            ck_sinkout_free(&prior);
            ck_workload_free(&r.wl);
            ck_scenario_free(&sc);
            return 1;
        }
    }
    /* A job id in Flink's form (32 hex digits), from the seed: stable across reruns. */
    snprintf(r.job_id, sizeof(r.job_id), "%016llx%016llx",
             (unsigned long long)ck_mix64(r.seed), (unsigned long long)ck_mix64(r.seed + 1));
    r.env.g = &sc.graph;
    r.env.cfg = &sc.cfg;
    r.env.topic = &r.wl.topic;
    r.env.job_id = r.job_id;
    r.nfaults = sc.nfaults;
    for (int i = 0; i < sc.nfaults; i++)
        r.faults[i].spec = &sc.faults[i];
    ck_sinkout_init(&r.out);

    int status = 0;
    rc = r.backend == CK_BACKEND_SIMGRID ? ck_sim_run(&r, err, sizeof(err))
                                         : ck_net_run(&r, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "chandy: %s: %s\n", scenario_path, err);
        status = rc == CK_EINVAL ? 2 : 1; /* the scenario asks what the backend cannot do */
        goto out;
    }
    /* What the output must satisfy: exactly once with exactly-once checkpoints
     * (or when nothing failed); at least once otherwise (at-least-once
     * checkpoints, or a restart from the beginning without checkpoints). */
    ck_guarantee guarantee = CK_EXACTLY_ONCE;
    if (r.jm.nrecoveries > 0 &&
        (ck_cfg(&sc.cfg, CK_CFG_CP_INTERVAL) == 0 ||
         ck_cfg(&sc.cfg, CK_CFG_CP_MODE) == CK_CP_AT_LEAST_ONCE))
        guarantee = CK_AT_LEAST_ONCE;
    if (r.jm_ready && r.jm.degraded[0])
        guarantee = CK_AT_LEAST_ONCE; /* the job itself gave exactly once up (run.json says why) */
    /* The run's own output is kept; a run started from a savepoint is then
     * checked together with the output of the run that took it. */
    char outd[700];
    snprintf(outd, sizeof(outd), "%s/output", r.outdir);
    if (ck_sinkout_save(&r.out, outd))
        fprintf(stderr, "chandy: %s: cannot write the output\n", outd);
    for (int i = 0; i < prior.n; i++) {
        const ck_sinkout_stream *st = &prior.s[i];
        if (ck_sinkout_append(&r.out, st->sink_id, 0, st->data, st->len))
            fprintf(stderr, "chandy: out of memory merging %s\n", r.prior_output);
    }
    int partial = (r.jm_ready && r.jm.stopped_with) || (r.env.start.id && !r.prior_output[0]);
    ck_verdict v;
    rc = ck_verify(&sc.graph, &r.wl, &r.out, guarantee, partial, &v, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "chandy: %s: verifying the output: %s\n", scenario_path, err);
        status = 1;
        goto out;
    }
    cJSON *run = ck_report_runjson(&r, &v);
    ck_nemesis_verdict nv;
    if (o->swarm && run) {
        ck_nemesis_judge(&r, &v, (ck_nemesis_mode)o->swarm, &nv);
        cJSON *sw = ck_nemesis_report(&r, (ck_nemesis_mode)o->swarm, &nv);
        if (sw)
            cJSON_AddItemToObject(run, "swarm", sw);
    }
    char path[700];
    snprintf(path, sizeof(path), "%s/run.json", r.outdir);
    if (!run || ck_report_write(run, path)) {
        fprintf(stderr, "chandy: %s: cannot write\n", path);
        cJSON_Delete(run);
        status = 1;
        goto out;
    }
    if (!o->quiet)
        ck_report_summary(stdout, &r, &v, path);
    if (o->swarm) {
        if (!nv.ok) {
            fprintf(stderr, "chandy: %s: seed %llu: swarm %s violation: %s\n", scenario_path,
                    (unsigned long long)r.seed, ck_nemesis_mode_name((ck_nemesis_mode)o->swarm),
                    nv.why);
            status = 1;
        }
    } else if (sc.expect) {
        char report[4096];
        int failures = ck_expect_eval(sc.expect, run, report, sizeof(report));
        if (failures < 0) {
            fprintf(stderr, "chandy: %s: %s\n", scenario_path, report);
            status = 2;
        } else if (failures > 0) {
            fprintf(stderr, "%s\n", report);
            status = 1;
        } else if (!o->quiet) {
            printf("  expect     %d assertion%s held\n", cJSON_GetArraySize(sc.expect),
                   cJSON_GetArraySize(sc.expect) == 1 ? "" : "s");
        }
    } else if (r.jm.state != CK_JOB_FINISHED || !v.ok) {
        /* Without an "expect" block, a run must finish with correct output. */
        fprintf(stderr, "chandy: %s: %s\n", scenario_path,
                r.jm.state != CK_JOB_FINISHED ? "the job did not finish"
                                              : "the output broke its guarantee");
        status = 1;
    }
    cJSON_Delete(run);
out:
    if (r.jm_ready)
        ck_jm_free(&r.jm);
    ck_sinkout_free(&r.out);
    ck_sinkout_free(&prior);
    ck_workload_free(&r.wl);
    ck_scenario_free(&sc);
    return status;
}
