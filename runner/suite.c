#include "suite.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "jsonin.h"
#include "pool.h"
#include "report.h"
#include "runfile.h"
#include "runjson.h"
#include "scenario.h"
#include "storefs.h"
#include "sweep.h"

#define MAX_COMPARISONS 32
#define MAX_RUNS_PER 8
#define MAX_RUNS (MAX_COMPARISONS * MAX_RUNS_PER)

typedef struct srun {
    char scenario[PATH_MAX]; /* the file chandy run reads */
    char key[PATH_MAX + 600]; /* what makes two runs the same */
    char seed[32];            /* "" : the scenario's */
    char backend[16];         /* "" : simgrid */
    char dir[PATH_MAX];
    int state;                /* 0 to run, 1 run.json written, 2 none */
    int ok;                   /* its output was correct */
    double wall_s;
} srun;

typedef struct comparison {
    char title[200], note[600], plot[16];
    int n;
    int run[MAX_RUNS_PER];         /* into runs */
    char label[MAX_RUNS_PER][200]; /* "" : named from the run */
} comparison;

typedef struct suite {
    const char *file, *out;
    char name[64], description[1000];
    comparison cmp[MAX_COMPARISONS];
    int ncmp;
    srun runs[MAX_RUNS];
    int nruns;
    size_t done;
} suite;

/* The directory part of path ("." when none). */
static void dir_of(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(buf, len, ".");
}

/* Reads the suite file: its comparisons and their runs, each scenario
 * checked (a changed one written to DIR/scenarios/). */
