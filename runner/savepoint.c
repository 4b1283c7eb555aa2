#include "savepoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "assign.h"
#include "bytes.h"
#include "crc32c.h"
#include "error.h"
#include "jsonin.h"
#include "keygroup.h"
#include "kstate.h"
#include "operator.h"
#include "sinkfs.h"
#include "snapshot.h"
#include "storefs.h"
#include "storekey.h"

/*
 * Reads a regular file: all of it, of at most max bytes (want UINT64_MAX);
 * exactly want bytes, its size (prefix 0); or its first want bytes, of a
 * file at least that long (prefix 1: a merged file, of which only the
 * segments the _metadata lists are read, whatever else it holds).
 * Anything else (a device, a FIFO, a directory, a file of another size)
 * is refused without reading it (ck_jin_open_file), so that a link to
 * /dev/zero or a FIFO neither hangs nor fills memory, and no more is ever
 * read or held than the _metadata declares. Returns 0, CK_ENOTFOUND,
 * CK_EIO (why: the system's reason), CK_ECORRUPT (why: what is wrong with
 * it), CK_ENOMEM.
 */
static int read_file(const char *path, uint64_t want, int prefix, uint64_t max, uint8_t **out,
                     size_t *len, const char **why)
{
    struct stat st;
    int fd = ck_jin_open_file(path, &st, why);
    if (fd < 0)
        return errno == ENOENT ? CK_ENOTFOUND
               : errno == EINVAL || errno == EISDIR ? CK_ECORRUPT
                                                    : CK_EIO;
    int rc = CK_OK;
    uint64_t size = (uint64_t)st.st_size, n = size;
    if (want != UINT64_MAX && prefix) {
        n = want;
        if (size < want) {
            *why = "ends before the segments the _metadata lists (truncated)";
            rc = CK_ECORRUPT;
        }
    } else if (want != UINT64_MAX && size != want) {
        *why = "wrong size (truncated, or not this savepoint's file)";
        rc = CK_ECORRUPT;
    } else if (size > max) {
        *why = "too large for a _metadata file";
        rc = CK_ECORRUPT;
    }
    if (!rc && n > SIZE_MAX - 1)
        rc = CK_ENOMEM;
    size_t off = 0;
    uint8_t *b = rc ? NULL : malloc(n ? (size_t)n : 1);
    if (!rc && !b)
        rc = CK_ENOMEM;
    while (!rc && off < n) {
        ssize_t got = read(fd, b + off, (size_t)n - off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            *why = strerror(errno);
            rc = CK_EIO;
        } else if (got == 0) {
            *why = "it shrank while being read";
            rc = CK_EIO;
        } else {
            off += (size_t)got;
        }
    }
    close(fd);
    if (rc) {
        free(b);
        return rc;
    }
    *out = b;
    *len = (size_t)n;
    return CK_OK;
}

/* The end of the furthest segment of merged file `key` that the
 * _metadata lists (its segments' largest offset + bytes), or UINT64_MAX
 * when one would end past 2^64. */
static uint64_t segments_end(const ck_cp_meta *m, const char *key)
{
    uint64_t end = 0;
    for (uint32_t s = 0; s < m->nsubtasks; s++)
        for (uint32_t k = 0; k < m->tasks[s].n; k++) {
            const ck_handle *h = &m->tasks[s].v[k];
            if (!(h->flags & CK_HANDLE_SEGMENT) || strcmp(h->key, key))
                continue;
            if (h->bytes > UINT64_MAX - h->offset)
                return UINT64_MAX;
            end = h->offset + h->bytes > end ? h->offset + h->bytes : end;
        }
    return end;
}

/* A _metadata file larger than this is not one: a subtask takes at least
 * 40 bytes, and its files under state.storage.fs.memory-threshold go
 * inline in it (at most 1 mb each: 2048 subtasks of 20 kb files are 40 MB
 * and more). */
#define CK_SP_METADATA_MAX (256u << 20)

/* Where the file of store key `key` lies: in the savepoint's directory,
 * or in the shared/ directory beside it. */
static void file_path(const ck_savepoint *sp, const char *key, char *buf, size_t len)
{
    size_t sl = strlen(sp->shared);
    if (sp->shared[0] && !strncmp(key, sp->shared, sl))
        snprintf(buf, len, "%s/../shared/%s", sp->path, key + sl);
    else
        snprintf(buf, len, "%s/%s", sp->path, key + strlen(sp->dir));
}

/* The id a savepoint directory's name ends with (savepoint-<job>-<id>), or
 * -1 when the name is not one. */
