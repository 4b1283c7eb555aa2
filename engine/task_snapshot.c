/*
 * task_snapshot.c - a subtask's snapshots: the synchronous phase at a
 * checkpoint's barrier or trigger, channel state (unaligned checkpoints),
 * the asynchronous phase (serializing; uploading the canonical file and
 * the backends' native files), the acknowledgement, and the job manager's
 * TRIGGER, COMPLETE (sinks commit: two-phase commit) and ABORT.
 *
 * A source snapshots when the job manager triggers it; any other task
 * when its input gate aligned the barrier, at once at the first unaligned
 * barrier (task_snap_unaligned), or when the aligned-checkpoint timeout
 * passes (task_snap_timeouts); a task whose input ended, when triggered,
 * without a barrier (FLIP-147). The synchronous phase (task_snap_take)
 * captures state (the backends' copy-on-write views, timers, source
 * offsets), pre-commits the sinks' transactions, cuts the changelog
 * (task_clog_snapshot) and forwards the barrier, which on hash and
 * rebalance edges may overtake what the outputs queue (it joins the
 * snapshot as channel state). A snapshot (snap_job) then goes:
 *
 *   sync phase --channel state incomplete (the gate still collects it, an
 *       output holds its barrier that may time out)--> SNAP_CHANNELS
 *   sync phase or SNAP_CHANNELS --channel state complete (task_snap_uc_poll):
 *       encoded (snap_start_async)--> SNAP_SERIALIZING (background CPU)
 *   SNAP_SERIALIZING --serialized (task_snap_progress): its files' uploads
 *       asked for (snap_start_uploads; merged: task_mfile_upload)-->
 *       SNAP_UPLOADING
 *   SNAP_UPLOADING --every upload ended and the changelog it refers to in
 *       the store (task_snap_try_finish): ACK (snap_finish_uploads)--> done
 *   SNAP_UPLOADING --an upload failed--> DECLINE, its own files deleted
 *   SNAP_CHANNELS --the gate gave its channel state up (a newer barrier,
 *       a cancel marker)--> DECLINE
 *   sync phase or SNAP_CHANNELS --out of memory encoding it
 *       (snap_async_failed)--> DECLINE
 *   SNAP_CHANNELS or SNAP_SERIALIZING --ABORT--> dropped (snap_drop)
 *   SNAP_UPLOADING --ABORT--> aborted: its own files deleted once its
 *       uploads ended
 *
 * With MAX_SNAPS under way, a checkpoint is declined without a snapshot,
 * and a cancel marker goes downstream (task_snap_decline). An
 * acknowledged snapshot's shared native files are remembered (acked[])
 * until its checkpoint completes: they are then the ones later snapshots
 * refer to instead of uploading them again (confirmed: Flink's uploaded
 * SST files; snap_confirm_shared). COMPLETE commits the sinks'
 * transactions it covers (task_snap_commit_upto) and finishes a task that
 * ended its input before it, or that a stop-with-savepoint stopped.
 *
 * Invariants (task.h's numbers, checked by ck_task_check):
 *   (5) at most MAX_SNAPS snapshots are under way and MAX_SNAPS
 *       acknowledged ones remembered;
 *   (6) a snapshot under way is of a checkpoint it took (at most the
 *       latest), and holds what its stage holds: waiting for channel
 *       state, its capture; serializing, its encoded file; uploading,
 *       neither; none has uploads in flight before it uploads.
 */
#include "task_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "coordinator.h"
#include "crc32c.h"
#include "error.h"
#include "storekey.h"

#define CK_INV_MODULE "task" /* invariant.h */

/* A native file this large is uploaded after the smaller ones. */
#define UPLOAD_LARGE ((uint64_t)1 << 20)
/* Cost model of snapshots: marking key groups copy-on-write and copying
 * timers in the synchronous phase (serializing in the asynchronous one:
 * SERIALIZE_FLOPS_PER_BYTE). */
#define SYNC_FLOPS_PER_KEY_GROUP 200.0
#define SYNC_FLOPS_PER_TIMER 50.0

static snap_job *snap_find(ck_task *t, uint64_t id);
static int snap_channels_ready(const ck_task *t, uint64_t id);
static int snap_overtake_output(ck_task *t, snap_job *j, int i, const ck_elem *be);
static int snap_start_async(ck_task *t, snap_job *j);
static void snap_drop(ck_task *t, snap_job *j);

static void snap_send_decline(ck_task *t, uint64_t id, uint32_t reason, const char *why)
{
    uint8_t body[12 + 100];
    size_t wl = strlen(why);
    if (wl > 100)
        wl = 100;
    ck_put_u64(body, id);
    ck_put_u32(body + 8, reason);
    memcpy(body + 12, why, wl);
    task_to_jm(t, CK_MSG_CP_DECLINE, body, 12 + wl);
}

/* Its outputs are closed (END_OF_PARTITION sent): snapshots send no barrier. */
static int snap_outputs_closed(const ck_task *t)
{
    return t->state == CK_TASK_ENDING || t->state == CK_TASK_ENDED;
}

/* Checkpoint id ends here without a snapshot: the job manager hears why,
 * and downstream a cancel marker ends its alignment at once instead of
 * waiting for the next barrier (Flink's CancelCheckpointMarker). */
int task_snap_decline(ck_task *t, uint64_t id, uint32_t reason, const char *why)
{
    snap_send_decline(t, id, reason, why);
    if (snap_outputs_closed(t))
        return CK_OK;
    ck_elem ce = {.tag = CK_EL_CANCEL};
    ce.u.barrier.id = id;
    for (int i = 0; i < t->nrps; i++) {
        int rc = ck_rp_broadcast(&t->rps[i].rp, &ce);
        if (rc)
            return rc;
    }
    task_flush_all(t);
    return CK_OK;
}

