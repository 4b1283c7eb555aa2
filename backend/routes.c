#include "routes.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

void ck_routes_init(ck_routes *rt, uint32_t nsubtasks)
{
    memset(rt, 0, sizeof(*rt));
    rt->nsubtasks = nsubtasks;
    rt->newest = -1;
}

void ck_routes_free(ck_routes *rt)
{
    for (int i = 0; i < rt->n; i++)
        free(rt->v[i].hosts);
    free(rt->v);
    ck_routes_init(rt, rt->nsubtasks);
}

int ck_routes_set(ck_routes *rt, uint32_t attempt, int gen, uint32_t n, const uint16_t *hosts)
{
    if (n > rt->nsubtasks)
        return CK_EINVAL;
    for (int i = 0; i < rt->n; i++)
        if (rt->v[i].attempt == attempt)
            return CK_OK;
    if (rt->n == rt->cap) {
        int cap = rt->cap ? rt->cap * 2 : 4;
        ck_route *v = realloc(rt->v, (size_t)cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        rt->v = v;
        rt->cap = cap;
    }
    uint16_t *h = malloc((size_t)n * sizeof(*h) + 1);
    if (!h)
        return CK_ENOMEM;
    memcpy(h, hosts, (size_t)n * sizeof(*h));
    rt->v[rt->n++] = (ck_route){attempt, gen, n, h};
    if ((int64_t)attempt > rt->newest)
        rt->newest = attempt;
    return CK_OK;
}

int ck_routes_host(const ck_routes *rt, const ck_graph *g, uint32_t ep)
{
    uint32_t attempt, global;
    if (!ck_ep_task_split(g, ep, &attempt, &global))
        return -1;
    for (int i = rt->n; i-- > 0;)
        if (rt->v[i].attempt == attempt)
            return global >= rt->v[i].n || rt->v[i].hosts[global] == CK_HOST_NONE
                       ? -1
                       : rt->v[i].hosts[global];
    return -1;
}

int ck_routes_gen(const ck_routes *rt, uint32_t attempt)
{
    for (int i = rt->n; i-- > 0;)
        if (rt->v[i].attempt == attempt)
            return rt->v[i].gen;
    return -1;
}

#define CK_INV_MODULE "routes"

int ck_routes_check(const ck_routes *rt, ck_inv *v)
{
    int64_t newest = -1;
    for (int i = 0; i < rt->n; i++) {
        for (int j = 0; j < i; j++)
            CK_INV(v, 1, rt->v[j].attempt != rt->v[i].attempt, "attempt %u has two tables",
                   rt->v[i].attempt);
        if ((int64_t)rt->v[i].attempt > newest)
            newest = rt->v[i].attempt;
    }
    CK_INV(v, 2, rt->newest == newest, "newest attempt %lld, tables up to %lld",
           (long long)rt->newest, (long long)newest);
    return 0;
}
