#include "restart.h"

#include <math.h>
#include <stdlib.h>

const char *ck_restart_name(int type)
{
    switch (type) {
    case CK_RS_NONE:
        return "none";
    case CK_RS_FIXED_DELAY:
        return "fixed-delay";
    case CK_RS_FAILURE_RATE:
        return "failure-rate";
    case CK_RS_EXPONENTIAL_DELAY:
        return "exponential-delay";
    }
    return "default";
}

void ck_restart_init(ck_restart *r, const ck_config *cfg, uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->type = (int)ck_cfg(cfg, CK_CFG_RS_TYPE);
    if (r->type == CK_RS_DEFAULT)
        r->type = ck_cfg(cfg, CK_CFG_CP_INTERVAL) > 0 ? CK_RS_EXPONENTIAL_DELAY : CK_RS_NONE;
    ck_rng_init(&r->rng, seed, 0x72657374617274ULL); /* "restart" */
    r->next_restart = CK_TIME_NEVER;
}

void ck_restart_free(ck_restart *r)
{
    free(r->failures);
    r->failures = NULL;
}

/* Flink's calculateActualBackoffTime, in milliseconds: the backoff of
 * attempt r->attempt plus a jitter drawn from +/- jitter-factor of it,
 * then clamped to [initial, max]. */
static int64_t backoff_ms(ck_restart *r)
{
    const ck_config *c = r->cfg;
    int64_t initial = ck_cfg(c, CK_CFG_RS_EXP_INITIAL) / CK_NS_PER_MS;
    int64_t max = ck_cfg(c, CK_CFG_RS_EXP_MAX) / CK_NS_PER_MS;
    double mult = (double)ck_cfg(c, CK_CFG_RS_EXP_MULT) / 1000.0;
    double jitter = (double)ck_cfg(c, CK_CFG_RS_EXP_JITTER) / 1000.0;
    /* Held far past any max (Java's cast saturates; here the sum with the
     * jitter must not overflow): the clamp makes it max either way. */
    double b = (double)initial * pow(mult, r->attempt);
    int64_t backoff = b < (double)(INT64_MAX / 4) ? (int64_t)b : INT64_MAX / 4;
    int64_t j = 0;
    if (jitter > 0) {
        int64_t offset = (int64_t)((double)backoff * jitter);
        j = (int64_t)ck_rng_below(&r->rng, 2 * (uint64_t)offset + 1) - offset;
    }
    int64_t d = backoff + j;
    return d > max ? max : d < initial ? initial : d;
}

static int exponential(ck_restart *r, ck_time now, ck_time *delay)
{
    const ck_config *c = r->cfg;
    /* A restart is pending: the failure merges into it. */
    if (r->next_restart != CK_TIME_NEVER && now <= r->next_restart) {
        *delay = r->next_restart - now;
        return CK_RESTART_MERGED;
    }
    /* The job ran long enough since its last restart: start over. */
    if (r->next_restart == CK_TIME_NEVER ||
        now - r->next_restart >= ck_cfg(c, CK_CFG_RS_EXP_RESET)) {
        r->attempt = 0;
        r->restarts = 0;
    }
    *delay = backoff_ms(r) * CK_NS_PER_MS;
    r->next_restart = now + *delay;
    r->attempt++;
    if (r->attempt > ck_cfg(c, CK_CFG_RS_EXP_ATTEMPTS))
        return CK_RESTART_GIVE_UP;
    r->restarts++;
    return CK_RESTART_NEW;
}

int ck_restart_on_failure(ck_restart *r, ck_time now, ck_time *delay)
{
    const ck_config *c = r->cfg;
    switch (r->type) {
    case CK_RS_FIXED_DELAY:
        if (r->restarts >= ck_cfg(c, CK_CFG_RS_FD_ATTEMPTS))
            return 0;
        *delay = ck_cfg(c, CK_CFG_RS_FD_DELAY);
        break;
    case CK_RS_FAILURE_RATE: {
        ck_time window = ck_cfg(c, CK_CFG_RS_FR_INTERVAL);
        int kept = 0;
        for (int i = 0; i < r->nfail; i++)
            if (r->failures[i] > now - window)
                r->failures[kept++] = r->failures[i];
        r->nfail = kept;
        if (r->nfail == r->capfail) {
            int cap = r->capfail ? r->capfail * 2 : 8;
            ck_time *v = realloc(r->failures, (size_t)cap * sizeof(*v));
            if (!v)
                return 0;
            r->failures = v;
            r->capfail = cap;
        }
        r->failures[r->nfail++] = now;
        if (r->nfail > ck_cfg(c, CK_CFG_RS_FR_MAX))
            return 0;
        *delay = ck_cfg(c, CK_CFG_RS_FR_DELAY);
        break;
    }
    case CK_RS_EXPONENTIAL_DELAY:
        return exponential(r, now, delay);
    default:
        return 0;
    }
    r->restarts++;
    return CK_RESTART_NEW;
}