/* Commits every sink transaction that checkpoint cp covers; measures latency. */
int task_snap_commit_upto(ck_task *t, uint64_t cp)
{
    for (int k = 0; k < t->chain.nops; k++) {
        ck_op *op = &t->chain.ops[k];
        if (!op->two_phase)
            continue;
        ck_txn x;
        while (ck_sink_take_committable(op, cp, &x)) {
            int rc = t->plat->ops->output_commit(t->plat, op->sink_id, x.txn);
            ck_time now = ck_now(t->plat);
            if (!rc && x.n) {
                rc = ck_metrics_out_buckets(&t->met, now, x.base, x.cnt, x.nb, CK_TXN_SHIFT);
                if (t->first_out_ns < 0)
                    t->first_out_ns = now;
            }
            free(x.cnt);
            if (rc)
                return rc;
        }
    }
    return CK_OK;
}

/* The synchronous phase of checkpoint b, then the barrier goes downstream. */
int task_snap_take(ck_task *t, const ck_barrier *b, int64_t align_ns)
{
    if (b->id > t->last_snap)
        t->last_snap = b->id;
    if (snap_outputs_closed(t) && !t->ended_snap)
        t->ended_snap = b->id;
    if (t->nsnaps == MAX_SNAPS)
        return task_snap_decline(t, b->id, CK_DECLINE_FAILURE, "too many snapshots in progress");
    ck_time t0 = ck_now(t->plat);
    static const ck_capture empty;
    ck_capture *cap = malloc(sizeof(*cap));
    if (!cap)
        return CK_ENOMEM;
    *cap = empty;
    cap->checkpoint_id = b->id;
    cap->vertex = t->vertex;
    cap->subtask = t->subtask;
    cap->parallelism = t->g->v[t->vertex].parallelism;
    int how = b->flags & CK_BARRIER_SAVEPOINT ? 0 /* canonical, whole */
              : CK_CAPTURE_CHANGELOG | (t->incremental ? CK_CAPTURE_NATIVE : 0);
    int rc = ck_chain_capture(&t->chain, cap, how);
    if (rc) {
        free(cap);
        return rc;
    }
    double flops = 0;
    for (int i = 0; i < cap->nkeyed; i++)
        flops += SYNC_FLOPS_PER_KEY_GROUP * ck_kgr_size(cap->keyed[i].kgr) +
                 SYNC_FLOPS_PER_TIMER * (double)cap->keyed[i].ntimers;
    if (t->is_source) {
        ck_source_capture *sc = &cap->source;
        cap->has_source = 1;
        sc->op = t->g->v[t->vertex].ops[0];
        sc->known = t->env->topic->ops->npartitions(t->env->topic->ctx);
        sc->nparts = t->nparts;
        sc->parts = malloc(((size_t)t->nparts + 1) * sizeof(int));
        sc->offsets = malloc(((size_t)t->nparts + 1) * sizeof(int64_t));
        sc->maxts = malloc(((size_t)t->nparts + 1) * sizeof(int64_t));
        if (!sc->parts || !sc->offsets || !sc->maxts) {
            ck_capture_free(cap);
            free(cap);
            return CK_ENOMEM;
        }
        memcpy(sc->parts, t->parts, (size_t)t->nparts * sizeof(int));
        memcpy(sc->offsets, t->off, (size_t)t->nparts * sizeof(int64_t));
        memcpy(sc->maxts, t->maxts, (size_t)t->nparts * sizeof(int64_t));
    }
    for (int k = 0; k < t->chain.nops; k++) {
        ck_op *op = &t->chain.ops[k];
        if (!op->two_phase)
            continue;
        if ((rc = ck_sink_precommit(op, b->id))) {
            /* A failure of the synchronous phase fails the task (failover),
             * as in Flink; it is not a tolerable checkpoint failure. */
            ck_capture_free(cap);
            free(cap);
            char msg[200];
            snprintf(msg, sizeof(msg),
                     "%s (%d/%d): checkpoint %llu failed in its synchronous phase: too many "
                     "transactions await commit",
                     t->g->v[t->vertex].name, t->subtask + 1, t->g->v[t->vertex].parallelism,
                     (unsigned long long)b->id);
            task_fail_with(t, CK_FAIL_TASK, 0, NULL, msg);
            return rc;
        }
        ck_sink_capture *sk = &cap->sinks[cap->nsinks++];
        sk->op = t->g->v[t->vertex].ops[k];
        sk->open_txn = op->txn;
        sk->npending = op->npend;
        for (int p = 0; p < op->npend; p++)
            sk->pending[p] = op->pend[p].txn;
    }
    if (flops > 0)
        t->plat->ops->cpu(t->plat, flops);
    int64_t sync_ns = ck_now(t->plat) - t0;

    snap_job *j = &t->snaps[t->nsnaps++];
    memset(j, 0, sizeof(*j));
    j->kgr = CK_KGR_EMPTY; /* until its capture says which it holds */
    j->id = b->id;
    j->cap = cap;
    j->sync_ns = sync_ns;
    j->align_ns = align_ns;
    j->input_ended = snap_outputs_closed(t);
    j->full = (b->flags & CK_BARRIER_FULL) != 0;
    if (t->nclogs && !(b->flags & CK_BARRIER_SAVEPOINT) && (rc = task_clog_snapshot(t, j)))
        return rc; /* the task fails; ck_task_del frees the job */

    /* The barrier follows the state it closes, at once (none once the
     * outputs are closed: downstream, an ended channel counts as aligned).
     * An unaligned one overtakes what is queued, which joins the snapshot. */
    ck_elem be = {.tag = CK_EL_BARRIER};
    be.u.barrier = *b;
    for (int i = 0; i < t->nrps && !snap_outputs_closed(t); i++) {
        if ((b->flags & CK_BARRIER_UNALIGNED) && task_unaligned_edge(t->rps[i].edge)) {
            rc = snap_overtake_output(t, j, i, &be);
        } else if ((b->flags & CK_BARRIER_TIMEOUTABLE) && task_unaligned_edge(t->rps[i].edge)) {
            rc = ck_rp_emit_timeoutable(&t->rps[i].rp, &be); /* aligned until it times out */
            t->bar_ts = b->ts;
        } else {
            rc = ck_rp_broadcast(&t->rps[i].rp, &be);
        }
        if (rc)
            return rc; /* the task fails; ck_task_del frees the capture */
    }
    if (!snap_outputs_closed(t))
        task_flush_all(t);

    /* A source reports what it read up to its snapshot: a replay from this
     * checkpoint then never leaves records_in short of the input. */
    if (t->is_source)
        task_report(t, CK_MSG_METRICS);
    j->async_start = ck_now(t->plat);
    char dir[200];
    rc = ck_sk_dir(dir, sizeof(dir), t->env->job_id, b->id, !!(b->flags & CK_BARRIER_SAVEPOINT));
    if (rc || (rc = ck_sk_state(j->key, sizeof(j->key), dir, t->vertex, t->subtask)))
        return rc;
    if (b->flags & CK_BARRIER_STOP)
        t->stop_id = b->id; /* no more input until it completes or fails */
    if (!snap_channels_ready(t, j->id)) {
        j->stage = SNAP_CHANNELS; /* until its channel state is complete */
        return CK_OK;
    }
    return snap_start_async(t, j);
}

