#include "storepool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "error.h"
#include "storefs.h"

/* A worker's scratch buffer (CK_STOREPOOL_SCRATCH): large puts are copied
 * through it. The worker makes it and writes it through when it starts,
 * so that its pages are the process's before the first put without the
 * process's own thread waiting for them (16 MiB of first touches: a task
 * manager's start, and with it every run over sockets, took about 6 ms
 * longer when ck_storepool_new made them), and keeps it: memory freed and
 * taken again may cost a page fault per page (storefs.h). Direct writes
 * of 4 MiB ran 10 to 15 % faster than of 1 MiB on the machine that
 * measured it; only a task manager's process keeps them
 * (ck_storepool_new's `direct`). */

enum { QUEUED, SERVING, SERVED };

typedef struct req {
    struct req *next;
    int state; /* QUEUED, SERVING, SERVED (under mu) */
    ck_storefs_src *src; /* a put of local files: their paths (owned) */
    uint32_t nsrc;
    uint64_t want; /* a get's bytes from d.at (CK_STOREFS_WHOLE: to the end) */
    ck_storepool_done d;
} req;

struct ck_storepool {
    char *root;
    int nthreads;
    pthread_t th[CK_STOREPOOL_THREADS];
    uint8_t *scratch[CK_STOREPOOL_THREADS]; /* each worker's, for direct I/O */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu: */
    req *q, *qtail; /* every request not reaped, in the order asked */
    size_t pending; /* their number */
    int stop;
    uint64_t commits; /* puts and groups of puts served */
    /* holds a byte exactly while a request may be reaped (written under
     * mu), and ready says so (set before the byte is written, so
     * that whoever sees the byte sees it; ck_storepool_ready) */
    int pipe[2];
    atomic_int ready;
};

static void req_free(req *r)
{
    for (uint32_t i = 0; i < r->nsrc; i++)
        free((char *)r->src[i].path);
    free(r->src);
    free(r->d.data);
    free(r);
}

static void free_list(req *r)
{
    while (r) {
        req *next = r->next;
        req_free(r);
        r = next;
    }
}

/* Serves get r. */
static void serve_get(ck_storepool *p, req *r)
{
    r->d.status = ck_storefs_get_range(p->root, r->d.key, r->d.at, r->want, &r->d.data,
                                       &r->d.len);
    r->d.err = r->d.status == CK_EIO ? errno : 0;
    r->d.len = r->d.status ? 0 : r->d.len;
}

/* Serves puts g[0..n) on the worker of slot `slot` as one group commit
 * (ck_storefs_put_many): each written (a large one through the worker's
 * scratch buffer, with direct I/O), synced and renamed into place, then
 * each directory they went to synced once. */
static void serve_puts(ck_storepool *p, int slot, req **g, int n)
{
    ck_storefs_item it[CK_STOREPOOL_GROUP];
    for (int i = 0; i < n; i++)
        it[i] = (ck_storefs_item){.key = g[i]->d.key, .at = g[i]->d.at,
                                  .data = g[i]->d.data, .len = g[i]->d.len,
                                  .src = g[i]->src, .nsrc = g[i]->nsrc,
                                  .scratch = p->scratch[slot],
                                  .scratch_len = CK_STOREPOOL_SCRATCH};
    ck_storefs_put_many(p->root, it, (size_t)n, 1);
    for (int i = 0; i < n; i++) {
        g[i]->d.status = it[i].status;
        g[i]->d.err = it[i].err;
        free(g[i]->d.data);
        g[i]->d.data = NULL;
        g[i]->d.len = it[i].status ? 0 : it[i].len;
        if (g[i]->nsrc && !it[i].status) { /* what was read of each file */
            uint8_t *res = malloc((size_t)g[i]->nsrc * CK_STOREPOOL_FILE_RESULT);
            for (uint32_t k = 0; res && k < g[i]->nsrc; k++) {
                ck_put_u64(res + k * CK_STOREPOOL_FILE_RESULT, it[i].src[k].len);
                ck_put_u32(res + k * CK_STOREPOOL_FILE_RESULT + 8, it[i].src[k].crc);
            }
            if (!res)
                g[i]->d.status = CK_ENOMEM;
            g[i]->d.data = res;
            g[i]->d.len = res ? (size_t)g[i]->nsrc * CK_STOREPOOL_FILE_RESULT : 0;
        }
    }
}

/* Under mu: the oldest queued request whose key no earlier request that
 * is not served yet holds (per key, the order asked), or NULL; with
 * `small` above 0, the oldest such put of at most that many bytes. */
