/*
 * test_rocksrescale.c - RocksDB's rescale restore (rocksrescale.h, through
 * rocksstate's ck_rocks_rescale): old instances of parallelism 1, 2 and 4
 * (value, map and list state, keys updated and removed after flushes, so
 * that old and new versions lie on different levels) restore every new
 * subtask of parallelism 1, 2 and 3 by each path (copy, clip, ingest;
 * with and without deleting files in range); each restored instance
 * holds exactly the canonical entries the heap backend holds for its key
 * groups (so every key once, with its latest value, and none outside),
 * and the counts say exactly what was copied, imported and deleted. The
 * path and the initial instance are Flink's (score, overlap threshold);
 * an instance restored at the same range keeps its history and no other
 * does; a rescaled instance takes writes, snapshots and restores again,
 * and the same restore twice makes the same files;
 * a damaged or missing instance, or overlapping ranges, fail with an
 * error that names the instance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "keygroup.h"
#include "kstate.h"
#include "rocksrescale.h"
#include "rocksstate.h"

enum { MAXP = 128, NKEYS = 3000 };

static const ck_state_desc descs[] = {
    {"value", CK_STATE_VALUE, 2},
    {"map", CK_STATE_MAP, 1},
    {"list", CK_STATE_LIST, 1},
};

/* 64 KiB memtables into 32 KiB files, a 64 KiB level 1: the old
 * instances flush and compact through several levels. */
static const ck_rocks_opts small = {.write_buffer = 64 << 10, .target_file = 32 << 10,
                                    .level_base = 64 << 10};

static char tmpdir[256];
static ck_kstate *heap; /* every key group: what each restore must hold */

/* ---- the old instances ------------------------------------------------------- */

static void key_of(int j, char *buf, uint32_t *len, ck_keyloc *loc)
{
    *len = (uint32_t)snprintf(buf, 32, "k%d", j);
    int32_t jh = ck_kg_java_hash(buf, *len);
    *loc = (ck_keyloc){.jhash = jh, .kg = ck_kg_of_hash(jh, MAXP),
                       .ns = (int64_t)(j % 3) * 1000 - 1000};
}

/* Key j's writes of round `round` (0: every key; 1: a fifth updated, a
 * seventh's value removed) into ks, when its key group is ks's. */
static void write_key(ck_kstate *ks, int j, int round)
{
    char key[32];
    uint32_t klen;
    ck_keyloc loc;
    key_of(j, key, &klen, &loc);
    if (loc.kg < ks->kgr.start || loc.kg > ks->kgr.end)
        return;
    if (round == 1 && j % 5 != 0 && j % 7 != 0)
        return;
    ck_kkey k = {.loc = loc, .key = key, .klen = klen};
    ck_ks_locate(ks, 0, &k);
    if (round == 1 && j % 7 == 0) {
        assert_int_equal(ck_ks_remove(ks, 0, &k), 0);
        return;
    }
    int created;
    int64_t *v = ck_ks_acquire(ks, 0, &k, 1, &created);
    assert_non_null(v);
    v[0] = j + round * 100000;
    v[1] = -7 * j;
    assert_int_equal(ck_ks_release(ks, 0, &k, v, 1), 0);
    for (int u = 0; u <= j % 3; u++) {
        uint8_t uk[2] = {(uint8_t)u, (uint8_t)round};
        ck_kkey m = {.loc = loc, .key = key, .klen = klen, .ukey = uk, .uklen = 2};
        ck_ks_locate(ks, 1, &m);
        v = ck_ks_acquire(ks, 1, &m, 1, &created);
        assert_non_null(v);
        v[0] = j * 10 + u;
        assert_int_equal(ck_ks_release(ks, 1, &m, v, 1), 0);
    }
    ck_kkey l = {.loc = loc, .key = key, .klen = klen};
    ck_ks_locate(ks, 2, &l);
    int64_t e = j + round;
    assert_int_equal(ks->ops->list_add(ks, 2, &l, &e), 0);
}

static void write_all(ck_kstate *ks)
{
    for (int round = 0; round < 2; round++)
        for (int j = 0; j < NKEYS; j++)
            write_key(ks, j, round);
}

