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

static int cmp_timer(const void *a, const void *b)
{
    const ck_timer *x = a, *y = b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

int ck_timerq_copy(const ck_timerq *q, ck_timer **out, size_t *n)
{
    ck_timer *c = malloc((q->n ? q->n : 1) * sizeof(*c));
    if (!c)
        return CK_ENOMEM;
    for (size_t i = 0; i < q->n; i++) {
        c[i] = q->h[i];
        c[i].key = malloc(q->h[i].klen ? q->h[i].klen : 1);
        if (!c[i].key) {
            while (i-- > 0)
                free(c[i].key);
            free(c);
            return CK_ENOMEM;
        }
        memcpy(c[i].key, q->h[i].key, q->h[i].klen);
    }
    /* In firing order, so that a restore registers them in the same order. */
    qsort(c, q->n, sizeof(*c), cmp_timer);
    *out = c;
    *n = q->n;
    return CK_OK;
}