/* Snapshot j's asynchronous phase failed (rc): it is dropped and its
 * checkpoint declined. 0 (the task goes on), or the error of a task that
 * cannot (not memory: a bug to see). */
static int snap_async_failed(ck_task *t, snap_job *j, int rc)
{
    uint64_t id = j->id;
    snap_drop(t, j);
    if (rc != CK_ENOMEM)
        return rc;
    ck_logf(t->plat, CK_LOG_WARN, "%s (%d/%d): checkpoint %llu declined: %s serializing it",
            t->g->v[t->vertex].name, t->subtask + 1, t->g->v[t->vertex].parallelism,
            (unsigned long long)id, ck_strerror(rc));
    snap_send_decline(t, id, CK_DECLINE_FAILURE, "out of memory serializing the snapshot");
    return CK_OK;
}

/* An output still holds checkpoint id's barrier that may time out. */
static int snap_outputs_hold_barrier(const ck_task *t, uint64_t id)
{
    for (int i = 0; i < t->nrps; i++)
        if (t->rps[i].rp.bar_pending > 0 && t->rps[i].rp.bar_id == id)
            return 1;
    return 0;
}

/* Snapshot id's channel state is complete: the input gate is not
 * collecting it, and no output holds its barrier that may still overtake
 * data. */
static int snap_channels_ready(const ck_task *t, uint64_t id)
{
    if (t->has_gate && t->gate.uc_id == id && !ck_gate_uc_complete(&t->gate))
        return 0;
    return !snap_outputs_hold_barrier(t, id);
}

/* Adds a channel's state to a capture, taking w's bytes (none: nothing). */
static int snap_add_chan(ck_capture *cap, int out, uint16_t edge, uint32_t peer, ck_wbuf *w)
{
    if (w->err || w->len == 0) {
        int rc = w->err ? CK_ENOMEM : CK_OK;
        free(w->p);
        return rc;
    }
    if (cap->nchans % 16 == 0) {
        ck_chan_state *v = realloc(cap->chans, ((size_t)cap->nchans + 16) * sizeof(*v));
        if (!v) {
            free(w->p);
            return CK_ENOMEM;
        }
        cap->chans = v;
    }
    cap->chans[cap->nchans++] = (ck_chan_state){(uint8_t)out, edge, peer, w->p, w->len};
    return CK_OK;
}

/* Moves the n channel states st[0..n) (channel k's peer is first + k)
 * into cap (none: cap NULL, or an error rc < 0 before) and frees st.
 * Returns rc, or the first error. */
static int snap_add_chans(ck_capture *cap, int out, uint16_t edge, uint32_t first, ck_wbuf *st,
                          int n, int rc)
{
    for (int k = 0; k < n; k++) {
        if (rc < 0 || !cap) {
            free(st[k].p);
            continue;
        }
        int r2 = snap_add_chan(cap, out, edge, first + (uint32_t)k, &st[k]);
        if (r2)
            rc = r2;
    }
    free(st);
    return rc;
}

/* The unaligned barrier overtakes output i's queued buffers: they become
 * output channel state of snapshot j. */
static int snap_overtake_output(ck_task *t, snap_job *j, int i, const ck_elem *be)
{
    ck_rp *rp = &t->rps[i].rp;
    ck_wbuf *st = calloc((size_t)rp->nsub, sizeof(*st));
    if (!st)
        return CK_ENOMEM;
    j->unaligned = 1;
    return snap_add_chans(j->cap, 1, (uint16_t)t->rps[i].edge->id, rp->first, st, rp->nsub,
                          ck_rp_priority_barrier(rp, be, st));
}

/* The entries of keyed capture kc's view, over its key groups. */
static uint64_t snap_view_entries(const ck_keyed_capture *kc)
{
    uint64_t e = 0;
    for (int kg = kc->kgr.start; kg <= kc->kgr.end; kg++)
        e += kc->ops->view_count(kc->view, kg);
    return e;
}

/* What native file nf of n weighs: an immutable file (an SST) its bytes
 * plus its operator's value_size for each entry it holds; another file
 * its bytes. */
uint64_t task_snap_native_model(const struct snap_native *n, const ck_native_file *nf)
{
    return nf->size + (nf->immutable ? nf->entries * n->vs : 0);
}

uint64_t task_snap_key_model(const snap_job *j, const char *key)
{
    uint64_t m = 0;
    for (uint32_t k = 0; k < j->handles.n; k++)
        if (!strcmp(j->handles.v[k].key, key) && !(j->handles.v[k].flags & CK_HANDLE_REUSED))
            m += j->handles.v[k].modelled;
    return m;
}

/* The asynchronous phase of snapshot j: the input's channel state joins
 * it if it was unaligned, then it is serialized (background CPU) and
 * uploaded. A failure there (memory ran out serializing it) declines the
 * checkpoint, as Flink's asynchronous checkpoint part does: a failed
 * checkpoint, counted against the tolerable ones, not a failed task. */