static int64_t savepoint_name_id(const char *name)
{
    uint64_t id;
    int savepoint;
    if (ck_sk_parse_dir_name(name, &id, &savepoint) || !savepoint || id > INT64_MAX)
        return -1;
    return (int64_t)id;
}

/*
 * Where a path that is not a snapshot's directory leads (Flink's -s takes
 * a snapshot's path; these are the two places a user has at hand instead):
 *   - a run directory (it holds a run.json): the last savepoint its
 *     run.json lists as completed, in its store/savepoints/ (where the run
 *     wrote it, wherever the run directory is now);
 *   - a directory of savepoints (savepoint-<job>-<id>/ directories with a
 *     _metadata): the one with the highest id, unless two jobs' share it.
 * Writes the snapshot's directory into out. Returns 0, CK_ENOTFOUND (path
 * is neither: the caller says so), or CK_EINVAL / CK_EIO / CK_ENOMEM with
 * one line in err naming the file and what is wrong.
 */
static int sp_locate(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
    char file[700];
    snprintf(file, sizeof(file), "%s/run.json", path);
    uint8_t *text = NULL;
    size_t len = 0;
    const char *why = "";
    int rc = read_file(file, UINT64_MAX, 0, (uint64_t)1 << 30, &text, &len, &why);
    if (rc == CK_OK) {
        cJSON *run = cJSON_ParseWithLength((const char *)text, len);
        free(text);
        const cJSON *sps = cJSON_GetObjectItemCaseSensitive(run, "savepoints"), *s;
        const cJSON *list = cJSON_IsArray(sps) ? sps : NULL;
        const char *last = NULL;
        cJSON_ArrayForEach(s, list)
        {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "status");
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "path");
            if (cJSON_IsString(st) && !strcmp(st->valuestring, "completed") &&
                cJSON_IsString(p))
                last = p->valuestring;
        }
        const char *name = last ? strrchr(last, '/') : NULL;
        name = name ? name + 1 : last;
        if (!run || !cJSON_IsArray(sps) || !name || savepoint_name_id(name) < 0) {
            snprintf(err, errlen,
                     "%s: %s: expected a run that took a savepoint (a `savepoint` event), or "
                     "give the path of a savepoint or checkpoint directory",
                     file,
                     !run                    ? "not a JSON document"
                     : !cJSON_IsArray(sps)   ? "savepoints: missing (not a chandy run.json)"
                     : !name                 ? "savepoints: none completed"
                                             : "savepoints: the last completed one's path does "
                                               "not end in a savepoint's directory");
            cJSON_Delete(run);
            return CK_EINVAL;
        }
        int n = snprintf(out, outlen, "%s/store/savepoints/%s", path, name);
        cJSON_Delete(run);
        if (n < 0 || (size_t)n >= outlen) {
            snprintf(err, errlen, "%s: the savepoint's path is longer than %zu bytes", file,
                     outlen - 1);
            return CK_EINVAL;
        }
        return CK_OK;
    }
    if (rc != CK_ENOTFOUND) {
        snprintf(err, errlen, "%s: %s", file, rc == CK_ENOMEM ? "out of memory" : why);
        return rc == CK_ENOMEM ? CK_ENOMEM : CK_EIO;
    }
    /* A directory of savepoints: the latest. */
    DIR *d = opendir(path);
    if (!d)
        return CK_ENOTFOUND;
    char best[256] = "", tie[256] = "";
    int64_t best_id = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t id = savepoint_name_id(e->d_name);
        struct stat st;
        snprintf(file, sizeof(file), "%s/%s/_metadata", path, e->d_name);
        if (id < 0 || id < best_id || strlen(e->d_name) >= sizeof(best) || stat(file, &st) ||
            !S_ISREG(st.st_mode))
            continue;
        if (id == best_id) {
            /* Two jobs' savepoints of one id: which one is meant? */
            snprintf(tie, sizeof(tie), "%s", e->d_name);
            continue;
        }
        best_id = id;
        snprintf(best, sizeof(best), "%s", e->d_name);
        tie[0] = 0;
    }
    closedir(d);
    if (best_id < 0)
        return CK_ENOTFOUND;
    if (tie[0]) {
        snprintf(err, errlen,
                 "%s: %s and %s are both savepoint %lld, of two jobs: give the path of the one "
                 "to start from",
                 path, strcmp(best, tie) < 0 ? best : tie, strcmp(best, tie) < 0 ? tie : best,
                 (long long)best_id);
        return CK_EINVAL;
    }
    int n = snprintf(out, outlen, "%s/%s", path, best);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "%s/%s: the savepoint's path is longer than %zu bytes", path, best,
                 outlen - 1);
        return CK_EINVAL;
    }
    return CK_OK;
}