static void store_dir(int p, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s/store/p%d-%d", tmpdir, p, i);
}

/* The native snapshot of old subtask i of p, in the store. */
static void make_old(int p, int i)
{
    char dir[400], err[300], out[400];
    snprintf(dir, sizeof(dir), "%s/old-p%d-%d", tmpdir, p, i);
    ck_kstate *ks = ck_rocks_open(dir, &small, ck_kg_range(i, p, MAXP), descs, 3, err, sizeof(err));
    assert_non_null(ks);
    write_all(ks);
    ck_native_snap snap;
    assert_int_equal(ks->ops->native_take(ks, 1, &snap), 0);
    store_dir(p, i, out, sizeof(out));
    assert_int_equal(mkdir(out, 0755), 0);
    for (uint32_t f = 0; f < snap.n; f++) {
        char from[1000], to[1000];
        assert_int_equal(ks->ops->native_path(ks, &snap, f, from, sizeof(from)), 0);
        snprintf(to, sizeof(to), "%s/%s", out, snap.files[f].name);
        assert_int_equal(link(from, to), 0);
    }
    ks->ops->native_release(ks, &snap);
    ck_kstate_free(ks);
}

static void rm_rf(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/chandy-test-rrs-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    char store[300];
    snprintf(store, sizeof(store), "%s/store", tmpdir);
    mkdir(store, 0755);
    heap = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(0, MAXP - 1), descs, 3);
    write_all(heap);
    static const int ps[] = {1, 2, 4};
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
        for (int i = 0; i < ps[k]; i++)
            make_old(ps[k], i);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ck_kstate_free(heap);
    rm_rf(tmpdir);
    return 0;
}

/* ---- checking a restored instance -------------------------------------------- */

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

/* Canonical entries of key group kg in the heap (everything written). */
static uint64_t heap_count(int kg)
{
    ck_kstate_view *v;
    assert_int_equal(heap->ops->view_take(heap, &v), 0);
    uint64_t n = heap->ops->view_count(v, kg);
    heap->ops->view_release(v);
    return n;
}

static uint64_t heap_count_range(int a, int b)
{
    uint64_t n = 0;
    for (int kg = a; kg <= b; kg++)
        n += heap_count(kg);
    return n;
}

/* ks holds, key group by key group, exactly the heap's entries of its
 * range and nothing in any other key group; returns how many. */
static uint64_t same_as_heap(ck_kstate *ks)
{
    ck_kstate_view *va, *vb;
    assert_int_equal(heap->ops->view_take(heap, &va), 0);
    assert_int_equal(ks->ops->view_take(ks, &vb), 0);
    uint64_t total = 0;
    for (int kg = 0; kg < MAXP; kg++) {
        strs x = {0}, y = {0};
        assert_int_equal(ks->ops->view_visit(vb, kg, collect, &y), 0);
        if (kg < ks->kgr.start || kg > ks->kgr.end) {
            if (y.n)
                fail_msg("key group %d, outside [%d, %d]: %zu entries, first %s", kg, ks->kgr.start,
                         ks->kgr.end, y.n, y.v[0]);
            continue;
        }
        assert_int_equal(heap->ops->view_visit(va, kg, collect, &x), 0);
        if (x.n != y.n)
            fail_msg("key group %d: %zu entries, wanted %zu", kg, y.n, x.n);
        qsort(x.v, x.n, sizeof(char *), cmp_str);
        qsort(y.v, y.n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < x.n; i++)
            assert_string_equal(x.v[i], y.v[i]);
        total += x.n;
        free_strs(&x);
        free_strs(&y);
    }
    heap->ops->view_release(va);
    ks->ops->view_release(vb);
    assert_true(total > 0);
    return total;
}

/* ---- one restore ------------------------------------------------------------- */

typedef enum { M_CLIP, M_INGEST, M_COPY } mode;

/* Downloads source dirs: SSTs hard-linked, the rest copied, as a
 * subtask's download into its own directory. */
