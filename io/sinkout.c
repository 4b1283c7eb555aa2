#include "sinkout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

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

int ck_sinkout_append(ck_sinkout *o, uint32_t sink_id, const uint8_t *data, size_t len)
{
    ck_sinkout_stream *s = stream(o, sink_id);
    if (!s)
        return CK_ENOMEM;
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + len)
            cap *= 2;
        uint8_t *p = realloc(s->data, cap);
        if (!p)
            return CK_ENOMEM;
        s->data = p;
        s->cap = cap;
    }
    memcpy(s->data + s->len, data, len);
    s->len += len;
    return CK_OK;
}

int ck_sinkout_load(ck_sinkout *o, uint32_t sink_id, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CK_EIO;
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
