#include "handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int ck_handle_crc_whole(const ck_handle *h)
{
    return h->kind == CK_HANDLE_NATIVE ||
           (h->kind == CK_HANDLE_MATERIAL && strchr(h->local, '_') != NULL);
}

const char *ck_handle_kind_name(int kind)
{
    switch (kind) {
    case CK_HANDLE_SNAPSHOT: return "state file";
    case CK_HANDLE_NATIVE: return "RocksDB file";
    case CK_HANDLE_CHANGELOG: return "changelog segment";
    case CK_HANDLE_MATERIAL: return "materialization";
    default: return "file";
    }
}

int ck_handle_local_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > CK_HANDLE_LOCAL_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

/* 1 when the n counts v are valid (handle.h). */
static int opcounts_ok(const ck_handle_opcount *v, uint32_t n)
{
    if (n > CK_HANDLE_MAX_OPCOUNTS)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].op == CK_HANDLE_NO_OP || v[i].mode < 1 || v[i].mode > 3 || !v[i].name[0] ||
            !memchr(v[i].name, 0, sizeof(v[i].name)))
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (v[j].op == v[i].op && !strcmp(v[j].name, v[i].name))
                return 0;
    }
    return 1;
}

/* h's counts become a copy of the n counts v. 0, CK_ENOMEM. */
static int opcounts_set(ck_handle *h, const ck_handle_opcount *v, uint32_t n)
{
    ck_handle_opcount *c = malloc((n ? n : 1) * sizeof(*c));
    if (!c)
        return CK_ENOMEM;
    if (n)
        memcpy(c, v, n * sizeof(*c));
    free(h->opc);
    h->opc = c;
    h->nopc = n;
    return CK_OK;
}