int ck_sp_open(ck_savepoint *sp, const char *path, char *err, size_t errlen)
{
    memset(sp, 0, sizeof(*sp));
    if (!path[0]) {
        snprintf(err, errlen, "the savepoint path is empty: expected a savepoint directory");
        return CK_EINVAL;
    }
    if (strlen(path) >= sizeof(sp->path)) {
        snprintf(err, errlen, "%.200s...: the savepoint path is longer than %zu bytes", path,
                 sizeof(sp->path) - 1);
        return CK_EINVAL;
    }
    snprintf(sp->path, sizeof(sp->path), "%s", path);
    size_t pl = strlen(sp->path);
    while (pl > 1 && sp->path[pl - 1] == '/')
        sp->path[--pl] = 0;
    if (pl >= 10 && !strcmp(sp->path + pl - 10, "/_metadata"))
        sp->path[pl - 10] = 0;
    else if (!strcmp(sp->path, "_metadata"))
        snprintf(sp->path, sizeof(sp->path), ".");
    char file[sizeof(sp->path) + CK_STORE_KEY_MAX + 16];
    snprintf(file, sizeof(file), "%s/_metadata", sp->path);
    const char *why = "";
    int rc = read_file(file, UINT64_MAX, 0, CK_SP_METADATA_MAX, &sp->metadata, &sp->metadata_len,
                       &why);
    int located = 0;
    if (rc == CK_ENOTFOUND) {
        /* A run directory, or a directory of savepoints: the one it names. */
        char found[sizeof(sp->path)];
        int lrc = sp_locate(sp->path, found, sizeof(found), err, errlen);
        if (lrc && lrc != CK_ENOTFOUND)
            return lrc;
        if (lrc == CK_OK) {
            located = 1;
            snprintf(sp->path, sizeof(sp->path), "%s", found);
            snprintf(file, sizeof(file), "%s/_metadata", sp->path);
            rc = read_file(file, UINT64_MAX, 0, CK_SP_METADATA_MAX, &sp->metadata,
                           &sp->metadata_len, &why);
        }
    }
    if (rc) {
        snprintf(err, errlen, "%s: %s", file,
                 rc == CK_ENOTFOUND && located
                     ? "no such file: the savepoint the run's run.json names is gone"
                 : rc == CK_ENOTFOUND ? "no such file: not a savepoint or checkpoint directory, "
                                        "a run directory (with a run.json) or a directory of "
                                        "savepoints"
                 : rc == CK_ENOMEM ? "out of memory"
                                   : why);
        return rc == CK_ENOTFOUND ? CK_EIO : rc;
    }
    rc = ck_cp_meta_decode(sp->metadata, sp->metadata_len, &sp->meta, &why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", file, rc == CK_ENOMEM ? "out of memory" : why);
        ck_sp_free(sp);
        return rc;
    }
    /* Every canonical file sits in the same directory of the store; the
     * files an incremental or changelog checkpoint shares with others, in
     * the job's shared/ beside it. */
    const char *k0 = NULL;
    for (uint32_t s = 0; s < sp->meta.nsubtasks && !k0; s++)
        for (uint32_t k = 0; k < sp->meta.tasks[s].n && !k0; k++)
            if (sp->meta.tasks[s].v[k].kind == CK_HANDLE_SNAPSHOT)
                k0 = sp->meta.tasks[s].v[k].key;
    if (!k0) {
        snprintf(err, errlen, "%s: lists no canonical state file (expected one per subtask)",
                 file);
        ck_sp_free(sp);
        return CK_ECORRUPT;
    }
    if (ck_sk_dirs_of(k0, sp->dir, sizeof(sp->dir), sp->shared, sizeof(sp->shared))) {
        snprintf(err, errlen,
                 "%s: state file \"%s\" is not in a checkpoint's or savepoint's directory", file,
                 k0);
        ck_sp_free(sp);
        return CK_ECORRUPT;
    }
    uint32_t nfiles = 0;
    for (uint32_t s = 0; s < sp->meta.nsubtasks; s++)
        nfiles += sp->meta.tasks[s].n;
    sp->files = calloc(nfiles, sizeof(*sp->files));
    if (!sp->files) {
        snprintf(err, errlen, "out of memory");
        ck_sp_free(sp);
        return CK_ENOMEM;
    }
    size_t dl = strlen(sp->dir), sl = strlen(sp->shared);
    char meta_file[sizeof(file)];
    snprintf(meta_file, sizeof(meta_file), "%s", file);
    for (uint32_t s = 0; s < sp->meta.nsubtasks; s++) {
        for (uint32_t k = 0; k < sp->meta.tasks[s].n; k++) {
            const ck_handle *h = &sp->meta.tasks[s].v[k];
            const char *key = h->key;
            int in_dir = !strncmp(key, sp->dir, dl) && !strchr(key + dl, '/');
            int in_shared = h->kind != CK_HANDLE_SNAPSHOT && !strncmp(key, sp->shared, sl) &&
                            !strchr(key + sl, '/');
            if ((!in_dir && !in_shared) || !ck_storefs_key_ok(key)) {
                snprintf(err, errlen, "%s: state file \"%s\" is not in %s%s%s", meta_file, key,
                         sp->dir, h->kind == CK_HANDLE_SNAPSHOT ? "" : " or ",
                         h->kind == CK_HANDLE_SNAPSHOT ? "" : sp->shared);
                ck_sp_free(sp);
                return CK_ECORRUPT;
            }
            file_path(sp, key, file, sizeof(file));
            ck_sp_file *f = &sp->files[sp->nfiles++];
            f->subtask = s;
            f->h = h;
            /* a segment of a merged file: the file is read once, by the
             * first handle of its key, and each segment checked in it */
            int seg = (h->flags & CK_HANDLE_SEGMENT) != 0;
            f->holder = sp->nfiles - 1;
            for (uint32_t e = 0; seg && e + 1 < sp->nfiles && f->holder == sp->nfiles - 1; e++)
                if (sp->files[e].data && (sp->files[e].h->flags & CK_HANDLE_SEGMENT) &&
                    !strcmp(sp->files[e].h->key, key))
                    f->holder = e;
            if (h->flags & CK_HANDLE_INLINE) { /* in the _metadata itself */
                rc = (f->data = malloc(h->bytes ? h->bytes : 1)) ? CK_OK : CK_ENOMEM;
                if (!rc)
                    memcpy(f->data, h->data, h->bytes);
                f->len = (size_t)h->bytes;
                snprintf(file, sizeof(file), "%s (%s, inline)", meta_file, key);
            } else {
                /* a merged file up to its last segment the _metadata
                 * lists; any other, of exactly the size it declares */
                uint64_t want = seg ? segments_end(&sp->meta, key) : h->bytes;
                if (f->holder != sp->nfiles - 1)
                    rc = CK_OK;
                else if (want == UINT64_MAX) {
                    why = "a segment the _metadata lists ends past 2^64 bytes";
                    rc = CK_ECORRUPT;
                } else
                    rc = read_file(file, want, seg, UINT64_MAX, &f->data, &f->len, &why);
            }
            const ck_sp_file *hf = &sp->files[f->holder];
            if (!rc && seg && (h->offset > hf->len || h->bytes > hf->len - h->offset)) {
                why = "ends before the segment the _metadata lists (truncated)";
                rc = CK_ECORRUPT;
            }
            if (rc) {
                snprintf(err, errlen, "%s: %s", file,
                         rc == CK_ENOTFOUND ? "missing (the _metadata lists it)"
                         : rc == CK_ENOMEM  ? "out of memory"
                                            : why);
                ck_sp_free(sp);
                return rc == CK_ENOTFOUND ? CK_EIO : rc;
            }
            const uint8_t *d = hf->data + h->offset;
            size_t n = seg ? h->bytes : hf->len;
            if (ck_handle_crc_whole(h) ? ck_crc32c(0, d, n) != h->crc
                                       : n < 4 || ck_get_u32(d + n - 4) != h->crc ||
                                             ck_crc32c(0, d, n - 4) != h->crc) {
                snprintf(err, errlen, "%s: checksum mismatch (damaged)", file);
                ck_sp_free(sp);
                return CK_ECORRUPT;
            }
        }
    }
    return CK_OK;
}

