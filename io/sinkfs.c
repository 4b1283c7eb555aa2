#include "sinkfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "element.h" /* the record decoder: faults count the records they touch */
#include "error.h"
#include "storefs.h"

int ck_sinkfs_init(ck_sinkfs *f, const char *dir)
{
    memset(f, 0, sizeof(*f));
    if (strlen(dir) + 48 >= sizeof(f->dir))
        return CK_EINVAL;
    snprintf(f->dir, sizeof(f->dir), "%s", dir);
    return CK_OK;
}

void ck_sinkfs_hold(ck_sinkfs *f, size_t bytes)
{
    f->hold = bytes;
}

static int flush_slot(ck_sinkfs *f, ck_sinkfs_slot *s);

int ck_sinkfs_flush(ck_sinkfs *f)
{
    int rc = CK_OK, err = 0;
    for (int i = 0; i < f->n; i++) {
        int e = flush_slot(f, &f->s[i]);
        if (e && !rc) {
            rc = e;
            err = errno; /* the first failure's, whatever the later ones set */
        }
    }
    if (rc)
        errno = err;
    return rc;
}

int ck_sinkfs_close(ck_sinkfs *f)
{
    int rc = ck_sinkfs_flush(f), e = errno;
    for (int i = 0; i < f->n; i++) {
        if (f->s[i].fd >= 0)
            close(f->s[i].fd);
        if (f->s[i].part_fd >= 0)
            close(f->s[i].part_fd);
        free(f->s[i].held);
    }
    free(f->s);
    f->s = NULL;
    f->n = f->cap = 0;
    errno = e;
    return rc;
}

/* The slot of a sink, made on first use; NULL when out of memory. The
 * slots are kept in sink order, found by bisection (a thousand sinks). */
static ck_sinkfs_slot *slot(ck_sinkfs *f, uint32_t sink)
{
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (f->s[mid].sink < sink)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->n && f->s[lo].sink == sink)
        return &f->s[lo];
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        ck_sinkfs_slot *v = realloc(f->s, (size_t)cap * sizeof(*v));
        if (!v)
            return NULL;
        f->s = v;
        f->cap = cap;
    }
    memmove(&f->s[lo + 1], &f->s[lo], (size_t)(f->n - lo) * sizeof(*f->s));
    f->n++;
    ck_sinkfs_slot *s = &f->s[lo];
    *s = (ck_sinkfs_slot){.sink = sink, .fd = -1, .part_fd = -1};
    return s;
}

static void part_name(uint32_t sink, uint64_t txn, int finished, char *buf, size_t len)
{
    snprintf(buf, len, "%08x.part-%020llu%s", sink, (unsigned long long)txn,
             finished ? "" : ".inprogress");
}

static void part_path(const ck_sinkfs *f, uint32_t sink, uint64_t txn, int finished, char *buf,
                      size_t len)
{
    char name[64];
    part_name(sink, txn, finished, name, sizeof(name));
    snprintf(buf, len, "%s/%s", f->dir, name);
}

/* Closes the part kept open for transaction txn, if it is. */
static void part_close(ck_sinkfs_slot *s, uint64_t txn)
{
    if (s->part_fd >= 0 && s->part_txn == txn) {
        close(s->part_fd);
        s->part_fd = -1;
    }
}

/* Writes data[0..len) to transaction txn's file at once. */
static int write_now(ck_sinkfs *f, ck_sinkfs_slot *s, uint64_t txn, const uint8_t *data,
                     size_t len)
{
    uint32_t sink = s->sink;
    char path[720];
    if (txn == 0) {
        if (s->fd < 0) {
            snprintf(path, sizeof(path), "%s/%08x.out", f->dir, sink);
            s->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        }
        off_t at = s->fd < 0 ? -1 : lseek(s->fd, 0, SEEK_END);
        if (s->fd < 0 || at < 0 || ck_storefs_write_full(s->fd, data, len)) {
            int e = errno;
            if (s->fd >= 0 && at >= 0 && ftruncate(s->fd, at)) /* no torn record */
                e = errno;
            errno = e;
            return CK_EIO;
        }
        return CK_OK;
    }
    if (s->part_fd < 0 || s->part_txn != txn) {
        part_close(s, s->part_txn);
        part_path(f, sink, txn, 0, path, sizeof(path));
        s->part_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        s->part_txn = txn;
        if (s->part_fd < 0)
            return CK_EIO;
    }
    return ck_storefs_write_full(s->part_fd, data, len) ? CK_EIO : CK_OK;
}

