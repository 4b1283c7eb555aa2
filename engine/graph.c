#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "keygroup.h"

const char *ck_op_kind_name(ck_op_kind k)
{
    switch (k) {
    case CK_OP_SOURCE:
        return "source";
    case CK_OP_MAP:
        return "map";
    case CK_OP_FILTER:
        return "filter";
    case CK_OP_AGGREGATE:
        return "aggregate";
    case CK_OP_WINDOW:
        return "window";
    case CK_OP_SINK:
        return "sink";
    case CK_OP_DISTINCT:
        return "distinct";
    case CK_OP_BUFFER:
        return "buffer";
    }
    return "?";
}

const char *ck_ship_name(ck_ship s)
{
    static const char *const names[] = {"forward", "hash", "rebalance", "rescale", "broadcast"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static int pointwise(ck_ship s)
{
    return s == CK_SHIP_FORWARD || s == CK_SHIP_RESCALE;
}

/* The consumers producer p of a pointwise edge feeds, of S producers and
 * T consumers (Flink's getConsumerExecutionVerticesPointwise, with its
 * float arithmetic and its "mirror" for uneven counts). */
static void pointwise_targets(int S, int T, int p, int *first, int *n)
{
    if (S == T) {
        *first = p, *n = 1;
    } else if (S > T) {
        *n = 1;
        if (S % T == 0) {
            *first = p / (S / T);
        } else {
            float factor = (float)S / (float)T;
            int mirror = S - 1 - p;
            *first = T - 1 - (int)((float)mirror / factor);
        }
    } else if (T % S == 0) {
        *first = p * (T / S), *n = T / S;
    } else {
        float factor = (float)T / (float)S;
        int mirror = S - 1 - p;
        int start = (int)((float)mirror * factor);
        int end = mirror == S - 1 ? T : (int)((float)(mirror + 1) * factor);
        /* targets T-1-start down to T-end */
        *first = T - end, *n = end - start;
    }
}

void ck_graph_edge_outputs(const ck_graph *g, const ck_edge *e, int p, int *first, int *n)
{
    int S = g->v[e->src_v].parallelism, T = g->v[e->dst_v].parallelism;
    if (pointwise(e->ship))
        pointwise_targets(S, T, p, first, n);
    else
        *first = 0, *n = T;
}

void ck_graph_edge_inputs(const ck_graph *g, const ck_edge *e, int c, int *first, int *n)
{
    int S = g->v[e->src_v].parallelism, T = g->v[e->dst_v].parallelism;
    if (!pointwise(e->ship)) {
        *first = 0, *n = S;
        return;
    }
    *first = -1, *n = 0;
    for (int p = 0; p < S; p++) {
        int f, k;
        pointwise_targets(S, T, p, &f, &k);
        if (c >= f && c < f + k) {
            if (*first < 0)
                *first = p;
            (*n)++;
        }
    }
}

#define FAIL(op, ...)                                                          \
    do {                                                                       \
        *bad_op = (op);                                                        \
        snprintf(err, errlen, __VA_ARGS__);                                    \
        return CK_EINVAL;                                                      \
    } while (0)

int ck_graph_build(ck_graph *g, const ck_job_spec *spec, const ck_config *cfg,
                   int *bad_op, char *err, size_t errlen)
{
    memset(g, 0, sizeof(*g));
    g->spec = *spec;
    ck_job_spec *s = &g->spec;
    if (s->nops < 2)
        FAIL(-1, "a job needs at least a source and a sink");
    int nsucc[CK_MAX_OPS] = {0};
    for (int i = 0; i < s->nops; i++) {
        ck_op_spec *o = &s->ops[i];
        for (int j = 0; j < i; j++)
            if (strcmp(s->ops[j].name, o->name) == 0)
                FAIL(i, "operator name \"%s\" is used twice", o->name);
        if (!o->uid[0])
            memcpy(o->uid, o->name, sizeof(o->uid));
        for (int j = 0; j < i; j++)
            if (strcmp(s->ops[j].uid, o->uid) == 0)
                FAIL(i, "operator uid \"%s\" is used twice (\"%s\" and \"%s\")", o->uid,
                     s->ops[j].name, o->name);
        if (o->parallelism == 0)
            o->parallelism = (int)ck_cfg(cfg, CK_CFG_PARALLELISM_DEFAULT);
        if (o->kind == CK_OP_SOURCE) {
            if (o->input != -1)
                FAIL(i, "a source has no input");
        } else {
            if (o->input < 0 || o->input >= i)
                FAIL(i, "input must name an operator listed before this one");
            if (s->ops[o->input].kind == CK_OP_SINK)
                FAIL(i, "a sink has no output to read from");
            nsucc[o->input]++;
        }
        if (ck_op_keyed(o->kind) && o->ship != CK_SHIP_HASH)
            FAIL(i, "%s operators are keyed: their input must use \"partition\": \"hash\"",
                 ck_op_kind_name(o->kind));
        if (o->kind == CK_OP_BUFFER && (o->buffer_count < 1 || o->buffer_count > CK_BUFFER_MAX))
            FAIL(i, "a buffer holds 1 to %d records, not %d", CK_BUFFER_MAX, o->buffer_count);
        /* Inputs come first, so the input's parallelism is resolved. */
        if (o->kind != CK_OP_SOURCE && o->ship == CK_SHIP_FORWARD &&
            s->ops[o->input].parallelism != o->parallelism)
            FAIL(i, "forward partitioning needs equal parallelism, but \"%s\" has %d and this has %d",
                 s->ops[o->input].name, s->ops[o->input].parallelism, o->parallelism);
        int maxp = o->max_parallelism;
        o->max_parallelism_set = maxp > 0 || ck_cfg(cfg, CK_CFG_MAX_PARALLELISM) > 0;
        if (maxp == 0) {
            int64_t cfgmax = ck_cfg(cfg, CK_CFG_MAX_PARALLELISM);
            maxp = cfgmax > 0 ? (int)cfgmax : ck_kg_default_max_parallelism(o->parallelism);
        }
        if (ck_kg_check(o->parallelism, maxp))
            FAIL(i, "parallelism %d exceeds max parallelism %d", o->parallelism, maxp);
        o->max_parallelism = maxp;
    }
    for (int i = 0; i < s->nops; i++) {
        if (s->ops[i].kind != CK_OP_SINK && nsucc[i] == 0)
            FAIL(i, "\"%s\" has no downstream operator: every branch must end in a sink",
                 s->ops[i].name);
    }

    /* Chain: an operator joins its input's vertex over a chainable edge. */
    int chaining = (int)ck_cfg(cfg, CK_CFG_CHAINING);
    for (int i = 0; i < s->nops; i++) {
        ck_op_spec *o = &s->ops[i];
        int in = o->input;
        int chain = chaining && in >= 0 && o->ship == CK_SHIP_FORWARD &&
                    s->ops[in].parallelism == o->parallelism;
        if (chain) {
            ck_vertex *v = &g->v[g->op_vertex[in]];
            v->ops[v->nops++] = i;
            g->op_vertex[i] = v->id;
            size_t l = strlen(v->name);
            snprintf(v->name + l, sizeof(v->name) - l, " -> %s", o->name);
            continue;
        }
        ck_vertex *v = &g->v[g->nv];
        v->id = g->nv++;
        v->parallelism = o->parallelism;
        v->ops[v->nops++] = i;
        v->in_edge = -1;
        snprintf(v->name, sizeof(v->name), "%s", o->name);
        g->op_vertex[i] = v->id;
        if (in >= 0) {
            ck_edge *e = &g->e[g->ne];
            e->id = g->ne++;
            e->src_v = g->op_vertex[in];
            e->dst_v = v->id;
            e->src_op = in;
            e->dst_op = i;
            e->ship = o->ship;
            e->dst_parallelism = o->parallelism;
            e->dst_max_parallelism = o->max_parallelism;
            v->in_edge = e->id;
            ck_vertex *src = &g->v[e->src_v];
            src->out_edges[src->nout++] = e->id;
        }
    }
    uint32_t base = 0;
    g->nslots = 0;
    for (int i = 0; i < g->nv; i++) {
        g->v[i].base = base;
        base += (uint32_t)g->v[i].parallelism;
        if (g->v[i].parallelism > g->nslots)
            g->nslots = g->v[i].parallelism;
    }
    g->nsubtasks = base;
    g->slots_per_host = (int)ck_cfg(cfg, CK_CFG_TASK_SLOTS);
    g->generation = 0;
    g->ep_stride = base;
    return CK_OK;
}

int ck_graph_share_stride(ck_graph *gens, int n)
{
    uint32_t stride = 0;
    for (int k = 0; k < n; k++) {
        const ck_graph *g = &gens[k], *g0 = &gens[0];
        if (g->nv != g0->nv || g->ne != g0->ne || g->spec.nops != g0->spec.nops)
            return CK_EINVAL;
        for (int v = 0; v < g->nv; v++)
            if (g->v[v].nops != g0->v[v].nops || g->v[v].in_edge != g0->v[v].in_edge ||
                memcmp(g->v[v].ops, g0->v[v].ops, sizeof(int) * (size_t)g->v[v].nops))
                return CK_EINVAL;
        stride = CK_MAX(stride, g->nsubtasks);
    }
    for (int k = 0; k < n; k++) {
        gens[k].generation = k;
        gens[k].ep_stride = stride;
    }
    return CK_OK;
}

void ck_graph_locate(const ck_graph *g, uint32_t global, int *vertex, int *subtask)
{
    int v = 0;
    while (v + 1 < g->nv && g->v[v + 1].base <= global)
        v++;
    *vertex = v;
    *subtask = (int)(global - g->v[v].base);
}

int ck_graph_host(const ck_graph *g, uint32_t global)
{
    int v, i;
    ck_graph_locate(g, global, &v, &i);
    return i / g->slots_per_host;
}

int ck_graph_slot(const ck_graph *g, uint32_t global)
{
    int v, i;
    ck_graph_locate(g, global, &v, &i);
    return i;
}

int ck_graph_hosts_needed(const ck_graph *g)
{
    return (g->nslots + g->slots_per_host - 1) / g->slots_per_host;
}

static uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* the lower index is the root */
}

int ck_graph_regions(const ck_graph *g, uint32_t *region)
{
    uint32_t *parent = malloc((size_t)g->nsubtasks * sizeof(*parent));
    if (!parent)
        return CK_ENOMEM;
    for (uint32_t i = 0; i < g->nsubtasks; i++)
        parent[i] = i;
    for (int e = 0; e < g->ne; e++) {
        const ck_vertex *u = &g->v[g->e[e].src_v], *v = &g->v[g->e[e].dst_v];
        if (pointwise(g->e[e].ship)) {
            for (int i = 0; i < u->parallelism; i++) {
                int f, n;
                ck_graph_edge_outputs(g, &g->e[e], i, &f, &n);
                for (int k = 0; k < n; k++)
                    uf_union(parent, u->base + (uint32_t)i, v->base + (uint32_t)(f + k));
            }
        } else {
            for (int i = 0; i < u->parallelism; i++)
                uf_union(parent, u->base, u->base + (uint32_t)i);
            for (int i = 0; i < v->parallelism; i++)
                uf_union(parent, u->base, v->base + (uint32_t)i);
        }
    }
    /* Dense ids: a root has the lowest index of its region, so it comes
     * first in order and has its id before any member asks. */
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nsubtasks; i++) {
        uint32_t r = uf_find(parent, i);
        region[i] = r == i ? n++ : region[r];
    }
    free(parent);
    return (int)n;
}

void ck_graph_describe(const ck_graph *g, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < g->spec.nops && off < len; i++) {
        const ck_op_spec *o = &g->spec.ops[i];
        /* -> forward, => hash, -rebalance-> and the like for the others */
        char arrow[24];
        if (o->ship == CK_SHIP_FORWARD || o->ship == CK_SHIP_HASH)
            snprintf(arrow, sizeof(arrow), "%s", o->ship == CK_SHIP_HASH ? "=>" : "->");
        else
            snprintf(arrow, sizeof(arrow), "-%s->", ck_ship_name(o->ship));
        if (o->input < 0) /* a source: a pipeline of its own begins */
            off += (size_t)snprintf(buf + off, len - off, "%s%s(%d)", i > 0 ? "; " : "",
                                    o->name, o->parallelism);
        else if (o->input != i - 1)
            off += (size_t)snprintf(buf + off, len - off, "; %s %s %s(%d)",
                                    g->spec.ops[o->input].name, arrow, o->name, o->parallelism);
        else
            off += (size_t)snprintf(buf + off, len - off, " %s %s(%d)", arrow, o->name,
                                    o->parallelism);
    }
}
