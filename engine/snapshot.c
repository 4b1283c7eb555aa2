#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "crc32c.h"
#include "error.h"

void ck_capture_free(ck_capture *c)
{
    for (int i = 0; i < c->nkeyed; i++) {
        if (c->keyed[i].view)
            c->keyed[i].ops->view_release(c->keyed[i].view);
        if (c->keyed[i].is_native)
            c->keyed[i].ops->native_release(c->keyed[i].ks, &c->keyed[i].native);
        for (size_t t = 0; t < c->keyed[i].ntimers; t++)
            free(c->keyed[i].timers[t].key);
        free(c->keyed[i].timers);
    }
    free(c->source.parts);
    free(c->source.offsets);
    free(c->source.maxts);
    for (int i = 0; i < c->nchans; i++)
        free(c->chans[i].data);
    free(c->chans);
    for (int i = 0; i < c->nopstates; i++)
        for (int l = 0; l < c->opstates[i].nlists; l++)
            free(c->opstates[i].lists[l].data);
    free(c->opstates);
    memset(c, 0, sizeof(*c));
}

/* ---- operator state ------------------------------------------------------ */

int ck_oplist_add(ck_oplist *l, const void *e, uint32_t len)
{
    if (len > CK_OPSTATE_MAX_ENTRY || l->n == UINT32_MAX)
        return CK_ETOOBIG;
    uint8_t *p = realloc(l->data, l->len + 4 + len);
    if (!p)
        return CK_ENOMEM;
    l->data = p;
    ck_put_u32(p + l->len, len);
    if (len)
        memcpy(p + l->len + 4, e, len);
    l->len += 4 + (size_t)len;
    l->n++;
    return CK_OK;
}

int ck_oplist_next(const ck_oplist *l, size_t *pos, const uint8_t **e, uint32_t *len)
{
    if (*pos + 4 > l->len)
        return 0;
    *len = ck_get_u32(l->data + *pos);
    *e = l->data + *pos + 4;
    *pos += 4 + (size_t)*len;
    return 1;
}

const ck_oplist *ck_opstate_list(const ck_opstate *o, const char *name)
{
    for (int l = 0; o && l < o->nlists; l++)
        if (!strcmp(o->lists[l].name, name))
            return &o->lists[l];
    return NULL;
}

ck_oplist *ck_opstate_add_list(ck_opstate *o, const char *name, ck_opstate_mode m)
{
    if (o->nlists == CK_OPSTATE_MAX_LISTS)
        return NULL;
    ck_oplist *l = &o->lists[o->nlists++];
    memset(l, 0, sizeof(*l));
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->mode = m;
    return l;
}

ck_opstate *ck_capture_opstate(ck_capture *c, int op)
{
    for (int i = 0; i < c->nopstates; i++)
        if (c->opstates[i].op == op)
            return &c->opstates[i];
    if (!c->opstates && !(c->opstates = calloc(CK_MAX_OPS, sizeof(*c->opstates))))
        return NULL;
    if (c->nopstates == CK_MAX_OPS)
        return NULL;
    ck_opstate *o = &c->opstates[c->nopstates++];
    memset(o, 0, sizeof(*o));
    o->op = op;
    return o;
}

const ck_opstate *ck_snap_opstate(const ck_snapshot *s, int op)
{
    for (int i = 0; i < s->nopstates; i++)
        if (s->opstates[i].op == op)
            return &s->opstates[i];
    return NULL;
}

/* ---- encoding -------------------------------------------------------------- */

typedef struct entry_writer {
    ck_wbuf *w;
    const ck_keyed_capture *k;
    uint64_t n; /* entries written */
} entry_writer;

static int write_entry(void *arg, const ck_kentry *e)
{
    entry_writer *ew = arg;
    const ck_state_desc *d = &ew->k->states[e->st];
    ew->n++;
    ck_wbuf_u32(ew->w, (uint32_t)e->st);
    ck_wbuf_u32(ew->w, e->klen);
    ck_wbuf_u64(ew->w, (uint64_t)e->ns);
    ck_wbuf_bytes(ew->w, e->key, e->klen);
    if (d->kind == CK_STATE_MAP) {
        ck_wbuf_u32(ew->w, e->uklen);
        ck_wbuf_bytes(ew->w, e->ukey, e->uklen);
    }
    if (d->kind == CK_STATE_LIST)
        ck_wbuf_u32(ew->w, e->count);
    for (size_t f = 0; f < (size_t)e->count * d->nfields; f++)
        ck_wbuf_u64(ew->w, (uint64_t)e->value[f]);
    return ew->w->err ? CK_ENOMEM : CK_OK;
}

/* Opens a section; returns where its length goes. */
static size_t section_begin(ck_wbuf *w, uint32_t type, int op)
{
    ck_wbuf_u32(w, type);
    ck_wbuf_u32(w, (uint32_t)op);
    size_t at = w->len;
    ck_wbuf_u64(w, 0);
    return at;
}

static void section_end(ck_wbuf *w, size_t at)
{
    if (!w->err)
        ck_put_u64(w->p + at, (uint64_t)(w->len - at - 8));
}

static int opcount_push(ck_handle_opcount *out, int max, int *n, int op, ck_opstate_mode mode,
                        const char *name, uint32_t entries)
{
    if (*n >= max)
        return CK_ETOOBIG;
    ck_handle_opcount *c = &out[(*n)++];
    memset(c, 0, sizeof(*c));
    c->op = (uint32_t)op;
    c->mode = (uint8_t)mode;
    c->entries = entries;
    snprintf(c->name, sizeof(c->name), "%s", name);
    return CK_OK;
}

