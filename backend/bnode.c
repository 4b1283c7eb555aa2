#include "bnode.h"

#include <stdio.h>
#include <stdlib.h>

#include <errno.h>
#include <string.h>

#include "error.h"
#include "faults.h"
#include "kstate.h"
#include "rocksstate.h"
#include "storefs.h"

static ck_bnode *bn(ck_platform *p)
{
    return (ck_bnode *)p;
}

int ck_bhost_init(ck_bhost *h, int cores, double speed, double disk_bw,
                  const ck_config *cfg)
{
    h->later = (ck_dlater){0};
    h->slow = 1.0;
    h->disk_bw = disk_bw;
    h->disk_free = 0;
    ck_config defaults;
    if (!cfg) {
        ck_config_defaults(&defaults);
        cfg = &defaults;
    }
    ck_segpool_init(&h->pool, (uint32_t)ck_cfg(cfg, CK_CFG_SEGMENT_SIZE),
                    ck_segpool_segments(cfg));
    return ck_cores_init(&h->cores, cores, speed);
}

void ck_bhost_free(ck_bhost *h)
{
    ck_cores_free(&h->cores);
    ck_dlater_clear(&h->later);
    ck_segpool_free(&h->pool);
}

void ck_bnode_init(ck_bnode *n, const ck_bworld *bw, ck_bhost *h, uint32_t ep, int host,
                   const char *name)
{
    n->plat.ops = bw->io->store_put_files ? &ck_bnode_ops_files : &ck_bnode_ops;
    n->plat.endpoint = ep;
    n->plat.host = host;
    n->plat.netpool = &h->pool;
    n->bw = bw;
    n->host = h;
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->d.check = bw->check;
    n->d.name = n->name;
}

int ck_bnode_make_task(ck_bnode *n, const ck_job_env *env, uint32_t attempt, uint32_t global,
                       const struct ck_restore_point *from)
{
    n->is_task = 1;
    n->attempt = attempt;
    n->global = global;
    n->task = ck_task_new(env, &n->plat, global, attempt, from);
    if (!n->task) {
        /* The job manager hears it from the subtask's own endpoint. */
        ck_task_deploy_failed(env, &n->plat, global, attempt);
        n->d.dead = 1;
        return CK_ENOMEM;
    }
    n->d.node = ck_task_node(n->task);
    return CK_OK;
}

void ck_bnode_host_down(ck_bnode *n)
{
    n->d.dead = 1;
    ck_task_host_down(n->task);

}

void ck_bnode_talk_mark(ck_bnode *n, int h)
{
    if (h < 0)
        return;
    uint32_t byte = (uint32_t)h / 8;
    if (byte >= n->talked_len) {
        uint32_t len = CK_MAX(byte + 1, n->talked_len * 2);
        uint8_t *t = realloc(n->talked, len);
        if (!t)
            return;
        memset(t + n->talked_len, 0, len - n->talked_len);
        n->talked = t;
        n->talked_len = len;
    }
    n->talked[byte] |= (uint8_t)(1u << (h % 8));
}

int ck_bnode_talk_forget(ck_bnode *n, int h)
{
    uint32_t byte = (uint32_t)h / 8;
    if (h < 0 || byte >= n->talked_len || !(n->talked[byte] & (1u << (h % 8))))
        return 0;
    n->talked[byte] &= (uint8_t)~(1u << (h % 8));
    return 1;
}

void ck_bnode_put_landed(const ck_bnode *n, const char *store_dir, const char *key, uint64_t at,
                         int status)
{
    if (status == CK_OK && n->is_task && n->d.dead && !at)
        ck_storefs_delete(store_dir, key);
}

int ck_bnode_undeploys(const ck_bnode *n, uint32_t attempt, uint32_t global)
{
    if (!n->is_task || n->d.dead)
        return 0;
    return attempt == CK_ATTEMPT_ALL || (n->attempt == attempt && n->global == global);
}

