#include "operator.h"

#include <stdio.h>
#include <stdlib.h>

#include "bytes.h"
#include "coordinator.h"
#include "error.h"
#include "keygroup.h"
#include "snapshot.h"

/* The states of keyed operators, and their values' fields. */
static const ck_state_desc agg_states[] = {{"running", CK_STATE_VALUE, 1}};
enum { AGG_ACC = 0 };

static const ck_state_desc win_states[] = {{"window", CK_STATE_VALUE, 2}};
enum { WIN_ACC = 0, WIN_MAX_INGEST = 1 }; /* latest ingest time among its records */

/* A window whose function needs every value (median) keeps them too. */
static const ck_state_desc win_list_states[] = {{"window", CK_STATE_VALUE, 2},
                                                {"elements", CK_STATE_LIST, 1}};
enum { WIN_STATE = 0, WIN_ELEMENTS = 1 };

/* distinct: per key, a map from each value it had to how many times. */
static const ck_state_desc distinct_states[] = {{"seen", CK_STATE_MAP, 1}};
enum { DISTINCT_SEEN = 0 };

const ck_state_desc *ck_op_states(const ck_op_spec *s, int *n)
{
    switch (s->kind) {
    case CK_OP_AGGREGATE:
        *n = 1;
        return agg_states;
    case CK_OP_WINDOW:
        if (s->agg_fn == CK_AGG_MEDIAN) {
            *n = 2;
            return win_list_states;
        }
        *n = 1;
        return win_states;
    case CK_OP_DISTINCT:
        *n = 1;
        return distinct_states;
    default:
        *n = 0;
        return NULL;
    }
}

static int op_source(ck_op *op, ck_rec *r);
static int op_map(ck_op *op, ck_rec *r);
static int op_filter(ck_op *op, ck_rec *r);
static int aggregate_record(ck_op *op, ck_rec *r);
static int window_record(ck_op *op, ck_rec *r);
static int sink_record(ck_op *op, ck_rec *r);
static int distinct_record(ck_op *op, ck_rec *r);
static int buffer_record(ck_op *op, ck_rec *r);

static ck_op_fn process_fn(ck_op_kind k)
{
    switch (k) {
    case CK_OP_SOURCE:
        return op_source;
    case CK_OP_MAP:
        return op_map;
    case CK_OP_FILTER:
        return op_filter;
    case CK_OP_AGGREGATE:
        return aggregate_record;
    case CK_OP_WINDOW:
        return window_record;
    case CK_OP_SINK:
        return sink_record;
    case CK_OP_DISTINCT:
        return distinct_record;
    case CK_OP_BUFFER:
        return buffer_record;
    }
    return NULL;
}

/* Opens op's keyed-state backend instance. */
static int open_backend(ck_op *op, int subtask, const ck_chain_state *st, char *err,
                        size_t errlen);

/* Opens op's keyed-state backend instance, wrapped in a changelog backend
 * when the changelog is enabled. */
static int open_kstate(ck_op *op, int subtask, const ck_chain_state *st, char *err,
                       size_t errlen)
{
    int rc = open_backend(op, subtask, st, err, errlen);
    if (rc || !st || !st->changelog)
        return rc;
    op->clog = malloc(sizeof(*op->clog));
    ck_kstate *w = op->clog ? ck_clog_kstate_new(op->ks, op->clog) : NULL;
    if (!w) {
        free(op->clog);
        op->clog = NULL;
        return CK_ENOMEM; /* op->ks goes with the chain */
    }
    ck_clog_init(op->clog, (int)(op->spec - op->chain->g->spec.ops), op->ks->states,
                 op->ks->nstates);
    op->ks = w;
    return CK_OK;
}

static int open_backend(ck_op *op, int subtask, const ck_chain_state *st, char *err,
                        size_t errlen)
{
    int nd;
    const ck_state_desc *d = ck_op_states(op->spec, &nd);
    int type = st ? st->type : CK_BACKEND_HASHMAP;
    if (type == CK_BACKEND_HASHMAP) {
        op->ks = ck_kstate_new(type, op->kgr, d, nd);
        return op->ks ? CK_OK : CK_ENOMEM;
    }
    if (!ck_kstate_spec_ok(op->kgr, d, nd))
        return CK_EINVAL;
    if (!st->plat || !st->plat->ops->kstate_open) {
        snprintf(err, errlen, "state.backend.type %s: this platform has no local disk for it",
                 type == CK_BACKEND_ROCKSDB ? "rocksdb" : "?");
        return CK_EINVAL;
    }
    ck_kstate_spec spec = {.type = type,
                           .kgr = op->kgr,
                           .states = d,
                           .nstates = nd,
                           .op = (int)(op->spec - op->chain->g->spec.ops),
                           .subtask = subtask,
                           .attempt = st->attempt,
                           .write_buffer = st->write_buffer,
                           .target_file = st->target_file,
                           .level_base = st->level_base,
                           .max_parallelism = op->spec->max_parallelism,
                           .rescale = st->rescale};
    return st->plat->ops->kstate_open(st->plat, &spec, &op->ks, err, errlen);
}

