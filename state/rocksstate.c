#include "rocksstate.h"

#include <errno.h>
#include <fcntl.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "rocksrescale.h"
#include "rocksshim.h"

#define NLEVELS CK_ROCKS_LEVELS

typedef struct rocks_ks {
    ck_kstate base;
    ck_rocks_dbh h; /* the database and its column families (rocksshim.h) */
    rocksdb_t *db;  /* h.db */
    rocksdb_column_family_handle_t *cf; /* keyed state's: h.cf[h.data] */
    rocksdb_options_t *opts;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    char *dir;
    uint64_t write_buffer;
    uint64_t target_file, level_base; /* compaction's output file size, level 1's target */
    int maxp;          /* a rescale's bound on key groups */
    ck_rrs_opts rs;    /* how a rescale rebuilds */
    /* per level, the largest key its last compaction took: the next one
     * takes the file after it (round robin, as LevelDB's compact pointer) */
    char *cptr[NLEVELS];
    size_t cptr_len[NLEVELS];
    uint64_t entries;
    int entries_known; /* 0 after a rescale: counted when first asked (rks_entries) */
    uint32_t since_check; /* writes since the memtable was last measured */
    uint32_t rounds;      /* compactions run (DB::CompactFiles calls) */
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
    if (ck_reserve(&r->kbuf, &r->kcap, n))
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
    if (ck_reserve(&r->vbuf, &r->vcap, 8 * nvals + 1))
        return CK_ENOMEM;
    for (size_t i = 0; i < nvals; i++)
        ck_put_u64(r->vbuf + 8 * i, (uint64_t)v[i]);
    return CK_OK;
}

static int prop_int(rocks_ks *r, const char *name, uint64_t *v)
{
    return rocksdb_property_int_cf(r->db, r->cf, name, v) == 0 ? CK_OK : CK_EIO;
}

/* 1 when live file i of lf holds keyed state (is in r's data column family). */
static int mine(const rocks_ks *r, const rocksdb_livefiles_t *lf, int i)
{
    const char *cf = rocksdb_livefiles_column_family_name(lf, i);
    return cf && !strcmp(cf, r->h.name[r->h.data]);
}

/* Bytes of the live SST files not in `before` (names, NUL-separated; NULL:
 * all of them); *names gets the current names (malloc'd) when asked. */
static uint64_t new_sst_bytes(rocks_ks *r, const char *before, size_t blen, char **names,
                              size_t *nlen)
{
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(r->db);
    uint64_t bytes = 0;
    size_t cap = 0, len = 0;
    char *out = NULL;
    for (int i = 0; lf && i < rocksdb_livefiles_count(lf); i++) {
        if (!mine(r, lf, i))
            continue;
        const char *name = rocksdb_livefiles_name(lf, i);
        int known = 0;
        for (size_t at = 0; before && at < blen && !known; at += strlen(before + at) + 1)
            known = !strcmp(before + at, name);
        if (!known)
            bytes += rocksdb_livefiles_size(lf, i);
        size_t l = strlen(name) + 1;
        if (names && !ck_reserve(&out, &cap, len + l)) {
            memcpy(out + len, name, l);
            len += l;
        }
    }
    if (lf)
        rocksdb_livefiles_destroy(lf);
    if (names) {
        *names = out;
        *nlen = len;
    }
    return bytes;
}

int ck_rocks_levels(ck_kstate *s, int *files, uint64_t *bytes)
{
    rocks_ks *r = (rocks_ks *)s;
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(r->db);
    if (!lf)
        return CK_EIO;
    memset(files, 0, NLEVELS * sizeof(*files));
    memset(bytes, 0, NLEVELS * sizeof(*bytes));
    for (int i = 0; i < rocksdb_livefiles_count(lf); i++) {
        int lv = rocksdb_livefiles_level(lf, i);
        if (lv >= 0 && lv < NLEVELS && mine(r, lf, i)) {
            files[lv]++;
            bytes[lv] += rocksdb_livefiles_size(lf, i);
        }
    }
    rocksdb_livefiles_destroy(lf);
    return CK_OK;
}

