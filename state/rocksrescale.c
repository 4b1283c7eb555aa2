#include "rocksrescale.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

/* Flink's RocksDBWriteBatchWrapper: a batch is written at 500 entries or
 * state.backend.rocksdb.write-batch-size bytes (2 mb). */
#define BATCH_ENTRIES 500
#define BATCH_BYTES_DEFAULT (2u << 20)

static const char *const path_names[] = {
#define CK_RRS_PATH_NAME(id, name) name,
    CK_RRS_PATHS(CK_RRS_PATH_NAME)
#undef CK_RRS_PATH_NAME
};

static const char *const phase_names[] = {
#define CK_RRS_PHASE_NAME(id, name) name,
    CK_RRS_PHASES(CK_RRS_PHASE_NAME)
#undef CK_RRS_PHASE_NAME
};

const char *ck_rrs_path_name(int path)
{
    return path >= 0 && path < CK_RRS_NPATHS ? path_names[path] : "?";
}

const char *ck_rrs_phase_name(int phase)
{
    return phase >= 0 && phase < CK_RRS_NPHASES ? phase_names[phase] : "?";
}

uint64_t ck_rrs_total_ns(const ck_rrs_stats *st)
{
    uint64_t t = 0;
    for (int i = 0; i < CK_RRS_NPHASES; i++)
        t += st->ns[i];
    return t;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- choosing ------------------------------------------------------------------- */

int ck_rrs_best_initial(const ck_rrs_source *src, int n, ck_kgr kgr,
                        double threshold)
{
    if (n <= 0)
        return -1;
    if (n == 1)
        return 0; /* Flink's shortcut: the common scale-out */
    int best = 0, bi = -1;
    double bf = -1.0; /* Flink's Score.MIN: (Integer.MIN_VALUE, -1.0) */
    for (int i = 0; i < n; i++) {
        int in = ck_kgr_size(ck_kgr_intersect(src[i].kgr, kgr));
        double f = (double)in / ck_kgr_size(src[i].kgr);
        if (f < threshold)
            continue; /* Score.MIN: never more than the best so far */
        if (bi < 0 || in > bi || (in == bi && f > bf)) {
            best = i;
            bi = in;
            bf = f;
        }
    }
    return best;
}

ck_rrs_path ck_rrs_plan(const ck_rrs_source *src, int n, ck_kgr kgr,
                        const ck_rrs_opts *o, int *initial)
{
    *initial = -1;
    if (o->copy)
        return CK_RRS_COPY;
    if (n > 1 && o->ingest)
        return CK_RRS_INGEST;
    *initial = ck_rrs_best_initial(src, n, kgr, o->overlap);
    if (*initial >= 0 && ck_kgr_equal(src[*initial].kgr, kgr))
        return CK_RRS_REUSE;
    return CK_RRS_CLIP;
}

/* ---- files ------------------------------------------------------------------------ */

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Copies file from to file to (which must not exist). 0 or CK_EIO. */
static int copy_file(const char *from, const char *to, uint64_t *bytes)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return CK_EIO;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        close(in);
        return CK_EIO;
    }
    static const size_t bufsz = 1 << 20;
    char *buf = malloc(bufsz);
    int rc = buf ? CK_OK : CK_ENOMEM;
    while (!rc) {
        ssize_t got = read(in, buf, bufsz);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = CK_EIO;
            break;
        }
        if (got == 0)
            break;
        for (ssize_t at = 0; at < got && !rc;) {
            ssize_t w = write(out, buf + at, (size_t)(got - at));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                rc = CK_EIO;
            else
                at += w;
        }
        *bytes += (uint64_t)got;
    }
    free(buf);
    close(in);
    if (close(out) && !rc)
        rc = CK_EIO;
    return rc;
}

/* Puts the files of directory from into directory to (created), as
 * Flink's restoreInstanceDirectoryFromPath: SSTs hard-linked (copied
 * when they cannot be), the rest copied. Counts them into st. */