int ck_sp_is_latest_checkpoint(const ck_savepoint *sp)
{
    if (sp->meta.flags & CK_CP_FLAG_SAVEPOINT)
        return 0;
    char dir[sizeof(sp->path) + 8];
    snprintf(dir, sizeof(dir), "%s/..", sp->path);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int latest = 1;
    struct dirent *e;
    while (latest && (e = readdir(d))) {
        uint64_t id;
        int savepoint;
        if (ck_sk_parse_dir_name(e->d_name, &id, &savepoint) || savepoint)
            continue;
        char meta[sizeof(dir) + 300];
        snprintf(meta, sizeof(meta), "%s/%s/" CK_SK_METADATA, dir, e->d_name);
        if (id > sp->meta.id && access(meta, F_OK) == 0)
            latest = 0;
    }
    closedir(d);
    return latest;
}

/* Calls fn for each sink capture of the savepoint's state files (their
 * subtask with it); stops at fn's first non-zero return and returns it.
 * CK_ECORRUPT / CK_ENOMEM (a file does not decode), with one line in err. */
static int each_sink(const ck_savepoint *sp,
                     int (*fn)(void *arg, const ck_sink_capture *k, int subtask), void *arg,
                     char *err, size_t errlen)
{
    for (uint32_t f = 0; f < sp->nfiles; f++) {
        if (sp->files[f].h->kind != CK_HANDLE_SNAPSHOT)
            continue;
        ck_snapshot s;
        const char *why;
        int rc = ck_snap_decode(sp->files[f].data, sp->files[f].len, &s, &why);
        if (rc) {
            snprintf(err, errlen, "%s/%s: %s", sp->path, sp->files[f].h->key + strlen(sp->dir),
                     rc == CK_ENOMEM ? "out of memory" : why);
            return rc;
        }
        for (int k = 0; k < s.nsinks && !rc; k++)
            rc = fn(arg, &s.sinks[k], (int)s.subtask);
        ck_snapshot_free(&s);
        if (rc)
            return rc;
    }
    return CK_OK;
}

