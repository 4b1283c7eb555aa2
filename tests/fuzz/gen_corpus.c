/*
 * gen_corpus - writes the seed corpora of the fuzz targets from the
 * project's own encoders: frames for the job of fuzz_common.h, element
 * streams, state files and _metadata files. Run once; the outputs are
 * committed under tests/fuzz/corpus/<target>/ (the scenario target's seeds
 * are the scenario files of the tree, copied).
 *
 * Usage: gen_corpus DIR
 */
#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "bytes.h"
#include "changelog.h"
#include "coordinator.h"
#include "crc32c.h"
#include "element.h"
#include "heapstate.h"
#include "keygroup.h"
#include "metrics.h"
#include "snapshot.h"
#include "storekey.h"
#include "taskmanager.h"

static const char *root;

typedef struct blob {
    uint8_t *p;
    size_t len, cap;
} blob;

static void put(blob *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        FUZZ_CHECK(b->p);
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u8(blob *b, uint8_t v)
{
    put(b, &v, 1);
}

static void put_u16(blob *b, uint16_t v)
{
    uint8_t x[2];
    ck_put_u16(x, v);
    put(b, x, 2);
}

static void save(const char *target, const char *name, const blob *b)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, target);
    if (mkdir(path, 0755) && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f)) {
        perror(path);
        exit(1);
    }
}

/* ---- frames --------------------------------------------------------------- */

/* Appends one frame (u16 length | message) to a fuzz_wire input. */
static void frame(blob *b, int type, uint32_t src, uint32_t dst, uint32_t epoch, uint32_t arg,
                  uint16_t edge, uint32_t seq, const void *body, size_t len)
{
    size_t n;
    uint8_t *m = ck_wire_msg(type, src, dst, epoch, body, len, &n);
    FUZZ_CHECK(m);
    ck_put_u16(m + 2, edge);
    ck_put_u32(m + 12, seq);
    ck_put_u32(m + 16, arg);
    put_u16(b, (uint16_t)n);
    put(b, m, n);
    free(m);
}

static uint8_t *metrics_body(uint32_t vertex, uint32_t subtask, size_t *len)
{
    ck_metrics m;
    ck_metrics_init(&m);
    m.task.vertex = vertex;
    m.task.subtask = subtask;
    m.task.records_in = 40;
    m.task.busy_ns = 3 * CK_NS_PER_MS;
    FUZZ_CHECK(ck_metrics_in(&m, 0, 10) == CK_OK);
    FUZZ_CHECK(ck_metrics_in(&m, CK_NS_PER_S + 5, 30) == CK_OK);
    FUZZ_CHECK(ck_metrics_out(&m, CK_NS_PER_S + 9, 2 * CK_NS_PER_MS) == CK_OK);
    uint8_t *p;
    FUZZ_CHECK(ck_metrics_encode(&m, &p, len) == CK_OK);
    ck_metrics_free(&m);
    return p;
}

