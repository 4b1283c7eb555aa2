#include "sweep.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "jsonin.h"
#include "pool.h"
#include "report.h"
#include "runfile.h"
#include "runjson.h"
#include "scenario.h"
#include "storefs.h"

/* ---- the sweep's shape -------------------------------------------------------------- */

/* "A..B": 0 and the range, or -1. */
static int parse_range(const char *s, uint64_t *a, uint64_t *b)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || strncmp(end, "..", 2) || end[2] < '0' || end[2] > '9')
        return -1;
    unsigned long long y = strtoull(end + 2, &end, 10);
    if (errno || *end || y < x)
        return -1;
    *a = x;
    *b = y;
    return 0;
}

static int is_scalar(const cJSON *v)
{
    return cJSON_IsNumber(v) || cJSON_IsString(v) || cJSON_IsBool(v);
}

const char *ck_sweep_check(const cJSON *sweep, char *why, size_t len)
{
    if (!cJSON_IsObject(sweep)) {
        snprintf(why, len, "expected an object mapping keys to lists of values");
        return why;
    }
    int nkeys = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, sweep)
    {
        if (!strcmp(e->string, "seeds")) {
            uint64_t a, b;
            if (cJSON_IsString(e)) {
                if (parse_range(e->valuestring, &a, &b) || b - a >= CK_SWEEP_MAX_SEEDS) {
                    snprintf(why, len,
                             "seeds: expected a range \"A..B\" of at most %d seeds, got \"%.40s\"",
                             CK_SWEEP_MAX_SEEDS, e->valuestring);
                    return why;
                }
                continue;
            }
            int n = cJSON_GetArraySize(e);
            if (!cJSON_IsArray(e) || n < 1 || n > CK_SWEEP_MAX_SEEDS) {
                snprintf(why, len, "seeds: expected a range \"A..B\" or a list of 1 to %d seeds",
                         CK_SWEEP_MAX_SEEDS);
                return why;
            }
            const cJSON *s;
            cJSON_ArrayForEach(s, e) if (!cJSON_IsNumber(s) || s->valuedouble < 0 ||
                                         s->valuedouble > 9007199254740991.0 ||
                                         s->valuedouble != (double)(uint64_t)s->valuedouble)
            {
                snprintf(why, len, "seeds: expected whole numbers from 0 to 2^53 - 1");
                return why;
            }
            continue;
        }
        if (++nkeys > CK_SWEEP_MAX_KEYS) {
            snprintf(why, len, "at most %d keys can be swept at once", CK_SWEEP_MAX_KEYS);
            return why;
        }
        if (strlen(e->string) >= 128 || !strcmp(e->string, "name") ||
            !strcmp(e->string, "seed") || !strncmp(e->string, "sweep", 5) ||
            !strncmp(e->string, "expect", 6) || !strcmp(e->string, "events")) {
            snprintf(why, len,
                     "%.60s: cannot be swept (sweep configuration keys, or scenario paths such "
                     "as cluster.taskmanagers or events.0.at; seeds with \"seeds\")",
                     e->string);
            return why;
        }
        int n = cJSON_GetArraySize(e);
        if (!cJSON_IsArray(e) || n < 1 || n > CK_SWEEP_MAX_VALUES) {
            snprintf(why, len, "%.100s: expected a list of 1 to %d values", e->string,
                     CK_SWEEP_MAX_VALUES);
            return why;
        }
        const cJSON *v;
        cJSON_ArrayForEach(v, e) if (!is_scalar(v))
        {
            snprintf(why, len, "%.100s: expected numbers, strings or booleans in the list",
                     e->string);
            return why;
        }
    }
    if (!nkeys && !cJSON_GetObjectItemCaseSensitive(sweep, "seeds")) {
        snprintf(why, len, "expected at least one key to sweep, or \"seeds\"");
        return why;
    }
    return NULL;
}

