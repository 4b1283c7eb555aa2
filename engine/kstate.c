#include "kstate.h"

#include "bytes.h"
#include "error.h"
#include "heapstate.h"

#include <math.h>

int ck_kstate_spec_ok(ck_kgr kgr, const ck_state_desc *d, int n)
{
    if (n < 1 || n > CK_KS_MAX_STATES || ck_kgr_empty(kgr))
        return 0;
    for (int i = 0; i < n; i++)
        if (d[i].nfields < 1 || d[i].nfields > CK_KS_MAX_FIELDS ||
            (d[i].kind != CK_STATE_VALUE && d[i].kind != CK_STATE_MAP &&
             d[i].kind != CK_STATE_LIST))
            return 0;
    return 1;
}

ck_kstate *ck_kstate_new(int type, ck_kgr kgr, const ck_state_desc *d, int n)
{
    if (!ck_kstate_spec_ok(kgr, d, n))
        return NULL;
    switch (type) {
    case CK_BACKEND_HASHMAP:
        return ck_heap_kstate_new(kgr, d, n);
    default:
        return NULL;
    }
}

int ck_ks_put_entry(ck_kstate *s, int kg, int32_t jhash, const ck_kentry *e)
{
    if (!ck_kgr_contains(s->kgr, kg))
        return CK_EPROTO;
    ck_kkey k = {.loc = {jhash, kg, e->ns, 0},
                 .key = e->key,
                 .klen = e->klen,
                 .ukey = e->ukey,
                 .uklen = e->uklen};
    ck_ks_locate(s, e->st, &k);
    uint32_t nf = s->states[e->st].nfields;
    if (s->states[e->st].kind == CK_STATE_LIST) {
        for (uint32_t i = 0; i < e->count; i++) {
            int rc = s->ops->list_add(s, e->st, &k, e->value + (size_t)i * nf);
            if (rc)
                return rc;
        }
        return CK_OK;
    }
    int created;
    int64_t *v = ck_ks_acquire(s, e->st, &k, 1, &created);
    if (!v)
        return CK_ENOMEM;
    memcpy(v, e->value, nf * sizeof(int64_t));
    return ck_ks_release(s, e->st, &k, v, 1);
}

#define CK_INV_MODULE "kstate"

int ck_ks_check(const ck_kstate *s, ck_inv *v)
{
    CK_INV(v, 1, !ck_kgr_empty(s->kgr) && s->nstates >= 1 && s->nstates <= CK_KS_MAX_STATES,
           "%s: key groups [%d, %d], %d states", s->ops->name, s->kgr.start, s->kgr.end,
           s->nstates);
    return s->ops->check ? s->ops->check(s, v) : 0;
}

static const char *const rebuild_path_names[] = {
#define CK_KS_REBUILD_NAME(id, name) name,
    CK_KS_REBUILD_PATHS(CK_KS_REBUILD_NAME)
#undef CK_KS_REBUILD_NAME
};

const char *ck_ks_rebuild_path_name(int path)
{
    if (path == CK_KS_REBUILD_NONE)
        return "none";
    return path >= 0 && path < CK_KS_REBUILD_NPATHS ? rebuild_path_names[path] : "?";
}

ck_kstate_rebuild ck_kstate_rebuild_since(const ck_kstate_rebuild *a, const ck_kstate_rebuild *b)
{
    ck_kstate_rebuild d = {
        .rebuilds = a->rebuilds - b->rebuilds,
        .path = a->path,
        .opened = a->opened - b->opened,
        .keys_iterated = a->keys_iterated - b->keys_iterated,
        .keys_written = a->keys_written - b->keys_written,
        .bytes_written = a->bytes_written - b->bytes_written,
        .files_linked = a->files_linked - b->files_linked,
        .files_deleted = a->files_deleted - b->files_deleted,
        .files_imported = a->files_imported - b->files_imported,
        .ranges_deleted = a->ranges_deleted - b->ranges_deleted,
        .bytes_linked = a->bytes_linked - b->bytes_linked,
        .bytes_deleted = a->bytes_deleted - b->bytes_deleted,
        .bytes_imported = a->bytes_imported - b->bytes_imported,
        .flushes = a->flushes - b->flushes,
        .compactions = a->compactions - b->compactions,
        .flushed = a->flushed - b->flushed,
        .compacted = a->compacted - b->compacted,
        .target_file = a->target_file,
    };
    return d;
}

