/*
 * bytes.h - growable byte writer and bounds-checked byte reader for the
 * engine's binary formats (metrics blobs, snapshot files).
 *
 * Writer errors (out of memory) and reader errors (reading past the end)
 * are sticky: check `err` once at the end instead of after every call.
 */
#ifndef CK_BYTES_H
#define CK_BYTES_H

#include <stdlib.h>

#include "common.h"
#include "crc32c.h"
#include "error.h"

/* Makes the buffer *pbuf (any pointer type, passed by address) hold at
 * least n bytes, doubling from 64; *cap is its size. 0 or CK_ENOMEM (the
 * buffer is left as it was). */
CK_MUST_CHECK
static inline int ck_reserve(void *pbuf, size_t *cap, size_t n)
{
    void **buf = pbuf;
    if (n <= *cap)
        return CK_OK;
    size_t c = *cap ? *cap : 64;
    while (c < n)
        c *= 2;
    void *p = realloc(*buf, c);
    if (!p)
        return CK_ENOMEM;
    *buf = p;
    *cap = c;
    return CK_OK;
}

typedef struct ck_wbuf {
    uint8_t *p;
    size_t len, cap;
    int err;
} ck_wbuf;

static inline uint8_t *ck_wbuf_room(ck_wbuf *w, size_t n)
{
    if (w->err)
        return NULL;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->err = 1;
            return NULL;
        }
        w->p = p;
        w->cap = cap;
    }
    uint8_t *at = w->p + w->len;
    w->len += n;
    return at;
}

static inline void ck_wbuf_u32(ck_wbuf *w, uint32_t v)
{
    uint8_t *p = ck_wbuf_room(w, 4);
    if (p)
        ck_put_u32(p, v);
}

static inline void ck_wbuf_u64(ck_wbuf *w, uint64_t v)
{
    uint8_t *p = ck_wbuf_room(w, 8);
    if (p)
        ck_put_u64(p, v);
}

static inline void ck_wbuf_bytes(ck_wbuf *w, const void *data, size_t n)
{
    uint8_t *p = ck_wbuf_room(w, n);
    if (p && n)
        memcpy(p, data, n);
}

/* Ends a file or message whose last 4 bytes are the CRC32C of all
 * before them: appends it and hands the buffer to the caller (*out, *len).
 * 0, or CK_ENOMEM with the buffer freed. */
CK_MUST_CHECK
static inline int ck_wbuf_seal_crc(ck_wbuf *w, uint8_t **out, size_t *len)
{
    if (!w->err)
        ck_wbuf_u32(w, ck_crc32c(0, w->p, w->len));
    if (w->err) {
        free(w->p);
        w->p = NULL;
        return CK_ENOMEM;
    }
    *out = w->p;
    *len = w->len;
    return CK_OK;
}

typedef struct ck_rbuf {
    const uint8_t *p;
    size_t len, pos;
    int err;
} ck_rbuf;

static inline const uint8_t *ck_rbuf_take(ck_rbuf *r, size_t n)
{
    if (r->err || r->len - r->pos < n) {
        r->err = 1;
        return NULL;
    }
    const uint8_t *at = r->p + r->pos;
    r->pos += n;
    return at;
}

static inline uint32_t ck_rbuf_u32(ck_rbuf *r)
{
    const uint8_t *p = ck_rbuf_take(r, 4);
    return p ? ck_get_u32(p) : 0;
}

static inline uint64_t ck_rbuf_u64(ck_rbuf *r)
{
    const uint8_t *p = ck_rbuf_take(r, 8);
    return p ? ck_get_u64(p) : 0;
}

/* Bytes left to read. */
static inline size_t ck_rbuf_left(const ck_rbuf *r)
{
    return r->err ? 0 : r->len - r->pos;
}

#endif
