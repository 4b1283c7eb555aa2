#include "faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator.h"
#include "error.h"
#include "handle.h"
#include "jobmanager.h"
#include "sinkfs.h"
#include "storefs.h"
#include "wire.h"
#include "storekey.h"

/* The actions of the events timeline, in the order of ck_fault_kind. */
const char *const ck_crash_kind_names[] = {"process", "host", NULL};

const char *const ck_fault_names[] = {"crash",          "slow_cpu",      "slow_link",
                                      "link_down",      "partition",     "savepoint",
                                      "corrupt_checkpoint", "slow_operator", "hot_key",
                                      "slow_sink",      "store_errors",  "store_delay",
                                      "alloc_failure",  "sink_duplicate", "sink_drop",
                                      "sink_corrupt",   "rescale",       NULL};
const char *const ck_rescale_via_names[] = {"savepoint", "checkpoint", NULL};

const char *const ck_store_op_names[] = {"put", "get", "delete", NULL};
const char *const ck_alloc_point_names[] = {"restore", "snapshot", "deploy", NULL};

/* The moments of triggered events, in the order of ck_moment (from 1). */
const char *const ck_moment_names[] = {"checkpoint_triggered", "checkpoint_completed",
                                       "upload_started",       "restore_started",
                                       "state_flush",          "state_compaction",
                                       "materialization_started", "changelog_upload_started",
                                       "subtask_finished",     "rescale_deployed",
                                       NULL};

const char *ck_moment_name(ck_moment m)
{
    return m > CK_MOMENT_NONE && m < CK_MOMENT_COUNT ? ck_moment_names[m - 1] : "time";
}

int ck_fault_involves(const ck_fault *f, int host)
{
    switch (f->kind) {
    case CK_FAULT_CRASH:
    case CK_FAULT_LINK_DOWN:
        return f->host == host;
    case CK_FAULT_PARTITION:
        for (int i = 0; i < f->nside; i++)
            if (f->side_host[i] == host)
                return 1;
        return 0;
    default:
        return 0;
    }
}

int ck_fault_cuts(const ck_fault *f, int a, int b)
{
    if (f->kind != CK_FAULT_PARTITION)
        return 0;
    int sa = -1, sb = -1;
    for (int i = 0; i < f->nside; i++) {
        if (f->side_host[i] == a)
            sa = f->side[i];
        if (f->side_host[i] == b)
            sb = f->side[i];
    }
    return sa >= 0 && sb >= 0 && sa != sb;
}

uint8_t *ck_fault_request(const ck_fault *f, size_t *n)
{
    uint8_t body[CK_RESCALE_BODY > CK_SAVEPOINT_BODY ? CK_RESCALE_BODY : CK_SAVEPOINT_BODY];
    uint8_t *m;
    if (f->kind == CK_FAULT_RESCALE) {
        ck_put_u32(body, (uint32_t)f->via);
        m = ck_wire_msg(CK_MSG_RESCALE, CK_EP_CLIENT, CK_EP_JM, 0, body, CK_RESCALE_BODY, n);
        if (m)
            ck_put_u32(m + 16, (uint32_t)f->rescale); /* the header's arg */
    } else {
        ck_put_i64(body, f->resume_after);
        m = ck_wire_msg(CK_MSG_SAVEPOINT, CK_EP_CLIENT, CK_EP_JM, 0, body, CK_SAVEPOINT_BODY, n);
        if (m)
            ck_put_u32(m + 16, (uint32_t)f->stop);
    }
    return m;
}

const char *ck_fault_name(ck_fault_kind k)
{
    return (unsigned)k < CK_FAULT_KINDS ? ck_fault_names[k] : "?";
}

void ck_host_name(int h, int ntm, char *buf, size_t len)
{
    if (h < ntm)
        snprintf(buf, len, "tm%d", h);
    else if (h == ntm)
        snprintf(buf, len, "jm");
    else
        snprintf(buf, len, "store");
}

ck_time ck_fault_end(const ck_fault *f)
{
    return f->duration > 0 ? f->at + f->duration : CK_TIME_NEVER;
}


const char *const ck_damage_file_names[] = {"state", "sst", "changelog", "materialization", NULL};

/* The key of the file of kind f that the latest completed checkpoint
 * under prefix refers to (ck_fault.file). */
static int damage_pick(const char *root, const char *prefix, int f, char *key, size_t keylen)
{
    static const uint32_t kinds[] = {0, CK_HANDLE_NATIVE, CK_HANDLE_CHANGELOG,
                                     CK_HANDLE_MATERIAL};
    ck_store_entry *e;
    size_t n;
    int rc = ck_storefs_list(root, prefix, &e, &n);
    if (rc)
        return rc;
    size_t meta;
    uint8_t *b = NULL;
    size_t blen = 0;
    rc = ck_storefs_latest(e, n, &meta) ? ck_storefs_get(root, e[meta].key, &b, &blen)
                                        : CK_ENOTFOUND;
    ck_store_entries_free(e, n);
    if (rc)
        return rc;
    ck_cp_meta m;
    const char *why;
    rc = ck_cp_meta_decode(b, blen, &m, &why);
    free(b);
    if (rc)
        return rc;
    const ck_handle *pick = NULL;
    for (uint32_t s = 0; s < m.nsubtasks; s++)
        for (uint32_t i = 0; i < m.tasks[s].n; i++) {
            const ck_handle *h = &m.tasks[s].v[i];
            if (h->kind != kinds[f] || !h->bytes || !ck_handle_stored(h))
                continue; /* an inline file is in the _metadata, not in a file of its own */
            int own = !(h->flags & CK_HANDLE_REUSED);
            int pick_own = pick && !(pick->flags & CK_HANDLE_REUSED);
            if (!pick || own > pick_own ||
                (own == pick_own && (h->bytes > pick->bytes ||
                                     (h->bytes == pick->bytes && strcmp(h->key, pick->key) < 0))))
                pick = h;
        }
    rc = pick ? CK_OK : CK_ENOTFOUND;
    if (pick)
        snprintf(key, keylen, "%s", pick->key);
    ck_cp_meta_free(&m);
    return rc;
}

int ck_fault_damage(const ck_fault *f, const char *store_dir, const char *job_id, char *detail,
                    size_t len, char *damaged, size_t keylen)
{
    char prefix[128], key[CK_STORE_KEY_MAX];
    int cut = f->how == CK_DAMAGE_TRUNCATE;
    int rc = ck_sk_job_dir(prefix, sizeof(prefix), job_id);
    if (!rc && f->file == CK_DAMAGE_FILE_STATE) {
        rc = ck_storefs_damage(store_dir, prefix, cut, key, sizeof(key));
    } else if (!rc) {
        rc = damage_pick(store_dir, prefix, f->file, key, sizeof(key));
        if (!rc)
            rc = ck_storefs_damage_key(store_dir, key, cut);
    }
    if (rc == CK_ENOTFOUND)
        snprintf(detail, len, "no completed checkpoint with a %s file to damage",
                 ck_damage_file_names[f->file]);
    else if (rc)
        snprintf(detail, len, "%s", ck_strerror(rc));
    else
        snprintf(detail, len, "%s %s", cut ? "truncated" : "flipped a bit in", key);
    snprintf(damaged, keylen, "%s", rc ? "" : key);
    return rc;
}

int ck_fault_output_arm(int i, const char *sink_dir, char *detail, size_t len)
{
    if (ck_sinkfs_arm(sink_dir, i) == CK_OK)
        return CK_OK;
    snprintf(detail, len, "cannot arm it in %s: %s", sink_dir, strerror(errno));
    return CK_EIO;
}