struct carry {
    const char *from, *to;
    uint32_t *epoch;
    char *err;
    size_t errlen;
};

static int carry_one(void *arg, const ck_sink_capture *k, int subtask)
{
    struct carry *c = arg;
    uint64_t top = k->open_txn;
    for (int t = 0; t < k->npending; t++)
        top = k->pending[t] > top ? k->pending[t] : top;
    if ((uint32_t)(top >> 32) + 1 > *c->epoch)
        *c->epoch = (uint32_t)(top >> 32) + 1;
    for (int t = 0; t < k->npending; t++)
        if (ck_sinkfs_carry(c->from, c->to, ck_sink_id(k->op, subtask), k->pending[t])) {
            snprintf(c->err, c->errlen, "%s: cannot carry transaction %llu of sink %d over: %s",
                     c->from, (unsigned long long)k->pending[t], k->op, strerror(errno));
            return CK_EIO;
        }
    return CK_OK;
}

int ck_sp_carry_sinks(const ck_savepoint *sp, const char *from, const char *to, uint32_t *epoch,
                      char *err, size_t errlen)
{
    *epoch = 0;
    if (ck_storefs_mkdirs(to)) {
        snprintf(err, errlen, "%s: cannot create: %s", to, strerror(errno));
        return CK_EIO;
    }
    struct carry c = {from, to, epoch, err, errlen};
    return each_sink(sp, carry_one, &c, err, errlen);
}

struct cut {
    ck_sinkfs_cut *v;
    size_t n, cap;
};

static int cut_one(void *arg, const ck_sink_capture *k, int subtask)
{
    struct cut *c = arg;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        ck_sinkfs_cut *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = (ck_sinkfs_cut){.sink = ck_sink_id(k->op, subtask), .first_after = k->open_txn};
    return CK_OK;
}

int ck_sp_sink_cut(const ck_savepoint *sp, ck_sinkfs_cut **cut, size_t *n, char *err,
                   size_t errlen)
{
    struct cut c = {0};
    int rc = each_sink(sp, cut_one, &c, err, errlen);
    if (rc == CK_ENOMEM && !err[0])
        snprintf(err, errlen, "%s: out of memory", sp->path);
    if (rc) {
        free(c.v);
        c.v = NULL;
        c.n = 0;
    }
    *cut = c.v;
    *n = c.n;
    return rc;
}

int ck_sp_install(const ck_savepoint *sp, const char *store_root, char *err, size_t errlen)
{
    char key[CK_STORE_KEY_MAX];
    for (uint32_t f = 0; f < sp->nfiles; f++) {
        if (sp->files[f].holder != f || /* a merged file, written with its first segment */
            !ck_handle_stored(sp->files[f].h)) /* in the _metadata */
            continue;
        if (ck_storefs_put(store_root, sp->files[f].h->key, sp->files[f].data, sp->files[f].len,
                           0)) {
            snprintf(err, errlen, "%s/%s: cannot write: %s", store_root, sp->files[f].h->key,
                     strerror(errno));
            return CK_EIO;
        }
    }
    if (ck_sk_metadata(key, sizeof(key), sp->dir)) {
        snprintf(err, errlen, "%s: not a snapshot's directory", sp->dir);
        return CK_EINVAL;
    }
    if (ck_storefs_put(store_root, key, sp->metadata, sp->metadata_len, 0)) {
        snprintf(err, errlen, "%s/%s: cannot write: %s", store_root, key, strerror(errno));
        return CK_EIO;
    }
    return CK_OK;
}