static int snap_start_async(ck_task *t, snap_job *j)
{
    ck_capture *cap = j->cap;
    ck_time since = ck_now(t->plat); /* the encoding below is the real work */
    int rc = CK_OK;
    if (t->has_gate && t->gate.uc_id == j->id && ck_gate_uc_complete(&t->gate)) {
        j->unaligned = 1;
        rc = snap_add_chans(cap, 0, t->gate.edge, t->gate.first, ck_gate_uc_take(&t->gate),
                            t->gate.nchan, CK_OK);
        if (rc)
            return snap_async_failed(t, j, rc);
    }
    for (int i = 0; i < cap->nchans; i++)
        j->inflight += cap->chans[i].len;
    j->kgr = cap->nkeyed ? cap->keyed[0].kgr : CK_KGR_EMPTY;
    rc = ck_alloc_fails(t->plat, CK_POINT_SNAPSHOT) ? CK_ENOMEM
                                                     : ck_snap_encode(cap, &j->data, &j->len);
    for (int i = 0; i < cap->nkeyed; i++) {
        ck_keyed_capture *kc = &cap->keyed[i];
        uint64_t vs = t->g->spec.ops[kc->op].value_size;
        if (!kc->is_native) {
            if (vs && kc->view && !kc->elsewhere)
                j->model += vs * snap_view_entries(kc);
            continue;
        }
        struct snap_native *n = &j->nat[j->nnat++];
        n->ks = kc->ks;
        n->op = kc->op;
        n->snap = kc->native; /* the job's now */
        n->vs = vs;
        uint64_t imm = 0, model = 0;
        for (uint32_t f = 0; f < n->snap.n; f++)
            if (n->snap.files[f].immutable) {
                imm += n->snap.files[f].size;
                model += task_snap_native_model(n, &n->snap.files[f]);
            }
        ck_op *cop = ck_chain_op(&t->chain, kc->op);
        if (cop && imm) /* its flushes and compactions weigh as much more */
            cop->heavy = (double)model / (double)imm;
        kc->is_native = 0;
    }
    /* what its canonical handle lists of its operator state (handle.h) */
    if (!rc && !(j->opc = malloc(CK_HANDLE_MAX_OPCOUNTS * sizeof(*j->opc))))
        rc = CK_ENOMEM;
    if (!rc && (j->nopc = ck_capture_opcounts(cap, j->opc, CK_HANDLE_MAX_OPCOUNTS)) < 0)
        rc = j->nopc;
    ck_capture_free(cap);
    free(cap);
    j->cap = NULL;
    if (rc)
        return snap_async_failed(t, j, rc);
    j->stage = SNAP_SERIALIZING;
    j->crc = ck_get_u32(j->data + j->len - 4);
    /* after the flush of the synchronous phase is on the local disk */
    uint64_t disk;
    int notes;
    double flush = ck_chain_take_background(&t->chain, &disk, &notes);
    task_state_notes(t, notes);
    t->plat->ops->background(t->plat, since,
                             flush + SERIALIZE_FLOPS_PER_BYTE * (double)(j->len + j->model), disk,
                             (j->id << 2) | SNAP_SERIALIZING);
    return CK_OK;
}

/* Snapshots waiting for channel state: one the input gate gave up is
 * declined; one whose channel state is complete goes on to its
 * asynchronous phase. */
int task_snap_uc_poll(ck_task *t)
{
    if (t->has_gate && t->gate.uc_abandoned) {
        uint64_t id = t->gate.uc_abandoned;
        t->gate.uc_abandoned = 0;
        snap_job *j = snap_find(t, id);
        if (j && j->stage == SNAP_CHANNELS) {
            snap_drop(t, j);
            snap_send_decline(
                t, id, CK_DECLINE_SUBSUMED,
                "its channel state was cut short by a newer barrier or a cancel marker");
        }
    }
    for (int i = 0; i < t->nsnaps; i++) {
        snap_job *j = &t->snaps[i];
        if (j->stage == SNAP_CHANNELS && snap_channels_ready(t, j->id)) {
            int n = t->nsnaps, rc = snap_start_async(t, j);
            if (rc)
                return rc;
            if (t->nsnaps < n)
                i--; /* declined and dropped: the last job moved into its place */
        }
    }
    /* Complete channel state no snapshot waits for (declined meanwhile). */
    if (t->has_gate && ck_gate_uc_complete(&t->gate)) {
        snap_job *j = snap_find(t, t->gate.uc_id);
        if (!j || j->stage != SNAP_CHANNELS) {
            ck_wbuf *st = ck_gate_uc_take(&t->gate);
            snap_add_chans(NULL, 0, 0, 0, st, st ? t->gate.nchan : 0, CK_OK);
        }
    }
    return CK_OK;
}

/* The first unaligned barrier of a checkpoint reached the input gate: the
 * snapshot is taken now, between two steps. */
int task_snap_unaligned(ck_task *t, const ck_barrier *b)
{
    if (t->state != CK_TASK_RUNNING || t->recovering) {
        ck_gate_uc_cancel(&t->gate, b->id);
        snap_send_decline(t, b->id, CK_DECLINE_NOT_READY, "the subtask is not running");
        return CK_OK;
    }
    int rc = task_finish_batch(t);
    return rc ? rc : task_snap_take(t, b, t->gate.last_align_ns);
}

/* When the aligned-checkpoint timeout next passes for this task: for the
 * alignment in progress, or for a barrier its outputs still hold. */
ck_time task_snap_timeout_deadline(const ck_task *t)
{
    ck_time d = CK_TIME_NEVER;
    if (t->aligned_timeout <= 0)
        return d;
    if (t->has_gate && t->gate.uc_edge && t->gate.align_id &&
        (t->gate.align_barrier.flags & CK_BARRIER_TIMEOUTABLE))
        d = t->gate.align_barrier.ts + t->aligned_timeout;
    for (int i = 0; i < t->nrps; i++)
        if (t->rps[i].rp.bar_pending > 0)
            d = CK_MIN(d, t->bar_ts + t->aligned_timeout);
    return d;
}

/* The aligned-checkpoint timeout passed: the alignment in progress turns
 * unaligned (the task snapshots now), and barriers still queued in the
 * outputs overtake what is before them, which joins their snapshot. */
