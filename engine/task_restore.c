/*
 * task_restore.c - a subtask restoring a checkpoint or savepoint (task.h:
 * CREATED --> RESTORING --> RUNNING): the state handles the job manager's
 * DEPLOY handed it, downloaded one by one, each file's size and checksum
 * checked against its handle, and its state put in place.
 *
 * A canonical state file (CK_HANDLE_SNAPSHOT) is decoded and applied at
 * once (restore_apply_snapshot: keyed state, source offsets, the sinks'
 * pending transactions committed and the open one aborted, channel state
 * queued in front of the gate's and the partitions' channels); native
 * files (RocksDB's) and a changelog's materialization and segments are
 * kept until all are in, then handed to their backends
 * (restore_install_native, task_clog_restore). A file that came inline in
 * its handle is taken from there. A segment of a merged file (file
 * merging, task_mfile.c) is cut out of a range of its object, downloaded
 * with a ranged get that takes in the segments still to restore near it
 * (restore_seg_range, SEG_READ_GAP); the range is kept while a handle
 * still to restore has a segment in it.
 *
 *   CREATED --a checkpoint to restore: task_restore_start--> downloading
 *       (RESTORING; no handle for the subtask: it fails, missing)
 *   downloading --a file landed (task_restore_done) or came inline, checked
 *       and applied or kept (restore_file, restore_segment); the next
 *       handle asked for (restore_next)--> downloading
 *   downloading --the last handle in: native files and the changelog
 *       installed (restore_finish)--> loading (the backends' work charged
 *       as background CPU and local disk: RESTORE_LOAD_TOKEN)
 *   loading --that work done (at once when there is none):
 *       task_started--> RUNNING (recovering first with input channel
 *       state: task.c)
 *   downloading --a file missing, damaged, unreadable, not this
 *       subtask's (or native files its backend cannot open), or an I/O
 *       or memory error: task_restore_fail--> FAILED
 *       (its CK_FAIL_RESTORE_* code tells the job manager whether an
 *       older checkpoint may do)
 *
 * Invariants (task.h's numbers, checked by ck_task_check):
 *   (9) the next handle to restore is at most one past the last;
 *       downloaded files are held only while RESTORING, and a downloaded
 *       range of a merged file only while a handle still to restore has
 *       a segment in it.
 */
#include "task_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "assign.h"
#include "crc32c.h"
#include "error.h"
#include "keygroup.h"
#include "topic.h"

#define CK_INV_MODULE "task" /* invariant.h */

/* Segments of one object less than this far apart are read as one range
 * (the bytes between, padding or files no longer referred to, cost less
 * than another request); farther apart, each run is its own download. */
#define SEG_READ_GAP ((uint64_t)256 << 10)

/* A canonical file read by key group: the first ranged get reads this
 * much of it, its head whole mostly (the head says its own length: the
 * rest of it, when longer, is read next); a file no longer than twice
 * this is read whole. */
#define RANGED_HEAD_READ ((uint64_t)1 << 10)
enum { RANGED_NONE = 0, RANGED_HEAD = 1, RANGED_BLOCKS = 2 };

static int restore_install_native(ck_task *t);
static int restore_segment(ck_task *t, uint32_t obj);
static int restore_file(ck_task *t, uint8_t *data, size_t len, int *kept);
static void restore_next(ck_task *t);
static uint64_t restore_weighed(ck_task *t, size_t len);

/* The restore failed on the file restore_key (code: CK_FAIL_RESTORE_*). */
void task_restore_fail(ck_task *t, uint32_t code, const char *what)
{
    char msg[300];
    snprintf(msg, sizeof(msg), "checkpoint %llu: %s: %s", (unsigned long long)t->restore_cp,
             t->restore_key, what);
    task_fail_with(t, code, t->restore_cp, t->restore_key, msg);
}

/* The code of a restore that failed with rc: CK_ECHECKSUM and
 * CK_ECORRUPT are the file's (its bytes are not those written; it does
 * not decode, or does not fit the job), anything else the restore's own
 * (memory, I/O). */
uint32_t task_restore_code(int rc)
{
    return rc == CK_ECHECKSUM  ? CK_FAIL_RESTORE_DAMAGED
           : rc == CK_ECORRUPT ? CK_FAIL_RESTORE_UNREADABLE
                               : CK_FAIL_RESTORE_IO;
}

/*
 * A source's partitions from its split-distribute list state, as a
 * FLIP-27 source's reader gets its splits back: it reads exactly the
 * partitions its list holds, from their offsets (whichever subtask read
 * them before: on a rescale the assignment deals them out, not the owner
 * formula); a partition its snapshot's enumerator did not know of (past
 * `known`) is new and goes by the owner formula, as Flink's enumerator
 * assigns a newly discovered partition. A version 3 snapshot recorded no
 * `known`: its list is the owner formula's, which stays as source_init
 * set it. CK_ECORRUPT: a partition the topic lacks or given twice, an
 * offset past its end.
 */
static int restore_source(ck_task *t, const ck_source_capture *sc)
{
    const ck_topic *tp = t->env->topic;
    int total = tp->ops->npartitions(tp->ctx);
    if (sc->nparts > total)
        return CK_ECORRUPT;
    if (sc->known < 0) {
        for (int i = 0; i < sc->nparts; i++) {
            int k = 0;
            while (k < t->nparts && t->parts[k] != sc->parts[i])
                k++;
            if (k == t->nparts || sc->offsets[i] > t->end[k])
                return CK_ECORRUPT;
            t->off[k] = sc->offsets[i];
            t->maxts[k] = sc->maxts[i];
        }
        return CK_OK;
    }
    const ck_vertex *v = &t->g->v[t->vertex];
    uint8_t *given = calloc((size_t)total + 1, 1);
    if (!given)
        return CK_ENOMEM;
    int n = 0;
    for (int i = 0; i < sc->nparts; i++) {
        int p = sc->parts[i];
        int64_t size = p < total ? tp->ops->size(tp->ctx, p) : 0;
        if (p >= total || given[p] || sc->offsets[i] > size) {
            free(given);
            return CK_ECORRUPT;
        }
        given[p] = 1;
        t->parts[n] = p;
        t->end[n] = size;
        t->off[n] = sc->offsets[i];
        t->maxts[n] = sc->maxts[i];
        n++;
    }
    for (int p = sc->known; p < total; p++) {
        if (given[p] || ck_topic_owner(tp->name, p, v->parallelism) != t->subtask)
            continue;
        t->parts[n] = p;
        t->end[n] = tp->ops->size(tp->ctx, p);
        t->off[n] = 0;
        t->maxts[n] = CK_WM_MIN;
        n++;
    }
    free(given);
    t->nparts = n;
    t->rr = 0;
    return CK_OK;
}

