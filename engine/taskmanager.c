#include "taskmanager.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "assign.h"
#include "keygroup.h"
#include "segpool.h"
#include "wire.h"

void ck_tm_init(ck_tm *tm, ck_platform *plat, const ck_graph *g, const ck_config *cfg, int host,
                int ntm)
{
    memset(tm, 0, sizeof(*tm));
    tm->plat = plat;
    tm->g = g;
    tm->host = host;
    tm->ntm = ntm;
    tm->hb_interval = ck_cfg(cfg, CK_CFG_HB_INTERVAL);
    tm->hb_timeout = ck_cfg(cfg, CK_CFG_HB_TIMEOUT);
    tm->next_hb = CK_TIME_NEVER;
}

void ck_tm_generations(ck_tm *tm, const ck_graph *gens, int ngens)
{
    tm->gens = gens;
    tm->ngens = ngens;
}

int ck_tm_deploy_generation(const uint8_t *b, size_t len)
{
    /* attempt, checkpoint id, n, n hosts, flags, then the generation */
    if (len < 16)
        return -1;
    uint32_t n = ck_get_u32(b + 12);
    size_t at = 16 + 2 * (size_t)n + 4;
    if (n > len || at + 4 > len)
        return -1;
    uint32_t gen = ck_get_u32(b + at);
    return gen > INT32_MAX ? -1 : (int)gen;
}

uint8_t *ck_tm_deploy_body(uint32_t attempt, int gen, const ck_restore_point *from, uint32_t n,
                           const uint16_t *hosts, const ck_handles *const *handles,
                           const uint32_t *origins, int host, size_t *len)
{
    return ck_tm_deploy_body_takes(attempt, gen, from, n, hosts, handles, origins, NULL, host,
                                   len);
}

/* A take's or chunk's bytes (DEPLOY body, taskmanager.h). */
static void put_takes(ck_wbuf *w, const ck_restore_point *pt, uint32_t nhandles)
{
    for (uint32_t k = 0; k < nhandles; k++) {
        const ck_restore_take *tk = &pt->takes[k];
        ck_wbuf_u32(w, tk->old_vertex);
        ck_wbuf_u32(w, tk->old_subtask);
        ck_wbuf_u32(w, tk->old_parallelism);
        ck_wbuf_u32(w, tk->what);
        ck_wbuf_u32(w, (uint32_t)tk->kgr.start);
        ck_wbuf_u32(w, (uint32_t)tk->kgr.end);
    }
    ck_wbuf_u32(w, pt->nchunks);
    for (uint32_t k = 0; k < pt->nchunks; k++) {
        const ck_restore_chunk *c = &pt->chunks[k];
        size_t nl = strlen(c->name);
        ck_wbuf_u32(w, c->op);
        uint8_t *p = ck_wbuf_room(w, 1);
        if (p)
            *p = (uint8_t)nl;
        ck_wbuf_bytes(w, c->name, nl);
        ck_wbuf_u32(w, c->old);
        ck_wbuf_u32(w, c->first);
        ck_wbuf_u32(w, c->n);
    }
}

uint8_t *ck_tm_deploy_body_takes(uint32_t attempt, int gen, const ck_restore_point *from,
                                 uint32_t n, const uint16_t *hosts,
                                 const ck_handles *const *handles, const uint32_t *origins,
                                 const ck_restore_point *points, int host, size_t *len)
{
    uint64_t id = from ? from->id : 0;
    size_t dl = id ? strlen(from->dir) : 0;
    ck_wbuf w = {0};
    ck_wbuf_u32(&w, attempt);
    ck_wbuf_u64(&w, id);
    ck_wbuf_u32(&w, n);
    uint8_t *p = ck_wbuf_room(&w, 2 * (size_t)n);
    for (uint32_t i = 0; p && i < n; i++)
        ck_put_u16(p + 2 * i, hosts[i]);
    ck_wbuf_u32(&w, id ? from->flags : 0);
    ck_wbuf_u32(&w, (uint32_t)gen);
    p = ck_wbuf_room(&w, 2);
    if (p)
        ck_put_u16(p, (uint16_t)dl);
    ck_wbuf_bytes(&w, id ? from->dir : "", dl);
    for (uint32_t i = 0; id && i < n; i++) {
        if (hosts[i] != host)
            continue;
        if (!handles[i]) {
            ck_wbuf_u32(&w, i | CK_DEPLOY_EMPTY);
            continue;
        }
        int takes = points && points[i].takes;
        ck_wbuf_u32(&w, i | (takes ? CK_DEPLOY_TAKES : 0) |
                            (points && points[i].moved_in ? CK_DEPLOY_MOVED_IN : 0) |
                            (points && points[i].moved_out ? CK_DEPLOY_MOVED_OUT : 0));
        for (int k = 0; k < 3; k++)
            ck_wbuf_u32(&w, origins ? origins[3 * i + (uint32_t)k] : CK_TM_ORIGIN_OWN);
        ck_handles_put_bare(&w, handles[i]); /* it reads its operator state from its files */
        if (takes)
            put_takes(&w, &points[i], handles[i]->n);
    }
    if (w.err) {
        free(w.p);
        return NULL;
    }
    *len = w.len;
    return w.p;
}

