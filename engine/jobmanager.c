#include "jobmanager.h"

#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "wire.h"

const char *ck_job_state_name(ck_job_state s)
{
    switch (s) {
    case CK_JOB_RUNNING:
        return "RUNNING";
    case CK_JOB_FINISHED:
        return "FINISHED";
    case CK_JOB_FAILED:
        return "FAILED";
    }
    return "?";
}

int ck_jm_init(ck_jm *jm, ck_platform *plat, const ck_graph *g, const ck_config *cfg,
               const char *job_id)
{
    memset(jm, 0, sizeof(*jm));
    jm->plat = plat;
    jm->g = g;
    jm->done = calloc(g->nsubtasks, 1);
    jm->tasks = calloc(g->nsubtasks, sizeof(ck_metrics));
    if (!jm->done || !jm->tasks) {
        free(jm->done);
        free(jm->tasks);
        return CK_ENOMEM;
    }
    ck_metrics_init(&jm->job);
    if (ck_cc_init(&jm->cc, plat, g, cfg, job_id)) {
        ck_jm_free(jm);
        return CK_ENOMEM;
    }
    return CK_OK;
}

void ck_jm_free(ck_jm *jm)
{
    if (jm->tasks)
        for (uint32_t i = 0; i < jm->g->nsubtasks; i++)
            ck_metrics_free(&jm->tasks[i]);
    free(jm->tasks);
    free(jm->done);
    ck_metrics_free(&jm->job);
    ck_cc_free(&jm->cc);
    memset(jm, 0, sizeof(*jm));
}

static void job_fail(ck_jm *jm, const char *why)
{
    if (jm->state != CK_JOB_RUNNING)
        return;
    jm->state = CK_JOB_FAILED;
    jm->end = ck_now(jm->plat);
    snprintf(jm->failure, sizeof(jm->failure), "%s", why);
    ck_logf(jm->plat, CK_LOG_ERROR, "job failed: %s", why);
}

/* Too many failed checkpoints: the job must fail over (it fails, for now). */
static void check_checkpoints(ck_jm *jm)
{
    if (jm->cc.failed)
        job_fail(jm, jm->cc.failure);
}

static int jm_on_message(void *self, uint8_t *msg, size_t len)
{
    ck_jm *jm = self;
    ck_wire_hdr h;
    int rc = ck_wire_decode(msg, len, &h);
    if (rc || h.src >= jm->g->nsubtasks) {
        free(msg);
        job_fail(jm, "malformed message to the job manager");
        return CK_OK;
    }
    if (h.type == CK_MSG_TASK_FAILED) {
        char why[256];
        int n = (int)CK_MIN(h.len, sizeof(why) - 1);
        memcpy(why, msg + CK_WIRE_HDR, (size_t)n);
        why[n] = 0;
        free(msg);
        job_fail(jm, why);
        return CK_OK;
    }
    if (h.type == CK_MSG_CP_ACK) {
        ck_cp_ack ack;
        rc = ck_cp_ack_decode(msg + CK_WIRE_HDR, h.len, &ack);
        free(msg);
        if (rc)
            job_fail(jm, "malformed checkpoint acknowledgement");
        else
            ck_cc_on_ack(&jm->cc, h.src, &ack);
        check_checkpoints(jm);
        return CK_OK;
    }
    if (h.type == CK_MSG_CP_DECLINE) {
        if (h.len < 12) {
            free(msg);
            job_fail(jm, "malformed checkpoint decline");
            return CK_OK;
        }
        char why[128];
        int n = (int)CK_MIN(h.len - 12, sizeof(why) - 1);
        memcpy(why, msg + CK_WIRE_HDR + 12, (size_t)n);
        why[n] = 0;
        ck_cc_on_decline(&jm->cc, h.src, ck_get_u64(msg + CK_WIRE_HDR),
                         ck_get_u32(msg + CK_WIRE_HDR + 8), why);
        free(msg);
        check_checkpoints(jm);
        return CK_OK;
    }
    if (h.type != CK_MSG_TASK_FINISHED || jm->done[h.src]) {
        free(msg);
        job_fail(jm, "unexpected message to the job manager");
        return CK_OK;
    }
    ck_metrics *m = &jm->tasks[h.src];
    rc = ck_metrics_decode(m, msg + CK_WIRE_HDR, h.len);
    free(msg);
    if (rc == CK_OK)
        rc = ck_metrics_merge(&jm->job, m);
    if (rc) {
        job_fail(jm, "bad metrics from a task");
        return CK_OK;
    }
    jm->done[h.src] = 1;
    jm->nfinished++;
    ck_cc_task_finished(&jm->cc, h.src);
    if (jm->nfinished == jm->g->nsubtasks && jm->state == CK_JOB_RUNNING) {
        jm->state = CK_JOB_FINISHED;
        jm->end = ck_now(jm->plat);
    }
    return CK_OK;
}

static int jm_on_complete(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    ck_jm *jm = self;
    CK_UNUSED(len);
    free(data);
    ck_cc_on_stored(&jm->cc, token, status);
    check_checkpoints(jm);
    return CK_OK;
}

static ck_time jm_deadline(void *self)
{
    ck_jm *jm = self;
    return jm->state == CK_JOB_RUNNING ? ck_cc_deadline(&jm->cc) : CK_TIME_NEVER;
}

static int jm_on_deadline(void *self)
{
    ck_jm *jm = self;
    if (jm->state == CK_JOB_RUNNING) {
        ck_cc_on_deadline(&jm->cc);
        check_checkpoints(jm);
    }
    return CK_OK;
}

static int jm_work(void *self)
{
    CK_UNUSED(self);
    return 0;
}

static int jm_finished(void *self)
{
    const ck_jm *jm = self;
    return jm->state != CK_JOB_RUNNING;
}

static const ck_node_ops jm_node_ops = {
    .on_message = jm_on_message,
    .on_complete = jm_on_complete,
    .deadline = jm_deadline,
    .on_deadline = jm_on_deadline,
    .work = jm_work,
    .finished = jm_finished,
};

ck_node ck_jm_node(ck_jm *jm)
{
    ck_node n = {&jm_node_ops, jm};
    return n;
}
