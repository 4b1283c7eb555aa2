/*
 * bench_scale.c - how the SimGrid backend's cost grows with the job.
 *
 * One job, source -> map -> keyBy -> count -> sink (two chained tasks,
 * source+map and count+sink: two subtasks per unit of parallelism), at
 * parallelism 16, 64, 256 and 1024 by default; task managers of 4 slots
 * and 2 cores; 1 000 records/s per source subtask, so the rate
 * grows with the job; 10 simulated seconds with a checkpoint every second.
 * Each point runs `chandy run` as a child process and prints subtasks,
 * hosts, records, simulated transfers, wall time, CPU time (user and
 * system: what the run cost one core, however loaded the machine), simulated seconds per
 * wall second, wall microseconds per record and peak memory (the child's
 * maximum resident set). A last line says how wall time per record grows
 * from the first point to the last that finished. Asserts nothing.
 *
 *   bench_scale [--limit SECONDS] [P...]   (default: 16 64 256 1024; a
 *                                            point over the limit, 1800 s
 *                                            by default, is stopped and
 *                                            the larger ones skipped)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "benchutil.h"

#define MAX_POINTS 16

static int write_scenario(const char *path, int p, int watermarks)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "{\n"
            "  \"name\": \"scale-%d\",\n"
            "  \"description\": \"bench_scale: parallelism %d, 1000 records/s per source subtask\",\n"
            "  \"seed\": 1,\n"
            "  \"workload\": {\"topic\": \"scale\", \"duration\": \"10 s\", \"rate\": %d,\n"
            "                \"partitions\": %d, \"keys\": 100000, \"record_bytes\": 100},\n"
            "  \"job\": {\"operators\": [\n"
            "    {\"name\": \"source\", \"type\": \"source\", \"parallelism\": %d},\n"
            "    {\"name\": \"map\", \"type\": \"map\", \"fn\": \"drop_payload\", \"parallelism\": %d},\n"
            "    {\"name\": \"count\", \"type\": \"aggregate\", \"fn\": \"count\", \"partition\": \"hash\","
            " \"parallelism\": %d},\n"
            "    {\"name\": \"sink\", \"type\": \"sink\", \"parallelism\": %d}\n"
            "  ]},\n"
            /* At parallelism 256 and up the default 128 mb of network memory
             * is too little for 4 slots of all-to-all channels (in Flink too:
             * "insufficient number of network buffers"): 1 gb holds 32768
             * segments, enough up to parallelism 1024. */
            "  \"config\": {\"taskmanager.numberOfTaskSlots\": 4,%s\n"
            "             \"taskmanager.memory.network.min\": \"1 gb\",\n"
            "             \"taskmanager.memory.network.max\": \"1 gb\",\n"
            "             \"execution.checkpointing.interval\": \"1 s\"}\n"
            "}\n",
            p, p, 1000 * p, p, p, p, p, p,
            watermarks ? "" : " \"pipeline.auto-watermark-interval\": 0,");
    return fclose(f) ? -1 : 0;
}

/*
 * Is the simulator's cost linear in the simulated work? Fits
 * wall = a * records + b * messages (least squares, no constant) over the
 * points and prints a, b and the largest relative miss: when every point
 * lies near the fit, the cost per unit of work does not grow with the job.
 */
static void fit_report(const double *rec, const double *msg, const double *wall, int n)
{
    if (n < 3)
        return;
    /* Relative least squares (each point weighted by 1/wall^2), so that
     * the small points count as much as the large ones. */
    double srr = 0, srm = 0, smm = 0, srw = 0, smw = 0;
    for (int i = 0; i < n; i++) {
        double w = wall[i] > 0 ? 1 / (wall[i] * wall[i]) : 0;
        srr += w * rec[i] * rec[i];
        srm += w * rec[i] * msg[i];
        smm += w * msg[i] * msg[i];
        srw += w * rec[i] * wall[i];
        smw += w * msg[i] * wall[i];
    }
    double det = srr * smm - srm * srm;
    if (det == 0)
        return;
    double a = (srw * smm - smw * srm) / det, b = (smw * srr - srw * srm) / det;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double miss = wall[i] > 0 ? (a * rec[i] + b * msg[i] - wall[i]) / wall[i] : 0;
        if (miss < 0)
            miss = -miss;
        if (miss > worst)
            worst = miss;
    }
    printf("fit: wall s = %.2f us x records + %.2f us x messages; the farthest point is %.0f %% "
           "off it\n",
           a * 1e6, b * 1e6, worst * 100);
}

/* The CPU time (user and system) a child used: what it costs on one
 * core, whatever else the machine runs. */
