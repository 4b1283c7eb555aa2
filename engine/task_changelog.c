/*
 * task_changelog.c - a subtask's state changelog (Flink's FLIP-158 DSTL,
 * changelog.h): for each keyed operator with one (state.changelog.*), the
 * segments of its changelog uploaded under shared/, its periodic
 * materializations, what a snapshot refers to, and its state restored.
 *
 * A segment: what the changelog buffered, cut by task_clog_persist at a
 * snapshot's synchronous phase (task_clog_snapshot), past
 * state.changelog.dstl.dfs.preemptive-persist-threshold (task_finish_batch)
 * and at a materialization's start:
 *
 *   buffered --cut: task_clog_persist--> uploading (inflight[])
 *   uploading --landed: task_clog_on_upload--> in the store
 *   uploading --failed--> the task fails (Flink's retries spent)
 *   uploading or in the store --a materialization after it completed,
 *       no acknowledged snapshot nor one under way refers to it-->
 *       deleted (at once; one still uploading once it lands: doomed[])
 *
 * A materialization, every state.changelog.periodic-materialize.interval
 * (none when the interval is negative or periodic materialization off):
 *
 *   idle --the interval passed: task_clog_materialize (changelog cut at
 *       mat_seq; the wrapped state as a canonical file, or its RocksDB
 *       files: clog_materialize_native)--> uploading (mat_busy files)
 *   uploading --a file landed, others on their way--> uploading
 *   uploading --the last landed, all fine: MATERIALIZED to the job
 *       manager, it becomes the last one (mat), segments before it
 *       truncated--> idle
 *   uploading --the last landed, one failed: clog_mat_failed (the files
 *       it uploaded itself deleted)--> idle, or the task fails past
 *       state.changelog.max-failures-allowed in a row
 *
 * A snapshot refers to the last materialization and every segment after
 * it (those in an acknowledged snapshot as reused); it is acknowledged
 * once the segments it needs are in the store (task_clog_snap_ready),
 * and then later ones refer to those as uploaded before them
 * (task_clog_snap_done). A restore loads the materialization (or opens
 * RocksDB on its files) and replays the segments in order over it
 * (task_clog_restore). Segments and materializations are the subtask's
 * until a completed checkpoint refers to them: cancelled, it deletes
 * those no acknowledgement named (task_clog_discard).
 *
 * Invariants (task.h's numbers, checked by ck_task_check):
 *   (8) per operator: at most CLOG_MAX_INFLIGHT segment uploads in
 *       flight, and every segment doomed (deleted once its upload ends)
 *       is one of them; its segments in increasing order of sequence
 *       number; what acknowledged snapshots referred to (acked) at most
 *       what the changelog cut; a materialization's files set aside
 *       (mat_ks) only while it uploads.
 */
#include "task_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "coordinator.h"
#include "crc32c.h"
#include "error.h"
#include "keygroup.h"
#include "storekey.h"

#define CK_INV_MODULE "task" /* invariant.h */

/* The files a materialization set aside for the store's threads go back
 * to its wrapped instance (they have landed, or the task ends). */
static void clog_mat_release(struct task_clog *c)
{
    if (c->mat_ks)
        c->mat_ks->ops->native_release(c->mat_ks, &c->mat_ns);
    c->mat_ks = NULL;
    memset(&c->mat_ns, 0, sizeof(c->mat_ns));
}

/* The sequence number below which op c's changelog is in the store. */
static uint64_t clog_uploaded(const struct task_clog *c)
{
    uint64_t lo = c->log->cut_seq;
    for (int i = 0; i < c->ninflight; i++)
        lo = CK_MIN(lo, c->inflight[i]);
    return lo;
}

/* Which of c's files: a segment starting at seq, or materialization
 * seq's canonical file (name NULL) or native file name. */
struct clog_what {
    int mat;
    uint64_t seq;
    const char *name;
};

/* Names c's file `what` under the job's shared/ directory (into key) and
 * adds its handle to hs: of kind, shared, covering c's operator's key
 * groups, with local name local. Returns 0 or an error. */