int ck_bnode_store_done(ck_bnode *n, uint64_t token, int status, uint8_t *data, size_t len,
                        ck_time due)
{
    if (n->d.dead) {
        free(data); /* nobody to tell */
        return CK_OK;
    }
    ck_time now = n->bw->io->clock(n);
    ck_time late = ck_buggify_store_delay(n->bw->bug, n->plat.host);
    due = CK_MAX(CK_MAX(due, now) + late, n->late_until);
    if (late)
        n->late_until = due;
    if (due <= now) {
        int rc = ck_drive_post(&n->d, CK_DMSG_COMPLETE, token, status, data, len);
        if (!rc && n->bw->io->wake)
            n->bw->io->wake(n);
        return rc;
    }
    ck_dmsg *m = malloc(sizeof(*m));
    if (!m) {
        free(data);
        return CK_ENOMEM;
    }
    *m = (ck_dmsg){.kind = CK_DMSG_COMPLETE, .token = token, .status = status, .data = data,
                   .len = len, .to = &n->d};
    ck_dlater_add(&n->host->later, m, due); /* in due order, ties in the order added */
    if (n->bw->io->wake)
        n->bw->io->wake(n);
    return CK_OK;
}

void ck_bnode_clear(ck_bnode *n)
{
    ck_drive_clear(&n->d);
    ck_task_del(n->task);
    n->task = NULL;
    free(n->tm);
    n->tm = NULL;
    free(n->talked);
    n->talked = NULL;
    n->talked_len = 0;
}

/* ---- the platform's operations -------------------------------------------------- */

static ck_time op_now(ck_platform *p)
{
    return ck_bnode_now(bn(p));
}

/* A message a busy node sends leaves when its work is done, in order. */
static int op_send(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len)
{
    ck_bnode *n = bn(p);
    if (ck_drive_busy(&n->d, n->bw->io->clock(n)))
        return ck_drive_hold(&n->d, dst, msg, len);
    return n->bw->io->send(n, dst, msg, len);
}

static void op_cpu(ck_platform *p, double flops)
{
    ck_bnode *n = bn(p);
    ck_drive_cpu(&n->d, &n->host->cores, n->bw->io->clock(n), flops, n->host->slow);
}

static void op_wait(ck_platform *p, ck_time ns)
{
    ck_bnode *n = bn(p);
    ck_drive_wait(&n->d, n->bw->io->clock(n), ns);
}

/* Work beside the node: the caller did the real work already, begun at
 * `since` (the node's clock then); its virtual CPU takes a core of the
 * host from there, and it completes at the end, or at once if that has
 * passed (over a real clock, where the work took real time already). */
static void op_background(ck_platform *p, ck_time since, double flops, uint64_t disk_bytes,
                          uint64_t token)
{
    ck_bnode *n = bn(p);
    ck_dmsg *m = malloc(sizeof(*m));
    if (!m)
        return;
    *m = (ck_dmsg){.kind = CK_DMSG_COMPLETE, .token = token, .to = &n->d};
    ck_time now = ck_bnode_now(n), from = since < now ? since : now;
    ck_bhost *h = n->host;
    ck_time end = flops > 0 ? ck_cores_run(&h->cores, from, flops, h->slow) : from;
    if (disk_bytes > 0 && h->disk_bw > 0) {
        /* the local disk serves one request at a time, in order */
        ck_time start = CK_MAX(end, h->disk_free);
        h->disk_free = start + (ck_time)((double)disk_bytes / h->disk_bw * 1e9);
        end = h->disk_free;
    }
    ck_dlater_add(&h->later, m, CK_MAX(end, now));
    if (n->bw->io->wake)
        n->bw->io->wake(n);
}

static void op_note(ck_platform *p, int what)
{
    static const int moments[] = {
        [CK_NOTE_STATE_FLUSH] = CK_MOMENT_STATE_FLUSH,
        [CK_NOTE_STATE_COMPACTION] = CK_MOMENT_STATE_COMPACTION,
        [CK_NOTE_MATERIALIZATION] = CK_MOMENT_MATERIALIZATION,
        [CK_NOTE_CHANGELOG_UPLOAD] = CK_MOMENT_CHANGELOG_UPLOAD,
    };
    ck_bnode *n = bn(p);
    if (n->bw->io->moment && what >= CK_NOTE_STATE_FLUSH && what <= CK_NOTE_CHANGELOG_UPLOAD)
        n->bw->io->moment(n, moments[what]);
}