/* Reads the takes of nh handles and the chunks after them (DEPLOY body)
 * into *tk and *ch (malloc'd): CK_EPROTO when one is not of a subtask of
 * a parallelism, takes nothing, names unknown bits, key groups out of
 * bounds or an operator the job lacks; CK_ENOMEM. */
static int get_takes(ck_rbuf *r, const ck_graph *g, uint32_t nh, ck_restore_take **tk,
                     ck_restore_chunk **ch, uint32_t *nch)
{
    *tk = calloc(nh + 1, sizeof(**tk));
    *ch = NULL;
    *nch = 0;
    if (!*tk)
        return CK_ENOMEM;
    for (uint32_t k = 0; k < nh; k++) {
        ck_restore_take *t = &(*tk)[k];
        t->old_vertex = ck_rbuf_u32(r);
        t->old_subtask = ck_rbuf_u32(r);
        t->old_parallelism = ck_rbuf_u32(r);
        t->what = ck_rbuf_u32(r);
        t->kgr.start = (int32_t)ck_rbuf_u32(r);
        t->kgr.end = (int32_t)ck_rbuf_u32(r);
        int kg_ok = ck_kgr_empty(t->kgr)
                        ? !(t->what & CK_ASG_KEYED)
                        : t->kgr.start >= 0 && t->kgr.end < CK_KG_UPPER_BOUND_MAX_PARALLELISM &&
                              (t->what & CK_ASG_KEYED);
        if (r->err || t->old_vertex >= CK_MAX_OPS || t->old_parallelism < 1 ||
            t->old_parallelism > CK_KG_UPPER_BOUND_MAX_PARALLELISM ||
            t->old_subtask >= t->old_parallelism || !t->what ||
            (t->what & ~(CK_ASG_KEYED | CK_ASG_OPSTATE | CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS |
                         CK_ASG_TXNS | CK_ASG_REROUTE)) ||
            !kg_ok)
            return CK_EPROTO;
    }
    uint32_t nc = ck_rbuf_u32(r);
    if (r->err || nc > ck_rbuf_left(r) / 14) /* a chunk is 14 bytes at least */
        return CK_EPROTO;
    *ch = calloc(nc + 1, sizeof(**ch));
    if (!*ch)
        return CK_ENOMEM;
    for (uint32_t k = 0; k < nc; k++) {
        ck_restore_chunk *c = &(*ch)[k];
        c->op = ck_rbuf_u32(r);
        const uint8_t *nl = ck_rbuf_take(r, 1);
        size_t l = nl ? *nl : 0;
        const uint8_t *nm = nl ? ck_rbuf_take(r, l) : NULL;
        if (!nm || l >= sizeof(c->name) || memchr(nm, 0, l))
            return CK_EPROTO;
        memcpy(c->name, nm, l);
        c->name[l] = 0;
        c->old = ck_rbuf_u32(r);
        c->first = ck_rbuf_u32(r);
        c->n = ck_rbuf_u32(r);
        if (r->err || c->op >= (uint32_t)g->spec.nops || !c->n || c->first + c->n < c->first ||
            c->old >= CK_KG_UPPER_BOUND_MAX_PARALLELISM)
            return CK_EPROTO;
        (*nch)++;
    }
    return CK_OK;
}

