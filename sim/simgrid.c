/*
 * simgrid.c - the SimGrid backend: every endpoint of the job (the job
 * manager, each subtask) is a SimGrid actor on its host, driving its
 * sans-I/O node with simulated time.
 *
 * Per endpoint there are two actors:
 *   - the node actor runs the node loop (node.h): deadlines, inbox, work();
 *     it sleeps on a semaphore until something is put in its inbox or its
 *     next deadline passes;
 *   - a receiver daemon owns the endpoint's mailbox as its permanent
 *     receiver, so that transfers start as soon as they are sent (as a NIC
 *     receives while the CPU computes), and moves arrived messages into the
 *     node's inbox.
 *
 * Transfers of different sizes may complete out of order in SimGrid; the
 * receiver restores the order per sender with sequence numbers, so that
 * the engine sees FIFO channels as over TCP.
 *
 * Messages are the engine's real bytes; the simulated size of a transfer
 * is their real length. CPU cost is charged with sg_actor_execute; store
 * uploads and downloads travel over the store host's link and its disk,
 * and the bytes are real files under <out>/store/.
 *
 * Everything runs in one OS thread, in SimGrid's deterministic order: no
 * wall clock, no unseeded randomness.
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
#include <xbt/log.h>

#include "error.h"
#include "faultplan.h"
#include "sgshim.h"
#include "simgrid.h"
#include "simplatform.h"
#include "sinkfs.h"
#include "storefs.h"
#include "taskmanager.h"

enum { ITEM_MSG, ITEM_DONE, ITEM_PEER_LOST };

typedef struct item {
    struct item *next;
    /* every item not freed yet, in its world (ck_sim.live): a run stopped at
     * its time limit leaves transfers SimGrid never delivers nor frees */
    struct item *live_prev, *live_next;
    struct ck_sim *w;
    int kind;
    uint32_t src, dst, seq;
    ck_time due; /* delayed by a slow link: when it leaves */
    uint8_t *data;
    size_t len;
    uint64_t token;
    int status;
} item;

/* What a node knows of one peer: sequence numbers both ways (the transport
 * of this backend: it restores per-sender order, as TCP would). */
typedef struct peer {
    uint32_t ep;
    uint32_t tx_next, rx_next;
    item *pending; /* arrived early, sorted by seq */
    item *held, *held_tail; /* sent while the network between us is cut */
    int used;
} peer;

typedef struct ck_sim sim_world;

typedef struct sim_node {
    ck_platform plat; /* first member: a ck_platform * is a sim_node * */
    sim_world *w;
    ck_node node;
    int ends_run;
    int dead;         /* stopped or crashed: its loop ends, its mail is dropped */
    int host_index;   /* task manager index, -1 for others */
    int net_host;     /* host in the network: task managers 0..ntm-1, jm ntm */
    int is_task;
    uint32_t attempt;
    ck_task *task;    /* owned (tasks), freed with the world */
    ck_tm *tm;        /* owned (task managers) */
    sg_host_t host;
    char mbname[32];
    sg_mailbox_t mb;
    sg_sem_t wake;    /* released for each thing put in its inbox (wake()) */
    item *head, *tail;
    peer *peers;
    uint32_t npeers, peers_cap;
    struct sim_node *all_next; /* every node ever made, for teardown */
} sim_node;

struct ck_sim {
    sim_node **map; /* endpoint -> current node */
    uint32_t map_cap, map_n;
    sim_node *all;
    sg_host_t store_host;
    sg_disk_t store_disk;
    char store_dir[600];
    uint64_t next_id;
    ck_sinkfs sinks;     /* the sinks' external system: files (io/sinkfs.h) */
    int have_sinks;
    char sink_error[200]; /* the first failed write to it, or "" */
    int verbose;
    uint64_t messages, message_bytes;
    /* a job run */
    const ck_job_env *env;
    const ck_config *cfg;
    int ntm;
    sg_host_t *tm_hosts;
    /* a task manager's host is going down or is down: set before the host
     * is turned off, since other actors run while that takes effect */
    uint8_t *tm_down;
    /* the timeline and the conditions in force (backend/faultplan.h;
     * plan.cut is NULL without faults); heal wakes store transfers */
    ck_plan plan;
    sg_sem_t heal;       /* released once per waiter when a cut heals */
    int heal_waiters;
    /* the messages that slow links delay (plan.lat), in order of when
     * they are due, sent by the delay actor */
    item *delayed;
    sg_sem_t delay_wake;
    /* the placement of the latest attempt, for endpoints not deployed yet */
    uint32_t routes_attempt;
    uint16_t *routes;
    /* the fault injector's state: freed after the simulation, because the
     * injector is a daemon that the end of the job may kill while it sleeps */
    struct injector *injector;
    item *live; /* every item not freed yet (item_new) */
    /* the limit of simulated time, and whether the run was stopped at it */
    double limit_s;
    int reached_limit;
    sg_sem_t inj_wake; /* the injector waits on it for moments (destroyed with the world) */
};

