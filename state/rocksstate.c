#include "rocksstate.h"

#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

typedef struct rocks_ks {
    ck_kstate base;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    char *dir;
    uint64_t write_buffer;
    uint64_t entries;
    uint32_t since_check; /* writes since the memtable was last measured */
    /* the key being built and the value acquired */
    uint8_t *kbuf;
    size_t kcap;
    int64_t val[CK_KS_MAX_FIELDS];
    int val_created;
    int64_t *list; /* list_get's elements, host order */
    size_t list_cap;
    uint8_t *vbuf; /* a value being written */
    size_t vcap;
} rocks_ks;

struct ck_kstate_view {
    rocks_ks *r;
    const rocksdb_snapshot_t *snap;
    rocksdb_readoptions_t *ro;
    int64_t *vals;
    size_t vcap;
};

#define KEY_FIXED (2 + 1 + 4 + 8)

static int grow(void *pp, size_t *cap, size_t need)
{
    void **p = pp;
    if (need <= *cap)
        return CK_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c);
    if (!n)
        return CK_ENOMEM;
    *p = n;
    *cap = c;
    return CK_OK;
}

static void put_be16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Builds k's RocksDB key in r->kbuf; its length, or 0 when out of memory. */
static size_t build_key(rocks_ks *r, int st, const ck_kkey *k)
{
    size_t n = KEY_FIXED + k->klen + (k->ukey ? k->uklen : 0);
    if (grow(&r->kbuf, &r->kcap, n))
        return 0;
    uint8_t *p = r->kbuf;
    put_be16(p, (uint32_t)k->loc.kg);
    p[2] = (uint8_t)st;
    put_be32(p + 3, k->klen);
    memcpy(p + 7, k->key, k->klen);
    put_be64(p + 7 + k->klen, (uint64_t)k->loc.ns ^ (UINT64_C(1) << 63));
    if (k->ukey && k->uklen)
        memcpy(p + KEY_FIXED + k->klen, k->ukey, k->uklen);
    return n;
}

static void decode_vals(const uint8_t *p, size_t nvals, int64_t *out)
{
    for (size_t i = 0; i < nvals; i++)
        out[i] = (int64_t)ck_get_u64(p + 8 * i);
}

/* Encodes nvals values little-endian into r->vbuf. */
static int encode_vals(rocks_ks *r, const int64_t *v, size_t nvals)
{
    if (grow(&r->vbuf, &r->vcap, 8 * nvals + 1))
        return CK_ENOMEM;
    for (size_t i = 0; i < nvals; i++)
        ck_put_u64(r->vbuf + 8 * i, (uint64_t)v[i]);
    return CK_OK;
}

static int prop_int(rocks_ks *r, const char *name, uint64_t *v)
{
    return rocksdb_property_int(r->db, name, v) == 0 ? CK_OK : CK_EIO;
}

static uint64_t sst_bytes(rocks_ks *r)
{
    uint64_t v = 0;
    prop_int(r, "rocksdb.total-sst-files-size", &v);
    return v;
}

static int l0_files(rocks_ks *r)
{
    char *s = rocksdb_property_value(r->db, "rocksdb.num-files-at-level0");
    int n = s ? atoi(s) : 0;
    rocksdb_free(s);
    return n;
}

/* Flushes the memtable into a level-0 file, waiting for it; then compacts
 * when level 0 has CK_ROCKS_L0_TRIGGER files. */
static int rks_flush(ck_kstate *s)
{
    rocks_ks *r = (rocks_ks *)s;
    uint64_t mem = 0;
    if (prop_int(r, "rocksdb.cur-size-all-mem-tables", &mem))
        return CK_EIO;
    uint64_t before = sst_bytes(r);
    char *err = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush(r->db, fo, &err);
    rocksdb_flushoptions_destroy(fo);
    if (err) {
        rocksdb_free(err);
        return CK_EIO;
    }
    uint64_t after = sst_bytes(r);
    if (after > before) {
        s->work.flushes++;
        s->work.flushed += after - before;
    }
    if (l0_files(r) >= CK_ROCKS_L0_TRIGGER) {
        rocksdb_compact_range(r->db, NULL, 0, NULL, 0);
        s->work.compactions++;
        s->work.compacted += after; /* every file read and written again */
    }
    r->since_check = 0;
    return CK_OK;
}

