/*
 * bench_throughput.c - how fast is the engine, and how fast is the
 * simulation? Prints figures; asserts nothing (machines are noisy).
 *
 *  1. A keyed running count at parallelism 1 over the socket backend
 *     (bench/keyed-count.json: a full topic read as fast as possible),
 *     next to a plain single-threaded C loop that computes the same
 *     updates from the same generated input and writes them out the same
 *     way (the COST baseline). Both run on this machine, one after the
 *     other, best of five; with 10 thousand keys (state in the CPU
 *     caches) and with a million (state in memory). The engine runs three
 *     ways: no checkpoints; aligned checkpoints every second; unaligned
 *     checkpoints every second with buffer debloating on (neither may
 *     cost throughput when nothing is backpressured).
 *  2. The default demo scenario under SimGrid: simulated seconds per
 *     wall-clock second.
 *
 * Usage: bench_throughput [records-in-millions]   (default 5)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "element.h"
#include "keygroup.h"
#include "scenario.h"
#include "topic.h"
#include "workload.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return cJSON_Parse(buf);
}

static double field(const cJSON *j, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* ---- the baseline: one loop, one hash table, the same updates ---------------- */

typedef struct slot {
    const char *key;
    uint32_t klen;
    uint32_t hash;
    int64_t count;
} slot;

/* Not inlined, so that its instructions can be counted on their own:
 * valgrind --tool=callgrind --toggle-collect=baseline bench_throughput 0.5 */
static CK_NOINLINE double baseline(const ck_workload *w, const char *outpath, uint64_t *records)
{
    size_t cap = 1;
    while (cap < (size_t)w->nkeys * 2)
        cap <<= 1;
    slot *t = calloc(cap, sizeof(*t));
    uint8_t *out = malloc(1 << 20);
    size_t out_len = 0;
    int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double t0 = now_s();
    uint64_t n = 0;
    for (int p = 0; p < w->spec.partitions; p++) {
        int64_t size = w->topic.ops->size(w->topic.ctx, p);
        ck_rec run[16]; /* read in runs, as the engine's sources do */
        int nrun = 0, at = 0;
        for (int64_t off = 0; off < size; off++) {
            if (at == nrun) {
                nrun = (int)(size - off < 16 ? size - off : 16);
                ck_topic_read_n(&w->topic, p, off, nrun, run);
                at = 0;
            }
            ck_rec r = run[at++];
            int32_t jh = ck_kg_java_hash(r.key, r.klen);
            uint32_t h = (uint32_t)jh * 2654435761u;
            size_t i = h & (cap - 1);
            while (t[i].key && (t[i].hash != h || t[i].klen != r.klen ||
                                memcmp(t[i].key, r.key, r.klen) != 0))
                i = (i + 1) & (cap - 1);
            if (!t[i].key) {
                t[i].key = r.key;
                t[i].klen = r.klen;
                t[i].hash = h;
            }
            ck_elem e = {.tag = CK_EL_RECORD};
            e.u.rec = r;
            e.u.rec.jhash = (int32_t)jh; /* hashed once, as the engine does */
            e.u.rec.hashed = 1;
            e.u.rec.value = ++t[i].count;
            e.u.rec.prov = ck_prov_of(p, off);
            e.u.rec.plen = 0;
            size_t sz = ck_elem_size(&e);
            if (out_len + sz > (1 << 20)) {
                if (write(fd, out, out_len) != (ssize_t)out_len)
                    perror("write");
                out_len = 0;
            }
            ck_elem_encode(out + out_len, &e);
            out_len += sz;
            n++;
        }
    }
    if (write(fd, out, out_len) != (ssize_t)out_len)
        perror("write");
    close(fd);
    double dt = now_s() - t0;
    free(t);
    free(out);
    *records = n;
    return dt;
}

