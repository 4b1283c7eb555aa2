/*
 * test_rocksstate.c - the RocksDB and changelog keyed-state backends
 * against the heap backend. RocksDB: the same random accesses to value, map and list state give the
 * same answers, the same entry counts and, key group by key group, the
 * same canonical entries in their views (so the same state files); a view
 * keeps what it saw while writes go on; a small write buffer makes the
 * instance flush and compact at points that depend only on the writes, and
 * the engine's leveled compaction keeps level 0 and every level within
 * their limits after each flush; an
 * instance that cannot open says where; freeing one deletes its directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "keygroup.h"
#include "kstate.h"
#include "changelog.h"
#include "rng.h"
#include "rocksstate.h"

enum { MAXP = 128, KG_LO = 32, KG_HI = 95, NKEYS = 400 };

static const ck_state_desc descs[] = {
    {"value", CK_STATE_VALUE, 2},
    {"map", CK_STATE_MAP, 1},
    {"list", CK_STATE_LIST, 1},
};

static char tmpdir[256];

/* 64 KiB memtables into 64 KiB files, a 256 KiB level 1: a small state
 * flushes and compacts through several levels. */
static const ck_rocks_opts small = {.write_buffer = 64 << 10, .target_file = 64 << 10,
                                    .level_base = 256 << 10};

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/chandy-test-rocks-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Key i of the subtask's key groups [KG_LO, KG_HI]: skips keys of others. */
static int make_key(int i, char *buf, uint32_t *len, ck_keyloc *loc)
{
    for (int j = i;; j += NKEYS) {
        *len = (uint32_t)snprintf(buf, 32, "k%d", j);
        int32_t jh = ck_kg_java_hash(buf, *len);
        int kg = ck_kg_of_hash(jh, MAXP);
        if (kg >= KG_LO && kg <= KG_HI) {
            *loc = (ck_keyloc){.jhash = jh, .kg = kg};
            return kg;
        }
    }
}

typedef struct strs {
    char **v;
    size_t n, cap;
} strs;