static int place_files(const char *from, const char *to, ck_rrs_stats *st, char *err,
                       size_t errlen)
{
    if (mkdir(to, 0755) && errno != EEXIST) {
        fail(err, errlen, "%s: cannot make the directory: %s", to, strerror(errno));
        return CK_EIO;
    }
    DIR *d = opendir(from);
    if (!d) {
        fail(err, errlen, "%s: cannot read the directory: %s", from, strerror(errno));
        return CK_EIO;
    }
    int rc = CK_OK;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char src[1200], dst[1200];
        snprintf(src, sizeof(src), "%s/%s", from, e->d_name);
        snprintf(dst, sizeof(dst), "%s/%s", to, e->d_name);
        struct stat sb;
        if (stat(src, &sb) || !S_ISREG(sb.st_mode))
            continue; /* a subdirectory is none of the instance's */
        size_t nl = strlen(e->d_name);
        int sst = nl > 4 && !strcmp(e->d_name + nl - 4, ".sst");
        st->files_linked++;
        if (sst && link(src, dst) == 0) {
            st->bytes_linked += (uint64_t)sb.st_size;
            continue;
        }
        uint64_t b = 0;
        if ((rc = copy_file(src, dst, &b)))
            fail(err, errlen, "%s: cannot copy it into %s", src, to);
        st->bytes_linked += b;
    }
    closedir(d);
    return rc;
}