/* Counts a write; every CK_ROCKS_CHECK_EVERY, flushes a full memtable. */
static int wrote(rocks_ks *r)
{
    r->base.work.writes++;
    if (++r->since_check < CK_ROCKS_CHECK_EVERY)
        return CK_OK;
    r->since_check = 0;
    uint64_t mem = 0;
    if (prop_int(r, "rocksdb.cur-size-active-mem-table", &mem))
        return CK_EIO;
    return mem >= r->write_buffer ? rks_flush(&r->base) : CK_OK;
}

static int db_put(rocks_ks *r, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    char *err = NULL;
    rocksdb_put(r->db, r->wo, (const char *)k, kl, (const char *)v, vl, &err);
    if (err) {
        rocksdb_free(err);
        return CK_EIO;
    }
    return wrote(r);
}

/* The value under key k (malloc'd by RocksDB: rocksdb_free), or NULL. */
static char *db_get(rocks_ks *r, const uint8_t *k, size_t kl, size_t *vl, int *rc)
{
    char *err = NULL;
    r->base.work.reads++;
    char *v = rocksdb_get(r->db, r->ro, (const char *)k, kl, vl, &err);
    *rc = CK_OK;
    if (err) {
        rocksdb_free(err);
        *rc = CK_EIO;
        return NULL;
    }
    return v;
}

static int64_t *rks_acquire(ck_kstate *s, int st, const ck_kkey *k, int create, int *created)
{
    rocks_ks *r = (rocks_ks *)s;
    uint32_t nf = s->states[st].nfields;
    *created = 0;
    r->val_created = 0;
    if (k->loc.kg < s->kg_start || k->loc.kg > s->kg_end)
        return NULL;
    size_t kl = build_key(r, st, k);
    if (!kl)
        return NULL;
    size_t vl;
    int rc;
    char *v = db_get(r, r->kbuf, kl, &vl, &rc);
    if (rc)
        return NULL;
    if (v) {
        if (vl != 8 * (size_t)nf) {
            rocksdb_free(v);
            return NULL; /* not a value of this state */
        }
        decode_vals((const uint8_t *)v, nf, r->val);
        rocksdb_free(v);
        return r->val;
    }
    if (!create)
        return NULL;
    memset(r->val, 0, sizeof(r->val));
    *created = r->val_created = 1;
    return r->val;
}

static int rks_release(ck_kstate *s, int st, const ck_kkey *k, int64_t *v, int dirty)
{
    rocks_ks *r = (rocks_ks *)s;
    if (!dirty && !r->val_created)
        return CK_OK;
    size_t kl = build_key(r, st, k);
    if (!kl || encode_vals(r, v, s->states[st].nfields))
        return CK_ENOMEM;
    int rc = db_put(r, r->kbuf, kl, r->vbuf, 8 * (size_t)s->states[st].nfields);
    if (!rc && r->val_created)
        r->entries++;
    r->val_created = 0;
    return rc;
}

static int rks_remove(ck_kstate *s, int st, const ck_kkey *k)
{
    rocks_ks *r = (rocks_ks *)s;
    size_t kl = build_key(r, st, k);
    if (!kl)
        return CK_ENOMEM;
    size_t vl;
    int rc;
    char *v = db_get(r, r->kbuf, kl, &vl, &rc);
    if (rc)
        return rc;
    if (!v)
        return CK_ENOTFOUND;
    rocksdb_free(v);
    char *err = NULL;
    rocksdb_delete(r->db, r->wo, (const char *)r->kbuf, kl, &err);
    if (err) {
        rocksdb_free(err);
        return CK_EIO;
    }
    r->entries--;
    return wrote(r);
}