static int collect(void *arg, const ck_kentry *e)
{
    strs *s = arg;
    char buf[512];
    int n = snprintf(buf, sizeof(buf), "%d|%.*s|%lld|", e->st, (int)e->klen, e->key,
                     (long long)e->ns);
    for (uint32_t i = 0; e->ukey && i < e->uklen; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%02x", e->ukey[i]);
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, "|%u|", e->count);
    uint32_t nv = e->count * descs[e->st].nfields;
    for (uint32_t i = 0; i < nv && (size_t)n < sizeof(buf) - 24; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%lld,", (long long)e->value[i]);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = strdup(buf);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_strs(strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* The views of a and b hold the same canonical entries, key group by key group. */
static void same_views(ck_kstate_view *va, const ck_kstate *a, ck_kstate_view *vb,
                       const ck_kstate *b, uint64_t *total)
{
    *total = 0;
    for (int kg = KG_LO; kg <= KG_HI; kg++) {
        strs x = {0}, y = {0};
        assert_int_equal(a->ops->view_visit(va, kg, collect, &x), 0);
        assert_int_equal(b->ops->view_visit(vb, kg, collect, &y), 0);
        assert_int_equal(a->ops->view_count(va, kg), x.n);
        assert_int_equal(b->ops->view_count(vb, kg), y.n);
        assert_int_equal(x.n, y.n);
        qsort(x.v, x.n, sizeof(char *), cmp_str);
        qsort(y.v, y.n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < x.n; i++)
            assert_string_equal(x.v[i], y.v[i]);
        *total += x.n;
        free_strs(&x);
        free_strs(&y);
    }
}

/* One random access, the same on both backends. */
static void step(ck_kstate *ks[2], ck_rng *r)
{
    char key[32];
    uint32_t klen;
    ck_keyloc loc;
    make_key((int)ck_rng_below(r, NKEYS), key, &klen, &loc);
    loc.ns = (int64_t)ck_rng_below(r, 3) * 1000 - 1000; /* negative namespaces too */
    uint8_t uk[4] = {0, 0, 0, (uint8_t)ck_rng_below(r, 5)};
    int st = (int)ck_rng_below(r, 3), what = (int)ck_rng_below(r, 4);
    int64_t add = (int64_t)ck_rng_below(r, 1000) - 500;
    int64_t got[2][CK_KS_MAX_FIELDS];
    int found[2], rcs[2];
    for (int b = 0; b < 2; b++) {
        ck_kkey k = {.loc = loc, .key = key, .klen = klen};
        if (st == 1) {
            k.ukey = uk;
            k.uklen = sizeof(uk);
        }
        ck_ks_locate(ks[b], st, &k);
        if (st == 2 && what < 2) {
            assert_int_equal(ks[b]->ops->list_add(ks[b], st, &k, &add), 0);
            found[b] = 1;
        } else if (st == 2 && what == 2) {
            uint32_t n;
            const int64_t *v = ks[b]->ops->list_get(ks[b], st, &k, &n);
            found[b] = (int)n;
            got[b][0] = n ? v[n - 1] : 0;
            got[b][1] = n ? v[0] : 0;
        } else if (what == 3) {
            rcs[b] = ck_ks_remove(ks[b], st, &k);
            found[b] = rcs[b] == CK_OK;
            got[b][0] = got[b][1] = 0;
        } else {
            int created;
            int64_t *v = ck_ks_acquire(ks[b], st, &k, what < 2, &created);
            found[b] = v != NULL;
            if (v) {
                v[0] += add;
                if (descs[st].nfields > 1)
                    v[1] = add * 3;
                got[b][0] = v[0];
                got[b][1] = descs[st].nfields > 1 ? v[1] : 0;
                assert_int_equal(ck_ks_release(ks[b], st, &k, v, 1), 0);
            } else {
                got[b][0] = got[b][1] = 0;
            }
        }
    }
    assert_int_equal(found[0], found[1]);
    if (!(st == 2 && what < 2)) {
        assert_int_equal(got[0][0], got[1][0]);
        assert_int_equal(got[0][1], got[1][1]);
    }
}

static void test_same_as_heap(void **state)
{
    (void)state;
    char dir[300], err[300];
    snprintf(dir, sizeof(dir), "%s/same", tmpdir);
    ck_kstate *ks[2];
    ks[0] = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
    /* 64 KiB of memtable: it flushes, and level 0 fills and compacts */
    ks[1] = ck_rocks_open(dir, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err));
    assert_non_null(ks[0]);
    assert_non_null(ks[1]);
    assert_string_equal(ks[1]->ops->name, "rocksdb");
    ck_rng r;
    ck_rng_init(&r, 11, 3);
    for (int i = 0; i < 30000; i++)
        step(ks, &r);
    assert_int_equal(ks[0]->ops->entries(ks[0]), ks[1]->ops->entries(ks[1]));
    assert_true(ks[1]->ops->entries(ks[1]) > 500);
    /* a view taken now keeps what it saw while 20000 more accesses go on */
    ck_kstate_view *v[2];
    assert_int_equal(ks[0]->ops->view_take(ks[0], &v[0]), 0);
    assert_int_equal(ck_ks_flush(ks[1]), 0); /* a checkpoint's synchronous phase */
    assert_int_equal(ks[1]->ops->view_take(ks[1], &v[1]), 0);
    uint64_t before;
    same_views(v[0], ks[0], v[1], ks[1], &before);
    for (int i = 0; i < 20000; i++)
        step(ks, &r);
    uint64_t again;
    same_views(v[0], ks[0], v[1], ks[1], &again);
    assert_int_equal(before, again);
    ks[0]->ops->view_release(v[0]);
    ks[1]->ops->view_release(v[1]);
    assert_int_equal(ks[0]->ops->view_take(ks[0], &v[0]), 0);
    assert_int_equal(ks[1]->ops->view_take(ks[1], &v[1]), 0);
    uint64_t after;
    same_views(v[0], ks[0], v[1], ks[1], &after);
    /* a list counts once in entries, as an entry of its view does */
    assert_int_equal(after, ks[1]->ops->entries(ks[1]));
    ks[0]->ops->view_release(v[0]);
    ks[1]->ops->view_release(v[1]);
    /* RocksDB did its own work, which the heap does not report */
    const ck_kstate_work *w = &ks[1]->work;
    assert_true(w->reads > 40000 && w->writes > 20000);
    assert_true(w->flushes >= CK_ROCKS_L0_TRIGGER && w->flushed > 0);
    assert_true(w->compactions >= 1 && w->compacted > 0);
    assert_true(ks[0]->work.reads == 0 && ks[0]->work.flushes == 0);
    ck_kstate_free(ks[0]);
    ck_kstate_free(ks[1]);
    struct stat sb;
    assert_int_equal(stat(dir, &sb), -1); /* freeing it deleted its directory */
}

/* The engine's leveled compaction: after every flush, level 0 holds fewer
 * than CK_ROCKS_L0_TRIGGER files and every level above the last within
 * its target (32 KiB, times 10 per level); the tree grows past level 1;
 * compacting rewrote bytes. */
static void test_leveled_compaction(void **state)
{
    (void)state;
    char dir[300], err[300];
    snprintf(dir, sizeof(dir), "%s/levels", tmpdir);
    ck_kstate *ks[2];
    ks[0] = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
    const ck_rocks_opts tiny = {.write_buffer = 32 << 10, .target_file = 16 << 10,
                                .level_base = 32 << 10};
    ks[1] = ck_rocks_open(dir, &tiny, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err));
    assert_non_null(ks[1]);
    ck_rng r;
    ck_rng_init(&r, 5, 2);
    uint64_t flushes = 0;
    int deepest = 0;
    for (int i = 0; i < 120000; i++) {
        step(ks, &r);
        if (ks[1]->work.flushes == flushes)
            continue;
        flushes = ks[1]->work.flushes;
        int files[CK_ROCKS_LEVELS];
        uint64_t bytes[CK_ROCKS_LEVELS];
        assert_int_equal(ck_rocks_levels(ks[1], files, bytes), 0);
        assert_true(files[0] < CK_ROCKS_L0_TRIGGER);
        double target = tiny.level_base;
        for (int lv = 1; lv < CK_ROCKS_LEVELS - 1; lv++, target *= 10)
            assert_true((double)bytes[lv] <= target);
        for (int lv = 0; lv < CK_ROCKS_LEVELS; lv++)
            if (files[lv])
                deepest = lv > deepest ? lv : deepest;
    }
    assert_true(flushes > 20);
    assert_true(deepest >= 2);
    assert_true(ks[1]->work.compactions > 5 && ks[1]->work.compacted > ks[1]->work.flushed / 2);
    /* what it holds is still what the heap holds */
    assert_int_equal(ks[0]->ops->entries(ks[0]), ks[1]->ops->entries(ks[1]));
    ck_kstate_free(ks[0]);
    ck_kstate_free(ks[1]);
}

