#include "metrics.h"

#include <stdlib.h>

#include "bytes.h"
#include "error.h"

static inline int bucket_of(int64_t v)
{
    if (v < 0)
        v = 0;
    if (v < CK_HIST_SUB)
        return (int)v;
    int e = 63 - __builtin_clzll((unsigned long long)v);
    if (e > CK_HIST_MAX_EXP)
        return CK_HIST_BUCKETS - 1;
    int sub = (int)((v >> (e - 5)) & (CK_HIST_SUB - 1));
    return (e - 4) * CK_HIST_SUB + sub;
}

/* Midpoint of bucket b. */
static int64_t bucket_value(int b)
{
    if (b < CK_HIST_SUB)
        return b;
    int e = b / CK_HIST_SUB + 4, sub = b % CK_HIST_SUB;
    int64_t lo = ((int64_t)(CK_HIST_SUB + sub)) << (e - 5);
    int64_t width = (int64_t)1 << (e - 5);
    return lo + width / 2;
}

void ck_hist_add_n(ck_hist *h, int64_t v, uint32_t n)
{
    h->c[bucket_of(v)] += n;
    h->n += n;
    if (v > h->max)
        h->max = v;
}

void ck_hist_add(ck_hist *h, int64_t v)
{
    ck_hist_add_n(h, v, 1);
}

void ck_hist_add_lat(ck_hist *h, int64_t t, const int64_t *ingest, size_t n)
{
    if (n == 0)
        return;
    int64_t oldest = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (ingest[i] < oldest)
            oldest = ingest[i];
        h->c[bucket_of(t - ingest[i])]++;
    }
    h->n += n;
    if (t - oldest > h->max)
        h->max = t - oldest;
}

void ck_hist_merge(ck_hist *dst, const ck_hist *src)
{
    for (int i = 0; i < CK_HIST_BUCKETS; i++)
        dst->c[i] += src->c[i];
    dst->n += src->n;
    if (src->max > dst->max)
        dst->max = src->max;
}

