/*
 * simgrid.c - the SimGrid backend: the endpoints of the job (the job
 * manager, the task managers, each subtask) are sans-I/O nodes (bnode.h)
 * that one scheduler actor runs, host by host, in simulated time
 * (sched_main; backend/drive.h for one host's nodes).
 *
 * The network is shaped like a Flink cluster's (backend/transport.h):
 *   - between two hosts, one connection per direction carries the frames
 *     of every channel and control message between them, in order. What
 *     is queued on it leaves as one simulated transfer, and while that is
 *     on the wire what is sent next queues behind it and leaves together
 *     when it arrives, as over TCP: transfers grow with host pairs and
 *     time, not with channels and records;
 *   - a message between two endpoints of one host is handed over in
 *     memory (Flink's local channels): no transfer;
 *   - a host's pass hands the frames of the batches that arrived to the
 *     nodes' inboxes, steps the nodes, then starts a transfer on each of
 *     the host's connections with what its nodes queued (so what they send
 *     at one instant leaves together); a transfer's time comes from one
 *     of two models (sim/simnet.h says which a platform allows): a model
 *     of the hosts' own links (fast: link_transfer, each direction
 *     carries one batch at a time at its bandwidth, plus the route's
 *     latency), whose cost does not grow with the number of flows sharing
 *     links, or SimGrid's flow model over the platform's route (simgrid:
 *     transfer_main, a SimGrid transfer from host to host);
 *   - store transfers are SimGrid transfers over the store host's link
 *     and disk; a receiver daemon per host owns the host's mailbox, where
 *     the store's answers arrive;
 *   - faults act on the connections: a cut holds what would cross it, a
 *     slow link delays what is queued by the latency it adds and slows its
 *     bandwidth by its factor, a crash breaks every connection of the
 *     host and loses what they held.
 *
 * Messages are the engine's real bytes, framed as over sockets; the
 * simulated size of a transfer is their real length. CPU is virtual time
 * on the host's cores (drive.h); store uploads and downloads travel over
 * the store host's link and its disk, and the bytes are real files under
 * <out>/store/.
 *
 * Everything runs in one OS thread, in SimGrid's deterministic order and
 * the scheduler's (by time, then host): no wall clock, no unseeded
 * randomness.
 */
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/disk.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "bnode.h"
#include "error.h"
#include "drive.h"
#include "faultplan.h"
#include "netframe.h"
#include "routes.h"
#include "sgshim.h"
#include "simgrid.h"
#include "simnet.h"
#include "simplatform.h"
#include "sinkfs.h"
#include "storefs.h"
#include "taskmanager.h"
#include "transport.h"

enum { ITEM_MSG, ITEM_DONE, ITEM_BATCH };

/* The most transfers between hosts SimGrid's flow model may need at once
 * (one per connection, so the hosts' ordered pairs): each keeps an actor,
 * whose stack and guard page take two of the process's memory maps
 * (vm.max_map_count, 65 530 by default); a run that could need more is
 * refused (choose_transfer_model). */
#define SG_TRANSFERS_MAX 24000

/* What a sink subtask's writes to its external system may gather before
 * they reach its file (io/sinkfs.h): 2 MB at parallelism 128. */
#define SINK_HOLD ((size_t)16 << 10)

typedef struct item {
    struct item *next;
    /* every item not freed yet, in its world (ck_sim.live): a run stopped at
     * its time limit leaves transfers SimGrid never delivers nor frees */
    struct item *live_prev, *live_next;
    struct ck_sim *w;
    int kind;
    uint32_t src, dst;  /* endpoints; for a batch, hosts */
    uint32_t gen;       /* a batch: its connection's generation... */
    ck_time due;        /* ...and when it arrives */
    struct sim_node *to; /* a store answer: the node it is for */
    uint8_t *data;
    size_t len;
    uint64_t token;
    int status;
} item;

typedef struct ck_sim sim_world;

/* One direction of the connection between two network hosts. */
typedef struct sim_conn {
    ck_tp_out tx;    /* what waits to leave (transport.h) */
    int from, to;
    int busy;        /* a transfer of it is on the wire */
    uint32_t gen;    /* bumped when it breaks: an older transfer is dropped */
    ck_time lat;     /* the route's latency (the fast model's; -1: not read yet) */
    int listed;      /* on its host's list of connections to look at */
    struct sim_conn *next_listed;
} sim_conn;

/* A network host (task managers 0..ntm-1, the job manager ntm). */
typedef struct sim_host {
    struct ck_sim *w;
    sg_host_t host;    /* its SimGrid host */
    char mbname[32];
    sg_mailbox_t mb;   /* what arrives on it: the store's answers */
    sim_conn *list;    /* connections with bytes waiting, not yet on the wire */
    /* its own link, as the fast model uses it: bandwidth each way
     * (bytes/s, as the platform declares it), and when each direction is
     * next free */
    double bw_up, bw_down;
    ck_time up_free, down_free;
    item *arrivals, *arrivals_tail; /* batches on their way here, in order of arrival */
    ck_netframe rx;    /* frames cut out of the batches that arrive */
    int up;            /* it runs (its receiver is there) */
    unsigned incarnation; /* how many times it was started */
    /* the nodes it runs; the host's cores, and background work finishing
     * on them */
    struct sim_node *nodes, *nodes_tail;
    ck_bhost *bh;      /* its cores and background work (bnode.h) */
    /* when the scheduler next runs a pass of it (CK_TIME_NEVER: nothing to
     * do), and its place in the scheduler's heap (-1: not there) */
    ck_time due;
    int heap_i;
    /* during its own pass: wishes made meanwhile (a node posted to one the
     * pass visited already), applied when the pass ends */
    int in_pass;
    ck_time want;
} sim_host;

typedef struct sim_node {
    ck_bnode b;       /* first member: a ck_platform * is a sim_node * (bnode.h);
                       * b.d.dead: stopped or crashed, its mail is dropped */
    sim_world *w;
    int ends_run;
    int host_index;   /* task manager index, -1 for others */
    int net_host;     /* host in the network: task managers 0..ntm-1, jm ntm */
    sg_host_t host;
    int on_host;      /* on its host's list of nodes to drive */
    struct sim_node *host_next; /* the nodes of its host, in the order its passes step them */
    struct sim_node *all_next;  /* every node ever made, for teardown */
} sim_node;

struct ck_sim {
    sim_node **map; /* endpoint -> current node */
    uint32_t map_cap, map_n;
    sim_node *all;
    sg_host_t store_host;
    sg_disk_t store_disk;
    ck_time disk_free[2]; /* the store's disk reads, writes until then (disk_io) */
    char store_dir[600];
    char local_dir[620]; /* beside the store: <run>/local */
    uint64_t next_id;
    ck_sinkfs sinks;     /* the sinks' external system: files (io/sinkfs.h) */
    char sink_error[200]; /* the first failed write to it, or "" */
    ck_bworld bw;        /* what its nodes share (bnode.h); bw.sinks once open */
    ck_msgcount msgs;
    uint64_t transfers;
    /* the network: hosts, and connections per ordered pair (nnet * nnet) */
    sim_host *hosts;
    int nnet;
    /* what times transfers between hosts: SimGrid's flow model (1), or the
     * fast model (0), with each network host's own bandwidth up and down
     * as ck_simnet_check read them (NULL: from the links named after the
     * host, as on the generated platform) */
    int sg_net;
    double *own_up, *own_down;
    int nown;
    sim_conn **conns;
    int conns_n;     /* the side of the conns matrix */
    /* messages for endpoints that do not exist yet, in order */
    item *limbo, *limbo_tail;
    /* a job run */
    const ck_job_env *env;
    ck_job_env *envs; /* per generation of the job's graph (ck_backend_envs) */
    const ck_config *cfg;
    double local_disk_bw; /* cluster.local_disk */
    int ntm;
    sg_host_t *tm_hosts;
    /* a task manager's host is going down or is down: set before the host
     * is turned off, since other actors run while that takes effect */
    uint8_t *tm_down;
    /* the timeline and the conditions in force (backend/faultplan.h;
     * plan.cut is NULL without faults); heal wakes store transfers */
    ck_plan plan;
    ck_buggify bug;      /* the faults inside the processes (bw.bug once set) */
    sg_sem_t heal;       /* released once per waiter when a cut heals */
    int heal_waiters;
    /* where each attempt's subtasks run, for endpoints not deployed yet */
    ck_routes routes;
    /* the fault injector's state: freed after the simulation, because the
     * injector is a daemon that the end of the job may kill while it sleeps */
    struct injector *injector;
    item *live; /* every item not freed yet (item_new) */
    /* whether the run was stopped at its limit of simulated time (limit_ns) */
    int reached_limit;
    sg_sem_t inj_wake; /* the injector waits on it for moments (destroyed with the world) */
    /* the scheduler (sched_main): its clock, the hosts by when they next
     * want a pass, its wake-up, and what lets it run ahead of SimGrid's
     * clock (see there) */
    ck_time now;
    int *heap, heap_n;
    sg_sem_t wake;
    int woken;        /* wake was released since the scheduler last looked */
    int in_sched;     /* the scheduler actor is the one running */
    int poke;         /* a SimGrid actor was made ready: let it run before going on */
    int sg_live;      /* store actors and store answers on their way */
    ck_time inj_next; /* the injector sleeps until then (CK_TIME_NEVER: until a moment) */
    ck_time limit_ns; /* the time limit's actor ends the run then */
};

static void watch_send(sim_world *w, uint32_t src, const uint8_t *msg, size_t len);
static void moment(sim_world *w, ck_moment m, uint64_t id, int has_id);

static inline ck_time sim_now_ns(void)
{
    return (ck_time)llround(simgrid_get_clock() * 1e9);
}

/* The time of whoever runs: the scheduler's clock, which may be ahead of
 * SimGrid's (sched_main), or SimGrid's for its other actors. */
static inline ck_time cur_now(const sim_world *w)
{
    return w->in_sched ? w->now : sim_now_ns();
}

/* Before the scheduler, running ahead of SimGrid's clock, starts or wakes
 * anything in SimGrid, SimGrid's clock catches up with its own (nothing
 * else in SimGrid is due before: sched_main). */
static void catch_up(sim_world *w)
{
    if (w->in_sched && sim_now_ns() < w->now)
        sg_actor_sleep_until((double)w->now / 1e9);
}

/*
 * Items a simulation left behind when its world was freed (ck_sim_del):
 * SimGrid frees the transfers still queued in mailboxes when it shuts down
 * at exit (through item_free); those it never frees (transfers cut short by
 * the time limit's kill) are freed after that (free_orphans). SimGrid runs
 * one simulation per process, so this list is the process's.
 */
static item *orphans;

/* The list an item is on: its world's, or the orphans'. */
static item **live_list(item *it)
{
    return it->w ? &it->w->live : &orphans;
}

/* A new item, init with its links; NULL when out of memory. */
static item *item_new(sim_world *w, item init)
{
    item *it = malloc(sizeof(*it));
    if (!it)
        return NULL;
    *it = init;
    it->w = w;
    if (it->kind == ITEM_DONE)
        w->sg_live++; /* a store answer on its way (sched_main) */
    it->live_prev = NULL;
    it->live_next = w->live;
    if (w->live)
        w->live->live_prev = it;
    w->live = it;
    return it;
}

/* Takes an item off the list it is on. */
static void item_unlink(item *it)
{
    if (it->kind == ITEM_DONE && it->w)
        it->w->sg_live--;
    if (it->live_prev)
        it->live_prev->live_next = it->live_next;
    else
        *live_list(it) = it->live_next;
    if (it->live_next)
        it->live_next->live_prev = it->live_prev;
}

/* Frees an item but not its data (handed on). */
static void item_release(item *it)
{
    item_unlink(it);
    free(it);
}

/* Frees an item and its data (also SimGrid's clean-up of a detached transfer). */
static void item_free(void *p)
{
    item *it = p;
    if (it) {
        free(it->data);
        item_release(it);
    }
}