static void wire_jm(const ck_graph *g)
{
    blob b = {0};
    put_u8(&b, 0);
    for (uint32_t s = 0; s < g->nsubtasks; s++)
        frame(&b, CK_MSG_TASK_RUNNING, s, CK_EP_JM, 0, 0, 0, 0, NULL, 0);
    size_t ml;
    uint8_t *mb = metrics_body(0, 0, &ml);
    frame(&b, CK_MSG_METRICS, 0, CK_EP_JM, 0, 0, 0, 0, mb, ml);
    save("wire", "jm-running-metrics", &b);

    /* The first checkpoint is triggered at 300 ms (7 ms a frame), then acked. */
    b.len = 0;
    put_u8(&b, 0);
    for (int i = 0; i < 45; i++)
        frame(&b, CK_MSG_HEARTBEAT, CK_EP_TM0 + (uint32_t)(i % 2), CK_EP_JM, 0, (uint32_t)(i % 2),
              0, 0, NULL, 0);
    for (uint32_t s = 0; s < g->nsubtasks; s++) {
        ck_cp_ack a = {.id = 1, .sync_ns = 1000, .async_ns = 2000, .align_ns = 30};
        char key[64];
        snprintf(key, sizeof(key), "checkpoints/fuzzjob/chk-1/v0-%u.state", s);
        FUZZ_CHECK(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 120 + s, 0x1234 + s,
                                  ck_kgr_make(0, 127)) == CK_OK);
        if (s % 2) { /* a state file under the memory threshold: inline */
            uint8_t *st = calloc(1, 120 + s);
            FUZZ_CHECK(st != NULL);
            FUZZ_CHECK(ck_handles_inline_last(&a.handles, st, 120 + s) == CK_OK);
        }
        uint8_t *body;
        size_t blen;
        FUZZ_CHECK(ck_cp_ack_encode(&a, &body, &blen) == CK_OK);
        frame(&b, CK_MSG_CP_ACK, s, CK_EP_JM, 0, 0, 0, 0, body, blen);
        free(body);
        ck_cp_ack_free(&a);
    }
    save("wire", "jm-checkpoint-acks", &b);

    b.len = 0;
    put_u8(&b, 0);
    uint8_t dec[12 + 8];
    ck_put_u64(dec, 1);
    ck_put_u32(dec + 8, 1);
    memcpy(dec + 12, "too late", 8);
    frame(&b, CK_MSG_CP_DECLINE, 2, CK_EP_JM, 0, 0, 0, 0, dec, sizeof(dec));
    uint8_t fail[14 + 5 + 6];
    ck_put_u32(fail, 1); /* CK_FAIL_RESTORE_DAMAGED */
    ck_put_u64(fail + 4, 1);
    ck_put_u16(fail + 12, 5); /* the file */
    memcpy(fail + 14, "chk-1", 5);
    memcpy(fail + 19, "broken", 6);
    frame(&b, CK_MSG_TASK_FAILED, 3, CK_EP_JM, 0, 0, 0, 0, fail, sizeof(fail));
    save("wire", "jm-decline-failed", &b);

    b.len = 0;
    put_u8(&b, 0);
    uint8_t sp[8];
    ck_put_u64(sp, 0);
    frame(&b, CK_MSG_SAVEPOINT, CK_EP_CLIENT, CK_EP_JM, 0, 1, 0, 0, sp, sizeof(sp));
    for (uint32_t s = 0; s < g->nsubtasks; s++)
        frame(&b, CK_MSG_TASK_ENDED, s, CK_EP_JM, 0, 0, 0, 0, mb, ml);
    for (uint32_t s = 0; s < g->nsubtasks; s++)
        frame(&b, CK_MSG_TASK_FINISHED, s, CK_EP_JM, 0, 0, 0, 0, mb, ml);
    frame(&b, CK_MSG_HEARTBEAT, CK_EP_TM0 + 1, CK_EP_JM, 0, 1, 0, 0, NULL, 0);
    save("wire", "jm-savepoint-ended-finished", &b);
    free(mb);
    free(b.p);
}

static void wire_tm(const ck_graph *g)
{
    blob b = {0};
    put_u8(&b, 1);
    frame(&b, CK_MSG_HEARTBEAT, CK_EP_JM, CK_EP_TM0, 0, 0, 0, 0, NULL, 0);
    uint16_t hosts[64];
    for (uint32_t s = 0; s < g->nsubtasks; s++)
        hosts[s] = (uint16_t)ck_graph_host(g, s);
    size_t len;
    uint8_t *d = ck_tm_deploy_body(0, 0, NULL, g->nsubtasks, hosts, NULL, NULL, 0, &len);
    frame(&b, CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0, 0, 0, 0, 0, d, len);
    free(d);
    uint8_t cancel[12];
    ck_put_u32(cancel, 1);
    ck_put_u32(cancel + 4, 0);
    ck_put_u32(cancel + 8, 0);
    frame(&b, CK_MSG_CANCEL, CK_EP_JM, CK_EP_TM0, 0, 0, 0, 0, cancel, sizeof(cancel));
    ck_restore_point from = {.id = 3, .flags = 0};
    FUZZ_CHECK(ck_sk_dir(from.dir, sizeof(from.dir), "fuzzjob", 3, 0) == CK_OK);
    ck_handles hs[64];
    const ck_handles *hp[64];
    memset(hs, 0, sizeof(hs));
    for (uint32_t s = 0; s < g->nsubtasks; s++) {
        int v, sub;
        char key[CK_HANDLE_KEY_MAX + 1];
        ck_graph_locate(g, s, &v, &sub);
        FUZZ_CHECK(ck_sk_state(key, sizeof(key), from.dir, v, sub) == CK_OK);
        FUZZ_CHECK(ck_handles_add(&hs[s], CK_HANDLE_SNAPSHOT, 0, key, 100 + s, 0xabc00 + s,
                                  ck_kgr_make(0, 127)) == CK_OK);
        hp[s] = &hs[s];
    }
    d = ck_tm_deploy_body(1, 0, &from, g->nsubtasks, hosts, hp, NULL, 0, &len);
    frame(&b, CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0, 1, 0, 0, 0, d, len);
    free(d);
    for (uint32_t s = 0; s < g->nsubtasks; s++)
        ck_handles_free(&hs[s]);
    save("wire", "tm-deploy-cancel-redeploy", &b);
    free(b.p);
}