int64_t ck_hist_quantile(const ck_hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->n);
    if (rank >= h->n)
        rank = h->n - 1;
    uint64_t seen = 0;
    for (int i = 0; i < CK_HIST_BUCKETS; i++) {
        seen += h->c[i];
        if (seen > rank) {
            int64_t v = bucket_value(i);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}

void ck_metrics_init(ck_metrics *m)
{
    memset(m, 0, sizeof(*m));
}

void ck_metrics_free(ck_metrics *m)
{
    for (uint32_t i = 0; i < m->nsec; i++)
        free(m->sec[i].lat);
    free(m->sec);
    memset(m, 0, sizeof(*m));
}

static ck_sec *sec_at(ck_metrics *m, ck_time t)
{
    if (t < 0)
        t = 0;
    int64_t s = t / CK_NS_PER_S;
    if (s > 10000000)
        return NULL;
    if ((uint32_t)s >= m->nsec) {
        /* grown by doubling: a task busy for hours of simulated time is
         * accounted second by second, and growing by one each time made
         * that quadratic */
        uint32_t n = (uint32_t)s + 1;
        if (n > m->seccap) {
            uint32_t cap = CK_MAX(n, 2 * m->seccap);
            ck_sec *ns = realloc(m->sec, cap * sizeof(*ns));
            if (!ns)
                return NULL;
            m->sec = ns;
            m->seccap = cap;
        }
        memset(m->sec + m->nsec, 0, (n - m->nsec) * sizeof(*m->sec));
        m->nsec = n;
    }
    return &m->sec[s];
}

int ck_metrics_in(ck_metrics *m, ck_time t, uint64_t n)
{
    ck_sec *s = sec_at(m, t);
    if (!s)
        return CK_ENOMEM;
    s->in += n;
    return CK_OK;
}

int ck_metrics_gauges(ck_metrics *m, ck_time t, int64_t inflight_in, int64_t inflight_out,
                      int64_t buf_size)
{
    ck_sec *s = sec_at(m, t);
    if (!s)
        return CK_ENOMEM;
    s->inflight_in = CK_MAX(s->inflight_in, inflight_in);
    s->inflight_out = CK_MAX(s->inflight_out, inflight_out);
    s->buf_size = CK_MAX(s->buf_size, buf_size);
    return CK_OK;
}

static int has_gauges(const ck_sec *s)
{
    return s->inflight_in || s->inflight_out || s->buf_size;
}

int ck_metrics_merge_gauges(ck_metrics *dst, const ck_metrics *src)
{
    for (uint32_t i = 0; i < src->nsec; i++) {
        const ck_sec *s = &src->sec[i];
        if (!has_gauges(s))
            continue;
        int rc = ck_metrics_gauges(dst, (ck_time)i * CK_NS_PER_S, s->inflight_in,
                                   s->inflight_out, s->buf_size);
        if (rc)
            return rc;
    }
    return CK_OK;
}

/* The second of t, with its latency histogram; NULL when out of memory. */
static ck_sec *sec_lat_at(ck_metrics *m, ck_time t)
{
    ck_sec *s = sec_at(m, t);
    if (s && !s->lat && !(s->lat = calloc(1, sizeof(ck_hist))))
        return NULL;
    return s;
}

int ck_metrics_out(ck_metrics *m, ck_time t, int64_t lat_ns)
{
    ck_sec *s = sec_lat_at(m, t);
    if (!s)
        return CK_ENOMEM;
    s->out++;
    ck_hist_add(s->lat, lat_ns);
    return CK_OK;
}

int ck_metrics_out_buckets(ck_metrics *m, ck_time t, int64_t base, const uint32_t *cnt,
                           size_t nb, int shift)
{
    ck_sec *s = sec_lat_at(m, t);
    if (!s)
        return CK_ENOMEM;
    for (size_t i = 0; i < nb; i++) {
        if (!cnt[i])
            continue;
        int64_t mid = ((base + (int64_t)i) << shift) + ((int64_t)1 << (shift - 1));
        int64_t v = t - mid;
        ck_hist_add_n(s->lat, v > 0 ? v : 0, cnt[i]);
        s->out += cnt[i];
    }
    return CK_OK;
}

int ck_metrics_out_batch(ck_metrics *m, ck_time t, const int64_t *ingest, size_t n)
{
    ck_sec *s = sec_lat_at(m, t);
    if (!s)
        return CK_ENOMEM;
    s->out += n;
    ck_hist_add_lat(s->lat, t, ingest, n);
    return CK_OK;
}

int ck_metrics_total_latency(const ck_metrics *m, ck_hist *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < m->nsec; i++)
        if (m->sec[i].lat)
            ck_hist_merge(out, m->sec[i].lat);
    return CK_OK;
}

int ck_metrics_time(ck_metrics *m, ck_time from, ck_time to, int mode)
{
    while (from < to) {
        ck_sec *s = sec_at(m, from);
        if (!s)
            return CK_ENOMEM;
        ck_time end = (from / CK_NS_PER_S + 1) * CK_NS_PER_S;
        int64_t d = (end < to ? end : to) - from;
        if (mode == CK_TIME_BUSY)
            s->busy_ns += d;
        else if (mode == CK_TIME_BACKPRESSURED)
            s->bp_ns += d;
        else
            s->idle_ns += d;
        from += d;
    }
    return CK_OK;
}

static int merge(ck_metrics *dst, const ck_metrics *src, int hists)
{
    if (src->nsec > 0 && !sec_at(dst, (ck_time)(src->nsec - 1) * CK_NS_PER_S))
        return CK_ENOMEM;
    for (uint32_t i = 0; i < src->nsec; i++) {
        ck_sec *d = &dst->sec[i];
        const ck_sec *s = &src->sec[i];
        d->in += s->in;
        d->out += s->out;
        d->busy_ns += s->busy_ns;
        d->bp_ns += s->bp_ns;
        d->idle_ns += s->idle_ns;
        d->inflight_in = CK_MAX(d->inflight_in, s->inflight_in);
        d->inflight_out = CK_MAX(d->inflight_out, s->inflight_out);
        d->buf_size = CK_MAX(d->buf_size, s->buf_size);
        if (hists && s->lat) {
            if (!d->lat && !(d->lat = calloc(1, sizeof(ck_hist))))
                return CK_ENOMEM;
            ck_hist_merge(d->lat, s->lat);
        }
    }
    return CK_OK;
}

