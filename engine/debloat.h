/*
 * debloat.h - buffer debloating: the size of an input gate's network
 * buffers, derived from the gate's throughput so that the data in flight
 * takes about `target` to consume (Flink's BufferDebloater and
 * BufferSizeEMA).
 *
 * Each period the task measures its throughput (bytes read over the time it
 * was not idle: backpressured time counts, as in Flink) and calls
 * ck_debloat_update with the buffers in use in the gate. The desired size
 * is throughput x target / buffers, capped at twice the smoothed size (so
 * that it grows and shrinks at the same speed), smoothed by an exponential
 * moving average with alpha = 2 / (samples + 1), and bounded to
 * [CK_DEBLOAT_MIN, segment size]. A new size less than threshold % away
 * from the last announced one is not announced, unless at a bound.
 *
 * Invariants (ck_debloat_check): (1) CK_DEBLOAT_MIN <= last <= max;
 * (2) the smoothed size stays in the same bounds. No state machine: a pure
 * function of the samples fed.
 */
#ifndef CK_DEBLOAT_H
#define CK_DEBLOAT_H

#include "common.h"
#include "invariant.h"

#define CK_DEBLOAT_MIN 256u /* Flink's minimum buffer size */

typedef struct ck_debloat {
    uint32_t max;      /* the segment size */
    uint32_t last;     /* the size last announced (starts at max) */
    double ema;        /* the smoothed size */
    double alpha;
    uint32_t threshold_pct;
    int64_t target_ns;
} ck_debloat;

void ck_debloat_init(ck_debloat *d, uint32_t max, int64_t target_ns, uint32_t samples,
                     uint32_t threshold_pct);

/*
 * One sample: throughput in bytes per second, buffers in use in the gate.
 * Returns the size to announce, or 0 when it stays as it is.
 */
uint32_t ck_debloat_update(ck_debloat *d, uint64_t throughput, uint32_t buffers);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
int ck_debloat_check(const ck_debloat *d, ck_inv *v);

/* Bytes per second from `bytes` read in `busy_ns` of not-idle time; with
 * no such time, the previous throughput `prev`. */
static inline uint64_t ck_debloat_throughput(uint64_t bytes, int64_t busy_ns, uint64_t prev)
{
    if (busy_ns <= 0)
        return prev;
    return (uint64_t)((double)bytes * (double)CK_NS_PER_S / (double)busy_ns);
}

#endif
