#include "coordinator.h"

#include <stdio.h>
#include <stdlib.h>

#include "bytes.h"
#include "crc32c.h"
#include "error.h"
#include "invariant.h"
#include "keygroup.h"
#include "snapshot.h"
#include "storekey.h"

#define METADATA_MAGIC 0x35504b43u /* "CKP5" */
#define METADATA_MAGIC_V4 0x34504b43u /* "CKP4": read, no longer written */
#define METADATA_MAGIC_V3 0x33504b43u /* "CKP3": read, no longer written */

/* The store token of a finished subtask's state file for checkpoint id
 * (the metadata's token is the id itself). */
#define MARKER_TOKEN (UINT64_C(1) << 62)

const char *ck_cp_status_name(ck_cp_status s)
{
    switch (s) {
    case CK_CP_PENDING:
        return "pending";
    case CK_CP_COMPLETED:
        return "completed";
    case CK_CP_EXPIRED:
        return "expired";
    case CK_CP_DECLINED:
        return "declined";
    case CK_CP_ABORTED:
        return "aborted";
    }
    return "?";
}

/* The directory of checkpoint r in the store. */
static int cp_dir(const ck_cc *cc, const ck_cp_record *r, char *buf, size_t len)
{
    return ck_sk_dir(buf, len, cc->job_id, r->id, !!(r->flags & CK_CP_FLAG_SAVEPOINT));
}

static int metadata_key(const ck_cc *cc, const ck_cp_record *r, char *buf, size_t len)
{
    char dir[200];
    int rc = cp_dir(cc, r, dir, sizeof(dir));
    return rc ? rc : ck_sk_metadata(buf, len, dir);
}

/* Deletes key from the store. A delete that fails leaves the file: it
 * is logged and the job goes on, as Flink logs a failed discard of a
 * subsumed checkpoint (an orphan in the store). One already gone is no
 * failure. */
static void store_delete(ck_cc *cc, const char *key)
{
    int rc = cc->plat->ops->store_delete(cc->plat, key);
    if (rc && rc != CK_ENOTFOUND)
        ck_logf(cc->plat, CK_LOG_WARN, "could not delete %s from the store (%s): left there",
                key, ck_strerror(rc));
}

/* The stream of the coordinator's draws (rng.h). */
#define CC_STREAM UINT64_C(0x636f6f7264)

int ck_cc_init(ck_cc *cc, ck_platform *plat, const ck_graph *g, const ck_config *cfg,
               const char *job_id, uint64_t first_id, uint64_t seed)
{
    char dir[CK_HANDLE_KEY_MAX + 1];
    memset(cc, 0, sizeof(*cc));
    if (ck_sk_job_dir(dir, sizeof(dir), job_id))
        return CK_EINVAL; /* every key of the job's files starts with it */
    cc->plat = plat;
    cc->g = g;
    snprintf(cc->job_id, sizeof(cc->job_id), "%s", job_id);
    cc->interval = ck_cfg(cfg, CK_CFG_CP_INTERVAL);
    cc->enabled = cc->interval > 0;
    cc->timeout = ck_cfg(cfg, CK_CFG_CP_TIMEOUT);
    cc->min_pause = ck_cfg(cfg, CK_CFG_CP_MIN_PAUSE);
    cc->max_concurrent = (int)ck_cfg(cfg, CK_CFG_CP_MAX_CONCURRENT);
    cc->tolerable = (int)ck_cfg(cfg, CK_CFG_CP_TOLERABLE);
    cc->retained = (int)ck_cfg(cfg, CK_CFG_CP_RETAINED);
    cc->inline_below = (uint64_t)ck_cfg(cfg, CK_CFG_CP_MEMORY_THRESHOLD);
    cc->first_id = cc->next_id = first_id ? first_id : 1;
    cc->next_trigger = cc->enabled ? cc->interval : CK_TIME_NEVER;
    cc->last_complete = CK_TIME_NEVER;
    cc->after_finish = (int)ck_cfg(cfg, CK_CFG_CP_AFTER_FINISH);
    /* Unaligned checkpoints only in exactly-once mode (Flink turns them off
     * in at-least-once, where barriers block nothing anyway); savepoints
     * stay aligned. */
    if (ck_cfg(cfg, CK_CFG_CP_UNALIGNED) && ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE)
        cc->cp_flags = ck_cfg(cfg, CK_CFG_CP_ALIGNED_TIMEOUT) > 0 ? CK_CP_FLAG_TIMEOUTABLE
                                                                  : CK_CP_FLAG_UNALIGNED;
    ck_rng_init(&cc->rng, seed, CC_STREAM);
    cc->ended = calloc(g->nsubtasks, 1);
    cc->finished = calloc(g->nsubtasks, 1);
    cc->attempts = calloc(g->nsubtasks, sizeof(uint32_t));
    cc->seg_live = calloc(g->nsubtasks, 1);
    cc->seg_newest = calloc(g->nsubtasks, sizeof(uint64_t));
    if (!cc->ended || !cc->finished || !cc->attempts || !cc->seg_live || !cc->seg_newest) {
        free(cc->ended);
        free(cc->finished);
        free(cc->attempts);
        free(cc->seg_live);
        free(cc->seg_newest);
        return CK_ENOMEM;
    }
    return CK_OK;
}

/* ---- files merged across checkpoints (ck_cc.seg_live) ----------------------- */

/* Of an appendable merged file's key (storekey.h), its global subtask
 * (*g), attempt and order among its subtask's files (the checkpoint that
 * made it, then its number): 0, or -1 when the key is not one. */
static int seg_parse(const ck_cc *cc, const char *key, uint32_t *g, uint32_t *attempt,
                     uint64_t *order)
{
    ck_sk_key k;
    if (ck_sk_parse(key, &k) || k.kind != CK_SK_MERGED || !k.appendable ||
        k.vertex >= cc->g->nv || k.subtask >= cc->g->v[k.vertex].parallelism ||
        k.n >= (1u << 20) || k.id >= (UINT64_C(1) << 43))
        return -1;
    *g = cc->g->v[k.vertex].base + (uint32_t)k.subtask;
    *attempt = k.attempt;
    *order = k.id << 20 | k.n;
    return 0;
}

/* Whether no subtask will append to appendable file key again. */
static int seg_sealed(const ck_cc *cc, const char *key)
{
    uint32_t g, a;
    uint64_t order;
    if (seg_parse(cc, key, &g, &a, &order) || (order >> 20) < cc->first_id)
        return 1; /* not a subtask's, or an earlier run's: nobody appends to it */
    return !cc->seg_live[g] || a != cc->attempts[g] || order < cc->seg_newest[g];
}

static int in_limbo(const ck_cc *cc, const char *key)
{
    for (size_t i = 0; i < cc->nlimbo; i++)
        if (!strcmp(cc->limbo[i], key))
            return 1;
    return 0;
}

/* Shared file key lost its last reference: deleted, or, if appendable
 * and not sealed, kept in limbo until it is. */
static void shared_gone(ck_cc *cc, const char *key)
{
    if (!ck_store_appendable(key) || seg_sealed(cc, key)) {
        store_delete(cc, key);
        return;
    }
    if (in_limbo(cc, key))
        return;
    size_t kl = strlen(key) + 1;
    char *k = malloc(kl);
    if (k)
        memcpy(k, key, kl);
    if (cc->nlimbo == cc->limbo_cap) {
        size_t cap = cc->limbo_cap ? 2 * cc->limbo_cap : 16;
        char **l = realloc(cc->limbo, cap * sizeof(*l));
        if (l) {
            cc->limbo = l;
            cc->limbo_cap = cap;
        }
    }
    if (k && cc->nlimbo < cc->limbo_cap)
        cc->limbo[cc->nlimbo++] = k;
    else
        free(k); /* out of memory: it stays until the end's sweep */
}

