#include "verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "element.h" /* the record decoder, to read the sinks' output */
#include "error.h"
#include "refops.h"

/*
 * This module calls nothing in engine/ but the record decoder
 * (ck_elem_decode): the reference computation uses its own operator
 * functions (refops.h) and its own hashing, so that no bug in the engine's
 * functions can change the expected output along with the real one. It
 * reads the job's description (ck_graph's spec) and the constants that
 * define the record format.
 *
 * The comparison is built to stay fast when runs produce tens of millions
 * of records. Expected and received outputs are two arrays of 40-byte
 * tuples, each with a 64-bit hash of its identity and its key as the
 * workload's key id (received keys are looked up once, while the output
 * streams are read in order). Both arrays are partitioned in place by the
 * hash's top bytes into partitions of at most PART_MAX tuples; each
 * partition is then matched with a small hash table that stays in the CPU
 * caches. Sequential passes and cache-resident work instead of a random
 * memory access per record.
 */

/* One output record: expected (from the reference) or received. */
typedef struct tuple {
    uint64_t hash; /* of the identity: (op, key, ts, prov), and value unless grouped */
    int64_t ts;    /* event time */
    int64_t value;
    uint64_t prov; /* provenance (element.h) */
    uint32_t key;  /* key id in the workload */
    uint16_t op;
    uint16_t grouped; /* GROUPED_*: how its value is compared */
} tuple;

/* How a sink's output values are compared (tuple.grouped). */
enum {
    GROUPED_NO = 0,        /* the value is part of the identity */
    GROUPED_AT_LEAST = 1,  /* at least once after an aggregate or window: value at least */
    GROUPED_UNORDERED = 2, /* a running aggregate behind an edge that reorders a key's
                            * records: each value depends on arrival order; only the
                            * key's final value is checked (ref.final) */
    GROUPED_FIRST = 3,     /* a distinct behind an edge that reorders a key's records:
                            * which record first had a value depends on arrival order;
                            * the identity is (key, value) without time or provenance */
};

/* Or'ed into an expected tuple's `grouped`: a copy that may or may not be
 * there (a broadcast edge's consumer parallelism changed at a rescale and
 * the generation that made the copies is not known: between the fewest
 * and the most copies a generation makes). */
#define TUPLE_OPTIONAL 0x100
#define GROUPING(t) ((t)->grouped & 0xff)

typedef struct tvec {
    tuple *t;
    size_t n, cap;
} tvec;

static uint64_t tuple_hash(int op, uint32_t key, int64_t ts, uint64_t prov, int64_t value)
{
    uint64_t h = ck_ref_mix64(((uint64_t)op << 32) ^ key);
    h = ck_ref_mix64(h ^ ck_ref_mix64((uint64_t)ts));
    h = ck_ref_mix64(h ^ prov);
    return ck_ref_mix64(h ^ (uint64_t)value);
}

/* Appends a record of sink op; grouped: its value is not part of its
 * identity (at least once after an aggregate or a window). */
static int tvec_push(tvec *a, int op, int grouped, uint32_t key, int64_t ts, int64_t value,
                     uint64_t prov)
{
    int flags = grouped & ~0xff;
    grouped &= 0xff;
    if (a->n == a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 1024;
        tuple *nt = realloc(a->t, ncap * sizeof(*nt));
        if (!nt)
            return CK_ENOMEM;
        a->t = nt;
        a->cap = ncap;
    }
    tuple *t = &a->t[a->n++];
    t->key = key;
    t->op = (uint16_t)op;
    t->grouped = (uint16_t)(grouped | flags);
    if (grouped == GROUPED_FIRST) {
        ts = 0;
        prov = 0;
        grouped = 0; /* the value is part of the identity */
    }
    t->ts = ts;
    t->value = value;
    t->prov = prov;
    t->hash = tuple_hash(op, key, ts, prov, grouped ? 0 : value);
    return CK_OK;
}

/* Same identity: the same output (or, grouped, the same output but for its value). */
static inline int tuple_eq(const tuple *a, const tuple *b)
{
    int by_value = GROUPING(a) == GROUPED_NO || GROUPING(a) == GROUPED_FIRST;
    return a->hash == b->hash && a->key == b->key && a->op == b->op && a->ts == b->ts &&
           a->prov == b->prov && (!by_value || a->value == b->value);
}

/* The workload's keys by their text, to name received keys by id. */
typedef struct keymap {
    const ck_workload *w;
    uint32_t *slot; /* key id + 1; 0 is empty */
    size_t cap;
} keymap;

