#include "jobmanager.h"

#include <stdio.h>
#include <stdlib.h>

#include "assign.h"
#include "error.h"
#include "invariant.h"
#include "storekey.h"
#include "task.h"
#include "taskmanager.h"
#include "wire.h"

const char *ck_job_state_name(ck_job_state s)
{
    switch (s) {
    case CK_JOB_WAITING:
        return "WAITING";
    case CK_JOB_RUNNING:
        return "RUNNING";
    case CK_JOB_RESTARTING:
        return "RESTARTING";
    case CK_JOB_FINISHED:
        return "FINISHED";
    case CK_JOB_FAILED:
        return "FAILED";
    }
    return "?";
}

int ck_jm_init(ck_jm *jm, ck_platform *plat, const ck_job_env *env, int ntm, uint64_t seed)
{
    const ck_graph *g = env->g;
    const ck_config *cfg = env->cfg;
    memset(jm, 0, sizeof(*jm));
    jm->plat = plat;
    jm->g = g;
    jm->gens = env->gens;
    jm->ngens = env->gens ? env->ngens : 1;
    jm->cfg = cfg;
    jm->ntm = ntm;
    jm->state = CK_JOB_WAITING;
    jm->tm_seen = malloc((size_t)ntm * sizeof(ck_time));
    jm->tm_refused = malloc((size_t)ntm * sizeof(ck_time));
    jm->tm_newer = calloc((size_t)ntm, 1);
    jm->placement = calloc(g->nsubtasks, sizeof(uint16_t));
    jm->done = calloc(g->nsubtasks, 1);
    jm->running = calloc(g->nsubtasks, 1);
    jm->ended = calloc(g->nsubtasks, 1);
    jm->tasks = calloc(g->nsubtasks, sizeof(ck_metrics));
    jm->lag_ns = calloc(g->nsubtasks, sizeof(int64_t));
    jm->lag_recent = calloc((size_t)g->nsubtasks * CK_JM_LAG_REPORTS, sizeof(int64_t));
    jm->lag_count = calloc(g->nsubtasks, sizeof(uint32_t));
    jm->vertices = calloc((size_t)g->nv, sizeof(ck_metrics));
    jm->lhost = calloc((size_t)ck_graph_hosts_needed(g), sizeof(uint16_t));
    jm->sub_attempt = calloc(g->nsubtasks, sizeof(uint32_t));
    jm->region = calloc(g->nsubtasks, sizeof(uint32_t));
    jm->restarting = calloc(g->nsubtasks, 1);
    jm->eras = calloc((size_t)jm->ngens + 1, sizeof(*jm->eras));
    if (jm->eras)
        jm->eras[jm->neras++] = (ck_jm_era){0, g};
    if (!jm->eras || !jm->tm_seen || !jm->tm_refused || !jm->tm_newer || !jm->placement ||
        !jm->done || !jm->running || !jm->ended || !jm->tasks || !jm->lag_ns || !jm->lag_recent ||
        !jm->lag_count || !jm->vertices || !jm->lhost || !jm->sub_attempt || !jm->region ||
        !jm->restarting || ck_graph_regions(g, jm->region) < 0) {
        ck_jm_free(jm);
        return CK_ENOMEM;
    }
    jm->region_failover = ck_cfg(cfg, CK_CFG_FAILOVER) == CK_FAILOVER_REGION;
    jm->retired.start_ns = CK_TIME_NEVER;
    for (int h = 0; h < ntm; h++)
        jm->tm_seen[h] = jm->tm_refused[h] = CK_TIME_NEVER;
    for (uint32_t i = 0; i < g->nsubtasks; i++) {
        int v, s;
        ck_graph_locate(g, i, &v, &s);
        jm->tasks[i].task.vertex = (uint32_t)v;
        jm->tasks[i].task.subtask = (uint32_t)s;
        jm->tasks[i].task.start_ns = CK_TIME_NEVER;
    }
    ck_metrics_init(&jm->job);
    ck_restart_init(&jm->rs, cfg, seed);
    /* Started from a savepoint: checkpoint ids go on after its id. */
    jm->base = env->start;
    jm->start_id = env->start.id;
    jm->start_meta = env->start_meta;
    jm->topic = env->topic;
    if (ck_cc_init(&jm->cc, plat, g, cfg, env->job_id, jm->base.id + 1, seed)) {
        ck_jm_free(jm);
        return CK_ENOMEM;
    }
    jm->cc.input_fp = env->input_fp;
    jm->cc.stopped = 1; /* until the job runs */
    if (ck_cc_adopt(&jm->cc, &env->start, env->start_meta ? env->start_meta->tasks : NULL,
                    env->start_meta ? env->start_meta->nsubtasks : 0,
                    (int)ck_cfg(cfg, CK_CFG_CLAIM_MODE))) {
        ck_jm_free(jm);
        return CK_ENOMEM;
    }
    return CK_OK;
}

void ck_jm_free(ck_jm *jm)
{
    if (jm->tasks)
        for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
            ck_metrics_free(&jm->tasks[i]);
    free(jm->tasks);
    if (jm->vertices)
        for (int v = 0; v < jm->g->nv; v++)
            ck_metrics_free(&jm->vertices[v]);
    free(jm->vertices);
    free(jm->done);
    free(jm->running);
    free(jm->ended);
    free(jm->tm_seen);
    free(jm->tm_refused);
    free(jm->tm_newer);
    free(jm->placement);
    free(jm->lhost);
    free(jm->sub_attempt);
    free(jm->region);
    free(jm->restarting);
    free(jm->lag_ns);
    free(jm->lag_recent);
    free(jm->lag_count);
    free(jm->eras);
    for (size_t i = 0; i < jm->nrecoveries; i++)
        free(jm->recoveries[i].subtasks);
    free(jm->recoveries);
    free(jm->mats);
    free(jm->rescales);
    free(jm->fallbacks);
    ck_metrics_free(&jm->job);
    ck_restart_free(&jm->rs);
    if (jm->g)
        ck_cc_free(&jm->cc);
    memset(jm, 0, sizeof(*jm));
}

