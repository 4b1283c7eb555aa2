#include "verify.h"

#include <stdio.h>
#include <stdlib.h>

#include "element.h"
#include "error.h"
#include "rng.h"

/* ---- a multiset of (sink op, key, ts, value) ---------------------------------- */

typedef struct tuple {
    uint64_t hash;
    const char *key; /* points into the workload's key table */
    uint32_t klen;
    int op;
    int64_t ts, value;
    uint64_t exp, seen;
} tuple;

typedef struct tset {
    tuple *t;
    size_t n, cap;
} tset;

static uint64_t tuple_hash(int op, const char *key, uint32_t klen, int64_t ts, int64_t value)
{
    uint64_t h = ck_mix64((uint64_t)op);
    for (uint32_t i = 0; i < klen; i++)
        h = (h ^ (uint8_t)key[i]) * 0x100000001b3ULL;
    h = ck_mix64(h ^ ck_mix64((uint64_t)ts));
    return ck_mix64(h ^ (uint64_t)value);
}

static int tset_grow(tset *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 1024;
    tuple *nt = calloc(ncap, sizeof(*nt));
    if (!nt)
        return CK_ENOMEM;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->t[i].key)
            continue;
        size_t j = s->t[i].hash & (ncap - 1);
        while (nt[j].key)
            j = (j + 1) & (ncap - 1);
        nt[j] = s->t[i];
    }
    free(s->t);
    s->t = nt;
    s->cap = ncap;
    return CK_OK;
}

/* Finds a tuple; with `insert`, adds it when absent. NULL if absent or no memory. */
static tuple *tset_find(tset *s, int op, const char *key, uint32_t klen, int64_t ts,
                        int64_t value, int insert)
{
    if (insert && (s->n + 1) * 4 > s->cap * 3 && tset_grow(s))
        return NULL;
    if (s->cap == 0)
        return NULL;
    uint64_t h = tuple_hash(op, key, klen, ts, value);
    for (size_t j = h & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
        tuple *t = &s->t[j];
        if (!t->key) {
            if (!insert)
                return NULL;
            *t = (tuple){h, key, klen, op, ts, value, 0, 0};
            s->n++;
            return t;
        }
        if (t->hash == h && t->op == op && t->ts == ts && t->value == value &&
            t->klen == klen && memcmp(t->key, key, klen) == 0)
            return t;
    }
}

/* ---- the reference computation ------------------------------------------------------ */

typedef struct wentry {
    uint32_t key;
    int64_t start;
    int64_t acc;
    int used;
} wentry;

typedef struct wtable {
    wentry *e;
    size_t n, cap;
} wtable;

typedef struct ref {
    const ck_graph *g;
    const ck_workload *w;
    int64_t *agg[CK_MAX_OPS]; /* per aggregate op: accumulator per key id */
    wtable win[CK_MAX_OPS];   /* per window op */
    tset expected;
    int err;
} ref;

typedef struct rrec {
    uint32_t key;
    int64_t ts, value;
} rrec;

static wentry *win_find(wtable *t, uint32_t key, int64_t start)
{
    if ((t->n + 1) * 4 > t->cap * 3) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        wentry *ne = calloc(ncap, sizeof(*ne));
        if (!ne)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].used)
                continue;
            uint64_t h = ck_mix64(((uint64_t)t->e[i].key << 32) ^ (uint64_t)t->e[i].start);
            size_t j = h & (ncap - 1);
            while (ne[j].used)
                j = (j + 1) & (ncap - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = ncap;
    }
    uint64_t h = ck_mix64(((uint64_t)key << 32) ^ (uint64_t)start);
    for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
        wentry *e = &t->e[j];
        if (!e->used) {
            *e = (wentry){key, start, 0, 1};
            t->n++;
            return e;
        }
        if (e->key == key && e->start == start)
            return e;
    }
}

static void ref_process(ref *R, int opi, rrec r);

static void ref_emit(ref *R, int opi, rrec r)
{
    const ck_job_spec *s = &R->g->spec;
    for (int d = opi + 1; d < s->nops && !R->err; d++)
        if (s->ops[d].input == opi)
            ref_process(R, d, r);
}

