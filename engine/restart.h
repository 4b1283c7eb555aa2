/*
 * restart.h - restart strategies (Flink's restart-strategy.*): after a
 * failure, may the job restart, and after how long?
 *
 *   none              never
 *   fixed-delay       up to `attempts` restarts, each after `delay`
 *   failure-rate      restart after `delay` unless more than
 *                     max-failures-per-interval failures fell within the
 *                     last failure-rate-interval
 *   exponential-delay as Flink 1.19+ (ExponentialDelayRestartBackoffTimeStrategy):
 *                     restart k waits initial-backoff x multiplier^k, plus a
 *                     jitter of +/- jitter-factor of it, clamped to
 *                     [initial-backoff, max-backoff]; a failure at least
 *                     reset-backoff-threshold after the last restart starts
 *                     over from k = 0; gives up after
 *                     attempts-before-reset-backoff restarts (a failure while
 *                     a restart is pending is merged into it by the job
 *                     manager, which is then not running)
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
    ck_time next_restart; /* ...and when the last one was due (NEVER: none yet) */
} ck_restart;

void ck_restart_init(ck_restart *r, const ck_config *cfg, uint64_t seed);
void ck_restart_free(ck_restart *r);

/*
 * A failure happened at `now`. Returns 1 and sets *delay when the job may
 * restart, 0 when the strategy gives up.
 */
int ck_restart_on_failure(ck_restart *r, ck_time now, ck_time *delay);

const char *ck_restart_name(int type);

#endif