/* Removes directory dir and the files in it (no deeper). */
static void remove_flat(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[1200];
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void export_dir(const ck_rrs_target *t, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s.export%d", t->dir, i);
}

/* ---- RocksDB ---------------------------------------------------------------------- */

static void put_be16(char *p, int v)
{
    p[0] = (char)(uint8_t)(v >> 8);
    p[1] = (char)(uint8_t)v;
}

/* a < b, bytewise */
static int key_less(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c < 0 || (c == 0 && al < bl);
}

/* Live files of every column family of h: their count and bytes. */
static void count_files(const ck_rocks_dbh *h, uint32_t *files, uint64_t *bytes)
{
    *files = 0;
    *bytes = 0;
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(h->db);
    for (int i = 0; lf && i < rocksdb_livefiles_count(lf); i++) {
        (*files)++;
        *bytes += rocksdb_livefiles_size(lf, i);
    }
    if (lf)
        rocksdb_livefiles_destroy(lf);
}

/* Opens source i, timed. */
static int open_source(const ck_rrs_target *t, const ck_rrs_source *s, int i, int read_only,
                       ck_rocks_dbh *h, ck_rrs_stats *st, char *err, size_t errlen)
{
    uint64_t t0 = now_ns();
    char why[400] = "";
    int rc = ck_rocks_db_open(t->opts, s->dir, read_only, 0, h, why, sizeof(why));
    st->ns[CK_RRS_PH_OPEN] += now_ns() - t0;
    if (rc)
        fail(err, errlen, "old instance %d (%s): does not open: %s", i, s->dir, why);
    else
        st->opened++;
    return rc;
}

static void close_timed(ck_rocks_dbh *h, ck_rrs_stats *st)
{
    uint64_t t0 = now_ns();
    ck_rocks_db_close(h);
    st->ns[CK_RRS_PH_OPEN] += now_ns() - t0;
}

/*
 * Clips open instance h, which holds key groups cur, to
 * the target's range, as Flink's clipDBWithKeyGroupRange: per column
 * family, first the files wholly in the ranges outside (with
 * delete_files), then a range tombstone over each.
 */
static int clip(const ck_rrs_target *t, ck_rocks_dbh *h, ck_kgr cur, const ck_rrs_opts *o,
                ck_rrs_stats *st, char *err, size_t errlen)
{
    char r[4][2]; /* [from, to) byte prefixes: half-open as RocksDB's ranges are */
    int nr = 0;
    if (cur.start < t->kgr.start) {
        put_be16(r[nr++], cur.start);
        put_be16(r[nr++], t->kgr.start);
    }
    if (cur.end > t->kgr.end) {
        put_be16(r[nr++], t->kgr.end + 1);
        put_be16(r[nr++], cur.end + 1);
    }
    if (!nr)
        return CK_OK;
    for (int c = 0; c < h->ncf; c++) {
        if (c != h->data && !strcmp(h->name[c], "default"))
            continue; /* empty beside CK_ROCKS_DATA_CF: Flink clips its states' only */
        if (o->delete_files) {
            uint64_t t0 = now_ns();
            uint32_t f0, f1;
            uint64_t b0, b1;
            count_files(h, &f0, &b0);
            for (int k = 0; k < nr; k += 2) {
                char why[300];
                if (ck_rocks_delete_files_in_range(h->db, h->cf[c], r[k], 2, r[k + 1], 2, why,
                                                   sizeof(why))) {
                    fail(err, errlen, "%s: deleting files out of range: %s", t->dir, why);
                    return CK_EIO;
                }
            }
            count_files(h, &f1, &b1);
            st->files_deleted += f0 - f1;
            st->bytes_deleted += b0 - b1;
            st->ns[CK_RRS_PH_DELETE_FILES] += now_ns() - t0;
        }
        uint64_t t0 = now_ns();
        for (int k = 0; k < nr; k += 2) {
            char *e = NULL;
            rocksdb_delete_range_cf(h->db, t->wo, h->cf[c], r[k], 2, r[k + 1], 2, &e);
            if (e) {
                fail(err, errlen, "%s: DeleteRange: %s", t->dir, e);
                rocksdb_free(e);
                return CK_EIO;
            }
            st->ranges_deleted++;
        }
        st->ns[CK_RRS_PH_DELETE_RANGE] += now_ns() - t0;
    }
    return CK_OK;
}

/* Flushes the target's keyed-state memtable once it holds write_buffer
 * bytes (as rocksstate's writes do); timed apart from the copy. */
static int maybe_flush(const ck_rrs_target *t, ck_rocks_dbh *h, ck_rrs_stats *st, int force,
                       char *err, size_t errlen)
{
    uint64_t mem = 0;
    if (!force &&
        rocksdb_property_int_cf(h->db, h->cf[h->data], "rocksdb.cur-size-active-mem-table", &mem))
        mem = 0;
    if (!force && mem < t->write_buffer)
        return CK_OK;
    uint64_t t0 = now_ns();
    uint32_t f0, f1;
    uint64_t b0, b1;
    count_files(h, &f0, &b0);
    char *e = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush_cf(h->db, fo, h->cf[h->data], &e);
    rocksdb_flushoptions_destroy(fo);
    count_files(h, &f1, &b1);
    st->ns[CK_RRS_PH_FLUSH] += now_ns() - t0;
    if (e) {
        fail(err, errlen, "%s: flush: %s", t->dir, e);
        rocksdb_free(e);
        return CK_EIO;
    }
    if (f1 > f0) {
        st->flushes++;
        st->flushed += b1 - b0;
    }
    return CK_OK;
}

/* Writes batch b into the target and clears it. */
static int write_batch(const ck_rrs_target *t, ck_rocks_dbh *h, rocksdb_writebatch_t *b,
                       ck_rrs_stats *st, char *err, size_t errlen)
{
    char *e = NULL;
    rocksdb_write(h->db, t->wo, b, &e);
    rocksdb_writebatch_clear(b);
    if (e) {
        fail(err, errlen, "%s: write: %s", t->dir, e);
        rocksdb_free(e);
        return CK_EIO;
    }
    return maybe_flush(t, h, st, 0, err, errlen);
}

/*
 * Copies the keys of the target's range from source i (opened read-only
 * as a temporary instance) into h's keyed-state column family, through
 * write batches, as Flink's copyTempDbIntoBaseDb.
 */
static int copy_source(const ck_rrs_target *t, ck_rocks_dbh *h, const ck_rrs_source *s, int i,
                       const ck_rrs_opts *o, ck_rrs_stats *st, char *err, size_t errlen)
{
    ck_rocks_dbh tmp;
    int rc = open_source(t, s, i, 1, &tmp, st, err, errlen);
    if (rc)
        return rc;
    uint64_t t0 = now_ns(), flush0 = st->ns[CK_RRS_PH_FLUSH];
    uint64_t cap = o->batch_bytes ? o->batch_bytes : BATCH_BYTES_DEFAULT;
    char lo[2], hi[2];
    put_be16(lo, t->kgr.start);
    put_be16(hi, t->kgr.end + 1);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi, 2);
    rocksdb_readoptions_set_fill_cache(ro, 0);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(tmp.db, ro, tmp.cf[tmp.data]);
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    uint64_t in_batch = 0;
    int entries = 0;
    for (rocksdb_iter_seek(it, lo, 2); rocksdb_iter_valid(it) && !rc; rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        const char *v = rocksdb_iter_value(it, &vl);
        st->keys_iterated++;
        if (!key_less(k, kl, hi, 2))
            break; /* the upper bound does this; Flink's own check, kept */
        rocksdb_writebatch_put_cf(b, h->cf[h->data], k, kl, v, vl);
        st->keys_written++;
        st->bytes_written += kl + vl;
        in_batch += kl + vl;
        if (++entries >= BATCH_ENTRIES || in_batch >= cap) {
            rc = write_batch(t, h, b, st, err, errlen);
            in_batch = 0;
            entries = 0;
        }
    }
    if (!rc) {
        char *e = NULL;
        rocksdb_iter_get_error(it, &e);
        if (e) {
            fail(err, errlen, "old instance %d (%s): reading its keys: %s", i, s->dir, e);
            rocksdb_free(e);
            rc = CK_ECORRUPT;
        }
    }
    if (!rc && entries)
        rc = write_batch(t, h, b, st, err, errlen);
    rocksdb_writebatch_destroy(b);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    st->ns[CK_RRS_PH_COPY] += now_ns() - t0 - (st->ns[CK_RRS_PH_FLUSH] - flush0);
    close_timed(&tmp, st);
    if (!rc)
        st->copied++;
    return rc;
}

