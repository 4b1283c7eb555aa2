#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct kid {
    pid_t pid;
    size_t index;
    struct timespec start;
    int timed_out;
} kid;

double ck_pool_since(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static pid_t spawn(const char **argv, const char *log)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int nul = open("/dev/null", O_RDONLY);
    if (fd < 0 || nul < 0)
        _exit(127);
    dup2(nul, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    close(nul);
    const char *args[CK_POOL_MAX_ARGS + 2] = {"chandy"};
    for (int i = 0; argv[i] && i < CK_POOL_MAX_ARGS; i++)
        args[i + 1] = argv[i];
    execv("/proc/self/exe", (char *const *)args);
    fprintf(stderr, "chandy: cannot run /proc/self/exe: %s\n", strerror(errno));
    _exit(127);
}

int ck_pool_run(size_t n, int jobs, double timeout_s, const ck_pool_ops *ops, void *ctx)
{
    if (jobs < 1)
        jobs = 1;
    kid *kids = calloc((size_t)jobs, sizeof(*kids));
    if (!kids)
        return -1;
    size_t next = 0;
    int running = 0, rc = 0;
    while (next < n || running > 0) {
        while (!rc && running < jobs && next < n) {
            const char *argv[CK_POOL_MAX_ARGS + 1] = {0};
            char log[1024];
            size_t i = next++;
            if (ops->prepare(ctx, i, argv, log, sizeof(log)))
                continue;
            kid *k = NULL;
            for (int j = 0; j < jobs && !k; j++)
                if (!kids[j].pid)
                    k = &kids[j];
            k->index = i;
            k->timed_out = 0;
            clock_gettime(CLOCK_MONOTONIC, &k->start);
            k->pid = spawn(argv, log);
            if (k->pid < 0) {
                k->pid = 0;
                rc = -1;
                break;
            }
            running++;
        }
        if (running == 0)
            break;
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid < 0 && errno != EINTR)
            break;
        if (pid <= 0) {
            for (int j = 0; j < jobs; j++)
                if (kids[j].pid && !kids[j].timed_out && timeout_s > 0 &&
                    ck_pool_since(&kids[j].start) > timeout_s) {
                    kill(kids[j].pid, SIGKILL);
                    kids[j].timed_out = 1;
                }
            if (ops->tick)
                ops->tick(ctx);
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
            continue;
        }
        for (int j = 0; j < jobs; j++)
            if (kids[j].pid == pid) {
                kids[j].pid = 0;
                running--;
                ops->done(ctx, kids[j].index, st, ck_pool_since(&kids[j].start), kids[j].timed_out);
            }
        if (rc)
            break;
    }
    /* Stopped early (a child could not start): wait for the rest. */
    for (int j = 0; j < jobs; j++)
        if (kids[j].pid) {
            int st;
            if (waitpid(kids[j].pid, &st, 0) == kids[j].pid)
                ops->done(ctx, kids[j].index, st, ck_pool_since(&kids[j].start), kids[j].timed_out);
        }
    free(kids);
    return rc;
}