/* ---- the endpoint map ---------------------------------------------------------------- */

static inline uint32_t ep_hash(uint32_t ep)
{
    return ep * 2654435761u;
}

static sim_node *node_of(const sim_world *w, uint32_t ep)
{
    if (!w->map_cap)
        return NULL;
    for (uint32_t j = ep_hash(ep) & (w->map_cap - 1);; j = (j + 1) & (w->map_cap - 1)) {
        sim_node *n = w->map[j];
        if (!n)
            return NULL;
        if (n->b.plat.endpoint == ep)
            return n;
    }
}

static int map_put(sim_world *w, sim_node *n)
{
    if ((w->map_n + 1) * 2 > w->map_cap) {
        uint32_t ncap = w->map_cap ? w->map_cap * 2 : 64;
        sim_node **nm = calloc(ncap, sizeof(*nm));
        if (!nm)
            return CK_ENOMEM;
        for (uint32_t i = 0; i < w->map_cap; i++) {
            if (!w->map[i])
                continue;
            uint32_t j = ep_hash(w->map[i]->b.plat.endpoint) & (ncap - 1);
            while (nm[j])
                j = (j + 1) & (ncap - 1);
            nm[j] = w->map[i];
        }
        free(w->map);
        w->map = nm;
        w->map_cap = ncap;
    }
    for (uint32_t j = ep_hash(n->b.plat.endpoint) & (w->map_cap - 1);; j = (j + 1) & (w->map_cap - 1)) {
        if (!w->map[j]) {
            w->map[j] = n;
            w->map_n++;
            return CK_OK;
        }
        if (w->map[j]->b.plat.endpoint == n->b.plat.endpoint) {
            w->map[j] = n; /* a new incarnation (a restarted task manager) */
            return CK_OK;
        }
    }
}

/* ---- inboxes ------------------------------------------------------------------ */

/* ---- the scheduler's heap of hosts, by when they next want a pass ---------------- */

static int host_before(const sim_world *w, int a, int b)
{
    ck_time da = w->hosts[a].due, db = w->hosts[b].due;
    return da < db || (da == db && a < b);
}

static void heap_put(sim_world *w, int i, int h)
{
    w->heap[i] = h;
    w->hosts[h].heap_i = i;
}

static void heap_up(sim_world *w, int i)
{
    int h = w->heap[i];
    while (i > 0 && host_before(w, h, w->heap[(i - 1) / 2])) {
        heap_put(w, i, w->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_put(w, i, h);
}

static void heap_down(sim_world *w, int i)
{
    int h = w->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= w->heap_n)
            break;
        if (c + 1 < w->heap_n && host_before(w, w->heap[c + 1], w->heap[c]))
            c++;
        if (!host_before(w, w->heap[c], h))
            break;
        heap_put(w, i, w->heap[c]);
        i = c;
    }
    heap_put(w, i, h);
}

/* Host h next wants a pass at `due` (CK_TIME_NEVER: none). The heap has
 * room for every host (host_get). */
static void host_set_due(sim_world *w, int h, ck_time due)
{
    sim_host *hs = &w->hosts[h];
    int i = hs->heap_i;
    hs->due = due;
    if (due == CK_TIME_NEVER) {
        if (i < 0)
            return;
        hs->heap_i = -1;
        int last = w->heap[--w->heap_n];
        if (i < w->heap_n) {
            heap_put(w, i, last);
            heap_up(w, i);
            heap_down(w, w->hosts[last].heap_i);
        }
        return;
    }
    if (i < 0) {
        i = w->heap_n++;
        heap_put(w, i, h);
    }
    heap_up(w, i);
    heap_down(w, hs->heap_i);
}

/* Host h wants a pass by time t (an earlier wish stands); the scheduler
 * is woken if another actor asks. */
static void host_wake(sim_world *w, int h, ck_time t)
{
    if (h < 0 || h >= w->nnet)
        return;
    sim_host *hs = &w->hosts[h];
    if (hs->in_pass) {
        hs->want = CK_MIN(hs->want, t);
        return;
    }
    if (!hs->up || (hs->heap_i >= 0 && hs->due <= t))
        return;
    host_set_due(w, h, t);
    if (!w->in_sched && !w->woken) {
        w->woken = 1;
        sg_sem_release(w->wake);
    }
}

/* Node n has something in its inbox, or stopped: its host wants a pass. */
static void wake(sim_node *n)
{
    host_wake(n->w, n->net_host, cur_now(n->w));
}

/* Puts an entry in node n's inbox and wakes its host; data is taken. */
static void post(sim_node *n, int kind, uint64_t token, int status, uint8_t *data, size_t len)
{
    if (ck_drive_post(&n->b.d, kind, token, status, data, len) == CK_OK)
        wake(n);
}

/* Node n exchanged frames with network host h (it hears when h is lost). */
static void talk_mark(sim_node *n, int h)
{
    if (h != n->net_host)
        ck_bnode_talk_mark(&n->b, h);
}

/*
 * Wake-ups are semaphores, not condition variables: in SimGrid 3.32 a
 * notify that another actor issues in the same scheduling round as a
 * wait, after the waiter checked its inbox but before the wait took
 * effect, is lost, and the waiter sleeps to its timeout (a message handled
 * up to a deadline late). A release is counted instead; the waiter takes
 * the ones that piled up before it looks at its inbox again.
 */
static void drain(sg_sem_t s)
{
    while (!sg_sem_would_block(s))
        sg_sem_acquire(s);
}

/* Keeps a message for an endpoint that does not exist yet (ck_sim_endpoint
 * hands it over). Takes msg. */
static void limbo_push(sim_world *w, uint32_t dst, uint32_t src, uint8_t *msg, size_t len)
{
    item *it = item_new(w, (item){.kind = ITEM_MSG, .src = src, .dst = dst, .data = msg,
                                  .len = len});
    if (!it) {
        free(msg);
        return;
    }
    CK_QUEUE_APPEND(w->limbo, w->limbo_tail, it);
}

/* Hands message msg (taken) from host `from` to endpoint dst of this world. */
static void deliver(sim_world *w, int from, uint32_t dst, uint32_t src, uint8_t *msg, size_t len)
{
    sim_node *n = node_of(w, dst);
    if (!n) {
        limbo_push(w, dst, src, msg, len);
        return;
    }
    if (n->b.d.dead) {
        free(msg);
        return;
    }
    talk_mark(n, from);
    post(n, CK_DMSG_MESSAGE, 0, 0, msg, len);
}

/* ---- platform operations ---------------------------------------------------------- */

static ck_time sim_clock(const ck_bnode *n)
{
    return cur_now(((const sim_node *)n)->w);
}

/* The network host of endpoint ep: its node's, or for a subtask not
 * deployed yet, where the latest placement puts it; -1 if unknown. */
static int ep_host(const sim_world *w, uint32_t ep)
{
    const sim_node *n = node_of(w, ep);
    if (n)
        return n->net_host;
    if (ep == CK_EP_JM)
        return w->ntm;
    if (ep >= CK_EP_TM0 && ep < CK_EP_TM0 + (uint32_t)w->ntm)
        return (int)(ep - CK_EP_TM0);
    if (w->env)
        return ck_routes_host(&w->routes, w->env->g, ep);
    return -1;
}

static int is_cut(const sim_world *w, int a, int b)
{
    return ck_plan_is_cut(&w->plan, a, b);
}

/* Whether network host h is a task manager that crashed (or is crashing:
 * turning it off lets other actors run before it takes effect). SimGrid
 * asserts on a transfer to a host that is off. */
static int host_down(const sim_world *w, int h)
{
    return w->tm_down && h >= 0 && h < w->ntm && w->tm_down[h];
}

/* Latency added between hosts a and b by slow links (both ends count). */
static ck_time added_latency(const sim_world *w, int a, int b)
{
    const ck_plan *p = &w->plan;
    if (!p->lat)
        return 0;
    return (a >= 0 && a < p->nh ? p->lat[a] : 0) + (b >= 0 && b < p->nh ? p->lat[b] : 0);
}

/* ---- connections ---------------------------------------------------------------- */

/* Network host h's record (made on first use). NULL when out of memory. */
static sim_host *host_get(sim_world *w, int h)
{
    if (h < 0)
        return NULL;
    if (h >= w->nnet) {
        int n = CK_MAX(h + 1, w->nnet * 2);
        sim_host *hs = realloc(w->hosts, (size_t)n * sizeof(*hs));
        if (!hs)
            return NULL;
        memset(hs + w->nnet, 0, (size_t)(n - w->nnet) * sizeof(*hs));
        for (int i = w->nnet; i < n; i++) {
            hs[i].heap_i = -1;
            hs[i].due = CK_TIME_NEVER;
        }
        w->hosts = hs;
        int *heap = realloc(w->heap, (size_t)n * sizeof(*heap));
        if (!heap)
            return NULL;
        w->heap = heap;
        w->nnet = n;
    }
    return &w->hosts[h];
}

/* The connection from host a to host b (made on first use), or NULL. */
static sim_conn *conn_get(sim_world *w, int a, int b)
{
    if (a < 0 || b < 0)
        return NULL;
    if (a >= w->conns_n || b >= w->conns_n) {
        int n = CK_MAX(CK_MAX(a, b) + 1, w->conns_n * 2);
        sim_conn **m = calloc((size_t)n * (size_t)n, sizeof(*m));
        if (!m)
            return NULL;
        for (int i = 0; i < w->conns_n; i++)
            memcpy(m + (size_t)i * (size_t)n, w->conns + (size_t)i * (size_t)w->conns_n,
                   (size_t)w->conns_n * sizeof(*m));
        free(w->conns);
        w->conns = m;
        w->conns_n = n;
    }
    sim_conn **slot = &w->conns[(size_t)a * (size_t)w->conns_n + (size_t)b];
    if (!*slot) {
        *slot = calloc(1, sizeof(**slot));
        if (*slot) {
            (*slot)->from = a;
            (*slot)->to = b;
            (*slot)->lat = -1;
        }
    }
    return *slot;
}

static sim_conn *conn_find(const sim_world *w, int a, int b)
{
    if (a < 0 || b < 0 || a >= w->conns_n || b >= w->conns_n)
        return NULL;
    return w->conns[(size_t)a * (size_t)w->conns_n + (size_t)b];
}

/* Asks host a's pass to look at connection c. */
static void conn_kick(sim_world *w, sim_conn *c)
{
    sim_host *hs = c->from < w->nnet ? &w->hosts[c->from] : NULL;
    if (!hs || !hs->up)
        return;
    if (!c->listed) {
        c->listed = 1;
        c->next_listed = hs->list;
        hs->list = c;
    }
    host_wake(w, c->from, cur_now(w));
}

/* The connection broke (a host at one end crashed): what it held is lost,
 * and what is on the wire will be dropped when it arrives. */
static void conn_break(sim_conn *c)
{
    ck_tp_reset(&c->tx);
    c->busy = 0;
    c->gen++;
}

static void on_batch(sim_world *w, sim_host *hs, item *it);

/* The bandwidth factor slow links put on host h's link (1: none). */
static double bw_factor(const sim_world *w, int h)
{
    return w->plan.bw && h >= 0 && h < w->plan.nh ? w->plan.bw[h] : 1.0;
}

/*
 * The fast model: a batch of len bytes leaves host c->from for host c->to
 * at time now; returns when it arrives. The model of the hosts' own links
 * (not SimGrid's flow solver, whose cost grows with the number of flows
 * sharing links: at parallelism 256 it took 91 % of the time): each
 * direction of a host's link carries one batch at a time, in the order
 * they come, at its bandwidth (times a slow link's factor); a batch goes
 * through a's link up and b's link down, cut-through (b's side may start
 * as soon as a's does), and arrives the route's latency after its last
 * byte went down. sim/simnet.h says on which platforms it is exact.
 */
