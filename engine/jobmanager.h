/*
 * jobmanager.h - the job manager: it tracks every subtask of the job,
 * collects their metrics when they finish and decides when the job is
 * over.
 *
 * State machine of the job:
 *
 *   RUNNING --TASK_FINISHED from every subtask--> FINISHED
 *   RUNNING --TASK_FAILED from any subtask, a bad message, or more failed
 *             checkpoints than tolerated--> FAILED
 *
 * Invariant: `nfinished` counts distinct subtasks; a second report from the
 * same subtask is a protocol violation.
 */
#ifndef CK_JOBMANAGER_H
#define CK_JOBMANAGER_H

#include "coordinator.h"
#include "graph.h"
#include "metrics.h"
#include "node.h"
#include "platform.h"

typedef enum ck_job_state {
    CK_JOB_RUNNING,
    CK_JOB_FINISHED,
    CK_JOB_FAILED,
} ck_job_state;

typedef struct ck_jm {
    ck_platform *plat;
    const ck_graph *g;
    ck_job_state state;
    uint32_t nfinished;
    uint8_t *done;       /* per subtask */
    ck_metrics *tasks;   /* per subtask, as reported */
    ck_metrics job;      /* merged series and histograms */
    ck_time end;         /* when the job finished or failed */
    char failure[256];
    ck_cc cc;            /* the checkpoint coordinator */
} ck_jm;

/* Returns 0 or CK_ENOMEM. */
int ck_jm_init(ck_jm *jm, ck_platform *plat, const ck_graph *g, const ck_config *cfg,
               const char *job_id);
void ck_jm_free(ck_jm *jm);

ck_node ck_jm_node(ck_jm *jm);

const char *ck_job_state_name(ck_job_state s);

#endif
