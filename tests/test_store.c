/*
 * test_store.c - the durable object store behind the platform interface.
 *
 * Under SimGrid: a node on tm0 puts a 10 MB object, reads it back, lists
 * and deletes it. The bytes must round-trip exactly, be a real file under
 * the store directory, and the put must take the time the platform
 * charges: the route's latency and bottleneck bandwidth (CM02: latency +
 * size / bandwidth), then the store's disk, then the acknowledgement.
 *
 * The directory store used by the socket backend: atomic puts, refused
 * keys, sorted listings with sizes, deletes; batches of puts as one group
 * commit (each its own outcome, a key twice in a batch, the later wins);
 * the pool that serves them on a thread (results in the order asked, a
 * get after a put of its key sees it, a failed put says why, what is
 * queued at the end is freed); puts of a local file, read as they are
 * written, with the size and checksum of what was read.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc32c.h"
#include "error.h"
#include "node.h"
#include "scenario.h"
#include "simgrid.h"
#include "simplatform.h"
#include "storefs.h"
#include "storepool.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#define OBJ (10u * 1000 * 1000)

typedef struct prober {
    ck_platform *p;
    int step;
    ck_time put_start, put_done, get_done;
    int put_status, get_status, get2_status;
    uint8_t *want;
    int same;
    size_t listed;
    uint64_t listed_size;
    int done;
} prober;

static int pr_msg(void *self, uint8_t *msg, size_t len)
{
    (void)self, (void)len;
    free(msg);
    return 0;
}

static int pr_store(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    prober *pr = self;
    ck_time now = ck_now(pr->p);
    if (token == 1) {
        pr->put_done = now;
        pr->put_status = status;
        assert_int_equal(pr->p->ops->store_get(pr->p, "job/chk-1/_metadata", 2), 0);
    } else if (token == 2) {
        pr->get_done = now;
        pr->get_status = status;
        pr->same = status == 0 && len == OBJ && memcmp(data, pr->want, OBJ) == 0;
        ck_store_entry *e;
        size_t n;
        if (pr->p->ops->store_list(pr->p, "job/", &e, &n) == 0) {
            pr->listed = n;
            pr->listed_size = n ? e[0].size : 0;
            ck_store_entries_free(e, n);
        }
        assert_int_equal(pr->p->ops->store_delete(pr->p, "job/chk-1/_metadata"), 0);
        assert_int_equal(pr->p->ops->store_get(pr->p, "job/chk-1/_metadata", 3), 0);
    } else {
        pr->get2_status = status;
        pr->done = 1;
    }
    free(data);
    return 0;
}

static ck_time pr_deadline(void *self)
{
    (void)self;
    return CK_TIME_NEVER;
}

static int pr_on_deadline(void *self)
{
    (void)self;
    return 0;
}

static int pr_work(void *self)
{
    prober *pr = self;
    if (pr->step++ == 0) {
        uint8_t *data = malloc(OBJ);
        memcpy(data, pr->want, OBJ);
        pr->put_start = ck_now(pr->p);
        /* Bad keys are refused at once. */
        assert_int_equal(pr->p->ops->store_put(pr->p, "../escape", malloc(1), 1, 9), CK_EINVAL);
        assert_int_equal(pr->p->ops->store_put(pr->p, "job/chk-1/_metadata", data, OBJ, 1), 0);
    }
    return 0;
}

static int pr_finished(void *self)
{
    return ((prober *)self)->done;
}

static int pr_lost(void *self, int host)
{
    (void)self, (void)host;
    return 0;
}

static const ck_node_ops prober_ops = {pr_msg, pr_store, pr_lost, pr_deadline, pr_on_deadline,
                                       pr_work, pr_finished, NULL};