/* a < b, keys compared as RocksDB's bytewise comparator does */
static int key_less(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c < 0 || (c == 0 && al < bl);
}

/* Of level lv's files in lf, the one to compact next: the first whose
 * smallest key is past the level's compact pointer, else the first. */
static int pick_file(const rocks_ks *r, const rocksdb_livefiles_t *lf, int lv)
{
    int best = -1, first = -1;
    const char *bk = NULL, *fk = NULL;
    size_t bl = 0, fl = 0;
    for (int i = 0; i < rocksdb_livefiles_count(lf); i++) {
        if (rocksdb_livefiles_level(lf, i) != lv || !mine(r, lf, i))
            continue;
        size_t kl;
        const char *k = rocksdb_livefiles_smallestkey(lf, i, &kl);
        if (first < 0 || key_less(k, kl, fk, fl))
            first = i, fk = k, fl = kl;
        if (r->cptr[lv] && !key_less(r->cptr[lv], r->cptr_len[lv], k, kl))
            continue; /* at or before the pointer */
        if (best < 0 || key_less(k, kl, bk, bl))
            best = i, bk = k, bl = kl;
    }
    return best >= 0 ? best : first;
}

/* The engine's leveled compaction, in this thread, after every flush and
 * after a restore opens the instance (RocksDB's own is off): while level
 * 0 holds CK_ROCKS_L0_TRIGGER files or more, all of them go into level 1;
 * then, level by level, while a level holds more than its target
 * (max-size-level-base, times 10 per level below 1), one of its files (in
 * key order, round robin) goes into the next. RocksDB adds the files of
 * the output level that overlap. Nothing runs beside the operator's
 * writes, and the tree after each flush depends on the writes alone. */
static int compact(rocks_ks *r)
{
    for (int round = 0; round < 10000; round++) {
        const rocksdb_livefiles_t *lf = rocksdb_livefiles(r->db);
        if (!lf)
            return CK_EIO;
        int n = rocksdb_livefiles_count(lf), from = -1, l0 = 0;
        uint64_t size[NLEVELS] = {0};
        for (int i = 0; i < n; i++) {
            int lv = rocksdb_livefiles_level(lf, i);
            if (!mine(r, lf, i))
                continue;
            if (lv >= 0 && lv < NLEVELS)
                size[lv] += rocksdb_livefiles_size(lf, i);
            l0 += lv == 0;
        }
        if (l0 >= CK_ROCKS_L0_TRIGGER) {
            from = 0;
        } else {
            double target = (double)r->level_base;
            for (int lv = 1; lv < NLEVELS - 1 && from < 0; lv++, target *= 10)
                if ((double)size[lv] > target)
                    from = lv;
        }
        if (from < 0) {
            rocksdb_livefiles_destroy(lf);
            return CK_OK;
        }
        const char **names = malloc((size_t)n * sizeof(*names));
        int k = 0;
        if (!names) {
            rocksdb_livefiles_destroy(lf);
            return CK_ENOMEM;
        }
        if (from == 0) {
            for (int i = 0; i < n; i++)
                if (rocksdb_livefiles_level(lf, i) == 0 && mine(r, lf, i))
                    names[k++] = rocksdb_livefiles_name(lf, i);
        } else {
            int f = pick_file(r, lf, from);
            size_t kl;
            const char *big = rocksdb_livefiles_largestkey(lf, f, &kl);
            char *c = malloc(kl ? kl : 1);
            if (!c) {
                free(names);
                rocksdb_livefiles_destroy(lf);
                return CK_ENOMEM;
            }
            memcpy(c, big, kl);
            free(r->cptr[from]);
            r->cptr[from] = c;
            r->cptr_len[from] = kl;
            names[k++] = rocksdb_livefiles_name(lf, f);
        }
        char err[300];
        int rc = ck_rocks_compact_files(r->db, r->cf, names, k, from + 1, r->target_file, err,
                                        sizeof(err));
        free(names);
        rocksdb_livefiles_destroy(lf);
        if (rc)
            return CK_EIO;
        r->rounds++;
    }
    return CK_EIO; /* it never settled: a bug */
}

