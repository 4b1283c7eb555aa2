/*
 * bench_rescale.c - RocksDB's rescale restore on this machine's disk, by
 * each of its paths, in wall time. Prints figures; asserts nothing
 * (machines are noisy): every ratio is of times measured in the same run.
 *
 * The state is shaped as Flink's own rescaling benchmark's
 * (flink-benchmarks, RocksdbStateBackendRescalingBenchmarkExecutor): keys
 * of 96 random bytes whose first 4 are the key's index, values of 128
 * random bytes, max parallelism 128; a key's group is Flink's murmur of
 * Java's Arrays.hashCode over its bytes. The value is a list state of two
 * elements of eight 64-bit fields (chandy's values are 64-bit fields), so
 * each key is one RocksDB entry of 128 value bytes. Default 1 GiB of keys
 * and values (4.8 million keys); more with the first argument.
 *
 * 1. Old instances of parallelism 2 and 4 are written in key index order,
 *    as the RocksDB backend lays out keys (rocksstate.h), with Flink's
 *    default sizes (64 mb write buffer and files, 256 mb level 1) and
 *    RocksDB compacting in the background, as Flink's does; their
 *    checkpoints (what a native snapshot holds) are kept in a "store"
 *    directory.
 * 2. Scale-out 2 -> 3 and scale-in 4 -> 3: for each new subtask, its old
 *    instances are downloaded (their files copied from the store into a
 *    local directory, as a subtask downloads them; from the page cache,
 *    so a lower bound of a download from remote storage), then restored
 *    by each path (ck_rocks_rescale): copy (every key of the range copied
 *    into an empty instance), clip (Flink's default: the best instance
 *    clipped with DeleteRange, the others copied in) and ingest (Flink's
 *    use-ingest-db-restore-mode: the instances imported whole, then
 *    clipped). Each is run once to warm up (its result counted: every key
 *    of the range, none else), then REPS times; the median
 *    and the spread [min, max] are printed. The restore includes the
 *    engine's compaction after it (rocksstate compacts in the foreground,
 *    where Flink's RocksDB compacts in the background after the restore
 *    returns): the times without it are printed too.
 * 3. A rescale takes as long as its slowest subtask (they restore at
 *    once, on their own machines): the ratios clip/copy and ingest/copy of
 *    the slowest subtask's restore, rep by rep, with their spread; and for
 *    the copy path the download against the rebuild.
 *
 * 4. Calibration of the engine's cost model of a rebuild
 *    (ck_kstate_rebuild_cost): each phase's wall time over the count it
 *    charges, summed over every restore, and the model against the
 *    measured times and ratios (docs/ARCHITECTURE.md, "The rebuild's
 *    cost model").
 *
 * Usage: bench_rescale [GiB] [--reps N] [--value-bytes B] [--dir DIR] [--keep]
 *   GiB   bytes of keys and values, 0.05 to 4 (default 1)
 *   B     bytes of each value, a multiple of 64 (default 128, Flink's)
 *   DIR   where the store and the instances go (default: a new directory
 *         under /tmp, removed at the end); needs about 4.5 x GiB free
 *         (the store, a subtask's download and its new instance)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "benchutil.h"
#include "error.h"
#include "keygroup.h"
#include "kstate.h"
#include "rocksrescale.h"
#include "rocksstate.h"

enum { MAXP = 128, KEY_BYTES = 96, MAX_VALUE_BYTES = 4096, NEW_P = 3, MAX_REPS = 20 };

static int value_bytes = 128; /* --value-bytes: a multiple of 64 */

static const ck_state_desc desc = {"value", CK_STATE_LIST, 8}; /* 2 x 8 x 8 = 128 bytes */
static const ck_rocks_opts flink = {.write_buffer = 64u << 20, .target_file = 64u << 20,
                                    .level_base = 256u << 20};

static char root[512];
static uint64_t kg_keys[MAXP]; /* keys written per key group */

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_rescale: %s: %s\n", what, why);
    exit(1);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Key i (its first 4 bytes the index, the rest random) and its value. */
