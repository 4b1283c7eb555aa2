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

/* Inclusive key-group range owned by subtask i. */
void ck_kg_range(int i, int parallelism, int max_parallelism, int *start,
                 int *end);

/* Flink's default: min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768). */
int ck_kg_default_max_parallelism(int parallelism);

/*
 * Checks that 1 <= parallelism <= max_parallelism <= 32768.
 * Returns 0, CK_EINVAL.
 */
CK_MUST_CHECK
int ck_kg_check(int parallelism, int max_parallelism);

#endif