const char *ck_job_failure_name(ck_job_failure f)
{
    static const char *const names[] = {"none", "restarts_exhausted", "no_checkpoint",
                                        "no_slots", "no_endpoints", "out_of_memory", "stalled"};
    return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

const char *ck_rescale_outcome_name(ck_rescale_outcome o)
{
    static const char *const names[] = {"under_way", "done", "refused", "failed",
                                        "interrupted"};
    return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

/* The rescale under way, or NULL. */
static ck_rescale *rescale_now(const ck_jm *jm)
{
    return jm->rescaling ? &jm->rescales[jm->rescaling - 1] : NULL;
}

/* Ends the rescale under way with outcome o (why: one line). */
static void rescale_end(ck_jm *jm, ck_rescale_outcome o, const char *why)
{
    ck_rescale *rs = rescale_now(jm);
    if (!rs)
        return;
    rs->outcome = o;
    snprintf(rs->why, sizeof(rs->why), "%s", why ? why : "");
    jm->rescaling = 0;
    if (o != CK_RESCALE_DONE)
        ck_logf(jm->plat, CK_LOG_WARN, "rescale %u %s: %s", rs->number,
                ck_rescale_outcome_name(o), rs->why);
}

static void job_fail(ck_jm *jm, ck_job_failure because, const char *why)
{
    if (jm->state == CK_JOB_FINISHED || jm->state == CK_JOB_FAILED)
        return;
    jm->state = CK_JOB_FAILED;
    jm->end = ck_now(jm->plat);
    /* As Flink's coordinator shuts down with the job: the checkpoints
     * pending abort (their directories go), and the files merged across
     * checkpoints that nothing retained refers to go with them. */
    ck_cc_abort_all(&jm->cc, "the job failed");
    snprintf(jm->failure, sizeof(jm->failure), "%s", why);
    jm->failed_because = because;
    rescale_end(jm, CK_RESCALE_INTERRUPTED, "the job failed");
    ck_logf(jm->plat, CK_LOG_ERROR, "job failed: %s", why);
}

/* The sources' level now: the greatest lag of their last few reports in
 * this attempt (one report is a sample of a lag that moves with every
 * step a source takes). */
static int64_t lag_level(const ck_jm *jm)
{
    int64_t before = 0;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
        for (uint32_t k = 0; k < CK_MIN(jm->lag_count[i], (uint32_t)CK_JM_LAG_REPORTS); k++)
            before = CK_MAX(before, jm->lag_recent[(size_t)i * CK_JM_LAG_REPORTS + k]);
    return before;
}

static ck_recovery *open_recovery(ck_jm *jm)
{
    if (jm->nrecoveries == 0)
        return NULL;
    return &jm->recoveries[jm->nrecoveries - 1];
}

/* ---- placement and deployment --------------------------------------------------- */

static int tm_alive(const ck_jm *jm, int h)
{
    return jm->tm_seen[h] != CK_TIME_NEVER;
}

/* Alive, and its connection not refused: the job is placed only there
 * (Flink's slot pool keeps a task manager whose heartbeat RPCs fail until
 * it is released; chandy does not deploy onto it meanwhile). */
static int tm_usable(const ck_jm *jm, int h)
{
    return tm_alive(jm, h) && jm->tm_refused[h] == CK_TIME_NEVER;
}

/* The group of slots (one task manager's worth) subtask i takes. */
static int lhost_of(const ck_jm *jm, uint32_t i)
{
    return ck_graph_slot(jm->g, i) / jm->g->slots_per_host;
}

/* Places subtasks on live task managers (slot sharing). 0 if too few. */
static int place(ck_jm *jm)
{
    int need = ck_graph_hosts_needed(jm->g), live = 0;
    int *hosts = malloc((size_t)jm->ntm * sizeof(int));
    if (!hosts)
        return 0;
    for (int h = 0; h < jm->ntm; h++)
        if (tm_usable(jm, h))
            hosts[live++] = h;
    int ok = live >= need;
    if (ok) {
        for (int l = 0; l < need; l++)
            jm->lhost[l] = (uint16_t)hosts[l];
        for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
            jm->placement[i] = jm->lhost[lhost_of(jm, i)];
    }
    free(hosts);
    return ok;
}

/* Places the subtasks whose regions restart. Their group of slots stays
 * on its task manager if that is usable; otherwise the group moves to the
 * first usable one that no subtask still to run occupies (a finished
 * subtask holds no slot). The others stay where they run. 0 if too few. */
static int place_restarting(ck_jm *jm)
{
    int need = ck_graph_hosts_needed(jm->g), ok = 1;
    uint16_t *want = malloc((size_t)need * sizeof(uint16_t));
    uint8_t *move = calloc((size_t)need, 1), *busy = calloc((size_t)jm->ntm, 1);
    if (!want || !move || !busy) {
        free(want), free(move), free(busy);
        return 0;
    }
    memcpy(want, jm->lhost, (size_t)need * sizeof(uint16_t));
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
        if (jm->restarting[i] && !tm_usable(jm, jm->lhost[lhost_of(jm, i)]))
            move[lhost_of(jm, i)] = 1;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++) {
        int l = lhost_of(jm, i);
        if (jm->restarting[i] && !move[l])
            busy[jm->lhost[l]] = 1;
        else if (!jm->restarting[i] && !jm->done[i])
            busy[jm->placement[i]] = 1;
    }
    for (int l = 0; l < need && ok; l++) {
        if (!move[l])
            continue;
        ok = 0;
        for (int h = 0; h < jm->ntm && !ok; h++)
            if (tm_usable(jm, h) && !busy[h]) {
                want[l] = (uint16_t)h;
                busy[h] = 1;
                ok = 1;
            }
    }
    if (ok) {
        memcpy(jm->lhost, want, (size_t)need * sizeof(uint16_t));
        for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
            if (jm->restarting[i])
                jm->placement[i] = jm->lhost[lhost_of(jm, i)];
    }
    free(want), free(move), free(busy);
    return ok;
}

/* Whether a restore failed on checkpoint id itself: it is not restored again. */
static int unrestorable(const ck_jm *jm, uint64_t id)
{
    for (size_t i = 0; i < jm->nfallbacks; i++)
        if (jm->fallbacks[i].from == id)
            return 1;
    return 0;
}

/* Where a restart restores from: the newest completed checkpoint still in
 * the store and not found unrestorable, or the savepoint the job started or
 * resumed from if that is newer (ids are one sequence). 0: from scratch.
 * A stop-with-savepoint counts as a checkpoint here: it committed the
 * sinks' transactions, so a failure while the job stops must restore it
 * or replay what it committed (Flink 1.15+ recovers from synchronous
 * savepoints, not from intermediate ones, which commit nothing). */
static uint64_t latest_checkpoint_point(const ck_jm *jm, ck_restore_point *out)
{
    memset(out, 0, sizeof(*out));
    if (jm->base.id && !unrestorable(jm, jm->base.id))
        *out = jm->base;
    for (size_t i = jm->cc.ncps; i-- > 0;) {
        const ck_cp_record *c = &jm->cc.cps[i];
        int restorable = !(c->flags & CK_CP_FLAG_SAVEPOINT) || (c->flags & CK_CP_FLAG_STOP);
        if (c->status == CK_CP_COMPLETED && !c->retired && restorable && !unrestorable(jm, c->id)) {
            if (c->id > out->id) {
                out->id = c->id;
                out->flags = c->flags;
                /* the coordinator took only a job id that makes keys */
                CK_IGNORE(ck_sk_dir(out->dir, sizeof(out->dir), jm->cc.job_id, c->id,
                                    !!(c->flags & CK_CP_FLAG_SAVEPOINT)));
            }
            break;
        }
    }
    return out->id;
}

static uint64_t latest_checkpoint(const ck_jm *jm)
{
    ck_restore_point p;
    return latest_checkpoint_point(jm, &p);
}

/* Whether subtask g runs a source. */
static int is_source(const ck_jm *jm, uint32_t g)
{
    int v, sub;
    ck_graph_locate(jm->g, g, &v, &sub);
    return jm->g->spec.ops[jm->g->v[v].ops[0]].kind == CK_OP_SOURCE;
}

/* ---- generations: a rescale redeploys the job on another graph ------------------- */

static void add_stats(ck_task_stats *sum, const ck_task_stats *d);

/* The generation attempt a ran. */
static const ck_graph *graph_of(const ck_jm *jm, uint32_t a)
{
    int k = jm->neras - 1;
    while (k > 0 && jm->eras[k].first_attempt > a)
        k--;
    return jm->eras[k].g;
}

/* The job takes generation ng of its graph from its next attempt on (a
 * rescale's redeployment, every subtask stopped): the per-subtask arrays
 * are ng's; a subtask keeps its counts where its vertex and index are
 * still there, the others' go to `retired`. 0, or CK_ENOMEM (nothing
 * changed). */
static int regenerate(ck_jm *jm, const ck_graph *ng)
{
    const ck_graph *og = jm->g;
    size_t n = ng->nsubtasks;
    uint16_t *placement = calloc(n, sizeof(uint16_t));
    uint16_t *lhost = calloc((size_t)ck_graph_hosts_needed(ng), sizeof(uint16_t));
    uint8_t *done = calloc(n, 1), *running = calloc(n, 1), *ended = calloc(n, 1);
    uint8_t *restarting = calloc(n, 1);
    ck_metrics *tasks = calloc(n, sizeof(ck_metrics));
    int64_t *lag_ns = calloc(n, sizeof(int64_t));
    int64_t *lag_recent = calloc(n * CK_JM_LAG_REPORTS, sizeof(int64_t));
    uint32_t *lag_count = calloc(n, sizeof(uint32_t));
    uint32_t *sub_attempt = calloc(n, sizeof(uint32_t));
    uint32_t *region = calloc(n, sizeof(uint32_t));
    int oom = !placement || !lhost || !done || !running || !ended || !restarting || !tasks ||
              !lag_ns || !lag_recent || !lag_count || !sub_attempt || !region ||
              ck_graph_regions(ng, region) < 0 || jm->neras > jm->ngens ||
              ck_cc_regenerate(&jm->cc, ng);
    if (oom) {
        free(placement), free(lhost), free(done), free(running), free(ended), free(restarting);
        free(tasks), free(lag_ns), free(lag_recent), free(lag_count), free(sub_attempt);
        free(region);
        return CK_ENOMEM;
    }
    for (uint32_t i = 0; i < ng->nsubtasks; i++) {
        int v, sub;
        ck_graph_locate(ng, i, &v, &sub);
        tasks[i].task.vertex = (uint32_t)v;
        tasks[i].task.subtask = (uint32_t)sub;
        tasks[i].task.start_ns = CK_TIME_NEVER;
        sub_attempt[i] = jm->attempt;
    }
    for (uint32_t i = 0; i < og->nsubtasks; i++) {
        int v, sub;
        ck_graph_locate(og, i, &v, &sub);
        if (sub < ng->v[v].parallelism) { /* the same vertex and index: its counts go on */
            tasks[ng->v[v].base + (uint32_t)sub] = jm->tasks[i];
        } else {
            add_stats(&jm->retired, &jm->tasks[i].task);
            ck_metrics_free(&jm->tasks[i]);
        }
    }
    free(jm->placement), free(jm->lhost), free(jm->done), free(jm->running), free(jm->ended);
    free(jm->restarting), free(jm->tasks), free(jm->lag_ns), free(jm->lag_recent);
    free(jm->lag_count), free(jm->sub_attempt), free(jm->region);
    jm->placement = placement, jm->lhost = lhost, jm->done = done, jm->running = running;
    jm->ended = ended, jm->restarting = restarting, jm->tasks = tasks, jm->lag_ns = lag_ns;
    jm->lag_recent = lag_recent, jm->lag_count = lag_count, jm->sub_attempt = sub_attempt;
    jm->region = region;
    jm->nfinished = jm->nended = jm->nrestarting = 0;
    jm->g = ng;
    /* its first attempt: the next one deployed */
    jm->eras[jm->neras++] = (ck_jm_era){jm->attempt + 1, ng};
    ck_logf(jm->plat, CK_LOG_INFO, "the job rescales to generation %d: %u subtasks",
            ng->generation, ng->nsubtasks);
    return CK_OK;
}

/* The generation a rescale whose old attempt stopped deploys, or NULL:
 * none under way, or the job runs it already. */
static const ck_graph *rescale_gen(const ck_jm *jm)
{
    const ck_rescale *rs = jm->rescaling ? &jm->rescales[jm->rescaling - 1] : NULL;
    if (!rs || rs->stopped == CK_TIME_NEVER || rs->deployed != CK_TIME_NEVER || !jm->gens ||
        rs->gen <= 0 || rs->gen >= jm->ngens || &jm->gens[rs->gen] == jm->g)
        return NULL;
    return &jm->gens[rs->gen];
}

/* The state each subtask of the job restores from jm->restore: */
typedef struct ck_restore_plan {
    const ck_handles **handles; /* per global subtask: borrowed, or one of owned */
    ck_handles *owned;          /* per global subtask: built from a partial assignment */
    uint32_t *origins;          /* per global subtask: old vertex, subtask, parallelism */
    ck_restore_point *points;   /* per global subtask: its takes and chunks (malloc'd),
                                 * when its handles are another parallelism's */
    char why[400];              /* the assignment's refusal */
} ck_restore_plan;

static void restore_plan_free(ck_restore_plan *rp, uint32_t n)
{
    for (uint32_t i = 0; rp->owned && i < n; i++)
        ck_handles_free(&rp->owned[i]);
    for (uint32_t i = 0; rp->points && i < n; i++) {
        free((void *)rp->points[i].takes);
        free((void *)rp->points[i].chunks);
    }
    free(rp->points);
    free(rp->owned);
    free(rp->handles);
    free(rp->origins);
    memset(rp, 0, sizeof(*rp));
}

/* What subtask t of plan a takes of each of its handles, and the operator
 * state entries dealt to it, for its DEPLOY (ck_restore_point.takes,
 * .chunks: malloc'd). 0 or CK_ENOMEM. */
static int plan_takes(const ck_asg *a, const ck_asg_task *t, const ck_cp_meta *m,
                      const ck_asg_opstate *os, ck_restore_point *pt)
{
    ck_restore_take *tk = calloc(t->ntakes + 1, sizeof(*tk));
    uint32_t nc = 0;
    for (uint32_t q = 0; q < t->nops; q++)
        nc += t->ops[q].n;
    ck_restore_chunk *ch = calloc(nc + 1, sizeof(*ch));
    if (!tk || !ch) {
        free(tk);
        free(ch);
        return CK_ENOMEM;
    }
    uint32_t ob = a->old_base[t->old_vertex];
    for (uint32_t k = 0; k < t->ntakes; k++) {
        const ck_asg_take *x = &t->takes[k];
        tk[k] = (ck_restore_take){.old_vertex = (uint32_t)t->old_vertex,
                                  .old_subtask = x->old - ob,
                                  .old_parallelism = t->old_parallelism,
                                  .what = x->what,
                                  .kgr = x->kgr};
    }
    CK_UNUSED(m);
    nc = 0;
    for (uint32_t q = 0; q < t->nops; q++) {
        const ck_asg_opchunks *oc = &t->ops[q];
        for (uint32_t c = 0; c < oc->n; c++) {
            ck_restore_chunk *r = &ch[nc++];
            r->op = (uint32_t)os[oc->state].op;
            snprintf(r->name, sizeof(r->name), "%s", os[oc->state].name);
            r->old = oc->v[c].old;
            r->first = oc->v[c].first;
            r->n = oc->v[c].n;
        }
    }
    pt->takes = tk;
    pt->chunks = ch;
    pt->nchunks = nc;
    return CK_OK;
}

/* Plans what each subtask of the generation the job deploys (jm->g)
 * restores from jm->restore with the state assignment (assign.h), the
 * one the savepoint pre-check made: its handles and the snapshot's
 * subtask they are of, or (handles NULL) that it starts empty. The
 * snapshot is of the generation that took it, which a rescale's
 * redeployment does not run. 0, CK_EINVAL (the assignment refused:
 * rp->why), CK_ENOMEM. */
static int restore_plan(const ck_jm *jm, ck_restore_plan *rp)
{
    const ck_graph *g = jm->g;
    memset(rp, 0, sizeof(*rp));
    /* The snapshot's _metadata: the savepoint's, or one made of the
     * coordinator's record (of the generation that took it; the
     * savepoint the job started from is of the first). An old-version
     * savepoint lists no vertices: it is taken to be of the job as
     * submitted, as the pre-check took it. */
    ck_cp_meta own = {0};
    ck_handles *own_tasks = NULL; /* own's list of borrowed handles, when it has one */
    const ck_cp_meta *m = jm->start_meta;
    const ck_cp_record *c = ck_cc_find(&jm->cc, jm->restore.id);
    if (c || jm->restore.id != jm->start_id || !m) {
        const ck_graph *rg = c ? c->g : jm->eras[0].g;
        own.id = jm->restore.id;
        own.flags = jm->restore.flags;
        own.nsubtasks = rg->nsubtasks;
        own.tasks = own_tasks = calloc(rg->nsubtasks, sizeof(*own.tasks));
        if (!own.tasks || ck_cp_meta_vertices(&own, rg)) {
            free(own_tasks);
            return CK_ENOMEM;
        }
        for (uint32_t i = 0; i < rg->nsubtasks; i++)
            own.tasks[i] = *ck_cc_handles(&jm->cc, jm->restore.id, i); /* borrowed */
        m = &own;
    } else if (!m->nvertices && m->nsubtasks == jm->eras[0].g->nsubtasks) {
        own = *m; /* its handles, borrowed */
        own.vertices = NULL;
        if (ck_cp_meta_vertices(&own, jm->eras[0].g))
            return CK_ENOMEM;
        m = &own;
    }
    /* Operator state, dealt from the snapshot's counts (assign.h: a
     * buffer's list, sources' partitions as their split-distribute list
     * state, FLIP-27); of a snapshot without them, the sources' by the
     * topic's rule. (An old-version _metadata of another parallelism lists
     * no vertices: the plan refuses it.) */
    ck_asg_opstate *os = calloc(CK_ASG_MAX_OPSTATES, sizeof(*os));
    uint32_t *parts = NULL;
    int nparts = jm->topic ? jm->topic->ops->npartitions(jm->topic->ctx) : 0;
    int nos = os ? ck_asg_opstate_from_meta(m, g, jm->topic ? jm->topic->name : NULL, nparts, os,
                                            CK_ASG_MAX_OPSTATES, &parts, rp->why,
                                            sizeof(rp->why))
                 : CK_ENOMEM;
    ck_asg a;
    int rc = nos < 0 ? nos : ck_asg_plan(&a, m, g, jm->cfg, os, nos, rp->why, sizeof(rp->why));
    if (nos < 0)
        memset(&a, 0, sizeof(a));
    if (!rc)
        rc = ck_asg_applicable(&a, m, g, rp->why, sizeof(rp->why));
    rp->handles = rc ? NULL : calloc(g->nsubtasks, sizeof(*rp->handles));
    rp->owned = rc ? NULL : calloc(g->nsubtasks, sizeof(*rp->owned));
    rp->origins = rc ? NULL : calloc(3 * (size_t)g->nsubtasks, sizeof(*rp->origins));
    rp->points = rc ? NULL : calloc(g->nsubtasks, sizeof(*rp->points));
    if (!rc && (!rp->handles || !rp->owned || !rp->origins || !rp->points))
        rc = CK_ENOMEM;
    for (uint32_t i = 0; !rc && i < g->nsubtasks; i++) {
        const ck_asg_task *t = &a.tasks[i];
        if (t->empty) /* its vertex keeps no state: it starts empty */
            continue;
        rp->origins[3 * i] = (uint32_t)t->old_vertex;
        rp->origins[3 * i + 1] = (uint32_t)t->old_subtask;
        rp->origins[3 * i + 2] = t->old_parallelism;
        /* An old subtask's handles taken whole, in order, as they are
         * (an unchanged parallelism): its own list; else a list made of
         * the takes. */
        rp->points[i].moved_in = t->moved_in;
        rp->points[i].moved_out = t->moved_out;
        uint32_t old = t->ntakes ? t->takes[0].old : 0;
        int whole = t->old_subtask >= 0 && t->ntakes == m->tasks[old].n;
        for (uint32_t k = 0; whole && k < t->ntakes; k++)
            whole = t->takes[k].old == old && t->takes[k].handle == k;
        if (whole && t->ntakes) { /* the coordinator's or the savepoint's, not own's copy */
            rp->handles[i] = m == &own && own_tasks ? ck_cc_handles(&jm->cc, jm->restore.id, old)
                                                    : &m->tasks[old];
            continue;
        }
        for (uint32_t k = 0; !rc && k < t->ntakes; k++) {
            const ck_handle *h = &m->tasks[t->takes[k].old].v[t->takes[k].handle];
            rc = ck_handles_add_like(&rp->owned[i], h, h->flags);
        }
        rp->handles[i] = &rp->owned[i];
        if (!rc && t->old_subtask < 0)
            rc = plan_takes(&a, t, m, os, &rp->points[i]);
    }
    ck_asg_free(&a);
    free(os);
    if (rc == CK_EINVAL && rp->why[0]) {
        char tmp[sizeof(rp->why)];
        snprintf(tmp, sizeof(tmp), "%s", rp->why);
        snprintf(rp->why, sizeof(rp->why), "%s cannot restore: %s", jm->restore.dir, tmp);
    }
    if (rc) {
        char why[sizeof(rp->why)];
        memcpy(why, rp->why, sizeof(why));
        restore_plan_free(rp, g->nsubtasks);
        memcpy(rp->why, why, sizeof(why));
    }
    free(parts);
    free(own_tasks);
    free(own.vertices);
    return rc;
}

/* Deploys a new attempt: of every subtask (mask NULL: the job's first
 * deployment or a full restart, state WAITING or RESTARTING), or of the
 * subtasks in mask alone (a region restart; the job is RUNNING). */
static void deploy(ck_jm *jm, ck_time now, const uint8_t *mask)
{
    int restart = jm->state == CK_JOB_RESTARTING || mask;
    if (restart)
        jm->attempt++;
    memset(&jm->restore, 0, sizeof(jm->restore));
    if (restart || jm->base.id)
        latest_checkpoint_point(jm, &jm->restore);
    jm->restore_cp = jm->restore.id;
    if (!mask)
        jm->stop_id = 0;
    /* What each subtask restores: the state assignment (assign.h) of the
     * snapshot, as the coordinator recorded it or as the savepoint the job
     * started from lists it, into the generation the job deploys. Planned
     * before any subtask is marked as running the new attempt: a refusal
     * fails the job with every subtask's attempt as the coordinator has it. */
    ck_restore_plan rp;
    int prc = jm->restore.id ? restore_plan(jm, &rp) : CK_OK;
    if (prc) {
        if (prc == CK_ENOMEM)
            job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory deploying the job");
        else
            job_fail(jm, CK_JOBFAIL_NO_CHECKPOINT, rp.why);
        return;
    }
    uint16_t *hosts = malloc((size_t)jm->g->nsubtasks * sizeof(uint16_t) + 1);
    if (!hosts) {
        if (jm->restore.id)
            restore_plan_free(&rp, jm->g->nsubtasks);
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory deploying the job");
        return;
    }
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++) {
        hosts[i] = CK_HOST_NONE;
        if (mask && !mask[i])
            continue;
        hosts[i] = jm->placement[i];
        jm->sub_attempt[i] = jm->attempt;
        jm->nfinished -= jm->done[i];
        jm->nended -= jm->ended[i];
        jm->done[i] = jm->running[i] = jm->ended[i] = 0;
        /* The last attempt's lag says nothing of this one's: a restart
         * from an old checkpoint replays a backlog the new sources have
         * not reported yet, and a report of any other subtask must not
         * find the job caught up before they have. */
        if (is_source(jm, i)) {
            jm->lag_ns[i] = -1;
            jm->lag_count[i] = 0;
        }
    }
    jm->plat->ops->set_routes(jm->plat, jm->attempt, jm->g->generation, jm->g->nsubtasks, hosts);
    const ck_handles **handles = jm->restore.id ? (const ck_handles **)rp.handles : NULL;
    int oom = 0;
    for (int h = 0; h < jm->ntm && !oom; h++) {
        if (!tm_alive(jm, h))
            continue;
        size_t blen, n;
        uint8_t *body = ck_tm_deploy_body_takes(
            jm->attempt, jm->g->generation, &jm->restore, jm->g->nsubtasks, hosts, handles,
            jm->restore.id ? rp.origins : NULL, jm->restore.id ? rp.points : NULL, h, &blen);
        uint8_t *m = body ? ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + (uint32_t)h,
                                        jm->attempt, body, blen, &n)
                          : NULL;
        free(body);
        oom = !body;
        if (m) /* lost with its task manager: failed over by heartbeat.timeout (platform.h) */
            CK_IGNORE(jm->plat->ops->send(jm->plat, CK_EP_TM0 + (uint32_t)h, m, n));
    }
    if (jm->restore.id)
        restore_plan_free(&rp, jm->g->nsubtasks);
    free(hosts);
    if (oom) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory deploying the job");
        return;
    }
    /* A rescale's redeployment is no recovery's: the last recovery keeps
     * its phases. */
    ck_rescale *rs = rescale_now(jm);
    if (rs && (rs->stopped == CK_TIME_NEVER || rs->deployed != CK_TIME_NEVER || mask))
        rs = NULL;
    ck_recovery *r = rs ? NULL : open_recovery(jm);
    if (rs) {
        rs->deployed = now;
        rs->attempt = jm->attempt;
        rs->checkpoint = jm->restore_cp;
        jm->rescale_tracked = jm->rescaling;
    }
    if (restart && r) {
        r->restarted = now;
        r->attempt = jm->attempt;
        r->checkpoint = jm->restore_cp;
    }
    jm->state = CK_JOB_RUNNING;
    if (mask) {
        ck_cc_restart_subtasks(&jm->cc, jm->attempt, mask);
        memset(jm->restarting, 0, jm->g->nsubtasks);
        jm->nrestarting = 0;
    } else {
        ck_cc_start_attempt(&jm->cc, jm->attempt, now);
        /* Flink's coordinator triggers a checkpoint only once every task
         * runs, and a restored task runs once its state is in place: a
         * restart holds checkpoints until every subtask restored
         * (check_restored), as a region's restart does. */
        if (restart && (r || rs))
            ck_cc_hold(&jm->cc, rs ? "the job rescaled" : "the job restarted");
    }
    ck_logf(jm->plat, CK_LOG_INFO, "deployed attempt %u%s%s%s", jm->attempt,
            mask ? " (the failed regions)" : "", jm->restore_cp ? " from " : "",
            jm->restore_cp ? jm->restore.dir : "");
}

