#include "buggify.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The streams of the run's seed the hosts draw from: host h's of kind k is
 * BUGGIFY_STREAM + 4 h + k (apart from the workload's, the engine's and
 * the nemesis's). */
#define BUGGIFY_STREAM UINT64_C(0x6275676779000000)
enum { K_ERRORS, K_DELAY, K_ALLOC, NKINDS };

int ck_buggify_init(ck_buggify *b, const ck_fault *faults, int n, int ntm, uint64_t seed)
{
    memset(b, 0, sizeof(*b));
    b->faults = faults;
    b->n = n;
    b->ntm = ntm;
    b->on = calloc((size_t)n + 1, 1);
    b->hits = calloc((size_t)n + 1, sizeof(*b->hits));
    b->rng = calloc(((size_t)ntm + 1) * NKINDS, sizeof(*b->rng));
    if (!b->on || !b->hits || !b->rng) {
        ck_buggify_free(b);
        return CK_ENOMEM;
    }
    for (int h = 0; h <= ntm; h++)
        for (int k = 0; k < NKINDS; k++)
            ck_rng_init(&b->rng[h * NKINDS + k], seed,
                        BUGGIFY_STREAM + 4 * (uint64_t)h + (uint64_t)k);
    return CK_OK;
}

void ck_buggify_free(ck_buggify *b)
{
    free(b->on);
    free(b->hits);
    free(b->rng);
    memset(b, 0, sizeof(*b));
}

void ck_buggify_set(ck_buggify *b, int i, int on)
{
    if (i < 0 || i >= b->n || !ck_fault_in_process(b->faults[i].kind) || b->on[i] == !!on)
        return;
    b->on[i] = (uint8_t)!!on;
    b->non += on ? 1 : -1;
}

/* The host index of a platform's host (-1: the job manager), or -1. */
static int host_of(const ck_buggify *b, int host)
{
    if (host < 0)
        return b->ntm;
    return host <= b->ntm ? host : -1;
}

static int acts_on(const ck_buggify *b, int i, ck_fault_kind kind, int h)
{
    const ck_fault *f = &b->faults[i];
    return b->on[i] && f->kind == kind && (f->host < 0 || f->host == h);
}

static void hit(ck_buggify *b, int i)
{
    b->hits[i]++;
    if (b->hit)
        b->hit(b->ctx, i);
}

/* A draw of host h's stream of kind k against probability p: each fault
 * in force draws once per operation, so that what one fault hits does not
 * depend on another's probability. */
static int draw(ck_buggify *b, int h, int k, double p)
{
    return p >= 1.0 || ck_rng_double(&b->rng[h * NKINDS + k]) < p;
}

int ck_buggify_store_error(ck_buggify *b, int host, int op)
{
    int h = ck_buggify_any(b) ? host_of(b, host) : -1;
    if (h < 0)
        return -1;
    int which = -1;
    for (int i = 0; i < b->n; i++)
        if (acts_on(b, i, CK_FAULT_STORE_ERRORS, h) && (b->faults[i].ops & op) &&
            draw(b, h, K_ERRORS, b->faults[i].prob) && which < 0)
            which = i;
    if (which >= 0)
        hit(b, which);
    return which;
}

ck_time ck_buggify_store_delay(ck_buggify *b, int host)
{
    int h = ck_buggify_any(b) ? host_of(b, host) : -1;
    if (h < 0)
        return 0;
    ck_time late = 0;
    int which = -1;
    for (int i = 0; i < b->n; i++) {
        if (!acts_on(b, i, CK_FAULT_STORE_DELAY, h) || !draw(b, h, K_DELAY, b->faults[i].prob))
            continue;
        /* up to `delay`, at least 1 us: a completion hit is late */
        ck_time d = b->faults[i].delay;
        ck_time x = 1000 + (ck_time)ck_rng_below(&b->rng[h * NKINDS + K_DELAY],
                                                  (uint64_t)(d > 1000 ? d - 1000 : 0) + 1);
        if (x > late) {
            late = x;
            which = i;
        }
    }
    if (which >= 0)
        hit(b, which);
    return late;
}

int ck_buggify_alloc(ck_buggify *b, int host, int point)
{
    int h = ck_buggify_any(b) ? host_of(b, host) : -1;
    if (h < 0)
        return 0;
    int which = -1;
    for (int i = 0; i < b->n; i++)
        if (acts_on(b, i, CK_FAULT_ALLOC_FAILURE, h) && b->faults[i].point == point &&
            draw(b, h, K_ALLOC, b->faults[i].prob) && which < 0)
            which = i;
    if (which >= 0)
        hit(b, which);
    return which >= 0;
}
