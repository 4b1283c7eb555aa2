#include "changelog.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "invariant.h"
#include "keygroup.h"

void ck_clog_init(ck_clog *l, int op, const ck_state_desc *d, int n)
{
    memset(l, 0, sizeof(*l));
    l->op = op;
    l->nstates = n;
    memcpy(l->states, d, (size_t)n * sizeof(*d));
}

void ck_clog_free(ck_clog *l)
{
    free(l->buf.p);
    memset(l, 0, sizeof(*l));
}

int ck_clog_append(ck_clog *l, int change, int st, const ck_kkey *k, const int64_t *v)
{
    ck_wbuf *w = &l->buf;
    size_t before = w->len;
    uint8_t *p = ck_wbuf_room(w, 4);
    if (p) {
        p[0] = (uint8_t)change;
        p[1] = (uint8_t)st;
        p[2] = p[3] = 0;
    }
    ck_wbuf_u32(w, (uint32_t)k->loc.kg);
    ck_wbuf_u64(w, (uint64_t)k->loc.ns);
    ck_wbuf_u32(w, k->klen);
    ck_wbuf_bytes(w, k->key, k->klen);
    if (l->states[st].kind == CK_STATE_MAP) {
        ck_wbuf_u32(w, k->ukey ? k->uklen : 0);
        ck_wbuf_bytes(w, k->ukey, k->ukey ? k->uklen : 0);
    }
    if (change != CK_CLOG_REMOVE)
        for (uint32_t f = 0; f < l->states[st].nfields; f++)
            ck_wbuf_u64(w, (uint64_t)v[f]);
    if (w->err) {
        /* the log is left as it was; the caller's write fails */
        w->err = 0;
        w->len = before;
        return CK_ENOMEM;
    }
    l->nbuf++;
    l->appended += w->len - before;
    return CK_OK;
}

int ck_clog_cut(ck_clog *l, uint8_t **out, size_t *len, uint64_t *first, uint32_t *n)
{
    *first = l->cut_seq;
    *n = l->nbuf;
    *out = NULL;
    *len = 0;
    if (!l->nbuf)
        return CK_OK;
    ck_wbuf w = {0};
    ck_wbuf_u32(&w, CK_CLOG_MAGIC);
    ck_wbuf_u32(&w, (uint32_t)l->op);
    ck_wbuf_u64(&w, l->cut_seq);
    ck_wbuf_u32(&w, l->nbuf);
    ck_wbuf_u32(&w, (uint32_t)l->nstates);
    for (int s = 0; s < l->nstates; s++) {
        ck_wbuf_u32(&w, (uint32_t)l->states[s].kind);
        ck_wbuf_u32(&w, l->states[s].nfields);
    }
    ck_wbuf_bytes(&w, l->buf.p, l->buf.len);
    int rc = ck_wbuf_seal_crc(&w, out, len);
    if (rc)
        return rc;
    l->cut_seq += l->nbuf;
    l->nbuf = 0;
    l->buf.len = 0;
    return CK_OK;
}

#define BAD(msg)                                                                          \
    do {                                                                                   \
        *why = msg;                                                                        \
        return CK_ECORRUPT;                                                                \
    } while (0)

