/*
 * simgrid.c - the SimGrid backend: every endpoint of the job (the job
 * manager, each subtask) is a SimGrid actor on its host, driving its
 * sans-I/O node with simulated time.
 *
 * Per endpoint there are two actors:
 *   - the node actor runs the node loop (node.h): deadlines, inbox, work();
 *     it sleeps on a condition variable until a message arrives or its
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
#include <simgrid/cond.h>
#include <simgrid/disk.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <xbt/log.h>

#include "error.h"
#include "run.h"
#include "sgshim.h"
#include "simgrid.h"
#include "simplatform.h"
#include "storefs.h"

enum { ITEM_MSG, ITEM_DONE };

typedef struct item {
    struct item *next;
    int kind;
    uint32_t src, seq;
    uint8_t *data;
    size_t len;
    uint64_t token;
    int status;
} item;

/* What a node knows of one peer: sequence numbers both ways. */
typedef struct peer {
    uint32_t ep;
    uint32_t tx_next, rx_next;
    item *pending; /* arrived early, sorted by seq */
    int used;
} peer;

typedef struct ck_sim sim_world;

typedef struct sim_node {
    ck_platform plat; /* first member: a ck_platform * is a sim_node * */
    sim_world *w;
    ck_node node;
    int ends_run;
    sg_host_t host;
    char mbname[32];
    sg_mailbox_t mb;
    sg_cond_t cond;
    sg_mutex_t mutex;
    item *head, *tail;
    peer *peers;
    uint32_t npeers, peers_cap;
} sim_node;

struct ck_sim {
    uint32_t nnodes;
    sim_node *nodes;
    sg_host_t store_host;
    sg_disk_t store_disk;
    char store_dir[600];
    uint64_t next_id;
    ck_sinkout *out;
    int verbose;
    uint64_t messages, message_bytes;
};

static inline ck_time sim_now_ns(void)
{
    return (ck_time)llround(simgrid_get_clock() * 1e9);
}

static void item_free(void *p)
{
    item *it = p;
    if (it) {
        free(it->data);
        free(it);
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
            uint32_t j = (n->peers[i].ep * 2654435761u) & (ncap - 1);
            while (np[j].used)
                j = (j + 1) & (ncap - 1);
            np[j] = n->peers[i];
        }
        free(n->peers);
        n->peers = np;
        n->peers_cap = ncap;
    }
    for (uint32_t j = (ep * 2654435761u) & (n->peers_cap - 1);; j = (j + 1) & (n->peers_cap - 1)) {
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

static int op_send(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len)
{
    sim_node *n = (sim_node *)p;
    sim_world *w = n->w;
    if (dst >= w->nnodes) {
        free(msg);
        return CK_EUNREACH;
    }
    peer *pr = peer_get(n, dst);
    item *it = malloc(sizeof(*it));
    if (!pr || !it) {
        free(it);
        free(msg);
        return CK_ENOMEM;
    }
    *it = (item){.kind = ITEM_MSG, .src = p->endpoint, .seq = pr->tx_next++, .data = msg,
                 .len = len};
    sg_comm_t c = sg_mailbox_put_init(w->nodes[dst].mb, it, (long)len);
    sg_comm_detach(c, item_free);
    w->messages++;
    w->message_bytes += len;
    return CK_OK;
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
    item *it = malloc(sizeof(*it));
    if (!it) {
        free(data);
        return;
    }
    *it = (item){.kind = ITEM_DONE, .src = UINT32_MAX, .data = data, .len = len,
                 .token = token, .status = status};
    /* The answer travels back over the network: a small header plus the data. */
    sg_comm_t c = sg_mailbox_put_init(n->mb, it, (long)(64 + len));
    sg_comm_detach(c, item_free);
}

/* On the node's host: push the bytes to the store. */
static void uploader_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
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
    const char *mbname = sg_actor_self_get_data();
    void *p;
    int rc = ck_sg_get(sg_mailbox_by_name(mbname), &p);
    free((void *)mbname);
    if (rc != 0)
        return;
    store_job *j = p;
    sim_world *w = j->n->w;
    if (j->len)
        sg_disk_write(w->store_disk, (sg_size_t)j->len);
    int status = ck_storefs_put(w->store_dir, j->key, j->data, j->len, 0);
    send_store_done(j->n, j->token, status, NULL, 0);
    free(j->data);
    free(j);
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
    char *mbname = malloc(48);
    if (!j || !mbname) {
        free(j);
        free(mbname);
        free(data);
        return CK_ENOMEM;
    }
    uint64_t id = w->next_id++;
    j->n = n;
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->mbname, sizeof(j->mbname), "store-put-%llu", (unsigned long long)id);
    snprintf(mbname, 48, "%s", j->mbname);
    j->data = data;
    j->len = len;
    j->token = token;
    char name[64];
    snprintf(name, sizeof(name), "store-put-%llu", (unsigned long long)id);
    sg_actor_t h = sg_actor_init(name, w->store_host);
    sg_actor_set_data(h, mbname);
    sg_actor_start(h, put_handler_main, 0, NULL);
    sg_actor_t u = sg_actor_init(name, n->host);
    sg_actor_set_data(u, j);
    sg_actor_start(u, uploader_main, 0, NULL);
    return CK_OK;
}

