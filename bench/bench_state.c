/*
 * bench_state.c - what keyed state costs on each backend. Prints figures;
 * asserts nothing (machines are noisy). In one run:
 *
 *  1. State operations per second on the RocksDB backend (a read-modify-
 *     write of a value state: acquire, change, release, as the running
 *     count does per record), next to raw RocksDB gets and puts on the
 *     same keys with the same options (WAL off), through librocksdb's C
 *     API: the limit. The heap backend's rate through the same interface
 *     is printed beside (bench_throughput times it against a plain loop).
 *  2. Checkpoint bytes per second uploaded over the socket backend, next
 *     to this disk's sequential write speed (write + fsync of one large
 *     file in the same directory, three times before the runs and three
 *     after, and of one file of each checkpoint's size, where a sync's
 *     fixed cost weighs on small ones as it does on the uploads), measured
 *     in the same run: a keyed
 *     count with full checkpoints on the heap (one large file per subtask),
 *     with incremental checkpoints on RocksDB (its new SST files and its
 *     small private ones), the same with file merging (those files in one
 *     merged file per checkpoint), merged across checkpoints (appended to
 *     the file the subtask keeps) and with full ones on RocksDB (the
 *     canonical file), each at a rate the process keeps up with.
 *     Counted are the bytes stored: run.json's `bytes` less its
 *     `bytes_inline` (with Flink's default memory threshold, 20 kb, a
 *     snapshot's small files go inline in _metadata, not to the store).
 *     Timed is run.json's `upload_s` (asking for the uploads to the
 *     acknowledgement), with the model's costs out of the way: a store
 *     link and local disk too fast to pace and CPUs too fast to charge.
 *     Then the store's own puts alone, of 48 MB objects into new files
 *     and over deleted ones (the store recycles a deleted object's file),
 *     with direct I/O through a kept buffer of huge pages as the pool
 *     writes them, the same from a buffer of 4 KiB pages, and through the
 *     page cache: the disk figure's file, written and deleted
 *     again and again, reuses the page frames it just freed, where a
 *     buffered put of a new file takes frames freed long before (on a
 *     virtual machine that hands freed memory back to its host, each one
 *     faulted in again).
 *
 * Usage: bench_state [operations-in-millions]   (default 1)
 */
#include <fcntl.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "benchutil.h"
#include "keygroup.h"
#include "kstate.h"
#include "rng.h"
#include "rocksstate.h"
#include "storefs.h"
#include "storepool.h"

enum { NKEYS = 100000, MAXP = 128 };

static const ck_state_desc desc = {"running", CK_STATE_VALUE, 1};

typedef struct keyset {
    char (*key)[16];
    uint32_t *klen;
    ck_keyloc *loc;
    uint32_t *order; /* the keys touched, in order */
} keyset;

static void make_keys(keyset *k, uint32_t nops)
{
    k->key = malloc(NKEYS * sizeof(*k->key));
    k->klen = malloc(NKEYS * sizeof(*k->klen));
    k->loc = malloc(NKEYS * sizeof(*k->loc));
    k->order = malloc(nops * sizeof(*k->order));
    for (int i = 0; i < NKEYS; i++) {
        k->klen[i] = (uint32_t)snprintf(k->key[i], sizeof(k->key[i]), "user-%d", i);
        int32_t jh = ck_kg_java_hash(k->key[i], k->klen[i]);
        k->loc[i] = (ck_keyloc){.jhash = jh, .kg = ck_kg_of_hash(jh, MAXP)};
    }
    ck_rng r;
    ck_rng_init(&r, 42, 1);
    for (uint32_t i = 0; i < nops; i++)
        k->order[i] = (uint32_t)ck_rng_below(&r, NKEYS);
}

/* Read-modify-writes through the backend interface; ops per second. */
static double run_backend(ck_kstate *ks, const keyset *k, uint32_t nops)
{
    double t0 = bench_now_s();
    for (uint32_t i = 0; i < nops; i++) {
        uint32_t x = k->order[i];
        ck_kkey kk = {.loc = k->loc[x], .key = k->key[x], .klen = k->klen[x]};
        ck_ks_locate(ks, 0, &kk);
        int created;
        int64_t *v = ck_ks_acquire(ks, 0, &kk, 1, &created);
        if (!v) {
            fprintf(stderr, "bench_state: acquire failed\n");
            exit(1);
        }
        v[0]++;
        if (ck_ks_release(ks, 0, &kk, v, 1)) {
            fprintf(stderr, "bench_state: release failed\n");
            exit(1);
        }
    }
    return nops / (bench_now_s() - t0);
}