/* Keys of key groups in_kg of max parallelism max_kg (all when it is 0). */
static ck_kgr in_kg;
static int max_kg;

static const char *key_in_range(int i)
{
    static char key[32];
    for (int k = i;; k++) {
        snprintf(key, sizeof(key), "key-%d", k);
        if (max_kg == 0)
            return key;
        int kg = ck_kg_of_hash(ck_kg_java_hash(key, strlen(key)), max_kg);
        if (ck_kgr_contains(in_kg, kg))
            return key;
    }
}

/* Encodes elements into a buffer body. */
static size_t elements(uint8_t *out, int nrec, int with_barrier, int end)
{
    size_t n = 0;
    for (int i = 0; i < nrec; i++) {
        const char *key = key_in_range(i * 7);
        ck_elem e = {.tag = CK_EL_RECORD};
        e.u.rec = (ck_rec){.ts = 10 * i, .value = i + 1, .ingest = i * CK_NS_PER_MS,
                           .key = key, .klen = (uint32_t)strlen(key)};
        ck_elem_encode(out + n, &e);
        n += ck_elem_size(&e);
        if (i == nrec / 2) {
            ck_elem wm = {.tag = CK_EL_WATERMARK, .u.wm = 10 * i - 5};
            ck_elem_encode(out + n, &wm);
            n += ck_elem_size(&wm);
        }
    }
    if (with_barrier) {
        ck_elem bar = {.tag = CK_EL_BARRIER, .u.barrier = {.id = 1, .ts = 5, .flags = 0}};
        ck_elem_encode(out + n, &bar);
        n += ck_elem_size(&bar);
    }
    if (end) {
        ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
        ck_elem_encode(out + n, &eop);
        n += ck_elem_size(&eop);
    }
    return n;
}

