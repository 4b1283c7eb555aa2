/*
 * fakeplat.h - a platform for unit tests: time is set by hand, sent
 * messages pile up in a list the test reads, CPU charges add up, sink
 * output goes to a byte array. Nothing happens unless the test says so
 * (the nghttp2 scripted-callback style).
 *
 * With store_on, the store is a list of objects in memory: puts and gets
 * and background work complete through a list of completions the test
 * hands to the node (fake_deliver), and the test can make operations
 * fail (put_fail, get_fail: the status their completion carries) or an
 * allocation point fail (fail_point, platform.h's fault).
 */
#ifndef CK_FAKEPLAT_H
#define CK_FAKEPLAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator.h"
#include "element.h"
#include "node.h"
#include "platform.h"

typedef struct fake_msg {
    struct fake_msg *next;
    uint32_t src, dst;
    uint8_t *data;
    size_t len;
} fake_msg;

/* An object of the in-memory store, and a completion waiting for the test. */
typedef struct fake_obj {
    struct fake_obj *next;
    char *key;
    uint8_t *data;
    size_t len;
} fake_obj;

typedef struct fake_done {
    struct fake_done *next;
    uint64_t token;
    int status;
    uint8_t *data;
    size_t len;
} fake_done;

typedef struct fake_world {
    ck_time now;
    fake_msg *head, *tail;
    size_t nmsgs;
    double flops;
    uint8_t *out;
    size_t out_len;
    int logs;
    int routes_set, deploys, undeploys; /* set_routes, deploy and undeploy calls */
    uint32_t undeployed[2];             /* the last undeploy's attempt and subtask */
    uint64_t deployed_from;             /* the last deploy's checkpoint (0: fresh), */
    uint32_t deployed_handles;          /* the handles it was given, */
    char deployed_key[64];              /* and the first one's key; */
    ck_restore_take deployed_take;      /* its first take (another parallelism's), */
    ck_restore_chunk deployed_chunk;    /* its first chunk, */
    uint32_t deployed_nchunks;          /* and how many */
    int mail;                           /* what mail_waiting says */
    int deploy_fail;                    /* deploy of subtask deploy_fail - 1 fails (0: none) */
    /* the in-memory store (store_on), its completions, and faults */
    int store_on;
    fake_obj *objs;
    fake_done *done, *done_tail;
    int put_fail, get_fail;             /* status of the puts' and gets' completions (0: ok) */
    int puts, gets;                     /* operations asked */
    int fail_point;                     /* CK_POINT_* whose allocations fail (0: none) */
    int point_hits;                     /* allocations made to fail */
    uint64_t background[8];             /* the tokens of background work asked for, */
    int nbackground;                    /* in order (the test completes them) */
    uint64_t bg_token;                  /* the last background work's token, */
    int bgs;                            /* and how many were asked for */
    /* sink transactions committed and aborted: (sink, txn), in order */
    uint64_t commits[32][2], aborts[32][2];
    int ncommits, naborts;
} fake_world;

typedef struct fake_plat {
    ck_platform plat;
    fake_world *w;
} fake_plat;

/* Encodes element e into dst, as the tests hand tasks their input. Out of
 * line: GCC under ASan does not see which kind e is, and would flag the
 * record branch against a barrier's small buffer. */
static __attribute__((noinline, unused)) void fake_encode_elem(uint8_t *dst, const ck_elem *e)
{
    ck_elem_encode(dst, e);
}

static ck_time fake_now(ck_platform *p)
{
    return ((fake_plat *)p)->w->now;
}

static int fake_send(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len)
{
    fake_world *w = ((fake_plat *)p)->w;
    fake_msg *m = calloc(1, sizeof(*m));
    m->src = p->endpoint;
    m->dst = dst;
    m->data = msg;
    m->len = len;
    if (w->tail)
        w->tail->next = m;
    else
        w->head = m;
    w->tail = m;
    w->nmsgs++;
    return 0;
}

static void fake_cpu(ck_platform *p, double flops)
{
    ((fake_plat *)p)->w->flops += flops;
}

static void fake_complete(fake_world *w, uint64_t token, int status, uint8_t *data, size_t len)
{
    fake_done *c = calloc(1, sizeof(*c));
    *c = (fake_done){.token = token, .status = status, .data = data, .len = len};
    if (w->done_tail)
        w->done_tail->next = c;
    else
        w->done = c;
    w->done_tail = c;
}

