#include "wire.h"

#include <stdlib.h>

#include "error.h"
#include "keygroup.h"

void ck_wire_encode(uint8_t *dst, const ck_wire_hdr *h)
{
    dst[0] = h->type;
    dst[1] = CK_WIRE_VERSION;
    ck_put_u16(dst + 2, h->edge);
    ck_put_u32(dst + 4, h->src);
    ck_put_u32(dst + 8, h->dst);
    ck_put_u32(dst + 12, h->seq);
    ck_put_u32(dst + 16, h->arg);
    ck_put_u32(dst + 20, h->epoch);
    ck_put_u32(dst + 24, h->len);
}

int ck_wire_decode(const uint8_t *msg, size_t n, ck_wire_hdr *h)
{
    if (n < CK_WIRE_HDR)
        return CK_ECORRUPT;
    if (msg[0] == 0 || msg[0] > CK_MSG_TYPE_MAX || msg[1] != CK_WIRE_VERSION)
        return CK_ECORRUPT;
    uint32_t len = ck_get_u32(msg + 24);
    if (len > CK_WIRE_MAX_BODY || (size_t)len != n - CK_WIRE_HDR)
        return CK_ECORRUPT;
    h->type = msg[0];
    h->edge = ck_get_u16(msg + 2);
    h->src = ck_get_u32(msg + 4);
    h->dst = ck_get_u32(msg + 8);
    h->seq = ck_get_u32(msg + 12);
    h->arg = ck_get_u32(msg + 16);
    h->epoch = ck_get_u32(msg + 20);
    h->len = len;
    return CK_OK;
}

const char *ck_wire_type_name(int type)
{
    switch (type) {
    case CK_MSG_DATA:
        return "DATA";
    case CK_MSG_CREDIT:
        return "CREDIT";
    case CK_MSG_TASK_FINISHED:
        return "TASK_FINISHED";
    case CK_MSG_TASK_FAILED:
        return "TASK_FAILED";
    case CK_MSG_CP_TRIGGER:
        return "CP_TRIGGER";
    case CK_MSG_CP_ACK:
        return "CP_ACK";
    case CK_MSG_CP_DECLINE:
        return "CP_DECLINE";
    case CK_MSG_CP_COMPLETE:
        return "CP_COMPLETE";
    case CK_MSG_CP_ABORT:
        return "CP_ABORT";
    case CK_MSG_DEPLOY:
        return "DEPLOY";
    case CK_MSG_CANCEL:
        return "CANCEL";
    case CK_MSG_HEARTBEAT:
        return "HEARTBEAT";
    case CK_MSG_SAVEPOINT:
        return "SAVEPOINT";
    case CK_MSG_TASK_ENDED:
        return "TASK_ENDED";
    case CK_MSG_TASK_RUNNING:
        return "TASK_RUNNING";
    case CK_MSG_METRICS:
        return "METRICS";
    case CK_MSG_BUFFER_SIZE:
        return "BUFFER_SIZE";
    case CK_MSG_EVENT:
        return "EVENT";
    case CK_MSG_MATERIALIZED:
        return "MATERIALIZED";
    case CK_MSG_RESCALE:
        return "RESCALE";
    }
    return "UNKNOWN";
}

uint8_t *ck_wire_msg(int type, uint32_t src, uint32_t dst, uint32_t epoch, const void *body,
                     size_t len, size_t *total)
{
    uint8_t *m = malloc(CK_WIRE_HDR + len);
    if (!m)
        return NULL;
    ck_wire_hdr h = {.type = (uint8_t)type, .src = src, .dst = dst, .epoch = epoch,
                     .len = (uint32_t)len};
    ck_wire_encode(m, &h);
    if (len)
        memcpy(m + CK_WIRE_HDR, body, len);
    *total = CK_WIRE_HDR + len;
    return m;
}

int ck_cp_ack_encode(const ck_cp_ack *a, uint8_t **out, size_t *len)
{
    ck_wbuf w = {0};
    ck_wbuf_u64(&w, a->id);
    ck_wbuf_u64(&w, (uint64_t)a->sync_ns);
    ck_wbuf_u64(&w, (uint64_t)a->async_ns);
    ck_wbuf_u64(&w, (uint64_t)a->align_ns);
    ck_wbuf_u64(&w, (uint64_t)a->upload_ns);
    ck_wbuf_u32(&w, a->flags);
    ck_wbuf_u64(&w, a->inflight);
    ck_handles_put(&w, &a->handles);
    if (w.err) {
        free(w.p);
        return CK_ENOMEM;
    }
    *out = w.p;
    *len = w.len;
    return CK_OK;
}

int ck_cp_ack_decode(const uint8_t *p, size_t len, ck_cp_ack *a)
{
    memset(a, 0, sizeof(*a));
    ck_rbuf r = {.p = p, .len = len};
    a->id = ck_rbuf_u64(&r);
    a->sync_ns = (int64_t)ck_rbuf_u64(&r);
    a->async_ns = (int64_t)ck_rbuf_u64(&r);
    a->align_ns = (int64_t)ck_rbuf_u64(&r);
    a->upload_ns = (int64_t)ck_rbuf_u64(&r);
    a->flags = ck_rbuf_u32(&r);
    a->inflight = ck_rbuf_u64(&r);
    const char *why;
    int rc = r.err ? CK_ECORRUPT
                   : ck_handles_get(&r, &a->handles, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &why);
    if (rc)
        return rc;
    if (ck_rbuf_left(&r) || !a->handles.n || a->inflight > ck_handles_bytes(&a->handles)) {
        ck_handles_free(&a->handles);
        return CK_ECORRUPT; /* channel state is part of the files */
    }
    return CK_OK;
}

void ck_cp_ack_free(ck_cp_ack *a)
{
    ck_handles_free(&a->handles);
}