int ck_capture_opcounts(const ck_capture *c, ck_handle_opcount *out, int max)
{
    int n = 0, rc = CK_OK;
    if (c->finished)
        return 0;
    if (c->has_source) { /* as ck_snap_encode writes a source's lists */
        rc = opcount_push(out, max, &n, c->source.op, CK_OPSTATE_SPLIT, CK_SOURCE_SPLITS,
                          (uint32_t)c->source.nparts);
        if (!rc)
            rc = opcount_push(out, max, &n, c->source.op, CK_OPSTATE_BROADCAST,
                              CK_SOURCE_KNOWN, 1);
    }
    for (int i = 0; !rc && i < c->nopstates; i++) {
        const ck_opstate *o = &c->opstates[i];
        for (int l = 0; !rc && l < o->nlists; l++)
            rc = opcount_push(out, max, &n, o->op, o->lists[l].mode, o->lists[l].name,
                              o->lists[l].n);
    }
    return rc ? rc : n;
}

/* The key groups a capture's index covers: every keyed section's and
 * every timer's (CK_KGR_EMPTY: none). */
static ck_kgr capture_index_range(const ck_capture *c)
{
    int32_t lo = INT32_MAX, hi = -1;
    for (int i = 0; i < c->nkeyed; i++) {
        const ck_keyed_capture *k = &c->keyed[i];
        if (k->kgr.start <= k->kgr.end) {
            lo = k->kgr.start < lo ? k->kgr.start : lo;
            hi = k->kgr.end > hi ? k->kgr.end : hi;
        }
        for (size_t t = 0; t < k->ntimers; t++) {
            lo = k->timers[t].kg < lo ? k->timers[t].kg : lo;
            hi = k->timers[t].kg > hi ? k->timers[t].kg : hi;
        }
    }
    return hi < 0 || lo < 0 ? CK_KGR_EMPTY : (ck_kgr){lo, hi};
}

typedef struct timer_ref {
    int kg;
    size_t i;
} timer_ref;

