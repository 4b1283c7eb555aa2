#include "handle.h"

#include <string.h>

#include "wire.h"

int ck_handles_add(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
                   uint32_t crc, uint32_t kg_start, uint32_t kg_end)
{
    size_t klen = strlen(key);
    if (!klen || klen > CK_HANDLE_KEY_MAX || !ck_wire_key_ok((const uint8_t *)key, klen) ||
        kind < 1 || kind > CK_HANDLE_KIND_MAX || kg_end < kg_start)
        return CK_EINVAL;
    if (hs->n == hs->cap) {
        uint32_t cap = hs->cap ? 2 * hs->cap : 2;
        ck_handle *v = realloc(hs->v, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        hs->v = v;
        hs->cap = cap;
    }
    ck_handle *h = &hs->v[hs->n];
    h->key = malloc(klen + 1);
    if (!h->key)
        return CK_ENOMEM;
    memcpy(h->key, key, klen + 1);
    h->bytes = bytes;
    h->crc = crc;
    h->kind = (uint8_t)kind;
    h->flags = (uint8_t)flags;
    h->kg_start = kg_start;
    h->kg_end = kg_end;
    hs->n++;
    return CK_OK;
}

int ck_handles_copy(ck_handles *dst, const ck_handles *src)
{
    memset(dst, 0, sizeof(*dst));
    for (uint32_t i = 0; i < src->n; i++) {
        const ck_handle *h = &src->v[i];
        if (ck_handles_add(dst, h->kind, h->flags, h->key, h->bytes, h->crc, h->kg_start,
                           h->kg_end)) {
            ck_handles_free(dst);
            return CK_ENOMEM; /* src's handles are valid: only memory can fail */
        }
    }
    return CK_OK;
}

void ck_handles_free(ck_handles *hs)
{
    for (uint32_t i = 0; i < hs->n; i++)
        free(hs->v[i].key);
    free(hs->v);
    memset(hs, 0, sizeof(*hs));
}

uint64_t ck_handles_bytes(const ck_handles *hs)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < hs->n; i++)
        b += hs->v[i].bytes;
    return b;
}

void ck_handles_put(ck_wbuf *w, const ck_handles *hs)
{
    ck_wbuf_u32(w, hs->n);
    for (uint32_t i = 0; i < hs->n; i++) {
        const ck_handle *h = &hs->v[i];
        size_t klen = strlen(h->key);
        uint8_t *p = ck_wbuf_room(w, 4);
        if (p) {
            p[0] = h->kind;
            p[1] = h->flags;
            ck_put_u16(p + 2, (uint16_t)klen);
        }
        ck_wbuf_bytes(w, h->key, klen);
        ck_wbuf_u64(w, h->bytes);
        ck_wbuf_u32(w, h->crc);
        ck_wbuf_u32(w, h->kg_start);
        ck_wbuf_u32(w, h->kg_end);
    }
}

int ck_handles_get(ck_rbuf *r, ck_handles *hs, uint32_t max_kg, const char **why)
{
    memset(hs, 0, sizeof(*hs));
    uint32_t n = ck_rbuf_u32(r);
    /* the smallest handle takes 25 bytes: a count past that is a lie */
    *why = "bad count of state handles";
    if (r->err || n > ck_rbuf_left(r) / 25)
        return CK_ECORRUPT;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = ck_rbuf_take(r, 4);
        size_t klen = p ? ck_get_u16(p + 2) : 0;
        const uint8_t *key = ck_rbuf_take(r, klen);
        uint64_t bytes = ck_rbuf_u64(r);
        uint32_t crc = ck_rbuf_u32(r), kgs = ck_rbuf_u32(r), kge = ck_rbuf_u32(r);
        *why = "truncated state handle";
        if (r->err)
            goto bad;
        *why = "bad state handle (kind, flags, key or key-group range)";
        char buf[CK_HANDLE_KEY_MAX + 1];
        if (klen > CK_HANDLE_KEY_MAX || (p[1] & ~CK_HANDLE_SHARED) || kge > max_kg ||
            !ck_wire_key_ok(key, klen)) /* a NUL would cut the key short: another file */
            goto bad;
        memcpy(buf, key, klen);
        buf[klen] = 0;
        int rc = ck_handles_add(hs, p[0], p[1], buf, bytes, crc, kgs, kge);
        if (rc == CK_ENOMEM) {
            ck_handles_free(hs);
            return rc;
        }
        if (rc)
            goto bad;
    }
    return CK_OK;
bad:
    ck_handles_free(hs);
    return CK_ECORRUPT;
}