static void watch_send(sim_world *w, uint32_t src, const uint8_t *msg, size_t len);
static void moment(sim_world *w, ck_moment m, uint64_t id, int has_id);

static inline ck_time sim_now_ns(void)
{
    return (ck_time)llround(simgrid_get_clock() * 1e9);
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
        if (n->plat.endpoint == ep)
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
            uint32_t j = ep_hash(w->map[i]->plat.endpoint) & (ncap - 1);
            while (nm[j])
                j = (j + 1) & (ncap - 1);
            nm[j] = w->map[i];
        }
        free(w->map);
        w->map = nm;
        w->map_cap = ncap;
    }
    for (uint32_t j = ep_hash(n->plat.endpoint) & (w->map_cap - 1);; j = (j + 1) & (w->map_cap - 1)) {
        if (!w->map[j]) {
            w->map[j] = n;
            w->map_n++;
            return CK_OK;
        }
        if (w->map[j]->plat.endpoint == n->plat.endpoint) {
            w->map[j] = n; /* a new incarnation (a restarted task manager) */
            return CK_OK;
        }
    }
}

/* ---- peers -------------------------------------------------------------------- */

static peer *peer_get(sim_node *n, uint32_t ep)
{
    if ((n->npeers + 1) * 2 > n->peers_cap) {
        uint32_t ncap = n->peers_cap ? n->peers_cap * 2 : 16;
        peer *np = calloc(ncap, sizeof(*np));
        if (!np)
            return NULL;
        for (uint32_t i = 0; i < n->peers_cap; i++) {
            if (!n->peers[i].used)
                continue;
            uint32_t j = ep_hash(n->peers[i].ep) & (ncap - 1);
            while (np[j].used)
                j = (j + 1) & (ncap - 1);
            np[j] = n->peers[i];
        }
        free(n->peers);
        n->peers = np;
        n->peers_cap = ncap;
    }
    for (uint32_t j = ep_hash(ep) & (n->peers_cap - 1);; j = (j + 1) & (n->peers_cap - 1)) {
        peer *p = &n->peers[j];
        if (!p->used) {
            memset(p, 0, sizeof(*p));
            p->used = 1;
            p->ep = ep;
            n->npeers++;
            return p;
        }
        if (p->ep == ep)
            return p;
    }
}

static void peer_reset(peer *p)
{
    p->tx_next = p->rx_next = 0;
    while (p->pending) {
        item *q = p->pending;
        p->pending = q->next;
        item_free(q);
    }
    while (p->held) {
        item *q = p->held;
        p->held = q->next;
        item_free(q);
    }
    p->held_tail = NULL;
}

static void inbox_push(sim_node *n, item *it)
{
    it->next = NULL;
    if (n->tail)
        n->tail->next = it;
    else
        n->head = it;
    n->tail = it;
}

static item *inbox_pop(sim_node *n)
{
    item *it = n->head;
    if (it) {
        n->head = it->next;
        if (!n->head)
            n->tail = NULL;
    }
    return it;
}

/* Delivers an arrived message in its sender's order. */
static void deliver(sim_node *n, item *it)
{
    if (n->dead) {
        item_free(it);
        return;
    }
    if (it->kind != ITEM_MSG) {
        inbox_push(n, it);
        return;
    }
    peer *p = peer_get(n, it->src);
    if (!p) {
        item_free(it);
        return;
    }
    if (it->seq != p->rx_next) {
        item **pp = &p->pending;
        while (*pp && (*pp)->seq < it->seq)
            pp = &(*pp)->next;
        it->next = *pp;
        *pp = it;
        return;
    }
    inbox_push(n, it);
    p->rx_next++;
    while (p->pending && p->pending->seq == p->rx_next) {
        item *q = p->pending;
        p->pending = q->next;
        inbox_push(n, q);
        p->rx_next++;
    }
}

/* ---- platform operations ---------------------------------------------------------- */

static ck_time op_now(ck_platform *p)
{
    CK_UNUSED(p);
    return sim_now_ns();
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
    if (w->routes && w->env && ep >= CK_EP_TASK0) {
        uint32_t nsub = w->env->g->nsubtasks, k = ep - CK_EP_TASK0;
        if (k / nsub == w->routes_attempt)
            return w->routes[k % nsub];
    }
    return -1;
}

static int is_cut(const sim_world *w, int a, int b)
{
    return ck_plan_is_cut(&w->plan, a, b);
}