static fake_obj *fake_find(fake_world *w, const char *key)
{
    for (fake_obj *o = w->objs; o; o = o->next)
        if (!strcmp(o->key, key))
            return o;
    return NULL;
}

/* Puts an object in the in-memory store (data taken). */
static inline void fake_store_set(fake_world *w, const char *key, uint8_t *data, size_t len)
{
    fake_obj *o = fake_find(w, key);
    if (!o) {
        o = calloc(1, sizeof(*o));
        o->key = strdup(key);
        o->next = w->objs;
        w->objs = o;
    }
    free(o->data);
    o->data = data;
    o->len = len;
}

static int fake_store_put(ck_platform *p, const char *k, uint8_t *d, size_t n, uint64_t t)
{
    fake_world *w = ((fake_plat *)p)->w;
    if (!w->store_on) {
        free(d);
        return CK_EINVAL;
    }
    w->puts++;
    if (w->put_fail) {
        free(d);
        fake_complete(w, t, w->put_fail, NULL, 0);
        return 0;
    }
    fake_store_set(w, k, d, n);
    fake_complete(w, t, 0, NULL, 0);
    return 0;
}

static int fake_store_get(ck_platform *p, const char *k, uint64_t t)
{
    fake_world *w = ((fake_plat *)p)->w;
    if (!w->store_on)
        return CK_EINVAL;
    w->gets++;
    fake_obj *o = fake_find(w, k);
    if (w->get_fail || !o) {
        fake_complete(w, t, w->get_fail ? w->get_fail : CK_ENOTFOUND, NULL, 0);
        return 0;
    }
    uint8_t *d = malloc(o->len ? o->len : 1);
    memcpy(d, o->data, o->len);
    fake_complete(w, t, 0, d, o->len);
    return 0;
}

static int fake_fault(ck_platform *p, int point)
{
    fake_world *w = ((fake_plat *)p)->w;
    if (w->fail_point != point)
        return 0;
    w->point_hits++;
    return 1;
}

static int fake_store_list(ck_platform *p, const char *pre, ck_store_entry **o, size_t *n)
{
    (void)p, (void)pre;
    *o = NULL;
    *n = 0;
    return 0;
}

static int fake_store_delete(ck_platform *p, const char *k)
{
    fake_world *w = ((fake_plat *)p)->w;
    for (fake_obj **pp = &w->objs; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->key, k)) {
            fake_obj *o = *pp;
            *pp = o->next;
            free(o->key);
            free(o->data);
            free(o);
            return 0;
        }
    return CK_ENOTFOUND;
}

static int fake_output(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *d, size_t n)
{
    (void)sink, (void)txn;
    fake_world *w = ((fake_plat *)p)->w;
    w->out = realloc(w->out, w->out_len + n);
    memcpy(w->out + w->out_len, d, n);
    w->out_len += n;
    return 0;
}

static int fake_commit(ck_platform *p, uint32_t sink, uint64_t txn)
{
    fake_world *w = ((fake_plat *)p)->w;
    if (w->ncommits < 32) {
        w->commits[w->ncommits][0] = sink;
        w->commits[w->ncommits++][1] = txn;
    }
    return 0;
}

static int fake_abort(ck_platform *p, uint32_t sink, uint64_t txn)
{
    fake_world *w = ((fake_plat *)p)->w;
    if (w->naborts < 32) {
        w->aborts[w->naborts][0] = sink;
        w->aborts[w->naborts++][1] = txn;
    }
    return 0;
}

static void fake_background(ck_platform *p, ck_time since, double flops, uint64_t disk_bytes,
                            uint64_t token)
{
    (void)since, (void)disk_bytes;
    fake_world *w = ((fake_plat *)p)->w;
    w->flops += flops;
    if (w->nbackground < 8)
        w->background[w->nbackground++] = token;
    w->bg_token = token;
    w->bgs++;
    if (w->store_on)
        fake_complete(w, token, 0, NULL, 0);
}

static void fake_log(ck_platform *p, int level, const char *line)
{
    ((fake_plat *)p)->w->logs++;
    if (getenv("CK_TEST_VERBOSE"))
        fprintf(stderr, "log %d: %s\n", level, line);
}