/* Flushes and compactions fall at the same writes on every run, and leave
 * the same tree. */
static void test_work_is_deterministic(void **state)
{
    (void)state;
    ck_kstate_work w[2];
    int files[2][CK_ROCKS_LEVELS];
    uint64_t bytes[2][CK_ROCKS_LEVELS];
    for (int run = 0; run < 2; run++) {
        char dir[300], err[300];
        snprintf(dir, sizeof(dir), "%s/det%d", tmpdir, run);
        ck_kstate *ks[2];
        ks[0] = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
        ks[1] = ck_rocks_open(dir, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err));
        assert_non_null(ks[1]);
        ck_rng r;
        ck_rng_init(&r, 7, 1);
        for (int i = 0; i < 15000; i++)
            step(ks, &r);
        w[run] = ks[1]->work;
        assert_int_equal(ck_rocks_levels(ks[1], files[run], bytes[run]), 0);
        ck_kstate_free(ks[0]);
        ck_kstate_free(ks[1]);
    }
    assert_true(w[0].flushes > 0);
    assert_int_equal(w[0].flushes, w[1].flushes);
    assert_int_equal(w[0].compactions, w[1].compactions);
    assert_true(w[0].compactions > 0);
    assert_int_equal(w[0].flushed, w[1].flushed);
    assert_int_equal(w[0].compacted, w[1].compacted);
    assert_memory_equal(files[0], files[1], sizeof(files[0]));
    assert_memory_equal(bytes[0], bytes[1], sizeof(bytes[0]));
    assert_int_equal(w[0].reads, w[1].reads);
    assert_int_equal(w[0].writes, w[1].writes);
}

/* A native snapshot (the instance's files, set aside in the synchronous
 * phase) holds the state as of then; put into a fresh instance it reads
 * back as the heap's view taken at the same moment; SST files are marked
 * immutable and carry over between snapshots; garbage files do not open. */