static void ref_process(ref *R, int opi, rrec r)
{
    const ck_op_spec *o = &R->g->spec.ops[opi];
    uint32_t klen;
    const char *key = ck_workload_key(R->w, r.key, &klen);
    ck_rec rec = {.ts = r.ts, .value = r.value, .key = key, .klen = klen};
    switch (o->kind) {
    case CK_OP_SOURCE:
        ref_emit(R, opi, r);
        break;
    case CK_OP_MAP:
        ck_udf_map(o->map_fn, o->map_arg, &rec);
        r.value = rec.value;
        ref_emit(R, opi, r);
        break;
    case CK_OP_FILTER:
        if (ck_udf_filter(o->filter_keep_ppm, &rec))
            ref_emit(R, opi, r);
        break;
    case CK_OP_AGGREGATE:
        R->agg[opi][r.key] += ck_udf_agg_add(o->agg_fn, &rec);
        r.value = R->agg[opi][r.key];
        ref_emit(R, opi, r);
        break;
    case CK_OP_WINDOW: {
        wentry *e = win_find(&R->win[opi], r.key, ck_udf_window_start(r.ts, o->window_ms));
        if (!e) {
            R->err = CK_ENOMEM;
            return;
        }
        e->acc += ck_udf_agg_add(o->agg_fn, &rec);
        break;
    }
    case CK_OP_SINK: {
        tuple *t = tset_find(&R->expected, opi, key, klen, r.ts, r.value, 1);
        if (!t)
            R->err = CK_ENOMEM;
        else
            t->exp++;
        break;
    }
    }
}

static int cmp_window(const void *a, const void *b)
{
    const wentry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Windows fire at the end of input (the final watermark), in time order. */
static int ref_fire_windows(ref *R, int opi)
{
    wtable *t = &R->win[opi];
    wentry *all = malloc((t->n + 1) * sizeof(*all));
    if (!all)
        return CK_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].used)
            all[n++] = t->e[i];
    qsort(all, n, sizeof(*all), cmp_window);
    int64_t size = R->g->spec.ops[opi].window_ms;
    for (size_t i = 0; i < n && !R->err; i++) {
        rrec r = {all[i].key, all[i].start + size - 1, all[i].acc};
        ref_emit(R, opi, r);
    }
    free(all);
    return R->err;
}

static int ref_run(ref *R)
{
    const ck_job_spec *s = &R->g->spec;
    const ck_workload *w = R->w;
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].kind == CK_OP_AGGREGATE &&
            !(R->agg[i] = calloc((size_t)w->nkeys, sizeof(int64_t))))
            return CK_ENOMEM;
    for (int i = 0; i < s->nops && !R->err; i++) {
        if (s->ops[i].kind == CK_OP_SOURCE) {
            /* Per key, log order is the only order; partitions are independent. */
            for (int p = 0; p < w->spec.partitions && !R->err; p++) {
                const ck_wl_part *part = &w->parts[p];
                for (int64_t k = 0; k < part->n && !R->err; k++) {
                    rrec r = {part->key[k], part->ts[k], part->value[k]};
                    ref_process(R, i, r);
                }
            }
        }
    }
    for (int i = 0; i < s->nops && !R->err; i++)
        if (s->ops[i].kind == CK_OP_WINDOW && ref_fire_windows(R, i))
            return R->err ? R->err : CK_ENOMEM;
    return R->err;
}

static void ref_free(ref *R)
{
    for (int i = 0; i < CK_MAX_OPS; i++) {
        free(R->agg[i]);
        free(R->win[i].e);
    }
    free(R->expected.t);
}

/* ---- comparison ------------------------------------------------------------------- */

const char *ck_guarantee_name(ck_guarantee g)
{
    return g == CK_EXACTLY_ONCE ? "exactly-once" : "at-least-once";
}

/* How a sink's outputs group at least once: 0 one by one, 1 per key, 2 per key and window. */
static int sink_grouping(const ck_graph *g, int sink)
{
    for (int o = g->spec.ops[sink].input; o >= 0; o = g->spec.ops[o].input) {
        if (g->spec.ops[o].kind == CK_OP_AGGREGATE)
            return 1;
        if (g->spec.ops[o].kind == CK_OP_WINDOW)
            return 2;
    }
    return 0;
}

/* Walks the outputs of the sinks, calling fn for each record. */
typedef void (*out_visit)(void *arg, int op, const ck_rec *r);

static int each_output(const ck_sinkout *out, out_visit fn, void *arg, char *err, size_t errlen)
{
    for (int i = 0; i < out->n; i++) {
        const ck_sinkout_stream *s = &out->s[i];
        int op = (int)(s->sink_id >> 16);
        size_t pos = 0;
        while (pos < s->len) {
            ck_elem e;
            size_t n = s->len - pos >= 4 ? (size_t)ck_get_u32(s->data + pos) + 4 : 0;
            if (n < CK_ELEM_PREFIX || n > s->len - pos ||
                ck_elem_decode(s->data + pos, n, &e) || e.tag != CK_EL_RECORD) {
                snprintf(err, errlen, "output of sink %d subtask %u: malformed record at byte %zu",
                         op, s->sink_id & 0xffff, pos);
                return CK_ECORRUPT;
            }
            pos += n;
            fn(arg, op, &e.u.rec);
        }
    }
    return CK_OK;
}