/* Writes what s holds (its transaction's file gets it all, or, for the
 * committed stream, none of it). */
static int flush_slot(ck_sinkfs *f, ck_sinkfs_slot *s)
{
    if (!s->nheld)
        return CK_OK;
    size_t n = s->nheld;
    s->nheld = 0;
    return write_now(f, s, s->held_txn, s->held, n);
}

int ck_sinkfs_write(ck_sinkfs *f, uint32_t sink, uint64_t txn, const uint8_t *data, size_t len)
{
    ck_sinkfs_slot *s = slot(f, sink);
    if (!s)
        return CK_ENOMEM;
    if (s->nheld && (s->held_txn != txn || s->nheld + len > f->hold)) {
        int rc = flush_slot(f, s); /* in order: what it holds goes first */
        if (rc)
            return rc;
    }
    if (len < f->hold && (s->held || (s->held = malloc(f->hold)))) {
        memcpy(s->held + s->nheld, data, len);
        s->nheld += len;
        s->held_txn = txn;
        return CK_OK;
    }
    return write_now(f, s, txn, data, len);
}

/* Commits txn of sink; *renamed: 1 when a part was committed now. */
static int commit(ck_sinkfs *f, uint32_t sink, uint64_t txn, int *renamed)
{
    *renamed = 0;
    ck_sinkfs_slot *s = slot(f, sink);
    if (s && s->nheld && s->held_txn == txn) {
        int rc = flush_slot(f, s);
        if (rc)
            return rc;
    }
    if (s)
        part_close(s, txn);
    char from[720], to[720];
    part_path(f, sink, txn, 0, from, sizeof(from));
    part_path(f, sink, txn, 1, to, sizeof(to));
    if (rename(from, to))
        return errno == ENOENT ? CK_OK : CK_EIO; /* committed before, or empty */
    *renamed = 1;
    return CK_OK;
}

int ck_sinkfs_commit(ck_sinkfs *f, uint32_t sink, uint64_t txn)
{
    int renamed;
    return commit(f, sink, txn, &renamed);
}

/* ---- output faults (sinkfs.h) ----------------------------------------------------------- */

static void fault_path(const char *dir, int n, const char *suffix, char *buf, size_t len)
{
    snprintf(buf, len, "%s/fault-%02d%s", dir, n, suffix);
}

/* Writes a whole file in place of dir/name, through a temporary name and a
 * rename (no reader sees half of it). 0, or CK_EIO with errno set. */
static int file_replace(const char *dir, const char *name, const uint8_t *data, size_t len)
{
    char tmp[760], to[760];
    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
    snprintf(to, sizeof(to), "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return CK_EIO;
    int bad = ck_storefs_write_full(fd, data, len);
    int e = errno;
    if (close(fd) && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && rename(tmp, to)) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        errno = e;
        return CK_EIO;
    }
    return CK_OK;
}

