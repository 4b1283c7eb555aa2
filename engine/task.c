/*
 * task.c - a subtask's lifecycle and its node interface (task.h draws its
 * state machine, CREATED to FINISHED, and numbers its invariants (1) to
 * (4), checked here): creating and deleting it, the steps of its work
 * (a source reading its topic partitions, or its input gate's buffers
 * through the chain), its outputs flushed and sent, time accounting,
 * metrics reports, buffer debloating, the messages, completions and
 * deadlines the backend hands it, and its checks.
 *
 * The machines it drives live in files of their own (task_impl.h):
 * snapshots in task_snapshot.c, file merging in task_mfile.c, the state
 * changelog in task_changelog.c, the restore in task_restore.c.
 */
#include "task_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "debloat.h"
#include "error.h"
#include "invariant.h"
#include "keygroup.h"

#define CK_INV_MODULE "task" /* invariant.h */

/* Records a source reads from one partition before moving to the next. */
#define SOURCE_SLICE 64
#define SOURCE_RUN 16 /* records read from the topic at a time */
/* Records taken from an input buffer at a time, and how far ahead of the
 * one being processed a keyed operator's state is prefetched: one ahead was
 * fastest with a million keys (1.8 s against 2.2 s for two or four ahead,
 * 2.6 s for eight: prefetching further only crowds the memory system). */
#define INPUT_RUN 32
#define INPUT_AHEAD 1
/* Records a source reads in one work() call. */
#define SOURCE_BATCH 512
/* How long a step's records may take before the task looks at its
 * messages again: their CPU (flops of the scenario's cpu_per_record) or
 * their sinks' external systems' time, whichever binds first, and one
 * record at least (over sockets, where records also cost real time that
 * is not charged, an input step ends too once that much of it passed). Flink's task looks at its mailbox between two records
 * (canEmitBatchOfRecords: no mail waiting), so that an unaligned barrier
 * or a checkpoint's trigger is taken at the next record boundary; here
 * messages wait for the step in progress, whose records' time is charged
 * at its end. So where such a priority event may come (a source: a
 * trigger; a gate that takes unaligned barriers), a step is short in
 * simulated time, 100 us of a 1 Gflop/s core or of sinks' writes (a
 * costlier record is a step of its own, as it is a mailbox turn in
 * Flink); elsewhere a step may take 2 ms (a COMPLETE, a credit, a
 * barrier in the data wait that long at most), as shorter ones cost
 * simulation time. */
#define STEP_FLOPS 1e5
#define STEP_WAIT (100 * CK_NS_PER_US)
#define BATCH_FLOPS 2e6
#define BATCH_WAIT (2 * CK_NS_PER_MS)

enum { ACCT_IDLE, ACCT_BUSY, ACCT_BP };

const char *ck_task_state_name(ck_task_state s)
{
    switch (s) {
    case CK_TASK_CREATED:
        return "CREATED";
    case CK_TASK_RESTORING:
        return "RESTORING";
    case CK_TASK_RUNNING:
        return "RUNNING";
    case CK_TASK_ENDING:
        return "ENDING";
    case CK_TASK_ENDED:
        return "ENDED";
    case CK_TASK_FINISHED:
        return "FINISHED";
    case CK_TASK_FAILED:
        return "FAILED";
    }
    return "?";
}

const char *ck_fail_name(uint32_t code)
{
    switch (code) {
    case CK_FAIL_TASK:
        return "task";
    case CK_FAIL_RESTORE_DAMAGED:
        return "damaged";
    case CK_FAIL_PEER:
        return "peer";
    case CK_FAIL_RESTORE_MISSING:
        return "missing";
    case CK_FAIL_RESTORE_UNREADABLE:
        return "unreadable";
    case CK_FAIL_RESTORE_IO:
        return "io";
    }
    return "?";
}

static int source_init(ck_task *t)
{
    const ck_topic *tp = t->env->topic;
    const ck_vertex *v = &t->g->v[t->vertex];
    int total = tp->ops->npartitions(tp->ctx);
    t->parts = calloc((size_t)total + 1, sizeof(int));
    t->off = calloc((size_t)total + 1, sizeof(int64_t));
    t->end = calloc((size_t)total + 1, sizeof(int64_t));
    t->maxts = calloc((size_t)total + 1, sizeof(int64_t));
    if (!t->parts || !t->off || !t->end || !t->maxts)
        return CK_ENOMEM;
    for (int p = 0; p < total; p++) {
        if (ck_topic_owner(tp->name, p, v->parallelism) != t->subtask)
            continue;
        int k = t->nparts++;
        t->parts[k] = p;
        t->end[k] = tp->ops->size(tp->ctx, p);
        t->maxts[k] = CK_WM_MIN;
    }
    t->ooo_ms = t->g->spec.ops[v->ops[0]].ooo_ms;
    t->wm_interval = ck_cfg(t->env->cfg, CK_CFG_AUTO_WATERMARK_INTERVAL);
    t->next_wm = t->wm_interval;
    t->src_wm = CK_WM_MIN;
    return CK_OK;
}

/* Reserves in the host's pool what the task's partitions and gate may
 * hold: a partition's share and its overdraft, a gate's exclusive buffers
 * and floating ones. What does not fit fails the task when it starts, as
 * Flink's "Insufficient number of network buffers" does. */
static void reserve_network(ck_task *t)
{
    uint64_t need = 0;
    for (int i = 0; i < t->nrps; i++)
        need += (uint64_t)t->rps[i].rp.pool_size + t->rps[i].rp.max_overdraft;
    if (t->has_gate)
        need += (uint64_t)t->gate.nchan * t->gate.exclusive + t->gate.floating;
    ck_segpool *p = t->netpool;
    if (need <= UINT32_MAX && ck_segpool_reserve(p, (uint32_t)need) == CK_OK) {
        t->net_reserved = (uint32_t)need;
        return;
    }
    const ck_vertex *v = &t->g->v[t->vertex];
    snprintf(t->setup_err, sizeof(t->setup_err),
             "%s (%d/%d): insufficient number of network buffers: required %llu, "
             "only %u of %u free (taskmanager.memory.network.*)",
             v->name, t->subtask + 1, v->parallelism, (unsigned long long)need,
             p->total - p->reserved, p->total);
}

/* Gives the task's reservation back (cancelled or deleted). */
static void release_network(ck_task *t)
{
    ck_segpool_unreserve(t->netpool, t->net_reserved);
    t->net_reserved = 0;
}

/* The records a step may take when one costs f flops and w ns of sinks'
 * writes: counted against every operator of the chain (a filter's dropped
 * records would cost less), so that a record needs no check of its own;
 * one at least. */
static int step_records(const ck_task *t, double f, double w)
{
    double per = (double)INT_MAX;
    if (f > 0)
        per = CK_MIN(per, t->step_flops / f);
    if (w > 0)
        per = CK_MIN(per, (double)t->step_wait / w);
    return per < 1 ? 1 : (int)per;
}

/* A step starts at time now: what it may take (a slowed operator's records
 * cost its factor more then). */
static void step_begin(ck_task *t, ck_time now)
{
    t->step_left = t->step_records;
    if (t->chain.nslow > 0) {
        double w, f = ck_chain_record_cost(&t->chain, now, &w);
        t->step_left = step_records(t, f, w);
    }
}