/* Files in limbo that are sealed now go; with `all`, every appendable
 * file under shared/ of this run's (made by a checkpoint from first_id
 * on) that nothing refers to and that is sealed, listed in the store:
 * those of an attempt that ended that no acknowledgement named (a
 * process killed after the put, a snapshot aborted). An earlier run's
 * (a retained checkpoint's this one started from) are not its own. */
static void seg_sweep(ck_cc *cc, int all)
{
    for (size_t i = 0; i < cc->nlimbo;) {
        char *k = cc->limbo[i];
        int refd = ck_sreg_count(&cc->shared, k) > 0;
        if (!refd && !seg_sealed(cc, k)) {
            i++;
            continue;
        }
        if (!refd)
            store_delete(cc, k);
        free(k);
        cc->limbo[i] = cc->limbo[--cc->nlimbo];
    }
    char shared[200];
    ck_store_entry *e;
    size_t n;
    if (!all || ck_sk_shared_dir(shared, sizeof(shared), cc->job_id) ||
        cc->plat->ops->store_list(cc->plat, shared, &e, &n) != CK_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        uint32_t g, a;
        uint64_t order;
        if (ck_store_appendable(e[i].key) && !seg_parse(cc, e[i].key, &g, &a, &order) &&
            (order >> 20) >= cc->first_id && !ck_sreg_count(&cc->shared, e[i].key) &&
            seg_sealed(cc, e[i].key))
            store_delete(cc, e[i].key);
    }
    ck_store_entries_free(e, n);
}

/* Checkpoint r completed: its subtasks' files older than the newest
 * appendable one it refers to (of their running attempts) are sealed. */
static void seg_completed(ck_cc *cc, const ck_cp_record *r)
{
    int any = 0;
    for (uint32_t s = 0; r->tasks && s < r->g->nsubtasks; s++)
        for (uint32_t i = 0; i < r->tasks[s].handles.n; i++) {
            uint32_t g, a;
            uint64_t order;
            const char *key = r->tasks[s].handles.v[i].key;
            if (!ck_store_appendable(key) || seg_parse(cc, key, &g, &a, &order) ||
                a != cc->attempts[g] || order <= cc->seg_newest[g])
                continue;
            cc->seg_newest[g] = order;
            any = 1;
        }
    if (any && cc->nlimbo)
        seg_sweep(cc, 0);
}

static void record_free(ck_cc *cc, ck_cp_record *r)
{
    if (!r->tasks)
        return;
    for (uint32_t s = 0; s < r->g->nsubtasks; s++)
        ck_handles_free(&r->tasks[s].handles);
    free(r->tasks);
    r->tasks = NULL;
}

void ck_cc_free(ck_cc *cc)
{
    for (size_t i = 0; i < cc->nlimbo; i++)
        free(cc->limbo[i]);
    free(cc->limbo);
    free(cc->seg_live);
    free(cc->seg_newest);
    for (size_t i = 0; i < cc->ncps; i++)
        record_free(cc, &cc->cps[i]);
    free(cc->cps);
    ck_sreg_free(&cc->shared);
    free(cc->ended);
    free(cc->finished);
    free(cc->attempts);
    memset(cc, 0, sizeof(*cc));
}

static ck_cp_record *find(ck_cc *cc, uint64_t id)
{
    /* ids are dense from first_id and records are never removed */
    if (id < cc->first_id || id - cc->first_id >= cc->ncps)
        return NULL;
    return &cc->cps[id - cc->first_id];
}

const ck_cp_record *ck_cc_find(const ck_cc *cc, uint64_t id)
{
    return find((ck_cc *)cc, id);
}

const ck_handles *ck_cc_handles(const ck_cc *cc, uint64_t id, uint32_t global)
{
    static const ck_handles none;
    const ck_cp_record *r = ck_cc_find(cc, id);
    return r && r->tasks && global < r->g->nsubtasks ? &r->tasks[global].handles : &none;
}

static void send_all_tasks(ck_cc *cc, int type, uint64_t id)
{
    uint8_t body[8];
    ck_put_u64(body, id);
    for (uint32_t s = 0; s < cc->g->nsubtasks; s++) {
        size_t n;
        uint32_t ep = ck_ep_task(cc->g, cc->attempts[s], s);
        uint8_t *m = ck_wire_msg(type, CK_EP_JM, ep, cc->attempts[s], body, sizeof(body), &n);
        if (m) /* lost: the checkpoint expires or a later one commits (platform.h) */
            CK_IGNORE(cc->plat->ops->send(cc->plat, ep, m, n));
    }
}

/* A shared file the task manager still owns until a checkpoint that
 * refers to it completes: a changelog segment or materialization, which
 * the next snapshots refer to whether this one completes or not. */
static int task_owned(const ck_handle *h)
{
    return h->kind == CK_HANDLE_CHANGELOG || h->kind == CK_HANDLE_MATERIAL;
}

/* Deletes a checkpoint's own file h (not shared) from the store, if it is
 * there: an inline one is in the _metadata. */
static void delete_own(ck_cc *cc, const ck_handle *h)
{
    if (ck_handle_stored(h))
        store_delete(cc, h->key);
}

/* Deletes a checkpoint's files from the store (those the coordinator knows
 * of): its own, and the shared ones no other checkpoint refers to (a
 * changelog's only once a completed checkpoint referred to them: the
 * subtask may refer to them again, as Flink's TaskChangelogRegistry keeps
 * them until then). */
static void discard_dir(ck_cc *cc, const ck_cp_record *r);

static void discard(ck_cc *cc, ck_cp_record *r)
{
    for (uint32_t s = 0; r->tasks && s < r->g->nsubtasks; s++)
        for (uint32_t i = 0; i < r->tasks[s].handles.n; i++) {
            const ck_handle *h = &r->tasks[s].handles.v[i];
            if (!(h->flags & CK_HANDLE_SHARED))
                delete_own(cc, h);
            else if (ck_sreg_unref(&cc->shared, h->key) == 0 &&
                     (r->status == CK_CP_COMPLETED || !task_owned(h)))
                shared_gone(cc, h->key);
        }
    if (r->status == CK_CP_COMPLETED) {
        char key[256];
        if (!metadata_key(cc, r, key, sizeof(key)))
            store_delete(cc, key);
        return;
    }
    discard_dir(cc, r);
}

/* A failed checkpoint's own directory goes whole, as Flink discards a
 * pending checkpoint's exclusive location: a file that landed without an
 * acknowledgement (its subtask's process was killed after the put) is in
 * no handle the coordinator knows. */
static void discard_dir(ck_cc *cc, const ck_cp_record *r)
{
    char dir[200];
    ck_store_entry *e;
    size_t n;
    if (!cp_dir(cc, r, dir, sizeof(dir)) &&
        cc->plat->ops->store_list(cc->plat, dir, &e, &n) == CK_OK) {
        for (size_t i = 0; i < n; i++)
            store_delete(cc, e[i].key);
        ck_store_entries_free(e, n);
    }
}