int ck_chain_init(ck_chain *c, const ck_graph *g, int vertex, int subtask,
                  ck_rp_out *rps, int nrps, const ck_chain_state *st, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const ck_vertex *v = &g->v[vertex];
    c->g = g;
    c->vertex = vertex;
    c->subtask = subtask;
    c->rps = rps;
    c->nrps = nrps;
    for (int k = 0; k < v->nops; k++) {
        ck_op *op = &c->ops[k];
        const ck_op_spec *s = &g->spec.ops[v->ops[k]];
        op->spec = s;
        op->chain = c;
        /* The chain holds the operators set up so far: on a failure below,
         * ck_chain_free frees those and never touches one not reached. */
        c->nops = k + 1;
        op->process = process_fn(s->kind);
        op->wm = CK_WM_MIN;
        if (ck_op_keyed(s->kind)) {
            op->kgr = ck_kg_range(subtask, s->parallelism, s->max_parallelism);
            int rc = open_kstate(op, subtask, st, err, errlen);
            if (rc) {
                ck_chain_free(c);
                return rc;
            }
            ck_timerq_init(&op->timers);
        }
        if (s->kind == CK_OP_SINK) {
            op->sink_id = ck_sink_id(v->ops[k], subtask);
            op->txn = 0; /* the task turns on two-phase commit */
        }
    }
    c->keyed_head = c->nops > 0 && ck_op_keyed(c->ops[0].spec->kind);
    /* Wire successors: chained operators and outgoing edges. */
    for (int k = 0; k < v->nops; k++) {
        ck_op *op = &c->ops[k];
        int opi = v->ops[k];
        for (int j = 0; j < v->nops; j++)
            if (g->spec.ops[v->ops[j]].input == opi)
                op->next[op->nnext++] = &c->ops[j];
        for (int r = 0; r < nrps; r++)
            if (rps[r].edge->src_op == opi)
                op->rp[op->nrp++] = r;
    }
    return CK_OK;
}

void ck_chain_free(ck_chain *c)
{
    for (int k = 0; k < c->nops; k++) {
        ck_op *op = &c->ops[k];
        if (ck_op_keyed(op->spec->kind)) {
            ck_kstate_free(op->ks);
            op->ks = NULL;
            ck_timerq_free(&op->timers);
        }
        if (op->clog) {
            ck_clog_free(op->clog);
            free(op->clog);
            op->clog = NULL;
        }
        free(op->held.data);
        free(op->out);
        free(op->scratch);
        free(op->ingest);
        free(op->open.cnt);
        for (int p = 0; p < op->npend; p++)
            free(op->pend[p].cnt);
    }
    c->nops = 0;
}


static CK_NOINLINE int emit_all(ck_op *op, ck_rec *r);

/* Hands r to the operators chained after op and to its network outputs
 * (r is the caller's copy: the key's hash may be filled in). */
static inline int emit(ck_op *op, ck_rec *r)
{
    if (op->nnext == 1 && op->nrp == 0) {
        /* One chained successor (the common case): r is the caller's
         * copy and nobody else reads it, so it is handed on as it is. */
        ck_op *next = op->next[0];
        next->nproc++;
        return next->process(next, r);
    }
    return emit_all(op, r);
}

int ck_rp_out_route(ck_rp_out *o, ck_rec *r)
{
    int sub = 0; /* forward: its one subpartition */
    switch (o->edge->ship) {
    case CK_SHIP_HASH:
        if (!r->hashed) { /* it goes with the record: the keyed operator needs it too */
            r->jhash = ck_kg_java_hash(r->key, r->klen);
            r->hashed = 1;
        }
        sub = o->kg_sub[ck_kg_of_hash(r->jhash, o->edge->dst_max_parallelism)];
        break;
    case CK_SHIP_REBALANCE:
    case CK_SHIP_RESCALE:
        sub = o->rr;
        if (++o->rr == o->rp.nsub)
            o->rr = 0;
        break;
    case CK_SHIP_BROADCAST: /* every one: the caller's */
    case CK_SHIP_FORWARD:
        break;
    }
    return sub;
}

/* emit, in general: copies for each chained successor, then the network. */
static CK_NOINLINE int emit_all(ck_op *op, ck_rec *r)
{
    int rc;
    for (int i = 0; i < op->nnext; i++) {
        ck_op *next = op->next[i];
        ck_rec copy = *r;
        next->nproc++;
        if ((rc = next->process(next, &copy)))
            return rc;
    }
    for (int i = 0; i < op->nrp; i++) {
        ck_rp_out *o = &op->chain->rps[op->rp[i]];
        int sub;
        if (o->edge->ship == CK_SHIP_BROADCAST) {
            for (sub = 0; sub < o->rp.nsub - 1; sub++)
                if ((rc = ck_rp_emit_rec(&o->rp, sub, r)))
                    return rc;
            /* the last below */
        } else {
            sub = ck_rp_out_route(o, r);
        }
        if ((rc = ck_rp_emit_rec(&o->rp, sub, r)))
            return rc;
        op->chain->records_out++;
    }
    return CK_OK;
}

