#include "buffer.h"

#include <stdlib.h>

#include "error.h"

/* The block layout: the ck_buf, then the header room and the segment. */
#define BUF_HEAD ((sizeof(ck_buf) + 15u) & ~(size_t)15u)

_Static_assert(BUF_HEAD + CK_WIRE_HDR <= CK_SEGPOOL_OVERHEAD,
               "a pool block has room for a buffer and a wire header");

/* The payload bytes of a small block. */
static uint32_t small_room(const ck_segpool *pool)
{
    return (uint32_t)(pool->small_size - CK_SEGPOOL_OVERHEAD);
}

/* An empty buffer of cap payload bytes in a block that has room for
 * `need` of them: a small one when they fit. */
static ck_buf *buf_new(ck_segpool *pool, uint32_t cap, uint32_t need)
{
    int small = need <= small_room(pool) && small_room(pool) < pool->seg_size;
    uint8_t *block = small ? ck_segpool_get_small(pool) : ck_segpool_get(pool);
    if (!block)
        return NULL;
    ck_buf *b = (ck_buf *)block;
    b->next = NULL;
    b->mem = block + BUF_HEAD;
    b->pool = pool;
    b->len = 0;
    b->cont = b->open_at = 0;
    b->cap = CK_MIN(cap, pool->seg_size);
    b->room = small ? small_room(pool) : pool->seg_size;
    return b;
}

ck_buf *ck_buf_new(ck_segpool *pool, uint32_t cap)
{
    return buf_new(pool, cap, 0);
}

ck_buf *ck_buf_grow(ck_buf *b)
{
    if (!b->pool || b->room == b->pool->seg_size)
        return b;
    uint8_t *block = ck_segpool_upgrade(b->pool, b, BUF_HEAD + CK_WIRE_HDR + (size_t)b->len);
    if (!block)
        return NULL;
    ck_buf *g = (ck_buf *)block;
    g->mem = block + BUF_HEAD;
    g->room = g->pool->seg_size;
    return g;
}

/* Gives b's block back to its pool. */
static void buf_put(ck_buf *b)
{
    if (b->room == b->pool->seg_size)
        ck_segpool_put(b->pool, b);
    else
        ck_segpool_put_small(b->pool, b);
}

ck_buf *ck_buf_copy(ck_segpool *pool, const uint8_t *data, uint32_t len)
{
    ck_buf *b = buf_new(pool, len, len);
    if (b) {
        memcpy(ck_buf_data(b), data, len);
        b->len = len;
    }
    return b;
}

ck_buf *ck_buf_wrap(uint8_t *msg, uint32_t len)
{
    ck_buf *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->next = NULL;
    b->mem = msg;
    b->pool = NULL;
    b->len = len;
    b->cap = len;
    b->room = len;
    b->cont = b->open_at = 0;
    return b;
}

void ck_buf_del(ck_buf *b)
{
    if (!b)
        return;
    if (b->pool) {
        buf_put(b);
    } else {
        free(b->mem);
        free(b);
    }
}

uint8_t *ck_buf_to_msg(ck_buf *b)
{
    size_t n = (size_t)CK_WIRE_HDR + b->len;
    uint8_t *m;
    if (b->pool) {
        if ((m = malloc(n)))
            memcpy(m, b->mem, n);
        buf_put(b);
    } else {
        m = b->mem;
        free(b);
    }
    return m;
}

void ck_bufq_clear(ck_bufq *q)
{
    ck_buf *b;
    while ((b = ck_bufq_pop(q)))
        ck_buf_del(b);
}