int ck_cc_adopt(ck_cc *cc, const ck_restore_point *start, const ck_handles *tasks,
                uint32_t ntasks, int mode)
{
    if (!start->id || !tasks)
        return CK_OK;
    cc->force_full = mode == CK_NO_CLAIM;
    if ((start->flags & CK_CP_FLAG_SAVEPOINT) && mode != CK_CLAIM)
        return CK_OK; /* the user's, and of no file a checkpoint could refer to */
    for (uint32_t s = 0; s < ntasks; s++)
        for (uint32_t i = 0; i < tasks[s].n; i++)
            if ((tasks[s].v[i].flags & CK_HANDLE_SHARED) &&
                !ck_sreg_ref(&cc->shared, tasks[s].v[i].key))
                return CK_ENOMEM;
    cc->adopted = tasks;
    cc->nadopted = ntasks;
    cc->adopted_owned = mode == CK_CLAIM;
    snprintf(cc->adopted_dir, sizeof(cc->adopted_dir), "%s", start->dir);
    return CK_OK;
}

/* Retires the adopted checkpoint (ck_cc_adopt). */
static void retire_adopted(ck_cc *cc)
{
    for (uint32_t s = 0; s < cc->nadopted; s++)
        for (uint32_t i = 0; i < cc->adopted[s].n; i++) {
            const ck_handle *h = &cc->adopted[s].v[i];
            if (!(h->flags & CK_HANDLE_SHARED))
                delete_own(cc, h);
            else if (ck_sreg_unref(&cc->shared, h->key) == 0)
                shared_gone(cc, h->key);
        }
    char key[200];
    if (!ck_sk_metadata(key, sizeof(key), cc->adopted_dir))
        store_delete(cc, key);
    cc->adopted = NULL;
}

/* A slot for a new checkpoint opened: arm the trigger again if it waited. */
static void rearm(ck_cc *cc, ck_time now)
{
    if (cc->next_trigger == CK_TIME_NEVER && !cc->stopped && !cc->paused)
        cc->next_trigger = now;
}

/* How a failed checkpoint counts against tolerable-failed-checkpoints,
 * as Flink's CheckpointFailureManager sorts it: not at all (aborted,
 * declined for a reason that is no failure), as a failure on the job
 * manager's side (expired, its metadata or a finished subtask's state
 * not stored), or as one a task reported (it declined). */
enum { CC_NOT_COUNTED, CC_JOB_LEVEL, CC_TASK_LEVEL };

/* Ends a pending checkpoint without completing it; `count` is CC_*. */
static void fail_cp(ck_cc *cc, ck_cp_record *r, ck_cp_status status, int count,
                    const char *reason)
{
    if (r->status != CK_CP_PENDING)
        return;
    r->status = status;
    r->complete = ck_now(cc->plat);
    snprintf(r->reason, sizeof(r->reason), "%s", reason);
    cc->npending--;
    if (r->flags & CK_CP_FLAG_STOP)
        cc->paused = 0; /* the job goes on */
    send_all_tasks(cc, CK_MSG_CP_ABORT, r->id);
    discard(cc, r);
    rearm(cc, r->complete);
    if (count == CC_NOT_COUNTED)
        return;
    /* A savepoint's failure on the job manager's side does not count (a
     * failover would not help: the user asks again), nor a
     * stop-with-savepoint's on a task (the job fails over instead:
     * jobmanager.c); an intermediate savepoint a task failed counts, as a
     * checkpoint does (handleTaskLevelCheckpointException). */
    if ((r->flags & CK_CP_FLAG_SAVEPOINT) &&
        (count == CC_JOB_LEVEL || (r->flags & CK_CP_FLAG_STOP)))
        return;
    /* Older than the last checkpoint or savepoint that completed: its
     * failure says nothing new (checkFailureAgainstCounter). */
    if (r->id <= cc->last_succeeded)
        return;
    cc->consecutive_failures++;
    if (cc->consecutive_failures > cc->tolerable && !cc->failed) {
        cc->failed = 1;
        snprintf(cc->failure, sizeof(cc->failure),
                 "exceeded checkpoint tolerable failure threshold (%d): checkpoint %llu %s",
                 cc->tolerable, (unsigned long long)r->id, reason);
    }
}

static int is_source_vertex(const ck_graph *g, int v)
{
    return g->spec.ops[g->v[v].ops[0]].kind == CK_OP_SOURCE;
}

static void send_trigger(ck_cc *cc, const ck_cp_record *r, uint32_t s)
{
    uint8_t body[20];
    ck_put_u64(body, r->id);
    ck_put_i64(body + 8, r->trigger);
    ck_put_u32(body + 16, r->flags);
    uint32_t ep = ck_ep_task(cc->g, cc->attempts[s], s);
    size_t n;
    uint8_t *m = ck_wire_msg(CK_MSG_CP_TRIGGER, CK_EP_JM, ep, cc->attempts[s], body, sizeof(body),
                             &n);
    if (m) /* lost: the checkpoint expires (platform.h) */
        CK_IGNORE(cc->plat->ops->send(cc->plat, ep, m, n));
}

/* Subtask s had finished: it counts as acknowledged, its state a marker. */
static void ack_finished(ck_cp_record *r, uint32_t s)
{
    if (r->tasks[s].acked)
        return;
    r->tasks[s].acked = 1;
    r->tasks[s].finished = 1;
    r->nacks++;
}

static ck_cp_record *trigger(ck_cc *cc, ck_time now, uint32_t flags)
{
    if (cc->ncps == cc->cap) {
        size_t cap = cc->cap ? cc->cap * 2 : 16;
        ck_cp_record *v = realloc(cc->cps, cap * sizeof(*v));
        if (!v)
            return NULL;
        cc->cps = v;
        cc->cap = cap;
    }
    ck_cp_record *r = &cc->cps[cc->ncps];
    memset(r, 0, sizeof(*r));
    r->tasks = calloc(cc->g->nsubtasks, sizeof(*r->tasks));
    if (!r->tasks)
        return NULL;
    r->g = cc->g;
    cc->ncps++;
    r->id = cc->next_id++;
    if (cc->force_full && !(flags & CK_CP_FLAG_SAVEPOINT))
        flags |= CK_CP_FLAG_FULL;
    r->flags = flags;
    r->status = CK_CP_PENDING;
    r->trigger = now;
    cc->npending++;
    /* The subtasks to trigger: running sources inject barriers; subtasks
     * that ended their input snapshot without one; finished ones are
     * acknowledged as such (CheckpointPlanCalculator). */
    for (uint32_t s = 0; s < cc->g->nsubtasks; s++) {
        int v, i;
        ck_graph_locate(cc->g, s, &v, &i);
        if (cc->finished[s])
            ack_finished(r, s);
        else if ((flags & CK_CP_FLAG_FINAL) || is_source_vertex(cc->g, v) || cc->ended[s])
            send_trigger(cc, r, s);
    }
    return r;
}

uint64_t ck_cc_trigger_savepoint(ck_cc *cc, int stop)
{
    if (cc->stopped || cc->restoring)
        return 0; /* no attempt running, it is winding down, or part of it restarts */
    /* Forced, as in Flink: max-concurrent and min-pause do not hold it back. */
    ck_cp_record *r = trigger(cc, ck_now(cc->plat),
                              CK_CP_FLAG_SAVEPOINT | (stop ? CK_CP_FLAG_STOP : 0));
    if (r && stop) {
        cc->paused = 1; /* the job is about to end: no more checkpoints */
        cc->next_trigger = CK_TIME_NEVER;
    }
    return r ? r->id : 0;
}