/* Appends one handle, checked: see handle.h. */
static int add(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
               uint64_t offset, uint32_t crc, ck_kgr kgr, uint32_t op,
               const char *local, const uint8_t *data, uint64_t modelled,
               const ck_handle_opcount *opc, uint32_t nopc)
{
    if ((flags & CK_HANDLE_OPCOUNTS) &&
        (kind != CK_HANDLE_SNAPSHOT || !opcounts_ok(opc, nopc)))
        return CK_EINVAL;
    size_t klen = strlen(key);
    int of_op = kind != CK_HANDLE_SNAPSHOT; /* a file of one operator's state */
    if (!klen || klen > CK_HANDLE_KEY_MAX || !ck_wire_key_ok((const uint8_t *)key, klen) ||
        kind < 1 || kind > CK_HANDLE_KIND_MAX || kgr.start < 0 || kgr.end < kgr.start - 1 ||
        (flags & ~(CK_HANDLE_SHARED | CK_HANDLE_REUSED | CK_HANDLE_SEGMENT | CK_HANDLE_INLINE |
                   CK_HANDLE_MODELLED | CK_HANDLE_OPCOUNTS)) ||
        ((flags & CK_HANDLE_MODELLED) && modelled <= bytes) ||
        ((flags & CK_HANDLE_INLINE) &&
         ((flags & ~CK_HANDLE_OPCOUNTS) != CK_HANDLE_INLINE || !data ||
          bytes > CK_HANDLE_INLINE_MAX)) ||
        (!(flags & CK_HANDLE_SEGMENT) && offset) || offset > UINT64_MAX - bytes ||
        ((flags & CK_HANDLE_SEGMENT) && !(flags & CK_HANDLE_SHARED)) || /* see handle.h */
        of_op != (op != CK_HANDLE_NO_OP) || (of_op ? !ck_handle_local_ok(local) : local[0] != 0))
        return CK_EINVAL;
    if (hs->n == hs->cap) {
        uint32_t cap = hs->cap ? 2 * hs->cap : 2;
        ck_handle *v = realloc(hs->v, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        hs->v = v;
        hs->cap = cap;
    }
    ck_handle *h = &hs->v[hs->n];
    h->data = NULL;
    h->opc = NULL;
    h->nopc = 0;
    if ((flags & CK_HANDLE_OPCOUNTS) && opcounts_set(h, opc, nopc))
        return CK_ENOMEM;
    if (flags & CK_HANDLE_INLINE) {
        h->data = malloc(bytes ? bytes : 1);
        if (!h->data) {
            free(h->opc);
            return CK_ENOMEM;
        }
        memcpy(h->data, data, bytes);
    }
    h->key = malloc(klen + 1);
    if (!h->key) {
        free(h->data);
        free(h->opc);
        return CK_ENOMEM;
    }
    memcpy(h->key, key, klen + 1);
    h->bytes = bytes;
    h->modelled = (flags & CK_HANDLE_MODELLED) ? modelled : bytes;
    h->offset = offset;
    h->crc = crc;
    h->kind = (uint8_t)kind;
    h->flags = (uint8_t)flags;
    h->kgr = kgr;
    h->op = op;
    snprintf(h->local, sizeof(h->local), "%s", local);
    hs->n++;
    return CK_OK;
}

int ck_handles_add(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
                   uint32_t crc, ck_kgr kgr)
{
    if (flags & (CK_HANDLE_SEGMENT | CK_HANDLE_INLINE | CK_HANDLE_MODELLED |
                 CK_HANDLE_OPCOUNTS)) /* the *_last calls */
        return CK_EINVAL;
    return add(hs, kind, flags, key, bytes, 0, crc, kgr, CK_HANDLE_NO_OP, "", NULL, bytes, NULL,
               0);
}

int ck_handles_add_op(ck_handles *hs, int kind, uint32_t flags, const char *key, uint64_t bytes,
                      uint32_t crc, ck_kgr kgr, uint32_t op,
                      const char *local)
{
    if (op == CK_HANDLE_NO_OP || kind == CK_HANDLE_SNAPSHOT ||
        (flags & (CK_HANDLE_SEGMENT | CK_HANDLE_INLINE | CK_HANDLE_MODELLED |
                  CK_HANDLE_OPCOUNTS)))
        return CK_EINVAL;
    return add(hs, kind, flags, key, bytes, 0, crc, kgr, op, local, NULL, bytes, NULL, 0);
}

int ck_handles_add_native(ck_handles *hs, uint32_t flags, const char *key, uint64_t bytes,
                          uint32_t crc, ck_kgr kgr, uint32_t op,
                          const char *local)
{
    return ck_handles_add_op(hs, CK_HANDLE_NATIVE, flags, key, bytes, crc, kgr, op,
                             local);
}

int ck_handles_add_like(ck_handles *hs, const ck_handle *h, uint32_t flags)
{
    if (h->modelled > h->bytes && !(flags & CK_HANDLE_INLINE))
        flags |= CK_HANDLE_MODELLED; /* a copy weighs what the original does */
    else
        flags &= ~CK_HANDLE_MODELLED;
    /* its operator state's counts go with it */
    flags = (flags & ~CK_HANDLE_OPCOUNTS) | (h->flags & CK_HANDLE_OPCOUNTS);
    return add(hs, h->kind, flags, h->key, h->bytes, flags & CK_HANDLE_SEGMENT ? h->offset : 0,
               h->crc, h->kgr, h->op, h->local, h->data, h->modelled, h->opc, h->nopc);
}

int ck_handles_opcounts_last(ck_handles *hs, const ck_handle_opcount *v, uint32_t n)
{
    ck_handle *h = hs->n ? &hs->v[hs->n - 1] : NULL;
    if (!h || h->kind != CK_HANDLE_SNAPSHOT || (n && !v) || !opcounts_ok(v, n))
        return CK_EINVAL;
    int rc = opcounts_set(h, v, n);
    if (!rc)
        h->flags |= CK_HANDLE_OPCOUNTS;
    return rc;
}

int ck_handles_model_last(ck_handles *hs, uint64_t modelled)
{
    ck_handle *h = hs->n ? &hs->v[hs->n - 1] : NULL;
    if (!h || (h->flags & CK_HANDLE_INLINE) || modelled < h->bytes)
        return CK_EINVAL;
    if (modelled == h->bytes)
        h->flags &= (uint8_t)~CK_HANDLE_MODELLED;
    else
        h->flags |= CK_HANDLE_MODELLED;
    h->modelled = modelled;
    return CK_OK;
}

int ck_handles_inline_last(ck_handles *hs, uint8_t *data, size_t len)
{
    ck_handle *h = hs->n ? &hs->v[hs->n - 1] : NULL;
    if (!h || (h->flags & ~CK_HANDLE_OPCOUNTS) || h->modelled != h->bytes || len != h->bytes ||
        len > CK_HANDLE_INLINE_MAX) {
        free(data);
        return CK_EINVAL;
    }
    h->flags |= CK_HANDLE_INLINE;
    h->data = data;
    return CK_OK;
}

int ck_handle_stored(const ck_handle *h)
{
    return !(h->flags & CK_HANDLE_INLINE);
}

int ck_handles_segment_last(ck_handles *hs, uint64_t offset)
{
    if (!hs->n || offset > UINT64_MAX - hs->v[hs->n - 1].bytes ||
        !(hs->v[hs->n - 1].flags & CK_HANDLE_SHARED))
        return CK_EINVAL;
    hs->v[hs->n - 1].flags |= CK_HANDLE_SEGMENT;
    hs->v[hs->n - 1].offset = offset;
    return CK_OK;
}

int ck_handles_copy(ck_handles *dst, const ck_handles *src)
{
    memset(dst, 0, sizeof(*dst));
    for (uint32_t i = 0; i < src->n; i++) {
        const ck_handle *h = &src->v[i];
        if (add(dst, h->kind, h->flags, h->key, h->bytes, h->offset, h->crc, h->kgr, h->op,
                h->local, h->data, h->modelled, h->opc, h->nopc)) {
            ck_handles_free(dst);
            return CK_ENOMEM; /* src's handles are valid: only memory can fail */
        }
    }
    return CK_OK;
}

void ck_handles_truncate(ck_handles *hs, uint32_t n)
{
    for (uint32_t i = n; i < hs->n; i++) {
        free(hs->v[i].key);
        free(hs->v[i].data);
        free(hs->v[i].opc);
    }
    if (n < hs->n)
        hs->n = n;
}

void ck_handles_free(ck_handles *hs)
{
    ck_handles_truncate(hs, 0);
    free(hs->v);
    memset(hs, 0, sizeof(*hs));
}

/* The sum over hs's files whose flags, masked by mask, are want: of their
 * bytes, or of what they weigh (`modelled`). */
static uint64_t sum(const ck_handles *hs, int modelled, uint32_t mask, uint32_t want)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < hs->n; i++)
        if ((hs->v[i].flags & mask) == want)
            b += modelled ? hs->v[i].modelled : hs->v[i].bytes;
    return b;
}