static int clog_add_file(ck_task *t, const struct task_clog *c, ck_handles *hs, int kind,
                         const struct clog_what *what, const char *local, size_t len, uint32_t crc,
                         char key[CK_HANDLE_KEY_MAX + 1], uint64_t extra)
{
    char shared[200];
    int rc = ck_sk_shared_dir(shared, sizeof(shared), t->env->job_id);
    if (rc)
        return rc;
    if (what->mat)
        rc = ck_sk_clog_mat(key, CK_HANDLE_KEY_MAX + 1, shared, c->log->op, t->subtask,
                            t->attempt, what->seq, what->name);
    else
        rc = ck_sk_clog_segment(key, CK_HANDLE_KEY_MAX + 1, shared, c->log->op, t->subtask,
                                t->attempt, what->seq);
    if (rc)
        return rc;
    const ck_op *op = &t->chain.ops[c->k];
    rc = ck_handles_add_op(hs, kind, CK_HANDLE_SHARED, key, len, crc, op->kgr,
                           (uint32_t)c->log->op, local);
    if (!rc && extra) /* its state weighs more than it holds (value_size) */
        rc = ck_handles_model_last(hs, (uint64_t)len + extra);
    if (!rc && extra)
        task_weigh(t, key, (uint64_t)len + extra); /* the put that follows */
    return rc;
}

/* The value_size of c's operator (graph.h): what each entry, and each
 * change, weighs beyond its bytes. */
static uint64_t clog_value_size(const ck_task *t, const struct task_clog *c)
{
    return t->chain.ops[c->k].spec->value_size;
}

/* Cuts what c's changelog buffers into a segment and uploads it under
 * shared/ (Flink's DSTL persisting). Returns 0 or an error. */
int task_clog_persist(ck_task *t, struct task_clog *c)
{
    uint8_t *data;
    size_t len;
    uint64_t first;
    uint32_t n;
    int rc = ck_clog_cut(c->log, &data, &len, &first, &n);
    if (rc || !n)
        return rc;
    if (c->ninflight == CLOG_MAX_INFLIGHT) {
        free(data);
        return CK_ENOBUFS;
    }
    char key[CK_HANDLE_KEY_MAX + 1], local[40];
    const struct clog_what what = {0, first, NULL};
    snprintf(local, sizeof(local), "%llu-%u", (unsigned long long)first, n);
    rc = clog_add_file(t, c, &c->segs, CK_HANDLE_CHANGELOG, &what, local, len,
                       ck_get_u32(data + len - 4), key, clog_value_size(t, c) * n);
    if (rc) {
        free(data);
        return rc;
    }
    rc = t->plat->ops->store_put(t->plat, key, data, len,
                                 CLOG_TOKEN | (uint64_t)c->k << 32 | (first & 0xffffffffu));
    if (!rc) {
        c->inflight[c->ninflight++] = first;
        task_state_notes(t, 1 << CK_NOTE_CHANGELOG_UPLOAD);
    }
    return rc;
}

/* The file of materialization handle h (its local name is the sequence
 * number, then for a native file '_' and the file's name); NULL for a
 * canonical file. */
static const char *clog_mat_file(const ck_handle *h)
{
    const char *us = strchr(h->local, '_');
    return us ? us + 1 : NULL;
}

/* Materializes c's wrapped RocksDB instance incrementally, as Flink's
 * changelog backend materializes through RocksDB's incremental snapshot:
 * the instance is flushed and its files set aside; an SST file of the
 * last materialization is referred to again, a new one is uploaded under
 * shared/ (and so are MANIFEST, CURRENT and OPTIONS, small and changing).
 * mat_seq and mat_t0 are set. */