static void test_native_snapshot_restore(void **state)
{
    (void)state;
    char dir[300], dir2[300], err[300];
    snprintf(dir, sizeof(dir), "%s/native", tmpdir);
    snprintf(dir2, sizeof(dir2), "%s/native-restored", tmpdir);
    ck_kstate *ks[2];
    ks[0] = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
    ks[1] = ck_rocks_open(dir, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err));
    assert_non_null(ks[1]);
    assert_non_null(ks[1]->ops->native_take);
    assert_null(ks[0]->ops->native_take); /* the heap has none */
    ck_rng r;
    ck_rng_init(&r, 21, 2);
    for (int i = 0; i < 12000; i++)
        step(ks, &r);
    ck_native_snap n1, n2;
    assert_int_equal(ks[1]->ops->native_take(ks[1], 7, &n1), 0);
    ck_kstate_view *hv;
    assert_int_equal(ks[0]->ops->view_take(ks[0], &hv), 0);
    int ssts = 0, manifest = 0, current = 0;
    for (uint32_t i = 0; i < n1.n; i++) {
        ssts += n1.files[i].immutable;
        manifest += !strncmp(n1.files[i].name, "MANIFEST-", 9);
        current += !strcmp(n1.files[i].name, "CURRENT");
        assert_int_equal(n1.files[i].immutable,
                         strstr(n1.files[i].name, ".sst") != NULL);
        if (i)
            assert_true(strcmp(n1.files[i - 1].name, n1.files[i].name) < 0);
    }
    assert_true(ssts >= 1 && manifest == 1 && current == 1);
    /* its bytes, read while the instance goes on changing */
    for (int i = 0; i < 500; i++)
        step(ks, &r);
    const char *names[64];
    char namebuf[64][64];
    uint8_t *data[64];
    size_t lens[64];
    assert_true(n1.n <= 64);
    for (uint32_t i = 0; i < n1.n; i++) {
        snprintf(namebuf[i], sizeof(namebuf[i]), "%s", n1.files[i].name);
        names[i] = namebuf[i];
        assert_int_equal(ks[1]->ops->native_read(ks[1], &n1, i, &data[i], &lens[i]), 0);
        assert_int_equal(lens[i], n1.files[i].size);
        /* its path (an upload from there) holds the same bytes */
        char path[1024];
        assert_int_equal(ks[1]->ops->native_path(ks[1], &n1, i, path, sizeof(path)), 0);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        uint8_t *b = malloc(lens[i] + 1);
        assert_int_equal(fread(b, 1, lens[i] + 1, f), lens[i]);
        fclose(f);
        assert_memory_equal(b, data[i], lens[i]);
        free(b);
        assert_int_equal(ks[1]->ops->native_path(ks[1], &n1, i, path, 8), CK_ERANGE);
    }
    char nopath[64];
    assert_int_equal(ks[1]->ops->native_path(ks[1], &n1, n1.n, nopath, sizeof(nopath)),
                     CK_EINVAL);
    uint32_t nf = n1.n;
    ks[1]->ops->native_release(ks[1], &n1);
    /* Snapshots a few hundred writes apart share SST files, unless a
     * compaction rewrote them in between (every fourth flush here). */
    ck_native_snap prev = {0};
    int sharing = 0;
    for (int c = 0; c < 8; c++) {
        for (int i = 0; i < 300; i++)
            step(ks, &r);
        assert_int_equal(ks[1]->ops->native_take(ks[1], 10 + (uint64_t)c, &n2), 0);
        int kept = 0;
        for (uint32_t i = 0; i < n2.n; i++)
            for (uint32_t k = 0; k < prev.n; k++)
                kept += n2.files[i].immutable && !strcmp(n2.files[i].name, prev.files[k].name);
        sharing += kept > 0;
        ks[1]->ops->native_release(ks[1], &prev);
        prev = n2;
    }
    ks[1]->ops->native_release(ks[1], &prev);
    assert_true(sharing >= 4);
    /* restored into a fresh instance: the state as of the first snapshot */
    ck_kstate *back =
        ck_rocks_open(dir2, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err));
    assert_non_null(back);
    assert_int_equal(back->ops->native_restore(back, nf, names, data, lens), 0);
    ck_kstate_view *bv;
    assert_int_equal(back->ops->view_take(back, &bv), 0);
    uint64_t total;
    same_views(hv, ks[0], bv, back, &total);
    assert_true(total > 300);
    assert_int_equal(back->ops->entries(back), total);
    back->ops->view_release(bv);
    ks[0]->ops->view_release(hv);
    /* it goes on from there: writes and another snapshot work */
    char key[32];
    uint32_t klen;
    ck_keyloc loc;
    make_key(1, key, &klen, &loc);
    ck_kkey k = {.loc = loc, .key = key, .klen = klen};
    int created;
    int64_t *v = ck_ks_acquire(back, 0, &k, 1, &created);
    assert_non_null(v);
    v[0] = 42;
    assert_int_equal(ck_ks_release(back, 0, &k, v, 1), 0);
    assert_int_equal(back->ops->native_take(back, 99, &n2), 0);
    assert_true(n2.n > 0);
    back->ops->native_release(back, &n2);
    /* without its CURRENT file, or with garbage for a MANIFEST, the files
     * do not open (and an empty instance is not made up instead) */
    uint32_t cur = 0;
    while (strcmp(names[cur], "CURRENT"))
        cur++;
    const char *swapped = names[cur];
    names[cur] = names[nf - 1];
    names[nf - 1] = swapped;
    assert_int_not_equal(back->ops->native_restore(back, nf - 1, names, data, lens), 0);
    names[nf - 1] = names[cur];
    names[cur] = swapped;
    for (uint32_t i = 0; i < nf; i++)
        if (!strncmp(names[i], "MANIFEST-", 9))
            memset(data[i], 0x5a, lens[i]);
    assert_int_not_equal(back->ops->native_restore(back, nf, names, data, lens), 0);
    for (uint32_t i = 0; i < nf; i++)
        free(data[i]);
    ck_kstate_free(back);
    ck_kstate_free(ks[0]);
    ck_kstate_free(ks[1]);
}

