/*
 * sockets.c - the real-socket backend: one OS process per host, TCP on
 * loopback between them, real time.
 *
 * The launching process creates a listening socket for every host, forks
 * one process per task manager and keeps the job manager itself. Every
 * process runs the same single-threaded epoll loop over the nodes it hosts
 * (node.h): deadlines, inboxes, work(), socket I/O.
 *
 * Frames between processes are
 *
 *   u32 length (of what follows) | u32 destination endpoint |
 *   u32 source endpoint | engine message
 *
 * over one TCP connection per (sending process, receiving process), so
 * messages between two endpoints stay in order. Messages between endpoints
 * of one process go straight to the receiver's inbox.
 *
 * Trust: the processes listen on 127.0.0.1 only, and every connection
 * starts with a mutual challenge-response over the run's cluster secret
 * (netauth.h), which the launching process draws and its children inherit
 * in memory. Until a peer has proved the secret, what it sends is never
 * read as frames; a failed, late (HS_TIMEOUT) or surplus (MAX_PENDING)
 * handshake closes the connection. After it, frames are cut by netframe.h
 * with a cap per connection and one per process (GLOBAL_CAP): a peer that
 * goes past either is cut off. Each frame is then admitted or dropped
 * (ck_netframe_admit): its message must name the frame's endpoints, its
 * source must live on the host that authenticated, its destination must
 * be here; a frame for a subtask of an attempt not deployed here yet waits
 * in limbo (at most LIMBO_CAP bytes) and is admitted again at deployment.
 * A dropped frame is counted and logged, the connection stays: only our
 * own processes can authenticate, so a bad frame is a bug to report, not
 * an attack to fence off, and closing would start a failover.
 *
 * CPU cost charged by the engine (an operator's cpu_per_record) is
 * virtual time, as a task thread's would be in Flink: the subtask is busy
 * for flops / speed seconds on the earliest free of its host's cores
 * (divided by a slow_cpu factor in force), and meanwhile takes no input,
 * fires no timer and its clock reads the end of the busy spell; what it
 * sends waits in its outbox until then. The rest of its process (other
 * subtasks, the task manager's heartbeats) runs on, as other threads
 * would: spinning instead would starve heartbeats whenever a burst of
 * work took longer than heartbeat.timeout. The engine's real work costs
 * real CPU, and a slow_cpu fault also stops and continues the process.
 *
 * The durable store is a directory. Each process uploads and downloads
 * on a few threads of its own (io/storepool.h), as Flink's asynchronous
 * snapshot and transfer threads do: its subtasks go on with their records
 * meanwhile, and files asked at once are written side by side (write,
 * fsync, rename, fsync the directory), one key's requests in the order
 * asked. Sinks append to one file each.
 *
 * A slow_link fault shapes what crosses the host's link: each process
 * paces the bytes it writes to a peer to the slower end's bandwidth
 * (the cluster's link bandwidth times the fault's factor) and holds each
 * frame for the latency both ends add; a store transfer completes after
 * its bytes went through the link at that pace. The job manager's process
 * tells the others which links are slow through the control pipe.
 *
 * Lifecycle: the job manager's process ends the run when the job finishes
 * or fails, or when a host process dies, and then stops the others: each
 * is told to stop (SIGTERM) and continued (SIGCONT: one stopped from
 * outside, by kill -STOP or a host that froze, would never act on the
 * TERM), and one still there after STOP_GRACE is killed (stop_children).
 * The launcher never waits for a child without a limit.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bnode.h"
#include "drive.h"
#include "error.h"
#include "faultplan.h"
#include "netauth.h"
#include "netframe.h"
#include "routes.h"
#include "sinkfs.h"
#include "sockets.h"
#include "storefs.h"
#include "storepool.h"
#include "taskmanager.h"
#include "transport.h"

_Static_assert(CK_TP_HDR == CK_NETFRAME_HDR, "one frame header for both sides");
/* A peer must authenticate within this long after it is accepted... */
#define HS_TIMEOUT CK_NS_PER_S
/* ...and at most this many may be trying at once (the oldest is closed). */
#define MAX_PENDING 32
/* Bytes received and not framed yet, over all of a process's connections. */
#define GLOBAL_CAP ((size_t)256 << 20)
/* Bytes of frames held for subtasks not deployed yet. */
#define LIMBO_CAP ((size_t)64 << 20)
/* Bytes read from one connection before the loop serves the others. */
#define READ_BUDGET ((size_t)1 << 20)
/* Security events logged by one process; later ones are only counted. */
#define SEC_LOG_MAX 100
/* How long the task managers' processes have to exit at the run's end. */
#define STOP_GRACE (5 * CK_NS_PER_S)

/* A frame waiting in limbo for a local endpoint not deployed yet. */
typedef struct msgq_item {
    struct msgq_item *next;
    uint32_t dst; /* the endpoint it waits for... */
    uint32_t src; /* ...the frame's source... */
    int peer;     /* ...and the host that sent it */
    uint8_t *data;
    size_t len;
} msgq_item;

typedef struct net_world net_world;

/* A store request made while the store was cut off. */
typedef struct held_store {
    struct held_store *next;
    struct net_node *n;
    int get;
    char key[CK_STORE_KEY_MAX];
    uint64_t at; /* an append's or a get's offset (0: a put) */
    uint8_t *data;
    size_t len; /* a put's bytes; a get's to read (CK_STOREFS_WHOLE: all) */
    char **src; /* a put of local files: their paths (owned) */
    uint32_t nsrc;
    uint64_t token;
} held_store;

typedef struct net_node {
    ck_bnode b;       /* first member: a ck_platform * is a net_node * (bnode.h) */
    net_world *w;
    struct net_node *next; /* every node of this process */
} net_node;

typedef struct conn {
    int fd;
    int peer_host;  /* outgoing: where it goes; incoming: who authenticated (-1 until then) */
    int outgoing;
    ck_netauth auth;               /* frames flow once it is DONE */
    uint8_t hs[CK_NETAUTH_REPLY];  /* handshake bytes to write, before any frame */
    size_t hs_len, hs_off;
    ck_time hs_deadline;           /* incoming: closed if not authenticated by then */
    int evicted;                   /* ...or at once: too many were trying */
    ck_netframe fr;                /* incoming: bytes read, not yet framed */
    size_t counted;                /* of them, counted in the process's total */
    /* outgoing: the frames to write, held by cuts, delayed and paced by
     * slow links as the shared transport says (transport.h) */
    ck_tp_out tx;
    int want_write;
} conn;

struct net_world {
    const ck_backend_job *job;
    ck_backend_result *r;
    int host;    /* this process: 0..ntm-1, or ntm for the job manager */
    int ntm;
    int *listen_fd;
    int *port;
    pid_t *pids;
    int *stopped;  /* per task manager: SIGSTOPped by a slow_cpu fault */
    int *slow_pm;  /* per task manager: the slow_cpu factor it was told, per mille
                    * (0: none yet; shares stopped's allocation) */
    int *frozen;   /* per task manager: SIGSTOPped as a lost host (a crash of kind
                    * "host"), until the job manager notices or the host comes back
                    * (shares stopped's allocation too) */
    int *back_refused; /* per task manager: a lost host came back, so the breaking of
                    * its connections here is a refusal (CK_PEER_REFUSED); same */
    /* network faults: cut[h] counts the faults that cut this process's
     * host from host h (0..ntm-1, jm ntm, store ntm+1); what would cross a
     * cut waits in the connection's buffer (and store requests in
     * held_store) until it heals. The job manager's process plays the
     * timeline (plan: backend/faultplan.h, whose cut matrix it keeps) and
     * tells each task manager its row through a control pipe (ctl_w per
     * host; ctl_r in the child). */
    int *cut;
    ck_plan plan;
    /* the faults inside the processes (buggify.h; bw.bug): the job
     * manager's process starts and ends them and tells the task managers'
     * (CTL_BUG; a process forked later inherits what is in force), whose
     * hits come back through the moment pipe (MOM_HIT) */
    ck_buggify bug;
    int *ctl_w;
    int ctl_r;
    /* moments a task manager's process saw that a triggered event waits
     * for (an upload, a restore, a state backend's flush...): one pipe,
     * every child writing records of MOM_REC bytes (each write atomic),
     * the job manager's process reading them into the plan; -1 when the
     * timeline waits for none of them */
    int mom_r, mom_w; /* (and the hits of the faults inside the processes) */
    int moments_lost; /* written with the pipe full (a warning, once) */
    struct held_store *held_store, *held_store_tail;
    struct timespec t0;
    net_node *nodes;      /* this process's nodes */
    msgq_item *limbo;     /* messages for local endpoints not deployed yet */
    size_t limbo_bytes;
    ck_routes routes;     /* where each attempt's subtasks run (routes.h) */
    ck_job_env *envs;     /* per generation of the job's graph (ck_backend_envs) */
    uint8_t secret[CK_NETAUTH_KEY]; /* the run's cluster secret */
    size_t buffered;      /* bytes read and not framed yet, over the connections */
    int sec_logged;       /* security events logged */
    uint64_t refused;     /* connections refused: no or a bad handshake */
    uint64_t dropped;     /* frames dropped */
    uint64_t cut_off;     /* authenticated connections closed: over a cap, malformed */
    int epfd;
    conn **out_conn; /* per host, lazily connected */
    conn **in_conns;
    int nin, in_cap;
    ck_sinkfs sinks;      /* this process's sinks write here (io/sinkfs.h) */
    char store_dir[600];
    ck_storepool *pool; /* this process's uploads and downloads */
    char local_dir[620];
    char sink_dir[600];
    double speed;
    /* this host's cores as virtual time, its slow_cpu factor, and timed
     * completions: background work, and store transfers over a slow link */
    ck_bhost bh;
    ck_bworld bw;       /* what its nodes share (bnode.h) */
    /* slow links, per host (0..ntm-1, jm ntm, store ntm+1): bytes per
     * second (0: not slowed) and latency added (ns); and for the job
     * manager's process, what each task manager process was told */
    int64_t *lrate, *llat;
    int64_t *lrate_sent, *llat_sent;
    ck_time store_free; /* this process's store transfers: link busy until then */
    int kick;           /* a node was deployed during a pass: run another at once */
    int failed;
    int io_failed;      /* failed writing under the output directory: a run that cannot record fails */
    char failure[256];
    int timed_out; /* the job manager's process stopped the run at its time limit */
};

static ck_time mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (ck_time)t.tv_sec * CK_NS_PER_S + t.tv_nsec;
}

static ck_time world_now(const net_world *w)
{
    return mono_ns() - ((ck_time)w->t0.tv_sec * CK_NS_PER_S + w->t0.tv_nsec);
}