static void download(const char *from, const char *to)
{
    rm_rf(to); /* a failed test's */
    assert_int_equal(mkdir(to, 0755), 0);
    DIR *d = opendir(from);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char a[1000], b[1000];
        snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
        snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
        if (strstr(e->d_name, ".sst")) {
            assert_int_equal(link(a, b), 0);
        } else {
            char cmd[2100];
            snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", a, b);
            assert_int_equal(system(cmd), 0);
        }
    }
    closedir(d);
}

static int dls; /* downloads: a directory each */

typedef struct restore {
    int n;
    char dirs[8][400];
    ck_rrs_source src[8];
    ck_kstate *ks;
    ck_rrs_stats st;
    int rc;
    char err[600];
} restore;

/* Restores new subtask i of new_p from the old instances of old_p that
 * meet its range, by mode m (delete_files as given). */
static void run(restore *r, int old_p, int new_p, int i, mode m, int delete_files,
                double overlap)
{
    memset(r, 0, sizeof(*r));
    ck_kgr nr = ck_kg_range(i, new_p, MAXP);
    for (int k = 0; k < old_p; k++) {
        ck_kgr old = ck_kg_range(k, old_p, MAXP);
        if (ck_kgr_empty(ck_kgr_intersect(old, nr)))
            continue;
        char from[400];
        store_dir(old_p, k, from, sizeof(from));
        snprintf(r->dirs[r->n], sizeof(r->dirs[r->n]), "%s/dl-%d-%d", tmpdir, k, dls++);
        download(from, r->dirs[r->n]);
        r->src[r->n] = (ck_rrs_source){r->dirs[r->n], old};
        r->n++;
    }
    static int runs; /* a directory per restore: a failed one's stays locked */
    char dir[400], err[300];
    snprintf(dir, sizeof(dir), "%s/new-%d-%d", tmpdir, i, runs++);
    r->ks = ck_rocks_open(dir, &small, nr, descs, 3, err, sizeof(err));
    assert_non_null(r->ks);
    ck_rrs_opts o = {.ingest = m == M_INGEST, .copy = m == M_COPY, .delete_files = delete_files,
                     .overlap = overlap};
    r->rc = ck_rocks_rescale(r->ks, r->src, r->n, MAXP, &o, &r->st, r->err, sizeof(r->err));
}

static void done(restore *r)
{
    ck_kstate_free(r->ks);
    for (int k = 0; k < r->n; k++)
        rm_rf(r->dirs[k]);
}

/* Keys of range r in source src's range. */
static uint64_t keys_in(const ck_rrs_source *src, ck_kgr r)
{
    ck_kgr x = ck_kgr_intersect(src->kgr, r);
    return ck_kgr_empty(x) ? 0 : heap_count_range(x.start, x.end);
}