/* WAITING or RESTARTING, or RUNNING with regions restarting: deploy when
 * the delay passed and slots are there. */
static void maybe_deploy(ck_jm *jm, ck_time now)
{
    int regions = jm->state == CK_JOB_RUNNING && jm->nrestarting > 0;
    if ((jm->state == CK_JOB_RESTARTING || regions) && now < jm->restart_at)
        return;
    if (jm->state != CK_JOB_WAITING && jm->state != CK_JOB_RESTARTING && !regions)
        return;
    jm->restart_due = 0; /* the delay has passed: from now on, wait for slots */
    if (jm->state == CK_JOB_WAITING && now - jm->waiting_since < CK_STARTUP_GRACE) {
        int live = 0;
        for (int h = 0; h < jm->ntm; h++)
            live += tm_usable(jm, h);
        if (live < jm->ntm)
            return; /* the rest of the cluster is starting */
    }
    const ck_graph *ng = regions ? NULL : rescale_gen(jm);
    if (ng && regenerate(jm, ng)) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory rescaling the job");
        return;
    }
    if (regions ? place_restarting(jm) : place(jm)) {
        deploy(jm, now, regions ? jm->restarting : NULL);
        return;
    }
    if (now - jm->waiting_since > CK_SLOT_REQUEST_TIMEOUT) {
        char why[160];
        snprintf(why, sizeof(why),
                 "could not get %d task managers with free slots within the slot request timeout",
                 ck_graph_hosts_needed(jm->g));
        job_fail(jm, CK_JOBFAIL_NO_SLOTS, why);
    }
}