int task_snap_timeouts(ck_task *t, ck_time now)
{
    int rc;
    ck_barrier b;
    if (t->has_gate && t->gate.align_id &&
        now >= t->gate.align_barrier.ts + t->aligned_timeout &&
        (rc = ck_gate_timeout(&t->gate, &b)) != 0) {
        if (rc < 0 || (rc = task_snap_unaligned(t, &b)))
            return rc;
    }
    for (int i = 0; i < t->nrps; i++) {
        ck_rp *rp = &t->rps[i].rp;
        if (rp->bar_pending == 0 || now < t->bar_ts + t->aligned_timeout)
            continue;
        ck_wbuf *st = calloc((size_t)rp->nsub, sizeof(*st));
        if (!st)
            return CK_ENOMEM;
        snap_job *j = snap_find(t, rp->bar_id);
        rc = snap_add_chans(j ? j->cap : NULL, 1, (uint16_t)t->rps[i].edge->id, rp->first, st,
                            rp->nsub, ck_rp_timeout_barrier(rp, st));
        if (rc < 0)
            return rc;
        if (j && rc > 0)
            j->unaligned = 1;
    }
    return task_snap_uc_poll(t);
}

static snap_job *snap_find(ck_task *t, uint64_t id)
{
    for (int i = 0; i < t->nsnaps; i++)
        if (t->snaps[i].id == id)
            return &t->snaps[i];
    return NULL;
}

static void snap_drop(ck_task *t, snap_job *j)
{
    free(j->data);
    free(j->opc);
    if (j->cap) {
        ck_capture_free(j->cap);
        free(j->cap);
    }
    for (int i = 0; i < j->nnat; i++)
        j->nat[i].ks->ops->native_release(j->nat[i].ks, &j->nat[i].snap);
    ck_handles_free(&j->handles);
    ck_handles_free(&j->clog_handles);
    *j = t->snaps[--t->nsnaps];
}

/* Deletes the files of hs that a snapshot stored itself: not those an
 * earlier one stored (reused), not inline ones (in no file), not a file
 * merged across checkpoints (the coordinator's to delete). */
static void snap_delete_uploaded(ck_task *t, const ck_handles *hs)
{
    for (uint32_t i = 0; i < hs->n; i++)
        if (!(hs->v[i].flags & CK_HANDLE_REUSED) && ck_handle_stored(&hs->v[i]) &&
            !ck_store_appendable(hs->v[i].key))
            task_store_delete(t, hs->v[i].key);
}

void task_snap_discard(ck_task *t)
{
    for (int i = 0; i < t->nsnaps; i++)
        snap_delete_uploaded(t, &t->snaps[i].handles);
}

void task_snap_free(ck_task *t)
{
    while (t->nsnaps)
        snap_drop(t, &t->snaps[t->nsnaps - 1]);
    ck_handles_free(&t->confirmed);
    for (int i = 0; i < t->nacked; i++)
        ck_handles_free(&t->acked[i].files);
}

int task_snap_check(const ck_task *t, ck_inv *v)
{
    CK_INV(v, 5, t->nsnaps >= 0 && t->nsnaps <= MAX_SNAPS && t->nacked >= 0 &&
                     t->nacked <= MAX_SNAPS,
           "%d snapshots under way, %d acknowledged remembered (at most %d)", t->nsnaps,
           t->nacked, MAX_SNAPS);
    for (int i = 0; i < t->nsnaps; i++) {
        const snap_job *j = &t->snaps[i];
        unsigned long long id = (unsigned long long)j->id;
        CK_INV(v, 6, j->id <= t->last_snap, "checkpoint %llu under way, the latest taken %llu", id,
               (unsigned long long)t->last_snap);
        int ok = j->stage == SNAP_CHANNELS      ? j->cap && !j->data && !j->uploads
                 : j->stage == SNAP_SERIALIZING ? !j->cap && j->data && !j->uploads
                 : j->stage == SNAP_UPLOADING   ? !j->cap && !j->data
                                                : 0;
        CK_INV(v, 6, ok, "checkpoint %llu in stage %d with %s capture, %s file, %u uploads", id,
               j->stage, j->cap ? "a" : "no", j->data ? "an encoded" : "no", j->uploads);
    }
    return 0;
}

/* The native file of operator op named name that the latest complete
 * checkpoint stored, or NULL. */
static const ck_handle *snap_confirmed_find(const ck_task *t, int op, const ck_native_file *f)
{
    for (uint32_t i = 0; i < t->confirmed.n; i++) {
        const ck_handle *h = &t->confirmed.v[i];
        if (h->op == (uint32_t)op && h->bytes == f->size && !strcmp(h->local, f->name))
            return h;
    }
    return NULL;
}

/* Starts one upload of snapshot j (data taken). */
int task_snap_upload(ck_task *t, snap_job *j, const char *key, uint8_t *data, size_t len,
                     uint64_t modelled)
{
    task_weigh(t, key, modelled);
    int rc = t->plat->ops->store_put(t->plat, key, data, len, (j->id << 2) | SNAP_UPLOADING);
    if (!rc)
        j->uploads++;
    return rc;
}

/* Whether snapshot j's native files can go up from their paths, as
 * Flink's transfer threads upload them (platform.h store_put_files): the
 * task's thread then neither reads them nor holds a copy. */
int task_snap_by_path(const ck_task *t, const snap_job *j)
{
    if (!t->plat->ops->store_put_files || ((j->id << 2) | SNAP_UPLOADING) > FILE_BASE)
        return 0;
    for (int i = 0; i < j->nnat; i++)
        if (!j->nat[i].ks->ops->native_path)
            return 0;
    return 1;
}

/* Uploads under key the local files paths[0..nf), back to back; their
 * handles are the ones with that key from handle h on, in order, and get
 * each file's size and checksum when the object lands (task_snap_file_landed). */
int task_snap_upload_files_at(ck_task *t, snap_job *j, const char *key, uint64_t base,
                              const char *const *paths, uint32_t nf, uint32_t h)
{
    if (h >= FILE_HANDLES)
        return CK_ERANGE; /* not in a token */
    task_weigh(t, key, task_snap_key_model(j, key));
    uint64_t token = FILE_TOKEN | (uint64_t)h << 40 | (j->id << 2) | SNAP_UPLOADING;
    int rc = base ? t->plat->ops->store_append_files(t->plat, key, base, paths, nf, token)
                  : t->plat->ops->store_put_files(t->plat, key, paths, nf, token);
    if (!rc)
        j->uploads++;
    return rc;
}