static void heartbeat(ck_tm *tm, int registering)
{
    size_t n;
    uint8_t body[1] = {registering ? CK_HB_REGISTER : 0};
    uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, CK_EP_TM0 + (uint32_t)tm->host, CK_EP_JM,
                             tm->cancelled, body, sizeof(body), &n);
    if (m) {
        ck_put_u32(m + 16, (uint32_t)tm->host); /* arg */
        /* one of a periodic exchange: the next goes (platform.h) */
        CK_IGNORE(tm->plat->ops->send(tm->plat, CK_EP_JM, m, n));
    }
}

static int on_deploy(ck_tm *tm, const uint8_t *b, size_t len)
{
    if (len < 16)
        return CK_EPROTO;
    uint32_t attempt = ck_get_u32(b);
    ck_restore_point from = {.id = ck_get_u64(b + 4)};
    uint32_t n = ck_get_u32(b + 12);
    size_t off = 16 + 2 * (size_t)n;
    if (len < off + 10)
        return CK_EPROTO;
    from.flags = ck_get_u32(b + off);
    uint32_t gen = ck_get_u32(b + off + 4);
    const ck_graph *g = tm->gens ? (gen < (uint32_t)tm->ngens ? &tm->gens[gen] : NULL)
                                 : (gen == 0 ? tm->g : NULL);
    if (!g || n != g->nsubtasks)
        return CK_EPROTO;
    off += 4;
    size_t dl = ck_get_u16(b + off + 4);
    if (len < off + 6 + dl || dl >= sizeof(from.dir) || (from.id != 0) != (dl != 0) ||
        memchr(b + off + 6, 0, dl))
        return CK_EPROTO;
    memcpy(from.dir, b + off + 6, dl);
    from.dir[dl] = 0;
    uint16_t *hosts = malloc(2 * (size_t)n + 2);
    if (!hosts)
        return CK_ENOMEM;
    uint32_t here = 0;
    for (uint32_t i = 0; i < n; i++) {
        hosts[i] = ck_get_u16(b + 16 + 2 * i);
        if (hosts[i] >= tm->ntm && hosts[i] != CK_HOST_NONE) { /* a host the cluster does not have */
            free(hosts);
            return CK_EPROTO;
        }
        here += hosts[i] == tm->host;
    }
    /* Restoring: the state handles of every subtask deployed here, in
     * order, with the snapshot's subtask they were (the assignment's). */
    ck_handles *hs = calloc(here + 1, sizeof(*hs));
    uint8_t *empty = calloc(here + 1, 1); /* starts empty (CK_DEPLOY_EMPTY) */
    uint32_t *orig = calloc(3 * (size_t)here + 1, sizeof(*orig));
    /* another parallelism's state (CK_DEPLOY_TAKES): per handle its take,
     * and the operator state dealt */
    ck_restore_point *pts = calloc(here + 1, sizeof(*pts));
    ck_restore_take **tks = calloc(here + 1, sizeof(*tks));
    ck_restore_chunk **chs = calloc(here + 1, sizeof(*chs));
    ck_rbuf r = {.p = b + off + 6 + dl, .len = len - off - 6 - dl};
    int rc = hs && empty && orig && pts && tks && chs ? CK_OK : CK_ENOMEM;
    for (uint32_t i = 0, k = 0; i < n && from.id && !rc; i++) {
        if (hosts[i] != tm->host)
            continue;
        const char *why;
        uint32_t got = ck_rbuf_u32(&r);
        const uint32_t moved = CK_DEPLOY_MOVED_IN | CK_DEPLOY_MOVED_OUT;
        if ((got & ~(CK_DEPLOY_EMPTY | CK_DEPLOY_TAKES | moved)) != i || r.err ||
            (got & CK_DEPLOY_EMPTY && got & (CK_DEPLOY_TAKES | moved))) {
            rc = CK_EPROTO;
            break;
        }
        if (got & CK_DEPLOY_EMPTY) {
            empty[k++] = 1;
            continue;
        }
        pts[k].moved_in = (got & CK_DEPLOY_MOVED_IN) != 0;
        pts[k].moved_out = (got & CK_DEPLOY_MOVED_OUT) != 0;
        for (int q = 0; q < 3; q++)
            orig[3 * k + (uint32_t)q] = ck_rbuf_u32(&r);
        if (orig[3 * k] == CK_TM_ORIGIN_OWN) { /* the identity assignment */
            int v, sub;
            ck_graph_locate(g, i, &v, &sub);
            orig[3 * k] = (uint32_t)v;
            orig[3 * k + 1] = (uint32_t)sub;
            orig[3 * k + 2] = (uint32_t)g->v[v].parallelism;
        }
        if (r.err)
            rc = CK_EPROTO;
        else if ((rc = ck_handles_get(&r, &hs[k], CK_KG_UPPER_BOUND_MAX_PARALLELISM, &why)))
            rc = rc == CK_ECORRUPT ? CK_EPROTO : rc;
        if (!rc && (got & CK_DEPLOY_TAKES)) {
            rc = get_takes(&r, g, hs[k].n, &tks[k], &chs[k], &pts[k].nchunks);
            pts[k].takes = tks[k];
            pts[k].chunks = chs[k];
        }
        k++;
    }
    if (!rc && ck_rbuf_left(&r))
        rc = CK_EPROTO;
    if (!rc)
        tm->plat->ops->set_routes(tm->plat, attempt, (int)gen, n, hosts);
    /* A subtask that cannot be deployed told the job manager (task.h
     * ck_task_deploy_failed): the others are deployed still, or those of
     * regions that do not fail over would never run. */
    int failed = CK_OK;
    for (uint32_t i = 0, k = 0; i < n && !rc; i++)
        if (hosts[i] == tm->host) {
            int fresh = !from.id || empty[k];
            from.old_vertex = orig[3 * k];
            from.old_subtask = orig[3 * k + 1];
            from.old_parallelism = orig[3 * k + 2];
            from.handles = &hs[k];
            from.takes = pts[k].takes;
            from.chunks = pts[k].chunks;
            from.nchunks = pts[k].nchunks;
            from.moved_in = pts[k].moved_in;
            from.moved_out = pts[k].moved_out;
            k++;
            int drc = tm->plat->ops->deploy(tm->plat, attempt, i, fresh ? NULL : &from);
            failed = failed ? failed : drc;
            tm->has_attempt = 1;
            tm->attempt = attempt;
        }
    rc = rc ? rc : failed;
    for (uint32_t k = 0; hs && k < here; k++)
        ck_handles_free(&hs[k]);
    for (uint32_t k = 0; tks && chs && k < here; k++) {
        free(tks[k]);
        free(chs[k]);
    }
    free(pts);
    free(tks);
    free(chs);
    free(hs);
    free(empty);
    free(orig);
    free(hosts);
    return rc;
}