static void wire_tasks(const ck_graph *g, int ntm)
{
    blob b = {0};
    uint8_t body[4096];
    uint8_t cp[20];
    /* A source subtask: credit, a checkpoint trigger, complete, abort. */
    const ck_vertex *src = &g->v[0];
    put_u8(&b, (uint8_t)(1 + ntm + src->base));
    for (int e = 0; e < src->nout; e++)
        for (uint32_t c = 0; c < (uint32_t)g->e[src->out_edges[e]].dst_parallelism; c++)
            frame(&b, CK_MSG_CREDIT, 0, c, 0, 8, (uint16_t)src->out_edges[e], 0, NULL, 0);
    ck_put_u64(cp, 1);
    ck_put_u64(cp + 8, 5 * CK_NS_PER_MS);
    ck_put_u32(cp + 16, 0);
    frame(&b, CK_MSG_CP_TRIGGER, CK_EP_JM, 0, 0, 0, 0, 0, cp, 20);
    frame(&b, CK_MSG_CP_COMPLETE, CK_EP_JM, 0, 0, 0, 0, 0, cp, 8);
    ck_put_u64(cp, 2);
    frame(&b, CK_MSG_CP_TRIGGER, CK_EP_JM, 0, 0, 0, 0, 0, cp, 20);
    frame(&b, CK_MSG_CP_ABORT, CK_EP_JM, 0, 0, 0, 0, 0, cp, 8);
    save("wire", "source-credit-checkpoints", &b);
    /* Its consumers announce buffer sizes (debloating), then the source
     * takes an unaligned checkpoint (its barrier leaves as an EVENT). */
    b.len = 0;
    put_u8(&b, (uint8_t)(1 + ntm + src->base));
    for (int e = 0; e < src->nout; e++)
        for (uint32_t c = 0; c < (uint32_t)g->e[src->out_edges[e]].dst_parallelism; c++) {
            frame(&b, CK_MSG_BUFFER_SIZE, 0, c, 0, 512, (uint16_t)src->out_edges[e], 0, NULL, 0);
            frame(&b, CK_MSG_CREDIT, 0, c, 0, 8, (uint16_t)src->out_edges[e], 0, NULL, 0);
        }
    ck_put_u64(cp, 3);
    ck_put_u32(cp + 16, CK_BARRIER_UNALIGNED);
    frame(&b, CK_MSG_CP_TRIGGER, CK_EP_JM, 0, 0, 0, 0, 0, cp, 20);
    save("wire", "source-buffer-size-unaligned", &b);

    /* Every keyed subtask: data from each producer, with a barrier, then the end. */
    for (int v = 1; v < g->nv; v++) {
        const ck_vertex *vx = &g->v[v];
        const ck_edge *in = &g->e[vx->in_edge];
        int producers = g->v[in->src_v].parallelism;
        b.len = 0;
        put_u8(&b, (uint8_t)(1 + ntm + vx->base));
        max_kg = g->spec.ops[vx->ops[0]].max_parallelism;
        in_kg = ck_kg_range(0, vx->parallelism, max_kg);
        for (int p = 0; p < producers; p++) {
            size_t n = elements(body, 6, 1, 0);
            frame(&b, CK_MSG_DATA, (uint32_t)p, 0, 0, 0, (uint16_t)in->id, 0, body, n);
        }
        ck_put_u64(cp, 1);
        frame(&b, CK_MSG_CP_COMPLETE, CK_EP_JM, 0, 0, 0, 0, 0, cp, 8);
        for (int p = 0; p < producers; p++) {
            size_t n = elements(body, 3, 0, 1);
            frame(&b, CK_MSG_DATA, (uint32_t)p, 0, 0, 0, (uint16_t)in->id, 1, body, n);
        }
        char name[64];
        snprintf(name, sizeof(name), "vertex%d-data-barrier-end", v);
        save("wire", name, &b);

        /* Unaligned checkpoint 2: data, its barrier as an EVENT from each
         * producer in turn, data between them (spilled), the end. */
        b.len = 0;
        put_u8(&b, (uint8_t)(1 + ntm + vx->base));
        ck_elem be = {.tag = CK_EL_BARRIER};
        be.u.barrier = (ck_barrier){.id = 2, .ts = 5 * CK_NS_PER_MS, .flags = CK_BARRIER_UNALIGNED};
        uint8_t ev[64];
        size_t evn = ck_elem_size(&be);
        ck_elem_encode(ev, &be);
        for (int p = 0; p < producers; p++) {
            size_t n = elements(body, 4, 0, 0);
            frame(&b, CK_MSG_DATA, (uint32_t)p, 0, 0, 0, (uint16_t)in->id, 0, body, n);
        }
        for (int p = 0; p < producers; p++) {
            frame(&b, CK_MSG_EVENT, (uint32_t)p, 0, 0, 0, (uint16_t)in->id, 0, ev, evn);
            if (p + 1 < producers) {
                size_t n = elements(body, 2, 0, 0);
                frame(&b, CK_MSG_DATA, (uint32_t)(p + 1), 0, 0, 0, (uint16_t)in->id, 1, body, n);
            }
        }
        snprintf(name, sizeof(name), "vertex%d-unaligned-events", v);
        save("wire", name, &b);
    }
    free(b.p);
}

/* ---- element streams ------------------------------------------------------- */