static void transmit(sim_world *w, item *it, uint32_t dst)
{
    /* To a node whose host crashed (or is crashing: turning it off lets
     * other actors run before it takes effect): the bytes go nowhere.
     * SimGrid asserts on a transfer to a host that is off. */
    const sim_node *to = node_of(w, dst);
    if (to && to->dead && to->host_index >= 0 && w->tm_down && w->tm_down[to->host_index]) {
        item_free(it);
        return;
    }
    /* By name: an endpoint not deployed yet gets its mail once it is. */
    char name[32];
    snprintf(name, sizeof(name), "ep%u", dst);
    sg_comm_t c = sg_mailbox_put_init(sg_mailbox_by_name(name), it, (long)it->len);
    sg_comm_detach(c, item_free);
    w->messages++;
    w->message_bytes += it->len;
}

/* Latency added between hosts a and b by slow links (both ends count). */
static ck_time added_latency(const sim_world *w, int a, int b)
{
    const ck_plan *p = &w->plan;
    if (!p->lat)
        return 0;
    return (a >= 0 && a < p->nh ? p->lat[a] : 0) + (b >= 0 && b < p->nh ? p->lat[b] : 0);
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

static void delay(sim_world *w, item *it, ck_time by)
{
    it->due = sim_now_ns() + by;
    item **pp = &w->delayed;
    while (*pp && (*pp)->due <= it->due)
        pp = &(*pp)->next;
    it->next = *pp;
    *pp = it;
    sg_sem_release(w->delay_wake);
}

/* Sends delayed messages when they are due. */
static void delay_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_world *w = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    for (;;) {
        drain(w->delay_wake);
        ck_time now = sim_now_ns();
        while (w->delayed && w->delayed->due <= now) {
            item *it = w->delayed;
            w->delayed = it->next;
            it->next = NULL;
            transmit(w, it, it->dst);
        }
        if (w->delayed)
            sg_sem_acquire_timeout(w->delay_wake, (double)(w->delayed->due - now) / 1e9);
        else
            sg_sem_acquire(w->delay_wake);
    }
}

static int op_send(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len)
{
    sim_node *n = (sim_node *)p;
    sim_world *w = n->w;
    watch_send(w, p->endpoint, msg, len);
    sim_node *to = node_of(w, dst);
    if (to && to->dead && to->host_index >= 0 && !sg_host_is_on(to->host)) {
        free(msg); /* its host is down: the bytes go nowhere */
        return CK_OK;
    }
    peer *pr = peer_get(n, dst);
    item *it = pr ? item_new(w, (item){.kind = ITEM_MSG, .src = p->endpoint, .dst = dst,
                                       .seq = pr->tx_next, .data = msg, .len = len})
                  : NULL;
    if (!it) {
        free(msg);
        return CK_ENOMEM;
    }
    pr->tx_next++;
    int to_host = ep_host(w, dst);
    if (pr->held || is_cut(w, n->net_host, to_host)) {
        /* Cut off: held, in order, until the network heals (TCP retransmits). */
        it->next = NULL;
        if (pr->held_tail)
            pr->held_tail->next = it;
        else
            pr->held = it;
        pr->held_tail = it;
        return CK_OK;
    }
    ck_time lat = added_latency(w, n->net_host, to_host);
    if (lat > 0)
        delay(w, it, lat); /* the receiver restores the order by sequence number */
    else
        transmit(w, it, dst);
    return CK_OK;
}