/* The host an endpoint lives on, or -1 when its attempt is not routed yet. */
static int endpoint_host(const net_world *w, uint32_t ep)
{
    if (ep == CK_EP_JM)
        return w->ntm;
    if (ep < CK_EP_TASK0)
        return (int)(ep - CK_EP_TM0) < w->ntm ? (int)(ep - CK_EP_TM0) : -1;
    return ck_routes_host(&w->routes, w->job->env.g, ep);
}

static net_node *local_node(const net_world *w, uint32_t ep)
{
    for (net_node *n = w->nodes; n; n = n->next)
        if (n->b.plat.endpoint == ep)
            return n;
    return NULL;
}

/* ---- connections -------------------------------------------------------------- */

static void set_nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_free(conn *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    ck_netframe_free(&c->fr);
    ck_tp_free(&c->tx);
    free(c);
}

/* How the link between this host and host peer is slowed: bytes per second
 * (0: not paced) and latency added (ns); both ends' links count. */
static void shape(const net_world *w, int peer, int64_t *rate, int64_t *lat)
{
    *rate = 0;
    *lat = 0;
    if (!w->lrate)
        return;
    int ends[2] = {w->host, peer};
    for (int k = 0; k < 2; k++) {
        int h = ends[k];
        if (h < 0 || h > w->ntm + 1)
            continue;
        if (w->lrate[h] > 0 && (*rate == 0 || w->lrate[h] < *rate))
            *rate = w->lrate[h];
        *lat += w->llat[h];
    }
}

/* When a paced or delayed connection can write again (CK_TIME_NEVER: now
 * or when the socket lets it). */
static ck_time conn_wake(const net_world *w, const conn *c, ck_time now)
{
    if (c->auth.state != CK_NETAUTH_DONE || (w->cut && w->cut[c->peer_host] > 0))
        return CK_TIME_NEVER;
    /* Bytes that came due since the last flush (real time runs on while a
     * pass works) leave at once; while the socket is full, its EPOLLOUT
     * wakes the loop instead. */
    ck_time t = ck_tp_next(&c->tx, now);
    return t <= now && c->want_write ? CK_TIME_NEVER : t;
}

static void want_write(net_world *w, conn *c, int on)
{
    if (c->want_write == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_write = on;
}

/* Queues what the handshake has to send. */
static void take_hs(conn *c)
{
    if (c->auth.out_len == 0)
        return;
    if (c->hs_off > 0) {
        memmove(c->hs, c->hs + c->hs_off, c->hs_len - c->hs_off);
        c->hs_len -= c->hs_off;
        c->hs_off = 0;
    }
    assert(c->hs_len + c->auth.out_len <= sizeof(c->hs));
    memcpy(c->hs + c->hs_len, c->auth.out, c->auth.out_len);
    c->hs_len += c->auth.out_len;
    c->auth.out_len = 0;
}

/* Writes buf[*off .. end) to c's socket. Returns 1 when all of it went,
 * 0 when the socket is full (c then waits to be writable), CK_EIO. */
static int write_upto(net_world *w, conn *c, const uint8_t *buf, size_t *off, size_t end)
{
    while (*off < end) {
        ssize_t n = write(c->fd, buf + *off, end - *off);
        if (n > 0) {
            *off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_write(w, c, 1);
            return 0;
        }
        return CK_EIO;
    }
    return 1;
}

static int conn_flush(net_world *w, conn *c)
{
    /* The handshake goes first, across cuts and slow links alike (they
     * hold frames); frames wait until the peer proved itself. */
    int rc = write_upto(w, c, c->hs, &c->hs_off, c->hs_len);
    if (rc <= 0)
        return rc;
    c->hs_off = c->hs_len = 0;
    if (c->auth.state != CK_NETAUTH_DONE) {
        want_write(w, c, 0);
        return CK_OK;
    }
    if (!c->outgoing || !ck_tp_pending(&c->tx)) {
        want_write(w, c, 0);
        return CK_OK;
    }
    if (w->cut && w->cut[c->peer_host] > 0)
        return CK_OK; /* cut off: the bytes wait, as TCP would retransmit them */
    /* A slow link: what was sent waits for its latency, and goes at the
     * link's pace (transport.h). */
    int64_t rate = 0, lat = 0;
    shape(w, c->peer_host, &rate, &lat);
    size_t end = ck_tp_due(&c->tx, world_now(w), rate), off = c->tx.off;
    rc = write_upto(w, c, c->tx.buf, &off, end);
    ck_tp_sent(&c->tx, off);
    if (rc <= 0)
        return rc;
    if (ck_tp_pending(&c->tx))
        return CK_OK; /* the rest waits for the slow link */
    want_write(w, c, 0);
    return CK_OK;
}

static conn *out_conn(net_world *w, int host)
{
    if (w->out_conn[host])
        return w->out_conn[host];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)w->port[host]),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
        close(fd);
        return NULL;
    }
    set_nonblock(fd);
    conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->peer_host = host;
    c->outgoing = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
    w->out_conn[host] = c;
    ck_netauth_client(&c->auth, w->secret, w->host, host, w->ntm + 1);
    take_hs(c);
    return c;
}

/* ---- platform operations ------------------------------------------------------------ */

static ck_time net_clock(const ck_bnode *b)
{
    return world_now(((const net_node *)b)->w);
}

/* Keeps a message for local endpoint dst until it is deployed; src and
 * peer: the frame's source and the host that sent it. 0, or -1 when limbo
 * is full (the message is freed). */
static int limbo_push(net_world *w, uint32_t dst, uint32_t src, int peer, uint8_t *data,
                      size_t len)
{
    msgq_item *it = w->limbo_bytes + len <= LIMBO_CAP ? malloc(sizeof(*it)) : NULL;
    if (!it) {
        free(data);
        return -1;
    }
    *it = (msgq_item){.dst = dst, .src = src, .peer = peer, .data = data,
                      .len = len, .next = w->limbo};
    w->limbo = it;
    w->limbo_bytes += len;
    return 0;
}

static void fail_world(net_world *w, const char *fmt, const char *detail);

/* Hands node n an entry of its inbox (data taken). Out of memory, this
 * process cannot keep what it owes its nodes (every message, in order;
 * every completion; every lost peer): it fails, as a Flink process that
 * runs out of memory exits, and the job fails over (a task manager's
 * process) or the run fails (the job manager's). */
static void post(net_world *w, net_node *n, int kind, uint64_t token, int status, uint8_t *data,
                 size_t len)
{
    if (ck_drive_post(&n->b.d, kind, token, status, data, len))
        fail_world(w, "%s", "out of memory handing a node its input");
}

/* Hands a message from a local sender to a local endpoint: its inbox, or
 * limbo until it is deployed. */
static void local_deliver(net_world *w, uint32_t dst, uint8_t *data, size_t len)
{
    net_node *d = local_node(w, dst);
    if (!d) {
        limbo_push(w, dst, 0, w->host, data, len);
        return;
    }
    post(w, d, CK_DMSG_MESSAGE, 0, 0, data, len);
}

static int send_now(net_node *n, uint32_t dst, uint8_t *msg, size_t len);
static void net_moment(ck_bnode *b, int m);

static int net_send(ck_bnode *b, uint32_t dst, uint8_t *msg, size_t len)
{
    return send_now((net_node *)b, dst, msg, len);
}

/* Sends what a node sent while busy, once it is not (ck_drive_release). */
static void send_held(void *ctx, ck_dnode *d, uint32_t dst, uint8_t *msg, size_t len)
{
    CK_UNUSED(d);
    send_now(ctx, dst, msg, len);
}

static int send_now(net_node *n, uint32_t dst, uint8_t *msg, size_t len)
{
    net_world *w = n->w;
    ck_platform *p = &n->b.plat;
    ck_msgcount_add(&w->r->msgs, msg, len);
    ck_moment m;
    uint64_t id; /* the job manager's process plays the timeline */
    if (ck_plan_msg_moment(p->endpoint, msg, len, &m, &id)) {
        if (w->host == w->ntm)
            ck_plan_moment(&w->plan, m, id, 1, world_now(w));
        else /* a subtask finished: told through the moment pipe */
            net_moment(&n->b, m);
    }
    int host = endpoint_host(w, dst);
    if (host < 0) {
        free(msg);
        return CK_EUNREACH;
    }
    if (host == w->host) {
        local_deliver(w, dst, msg, len);
        return CK_OK;
    }
    conn *c = out_conn(w, host);
    if (!c) {
        free(msg);
        return CK_EUNREACH;
    }
    ck_bnode_talk_mark(&n->b, host);
    int64_t rate, lat;
    shape(w, host, &rate, &lat);
    int rc = ck_tp_put(&c->tx, dst, p->endpoint, msg, len, world_now(w), lat, rate);
    free(msg);
    return rc;
}

static void shape(const net_world *w, int peer, int64_t *rate, int64_t *lat);

/* Reserves the store's link for `bytes` from now (one transfer at a
 * time); returns when they are across it. */
static ck_time store_link(net_world *w, size_t bytes)
{
    int64_t rate, lat;
    shape(w, w->ntm + 1, &rate, &lat);
    ck_time now = world_now(w);
    if (rate == 0)
        return now;
    ck_time start = CK_MAX(now, w->store_free);
    return w->store_free = start + (ck_time)((double)bytes * 1e9 / (double)rate);
}

/* A store transfer done at `across` (its bytes across the link) is
 * complete a round trip later, and not before now. */
static void store_done_at(net_node *n, uint64_t token, int status, uint8_t *data, size_t len,
                          ck_time across)
{
    net_world *w = n->w;
    int64_t rate, lat;
    shape(w, w->ntm + 1, &rate, &lat);
    ck_time now = world_now(w), due = CK_MAX(across + lat, now) + lat;
    /* then, or later when a store_delay draws it (bnode.h) */
    if (ck_bnode_store_done(&n->b, token, status, data, len, due))
        fail_world(w, "%s", "out of memory handing a node a store completion");
}

/* A download of `bytes` read: over a slow link, its completion waits for
 * the bytes to cross it and a round trip. */
static void store_done_link(net_node *n, uint64_t token, int status, uint8_t *data, size_t len,
                            size_t bytes)
{
    store_done_at(n, token, status, data, len, store_link(n->w, bytes));
}

/* Hands a put (data: the pool's, even on failure; or, with nsrc > 0, the
 * local files src[], of len bytes in all) or a get to the pool; an
 * upload's bytes cross the link while the store writes them, as they
 * stream to a real one (its stamp: when they are across). Returns the
 * pool's status (nothing is asked on failure). */