static void test_sim_store(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-store-XXXXXX";
    assert_non_null(mkdtemp(dir));
    static ck_scenario sc;
    sc.cluster = (ck_cluster_spec){.cores = 1, .speed = 1e9, .link_bw = 1e9, .link_lat = 100000,
                                   .store_bw = 100e6, .store_lat = 1000000,
                                   .disk_read_bw = 200e6, .disk_write_bw = 50e6};
    char plat[300], store[300];
    snprintf(plat, sizeof(plat), "%s/platform.xml", dir);
    snprintf(store, sizeof(store), "%s/store", dir);
    FILE *f = fopen(plat, "w");
    assert_int_equal(ck_simplat_write(f, &sc.cluster, sc.faults, sc.nfaults, 1), 0);
    fclose(f);
    char err[300];
    ck_sim *s = ck_sim_new(plat, "CM02", store, 0, err, sizeof(err));
    assert_non_null(s);
    static prober pr;
    pr.want = malloc(OBJ);
    for (size_t i = 0; i < OBJ; i++)
        pr.want[i] = (uint8_t)(i * 2654435761u >> 13);
    pr.p = ck_sim_endpoint(s, 0, "tm0", 0);
    assert_non_null(pr.p);
    ck_node node = {&prober_ops, &pr};
    assert_int_equal(ck_sim_attach(s, 0, node, "prober", 1), 0);
    ck_sim_run_all(s, 0);
    assert_true(pr.done);
    assert_int_equal(pr.put_status, 0);
    assert_int_equal(pr.get_status, 0);
    assert_true(pr.same);
    assert_int_equal(pr.listed, 1);
    assert_int_equal(pr.listed_size, OBJ);
    assert_int_equal(pr.get2_status, CK_ENOTFOUND);
    /* Upload: 1.1 ms of latency + (10 MB + 64 B) at the 100 MB/s bottleneck;
     * disk: 10 MB at 50 MB/s; acknowledgement: 1.1 ms + 64 B. */
    double put_s = (double)(pr.put_done - pr.put_start) / 1e9;
    double want = 0.0011 + (OBJ + 64) / 100e6 + OBJ / 50e6 + 0.0011 + 64 / 100e6;
    print_message("put took %.6f s (model %.6f s)\n", put_s, want);
    assert_true(put_s > want * 0.99 && put_s < want * 1.01);
    /* Download: request, disk read at 200 MB/s, the bytes back at 100 MB/s. */
    double get_s = (double)(pr.get_done - pr.put_done) / 1e9;
    double want_get = 0.0011 + 64 / 100e6 + OBJ / 200e6 + 0.0011 + (OBJ + 64) / 100e6;
    print_message("get took %.6f s (model %.6f s)\n", get_s, want_get);
    assert_true(get_s > want_get * 0.99 && get_s < want_get * 1.01);
    ck_sim_del(s);
    free(pr.want);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_dir_store(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *bad[] = {"", "/abs", "a/../b", "a//b", "./a", "a/", "x.part", "..", NULL};
    for (int i = 0; bad[i]; i++) {
        assert_false(ck_storefs_key_ok(bad[i]));
        assert_int_equal(ck_storefs_put(dir, bad[i], (const uint8_t *)"x", 1, 1), CK_EINVAL);
    }
    assert_int_equal(ck_storefs_put(dir, "job/chk-2/state", (const uint8_t *)"bbbb", 4, 1), 0);
    assert_int_equal(ck_storefs_put(dir, "job/chk-1/_metadata", (const uint8_t *)"aa", 2, 1), 0);
    assert_int_equal(ck_storefs_put(dir, "other", (const uint8_t *)"c", 1, 1), 0);
    /* Overwrite is atomic: no temporary file stays behind. */
    assert_int_equal(ck_storefs_put(dir, "job/chk-1/_metadata", (const uint8_t *)"AAA", 3, 1), 0);
    char path[300];
    snprintf(path, sizeof(path), "%s/job/chk-1/_metadata.%ld.part", dir, (long)getpid());
    assert_int_not_equal(access(path, F_OK), 0);
    ck_store_entry *e;
    size_t n;
    assert_int_equal(ck_storefs_list(dir, "job/", &e, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].key, "job/chk-1/_metadata");
    assert_int_equal(e[0].size, 3);
    assert_string_equal(e[1].key, "job/chk-2/state");
    assert_int_equal(e[1].size, 4);
    ck_store_entries_free(e, n);
    uint8_t *data;
    size_t len;
    assert_int_equal(ck_storefs_get(dir, "job/chk-1/_metadata", &data, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "AAA", 3);
    free(data);
    assert_int_equal(ck_storefs_delete(dir, "job/chk-1/_metadata"), 0);
    assert_int_equal(ck_storefs_delete(dir, "job/chk-1/_metadata"), CK_ENOTFOUND);
    assert_int_equal(ck_storefs_get(dir, "job/chk-1/_metadata", &data, &len), CK_ENOTFOUND);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_put_many(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char blocker[300];
    snprintf(blocker, sizeof(blocker), "%s/file", dir);
    assert_int_equal(ck_storefs_put(dir, "file", (const uint8_t *)"f", 1, 1), 0);
    ck_storefs_item it[5] = {
        {.key = "a/one", .data = (const uint8_t *)"1", .len = 1},
        {.key = "a/../x", .data = (const uint8_t *)"2", .len = 1},
        {.key = "file/under", .data = (const uint8_t *)"3", .len = 1}, /* a file is in the way */
        {.key = "a/one", .data = (const uint8_t *)"44", .len = 2},    /* again: the later wins */
        {.key = "b/two", .data = (const uint8_t *)"5", .len = 1},
    };
    ck_storefs_put_many(dir, it, 5, 1);
    assert_int_equal(it[0].status, 0);
    assert_int_equal(it[1].status, CK_EINVAL);
    assert_int_equal(it[2].status, CK_EIO);
    assert_int_equal(it[2].err, ENOTDIR);
    assert_int_equal(it[3].status, 0);
    assert_int_equal(it[4].status, 0);
    uint8_t *data;
    size_t len;
    assert_int_equal(ck_storefs_get(dir, "a/one", &data, &len), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(data, "44", 2);
    free(data);
    ck_store_entry *e;
    size_t n;
    assert_int_equal(ck_storefs_list(dir, "", &e, &n), 0);
    assert_int_equal(n, 3); /* a/one, b/two, file: no temporary file */
    ck_store_entries_free(e, n);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The number of files in dir/.recycle (-1: no such directory). */
static int recycled_count(const char *dir)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/.recycle", dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Puts through a scratch buffer (direct I/O where the file system has
 * it, buffered where not, e.g. on tmpfs): what is read back is exactly
 * what was put, whole blocks or not, over several copies through the
 * buffer, into a new file or over a recycled longer one; a scratch buffer
 * that is not aligned is not used, and the put still is right. */
static void direct_case(const char *base)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/chandy-fs-XXXXXX", base);
    if (!mkdtemp(dir))
        return; /* no such file system here */
    enum { SCR = 3 * CK_STOREFS_ALIGN };
    uint8_t *scratch;
    assert_int_equal(
        posix_memalign((void **)&scratch, CK_STOREFS_ALIGN, SCR + CK_STOREFS_ALIGN), 0);
    size_t sizes[] = {CK_STOREFS_DIRECT_MIN, CK_STOREFS_DIRECT_MIN + 1, (3u << 20) + 4095,
                      CK_STOREFS_DIRECT_MIN + 7, CK_STOREFS_DIRECT_MIN + 9};
    size_t most = (3u << 20) + 4095;
    uint8_t *a = malloc(most + 8), *data; /* put k starts at a + k */
    for (size_t i = 0; i < most + 8; i++)
        a[i] = (uint8_t)(i * 29 + 3);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        char key[40];
        snprintf(key, sizeof(key), "job/chk-%zu/state", k);
        if (k == 3) /* the 3 MiB one is set aside: this put overwrites it in place */
            assert_int_equal(ck_storefs_delete(dir, "job/chk-2/state"), 0);
        ck_storefs_item it = {.key = key, .data = a + k, .len = sizes[k], .scratch = scratch,
                              .scratch_len = SCR};
        if (k == 4)
            it.scratch = scratch + 1; /* not aligned: not used */
        ck_storefs_put_many(dir, &it, 1, 1);
        assert_int_equal(it.status, 0);
        size_t len;
        assert_int_equal(ck_storefs_get(dir, key, &data, &len), 0);
        assert_int_equal(len, sizes[k]);
        assert_memory_equal(data, a + k, sizes[k]);
        free(data);
    }
    if (!strcmp(base, "/tmp"))
        assert_int_equal(recycled_count(dir), 0); /* the put took it */
    free(a);
    free(scratch);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_direct(void **state)
{
    (void)state;
    direct_case("/tmp");
    direct_case("/dev/shm");
}

/* A large object deleted is set aside, and the next large put overwrites
 * it in place: the object read back is exactly what was put, longer or
 * shorter than what the file held; no listing shows what waits; at most
 * eight wait; clearing deletes them. */
static void test_recycle(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    size_t big = 3u << 20, small = (1u << 20) + 5, larger = 5u << 20;
    uint8_t *a = malloc(larger), *data;
    size_t len;
    for (size_t i = 0; i < larger; i++)
        a[i] = (uint8_t)(i * 31 + 7);
    assert_false(ck_storefs_key_ok(".recycle/1"));
    assert_false(ck_storefs_key_ok(".recycle"));
    assert_true(ck_storefs_key_ok(".recycled"));
    assert_int_equal(ck_storefs_put(dir, "job/chk-1/state", a, big, 1), 0);
    assert_int_equal(ck_storefs_put(dir, "job/chk-1/_metadata", a, 10, 1), 0);
    assert_int_equal(recycled_count(dir), -1);
    assert_int_equal(ck_storefs_delete(dir, "job/chk-1/state"), 0);
    assert_int_equal(ck_storefs_delete(dir, "job/chk-1/_metadata"), 0); /* small: unlinked */
    assert_int_equal(recycled_count(dir), 1);
    ck_store_entry *e;
    size_t n;
    assert_int_equal(ck_storefs_list(dir, "", &e, &n), 0);
    assert_int_equal(n, 0); /* and chk-1's directory went */
    ck_store_entries_free(e, n);
    assert_int_equal(ck_storefs_get(dir, "job/chk-1/state", &data, &len), CK_ENOTFOUND);
    /* shorter than the file it takes: cut to its length */
    assert_int_equal(ck_storefs_put(dir, "job/chk-2/state", a + 1, small, 1), 0);
    assert_int_equal(recycled_count(dir), 0);
    assert_int_equal(ck_storefs_get(dir, "job/chk-2/state", &data, &len), 0);
    assert_int_equal(len, small);
    assert_memory_equal(data, a + 1, small);
    free(data);
    /* longer */
    assert_int_equal(ck_storefs_delete(dir, "job/chk-2/state"), 0);
    assert_int_equal(ck_storefs_put(dir, "job/chk-3/state", a, larger, 1), 0);
    assert_int_equal(recycled_count(dir), 0);
    assert_int_equal(ck_storefs_get(dir, "job/chk-3/state", &data, &len), 0);
    assert_int_equal(len, larger);
    assert_memory_equal(data, a, larger);
    free(data);
    /* a small put never takes one */
    assert_int_equal(ck_storefs_delete(dir, "job/chk-3/state"), 0);
    assert_int_equal(ck_storefs_put(dir, "job/m", a, 100, 1), 0);
    assert_int_equal(recycled_count(dir), 1);
    /* the bound */
    char key[64];
    for (int i = 0; i < 12; i++) {
        snprintf(key, sizeof(key), "job/s%d", i);
        assert_int_equal(ck_storefs_put(dir, key, a, (1u << 20), 1), 0);
    }
    assert_int_equal(recycled_count(dir), 0); /* the first put took it */
    for (int i = 0; i < 12; i++) {
        snprintf(key, sizeof(key), "job/s%d", i);
        assert_int_equal(ck_storefs_delete(dir, key), 0);
    }
    assert_int_equal(recycled_count(dir), 8);
    assert_int_equal(ck_storefs_list(dir, "", &e, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].key, "job/m");
    ck_store_entries_free(e, n);
    assert_int_equal(ck_storefs_recycle_clear(dir), 0);
    assert_int_equal(recycled_count(dir), -1);
    free(a);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Reaps until `want` results came (waiting on the pool's descriptor). */
static size_t reap_all(ck_storepool *p, ck_storepool_done *out, size_t want)
{
    size_t got = 0;
    while (got < want) {
        struct pollfd pfd = {.fd = ck_storepool_fd(p), .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, 10000), 1);
        got += ck_storepool_reap(p, out + got, want - got);
    }
    return got;
}

/* One pool of nthreads workers through its whole contract. */
static void pool_case(const char *dir, int nthreads)
{
    ck_storepool *p = ck_storepool_new(dir, nthreads, nthreads > 1);
    assert_non_null(p);
    enum { N = 40, KEYS = 7 };
    int ctx;
    for (int i = 0; i < N; i++) {
        char key[40];
        snprintf(key, sizeof(key), "job/chk-%d/state", i % KEYS);
        uint8_t *d = malloc(100);
        memset(d, i, 100);
        assert_int_equal(ck_storepool_put(p, key, d, (size_t)(i + 1), &ctx, (uint64_t)i, 0), 0);
        if (i % 10 == 9) /* a get among the puts sees the last put of its key */
            assert_int_equal(ck_storepool_get(p, key, &ctx, 1000 + (uint64_t)i), 0);
    }
    assert_int_equal(ck_storepool_get(p, "job/none", &ctx, 77), 0);
    assert_int_equal(ck_storepool_put(p, "../up", malloc(1), 1, &ctx, 78, 0), CK_EINVAL);
    ck_storepool_done d[N + 5];
    size_t total = N + N / 10 + 1;
    assert_int_equal(reap_all(p, d, total), total);
    assert_int_equal(ck_storepool_pending(p), 0);
    /* Every request served once, handed back in the order asked (request
     * i is put i, or the get after put i, which comes after it). */
    int seen[N] = {0}, gets = 0, missing = 0;
    int last[KEYS];
    for (int k = 0; k < KEYS; k++)
        last[k] = -1;
    for (size_t k = 0; k < total; k++) {
        assert_ptr_equal(d[k].ctx, &ctx);
        if (d[k].token == 77) {
            assert_true(d[k].get);
            assert_int_equal(d[k].status, CK_ENOTFOUND);
            assert_null(d[k].data);
            missing++;
            continue;
        }
        int i = (int)(d[k].get ? d[k].token - 1000 : d[k].token);
        assert_true(i >= 0 && i < N);
        assert_int_equal(k, (size_t)i + (size_t)(i / 10) + d[k].get); /* in the order asked */
        if (d[k].get)
            assert_int_equal(last[i % KEYS], i); /* after its put, before the next */
        else
            assert_true(i > last[i % KEYS]);
        last[i % KEYS] = i;
        assert_int_equal(d[k].status, 0);
        assert_int_equal(d[k].len, (size_t)(i + 1));
        if (d[k].get) {
            assert_int_equal(i % 10, 9);
            assert_int_equal(d[k].data[0], i); /* the last put before it */
            free(d[k].data);
            gets++;
        } else {
            assert_int_equal(seen[i]++, 0);
        }
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(gets, N / 10);
    assert_int_equal(missing, 1);
    /* A large put (through a worker's scratch buffer, with direct I/O, in
     * a pool that has them) reads back whole. */
    size_t big = (3u << 20) + 3;
    uint8_t *obj = malloc(big);
    for (size_t i = 0; i < big; i++)
        obj[i] = (uint8_t)(i * 7 + 1);
    uint8_t *copy = malloc(big);
    memcpy(copy, obj, big);
    assert_int_equal(ck_storepool_put(p, "job/big", obj, big, &ctx, 3, 0), 0);
    assert_int_equal(ck_storepool_get(p, "job/big", &ctx, 4), 0);
    assert_int_equal(reap_all(p, d, 2), 2);
    assert_int_equal(d[0].status, 0);
    assert_int_equal(d[1].status, 0);
    assert_int_equal(d[1].len, big);
    assert_memory_equal(d[1].data, copy, big);
    free(d[1].data);
    free(copy);
    /* A put that cannot be written says why. Ready (the flag a task reads
     * between records) is set exactly while its result waits. */
    assert_int_equal(ck_storepool_ready(p), 0);
    assert_int_equal(ck_storepool_put(p, "job/chk-1/state/x", malloc(4), 4, &ctx, 5, 0), 0);
    struct pollfd pfd = {.fd = ck_storepool_fd(p), .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 10000), 1);
    assert_int_equal(ck_storepool_ready(p), 1);
    assert_int_equal(reap_all(p, d, 1), 1);
    assert_int_equal(ck_storepool_ready(p), 0);
    assert_int_equal(d[0].status, CK_EIO);
    assert_int_equal(d[0].err, ENOTDIR);
    /* What waits at the end is dropped and freed (the sanitizers check). */
    for (int i = 0; i < 20; i++)
        assert_int_equal(ck_storepool_put(p, "job/late", calloc(1, 1 << 16), 1 << 16, &ctx, 9, 0), 0);
    assert_int_equal(ck_storepool_get(p, "job/late", &ctx, 10), 0);
    ck_storepool_free(p);
}

static void test_pool(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    errno = 0;
    assert_null(ck_storepool_new(dir, 0, 1));
    assert_int_equal(errno, EINVAL);
    assert_null(ck_storepool_new(dir, CK_STOREPOOL_THREADS + 1, 1));
    pool_case(dir, 1);
    pool_case(dir, CK_STOREPOOL_THREADS);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Each requester's results come in the order it asked, and never wait
 * for another's: a put held in open() on a FIFO (its writer not there yet)
 * holds back the later put of the same requester, not that of another,
 * asked after both. */
static void test_pool_requesters(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    ck_storepool *p = ck_storepool_new(dir, CK_STOREPOOL_THREADS, 0);
    assert_non_null(p);
    int a, b;
    const char *paths[] = {fifo};
    /* said to be large, so that no small put joins it in a group */
    assert_int_equal(ck_storepool_put_files(p, "r/held", paths, 1, 2 * CK_STOREPOOL_GROUP_BYTES,
                                            &a, 1, 0),
                     0);
    assert_int_equal(ck_storepool_put(p, "r/a-next", calloc(1, 8), 8, &a, 2, 0), 0);
    assert_int_equal(ck_storepool_put(p, "r/b", calloc(1, 8), 8, &b, 3, 0), 0);
    ck_storepool_done d[3];
    assert_int_equal(reap_all(p, d, 1), 1);
    assert_ptr_equal(d[0].ctx, &b);
    assert_int_equal(d[0].token, 3);
    assert_int_equal(d[0].status, 0);
    /* a's second put lands (at most 10 s; then 50 ms for its worker to
     * say so), and its result still waits for a's first */
    char path[100];
    struct stat st;
    snprintf(path, sizeof(path), "%s/r/a-next", dir);
    for (int i = 0; i < 1000 && stat(path, &st); i++)
        usleep(10000);
    assert_int_equal(stat(path, &st), 0);
    usleep(50000);
    assert_int_equal(ck_storepool_reap(p, d, 3), 0);
    assert_int_equal(ck_storepool_ready(p), 0);
    int fd = open(fifo, O_WRONLY); /* the held put reads an empty file */
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(reap_all(p, d, 2), 2);
    assert_int_equal(d[0].token, 1);
    assert_int_equal(d[0].status, 0);
    assert_int_equal(d[1].token, 2);
    assert_int_equal(d[1].status, 0);
    free(d[0].data);
    ck_storepool_free(p);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A delete of a directory's last object removes the directory
 * (ck_storefs_delete), and another process may do that at any moment, as
 * the job manager's process discards a failed checkpoint's files while a
 * task manager's still puts one there: a put whose directory goes between
 * its creation and the put's own file makes it again, and lands. One
 * thread puts objects into one directory while another deletes them. */
typedef struct race_arg {
    const char *root;
    volatile int stop;
} race_arg;

static void *race_deleter(void *arg)
{
    race_arg *a = arg;
    while (!a->stop)
        (void)ck_storefs_delete(a->root, "r/chk-1/x");
    return NULL;
}

static void test_put_races_delete(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    race_arg a = {.root = dir};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, race_deleter, &a), 0);
    int failed = 0;
    uint8_t b[64] = {1};
    /* then durable, where the directory may also go between the rename
     * and its sync */
    for (int i = 0; i < 20300; i++) {
        int rc = ck_storefs_put(dir, "r/chk-1/x", b, sizeof(b), i >= 20000);
        if (rc && !failed++)
            fprintf(stderr, "put %d: %s: %s\n", i, ck_strerror(rc), strerror(errno));
    }
    a.stop = 1;
    pthread_join(th, NULL);
    assert_int_equal(failed, 0);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Small puts queued together are committed as one group by the worker
 * that takes the first (one sync of the file system for all), except a
 * second put of a key the group holds, which follows it; a large put is
 * committed alone. One worker, held by a large put while the small ones
 * are queued behind it (32 MiB written and synced take milliseconds;
 * queueing takes microseconds). */
static void test_pool_groups(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    ck_storepool *p = ck_storepool_new(dir, 1, 1);
    assert_non_null(p);
    int ctx;
    size_t big = (size_t)32 << 20;
    assert_true(big > CK_STOREPOOL_GROUP_BYTES);
    assert_int_equal(ck_storepool_put(p, "g/big", calloc(1, big), big, &ctx, 0, 0), 0);
    const char *keys[] = {"g/chk-1/a", "g/chk-1/b", "g/shared/c", "g/chk-1/d",
                          "g/chk-1/a", "g/shared/e"};
    enum { NK = sizeof(keys) / sizeof(keys[0]) };
    for (int i = 0; i < NK; i++) {
        uint8_t *d = malloc(100);
        memset(d, 'A' + i, 100);
        assert_int_equal(ck_storepool_put(p, keys[i], d, 100, &ctx, (uint64_t)i + 1, 0), 0);
    }
    ck_storepool_done d[NK + 2];
    assert_int_equal(reap_all(p, d, NK + 1), NK + 1);
    for (int i = 0; i <= NK; i++) {
        assert_int_equal(d[i].token, (uint64_t)i); /* in the order asked */
        assert_int_equal(d[i].status, 0);
    }
    /* the large one; a, b, c, d and e; the second a */
    assert_int_equal(ck_storepool_commits(p), 3);
    assert_int_equal(ck_storepool_get(p, "g/chk-1/a", &ctx, 9), 0);
    assert_int_equal(ck_storepool_get(p, "g/shared/e", &ctx, 10), 0);
    assert_int_equal(reap_all(p, d, 2), 2);
    assert_int_equal(d[0].len, 100);
    assert_int_equal(d[0].data[0], 'A' + 4); /* the later put of a won */
    assert_int_equal(d[1].data[99], 'A' + 5);
    free(d[0].data);
    free(d[1].data);
    assert_int_equal(ck_storepool_commits(p), 3); /* gets commit nothing */
    ck_storepool_free(p);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Writes n bytes (byte i: i * 13 + seed) to path; returns their CRC-32C. */
static uint32_t make_file(const char *path, size_t n, int seed)
{
    uint8_t *b = malloc(n ? n : 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 13 + (size_t)seed);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    uint32_t crc = ck_crc32c(0, b, n);
    free(b);
    return crc;
}

/* The object under key holds exactly the bytes of the file at path. */
static void assert_same(const char *dir, const char *key, const char *path)
{
    uint8_t *data, *want;
    size_t len, wlen;
    assert_int_equal(ck_storefs_get(dir, key, &data, &len), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    wlen = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    want = malloc(wlen ? wlen : 1);
    assert_int_equal(fread(want, 1, wlen, f), wlen);
    fclose(f);
    assert_int_equal(len, wlen);
    assert_memory_equal(data, want, len);
    free(data);
    free(want);
}

/* A put of a local file (ck_storefs_item.src) in each of its ways: empty,
 * small, large through an aligned scratch buffer (direct I/O where the
 * file system has it, several copies through it), large without one
 * (through a bounce buffer), over a recycled file, and in a group with a
 * put of bytes; and of several files back to back (a merged object).
 * Each reads back as the files, its len is their size and each file's
 * crc its CRC-32C. A file that is not there fails that put alone
 * (CK_ENOTFOUND: the store itself is fine), and leaves no temporary file. */
static void put_file_case(const char *base)
{
    char dir[300], src[400];
    snprintf(dir, sizeof(dir), "%s/chandy-fs-XXXXXX", base);
    if (!mkdtemp(dir))
        return;
    enum { SCR = 3 * CK_STOREFS_ALIGN };
    uint8_t *scratch;
    assert_int_equal(posix_memalign((void **)&scratch, CK_STOREFS_ALIGN, SCR), 0);
    size_t sizes[] = {0, 100, CK_STOREFS_DIRECT_MIN + 5, (3u << 20) + 4095, (2u << 20) + 1};
    enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
    char paths[NS][400];
    uint32_t crcs[NS];
    for (size_t k = 0; k < NS; k++) {
        snprintf(paths[k], sizeof(paths[k]), "%s/local-%zu.sst", dir, k);
        crcs[k] = make_file(paths[k], sizes[k], (int)k);
        char key[40];
        snprintf(key, sizeof(key), "job/shared/f-%zu", k);
        if (k == 4) /* the 3 MiB one is set aside: this put overwrites it in place */
            assert_int_equal(ck_storefs_delete(dir, "job/shared/f-3"), 0);
        ck_storefs_src one = {.path = paths[k], .len = 77, .crc = 5};
        ck_storefs_item it = {.key = key, .src = &one, .nsrc = 1, .len = 77,
                              .scratch = k == 3 ? NULL : scratch, .scratch_len = SCR};
        ck_storefs_put_many(dir, &it, 1, 1);
        assert_int_equal(it.status, 0);
        assert_int_equal(it.len, sizes[k]);
        assert_int_equal(one.len, sizes[k]);
        assert_int_equal(one.crc, crcs[k]);
        assert_same(dir, key, paths[k]);
    }
    assert_int_equal(recycled_count(dir), 0); /* the put took it */
    /* several back to back (an empty one among them), through the scratch
     * buffer and without one: the object is their concatenation */
    snprintf(src, sizeof(src), "%s/all.bin", dir);
    FILE *cat = fopen(src, "wb");
    assert_non_null(cat);
    for (size_t k = 0; k < NS; k++) {
        uint8_t *d;
        size_t len;
        char key[40];
        snprintf(key, sizeof(key), "job/shared/f-%zu", k == 3 ? (size_t)4 : k);
        if (k == 3)
            continue; /* f-3 is gone: f-4 overwrote it */
        assert_int_equal(ck_storefs_get(dir, key, &d, &len), 0);
        assert_int_equal(fwrite(d, 1, len, cat), len);
        free(d);
    }
    fclose(cat);
    for (int with = 0; with < 2; with++) {
        ck_storefs_src many[4] = {{.path = paths[0]}, {.path = paths[1]}, {.path = paths[2]},
                                  {.path = paths[4]}};
        ck_storefs_item it = {.key = "job/shared/m0", .src = many, .nsrc = 4,
                              .scratch = with ? scratch : NULL, .scratch_len = SCR};
        ck_storefs_put_many(dir, &it, 1, 1);
        assert_int_equal(it.status, 0);
        assert_int_equal(it.len, sizes[0] + sizes[1] + sizes[2] + sizes[4]);
        for (int k = 0; k < 4; k++) {
            size_t w = k == 3 ? 4 : (size_t)k;
            assert_int_equal(many[k].len, sizes[w]);
            assert_int_equal(many[k].crc, crcs[w]);
        }
        assert_same(dir, "job/shared/m0", src);
    }
    char missing[400];
    snprintf(missing, sizeof(missing), "%s/no-such.sst", dir);
    ck_storefs_src gone[2] = {{.path = paths[1]}, {.path = missing}}, small = {.path = paths[1]};
    ck_storefs_item g[3] = {
        {.key = "job/chk-1/a", .data = (const uint8_t *)"bytes", .len = 5},
        {.key = "job/chk-1/b", .src = gone, .nsrc = 2},
        {.key = "job/chk-1/c", .src = &small, .nsrc = 1, .scratch = scratch, .scratch_len = SCR},
    };
    ck_storefs_put_many(dir, g, 3, 1);
    assert_int_equal(g[0].status, 0);
    assert_int_equal(g[1].status, CK_ENOTFOUND); /* the file's trouble, not the store's */
    assert_int_equal(g[1].err, ENOENT);
    assert_int_equal(g[2].status, 0);
    assert_int_equal(g[2].len, 100);
    assert_same(dir, "job/chk-1/c", paths[1]);
    ck_store_entry *e;
    size_t n;
    assert_int_equal(ck_storefs_list(dir, "job/chk-1/", &e, &n), 0);
    assert_int_equal(n, 2); /* a and c: nothing of b, not even a temporary file */
    ck_store_entries_free(e, n);
    free(scratch);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_put_file(void **state)
{
    (void)state;
    put_file_case("/tmp");
    put_file_case("/dev/shm");
}

/* The pool's puts of local files: the results, in the order asked, say
 * what was read of each file (its size and CRC-32C, `file` set, in data);
 * a small one joins a group of small puts, a large one is read through
 * the worker's scratch buffer, two files make one object; a missing file
 * fails alone. */
static void test_pool_put_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX", small[300], large[300], missing[300];
    assert_non_null(mkdtemp(dir));
    snprintf(small, sizeof(small), "%s/small.sst", dir);
    snprintf(large, sizeof(large), "%s/large.sst", dir);
    snprintf(missing, sizeof(missing), "%s/missing.sst", dir);
    uint32_t cs = make_file(small, 1000, 1), cl = make_file(large, (5u << 20) + 17, 2);
    ck_storepool *p = ck_storepool_new(dir, 1, 1);
    assert_non_null(p);
    int ctx;
    /* one worker, held by a large put while the others queue behind it */
    size_t big = (size_t)32 << 20;
    assert_int_equal(ck_storepool_put(p, "j/big", calloc(1, big), big, &ctx, 0, 0), 0);
    assert_int_equal(ck_storepool_put(p, "j/chk-1/x", (uint8_t *)strdup("x"), 1, &ctx, 1, 0), 0);
    const char *s1[] = {small}, *s2[] = {large, small}, *s3[] = {missing};
    assert_int_equal(ck_storepool_put_files(p, "j/chk-1/small", s1, 1, 1000, &ctx, 2, 0), 0);
    assert_int_equal(ck_storepool_put_files(p, "j/shared/m0", s2, 2, 5u << 20, &ctx, 3, 0), 0);
    assert_int_equal(ck_storepool_put_files(p, "j/shared/gone", s3, 1, 10, &ctx, 4, 0), 0);
    assert_int_equal(ck_storepool_put_files(p, "../bad", s1, 1, 10, &ctx, 5, 0), CK_EINVAL);
    assert_int_equal(ck_storepool_put_files(p, "j/none", s1, 0, 10, &ctx, 6, 0), CK_EINVAL);
    ck_storepool_done d[5];
    assert_int_equal(reap_all(p, d, 5), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(d[i].token, (uint64_t)i);
    assert_false(d[1].file);
    assert_true(d[2].file && d[3].file && d[4].file);
    assert_int_equal(d[2].status, 0);
    assert_int_equal(d[2].len, CK_STOREPOOL_FILE_RESULT);
    assert_int_equal(ck_get_u64(d[2].data), 1000);
    assert_int_equal(ck_get_u32(d[2].data + 8), cs);
    assert_int_equal(d[3].status, 0);
    assert_int_equal(d[3].len, 2 * CK_STOREPOOL_FILE_RESULT);
    assert_int_equal(ck_get_u64(d[3].data), (5u << 20) + 17); /* what was read, not said */
    assert_int_equal(ck_get_u32(d[3].data + 8), cl);
    assert_int_equal(ck_get_u64(d[3].data + 12), 1000);
    assert_int_equal(ck_get_u32(d[3].data + 20), cs);
    assert_int_equal(d[4].status, CK_ENOTFOUND);
    assert_int_equal(d[4].err, ENOENT);
    assert_null(d[4].data);
    free(d[2].data);
    free(d[3].data);
    /* big; x, small and gone (the small ones queued, one group: gone fails
     * alone in it); m0 */
    assert_int_equal(ck_storepool_commits(p), 3);
    ck_storepool_free(p);
    assert_same(dir, "j/chk-1/small", small);
    uint8_t *m;
    size_t mlen;
    assert_int_equal(ck_storefs_get(dir, "j/shared/m0", &m, &mlen), 0);
    assert_int_equal(mlen, (5u << 20) + 17 + 1000);
    assert_int_equal(ck_crc32c(0, m, (5u << 20) + 17), cl);
    assert_int_equal(ck_crc32c(0, m + (5u << 20) + 17, 1000), cs);
    free(m);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Appends (storefs.h): bytes go into an object a put made, at an
 * offset, in place, from data or from local files, buffered or with
 * direct I/O (a block-aligned offset and the worker's scratch buffer; its
 * padding stays); what was there before the offset is untouched; an
 * append to an object that is not there fails with CK_ENOTFOUND and makes
 * nothing; an appendable object is unlinked when deleted, never set aside
 * for a put to overwrite (a late append would write into that put's
 * object); through the pool, an append waits for the put of its key
 * asked before it. */
static void test_append(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX", local[300];
    assert_non_null(mkdtemp(dir));
    size_t big = (2u << 20) + 100, n0 = 5000;
    uint8_t *a = malloc(big), *data;
    for (size_t i = 0; i < big; i++)
        a[i] = (uint8_t)(i * 13 + 5);
    const char *key = "job/shared/v1-0-a0-c3-m0.seg";
    assert_true(ck_store_appendable(key));
    assert_false(ck_store_appendable("job/shared/v1-0-a0-c3-m0"));
    assert_false(ck_store_appendable(".seg"));
    /* nothing to append to: an error, and no object made */
    assert_int_equal(ck_storefs_append(dir, key, 4096, a, 10, 1), CK_ENOTFOUND);
    size_t len;
    assert_int_equal(ck_storefs_get(dir, key, &data, &len), CK_ENOTFOUND);
    assert_int_equal(ck_storefs_append(dir, key, 0, a, 10, 1), CK_EINVAL);
    assert_int_equal(ck_storefs_put(dir, key, a, n0, 1), 0);
    /* buffered, at a block: the gap after the put's bytes reads as zeros */
    assert_int_equal(ck_storefs_append(dir, key, 8192, a + 1, 3000, 1), 0);
    /* direct, from the scratch buffer, at the next block */
    uint8_t *scratch = ck_storefs_scratch_new(1u << 20, 0);
    assert_non_null(scratch);
    uint64_t at2 = 8192 + 4096;
    ck_storefs_item it = {.key = key, .at = at2, .data = a + 2, .len = big - 2,
                          .scratch = scratch, .scratch_len = 1u << 20};
    ck_storefs_put_many(dir, &it, 1, 1);
    assert_int_equal(it.status, 0);
    /* from a local file, after the direct one's padding */
    snprintf(local, sizeof(local), "%s/local.sst", dir);
    uint32_t crc = make_file(local, 777, 9);
    uint64_t at3 = (at2 + big - 2 + 4095) & ~(uint64_t)4095;
    ck_storefs_src src = {.path = local};
    ck_storefs_item f = {.key = key, .at = at3, .src = &src, .nsrc = 1};
    ck_storefs_put_many(dir, &f, 1, 1);
    assert_int_equal(f.status, 0);
    assert_int_equal(src.len, 777);
    assert_int_equal(src.crc, crc);
    assert_int_equal(ck_storefs_get(dir, key, &data, &len), 0);
    assert_int_equal(len, at3 + 777);
    assert_memory_equal(data, a, n0);
    for (size_t i = n0; i < 8192; i++)
        assert_int_equal(data[i], 0);
    assert_memory_equal(data + 8192, a + 1, 3000);
    assert_memory_equal(data + at2, a + 2, big - 2);
    assert_int_equal(ck_crc32c(0, data + at3, 777), crc);
    free(data);
    /* ranged gets (a restore reads the segments it needs): inside, up to
     * the end (fewer bytes), past the end (none), nothing of a missing one */
    assert_int_equal(ck_storefs_get_range(dir, key, 8192, 3000, &data, &len), 0);
    assert_int_equal(len, 3000);
    assert_memory_equal(data, a + 1, 3000);
    free(data);
    assert_int_equal(ck_storefs_get_range(dir, key, at3 + 700, 1000, &data, &len), 0);
    assert_int_equal(len, 77);
    free(data);
    assert_int_equal(ck_storefs_get_range(dir, key, at3 + 777, 10, &data, &len), 0);
    assert_int_equal(len, 0);
    free(data);
    assert_int_equal(ck_storefs_get_range(dir, key, at3 + 5000, CK_STOREFS_WHOLE, &data, &len), 0);
    assert_int_equal(len, 0);
    free(data);
    assert_int_equal(ck_storefs_get_range(dir, "job/shared/x.seg", 0, 10, &data, &len),
                     CK_ENOTFOUND);
    /* through the pool: the append waits for its key's put asked before */
    ck_storepool *p = ck_storepool_new(dir, CK_STOREPOOL_THREADS, 1);
    assert_non_null(p);
    int ctx;
    const char *k2 = "job/shared/v1-1-a0-c4-m0.seg", *srcs[] = {local};
    uint8_t *b1 = malloc(3u << 20), *b2 = malloc(big);
    memset(b1, 1, 3u << 20);
    memcpy(b2, a, big);
    assert_int_equal(ck_storepool_put(p, k2, b1, 3u << 20, &ctx, 1, 0), 0);
    assert_int_equal(ck_storepool_append(p, k2, 3u << 20, b2, big, &ctx, 2, 0), 0);
    assert_int_equal(ck_storepool_append_files(p, k2, (3u << 20) + (3u << 20), srcs, 1, 777,
                                               &ctx, 3, 0), 0);
    assert_int_equal(ck_storepool_append(p, k2, 0, NULL, 0, &ctx, 4, 0), CK_EINVAL);
    assert_int_equal(ck_storepool_append(p, "job/shared/none.seg", 4096,
                                         (uint8_t *)strdup("x"), 1, &ctx, 5, 0), 0);
    ck_storepool_done d[4];
    assert_int_equal(reap_all(p, d, 4), 4);
    assert_int_equal(d[0].status, 0);
    assert_int_equal(d[1].status, 0);
    assert_int_equal(d[1].at, 3u << 20);
    assert_int_equal(d[2].status, 0);
    assert_true(d[2].file);
    assert_int_equal(ck_get_u32(d[2].data + 8), crc);
    free(d[2].data);
    assert_int_equal(d[3].status, CK_ENOTFOUND); /* not a failing disk */
    /* a ranged get through the pool, after the appends: where it starts */
    assert_int_equal(ck_storepool_get_range(p, k2, (3u << 20) + 5, 1000, &ctx, 6), 0);
    assert_int_equal(reap_all(p, d, 1), 1);
    assert_int_equal(d[0].status, 0);
    assert_true(d[0].get);
    assert_int_equal(d[0].at, (3u << 20) + 5);
    assert_int_equal(d[0].len, 1000);
    assert_memory_equal(d[0].data, a + 5, 1000);
    free(d[0].data);
    ck_storepool_free(p);
    assert_int_equal(ck_storefs_get(dir, k2, &data, &len), 0);
    assert_int_equal(len, (6u << 20) + 777);
    for (size_t i = 0; i < (3u << 20); i++)
        if (data[i] != 1)
            fail_msg("byte %zu: %d", i, data[i]);
    assert_memory_equal(data + (3u << 20), a, big);
    assert_int_equal(ck_crc32c(0, data + (6u << 20), 777), crc);
    free(data);
    assert_int_equal(ck_storefs_get(dir, "job/shared/none.seg", &data, &len), CK_ENOTFOUND);
    /* deleted: unlinked, not set aside (3 MiB would be) */
    assert_int_equal(ck_storefs_delete(dir, k2), 0);
    assert_int_equal(ck_storefs_delete(dir, key), 0);
    assert_int_equal(recycled_count(dir), -1);
    free(a);
    free(scratch);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A put writes "<key>.<pid>.part" first: what a process killed mid-put
 * left is dropped by its pid, another writer's is not, and no list shows
 * either. */
static void test_drop_parts(void **state)
{
    (void)state;
    char dir[] = "/tmp/chandy-fs-XXXXXX", path[400];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(ck_storefs_put(dir, "job/shared/a", (const uint8_t *)"a", 1, 1), 0);
    const char *left[] = {"job/shared/b.4242.part", "job/chk-3/v1-0.state.4242.part",
                          "job/chk-3/v1-1.state.4243.part", "job/shared/c.14242.part"};
    assert_int_equal(ck_storefs_mkdirs(strcat(strcpy(path, dir), "/job/chk-3")), 0);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, left[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("partial", f);
        fclose(f);
    }
    ck_store_entry *e;
    size_t n;
    assert_int_equal(ck_storefs_list(dir, "job/", &e, &n), 0);
    assert_int_equal(n, 1); /* a temporary file is no object */
    ck_store_entries_free(e, n);
    assert_int_equal(ck_storefs_drop_parts(dir, 4242), 2);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, left[i]);
        assert_int_equal(access(path, F_OK) == 0, i >= 2); /* 4243's and 14242's stay */
    }
    assert_int_equal(ck_storefs_drop_parts(dir, 4242), 0);
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_store),
        cmocka_unit_test(test_dir_store),
        cmocka_unit_test(test_put_many),
        cmocka_unit_test(test_recycle),
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_pool_groups),
        cmocka_unit_test(test_pool_requesters),
        cmocka_unit_test(test_put_file),
        cmocka_unit_test(test_pool_put_file),
        cmocka_unit_test(test_drop_parts),
        cmocka_unit_test(test_put_races_delete),
        cmocka_unit_test(test_append),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