int ck_sinkfs_arm(const char *dir, int n)
{
    char path[700];
    fault_path(dir, n, ".armed", path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return CK_EIO;
    close(fd);
    return CK_OK;
}

/* The records of an encoded stream: how many, and where the first one's
 * body starts (-1: none). CK_ECORRUPT when it does not parse. */
static int count_records(const uint8_t *d, size_t len, uint64_t *n, long *first)
{
    *n = 0;
    *first = -1;
    for (size_t pos = 0; pos < len;) {
        ck_elem e;
        size_t m = len - pos >= 4 ? (size_t)ck_get_u32(d + pos) + 4 : 0;
        if (m < CK_ELEM_PREFIX || m > len - pos || ck_elem_decode(d + pos, m, &e) ||
            e.tag != CK_EL_RECORD)
            return CK_ECORRUPT;
        if (*first < 0)
            *first = (long)pos;
        pos += m;
        (*n)++;
    }
    return CK_OK;
}

/* Applies fault kind to the part of (sink, txn) just committed; fills o. */
static int apply_fault(const char *dir, uint32_t sink, uint64_t txn, int kind, ck_sinkfs_fault *o)
{
    char name[64], aside[64];
    part_name(sink, txn, 1, name, sizeof(name));
    uint8_t *data;
    size_t len;
    int rc = ck_storefs_get(dir, name, &data, &len);
    if (rc)
        return rc == CK_ENOTFOUND ? CK_EIO : rc;
    long first;
    rc = count_records(data, len, &o->records, &first);
    if (!rc && first < 0)
        rc = CK_ECORRUPT; /* a part holds what was written to it: records */
    if (rc) {
        free(data);
        return rc;
    }
    char from[760], to[760];
    switch (kind) {
    case CK_SINKFS_DUPLICATE:
        snprintf(aside, sizeof(aside), "%s.dup", name);
        rc = file_replace(dir, aside, data, len);
        break;
    case CK_SINKFS_DROP:
        snprintf(aside, sizeof(aside), "%08x.lost-%020llu", sink, (unsigned long long)txn);
        snprintf(from, sizeof(from), "%s/%s", dir, name);
        snprintf(to, sizeof(to), "%s/%s", dir, aside);
        rc = rename(from, to) ? CK_EIO : CK_OK;
        break;
    default: {
        /* The original first, so that what was altered is always on record. */
        uint8_t *rec = data + first;
        size_t rlen = (size_t)ck_get_u32(rec) + 4;
        snprintf(aside, sizeof(aside), "%08x.altered-%020llu", sink, (unsigned long long)txn);
        rc = file_replace(dir, aside, rec, rlen);
        o->records = 1;
        o->before = (int64_t)ck_get_u64(rec + CK_ELEM_PREFIX + CK_REC_AT_VALUE);
        o->after = ck_sinkfs_corrupted(o->before);
        ck_put_u64(rec + CK_ELEM_PREFIX + CK_REC_AT_VALUE, (uint64_t)o->after);
        if (!rc)
            rc = file_replace(dir, name, data, len);
        break;
    }
    }
    free(data);
    return rc;
}

int ck_sinkfs_commit_faults(ck_sinkfs *f, uint32_t sink, uint64_t txn, const int *fault,
                            const int *kind, int nf, int64_t now, int *applied)
{
    int renamed;
    *applied = -1;
    int rc = commit(f, sink, txn, &renamed);
    if (rc || !renamed)
        return rc;
    for (int i = 0; i < nf; i++) {
        char armed[700], claimed[700];
        fault_path(f->dir, fault[i], ".armed", armed, sizeof(armed));
        fault_path(f->dir, fault[i], ".claimed", claimed, sizeof(claimed));
        if (rename(armed, claimed)) {
            if (errno == ENOENT)
                continue; /* not armed, or another commit has it */
            return CK_EIO;
        }
        ck_sinkfs_fault o = {.kind = kind[i], .sink = sink, .txn = txn, .at = now};
        if ((rc = apply_fault(f->dir, sink, txn, kind[i], &o)))
            return rc == CK_EIO ? rc : (errno = EIO, CK_EIO);
        char rec[200], name[32];
        int m = snprintf(rec, sizeof(rec), "%d %u %llu %llu %lld %lld %lld\n", o.kind, o.sink,
                         (unsigned long long)o.txn, (unsigned long long)o.records,
                         (long long)o.at, (long long)o.before, (long long)o.after);
        snprintf(name, sizeof(name), "fault-%02d", fault[i]);
        if ((rc = file_replace(f->dir, name, (const uint8_t *)rec, (size_t)m)))
            return rc;
        *applied = i;
        return CK_OK;
    }
    return CK_OK;
}

int ck_sinkfs_fault_read(const char *dir, int n, ck_sinkfs_fault *out)
{
    char name[32];
    snprintf(name, sizeof(name), "fault-%02d", n);
    uint8_t *data;
    size_t len;
    int rc = ck_storefs_get(dir, name, &data, &len);
    if (rc)
        return rc;
    char text[200];
    snprintf(text, sizeof(text), "%.*s", (int)(len < sizeof(text) ? len : sizeof(text) - 1),
             (const char *)data);
    free(data);
    ck_sinkfs_fault o;
    unsigned long long txn, records;
    long long at, before, after;
    if (sscanf(text, "%d %u %llu %llu %lld %lld %lld", &o.kind, &o.sink, &txn, &records, &at,
               &before, &after) != 7 ||
        o.kind < CK_SINKFS_DUPLICATE || o.kind > CK_SINKFS_CORRUPT)
        return CK_ECORRUPT;
    o.txn = txn;
    o.records = records;
    o.at = at;
    o.before = before;
    o.after = after;
    *out = o;
    return CK_OK;
}

int ck_sinkfs_fault_records(const char *dir, const ck_sinkfs_fault *fo, ck_sinkout *out)
{
    static const char *const forms[] = {"%08x.part-%020llu.dup", "%08x.lost-%020llu",
                                        "%08x.altered-%020llu"};
    if (fo->kind < CK_SINKFS_DUPLICATE || fo->kind > CK_SINKFS_CORRUPT)
        return CK_ENOTFOUND;
    char name[64], path[760];
    snprintf(name, sizeof(name), forms[fo->kind], fo->sink, (unsigned long long)fo->txn);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (access(path, F_OK))
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    return ck_sinkout_load(out, fo->sink, path);
}

int ck_sinkfs_carry(const char *from, const char *to, uint32_t sink, uint64_t txn)
{
    char name[64];
    part_name(sink, txn, 0, name, sizeof(name));
    uint8_t *data;
    size_t len;
    int rc = ck_storefs_get(from, name, &data, &len);
    if (rc)
        return rc == CK_ENOTFOUND ? CK_OK : rc;
    rc = ck_storefs_put(to, name, data, len, 0);
    free(data);
    return rc ? CK_EIO : CK_OK;
}

int ck_sinkfs_abort(ck_sinkfs *f, uint32_t sink, uint64_t txn)
{
    ck_sinkfs_slot *s = slot(f, sink);
    if (s && s->nheld && s->held_txn == txn)
        s->nheld = 0; /* never written */
    if (s)
        part_close(s, txn);
    char path[720];
    part_path(f, sink, txn, 0, path, sizeof(path));
    if (unlink(path) && errno != ENOENT)
        return CK_EIO;
    return CK_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The cut's bound for sink id, or 0 (none: all of it is before). */
static uint64_t cut_of(const ck_sinkfs_cut *cut, size_t ncut, uint32_t id)
{
    for (size_t i = 0; i < ncut; i++)
        if (cut[i].sink == id)
            return cut[i].first_after;
    return 0;
}

static int load(const char *dir, const ck_sinkfs_cut *cut, size_t ncut, ck_sinkout *out,
                ck_sinkout *after)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = CK_OK;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        unsigned id;
        int used = 0;
        if (sscanf(de->d_name, "%8x.%n", &id, &used) != 1 || used != 9)
            continue;
        const char *rest = de->d_name + 9;
        int direct = strcmp(rest, "out") == 0;
        /* a committed part, or its second copy (an output fault) */
        int part = strncmp(rest, "part-", 5) == 0 &&
                   (strlen(rest) == 25 || (strlen(rest) == 29 && !strcmp(rest + 25, ".dup")));
        if (!direct && !part)
            continue; /* in progress, or not ours */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **v = realloc(names, cap * sizeof(*v));
            if (!v) {
                rc = CK_ENOMEM;
                break;
            }
            names = v;
        }
        /* "out" sorts after "part-": the direct stream first, by a prefix. */
        size_t len = strlen(de->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = CK_ENOMEM;
            break;
        }
        snprintf(names[n], len, "%c%s", direct ? 'a' : 'b', de->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_str);
    /* A sink's streams in order: its .out, then its parts by transaction. */
    for (size_t i = 0; i < n; i++) {
        unsigned id = 0;
        sscanf(names[i] + 1, "%8x", &id);
        char path[900];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i] + 1);
        uint64_t bound = cut_of(cut, ncut, id), txn = 0;
        if (names[i][0] == 'b')
            txn = strtoull(names[i] + 1 + 9 + 5, NULL, 10);
        else if (bound && !rc)
            rc = CK_EINVAL; /* written outside transactions: no cut divides it */
        if (!rc)
            rc = ck_sinkout_load(bound && txn >= bound ? after : out, id, path);
        free(names[i]);
    }
    free(names);
    return rc;
}

int ck_sinkfs_load(const char *dir, ck_sinkout *out)
{
    return load(dir, NULL, 0, out, NULL);
}

int ck_sinkfs_load_cut(const char *dir, const ck_sinkfs_cut *cut, size_t ncut, ck_sinkout *before,
                       ck_sinkout *after)
{
    return load(dir, cut, ncut, before, after);
}