static int store_ask(net_world *w, net_node *n, int get, const char *key, uint64_t at,
                     uint8_t *data, size_t len, const char *const *src, uint32_t nsrc,
                     uint64_t token)
{
    if (get)
        return ck_storepool_get_range(w->pool, key, at, len, n, token);
    if (nsrc)
        return at ? ck_storepool_append_files(w->pool, key, at, src, nsrc, len, n, token,
                                              store_link(w, len))
                  : ck_storepool_put_files(w->pool, key, src, nsrc, len, n, token,
                                           store_link(w, len));
    return at ? ck_storepool_append(w->pool, key, at, data, len, n, token, store_link(w, len))
              : ck_storepool_put(w->pool, key, data, len, n, token, store_link(w, len));
}

static void paths_free(char **p, uint32_t n)
{
    for (uint32_t i = 0; p && i < n; i++)
        free(p[i]);
    free(p);
}

static int store_cut(const net_world *w)
{
    return w->cut && w->cut[w->ntm + 1] > 0;
}

static int hold_store(net_world *w, net_node *n, int get, const char *key, uint64_t at,
                      uint8_t *data, size_t len, const char *const *src, uint32_t nsrc,
                      uint64_t token)
{
    held_store *h = calloc(1, sizeof(*h));
    if (h && nsrc && (h->src = calloc(nsrc, sizeof(char *))))
        for (; h->nsrc < nsrc && (h->src[h->nsrc] = strdup(src[h->nsrc])); h->nsrc++)
            ;
    if (!h || h->nsrc < nsrc) {
        if (h)
            paths_free(h->src, h->nsrc);
        free(h);
        free(data);
        return CK_ENOMEM;
    }
    h->n = n;
    h->get = get;
    snprintf(h->key, sizeof(h->key), "%s", key);
    h->at = at;
    h->data = data;
    h->len = len;
    h->token = token;
    CK_QUEUE_APPEND(w->held_store, w->held_store_tail, h);
    return CK_OK;
}


/* A write under the output directory failed (errno says why: a full disk):
 * the run cannot record what it did, so it fails now rather than retry. */
static void fail_io(net_world *w, const char *what)
{
    char why[512];
    snprintf(why, sizeof(why), "%s: %s", what, strerror(errno));
    w->io_failed = 1;
    if (w->host != w->ntm)
        signal(SIGTERM, SIG_IGN); /* exit with status 5 even when told to stop: the job
                                   * manager's process learns why from it */
    fail_world(w, "%s", why);
}

/* A moment: u16 moment | u16 host | u32 0 | i64 when (world_now); or a
 * hit of a fault inside a process: u16 MOM_HIT | u16 host | u32 fault | 0. */
#define MOM_REC 16
#define MOM_HIT 0xffff

/* A fault inside this task manager's process failed or delayed an
 * operation (buggify.h): the job manager's process counts it for run.json. */
static void net_bug_hit(void *ctx, int fault)
{
    net_world *w = ctx;
    uint8_t rec[MOM_REC] = {0};
    ck_put_u16(rec, MOM_HIT);
    ck_put_u16(rec + 2, (uint16_t)w->host);
    ck_put_u32(rec + 4, (uint32_t)fault);
    if (w->mom_w >= 0 && write(w->mom_w, rec, sizeof(rec)) != (ssize_t)sizeof(rec) &&
        !w->moments_lost++)
        fprintf(stderr, "chandy: task manager tm%d: a fault's hit went uncounted: the job "
                        "manager's process fell behind reading them\n",
                w->host);
}

/* A moment happened in this process (bnode.h): the job manager's process
 * plays the timeline, so a task manager's tells it through the moment
 * pipe, stamped with its time (the processes share the clock's origin),
 * if a triggered event waits for such a moment. */
static void net_moment(ck_bnode *b, int m)
{
    net_world *w = ((net_node *)b)->w;
    ck_time now = world_now(w);
    if (w->host == w->ntm) {
        ck_plan_moment(&w->plan, (ck_moment)m, 0, 0, now);
        return;
    }
    int wanted = 0;
    for (int i = 0; i < w->job->nfaults && !wanted; i++)
        wanted = w->job->faults[i].moment == (ck_moment)m;
    if (!wanted || w->mom_w < 0)
        return;
    uint8_t rec[MOM_REC] = {0};
    ck_put_u16(rec, (uint16_t)m);
    ck_put_u16(rec + 2, (uint16_t)w->host);
    ck_put_u64(rec + 8, (uint64_t)now);
    if (write(w->mom_w, rec, sizeof(rec)) != (ssize_t)sizeof(rec) && !w->moments_lost++)
        fprintf(stderr, "chandy: task manager tm%d: a moment (%s) went unseen: the job "
                        "manager's process fell behind reading them\n",
                w->host, ck_moment_name((ck_moment)m));
}

/* The moments task managers' processes saw, into the plan. */
static void read_moments(net_world *w)
{
    uint8_t b[MOM_REC * 64];
    ssize_t n;
    while ((n = read(w->mom_r, b, sizeof(b))) > 0)
        for (ssize_t i = 0; i + MOM_REC <= n; i += MOM_REC) {
            int m = ck_get_u16(b + i);
            uint32_t fault = ck_get_u32(b + i + 4);
            if (m > CK_MOMENT_NONE && m < CK_MOMENT_COUNT)
                ck_plan_moment(&w->plan, (ck_moment)m, 0, 0, (ck_time)ck_get_u64(b + i + 8));
            else if (m == MOM_HIT && w->bug.hits && fault < (uint32_t)w->bug.n)
                w->bug.hits[fault]++;
        }
}

/* A put (at > 0: an append) of data, or of the local files src[0..nsrc)
 * (len: their size). */
static int put(ck_bnode *b, const char *key, uint64_t at, uint8_t *data, size_t len,
               const char *const *src, uint32_t nsrc, uint64_t token)
{
    net_node *n = (net_node *)b;
    if (store_cut(n->w)) {
        int rc = hold_store(n->w, n, 0, key, at, data, len, src, nsrc, token);
        if (!rc && b->is_task)
            net_moment(b, CK_MOMENT_UPLOAD_STARTED);
        return rc;
    }
    int status = store_ask(n->w, n, 0, key, at, data, len, src, nsrc, token);
    if (status)
        store_done_link(n, token, status, NULL, 0, len);
    if (b->is_task)
        net_moment(b, CK_MOMENT_UPLOAD_STARTED);
    return CK_OK;
}

static int net_store_put(ck_bnode *b, const char *key, uint64_t at, uint8_t *data, size_t len,
                         uint64_t token)
{
    return put(b, key, at, data, len, NULL, 0, token);
}

/* The files are read on the pool's threads as they are written (their
 * size, now, paces the link); the completion carries what was read. */
static int net_store_put_files(ck_bnode *b, const char *key, uint64_t at,
                               const char *const *paths, uint32_t nf, uint64_t token)
{
    size_t len = 0;
    for (uint32_t i = 0; i < nf; i++) {
        struct stat st;
        if (stat(paths[i], &st))
            return CK_EIO;
        len += (size_t)st.st_size;
    }
    return put(b, key, at, NULL, len, paths, nf, token);
}

static int net_store_get(ck_bnode *b, const char *key, uint64_t at, uint64_t len,
                         uint64_t token)
{
    net_node *n = (net_node *)b;
    if (store_cut(n->w)) {
        int rc = hold_store(n->w, n, 1, key, at, NULL, len, NULL, 0, token);
        if (!rc && b->is_task)
            net_moment(b, CK_MOMENT_RESTORE_STARTED);
        return rc;
    }
    int status = store_ask(n->w, n, 1, key, at, NULL, len, NULL, 0, token);
    if (status)
        store_done_link(n, token, status, NULL, 0, 0);
    if (b->is_task)
        net_moment(b, CK_MOMENT_RESTORE_STARTED);
    return CK_OK;
}

/* Uploads and downloads the pool finished, each node's in the order it asked. */
static void store_reap(net_world *w)
{
    ck_storepool_done d[16];
    size_t k;
    while ((k = ck_storepool_reap(w->pool, d, 16)) > 0)
        for (size_t i = 0; i < k; i++) {
            net_node *n = d[i].ctx;
            if (d[i].get) {
                store_done_link(n, d[i].token, d[i].status, d[i].data, d[i].len, d[i].len);
                continue;
            }
            if (d[i].status == CK_EIO) {
                char what[300];
                snprintf(what, sizeof(what), "cannot write %s to the store", d[i].key);
                errno = d[i].err;
                fail_io(w, what);
            }
            ck_bnode_put_landed(&n->b, w->store_dir, d[i].key, d[i].at, d[i].status);
            /* a put of files: what was read of each */
            _Static_assert(CK_STOREPOOL_FILE_RESULT == CK_PUT_FILE_RESULT, "one result");
            store_done_at(n, d[i].token, d[i].status, d[i].data, d[i].data ? d[i].len : 0,
                          d[i].stamp);
        }
}

/* The store is reachable again: the requests made meanwhile go, in order. */
static void release_store(net_world *w)
{
    while (w->held_store && !store_cut(w)) {
        held_store *h = w->held_store;
        w->held_store = h->next;
        if (!w->held_store)
            w->held_store_tail = NULL;
        if (!h->n->b.d.dead) {
            int status = store_ask(w, h->n, h->get, h->key, h->at, h->data, h->len,
                                   (const char *const *)h->src, h->nsrc, h->token);
            h->data = NULL; /* the pool's now */
            if (status)
                store_done_link(h->n, h->token, status, NULL, 0, h->get ? 0 : h->len);
        }
        free(h->data);
        paths_free(h->src, h->nsrc);
        free(h);
    }
}

/* This process's host is cut from (delta 1) or reconnected to (-1) host peer. */
static void apply_cut(net_world *w, int peer, int delta)
{
    if (!w->cut || peer < 0 || peer > w->ntm + 1)
        return;
    w->cut[peer] += delta;
    if (w->cut[peer] == 0 && peer == w->ntm + 1)
        release_store(w);
    /* Held connection bytes go with the next flush_all. */
}

/* The control pipe from the job manager's process, records of
 * u16 kind | u16 host | u32 a | u32 b:
 *   CTL_CUT   this host is cut from `host` (a = +1) or no longer (a = -1);
 *   CTL_SLOW  this host computes at a per mille of its speed;
 *   CTL_LINK  `host`'s link carries a bytes/s (0: not slowed) and adds b us;
 *   CTL_BUG   fault a, inside the processes, comes into force (b = 1) or ends. */
enum { CTL_CUT, CTL_SLOW, CTL_LINK, CTL_BUG };
#define CTL_REC 12

