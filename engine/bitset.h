/*
 * bitset.h - a set of small indices (channels, subpartitions), taken out
 * in index order.
 *
 * A result partition's subpartitions that can send, or a gate's channels
 * with credit to announce, must go in index order (as a scan over all of
 * them would: the same scenario and seed give the same run), but a scan
 * over all of them for each buffer costs O(channels), and a sorted list
 * costs a sort (glibc's qsort allocates for large arrays). A bit per index
 * gives both: adding is O(1), taking them out in order reads one word per
 * 64 indices.
 *
 * Invariant (ck_bitset_check): (1) n is the number of bits set in w[0..nw).
 */
#ifndef CK_BITSET_H
#define CK_BITSET_H

#include <stdint.h>
#include <stdlib.h>

#include "common.h"
#include "error.h"
#include "invariant.h"

typedef struct ck_bitset {
    uint64_t *w;
    int nw;
    int n; /* indices in the set */
} ck_bitset;

CK_MUST_CHECK
static inline int ck_bitset_init(ck_bitset *s, int nbits)
{
    s->nw = (nbits + 63) / 64;
    s->n = 0;
    s->w = calloc((size_t)(s->nw ? s->nw : 1), sizeof(*s->w));
    return s->w ? CK_OK : CK_ENOMEM;
}

static inline void ck_bitset_free(ck_bitset *s)
{
    free(s->w);
    s->w = NULL;
    s->nw = s->n = 0;
}

/* Adds index i; returns 1 if it was not in the set. */
static inline int ck_bitset_add(ck_bitset *s, int i)
{
    uint64_t m = (uint64_t)1 << (i & 63);
    if (s->w[i >> 6] & m)
        return 0;
    s->w[i >> 6] |= m;
    s->n++;
    return 1;
}

/* Takes out the 64-index word k (indices 64k..64k+63) to go through with
 * ck_bitset_next; what is added meanwhile stays for the next time. */
static inline uint64_t ck_bitset_take_word(ck_bitset *s, int k)
{
    uint64_t b = s->w[k];
    s->w[k] = 0;
    s->n -= __builtin_popcountll(b);
    return b;
}

/* Puts back the indices of a taken word that were not gone through. */
static inline void ck_bitset_put_word(ck_bitset *s, int k, uint64_t b)
{
    s->n += __builtin_popcountll(b & ~s->w[k]);
    s->w[k] |= b;
}

/* The lowest index in a taken word *b (k its number), removed from *b. */
static inline int ck_bitset_next(uint64_t *b, int k)
{
    int i = __builtin_ctzll(*b);
    *b &= *b - 1;
    return k * 64 + i;
}

/* Whether index i is in the set. */
static inline int ck_bitset_has(const ck_bitset *s, int i)
{
    return (s->w[i >> 6] >> (i & 63)) & 1;
}

/* Checks the invariant above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
static inline int ck_bitset_check(const ck_bitset *s, ck_inv *v)
{
    int n = 0;
    for (int k = 0; k < s->nw; k++)
        n += __builtin_popcountll(s->w[k]);
    if (n != s->n)
        return ck_inv_fail(v, "bitset", 1, "counts %d indices, holds %d", s->n, n);
    return 0;
}

#endif