/* Whether a store_errors in force fails this operation of the node's
 * (op: CK_STORE_OP_*): then it is answered, with CK_EIO, as the store
 * would answer an operation that failed, and goes no further (*rc: 0, or
 * CK_ENOMEM when the answer could not be kept). */
static int store_fails(ck_bnode *n, int op, uint64_t token, int *rc)
{
    if (ck_buggify_store_error(n->bw->bug, n->plat.host, op) < 0)
        return 0;
    *rc = op == CK_STORE_OP_DELETE
              ? CK_EIO
              : ck_bnode_store_done(n, token, CK_EIO, NULL, 0, n->bw->io->clock(n));
    return 1;
}

static void op_store_weigh(ck_platform *p, const char *key, uint64_t bytes)
{
    ck_bnode *n = bn(p);
    snprintf(n->weigh_key, sizeof(n->weigh_key), "%s", key);
    n->weigh_bytes = bytes;
}

uint64_t ck_bnode_weight(const ck_bnode *n, const char *key, uint64_t len)
{
    return n->weigh_key[0] && !strcmp(n->weigh_key, key) && n->weigh_bytes > len ? n->weigh_bytes
                                                                                : len;
}

/* A declared weight is for the one transfer asked right after it. */
static int weighed(ck_bnode *n, int rc)
{
    n->weigh_key[0] = 0;
    return rc;
}

static int op_store_put(ck_platform *p, const char *key, uint8_t *data, size_t len,
                        uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key)) {
        free(data);
        return weighed(bn(p), CK_EINVAL);
    }
    if (store_fails(bn(p), CK_STORE_OP_PUT, token, &rc)) {
        free(data);
        return weighed(bn(p), rc);
    }
    return weighed(bn(p), bn(p)->bw->io->store_put(bn(p), key, 0, data, len, token));
}

static int op_store_append(ck_platform *p, const char *key, uint64_t at, uint8_t *data,
                           size_t len, uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key) || !ck_store_appendable(key) || !at ||
        at % CK_STORE_APPEND_ALIGN) {
        free(data);
        return weighed(bn(p), CK_EINVAL);
    }
    if (store_fails(bn(p), CK_STORE_OP_PUT, token, &rc)) {
        free(data);
        return weighed(bn(p), rc);
    }
    return weighed(bn(p), bn(p)->bw->io->store_put(bn(p), key, at, data, len, token));
}

static int op_mail_waiting(ck_platform *p)
{
    return bn(p)->bw->io->mail_waiting ? bn(p)->bw->io->mail_waiting(bn(p)) : 0;
}

static int op_store_put_files(ck_platform *p, const char *key, const char *const *paths,
                              uint32_t n, uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key) || n == 0)
        return weighed(bn(p), CK_EINVAL);
    if (store_fails(bn(p), CK_STORE_OP_PUT, token, &rc))
        return weighed(bn(p), rc);
    return weighed(bn(p), bn(p)->bw->io->store_put_files(bn(p), key, 0, paths, n, token));
}

static int op_store_append_files(ck_platform *p, const char *key, uint64_t at,
                                 const char *const *paths, uint32_t n, uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key) || !ck_store_appendable(key) || n == 0 || !at ||
        at % CK_STORE_APPEND_ALIGN)
        return weighed(bn(p), CK_EINVAL);
    if (store_fails(bn(p), CK_STORE_OP_PUT, token, &rc))
        return weighed(bn(p), rc);
    return weighed(bn(p), bn(p)->bw->io->store_put_files(bn(p), key, at, paths, n, token));
}

