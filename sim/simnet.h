/*
 * simnet.h - which model times the job's transfers between hosts on a
 * SimGrid platform, and the rule that decides it.
 *
 * Two models (cluster.transfer_model, docs/SCENARIOS.md):
 *   - fast: chandy's model of the hosts' own links (link_transfer in
 *     sim/simgrid.c): each direction of a host's link carries one batch at
 *     a time, in order, cut-through into the receiver's link, and the
 *     batch arrives the route's latency after its last byte. It knows a
 *     host's own links and nothing else;
 *   - simgrid: every batch is a SimGrid transfer over the platform's route
 *     between the two hosts, timed by SimGrid's flow model (max-min
 *     sharing of every link on the route, the network model's factors,
 *     its TCP window bound).
 *
 * The fast model honours a platform (ck_simnet_check says "exact") when
 * it limits every transfer between two of the job's hosts by the same
 * links, bandwidths and latency as SimGrid would:
 *   1. every route a -> b between job hosts crosses a link of a's own (a
 *      SHARED link that only routes from a cross, and that every route
 *      from a to another job host crosses) and one of b's own (likewise,
 *      into b). A host's own bandwidth up is the least of its own up
 *      links' (down: its down links'). A split-duplex link's halves are
 *      SHARED links of their own;
 *   2. any other link on such a route cannot bind: a FATPIPE link (it
 *      limits each transfer by itself) is at least as fast as the own
 *      links of every route through it (min(up a, down b)); a SHARED link
 *      (every transfer through it shares it) is at least as fast as all
 *      that its sources' own links could send into it together, or all
 *      that its destinations' own links could take from it, whichever is
 *      less (the store's routes through it count too: its transfers are
 *      SimGrid's in either model). Any other policy (WIFI, NONLINEAR)
 *      is not honoured;
 *   3. SimGrid's TCP window (network/TCP-gamma) does not bind: gamma /
 *      (2 x the route's latency) is at least min(up a, down b);
 *   4. the network model is CM02 (LV08 corrects every transfer's latency
 *      and bandwidth by factors, and weights its share of a link by its
 *      route's latency) and the platform file changes no link over time
 *      (bandwidth_file, latency_file, state_file, trace_connect) and sets
 *      no SimGrid configuration of its own (<config>): sim/simgrid.c
 *      checks the model, ck_simnet_check_file the file's text.
 * Links that only the store's routes cross do not matter: store transfers
 * are SimGrid transfers in either model. What still differs between the
 * two on a platform the rule accepts is how concurrent transfers share a
 * link (one batch at a time in order, against max-min fair shares), the
 * acknowledgements SimGrid charges on the reverse route (5 % of a
 * transfer's rate: network/crosstraffic), and that the fast model's links
 * do not see the store's transfers on a host's own link: bench_netmodel
 * measures what that changes.
 *
 * The platform chandy generates (sim/simplatform.c) is a star of each
 * host's own split-duplex link into a non-blocking switch: rules 1 and 2
 * hold by construction, and sim/simgrid.c checks only 3 and 4 for it
 * (tests/test_simnet.c checks that the whole rule agrees).
 */
#ifndef CK_SIMNET_H
#define CK_SIMNET_H

#include <stddef.h>

#include <simgrid/forward.h>

/* cluster.transfer_model */
typedef enum ck_simnet_model {
    CK_SIMNET_AUTO,    /* fast where ck_simnet_check says it is exact, else simgrid */
    CK_SIMNET_FAST,    /* refused where it is not exact */
    CK_SIMNET_SIMGRID,
} ck_simnet_model;

/* A link's sharing policy, as the rule sees it. */
typedef enum ck_simnet_policy {
    CK_SIMNET_SHARED,  /* its bandwidth is shared by the transfers crossing it */
    CK_SIMNET_FATPIPE, /* each transfer may use all of its bandwidth */
    CK_SIMNET_OTHER,   /* anything else (WIFI, NONLINEAR) */
} ck_simnet_policy;

typedef struct ck_simnet_link {
    double bw;   /* bytes per second */
    int policy;  /* ck_simnet_policy */
    const char *name;
} ck_simnet_link;

/*
 * A platform as the rule reads it. Hosts 0 .. njob-1 are the job's (they
 * exchange its traffic: the task managers and the job manager); host njob
 * is the store. route(ctx, a, b, links, cap, &lat) puts the indices of the
 * links of the route from a to b (a != b) into links[0..cap) and their
 * latency in lat (seconds); it returns how many links the route has (more
 * than cap: only cap were written), or -1 when it cannot tell.
 */
typedef struct ck_simnet_topo {
    int njob;
    const char *const *names; /* njob + 1 host names */
    int nlinks;
    const ck_simnet_link *links;
    int (*route)(void *ctx, int a, int b, int *links, int cap, double *lat);
    void *ctx;
    double tcp_gamma; /* bytes (0: no window bound) */
} ck_simnet_topo;

/* How far a route may go (longer ones are not honoured by the fast model). */
#define CK_SIMNET_ROUTE_MAX 64

/*
 * Decides whether the fast model honours topology t (rules 1 to 3 above).
 * Returns 1 when it does, with each job host's own bandwidth up and down
 * in up[0..njob) and down[0..njob) (either may be NULL); 0 when it does
 * not, with the first thing it cannot honour in why (one line); or
 * CK_ENOMEM.
 */
int ck_simnet_check(const ck_simnet_topo *t, double *up, double *down, char *why, size_t whylen);

/*
 * The same on the platform SimGrid loaded: the job's hosts are hosts[0 ..
 * njob), the store `store`. Reads the routes with sg_host_get_route, a
 * pair of hosts at a time, twice (1 025 hosts took 3.3 s on a shared
 * machine; the time grows with the square of the hosts). Returns as
 * ck_simnet_check.
 */
int ck_simnet_check_platform(sg_host_t *hosts, int njob, sg_host_t store, double *up,
                             double *down, char *why, size_t whylen);

/*
 * Rule 4 on the platform file's text: 0 when the file changes no link
 * over time and sets no configuration; 1 with why said; -1 when it cannot
 * be read (why says so).
 */
int ck_simnet_check_file(const char *path, char *why, size_t whylen);

/* The model's name in scenarios and run.json: "auto", "fast", "simgrid". */
const char *ck_simnet_model_name(ck_simnet_model m);

#endif
