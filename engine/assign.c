#include "assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "keygroup.h"
#include "topic.h"

#define CK_INV_MODULE "assign" /* invariant.h */

/* ---- operator state: Flink's RoundRobinOperatorStateRepartitioner ------------------- */

static int chunk_push(ck_asg_chunk **v, uint32_t *n, uint32_t old, uint32_t first, uint32_t cnt)
{
    if (!cnt)
        return CK_OK;
    ck_asg_chunk *nv = realloc(*v, (*n + 1) * sizeof(**v));
    if (!nv)
        return CK_ENOMEM;
    *v = nv;
    nv[(*n)++] = (ck_asg_chunk){old, first, cnt};
    return CK_OK;
}

void ck_asg_chunks_free(ck_asg_chunk **out, uint32_t nslots)
{
    for (uint32_t i = 0; out && i < nslots; i++) {
        free(out[i]);
        out[i] = NULL;
    }
}

int ck_asg_repartition(ck_asg_mode mode, uint32_t nnames, uint32_t old_p, uint32_t new_p,
                       const uint32_t *counts, ck_asg_chunk **out, uint32_t *nout)
{
    if (old_p < 1 || new_p < 1)
        return CK_EINVAL;
    for (uint64_t i = 0; i < (uint64_t)nnames * new_p; i++) {
        out[i] = NULL;
        nout[i] = 0;
    }
    int rc = CK_OK;
    uint32_t start = 0; /* Flink's startParallelOp, carried across names */
    for (uint32_t s = 0; s < nnames && !rc; s++) {
        const uint32_t *c = counts + (size_t)s * old_p;
        ck_asg_chunk **o = out + (size_t)s * new_p;
        uint32_t *no = nout + (size_t)s * new_p;
        if (mode == CK_ASG_UNION) {
            for (uint32_t j = 0; j < new_p && !rc; j++)
                for (uint32_t k = 0; k < old_p && !rc; k++)
                    rc = chunk_push(&o[j], &no[j], k, 0, c[k]);
            continue;
        }
        if (mode == CK_ASG_BROADCAST) {
            for (uint32_t j = 0; j < new_p && !rc; j++)
                rc = chunk_push(&o[j], &no[j], j % old_p, 0, c[j % old_p]);
            continue;
        }
        if (old_p == new_p) { /* split-distribute state stays with its subtask */
            for (uint32_t j = 0; j < new_p && !rc; j++)
                rc = chunk_push(&o[j], &no[j], j, 0, c[j]);
            continue;
        }
        uint64_t total = 0;
        for (uint32_t k = 0; k < old_p; k++)
            total += c[k];
        uint64_t base = total / new_p;
        int64_t rem = (int64_t)(total % new_p);
        uint32_t next_start = start;
        uint32_t k = 0, at = 0; /* the next entry: old subtask k's entry `at` */
        for (uint32_t i = 0; i < new_p && !rc; i++) {
            uint32_t j = (i + start) % new_p;
            uint64_t want = base;
            if (rem > 0) {
                want++;
                rem--;
            } else if (rem == 0) {
                next_start = j;
                rem--;
            }
            while (want > 0 && !rc) {
                while (k < old_p && at == c[k]) {
                    k++;
                    at = 0;
                }
                uint32_t take = c[k] - at < want ? c[k] - at : (uint32_t)want;
                rc = chunk_push(&o[j], &no[j], k, at, take);
                at += take;
                want -= take;
            }
        }
        start = next_start;
    }
    if (rc)
        ck_asg_chunks_free(out, nnames * new_p);
    return rc;
}

/* ---- the plan ------------------------------------------------------------------------- */

void ck_asg_free(ck_asg *a)
{
    for (uint32_t g = 0; a->tasks && g < a->ntasks; g++) {
        ck_asg_task *t = &a->tasks[g];
        free(t->takes);
        for (uint32_t k = 0; k < t->nops; k++)
            free(t->ops[k].v);
        free(t->ops);
    }
    free(a->tasks);
    memset(a, 0, sizeof(*a));
}

/* The snapshot's vertices: its own, or (version 3) the job's. */
static int old_vertices(const ck_cp_meta *m, const ck_graph *g, ck_cp_meta_vertex **mine,
                        const ck_cp_meta_vertex **ov, uint32_t *nov, char *err, size_t errlen)
{
    *mine = NULL;
    if (m->nvertices) {
        *ov = m->vertices;
        *nov = m->nvertices;
        return CK_OK;
    }
    if (m->nsubtasks != g->nsubtasks) {
        snprintf(err, errlen,
                 "the snapshot's _metadata is of the old format (version %u, without operator "
                 "ids), which restores only at the job's own parallelism: it holds the state of "
                 "%u subtasks, the job has %u",
                 m->version, m->nsubtasks, g->nsubtasks);
        return CK_EINVAL;
    }
    ck_cp_meta tmp = {0};
    if (ck_cp_meta_vertices(&tmp, g))
        return CK_ENOMEM;
    *mine = tmp.vertices;
    *ov = tmp.vertices;
    *nov = tmp.nvertices;
    return CK_OK;
}

/* The job's operator of uid `uid`, or -1. */
static int op_of_uid(const ck_graph *g, const char *uid)
{
    for (int i = 0; i < g->spec.nops; i++)
        if (!strcmp(g->spec.ops[i].uid[0] ? g->spec.ops[i].uid : g->spec.ops[i].name, uid))
            return i;
    return -1;
}