static void fake_set_routes(ck_platform *p, uint32_t attempt, int gen, uint32_t n,
                            const uint16_t *hosts)
{
    (void)attempt, (void)gen, (void)n, (void)hosts;
    ((fake_plat *)p)->w->routes_set++;
}

static int fake_deploy(ck_platform *p, uint32_t attempt, uint32_t global,
                       const struct ck_restore_point *from)
{
    (void)attempt, (void)global;
    fake_world *w = ((fake_plat *)p)->w;
    w->deploys++;
    if (w->deploy_fail && global == (uint32_t)w->deploy_fail - 1)
        return CK_ENOMEM;
    w->deployed_from = from ? from->id : 0;
    w->deployed_handles = from && from->handles ? from->handles->n : 0;
    snprintf(w->deployed_key, sizeof(w->deployed_key), "%s",
             w->deployed_handles ? from->handles->v[0].key : "");
    w->deployed_take = from && from->takes ? from->takes[0] : (ck_restore_take){0};
    w->deployed_chunk = from && from->nchunks ? from->chunks[0] : (ck_restore_chunk){0};
    w->deployed_nchunks = from ? from->nchunks : 0;
    return 0;
}

static void fake_undeploy(ck_platform *p, uint32_t attempt, uint32_t global)
{
    fake_world *w = ((fake_plat *)p)->w;
    w->undeploys++;
    w->undeployed[0] = attempt;
    w->undeployed[1] = global;
}

static void fake_wait(ck_platform *p, ck_time ns)
{
    ((fake_plat *)p)->w->now += ns;
}

static int fake_mail_waiting(ck_platform *p)
{
    return ((fake_plat *)p)->w->mail;
}

static const ck_platform_ops fake_ops = {
    .now = fake_now,
    .send = fake_send,
    .cpu = fake_cpu,
    .background = fake_background,
    .store_put = fake_store_put,
    .store_get = fake_store_get,
    .store_list = fake_store_list,
    .store_delete = fake_store_delete,
    .output = fake_output,
    .output_commit = fake_commit,
    .output_abort = fake_abort,
    .set_routes = fake_set_routes,
    .deploy = fake_deploy,
    .undeploy = fake_undeploy,
    .wait = fake_wait,
    .log = fake_log,
    .mail_waiting = fake_mail_waiting,
    .fault = fake_fault,
};

static inline void fake_init(fake_plat *fp, fake_world *w, uint32_t endpoint)
{
    fp->plat.ops = &fake_ops;
    fp->plat.endpoint = endpoint;
    fp->plat.host = 0;
    fp->plat.netpool = NULL; /* each subtask its own network buffers */
    fp->w = w;
}

/* Takes the oldest message (the caller owns it and its data), or NULL. */
static inline fake_msg *fake_pop(fake_world *w)
{
    fake_msg *m = w->head;
    if (m) {
        w->head = m->next;
        if (!w->head)
            w->tail = NULL;
        w->nmsgs--;
    }
    return m;
}

/* Hands the node the completions waiting (those its handling adds too),
 * then lets it work; returns how many it was handed. */
static inline int fake_deliver(fake_world *w, ck_node node)
{
    int n = 0;
    while (w->done) {
        fake_done *c = w->done;
        w->done = c->next;
        if (!w->done)
            w->done_tail = NULL;
        node.ops->on_complete(node.self, c->token, c->status, c->data, c->len);
        free(c);
        n++;
        while (node.ops->work(node.self) > 0)
            ;
    }
    return n;
}

/* Drops the completions waiting, as a node that went away would. */
static inline void fake_drop_done(fake_world *w)
{
    while (w->done) {
        fake_done *c = w->done;
        w->done = c->next;
        free(c->data);
        free(c);
    }
    w->done_tail = NULL;
}

static inline void fake_clear(fake_world *w)
{
    fake_msg *m;
    while ((m = fake_pop(w))) {
        free(m->data);
        free(m);
    }
    free(w->out);
    w->out = NULL;
    w->out_len = 0;
    fake_drop_done(w);
    while (w->objs) {
        fake_obj *o = w->objs;
        w->objs = o->next;
        free(o->key);
        free(o->data);
        free(o);
    }
}

#endif