/* 1 when chunk c is of this source's partition list. */
static int restore_src_chunk(const ck_task *t, const ck_restore_chunk *c)
{
    return c->op == (uint32_t)t->g->v[t->vertex].ops[0] && !strcmp(c->name, CK_SOURCE_SPLITS);
}

/* 1 when chunk c's entries are restored and counted (rchunk_done): this
 * source's partitions, or a list of one of its chain's buffers. */
static int restore_counted_chunk(const ck_task *t, const ck_restore_chunk *c)
{
    const ck_vertex *v = &t->g->v[t->vertex];
    for (int k = 0; k < v->nops; k++)
        if (c->op == (uint32_t)v->ops[k] && t->g->spec.ops[v->ops[k]].kind == CK_OP_BUFFER)
            return 1;
    return restore_src_chunk(t, c);
}

/* Once every file of another parallelism is in: every operator state
 * entry dealt to this subtask came from its file (CK_ECORRUPT
 * otherwise). */
static int restore_chunks_done(const ck_task *t)
{
    if (!t->rtakes || t->restored_finished)
        return CK_OK;
    uint64_t dealt = 0;
    for (uint32_t c = 0; c < t->nrchunks; c++)
        dealt += restore_counted_chunk(t, &t->rchunks[c]) ? t->rchunks[c].n : 0;
    return dealt == t->rchunk_done ? CK_OK : CK_ECORRUPT;
}

/*
 * A source's partitions from old subtask tk's split-distribute list state
 * at another parallelism (FLIP-27, as the assignment dealt them): exactly
 * the entries of the chunks of that old subtask, appended to what the
 * files before gave; the partitions its enumerator did not know of come
 * once all are in (restore_source_new). CK_ECORRUPT: a chunk past the
 * list's end, a partition the topic lacks or given twice (by this file
 * or an earlier one), an offset past its end.
 */
static int restore_source_chunks(ck_task *t, const ck_source_capture *sc,
                                 const ck_restore_take *tk)
{
    const ck_topic *tp = t->env->topic;
    int total = tp->ops->npartitions(tp->ctx);
    if (sc->known < 0 || sc->nparts > total || sc->known > total)
        return CK_ECORRUPT;
    t->rknown = sc->known > t->rknown ? sc->known : t->rknown;
    for (uint32_t c = 0; c < t->nrchunks; c++) {
        const ck_restore_chunk *ch = &t->rchunks[c];
        if (!restore_src_chunk(t, ch) || ch->old != tk->old_subtask)
            continue;
        if (ch->first > (uint32_t)sc->nparts || ch->n > (uint32_t)sc->nparts - ch->first)
            return CK_ECORRUPT;
        for (uint32_t i = ch->first; i < ch->first + ch->n; i++) {
            int p = sc->parts[i];
            int64_t size = p >= 0 && p < total ? tp->ops->size(tp->ctx, p) : 0;
            int dup = 0;
            for (int k = 0; k < t->nparts && !dup; k++)
                dup = t->parts[k] == p;
            if (p < 0 || p >= total || dup || t->nparts >= total || sc->offsets[i] > size)
                return CK_ECORRUPT;
            t->parts[t->nparts] = p;
            t->end[t->nparts] = size;
            t->off[t->nparts] = sc->offsets[i];
            t->maxts[t->nparts] = sc->maxts[i];
            t->nparts++;
        }
        t->rchunk_done += ch->n;
    }
    t->rr = 0;
    return CK_OK;
}

/* Once every file of another parallelism is in: every partition dealt
 * to this source came (CK_ECORRUPT otherwise), and those no old
 * enumerator knew of are its own by the owner formula, as Flink's
 * enumerator assigns a newly discovered partition. */
static int restore_source_new(ck_task *t)
{
    if (!t->is_source || !t->rtakes || t->restored_finished)
        return CK_OK;
    const ck_topic *tp = t->env->topic;
    int total = tp->ops->npartitions(tp->ctx);
    for (int p = t->rknown < 0 ? 0 : t->rknown; p < total; p++) {
        int dup = 0;
        for (int k = 0; k < t->nparts && !dup; k++)
            dup = t->parts[k] == p;
        if (dup || t->nparts >= total ||
            ck_topic_owner(tp->name, p, t->g->v[t->vertex].parallelism) != t->subtask)
            continue;
        t->parts[t->nparts] = p;
        t->end[t->nparts] = tp->ops->size(tp->ctx, p);
        t->off[t->nparts] = 0;
        t->maxts[t->nparts] = CK_WM_MIN;
        t->nparts++;
    }
    return CK_OK;
}

/* The next element of channel state data[0..len) (whole elements) from
 * *at, decoded into e, *at past it: 1; 0 at the end; CK_ECORRUPT. */
static int chan_next(const uint8_t *data, size_t len, size_t *at, ck_elem *e)
{
    if (*at == len)
        return 0;
    if (len - *at < 4 || ck_get_u32(data + *at) > len - *at - 4)
        return CK_ECORRUPT;
    size_t n = 4 + (size_t)ck_get_u32(data + *at);
    int rc = ck_elem_decode(data + *at, n, e);
    *at += n;
    return rc ? rc : 1;
}

/* Output channel state of an old subtask over o's edge, at another
 * parallelism: each record goes out again by the edge's partitioner over
 * the new consumers, ahead of anything new; watermarks and barriers of
 * the old channel are dropped (gate.h ck_gate_replay_moved says why). The
 * state holds whole elements (partition.h). */