static void read_control(net_world *w)
{
    uint8_t b[CTL_REC * 64];
    ssize_t n;
    while ((n = read(w->ctl_r, b, sizeof(b))) > 0)
        for (ssize_t i = 0; i + CTL_REC <= n; i += CTL_REC) {
            int kind = ck_get_u16(b + i), host = ck_get_u16(b + i + 2);
            uint32_t a = ck_get_u32(b + i + 4), v = ck_get_u32(b + i + 8);
            if (kind == CTL_SLOW)
                w->bh.slow = a > 0 && a <= 1000 ? a / 1000.0 : 1.0;
            else if (kind == CTL_LINK && host <= w->ntm + 1 && w->lrate) {
                w->lrate[host] = a;
                w->llat[host] = (int64_t)v * 1000;
            } else if (kind == CTL_CUT) {
                apply_cut(w, host, (int32_t)a);
            } else if (kind == CTL_BUG) {
                ck_buggify_set(&w->bug, (int)a, v != 0);
            }
        }
}

/* A write of the sinks' output failed (bnode.h). */
static void net_io_failed(ck_bnode *b, const char *what)
{
    fail_io(((net_node *)b)->w, what);
}

/* An upload or a download landed and waits to be reaped (bnode.h). */
static int net_mail_waiting(ck_bnode *b)
{
    net_world *w = ((net_node *)b)->w;
    return w->pool && ck_storepool_ready(w->pool);
}

static int net_deploy(ck_bnode *b, uint32_t attempt, uint32_t global,
                      const ck_restore_point *from);
static void net_undeploy(ck_bnode *b, uint32_t attempt, uint32_t global);
static void net_set_routes(ck_bnode *b, uint32_t attempt, int gen, uint32_t n,
                           const uint16_t *hosts);

/* What differs from the SimGrid backend (bnode.h): the real clock, sockets
 * between processes, the store directory reached directly. */
static const ck_bnode_io net_io = {
    .clock = net_clock,
    .send = net_send,
    .store_put = net_store_put,
    .store_get = net_store_get,
    .store_put_files = net_store_put_files,
    .deploy = net_deploy,
    .undeploy = net_undeploy,
    .set_routes = net_set_routes,
    .io_failed = net_io_failed,
    .moment = net_moment,
    .mail_waiting = net_mail_waiting,
};

/* ---- nodes, deployment, routes -------------------------------------------------------- */

static net_node *node_new(net_world *w, uint32_t ep, int host)
{
    net_node *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    char name[32];
    snprintf(name, sizeof(name), "ep%u", ep);
    ck_bnode_init(&n->b, &w->bw, &w->bh, ep, host, name);
    n->w = w;
    n->b.d.again = 1; /* its first step */
    n->next = w->nodes;
    w->nodes = n;
    return n;
}

static ck_netframe_verdict admit(net_world *w, int peer, const ck_netframe_msg *f);
static void sec_event(net_world *w, uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A frame from another host that waited in limbo, decided on again now
 * that placement changed. */
static ck_netframe_verdict limbo_admit(net_world *w, const msgq_item *it)
{
    if (it->peer == w->host)
        return CK_NETFRAME_DELIVER; /* from a node of this process */
    ck_netframe_msg f = {.dst = it->dst, .src = it->src, .msg = it->data, .len = it->len};
    return admit(w, it->peer, &f);
}

static void limbo_drop(net_world *w, msgq_item *it, ck_netframe_verdict v)
{
    sec_event(w, &w->dropped, "dropped a frame from host %d held for endpoint %u: %s", it->peer,
              it->dst, ck_netframe_verdict_name(v));
    w->limbo_bytes -= it->len;
    free(it->data);
    free(it);
}

/* Moves mail that waited in limbo to a node that now exists. */
static void limbo_release(net_world *w, net_node *n)
{
    msgq_item **pp = &w->limbo, *mine = NULL;
    while (*pp) {
        msgq_item *it = *pp;
        if (it->dst == n->b.plat.endpoint) {
            *pp = it->next;
            it->next = mine; /* reversed: limbo is newest first */
            mine = it;
        } else {
            pp = &it->next;
        }
    }
    while (mine) {
        msgq_item *it = mine;
        mine = it->next;
        ck_netframe_verdict v = limbo_admit(w, it);
        if (v != CK_NETFRAME_DELIVER) {
            limbo_drop(w, it, v);
            continue;
        }
        w->limbo_bytes -= it->len;
        if (it->peer != w->host)
            ck_bnode_talk_mark(&n->b, it->peer);
        post(w, n, CK_DMSG_MESSAGE, 0, 0, it->data, it->len);
        free(it);
    }
}

/* Placement of a new attempt is known: what waits for an endpoint that
 * will not be deployed here goes. */
static void limbo_purge(net_world *w)
{
    msgq_item **pp = &w->limbo;
    while (*pp) {
        msgq_item *it = *pp;
        ck_netframe_verdict v = limbo_admit(w, it);
        if (v == CK_NETFRAME_DELIVER || v == CK_NETFRAME_HOLD) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        limbo_drop(w, it, v);
    }
}

static int net_deploy(ck_bnode *b, uint32_t attempt, uint32_t global,
                      const ck_restore_point *from)
{
    net_world *w = ((net_node *)b)->w;
    /* built from the generation of the graph its attempt runs */
    const ck_job_env *env = ck_backend_env_of(w->envs, ck_routes_gen(&w->routes, attempt));
    uint32_t ep = ck_ep_task(env->g, attempt, global);
    if (local_node(w, ep))
        return CK_EEXIST;
    net_node *n = node_new(w, ep, w->host);
    if (!n)
        return CK_ENOMEM;
    int rc = ck_bnode_make_task(&n->b, env, attempt, global, from);
    if (rc)
        return rc;
    limbo_release(w, n);
    w->kick = 1; /* its first work() starts it */
    return CK_OK;
}

static void net_undeploy(ck_bnode *b, uint32_t attempt, uint32_t global)
{
    net_world *w = ((net_node *)b)->w;
    for (net_node *n = w->nodes; n; n = n->next)
        if (ck_bnode_undeploys(&n->b, attempt, global)) {
            ck_task_cancel(n->b.task);
            n->b.d.dead = 1;
        }
}

static void net_set_routes(ck_bnode *b, uint32_t attempt, int gen, uint32_t n,
                           const uint16_t *hosts)
{
    net_world *w = ((net_node *)b)->w;
    if (ck_routes_set(&w->routes, attempt, gen, n, hosts))
        return;
    limbo_purge(w);
}

/* ---- receiving ------------------------------------------------------------------- */

static void fail_world(net_world *w, const char *fmt, const char *detail)
{
    if (w->failed)
        return;
    w->failed = 1;
    snprintf(w->failure, sizeof(w->failure), fmt, detail);
    fprintf(stderr, "chandy: host %d: %s\n", w->host, w->failure);
}

/* A peer host went away: every live node here hears of it (refused, when
 * it is a lost host that came back: the job manager's process knows). */
static void peer_lost(net_world *w, int host)
{
    int flags = 0;
    if (w->back_refused && host >= 0 && host < w->ntm && w->back_refused[host]) {
        flags = CK_PEER_REFUSED;
        w->back_refused[host] = 0;
    }
    for (net_node *n = w->nodes; n; n = n->next) {
        if (!n->b.d.dead && !n->b.tm && ck_bnode_talk_forget(&n->b, host))
            post(w, n, CK_DMSG_PEER_LOST, (uint64_t)(host | flags), 0, NULL, 0);
    }
}

/* A security event: counted, and logged while few were. */
static void sec_event(net_world *w, uint64_t *counter, const char *fmt, ...)
{
    (*counter)++;
    if (w->sec_logged > SEC_LOG_MAX)
        return;
    if (w->sec_logged++ == SEC_LOG_MAX) {
        fprintf(stderr, "chandy: host %d: more refused connections and dropped frames are "
                        "not logged\n", w->host);
        return;
    }
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "chandy: host %d: %s\n", w->host, line);
}

static int host_of(void *ctx, uint32_t ep)
{
    return endpoint_host(ctx, ep);
}

static ck_netframe_verdict admit(net_world *w, int peer, const ck_netframe_msg *f)
{
    /* A subtask's frame is checked against the graph its attempt runs;
     * of an attempt not routed here yet, against any generation's (it is
     * held, and decided again once routed). */
    ck_wire_hdr h;
    int gen = ck_wire_decode(f->msg, f->len, &h) ? 0 : ck_routes_gen(&w->routes, h.epoch);
    int ngens = w->job->env.gens ? w->job->env.ngens : 1;
    ck_netframe_verdict v = CK_NETFRAME_BAD;
    for (int k = gen >= 0 ? gen : 0; k < (gen >= 0 ? gen + 1 : ngens) && v == CK_NETFRAME_BAD;
         k++)
        v = ck_netframe_admit(ck_backend_env_of(w->envs, k)->g, w->host, peer, host_of, w,
                              w->routes.newest, f);
    return v;
}

/* A frame from the authenticated host peer: to a node here, to limbo, or dropped. */
static void on_frame(net_world *w, int peer, const ck_netframe_msg *f)
{
    ck_netframe_verdict v = admit(w, peer, f);
    net_node *d = v == CK_NETFRAME_DELIVER ? local_node(w, f->dst) : NULL;
    if (v == CK_NETFRAME_DELIVER && !d)
        v = CK_NETFRAME_UNKNOWN; /* placed here, but its deployment failed */
    if (v != CK_NETFRAME_DELIVER && v != CK_NETFRAME_HOLD) {
        sec_event(w, &w->dropped, "dropped a frame from host %d (source %u, destination %u): %s",
                  peer, f->src, f->dst, ck_netframe_verdict_name(v));
        return;
    }
    uint8_t *msg = malloc(f->len);
    if (!msg)
        return;
    memcpy(msg, f->msg, f->len);
    if (v == CK_NETFRAME_DELIVER) {
        ck_bnode_talk_mark(&d->b, peer);
        local_deliver(w, f->dst, msg, f->len);
        return;
    }
    if (limbo_push(w, f->dst, f->src, peer, msg, f->len))
        sec_event(w, &w->dropped,
                  "dropped a frame from host %d for endpoint %u: frames waiting for "
                  "deployment hold %zu bytes already",
                  peer, f->dst, w->limbo_bytes);
}

/* Hands out the whole frames a connection received. 0, or -1 to close. */
static int conn_parse(net_world *w, conn *c)
{
    ck_netframe_msg f;
    int rc;
    while ((rc = ck_netframe_next(&c->fr, &f)) == 1)
        on_frame(w, c->peer_host, &f);
    size_t pending = ck_netframe_pending(&c->fr);
    w->buffered = w->buffered - c->counted + pending;
    c->counted = pending;
    return rc < 0 ? -1 : 0;
}

static void conn_close_in(net_world *w, conn *c)
{
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    for (int i = 0; i < w->nin; i++)
        if (w->in_conns[i] == c) {
            w->in_conns[i] = w->in_conns[--w->nin];
            break;
        }
    w->buffered -= c->counted;
    conn_free(c);
}

/* Refuses a connection that did not authenticate. */
static void refuse(net_world *w, conn *c, const char *why)
{
    sec_event(w, &w->refused, "refused a connection: %s", why);
    conn_close_in(w, c);
}