static int clog_materialize_native(ck_task *t, struct task_clog *c, ck_kstate *in)
{
    ck_native_snap ns;
    int rc = in->ops->native_take(in, CLOG_NATIVE_ID | c->mat_seq, &ns);
    if (rc)
        return rc;
    /* Where the platform uploads from paths, the store's threads read the
     * files set aside, which stay so until they land; the sizes are the
     * files', the checksums come with each landing (clog_mat_landed). */
    int from_paths = t->plat->ops->store_put_files && in->ops->native_path;
    ck_handles_free(&c->mat_next);
    c->mat_bytes = c->mat_state = 0;
    uint64_t vs = clog_value_size(t, c); /* what each entry of its SSTs weighs beyond */
    for (uint32_t f = 0; f < ns.n && !rc; f++) {
        const ck_native_file *nf = &ns.files[f];
        char local[CK_HANDLE_LOCAL_MAX + 1], key[CK_HANDLE_KEY_MAX + 1];
        if (snprintf(local, sizeof(local), "%llu_%s", (unsigned long long)c->mat_seq,
                     nf->name) >= (int)sizeof(local)) {
            rc = CK_EINVAL;
            break;
        }
        uint64_t extra = nf->immutable ? nf->entries * vs : 0;
        c->mat_state += nf->size + extra;
        const ck_handle *old = NULL;
        for (uint32_t m = 0; nf->immutable && m < c->mat.n && !old; m++) {
            const char *name = clog_mat_file(&c->mat.v[m]);
            if (name && !strcmp(name, nf->name) && c->mat.v[m].bytes == nf->size)
                old = &c->mat.v[m];
        }
        if (old) {
            rc = ck_handles_add_op(&c->mat_next, CK_HANDLE_MATERIAL,
                                   old->flags & (uint8_t)~CK_HANDLE_MODELLED, old->key,
                                   old->bytes, old->crc, old->kgr, old->op,
                                   local);
            if (!rc)
                rc = ck_handles_model_last(&c->mat_next, old->modelled);
            continue;
        }
        const struct clog_what what = {1, c->mat_seq, nf->name};
        if (from_paths) {
            char path[1024];
            const char *paths[1] = {path};
            uint32_t h = c->mat_next.n;
            if ((rc = in->ops->native_path(in, &ns, f, path, sizeof(path))) ||
                (rc = clog_add_file(t, c, &c->mat_next, CK_HANDLE_MATERIAL, &what, local,
                                    nf->size, 0, key, extra)))
                break;
            rc = t->plat->ops->store_put_files(t->plat, key, paths, 1,
                                               CLOG_TOKEN | CLOG_MAT | (uint64_t)c->k << 32 | h);
            if (!rc) {
                c->mat_bytes += nf->size + extra;
                c->mat_busy++;
            }
            continue;
        }
        uint8_t *data;
        size_t len;
        if ((rc = in->ops->native_read(in, &ns, f, &data, &len)))
            break;
        rc = clog_add_file(t, c, &c->mat_next, CK_HANDLE_MATERIAL, &what, local, len,
                           ck_crc32c(0, data, len), key, extra);
        if (rc) {
            free(data);
            break;
        }
        c->mat_bytes += len + extra;
        rc = t->plat->ops->store_put(t->plat, key, data, len,
                                     CLOG_TOKEN | CLOG_MAT | (uint64_t)c->k << 32);
        if (!rc)
            c->mat_busy++;
    }
    if (from_paths && c->mat_busy) {
        c->mat_ks = in; /* until the last lands, even if one failed to start */
        c->mat_ns = ns;
    } else {
        in->ops->native_release(in, &ns);
    }
    if (!rc && !c->mat_busy)
        rc = CK_EIO; /* an instance has files it always writes anew (its MANIFEST) */
    return rc;
}

/* A materialization's file that the store's threads read from its path
 * landed: its handle (in the token) takes the size and checksum of what
 * they uploaded; a size other than the file's when it was set aside
 * fails the upload. */
static int clog_mat_landed(struct task_clog *c, uint64_t token, const uint8_t *res, size_t len)
{
    uint32_t h = (uint32_t)(token & 0xffffffffu);
    if (h >= c->mat_next.n || len != CK_PUT_FILE_RESULT ||
        ck_get_u64(res) != c->mat_next.v[h].bytes)
        return CK_EPROTO;
    c->mat_next.v[h].crc = ck_get_u32(res + 8);
    return CK_OK;
}

/* Takes a materialization of c's operator: the changelog up to now is cut
 * (so that segments meet it), and the wrapped backend's state, as of now,
 * is written in the canonical format and uploaded under shared/; once it
 * is in the store, later checkpoints refer to it and to the segments
 * after it (Flink's PeriodicMaterializationManager). */
int task_clog_materialize(ck_task *t, struct task_clog *c)
{
    int rc = task_clog_persist(t, c);
    if (rc)
        return rc;
    ck_op *op = &t->chain.ops[c->k];
    ck_kstate *in = ck_clog_kstate_inner(op->ks);
    c->mat_seq = c->log->cut_seq;
    c->mat_t0 = ck_now(t->plat);
    task_state_notes(t, 1 << CK_NOTE_MATERIALIZATION);
    if (t->incremental && in->ops->native_take)
        return clog_materialize_native(t, c, in);
    ck_capture *cap = calloc(1, sizeof(*cap));
    if (!cap)
        return CK_ENOMEM;
    cap->checkpoint_id = c->mat_seq;
    cap->vertex = t->vertex;
    cap->subtask = t->subtask;
    cap->parallelism = t->g->v[t->vertex].parallelism;
    ck_keyed_capture *kc = &cap->keyed[cap->nkeyed++];
    kc->op = c->log->op;
    kc->kind = op->spec->kind;
    kc->max_parallelism = op->spec->max_parallelism;
    kc->kgr = op->kgr;
    kc->nstates = in->nstates;
    memcpy(kc->states, in->states, sizeof(kc->states));
    kc->ops = in->ops;
    kc->ks = in;
    uint8_t *data = NULL;
    size_t len = 0;
    rc = kc->ops->view_take(in, &kc->view);
    if (!rc)
        rc = ck_snap_encode(cap, &data, &len);
    ck_capture_free(cap);
    free(cap);
    if (rc)
        return rc;
    char key[CK_HANDLE_KEY_MAX + 1], local[24];
    const struct clog_what what = {1, c->mat_seq, NULL};
    snprintf(local, sizeof(local), "%llu", (unsigned long long)c->mat_seq);
    ck_handles_free(&c->mat_next);
    uint64_t extra = clog_value_size(t, c) * in->ops->entries(in);
    rc = clog_add_file(t, c, &c->mat_next, CK_HANDLE_MATERIAL, &what, local, len,
                       ck_get_u32(data + len - 4), key, extra);
    if (rc) {
        free(data);
        return rc;
    }
    /* serializing costs background CPU, as a snapshot's asynchronous phase */
    t->plat->ops->background(t->plat, c->mat_t0,
                             SERIALIZE_FLOPS_PER_BYTE * (double)(len + extra), 0,
                             STATE_WORK_TOKEN);
    c->mat_bytes = c->mat_state = len + extra;
    rc = t->plat->ops->store_put(t->plat, key, data, len,
                                 CLOG_TOKEN | CLOG_MAT | (uint64_t)c->k << 32);
    if (!rc)
        c->mat_busy = 1;
    return rc;
}