static void element_seeds(void)
{
    uint8_t body[4096];
    blob b = {0};
    struct {
        const char *name;
        int nrec, barrier, end;
        uint16_t cuts[3];
        int ncuts;
    } seeds[] = {
        {"records-whole", 5, 0, 0, {0}, 0},
        {"records-cut", 5, 0, 0, {3, 50, 200}, 3},
        {"all-kinds-cut", 7, 1, 1, {41, 80, 300}, 3},
        {"prefix-cut", 2, 1, 1, {2, 4, 45}, 3},
    };
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        b.len = 0;
        put_u8(&b, (uint8_t)seeds[i].ncuts);
        for (int c = 0; c < seeds[i].ncuts; c++)
            put_u16(&b, seeds[i].cuts[c]);
        put(&b, body, elements(body, seeds[i].nrec, seeds[i].barrier, seeds[i].end));
        save("element", seeds[i].name, &b);
    }
    /* A record with a payload, cut in its key. */
    const char payload[] = "payload bytes";
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec = (ck_rec){.ts = 7, .value = -3, .ingest = 9, .key = "payload-key", .klen = 11,
                       .payload = (const uint8_t *)payload, .plen = sizeof(payload) - 1};
    ck_elem_encode(body, &e);
    b.len = 0;
    put_u8(&b, 1);
    put_u16(&b, 42);
    put(&b, body, ck_elem_size(&e));
    save("element", "payload-record", &b);
    free(b.p);
}

/* ---- state files ------------------------------------------------------------- */

static void add_state(ck_kstate *ks, int maxp, const char *key, int64_t ns, int64_t v)
{
    uint32_t klen = (uint32_t)strlen(key);
    int32_t jh = ck_kg_java_hash(key, klen);
    int kg = ck_kg_of_hash(jh, maxp);
    if (kg < ks->kgr.start || kg > ks->kgr.end)
        return;
    uint8_t uk[8];
    ck_put_u64(uk, (uint64_t)v);
    ck_kkey k = {.loc = {jh, kg, ns, 0}, .key = key, .klen = klen};
    if (ks->states[0].kind == CK_STATE_MAP) { /* distinct: the value is the user key */
        k.ukey = uk;
        k.uklen = 8;
    }
    ck_ks_locate(ks, 0, &k);
    int created;
    int64_t *val = ck_ks_acquire(ks, 0, &k, 1, &created);
    FUZZ_CHECK(val);
    for (uint32_t f = 0; f < ks->states[0].nfields; f++)
        val[f] = v + f;
    FUZZ_CHECK(ck_ks_release(ks, 0, &k, val, 1) == CK_OK);
}

/* A state file of vertex v, subtask s of the fuzz job, as a checkpoint
 * would write it: keyed state of its keyed operator, source offsets, sinks. */
/* state_file writes keyed sections as native (no entries). */
static int native_state;