uint64_t ck_cc_trigger_final(ck_cc *cc)
{
    /* Part of the job restarts: its subtasks are not running, and a
     * trigger would reach their cancelled attempts (Flink's plan refuses:
     * NOT_ALL_REQUIRED_TASKS_RUNNING). The restarted ones end again. */
    if (cc->restoring)
        return 0;
    cc->stopped = 1; /* the last one: the job is winding down */
    cc->next_trigger = CK_TIME_NEVER;
    ck_cp_record *r = trigger(cc, ck_now(cc->plat), CK_CP_FLAG_FINAL);
    return r ? r->id : 0;
}

ck_time ck_cc_deadline(const ck_cc *cc)
{
    ck_time d = cc->stopped || cc->paused || cc->failed || cc->restoring || !cc->enabled
                    ? CK_TIME_NEVER
                    : cc->next_trigger;
    for (size_t i = 0; i < cc->ncps; i++)
        if (cc->cps[i].status == CK_CP_PENDING && cc->cps[i].trigger + cc->timeout < d)
            d = cc->cps[i].trigger + cc->timeout;
    return d;
}

void ck_cc_on_deadline(ck_cc *cc)
{
    ck_time now = ck_now(cc->plat);
    for (size_t i = 0; i < cc->ncps; i++) {
        ck_cp_record *r = &cc->cps[i];
        if (r->status == CK_CP_PENDING && r->trigger + cc->timeout <= now)
            fail_cp(cc, r, CK_CP_EXPIRED, CC_JOB_LEVEL, "expired before completing");
    }
    if (!cc->enabled || cc->stopped || cc->paused || cc->failed || cc->restoring ||
        now < cc->next_trigger)
        return;
    if (cc->npending >= cc->max_concurrent) {
        cc->next_trigger = CK_TIME_NEVER; /* re-armed when one ends */
        return;
    }
    if (cc->last_complete != CK_TIME_NEVER && now < cc->last_complete + cc->min_pause) {
        cc->next_trigger = cc->last_complete + cc->min_pause;
        return;
    }
    trigger(cc, now, cc->cp_flags);
    cc->next_trigger = now + cc->interval;
}

static int write_metadata(ck_cc *cc, ck_cp_record *r)
{
    ck_cp_meta m = {.id = r->id, .input_fp = cc->input_fp, .trigger = r->trigger,
                    .flags = r->flags, .nsubtasks = r->g->nsubtasks};
    m.tasks = malloc(m.nsubtasks * sizeof(*m.tasks));
    if (!m.tasks || ck_cp_meta_vertices(&m, r->g)) { /* the generation that took it */
        free(m.tasks);
        free(m.vertices);
        return CK_ENOMEM;
    }
    for (uint32_t s = 0; s < m.nsubtasks; s++)
        m.tasks[s] = r->tasks[s].handles; /* borrowed */
    uint8_t *p;
    size_t len;
    int rc = ck_cp_meta_encode(&m, &p, &len);
    free(m.tasks);
    free(m.vertices);
    if (rc)
        return rc;
    char key[256];
    if ((rc = metadata_key(cc, r, key, sizeof(key)))) {
        free(p);
        return rc;
    }
    r->metadata_sent = 1;
    return cc->plat->ops->store_put(cc->plat, key, p, len, r->id);
}

/* Every subtask acknowledged: the finished ones' state files are stored
 * first, then the metadata. */
static void maybe_complete(ck_cc *cc, ck_cp_record *r)
{
    if (r->status != CK_CP_PENDING || r->nacks != r->g->nsubtasks || r->metadata_sent ||
        r->markers_pending)
        return;
    char dir[200];
    if (cp_dir(cc, r, dir, sizeof(dir))) {
        fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL, "the job id does not make a store key");
        return;
    }
    for (uint32_t s = 0; s < r->g->nsubtasks; s++) {
        if (!r->tasks[s].finished || r->tasks[s].handles.n)
            continue;
        ck_capture c;
        memset(&c, 0, sizeof(c));
        int v, i;
        ck_graph_locate(r->g, s, &v, &i);
        c.checkpoint_id = r->id;
        c.vertex = v;
        c.subtask = i;
        c.parallelism = r->g->v[v].parallelism;
        c.finished = 1;
        uint8_t *data;
        size_t len;
        char key[CK_HANDLE_KEY_MAX + 1];
        if (ck_sk_state(key, sizeof(key), dir, v, i) || ck_snap_encode(&c, &data, &len)) {
            fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL,
                    "out of memory writing a finished subtask's state");
            return;
        }
        if (ck_handles_add(&r->tasks[s].handles, CK_HANDLE_SNAPSHOT, 0, key, len,
                           ck_get_u32(data + len - 4), CK_KGR_EMPTY)) {
            free(data);
            fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL,
                    "out of memory writing a finished subtask's state");
            return;
        }
        r->tasks[s].bytes = len;
        r->bytes += len;
        r->bytes_new += len;
        if (len < cc->inline_below) {
            if (ck_handles_inline_last(&r->tasks[s].handles, data, len)) {
                fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL,
                        "could not keep a finished subtask's state");
                return;
            }
            continue;
        }
        r->markers_pending++;
        if (cc->plat->ops->store_put(cc->plat, key, data, len, MARKER_TOKEN | r->id)) {
            r->markers_pending--;
            fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL,
                    "could not store a finished subtask's state");
            return;
        }
    }
    if (!r->markers_pending && write_metadata(cc, r))
        fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL, "could not write the metadata");
}

/* A late acknowledgement's file: its own goes, a shared one as
 * shared_gone says. */
static void shared_gone_or_own(ck_cc *cc, const ck_handle *h)
{
    if (h->flags & CK_HANDLE_SHARED)
        shared_gone(cc, h->key);
    else
        delete_own(cc, h);
}

/* Late state of checkpoint r, which failed meanwhile (a subtask was
 * still uploading when it was aborted): nothing refers to it, so delete
 * it, as Flink discards late subtask state. Only files in that
 * checkpoint's own directory, and shared ones nothing refers to: those it
 * uploaded itself, or, from an attempt cancelled since (stale), any,
 * since that attempt will never refer to its changelog again. */
static void discard_late(ck_cc *cc, const ck_cp_record *r, const ck_cp_ack *ack, int stale)
{
    char dir[200], shared[200];
    if (cp_dir(cc, r, dir, sizeof(dir)) || ck_sk_shared_dir(shared, sizeof(shared), cc->job_id))
        return;
    size_t sl = strlen(shared);
    for (uint32_t i = 0; i < ack->handles.n; i++) {
        const ck_handle *h = &ack->handles.v[i];
        int own = h->flags & CK_HANDLE_SHARED
                      ? (stale || (!(h->flags & CK_HANDLE_REUSED) && !task_owned(h))) &&
                            !strncmp(h->key, shared, sl) && !ck_sreg_count(&cc->shared, h->key)
                      : !strncmp(h->key, dir, strlen(dir));
        if (own && !strstr(h->key, ".."))
            shared_gone_or_own(cc, h);
    }
}

void ck_cc_on_stale_ack(ck_cc *cc, const ck_cp_ack *ack)
{
    const ck_cp_record *r = find(cc, ack->id);
    if (r && r->status != CK_CP_PENDING && r->status != CK_CP_COMPLETED)
        discard_late(cc, r, ack, 1);
}

