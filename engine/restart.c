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
    case CK_RS_EXPONENTIAL_DELAY: {
        /* The job ran long enough since its last restart: start over. */
        if (r->next_restart == CK_TIME_NEVER ||
            now - r->next_restart >= ck_cfg(c, CK_CFG_RS_EXP_RESET)) {
            r->attempt = 0;
            r->restarts = 0;
        }
        if (r->restarts >= ck_cfg(c, CK_CFG_RS_EXP_ATTEMPTS))
            return 0;
        double initial = (double)ck_cfg(c, CK_CFG_RS_EXP_INITIAL);
        double max = (double)ck_cfg(c, CK_CFG_RS_EXP_MAX);
        double mult = (double)ck_cfg(c, CK_CFG_RS_EXP_MULT) / 1000.0;
        double backoff = initial * pow(mult, r->attempt);
        if (backoff > max)
            backoff = max; /* (no overflow into the jitter below) */
        double jitter = (double)ck_cfg(c, CK_CFG_RS_EXP_JITTER) / 1000.0;
        double d = backoff + backoff * jitter * (2.0 * ck_rng_double(&r->rng) - 1.0);
        d = d < initial ? initial : d > max ? max : d;
        *delay = (ck_time)d;
        r->next_restart = now + *delay;
        r->attempt++;
        break;
    }
    default:
        return 0;
    }
    r->restarts++;
    return 1;
}
