/*
 * bench_netmodel.c - how far the fast transfer model is from SimGrid's
 * flow model on the generated platform (cluster.transfer_model, sim/simnet.h).
 *
 * One job, source -> map -> keyBy -> count -> sink (two chained tasks),
 * at parallelism 16 and 64 by default, on task managers of 4 slots and 4
 * cores (one spare) with 1 Gbit/s links; 2 000 records/s of 2 KB per
 * source subtask by default (4 MB/s each: a task manager's link carries
 * about a seventh of what it can; --rate sets it), a count at 20 kflop a
 * record, a checkpoint every second, and task manager tm1's process
 * killed at 5 s (fixed-delay restart, 500 ms). Each point runs that
 * scenario under `transfer_model` "fast" and "simgrid" for seeds 1 to 3
 * (a checkpoint that happens to start during a recovery's catch-up, in
 * one run and not in the other, moves a p99 a lot), as child processes,
 * and prints per figure both models' median over the seeds, the ratio of
 * the medians (simgrid / fast) and the least and largest ratio of one
 * seed's two runs: checkpoint duration (p50, p99) and alignment (the
 * median and the largest of the checkpoints' longest alignment),
 * end-to-end latency (p50, p99), the recovery (its recovery_s, and
 * restored_s - failure_s), records read per second, simulated
 * transfers, and each run's wall and CPU time. Asserts nothing.
 *
 *   bench_netmodel [--limit SECONDS] [--seeds N] [--rate R] [P...]
 *                          (default: 16 64, 3 seeds, rate 2000; a run
 *                          over the limit, 1800 s by default, is stopped)
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "benchutil.h"

#define MAX_POINTS 8
#define MAX_SEEDS 16

static int write_scenario(const char *path, int p, const char *model, int seed, int rate)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "{\n"
            "  \"name\": \"netmodel-%d-%s\",\n"
            "  \"description\": \"bench_netmodel: parallelism %d, transfers timed by the %s model\",\n"
            "  \"seed\": %d,\n"
            "  \"cluster\": {\"taskmanagers\": %d, \"cores\": 4, \"transfer_model\": \"%s\",\n"
            "              \"link\": {\"bandwidth\": \"1Gbps\", \"latency\": \"50us\"}},\n"
            "  \"workload\": {\"topic\": \"netmodel\", \"duration\": \"10 s\", \"rate\": %d,\n"
            "                \"partitions\": %d, \"keys\": 100000, \"record_bytes\": 2000},\n"
            "  \"job\": {\"operators\": [\n"
            "    {\"name\": \"source\", \"type\": \"source\", \"parallelism\": %d, \"cpu_per_record\": \"2kf\"},\n"
            "    {\"name\": \"map\", \"type\": \"map\", \"parallelism\": %d, \"cpu_per_record\": \"5kf\"},\n"
            "    {\"name\": \"count\", \"type\": \"aggregate\", \"fn\": \"count\", \"partition\": \"hash\",\n"
            "     \"parallelism\": %d, \"cpu_per_record\": \"20kf\"},\n"
            "    {\"name\": \"sink\", \"type\": \"sink\", \"parallelism\": %d}\n"
            "  ]},\n"
            "  \"config\": {\"taskmanager.numberOfTaskSlots\": 4,\n"
            "             \"taskmanager.memory.network.min\": \"512 mb\",\n"
            "             \"taskmanager.memory.network.max\": \"512 mb\",\n"
            "             \"execution.checkpointing.interval\": \"1 s\",\n"
            "             \"restart-strategy.type\": \"fixed-delay\",\n"
            "             \"restart-strategy.fixed-delay.delay\": \"500 ms\"},\n"
            "  \"events\": [{\"at\": \"5 s\", \"action\": \"crash\", \"host\": \"tm1\", \"kind\": \"process\"}]\n"
            "}\n",
            p, model, p, model, seed, (p + 3) / 4 + 1, model, rate * p, p, p, p, p, p);
    return fclose(f) ? -1 : 0;
}

static double cpu_s(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* Runs chandy with argv; returns its exit status, or -1 when it was
 * stopped at the limit. */