static uint64_t text_hash(const char *k, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)k[i]) * 0x100000001b3ULL;
    return ck_ref_mix64(h);
}

/* The id of key k, or -1 when the workload has no such key. With insert,
 * adds id (the key must be absent). */
static int64_t keymap_find(keymap *m, const char *k, uint32_t n, int64_t insert)
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

static int keymap_build(keymap *m, const ck_workload *w)
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
        keymap_find(m, k, len, id);
    }
    return CK_OK;
}

/* The radix digit of a hash at depth d: its d-th byte from the top. */
static inline size_t digit(uint64_t hash, int d)
{
    return (size_t)(hash >> (56 - 8 * d)) & 255;
}

/*
 * Reorders t[0..n) in place by the digit at depth d, so that bucket b is
 * t[start[b] .. start[b + 1]). 256 buckets: few enough write streams for
 * the caches and the TLB.
 */
static void partition(tuple *t, size_t n, int d, size_t start[257])
{
    size_t next[256];
    memset(start, 0, 257 * sizeof(*start));
    for (size_t i = 0; i < n; i++)
        start[digit(t[i].hash, d) + 1]++;
    for (int b = 0; b < 256; b++)
        start[b + 1] += start[b];
    memcpy(next, start, sizeof(next));
    /* Cycle leader: each tuple moves straight to its bucket. */
    for (size_t b = 0; b < 256; b++) {
        while (next[b] < start[b + 1]) {
            tuple x = t[next[b]];
            size_t to = digit(x.hash, d);
            while (to != b) {
                tuple y = t[next[to]];
                t[next[to]++] = x;
                x = y;
                to = digit(x.hash, d);
            }
            t[next[b]++] = x;
        }
    }
}

/* A partition's table: distinct expected identities with counts. */
typedef struct entry {
    const tuple *rep; /* NULL: empty slot */
    uint64_t exp;     /* expected occurrences */
    uint64_t opt;     /* and occurrences that may be there (TUPLE_OPTIONAL) */
    uint64_t seen;    /* received occurrences (grouped: with a value at least the expected) */
} entry;

typedef struct ptable {
    entry *e;
    size_t cap;   /* in use for the partition being matched */
    size_t alloc;
    int err;
} ptable;

static entry *ptable_find(ptable *t, const tuple *x, int insert)
{
    for (size_t j = x->hash & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
        entry *e = &t->e[j];
        if (!e->rep) {
            if (!insert)
                return NULL;
            e->rep = x;
            return e;
        }
        if (tuple_eq(e->rep, x))
            return e;
    }
}

/* ---- the reference computation ------------------------------------------------------ */

typedef struct wentry {
    uint32_t key;
    int64_t start;
    int64_t acc;
    int used;
    int64_t *vals; /* a median window: every value */
    uint32_t n, cap;
} wentry;

typedef struct wtable {
    wentry *e;
    size_t n, cap;
} wtable;

typedef struct ref {
    const ck_graph *g; /* the first generation's: the job's operators */
    const ck_verify_gen *gens; /* every generation the run went through, in order */
    int ngens;
    const ck_workload *w;
    int64_t *agg[CK_MAX_OPS]; /* per aggregate op: accumulator per key id */
    wtable win[CK_MAX_OPS];   /* per window op */
    wtable seen[CK_MAX_OPS];  /* per distinct op: (key id, value) pairs had, as window
                               * entries (start: the value, acc: times) */
    tvec expected;
    int grouped[CK_MAX_OPS]; /* per sink: GROUPED_* */
    int64_t *final[CK_MAX_OPS]; /* per GROUPED_UNORDERED sink: the last value per key id... */
    uint8_t *has[CK_MAX_OPS];   /* ...when it had one: 1; 2 once an output carried it */
    int64_t *step[CK_MAX_OPS];  /* ...the least a record of the key added to it... */
    uint8_t *fall[CK_MAX_OPS];  /* ...and 1 when one took something away (no bounds) */
    int err;
    /* The first wrong output (by provenance: the earliest input it stands
     * for), described for ck_verdict.first_wrong */
    int blamed;
    uint64_t blame_prov;
    int blame_op;
    uint32_t blame_key;
    char *blame;
    size_t blamelen;
} ref;

/* A record in the reference: key id, event time, value, provenance; the
 * generations that may have processed it (gen_lo..gen_hi: one, unless a
 * cut is not known or it is a window's result) and whether it is a copy
 * that may or may not be there (TUPLE_OPTIONAL). */