/* Flushes the memtable into a level-0 file, waiting for it; then lets
 * compaction run (compact). Counts the bytes each wrote. */
static int rks_flush(ck_kstate *s)
{
    rocks_ks *r = (rocks_ks *)s;
    char *before = NULL, *after = NULL;
    size_t blen = 0, alen = 0;
    new_sst_bytes(r, NULL, 0, &before, &blen);
    char *err = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush_cf(r->db, fo, r->cf, &err);
    rocksdb_flushoptions_destroy(fo);
    if (err) {
        rocksdb_free(err);
        free(before);
        return CK_EIO;
    }
    uint64_t flushed = new_sst_bytes(r, before, blen, &after, &alen);
    free(before);
    if (flushed) {
        s->work.flushes++;
        s->work.flushed += flushed;
    }
    int rc = compact(r);
    uint64_t compacted = rc ? 0 : new_sst_bytes(r, after, alen, NULL, NULL);
    free(after);
    if (compacted) {
        s->work.compactions++;
        s->work.compacted += compacted;
    }
    r->since_check = 0;
    return rc;
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
    rocksdb_put_cf(r->db, r->wo, r->cf, (const char *)k, kl, (const char *)v, vl, &err);
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
    char *v = rocksdb_get_cf(r->db, r->ro, r->cf, (const char *)k, kl, vl, &err);
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
    if (!ck_kgr_contains(s->kgr, k->loc.kg))
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
    rocksdb_delete_cf(r->db, r->wo, r->cf, (const char *)r->kbuf, kl, &err);
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
    if (vl % (8 * nf) || ck_reserve(&r->vbuf, &r->vcap, vl + 8 * nf)) {
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
    if (!v || vl % (8 * nf) || ck_reserve(&r->list, &r->list_cap, vl)) {
        *n = v || rc ? 1 : 0; /* 1: a failure, not an empty list */
        rocksdb_free(v);
        return NULL;
    }
    decode_vals((const uint8_t *)v, vl / 8, r->list);
    rocksdb_free(v);
    *n = (uint32_t)(vl / (8 * nf));
    return r->list;
}

static int count_entries(rocks_ks *r);

/* After a rescale the count is not known until asked for: counting the
 * instance's keys would cost the restore a scan the clip paths avoid. */
static uint64_t rks_entries(const ck_kstate *s)
{
    rocks_ks *r = (rocks_ks *)(uintptr_t)s; /* the count is a cache */
    if (!r->entries_known && r->db)
        (void)count_entries(r);
    return r->entries;
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
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->db, v->ro, r->cf);
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
        if (ck_reserve(&v->vals, &v->vcap, vl)) {
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

/* Closes the database (the handles zeroed). */
static void db_close(rocks_ks *r)
{
    ck_rocks_db_close(&r->h);
    r->db = NULL;
    r->cf = NULL;
}

/* Takes the open instance h (ck_rocks_db_open's, or a rescale's) as r's. */
static void db_adopt(rocks_ks *r, const ck_rocks_dbh *h)
{
    r->h = *h;
    r->db = h->db;
    r->cf = h->cf[h->data];
}

static void rks_free(ck_kstate *s)
{
    rocks_ks *r = (rocks_ks *)s;
    db_close(r);
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
    for (int lv = 0; lv < NLEVELS; lv++)
        free(r->cptr[lv]);
    free(r->dir);
    free(r->kbuf);
    free(r->list);
    free(r->vbuf);
    free(r);
}

/* ---- native snapshots: RocksDB checkpoints ----------------------------------------- */

typedef struct native_priv {
    char dir[700]; /* <instance>.chk<id>: the checkpoint's hard links */
} native_priv;

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const ck_native_file *)a)->name, ((const ck_native_file *)b)->name);
}

