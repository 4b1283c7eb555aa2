#include "timers.h"

#include <stdlib.h>

#include "error.h"

void ck_timerq_init(ck_timerq *q)
{
    memset(q, 0, sizeof(*q));
}

void ck_timerq_free(ck_timerq *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->h[i].key);
    free(q->h);
    memset(q, 0, sizeof(*q));
}

static inline int before(const ck_timer *a, const ck_timer *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

int ck_timerq_add(ck_timerq *q, int64_t ts, int kg, int32_t jhash,
                  const char *key, uint32_t klen, int64_t ns)
{
    if (q->n == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 64;
        ck_timer *nh = realloc(q->h, ncap * sizeof(*nh));
        if (!nh)
            return CK_ENOMEM;
        q->h = nh;
        q->cap = ncap;
    }
    char *k = malloc(klen ? klen : 1);
    if (!k)
        return CK_ENOMEM;
    memcpy(k, key, klen);
    ck_timer t = {ts, q->seq++, ns, jhash, kg, klen, k};
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&t, &q->h[parent]))
            break;
        q->h[i] = q->h[parent];
        i = parent;
    }
    q->h[i] = t;
    return CK_OK;
}

int ck_timerq_pop(ck_timerq *q, int64_t wm, ck_timer *out)
{
    if (q->n == 0 || q->h[0].ts > wm)
        return 0;
    *out = q->h[0];
    ck_timer last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const ck_timer *best = &last;
        if (l < q->n && before(&q->h[l], best)) {
            m = l;
            best = &q->h[l];
        }
        if (r < q->n && before(&q->h[r], best))
            m = r;
        if (m == i)
            break;
        q->h[i] = q->h[m];
        i = m;
    }
    if (q->n > 0)
        q->h[i] = last;
    return 1;
}