typedef struct rrec {
    uint32_t key;
    int64_t ts, value;
    uint64_t prov;
    int gen_lo, gen_hi;
    int optional;
} rrec;

/* Provenance as element.h lays it out: partition above, offset below. */
static uint64_t ref_prov(int partition, int64_t offset)
{
    return (uint64_t)partition << CK_PROV_OFFSET_BITS | (uint64_t)offset;
}

/* a + b, wrapping around as a Java long does. */
static int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

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
            uint64_t h = ck_ref_mix64(((uint64_t)t->e[i].key << 32) ^ (uint64_t)t->e[i].start);
            size_t j = h & (ncap - 1);
            while (ne[j].used)
                j = (j + 1) & (ncap - 1);
            ne[j] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = ncap;
    }
    uint64_t h = ck_ref_mix64(((uint64_t)key << 32) ^ (uint64_t)start);
    for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
        wentry *e = &t->e[j];
        if (!e->used) {
            *e = (wentry){.key = key, .start = start, .used = 1};
            t->n++;
            return e;
        }
        if (e->key == key && e->start == start)
            return e;
    }
}

static void ref_process(ref *R, int opi, rrec r);

/* The parallelism of operator op in generation gen. */
static int gen_parallelism(const ref *R, int gen, int op)
{
    return R->gens[gen].g->spec.ops[op].parallelism;
}

static void ref_emit(ref *R, int opi, rrec r)
{
    const ck_job_spec *s = &R->g->spec;
    for (int d = opi + 1; d < s->nops && !R->err; d++)
        if (s->ops[d].input == opi) {
            /* A broadcast edge hands every consumer subtask of the
             * generation that processed the record a copy. Where that
             * generation is not known and the parallelisms differ, the
             * copies beyond the fewest may or may not be there. */
            int lo = 1, hi = 1;
            if (s->ops[d].ship == CK_SHIP_BROADCAST) {
                lo = hi = gen_parallelism(R, r.gen_lo, d);
                for (int gn = r.gen_lo + 1; gn <= r.gen_hi; gn++) {
                    int p = gen_parallelism(R, gn, d);
                    lo = p < lo ? p : lo;
                    hi = p > hi ? p : hi;
                }
            }
            for (int c = 0; c < hi && !R->err; c++) {
                rrec x = r;
                x.optional |= c >= lo;
                ref_process(R, d, x);
            }
        }
}