/* Stops the listed subtasks of the listed attempts that run here. */
static int on_cancel(ck_tm *tm, const uint8_t *b, size_t len)
{
    if (len < 4 || (len - 4) % 8 || (len - 4) / 8 != ck_get_u32(b))
        return CK_EPROTO;
    for (uint32_t i = 0, n = ck_get_u32(b); i < n; i++) {
        uint32_t attempt = ck_get_u32(b + 4 + 8 * i), global = ck_get_u32(b + 8 + 8 * i);
        if (attempt != CK_ATTEMPT_ALL && global < ck_graph_stride(tm->g))
            tm->plat->ops->undeploy(tm->plat, attempt, global);
    }
    return CK_OK;
}

static int tm_on_message(void *self, uint8_t *msg, size_t len)
{
    ck_tm *tm = self;
    ck_wire_hdr h;
    int rc = ck_wire_decode(msg, len, &h);
    if (rc == CK_OK && h.src != CK_EP_JM)
        rc = CK_EPROTO;
    if (rc == CK_OK && h.type == CK_MSG_HEARTBEAT) {
        tm->jm_seen = ck_now(tm->plat);
        if (!tm->connected)
            ck_logf(tm->plat, CK_LOG_INFO, "task manager %d: job manager reachable", tm->host);
        tm->connected = 1;
    } else if (rc == CK_OK && h.type == CK_MSG_DEPLOY)
        rc = on_deploy(tm, msg + CK_WIRE_HDR, h.len);
    else if (rc == CK_OK && h.type == CK_MSG_CANCEL)
        rc = on_cancel(tm, msg + CK_WIRE_HDR, h.len);
    else if (rc == CK_OK)
        rc = CK_EPROTO;
    free(msg);
    if (rc)
        ck_logf(tm->plat, CK_LOG_WARN, "task manager %d: refused a message: %s", tm->host,
                ck_strerror(rc));
    return CK_OK; /* a bad message does not bring the task manager down */
}