static int rks_list_add(ck_kstate *s, int st, const ck_kkey *k, const int64_t *val)
{
    rocks_ks *r = (rocks_ks *)s;
    size_t nf = s->states[st].nfields, kl = build_key(r, st, k);
    if (!kl)
        return CK_ENOMEM;
    size_t vl = 0;
    int rc;
    char *v = db_get(r, r->kbuf, kl, &vl, &rc);
    if (rc)
        return rc;
    if (vl % (8 * nf) || grow(&r->vbuf, &r->vcap, vl + 8 * nf)) {
        rocksdb_free(v);
        return vl % (8 * nf) ? CK_ECORRUPT : CK_ENOMEM;
    }
    if (v)
        memcpy(r->vbuf, v, vl);
    else
        r->entries++;
    rocksdb_free(v);
    for (size_t i = 0; i < nf; i++)
        ck_put_u64(r->vbuf + vl + 8 * i, (uint64_t)val[i]);
    return db_put(r, r->kbuf, kl, r->vbuf, vl + 8 * nf);
}

static const int64_t *rks_list_get(ck_kstate *s, int st, const ck_kkey *k, uint32_t *n)
{
    rocks_ks *r = (rocks_ks *)s;
    size_t nf = s->states[st].nfields, kl = build_key(r, st, k);
    *n = 0;
    if (!kl) {
        *n = 1;
        return NULL;
    }
    size_t vl;
    int rc;
    char *v = db_get(r, r->kbuf, kl, &vl, &rc);
    if (!v || vl % (8 * nf) || grow(&r->list, &r->list_cap, vl)) {
        *n = v || rc ? 1 : 0; /* 1: a failure, not an empty list */
        rocksdb_free(v);
        return NULL;
    }
    decode_vals((const uint8_t *)v, vl / 8, r->list);
    rocksdb_free(v);
    *n = (uint32_t)(vl / (8 * nf));
    return r->list;
}

static uint64_t rks_entries(const ck_kstate *s)
{
    return ((const rocks_ks *)s)->entries;
}

static int rks_view_take(ck_kstate *s, ck_kstate_view **out)
{
    rocks_ks *r = (rocks_ks *)s;
    ck_kstate_view *v = calloc(1, sizeof(*v));
    if (!v)
        return CK_ENOMEM;
    v->r = r;
    v->snap = rocksdb_create_snapshot(r->db);
    v->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(v->ro, v->snap);
    *out = v;
    return CK_OK;
}

/* Visits key group kg of the view (fn NULL: counts). */
static int view_scan(ck_kstate_view *v, int kg, ck_kentry_fn fn, void *arg, uint64_t *count)
{
    rocks_ks *r = v->r;
    uint8_t lo[2], hi[3];
    put_be16(lo, (uint32_t)kg);
    put_be16(hi, (uint32_t)kg + 1);
    size_t hl = 2;
    if (kg == 0xffff) { /* no next key group prefix: stop past any key of this one */
        hi[0] = hi[1] = 0xff;
        hi[2] = 0xff;
        hl = 3;
    }
    rocksdb_readoptions_set_iterate_upper_bound(v->ro, (const char *)hi, hl);
    rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, v->ro);
    int rc = CK_OK;
    for (rocksdb_iter_seek(it, (const char *)lo, 2); rocksdb_iter_valid(it) && !rc;
         rocksdb_iter_next(it)) {
        size_t kl, vl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
        const uint8_t *val = (const uint8_t *)rocksdb_iter_value(it, &vl);
        if (kl < KEY_FIXED || k[2] >= r->base.nstates) {
            rc = CK_ECORRUPT;
            break;
        }
        int st = k[2];
        uint32_t klen = get_be32(k + 3);
        size_t nf = r->base.states[st].nfields;
        if (kl < KEY_FIXED + (size_t)klen || vl % (8 * nf) || !vl) {
            rc = CK_ECORRUPT;
            break;
        }
        if (!fn) {
            (*count)++;
            continue;
        }
        if (grow(&v->vals, &v->vcap, vl)) {
            rc = CK_ENOMEM;
            break;
        }
        decode_vals(val, vl / 8, v->vals);
        ck_kentry e = {.st = st,
                       .key = (const char *)k + 7,
                       .klen = klen,
                       .ns = (int64_t)(get_be64(k + 7 + klen) ^ (UINT64_C(1) << 63)),
                       .count = (uint32_t)(vl / (8 * nf)),
                       .value = v->vals};
        if (r->base.states[st].kind == CK_STATE_MAP) {
            e.ukey = k + KEY_FIXED + klen;
            e.uklen = (uint32_t)(kl - KEY_FIXED - klen);
        }
        rc = fn(arg, &e);
    }
    if (!rc) {
        char *err = NULL;
        rocksdb_iter_get_error(it, &err);
        if (err) {
            rocksdb_free(err);
            rc = CK_EIO;
        }
    }
    rocksdb_iter_destroy(it);
    return rc;
}