static void ref_process(ref *R, int opi, rrec r)
{
    const ck_op_spec *o = &R->g->spec.ops[opi];
    switch (o->kind) {
    case CK_OP_SOURCE:
    case CK_OP_BUFFER: /* holds records and passes them on in order: the same content */
        ref_emit(R, opi, r);
        break;
    case CK_OP_MAP:
        r.value = ck_ref_map(o->map_fn, o->map_arg, r.value);
        ref_emit(R, opi, r);
        break;
    case CK_OP_FILTER: {
        uint32_t klen;
        const char *key = ck_workload_key(R->w, r.key, &klen);
        if (ck_ref_filter_keeps(o->filter_keep_ppm, key, klen, r.ts, r.value))
            ref_emit(R, opi, r);
        break;
    }
    case CK_OP_AGGREGATE: {
        if (r.optional)
            break; /* a copy that may not exist: verify.h, not counted */
        /* The update is caused by this record: it keeps its provenance. */
        int64_t *acc = &R->agg[opi][r.key];
        *acc = wrap_add(*acc, ck_ref_agg_add(o->agg_fn, r.value));
        r.value = *acc;
        ref_emit(R, opi, r);
        break;
    }
    case CK_OP_WINDOW: {
        if (r.optional)
            break;
        wentry *e = win_find(&R->win[opi], r.key, ck_ref_window_start(r.ts, o->window_ms));
        if (!e) {
            R->err = CK_ENOMEM;
            return;
        }
        if (o->agg_fn == CK_AGG_MEDIAN) {
            if (e->n == e->cap) {
                uint32_t nc = e->cap ? 2 * e->cap : 8;
                int64_t *nv = realloc(e->vals, nc * sizeof(*nv));
                if (!nv) {
                    R->err = CK_ENOMEM;
                    return;
                }
                e->vals = nv;
                e->cap = nc;
            }
            e->vals[e->n++] = r.value;
        } else {
            e->acc = wrap_add(e->acc, ck_ref_agg_add(o->agg_fn, r.value));
        }
        break;
    }
    case CK_OP_DISTINCT: {
        if (r.optional)
            break;
        wentry *e = win_find(&R->seen[opi], r.key, r.value);
        if (!e) {
            R->err = CK_ENOMEM;
            return;
        }
        if (e->acc++ == 0)
            ref_emit(R, opi, r);
        break;
    }
    case CK_OP_SINK: {
        if (tvec_push(&R->expected, opi, R->grouped[opi] | (r.optional ? TUPLE_OPTIONAL : 0),
                      r.key, r.ts, r.value, r.prov))
            R->err = CK_ENOMEM;
        if (r.optional)
            break;
        /* Running values after a reordering edge: the last one of a key is
         * the same in any order (counts and sums commute). */
        if (R->final[opi] && r.prov != CK_PROV_WINDOW) {
            /* what this record added, as the sink sees it (wrapping as Java's long) */
            int64_t add = (int64_t)((uint64_t)r.value -
                                    (uint64_t)(R->has[opi][r.key] ? R->final[opi][r.key] : 0));
            if (!R->has[opi][r.key] || add < R->step[opi][r.key])
                R->step[opi][r.key] = add;
            R->fall[opi][r.key] |= add < 0;
            R->final[opi][r.key] = r.value;
            R->has[opi][r.key] = 1;
        }
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
        /* Named by key and end time; caused by the whole window. */
        int64_t value = all[i].acc;
        if (R->g->spec.ops[opi].agg_fn == CK_AGG_MEDIAN)
            value = ck_ref_lower_median(all[i].vals, all[i].n);
        /* Fired by a watermark: in whichever generation it passed the
         * window's end, which the run does not say. */
        rrec r = {all[i].key, all[i].start + size - 1, value, CK_PROV_WINDOW, 0, R->ngens - 1, 0};
        ref_emit(R, opi, r);
    }
    free(all);
    return R->err;
}

/*
 * The generations that may have processed record k of partition p: the
 * one whose cut it is at or after and the next's it is before. A
 * generation whose cut is not known may have started anywhere before the
 * next known one: the record may be in it or the one before. Cuts rise
 * (each generation restored a snapshot taken after the one before's).
 */
static void source_gens(const ref *R, int p, int64_t k, rrec *r)
{
    r->gen_lo = r->gen_hi = 0;
    for (int gn = 1; gn < R->ngens; gn++) {
        const int64_t *from = R->gens[gn].from;
        if (!from) {
            r->gen_hi = gn;
        } else if (k >= from[p]) {
            r->gen_lo = r->gen_hi = gn;
        } else {
            break;
        }
    }
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
                    rrec r = {part->key[k], part->ts[k], part->value[k], ref_prov(p, k), 0, 0, 0};
                    source_gens(R, p, k, &r);
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
        for (size_t k = 0; k < R->win[i].cap; k++)
            free(R->win[i].e[k].vals);
        free(R->win[i].e);
        free(R->seen[i].e);
        free(R->final[i]);
        free(R->has[i]);
        free(R->step[i]);
        free(R->fall[i]);
    }
    free(R->expected.t);
}

/* ---- comparison ------------------------------------------------------------------- */

const char *ck_guarantee_name(ck_guarantee g)
{
    return g == CK_EXACTLY_ONCE ? "exactly-once" : "at-least-once";
}

/* True when an operator of kind `kind` on sink's input path has, upstream
 * of it, an edge that may reorder a key's records: rebalance, broadcast
 * (the copies of several producers interleave), or rescale to more
 * consumers than producers (round robin). Forward, hash and rescale to
 * fewer keep a key's records, which come from one source partition, in
 * order. A running aggregate's values, or which record a distinct passes,
 * then depend on arrival order. */
static int reordered_before(const ck_verify_gen *gens, int ngens, int sink, ck_op_kind kind)
{
    const ck_job_spec *s = &gens[0].g->spec;
    int seen = 0;
    for (int o = s->ops[sink].input; o >= 0; o = s->ops[o].input) {
        if (s->ops[o].kind == kind)
            seen = 1;
        int in = s->ops[o].input;
        if (!seen || in < 0)
            continue;
        ck_ship sh = s->ops[o].ship;
        if (sh == CK_SHIP_REBALANCE || sh == CK_SHIP_BROADCAST)
            return 1;
        /* a rescale edge reorders in any generation with more consumers */
        for (int gn = 0; sh == CK_SHIP_RESCALE && gn < ngens; gn++)
            if (gens[gn].g->spec.ops[in].parallelism < gens[gn].g->spec.ops[o].parallelism)
                return 1;
    }
    return 0;
}