/* Restores every new subtask of old_p -> new_p by mode m and checks it. */
static void rescale(int old_p, int new_p, mode m, int delete_files)
{
    for (int i = 0; i < new_p; i++) {
        restore r;
        run(&r, old_p, new_p, i, m, delete_files, 0.0);
        if (r.rc)
            fail_msg("%d -> %d, subtask %d: %s (%s)", old_p, new_p, i, ck_strerror(r.rc), r.err);
        ck_kgr nr = r.ks->kgr;
        uint64_t total = same_as_heap(r.ks);
        assert_int_equal(r.ks->ops->entries(r.ks), total);
        /* what was copied: every key of the range but the initial's, or all */
        int init = -1;
        ck_rrs_opts o = {.ingest = m == M_INGEST, .copy = m == M_COPY};
        ck_rrs_path want = ck_rrs_plan(r.src, r.n, nr, &o, &init);
        assert_int_equal(r.st.initial, init);
        uint64_t copied = 0;
        for (int k = 0; k < r.n; k++)
            if (k != init && want != CK_RRS_INGEST)
                copied += keys_in(&r.src[k], nr);
        assert_int_equal(r.st.path, want);
        assert_int_equal(r.st.keys_written, copied);
        assert_int_equal(r.st.keys_iterated, copied);
        assert_true(r.st.bytes_written >= copied * 16);
        assert_int_equal(r.st.history_kept, want == CK_RRS_REUSE);
        if (want == CK_RRS_COPY) {
            assert_int_equal(r.st.copied, r.n);
            assert_int_equal(r.st.files_linked + r.st.ranges_deleted + r.st.files_imported, 0);
        } else if (want == CK_RRS_INGEST) {
            assert_int_equal(r.st.imported, r.n); /* every old instance conforms */
            assert_int_equal(r.st.copied, 0);
            assert_true(r.st.files_imported >= (uint32_t)r.n);
            assert_int_equal(r.st.files_linked, 0);
            int lo = r.src[0].kgr.start, hi = r.src[r.n - 1].kgr.end;
            assert_int_equal(r.st.ranges_deleted, (lo < nr.start) + (hi > nr.end));
        } else {
            assert_int_equal(r.st.copied, r.n - 1);
            assert_true(r.st.files_linked > 0);
            const ck_rrs_source *in = &r.src[init];
            assert_int_equal(r.st.ranges_deleted,
                             (in->kgr.start < nr.start) + (in->kgr.end > nr.end));
            if (!delete_files)
                assert_int_equal(r.st.files_deleted, 0);
        }
        assert_int_equal(r.st.opened, r.n); /* each once, the initial one included */
        done(&r);
    }
}

static void test_out_1_2(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++)
        rescale(1, 2, (mode)m, 0);
    rescale(1, 2, M_CLIP, 1);
}

static void test_out_2_3(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++)
        rescale(2, 3, (mode)m, 0);
    rescale(2, 3, M_CLIP, 1);
    rescale(2, 3, M_INGEST, 1);
}

static void test_in_2_1(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++)
        rescale(2, 1, (mode)m, 0);
}

static void test_in_4_3(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++)
        rescale(4, 3, (mode)m, 0);
    rescale(4, 3, M_INGEST, 1);
    rescale(4, 3, M_CLIP, 1);
}

/* The same parallelism: the instance is opened as it was, its history kept. */
static void test_same_range_reuses(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_INGEST; m++) {
        restore r;
        run(&r, 2, 2, 1, (mode)m, 1, 0.0);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.st.path, CK_RRS_REUSE);
        assert_int_equal(r.st.history_kept, 1);
        assert_int_equal(r.st.initial, 0);
        assert_int_equal(r.st.ranges_deleted + r.st.keys_written + r.st.files_deleted, 0);
        same_as_heap(r.ks);
        done(&r);
    }
}

/*
 * Deleting whole files first: a scale-out from 1 to 4 leaves three
 * quarters of the initial instance outside, so some of its files lie
 * wholly outside and go (counted), and what is left is still exact.
 */
static void test_delete_files_in_range(void **state)
{
    (void)state;
    uint32_t deleted = 0;
    for (int i = 0; i < 4; i++) {
        restore r;
        run(&r, 1, 4, i, M_CLIP, 1, 0.0);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.st.path, CK_RRS_CLIP);
        same_as_heap(r.ks);
        deleted += r.st.files_deleted;
        assert_true(r.st.bytes_deleted >= r.st.files_deleted);
        done(&r);
    }
    assert_true(deleted > 0);
}

/* Flink's score: most key groups in range, then the larger fraction; a
 * source under the threshold is never preferred, and when every one is,
 * the first is taken (Flink 1.20). */