static int tm_on_complete(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    CK_UNUSED(self);
    CK_UNUSED(token);
    CK_UNUSED(status);
    CK_UNUSED(len);
    free(data);
    return CK_OK;
}

static int tm_on_peer_lost(void *self, int host)
{
    CK_UNUSED(self);
    CK_UNUSED(host);
    return CK_OK;
}

static ck_time tm_deadline(void *self)
{
    const ck_tm *tm = self;
    if (tm->connected)
        return CK_MIN(tm->next_hb, tm->jm_seen + tm->hb_timeout + 1);
    return tm->next_hb;
}

static int tm_on_deadline(void *self)
{
    ck_tm *tm = self;
    ck_time now = ck_now(tm->plat);
    if (tm->connected && now - tm->jm_seen > tm->hb_timeout) {
        ck_logf(tm->plat, CK_LOG_WARN,
                "task manager %d: no heartbeat answer from the job manager for %.1f s: "
                "cancelling its subtasks",
                tm->host, (double)(now - tm->jm_seen) / 1e9);
        tm->connected = 0;
        tm->plat->ops->undeploy(tm->plat, CK_ATTEMPT_ALL, 0);
        if (tm->has_attempt)
            tm->cancelled = tm->attempt + 1;
    }
    if (now >= tm->next_hb) {
        heartbeat(tm, 0);
        while (tm->next_hb <= now)
            tm->next_hb += tm->hb_interval;
    }
    return CK_OK;
}

static int tm_work(void *self)
{
    ck_tm *tm = self;
    if (!tm->started) {
        /* Register at once with a first heartbeat. */
        tm->started = 1;
        tm->connected = 1;
        tm->jm_seen = ck_now(tm->plat);
        heartbeat(tm, 1);
        tm->next_hb = ck_now(tm->plat) + tm->hb_interval;
    }
    return 0;
}

static int tm_finished(void *self)
{
    CK_UNUSED(self);
    return 0; /* serves until the run ends */
}

static int tm_check(const void *self, ck_inv *v)
{
    return ck_tm_check(self, v);
}

static const ck_node_ops tm_node_ops = {
    .on_message = tm_on_message,
    .on_complete = tm_on_complete,
    .on_peer_lost = tm_on_peer_lost,
    .deadline = tm_deadline,
    .on_deadline = tm_on_deadline,
    .work = tm_work,
    .finished = tm_finished,
    .check = tm_check,
};

ck_node ck_tm_node(ck_tm *tm)
{
    ck_node n = {&tm_node_ops, tm};
    return n;
}

/* ---- invariants (taskmanager.h) ------------------------------------------------------ */

#define CK_INV_MODULE "taskmanager"

static int check_tm(const ck_tm *tm, ck_inv *v)
{
    CK_INV(v, 1,
           tm->started ? tm->next_hb != CK_TIME_NEVER
                       : !tm->connected && tm->next_hb == CK_TIME_NEVER,
           "%s, %s, next heartbeat at %lld ns", tm->started ? "started" : "not started",
           tm->connected ? "connected" : "disconnected", (long long)tm->next_hb);
    CK_INV(v, 2, !tm->cancelled || (tm->has_attempt && tm->cancelled <= tm->attempt + 1),
           "cancelled attempt %u for the job manager's silence, newest attempt here %u%s",
           tm->cancelled - 1, tm->attempt, tm->has_attempt ? "" : " (none deployed)");
    return tm->plat->netpool ? ck_segpool_check(tm->plat->netpool, v) : 0;
}

int ck_tm_check(const ck_tm *tm, ck_inv *v)
{
    int rc = check_tm(tm, v);
    if (rc)
        ck_inv_where(v, "task manager %d", tm->host);
    return rc;
}