/* After a network fault ends: what was held and can go now, goes. */
static void release_held(sim_world *w)
{
    for (sim_node *n = w->all; n; n = n->all_next) {
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->peers_cap; k++) {
            peer *pr = &n->peers[k];
            if (!pr->used || !pr->held || is_cut(w, n->net_host, ep_host(w, pr->ep)))
                continue;
            ck_time lat = added_latency(w, n->net_host, ep_host(w, pr->ep));
            while (pr->held) {
                item *it = pr->held;
                pr->held = it->next;
                it->next = NULL;
                if (lat > 0)
                    delay(w, it, lat);
                else
                    transmit(w, it, pr->ep);
            }
            pr->held_tail = NULL;
        }
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

static void op_cpu(ck_platform *p, double flops)
{
    CK_UNUSED(p);
    if (flops > 0)
        sg_actor_execute(flops);
}

typedef struct store_job {
    sim_node *n;
    char key[CK_STORE_KEY_MAX];
    char mbname[48];
    uint8_t *data;
    size_t len;
    uint64_t token;
} store_job;

static void send_store_done(sim_node *n, uint64_t token, int status, uint8_t *data, size_t len)
{
    wait_reachable(n->w, n->w->ntm + 1, n->net_host);
    if (n->dead) {
        /* Its host went down (SimGrid asserts on a transfer to a host that
         * is off): the answer has nobody to go to. */
        free(data);
        return;
    }
    item *it = item_new(n->w, (item){.kind = ITEM_DONE, .src = UINT32_MAX, .data = data,
                                     .len = len, .token = token, .status = status});
    if (!it) {
        free(data);
        return;
    }
    /* The answer travels back over the network: a small header plus the data. */
    sg_comm_t c = sg_mailbox_put_init(n->mb, it, (long)(64 + len));
    sg_comm_detach(c, item_free);
}

/* A store request's actor on the node's host was killed (its host
 * crashed) while it still owned the job. */
static void job_killed(int failed, void *p)
{
    store_job *j = p;
    if (failed) {
        free(j->data);
        free(j);
    }
}

/* The actor that serves a store request on the store host: its mailbox,
 * and the job once received. It owns both until it ends, however it ends
 * (a request whose sender crashed is never received: the actor is killed
 * at the end of the simulation). */
typedef struct store_handler {
    char mbname[48];
    store_job *j;
} store_handler;

static void handler_exit(int failed, void *p)
{
    CK_UNUSED(failed);
    store_handler *h = p;
    if (h->j) {
        free(h->j->data);
        free(h->j);
    }
    free(h);
}

/* On the node's host: push the bytes to the store. */
static void uploader_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
    sg_actor_on_exit(job_killed, j);
    wait_reachable(j->n->w, j->n->net_host, j->n->w->ntm + 1);
    if (ck_sg_put(sg_mailbox_by_name(j->mbname), j, (long)(64 + j->len)) != 0) {
        /* The store never got it: the node learns through its own failure. */
        free(j->data);
        free(j);
    }
}

/* On the store host: take the upload, write it to disk, acknowledge. */
static void put_handler_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_handler *h = sg_actor_self_get_data();
    sg_actor_on_exit(handler_exit, h);
    void *p;
    if (ck_sg_get(sg_mailbox_by_name(h->mbname), &p) != 0)
        return;
    store_job *j = h->j = p;
    sim_world *w = j->n->w;
    if (j->len)
        sg_disk_write(w->store_disk, (sg_size_t)j->len);
    int status = ck_storefs_put(w->store_dir, j->key, j->data, j->len, 0);
    send_store_done(j->n, j->token, status, NULL, 0);
}

static int op_store_put(ck_platform *p, const char *key, uint8_t *data, size_t len,
                        uint64_t token)
{
    sim_node *n = (sim_node *)p;
    sim_world *w = n->w;
    if (!ck_storefs_key_ok(key)) {
        free(data);
        return CK_EINVAL;
    }
    store_job *j = calloc(1, sizeof(*j));
    store_handler *sh = calloc(1, sizeof(*sh));
    if (!j || !sh) {
        free(j);
        free(sh);
        free(data);
        return CK_ENOMEM;
    }
    uint64_t id = w->next_id++;
    j->n = n;
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->mbname, sizeof(j->mbname), "store-put-%llu", (unsigned long long)id);
    snprintf(sh->mbname, sizeof(sh->mbname), "%s", j->mbname);
    j->data = data;
    j->len = len;
    j->token = token;
    char name[64];
    snprintf(name, sizeof(name), "store-put-%llu", (unsigned long long)id);
    sg_actor_t h = sg_actor_init(name, w->store_host);
    sg_actor_set_data(h, sh);
    sg_actor_start(h, put_handler_main, 0, NULL);
    sg_actor_t u = sg_actor_init(name, n->host);
    sg_actor_set_data(u, j);
    sg_actor_start(u, uploader_main, 0, NULL);
    if (n->is_task)
        moment(w, CK_MOMENT_UPLOAD_STARTED, 0, 0);
    return CK_OK;
}

/* On the node's host: ask the store for a key. */
static void requester_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
    sg_actor_on_exit(job_killed, j);
    wait_reachable(j->n->w, j->n->net_host, j->n->w->ntm + 1);
    if (ck_sg_put(sg_mailbox_by_name(j->mbname), j, 64) != 0)
        free(j);
}

/* On the store host: read the object and send it back. */
static void get_handler_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_handler *h = sg_actor_self_get_data();
    sg_actor_on_exit(handler_exit, h);
    void *p;
    if (ck_sg_get(sg_mailbox_by_name(h->mbname), &p) != 0)
        return;
    store_job *j = h->j = p;
    sim_world *w = j->n->w;
    uint8_t *data = NULL;
    size_t len = 0;
    int status = ck_storefs_get(w->store_dir, j->key, &data, &len);
    if (status == CK_OK && len)
        sg_disk_read(w->store_disk, (sg_size_t)len);
    send_store_done(j->n, j->token, status, data, len);
}

