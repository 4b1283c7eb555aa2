#include "drive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

int ck_cores_init(ck_cores *c, int n, double speed)
{
    c->n = n > 0 ? n : 1;
    c->speed = speed > 0 ? speed : 1;
    c->free = calloc((size_t)c->n, sizeof(*c->free));
    return c->free ? CK_OK : CK_ENOMEM;
}

void ck_cores_free(ck_cores *c)
{
    free(c->free);
    c->free = NULL;
    c->n = 0;
}

ck_time ck_cores_run(ck_cores *c, ck_time start, double flops, double factor)
{
    int k = 0;
    for (int i = 1; i < c->n; i++)
        if (c->free[i] < c->free[k])
            k = i;
    if (c->free[k] > start)
        start = c->free[k];
    if (factor <= 0)
        factor = 1;
    ck_time end = start + (ck_time)(flops / (c->speed * factor) * 1e9);
    c->free[k] = end;
    return end;
}

void ck_drive_cpu(ck_dnode *n, ck_cores *c, ck_time now, double flops, double factor)
{
    if (flops <= 0)
        return;
    n->busy_until = ck_cores_run(c, ck_drive_now(n, now), flops, factor);
}

void ck_drive_wait(ck_dnode *n, ck_time now, ck_time ns)
{
    if (ns > 0)
        n->busy_until = ck_drive_now(n, now) + ns;
}

int ck_drive_hold(ck_dnode *n, uint32_t dst, uint8_t *msg, size_t len)
{
    ck_dmsg *m = malloc(sizeof(*m));
    if (!m) {
        free(msg);
        return CK_ENOMEM;
    }
    *m = (ck_dmsg){.kind = CK_DMSG_SEND, .token = dst, .data = msg, .len = len};
    CK_QUEUE_APPEND(n->obox, n->obox_tail, m);
    return CK_OK;
}

void ck_drive_release(ck_dnode *n, ck_drive_send_fn send, void *ctx)
{
    ck_dmsg *m;
    while ((m = n->obox)) {
        n->obox = m->next;
        if (!n->obox)
            n->obox_tail = NULL;
        if (n->dead)
            free(m->data); /* cancelled mid-work: it never sent them */
        else
            send(ctx, n, (uint32_t)m->token, m->data, m->len);
        free(m);
    }
}

void ck_drive_push(ck_dnode *n, ck_dmsg *m)
{
    if (n->dead) {
        free(m->data);
        free(m);
        return;
    }
    /* A completion goes ahead of the messages waiting: it is the end of
     * work another thread did (an upload, a download, a snapshot's
     * background part), which in Flink reports without queueing behind
     * the task's input. Completions and notices keep their own order. */
    ck_dmsg **at = &n->head;
    while (m->kind == CK_DMSG_COMPLETE && *at && (*at)->kind != CK_DMSG_MESSAGE)
        at = &(*at)->next;
    if (m->kind != CK_DMSG_COMPLETE || !*at) {
        CK_QUEUE_APPEND(n->head, n->tail, m);
        return;
    }
    m->next = *at;
    *at = m;
}

int ck_drive_post(ck_dnode *n, int kind, uint64_t token, int status, uint8_t *data, size_t len)
{
    ck_dmsg *m = malloc(sizeof(*m));
    if (!m) {
        free(data);
        return CK_ENOMEM;
    }
    *m = (ck_dmsg){.kind = kind, .token = token, .status = status, .data = data, .len = len,
                   .to = n};
    ck_drive_push(n, m);
    return CK_OK;
}

static ck_dmsg *pop(ck_dnode *n)
{
    ck_dmsg *m = n->head;
    if (m) {
        n->head = m->next;
        if (!n->head)
            n->tail = NULL;
    }
    return m;
}

void ck_drive_clear(ck_dnode *n)
{
    ck_dmsg *m;
    while ((m = pop(n))) {
        free(m->data);
        free(m);
    }
    while ((m = n->obox)) {
        n->obox = m->next;
        free(m->data);
        free(m);
    }
    n->obox_tail = NULL;
}

/* A dead or finished node: -1 once nothing of it is left to send. */
static int ended(ck_dnode *n, ck_time now)
{
    if (!n->dead && (n->busy_until > now || n->obox))
        return 0;
    ck_dmsg *m;
    while ((m = pop(n))) {
        free(m->data);
        free(m);
    }
    return -1;
}

static int step(ck_dnode *n, ck_time now);

int ck_drive_step(ck_dnode *n, ck_time now)
{
    if (!n->check)
        return step(n, now);
    ck_time busy = n->busy_until;
    int r = step(n, now);
    /* A step that did something (not one that waited on a busy spell)
     * of a node still alive (a dead one's state is torn down). */
    if (n->node.ops && !n->dead && (r != 0 || n->busy_until != busy || busy <= now)) {
        ck_inv v;
        if (ck_drive_check(n, now, &v))
            ck_drive_violated(n->name, now, &v);
    }
    return r;
}