static ck_time link_transfer(sim_world *w, sim_conn *c, size_t len, ck_time now)
{
    int a = c->from, b = c->to;
    sim_host *ha = &w->hosts[a], *hb = &w->hosts[b];
    if (c->lat < 0)
        c->lat = (ck_time)llround(sg_host_get_route_latency(ha->host, hb->host) * 1e9);
    double bu = ha->bw_up * bw_factor(w, a), bd = hb->bw_down * bw_factor(w, b);
    ck_time start = CK_MAX(now, ha->up_free);
    ck_time up_end = start + (ck_time)((double)len * 1e9 / bu);
    ha->up_free = up_end;
    ck_time down_start = CK_MAX(start, hb->down_free);
    ck_time down_end = CK_MAX(up_end, down_start + (ck_time)((double)len * 1e9 / bd));
    hb->down_free = down_end;
    return down_end + c->lat;
}

static void transfer_start(sim_world *w, item *it);

/* Puts a batch on its way to host hb, to arrive at `due` (in order of
 * arrival; ties in the order sent). */
static void arrive(sim_world *w, item *it, int b, ck_time due)
{
    sim_host *hb = &w->hosts[b];
    it->due = due;
    if (!hb->arrivals || hb->arrivals_tail->due <= due) {
        CK_QUEUE_APPEND(hb->arrivals, hb->arrivals_tail, it);
    } else {
        item **pp = &hb->arrivals;
        while ((*pp)->due <= due)
            pp = &(*pp)->next;
        it->next = *pp;
        *pp = it;
    }
    host_wake(w, b, due);
}

/* Starts a transfer on every connection of host hs that has bytes due and
 * none on the wire; returns when one that a slow link delays wants looking
 * at again (CK_TIME_NEVER: none). */
static ck_time start_batches(sim_world *w, sim_host *hs, ck_time now)
{
    ck_time next = CK_TIME_NEVER;
    if (w->sg_net && hs->list) {
        /* SimGrid's transfers start at the scheduler's time; other actors
         * may run meanwhile (a crash of this very host). */
        catch_up(w);
        if (!hs->up)
            return next;
    }
    sim_conn *c = hs->list, *keep = NULL;
    hs->list = NULL;
    while (c) {
        sim_conn *nc = c->next_listed;
        c->listed = 0;
        if (!ck_tp_pending(&c->tx) || c->busy || is_cut(w, c->from, c->to)) {
            /* nothing to do, or kicked again by its transfer's arrival or
             * by the cut's end (release_held) */
        } else if (host_down(w, c->to) || c->to >= w->nnet || !w->hosts[c->to].up) {
            conn_break(c); /* nobody there to receive */
        } else {
            size_t end = ck_tp_due(&c->tx, now, 0);
            if (end > c->tx.off) {
                size_t len = end - c->tx.off;
                uint8_t *data = malloc(len);
                item *it = data ? item_new(w, (item){.kind = ITEM_BATCH, .src = (uint32_t)c->from,
                                                     .dst = (uint32_t)c->to, .gen = c->gen,
                                                     .data = data, .len = len})
                                : NULL;
                if (!it) {
                    free(data);
                    conn_break(c); /* out of memory: as if it broke */
                } else {
                    memcpy(data, c->tx.buf + c->tx.off, len);
                    ck_tp_sent(&c->tx, end);
                    c->busy = 1;
                    if (w->sg_net)
                        transfer_start(w, it);
                    else
                        arrive(w, it, c->to, link_transfer(w, c, len, now));
                    w->transfers++;
                }
            } else {
                ck_time t = ck_tp_wake(&c->tx, now);
                if (t != CK_TIME_NEVER) {
                    next = CK_MIN(next, t);
                    c->listed = 1; /* delayed by a slow link: looked at again then */
                    c->next_listed = keep;
                    keep = c;
                }
            }
        }
        c = nc;
    }
    /* Those kicked meanwhile are on hs->list already. */
    while (keep) {
        sim_conn *nc = keep->next_listed;
        keep->next_listed = hs->list;
        hs->list = keep;
        keep = nc;
    }
    return next;
}

/* A batch of frames arrived on host b over the connection from host
 * it->src: its connection may send again; its frames go to their nodes. */
static void on_batch(sim_world *w, sim_host *hs, item *it)
{
    int a = (int)it->src, b = (int)it->dst;
    sim_conn *c = conn_find(w, a, b);
    if (!c || c->gen != it->gen) {
        item_free(it); /* sent before the connection broke */
        return;
    }
    c->busy = 0;
    if (ck_tp_pending(&c->tx))
        conn_kick(w, c);
    size_t off = 0;
    while (off < it->len) {
        uint8_t *space;
        size_t room;
        if (ck_netframe_reserve(&hs->rx, it->len - off, &space, &room) || !room)
            break;
        room = CK_MIN(room, it->len - off);
        memcpy(space, it->data + off, room);
        ck_netframe_wrote(&hs->rx, room);
        off += room;
        ck_netframe_msg f;
        int rc;
        while ((rc = ck_netframe_next(&hs->rx, &f)) == 1) {
            uint8_t *m = malloc(f.len ? f.len : 1);
            if (!m)
                continue;
            memcpy(m, f.msg, f.len);
            deliver(w, a, f.dst, f.src, m, f.len);
        }
        if (rc < 0)
            break;
    }
    if (off < it->len || ck_netframe_pending(&hs->rx)) {
        /* Our own frames do not go bad: a bug to see, not to hide. */
        fprintf(stderr, "chandy: a batch from host %d to host %d does not parse\n", a, b);
        ck_netframe_free(&hs->rx);
        ck_netframe_init(&hs->rx, CK_NETFRAME_CAP);
    }
    item_free(it);
}

/* Host b's receiver: owns the host's mailbox as its permanent receiver; the
 * store's answers come there (batches of frames arrive in host passes). */
static void rx_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_host *hs = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    sg_mailbox_set_receiver(hs->mbname);
    for (;;) {
        void *p;
        if (ck_sg_get(hs->mb, &p) != 0)
            continue;
        item *it = p;
        if (!it->to || it->to->b.d.dead) {
            item_free(it);
        } else {
            /* A store answer: its data goes on to the node (late, when a
             * store_delay draws it: bnode.h). */
            if (ck_bnode_store_done(&it->to->b, it->token, it->status, it->data, it->len,
                                    cur_now(hs->w)))
                fprintf(stderr, "chandy: out of memory: a store answer to %s was lost\n",
                        it->to->b.name);
            item_release(it);
        }
    }
}

/* Network host h's record, set up on first use from SimGrid host `host`;
 * NULL when out of memory. */
static sim_host *host_init(sim_world *w, int h, sg_host_t host)
{
    sim_host *hs = host_get(w, h);
    if (!hs || hs->w)
        return hs;
    int cores = sg_host_core_count(host);
    double speed = sg_host_get_nb_pstates(host) > 0 ? sg_host_get_pstate_speed(host, 0)
                                                     : sg_host_get_speed(host);
    hs->bh = malloc(sizeof(*hs->bh));
    if (!hs->bh || ck_bhost_init(hs->bh, cores, speed, w->local_disk_bw, w->cfg)) {
        free(hs->bh);
        hs->bh = NULL;
        return NULL;
    }
    hs->bh->slow = w->plan.cpu && h < w->plan.nh ? w->plan.cpu[h] : 1.0;
    hs->w = w;
    hs->host = host;
    ck_netframe_init(&hs->rx, CK_NETFRAME_CAP);
    /* Its own link as the platform declares it (before any fault slows
     * it), for the fast model: as ck_simnet_check read the routes, or on
     * the generated platform its link_NAME_UP and _DOWN (link_NAME);
     * else (a node of a test's platform) the route to the store. */
    if (w->own_up && h < w->nown) {
        hs->bw_up = w->own_up[h];
        hs->bw_down = w->own_down[h];
    } else {
        char ln[96];
        const char *name = sg_host_get_name(host);
        snprintf(ln, sizeof(ln), "link_%s_UP", name);
        sg_link_t up = ck_sg_link_or_null(ln);
        snprintf(ln, sizeof(ln), "link_%s_DOWN", name);
        sg_link_t down = ck_sg_link_or_null(ln);
        if (!up || !down) {
            snprintf(ln, sizeof(ln), "link_%s", name);
            up = down = ck_sg_link_or_null(ln);
        }
        if (up) {
            hs->bw_up = sg_link_get_bandwidth(up);
            hs->bw_down = sg_link_get_bandwidth(down);
        } else if (host != w->store_host) {
            hs->bw_up = hs->bw_down = sg_host_get_route_bandwidth(host, w->store_host);
        }
    }
    if (!(hs->bw_up > 0) || !(hs->bw_down > 0))
        hs->bw_up = hs->bw_down = 1.25e9; /* nothing declared: 10 Gbit/s */
    return hs;
}

/* Starts host h: its receiver, and passes of it (again after a crash). */
static int host_up(sim_world *w, int h, sg_host_t host)
{
    sim_host *hs = host_init(w, h, host);
    if (!hs)
        return CK_ENOMEM;
    if (hs->up)
        return CK_OK;
    /* A mailbox per incarnation of the host: SimGrid 3.32 left a transfer
     * posted to a restarted host's mailbox, whose permanent receiver had
     * died in the crash, undelivered to the new receiver (seed 49 of
     * swarm-crash stalled on it). */
    snprintf(hs->mbname, sizeof(hs->mbname), "net%d.%u", h, hs->incarnation++);
    hs->mb = sg_mailbox_by_name(hs->mbname);
    hs->list = NULL;
    for (int i = 0; i < hs->bh->cores.n; i++)
        hs->bh->cores.free[i] = 0; /* a restarted host: its cores are idle */
    hs->up = 1;
    catch_up(w);
    sg_actor_t rx = sg_actor_init("rx", host);
    sg_actor_set_data(rx, hs);
    sg_actor_start(rx, rx_main, 0, NULL);
    host_wake(w, h, cur_now(w));
    return CK_OK;
}

/* Host h crashed: its actors are gone, and so is every connection to or
 * from it, with what it held. */
static void host_crashed(sim_world *w, int h)
{
    if (h < w->nnet) {
        sim_host *hs = &w->hosts[h];
        hs->up = 0;
        host_set_due(w, h, CK_TIME_NEVER);
        for (sim_conn *c = hs->list; c; c = c->next_listed)
            c->listed = 0;
        hs->list = NULL;
        ck_netframe_free(&hs->rx);
        ck_netframe_init(&hs->rx, CK_NETFRAME_CAP);
        ck_dlater_clear(&hs->bh->later);
        while (hs->arrivals) {
            item *it = hs->arrivals;
            hs->arrivals = it->next;
            item_free(it); /* on their way to a host that went down */
        }
        hs->arrivals_tail = NULL;
        for (sim_node *n = hs->nodes; n; n = n->host_next)
            n->on_host = 0;
        hs->nodes = hs->nodes_tail = NULL; /* all dead */
    }
    for (int o = 0; o < w->conns_n; o++) {
        sim_conn *c = conn_find(w, h, o);
        if (c)
            conn_break(c);
        if ((c = conn_find(w, o, h)))
            conn_break(c);
    }
}

/* Sends a message now (the node is not busy). */
static int send_now(sim_node *n, uint32_t dst, uint8_t *msg, size_t len)
{
    ck_platform *p = &n->b.plat;
    sim_world *w = n->w;
    watch_send(w, p->endpoint, msg, len);
    ck_msgcount_add(&w->msgs, msg, len);
    int to = ep_host(w, dst);
    if (to < 0) {
        limbo_push(w, dst, p->endpoint, msg, len); /* its host is not known yet */
        return CK_OK;
    }
    if (host_down(w, to)) {
        free(msg); /* its host is down: the bytes go nowhere */
        return CK_OK;
    }
    if (to == n->net_host) {
        deliver(w, to, dst, p->endpoint, msg, len); /* a local channel: in memory */
        return CK_OK;
    }
    sim_conn *c = conn_get(w, n->net_host, to);
    int rc = c ? ck_tp_put(&c->tx, dst, p->endpoint, msg, len, cur_now(w),
                           added_latency(w, n->net_host, to), 0)
               : CK_ENOMEM;
    free(msg);
    if (rc)
        return rc;
    talk_mark(n, to);
    /* Cut off: held, in order, until the network heals (TCP retransmits). */
    if (!c->busy && !is_cut(w, n->net_host, to))
        conn_kick(w, c);
    return CK_OK;
}

