#include "storefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "error.h"
#include "storekey.h"

/*
 * Recycling. A deleted object of RECYCLE_MIN bytes or more is not
 * unlinked but set aside under RECYCLE_DIR (named by its inode number:
 * unique while it exists, whichever process sets it aside), and a later
 * put of a large object takes one and overwrites it in place instead of
 * creating a file, as a write-ahead log recycles its segments: its blocks
 * are allocated already and its pages likely still cached, where a new
 * file pays for fresh pages, the file system's allocation and, on a
 * virtual disk, the host's (bench_state times the store's puts both
 * ways: 417-447 MB/s into new files, 541-556 over recycled ones, on the
 * machine that measured it). A put's file is
 * still its own temporary one, renamed into place once synced.
 * Invariants: at most RECYCLE_FILES files wait (a bound, not exact: two
 * processes may each add one at once); no key reaches RECYCLE_DIR
 * (ck_storefs_key_ok) and no listing shows it; a recycled file is taken by
 * a rename, so two puts never share one.
 */
_Static_assert(CK_STORE_APPEND_ALIGN == CK_STOREFS_ALIGN, "an append's offset suits direct I/O");

#define RECYCLE_DIR ".recycle"
#define RECYCLE_MIN ((size_t)1 << 20)
#define RECYCLE_FILES 8

int ck_storefs_key_ok(const char *key)
{
    size_t len = strlen(key);
    if (len == 0 || len >= CK_STORE_KEY_MAX || key[0] == '/')
        return 0;
    size_t rl = strlen(RECYCLE_DIR);
    if (!strncmp(key, RECYCLE_DIR, rl) && (key[rl] == '/' || !key[rl]))
        return 0; /* the store's own */
    const char *p = key;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (n >= 5 && strncmp(p + n - 5, ".part", 5) == 0)
            return 0; /* reserved for temporary files */
        p += n;
        if (*p == '/')
            p++;
        else
            break;
    }
    return key[len - 1] != '/';
}

int ck_storefs_mkdirs(const char *dir)
{
    char buf[1024];
    if (strlen(dir) >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return CK_EIO;
    }
    snprintf(buf, sizeof(buf), "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) && errno != EEXIST)
            return CK_EIO;
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return CK_EIO;
    return CK_OK;
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return CK_EIO;
    int rc = fsync(fd);
    close(fd);
    return rc ? CK_EIO : CK_OK;
}

/* The files set aside under root's RECYCLE_DIR (at most max): their names
 * and sizes; returns how many. */
static int recycled(const char *root, char (*name)[32], uint64_t *size, int max)
{
    char dir[1400], path[1440];
    snprintf(dir, sizeof(dir), "%s/" RECYCLE_DIR, root);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while (n < max && (de = readdir(d))) {
        struct stat st;
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(name[0]))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        snprintf(name[n], sizeof(name[n]), "%s", de->d_name);
        size[n++] = (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}

/* Moves a set-aside file to tmp, for a put of len bytes to overwrite: the
 * smallest that holds len, else the largest. 1 if one was taken. */
static int take_recycled(const char *root, const char *tmp, size_t len)
{
    char name[RECYCLE_FILES * 2][32], path[1440];
    uint64_t size[RECYCLE_FILES * 2];
    int n = recycled(root, name, size, RECYCLE_FILES * 2);
    while (n > 0) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            int fits = size[i] >= len, bfits = size[best] >= len;
            if (fits != bfits ? fits : fits ? size[i] < size[best] : size[i] > size[best])
                best = i;
        }
        snprintf(path, sizeof(path), "%s/" RECYCLE_DIR "/%s", root, name[best]);
        if (!rename(path, tmp))
            return 1;
        /* another process took it: the next */
        n--;
        memcpy(name[best], name[n], sizeof(name[0]));
        size[best] = size[n];
    }
    return 0;
}

/* Sets the file at path (inode ino) aside for a later put; 1 if it was. */
static int set_aside(const char *root, const char *path, uint64_t ino)
{
    char dir[1400], to[1440];
    snprintf(dir, sizeof(dir), "%s/" RECYCLE_DIR, root);
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.';
    if (d)
        closedir(d);
    if (n >= RECYCLE_FILES || (mkdir(dir, 0755) && errno != EEXIST))
        return 0;
    snprintf(to, sizeof(to), "%s/%llu", dir, (unsigned long long)ino);
    return rename(path, to) == 0;
}