static void make_kv(uint64_t i, char *key, int64_t *val)
{
    uint64_t s = i * 0x2545f4914f6cdd1du + 7;
    for (int b = 0; b < KEY_BYTES; b += 8) {
        uint64_t r = splitmix(&s);
        memcpy(key + b, &r, 8);
    }
    key[0] = (char)(i >> 24);
    key[1] = (char)(i >> 16);
    key[2] = (char)(i >> 8);
    key[3] = (char)i;
    for (int f = 0; f < value_bytes / 8; f++)
        val[f] = (int64_t)splitmix(&s);
}

/* Java's Arrays.hashCode(byte[]). */
static int32_t bytes_hash(const char *k, int n)
{
    uint32_t h = 1;
    for (int i = 0; i < n; i++)
        h = 31 * h + (uint32_t)(int32_t)(signed char)k[i];
    return (int32_t)h;
}

static void run_cmd(const char *fmt, const char *a)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), fmt, a);
    if (system(cmd) != 0)
        die(cmd, "failed");
}

static uint64_t dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    uint64_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char p[1200];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && !stat(p, &sb) && S_ISREG(sb.st_mode))
            n += (uint64_t)sb.st_size;
    }
    closedir(d);
    return n;
}

/* ---- the old instances ------------------------------------------------------------ */

static void store_dir(int p, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s/store/p%d-%d", root, p, i);
}

/* An old instance written as the RocksDB backend lays out its keys
 * (rocksstate.h: key group | state | key length | key | namespace, big-
 * endian, the namespace's sign bit flipped; a list's elements' fields
 * little-endian), as bench_state's raw runs do, through write batches,
 * with RocksDB compacting in the background as Flink's does: the
 * backend's own writes (a read before each write, compaction in the
 * writer's thread) would take most of the run to make 1 GiB. */
typedef struct old_db {
    rocksdb_t *db;
    rocksdb_writebatch_t *b;
    ck_kgr kgr;
} old_db;

static rocksdb_options_t *old_opts(void)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_num_levels(o, CK_ROCKS_LEVELS);
    rocksdb_options_set_write_buffer_size(o, flink.write_buffer);
    rocksdb_options_set_target_file_size_base(o, flink.target_file);
    rocksdb_options_set_max_bytes_for_level_base(o, flink.level_base);
    rocksdb_options_set_max_background_jobs(o, 2);
    rocksdb_options_set_info_log_level(o, 4);
    return o;
}

static void put_key(old_db *d, int kg, const char *key, const int64_t *val,
                    rocksdb_writeoptions_t *wo)
{
    char k[2 + 1 + 4 + KEY_BYTES + 8], v[MAX_VALUE_BYTES];
    k[0] = (char)(kg >> 8);
    k[1] = (char)kg;
    k[2] = 0; /* the state */
    k[3] = k[4] = k[5] = 0;
    k[6] = KEY_BYTES;
    memcpy(k + 7, key, KEY_BYTES);
    memset(k + 7 + KEY_BYTES, 0, 8);
    k[7 + KEY_BYTES] = (char)0x80; /* namespace 0 */
    for (int f = 0; f < value_bytes / 8; f++)
        for (int b = 0; b < 8; b++)
            v[8 * f + b] = (char)((uint64_t)val[f] >> (8 * b));
    rocksdb_writebatch_put(d->b, k, sizeof(k), v, (size_t)value_bytes);
    if (rocksdb_writebatch_count(d->b) >= 1000) {
        char *e = NULL;
        rocksdb_write(d->db, wo, d->b, &e);
        if (e)
            die("writing an old instance", e);
        rocksdb_writebatch_clear(d->b);
    }
}

/* Waits for d's background compactions to end. */
static void settle(old_db *d)
{
    for (;;) {
        uint64_t pending = 0, running = 0;
        rocksdb_property_int(d->db, "rocksdb.compaction-pending", &pending);
        rocksdb_property_int(d->db, "rocksdb.num-running-compactions", &running);
        if (!pending && !running)
            return;
        usleep(100000);
    }
}

/* Writes nkeys keys into instances of parallelism 2 and 4, and keeps
 * their checkpoints (a native snapshot's files) in the store. */
