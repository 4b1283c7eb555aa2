/*
 * swarm.c - `chandy swarm` (swarm.h): seeds run as child processes, N at a
 * time, each judged by the verdict its run.json carries.
 *
 * Invariants:
 *   - at most `jobs` children run at once; every child started is waited
 *     for, and its seed gets exactly one result;
 *   - a seed passes only when its child exited 0 and its run.json says
 *     "verdict": "ok"; a signal, another exit status (CK_EXIT_INVARIANT: an
 *     invariant broke, the line it printed is the seed's why), a missing
 *     run.json or a child killed after --timeout seconds of wall-clock time
 *     is a violation;
 *   - only directories this swarm made are deleted: DIR/runs/<seed> of a
 *     passing seed, and its log (unless --keep: then every seed keeps its
 *     run directory and gets its DIR/seeds/<seed>.json);
 *   - the output directory is empty, or holds a swarm.json already;
 *   - a merged swarm.json's counts come from the results it holds: runs is
 *     the number of distinct seeds with a result, seeds_missing the seeds
 *     of the declared ranges without one, and complete means none is.
 */
#include "swarm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "invariant.h"
#include "jsonin.h"
#include "nemesis.h"
#include "pool.h"
#include "runjson.h"
#include "scenario.h"
#include "storefs.h"

#define MAX_SEED UINT64_C(9007199254740991)

typedef struct result {
    uint64_t seed;
    int ok;
    int exit_status; /* -1: killed by a signal */
    int signal;
    double wall_s, sim_s;
    char why[440];
} result;

typedef struct swarm {
    const char *scenario, *argv0, *out;
    ck_nemesis_mode mode;
    uint64_t from, to;
    int shard_i, shard_n; /* shard_n 0: none */
    int jobs, keep, tty;
    int invariants; /* each seed's run checks invariants (--no-check-invariants: not) */
    double timeout_s; /* wall-clock seconds a seed may take */
    ck_scenario sc;
    char *text; /* the scenario file */
    uint64_t fingerprint;
    result *res;
    size_t nres, done, violations;
    struct timespec t0, last_save;
} swarm;