int ck_storefs_recycle_clear(const char *root)
{
    char dir[1400];
    snprintf(dir, sizeof(dir), "%s/" RECYCLE_DIR, root);
    return ck_storefs_rmtree(dir);
}

/* Bytes of the bounce buffer a put from a file without a scratch buffer
 * reads through. */
#define BOUNCE ((size_t)1 << 20)

/* Where a put's bytes come from: it->data, or the open files fd[]
 * (it->src), read in order, each one's CRC-32C kept in its src entry. */
typedef struct source {
    ck_storefs_item *it;
    int *fd;       /* NULL: it->data; else it->nsrc files (-1: not opened) */
    uint32_t cur;  /* the file being read */
    uint64_t left; /* its bytes not read yet */
    int failed;    /* a file could not be opened or read whole */
} source;

/* Opens the item's files (sizing the object) and starts at the first.
 * 0, or -1 (errno set, s->failed). */
static int source_open(source *s)
{
    ck_storefs_item *it = s->it;
    if (!it->nsrc)
        return 0;
    if (!(s->fd = malloc(it->nsrc * sizeof(int))))
        return -1;
    for (uint32_t i = 0; i < it->nsrc; i++)
        s->fd[i] = -1;
    it->len = 0;
    for (uint32_t i = 0; i < it->nsrc; i++) {
        struct stat st;
        if ((s->fd[i] = open(it->src[i].path, O_RDONLY | O_CLOEXEC)) < 0 ||
            fstat(s->fd[i], &st)) {
            s->failed = 1;
            return -1;
        }
        it->src[i].len = (uint64_t)st.st_size;
        it->src[i].crc = 0;
        it->len += (size_t)st.st_size;
    }
    s->cur = 0;
    s->left = it->src[0].len;
    return 0;
}

/* Back to the start of the first file (a put begun again). 0 or -1. */
static int source_rewind(source *s)
{
    if (!s->fd)
        return 0;
    for (uint32_t i = 0; i < s->it->nsrc; i++) {
        s->it->src[i].crc = 0;
        if (lseek(s->fd[i], 0, SEEK_SET) != 0)
            return -1;
    }
    s->cur = 0;
    s->left = s->it->src[0].len;
    return 0;
}

static void source_close(source *s)
{
    for (uint32_t i = 0; s->fd && i < s->it->nsrc; i++)
        if (s->fd[i] >= 0)
            close(s->fd[i]);
    free(s->fd);
    s->fd = NULL;
}

/* The object's next m bytes, at offset off, into dst (files' are read
 * there; data's copied, or pointed at when dst is NULL: *out). 0, or -1
 * (errno set; a file that ended early: EIO). */
static int take(source *s, size_t off, size_t m, uint8_t *dst, const uint8_t **out)
{
    if (!s->fd) {
        if (dst)
            memcpy(dst, s->it->data + off, m);
        *out = dst ? dst : s->it->data + off;
        return 0;
    }
    for (size_t got = 0; got < m;) {
        while (s->left == 0 && s->cur + 1 < s->it->nsrc)
            s->left = s->it->src[++s->cur].len;
        size_t want = m - got < s->left ? m - got : (size_t)s->left;
        ssize_t r = want ? read(s->fd[s->cur], dst + got, want) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO; /* it shrank since the put began */
            s->failed = 1;
            return -1;
        }
        ck_storefs_src *f = &s->it->src[s->cur];
        f->crc = ck_crc32c(f->crc, dst + got, (size_t)r);
        s->left -= (uint64_t)r;
        got += (size_t)r;
    }
    *out = dst;
    return 0;
}