int ck_metrics_merge(ck_metrics *dst, const ck_metrics *src)
{
    return merge(dst, src, 1);
}

int ck_metrics_merge_counts(ck_metrics *dst, const ck_metrics *src)
{
    return merge(dst, src, 0);
}

/* ---- encoding ------------------------------------------------------------ */

#define METRICS_MAGIC 0x324d4b43u /* "CKM2": seconds carry gauges */
#define CK_GAUGE_MAX (INT64_C(1) << 48) /* no subtask holds a quarter petabyte in flight */

static void w_hist(ck_wbuf *w, const ck_hist *h)
{
    if (!h) {
        ck_wbuf_u32(w, 0xffffffffu);
        return;
    }
    uint32_t nz = 0;
    for (int i = 0; i < CK_HIST_BUCKETS; i++)
        nz += h->c[i] != 0;
    ck_wbuf_u32(w, nz);
    ck_wbuf_u64(w, (uint64_t)h->max);
    for (int i = 0; i < CK_HIST_BUCKETS; i++) {
        if (h->c[i]) {
            ck_wbuf_u32(w, (uint32_t)i);
            ck_wbuf_u32(w, h->c[i]);
        }
    }
}

int ck_metrics_encode(const ck_metrics *m, uint8_t **out, size_t *len)
{
    ck_wbuf w = {0};
    const ck_task_stats *t = &m->task;
    ck_wbuf_u32(&w, METRICS_MAGIC);
    ck_wbuf_u32(&w, t->vertex);
    ck_wbuf_u32(&w, t->subtask);
    ck_wbuf_u32(&w, t->host);
    ck_wbuf_u64(&w, t->records_in);
    ck_wbuf_u64(&w, t->records_out);
    ck_wbuf_u64(&w, t->bytes_in);
    ck_wbuf_u64(&w, t->bytes_out);
    ck_wbuf_u64(&w, t->buffers_in);
    ck_wbuf_u64(&w, t->buffers_out);
    ck_wbuf_u64(&w, t->late_dropped);
    ck_wbuf_u64(&w, (uint64_t)t->busy_ns);
    ck_wbuf_u64(&w, (uint64_t)t->backpressured_ns);
    ck_wbuf_u64(&w, (uint64_t)t->idle_ns);
    ck_wbuf_u64(&w, (uint64_t)t->start_ns);
    ck_wbuf_u64(&w, (uint64_t)t->end_ns);
    ck_wbuf_u64(&w, (uint64_t)t->lag_records);
    ck_wbuf_u64(&w, (uint64_t)t->lag_ns);
    ck_wbuf_u64(&w, (uint64_t)t->first_out_ns);
    /* The seconds from the first with anything in it: a report covers the
     * last second or two, not the whole run. */
    uint32_t first = 0;
    while (first < m->nsec && !m->sec[first].in && !m->sec[first].out && !m->sec[first].lat &&
           !m->sec[first].busy_ns && !m->sec[first].bp_ns && !m->sec[first].idle_ns &&
           !has_gauges(&m->sec[first]))
        first++;
    ck_wbuf_u32(&w, first);
    ck_wbuf_u32(&w, m->nsec - first);
    for (uint32_t i = first; i < m->nsec; i++) {
        ck_wbuf_u64(&w, m->sec[i].in);
        ck_wbuf_u64(&w, m->sec[i].out);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].busy_ns);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].bp_ns);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].idle_ns);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].inflight_in);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].inflight_out);
        ck_wbuf_u64(&w, (uint64_t)m->sec[i].buf_size);
        w_hist(&w, m->sec[i].lat);
    }
    if (w.err) {
        free(w.p);
        return CK_ENOMEM;
    }
    *out = w.p;
    *len = w.len;
    return CK_OK;
}

static int r_hist(ck_rbuf *r, ck_hist **out, uint32_t *nhists)
{
    uint32_t nz = ck_rbuf_u32(r);
    *out = NULL;
    if (r->err)
        return CK_ECORRUPT;
    if (nz == 0xffffffffu)
        return CK_OK;
    if (nz > CK_HIST_BUCKETS || ++*nhists > CK_METRICS_MAX_HISTS)
        return CK_ECORRUPT;
    ck_hist *h = calloc(1, sizeof(*h));
    if (!h)
        return CK_ENOMEM;
    h->max = (int64_t)ck_rbuf_u64(r);
    for (uint32_t k = 0; k < nz; k++) {
        uint32_t i = ck_rbuf_u32(r), c = ck_rbuf_u32(r);
        if (r->err || i >= CK_HIST_BUCKETS) {
            free(h);
            return CK_ECORRUPT;
        }
        h->c[i] += c;
        h->n += c;
    }
    *out = h;
    return CK_OK;
}

