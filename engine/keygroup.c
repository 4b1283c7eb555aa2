#include "keygroup.h"

#include "error.h"

/*
 * Decodes one code point from UTF-8 at s[0..len) following the Unicode
 * "maximal subpart" practice that Java's UTF-8 decoder applies: a malformed
 * sequence yields U+FFFD and consumes the longest prefix that could have
 * started a valid sequence (at least one byte).
 */
static uint32_t utf8_next(const uint8_t *s, size_t len, size_t *used)
{
    uint8_t b0 = s[0];
    if (b0 < 0x80) {
        *used = 1;
        return b0;
    }
    int need;
    uint32_t cp;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0)
            lo = 0xA0;
        else if (b0 == 0xED)
            hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F;
    } else {
        *used = 1;
        return 0xFFFD;
    }
    size_t i = 1;
    for (int k = 0; k < need; k++, i++) {
        if (i >= len || s[i] < lo || s[i] > hi) {
            *used = i;
            return 0xFFFD;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *used = i;
    return cp;
}

int32_t ck_kg_java_hash(const char *key, size_t len)
{
    const uint8_t *s = (const uint8_t *)key;
    uint32_t h = 0;
    size_t i = 0;
    /* ASCII fast path: one byte is one UTF-16 code unit. */
    while (i < len && s[i] < 0x80)
        h = 31 * h + s[i++];
    while (i < len) {
        size_t used;
        uint32_t cp = utf8_next(s + i, len - i, &used);
        i += used;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xD800 + (cp >> 10));
            h = 31 * h + (0xDC00 + (cp & 0x3FF));
        } else {
            h = 31 * h + cp;
        }
    }
    return (int32_t)h;
}

static inline uint32_t rotl32(uint32_t x, int k)
{
    return (x << k) | (x >> (32 - k));
}

int32_t ck_kg_murmur(int32_t code)
{
    uint32_t c = (uint32_t)code;
    c *= 0xcc9e2d51u;
    c = rotl32(c, 15);
    c *= 0x1b873593u;
    c = rotl32(c, 13);
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

int ck_kg_of_hash(int32_t hash, int max_parallelism)
{
    return ck_kg_murmur(hash) % max_parallelism;
}

int ck_kg_of_key(const char *key, size_t len, int max_parallelism)
{
    return ck_kg_of_hash(ck_kg_java_hash(key, len), max_parallelism);
}

int ck_kg_subtask(int kg, int parallelism, int max_parallelism)
{
    return (int)((int64_t)kg * parallelism / max_parallelism);
}

void ck_kg_range(int i, int parallelism, int max_parallelism, int *start,
                 int *end)
{
    int64_t p = parallelism, m = max_parallelism;
    *start = (int)((i * m + p - 1) / p);
    *end = (int)(((i + 1) * m - 1) / p);
}

int ck_kg_default_max_parallelism(int parallelism)
{
    int64_t want = (int64_t)parallelism + parallelism / 2;
    int64_t pow2 = 1;
    while (pow2 < want)
        pow2 <<= 1;
    if (pow2 < CK_KG_LOWER_BOUND_MAX_PARALLELISM)
        pow2 = CK_KG_LOWER_BOUND_MAX_PARALLELISM;
    if (pow2 > CK_KG_UPPER_BOUND_MAX_PARALLELISM)
        pow2 = CK_KG_UPPER_BOUND_MAX_PARALLELISM;
    return (int)pow2;
}

int ck_kg_check(int parallelism, int max_parallelism)
{
    if (parallelism < 1 || max_parallelism < 1 ||
        max_parallelism > CK_KG_UPPER_BOUND_MAX_PARALLELISM ||
        parallelism > max_parallelism)
        return CK_EINVAL;
    return CK_OK;
}