static int reroute(ck_rp_out *o, const uint8_t *data, size_t len, uint64_t *records)
{
    if (o->edge->ship == CK_SHIP_BROADCAST)
        return CK_ECORRUPT; /* no channel state on broadcast edges */
    ck_elem e;
    int rc;
    for (size_t at = 0; (rc = chan_next(data, len, &at, &e)) == 1;)
        if (e.tag == CK_EL_RECORD) {
            if ((rc = ck_rp_emit_rec(&o->rp, ck_rp_out_route(o, &e.u.rec), &e.u.rec)))
                return rc;
            ++*records;
        }
    if (rc)
        return rc;
    ck_rp_flush(&o->rp);
    return CK_OK;
}

/* The records in channel state data[0..len) (whole elements) that a gate
 * filtering by key groups kgr of max parallelism maxp (0: none) keeps. */
static uint64_t records_in(const uint8_t *data, size_t len, ck_kgr kgr, int maxp)
{
    uint64_t n = 0;
    ck_elem e;
    for (size_t at = 0; chan_next(data, len, &at, &e) == 1;)
        n += e.tag == CK_EL_RECORD &&
             (maxp <= 0 || ck_kgr_contains(kgr, ck_kg_of_hash(ck_rec_jhash(&e.u.rec), maxp)));
    return n;
}

/* Puts a decoded snapshot in place: state, source offsets, sink transactions. */
static int restore_apply_snapshot(ck_task *t, const ck_snapshot *s, const char **why)
{
    /* The state file must be of the snapshot's subtask the assignment
     * gave this subtask (assign.h), as the DEPLOY said: the subtask's
     * own, or (another parallelism) the one its take names, each old
     * subtask's once. */
    const ck_restore_take *tk = t->rtakes ? &t->rtakes[t->restore_next] : NULL;
    uint32_t what = tk ? tk->what
                       : CK_ASG_KEYED | CK_ASG_OPSTATE | CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS |
                             CK_ASG_TXNS |
                             (t->from.moved_in || t->from.moved_out ? CK_ASG_REROUTE : 0);
    *why = "it is not of the snapshot's subtask the assignment gave this subtask";
    if (s->checkpoint_id != t->restore_cp ||
        (uint32_t)s->vertex != (tk ? tk->old_vertex : t->from.old_vertex) ||
        (uint32_t)s->subtask != (tk ? tk->old_subtask : t->from.old_subtask) ||
        (uint32_t)s->parallelism != (tk ? tk->old_parallelism : t->from.old_parallelism))
        return CK_ECORRUPT;
    for (uint32_t k = 0; tk && k < t->restore_next; k++) {
        const ck_restore_take *o = &t->rtakes[k];
        if (t->restore.v[k].kind == CK_HANDLE_SNAPSHOT && o->old_vertex == tk->old_vertex &&
            o->old_subtask == tk->old_subtask) {
            *why = "the state file of an old subtask given twice";
            return CK_ECORRUPT;
        }
    }
    t->rcanon++;
    if (s->finished && tk) {
        /* An old subtask that had finished: nothing of it is left to
         * take; its partitions (read to their end) are no one's. This
         * subtask stays finished when every old one it restores was. */
        t->rfinished++;
        for (uint32_t c = 0; c < t->nrchunks; c++)
            if (restore_counted_chunk(t, &t->rchunks[c]) && t->rchunks[c].old == tk->old_subtask)
                t->rchunk_done += t->rchunks[c].n;
        return CK_OK;
    }
    if (s->finished) {
        /* It had finished: it stays so. A source reads nothing; the rest
         * pass their upstreams' END_OF_PARTITION on, and it reports
         * finished without waiting for a checkpoint. */
        t->restored_finished = 1;
        for (int k = 0; k < t->nparts; k++)
            t->off[k] = t->end[k];
        return CK_OK;
    }
    *why = "its state does not match the job's operators";
    /* keyed state of the take's key groups alone (within the subtask's:
     * ck_chain_restore_part), accumulating over the files */
    ck_kgr none = CK_KGR_EMPTY;
    /* its buffers' operator state: the entries the assignment dealt it
     * of this old subtask's lists */
    ck_chain_deal deal = {.old = tk ? tk->old_subtask : 0, .v = t->rchunks, .nv = t->nrchunks};
    int rc = tk ? ck_chain_restore_part(&t->chain, s, (what & CK_ASG_KEYED) ? &tk->kgr : &none,
                                        (what & CK_ASG_OPSTATE) != 0, &deal)
                : ck_chain_restore(&t->chain, s);
    if (rc)
        return rc;
    t->rchunk_done += deal.applied;
    if (s->has_source != t->is_source)
        return CK_ECORRUPT;
    /* Channel state (an unaligned checkpoint): what its barriers overtook
     * is sent and read again before anything new. */
    *why = "its channel state does not match the job's channels";
    /* At another parallelism a keyed subtask keeps, of its restored input
     * state, the records of its own key groups (gate.h). */
    if (t->has_gate && ck_chain_keyed(&t->chain) &&
        t->from.old_parallelism != (uint32_t)t->g->v[t->vertex].parallelism)
        ck_gate_replay_filter(&t->gate, t->chain.ops[0].kgr,
                              t->chain.ops[0].spec->max_parallelism);
    /* Its state moves to other channels (assign.h CK_ASG_REROUTE). */
    int moved = (what & CK_ASG_REROUTE) != 0;
    if (moved && t->has_gate)
        ck_gate_replay_moved(&t->gate);
    for (int i = 0; i < s->nchans; i++) {
        const ck_chan_state *cs = &s->chans[i];
        if (!(what & (cs->out ? CK_ASG_OUT_CHANNELS : CK_ASG_CHANNELS)))
            continue; /* another new subtask's to replay */
        rc = CK_ECORRUPT;
        if (cs->out) {
            for (int k = 0; k < t->nrps; k++)
                if (t->rps[k].edge->id == cs->edge)
                    rc = moved ? reroute(&t->rps[k], cs->data, cs->len, &t->restore_records)
                               : ck_rp_replay(&t->rps[k].rp, cs->peer, cs->data, cs->len);
            if (!rc && !moved)
                t->restore_records += records_in(cs->data, cs->len, CK_KGR_EMPTY, 0);
        } else if (t->has_gate && t->gate.edge == cs->edge) {
            t->restore_records +=
                records_in(cs->data, cs->len, t->gate.rf_kgr, t->gate.rf_maxp);
            rc = ck_gate_replay(&t->gate, cs->peer, cs->data, cs->len);
        }
        if (rc)
            return rc;
    }
    /* Barriers and cancel markers of checkpoints up to the restored one,
     * replayed from the state, are old news. */
    if (s->nchans && t->has_gate && (what & CK_ASG_CHANNELS))
        t->gate.done_id = t->restore_cp;
    *why = "its source's partitions do not match the job's input or the assignment";
    if (s->has_source && (what & CK_ASG_OPSTATE) &&
        (rc = tk ? restore_source_chunks(t, &s->source, tk) : restore_source(t, &s->source)))
        return rc;
    *why = "its sinks' transactions do not match the job's sinks";
    const ck_vertex *v = &t->g->v[t->vertex];
    for (int i = 0; i < s->nsinks; i++) {
        const ck_sink_capture *sk = &s->sinks[i];
        ck_op *op = NULL;
        for (int k = 0; k < t->chain.nops; k++)
            if (v->ops[k] == sk->op)
                op = &t->chain.ops[k];
        if (!op || op->spec->kind != CK_OP_SINK || !op->two_phase)
            return CK_ECORRUPT;
        /* Transactions pre-committed up to the restored checkpoint commit now
         * (again, if they had); the one it left open is aborted. Those the
         * failed attempt began after it stay uncommitted for good: this
         * attempt numbers its own transactions, so that it never writes
         * into one of them (and commits its leftovers with its own). */
        /* Another parallelism's: the old subtask's output, by the one new
         * subtask the assignment gave its transactions (TXNS). */
        uint32_t sink = tk ? ck_sink_id(sk->op, (int)tk->old_subtask) : op->sink_id;
        for (int p = 0; (what & CK_ASG_TXNS) && p < sk->npending; p++)
            if ((rc = t->plat->ops->output_commit(t->plat, sink, sk->pending[p])))
                return rc;
        if ((what & CK_ASG_TXNS) &&
            (rc = t->plat->ops->output_abort(t->plat, sink, sk->open_txn)))
            return rc;
        op->txn = task_first_txn(t);
    }
    return CK_OK;
}