static int op_store_get(ck_platform *p, const char *key, uint64_t token)
{
    sim_node *n = (sim_node *)p;
    sim_world *w = n->w;
    if (!ck_storefs_key_ok(key))
        return CK_EINVAL;
    store_job *j = calloc(1, sizeof(*j));
    store_handler *sh = calloc(1, sizeof(*sh));
    if (!j || !sh) {
        free(j);
        free(sh);
        return CK_ENOMEM;
    }
    uint64_t id = w->next_id++;
    j->n = n;
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->mbname, sizeof(j->mbname), "store-get-%llu", (unsigned long long)id);
    snprintf(sh->mbname, sizeof(sh->mbname), "%s", j->mbname);
    j->token = token;
    sg_actor_t h = sg_actor_init(j->mbname, w->store_host);
    sg_actor_set_data(h, sh);
    sg_actor_start(h, get_handler_main, 0, NULL);
    sg_actor_t u = sg_actor_init(j->mbname, n->host);
    sg_actor_set_data(u, j);
    sg_actor_start(u, requester_main, 0, NULL);
    if (n->is_task)
        moment(w, CK_MOMENT_RESTORE_STARTED, 0, 0);
    return CK_OK;
}

static int op_store_list(ck_platform *p, const char *prefix, ck_store_entry **out, size_t *n)
{
    sim_node *sn = (sim_node *)p;
    return ck_storefs_list(sn->w->store_dir, prefix, out, n);
}

static int op_store_delete(ck_platform *p, const char *key)
{
    sim_node *sn = (sim_node *)p;
    return ck_storefs_delete(sn->w->store_dir, key);
}

/* The sinks write real bytes to files with two-phase commit, as over
 * sockets (io/sinkfs.h); the external system costs no simulated time. */
static int sink_rc(sim_world *w, int rc)
{
    if (rc == CK_EIO && !w->sink_error[0]) {
        snprintf(w->sink_error, sizeof(w->sink_error), "cannot write the sinks' output: %s",
                 strerror(errno));
        fprintf(stderr, "chandy: %s: %s\n", w->sinks.dir, w->sink_error);
    }
    return rc;
}

static int op_output(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *data,
                     size_t len)
{
    sim_world *w = ((sim_node *)p)->w;
    if (!w->have_sinks)
        return CK_EIO;
    return sink_rc(w, ck_sinkfs_write(&w->sinks, sink, txn, data, len));
}

static int op_output_commit(ck_platform *p, uint32_t sink, uint64_t txn)
{
    sim_world *w = ((sim_node *)p)->w;
    return w->have_sinks ? sink_rc(w, ck_sinkfs_commit(&w->sinks, sink, txn)) : CK_EIO;
}

static int op_output_abort(ck_platform *p, uint32_t sink, uint64_t txn)
{
    sim_world *w = ((sim_node *)p)->w;
    return w->have_sinks ? sink_rc(w, ck_sinkfs_abort(&w->sinks, sink, txn)) : CK_EIO;
}

typedef struct bg_job {
    sim_node *n;
    double flops;
    uint64_t token;
} bg_job;

/* On the node's host, beside the node: compute, then report. */
static void background_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    bg_job *j = sg_actor_self_get_data();
    if (j->flops > 0)
        sg_actor_execute(j->flops);
    item *it = item_new(j->n->w, (item){.kind = ITEM_DONE, .src = UINT32_MAX, .token = j->token});
    if (it) {
        inbox_push(j->n, it);
        sg_sem_release(j->n->wake);
    }
    free(j);
}

static void op_cpu_background(ck_platform *p, double flops, uint64_t token)
{
    sim_node *n = (sim_node *)p;
    bg_job *j = malloc(sizeof(*j));
    if (!j)
        return;
    *j = (bg_job){n, flops, token};
    sg_actor_t a = sg_actor_init("background", n->host);
    sg_actor_set_data(a, j);
    sg_actor_start(a, background_main, 0, NULL);
}

static void op_log(ck_platform *p, int level, const char *line)
{
    sim_node *n = (sim_node *)p;
    if (level <= CK_LOG_WARN || n->w->verbose)
        fprintf(stderr, "[%.6f] %s: %s\n", simgrid_get_clock(), n->mbname, line);
}

static int op_deploy(ck_platform *p, uint32_t attempt, uint32_t global,
                     const ck_restore_point *from);
static void op_undeploy(ck_platform *p, uint32_t attempt);

static void op_set_routes(ck_platform *p, uint32_t attempt, uint32_t n, const uint16_t *hosts)
{
    /* Mailboxes are found by endpoint; the placement only tells network
     * faults where subtasks not deployed yet will be. */
    sim_world *w = ((sim_node *)p)->w;
    if (w->routes && w->routes_attempt >= attempt)
        return;
    uint16_t *r = malloc((size_t)n * sizeof(*r) + 1);
    if (!r)
        return;
    memcpy(r, hosts, (size_t)n * sizeof(*r));
    free(w->routes);
    w->routes = r;
    w->routes_attempt = attempt;
}