int ck_clog_replay(const uint8_t *p, size_t len, ck_kstate *ks, int maxp, uint64_t *first,
                   uint32_t *n, const char **why)
{
    if (len < 28)
        BAD("too short for a changelog segment");
    if (ck_crc32c(0, p, len - 4) != ck_get_u32(p + len - 4)) {
        *why = "checksum mismatch (truncated or damaged)";
        return CK_ECHECKSUM;
    }
    ck_rbuf r = {.p = p, .len = len - 4};
    if (ck_rbuf_u32(&r) != CK_CLOG_MAGIC)
        BAD("not a changelog segment");
    ck_rbuf_u32(&r); /* the operator: the caller matched it by the handle */
    *first = ck_rbuf_u64(&r);
    *n = ck_rbuf_u32(&r);
    uint32_t nst = ck_rbuf_u32(&r);
    if (r.err || nst != (uint32_t)ks->nstates)
        BAD("its states are not the operator's");
    for (uint32_t s = 0; s < nst; s++) {
        uint32_t kind = ck_rbuf_u32(&r), nf = ck_rbuf_u32(&r);
        if (r.err || kind != (uint32_t)ks->states[s].kind || nf != ks->states[s].nfields)
            BAD("its states are not the operator's");
    }
    for (uint32_t i = 0; i < *n; i++) {
        const uint8_t *h = ck_rbuf_take(&r, 4);
        uint32_t kg = ck_rbuf_u32(&r);
        int64_t ns = (int64_t)ck_rbuf_u64(&r);
        uint32_t klen = ck_rbuf_u32(&r);
        const uint8_t *key = klen <= ck_rbuf_left(&r) ? ck_rbuf_take(&r, klen) : NULL;
        if (r.err || !key || h[1] >= nst || h[0] < CK_CLOG_PUT || h[0] > CK_CLOG_ADD ||
            kg >= (uint32_t)maxp ||
            /* a list changes by ADD and REMOVE only: a PUT would set its length */
            (h[0] == CK_CLOG_ADD) != (h[0] != CK_CLOG_REMOVE && ks->states[h[1]].kind == CK_STATE_LIST))
            BAD("bad changelog record");
        int st = h[1];
        ck_kkey k = {.loc = {.kg = (int)kg, .ns = ns}, .key = (const char *)key, .klen = klen};
        if (ks->states[st].kind == CK_STATE_MAP) {
            uint32_t ul = ck_rbuf_u32(&r);
            k.ukey = ul <= ck_rbuf_left(&r) ? ck_rbuf_take(&r, ul) : NULL;
            k.uklen = ul;
            if (r.err || !k.ukey)
                BAD("bad changelog record");
        }
        int64_t v[CK_KS_MAX_FIELDS];
        uint32_t nf = ks->states[st].nfields;
        if (h[0] != CK_CLOG_REMOVE) {
            const uint8_t *vp = ck_rbuf_take(&r, 8 * (size_t)nf);
            if (!vp)
                BAD("bad changelog record");
            for (uint32_t f = 0; f < nf; f++)
                v[f] = (int64_t)ck_get_u64(vp + 8 * f);
        }
        k.loc.jhash = ck_kg_java_hash(k.key, klen);
        if (ck_kg_of_hash(k.loc.jhash, maxp) != (int)kg)
            BAD("a key in another key group than its record says");
        if (!ck_kgr_contains(ks->kgr, (int32_t)kg))
            continue; /* another subtask's (rescaling) */
        ck_ks_locate(ks, st, &k);
        int rc = CK_OK;
        if (h[0] == CK_CLOG_ADD) {
            rc = ks->ops->list_add(ks, st, &k, v);
        } else if (h[0] == CK_CLOG_REMOVE) {
            rc = ck_ks_remove(ks, st, &k);
            if (rc == CK_ENOTFOUND)
                rc = CK_OK; /* removed twice: the state is the same */
        } else {
            int created;
            int64_t *dst = ck_ks_acquire(ks, st, &k, 1, &created);
            if (!dst)
                return CK_ENOMEM;
            memcpy(dst, v, 8 * (size_t)nf);
            rc = ck_ks_release(ks, st, &k, dst, 1);
        }
        if (rc)
            return rc;
    }
    if (ck_rbuf_left(&r))
        BAD("bytes after the last record");
    return CK_OK;
}

/* ---- the changelog backend --------------------------------------------------------- */

typedef struct clog_ks {
    ck_kstate base;
    ck_kstate *inner;
    ck_clog *log;
} clog_ks;

static clog_ks *cl(ck_kstate *s)
{
    return (clog_ks *)s;
}

/* The wrapped backend's work is the changelog backend's. */
static void sync_work(clog_ks *c)
{
    c->base.work = c->inner->work;
}

static void cks_free(ck_kstate *s)
{
    ck_kstate_free(cl(s)->inner);
    free(s);
}

static void cks_locate(const ck_kstate *s, int st, ck_kkey *k)
{
    const ck_kstate *in = ((const clog_ks *)s)->inner;
    ck_ks_locate(in, st, k);
}

static void cks_prefetch(const ck_kstate *s, int st, const ck_kkey *k)
{
    ck_ks_prefetch(((const clog_ks *)s)->inner, st, k);
}

static int64_t *cks_acquire(ck_kstate *s, int st, const ck_kkey *k, int create, int *created)
{
    int64_t *v = ck_ks_acquire(cl(s)->inner, st, k, create, created);
    sync_work(cl(s));
    return v;
}

static int cks_release(ck_kstate *s, int st, const ck_kkey *k, int64_t *v, int dirty)
{
    clog_ks *c = cl(s);
    int rc = dirty ? ck_clog_append(c->log, CK_CLOG_PUT, st, k, v) : CK_OK;
    int rc2 = ck_ks_release(c->inner, st, k, v, dirty);
    sync_work(c);
    return rc ? rc : rc2;
}

static int cks_remove(ck_kstate *s, int st, const ck_kkey *k)
{
    clog_ks *c = cl(s);
    int rc = ck_ks_remove(c->inner, st, k);
    sync_work(c);
    return rc ? rc : ck_clog_append(c->log, CK_CLOG_REMOVE, st, k, NULL);
}