/* Deletes the files of a directory (no subdirectories) and the directory. */
static void rm_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char path[1000];
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static int rks_native_take(ck_kstate *s, uint64_t id, ck_native_snap *out)
{
    rocks_ks *r = (rocks_ks *)s;
    memset(out, 0, sizeof(*out));
    int rc = rks_flush(s); /* Flink's synchronous phase: the memtable goes to an SST */
    if (rc)
        return rc;
    native_priv *np = calloc(1, sizeof(*np));
    if (!np)
        return CK_ENOMEM;
    snprintf(np->dir, sizeof(np->dir), "%s.chk%llu", r->dir, (unsigned long long)id);
    rm_flat_dir(np->dir); /* a checkpoint's must not exist */
    char *err = NULL;
    rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(r->db, &err);
    if (!err)
        rocksdb_checkpoint_create(cp, np->dir, 0, &err);
    if (cp)
        rocksdb_checkpoint_object_destroy(cp);
    if (err) {
        rocksdb_free(err);
        rm_flat_dir(np->dir);
        free(np);
        return CK_EIO;
    }
    DIR *d = opendir(np->dir);
    uint32_t cap = 0;
    rc = d ? CK_OK : CK_EIO;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (strlen(e->d_name) >= sizeof(out->files[0].name)) {
            rc = CK_EIO;
            break;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 16;
            ck_native_file *f = realloc(out->files, cap * sizeof(*f));
            if (!f) {
                rc = CK_ENOMEM;
                break;
            }
            out->files = f;
        }
        ck_native_file *f = &out->files[out->n++];
        memset(f, 0, sizeof(*f));
        snprintf(f->name, sizeof(f->name), "%s", e->d_name);
        char path[1000];
        snprintf(path, sizeof(path), "%s/%s", np->dir, e->d_name);
        struct stat st;
        if (stat(path, &st)) {
            rc = CK_EIO;
            break;
        }
        f->size = (uint64_t)st.st_size;
        size_t nl = strlen(f->name);
        f->immutable = nl > 4 && !strcmp(f->name + nl - 4, ".sst");
    }
    if (d)
        closedir(d);
    /* each SST's entries, as RocksDB counts them (what a modelled value
     * size weighs: handle.h CK_HANDLE_MODELLED) */
    const rocksdb_livefiles_t *lf = rc ? NULL : rocksdb_livefiles(r->db);
    for (int i = 0; lf && i < rocksdb_livefiles_count(lf); i++) {
        const char *name = rocksdb_livefiles_name(lf, i);
        name += name[0] == '/';
        for (uint32_t k = 0; k < out->n && mine(r, lf, i); k++)
            if (!strcmp(out->files[k].name, name))
                out->files[k].entries = rocksdb_livefiles_entries(lf, i);
    }
    if (lf)
        rocksdb_livefiles_destroy(lf);
    if (rc) {
        free(out->files);
        memset(out, 0, sizeof(*out));
        rm_flat_dir(np->dir);
        free(np);
        return rc;
    }
    qsort(out->files, out->n, sizeof(*out->files), cmp_name);
    out->priv = np;
    return CK_OK;
}

/* Reads a whole file (malloc'd): into a buffer of the size fstat gives,
 * read(2) straight into it (a checkpoint's SST, on the upload's path:
 * growing a buffer by doubling it cost reallocations and fresh pages
 * twice the file's size). A file that grew meanwhile is read on. */
static int read_all(const char *path, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CK_EIO;
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    int rc = b ? CK_OK : CK_ENOMEM;
    while (!rc) {
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) {
                rc = CK_ENOMEM;
                break;
            }
            b = nb;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = CK_EIO;
        else if (got == 0)
            break;
        else
            n += (size_t)got;
    }
    close(fd);
    if (rc) {
        free(b);
        return rc;
    }
    *data = b;
    *len = n;
    return CK_OK;
}