/* The native files a restore downloaded so far. */
static void restore_free_files(ck_task *t)
{
    for (uint32_t i = 0; t->rdata && i < t->restore.n; i++)
        free(t->rdata[i]);
    free(t->rdata);
    free(t->rlen);
    t->rdata = NULL;
    t->rlen = NULL;
    for (uint32_t i = 0; i < t->nsegobj; i++) {
        free(t->segobj[i].key);
        free(t->segobj[i].data);
    }
    free(t->segobj);
    t->segobj = NULL;
    t->nsegobj = 0;
    free(t->rhead);
    t->rhead = NULL;
    t->rhead_len = 0;
    t->rphase = RANGED_NONE;
}

void task_restore_free(ck_task *t)
{
    restore_free_files(t); /* before the handles: it counts them */
    ck_handles_free(&t->restore);
    free(t->rtakes);
    free(t->rchunks);
    t->rtakes = NULL;
    t->rchunks = NULL;
    t->nrchunks = 0;
}

/* 1 when the downloaded range o holds h's segment. */
static int restore_seg_holds(const struct seg_obj *o, const ck_handle *h)
{
    return !strcmp(o->key, h->key) && h->offset >= o->at && h->offset - o->at <= o->len &&
           h->bytes <= o->len - (h->offset - o->at);
}

/* The range to download for the handle being restored, a segment: its
 * own, grown by every segment of the same object still to restore that
 * lies within SEG_READ_GAP of it, as Flink reads a merged file's segments
 * by their offsets and not the whole file (a file a subtask appends to
 * across checkpoints holds segments no checkpoint refers to any more). */
static void restore_seg_range(const ck_task *t, uint64_t *at, uint64_t *len)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    uint64_t lo = h->offset, hi = h->offset + h->bytes;
    for (int grew = 1; grew;) {
        grew = 0;
        for (uint32_t k = t->restore_next + 1; k < t->restore.n; k++) {
            const ck_handle *o = &t->restore.v[k];
            uint64_t s = o->offset, e = o->offset + o->bytes;
            if (!(o->flags & CK_HANDLE_SEGMENT) || strcmp(o->key, h->key) ||
                (s >= lo && e <= hi) || s > hi + SEG_READ_GAP || e + SEG_READ_GAP < lo)
                continue;
            lo = s < lo ? s : lo;
            hi = e > hi ? e : hi;
            grew = 1;
        }
    }
    *at = lo;
    *len = hi - lo;
}

/* What the len bytes at `at` of object key weigh for the restore: the
 * bytes, plus what the segments of it that the restore holds and that lie
 * within them weigh beyond theirs (handle.h CK_HANDLE_MODELLED); 0 when
 * nothing in it weighs more than it holds. */
static uint64_t restore_range_model(const ck_task *t, const char *key, uint64_t at, uint64_t len)
{
    uint64_t extra = 0, hi = 0, end = len > UINT64_MAX - at ? UINT64_MAX : at + len;
    for (uint32_t k = 0; k < t->restore.n; k++) {
        const ck_handle *o = &t->restore.v[k];
        if ((o->flags & CK_HANDLE_SEGMENT) && !strcmp(o->key, key) && o->offset >= at &&
            o->offset + o->bytes <= end) {
            extra += o->modelled - o->bytes;
            hi = o->offset + o->bytes > hi ? o->offset + o->bytes : hi;
        }
    }
    if (!extra)
        return 0;
    return (end == UINT64_MAX ? hi - at : len) + extra; /* read whole: up to its last segment */
}

/* Every handle restored: the native files go in place, then the task
 * starts (once the backends' loading work is charged). */