/* ---- failover ----------------------------------------------------------------------- */

/* The sources' lag: the greatest any source subtask of this attempt
 * reported. *all: every source has reported since the attempt started (a
 * source that has not is -1 in lag_ns: its lag is not known yet). */
static int64_t source_lag(const ck_jm *jm, int *all)
{
    int64_t m = 0;
    *all = 1;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++) {
        if (jm->lag_ns[i] < 0)
            *all = 0;
        else if (jm->lag_ns[i] > m)
            m = jm->lag_ns[i];
    }
    return m;
}


/* Opens an entry in `recoveries` for the subtasks in mask (NULL: all);
 * NULL when out of memory. */
static ck_recovery *new_recovery(ck_jm *jm, const char *cause, int host, ck_time now,
                                 const uint8_t *mask)
{
    if (jm->nrecoveries == jm->caprecoveries) {
        size_t cap = jm->caprecoveries ? jm->caprecoveries * 2 : 4;
        ck_recovery *v = realloc(jm->recoveries, cap * sizeof(*v));
        if (!v)
            return NULL;
        jm->recoveries = v;
        jm->caprecoveries = cap;
    }
    uint8_t *restarted = malloc(jm->g->nsubtasks);
    if (!restarted)
        return NULL;
    if (mask)
        memcpy(restarted, mask, jm->g->nsubtasks);
    else
        memset(restarted, 1, jm->g->nsubtasks);
    ck_recovery *r = &jm->recoveries[jm->nrecoveries++];
    memset(r, 0, sizeof(*r));
    r->subtasks = restarted;
    r->nsubtasks = jm->g->nsubtasks;
    r->detected = now;
    r->failed = CK_TIME_NEVER;
    r->restarted = r->restored = r->first_output = r->caught_up = CK_TIME_NEVER;
    /* The sources' level before the failure: the greatest lag of their
     * last few reports in this attempt (one report is a sample of a lag
     * that moves with every step a source takes). */
    r->lag_before = lag_level(jm);
    r->host = host;
    snprintf(r->cause, sizeof(r->cause), "%s", cause);
    return r;
}

/* What a failure of the subtasks in `failed` restarts (NULL: a failure of
 * the job as a whole): with region failover, every subtask of their
 * pipelined regions; otherwise, and for a global failure, every subtask.
 * A finished subtask of such a region restarts too (restored, it finishes
 * at once), as in Flink. A failure while a stop-with-savepoint is under
 * way fails the job as a whole (Flink's StopWithSavepointTerminationHandler
 * fails over globally): subtasks that stopped at the savepoint's barrier
 * finished without ending their input, and only a restart of everything
 * from the savepoint goes on from where they stopped. */
static void restart_set(const ck_jm *jm, const uint8_t *failed, uint8_t *mask)
{
    uint32_t n = jm->g->nsubtasks;
    if (!failed || !jm->region_failover || jm->stop_id) {
        memset(mask, 1, n);
        return;
    }
    memset(mask, 0, n);
    for (uint32_t i = 0; i < n; i++)
        if (failed[i])
            for (uint32_t k = 0; k < n; k++)
                if (jm->region[k] == jm->region[i])
                    mask[k] = 1;
}

/* Tells every live task manager to stop the running attempts of the
 * subtasks in mask. */
static void cancel_subtasks(ck_jm *jm, const uint8_t *mask)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
        count += mask[i];
    uint8_t *body = malloc(4 + 8 * (size_t)count);
    if (!body)
        return; /* each task manager's subtasks fail on their own: their peers are gone */
    ck_put_u32(body, count);
    for (uint32_t i = 0, k = 0; i < jm->g->nsubtasks; i++)
        if (mask[i]) {
            ck_put_u32(body + 4 + 8 * k, jm->sub_attempt[i]);
            ck_put_u32(body + 8 + 8 * k, i);
            k++;
        }
    for (int h = 0; h < jm->ntm; h++) {
        if (!tm_alive(jm, h))
            continue;
        size_t n;
        uint8_t *m = ck_wire_msg(CK_MSG_CANCEL, CK_EP_JM, CK_EP_TM0 + (uint32_t)h, jm->attempt,
                                 body, 4 + 8 * (size_t)count, &n);
        if (m) /* lost with its task manager, whose subtasks are gone too (platform.h) */
            CK_IGNORE(jm->plat->ops->send(jm->plat, CK_EP_TM0 + (uint32_t)h, m, n));
    }
    free(body);
}

/* The subtasks in `failed` failed (NULL: the job as a whole); host: the
 * task manager whose loss caused it, or -1. */
static void failover(ck_jm *jm, const char *cause, int host, const uint8_t *failed)
{
    if (jm->state != CK_JOB_RUNNING)
        return;
    ck_time now = ck_now(jm->plat);
    uint32_t n = jm->g->nsubtasks;
    uint8_t *mask = malloc(n), *fresh = malloc(n);
    if (!mask || !fresh) {
        free(mask), free(fresh);
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory handling a failure");
        return;
    }
    restart_set(jm, failed, mask);
    /* A region restart is pending: this failure joins it. */
    int joins = jm->nrestarting > 0, any = 0, all = 1;
    for (uint32_t i = 0; i < n; i++) {
        fresh[i] = mask[i] && !jm->restarting[i];
        any |= fresh[i];
        mask[i] |= jm->restarting[i];
        all &= mask[i];
    }
    if (!any) {
        free(mask), free(fresh);
        return; /* what failed is restarting already */
    }
    rescale_end(jm, CK_RESCALE_INTERRUPTED, cause);
    ck_recovery *r = joins ? open_recovery(jm) : new_recovery(jm, cause, host, now, mask);
    if (!r) {
        free(mask), free(fresh);
        char why[256];
        snprintf(why, sizeof(why), "out of memory recording a failure: %.200s", cause);
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, why);
        return;
    }
    if (joins)
        memcpy(r->subtasks, mask, n);
    ck_logf(jm->plat, CK_LOG_WARN, "failure: %s%s", cause,
            all ? "" : joins ? " (joins the pending region restart)" : " (region failover)");
    /* Cancel what failed wherever it may still run. */
    cancel_subtasks(jm, fresh);
    free(fresh);
    /* Every attempt has endpoints of its own (graph.h): the next must fit. */
    if (((uint64_t)jm->attempt + 2) * ck_graph_stride(jm->g) + CK_EP_TASK0 >= CK_EP_CLIENT) {
        free(mask);
        char why[512];
        snprintf(why, sizeof(why), "%.400s (no endpoints left for attempt %u)", cause,
                 jm->attempt + 1);
        job_fail(jm, CK_JOBFAIL_NO_ENDPOINTS, why);
        return;
    }
    ck_time delay;
    int decided = ck_restart_on_failure(&jm->rs, now, &delay);
    if (decided == CK_RESTART_GIVE_UP) {
        free(mask);
        char why[512];
        snprintf(why, sizeof(why), "%.400s (restart strategy %s gave up after %d restarts)",
                 cause, ck_restart_name(jm->rs.type), jm->rs.restarts);
        job_fail(jm, CK_JOBFAIL_RESTARTS_EXHAUSTED, why);
        return;
    }
    /* Joined, the restart waits for the later of the two delays; merged
     * into the pending restart by the strategy (exponential-delay, as
     * Flink's notifyFailure), it keeps that restart's time. */
    ck_time at = joins && decided != CK_RESTART_MERGED ? CK_MAX(now + delay, jm->restart_at)
                                                       : now + delay;
    if (all) {
        ck_cc_abort_all(&jm->cc, "the job failed over");
        jm->stop_id = 0;
        memset(jm->restarting, 0, n);
        jm->nrestarting = 0;
        jm->state = CK_JOB_RESTARTING;
    } else {
        ck_cc_hold(&jm->cc, "a region of the job failed over");
        memcpy(jm->restarting, mask, n);
        jm->nrestarting = 0;
        for (uint32_t i = 0; i < n; i++)
            jm->nrestarting += mask[i];
    }
    free(mask);
    jm->restart_at = at;
    jm->restart_due = 1;
    jm->waiting_since = jm->restart_at;
}

/* Marks in mask (when not NULL) the subtasks that run on task manager h,
 * have not finished and are not restarting; returns whether there are any.
 * below: only those whose attempt is older (UINT32_MAX: all). */
static int tm_subtasks(const ck_jm *jm, int h, uint32_t below, uint8_t *mask)
{
    int any = 0;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++) {
        int m = jm->placement[i] == h && !jm->done[i] && !jm->restarting[i] &&
                (below == UINT32_MAX || jm->sub_attempt[i] < below);
        if (mask)
            mask[i] = (uint8_t)m;
        any |= m;
    }
    return any;
}

/* Task manager h lost the subtasks tm_subtasks names: they fail over. */
static void tm_failed(ck_jm *jm, int h, uint32_t below, const char *cause)
{
    uint8_t *mask = malloc(jm->g->nsubtasks);
    if (!mask) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory handling a failure");
        return;
    }
    if (tm_subtasks(jm, h, below, mask))
        failover(jm, cause, h, mask);
    free(mask);
}