static void test_best_initial(void **state)
{
    (void)state;
    ck_rrs_source two[] = {{"a", {0, 99}}, {"b", {100, 127}}};
    /* 40 key groups to 28 */
    assert_int_equal(ck_rrs_best_initial(two, 2, ck_kgr_make(60, 127), 0.0), 0);
    assert_int_equal(ck_rrs_best_initial(two, 2, ck_kgr_make(60, 127), 0.5), 1); /* 0.4 is under */
    /* both under: the first */
    assert_int_equal(ck_rrs_best_initial(two, 2, ck_kgr_make(60, 110), 0.5), 0);
    assert_int_equal(ck_rrs_best_initial(two, 2, ck_kgr_make(60, 110), 0.39), 0);
    /* 11/28 = 0.393 */
    assert_int_equal(ck_rrs_best_initial(two, 2, ck_kgr_make(60, 110), 0.395), 0);
    ck_rrs_source eq[] = {{"a", {0, 31}}, {"b", {32, 95}}};
    /* 16 and 16: 0.5 > 0.25 */
    assert_int_equal(ck_rrs_best_initial(eq, 2, ck_kgr_make(16, 47), 0.0), 0);
    assert_int_equal(ck_rrs_best_initial(eq, 2, ck_kgr_make(16, 127), 0.0), 1); /* 16 to 64 */
    /* one: always it */
    assert_int_equal(ck_rrs_best_initial(two, 1, ck_kgr_make(100, 127), 1.0), 0);
    assert_int_equal(ck_rrs_best_initial(two, 0, ck_kgr_make(0, 127), 0.0), -1);
    /* 2 -> 3, subtask 1 [43, 85]: 21 key groups of the first, 22 of the second */
    ck_rrs_source half[] = {{"a", {0, 63}}, {"b", {64, 127}}};
    assert_int_equal(ck_rrs_best_initial(half, 2, ck_kgr_make(43, 85), 0.0), 1);
    assert_int_equal(ck_rrs_best_initial(half, 2, ck_kgr_make(43, 85), 0.34), 1); /* 0.344 passes */
    /* none: the first */
    assert_int_equal(ck_rrs_best_initial(half, 2, ck_kgr_make(43, 85), 0.345), 0);
    int init;
    ck_rrs_opts o = {0};
    assert_int_equal(ck_rrs_plan(half, 2, ck_kgr_make(43, 85), &o, &init), CK_RRS_CLIP);
    assert_int_equal(init, 1);
    o.ingest = 1;
    assert_int_equal(ck_rrs_plan(half, 2, ck_kgr_make(43, 85), &o, &init), CK_RRS_INGEST);
    assert_int_equal(init, -1);
    assert_int_equal(ck_rrs_plan(half, 1, ck_kgr_make(0, 31), &o, &init), CK_RRS_CLIP);
    assert_int_equal(ck_rrs_plan(half, 1, ck_kgr_make(0, 63), &o, &init), CK_RRS_REUSE);
    o.copy = 1;
    assert_int_equal(ck_rrs_plan(half, 1, ck_kgr_make(0, 63), &o, &init), CK_RRS_COPY);
    assert_int_equal(init, -1);
}

/* The threshold decides which instance is clipped, and the result is the
 * same: 2 -> 3's middle subtask starts from the second instance by
 * default, from the first when the threshold excludes both. */
static void test_overlap_threshold(void **state)
{
    (void)state;
    static const double th[] = {0.0, 0.34, 0.345, 1.0};
    static const int want[] = {1, 1, 0, 0};
    for (int k = 0; k < 4; k++) {
        restore r;
        run(&r, 2, 3, 1, M_CLIP, 0, th[k]);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.st.initial, want[k]);
        assert_int_equal(r.st.keys_written, keys_in(&r.src[1 - want[k]], ck_kgr_make(43, 85)));
        same_as_heap(r.ks);
        done(&r);
    }
}

/* A rescaled instance is a working backend: it takes writes, its native
 * snapshot restores into another instance (an imported one has its state
 * in a column family of its own), with the same entries. */