static void send_held(void *ctx, ck_dnode *d, uint32_t dst, uint8_t *msg, size_t len)
{
    CK_UNUSED(d);
    send_now(ctx, dst, msg, len);
}

static int sim_send(ck_bnode *b, uint32_t dst, uint8_t *msg, size_t len)
{
    return send_now((sim_node *)b, dst, msg, len);
}

/* After a network fault ends: what was held and can go now, goes. */
static void release_held(sim_world *w)
{
    for (int a = 0; a < w->conns_n; a++)
        for (int b = 0; b < w->conns_n; b++) {
            sim_conn *c = conn_find(w, a, b);
            if (c && !c->busy && ck_tp_pending(&c->tx) && !is_cut(w, a, b))
                conn_kick(w, c);
        }
    /* Counted first: a release lets the woken run at once, and one still
     * cut off by another fault registers again; releasing while the count
     * grows would go on forever in zero simulated time. */
    int waiters = w->heal_waiters;
    w->heal_waiters = 0;
    while (waiters-- > 0)
        sg_sem_release(w->heal);
}

/* In a transfer actor: wait while host a cannot reach host b, then for
 * the latency slow links add. */
static void wait_reachable(sim_world *w, int a, int b)
{
    ck_time lat = added_latency(w, a, b);
    if (lat > 0)
        sg_actor_sleep_for((double)lat / 1e9);
    if (!is_cut(w, a, b))
        return;
    while (is_cut(w, a, b)) {
        w->heal_waiters++;
        sg_sem_acquire(w->heal);
    }
}


/*
 * Store requests (store_job, store_handler) not freed yet, the process's
 * (SimGrid runs one simulation per process). The actor that holds one
 * frees it when it ends, however it ends (its on_exit); but an actor that
 * SimGrid never started before the simulation ended never registered
 * that, so what is left here at exit is freed then (free_orphans).
 */
typedef struct req_link {
    struct req_link *prev, *next;
    int job; /* a store_job (with its data); else a store_handler */
} req_link;

static req_link *reqs;

static void req_track(req_link *l)
{
    l->prev = NULL;
    l->next = reqs;
    if (reqs)
        reqs->prev = l;
    reqs = l;
}

static void req_untrack(req_link *l)
{
    if (l->prev)
        l->prev->next = l->next;
    else
        reqs = l->next;
    if (l->next)
        l->next->prev = l->prev;
}

typedef struct store_job {
    req_link link; /* first: reqs holds it */
    sim_node *n;
    char key[CK_STORE_KEY_MAX];
    char mbname[48];
    uint64_t at; /* an append's or a get's offset (0: a put) */
    uint8_t *data;
    size_t len; /* a put's bytes; a get's to read (CK_STOREFS_WHOLE: all) */
    uint64_t weight; /* what it costs on the network and the store's disk, when its
                      * state weighs more than its bytes (store_weigh); else 0 */
    uint64_t token;
} store_job;

static void send_store_done(sim_node *n, uint64_t token, int status, uint8_t *data, size_t len,
                            uint64_t cost)
{
    wait_reachable(n->w, n->w->ntm + 1, n->net_host);
    if (n->b.d.dead) {
        /* Its host went down (SimGrid asserts on a transfer to a host that
         * is off): the answer has nobody to go to. */
        free(data);
        return;
    }
    item *it = item_new(n->w, (item){.kind = ITEM_DONE, .src = UINT32_MAX, .to = n, .data = data,
                                     .len = len, .token = token, .status = status});
    if (!it) {
        free(data);
        return;
    }
    /* The answer travels back over the network to the node's host: a small
     * header plus the data (what it weighs, when more). */
    sg_comm_t c = sg_mailbox_put_init(n->w->hosts[n->net_host].mb, it,
                                      (long)(64 + (cost > len ? cost : len)));
    sg_comm_detach(c, item_free);
    n->w->transfers++;
}

static void job_free(store_job *j)
{
    req_untrack(&j->link);
    free(j->data);
    free(j);
}

/* A store request's actor on the node's host was killed (its host
 * crashed) while it still owned the job. */
static void job_killed(int failed, void *p)
{
    if (failed)
        job_free(p);
}

/* The actor that serves a store request on the store host: its mailbox,
 * and the job once received. It owns both until it ends, however it ends
 * (a request whose sender crashed is never received: the actor is killed
 * at the end of the simulation). */
typedef struct store_handler {
    req_link link; /* first: reqs holds it */
    char mbname[48];
    store_job *j;
} store_handler;

static void handler_free(store_handler *h)
{
    if (h->j)
        job_free(h->j);
    req_untrack(&h->link);
    free(h);
}

/* A new request and its handler, tracked (reqs); 0 or CK_ENOMEM. */
static int req_new(store_job **j, store_handler **h)
{
    *j = calloc(1, sizeof(**j));
    *h = calloc(1, sizeof(**h));
    if (!*j || !*h) {
        free(*j);
        free(*h);
        return CK_ENOMEM;
    }
    req_track(&(*j)->link);
    req_track(&(*h)->link);
    (*j)->link.job = 1;
    return CK_OK;
}

/*
 * Store actors alive, counted in the world's sg_live (sched_main): one more
 * when started (store_actor), one less when it ends, however it ends. An
 * actor SimGrid kills at exit, after the world is gone, counts nowhere.
 */
static sim_world *live_world;

static void live_exit(int failed, void *p)
{
    CK_UNUSED(failed);
    CK_UNUSED(p);
    if (live_world)
        live_world->sg_live--;
}

static void store_actor(sim_world *w, const char *name, sg_host_t host, void (*fn)(int, char **),
                        void *data)
{
    catch_up(w); /* it starts at the scheduler's time */
    w->sg_live++;
    sg_actor_t a = sg_actor_init(name, host);
    sg_actor_set_data(a, data);
    sg_actor_start(a, fn, 0, NULL);
}

/* ---- transfers timed by SimGrid's flow model ------------------------------------------ */

/* A transfer's actor was killed (its sending host crashed, or the run
 * ended) while it owned the batch. */
static void transfer_killed(int failed, void *p)
{
    if (failed)
        item_free(p);
}

/*
 * One batch between two hosts as a SimGrid transfer over the platform's
 * route (sim/simnet.h: the simgrid model). The actor lives on the sending
 * host, so that it dies with it; the batch arrives on the receiving host
 * when SimGrid says its last byte did, and goes to that host's arrivals
 * as the fast model's batches do (on_batch then drops it if its
 * connection broke meanwhile). A receiving host that goes off fails the
 * transfer: the batch is lost with the connection (host_crashed broke it).
 */
static void transfer_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    item *it = sg_actor_self_get_data();
    sim_world *w = it->w;
    sg_actor_on_exit(live_exit, NULL);
    sg_actor_on_exit(transfer_killed, it);
    int a = (int)it->src, b = (int)it->dst;
    /* SimGrid asserts on a transfer that starts towards a host that is
     * off; one going down is marked before it goes off (crash_host). */
    if (host_down(w, b) || !w->hosts[b].up || !sg_host_is_on(w->hosts[b].host) ||
        ck_sg_sendto(w->hosts[a].host, w->hosts[b].host, (double)it->len) != 0) {
        item_free(it);
        return;
    }
    arrive(w, it, b, sim_now_ns());
}

/* Starts batch `it` on its way as a SimGrid transfer (the scheduler
 * caught up with SimGrid's clock: start_batches). */
static void transfer_start(sim_world *w, item *it)
{
    store_actor(w, "transfer", w->hosts[it->src].host, transfer_main, it);
}

static void handler_exit(int failed, void *p)
{
    CK_UNUSED(failed);
    handler_free(p);
}

/*
 * The store's disk reads or writes len bytes for the calling actor: one
 * read and one write at a time (each in order, at the read or write
 * bandwidth the platform declares, as SimGrid's disk has a constraint for
 * each). (SimGrid's disk model updates all its actions at every
 * event of the simulation: with the 2048 uploads of a checkpoint at
 * parallelism 1024 in flight, that took 70 % of the time.)
 */
static void disk_io(sim_world *w, size_t len, int write)
{
    double bw = write ? sg_disk_write_bandwidth(w->store_disk)
                      : sg_disk_read_bandwidth(w->store_disk);
    ck_time *free_at = &w->disk_free[write != 0];
    ck_time start = CK_MAX(sim_now_ns(), *free_at);
    *free_at = start + (ck_time)((double)len * 1e9 / bw);
    sg_actor_sleep_until((double)*free_at / 1e9);
}

/* On the node's host: push the bytes to the store. */
static void uploader_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
    sg_actor_on_exit(live_exit, NULL);
    sg_actor_on_exit(job_killed, j);
    wait_reachable(j->n->w, j->n->net_host, j->n->w->ntm + 1);
    uint64_t cost = j->weight > j->len ? j->weight : j->len;
    if (ck_sg_put(sg_mailbox_by_name(j->mbname), j, (long)(64 + cost)) != 0)
        job_free(j); /* the store never got it: the node learns through its own failure */
}

/* On the store host: take the upload, write it to disk, acknowledge. */
static void put_handler_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_handler *h = sg_actor_self_get_data();
    sg_actor_on_exit(live_exit, NULL);
    sg_actor_on_exit(handler_exit, h);
    void *p;
    if (ck_sg_get(sg_mailbox_by_name(h->mbname), &p) != 0)
        return;
    store_job *j = h->j = p;
    sim_world *w = j->n->w;
    if (j->len)
        disk_io(w, j->weight > j->len ? j->weight : j->len, 1);
    int status = j->at ? ck_storefs_append(w->store_dir, j->key, j->at, j->data, j->len, 0)
                       : ck_storefs_put(w->store_dir, j->key, j->data, j->len, 0);
    ck_bnode_put_landed(&j->n->b, w->store_dir, j->key, j->at, status);
    send_store_done(j->n, j->token, status, NULL, 0, 0);
}

/* Before a store transfer's actors start: SimGrid's clock catches up
 * with the scheduler's, and the fault injector may act meanwhile; a crash
 * due at this very instant (a fault triggered 0 us after an earlier
 * upload of the same step) leaves the node's host off, where no actor may
 * start. Returns 1 when the node is gone: its request goes nowhere. */
static int node_gone_now(sim_node *n)
{
    catch_up(n->w);
    return n->b.d.dead || !sg_host_is_on(n->host);
}

static int sim_store_put(ck_bnode *b, const char *key, uint64_t at, uint8_t *data, size_t len,
                         uint64_t token)
{
    sim_node *n = (sim_node *)b;
    sim_world *w = n->w;
    if (node_gone_now(n)) {
        free(data);
        return CK_OK;
    }
    store_job *j;
    store_handler *sh;
    if (req_new(&j, &sh)) {
        free(data);
        return CK_ENOMEM;
    }
    uint64_t id = w->next_id++;
    j->n = n;
    snprintf(j->key, sizeof(j->key), "%s", key);
    j->at = at;
    snprintf(j->mbname, sizeof(j->mbname), "store-put-%llu", (unsigned long long)id);
    snprintf(sh->mbname, sizeof(sh->mbname), "%s", j->mbname);
    j->data = data;
    j->len = len;
    j->weight = ck_bnode_weight(b, key, len);
    j->token = token;
    char name[64];
    snprintf(name, sizeof(name), "store-put-%llu", (unsigned long long)id);
    store_actor(w, name, w->store_host, put_handler_main, sh);
    store_actor(w, name, n->host, uploader_main, j);
    if (n->b.is_task)
        moment(w, CK_MOMENT_UPLOAD_STARTED, 0, 0);
    return CK_OK;
}