/* ---- points ---------------------------------------------------------------------- */

/* Sets root's dotted path (numbers index arrays) to a copy of v, making
 * the objects on the way. Returns NULL, or what stood in the way. */
static const char *set_path(cJSON *root, const char *path, const cJSON *v, char *why, size_t len)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    cJSON *o = root;
    char *save = NULL;
    char *part = strtok_r(buf, ".", &save);
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        int index = strspn(part, "0123456789") == strlen(part);
        if (!next) { /* the leaf */
            cJSON *copy = cJSON_Duplicate(v, 1);
            if (!copy)
                return "out of memory";
            if (cJSON_IsArray(o) && index) {
                if (atoi(part) >= cJSON_GetArraySize(o) ||
                    !cJSON_ReplaceItemInArray(o, atoi(part), copy)) {
                    cJSON_Delete(copy);
                    snprintf(why, len, "%s: index %s is past the list's end", path, part);
                    return why;
                }
            } else if (cJSON_IsObject(o)) {
                cJSON_DeleteItemFromObjectCaseSensitive(o, part);
                cJSON_AddItemToObject(o, part, copy);
            } else {
                cJSON_Delete(copy);
                snprintf(why, len, "%s: %s is not inside an object", path, part);
                return why;
            }
            return NULL;
        }
        cJSON *child = cJSON_IsArray(o) && index ? cJSON_GetArrayItem(o, atoi(part))
                       : cJSON_IsObject(o)       ? cJSON_GetObjectItemCaseSensitive(o, part)
                                                 : NULL;
        if (!child && cJSON_IsObject(o)) {
            child = cJSON_AddObjectToObject(o, part);
        }
        if (!child || (!cJSON_IsObject(child) && !cJSON_IsArray(child))) {
            snprintf(why, len, "%s: %s is not an object or list in the scenario", path, part);
            return why;
        }
        o = child;
        part = next;
    }
    return NULL;
}

/* NULL when key, not a configuration key, is a path a sweep may set in
 * the scenario; else why not. */
static const char *check_path(const cJSON *scenario, const char *key, char *why, size_t len)
{
    if (strncmp(key, "cluster.", 8) && strncmp(key, "workload.", 9) && strncmp(key, "job.", 4) &&
        strncmp(key, "events.", 7)) {
        snprintf(why, len,
                 "%.100s: neither a configuration key (chandy config lists them) nor a path "
                 "under cluster, workload, job or events",
                 key);
        return why;
    }
    /* An event is changed, never made: its index must exist. */
    size_t digits = strspn(key + 7, "0123456789");
    if (!strncmp(key, "events.", 7) &&
        (digits == 0 || key[7 + digits] != '.' ||
         atoi(key + 7) >= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(scenario, "events")))) {
        snprintf(why, len, "%.100s: expected events.N.field, N an event of the scenario", key);
        return why;
    }
    return NULL;
}

const char *ck_sweep_apply(cJSON *scenario, const char *key, const cJSON *v, char *why,
                           size_t len)
{
    if (ck_config_find(key) < 0) {
        const char *bad = check_path(scenario, key, why, len);
        return bad ? bad : set_path(scenario, key, v, why, len);
    }
    cJSON *cfg = cJSON_GetObjectItemCaseSensitive(scenario, "config");
    if (!cfg)
        cfg = cJSON_AddObjectToObject(scenario, "config");
    cJSON *copy = cJSON_Duplicate(v, 1);
    if (!cfg || !copy) {
        cJSON_Delete(copy);
        return "out of memory";
    }
    /* A key with dots of its own: set as it is. */
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, key);
    cJSON_AddItemToObject(cfg, key, copy);
    return NULL;
}