static const ck_platform_ops sim_ops = {
    .now = op_now,
    .send = op_send,
    .cpu = op_cpu,
    .cpu_background = op_cpu_background,
    .store_put = op_store_put,
    .store_get = op_store_get,
    .store_list = op_store_list,
    .store_delete = op_store_delete,
    .output = op_output,
    .output_commit = op_output_commit,
    .output_abort = op_output_abort,
    .deploy = op_deploy,
    .undeploy = op_undeploy,
    .set_routes = op_set_routes,
    .log = op_log,
};

/* ---- actors ------------------------------------------------------------------------ */

static void receiver_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_node *n = sg_actor_self_get_data();
    sg_actor_daemonize(sg_actor_self());
    sg_mailbox_set_receiver(n->mbname);
    for (;;) {
        void *p;
        if (ck_sg_get(n->mb, &p) != 0)
            continue;
        deliver(n, p);
        sg_sem_release(n->wake);
    }
}

static void node_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_node *n = sg_actor_self_get_data();
    const ck_node_ops *ops = n->node.ops;
    void *self = n->node.self;
    while (!n->dead && !ops->finished(self)) {
        drain(n->wake);
        ck_time now = sim_now_ns();
        if (ops->deadline(self) <= now)
            ops->on_deadline(self);
        item *it;
        while (!n->dead && (it = inbox_pop(n))) {
            if (it->kind == ITEM_MSG) {
                ops->on_message(self, it->data, it->len);
                item_release(it);
            } else if (it->kind == ITEM_PEER_LOST) {
                ops->on_peer_lost(self, (int)it->token);
                item_release(it);
            } else {
                ops->on_complete(self, it->token, it->status, it->data, it->len);
                item_release(it);
            }
        }
        if (n->dead)
            break;
        int more = ops->work(self);
        if (n->dead || ops->finished(self))
            break;
        if (more > 0 || n->head)
            continue;
        ck_time d = ops->deadline(self);
        now = sim_now_ns();
        if (d <= now)
            continue;
        if (d == CK_TIME_NEVER)
            sg_sem_acquire(n->wake);
        else
            sg_sem_acquire_timeout(n->wake, (double)(d - now) / 1e9);
    }
    if (n->ends_run)
        sg_actor_kill_all(); /* the run is over: stop what is left */
}

/* ---- the world ---------------------------------------------------------------- */

static int initialized;

/* At exit, after SimGrid's own shutdown (registered before it starts). */
static void free_orphans(void)
{
    while (orphans)
        item_free(orphans);
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
    w->verbose = verbose;
    snprintf(w->store_dir, sizeof(w->store_dir), "%s", store_dir);
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
    w->delay_wake = sg_sem_init(0);
    w->inj_wake = sg_sem_init(0);
    return w;
}

int ck_sim_set_sink_dir(ck_sim *w, const char *dir)
{
    if (ck_storefs_mkdirs(dir) || ck_sinkfs_init(&w->sinks, dir))
        return CK_EIO;
    w->have_sinks = 1;
    return CK_OK;
}

ck_platform *ck_sim_endpoint(ck_sim *w, uint32_t ep, const char *host, int host_index)
{
    sg_host_t h = sg_host_by_name(host);
    if (!h)
        return NULL;
    sim_node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->plat.ops = &sim_ops;
    n->plat.endpoint = ep;
    n->plat.host = host_index;
    n->host_index = host_index;
    n->net_host = host_index >= 0 ? host_index : w->ntm;
    n->w = w;
    n->host = h;
    snprintf(n->mbname, sizeof(n->mbname), "ep%u", ep);
    n->mb = sg_mailbox_by_name(n->mbname);
    n->wake = sg_sem_init(0);
    n->all_next = w->all;
    w->all = n;
    if (map_put(w, n))
        return NULL;
    return &n->plat;
}

int ck_sim_attach(ck_sim *w, uint32_t ep, ck_node node, const char *name, int ends_run)
{
    sim_node *n = node_of(w, ep);
    if (!n)
        return CK_EINVAL;
    n->node = node;
    n->ends_run = ends_run;
    sg_actor_t rx = sg_actor_init("rx", n->host);
    sg_actor_set_data(rx, n);
    sg_actor_start(rx, receiver_main, 0, NULL);
    sg_actor_t a = sg_actor_init(name, n->host);
    sg_actor_set_data(a, n);
    sg_actor_start(a, node_main, 0, NULL);
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
    sg_actor_sleep_until(w->limit_s);
    w->reached_limit = 1;
    sg_actor_kill_all();
}

double ck_sim_run_all(ck_sim *w, double limit_s)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (limit_s > 0) {
        w->limit_s = limit_s;
        sg_actor_t a = sg_actor_init("time-limit", w->store_host);
        sg_actor_set_data(a, w);
        sg_actor_start(a, limit_main, 0, NULL);
    }
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