/* FNV-1a over the scenario file: shards of one swarm must share it. */
static uint64_t fnv64(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
    return h;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The output directory: made, or one that is empty or holds a swarm.json. */
static int prepare_out(const char *out)
{
    if (ck_storefs_mkdirs(out)) {
        fprintf(stderr, "chandy swarm: %s: cannot create: %s\n", out, strerror(errno));
        return 2;
    }
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/swarm.json", out);
    if (access(p, F_OK) == 0)
        return 0;
    DIR *d = opendir(out);
    if (!d) {
        fprintf(stderr, "chandy swarm: %s: cannot open: %s\n", out, strerror(errno));
        return 2;
    }
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = 0;
    closedir(d);
    if (!empty) {
        fprintf(stderr,
                "chandy swarm: %s: not empty and not a swarm directory (no swarm.json): "
                "give an empty or new directory\n",
                out);
        return 2;
    }
    return 0;
}

/* A word for a shell command line: quoted when it needs to be. */
static void shell_word(char *buf, size_t len, const char *w)
{
    int plain = *w != 0;
    for (const char *c = w; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,", *c))
            plain = 0;
    if (plain) {
        snprintf(buf, len, "%s", w);
        return;
    }
    size_t o = 0;
    if (o + 1 < len)
        buf[o++] = '\'';
    for (const char *c = w; *c && o + 5 < len; c++) {
        if (*c == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else {
            buf[o++] = *c;
        }
    }
    if (o + 1 < len)
        buf[o++] = '\'';
    buf[o < len ? o : len - 1] = 0;
}

static void replay_cmd(const swarm *s, uint64_t seed, char *buf, size_t len)
{
    char a[PATH_MAX + 8], sc[PATH_MAX + 8], out[PATH_MAX + 8], dir[PATH_MAX];
    shell_word(a, sizeof(a), s->argv0);
    shell_word(sc, sizeof(sc), s->scenario);
    snprintf(dir, sizeof(dir), "%s/runs/%llu", s->out, (unsigned long long)seed);
    shell_word(out, sizeof(out), dir);
    snprintf(buf, len, "%s run %s --seed %llu --swarm %s%s --out %s", a, sc,
             (unsigned long long)seed, ck_nemesis_mode_name(s->mode),
             s->invariants ? " --check-invariants" : "", out);
}

/* ---- swarm.json ------------------------------------------------------------------ */

static cJSON *schedule_json(swarm *s, uint64_t seed)
{
    ck_nemesis_draw(&s->sc, seed, s->mode);
    cJSON *a = cJSON_CreateArray();
    int ntm = ck_scenario_taskmanagers(&s->sc);
    for (int i = 0; a && i < s->sc.nfaults; i++) {
        char line[300];
        ck_nemesis_describe(&s->sc.faults[i], ntm, line, sizeof(line));
        cJSON_AddItemToArray(a, cJSON_CreateString(line));
    }
    return a;
}

static cJSON *result_json(swarm *s, const result *r)
{
    cJSON *o = cJSON_CreateObject();
    char cmd[3 * PATH_MAX];
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddStringToObject(o, "verdict", r->ok ? "ok" : "violation");
    cJSON_AddStringToObject(o, "why", r->why);
    if (r->exit_status >= 0)
        cJSON_AddNumberToObject(o, "exit_status", r->exit_status);
    else
        cJSON_AddNullToObject(o, "exit_status");
    if (r->signal)
        cJSON_AddNumberToObject(o, "signal", r->signal);
    else
        cJSON_AddNullToObject(o, "signal");
    if (r->sim_s >= 0)
        cJSON_AddNumberToObject(o, "sim_time_s", r->sim_s);
    else
        cJSON_AddNullToObject(o, "sim_time_s");
    cJSON_AddNumberToObject(o, "wall_s", (double)(int64_t)(r->wall_s * 1000) / 1000);
    cJSON_AddItemToObject(o, "schedule", schedule_json(s, r->seed));
    replay_cmd(s, r->seed, cmd, sizeof(cmd));
    cJSON_AddStringToObject(o, "replay", cmd);
    return o;
}

static double per_minute(size_t n, double wall)
{
    return wall > 0 ? (double)(int64_t)((double)n / wall * 60.0 * 10) / 10 : 0;
}

static int save(swarm *s, int complete)
{
    cJSON *o = cJSON_CreateObject();
    char fp[24];
    snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)s->fingerprint);
    cJSON_AddStringToObject(o, "scenario", s->scenario);
    cJSON_AddStringToObject(o, "scenario_name", s->sc.name);
    cJSON_AddStringToObject(o, "scenario_fingerprint", fp);
    cJSON_AddStringToObject(o, "mode", ck_nemesis_mode_name(s->mode));
    cJSON *seeds = cJSON_AddObjectToObject(o, "seeds");
    cJSON_AddNumberToObject(seeds, "from", (double)s->from);
    cJSON_AddNumberToObject(seeds, "to", (double)s->to);
    if (s->shard_n) {
        cJSON *sh = cJSON_AddObjectToObject(o, "shard");
        cJSON_AddNumberToObject(sh, "index", s->shard_i);
        cJSON_AddNumberToObject(sh, "count", s->shard_n);
    } else {
        cJSON_AddNullToObject(o, "shard");
    }
    cJSON_AddNumberToObject(o, "jobs", s->jobs);
    cJSON_AddBoolToObject(o, "complete", complete);
    cJSON_AddNumberToObject(o, "seeds_declared", (double)s->nres);
    cJSON_AddNumberToObject(o, "seeds_missing", (double)(s->nres - s->done));
    cJSON_AddNumberToObject(o, "runs", (double)s->done);
    cJSON_AddNumberToObject(o, "passed", (double)(s->done - s->violations));
    cJSON_AddNumberToObject(o, "violations", (double)s->violations);
    double wall = ck_pool_since(&s->t0);
    cJSON_AddNumberToObject(o, "wall_s", (double)(int64_t)(wall * 1000) / 1000);
    cJSON_AddNumberToObject(o, "seeds_per_minute", per_minute(s->done, wall));
    cJSON *bad = cJSON_AddArrayToObject(o, "violating_seeds");
    cJSON *all = cJSON_AddArrayToObject(o, "results");
    for (size_t i = 0; i < s->nres; i++) {
        const result *r = &s->res[i];
        if (!r->why[0])
            continue; /* not run (yet) */
        if (!r->ok)
            cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)r->seed));
        cJSON_AddItemToArray(all, result_json(s, r));
    }
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/swarm.json", s->out);
    int rc = ck_runjson_write(o, path);
    cJSON_Delete(o);
    if (rc)
        fprintf(stderr, "chandy swarm: %s: cannot write\n", path);
    clock_gettime(CLOCK_MONOTONIC, &s->last_save);
    return rc;
}

/* DIR/seeds/<seed>.json: the scenario with the seed's schedule as its
 * events and without its expect block (the swarm verdict judged it). */
static void write_seed_scenario(swarm *s, uint64_t seed)
{
    cJSON *root = cJSON_Parse(s->text);
    if (!root)
        return;
    ck_nemesis_draw(&s->sc, seed, s->mode);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "events");
    cJSON_DeleteItemFromObjectCaseSensitive(root, "expect");
    cJSON_DeleteItemFromObjectCaseSensitive(root, "name");
    cJSON_DeleteItemFromObjectCaseSensitive(root, "seed");
    cJSON_AddStringToObject(root, "name", s->sc.name);
    cJSON_AddNumberToObject(root, "seed", (double)seed);
    cJSON *ev = ck_nemesis_events_json(&s->sc);
    if (ev)
        cJSON_AddItemToObject(root, "events", ev);
    /* A platform file named relative to the scenario: make it absolute. */
    cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "cluster");
    char abs[PATH_MAX];
    if (s->sc.cluster.platform[0] && cJSON_GetObjectItemCaseSensitive(cl, "platform") &&
        realpath(s->sc.cluster.platform, abs)) {
        cJSON_DeleteItemFromObjectCaseSensitive(cl, "platform");
        cJSON_AddStringToObject(cl, "platform", abs);
    }
    char dir[PATH_MAX], path[PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "%s/seeds", s->out);
    snprintf(path, sizeof(path), "%s/%llu.json", dir, (unsigned long long)seed);
    if (ck_storefs_mkdirs(dir) || ck_runjson_write(root, path))
        fprintf(stderr, "chandy swarm: %s: cannot write\n", path);
    cJSON_Delete(root);
}

