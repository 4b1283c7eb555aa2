#include "sinkout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "storefs.h"

void ck_sinkout_init(ck_sinkout *o)
{
    memset(o, 0, sizeof(*o));
}

void ck_sinkout_free(ck_sinkout *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->s[i].data);
    free(o->s);
    memset(o, 0, sizeof(*o));
}

static ck_sinkout_stream *stream(ck_sinkout *o, uint32_t sink_id)
{
    for (int i = 0; i < o->n; i++)
        if (o->s[i].sink_id == sink_id)
            return &o->s[i];
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 8;
        ck_sinkout_stream *s = realloc(o->s, (size_t)cap * sizeof(*s));
        if (!s)
            return NULL;
        o->s = s;
        o->cap = cap;
    }
    ck_sinkout_stream *s = &o->s[o->n++];
    memset(s, 0, sizeof(*s));
    s->sink_id = sink_id;
    return s;
}

static int append_bytes(uint8_t **p, size_t *len, size_t *cap, const uint8_t *data, size_t n)
{
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n)
            c *= 2;
        uint8_t *q = realloc(*p, c);
        if (!q)
            return CK_ENOMEM;
        *p = q;
        *cap = c;
    }
    if (n)
        memcpy(*p + *len, data, n);
    *len += n;
    return CK_OK;
}

int ck_sinkout_append(ck_sinkout *o, uint32_t sink_id, const uint8_t *data, size_t len)
{
    ck_sinkout_stream *s = stream(o, sink_id);
    if (!s)
        return CK_ENOMEM;
    return append_bytes(&s->data, &s->len, &s->cap, data, len);
}

int ck_sinkout_load(ck_sinkout *o, uint32_t sink_id, const char *path)
{
    /* A regular file only: a link to /dev/zero or a FIFO would never end. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        close(fd);
        return CK_EIO;
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (fd >= 0)
            close(fd);
        return CK_EIO;
    }
    uint8_t buf[65536];
    size_t n;
    int rc = CK_OK;
    if (!stream(o, sink_id))
        rc = CK_ENOMEM;
    while (!rc && (n = fread(buf, 1, sizeof(buf), f)) > 0)
        rc = ck_sinkout_append(o, sink_id, buf, n);
    if (!rc && ferror(f))
        rc = CK_EIO;
    fclose(f);
    return rc;
}

int ck_sinkout_save(const ck_sinkout *o, const char *dir)
{
    if (ck_storefs_mkdirs(dir))
        return CK_EIO;
    for (int i = 0; i < o->n; i++) {
        const ck_sinkout_stream *st = &o->s[i];
        char key[32];
        snprintf(key, sizeof(key), "%08x.out", st->sink_id);
        if (ck_storefs_put(dir, key, st->data, st->len, 0))
            return CK_EIO;
    }
    return CK_OK;
}

int ck_sinkout_load_dir(ck_sinkout *o, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    int rc = CK_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        unsigned id;
        int used = 0;
        if (sscanf(e->d_name, "%8x.out%n", &id, &used) != 1 || e->d_name[used] ||
            strlen(e->d_name) != 12)
            continue;
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        rc = ck_sinkout_load(o, id, path);
    }
    closedir(d);
    return rc;
}
