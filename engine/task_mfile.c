/*
 * task_mfile.c - file merging for a subtask's snapshots
 * (execution.checkpointing.file-merging.*, Flink's FLIP-306): their new
 * native files packed into merged objects, and the file the subtask keeps
 * and appends to across checkpoints.
 *
 * Within a checkpoint (file-merging.enabled; task_mfile_upload, and
 * mfile_upload_paths where the files go up from their paths): snapshot
 * j's new native files go, in the instance's order, into objects under
 * shared/ of at least one file each, an object taking the next file while
 * it stays within execution.checkpointing.file-merging.max-file-size; each
 * file's handle is a segment of its object. A checkpoint then costs the
 * store one put and one sync for the files of each object instead of one
 * per file. An object lives while any retained checkpoint refers to a
 * segment of it (the registry counts the segments' references to its
 * key): the private files (MANIFEST, CURRENT, OPTIONS) in it stay until
 * its SST files go, Flink's space amplification. A restore reads the
 * segments back with ranged gets (task_restore.c).
 *
 * Across checkpoints (file-merging.across-checkpoint-boundary, FLIP-306's
 * other half): a new merged object goes into t->seg, the file this
 * subtask keeps, at its end, while it stays within max-file-size; else it
 * is a new file, which becomes the one kept once its put landed. The
 * store then syncs a checkpoint's files as one append into a file it has,
 * with no file made, renamed or synced into a directory (storefs.h), as
 * Flink's physical files take a subtask's logical files checkpoint after
 * checkpoint. A file is deleted by the coordinator alone, once nothing
 * refers to it and this subtask will not append to it again
 * (coordinator.h, seg_live); an acknowledgement that names it tells the
 * coordinator of it (task_mfile_acked), and a cancelled subtask deletes
 * the one no acknowledgement named (task_mfile_discard).
 *
 * The kept file: its put made it (creator: that snapshot's id until all
 * its uploads landed, then 0: open); key "" when there is none (the next
 * object makes one):
 *
 *   none ---a new file: mfile_object_start---> creating
 *   creating ---its snapshot's uploads landed: task_mfile_settle---> open
 *   open ---an append that fits: mfile_object_start---> open (end moves
 *       past it: mfile_object_sent)
 *   open or creating ---full, or a new file asked meanwhile:
 *       mfile_object_start---> creating
 *   open or creating ---the making or an appending snapshot failed:
 *       task_mfile_settle---> none
 *
 * Appends go only to an open file (its put landed), at `end`. Files are
 * kept in the order of the snapshots that make them (user): a snapshot
 * older than one that used the kept file (snapshots may reach their
 * uploads out of order) neither appends nor makes a kept file, so that
 * the coordinator may take a newer file in a completed checkpoint to mean
 * that no checkpoint still to complete has new segments in an older one.
 *
 * Invariants (task.h's numbers, checked by ck_task_check):
 *   (7) the kept file's next append goes at a multiple of
 *       CK_STORE_APPEND_ALIGN, and a kept file still being made is made
 *       by a snapshot under way that is uploading.
 */
#include "task_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "crc32c.h"
#include "error.h"
#include "storekey.h"

#define CK_INV_MODULE "task" /* invariant.h */

/* Names snapshot j's merged object number nobj under shared/ (into key):
 * with `seg`, a file later checkpoints may append to (its key ends in
 * CK_STORE_APPENDABLE; the coordinator's seg_parse reads it back). */
static int mfile_key(const ck_task *t, const snap_job *j, const char *shared, unsigned nobj,
                     int seg, char key[CK_HANDLE_KEY_MAX + 1])
{
    return ck_sk_merged(key, CK_HANDLE_KEY_MAX + 1, shared, t->vertex, t->subtask, t->attempt,
                        j->id, nobj, seg);
}

/* Where snapshot j's object starting with a file of `first` bytes goes:
 * key and its offset there (*base; 0: a new object, put whole): the end
 * of the kept file when merging across checkpoints and it fits, else a
 * new object (which becomes the kept file, across checkpoints). */
static int mfile_object_start(ck_task *t, snap_job *j, const char *shared, unsigned *nobj,
                              int paths, uint64_t first, char key[CK_HANDLE_KEY_MAX + 1],
                              uint64_t *base)
{
    /* an older snapshot than one that used the kept file: files of its own */
    int across = t->across && (!paths || t->plat->ops->store_append_files) && j->id >= t->seg.user;
    *base = 0;
    if (across && t->seg.key[0] && !t->seg.creator && t->seg.end + first <= t->merge_max) {
        snprintf(key, CK_HANDLE_KEY_MAX + 1, "%s", t->seg.key);
        *base = t->seg.end;
        j->appended = t->seg.gen;
        t->seg.user = j->id;
        return CK_OK;
    }
    int rc = mfile_key(t, j, shared, (*nobj)++, across, key);
    if (rc)
        return rc;
    if (across) { /* the file kept from now on, once its put landed */
        snprintf(t->seg.key, sizeof(t->seg.key), "%s", key);
        t->seg.creator = j->id;
        t->seg.end = 0;
        t->seg.acked = 0;
        t->seg.gen++;
        t->seg.user = j->id;
    }
    return CK_OK;
}