static void restore_finish(ck_task *t)
{
    t->restore_dl = ck_now(t->plat);
    if (t->rtakes && t->rcanon && t->rfinished == t->rcanon) {
        t->restored_finished = 1; /* every old subtask it restores had finished */
        for (int k = 0; k < t->nparts; k++)
            t->off[k] = t->end[k];
    }
    if (restore_chunks_done(t) || restore_source_new(t)) {
        snprintf(t->restore_key, sizeof(t->restore_key), "%s", t->from.dir);
        task_restore_fail(t, CK_FAIL_RESTORE_UNREADABLE,
                          "the operator state the assignment dealt it did not all come");
        restore_free_files(t);
        return;
    }
    int failed = restore_install_native(t) || task_clog_restore(t);
    restore_free_files(t);
    if (failed)
        return;
    /* What the backends did on their stores loading it is part of
     * the restore, not of the first records' processing. */
    ck_time unused;
    uint64_t disk;
    t->restore_flops += ck_chain_take_flops(&t->chain, t->restore_dl, &unused);
    t->restore_flops += ck_chain_take_background(&t->chain, &disk, NULL);
    t->restore_disk += disk;
    if (t->restore_flops > 0 || t->restore_disk > 0)
        t->plat->ops->background(t->plat, t->restore_dl, t->restore_flops, t->restore_disk,
                                 RESTORE_LOAD_TOKEN);
    else
        task_started(t);
}

/* The key groups of the canonical file being restored that its take
 * wants (CK_KGR_EMPTY: none, its other state alone); *narrower: fewer
 * than the file holds. */
static ck_kgr ranged_want(const ck_task *t, int *narrower)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    const ck_restore_take *tk = t->rtakes ? &t->rtakes[t->restore_next] : NULL;
    ck_kgr want =
        tk && (tk->what & CK_ASG_KEYED) ? ck_kgr_intersect(tk->kgr, h->kgr) : CK_KGR_EMPTY;
    int wn = want.end - want.start + 1, hn = h->kgr.end - h->kgr.start + 1;
    *narrower = tk && hn > 0 && (wn < 0 ? 0 : wn) < hn;
    return want;
}

/* What len bytes of the file being restored weigh (its modelled bytes
 * in proportion; 0: its bytes). */
static uint64_t ranged_cost(const ck_handle *h, uint64_t len)
{
    if (h->modelled <= h->bytes || !h->bytes)
        return 0;
    return (uint64_t)((double)len * (double)h->modelled / (double)h->bytes);
}

/* Asks for the len bytes at `at` of the file being restored. */
static void ranged_get(ck_task *t, int phase, uint64_t at, uint64_t len)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    t->rphase = phase;
    t->seg_at = at;
    t->restore_cost = ranged_cost(h, len);
    task_weigh(t, h->key, t->restore_cost);
    int rc = t->plat->ops->store_get_range(t->plat, h->key, at, len, RESTORE_TOKEN);
    if (rc)
        task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(rc));
}

/* Starts reading the canonical file being restored by key group, when
 * its take wants fewer key groups than it holds: 1, or 0 (read whole). */
static int restore_ranged(ck_task *t)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    int narrower;
    ranged_want(t, &narrower);
    if (h->kind != CK_HANDLE_SNAPSHOT || (h->flags & (CK_HANDLE_SEGMENT | CK_HANDLE_INLINE)) ||
        !narrower || !t->plat->ops->store_get_range || h->bytes <= 2 * RANGED_HEAD_READ)
        return 0;
    t->rfetched = 0;
    ranged_get(t, RANGED_HEAD, 0, RANGED_HEAD_READ);
    return 1;
}

/* The file read by key group is in: its head (rhead) and its key groups'
 * blocks (the len bytes at seg_at at p; the head's when p is NULL),
 * decoded and applied; then the next handle. 0, or non-zero when the
 * task failed. */
static int ranged_apply(ck_task *t, const uint8_t *p, size_t len)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    int narrower;
    ck_kgr want = ranged_want(t, &narrower);
    if (ck_alloc_fails(t->plat, CK_POINT_RESTORE)) {
        task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
        return 1;
    }
    /* decoding it: what was read, as heavy as it is modelled */
    uint64_t w = ranged_cost(h, t->rfetched);
    t->restore_flops += SERIALIZE_FLOPS_PER_BYTE * (double)(w > t->rfetched ? w : t->rfetched);
    ck_snapshot s;
    const char *why;
    int rc = ck_snap_decode_head(t->rhead, t->rhead_len, &s, &why);
    if (!rc && s.file_len != h->bytes) {
        ck_snapshot_free(&s);
        why = "not the file the checkpoint recorded (size)";
        rc = CK_ECHECKSUM;
    }
    if (rc) {
        task_restore_fail(t, task_restore_code(rc), rc == CK_ENOMEM ? ck_strerror(rc) : why);
        return 1;
    }
    uint64_t at, rl;
    ck_snap_range(&s, want, &at, &rl);
    if (!p) { /* the blocks are within the head's read */
        p = at <= t->rhead_len ? t->rhead + at : t->rhead;
        len = at <= t->rhead_len ? t->rhead_len - (size_t)at : 0;
    }
    rc = ck_snap_decode_range(&s, want, p, len, &why);
    if (!rc)
        rc = restore_apply_snapshot(t, &s, &why);
    ck_snapshot_free(&s);
    if (rc) {
        task_restore_fail(t, task_restore_code(rc),
                          rc == CK_ECORRUPT || rc == CK_ECHECKSUM ? why : ck_strerror(rc));
        return 1;
    }
    free(t->rhead);
    t->rhead = NULL;
    t->rhead_len = 0;
    t->rphase = RANGED_NONE;
    t->restore_next++;
    return 0;
}

/* A ranged get of the file read by key group landed: the head (more of
 * it asked for when longer than what came), then its key groups' blocks
 * (those the head's read took in not read again: the rest of them follows
 * its bytes). Returns 1 when it kept data. */