static double cpu_s(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* Runs chandy with argv; *rss_kb: the child's peak resident set. Returns
 * its exit status, or -1 when it was stopped at the limit. */
static int run_child(char *const argv[], double limit_s, long *rss_kb, double *wall, double *cpu)
{
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -2;
    if (pid == 0) {
        int null = open("/dev/null", 1);
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
            *rss_kb = ru.ru_maxrss;
            *wall = bench_now_s() - t0;
            *cpu = cpu_s(&ru);
            return -1;
        }
        usleep(20000);
    }
    *wall = bench_now_s() - t0;
    *rss_kb = ru.ru_maxrss;
    *cpu = cpu_s(&ru);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
}

int main(int argc, char **argv)
{
    int ps[MAX_POINTS], np = 0, watermarks = 1;
    double limit = 1800;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            limit = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--no-watermarks")) {
            watermarks = 0;
        } else if (np < MAX_POINTS && atoi(argv[i]) > 0) {
            ps[np++] = atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: bench_scale [--limit SECONDS] [--no-watermarks] "
                            "[PARALLELISM...]\n");
            return 2;
        }
    }
    if (np == 0) {
        static const int def[] = {16, 64, 256, 1024};
        for (int i = 0; i < 4; i++)
            ps[np++] = def[i];
    }
    char dir[200];
    if (bench_tmpdir(dir, sizeof(dir))) {
        perror("bench_scale: a scratch directory");
        return 1;
    }
    printf("%-11s %8s %5s %9s %11s %7s %7s %7s %10s %8s %8s %7s %9s %10s %8s\n", "parallelism",
           "subtasks", "hosts", "records", "messages", "msg/rec", "buf/rec", "crd/rec",
           "transfers", "wall s", "cpu s", "sim/wall", "us/record", "us/message", "peak MB");
    double fit_rec[MAX_POINTS], fit_msg[MAX_POINTS], fit_wall[MAX_POINTS];
    int nfit = 0;
    double first_us = -1, last_us = -1, first_um = -1, last_um = -1;
    int first_p = 0, last_p = 0;
    for (int i = 0; i < np; i++) {
        char sc[300], out[300], runjson[340];
        snprintf(sc, sizeof(sc), "%s/scale-%d.json", dir, ps[i]);
        snprintf(out, sizeof(out), "%s/out-%d", dir, ps[i]);
        snprintf(runjson, sizeof(runjson), "%s/run.json", out);
        if (write_scenario(sc, ps[i], watermarks)) {
            perror(sc);
            return 1;
        }
        char *args[] = {(char *)CHANDY_BIN, "run", sc, "--out", out, "--quiet", NULL};
        long rss = 0;
        double wall = 0, cpu = 0;
        int rc = run_child(args, limit, &rss, &wall, &cpu);
        if (rc == -1) {
            printf("%-11d stopped after %.0f s (--limit), peak %.0f MB; larger points skipped\n",
                   ps[i], wall, rss / 1024.0);
            break;
        }
        cJSON *run = bench_read_json(runjson);
        if (!run) {
            printf("%-11d chandy exited %d without run.json\n", ps[i], rc);
            break;
        }
        double subtasks = bench_field(run, "job", "subtasks");
        double hosts = bench_field(run, "job", "taskmanagers");
        double records = bench_field(run, "records_in", NULL);
        double messages = bench_field(run, "network", "messages");
        double data = bench_field(run, "network", "data_messages");
        double credit = bench_field(run, "network", "credit_messages");
        double transfers = bench_field(run, "network", "transfers");
        double sim = bench_field(run, "sim_time_s", NULL);
        double us = records > 0 ? wall * 1e6 / records : 0;
        double um = messages > 0 ? wall * 1e6 / messages : 0;
        double per = records > 0 ? 1 / records : 0;
        printf("%-11d %8.0f %5.0f %9.0f %11.0f %7.2f %7.2f %7.2f %10.0f %8.2f %8.2f %7.2f %9.2f "
               "%10.3f %8.0f%s\n",
               ps[i], subtasks, hosts, records, messages, messages * per, data * per,
               credit * per, transfers, wall, cpu, sim / wall, us, um, rss / 1024.0,
               rc ? " (exit status not 0)" : "");
        fit_rec[nfit] = records;
        fit_msg[nfit] = messages;
        fit_wall[nfit++] = wall;
        fflush(stdout);
        cJSON_Delete(run);
        if (first_us < 0) {
            first_us = us;
            first_p = ps[i];
        }
        if (first_um < 0)
            first_um = um;
        last_us = us;
        last_um = um;
        last_p = ps[i];
    }
    /* Records per second grow with the job, and so does every channel's
     * traffic that is not records: a watermark and a flush per channel and
     * interval, a credit per buffer. At parallelism P a keyBy has P x P
     * channels, so messages per record grow with P; the simulator's cost
     * per message is what tells whether it scales. */
    if (first_us > 0 && last_p != first_p)
        printf("wall time per record grows %.1fx and per simulated message %.1fx from "
               "parallelism %d to %d\n",
               last_us / first_us, first_um > 0 ? last_um / first_um : 0, first_p, last_p);
    fit_report(fit_rec, fit_msg, fit_wall, nfit);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
