/*
 * bench_exchanges.c - the N x T table: how long a checkpoint takes through
 * N network exchanges under steady backpressure, by how checkpoints and
 * buffers are configured, next to what Flink published.
 *
 * Runs scenarios/exchanges-N.json (N = 1..5: Flink's
 * CheckpointingTimeBenchmark job with N exchanges) under SimGrid four ways:
 *   - aligned, buffer debloating with a 300 ms target (the scenario as it
 *     is; 4 KB segments, as the benchmark);
 *   - aligned, debloating with Flink's default 1 s target (32 KB segments,
 *     Flink's default: 4 KB ones cannot hold a second of this input);
 *   - aligned, without debloating (4 KB segments);
 *   - unaligned, without debloating.
 * Each figure is the median duration of the checkpoints triggered from 5 s
 * to 13 s (the debloater has settled; the input lasts 12 s), with the
 * ratio to N x T where it applies, the median channel state an
 * unaligned checkpoint stored, and how many times longer the debloated
 * aligned checkpoint (300 ms target) takes than the unaligned one (Flink's
 * benchmark: 878.7 / 2.465 ms, 356x). Asserts nothing.
 *
 *   bench_exchanges [--chandy PATH] [--max N]
 */
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"

typedef struct variant {
    const char *name;
    const char *keys[4];
    const char *values[4]; /* JSON values */
} variant;

static const variant variants[] = {
    {"debloat 300 ms", {NULL}, {NULL}},
    {"debloat 1 s",
     {"taskmanager.network.memory.buffer-debloat.target", "taskmanager.memory.segment-size"},
     {"\"1 s\"", "\"32 kb\""}},
    {"no debloating", {"taskmanager.network.memory.buffer-debloat.enabled"}, {"false"}},
    {"unaligned",
     {"taskmanager.network.memory.buffer-debloat.enabled",
      "execution.checkpointing.unaligned.enabled"},
     {"false", "true"}},
};
#define NVAR (sizeof(variants) / sizeof(*variants))

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median duration (s) and channel state (bytes) of the steady checkpoints. */
static int steady(const cJSON *run, double *dur, double *inflight)
{
    double d[256], f[256];
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(run, "checkpoints"))
    {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(c, "kind");
        double at = bench_field(c, "trigger_s", NULL);
        if (n == 256 || !cJSON_IsString(st) || strcmp(st->valuestring, "completed") ||
            !cJSON_IsString(kind) || strcmp(kind->valuestring, "checkpoint") || at < 5 || at >= 13)
            continue;
        d[n] = bench_field(c, "duration_s", NULL);
        f[n] = bench_field(c, "persisted_inflight_bytes", NULL);
        n++;
    }
    *dur = median(d, n);
    *inflight = median(f, n);
    return n;
}

int main(int argc, char **argv)
{
    const char *chandy = CHANDY_BIN;
    int maxn = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chandy") && i + 1 < argc)
            chandy = argv[++i];
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            maxn = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_exchanges [--chandy PATH] [--max N]\n");
            return 2;
        }
    }
    if (maxn < 1 || maxn > 5)
        maxn = 5;
    char dir[256];
    if (bench_tmpdir(dir, sizeof(dir))) {
        fprintf(stderr, "bench_exchanges: no scratch directory\n");
        return 1;
    }
    printf("chandy: %s\n", chandy);
    printf("median checkpoint duration, checkpoints triggered from 5 s to 13 s (ms; x N x T)\n");
    printf("%2s %-9s %-17s %-17s %-14s %-10s %-16s %s\n", "N", "N x 300ms", variants[0].name,
           variants[1].name, variants[2].name, variants[3].name, "unaligned state",
           "aligned/unaligned");
    int bad = 0;
    for (int n = 1; n <= maxn; n++) {
        char src[512];
        snprintf(src, sizeof(src), "%s/scenarios/exchanges-%d.json", CHANDY_SOURCE_DIR, n);
        double dur[NVAR], inf[NVAR];
        for (size_t v = 0; v < NVAR; v++) {
            cJSON *sc = bench_read_json(src);
            if (!sc) {
                fprintf(stderr, "bench_exchanges: cannot read %s\n", src);
                return 1;
            }
            cJSON *cfg = cJSON_GetObjectItemCaseSensitive(sc, "config");
            for (int k = 0; k < 4 && variants[v].keys[k]; k++) {
                cJSON_DeleteItemFromObjectCaseSensitive(cfg, variants[v].keys[k]);
                cJSON_AddItemToObject(cfg, variants[v].keys[k], cJSON_Parse(variants[v].values[k]));
            }
            cJSON_DeleteItemFromObjectCaseSensitive(sc, "expect");
            char path[400], out[400], args[1300], run[450];
            snprintf(path, sizeof(path), "%s/n%d-v%zu.json", dir, n, v);
            snprintf(out, sizeof(out), "%s/n%d-v%zu", dir, n, v);
            if (bench_write_json(sc, path)) {
                fprintf(stderr, "bench_exchanges: cannot write %s\n", path);
                return 1;
            }
            cJSON_Delete(sc);
            snprintf(args, sizeof(args), "%s run %s --out %s -q > /dev/null 2>&1", chandy, path,
                     out);
            int st = system(args);
            snprintf(run, sizeof(run), "%s/run.json", out);
            cJSON *j = bench_read_json(run);
            dur[v] = inf[v] = -1;
            if (!j || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                          cJSON_GetObjectItemCaseSensitive(j, "correctness"), "ok"))) {
                fprintf(stderr, "bench_exchanges: N=%d %s: %s (exit %d)\n", n, variants[v].name,
                        j ? "output not exactly once" : "no run.json",
                        WIFEXITED(st) ? WEXITSTATUS(st) : -1);
                bad = 1;
            }
            if (j)
                steady(j, &dur[v], &inf[v]);
            cJSON_Delete(j);
        }
        double t300 = 0.3 * n, t1 = 1.0 * n;
        char c0[40], c1[40], c2[40], c3[40], c4[40], c5[40];
        snprintf(c0, sizeof(c0), "%.0f (%.2fx)", dur[0] * 1e3, dur[0] / t300);
        snprintf(c1, sizeof(c1), "%.0f (%.2fx)", dur[1] * 1e3, dur[1] / t1);
        snprintf(c2, sizeof(c2), "%.0f", dur[2] * 1e3);
        snprintf(c3, sizeof(c3), "%.1f", dur[3] * 1e3);
        snprintf(c4, sizeof(c4), "%.0f KB", inf[3] / 1e3);
        if (dur[0] > 0 && dur[3] > 0)
            snprintf(c5, sizeof(c5), "%.0fx", dur[0] / dur[3]);
        else
            snprintf(c5, sizeof(c5), "-");
        printf("%2d %-9.0f %-17s %-17s %-14s %-10s %-16s %s\n", n, t300 * 1e3, c0, c1, c2, c3, c4,
               c5);
        fflush(stdout);
    }
    printf("Flink (CheckpointingTimeBenchmark, N = 2, T = 300 ms): aligned 878.7 +- 71 ms "
           "(1.46x), unaligned 2.465 ms, aligned/unaligned 356x\n");
    char rm[300];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "bench_exchanges: could not remove %s\n", dir);
    return bad;
}
