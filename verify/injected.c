#include "injected.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "element.h" /* the record decoder, to read what the faults touched */
#include "error.h"

/*
 * Nothing here calls the comparison of verify.c: the expected counts
 * follow from the faults' own records, the sinks' groupings and, for a
 * running aggregate behind a reordering edge, the reference's final
 * values and bounds (ck_verify_running). The received output is read only
 * to see whether some other output still carries a key's final value.
 */

/* A touched (sink, key) of a running aggregate, whose final value to check. */
typedef struct touched {
    int sink;
    uint32_t key;
} touched;

typedef struct keyidx {
    const ck_workload *w;
    uint32_t *slot; /* key id + 1; 0: empty */
    size_t cap;
} keyidx;

static uint64_t text_hash(const char *k, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)k[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

/* The id of key k, or -1; insert >= 0 adds it. */
static int64_t keyidx_find(keyidx *m, const char *k, uint32_t n, int64_t insert)
{
    for (size_t j = text_hash(k, n) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (!m->slot[j]) {
            if (insert >= 0)
                m->slot[j] = (uint32_t)insert + 1;
            return insert;
        }
        uint32_t len;
        const char *have = ck_workload_key(m->w, m->slot[j] - 1, &len);
        if (len == n && memcmp(have, k, n) == 0)
            return m->slot[j] - 1;
    }
}

static int keyidx_build(keyidx *m, const ck_workload *w)
{
    m->w = w;
    m->cap = 16;
    while (m->cap < 2 * (size_t)w->nkeys)
        m->cap <<= 1;
    if (!(m->slot = calloc(m->cap, sizeof(*m->slot))))
        return CK_ENOMEM;
    for (int64_t id = 0; id < w->nkeys; id++) {
        uint32_t len;
        const char *k = ck_workload_key(w, (uint32_t)id, &len);
        keyidx_find(m, k, len, id);
    }
    return CK_OK;
}

/* Calls fn for each record of the streams of o (of sink `sink`, or all
 * when -1). CK_ECORRUPT when one does not parse, else what fn returns. */
typedef int (*rec_fn)(void *ctx, uint32_t sink_id, const ck_rec *r);

static int each_record(const ck_sinkout *o, int sink, rec_fn fn, void *ctx)
{
    for (int i = 0; i < o->n; i++) {
        const ck_sinkout_stream *s = &o->s[i];
        if (sink >= 0 && (int)(s->sink_id >> 16) != sink)
            continue;
        for (size_t pos = 0; pos < s->len;) {
            ck_elem e;
            size_t m = s->len - pos >= 4 ? (size_t)ck_get_u32(s->data + pos) + 4 : 0;
            if (m < CK_ELEM_PREFIX || m > s->len - pos || ck_elem_decode(s->data + pos, m, &e) ||
                e.tag != CK_EL_RECORD)
                return CK_ECORRUPT;
            pos += m;
            int rc = fn(ctx, s->sink_id, &e.u.rec);
            if (rc)
                return rc;
        }
    }
    return CK_OK;
}

typedef struct expect_ctx {
    const ck_graph *g; /* the first generation's */
    const ck_verify_gen *gens; /* every generation the run went through (verify.h) */
    int ngens;
    ck_guarantee guarantee;
    const ck_injected_fault *f;
    ck_injected *e;
    keyidx *keys;
    ck_running *run; /* per sink op: the reference's running values, when needed */
    const ck_workload *w;
    touched *t;
    size_t nt, cap;
    int err;
} expect_ctx;

static ck_running *running_of(expect_ctx *c, int sink)
{
    ck_running *rv = &c->run[sink];
    if (!rv->final && !c->err) {
        int rc = ck_verify_running_gens(c->gens, c->ngens, c->w, sink, rv);
        if (rc)
            c->err = rc;
    }
    return c->err ? NULL : rv;
}

static int touch(expect_ctx *c, int sink, uint32_t key)
{
    for (size_t i = 0; i < c->nt; i++)
        if (c->t[i].sink == sink && c->t[i].key == key)
            return CK_OK;
    if (c->nt == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        touched *nt = realloc(c->t, nc * sizeof(*nt));
        if (!nt)
            return CK_ENOMEM;
        c->t = nt;
        c->cap = nc;
    }
    c->t[c->nt++] = (touched){sink, key};
    return CK_OK;
}

/* One record a fault touched. */
static int expect_record(void *ctx, uint32_t sink_id, const ck_rec *r)
{
    expect_ctx *c = ctx;
    ck_injected *e = c->e;
    int sink = (int)(sink_id >> 16);
    int kind = c->f->what.kind;
    ck_grouping gr = ck_verify_grouping_gens(c->gens, c->ngens, sink, c->guarantee);
    int64_t key = keyidx_find(c->keys, r->key, r->klen, -1);
    int running = gr == CK_GROUPING_RUNNING && r->prov != CK_PROV_WINDOW && key >= 0;
    e->records++;
    if (kind == CK_SINKFS_DUPLICATE) {
        e->duplicated++;
        return CK_OK;
    }
    if (kind == CK_SINKFS_DROP) {
        e->lost++;
        return running ? touch(c, sink, (uint32_t)key) : CK_OK;
    }
    /* corrupt: the value lowered by 2^62 */
    if (gr == CK_GROUPING_RUNNING && r->prov == CK_PROV_WINDOW)
        return CK_OK; /* a window over running values: its value is never checked */
    if (running) {
        ck_running *rv = running_of(c, sink);
        if (!rv)
            return c->err;
        if (touch(c, sink, (uint32_t)key))
            return CK_ENOMEM;
        if (!rv->bounded[key])
            return CK_OK; /* no bounds: only its final value says anything */
    }
    e->unexpected++;
    e->lost++;
    return CK_OK;
}

typedef struct carry_ctx {
    keyidx *keys;
    ck_guarantee guarantee;
    uint32_t key;
    int64_t final;
    int carried;
} carry_ctx;

/* Whether a received output of the key carries its final value. */
static int carries(void *ctx, uint32_t sink_id, const ck_rec *r)
{
    (void)sink_id;
    carry_ctx *c = ctx;
    if (r->prov == CK_PROV_WINDOW || c->carried)
        return CK_OK;
    if (r->value != c->final && !(c->guarantee == CK_AT_LEAST_ONCE && r->value > c->final))
        return CK_OK;
    c->carried = keyidx_find(c->keys, r->key, r->klen, -1) == (int64_t)c->key;
    return CK_OK;
}

int ck_injected_expect(const ck_graph *g, const ck_workload *w, const ck_sinkout *out,
                       ck_guarantee guarantee, int partial, const ck_injected_fault *f, int n,
                       ck_injected *e, char *err, size_t errlen)
{
    ck_verify_gen one = {g, NULL};
    return ck_injected_expect_gens(&one, 1, w, out, guarantee, partial, f, n, e, err, errlen);
}

int ck_injected_expect_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w,
                            const ck_sinkout *out, ck_guarantee guarantee, int partial,
                            const ck_injected_fault *f, int n, ck_injected *e, char *err,
                            size_t errlen)
{
    const ck_graph *g = gens[0].g;
    memset(e, 0, sizeof(*e));
    keyidx keys = {0};
    ck_running *run = calloc(CK_MAX_OPS, sizeof(*run));
    if (!run || keyidx_build(&keys, w)) {
        free(run);
        snprintf(err, errlen, "the output faults' known answer: out of memory");
        return CK_ENOMEM;
    }
    expect_ctx c = {.g = g, .gens = gens, .ngens = ngens, .guarantee = guarantee, .e = e,
                    .keys = &keys, .run = run, .w = w};
    int rc = CK_OK;
    for (int i = 0; i < n && !rc; i++) {
        c.f = &f[i];
        e->faults++;
        rc = each_record(f[i].records, -1, expect_record, &c);
        if (rc == CK_ECORRUPT)
            snprintf(err, errlen, "what output fault %d touched (sink %d subtask %u): a record "
                                  "that does not parse",
                     i, (int)(f[i].what.sink >> 16), f[i].what.sink & 0xffff);
    }
    /* A running aggregate's key whose final value no output carries now. */
    for (size_t i = 0; i < c.nt && !rc && !partial; i++) {
        ck_running *rv = running_of(&c, c.t[i].sink);
        if (!rv) {
            rc = c.err;
            break;
        }
        uint32_t k = c.t[i].key;
        if (!rv->has[k])
            continue;
        carry_ctx cc = {&keys, guarantee, k, rv->final[k], 0};
        if ((rc = each_record(out, c.t[i].sink, carries, &cc)))
            snprintf(err, errlen, "the output of sink %d: a record that does not parse",
                     c.t[i].sink);
        e->wrong_totals += !cc.carried;
    }
    if (rc == CK_ENOMEM || (!rc && c.err))
        snprintf(err, errlen, "the output faults' known answer: out of memory");
    if (!rc)
        rc = c.err;
    for (int s = 0; s < CK_MAX_OPS; s++)
        ck_running_free(&run[s]);
    free(run);
    free(c.t);
    free(keys.slot);
    return rc;
}