int ck_storefs_write_full(int fd, const uint8_t *p, size_t m)
{
    for (size_t done = 0; done < m;) {
        ssize_t w = write(fd, p + done, m - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        done += (size_t)w;
    }
    return 0;
}

/* Writes the object to fd from offset it->at through the page cache; 0, or -1
 * (errno set). A file's bytes go through the scratch buffer if the item
 * has one, else through a bounce buffer. */
static int write_all(int fd, source *s)
{
    ck_storefs_item *it = s->it;
    uint8_t *buf = NULL, *own = NULL;
    size_t cap = it->len;
    if (s->fd) {
        cap = it->scratch ? it->scratch_len : BOUNCE;
        buf = it->scratch ? it->scratch : (own = malloc(BOUNCE));
        if (!buf)
            return -1;
    }
    int rc = it->at && lseek(fd, (off_t)it->at, SEEK_SET) < 0 ? -1 : 0;
    for (size_t off = 0; off < it->len && !rc;) {
        size_t m = it->len - off < cap ? it->len - off : cap;
        const uint8_t *p;
        rc = take(s, off, m, buf, &p) || ck_storefs_write_full(fd, p, m) ? -1 : 0;
        off += m;
    }
    free(own);
    return rc;
}

/* The same through it->scratch into fd opened with O_DIRECT: whole
 * aligned blocks, the last one padded with zeros (a put's caller
 * truncates the file to it->len; an append's padding stays). 0, or -1
 * (errno set; EINVAL: no direct I/O here). */
static int write_direct(int fd, source *s)
{
    ck_storefs_item *it = s->it;
    for (size_t off = 0; off < it->len;) {
        size_t m = it->len - off < it->scratch_len ? it->len - off : it->scratch_len;
        size_t whole = (m + CK_STOREFS_ALIGN - 1) & ~(size_t)(CK_STOREFS_ALIGN - 1);
        const uint8_t *p;
        if (take(s, off, m, it->scratch, &p))
            return -1;
        memset(it->scratch + m, 0, whole - m);
        ssize_t w;
        while ((w = pwrite(fd, it->scratch, whole, (off_t)(it->at + off))) < 0 && errno == EINTR)
            ;
        if (w != (ssize_t)whole) {
            if (w >= 0)
                errno = ENOSPC; /* a short direct write: the disk is full */
            return -1;
        }
        off += m;
    }
    return 0;
}

/* Opens path with flags (a recycled file: not truncated) into *fd and
 * writes the object there: through its scratch buffer with O_DIRECT when
 * it has a usable one and the file system takes direct writes (*padded
 * set: the last block holds zeros past it->len), else through the page
 * cache. 0, or -1 (errno set; *fd, if open, is the caller's to close). */
static int write_file(const char *path, int flags, source *s, int *fd, int *padded)
{
    ck_storefs_item *it = s->it;
    *padded = 0;
    if (it->scratch && it->len >= CK_STOREFS_DIRECT_MIN && it->scratch_len >= CK_STOREFS_ALIGN &&
        !(it->scratch_len % CK_STOREFS_ALIGN) && !((uintptr_t)it->scratch % CK_STOREFS_ALIGN) &&
        !(it->at % CK_STOREFS_ALIGN)) {
        if ((*fd = open(path, flags | O_DIRECT, 0644)) >= 0 && !write_direct(*fd, s)) {
            *padded = 1;
            return 0;
        }
        if (errno != EINVAL)
            return -1;
        if (*fd >= 0) /* the file system takes no direct writes */
            close(*fd);
        *fd = -1;
        if (source_rewind(s)) /* files' bytes are read again from their start */
            return -1;
    }
    if ((*fd = open(path, flags, 0644)) < 0)
        return -1;
    return write_all(*fd, s);
}

uint8_t *ck_storefs_scratch_new(size_t len, int huge)
{
    void *b;
    if (posix_memalign(&b, huge ? CK_STOREFS_HUGE : CK_STOREFS_ALIGN, len))
        return NULL;
    if (huge)
        (void)madvise(b, len, MADV_HUGEPAGE); /* a hint: without, 4 KiB pages */
    memset(b, 0, len);
    return b;
}

/* Where a put of key writes before its rename: "<key>.<pid>.part", so
 * that what a process killed mid-put left is known by its pid
 * (ck_storefs_drop_parts). */
static void part_path(const char *root, const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s.%ld.part", root, key, (long)getpid());
}

/* Writes item it to its temporary file (open in *fd), creating the
 * directories on the way: a recycled one overwritten in place for a large
 * object, with direct I/O when it has a scratch buffer; 0, or its status
 * set. */
static int put_begin(const char *root, ck_storefs_item *it, int *fd)
{
    char path[1420], dir[1400];
    *fd = -1;
    if (!ck_storefs_key_ok(it->key)) {
        it->status = CK_EINVAL;
        return -1;
    }
    int reused = 0, padded = 0, made = 0;
    source s = {.it = it};
    if (source_open(&s))
        goto fail;
    if (it->at) { /* an append: in place, into the object as it is */
        snprintf(path, sizeof(path), "%s/%s", root, it->key);
        if (write_file(path, O_WRONLY | O_CLOEXEC, &s, fd, &padded))
            goto fail;
        source_close(&s);
        return 0;
    }
    snprintf(dir, sizeof(dir), "%s/%s", root, it->key);
    *strrchr(dir, '/') = 0;
    part_path(root, it->key, path, sizeof(path));
    /* The directory may go between its creation and the file's: a delete
     * of the last object in it removes it (ck_storefs_delete), and another
     * process may delete at any moment (the job manager's discarding a
     * failed checkpoint's files while a task manager's puts one there).
     * The file, once there, keeps it; a directory that went is made again
     * (a few times: each is a delete that came just then). */
    for (int tries = 0; !made; tries++) {
        int pfd = ck_storefs_mkdirs(dir) ? -1 : open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (pfd >= 0) {
            close(pfd);
            made = 1;
        } else if (errno != ENOENT || tries == 16) {
            goto fail;
        }
    }
    reused = it->len >= RECYCLE_MIN && take_recycled(root, path, it->len);
    if (write_file(path, O_WRONLY | O_CREAT | (reused ? 0 : O_TRUNC), &s, fd, &padded))
        goto fail;
    if ((reused || padded) && ftruncate(*fd, (off_t)it->len))
        goto fail; /* what the recycled file held past it, or the last block's padding */
    source_close(&s);
    return 0;
fail:
    /* an append's object gone (deleted: nothing refers to it) is no
     * failing disk */
    it->status = s.failed || (it->at && errno == ENOENT) ? CK_ENOTFOUND : CK_EIO;
    it->err = errno;
    if (*fd >= 0)
        close(*fd);
    if (made)
        unlink(path);
    source_close(&s);
    *fd = -1;
    return -1;
}

/* The length of key's directory part ("a/b/c": 3). */
static size_t dir_len(const char *key)
{
    const char *slash = strrchr(key, '/');
    return slash ? (size_t)(slash - key) : 0;
}

static int same_dir(const char *a, const char *b)
{
    size_t n = dir_len(a);
    return n == dir_len(b) && !strncmp(a, b, n);
}

/* Items it[0..n) with a file of their own open in fd[]: each is synced (if
 * durable), closed and renamed into place, then each directory touched is
 * synced once. */
static void put_finish(const char *root, ck_storefs_item *it, const int *fd, size_t n,
                       int durable)
{
    char path[1400], tmp[1420];
    for (size_t i = 0; i < n; i++) {
        if (fd[i] < 0)
            continue;
        if (it[i].at) { /* an append: its data synced, the file's name as it was */
            if ((durable && fdatasync(fd[i])) | close(fd[i])) {
                it[i].status = CK_EIO;
                it[i].err = errno;
            }
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", root, it[i].key);
        part_path(root, it[i].key, tmp, sizeof(tmp));
        if ((durable && fsync(fd[i])) | close(fd[i]) || rename(tmp, path)) {
            it[i].status = CK_EIO;
            it[i].err = errno;
            unlink(tmp);
        }
    }
    for (size_t i = 0; durable && i < n; i++) {
        if (fd[i] < 0 || it[i].status || it[i].at)
            continue;
        int seen = 0; /* synced for an earlier item */
        for (size_t k = 0; k < i && !seen; k++)
            seen = fd[k] >= 0 && !it[k].at && !it[k].status && same_dir(it[k].key, it[i].key);
        if (seen)
            continue;
        snprintf(path, sizeof(path), "%s/%.*s", root, (int)dir_len(it[i].key), it[i].key);
        /* A directory gone since the rename held only objects a concurrent
         * delete removed (the job manager's process listing a failed
         * checkpoint's directory): what was put went with it, as if the
         * delete had come after the put. */
        if (fsync_dir(path) && errno != ENOENT) {
            int e = errno;
            for (size_t k = i; k < n; k++) /* not durable: none in it is */
                if (fd[k] >= 0 && !it[k].status && !it[k].at && same_dir(it[k].key, it[i].key)) {
                    it[k].status = CK_EIO;
                    it[k].err = e;
                }
        }
    }
}

/* Open files per group of a batch: well under the descriptor limit. */
#define PUT_GROUP 64

void ck_storefs_put_many(const char *root, ck_storefs_item *items, size_t n, int durable)
{
    int fd[PUT_GROUP];
    size_t at = 0;
    while (at < n) {
        /* A group ends at PUT_GROUP items or before a key it holds already
         * (both would write one temporary file). */
        size_t m = 0;
        for (; m < PUT_GROUP && at + m < n; m++) {
            int dup = 0;
            for (size_t k = 0; k < m && !dup; k++)
                dup = !strcmp(items[at + k].key, items[at + m].key);
            if (dup)
                break;
            items[at + m].status = items[at + m].err = 0;
            put_begin(root, &items[at + m], &fd[m]);
        }
        put_finish(root, items + at, fd, m, durable);
        at += m;
    }
}

int ck_storefs_put(const char *root, const char *key, const uint8_t *data, size_t len,
                   int durable)
{
    ck_storefs_item it = {.key = key, .data = data, .len = len};
    ck_storefs_put_many(root, &it, 1, durable);
    if (it.status == CK_EIO)
        errno = it.err;
    return it.status;
}

int ck_storefs_append(const char *root, const char *key, uint64_t at, const uint8_t *data,
                      size_t len, int durable)
{
    if (!at)
        return CK_EINVAL;
    ck_storefs_item it = {.key = key, .at = at, .data = data, .len = len};
    ck_storefs_put_many(root, &it, 1, durable);
    if (it.status == CK_EIO)
        errno = it.err;
    return it.status;
}

int ck_storefs_get(const char *root, const char *key, uint8_t **data, size_t *len)
{
    return ck_storefs_get_range(root, key, 0, CK_STOREFS_WHOLE, data, len);
}

int ck_storefs_get_range(const char *root, const char *key, uint64_t at, uint64_t want,
                         uint8_t **data, size_t *len)
{
    if (!ck_storefs_key_ok(key) || at > (uint64_t)INT64_MAX)
        return CK_EINVAL;
    char path[1400];
    snprintf(path, sizeof(path), "%s/%s", root, key);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return CK_EIO;
    }
    uint64_t size = (uint64_t)st.st_size, left = at < size ? size - at : 0;
    size_t n = (size_t)(want < left ? want : left);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return CK_ENOMEM;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t r = pread(fd, buf + off, n - off, (off_t)(at + off));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        off += (size_t)r;
    }
    close(fd);
    if (off != n) {
        free(buf);
        return CK_EIO;
    }
    *data = buf;
    *len = n;
    return CK_OK;
}

