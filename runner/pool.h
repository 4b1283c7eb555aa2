/*
 * pool.h - runs of `chandy` as child processes, N at a time: what
 * `chandy sweep`, `chandy fidelity` and the demo suite run their points
 * with.
 *
 * Each job is this same executable (/proc/self/exe) with the arguments
 * the caller gives, its standard output and error going to a log file,
 * standard input from /dev/null. Invariants: at most `jobs` children run
 * at once; every child started is waited for and reported exactly once
 * (done); a child still running after timeout_s seconds of wall-clock
 * time is killed and reported as timed out.
 */
#ifndef CK_POOL_H
#define CK_POOL_H

#include <stddef.h>

#define CK_POOL_MAX_ARGS 24

typedef struct ck_pool_ops {
    /* Job i's arguments (after the program name; NULL-terminated, at most
     * CK_POOL_MAX_ARGS) and its log file. Returns 0, or -1 to skip it. */
    int (*prepare)(void *ctx, size_t i, const char **argv, char *log, size_t loglen);
    /* Job i ended with wait status `status` after wall_s seconds. */
    void (*done)(void *ctx, size_t i, int status, double wall_s, int timed_out);
    /* Called between waits, about every 10 ms while children run (may be NULL). */
    void (*tick)(void *ctx);
} ck_pool_ops;

/* Wall-clock seconds since t (CLOCK_MONOTONIC): the runs' progress lines. */
struct timespec;
double ck_pool_since(const struct timespec *t);

/* Runs jobs 0..n-1, `jobs` at a time. Returns 0, or -1 when a child could
 * not be started (errno says why; the ones started are still waited for). */
int ck_pool_run(size_t n, int jobs, double timeout_s, const ck_pool_ops *ops, void *ctx);

#endif