static void value_text(const cJSON *v, char *buf, size_t len)
{
    if (cJSON_IsString(v))
        snprintf(buf, len, "%s", v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else
        snprintf(buf, len, "%g", v->valuedouble);
}

void ck_sweep_free(ck_sweep *sw)
{
    for (int i = 0; sw->points && i < sw->npoints; i++)
        cJSON_Delete(sw->points[i]);
    free(sw->points);
    free(sw->labels);
    memset(sw, 0, sizeof(*sw));
}

int ck_sweep_expand(ck_sweep *sw, const char *path, char *err, size_t errlen)
{
    memset(sw, 0, sizeof(*sw));
    char *text = ck_jin_read(path, 16u << 20, "a scenario", NULL, err, errlen);
    if (!text)
        return -1;
    ck_jin j = {.file = path};
    cJSON *root = ck_jin_parse(&j, text);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s", j.err);
        return -1;
    }
    int rc = -1;
    cJSON *sweep = cJSON_DetachItemFromObjectCaseSensitive(root, "sweep");
    char why[400];
    const char *bad;
    if (!sweep) {
        snprintf(err, errlen, "%s: no \"sweep\" to run (docs/SCENARIOS.md, Sweeps)", path);
        goto out;
    }
    if ((bad = ck_sweep_check(sweep, why, sizeof(why)))) {
        snprintf(err, errlen, "%s: sweep: %s", path, bad);
        goto out;
    }
    /* A platform file named relative to the scenario: absolute in the points. */
    cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    cJSON *plat = cJSON_GetObjectItemCaseSensitive(cl, "platform");
    if (cJSON_IsString(plat) && plat->valuestring[0] != '/') {
        char dir[PATH_MAX], abs[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        snprintf(abs, sizeof(abs), "%s/%s", slash ? (*slash = 0, dir) : ".", plat->valuestring);
        char real[PATH_MAX];
        if (realpath(abs, real))
            cJSON_ReplaceItemInObjectCaseSensitive(cl, "platform", cJSON_CreateString(real));
    }
    const cJSON *e, *keyv[CK_SWEEP_MAX_KEYS];
    sw->npoints = 1;
    cJSON_ArrayForEach(e, sweep)
    {
        if (!strcmp(e->string, "seeds")) {
            uint64_t a, b;
            if (cJSON_IsString(e) && !parse_range(e->valuestring, &a, &b))
                for (uint64_t s = a; s <= b; s++)
                    sw->seeds[sw->nseeds++] = s;
            else {
                const cJSON *s;
                cJSON_ArrayForEach(s, e) sw->seeds[sw->nseeds++] = (uint64_t)s->valuedouble;
            }
            continue;
        }
        int k = sw->nkeys++;
        snprintf(sw->keys[k], sizeof(sw->keys[k]), "%s", e->string);
        sw->is_config[k] = ck_config_find(e->string) >= 0;
        sw->nvalues[k] = cJSON_GetArraySize(e);
        keyv[k] = e;
        if ((long)sw->npoints * sw->nvalues[k] > CK_SWEEP_MAX_POINTS) {
            snprintf(err, errlen, "%s: sweep: more than %d points", path, CK_SWEEP_MAX_POINTS);
            goto out;
        }
        sw->npoints *= sw->nvalues[k];
        char notpath[200];
        if (!sw->is_config[k] && check_path(root, e->string, notpath, sizeof(notpath))) {
            snprintf(err, errlen, "%s: sweep.%s", path, notpath);
            goto out;
        }
    }
    if (!sw->nseeds) {
        const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
        sw->seeds[sw->nseeds++] = cJSON_IsNumber(seed) ? (uint64_t)seed->valuedouble : 1;
    }
    sw->points = calloc((size_t)sw->npoints, sizeof(*sw->points));
    sw->labels = calloc((size_t)sw->npoints, sizeof(*sw->labels));
    if (!sw->points || !sw->labels) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (int p = 0; p < sw->npoints; p++) {
        cJSON *pt = cJSON_Duplicate(root, 1);
        sw->points[p] = pt;
        if (!pt) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto out;
        }
        int rest = p;
        size_t at = 0;
        /* Mixed radix, the last key fastest. */
        int idx[CK_SWEEP_MAX_KEYS];
        for (int k = sw->nkeys - 1; k >= 0; k--) {
            idx[k] = rest % sw->nvalues[k];
            rest /= sw->nvalues[k];
        }
        for (int k = 0; k < sw->nkeys; k++) {
            const cJSON *v = cJSON_GetArrayItem(keyv[k], idx[k]);
            char vt[100];
            value_text(v, vt, sizeof(vt));
            at += (size_t)snprintf(sw->labels[p] + at, at < 256 ? 256 - at : 0, "%s%s=%s",
                                   k ? ", " : "", sw->keys[k], vt);
            if (at >= 256)
                at = 255;
            bad = ck_sweep_apply(pt, sw->keys[k], v, why, sizeof(why));
            if (bad) {
                snprintf(err, errlen, "%s: sweep point %d (%s): %s", path, p + 1, sw->labels[p],
                         bad);
                goto out;
            }
        }
        if (!sw->nkeys)
            snprintf(sw->labels[p], 256, "as written");
        /* Checked as a scenario of its own, before anything runs. */
        char *ptext = cJSON_Print(pt);
        static ck_scenario sc;
        char perr[1200] = "out of memory";
        int prc = ptext ? ck_scenario_parse(&sc, path, ptext, perr, sizeof(perr)) : -1;
        free(ptext);
        if (prc) {
            snprintf(err, errlen, "sweep point %d (%s): %s", p + 1, sw->labels[p], perr);
            goto out;
        }
        ck_scenario_free(&sc);
    }
    rc = 0;
out:
    cJSON_Delete(sweep);
    cJSON_Delete(root);
    if (rc)
        ck_sweep_free(sw);
    return rc;
}

