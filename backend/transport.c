#include "transport.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "invariant.h"

static int grow(ck_tp_out *o, size_t need)
{
    if (need <= o->cap)
        return CK_OK;
    if (o->off > 0) {
        /* Slide what waits to the front first. */
        memmove(o->buf, o->buf + o->off, o->len - o->off);
        for (int i = 0; i < o->mtail; i++)
            o->marks[i].end = o->marks[i].end > o->off ? o->marks[i].end - o->off : 0;
        need -= o->off;
        o->len -= o->off;
        o->off = 0;
        if (need <= o->cap)
            return CK_OK;
    }
    size_t c = o->cap ? o->cap : CK_TP_FIRST;
    while (c < need)
        c *= 2;
    uint8_t *b = realloc(o->buf, c);
    if (!b)
        return CK_ENOMEM;
    o->buf = b;
    o->cap = c;
    return CK_OK;
}

/* The bytes up to end may leave at time at (no earlier than those before). */
static int push_mark(ck_tp_out *o, size_t end, ck_time at)
{
    if (o->mtail > o->mhead && o->marks[o->mtail - 1].at > at)
        at = o->marks[o->mtail - 1].at;
    if (o->mtail == o->mcap) {
        if (o->mhead > 0) {
            memmove(o->marks, o->marks + o->mhead,
                    (size_t)(o->mtail - o->mhead) * sizeof(*o->marks));
            o->mtail -= o->mhead;
            o->mhead = 0;
        } else {
            int cap = o->mcap ? o->mcap * 2 : 64;
            ck_tp_mark *m = realloc(o->marks, (size_t)cap * sizeof(*m));
            if (!m)
                return CK_ENOMEM;
            o->marks = m;
            o->mcap = cap;
        }
    }
    o->marks[o->mtail++] = (ck_tp_mark){end, at};
    return CK_OK;
}

int ck_tp_put(ck_tp_out *o, uint32_t dst, uint32_t src, const uint8_t *msg, size_t len,
              ck_time now, ck_time lat, int64_t rate)
{
    if (len > UINT32_MAX - 8)
        return CK_ETOOBIG;
    if (grow(o, o->len + CK_TP_HDR + len))
        return CK_ENOMEM;
    size_t old_len = o->len; /* after grow: it may have slid the bytes to the front */
    uint8_t *f = o->buf + o->len;
    ck_put_u32(f, (uint32_t)(8 + len));
    ck_put_u32(f + 4, dst);
    ck_put_u32(f + 8, src);
    memcpy(f + CK_TP_HDR, msg, len);
    o->len += CK_TP_HDR + len;
    /* Delayed, or behind delayed ones: a mark keeps it in order (and the
     * bytes before the first mark get one of their own, so that they are
     * not held for the latency of what came after them). */
    if (lat > 0 || o->mhead < o->mtail) {
        int rc = CK_OK;
        if (o->mhead == o->mtail && old_len > o->off)
            rc = push_mark(o, old_len, now);
        if (rc || push_mark(o, o->len, now + lat)) {
            o->len = old_len;
            return CK_ENOMEM;
        }
    }
    if (rate > 0 && !o->next_ok)
        o->next_ok = now; /* paced from now on */
    return CK_OK;
}

size_t ck_tp_due(ck_tp_out *o, ck_time now, int64_t rate)
{
    size_t end = o->len;
    if (o->mhead < o->mtail || o->next_ok || rate > 0) {
        /* What was delayed waits for its time... */
        while (o->mhead < o->mtail && o->marks[o->mhead].at <= now)
            o->mhead++;
        if (o->mhead < o->mtail)
            end = o->mhead > 0 ? o->marks[o->mhead - 1].end : o->off;
        if (end < o->off)
            end = o->off;
        /* ...and goes at the link's pace, 10 ms of it at a time. */
        if (rate > 0) {
            if (now < o->next_ok)
                return o->off;
            size_t chunk = (size_t)CK_MAX(rate / 100, 1024);
            if (end - o->off > chunk)
                end = o->off + chunk;
            o->next_ok = CK_MAX(o->next_ok, now) +
                         (ck_time)((double)(end - o->off) * 1e9 / (double)rate);
        } else {
            o->next_ok = 0;
        }
    }
    return end;
}

void ck_tp_sent(ck_tp_out *o, size_t end)
{
    if (end > o->len)
        end = o->len;
    if (end > o->off)
        o->off = end;
    if (o->off == o->len) {
        o->off = o->len = 0;
        o->mhead = o->mtail = 0;
        if (o->cap > CK_TP_KEEP) {
            /* A burst grew it: an idle connection does not keep that
             * (a cluster of 256 hosts has 65 280 of them). */
            free(o->buf);
            o->buf = NULL;
            o->cap = 0;
        }
    }
}

ck_time ck_tp_wake(const ck_tp_out *o, ck_time now)
{
    if (o->off >= o->len)
        return CK_TIME_NEVER;
    ck_time t = CK_TIME_NEVER;
    /* The first mark not passed yet holds the bytes after the passed ones. */
    int i = o->mhead;
    while (i < o->mtail && o->marks[i].at <= now)
        i++;
    if (i < o->mtail && (i == 0 || o->marks[i - 1].end <= o->off))
        t = o->marks[i].at;
    if (o->next_ok > now)
        t = CK_MAX(t == CK_TIME_NEVER ? 0 : t, o->next_ok);
    return t;
}

ck_time ck_tp_next(const ck_tp_out *o, ck_time now)
{
    if (o->off >= o->len)
        return CK_TIME_NEVER;
    ck_time t = ck_tp_wake(o, now);
    return t == CK_TIME_NEVER ? now : t;
}

void ck_tp_reset(ck_tp_out *o)
{
    o->off = o->len = 0;
    o->mhead = o->mtail = 0;
    o->next_ok = 0;
}

void ck_tp_free(ck_tp_out *o)
{
    free(o->buf);
    free(o->marks);
    memset(o, 0, sizeof(*o));
}

#define CK_INV_MODULE "transport"

int ck_tp_check(const ck_tp_out *o, ck_inv *v)
{
    CK_INV(v, 1, o->off <= o->len && o->len <= o->cap && (o->off < o->len || !o->len),
           "bytes [%zu, %zu) wait in %zu", o->off, o->len, o->cap);
    CK_INV(v, 2, 0 <= o->mhead && o->mhead <= o->mtail && o->mtail <= o->mcap,
           "marks [%d, %d) of %d", o->mhead, o->mtail, o->mcap);
    for (int i = o->mhead + 1; i < o->mtail; i++)
        CK_INV(v, 3, o->marks[i - 1].end < o->marks[i].end && o->marks[i - 1].at <= o->marks[i].at,
               "mark %d (bytes to %zu at %lld) after mark %d (to %zu at %lld)", i,
               o->marks[i].end, (long long)o->marks[i].at, i - 1, o->marks[i - 1].end,
               (long long)o->marks[i - 1].at);
    CK_INV(v, 3,
           o->mhead == o->mtail ||
               (o->marks[o->mhead].end > o->off && o->marks[o->mtail - 1].end == o->len),
           "marks from %zu to %zu over bytes [%zu, %zu)", o->marks[o->mhead].end,
           o->marks[o->mtail > 0 ? o->mtail - 1 : 0].end, o->off, o->len);
    return 0;
}