/* On the node's host: ask the store for a key. */
static void requester_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
    sg_actor_on_exit(live_exit, NULL);
    sg_actor_on_exit(job_killed, j);
    wait_reachable(j->n->w, j->n->net_host, j->n->w->ntm + 1);
    if (ck_sg_put(sg_mailbox_by_name(j->mbname), j, 64) != 0)
        job_free(j);
}

/* On the store host: read the object and send it back. */
static void get_handler_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_handler *h = sg_actor_self_get_data();
    sg_actor_on_exit(live_exit, NULL);
    sg_actor_on_exit(handler_exit, h);
    void *p;
    if (ck_sg_get(sg_mailbox_by_name(h->mbname), &p) != 0)
        return;
    store_job *j = h->j = p;
    sim_world *w = j->n->w;
    uint8_t *data = NULL;
    size_t len = 0;
    int status = ck_storefs_get_range(w->store_dir, j->key, j->at, j->len, &data, &len);
    uint64_t cost = status == CK_OK && j->weight > len ? j->weight : len;
    if (status == CK_OK && len)
        disk_io(w, cost, 0);
    send_store_done(j->n, j->token, status, data, len, status == CK_OK ? cost : 0);
}

static int sim_store_get(ck_bnode *b, const char *key, uint64_t at, uint64_t len,
                         uint64_t token)
{
    sim_node *n = (sim_node *)b;
    sim_world *w = n->w;
    if (node_gone_now(n))
        return CK_OK;
    store_job *j;
    store_handler *sh;
    if (req_new(&j, &sh))
        return CK_ENOMEM;
    uint64_t id = w->next_id++;
    j->n = n;
    j->at = at;
    j->len = (size_t)len;
    j->weight = ck_bnode_weight(b, key, 0);
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->mbname, sizeof(j->mbname), "store-get-%llu", (unsigned long long)id);
    snprintf(sh->mbname, sizeof(sh->mbname), "%s", j->mbname);
    j->token = token;
    store_actor(w, j->mbname, w->store_host, get_handler_main, sh);
    store_actor(w, j->mbname, n->host, requester_main, j);
    if (n->b.is_task)
        moment(w, CK_MOMENT_RESTORE_STARTED, 0, 0);
    return CK_OK;
}

/* A write of the sinks' output failed: the run records the first. */
static void sim_io_failed(ck_bnode *b, const char *what)
{
    sim_world *w = ((sim_node *)b)->w;
    if (!w->sink_error[0]) {
        snprintf(w->sink_error, sizeof(w->sink_error), "%s: %s", what, strerror(errno));
        fprintf(stderr, "chandy: %s: %s\n", w->sinks.dir, w->sink_error);
    }
}

/* Background work was queued on the node's host: its host wants a pass. */
static void sim_wake(ck_bnode *b)
{
    wake((sim_node *)b);
}

static int sim_deploy(ck_bnode *b, uint32_t attempt, uint32_t global,
                      const ck_restore_point *from);
static void sim_undeploy(ck_bnode *b, uint32_t attempt, uint32_t global);

static void sim_set_routes(ck_bnode *b, uint32_t attempt, int gen, uint32_t n,
                           const uint16_t *hosts)
{
    /* Mailboxes are found by endpoint; the placement only tells network
     * faults where subtasks not deployed yet will be. */
    sim_world *w = ((sim_node *)b)->w;
    /* Out of memory: a network fault misses subtasks of the attempt not
     * deployed yet (it cuts them once they are). */
    CK_IGNORE(ck_routes_set(&w->routes, attempt, gen, n, hosts));
}

static void sim_moment(ck_bnode *b, int m)
{
    moment(((sim_node *)b)->w, (ck_moment)m, 0, 0);
}

/* What differs from the socket backend (bnode.h): SimGrid's clock, the
 * simulated network and store, and the scheduler of its hosts. */
static const ck_bnode_io sim_io = {
    .clock = sim_clock,
    .send = sim_send,
    .store_put = sim_store_put,
    .store_get = sim_store_get,
    .deploy = sim_deploy,
    .undeploy = sim_undeploy,
    .set_routes = sim_set_routes,
    .wake = sim_wake,
    .io_failed = sim_io_failed,
    .moment = sim_moment,
};

/* ---- actors ------------------------------------------------------------------------ */

/*
 * A pass of host h at the scheduler's time: the batches that arrived go to
 * their nodes' inboxes, background work that is done completes, each node
 * that has something to do gets a step (drive.h), after sending what it
 * held while busy; then the host's connections start their transfers. The
 * host is due again when a node's busy spell ends, a deadline passes,
 * background work completes, a batch arrives or a delayed frame may go,
 * or at once if a node could do more. Returns 1 when the node that ends
 * the run finished.
 */
/* With invariant checks on (ck_bworld.check): what host h keeps beside its
 * nodes (their own are checked at each step, drive.h), after its pass. */
static void check_host(sim_world *w, int h, ck_time now)
{
    sim_host *hs = &w->hosts[h];
    ck_inv v;
    char where[48];
    snprintf(where, sizeof(where), h < w->ntm ? "host tm%d" : "the job manager's host", h);
    if (ck_bhost_check(hs->bh, &v) || ck_netframe_parser_check(&hs->rx, &v) ||
        ck_plan_check(&w->plan, &v) || ck_routes_check(&w->routes, &v))
        ck_drive_violated(where, now, &v);
    for (sim_node *n = hs->nodes; n; n = n->host_next)
        if (ck_bnode_check(&n->b, &v))
            ck_drive_violated(where, now, &v);
    for (int b = 0; b < w->conns_n; b++) {
        const sim_conn *c = conn_find(w, h, b);
        if (c && ck_tp_check(&c->tx, &v)) {
            ck_inv_where(&v, "connection to host %d", b);
            ck_drive_violated(where, now, &v);
        }
    }
}

static int host_pass(sim_world *w, int h)
{
    sim_host *hs = &w->hosts[h];
    ck_time now = w->now;
    hs->in_pass = 1;
    hs->want = CK_TIME_NEVER;
    while (hs->arrivals && hs->arrivals->due <= now) {
        item *it = hs->arrivals;
        hs->arrivals = it->next;
        if (!hs->arrivals)
            hs->arrivals_tail = NULL;
        on_batch(w, hs, it);
    }
    ck_time next = ck_dlater_run(&hs->bh->later, now);
    int more = 0;
    sim_node **pp = &hs->nodes, *n, *last = NULL;
    while ((n = *pp)) {
        int r = 0;
        if (!ck_drive_wants(&n->b.d, now)) {
            next = CK_MIN(next, n->b.d.due); /* as its last step left it (drive.h) */
            last = n;
            pp = &n->host_next;
            continue;
        }
        ck_drive_release(&n->b.d, send_held, n);
        r = ck_drive_step(&n->b.d, now);
        if (r < 0) {
            if (n->ends_run && !n->b.d.dead) {
                hs->in_pass = 0;
                return 1;
            }
            *pp = n->host_next; /* stopped: off the list */
            n->on_host = 0;
            continue;
        }
        more |= r > 0;
        next = CK_MIN(next, ck_drive_next(&n->b.d, now));
        last = n;
        pp = &n->host_next;
    }
    hs->nodes_tail = last;
    next = CK_MIN(next, start_batches(w, hs, now));
    if (hs->arrivals)
        next = CK_MIN(next, hs->arrivals->due);
    hs->in_pass = 0;
    next = CK_MIN(next, hs->want);
    if (w->bw.check)
        check_host(w, h, now);
    if (hs->up)
        host_set_due(w, h, more ? now : next);
    return 0;
}

/*
 * The scheduler: one actor runs every host's nodes and connections, pass
 * by pass, in time order (ties: by host), on a clock of its own. SimGrid
 * has the store's transfers and disk, the fault injector and the time
 * limit; while none of its actors has anything due (no store transfer or
 * answer on its way, w->sg_live == 0) before the next pass, the scheduler
 * moves its clock on by itself, without a timed wait in SimGrid for each
 * event: that cost more than the engine's own work. Before it starts or
 * wakes anything in SimGrid while ahead, SimGrid's clock catches up
 * (catch_up); an actor it made ready runs before the next pass (poke).
 * Otherwise it waits in SimGrid until the next pass is due or another
 * actor wakes it (a store answer, the injector, a restarted host). When
 * the node that ends the run finishes, every actor is stopped.
 *
 * Invariant: no SimGrid actor has anything due before w->now.
 */
static void sched_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_world *w = sg_actor_self_get_data();
    for (;;) {
        drain(w->wake);
        w->woken = 0;
        ck_time sg = sim_now_ns();
        if (sg > w->now)
            w->now = sg;
        w->in_sched = 1;
        while (w->heap_n && !w->poke) {
            int h = w->heap[0];
            ck_time t = w->hosts[h].due;
            if (t > w->now) {
                if (w->sg_live > 0 || t >= CK_MIN(w->inj_next, w->limit_ns))
                    break; /* SimGrid may have something due first: wait there */
                w->now = t; /* nothing in SimGrid is due before t */
            }
            if (host_pass(w, h)) {
                catch_up(w);
                w->in_sched = 0;
                sg_actor_kill_all(); /* the run is over: stop what is left */
                return;
            }
        }
        if (w->poke) {
            catch_up(w);
            w->in_sched = 0;
            w->poke = 0;
            sg_actor_yield(); /* what it made ready runs at this time first */
            continue;
        }
        w->in_sched = 0;
        ck_time t = w->heap_n ? w->hosts[w->heap[0]].due : CK_TIME_NEVER;
        sg = sim_now_ns();
        if (t == CK_TIME_NEVER)
            sg_sem_acquire(w->wake);
        else if (t > sg)
            sg_sem_acquire_timeout(w->wake, (double)(t - sg) / 1e9);
    }
}

/* ---- the world ---------------------------------------------------------------- */

static int initialized;

/* At exit, after SimGrid's own shutdown (registered before it starts). */
static void free_orphans(void)
{
    while (orphans)
        item_free(orphans);
    while (reqs) { /* each on its own: a handler's job is on the list too */
        req_link *l = reqs;
        req_untrack(l);
        if (l->job)
            free(((store_job *)(void *)l)->data);
        free(l);
    }
}

