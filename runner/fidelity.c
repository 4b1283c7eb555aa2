#include "fidelity.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "report.h"
#include "runfile.h"
#include "scenario.h"
#include "storefs.h"

typedef struct fid {
    const char *scenario, *out, *seed;
    char dir[2][PATH_MAX];
    int ok[2];
} fid;

static const char *const backends[2] = {"simgrid", "sockets"};

static int prepare(void *ctx, size_t i, const char **argv, char *log, size_t loglen)
{
    fid *F = ctx;
    snprintf(log, loglen, "%s.log", F->dir[i]);
    int a = 0;
    argv[a++] = "run";
    argv[a++] = F->scenario;
    argv[a++] = "--backend";
    argv[a++] = backends[i];
    argv[a++] = "--out";
    argv[a++] = F->dir[i];
    if (F->seed) {
        argv[a++] = "--seed";
        argv[a++] = F->seed;
    }
    argv[a++] = "-q";
    argv[a] = NULL;
    fprintf(stderr, "fidelity: running %s over %s\n", F->scenario, backends[i]);
    return 0;
}

static void done(void *ctx, size_t i, int status, double wall_s, int timed_out)
{
    fid *F = ctx;
    (void)status;
    ck_runfile rf;
    char err[300];
    F->ok[i] = !ck_runfile_load(&rf, F->dir[i], err, sizeof(err));
    if (F->ok[i])
        ck_runfile_free(&rf);
    fprintf(stderr, "fidelity: %s: %s in %.1f s%s\n", backends[i],
            F->ok[i] ? "finished" : "no run.json (see its log)", wall_s,
            timed_out ? " (killed: too long)" : "");
}

int ck_fidelity_main(int argc, char **argv)
{
    fid F = {0};
    double band = 0.25;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) && i + 1 < argc)
            F.out = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            F.seed = argv[++i];
        else if (!strcmp(argv[i], "--band") && i + 1 < argc) {
            char *end;
            band = strtod(argv[++i], &end);
            if (*end || !(band > 0 && band < 10)) {
                fprintf(stderr, "chandy fidelity: --band: expected a fraction such as 0.25, got "
                                "%s\n",
                        argv[i]);
                return 2;
            }
        } else if (argv[i][0] != '-' && !F.scenario)
            F.scenario = argv[i];
        else {
            fprintf(stderr, "chandy fidelity: unexpected argument %s\n", argv[i]);
            F.scenario = NULL;
            break;
        }
    }
    if (!F.scenario || !F.out) {
        fprintf(stderr, "usage: chandy fidelity SCENARIO.json --out DIR [--seed N] [--band F]\n");
        return 2;
    }
    static ck_scenario sc;
    char err[1200];
    if (ck_scenario_load(&sc, F.scenario, err, sizeof(err))) {
        fprintf(stderr, "chandy fidelity: %s\n", err);
        return 2;
    }
    ck_scenario_free(&sc);
    if (ck_storefs_mkdirs(F.out)) {
        fprintf(stderr, "chandy fidelity: %s: cannot create: %s\n", F.out, strerror(errno));
        return 2;
    }
    snprintf(F.dir[0], sizeof(F.dir[0]), "%s/sim", F.out);
    snprintf(F.dir[1], sizeof(F.dir[1]), "%s/real", F.out);
    ck_pool_ops ops = {prepare, done, NULL};
    /* One at a time: the real run's timing is what it measures. */
    if (ck_pool_run(2, 1, 3600, &ops, &F))
        fprintf(stderr, "chandy fidelity: cannot start a run: %s\n", strerror(errno));
    if (!F.ok[0] || !F.ok[1]) {
        fprintf(stderr, "chandy fidelity: a run left no run.json: no report\n");
        return 1;
    }
    if (ck_report_fidelity(F.dir[0], F.dir[1], F.out, band, err, sizeof(err))) {
        fprintf(stderr, "chandy fidelity: %s\n", err);
        return 1;
    }
    printf("wrote %s/index.html, %s/summary.md, %s/fidelity.csv; both runs side by side in "
           "%s/report/\n",
           F.out, F.out, F.out, F.out);
    return 0;
}
