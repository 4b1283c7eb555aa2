/*
 * restart.h - restart strategies (Flink's restart-strategy.*): after a
 * failure, may the job restart, and after how long?
 *
 *   none              never
 *   fixed-delay       up to `attempts` restarts, each after `delay`
 *   failure-rate      restart after `delay` unless more than
 *                     max-failures-per-interval failures fell within the
 *                     last failure-rate-interval
 *   exponential-delay as Flink 1.20 (ExponentialDelayRestartBackoffTimeStrategy),
 *                     in whole milliseconds as Flink: a failure at or
 *                     before the pending restart's time merges into that
 *                     restart (not counted; the wait is what is left of
 *                     it, so everything restarts at the first failure's
 *                     time). Otherwise it is restart attempt k (0 after a
 *                     reset): k starts over at 0 when the failure comes at
 *                     least reset-backoff-threshold after the last
 *                     restart's time; the backoff is initial-backoff x
 *                     multiplier^k, a jitter drawn uniformly from
 *                     +/- jitter-factor x that backoff is added to it
 *                     (unclamped), and the sum is clamped to
 *                     [initial-backoff, max-backoff], so that a saturated
 *                     backoff is exactly max-backoff. The strategy gives
 *                     up when that attempt is past
 *                     attempts-before-reset-backoff.
 *
 * Flink's default: exponential-delay when checkpointing is on, none when
 * off. Jitter draws from the run's seeded generator.
 */
#ifndef CK_RESTART_H
#define CK_RESTART_H

#include "config.h"
#include "rng.h"
#include "common.h"

typedef struct ck_restart {
    int type; /* CK_RS_*, resolved (never CK_RS_DEFAULT) */
    const ck_config *cfg;
    ck_rng rng;
    int restarts;      /* restarts granted so far */
    ck_time *failures; /* failure-rate: recent failure times */
    int nfail, capfail;
    int attempt;          /* exponential-delay: restarts since the last reset */
    ck_time next_restart; /* ...and when the last one is due (NEVER: none yet) */
} ck_restart;

/* What ck_restart_on_failure decided. */
enum {
    CK_RESTART_GIVE_UP = 0, /* no restart: the job fails */
    CK_RESTART_NEW = 1,     /* a new restart attempt, counted */
    CK_RESTART_MERGED = 2,  /* merged into the pending restart (exponential-delay): not counted */
};

void ck_restart_init(ck_restart *r, const ck_config *cfg, uint64_t seed);
void ck_restart_free(ck_restart *r);

/*
 * A failure happened at `now` (Flink's notifyFailure, canRestart and
 * getBackoffTime in one). Returns CK_RESTART_NEW or CK_RESTART_MERGED and
 * sets *delay, the wait from now until the restart, when the job may
 * restart; CK_RESTART_GIVE_UP when the strategy gives up.
 */
int ck_restart_on_failure(ck_restart *r, ck_time now, ck_time *delay);

const char *ck_restart_name(int type);

#endif