uint64_t ck_handles_bytes(const ck_handles *hs)
{
    return sum(hs, 0, 0, 0);
}

uint64_t ck_handles_bytes_inline(const ck_handles *hs)
{
    return sum(hs, 0, CK_HANDLE_INLINE, CK_HANDLE_INLINE);
}

uint64_t ck_handles_modelled(const ck_handles *hs)
{
    return sum(hs, 1, 0, 0);
}

uint64_t ck_handles_modelled_new(const ck_handles *hs)
{
    return sum(hs, 1, CK_HANDLE_REUSED, 0);
}

uint64_t ck_handles_bytes_new(const ck_handles *hs)
{
    return sum(hs, 0, CK_HANDLE_REUSED, 0);
}

static void put(ck_wbuf *w, const ck_handles *hs, int counts)
{
    ck_wbuf_u32(w, hs->n);
    for (uint32_t i = 0; i < hs->n; i++) {
        const ck_handle *h = &hs->v[i];
        size_t klen = strlen(h->key), llen = strlen(h->local);
        uint8_t flags = counts ? h->flags : (uint8_t)(h->flags & ~CK_HANDLE_OPCOUNTS);
        uint8_t *p = ck_wbuf_room(w, 4);
        if (p) {
            p[0] = h->kind;
            p[1] = flags;
            ck_put_u16(p + 2, (uint16_t)klen);
        }
        ck_wbuf_bytes(w, h->key, klen);
        ck_wbuf_u64(w, h->bytes);
        ck_wbuf_u32(w, h->crc);
        /* half-open on the wire (handle.h) */
        ck_wbuf_u32(w, (uint32_t)h->kgr.start);
        ck_wbuf_u32(w, (uint32_t)(ck_kgr_empty(h->kgr) ? h->kgr.start : h->kgr.end + 1));
        ck_wbuf_u32(w, h->op);
        p = ck_wbuf_room(w, 1);
        if (p)
            p[0] = (uint8_t)llen;
        ck_wbuf_bytes(w, h->local, llen);
        if (h->flags & CK_HANDLE_SEGMENT)
            ck_wbuf_u64(w, h->offset);
        if (h->flags & CK_HANDLE_MODELLED)
            ck_wbuf_u64(w, h->modelled);
        if (flags & CK_HANDLE_OPCOUNTS) {
            p = ck_wbuf_room(w, 2);
            if (p)
                ck_put_u16(p, (uint16_t)h->nopc);
            for (uint32_t k = 0; k < h->nopc; k++) {
                const ck_handle_opcount *c = &h->opc[k];
                size_t nl = strlen(c->name);
                ck_wbuf_u32(w, c->op);
                p = ck_wbuf_room(w, 1);
                if (p)
                    p[0] = c->mode;
                ck_wbuf_u32(w, c->entries);
                p = ck_wbuf_room(w, 1);
                if (p)
                    p[0] = (uint8_t)nl;
                ck_wbuf_bytes(w, c->name, nl);
            }
        }
        if (h->flags & CK_HANDLE_INLINE)
            ck_wbuf_bytes(w, h->data, (size_t)h->bytes);
    }
}

void ck_handles_put(ck_wbuf *w, const ck_handles *hs)
{
    put(w, hs, 1);
}