/* ---- running a sweep ---------------------------------------------------------------- */

typedef struct run_state {
    int point;
    uint64_t seed;
    char id[48];   /* p<k>-s<seed> */
    int state;     /* 0 to run, 1 finished (run.json), 2 failed (none) */
    int exit_status;
    double wall_s;
} run_state;

typedef struct sweeper {
    const char *scenario, *out;
    ck_sweep sw;
    run_state *runs;
    size_t nruns, ntodo, done_now, finished, failed;
    size_t *todo; /* indices into runs of the ones this invocation runs */
    double spent; /* wall seconds of the runs finished now */
    int jobs, tty;
    struct timespec t0, last_line;
    char argbuf[4][PATH_MAX];
} sweeper;

static int has_run_json(const char *dir)
{
    ck_runfile rf;
    char err[200];
    if (ck_runfile_load(&rf, dir, err, sizeof(err)))
        return 0;
    ck_runfile_free(&rf);
    return 1;
}

/* sweep.json: the points and seeds (what a resumed sweep must match) and
 * the state of every run. */
static cJSON *definition(const sweeper *s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scenario", s->scenario);
    cJSON *keys = cJSON_AddArrayToObject(root, "keys");
    for (int k = 0; k < s->sw.nkeys; k++)
        cJSON_AddItemToArray(keys, cJSON_CreateString(s->sw.keys[k]));
    cJSON *pts = cJSON_AddArrayToObject(root, "points");
    for (int p = 0; p < s->sw.npoints; p++)
        cJSON_AddItemToArray(pts, cJSON_CreateString(s->sw.labels[p]));
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    for (int i = 0; i < s->sw.nseeds; i++)
        cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)s->sw.seeds[i]));
    return root;
}