static int snap_upload_files(ck_task *t, snap_job *j, const char *key, const char *const *paths,
                             uint32_t nf, uint32_t h)
{
    return task_snap_upload_files_at(t, j, key, 0, paths, nf, h);
}

/* File f of native snapshot n from its path, as handle h (task_snap_by_path). */
static int snap_upload_file(ck_task *t, snap_job *j, struct snap_native *n, uint32_t f, uint32_t h)
{
    char path[1024];
    const char *paths[1] = {path};
    int rc = n->ks->ops->native_path(n->ks, &n->snap, f, path, sizeof(path));
    return rc ? rc : snap_upload_files(t, j, j->handles.v[h].key, paths, 1, h);
}

/* An object task_snap_upload_files_at asked for landed (result: CK_PUT_FILE_RESULT
 * bytes per file): its files' handles, from the one in the token on,
 * take the size and checksum of what was uploaded; a file whose size is
 * not its handle's (it changed: the segments after it would be wrong) or
 * a result that does not fit fails the upload. Returns the snapshot's
 * upload token. */
uint64_t task_snap_file_landed(ck_task *t, uint64_t token, int *status, const uint8_t *res,
                               size_t len)
{
    uint64_t base = token & FILE_BASE;
    uint32_t h = (uint32_t)((token >> 40) & (FILE_HANDLES - 1));
    snap_job *j = snap_find(t, base >> 2);
    if (!j || (int)(base & 3) != j->stage || *status != CK_OK)
        return base;
    if (h >= j->handles.n || len == 0 || len % CK_PUT_FILE_RESULT) {
        *status = CK_EPROTO;
        return base;
    }
    const char *key = j->handles.v[h].key;
    size_t at = 0;
    for (uint32_t k = h; k < j->handles.n && at < len; k++) {
        ck_handle *hd = &j->handles.v[k];
        if (strcmp(hd->key, key) || (hd->flags & CK_HANDLE_REUSED))
            continue; /* a file an earlier checkpoint stored, between two segments (in
                       * the same file, merged across checkpoints) */
        uint64_t bytes = ck_get_u64(res + at);
        if ((hd->flags & CK_HANDLE_SEGMENT) && bytes != hd->bytes) {
            *status = CK_EPROTO;
            return base;
        }
        hd->modelled = bytes + (hd->modelled - hd->bytes); /* what it weighs beyond its bytes */
        hd->bytes = bytes;
        hd->crc = ck_get_u32(res + at + 8);
        at += CK_PUT_FILE_RESULT;
    }
    if (at != len)
        *status = CK_EPROTO;
    return base;
}

/* Refers snapshot j to c, the file an earlier checkpoint stored. */
static int snap_add_reused(snap_job *j, const ck_handle *c, int op, const char *name)
{
    int rc = ck_handles_add_native(&j->handles, CK_HANDLE_SHARED | CK_HANDLE_REUSED, c->key,
                                   c->bytes, c->crc, j->kgr, (uint32_t)op, name);
    if (!rc && (c->flags & CK_HANDLE_SEGMENT))
        rc = ck_handles_segment_last(&j->handles, c->offset);
    if (!rc) /* it weighs what it weighed when uploaded */
        rc = ck_handles_model_last(&j->handles, c->modelled);
    return rc;
}

/* state.storage.fs.memory-threshold: a file of the snapshot smaller than
 * it is not stored but travels in its handle, inside the acknowledgement
 * and the checkpoint's _metadata, as Flink's ByteStreamStateHandle: a
 * checkpoint of small state then costs the store no put of its own. Only
 * a snapshot's own files are: its canonical file and its native files
 * private to it (MANIFEST, CURRENT, OPTIONS); a file later checkpoints
 * may refer to (an SST under shared/) is always stored. */
static int snap_inline_file(const ck_task *t, const ck_native_file *nf)
{
    return !nf->immutable && nf->size < t->inline_below;
}

/* The key of private native file nf of operator op in snapshot j: in
 * the checkpoint's directory, beside its canonical file. */
static int snap_private_key(const ck_task *t, const snap_job *j, int op, const ck_native_file *nf,
                            char key[CK_HANDLE_KEY_MAX + 1])
{
    char dir[CK_HANDLE_KEY_MAX + 1];
    int rc = ck_sk_dirs_of(j->key, dir, sizeof(dir), NULL, 0);
    return rc ? rc : ck_sk_private(key, CK_HANDLE_KEY_MAX + 1, dir, t->vertex, t->subtask, op,
                                   nf->name);
}

/* Adds private native file f of n to snapshot j's handles inline (its
 * bytes read now, on the task's thread: a few kB at most). */
static int snap_add_inline(ck_task *t, snap_job *j, struct snap_native *n, uint32_t f)
{
    const ck_native_file *nf = &n->snap.files[f];
    char key[CK_HANDLE_KEY_MAX + 1];
    uint8_t *d;
    size_t len;
    int rc = snap_private_key(t, j, n->op, nf, key);
    if (!rc)
        rc = n->ks->ops->native_read(n->ks, &n->snap, f, &d, &len);
    if (rc)
        return rc;
    rc = ck_handles_add_native(&j->handles, 0, key, len, ck_crc32c(0, d, len), j->kgr,
                               (uint32_t)n->op, nf->name);
    if (rc) {
        free(d);
        return rc;
    }
    return ck_handles_inline_last(&j->handles, d, len);
}

/* Is file f of snapshot j's native n kept out of the uploads: one the
 * latest complete checkpoint stored (immutable, and j incremental:
 * referred to), or a small private one (inline)? 1 then, and with rc
 * given its handle is added (*rc: 0 or why not); 0 when it goes up. */
int task_snap_kept(ck_task *t, snap_job *j, struct snap_native *n, uint32_t f, int *rc)
{
    const ck_native_file *nf = &n->snap.files[f];
    const ck_handle *c = nf->immutable && !j->full ? snap_confirmed_find(t, n->op, nf) : NULL;
    if (!c && !snap_inline_file(t, nf))
        return 0;
    if (rc)
        *rc = c ? snap_add_reused(j, c, n->op, nf->name) : snap_add_inline(t, j, n, f);
    return 1;
}

