#include "wire.h"

#include <stdlib.h>

#include "error.h"

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

size_t ck_cp_ack_encode(const ck_cp_ack *a, uint8_t *out, size_t cap)
{
    size_t klen = 0;
    while (klen < sizeof(a->key) - 1 && a->key[klen])
        klen++;
    size_t n = 56 + klen;
    if (n > cap)
        return 0;
    ck_put_u64(out, a->id);
    ck_put_u64(out + 8, a->bytes);
    ck_put_u32(out + 16, a->crc);
    ck_put_i64(out + 20, a->sync_ns);
    ck_put_i64(out + 28, a->async_ns);
    ck_put_i64(out + 36, a->align_ns);
    ck_put_u32(out + 44, (uint32_t)klen | (a->flags & 0xffffu) << 16); /* u16 length, u16 flags */
    ck_put_u64(out + 48, a->inflight);
    memcpy(out + 56, a->key, klen);
    return n;
}

int ck_cp_ack_decode(const uint8_t *p, size_t len, ck_cp_ack *a)
{
    if (len < 56)
        return CK_ECORRUPT;
    uint32_t klen = ck_get_u32(p + 44) & 0xffffu;
    a->flags = ck_get_u32(p + 44) >> 16;
    if (klen >= sizeof(a->key) || (size_t)klen + 56 != len || !ck_wire_key_ok(p + 56, klen))
        return CK_ECORRUPT;
    a->id = ck_get_u64(p);
    a->bytes = ck_get_u64(p + 8);
    a->crc = ck_get_u32(p + 16);
    a->sync_ns = ck_get_i64(p + 20);
    a->async_ns = ck_get_i64(p + 28);
    a->align_ns = ck_get_i64(p + 36);
    a->inflight = ck_get_u64(p + 48);
    if (a->inflight > a->bytes)
        return CK_ECORRUPT; /* channel state is part of the file */
    memcpy(a->key, p + 56, klen);
    a->key[klen] = 0;
    return CK_OK;
}