void ck_handles_put_bare(ck_wbuf *w, const ck_handles *hs)
{
    put(w, hs, 0);
}

/* The smallest handle on the wire: a one-byte key, no local name. */
#define HANDLE_MIN 30

int ck_handles_get(ck_rbuf *r, ck_handles *hs, uint32_t max_kg, const char **why)
{
    memset(hs, 0, sizeof(*hs));
    uint32_t n = ck_rbuf_u32(r);
    *why = "bad count of state handles";
    if (r->err || n > ck_rbuf_left(r) / HANDLE_MIN)
        return CK_ECORRUPT;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = ck_rbuf_take(r, 4);
        size_t klen = p ? ck_get_u16(p + 2) : 0;
        const uint8_t *key = ck_rbuf_take(r, klen);
        uint64_t bytes = ck_rbuf_u64(r);
        uint32_t crc = ck_rbuf_u32(r), kgs = ck_rbuf_u32(r), kge = ck_rbuf_u32(r);
        uint32_t op = ck_rbuf_u32(r);
        const uint8_t *lp = ck_rbuf_take(r, 1);
        size_t llen = lp ? lp[0] : 0;
        const uint8_t *local = ck_rbuf_take(r, llen);
        uint64_t offset = p && (p[1] & CK_HANDLE_SEGMENT) ? ck_rbuf_u64(r) : 0;
        uint64_t modelled = p && (p[1] & CK_HANDLE_MODELLED) ? ck_rbuf_u64(r) : bytes;
        ck_handle_opcount *opc = NULL;
        uint32_t nopc = 0;
        if (p && (p[1] & CK_HANDLE_OPCOUNTS)) {
            const uint8_t *np = ck_rbuf_take(r, 2);
            nopc = np ? ck_get_u16(np) : 0;
            *why = "bad operator-state counts of a state handle";
            if (nopc > CK_HANDLE_MAX_OPCOUNTS || nopc > ck_rbuf_left(r) / 11)
                goto bad;
            opc = calloc(nopc ? nopc : 1, sizeof(*opc));
            if (!opc) {
                ck_handles_free(hs);
                return CK_ENOMEM;
            }
            for (uint32_t k = 0; k < nopc && !r->err; k++) {
                opc[k].op = ck_rbuf_u32(r);
                const uint8_t *mp = ck_rbuf_take(r, 1);
                opc[k].mode = mp ? mp[0] : 0;
                opc[k].entries = ck_rbuf_u32(r);
                const uint8_t *lp2 = ck_rbuf_take(r, 1);
                size_t nl = lp2 ? lp2[0] : 0;
                const uint8_t *name = ck_rbuf_take(r, nl);
                if (!name || nl >= sizeof(opc[k].name) || memchr(name, 0, nl)) {
                    free(opc);
                    goto bad; /* opcounts_ok refuses an empty name */
                }
                memcpy(opc[k].name, name, nl);
            }
        }
        const uint8_t *data = NULL;
        *why = "bad size of an inline state file";
        if (p && (p[1] & CK_HANDLE_INLINE)) {
            if (bytes > CK_HANDLE_INLINE_MAX) {
                free(opc);
                goto bad;
            }
            data = ck_rbuf_take(r, (size_t)bytes);
        }
        *why = "truncated state handle";
        if (r->err) {
            free(opc);
            goto bad;
        }
        *why = "bad state handle (kind, flags, key, key-group range, local name, segment, "
               "modelled size or operator-state counts)";
        char kbuf[CK_HANDLE_KEY_MAX + 1], lbuf[CK_HANDLE_LOCAL_MAX + 1];
        if (klen > CK_HANDLE_KEY_MAX || llen > CK_HANDLE_LOCAL_MAX || kge > max_kg ||
            !ck_wire_key_ok(key, klen) || memchr(local, 0, llen)) { /* a NUL: another name */
            free(opc);
            goto bad;
        }
        memcpy(kbuf, key, klen);
        kbuf[klen] = 0;
        memcpy(lbuf, local, llen);
        lbuf[llen] = 0;
        /* kgs <= kge <= max_kg (at most 32768) is add's check: inclusive in memory */
        ck_kgr kgr = kgs <= kge ? ck_kgr_make((int32_t)kgs, (int32_t)kge - 1) : ck_kgr_make(1, -1);
        int rc = add(hs, p[0], p[1], kbuf, bytes, offset, crc, kgr, op, lbuf, data, modelled,
                     opc, nopc);
        free(opc);
        if (rc == CK_ENOMEM) {
            ck_handles_free(hs);
            return rc;
        }
        if (rc)
            goto bad;
    }
    return CK_OK;
bad:
    ck_handles_free(hs);
    return CK_ECORRUPT;
}
