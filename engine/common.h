/*
 * common.h - small shared definitions of the chandy engine.
 *
 * Time in the engine is an int64_t count of nanoseconds on the platform
 * clock (ck_time). The platform decides what zero is: the start of the
 * simulation under SimGrid, the start of the run with sockets. Event time
 * (the timestamps that records carry, watermarks, windows) is in
 * milliseconds, as in Flink.
 *
 * Multi-byte integers on the wire and in files are little-endian; the
 * ck_put/ck_get helpers below are the only place that knows.
 */
#ifndef CK_COMMON_H
#define CK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int64_t ck_time;

#define CK_NS_PER_US INT64_C(1000)
#define CK_NS_PER_MS INT64_C(1000000)
#define CK_NS_PER_S INT64_C(1000000000)
#define CK_TIME_NEVER INT64_MAX

/* Event-time bounds (milliseconds), as Flink's Long.MIN_VALUE/MAX_VALUE. */
#define CK_WM_MIN INT64_MIN
#define CK_WM_MAX INT64_MAX

#define CK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CK_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CK_UNUSED(x) ((void)(x))

/* Appends `it` to the singly linked queue head..tail (linked by ->next). */
#define CK_QUEUE_APPEND(head, tail, it)                                                           \
    do {                                                                                          \
        (it)->next = NULL;                                                                        \
        if (tail)                                                                                 \
            (tail)->next = (it);                                                                  \
        else                                                                                      \
            (head) = (it);                                                                        \
        (tail) = (it);                                                                            \
    } while (0)

/* Keeps a rarely taken path out of line, so that the hot path it is called
 * from stays small (no register spills for the slow case). */
#if defined(__GNUC__) || defined(__clang__)
#define CK_NOINLINE __attribute__((noinline))
#else
#define CK_NOINLINE
#endif

/* Forces a small helper into its callers (a prefetch: GCC takes a function
 * whose only effect is a prefetch for pure, and drops calls to it). */
#if defined(__GNUC__) || defined(__clang__)
#define CK_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define CK_ALWAYS_INLINE inline
#endif

/* A fallible function (one that returns 0 or a CK_E* code, error.h):
 * the compiler warns where a caller drops its result. */
#if defined(__GNUC__) || defined(__clang__)
#define CK_MUST_CHECK __attribute__((warn_unused_result))
#else
#define CK_MUST_CHECK
#endif

/* Drops the result of a CK_MUST_CHECK call on purpose; the call site says
 * in a comment why ignoring it is right. (GCC does not take a cast to
 * void for it.) */
#define CK_IGNORE(call) ((void)!(call))

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Little-endian machine: the wire order is the machine's own. */
#define CK_LE_HOST 1
#else
#define CK_LE_HOST 0
#endif

static inline void ck_put_u16(uint8_t *p, uint16_t v)
{
    if (CK_LE_HOST) {
        memcpy(p, &v, 2);
        return;
    }
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void ck_put_u32(uint8_t *p, uint32_t v)
{
    if (CK_LE_HOST) {
        memcpy(p, &v, 4);
        return;
    }
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void ck_put_u64(uint8_t *p, uint64_t v)
{
    if (CK_LE_HOST) {
        memcpy(p, &v, 8);
        return;
    }
    ck_put_u32(p, (uint32_t)v);
    ck_put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t ck_get_u16(const uint8_t *p)
{
    if (CK_LE_HOST) {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t ck_get_u32(const uint8_t *p)
{
    if (CK_LE_HOST) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t ck_get_u64(const uint8_t *p)
{
    if (CK_LE_HOST) {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    return (uint64_t)ck_get_u32(p) | ((uint64_t)ck_get_u32(p + 4) << 32);
}

static inline void ck_put_i64(uint8_t *p, int64_t v)
{
    ck_put_u64(p, (uint64_t)v);
}

static inline int64_t ck_get_i64(const uint8_t *p)
{
    return (int64_t)ck_get_u64(p);
}

/* Seconds as a double, for reports only; the engine never computes with it. */
static inline double ck_time_s(ck_time t)
{
    return (double)t / (double)CK_NS_PER_S;
}

#endif
