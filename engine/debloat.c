#include "debloat.h"

#include "error.h"

void ck_debloat_init(ck_debloat *d, uint32_t max, uint32_t min, int64_t target_ns,
                     uint32_t samples, uint32_t threshold_pct)
{
    d->min = min < CK_DEBLOAT_MIN ? CK_DEBLOAT_MIN : min;
    d->max = max < d->min ? d->min : max;
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
    if (d->ema < d->min)
        d->ema = d->min;
    if (d->ema > d->max)
        d->ema = d->max;
    uint32_t size = (uint32_t)(d->ema + 0.5) /* positive: rounds as Math.round */;
    if (size == d->last)
        return 0;
    if (size > d->min && size < d->max) {
        uint32_t delta = (uint32_t)((double)d->last * d->threshold_pct / 100.0);
        uint32_t diff = size > d->last ? size - d->last : d->last - size;
        if (diff < delta)
            return 0;
    }
    d->last = size;
    return size;
}

void ck_tput_init(ck_tput *t)
{
    *t = (ck_tput){.start = CK_TPUT_PAUSED};
}

void ck_tput_resume(ck_tput *t, ck_time now)
{
    if (t->start == CK_TPUT_PAUSED)
        t->start = now;
}

void ck_tput_add(ck_tput *t, uint64_t bytes, ck_time now)
{
    ck_tput_resume(t, now);
    t->bytes += bytes;
}

void ck_tput_pause(ck_tput *t, ck_time now)
{
    if (t->start != CK_TPUT_PAUSED && now > t->start)
        t->time_ns += now - t->start;
    t->start = CK_TPUT_PAUSED;
}

uint64_t ck_tput_calc(ck_tput *t, ck_time now)
{
    if (t->start != CK_TPUT_PAUSED) {
        if (now > t->start)
            t->time_ns += now - t->start;
        t->start = now;
    }
    t->last = ck_debloat_throughput(t->bytes, t->time_ns, t->last);
    t->bytes = 0;
    t->time_ns = 0;
    return t->last;
}

#define CK_INV_MODULE "debloat"

int ck_debloat_check(const ck_debloat *d, ck_inv *v)
{
    CK_INV(v, 1, d->last >= d->min && d->last <= d->max, "announced %u, bounds [%u, %u]",
           d->last, d->min, d->max);
    CK_INV(v, 2, d->ema >= d->min && d->ema <= d->max, "smoothed %.1f, bounds [%u, %u]", d->ema,
           d->min, d->max);
    return 0;
}
