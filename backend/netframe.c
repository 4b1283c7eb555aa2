#include "netframe.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "invariant.h"
#include "wire.h"

/* Smallest frame after its length field: destination, source, message header. */
#define MIN_FLEN (8u + CK_WIRE_HDR)

void ck_netframe_init(ck_netframe *p, size_t cap)
{
    memset(p, 0, sizeof(*p));
    p->cap = cap < CK_NETFRAME_HDR + CK_WIRE_HDR ? CK_NETFRAME_HDR + CK_WIRE_HDR : cap;
}

void ck_netframe_free(ck_netframe *p)
{
    free(p->buf);
    p->buf = NULL;
    p->off = p->len = p->size = 0;
}

size_t ck_netframe_pending(const ck_netframe *p)
{
    return p->len - p->off;
}

/* Makes room for `need` more bytes after the unconsumed ones. */
static int make_room(ck_netframe *p, size_t need)
{
    if (p->off > 0 && p->len + need > p->size) {
        memmove(p->buf, p->buf + p->off, p->len - p->off);
        p->len -= p->off;
        p->off = 0;
    }
    if (p->len + need <= p->size)
        return CK_OK;
    size_t size = p->size ? p->size : 4096;
    while (size < p->len + need)
        size *= 2;
    if (size > p->cap)
        size = p->cap;
    uint8_t *b = realloc(p->buf, size);
    if (!b)
        return CK_ENOMEM;
    p->buf = b;
    p->size = size;
    return CK_OK;
}

int ck_netframe_reserve(ck_netframe *p, size_t want, uint8_t **space, size_t *room)
{
    size_t left = p->cap - ck_netframe_pending(p);
    if (want > left)
        want = left;
    *space = NULL;
    *room = 0;
    if (want == 0)
        return CK_OK;
    int rc = make_room(p, want);
    if (rc)
        return rc;
    *space = p->buf + p->len;
    *room = CK_MIN(p->size - p->len, left);
    return CK_OK;
}

void ck_netframe_wrote(ck_netframe *p, size_t n)
{
    p->len += n;
}

int ck_netframe_feed(ck_netframe *p, const uint8_t *data, size_t n)
{
    if (n > p->cap - ck_netframe_pending(p))
        return CK_ETOOBIG;
    if (n == 0)
        return CK_OK;
    int rc = make_room(p, n);
    if (rc)
        return rc;
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    return CK_OK;
}

/* Checks what is in of the frame at q (have bytes): its length, then the
 * message header. */
static int check_head(const uint8_t *q, size_t have)
{
    uint32_t flen = ck_get_u32(q);
    if (flen < MIN_FLEN || flen > CK_NETFRAME_MAX - 4)
        return CK_ECORRUPT;
    if (have < CK_NETFRAME_HDR + CK_WIRE_HDR)
        return CK_OK;
    const uint8_t *m = q + CK_NETFRAME_HDR;
    if (m[0] == 0 || m[0] > CK_MSG_TYPE_MAX || m[1] != CK_WIRE_VERSION ||
        ck_get_u32(m + 24) != flen - MIN_FLEN)
        return CK_ECORRUPT;
    return CK_OK;
}

#define CK_INV_MODULE "netframe"

int ck_netframe_parser_check(const ck_netframe *p, ck_inv *v)
{
    CK_INV(v, 1, p->off <= p->len && p->len <= p->size && p->size <= p->cap &&
                     (p->buf != NULL || !p->size),
           "bytes [%zu, %zu) in %zu of at most %zu", p->off, p->len, p->size, p->cap);
    size_t have = p->len - p->off;
    CK_INV(v, 2, p->err || have < 4 || check_head(p->buf + p->off, have) == CK_OK,
           "%zu bytes wait behind a bad frame head", have);
    CK_INV(v, 3, p->err == 0 || p->err == CK_ECORRUPT, "failed with %d", p->err);
    return 0;
}

int ck_netframe_next(ck_netframe *p, ck_netframe_msg *f)
{
    if (p->err)
        return p->err;
    size_t have = ck_netframe_pending(p);
    if (have == 0) {
        p->off = p->len = 0;
        return 0;
    }
    const uint8_t *q = p->buf + p->off;
    if (have < 4)
        return 0;
    if (check_head(q, have)) {
        p->err = CK_ECORRUPT;
        return p->err;
    }
    size_t total = 4 + (size_t)ck_get_u32(q);
    if (have < total)
        return 0;
    f->dst = ck_get_u32(q + 4);
    f->src = ck_get_u32(q + 8);
    f->msg = q + CK_NETFRAME_HDR;
    f->len = total - CK_NETFRAME_HDR;
    p->off += total;
    return 1;
}

