/*
 * rng.h - the seeded random generator (xoshiro256** seeded by splitmix64).
 *
 * All randomness in a run comes from one scenario seed. Each component
 * takes its own stream with ck_rng_split(seed, stream), so that adding a
 * draw in one component does not shift the numbers another one sees.
 * There is no global generator.
 */
#ifndef CK_RNG_H
#define CK_RNG_H

#include <stdint.h>

typedef struct ck_rng {
    uint64_t s[4];
} ck_rng;

/* Seeds r from a seed and a stream number; equal inputs, equal sequences. */
void ck_rng_init(ck_rng *r, uint64_t seed, uint64_t stream);

uint64_t ck_rng_next(ck_rng *r);

/* Uniform in [0, n); n > 0. Unbiased (Lemire's method). */
uint64_t ck_rng_below(ck_rng *r, uint64_t n);

/* Uniform double in [0, 1). */
double ck_rng_double(ck_rng *r);

/* splitmix64 step: a good 64-bit mixer, also used for hashing ids. */
static inline uint64_t ck_mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

#endif