/* Cuts off an authenticated connection. */
static void cut_off(net_world *w, conn *c, const char *why)
{
    sec_event(w, &w->cut_off, "closed the connection from host %d: %s", c->peer_host, why);
    conn_close_in(w, c);
}

/* The accepting side of the handshake: reads what the peer sent. 1 once
 * authenticated (frames may follow), 0 to wait for more, -1 when the
 * connection was closed. */
static int server_handshake(net_world *w, conn *c)
{
    while (c->auth.state != CK_NETAUTH_DONE) {
        uint8_t b[512];
        ssize_t n = read(c->fd, b, sizeof(b));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            refuse(w, c, "closed before authenticating");
            return -1;
        }
        size_t used;
        if (ck_netauth_feed(&c->auth, b, (size_t)n, &used)) {
            refuse(w, c, c->auth.why);
            return -1;
        }
        take_hs(c);
        if (conn_flush(w, c)) {
            refuse(w, c, "it went away during the handshake");
            return -1;
        }
        if (c->auth.state == CK_NETAUTH_DONE) {
            c->peer_host = c->auth.peer;
            if (ck_netframe_feed(&c->fr, b + used, (size_t)n - used) || conn_parse(w, c)) {
                cut_off(w, c, "malformed frame");
                return -1;
            }
        }
    }
    return 1;
}

static void on_readable(net_world *w, conn *c)
{
    if (c->auth.state != CK_NETAUTH_DONE && server_handshake(w, c) <= 0)
        return;
    /* Serve the other connections after a while: level-triggered epoll
     * comes back for the rest. */
    for (size_t budget = READ_BUDGET; budget > 0;) {
        if (w->buffered >= GLOBAL_CAP) {
            cut_off(w, c, "this process's receive buffers are full");
            return;
        }
        uint8_t *space;
        size_t room;
        size_t want = CK_MIN(CK_MIN((size_t)65536, budget), GLOBAL_CAP - w->buffered);
        if (ck_netframe_reserve(&c->fr, want, &space, &room)) {
            fail_world(w, "%s", "out of memory reading a connection");
            return;
        }
        if (room == 0) {
            cut_off(w, c, "it sent more than a connection may buffer without completing a frame");
            return;
        }
        ssize_t n = read(c->fd, space, room);
        if (n > 0) {
            ck_netframe_wrote(&c->fr, (size_t)n);
            budget -= CK_MIN(budget, (size_t)n);
            /* Frame as we go: unparsed input stays under one frame. */
            if (conn_parse(w, c)) {
                cut_off(w, c, "malformed frame");
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* Closed by the peer: its process is gone (or the run is over). */
        conn_parse(w, c);
        int host = c->peer_host;
        conn_close_in(w, c);
        if (host >= 0 && host != w->host)
            peer_lost(w, host);
        return;
    }
}

/* The dialling side of the handshake: the server's reply. 0, or -1 when
 * the connection failed (closed, or the server could not prove the secret). */
static int client_handshake(net_world *w, conn *c)
{
    while (c->auth.state != CK_NETAUTH_DONE) {
        uint8_t b[CK_NETAUTH_REPLY];
        ssize_t n = read(c->fd, b, sizeof(b));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        size_t used;
        if (ck_netauth_feed(&c->auth, b, (size_t)n, &used) || used < (size_t)n) {
            sec_event(w, &w->refused, "host %d did not authenticate: %s", c->peer_host,
                      c->auth.why ? c->auth.why : "it sent more than its reply");
            return -1;
        }
    }
    take_hs(c);
    return conn_flush(w, c) ? -1 : 0;
}

/* Closes connections that did not authenticate in time. What arrived in
 * time counts, though this process (slowed by a slow_cpu fault) did not
 * look at it in time. */
static void expire_handshakes(net_world *w)
{
    ck_time now = world_now(w);
    for (int i = 0; i < w->nin; i++) {
        conn *c = w->in_conns[i];
        if (c->auth.state == CK_NETAUTH_DONE || (!c->evicted && now < c->hs_deadline))
            continue;
        if (c->evicted)
            refuse(w, c, "too many connections trying to authenticate");
        else if (server_handshake(w, c) == 0)
            refuse(w, c, "no handshake in time");
        i = -1; /* the array may have changed */
    }
}

static void on_accept(net_world *w, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return;
        set_nonblock(fd);
        /* Too many handshakes under way: the oldest goes (ours take a
         * millisecond; a stranger's wait is what is cut short). It is
         * closed before the next wait: an event of this round may name it. */
        int pending = 0;
        conn *oldest = NULL;
        for (int i = 0; i < w->nin; i++) {
            conn *o = w->in_conns[i];
            if (o->auth.state != CK_NETAUTH_DONE && !o->evicted) {
                pending++;
                if (!oldest || o->hs_deadline < oldest->hs_deadline)
                    oldest = o;
            }
        }
        if (pending >= MAX_PENDING && oldest)
            oldest->evicted = 1;
        if (w->nin == w->in_cap) {
            int cap = w->in_cap ? w->in_cap * 2 : 16;
            conn **v = realloc(w->in_conns, (size_t)cap * sizeof(*v));
            if (!v) {
                close(fd);
                return;
            }
            w->in_conns = v;
            w->in_cap = cap;
        }
        conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->peer_host = -1;
        ck_netauth_server(&c->auth, w->secret, w->host, w->ntm + 1);
        ck_netframe_init(&c->fr, CK_NETFRAME_CAP);
        c->hs_deadline = world_now(w) + HS_TIMEOUT;
        w->in_conns[w->nin++] = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
}

/* ---- the loop ------------------------------------------------------------------ */

/* One pass over the local nodes. Returns 1 when some node can do more now. */
static int run_nodes(net_world *w)
{
    int busy = 0;
    ck_time now = world_now(w);
    ck_dlater_run(&w->bh.later, now);
    for (net_node *n = w->nodes; n; n = n->next) {
        if (!ck_drive_wants(&n->b.d, now))
            continue;
        ck_drive_release(&n->b.d, send_held, n);
        if (ck_drive_step(&n->b.d, now) > 0)
            busy = 1;
    }
    /* A node visited early in the pass may have mail from one visited
     * after it (subtasks of one process talk through their inboxes): it
     * must not wait for the next timeout. */
    for (net_node *n = w->nodes; n && !busy; n = n->next)
        if (ck_drive_next(&n->b.d, now) <= now)
            busy = 1;
    if (w->kick) {
        w->kick = 0;
        busy = 1;
    }
    return busy;
}

static ck_time next_deadline(net_world *w)
{
    ck_time d = CK_TIME_NEVER, now = world_now(w);
    for (int h = 0; w->out_conn && h <= w->ntm; h++)
        if (w->out_conn[h])
            d = CK_MIN(d, conn_wake(w, w->out_conn[h], now));
    if (w->bh.later.head)
        d = CK_MIN(d, w->bh.later.head->due);
    for (int i = 0; i < w->nin; i++)
        if (w->in_conns[i]->auth.state != CK_NETAUTH_DONE)
            d = CK_MIN(d, w->in_conns[i]->evicted ? 0 : w->in_conns[i]->hs_deadline);
    for (net_node *n = w->nodes; n; n = n->next)
        d = CK_MIN(d, ck_drive_next(&n->b.d, now)); /* a busy one goes on when its work ends */
    return d;
}

static void flush_all(net_world *w)
{
    for (int h = 0; h <= w->ntm; h++) {
        conn *c = w->out_conn[h];
        if (c && (ck_tp_pending(&c->tx) || c->hs_len > c->hs_off) && conn_flush(w, c)) {
            /* The peer is gone: drop the connection; a later send reconnects. */
            epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
            conn_free(c);
            w->out_conn[h] = NULL;
            peer_lost(w, h);
        }
    }
}

/* The job manager's process: the timeline's faults, and host processes that died. */
static void host_start(net_world *w, int h);

/* A slow host is stopped and continued (SIGSTOP, SIGCONT) in slices of
 * this period, running `factor` of each: everything on it slows down. */
#define SLOW_SLICE (10 * CK_NS_PER_MS)

/* Host h's speed factor in force (1: not slowed). */
static double slow_factor(const net_world *w, int h)
{
    return w->plan.cpu && h >= 0 && h < w->plan.nh ? w->plan.cpu[h] : 1.0;
}

/* Whether host h should be running at `now` (its slice), and when that changes. */
static int slice_running(const net_world *w, int h, ck_time now, ck_time *next)
{
    double f = slow_factor(w, h);
    if (f >= 1.0) {
        *next = CK_TIME_NEVER;
        return 1;
    }
    ck_time start = now - now % SLOW_SLICE, on = (ck_time)(f * (double)SLOW_SLICE);
    if (now < start + on) {
        *next = start + on;
        return 1;
    }
    *next = start + SLOW_SLICE;
    return 0;
}

static void send_ctl(net_world *w, int h, int kind, int host, uint32_t a, uint32_t v);
static void send_link(net_world *w, int h, int l);

/* Every host's link as the cluster declares it (`cluster.link`, and
 * `cluster.store` for the store's), slowed by the faults in force: every
 * process paces what crosses it and holds each frame for its latency.
 * Links at 4 GB/s or more are not paced (loopback is no faster). */
static void apply_links(net_world *w)
{
    const ck_cluster_spec *cl = w->job->cluster;
    for (int l = 0; w->lrate_sent && l <= w->ntm + 1; l++) {
        int store = l == w->ntm + 1;
        double bw = (store ? cl->store_bw : cl->link_bw) * w->plan.bw[l];
        int64_t lat = (store ? cl->store_lat : cl->link_lat) + w->plan.lat[l];
        int64_t rate = bw >= 4e9 ? 0 : bw < 1 ? 1 : (int64_t)bw;
        w->lrate[l] = rate;
        w->llat[l] = lat;
        if (rate == w->lrate_sent[l] && lat == w->llat_sent[l])
            continue;
        w->lrate_sent[l] = rate;
        w->llat_sent[l] = lat;
        for (int h = 0; h < w->ntm; h++)
            send_link(w, h, l);
    }
}

static void apply_slowness(net_world *w, ck_time now)
{
    apply_links(w);
    for (int h = 0; h < w->ntm; h++) {
        /* The process's virtual CPU time slows by the factor... */
        int pm = (int)(slow_factor(w, h) * 1000 + 0.5);
        pm = pm < 1 ? 1 : pm;
        if (w->pids[h] > 0 && pm != w->slow_pm[h]) {
            send_ctl(w, h, CTL_SLOW, 0, (uint32_t)pm, 0);
            w->slow_pm[h] = pm;
        }
        /* ...and its real work runs in slices. */
        ck_time next;
        int run = slice_running(w, h, now, &next);
        if (w->pids[h] > 0 && !w->frozen[h] && run != !w->stopped[h]) {
            kill(w->pids[h], run ? SIGCONT : SIGSTOP);
            w->stopped[h] = !run;
        }
    }
}

/* Tells task manager h's process about a change of its row of the cut matrix. */
static void send_ctl(net_world *w, int h, int kind, int host, uint32_t a, uint32_t v)
{
    if (h < 0 || h >= w->ntm || w->pids[h] <= 0 || w->ctl_w[h] < 0)
        return;
    uint8_t b[CTL_REC];
    ck_put_u16(b, (uint16_t)kind);
    ck_put_u16(b + 2, (uint16_t)host);
    ck_put_u32(b + 4, a);
    ck_put_u32(b + 8, v);
    if (write(w->ctl_w[h], b, sizeof(b)) != (ssize_t)sizeof(b))
        fail_world(w, "%s", "the control pipe to a task manager broke");
}

static void send_cut(net_world *w, int h, int peer, int delta)
{
    send_ctl(w, h, CTL_CUT, peer, (uint32_t)(int32_t)delta, 0);
}

/* Tells task manager process h how host l's link is slowed. */
static void send_link(net_world *w, int h, int l)
{
    send_ctl(w, h, CTL_LINK, l, (uint32_t)w->lrate[l], (uint32_t)(w->llat[l] / 1000));
}

/* A network fault started (delta 1) or ended (-1): every pair it cuts is
 * told (the plan counts them). */
static void recut(net_world *w, const ck_fault *f, int delta)
{
    int nh = w->ntm + 2;
    for (int a = 0; a < nh; a++)
        for (int b = 0; b < nh; b++) {
            if (!ck_plan_fault_cuts(f, a, b))
                continue;
            if (a == w->ntm)
                apply_cut(w, b, delta); /* this process: the job manager */
            else
                send_cut(w, a, b, delta);
        }
}

/* Fault i inside the processes comes into force (on) or ends, here and
 * in every task manager's process (one forked later inherits it). */
static void set_bug(net_world *w, int i, int on)
{
    ck_buggify_set(&w->bug, i, on);
    for (int h = 0; h < w->ntm; h++)
        send_ctl(w, h, CTL_BUG, 0, (uint32_t)i, (uint32_t)on);
}

/* Task manager h's process ends at once (SIGKILL); the kernel resets its
 * connections. */
static void host_kill(net_world *w, int h)
{
    if (w->pids[h] <= 0)
        return;
    kill(w->pids[h], SIGKILL);
    waitpid(w->pids[h], NULL, 0);
    /* what its store threads were writing will never be renamed into place */
    ck_storefs_drop_parts(w->store_dir, (long)w->pids[h]);
    w->pids[h] = 0;
    w->stopped[h] = w->frozen[h] = 0;
    w->slow_pm[h] = 0; /* a new process is told again */
}

static void start_fault(net_world *w, int i, ck_time now)
{
    ck_fault_run *f = &w->r->faults[i];
    const ck_fault *sp = f->spec;
    ck_plan_start(&w->plan, i, now);
    if (f->failed)
        return; /* a crash of a host that is down already */
    int h = sp->host;
    switch (sp->kind) {
    case CK_FAULT_CRASH:
        if (w->pids[h] > 0 && sp->crash == CK_CRASH_HOST) {
            /* A lost host answers nothing and resets nothing: its process
             * stops with its connections open (host_kill, once noticed). */
            kill(w->pids[h], SIGSTOP);
            w->frozen[h] = 1;
        } else if (w->pids[h] > 0) {
            host_kill(w, h); /* kill -9: its connections reset */
        }
        break;
    case CK_FAULT_SAVEPOINT:
    case CK_FAULT_RESCALE: {
        /* As `flink savepoint` (or a rescale) would: a request in the job
         * manager's inbox. */
        net_node *jm = local_node(w, CK_EP_JM);
        size_t n;
        uint8_t *m = ck_fault_request(sp, &n);
        if (!jm || !m) {
            free(m);
            ck_plan_failed(&w->plan, i, jm ? "out of memory" : "the job manager is not there");
            break;
        }
        if (ck_drive_post(&jm->b.d, CK_DMSG_MESSAGE, 0, 0, m, n))
            ck_plan_failed(&w->plan, i, "out of memory");
        break;
    }
    case CK_FAULT_CORRUPT_CHECKPOINT: {
        char detail[sizeof(f->detail)];
        if (ck_fault_damage(sp, w->store_dir, w->job->env.job_id, detail, sizeof(detail),
                            f->key, sizeof(f->key)))
            ck_plan_failed(&w->plan, i, detail);
        else
            snprintf(f->detail, sizeof(f->detail), "%s", detail);
        break;
    }
    case CK_FAULT_LINK_DOWN:
    case CK_FAULT_PARTITION:
        recut(w, sp, 1);
        break;
    case CK_FAULT_STORE_ERRORS:
    case CK_FAULT_STORE_DELAY:
    case CK_FAULT_ALLOC_FAILURE:
        set_bug(w, i, 1);
        break;
    case CK_FAULT_SINK_DUPLICATE:
    case CK_FAULT_SINK_DROP:
    case CK_FAULT_SINK_CORRUPT: {
        /* Armed in the sinks' directory: whichever task manager's process
         * commits a transaction of the sink next claims it (bnode.c). */
        char detail[sizeof(f->detail)];
        if (ck_fault_output_arm(i, w->sink_dir, detail, sizeof(detail)))
            ck_plan_failed(&w->plan, i, detail);
        break;
    }
    default:
        break; /* slow_cpu, slow_link: apply_slowness, from the plan */
    }
}

static void end_fault(net_world *w, int i, ck_time now)
{
    const ck_fault *sp = &w->plan.faults[i];
    ck_plan_end(&w->plan, i, now);
    if (sp->kind == CK_FAULT_CRASH && w->frozen[sp->host]) {
        w->back_refused[sp->host] = 1; /* a lost host back: its old connections are refused */
        host_kill(w, sp->host);
    }
    if (sp->kind == CK_FAULT_CRASH && w->pids[sp->host] == 0)
        host_start(w, sp->host);
    if (sp->kind == CK_FAULT_LINK_DOWN || sp->kind == CK_FAULT_PARTITION)
        recut(w, sp, -1);
    if (ck_fault_in_process(sp->kind))
        set_bug(w, i, 0);
}

/* The timeline up to now: every start and end that is due, in order. A
 * lost host's process is killed once the job manager has noticed the loss
 * (and so has stopped counting on it). */
static void apply_faults(net_world *w)
{
    ck_time now = world_now(w);
    for (int h = 0; h < w->ntm; h++)
        if (w->frozen[h] && w->r->jm_ready && w->r->jm.tm_seen[h] == CK_TIME_NEVER)
            host_kill(w, h);
    int which, end, waiting;
    while (ck_plan_next(&w->plan, &which, &end, &waiting) <= now && which >= 0) {
        if (end)
            end_fault(w, which, now);
        else
            start_fault(w, which, now);
    }
    apply_slowness(w, now);
}

static ck_time next_fault(const net_world *w)
{
    int which, end, waiting;
    ck_time d = ck_plan_next(&w->plan, &which, &end, &waiting), now = world_now(w);
    for (int h = 0; h < w->ntm; h++) {
        ck_time next;
        slice_running(w, h, now, &next);
        d = CK_MIN(d, next);
    }
    return d;
}

/* The faults this backend cannot play, refused before the run. */
static int check_faults(const ck_backend_job *job, char *err, size_t errlen)
{
    for (int i = 0; i < job->nfaults; i++) {
        const ck_fault *f = &job->faults[i];
        const char *why = NULL;
        if (f->kind == CK_FAULT_SLOW_CPU && f->host >= job->ntm)
            why = "only task managers' processes can be slowed here";
        if (why) {
            snprintf(err, errlen, "events[%d]: action \"%s\": %s", i, ck_fault_name(f->kind),
                     why);
            return CK_EINVAL;
        }
    }
    return CK_OK;
}

static void check_children(net_world *w)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int h = 0; h < w->ntm; h++) {
            if (w->pids[h] != pid)
                continue;
            w->pids[h] = 0;
            ck_storefs_drop_parts(w->store_dir, (long)pid); /* its puts cut short */
            char what[128];
            if (WIFSIGNALED(status))
                snprintf(what, sizeof(what), "tm%d was killed by signal %d", h, WTERMSIG(status));
            else
                snprintf(what, sizeof(what), "tm%d exited with status %d", h, WEXITSTATUS(status));
            fprintf(stderr, "chandy: host process %s\n", what);
            if (WIFEXITED(status) && WEXITSTATUS(status) == CK_EXIT_INVARIANT) {
                /* It said which invariant: the run ends with it, as one
                 * process would. */
                for (int k = 0; k < w->ntm; k++)
                    if (w->pids[k] > 0) {
                        kill(w->pids[k], SIGKILL);
                        waitpid(w->pids[k], NULL, 0);
                    }
                fflush(stdout);
                _exit(CK_EXIT_INVARIANT);
            }
            if (WIFEXITED(status) && WEXITSTATUS(status) == 5) {
                /* It could not write its sinks' output or the store (said above). */
                snprintf(what, sizeof(what), "tm%d could not write under the output directory", h);
                w->io_failed = 1;
                fail_world(w, "%s", what);
            }
        }
    }
}

