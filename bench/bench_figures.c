/*
 * bench_figures.c - the figures a user reads, for each example scenario:
 * what a change to the simulated network or the node driver moves.
 *
 * Runs each scenario once under SimGrid (its own seed) with a given chandy
 * binary and prints one line per scenario: simulated seconds per wall
 * second, simulated transfers (messages, from a chandy that counted no
 * transfers: each message was one), throughput in, latency p50 and p99,
 * checkpoint duration p50 and max, the longest alignment, the most
 * backpressured subtask's ratio, each recovery's time, and the verdict.
 * Run it with the binaries of two commits and compare the tables (the
 * README's before/after table came from it). Asserts nothing.
 *
 *   bench_figures [--chandy PATH] [SCENARIO.json...]
 *       (default: this build's chandy, and the example scenarios that run
 *        on their own: every one in scenarios/ but savepoint-restore and
 *        savepoint-upgrade, which start from savepoint-stop's savepoint)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchutil.h"

static const char *defaults[] = {
    "scenarios/demo.json",
    "scenarios/backpressure.json",
    "scenarios/checkpoint-backpressure.json",
    "scenarios/crash-recovery.json",
    "scenarios/crash-during-checkpoint.json",
    "scenarios/partition.json",
    "scenarios/savepoint-stop.json",
    "scenarios/swarm-crash.json",
};

/* The largest number in field `key` of the objects of array `arr`. */
static double max_of(const cJSON *arr, const char *key)
{
    double m = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
        if (cJSON_IsNumber(x) && x->valuedouble > m)
            m = x->valuedouble;
    }
    return m;
}

/* A figure times scale, or "-" when run.json does not have it. */
static void fig(char *buf, size_t len, const char *fmt, double v, double scale)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, fmt, v * scale);
}

int main(int argc, char **argv)
{
    const char *chandy = CHANDY_BIN;
    const char *files[64];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chandy") && i + 1 < argc)
            chandy = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_figures [--chandy PATH] [SCENARIO.json...]\n");
            return 2;
        } else if (nfiles < 64)
            files[nfiles++] = argv[i];
    }
    if (access(chandy, X_OK) != 0) {
        fprintf(stderr, "bench_figures: --chandy %s: not an executable: %s\n", chandy,
                strerror(errno));
        return 2;
    }
    static char paths[sizeof(defaults) / sizeof(*defaults)][512];
    if (!nfiles)
        for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++) {
            snprintf(paths[i], sizeof(paths[i]), "%s/%s", CHANDY_SOURCE_DIR, defaults[i]);
            files[nfiles++] = paths[i];
        }
    char dir[256];
    if (bench_tmpdir(dir, sizeof(dir))) {
        fprintf(stderr, "bench_figures: no scratch directory\n");
        return 1;
    }
    printf("chandy: %s\n", chandy);
    printf("%-24s %8s %9s %9s %8s %8s %8s %8s %8s %6s %-14s %s\n", "scenario", "sim/wall",
           "transfers", "in rec/s", "p50 ms", "p99 ms", "cp50 ms", "cpmax ms", "align ms",
           "bp", "recovery s", "verdict");
    for (int i = 0; i < nfiles; i++) {
        const char *base = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
        char name[64], cmd[1200], run[400];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(base, "."), base);
        snprintf(cmd, sizeof(cmd), "%s run %s --out %s/%s -q > /dev/null 2>&1", chandy, files[i],
                 dir, name);
        int st = system(cmd);
        snprintf(run, sizeof(run), "%s/%s/run.json", dir, name);
        cJSON *j = bench_read_json(run);
        if (!j) {
            printf("%-24s no run.json (exit %d)\n", name, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            continue;
        }
        const cJSON *cps = cJSON_GetObjectItemCaseSensitive(j, "checkpoints");
        char rec[64] = "-";
        size_t off = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "recoveries"))
        {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, "recovery_s");
            if (off < sizeof(rec) - 8)
                off += (size_t)snprintf(rec + off, sizeof(rec) - off, "%s%.3f", off ? "," : "",
                                        cJSON_IsNumber(x) ? x->valuedouble : -1.0);
        }
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "correctness"), "ok");
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "job"), "state");
        char tr[32], c50[32], cmax[32];
        /* Before run.json counted transfers, every message was one. */
        double transfers = bench_field(j, "network", "transfers");
        fig(tr, sizeof(tr), "%.0f",
            transfers >= 0 ? transfers : bench_field(j, "network", "messages"), 1);
        fig(c50, sizeof(c50), "%.2f", bench_field(j, "checkpoint_summary", "duration_p50_s"), 1e3);
        fig(cmax, sizeof(cmax), "%.2f", bench_field(j, "checkpoint_summary", "duration_max_s"), 1e3);
        printf("%-24s %8.1f %9s %9.0f %8.1f %8.1f %8s %8s %8.2f %6.2f %-14s %s %s\n", name,
               bench_field(j, "sim_speed", NULL), tr, bench_field(j, "throughput_in_rps", NULL),
               bench_field(j, "latency_ms", "p50"), bench_field(j, "latency_ms", "p99"), c50, cmax,
               max_of(cps, "alignment_max_s") * 1e3,
               max_of(cJSON_GetObjectItemCaseSensitive(j, "tasks"), "backpressured_ratio"), rec,
               cJSON_IsString(state) ? state->valuestring : "?",
               cJSON_IsTrue(ok) ? "correct" : "NOT CORRECT");
        cJSON_Delete(j);
    }
    char rm[300];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "bench_figures: could not remove %s\n", dir);
    return 0;
}