/* ---- running seeds ------------------------------------------------------------------ */

/* Seed i's `chandy run` (pool.h): into DIR/runs/<seed>, its output in
 * DIR/runs/<seed>.log. */
static int prepare(void *ctx, size_t i, const char **argv, char *log, size_t loglen)
{
    swarm *s = ctx;
    static char seedstr[32], out[PATH_MAX];
    snprintf(seedstr, sizeof(seedstr), "%llu", (unsigned long long)s->res[i].seed);
    snprintf(out, sizeof(out), "%s/runs/%s", s->out, seedstr);
    snprintf(log, loglen, "%s.log", out);
    rm_tree(out); /* an earlier swarm's run of this seed */
    const char *args[] = {"run", s->scenario, "--seed", seedstr, "--swarm",
                          ck_nemesis_mode_name(s->mode), "--out", out, "-q",
                          s->invariants ? "--check-invariants" : "--no-check-invariants", NULL};
    memcpy(argv, args, sizeof(args));
    return 0;
}

/* The line a run that broke an invariant printed (drive.h), from its log,
 * without its "chandy: " and newline; "" when there is none. */
static void invariant_line(const char *log, char *buf, size_t len)
{
    static const char tag[] = "chandy: invariant violated: ";
    char line[1024];
    FILE *f = fopen(log, "r");
    buf[0] = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, tag, sizeof(tag) - 1)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(buf, len, "%s", line + 8);
        }
    if (f)
        fclose(f);
}

/* Seed i's child ended (pool.h): its verdict. */
static void finish(void *ctx, size_t i, int st, double wall_s, int timed_out)
{
    swarm *s = ctx;
    result *r = &s->res[i];
    r->wall_s = wall_s;
    r->sim_s = -1;
    r->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    char dir[PATH_MAX], path[PATH_MAX + 16], log[PATH_MAX + 8];
    snprintf(dir, sizeof(dir), "%s/runs/%llu", s->out, (unsigned long long)r->seed);
    snprintf(path, sizeof(path), "%s/run.json", dir);
    snprintf(log, sizeof(log), "%s.log", dir);
    char *text = ck_jin_read(path, 1u << 30, "a run.json", NULL, NULL, 0);
    cJSON *run = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(run, "swarm");
    const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(sw, "verdict");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(sw, "why");
    const cJSON *simt = cJSON_GetObjectItemCaseSensitive(run, "sim_time_s");
    if (cJSON_IsNumber(simt))
        r->sim_s = simt->valuedouble;
    int verdict_ok = cJSON_IsString(verdict) && !strcmp(verdict->valuestring, "ok");
    r->ok = verdict_ok && r->exit_status == 0;
    if (timed_out)
        snprintf(r->why, sizeof(r->why),
                 "still running after %.0f s of wall-clock time (--timeout): killed", s->timeout_s);
    else if (r->signal)
        snprintf(r->why, sizeof(r->why), "killed by signal %d (%s)%s", r->signal,
                 strsignal(r->signal), run ? "" : ", no run.json");
    else if (!run && r->exit_status == CK_EXIT_INVARIANT) {
        char line[sizeof(r->why) - 40];
        invariant_line(log, line, sizeof(line));
        snprintf(r->why, sizeof(r->why), "%s (see runs/%llu.log)",
                 line[0] ? line : "invariant violated", (unsigned long long)r->seed);
    } else if (!run)
        snprintf(r->why, sizeof(r->why), "exit status %d and no run.json (see runs/%llu.log)",
                 r->exit_status, (unsigned long long)r->seed);
    else if (cJSON_IsString(why) && (!r->ok || verdict_ok))
        snprintf(r->why, sizeof(r->why), "%s%s", why->valuestring,
                 verdict_ok && !r->ok ? " (but chandy run exited with an error)" : "");
    else
        snprintf(r->why, sizeof(r->why), "run.json has no swarm verdict (exit status %d)",
                 r->exit_status);
    cJSON_Delete(run);
    s->done++;
    if (!r->ok)
        s->violations++;
    if (!r->ok || s->keep)
        write_seed_scenario(s, r->seed);
    else {
        rm_tree(dir);
        unlink(log);
    }
    /* Progress: one updating line on a terminal, plain lines otherwise. */
    double wall = ck_pool_since(&s->t0);
    if (s->tty) {
        if (!r->ok)
            fprintf(stderr, "\r\033[Kseed %llu: violation: %s\n", (unsigned long long)r->seed,
                    r->why);
        fprintf(stderr, "\r\033[Kswarm %s: %zu/%zu seeds, %zu violation%s, %.1f seeds/min",
                s->sc.name, s->done, s->nres, s->violations, s->violations == 1 ? "" : "s",
                per_minute(s->done, wall));
    } else {
        fprintf(stderr, "seed %llu: %s: %s (%zu/%zu)\n", (unsigned long long)r->seed,
                r->ok ? "ok" : "violation", r->why, s->done, s->nres);
    }
    if (!r->ok) {
        char cmd[3 * PATH_MAX];
        replay_cmd(s, r->seed, cmd, sizeof(cmd));
        fprintf(stderr, "%s  replay: %s\n", s->tty ? "\r\033[K" : "", cmd);
    }
}