static req *take(ck_storepool *p, size_t small)
{
    for (req *r = p->q; r; r = r->next) {
        if (r->state != QUEUED || (small && (r->d.get || r->d.len > small)))
            continue;
        int busy = 0;
        for (const req *k = p->q; k != r && !busy; k = k->next)
            busy = k->state != SERVED && !strcmp(k->d.key, r->d.key);
        if (!busy)
            return r;
    }
    return NULL;
}

/* Under mu: whether r may be reaped: it is served, and no request of its
 * owner (ctx) asked before it is still in the list. */
static int reapable(const ck_storepool *p, const req *r)
{
    if (r->state != SERVED)
        return 0;
    for (const req *k = p->q; k != r; k = k->next)
        if (k->d.ctx == r->d.ctx)
            return 0;
    return 1;
}

/* Under mu: the pipe holds a byte while a request may be reaped. */
static void signal_ready(ck_storepool *p)
{
    int ready = 0;
    for (const req *r = p->q; r && !ready; r = r->next)
        ready = reapable(p, r);
    int was = atomic_exchange_explicit(&p->ready, ready, memory_order_acq_rel);
    if (ready && !was) {
        char b = 1;
        while (write(p->pipe[1], &b, 1) < 0 && errno == EINTR)
            ;
    } else if (!ready && was) {
        char b[64];
        while (read(p->pipe[0], b, sizeof(b)) > 0)
            ;
    }
}

typedef struct worker_arg {
    ck_storepool *p;
    int slot;
    int direct;
} worker_arg;