/* The same through raw RocksDB: the key bytes the backend would build,
 * ready beforehand; a get, an 8-byte value, a put. */
static double run_raw(const char *dir, const keyset *k, uint32_t nops)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_write_buffer_size(o, 64u << 20);
    rocksdb_options_set_info_log_level(o, 4);
    char *err = NULL;
    rocksdb_t *db = rocksdb_open(o, dir, &err);
    if (err) {
        fprintf(stderr, "bench_state: %s: %s\n", dir, err);
        exit(1);
    }
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(wo, 1);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    uint8_t(*raw)[32] = malloc(NKEYS * sizeof(*raw));
    size_t *rl = malloc(NKEYS * sizeof(*rl));
    for (int i = 0; i < NKEYS; i++) { /* kg | state | klen | key | ns */
        uint8_t *p = raw[i];
        p[0] = (uint8_t)(k->loc[i].kg >> 8);
        p[1] = (uint8_t)k->loc[i].kg;
        p[2] = 0;
        p[3] = p[4] = p[5] = 0;
        p[6] = (uint8_t)k->klen[i];
        memcpy(p + 7, k->key[i], k->klen[i]);
        memset(p + 7 + k->klen[i], 0, 8);
        p[7 + k->klen[i]] = 0x80;
        rl[i] = 15 + k->klen[i];
    }
    double t0 = bench_now_s();
    for (uint32_t i = 0; i < nops; i++) {
        uint32_t x = k->order[i];
        size_t vl;
        char *v = rocksdb_get(db, ro, (const char *)raw[x], rl[x], &vl, &err);
        int64_t c = 0;
        if (v && vl == 8)
            memcpy(&c, v, 8);
        rocksdb_free(v);
        c++;
        rocksdb_put(db, wo, (const char *)raw[x], rl[x], (const char *)&c, 8, &err);
        if (err) {
            fprintf(stderr, "bench_state: raw put: %s\n", err);
            exit(1);
        }
    }
    double rate = nops / (bench_now_s() - t0);
    free(raw);
    free(rl);
    rocksdb_readoptions_destroy(ro);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(db);
    rocksdb_destroy_db(o, dir, &err);
    rocksdb_options_destroy(o);
    return rate;
}

/* Writes n bytes to a new file in dir and fsyncs it; bytes per second. */
static double disk_write_speed(const char *dir, size_t n)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/disk-speed", dir);
    size_t chunk = 1 << 20;
    char *buf = malloc(chunk);
    memset(buf, 0x5a, chunk);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double t0 = bench_now_s();
    for (size_t off = 0; off < n; off += chunk)
        if (write(fd, buf, chunk) != (ssize_t)chunk)
            perror("write");
    fsync(fd);
    close(fd);
    double dt = bench_now_s() - t0;
    unlink(path);
    free(buf);
    return (double)n / dt;
}

/* The store's own puts (write, sync, rename, directory sync) of objects of
 * n bytes, STORE_PUTS in turn, each object deleted two puts later, as a
 * checkpoint is once the next one completes, through a kept scratch
 * buffer (direct I/O) as the socket backend's pool puts them, or without
 * one (buffered: the page cache): `recycle` 1, a put overwrites the file
 * of one deleted (storefs.c); 0, every put writes a new file (the objects
 * are deleted after the timing). Bytes per second. */
enum { STORE_PUTS = 6 };
/* direct: 0 through the page cache, 1 direct I/O from a scratch buffer
 * of 4 KiB pages, 2 from one of huge pages (a task manager's pool's). */