/* Every subtask ended. After a stop-with-savepoint the job ends, or
 * restarts from the savepoint after the pause the stop asked for. */
static void all_finished(ck_jm *jm, ck_time now)
{
    const ck_cp_record *sp = jm->stop_id ? ck_cc_find(&jm->cc, jm->stop_id) : NULL;
    if (sp && sp->status != CK_CP_COMPLETED)
        sp = NULL;
    ck_rescale *rs = rescale_now(jm);
    if (sp && rs && rs->savepoint == sp->id) {
        /* A rescale via savepoint: the job starts again from it at once,
         * as its user resubmits it at the new parallelism. */
        if (rs->snapshot == CK_TIME_NEVER)
            rs->snapshot = sp->complete;
        rs->stopped = now;
        jm->base.id = sp->id;
        jm->base.flags = sp->flags;
        /* the coordinator took only a job id that makes keys */
        CK_IGNORE(ck_sk_dir(jm->base.dir, sizeof(jm->base.dir), jm->cc.job_id, sp->id,
                            !!(sp->flags & CK_CP_FLAG_SAVEPOINT)));
        ck_cc_abort_all(&jm->cc, "the job stopped to rescale");
        ck_logf(jm->plat, CK_LOG_INFO, "stopped with savepoint %llu; rescaling from it",
                (unsigned long long)sp->id);
        jm->stop_id = 0;
        jm->state = CK_JOB_RESTARTING;
        jm->restart_at = now;
        jm->restart_due = 1;
        jm->waiting_since = now;
        return;
    }
    if (sp && jm->stop_resume > 0) {
        char cause[200];
        snprintf(cause, sizeof(cause), "stopped with savepoint %llu, resumed from it",
                 (unsigned long long)sp->id);
        ck_recovery *r = new_recovery(jm, cause, -1, now, NULL);
        if (!r) {
            job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory");
            return;
        }
        r->failed = sp->trigger; /* the sources paused at its barrier */
        jm->base.id = sp->id;
        jm->base.flags = sp->flags;
        /* the coordinator took only a job id that makes keys */
        CK_IGNORE(ck_sk_dir(jm->base.dir, sizeof(jm->base.dir), jm->cc.job_id, sp->id,
                            !!(sp->flags & CK_CP_FLAG_SAVEPOINT)));
        ck_cc_abort_all(&jm->cc, "the job stopped");
        ck_logf(jm->plat, CK_LOG_INFO, "stopped with savepoint %llu; resuming in %.3f s",
                (unsigned long long)sp->id, (double)jm->stop_resume / 1e9);
        jm->stop_id = 0;
        jm->state = CK_JOB_RESTARTING;
        jm->restart_at = now + jm->stop_resume;
        jm->restart_due = 1;
        jm->waiting_since = jm->restart_at;
        return;
    }
    if (sp) {
        jm->stopped_with = sp->id;
        ck_logf(jm->plat, CK_LOG_INFO, "stopped with savepoint %llu", (unsigned long long)sp->id);
    }
    /* A checkpoint still pending has nothing left to wait for. */
    ck_cc_abort_all(&jm->cc, "the job finished");
    jm->state = CK_JOB_FINISHED;
    jm->end = now;
    ck_recovery *r = open_recovery(jm);
    if (r && r->caught_up == CK_TIME_NEVER && r->restored != CK_TIME_NEVER)
        r->caught_up = now; /* the input ran out: nothing left to catch up */
}

/* A savepoint request (the CLI, the fault timeline). */
static void on_savepoint_request(ck_jm *jm, uint32_t stop, const uint8_t *body, size_t len)
{
    if (jm->state != CK_JOB_RUNNING || jm->stop_id || jm->cc.restoring) {
        ck_logf(jm->plat, CK_LOG_WARN, "savepoint refused: the job is %s",
                jm->stop_id        ? "stopping"
                : jm->cc.restoring ? "restoring after a failure"
                                   : ck_job_state_name(jm->state));
        return;
    }
    uint64_t id = ck_cc_trigger_savepoint(&jm->cc, stop != 0);
    if (!id) {
        ck_logf(jm->plat, CK_LOG_WARN, "savepoint refused: the job is winding down");
        return;
    }
    ck_logf(jm->plat, CK_LOG_INFO, "%s %llu triggered", stop ? "stop-with-savepoint" : "savepoint",
            (unsigned long long)id);
    if (stop) {
        jm->stop_id = id;
        jm->stop_resume = len >= CK_SAVEPOINT_BODY ? (ck_time)ck_get_i64(body) : 0;
    }
}

/* A rescale via checkpoint restarts now: every subtask is cancelled, and
 * the next attempt restores the latest completed checkpoint at once (the
 * adaptive scheduler's Restarting state, without a backoff). */
static void rescale_restart(ck_jm *jm, ck_rescale *rs, ck_time now)
{
    uint8_t *all = malloc(jm->g->nsubtasks);
    if (!all) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory rescaling the job");
        return;
    }
    memset(all, 1, jm->g->nsubtasks);
    cancel_subtasks(jm, all);
    free(all);
    ck_cc_abort_all(&jm->cc, "the job rescales");
    rs->stopped = now;
    ck_logf(jm->plat, CK_LOG_INFO, "rescale %u: restarting from checkpoint %llu%s", rs->number,
            (unsigned long long)latest_checkpoint(jm),
            rs->waited ? "" : " (no checkpoint completed in time)");
    jm->state = CK_JOB_RESTARTING;
    jm->restart_at = now;
    jm->restart_due = 1;
    jm->waiting_since = now;
}

/* A rescale via checkpoint waits for a checkpoint that completes after it
 * was asked for (Flink 1.20's Executing.onCompletedCheckpoint); it stops
 * waiting after rescale-trigger.max-checkpoint-failures failed ones or at
 * rescale-trigger.max-delay, and restarts from the latest anyway. */
static void check_rescale_trigger(ck_jm *jm, ck_time now)
{
    ck_rescale *rs = rescale_now(jm);
    if (!rs || rs->via != CK_RESCALE_VIA_CHECKPOINT || rs->stopped != CK_TIME_NEVER ||
        jm->state != CK_JOB_RUNNING)
        return;
    if (jm->nended || jm->nfinished) {
        /* its input ended meanwhile: the job finishes at this parallelism */
        rescale_end(jm, CK_RESCALE_REFUSED, "the job's input ended while it waited");
        return;
    }
    int failures = 0;
    const ck_cp_record *done = NULL;
    for (size_t i = 0; i < jm->cc.ncps && !done; i++) {
        const ck_cp_record *c = &jm->cc.cps[i];
        if (c->flags & CK_CP_FLAG_SAVEPOINT)
            continue;
        if (c->status == CK_CP_COMPLETED && c->complete >= rs->trigger)
            done = c;
        else if (c->status != CK_CP_PENDING && c->status != CK_CP_COMPLETED &&
                 c->trigger >= rs->trigger)
            failures++;
    }
    if (done) {
        rs->waited = 1;
        rs->snapshot = done->complete;
    } else if (failures < ck_cfg(jm->cfg, CK_CFG_RESCALE_MAX_FAILURES) && now < rs->deadline) {
        return;
    }
    rescale_restart(jm, rs, now);
}

/* A rescale request (the fault timeline's `rescale`): number, its number
 * in the timeline; the body says how (CK_RESCALE_BODY). */
static void on_rescale_request(ck_jm *jm, uint32_t number, const uint8_t *body, size_t len,
                               ck_time now)
{
    uint32_t via = len >= CK_RESCALE_BODY ? ck_get_u32(body) : UINT32_MAX;
    if (via != CK_RESCALE_VIA_SAVEPOINT && via != CK_RESCALE_VIA_CHECKPOINT) {
        ck_logf(jm->plat, CK_LOG_WARN, "job manager: dropped a malformed rescale request");
        return;
    }
    ck_rescale *v = realloc(jm->rescales, (jm->nrescales + 1) * sizeof(*v));
    if (!v) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory rescaling the job");
        return;
    }
    jm->rescales = v;
    ck_rescale *rs = &jm->rescales[jm->nrescales++];
    memset(rs, 0, sizeof(*rs));
    rs->number = number;
    rs->via = (int)via;
    rs->gen = jm->gens && (int64_t)number + 1 < jm->ngens ? (int)number + 1 : jm->g->generation;
    rs->trigger = now;
    rs->snapshot = rs->stopped = rs->deployed = rs->restored = CK_TIME_NEVER;
    rs->first_output = rs->caught_up = rs->deadline = CK_TIME_NEVER;
    rs->lag_before = lag_level(jm);
    const char *busy = jm->state != CK_JOB_RUNNING ? ck_job_state_name(jm->state)
                       : jm->rescaling             ? "rescaling already"
                       : jm->stop_id               ? "stopping"
                       : jm->cc.restoring || jm->nrestarting ? "restoring after a failure"
                       : jm->nended || jm->nfinished         ? "ending its input"
                                                             : NULL;
    if (!busy && ((uint64_t)jm->attempt + 2) * ck_graph_stride(jm->g) + CK_EP_TASK0 >= CK_EP_CLIENT)
        busy = "out of endpoints for another attempt";
    if (busy) {
        rs->outcome = CK_RESCALE_REFUSED;
        snprintf(rs->why, sizeof(rs->why), "the job is %s", busy);
        ck_logf(jm->plat, CK_LOG_WARN, "rescale %u refused: %s", number, rs->why);
        return;
    }
    jm->rescaling = jm->nrescales;
    if (via == CK_RESCALE_VIA_SAVEPOINT) {
        uint64_t id = ck_cc_trigger_savepoint(&jm->cc, 1);
        if (!id) {
            rescale_end(jm, CK_RESCALE_REFUSED, "the job is winding down");
            return;
        }
        jm->stop_id = id;
        jm->stop_resume = 0;
        rs->savepoint = id;
        ck_logf(jm->plat, CK_LOG_INFO, "rescale %u: stop-with-savepoint %llu triggered", number,
                (unsigned long long)id);
        return;
    }
    ck_time delay = ck_cfg(jm->cfg, CK_CFG_RESCALE_MAX_DELAY);
    if (delay == 0)
        delay = ck_cfg(jm->cfg, CK_CFG_CP_INTERVAL) *
                (ck_cfg(jm->cfg, CK_CFG_RESCALE_MAX_FAILURES) + 1);
    rs->deadline = now + delay;
    ck_logf(jm->plat, CK_LOG_INFO, "rescale %u: waiting for the next completed checkpoint",
            number);
    check_rescale_trigger(jm, now);
}

/* Once every subtask has ended its input or finished, the final
 * checkpoint is triggered at once (FLINK-28386, Flink 1.18+) rather than at
 * the next interval, and again if it failed (failures count as for any
 * checkpoint): the subtasks waiting for it finish when it completes. */
