/*
 * test_taskfault.c - a subtask under the faults inside the process
 * (backend/buggify.h), on the fake platform's store (fakeplat.h): an
 * upload that fails declines the checkpoint and the task goes on; a
 * download that fails with an I/O error fails the task without calling
 * its checkpoint damaged, while a damaged or missing file does; an
 * allocation made to fail at each point of the engine (restore, snapshot,
 * deploy) takes the path a failed malloc takes; a task manager whose
 * deployment of one subtask fails deploys the others. Then the failmalloc
 * tests (SQLite's malloc tests, nghttp2's failmalloc): the nth allocation
 * of a restore, or of a snapshot, fails, for n = 1, 2, ... until the
 * operation goes through, and each time the task ends cleanly (a failed
 * task, a declined checkpoint, never a crash), with no block it
 * allocated left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "element.h"
#include "error.h"
#include "fakeplat.h"
#include "graph.h"
#include "keygroup.h"
#include "operator.h"
#include "rng.h"
#include "snapshot.h"
#include "task.h"
#include "taskmanager.h"
#include "wire.h"

/* ---- failmalloc (the test links with --wrap for malloc, calloc, realloc, free) ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* While armed, allocations are counted and the fail_at-th one fails (0:
 * none); allocations of the fake platform's own (in_fake) are neither.
 * Blocks allocated while armed are tracked until freed: what is left
 * once everything is torn down leaked. */
static struct {
    int armed, in_fake;
    long count, fail_at;
    int failed;
    void *live[1 << 16]; /* open addressing, NULL: free; DEAD: removed */
    long nlive;
} fm;
#define FM_DEAD ((void *)1)

static size_t fm_slot(const void *p)
{
    return (size_t)(ck_mix64((uint64_t)(uintptr_t)p) & ((1 << 16) - 1));
}

static void fm_track(void *p)
{
    for (size_t i = fm_slot(p);; i = (i + 1) & ((1 << 16) - 1))
        if (!fm.live[i] || fm.live[i] == FM_DEAD) {
            fm.live[i] = p;
            fm.nlive++;
            return;
        }
}

static void fm_untrack(const void *p)
{
    if (!fm.nlive || !p)
        return;
    for (size_t i = fm_slot(p); fm.live[i]; i = (i + 1) & ((1 << 16) - 1))
        if (fm.live[i] == p) {
            fm.live[i] = FM_DEAD;
            fm.nlive--;
            return;
        }
}

