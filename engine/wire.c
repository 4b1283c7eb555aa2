#include "wire.h"

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
    ck_put_u32(dst + 20, h->len);
}

int ck_wire_decode(const uint8_t *msg, size_t n, ck_wire_hdr *h)
{
    if (n < CK_WIRE_HDR)
        return CK_ECORRUPT;
    if (msg[0] == 0 || msg[0] > CK_MSG_TYPE_MAX || msg[1] != CK_WIRE_VERSION)
        return CK_ECORRUPT;
    uint32_t len = ck_get_u32(msg + 20);
    if (len > CK_WIRE_MAX_BODY || (size_t)len != n - CK_WIRE_HDR)
        return CK_ECORRUPT;
    h->type = msg[0];
    h->edge = ck_get_u16(msg + 2);
    h->src = ck_get_u32(msg + 4);
    h->dst = ck_get_u32(msg + 8);
    h->seq = ck_get_u32(msg + 12);
    h->arg = ck_get_u32(msg + 16);
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
    }
    return "UNKNOWN";
}