/* Puts source i's files in the target's directory and opens them there. */
static int open_initial(const ck_rrs_target *t, const ck_rrs_source *s, int i, ck_rocks_dbh *h,
                        ck_rrs_stats *st, char *err, size_t errlen)
{
    uint64_t t0 = now_ns();
    int rc = place_files(s->dir, t->dir, st, err, errlen);
    st->ns[CK_RRS_PH_LINK] += now_ns() - t0;
    if (rc)
        return rc;
    t0 = now_ns();
    char why[400] = "";
    rc = ck_rocks_db_open(t->opts, t->dir, 0, 0, h, why, sizeof(why));
    st->ns[CK_RRS_PH_OPEN] += now_ns() - t0;
    if (rc)
        fail(err, errlen, "old instance %d (%s): does not open: %s", i, s->dir, why);
    else
        st->opened++;
    return rc;
}

/* The CLIP (or REUSE) path over the sources whose flag in use is set:
 * the best of them is the initial instance, the rest are copied. */
static int clip_path(const ck_rrs_target *t, const ck_rrs_source *src, int n, const int *use,
                     const ck_rrs_opts *o, ck_rocks_dbh *h, ck_rrs_stats *st, char *err,
                     size_t errlen)
{
    ck_rrs_source sub[n];
    int idx[n], m = 0;
    for (int i = 0; i < n; i++)
        if (use[i]) {
            sub[m] = src[i];
            idx[m++] = i;
        }
    int b = ck_rrs_best_initial(sub, m, t->kgr, o->overlap);
    int init = idx[b];
    st->initial = init;
    int rc = open_initial(t, &src[init], init, h, st, err, errlen);
    if (rc)
        return rc;
    if (ck_kgr_equal(src[init].kgr, t->kgr)) {
        st->path = CK_RRS_REUSE;
        st->history_kept = 1;
    } else {
        st->path = CK_RRS_CLIP;
        rc = clip(t, h, src[init].kgr, o, st, err, errlen);
    }
    for (int k = 0; k < m && !rc; k++)
        if (k != b)
            rc = copy_source(t, h, &src[idx[k]], idx[k], o, st, err, errlen);
    return rc;
}