static int jm_finished(net_world *w)
{
    for (net_node *n = w->nodes; n; n = n->next)
        if (n->b.plat.endpoint == CK_EP_JM)
            return n->b.d.node.ops->finished(n->b.d.node.self);
    return 1;
}

/* With invariant checks on (ck_bworld.check): what this process keeps
 * beside its nodes (their own are checked at each step, drive.h). */
static void check_world(net_world *w)
{
    ck_inv v;
    char where[48];
    ck_time now = world_now(w);
    snprintf(where, sizeof(where), w->host < w->ntm ? "host tm%d" : "the job manager's host",
             w->host);
    if (ck_bhost_check(&w->bh, &v) || ck_routes_check(&w->routes, &v) ||
        (w->host == w->ntm && ck_plan_check(&w->plan, &v)))
        ck_drive_violated(where, now, &v);
    for (net_node *n = w->nodes; n; n = n->next)
        if (ck_bnode_check(&n->b, &v))
            ck_drive_violated(where, now, &v);
    for (int i = 0; i < w->nin; i++)
        if (ck_netframe_parser_check(&w->in_conns[i]->fr, &v)) {
            ck_inv_where(&v, "connection from host %d", w->in_conns[i]->peer_host);
            ck_drive_violated(where, now, &v);
        }
    for (int h = 0; w->out_conn && h <= w->ntm; h++)
        if (w->out_conn[h] && ck_tp_check(&w->out_conn[h]->tx, &v)) {
            ck_inv_where(&v, "connection to host %d", h);
            ck_drive_violated(where, now, &v);
        }
}