static int timer_ref_cmp(const void *a, const void *b)
{
    const timer_ref *x = a, *y = b;
    if (x->kg != y->kg)
        return x->kg < y->kg ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The key-group blocks of a capture (snapshot.h: BLOCKS) into b, for key
 * groups ix: block g starts at off[g] of b and has CRC crc[g]; off[n] is
 * b's length. Returns 0, CK_ENOMEM, CK_ETOOBIG. */
static int encode_blocks(const ck_capture *c, ck_kgr ix, ck_wbuf *b, uint64_t *off, uint32_t *crc)
{
    int n = ix.end - ix.start + 1, rc = CK_OK;
    timer_ref *tr[CK_MAX_OPS] = {0};
    size_t tpos[CK_MAX_OPS] = {0};
    for (int i = 0; i < c->nkeyed && !rc; i++) {
        const ck_keyed_capture *k = &c->keyed[i];
        if (!(tr[i] = malloc((k->ntimers ? k->ntimers : 1) * sizeof(timer_ref)))) {
            rc = CK_ENOMEM;
            break;
        }
        for (size_t t = 0; t < k->ntimers; t++)
            tr[i][t] = (timer_ref){k->timers[t].kg, t};
        qsort(tr[i], k->ntimers, sizeof(timer_ref), timer_ref_cmp);
    }
    for (int g = 0; g < n && !rc; g++) {
        int kg = ix.start + g, any = 0;
        size_t g_at = b->len;
        off[g] = g_at;
        for (int i = 0; i < c->nkeyed && !rc; i++) {
            const ck_keyed_capture *k = &c->keyed[i];
            int none = k->is_native || k->elsewhere;
            size_t n_at = b->len;
            ck_wbuf_u32(b, 0);
            entry_writer ew = {b, k, 0};
            if (!none && kg >= k->kgr.start && kg <= k->kgr.end &&
                (k->ops->view_visit(k->view, kg, write_entry, &ew) || b->err)) {
                rc = CK_ENOMEM;
                break;
            }
            if (ew.n > UINT32_MAX) {
                rc = CK_ETOOBIG;
                break;
            }
            if (!b->err)
                ck_put_u32(b->p + n_at, (uint32_t)ew.n);
            size_t t0 = tpos[i];
            while (tpos[i] < k->ntimers && tr[i][tpos[i]].kg == kg)
                tpos[i]++;
            ck_wbuf_u32(b, (uint32_t)(tpos[i] - t0));
            for (size_t t = t0; t < tpos[i]; t++) {
                const ck_timer *tm = &k->timers[tr[i][t].i];
                ck_wbuf_u64(b, (uint64_t)tm->ts);
                ck_wbuf_u64(b, (uint64_t)tr[i][t].i); /* its place in firing order */
                ck_wbuf_u64(b, (uint64_t)tm->ns);
                ck_wbuf_u32(b, tm->klen);
                ck_wbuf_bytes(b, tm->key, tm->klen);
            }
            any |= ew.n > 0 || tpos[i] > t0;
        }
        if (!any) /* an empty key group: an empty block */
            b->len = g_at;
        crc[g] = b->err ? 0 : ck_crc32c(0, b->p + g_at, b->len - g_at);
    }
    off[n] = b->len;
    for (int i = 0; i < c->nkeyed; i++)
        free(tr[i]);
    return rc ? rc : b->err ? CK_ENOMEM : CK_OK;
}

int ck_snap_encode(const ck_capture *c, uint8_t **out, size_t *len)
{
    ck_wbuf w = {0};
    ck_wbuf_u32(&w, CK_SNAP_MAGIC);
    ck_wbuf_u32(&w, CK_SNAP_VERSION);
    ck_wbuf_u64(&w, c->checkpoint_id);
    ck_wbuf_u32(&w, (uint32_t)c->vertex);
    ck_wbuf_u32(&w, (uint32_t)c->subtask);
    ck_wbuf_u32(&w, (uint32_t)c->parallelism);
    size_t lens_at = w.len;
    ck_wbuf_u64(&w, 0); /* head length */
    ck_wbuf_u64(&w, 0); /* file length */
    ck_kgr ix = c->finished ? CK_KGR_EMPTY : capture_index_range(c);
    int nix = ix.end - ix.start + 1;
    ck_wbuf b = {0};
    uint64_t *off = calloc((size_t)nix + 1, sizeof(*off));
    uint32_t *crc = calloc((size_t)nix + 1, sizeof(*crc));
    int rc = off && crc ? CK_OK : CK_ENOMEM;
    if (!rc)
        rc = encode_blocks(c, ix, &b, off, crc);
    if (rc) {
        free(off);
        free(crc);
        free(b.p);
        free(w.p);
        return rc;
    }
    if (c->finished) {
        ck_wbuf_u32(&w, 1);
        section_end(&w, section_begin(&w, CK_SEC_FINISHED, 0));
    } else {
        int nops = 0;
        for (int i = 0; i < c->nopstates; i++)
            nops += c->opstates[i].nlists > 0;
        ck_wbuf_u32(&w, (uint32_t)(c->nkeyed + c->nsinks + (c->has_source ? 1 : 0) +
                                   (c->nchans ? 1 : 0) + nops));
    }
    for (int i = 0; i < c->nkeyed && !c->finished; i++) {
        const ck_keyed_capture *k = &c->keyed[i];
        size_t at = section_begin(&w, CK_SEC_KEYED, k->op);
        ck_wbuf_u32(&w, (uint32_t)k->kind);
        ck_wbuf_u32(&w, (uint32_t)k->max_parallelism);
        int none = k->is_native || k->elsewhere; /* entries in other files */
        ck_wbuf_u32(&w, none ? CK_SNAP_NATIVE : 0);
        ck_wbuf_u32(&w, (uint32_t)k->nstates);
        for (int st = 0; st < k->nstates; st++) {
            const ck_state_desc *d = &k->states[st];
            size_t nl = strlen(d->name);
            ck_wbuf_u32(&w, (uint32_t)d->kind);
            ck_wbuf_u32(&w, d->nfields);
            ck_wbuf_u32(&w, (uint32_t)nl);
            ck_wbuf_bytes(&w, d->name, nl);
        }
        section_end(&w, at);
    }
    if (c->has_source && !c->finished) {
        /* A source's partitions: its split-distribute list state, one
         * entry per partition, and the partitions known (broadcast). */
        const ck_source_capture *s = &c->source;
        size_t at = section_begin(&w, CK_SEC_OPSTATE, s->op);
        ck_wbuf_u32(&w, 2);
        size_t nl = strlen(CK_SOURCE_SPLITS);
        ck_wbuf_u32(&w, CK_OPSTATE_SPLIT);
        ck_wbuf_u32(&w, (uint32_t)nl);
        ck_wbuf_bytes(&w, CK_SOURCE_SPLITS, nl);
        ck_wbuf_u32(&w, (uint32_t)s->nparts);
        ck_wbuf_u64(&w, (uint64_t)s->nparts * (4 + CK_SOURCE_SPLIT_BYTES));
        for (int p = 0; p < s->nparts; p++) {
            ck_wbuf_u32(&w, CK_SOURCE_SPLIT_BYTES);
            ck_wbuf_u32(&w, (uint32_t)s->parts[p]);
            ck_wbuf_u64(&w, (uint64_t)s->offsets[p]);
            ck_wbuf_u64(&w, (uint64_t)s->maxts[p]);
        }
        nl = strlen(CK_SOURCE_KNOWN);
        ck_wbuf_u32(&w, CK_OPSTATE_BROADCAST);
        ck_wbuf_u32(&w, (uint32_t)nl);
        ck_wbuf_bytes(&w, CK_SOURCE_KNOWN, nl);
        ck_wbuf_u32(&w, 1);
        ck_wbuf_u64(&w, 8);
        ck_wbuf_u32(&w, 4);
        ck_wbuf_u32(&w, (uint32_t)s->known);
        section_end(&w, at);
    }
    for (int i = 0; i < c->nopstates && !c->finished; i++) {
        const ck_opstate *o = &c->opstates[i];
        if (!o->nlists)
            continue;
        size_t at = section_begin(&w, CK_SEC_OPSTATE, o->op);
        ck_wbuf_u32(&w, (uint32_t)o->nlists);
        for (int l = 0; l < o->nlists; l++) {
            const ck_oplist *ol = &o->lists[l];
            size_t nl = strlen(ol->name);
            ck_wbuf_u32(&w, (uint32_t)ol->mode);
            ck_wbuf_u32(&w, (uint32_t)nl);
            ck_wbuf_bytes(&w, ol->name, nl);
            ck_wbuf_u32(&w, ol->n);
            ck_wbuf_u64(&w, (uint64_t)ol->len);
            ck_wbuf_bytes(&w, ol->data, ol->len);
        }
        section_end(&w, at);
    }
    for (int i = 0; i < c->nsinks && !c->finished; i++) {
        const ck_sink_capture *s = &c->sinks[i];
        size_t at = section_begin(&w, CK_SEC_SINK, s->op);
        ck_wbuf_u64(&w, s->open_txn);
        ck_wbuf_u32(&w, (uint32_t)s->npending);
        for (int k = 0; k < s->npending; k++)
            ck_wbuf_u64(&w, s->pending[k]);
        section_end(&w, at);
    }
    if (c->nchans && !c->finished) {
        size_t at = section_begin(&w, CK_SEC_CHANNELS, 0);
        ck_wbuf_u32(&w, (uint32_t)c->nchans);
        for (int i = 0; i < c->nchans; i++) {
            const ck_chan_state *cs = &c->chans[i];
            ck_wbuf_u32(&w, (uint32_t)cs->out << 16 | cs->edge);
            ck_wbuf_u32(&w, cs->peer);
            ck_wbuf_u64(&w, (uint64_t)cs->len);
            ck_wbuf_bytes(&w, cs->data, cs->len);
        }
        section_end(&w, at);
    }
    /* The index: where each key group's block starts, from the file's
     * start, and its CRC; then the head's own CRC. */
    uint64_t head = w.len + 8 + 8 * ((uint64_t)nix + 1) + 4 * (uint64_t)nix + 4;
    ck_wbuf_u32(&w, (uint32_t)(nix ? ix.start : 0));
    ck_wbuf_u32(&w, (uint32_t)nix);
    for (int g = 0; g <= nix; g++)
        ck_wbuf_u64(&w, head + off[g]);
    for (int g = 0; g < nix; g++)
        ck_wbuf_u32(&w, crc[g]);
    if (!w.err) {
        ck_put_u64(w.p + lens_at, head);
        ck_put_u64(w.p + lens_at + 8, head + b.len + 4);
        ck_wbuf_u32(&w, ck_crc32c(0, w.p, w.len));
    }
    if (b.len)
        ck_wbuf_bytes(&w, b.p, b.len);
    free(off);
    free(crc);
    free(b.p);
    return ck_wbuf_seal_crc(&w, out, len);
}

/* ---- decoding -------------------------------------------------------------- */

void ck_snapshot_free(ck_snapshot *s)
{
    for (int i = 0; i < s->nkeyed; i++) {
        free(s->keyed[i].entries);
        free(s->keyed[i].timers);
    }
    free(s->source.parts);
    free(s->source.offsets);
    free(s->source.maxts);
    free(s->chans);
    free(s->opstates);
    free(s->ix_off);
    free(s->ix_crc);
    memset(s, 0, sizeof(*s));
}

#define BAD(msg)                                                               \
    do {                                                                       \
        *why = (msg);                                                          \
        return CK_ECORRUPT;                                                    \
    } while (0)

/* One entry of state st at r: fills en when given. 0, or CK_ECORRUPT. */
static int read_entry(ck_rbuf *r, const ck_snap_keyed *k, ck_snap_entry *en)
{
    uint32_t st = ck_rbuf_u32(r), klen = ck_rbuf_u32(r);
    int64_t ns = (int64_t)ck_rbuf_u64(r);
    if (r->err || st >= (uint32_t)k->nstates || klen > 65535)
        return CK_ECORRUPT;
    const uint8_t *key = ck_rbuf_take(r, klen);
    const uint8_t *ukey = NULL;
    uint32_t uklen = 0;
    if (k->states[st].kind == CK_STATE_MAP) {
        uklen = ck_rbuf_u32(r);
        if (r->err || uklen > 65535)
            return CK_ECORRUPT;
        ukey = ck_rbuf_take(r, uklen);
    }
    uint32_t count = 1;
    if (k->states[st].kind == CK_STATE_LIST) {
        count = ck_rbuf_u32(r);
        if (r->err || count == 0 || count > ck_rbuf_left(r) / 8)
            return CK_ECORRUPT;
    }
    const uint8_t *value = ck_rbuf_take(r, 8 * (size_t)count * k->states[st].nfields);
    if (r->err || !key || !value || (uklen && !ukey))
        return CK_ECORRUPT;
    if (en) {
        en->st = (int)st;
        en->key = (const char *)key;
        en->klen = klen;
        en->ns = ns;
        en->ukey = ukey;
        en->uklen = uklen;
        en->count = count;
        en->value = value;
    }
    return CK_OK;
}

static int decode_keyed(ck_rbuf *r, ck_snap_keyed *k, uint32_t version, const char **why)
{
    uint32_t kind = ck_rbuf_u32(r);
    k->kind = (ck_op_kind)kind;
    k->max_parallelism = (int)ck_rbuf_u32(r);
    uint32_t flags = ck_rbuf_u32(r);
    uint32_t nstates = ck_rbuf_u32(r);
    if (r->err || kind > CK_OP_DISTINCT || !ck_op_keyed((ck_op_kind)kind) ||
        k->max_parallelism < 1 || k->max_parallelism > 32768 || nstates < 1 ||
        nstates > CK_KS_MAX_STATES || (flags & ~CK_SNAP_NATIVE))
        BAD("bad keyed-state header");
    k->native = (flags & CK_SNAP_NATIVE) != 0;
    for (uint32_t st = 0; st < nstates; st++) {
        ck_snap_state *d = &k->states[st];
        uint32_t sk = ck_rbuf_u32(r);
        d->nfields = ck_rbuf_u32(r);
        d->name_len = ck_rbuf_u32(r);
        d->name = (const char *)ck_rbuf_take(r, d->name_len);
        if (r->err || (sk != CK_STATE_VALUE && sk != CK_STATE_MAP && sk != CK_STATE_LIST) ||
            d->nfields < 1 ||
            d->nfields > CK_KS_MAX_FIELDS || d->name_len < 1 || d->name_len > 255 || !d->name)
            BAD("bad state descriptor");
        for (uint32_t c = 0; c < d->name_len; c++)
            if ((uint8_t)d->name[c] < 0x20 || (uint8_t)d->name[c] > 0x7e)
                BAD("a state name that is not printable ASCII");
        d->kind = (ck_state_kind)sk;
        k->nstates++;
    }
    if (version >= 5) /* its entries and timers are in the key groups' blocks */
        return r->err ? CK_ECORRUPT : CK_OK;
    uint32_t groups = ck_rbuf_u32(r);
    if (r->err || groups > 32768 || (k->native && groups))
        BAD("bad key group count");
    /* First pass: count entries, checking every length against what is left. */
    ck_rbuf scan = *r;
    size_t total = 0;
    for (uint32_t g = 0; g < groups; g++) {
        uint32_t kg = ck_rbuf_u32(&scan), n = ck_rbuf_u32(&scan);
        if (scan.err || kg >= (uint32_t)k->max_parallelism)
            BAD("bad key group");
        for (uint32_t e = 0; e < n; e++) {
            if (read_entry(&scan, k, NULL))
                BAD("bad entry, or one that runs past the end");
            total++;
        }
    }
    k->entries = calloc(total ? total : 1, sizeof(*k->entries));
    if (!k->entries)
        return CK_ENOMEM;
    for (uint32_t g = 0; g < groups; g++) {
        int kg = (int)ck_rbuf_u32(r);
        uint32_t n = ck_rbuf_u32(r);
        for (uint32_t e = 0; e < n; e++) {
            ck_snap_entry *en = &k->entries[k->nentries++];
            read_entry(r, k, en); /* checked above */
            en->kg = kg;
        }
    }
    uint32_t ntimers = ck_rbuf_u32(r);
    if (r->err || ntimers > ck_rbuf_left(r) / 24)
        BAD("bad timer count");
    k->timers = calloc(ntimers ? ntimers : 1, sizeof(*k->timers));
    if (!k->timers)
        return CK_ENOMEM;
    for (uint32_t t = 0; t < ntimers; t++) {
        ck_timer *tm = &k->timers[t];
        tm->ts = (int64_t)ck_rbuf_u64(r);
        tm->kg = (int)ck_rbuf_u32(r);
        tm->ns = (int64_t)ck_rbuf_u64(r);
        tm->klen = ck_rbuf_u32(r);
        tm->key = (char *)ck_rbuf_take(r, tm->klen);
        if (r->err || tm->kg < 0 || tm->kg >= k->max_parallelism)
            BAD("bad timer");
        k->ntimers++;
    }
    return r->err ? CK_ECORRUPT : CK_OK;
}

static int decode_source(ck_rbuf *r, ck_source_capture *s, const char **why)
{
    uint32_t n = ck_rbuf_u32(r);
    if (r->err || n > ck_rbuf_left(r) / 20)
        BAD("bad partition count");
    s->parts = calloc(n + 1, sizeof(int));
    s->offsets = calloc(n + 1, sizeof(int64_t));
    s->maxts = calloc(n + 1, sizeof(int64_t));
    if (!s->parts || !s->offsets || !s->maxts)
        return CK_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        s->parts[i] = (int)ck_rbuf_u32(r);
        s->offsets[i] = (int64_t)ck_rbuf_u64(r);
        s->maxts[i] = (int64_t)ck_rbuf_u64(r);
        if (s->parts[i] < 0 || s->offsets[i] < 0)
            BAD("bad partition offset");
    }
    s->nparts = (int)n;
    return r->err ? CK_ECORRUPT : CK_OK;
}