/* The edge of a DATA or CREDIT message, or NULL. */
static const ck_edge *edge_of(const ck_graph *g, uint16_t id)
{
    for (int i = 0; i < g->ne; i++)
        if (g->e[i].id == id)
            return &g->e[i];
    return NULL;
}

/* Whether ep is subtask `subtask` of vertex v in attempt `attempt`. */
static int is_subtask(const ck_graph *g, uint32_t ep, uint32_t attempt, int v, uint32_t subtask)
{
    uint32_t a, global;
    if (!ck_ep_task_split(g, ep, &a, &global) || a != attempt)
        return 0;
    return subtask < (uint32_t)g->v[v].parallelism && global == g->v[v].base + subtask;
}

int ck_netframe_check(const ck_graph *g, uint32_t src, uint32_t dst, const uint8_t *msg,
                      size_t len)
{
    ck_wire_hdr h;
    if (ck_wire_decode(msg, len, &h))
        return CK_ECORRUPT;
    uint32_t a, global;
    switch (h.type) {
    case CK_MSG_DATA:
    case CK_MSG_EVENT:
    case CK_MSG_CREDIT:
    case CK_MSG_BUFFER_SIZE: {
        const ck_edge *e = edge_of(g, h.edge);
        if (!e)
            return CK_EPROTO;
        /* DATA and EVENT: producer h.src -> consumer h.dst; CREDIT and
         * BUFFER_SIZE go back. */
        int down = h.type == CK_MSG_DATA || h.type == CK_MSG_EVENT;
        uint32_t prod = down ? src : dst;
        uint32_t cons = down ? dst : src;
        if (!is_subtask(g, prod, h.epoch, e->src_v, h.src) ||
            !is_subtask(g, cons, h.epoch, e->dst_v, h.dst))
            return CK_EPROTO;
        return CK_OK;
    }
    case CK_MSG_CP_TRIGGER:
    case CK_MSG_CP_COMPLETE:
    case CK_MSG_CP_ABORT:
    case CK_MSG_DEPLOY:
    case CK_MSG_CANCEL:
        return h.src == CK_EP_JM && src == CK_EP_JM ? CK_OK : CK_EPROTO;
    case CK_MSG_HEARTBEAT:
        if (h.src == CK_EP_JM)
            return src == CK_EP_JM ? CK_OK : CK_EPROTO;
        return h.arg < CK_MAX_TM && h.src == CK_EP_TM0 + h.arg && src == h.src && dst == CK_EP_JM
                   ? CK_OK
                   : CK_EPROTO;
    case CK_MSG_TASK_FINISHED:
    case CK_MSG_TASK_FAILED:
    case CK_MSG_CP_ACK:
    case CK_MSG_CP_DECLINE:
    case CK_MSG_TASK_RUNNING:
    case CK_MSG_MATERIALIZED:
    case CK_MSG_METRICS:
    case CK_MSG_TASK_ENDED:
        if (dst != CK_EP_JM || !ck_ep_task_split(g, src, &a, &global) || a != h.epoch ||
            global != h.src)
            return CK_EPROTO;
        return CK_OK;
    default: /* SAVEPOINT, RESCALE: a client's request comes only from inside the job
              * manager's process */
        return CK_EPROTO;
    }
}

ck_netframe_verdict ck_netframe_admit(const ck_graph *g, int self, int peer,
                                      ck_netframe_host_fn host_of, void *ctx,
                                      int64_t newest_attempt, const ck_netframe_msg *f)
{
    if (ck_netframe_check(g, f->src, f->dst, f->msg, f->len))
        return CK_NETFRAME_BAD;
    int sh = host_of(ctx, f->src), dh = host_of(ctx, f->dst);
    if (sh >= 0 && sh != peer)
        return CK_NETFRAME_SPOOFED;
    if (dh >= 0) {
        if (dh != self)
            return CK_NETFRAME_UNKNOWN;
        /* Placement is known per attempt: a source of an attempt placed
         * nowhere here is no subtask of the job. */
        return sh >= 0 ? CK_NETFRAME_DELIVER : CK_NETFRAME_UNKNOWN;
    }
    uint32_t attempt, global;
    if (!ck_ep_task_split(g, f->dst, &attempt, &global) || (int64_t)attempt <= newest_attempt)
        return CK_NETFRAME_UNKNOWN;
    return CK_NETFRAME_HOLD;
}

const char *ck_netframe_verdict_name(ck_netframe_verdict v)
{
    switch (v) {
    case CK_NETFRAME_DELIVER:
        return "delivered";
    case CK_NETFRAME_HOLD:
        return "held";
    case CK_NETFRAME_BAD:
        return "message does not match the frame";
    case CK_NETFRAME_SPOOFED:
        return "source is not the authenticated peer";
    case CK_NETFRAME_UNKNOWN:
        return "unknown endpoint";
    }
    return "?";
}
