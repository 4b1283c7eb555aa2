#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

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

ck_job_env *ck_backend_envs(const ck_job_env *env)
{
    int n = env->gens && env->ngens > 0 ? env->ngens : 1;
    ck_job_env *v = malloc((size_t)n * sizeof(*v));
    for (int k = 0; v && k < n; k++) {
        v[k] = *env;
        v[k].g = ck_env_gen(env, k);
    }
    return v;
}

const ck_job_env *ck_backend_env_of(const ck_job_env *envs, int gen)
{
    int n = envs[0].gens && envs[0].ngens > 0 ? envs[0].ngens : 1;
    return &envs[gen >= 0 && gen < n ? gen : 0];
}

void ck_backend_output_faults(ck_backend_result *r, const ck_graph *g, const char *sink_dir)
{
    static const char *const did[] = {"applied transaction %llu of %s[%u] twice at %.6f s: "
                                      "%llu record%s committed again",
                                      "lost transaction %llu of %s[%u] at %.6f s: %llu record%s "
                                      "dropped",
                                      "changed a value in transaction %llu of %s[%u] at %.6f s: "
                                      "%llu record%s"};
    for (int i = 0; i < r->nfaults; i++) {
        ck_fault_run *f = &r->faults[i];
        if (!ck_fault_is_output(f->spec->kind) || !f->applied || f->failed)
            continue;
        int rc = ck_sinkfs_fault_read(sink_dir, i, &f->out);
        const char *name = f->spec->op >= 0 && f->spec->op < g->spec.nops
                               ? g->spec.ops[f->spec->op].name
                               : "?";
        if (rc) {
            f->failed = 1;
            if (rc == CK_ENOTFOUND)
                snprintf(f->detail, sizeof(f->detail),
                         "%s committed no transaction with records after it", name);
            else
                snprintf(f->detail, sizeof(f->detail), "%s: what it did cannot be read: %s",
                         sink_dir, ck_strerror(rc));
            continue;
        }
        f->out_done = 1;
        int k = f->out.kind >= 0 && f->out.kind <= CK_SINKFS_CORRUPT ? f->out.kind : 0;
        snprintf(f->detail, sizeof(f->detail), did[k], (unsigned long long)f->out.txn, name,
                 f->out.sink & 0xffff, (double)f->out.at / 1e9,
                 (unsigned long long)f->out.records, f->out.records == 1 ? "" : "s");
        if (k == CK_SINKFS_CORRUPT) {
            size_t l = strlen(f->detail);
            snprintf(f->detail + l, sizeof(f->detail) - l, ", value %lld -> %lld",
                     (long long)f->out.before, (long long)f->out.after);
        }
    }
}