static void save(const sweeper *s)
{
    cJSON *root = definition(s);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    static const char *const states[] = {"to run", "finished", "failed"};
    for (size_t i = 0; i < s->nruns; i++) {
        const run_state *r = &s->runs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddNumberToObject(o, "point", r->point + 1);
        cJSON_AddNumberToObject(o, "seed", (double)r->seed);
        cJSON_AddStringToObject(o, "state", states[r->state]);
        cJSON_AddItemToArray(runs, o);
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/sweep.json", s->out);
    if (ck_runjson_write(root, path))
        fprintf(stderr, "chandy sweep: %s: cannot write: %s\n", path, strerror(errno));
    cJSON_Delete(root);
}

static void progress(sweeper *s, int final)
{
    double el = ck_pool_since(&s->t0);
    size_t left = s->ntodo - s->done_now;
    double eta = s->done_now ? s->spent / (double)s->done_now * (double)left / s->jobs : -1;
    size_t total = s->nruns, done = s->finished + s->failed;
    const run_state *cur = s->done_now < s->ntodo ? &s->runs[s->todo[s->done_now]] : NULL;
    char eta_s[48] = "";
    if (eta >= 0 && left)
        snprintf(eta_s, sizeof(eta_s), ", about %.0f s left", eta);
    if (s->tty) {
        fprintf(stderr, "\r\033[Ksweep: %zu/%zu runs", done, total);
        if (cur && !final)
            fprintf(stderr, ", point %d/%d (%.60s), seed %llu", cur->point + 1, s->sw.npoints,
                    s->sw.labels[cur->point], (unsigned long long)cur->seed);
        fprintf(stderr, ", %.0f s%s%s", el, eta_s, final ? "\n" : "");
    }
}

static int prepare(void *ctx, size_t i, const char **argv, char *log, size_t loglen)
{
    sweeper *s = ctx;
    run_state *r = &s->runs[s->todo[i]];
    static char point[PATH_MAX], seed[32], out[PATH_MAX];
    snprintf(point, sizeof(point), "%s/points/p%d.json", s->out, r->point + 1);
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)r->seed);
    snprintf(out, sizeof(out), "%s/runs/%s", s->out, r->id);
    snprintf(log, loglen, "%s/runs/%s.log", s->out, r->id);
    const char *args[] = {"run", point, "--seed", seed, "--out", out, "-q", NULL};
    memcpy(argv, args, sizeof(args));
    return 0;
}

static void done(void *ctx, size_t i, int status, double wall_s, int timed_out)
{
    sweeper *s = ctx;
    run_state *r = &s->runs[s->todo[i]];
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/runs/%s", s->out, r->id);
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->wall_s = wall_s;
    r->state = has_run_json(dir) ? 1 : 2;
    s->done_now++;
    s->spent += wall_s;
    if (r->state == 1)
        s->finished++;
    else
        s->failed++;
    const char *what = r->state == 2 ? (timed_out ? "killed after --timeout, no run.json"
                                                  : "no run.json")
                       : r->exit_status ? "finished (chandy run exited with an error: see its log)"
                                        : "finished";
    if (s->tty) {
        if (r->state == 2 || r->exit_status)
            fprintf(stderr, "\r\033[Kpoint %d (%s), seed %llu: %s (%s.log)\n", r->point + 1,
                    s->sw.labels[r->point], (unsigned long long)r->seed, what, dir);
        progress(s, 0);
    } else {
        fprintf(stderr, "sweep: %zu/%zu: point %d (%s), seed %llu: %s in %.1f s\n",
                s->finished + s->failed, s->nruns, r->point + 1, s->sw.labels[r->point],
                (unsigned long long)r->seed, what, wall_s);
    }
    save(s);
}

static void tick(void *ctx)
{
    sweeper *s = ctx;
    if (s->tty && ck_pool_since(&s->last_line) > 0.5) {
        progress(s, 0);
        clock_gettime(CLOCK_MONOTONIC, &s->last_line);
    }
}