static void make_store(uint64_t nkeys)
{
    static const int ps[2] = {2, 4};
    old_db dbs[2][4];
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/store", root);
    mkdir(dir, 0755);
    rocksdb_options_t *o = old_opts();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(wo, 1);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ps[k]; i++) {
            old_db *d = &dbs[k][i];
            d->kgr = ck_kg_range(i, ps[k], MAXP);
            snprintf(dir, sizeof(dir), "%s/old-p%d-%d", root, ps[k], i);
            char *e = NULL;
            d->db = rocksdb_open(o, dir, &e);
            if (e)
                die(dir, e);
            d->b = rocksdb_writebatch_create();
        }
    char key[KEY_BYTES];
    int64_t val[MAX_VALUE_BYTES / 8];
    double t0 = bench_now_s();
    for (uint64_t i = 0; i < nkeys; i++) {
        make_kv(i, key, val);
        int kg = ck_kg_of_hash(bytes_hash(key, KEY_BYTES), MAXP);
        kg_keys[kg]++;
        for (int k = 0; k < 2; k++)
            put_key(&dbs[k][ck_kg_subtask(kg, ps[k], MAXP)], kg, key, val, wo);
        if (i % 1000000 == 999999) {
            printf("  %.1f M keys written, %.0f s\n", (double)(i + 1) / 1e6, bench_now_s() - t0);
            fflush(stdout);
        }
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ps[k]; i++) {
            old_db *d = &dbs[k][i];
            char *e = NULL;
            rocksdb_write(d->db, wo, d->b, &e);
            rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
            rocksdb_flushoptions_set_wait(fo, 1);
            if (!e)
                rocksdb_flush(d->db, fo, &e);
            rocksdb_flushoptions_destroy(fo);
            if (e)
                die("flushing an old instance", e);
            settle(d);
            store_dir(ps[k], i, dir, sizeof(dir));
            rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(d->db, &e);
            if (!e)
                rocksdb_checkpoint_create(cp, dir, 0, &e);
            if (cp)
                rocksdb_checkpoint_object_destroy(cp);
            if (e)
                die(dir, e);
            int files[CK_ROCKS_LEVELS] = {0};
            const rocksdb_livefiles_t *lf = rocksdb_livefiles(d->db);
            for (int f = 0; lf && f < rocksdb_livefiles_count(lf); f++) {
                int lv = rocksdb_livefiles_level(lf, f);
                if (lv >= 0 && lv < CK_ROCKS_LEVELS)
                    files[lv]++;
            }
            if (lf)
                rocksdb_livefiles_destroy(lf);
            printf("  p%d-%d [%3d, %3d]: %6.0f MB on disk; files by level:", ps[k], i, d->kgr.start,
                   d->kgr.end, (double)dir_bytes(dir) / 1e6);
            for (int lv = 0; lv < CK_ROCKS_LEVELS; lv++)
                printf(" %d", files[lv]);
            printf("\n");
            rocksdb_writebatch_destroy(d->b);
            rocksdb_close(d->db);
            snprintf(dir, sizeof(dir), "%s/old-p%d-%d", root, ps[k], i);
            run_cmd("rm -rf '%s'", dir);
        }
    rocksdb_writeoptions_destroy(wo);
    rocksdb_options_destroy(o);
    printf("  written, compacted and checkpointed in %.0f s\n", bench_now_s() - t0);
}

/* ---- one restore ---------------------------------------------------------------------- */

typedef enum { M_COPY, M_CLIP, M_INGEST, NMODES } mode;
static const char *const mode_names[NMODES] = {"copy", "clip", "ingest"};

typedef struct sample {
    double download, restore, compact;
    ck_rrs_stats st;
} sample;

/* Copies the files of from into to (created), each read and written:
 * a subtask's download. */
static void download(const char *from, const char *to)
{
    if (mkdir(to, 0755))
        die(to, strerror(errno));
    DIR *d = opendir(from);
    if (!d)
        die(from, strerror(errno));
    static char buf[1 << 20];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char a[1200], b[1200];
        snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
        snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
        int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0)
            die(a, strerror(errno));
        for (ssize_t n; (n = read(in, buf, sizeof(buf))) > 0;)
            if (write(out, buf, (size_t)n) != n)
                die(b, strerror(errno));
        close(in);
        if (close(out))
            die(b, strerror(errno));
    }
    closedir(d);
}

