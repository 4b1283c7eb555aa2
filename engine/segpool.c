#include "segpool.h"

#include <stdlib.h>

#include "error.h"
#include "invariant.h"

uint32_t ck_segpool_segments(const ck_config *cfg)
{
    double flink = (double)ck_cfg(cfg, CK_CFG_TM_FLINK_SIZE);
    double bytes = flink * (double)ck_cfg(cfg, CK_CFG_NET_FRACTION) / 1000.0;
    double lo = (double)ck_cfg(cfg, CK_CFG_NET_MIN), hi = (double)ck_cfg(cfg, CK_CFG_NET_MAX);
    if (bytes < lo)
        bytes = lo;
    if (bytes > hi)
        bytes = hi;
    double n = bytes / (double)ck_cfg(cfg, CK_CFG_SEGMENT_SIZE);
    return n >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

void ck_segpool_init(ck_segpool *p, uint32_t seg_size, uint32_t total)
{
    memset(p, 0, sizeof(*p));
    p->seg_size = seg_size;
    p->total = total;
    p->block_size = (size_t)CK_SEGPOOL_OVERHEAD + seg_size;
    p->small_size = (size_t)CK_SEGPOOL_OVERHEAD + CK_MIN(seg_size, CK_SEGPOOL_SMALL);
}

void ck_segpool_free(ck_segpool *p)
{
    while (p->free) {
        void *b = p->free;
        p->free = *(void **)b;
        free(b);
    }
    p->nfree = 0;
    while (p->free_small) {
        void *b = p->free_small;
        p->free_small = *(void **)b;
        free(b);
    }
    p->nfree_small = 0;
}

int ck_segpool_reserve(ck_segpool *p, uint32_t n)
{
    if (n > p->total - p->reserved)
        return CK_ENOBUFS;
    p->reserved += n;
    if (p->reserved > p->reserved_peak)
        p->reserved_peak = p->reserved;
    return CK_OK;
}

void ck_segpool_unreserve(ck_segpool *p, uint32_t n)
{
    p->reserved -= CK_MIN(n, p->reserved);
}

/* A block of `size` bytes from free list *list (nfree of them), or a new
 * one (counted in *allocated). */
static void *take(void **list, uint32_t *nfree, uint32_t *allocated, size_t size)
{
    void *b = *list;
    if (b) {
        *list = *(void **)b;
        (*nfree)--;
    } else if ((b = malloc(size))) {
        (*allocated)++;
    }
    return b;
}

static void give(void **list, uint32_t *nfree, void *block)
{
    *(void **)block = *list;
    *list = block;
    (*nfree)++;
}

/* A segment handed out, in a whole block or a small one. */
static void *get(ck_segpool *p, int small)
{
    void *b = small ? take(&p->free_small, &p->nfree_small, &p->allocated_small, p->small_size)
                    : take(&p->free, &p->nfree, &p->allocated, p->block_size);
    if (b && ++p->used > p->peak)
        p->peak = p->used;
    return b;
}

void *ck_segpool_get(ck_segpool *p)
{
    return get(p, 0);
}

void ck_segpool_put(ck_segpool *p, void *block)
{
    give(&p->free, &p->nfree, block);
    p->used--;
}

void *ck_segpool_get_small(ck_segpool *p)
{
    return get(p, 1);
}

void ck_segpool_put_small(ck_segpool *p, void *block)
{
    give(&p->free_small, &p->nfree_small, block);
    p->used--;
}

void *ck_segpool_upgrade(ck_segpool *p, void *small, size_t keep)
{
    void *b = take(&p->free, &p->nfree, &p->allocated, p->block_size);
    if (!b)
        return NULL;
    memcpy(b, small, CK_MIN(keep, p->small_size));
    give(&p->free_small, &p->nfree_small, small);
    return b;
}

#define CK_INV_MODULE "segpool"

int ck_segpool_check(const ck_segpool *p, ck_inv *v)
{
    CK_INV(v, 1, p->reserved <= p->total && p->reserved_peak >= p->reserved,
           "reserved %u of %u segments, peak %u", p->reserved, p->total, p->reserved_peak);
    CK_INV(v, 2, p->peak >= p->used, "%u segments used, peak %u", p->used, p->peak);
    CK_INV(v, 3,
           (uint64_t)p->used + p->nfree + p->nfree_small ==
                   (uint64_t)p->allocated + p->allocated_small &&
               !p->free == !p->nfree && !p->free_small == !p->nfree_small,
           "used %u + free %u + free small %u != allocated %u + allocated small %u", p->used,
           p->nfree, p->nfree_small, p->allocated, p->allocated_small);
    CK_INV(v, 4,
           p->block_size == (size_t)CK_SEGPOOL_OVERHEAD + p->seg_size &&
               p->small_size == (size_t)CK_SEGPOOL_OVERHEAD + CK_MIN(p->seg_size, CK_SEGPOOL_SMALL),
           "blocks of %zu and %zu bytes for segments of %u", p->block_size, p->small_size,
           p->seg_size);
    return 0;
}