/* The output directory: new, empty, or this sweep's (then resumed). */
static int prepare_out(sweeper *s)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/sweep.json", s->out);
    char *text = access(path, F_OK) == 0 ? ck_jin_read(path, 256u << 20, "a sweep.json", NULL,
                                                        NULL, 0)
                                         : NULL;
    if (text || access(path, F_OK) == 0) { /* one there, read or not: compare */
        cJSON *old = text ? cJSON_Parse(text) : NULL, *now = definition(s);
        free(text);
        cJSON *po = cJSON_GetObjectItem(old, "points"), *pn = cJSON_GetObjectItem(now, "points");
        cJSON *so = cJSON_GetObjectItem(old, "seeds"), *sn = cJSON_GetObjectItem(now, "seeds");
        int same = po && so && cJSON_Compare(po, pn, 1) && cJSON_Compare(so, sn, 1);
        cJSON_Delete(old);
        cJSON_Delete(now);
        if (!same) {
            fprintf(stderr,
                    "chandy sweep: %s: holds another sweep (other points or seeds); give "
                    "another --out\n",
                    s->out);
            return -1;
        }
        return 0;
    }
    struct stat st;
    if (stat(s->out, &st) == 0) {
        /* A sweep's points or runs without its sweep.json: someone else's. */
        int empty = 1;
        char probe[PATH_MAX + 16];
        snprintf(probe, sizeof(probe), "%s/points", s->out);
        if (access(probe, F_OK) == 0)
            empty = 0;
        snprintf(probe, sizeof(probe), "%s/runs", s->out);
        if (access(probe, F_OK) == 0)
            empty = 0;
        if (!empty) {
            fprintf(stderr, "chandy sweep: %s: not a sweep's directory (no sweep.json)\n",
                    s->out);
            return -1;
        }
    }
    return 0;
}

static void usage_sweep(void)
{
    fprintf(stderr, "usage: chandy sweep SCENARIO.json --out DIR [--jobs N] [--timeout S]\n");
}