static void test_rescaled_instance_works(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++) {
        restore r;
        run(&r, 2, 3, 1, (mode)m, 0, 0.0);
        assert_int_equal(r.rc, 0);
        /* one more write in range, the same into a copy of the heap's view */
        ck_kstate *ks = r.ks;
        char key[32];
        uint32_t klen;
        ck_keyloc loc;
        int j = 0;
        for (;; j++) {
            key_of(j, key, &klen, &loc);
            if (loc.kg >= ks->kgr.start && loc.kg <= ks->kgr.end)
                break;
        }
        ck_kkey k = {.loc = loc, .key = key, .klen = klen};
        int created;
        int64_t *v = ck_ks_acquire(ks, 0, &k, 0, &created);
        int had = v != NULL;
        if (!v)
            v = ck_ks_acquire(ks, 0, &k, 1, &created);
        assert_non_null(v);
        int64_t old0 = v[0];
        v[0] = 424242;
        assert_int_equal(ck_ks_release(ks, 0, &k, v, 1), 0);
        uint64_t entries = ks->ops->entries(ks);
        ck_native_snap snap;
        assert_int_equal(ks->ops->native_take(ks, 7, &snap), 0);
        uint8_t *data[64];
        size_t lens[64];
        const char *names[64];
        assert_true(snap.n < 64);
        for (uint32_t f = 0; f < snap.n; f++) {
            assert_int_equal(ks->ops->native_read(ks, &snap, f, &data[f], &lens[f]), 0);
            names[f] = snap.files[f].name;
        }
        char dir[400], err[300];
        snprintf(dir, sizeof(dir), "%s/again", tmpdir);
        ck_kstate *again = ck_rocks_open(dir, &small, ks->kgr, descs, 3, err, sizeof(err));
        assert_non_null(again);
        assert_int_equal(again->ops->native_restore(again, snap.n, names, data, lens), 0);
        for (uint32_t f = 0; f < snap.n; f++)
            free(data[f]);
        ks->ops->native_release(ks, &snap);
        assert_int_equal(again->ops->entries(again), entries);
        v = ck_ks_acquire(again, 0, &k, 0, &created);
        assert_non_null(v);
        assert_int_equal(v[0], 424242);
        /* put the old value back: the rest is the heap's */
        if (had) {
            v[0] = old0;
            assert_int_equal(ck_ks_release(again, 0, &k, v, 1), 0);
        } else {
            assert_int_equal(ck_ks_release(again, 0, &k, v, 0), 0);
            assert_int_equal(ck_ks_remove(again, 0, &k), 0);
        }
        same_as_heap(again);
        ck_kstate_free(again);
        done(&r);
    }
}

/* The same restore twice makes the same files (names and sizes): what
 * the instance holds depends on its inputs alone, as a simulation needs. */
static void test_restore_is_deterministic(void **state)
{
    (void)state;
    for (int m = M_CLIP; m <= M_COPY; m++) {
        char got[2][4096];
        for (int k = 0; k < 2; k++) {
            restore r;
            run(&r, 4, 3, 1, (mode)m, 1, 0.0);
            assert_int_equal(r.rc, 0);
            ck_native_snap snap;
            assert_int_equal(r.ks->ops->native_take(r.ks, 1, &snap), 0);
            int n = 0;
            got[k][0] = 0;
            for (uint32_t f = 0; f < snap.n; f++)
                n += snprintf(got[k] + n, sizeof(got[k]) - (size_t)n, "%s:%llu ",
                              snap.files[f].name, (unsigned long long)snap.files[f].size);
            r.ks->ops->native_release(r.ks, &snap);
            done(&r);
        }
        assert_string_equal(got[0], got[1]);
    }
}

/* Damages the largest SST of dir: cut to half, or one byte flipped. */
static void damage(const char *dir, int cut)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char best[1000] = "";
    off_t size = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".sst"))
            continue;
        char p[1000];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat sb;
        assert_int_equal(stat(p, &sb), 0);
        if (sb.st_size > size) {
            size = sb.st_size;
            snprintf(best, sizeof(best), "%s", p);
        }
    }
    closedir(d);
    assert_true(size > 4096);
    /* a file of its own, not the store's (the download hard-linked it) */
    char tmp[1100], cmd[2300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", best);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && mv '%s' '%s'", best, tmp, tmp, best);
    assert_int_equal(system(cmd), 0);
    if (cut) {
        assert_int_equal(truncate(best, size / 2), 0);
    } else { /* one byte in the middle of a data block */
        int fd = open(best, O_RDWR);
        assert_true(fd >= 0);
        uint8_t b;
        assert_int_equal(pread(fd, &b, 1, size / 3), 1);
        b ^= 0x5a;
        assert_int_equal(pwrite(fd, &b, 1, size / 3), 1);
        close(fd);
    }
}