ck_sim *ck_sim_new(const char *platform_file, const char *network_model, const char *store_dir,
                   int verbose, char *err, size_t errlen)
{
    if (initialized) {
        snprintf(err, errlen, "SimGrid runs one simulation per process");
        return NULL;
    }
    initialized = 1;
    atexit(free_orphans);
    char model[64];
    snprintf(model, sizeof(model), "--cfg=network/model:%s", network_model);
#ifdef CK_SIM_THREAD_CONTEXTS
    /* A sanitizer build (CHANDY_SANITIZE): SimGrid's default contexts
     * switch between stacks it allocates on the heap, which ASan does not
     * know as stacks (false reports at the first exception). Thread
     * contexts still run one actor at a time, in the same order. */
    char *argv[] = {"chandy", model, "--log=root.thres:critical",
                    "--cfg=contexts/stack-size:2048", "--cfg=contexts/factory:thread", NULL};
    int argc = 5;
#else
    char *argv[] = {"chandy", model, "--log=root.thres:critical",
                    "--cfg=contexts/stack-size:512", NULL};
    int argc = 4;
#endif
    simgrid_init(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    char why[400];
    if (ck_sg_load_platform(platform_file, why, sizeof(why))) {
        if (strstr(why, platform_file))
            snprintf(err, errlen, "%s", why);
        else
            snprintf(err, errlen, "%s: %s", platform_file, why);
        return NULL;
    }

    sim_world *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->bw = (ck_bworld){.io = &sim_io, .store_dir = w->store_dir, .local_dir = w->local_dir,
                        .verbose = verbose};
    snprintf(w->store_dir, sizeof(w->store_dir), "%s", store_dir);
    /* The hosts' local disks beside the store (<run>/store -> <run>/local). */
    snprintf(w->local_dir, sizeof(w->local_dir), "%s", store_dir);
    char *slash = strrchr(w->local_dir, '/');
    snprintf(slash ? slash + 1 : w->local_dir,
             sizeof(w->local_dir) - (size_t)(slash ? slash + 1 - w->local_dir : 0), "local");
    if (ck_storefs_mkdirs(w->store_dir)) {
        snprintf(err, errlen, "%s: cannot create: %s", w->store_dir, strerror(errno));
        free(w);
        return NULL;
    }
    w->store_host = sg_host_by_name("store");
    if (!w->store_host) {
        snprintf(err, errlen, "%s: the platform needs a host \"store\"", platform_file);
        free(w);
        return NULL;
    }
    unsigned ndisks = 0;
    sg_disk_t *disks = NULL;
    sg_host_get_disks(w->store_host, &ndisks, &disks);
    if (ndisks < 1) {
        free(disks);
        snprintf(err, errlen, "%s: host \"store\" needs a disk", platform_file);
        free(w);
        return NULL;
    }
    w->store_disk = disks[0];
    free(disks);
    /* Last: the checks above free w without destroying anything. */
    w->heal = sg_sem_init(0);
    w->inj_wake = sg_sem_init(0);
    w->wake = sg_sem_init(0);
    w->inj_next = w->limit_ns = CK_TIME_NEVER;
    live_world = w;
    return w;
}

int ck_sim_set_sink_dir(ck_sim *w, const char *dir)
{
    if (ck_storefs_mkdirs(dir) || ck_sinkfs_init(&w->sinks, dir))
        return CK_EIO;
    ck_sinkfs_hold(&w->sinks, SINK_HOLD); /* no process of the run dies with them */
    w->bw.sinks = &w->sinks;
    return CK_OK;
}

ck_platform *ck_sim_endpoint(ck_sim *w, uint32_t ep, const char *host, int host_index)
{
    sg_host_t h = sg_host_by_name(host);
    if (!h)
        return NULL;
    int net_host = host_index >= 0 ? host_index : w->ntm;
    sim_host *hs = host_init(w, net_host, h);
    sim_node *n = hs ? calloc(1, sizeof(*n)) : NULL;
    if (!n)
        return NULL;
    char name[32];
    snprintf(name, sizeof(name), "ep%u", ep);
    ck_bnode_init(&n->b, &w->bw, hs->bh, ep, host_index, name);
    n->host_index = host_index;
    n->net_host = net_host;
    n->w = w;
    n->host = h;
    n->all_next = w->all;
    w->all = n;
    if (map_put(w, n))
        return NULL;
    /* What was sent to it before it existed, in order. */
    item **pp = &w->limbo;
    w->limbo_tail = NULL;
    while (*pp) {
        item *it = *pp;
        if (it->dst == ep) {
            *pp = it->next;
            post(n, CK_DMSG_MESSAGE, 0, 0, it->data, it->len);
            item_release(it);
        } else {
            w->limbo_tail = it;
            pp = &it->next;
        }
    }
    return &n->b.plat;
}

int ck_sim_attach(ck_sim *w, uint32_t ep, ck_node node, const char *name, int ends_run)
{
    CK_UNUSED(name);
    sim_node *n = node_of(w, ep);
    if (!n || n->on_host)
        return CK_EINVAL;
    n->b.d.node = node;
    n->b.d.again = 1; /* its first step */
    n->ends_run = ends_run;
    int rc = host_up(w, n->net_host, n->host);
    if (rc)
        return rc;
    /* Its host's passes step it from now on. */
    sim_host *hs = &w->hosts[n->net_host];
    n->on_host = 1;
    n->host_next = NULL;
    if (hs->nodes_tail)
        hs->nodes_tail->host_next = n;
    else
        hs->nodes = n;
    hs->nodes_tail = n;
    wake(n);
    return CK_OK;
}

/*
 * Ends the simulation at its time limit: a daemon (the end of the run kills
 * it) that stops every actor, so that none is left waiting on a semaphore
 * that ck_sim_del destroys (SimGrid aborts on that), and the run ends with
 * the job's state as it was.
 */
static void limit_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_world *w = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    sg_actor_sleep_until((double)w->limit_ns / 1e9);
    w->reached_limit = 1;
    sg_actor_kill_all();
}

double ck_sim_run_all(ck_sim *w, double limit_s)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (limit_s > 0) {
        w->limit_ns = (ck_time)llround(limit_s * 1e9);
        sg_actor_t a = sg_actor_init("time-limit", w->store_host);
        sg_actor_set_data(a, w);
        sg_actor_start(a, limit_main, 0, NULL);
    }
    sg_actor_t sc = sg_actor_init("scheduler", w->store_host);
    sg_actor_set_data(sc, w);
    sg_actor_start(sc, sched_main, 0, NULL);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

int ck_sim_reached_limit(const ck_sim *w)
{
    return w->reached_limit;
}

void ck_sim_stats(const ck_sim *w, ck_backend_result *r)
{
    r->msgs = w->msgs;
    r->transfers = w->transfers;
    for (int h = 0; h < w->nnet; h++) {
        const ck_bhost *bh = w->hosts[h].w ? w->hosts[h].bh : NULL;
        if (!bh || h >= w->ntm) /* the job manager's host has no subtasks */
            continue;
        r->seg_bytes = bh->pool.seg_size;
        r->segs_total = bh->pool.total;
        r->segs_reserved_max = CK_MAX(r->segs_reserved_max, bh->pool.reserved_peak);
        r->segs_used_max = CK_MAX(r->segs_used_max, bh->pool.peak);
    }
}

void ck_sim_del(ck_sim *w)
{
    if (!w)
        return;
    sim_node *n = w->all;
    while (n) {
        sim_node *next = n->all_next;
        ck_bnode_clear(&n->b);
        free(n);
        n = next;
    }
    free(w->map);
    free(w->own_up);
    free(w->own_down);
    free(w->tm_hosts);
    free(w->tm_down);
    ck_plan_free(&w->plan);
    ck_buggify_free(&w->bug);
    ck_sinkfs_close(&w->sinks);
    while (w->limbo) {
        item *it = w->limbo;
        w->limbo = it->next;
        item_free(it);
    }
    for (int i = 0; i < w->conns_n * w->conns_n; i++)
        if (w->conns[i]) {
            ck_tp_free(&w->conns[i]->tx);
            free(w->conns[i]);
        }
    free(w->conns);
    for (int h = 0; h < w->nnet; h++)
        if (w->hosts[h].w) {
            ck_netframe_free(&w->hosts[h].rx);
            if (w->hosts[h].bh)
                ck_bhost_free(w->hosts[h].bh);
            free(w->hosts[h].bh);
            while (w->hosts[h].arrivals) {
                item *it = w->hosts[h].arrivals;
                w->hosts[h].arrivals = it->next;
                item_free(it);
            }
        }
    free(w->hosts);
    free(w->heap);
    live_world = NULL;
    if (w->inj_wake)
        sg_sem_destroy(w->inj_wake);
    if (w->wake)
        sg_sem_destroy(w->wake);
    ck_routes_free(&w->routes);
    free(w->envs);
    if (w->heal)
        sg_sem_destroy(w->heal);
    /* Transfers the simulation left undelivered outlive the world: SimGrid
     * frees them at exit, or free_orphans does. */
    while (w->live) {
        item *it = w->live;
        item_unlink(it);
        it->w = NULL;
        it->live_prev = NULL;
        it->live_next = orphans;
        if (orphans)
            orphans->live_prev = it;
        orphans = it;
    }
    free(w);
}

/* ---- running a job: task managers, deployment, faults -------------------------------- */

static int sim_deploy(ck_bnode *b, uint32_t attempt, uint32_t global,
                      const ck_restore_point *from)
{
    sim_node *tmn = (sim_node *)b;
    sim_world *w = tmn->w;
    /* built from the generation of the graph its attempt runs */
    const ck_job_env *env = ck_backend_env_of(w->envs, ck_routes_gen(&w->routes, attempt));
    const ck_graph *g = env->g;
    uint32_t ep = ck_ep_task(g, attempt, global);
    sim_node *old = node_of(w, ep);
    if (old && !old->b.d.dead)
        return CK_EEXIST;
    ck_platform *tp = ck_sim_endpoint(w, ep, sg_host_get_name(tmn->host), tmn->host_index);
    if (!tp)
        return CK_ENOMEM;
    sim_node *n = (sim_node *)tp;
    int rc = ck_bnode_make_task(&n->b, env, attempt, global, from);
    if (rc)
        return rc;
    char name[200];
    int v, i;
    ck_graph_locate(g, global, &v, &i);
    snprintf(name, sizeof(name), "%s (%d/%d) #%u", g->v[v].name, i + 1, g->v[v].parallelism,
             attempt);
    return ck_sim_attach(w, ep, ck_task_node(n->b.task), name, 0);
}

static void node_stop(sim_node *n)
{
    n->b.d.dead = 1;
    wake(n); /* its host's next pass drops it */
}

static void sim_undeploy(ck_bnode *b, uint32_t attempt, uint32_t global)
{
    sim_node *tmn = (sim_node *)b;
    for (sim_node *n = tmn->w->all; n; n = n->all_next)
        if (ck_bnode_undeploys(&n->b, attempt, global) && n->host_index == tmn->host_index) {
            ck_task_cancel(n->b.task);
            node_stop(n);
        }
}

static int start_tm(sim_world *w, int h)
{
    char hname[32], aname[48];
    snprintf(hname, sizeof(hname), "tm%d", h);
    snprintf(aname, sizeof(aname), "taskmanager %d", h);
    ck_platform *p = ck_sim_endpoint(w, CK_EP_TM0 + (uint32_t)h, hname, h);
    if (!p)
        return CK_ENOMEM;
    sim_node *n = (sim_node *)p;
    n->b.tm = malloc(sizeof(*n->b.tm));
    if (!n->b.tm)
        return CK_ENOMEM;
    ck_tm_init(n->b.tm, p, w->env->g, w->cfg, h, w->ntm);
    ck_tm_generations(n->b.tm, w->env->gens, w->env->ngens);
    return ck_sim_attach(w, CK_EP_TM0 + (uint32_t)h, ck_tm_node(n->b.tm), aname, 0);
}

/* Whoever talked to task manager h learns that the connection broke
 * (flags: CK_PEER_REFUSED when a host that came back refuses it). */
static void tell_peers_lost(sim_world *w, int h, int flags)
{
    for (sim_node *n = w->all; n; n = n->all_next) {
        if (!n->b.d.dead && ck_bnode_talk_forget(&n->b, h))
            post(n, CK_DMSG_PEER_LOST, (uint64_t)(h | flags), 0, NULL, 0);
    }
}

/* A host goes down: everything on it stops. A killed process's host resets
 * its connections, so whoever talked to it learns so at once; a lost host
 * says nothing (its peers learn when it comes back: fault_end). */
static void crash_host(sim_world *w, int h, int kind)
{
    w->tm_down[h] = 1; /* nothing new is sent to it (host_down) */
    for (sim_node *n = w->all; n; n = n->all_next)
        if (n->host_index == h && !n->b.d.dead)
            ck_bnode_host_down(&n->b);
    /* Transfers to it that other actors posted in this scheduling round
     * start before it goes off (SimGrid 3.32 asserts when a transfer
     * starts towards a host that is off; one that is running when the
     * host goes off fails cleanly). Two hosts crashing in one instant:
     * the first one's failover sends to the second. */
    sg_actor_yield();
    sg_host_turn_off(w->tm_hosts[h]);
    host_crashed(w, h);
    if (kind == CK_CRASH_PROCESS)
        tell_peers_lost(w, h, 0);
}