/* An OPSTATE section of operator op: every list's name, mode and each
 * entry's length checked against the bytes present. A source's lists are
 * also decoded into s->source. */
static int decode_opstate(ck_rbuf *r, ck_snapshot *s, int op, const char **why)
{
    for (int i = 0; i < s->nopstates; i++)
        if (s->opstates[i].op == op)
            BAD("a repeated operator state section");
    uint32_t nl = ck_rbuf_u32(r);
    if (r->err || nl == 0 || nl > CK_OPSTATE_MAX_LISTS)
        BAD("bad operator state list count");
    if (!s->opstates && !(s->opstates = calloc(CK_MAX_OPS, sizeof(*s->opstates))))
        return CK_ENOMEM;
    if (s->nopstates == CK_MAX_OPS)
        BAD("too many operator state sections");
    ck_opstate *o = &s->opstates[s->nopstates++];
    memset(o, 0, sizeof(*o));
    o->op = op;
    for (uint32_t i = 0; i < nl; i++) {
        ck_oplist *l = &o->lists[o->nlists];
        uint32_t mode = ck_rbuf_u32(r), nlen = ck_rbuf_u32(r);
        if (r->err || mode < CK_OPSTATE_SPLIT || mode > CK_OPSTATE_BROADCAST || nlen < 1 ||
            nlen >= CK_OPSTATE_NAME_MAX)
            BAD("bad operator state list header");
        const uint8_t *name = ck_rbuf_take(r, nlen);
        if (!name)
            BAD("operator state list name runs past the end");
        for (uint32_t c = 0; c < nlen; c++)
            if (name[c] < 0x20 || name[c] > 0x7e)
                BAD("an operator state list name that is not printable ASCII");
        memcpy(l->name, name, nlen);
        l->name[nlen] = 0;
        if (ck_opstate_list(o, l->name))
            BAD("a repeated operator state list");
        l->mode = (ck_opstate_mode)mode;
        l->n = ck_rbuf_u32(r);
        uint64_t bytes = ck_rbuf_u64(r);
        if (r->err || bytes > ck_rbuf_left(r) || l->n > bytes / 4)
            BAD("bad operator state list length");
        l->data = (uint8_t *)(uintptr_t)(r->p + r->pos);
        l->len = (size_t)bytes;
        r->pos += (size_t)bytes;
        /* Every entry's length within the list's bytes, which they fill. */
        size_t at = 0;
        for (uint32_t e = 0; e < l->n; e++) {
            uint32_t elen = ck_get_u32(l->data + at);
            if (elen > CK_OPSTATE_MAX_ENTRY || elen > l->len - at - 4)
                BAD("an operator state entry runs past its list");
            at += 4 + (size_t)elen;
            if (e + 1 < l->n && l->len - at < 4)
                BAD("an operator state entry runs past its list");
        }
        if (at != l->len)
            BAD("an operator state list longer than its entries");
        o->nlists++;
    }
    const ck_oplist *sp = ck_opstate_list(o, CK_SOURCE_SPLITS);
    const ck_oplist *kn = ck_opstate_list(o, CK_SOURCE_KNOWN);
    if (!sp && !kn)
        return CK_OK;
    if (!sp || !kn || sp->mode != CK_OPSTATE_SPLIT || kn->mode != CK_OPSTATE_BROADCAST ||
        kn->n != 1 || kn->len != 8 || ck_get_u32(kn->data) != 4 || s->has_source)
        BAD("bad source state");
    ck_source_capture *src = &s->source;
    s->has_source = 1;
    src->op = op;
    src->known = (int)ck_get_u32(kn->data + 4);
    src->parts = calloc((size_t)sp->n + 1, sizeof(int));
    src->offsets = calloc((size_t)sp->n + 1, sizeof(int64_t));
    src->maxts = calloc((size_t)sp->n + 1, sizeof(int64_t));
    if (!src->parts || !src->offsets || !src->maxts)
        return CK_ENOMEM;
    if (src->known < 0)
        BAD("bad source state");
    size_t pos = 0;
    const uint8_t *e;
    uint32_t elen;
    while (ck_oplist_next(sp, &pos, &e, &elen)) {
        int k = src->nparts;
        if (elen != CK_SOURCE_SPLIT_BYTES)
            BAD("bad source split");
        src->parts[k] = (int)ck_get_u32(e);
        src->offsets[k] = (int64_t)ck_get_u64(e + 4);
        src->maxts[k] = (int64_t)ck_get_u64(e + 12);
        if (src->parts[k] < 0 || src->offsets[k] < 0)
            BAD("bad partition offset");
        src->nparts++;
    }
    return CK_OK;
}