/* A materialization failed (an upload of it did; the others ended): the
 * files it uploaded itself are deleted and checkpoints go on referring to
 * the last one. Up to state.changelog.max-failures-allowed in a row are
 * tolerated and the next is taken at the next interval; one more fails
 * the task (Flink's PeriodicMaterializationManager). */
static void clog_mat_failed(ck_task *t, struct task_clog *c)
{
    int status = c->mat_failed;
    c->mat_failed = 0;
    for (uint32_t i = 0; i < c->mat_next.n; i++) {
        int kept = 0; /* a file of the last materialization, referred to again */
        for (uint32_t m = 0; m < c->mat.n && !kept; m++)
            kept = !strcmp(c->mat.v[m].key, c->mat_next.v[i].key);
        if (!kept)
            task_store_delete(t, c->mat_next.v[i].key);
    }
    ck_handles_free(&c->mat_next);
    if (++c->mat_fails > t->clog_max_failures) {
        char why[120];
        snprintf(why, sizeof(why), "materializing keyed state (%d failed in a row)",
                 c->mat_fails);
        task_fail(t, status, why);
        return;
    }
    const ck_vertex *v = &t->g->v[t->vertex];
    ck_logf(t->plat, CK_LOG_WARN,
            "%s (%d/%d): materialization failed (%s), %d in a row of %d tolerated "
            "(state.changelog.max-failures-allowed): the next at the next interval",
            v->name, t->subtask + 1, v->parallelism, ck_strerror(status), c->mat_fails,
            t->clog_max_failures);
}

/* A changelog upload (a segment or a materialization) ended; data and
 * len: a file's upload result (from its path). */