static int run_child(char *const argv[], double limit_s, double *wall, double *cpu)
{
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -2;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    for (;;) {
        pid_t got = wait4(pid, &st, WNOHANG, &ru);
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR)
            return -2;
        if (bench_now_s() - t0 > limit_s) {
            kill(pid, SIGKILL);
            wait4(pid, &st, 0, &ru);
            return -1;
        }
        usleep(20000);
    }
    *wall = bench_now_s() - t0;
    *cpu = cpu_s(&ru);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median and the largest of the completed checkpoints' longest
 * alignment, in seconds (-1: none). */
static void alignment(const cJSON *run, double *p50, double *max)
{
    double v[4096];
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(run, "checkpoints"))
    {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, "alignment_max_s");
        if (n < 4096 && cJSON_IsString(st) && !strcmp(st->valuestring, "completed") &&
            cJSON_IsNumber(a))
            v[n++] = a->valuedouble;
    }
    *p50 = *max = -1;
    if (!n)
        return;
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    *p50 = v[(n - 1) / 2];
    *max = v[n - 1];
}

/* The figures of one run. */
enum { F_CP50, F_CP99, F_AL50, F_ALMAX, F_LAT50, F_LAT99, F_REC, F_RESTORE, F_TPUT, F_XFER,
       F_WALL, F_CPU, F_N };

static const struct {
    const char *name;
    double scale; /* run.json's unit to the printed one */
} figs[F_N] = {
    {"checkpoint duration p50 (ms)", 1e3}, {"checkpoint duration p99 (ms)", 1e3},
    {"alignment p50 (ms)", 1e3},           {"alignment max (ms)", 1e3},
    {"latency p50 (ms)", 1},               {"latency p99 (ms)", 1},
    {"recovery (s)", 1},                   {"failure to restored (s)", 1},
    {"records read per second", 1},        {"simulated transfers", 1},
    {"wall time (s)", 1},                  {"CPU time (s)", 1},
};

static int figures(const char *runjson, double wall, double cpu, double *f)
{
    cJSON *run = bench_read_json(runjson);
    if (!run)
        return -1;
    f[F_CP50] = bench_field(run, "checkpoint_summary", "duration_p50_s");
    f[F_CP99] = bench_field(run, "checkpoint_summary", "duration_p99_s");
    alignment(run, &f[F_AL50], &f[F_ALMAX]);
    f[F_LAT50] = bench_field(run, "latency_ms", "p50");
    f[F_LAT99] = bench_field(run, "latency_ms", "p99");
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(run, "recoveries"), 0);
    f[F_REC] = bench_field(r0, "recovery_s", NULL);
    double restored = bench_field(r0, "restored_s", NULL), failed = bench_field(r0, "failure_s", NULL);
    f[F_RESTORE] = restored >= 0 && failed >= 0 ? restored - failed : -1;
    f[F_TPUT] = bench_field(run, "throughput_in_rps", NULL);
    f[F_XFER] = bench_field(run, "network", "transfers");
    f[F_WALL] = wall;
    f[F_CPU] = cpu;
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(run, "transfer_model");
    int ok = cJSON_IsString(tm) ? 0 : -1;
    cJSON_Delete(run);
    return ok;
}