ck_task *ck_task_new(const ck_job_env *env, ck_platform *plat, uint32_t global,
                     uint32_t attempt, const ck_restore_point *from)
{
    const ck_graph *g = env->g;
    if (global >= g->nsubtasks)
        return NULL;
    ck_task *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->plat = plat;
    t->env = env;
    t->g = g;
    t->global = global;
    t->attempt = attempt;
    if (from && from->id) {
        t->from = *from;
        t->from.handles = NULL;
        t->restore_cp = from->id;
        if (from->handles && ck_handles_copy(&t->restore, from->handles)) {
            free(t);
            return NULL;
        }
        t->from.takes = NULL;
        t->from.chunks = NULL;
        if (from->takes && from->handles) {
            t->rtakes = malloc((from->handles->n + 1) * sizeof(*t->rtakes));
            t->rchunks = malloc((from->nchunks + 1) * sizeof(*t->rchunks));
            if (!t->rtakes || !t->rchunks) {
                free(t->rtakes);
                free(t->rchunks);
                ck_handles_free(&t->restore);
                free(t);
                return NULL;
            }
            memcpy(t->rtakes, from->takes, from->handles->n * sizeof(*t->rtakes));
            if (from->nchunks)
                memcpy(t->rchunks, from->chunks, from->nchunks * sizeof(*t->rchunks));
            t->nrchunks = from->nchunks;
        }
    }
    t->first_out_ns = -1;
    t->next_report = CK_TIME_NEVER;
    ck_graph_locate(g, global, &t->vertex, &t->subtask);
    const ck_vertex *v = &g->v[t->vertex];
    const ck_config *cfg = env->cfg;
    /* Flink's execution.buffer-timeout.enabled false: flush only when full. */
    t->buffer_timeout = ck_cfg(cfg, CK_CFG_BUFFER_TIMEOUT_ENABLED)
                            ? ck_cfg(cfg, CK_CFG_BUFFER_TIMEOUT)
                            : -CK_NS_PER_MS;
    t->next_flush = CK_TIME_NEVER;
    t->met.task.vertex = (uint32_t)t->vertex;
    t->met.task.subtask = (uint32_t)t->subtask;
    t->met.task.host = (uint32_t)plat->host;

    ck_rp_config rc = {
        .segment_size = (uint32_t)ck_cfg(cfg, CK_CFG_SEGMENT_SIZE),
        .buffers_per_channel = (uint32_t)ck_cfg(cfg, CK_CFG_BUFFERS_PER_CHANNEL),
        .floating_per_gate = (uint32_t)ck_cfg(cfg, CK_CFG_FLOATING_PER_GATE),
        .max_per_channel = (uint32_t)ck_cfg(cfg, CK_CFG_MAX_PER_CHANNEL),
        .max_overdraft = (uint32_t)ck_cfg(cfg, CK_CFG_MAX_OVERDRAFT),
    };
    t->netpool = plat->netpool;
    if (!t->netpool) {
        ck_segpool_init(&t->own_pool, rc.segment_size, UINT32_MAX);
        t->netpool = &t->own_pool;
    }
    rc.pool = t->netpool;
    /* The platform may make this allocation fail (CK_POINT_DEPLOY), as
     * memory running out would: what was built so far is freed. */
    uint32_t *eps = ck_alloc_fails(plat, CK_POINT_DEPLOY)
                        ? NULL
                        : calloc((size_t)g->nslots, sizeof(uint32_t));
    if (!eps)
        goto fail;
    if (v->nout > 0) {
        t->rps = calloc((size_t)v->nout, sizeof(*t->rps));
        if (!t->rps)
            goto fail;
    }
    /* Forward and rescale edges are pointwise, as Flink's: channels only
     * to the subtasks the edge connects (graph.h); the others join every
     * pair. */
    for (int i = 0; i < v->nout; i++) {
        const ck_edge *e = &g->e[v->out_edges[i]];
        const ck_vertex *dv = &g->v[e->dst_v];
        int first, n;
        ck_graph_edge_outputs(g, e, t->subtask, &first, &n);
        for (int s = 0; s < n; s++)
            eps[s] = ck_graph_endpoint(g, attempt, dv->id, first + s);
        t->rps[i].edge = e;
        if (ck_rp_init(&t->rps[i].rp, plat, (uint16_t)e->id, (uint32_t)t->subtask, n, eps, &rc))
            goto fail;
        t->rps[i].rp.first = (uint32_t)first;
        /* Round robin starts at a channel of its own per producer (Flink's
         * RebalancePartitioner draws it at random). */
        t->rps[i].rr = e->ship == CK_SHIP_REBALANCE ? t->subtask % n : 0;
        t->rps[i].rp.epoch = attempt;
        t->nrps++;
        if (e->ship == CK_SHIP_HASH) {
            int maxp = e->dst_max_parallelism;
            t->rps[i].kg_sub = malloc((size_t)maxp * sizeof(uint16_t));
            if (!t->rps[i].kg_sub)
                goto fail;
            for (int kg = 0; kg < maxp; kg++)
                t->rps[i].kg_sub[kg] = (uint16_t)ck_kg_subtask(kg, e->dst_parallelism, maxp);
        }
    }
    if (v->in_edge >= 0) {
        const ck_edge *e = &g->e[v->in_edge];
        const ck_vertex *sv = &g->v[e->src_v];
        int first, n;
        ck_graph_edge_inputs(g, e, t->subtask, &first, &n);
        for (int s = 0; s < n; s++)
            eps[s] = ck_graph_endpoint(g, attempt, sv->id, first + s);
        if (ck_gate_init(&t->gate, plat, (uint16_t)e->id, (uint32_t)t->subtask, n, eps,
                         rc.buffers_per_channel, rc.floating_per_gate))
            goto fail;
        t->gate.first = (uint32_t)first;
        t->gate.pool = t->netpool;
        t->has_gate = 1;
        t->gate.epoch = attempt;
        ck_gate_set_exactly_once(&t->gate,
                                 ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE);
        /* EVENT barriers only where unaligned checkpoints may send them. */
        t->gate.uc_edge = task_unaligned_edge(e) && ck_cfg(cfg, CK_CFG_CP_UNALIGNED) &&
                          ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE;
        if (ck_cfg(cfg, CK_CFG_DEBLOAT)) {
            t->debloat = 1;
            t->dbl_period = ck_cfg(cfg, CK_CFG_DEBLOAT_PERIOD);
            ck_debloat_init(&t->dbl, rc.segment_size,
                            (uint32_t)ck_cfg(cfg, CK_CFG_MIN_SEGMENT_SIZE),
                            ck_cfg(cfg, CK_CFG_DEBLOAT_TARGET),
                            (uint32_t)ck_cfg(cfg, CK_CFG_DEBLOAT_SAMPLES),
                            (uint32_t)ck_cfg(cfg, CK_CFG_DEBLOAT_THRESHOLD));
        }
    }
    reserve_network(t);
    t->incremental = (int)ck_cfg(cfg, CK_CFG_CP_INCREMENTAL);
    t->inline_below = (uint64_t)ck_cfg(cfg, CK_CFG_CP_MEMORY_THRESHOLD);
    if (ck_cfg(cfg, CK_CFG_CP_FILE_MERGING)) {
        t->merge_max = (uint64_t)ck_cfg(cfg, CK_CFG_CP_FILE_MERGING_MAX);
        t->across = ck_cfg(cfg, CK_CFG_CP_FILE_MERGING_ACROSS) && plat->ops->store_append;
    }
    ck_chain_state cst = {.type = (int)ck_cfg(cfg, CK_CFG_STATE_BACKEND),
                          .write_buffer = (uint64_t)ck_cfg(cfg, CK_CFG_ROCKS_WRITEBUFFER),
                          .target_file = (uint64_t)ck_cfg(cfg, CK_CFG_ROCKS_TARGET_FILE),
                          .level_base = (uint64_t)ck_cfg(cfg, CK_CFG_ROCKS_LEVEL_BASE),
                          .rescale = {.ingest = (int)ck_cfg(cfg, CK_CFG_ROCKS_INGEST_RESTORE),
                                      .delete_files = (int)ck_cfg(cfg, CK_CFG_ROCKS_DELETE_FILES),
                                      .overlap = (double)ck_cfg(cfg, CK_CFG_ROCKS_OVERLAP) / 1000.0,
                                      .copy = (int)ck_cfg(cfg, CK_CFG_ROCKS_FULL_COPY)},
                          .plat = plat,
                          .attempt = attempt,
                          .changelog = (int)ck_cfg(cfg, CK_CFG_CLOG_ENABLED)};
    char why[300] = "";
    int crc = ck_chain_init(&t->chain, g, t->vertex, t->subtask, t->rps, t->nrps, &cst, why,
                            sizeof(why));
    if (crc && why[0]) {
        /* A backend that cannot open fails the task at its start, as
         * Flink's does when its state backend cannot be built; the restart
         * strategy decides what next. */
        snprintf(t->setup_err, sizeof(t->setup_err), "cannot open the state backend: %s", why);
        crc = ck_chain_init(&t->chain, g, t->vertex, t->subtask, t->rps, t->nrps, NULL, why,
                            sizeof(why));
    }
    if (crc)
        goto fail;
    t->chain.slow = env->slowdowns;
    t->chain.nslow = env->nslowdowns;
    for (int k = 0; k < t->chain.nops; k++)
        if (t->chain.ops[k].clog)
            t->clogs[t->nclogs++] = (struct task_clog){.k = k, .log = t->chain.ops[k].clog};
    t->clog_interval = ck_cfg(cfg, CK_CFG_CLOG_MATERIALIZE_ENABLED)
                           ? ck_cfg(cfg, CK_CFG_CLOG_MATERIALIZE)
                           : -1;
    t->clog_max_failures = (int)ck_cfg(cfg, CK_CFG_CLOG_MAX_FAILURES);
    t->clog_threshold = (uint64_t)ck_cfg(cfg, CK_CFG_CLOG_PERSIST_THRESHOLD);
    t->next_mat = CK_TIME_NEVER;
    if (g->spec.ops[v->ops[0]].kind == CK_OP_SOURCE) {
        t->is_source = 1;
        if (source_init(t))
            goto fail;
    }
    {
        int prompt = t->is_source || (t->has_gate && t->gate.uc_edge);
        t->step_flops = prompt ? STEP_FLOPS : BATCH_FLOPS;
        t->step_wait = prompt ? STEP_WAIT : BATCH_WAIT;
        double w;
        double f = ck_chain_record_cost(&t->chain, CK_TIME_NEVER, &w); /* no slowdown */
        t->timed = f > 0 || w > 0;
        t->step_records = step_records(t, f, w);
    }
    t->checkpointing = ck_cfg(cfg, CK_CFG_CP_INTERVAL) > 0;
    t->aligned_timeout = ck_cfg(cfg, CK_CFG_CP_ALIGNED_TIMEOUT);
    /* With checkpoints on, in either mode, a subtask whose input ended waits
     * for a checkpoint it takes then (Flink's StreamTask, FLIP-147). */
    t->final_cp = t->checkpointing;
    if (t->checkpointing && ck_cfg(cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE) {
        /* Exactly-once end to end: sinks write in transactions. */
        for (int k = 0; k < t->chain.nops; k++) {
            ck_op *op = &t->chain.ops[k];
            if (op->spec->kind == CK_OP_SINK) {
                op->two_phase = 1;
                op->txn = task_first_txn(t);
                t->has_2pc = 1;
            }
        }
    }
    free(eps);
    return t;
fail:
    free(eps);
    ck_task_del(t);
    return NULL;
}

/* The task will not run again: its reservation and the buffers it holds go
 * back to the host's pool now (as a cancelled Flink task releases its
 * partitions and gates), not when the backend frees it later. */
static void drop_network(ck_task *t)
{
    release_network(t);
    for (int i = 0; i < t->nrps; i++)
        ck_rp_free(&t->rps[i].rp);
    if (t->has_gate)
        ck_gate_free(&t->gate);
}

/* Deletes key from the store; a delete that fails leaves the file there
 * (logged: an orphan, never a failure of the task's). */
void task_store_delete(ck_task *t, const char *key)
{
    int rc = t->plat->ops->store_delete(t->plat, key);
    if (rc && rc != CK_ENOTFOUND)
        ck_logf(t->plat, CK_LOG_WARN, "could not delete %s from the store (%s): left there", key,
                ck_strerror(rc));
}

/* Cancelled: what it uploaded that no acknowledgement of its named goes
 * from the store, as Flink's cancelled snapshot discards its state: the
 * files of snapshots still uploading, changelog segments after the last
 * acknowledged one, materializations no snapshot referred to. (An upload
 * still on its way is the platform's to drop when it lands.) */
static void discard_unacknowledged(ck_task *t)
{
    task_snap_discard(t);
    task_mfile_discard(t);
    task_clog_discard(t);
}

void ck_task_cancel(ck_task *t)
{
    if (!t || !t->netpool)
        return;
    if (t->state == CK_TASK_RUNNING || t->state == CK_TASK_ENDING ||
        t->state == CK_TASK_ENDED)
        task_report(t, CK_MSG_METRICS);
    discard_unacknowledged(t);
    /* A redeployment may follow at once: the segments are free for it. */
    drop_network(t);
}

void ck_task_host_down(ck_task *t)
{
    if (t && t->netpool)
        drop_network(t);
}

void ck_task_del(ck_task *t)
{
    if (!t)
        return;
    /* Snapshots and materializations first: their views and native files
     * belong to the state backends the chain frees. */
    task_snap_free(t);
    task_clog_free(t);
    ck_chain_free(&t->chain);
    task_restore_free(t);
    for (int i = 0; i < t->nrps; i++) {
        ck_rp_free(&t->rps[i].rp);
        free(t->rps[i].kg_sub);
    }
    free(t->rps);
    if (t->has_gate)
        ck_gate_free(&t->gate);
    if (t->netpool)
        release_network(t);
    ck_segpool_free(&t->own_pool);
    free(t->parts);
    free(t->off);
    free(t->end);
    free(t->maxts);
    ck_metrics_free(&t->met);
    free(t);
}

ck_task_state ck_task_get_state(const ck_task *t)
{
    return t->state;
}

const ck_metrics *ck_task_metrics(const ck_task *t)
{
    return &t->met;
}

/* ---- time accounting ------------------------------------------------------ */

static void acct(ck_task *t, ck_time now, int mode)
{
    int64_t d = now - t->acct_t;
    if (d > 0) {
        if (t->acct_mode == ACCT_BUSY)
            t->met.task.busy_ns += d;
        else if (t->acct_mode == ACCT_BP)
            t->met.task.backpressured_ns += d;
        else {
            t->met.task.idle_ns += d;
            t->idle_total_ns += d;
        }
        /* Per second too (out of memory: the series misses it, the totals not). */
        CK_IGNORE(ck_metrics_time(&t->met, t->acct_t, now,
                                  t->acct_mode == ACCT_BUSY ? CK_TIME_BUSY
                                  : t->acct_mode == ACCT_BP ? CK_TIME_BACKPRESSURED
                                                            : CK_TIME_IDLE));
    }
    t->acct_t = now;
    t->acct_mode = mode;
}

/* ---- helpers ---------------------------------------------------------------- */

static int outputs_available(const ck_task *t)
{
    for (int i = 0; i < t->nrps; i++)
        if (!ck_rp_available(&t->rps[i].rp))
            return 0;
    return 1;
}

static int outputs_pending(const ck_task *t)
{
    for (int i = 0; i < t->nrps; i++)
        for (int s = 0; s < t->rps[i].rp.nsub; s++) {
            const ck_buf *b = t->rps[i].rp.subs[s].cur;
            if (b && b->len > 0)
                return 1;
        }
    return 0;
}

void task_flush_all(ck_task *t)
{
    for (int i = 0; i < t->nrps; i++)
        ck_rp_flush(&t->rps[i].rp);
    t->next_flush = CK_TIME_NEVER;
}

void task_send_all(ck_task *t)
{
    for (int i = 0; i < t->nrps; i++)
        ck_rp_send(&t->rps[i].rp);
    if (t->has_gate)
        ck_gate_announce(&t->gate);
}

static ck_time next_tick(const ck_task *t, ck_time at);

/* Output was written: flush now (timeout 0) or at the output flusher's next round. */
static void arm_flush(ck_task *t)
{
    if (t->buffer_timeout == 0)
        task_flush_all(t);
    else if (t->buffer_timeout > 0 && t->next_flush == CK_TIME_NEVER && outputs_pending(t))
        t->next_flush = next_tick(t, ck_now(t->plat));
}

/* Tells the platform of the state backends' work a fault may wait for
 * (bits of CK_NOTE_*). */
void task_state_notes(ck_task *t, int notes)
{
    for (int k = CK_NOTE_STATE_FLUSH; k <= CK_NOTE_CHANGELOG_UPLOAD && t->plat->ops->note; k++)
        if (notes & (1 << k))
            t->plat->ops->note(t->plat, k);
}

/* Charges the batch's CPU and publishes what the sinks staged. */
int task_finish_batch(ck_task *t)
{
    ck_chain *c = &t->chain;
    ck_time wait;
    double flops = ck_chain_take_flops(c, ck_now(t->plat), &wait);
    if (flops > 0)
        t->plat->ops->cpu(t->plat, flops);
    uint64_t disk;
    int notes;
    double bg = ck_chain_take_background(c, &disk, &notes);
    if (bg > 0 || disk > 0) /* RocksDB's flush and compaction threads */
        t->plat->ops->background(t->plat, ck_now(t->plat), bg, disk, STATE_WORK_TOKEN);
    task_state_notes(t, notes);
    for (int i = 0; i < t->nclogs; i++) /* the changelog goes out preemptively */
        if (t->clogs[i].log->buf.len >= t->clog_threshold) {
            int rc = task_clog_persist(t, &t->clogs[i]);
            if (rc)
                return rc;
        }
    if (wait > 0)
        t->plat->ops->wait(t->plat, wait); /* the sinks' external systems */
    for (int k = 0; k < c->nops; k++) {
        ck_op *sink = &c->ops[k];
        if (sink->n_ingest == 0)
            continue;
        ck_time now = ck_now(t->plat);
        int rc = t->plat->ops->output(t->plat, sink->sink_id, sink->txn, sink->out,
                                      sink->out_len);
        if (rc)
            return rc;
        /* Without two-phase commit the output is visible now; with it, at commit. */
        rc = sink->two_phase ? ck_sink_txn_add(sink, sink->ingest, sink->n_ingest)
                             : ck_metrics_out_batch(&t->met, now, sink->ingest, sink->n_ingest);
        if (!sink->two_phase && t->first_out_ns < 0)
            t->first_out_ns = now;
        if (rc)
            return rc;
        ck_op_clear_output(sink);
    }
    arm_flush(t);
    return CK_OK;
}

/* Sends a message of this attempt to the job manager (lost when out of memory). */
void task_to_jm(ck_task *t, int type, const uint8_t *body, size_t len)
{
    size_t n;
    uint8_t *m = ck_wire_msg(type, t->global, CK_EP_JM, t->attempt, body, len, &n);
    if (m) /* dropped: the job manager is gone, or see platform.h */
        CK_IGNORE(t->plat->ops->send(t->plat, CK_EP_JM, m, n));
}

/* The TASK_FAILED message of subtask `global` of `attempt` (task.h). */
static void send_failed(ck_platform *plat, uint32_t global, uint32_t attempt, uint32_t code,
                        uint64_t cp, const char *key, const char *msg)
{
    size_t ml = strlen(msg), kl = key ? strlen(key) : 0, n;
    uint8_t body[CK_FAIL_BODY_MIN + CK_HANDLE_KEY_MAX + 300];
    if (ml > 300)
        ml = 300;
    if (kl > CK_HANDLE_KEY_MAX)
        kl = CK_HANDLE_KEY_MAX;
    ck_put_u32(body, code);
    ck_put_u64(body + 4, cp);
    ck_put_u16(body + 12, (uint16_t)kl);
    if (kl)
        memcpy(body + CK_FAIL_BODY_MIN, key, kl);
    memcpy(body + CK_FAIL_BODY_MIN + kl, msg, ml);
    uint8_t *m = ck_wire_msg(CK_MSG_TASK_FAILED, global, CK_EP_JM, attempt, body,
                             CK_FAIL_BODY_MIN + kl + ml, &n);
    if (m) /* dropped: the job manager is gone, or see platform.h */
        CK_IGNORE(plat->ops->send(plat, CK_EP_JM, m, n));
}

void ck_task_deploy_failed(const ck_job_env *env, ck_platform *plat, uint32_t global,
                           uint32_t attempt)
{
    int v, i;
    if (global >= env->g->nsubtasks)
        return;
    ck_graph_locate(env->g, global, &v, &i);
    char msg[300];
    snprintf(msg, sizeof(msg), "%s (%d/%d): could not be deployed: %s", env->g->v[v].name,
             i + 1, env->g->v[v].parallelism, ck_strerror(CK_ENOMEM));
    ck_logf(plat, CK_LOG_ERROR, "%s", msg);
    send_failed(plat, global, attempt, CK_FAIL_TASK, 0, NULL, msg);
}

/* Fails the task and tells the job manager why (code CK_FAIL_*, and for a
 * restore the checkpoint and the file, key, whose restore failed). */
void task_fail_with(ck_task *t, uint32_t code, uint64_t cp, const char *key, const char *msg)
{
    if (t->state == CK_TASK_FAILED || t->state == CK_TASK_FINISHED)
        return;
    ck_logf(t->plat, CK_LOG_ERROR, "%s", msg);
    ck_task_state was = t->state;
    t->state = CK_TASK_FAILED;
    /* What it read since its last report counts (records_in of every
     * attempt); an error while reporting ends here, the task failed. */
    if (was == CK_TASK_RUNNING || was == CK_TASK_ENDING || was == CK_TASK_ENDED)
        task_report(t, CK_MSG_METRICS);
    send_failed(t->plat, t->global, t->attempt, code, cp, key, msg);
}

void task_fail(ck_task *t, int rc, const char *what)
{
    char msg[300];
    const ck_vertex *v = &t->g->v[t->vertex];
    snprintf(msg, sizeof(msg), "%s (%d/%d): %s: %s", v->name, t->subtask + 1, v->parallelism,
             what, ck_strerror(rc));
    task_fail_with(t, CK_FAIL_TASK, 0, NULL, msg);
}

/* Input is over: close every output with END_OF_PARTITION. */
static int end_input(ck_task *t)
{
    int rc;
    /* Exactly once, sinks commit with the final checkpoint the job manager
     * takes once every subtask ended; otherwise there is nothing to wait for. */
    if (!t->final_cp && (rc = task_snap_commit_upto(t, UINT64_MAX)))
        return rc;
    ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
    for (int i = 0; i < t->nrps; i++)
        if ((rc = ck_rp_broadcast(&t->rps[i].rp, &eop)))
            return rc;
    t->state = CK_TASK_ENDING;
    return CK_OK;
}

static int64_t source_lag(const ck_task *t, ck_time now, int64_t *lag_ns);

/*
 * Sends the job manager what the task measured since its last report
 * (METRICS), or the last of it (TASK_FINISHED). Counters are sent as
 * increments, so that a crash loses at most one reporting interval.
 */
static void sample_gauges(ck_task *t, ck_time now);

void task_report(ck_task *t, int type)
{
    ck_time now = ck_now(t->plat);
    acct(t, now, t->acct_mode);
    sample_gauges(t, now);
    ck_task_stats *st = &t->met.task;
    uint64_t out = t->chain.records_out, late = t->chain.late_dropped;
    uint64_t bo = 0, bfo = 0, bi = 0, bfi = 0;
    for (int i = 0; i < t->nrps; i++) {
        bo += t->rps[i].rp.bytes_out;
        for (int s = 0; s < t->rps[i].rp.nsub; s++)
            bfo += t->rps[i].rp.subs[s].bufs_sent;
    }
    if (t->has_gate) {
        bi = t->gate.bytes_in;
        for (int c = 0; c < t->gate.nchan; c++)
            bfi += t->gate.chans[c].bufs_in;
    }
    st->records_out = out - t->reported.records_out;
    st->late_dropped = late - t->reported.late;
    st->bytes_out = bo - t->reported.bytes_out;
    st->buffers_out = bfo - t->reported.bufs_out;
    st->bytes_in = bi - t->reported.bytes_in;
    st->buffers_in = bfi - t->reported.bufs_in;
    st->end_ns = now;
    st->lag_records = t->is_source ? source_lag(t, now, &st->lag_ns) : 0;
    st->first_out_ns = t->first_out_ns;
    uint8_t *body;
    size_t n;
    if (ck_metrics_encode(&t->met, &body, &n)) {
        task_fail(t, CK_ENOMEM, "reporting metrics");
        return;
    }
    size_t mlen;
    uint8_t *m = ck_wire_msg(type, t->global, CK_EP_JM, t->attempt, body, n, &mlen);
    free(body);
    if (!m) {
        task_fail(t, CK_ENOMEM, "reporting metrics");
        return;
    }
    t->reported.records_out = out;
    t->reported.late = late;
    t->reported.bytes_out = bo;
    t->reported.bufs_out = bfo;
    t->reported.bytes_in = bi;
    t->reported.bufs_in = bfi;
    /* What was sent is gone from here: start the next increment. */
    ck_task_stats keep = *st;
    ck_metrics_free(&t->met);
    ck_metrics_init(&t->met);
    t->met.task.vertex = keep.vertex;
    t->met.task.subtask = keep.subtask;
    t->met.task.host = keep.host;
    t->met.task.start_ns = keep.start_ns;
    t->acct_t0 = now;
    if (type == CK_MSG_TASK_FINISHED)
        t->state = CK_TASK_FINISHED;
    t->next_report = now + CK_METRICS_INTERVAL;
    CK_IGNORE(t->plat->ops->send(t->plat, CK_EP_JM, m, mlen)); /* as task_to_jm's */
}

/* Samples the data in flight in the task's input gate and output queues,
 * and its buffer size (out of memory: the series misses the sample). */
static void sample_gauges(ck_task *t, ck_time now)
{
    int64_t in = t->has_gate ? (int64_t)t->gate.held_bytes : 0, out = 0;
    for (int i = 0; i < t->nrps; i++)
        out += (int64_t)ck_rp_inflight(&t->rps[i].rp);
    int64_t bs = t->debloat ? (int64_t)t->dbl.last : 0;
    if (in || out || bs)
        CK_IGNORE(ck_metrics_gauges(&t->met, now, in, out, bs));
}

/* A debloating period ended: each input gate's throughput over the time
 * it was being read, and a new buffer size announced upstream if it
 * changed enough (Flink's StreamTask.debloat, SingleInputGate's
 * triggerDebloating). A subtask has one input gate. */
static int debloat_tick(ck_task *t, ck_time now)
{
    uint64_t read = ck_gate_bytes_consumed(&t->gate);
    t->tput.bytes += read - t->dbl_read; /* read while measured: the gate had data */
    t->dbl_read = read;
    uint64_t tput = ck_tput_calc(&t->tput, now);
    while (t->next_debloat <= now)
        t->next_debloat += t->dbl_period;
    uint32_t size = ck_debloat_update(&t->dbl, tput, ck_gate_buffers_in_use(&t->gate));
    sample_gauges(t, now);
    return size ? ck_gate_announce_size(&t->gate, size) : CK_OK;
}

/* ---- source ----------------------------------------------------------------- */

static int source_has_available(const ck_task *t, ck_time now)
{
    const ck_topic *tp = t->env->topic;
    for (int k = 0; k < t->nparts; k++)
        if (t->off[k] < t->end[k] &&
            tp->ops->append_time(tp->ctx, t->parts[k], t->off[k]) <= now)
            return 1;
    return 0;
}

static int source_done(const ck_task *t)
{
    for (int k = 0; k < t->nparts; k++)
        if (t->off[k] < t->end[k])
            return 0;
    return 1;
}

/* Earliest append time of an unread record, or CK_TIME_NEVER. */
static ck_time source_next_append(const ck_task *t)
{
    const ck_topic *tp = t->env->topic;
    ck_time best = CK_TIME_NEVER;
    for (int k = 0; k < t->nparts; k++) {
        if (t->off[k] >= t->end[k])
            continue;
        ck_time at = tp->ops->append_time(tp->ctx, t->parts[k], t->off[k]);
        if (at < best)
            best = at;
    }
    return best;
}

/* The source's watermark: the least of its open partitions' watermarks. */
static int64_t source_watermark(const ck_task *t)
{
    int64_t wm = CK_WM_MAX;
    for (int k = 0; k < t->nparts; k++) {
        if (t->off[k] >= t->end[k])
            continue;
        int64_t pw = t->maxts[k] == CK_WM_MIN ? CK_WM_MIN : t->maxts[k] - t->ooo_ms - 1;
        if (pw < wm)
            wm = pw;
    }
    return wm;
}

/* Records appended by now and not read yet, and the age of the oldest. */
static int64_t source_lag(const ck_task *t, ck_time now, int64_t *lag_ns)
{
    const ck_topic *tp = t->env->topic;
    int64_t lag = 0;
    ck_time oldest = CK_TIME_NEVER;
    for (int k = 0; k < t->nparts; k++) {
        int64_t lo = t->off[k], hi = t->end[k];
        if (lo >= hi || tp->ops->append_time(tp->ctx, t->parts[k], lo) > now)
            continue;
        ck_time at = tp->ops->append_time(tp->ctx, t->parts[k], lo);
        if (at < oldest)
            oldest = at;
        /* append times are sorted: find the first one after now */
        while (lo + 1 < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (tp->ops->append_time(tp->ctx, t->parts[k], mid) <= now)
                lo = mid;
            else
                hi = mid;
        }
        lag += lo + 1 - t->off[k];
    }
    *lag_ns = oldest == CK_TIME_NEVER ? 0 : now - oldest;
    return lag;
}

static int source_emit_watermark(ck_task *t, int64_t wm)
{
    if (wm <= t->src_wm)
        return CK_OK;
    t->src_wm = wm;
    return ck_chain_watermark(&t->chain, wm);
}

static int mail_waiting(ck_task *t);

/* Reads what the source's partitions hold by now, a slice of each in turn,
 * until SOURCE_BATCH records, backpressure, the step's span (step_records:
 * a trigger waits for the step in progress) or mail ends the step. */
static int source_step(ck_task *t, ck_time now)
{
    const ck_topic *tp = t->env->topic;
    int n = 0, rc;
    int progress = 1;
    acct(t, now, ACCT_BUSY);
    step_begin(t, now);
    while (n < SOURCE_BATCH && progress && outputs_available(t) && t->step_left > 0 &&
           !(n && mail_waiting(t))) {
        progress = 0;
        for (int i = 0; i < t->nparts && n < SOURCE_BATCH; i++) {
            int k = (t->rr + i) % t->nparts;
            int p = t->parts[k];
            /* Up to a slice of what the partition holds by now, read in runs. */
            int64_t end = ck_topic_readable(tp, p, t->off[k],
                                            CK_MIN(t->end[k], t->off[k] + SOURCE_SLICE), now);
            while (t->off[k] < end && outputs_available(t) && t->step_left > 0) {
                ck_rec run[SOURCE_RUN];
                int m = (int)CK_MIN((int64_t)CK_MIN(SOURCE_RUN, t->step_left), end - t->off[k]);
                ck_topic_read_n(tp, p, t->off[k], m, run);
                for (int j = 0; j < m; j++) {
                    ck_rec *r = &run[j];
                    r->hashed = 0;
                    r->prov = ck_prov_of(p, t->off[k]);
                    t->off[k]++;
                    if (r->ts > t->maxts[k])
                        t->maxts[k] = r->ts;
                    if ((rc = ck_chain_record(&t->chain, r)))
                        return rc;
                    n++;
                    t->step_left--;
                    progress = 1;
                    if (!outputs_available(t))
                        break; /* backpressure: the rest of the run is read again later */
                }
            }
        }
        if (t->nparts)
            t->rr = (t->rr + 1) % t->nparts;
    }
    if (n > 0) {
        t->met.task.records_in += (uint64_t)n;
        if ((rc = ck_metrics_in(&t->met, now, (uint64_t)n)))
            return rc;
    }
    if (source_done(t) && t->state == CK_TASK_RUNNING) {
        /* A bounded source ends with the maximum watermark, as in Flink. */
        if ((rc = source_emit_watermark(t, CK_WM_MAX)))
            return rc;
        if ((rc = task_finish_batch(t)))
            return rc;
        return end_input(t);
    }
    if ((rc = task_finish_batch(t)))
        return rc;
    return n > 0 ? 1 : 0;
}

/* ---- input ------------------------------------------------------------------ */

/* The records processed in this step took the time a step may take. */
static int batch_full(const ck_task *t)
{
    return t->timed && (ck_chain_pending_flops(&t->chain) >= t->step_flops ||
                        ck_chain_pending_wait(&t->chain) >= t->step_wait);
}

/*
 * Processes the run of records lying whole in the buffer being read, if
 * there is one: returns how many (0: none), or an error. A keyed head
 * operator's state is located for the whole run first and prefetched
 * INPUT_AHEAD records ahead of the one being processed: the state lookup
 * is a record's cache miss, and this way it overlaps the records before.
 */
static int input_run(ck_task *t)
{
    ck_rec run[INPUT_RUN];
    size_t ends[INPUT_RUN];
    ck_keyloc loc[INPUT_RUN];
    int m = ck_gate_run(&t->gate, run, ends, CK_MIN(INPUT_RUN, t->step_left));
    if (m == 0)
        return 0;
    int keyed = ck_chain_keyed(&t->chain), done = 0, rc = CK_OK;
    if (keyed) {
        for (int i = 0; i < m; i++)
            loc[i] = ck_chain_locate(&t->chain, &run[i]);
        for (int i = 0; i < m && i < INPUT_AHEAD; i++)
            ck_chain_prefetch(&t->chain, &loc[i]);
    }
    /* The caller saw outputs available for the first record. */
    while (done < m && (done == 0 || outputs_available(t))) {
        if (keyed) {
            if (done + INPUT_AHEAD < m)
                ck_chain_prefetch(&t->chain, &loc[done + INPUT_AHEAD]);
            rc = ck_chain_record_at(&t->chain, &run[done], &loc[done]);
        } else {
            rc = ck_chain_record(&t->chain, &run[done]);
        }
        done++;
        if (rc)
            break;
    }
    t->met.task.records_in += (uint64_t)done;
    t->step_left -= done;
    ck_gate_take(&t->gate, ends[done - 1]);
    return rc ? rc : done;
}

/* The platform's ck_platform_ops.mail_waiting (optional). */
static int mail_waiting(ck_task *t)
{
    return t->plat->ops->mail_waiting && t->plat->ops->mail_waiting(t->plat);
}

static int input_step(ck_task *t, ck_time now)
{
    int rc, released = 0;
    ck_elem e;
    acct(t, now, ACCT_BUSY);
    if (t->debloat && ck_gate_has_data(&t->gate))
        ck_tput_resume(&t->tput, now); /* the gate is read again */
    /* The step also ends once its time passed step_wait: over sockets the
     * clock is real and the records' work is not charged as flops, so a
     * full gate would otherwise keep the task from its mailbox (a landed
     * upload, a barrier) until the gate ran dry; under SimGrid the clock
     * stands still within a step (its CPU is charged at the step's end),
     * and this never binds. It ends sooner when the platform says that
     * mail waits (a landed upload, over sockets): between two runs of
     * records, as Flink's task looks at its mailbox, and after one run at
     * least, so that the records move whatever the mail. bench_state: an
     * incremental checkpoint's acknowledgement followed its last upload by
     * 1 to 3 ms, and then by under 0.5 ms. */
    step_begin(t, now);
    for (int turn = 0; !released && outputs_available(t) && t->step_left > 0 && !batch_full(t) &&
                       ck_now(t->plat) - now < t->step_wait && !(turn && mail_waiting(t));
         turn++) {
        if ((rc = input_run(t)) < 0)
            return rc;
        if (rc > 0)
            continue;
        rc = ck_gate_next(&t->gate, &e, &released);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
        switch (e.tag) {
        case CK_EL_RECORD:
            t->met.task.records_in++;
            t->step_left--;
            rc = ck_chain_record(&t->chain, &e.u.rec);
            break;
        case CK_EL_WATERMARK:
            rc = ck_chain_watermark(&t->chain, e.u.wm);
            break;
        case CK_EL_END_OF_PARTITION:
            if ((rc = task_finish_batch(t)))
                return rc;
            if ((rc = task_snap_uc_poll(t))) /* the last channel's end completes channel state */
                return rc;
            return end_input(t);
        case CK_EL_BARRIER:
            /* Aligned: what came before the barrier is processed and published. */
            if ((rc = task_finish_batch(t)))
                return rc;
            if ((rc = task_snap_take(t, &e.u.barrier, t->gate.last_align_ns)))
                return rc;
            released = 1; /* send the barrier on its way before reading on */
            break;
        case CK_EL_CANCEL:
            if ((rc = task_finish_batch(t)))
                return rc;
            rc = task_snap_decline(t, e.u.barrier.id, CK_DECLINE_CANCELLED,
                                   "declined upstream (cancel marker)");
            released = 1;
            break;
        }
        if (rc)
            return rc;
        if (t->gate.abandoned) {
            uint64_t old = t->gate.abandoned;
            t->gate.abandoned = 0;
            if ((rc = task_snap_decline(t, old, CK_DECLINE_SUBSUMED,
                                        "a newer barrier overtook its alignment")))
                return rc;
        }
    }
    if ((rc = task_finish_batch(t)))
        return rc;
    /* a channel that ended completed the state, or a marker cut it */
    if ((rc = task_snap_uc_poll(t)))
        return rc;
    return ck_gate_has_data(&t->gate) && outputs_available(t);
}

/* ---- node interface ----------------------------------------------------------- */

static int task_on_message(void *self, uint8_t *msg, size_t len)
{
    ck_task *t = self;
    ck_wire_hdr h;
    int rc = ck_wire_decode(msg, len, &h);
    if (rc) {
        free(msg);
        task_fail(t, rc, "malformed message");
        return rc;
    }
    if (t->state == CK_TASK_FAILED || t->state == CK_TASK_FINISHED) {
        free(msg);
        return CK_OK;
    }
    switch (h.type) {
    case CK_MSG_DATA:
        if (!t->has_gate || h.edge != t->gate.edge) {
            free(msg);
            rc = CK_EPROTO;
            break;
        }
        rc = ck_gate_on_data(&t->gate, &h, msg);
        break;
    case CK_MSG_EVENT: {
        ck_barrier b;
        if (!t->has_gate || h.edge != t->gate.edge)
            rc = CK_EPROTO;
        else if ((rc = ck_gate_on_event(&t->gate, &h, msg + CK_WIRE_HDR, &b)) == 1)
            rc = task_snap_unaligned(t, &b);
        if (rc == CK_OK)
            rc = task_snap_uc_poll(t);
        free(msg);
        break;
    }
    case CK_MSG_CP_TRIGGER:
    case CK_MSG_CP_COMPLETE:
    case CK_MSG_CP_ABORT:
        rc = task_snap_on_message(t, &h, msg + CK_WIRE_HDR);
        free(msg);
        break;
    case CK_MSG_CREDIT:
    case CK_MSG_BUFFER_SIZE:
        free(msg);
        rc = CK_EPROTO;
        for (int i = 0; i < t->nrps; i++) {
            if (t->rps[i].edge->id == h.edge && h.src == (uint32_t)t->subtask) {
                rc = h.type == CK_MSG_CREDIT
                         ? ck_rp_on_credit(&t->rps[i].rp, (int)h.dst, h.arg)
                         : ck_rp_set_buffer_size(&t->rps[i].rp, (int)h.dst, h.arg);
                break;
            }
        }
        break;
    default:
        free(msg);
        rc = CK_EPROTO;
    }
    if (rc)
        task_fail(t, rc, "handling a message");
    return rc;
}

static int task_on_complete(void *self, uint64_t token, int status, uint8_t *data,
                            size_t len)
{
    ck_task *t = self;
    if (token == RESTORE_LOAD_TOKEN) {
        if (t->state == CK_TASK_RESTORING)
            task_started(t);
    } else if (token == RESTORE_TOKEN && t->state == CK_TASK_RESTORING) {
        if (task_restore_done(t, status, data, len))
            return CK_OK; /* kept */
    } else if (token != RESTORE_TOKEN && (token & CLOG_TOKEN)) {
        if (t->state != CK_TASK_FAILED)
            task_clog_on_upload(t, token, status, data, len);
    } else if (token != STATE_WORK_TOKEN && t->state != CK_TASK_FAILED) {
        if (token & FILE_TOKEN)
            token = task_snap_file_landed(t, token, &status, data, len);
        task_snap_progress(t, token, status);
    }
    free(data);
    return CK_OK;
}

static int task_on_peer_lost(void *self, int host)
{
    ck_task *t = self;
    host &= ~CK_PEER_REFUSED; /* its channels fail either way */
    char what[80];
    snprintf(what, sizeof(what), "lost the connection to task manager tm%d", host);
    char msg[300];
    const ck_vertex *v = &t->g->v[t->vertex];
    snprintf(msg, sizeof(msg), "%s (%d/%d): %s", v->name, t->subtask + 1, v->parallelism, what);
    task_fail_with(t, CK_FAIL_PEER, (uint64_t)(int64_t)host, NULL, msg);
    return CK_OK;
}

/* The first flush tick at or after time at. */
static ck_time next_tick(const ck_task *t, ck_time at)
{
    ck_time T = t->buffer_timeout;
    if (at <= t->tick0)
        return t->tick0;
    ck_time k = (at - t->tick0 + T - 1) / T;
    return t->tick0 + k * T;
}

static ck_time task_deadline(void *self)
{
    ck_task *t = self;
    if (t->state != CK_TASK_RUNNING && t->state != CK_TASK_ENDING)
        return CK_TIME_NEVER;
    ck_time d = CK_MIN(t->next_flush, t->next_report);
    if (t->debloat && t->state == CK_TASK_RUNNING && t->next_debloat < d)
        d = t->next_debloat;
    d = CK_MIN(d, task_snap_timeout_deadline(t));
    if (t->state == CK_TASK_RUNNING)
        d = CK_MIN(d, t->next_mat);
    if (t->is_source && t->state == CK_TASK_RUNNING && !t->stop_id) {
        /* Wake for the next record only when none is waiting: a waiting
         * record that cannot be read is held back by credit, and credit
         * arrives as a message. */
        ck_time at = source_next_append(t);
        if (at > ck_now(t->plat) && at < d)
            d = at;
        if (t->wm_interval > 0 && t->next_wm < d)
            d = t->next_wm;
    }
    return d;
}

static int task_on_deadline(void *self)
{
    ck_task *t = self;
    if (t->state != CK_TASK_RUNNING && t->state != CK_TASK_ENDING)
        return CK_OK;
    ck_time now = ck_now(t->plat);
    if (now >= t->next_report) {
        task_report(t, CK_MSG_METRICS);
        if (t->state == CK_TASK_FAILED)
            return CK_OK;
    }
    if (now >= t->next_flush)
        task_flush_all(t);
    if (t->state == CK_TASK_RUNNING && now >= t->next_mat) {
        t->next_mat = now + t->clog_interval;
        for (int i = 0; i < t->nclogs; i++) {
            int rc = t->clogs[i].mat_busy ? CK_OK : task_clog_materialize(t, &t->clogs[i]);
            if (rc) {
                task_fail(t, rc, "materializing keyed state");
                return rc;
            }
        }
    }
    if (t->debloat && t->state == CK_TASK_RUNNING && now >= t->next_debloat) {
        int rc = debloat_tick(t, now);
        if (rc) {
            task_fail(t, rc, "announcing a buffer size");
            return rc;
        }
    }
    if (now >= task_snap_timeout_deadline(t)) {
        int rc = task_snap_timeouts(t, now);
        if (rc) {
            task_fail(t, rc, "turning a checkpoint unaligned");
            return rc;
        }
    }
    if (t->is_source && t->state == CK_TASK_RUNNING && t->wm_interval > 0 && !t->stop_id &&
        now >= t->next_wm) {
        int rc = source_emit_watermark(t, source_watermark(t));
        if (rc) {
            task_fail(t, rc, "emitting a watermark");
            return rc;
        }
        arm_flush(t);
        while (t->next_wm <= now)
            t->next_wm += t->wm_interval;
    }
    task_send_all(t);
    return CK_OK;
}

/* The task's restore is over (its gate read the channel state it
 * restored): it tells the job manager, which may start checkpoints once
 * every restarted subtask did, and starts debloating its input. */
static void report_running(ck_task *t)
{
    ck_time now = ck_now(t->plat);
    t->recovering = 0;
    t->next_debloat = t->debloat ? now + t->dbl_period : CK_TIME_NEVER;
    ck_tput_init(&t->tput);
    t->dbl_read = t->has_gate ? ck_gate_bytes_consumed(&t->gate) : 0;
    /* how its restore went: downloading, loading, reading its channel
     * state, bytes (none: zeros) */
    ck_time start = t->met.task.start_ns;
    uint8_t body[CK_RUNNING_BODY];
    ck_put_u64(body, t->restore_cp ? (uint64_t)(t->restore_dl - t->restore_t0) : 0);
    ck_put_u64(body + 8, t->restore_cp ? (uint64_t)(start - t->restore_dl) : 0);
    ck_put_u64(body + 16, t->restore_bytes);
    ck_put_u64(body + 24, (uint64_t)(now - start));
    /* its keyed operators' rebuilds for a new key-group range (a rescale);
     * a chain's are summed, each under its path */
    uint32_t paths[CK_KS_REBUILD_NPATHS] = {0};
    ck_kstate_rebuild sum = {.path = CK_KS_REBUILD_NONE};
    for (int k = 0; k < t->chain.nops; k++) {
        const ck_kstate *ks = t->chain.ops[k].ks;
        if (ks && ks->work.rebuild.rebuilds) {
            uint8_t one[CK_REBUILD_WIRE];
            ck_kstate_rebuild_put(one, &ks->work.rebuild);
            ck_kstate_rebuild_add_wire(&sum, paths, one);
        }
    }
    ck_kstate_rebuild_put(body + 32, &sum);
    for (int i = 0; i < CK_KS_REBUILD_NPATHS; i++)
        ck_put_u32(body + 32 + 4 * i, paths[i]);
    ck_put_u64(body + 32 + CK_REBUILD_WIRE, t->restore_records);
    task_to_jm(t, CK_MSG_TASK_RUNNING, body, sizeof(body));
}

/* The task runs: start accounting and reporting. It reports running at
 * once, or, with input channel state restored, once its gate read it: as
 * Flink's StreamTask.restoreInternal runs the mailbox until every gate
 * consumed its recovered state (its records processed, their output
 * sent) before the task is RUNNING. */
void task_started(ck_task *t)
{
    ck_time now = ck_now(t->plat);
    t->state = CK_TASK_RUNNING;
    t->met.task.start_ns = now;
    t->acct_t = t->acct_t0 = now;
    t->tick0 = now;
    t->next_wm += now;
    t->next_flush = CK_TIME_NEVER;
    t->next_report = now + CK_METRICS_INTERVAL;
    t->next_debloat = CK_TIME_NEVER;
    /* No materialization with it turned off or a negative interval (Flink's
     * PeriodicMaterializationManager.start) */
    t->next_mat = t->nclogs && t->clog_interval >= 0 ? now + t->clog_interval : CK_TIME_NEVER;
    /* Restored where channel state moved: after the output channel state
     * it restored, before anything new, a recovered marker on each edge
     * (gate.h ck_gate_expect_recovered). */
    if (t->restore_cp && t->from.moved_out) {
        ck_elem e = {.tag = CK_EL_BARRIER,
                     .u.barrier = {.id = t->restore_cp, .flags = CK_BARRIER_RECOVERED}};
        for (int i = 0; i < t->nrps; i++)
            if (task_unaligned_edge(t->rps[i].edge)) {
                if (ck_rp_broadcast(&t->rps[i].rp, &e)) {
                    task_fail(t, CK_ENOMEM, "sending its recovered markers");
                    return;
                }
                ck_rp_flush(&t->rps[i].rp);
            }
    }
    if (t->has_gate && !ck_gate_recovered(&t->gate))
        t->recovering = 1;
    else
        report_running(t);
}

static int task_work(void *self)
{
    ck_task *t = self;
    int rc = 0;
    if (t->state == CK_TASK_CREATED) {
        if (t->setup_err[0]) {
            task_fail_with(t, CK_FAIL_TASK, 0, NULL, t->setup_err);
            return 0;
        }
        if (t->restore_cp) {
            task_restore_start(t);
            return 0;
        }
        task_started(t);
    }
    if (t->state == CK_TASK_RESTORING || t->state == CK_TASK_FAILED)
        return 0;
    ck_time now = ck_now(t->plat);
    /* Credit that arrived since the last call frees output buffers first. */
    task_send_all(t);
    if (t->state == CK_TASK_RUNNING && !(t->is_source && t->stop_id)) {
        int has_input = t->is_source ? source_has_available(t, now)
                                     : (t->has_gate && ck_gate_has_data(&t->gate));
        if (has_input && outputs_available(t)) {
            rc = t->is_source ? source_step(t, now) : input_step(t, now);
            if (rc < 0) {
                task_fail(t, rc, "processing");
                return rc;
            }
        } else if (t->is_source && source_done(t)) {
            rc = source_step(t, now); /* an empty source ends at once */
            if (rc < 0) {
                task_fail(t, rc, "processing");
                return rc;
            }
        }
    }
    /* Its restored channel state is read: it runs (and its gate announces
     * credit below). */
    if (t->recovering && ck_gate_recovered(&t->gate))
        report_running(t);
    task_send_all(t);
    /* A timeoutable barrier left aligned: its snapshot may be complete. */
    if (t->nsnaps && (rc = task_snap_uc_poll(t)) < 0) {
        task_fail(t, rc, "completing a snapshot");
        return rc;
    }
    if (t->state == CK_TASK_ENDING) {
        task_flush_all(t);
        task_send_all(t);
        int drained = 1;
        for (int i = 0; i < t->nrps; i++)
            drained &= ck_rp_drained(&t->rps[i].rp);
        /* Its input is over: waiting for the outputs to drain is waiting
         * for the consumers (backpressure), not work. */
        acct(t, ck_now(t->plat), drained ? ACCT_IDLE : ACCT_BP);
        if (drained && t->final_cp && !t->restored_finished) {
            task_report(t, CK_MSG_TASK_ENDED);
            if (t->state == CK_TASK_ENDING) /* not failed while reporting */
                t->state = CK_TASK_ENDED;
            /* A checkpoint it took while draining completed already. */
            if (t->state == CK_TASK_ENDED && t->ended_snap && t->completed >= t->ended_snap)
                task_report(t, CK_MSG_TASK_FINISHED);
        } else if (drained) {
            task_report(t, CK_MSG_TASK_FINISHED);
        }
        return 0;
    }
    if (t->state != CK_TASK_RUNNING)
        return 0;
    now = ck_now(t->plat);
    int has_input = t->is_source ? !t->stop_id && source_has_available(t, now)
                                 : (t->has_gate && ck_gate_has_data(&t->gate));
    int avail = outputs_available(t);
    /* With input and room for output the task is runnable: the time until
     * it runs again (a batch ended, the core is another's) is busy time,
     * as a Flink task's is, not idle time. */
    acct(t, now, !has_input ? ACCT_IDLE : avail ? ACCT_BUSY : ACCT_BP);
    if (t->debloat && !has_input)
        ck_tput_pause(&t->tput, now); /* its gate is empty: not measured */
    return has_input && avail ? 1 : 0;
}

static int task_finished(void *self)
{
    const ck_task *t = self;
    return t->state == CK_TASK_FINISHED || t->state == CK_TASK_FAILED;
}

static int task_check(const void *self, ck_inv *v)
{
    return ck_task_check(self, v);
}

static const ck_node_ops task_node_ops = {
    .on_message = task_on_message,
    .on_complete = task_on_complete,
    .on_peer_lost = task_on_peer_lost,
    .deadline = task_deadline,
    .on_deadline = task_on_deadline,
    .work = task_work,
    .finished = task_finished,
    .check = task_check,
};

ck_node ck_task_node(ck_task *t)
{
    ck_node n = {&task_node_ops, t};
    return n;
}

/* ---- invariants (task.h) ------------------------------------------------------------- */

static int check_time(const ck_task *t, ck_inv *v)
{
    const ck_task_stats *st = &t->met.task;
    int64_t sum = st->busy_ns + st->backpressured_ns + st->idle_ns;
    CK_INV(v, 2, st->start_ns <= t->acct_t0 && t->acct_t0 <= t->acct_t,
           "started at %lld ns, increment from %lld ns, accounted to %lld ns",
           (long long)st->start_ns, (long long)t->acct_t0, (long long)t->acct_t);
    CK_INV(v, 2, sum == t->acct_t - t->acct_t0,
           "busy %lld + backpressured %lld + idle %lld ns != %lld ns accounted",
           (long long)st->busy_ns, (long long)st->backpressured_ns, (long long)st->idle_ns,
           (long long)(t->acct_t - t->acct_t0));
    int64_t busy = 0, bp = 0, idle = 0;
    for (uint32_t i = 0; i < t->met.nsec; i++) {
        busy += t->met.sec[i].busy_ns;
        bp += t->met.sec[i].bp_ns;
        idle += t->met.sec[i].idle_ns;
    }
    CK_INV(v, 2, busy <= st->busy_ns && bp <= st->backpressured_ns && idle <= st->idle_ns,
           "per second: busy %lld, backpressured %lld, idle %lld ns; totals %lld, %lld, %lld",
           (long long)busy, (long long)bp, (long long)idle, (long long)st->busy_ns,
           (long long)st->backpressured_ns, (long long)st->idle_ns);
    return 0;
}

/* What the task's modules check (3), each under its own name (kstate.h's
 * keyed state too). */
static int check_modules(const ck_task *t, ck_inv *v)
{
    int rc;
    if (t->has_gate && (rc = ck_gate_check(&t->gate, v)))
        return rc;
    for (int i = 0; i < t->nrps; i++)
        if ((rc = ck_rp_check(&t->rps[i].rp, v)))
            return ck_inv_where(v, "output %d", i);
    if (t->debloat && (rc = ck_debloat_check(&t->dbl, v)))
        return rc;
    for (int k = 0; k < t->chain.nops; k++)
        if (t->chain.ops[k].ks && (rc = ck_ks_check(t->chain.ops[k].ks, v)))
            return ck_inv_where(v, "operator %d", k);
    return t->netpool ? ck_segpool_check(t->netpool, v) : 0;
}

static int check_task(const ck_task *t, ck_inv *v)
{
    int rc;
    if (t->state != CK_TASK_CREATED && t->state != CK_TASK_RESTORING &&
        (rc = check_time(t, v)))
        return rc;
    if ((rc = check_modules(t, v)))
        return rc;
    int stopped = t->stop_id && t->completed >= t->stop_id; /* by a stop-with-savepoint */
    if (t->state == CK_TASK_ENDING || t->state == CK_TASK_ENDED ||
        (t->state == CK_TASK_FINISHED && !stopped))
        for (int i = 0; i < t->nrps; i++) {
            const ck_rp *rp = &t->rps[i].rp;
            CK_INV(v, 4, rp->nended == rp->nsub, "%s: output %d: %d of %d subpartitions ended",
                   ck_task_state_name(t->state), i, rp->nended, rp->nsub);
            CK_INV(v, 4, t->state == CK_TASK_ENDING || ck_rp_drained(rp),
                   "%s: output %d not drained", ck_task_state_name(t->state), i);
        }
    if ((rc = task_snap_check(t, v)) || (rc = task_mfile_check(t, v)) ||
        (rc = task_clog_check(t, v)) || (rc = task_restore_check(t, v)))
        return rc;
    return 0;
}

int ck_task_check(const ck_task *t, ck_inv *v)
{
    if (t->state == CK_TASK_FAILED)
        return 0; /* torn down on its way out */
    int rc = check_task(t, v);
    if (rc)
        ck_inv_where(v, "subtask %s %d/%d attempt %u on tm%d", t->g->v[t->vertex].name,
                     t->subtask + 1, t->g->v[t->vertex].parallelism, t->attempt, t->plat->host);
    return rc;
}