static void maybe_final_checkpoint(ck_jm *jm)
{
    if (jm->state != CK_JOB_RUNNING || jm->nended + jm->nfinished < jm->g->nsubtasks ||
        jm->nended == 0)
        return;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
        if (!jm->ended[i] && !jm->done[i])
            return;
    if (!ck_cc_needs_final(&jm->cc))
        return; /* a checkpoint pending or just completed finishes them */
    if (jm->cc.failed)
        return; /* failing over instead */
    ck_cc_trigger_final(&jm->cc);
}

static void check_checkpoints(ck_jm *jm)
{
    if (jm->stop_id) {
        const ck_cp_record *sp = ck_cc_find(&jm->cc, jm->stop_id);
        ck_rescale *rs = rescale_now(jm);
        if (rs && sp && rs->savepoint == sp->id && sp->status == CK_CP_COMPLETED &&
            rs->snapshot == CK_TIME_NEVER)
            rs->snapshot = sp->complete;
        if (sp && sp->status != CK_CP_PENDING && sp->status != CK_CP_COMPLETED) {
            jm->stop_id = 0;
            if (rs && rs->savepoint == sp->id) {
                char why[200];
                snprintf(why, sizeof(why), "stop-with-savepoint %llu failed (%.120s)",
                         (unsigned long long)sp->id, sp->reason);
                rescale_end(jm, CK_RESCALE_FAILED, why);
            }
            if (sp->task_declined && jm->state == CK_JOB_RUNNING) {
                /* It failed on a task manager: the sources may have stopped
                 * at its barrier, so the job fails over, as Flink's
                 * StopWithSavepointTerminationHandler does. */
                char cause[200];
                snprintf(cause, sizeof(cause),
                         "stop-with-savepoint %llu failed on a task manager (%s)",
                         (unsigned long long)sp->id, sp->reason);
                failover(jm, cause, -1, NULL);
            } else {
                ck_logf(jm->plat, CK_LOG_WARN,
                        "stop-with-savepoint %llu failed (%s): the job goes on",
                        (unsigned long long)sp->id, sp->reason);
            }
        }
    }
    if (jm->cc.failed && jm->state == CK_JOB_RUNNING) {
        jm->cc.failed = 0;
        jm->cc.consecutive_failures = 0;
        failover(jm, jm->cc.failure, -1, NULL);
    }
    check_rescale_trigger(jm, ck_now(jm->plat));
    maybe_final_checkpoint(jm);
}

/* A task manager is gone: if it ran part of the job, fail over. */
static void tm_lost(ck_jm *jm, int h, const char *why)
{
    if (h < 0 || h >= jm->ntm || !tm_alive(jm, h))
        return;
    jm->tm_seen[h] = jm->tm_refused[h] = CK_TIME_NEVER;
    jm->tm_newer[h] = 0; /* the next heartbeat is the new process's */
    if (jm->state != CK_JOB_RUNNING)
        return;
    char cause[160];
    snprintf(cause, sizeof(cause), "task manager tm%d: %s", h, why);
    tm_failed(jm, h, UINT32_MAX, cause);
}

/* ---- metrics ------------------------------------------------------------------------ */

/* a + b, held at the int64 limits: the terms come from peers' messages. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static void add_stats(ck_task_stats *sum, const ck_task_stats *d)
{
    sum->host = d->host;
    sum->records_in += d->records_in;
    sum->records_out += d->records_out;
    sum->bytes_in += d->bytes_in;
    sum->bytes_out += d->bytes_out;
    sum->buffers_in += d->buffers_in;
    sum->buffers_out += d->buffers_out;
    sum->late_dropped += d->late_dropped;
    sum->busy_ns = sat_add(sum->busy_ns, d->busy_ns);
    sum->backpressured_ns = sat_add(sum->backpressured_ns, d->backpressured_ns);
    sum->idle_ns = sat_add(sum->idle_ns, d->idle_ns);
    if (d->start_ns < sum->start_ns)
        sum->start_ns = d->start_ns;
    if (d->end_ns > sum->end_ns)
        sum->end_ns = d->end_ns;
    sum->lag_records = d->lag_records;
    sum->lag_ns = d->lag_ns;
}

/* A recovery progresses: first output (of a subtask it restarted), then
 * the sources catching up. */
static void track_recovery(ck_jm *jm, uint32_t g, const ck_task_stats *d, ck_time now)
{
    ck_rescale *rs = jm->rescale_tracked ? &jm->rescales[jm->rescale_tracked - 1] : NULL;
    if (rs && rs->attempt == jm->attempt) {
        int all;
        int64_t lag = source_lag(jm, &all);
        if (d->first_out_ns >= 0 && d->first_out_ns < rs->first_output)
            rs->first_output = d->first_out_ns;
        if (rs->restored != CK_TIME_NEVER && rs->caught_up == CK_TIME_NEVER && all &&
            lag <= CK_MAX(rs->lag_before, 10 * CK_NS_PER_MS))
            rs->caught_up = now;
    }
    ck_recovery *r = open_recovery(jm);
    if (!r || r->attempt != jm->attempt || r->restarted == CK_TIME_NEVER)
        return;
    if (r->subtasks[g] && d->first_out_ns >= 0 && d->first_out_ns < r->first_output)
        r->first_output = d->first_out_ns;
    /* Caught up: the sources' lag back under its level before the failure
     * (with a floor of 10 ms, the resolution of a loaded source). */
    int all;
    int64_t lag = source_lag(jm, &all);
    if (r->restored != CK_TIME_NEVER && r->caught_up == CK_TIME_NEVER && all &&
        lag <= CK_MAX(r->lag_before, 10 * CK_NS_PER_MS))
        r->caught_up = now;
}

/* The last report of subtask g of a cancelled attempt of generation og,
 * an earlier one: it adds to the job's and its vertex's counts, and to
 * the subtask of the same vertex and index if the job still has it, else
 * to those of the subtasks it no longer has. */
static int on_old_metrics(ck_jm *jm, const ck_graph *og, uint32_t g, const uint8_t *body,
                          size_t len)
{
    ck_metrics d;
    int rc = ck_metrics_decode(&d, body, len);
    if (rc)
        return rc;
    rc = ck_metrics_merge(&jm->job, &d);
    int v, sub;
    ck_graph_locate(og, g, &v, &sub);
    if (!rc)
        rc = ck_metrics_merge_counts(&jm->vertices[v], &d);
    ck_task_stats *sum = sub < jm->g->v[v].parallelism
                             ? &jm->tasks[jm->g->v[v].base + (uint32_t)sub].task
                             : &jm->retired;
    ck_task_stats keep = *sum;
    add_stats(sum, &d.task);
    sum->host = keep.host;
    sum->lag_records = keep.lag_records;
    sum->lag_ns = keep.lag_ns;
    ck_metrics_free(&d);
    return rc;
}

/* A report of subtask g of the current attempt, or (current 0) the last
 * one of a cancelled attempt's: that one only adds to the counts. */
static int on_metrics(ck_jm *jm, uint32_t g, const uint8_t *body, size_t len, int finished,
                      int current)
{
    ck_metrics d;
    int rc = ck_metrics_decode(&d, body, len);
    if (rc)
        return rc;
    rc = ck_metrics_merge(&jm->job, &d);
    ck_task_stats *sum = &jm->tasks[g].task;
    ck_task_stats keep = *sum;
    add_stats(sum, &d.task);
    if (!current) {
        sum->host = keep.host;
        sum->lag_records = keep.lag_records;
        sum->lag_ns = keep.lag_ns;
    }
    /* The subtask's vertex is the graph's, not what the message claims. */
    int v, sub;
    ck_graph_locate(jm->g, g, &v, &sub);
    if (!rc)
        rc = ck_metrics_merge_counts(&jm->vertices[v], &d);
    if (!rc)
        rc = ck_metrics_merge_gauges(&jm->tasks[g], &d);
    if (!current) {
        ck_metrics_free(&d);
        return rc;
    }
    if (is_source(jm, g)) {
        jm->lag_ns[g] = finished ? 0 : CK_MAX(d.task.lag_ns, 0);
        jm->lag_recent[(size_t)g * CK_JM_LAG_REPORTS + jm->lag_count[g] % CK_JM_LAG_REPORTS] =
            jm->lag_ns[g];
        jm->lag_count[g]++;
    }
    track_recovery(jm, g, &d.task, ck_now(jm->plat));
    ck_metrics_free(&d);
    return rc;
}

/* ---- messages ---------------------------------------------------------------------- */

/* A subtask runs: once every subtask the last deployment restarted does,
 * the recovery has restored, and checkpoints may start again. */
static void check_restored(ck_jm *jm, ck_time now)
{
    ck_rescale *rs = rescale_now(jm);
    if (rs && rs->deployed != CK_TIME_NEVER && rs->attempt == jm->attempt &&
        jm->nrestarting == 0) {
        for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
            if (!jm->running[i])
                return;
        rs->restored = now;
        rescale_end(jm, CK_RESCALE_DONE, NULL);
        ck_cc_release(&jm->cc, now);
        ck_logf(jm->plat, CK_LOG_INFO, "rescale %u restored", rs->number);
        return;
    }
    ck_recovery *r = open_recovery(jm);
    if (!r || r->attempt != jm->attempt || r->restarted == CK_TIME_NEVER ||
        r->restored != CK_TIME_NEVER || jm->nrestarting > 0)
        return;
    for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
        if (r->subtasks[i] && !jm->running[i])
            return;
    r->restored = now;
    ck_cc_release(&jm->cc, now);
}

/* Subtask g failed. */
static void subtask_failed(ck_jm *jm, uint32_t g, const char *cause, int host)
{
    uint8_t *mask = calloc(jm->g->nsubtasks, 1);
    if (!mask) {
        job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory handling a failure");
        return;
    }
    mask[g] = 1;
    failover(jm, cause, host, mask);
    free(mask);
}

static void on_task_failed(ck_jm *jm, uint32_t g, const uint8_t *body, size_t len)
{
    char why[320] = "a task failed", key[CK_HANDLE_KEY_MAX + 1] = "";
    uint32_t code = CK_FAIL_TASK;
    uint64_t cp = 0;
    size_t kl = len >= CK_FAIL_BODY_MIN ? ck_get_u16(body + 12) : 0;
    if (len >= CK_FAIL_BODY_MIN && kl <= CK_HANDLE_KEY_MAX && CK_FAIL_BODY_MIN + kl <= len) {
        code = ck_get_u32(body);
        cp = ck_get_u64(body + 4);
        memcpy(key, body + CK_FAIL_BODY_MIN, kl);
        key[kl] = 0;
        size_t n = CK_MIN(len - CK_FAIL_BODY_MIN - kl, sizeof(why) - 1);
        memcpy(why, body + CK_FAIL_BODY_MIN + kl, n);
        why[n] = 0;
    }
    if (ck_fail_is_fallback(code) && cp && !unrestorable(jm, cp)) {
        ck_fallback *v = realloc(jm->fallbacks, (jm->nfallbacks + 1) * sizeof(*v));
        if (!v) {
            job_fail(jm, CK_JOBFAIL_OUT_OF_MEMORY, "out of memory handling a failed restore");
            return;
        }
        jm->fallbacks = v;
        ck_fallback *f = &jm->fallbacks[jm->nfallbacks++];
        memset(f, 0, sizeof(*f));
        f->at = ck_now(jm->plat);
        f->from = cp;
        f->subtask = g;
        f->gen = jm->g->generation;
        f->code = code;
        snprintf(f->key, sizeof(f->key), "%s", key);
        snprintf(f->why, sizeof(f->why), "%s", why);
        f->to = latest_checkpoint(jm);
        if (f->to) {
            ck_logf(jm->plat, CK_LOG_WARN,
                    "checkpoint %llu cannot be restored (%s: %s): falling back to checkpoint "
                    "%llu; output it committed will be produced again",
                    (unsigned long long)cp, ck_fail_name(code), why, (unsigned long long)f->to);
        }
        else {
            char msg[400];
            snprintf(msg, sizeof(msg), "no checkpoint left to restore: %s", why);
            job_fail(jm, CK_JOBFAIL_NO_CHECKPOINT, msg);
            return;
        }
    }
    subtask_failed(jm, g, why, code == CK_FAIL_PEER && cp < (uint64_t)jm->ntm ? (int)cp : -1);
}