void task_clog_on_upload(ck_task *t, uint64_t token, int status, const uint8_t *data,
                         size_t len)
{
    int k = (int)((token >> 32) & 0xff);
    struct task_clog *c = NULL;
    for (int i = 0; i < t->nclogs; i++)
        if (t->clogs[i].k == k)
            c = &t->clogs[i];
    if (!c)
        return;
    if (status == CK_OK && (token & CLOG_MAT) && c->mat_ks)
        status = clog_mat_landed(c, token, data, len);
    if (status != CK_OK && !(token & CLOG_MAT)) {
        /* Flink fails the job once its retries are spent; chandy has none */
        task_fail(t, status, "uploading the state changelog");
        return;
    }
    if (status != CK_OK && !c->mat_failed)
        c->mat_failed = status; /* the materialization fails once its uploads end */
    if (token & CLOG_MAT) {
        /* once all its files are in, later checkpoints refer to it and
         * to the segments after it */
        if (--c->mat_busy > 0)
            return;
        clog_mat_release(c);
        if (c->mat_failed) {
            clog_mat_failed(t, c);
            return;
        }
        c->mat_fails = 0;
        uint8_t body[CK_MATERIALIZED_BODY];
        ck_put_u32(body, (uint32_t)c->log->op);
        ck_put_u64(body + 4, c->mat_seq);
        ck_put_u64(body + 12, (uint64_t)c->mat_t0);
        ck_put_u64(body + 20, (uint64_t)(ck_now(t->plat) - c->mat_t0));
        ck_put_u64(body + 28, c->mat_bytes);
        ck_put_u64(body + 36, c->mat_state);
        task_to_jm(t, CK_MSG_MATERIALIZED, body, sizeof(body));
        ck_handles_free(&c->mat);
        c->mat = c->mat_next;
        memset(&c->mat_next, 0, sizeof(c->mat_next));
        /* Segments before it are truncated from the changelog: those a
         * snapshot referred to go when the checkpoints that do are
         * discarded (the coordinator's registry); the others nothing will
         * ever refer to, and go now. */
        uint64_t referred = c->acked;
        int ci = (int)(c - t->clogs);
        for (int s = 0; s < t->nsnaps; s++)
            referred = CK_MAX(referred, t->snaps[s].clog_need[ci]);
        uint32_t keep = 0;
        for (uint32_t i = 0; i < c->segs.n; i++) {
            unsigned long long first = strtoull(c->segs.v[i].local, NULL, 10);
            if (first >= c->mat_seq) {
                c->segs.v[keep++] = c->segs.v[i];
                continue;
            }
            int flying = 0;
            for (int f = 0; f < c->ninflight; f++)
                flying |= c->inflight[f] == first;
            if (first >= referred && flying) {
                c->doomed_first[c->ndoomed] = first;
                c->doomed[c->ndoomed++] = c->segs.v[i].key; /* ninflight bounds it */
                continue;
            }
            if (first >= referred)
                task_store_delete(t, c->segs.v[i].key);
            free(c->segs.v[i].key);
        }
        c->segs.n = keep;
        return;
    }
    for (int i = 0; i < c->ninflight; i++)
        if ((c->inflight[i] & 0xffffffffu) == (token & 0xffffffffu)) {
            c->inflight[i] = c->inflight[--c->ninflight];
            break;
        }
    for (int i = 0; i < c->ndoomed; i++)
        if ((c->doomed_first[i] & 0xffffffffu) == (token & 0xffffffffu)) {
            task_store_delete(t, c->doomed[i]);
            free(c->doomed[i]);
            c->doomed[i] = c->doomed[--c->ndoomed];
            c->doomed_first[i] = c->doomed_first[c->ndoomed];
            break;
        }
    for (int i = t->nsnaps; i-- > 0;)
        if (t->snaps[i].stage == SNAP_UPLOADING)
            task_snap_try_finish(t, &t->snaps[i]);
}

/* A snapshot's synchronous phase under the changelog: what is buffered
 * goes on its way, and the snapshot refers to the last materialization
 * and every segment after it (those already in an acknowledged snapshot
 * as reused). */
int task_clog_snapshot(ck_task *t, snap_job *j)
{
    for (int i = 0; i < t->nclogs; i++) {
        struct task_clog *c = &t->clogs[i];
        int rc = task_clog_persist(t, c);
        if (rc)
            return rc;
        j->clog_need[i] = c->log->cut_seq;
        for (uint32_t m = 0; m < c->mat.n; m++) {
            const ck_handle *h = &c->mat.v[m];
            if ((rc = ck_handles_add_like(&j->clog_handles, h, h->flags)))
                return rc;
        }
        for (uint32_t s = 0; s < c->segs.n; s++) {
            const ck_handle *h = &c->segs.v[s];
            int old = strtoull(h->local, NULL, 10) < c->acked;
            if ((rc = ck_handles_add_like(&j->clog_handles, h,
                                          h->flags | (old ? CK_HANDLE_REUSED : 0))))
                return rc;
        }
    }
    return CK_OK;
}

/* Whether the changelog snapshot j refers to is in the store. */
int task_clog_snap_ready(const ck_task *t, const snap_job *j)
{
    for (int i = 0; i < t->nclogs; i++)
        if (clog_uploaded(&t->clogs[i]) < j->clog_need[i])
            return 0;
    return 1;
}

/* Snapshot j is acknowledged with the changelog it refers to. */
void task_clog_snap_done(ck_task *t, const snap_job *j)
{
    for (int i = 0; i < t->nclogs; i++) {
        /* what the next ones refer to as uploaded before them */
        struct task_clog *c = &t->clogs[i];
        c->acked = CK_MAX(c->acked, j->clog_need[i]);
        /* its materialization's files: later snapshots reuse them (the
         * next materialization too, where it keeps them) */
        for (uint32_t h = 0; h < j->clog_handles.n; h++) {
            const ck_handle *jh = &j->clog_handles.v[h];
            for (uint32_t m = 0; jh->kind == CK_HANDLE_MATERIAL && m < c->mat.n; m++)
                if (!strcmp(jh->key, c->mat.v[m].key))
                    c->mat.v[m].flags |= CK_HANDLE_REUSED;
            for (uint32_t m = 0; jh->kind == CK_HANDLE_MATERIAL && m < c->mat_next.n; m++)
                if (!strcmp(jh->key, c->mat_next.v[m].key))
                    c->mat_next.v[m].flags |= CK_HANDLE_REUSED;
        }
    }
}