static int load(suite *S, char *err, size_t errlen)
{
    char *text = ck_jin_read(S->file, 16u << 20, "a suite", NULL, err, errlen);
    if (!text)
        return -1;
    ck_jin j = {.file = S->file};
    cJSON *root = ck_jin_parse(&j, text);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s", j.err);
        return -1;
    }
    static const char *const top[] = {"name", "description", "comparisons", NULL};
    static const char *const cmp_keys[] = {"title", "note", "plot", "runs", NULL};
    static const char *const run_keys[] = {"scenario", "label", "set", "seed", "backend", NULL};
    static const char *const plots[] = {"checkpoints", "throughput", "latency", "recovery",
                                        "vertices",    "state",      "rescale", NULL};
    static const char *const backends[] = {"simgrid", "sockets", NULL};
    char base[PATH_MAX];
    dir_of(S->file, base, sizeof(base));
    ck_jin_object(&j, root, top);
    snprintf(S->name, sizeof(S->name), "suite");
    ck_jin_string(&j, root, "name", 0, S->name, sizeof(S->name));
    ck_jin_string(&j, root, "description", 0, S->description, sizeof(S->description));
    const cJSON *cmps = cJSON_GetObjectItemCaseSensitive(root, "comparisons");
    size_t at = ck_jin_push_key(&j, "comparisons");
    if (!j.failed && (!cJSON_IsArray(cmps) || cJSON_GetArraySize(cmps) < 1 ||
                      cJSON_GetArraySize(cmps) > MAX_COMPARISONS))
        ck_jin_fail(&j, "expected a list of 1 to %d comparisons", MAX_COMPARISONS);
    const cJSON *c, *cmp_list = j.failed ? NULL : cmps;
    cJSON_ArrayForEach(c, cmp_list)
    {
        size_t at_c = ck_jin_push_index(&j, S->ncmp);
        comparison *C = &S->cmp[S->ncmp];
        ck_jin_object(&j, c, cmp_keys);
        ck_jin_string(&j, c, "title", 1, C->title, sizeof(C->title));
        ck_jin_string(&j, c, "note", 0, C->note, sizeof(C->note));
        int plot = 0;
        ck_jin_enum(&j, c, "plot", 0, plots, &plot);
        snprintf(C->plot, sizeof(C->plot), "%s", plots[plot]);
        const cJSON *runs = cJSON_GetObjectItemCaseSensitive(c, "runs");
        size_t at_r = ck_jin_push_key(&j, "runs");
        if (!j.failed && (!cJSON_IsArray(runs) || cJSON_GetArraySize(runs) < 1 ||
                          cJSON_GetArraySize(runs) > MAX_RUNS_PER))
            ck_jin_fail(&j, "expected a list of 1 to %d runs", MAX_RUNS_PER);
        const cJSON *r, *run_list = j.failed ? NULL : runs;
        cJSON_ArrayForEach(r, run_list)
        {
            size_t at_i = ck_jin_push_index(&j, C->n);
            char scen[PATH_MAX] = "", seed[32] = "", backend[16] = "";
            const cJSON *set = NULL;
            if (cJSON_IsString(r)) {
                snprintf(scen, sizeof(scen), "%s", r->valuestring);
            } else if (cJSON_IsObject(r)) {
                ck_jin_object(&j, r, run_keys);
                ck_jin_string(&j, r, "scenario", 1, scen, sizeof(scen));
                ck_jin_string(&j, r, "label", 0, C->label[C->n], sizeof(C->label[0]));
                int64_t sd = -1;
                ck_jin_int(&j, r, "seed", 0, 0, INT64_C(9007199254740991), &sd);
                if (sd >= 0)
                    snprintf(seed, sizeof(seed), "%lld", (long long)sd);
                int b = 0;
                if (cJSON_GetObjectItemCaseSensitive(r, "backend")) {
                    ck_jin_enum(&j, r, "backend", 0, backends, &b);
                    snprintf(backend, sizeof(backend), "%s", backends[b]);
                }
                set = cJSON_GetObjectItemCaseSensitive(r, "set");
                if (set && !cJSON_IsObject(set) && !j.failed) {
                    size_t s2 = ck_jin_push_key(&j, "set");
                    ck_jin_fail(&j, "expected an object of keys and values");
                    ck_jin_pop(&j, s2);
                }
            } else if (!j.failed) {
                ck_jin_fail(&j, "expected a scenario file, or an object with \"scenario\"");
            }
            if (j.failed) {
                ck_jin_pop(&j, at_i);
                break;
            }
            char path[PATH_MAX];
            if (scen[0] == '/')
                snprintf(path, sizeof(path), "%s", scen);
            else
                snprintf(path, sizeof(path), "%s/%s", base, scen);
            /* The scenario with its changes, checked now. */
            char rerr[700];
            char *stext = ck_jin_read(path, 16u << 20, "a scenario", NULL, rerr, sizeof(rerr));
            cJSON *sc = stext ? cJSON_Parse(stext) : NULL;
            if (stext && !sc)
                snprintf(rerr, sizeof(rerr), "%.600s: not valid JSON", path);
            free(stext);
            if (!sc) {
                ck_jin_fail(&j, "%s", rerr);
                ck_jin_pop(&j, at_i);
                break;
            }
            const cJSON *kv;
            char why[400];
            cJSON_ArrayForEach(kv, set)
            {
                const char *bad = ck_sweep_apply(sc, kv->string, kv, why, sizeof(why));
                if (bad) {
                    size_t s2 = ck_jin_push_key(&j, "set");
                    ck_jin_fail(&j, "%s", bad);
                    ck_jin_pop(&j, s2);
                    break;
                }
            }
            char *flat = set ? cJSON_PrintUnformatted(set) : NULL;
            char key[PATH_MAX + 600];
            snprintf(key, sizeof(key), "%s|%s|%s|%s", path, flat ? flat : "", seed, backend);
            free(flat);
            int id;
            for (id = 0; id < S->nruns; id++)
                if (!strcmp(S->runs[id].key, key))
                    break;
            if (!j.failed && id == S->nruns) {
                srun *R = &S->runs[S->nruns++];
                snprintf(R->key, sizeof(R->key), "%s", key);
                snprintf(R->seed, sizeof(R->seed), "%s", seed);
                snprintf(R->backend, sizeof(R->backend), "%s", backend);
                snprintf(R->dir, sizeof(R->dir), "%s/runs/r%d", S->out, id + 1);
                snprintf(R->scenario, sizeof(R->scenario), "%s", path);
                if (set) {
                    /* Its expectations were the unchanged scenario's. */
                    cJSON_DeleteItemFromObjectCaseSensitive(sc, "expect");
                    /* A platform file named relative to the scenario: absolute. */
                    cJSON *cl = cJSON_GetObjectItemCaseSensitive(sc, "cluster");
                    cJSON *plat = cJSON_GetObjectItemCaseSensitive(cl, "platform");
                    char sdir[PATH_MAX], abs[PATH_MAX * 2], real[PATH_MAX];
                    dir_of(path, sdir, sizeof(sdir));
                    if (cJSON_IsString(plat) && plat->valuestring[0] != '/') {
                        snprintf(abs, sizeof(abs), "%s/%s", sdir, plat->valuestring);
                        if (realpath(abs, real))
                            cJSON_ReplaceItemInObjectCaseSensitive(cl, "platform",
                                                                   cJSON_CreateString(real));
                    }
                    char d[PATH_MAX];
                    snprintf(d, sizeof(d), "%s/scenarios", S->out);
                    snprintf(R->scenario, sizeof(R->scenario), "%s/scenarios/r%d.json", S->out,
                             id + 1);
                    if (ck_storefs_mkdirs(d) || ck_runjson_write(sc, R->scenario))
                        ck_jin_fail(&j, "%s: cannot write: %s", R->scenario, strerror(errno));
                }
                static ck_scenario chk;
                char cerr[1200];
                if (!j.failed && ck_scenario_load(&chk, R->scenario, cerr, sizeof(cerr)))
                    ck_jin_fail(&j, "%s", cerr);
                else if (!j.failed)
                    ck_scenario_free(&chk);
            }
            cJSON_Delete(sc);
            C->run[C->n++] = id;
            ck_jin_pop(&j, at_i);
            if (j.failed)
                break;
        }
        ck_jin_pop(&j, at_r);
        ck_jin_pop(&j, at_c);
        S->ncmp++;
        if (j.failed)
            break;
    }
    ck_jin_pop(&j, at);
    cJSON_Delete(root);
    if (j.failed) {
        snprintf(err, errlen, "%s", j.err);
        return -1;
    }
    return 0;
}