/* Uploads snapshot j: its canonical file, and the native files of its
 * operators whose backends wrote them (an incremental checkpoint), as
 * Flink's RocksIncrementalSnapshotStrategy does: an SST file the latest
 * complete checkpoint stored is referred to, not uploaded again; a new
 * one goes under shared/ in a file of its own (its key names the
 * checkpoint, so that nothing else ever writes it); the instance's other
 * files (MANIFEST, CURRENT, OPTIONS) are private to the checkpoint. With
 * file merging, the new ones go in merged objects (task_mfile_upload). */
static int snap_start_uploads(ck_task *t, snap_job *j)
{
    j->upload_start = ck_now(t->plat);
    int rc = ck_handles_add(&j->handles, CK_HANDLE_SNAPSHOT, 0, j->key, j->len, j->crc,
                            j->kgr);
    if (!rc)
        rc = ck_handles_opcounts_last(&j->handles, j->opc, (uint32_t)j->nopc);
    uint8_t *data = j->data;
    j->data = NULL; /* the store's or the handle's now */
    if (rc)
        free(data);
    else if (j->len + j->model < t->inline_below) /* what it weighs decides */
        rc = ck_handles_inline_last(&j->handles, data, j->len);
    else if ((rc = ck_handles_model_last(&j->handles, j->len + j->model)))
        free(data);
    else
        rc = task_snap_upload(t, j, j->key, data, j->len, j->len + j->model);
    if (rc)
        return rc;
    char shared[200];
    if ((rc = ck_sk_shared_dir(shared, sizeof(shared), t->env->job_id)))
        return rc;
    if (t->merge_max)
        return task_mfile_upload(t, j, shared);
    /* Small files are asked first, one after another, so that the store
     * sees them together (its pool commits them as one group) and syncs
     * them while the large ones are written; the handles keep the
     * instance's order. Where the platform uploads a local file from its
     * path (snap_upload_file: over sockets the store's threads read it as they
     * write it), the task's thread reads none of them and a file's size
     * and checksum come with its completion; elsewhere the file is read
     * here and its checksum filled in then. The files set aside go with
     * the snapshot. */
    uint32_t first = j->handles.n; /* the native files' handles, after the canonical one */
    int from_paths = task_snap_by_path(t, j);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        uint32_t h = first; /* the handle of the file below */
        for (int i = 0; i < j->nnat && !rc; i++) {
            struct snap_native *n = &j->nat[i];
            for (uint32_t f = 0; f < n->snap.n && !rc; f++, h++) {
                const ck_native_file *nf = &n->snap.files[f];
                if (task_snap_kept(t, j, n, f, pass == 0 ? &rc : NULL))
                    continue; /* its handle added in the first pass */
                if (pass == 0) {
                    char key[CK_HANDLE_KEY_MAX + 1];
                    if ((rc = nf->immutable
                                  ? ck_sk_shared_native(key, sizeof(key), shared, n->op,
                                                        t->subtask, t->attempt, j->id, nf->name)
                                  : snap_private_key(t, j, n->op, nf, key)) ||
                        (rc = ck_handles_add_native(&j->handles,
                                                    nf->immutable ? CK_HANDLE_SHARED : 0, key,
                                                    nf->size, 0, j->kgr,
                                                    (uint32_t)n->op, nf->name)) ||
                        (rc = ck_handles_model_last(&j->handles,
                                                    task_snap_native_model(n, nf))))
                        break;
                }
                if ((nf->size >= UPLOAD_LARGE) != pass)
                    continue;
                if (from_paths) {
                    rc = snap_upload_file(t, j, n, f, h);
                    continue;
                }
                uint8_t *d;
                size_t len;
                if ((rc = n->ks->ops->native_read(n->ks, &n->snap, f, &d, &len)))
                    break;
                ck_handle *hd = &j->handles.v[h];
                hd->modelled = len + (hd->modelled - hd->bytes);
                hd->bytes = len;
                hd->crc = ck_crc32c(0, d, len);
                rc = task_snap_upload(t, j, hd->key, d, len, hd->modelled);
            }
        }
    }
    return rc;
}

/* Every upload of snapshot j ended: it is acknowledged, or declined (an
 * upload failed) or forgotten (aborted meanwhile), and then what it
 * uploaded itself is deleted: nothing will refer to it. */
static void snap_finish_uploads(ck_task *t, snap_job *j)
{
    task_mfile_settle(t, j);
    if (j->aborted || j->upload_failed) {
        snap_delete_uploaded(t, &j->handles);
        if (!j->aborted)
            snap_send_decline(t, j->id, CK_DECLINE_FAILURE, "the upload failed");
        snap_drop(t, j);
        return;
    }
    ck_cp_ack ack = {.id = j->id, .sync_ns = j->sync_ns,
                     .async_ns = ck_now(t->plat) - j->async_start, .align_ns = j->align_ns,
                     .upload_ns = ck_now(t->plat) - j->upload_start,
                     .flags = (j->input_ended ? CK_ACK_INPUT_ENDED : 0) |
                              (j->unaligned ? CK_ACK_UNALIGNED : 0),
                     .inflight = j->inflight,
                     .handles = j->handles};
    uint8_t *body = NULL;
    size_t blen;
    int rc = ck_cp_ack_encode(&ack, &body, &blen);
    if (rc) {
        snap_send_decline(t, j->id, CK_DECLINE_FAILURE, "out of memory acknowledging the snapshot");
    } else {
        task_to_jm(t, CK_MSG_CP_ACK, body, blen);
        task_mfile_acked(t, &j->handles);
        /* its shared files, for the checkpoints after it completes */
        if (t->nacked == MAX_SNAPS) {
            ck_handles_free(&t->acked[0].files);
            memmove(&t->acked[0], &t->acked[1], (MAX_SNAPS - 1) * sizeof(t->acked[0]));
            t->nacked--;
        }
        ck_handles *kept = &t->acked[t->nacked].files;
        memset(kept, 0, sizeof(*kept));
        for (uint32_t i = 0; i < j->handles.n; i++) {
            const ck_handle *h = &j->handles.v[i];
            if ((h->flags & CK_HANDLE_SHARED) && h->kind == CK_HANDLE_NATIVE &&
                ck_handles_add_like(kept, h, h->flags & (CK_HANDLE_SHARED | CK_HANDLE_SEGMENT)))
                break; /* out of memory: those files are uploaded again */
        }
        t->acked[t->nacked++].id = j->id;
    }
    free(body);
    snap_drop(t, j);
}