/* New subtask j of NEW_P from the old instances of old_p, by mode m;
 * check: count the restored instance's keys (not timed). */
static sample restore_one(int old_p, int j, mode m, int check)
{
    sample x = {0};
    ck_kgr nr = ck_kg_range(j, NEW_P, MAXP);
    ck_rrs_source src[4];
    char dirs[4][600];
    int n = 0;
    double t0 = bench_now_s();
    for (int k = 0; k < old_p; k++) {
        ck_kgr old = ck_kg_range(k, old_p, MAXP);
        if (ck_kgr_empty(ck_kgr_intersect(old, nr)))
            continue;
        char from[600];
        store_dir(old_p, k, from, sizeof(from));
        snprintf(dirs[n], sizeof(dirs[n]), "%s/local/dl-%d", root, k);
        download(from, dirs[n]);
        src[n] = (ck_rrs_source){dirs[n], old};
        n++;
    }
    x.download = bench_now_s() - t0;
    char dir[600], err[600];
    snprintf(dir, sizeof(dir), "%s/local/new-%d", root, j);
    ck_kstate *ks = ck_rocks_open(dir, &flink, nr, &desc, 1, err, sizeof(err));
    if (!ks)
        die(dir, err);
    ck_rrs_opts o = {.copy = m == M_COPY, .ingest = m == M_INGEST};
    t0 = bench_now_s();
    int rc = ck_rocks_rescale(ks, src, n, MAXP, &o, &x.st, err, sizeof(err));
    x.restore = bench_now_s() - t0;
    if (rc)
        die(ck_strerror(rc), err);
    x.compact = (double)x.st.ns[CK_RRS_PH_COMPACT] / 1e9;
    uint64_t want = 0;
    for (int kg = nr.start; kg <= nr.end; kg++)
        want += kg_keys[kg];
    if (check && ks->ops->entries(ks) != want) {
        fprintf(stderr, "bench_rescale: %d -> %d, subtask %d, %s: %llu keys, wanted %llu\n",
                old_p, NEW_P, j, mode_names[m], (unsigned long long)ks->ops->entries(ks),
                (unsigned long long)want);
        exit(1);
    }
    ck_kstate_free(ks);
    for (int k = 0; k < n; k++)
        run_cmd("rm -rf '%s'", dirs[k]);
    return x;
}

/* ---- figures ---------------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct spread {
    double med, min, max;
} spread;

static spread spread_of(const double *v, int n)
{
    double c[MAX_REPS];
    memcpy(c, v, (size_t)n * sizeof(*c));
    qsort(c, (size_t)n, sizeof(*c), cmp_d);
    spread s = {n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2, c[0], c[n - 1]};
    return s;
}

/* "median [min, max]" in 24 columns (seconds) or 27 (ratios). */
static void print_spread(spread s, int ratio)
{
    if (ratio)
        printf("%7.4f [%7.4f, %7.4f]", s.med, s.min, s.max);
    else
        printf("%6.3f [%6.3f, %6.3f]", s.med, s.min, s.max);
}

static sample runs[2][NMODES][MAX_REPS][NEW_P];

/* The slowest subtask's restore (with the compaction after, or without). */
static double slowest(const sample *row, int with_compact)
{
    double t = 0;
    for (int j = 0; j < NEW_P; j++) {
        double r = row[j].restore - (with_compact ? 0 : row[j].compact);
        if (r > t)
            t = r;
    }
    return t;
}