static const char *uid_of(const ck_op_spec *o)
{
    return o->uid[0] ? o->uid : o->name;
}

static int take_push(ck_asg_task *t, ck_asg_take tk)
{
    if (t->ntakes == t->captakes) {
        uint32_t cap = t->captakes ? 2 * t->captakes : 4;
        ck_asg_take *v = realloc(t->takes, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        t->takes = v;
        t->captakes = cap;
    }
    t->takes[t->ntakes++] = tk;
    return CK_OK;
}

/* Index of the first keyed operator of vertex v of g, or -1. */
static int keyed_op(const ck_graph *g, int v)
{
    for (int k = 0; k < g->v[v].nops; k++)
        if (ck_op_keyed(g->spec.ops[g->v[v].ops[k]].kind))
            return g->v[v].ops[k];
    return -1;
}

/* Matches the snapshot's operators to the job's by uid and checks the
 * max parallelisms (C1). */
static int match(ck_asg *a, const ck_cp_meta_vertex *ov, uint32_t nov, const ck_graph *g,
                 char *err, size_t errlen)
{
    for (int v = 0; v < g->nv; v++)
        a->old_vertex[v] = -1;
    uint32_t base = 0;
    for (uint32_t o = 0; o < nov; o++) {
        const ck_cp_meta_vertex *mv = &ov[o];
        a->old_base[o] = base;
        base += mv->parallelism;
        int nv = -1;
        for (uint32_t k = 0; k < mv->nops; k++) {
            const ck_cp_meta_op *mo = &mv->ops[k];
            int n = op_of_uid(g, mo->uid);
            if (n < 0) {
                snprintf(err, errlen,
                         "the snapshot holds the state of operator uid \"%s\", which the job "
                         "does not have (Flink refuses to drop state without "
                         "--allowNonRestoredState): give that operator its uid",
                         mo->uid);
                return CK_EINVAL;
            }
            const ck_op_spec *op = &g->spec.ops[n];
            if ((int)op->kind != mo->kind) {
                snprintf(err, errlen,
                         "operator uid \"%s\" is a %s in the snapshot, and the job's \"%s\" is a %s",
                         mo->uid, ck_op_kind_name((ck_op_kind)mo->kind), op->name,
                         ck_op_kind_name(op->kind));
                return CK_EINVAL;
            }
            if (k == 0) {
                nv = g->op_vertex[n];
                if (a->old_vertex[nv] >= 0 || g->v[nv].nops != (int)mv->nops) {
                    snprintf(err, errlen,
                             "operator uid \"%s\" is chained with other operators in the job "
                             "(vertex \"%s\") than in the snapshot (%u operators): a subtask's "
                             "state holds its whole chain",
                             mo->uid, g->v[nv].name, mv->nops);
                    return CK_EINVAL;
                }
                a->old_vertex[nv] = (int)o;
            }
            if (g->v[nv].ops[k] != n) {
                snprintf(err, errlen,
                         "operator uid \"%s\" is chained with other operators in the job "
                         "(vertex \"%s\") than in the snapshot: a subtask's state holds its "
                         "whole chain",
                         mo->uid, g->v[nv].name);
                return CK_EINVAL;
            }
            /* Max parallelism: Flink's checkParallelismPreconditions. */
            int p = g->v[nv].parallelism;
            if (mo->max_parallelism < (uint32_t)p) {
                snprintf(err, errlen,
                         "operator \"%s\" (uid \"%s\"): the snapshot's max parallelism %u is "
                         "below the job's parallelism %d",
                         op->name, mo->uid, mo->max_parallelism, p);
                return CK_EINVAL;
            }
            a->max_parallelism[n] = op->max_parallelism;
            if (mo->max_parallelism != (uint32_t)op->max_parallelism) {
                if (op->max_parallelism_set) {
                    snprintf(err, errlen,
                             "operator \"%s\" (uid \"%s\"): the job sets max parallelism %d, "
                             "and the snapshot's state has %u key groups (its max "
                             "parallelism): leave it unset to adopt the snapshot's",
                             op->name, mo->uid, op->max_parallelism, mo->max_parallelism);
                    return CK_EINVAL;
                }
                a->max_parallelism[n] = (int)mo->max_parallelism;
                a->adopted[n] = 1;
            }
        }
    }
    for (int v = 0; v < g->nv; v++)
        if (a->old_vertex[v] < 0) {
            const ck_op_spec *op = &g->spec.ops[g->v[v].ops[0]];
            snprintf(err, errlen,
                     "operator \"%s\" (uid \"%s\") of the job has no state in the snapshot "
                     "(another job's, or an operator added since)",
                     op->name, uid_of(op));
            return CK_EINVAL;
        }
    return CK_OK;
}

const char *ck_asg_vertex_state(const ck_graph *g, int v, const ck_config *cfg)
{
    int exactly_once = ck_cfg(cfg, CK_CFG_CP_INTERVAL) > 0 &&
                       ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE;
    for (int k = 0; k < g->v[v].nops; k++) {
        ck_op_kind kind = g->spec.ops[g->v[v].ops[k]].kind;
        if (kind == CK_OP_SOURCE)
            return "a source's partition offsets";
        if (ck_op_keyed(kind))
            return "keyed state";
        if (kind == CK_OP_BUFFER)
            return "a buffer's list state";
        if (kind == CK_OP_SINK && exactly_once)
            return "a sink's pending transactions (exactly-once checkpoints)";
    }
    if (exactly_once && ck_cfg(cfg, CK_CFG_CP_UNALIGNED))
        return "channel state (unaligned checkpoints)";
    return NULL;
}

/* 1 when job vertex v writes to sinks. */
static int has_sink(const ck_graph *g, int v)
{
    for (int k = 0; k < g->v[v].nops; k++)
        if (g->spec.ops[g->v[v].ops[k]].kind == CK_OP_SINK)
            return 1;
    return 0;
}

/* ---- operator state from the snapshot's counts (assign.h) ----------------------------- */

/* The canonical handle of old subtask s, or NULL. */
static const ck_handle *canonical(const ck_cp_meta *m, uint32_t s)
{
    for (uint32_t h = 0; h < m->tasks[s].n; h++)
        if (m->tasks[s].v[h].kind == CK_HANDLE_SNAPSHOT)
            return &m->tasks[s].v[h];
    return NULL;
}

static const char *mode_name(int mode)
{
    return mode == 1 ? "split-distribute" : mode == 2 ? "union" : "broadcast";
}

int ck_asg_opstate_from_meta(const ck_cp_meta *m, const ck_graph *g, const char *topic,
                             int nparts, ck_asg_opstate *os, int max, uint32_t **counts,
                             char *err, size_t errlen)
{
    *counts = NULL;
    if (!m->nvertices) /* version 3: the plan refuses it at another parallelism */
        return 0;
    /* first: how many counts, at most (each listed state, per old subtask) */
    size_t room = 0;
    uint32_t base = 0;
    for (uint32_t v = 0; v < m->nvertices; v++) {
        uint32_t p = m->vertices[v].parallelism;
        for (uint32_t k = 0; k < p; k++) {
            const ck_handle *h = canonical(m, base + k);
            room += (size_t)(h ? h->nopc : 0) * p;
        }
        room += p; /* a source's partitions by the topic */
        base += p;
    }
    uint32_t *c = calloc(room + 1, sizeof(*c));
    if (!c)
        return CK_ENOMEM;
    size_t used = 0;
    int n = 0, rc = CK_OK;
    base = 0;
    for (uint32_t v = 0; v < m->nvertices && !rc; base += m->vertices[v++].parallelism) {
        const ck_cp_meta_vertex *mv = &m->vertices[v];
        uint32_t p = mv->parallelism;
        int counted = 1;
        for (uint32_t k = 0; k < p; k++) {
            const ck_handle *h = canonical(m, base + k);
            counted &= h && (h->flags & CK_HANDLE_OPCOUNTS);
        }
        if (!counted) { /* a source's partitions by the topic's rule */
            if (mv->ops[0].kind != CK_OP_SOURCE || !topic || nparts <= 0)
                continue;
            int op = op_of_uid(g, mv->ops[0].uid);
            if (op < 0 || g->spec.ops[op].kind != CK_OP_SOURCE)
                continue;
            if (n >= max) {
                snprintf(err, errlen, "the snapshot lists more than %d operator states", max);
                rc = CK_EINVAL;
                break;
            }
            uint32_t *pc = c + used;
            used += p;
            for (int q = 0; q < nparts; q++)
                pc[ck_topic_owner(topic, q, (int)p)]++;
            os[n++] = (ck_asg_opstate){.op = op, .name = CK_ASG_SOURCE_STATE,
                                       .mode = CK_ASG_SPLIT_DISTRIBUTE, .counts = pc};
            continue;
        }
        int first = n;
        for (uint32_t k = 0; k < p && !rc; k++) {
            const ck_handle *h = canonical(m, base + k);
            for (uint32_t x = 0; x < h->nopc && !rc; x++) {
                const ck_handle_opcount *oc = &h->opc[x];
                uint32_t q = 0;
                while (q < mv->nops && mv->ops[q].index != oc->op)
                    q++;
                if (q == mv->nops) {
                    snprintf(err, errlen,
                             "the snapshot's subtask %u lists operator state \"%s\" of "
                             "operator %u, which its vertex does not have",
                             base + k, oc->name, oc->op);
                    rc = CK_EINVAL;
                    break;
                }
                int op = op_of_uid(g, mv->ops[q].uid);
                if (op < 0)
                    continue; /* the plan refuses the restore, naming it */
                ck_asg_mode mode = oc->mode == 2   ? CK_ASG_UNION
                                   : oc->mode == 3 ? CK_ASG_BROADCAST
                                                   : CK_ASG_SPLIT_DISTRIBUTE;
                int s = first;
                while (s < n && (os[s].op != op || strcmp(os[s].name, oc->name)))
                    s++;
                if (s < n && os[s].mode != mode) {
                    snprintf(err, errlen,
                             "operator uid \"%s\": the snapshot lists its state \"%s\" as %s "
                             "and as %s",
                             mv->ops[q].uid, oc->name, mode_name((int)oc->mode),
                             mode_name(os[s].mode == CK_ASG_UNION       ? 2
                                       : os[s].mode == CK_ASG_BROADCAST ? 3
                                                                        : 1));
                    rc = CK_EINVAL;
                    break;
                }
                if (s == n) {
                    if (n >= max || used + p > room) {
                        snprintf(err, errlen, "the snapshot lists more than %d operator states",
                                 max);
                        rc = CK_EINVAL;
                        break;
                    }
                    os[n] = (ck_asg_opstate){.op = op, .mode = mode, .counts = c + used};
                    snprintf(os[n].name, sizeof(os[n].name), "%s", oc->name);
                    used += p;
                    n++;
                }
                ((uint32_t *)os[s].counts)[k] = oc->entries;
            }
        }
    }
    if (rc) {
        free(c);
        return rc;
    }
    *counts = c;
    return n;
}

/* ---- channel state: Flink's SubtaskStateMapper (assign.h) ------------------------------ */

ck_asg_mapper ck_asg_channel_mapper(ck_ship ship, int out)
{
    switch (ship) {
    case CK_SHIP_HASH: return out ? CK_ASG_MAP_ARBITRARY : CK_ASG_MAP_RANGE;
    case CK_SHIP_REBALANCE: return out ? CK_ASG_MAP_ARBITRARY : CK_ASG_MAP_ROUND_ROBIN;
    default: return CK_ASG_MAP_UNSUPPORTED; /* pointwise, broadcast */
    }
}

int ck_asg_mapper_ambiguous(ck_asg_mapper m)
{
    return m == CK_ASG_MAP_FULL || m == CK_ASG_MAP_RANGE;
}

int ck_asg_channel_reads(ck_ship ship, int out, uint32_t old_p, uint32_t new_p, uint32_t k,
                         uint32_t i)
{
    if (old_p < 1 || new_p < 1 || k >= old_p || i >= new_p ||
        old_p > CK_KG_UPPER_BOUND_MAX_PARALLELISM || new_p > CK_KG_UPPER_BOUND_MAX_PARALLELISM)
        return CK_EINVAL;
    if (old_p == new_p)
        return k == i;
    switch (ck_asg_channel_mapper(ship, out)) {
    case CK_ASG_MAP_ARBITRARY:
    case CK_ASG_MAP_ROUND_ROBIN: return k % new_p == i;
    case CK_ASG_MAP_FIRST: return i == 0;
    case CK_ASG_MAP_FULL: return 1;
    case CK_ASG_MAP_RANGE: {
        int maxp = CK_KG_UPPER_BOUND_MAX_PARALLELISM;
        ck_kgr r = ck_kg_range((int)i, (int)new_p, maxp);
        uint32_t first = (uint32_t)ck_kg_subtask(r.start, (int)old_p, maxp);
        uint32_t last = (uint32_t)ck_kg_subtask(r.end, (int)old_p, maxp);
        return k >= first && k <= last;
    }
    default: return CK_EINVAL;
    }
}

/* Which channel state of old subtask k new subtask t of vertex v restores
 * (CK_ASG_CHANNELS, CK_ASG_OUT_CHANNELS), where the state's edges carry
 * any (hash and rebalance edges: gate.h). */
static uint32_t gets_channels(const ck_graph *g, int v, uint32_t old_p, const ck_asg_task *t,
                              uint32_t k)
{
    const ck_vertex *vx = &g->v[v];
    uint32_t new_p = (uint32_t)vx->parallelism, what = 0;
    if (old_p == new_p) /* its own, whole */
        return k == (uint32_t)t->subtask ? CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS : 0;
    if (vx->in_edge >= 0) {
        ck_ship ship = g->e[vx->in_edge].ship;
        if (ck_asg_channel_mapper(ship, 0) != CK_ASG_MAP_UNSUPPORTED &&
            ck_asg_channel_reads(ship, 0, old_p, new_p, k, (uint32_t)t->subtask) == 1)
            what |= CK_ASG_CHANNELS;
    }
    for (int q = 0; q < vx->nout; q++) {
        ck_ship ship = g->e[vx->out_edges[q]].ship;
        if (ck_asg_channel_mapper(ship, 1) != CK_ASG_MAP_UNSUPPORTED &&
            ck_asg_channel_reads(ship, 1, old_p, new_p, k, (uint32_t)t->subtask) == 1)
            what |= CK_ASG_OUT_CHANNELS;
    }
    return what;
}

/* Whether the channel state of new vertex v moves to other channels
 * (CK_ASG_REROUTE): its parallelism or that of a vertex at the other end
 * of one of its edges differs from the snapshot's (oldp, per new vertex). */
static int channels_move(const ck_graph *g, const uint32_t *oldp, int v)
{
    const ck_vertex *vx = &g->v[v];
#define CHANGED(x) ((int)oldp[(x)] != g->v[(x)].parallelism)
    int moved = CHANGED(v) || (vx->in_edge >= 0 && CHANGED(g->e[vx->in_edge].src_v));
    for (int q = 0; q < vx->nout; q++)
        moved |= CHANGED(g->e[vx->out_edges[q]].dst_v);
#undef CHANGED
    return moved;
}

/* Whether vertex v has an edge that channel state may be taken on (hash
 * and rebalance edges: gate.h). */
static int carries_channels(const ck_graph *g, int v)
{
    const ck_vertex *vx = &g->v[v];
    int any = vx->in_edge >= 0 &&
              ck_asg_channel_mapper(g->e[vx->in_edge].ship, 0) != CK_ASG_MAP_UNSUPPORTED;
    for (int q = 0; q < vx->nout; q++)
        any |= ck_asg_channel_mapper(g->e[vx->out_edges[q]].ship, 1) != CK_ASG_MAP_UNSUPPORTED;
    return any;
}

/* Whether snapshot m may hold channel state: only one taken with
 * unaligned barriers, or aligned ones that may turn unaligned after the
 * aligned-checkpoint timeout. An aligned checkpoint's or a savepoint's
 * files hold none, so no subtask downloads a file for it. */
static int may_hold_channels(const ck_cp_meta *m)
{
    return (m->flags & (CK_CP_FLAG_UNALIGNED | CK_CP_FLAG_TIMEOUTABLE)) != 0;
}

int ck_asg_plan(ck_asg *a, const ck_cp_meta *m, const ck_graph *g, const ck_config *cfg,
                const ck_asg_opstate *os, int nos, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    ck_config defaults;
    if (!cfg) {
        ck_config_defaults(&defaults);
        cfg = &defaults;
    }
    ck_cp_meta_vertex *mine;
    const ck_cp_meta_vertex *ov;
    uint32_t nov;
    int rc = old_vertices(m, g, &mine, &ov, &nov, err, errlen);
    if (rc)
        return rc;
    rc = match(a, ov, nov, g, err, errlen);
    uint32_t oldp[CK_MAX_OPS] = {0}; /* per new vertex: its old parallelism */
    /* A vertex that keeps no state and changed its parallelism: its new
     * subtasks start empty. */
    for (int v = 0; !rc && v < g->nv; v++) {
        a->keeps[v] = ck_asg_vertex_state(g, v, cfg);
        /* the snapshot's in-flight data, whatever the new job's
         * checkpoints are: a job restored with unaligned checkpoints
         * turned off still restores what the old one's overtook */
        if (!a->keeps[v] && may_hold_channels(m) && carries_channels(g, v))
            a->keeps[v] = "channel state (the snapshot's in-flight data)";
        oldp[v] = ov[a->old_vertex[v]].parallelism;
        a->fresh[v] = !a->keeps[v] &&
                      (int)ov[a->old_vertex[v]].parallelism != g->v[v].parallelism;
    }
    /* Operator state: each caller's state dealt over its vertex. */
    ck_asg_chunk **chunks = NULL;
    uint32_t *nchunks = NULL;
    size_t *slot = NULL; /* per os: where its new_p slots start */
    size_t nslots = 0;
    if (!rc && nos > 0) {
        slot = calloc((size_t)nos, sizeof(*slot));
        for (int s = 0; slot && s < nos; s++) {
            if (os[s].op < 0 || os[s].op >= g->spec.nops) {
                snprintf(err, errlen, "operator state of operator %d, which the job does not have",
                         os[s].op);
                rc = CK_EINVAL;
                break;
            }
            slot[s] = nslots;
            nslots += (size_t)g->v[g->op_vertex[os[s].op]].parallelism;
        }
        chunks = calloc(nslots + 1, sizeof(*chunks));
        nchunks = calloc(nslots + 1, sizeof(*nchunks));
        if (!rc && (!slot || !chunks || !nchunks))
            rc = CK_ENOMEM;
        for (int s = 0; !rc && s < nos; s++) {
            int v = g->op_vertex[os[s].op];
            rc = ck_asg_repartition(os[s].mode, 1, ov[a->old_vertex[v]].parallelism,
                                    (uint32_t)g->v[v].parallelism, os[s].counts, chunks + slot[s],
                                    nchunks + slot[s]);
        }
        a->opstate_dealt = !rc;
        for (int s = 0; !rc && s < nos; s++)
            a->counted[os[s].op] = 1;
    }
    a->ntasks = g->nsubtasks;
    a->tasks = rc ? NULL : calloc(g->nsubtasks, sizeof(*a->tasks));
    if (!rc && !a->tasks)
        rc = CK_ENOMEM;
    for (uint32_t gi = 0; !rc && gi < g->nsubtasks; gi++) {
        ck_asg_task *t = &a->tasks[gi];
        ck_graph_locate(g, gi, &t->vertex, &t->subtask);
        int v = t->vertex, o = a->old_vertex[v];
        int new_p = g->v[v].parallelism;
        t->old_vertex = o;
        t->old_parallelism = ov[o].parallelism;
        t->old_subtask = (int)t->old_parallelism == new_p ? t->subtask : -1;
        int kop = keyed_op(g, v);
        t->kgr = kop >= 0 ? ck_kg_range(t->subtask, new_p, a->max_parallelism[kop])
                          : CK_KGR_EMPTY;
        if (a->fresh[v]) { /* it takes nothing */
            t->empty = 1;
            continue;
        }
        /* its share of each operator state of its vertex */
        uint32_t *opfrom = calloc(t->old_parallelism, sizeof(*opfrom));
        if (!opfrom) {
            rc = CK_ENOMEM;
            break;
        }
        for (int s = 0; s < nos; s++)
            t->nops += g->op_vertex[os[s].op] == v;
        t->ops = t->nops ? calloc(t->nops, sizeof(*t->ops)) : NULL;
        if (t->nops && !t->ops)
            rc = CK_ENOMEM;
        for (int s = 0, q = 0; !rc && s < nos; s++) {
            if (g->op_vertex[os[s].op] != v)
                continue;
            ck_asg_opchunks *oc = &t->ops[q++];
            oc->state = (uint32_t)s;
            size_t at = slot[s] + (size_t)t->subtask;
            oc->v = chunks[at]; /* taken over */
            oc->n = nchunks[at];
            chunks[at] = NULL;
            for (uint32_t c = 0; c < oc->n; c++)
                opfrom[oc->v[c].old] = 1;
        }
        int moved = channels_move(g, oldp, v);
        if (may_hold_channels(m)) {
            const ck_vertex *vx = &g->v[v];
#define MOVED(e) (ck_asg_channel_mapper((e)->ship, 0) != CK_ASG_MAP_UNSUPPORTED && \
                  ((int)oldp[(e)->src_v] != g->v[(e)->src_v].parallelism || \
                   (int)oldp[(e)->dst_v] != g->v[(e)->dst_v].parallelism))
            t->moved_in = vx->in_edge >= 0 && MOVED(&g->e[vx->in_edge]) &&
                          !a->fresh[g->e[vx->in_edge].src_v];
            for (int q = 0; q < vx->nout; q++)
                t->moved_out |= MOVED(&g->e[vx->out_edges[q]]);
#undef MOVED
        }
        for (uint32_t k = 0; !rc && k < t->old_parallelism; k++) {
            uint32_t old = a->old_base[o] + k;
            const ck_handles *hs = &m->tasks[old];
            int own = t->old_subtask == (int)k;
            /* at an unchanged parallelism a subtask restores its own file:
             * its chunks (ops) say what Flink deals of union state beyond */
            uint32_t what_any = (own ? CK_ASG_OPSTATE : 0) |
                                (opfrom[k] && t->old_subtask < 0 ? CK_ASG_OPSTATE : 0) |
                                (may_hold_channels(m)
                                     ? gets_channels(g, v, t->old_parallelism, t, k)
                                     : 0) |
                                (has_sink(g, v) && k % (uint32_t)new_p == (uint32_t)t->subtask
                                     ? CK_ASG_TXNS
                                     : 0);
            if (moved && (what_any & (CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS)))
                what_any |= CK_ASG_REROUTE;
            for (uint32_t h = 0; !rc && h < hs->n; h++) {
                const ck_handle *hd = &hs->v[h];
                ck_asg_take tk = {.old = old, .handle = h, .kgr = CK_KGR_EMPTY};
                if (!ck_kgr_empty(hd->kgr) && kop >= 0) {
                    ck_kgr in = ck_kgr_intersect(hd->kgr, t->kgr);
                    if (!ck_kgr_empty(in)) {
                        tk.what |= CK_ASG_KEYED;
                        tk.kgr = in;
                    }
                }
                /* a canonical file holds the subtask's operator state,
                 * channel state and transactions too; another kind of
                 * handle without key groups is its own subtask's alone */
                if (hd->kind == CK_HANDLE_SNAPSHOT)
                    tk.what |= what_any;
                else if (own && ck_kgr_empty(hd->kgr))
                    tk.what |= CK_ASG_OPSTATE;
                if (tk.what)
                    rc = take_push(t, tk);
            }
        }
        free(opfrom);
    }
    if (chunks)
        ck_asg_chunks_free(chunks, (uint32_t)nslots);
    free(chunks);
    free(nchunks);
    free(slot);
    free(mine);
    if (rc)
        ck_asg_free(a);
    return rc;
}