typedef struct lst {
    ck_store_entry *e;
    size_t n, cap;
    int err;
} lst;

static void walk(const char *root, const char *rel, const char *prefix, lst *L)
{
    char dir[1400];
    snprintf(dir, sizeof(dir), "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && !L->err) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            (!rel[0] && !strcmp(de->d_name, RECYCLE_DIR)))
            continue;
        size_t nl = strlen(de->d_name);
        if (nl >= 5 && !strcmp(de->d_name + nl - 5, ".part"))
            continue;
        char key[CK_STORE_KEY_MAX * 2], path[1700];
        snprintf(key, sizeof(key), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            /* Descend only where keys with the prefix can be. */
            size_t kl = strlen(key), pl = strlen(prefix);
            if (strncmp(key, prefix, kl < pl ? kl : pl) == 0)
                walk(root, key, prefix, L);
            continue;
        }
        if (strncmp(key, prefix, strlen(prefix)) != 0)
            continue;
        if (L->n == L->cap) {
            size_t cap = L->cap ? L->cap * 2 : 16;
            ck_store_entry *e = realloc(L->e, cap * sizeof(*e));
            if (!e) {
                L->err = CK_ENOMEM;
                break;
            }
            L->e = e;
            L->cap = cap;
        }
        L->e[L->n].key = strdup(key);
        if (!L->e[L->n].key) {
            L->err = CK_ENOMEM;
            break;
        }
        L->e[L->n].size = (uint64_t)st.st_size;
        L->n++;
    }
    closedir(d);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const ck_store_entry *)a)->key, ((const ck_store_entry *)b)->key);
}