static void report(int sc, int old_p, int reps)
{
    printf("\n%d -> %d: restore of each new subtask, seconds, median of %d [min, max]; keys "
           "copied, instances imported, ranges and files deleted\n", old_p, NEW_P, reps);
    printf("%-7s %-10s %-6s %-6s %8s  %-24s %-24s %8s %8s %7s %7s\n", "subtask", "key groups",
           "mode", "path", "download", "restore", "without compaction", "copied", "imported",
           "ranges-", "files-");
    for (int j = 0; j < NEW_P; j++)
        for (int m = 0; m < NMODES; m++) {
            double d[MAX_REPS], r[MAX_REPS], w[MAX_REPS];
            for (int k = 0; k < reps; k++) {
                d[k] = runs[sc][m][k][j].download;
                r[k] = runs[sc][m][k][j].restore;
                w[k] = r[k] - runs[sc][m][k][j].compact;
            }
            const ck_rrs_stats *st = &runs[sc][m][0][j].st;
            ck_kgr nr = ck_kg_range(j, NEW_P, MAXP);
            char kgs[16];
            snprintf(kgs, sizeof(kgs), "[%d, %d]", nr.start, nr.end);
            printf("%-7d %-10s %-6s %-6s %8.2f  ", j, kgs, mode_names[m],
                   ck_rrs_path_name(st->path), spread_of(d, reps).med);
            print_spread(spread_of(r, reps), 0);
            printf(" ");
            print_spread(spread_of(w, reps), 0);
            printf(" %7.2fM %8u %7u %7u\n", (double)st->keys_written / 1e6, st->imported,
                   st->ranges_deleted, st->files_deleted);
        }
    printf("phases of the slowest subtask's last run (s):\n");
    for (int m = 0; m < NMODES; m++) {
        int jmax = 0;
        for (int j = 1; j < NEW_P; j++)
            if (runs[sc][m][reps - 1][j].restore > runs[sc][m][reps - 1][jmax].restore)
                jmax = j;
        const ck_rrs_stats *st = &runs[sc][m][reps - 1][jmax].st;
        printf("  %-6s subtask %d:", mode_names[m], jmax);
        for (int p = 0; p < CK_RRS_NPHASES; p++)
            if (st->ns[p] >= 500000)
                printf(" %s %.3f", ck_rrs_phase_name(p), (double)st->ns[p] / 1e9);
        printf("; %.0f MB written, %u flushes, %u compactions (%.0f MB), %u files imported "
               "(%.0f MB), %u linked\n",
               (double)st->bytes_written / 1e6, st->flushes, st->compactions,
               (double)st->compacted / 1e6, st->files_imported, (double)st->bytes_imported / 1e6,
               st->files_linked);
    }
    for (int wc = 1; wc >= 0; wc--) {
        double t[NMODES][MAX_REPS];
        for (int m = 0; m < NMODES; m++)
            for (int k = 0; k < reps; k++)
                t[m][k] = slowest(runs[sc][m][k], wc);
        printf("the rescale (its slowest subtask)%s:", wc ? "" : ", without the compaction after");
        for (int m = 0; m < NMODES; m++) {
            printf("  %s ", mode_names[m]);
            print_spread(spread_of(t[m], reps), 0);
        }
        printf("\n");
        for (int m = M_CLIP; m < NMODES; m++) {
            double ratio[MAX_REPS];
            for (int k = 0; k < reps; k++)
                ratio[k] = t[m][k] / t[M_COPY][k];
            spread rs = spread_of(ratio, reps);
            printf("  %s/copy ", mode_names[m]);
            print_spread(rs, 1);
            printf(": %.1fx faster\n", 1 / rs.med);
        }
    }
    /* the copy path: download against rebuild, subtask by subtask */
    printf("copy path, download (files copied from the store) against rebuild (the restore):\n");
    for (int j = 0; j < NEW_P; j++) {
        double d[MAX_REPS], r[MAX_REPS];
        for (int k = 0; k < reps; k++) {
            d[k] = runs[sc][M_COPY][k][j].download;
            r[k] = runs[sc][M_COPY][k][j].restore;
        }
        spread sd = spread_of(d, reps), sr = spread_of(r, reps);
        printf("  subtask %d: download %.2f s [%.2f, %.2f], rebuild %.2f s [%.2f, %.2f]: "
               "rebuild/download %.1f\n", j, sd.med, sd.min, sd.max, sr.med, sr.min, sr.max,
               sr.med / sd.med);
    }
}

/* ---- calibration ------------------------------------------------------------------------ */

/* The engine's cost model of a rebuild (ck_kstate_rebuild_cost, kstate.h)
 * is calibrated here: over every restore measured (both rescales, every
 * mode, rep and subtask), each phase's wall time over the count it
 * charges is that count's unit cost, in ns (a flop per ns: the model's
 * 1 Gflop/s core). Then the model, with its constants as built, against
 * the measurements: the slowest subtask's modelled CPU time by path, and
 * the ratios to copy, modelled and measured. */