/* Builds the restore of 2 -> 1 by hand, damaging old instance 1 first. */
static void run_damaged(restore *r, mode m, int how)
{
    memset(r, 0, sizeof(*r));
    for (int k = 0; k < 2; k++) {
        char from[400];
        store_dir(2, k, from, sizeof(from));
        snprintf(r->dirs[k], sizeof(r->dirs[k]), "%s/dl-%d-%d", tmpdir, k, dls++);
        download(from, r->dirs[k]);
        r->src[k] = (ck_rrs_source){r->dirs[k], ck_kg_range(k, 2, MAXP)};
    }
    r->n = 2;
    if (how == 0) {
        damage(r->dirs[1], 1);
    } else if (how == 1) {
        damage(r->dirs[1], 0);
    } else if (how == 2) { /* CURRENT names no MANIFEST */
        char p[500];
        snprintf(p, sizeof(p), "%s/CURRENT", r->dirs[1]);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("MANIFEST-999999\n", f);
        fclose(f);
    } else { /* not downloaded at all */
        rm_rf(r->dirs[1]);
    }
    char dir[400], err[300];
    snprintf(dir, sizeof(dir), "%s/damaged-%d", tmpdir, dls++);
    r->ks = ck_rocks_open(dir, &small, ck_kgr_make(0, MAXP - 1), descs, 3, err, sizeof(err));
    assert_non_null(r->ks);
    ck_rrs_opts o = {.ingest = m == M_INGEST, .copy = m == M_COPY};
    r->rc = ck_rocks_rescale(r->ks, r->src, r->n, MAXP, &o, &r->st, r->err, sizeof(r->err));
}

/*
 * A damaged old instance fails the restore with an error naming it: a
 * truncated SST, a CURRENT naming no MANIFEST and a missing directory on
 * every path (the instance does not open); a flipped byte in a data
 * block where its keys are copied (clip copies the second instance, copy
 * both). Imported whole, its keys are not read: the damage shows when
 * they are, as in Flink. The failed instance is freed without harm.
 */
static void test_damaged_instance_fails(void **state)
{
    (void)state;
    for (int how = 0; how < 4; how++)
        for (int m = M_CLIP; m <= M_COPY; m++) {
            restore r;
            run_damaged(&r, (mode)m, how);
            if (how == 1 && m == M_INGEST) {
                /* imported whole, no key read: found where its keys are (Flink's too) */
                assert_int_equal(r.rc, 0);
                ck_kstate_view *v;
                assert_int_equal(r.ks->ops->view_take(r.ks, &v), 0);
                strs x = {0};
                int bad = 0;
                for (int kg = 64; kg < MAXP && !bad; kg++) {
                    bad = r.ks->ops->view_visit(v, kg, collect, &x);
                    free_strs(&x);
                }
                r.ks->ops->view_release(v);
                assert_int_equal(bad, CK_EIO);
                done(&r);
                continue;
            }
            if (r.rc == 0)
                fail_msg("damage %d, mode %d: the restore succeeded", how, m);
            assert_int_equal(r.rc, CK_ECORRUPT);
            char want[500];
            snprintf(want, sizeof(want), "old instance 1 (%s)", r.dirs[1]);
            if (!strstr(r.err, want))
                fail_msg("damage %d, mode %d: \"%s\" names no instance 1", how, m, r.err);
            done(&r);
        }
}

/* Sources whose ranges overlap, a range out of bounds, none: refused
 * before anything is opened. */
