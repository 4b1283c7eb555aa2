/*
 * timers.h - event-time timers of a keyed operator (Flink's
 * InternalTimerService): a min-heap on (timestamp, insertion order) of
 * (key group, key, namespace) entries. Timers with equal timestamps fire in
 * the order they were registered, so firing order is deterministic.
 *
 * The caller deduplicates (a window operator registers its timer when the
 * window's state is created).
 */
#ifndef CK_TIMERS_H
#define CK_TIMERS_H

#include "common.h"

typedef struct ck_timer {
    int64_t ts;
    uint64_t seq;
    int64_t ns;
    int32_t jhash;
    int kg;
    uint32_t klen;
    char *key; /* owned */
} ck_timer;

typedef struct ck_timerq {
    ck_timer *h;
    size_t n, cap;
    uint64_t seq;
} ck_timerq;

void ck_timerq_init(ck_timerq *q);
void ck_timerq_free(ck_timerq *q);

/* Registers a timer; copies the key. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_timerq_add(ck_timerq *q, int64_t ts, int kg, int32_t jhash,
                  const char *key, uint32_t klen, int64_t ns);

/*
 * Pops the earliest timer if its timestamp is <= wm. Returns 1 and moves it
 * to *out (the caller frees out->key), or 0.
 */
int ck_timerq_pop(ck_timerq *q, int64_t wm, ck_timer *out);

/* Copies every timer (keys duplicated) into a malloc'd array, in firing
 * order. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_timerq_copy(const ck_timerq *q, ck_timer **out, size_t *n);

#endif