static double store_put_speed(const char *tmp, size_t n, int recycle, int direct)
{
    char root[400], key[64];
    snprintf(root, sizeof(root), "%s/store-%d", tmp, recycle);
    uint8_t *obj = malloc(n), *scratch = NULL;
    for (size_t i = 0; i < n; i++)
        obj[i] = (uint8_t)(i * 131 + 7);
    size_t slen = CK_STOREPOOL_SCRATCH; /* as a task manager's pool has */
    if (direct)
        scratch = ck_storefs_scratch_new(slen, direct == 2);
    double t = 0;
    for (int i = 0; i < STORE_PUTS; i++) {
        snprintf(key, sizeof(key), "chk-%d/state", i);
        ck_storefs_item it = {.key = key, .data = obj, .len = n, .scratch = scratch,
                              .scratch_len = slen};
        double t0 = bench_now_s();
        ck_storefs_put_many(root, &it, 1, 1);
        if (it.status)
            fprintf(stderr, "bench_state: store put: %s\n", strerror(it.err));
        t += bench_now_s() - t0;
        snprintf(key, sizeof(key), "chk-%d/state", i - 2);
        if (recycle && i >= 2)
            ck_storefs_delete(root, key);
    }
    free(obj);
    free(scratch);
    ck_storefs_rmtree(root);
    return (double)n * STORE_PUTS / t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of three (the same sizes written again: each figure is one). */
static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* One run of part 2 and what it measured. */
typedef struct upload_case {
    const char *what, *backend;
    int incremental, merging; /* merging: execution.checkpointing.file-merging.enabled */
    int across;               /* ...across-checkpoint-boundary */
    int keys, rate;
    const char *duration;
    int subtask; /* whose upload to time (-1: the longest of any) */
    double speed, n, minb, maxb; /* bytes per second of upload, over checkpoints */
    double sizes[64];            /* the first 64 checkpoints' bytes */
} upload_case;

/* Runs the keyed count over sockets with the model's own costs out of the
 * way (a store link and local disk too fast to pace, CPUs too fast to
 * charge): what is timed is the real work of uploading. */
static int upload_run(const char *tmp, upload_case *uc)
{
    cJSON *sc = bench_read_json(CHANDY_SOURCE_DIR "/bench/keyed-count.json");
    if (!sc) {
        fprintf(stderr, "bench_state: cannot read bench/keyed-count.json\n");
        return 1;
    }
    cJSON *wl = cJSON_GetObjectItem(sc, "workload");
    cJSON_DeleteItemFromObject(wl, "mode"); /* at a rate: the process has time to upload */
    cJSON_ReplaceItemInObject(wl, "keys", cJSON_CreateNumber(uc->keys));
    cJSON_ReplaceItemInObject(wl, "rate", cJSON_CreateNumber(uc->rate));
    cJSON_ReplaceItemInObject(wl, "duration", cJSON_CreateString(uc->duration));
    cJSON *cl = cJSON_GetObjectItem(sc, "cluster");
    cJSON_ReplaceItemInObject(cl, "cores", cJSON_CreateNumber(4));
    cJSON *ln = cJSON_AddObjectToObject(cl, "link"); /* the host's side of the store's link */
    cJSON_AddStringToObject(ln, "bandwidth", "100GBps");
    cJSON_AddStringToObject(ln, "latency", "0ms");
    cJSON_AddStringToObject(cl, "speed", "1000Gf");
    cJSON_AddStringToObject(cl, "local_disk", "100GBps");
    cJSON *st = cJSON_AddObjectToObject(cl, "store");
    cJSON_AddStringToObject(st, "bandwidth", "100GBps");
    cJSON_AddStringToObject(st, "latency", "0ms");
    cJSON *cfg = cJSON_GetObjectItem(sc, "config");
    cJSON_AddStringToObject(cfg, "state.backend.type", uc->backend);
    cJSON_AddStringToObject(cfg, "execution.checkpointing.interval", "2 s");
    cJSON_AddBoolToObject(cfg, "execution.checkpointing.incremental", uc->incremental);
    cJSON_AddBoolToObject(cfg, "execution.checkpointing.file-merging.enabled", uc->merging);
    cJSON_AddBoolToObject(cfg, "execution.checkpointing.file-merging.across-checkpoint-boundary",
                          uc->across);
    char scen[400], out[400], args[1000];
    snprintf(scen, sizeof(scen), "%s/upload-%s-%d%d%d.json", tmp, uc->backend, uc->incremental,
             uc->merging, uc->across);
    snprintf(out, sizeof(out), "%s/run-%s-%d%d%d", tmp, uc->backend, uc->incremental,
             uc->merging, uc->across);
    bench_write_json(sc, scen);
    cJSON_Delete(sc);
    snprintf(args, sizeof(args), "run %s --backend sockets --out %s -q", scen, out);
    if (bench_chandy(args)) {
        fprintf(stderr, "bench_state: the sockets run failed\n");
        return 1;
    }
    snprintf(scen, sizeof(scen), "%s/run.json", out);
    cJSON *run = bench_read_json(scen);
    double bytes = 0, secs = 0;
    uc->n = uc->maxb = 0;
    uc->minb = 1e18;
    const cJSON *cp;
    cJSON_ArrayForEach(cp, cJSON_GetObjectItem(run, "checkpoints"))
    {
        if (strcmp(cJSON_GetObjectItem(cp, "status")->valuestring, "completed"))
            continue;
        const cJSON *up = cJSON_GetObjectItem(cp, "upload_s");
        /* what went to the store: not the files inline in _metadata
         * (under state.storage.fs.memory-threshold, 20 kb by default) */
        double b = bench_field(cp, "bytes", NULL) - bench_field(cp, "bytes_inline", NULL),
               u = uc->subtask < 0 ? bench_field(cp, "upload_max_s", NULL)
                                   : cJSON_GetArrayItem(up, uc->subtask)->valuedouble;
        if (b < (1 << 20) || u <= 0)
            continue; /* the small ones say little */
        if (uc->n < 64)
            uc->sizes[(int)uc->n] = b;
        bytes += b;
        secs += u;
        uc->maxb = b > uc->maxb ? b : uc->maxb;
        uc->minb = b < uc->minb ? b : uc->minb;
        uc->n++;
    }
    cJSON_Delete(run);
    if (!uc->n) {
        fprintf(stderr, "bench_state: %s: no checkpoint of 1 MB or more\n", uc->what);
        return 1;
    }
    uc->speed = bytes / secs;
    return 0;
}

int main(int argc, char **argv)
{
    double millions = argc > 1 ? atof(argv[1]) : 1;
    uint32_t nops = (uint32_t)(millions * 1e6);
    if (nops < 1000) {
        fprintf(stderr, "usage: bench_state [operations-in-millions]\n");
        return 2;
    }
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "/tmp/chandy-bench-state-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    keyset k;
    make_keys(&k, nops);
    printf("1. value-state read-modify-writes, %u keys, %.2f M operations (best of 3)\n", NKEYS,
           nops / 1e6);
    double rocks = 0, raw = 0, heap = 0;
    for (int round = 0; round < 3; round++) {
        char dir[400], err[300];
        snprintf(dir, sizeof(dir), "%s/chandy-%d", tmp, round);
        ck_rocks_opts o = {.write_buffer = 64u << 20, .target_file = 64u << 20,
                           .level_base = 256u << 20};
        ck_kstate *ks =
            ck_rocks_open(dir, &o, ck_kgr_make(0, MAXP - 1), &desc, 1, err, sizeof(err));
        if (!ks) {
            fprintf(stderr, "bench_state: %s\n", err);
            return 1;
        }
        double r = run_backend(ks, &k, nops);
        rocks = r > rocks ? r : rocks;
        ck_kstate_free(ks);
        snprintf(dir, sizeof(dir), "%s/raw-%d", tmp, round);
        r = run_raw(dir, &k, nops);
        raw = r > raw ? r : raw;
        ks = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(0, MAXP - 1), &desc, 1);
        r = run_backend(ks, &k, nops);
        heap = r > heap ? r : heap;
        ck_kstate_free(ks);
    }
    printf("   rocksdb backend   %10.0f ops/s\n", rocks);
    printf("   raw rocksdb       %10.0f ops/s   (get + put, same keys)\n", raw);
    printf("   ratio             %10.2f         (aim >= 0.7)\n", rocks / raw);
    printf("   heap backend      %10.0f ops/s   (the same interface)\n", heap);

    /* 2. checkpoint upload over sockets next to the disk */
    enum { NCASES = 5 };
    upload_case cases[NCASES] = {
        {.what = "full checkpoints of a 3M-key count on the heap", .backend = "hashmap",
         .keys = 3000000, .rate = 300000, .duration = "10 s", .subtask = -1},
        /* the count's own uploads: the source's (a few bytes) wait behind
         * the count's flush in the synchronous phase, one process runs both */
        {.what = "incremental checkpoints of a 2M-key count on RocksDB", .backend = "rocksdb",
         .incremental = 1, .keys = 2000000, .rate = 150000, .duration = "8 s", .subtask = 1},
        /* the same, a subtask's new files in one merged file per checkpoint */
        {.what = "the same with file merging", .backend = "rocksdb", .incremental = 1,
         .merging = 1, .keys = 2000000, .rate = 150000, .duration = "8 s", .subtask = 1},
        /* the same, appended to the subtask's file across checkpoints */
        {.what = "the same, merged across checkpoints", .backend = "rocksdb", .incremental = 1,
         .merging = 1, .across = 1, .keys = 2000000, .rate = 150000, .duration = "8 s",
         .subtask = 1},
        /* the same state in full checkpoints: one canonical file per subtask */
        {.what = "full checkpoints of the same count on RocksDB", .backend = "rocksdb",
         .incremental = 0, .keys = 2000000, .rate = 150000, .duration = "8 s", .subtask = 1},
    };
    /* The disk's speed swings from minute to minute (a shared machine's
     * disk): the large file is written three times before the runs and
     * three after, and its figure is the median of the six. */
    double d6[6];
    for (int r = 0; r < 3; r++)
        d6[r] = disk_write_speed(tmp, 64u << 20);
    double maxb = 0;
    for (int c = 0; c < NCASES; c++)
        if (upload_run(tmp, &cases[c]))
            return 1;
        else
            maxb = cases[c].maxb > maxb ? cases[c].maxb : maxb;
    for (int r = 3; r < 6; r++)
        d6[r] = disk_write_speed(tmp, (size_t)(maxb > (64 << 20) ? maxb : (64 << 20)));
    qsort(d6, 6, sizeof(double), cmp_double);
    double disk = (d6[2] + d6[3]) / 2;
    /* the store's pattern, both ways, alternately (the disk swings) */
    double fresh[3] = {0}, reused[3] = {0}; /* page cache, direct 4 KiB, direct huge */
    for (int r = 0; r < 2; r++)
        for (int way = 2; way >= 0; way--) {
            fresh[way] += store_put_speed(tmp, 48u << 20, 0, way) / 2;
            reused[way] += store_put_speed(tmp, 48u << 20, 1, way) / 2;
        }
    printf("2. checkpoint uploads over sockets (bytes over the upload's time, checkpoints of 1 MB "
           "or more) next to this disk's\n   sequential write + fsync (same directory) of one "
           "large file, and of files of the checkpoints' sizes\n");
    for (int c = 0; c < NCASES; c++) {
        double b = 0, t = 0, s3[3]; /* the same sizes, written and synced one by one */
        for (int r = 0; r < 3; r++) {
            b = t = 0;
            for (int i = 0; i < cases[c].n && i < 64; i++) {
                b += cases[c].sizes[i];
                t += cases[c].sizes[i] / disk_write_speed(tmp, (size_t)cases[c].sizes[i]);
            }
            s3[r] = t / b; /* seconds per byte */
        }
        t = median3(s3) * b;
        printf("   %-54s %7.1f MB/s  %.2f of the large file, %.2f of %.0f MB/s for the same "
               "sizes  (%.0f checkpoints, %.1f to %.1f MB)\n",
               cases[c].what, cases[c].speed / 1e6, cases[c].speed / disk,
               cases[c].speed * t / b, b / t / 1e6, cases[c].n, cases[c].minb / 1e6,
               cases[c].maxb / 1e6);
    }
    printf("   %-54s %7.1f MB/s  (write + fsync, same directory; aim >= 0.8 of it)\n",
           "disk sequential write, one large file", disk / 1e6);
    const char *ways[3] = {"the same through the page cache",
                           "the same, direct from a buffer of 4 KiB pages",
                           "the store's own puts of 48 MB, alone (direct I/O)"};
    for (int way = 2; way >= 0; way--)
        printf("   %-54s %7.1f MB/s  into new files, %.1f MB/s over deleted ones (recycled)\n",
               ways[way], fresh[way] / 1e6, reused[way] / 1e6);
    char args[400];
    snprintf(args, sizeof(args), "rm -rf %s", tmp);
    if (system(args))
        return 1;
    return 0;
}