static uint64_t rks_view_count(const ck_kstate_view *v, int kg)
{
    uint64_t n = 0;
    view_scan((ck_kstate_view *)v, kg, NULL, NULL, &n);
    return n;
}

static int rks_view_visit(ck_kstate_view *v, int kg, ck_kentry_fn fn, void *arg)
{
    return view_scan(v, kg, fn, arg, NULL);
}

static void rks_view_release(ck_kstate_view *v)
{
    if (!v)
        return;
    rocksdb_readoptions_destroy(v->ro);
    rocksdb_release_snapshot(v->r->db, v->snap);
    free(v->vals);
    free(v);
}

static void rks_free(ck_kstate *s)
{
    rocks_ks *r = (rocks_ks *)s;
    if (r->db)
        rocksdb_close(r->db);
    if (r->dir && r->dir[0] && r->opts) {
        char *err = NULL;
        rocksdb_destroy_db(r->opts, r->dir, &err);
        rocksdb_free(err);
        rmdir(r->dir);
    }
    if (r->opts)
        rocksdb_options_destroy(r->opts);
    if (r->wo)
        rocksdb_writeoptions_destroy(r->wo);
    if (r->ro)
        rocksdb_readoptions_destroy(r->ro);
    free(r->dir);
    free(r->kbuf);
    free(r->list);
    free(r->vbuf);
    free(r);
}

static const ck_kstate_ops rocks_kstate_ops = {
    .name = "rocksdb",
    .free = rks_free,
    .acquire = rks_acquire,
    .release = rks_release,
    .remove = rks_remove,
    .list_add = rks_list_add,
    .list_get = rks_list_get,
    .entries = rks_entries,
    .flush = rks_flush,
    .view_take = rks_view_take,
    .view_count = rks_view_count,
    .view_visit = rks_view_visit,
    .view_release = rks_view_release,
};

ck_kstate *ck_rocks_open(const char *dir, uint64_t write_buffer, int kg_start, int kg_end,
                         const ck_state_desc *d, int n, char *err, size_t errlen)
{
    rocks_ks *r = calloc(1, sizeof(*r));
    if (!r || !(r->dir = strdup(dir))) {
        snprintf(err, errlen, "out of memory");
        free(r);
        return NULL;
    }
    r->base.ops = &rocks_kstate_ops;
    r->base.kg_start = kg_start;
    r->base.kg_end = kg_end;
    r->base.nstates = n;
    memcpy(r->base.states, d, (size_t)n * sizeof(*d));
    r->write_buffer = write_buffer;
    r->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opts, 1);
    rocksdb_options_set_disable_auto_compactions(r->opts, 1);
    /* Twice the engine's limit: RocksDB never fills it before the engine
     * flushes (it measures every CK_ROCKS_CHECK_EVERY writes). */
    rocksdb_options_set_write_buffer_size(r->opts, (size_t)(2 * write_buffer + (64u << 20)));
    rocksdb_options_set_max_write_buffer_number(r->opts, 2);
    rocksdb_options_set_info_log_level(r->opts, 4); /* fatal only: no LOG chatter */
    rocksdb_options_set_keep_log_file_num(r->opts, 1);
    rocksdb_options_set_max_background_jobs(r->opts, 2);
    r->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(r->wo, 1);
    r->ro = rocksdb_readoptions_create();
    char *e = NULL;
    rocksdb_destroy_db(r->opts, dir, &e); /* a crashed attempt's leftovers */
    rocksdb_free(e);
    e = NULL;
    mkdir(dir, 0755);
    r->db = rocksdb_open(r->opts, dir, &e);
    if (e || !r->db) {
        snprintf(err, errlen, "%s: cannot open RocksDB: %s", dir, e ? e : "unknown error");
        rocksdb_free(e);
        r->dir[0] = 0; /* not ours to destroy */
        rks_free(&r->base);
        return NULL;
    }
    return &r->base;
}