/* ---- rescale: native_rescale ------------------------------------------------------- */

enum { RS_KEYS = 6000, RS_LO = 32, RS_HI = 95 };

/* Key i of the rescale test: its text, location and value state's fields. */
static void rs_key(int i, char *buf, uint32_t *len, ck_keyloc *loc)
{
    *len = (uint32_t)snprintf(buf, 32, "rescale-key-%d", i);
    int32_t jh = ck_kg_java_hash(buf, *len);
    *loc = (ck_keyloc){.jhash = jh, .kg = ck_kg_of_hash(jh, MAXP)};
}

/* An old instance of key groups kgr holding every rescale key of them
 * (value state; every third key a map entry as well), its native files
 * read into src (names and data malloc'd). */
typedef struct rs_old {
    char names[64][64];
    const char *np[64];
    uint8_t *data[64];
    size_t lens[64];
    ck_native_source src;
} rs_old;

static void rs_make_old(const char *dir, ck_kgr kgr, rs_old *o)
{
    char err[300];
    /* level 1 in files of 8 KiB, in key order */
    const ck_rocks_opts narrow = {.write_buffer = 32 << 10, .target_file = 8 << 10,
                                  .level_base = 1 << 20};
    ck_kstate *ks = ck_rocks_open(dir, &narrow, kgr, descs, 3, err, sizeof(err));
    assert_non_null(ks);
    for (int i = 0; i < RS_KEYS; i++) {
        char key[32];
        uint32_t klen;
        ck_keyloc loc;
        rs_key(i, key, &klen, &loc);
        if (!ck_kgr_contains(kgr, loc.kg))
            continue;
        ck_kkey k = {.loc = loc, .key = key, .klen = klen};
        int created;
        int64_t *v = ck_ks_acquire(ks, 0, &k, 1, &created);
        assert_non_null(v);
        v[0] = i;
        v[1] = loc.kg;
        assert_int_equal(ck_ks_release(ks, 0, &k, v, 1), 0);
        if (i % 3 == 0) {
            uint8_t uk[2] = {1, (uint8_t)i};
            ck_kkey m = {.loc = loc, .key = key, .klen = klen, .ukey = uk, .uklen = 2};
            v = ck_ks_acquire(ks, 1, &m, 1, &created);
            assert_non_null(v);
            v[0] = -i;
            assert_int_equal(ck_ks_release(ks, 1, &m, v, 1), 0);
        }
    }
    ck_native_snap n;
    assert_int_equal(ks->ops->native_take(ks, 1, &n), 0);
    assert_true(n.n <= 64);
    int files[CK_ROCKS_LEVELS];
    uint64_t bytes[CK_ROCKS_LEVELS];
    assert_int_equal(ck_rocks_levels(ks, files, bytes), 0);
    assert_true(files[1] >= 4); /* so that some lie wholly outside [32, 95] */
    for (uint32_t i = 0; i < n.n; i++) {
        snprintf(o->names[i], sizeof(o->names[i]), "%s", n.files[i].name);
        o->np[i] = o->names[i];
        assert_int_equal(ks->ops->native_read(ks, &n, i, &o->data[i], &o->lens[i]), 0);
    }
    o->src = (ck_native_source){.kgr = kgr, .n = n.n, .names = o->np, .data = o->data,
                                .lens = o->lens};
    ks->ops->native_release(ks, &n);
    ck_kstate_free(ks);
}

/* What rescale target ks holds, key group by key group over every one of
 * max parallelism: exactly the rescale keys of [RS_LO, RS_HI], each with
 * its values, and nothing else. */