static void state_file(const ck_graph *g, int v, int s, int with_timers, blob *out)
{
    const ck_vertex *vx = &g->v[v];
    static ck_capture c;
    memset(&c, 0, sizeof(c));
    c.checkpoint_id = 1;
    c.vertex = v;
    c.subtask = s;
    c.parallelism = vx->parallelism;
    ck_kstate *ks = NULL;
    for (int k = 0; k < vx->nops; k++) {
        const ck_op_spec *op = &g->spec.ops[vx->ops[k]];
        if (op->kind == CK_OP_SOURCE) {
            c.has_source = 1;
            c.source.op = vx->ops[k];
            c.source.known = FUZZ_PARTS;
            c.source.parts = calloc(FUZZ_PARTS, sizeof(int));
            c.source.offsets = calloc(FUZZ_PARTS, sizeof(int64_t));
            c.source.maxts = calloc(FUZZ_PARTS, sizeof(int64_t));
            for (int p = 0; p < FUZZ_PARTS; p++) {
                if (ck_topic_owner("fuzz", p, vx->parallelism) != s)
                    continue;
                int i = c.source.nparts++;
                c.source.parts[i] = p;
                c.source.offsets[i] = 3 + i;
                c.source.maxts[i] = 20;
            }
        } else if (ck_op_keyed(op->kind)) {
            int maxp = op->max_parallelism;
            ck_kgr own = ck_kg_range(s, vx->parallelism, maxp);
            int nd;
            const ck_state_desc *d = ck_op_states(op, &nd); /* the operator's states */
            ks = ck_kstate_new(CK_BACKEND_HASHMAP, own, d, nd);
            FUZZ_CHECK(ks);
            for (int i = 0; i < 40; i++) {
                char key[16];
                snprintf(key, sizeof(key), "key-%d", i);
                add_state(ks, maxp, key, op->kind == CK_OP_WINDOW ? 200 * (i % 3) : 0, i);
            }
            ck_keyed_capture *kc = &c.keyed[c.nkeyed++];
            kc->op = vx->ops[k];
            kc->kind = op->kind;
            kc->max_parallelism = maxp;
            kc->kgr = own;
            kc->nstates = nd;
            memcpy(kc->states, d, (size_t)nd * sizeof(*d));
            kc->ops = ks->ops;
            if (native_state) /* an incremental checkpoint's: entries elsewhere */
                kc->is_native = 1;
            else
                FUZZ_CHECK(kc->ops->view_take(ks, &kc->view) == CK_OK);
            if (with_timers && op->kind == CK_OP_WINDOW) {
                kc->timers = calloc(2, sizeof(ck_timer));
                for (int t = 0; t < 40 && kc->ntimers < 2; t++) {
                    char key[16];
                    snprintf(key, sizeof(key), "key-%d", t);
                    int32_t jh = ck_kg_java_hash(key, strlen(key));
                    int kg = ck_kg_of_hash(jh, maxp);
                    if (!ck_kgr_contains(own, kg))
                        continue;
                    ck_timer *tm = &kc->timers[kc->ntimers++];
                    tm->ts = 199;
                    tm->kg = kg;
                    tm->ns = 0;
                    tm->jhash = jh;
                    tm->klen = (uint32_t)strlen(key);
                    tm->key = strdup(key);
                }
            }
        } else if (op->kind == CK_OP_SINK) {
            ck_sink_capture *sk = &c.sinks[c.nsinks++];
            sk->op = vx->ops[k];
            sk->open_txn = 5;
            sk->npending = 1;
            sk->pending[0] = 4;
        }
    }
    if (g->spec.ops[vx->ops[vx->nops - 1]].kind != CK_OP_SOURCE) {
        /* Operator state: a list of each of the three modes, on the last
         * operator of the vertex (a restore refuses it unless a buffer). */
        ck_opstate *o = ck_capture_opstate(&c, vx->ops[vx->nops - 1]);
        FUZZ_CHECK(o);
        ck_oplist *l = ck_opstate_add_list(o, "buffered", CK_OPSTATE_SPLIT);
        uint8_t el[2048];
        size_t n = elements(el, 2, 0, 0);
        FUZZ_CHECK(l && ck_oplist_add(l, el, (uint32_t)n) == CK_OK);
        l = ck_opstate_add_list(o, "seen", CK_OPSTATE_UNION);
        FUZZ_CHECK(l && ck_oplist_add(l, "012345678901", 12) == CK_OK);
        l = ck_opstate_add_list(o, "rules", CK_OPSTATE_BROADCAST);
        FUZZ_CHECK(l && ck_oplist_add(l, "", 0) == CK_OK);
    }
    if (vx->in_edge >= 0) {
        /* Channel state of an unaligned checkpoint: a few records from
         * producer 0, as the gate kept them. */
        c.chans = calloc(1, sizeof(*c.chans));
        c.chans[0] = (ck_chan_state){0, (uint16_t)g->e[vx->in_edge].id, 0, malloc(2048), 0};
        c.chans[0].len = elements(c.chans[0].data, 3, 0, 0);
        c.nchans = 1;
    }
    uint8_t *p;
    size_t len;
    FUZZ_CHECK(ck_snap_encode(&c, &p, &len) == CK_OK);
    for (int i = 0; i < c.nkeyed; i++)
        c.keyed[i].is_native = 0; /* no native snapshot to release */
    ck_capture_free(&c);
    ck_kstate_free(ks);
    out->len = 0;
    put(out, p, len);
    free(p);
}

static void snapshot_seeds(const ck_graph *g)
{
    blob b = {0}, f = {0};
    for (int v = 0; v < g->nv; v++) {
        if (v == 1) { /* the keyed vertex, as an incremental checkpoint writes it */
            native_state = 1;
            state_file(g, v, 0, 1, &f);
            native_state = 0;
            b.len = 0;
            put_u8(&b, 0);
            put(&b, f.p, f.len);
            save("snapshot", "vertex1-subtask0-native", &b);
        }
        state_file(g, v, 0, 1, &f);
        for (int mode = 0; mode < 2; mode++) {
            b.len = 0;
            put_u8(&b, (uint8_t)mode); /* bit 0: fix the CRC; the file's is right */
            put(&b, f.p, f.len);
            char name[64];
            snprintf(name, sizeof(name), "vertex%d-subtask0%s", v, mode ? "-fixcrc" : "");
            save("snapshot", name, &b);
        }
    }
    free(b.p);
    free(f.p);
}

