#include "kstate.h"

#include "heapstate.h"

ck_kstate *ck_kstate_new(int type, int kg_start, int kg_end, const ck_state_desc *d, int n)
{
    if (n < 1 || n > CK_KS_MAX_STATES || kg_start > kg_end)
        return NULL;
    for (int i = 0; i < n; i++)
        if (d[i].nfields < 1 || d[i].nfields > CK_KS_MAX_FIELDS ||
            (d[i].kind != CK_STATE_VALUE && d[i].kind != CK_STATE_MAP))
            return NULL;
    switch (type) {
    case CK_BACKEND_HASHMAP:
        return ck_heap_kstate_new(kg_start, kg_end, d, n);
    default:
        return NULL;
    }
}