/* a + b wrapping around as Java's long does (Flink's sum): values come
 * from other subtasks' frames, and signed overflow would be undefined. */
static inline int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int grow_slow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return CK_ENOMEM;
    *p = q;
    *cap = n;
    return CK_OK;
}

static inline int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? CK_OK : grow_slow(p, cap, need, elem);
}

static int sink_record(ck_op *op, ck_rec *r)
{
    /* The sink keeps key, time, value and ingest time, not the payload. */
    size_t n = ck_rec_size(r, 0);
    if (grow((void **)&op->out, &op->out_cap, op->out_len + n, 1) ||
        grow((void **)&op->ingest, &op->cap_ingest, op->n_ingest + 1, sizeof(int64_t)))
        return CK_ENOMEM;
    ck_rec_encode(op->out + op->out_len, r, 0, n);
    op->out_len += n;
    op->ingest[op->n_ingest++] = r->ingest;
    op->chain->records_out++;
    return CK_OK;
}

/* The address of (key, ns) in op's state st, located. */
static inline ck_kkey key_of(const ck_op *op, int st, const char *key, uint32_t klen, int32_t jh,
                             int64_t ns)
{
    ck_kkey k = {.loc = {jh, ck_kg_of_hash(jh, op->spec->max_parallelism), ns, 0},
                 .key = key,
                 .klen = klen};
    ck_ks_locate(op->ks, st, &k);
    return k;
}

/* key_of the record's key in state 0, from the task's hint when the hint
 * is that. */
static inline ck_kkey locate(const ck_op *op, const ck_rec *r, int64_t ns)
{
    int32_t jh = ck_rec_jhash(r);
    const ck_keyloc *h = op->hint;
    if (h && h->jhash == jh && h->ns == ns)
        return (ck_kkey){.loc = *h, .key = r->key, .klen = r->klen};
    return key_of(op, 0, r->key, r->klen, jh, ns);
}

/* Why an acquire found nothing: a key group that is not the subtask's (a
 * record routed wrongly), or memory. */
static inline int acquire_error(const ck_op *op, const ck_kkey *k)
{
    return !ck_kgr_contains(op->kgr, k->loc.kg) ? CK_EPROTO : CK_ENOMEM;
}

/* The address of record r's value in distinct's map state: the value, 8
 * bytes little-endian, in uk, is the user key. */
static inline ck_kkey distinct_key(const ck_op *op, const ck_rec *r, uint8_t *uk)
{
    int32_t jh = ck_rec_jhash(r);
    ck_put_u64(uk, (uint64_t)r->value);
    ck_kkey k = {.loc = {jh, ck_kg_of_hash(jh, op->spec->max_parallelism), 0, 0},
                 .key = r->key,
                 .klen = r->klen,
                 .ukey = uk,
                 .uklen = 8};
    ck_ks_locate(op->ks, DISTINCT_SEEN, &k);
    return k;
}

/* Passes a record on the first time its key has its value (Flink: a keyed
 * process function over a MapState<value, count>). */
static int distinct_record(ck_op *op, ck_rec *r)
{
    uint8_t uk[8];
    ck_kkey k = distinct_key(op, r, uk);
    int created, rc;
    int64_t *v = ck_ks_acquire(op->ks, DISTINCT_SEEN, &k, 1, &created);
    if (!v)
        return acquire_error(op, &k);
    v[0]++;
    if ((rc = ck_ks_release(op->ks, DISTINCT_SEEN, &k, v, 1)))
        return rc;
    return created ? emit(op, r) : CK_OK;
}

static int aggregate_record(ck_op *op, ck_rec *r)
{
    ck_kkey k = locate(op, r, 0);
    int created, rc;
    int64_t *v = ck_ks_acquire(op->ks, 0, &k, 1, &created);
    if (!v)
        return acquire_error(op, &k);
    v[AGG_ACC] = wrap_add(v[AGG_ACC], ck_udf_agg_add(op->spec->agg_fn, r));
    /* r is the caller's copy: it becomes the output. */
    r->value = v[AGG_ACC];
    if ((rc = ck_ks_release(op->ks, 0, &k, v, 1)))
        return rc;
    r->plen = 0;
    r->payload = NULL;
    return emit(op, r);
}