static void tick(void *ctx)
{
    swarm *s = ctx;
    if (ck_pool_since(&s->last_save) > 10)
        save(s, 0);
}

/* Runs every seed, `jobs` at a time; a seed that runs too long (a
 * livelock in zero simulated time never reaches the simulated-time limit)
 * is killed. Returns 0, or 2 when a child could not be started. */
static int run_seeds(swarm *s)
{
    ck_pool_ops ops = {prepare, finish, tick};
    int rc = ck_pool_run(s->nres, s->jobs, s->timeout_s, &ops, s);
    if (rc)
        fprintf(stderr, "chandy swarm: cannot start a seed: %s\n", strerror(errno));
    if (s->tty)
        fprintf(stderr, "\n");
    return rc ? 2 : 0;
}

/* ---- options ---------------------------------------------------------------------- */

static int parse_u64(const char *p, const char **end, uint64_t *v)
{
    if (!p || *p < '0' || *p > '9')
        return -1;
    char *e;
    errno = 0;
    unsigned long long x = strtoull(p, &e, 10);
    if (errno || x > MAX_SEED)
        return -1;
    *v = x;
    *end = e;
    return 0;
}

static int parse_seeds(const char *v, uint64_t *a, uint64_t *b)
{
    const char *e;
    if (parse_u64(v, &e, a))
        return -1;
    if (!*e) {
        *b = *a;
        return 0;
    }
    if (strncmp(e, "..", 2) || parse_u64(e + 2, &e, b) || *e || *b < *a)
        return -1;
    return 0;
}

static int parse_shard(const char *v, int *i, int *n)
{
    const char *e;
    uint64_t a, b;
    if (parse_u64(v, &e, &a) || *e != '/' || parse_u64(e + 1, &e, &b) || *e || b == 0 ||
        b > 1000000 || a >= b)
        return -1;
    *i = (int)a;
    *n = (int)b;
    return 0;
}

static int merge(char **dirs, int ndirs, const char *out);