static void calibrate(int reps)
{
    double ns[CK_RRS_NPHASES] = {0};
    double keys = 0, bytes = 0, opened = 0, linked = 0, imported = 0, ranges = 0, fdel = 0,
           flushed = 0, compacted = 0;
    for (int sc = 0; sc < 2; sc++)
        for (int m = 0; m < NMODES; m++)
            for (int k = 0; k < reps; k++)
                for (int j = 0; j < NEW_P; j++) {
                    const ck_rrs_stats *st = &runs[sc][m][k][j].st;
                    for (int p = 0; p < CK_RRS_NPHASES; p++)
                        ns[p] += (double)st->ns[p];
                    keys += (double)st->keys_written;
                    bytes += (double)st->bytes_written;
                    opened += st->opened;
                    linked += st->files_linked;
                    imported += st->files_imported;
                    ranges += st->ranges_deleted;
                    fdel += st->files_deleted;
                    flushed += (double)st->flushed;
                    compacted += (double)st->compacted;
                }
#define PER(a, b) ((b) > 0 ? (a) / (b) : 0.0)
    printf("\ncalibration (value bytes %d): unit costs over every restore, ns (= flops at 1 "
           "Gflop/s), against the model's constants (kstate.h CK_REBUILD_*):\n", value_bytes);
    printf("  per instance opened      %10.0f  (OPEN %.0f)\n", PER(ns[CK_RRS_PH_OPEN], opened),
           CK_REBUILD_OPEN_FLOPS);
    printf("  per key copied           %10.1f  (KEY %.0f + %.0f bytes x BYTE %.2f = %.1f)\n",
           PER(ns[CK_RRS_PH_COPY], keys), CK_REBUILD_KEY_FLOPS, PER(bytes, keys),
           CK_REBUILD_BYTE_FLOPS, CK_REBUILD_KEY_FLOPS + PER(bytes, keys) * CK_REBUILD_BYTE_FLOPS);
    printf("  per byte copied          %10.2f\n", PER(ns[CK_RRS_PH_COPY], bytes));
    printf("  per file linked          %10.0f  (LINK %.0f)\n", PER(ns[CK_RRS_PH_LINK], linked),
           CK_REBUILD_LINK_FLOPS);
    printf("  per file imported        %10.0f  (IMPORT_FILE %.0f; check, export and import)\n",
           PER(ns[CK_RRS_PH_CHECK] + ns[CK_RRS_PH_EXPORT] + ns[CK_RRS_PH_IMPORT], imported),
           CK_REBUILD_IMPORT_FILE_FLOPS);
    printf("  per range deleted        %10.0f  (RANGE %.0f)\n",
           PER(ns[CK_RRS_PH_DELETE_RANGE], ranges), CK_REBUILD_RANGE_FLOPS);
    printf("  per file deleted         %10.0f  (DELETE_FILE %.0f; %.0f files)\n",
           PER(ns[CK_RRS_PH_DELETE_FILES], fdel), CK_REBUILD_DELETE_FILE_FLOPS, fdel);
    printf("  per byte flushed         %10.2f  (FLUSH %.2f; %.0f MB)\n",
           PER(ns[CK_RRS_PH_FLUSH], flushed), CK_STATE_FLUSH_FLOPS_PER_BYTE, flushed / 1e6);
    printf("  per byte compacted       %10.2f  (COMPACT %.2f; %.0f MB)\n",
           PER(ns[CK_RRS_PH_COMPACT], compacted), CK_STATE_COMPACT_FLOPS_PER_BYTE,
           compacted / 1e6);
#undef PER
    static const int olds[2] = {2, 4};
    for (int sc = 0; sc < 2; sc++) {
        double meas[NMODES][MAX_REPS], model[NMODES][MAX_REPS];
        for (int m = 0; m < NMODES; m++)
            for (int k = 0; k < reps; k++) {
                meas[m][k] = slowest(runs[sc][m][k], 1);
                model[m][k] = 0;
                for (int j = 0; j < NEW_P; j++) {
                    ck_kstate_rebuild rb;
                    uint64_t disk;
                    ck_rocks_rebuild_counts(&runs[sc][m][k][j].st, &rb);
                    double t = ck_kstate_rebuild_cost(&rb, 1.0, &disk) / 1e9;
                    if (t > model[m][k])
                        model[m][k] = t;
                }
            }
        printf("  %d -> %d, the slowest subtask, s: measured / modelled CPU:", olds[sc], NEW_P);
        for (int m = 0; m < NMODES; m++)
            printf("  %s %.3f / %.3f", mode_names[m], spread_of(meas[m], reps).med,
                   spread_of(model[m], reps).med);
        printf("\n    ");
        for (int m = M_CLIP; m < NMODES; m++) {
            double rm[MAX_REPS], rx[MAX_REPS];
            for (int k = 0; k < reps; k++) {
                rm[k] = meas[m][k] / meas[M_COPY][k];
                rx[k] = model[M_COPY][k] > 0 ? model[m][k] / model[M_COPY][k] : 0;
            }
            printf("  %s/copy measured %.3f, modelled %.3f", mode_names[m],
                   spread_of(rm, reps).med, spread_of(rx, reps).med);
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    double gib = 1.0;
    int reps = 3, keep = 0;
    const char *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            base = argv[++i];
        else if (!strcmp(argv[i], "--value-bytes") && i + 1 < argc)
            value_bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else if (argv[i][0] != '-' && atof(argv[i]) > 0)
            gib = atof(argv[i]);
        else {
            fprintf(stderr, "usage: bench_rescale [GiB] [--reps N] [--value-bytes B] [--dir DIR] "
                            "[--keep]\n");
            return 2;
        }
    }
    if (value_bytes < 64 || value_bytes > MAX_VALUE_BYTES || value_bytes % 64) {
        fprintf(stderr, "bench_rescale: --value-bytes: a multiple of 64 from 64 to %d\n",
                MAX_VALUE_BYTES);
        return 2;
    }
    if (gib < 0.05 || gib > 4 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "bench_rescale: GiB from 0.05 to 4, reps from 1 to %d\n", MAX_REPS);
        return 2;
    }
    snprintf(root, sizeof(root), "%s/chandy-bench-rescale-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        return 1;
    }
    char local[600];
    snprintf(local, sizeof(local), "%s/local", root);
    mkdir(local, 0755);
    uint64_t nkeys = (uint64_t)(gib * (double)(1u << 30) / (KEY_BYTES + value_bytes));
    printf("bench_rescale: %.2f M keys of %d bytes with values of %d bytes (%.2f GiB), max "
           "parallelism %d, in %s\n", (double)nkeys / 1e6, KEY_BYTES, value_bytes, gib, MAXP,
           root);
    printf("RocksDB backend: write buffer, target file 64 mb, level 1 256 mb; write batches of "
           "2 mb or 500 entries\nold instances:\n");
    fflush(stdout);
    make_store(nkeys);
    static const int olds[2] = {2, 4};
    for (int sc = 0; sc < 2; sc++) {
        printf("%d -> %d:", olds[sc], NEW_P);
        fflush(stdout);
        for (int k = -1; k < reps; k++) /* k = -1: the warm-up */
            for (int m = 0; m < NMODES; m++)
                for (int j = 0; j < NEW_P; j++) {
                    sample x = restore_one(olds[sc], j, (mode)m, k < 0);
                    if (k >= 0)
                        runs[sc][m][k][j] = x;
                    printf(".");
                    fflush(stdout);
                }
        printf("\n");
    }
    for (int sc = 0; sc < 2; sc++)
        report(sc, olds[sc], reps);
    double aim[2][NMODES];
    for (int m = 0; m < NMODES; m++) {
        double t[MAX_REPS];
        for (int k = 0; k < reps; k++)
            t[k] = slowest(runs[0][m][k], 1);
        aim[0][m] = spread_of(t, reps).med;
    }
    calibrate(reps);
    double best = aim[0][M_CLIP] < aim[0][M_INGEST] ? aim[0][M_CLIP] : aim[0][M_INGEST];
    printf("\naim: clip or ingest at least 5x faster than copy on scale-out (2 -> 3): "
           "%.1fx: %s\n", aim[0][M_COPY] / best, aim[0][M_COPY] / best >= 5 ? "met" : "not met");
    if (!keep)
        run_cmd("rm -rf '%s'", root);
    return 0;
}
