/*
 * fuzz_wire - every message decoder, on arbitrary frames, as the engine's
 * nodes meet them.
 *
 * Input: u8 node | frames, each u16 length | bytes. The node is the job
 * manager (running attempt 0 of the job of fuzz_common.h, every task
 * manager registered), a task manager, or one of the job's subtasks
 * (sources read a small topic). Each frame is handed to the node's
 * on_message as a backend would, then the node runs its due deadlines and
 * some work; time moves on 7 ms a frame.
 *
 * Checked besides the sanitizers: every frame the node sends decodes; the
 * body decoders that have encoders (checkpoint ACK, metrics) re-encode
 * what they accept to the same bytes (ACK) or to bytes that decode and
 * re-encode alike (metrics, whose histogram buckets may repeat).
 */
#include "fuzz_common.h"

#include "jobmanager.h"
#include "metrics.h"
#include "taskmanager.h"

static void check_body_decoders(const uint8_t *p, size_t n)
{
    ck_wire_hdr h;
    if (ck_wire_decode(p, n, &h) == CK_OK) {
        uint8_t again[CK_WIRE_HDR];
        ck_wire_encode(again, &h);
        FUZZ_CHECK(memcmp(again, p, CK_WIRE_HDR) == 0);
    }
    /* The bodies, wherever the frame's header would end. */
    const uint8_t *b = n >= CK_WIRE_HDR ? p + CK_WIRE_HDR : p;
    size_t bl = n >= CK_WIRE_HDR ? n - CK_WIRE_HDR : n;
    ck_cp_ack a;
    if (ck_cp_ack_decode(b, bl, &a) == CK_OK) {
        uint8_t *out;
        size_t len;
        FUZZ_CHECK(ck_cp_ack_encode(&a, &out, &len) == CK_OK);
        FUZZ_CHECK(len == bl && memcmp(out, b, bl) == 0);
        free(out);
        ck_cp_ack_free(&a);
    }
    ck_metrics m;
    int rc = ck_metrics_decode(&m, b, bl);
    if (rc == CK_OK) {
        uint8_t *e1, *e2;
        size_t l1, l2;
        ck_metrics m2;
        FUZZ_CHECK(ck_metrics_encode(&m, &e1, &l1) == CK_OK);
        FUZZ_CHECK(ck_metrics_decode(&m2, e1, l1) == CK_OK);
        FUZZ_CHECK(ck_metrics_encode(&m2, &e2, &l2) == CK_OK);
        FUZZ_CHECK(l1 == l2 && memcmp(e1, e2, l1) == 0);
        ck_metrics_free(&m2);
        free(e1);
        free(e2);
    }
    ck_metrics_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_job *job = fuzz_job_get();
    const ck_graph *g = job->env.g;
    int ntm = ck_scenario_taskmanagers(&job->sc);
    int nodes = 1 + ntm + (int)g->nsubtasks;
    int which = data[0] % nodes;

    fake_world w = {0};
    fuzz_plat fp;
    ck_jm *jm = NULL;
    ck_tm *tm = NULL;
    ck_task *task = NULL;
    ck_node n;
    if (which == 0) {
        fuzz_plat_init(&fp, &w, CK_EP_JM, 0);
        jm = calloc(1, sizeof(*jm));
        FUZZ_CHECK(jm && ck_jm_init(jm, &fp.fp.plat, &job->env, ntm, 1) == CK_OK);
        n = ck_jm_node(jm);
        /* Every task manager registers: attempt 0 is deployed at once. */
        for (int h = 0; h < ntm; h++) {
            size_t len;
            uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, CK_EP_TM0 + (uint32_t)h, CK_EP_JM, 0, NULL,
                                     0, &len);
            ck_put_u32(m + 16, (uint32_t)h);
            n.ops->on_message(n.self, m, len);
        }
        FUZZ_CHECK(jm->state == CK_JOB_RUNNING);
    } else if (which <= ntm) {
        int h = which - 1;
        fuzz_plat_init(&fp, &w, CK_EP_TM0 + (uint32_t)h, h);
        tm = calloc(1, sizeof(*tm));
        FUZZ_CHECK(tm);
        ck_tm_init(tm, &fp.fp.plat, g, job->env.cfg, h, ntm);
        n = ck_tm_node(tm);
    } else {
        uint32_t global = (uint32_t)(which - 1 - ntm);
        fuzz_plat_init(&fp, &w, ck_ep_task(g, 0, global), ck_graph_host(g, global));
        task = ck_task_new(&job->env, &fp.fp.plat, global, 0, NULL);
        FUZZ_CHECK(task);
        n = ck_task_node(task);
    }
    fuzz_settle(n, &w);

    const uint8_t *p = data + 1;
    size_t left = size - 1;
    for (int frames = 0; left >= 2 && frames < 64 && !n.ops->finished(n.self); frames++) {
        size_t len = ck_get_u16(p);
        p += 2;
        left -= 2;
        if (len > left)
            len = left;
        check_body_decoders(p, len);
        uint8_t *m = malloc(len ? len : 1);
        FUZZ_CHECK(m);
        memcpy(m, p, len);
        n.ops->on_message(n.self, m, len); /* takes m; an error fails the node, no more */
        p += len;
        left -= len;
        w.now += 7 * CK_NS_PER_MS;
        fuzz_settle(n, &w);
    }

    if (jm) {
        ck_jm_free(jm);
        free(jm);
    }
    free(tm);
    if (task)
        ck_task_del(task);
    fake_clear(&w);
    return 0;
}