static void test_bad_arguments(void **state)
{
    (void)state;
    char dir[400], err[300];
    snprintf(dir, sizeof(dir), "%s/bad", tmpdir);
    ck_kstate *ks = ck_rocks_open(dir, &small, ck_kgr_make(0, 63), descs, 3, err, sizeof(err));
    assert_non_null(ks);
    char a[400], b[400];
    store_dir(2, 0, a, sizeof(a));
    store_dir(2, 1, b, sizeof(b));
    ck_rrs_source twice[] = {{a, {0, 63}}, {a, {0, 63}}};
    ck_rrs_source over[] = {{a, {0, 64}}, {b, {64, 127}}};
    ck_rrs_source out[] = {{a, {0, 128}}};
    ck_rrs_opts o = {0};
    ck_rrs_stats st;
    assert_int_equal(ck_rocks_rescale(ks, twice, 2, MAXP, &o, &st, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "overlap"));
    assert_int_equal(ck_rocks_rescale(ks, over, 2, MAXP, &o, &st, err, sizeof(err)), CK_EINVAL);
    assert_int_equal(ck_rocks_rescale(ks, out, 1, MAXP, &o, &st, err, sizeof(err)), CK_EINVAL);
    assert_int_equal(ck_rocks_rescale(ks, out, 0, MAXP, &o, &st, err, sizeof(err)), CK_EINVAL);
    ck_kstate_free(ks);
    /* the store is as it was */
    restore r;
    run(&r, 2, 1, 0, M_CLIP, 0, 0.0);
    assert_int_equal(r.rc, 0);
    same_as_heap(r.ks);
    done(&r);
}

/*
 * Ingest with exports deeper than the instance's levels allow to merge
 * (here: 2 levels below 0 for the merge): they are copied instead, and
 * with none left to import the restore is the clip path's.
 */
static void test_ingest_too_deep_copies(void **state)
{
    (void)state;
    char d0[400], d1[400], dir[400], err[400];
    ck_kgr nr = ck_kg_range(1, 3, MAXP);
    for (int k = 0; k < 2; k++) {
        char from[400];
        store_dir(2, k, from, sizeof(from));
        snprintf(k ? d1 : d0, 400, "%s/dl-%d", tmpdir, k);
        download(from, k ? d1 : d0);
    }
    snprintf(dir, sizeof(dir), "%s/deep", tmpdir);
    rocksdb_options_t *opts = rocksdb_options_create();
    rocksdb_options_set_disable_auto_compactions(opts, 1);
    rocksdb_options_set_num_levels(opts, 7);
    rocksdb_options_set_info_log_level(opts, 4);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(wo, 1);
    ck_rrs_target t = {.dir = dir, .opts = opts, .wo = wo, .kgr = nr,
                       .max_parallelism = MAXP, .nlevels = 2, .write_buffer = 64 << 10};
    ck_rrs_source src[] = {{d0, {0, 63}}, {d1, {64, 127}}};
    ck_rrs_opts o = {.ingest = 1};
    ck_rocks_dbh h;
    ck_rrs_stats st;
    int rc = ck_rrs_restore(&t, src, 2, &o, &h, &st, err, sizeof(err));
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(st.path, CK_RRS_CLIP);
    assert_int_equal(st.imported, 0);
    assert_int_equal(st.initial, 1);
    assert_int_equal(st.keys_written, keys_in(&src[0], nr));
    /* the instance's keys, counted by key group */
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(h.db, ro, h.cf[h.data]);
    uint64_t per[MAXP] = {0};
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl;
        const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
        per[k[0] << 8 | k[1]]++;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    for (int kg = 0; kg < MAXP; kg++)
        assert_int_equal(per[kg], ck_kgr_contains(nr, kg) ? heap_count(kg) : 0);
    ck_rocks_db_close(&h);
    char *x = NULL;
    rocksdb_destroy_db(opts, dir, &x);
    rocksdb_free(x);
    rm_rf(dir);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_options_destroy(opts);
    rm_rf(d0);
    rm_rf(d1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_initial),
        cmocka_unit_test(test_out_1_2),
        cmocka_unit_test(test_out_2_3),
        cmocka_unit_test(test_in_2_1),
        cmocka_unit_test(test_in_4_3),
        cmocka_unit_test(test_same_range_reuses),
        cmocka_unit_test(test_delete_files_in_range),
        cmocka_unit_test(test_overlap_threshold),
        cmocka_unit_test(test_rescaled_instance_works),
        cmocka_unit_test(test_restore_is_deterministic),
        cmocka_unit_test(test_damaged_instance_fails),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_ingest_too_deep_copies),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