static void loop(net_world *w, ck_time limit)
{
    struct epoll_event evs[64];
    int is_jm = w->host == w->ntm;
    for (;;) {
        if (is_jm)
            apply_faults(w);
        expire_handshakes(w);
        int busy = run_nodes(w);
        flush_all(w);
        if (w->bw.check)
            check_world(w);
        if (w->failed)
            return;
        if (is_jm) {
            if (jm_finished(w))
                return;
            check_children(w);
            if (world_now(w) > limit) {
                w->timed_out = 1; /* the job's state stays as it is */
                return;
            }
        }
        /* Wait to the nanosecond (a busy spell of virtual CPU often ends
         * within a millisecond), at most 100 ms. */
        ck_time wait = 0;
        if (!busy) {
            ck_time d = next_deadline(w), now = world_now(w);
            if (is_jm)
                d = CK_MIN(d, next_fault(w));
            wait = d == CK_TIME_NEVER ? 100 * CK_NS_PER_MS
                   : d <= now          ? 0
                                       : CK_MIN(d - now, 100 * CK_NS_PER_MS);
        }
        struct timespec ts = {.tv_sec = (time_t)(wait / CK_NS_PER_S),
                              .tv_nsec = (long)(wait % CK_NS_PER_S)};
        int n = epoll_pwait2(w->epfd, evs, 64, &ts, NULL);
        if (n < 0 && errno == ENOSYS) /* a kernel before 5.11 */
            n = epoll_wait(w->epfd, evs, 64, (int)((wait + CK_NS_PER_MS - 1) / CK_NS_PER_MS));
        for (int i = 0; i < n; i++) {
            void *ptr = evs[i].data.ptr;
            if (ptr == (void *)w->listen_fd) {
                on_accept(w, w->listen_fd[w->host]);
                continue;
            }
            if (ptr == (void *)&w->ctl_r) {
                read_control(w);
                continue;
            }
            if (ptr == (void *)&w->mom_r) {
                read_moments(w);
                continue;
            }
            if (ptr == (void *)&w->pool) {
                store_reap(w);
                continue;
            }
            conn *c = ptr;
            if (evs[i].events & EPOLLOUT)
                conn_flush(w, c);
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (c->outgoing) {
                    /* An outgoing connection is read from during the
                     * handshake only; after it, the peer closed it. */
                    if (c->auth.state != CK_NETAUTH_DONE && !(evs[i].events & EPOLLERR) &&
                        client_handshake(w, c) == 0)
                        continue;
                    int host = c->peer_host;
                    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
                    w->out_conn[host] = NULL;
                    conn_free(c);
                    peer_lost(w, host);
                } else {
                    on_readable(w, c);
                }
            }
        }
    }
}

/* ---- setup ---------------------------------------------------------------------- */

static int world_setup(net_world *w, int host)
{
    ck_backend_result *r = w->r;
    w->host = host;
    ck_routes_init(&w->routes, ck_graph_stride(w->job->env.g));
    if (!(w->envs = ck_backend_envs(&w->job->env)))
        return CK_ENOMEM;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0)
        return CK_EIO;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w->listen_fd};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd[host], &ev);
    w->out_conn = calloc((size_t)w->ntm + 1, sizeof(conn *));
    w->cut = calloc((size_t)w->ntm + 2, sizeof(int));
    int cores_rc = ck_bhost_init(&w->bh, w->job->cluster->cores, w->speed,
                                 w->job->cluster->local_disk_bw, w->job->env.cfg);
    /* lrate, llat; and in the job manager's process what it told the others */
    size_t nl = (size_t)w->ntm + 2;
    w->lrate = calloc((host == w->ntm ? 4 : 2) * nl, sizeof(int64_t));
    if (!w->out_conn || !w->cut || cores_rc || !w->lrate)
        return CK_ENOMEM;
    /* the job manager's puts are metadata: no direct I/O there */
    if (!(w->pool = ck_storepool_new(w->store_dir, CK_STOREPOOL_THREADS, host < w->ntm)))
        return CK_ENOMEM;
    struct epoll_event pev = {.events = EPOLLIN, .data.ptr = &w->pool};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, ck_storepool_fd(w->pool), &pev);
    w->llat = w->lrate + nl;
    if (host == w->ntm) {
        w->lrate_sent = w->lrate + 2 * nl;
        w->llat_sent = w->lrate + 3 * nl;
    }
    if (host < w->ntm && w->ctl_r >= 0) {
        set_nonblock(w->ctl_r);
        struct epoll_event cev = {.events = EPOLLIN, .data.ptr = &w->ctl_r};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->ctl_r, &cev);
    }
    if (host == w->ntm && w->mom_r >= 0) {
        struct epoll_event mev = {.events = EPOLLIN, .data.ptr = &w->mom_r};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->mom_r, &mev);
    }
    if (host == w->ntm) {
        net_node *n = node_new(w, CK_EP_JM, -1);
        if (!n)
            return CK_ENOMEM;
        if (ck_jm_init(&r->jm, &n->b.plat, &w->job->env, w->ntm, w->job->seed))
            return CK_ENOMEM;
        r->jm_ready = 1;
        n->b.d.node = ck_jm_node(&r->jm);
    } else {
        net_node *n = node_new(w, CK_EP_TM0 + (uint32_t)host, host);
        if (!n || !(n->b.tm = malloc(sizeof(*n->b.tm))))
            return CK_ENOMEM;
        ck_tm_init(n->b.tm, &n->b.plat, w->job->env.g, w->job->env.cfg, host, w->ntm);
        ck_tm_generations(n->b.tm, w->job->env.gens, w->job->env.ngens);
        n->b.d.node = ck_tm_node(n->b.tm);
    }
    return CK_OK;
}

static void world_free(net_world *w)
{
    ck_storepool_free(w->pool); /* before the nodes its requests name */
    w->pool = NULL;
    net_node *n = w->nodes;
    while (n) {
        net_node *next = n->next;
        ck_bnode_clear(&n->b);
        free(n);
        n = next;
    }
    w->nodes = NULL;
    while (w->held_store) {
        held_store *h = w->held_store;
        w->held_store = h->next;
        free(h->data);
        paths_free(h->src, h->nsrc);
        free(h);
    }
    w->held_store_tail = NULL;
    free(w->cut);
    w->cut = NULL;
    ck_bhost_free(&w->bh);
    free(w->lrate);
    w->lrate = w->llat = w->lrate_sent = w->llat_sent = NULL;
    while (w->limbo) {
        msgq_item *it = w->limbo;
        w->limbo = it->next;
        free(it->data);
        free(it);
    }
    w->limbo_bytes = 0;
    ck_routes_free(&w->routes);
    free(w->envs);
    w->envs = NULL;
    if (w->out_conn)
        for (int h = 0; h <= w->ntm; h++)
            conn_free(w->out_conn[h]);
    free(w->out_conn);
    for (int i = 0; i < w->nin; i++)
        conn_free(w->in_conns[i]);
    free(w->in_conns);
    ck_sinkfs_close(&w->sinks);
    if (w->epfd > 0)
        close(w->epfd);
}

/* A task manager's process: serve until the job manager's process says stop. */
static void host_main(net_world *w, int host)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_DFL);
    for (int h = 0; h < w->ntm; h++)
        if (w->ctl_w[h] >= 0)
            close(w->ctl_w[h]);
    ck_plan_free(&w->plan); /* the job manager's process plays the timeline */
    w->bug.hit = net_bug_hit; /* ...and counts the hits of its faults */
    w->bug.ctx = w;
    if (w->mom_r >= 0)
        close(w->mom_r);
    w->mom_r = -1;
    w->cut = NULL;       /* the job manager's row: not ours */
    w->bh = (ck_bhost){.slow = 1.0}; /* nor its cores */
    w->lrate = w->llat = w->lrate_sent = w->llat_sent = NULL;
    w->store_free = 0;
    w->held_store = w->held_store_tail = NULL;
    ck_storepool_forsake(w->pool); /* the job manager's: its thread is not here */
    w->pool = NULL;
    for (int h = 0; h <= w->ntm; h++)
        if (h != host)
            close(w->listen_fd[h]);
    /* Forget what the parent process had (it forked with its own state). */
    w->nodes = NULL;
    w->limbo = NULL;
    w->limbo_bytes = 0;
    w->buffered = 0;
    w->sec_logged = 0;
    w->refused = w->dropped = w->cut_off = 0;
    for (int i = 0; i < w->nin; i++)
        close(w->in_conns[i]->fd);
    w->in_conns = NULL;
    w->nin = w->in_cap = 0;
    w->sinks.s = NULL; /* the job manager's process writes no sink */
    w->sinks.n = w->sinks.cap = 0;
    if (w->epfd > 0)
        close(w->epfd);
    if (w->out_conn) {
        for (int h = 0; h <= w->ntm; h++)
            if (w->out_conn[h] && w->out_conn[h]->fd >= 0)
                close(w->out_conn[h]->fd);
        w->out_conn = NULL;
    }
    if (world_setup(w, host)) {
        fprintf(stderr, "chandy: host %d: setting up: out of memory\n", host);
        _exit(3);
    }
    /* A task manager's local disk: what a crashed process of this host
     * left (its state backends' working directories) is cleared when it
     * starts again. */
    char local[700];
    snprintf(local, sizeof(local), "%s/tm%d", w->local_dir, host);
    if (host < w->ntm)
        ck_storefs_rmtree(local);
    loop(w, CK_TIME_NEVER);
    _exit(w->io_failed ? 5 : w->failed ? 4 : 0);
}

static void host_start(net_world *w, int h)
{
    int ctl[2];
    if (pipe2(ctl, O_CLOEXEC)) {
        fail_world(w, "%s", "cannot make a control pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(ctl[1]);
        w->ctl_r = ctl[0];
        host_main(w, h);
    }
    close(ctl[0]);
    if (w->ctl_w[h] >= 0)
        close(w->ctl_w[h]);
    w->ctl_w[h] = ctl[1];
    if (pid > 0) {
        w->pids[h] = pid;
        /* A process that (re)starts learns the cuts and slow links
         * already in force. */
        int nh = w->ntm + 2;
        for (int b = 0; b < nh; b++) {
            if (w->plan.cut[h * nh + b])
                send_cut(w, h, b, w->plan.cut[h * nh + b]);
            if (w->lrate_sent && (w->lrate_sent[b] || w->llat_sent[b]))
                send_link(w, h, b);
        }
    }
}

static int listen_on_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1024) ||
        getsockname(fd, (struct sockaddr *)&a, &alen)) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    *port = ntohs(a.sin_port);
    return fd;
}

