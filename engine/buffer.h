/*
 * buffer.h - network buffers.
 *
 * A buffer lives in a segment of its host's network buffer pool
 * (segpool.h): one block holds the ck_buf itself, CK_WIRE_HDR bytes of
 * header room, then the segment's payload, so that a producer fills the
 * payload in place and the header goes in front when it is sent. A buffer
 * is used in part: it is full at cap payload bytes, which is the segment
 * size or less (buffer debloating sets it, partition.h); only its len used
 * bytes travel.
 *
 * Segments never leave their host: sending a buffer copies its header and
 * used bytes into a message of exactly that size, which the platform takes
 * (the write to the socket, in Flink), and the segment goes back to the
 * pool at once; a receiving gate copies a DATA message into a segment of
 * its own host's pool (Netty's read into a credited buffer). A buffer made
 * around a message (ck_buf_wrap: restored channel state) has no pool and
 * is freed with free().
 */
#ifndef CK_BUFFER_H
#define CK_BUFFER_H

#include "common.h"
#include "segpool.h"
#include "wire.h"

typedef struct ck_buf {
    struct ck_buf *next;
    uint8_t *mem;      /* header room + payload */
    ck_segpool *pool;  /* the pool the block goes back to; NULL: mem and the
                        * buffer are malloc'd */
    uint32_t len;      /* payload bytes used */
    uint32_t cap;      /* payload bytes it may use: at most the segment size */
    uint32_t room;     /* payload bytes its block has: the segment size, or
                        * CK_SEGPOOL_SMALL in a small block (segpool.h) until
                        * ck_buf_grow; len <= room */
    /* a producer's, for its output channel state (partition.h): */
    uint32_t cont;     /* its first cont bytes go on with an element that an
                        * earlier buffer began (cont <= len) */
    uint32_t open_at;  /* 1 + where an element starts in it that ends in a
                        * later buffer; 0: none */
} ck_buf;

static inline uint8_t *ck_buf_data(const ck_buf *b)
{
    return b->mem + CK_WIRE_HDR;
}

/* An empty buffer of cap payload bytes (cap <= the pool's segment size) in
 * a segment of pool; NULL when out of memory. */
ck_buf *ck_buf_new(ck_segpool *pool, uint32_t cap);

/* Buffer b (in a small block) moved to a whole segment's block, its bytes
 * kept: the new pointer, b gone; NULL when out of memory (b kept). A writer
 * that needs more than b->room - b->len bytes of a buffer that may take
 * them (cap) grows it first. */
ck_buf *ck_buf_grow(ck_buf *b);

/* A buffer in a segment of pool holding a copy of data[0..len) (len <= the
 * segment size); NULL when out of memory. */
ck_buf *ck_buf_copy(ck_segpool *pool, const uint8_t *data, uint32_t len);

/* Wraps a malloc'd message (header + len payload bytes); takes ownership. */
ck_buf *ck_buf_wrap(uint8_t *msg, uint32_t len);

/* Frees the buffer: its segment goes back to its pool. */
void ck_buf_del(ck_buf *b);

/* The buffer as a message: a malloc'd block of its header room and its
 * used payload bytes, now the caller's; the buffer is gone (its segment
 * back in the pool). NULL when out of memory (the buffer is gone too). */
uint8_t *ck_buf_to_msg(ck_buf *b);

/* A FIFO of buffers. */
typedef struct ck_bufq {
    ck_buf *head, *tail;
    uint32_t n;
} ck_bufq;

static inline void ck_bufq_push(ck_bufq *q, ck_buf *b)
{
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->n++;
}

static inline ck_buf *ck_bufq_pop(ck_bufq *q)
{
    ck_buf *b = q->head;
    if (b) {
        q->head = b->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
        b->next = NULL;
    }
    return b;
}

void ck_bufq_clear(ck_bufq *q);

#endif
