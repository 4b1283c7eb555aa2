/*
 * buggify.h - faults inside the processes, seeded (FoundationDB's
 * BUGGIFY): a host's store operations that fail with an I/O error
 * (store_errors), its store completions that come late (store_delay), an
 * allocation at a named point of the engine that fails (alloc_failure).
 *
 * The backend says which faults of the timeline are in force
 * (ck_buggify_set, as it starts and ends them: both backends through the
 * fault plan's timeline); the engine's platform, written once for both
 * backends (bnode.c), asks at each store operation, each store completion
 * and each allocation point whether this one is hit. Each host draws from
 * streams of its own of the run's seed, one per kind, and only while a
 * fault of that kind is in force on it: under SimGrid, where a host's
 * operations come in one order, the same run and seed hit the same
 * operations, and a run without such faults draws nothing.
 *
 * Hosts are numbered as in faults.h: task managers 0..ntm-1, the job
 * manager ntm (a platform's host -1).
 *
 * Invariants: on[i] is set only for faults of the three kinds, and non
 * counts them; a fault in force acts on the operations of its host (every
 * host's when its host is -1); hits[i] counts the operations fault i
 * failed or delayed in this process, and hit() hears of each.
 */
#ifndef CK_BUGGIFY_H
#define CK_BUGGIFY_H

#include <stdint.h>

#include "faults.h"
#include "rng.h"

typedef struct ck_buggify {
    const ck_fault *faults; /* the timeline */
    int n;
    int ntm;
    uint8_t *on;    /* per fault: in force */
    int non;
    uint64_t *hits; /* per fault */
    ck_rng *rng;    /* per host (0..ntm) and kind: store_errors, store_delay, alloc_failure */
    /* Optional: hears of each hit (the socket backend's task managers'
     * processes tell the job manager's, which keeps run.json's counts). */
    void (*hit)(void *ctx, int fault);
    void *ctx;
} ck_buggify;

/* For the timeline faults[0..n) of a cluster of ntm task managers, drawing
 * from the run's seed. 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_buggify_init(ck_buggify *b, const ck_fault *faults, int n, int ntm, uint64_t seed);
void ck_buggify_free(ck_buggify *b);

/* Fault i comes into force (on) or out of it; other kinds are ignored. */
void ck_buggify_set(ck_buggify *b, int i, int on);

/* Whether a fault is in force at all: a cheap test before the others. */
static inline int ck_buggify_any(const ck_buggify *b)
{
    return b && b->non > 0;
}

/* Whether store operation op (CK_STORE_OP_*) of host `host` (-1: the job
 * manager's) fails now, with an I/O error: the fault that fails it, or -1. */
int ck_buggify_store_error(ck_buggify *b, int host, int op);

/* How late a store completion of host `host` comes: 0, or a delay drawn
 * up to the `delay` of a store_delay in force (the longest of several). */
ck_time ck_buggify_store_delay(ck_buggify *b, int host);

/* Whether the allocation at point (CK_POINT_*) of host `host` fails now. */
int ck_buggify_alloc(ck_buggify *b, int host, int point);

#endif
