#include "keygroup.h"

#include <string.h>

#include "error.h"

/*
 * Decodes one code point from UTF-8 at s[0..len) the way Java's UTF-8
 * decoder does when it builds a String (REPLACE on malformed input), so
 * that String.hashCode sees the same UTF-16 code units:
 *   - a malformed sequence becomes one U+FFFD; how many bytes it swallows
 *     follows Java's rules (mostly the Unicode "maximal subpart", but a
 *     3-byte sequence whose second byte is a continuation byte swallows
 *     two, and an encoded surrogate ED A0..BF xx swallows three);
 *   - a sequence cut short by the end of the input is one U+FFFD.
 */
static inline int cont(uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

static uint32_t utf8_next(const uint8_t *s, size_t len, size_t *used)
{
    uint8_t b1 = s[0];
    *used = 1;
    if (b1 < 0x80)
        return b1;
    if (b1 >= 0xC2 && b1 <= 0xDF) {
        if (len < 2)
            return 0xFFFD;
        if (!cont(s[1]))
            return 0xFFFD;
        *used = 2;
        return ((uint32_t)(b1 & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (b1 >= 0xE0 && b1 <= 0xEF) {
        if (len < 3) {
            if (len > 1 && ((b1 == 0xE0 && (s[1] & 0xE0) == 0x80) || !cont(s[1])))
                return 0xFFFD;
            *used = len; /* truncated: the rest is one malformed sequence */
            return 0xFFFD;
        }
        uint8_t b2 = s[1], b3 = s[2];
        if ((b1 == 0xE0 && (b2 & 0xE0) == 0x80) || !cont(b2) || !cont(b3)) {
            *used = ((b1 == 0xE0 && (b2 & 0xE0) == 0x80) || !cont(b2)) ? 1 : 2;
            return 0xFFFD;
        }
        uint32_t c = ((uint32_t)(b1 & 0x0F) << 12) | ((uint32_t)(b2 & 0x3F) << 6) | (b3 & 0x3F);
        *used = 3;
        return (c >= 0xD800 && c <= 0xDFFF) ? 0xFFFD : c;
    }
    if (b1 >= 0xF0 && b1 <= 0xF7) {
        if (len < 4) {
            if (b1 > 0xF4)
                return 0xFFFD;
            if (len > 1 && ((b1 == 0xF0 && (s[1] < 0x90 || s[1] > 0xBF)) ||
                            (b1 == 0xF4 && (s[1] & 0xF0) != 0x80) || !cont(s[1])))
                return 0xFFFD;
            if (len > 2 && !cont(s[2])) {
                *used = 2;
                return 0xFFFD;
            }
            *used = len;
            return 0xFFFD;
        }
        uint8_t b2 = s[1], b3 = s[2], b4 = s[3];
        uint32_t c = ((uint32_t)(b1 & 0x07) << 18) | ((uint32_t)(b2 & 0x3F) << 12) |
                     ((uint32_t)(b3 & 0x3F) << 6) | (b4 & 0x3F);
        if (!cont(b2) || !cont(b3) || !cont(b4) || c < 0x10000 || c > 0x10FFFF) {
            if (b1 > 0xF4 || (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) ||
                (b1 == 0xF4 && (b2 & 0xF0) != 0x80) || !cont(b2))
                *used = 1;
            else if (!cont(b3))
                *used = 2;
            else
                *used = 3;
            return 0xFFFD;
        }
        *used = 4;
        return c;
    }
    return 0xFFFD; /* 80..C1, F8..FF */
}

int32_t ck_kg_java_hash(const char *key, size_t len)
{
    const uint8_t *s = (const uint8_t *)key;
    uint32_t h = 0;
    size_t i = 0;
    /* ASCII fast path: one byte is one UTF-16 code unit; four at a time,
     * h = h * 31^4 + c0 * 31^3 + c1 * 31^2 + c2 * 31 + c3. */
    while (i + 4 <= len) {
        uint32_t w;
        memcpy(&w, s + i, 4);
        if (w & 0x80808080u)
            break;
        h = h * 923521u + s[i] * 29791u + s[i + 1] * 961u + s[i + 2] * 31u + s[i + 3];
        i += 4;
    }
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

int ck_kg_of_key(const char *key, size_t len, int max_parallelism)
{
    return ck_kg_of_hash(ck_kg_java_hash(key, len), max_parallelism);
}

int ck_kg_subtask(int kg, int parallelism, int max_parallelism)
{
    return (int)((int64_t)kg * parallelism / max_parallelism);
}

ck_kgr ck_kg_range(int i, int parallelism, int max_parallelism)
{
    int64_t p = parallelism, m = max_parallelism;
    return ck_kgr_make((int32_t)((i * m + p - 1) / p), (int32_t)(((i + 1) * m - 1) / p));
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
