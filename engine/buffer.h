/*
 * buffer.h - network buffers.
 *
 * A buffer's memory is one malloc'd block laid out exactly as the DATA
 * message that carries it: CK_WIRE_HDR bytes of header room, then the
 * payload. Sending a buffer fills in the header and hands the block to the
 * platform without a copy; a received DATA message becomes a buffer the
 * same way.
 *
 * A buffer holds up to cap payload bytes (the segment size: it is full at
 * cap), but its memory grows as it fills (ck_buf_room), from a small block
 * up to cap (a subpartition starts its next buffer at what the last grew
 * to): most buffers leave by the flush timeout or a barrier holding
 * a few records, and a segment-sized block for each cost more in malloc
 * than the engine's own work.
 */
#ifndef CK_BUFFER_H
#define CK_BUFFER_H

#include "common.h"
#include "wire.h"

typedef struct ck_buf {
    struct ck_buf *next;
    uint8_t *mem;  /* header room + payload; owned by the buffer */
    uint32_t len;  /* payload bytes used */
    uint32_t cap;  /* payload capacity */
    uint32_t alloc; /* payload bytes allocated: len <= alloc <= cap */
} ck_buf;

/* The first allocation of a buffer's payload. */
#define CK_BUF_FIRST 256u

int ck_buf_grow(ck_buf *b, uint32_t need);

/* Makes room for n more payload bytes (len + n <= cap). 0 or CK_ENOMEM. */
static inline int ck_buf_room(ck_buf *b, size_t n)
{
    return b->len + n <= b->alloc ? 0 : ck_buf_grow(b, b->len + (uint32_t)n);
}

static inline uint8_t *ck_buf_data(const ck_buf *b)
{
    return b->mem + CK_WIRE_HDR;
}

/* Allocates an empty buffer of cap payload bytes, with memory for `first`
 * of them to start with (0: CK_BUF_FIRST); NULL when out of memory. */
ck_buf *ck_buf_new(uint32_t cap, uint32_t first);

/* Wraps a received message (header + len payload bytes); takes ownership. */
ck_buf *ck_buf_wrap(uint8_t *msg, uint32_t len);

/* Frees the buffer and its memory. */
void ck_buf_del(ck_buf *b);

/* Frees the buffer struct and returns its memory, now owned by the caller. */
uint8_t *ck_buf_release(ck_buf *b);

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