static int run_chandy(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s > /dev/null", CHANDY_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    double millions = argc > 1 ? atof(argv[1]) : 5;
    if (chdir(CHANDY_SOURCE_DIR)) {
        perror(CHANDY_SOURCE_DIR);
        return 1;
    }
    static ck_scenario sc;
    char err[1200];
    if (ck_scenario_load(&sc, "bench/keyed-count.json", err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* Scale the topic (records = rate x duration) in a copy of the scenario. */
    sc.workload.duration = (ck_time)(millions * 1e6 / sc.workload.steps[0].rps * 1e9);
    /* In memory (tmpfs) when there is one: disk write-back is noise here. */
    char dir[64];
    snprintf(dir, sizeof(dir), "%s/chandy-bench-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    /* The engine's configurations: what each adds to the scenario's. */
    static const struct {
        const char *label;
        const char *config; /* JSON object merged into "config" */
    } variants[] = {
        {"chandy, sockets, 1 TM process", "{}"},
        {"  + aligned checkpoints, 1 s", "{\"execution.checkpointing.interval\": \"1 s\"}"},
        {"  + unaligned, debloating",
         "{\"execution.checkpointing.interval\": \"1 s\","
         " \"execution.checkpointing.unaligned.enabled\": true,"
         " \"taskmanager.network.memory.buffer-debloat.enabled\": true}"},
    };
    enum { NV = sizeof(variants) / sizeof(variants[0]) };
    /* Two sizes of state: one that stays in the CPU caches, one that does not. */
    static const int64_t key_counts[] = {10000, 1000000};
    for (size_t kc = 0; kc < sizeof(key_counts) / sizeof(key_counts[0]); kc++) {
        sc.workload.keys = key_counts[kc];
        char scen[NV][300];
        for (int v = 0; v < NV; v++) {
            cJSON *doc = read_json("bench/keyed-count.json");
            cJSON *wl = cJSON_GetObjectItem(doc, "workload");
            char dur[64];
            snprintf(dur, sizeof(dur), "%lld ns", (long long)sc.workload.duration);
            cJSON_ReplaceItemInObject(wl, "duration", cJSON_CreateString(dur));
            cJSON_ReplaceItemInObject(wl, "keys", cJSON_CreateNumber((double)sc.workload.keys));
            cJSON *cfg = cJSON_GetObjectItem(doc, "config"), *add = cJSON_Parse(variants[v].config);
            for (cJSON *kv = add ? add->child : NULL; kv; kv = kv->next)
                cJSON_AddItemToObject(cfg, kv->string, cJSON_Duplicate(kv, 1));
            cJSON_Delete(add);
            snprintf(scen[v], sizeof(scen[v]), "%s/keyed-count-%d.json", dir, v);
            FILE *f = fopen(scen[v], "w");
            char *text = cJSON_Print(doc);
            if (!f || !text || fputs(text, f) < 0) {
                fprintf(stderr, "cannot write %s\n", scen[v]);
                return 1;
            }
            fclose(f);
            free(text);
            cJSON_Delete(doc);
        }

        ck_workload w;
        if (ck_workload_generate(&w, &sc.workload, sc.seed)) {
            fprintf(stderr, "cannot generate the workload\n");
            return 1;
        }
        printf("keyed running count, parallelism 1, %lld records, %lld keys, %u-byte records\n",
               (long long)w.total, (long long)sc.workload.keys, sc.workload.record_bytes);
        double best_loop = 1e30, best_engine[NV];
        uint64_t n = 0;
        for (int v = 0; v < NV; v++)
            best_engine[v] = 1e30;
        for (int round = 0; round < 5; round++) {
            char path[400];
            snprintf(path, sizeof(path), "%s/baseline.out", dir);
            double dt = baseline(&w, path, &n);
            if (dt < best_loop)
                best_loop = dt;
            for (int v = 0; v < NV; v++) {
                char args[700];
                snprintf(args, sizeof(args), "run %s --backend sockets --out %s/engine --quiet",
                         scen[v], dir);
                if (run_chandy(args) != 0) {
                    fprintf(stderr, "chandy run failed\n");
                    return 1;
                }
                snprintf(path, sizeof(path), "%s/engine/run.json", dir);
                cJSON *run = read_json(path);
                double t = field(run, "sim_time_s"), in = field(run, "records_in");
                const cJSON *c = cJSON_GetObjectItem(run, "correctness");
                if (in != (double)n || !cJSON_IsTrue(cJSON_GetObjectItem(c, "ok"))) {
                    fprintf(stderr, "engine run incomplete or wrong\n");
                    return 1;
                }
                if (t < best_engine[v])
                    best_engine[v] = t;
                cJSON_Delete(run);
            }
        }
        double loop_rate = (double)n / best_loop;
        printf("  plain C loop (COST baseline)   %12.0f records/s  (%.3f s)\n", loop_rate,
               best_loop);
        for (int v = 0; v < NV; v++) {
            double engine_rate = (double)n / best_engine[v];
            printf("  %-30s %12.0f records/s  (%.3f s)  engine / loop %.2f\n", variants[v].label,
                   engine_rate, best_engine[v], engine_rate / loop_rate);
        }
        ck_workload_free(&w);
    }

    char args[700];
    snprintf(args, sizeof(args), "run scenarios/demo.json --out %s/demo --quiet", dir);
    double best_speed = 0, sim_s = 0, wall = 0;
    for (int round = 0; round < 3; round++) {
        if (run_chandy(args) != 0) {
            fprintf(stderr, "demo run failed\n");
            return 1;
        }
        char path[400];
        snprintf(path, sizeof(path), "%s/demo/run.json", dir);
        cJSON *run = read_json(path);
        double sp = field(run, "sim_speed");
        if (sp > best_speed) {
            best_speed = sp;
            sim_s = field(run, "sim_time_s");
            wall = field(run, "wall_time_s");
        }
        cJSON_Delete(run);
    }
    printf("default scenario (scenarios/demo.json) under SimGrid\n");
    printf("  %.3f simulated s in %.3f wall s: %.1f simulated s per wall s\n", sim_s, wall,
           best_speed);
    ck_scenario_free(&sc);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