static int rks_native_read(ck_kstate *s, const ck_native_snap *n, uint32_t i, uint8_t **data,
                           size_t *len)
{
    (void)s;
    const native_priv *np = n->priv;
    if (!np || i >= n->n)
        return CK_EINVAL;
    char path[1000];
    snprintf(path, sizeof(path), "%s/%s", np->dir, n->files[i].name);
    return read_all(path, data, len);
}

static int rks_native_path(ck_kstate *s, const ck_native_snap *n, uint32_t i, char *buf,
                           size_t len)
{
    (void)s;
    const native_priv *np = n->priv;
    if (!np || i >= n->n)
        return CK_EINVAL;
    int w = snprintf(buf, len, "%s/%s", np->dir, n->files[i].name);
    return w < 0 || (size_t)w >= len ? CK_ERANGE : CK_OK;
}

static void rks_native_release(ck_kstate *s, ck_native_snap *n)
{
    (void)s;
    native_priv *np = n->priv;
    if (np) {
        rm_flat_dir(np->dir);
        free(np);
    }
    free(n->files);
    memset(n, 0, sizeof(*n));
}

/* Counts the instance's entries (a list is one key): after a restore. */
static int count_entries(rocks_ks *r)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->db, r->ro, r->cf);
    uint64_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it))
        n++;
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err) {
        rocksdb_free(err);
        return CK_EIO;
    }
    r->entries = n;
    r->entries_known = 1;
    return CK_OK;
}

/* Makes directory dir (it must not hold anything) and writes the n files
 * there: 0, CK_ECORRUPT (a name that is not a file's in one directory)
 * or CK_EIO. */
static int write_files(const char *dir, uint32_t n, const char *const *names,
                       uint8_t *const *data, const size_t *lens)
{
    if (mkdir(dir, 0755))
        return CK_EIO;
    for (uint32_t i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strchr(names[i], '/') || !strcmp(names[i], ".") ||
            !strcmp(names[i], ".."))
            return CK_ECORRUPT;
        char path[1000];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        int ok = f && fwrite(data[i], 1, lens[i], f) == lens[i];
        if (f && fclose(f))
            ok = 0;
        if (!ok)
            return CK_EIO;
    }
    return CK_OK;
}

static int rks_native_restore(ck_kstate *s, uint32_t n, const char *const *names,
                              uint8_t *const *data, const size_t *lens)
{
    rocks_ks *r = (rocks_ks *)s;
    db_close(r); /* NULL after a restore that failed */
    char *err = NULL;
    rocksdb_destroy_db(r->opts, r->dir, &err);
    rocksdb_free(err);
    err = NULL;
    rm_flat_dir(r->dir);
    int wrc = write_files(r->dir, n, names, data, lens);
    if (wrc)
        return wrc;
    ck_rocks_dbh h;
    char why[300];
    rocksdb_options_set_create_if_missing(r->opts, 0); /* as the OPTIONS file records */
    int rc = ck_rocks_db_open(r->opts, r->dir, 0, 0, &h, why, sizeof(why));
    rocksdb_options_set_create_if_missing(r->opts, 1);
    if (rc) /* the files do not make a database */
        return rc == CK_ENOMEM ? rc : CK_ECORRUPT;
    db_adopt(r, &h);
    rc = compact(r); /* what opening it scheduled */
    return rc ? rc : count_entries(r);
}

_Static_assert((int)CK_RRS_REUSE == (int)CK_KS_REBUILD_REUSE &&
                   (int)CK_RRS_CLIP == (int)CK_KS_REBUILD_CLIP &&
                   (int)CK_RRS_INGEST == (int)CK_KS_REBUILD_INGEST &&
                   (int)CK_RRS_COPY == (int)CK_KS_REBUILD_COPY,
               "rocksrescale.h's paths are kstate.h's, in its order");