static int cks_list_add(ck_kstate *s, int st, const ck_kkey *k, const int64_t *v)
{
    clog_ks *c = cl(s);
    int rc = c->inner->ops->list_add(c->inner, st, k, v);
    sync_work(c);
    return rc ? rc : ck_clog_append(c->log, CK_CLOG_ADD, st, k, v);
}

static const int64_t *cks_list_get(ck_kstate *s, int st, const ck_kkey *k, uint32_t *n)
{
    clog_ks *c = cl(s);
    const int64_t *v = c->inner->ops->list_get(c->inner, st, k, n);
    sync_work(c);
    return v;
}

static uint64_t cks_entries(const ck_kstate *s)
{
    const ck_kstate *in = ((const clog_ks *)s)->inner;
    return in->ops->entries(in);
}

static ck_kstate *cks_inner(ck_kstate *s)
{
    return cl(s)->inner;
}

/* A rescale's rebuild is the wrapped backend's, and no change to log: the
 * changelog of the new range starts after the materialization it
 * rebuilds (its segments are replayed over it, task_changelog.c). */
static int cks_native_rescale(ck_kstate *s, uint32_t nsrc, const ck_native_source *src)
{
    clog_ks *c = cl(s);
    if (!c->inner->ops->native_rescale)
        return CK_ECORRUPT; /* the wrapped backend cannot read native files */
    int rc = c->inner->ops->native_rescale(c->inner, nsrc, src);
    sync_work(c);
    return rc;
}

/* Snapshots, flushes and views are the wrapped backend's (ck_kstate_ops.inner). */
static int cks_check(const ck_kstate *s, ck_inv *v)
{
    const clog_ks *c = (const clog_ks *)s;
    int rc = ck_ks_check(c->inner, v);
    return rc ? rc : ck_clog_check(c->log, v);
}

static const ck_kstate_ops clog_kstate_ops = {
    .name = "changelog",
    .free = cks_free,
    .locate = cks_locate,
    .prefetch = cks_prefetch,
    .acquire = cks_acquire,
    .release = cks_release,
    .remove = cks_remove,
    .list_add = cks_list_add,
    .list_get = cks_list_get,
    .entries = cks_entries,
    .inner = cks_inner,
    .native_rescale = cks_native_rescale,
    .check = cks_check,
};

ck_kstate *ck_clog_kstate_new(ck_kstate *inner, ck_clog *l)
{
    clog_ks *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->base = *inner; /* key groups and states */
    c->base.ops = &clog_kstate_ops;
    c->inner = inner;
    c->log = l;
    return &c->base;
}

ck_kstate *ck_clog_kstate_inner(ck_kstate *s)
{
    return s->ops->inner ? s->ops->inner(s) : s;
}

/* ---- invariants (changelog.h) -------------------------------------------------------- */

#define CK_INV_MODULE "changelog"

int ck_clog_check(const ck_clog *l, ck_inv *v)
{
    CK_INV(v, 4, l->nstates >= 0 && l->nstates <= CK_KS_MAX_STATES, "%d states", l->nstates);
    CK_INV(v, 2, l->buf.len <= l->appended && !l->buf.err,
           "%zu bytes buffered of %llu appended%s", l->buf.len,
           (unsigned long long)l->appended, l->buf.err ? ", its buffer failed" : "");
    CK_INV(v, 2, !l->nbuf == !l->buf.len, "%u records in %zu bytes", l->nbuf, l->buf.len);
    if (l->buf.len > CK_CLOG_CHECK_BYTES)
        return 0; /* too much to read after every step */
    const uint8_t *p = l->buf.p, *end = l->buf.p + l->buf.len;
    uint32_t n = 0;
    while (p < end) {
        size_t left = (size_t)(end - p);
        CK_INV(v, 2, left >= 20 && p[0] >= CK_CLOG_PUT && p[0] <= CK_CLOG_ADD &&
                         p[1] < l->nstates && !p[2] && !p[3],
               "record %u (at byte %zu): a bad header", n, (size_t)(p - l->buf.p));
        const ck_state_desc *d = &l->states[p[1]];
        size_t need = 20 + (size_t)ck_get_u32(p + 16);
        if (d->kind == CK_STATE_MAP)
            need = need + 4 <= left ? need + 4 + (size_t)ck_get_u32(p + need) : left + 1;
        if (p[0] != CK_CLOG_REMOVE)
            need += 8 * (size_t)d->nfields;
        CK_INV(v, 2, need <= left, "record %u (at byte %zu): %zu bytes, %zu left", n,
               (size_t)(p - l->buf.p), need, left);
        p += need;
        n++;
    }
    CK_INV(v, 2, n == l->nbuf, "%u records buffered, counted %u", n, l->nbuf);
    return 0;
}