static int prepare(void *ctx, size_t i, const char **argv, char *log, size_t loglen)
{
    suite *S = ctx;
    srun *R = &S->runs[i];
    snprintf(log, loglen, "%s.log", R->dir);
    int a = 0;
    argv[a++] = "run";
    argv[a++] = R->scenario;
    argv[a++] = "--out";
    argv[a++] = R->dir;
    if (R->seed[0]) {
        argv[a++] = "--seed";
        argv[a++] = R->seed;
    }
    if (R->backend[0]) {
        argv[a++] = "--backend";
        argv[a++] = R->backend;
    }
    argv[a++] = "-q";
    argv[a] = NULL;
    return 0;
}

static void done(void *ctx, size_t i, int status, double wall_s, int timed_out)
{
    suite *S = ctx;
    srun *R = &S->runs[i];
    ck_runfile rf;
    char err[300];
    R->wall_s = wall_s;
    if (ck_runfile_load(&rf, R->dir, err, sizeof(err))) {
        R->state = 2;
    } else {
        R->state = 1;
        R->ok = ck_rf_bool(rf.root, "correctness.ok");
        ck_runfile_free(&rf);
    }
    S->done++;
    const char *name = strrchr(R->scenario, '/');
    fprintf(stderr, "suite %s: %zu/%d: r%zu (%s): %s in %.1f s\n", S->name, S->done, S->nruns,
            i + 1, name ? name + 1 : R->scenario,
            R->state == 2 ? (timed_out ? "killed after the time limit, no run.json"
                                       : "no run.json (see its log)")
            : !R->ok      ? "finished, output WRONG"
            : WIFEXITED(status) && WEXITSTATUS(status)
                ? "finished (chandy run exited with an error: see its log)"
                : "finished",
            wall_s);
}