/* On the node's host: ask the store for a key. */
static void requester_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    store_job *j = sg_actor_self_get_data();
    if (ck_sg_put(sg_mailbox_by_name(j->mbname), j, 64) != 0)
        free(j);
}

/* On the store host: read the object and send it back. */
static void get_handler_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    const char *mbname = sg_actor_self_get_data();
    void *p;
    int rc = ck_sg_get(sg_mailbox_by_name(mbname), &p);
    free((void *)mbname);
    if (rc != 0)
        return;
    store_job *j = p;
    sim_world *w = j->n->w;
    uint8_t *data = NULL;
    size_t len = 0;
    int status = ck_storefs_get(w->store_dir, j->key, &data, &len);
    if (status == CK_OK && len)
        sg_disk_read(w->store_disk, (sg_size_t)len);
    send_store_done(j->n, j->token, status, data, len);
    free(j);
}

static int op_store_get(ck_platform *p, const char *key, uint64_t token)
{
    sim_node *n = (sim_node *)p;
    sim_world *w = n->w;
    if (!ck_storefs_key_ok(key))
        return CK_EINVAL;
    store_job *j = calloc(1, sizeof(*j));
    char *mbname = malloc(48);
    if (!j || !mbname) {
        free(j);
        free(mbname);
        return CK_ENOMEM;
    }
    uint64_t id = w->next_id++;
    j->n = n;
    snprintf(j->key, sizeof(j->key), "%s", key);
    snprintf(j->mbname, sizeof(j->mbname), "store-get-%llu", (unsigned long long)id);
    snprintf(mbname, 48, "%s", j->mbname);
    j->token = token;
    sg_actor_t h = sg_actor_init(j->mbname, w->store_host);
    sg_actor_set_data(h, mbname);
    sg_actor_start(h, get_handler_main, 0, NULL);
    sg_actor_t u = sg_actor_init(j->mbname, n->host);
    sg_actor_set_data(u, j);
    sg_actor_start(u, requester_main, 0, NULL);
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

static int op_output(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *data,
                     size_t len)
{
    sim_node *n = (sim_node *)p;
    if (!n->w->out)
        return CK_EIO;
    return ck_sinkout_append(n->w->out, sink, txn, data, len);
}

static int op_output_commit(ck_platform *p, uint32_t sink, uint64_t txn)
{
    sim_node *n = (sim_node *)p;
    return n->w->out ? ck_sinkout_commit(n->w->out, sink, txn) : CK_EIO;
}

static int op_output_abort(ck_platform *p, uint32_t sink, uint64_t txn)
{
    sim_node *n = (sim_node *)p;
    return n->w->out ? ck_sinkout_abort(n->w->out, sink, txn) : CK_EIO;
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
    item *it = malloc(sizeof(*it));
    if (it) {
        *it = (item){.kind = ITEM_DONE, .src = UINT32_MAX, .token = j->token};
        inbox_push(j->n, it);
        sg_cond_notify_one(j->n->cond);
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
        sg_cond_notify_one(n->cond);
    }
}

static void node_main(int argc, char **argv)
{
    CK_UNUSED(argc);
    CK_UNUSED(argv);
    sim_node *n = sg_actor_self_get_data();
    const ck_node_ops *ops = n->node.ops;
    void *self = n->node.self;
    sg_mutex_lock(n->mutex);
    while (!ops->finished(self)) {
        ck_time now = sim_now_ns();
        if (ops->deadline(self) <= now)
            ops->on_deadline(self);
        item *it;
        while ((it = inbox_pop(n))) {
            if (it->kind == ITEM_MSG)
                ops->on_message(self, it->data, it->len);
            else
                ops->on_complete(self, it->token, it->status, it->data, it->len);
            free(it);
        }
        int more = ops->work(self);
        if (ops->finished(self))
            break;
        if (more > 0 || n->head)
            continue;
        ck_time d = ops->deadline(self);
        now = sim_now_ns();
        if (d <= now)
            continue;
        if (d == CK_TIME_NEVER)
            sg_cond_wait(n->cond, n->mutex);
        else
            sg_cond_wait_for(n->cond, n->mutex, (double)(d - now) / 1e9);
    }
    sg_mutex_unlock(n->mutex);
    if (n->ends_run)
        sg_actor_kill_all(); /* the run is over: stop what is left */
}

/* ---- the world ---------------------------------------------------------------- */

static int initialized;

ck_sim *ck_sim_new(const char *platform_file, const char *network_model, const char *store_dir,
                   uint32_t nendpoints, int verbose, char *err, size_t errlen)
{
    if (initialized) {
        snprintf(err, errlen, "SimGrid runs one simulation per process");
        return NULL;
    }
    initialized = 1;
    char model[64];
    snprintf(model, sizeof(model), "--cfg=network/model:%s", network_model);
    char *argv[] = {"chandy", model, "--log=root.thres:critical",
                    "--cfg=contexts/stack-size:512", NULL};
    int argc = 4;
    simgrid_init(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    simgrid_load_platform(platform_file);

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
    w->nnodes = nendpoints;
    w->nodes = calloc(nendpoints, sizeof(sim_node));
    if (!w->nodes) {
        snprintf(err, errlen, "out of memory");
        free(w);
        return NULL;
    }
    return w;
}

void ck_sim_set_output(ck_sim *w, ck_sinkout *out)
{
    w->out = out;
}

ck_platform *ck_sim_endpoint(ck_sim *w, uint32_t ep, const char *host, int host_index)
{
    if (ep >= w->nnodes || w->nodes[ep].w)
        return NULL;
    sg_host_t h = sg_host_by_name(host);
    if (!h)
        return NULL;
    sim_node *n = &w->nodes[ep];
    n->plat.ops = &sim_ops;
    n->plat.endpoint = ep;
    n->plat.host = host_index;
    n->w = w;
    n->host = h;
    snprintf(n->mbname, sizeof(n->mbname), "ep%u", ep);
    n->mb = sg_mailbox_by_name(n->mbname);
    n->cond = sg_cond_init();
    n->mutex = sg_mutex_init();
    return &n->plat;
}

int ck_sim_attach(ck_sim *w, uint32_t ep, ck_node node, const char *name, int ends_run)
{
    if (ep >= w->nnodes || !w->nodes[ep].w)
        return CK_EINVAL;
    sim_node *n = &w->nodes[ep];
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

double ck_sim_run_all(ck_sim *w, double limit_s)
{
    CK_UNUSED(w);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (limit_s > 0)
        simgrid_run_until(limit_s);
    else
        simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
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
    for (uint32_t i = 0; i < w->nnodes; i++) {
        sim_node *n = &w->nodes[i];
        item *it;
        while ((it = inbox_pop(n)))
            item_free(it);
        for (uint32_t k = 0; k < n->peers_cap; k++) {
            item *q = n->peers[k].pending;
            while (q) {
                item *nx = q->next;
                item_free(q);
                q = nx;
            }
        }
        free(n->peers);
        if (n->cond)
            sg_cond_destroy(n->cond);
        if (n->mutex)
            sg_mutex_destroy(n->mutex);
    }
    free(w->nodes);
    free(w);
}

/* ---- running a job ----------------------------------------------------------------- */

int ck_sim_run(ck_run *r, char *err, size_t errlen)
{
    const ck_scenario *sc = r->sc;
    const ck_graph *g = r->env.g;

    /* The platform: the scenario's file, or one generated from its cluster. */
    if (sc->cluster.platform[0]) {
        snprintf(r->platform_file, sizeof(r->platform_file), "%s", sc->cluster.platform);
    } else {
        snprintf(r->platform_file, sizeof(r->platform_file), "%s/platform.xml", r->outdir);
        FILE *f = fopen(r->platform_file, "w");
        if (!f) {
            snprintf(err, errlen, "%s: cannot write: %s", r->platform_file, strerror(errno));
            return CK_EIO;
        }
        int rc = ck_simplat_write(f, &sc->cluster, r->nhosts);
        if (fclose(f) || rc) {
            snprintf(err, errlen, "%s: cannot write", r->platform_file);
            return CK_EIO;
        }
    }
    snprintf(r->network_model, sizeof(r->network_model), "%s", sc->cluster.network_model);
    char store_dir[600];
    snprintf(store_dir, sizeof(store_dir), "%s/store", r->outdir);
    uint32_t nep = CK_EP_TASK0 + g->nsubtasks;
    ck_sim *w = ck_sim_new(r->platform_file, sc->cluster.network_model, store_dir, nep,
                           r->verbose, err, errlen);
    if (!w)
        return CK_EINVAL;
    ck_sim_set_output(w, &r->out);
    ck_task **tasks = calloc(g->nsubtasks, sizeof(ck_task *));
    int rc = tasks ? CK_OK : CK_ENOMEM;
    ck_platform *jp = rc ? NULL : ck_sim_endpoint(w, CK_EP_JM, "jm", -1);
    if (!rc && !jp) {
        snprintf(err, errlen, "%s: the platform has no host \"jm\"", r->platform_file);
        rc = CK_EINVAL;
    }
    if (!rc && !(rc = ck_jm_init(&r->jm, jp, g, r->env.cfg, r->env.job_id))) {
        r->jm_ready = 1;
        rc = ck_sim_attach(w, CK_EP_JM, ck_jm_node(&r->jm), "jobmanager", 1);
    }
    for (uint32_t s = 0; s < g->nsubtasks && !rc; s++) {
        char hname[32], aname[200];
        int v, i, host = ck_graph_host(g, s);
        ck_graph_locate(g, s, &v, &i);
        snprintf(hname, sizeof(hname), "tm%d", host);
        ck_platform *p = ck_sim_endpoint(w, CK_EP_TASK0 + s, hname, host);
        if (!p) {
            snprintf(err, errlen, "%s: the platform has no host \"%s\"", r->platform_file, hname);
            rc = CK_EINVAL;
            break;
        }
        tasks[s] = ck_task_new(&r->env, p, s);
        if (!tasks[s]) {
            rc = CK_ENOMEM;
            break;
        }
        snprintf(aname, sizeof(aname), "%s (%d/%d)", g->v[v].name, i + 1, g->v[v].parallelism);
        rc = ck_sim_attach(w, CK_EP_TASK0 + s, ck_task_node(tasks[s]), aname, 0);
    }
    /* A stalled job keeps its watermark timers ticking: bound simulated time. */
    double limit = 10.0 * (double)sc->workload.duration / 1e9 + 300.0;
    if (!rc)
        r->wall_s = ck_sim_run_all(w, limit);
    else if (!err[0] || rc == CK_ENOMEM)
        snprintf(err, errlen, "setting up the job: %s", ck_strerror(rc));
    ck_sim_stats(w, &r->messages, &r->message_bytes);
    ck_sim_del(w);
    for (uint32_t s = 0; tasks && s < g->nsubtasks; s++)
        ck_task_del(tasks[s]);
    free(tasks);
    if (rc)
        return rc;
    if (r->jm.state == CK_JOB_RUNNING) {
        /* Stalled (or deadlocked): report it as the job's failure. */
        r->jm.state = CK_JOB_FAILED;
        r->jm.end = (ck_time)llround(simgrid_get_clock() * 1e9);
        snprintf(r->jm.failure, sizeof(r->jm.failure),
                 "the job did not finish: it stalled, or ran past %.0f s of simulated time",
                 limit);
    }
    return CK_OK;
}