int ck_swarm_main(int argc, char **argv, const char *argv0)
{
    static swarm s;
    memset(&s, 0, sizeof(s));
    s.argv0 = argv0;
    s.mode = CK_NEMESIS_SAFETY;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    s.jobs = ncpu > 0 ? (int)ncpu : 1;
    s.invariants = 1;
    s.timeout_s = 600;
    int have_seeds = 0, merging = 0, ndirs = 0;
    char **dirs = calloc((size_t)argc + 1, sizeof(char *));
    if (!dirs)
        return 2;
    int status = 2;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seeds")) {
            if (parse_seeds(val, &s.from, &s.to)) {
                fprintf(stderr, "chandy swarm: --seeds: expected A..B (0 <= A <= B <= "
                                "9007199254740991) or N\n");
                goto out;
            }
            have_seeds = 1;
            i++;
        } else if (!strcmp(a, "--mode")) {
            if (ck_nemesis_mode_parse(val, &s.mode)) {
                fprintf(stderr, "chandy swarm: --mode: expected safety or liveness\n");
                goto out;
            }
            i++;
        } else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            const char *e;
            uint64_t j;
            if (parse_u64(val, &e, &j) || *e || j < 1 || j > 4096) {
                fprintf(stderr, "chandy swarm: %s: expected 1 to 4096\n", a);
                goto out;
            }
            s.jobs = (int)j;
            i++;
        } else if (!strcmp(a, "--shard")) {
            if (parse_shard(val, &s.shard_i, &s.shard_n)) {
                fprintf(stderr, "chandy swarm: --shard: expected I/N with 0 <= I < N\n");
                goto out;
            }
            i++;
        } else if (!strcmp(a, "--out")) {
            if (!val || !*val) {
                fprintf(stderr, "chandy swarm: --out: expected a directory\n");
                goto out;
            }
            s.out = val;
            i++;
        } else if (!strcmp(a, "--timeout")) {
            const char *e;
            uint64_t t;
            if (parse_u64(val, &e, &t) || *e || t < 1 || t > 86400 * 7) {
                fprintf(stderr, "chandy swarm: --timeout: expected seconds, 1 to 604800\n");
                goto out;
            }
            s.timeout_s = (double)t;
            i++;
        } else if (!strcmp(a, "--keep")) {
            s.keep = 1;
        } else if (!strcmp(a, "--no-check-invariants")) {
            s.invariants = 0;
        } else if (!strcmp(a, "--merge")) {
            merging = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "chandy swarm: unknown option %s\n", a);
            goto out;
        } else if (merging) {
            dirs[ndirs++] = argv[i];
        } else if (!s.scenario) {
            s.scenario = a;
        } else {
            fprintf(stderr, "chandy swarm: one scenario at a time (got %s and %s)\n", s.scenario,
                    a);
            goto out;
        }
    }
    if (!s.out) {
        fprintf(stderr, "chandy swarm: --out DIR is required\n");
        goto out;
    }
    if (merging) {
        if (s.scenario || ndirs == 0 || have_seeds || s.shard_n) {
            fprintf(stderr, "chandy swarm: --merge takes swarm directories and --out only\n");
            goto out;
        }
        status = merge(dirs, ndirs, s.out);
        goto out;
    }
    if (!s.scenario || !have_seeds) {
        fprintf(stderr, "usage: chandy swarm SCENARIO.json --seeds A..B [--mode safety|liveness] "
                        "[--jobs N] [--shard I/N] [--timeout S] [--keep]\n"
                        "                    [--no-check-invariants] --out DIR\n"
                        "       chandy swarm --merge DIR... --out DIR\n");
        goto out;
    }
    char err[1200];
    if (ck_scenario_load(&s.sc, s.scenario, err, sizeof(err))) {
        fprintf(stderr, "chandy: %s\n", err);
        goto out;
    }
    s.text = ck_jin_read(s.scenario, 16u << 20, "a scenario", NULL, NULL, 0);
    if (!s.text) {
        fprintf(stderr, "chandy swarm: %s: cannot read\n", s.scenario);
        goto out_sc;
    }
    s.fingerprint = fnv64(s.text);
    if ((status = prepare_out(s.out)) != 0)
        goto out_sc;
    char runs[PATH_MAX];
    snprintf(runs, sizeof(runs), "%s/runs", s.out);
    if (ck_storefs_mkdirs(runs)) {
        fprintf(stderr, "chandy swarm: %s: cannot create: %s\n", runs, strerror(errno));
        status = 2;
        goto out_sc;
    }
    /* The seeds of this shard. */
    uint64_t span = s.to - s.from + 1;
    if (span > 100000000) {
        fprintf(stderr, "chandy swarm: --seeds: at most 100000000 seeds at once\n");
        status = 2;
        goto out_sc;
    }
    s.res = calloc(s.shard_n ? span / (uint64_t)s.shard_n + 1 : span, sizeof(result));
    if (!s.res) {
        fprintf(stderr, "chandy swarm: out of memory\n");
        status = 2;
        goto out_sc;
    }
    for (uint64_t seed = s.from; seed <= s.to; seed++)
        if (!s.shard_n || seed % (uint64_t)s.shard_n == (uint64_t)s.shard_i)
            s.res[s.nres++].seed = seed;
    s.tty = isatty(STDERR_FILENO);
    clock_gettime(CLOCK_MONOTONIC, &s.t0);
    s.last_save = s.t0;
    int rc = run_seeds(&s);
    int wrc = save(&s, rc == 0);
    double wall = ck_pool_since(&s.t0);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/swarm.json", s.out);
    fprintf(stderr, "swarm %s (%s): %zu seeds in %.1f s, %zu violation%s, %.1f seeds/min; %s\n",
            s.sc.name, ck_nemesis_mode_name(s.mode), s.done, wall, s.violations,
            s.violations == 1 ? "" : "s", per_minute(s.done, wall), path);
    status = rc ? rc : wrc ? 1 : s.violations ? 1 : 0;
    free(s.res);
out_sc:
    free(s.text);
    ck_scenario_free(&s.sc);
out:
    free(dirs);
    return status;
}

/* ---- merging ------------------------------------------------------------------------ */

/*
 * A merge believes no total a file wrote: what it counts comes from the
 * results themselves. Each swarm.json declares the range of seeds its
 * swarm was given (`seeds`, or a merged file's `declared` ranges), and a
 * shard the seeds of it it ran (`shard`: seed % count == index). Every
 * result must be of a seed its file ran; the merged swarm is complete when
 * every seed of every declared range has a result (so a shard left out
 * makes it incomplete), and it says how many have none and the first of
 * them.
 */

/* Seeds from..to (of a shard: those with seed % count == index). */
typedef struct decl {
    uint64_t from, to, index, count;
} decl;

/* A result of an input file: its seed, and the order it was given in. */
typedef struct mres {
    uint64_t seed;
    size_t order;
    const cJSON *r;
} mres;

typedef struct mergein {
    decl *d;
    size_t nd, dcap;
    mres *r;
    size_t nr, rcap;
} mergein;

#define MAX_SHARDS 1000000
#define FIRST_MISSING 10

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k, double def)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : def;
}

static int decl_has(const decl *d, uint64_t seed)
{
    return seed >= d->from && seed <= d->to && seed % d->count == d->index;
}

static void decl_describe(const decl *d, char *buf, size_t len)
{
    if (d->count == 1)
        snprintf(buf, len, "seeds %llu..%llu", (unsigned long long)d->from,
                 (unsigned long long)d->to);
    else
        snprintf(buf, len, "seeds %llu..%llu, shard %llu/%llu", (unsigned long long)d->from,
                 (unsigned long long)d->to, (unsigned long long)d->index,
                 (unsigned long long)d->count);
}