static void *worker(void *arg)
{
    ck_storepool *p = ((worker_arg *)arg)->p;
    int slot = ((worker_arg *)arg)->slot;
    if (((worker_arg *)arg)->direct) /* NULL: this worker's puts are buffered */
        p->scratch[slot] = ck_storefs_scratch_new(CK_STOREPOOL_SCRATCH, 1);
    free(arg);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        req *g[CK_STOREPOOL_GROUP];
        int n = 0;
        while (!p->stop && !(g[0] = take(p, 0)))
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        g[n++]->state = SERVING; /* stays in the list: reaping takes only SERVED ones */
        /* A small put takes the small puts queued after it along: one
         * sync of the file system commits them all (a checkpoint's
         * small files, asked together), where one worker each would
         * queue their syncs behind one another. */
        size_t left = g[0]->d.get || g[0]->d.len > CK_STOREPOOL_GROUP_BYTES
                          ? 0
                          : CK_STOREPOOL_GROUP_BYTES - g[0]->d.len;
        while (n < CK_STOREPOOL_GROUP && left > 0 && (g[n] = take(p, left))) {
            left -= g[n]->d.len;
            g[n++]->state = SERVING;
        }
        pthread_mutex_unlock(&p->mu);
        if (g[0]->d.get)
            serve_get(p, g[0]);
        else
            serve_puts(p, slot, g, n);
        pthread_mutex_lock(&p->mu);
        for (int i = 0; i < n; i++)
            g[i]->state = SERVED;
        p->commits += !g[0]->d.get;
        signal_ready(p);
        pthread_cond_broadcast(&p->cv); /* a request of this key may wait for it */
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Ends the first n workers (stop set under mu). */
static void join_workers(ck_storepool *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
        pthread_join(p->th[i], NULL);
}

ck_storepool *ck_storepool_new(const char *root, int nthreads, int direct)
{
    if (nthreads < 1 || nthreads > CK_STOREPOOL_THREADS) {
        errno = EINVAL;
        return NULL;
    }
    ck_storepool *p = calloc(1, sizeof(*p));
    if (!p || !(p->root = strdup(root))) {
        free(p);
        return NULL;
    }
    if (pipe2(p->pipe, O_CLOEXEC | O_NONBLOCK)) {
        free(p->root);
        free(p);
        return NULL;
    }
    p->nthreads = nthreads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    /* Signals are the process's main thread's to take (stop, continue,
     * terminate): the workers block them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0, started = 0;
    for (; started < nthreads && !rc; started++) {
        worker_arg *a = malloc(sizeof(*a));
        if (!a) {
            rc = ENOMEM;
            break;
        }
        *a = (worker_arg){p, started, direct};
        if ((rc = pthread_create(&p->th[started], NULL, worker, a))) {
            free(a);
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        join_workers(p, started);
        for (int i = 0; i < nthreads; i++)
            free(p->scratch[i]);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        close(p->pipe[0]);
        close(p->pipe[1]);
        free(p->root);
        free(p);
        errno = rc;
        return NULL;
    }
    return p;
}

int ck_storepool_fd(const ck_storepool *p)
{
    return p->pipe[0];
}

static int enqueue(ck_storepool *p, int get, const char *key, uint64_t at, uint8_t *data,
                   size_t len, const char *const *src, uint32_t nsrc, void *ctx,
                   uint64_t token, int64_t stamp)
{
    if (!ck_storefs_key_ok(key)) {
        free(data);
        return CK_EINVAL;
    }
    req *r = calloc(1, sizeof(*r));
    if (!r) {
        free(data);
        return CK_ENOMEM;
    }
    if (nsrc) {
        r->src = calloc(nsrc, sizeof(*r->src));
        for (uint32_t i = 0; r->src && i < nsrc; i++, r->nsrc++)
            if (!(r->src[i].path = strdup(src[i])))
                break;
        if (!r->src || r->nsrc < nsrc) {
            req_free(r);
            free(data);
            return CK_ENOMEM;
        }
    }
    r->state = QUEUED;
    r->want = get ? len : 0;
    r->d = (ck_storepool_done){.ctx = ctx, .token = token, .get = get, .file = nsrc > 0,
                               .data = data, .len = get ? 0 : len,
                               .stamp = stamp, .at = at};
    snprintf(r->d.key, sizeof(r->d.key), "%s", key);
    pthread_mutex_lock(&p->mu);
    if (p->qtail)
        p->qtail->next = r;
    else
        p->q = r;
    p->qtail = r;
    p->pending++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return CK_OK;
}

int ck_storepool_put(ck_storepool *p, const char *key, uint8_t *data, size_t len, void *ctx,
                     uint64_t token, int64_t stamp)
{
    return enqueue(p, 0, key, 0, data, len, NULL, 0, ctx, token, stamp);
}

int ck_storepool_append(ck_storepool *p, const char *key, uint64_t at, uint8_t *data,
                        size_t len, void *ctx, uint64_t token, int64_t stamp)
{
    if (!at) {
        free(data);
        return CK_EINVAL;
    }
    return enqueue(p, 0, key, at, data, len, NULL, 0, ctx, token, stamp);
}

int ck_storepool_append_files(ck_storepool *p, const char *key, uint64_t at,
                              const char *const *paths, uint32_t n, size_t len, void *ctx,
                              uint64_t token, int64_t stamp)
{
    if (n == 0 || !at)
        return CK_EINVAL;
    return enqueue(p, 0, key, at, NULL, len, paths, n, ctx, token, stamp);
}

int ck_storepool_put_files(ck_storepool *p, const char *key, const char *const *paths,
                           uint32_t n, size_t len, void *ctx, uint64_t token, int64_t stamp)
{
    if (n == 0)
        return CK_EINVAL;
    return enqueue(p, 0, key, 0, NULL, len, paths, n, ctx, token, stamp);
}

int ck_storepool_get(ck_storepool *p, const char *key, void *ctx, uint64_t token)
{
    return ck_storepool_get_range(p, key, 0, CK_STOREFS_WHOLE, ctx, token);
}

int ck_storepool_get_range(ck_storepool *p, const char *key, uint64_t at, uint64_t len,
                           void *ctx, uint64_t token)
{
    return enqueue(p, 1, key, at, NULL, len, NULL, 0, ctx, token, 0);
}

size_t ck_storepool_reap(ck_storepool *p, ck_storepool_done *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    req *prev = NULL;
    for (req *r = p->q, *next; r && n < max; r = next) {
        next = r->next;
        if (!reapable(p, r)) {
            prev = r;
            continue;
        }
        if (prev)
            prev->next = next;
        else
            p->q = next;
        if (p->qtail == r)
            p->qtail = prev;
        out[n++] = r->d;
        r->d.data = NULL; /* the reaper's now */
        req_free(r);
    }
    p->pending -= n;
    signal_ready(p);
    pthread_mutex_unlock(&p->mu);
    return n;
}

int ck_storepool_ready(const ck_storepool *p)
{
    return atomic_load_explicit(&p->ready, memory_order_acquire);
}

uint64_t ck_storepool_commits(ck_storepool *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t n = p->commits;
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t ck_storepool_pending(const ck_storepool *p)
{
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    size_t n = p->pending;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    return n;
}

void ck_storepool_free(ck_storepool *p)
{
    if (!p)
        return;
    join_workers(p, p->nthreads);
    for (int i = 0; i < p->nthreads; i++)
        free(p->scratch[i]);
    free_list(p->q);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    close(p->pipe[0]);
    close(p->pipe[1]);
    free(p->root);
    free(p);
}

void ck_storepool_forsake(ck_storepool *p)
{
    /* Only the descriptors: the child's copy of the lists may have been
     * half-changed by the worker at the fork, and the child ends with
     * _exit anyway. */
    if (p) {
        close(p->pipe[0]);
        close(p->pipe[1]);
    }
}