static int decode_channels(ck_rbuf *r, ck_snapshot *s, const char **why)
{
    uint32_t n = ck_rbuf_u32(r);
    /* Each takes at least 16 bytes. */
    if (r->err || n == 0 || n > CK_SNAP_MAX_CHANS || n > ck_rbuf_left(r) / 16)
        BAD("bad channel state count");
    s->chans = calloc(n, sizeof(*s->chans));
    if (!s->chans)
        return CK_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        ck_chan_state *cs = &s->chans[s->nchans++];
        uint32_t w = ck_rbuf_u32(r);
        cs->out = (uint8_t)(w >> 16);
        cs->edge = (uint16_t)w;
        cs->peer = ck_rbuf_u32(r);
        uint64_t l = ck_rbuf_u64(r);
        if (r->err || (w >> 16) > 1 || l == 0 || l > ck_rbuf_left(r))
            BAD("bad channel state");
        cs->data = (uint8_t *)(uintptr_t)(r->p + r->pos);
        cs->len = (size_t)l;
        r->pos += (size_t)l;
    }
    return CK_OK;
}

/* The sections of a file (nsec of them) at r, of a given version. */
static int decode_sections(ck_rbuf *rr, uint32_t version, uint32_t nsec, ck_snapshot *s,
                           const char **why)
{
    ck_rbuf r = *rr;
    int rc = CK_OK;
    for (uint32_t i = 0; i < nsec && !rc; i++) {
        uint32_t type = ck_rbuf_u32(&r), op = ck_rbuf_u32(&r);
        uint64_t blen = ck_rbuf_u64(&r);
        if (r.err || op >= CK_MAX_OPS || blen > ck_rbuf_left(&r))
            BAD("section runs past the end");
        ck_rbuf body = {r.p + r.pos, (size_t)blen, 0, 0};
        r.pos += (size_t)blen;
        if (type == CK_SEC_KEYED && s->nkeyed < CK_MAX_OPS) {
            ck_snap_keyed *k = &s->keyed[s->nkeyed++];
            k->op = (int)op;
            rc = decode_keyed(&body, k, version, why);
        } else if (type == CK_SEC_SOURCE && !s->has_source && version == 3) {
            s->source.known = -1;
            s->has_source = 1;
            s->source.op = (int)op;
            rc = decode_source(&body, &s->source, why);
        } else if (type == CK_SEC_SINK && s->nsinks < CK_MAX_OPS) {
            ck_sink_capture *k = &s->sinks[s->nsinks++];
            k->op = (int)op;
            k->open_txn = ck_rbuf_u64(&body);
            uint32_t n = ck_rbuf_u32(&body);
            if (body.err || n > CK_SNAP_MAX_PENDING) {
                *why = "bad sink section";
                rc = CK_ECORRUPT;
                break;
            }
            k->npending = (int)n;
            for (uint32_t t = 0; t < n; t++)
                k->pending[t] = ck_rbuf_u64(&body);
            if (body.err) {
                *why = "bad sink section";
                rc = CK_ECORRUPT;
            }
        } else if (type == CK_SEC_FINISHED && nsec == 1) {
            s->finished = 1;
        } else if (type == CK_SEC_CHANNELS && !s->chans) {
            rc = decode_channels(&body, s, why);
        } else if (type == CK_SEC_OPSTATE && version >= 4) {
            rc = decode_opstate(&body, s, (int)op, why);
        } else {
            *why = "unknown or repeated section";
            rc = CK_ECORRUPT;
        }
        if (!rc && body.pos != body.len) {
            *why = "section longer than its contents";
            rc = CK_ECORRUPT;
        }
    }
    *rr = r;
    return rc;
}