static int ranged_done(ck_task *t, uint8_t *data, size_t len)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    t->restore_bytes += restore_weighed(t, len);
    t->rfetched += len;
    if (t->rphase == RANGED_BLOCKS && t->seg_at != t->rhead_len) {
        if (!ranged_apply(t, data, len))
            restore_next(t);
        return 0;
    }
    int kept = 0, blocks = t->rphase == RANGED_BLOCKS; /* these follow the head's bytes */
    if (!t->rhead) {
        t->rhead = data;
        kept = 1;
    } else {
        uint8_t *v = realloc(t->rhead, t->rhead_len + len);
        if (!v) {
            task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
            return 0;
        }
        memcpy(v + t->rhead_len, data, len);
        t->rhead = v;
    }
    t->rhead_len += len;
    if (blocks) {
        if (!ranged_apply(t, NULL, 0))
            restore_next(t);
        return kept;
    }
    uint64_t head = 0;
    int rc = ck_snap_head_len(t->rhead, t->rhead_len, &head);
    if (rc == 0) { /* an older file, without an index: read it whole */
        free(t->rhead);
        t->rhead = NULL;
        t->rhead_len = 0;
        t->rphase = RANGED_NONE;
        t->seg_at = 0;
        t->restore_cost = h->modelled > h->bytes ? h->modelled : 0;
        task_weigh(t, h->key, t->restore_cost);
        if ((rc = t->plat->ops->store_get(t->plat, h->key, RESTORE_TOKEN)))
            task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(rc));
        return kept;
    }
    if (rc < 0 || head > h->bytes || head < CK_SNAP_PREFIX) {
        task_restore_fail(t, rc < 0 ? task_restore_code(rc) : CK_FAIL_RESTORE_DAMAGED,
                          "its head is not that of the file the checkpoint recorded");
        return kept;
    }
    if (head > t->rhead_len) { /* the rest of the head */
        if (len == 0) {
            task_restore_fail(t, CK_FAIL_RESTORE_DAMAGED, "it ends before its head does");
            return kept;
        }
        ranged_get(t, RANGED_HEAD, t->rhead_len, head - t->rhead_len);
        return kept;
    }
    ck_snapshot s;
    const char *why;
    if ((rc = ck_snap_decode_head(t->rhead, t->rhead_len, &s, &why))) {
        task_restore_fail(t, task_restore_code(rc), rc == CK_ENOMEM ? ck_strerror(rc) : why);
        return kept;
    }
    int narrower;
    uint64_t at, rl;
    ck_snap_range(&s, ranged_want(t, &narrower), &at, &rl);
    ck_snapshot_free(&s);
    if (rl > 0 && at + rl > t->rhead_len) { /* what the head's read did not take in */
        uint64_t from = at > t->rhead_len ? at : t->rhead_len;
        ranged_get(t, RANGED_BLOCKS, from, at + rl - from);
        return kept;
    }
    if (!ranged_apply(t, NULL, 0))
        restore_next(t);
    return kept;
}

/* Downloads the next of the state handles to restore; once all are in
 * place, the task starts. */
static void restore_next(ck_task *t)
{
    /* a segment of an object downloaded already is restored from it at
     * once, and the handle after it is next */
    for (;;) {
        if (t->restore_next == t->restore.n) {
            restore_finish(t);
            return;
        }
        const ck_handle *h = &t->restore.v[t->restore_next];
        snprintf(t->restore_key, sizeof(t->restore_key), "%s", h->key);
        if (h->flags & CK_HANDLE_INLINE) { /* it came with the deployment */
            uint8_t *d = malloc(h->bytes ? h->bytes : 1);
            int kept = 0;
            if (!d) {
                task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
                return;
            }
            memcpy(d, h->data, h->bytes);
            int rc = restore_file(t, d, h->bytes, &kept);
            if (!kept)
                free(d);
            if (rc)
                return;
            continue;
        }
        int seg = (h->flags & CK_HANDLE_SEGMENT) != 0;
        uint32_t obj = 0;
        while (seg && obj < t->nsegobj && !restore_seg_holds(&t->segobj[obj], h))
            obj++;
        if (!seg && restore_ranged(t))
            return;
        if (!seg || obj == t->nsegobj) {
            int rc;
            uint64_t len;
            if (seg && t->plat->ops->store_get_range) {
                restore_seg_range(t, &t->seg_at, &len);
                t->restore_cost = restore_range_model(t, h->key, t->seg_at, len);
                task_weigh(t, h->key, t->restore_cost);
                rc = t->plat->ops->store_get_range(t->plat, h->key, t->seg_at, len,
                                                   RESTORE_TOKEN);
            } else {
                t->seg_at = 0;
                /* a merged object read whole: its segments' weight, as a range of all */
                t->restore_cost = seg ? restore_range_model(t, h->key, 0, UINT64_MAX)
                                      : h->modelled > h->bytes ? h->modelled : 0;
                task_weigh(t, h->key, t->restore_cost);
                rc = t->plat->ops->store_get(t->plat, h->key, RESTORE_TOKEN);
            }
            if (rc)
                task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(rc));
            return;
        }
        if (restore_segment(t, obj))
            return;
    }
}

void task_restore_start(ck_task *t)
{
    t->state = CK_TASK_RESTORING;
    t->restore_t0 = ck_now(t->plat);
    /* its producers send recovered markers after the channel state they
     * restored (gate.h) */
    if (t->from.moved_in && t->has_gate)
        ck_gate_expect_recovered(&t->gate);
    if (t->rtakes && t->is_source) {
        t->nparts = 0; /* another parallelism's: exactly what the files deal it */
        t->rknown = -1;
    }
    if (!t->restore.n && !t->rtakes) {
        snprintf(t->restore_key, sizeof(t->restore_key), "%s", t->from.dir);
        task_restore_fail(t, CK_FAIL_RESTORE_MISSING, "no state handles for this subtask");
        return;
    }
    restore_next(t);
}

/* The old instance native handle k is of: its take's old subtask, or
 * (the subtask's own state) 0. */
static uint32_t native_origin(const ck_task *t, uint32_t k)
{
    return t->rtakes ? t->rtakes[k].old_subtask : 0;
}

/* Hands operator op's native files (names/data/lens, grouped by old
 * instance as restore_install_native laid them out from handle `first`
 * on) to its backend's native_rescale, one source per old instance with
 * its key groups. */
static int restore_rescale_native(ck_task *t, ck_kstate *ks, uint32_t op, uint32_t first,
                                  const char **names, uint8_t **data, size_t *lens)
{
    uint32_t n = t->restore.n;
    ck_native_source *src = calloc(n + 1, sizeof(*src));
    if (!src)
        return CK_ENOMEM;
    uint32_t nsrc = 0, m = 0;
    for (uint32_t k = first; k < n; k++) {
        const ck_handle *f = &t->restore.v[k];
        if (f->kind != CK_HANDLE_NATIVE || f->op != op)
            continue;
        int seen = 0;
        for (uint32_t q = first; q < k && !seen; q++)
            seen = t->restore.v[q].kind == CK_HANDLE_NATIVE && t->restore.v[q].op == op &&
                   native_origin(t, q) == native_origin(t, k);
        if (seen)
            continue;
        ck_native_source *s = &src[nsrc++];
        s->kgr = f->kgr;
        s->names = names + m;
        s->data = data + m;
        s->lens = lens + m;
        for (uint32_t q = k; q < n; q++) {
            const ck_handle *e = &t->restore.v[q];
            if (e->kind == CK_HANDLE_NATIVE && e->op == op &&
                native_origin(t, q) == native_origin(t, k)) {
                s->n++;
                m++;
            }
        }
    }
    int rc = ks->ops->native_rescale(ks, nsrc, src);
    free(src);
    return rc;
}