int ck_asg_applicable(const ck_asg *a, const ck_cp_meta *m, const ck_graph *g, char *err,
                      size_t errlen)
{
    ck_cp_meta_vertex *mine;
    const ck_cp_meta_vertex *ov;
    uint32_t nov;
    int rc = old_vertices(m, g, &mine, &ov, &nov, err, errlen);
    if (rc)
        return rc;
    for (int v = 0; v < g->nv && !rc; v++) {
        const ck_cp_meta_vertex *mv = &ov[a->old_vertex[v]];
        if (a->fresh[v])
            continue; /* its subtasks start empty: they read no state file */
        /* At another parallelism: keyed state (canonical files, native
         * files its backend rescales), sources' partitions, sinks'
         * transactions and a buffer's list state move; a buffer's list
         * state that the snapshot does not count (an older _metadata:
         * no entries to deal) does not. */
        const char *refused = NULL;
        for (int k = 0; k < g->v[v].nops && !refused; k++)
            if (g->spec.ops[g->v[v].ops[k]].kind == CK_OP_BUFFER && !a->counted[g->v[v].ops[k]])
                refused = "a buffer's list state, whose entries the snapshot does not count";
        if ((int)mv->parallelism != g->v[v].parallelism && refused) {
            const ck_op_spec *op = &g->spec.ops[g->v[v].ops[0]];
            snprintf(err, errlen,
                     "operator \"%s\" (uid \"%s\"): the snapshot holds it at parallelism %u, the "
                     "job has %d, and it keeps %s, which does not move to another parallelism "
                     "yet",
                     op->name, uid_of(op), mv->parallelism, g->v[v].parallelism, refused);
            rc = CK_EINVAL;
        }
        for (int k = 0; k < g->v[v].nops && !rc; k++) {
            const ck_op_spec *op = &g->spec.ops[g->v[v].ops[k]];
            if (a->old_vertex[v] != v || mv->ops[k].index != (uint32_t)g->v[v].ops[k]) {
                snprintf(err, errlen,
                         "operator \"%s\" (uid \"%s\") is operator %d of the job, in vertex %d, "
                         "and was operator %u, in vertex %d, in the snapshot (moving an operator "
                         "on restore is not supported yet)",
                         op->name, uid_of(op), g->v[v].ops[k], v, mv->ops[k].index,
                         a->old_vertex[v]);
                rc = CK_EINVAL;
            }
        }
    }
    free(mine);
    return rc;
}