static int window_record(ck_op *op, ck_rec *r)
{
    int64_t size = op->spec->window_ms;
    if (r->ts < INT64_MIN + size || r->ts > INT64_MAX - size) {
        /* Its window would end beyond the int64 range: no watermark can
         * close it. Only a damaged frame carries such a time. */
        op->chain->late_dropped++;
        return CK_OK;
    }
    int64_t start = ck_udf_window_start(r->ts, size);
    int64_t max_ts = start + size - 1;
    if (max_ts <= op->wm) {
        op->chain->late_dropped++;
        return CK_OK;
    }
    ck_kkey k = locate(op, r, start);
    int created, rc;
    int64_t *v = ck_ks_acquire(op->ks, 0, &k, 1, &created);
    if (!v)
        return acquire_error(op, &k);
    v[WIN_ACC] = wrap_add(v[WIN_ACC], ck_udf_agg_add(op->spec->agg_fn, r));
    if (r->ingest > v[WIN_MAX_INGEST])
        v[WIN_MAX_INGEST] = r->ingest;
    if ((rc = ck_ks_release(op->ks, 0, &k, v, 1)))
        return rc;
    if (op->spec->agg_fn == CK_AGG_MEDIAN) {
        k.loc.hash = 0; /* the list's own location */
        ck_ks_locate(op->ks, WIN_ELEMENTS, &k);
        if ((rc = op->ks->ops->list_add(op->ks, WIN_ELEMENTS, &k, &r->value)))
            return rc;
    }
    if (created)
        return ck_timerq_add(&op->timers, max_ts, k.loc.kg, k.loc.jhash, r->key, r->klen, start);
    return CK_OK;
}

static int op_source(ck_op *op, ck_rec *r)
{
    return emit(op, r);
}

static int op_map(ck_op *op, ck_rec *r)
{
    ck_udf_map(op->spec->map_fn, op->spec->map_arg, r);
    return emit(op, r);
}

static int op_filter(ck_op *op, ck_rec *r)
{
    if (!r->hashed) { /* the filter hashes the key: keep it for a keyBy after */
        r->jhash = ck_kg_java_hash(r->key, r->klen);
        r->hashed = 1;
    }
    return ck_udf_filter(op->spec->filter_keep_ppm, r) ? emit(op, r) : CK_OK;
}

/* The median of the window at k (its elements' list). */
static int window_median(ck_op *op, const ck_kkey *k, int64_t *out)
{
    uint32_t n;
    const int64_t *vals = op->ks->ops->list_get(op->ks, WIN_ELEMENTS, k, &n);
    if (!vals)
        return n ? CK_ENOMEM : CK_EINTERNAL; /* a window without its values */
    if (grow((void **)&op->scratch, &op->scratch_cap, n, sizeof(int64_t)))
        return CK_ENOMEM;
    memcpy(op->scratch, vals, (size_t)n * sizeof(int64_t));
    *out = ck_udf_median(op->scratch, n);
    return CK_OK;
}

static int op_watermark(ck_op *op, int64_t wm);

/* Hands watermark wm to the operators after op and its network outputs. */
static int wm_forward(ck_op *op, int64_t wm)
{
    int rc;
    for (int i = 0; i < op->nnext; i++)
        if ((rc = op_watermark(op->next[i], wm)))
            return rc;
    ck_elem e = {.tag = CK_EL_WATERMARK};
    e.u.wm = wm;
    for (int i = 0; i < op->nrp; i++)
        if ((rc = ck_rp_broadcast(&op->chain->rps[op->rp[i]].rp, &e)))
            return rc;
    return CK_OK;
}

/* Passes every record a buffer holds on, in order, and empties it. */
static int buffer_flush(ck_op *op)
{
    size_t pos = 0;
    const uint8_t *e;
    uint32_t len;
    int rc = CK_OK;
    while (!rc && ck_oplist_next(&op->held, &pos, &e, &len)) {
        ck_elem el;
        rc = ck_elem_decode(e, len, &el); /* its own encoding, or checked at restore */
        if (!rc)
            rc = emit(op, &el.u.rec);
    }
    op->held.n = 0;
    op->held.len = 0;
    return rc;
}

static int buffer_record(ck_op *op, ck_rec *r)
{
    size_t n = ck_rec_size(r, r->plen);
    if (n - 4 > CK_OPSTATE_MAX_ENTRY)
        return CK_ETOOBIG;
    if (grow((void **)&op->held.data, &op->held_cap, op->held.len + n + 4, 1))
        return CK_ENOMEM;
    ck_put_u32(op->held.data + op->held.len, (uint32_t)n);
    ck_rec_encode(op->held.data + op->held.len + 4, r, r->plen, n);
    op->held.len += n + 4;
    op->held.n++;
    op->seen++;
    if (op->held.n < (uint32_t)op->spec->buffer_count)
        return CK_OK;
    int rc = buffer_flush(op);
    if (!rc && op->wm_held) {
        op->wm_held = 0;
        rc = wm_forward(op, op->wm);
    }
    return rc;
}