static int jm_on_message(void *self, uint8_t *msg, size_t len)
{
    ck_jm *jm = self;
    ck_wire_hdr h;
    int rc = ck_wire_decode(msg, len, &h);
    if (rc) {
        free(msg);
        ck_logf(jm->plat, CK_LOG_WARN, "job manager: dropped a malformed message");
        return CK_OK;
    }
    const uint8_t *body = msg + CK_WIRE_HDR;
    ck_time now = ck_now(jm->plat);
    if (h.type == CK_MSG_HEARTBEAT) {
        int host = (int)h.arg;
        if (host >= 0 && host < jm->ntm && h.src == CK_EP_TM0 + (uint32_t)host) {
            /* A task manager process that registers while its host's
             * earlier one still runs part of the job is another instance
             * (in Flink, a new ResourceID): its heartbeats say nothing of
             * the earlier one, which is lost by heartbeat.timeout or by
             * failed heartbeat RPCs. */
            if (h.len >= 1 && body[0] == CK_HB_REGISTER && tm_alive(jm, host) &&
                jm->state == CK_JOB_RUNNING && tm_subtasks(jm, host, UINT32_MAX, NULL))
                jm->tm_newer[host] = 1;
            if (!jm->tm_newer[host]) {
                jm->tm_seen[host] = now;
                jm->tm_refused[host] = CK_TIME_NEVER; /* a heartbeat got through */
            }
            /* It cancelled what it ran of every attempt before the epoch
             * (it heard nothing from us for heartbeat.timeout, though we
             * still heard it). */
            if (h.epoch > 0 && jm->state == CK_JOB_RUNNING &&
                tm_subtasks(jm, host, h.epoch, NULL)) {
                char cause[160];
                snprintf(cause, sizeof(cause),
                         "task manager tm%d cancelled its subtasks: it heard nothing "
                         "from the job manager for heartbeat.timeout",
                         host);
                tm_failed(jm, host, h.epoch, cause);
            }
            /* The answer: the task manager watches the job manager too. */
            size_t n;
            uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, CK_EP_JM, h.src, 0, NULL, 0, &n);
            if (m) {
                ck_put_u32(m + 16, (uint32_t)host);
                /* one of a periodic exchange: the next answers (platform.h) */
                CK_IGNORE(jm->plat->ops->send(jm->plat, h.src, m, n));
            }
        }
        free(msg);
        maybe_deploy(jm, now);
        return CK_OK;
    }
    if (h.type == CK_MSG_SAVEPOINT && h.src == CK_EP_CLIENT) {
        on_savepoint_request(jm, h.arg, body, h.len);
        free(msg);
        return CK_OK;
    }
    if (h.type == CK_MSG_RESCALE && h.src == CK_EP_CLIENT) {
        on_rescale_request(jm, h.arg, body, h.len, now);
        free(msg);
        return CK_OK;
    }
    /* Everything else comes from a subtask of some attempt: the one it
     * runs, or one cancelled, whose last report counts what it read. */
    const ck_graph *hg = graph_of(jm, h.epoch);
    if (hg != jm->g) {
        /* of an earlier generation's attempt: its counts alone */
        if (h.type == CK_MSG_METRICS && h.src < hg->nsubtasks &&
            on_old_metrics(jm, hg, h.src, body, h.len))
            ck_logf(jm->plat, CK_LOG_WARN, "job manager: bad metrics from subtask %u", h.src);
        ck_cp_ack ack;
        if (h.type == CK_MSG_CP_ACK && ck_cp_ack_decode(body, h.len, &ack) == CK_OK) {
            ck_cc_on_stale_ack(&jm->cc, &ack); /* its state is garbage if its checkpoint failed */
            ck_cp_ack_free(&ack);
        }
        free(msg);
        return CK_OK;
    }
    if (h.src >= jm->g->nsubtasks) {
        free(msg);
        return CK_OK;
    }
    uint32_t g = h.src;
    int current = jm->state == CK_JOB_RUNNING && !jm->restarting[g] && h.epoch == jm->sub_attempt[g];
    if (!current && h.type == CK_MSG_METRICS && h.epoch <= jm->sub_attempt[g]) {
        if (on_metrics(jm, g, body, h.len, 0, 0))
            ck_logf(jm->plat, CK_LOG_WARN, "job manager: bad metrics from subtask %u", g);
        free(msg);
        return CK_OK;
    }
    if (!current && h.type == CK_MSG_CP_ACK && h.epoch <= jm->sub_attempt[g]) {
        /* its state is garbage if its checkpoint failed at the cancel */
        ck_cp_ack ack;
        if (ck_cp_ack_decode(body, h.len, &ack) == CK_OK) {
            ck_cc_on_stale_ack(&jm->cc, &ack);
            ck_cp_ack_free(&ack);
        }
    }
    if (!current) {
        free(msg);
        return CK_OK; /* from another attempt, or too late */
    }
    switch (h.type) {
    case CK_MSG_TASK_RUNNING:
        if (h.len != CK_RUNNING_BODY) {
            subtask_failed(jm, g, "a subtask reported running with a malformed body", -1);
            break;
        }
        if (!jm->running[g]) {
            jm->running[g] = 1;
            ck_recovery *r = open_recovery(jm);
            if (r && r->attempt == jm->attempt && r->subtasks[g] &&
                r->restored == CK_TIME_NEVER) {
                r->restore_download = CK_MAX(r->restore_download, (int64_t)ck_get_u64(body));
                r->restore_load = CK_MAX(r->restore_load, (int64_t)ck_get_u64(body + 8));
                r->restore_channels =
                    CK_MAX(r->restore_channels, (int64_t)ck_get_u64(body + 24));
                r->restore_bytes += ck_get_u64(body + 16);
                r->restore_records += ck_get_u64(body + 32 + CK_REBUILD_WIRE);
            }
            ck_rescale *rs = rescale_now(jm);
            if (rs && rs->attempt == jm->attempt && rs->deployed != CK_TIME_NEVER) {
                rs->restore_download = CK_MAX(rs->restore_download, (int64_t)ck_get_u64(body));
                rs->restore_load = CK_MAX(rs->restore_load, (int64_t)ck_get_u64(body + 8));
                rs->restore_channels =
                    CK_MAX(rs->restore_channels, (int64_t)ck_get_u64(body + 24));
                rs->restore_bytes += ck_get_u64(body + 16);
                rs->restore_records += ck_get_u64(body + 32 + CK_REBUILD_WIRE);
                ck_kstate_rebuild_add_wire(&rs->rebuild, rs->rebuild_paths, body + 32);
            }
            check_restored(jm, now);
        }
        break;
    case CK_MSG_MATERIALIZED: {
        if (h.len != CK_MATERIALIZED_BODY ||
            ck_reserve(&jm->mats, &jm->capmats, (jm->nmats + 1) * sizeof(*jm->mats)))
            break; /* a statistic: nothing depends on it */
        ck_materialization *m = &jm->mats[jm->nmats++];
        m->subtask = g;
        m->gen = jm->g->generation;
        m->op = ck_get_u32(body);
        m->seq = ck_get_u64(body + 4);
        m->started = (ck_time)ck_get_u64(body + 12);
        m->duration = (ck_time)ck_get_u64(body + 20);
        m->bytes = ck_get_u64(body + 28);
        m->state_bytes = ck_get_u64(body + 36);
        break;
    }
    case CK_MSG_METRICS:
        if (on_metrics(jm, g, body, h.len, 0, 1))
            ck_logf(jm->plat, CK_LOG_WARN, "job manager: bad metrics from subtask %u", g);
        break;
    case CK_MSG_TASK_ENDED:
        if (jm->ended[g] || jm->done[g] || on_metrics(jm, g, body, h.len, 0, 1)) {
            subtask_failed(jm, g, "a subtask reported its end twice, or bad metrics", -1);
            break;
        }
        jm->ended[g] = 1;
        jm->nended++;
        ck_cc_task_ended(&jm->cc, g);
        break;
    case CK_MSG_TASK_FINISHED:
        if (jm->done[g] || on_metrics(jm, g, body, h.len, 1, 1)) {
            subtask_failed(jm, g, "a subtask reported its end twice, or bad metrics", -1);
            break;
        }
        jm->done[g] = 1;
        jm->nfinished++;
        ck_cc_task_finished(&jm->cc, g);
        if (jm->nfinished == jm->g->nsubtasks)
            all_finished(jm, now);
        break;
    case CK_MSG_TASK_FAILED:
        on_task_failed(jm, g, body, h.len);
        break;
    case CK_MSG_CP_ACK: {
        ck_cp_ack ack;
        if (ck_cp_ack_decode(body, h.len, &ack) == CK_OK) {
            ck_cc_on_ack(&jm->cc, g, &ack);
            ck_cp_ack_free(&ack);
        }
        break;
    }
    case CK_MSG_CP_DECLINE:
        if (h.len >= 12) {
            char why[128];
            int n = (int)CK_MIN(h.len - 12, sizeof(why) - 1);
            memcpy(why, body + 12, (size_t)n);
            why[n] = 0;
            ck_cc_on_decline(&jm->cc, g, ck_get_u64(body), ck_get_u32(body + 8), why);
        }
        break;
    default:
        ck_logf(jm->plat, CK_LOG_WARN, "job manager: unexpected %s from subtask %u",
                ck_wire_type_name(h.type), g);
    }
    free(msg);
    check_checkpoints(jm);
    return CK_OK;
}

static int jm_on_complete(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    ck_jm *jm = self;
    CK_UNUSED(len);
    free(data);
    ck_cc_on_stored(&jm->cc, token, status);
    check_checkpoints(jm);
    return CK_OK;
}