/* Puts every operator's native files in place (its backend opens them),
 * once all are downloaded; they are what the next checkpoints refer to.
 * Returns 0, or non-zero when the task failed. */
static int restore_install_native(ck_task *t)
{
    uint32_t n = t->restore.n;
    const char **names = calloc(n + 1, sizeof(*names));
    uint8_t **data = calloc(n + 1, sizeof(*data));
    size_t *lens = calloc(n + 1, sizeof(*lens));
    int rc = names && data && lens ? CK_OK : CK_ENOMEM;
    for (uint32_t i = 0; i < n && !rc; i++) {
        const ck_handle *h = &t->restore.v[i];
        int first = h->kind == CK_HANDLE_NATIVE;
        for (uint32_t k = 0; k < i && first; k++)
            first = !(t->restore.v[k].kind == CK_HANDLE_NATIVE && t->restore.v[k].op == h->op);
        if (!first)
            continue;
        /* its files, grouped by the old instance they are of (the take's
         * old subtask; one, its own, when the parallelism is unchanged) */
        uint32_t m = 0, nsrc = 0;
        uint64_t real = 0, model = 0;
        ck_op *own = ck_chain_op(&t->chain, (int)h->op);
        int rescale = 0;
        for (uint32_t k = i; k < n; k++) {
            const ck_handle *f = &t->restore.v[k];
            if (f->kind != CK_HANDLE_NATIVE || f->op != h->op)
                continue;
            int seen = 0;
            for (uint32_t q = i; q < k && !seen; q++)
                seen = t->restore.v[q].kind == CK_HANDLE_NATIVE && t->restore.v[q].op == h->op &&
                       native_origin(t, q) == native_origin(t, k);
            if (seen)
                continue;
            nsrc++;
            for (uint32_t q = k; q < n; q++) {
                const ck_handle *e = &t->restore.v[q];
                if (e->kind != CK_HANDLE_NATIVE || e->op != h->op ||
                    native_origin(t, q) != native_origin(t, k))
                    continue;
                rescale |= !own || !ck_kgr_equal(e->kgr, own->kgr);
                names[m] = e->local;
                data[m] = t->rdata[q];
                lens[m++] = t->rlen[q];
                real += e->bytes;
                model += e->modelled;
            }
        }
        rescale |= nsrc > 1;
        /* its flushes and compactions, from the restore's on, weigh what
         * its files did (value_size), until its next native snapshot says */
        ck_op *op = ck_chain_op(&t->chain, (int)h->op);
        if (op && real)
            op->heavy = (double)model / (double)real;
        ck_kstate *ks = ck_chain_kstate(&t->chain, (int)h->op);
        snprintf(t->restore_key, sizeof(t->restore_key), "%s", h->key);
        if (!ks || !ks->ops->native_restore) {
            task_restore_fail(t, CK_FAIL_RESTORE_UNREADABLE,
                              "native state of an operator whose backend cannot read it");
            rc = CK_ECORRUPT;
            break;
        }
        if (rescale && !ks->ops->native_rescale) {
            task_restore_fail(t, CK_FAIL_RESTORE_UNREADABLE,
                              "native state of other key groups than its operator's (a restore "
                              "at another parallelism), which its backend cannot rescale");
            rc = CK_ECORRUPT;
            break;
        }
        if (rescale)
            rc = restore_rescale_native(t, ks, h->op, i, names, data, lens);
        else
            rc = ks->ops->native_restore(ks, m, names, data, lens);
        if (rc) {
            task_restore_fail(t, task_restore_code(rc),
                              rc == CK_ECORRUPT ? "its operator's native files do not open"
                                                : ck_strerror(rc));
            break;
        }
        /* A rebuilt instance starts a new file history (Flink's new
         * backend UUID): its first incremental checkpoint uploads every
         * file, none of the old instances' is confirmed for reuse. */
        for (uint32_t k = i; k < n && !rc && !rescale; k++) {
            const ck_handle *f = &t->restore.v[k];
            if (f->kind == CK_HANDLE_NATIVE && f->op == h->op && (f->flags & CK_HANDLE_SHARED))
                rc = ck_handles_add_like(&t->confirmed, f,
                                         f->flags & (CK_HANDLE_SHARED | CK_HANDLE_SEGMENT));
        }
        if (rc)
            task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(rc));
    }
    if (rc == CK_ENOMEM && t->state != CK_TASK_FAILED)
        task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(rc));
    free(names);
    free(data);
    free(lens);
    return rc;
}

/* Takes the file of the handle being restored: checks it and puts it in
 * place (a canonical file) or keeps it (*kept: a native file, put in
 * place once all are in); then the next handle is the one being
 * restored. Returns 0, or non-zero when the task failed. */