void ck_cc_on_ack(ck_cc *cc, uint32_t subtask, const ck_cp_ack *ack)
{
    ck_cp_record *r = find(cc, ack->id);
    if (r && r->status != CK_CP_PENDING && r->status != CK_CP_COMPLETED) {
        discard_late(cc, r, ack, 0);
        return;
    }
    if (!r || subtask >= r->g->nsubtasks || r->status != CK_CP_PENDING || r->tasks[subtask].acked)
        return; /* unknown or repeated: ignore, as Flink does */
    /* A file it reuses that nothing refers to any more may be gone: its
     * snapshot took an older completed checkpoint's files as its base
     * (with checkpoints in flight at once, before it heard of the one
     * that completed since and re-uploaded them elsewhere), and that
     * checkpoint was retired meanwhile. Declined (not a failure of the
     * job's), as Flink refuses a reference to unknown shared state,
     * rather than completed over a file deleted. A changelog's files are
     * not: with no reference they stay until a completed checkpoint
     * referred to them (discard), and a later snapshot refers to them
     * again. */
    for (uint32_t i = 0; i < ack->handles.n; i++) {
        const ck_handle *h = &ack->handles.v[i];
        if ((h->flags & CK_HANDLE_SHARED) && (h->flags & CK_HANDLE_REUSED) && !task_owned(h) &&
            !ck_sreg_count(&cc->shared, h->key) && !in_limbo(cc, h->key)) {
            fail_cp(cc, r, CK_CP_DECLINED, CC_NOT_COUNTED,
                    "a subtask reused shared state already discarded");
            discard_late(cc, r, ack, 0);
            return;
        }
    }
    ck_cp_task *t = &r->tasks[subtask];
    if (ck_handles_copy(&t->handles, &ack->handles)) {
        fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL, "out of memory recording a subtask's state");
        return;
    }
    for (uint32_t i = 0; i < t->handles.n; i++)
        if ((t->handles.v[i].flags & CK_HANDLE_SHARED) &&
            !ck_sreg_ref(&cc->shared, t->handles.v[i].key)) {
            /* the references taken so far go with the checkpoint's
             * discard; the rest are not its to drop */
            ck_handles_truncate(&t->handles, i);
            fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL, "out of memory registering shared state");
            return;
        }
    t->acked = 1;
    /* sizes are what the state weighs (handle.h CK_HANDLE_MODELLED) */
    t->bytes = ck_handles_modelled(&ack->handles);
    r->bytes_new += ck_handles_modelled_new(&ack->handles);
    for (uint32_t i = 0; i < ack->handles.n; i++)
        if (ack->handles.v[i].kind == CK_HANDLE_CHANGELOG &&
            !(ack->handles.v[i].flags & CK_HANDLE_REUSED))
            r->bytes_changelog += ack->handles.v[i].modelled;
    t->sync_ns = ack->sync_ns;
    t->async_ns = ack->async_ns;
    t->upload_ns = ack->upload_ns;
    t->align_ns = ack->align_ns;
    t->input_ended = (ack->flags & CK_ACK_INPUT_ENDED) != 0;
    t->unaligned = (ack->flags & CK_ACK_UNALIGNED) != 0;
    t->inflight = ack->inflight;
    r->inflight += ack->inflight;
    r->unaligned |= t->unaligned;
    t->attempt = cc->attempts[subtask];
    r->bytes += t->bytes;
    r->nacks++;
    maybe_complete(cc, r);
}

void ck_cc_on_stored(ck_cc *cc, uint64_t token, int status)
{
    ck_cp_record *r = find(cc, token & ~MARKER_TOKEN);
    if (!r)
        return;
    if (r->status != CK_CP_PENDING) {
        /* Its metadata or a finished subtask's state landed after the
         * checkpoint failed (a newer one completed first and subsumed it
         * while the put was on its way): discard found the directory
         * without it, and it goes now. */
        if (r->status != CK_CP_COMPLETED && status == CK_OK)
            discard_dir(cc, r);
        return;
    }
    if (token & MARKER_TOKEN) {
        r->markers_pending--;
        if (status != CK_OK)
            fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL,
                    "a finished subtask's state could not be stored");
        else
            maybe_complete(cc, r);
        return;
    }
    ck_time now = ck_now(cc->plat);
    if (status != CK_OK) {
        fail_cp(cc, r, CK_CP_DECLINED, CC_JOB_LEVEL, "the metadata upload failed");
        return;
    }
    r->status = CK_CP_COMPLETED;
    r->complete = now;
    cc->npending--;
    cc->last_complete = now; /* min-pause counts from savepoints too */
    /* A success, savepoints included, ends a run of failures
     * (handleCheckpointSuccess), unless an older one than the last. */
    if (r->id > cc->last_succeeded) {
        cc->last_succeeded = r->id;
        cc->consecutive_failures = 0;
    }
    if (r->flags & CK_CP_FLAG_SAVEPOINT) {
        /* An intermediate savepoint commits nothing and subsumes nothing;
         * a stop-with-savepoint commits, and the tasks then finish. */
        if (r->flags & CK_CP_FLAG_STOP)
            send_all_tasks(cc, CK_MSG_CP_COMPLETE, r->id);
        rearm(cc, now);
        return;
    }
    send_all_tasks(cc, CK_MSG_CP_COMPLETE, r->id);
    seg_completed(cc, r);
    /* Older pending checkpoints are subsumed; old completed ones retired. */
    int kept = 0;
    for (size_t i = cc->ncps; i-- > 0;) {
        ck_cp_record *o = &cc->cps[i];
        if (o->id >= r->id || (o->flags & CK_CP_FLAG_SAVEPOINT))
            continue;
        if (o->status == CK_CP_PENDING)
            fail_cp(cc, o, CK_CP_ABORTED, CC_NOT_COUNTED,
                    "subsumed by a newer completed checkpoint");
    }
    for (size_t i = cc->ncps; i-- > 0;) {
        ck_cp_record *o = &cc->cps[i];
        if (o->status != CK_CP_COMPLETED || o->retired || (o->flags & CK_CP_FLAG_SAVEPOINT))
            continue; /* savepoints belong to the user */
        if (++kept > cc->retained) {
            discard(cc, o);
            o->retired = 1;
        }
    }
    if (r->flags & CK_CP_FLAG_FULL)
        cc->force_full = 0; /* later ones may refer to its files */
    if (cc->adopted && cc->adopted_owned && kept >= cc->retained) /* older than any own */
        retire_adopted(cc);
    rearm(cc, now);
}

void ck_cc_on_decline(ck_cc *cc, uint32_t subtask, uint64_t id, uint32_t reason,
                      const char *text)
{
    ck_cp_record *r = find(cc, id);
    if (!r || r->status != CK_CP_PENDING ||
        (subtask < r->g->nsubtasks && r->tasks[subtask].finished))
        return; /* a finished subtask's late word on a checkpoint it is in as finished */
    char why[96];
    snprintf(why, sizeof(why), "declined: %s", text);
    r->task_declined = 1;
    if (reason == CK_DECLINE_FAILURE)
        fail_cp(cc, r, CK_CP_DECLINED, CC_TASK_LEVEL, why);
    else
        fail_cp(cc, r, CK_CP_ABORTED, CC_NOT_COUNTED, why);
}

/* Without checkpoints after tasks finish: no more checkpoints, and the
 * pending ones the subtask did not acknowledge abort. */
static void stop_for(ck_cc *cc, uint32_t subtask)
{
    cc->stopped = 1;
    for (size_t i = 0; i < cc->ncps; i++) {
        ck_cp_record *r = &cc->cps[i];
        if (r->status == CK_CP_PENDING && subtask < r->g->nsubtasks && !r->tasks[subtask].acked)
            fail_cp(cc, r, CK_CP_ABORTED, CC_NOT_COUNTED,
                    "a subtask ended its input before taking part");
    }
}