static void rs_check(ck_kstate *ks)
{
    ck_kstate *in = ck_clog_kstate_inner(ks);
    uint64_t want[MAXP] = {0}, total = 0;
    for (int i = 0; i < RS_KEYS; i++) {
        char key[32];
        uint32_t klen;
        ck_keyloc loc;
        rs_key(i, key, &klen, &loc);
        int in_range = loc.kg >= RS_LO && loc.kg <= RS_HI;
        if (in_range) {
            want[loc.kg] += 1 + (i % 3 == 0);
            total += 1 + (i % 3 == 0);
        }
        ck_kkey k = {.loc = loc, .key = key, .klen = klen};
        int created;
        int64_t *v = ck_ks_acquire(ks, 0, &k, 0, &created);
        if (!in_range) {
            assert_null(v); /* not the instance's: refused, whatever the files hold */
            continue;
        }
        assert_non_null(v);
        assert_int_equal(v[0], i);
        assert_int_equal(v[1], loc.kg);
        assert_int_equal(ck_ks_release(ks, 0, &k, v, 0), 0);
    }
    ck_kstate_view *v;
    assert_int_equal(in->ops->view_take(in, &v), 0);
    for (int kg = 0; kg < MAXP; kg++)
        assert_int_equal(in->ops->view_count(v, kg), want[kg]);
    in->ops->view_release(v);
    assert_int_equal(ks->ops->entries(ks), total);
}

/* Two instances of [0, 63] and [64, 127] restored into [32, 95] by every
 * path Flink's keys (and chandy's full copy) choose: exactly the keys of
 * the new range, their values, none outside; the rebuild's counts in the
 * instance's work, as the path does them; the downloads removed; and the
 * instance goes on (writes, a native snapshot). Through the changelog
 * backend too, which hands the rebuild to the backend it wraps. */