static int op_watermark(ck_op *op, int64_t wm)
{
    int rc;
    if (wm <= op->wm)
        return CK_OK;
    op->wm = wm;
    if (op->spec->kind == CK_OP_WINDOW) {
        ck_timer t;
        while (ck_timerq_pop(&op->timers, wm, &t)) {
            ck_kkey k = key_of(op, 0, t.key, t.klen, t.jhash, t.ns);
            int created;
            int64_t *v = ck_ks_acquire(op->ks, 0, &k, 0, &created);
            if (v) {
                ck_rec out = {
                    .ts = t.ts,
                    .value = v[WIN_ACC],
                    .ingest = v[WIN_MAX_INGEST],
                    .prov = CK_PROV_WINDOW,
                    .key = t.key,
                    .klen = t.klen,
                    .jhash = t.jhash,
                    .hashed = 1,
                };
                rc = ck_ks_release(op->ks, 0, &k, v, 0);
                ck_kkey kl = k;
                if (!rc && op->spec->agg_fn == CK_AGG_MEDIAN) {
                    ck_ks_locate(op->ks, WIN_ELEMENTS, &kl);
                    rc = window_median(op, &kl, &out.value);
                }
                if (!rc)
                    rc = emit(op, &out);
                if (!rc)
                    rc = ck_ks_remove(op->ks, 0, &k);
                if (!rc && op->spec->agg_fn == CK_AGG_MEDIAN)
                    rc = ck_ks_remove(op->ks, WIN_ELEMENTS, &kl);
            } else {
                rc = CK_OK;
            }
            free(t.key);
            if (rc)
                return rc;
        }
    }
    if (op->spec->kind == CK_OP_BUFFER && op->held.n) {
        if (wm != CK_WM_MAX) {
            op->wm_held = 1; /* passed on after the records it holds */
            return CK_OK;
        }
        op->wm_held = 0;
        if ((rc = buffer_flush(op))) /* the end of input: everything goes */
            return rc;
    }
    return wm_forward(op, wm);
}

int ck_chain_record(ck_chain *c, ck_rec *r)
{
    ck_op *head = &c->ops[0];
    head->nproc++;
    return head->process(head, r);
}

/* The largest factor of the slowdowns of kind `write` in force on op at now. */
static double slowed(const ck_chain *c, int opi, ck_time now, int write)
{
    double factor = 1;
    for (int i = 0; i < c->nslow; i++)
        if (c->slow[i].op == opi && c->slow[i].write == write && now >= c->slow[i].from &&
            now < c->slow[i].to && c->slow[i].factor > factor)
            factor = c->slow[i].factor;
    return factor;
}

double ck_chain_record_cost(const ck_chain *c, ck_time now, double *wait_ns)
{
    double flops = 0, wait = 0;
    for (int k = 0; k < c->nops; k++) {
        const ck_op_spec *s = c->ops[k].spec;
        int opi = (int)(s - c->g->spec.ops);
        flops += s->cpu_flops * slowed(c, opi, now, 0);
        wait += (double)s->write_ns * slowed(c, opi, now, 1);
    }
    *wait_ns = wait;
    return flops;
}

double ck_chain_take_flops(ck_chain *c, ck_time now, ck_time *wait_ns)
{
    double flops = 0, wait = 0;
    for (int k = 0; k < c->nops; k++) {
        const ck_op_spec *s = c->ops[k].spec;
        int opi = (int)(s - c->g->spec.ops);
        double n = (double)c->ops[k].nproc;
        flops += n * s->cpu_flops * slowed(c, opi, now, 0);
        if (s->write_ns > 0)
            wait += n * (double)s->write_ns * slowed(c, opi, now, 1);
        c->ops[k].nproc = 0;
        /* What the state backend did on its own store (RocksDB's gets and
         * puts), charged to the operator's thread as well. */
        ck_kstate *ks = c->ops[k].ks;
        if (ks) {
            ck_kstate_work *w = &c->ops[k].charged;
            flops += (double)(ks->work.reads - w->reads) * CK_STATE_READ_FLOPS +
                     (double)(ks->work.writes - w->writes) * CK_STATE_WRITE_FLOPS;
            w->reads = ks->work.reads;
            w->writes = ks->work.writes;
        }
    }
    *wait_ns = (ck_time)wait;
    return flops;
}