/* An object of mlen bytes went to key at base: the kept file's end moves
 * past it. */
static void mfile_object_sent(ck_task *t, const char *key, uint64_t base, uint64_t mlen)
{
    if (t->seg.key[0] && !strcmp(key, t->seg.key))
        t->seg.end = (base + mlen + CK_STORE_APPEND_ALIGN - 1) &
                     ~(uint64_t)(CK_STORE_APPEND_ALIGN - 1);
}

/* Starts one upload of snapshot j's merged object (data taken) into key
 * at base (0: a put; else an append to the subtask's kept file, t->seg),
 * which then ends past it. */
static int mfile_upload_at(ck_task *t, snap_job *j, const char *key, uint64_t base, uint8_t *data,
                           size_t len)
{
    int rc;
    uint64_t modelled = task_snap_key_model(j, key);
    if (!base) {
        rc = task_snap_upload(t, j, key, data, len, modelled);
    } else if ((task_weigh(t, key, modelled),
                !(rc = t->plat->ops->store_append(t->plat, key, base, data, len,
                                                  (j->id << 2) | SNAP_UPLOADING)))) {
        j->uploads++;
    }
    if (!rc)
        mfile_object_sent(t, key, base, len);
    return rc;
}

/* Snapshot j's uploads all ended: the file it made is kept if they all
 * landed; one it made or appended to is let go if one failed (the
 * next object makes a new one). */
void task_mfile_settle(ck_task *t, const snap_job *j)
{
    if (!t->seg.key[0])
        return;
    if (j->upload_failed && (j->appended == t->seg.gen || t->seg.creator == j->id))
        t->seg.key[0] = 0;
    else if (t->seg.creator == j->id)
        t->seg.creator = 0;
}

void task_mfile_acked(ck_task *t, const ck_handles *hs)
{
    for (uint32_t i = 0; i < hs->n && t->seg.key[0] && !t->seg.acked; i++)
        t->seg.acked = !strcmp(hs->v[i].key, t->seg.key);
}

/* Cancelled: the file kept for appends, if no acknowledgement named it
 * (the coordinator may not know it; an earlier one, it deletes). */
void task_mfile_discard(ck_task *t)
{
    if (t->seg.key[0] && !t->seg.acked)
        task_store_delete(t, t->seg.key);
}

int task_mfile_check(const ck_task *t, ck_inv *v)
{
    CK_INV(v, 7, t->seg.end % CK_STORE_APPEND_ALIGN == 0,
           "the kept file's next append at %llu, not a multiple of %d",
           (unsigned long long)t->seg.end, CK_STORE_APPEND_ALIGN);
    if (!t->seg.key[0] || !t->seg.creator)
        return 0;
    const snap_job *j = NULL;
    for (int i = 0; i < t->nsnaps; i++)
        if (t->snaps[i].id == t->seg.creator)
            j = &t->snaps[i];
    CK_INV(v, 7, j && j->stage == SNAP_UPLOADING, "the kept file %s made by checkpoint %llu, %s",
           t->seg.key, (unsigned long long)t->seg.creator,
           j ? "which is not uploading" : "which is not under way");
    return 0;
}

/* Bytes kept for a file's path in mfile_upload_paths. */
#define PATH_LEN 1024

/* Uploads one merged object of mlen bytes to key at base (0: put whole):
 * its nin files' paths, PATH_LEN bytes apart in buf, through paths[]
 * (room for nin), from handle h0 on. */
static int mfile_upload_object(ck_task *t, snap_job *j, const char *key, uint64_t base,
                               uint64_t mlen, const char *buf, const char **paths, uint32_t nin,
                               uint32_t h0)
{
    for (uint32_t k = 0; k < nin; k++)
        paths[k] = buf + (size_t)k * PATH_LEN;
    int rc = task_snap_upload_files_at(t, j, key, base, paths, nin, h0);
    if (!rc)
        mfile_object_sent(t, key, base, mlen);
    return rc;
}

/* task_mfile_upload where the files go up from their paths (task_snap_by_path): an
 * object's files are asked together, one store_put_files, and its
 * segments' offsets come from the sizes the files had when the snapshot
 * took them (a file whose size changed fails the upload: task_snap_file_landed). */