static int restore_file(ck_task *t, uint8_t *data, size_t len, int *kept)
{
    *kept = 0;
    const ck_handle *h = &t->restore.v[t->restore_next];
    /* Loading it allocates (decoding it, keeping it until all are in):
     * the platform may make that fail, as memory running out would. */
    if (ck_alloc_fails(t->plat, CK_POINT_RESTORE)) {
        task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
        return 1;
    }
    if (h->kind != CK_HANDLE_SNAPSHOT) {
        /* a native file's handle has the CRC of the whole file; a
         * changelog segment or canonical materialization ends with its own */
        int native = ck_handle_crc_whole(h);
        uint32_t crc = native ? ck_crc32c(0, data, len)
                       : len >= 4                  ? ck_get_u32(data + len - 4)
                                                   : ~h->crc;
        if (len != h->bytes || crc != h->crc) {
            task_restore_fail(t, CK_FAIL_RESTORE_DAMAGED,
                              "not the file the checkpoint recorded (size or checksum)");
            return 1;
        }
        if (!t->rdata) {
            t->rdata = calloc(t->restore.n, sizeof(*t->rdata));
            t->rlen = calloc(t->restore.n, sizeof(*t->rlen));
            if (!t->rdata || !t->rlen) {
                task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
                return 1;
            }
        }
        t->rdata[t->restore_next] = data;
        t->rlen[t->restore_next] = len;
        /* what its state weighs, beyond its bytes, costs as bytes would */
        uint64_t heavy = len + (h->modelled - h->bytes);
        if (native) /* the backend opens it from the local disk */
            t->restore_disk += heavy;
        else /* decoding it */
            t->restore_flops += SERIALIZE_FLOPS_PER_BYTE * (double)heavy;
        t->restore_next++;
        *kept = 1;
        return 0;
    }
    if (len != h->bytes || len < 4 || ck_get_u32(data + len - 4) != h->crc) {
        task_restore_fail(t, CK_FAIL_RESTORE_DAMAGED,
                          "not the file the checkpoint recorded (size or checksum)");
        return 1;
    }
    /* decoding it, its state as heavy as it is modelled */
    t->restore_flops += SERIALIZE_FLOPS_PER_BYTE * (double)(len + (h->modelled - h->bytes));
    ck_snapshot s;
    const char *why;
    int rc = ck_snap_decode(data, len, &s, &why);
    if (rc) {
        task_restore_fail(t, task_restore_code(rc), rc == CK_ENOMEM ? ck_strerror(rc) : why);
        return 1;
    }
    rc = restore_apply_snapshot(t, &s, &why);
    ck_snapshot_free(&s);
    if (rc) {
        task_restore_fail(t, task_restore_code(rc), rc == CK_ECORRUPT ? why : ck_strerror(rc));
        return 1;
    }
    t->restore_next++;
    return 0;
}

/* Restores the handle being restored, a segment of the object segobj[obj]
 * (downloaded), from a copy of its bytes; the object goes once no handle
 * after it has a segment of it. Returns 0, or non-zero when the task
 * failed. */
static int restore_segment(ck_task *t, uint32_t obj)
{
    const ck_handle *h = &t->restore.v[t->restore_next];
    struct seg_obj *o = &t->segobj[obj];
    if (!restore_seg_holds(o, h)) { /* a download cut short: the object ends first */
        task_restore_fail(t, CK_FAIL_RESTORE_DAMAGED,
                          "its merged file ends before the segment the checkpoint recorded");
        return 1;
    }
    uint8_t *d = malloc(h->bytes ? h->bytes : 1);
    if (!d) {
        task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
        return 1;
    }
    memcpy(d, o->data + (h->offset - o->at), h->bytes);
    int later = 0;
    for (uint32_t k = t->restore_next + 1; k < t->restore.n && !later; k++) {
        const ck_handle *n = &t->restore.v[k];
        later = (n->flags & CK_HANDLE_SEGMENT) && restore_seg_holds(o, n);
    }
    if (!later) {
        free(o->key);
        free(o->data);
        *o = t->segobj[--t->nsegobj];
    }
    int kept, rc = restore_file(t, d, h->bytes, &kept);
    if (!kept)
        free(d);
    return rc;
}

/* What a download of len bytes that landed weighed: what was declared
 * for it (restore_cost), or its bytes. */
static uint64_t restore_weighed(ck_task *t, size_t len)
{
    uint64_t w = t->restore_cost > len ? t->restore_cost : len;
    t->restore_cost = 0;
    return w;
}

/* A download for the restore landed. Returns 1 when it kept data. */
int task_restore_done(ck_task *t, int status, uint8_t *data, size_t len)
{
    if (status) {
        task_restore_fail(t, status == CK_ENOTFOUND ? CK_FAIL_RESTORE_MISSING : CK_FAIL_RESTORE_IO,
                          status == CK_ENOTFOUND ? "missing" : ck_strerror(status));
        return 0;
    }
    if (t->rphase != RANGED_NONE)
        return ranged_done(t, data, len);
    const ck_handle *h = &t->restore.v[t->restore_next];
    if (h->flags & CK_HANDLE_SEGMENT) { /* a range of a merged object: segments come from it */
        struct seg_obj *v = realloc(t->segobj, (t->nsegobj + 1) * sizeof(*v));
        size_t kl = strlen(h->key) + 1;
        char *key = malloc(kl);
        if (key)
            memcpy(key, h->key, kl);
        if (v)
            t->segobj = v;
        if (!v || !key) {
            free(key);
            task_restore_fail(t, CK_FAIL_RESTORE_IO, ck_strerror(CK_ENOMEM));
            return 0;
        }
        t->segobj[t->nsegobj++] =
            (struct seg_obj){.key = key, .at = t->seg_at, .data = data, .len = len};
        t->restore_bytes += restore_weighed(t, len);
        if (!restore_segment(t, t->nsegobj - 1))
            restore_next(t);
        return 1;
    }
    int kept;
    t->restore_bytes += restore_weighed(t, len);
    if (!restore_file(t, data, len, &kept))
        restore_next(t);
    return kept;
}

int task_restore_check(const ck_task *t, ck_inv *v)
{
    CK_INV(v, 9, t->restore_next <= t->restore.n, "handle %u of %u next to restore",
           t->restore_next, t->restore.n);
    CK_INV(v, 9, t->state == CK_TASK_RESTORING || (!t->rdata && !t->nsegobj && !t->rhead),
           "%s, holding %s downloaded files and %u merged ranges",
           ck_task_state_name(t->state), t->rdata ? "its" : "no", t->nsegobj);
    for (uint32_t o = 0; o < t->nsegobj; o++) {
        int later = 0;
        for (uint32_t k = t->restore_next; k < t->restore.n && !later; k++)
            later = (t->restore.v[k].flags & CK_HANDLE_SEGMENT) &&
                    restore_seg_holds(&t->segobj[o], &t->restore.v[k]);
        CK_INV(v, 9, later, "a range of %s kept that no handle still to restore has a segment in",
               t->segobj[o].key);
    }
    return 0;
}