/* Cancelled: changelog segments after the last acknowledged one and
 * materializations no snapshot referred to go from the store. */
void task_clog_discard(ck_task *t)
{
    for (int i = 0; i < t->nclogs; i++) {
        const struct task_clog *c = &t->clogs[i];
        for (uint32_t s = 0; s < c->segs.n; s++)
            if (strtoull(c->segs.v[s].local, NULL, 10) >= c->acked)
                task_store_delete(t, c->segs.v[s].key);
        for (uint32_t m = 0; m < c->mat.n; m++)
            if (!(c->mat.v[m].flags & CK_HANDLE_REUSED))
                task_store_delete(t, c->mat.v[m].key);
        for (uint32_t m = 0; m < c->mat_next.n; m++)
            if (!(c->mat_next.v[m].flags & CK_HANDLE_REUSED))
                task_store_delete(t, c->mat_next.v[m].key);
    }
}

void task_clog_free(ck_task *t)
{
    for (int i = 0; i < t->nclogs; i++) {
        clog_mat_release(&t->clogs[i]);
        ck_handles_free(&t->clogs[i].mat);
        ck_handles_free(&t->clogs[i].mat_next);
        ck_handles_free(&t->clogs[i].segs);
        for (int k = 0; k < t->clogs[i].ndoomed; k++)
            free(t->clogs[i].doomed[k]);
    }
}

int task_clog_check(const ck_task *t, ck_inv *v)
{
    for (int i = 0; i < t->nclogs; i++) {
        const struct task_clog *c = &t->clogs[i];
        int op = c->log->op;
        CK_INV(v, 8,
               c->ninflight >= 0 && c->ninflight <= CLOG_MAX_INFLIGHT && c->ndoomed >= 0 &&
                   c->ndoomed <= c->ninflight,
               "operator %d: %d segment uploads in flight (at most %d), %d doomed", op,
               c->ninflight, CLOG_MAX_INFLIGHT, c->ndoomed);
        for (int d = 0; d < c->ndoomed; d++) {
            int flying = 0;
            for (int f = 0; f < c->ninflight; f++)
                flying |= c->inflight[f] == c->doomed_first[d];
            CK_INV(v, 8, flying, "operator %d: doomed segment %llu is not uploading", op,
                   (unsigned long long)c->doomed_first[d]);
        }
        for (uint32_t s = 1; s < c->segs.n; s++) {
            unsigned long long a = strtoull(c->segs.v[s - 1].local, NULL, 10);
            unsigned long long b = strtoull(c->segs.v[s].local, NULL, 10);
            CK_INV(v, 8, a < b, "operator %d: segment %llu after segment %llu", op, b, a);
        }
        CK_INV(v, 8, c->acked <= c->log->cut_seq,
               "operator %d: acknowledged up to %llu, the changelog cut at %llu", op,
               (unsigned long long)c->acked, (unsigned long long)c->log->cut_seq);
        CK_INV(v, 8, c->mat_busy >= 0 && (!c->mat_ks || c->mat_busy > 0),
               "operator %d: %d materialization uploads, its files %sset aside", op, c->mat_busy,
               c->mat_ks ? "" : "not ");
    }
    return 0;
}

/* ---- restoring (task_restore.c) ------------------------------------------------- */

/* Loads a materialization (a canonical file of operator op alone) into
 * the backend it wraps. Returns 0, CK_ECORRUPT (*why), CK_ENOMEM. */
static int clog_load_material(ck_kstate *in, int op, const uint8_t *data, size_t len,
                              const char **why)
{
    ck_snapshot s;
    int rc = ck_snap_decode(data, len, &s, why);
    if (rc)
        return rc;
    rc = CK_ECORRUPT;
    *why = "a materialization of another operator or state";
    if (s.nkeyed == 1 && s.keyed[0].op == op && s.keyed[0].nstates == in->nstates && !s.keyed[0].native) {
        rc = CK_OK;
        const ck_snap_keyed *k = &s.keyed[0];
        for (size_t e = 0; e < k->nentries && !rc; e++) {
            const ck_snap_entry *en = &k->entries[e];
            int32_t jh = ck_kg_java_hash(en->key, en->klen);
            if (ck_kg_of_hash(jh, k->max_parallelism) != en->kg) {
                *why = "an entry in another key group than its section says";
                rc = CK_ECORRUPT;
            } else if (ck_kgr_contains(in->kgr, en->kg)) {
                rc = ck_snap_put_entry(in, k, en, jh);
            }
        }
    }
    ck_snapshot_free(&s);
    return rc;
}

/* The old subtask handle h of the restore is of (another parallelism's:
 * its take's), or 0 (the subtask's own). */