double ck_chain_take_background(ck_chain *c, uint64_t *disk_bytes, int *notes)
{
    double flops = 0;
    *disk_bytes = 0;
    if (notes)
        *notes = 0;
    for (int k = 0; k < c->nops; k++) {
        ck_kstate *ks = c->ops[k].ks;
        if (!ks)
            continue;
        ck_kstate_work *w = &c->ops[k].charged;
        /* State that weighs more than it holds (value_size): its files as
         * much heavier as its latest snapshot found them (ck_op.heavy). */
        double heavy = c->ops[k].heavy > 1.0 ? c->ops[k].heavy : 1.0;
        double flushed = heavy * (double)(ks->work.flushed - w->flushed);
        double compacted = heavy * (double)(ks->work.compacted - w->compacted);
        flops += flushed * CK_STATE_FLUSH_FLOPS_PER_BYTE + compacted * CK_STATE_COMPACT_FLOPS_PER_BYTE;
        *disk_bytes += (uint64_t)(flushed + 2 * compacted);
        if (notes && ks->work.flushes != w->flushes)
            *notes |= 1 << CK_NOTE_STATE_FLUSH;
        if (notes && ks->work.compactions != w->compactions)
            *notes |= 1 << CK_NOTE_STATE_COMPACTION;
        w->flushes = ks->work.flushes;
        w->compactions = ks->work.compactions;
        w->flushed = ks->work.flushed;
        w->compacted = ks->work.compacted;
        /* a rescale's rebuild (native_rescale), by the rebuild's cost model */
        ck_kstate_rebuild rb = ck_kstate_rebuild_since(&ks->work.rebuild, &w->rebuild);
        uint64_t rdisk = 0;
        flops += ck_kstate_rebuild_cost(&rb, heavy, &rdisk);
        *disk_bytes += rdisk;
        if (notes && rb.flushes)
            *notes |= 1 << CK_NOTE_STATE_FLUSH;
        if (notes && rb.compactions)
            *notes |= 1 << CK_NOTE_STATE_COMPACTION;
        w->rebuild = ks->work.rebuild;
    }
    return flops;
}

ck_keyloc ck_chain_locate(const ck_chain *c, const ck_rec *r)
{
    const ck_op *op = &c->ops[0];
    if (op->spec->kind == CK_OP_DISTINCT) { /* for the prefetch only: see distinct_record */
        uint8_t uk[8];
        return distinct_key(op, r, uk).loc;
    }
    int64_t ns = op->spec->kind == CK_OP_WINDOW ? ck_udf_window_start(r->ts, op->spec->window_ms)
                                                : 0;
    return key_of(op, 0, r->key, r->klen, ck_rec_jhash(r), ns).loc;
}

void ck_chain_prefetch(const ck_chain *c, const ck_keyloc *l)
{
    ck_kkey k = {.loc = *l};
    ck_ks_prefetch(c->ops[0].ks, 0, &k);
}

int ck_chain_record_at(ck_chain *c, ck_rec *r, const ck_keyloc *l)
{
    ck_op *head = &c->ops[0];
    head->nproc++;
    head->hint = l;
    int rc = head->process(head, r);
    head->hint = NULL;
    return rc;
}

int ck_chain_watermark(ck_chain *c, int64_t wm)
{
    return op_watermark(&c->ops[0], wm);
}

uint64_t ck_chain_state_entries(const ck_chain *c)
{
    uint64_t n = 0;
    for (int k = 0; k < c->nops; k++)
        if (ck_op_keyed(c->ops[k].spec->kind))
            n += c->ops[k].ks->ops->entries(c->ops[k].ks);
    return n;
}

/* A buffer's operator state, copied into cap (operator index opi). */
static int buffer_capture(const ck_op *op, ck_capture *cap, int opi)
{
    ck_opstate *os = ck_capture_opstate(cap, opi);
    ck_oplist *l = os ? ck_opstate_add_list(os, CK_BUFFER_LIST, CK_OPSTATE_SPLIT) : NULL;
    if (!l)
        return CK_ENOMEM;
    if (op->held.len) {
        if (!(l->data = malloc(op->held.len)))
            return CK_ENOMEM;
        memcpy(l->data, op->held.data, op->held.len);
        l->len = op->held.len;
        l->n = op->held.n;
    }
    if (op->spec->buffer_seen) {
        ck_oplist *u = ck_opstate_add_list(os, CK_BUFFER_SEEN, CK_OPSTATE_UNION);
        uint8_t e[12];
        ck_put_u32(e, (uint32_t)op->chain->subtask);
        ck_put_u64(e + 4, op->seen);
        if (!u || ck_oplist_add(u, e, sizeof(e)))
            return CK_ENOMEM;
    }
    return CK_OK;
}

/* Puts entry e of buffer list l back (buffer_restore). */
static int buffer_entry(ck_op *op, const ck_oplist *l, const uint8_t *e, uint32_t len)
{
    if (!strcmp(l->name, CK_BUFFER_LIST) && l->mode == CK_OPSTATE_SPLIT) {
        ck_elem el;
        if (ck_elem_decode(e, len, &el) || el.tag != CK_EL_RECORD)
            return CK_ECORRUPT;
        if (grow((void **)&op->held.data, &op->held_cap, op->held.len + len + 4, 1))
            return CK_ENOMEM;
        ck_put_u32(op->held.data + op->held.len, len);
        memcpy(op->held.data + op->held.len + 4, e, len);
        op->held.len += (size_t)len + 4;
        op->held.n++;
        return CK_OK;
    }
    if (!strcmp(l->name, CK_BUFFER_SEEN) && l->mode == CK_OPSTATE_UNION) {
        if (len != 12)
            return CK_ECORRUPT;
        if (ck_get_u32(e) % (uint32_t)op->spec->parallelism == (uint32_t)op->chain->subtask)
            op->seen += ck_get_u64(e + 4);
        return CK_OK;
    }
    return CK_ECORRUPT; /* not a buffer's list */
}