void ck_sp_free(ck_savepoint *sp)
{
    for (uint32_t f = 0; f < sp->nfiles; f++)
        free(sp->files[f].data);
    free(sp->files);
    sp->nfiles = 0;
    free(sp->metadata);
    ck_cp_meta_free(&sp->meta);
    sp->files = NULL;
    sp->metadata = NULL;
}

int ck_sp_run_dir(const ck_savepoint *sp, char *buf, size_t len)
{
    /* path = <run>/store/<dir without its slash> */
    char tail[200];
    snprintf(tail, sizeof(tail), "/store/%s", sp->dir);
    size_t tl = strlen(tail), pl = strlen(sp->path);
    tail[--tl] = 0; /* the trailing slash */
    if (pl <= tl || strcmp(sp->path + pl - tl, tail))
        return 0;
    snprintf(buf, len, "%.*s", (int)(pl - tl), sp->path);
    return 1;
}

/* Index in g->v[v].ops of job operator op, or -1. */
static int op_in_vertex(const ck_graph *g, int v, int op)
{
    for (int k = 0; k < g->v[v].nops; k++)
        if (g->v[v].ops[k] == op)
            return k;
    return -1;
}

/* The check of one state file against vertex v, subtask i of the job:
 * the snapshot's subtask i of parallelism `old_p` of the vertex the
 * assignment matched to job vertex v (assign.h); max_parallelism: per
 * job operator, the assignment's. */
static int check_file(const ck_savepoint *sp, const char *file, const ck_snapshot *s,
                      const ck_graph *g, const ck_config *cfg, const ck_topic *topic, int v,
                      int i, int old_p, const int *max_parallelism, char *err, size_t errlen)
{
    const ck_vertex *vx = &g->v[v];
    if (s->vertex != v || s->subtask != i || s->parallelism != old_p) {
        snprintf(err, errlen,
                 "%s/%s: holds subtask %d of %d of vertex %d, where the _metadata lists "
                 "subtask %d of %d of vertex %d (the job's \"%s\")",
                 sp->path, file, s->subtask, s->parallelism, s->vertex, i, old_p, v, vx->name);
        return CK_EINVAL;
    }
    if (s->finished)
        return CK_OK; /* finished there: it has no state, and stays finished */
    for (int k = 0; k < s->nkeyed; k++) {
        const ck_snap_keyed *ks = &s->keyed[k];
        const ck_op_spec *op = ks->op >= 0 && ks->op < g->spec.nops ? &g->spec.ops[ks->op] : NULL;
        if (!op || op_in_vertex(g, v, ks->op) < 0 || op->kind != ks->kind) {
            if (!op)
                snprintf(err, errlen,
                         "%s/%s: holds the keyed state of operator %d (of kind %s), and the job "
                         "has %d operators",
                         sp->path, file, ks->op, ck_op_kind_name(ks->kind), g->spec.nops);
            else
                snprintf(err, errlen,
                         "%s/%s: holds the keyed state of operator %d (of kind %s) in vertex %d, "
                         "where the job has operator %d \"%s\" (of kind %s) in vertex %d",
                         sp->path, file, ks->op, ck_op_kind_name(ks->kind), v, ks->op, op->name,
                         ck_op_kind_name(op->kind), g->op_vertex[ks->op]);
            return CK_EINVAL;
        }
        if (max_parallelism[ks->op] != ks->max_parallelism) {
            snprintf(err, errlen,
                     "%s/%s: operator %d \"%s\" has its keyed state in %d key groups, where "
                     "the _metadata says its max parallelism is %d",
                     sp->path, file, ks->op, op->name, ks->max_parallelism,
                     max_parallelism[ks->op]);
            return CK_EINVAL;
        }
    }
    int is_source = g->spec.ops[vx->ops[0]].kind == CK_OP_SOURCE;
    if (s->has_source != is_source) {
        snprintf(err, errlen, "%s/%s: %s source offsets, and the job's vertex %d \"%s\" %s",
                 sp->path, file, s->has_source ? "holds" : "holds no", v, vx->name,
                 is_source ? "is a source" : "is not a source");
        return CK_EINVAL;
    }
    int nparts = topic->ops->npartitions(topic->ctx);
    for (int k = 0; s->has_source && k < s->source.nparts; k++) {
        /* any partition of the input: the partitions a source subtask
         * reads are those its enumerator dealt it, which after a rescale
         * are not the owner formula's (each once: ck_sp_check_job) */
        int p = s->source.parts[k];
        if (p < 0 || p >= nparts) {
            snprintf(err, errlen,
                     "%s/%s: holds the offset of partition %d, which the input does not have "
                     "(it has %d partitions)",
                     sp->path, file, p, nparts);
            return CK_EINVAL;
        }
        int64_t size = topic->ops->size(topic->ctx, p);
        if (s->source.offsets[k] > size) {
            snprintf(err, errlen,
                     "%s/%s: partition %d was read up to offset %lld, past the end of this "
                     "run's input (%lld records)",
                     sp->path, file, p, (long long)s->source.offsets[k], (long long)size);
            return CK_EINVAL;
        }
    }
    int two_phase = ck_cfg(cfg, CK_CFG_CP_INTERVAL) > 0 &&
                    ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE;
    for (int k = 0; k < s->nsinks; k++) {
        int op = s->sinks[k].op;
        if (op < 0 || op >= g->spec.nops || op_in_vertex(g, v, op) < 0 ||
            g->spec.ops[op].kind != CK_OP_SINK) {
            snprintf(err, errlen,
                     "%s/%s: holds the transactions of a sink, operator %d, which the job's "
                     "vertex %d \"%s\" does not have",
                     sp->path, file, op, v, vx->name);
            return CK_EINVAL;
        }
        if (!two_phase) {
            snprintf(err, errlen,
                     "%s/%s: holds sink transactions, and the job's sinks write without them "
                     "(they do with exactly-once checkpoints: "
                     "execution.checkpointing.interval and .mode)",
                     sp->path, file);
            return CK_EINVAL;
        }
    }
    return CK_OK;
}