/* Whether this allocation fails. */
static int fm_fails(void)
{
    if (!fm.armed || fm.in_fake)
        return 0;
    if (++fm.count == fm.fail_at) {
        fm.failed = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    if (fm_fails())
        return NULL;
    void *p = __real_malloc(n);
    if (p && fm.armed && !fm.in_fake)
        fm_track(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (fm_fails())
        return NULL;
    void *p = __real_calloc(n, size);
    if (p && fm.armed && !fm.in_fake)
        fm_track(p);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    if (fm_fails())
        return NULL; /* the old block stays as it was */
    void *p = __real_realloc(old, n);
    if (p) {
        fm_untrack(old);
        if (fm.armed && !fm.in_fake)
            fm_track(p);
    }
    return p;
}

void __wrap_free(void *p)
{
    fm_untrack(p);
    __real_free(p);
}

static void fm_arm(long fail_at)
{
    memset(fm.live, 0, sizeof(fm.live));
    fm.nlive = 0;
    fm.count = 0;
    fm.fail_at = fail_at;
    fm.failed = 0;
    fm.armed = 1;
}

/* The fake platform's allocations are the test's, not the engine's. */
static ck_time tf_now(ck_platform *p)
{
    return fake_now(p);
}
static int tf_send(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len)
{
    fm.in_fake++;
    int rc = fake_send(p, dst, msg, len);
    fm.in_fake--;
    return rc;
}
static void tf_background(ck_platform *p, ck_time since, double flops, uint64_t disk,
                          uint64_t token)
{
    fm.in_fake++;
    fake_background(p, since, flops, disk, token);
    fm.in_fake--;
}
static int tf_put(ck_platform *p, const char *k, uint8_t *d, size_t n, uint64_t t)
{
    fm.in_fake++;
    int rc = fake_store_put(p, k, d, n, t);
    fm.in_fake--;
    return rc;
}
static int tf_get(ck_platform *p, const char *k, uint64_t t)
{
    fm.in_fake++;
    int rc = fake_store_get(p, k, t);
    fm.in_fake--;
    return rc;
}
static int tf_output(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *d, size_t n)
{
    fm.in_fake++;
    int rc = fake_output(p, sink, txn, d, n);
    fm.in_fake--;
    return rc;
}

static ck_platform_ops tf_ops;

/* ---- the job: source(1) => win(2) -> out(2) ------------------------------------ */

typedef struct rig {
    ck_graph g;
    ck_config cfg;
    ck_topic topic;
    ck_job_env env;
    fake_world w;
    fake_plat fp;
} rig;

static int tp_np(const void *ctx)
{
    (void)ctx;
    return 1;
}
static int64_t tp_size(const void *ctx, int p)
{
    (void)ctx, (void)p;
    return 64;
}
static ck_time tp_at(const void *ctx, int p, int64_t off)
{
    (void)ctx, (void)p;
    return off < 32 ? 0 : 100 * CK_NS_PER_S; /* half now, half much later */
}
static void tp_read(const void *ctx, int p, int64_t off, ck_rec *out)
{
    static const char *const keys[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    (void)ctx, (void)p;
    memset(out, 0, sizeof(*out));
    out->key = keys[off % 8];
    out->klen = 1;
    out->ts = off * 10;
    out->value = 1;
}
static const ck_topic_ops tp_ops = {tp_np, tp_size, tp_at, tp_read, NULL, NULL};

static void rig_init(rig *r)
{
    memset(r, 0, sizeof(*r));
    ck_config_defaults(&r->cfg);
    r->cfg.v[CK_CFG_CP_INTERVAL] = CK_NS_PER_S;
    r->cfg.v[CK_CFG_CP_MEMORY_THRESHOLD] = 0; /* every state file goes to the store */
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "win", .kind = CK_OP_WINDOW, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_HASH, .agg_fn = CK_AGG_SUM, .window_ms = 100};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(&r->g, &spec, &r->cfg, &bad, err, sizeof(err)), 0);
    r->topic = (ck_topic){&tp_ops, NULL, "t"};
    r->env = (ck_job_env){.g = &r->g, .cfg = &r->cfg, .topic = &r->topic, .job_id = "job"};
    r->w.store_on = 1;
    tf_ops = fake_ops;
    tf_ops.now = tf_now;
    tf_ops.send = tf_send;
    tf_ops.background = tf_background;
    tf_ops.store_put = tf_put;
    tf_ops.store_get = tf_get;
    tf_ops.output = tf_output;
    fake_init(&r->fp, &r->w, CK_EP_TASK0);
    r->fp.plat.ops = &tf_ops;
}

/* What the task told the job manager since the last call: how many
 * messages of each kind, and the last TASK_FAILED's code and checkpoint,
 * the last DECLINE's reason, the last ACK's handles (into *acked, if
 * given). */
typedef struct told {
    int running, failed, declined, acked;
    uint32_t fail_code, decline_reason;
    uint64_t fail_cp;
    char why[320];
} told;

static told told_jm(fake_world *w, ck_handles *acked)
{
    told t = {0};
    fake_msg *m;
    fm.in_fake++;
    while ((m = fake_pop(w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        const uint8_t *b = m->data + CK_WIRE_HDR;
        if (m->dst == CK_EP_JM && h.type == CK_MSG_TASK_RUNNING) {
            t.running++;
        } else if (m->dst == CK_EP_JM && h.type == CK_MSG_TASK_FAILED) {
            t.failed++;
            t.fail_code = ck_get_u32(b);
            t.fail_cp = ck_get_u64(b + 4);
            size_t kl = ck_get_u16(b + 12), at = CK_FAIL_BODY_MIN + kl;
            assert_true(h.len >= at);
            snprintf(t.why, sizeof(t.why), "%.*s", (int)(h.len - at), (const char *)b + at);
        } else if (m->dst == CK_EP_JM && h.type == CK_MSG_CP_DECLINE) {
            t.declined++;
            t.decline_reason = ck_get_u32(b + 8);
        } else if (m->dst == CK_EP_JM && h.type == CK_MSG_CP_ACK) {
            t.acked++;
            if (acked) {
                ck_cp_ack a;
                assert_int_equal(ck_cp_ack_decode(b, h.len, &a), 0);
                ck_handles_free(acked);
                *acked = a.handles;
            }
        }
        free(m->data);
        free(m);
    }
    fm.in_fake--;
    return t;
}

static void run(ck_node n)
{
    while (n.ops->work(n.self) > 0)
        ;
}

/* Sends the task a checkpoint message of the job manager's. */
static void cp_msg(ck_node node, int type, uint64_t id, uint32_t attempt)
{
    uint8_t body[20] = {0};
    ck_put_u64(body, id);
    size_t n;
    fm.in_fake++;
    uint8_t *m = ck_wire_msg(type, CK_EP_JM, CK_EP_TASK0, attempt, body,
                             type == CK_MSG_CP_TRIGGER ? 20 : 8, &n);
    fm.in_fake--;
    node.ops->on_message(node.self, m, n);
}

/* A source task that runs (its first records read). */
static ck_task *source_running(rig *r)
{
    ck_task *t = ck_task_new(&r->env, &r->fp.plat, 0, 0, NULL);
    assert_non_null(t);
    run(ck_task_node(t));
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    assert_int_equal(told_jm(&r->w, NULL).running, 1);
    return t;
}

/* Checkpoint id of a running source task, its completions handed over. */
static told checkpoint(rig *r, ck_task *t, uint64_t id, ck_handles *acked)
{
    ck_node n = ck_task_node(t);
    cp_msg(n, CK_MSG_CP_TRIGGER, id, 0);
    run(n);
    fake_deliver(&r->w, n);
    return told_jm(&r->w, acked);
}

/* An upload that fails declines the checkpoint (Flink's
 * AsyncCheckpointRunnable: counted against the tolerable failed
 * checkpoints), and the task goes on: the next checkpoint is acknowledged. */
static void test_upload_failure_declines(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_task *t = source_running(&r);
    r.w.put_fail = CK_EIO;
    told a = checkpoint(&r, t, 1, NULL);
    assert_true(r.w.puts > 0);
    assert_int_equal(a.declined, 1);
    assert_int_equal(a.decline_reason, CK_DECLINE_FAILURE);
    assert_int_equal(a.acked, 0);
    assert_int_equal(a.failed, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    r.w.put_fail = 0;
    told b = checkpoint(&r, t, 2, NULL);
    assert_int_equal(b.acked, 1);
    assert_int_equal(b.declined + b.failed, 0);
    ck_task_del(t);
    fake_clear(&r.w);
}

/* An allocation that fails serializing a snapshot (its asynchronous
 * phase) declines the checkpoint too; the task goes on. */
static void test_snapshot_alloc_declines(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_task *t = source_running(&r);
    r.w.fail_point = CK_POINT_SNAPSHOT;
    told a = checkpoint(&r, t, 1, NULL);
    assert_int_equal(r.w.point_hits, 1);
    assert_int_equal(r.w.puts, 0); /* nothing was uploaded */
    assert_int_equal(a.declined, 1);
    assert_int_equal(a.decline_reason, CK_DECLINE_FAILURE);
    assert_int_equal(a.failed + a.acked, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    r.w.fail_point = 0;
    told b = checkpoint(&r, t, 2, NULL);
    assert_int_equal(b.acked, 1);
    ck_task_del(t);
    fake_clear(&r.w);
}

/* A keyed snapshot of window subtask `sub` (global 1 + sub) put in the
 * store under key; its handle into hs. */
static void keyed_file(rig *r, int sub, const char *key, ck_handles *hs)
{
    ck_chain c;
    assert_int_equal(ck_chain_init(&c, &r->g, 1, sub, NULL, 0, NULL, NULL, 0), 0);
    ck_rng rg;
    ck_rng_init(&rg, 5, 5);
    const ck_op *win = &c.ops[0];
    int fed = 0;
    for (int i = 0; i < 2000; i++) {
        char k[16];
        uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%d", (int)ck_rng_below(&rg, 300));
        int kg = ck_kg_of_key(k, kl, win->spec->max_parallelism);
        if (kg < win->kgr.start || kg > win->kgr.end)
            continue;
        ck_rec rec = {.ts = (int64_t)ck_rng_below(&rg, 500), .value = 1, .key = k, .klen = kl};
        assert_int_equal(ck_chain_record(&c, &rec), 0);
        fed++;
    }
    assert_true(fed > 100);
    ck_capture cap = {.checkpoint_id = 4, .vertex = 1, .subtask = sub, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&c, &cap, 0), 0);
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(&cap, &file, &len), 0);
    ck_capture_free(&cap);
    ck_chain_free(&c);
    assert_int_equal(ck_handles_add(hs, CK_HANDLE_SNAPSHOT, 0, key, len, ck_get_u32(file + len - 4),
                                    CK_KGR_EMPTY),
                     0);
    fake_store_set(&r->w, key, file, len);
}

#define STATE_KEY "checkpoints/job/chk-4/v1-1.state"

/* Restores window subtask 1 (global 2) from the keyed file of checkpoint
 * 4 as attempt `attempt`: what it told the job manager. *tp: the task
 * (NULL when it could not be created). */
static told restore(rig *r, const ck_handles *hs, uint32_t attempt, ck_task **tp)
{
    ck_restore_point from = {.id = 4, .handles = hs, .old_vertex = 1, .old_subtask = 1,
                             .old_parallelism = 2}; /* its own: window subtask 1 of 2 */
    snprintf(from.dir, sizeof(from.dir), "checkpoints/job/chk-4/");
    ck_task *t = ck_task_new(&r->env, &r->fp.plat, 2, attempt, &from);
    *tp = t;
    if (!t)
        return told_jm(&r->w, NULL);
    ck_node n = ck_task_node(t);
    run(n);
    fake_deliver(&r->w, n);
    return told_jm(&r->w, NULL);
}

/* A download that fails with an I/O error fails the task, and says the
 * checkpoint is not damaged (CK_FAIL_RESTORE_IO): the job manager restarts
 * it from the same checkpoint, as Flink does. A file of another checksum
 * (CK_FAIL_RESTORE_DAMAGED), or one missing (CK_FAIL_RESTORE_MISSING), is
 * the checkpoint's. */
static void test_download_failure_is_not_damage(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_handles hs = {0};
    keyed_file(&r, 1, STATE_KEY, &hs);
    ck_task *t;
    /* an I/O error */
    r.w.get_fail = CK_EIO;
    told a = restore(&r, &hs, 1, &t);
    assert_int_equal(r.w.gets, 1);
    assert_int_equal(a.failed, 1);
    assert_int_equal(a.fail_code, CK_FAIL_RESTORE_IO);
    assert_true(a.fail_cp == 4);
    assert_non_null(strstr(a.why, "input/output error"));
    assert_int_equal(ck_task_get_state(t), CK_TASK_FAILED);
    ck_task_del(t);
    /* the same checkpoint, restored again */
    r.w.get_fail = 0;
    told b = restore(&r, &hs, 2, &t);
    assert_int_equal(b.running, 1);
    assert_int_equal(b.failed, 0);
    assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
    ck_task_del(t);
    /* a bit flipped: damage */
    fake_obj *o = fake_find(&r.w, STATE_KEY);
    o->data[o->len / 2] ^= 0x10;
    told c = restore(&r, &hs, 3, &t);
    assert_int_equal(c.failed, 1);
    assert_int_equal(c.fail_code, CK_FAIL_RESTORE_DAMAGED);
    ck_task_del(t);
    /* missing: damage */
    assert_int_equal(fake_store_delete(&r.fp.plat, STATE_KEY), 0);
    told d = restore(&r, &hs, 4, &t);
    assert_int_equal(d.failed, 1);
    assert_int_equal(d.fail_code, CK_FAIL_RESTORE_MISSING);
    assert_non_null(strstr(d.why, "missing"));
    ck_task_del(t);
    ck_handles_free(&hs);
    fake_clear(&r.w);
}

/* An allocation that fails while a task restores: the task fails, not
 * the checkpoint (CK_FAIL_RESTORE_IO); nothing more is downloaded. */
static void test_restore_alloc_failure(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_handles hs = {0};
    keyed_file(&r, 1, STATE_KEY, &hs);
    r.w.fail_point = CK_POINT_RESTORE;
    ck_task *t;
    told a = restore(&r, &hs, 1, &t);
    assert_int_equal(r.w.point_hits, 1);
    assert_int_equal(a.failed, 1);
    assert_int_equal(a.fail_code, CK_FAIL_RESTORE_IO);
    assert_int_equal(a.running, 0);
    ck_task_del(t);
    ck_handles_free(&hs);
    fake_clear(&r.w);
}

/* An allocation that fails while a subtask is deployed: no task, and the
 * subtask tells the job manager from its own endpoint that it failed. */
static void test_deploy_alloc_failure(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    r.w.fail_point = CK_POINT_DEPLOY;
    ck_task *t = ck_task_new(&r.env, &r.fp.plat, 1, 7, NULL);
    assert_null(t);
    assert_int_equal(r.w.point_hits, 1);
    assert_int_equal(r.w.nmsgs, 0); /* ck_task_new tells nobody */
    ck_task_deploy_failed(&r.env, &r.fp.plat, 1, 7);
    fake_msg *m = fake_pop(&r.w);
    assert_non_null(m);
    ck_wire_hdr h;
    assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
    assert_int_equal(h.type, CK_MSG_TASK_FAILED);
    assert_int_equal(m->dst, CK_EP_JM);
    assert_int_equal(h.src, 1);   /* the subtask */
    assert_int_equal(h.epoch, 7); /* of that attempt */
    assert_int_equal(ck_get_u32(m->data + CK_WIRE_HDR), CK_FAIL_TASK);
    free(m->data);
    free(m);
    r.w.fail_point = 0;
    t = ck_task_new(&r.env, &r.fp.plat, 1, 8, NULL);
    assert_non_null(t);
    ck_task_del(t);
    fake_clear(&r.w);
}

/* A task manager whose deployment of one subtask fails deploys the others
 * of the DEPLOY (their regions may not fail over), and stays up. */
static void test_tm_deploys_the_rest(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_tm tm;
    fake_plat tp;
    fake_init(&tp, &r.w, CK_EP_TM0);
    ck_tm_init(&tm, &tp.plat, &r.g, &r.cfg, 0, 1);
    ck_node n = ck_tm_node(&tm);
    uint16_t hosts[3] = {0, 0, 0};
    assert_int_equal(r.g.nsubtasks, 3);
    for (int fail = 1; fail <= 3; fail++) {
        r.w.deploy_fail = fail; /* global subtask fail - 1 */
        int before = r.w.deploys;
        size_t blen, len;
        uint8_t *body = ck_tm_deploy_body((uint32_t)fail, 0, NULL, 3, hosts, NULL, NULL, 0, &blen);
        uint8_t *m = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0, (uint32_t)fail, body, blen,
                                 &len);
        free(body);
        assert_int_equal(n.ops->on_message(n.self, m, len), 0);
        assert_int_equal(r.w.deploys, before + 3);
    }
    fake_clear(&r.w);
}

/* ---- failmalloc ------------------------------------------------------------------ */

/* Fails the nth allocation of a restore (from the task's creation until it
 * runs), n = 1, 2, ...: each time the task is not created, or fails
 * saying the checkpoint is not damaged, or runs (a failure it could
 * absorb: a figure not recorded); it never waits for good, and no block
 * is left; until one n fails nothing and the task runs. (A failure whose
 * own message could not be allocated tells nobody: the platform's send
 * takes a malloc'd message.) */
static void test_failmalloc_restore(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r);
    ck_handles hs = {0};
    keyed_file(&r, 1, STATE_KEY, &hs);
    long n;
    int created = 0, failed = 0;
    for (n = 1; n < 100000; n++) {
        fm_arm(n);
        ck_task *t;
        told a = restore(&r, &hs, (uint32_t)n, &t);
        int hit = fm.failed;
        if (!t) {
            assert_true(hit); /* nothing but the failed allocation stops it */
        } else {
            created++;
            ck_task_state st = ck_task_get_state(t);
            if (st == CK_TASK_FAILED) {
                /* a clean failure: told at most once, never as damage */
                assert_true(hit);
                assert_true(a.failed <= 1 && a.running == 0);
                if (a.failed && a.fail_code != CK_FAIL_RESTORE_IO)
                    fail_msg("allocation %ld: the restore failed as %u (%s), not as an I/O "
                             "failure",
                             n, a.fail_code, a.why);
                failed++;
            } else if (st == CK_TASK_RUNNING) {
                assert_true(a.running == 1 || hit);
                assert_int_equal(a.failed, 0);
            } else {
                fail_msg("allocation %ld failed: the task waits in state %d", n, (int)st);
            }
        }
        ck_task_del(t);
        fake_drop_done(&r.w);
        fm.armed = 0;
        if (fm.nlive)
            fail_msg("allocation %ld failed: %ld blocks leaked", n, fm.nlive);
        if (!hit)
            break;
    }
    assert_true(n > 10 && n < 100000); /* it went through, after failing many times */
    assert_true(created > 0 && failed > 0);
    fprintf(stderr, "restore: %ld allocations, each failed once: %d tasks failed cleanly\n",
            n - 1, failed);
    ck_handles_free(&hs);
    fake_clear(&r.w);
}

/* Fails the nth allocation of a snapshot (from the trigger to the
 * acknowledgement), n = 1, 2, ...: each time the task fails (its
 * synchronous phase) or declines the checkpoint (its asynchronous
 * phase), no block is left, and a task that declined takes the next
 * checkpoint; until one n fails nothing and the snapshot is acknowledged. */
static void test_failmalloc_snapshot(void **state)
{
    (void)state;
    static rig r;
    long n;
    int declined = 0, failed = 0;
    for (n = 1; n < 100000; n++) {
        rig_init(&r);
        ck_task *t = source_running(&r);
        fm_arm(n);
        told a = checkpoint(&r, t, 1, NULL);
        fm.armed = 0;
        int hit = fm.failed;
        assert_true(a.acked + a.declined + a.failed <= 1);
        if (!hit) {
            assert_int_equal(a.acked, 1);
        } else if (ck_task_get_state(t) == CK_TASK_FAILED) {
            /* its synchronous phase failed: the task fails (told at most once) */
            assert_true(!a.failed || a.fail_code == CK_FAIL_TASK);
            failed++;
        } else {
            /* declined (its asynchronous phase), or a failure it absorbed:
             * it goes on, and takes the next checkpoint */
            assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
            assert_true(!a.declined || a.decline_reason == CK_DECLINE_FAILURE);
            declined += a.declined;
            told b = checkpoint(&r, t, 2, NULL);
            assert_int_equal(b.acked, 1);
        }
        ck_task_del(t);
        fake_clear(&r.w);
        if (fm.nlive)
            fail_msg("allocation %ld failed: %ld blocks leaked", n, fm.nlive);
        if (!hit)
            break;
    }
    assert_true(n > 5 && n < 100000);
    assert_true(declined > 0);
    fprintf(stderr, "snapshot: %ld allocations, each failed once: %d declined, %d tasks failed\n",
            n - 1, declined, failed);
}

/* Hands the restored window task (global 2, subtask 1 of the window) a
 * DATA buffer from the source with barrier id: its checkpoint, aligned on
 * its one channel. seq: the channel's next sequence number. */
static void barrier_in(ck_task *t, uint32_t attempt, uint32_t seq, uint64_t id)
{
    ck_elem e = {.tag = CK_EL_BARRIER};
    e.u.barrier.id = id;
    size_t n = ck_elem_size(&e);
    fm.in_fake++;
    uint8_t *m = malloc(CK_WIRE_HDR + n);
    fm.in_fake--;
    ck_wire_hdr h = {.type = CK_MSG_DATA, .edge = 0, .src = 0, .dst = 1, .seq = seq,
                     .epoch = attempt, .len = (uint32_t)n};
    ck_wire_encode(m, &h);
    fake_encode_elem(m + CK_WIRE_HDR, &e);
    ck_node node = ck_task_node(t);
    node.ops->on_message(node.self, m, CK_WIRE_HDR + n);
}

/* The same over the snapshot of a keyed task, restored first (its window
 * state and timers), triggered by a barrier on its input. */
static void test_failmalloc_keyed_snapshot(void **state)
{
    (void)state;
    static rig r;
    long n;
    int declined = 0, failed = 0;
    for (n = 1; n < 100000; n++) {
        rig_init(&r);
        ck_handles hs = {0};
        keyed_file(&r, 1, STATE_KEY, &hs);
        ck_task *t;
        assert_int_equal(restore(&r, &hs, 1, &t).running, 1);
        ck_handles_free(&hs);
        ck_node node = ck_task_node(t);
        fm_arm(n);
        barrier_in(t, 1, 0, 5);
        run(node);
        fake_deliver(&r.w, node);
        told a = told_jm(&r.w, NULL);
        fm.armed = 0;
        int hit = fm.failed;
        assert_true(a.acked + a.declined + a.failed <= 1);
        if (!hit) {
            assert_int_equal(a.acked, 1);
        } else if (ck_task_get_state(t) == CK_TASK_FAILED) {
            assert_true(!a.failed || a.fail_code == CK_FAIL_TASK);
            failed++;
        } else {
            assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
            assert_true(!a.declined || a.decline_reason == CK_DECLINE_FAILURE);
            declined += a.declined;
            barrier_in(t, 1, 1, 6);
            run(node);
            fake_deliver(&r.w, node);
            told b = told_jm(&r.w, NULL);
            assert_int_equal(b.acked, 1);
        }
        ck_task_del(t);
        fake_clear(&r.w);
        if (fm.nlive)
            fail_msg("allocation %ld failed: %ld blocks leaked", n, fm.nlive);
        if (!hit)
            break;
    }
    assert_true(n > 10 && n < 100000);
    assert_true(declined > 0);
    fprintf(stderr,
            "keyed snapshot: %ld allocations, each failed once: %d declined, %d tasks failed\n",
            n - 1, declined, failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upload_failure_declines),
        cmocka_unit_test(test_snapshot_alloc_declines),
        cmocka_unit_test(test_download_failure_is_not_damage),
        cmocka_unit_test(test_restore_alloc_failure),
        cmocka_unit_test(test_deploy_alloc_failure),
        cmocka_unit_test(test_tm_deploys_the_rest),
        cmocka_unit_test(test_failmalloc_restore),
        cmocka_unit_test(test_failmalloc_snapshot),
        cmocka_unit_test(test_failmalloc_keyed_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