/* 1 when every SST file of h has its keys in [kg_start, kg_end]
 * (Flink's checkSstDataAgainstKeyGroupRange over getDBKeyRange: an
 * instance without files does not conform). */
static int conforms(const ck_rocks_dbh *h, ck_kgr kgr)
{
    char lo[2], hi[2];
    put_be16(lo, kgr.start);
    put_be16(hi, kgr.end + 1);
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(h->db);
    if (!lf)
        return 0;
    int n = rocksdb_livefiles_count(lf), ok = n > 0;
    for (int i = 0; i < n && ok; i++) {
        size_t sl, ll;
        const char *s = rocksdb_livefiles_smallestkey(lf, i, &sl);
        const char *l = rocksdb_livefiles_largestkey(lf, i, &ll);
        ok = !key_less(s, sl, lo, 2) && key_less(l, ll, hi, 2);
    }
    rocksdb_livefiles_destroy(lf);
    return ok;
}

/* The INGEST path (Flink's mergeStateHandlesWithClipAndIngest). */
static int ingest_path(const ck_rrs_target *t, const ck_rrs_source *src, int n,
                       const ck_rrs_opts *o, ck_rocks_dbh *h, ck_rrs_stats *st, char *err,
                       size_t errlen)
{
    ck_rocks_export *ex[n];
    int skip[n], nex = 0, rc = CK_OK;
    ck_kgr span = CK_KGR_EMPTY; /* the exported instances' key groups, and between */
    memset(ex, 0, sizeof(ex));
    for (int i = 0; i < n && !rc; i++) {
        skip[i] = 1;
        ck_rocks_dbh tmp;
        if ((rc = open_source(t, &src[i], i, 0, &tmp, st, err, errlen)))
            break;
        uint64_t t0 = now_ns();
        int ok = conforms(&tmp, src[i].kgr);
        st->ns[CK_RRS_PH_CHECK] += now_ns() - t0;
        if (ok) {
            t0 = now_ns();
            char dir[1100], why[400];
            export_dir(t, i, dir, sizeof(dir));
            remove_flat(dir);
            uint32_t files;
            uint64_t bytes;
            if (ck_rocks_export_cf(tmp.db, tmp.cf[tmp.data], dir, &ex[nex], &files, &bytes, why,
                                   sizeof(why))) {
                fail(err, errlen, "old instance %d (%s): export: %s", i, src[i].dir, why);
                rc = CK_EIO;
            } else if (ck_rocks_export_tiers(ex[nex]) > t->nlevels - 1) {
                ck_rocks_export_free(ex[nex]); /* too deep to merge: copied instead */
                ex[nex] = NULL;
                remove_flat(dir);
            } else {
                nex++;
                skip[i] = 0;
                span = ck_kgr_span(span, src[i].kgr);
            }
            st->ns[CK_RRS_PH_EXPORT] += now_ns() - t0;
        }
        close_timed(&tmp, st);
    }
    if (!rc && nex == 0) {
        rc = clip_path(t, src, n, skip, o, h, st, err, errlen); /* Flink's fallback */
    } else if (!rc) {
        st->path = CK_RRS_INGEST;
        uint64_t t0 = now_ns();
        char why[400] = "";
        rc = ck_rocks_db_open(t->opts, t->dir, 0, 1, h, why, sizeof(why));
        st->ns[CK_RRS_PH_OPEN] += now_ns() - t0;
        if (rc)
            fail(err, errlen, "%s: cannot make the instance: %s", t->dir, why);
        t0 = now_ns();
        rocksdb_column_family_handle_t *cf = NULL;
        if (!rc && ck_rocks_import(h->db, t->opts, CK_ROCKS_DATA_CF, ex, nex, t->nlevels, &cf,
                                   &st->files_imported, &st->bytes_imported, why, sizeof(why))) {
            fail(err, errlen, "%s: import: %s", t->dir, why);
            rc = CK_ECORRUPT;
        }
        if (!rc && !(h->name[h->ncf] = strdup(CK_ROCKS_DATA_CF)))
            rc = CK_ENOMEM;
        if (cf && !rc) {
            h->cf[h->ncf] = cf;
            h->data = h->ncf++;
        } else if (cf) {
            rocksdb_column_family_handle_destroy(cf);
        }
        st->ns[CK_RRS_PH_IMPORT] += now_ns() - t0;
        st->imported = (uint32_t)nex;
        if (!rc)
            rc = clip(t, h, span, o, st, err, errlen);
        for (int i = 0; i < n && !rc; i++)
            if (skip[i])
                rc = copy_source(t, h, &src[i], i, o, st, err, errlen);
    }
    for (int i = 0; i < nex; i++)
        ck_rocks_export_free(ex[i]);
    for (int i = 0; i < n; i++) {
        char dir[1100];
        export_dir(t, i, dir, sizeof(dir));
        remove_flat(dir);
    }
    return rc;
}