int ck_metrics_decode(ck_metrics *m, const uint8_t *p, size_t len)
{
    ck_rbuf r = {p, len, 0, 0};
    ck_metrics_init(m);
    if (ck_rbuf_u32(&r) != METRICS_MAGIC)
        return CK_ECORRUPT;
    ck_task_stats *t = &m->task;
    t->vertex = ck_rbuf_u32(&r);
    t->subtask = ck_rbuf_u32(&r);
    t->host = ck_rbuf_u32(&r);
    t->records_in = ck_rbuf_u64(&r);
    t->records_out = ck_rbuf_u64(&r);
    t->bytes_in = ck_rbuf_u64(&r);
    t->bytes_out = ck_rbuf_u64(&r);
    t->buffers_in = ck_rbuf_u64(&r);
    t->buffers_out = ck_rbuf_u64(&r);
    t->late_dropped = ck_rbuf_u64(&r);
    t->busy_ns = (int64_t)ck_rbuf_u64(&r);
    t->backpressured_ns = (int64_t)ck_rbuf_u64(&r);
    t->idle_ns = (int64_t)ck_rbuf_u64(&r);
    t->start_ns = (int64_t)ck_rbuf_u64(&r);
    t->end_ns = (int64_t)ck_rbuf_u64(&r);
    t->lag_records = (int64_t)ck_rbuf_u64(&r);
    t->lag_ns = (int64_t)ck_rbuf_u64(&r);
    t->first_out_ns = (int64_t)ck_rbuf_u64(&r);
    uint32_t first = ck_rbuf_u32(&r), count = ck_rbuf_u32(&r);
    /* Each second takes at least 68 bytes: reject counts the input cannot hold. */
    if (r.err || count > (len - r.pos) / 68 || first > CK_METRICS_MAX_SECOND ||
        count > CK_METRICS_MAX_SECOND - first)
        return CK_ECORRUPT;
    uint32_t nsec = first + count;
    if (nsec) {
        m->sec = calloc(nsec, sizeof(ck_sec));
        if (!m->sec)
            return CK_ENOMEM;
        m->nsec = m->seccap = nsec;
    }
    int rc = CK_OK;
    uint32_t nhists = 0;
    for (uint32_t i = first; i < nsec && !rc; i++) {
        ck_sec *sc = &m->sec[i];
        sc->in = ck_rbuf_u64(&r);
        sc->out = ck_rbuf_u64(&r);
        sc->busy_ns = (int64_t)ck_rbuf_u64(&r);
        sc->bp_ns = (int64_t)ck_rbuf_u64(&r);
        sc->idle_ns = (int64_t)ck_rbuf_u64(&r);
        sc->inflight_in = (int64_t)ck_rbuf_u64(&r);
        sc->inflight_out = (int64_t)ck_rbuf_u64(&r);
        sc->buf_size = (int64_t)ck_rbuf_u64(&r);
        /* Times of one second: at most a second per subtask merged into it,
         * and no subtask sends more than its own. */
        if (sc->busy_ns < 0 || sc->bp_ns < 0 || sc->idle_ns < 0 || sc->busy_ns > CK_NS_PER_S ||
            sc->bp_ns > CK_NS_PER_S || sc->idle_ns > CK_NS_PER_S || sc->inflight_in < 0 ||
            sc->inflight_out < 0 || sc->buf_size < 0 || sc->inflight_in > CK_GAUGE_MAX ||
            sc->inflight_out > CK_GAUGE_MAX || sc->buf_size > CK_GAUGE_MAX)
            rc = CK_ECORRUPT;
        else
            rc = r_hist(&r, &sc->lat, &nhists);
    }
    if (!rc && (r.err || r.pos != len))
        rc = CK_ECORRUPT;
    if (rc)
        ck_metrics_free(m);
    return rc;
}