int ck_suite_main(int argc, char **argv)
{
    static suite S;
    memset(&S, 0, sizeof(S));
    int jobs = 2;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) && i + 1 < argc)
            S.out = argv[++i];
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
            jobs = atoi(argv[++i]);
            if (jobs < 1 || jobs > 256) {
                fprintf(stderr, "chandy suite: --jobs: expected 1 to 256, got %s\n", argv[i]);
                return 2;
            }
        } else if (argv[i][0] != '-' && !S.file)
            S.file = argv[i];
        else {
            fprintf(stderr, "chandy suite: unexpected argument %s\n", argv[i]);
            fprintf(stderr, "usage: chandy suite SUITE.json --out DIR [--jobs N]\n");
            return 2;
        }
    }
    if (!S.file || !S.out) {
        fprintf(stderr, "usage: chandy suite SUITE.json --out DIR [--jobs N]\n");
        return 2;
    }
    char err[1600], dir[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/runs", S.out);
    if (ck_storefs_mkdirs(dir)) {
        fprintf(stderr, "chandy suite: %s: cannot create: %s\n", dir, strerror(errno));
        return 2;
    }
    if (load(&S, err, sizeof(err))) {
        fprintf(stderr, "chandy suite: %s\n", err);
        return 2;
    }
    fprintf(stderr, "suite %s: %d comparison%s, %d run%s, %d at a time\n", S.name, S.ncmp,
            S.ncmp == 1 ? "" : "s", S.nruns, S.nruns == 1 ? "" : "s", jobs);
    ck_pool_ops ops = {prepare, done, NULL};
    if (ck_pool_run((size_t)S.nruns, jobs, 1800, &ops, &S))
        fprintf(stderr, "chandy suite: cannot start a run: %s\n", strerror(errno));

    /* Each comparison's report, then the index. */
    static ck_report_entry ents[MAX_COMPARISONS][MAX_RUNS_PER];
    static const char *paths[MAX_COMPARISONS][MAX_RUNS_PER];
    static char cdir[MAX_COMPARISONS][32];
    ck_report_section sec[MAX_COMPARISONS];
    int nsec = 0, status = 0;
    for (int k = 0; k < S.ncmp; k++) {
        comparison *C = &S.cmp[k];
        int ne = 0;
        for (int i = 0; i < C->n; i++) {
            srun *R = &S.runs[C->run[i]];
            if (R->state != 1) {
                status = 1;
                continue;
            }
            if (!R->ok)
                status = 1;
            paths[k][ne] = R->dir;
            ents[k][ne] = (ck_report_entry){C->label[i][0] ? C->label[i] : NULL, &paths[k][ne], 1};
            ne++;
        }
        if (!ne)
            continue;
        snprintf(cdir[k], sizeof(cdir[k]), "c%d", k + 1);
        char rdir[PATH_MAX + 40];
        snprintf(rdir, sizeof(rdir), "%s/%s", S.out, cdir[k]);
        if (ck_report_make_entries(ents[k], ne, rdir, C->title, err, sizeof(err))) {
            fprintf(stderr, "chandy suite: %s\n", err);
            status = 1;
            continue;
        }
        sec[nsec++] = (ck_report_section){C->title, C->note[0] ? C->note : NULL, cdir[k],
                                          C->plot, ents[k], ne};
    }
    char title[200];
    snprintf(title, sizeof(title), "chandy suite: %s", S.name);
    if (!nsec) {
        fprintf(stderr, "chandy suite: no run finished: no report\n");
        return 1;
    }
    if (ck_report_index(sec, nsec, S.out, title, S.description[0] ? S.description : NULL, err,
                        sizeof(err))) {
        fprintf(stderr, "chandy suite: %s\n", err);
        return 1;
    }
    printf("wrote %s/index.html (and summary.md): %d comparison%s; each comparison's report "
           "in %s/c<k>/\n",
           S.out, nsec, nsec == 1 ? "" : "s", S.out);
    return status;
}