/* Takes a buffer's operator state back: the records it held, after any
 * it holds already (a rescale may hand it several old subtasks' lists),
 * and its share of the union counts; of another parallelism, the entries
 * deal gives alone (ck_chain_restore_part). */
static int buffer_restore(ck_op *op, const ck_opstate *o, ck_chain_deal *deal)
{
    for (int i = 0; i < o->nlists; i++) {
        const ck_oplist *l = &o->lists[i];
        size_t pos = 0;
        const uint8_t *e;
        uint32_t len;
        int rc;
        if (!deal) {
            while (ck_oplist_next(l, &pos, &e, &len))
                if ((rc = buffer_entry(op, l, e, len)))
                    return rc;
            continue;
        }
        if (strcmp(l->name, CK_BUFFER_LIST) && strcmp(l->name, CK_BUFFER_SEEN))
            return CK_ECORRUPT; /* not a buffer's list */
        for (uint32_t c = 0; c < deal->nv; c++) {
            const ck_restore_chunk *ch = &deal->v[c];
            if (ch->op != (uint32_t)o->op || ch->old != deal->old || strcmp(ch->name, l->name))
                continue;
            if (ch->first > l->n || ch->n > l->n - ch->first)
                return CK_ECORRUPT; /* past the list's end */
            /* the list's entries are length-prefixed: walk to the first */
            pos = 0;
            for (uint32_t k = 0; k < ch->first; k++)
                if (!ck_oplist_next(l, &pos, &e, &len))
                    return CK_ECORRUPT;
            for (uint32_t k = 0; k < ch->n; k++) {
                if (!ck_oplist_next(l, &pos, &e, &len))
                    return CK_ECORRUPT;
                if ((rc = buffer_entry(op, l, e, len)))
                    return rc;
            }
            deal->applied += ch->n;
        }
    }
    return CK_OK;
}

int ck_chain_capture(ck_chain *c, ck_capture *cap, int how)
{
    const ck_vertex *v = &c->g->v[c->vertex];
    for (int k = 0; k < c->nops; k++) {
        ck_op *op = &c->ops[k];
        if (op->spec->kind == CK_OP_BUFFER) {
            if (buffer_capture(op, cap, v->ops[k]))
                goto fail;
            continue;
        }
        if (!ck_op_keyed(op->spec->kind))
            continue;
        ck_keyed_capture *kc = &cap->keyed[cap->nkeyed];
        kc->op = v->ops[k];
        kc->kind = op->spec->kind;
        kc->max_parallelism = op->spec->max_parallelism;
        kc->kgr = op->kgr;
        kc->nstates = op->ks->nstates;
        memcpy(kc->states, op->ks->states, sizeof(kc->states));
        ck_kstate *ks = ck_clog_kstate_inner(op->ks); /* views are the wrapped backend's */
        kc->ops = ks->ops;
        kc->ks = ks;
        if ((how & CK_CAPTURE_CHANGELOG) && op->clog) {
            kc->elsewhere = 1; /* the materialization and the changelog hold it */
        } else if ((how & CK_CAPTURE_NATIVE) && kc->ops->native_take) {
            /* an incremental checkpoint: the backend's own files */
            if (kc->ops->native_take(ks, cap->checkpoint_id, &kc->native))
                goto fail;
            kc->is_native = 1;
        } else if (kc->ops->view_take(ks, &kc->view)) {
            goto fail;
        }
        cap->nkeyed++;
        if (ck_timerq_copy(&op->timers, &kc->timers, &kc->ntimers))
            goto fail;
    }
    return CK_OK;
fail:
    ck_capture_free(cap);
    return CK_ENOMEM;
}

static ck_op *op_by_index(ck_chain *c, int index)
{
    const ck_vertex *v = &c->g->v[c->vertex];
    for (int k = 0; k < c->nops; k++)
        if (v->ops[k] == index)
            return &c->ops[k];
    return NULL;
}

ck_op *ck_chain_op(ck_chain *c, int op)
{
    return op_by_index(c, op);
}

ck_kstate *ck_chain_kstate(ck_chain *c, int op)
{
    ck_op *o = op_by_index(c, op);
    return o ? o->ks : NULL;
}

/* Does the file's state st describe the operator's? Same kind, fields and
 * name: a savepoint restores into a job whose operators keep the same
 * states, whatever the backend. */
static int same_state(const ck_snap_state *f, const ck_state_desc *d)
{
    return f->kind == d->kind && f->nfields == d->nfields && f->name_len == strlen(d->name) &&
           memcmp(f->name, d->name, f->name_len) == 0;
}

int ck_chain_restore(ck_chain *c, const ck_snapshot *s)
{
    return ck_chain_restore_part(c, s, NULL, 1, NULL);
}