/* The connection to a task manager broke. Reset by a host whose process
 * died: lost at once. Refused by a host that came back after it was lost
 * (CK_PEER_REFUSED): from now on the job manager's heartbeat RPCs to the
 * process it knew fail, one per heartbeat.interval, and it is lost once
 * heartbeat.rpc-failure-threshold of them failed in a row (as Flink's
 * HeartbeatMonitorImpl counts RecipientUnreachableException). A host that
 * is merely gone refuses nothing: only heartbeat.timeout notices it. */
static int jm_on_peer_lost(void *self, int host)
{
    ck_jm *jm = self;
    int refused = (host & CK_PEER_REFUSED) != 0;
    host &= ~CK_PEER_REFUSED;
    if (!refused) {
        /* Its process died and its host reset the connection. */
        tm_lost(jm, host, "the connection broke");
        return CK_OK;
    }
    int64_t threshold = ck_cfg(jm->cfg, CK_CFG_HB_RPC_FAILURES);
    if (host < 0 || host >= jm->ntm || !tm_alive(jm, host) || threshold < 0)
        return CK_OK;
    if (jm->tm_refused[host] == CK_TIME_NEVER)
        jm->tm_refused[host] = ck_now(jm->plat);
    if (threshold <= 1)
        tm_lost(jm, host, "its connection was refused: 1 heartbeat RPC failed");
    return CK_OK;
}

/* When task manager h is lost for failed heartbeat RPCs, or CK_TIME_NEVER. */
static ck_time refused_deadline(const ck_jm *jm, int h)
{
    int64_t threshold = ck_cfg(jm->cfg, CK_CFG_HB_RPC_FAILURES);
    if (threshold < 1 || !tm_alive(jm, h) || jm->tm_refused[h] == CK_TIME_NEVER)
        return CK_TIME_NEVER;
    return jm->tm_refused[h] + (threshold - 1) * ck_cfg(jm->cfg, CK_CFG_HB_INTERVAL);
}

static ck_time jm_deadline(void *self)
{
    ck_jm *jm = self;
    if (jm->state == CK_JOB_FINISHED || jm->state == CK_JOB_FAILED)
        return CK_TIME_NEVER;
    ck_time d = CK_TIME_NEVER, timeout = ck_cfg(jm->cfg, CK_CFG_HB_TIMEOUT);
    for (int h = 0; h < jm->ntm; h++)
    {
        if (tm_alive(jm, h) && jm->tm_seen[h] + timeout + 1 < d)
            d = jm->tm_seen[h] + timeout + 1; /* lost once past the timeout */
        d = CK_MIN(d, refused_deadline(jm, h));
    }
    const ck_rescale *rs = rescale_now(jm);
    if (jm->state == CK_JOB_RUNNING && rs && rs->stopped == CK_TIME_NEVER)
        d = CK_MIN(d, rs->deadline); /* a rescale via checkpoint stops waiting */
    if (jm->state == CK_JOB_RUNNING && jm->nrestarting == 0)
        return CK_MIN(d, ck_cc_deadline(&jm->cc));
    if (jm->state == CK_JOB_RUNNING)
        d = CK_MIN(d, ck_cc_deadline(&jm->cc)); /* regions restarting: and as below */
    if (jm->restart_due)
        return CK_MIN(d, jm->restart_at);
    /* Waiting for task managers: a heartbeat wakes us, or the start-up
     * grace, or the timeout. */
    if (jm->state == CK_JOB_WAITING && ck_now(jm->plat) < jm->waiting_since + CK_STARTUP_GRACE)
        d = CK_MIN(d, jm->waiting_since + CK_STARTUP_GRACE);
    return CK_MIN(d, jm->waiting_since + CK_SLOT_REQUEST_TIMEOUT + 1);
}

static int jm_on_deadline(void *self)
{
    ck_jm *jm = self;
    ck_time now = ck_now(jm->plat), timeout = ck_cfg(jm->cfg, CK_CFG_HB_TIMEOUT);
    for (int h = 0; h < jm->ntm; h++)
    {
        if (tm_alive(jm, h) && now - jm->tm_seen[h] > timeout)
            tm_lost(jm, h, "heartbeat timed out");
        if (now >= refused_deadline(jm, h)) {
            char why[120];
            snprintf(why, sizeof(why),
                     "its connection was refused: %lld heartbeat RPCs failed in a row",
                     (long long)ck_cfg(jm->cfg, CK_CFG_HB_RPC_FAILURES));
            tm_lost(jm, h, why);
        }
    }
    if (jm->state == CK_JOB_RUNNING) {
        ck_cc_on_deadline(&jm->cc);
        check_checkpoints(jm);
    }
    maybe_deploy(jm, now);
    return CK_OK;
}

static int jm_work(void *self)
{
    CK_UNUSED(self);
    return 0;
}

static int jm_finished(void *self)
{
    const ck_jm *jm = self;
    return jm->state == CK_JOB_FINISHED || jm->state == CK_JOB_FAILED;
}

static int jm_check(const void *self, ck_inv *v)
{
    return ck_jm_check(self, v);
}

static const ck_node_ops jm_node_ops = {
    .on_message = jm_on_message,
    .on_complete = jm_on_complete,
    .on_peer_lost = jm_on_peer_lost,
    .deadline = jm_deadline,
    .on_deadline = jm_on_deadline,
    .work = jm_work,
    .finished = jm_finished,
    .check = jm_check,
};

ck_node ck_jm_node(ck_jm *jm)
{
    ck_node n = {&jm_node_ops, jm};
    return n;
}

/* ---- invariants (jobmanager.h) ------------------------------------------------------- */

#define CK_INV_MODULE "jobmanager"

/* a <= b where both are known (CK_TIME_NEVER: not yet). */
static int before(ck_time a, ck_time b)
{
    return a == CK_TIME_NEVER || b == CK_TIME_NEVER || a <= b;
}

static int check_recovery(const ck_recovery *r, size_t i, ck_inv *v)
{
    CK_INV(v, 3,
           before(r->failed, r->detected) && before(r->detected, r->restarted) &&
               before(r->restarted, r->restored) && before(r->restored, r->caught_up) &&
               (r->restored == CK_TIME_NEVER || r->restarted != CK_TIME_NEVER),
           "recovery %zu: failed %lld, detected %lld, restarted %lld, restored %lld, caught up "
           "%lld ns",
           i, (long long)r->failed, (long long)r->detected, (long long)r->restarted,
           (long long)r->restored, (long long)r->caught_up);
    return 0;
}

static int check_rescale(const ck_jm *jm, size_t i, ck_inv *v)
{
    const ck_rescale *r = &jm->rescales[i];
    CK_INV(v, 8,
           before(r->trigger, r->snapshot) && before(r->snapshot, r->stopped) &&
               before(r->trigger, r->stopped) && before(r->stopped, r->deployed) &&
               before(r->deployed, r->restored) && before(r->restored, r->caught_up) &&
               (r->deployed == CK_TIME_NEVER || r->stopped != CK_TIME_NEVER) &&
               (r->restored == CK_TIME_NEVER || r->deployed != CK_TIME_NEVER),
           "rescale %zu: trigger %lld, snapshot %lld, stopped %lld, deployed %lld, restored "
           "%lld, caught up %lld ns",
           i, (long long)r->trigger, (long long)r->snapshot, (long long)r->stopped,
           (long long)r->deployed, (long long)r->restored, (long long)r->caught_up);
    CK_INV(v, 8, (r->outcome == CK_RESCALE_UNDER_WAY) == (jm->rescaling == i + 1),
           "rescale %zu is %s, and the one under way is %zu", i,
           ck_rescale_outcome_name(r->outcome), jm->rescaling);
    CK_INV(v, 8, r->outcome != CK_RESCALE_DONE || r->restored != CK_TIME_NEVER,
           "rescale %zu done, never restored", i);
    return 0;
}

static int check_jm(const ck_jm *jm, ck_inv *v)
{
    CK_INV(v, 9, jm->neras >= 1 && jm->eras[jm->neras - 1].g == jm->g,
           "the job runs generation %d, its last era is of %d", jm->g->generation,
           jm->neras ? jm->eras[jm->neras - 1].g->generation : -1);
    for (int k = 1; k < jm->neras; k++)
        CK_INV(v, 9,
               jm->eras[k].first_attempt > jm->eras[k - 1].first_attempt &&
                   jm->eras[k].first_attempt <= jm->attempt + 1,
               "era %d (generation %d) from attempt %u, the one before from %u, newest %u", k,
               jm->eras[k].g->generation, jm->eras[k].first_attempt,
               jm->eras[k - 1].first_attempt, jm->attempt);
    for (size_t i = 0; i < jm->nrescales; i++) {
        int rc = check_rescale(jm, i, v);
        if (rc)
            return rc;
    }
    uint32_t n = jm->g->nsubtasks, done = 0, ended = 0, restarting = 0;
    for (size_t i = 0; i < jm->nrecoveries; i++) {
        int rc = check_recovery(&jm->recoveries[i], i, v);
        if (rc)
            return rc;
    }
    for (uint32_t s = 0; s < n; s++) {
        CK_INV(v, 4, jm->sub_attempt[s] <= jm->attempt && jm->cc.attempts[s] == jm->sub_attempt[s],
               "subtask %u runs attempt %u (newest %u), the coordinator addresses attempt %u", s,
               jm->sub_attempt[s], jm->attempt, jm->cc.attempts[s]);
        CK_INV(v, 6, !jm->cc.finished[s] == !jm->done[s] && !jm->cc.ended[s] == !jm->ended[s],
               "subtask %u: %s and %s here, %s and %s to the coordinator", s,
               jm->ended[s] ? "ended" : "not ended", jm->done[s] ? "finished" : "not finished",
               jm->cc.ended[s] ? "ended" : "not ended",
               jm->cc.finished[s] ? "finished" : "not finished");
        done += jm->done[s] != 0;
        ended += jm->ended[s] != 0;
        restarting += jm->restarting[s] != 0;
    }
    CK_INV(v, 5, done == jm->nfinished && ended == jm->nended && restarting == jm->nrestarting,
           "%u finished, %u ended, %u restarting; counted %u, %u, %u", done, ended, restarting,
           jm->nfinished, jm->nended, jm->nrestarting);
    CK_INV(v, 5,
           !restarting || jm->state == CK_JOB_RUNNING || jm->state == CK_JOB_FAILED,
           "%u subtasks restarting while %s", restarting, ck_job_state_name(jm->state));
    CK_INV(v, 5, jm->state != CK_JOB_FINISHED || done == n, "FINISHED with %u of %u finished",
           done, n);
    ck_inv cv;
    if (ck_cc_check(&jm->cc, &cv)) {
        if (v)
            *v = cv;
        return CK_EINVARIANT;
    }
    return 0;
}

int ck_jm_check(const ck_jm *jm, ck_inv *v)
{
    int rc = check_jm(jm, v);
    if (rc)
        ck_inv_where(v, "job manager, %s, attempt %u", ck_job_state_name(jm->state),
                     jm->attempt);
    return rc;
}
