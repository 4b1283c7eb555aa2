#include "refops.h"

/* Duplicated on purpose: see refops.h. Nothing here calls engine/. */

int64_t ck_ref_map(ck_map_fn fn, int64_t arg, int64_t value)
{
    switch (fn) {
    case CK_MAP_IDENTITY:
    case CK_MAP_DROP_PAYLOAD: /* drops the payload, which no output keeps */
        return value;
    case CK_MAP_SCALE:
        /* Unsigned arithmetic wraps modulo 2^64, as a Java long does. */
        return (int64_t)((uint64_t)value * (uint64_t)arg);
    }
    return value;
}

/* ---- Java's String.hashCode of a UTF-8 key ---------------------------------------- */

/*
 * The decoding follows the JDK's String(byte[], UTF_8) (String.java,
 * decodeUTF8_UTF16, with the helpers isMalformed3, isMalformed3_2,
 * isMalformed4, isMalformed4_2, isMalformed4_3, malformed3 and malformed4),
 * step by step, so that each branch below can be checked against it. Every
 * malformed sequence becomes one U+FFFD; the branches say how many bytes it
 * takes.
 */

#define REPL 0xFFFDu

/* h = 31 * h + c over the code units, in 32 bits as Java's int. */
static void hash_unit(uint32_t *h, uint32_t unit)
{
    *h = *h * 31u + unit;
}

/* A code point as UTF-16: one code unit, or a surrogate pair. */
static void hash_code_point(uint32_t *h, uint32_t cp)
{
    if (cp < 0x10000) {
        hash_unit(h, cp);
    } else {
        hash_unit(h, 0xD800 + ((cp - 0x10000) >> 10));
        hash_unit(h, 0xDC00 + ((cp - 0x10000) & 0x3FF));
    }
}

static int not_continuation(uint8_t b)
{
    return (b & 0xC0) != 0x80;
}

/* isMalformed3: E0 needs A0..BF next (no overlong form); both bytes after
 * the first are continuation bytes. */
static int malformed3(uint8_t b1, uint8_t b2, uint8_t b3)
{
    return (b1 == 0xE0 && (b2 & 0xE0) == 0x80) || not_continuation(b2) || not_continuation(b3);
}

/* isMalformed3_2: the same, when only b2 is there. */
static int malformed3_2(uint8_t b1, uint8_t b2)
{
    return (b1 == 0xE0 && (b2 & 0xE0) == 0x80) || not_continuation(b2);
}

/* malformed3: how many bytes a malformed 3-byte sequence takes. */
static size_t malformed3_len(uint8_t b1, uint8_t b2)
{
    return ((b1 == 0xE0 && (b2 & 0xE0) == 0x80) || not_continuation(b2)) ? 1 : 2;
}

/* isMalformed4_2: F0 needs 90..BF next, F4 needs 80..8F, others 80..BF. */
static int malformed4_2(uint8_t b1, uint8_t b2)
{
    return (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) || (b1 == 0xF4 && (b2 & 0xF0) != 0x80) ||
           not_continuation(b2);
}

/* malformed4: how many bytes a malformed 4-byte sequence takes. */
static size_t malformed4_len(uint8_t b1, uint8_t b2, uint8_t b3)
{
    if (b1 > 0xF4 || malformed4_2(b1, b2))
        return 1;
    if (not_continuation(b3))
        return 2;
    return 3;
}