/* Fails unless v is an object (at the path, plus key when not NULL). */
static int need_object(ck_jin *j, const cJSON *v, const char *key)
{
    if (j->failed || cJSON_IsObject(v))
        return j->failed ? CK_EINVAL : CK_OK;
    size_t saved = key ? ck_jin_push_key(j, key) : strlen(j->path);
    char got[96];
    ck_jin_describe(v, got, sizeof(got));
    ck_jin_fail(j, "expected an object, got %s", got);
    ck_jin_pop(j, saved);
    return CK_EINVAL;
}

/* Appends one declared set: seeds `from`..`to` of obj[okey] (obj itself
 * when okey is NULL), of shard `index`/`count` of sh[skey] (sh itself when
 * skey is NULL; no shard when that is absent or null). */
static int read_decl(ck_jin *j, const cJSON *obj, const char *okey, const cJSON *sh,
                     const char *skey, mergein *in)
{
    int64_t from = 0, to = 0, index = 0, count = 1;
    const cJSON *range = okey ? cJSON_GetObjectItemCaseSensitive(obj, okey) : obj;
    const cJSON *shard = skey ? cJSON_GetObjectItemCaseSensitive(sh, skey) : sh;
    if (need_object(j, range, okey))
        return CK_EINVAL;
    size_t saved = okey ? ck_jin_push_key(j, okey) : strlen(j->path);
    ck_jin_int(j, range, "from", 1, 0, (int64_t)MAX_SEED, &from);
    ck_jin_int(j, range, "to", 1, 0, (int64_t)MAX_SEED, &to);
    if (!j->failed && to < from) {
        size_t s2 = ck_jin_push_key(j, "to");
        ck_jin_fail(j, "expected at least `from` (%lld), got %lld", (long long)from,
                    (long long)to);
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
    if (shard && !cJSON_IsNull(shard) && !need_object(j, shard, skey)) {
        saved = skey ? ck_jin_push_key(j, skey) : strlen(j->path);
        ck_jin_int(j, shard, "count", 1, 1, MAX_SHARDS, &count);
        ck_jin_int(j, shard, "index", 1, 0, count - 1, &index);
        ck_jin_pop(j, saved);
    }
    if (j->failed)
        return CK_EINVAL;
    if (in->nd == in->dcap) {
        size_t ncap = in->dcap ? 2 * in->dcap : 4;
        decl *nd = realloc(in->d, ncap * sizeof(*nd));
        if (!nd)
            return ck_jin_fail(j, "out of memory");
        in->d = nd;
        in->dcap = ncap;
    }
    in->d[in->nd++] = (decl){(uint64_t)from, (uint64_t)to, (uint64_t)index, (uint64_t)count};
    return CK_OK;
}

/*
 * Reads and checks DIR/swarm.json (its root into *root, to be freed by the
 * caller): the seeds it declares onto in->d, its results onto in->r
 * (numbered on from *order). Returns 0, or 2 after one line naming the
 * file, the JSON path and what was expected there.
 */
static int read_input(const char *dir, cJSON **root, mergein *in, size_t *order)
{
    char path[PATH_MAX + 16], err[1200];
    snprintf(path, sizeof(path), "%s/swarm.json", dir);
    char *text = ck_jin_read(path, 1u << 30, "a swarm.json", NULL, err, sizeof(err));
    if (!text) {
        fprintf(stderr, "chandy swarm: %s\n", err);
        return 2;
    }
    ck_jin j = {.file = path};
    *root = ck_jin_parse(&j, text);
    free(text);
    if (!*root) {
        fprintf(stderr, "chandy swarm: %s\n", j.err);
        return 2;
    }
    static const char *const modes[] = {"safety", "liveness", NULL};
    static const char *const verdicts[] = {"ok", "violation", NULL};
    char fp[64];
    int mode, verdict;
    need_object(&j, *root, NULL);
    ck_jin_string(&j, *root, "scenario_fingerprint", 1, fp, sizeof(fp));
    ck_jin_enum(&j, *root, "mode", 1, modes, &mode);
    /* What it declares: a merged file's list, or a range (of a shard). */
    size_t first = in->nd, saved;
    const cJSON *declared = cJSON_GetObjectItemCaseSensitive(*root, "declared");
    if (declared && !j.failed) {
        saved = ck_jin_push_key(&j, "declared");
        if (!cJSON_IsArray(declared) || !cJSON_GetArraySize(declared)) {
            char got[96];
            ck_jin_describe(declared, got, sizeof(got));
            ck_jin_fail(&j, "expected a non-empty array, got %s", got);
        }
        int i = 0;
        const cJSON *d, *list = j.failed ? NULL : declared;
        cJSON_ArrayForEach(d, list)
        {
            size_t s2 = ck_jin_push_index(&j, i++);
            read_decl(&j, d, NULL, NULL, NULL, in);
            ck_jin_pop(&j, s2);
        }
        ck_jin_pop(&j, saved);
    } else if (!j.failed) {
        read_decl(&j, *root, "seeds", *root, "shard", in);
    }
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(*root, "results");
    saved = ck_jin_push_key(&j, "results");
    if (!j.failed && !cJSON_IsArray(results)) {
        char got[96];
        ck_jin_describe(results, got, sizeof(got));
        ck_jin_fail(&j, "expected an array, got %s", got);
    }
    int i = 0;
    const cJSON *r, *list = j.failed ? NULL : results;
    cJSON_ArrayForEach(r, list)
    {
        size_t s2 = ck_jin_push_index(&j, i++);
        int64_t seed = 0;
        need_object(&j, r, NULL);
        ck_jin_int(&j, r, "seed", 1, 0, (int64_t)MAX_SEED, &seed);
        ck_jin_enum(&j, r, "verdict", 1, verdicts, &verdict);
        int mine = 0;
        for (size_t k = first; k < in->nd && !mine; k++)
            mine = decl_has(&in->d[k], (uint64_t)seed);
        if (!j.failed && !mine) {
            char what[160];
            decl_describe(&in->d[first], what, sizeof(what));
            size_t s3 = ck_jin_push_key(&j, "seed");
            ck_jin_fail(&j, "expected a seed this file declares (%s%s), got %lld", what,
                        in->nd - first > 1 ? ", ..." : "", (long long)seed);
            ck_jin_pop(&j, s3);
        }
        if (!j.failed && in->nr == in->rcap) {
            size_t ncap = in->rcap ? 2 * in->rcap : 256;
            mres *nr = realloc(in->r, ncap * sizeof(*nr));
            if (nr) {
                in->r = nr;
                in->rcap = ncap;
            } else {
                ck_jin_fail(&j, "out of memory");
            }
        }
        ck_jin_pop(&j, s2);
        if (j.failed)
            break;
        in->r[in->nr++] = (mres){(uint64_t)seed, (*order)++, r};
    }
    ck_jin_pop(&j, saved);
    if (j.failed) {
        fprintf(stderr, "chandy swarm: %s\n", j.err);
        return 2;
    }
    return 0;
}

static int by_seed(const void *a, const void *b)
{
    const mres *x = a, *y = b;
    if (x->seed != y->seed)
        return x->seed < y->seed ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_decl(const void *a, const void *b)
{
    const decl *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Merges the ranges of d[0..nd) (sorted by cmp_decl) into disjoint ones in
 * place; returns how many, and the seeds they hold in *seeds.
 */
static size_t union_ranges(decl *d, size_t nd, uint64_t *seeds)
{
    size_t n = 0;
    *seeds = 0;
    for (size_t k = 0; k < nd; k++) {
        if (n && d[k].from <= d[n - 1].to + 1) {
            if (d[k].to > d[n - 1].to)
                d[n - 1].to = d[k].to;
            continue;
        }
        d[n++] = (decl){d[k].from, d[k].to, 0, 1};
    }
    for (size_t k = 0; k < n; k++)
        *seeds += d[k].to - d[k].from + 1;
    return n;
}

static int merge(char **dirs, int ndirs, const char *out)
{
    cJSON **in = calloc((size_t)ndirs, sizeof(*in));
    mergein mi = {0};
    cJSON *m = NULL;
    uint64_t *have = NULL;
    int status = 2;
    size_t order = 0;
    if (!in)
        return 2;
    for (int i = 0; i < ndirs; i++) {
        if (read_input(dirs[i], &in[i], &mi, &order))
            goto fail;
        if (i > 0 && (strcmp(jstr(in[i], "scenario_fingerprint"),
                             jstr(in[0], "scenario_fingerprint")) ||
                      strcmp(jstr(in[i], "mode"), jstr(in[0], "mode")))) {
            fprintf(stderr,
                    "chandy swarm: %s/swarm.json: scenario %s (%s, %s mode) differs from "
                    "%s/swarm.json's %s (%s, %s mode): not the same swarm\n",
                    dirs[i], jstr(in[i], "scenario") ? jstr(in[i], "scenario") : "?",
                    jstr(in[i], "scenario_fingerprint"), jstr(in[i], "mode"), dirs[0],
                    jstr(in[0], "scenario") ? jstr(in[0], "scenario") : "?",
                    jstr(in[0], "scenario_fingerprint"), jstr(in[0], "mode"));
            goto fail;
        }
    }
    /* The declared seeds: the union of the ranges. */
    qsort(mi.d, mi.nd, sizeof(*mi.d), cmp_decl);
    uint64_t declared;
    size_t nd = union_ranges(mi.d, mi.nd, &declared);
    if ((status = prepare_out(out)) != 0)
        goto fail;
    status = 2;
    qsort(mi.r, mi.nr, sizeof(*mi.r), by_seed);
    if (!(have = malloc((mi.nr + 1) * sizeof(*have))))
        goto fail;
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "scenario",
                            jstr(in[0], "scenario") ? jstr(in[0], "scenario") : "");
    cJSON_AddStringToObject(m, "scenario_name",
                            jstr(in[0], "scenario_name") ? jstr(in[0], "scenario_name") : "");
    cJSON_AddStringToObject(m, "scenario_fingerprint", jstr(in[0], "scenario_fingerprint"));
    cJSON_AddStringToObject(m, "mode", jstr(in[0], "mode"));
    double wall = 0, rate = 0;
    cJSON *shards = cJSON_CreateArray(), *merged = cJSON_CreateArray();
    for (int i = 0; i < ndirs; i++) {
        wall = jnum(in[i], "wall_s", 0) > wall ? jnum(in[i], "wall_s", 0) : wall;
        rate += jnum(in[i], "seeds_per_minute", 0); /* shards run side by side */
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(in[i], "shard");
        cJSON_AddItemToArray(shards, cJSON_IsObject(sh) ? cJSON_Duplicate(sh, 1)
                                                        : cJSON_CreateNull());
        cJSON_AddItemToArray(merged, cJSON_CreateString(dirs[i]));
    }
    cJSON *seeds = cJSON_AddObjectToObject(m, "seeds");
    cJSON_AddNumberToObject(seeds, "from", (double)mi.d[0].from);
    uint64_t to = 0;
    for (size_t k = 0; k < nd; k++)
        to = mi.d[k].to > to ? mi.d[k].to : to;
    cJSON_AddNumberToObject(seeds, "to", (double)to);
    cJSON *decls = cJSON_AddArrayToObject(m, "declared");
    for (size_t k = 0; k < nd; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "from", (double)mi.d[k].from);
        cJSON_AddNumberToObject(o, "to", (double)mi.d[k].to);
        cJSON_AddItemToArray(decls, o);
    }
    cJSON_AddItemToObject(m, "shards", shards);
    cJSON_AddItemToObject(m, "merged_from", merged);
    /* One result per seed: the first one given; seeds run twice are noted. */
    cJSON *results = cJSON_CreateArray(), *bad = cJSON_CreateArray();
    cJSON *overlap = cJSON_CreateArray();
    size_t runs = 0, violations = 0;
    for (size_t i = 0; i < mi.nr; i++) {
        uint64_t seed = mi.r[i].seed;
        if (i > 0 && seed == mi.r[i - 1].seed) {
            int n = cJSON_GetArraySize(overlap);
            if (!n || (uint64_t)cJSON_GetArrayItem(overlap, n - 1)->valuedouble != seed)
                cJSON_AddItemToArray(overlap, cJSON_CreateNumber((double)seed));
            continue;
        }
        have[runs++] = seed;
        if (strcmp(jstr(mi.r[i].r, "verdict"), "ok")) {
            violations++;
            cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)seed));
        }
        cJSON_AddItemToArray(results, cJSON_Duplicate(mi.r[i].r, 1));
    }
    /* Every result is of a declared seed: the rest have none. */
    uint64_t missing = declared - runs;
    cJSON *first = cJSON_CreateArray();
    char firstbuf[FIRST_MISSING * 24] = "";
    size_t fo = 0;
    size_t h = 0; /* have[h] is the first result at or above x */
    for (size_t k = 0, n = 0; k < nd && n < missing && n < FIRST_MISSING; k++) {
        for (uint64_t x = mi.d[k].from; n < FIRST_MISSING; x++) {
            while (h < runs && have[h] < x)
                h++;
            if (h == runs || have[h] != x) {
                cJSON_AddItemToArray(first, cJSON_CreateNumber((double)x));
                fo += (size_t)snprintf(firstbuf + fo, sizeof(firstbuf) - fo, "%s%llu",
                                       n ? ", " : "", (unsigned long long)x);
                n++;
            }
            if (x == mi.d[k].to)
                break;
        }
    }
    cJSON_AddBoolToObject(m, "complete", missing == 0);
    cJSON_AddNumberToObject(m, "seeds_declared", (double)declared);
    cJSON_AddNumberToObject(m, "seeds_missing", (double)missing);
    cJSON_AddItemToObject(m, "first_missing_seeds", first);
    cJSON_AddNumberToObject(m, "runs", (double)runs);
    cJSON_AddNumberToObject(m, "passed", (double)(runs - violations));
    cJSON_AddNumberToObject(m, "violations", (double)violations);
    cJSON_AddNumberToObject(m, "wall_s", wall);
    cJSON_AddNumberToObject(m, "seeds_per_minute", (double)(int64_t)(rate * 10) / 10);
    cJSON_AddItemToObject(m, "overlapping_seeds", overlap);
    cJSON_AddItemToObject(m, "violating_seeds", bad);
    cJSON_AddItemToObject(m, "results", results);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/swarm.json", out);
    if (ck_runjson_write(m, path)) {
        fprintf(stderr, "chandy swarm: %s: cannot write\n", path);
        status = 1;
        goto fail;
    }
    fprintf(stderr, "swarm %s (%s): merged %d director%s: %zu seeds, %zu violation%s%s; %s\n",
            jstr(m, "scenario_name"), jstr(m, "mode"), ndirs, ndirs == 1 ? "y" : "ies", runs,
            violations, violations == 1 ? "" : "s",
            cJSON_GetArraySize(overlap) ? ", some seeds ran more than once (overlapping_seeds)"
                                        : "",
            path);
    if (missing)
        fprintf(stderr,
                "chandy swarm: incomplete: %llu of the %llu seeds declared have no result "
                "(first: %s%s)\n",
                (unsigned long long)missing, (unsigned long long)declared, firstbuf,
                missing > FIRST_MISSING ? ", ..." : "");
    status = violations || missing ? 1 : 0;
fail:
    cJSON_Delete(m);
    for (int i = 0; i < ndirs; i++)
        cJSON_Delete(in[i]);
    free(in);
    free(mi.d);
    free(mi.r);
    free(have);
    return status;
}
