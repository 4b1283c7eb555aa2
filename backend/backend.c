#include "backend.h"

#include <string.h>

void ck_backend_result_init(ck_backend_result *r, const ck_backend_job *job)
{
    memset(r, 0, sizeof(*r));
    ck_sinkout_init(&r->out);
    r->nfaults = job->nfaults < CK_MAX_FAULTS ? job->nfaults : CK_MAX_FAULTS;
    for (int i = 0; i < r->nfaults; i++)
        r->faults[i].spec = &job->faults[i];
}

void ck_backend_result_free(ck_backend_result *r)
{
    if (r->jm_ready)
        ck_jm_free(&r->jm);
    r->jm_ready = 0;
    ck_sinkout_free(&r->out);
}