/*
 * The fault injector: an actor that applies the scenario's timeline in
 * simulated time. Slowdowns change the platform itself (a host's power
 * state, a link's bandwidth and latency); network cuts are counted per
 * pair of hosts and the transport holds what crosses them (op_send);
 * crashes turn hosts off. Every change is recomputed from the faults
 * active at that moment, so that overlapping faults add up and end cleanly.
 *
 * A triggered event (ck_fault.moment) is due only once its moment has
 * happened nth times (moment(), called by the transport and the store
 * operations); until then it waits, and a moment wakes the injector. A
 * fault that lasts ends `duration` after it started.
 */
typedef struct injector {
    sim_world *w;
    const ck_backend_job *job;
    ck_backend_result *r;
    sg_host_t *hosts;          /* per network host (nh) */
    sg_link_t *up, *down;      /* its link, both directions (the same if not split) */
    double *bw_up, *bw_down;   /* as the platform declares them */
    unsigned long *pstate;     /* per fault: the power state of a slow_cpu */
    sg_sem_t wake;             /* a moment made a fault due (the world's inj_wake) */
} injector;

static void injector_free(injector *in)
{
    if (!in)
        return;
    free(in->hosts);
    free(in->up);
    free(in->down);
    free(in->bw_up);
    free(in->bw_down);
    free(in->pstate);
    free(in);
}

/* Checks that the platform can play the timeline; fills the injector. */
static injector *injector_new(sim_world *w, const ck_backend_job *job, ck_backend_result *r,
                             char *err, size_t errlen)
{
    int nh = w->ntm + 2;
    injector *in = calloc(1, sizeof(*in));
    if (!in)
        return NULL;
    in->w = w;
    in->job = job;
    in->r = r;
    in->hosts = calloc((size_t)nh, sizeof(*in->hosts));
    in->up = calloc((size_t)nh, sizeof(*in->up));
    in->down = calloc((size_t)nh, sizeof(*in->down));
    in->bw_up = calloc((size_t)nh, sizeof(double));
    in->bw_down = calloc((size_t)nh, sizeof(double));
    in->pstate = calloc((size_t)r->nfaults + 1, sizeof(*in->pstate));
    if (!in->hosts || !in->up || !in->down || !in->bw_up || !in->bw_down || !in->pstate) {
        injector_free(in);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (int h = 0; h < nh; h++) {
        char name[32];
        ck_host_name(h, w->ntm, name, sizeof(name));
        in->hosts[h] = sg_host_by_name(name);
    }
    in->wake = w->inj_wake;
    for (int i = 0; i < r->nfaults; i++) {
        const ck_fault *f = r->faults[i].spec;
        char name[32], lname[64];
        if (f->kind == CK_FAULT_SLOW_CPU) {
            sg_host_t h = in->hosts[f->host];
            ck_host_name(f->host, w->ntm, name, sizeof(name));
            double want = sg_host_get_pstate_speed(h, 0) * f->factor;
            unsigned long k, n = sg_host_get_nb_pstates(h);
            for (k = 1; k < n; k++)
                if (fabs(sg_host_get_pstate_speed(h, k) - want) <= 1e-9 * want)
                    break;
            if (k == n) {
                snprintf(err, errlen,
                         "%s: host \"%s\" has no power state at %g of its speed "
                         "(events[%d] slows it)",
                         r->platform_file, name, f->factor, i);
                injector_free(in);
                return NULL;
            }
            in->pstate[i] = k;
        }
        if (f->kind == CK_FAULT_SLOW_LINK && !in->up[f->host]) {
            ck_host_name(f->host, w->ntm, name, sizeof(name));
            snprintf(lname, sizeof(lname), "link_%s_UP", name);
            in->up[f->host] = ck_sg_link_or_null(lname);
            snprintf(lname, sizeof(lname), "link_%s_DOWN", name);
            in->down[f->host] = ck_sg_link_or_null(lname);
            if (!in->up[f->host] || !in->down[f->host]) {
                snprintf(lname, sizeof(lname), "link_%s", name);
                in->up[f->host] = in->down[f->host] = ck_sg_link_or_null(lname);
            }
            if (!in->up[f->host]) {
                snprintf(err, errlen, "%s: no link \"link_%s\" for events[%d] to slow",
                         r->platform_file, name, i);
                injector_free(in);
                return NULL;
            }
            in->bw_up[f->host] = sg_link_get_bandwidth(in->up[f->host]);
            in->bw_down[f->host] = sg_link_get_bandwidth(in->down[f->host]);
        }
    }
    return in;
}

/* The host's power state and SimGrid link, as the plan says they are now
 * (for store transfers; connections read the plan's factors themselves:
 * link_transfer, the host's ck_bhost). The latency a slow link adds delays what is
 * queued on connections (ck_tp_put). */
static void reslow(injector *in, int h)
{
    const ck_plan *p = &in->w->plan;
    if (h < in->w->nnet && in->w->hosts[h].bh)
        in->w->hosts[h].bh->slow = p->cpu[h]; /* the CPU its nodes charge (bnode.h) */
    unsigned long pstate = p->cpu_by[h] >= 0 ? in->pstate[p->cpu_by[h]] : 0;
    if (in->hosts[h] && sg_host_is_on(in->hosts[h]) &&
        sg_host_get_nb_pstates(in->hosts[h]) > pstate)
        sg_host_set_pstate(in->hosts[h], pstate);
    if (in->up[h]) {
        sg_link_set_bandwidth(in->up[h], in->bw_up[h] * p->bw[h]);
        if (in->down[h] != in->up[h])
            sg_link_set_bandwidth(in->down[h], in->bw_down[h] * p->bw[h]);
    }
}

static void damage(injector *in, ck_fault_run *f)
{
    if (ck_fault_damage(f->spec, in->w->store_dir, in->job->env.job_id, f->detail,
                        sizeof(f->detail), f->key, sizeof(f->key)))
        f->failed = 1;
}

/* Asks the job manager for a savepoint, as `flink savepoint` (or `flink
 * stop`) would, or for a rescale: a message in its inbox. */
static void trigger_savepoint(sim_world *w, ck_fault_run *f)
{
    sim_node *jm = node_of(w, CK_EP_JM);
    size_t n;
    uint8_t *m = ck_fault_request(f->spec, &n);
    if (!jm || jm->b.d.dead || !m) {
        free(m);
        f->failed = 1;
        snprintf(f->detail, sizeof(f->detail), "the job manager is not there");
        return;
    }
    post(jm, CK_DMSG_MESSAGE, 0, 0, m, n);
}

static void fault_start(injector *in, int i)
{
    sim_world *w = in->w;
    ck_fault_run *f = &in->r->faults[i];
    const ck_fault *sp = f->spec;
    ck_plan_start(&w->plan, i, sim_now_ns());
    if (f->failed)
        return; /* a crash of a host that is down already */
    switch (sp->kind) {
    case CK_FAULT_CRASH:
        crash_host(w, sp->host, sp->crash);
        break;
    case CK_FAULT_SLOW_CPU:
    case CK_FAULT_SLOW_LINK:
        reslow(in, sp->host);
        break;
    case CK_FAULT_LINK_DOWN:
    case CK_FAULT_PARTITION:
        break; /* the transport holds what the plan says is cut */
    case CK_FAULT_CORRUPT_CHECKPOINT:
        damage(in, f);
        break;
    case CK_FAULT_SAVEPOINT:
    case CK_FAULT_RESCALE:
        trigger_savepoint(w, f);
        break;
    case CK_FAULT_SLOW_OPERATOR:
    case CK_FAULT_SLOW_SINK:
    case CK_FAULT_HOT_KEY:
        break; /* the engine applies it (ck_job_env.slowdowns), the workload has it */
    case CK_FAULT_STORE_ERRORS:
    case CK_FAULT_STORE_DELAY:
    case CK_FAULT_ALLOC_FAILURE:
        ck_buggify_set(&w->bug, i, 1); /* the hosts' platforms draw from now on */
        break;
    case CK_FAULT_SINK_DUPLICATE:
    case CK_FAULT_SINK_DROP:
    case CK_FAULT_SINK_CORRUPT: {
        /* the sink's next commit applies it (bnode.c) */
        char detail[sizeof(f->detail)];
        if (ck_fault_output_arm(i, w->sinks.dir, detail, sizeof(detail)))
            ck_plan_failed(&w->plan, i, detail);
        break;
    }
    }
}

static void fault_end(injector *in, int i)
{
    sim_world *w = in->w;
    const ck_fault *sp = in->r->faults[i].spec;
    ck_plan_end(&w->plan, i, sim_now_ns());
    switch (sp->kind) {
    case CK_FAULT_CRASH:
        /* A lost host back: its new kernel refuses the old connections. */
        if (sp->crash == CK_CRASH_HOST)
            tell_peers_lost(w, sp->host, CK_PEER_REFUSED);
        w->tm_down[sp->host] = 0;
        sg_host_turn_on(w->tm_hosts[sp->host]);
        start_tm(w, sp->host);
        break;
    case CK_FAULT_SLOW_CPU:
    case CK_FAULT_SLOW_LINK:
        reslow(in, sp->host);
        break;
    case CK_FAULT_LINK_DOWN:
    case CK_FAULT_PARTITION:
        release_held(w);
        break;
    case CK_FAULT_STORE_ERRORS:
    case CK_FAULT_STORE_DELAY:
    case CK_FAULT_ALLOC_FAILURE:
        ck_buggify_set(&w->bug, i, 0);
        break;
    default:
        break;
    }
}

/*
 * A moment of the run happened (seen by the transport or the store): the
 * triggered events waiting for its nth occurrence become due. `id` tells
 * the messages of one checkpoint apart (0 for the store moments, each
 * operation an occurrence of its own).
 */
static void moment(sim_world *w, ck_moment m, uint64_t id, int has_id)
{
    if (w->injector && ck_plan_moment(&w->plan, m, id, has_id, cur_now(w))) {
        /* The injector acts at this time, before the scheduler goes on. */
        catch_up(w);
        w->inj_next = cur_now(w);
        if (w->in_sched)
            w->poke = 1;
        sg_sem_release(w->injector->wake);
    }
}

/* The moments in a message the job manager sends: a checkpoint triggered
 * at the sources, a completion on its way to the subtasks. */
static void watch_send(sim_world *w, uint32_t src, const uint8_t *msg, size_t len)
{
    ck_moment m;
    uint64_t id;
    if (w->injector && ck_plan_msg_moment(src, msg, len, &m, &id))
        moment(w, m, id, 1);
}

static void injector_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    injector *in = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    const ck_plan *p = &in->w->plan;
    /* Starts and ends, in time order (ties: in the order of the timeline). */
    for (;;) {
        int which, end, waiting;
        ck_time next = ck_plan_next(p, &which, &end, &waiting);
        /* The scheduler runs ahead of SimGrid's clock no further than
         * where the injector wakes (sched_main). */
        in->w->inj_next = which < 0 ? CK_TIME_NEVER : next;
        if (which < 0 && !waiting)
            break;
        if (!p->ntriggered) {
            sg_actor_sleep_until((double)next / 1e9);
        } else if (which < 0) {
            sg_sem_acquire(in->wake); /* until a moment makes an event due */
            continue;
        } else {
            ck_time now = sim_now_ns();
            if (next > now && !sg_sem_acquire_timeout(in->wake, (double)(next - now) / 1e9))
                continue; /* a moment came first */
        }
        if (end)
            fault_end(in, which);
        else
            fault_start(in, which);
    }
}

/*
 * Chooses what times the job's transfers between hosts (sim/simnet.h):
 * the model the scenario asks for (cluster.transfer_model), or under
 * "auto" the fast model where it is exact and SimGrid's elsewhere. Says
 * which and why in r. Returns 0; CK_EINVAL (err says why, in one line)
 * when "fast" is asked for where it is not exact; CK_ENOMEM.
 */