static int op_store_get(ck_platform *p, const char *key, uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key))
        return weighed(bn(p), CK_EINVAL);
    if (store_fails(bn(p), CK_STORE_OP_GET, token, &rc))
        return weighed(bn(p), rc);
    return weighed(bn(p), bn(p)->bw->io->store_get(bn(p), key, 0, CK_STOREFS_WHOLE, token));
}

static int op_store_get_range(ck_platform *p, const char *key, uint64_t at, uint64_t len,
                              uint64_t token)
{
    int rc;
    if (!ck_storefs_key_ok(key) || len == CK_STOREFS_WHOLE || at > (uint64_t)INT64_MAX)
        return weighed(bn(p), CK_EINVAL);
    if (store_fails(bn(p), CK_STORE_OP_GET, token, &rc))
        return weighed(bn(p), rc);
    return weighed(bn(p), bn(p)->bw->io->store_get(bn(p), key, at, len, token));
}

static int op_store_list(ck_platform *p, const char *prefix, ck_store_entry **out, size_t *cnt)
{
    return ck_storefs_list(bn(p)->bw->store_dir, prefix, out, cnt);
}

static int op_store_delete(ck_platform *p, const char *key)
{
    int rc;
    if (store_fails(bn(p), CK_STORE_OP_DELETE, 0, &rc))
        return rc;
    return ck_storefs_delete(bn(p)->bw->store_dir, key);
}

static int op_fault(ck_platform *p, int point)
{
    return ck_buggify_alloc(bn(p)->bw->bug, p->host, point);
}

/* The sinks' external system costs no time of the run's. */
static int sink_rc(ck_bnode *n, int rc)
{
    if (rc == CK_EIO && n->bw->io->io_failed)
        n->bw->io->io_failed(n, "cannot write the sinks' output");
    return rc;
}

static int op_output(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *data,
                     size_t len)
{
    ck_sinkfs *s = bn(p)->bw->sinks;
    return s ? sink_rc(bn(p), ck_sinkfs_write(s, sink, txn, data, len)) : CK_EIO;
}

/* A commit: with output faults for the sink in the timeline, the first
 * one armed applies to it (io/sinkfs.h; they claim it through the sinks'
 * directory, so that one commit has it whichever process commits). */
static int op_output_commit(ck_platform *p, uint32_t sink, uint64_t txn)
{
    ck_bnode *n = bn(p);
    const ck_bworld *bw = n->bw;
    ck_sinkfs *s = bw->sinks;
    if (!s)
        return CK_EIO;
    int fault[CK_MAX_FAULTS], kind[CK_MAX_FAULTS], nf = 0, applied;
    for (int i = 0; i < bw->nfaults && i < CK_MAX_FAULTS; i++) {
        const ck_fault *f = &bw->faults[i];
        if (ck_fault_is_output(f->kind) && (uint32_t)f->op == sink >> 16) {
            fault[nf] = i;
            kind[nf++] = f->kind == CK_FAULT_SINK_DUPLICATE ? CK_SINKFS_DUPLICATE
                         : f->kind == CK_FAULT_SINK_DROP    ? CK_SINKFS_DROP
                                                            : CK_SINKFS_CORRUPT;
        }
    }
    if (!nf)
        return sink_rc(n, ck_sinkfs_commit(s, sink, txn));
    return sink_rc(n, ck_sinkfs_commit_faults(s, sink, txn, fault, kind, nf, ck_bnode_now(n),
                                              &applied));
}

static int op_output_abort(ck_platform *p, uint32_t sink, uint64_t txn)
{
    ck_sinkfs *s = bn(p)->bw->sinks;
    return s ? sink_rc(bn(p), ck_sinkfs_abort(s, sink, txn)) : CK_EIO;
}

static int op_deploy(ck_platform *p, uint32_t attempt, uint32_t global,
                     const struct ck_restore_point *from)
{
    return bn(p)->bw->io->deploy(bn(p), attempt, global, from);
}

/* A state backend's working directory: <local>/tm<host>/a<attempt>-op<op>-<subtask>,
 * one per attempt, so that a cancelled attempt's instance never shares one. */