int ck_storefs_list(const char *root, const char *prefix, ck_store_entry **out, size_t *n)
{
    lst L = {0};
    walk(root, "", prefix, &L);
    if (L.err) {
        ck_store_entries_free(L.e, L.n);
        return L.err;
    }
    if (L.n)
        qsort(L.e, L.n, sizeof(*L.e), cmp_entry);
    *out = L.e;
    *n = L.n;
    return CK_OK;
}

int ck_storefs_delete(const char *root, const char *key)
{
    if (!ck_storefs_key_ok(key))
        return CK_EINVAL;
    char path[1400];
    snprintf(path, sizeof(path), "%s/%s", root, key);
    struct stat st;
    if (stat(path, &st))
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    if (!(S_ISREG(st.st_mode) && (size_t)st.st_size >= RECYCLE_MIN && !ck_store_appendable(key) &&
          set_aside(root, path, (uint64_t)st.st_ino)) &&
        unlink(path))
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    /* Directories left empty go too (a retired chk-<n>), up to the root. */
    size_t rootlen = strlen(root);
    char *slash;
    while ((slash = strrchr(path, '/')) && (size_t)(slash - path) > rootlen) {
        *slash = 0;
        if (rmdir(path))
            break;
    }
    return CK_OK;
}

/* The id n of a key of a file in a checkpoint's directory (storekey.h's
 * checkpoints/<job>/chk-<n>/), 0 if it is not one; *meta set to whether
 * it is the checkpoint's _metadata. */