/* The run is over: every task manager's process still there is told to
 * stop (a lost host's killed), and continued, as one stopped from outside
 * would never act on the TERM; those not gone within STOP_GRACE are
 * killed. All are reaped; one that exited with status 5 could not write
 * under the output directory, which the run's error then says. */
static void stop_children(net_world *w)
{
    for (int h = 0; h < w->ntm; h++)
        if (w->pids[h] > 0) {
            kill(w->pids[h], w->frozen[h] ? SIGKILL : SIGTERM);
            kill(w->pids[h], SIGCONT);
        }
    ck_time deadline = world_now(w) + STOP_GRACE;
    for (;;) {
        int left = 0, late = world_now(w) >= deadline;
        for (int h = 0; h < w->ntm; h++) {
            pid_t pid = w->pids[h];
            if (pid <= 0)
                continue;
            int st;
            pid_t got = waitpid(pid, &st, WNOHANG);
            if (got == 0 && late) {
                fprintf(stderr, "chandy: host process tm%d did not stop within %d s: killed\n", h,
                        (int)(STOP_GRACE / CK_NS_PER_S));
                kill(pid, SIGKILL); /* ends a stopped process too */
                got = waitpid(pid, &st, 0);
            }
            if (got == 0) {
                left++;
                continue;
            }
            w->pids[h] = 0;
            if (got != pid)
                continue; /* reaped elsewhere: nothing to learn */
            ck_storefs_drop_parts(w->store_dir, (long)pid); /* its puts cut short */
            if (WIFEXITED(st) && WEXITSTATUS(st) == 5 && !w->io_failed) {
                /* It could not write, and the job may have ended of that before we heard. */
                w->io_failed = 1;
                snprintf(w->failure, sizeof(w->failure),
                         "tm%d could not write under the output directory", h);
            }
        }
        if (!left)
            return;
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

static int net_run(const ck_backend_job *job, ck_backend_result *r, char *err, size_t errlen)
{
    /* A SimGrid platform describes a simulated topology; processes on
     * loopback, each link paced at cluster.link, cannot honour it. */
    if (job->cluster->platform[0]) {
        snprintf(err, errlen,
                 "cluster.platform: the sockets backend cannot honour a SimGrid platform (%s): "
                 "its hosts are processes on this machine, every link paced at cluster.link",
                 job->cluster->platform);
        return CK_EINVAL;
    }
    net_world w;
    memset(&w, 0, sizeof(w));
    w.job = job;
    w.r = r;
    if (ck_netauth_global_init()) {
        snprintf(err, errlen, "cannot initialize libsodium");
        return CK_EINTERNAL;
    }
    /* The cluster secret: the children inherit it with their memory. */
    ck_netauth_secret(w.secret);
    w.ntm = job->ntm;
    w.speed = job->cluster->speed;
    snprintf(w.store_dir, sizeof(w.store_dir), "%s/store", job->outdir);
    snprintf(w.sink_dir, sizeof(w.sink_dir), "%s/sink", job->outdir);
    snprintf(w.local_dir, sizeof(w.local_dir), "%s/local", job->outdir);
    w.bw = (ck_bworld){.io = &net_io, .store_dir = w.store_dir, .local_dir = w.local_dir,
                       .sinks = &w.sinks, .faults = job->faults, .nfaults = job->nfaults,
                       .verbose = job->verbose, .check = job->check_invariants};
    if (ck_storefs_mkdirs(w.store_dir) || ck_storefs_mkdirs(w.sink_dir) ||
        ck_sinkfs_init(&w.sinks, w.sink_dir)) {
        snprintf(err, errlen, "%s: cannot create the store and sink directories: %s", job->outdir,
                 strerror(errno));
        return CK_EIO;
    }
    w.listen_fd = calloc((size_t)w.ntm + 1, sizeof(int));
    w.port = calloc((size_t)w.ntm + 1, sizeof(int));
    w.pids = calloc((size_t)w.ntm, sizeof(pid_t));
    w.stopped = calloc(4 * (size_t)w.ntm, sizeof(int));
    w.slow_pm = w.stopped ? w.stopped + w.ntm : NULL;
    w.frozen = w.stopped ? w.stopped + 2 * w.ntm : NULL;
    w.back_refused = w.stopped ? w.stopped + 3 * w.ntm : NULL;
    w.ctl_w = malloc((size_t)w.ntm * sizeof(int));
    int planned = ck_plan_init(&w.plan, job->faults, r->nfaults, w.ntm, r->faults) == CK_OK;
    if (planned && ck_buggify_init(&w.bug, job->faults, r->nfaults, w.ntm, job->seed)) {
        ck_plan_free(&w.plan);
        ck_buggify_free(&w.bug);
        planned = 0;
    }
    w.bw.bug = planned ? &w.bug : NULL;
    w.ctl_r = -1;
    for (int h = 0; w.ctl_w && h < w.ntm; h++)
        w.ctl_w[h] = -1;
    if (!w.listen_fd || !w.port || !w.pids || !w.stopped || !w.ctl_w || !planned ||
        check_faults(job, err, errlen)) {
        int bad = w.listen_fd && w.port && w.pids && w.stopped && w.ctl_w && planned;
        free(w.listen_fd);
        free(w.port);
        free(w.pids);
        free(w.stopped);
        free(w.ctl_w);
        ck_plan_free(&w.plan);
        ck_buggify_free(&w.bug);
        if (bad)
            return CK_EINVAL;
        snprintf(err, errlen, "out of memory");
        return CK_ENOMEM;
    }
    for (int h = 0; h <= w.ntm; h++) {
        w.listen_fd[h] = listen_on_loopback(&w.port[h]);
        if (w.listen_fd[h] < 0) {
            snprintf(err, errlen, "cannot listen on a loopback port: %s", strerror(errno));
            for (int k = 0; k < h; k++)
                close(w.listen_fd[k]);
            free(w.listen_fd);
            free(w.port);
            free(w.pids);
            free(w.stopped);
            free(w.ctl_w);
            ck_plan_free(&w.plan);
            ck_buggify_free(&w.bug);
        ck_buggify_free(&w.bug);
            return CK_EIO;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    w.mom_r = w.mom_w = -1;
    int moments = 0; /* of task managers' processes, waited for, or hits to count */
    for (int i = 0; i < job->nfaults; i++)
        moments |= (job->faults[i].moment != CK_MOMENT_NONE &&
                    job->faults[i].moment != CK_MOMENT_CHECKPOINT_TRIGGERED &&
                    job->faults[i].moment != CK_MOMENT_CHECKPOINT_COMPLETED) ||
                   ck_fault_in_process(job->faults[i].kind);
    int mom[2];
    if (moments && pipe2(mom, O_CLOEXEC | O_NONBLOCK) == 0) {
        w.mom_r = mom[0];
        w.mom_w = mom[1];
    }
    clock_gettime(CLOCK_MONOTONIC, &w.t0);
    for (int h = 0; h < w.ntm; h++) {
        host_start(&w, h);
        if (w.pids[h] <= 0) {
            snprintf(err, errlen, "fork: %s", strerror(errno));
            for (int k = 0; k < h; k++)
                kill(w.pids[k], SIGKILL);
            for (int k = 0; k < h; k++)
                waitpid(w.pids[k], NULL, 0);
            return CK_EIO;
        }
    }
    /* The task managers' listening sockets stay open here: a host that
     * restarts after a crash listens on its port again. */
    int rc = world_setup(&w, w.ntm);
    if (rc == CK_OK) {
        /* Generous: the workload's length twice over, plus a minute, plus the timeline. */
        ck_time limit = 2 * job->input_duration + 60 * CK_NS_PER_S;
        for (int i = 0; i < r->nfaults; i++)
            limit += r->faults[i].spec->at + r->faults[i].spec->duration;
        if (r->nfaults)
            limit += 2 * ck_cfg(job->env.cfg, CK_CFG_HB_TIMEOUT);
        loop(&w, limit);
        r->time_limit_s = (double)limit / 1e9;
    }
    r->wall_s = (double)world_now(&w) / 1e9;
    stop_children(&w);
    for (int h = 0; h <= w.ntm; h++)
        close(w.listen_fd[h]);
    /* The hosts' local disks do not outlive the run (the processes were
     * stopped with their state backends open). */
    ck_storefs_rmtree(w.local_dir);
    if (rc == CK_OK && r->jm_ready && r->jm.state != CK_JOB_FINISHED &&
        r->jm.state != CK_JOB_FAILED) {
        r->jm.end = world_now(&w);
        if (w.timed_out && !w.failed) {
            r->unfinished = "TIME_LIMIT";
            snprintf(r->jm.failure, sizeof(r->jm.failure),
                     "time limit %.6g s reached with the job %s", r->time_limit_s,
                     ck_job_state_name(r->jm.state));
        } else {
            r->jm.state = CK_JOB_FAILED;
            r->jm.failed_because = CK_JOBFAIL_STALLED;
            snprintf(r->jm.failure, sizeof(r->jm.failure), "%s",
                     w.failed ? w.failure : "the job did not finish");
        }
    }
    explicit_bzero(w.secret, sizeof(w.secret));
    if (w.refused || w.dropped || w.cut_off)
        fprintf(stderr,
                "chandy: job manager's process: %llu connections refused, %llu frames dropped, "
                "%llu connections cut off\n",
                (unsigned long long)w.refused, (unsigned long long)w.dropped,
                (unsigned long long)w.cut_off);
    if (w.io_failed) /* run.json's "error": the run could not record what it did */
        snprintf(r->error, sizeof(r->error), "%s: %s", job->outdir, w.failure);
    /* What the sinks committed, read back: a run that cannot read it could
     * not record its output. */
    int lrc = ck_sinkfs_load(w.sink_dir, &r->out);
    if (lrc && !r->error[0])
        snprintf(r->error, sizeof(r->error), "%s: cannot read the sinks' output: %s", w.sink_dir,
                 ck_strerror(lrc));
    ck_backend_output_faults(r, job->env.g, w.sink_dir);
    world_free(&w);
    free(w.listen_fd);
    free(w.port);
    free(w.pids);
    free(w.stopped);
    for (int h = 0; h < w.ntm; h++)
        if (w.ctl_w[h] >= 0)
            close(w.ctl_w[h]);
    free(w.ctl_w);
    if (w.mom_r >= 0) {
        close(w.mom_r);
        close(w.mom_w);
    }
    for (int i = 0; w.bug.hits && i < r->nfaults; i++)
        r->faults[i].hits = w.bug.hits[i];
    ck_plan_free(&w.plan);
    ck_buggify_free(&w.bug);
    if (rc) {
        snprintf(err, errlen, "setting up the job manager: %s", ck_strerror(rc));
        return rc;
    }
    return CK_OK;
}

const ck_backend_ops ck_backend_sockets = {"sockets", net_run};