/* True when sink's input passed through an aggregate or a window. */
static int after_aggregate(const ck_graph *g, int sink)
{
    for (int o = g->spec.ops[sink].input; o >= 0; o = g->spec.ops[o].input)
        if (g->spec.ops[o].kind == CK_OP_AGGREGATE || g->spec.ops[o].kind == CK_OP_WINDOW)
            return 1;
    return 0;
}

/*
 * Whether a running value r of key (a GROUPED_UNORDERED sink's, not a
 * window's) is one the guarantee allows in some arrival order. Where
 * every record of the key adds to it (counts; sums of values that are not
 * negative), the values rise from what the first record to arrive adds to
 * the final one: each lies within [the least a record adds, the final
 * value] exactly once; at least once, a replay may count a record twice,
 * so only the lower bound holds. A key some record takes away from has no
 * such bounds (its final value is still checked). Anything else passes.
 */
static int running_value_ok(const ref *R, ck_guarantee g, int op, uint32_t key, const ck_rec *r)
{
    if (!R->final[op] || r->prov == CK_PROV_WINDOW || !R->has[op][key] || R->fall[op][key])
        return 1;
    if (r->value < R->step[op][key])
        return 0;
    return g == CK_AT_LEAST_ONCE || r->value <= R->final[op][key];
}

/* Where an output came from, in words. */
static void describe_prov(char *buf, size_t len, uint64_t prov, int64_t ts)
{
    if (prov == CK_PROV_WINDOW)
        snprintf(buf, len, "the window ending at event time %lld ms", (long long)ts);
    else
        snprintf(buf, len, "partition %llu offset %llu (event time %lld ms)",
                 (unsigned long long)(prov >> CK_PROV_OFFSET_BITS),
                 (unsigned long long)(prov & (((uint64_t)1 << CK_PROV_OFFSET_BITS) - 1)),
                 (long long)ts);
}

/* Names what is wrong with the output of sink op for key (what, a
 * sentence's end), unless one with an earlier provenance is named: a
 * key's state lost or doubled at a cut shows first where it went wrong.
 * A second wrong of the same output (a value that differs: the one
 * received unexpected, the one expected lost) is added to the first. */