void ck_cc_task_ended(ck_cc *cc, uint32_t subtask)
{
    if (subtask >= cc->g->nsubtasks || cc->ended[subtask])
        return;
    cc->ended[subtask] = 1;
    if (!cc->after_finish) {
        stop_for(cc, subtask);
        return;
    }
    /* It will see no barrier of the checkpoints it has not taken part in:
     * it takes them now, its input over (a barrier it aligned first is
     * acknowledged already, or on its way: it ignores the trigger). */
    for (size_t i = 0; i < cc->ncps; i++) {
        ck_cp_record *r = &cc->cps[i];
        if (r->status == CK_CP_PENDING && subtask < r->g->nsubtasks &&
            !r->tasks[subtask].acked && !(r->flags & CK_CP_FLAG_FINAL))
            send_trigger(cc, r, subtask);
    }
}

void ck_cc_task_finished(ck_cc *cc, uint32_t subtask)
{
    if (subtask >= cc->g->nsubtasks || cc->finished[subtask])
        return;
    cc->finished[subtask] = 1;
    cc->nfinished++;
    if (!cc->after_finish) {
        stop_for(cc, subtask);
        return;
    }
    /* The last one: the job finishes, and its pending checkpoints abort
     * (a checkpoint of finished subtasks only would restore nothing). */
    if (cc->nfinished == cc->g->nsubtasks)
        return;
    for (size_t i = 0; i < cc->ncps; i++) {
        ck_cp_record *r = &cc->cps[i];
        if (r->status == CK_CP_PENDING && subtask < r->g->nsubtasks &&
            !r->tasks[subtask].acked) {
            ack_finished(r, subtask);
            maybe_complete(cc, r);
        }
    }
}

/* Aborts every pending checkpoint (not a failure). */
static void abort_pending(ck_cc *cc, const char *reason)
{
    for (size_t i = 0; i < cc->ncps; i++)
        if (cc->cps[i].status == CK_CP_PENDING)
            fail_cp(cc, &cc->cps[i], CK_CP_ABORTED, CC_NOT_COUNTED, reason);
}

int ck_cc_needs_final(const ck_cc *cc)
{
    if (cc->npending > 0)
        return 0;
    const ck_cp_record *last = NULL;
    for (size_t i = cc->ncps; i-- > 0 && !last;)
        if (cc->cps[i].status == CK_CP_COMPLETED && !(cc->cps[i].flags & CK_CP_FLAG_SAVEPOINT))
            last = &cc->cps[i];
    if (last && last->g != cc->g)
        last = NULL; /* of another generation: no subtask of this one took part */
    /* Only what the subtask's running attempt acknowledged counts. */
    for (uint32_t s = 0; s < cc->g->nsubtasks; s++)
        if (cc->ended[s] && !cc->finished[s] &&
            !(last && last->tasks[s].input_ended && last->tasks[s].attempt == cc->attempts[s]))
            return 1;
    return 0;
}

int ck_cc_regenerate(ck_cc *cc, const ck_graph *g)
{
    size_t n = g->nsubtasks;
    uint8_t *ended = calloc(n, 1), *finished = calloc(n, 1), *seg_live = calloc(n, 1);
    uint32_t *attempts = calloc(n, sizeof(uint32_t));
    uint64_t *seg_newest = calloc(n, sizeof(uint64_t));
    if (!ended || !finished || !seg_live || !attempts || !seg_newest) {
        free(ended), free(finished), free(seg_live), free(attempts), free(seg_newest);
        return CK_ENOMEM;
    }
    abort_pending(cc, "the job rescaled");
    free(cc->ended), free(cc->finished), free(cc->seg_live), free(cc->attempts);
    free(cc->seg_newest);
    cc->ended = ended;
    cc->finished = finished;
    cc->seg_live = seg_live; /* every attempt of the old generation ended */
    cc->attempts = attempts;
    cc->seg_newest = seg_newest;
    cc->nfinished = 0;
    cc->g = g;
    seg_sweep(cc, 1);
    return CK_OK;
}

void ck_cc_start_attempt(ck_cc *cc, uint32_t attempt, ck_time now)
{
    /* What is still pending waits for the attempts that are gone. */
    abort_pending(cc, "the job restarted");
    for (uint32_t s = 0; s < cc->g->nsubtasks; s++) {
        cc->attempts[s] = attempt;
        cc->seg_live[s] = 1;
        cc->seg_newest[s] = 0;
    }
    cc->restoring = 0;
    memset(cc->ended, 0, cc->g->nsubtasks);
    memset(cc->finished, 0, cc->g->nsubtasks);
    cc->nfinished = 0;
    cc->stopped = 0;
    cc->paused = 0;
    cc->failed = 0;
    cc->next_trigger = CK_TIME_NEVER;
    if (cc->enabled) {
        int64_t lo = cc->min_pause / CK_NS_PER_MS, hi = cc->interval / CK_NS_PER_MS;
        if (hi < lo)
            hi = lo;
        uint64_t ms = (uint64_t)lo + ck_rng_below(&cc->rng, (uint64_t)(hi - lo) + 1);
        cc->next_trigger = now + (ck_time)ms * CK_NS_PER_MS;
    }
}

void ck_cc_hold(ck_cc *cc, const char *reason)
{
    abort_pending(cc, reason);
    cc->restoring = 1;
}

void ck_cc_restart_subtasks(ck_cc *cc, uint32_t attempt, const uint8_t *mask)
{
    /* A checkpoint still pending waits for the restarted subtasks' earlier
     * attempts: it can never complete (ck_cc_hold aborted those of the
     * failure; Flink aborts again when it restores, JOB_FAILOVER_REGION). */
    abort_pending(cc, "a region of the job restarted");
    int any_ended = 0;
    cc->nfinished = 0;
    for (uint32_t s = 0; s < cc->g->nsubtasks; s++) {
        if (mask[s]) {
            cc->attempts[s] = attempt;
            cc->ended[s] = cc->finished[s] = 0;
            cc->seg_live[s] = 1;
            cc->seg_newest[s] = 0;
        }
        any_ended |= cc->ended[s] | cc->finished[s];
        cc->nfinished += cc->finished[s];
    }
    /* The final checkpoint was for a job whose input had all ended: the
     * restarted subtasks read again, and periodic checkpoints go on (with
     * the option off, they stopped for good once a subtask ended). */
    int was = cc->stopped;
    cc->stopped = !cc->after_finish && any_ended;
    /* A final checkpoint disarmed the trigger: arm it again, on the
     * interval's grid from now on (ck_cc_release). */
    if (was && !cc->stopped && cc->enabled && cc->next_trigger == CK_TIME_NEVER)
        cc->next_trigger = ck_now(cc->plat);
    seg_sweep(cc, 1); /* the restarted ones' earlier attempt ended */
}

void ck_cc_release(ck_cc *cc, ck_time now)
{
    if (!cc->restoring)
        return;
    cc->restoring = 0;
    /* The ticks that passed meanwhile were skipped. */
    if (cc->next_trigger != CK_TIME_NEVER && cc->next_trigger < now && cc->interval > 0)
        cc->next_trigger += ((now - cc->next_trigger) / cc->interval + 1) * cc->interval;
}

void ck_cc_abort_all(ck_cc *cc, const char *reason)
{
    abort_pending(cc, reason);
    cc->stopped = 1;
    cc->next_trigger = CK_TIME_NEVER;
    /* every attempt ended: no file is appended to again */
    memset(cc->seg_live, 0, cc->g->nsubtasks);
    seg_sweep(cc, 1);
}