static int check_args(const ck_rrs_target *t, const ck_rrs_source *src, int n, char *err,
                      size_t errlen)
{
    int maxp = t->max_parallelism;
    if (n < 1) {
        fail(err, errlen, "%s: no old instance to restore from", t->dir);
        return CK_EINVAL;
    }
    if (t->nlevels < 2) {
        fail(err, errlen, "%s: an instance of %d levels", t->dir, t->nlevels);
        return CK_EINVAL;
    }
    if (maxp < 1 || maxp > 32768 || ck_kgr_empty(t->kgr) ||
        !ck_kgr_within(t->kgr, ck_kgr_make(0, maxp - 1))) {
        fail(err, errlen, "%s: key groups [%d, %d] with max parallelism %d: not a range", t->dir,
             t->kgr.start, t->kgr.end, maxp);
        return CK_EINVAL;
    }
    for (int i = 0; i < n; i++) {
        if (!src[i].dir || ck_kgr_empty(src[i].kgr) ||
            !ck_kgr_within(src[i].kgr, ck_kgr_make(0, maxp - 1))) {
            fail(err, errlen, "old instance %d: key groups [%d, %d] with max parallelism %d: "
                              "not a range", i, src[i].kgr.start, src[i].kgr.end, maxp);
            return CK_EINVAL;
        }
        for (int j = 0; j < i; j++)
            if (!ck_kgr_empty(ck_kgr_intersect(src[i].kgr, src[j].kgr))) {
                fail(err, errlen, "old instance %d (%s): key groups [%d, %d] overlap those of "
                                  "old instance %d [%d, %d]", i, src[i].dir, src[i].kgr.start,
                     src[i].kgr.end, j, src[j].kgr.start, src[j].kgr.end);
                return CK_EINVAL;
            }
    }
    return CK_OK;
}

int ck_rrs_restore(const ck_rrs_target *t, const ck_rrs_source *src, int n,
                   const ck_rrs_opts *o, ck_rocks_dbh *out, ck_rrs_stats *st, char *err,
                   size_t errlen)
{
    memset(st, 0, sizeof(*st));
    memset(out, 0, sizeof(*out));
    st->initial = -1;
    int rc = check_args(t, src, n, err, errlen);
    if (rc)
        return rc;
    int initial;
    ck_rrs_path p = ck_rrs_plan(src, n, t->kgr, o, &initial);
    if (p == CK_RRS_COPY) {
        st->path = CK_RRS_COPY;
        uint64_t t0 = now_ns();
        char why[400] = "";
        rc = ck_rocks_db_open(t->opts, t->dir, 0, 1, out, why, sizeof(why));
        st->ns[CK_RRS_PH_OPEN] += now_ns() - t0;
        if (rc)
            fail(err, errlen, "%s: cannot make the instance: %s", t->dir, why);
        for (int i = 0; i < n && !rc; i++)
            rc = copy_source(t, out, &src[i], i, o, st, err, errlen);
    } else if (p == CK_RRS_INGEST) {
        rc = ingest_path(t, src, n, o, out, st, err, errlen);
    } else {
        int use[n];
        for (int i = 0; i < n; i++)
            use[i] = 1;
        rc = clip_path(t, src, n, use, o, out, st, err, errlen);
    }
    if (rc)
        ck_rocks_db_close(out);
    return rc;
}
