#include "workload.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "crc32c.h"
#include "error.h"
#include "rng.h"

int32_t ck_kafka_murmur2(const uint8_t *data, size_t len)
{
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t n4 = len / 4;
    for (size_t i = 0; i < n4; i++) {
        const uint8_t *p = data + i * 4;
        uint32_t k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                     ((uint32_t)p[3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = data + (len & ~(size_t)3);
    switch (len % 4) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

int ck_kafka_partition(const char *key, size_t len, int partitions)
{
    uint32_t h = (uint32_t)ck_kafka_murmur2((const uint8_t *)key, len) & 0x7fffffffu;
    return (int)(h % (uint32_t)partitions);
}

double ck_workload_rate(const ck_workload_spec *s, ck_time t)
{
    for (int i = 0; i < s->nbursts; i++)
        if (t >= s->bursts[i].at && t < s->bursts[i].at + s->bursts[i].duration)
            return s->bursts[i].rps;
    double rps = 0;
    for (int i = 0; i < s->nsteps; i++)
        if (s->steps[i].at <= t)
            rps = s->steps[i].rps;
    return rps;
}

/* The next time after t at which the rate may change, or CK_TIME_NEVER. */
static ck_time next_change(const ck_workload_spec *s, ck_time t)
{
    ck_time best = CK_TIME_NEVER;
    for (int i = 0; i < s->nsteps; i++)
        if (s->steps[i].at > t && s->steps[i].at < best)
            best = s->steps[i].at;
    for (int i = 0; i < s->nbursts; i++) {
        ck_time a = s->bursts[i].at, b = a + s->bursts[i].duration;
        if (a > t && a < best)
            best = a;
        if (b > t && b < best)
            best = b;
    }
    return best;
}

double ck_workload_expected_records(const ck_workload_spec *s)
{
    double n = 0;
    for (ck_time t = 0; t < s->duration;) {
        ck_time next = next_change(s, t);
        if (next == CK_TIME_NEVER || next > s->duration)
            next = s->duration;
        n += ck_workload_rate(s, t) * (double)(next - t) / 1e9;
        t = next;
    }
    return n;
}

static int part_push(ck_wl_part *p, ck_time at, int64_t ts, uint32_t key, int32_t value)
{
    if (p->n == p->cap) {
        int64_t cap = p->cap ? p->cap * 2 : 1024;
        ck_time *a = realloc(p->at, (size_t)cap * sizeof(*a));
        if (a)
            p->at = a;
        int64_t *t = realloc(p->ts, (size_t)cap * sizeof(*t));
        if (t)
            p->ts = t;
        uint32_t *k = realloc(p->key, (size_t)cap * sizeof(*k));
        if (k)
            p->key = k;
        int32_t *v = realloc(p->value, (size_t)cap * sizeof(*v));
        if (v)
            p->value = v;
        if (!a || !t || !k || !v)
            return CK_ENOMEM;
        p->cap = cap;
    }
    p->at[p->n] = at;
    p->ts[p->n] = ts;
    p->key[p->n] = key;
    p->value[p->n] = value;
    p->n++;
    return CK_OK;
}

/* ---- topic interface ---------------------------------------------------------- */

static int t_npartitions(const void *ctx)
{
    return ((const ck_workload *)ctx)->spec.partitions;
}

static int64_t t_size(const void *ctx, int partition)
{
    return ((const ck_workload *)ctx)->parts[partition].n;
}

static ck_time t_append_time(const void *ctx, int partition, int64_t off)
{
    const ck_workload *w = ctx;
    return w->spec.backlog ? 0 : w->parts[partition].at[off];
}

static void t_read(const void *ctx, int partition, int64_t off, ck_rec *out)
{
    const ck_workload *w = ctx;
    const ck_wl_part *p = &w->parts[partition];
    uint32_t klen;
    out->key = ck_workload_key(w, p->key[off], &klen);
    out->klen = klen;
    out->ts = p->ts[off];
    out->value = p->value[off];
    out->ingest = w->spec.backlog ? 0 : p->at[off];
    uint32_t fixed = CK_REC_FIXED + klen;
    out->plen = w->spec.record_bytes > fixed ? w->spec.record_bytes - fixed : 0;
    out->payload = w->payload + (size_t)(off % 61);
    out->jhash = 0;
    out->hashed = 0;
}

static int64_t t_readable(const void *ctx, int partition, int64_t off, int64_t limit,
                          ck_time now)
{
    const ck_workload *w = ctx;
    if (w->spec.backlog)
        return limit;
    const ck_time *at = w->parts[partition].at;
    while (off < limit && at[off] <= now)
        off++;
    return off;
}

/* t_read for a run: what does not change from record to record once. */
static void t_read_n(const void *ctx, int partition, int64_t off, int n, ck_rec *out)
{
    const ck_workload *w = ctx;
    const ck_wl_part *p = &w->parts[partition];
    const uint32_t fixed = CK_REC_FIXED, rb = w->spec.record_bytes;
    const int backlog = w->spec.backlog;
    int64_t ph = off % 61;
    for (int i = 0; i < n; i++, off++) {
        ck_rec *r = &out[i];
        uint32_t id = p->key[off];
        uint32_t klen = (uint32_t)(w->key_off[id + 1] - w->key_off[id]);
        r->key = w->key_text + w->key_off[id];
        r->klen = klen;
        r->ts = p->ts[off];
        r->value = p->value[off];
        r->ingest = backlog ? 0 : p->at[off];
        r->plen = rb > fixed + klen ? rb - fixed - klen : 0;
        r->payload = w->payload + ph;
        r->jhash = 0;
        r->hashed = 0;
        if (++ph == 61)
            ph = 0;
    }
}

static const ck_topic_ops topic_ops = {
    .npartitions = t_npartitions,
    .size = t_size,
    .append_time = t_append_time,
    .read = t_read,
    .readable = t_readable,
    .read_n = t_read_n,
};

/* ---- generation ------------------------------------------------------------------- */

uint64_t ck_workload_key_bytes(int64_t n)
{
    uint64_t total = 0;
    int64_t lo = 0, hi = 10; /* keys lo .. hi-1 have `digits` digits */
    for (int digits = 1; lo < n; digits++, lo = hi, hi *= 10)
        total += (uint64_t)(CK_MIN(hi, n) - lo) * (uint64_t)(5 + digits);
    return total;
}

static int make_keys(ck_workload *w)
{
    int64_t n = w->spec.keys;
    w->nkeys = n;
    uint64_t bytes = ck_workload_key_bytes(n);
    w->key_off = malloc((size_t)(n + 1) * sizeof(uint64_t));
    w->key_part = malloc((size_t)n * sizeof(int));
    w->key_text = malloc((size_t)bytes + 1); /* + 1: snprintf's NUL after the last key */
    if (!w->key_off || !w->key_part || !w->key_text)
        return CK_ENOMEM;
    uint64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        w->key_off[i] = off;
        int len = snprintf(w->key_text + off, (size_t)(bytes + 1 - off), "user-%lld", (long long)i);
        w->key_part[i] = ck_kafka_partition(w->key_text + off, (size_t)len,
                                             w->spec.partitions);
        off += (uint64_t)len;
    }
    assert(off == bytes);
    w->key_off[n] = off;
    return CK_OK;
}

int ck_workload_generate(ck_workload *w, const ck_workload_spec *spec, uint64_t seed)
{
    memset(w, 0, sizeof(*w));
    w->spec = *spec;
    const ck_workload_spec *s = &w->spec;
    if (s->partitions < 1 || s->keys < 1 || s->keys > (1 << 30) || s->duration < 0 ||
        (s->npart_ends && (s->npart_ends != s->partitions || s->npart_ends > CK_WL_MAX_PART_ENDS)))
        return CK_EINVAL;
    w->topic.ops = &topic_ops;
    w->topic.ctx = w;
    w->topic.name = w->spec.topic;
    int rc;
    w->parts = calloc((size_t)s->partitions, sizeof(ck_wl_part));
    w->payload_len = s->record_bytes + 64;
    w->payload = malloc(w->payload_len);
    if (!w->parts || !w->payload) {
        ck_workload_free(w);
        return CK_ENOMEM;
    }
    ck_rng rng;
    ck_rng_init(&rng, seed, 0x7061796c6f6164ULL); /* "payload" */
    for (size_t i = 0; i < w->payload_len; i++)
        w->payload[i] = (uint8_t)ck_rng_next(&rng);
    if ((rc = make_keys(w))) {
        ck_workload_free(w);
        return rc;
    }
    double *cdf = NULL;
    if (s->dist == CK_KEYS_ZIPF) {
        cdf = malloc((size_t)s->keys * sizeof(double));
        if (!cdf) {
            ck_workload_free(w);
            return CK_ENOMEM;
        }
        double sum = 0;
        for (int64_t i = 0; i < s->keys; i++) {
            sum += 1.0 / pow((double)(i + 1), s->zipf_s);
            cdf[i] = sum;
        }
        for (int64_t i = 0; i < s->keys; i++)
            cdf[i] /= sum;
    }
    ck_rng_init(&rng, seed, 0x6172726976616cULL); /* "arrival" */
    ck_rng krng, vrng, hrng;
    ck_rng_init(&krng, seed, 0x6b657973ULL);  /* "keys" */
    ck_rng_init(&hrng, seed, 0x686f74ULL);    /* "hot": drawn only while a key is hot */
    ck_rng_init(&vrng, seed, 0x76616c7565ULL); /* "value" */
    double t = 0;
    while (t < (double)s->duration) {
        ck_time now = (ck_time)t;
        double rps = ck_workload_rate(s, now);
        if (rps <= 0) {
            ck_time nc = next_change(s, now);
            if (nc == CK_TIME_NEVER || nc >= s->duration)
                break;
            t = (double)nc;
            continue;
        }
        double gap = 1e9 / rps;
        if (s->poisson)
            gap *= -log(1.0 - ck_rng_double(&rng));
        ck_time nc = next_change(s, now);
        uint32_t key;
        if (cdf) {
            double u = ck_rng_double(&krng);
            int64_t lo = 0, hi = s->keys - 1;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (cdf[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            key = (uint32_t)lo;
        } else {
            key = (uint32_t)ck_rng_below(&krng, (uint64_t)s->keys);
        }
        double share = 0;
        for (int h = 0; h < s->nhot; h++)
            if (now >= s->hot[h].from && now < s->hot[h].to && s->hot[h].share > share)
                share = s->hot[h].share;
        if (share > 0 && ck_rng_double(&hrng) < share)
            key = 0;
        int32_t value = 1 + (int32_t)ck_rng_below(&vrng, 100);
        int64_t jitter = s->disorder_ms > 0
                             ? (int64_t)ck_rng_below(&vrng, (uint64_t)s->disorder_ms + 1)
                             : 0;
        int64_t ts = now / CK_NS_PER_MS - jitter;
        int p = w->key_part[key];
        /* Drawn all the same past its partition's end, so that the other
         * partitions hold what they would hold without the ends. */
        if (!s->npart_ends || now < s->part_end[p]) {
            if ((rc = part_push(&w->parts[p], now, ts, key, value))) {
                free(cdf);
                ck_workload_free(w);
                return rc;
            }
            w->total++;
        }
        /* A rate change cuts the gap short: the new rate starts at its time. */
        t += gap;
        if (nc != CK_TIME_NEVER && t > (double)nc)
            t = (double)nc;
    }
    free(cdf);
    return CK_OK;
}

void ck_workload_free(ck_workload *w)
{
    if (w->parts)
        for (int i = 0; i < w->spec.partitions; i++) {
            free(w->parts[i].at);
            free(w->parts[i].ts);
            free(w->parts[i].key);
            free(w->parts[i].value);
        }
    free(w->parts);
    free(w->key_text);
    free(w->key_off);
    free(w->key_part);
    free(w->payload);
    memset(w, 0, sizeof(*w));
}

uint64_t ck_workload_fingerprint(const ck_workload *w)
{
    uint32_t a = 0, b = 0x9e3779b9u;
    for (int p = 0; p < w->spec.partitions; p++) {
        const ck_wl_part *q = &w->parts[p];
        size_t n = (size_t)q->n;
        a = ck_crc32c(a, &q->n, sizeof(q->n));
        a = ck_crc32c(a, q->ts, n * sizeof(*q->ts));
        a = ck_crc32c(a, q->at, n * sizeof(*q->at));
        b = ck_crc32c(b, q->key, n * sizeof(*q->key));
        b = ck_crc32c(b, q->value, n * sizeof(*q->value));
    }
    b = ck_crc32c(b, w->key_text, w->key_off[w->nkeys]);
    return (uint64_t)a << 32 | b;
}
