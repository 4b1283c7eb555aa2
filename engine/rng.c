#include "rng.h"

__extension__ typedef unsigned __int128 ck_u128;

void ck_rng_init(ck_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = ck_mix64(seed) ^ ck_mix64(stream + UINT64_C(0x632be59bd9b4e019));
    for (int i = 0; i < 4; i++) {
        x += UINT64_C(0x9e3779b97f4a7c15);
        r->s[i] = ck_mix64(x);
    }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t ck_rng_next(ck_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t ck_rng_below(ck_rng *r, uint64_t n)
{
    ck_u128 m = (ck_u128)ck_rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t thresh = -n % n;
        while (low < thresh) {
            m = (ck_u128)ck_rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double ck_rng_double(ck_rng *r)
{
    return (double)(ck_rng_next(r) >> 11) * 0x1.0p-53;
}