static int op_kstate_open(ck_platform *p, const ck_kstate_spec *spec, ck_kstate **out, char *err,
                          size_t errlen)
{
    const ck_bnode *n = bn(p);
    if (!n->bw->local_dir || spec->type != CK_BACKEND_ROCKSDB) {
        snprintf(err, errlen, "this backend has no local disk for state");
        return CK_EINVAL;
    }
    char dir[800];
    snprintf(dir, sizeof(dir), "%s/tm%d", n->bw->local_dir, p->host);
    if (ck_storefs_mkdirs(dir)) {
        snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
        return CK_EIO;
    }
    size_t l = strlen(dir);
    snprintf(dir + l, sizeof(dir) - l, "/a%u-op%d-%d", spec->attempt, spec->op, spec->subtask);
    ck_rocks_opts o = {.write_buffer = spec->write_buffer,
                       .target_file = spec->target_file,
                       .level_base = spec->level_base,
                       .max_parallelism = spec->max_parallelism,
                       .rescale = spec->rescale};
    *out = ck_rocks_open(dir, &o, spec->kgr, spec->states, spec->nstates, err,
                         errlen);
    return *out ? CK_OK : CK_EIO;
}

static void op_undeploy(ck_platform *p, uint32_t attempt, uint32_t global)
{
    bn(p)->bw->io->undeploy(bn(p), attempt, global);
}

static void op_set_routes(ck_platform *p, uint32_t attempt, int gen, uint32_t count,
                          const uint16_t *hosts)
{
    bn(p)->bw->io->set_routes(bn(p), attempt, gen, count, hosts);
}

static void op_log(ck_platform *p, int level, const char *line)
{
    ck_bnode *n = bn(p);
    if (level <= CK_LOG_WARN || n->bw->verbose)
        fprintf(stderr, "[%.6f] %s: %s\n", (double)n->bw->io->clock(n) / 1e9, n->name, line);
}

#define BNODE_OPS                                                                          \
    .now = op_now, .send = op_send, .cpu = op_cpu, .background = op_background,           \
    .note = op_note, .store_put = op_store_put, .store_get = op_store_get,                \
    .store_get_range = op_store_get_range, .store_append = op_store_append,               \
    .store_list = op_store_list, .store_delete = op_store_delete, .output = op_output,    \
    .output_commit = op_output_commit, .output_abort = op_output_abort,                   \
    .deploy = op_deploy, .undeploy = op_undeploy, .wait = op_wait,                        \
    .set_routes = op_set_routes, .log = op_log, .kstate_open = op_kstate_open,             \
    .mail_waiting = op_mail_waiting, .fault = op_fault, .store_weigh = op_store_weigh

const ck_platform_ops ck_bnode_ops = {BNODE_OPS};
/* ...for a backend that uploads local files from their paths */
const ck_platform_ops ck_bnode_ops_files = {BNODE_OPS, .store_put_files = op_store_put_files,
                                             .store_append_files = op_store_append_files};

/* ---- invariants (bnode.h) ------------------------------------------------------------ */

#define CK_INV_MODULE "bnode"

int ck_bnode_check(const ck_bnode *n, ck_inv *v)
{
    CK_INV(v, 1,
           (n->plat.ops == &ck_bnode_ops && !n->bw->io->store_put_files) ||
               (n->plat.ops == &ck_bnode_ops_files && n->bw->io->store_put_files),
           "%s: not the backends' platform table for its backend", n->name);
    CK_INV(v, 1, n->plat.netpool == &n->host->pool, "%s: a network pool not its host's",
           n->name);
    return 0;
}

int ck_bhost_check(const ck_bhost *h, ck_inv *v)
{
    int rc;
    CK_INV(v, 4, h->slow > 0 && h->disk_bw >= 0, "slow_cpu factor %g, local disk %g bytes/s",
           h->slow, h->disk_bw);
    if ((rc = ck_cores_check(&h->cores, v)) || (rc = ck_dlater_check(&h->later, v)))
        return rc;
    return ck_segpool_check(&h->pool, v);
}
