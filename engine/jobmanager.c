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

int ck_jm_init(ck_jm *jm, ck_platform *plat, const ck_graph *g)
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
    if (jm->nfinished == jm->g->nsubtasks && jm->state == CK_JOB_RUNNING) {
        jm->state = CK_JOB_FINISHED;
        jm->end = ck_now(jm->plat);
    }
    return CK_OK;
}

static int jm_on_store(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    CK_UNUSED(self);
    CK_UNUSED(token);
    CK_UNUSED(status);
    CK_UNUSED(len);
    free(data);
    return CK_OK;
}

static ck_time jm_deadline(void *self)
{
    CK_UNUSED(self);
    return CK_TIME_NEVER;
}

static int jm_on_deadline(void *self)
{
    CK_UNUSED(self);
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
    .on_store = jm_on_store,
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