/* The check of a file an incremental or changelog checkpoint keeps under
 * shared/ (handle h) of the snapshot's subtask i of parallelism old_p of
 * job vertex v: the keyed state of one of its operators, in that
 * subtask's key groups, in a form the job's state backend reads. */
static int check_shared(const ck_savepoint *sp, const ck_handle *h, const ck_graph *g,
                        const ck_config *cfg, int v, int i, int old_p, const int *max_parallelism,
                        char *err, size_t errlen)
{
    const char *what = ck_handle_kind_name(h->kind);
    char file[sizeof(sp->path) + CK_STORE_KEY_MAX + 16];
    file_path(sp, h->key, file, sizeof(file));
    const ck_op_spec *op = h->op < (uint32_t)g->spec.nops ? &g->spec.ops[h->op] : NULL;
    if (!op || op_in_vertex(g, v, (int)h->op) < 0 || !ck_op_keyed(op->kind)) {
        snprintf(err, errlen,
                 "%s: a %s of the keyed state of operator %u, which vertex %d \"%s\" "
                 "of the job does not have",
                 file, what, h->op, v, g->v[v].name);
        return CK_EINVAL;
    }
    ck_kgr own = ck_kg_range(i, old_p, max_parallelism[h->op]);
    if (!ck_kgr_equal(h->kgr, own)) {
        snprintf(err, errlen,
                 "%s: a %s of key groups %d to %d, where the _metadata's subtask %d of %d of "
                 "\"%s\" had %d to %d",
                 file, what, h->kgr.start, h->kgr.end, i, old_p, op->name, own.start, own.end);
        return CK_EINVAL;
    }
    int rocks = ck_cfg(cfg, CK_CFG_STATE_BACKEND) == CK_BACKEND_ROCKSDB;
    int clog = ck_cfg(cfg, CK_CFG_CLOG_ENABLED) != 0;
    if ((h->kind == CK_HANDLE_CHANGELOG || h->kind == CK_HANDLE_MATERIAL) && !clog) {
        snprintf(err, errlen,
                 "%s: a %s, and the job's state.changelog.enabled is false: enable "
                 "it, or start from a savepoint",
                 file, what);
        return CK_EINVAL;
    }
    if (ck_handle_crc_whole(h) && !rocks) {
        snprintf(err, errlen,
                 "%s: a %s, and the job's state.backend.type is hashmap: use "
                 "rocksdb, or start from a savepoint",
                 file, what);
        return CK_EINVAL;
    }
    if (h->kind < CK_HANDLE_NATIVE || h->kind > CK_HANDLE_MATERIAL) {
        snprintf(err, errlen, "%s: a file of unknown kind %u", file, h->kind);
        return CK_ECORRUPT;
    }
    return CK_OK;
}