static void blame(ref *R, int op, uint32_t key, uint64_t prov, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void blame(ref *R, int op, uint32_t key, uint64_t prov, const char *fmt, ...)
{
    if (!R->blame)
        return;
    int n;
    if (R->blamed && prov == R->blame_prov && op == R->blame_op && key == R->blame_key) {
        size_t have = strlen(R->blame);
        n = (int)have + snprintf(R->blame + have, R->blamelen - have, "; ");
    } else {
        if (R->blamed && prov >= R->blame_prov)
            return;
        R->blamed = 1;
        R->blame_prov = prov;
        R->blame_op = op;
        R->blame_key = key;
        uint32_t klen = 0;
        const char *k = ck_workload_key(R->w, key, &klen);
        n = snprintf(R->blame, R->blamelen, "sink \"%s\" key \"%.*s\": ",
                     op < R->g->spec.nops ? R->g->spec.ops[op].name : "?",
                     (int)(klen > 64 ? 64 : klen), k);
    }
    if (n < 0 || (size_t)n >= R->blamelen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(R->blame + n, R->blamelen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Collects the sinks' outputs as tuples; records with keys the workload
 * does not have are unexpected at once, and so are running values out of
 * their bounds (running_value_ok). */
static int collect_output(const ck_sinkout *out, keymap *keys, ref *R, tvec *got,
                          ck_verdict *v, char *err, size_t errlen)
{
    const int *grouped = R->grouped;
    for (int i = 0; i < out->n; i++) {
        const ck_sinkout_stream *s = &out->s[i];
        int op = (int)(s->sink_id >> 16);
        size_t pos = 0;
        while (pos < s->len) {
            ck_elem e;
            size_t n = s->len - pos >= 4 ? (size_t)ck_get_u32(s->data + pos) + 4 : 0;
            if (n < CK_ELEM_PREFIX || n > s->len - pos ||
                ck_elem_decode(s->data + pos, n, &e) || e.tag != CK_EL_RECORD ||
                op >= CK_MAX_OPS) {
                snprintf(err, errlen, "output of sink %d subtask %u: malformed record at byte %zu",
                         op, s->sink_id & 0xffff, pos);
                return CK_ECORRUPT;
            }
            pos += n;
            const ck_rec *r = &e.u.rec;
            v->received++;
            int64_t key = keymap_find(keys, r->key, r->klen, -1);
            if (key >= 0 && !running_value_ok(R, v->guarantee, op, (uint32_t)key, r)) {
                v->unexpected++; /* a wrong value: its identity stays unmatched */
                char from[120];
                describe_prov(from, sizeof(from), r->prov, r->ts);
                blame(R, op, (uint32_t)key, r->prov,
                      "running value %lld for %s is outside what any order gives "
                      "[%lld, %lld]",
                      (long long)r->value, from, (long long)R->step[op][key],
                      (long long)R->final[op][key]);
                continue;
            }
            if (key < 0)
                v->unexpected++;
            else if (tvec_push(got, op, grouped[op], (uint32_t)key, r->ts, r->value, r->prov))
                return CK_ENOMEM;
            /* A key's final running value, at least once: or more. */
            if (key >= 0 && R->final[op] && R->has[op][key] == 1 && r->prov != CK_PROV_WINDOW &&
                (r->value == R->final[op][key] ||
                 (v->guarantee == CK_AT_LEAST_ONCE && r->value > R->final[op][key])))
                R->has[op][key] = 2;
        }
    }
    return CK_OK;
}

/*
 * Matches one partition: exp[0..ne) expected, got[0..ng) received. Each
 * received tuple is an occurrence of the expected tuple with its identity,
 * or unexpected; grouped, it must also carry at least the expected value
 * (else it is a wrong value: unexpected). Then per expected identity,
 * missing occurrences are lost and extra ones duplicated. Every counter
 * only adds differences that are not negative: none can wrap.
 */
static void match_partition(ptable *pt, const tuple *exp, size_t ne, const tuple *got,
                            size_t ng, ck_verdict *v, ref *R)
{
    /* At most ne distinct tuples: a table at most half full. */
    size_t cap = 16;
    while (cap < 2 * ne)
        cap <<= 1;
    if (cap > pt->alloc) {
        entry *e = realloc(pt->e, cap * sizeof(*e));
        if (!e) {
            pt->err = CK_ENOMEM;
            return;
        }
        pt->e = e;
        pt->alloc = cap;
    }
    pt->cap = cap;
    memset(pt->e, 0, cap * sizeof(*pt->e));
    for (size_t i = 0; i < ne; i++) {
        entry *e = ptable_find(pt, &exp[i], 1);
        if (exp[i].grouped & TUPLE_OPTIONAL)
            e->opt++;
        else
            e->exp++;
    }
    char from[120];
    for (size_t i = 0; i < ng; i++) {
        const tuple *t = &got[i];
        entry *e = ptable_find(pt, t, 0);
        if (!e || (GROUPING(t) == GROUPED_AT_LEAST && t->value < e->rep->value)) {
            v->unexpected++;
            describe_prov(from, sizeof(from), t->prov, t->ts);
            if (e)
                blame(R, t->op, t->key, t->prov, "value %lld for %s, below the %lld expected",
                      (long long)t->value, from, (long long)e->rep->value);
            else
                blame(R, t->op, t->key, t->prov,
                      "value %lld for %s, which the reference never produced",
                      (long long)t->value, from);
        } else {
            e->seen++;
        }
    }
    /* Optional copies that came count as expected, so that received =
     * expected - lost + duplicated + unexpected holds. */
    for (size_t j = 0; j < pt->cap; j++) {
        const entry *e = &pt->e[j];
        if (!e->rep)
            continue;
        const tuple *t = e->rep;
        uint64_t most = e->exp + e->opt;
        v->expected += e->seen <= e->exp ? e->exp : e->seen < most ? e->seen : most;
        if (e->seen == e->exp || (e->seen > e->exp && e->seen <= most))
            continue;
        describe_prov(from, sizeof(from), t->prov, t->ts);
        if (e->seen < e->exp) {
            v->lost += e->exp - e->seen;
            if (!v->partial)
                blame(R, t->op, t->key, t->prov, "value %lld for %s: %llu of %llu%s missing",
                  (long long)t->value, from, (unsigned long long)(e->exp - e->seen),
                  (unsigned long long)e->exp, e->opt ? " (or more)" : "");
        } else {
            v->duplicated += e->seen - most;
            if (v->guarantee == CK_EXACTLY_ONCE)
                blame(R, t->op, t->key, t->prov, "value %lld for %s: written %llu times, %llu%s expected",
                  (long long)t->value, from, (unsigned long long)e->seen,
                  (unsigned long long)e->exp, e->opt ? " or more" : "");
        }
    }
}

/* Partitions small enough to match in the caches. */
#define PART_MAX 1024

/* Matches exp[0..ne) with got[0..ng), which share the hash digits above
 * depth d: in one table when small, else bucket by bucket. */
static void match_range(ptable *pt, tuple *exp, size_t ne, tuple *got, size_t ng, int d,
                        ck_verdict *v, ref *R)
{
    if (pt->err)
        return;
    if ((ne <= PART_MAX && ng <= PART_MAX) || d == 8) {
        match_partition(pt, exp, ne, got, ng, v, R);
        return;
    }
    size_t es[257], gs[257];
    partition(exp, ne, d, es);
    partition(got, ng, d, gs);
    for (int b = 0; b < 256; b++)
        match_range(pt, exp + es[b], es[b + 1] - es[b], got + gs[b], gs[b + 1] - gs[b], d + 1,
                    v, R);
}

/* Matches expected with received. */
static int match(tvec *exp, tvec *got, ck_verdict *v, ref *R)
{
    ptable pt = {0};
    match_range(&pt, exp->t, exp->n, got->t, got->n, 0, v, R);
    free(pt.e);
    return pt.err;
}

_Static_assert(GROUPED_NO == (int)CK_GROUPING_EXACT && GROUPED_AT_LEAST == (int)CK_GROUPING_AT_LEAST &&
                   GROUPED_UNORDERED == (int)CK_GROUPING_RUNNING &&
                   GROUPED_FIRST == (int)CK_GROUPING_FIRST,
               "one numbering of the groupings");

ck_grouping ck_verify_grouping_gens(const ck_verify_gen *gens, int ngens, int sink,
                                    ck_guarantee guarantee)
{
    if (reordered_before(gens, ngens, sink, CK_OP_AGGREGATE))
        return CK_GROUPING_RUNNING;
    if (guarantee == CK_AT_LEAST_ONCE && after_aggregate(gens[0].g, sink))
        return CK_GROUPING_AT_LEAST;
    if (reordered_before(gens, ngens, sink, CK_OP_DISTINCT))
        return CK_GROUPING_FIRST;
    return CK_GROUPING_EXACT;
}

ck_grouping ck_verify_grouping(const ck_graph *g, int sink, ck_guarantee guarantee)
{
    ck_verify_gen one = {g, NULL};
    return ck_verify_grouping_gens(&one, 1, sink, guarantee);
}

void ck_running_free(ck_running *rv)
{
    free(rv->has);
    free(rv->bounded);
    free(rv->final);
    free(rv->least);
    memset(rv, 0, sizeof(*rv));
}

int ck_verify_running_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w, int sink,
                           ck_running *rv)
{
    memset(rv, 0, sizeof(*rv));
    const ck_graph *g = gens[0].g;
    if (sink < 0 || sink >= g->spec.nops || g->spec.ops[sink].kind != CK_OP_SINK ||
        ck_verify_grouping_gens(gens, ngens, sink, CK_EXACTLY_ONCE) != CK_GROUPING_RUNNING)
        return CK_EINVAL;
    ref R;
    memset(&R, 0, sizeof(R));
    R.g = g;
    R.gens = gens;
    R.ngens = ngens;
    R.w = w;
    size_t n = (size_t)w->nkeys + 1;
    R.grouped[sink] = GROUPED_UNORDERED;
    R.final[sink] = calloc(n, sizeof(int64_t));
    R.has[sink] = calloc(n, 1);
    R.step[sink] = calloc(n, sizeof(int64_t));
    R.fall[sink] = calloc(n, 1);
    rv->bounded = calloc(n, 1);
    int rc = !R.final[sink] || !R.has[sink] || !R.step[sink] || !R.fall[sink] || !rv->bounded
                 ? CK_ENOMEM
                 : ref_run(&R);
    if (!rc) {
        rv->nkeys = w->nkeys;
        for (int64_t k = 0; k < w->nkeys; k++)
            rv->bounded[k] = R.has[sink][k] && !R.fall[sink][k];
        rv->has = R.has[sink];
        rv->final = R.final[sink];
        rv->least = R.step[sink];
        R.has[sink] = NULL;
        R.final[sink] = R.step[sink] = NULL;
    } else {
        free(rv->bounded);
        rv->bounded = NULL;
    }
    ref_free(&R);
    return rc;
}

int ck_verify_running(const ck_graph *g, const ck_workload *w, int sink, ck_running *rv)
{
    ck_verify_gen one = {g, NULL};
    return ck_verify_running_gens(&one, 1, w, sink, rv);
}

/* Checks that the generations are of one job: its operators, in order. */
static int gens_check(const ck_verify_gen *gens, int ngens, char *err, size_t errlen)
{
    if (ngens < 1 || !gens[0].g) {
        snprintf(err, errlen, "no generation of the job to verify against");
        return CK_EINVAL;
    }
    for (int gn = 1; gn < ngens; gn++) {
        const ck_job_spec *a = &gens[0].g->spec, *b = gens[gn].g ? &gens[gn].g->spec : NULL;
        int same = b && a->nops == b->nops;
        for (int i = 0; same && i < a->nops; i++)
            same = a->ops[i].kind == b->ops[i].kind && a->ops[i].input == b->ops[i].input &&
                   a->ops[i].ship == b->ops[i].ship;
        if (!same) {
            snprintf(err, errlen, "generation %d of the job has other operators than the first",
                     gn);
            return CK_EINVAL;
        }
    }
    return CK_OK;
}

int ck_verify(const ck_graph *g, const ck_workload *w, const ck_sinkout *out,
              ck_guarantee guarantee, int partial, ck_verdict *v, char *err, size_t errlen)
{
    ck_verify_gen one = {g, NULL};
    return ck_verify_gens(&one, 1, w, out, guarantee, partial, v, err, errlen);
}

int ck_verify_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w,
                   const ck_sinkout *out, ck_guarantee guarantee, int partial, ck_verdict *v,
                   char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    v->guarantee = guarantee;
    v->partial = partial;
    int rc = gens_check(gens, ngens, err, errlen);
    if (rc)
        return rc;
    const ck_graph *g = gens[0].g;
    ref R;
    memset(&R, 0, sizeof(R));
    R.g = g;
    R.gens = gens;
    R.ngens = ngens;
    R.w = w;
    R.blame = v->first_wrong;
    R.blamelen = sizeof(v->first_wrong);
    for (int i = 0; i < g->spec.nops; i++) {
        if (g->spec.ops[i].kind != CK_OP_SINK)
            continue;
        R.grouped[i] = (int)ck_verify_grouping_gens(gens, ngens, i, guarantee);
        if (R.grouped[i] == GROUPED_UNORDERED) {
            R.final[i] = calloc((size_t)w->nkeys + 1, sizeof(int64_t));
            R.has[i] = calloc((size_t)w->nkeys + 1, 1);
            R.step[i] = calloc((size_t)w->nkeys + 1, sizeof(int64_t));
            R.fall[i] = calloc((size_t)w->nkeys + 1, 1);
            if (!R.final[i] || !R.has[i] || !R.step[i] || !R.fall[i]) {
                snprintf(err, errlen, "reference computation: out of memory");
                ref_free(&R);
                return CK_ENOMEM;
            }
        }
    }
    rc = ref_run(&R);
    if (rc) {
        snprintf(err, errlen, "reference computation: out of memory");
        ref_free(&R);
        return rc;
    }
    tvec got = {0};
    keymap keys = {0};
    if ((rc = keymap_build(&keys, w)))
        snprintf(err, errlen, "comparing outputs: out of memory");
    else
        rc = collect_output(out, &keys, &R, &got, v, err, errlen);
    if (!rc && (rc = match(&R.expected, &got, v, &R)))
        snprintf(err, errlen, "comparing outputs: out of memory");
    for (int i = 0; i < g->spec.nops && !rc && !partial; i++)
        for (int64_t k = 0; R.final[i] && k < w->nkeys; k++)
            if (R.has[i][k] == 1) {
                v->wrong_totals++;
                blame(&R, i, (uint32_t)k, UINT64_MAX,
                      "no output carried its final running value %lld",
                      (long long)R.final[i][k]);
            }
    free(keys.slot);
    free(got.t);
    ref_free(&R);
    if (rc)
        return rc;
    v->ok = (partial || v->lost == 0) && v->unexpected == 0 && v->wrong_totals == 0 &&
            (guarantee == CK_AT_LEAST_ONCE || v->duplicated == 0);
    if (v->ok)
        v->first_wrong[0] = 0;
    return CK_OK;
}