void ck_asg_adopt(const ck_asg *a, ck_graph *g)
{
    for (int i = 0; i < g->spec.nops; i++)
        if (a->adopted[i])
            g->spec.ops[i].max_parallelism = a->max_parallelism[i];
    for (int e = 0; e < g->ne; e++)
        g->e[e].dst_max_parallelism = g->spec.ops[g->e[e].dst_op].max_parallelism;
}

/* ---- invariants (assign.h) ------------------------------------------------------------ */

int ck_asg_check(const ck_asg *a, const ck_cp_meta *m, const ck_graph *g, ck_inv *v)
{
    CK_INV(v, 1, a->ntasks == g->nsubtasks, "%u tasks planned, the job has %u", a->ntasks,
           g->nsubtasks);
    uint32_t nold = m->nsubtasks;
    /* (2) per old keyed handle: the key groups taken, counted */
    uint32_t *covered = NULL;
    size_t ncov = 0;
    size_t *first = calloc(nold + 1, sizeof(*first)); /* per old subtask: its first slot */
    if (!first)
        return CK_ENOMEM;
    for (uint32_t k = 0; k < nold; k++) {
        first[k] = ncov;
        for (uint32_t h = 0; h < m->tasks[k].n; h++)
            ncov += (size_t)ck_kgr_size(m->tasks[k].v[h].kgr);
    }
    covered = calloc(ncov + 1, sizeof(*covered));
    uint32_t *txns = calloc(nold + 1, sizeof(*txns));
    if (!covered || !txns) {
        free(covered);
        free(txns);
        free(first);
        return CK_ENOMEM;
    }
    int rc = CK_OK;
#define FAIL_IF(num, cond, ...)                                                                   \
    if (!rc && !(cond))                                                                           \
    rc = ck_inv_fail(v, CK_INV_MODULE, (num), __VA_ARGS__)
    for (uint32_t gi = 0; gi < a->ntasks && !rc; gi++) {
        const ck_asg_task *t = &a->tasks[gi];
        int vx, sub;
        ck_graph_locate(g, gi, &vx, &sub);
        FAIL_IF(1, t->vertex == vx && t->subtask == sub && t->old_vertex == a->old_vertex[vx],
                "subtask %u: planned as vertex %d subtask %d of old vertex %d", gi, t->vertex,
                t->subtask, t->old_vertex);
        FAIL_IF(1,
                t->old_subtask ==
                    ((int)t->old_parallelism == g->v[vx].parallelism ? sub : -1),
                "subtask %u: old subtask %d at parallelism %u -> %d", gi, t->old_subtask,
                t->old_parallelism, g->v[vx].parallelism);
        FAIL_IF(5, !t->empty == !a->fresh[vx] && (!t->empty || (!t->ntakes && !t->nops)),
                "subtask %u: starts %s, its vertex %s", gi,
                t->empty ? "empty" : "restoring",
                a->fresh[vx] ? "keeps no state and was rescaled" : "keeps its state");
        for (uint32_t k = 0; k < t->ntakes && !rc; k++) {
            const ck_asg_take *tk = &t->takes[k];
            uint32_t ob = a->old_base[t->old_vertex];
            FAIL_IF(4, tk->old >= ob && tk->old < ob + t->old_parallelism && tk->old < nold &&
                           tk->handle < m->tasks[tk->old].n,
                    "subtask %u: takes handle %u of old subtask %u, not of old vertex %d", gi,
                    tk->handle, tk->old, t->old_vertex);
            if (rc)
                break;
            const ck_handle *hd = &m->tasks[tk->old].v[tk->handle];
            if (tk->what & CK_ASG_KEYED) {
                FAIL_IF(4, !ck_kgr_empty(tk->kgr) && ck_kgr_within(tk->kgr, hd->kgr),
                        "subtask %u: takes key groups [%d, %d] of a handle of [%d, %d]", gi,
                        tk->kgr.start, tk->kgr.end, hd->kgr.start, hd->kgr.end);
                if (rc)
                    break;
                size_t off = first[tk->old];
                for (uint32_t r = 0; r < tk->handle; r++)
                    off += (size_t)ck_kgr_size(m->tasks[tk->old].v[r].kgr);
                for (int32_t kg = tk->kgr.start; !rc && kg <= tk->kgr.end; kg++) {
                    FAIL_IF(2, covered[off + (size_t)(kg - hd->kgr.start)] == 0,
                            "key group %d of handle %u of old subtask %u is taken twice", kg,
                            tk->handle, tk->old);
                    covered[off + (size_t)(kg - hd->kgr.start)]++;
                }
            }
            if ((tk->what & CK_ASG_TXNS) && hd->kind == CK_HANDLE_SNAPSHOT) {
                FAIL_IF(3, txns[tk->old] == 0, "old subtask %u's transactions are taken twice",
                        tk->old);
                txns[tk->old]++;
            }
        }
    }
    /* (2) every key group of every keyed handle of a keyed vertex taken */
    size_t off = 0;
    for (uint32_t k = 0; k < nold && !rc; k++)
        for (uint32_t h = 0; h < m->tasks[k].n && !rc; h++) {
            const ck_handle *hd = &m->tasks[k].v[h];
            for (int32_t kg = hd->kgr.start; kg <= hd->kgr.end && !rc; kg++)
                FAIL_IF(2, covered[off + (size_t)(kg - hd->kgr.start)] == 1,
                        "key group %d of handle %u of old subtask %u is taken by no subtask", kg,
                        h, k);
            off += (size_t)ck_kgr_size(hd->kgr);
        }
    /* (3) every old sink subtask's transactions taken once */
    for (int nv = 0; nv < g->nv && !rc; nv++) {
        if (!has_sink(g, nv) || a->fresh[nv])
            continue;
        int o = a->old_vertex[nv];
        uint32_t op = 0;
        for (uint32_t q = 0; q < a->ntasks; q++)
            if (a->tasks[q].vertex == nv)
                op = a->tasks[q].old_parallelism;
        for (uint32_t k = 0; k < op && !rc; k++) {
            uint32_t old = a->old_base[o] + k;
            int snap = 0;
            for (uint32_t h = 0; h < m->tasks[old].n; h++)
                snap |= m->tasks[old].v[h].kind == CK_HANDLE_SNAPSHOT;
            FAIL_IF(3, !snap || txns[old] == 1,
                    "old sink subtask %u's transactions are taken by %u subtasks", old,
                    txns[old]);
        }
    }
    /* (6) at a changed parallelism, every old subtask's channel state of
     * an edge that carries any, in a snapshot that may hold any, taken by
     * at least one new subtask */
    for (int nv = 0; nv < g->nv && !rc && may_hold_channels(m); nv++) {
        const ck_vertex *vx = &g->v[nv];
        uint32_t want = 0;
        if (vx->in_edge >= 0 &&
            ck_asg_channel_mapper(g->e[vx->in_edge].ship, 0) != CK_ASG_MAP_UNSUPPORTED)
            want |= CK_ASG_CHANNELS;
        for (int q = 0; q < vx->nout; q++)
            if (ck_asg_channel_mapper(g->e[vx->out_edges[q]].ship, 1) != CK_ASG_MAP_UNSUPPORTED)
                want |= CK_ASG_OUT_CHANNELS;
        if (a->fresh[nv] || !want)
            continue;
        int o = a->old_vertex[nv];
        uint32_t op = 0;
        for (uint32_t q = 0; q < a->ntasks; q++)
            if (a->tasks[q].vertex == nv)
                op = a->tasks[q].old_parallelism;
        for (uint32_t k = 0; k < op && !rc; k++) {
            uint32_t old = a->old_base[o] + k, got = 0;
            int snap = 0;
            for (uint32_t h = 0; old < nold && h < m->tasks[old].n; h++)
                snap |= m->tasks[old].v[h].kind == CK_HANDLE_SNAPSHOT;
            uint32_t outs = 0;
            for (uint32_t q = 0; q < a->ntasks; q++)
                for (uint32_t x = 0; a->tasks[q].vertex == nv && x < a->tasks[q].ntakes; x++)
                    if (a->tasks[q].takes[x].old == old) {
                        got |= a->tasks[q].takes[x].what;
                        outs += (a->tasks[q].takes[x].what & CK_ASG_OUT_CHANNELS) != 0;
                    }
            FAIL_IF(6, !snap || (got & want) == want,
                    "old subtask %u's %s channel state is taken by no subtask", old,
                    (want & ~got & CK_ASG_CHANNELS) ? "input" : "output");
            FAIL_IF(6, !snap || !(want & CK_ASG_OUT_CHANNELS) || outs == 1,
                    "old subtask %u's output channel state is taken by %u subtasks", old, outs);
        }
    }
    for (uint32_t q = 0; q < a->ntasks && !rc && !may_hold_channels(m); q++)
        for (uint32_t x = 0; x < a->tasks[q].ntakes && !rc; x++)
            FAIL_IF(6, !(a->tasks[q].takes[x].what & (CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS)),
                    "new subtask %u takes channel state from a snapshot that holds none", q);
    /* (7) CK_ASG_REROUTE on the takes of channel state that moves */
    uint32_t oldp[CK_MAX_OPS];
    for (uint32_t q = 0; q < a->ntasks; q++)
        oldp[a->tasks[q].vertex] = a->tasks[q].old_parallelism;
    for (uint32_t q = 0; q < a->ntasks && !rc; q++) {
        const ck_asg_task *t = &a->tasks[q];
        int moved = channels_move(g, oldp, t->vertex);
        for (uint32_t x = 0; x < t->ntakes && !rc; x++) {
            uint32_t w = t->takes[x].what;
            int chans = (w & (CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS)) != 0;
            FAIL_IF(7, !(w & CK_ASG_REROUTE) == !(chans && moved),
                    "new subtask %u's take %u of old subtask %u is%s marked to move channels",
                    q, x, t->takes[x].old, (w & CK_ASG_REROUTE) ? "" : " not");
        }
    }
#undef FAIL_IF
    free(covered);
    free(txns);
    free(first);
    return rc;
}