int ck_snap_head_len(const uint8_t *p, size_t len, uint64_t *head)
{
    if (len < CK_SNAP_PREFIX)
        return CK_ECHECKSUM;
    uint32_t version = ck_get_u32(p + 4);
    if (ck_get_u32(p) != CK_SNAP_MAGIC || version < CK_SNAP_VERSION_MIN ||
        version > CK_SNAP_VERSION)
        return CK_ECORRUPT;
    if (version < 5)
        return 0;
    *head = ck_get_u64(p + 28);
    return 1;
}

/* check: the head's CRC (0: the whole file's was). */
static int decode_head(const uint8_t *p, size_t len, ck_snapshot *s, int check, const char **why)
{
    memset(s, 0, sizeof(*s));
    *why = "";
    uint64_t head = 0;
    int rc = ck_snap_head_len(p, len, &head);
    if (rc <= 0) {
        *why = rc == CK_ECHECKSUM ? "shorter than a header"
                                  : "not a chandy snapshot with a key-group index";
        return rc ? rc : CK_ECORRUPT;
    }
    if (head < CK_SNAP_PREFIX + 16 + 4 || head > len) {
        /* the head's length is not yet checked: a damaged one is a damaged file */
        *why = "its head runs past the bytes read (truncated or damaged)";
        return CK_ECHECKSUM;
    }
    if (check && ck_crc32c(0, p, (size_t)head - 4) != ck_get_u32(p + head - 4)) {
        *why = "head checksum mismatch (truncated or damaged)";
        return CK_ECHECKSUM;
    }
    ck_rbuf r = {p, (size_t)head - 4, 8, 0};
    s->checkpoint_id = ck_rbuf_u64(&r);
    s->vertex = (int)ck_rbuf_u32(&r);
    s->subtask = (int)ck_rbuf_u32(&r);
    s->parallelism = (int)ck_rbuf_u32(&r);
    s->head_len = ck_rbuf_u64(&r);
    s->file_len = ck_rbuf_u64(&r);
    uint32_t nsec = ck_rbuf_u32(&r);
    if (r.err || nsec > 4 * CK_MAX_OPS + 1)
        BAD("bad section count");
    rc = decode_sections(&r, 5, nsec, s, why);
    uint32_t first = ck_rbuf_u32(&r), n = ck_rbuf_u32(&r);
    if (!rc && (r.err || first > 32768 || n > 32768 - first ||
                (uint64_t)n * 12 + 8 != ck_rbuf_left(&r) || (n && !s->nkeyed))) {
        *why = "bad key-group index";
        rc = CK_ECORRUPT;
    }
    if (!rc && !((s->ix_off = calloc((size_t)n + 1, 8)) && (s->ix_crc = calloc((size_t)n + 1, 4))))
        rc = CK_ENOMEM;
    for (uint32_t g = 0; !rc && g <= n; g++) {
        s->ix_off[g] = ck_rbuf_u64(&r);
        if (g ? s->ix_off[g] < s->ix_off[g - 1] : s->ix_off[g] != head) {
            *why = "bad key-group index offsets";
            rc = CK_ECORRUPT;
        }
    }
    for (uint32_t g = 0; !rc && g < n; g++)
        s->ix_crc[g] = ck_rbuf_u32(&r);
    if (!rc && (r.err || s->ix_off[n] > UINT64_MAX - 4 || s->ix_off[n] + 4 != s->file_len)) {
        *why = "its key-group index does not end where the file does";
        rc = CK_ECORRUPT;
    }
    for (int i = 0; !rc && i < s->nkeyed; i++)
        if (n && first + n > (uint32_t)s->keyed[i].max_parallelism) {
            *why = "a key group past the maximum parallelism";
            rc = CK_ECORRUPT;
        }
    s->ix_first = (int)first;
    s->ix_n = (int)n;
    if (rc)
        ck_snapshot_free(s);
    return rc;
}