void ck_rocks_rebuild_counts(const ck_rrs_stats *st, ck_kstate_rebuild *out)
{
    *out = (ck_kstate_rebuild){.rebuilds = 1,
                               .path = (int)st->path,
                               .opened = st->opened,
                               .keys_iterated = st->keys_iterated,
                               .keys_written = st->keys_written,
                               .bytes_written = st->bytes_written,
                               .files_linked = st->files_linked,
                               .files_deleted = st->files_deleted,
                               .files_imported = st->files_imported,
                               .ranges_deleted = st->ranges_deleted,
                               .bytes_linked = st->bytes_linked,
                               .bytes_deleted = st->bytes_deleted,
                               .bytes_imported = st->bytes_imported,
                               .flushes = st->flushes,
                               .compactions = st->compactions,
                               .flushed = st->flushed,
                               .compacted = st->compacted};
}

static void rebuild_add(ck_kstate_rebuild *a, const ck_kstate_rebuild *b)
{
    a->rebuilds += b->rebuilds;
    a->path = b->path;
    a->opened += b->opened;
    a->keys_iterated += b->keys_iterated;
    a->keys_written += b->keys_written;
    a->bytes_written += b->bytes_written;
    a->files_linked += b->files_linked;
    a->files_deleted += b->files_deleted;
    a->files_imported += b->files_imported;
    a->ranges_deleted += b->ranges_deleted;
    a->bytes_linked += b->bytes_linked;
    a->bytes_deleted += b->bytes_deleted;
    a->bytes_imported += b->bytes_imported;
    a->flushes += b->flushes;
    a->compactions += b->compactions;
    a->flushed += b->flushed;
    a->compacted += b->compacted;
    a->target_file = b->target_file;
}

/* A restore at another parallelism (kstate.h native_rescale): each old
 * instance's files into a download directory of its own beside the
 * instance's, rebuilt by ck_rocks_rescale, the downloads removed. */
static int rks_native_rescale(ck_kstate *s, uint32_t nsrc, const ck_native_source *src)
{
    rocks_ks *r = (rocks_ks *)s;
    if (nsrc < 1 || nsrc > 32768)
        return CK_EINVAL;
    ck_rrs_source *rs = calloc(nsrc, sizeof(*rs));
    char (*dirs)[1000] = calloc(nsrc, sizeof(*dirs));
    int rc = rs && dirs ? CK_OK : CK_ENOMEM;
    uint32_t made = 0;
    for (uint32_t i = 0; i < nsrc && !rc; i++, made++) {
        snprintf(dirs[i], sizeof(dirs[i]), "%s.rs%u", r->dir, i);
        rm_flat_dir(dirs[i]); /* a crashed attempt's */
        rc = write_files(dirs[i], src[i].n, src[i].names, src[i].data, src[i].lens);
        rs[i] = (ck_rrs_source){.dir = dirs[i], .kgr = src[i].kgr};
    }
    ck_rrs_stats st;
    char err[600] = "";
    if (!rc)
        rc = ck_rocks_rescale(s, rs, (int)nsrc, r->maxp, &r->rs, &st, err, sizeof(err));
    for (uint32_t i = 0; i < made; i++)
        rm_flat_dir(dirs[i]);
    if (!rc) {
        ck_kstate_rebuild b;
        ck_rocks_rebuild_counts(&st, &b);
        b.target_file = r->target_file;
        rebuild_add(&s->work.rebuild, &b);
    }
    free(rs);
    free(dirs);
    return rc;
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
    .native_take = rks_native_take,
    .native_read = rks_native_read,
    .native_path = rks_native_path,
    .native_release = rks_native_release,
    .native_restore = rks_native_restore,
    .native_rescale = rks_native_rescale,
    .view_take = rks_view_take,
    .view_count = rks_view_count,
    .view_visit = rks_view_visit,
    .view_release = rks_view_release,
};