static int choose_transfer_model(sim_world *w, const ck_cluster_spec *cl, ck_backend_result *r,
                                 char *err, size_t errlen)
{
    ck_simnet_model want = !strcmp(cl->transfer_model, "fast")      ? CK_SIMNET_FAST
                           : !strcmp(cl->transfer_model, "simgrid") ? CK_SIMNET_SIMGRID
                                                                    : CK_SIMNET_AUTO;
    char why[400] = "";
    int exact = 0;
    if (want == CK_SIMNET_SIMGRID) {
        snprintf(r->transfer_model_why, sizeof(r->transfer_model_why),
                 "asked for (cluster.transfer_model)");
    } else if (strcmp(cl->network_model, "CM02")) {
        snprintf(why, sizeof(why),
                 "network model %s corrects each transfer's latency and bandwidth by factors "
                 "and weights its share of a link by its route's latency",
                 cl->network_model);
    } else if (!cl->platform[0]) {
        /* The generated platform: each host's own split-duplex link into
         * a non-blocking switch (rules 1 and 2 by construction); rule 3. */
        double gamma = sg_cfg_get_double("network/TCP-gamma");
        double rtt = 4.0 * (double)cl->link_lat / 1e9;
        exact = !(gamma > 0 && rtt > 0 && gamma / rtt < cl->link_bw);
        if (!exact)
            snprintf(why, sizeof(why),
                     "SimGrid's TCP window (network/TCP-gamma, %.6g bytes) limits a transfer "
                     "between two hosts over its %.6g s round trip to %.6g B/s, below the "
                     "%.6g B/s of their links",
                     gamma, rtt, gamma / rtt, cl->link_bw);
    } else {
        int rc = ck_simnet_check_file(r->platform_file, why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "%s: %s", r->platform_file, why);
            return CK_EINVAL;
        }
        if (rc == 0) {
            int n = w->ntm + 1;
            sg_host_t *hosts = malloc((size_t)n * sizeof(*hosts));
            w->own_up = malloc((size_t)n * sizeof(double));
            w->own_down = malloc((size_t)n * sizeof(double));
            if (!hosts || !w->own_up || !w->own_down) {
                free(hosts);
                return CK_ENOMEM;
            }
            memcpy(hosts, w->tm_hosts, (size_t)w->ntm * sizeof(*hosts));
            hosts[w->ntm] = sg_host_by_name("jm");
            exact = ck_simnet_check_platform(hosts, n, w->store_host, w->own_up, w->own_down,
                                             why, sizeof(why));
            free(hosts);
            if (exact < 0)
                return exact;
            if (exact)
                w->nown = n;
        }
    }
    if (want == CK_SIMNET_FAST && !exact) {
        snprintf(err, errlen, "cluster.transfer_model: \"fast\" cannot honour %s%s: %s",
                 cl->platform[0] ? "the platform " : "the generated platform",
                 cl->platform[0] ? r->platform_file : "", why);
        return CK_EINVAL;
    }
    w->sg_net = want == CK_SIMNET_SIMGRID || !exact;
    long hosts = w->ntm + 1, pairs = hosts * (hosts - 1);
    if (w->sg_net && pairs > SG_TRANSFERS_MAX) {
        snprintf(err, errlen,
                 "cluster.transfer_model: SimGrid's flow model (%s%s) keeps an actor per transfer "
                 "in flight, up to %ld between these %ld hosts, more than the %d one process "
                 "can hold",
                 want == CK_SIMNET_SIMGRID ? "asked for" : "which the platform needs: ",
                 want == CK_SIMNET_SIMGRID ? "" : why, pairs, hosts, SG_TRANSFERS_MAX);
        return CK_EINVAL;
    }
    snprintf(r->transfer_model, sizeof(r->transfer_model), "%s",
             ck_simnet_model_name(w->sg_net ? CK_SIMNET_SIMGRID : CK_SIMNET_FAST));
    if (want == CK_SIMNET_SIMGRID)
        return CK_OK;
    if (exact)
        snprintf(r->transfer_model_why, sizeof(r->transfer_model_why), "%s: %s",
                 want == CK_SIMNET_FAST ? "asked for" : "auto",
                 cl->platform[0] ? "every route between the job's hosts is limited by their own "
                                   "links only (sim/simnet.h)"
                                 : "the generated platform, each host's own link into a "
                                   "non-blocking switch");
    else
        snprintf(r->transfer_model_why, sizeof(r->transfer_model_why), "auto: %s", why);
    return CK_OK;
}

static int sim_run(const ck_backend_job *job, ck_backend_result *r, char *err, size_t errlen)
{
    const ck_cluster_spec *cl = job->cluster;

    /* The platform: the scenario's file, or one generated from its cluster. */
    if (cl->platform[0]) {
        snprintf(r->platform_file, sizeof(r->platform_file), "%s", cl->platform);
    } else {
        snprintf(r->platform_file, sizeof(r->platform_file), "%s/platform.xml", job->outdir);
        FILE *f = fopen(r->platform_file, "w");
        if (!f) {
            snprintf(err, errlen, "%s: cannot write: %s", r->platform_file, strerror(errno));
            return CK_EIO;
        }
        int rc = ck_simplat_write(f, cl, job->faults, job->nfaults, job->ntm);
        if (fclose(f) || rc) {
            snprintf(err, errlen, "%s: cannot write", r->platform_file);
            return CK_EIO;
        }
    }
    snprintf(r->network_model, sizeof(r->network_model), "%s", cl->network_model);
    char store_dir[600];
    snprintf(store_dir, sizeof(store_dir), "%s/store", job->outdir);
    ck_sim *w = ck_sim_new(r->platform_file, cl->network_model, store_dir, job->verbose,
                           err, errlen);
    if (!w)
        return CK_EINVAL;
    w->bw.check = job->check_invariants;
    w->bw.faults = job->faults;
    w->bw.nfaults = job->nfaults;
    char sink_dir[600];
    snprintf(sink_dir, sizeof(sink_dir), "%s/sink", job->outdir);
    if (ck_sim_set_sink_dir(w, sink_dir)) {
        snprintf(err, errlen, "%s: cannot create: %s", sink_dir, strerror(errno));
        ck_sim_del(w);
        return CK_EIO;
    }
    w->env = &job->env;
    if (!(w->envs = ck_backend_envs(&job->env))) {
        snprintf(err, errlen, "out of memory");
        ck_sim_del(w);
        return CK_ENOMEM;
    }
    ck_routes_init(&w->routes, ck_graph_stride(job->env.g));
    w->cfg = job->env.cfg;
    w->local_disk_bw = cl->local_disk_bw;
    w->ntm = job->ntm;
    w->tm_hosts = calloc((size_t)w->ntm, sizeof(sg_host_t));
    w->tm_down = calloc((size_t)w->ntm, 1);
    int rc = w->tm_hosts && w->tm_down ? CK_OK : CK_ENOMEM;
    for (int h = 0; h < w->ntm && !rc; h++) {
        char hname[32];
        snprintf(hname, sizeof(hname), "tm%d", h);
        w->tm_hosts[h] = sg_host_by_name(hname);
        if (!w->tm_hosts[h]) {
            snprintf(err, errlen, "%s: the platform has no host \"%s\"", r->platform_file, hname);
            rc = CK_EINVAL;
        }
    }
    if (!rc && !sg_host_by_name("jm")) {
        snprintf(err, errlen, "%s: the platform has no host \"jm\"", r->platform_file);
        rc = CK_EINVAL;
    }
    if (!rc)
        rc = choose_transfer_model(w, cl, r, err, errlen);
    ck_platform *jp = rc ? NULL : ck_sim_endpoint(w, CK_EP_JM, "jm", -1);
    if (!rc && !jp) {
        snprintf(err, errlen, "%s: the platform has no host \"jm\"", r->platform_file);
        rc = CK_EINVAL;
    }
    if (!rc && !(rc = ck_jm_init(&r->jm, jp, &job->env, job->ntm, job->seed))) {
        r->jm_ready = 1;
        rc = ck_sim_attach(w, CK_EP_JM, ck_jm_node(&r->jm), "jobmanager", 1);
    }
    for (int h = 0; h < w->ntm && !rc; h++)
        rc = start_tm(w, h);
    if (!rc && r->nfaults) {
        rc = ck_plan_init(&w->plan, job->faults, r->nfaults, w->ntm, r->faults);
        if (!rc && !(rc = ck_buggify_init(&w->bug, job->faults, r->nfaults, w->ntm, job->seed)))
            w->bw.bug = &w->bug;
        injector *in = rc ? NULL : injector_new(w, job, r, err, errlen);
        if (!in) {
            rc = rc ? rc : CK_EINVAL;
        } else {
            sg_actor_t a = sg_actor_init("faults", sg_host_by_name("jm"));
            sg_actor_set_data(a, in);
            sg_actor_start(a, injector_main, 0, NULL);
            w->injector = in;
            w->inj_next = 0; /* until it sleeps for the first time */
        }
    }
    /* A stalled job keeps its timers ticking: bound simulated time. */
    double limit = 10.0 * (double)job->input_duration / 1e9 + 300.0;
    for (int i = 0; i < r->nfaults; i++)
        limit += (double)(r->faults[i].spec->at + r->faults[i].spec->duration) / 1e9;
    if (!rc && r->nfaults)
        limit += 2.0 * (double)ck_cfg(job->env.cfg, CK_CFG_HB_TIMEOUT) / 1e9;
    if (!rc)
        r->wall_s = ck_sim_run_all(w, limit);
    else if (!err[0] || rc == CK_ENOMEM)
        snprintf(err, errlen, "setting up the job: %s", ck_strerror(rc));
    r->time_limit_s = limit;
    int reached = ck_sim_reached_limit(w);
    ck_sim_stats(w, r);
    for (int i = 0; w->bug.hits && i < r->nfaults; i++)
        r->faults[i].hits = w->bug.hits[i];
    injector_free(w->injector);
    w->injector = NULL;
    if (ck_sinkfs_flush(&w->sinks) && !w->sink_error[0])
        snprintf(w->sink_error, sizeof(w->sink_error), "cannot write the sinks' output: %s",
                 strerror(errno));
    if (w->sink_error[0])
        snprintf(r->error, sizeof(r->error), "%s: %s", job->outdir, w->sink_error);
    ck_sim_del(w);
    if (rc)
        return rc;
    /* What the sinks committed, read back (a run that cannot, could not
     * record its output). */
    int lrc = ck_sinkfs_load(sink_dir, &r->out);
    if (lrc && !r->error[0])
        snprintf(r->error, sizeof(r->error), "%s: cannot read the sinks' output: %s", sink_dir,
                 ck_strerror(lrc));
    ck_backend_output_faults(r, job->env.g, sink_dir);
    if (r->jm.state != CK_JOB_FINISHED && r->jm.state != CK_JOB_FAILED) {
        /* Stopped at the time limit (a stalled job keeps its timers
         * ticking), or, should every actor ever wait for good, stalled. */
        r->jm.end = (ck_time)llround(simgrid_get_clock() * 1e9);
        if (reached) {
            r->unfinished = "TIME_LIMIT";
            snprintf(r->jm.failure, sizeof(r->jm.failure),
                     "simulated time limit %.6g s reached with the job %s", limit,
                     ck_job_state_name(r->jm.state));
        } else {
            snprintf(r->jm.failure, sizeof(r->jm.failure),
                     "the simulation stopped at %.6g s with the job %s: every actor waits",
                     simgrid_get_clock(), ck_job_state_name(r->jm.state));
            r->jm.state = CK_JOB_FAILED;
            r->jm.failed_because = CK_JOBFAIL_STALLED;
        }
    }
    return CK_OK;
}

const ck_backend_ops ck_backend_simgrid = {"simgrid", sim_run};
