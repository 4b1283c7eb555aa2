/*
 * debloat.h - buffer debloating: the size of an input gate's network
 * buffers, derived from the gate's throughput so that the data in flight
 * takes about `target` to consume (Flink's BufferDebloater and
 * BufferSizeEMA).
 *
 * Each gate measures its own throughput (ck_tput, Flink's
 * ThroughputCalculator): the bytes read from it over the time it was
 * being read, the measurement paused while the gate is empty and resumed
 * when data is read again (time the task is backpressured counts, as in
 * Flink). Each period the task calls ck_debloat_update of every gate with
 * that throughput and the buffers in use in the gate. The desired size
 * is throughput x target / buffers, capped at twice the smoothed size (so
 * that it grows and shrinks at the same speed), smoothed by an exponential
 * moving average with alpha = 2 / (samples + 1), and bounded to
 * [min, segment size], min being taskmanager.memory.min-segment-size. A
 * new size less than threshold % away from the last announced one is not
 * announced, unless at a bound.
 *
 * Invariants (ck_debloat_check): (1) min <= last <= max; (2) the smoothed
 * size stays in the same bounds. A ck_tput's measured time only grows
 * while it runs (paused: start == CK_TPUT_PAUSED). No state machine
 * beyond running/paused: pure functions of the samples and times fed.
 */
#ifndef CK_DEBLOAT_H
#define CK_DEBLOAT_H

#include "common.h"
#include "invariant.h"

#define CK_DEBLOAT_MIN 256u /* Flink's default taskmanager.memory.min-segment-size */

typedef struct ck_debloat {
    uint32_t max;      /* the segment size */
    uint32_t min;      /* taskmanager.memory.min-segment-size */
    uint32_t last;     /* the size last announced (starts at max) */
    double ema;        /* the smoothed size */
    double alpha;
    uint32_t threshold_pct;
    int64_t target_ns;
} ck_debloat;

/* min is raised to CK_DEBLOAT_MIN (the network's least buffer) and max to
 * min when smaller. */
void ck_debloat_init(ck_debloat *d, uint32_t max, uint32_t min, int64_t target_ns,
                     uint32_t samples, uint32_t threshold_pct);

/*
 * One sample: throughput in bytes per second, buffers in use in the gate.
 * Returns the size to announce, or 0 when it stays as it is.
 */
uint32_t ck_debloat_update(ck_debloat *d, uint64_t throughput, uint32_t buffers);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_debloat_check(const ck_debloat *d, ck_inv *v);

/* Bytes per second from `bytes` read in `busy_ns` of measured time; with
 * no such time, the previous throughput `prev`. */
static inline uint64_t ck_debloat_throughput(uint64_t bytes, int64_t busy_ns, uint64_t prev)
{
    if (busy_ns <= 0)
        return prev;
    return (uint64_t)((double)bytes * (double)CK_NS_PER_S / (double)busy_ns);
}

/* A gate's throughput measurement (Flink's ThroughputCalculator). */
#define CK_TPUT_PAUSED INT64_MIN
typedef struct ck_tput {
    uint64_t bytes;   /* read since the last ck_tput_calc */
    int64_t time_ns;  /* measured since then, up to start */
    ck_time start;    /* running since; CK_TPUT_PAUSED: paused */
    uint64_t last;    /* the last throughput computed (bytes/s) */
} ck_tput;

/* A paused measurement with no throughput yet. */
void ck_tput_init(ck_tput *t);

/* bytes were read from the gate at now: counted, and the measurement
 * resumed if paused (Flink's incomingDataSize). */
void ck_tput_add(ck_tput *t, uint64_t bytes, ck_time now);

/* The gate turned out empty at now: the time from now on is not measured
 * until data is read or ck_tput_resume. */
void ck_tput_pause(ck_tput *t, ck_time now);

/* The gate has data again at now: measured from now (if paused). */
void ck_tput_resume(ck_tput *t, ck_time now);

/* The throughput since the last call (bytes/s over the measured time; the
 * last one when no time was measured), and a new measurement from now. */
uint64_t ck_tput_calc(ck_tput *t, ck_time now);

#endif