int ck_cp_meta_vertices(ck_cp_meta *m, const ck_graph *g)
{
    m->vertices = calloc((size_t)g->nv, sizeof(*m->vertices));
    if (!m->vertices)
        return CK_ENOMEM;
    m->nvertices = (uint32_t)g->nv;
    for (int v = 0; v < g->nv; v++) {
        ck_cp_meta_vertex *mv = &m->vertices[v];
        mv->parallelism = (uint32_t)g->v[v].parallelism;
        mv->nops = (uint32_t)g->v[v].nops;
        for (int k = 0; k < g->v[v].nops; k++) {
            const ck_op_spec *o = &g->spec.ops[g->v[v].ops[k]];
            snprintf(mv->ops[k].uid, sizeof(mv->ops[k].uid), "%s", o->uid[0] ? o->uid : o->name);
            mv->ops[k].kind = (uint8_t)o->kind;
            mv->ops[k].max_parallelism = (uint32_t)o->max_parallelism;
            mv->ops[k].index = (uint32_t)g->v[v].ops[k];
        }
    }
    return CK_OK;
}

int ck_cp_meta_encode(const ck_cp_meta *m, uint8_t **out, size_t *len)
{
    uint64_t sum = 0;
    for (uint32_t v = 0; v < m->nvertices; v++)
        sum += m->vertices[v].parallelism;
    if (!m->nvertices || sum != m->nsubtasks)
        return CK_EINVAL;
    ck_wbuf w = {0};
    ck_wbuf_u32(&w, METADATA_MAGIC);
    ck_wbuf_u64(&w, m->id);
    ck_wbuf_u64(&w, (uint64_t)m->trigger);
    ck_wbuf_u32(&w, m->flags);
    ck_wbuf_u64(&w, m->input_fp);
    ck_wbuf_u32(&w, m->nvertices);
    for (uint32_t v = 0; v < m->nvertices; v++) {
        const ck_cp_meta_vertex *mv = &m->vertices[v];
        ck_wbuf_u32(&w, mv->parallelism);
        ck_wbuf_u32(&w, mv->nops);
        for (uint32_t k = 0; k < mv->nops; k++) {
            size_t ul = strlen(mv->ops[k].uid);
            uint8_t *p = ck_wbuf_room(&w, 1);
            if (p)
                *p = (uint8_t)ul;
            ck_wbuf_bytes(&w, mv->ops[k].uid, ul);
            p = ck_wbuf_room(&w, 1);
            if (p)
                *p = mv->ops[k].kind;
            ck_wbuf_u32(&w, mv->ops[k].max_parallelism);
            ck_wbuf_u32(&w, mv->ops[k].index);
        }
    }
    uint32_t s = 0;
    for (uint32_t v = 0; v < m->nvertices; v++)
        for (uint32_t i = 0; i < m->vertices[v].parallelism; i++, s++) {
            ck_wbuf_u32(&w, v);
            ck_wbuf_u32(&w, i);
            ck_handles_put(&w, &m->tasks[s]);
        }
    return ck_wbuf_seal_crc(&w, out, len);
}

static int meta_u8(ck_rbuf *r)
{
    const uint8_t *b = ck_rbuf_take(r, 1);
    return b ? *b : -1;
}

/* The vertices of a version-4 file: *why set on CK_ECORRUPT. */
static int meta_decode_vertices(ck_rbuf *r, ck_cp_meta *m, const char **why)
{
    *why = "malformed";
    m->nvertices = ck_rbuf_u32(r);
    if (r->err || m->nvertices == 0 || m->nvertices > CK_MAX_OPS)
        return CK_ECORRUPT;
    m->vertices = calloc(m->nvertices, sizeof(*m->vertices));
    if (!m->vertices)
        return CK_ENOMEM;
    uint32_t nops = 0;
    uint64_t sum = 0;
    for (uint32_t v = 0; v < m->nvertices; v++) {
        ck_cp_meta_vertex *mv = &m->vertices[v];
        mv->parallelism = ck_rbuf_u32(r);
        mv->nops = ck_rbuf_u32(r);
        *why = "a vertex of no subtask or no operator, or of too many";
        if (r->err || mv->parallelism == 0 ||
            mv->parallelism > CK_KG_UPPER_BOUND_MAX_PARALLELISM || mv->nops == 0 ||
            mv->nops > CK_MAX_OPS - nops)
            return CK_ECORRUPT;
        nops += mv->nops;
        sum += mv->parallelism;
        for (uint32_t k = 0; k < mv->nops; k++) {
            ck_cp_meta_op *o = &mv->ops[k];
            int ul = meta_u8(r);
            *why = "an operator uid that is empty, too long or holds a NUL";
            const uint8_t *u = ul > 0 && ul < CK_NAME_MAX ? ck_rbuf_take(r, (size_t)ul) : NULL;
            if (!u || memchr(u, 0, (size_t)ul))
                return CK_ECORRUPT;
            memcpy(o->uid, u, (size_t)ul);
            o->uid[ul] = 0;
            int kind = meta_u8(r);
            o->max_parallelism = ck_rbuf_u32(r);
            o->index = ck_rbuf_u32(r);
            *why = "an operator of unknown kind";
            if (r->err || kind < 0 || kind > CK_OP_KIND_MAX)
                return CK_ECORRUPT;
            o->kind = (uint8_t)kind;
            *why = "an operator whose max parallelism is below its parallelism or above 32768";
            if (o->max_parallelism < mv->parallelism ||
                o->max_parallelism > CK_KG_UPPER_BOUND_MAX_PARALLELISM)
                return CK_ECORRUPT;
            *why = "an operator index past the most a job has";
            if (o->index >= CK_MAX_OPS)
                return CK_ECORRUPT;
            for (uint32_t w = 0; w <= v; w++)
                for (uint32_t q = 0; q < (w == v ? k : m->vertices[w].nops); q++)
                    if (!strcmp(m->vertices[w].ops[q].uid, o->uid) ||
                        m->vertices[w].ops[q].index == o->index) {
                        *why = "two operators of the same uid or index";
                        return CK_ECORRUPT;
                    }
        }
    }
    *why = "malformed";
    if (sum > ck_rbuf_left(r) / 42) /* vertex, index and a handle at least */
        return CK_ECORRUPT;
    m->nsubtasks = (uint32_t)sum;
    return CK_OK;
}