static uint32_t clog_origin(const ck_task *t, uint32_t h)
{
    return t->rtakes ? t->rtakes[h].old_subtask : 0;
}

/* 1 when changelog operator c restores the state of other key groups than
 * its own (a restore at another parallelism): files of more than one old
 * subtask, or of other key groups. */
static int clog_rescaled(const ck_task *t, const struct task_clog *c)
{
    const ck_op *op = &t->chain.ops[c->k];
    int seen = 0;
    uint32_t first = 0;
    for (uint32_t h = 0; h < t->restore.n; h++) {
        const ck_handle *f = &t->restore.v[h];
        if ((f->kind != CK_HANDLE_MATERIAL && f->kind != CK_HANDLE_CHANGELOG) ||
            f->op != (uint32_t)c->log->op)
            continue;
        if (!ck_kgr_equal(f->kgr, op->kgr) || (seen && clog_origin(t, h) != first))
            return 1;
        seen = 1;
        first = clog_origin(t, h);
    }
    return 0;
}

/* Changelog operator c's state from several old subtasks (a restore at
 * another parallelism): per old subtask its canonical materialization
 * and its segments in order over it, each change of this subtask's key
 * groups alone, applied through the changelog backend, so that this
 * subtask's own changelog (from its start) holds all it restored and
 * its next checkpoints refer to no old subtask's file. A materialization
 * in native files (RocksDB's) of other key groups is refused. 0, or an
 * error with *why. */
static int clog_restore_rescaled(ck_task *t, struct task_clog *c, const char **why)
{
    ck_op *op = &t->chain.ops[c->k];
    int rc = CK_OK;
    for (uint32_t o = 0; o < t->restore.n && !rc; o++) {
        const ck_handle *fo = &t->restore.v[o];
        if ((fo->kind != CK_HANDLE_MATERIAL && fo->kind != CK_HANDLE_CHANGELOG) ||
            fo->op != (uint32_t)c->log->op)
            continue;
        int first = 1; /* the first handle of its old subtask */
        for (uint32_t q = 0; q < o && first; q++)
            first = !((t->restore.v[q].kind == CK_HANDLE_MATERIAL ||
                       t->restore.v[q].kind == CK_HANDLE_CHANGELOG) &&
                      t->restore.v[q].op == fo->op && clog_origin(t, q) == clog_origin(t, o));
        if (!first)
            continue;
        uint32_t from = clog_origin(t, o);
        uint64_t next = 0;
        int mats = 0;
        for (uint32_t h = o; h < t->restore.n && !rc; h++) {
            const ck_handle *f = &t->restore.v[h];
            if (f->kind != CK_HANDLE_MATERIAL || f->op != fo->op || clog_origin(t, h) != from)
                continue;
            snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
            if (clog_mat_file(f)) {
                *why = "a materialization in native files of other key groups (a restore at "
                       "another parallelism), which is not restored yet";
                rc = CK_ECORRUPT;
            } else if (mats++) {
                *why = "files of two materializations of one old subtask";
                rc = CK_ECORRUPT;
            } else {
                next = strtoull(f->local, NULL, 10);
                rc = clog_load_material(op->ks, c->log->op, t->rdata[h], t->rlen[h], why);
            }
        }
        for (int more = 1; more && !rc;) {
            more = 0;
            for (uint32_t h = o; h < t->restore.n && !rc; h++) {
                const ck_handle *f = &t->restore.v[h];
                if (f->kind != CK_HANDLE_CHANGELOG || f->op != fo->op ||
                    clog_origin(t, h) != from || strtoull(f->local, NULL, 10) != next)
                    continue;
                uint64_t at;
                uint32_t n;
                snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
                rc = ck_clog_replay(t->rdata[h], t->rlen[h], op->ks, op->spec->max_parallelism,
                                    &at, &n, why);
                if (!rc && (at != next || !n)) {
                    *why = "a changelog segment that is not the one its handle names";
                    rc = CK_ECORRUPT;
                }
                t->restore_flops += (double)n * CK_STATE_WRITE_FLOPS;
                next = at + n;
                more = 1;
            }
        }
        for (uint32_t h = o; h < t->restore.n && !rc; h++) {
            const ck_handle *f = &t->restore.v[h];
            if (f->kind == CK_HANDLE_CHANGELOG && f->op == fo->op && clog_origin(t, h) == from &&
                strtoull(f->local, NULL, 10) >= next) {
                snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
                *why = "changelog segments that do not meet";
                rc = CK_ECORRUPT;
            }
        }
    }
    return rc;
}

/* Puts every changelog operator's state back: its materialization, then
 * its changelog's segments replayed in order over it; what the next
 * checkpoints refer to (at another parallelism: clog_restore_rescaled).
 * Returns 0, or non-zero when the task failed. */
