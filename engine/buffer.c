#include "buffer.h"

#include <stdlib.h>

ck_buf *ck_buf_new(uint32_t cap)
{
    ck_buf *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->mem = malloc((size_t)CK_WIRE_HDR + cap);
    if (!b->mem) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->len = 0;
    b->cap = cap;
    return b;
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
