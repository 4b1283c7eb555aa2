#include "debloat.h"

#include "error.h"

void ck_debloat_init(ck_debloat *d, uint32_t max, int64_t target_ns, uint32_t samples,
                     uint32_t threshold_pct)
{
    d->max = max < CK_DEBLOAT_MIN ? CK_DEBLOAT_MIN : max;
    d->last = d->max;
    d->ema = d->max;
    d->alpha = 2.0 / ((double)(samples ? samples : 1) + 1.0);
    d->threshold_pct = threshold_pct;
    d->target_ns = target_ns;
}

uint32_t ck_debloat_update(ck_debloat *d, uint64_t throughput, uint32_t buffers)
{
    if (buffers < 1)
        buffers = 1;
    double desired_total = (double)throughput * (double)d->target_ns / (double)CK_NS_PER_S;
    double want = desired_total / buffers;
    if (want > 2.0 * d->ema)
        want = 2.0 * d->ema;
    d->ema += d->alpha * (want - d->ema);
    if (d->ema < CK_DEBLOAT_MIN)
        d->ema = CK_DEBLOAT_MIN;
    if (d->ema > d->max)
        d->ema = d->max;
    uint32_t size = (uint32_t)(d->ema + 0.5) /* positive: rounds as Math.round */;
    if (size == d->last)
        return 0;
    if (size > CK_DEBLOAT_MIN && size < d->max) {
        uint32_t delta = (uint32_t)((double)d->last * d->threshold_pct / 100.0);
        uint32_t diff = size > d->last ? size - d->last : d->last - size;
        if (diff < delta)
            return 0;
    }
    d->last = size;
    return size;
}

#define CK_INV_MODULE "debloat"

int ck_debloat_check(const ck_debloat *d, ck_inv *v)
{
    CK_INV(v, 1, d->last >= CK_DEBLOAT_MIN && d->last <= d->max, "announced %u, bounds [%u, %u]",
           d->last, CK_DEBLOAT_MIN, d->max);
    CK_INV(v, 2, d->ema >= CK_DEBLOAT_MIN && d->ema <= d->max, "smoothed %.1f, bounds [%u, %u]",
           d->ema, CK_DEBLOAT_MIN, d->max);
    return 0;
}