static void metadata_seeds(const ck_graph *g)
{
    blob b = {0};
    for (int sp = 0; sp < 3; sp++) { /* 2: an incremental checkpoint */
        ck_cp_meta m = {.id = 3, .trigger = 900 * CK_NS_PER_MS, .input_fp = 0x1234abcd,
                        .flags = sp == 1 ? CK_CP_FLAG_SAVEPOINT : 0, .nsubtasks = g->nsubtasks};
        m.tasks = calloc(m.nsubtasks, sizeof(*m.tasks));
        FUZZ_CHECK(m.tasks && ck_cp_meta_vertices(&m, g) == CK_OK);
        char dir[200];
        FUZZ_CHECK(ck_sk_dir(dir, sizeof(dir), "fuzzjob", m.id, sp == 1) == CK_OK);
        for (uint32_t s = 0; s < m.nsubtasks; s++) {
            int v, sub;
            ck_graph_locate(g, s, &v, &sub);
            char key[CK_HANDLE_KEY_MAX + 1];
            FUZZ_CHECK(ck_sk_state(key, sizeof(key), dir, v, sub) == CK_OK);
            FUZZ_CHECK(ck_handles_add(&m.tasks[s], CK_HANDLE_SNAPSHOT, 0, key, 100 + s, 0xabc00 + s,
                                      ck_kgr_make(0, 127)) == CK_OK);
            if (sp != 2)
                continue;
            /* RocksDB's files: an SST uploaded earlier, a new one, the MANIFEST */
            char sk[CK_HANDLE_KEY_MAX + 1];
            snprintf(sk, sizeof(sk), "checkpoints/fuzzjob/shared/op2-%d-a0-c2-000012.sst", sub);
            FUZZ_CHECK(ck_handles_add_native(&m.tasks[s], CK_HANDLE_SHARED | CK_HANDLE_REUSED, sk,
                                             4096, 0x77, ck_kgr_make(0, 127), 2,
                                             "000012.sst") == CK_OK);
            snprintf(sk, sizeof(sk), "checkpoints/fuzzjob/shared/op2-%d-a0-c3-000019.sst", sub);
            FUZZ_CHECK(ck_handles_add_native(&m.tasks[s], CK_HANDLE_SHARED, sk, 2048, 0x78,
                                             ck_kgr_make(0, 127), 2, "000019.sst") == CK_OK);
            snprintf(sk, sizeof(sk), "%sv%d-%d-op2-MANIFEST-000021", dir, v, sub);
            FUZZ_CHECK(ck_handles_add_native(&m.tasks[s], 0, sk, 300, 0x79, ck_kgr_make(0, 127), 2,
                                             "MANIFEST-000021") == CK_OK);
            /* and the small ones inline (under the memory threshold) */
            snprintf(sk, sizeof(sk), "%sv%d-%d-op2-CURRENT", dir, v, sub);
            uint8_t *cur = malloc(16);
            FUZZ_CHECK(cur != NULL);
            memcpy(cur, "MANIFEST-000021\n", 16);
            FUZZ_CHECK(ck_handles_add_native(&m.tasks[s], 0, sk, 16, 0x7a, ck_kgr_make(0, 127), 2,
                                             "CURRENT") == CK_OK);
            FUZZ_CHECK(ck_handles_inline_last(&m.tasks[s], cur, 16) == CK_OK);
        }
        uint8_t *p;
        size_t len;
        FUZZ_CHECK(ck_cp_meta_encode(&m, &p, &len) == CK_OK);
        b.len = 0;
        put_u8(&b, 0);
        put(&b, p, len);
        save("metadata", sp == 1 ? "savepoint" : sp ? "incremental" : "checkpoint", &b);
        free(p);
        ck_cp_meta_free(&m);
    }
    free(b.p);
}

/* ---- changelog segments ------------------------------------------------ */

