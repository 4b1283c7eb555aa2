/*
 * routes.h - where the subtasks of each attempt run: a host index per
 * global subtask, one table per attempt that the job manager deployed
 * (platform.h set_routes). Both backends route a message to a subtask
 * that is not deployed yet (or was not deployed here) by it.
 *
 * With region failover several attempts run at once: the regions that
 * did not fail keep theirs, and a restarted region's attempt deploys only
 * its own subtasks (CK_HOST_NONE for the others). So there is a table per
 * attempt, not one for the latest.
 *
 * Invariants (ck_routes_check): (1) an attempt's table is set once (a
 * second set_routes for it changes nothing): no attempt has two; (2)
 * `newest` is the greatest attempt set, -1 before any.
 */
#ifndef CK_ROUTES_H
#define CK_ROUTES_H

#include <stdint.h>

#include "graph.h"
#include "invariant.h"
#include "platform.h"

typedef struct ck_route {
    uint32_t attempt;
    int gen;         /* the graph's generation it runs (graph.h) */
    uint32_t n;      /* that generation's subtasks */
    uint16_t *hosts; /* per global subtask, CK_HOST_NONE: not in the attempt */
} ck_route;

typedef struct ck_routes {
    ck_route *v;
    int n, cap;
    uint32_t nsubtasks; /* the most an attempt has: the graphs' ep_stride */
    int64_t newest;
} ck_routes;

void ck_routes_init(ck_routes *rt, uint32_t nsubtasks);
void ck_routes_free(ck_routes *rt);

/* Records attempt's table, of generation gen (hosts: n <= nsubtasks
 * entries). 0, CK_EINVAL (too long) or CK_ENOMEM. */
CK_MUST_CHECK
int ck_routes_set(ck_routes *rt, uint32_t attempt, int gen, uint32_t n, const uint16_t *hosts);

/* The generation attempt runs, or -1 when it has no table. */
int ck_routes_gen(const ck_routes *rt, uint32_t attempt);

/* The host of subtask endpoint ep, or -1: not a subtask's endpoint, its
 * attempt not routed, or the attempt does not deploy it. */
int ck_routes_host(const ck_routes *rt, const ck_graph *g, uint32_t ep);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_routes_check(const ck_routes *rt, ck_inv *v);

#endif
