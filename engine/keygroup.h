/*
 * keygroup.h - key groups, exactly as Flink assigns them.
 *
 * A key's hash code is Java's String.hashCode over the UTF-16 code units of
 * the key (keys are stored as UTF-8; malformed bytes decode to U+FFFD as
 * Java's decoder does), so a key lands in the same key group and subtask as
 * in Flink:
 *
 *   keyGroup = murmur(hashCode(key)) % maxParallelism
 *   subtask  = keyGroup * parallelism / maxParallelism
 *
 * Subtask i owns the key-group range [start, end] with
 *   start = ceil(i * maxP / p), end = ceil((i + 1) * maxP / p) - 1.
 *
 * Key-group ranges, one convention everywhere: a ck_kgr is Flink's
 * KeyGroupRange, inclusive [start, end], empty when start > end (the
 * empty range made by the operations below is {0, -1}). Every range kept
 * or passed in chandy is a ck_kgr; a file format that stores another form
 * (a state handle's half-open [start, end) on the wire) converts in its
 * encoder and decoder only (handle.c).
 */
#ifndef CK_KEYGROUP_H
#define CK_KEYGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define CK_KG_LOWER_BOUND_MAX_PARALLELISM 128
#define CK_KG_UPPER_BOUND_MAX_PARALLELISM 32768

/* Java String.hashCode of a UTF-8 key, over its UTF-16 code units. */
int32_t ck_kg_java_hash(const char *key, size_t len);

/* Flink's MathUtils.murmurHash(int): a non-negative int. Inline, as the
 * key group below: every record on a keyed edge computes it twice. */
static inline int32_t ck_kg_murmur(int32_t code)
{
    uint32_t c = (uint32_t)code;
    c *= 0xcc9e2d51u;
    c = (c << 15) | (c >> 17);
    c *= 0x1b873593u;
    c = (c << 13) | (c >> 19);
    c = c * 5 + 0xe6546b64u;
    c ^= 4;
    c ^= c >> 16;
    c *= 0x85ebca6bu;
    c ^= c >> 13;
    c *= 0xc2b2ae35u;
    c ^= c >> 16;
    int32_t r = (int32_t)c;
    if (r >= 0)
        return r;
    if (r != INT32_MIN)
        return -r;
    return 0;
}

/* Key group of a key for a given max parallelism (> 0). */
int ck_kg_of_key(const char *key, size_t len, int max_parallelism);

/* Key group of a precomputed Java hash code. */
static inline int ck_kg_of_hash(int32_t hash, int max_parallelism)
{
    int32_t m = ck_kg_murmur(hash); /* never negative */
    if ((max_parallelism & (max_parallelism - 1)) == 0)
        return m & (max_parallelism - 1); /* the default rule gives powers of two */
    return m % max_parallelism;
}

/* Subtask index that owns key group kg. */
int ck_kg_subtask(int kg, int parallelism, int max_parallelism);

/* A range of key groups: [start, end], empty when start > end. */
typedef struct ck_kgr {
    int32_t start, end;
} ck_kgr;

#define CK_KGR_EMPTY ((ck_kgr){0, -1})

static inline ck_kgr ck_kgr_make(int32_t start, int32_t end)
{
    return (ck_kgr){start, end};
}

static inline int ck_kgr_empty(ck_kgr r)
{
    return r.start > r.end;
}

/* How many key groups r holds. */
static inline int32_t ck_kgr_size(ck_kgr r)
{
    return ck_kgr_empty(r) ? 0 : r.end - r.start + 1;
}

static inline int ck_kgr_contains(ck_kgr r, int32_t kg)
{
    return kg >= r.start && kg <= r.end;
}

/* The key groups in both a and b (CK_KGR_EMPTY when none). */
static inline ck_kgr ck_kgr_intersect(ck_kgr a, ck_kgr b)
{
    ck_kgr r = {a.start > b.start ? a.start : b.start, a.end < b.end ? a.end : b.end};
    return ck_kgr_empty(r) ? CK_KGR_EMPTY : r;
}

/* Whether a and b hold the same key groups (every empty range is equal). */
static inline int ck_kgr_equal(ck_kgr a, ck_kgr b)
{
    return ck_kgr_empty(a) ? ck_kgr_empty(b) : a.start == b.start && a.end == b.end;
}

/* The smallest range holding a and b (either may be empty). */
static inline ck_kgr ck_kgr_span(ck_kgr a, ck_kgr b)
{
    if (ck_kgr_empty(a))
        return b;
    if (ck_kgr_empty(b))
        return a;
    return (ck_kgr){a.start < b.start ? a.start : b.start, a.end > b.end ? a.end : b.end};
}

/* Whether every key group of a is in b (the empty range is in every one). */
static inline int ck_kgr_within(ck_kgr a, ck_kgr b)
{
    return ck_kgr_empty(a) || (a.start >= b.start && a.end <= b.end);
}

/* The key-group range subtask i of parallelism owns. */
ck_kgr ck_kg_range(int i, int parallelism, int max_parallelism);

/* Flink's default: min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768). */
int ck_kg_default_max_parallelism(int parallelism);

/*
 * Checks that 1 <= parallelism <= max_parallelism <= 32768.
 * Returns 0, CK_EINVAL.
 */
CK_MUST_CHECK
int ck_kg_check(int parallelism, int max_parallelism);

#endif