int ck_injected_judge(const ck_injected *e, const ck_verdict *v, int whole, char *why, size_t len)
{
    int eo = v->guarantee == CK_EXACTLY_ONCE;
    const char *off = NULL;
    uint64_t got = 0, want = 0;
    const char *rel = "";
    if (v->unexpected != e->unexpected) {
        off = "unexpected", got = v->unexpected, want = e->unexpected;
    } else if (eo ? v->duplicated != e->duplicated : v->duplicated < e->duplicated) {
        off = "duplicated", got = v->duplicated, want = e->duplicated, rel = eo ? "" : "at least ";
    } else if (whole && (eo ? v->lost != e->lost : v->lost > e->lost)) {
        off = "lost", got = v->lost, want = e->lost, rel = eo ? "" : "at most ";
    } else if (!whole && v->lost < e->lost) {
        off = "lost", got = v->lost, want = e->lost, rel = "at least ";
    } else if (whole && (eo ? v->wrong_totals != e->wrong_totals
                            : v->wrong_totals > e->wrong_totals)) {
        off = "wrong totals", got = v->wrong_totals, want = e->wrong_totals,
        rel = eo ? "" : "at most ";
    }
    if (!off) {
        snprintf(why, len,
                 "the verdict counts exactly the damage the %d output fault%s injected: "
                 "%llu duplicated, %llu lost, %llu unexpected, %llu wrong totals",
                 e->faults, e->faults == 1 ? "" : "s", (unsigned long long)e->duplicated,
                 (unsigned long long)e->lost, (unsigned long long)e->unexpected,
                 (unsigned long long)e->wrong_totals);
        return 1;
    }
    snprintf(why, len,
             "the output check counted %llu %s where the output faults injected %s%llu "
             "(%s; injected: %llu duplicated, %llu lost, %llu unexpected, %llu wrong totals)",
             (unsigned long long)got, off, rel, (unsigned long long)want,
             ck_guarantee_name(v->guarantee), (unsigned long long)e->duplicated,
             (unsigned long long)e->lost, (unsigned long long)e->unexpected,
             (unsigned long long)e->wrong_totals);
    return 0;
}
