/*
 * segpool.h - a task manager's network buffer pool: memory segments of one
 * size (Flink's NetworkBufferPool).
 *
 * Every network buffer of the subtasks on one host lives in a segment of
 * its host's pool: the buffers a result partition fills and the buffers an
 * input gate receives into. A buffer is "used in part": it holds up to the
 * segment size, and less when buffer debloating cut it (buffer.h); only
 * its used bytes travel. Segments are allocated on first use and recycled
 * through a free list, never returned to malloc before the pool is freed.
 *
 * A segment is backed by memory as far as it is written: a buffer starts
 * in a small block (CK_SEGPOOL_SMALL payload bytes) and moves to a whole
 * segment's block once it needs more (ck_segpool_upgrade). The pool counts
 * a small block as a whole segment, so credit, backpressure and every
 * figure are as with whole segments; only the host's memory differs. A
 * subpartition that holds a record or a watermark for the next flush then
 * costs a few hundred bytes, not 32 KiB: at parallelism 1024 a source
 * subtask has 1 024 of them.
 *
 * The pool holds `total` segments: the task manager's network memory (see
 * ck_segpool_segments) over the segment size. A subtask reserves what its
 * partitions and gate may hold when it is deployed; a reservation that
 * does not fit fails the subtask, as Flink's "Insufficient number of
 * network buffers" does. Within its reservation a subtask takes and gives
 * back segments freely.
 *
 * Invariants (ck_segpool_check):
 *   (1) reserved <= total (ck_segpool_reserve refuses beyond);
 *       reserved_peak = max(reserved) >= reserved;
 *   (2) used = segments handed out and not yet put back; peak = max(used)
 *       >= used;
 *   (3) used + nfree + nfree_small = allocated + allocated_small (every
 *       allocated block is either out or on its free list), and a free
 *       list is empty exactly when its count is 0;
 *   (4) a segment handed out is block_size = CK_SEGPOOL_OVERHEAD +
 *       seg_size bytes (small_size = CK_SEGPOOL_OVERHEAD + min(seg_size,
 *       CK_SEGPOOL_SMALL) for a small block), aligned for any object.
 *
 * No state machine: a counter and a free list.
 */
#ifndef CK_SEGPOOL_H
#define CK_SEGPOOL_H

#include "common.h"
#include "config.h"
#include "invariant.h"

typedef struct ck_segpool {
    size_t block_size;  /* bytes of one block: room for the buffer around a segment */
    uint32_t seg_size;  /* payload bytes of a segment (taskmanager.memory.segment-size) */
    uint32_t total;     /* segments the network memory holds */
    uint32_t reserved;  /* promised to the subtasks deployed here */
    uint32_t reserved_peak;
    uint32_t used, peak;
    uint32_t allocated, nfree;
    void *free;         /* free list, linked through each block's first pointer */
    size_t small_size;  /* bytes of a small block */
    uint32_t allocated_small, nfree_small;
    void *free_small;
} ck_segpool;

/* Payload bytes of a small block. */
#define CK_SEGPOOL_SMALL 512u

/* Bytes a block needs beside its segment (a buffer's bookkeeping and the
 * wire header of the message that carries it: buffer.h). */
#define CK_SEGPOOL_OVERHEAD 80u

/* The segments a task manager's network memory holds under cfg: Flink's
 * rule, network memory = taskmanager.memory.flink.size x
 * taskmanager.memory.network.fraction, bounded to [network.min,
 * network.max], over taskmanager.memory.segment-size. */
uint32_t ck_segpool_segments(const ck_config *cfg);

/* An empty pool of `total` segments of seg_size payload bytes. */
void ck_segpool_init(ck_segpool *p, uint32_t seg_size, uint32_t total);

/* Frees the free list. Segments still handed out are the holders' to give
 * back first (ck_segpool_put); the pool does not track them. */
void ck_segpool_free(ck_segpool *p);

/* Promises n segments: 0, or CK_ENOBUFS when fewer than n are left. */
CK_MUST_CHECK
int ck_segpool_reserve(ck_segpool *p, uint32_t n);

/* Gives back a promise of n segments. */
void ck_segpool_unreserve(ck_segpool *p, uint32_t n);

/* A segment's block (block_size bytes), or NULL when out of memory. */
void *ck_segpool_get(ck_segpool *p);

/* Puts a block from ck_segpool_get back. */
void ck_segpool_put(ck_segpool *p, void *block);

/* A segment in a small block (small_size bytes), or NULL when out of
 * memory; counted as a segment. */
void *ck_segpool_get_small(ck_segpool *p);

/* Puts a block from ck_segpool_get_small back. */
void ck_segpool_put_small(ck_segpool *p, void *block);

/* The same segment moved from small block `small` to a whole block: its
 * first `keep` bytes are copied, the small block goes back, and the
 * segments counted do not change. NULL when out of memory (small kept). */
void *ck_segpool_upgrade(ck_segpool *p, void *small, size_t keep);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_segpool_check(const ck_segpool *p, ck_inv *v);

#endif