ck_kstate *ck_rocks_open(const char *dir, const ck_rocks_opts *o, ck_kgr kgr,
                         const ck_state_desc *d, int n, char *err, size_t errlen)
{
    rocks_ks *r = calloc(1, sizeof(*r));
    if (!r || !(r->dir = strdup(dir))) {
        snprintf(err, errlen, "out of memory");
        free(r);
        return NULL;
    }
    r->base.ops = &rocks_kstate_ops;
    r->base.kgr = kgr;
    r->base.nstates = n;
    memcpy(r->base.states, d, (size_t)n * sizeof(*d));
    uint64_t write_buffer = o->write_buffer, target_file = o->target_file,
             level_base = o->level_base;
    r->write_buffer = write_buffer;
    r->target_file = target_file;
    r->level_base = level_base;
    r->maxp = o->max_parallelism > 0 ? o->max_parallelism : 32768;
    r->rs = (ck_rrs_opts){.ingest = o->rescale.ingest,
                          .delete_files = o->rescale.delete_files,
                          .overlap = o->rescale.overlap,
                          .copy = o->rescale.copy};
    r->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opts, 1);
    /* no compaction of RocksDB's own: the engine's (compact()) runs in
     * this thread at points it chooses */
    rocksdb_options_set_disable_auto_compactions(r->opts, 1);
    rocksdb_options_set_num_levels(r->opts, NLEVELS);
    rocksdb_options_set_level0_slowdown_writes_trigger(r->opts, 1 << 20);
    rocksdb_options_set_level0_stop_writes_trigger(r->opts, 1 << 20);
    rocksdb_options_set_max_subcompactions(r->opts, 1);
    rocksdb_options_set_target_file_size_base(r->opts, target_file);
    rocksdb_options_set_max_bytes_for_level_base(r->opts, level_base);
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
    ck_rocks_dbh h;
    char why[300];
    if (ck_rocks_db_open(r->opts, dir, 0, 1, &h, why, sizeof(why))) {
        snprintf(err, errlen, "%s: cannot open RocksDB: %s", dir, why);
        r->dir[0] = 0; /* not ours to destroy */
        rks_free(&r->base);
        return NULL;
    }
    db_adopt(r, &h);
    r->entries_known = 1;
    return &r->base;
}

int ck_rocks_rescale(ck_kstate *s, const ck_rrs_source *src, int n, int max_parallelism,
                     const ck_rrs_opts *o, ck_rrs_stats *st, char *err, size_t errlen)
{
    if (s->ops != &rocks_kstate_ops) {
        snprintf(err, errlen, "a rescale restore of a %s instance", s->ops->name);
        return CK_EINVAL;
    }
    rocks_ks *r = (rocks_ks *)s;
    db_close(r);
    char *e = NULL;
    rocksdb_destroy_db(r->opts, r->dir, &e);
    rocksdb_free(e);
    rm_flat_dir(r->dir);
    ck_rrs_target t = {.dir = r->dir,
                       .opts = r->opts,
                       .wo = r->wo,
                       .kgr = s->kgr,
                       .max_parallelism = max_parallelism,
                       .nlevels = NLEVELS,
                       .write_buffer = r->write_buffer};
    ck_rocks_dbh h;
    int rc = ck_rrs_restore(&t, src, n, o, &h, st, err, errlen);
    if (rc)
        return rc; /* the instance stays closed: the caller frees it */
    db_adopt(r, &h);
    r->since_check = 0;
    r->entries = 0;
    r->entries_known = 0;
    for (int lv = 0; lv < NLEVELS; lv++) {
        free(r->cptr[lv]);
        r->cptr[lv] = NULL;
        r->cptr_len[lv] = 0;
    }
    /* the engine's compaction, as after any restore: what the copies'
     * flushes left in level 0 goes down the tree */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *before = NULL;
    size_t blen = 0;
    new_sst_bytes(r, NULL, 0, &before, &blen);
    uint32_t rounds = r->rounds;
    rc = compact(r);
    if (!rc) {
        st->compacted = new_sst_bytes(r, before, blen, NULL, NULL);
        st->compactions = r->rounds - rounds;
    }
    free(before);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    st->ns[CK_RRS_PH_COMPACT] = (uint64_t)((int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 +
                                           (t1.tv_nsec - t0.tv_nsec));
    if (rc)
        snprintf(err, errlen, "%s: compaction after the restore: %s", r->dir, ck_strerror(rc));
    return rc;
}