static uint64_t chk_number(const char *key, int *meta)
{
    ck_sk_key k;
    if (ck_sk_parse(key, &k) || k.savepoint ||
        (k.kind != CK_SK_METADATA_FILE && k.kind != CK_SK_STATE && k.kind != CK_SK_PRIVATE))
        return 0;
    *meta = k.kind == CK_SK_METADATA_FILE;
    return k.id;
}

uint64_t ck_storefs_latest(const ck_store_entry *e, size_t n, size_t *meta)
{
    uint64_t latest = 0;
    int is_meta;
    for (size_t i = 0; i < n; i++) {
        uint64_t c = chk_number(e[i].key, &is_meta);
        if (c > latest && is_meta) {
            latest = c;
            *meta = i;
        }
    }
    return latest;
}

int ck_storefs_damage(const char *root, const char *prefix, int cut, char *key,
                      size_t keylen)
{
    ck_store_entry *e;
    size_t n, meta;
    int rc = ck_storefs_list(root, prefix, &e, &n);
    if (rc)
        return rc;
    /* The newest checkpoint with its _metadata: the one a restore would use. */
    uint64_t latest = ck_storefs_latest(e, n, &meta);
    int is_meta;
    /* Its largest state file (the first in order among equals). */
    size_t pick = n;
    for (size_t i = 0; latest && i < n; i++) {
        if (chk_number(e[i].key, &is_meta) != latest || is_meta || e[i].size == 0)
            continue;
        if (pick == n || e[i].size > e[pick].size)
            pick = i;
    }
    if (pick == n) {
        ck_store_entries_free(e, n);
        return CK_ENOTFOUND;
    }
    snprintf(key, keylen, "%s", e[pick].key);
    ck_store_entries_free(e, n);
    return ck_storefs_damage_key(root, key, cut);
}

int ck_storefs_damage_key(const char *root, const char *key, int cut)
{
    if (!ck_storefs_key_ok(key))
        return CK_EINVAL;
    char path[1400];
    snprintf(path, sizeof(path), "%s/%s", root, key);
    struct stat st;
    if (stat(path, &st))
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    uint64_t size = (uint64_t)st.st_size;
    if (size == 0)
        return CK_ENOTFOUND;
    if (cut)
        return truncate(path, (off_t)(size / 2)) ? CK_EIO : CK_OK;
    /* Flip one bit in the middle of the file. */
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return CK_EIO;
    uint8_t b;
    off_t at = (off_t)(size / 2);
    int rc = pread(fd, &b, 1, at) == 1 ? CK_OK : CK_EIO;
    b ^= 0x10;
    if (!rc && pwrite(fd, &b, 1, at) != 1)
        rc = CK_EIO;
    if (close(fd))
        rc = CK_EIO;
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* ck_storefs_drop_parts below dir (a path; sfx: ".<pid>.part"). */
static int drop_parts(const char *dir, const char *sfx, int depth)
{
    DIR *d = depth < 64 ? opendir(dir) : NULL;
    if (!d)
        return 0;
    int n = 0;
    size_t sl = strlen(sfx);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char path[1700];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        size_t nl = strlen(de->d_name);
        struct stat st;
        if (lstat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            n += drop_parts(path, sfx, depth + 1);
        else if (nl > sl && !strcmp(de->d_name + nl - sl, sfx) && !unlink(path))
            n++;
    }
    closedir(d);
    return n;
}

int ck_storefs_drop_parts(const char *root, long pid)
{
    char sfx[32];
    snprintf(sfx, sizeof(sfx), ".%ld.part", pid);
    return drop_parts(root, sfx, 0);
}

int ck_storefs_rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? CK_OK : CK_EIO;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) ? CK_EIO : CK_OK;
}
