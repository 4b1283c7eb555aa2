#include "buffer.h"

#include <stdlib.h>

#include "error.h"

ck_buf *ck_buf_new(uint32_t cap, uint32_t first)
{
    ck_buf *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->alloc = CK_MIN(cap, first ? first : CK_BUF_FIRST);
    b->mem = malloc((size_t)CK_WIRE_HDR + b->alloc);
    if (!b->mem) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->len = 0;
    b->cap = cap;
    return b;
}

int ck_buf_grow(ck_buf *b, uint32_t need)
{
    uint32_t a = b->alloc ? b->alloc : 1;
    while (a < need)
        a = a > b->cap / 2 ? b->cap : a * 2;
    uint8_t *m = realloc(b->mem, (size_t)CK_WIRE_HDR + a);
    if (!m)
        return CK_ENOMEM;
    b->mem = m;
    b->alloc = a;
    return CK_OK;
}

ck_buf *ck_buf_wrap(uint8_t *msg, uint32_t len)
{
    ck_buf *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->next = NULL;
    b->mem = msg;
    b->len = len;
    b->cap = len;
    b->alloc = len;
    return b;
}

void ck_buf_del(ck_buf *b)
{
    if (b) {
        free(b->mem);
        free(b);
    }
}

uint8_t *ck_buf_release(ck_buf *b)
{
    uint8_t *m = b->mem;
    free(b);
    return m;
}

void ck_bufq_clear(ck_bufq *q)
{
    ck_buf *b;
    while ((b = ck_bufq_pop(q)))
        ck_buf_del(b);
}