int task_clog_restore(ck_task *t)
{
    for (int i = 0; i < t->nclogs; i++) {
        struct task_clog *c = &t->clogs[i];
        ck_op *op = &t->chain.ops[c->k];
        if (clog_rescaled(t, c)) {
            const char *why = "out of memory";
            int rc = clog_restore_rescaled(t, c, &why);
            if (rc) {
                task_restore_fail(t, task_restore_code(rc),
                                  rc == CK_ECORRUPT || rc == CK_ECHECKSUM ? why
                                                                          : ck_strerror(rc));
                return 1;
            }
            op->ks->work = ck_clog_kstate_inner(op->ks)->work;
            continue;
        }
        ck_kstate *in = ck_clog_kstate_inner(op->ks);
        uint64_t next = 0;
        const char *why = "out of memory";
        int rc = CK_OK;
        /* its materialization: one canonical file, or the wrapped
         * instance's native files (all of one materialization) */
        uint32_t nn = 0;
        const char **names = calloc(t->restore.n + 1, sizeof(*names));
        uint8_t **data = calloc(t->restore.n + 1, sizeof(*data));
        size_t *lens = calloc(t->restore.n + 1, sizeof(*lens));
        if (!names || !data || !lens)
            rc = CK_ENOMEM;
        for (uint32_t h = 0; h < t->restore.n && !rc; h++) {
            const ck_handle *f = &t->restore.v[h];
            if (f->kind != CK_HANDLE_MATERIAL || f->op != (uint32_t)c->log->op)
                continue;
            snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
            uint64_t seq = strtoull(f->local, NULL, 10);
            if (c->mat.n && (seq != next || !clog_mat_file(f) || !names[0])) {
                why = "files of two materializations, or two canonical ones";
                rc = CK_ECORRUPT;
                break;
            }
            next = seq;
            if (clog_mat_file(f)) {
                names[nn] = clog_mat_file(f);
                data[nn] = t->rdata[h];
                lens[nn++] = t->rlen[h];
            } else {
                rc = clog_load_material(in, c->log->op, t->rdata[h], t->rlen[h], &why);
            }
            if (!rc)
                rc = ck_handles_add_like(&c->mat, f, CK_HANDLE_SHARED | CK_HANDLE_REUSED);
        }
        if (!rc && nn) {
            why = "its wrapped backend cannot read native files";
            rc = in->ops->native_restore ? in->ops->native_restore(in, nn, names, data, lens)
                                         : CK_ECORRUPT;
            if (rc == CK_ECORRUPT && in->ops->native_restore)
                why = "its materialization's native files do not open";
        }
        free(names);
        free(data);
        free(lens);
        /* segments in order of sequence number, each meeting the last */
        for (int more = 1; more && !rc;) {
            more = 0;
            for (uint32_t h = 0; h < t->restore.n && !rc; h++) {
                const ck_handle *f = &t->restore.v[h];
                if (f->kind != CK_HANDLE_CHANGELOG || f->op != (uint32_t)c->log->op ||
                    strtoull(f->local, NULL, 10) != next)
                    continue;
                uint64_t first;
                uint32_t n;
                snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
                rc = ck_clog_replay(t->rdata[h], t->rlen[h], in, op->spec->max_parallelism,
                                    &first, &n, &why);
                if (!rc && (first != next || !n)) {
                    why = "a changelog segment that is not the one its handle names";
                    rc = CK_ECORRUPT;
                }
                t->restore_flops += (double)n * CK_STATE_WRITE_FLOPS; /* applying each */
                if (!rc)
                    rc = ck_handles_add_like(&c->segs, f, CK_HANDLE_SHARED);
                next = first + n;
                more = 1;
            }
        }
        for (uint32_t h = 0; h < t->restore.n && !rc; h++) {
            const ck_handle *f = &t->restore.v[h];
            if (f->kind == CK_HANDLE_CHANGELOG && f->op == (uint32_t)c->log->op &&
                strtoull(f->local, NULL, 10) >= next) {
                snprintf(t->restore_key, sizeof(t->restore_key), "%s", f->key);
                why = "changelog segments that do not meet";
                rc = CK_ECORRUPT;
            }
        }
        if (rc) {
            task_restore_fail(t, task_restore_code(rc),
                              rc == CK_ECORRUPT || rc == CK_ECHECKSUM ? why : ck_strerror(rc));
            return 1;
        }
        c->acked = next;
        c->log->cut_seq = next; /* this attempt's changelog goes on from there */
        op->ks->work = in->work; /* the wrapped backend's work is the wrapper's */
    }
    return 0;
}