int ck_sweep_main(int argc, char **argv)
{
    sweeper s = {.jobs = 1};
    double timeout_s = 3600;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) && i + 1 < argc)
            s.out = argv[++i];
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
            s.jobs = atoi(argv[++i]);
            if (s.jobs < 1 || s.jobs > 256) {
                fprintf(stderr, "chandy sweep: --jobs: expected 1 to 256, got %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            timeout_s = atof(argv[++i]);
            if (!(timeout_s > 0)) {
                fprintf(stderr, "chandy sweep: --timeout: expected seconds > 0, got %s\n",
                        argv[i]);
                return 2;
            }
        } else if (argv[i][0] != '-' && !s.scenario)
            s.scenario = argv[i];
        else {
            fprintf(stderr, "chandy sweep: unexpected argument %s\n", argv[i]);
            usage_sweep();
            return 2;
        }
    }
    if (!s.scenario || !s.out) {
        usage_sweep();
        return 2;
    }
    char err[1600];
    if (ck_sweep_expand(&s.sw, s.scenario, err, sizeof(err))) {
        fprintf(stderr, "chandy sweep: %s\n", err);
        return 2;
    }
    int status = 2;
    if (prepare_out(&s))
        goto out;
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/points", s.out);
    if (ck_storefs_mkdirs(dir)) {
        fprintf(stderr, "chandy sweep: %s: cannot create: %s\n", dir, strerror(errno));
        goto out;
    }
    snprintf(dir, sizeof(dir), "%s/runs", s.out);
    if (ck_storefs_mkdirs(dir)) {
        fprintf(stderr, "chandy sweep: %s: cannot create: %s\n", dir, strerror(errno));
        goto out;
    }
    for (int p = 0; p < s.sw.npoints; p++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/points/p%d.json", s.out, p + 1);
        cJSON_DeleteItemFromObjectCaseSensitive(s.sw.points[p], "description");
        char desc[400];
        snprintf(desc, sizeof(desc), "point %d of the sweep of %s: %s", p + 1, s.scenario,
                 s.sw.labels[p]);
        cJSON_AddStringToObject(s.sw.points[p], "description", desc);
        if (ck_runjson_write(s.sw.points[p], path)) {
            fprintf(stderr, "chandy sweep: %s: cannot write: %s\n", path, strerror(errno));
            goto out;
        }
    }
    s.nruns = (size_t)s.sw.npoints * (size_t)s.sw.nseeds;
    s.runs = calloc(s.nruns, sizeof(*s.runs));
    s.todo = calloc(s.nruns, sizeof(*s.todo));
    if (!s.runs || !s.todo) {
        fprintf(stderr, "chandy sweep: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < s.nruns; i++) {
        run_state *r = &s.runs[i];
        r->point = (int)(i / (size_t)s.sw.nseeds);
        r->seed = s.sw.seeds[i % (size_t)s.sw.nseeds];
        snprintf(r->id, sizeof(r->id), "p%d-s%llu", r->point + 1, (unsigned long long)r->seed);
        char rd[PATH_MAX];
        snprintf(rd, sizeof(rd), "%s/runs/%s", s.out, r->id);
        if (has_run_json(rd)) {
            r->state = 1;
            s.finished++;
        } else {
            s.todo[s.ntodo++] = i;
        }
    }
    s.tty = isatty(2);
    clock_gettime(CLOCK_MONOTONIC, &s.t0);
    s.last_line = s.t0;
    fprintf(stderr, "sweep %s: %d point%s x %d seed%s = %zu runs, %zu to run, %d at a time\n",
            s.scenario, s.sw.npoints, s.sw.npoints == 1 ? "" : "s", s.sw.nseeds,
            s.sw.nseeds == 1 ? "" : "s", s.nruns, s.ntodo, s.jobs);
    save(&s);
    ck_pool_ops ops = {prepare, done, tick};
    if (ck_pool_run(s.ntodo, s.jobs, timeout_s, &ops, &s))
        fprintf(stderr, "chandy sweep: cannot start a run: %s\n", strerror(errno));
    if (s.tty)
        progress(&s, 1);
    save(&s);

    /* The report: one entry per point, its seeds' runs together. */
    ck_report_entry *ents = calloc((size_t)s.sw.npoints, sizeof(*ents));
    char (*paths)[PATH_MAX] = calloc(s.nruns, sizeof(*paths));
    const char **pp = calloc(s.nruns, sizeof(*pp));
    int nent = 0;
    if (ents && paths && pp) {
        size_t used = 0;
        for (int p = 0; p < s.sw.npoints; p++) {
            ck_report_entry *e = &ents[nent];
            e->label = s.sw.labels[p];
            e->runs = pp + used;
            for (size_t i = 0; i < s.nruns; i++)
                if (s.runs[i].point == p && s.runs[i].state == 1) {
                    snprintf(paths[used], PATH_MAX, "%s/runs/%s", s.out, s.runs[i].id);
                    pp[used] = paths[used];
                    used++;
                    e->nruns++;
                }
            if (e->nruns)
                nent++;
        }
        char rdir[PATH_MAX + 16];
        snprintf(rdir, sizeof(rdir), "%s/report", s.out);
        char title[300];
        snprintf(title, sizeof(title), "sweep of %s", s.scenario);
        if (!nent)
            fprintf(stderr, "chandy sweep: no run finished: no report\n");
        else if (ck_report_make_entries(ents, nent, rdir, title, err, sizeof(err)))
            fprintf(stderr, "chandy sweep: report: %s\n", err);
        else
            printf("wrote %s/index.html, %s/summary.md and CSV files (%d point%s, %zu run%s)\n",
                   rdir, rdir, nent, nent == 1 ? "" : "s", s.finished,
                   s.finished == 1 ? "" : "s");
    }
    free(ents);
    free(paths);
    free(pp);
    status = s.failed ? 1 : 0;
out:
    free(s.runs);
    free(s.todo);
    ck_sweep_free(&s.sw);
    return status;
}