/* Checkpoint id completed: the shared files its snapshot stored are the
 * ones later checkpoints refer to. */
static void snap_confirm_shared(ck_task *t, uint64_t id)
{
    int k = 0;
    for (int i = 0; i < t->nacked; i++) {
        if (t->acked[i].id == id) {
            ck_handles_free(&t->confirmed);
            t->confirmed = t->acked[i].files;
        } else if (t->acked[i].id > id) {
            t->acked[k++] = t->acked[i];
            continue;
        } else {
            ck_handles_free(&t->acked[i].files);
        }
    }
    t->nacked = k;
}

/* Snapshot j is complete once its own uploads ended and the changelog it
 * refers to is in the store. */
void task_snap_try_finish(ck_task *t, snap_job *j)
{
    if (j->uploads)
        return;
    if (!j->aborted && !j->upload_failed && !task_clog_snap_ready(t, j))
        return;
    for (uint32_t i = 0; i < j->clog_handles.n && !j->aborted && !j->upload_failed; i++) {
        const ck_handle *h = &j->clog_handles.v[i];
        if (ck_handles_add_like(&j->handles, h, h->flags))
            j->upload_failed = 1;
    }
    if (!j->aborted && !j->upload_failed)
        task_clog_snap_done(t, j);
    snap_finish_uploads(t, j);
}

/* A step of a snapshot's asynchronous phase finished. */
void task_snap_progress(ck_task *t, uint64_t token, int status)
{
    snap_job *j = snap_find(t, token >> 2);
    if (!j || (int)(token & 3) != j->stage)
        return; /* aborted meanwhile */
    if (j->stage == SNAP_SERIALIZING) {
        j->stage = SNAP_UPLOADING;
        if (snap_start_uploads(t, j))
            j->upload_failed = 1;
    } else {
        j->uploads--;
        if (status != CK_OK)
            j->upload_failed = 1;
    }
    task_snap_try_finish(t, j);
}

/* TRIGGER, COMPLETE, ABORT from the job manager. */
int task_snap_on_message(ck_task *t, const ck_wire_hdr *h, const uint8_t *body)
{
    if (h->src != CK_EP_JM || h->len < 8)
        return CK_EPROTO;
    if (h->epoch != t->attempt)
        return CK_OK; /* for another attempt of the job */
    uint64_t id = ck_get_u64(body);
    switch (h->type) {
    case CK_MSG_CP_TRIGGER: {
        if (h->len != 20)
            return CK_EPROTO;
        ck_barrier b = {.id = id, .ts = ck_get_i64(body + 8), .flags = ck_get_u32(body + 16)};
        if (id <= t->last_snap)
            return CK_OK; /* taken already: its barrier aligned before the input ended */
        if (b.flags & CK_CP_FLAG_FINAL) {
            if (t->state != CK_TASK_ENDED) {
                snap_send_decline(t, id, CK_DECLINE_FAILURE, "the task has not ended its input");
                return CK_OK;
            }
            return task_snap_take(t, &b, 0);
        }
        /* Its input over: a snapshot without a barrier (FLIP-147). */
        if (snap_outputs_closed(t))
            return task_snap_take(t, &b, 0);
        if (!t->is_source || t->state != CK_TASK_RUNNING || t->recovering) {
            snap_send_decline(t, id, CK_DECLINE_NOT_READY, "the subtask is not running");
            return CK_OK;
        }
        int rc = task_finish_batch(t);
        return rc ? rc : task_snap_take(t, &b, 0);
    }
    case CK_MSG_CP_COMPLETE: {
        int rc = task_snap_commit_upto(t, id);
        if (id > t->completed)
            t->completed = id;
        snap_confirm_shared(t, id);
        if (!rc && t->state == CK_TASK_ENDED && t->ended_snap && id >= t->ended_snap) {
            /* A checkpoint taken after its input ended is durable and its
             * output committed: the task finishes (Flink's rule for the
             * final checkpoint of a task). */
            task_report(t, CK_MSG_TASK_FINISHED);
            return CK_OK;
        }
        if (!rc && id == t->stop_id && t->state == CK_TASK_RUNNING) {
            /* Stopped with a savepoint: committed up to it, the task ends
             * (without ending its input: windows stay in the savepoint). */
            for (int k = 0; k < t->chain.nops; k++) {
                ck_op *op = &t->chain.ops[k];
                if (op->two_phase) /* failed: the run fails (bnode.h: a sink's write) */
                    CK_IGNORE(t->plat->ops->output_abort(t->plat, op->sink_id, op->txn));
            }
            task_flush_all(t);
            task_send_all(t);
            task_report(t, CK_MSG_TASK_FINISHED);
            return CK_OK;
        }
        /* What was just committed is reported at once: a crash before the
         * next periodic report must not make committed output vanish
         * from the figures. */
        if (!rc && t->has_2pc && t->state == CK_TASK_RUNNING) {
            task_report(t, CK_MSG_METRICS);
            t->next_report = ck_now(t->plat) + CK_METRICS_INTERVAL;
        }
        return rc;
    }
    case CK_MSG_CP_ABORT: {
        if (id == t->stop_id)
            t->stop_id = 0; /* the stop failed: the job goes on */
        snap_job *j = snap_find(t, id);
        if (j && j->stage == SNAP_UPLOADING) {
            j->aborted = 1; /* its files are deleted once written */
            task_snap_try_finish(t, j); /* at once if it only waited for the changelog */
        } else if (j) {
            snap_drop(t, j);
        }
        if (t->has_gate)
            ck_gate_uc_cancel(&t->gate, id); /* its channel state is not needed */
        return CK_OK;
    }
    }
    return CK_EPROTO;
}