int32_t ck_ref_java_hash(const char *key, size_t len)
{
    const uint8_t *s = (const uint8_t *)key;
    uint32_t h = 0;
    size_t i = 0;
    while (i < len) {
        uint8_t b1 = s[i];
        size_t left = len - i; /* bytes from b1 on */
        if (b1 < 0x80) {
            /* One byte: 0xxxxxxx. */
            hash_unit(&h, b1);
            i += 1;
        } else if (b1 >= 0xC2 && b1 <= 0xDF) {
            /* Two bytes: 110xxxxx 10xxxxxx. */
            if (left < 2) {
                hash_unit(&h, REPL); /* cut short by the end */
                i = len;
            } else if (not_continuation(s[i + 1])) {
                hash_unit(&h, REPL);
                i += 1;
            } else {
                hash_code_point(&h, ((uint32_t)(b1 & 0x1F) << 6) | (s[i + 1] & 0x3F));
                i += 2;
            }
        } else if (b1 >= 0xE0 && b1 <= 0xEF) {
            /* Three bytes: 1110xxxx 10xxxxxx 10xxxxxx. */
            if (left >= 3) {
                uint8_t b2 = s[i + 1], b3 = s[i + 2];
                if (malformed3(b1, b2, b3)) {
                    hash_unit(&h, REPL);
                    i += malformed3_len(b1, b2);
                } else {
                    uint32_t c = ((uint32_t)(b1 & 0x0F) << 12) | ((uint32_t)(b2 & 0x3F) << 6) |
                                 (b3 & 0x3F);
                    /* An encoded surrogate is malformed: all three bytes. */
                    hash_unit(&h, c >= 0xD800 && c <= 0xDFFF ? REPL : c);
                    i += 3;
                }
            } else if (left == 2 && malformed3_2(b1, s[i + 1])) {
                hash_unit(&h, REPL);
                i += 1;
            } else {
                hash_unit(&h, REPL); /* cut short by the end: the rest */
                i = len;
            }
        } else if (b1 >= 0xF0 && b1 <= 0xF7) {
            /* Four bytes: 11110xxx 10xxxxxx 10xxxxxx 10xxxxxx. */
            if (left >= 4) {
                uint8_t b2 = s[i + 1], b3 = s[i + 2], b4 = s[i + 3];
                uint32_t cp = ((uint32_t)(b1 & 0x07) << 18) | ((uint32_t)(b2 & 0x3F) << 12) |
                              ((uint32_t)(b3 & 0x3F) << 6) | (b4 & 0x3F);
                if (not_continuation(b2) || not_continuation(b3) || not_continuation(b4) ||
                    cp < 0x10000 || cp > 0x10FFFF) {
                    hash_unit(&h, REPL);
                    i += malformed4_len(b1, b2, b3);
                } else {
                    hash_code_point(&h, cp);
                    i += 4;
                }
            } else if (b1 > 0xF4 || (left >= 2 && malformed4_2(b1, s[i + 1]))) {
                hash_unit(&h, REPL);
                i += 1;
            } else if (left == 3 && not_continuation(s[i + 2])) {
                hash_unit(&h, REPL);
                i += 2;
            } else {
                hash_unit(&h, REPL); /* cut short by the end: the rest */
                i = len;
            }
        } else {
            /* 80..C1 (a continuation or overlong lead), F8..FF. */
            hash_unit(&h, REPL);
            i += 1;
        }
    }
    return (int32_t)h;
}

/* ---- filter, aggregates, windows ------------------------------------------------- */

uint64_t ck_ref_mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/*
 * The filter's definition: the key's Java hash (as an unsigned 32-bit
 * number), mixed with the mixed event time and the value shifted up 32
 * bits, gives a number; the record is kept when that number modulo one
 * million is below keep_ppm.
 */
int ck_ref_filter_keeps(uint32_t keep_ppm, const char *key, size_t klen, int64_t ts,
                        int64_t value)
{
    uint64_t key_hash = (uint32_t)ck_ref_java_hash(key, klen);
    uint64_t h = ck_ref_mix64(key_hash ^ ck_ref_mix64((uint64_t)ts) ^ ((uint64_t)value << 32));
    uint64_t bucket = h % 1000000;
    return bucket < keep_ppm;
}

int64_t ck_ref_agg_add(ck_agg_fn fn, int64_t value)
{
    switch (fn) {
    case CK_AGG_COUNT:
        return 1;
    case CK_AGG_SUM:
        return value;
    case CK_AGG_MEDIAN:
        return 0; /* a median window keeps every value instead */
    }
    return 0;
}

int64_t ck_ref_lower_median(const int64_t *v, uint32_t n)
{
    /* Selection by counting: the smallest value with at least (n + 1) / 2
     * values at or below it. Quadratic, but a window holds few values and
     * this shares nothing with the engine's sort. */
    uint32_t need = (n + 1) / 2;
    int64_t best = INT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t le = 0;
        for (uint32_t j = 0; j < n; j++)
            le += v[j] <= v[i];
        if (le >= need && v[i] < best)
            best = v[i];
    }
    return best;
}

int64_t ck_ref_window_start(int64_t ts, int64_t size)
{
    /* C's division rounds toward zero; a window starts at the multiple of
     * size at or below ts, so negative times round down one more. */
    int64_t q = ts / size;
    if (ts % size < 0)
        q -= 1;
    return q * size;
}