/* The files n files of `bytes` would be at weight h: as many as the
 * weight fills at the target size, and never fewer than there are. */
static double modelled_files(uint32_t n, uint64_t bytes, double h, uint64_t target)
{
    double f = (double)n;
    if (target && h > 1.0) {
        double w = ceil(h * (double)bytes / (double)target);
        if (w > f)
            f = w;
    }
    return f;
}

double ck_kstate_rebuild_cost(const ck_kstate_rebuild *r, double heavy, uint64_t *disk_bytes)
{
    double h = heavy > 1.0 ? heavy : 1.0;
    double keys = (double)(r->keys_iterated > r->keys_written ? r->keys_iterated
                                                                : r->keys_written);
    double files = modelled_files(r->files_linked, r->bytes_linked, h, r->target_file) *
                       CK_REBUILD_LINK_FLOPS +
                   modelled_files(r->files_deleted, r->bytes_deleted, h, r->target_file) *
                       CK_REBUILD_DELETE_FILE_FLOPS +
                   modelled_files(r->files_imported, r->bytes_imported, h, r->target_file) *
                       CK_REBUILD_IMPORT_FILE_FLOPS;
    double flops = (double)r->opened * CK_REBUILD_OPEN_FLOPS + keys * CK_REBUILD_KEY_FLOPS +
                   (double)r->ranges_deleted * CK_REBUILD_RANGE_FLOPS + files +
                   h * ((double)r->bytes_written * CK_REBUILD_BYTE_FLOPS +
                        (double)r->flushed * CK_STATE_FLUSH_FLOPS_PER_BYTE +
                        (double)r->compacted * CK_STATE_COMPACT_FLOPS_PER_BYTE);
    /* the copies read what they write from the old instances' files; a
     * flush writes its bytes; a compaction reads its inputs and writes as
     * much back */
    *disk_bytes = (uint64_t)(h * ((double)r->bytes_written + (double)r->flushed +
                                  2.0 * (double)r->compacted));
    return flops;
}

void ck_kstate_rebuild_put(uint8_t *p, const ck_kstate_rebuild *r)
{
    for (int i = 0; i < CK_KS_REBUILD_NPATHS; i++)
        ck_put_u32(p + 4 * i, r->rebuilds && r->path == i ? r->rebuilds : 0);
    p += 4 * CK_KS_REBUILD_NPATHS;
    ck_put_u64(p, r->keys_iterated);
    ck_put_u64(p + 8, r->keys_written);
    ck_put_u64(p + 16, r->bytes_written);
    ck_put_u32(p + 24, r->files_linked);
    ck_put_u32(p + 28, r->files_deleted);
    ck_put_u32(p + 32, r->files_imported);
    ck_put_u32(p + 36, r->ranges_deleted);
}

void ck_kstate_rebuild_add_wire(ck_kstate_rebuild *r, uint32_t *paths, const uint8_t *p)
{
    for (int i = 0; i < CK_KS_REBUILD_NPATHS; i++) {
        uint32_t n = ck_get_u32(p + 4 * i);
        paths[i] += n;
        r->rebuilds += n;
    }
    p += 4 * CK_KS_REBUILD_NPATHS;
    r->keys_iterated += ck_get_u64(p);
    r->keys_written += ck_get_u64(p + 8);
    r->bytes_written += ck_get_u64(p + 16);
    r->files_linked += ck_get_u32(p + 24);
    r->files_deleted += ck_get_u32(p + 28);
    r->files_imported += ck_get_u32(p + 32);
    r->ranges_deleted += ck_get_u32(p + 36);
}