/* fuzz_changelog's seeds: segments of the three kinds of state it replays
 * into (value of two fields, map, list; key groups 32..95 of 128). */
static void changelog_seeds(void)
{
    static const ck_state_desc d[] = {
        {"value", CK_STATE_VALUE, 2}, {"map", CK_STATE_MAP, 1}, {"list", CK_STATE_LIST, 1}};
    ck_clog log;
    ck_clog_init(&log, 2, d, 3);
    int added = 0;
    for (int i = 0; added < 12; i++) {
        char key[16];
        snprintf(key, sizeof(key), "key-%d", i);
        int32_t jh = ck_kg_java_hash(key, (uint32_t)strlen(key));
        int kg = ck_kg_of_hash(jh, 128);
        if (kg < 32 || kg > 95)
            continue;
        uint8_t uk[4] = {0, 0, 0, (uint8_t)i};
        ck_kkey k = {.loc = {.jhash = jh, .kg = kg, .ns = 1000 * (i % 2)},
                     .key = key, .klen = (uint32_t)strlen(key)};
        int64_t v[2] = {i, -i};
        int st = added % 3;
        if (st == 1) {
            k.ukey = uk;
            k.uklen = sizeof(uk);
        }
        FUZZ_CHECK(ck_clog_append(&log, st == 2 ? CK_CLOG_ADD : CK_CLOG_PUT, st, &k, v) == CK_OK);
        if (added % 5 == 4)
            FUZZ_CHECK(ck_clog_append(&log, CK_CLOG_REMOVE, st, &k, NULL) == CK_OK);
        added++;
    }
    uint8_t *p;
    size_t len;
    uint64_t first;
    uint32_t n;
    FUZZ_CHECK(ck_clog_cut(&log, &p, &len, &first, &n) == CK_OK && p);
    blob b = {0};
    for (int mode = 0; mode < 2; mode++) {
        b.len = 0;
        put_u8(&b, (uint8_t)mode);
        put(&b, p, len);
        save("changelog", mode ? "segment-fixcrc" : "segment", &b);
    }
    free(p);
    free(b.p);
    ck_clog_free(&log);
}

/* ---- socket frames ------------------------------------------------------ */

/*
 * The frame parser's seeds (fuzz_netframe): every fuzz_wire seed's messages
 * as a connection carries them, u32 length | u32 destination | u32 source
 * | message, after fuzz_netframe's head (u8 c: 3 cut points | u8 self |
 * u8 peer | the cut points).
 */
static void netframe_seeds(void)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/wire", root);
    DIR *d = opendir(dir);
    FUZZ_CHECK(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strncmp(de->d_name, "regress-", 8) == 0)
            continue;
        char path[800];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        FUZZ_CHECK(f);
        uint8_t in[1 << 16];
        size_t n = fread(in, 1, sizeof(in), f);
        fclose(f);
        blob b = {0};
        put_u8(&b, 3);
        put_u8(&b, 2); /* received by the job manager's host... */
        put_u8(&b, 0); /* ...from task manager 0's */
        put_u16(&b, 7);
        put_u16(&b, 40);
        put_u16(&b, 301);
        for (size_t at = 1; at + 2 <= n;) {
            size_t len = ck_get_u16(in + at);
            ck_wire_hdr h;
            if (at + 2 + len > n)
                break;
            if (ck_wire_decode(in + at + 2, len, &h) == CK_OK) {
                uint8_t x[12];
                ck_put_u32(x, (uint32_t)(8 + len));
                ck_put_u32(x + 4, h.dst);
                ck_put_u32(x + 8, h.src);
                put(&b, x, sizeof(x));
                put(&b, in + at + 2, len);
            }
            at += 2 + len;
        }
        save("netframe", de->d_name, &b);
        free(b.p);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus DIR\n");
        return 2;
    }
    root = argv[1];
    fuzz_job *job = fuzz_job_get();
    const ck_graph *g = job->env.g;
    int ntm = ck_scenario_taskmanagers(&job->sc);
    wire_jm(g);
    wire_tm(g);
    wire_tasks(g, ntm);
    element_seeds();
    snapshot_seeds(g);
    metadata_seeds(g);
    netframe_seeds();
    changelog_seeds();
    return 0;
}