static int mfile_upload_paths(ck_task *t, snap_job *j, const char *shared)
{
    char key[CK_HANDLE_KEY_MAX + 1] = "";
    char *buf = NULL;           /* the object's paths, PATH_LEN bytes each */
    const char **paths = NULL;
    uint32_t nin = 0, cap = 0, h0 = 0; /* files in the object; its first handle */
    size_t mlen = 0;
    uint64_t base = 0;
    unsigned nobj = 0;
    int rc = CK_OK;
    for (int i = 0; i < j->nnat && !rc; i++) {
        struct snap_native *n = &j->nat[i];
        for (uint32_t f = 0; f < n->snap.n && !rc; f++) {
            const ck_native_file *nf = &n->snap.files[f];
            if (task_snap_kept(t, j, n, f, &rc))
                continue;
            if (nin && base + mlen + nf->size > t->merge_max) { /* this object is full */
                rc = mfile_upload_object(t, j, key, base, mlen, buf, paths, nin, h0);
                nin = 0;
                mlen = 0;
            }
            if (!rc && nin == 0) {
                rc = mfile_object_start(t, j, shared, &nobj, 1, nf->size, key, &base);
                h0 = j->handles.n;
            }
            if (!rc && nin == cap) {
                uint32_t ncap = cap ? 2 * cap : 8;
                char *nb = realloc(buf, (size_t)ncap * PATH_LEN);
                const char **np = nb ? realloc(paths, ncap * sizeof(*paths)) : NULL;
                if (nb)
                    buf = nb;
                if (np) {
                    paths = np;
                    cap = ncap;
                } else {
                    rc = CK_ENOMEM;
                }
            }
            if (!rc)
                rc = n->ks->ops->native_path(n->ks, &n->snap, f, buf + (size_t)nin * PATH_LEN,
                                             PATH_LEN);
            if (!rc)
                rc = ck_handles_add_native(&j->handles, CK_HANDLE_SHARED, key, nf->size, 0,
                                           j->kgr, (uint32_t)n->op, nf->name);
            if (!rc)
                rc = ck_handles_segment_last(&j->handles, base + mlen);
            if (!rc)
                rc = ck_handles_model_last(&j->handles, task_snap_native_model(n, nf));
            mlen += nf->size;
            nin++;
        }
    }
    if (!rc && nin)
        rc = mfile_upload_object(t, j, key, base, mlen, buf, paths, nin, h0);
    free(paths);
    free(buf);
    return rc;
}

/* Snapshot j's native files, as snap_start_uploads would (a file the
 * latest complete checkpoint stored referred to, a small private one
 * inline), the new ones in merged objects under shared (from their
 * paths where the platform can: mfile_upload_paths). */
int task_mfile_upload(ck_task *t, snap_job *j, const char *shared)
{
    if (task_snap_by_path(t, j))
        return mfile_upload_paths(t, j, shared);
    uint8_t *m = NULL;
    size_t mlen = 0, mcap = 0;
    unsigned nobj = 0;
    uint64_t base = 0;
    char key[CK_HANDLE_KEY_MAX + 1] = "";
    int rc = CK_OK;
    for (int i = 0; i < j->nnat && !rc; i++) {
        struct snap_native *n = &j->nat[i];
        for (uint32_t f = 0; f < n->snap.n && !rc; f++) {
            const ck_native_file *nf = &n->snap.files[f];
            if (task_snap_kept(t, j, n, f, &rc))
                continue;
            uint8_t *d;
            size_t len;
            if ((rc = n->ks->ops->native_read(n->ks, &n->snap, f, &d, &len)))
                break;
            if (mlen && base + mlen + len > t->merge_max) { /* this object is full */
                rc = mfile_upload_at(t, j, key, base, m, mlen);
                m = NULL;
                mlen = mcap = 0;
            }
            if (!rc && !mlen)
                rc = mfile_object_start(t, j, shared, &nobj, 0, len, key, &base);
            /* grown by doubling: the room not written is never touched */
            if (!rc && mlen + len > mcap) {
                size_t cap = mlen + len > 2 * mcap ? mlen + len : 2 * mcap;
                uint8_t *g = realloc(m, cap ? cap : 1);
                if (g) {
                    m = g;
                    mcap = cap;
                } else {
                    rc = CK_ENOMEM;
                }
            }
            if (!rc) {
                memcpy(m + mlen, d, len);
                rc = ck_handles_add_native(&j->handles, CK_HANDLE_SHARED, key, len,
                                           ck_crc32c(0, d, len), j->kgr,
                                           (uint32_t)n->op, nf->name);
            }
            if (!rc)
                rc = ck_handles_segment_last(&j->handles, base + mlen);
            if (!rc)
                rc = ck_handles_model_last(&j->handles,
                                           len + (task_snap_native_model(n, nf) - nf->size));
            free(d);
            mlen += len;
        }
    }
    if (!rc && mlen) {
        rc = mfile_upload_at(t, j, key, base, m, mlen);
        m = NULL;
    }
    free(m);
    return rc;
}
