/*
 * bench_swarm.c - how many seeds a minute does `chandy swarm` get through?
 * Runs scenarios/swarm-crash.json over a seed range in safety mode and
 * prints the seeds per minute, the violations, and the wall-clock time of
 * a seed; asserts nothing.
 *
 *   bench_swarm [SEEDS [JOBS]]    (default 40 seeds, 2 jobs)
 */
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 40;
    int jobs = argc > 2 ? atoi(argv[2]) : 2;
    if (seeds < 1 || jobs < 1) {
        fprintf(stderr, "usage: bench_swarm [SEEDS [JOBS]]\n");
        return 2;
    }
    char dir[200];
    if (bench_tmpdir(dir, sizeof(dir))) {
        perror("bench_swarm: a scratch directory");
        return 1;
    }
    char args[600];
    snprintf(args, sizeof(args),
             "swarm %s/scenarios/swarm-crash.json --seeds 1..%d --jobs %d --out %s/swarm 2> /dev/null",
             CHANDY_SOURCE_DIR, seeds, jobs, dir);
    double t0 = bench_now_s();
    int rc = bench_chandy(args);
    double wall = bench_now_s() - t0;
    char path[300];
    snprintf(path, sizeof(path), "%s/swarm/swarm.json", dir);
    cJSON *sw = bench_read_json(path);
    if (!sw) {
        fprintf(stderr, "bench_swarm: no swarm.json (chandy exited %d)\n", rc);
        return 1;
    }
    int runs = cJSON_GetObjectItem(sw, "runs")->valueint;
    int bad = cJSON_GetObjectItem(sw, "violations")->valueint;
    printf("swarm-crash, safety, %d seeds, --jobs %d: %.1f seeds/min (%.2f s wall a seed, "
           "%d violation%s)\n",
           runs, jobs, runs / wall * 60.0, wall * jobs / runs, bad, bad == 1 ? "" : "s");
    cJSON_Delete(sw);
    snprintf(args, sizeof(args), "rm -rf %s", dir);
    return system(args) == 0 ? 0 : 1;
}