int ck_cp_meta_decode(const uint8_t *p, size_t len, ck_cp_meta *m, const char **why)
{
    memset(m, 0, sizeof(*m));
    *why = "too short";
    if (len < 40)
        return CK_ECORRUPT;
    *why = "checksum mismatch (truncated or damaged)";
    if (ck_crc32c(0, p, len - 4) != ck_get_u32(p + len - 4))
        return CK_ECORRUPT;
    ck_rbuf r = {.p = p, .len = len - 4};
    *why = "not a checkpoint's _metadata (or of an older format)";
    uint32_t magic = ck_rbuf_u32(&r);
    if (magic != METADATA_MAGIC && magic != METADATA_MAGIC_V4 && magic != METADATA_MAGIC_V3)
        return CK_ECORRUPT;
    m->version = magic == METADATA_MAGIC ? 5 : magic == METADATA_MAGIC_V4 ? 4 : 3;
    m->id = ck_rbuf_u64(&r);
    m->trigger = (int64_t)ck_rbuf_u64(&r);
    m->flags = ck_rbuf_u32(&r);
    m->input_fp = ck_rbuf_u64(&r);
    if (m->version >= 4) {
        int rc = meta_decode_vertices(&r, m, why);
        if (rc) {
            ck_cp_meta_free(m);
            return rc;
        }
    } else {
        m->nsubtasks = ck_rbuf_u32(&r);
        *why = "malformed";
        if (r.err || m->nsubtasks == 0 || m->nsubtasks > ck_rbuf_left(&r) / 38)
            return CK_ECORRUPT;
    }
    m->tasks = calloc(m->nsubtasks, sizeof(*m->tasks));
    if (!m->tasks) {
        ck_cp_meta_free(m);
        return CK_ENOMEM;
    }
    uint32_t v = 0, i = 0;
    for (uint32_t s = 0; s < m->nsubtasks; s++) {
        *why = "malformed";
        int bad = m->version >= 4 ? ck_rbuf_u32(&r) != v || ck_rbuf_u32(&r) != i
                                  : ck_rbuf_u32(&r) != s;
        if (bad || r.err) {
            ck_cp_meta_free(m);
            return CK_ECORRUPT;
        }
        if (m->version >= 4 && ++i == m->vertices[v].parallelism) {
            v++;
            i = 0;
        }
        int rc = ck_handles_get(&r, &m->tasks[s], CK_KG_UPPER_BOUND_MAX_PARALLELISM, why);
        if (!rc && !m->tasks[s].n) {
            *why = "a subtask without state handles";
            rc = CK_ECORRUPT;
        }
        /* operator-state counts came with version 5 */
        for (uint32_t h = 0; !rc && m->version < 5 && h < m->tasks[s].n; h++)
            if (m->tasks[s].v[h].flags & CK_HANDLE_OPCOUNTS) {
                *why = "operator-state counts in a _metadata of a version before 5";
                rc = CK_ECORRUPT;
            }
        if (rc) {
            ck_cp_meta_free(m);
            return rc;
        }
    }
    *why = "malformed";
    if (r.err || ck_rbuf_left(&r) != 0) {
        ck_cp_meta_free(m);
        return CK_ECORRUPT;
    }
    return CK_OK;
}

void ck_cp_meta_free(ck_cp_meta *m)
{
    for (uint32_t s = 0; m->tasks && s < m->nsubtasks; s++)
        ck_handles_free(&m->tasks[s]);
    free(m->tasks);
    m->tasks = NULL;
    free(m->vertices);
    m->vertices = NULL;
    m->nvertices = 0;
}

/* ---- invariants (coordinator.h) ------------------------------------------------------ */

#define CK_INV_MODULE "coordinator"

static void add_count(void *arg, const char *key, uint32_t count)
{
    (void)key;
    *(uint64_t *)arg += count;
}

/* The shared handles of hs: counted in *refs, each looked up (6). */
static int check_refs(const ck_cc *cc, const ck_handles *hs, const char *whose, uint64_t *refs,
                      ck_inv *v)
{
    for (uint32_t i = 0; i < hs->n; i++) {
        if (!(hs->v[i].flags & CK_HANDLE_SHARED))
            continue;
        (*refs)++;
        CK_INV(v, 6, ck_sreg_count(&cc->shared, hs->v[i].key) > 0,
               "%s refers to %s, which the registry does not count", whose, hs->v[i].key);
    }
    return 0;
}

int ck_cc_check(const ck_cc *cc, ck_inv *v)
{
    uint32_t nsub = cc->g->nsubtasks;
    int pending = 0, rc;
    uint64_t refs = 0, counted = 0;
    char whose[64];
    CK_INV(v, 1, cc->next_id == cc->first_id + cc->ncps, "next id %llu after %zu from %llu",
           (unsigned long long)cc->next_id, cc->ncps, (unsigned long long)cc->first_id);
    size_t newer = 0; /* completed checkpoints (not savepoints) newer than the one looked at */
    for (size_t i = cc->ncps; i-- > 0;) {
        const ck_cp_record *r = &cc->cps[i];
        unsigned long long id = (unsigned long long)r->id;
        int sp = (r->flags & CK_CP_FLAG_SAVEPOINT) != 0;
        CK_INV(v, 1, r->id == cc->first_id + i, "record %zu has id %llu", i, id);
        if (r->status == CK_CP_PENDING) {
            uint32_t acked = 0;
            pending++;
            CK_INV(v, 3, r->g == cc->g,
                   "checkpoint %llu pending, of generation %d while the job runs %d", id,
                   r->g->generation, cc->g->generation);
            for (uint32_t s = 0; s < nsub; s++) {
                acked += r->tasks[s].acked != 0;
                CK_INV(v, 7, !cc->finished[s] || r->tasks[s].acked,
                       "checkpoint %llu: subtask %u finished, not acknowledged", id, s);
            }
            CK_INV(v, 3, acked == r->nacks && r->markers_pending >= 0,
                   "checkpoint %llu: %u subtasks acknowledged, counted %u", id, acked, r->nacks);
            CK_INV(v, 3, !r->metadata_sent || (r->nacks == nsub && !r->markers_pending),
                   "checkpoint %llu: metadata written with %u of %u acknowledged, %d state "
                   "files on their way",
                   id, r->nacks, nsub, r->markers_pending);
        } else {
            CK_INV(v, 4, r->complete >= r->trigger,
                   "checkpoint %llu: %s at %lld ns, triggered at %lld ns", id,
                   ck_cp_status_name(r->status), (long long)r->complete, (long long)r->trigger);
        }
        CK_INV(v, 4, r->status != CK_CP_COMPLETED || r->metadata_sent,
               "checkpoint %llu: completed without its metadata written", id);
        int keeps = r->status == CK_CP_COMPLETED && !sp;
        CK_INV(v, 5, r->retired == (keeps && newer >= (size_t)cc->retained),
               "checkpoint %llu: %s%s, %s, with %zu newer completed (num-retained %d)", id,
               ck_cp_status_name(r->status), sp ? " savepoint" : "",
               r->retired ? "retired" : "not retired", newer, cc->retained);
        newer += keeps;
        if (r->tasks && (r->status == CK_CP_PENDING || (r->status == CK_CP_COMPLETED &&
                                                        !r->retired))) {
            snprintf(whose, sizeof(whose), "checkpoint %llu", id);
            for (uint32_t s = 0; s < r->g->nsubtasks; s++)
                if ((rc = check_refs(cc, &r->tasks[s].handles, whose, &refs, v)))
                    return rc;
        }
    }
    CK_INV(v, 2, pending == cc->npending, "%d checkpoints pending, counted %d", pending,
           cc->npending);
    for (uint32_t s = 0; cc->adopted && s < cc->nadopted; s++)
        if ((rc = check_refs(cc, &cc->adopted[s], "the snapshot the job started from", &refs, v)))
            return rc;
    ck_inv sv;
    if (ck_sreg_check(&cc->shared, &sv))
        return ck_inv_fail(v, CK_INV_MODULE, 6, "registry: %s (%d): %s", sv.module, sv.num,
                           sv.what);
    ck_sreg_foreach(&cc->shared, add_count, &counted);
    CK_INV(v, 6, counted == refs,
           "the registry counts %llu references, the checkpoints keeping files hold %llu",
           (unsigned long long)counted, (unsigned long long)refs);
    uint32_t fin = 0;
    for (uint32_t s = 0; s < nsub; s++)
        fin += cc->finished[s] != 0;
    CK_INV(v, 7, fin == cc->nfinished, "%u subtasks finished, counted %u", fin, cc->nfinished);
    for (size_t i = 0; cc->restoring && i < cc->ncps; i++)
        CK_INV(v, 8, cc->cps[i].status != CK_CP_PENDING,
               "checkpoint %llu (flags %#x, triggered at %lld ns) pending while restoring",
               (unsigned long long)cc->cps[i].id, cc->cps[i].flags,
               (long long)cc->cps[i].trigger);
    return 0;
}