int ck_sp_check_job(ck_savepoint *sp, ck_graph *g, const ck_config *cfg,
                    const ck_topic *topic, char *err, size_t errlen)
{
    /* The state assignment decides (assign.h), the same the job manager
     * makes when it deploys: whether the snapshot restores into this job,
     * and whether its subtasks can apply it. */
    char why[400];
    ck_asg a;
    if (errlen)
        err[0] = 0;
    int rc = ck_asg_plan(&a, &sp->meta, g, cfg, NULL, 0, why, sizeof(why));
    if (!rc)
        rc = ck_asg_applicable(&a, &sp->meta, g, why, sizeof(why));
    if (rc) {
        ck_asg_free(&a);
        if (rc == CK_ENOMEM)
            snprintf(err, errlen, "%s: out of memory", sp->path);
        else
            snprintf(err, errlen, "%s: %s", sp->path, why);
        return rc;
    }
    size_t dl = strlen(sp->dir);
    /* The handles of old global subtask k are the state of the old vertex
     * the assignment matched to job vertex v, subtask i of it. Each
     * partition's offset is held by one source subtask's file alone. */
    int nparts = topic->ops->npartitions(topic->ctx);
    uint8_t *seen = calloc((size_t)g->nv * (size_t)(nparts + 1) + 1, 1);
    if (!seen) {
        ck_asg_free(&a);
        snprintf(err, errlen, "%s: out of memory", sp->path);
        return CK_ENOMEM;
    }
    for (uint32_t f = 0; f < sp->nfiles && !rc; f++) {
        uint32_t k = sp->files[f].subtask;
        int v = -1, i = 0, old_p = 0;
        for (int nv = 0; nv < g->nv; nv++) {
            int o = a.old_vertex[nv];
            uint32_t op = sp->meta.nvertices ? sp->meta.vertices[o].parallelism
                                             : (uint32_t)g->v[o].parallelism;
            if (k >= a.old_base[o] && k < a.old_base[o] + op) {
                v = nv;
                i = (int)(k - a.old_base[o]);
                old_p = (int)op;
            }
        }
        if (sp->files[f].h->kind != CK_HANDLE_SNAPSHOT) {
            rc = check_shared(sp, sp->files[f].h, g, cfg, v, i, old_p, a.max_parallelism, err,
                              errlen);
            continue;
        }
        const char *name = sp->files[f].h->key + dl;
        ck_snapshot s;
        const char *swhy;
        rc = ck_snap_decode(sp->files[f].data, sp->files[f].len, &s, &swhy);
        if (rc) {
            snprintf(err, errlen, "%s/%s: %s", sp->path, name,
                     rc == CK_ENOMEM ? "out of memory" : swhy);
            rc = rc == CK_ENOMEM ? CK_ENOMEM : CK_ECORRUPT;
            break;
        }
        rc = check_file(sp, name, &s, g, cfg, topic, v, i, old_p, a.max_parallelism, err, errlen);
        for (int q = 0; !rc && s.has_source && !s.finished && q < s.source.nparts; q++) {
            size_t at = (size_t)v * (size_t)(nparts + 1) + (size_t)s.source.parts[q];
            if (seen[at]) {
                snprintf(err, errlen,
                         "%s/%s: holds the offset of partition %d, which another source "
                         "subtask's file holds too",
                         sp->path, name, s.source.parts[q]);
                rc = CK_EINVAL;
            }
            seen[at] = 1;
        }
        ck_snapshot_free(&s);
    }
    /* The whole plan, with the operator state dealt as the job manager
     * deals it (from the _metadata's counts; of an older one, the sources'
     * partitions by the topic's rule): checked (its invariants) before the
     * run relies on it. */
    ck_asg_opstate *os = rc ? NULL : calloc(CK_ASG_MAX_OPSTATES, sizeof(*os));
    uint32_t *parts = NULL;
    int nos = 0;
    if (!rc && !os)
        rc = CK_ENOMEM;
    if (!rc) {
        nos = ck_asg_opstate_from_meta(&sp->meta, g, topic ? topic->name : NULL,
                                       topic ? topic->ops->npartitions(topic->ctx) : 0, os,
                                       CK_ASG_MAX_OPSTATES, &parts, why, sizeof(why));
        if (nos < 0) {
            rc = nos;
            snprintf(err, errlen, "%s: %s", sp->path, rc == CK_ENOMEM ? "out of memory" : why);
        }
    }
    ck_asg full;
    if (!rc && (rc = ck_asg_plan(&full, &sp->meta, g, cfg, os, nos, why, sizeof(why))) == CK_OK) {
        ck_inv inv;
        if (ck_asg_check(&full, &sp->meta, g, &inv)) {
            snprintf(err, errlen, "%s: the state assignment is wrong: %s", sp->path, inv.what);
            rc = CK_EINVAL;
        }
        ck_asg_free(&full);
    } else if (rc && !err[0]) {
        snprintf(err, errlen, "%s: %s", sp->path, rc == CK_ENOMEM ? "out of memory" : why);
    }
    if (!rc)
        ck_asg_adopt(&a, g); /* the snapshot's max parallelism, where the job set none */
    free(seen);
    free(os);
    free(parts);
    ck_asg_free(&a);
    return rc;
}