int ck_chain_restore_part(ck_chain *c, const ck_snapshot *s, const ck_kgr *only, int opstate,
                          ck_chain_deal *deal)
{
    for (int i = 0; i < s->nkeyed; i++) {
        const ck_snap_keyed *k = &s->keyed[i];
        ck_op *op = op_by_index(c, k->op);
        int rc;
        if (!op || op->spec->kind != k->kind || op->ks->nstates != k->nstates ||
            op->spec->max_parallelism != k->max_parallelism)
            return CK_ECORRUPT;
        for (int st = 0; st < k->nstates; st++)
            if (!same_state(&k->states[st], &op->ks->states[st]))
                return CK_ECORRUPT;
        if (k->native && !op->clog && !op->ks->ops->native_restore)
            return CK_ECORRUPT; /* another backend's native files */
        for (size_t e = 0; e < k->nentries; e++) {
            const ck_snap_entry *en = &k->entries[e];
            int32_t jh = ck_kg_java_hash(en->key, en->klen);
            if (ck_kg_of_hash(jh, k->max_parallelism) != en->kg)
                return CK_ECORRUPT;
            if (!ck_kgr_contains(op->kgr, en->kg) || (only && !ck_kgr_contains(*only, en->kg)))
                continue; /* another subtask's key group, or not taken from this file */
            if ((rc = ck_snap_put_entry(op->ks, k, en, jh)))
                return rc;
        }
        for (size_t t = 0; t < k->ntimers; t++) {
            const ck_timer *tm = &k->timers[t];
            if (!ck_kgr_contains(op->kgr, tm->kg) || (only && !ck_kgr_contains(*only, tm->kg)))
                continue;
            int32_t jh = ck_kg_java_hash(tm->key, tm->klen);
            if (ck_kg_of_hash(jh, k->max_parallelism) != tm->kg)
                return CK_ECORRUPT;
            if (ck_timerq_add(&op->timers, tm->ts, tm->kg, jh, tm->key, tm->klen, tm->ns))
                return CK_ENOMEM;
        }
    }
    for (int i = 0; i < s->nopstates; i++) {
        const ck_opstate *o = &s->opstates[i];
        ck_op *op = op_by_index(c, o->op);
        if (!op)
            return CK_ECORRUPT;
        if (op->spec->kind == CK_OP_SOURCE)
            continue; /* the task's: its partitions */
        if (op->spec->kind != CK_OP_BUFFER)
            return CK_ECORRUPT;
        if (!opstate)
            continue; /* another subtask's list */
        int rc = buffer_restore(op, o, deal);
        if (rc)
            return rc;
    }
    return CK_OK;
}

int ck_sink_txn_add(ck_op *sink, const int64_t *ingest, size_t n)
{
    ck_txn *t = &sink->open;
    for (size_t i = 0; i < n; i++) {
        int64_t b = (ingest[i] > 0 ? ingest[i] : 0) >> CK_TXN_SHIFT;
        if (t->nb == 0)
            t->base = b;
        if (b < t->base) {
            /* Older than any so far: the buckets grow at the front. */
            size_t more = (size_t)(t->base - b);
            if (t->nb + more > CK_TXN_MAX_BUCKETS) {
                b = t->base;
            } else {
                if (grow((void **)&t->cnt, &t->cap, t->nb + more, sizeof(uint32_t)))
                    return CK_ENOMEM;
                memmove(t->cnt + more, t->cnt, t->nb * sizeof(uint32_t));
                memset(t->cnt, 0, more * sizeof(uint32_t));
                t->nb += more;
                t->base = b;
            }
        } else if ((size_t)(b - t->base) >= t->nb) {
            size_t need = (size_t)(b - t->base) + 1;
            if (need > CK_TXN_MAX_BUCKETS) {
                b = t->base + (int64_t)t->nb - 1; /* kept open for hours */
            } else {
                if (grow((void **)&t->cnt, &t->cap, need, sizeof(uint32_t)))
                    return CK_ENOMEM;
                memset(t->cnt + t->nb, 0, (need - t->nb) * sizeof(uint32_t));
                t->nb = need;
            }
        }
        t->cnt[b - t->base]++;
    }
    t->n += n;
    return CK_OK;
}

int ck_sink_precommit(ck_op *sink, uint64_t cp)
{
    if (sink->npend == CK_SNAP_MAX_PENDING)
        return CK_ETOOBIG;
    ck_txn *p = &sink->pend[sink->npend++];
    *p = sink->open;
    p->txn = sink->txn;
    p->cp = cp;
    memset(&sink->open, 0, sizeof(sink->open));
    sink->txn++;
    return CK_OK;
}

int ck_sink_take_committable(ck_op *sink, uint64_t cp, ck_txn *out)
{
    if (sink->npend == 0 || sink->pend[0].cp > cp)
        return 0;
    *out = sink->pend[0];
    memmove(sink->pend, sink->pend + 1, (size_t)(sink->npend - 1) * sizeof(ck_txn));
    sink->npend--;
    return 1;
}