typedef struct cmp_ctx {
    const ck_graph *g;
    ref *R;
    tset groups; /* at least once: per group, max observed in `seen`... */
    ck_verdict *v;
    int err;
} cmp_ctx;

static void exact_visit(void *arg, int op, const ck_rec *r)
{
    cmp_ctx *c = arg;
    c->v->received++;
    tuple *t = tset_find(&c->R->expected, op, r->key, r->klen, r->ts, r->value, 0);
    if (t)
        t->seen++;
    else
        c->v->unexpected++;
}

/* Group key of a record: value 0 and ts per the sink's grouping. */
static int64_t group_ts(int grouping, const ck_rec *r)
{
    return grouping == 2 ? r->ts : 0;
}

static void alo_visit(void *arg, int op, const ck_rec *r)
{
    cmp_ctx *c = arg;
    c->v->received++;
    int grouping = sink_grouping(c->g, op);
    if (grouping == 0) {
        exact_visit(arg, op, r);
        return;
    }
    /* The group's entry (value 0) in the expected set carries the max seen. */
    tuple *t = tset_find(&c->R->expected, op, r->key, r->klen, group_ts(grouping, r), INT64_MIN, 0);
    if (!t) {
        c->v->unexpected++;
        return;
    }
    if ((int64_t)t->seen < r->value || t->exp == 0) {
        t->seen = (uint64_t)r->value;
        t->exp = 1; /* something was seen */
    }
}

/* At least once: one group entry per (sink, key[, window]) holding the max expected. */
static int build_groups(ref *R, const ck_graph *g)
{
    tset *e = &R->expected;
    size_t cap = e->cap;
    for (size_t j = 0; j < cap; j++) {
        const tuple *t = &e->t[j];
        if (!t->key || t->value == INT64_MIN)
            continue;
        int grouping = sink_grouping(g, t->op);
        if (grouping == 0)
            continue;
        ck_rec r = {.ts = t->ts, .value = t->value, .key = t->key, .klen = t->klen};
        tuple *gt = tset_find(e, t->op, t->key, t->klen, group_ts(grouping, &r), INT64_MIN, 1);
        if (!gt)
            return CK_ENOMEM;
        gt->exp = 0;
        gt->seen = 0;
        if (e->cap != cap) { /* the set grew: entries moved; start over */
            return build_groups(R, g);
        }
    }
    return CK_OK;
}

int ck_verify(const ck_graph *g, const ck_workload *w, const ck_sinkout *out,
              ck_guarantee guarantee, int partial, ck_verdict *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    v->guarantee = guarantee;
    v->partial = partial;
    ref R;
    memset(&R, 0, sizeof(R));
    R.g = g;
    R.w = w;
    int rc = ref_run(&R);
    if (!rc && guarantee == CK_AT_LEAST_ONCE)
        rc = build_groups(&R, g);
    if (rc) {
        snprintf(err, errlen, "reference computation: %s", ck_strerror(rc));
        ref_free(&R);
        return rc;
    }
    cmp_ctx c = {.g = g, .R = &R, .v = v};
    rc = each_output(out, guarantee == CK_EXACTLY_ONCE ? exact_visit : alo_visit, &c, err, errlen);
    if (rc) {
        ref_free(&R);
        return rc;
    }
    /* Group maxima, for the at-least-once check of aggregated sinks. */
    for (size_t j = 0; j < R.expected.cap; j++) {
        const tuple *t = &R.expected.t[j];
        if (!t->key || t->value == INT64_MIN)
            continue;
        v->expected += t->exp;
        int grouping = guarantee == CK_AT_LEAST_ONCE ? sink_grouping(g, t->op) : 0;
        if (grouping) {
            ck_rec r = {.ts = t->ts, .key = t->key, .klen = t->klen};
            const tuple *gt = tset_find(&R.expected, t->op, t->key, t->klen,
                                        group_ts(grouping, &r), INT64_MIN, 0);
            if (!gt || gt->exp == 0 || (int64_t)gt->seen < t->value)
                v->lost += t->exp; /* no output of its group got this far */
            continue;
        }
        if (t->seen < t->exp)
            v->lost += t->exp - t->seen;
        else
            v->duplicated += t->seen - t->exp;
    }
    if (guarantee == CK_AT_LEAST_ONCE && v->received > v->expected)
        v->duplicated = v->received - v->expected - v->unexpected;
    v->ok = (partial || v->lost == 0) && v->unexpected == 0 &&
            (guarantee == CK_AT_LEAST_ONCE || v->duplicated == 0);
    ref_free(&R);
    return CK_OK;
}
