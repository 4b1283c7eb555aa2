#include "kstate.h"

#include "error.h"
#include "heapstate.h"

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