static int step(ck_dnode *n, ck_time now)
{
    const ck_node_ops *ops = n->node.ops;
    void *self = n->node.self;
    /* A node that finished still sends what its last work produced, at
     * the end of that work (the caller releases the outbox first). */
    if (!ops)
        return -1;
    if (n->dead || ops->finished(self))
        return ended(n, now);
    if (n->busy_until > now)
        return 0;
    n->again = 0;
    if (ops->deadline(self) <= now)
        ops->on_deadline(self);
    ck_dmsg *m;
    while (!n->dead && n->busy_until <= now && (m = pop(n))) {
        if (m->kind == CK_DMSG_MESSAGE)
            ops->on_message(self, m->data, m->len);
        else if (m->kind == CK_DMSG_PEER_LOST) {
            ops->on_peer_lost(self, (int)m->token);
            free(m->data);
        } else {
            ops->on_complete(self, m->token, m->status, m->data, m->len);
        }
        free(m);
    }
    if (n->dead || ops->finished(self))
        return ended(n, now);
    if (n->busy_until > now) {
        n->again = 1; /* what is left waits for the busy spell's end */
        return 0;
    }
    int more = ops->work(self);
    if (n->dead || ops->finished(self))
        return ended(n, now);
    n->again = more > 0 || n->busy_until > now;
    return more > 0 && n->busy_until <= now ? 1 : 0;
}

int ck_drive_wants(const ck_dnode *n, ck_time now)
{
    if (!n->node.ops || n->busy_until > now)
        return 0;
    return n->dead || n->again || n->head || n->obox || n->due <= now;
}

static ck_time next_of(const ck_dnode *n, ck_time now)
{
    const ck_node_ops *ops = n->node.ops;
    if (n->dead || !ops)
        return CK_TIME_NEVER;
    if (n->busy_until > now)
        return n->busy_until;
    if (ops->finished(n->node.self))
        return n->obox ? now : CK_TIME_NEVER;
    if (n->head || n->again)
        return now;
    return ops->deadline(n->node.self);
}

ck_time ck_drive_next(ck_dnode *n, ck_time now)
{
    return n->due = next_of(n, now);
}

void ck_dlater_add(ck_dlater *l, ck_dmsg *m, ck_time due)
{
    m->due = due;
    ck_dmsg **pp = &l->head;
    while (*pp && (*pp)->due <= due)
        pp = &(*pp)->next;
    m->next = *pp;
    *pp = m;
}

ck_time ck_dlater_run(ck_dlater *l, ck_time now)
{
    while (l->head && l->head->due <= now) {
        ck_dmsg *m = l->head;
        l->head = m->next;
        ck_drive_push(m->to, m);
    }
    return l->head ? l->head->due : CK_TIME_NEVER;
}

void ck_dlater_clear(ck_dlater *l)
{
    while (l->head) {
        ck_dmsg *m = l->head;
        l->head = m->next;
        free(m->data);
        free(m);
    }
}

/* ---- invariants (drive.h) ------------------------------------------------------------ */

#define CK_INV_MODULE "drive"

int ck_drive_check(const ck_dnode *n, ck_time now, ck_inv *v)
{
    CK_INV(v, 2, !n->obox || n->busy_until > now,
           "holds messages to send, busy until %lld ns at %lld ns", (long long)n->busy_until,
           (long long)now);
    const ck_dmsg *last = NULL;
    for (const ck_dmsg *m = n->head; m; m = m->next) {
        CK_INV(v, 3, m->kind == CK_DMSG_MESSAGE || m->kind == CK_DMSG_COMPLETE ||
                         m->kind == CK_DMSG_PEER_LOST,
               "an inbox entry of kind %d", m->kind);
        last = m;
    }
    CK_INV(v, 3, last == n->tail, "the inbox's tail is not its last entry");
    last = NULL;
    for (const ck_dmsg *m = n->obox; m; m = m->next) {
        CK_INV(v, 3, m->kind == CK_DMSG_SEND, "an outbox entry of kind %d", m->kind);
        last = m;
    }
    CK_INV(v, 3, last == n->obox_tail, "the outbox's tail is not its last entry");
    const ck_node_ops *ops = n->node.ops;
    return ops && ops->check ? ops->check(n->node.self, v) : 0;
}

int ck_cores_check(const ck_cores *c, ck_inv *v)
{
    for (int i = 0; i < c->n; i++)
        CK_INV(v, 4, c->free[i] >= 0, "core %d free from %lld ns", i, (long long)c->free[i]);
    return 0;
}

int ck_dlater_check(const ck_dlater *l, ck_inv *v)
{
    for (const ck_dmsg *m = l->head; m && m->next; m = m->next)
        CK_INV(v, 5, m->due <= m->next->due, "a completion due at %lld ns before one at %lld ns",
               (long long)m->next->due, (long long)m->due);
    return 0;
}

void ck_drive_violated(const char *where, ck_time now, const ck_inv *v)
{
    fflush(stdout);
    fprintf(stderr, "chandy: invariant violated: %s (%d) at %.9f s on %s: %s\n",
            v->module ? v->module : "?", v->num, (double)now / 1e9, where ? where : "?", v->what);
    fflush(stderr);
    _exit(CK_EXIT_INVARIANT);
}