static void test_native_rescale(void **state)
{
    (void)state;
    char dir[300], err[300];
    rs_old a, b;
    snprintf(dir, sizeof(dir), "%s/rs-old-a", tmpdir);
    rs_make_old(dir, ck_kgr_make(0, 63), &a);
    snprintf(dir, sizeof(dir), "%s/rs-old-b", tmpdir);
    rs_make_old(dir, ck_kgr_make(64, 127), &b);
    ck_native_source src[2] = {a.src, b.src};
    uint64_t in_b = 0, in_all = 0; /* entries of [32, 95] in b, in both */
    for (int i = 0; i < RS_KEYS; i++) {
        char key[32];
        uint32_t klen;
        ck_keyloc loc;
        rs_key(i, key, &klen, &loc);
        if (loc.kg >= RS_LO && loc.kg <= RS_HI) {
            in_all += 1 + (i % 3 == 0);
            in_b += (loc.kg >= 64) * (1 + (i % 3 == 0));
        }
    }
    struct {
        ck_kstate_rescale rs;
        int path, changelog;
    } cases[] = {
        {{0}, CK_KS_REBUILD_CLIP, 0},
        {{.delete_files = 1}, CK_KS_REBUILD_CLIP, 0},
        {{.ingest = 1}, CK_KS_REBUILD_INGEST, 0},
        {{.ingest = 1, .delete_files = 1}, CK_KS_REBUILD_INGEST, 0},
        {{.copy = 1}, CK_KS_REBUILD_COPY, 0},
        {{0}, CK_KS_REBUILD_CLIP, 1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        snprintf(dir, sizeof(dir), "%s/rs-new-%zu", tmpdir, c);
        ck_rocks_opts o = small;
        o.max_parallelism = MAXP;
        o.rescale = cases[c].rs;
        ck_kstate *ks = ck_rocks_open(dir, &o, ck_kgr_make(RS_LO, RS_HI), descs, 3, err,
                                      sizeof(err));
        assert_non_null(ks);
        ck_clog log;
        if (cases[c].changelog) {
            ck_clog_init(&log, 0, descs, 3);
            ks = ck_clog_kstate_new(ks, &log);
            assert_non_null(ks);
        }
        assert_non_null(ks->ops->native_rescale);
        assert_int_equal(ks->ops->native_rescale(ks, 2, src), 0);
        const ck_kstate_rebuild *rb = &ks->work.rebuild;
        assert_int_equal(rb->rebuilds, 1);
        assert_int_equal(rb->path, cases[c].path);
        if (cases[c].path == CK_KS_REBUILD_COPY) {
            assert_int_equal(rb->keys_written, in_all); /* every key of the range */
            assert_int_equal(rb->files_linked, 0);
        } else if (cases[c].path == CK_KS_REBUILD_CLIP) {
            /* a is the initial instance (32 key groups of it in the range, as
             * b; a first): b's keys of the range are copied in */
            assert_int_equal(rb->keys_written, in_b);
            assert_true(rb->files_linked > 0);
            assert_int_equal(rb->ranges_deleted, 1); /* [0, 32): a ends at 63 */
        } else {
            assert_int_equal(rb->keys_written, 0); /* imported whole */
            assert_true(rb->files_imported >= 2);
            assert_int_equal(rb->ranges_deleted, 2); /* [0, 32) and [96, 128) */
        }
        if (cases[c].rs.delete_files && cases[c].path == CK_KS_REBUILD_CLIP)
            assert_true(rb->files_deleted > 0); /* level 1's files of [0, 31] */
        if (cases[c].changelog)
            assert_int_equal(ck_clog_kstate_inner(ks)->work.rebuild.rebuilds, 1);
        rs_check(ks);
        /* the downloads are gone */
        char dl[400];
        struct stat sb;
        snprintf(dl, sizeof(dl), "%s.rs0", dir);
        assert_int_not_equal(stat(dl, &sb), 0);
        snprintf(dl, sizeof(dl), "%s.rs1", dir);
        assert_int_not_equal(stat(dl, &sb), 0);
        /* it goes on: a write, a native snapshot */
        char key[32];
        uint32_t klen;
        ck_keyloc loc;
        int i = 0;
        do
            rs_key(RS_KEYS + i++, key, &klen, &loc);
        while (loc.kg < RS_LO || loc.kg > RS_HI);
        ck_kkey k = {.loc = loc, .key = key, .klen = klen};
        int created;
        int64_t *v = ck_ks_acquire(ks, 0, &k, 1, &created);
        assert_non_null(v);
        assert_int_equal(created, 1);
        assert_int_equal(ck_ks_release(ks, 0, &k, v, 1), 0);
        assert_int_equal(ks->ops->entries(ks), in_all + 1);
        ck_kstate *in = ck_clog_kstate_inner(ks);
        ck_native_snap n;
        assert_int_equal(in->ops->native_take(in, 2, &n), 0);
        assert_true(n.n > 0);
        in->ops->native_release(in, &n);
        ck_kstate_free(ks);
        if (cases[c].changelog)
            ck_clog_free(&log);
    }
    /* a source whose files are not a database, and one whose name is a
     * path: refused */
    snprintf(dir, sizeof(dir), "%s/rs-bad", tmpdir);
    ck_kstate *ks = ck_rocks_open(dir, &small, ck_kgr_make(RS_LO, RS_HI), descs, 3, err,
                                  sizeof(err));
    assert_non_null(ks);
    ck_native_source bad[2] = {a.src, b.src};
    bad[1].n = 1; /* one file of b's: no CURRENT, or no MANIFEST */
    assert_int_equal(ks->ops->native_rescale(ks, 2, bad), CK_ECORRUPT);
    ck_kstate_free(ks);
    ks = ck_rocks_open(dir, &small, ck_kgr_make(RS_LO, RS_HI), descs, 3, err, sizeof(err));
    assert_non_null(ks);
    const char *sneaky[64];
    memcpy(sneaky, a.np, sizeof(sneaky));
    sneaky[0] = "../escape";
    bad[0] = a.src;
    bad[0].names = sneaky;
    bad[1] = b.src;
    assert_int_equal(ks->ops->native_rescale(ks, 2, bad), CK_ECORRUPT);
    ck_kstate_free(ks);
    for (uint32_t i = 0; i < a.src.n; i++)
        free(a.data[i]);
    for (uint32_t i = 0; i < b.src.n; i++)
        free(b.data[i]);
}

/* Copies every canonical entry of a's view into b (a materialization
 * restored). */
typedef struct copier {
    ck_kstate *to;
} copier;

static int copy_entry(void *arg, const ck_kentry *e)
{
    copier *c = arg;
    int32_t jh = ck_kg_java_hash(e->key, e->klen);
    return ck_ks_put_entry(c->to, ck_kg_of_hash(jh, MAXP), jh, e);
}

/* The changelog backend: it answers as the backend it wraps; its log,
 * cut into segments, replayed over the state materialized at a cut gives
 * the state at the end, on the heap and on RocksDB alike; a damaged or
 * foreign segment is refused with a reason. */
static void test_changelog(void **state)
{
    (void)state;
    for (int over_rocks = 0; over_rocks < 2; over_rocks++) {
        char dir[300], dir2[300], err[300];
        snprintf(dir, sizeof(dir), "%s/clog-%d", tmpdir, over_rocks);
        snprintf(dir2, sizeof(dir2), "%s/clog-replayed-%d", tmpdir, over_rocks);
        ck_clog log;
        ck_clog_init(&log, 2, descs, 3);
        ck_kstate *inner =
            over_rocks
                ? ck_rocks_open(dir, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3, err, sizeof(err))
                : ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
        assert_non_null(inner);
        ck_kstate *ks[2] = {ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3),
                            ck_clog_kstate_new(inner, &log)};
        assert_non_null(ks[1]);
        assert_string_equal(ks[1]->ops->name, "changelog");
        assert_ptr_equal(ck_clog_kstate_inner(ks[1]), inner);
        ck_rng r;
        ck_rng_init(&r, 31, 4);
        uint8_t *seg[8];
        size_t seglen[8];
        uint64_t next = 0;
        ck_kstate *mat = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), descs, 3);
        for (int c = 0; c < 8; c++) {
            for (int i = 0; i < 3000; i++)
                step(ks, &r);
            uint64_t first;
            uint32_t n;
            assert_int_equal(ck_clog_cut(&log, &seg[c], &seglen[c], &first, &n), 0);
            assert_true(n > 1000 && first == next); /* segments meet */
            next = first + n;
            if (c == 3) { /* a materialization: the wrapped state, now */
                ck_kstate_view *v;
                assert_int_equal(inner->ops->view_take(inner, &v), 0);
                copier cp = {mat};
                for (int kg = KG_LO; kg <= KG_HI; kg++)
                    assert_int_equal(inner->ops->view_visit(v, kg, copy_entry, &cp), 0);
                inner->ops->view_release(v);
            }
        }
        uint64_t first;
        uint32_t n;
        uint8_t *none;
        size_t nl;
        assert_int_equal(ck_clog_cut(&log, &none, &nl, &first, &n), 0);
        assert_true(n == 0 && !none); /* nothing since */
        /* materialized state + the segments after it = the state now, on
         * either backend; every segment from the start = the same */
        ck_kstate *back[2] = {mat, ck_rocks_open(dir2, &small, ck_kgr_make(KG_LO, KG_HI), descs, 3,
                                                 err, sizeof(err))};
        assert_non_null(back[1]);
        const char *why;
        for (int c = 4; c < 8; c++)
            assert_int_equal(ck_clog_replay(seg[c], seglen[c], back[0], MAXP, &first, &n, &why), 0);
        for (int c = 0; c < 8; c++)
            assert_int_equal(ck_clog_replay(seg[c], seglen[c], back[1], MAXP, &first, &n, &why), 0);
        for (int b = 0; b < 2; b++) {
            ck_kstate_view *va, *vb;
            assert_int_equal(ks[0]->ops->view_take(ks[0], &va), 0);
            assert_int_equal(back[b]->ops->view_take(back[b], &vb), 0);
            uint64_t total;
            same_views(va, ks[0], vb, back[b], &total);
            assert_true(total > 500);
            ks[0]->ops->view_release(va);
            back[b]->ops->view_release(vb);
        }
        /* damage: a flipped byte, a cut, another operator's states */
        seg[5][40] ^= 1;
        assert_int_equal(ck_clog_replay(seg[5], seglen[5], back[1], MAXP, &first, &n, &why),
                         CK_ECHECKSUM);
        assert_non_null(strstr(why, "checksum"));
        assert_int_equal(ck_clog_replay(seg[6], seglen[6] / 2, back[1], MAXP, &first, &n, &why),
                         CK_ECHECKSUM);
        ck_state_desc other[3];
        memcpy(other, descs, sizeof(other));
        other[0].nfields = 1;
        ck_kstate *foreign = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(KG_LO, KG_HI), other, 3);
        assert_int_equal(ck_clog_replay(seg[7], seglen[7], foreign, MAXP, &first, &n, &why),
                         CK_ECORRUPT);
        assert_non_null(strstr(why, "states"));
        ck_kstate_free(foreign);
        for (int c = 0; c < 8; c++)
            free(seg[c]);
        ck_kstate_free(back[0]);
        ck_kstate_free(back[1]);
        ck_kstate_free(ks[0]);
        ck_kstate_free(ks[1]);
        ck_clog_free(&log);
    }
}

static void test_cannot_open(void **state)
{
    (void)state;
    char file[300], dir[400], err[600] = "";
    snprintf(file, sizeof(file), "%s/plainfile", tmpdir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(dir, sizeof(dir), "%s/db", file); /* under a regular file */
    ck_kstate *ks = ck_rocks_open(dir, &small, ck_kgr_make(0, 127), descs, 3, err, sizeof(err));
    assert_null(ks);
    assert_non_null(strstr(err, dir));
    assert_null(strchr(err, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_heap),
        cmocka_unit_test(test_leveled_compaction),
        cmocka_unit_test(test_work_is_deterministic),
        cmocka_unit_test(test_native_snapshot_restore),
        cmocka_unit_test(test_native_rescale),
        cmocka_unit_test(test_changelog),
        cmocka_unit_test(test_cannot_open),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
