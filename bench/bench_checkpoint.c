/*
 * bench_checkpoint.c - what do checkpoints every second cost in the steady
 * state? Prints throughput with checkpointing off and with an interval of
 * 1 s, for the same job and input; asserts nothing.
 *
 *  1. Under SimGrid (bench/checkpoint-overhead.json: a CPU-bound keyed
 *     count reading a full topic on two task managers): deterministic, so
 *     one run each is the figure.
 *  2. Over sockets (bench/keyed-count.json, 10 million records): real time
 *     on a shared machine, so rounds alternate and the best of three counts.
 */
#include <string.h>

#include "benchutil.h"

/* Runs a variant of a scenario with the given checkpoint interval ("" = off). */
static int variant(const char *dir, const char *scenario, const char *interval,
                   const char *backend, const char *duration, double *rps, int *completed)
{
    cJSON *doc = bench_read_json(scenario);
    if (!doc)
        return -1;
    cJSON *cfg = cJSON_GetObjectItem(doc, "config");
    if (interval[0])
        cJSON_AddStringToObject(cfg, "execution.checkpointing.interval", interval);
    if (duration)
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(doc, "workload"), "duration",
                                  cJSON_CreateString(duration));
    char path[300], args[800];
    snprintf(path, sizeof(path), "%s/variant.json", dir);
    int rc = bench_write_json(doc, path);
    cJSON_Delete(doc);
    if (rc)
        return -1;
    snprintf(args, sizeof(args), "run %s --backend %s --out %s/run --quiet", path, backend, dir);
    if (bench_chandy(args) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/run/run.json", dir);
    cJSON *run = bench_read_json(path);
    if (!run)
        return -1;
    *rps = bench_field(run, "throughput_in_rps", NULL);
    *completed = (int)bench_field(run, "checkpoint_summary", "completed");
    int ok = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "ok"));
    cJSON_Delete(run);
    return ok ? 0 : -1;
}

int main(void)
{
    if (chdir(CHANDY_SOURCE_DIR)) {
        perror(CHANDY_SOURCE_DIR);
        return 1;
    }
    char dir[64];
    if (bench_tmpdir(dir, sizeof(dir)))
        return 1;
    double off, on;
    int n_off, n_on;
    if (variant(dir, "bench/checkpoint-overhead.json", "", "simgrid", NULL, &off, &n_off) ||
        variant(dir, "bench/checkpoint-overhead.json", "1 s", "simgrid", NULL, &on, &n_on)) {
        fprintf(stderr, "simulated runs failed\n");
        return 1;
    }
    printf("checkpoint overhead under SimGrid (bench/checkpoint-overhead.json)\n");
    printf("  checkpointing off          %10.0f records/s\n", off);
    printf("  every 1 s (%2d completed)   %10.0f records/s\n", n_on, on);
    printf("  with / without             %10.4f\n", on / off);

    double best_off = 0, best_on = 0;
    int c_on = 0;
    for (int round = 0; round < 3; round++) {
        double r;
        int c;
        if (variant(dir, "bench/keyed-count.json", "", "sockets", "100 s", &r, &c))
            return 1;
        if (r > best_off)
            best_off = r;
        if (variant(dir, "bench/keyed-count.json", "1 s", "sockets", "100 s", &r, &c))
            return 1;
        if (r > best_on) {
            best_on = r;
            c_on = c;
        }
    }
    printf("checkpoint overhead over sockets (bench/keyed-count.json, 10 M records, best of 3)\n");
    printf("  checkpointing off          %10.0f records/s\n", best_off);
    printf("  every 1 s (%2d completed)   %10.0f records/s\n", c_on, best_on);
    printf("  with / without             %10.4f\n", best_on / best_off);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