int ck_sim_reached_limit(const ck_sim *w)
{
    return w->reached_limit;
}

void ck_sim_stats(const ck_sim *w, uint64_t *messages, uint64_t *bytes)
{
    *messages = w->messages;
    *bytes = w->message_bytes;
}

void ck_sim_del(ck_sim *w)
{
    if (!w)
        return;
    sim_node *n = w->all;
    while (n) {
        sim_node *next = n->all_next;
        item *it;
        while ((it = inbox_pop(n)))
            item_free(it);
        for (uint32_t k = 0; k < n->peers_cap; k++)
            if (n->peers[k].used)
                peer_reset(&n->peers[k]);
        free(n->peers);
        if (n->wake)
            sg_sem_destroy(n->wake);
        ck_task_del(n->task);
        free(n->tm);
        free(n);
        n = next;
    }
    free(w->map);
    free(w->tm_hosts);
    free(w->tm_down);
    ck_plan_free(&w->plan);
    ck_sinkfs_close(&w->sinks);
    while (w->delayed) {
        item *it = w->delayed;
        w->delayed = it->next;
        item_free(it);
    }
    if (w->delay_wake)
        sg_sem_destroy(w->delay_wake);
    if (w->inj_wake)
        sg_sem_destroy(w->inj_wake);
    free(w->routes);
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

static int op_deploy(ck_platform *p, uint32_t attempt, uint32_t global,
                     const ck_restore_point *from)
{
    sim_node *tmn = (sim_node *)p;
    sim_world *w = tmn->w;
    const ck_graph *g = w->env->g;
    uint32_t ep = ck_ep_task(g, attempt, global);
    sim_node *old = node_of(w, ep);
    if (old && !old->dead)
        return CK_EEXIST;
    ck_platform *tp = ck_sim_endpoint(w, ep, sg_host_get_name(tmn->host), tmn->host_index);
    if (!tp)
        return CK_ENOMEM;
    sim_node *n = (sim_node *)tp;
    n->is_task = 1;
    n->attempt = attempt;
    n->task = ck_task_new(w->env, tp, global, attempt, from);
    if (!n->task) {
        n->dead = 1;
        return CK_ENOMEM;
    }
    char name[200];
    int v, i;
    ck_graph_locate(g, global, &v, &i);
    snprintf(name, sizeof(name), "%s (%d/%d) #%u", g->v[v].name, i + 1, g->v[v].parallelism,
             attempt);
    return ck_sim_attach(w, ep, ck_task_node(n->task), name, 0);
}

static void node_stop(sim_node *n)
{
    n->dead = 1;
    sg_sem_release(n->wake); /* its loop sees it and ends */
}

static void op_undeploy(ck_platform *p, uint32_t attempt)
{
    sim_node *tmn = (sim_node *)p;
    for (sim_node *n = tmn->w->all; n; n = n->all_next)
        if (n->is_task && !n->dead && (n->attempt == attempt || attempt == CK_ATTEMPT_ALL) &&
            n->host_index == tmn->host_index)
            node_stop(n);
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
    n->tm = malloc(sizeof(*n->tm));
    if (!n->tm)
        return CK_ENOMEM;
    ck_tm_init(n->tm, p, w->env->g, w->cfg, h, w->ntm);
    return ck_sim_attach(w, CK_EP_TM0 + (uint32_t)h, ck_tm_node(n->tm), aname, 0);
}

/* A host goes down: everything on it stops; whoever talked to it learns so. */
static void crash_host(sim_world *w, int h)
{
    w->tm_down[h] = 1; /* nothing new is sent to it (transmit) */
    for (sim_node *n = w->all; n; n = n->all_next)
        if (n->host_index == h && !n->dead)
            n->dead = 1;
    /* Transfers to it that other actors posted in this scheduling round
     * start before it goes off (SimGrid 3.32 asserts when a transfer
     * starts towards a host that is off; one that is running when the
     * host goes off fails cleanly). Two hosts crashing in one instant:
     * the first one's failover sends to the second. */
    sg_actor_yield();
    sg_host_turn_off(w->tm_hosts[h]);
    for (sim_node *n = w->all; n; n = n->all_next) {
        if (n->dead)
            continue;
        int talked = 0;
        for (uint32_t k = 0; k < n->peers_cap; k++) {
            peer *pr = &n->peers[k];
            if (!pr->used)
                continue;
            sim_node *o = node_of(w, pr->ep);
            if (o && o->host_index == h) {
                talked = 1;
                peer_reset(pr); /* the connection is gone */
            }
        }
        if (talked) {
            item *it = item_new(
                w, (item){.kind = ITEM_PEER_LOST, .src = UINT32_MAX, .token = (uint64_t)h});
            if (it) {
                inbox_push(n, it);
                sg_sem_release(n->wake);
            }
        }
    }
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

/* The host's speed and link, as the plan says they are now. The latency
 * it adds is applied by the transport (SimGrid 3.32 cannot lower a link's
 * latency under ongoing transfers): messages wait in the delay line. */
static void reslow(injector *in, int h)
{
    const ck_plan *p = &in->w->plan;
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
    char prefix[128], key[CK_STORE_KEY_MAX];
    snprintf(prefix, sizeof(prefix), "checkpoints/%s/", in->job->env.job_id);
    int rc = ck_storefs_damage(in->w->store_dir, prefix, f->spec->how == CK_DAMAGE_TRUNCATE,
                               key, sizeof(key));
    if (rc) {
        f->failed = 1;
        snprintf(f->detail, sizeof(f->detail), "%s",
                 rc == CK_ENOTFOUND ? "no completed checkpoint to damage" : ck_strerror(rc));
    } else {
        snprintf(f->detail, sizeof(f->detail), "%s %s",
                 f->spec->how == CK_DAMAGE_TRUNCATE ? "truncated" : "flipped a bit in", key);
    }
}

/* Asks the job manager for a savepoint, as `flink savepoint` (or `flink
 * stop`) would: a message in its inbox. */
static void trigger_savepoint(sim_world *w, ck_fault_run *f)
{
    sim_node *jm = node_of(w, CK_EP_JM);
    size_t n;
    uint8_t body[CK_SAVEPOINT_BODY];
    ck_put_i64(body, f->spec->resume_after);
    uint8_t *m = ck_wire_msg(CK_MSG_SAVEPOINT, CK_EP_CLIENT, CK_EP_JM, 0, body, sizeof(body), &n);
    item *it = jm && !jm->dead && m ? item_new(w, (item){.kind = ITEM_MSG, .src = CK_EP_CLIENT,
                                                          .data = m, .len = n})
                                    : NULL;
    if (!it) {
        free(m);
        f->failed = 1;
        snprintf(f->detail, sizeof(f->detail), "the job manager is not there");
        return;
    }
    ck_put_u32(m + 16, (uint32_t)f->spec->stop);
    inbox_push(jm, it);
    sg_sem_release(jm->wake);
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
        crash_host(w, sp->host);
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
        trigger_savepoint(w, f);
        break;
    }
}

static void fault_end(injector *in, int i)
{
    sim_world *w = in->w;
    const ck_fault *sp = in->r->faults[i].spec;
    ck_plan_end(&w->plan, i, sim_now_ns());
    switch (sp->kind) {
    case CK_FAULT_CRASH:
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
    if (w->injector && ck_plan_moment(&w->plan, m, id, has_id, sim_now_ns()))
        sg_sem_release(w->injector->wake);
}

/* The moments in a message the job manager sends: a checkpoint triggered
 * at the sources, a completion on its way to the subtasks. */
static void watch_send(sim_world *w, uint32_t src, const uint8_t *msg, size_t len)
{
    if (src != CK_EP_JM || len < CK_WIRE_HDR + 8 || !w->injector)
        return;
    if (msg[0] == CK_MSG_CP_TRIGGER)
        moment(w, CK_MOMENT_CHECKPOINT_TRIGGERED, ck_get_u64(msg + CK_WIRE_HDR), 1);
    else if (msg[0] == CK_MSG_CP_COMPLETE)
        moment(w, CK_MOMENT_CHECKPOINT_COMPLETED, ck_get_u64(msg + CK_WIRE_HDR), 1);
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
    char sink_dir[600];
    snprintf(sink_dir, sizeof(sink_dir), "%s/sink", job->outdir);
    if (ck_sim_set_sink_dir(w, sink_dir)) {
        snprintf(err, errlen, "%s: cannot create: %s", sink_dir, strerror(errno));
        ck_sim_del(w);
        return CK_EIO;
    }
    w->env = &job->env;
    w->cfg = job->env.cfg;
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
        injector *in = rc ? NULL : injector_new(w, job, r, err, errlen);
        if (!in) {
            rc = rc ? rc : CK_EINVAL;
        } else {
            sg_actor_t d = sg_actor_init("delay", sg_host_by_name("jm"));
            sg_actor_set_data(d, w);
            sg_actor_start(d, delay_main, 0, NULL);
            sg_actor_t a = sg_actor_init("faults", sg_host_by_name("jm"));
            sg_actor_set_data(a, in);
            sg_actor_start(a, injector_main, 0, NULL);
            w->injector = in;
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
    ck_sim_stats(w, &r->messages, &r->message_bytes);
    injector_free(w->injector);
    w->injector = NULL;
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