/* The median of n values (n >= 1; sorts them). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int ps[MAX_POINTS], np = 0, seeds = 3, rate = 2000;
    double limit = 1800;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            limit = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
                   atoi(argv[i + 1]) <= MAX_SEEDS) {
            seeds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rate") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            rate = atoi(argv[++i]);
        } else if (np < MAX_POINTS && atoi(argv[i]) > 0) {
            ps[np++] = atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: bench_netmodel [--limit SECONDS] [--seeds N (1-%d)] "
                            "[--rate R] [PARALLELISM...]\n", MAX_SEEDS);
            return 2;
        }
    }
    if (np == 0) {
        ps[np++] = 16;
        ps[np++] = 64;
    }
    char dir[200];
    if (bench_tmpdir(dir, sizeof(dir))) {
        perror("bench_netmodel: a scratch directory");
        return 1;
    }
    static const char *const models[2] = {"fast", "simgrid"};
    int status = 0;
    for (int i = 0; i < np; i++) {
        static double f[2][MAX_SEEDS][F_N];
        int ok = 1;
        for (int s = 0; s < seeds && ok; s++)
            for (int m = 0; m < 2 && ok; m++) {
                char sc[300], out[300], runjson[340];
                snprintf(sc, sizeof(sc), "%s/netmodel-%d-%s-%d.json", dir, ps[i], models[m], s + 1);
                snprintf(out, sizeof(out), "%s/out-%d-%s-%d", dir, ps[i], models[m], s + 1);
                snprintf(runjson, sizeof(runjson), "%s/run.json", out);
                if (write_scenario(sc, ps[i], models[m], s + 1, rate)) {
                    perror(sc);
                    return 1;
                }
                char *args[] = {(char *)CHANDY_BIN, "run", sc, "--out", out, "--quiet", NULL};
                double wall = 0, cpu = 0;
                int rc = run_child(args, limit, &wall, &cpu);
                if (rc == -1) {
                    printf("parallelism %d, %s model, seed %d: stopped after %.0f s (--limit)\n",
                           ps[i], models[m], s + 1, limit);
                    ok = 0;
                } else if (figures(runjson, wall, cpu, f[m][s])) {
                    printf("parallelism %d, %s model, seed %d: chandy exited %d without a usable "
                           "run.json\n", ps[i], models[m], s + 1, rc);
                    ok = 0;
                } else if (rc) {
                    printf("parallelism %d, %s model, seed %d: exit status %d (its figures count "
                           "anyway)\n", ps[i], models[m], s + 1, rc);
                    status = 1;
                }
            }
        if (!ok) {
            status = 1;
            continue;
        }
        printf("parallelism %d (%d task managers of 4 slots, one spare; %d records/s of 2 KB "
               "per source subtask; seeds 1 to %d)\n",
               ps[i], (ps[i] + 3) / 4 + 1, rate, seeds);
        printf("  %-30s %12s %12s %10s %16s\n", "figure (median of the seeds)", "fast", "simgrid",
               "ratio", "ratio per seed");
        for (int k = 0; k < F_N; k++) {
            double a[MAX_SEEDS], b[MAX_SEEDS], lo = INFINITY, hi = -INFINITY;
            int na = 0, nb = 0;
            for (int s = 0; s < seeds; s++) {
                if (f[0][s][k] >= 0)
                    a[na++] = f[0][s][k];
                if (f[1][s][k] >= 0)
                    b[nb++] = f[1][s][k];
                if (f[0][s][k] > 0 && f[1][s][k] >= 0) {
                    double r = f[1][s][k] / f[0][s][k];
                    lo = r < lo ? r : lo;
                    hi = r > hi ? r : hi;
                }
            }
            double ma = na ? median(a, na) : -1, mb = nb ? median(b, nb) : -1;
            char ra[32] = "-", rb[32] = "-", rr[32] = "-", rs[40] = "-";
            if (ma >= 0)
                snprintf(ra, sizeof(ra), "%.3f", ma * figs[k].scale);
            if (mb >= 0)
                snprintf(rb, sizeof(rb), "%.3f", mb * figs[k].scale);
            if (ma > 0 && mb >= 0)
                snprintf(rr, sizeof(rr), "%.3f", mb / ma);
            if (lo <= hi)
                snprintf(rs, sizeof(rs), "%.2f to %.2f", lo, hi);
            printf("  %-30s %12s %12s %10s %16s\n", figs[k].name, ra, rb, rr, rs);
        }
        fflush(stdout);
    }
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        status = 1;
    return status;
}