/* The blocks of s's index that key groups want take: g0..g1 (g1 < g0: none). */
static void index_span(const ck_snapshot *s, ck_kgr want, int *g0, int *g1)
{
    int lo = want.start > s->ix_first ? want.start : s->ix_first;
    int hi = want.end < s->ix_first + s->ix_n - 1 ? want.end : s->ix_first + s->ix_n - 1;
    *g0 = lo - s->ix_first;
    *g1 = hi - s->ix_first;
    if (want.start > want.end || hi < lo) {
        *g0 = 0;
        *g1 = -1;
    }
}

void ck_snap_range(const ck_snapshot *s, ck_kgr want, uint64_t *at, uint64_t *len)
{
    int g0, g1;
    index_span(s, want, &g0, &g1);
    *at = g1 < g0 ? s->head_len : s->ix_off[g0];
    *len = g1 < g0 ? 0 : s->ix_off[g1 + 1] - s->ix_off[g0];
}

static int timer_order_cmp(const void *a, const void *b)
{
    const ck_timer *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One block's timers and entries, counted (fill 0) or put in s (fill 1). */
static int read_block(ck_rbuf *r, ck_snapshot *s, int kg, int fill)
{
    for (int i = 0; i < s->nkeyed; i++) {
        ck_snap_keyed *k = &s->keyed[i];
        uint32_t n = ck_rbuf_u32(r);
        if (r->err || (n && k->native) || kg >= k->max_parallelism)
            return CK_ECORRUPT;
        for (uint32_t e = 0; e < n; e++) {
            ck_snap_entry *en = fill ? &k->entries[k->nentries] : NULL;
            if (read_entry(r, k, en))
                return CK_ECORRUPT;
            if (fill)
                en->kg = kg;
            k->nentries++;
        }
        uint32_t nt = ck_rbuf_u32(r);
        if (r->err || nt > ck_rbuf_left(r) / 28)
            return CK_ECORRUPT;
        for (uint32_t t = 0; t < nt; t++) {
            ck_timer tm = {0};
            tm.ts = (int64_t)ck_rbuf_u64(r);
            tm.seq = ck_rbuf_u64(r);
            tm.ns = (int64_t)ck_rbuf_u64(r);
            tm.klen = ck_rbuf_u32(r);
            tm.key = (char *)ck_rbuf_take(r, tm.klen);
            tm.kg = kg;
            if (r->err || (tm.klen && !tm.key))
                return CK_ECORRUPT;
            if (fill)
                k->timers[k->ntimers] = tm;
            k->ntimers++;
        }
    }
    return r->pos == r->len ? CK_OK : CK_ECORRUPT;
}

int ck_snap_decode_head(const uint8_t *p, size_t len, ck_snapshot *s, const char **why)
{
    return decode_head(p, len, s, 1, why);
}

/* check: each block's CRC (0: the whole file's was). */
static int decode_range(ck_snapshot *s, ck_kgr want, const uint8_t *p, size_t len, int check,
                        const char **why)
{
    int g0, g1;
    index_span(s, want, &g0, &g1);
    *why = "";
    uint64_t at = g1 < g0 ? 0 : s->ix_off[g0];
    if (g1 >= g0 && s->ix_off[g1 + 1] - at > len) {
        *why = "the bytes read end before its key groups' (truncated)";
        return CK_ECHECKSUM;
    }
    for (int g = g0; g <= g1 && check; g++) {
        size_t b = (size_t)(s->ix_off[g] - at), e = (size_t)(s->ix_off[g + 1] - at);
        if (ck_crc32c(0, p + b, e - b) != s->ix_crc[g]) {
            *why = "key-group block checksum mismatch (damaged)";
            return CK_ECHECKSUM;
        }
    }
    /* counted first (every length checked), then put in place */
    size_t ne[CK_MAX_OPS], nt[CK_MAX_OPS];
    for (int i = 0; i < s->nkeyed; i++) {
        ne[i] = s->keyed[i].nentries;
        nt[i] = s->keyed[i].ntimers;
    }
    for (int fill = 0; fill < 2; fill++) {
        for (int i = 0; fill && i < s->nkeyed; i++) {
            ck_snap_keyed *k = &s->keyed[i];
            ck_snap_entry *ev = realloc(k->entries, (k->nentries ? k->nentries : 1) * sizeof(*ev));
            if (ev)
                k->entries = ev;
            ck_timer *tv = realloc(k->timers, (k->ntimers ? k->ntimers : 1) * sizeof(*tv));
            if (tv)
                k->timers = tv;
            if (!ev || !tv)
                return CK_ENOMEM;
            k->nentries = ne[i];
            k->ntimers = nt[i];
        }
        for (int g = g0; g <= g1; g++) {
            size_t b = (size_t)(s->ix_off[g] - at), e = (size_t)(s->ix_off[g + 1] - at);
            ck_rbuf r = {p + b, e - b, 0, 0};
            if (e > b && read_block(&r, s, s->ix_first + g, fill)) {
                for (int i = 0; i < s->nkeyed; i++) {
                    s->keyed[i].nentries = ne[i];
                    s->keyed[i].ntimers = nt[i];
                }
                BAD("bad key-group block");
            }
        }
    }
    /* timers back in firing order (equal times fire as registered) */
    for (int i = 0; i < s->nkeyed; i++)
        qsort(s->keyed[i].timers, s->keyed[i].ntimers, sizeof(ck_timer), timer_order_cmp);
    return CK_OK;
}

int ck_snap_decode_range(ck_snapshot *s, ck_kgr want, const uint8_t *p, size_t len,
                         const char **why)
{
    return decode_range(s, want, p, len, 1, why);
}

int ck_snap_decode(const uint8_t *p, size_t len, ck_snapshot *s, const char **why)
{
    memset(s, 0, sizeof(*s));
    *why = "";
    if (len < 36) {
        *why = "shorter than a header";
        return CK_ECHECKSUM;
    }
    uint32_t want = ck_get_u32(p + len - 4);
    if (ck_crc32c(0, p, len - 4) != want) {
        *why = "checksum mismatch (truncated or damaged)";
        return CK_ECHECKSUM;
    }
    ck_rbuf r = {p, len - 4, 0, 0};
    uint32_t magic = ck_rbuf_u32(&r), version = ck_rbuf_u32(&r);
    if (magic != CK_SNAP_MAGIC || version < CK_SNAP_VERSION_MIN || version > CK_SNAP_VERSION)
        BAD("not a chandy snapshot of a version this build reads");
    if (version >= 5) {
        /* the whole file's CRC held: it is what was written (a length
         * that does not fit is the writer's, not damage) */
        int rc = decode_head(p, len - 4, s, 0, why);
        if (rc == CK_ECHECKSUM)
            rc = CK_ECORRUPT;
        if (!rc && s->file_len != len) {
            *why = "not as long as its head says";
            rc = CK_ECORRUPT;
        }
        if (!rc) {
            ck_kgr all = {s->ix_first, s->ix_first + s->ix_n - 1};
            rc = decode_range(s, all, p + s->head_len, len - 4 - (size_t)s->head_len, 0, why);
            if (rc == CK_ECHECKSUM)
                rc = CK_ECORRUPT;
        }
        if (rc)
            ck_snapshot_free(s);
        return rc;
    }
    s->checkpoint_id = ck_rbuf_u64(&r);
    s->vertex = (int)ck_rbuf_u32(&r);
    s->subtask = (int)ck_rbuf_u32(&r);
    s->parallelism = (int)ck_rbuf_u32(&r);
    uint32_t nsec = ck_rbuf_u32(&r);
    if (r.err || nsec > 4 * CK_MAX_OPS + 1)
        BAD("bad section count");
    int rc = decode_sections(&r, version, nsec, s, why);
    if (!rc && r.pos != r.len) {
        *why = "bytes after the last section";
        rc = CK_ECORRUPT;
    }
    if (rc)
        ck_snapshot_free(s);
    return rc;
}

int ck_snap_put_entry(ck_kstate *ks, const ck_snap_keyed *k, const ck_snap_entry *en,
                      int32_t jhash)
{
    size_t n = (size_t)en->count * k->states[en->st].nfields;
    int64_t one[CK_KS_MAX_FIELDS], *vals = n <= CK_KS_MAX_FIELDS ? one : malloc(n * 8);
    if (!vals)
        return CK_ENOMEM;
    for (size_t f = 0; f < n; f++)
        vals[f] = (int64_t)ck_get_u64(en->value + 8 * f);
    ck_kentry e = {.st = en->st,
                   .key = en->key,
                   .klen = en->klen,
                   .ns = en->ns,
                   .ukey = en->ukey,
                   .uklen = en->uklen,
                   .count = en->count,
                   .value = vals};
    int rc = ck_ks_put_entry(ks, en->kg, jhash, &e);
    if (vals != one)
        free(vals);
    return rc;
}
