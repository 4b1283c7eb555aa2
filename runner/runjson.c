#include "runjson.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "storefs.h"
#include "storekey.h"

#define CHANDY_VERSION "0.1.0"

/* Rounds to n decimals so that files stay readable (and stay deterministic). */
static double round_to(double x, int n)
{
    double m = pow(10, n);
    return round(x * m) / m;
}

static double ms(int64_t ns)
{
    return round_to((double)ns / 1e6, 3);
}

static double secs(int64_t ns)
{
    return round_to((double)ns / 1e9, 6);
}

static cJSON *latency_obj(const ck_hist *h)
{
    cJSON *o = cJSON_CreateObject();
    if (!h || h->n == 0) {
        cJSON_AddNullToObject(o, "p50");
        cJSON_AddNullToObject(o, "p99");
        cJSON_AddNullToObject(o, "p999");
        cJSON_AddNullToObject(o, "max");
        return o;
    }
    cJSON_AddNumberToObject(o, "p50", ms(ck_hist_quantile(h, 0.50)));
    cJSON_AddNumberToObject(o, "p99", ms(ck_hist_quantile(h, 0.99)));
    cJSON_AddNumberToObject(o, "p999", ms(ck_hist_quantile(h, 0.999)));
    cJSON_AddNumberToObject(o, "max", ms(h->max));
    return o;
}

static cJSON *config_obj(const ck_config *c)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < CK_CFG_COUNT; i++) {
        const ck_cfg_def *d = ck_config_def((ck_cfg_id)i);
        char buf[64];
        if (d->type == CK_CFG_BOOL) {
            cJSON_AddBoolToObject(o, d->key, c->v[i] != 0);
        } else if (d->type == CK_CFG_INT) {
            cJSON_AddNumberToObject(o, d->key, (double)c->v[i]);
        } else if (d->type == CK_CFG_DECIMAL) {
            cJSON_AddNumberToObject(o, d->key, (double)c->v[i] / 1000.0);
        } else {
            ck_config_format((ck_cfg_id)i, c->v[i], buf, sizeof(buf));
            cJSON_AddStringToObject(o, d->key, buf);
        }
    }
    return o;
}

static void add_time(cJSON *o, const char *k, ck_time t);

static const char *cp_kind(uint32_t flags)
{
    if (flags & CK_CP_FLAG_STOP)
        return "stop-with-savepoint";
    if (flags & CK_CP_FLAG_FINAL)
        return "final";
    return flags & CK_CP_FLAG_SAVEPOINT ? "savepoint" : "checkpoint";
}

/* Where checkpoint id's files are on disk: <out>/store/<dir>. */
static void cp_path(const ck_run *r, const ck_cp_record *c, char *buf, size_t len)
{
    char dir[200];
    /* the coordinator took only a job id that makes keys */
    CK_IGNORE(ck_sk_dir(dir, sizeof(dir), r->res.jm.cc.job_id, c->id,
                        !!(c->flags & CK_CP_FLAG_SAVEPOINT)));
    size_t dl = strlen(dir);
    if (dl && dir[dl - 1] == '/')
        dir[dl - 1] = 0;
    snprintf(buf, len, "%s/store/%s", r->outdir, dir);
}

/* The job's state as run.json reports it: the job manager's, or why the
 * backend stopped the run before the job finished or failed. */
static const char *job_state(const ck_run *r)
{
    return r->res.unfinished ? r->res.unfinished : ck_job_state_name(r->res.jm.state);
}

/* nregions: the job's pipelined regions (ck_graph_regions), or < 0 when
 * they could not be computed. */
/* The graph the job ended on: the generation of its last rescale that
 * deployed (graph.h), or the job's own. */
static const ck_graph *run_graph(const ck_run *r)
{
    return r->res.jm_ready && r->res.jm.g ? r->res.jm.g : r->job.env.g;
}

static cJSON *job_obj(const ck_run *r, int nregions)
{
    const ck_graph *g = run_graph(r);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "state", job_state(r));
    if (r->res.jm.failure[0])
        cJSON_AddStringToObject(o, "failure", r->res.jm.failure);
    else
        cJSON_AddNullToObject(o, "failure");
    if (r->res.jm.state == CK_JOB_FAILED)
        cJSON_AddStringToObject(o, "failed_because", ck_job_failure_name(r->res.jm.failed_because));
    else
        cJSON_AddNullToObject(o, "failed_because");
    cJSON_AddNumberToObject(o, "time_limit_s", round_to(r->res.time_limit_s, 3));
    const ck_cp_record *sp = r->res.jm.stopped_with ? ck_cc_find(&r->res.jm.cc, r->res.jm.stopped_with) : NULL;
    if (sp) {
        char path[800];
        cp_path(r, sp, path, sizeof(path));
        cJSON_AddStringToObject(o, "stopped_with_savepoint", path);
    } else {
        cJSON_AddNullToObject(o, "stopped_with_savepoint");
    }
    if (r->job.env.start.id) {
        char mode[16];
        ck_config_format(CK_CFG_CLAIM_MODE, ck_cfg(r->job.env.cfg, CK_CFG_CLAIM_MODE), mode,
                         sizeof(mode));
        cJSON_AddStringToObject(o, "started_from", r->start_path);
        cJSON_AddStringToObject(o, "claim_mode", mode);
    } else {
        cJSON_AddNullToObject(o, "started_from");
        cJSON_AddNullToObject(o, "claim_mode");
    }
    char desc[1024];
    ck_graph_describe(g, desc, sizeof(desc));
    cJSON_AddStringToObject(o, "graph", desc);
    cJSON_AddNumberToObject(o, "subtasks", g->nsubtasks);
    cJSON_AddNumberToObject(o, "taskmanagers", r->job.ntm);
    cJSON_AddNumberToObject(o, "slots_per_taskmanager", g->slots_per_host);
    /* Flink's pipelined regions: what region failover would restart. */
    if (nregions > 0)
        cJSON_AddNumberToObject(o, "pipelined_regions", nregions);
    cJSON *vs = cJSON_AddArrayToObject(o, "vertices");
    for (int i = 0; i < g->nv; i++) {
        const ck_vertex *v = &g->v[i];
        cJSON *jv = cJSON_CreateObject();
        cJSON_AddStringToObject(jv, "name", v->name);
        cJSON_AddNumberToObject(jv, "parallelism", v->parallelism);
        cJSON *ops = cJSON_AddArrayToObject(jv, "operators");
        for (int k = 0; k < v->nops; k++) {
            const ck_op_spec *s = &g->spec.ops[v->ops[k]];
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddStringToObject(jo, "name", s->name);
            cJSON_AddStringToObject(jo, "type", ck_op_kind_name(s->kind));
            if (ck_op_keyed(s->kind))
                cJSON_AddNumberToObject(jo, "max_parallelism", s->max_parallelism);
            cJSON_AddItemToArray(ops, jo);
        }
        if (v->in_edge >= 0)
            cJSON_AddStringToObject(jv, "input", ck_ship_name(g->e[v->in_edge].ship));
        /* Flink's busy / backpressured / idle time of the vertex: its
         * subtasks' times added up, as fractions of their lives. */
        double busy = 0, bp = 0, idle = 0;
        for (int s = 0; r->res.jm_ready && s < v->parallelism; s++) {
            const ck_task_stats *t = &r->res.jm.tasks[v->base + (uint32_t)s].task;
            busy += (double)t->busy_ns;
            bp += (double)t->backpressured_ns;
            idle += (double)t->idle_ns;
        }
        double life = busy + bp + idle;
        cJSON_AddNumberToObject(jv, "busy_ratio", life > 0 ? round_to(busy / life, 4) : 0);
        cJSON_AddNumberToObject(jv, "backpressured_ratio", life > 0 ? round_to(bp / life, 4) : 0);
        cJSON_AddNumberToObject(jv, "idle_ratio", life > 0 ? round_to(idle / life, 4) : 0);
        cJSON_AddItemToArray(vs, jv);
    }
    return o;
}

static cJSON *workload_obj(const ck_run *r)
{
    const ck_workload_spec *s = &r->wl.spec;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "topic", s->topic);
    cJSON_AddNumberToObject(o, "records", (double)r->wl.total);
    cJSON_AddNumberToObject(o, "partitions", s->partitions);
    cJSON_AddNumberToObject(o, "keys", (double)s->keys);
    cJSON_AddStringToObject(o, "distribution", s->dist == CK_KEYS_ZIPF ? "zipf" : "uniform");
    cJSON_AddNumberToObject(o, "record_bytes", s->record_bytes);
    cJSON_AddNumberToObject(o, "duration_s", secs(s->duration));
    cJSON_AddStringToObject(o, "mode", s->backlog ? "backlog" : "live");
    if (s->npart_ends) {
        cJSON *ends = cJSON_AddArrayToObject(o, "partition_durations_s");
        for (int i = 0; i < s->npart_ends; i++)
            cJSON_AddItemToArray(ends, cJSON_CreateNumber(secs(s->part_end[i])));
    } else {
        cJSON_AddNullToObject(o, "partition_durations_s");
    }
    return o;
}

/* The savepoints taken, with where they are (to start another run from). */
static cJSON *savepoints_arr(const ck_run *r)
{
    const ck_cc *cc = &r->res.jm.cc;
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < cc->ncps; i++) {
        const ck_cp_record *c = &cc->cps[i];
        if (!(c->flags & CK_CP_FLAG_SAVEPOINT))
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", (double)c->id);
        cJSON_AddBoolToObject(o, "stop", (c->flags & CK_CP_FLAG_STOP) != 0);
        cJSON_AddStringToObject(o, "status", ck_cp_status_name(c->status));
        cJSON_AddNumberToObject(o, "trigger_s", secs(c->trigger));
        add_time(o, "complete_s", c->status == CK_CP_PENDING ? CK_TIME_NEVER : c->complete);
        cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
        char path[800];
        cp_path(r, c, path, sizeof(path));
        if (c->status == CK_CP_COMPLETED)
            cJSON_AddStringToObject(o, "path", path);
        else
            cJSON_AddNullToObject(o, "path");
        if (c->reason[0])
            cJSON_AddStringToObject(o, "reason", c->reason);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* The files in the store a subtask's snapshot wrote itself: its handles
 * not reused nor inline, a merged file once however many segments it
 * holds. */
static uint32_t files_written(const ck_handles *hs)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hs->n; i++) {
        const ck_handle *h = &hs->v[i];
        int again = (h->flags & CK_HANDLE_REUSED) || !ck_handle_stored(h);
        for (uint32_t k = 0; k < i && !again; k++)
            again = !(hs->v[k].flags & CK_HANDLE_REUSED) && !strcmp(hs->v[k].key, h->key);
        n += !again;
    }
    return n;
}

static cJSON *checkpoints_arr(const ck_run *r)
{
    const ck_cc *cc = &r->res.jm.cc;
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < cc->ncps; i++) {
        const ck_cp_record *c = &cc->cps[i];
        const ck_graph *g = c->g; /* the generation that took it */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", (double)c->id);
        cJSON_AddStringToObject(o, "kind", cp_kind(c->flags));
        cJSON_AddStringToObject(o, "status", ck_cp_status_name(c->status));
        cJSON_AddNumberToObject(o, "trigger_s", secs(c->trigger));
        if (c->status == CK_CP_PENDING) {
            cJSON_AddNullToObject(o, "complete_s");
            cJSON_AddNullToObject(o, "duration_s");
        } else {
            cJSON_AddNumberToObject(o, "complete_s", secs(c->complete));
            cJSON_AddNumberToObject(o, "duration_s", secs(c->complete - c->trigger));
        }
        int64_t amax = 0, smax = 0, asmax = 0, upmax = 0;
        uint64_t files = 0, inl = 0, real = 0, real_full = 0;
        cJSON *align = cJSON_CreateArray(), *up = cJSON_CreateArray();
        for (uint32_t s = 0; s < g->nsubtasks; s++) {
            const ck_cp_task *t = &c->tasks[s];
            files += t->acked ? files_written(&t->handles) : 0;
            inl += ck_handles_bytes_inline(&t->handles);
            real += ck_handles_bytes_new(&t->handles);
            real_full += ck_handles_bytes(&t->handles);
            if (!t->acked) {
                cJSON_AddItemToArray(align, cJSON_CreateNull());
                cJSON_AddItemToArray(up, cJSON_CreateNull());
                continue;
            }
            cJSON_AddItemToArray(align, cJSON_CreateNumber(secs(t->align_ns)));
            cJSON_AddItemToArray(up, cJSON_CreateNumber(secs(t->upload_ns)));
            amax = CK_MAX(amax, t->align_ns);
            smax = CK_MAX(smax, t->sync_ns);
            asmax = CK_MAX(asmax, t->async_ns);
            upmax = CK_MAX(upmax, t->upload_ns);
        }
        cJSON_AddNumberToObject(o, "alignment_max_s", secs(amax));
        cJSON_AddItemToObject(o, "alignment_s", align);
        cJSON_AddNumberToObject(o, "sync_s", secs(smax));
        cJSON_AddNumberToObject(o, "async_s", secs(asmax));
        cJSON_AddNumberToObject(o, "upload_max_s", secs(upmax));
        cJSON_AddItemToObject(o, "upload_s", up);
        cJSON_AddNumberToObject(o, "bytes", (double)c->bytes_new);
        cJSON_AddNumberToObject(o, "bytes_full", (double)c->bytes);
        cJSON_AddNumberToObject(o, "bytes_incremental", (double)c->bytes_new);
        cJSON_AddNumberToObject(o, "bytes_changelog", (double)c->bytes_changelog);
        cJSON_AddNumberToObject(o, "files", (double)files);
        cJSON_AddNumberToObject(o, "bytes_inline", (double)inl);
        /* what the subtasks' files really hold: below bytes when state is
         * modelled heavier than it is kept (value_size) */
        cJSON_AddNumberToObject(o, "real_bytes", (double)real);
        cJSON_AddNumberToObject(o, "real_bytes_full", (double)real_full);
        cJSON_AddBoolToObject(o, "unaligned", c->unaligned);
        cJSON_AddBoolToObject(o, "forced_full", (c->flags & CK_CP_FLAG_FULL) != 0);
        cJSON_AddNumberToObject(o, "persisted_inflight_bytes", (double)c->inflight);
        cJSON_AddNumberToObject(o, "acknowledged", c->nacks);
        uint32_t fin = 0;
        for (uint32_t s = 0; c->tasks && s < g->nsubtasks; s++)
            fin += c->tasks[s].finished != 0;
        cJSON_AddNumberToObject(o, "finished_subtasks", fin);
        if (c->reason[0])
            cJSON_AddStringToObject(o, "reason", c->reason);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static void add_time(cJSON *o, const char *k, ck_time t)
{
    if (t == CK_TIME_NEVER)
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, secs(t));
}

/* The fault behind a failure detected at `detected` because task manager
 * `host` was lost: the latest fault at or before it that involves that
 * host and is not behind an earlier failure. Failures of no lost host
 * (a checkpoint failure, a task's own error) have no fault: their failure
 * time is their detection time. */
static ck_time failure_time(const ck_run *r, ck_time detected, int host, uint8_t *claimed)
{
    int best = -1;
    for (int i = 0; host >= 0 && i < r->res.nfaults; i++) {
        const ck_fault_run *f = &r->res.faults[i];
        if (f->applied && !claimed[i] && f->applied_at <= detected &&
            ck_fault_involves(f->spec, host) &&
            (best < 0 || f->applied_at >= r->res.faults[best].applied_at))
            best = i;
    }
    if (best < 0)
        return detected;
    claimed[best] = 1;
    return r->res.faults[best].applied_at;
}

/* The restores that failed on their checkpoint, and where the job went
 * back to: each with the event of the timeline that explains it, if one
 * does (ck_run_fallback_cause). */
/* The job's graph of generation gen (graph.h): a subtask's global index
 * means a vertex and subtask in it. */
static const ck_graph *graph_of(const ck_run *r, int gen)
{
    return r->gens && gen >= 0 && gen < r->ngens ? &r->gens[gen] : r->job.env.g;
}

static cJSON *fallbacks_arr(const ck_run *r)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; r->res.jm_ready && i < r->res.jm.nfallbacks; i++) {
        const ck_fallback *fb = &r->res.jm.fallbacks[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "at_s", secs(fb->at));
        cJSON_AddNumberToObject(o, "from_checkpoint", (double)fb->from);
        if (fb->to)
            cJSON_AddNumberToObject(o, "to_checkpoint", (double)fb->to);
        else
            cJSON_AddNullToObject(o, "to_checkpoint");
        int v, sub;
        const ck_graph *g = graph_of(r, fb->gen);
        ck_graph_locate(g, fb->subtask, &v, &sub);
        cJSON_AddStringToObject(o, "vertex", g->v[v].name);
        cJSON_AddNumberToObject(o, "subtask", sub);
        cJSON_AddStringToObject(o, "reason", ck_fail_name(fb->code));
        if (fb->key[0])
            cJSON_AddStringToObject(o, "file", fb->key);
        else
            cJSON_AddNullToObject(o, "file");
        cJSON_AddStringToObject(o, "error", fb->why);
        int k = ck_run_fallback_cause(r, i);
        if (k >= 0)
            cJSON_AddNumberToObject(o, "fault", k);
        else
            cJSON_AddNullToObject(o, "fault");
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *recoveries_arr(const ck_run *r)
{
    cJSON *a = cJSON_CreateArray();
    uint8_t claimed[CK_MAX_FAULTS] = {0};
    for (size_t i = 0; i < r->res.jm.nrecoveries; i++) {
        const ck_recovery *v = &r->res.jm.recoveries[i];
        cJSON *o = cJSON_CreateObject();
        ck_time failure = v->failed != CK_TIME_NEVER ? v->failed
                                                     : failure_time(r, v->detected, v->host, claimed);
        add_time(o, "failure_s", failure);
        add_time(o, "detected_s", v->detected);
        add_time(o, "detection_s", failure == CK_TIME_NEVER || v->detected == CK_TIME_NEVER
                                       ? CK_TIME_NEVER
                                       : v->detected - failure);
        add_time(o, "restarted_s", v->restarted);
        add_time(o, "restored_s", v->restored);
        add_time(o, "first_output_s", v->first_output);
        add_time(o, "caught_up_s", v->caught_up);
        if (v->caught_up == CK_TIME_NEVER)
            cJSON_AddNullToObject(o, "recovery_s");
        else
            cJSON_AddNumberToObject(o, "recovery_s", secs(v->caught_up - failure));
        cJSON_AddNumberToObject(o, "attempt", v->attempt);
        if (v->checkpoint)
            cJSON_AddNumberToObject(o, "checkpoint", (double)v->checkpoint);
        else
            cJSON_AddNullToObject(o, "checkpoint");
        cJSON_AddNumberToObject(o, "lag_before_s", secs(v->lag_before));
        cJSON *rst = cJSON_AddObjectToObject(o, "restore");
        if (v->restored == CK_TIME_NEVER) {
            cJSON_AddNullToObject(rst, "download_s");
            cJSON_AddNullToObject(rst, "replay_s");
            cJSON_AddNullToObject(rst, "channel_state_s");
        } else {
            cJSON_AddNumberToObject(rst, "download_s", secs(v->restore_download));
            cJSON_AddNumberToObject(rst, "replay_s", secs(v->restore_load));
            cJSON_AddNumberToObject(rst, "channel_state_s", secs(v->restore_channels));
        }
        cJSON_AddNumberToObject(rst, "bytes", (double)v->restore_bytes);
        cJSON_AddNumberToObject(rst, "records_replayed", (double)v->restore_records);
        cJSON_AddStringToObject(o, "cause", v->cause);
        cJSON *rs = cJSON_AddArrayToObject(o, "restarted_subtasks");
        for (uint32_t g = 0; v->subtasks && g < v->nsubtasks; g++)
            if (v->subtasks[g])
                cJSON_AddItemToArray(rs, cJSON_CreateNumber(g));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Operator name to parallelism, for the operators of the job. */
static cJSON *par_obj(const ck_graph *g, const uint16_t *par)
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < g->spec.nops && k < CK_FAULT_MAX_OPS; k++)
        cJSON_AddNumberToObject(o, g->spec.ops[k].name, par[k]);
    return o;
}

/* The rescales, as the job manager measured them, each with the
 * parallelism before and after it: the job's to start with, then each
 * rescale's that deployed (one refused, failed or interrupted before its
 * deployment leaves it as it was). */
static cJSON *rescales_arr(const ck_run *r)
{
    cJSON *a = cJSON_CreateArray();
    const ck_graph *g = r->job.env.g;
    uint16_t cur[CK_FAULT_MAX_OPS] = {0};
    for (int k = 0; k < g->spec.nops && k < CK_FAULT_MAX_OPS; k++)
        cur[k] = (uint16_t)g->spec.ops[k].parallelism;
    for (size_t i = 0; r->res.jm_ready && i < r->res.jm.nrescales; i++) {
        const ck_rescale *v = &r->res.jm.rescales[i];
        const ck_fault *f = NULL;
        int event = -1;
        for (int k = 0; k < r->res.nfaults && !f; k++)
            if (r->res.faults[k].spec->kind == CK_FAULT_RESCALE &&
                r->res.faults[k].spec->rescale == (int)v->number)
                f = r->res.faults[k].spec, event = k;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "event", event);
        cJSON_AddStringToObject(o, "via", ck_rescale_via_names[v->via ? 1 : 0]);
        cJSON_AddStringToObject(o, "outcome", ck_rescale_outcome_name(v->outcome));
        if (v->why[0])
            cJSON_AddStringToObject(o, "why", v->why);
        else
            cJSON_AddNullToObject(o, "why");
        cJSON_AddItemToObject(o, "parallelism_before", par_obj(g, cur));
        /* what it deployed: its generation of the graph */
        const ck_graph *ng = ck_env_gen(&r->job.env, v->gen);
        if (f && v->deployed != CK_TIME_NEVER && ng)
            for (int k = 0; k < ng->spec.nops && k < CK_FAULT_MAX_OPS; k++)
                cur[k] = (uint16_t)ng->spec.ops[k].parallelism;
        cJSON_AddItemToObject(o, "parallelism_after", par_obj(g, cur));
        add_time(o, "trigger_s", v->trigger);
        add_time(o, "snapshot_s", v->snapshot);
        add_time(o, "stopped_s", v->stopped);
        add_time(o, "deployed_s", v->deployed);
        add_time(o, "restored_s", v->restored);
        add_time(o, "first_output_s", v->first_output);
        add_time(o, "caught_up_s", v->caught_up);
        add_time(o, "rescale_s",
                 v->restored == CK_TIME_NEVER ? CK_TIME_NEVER : v->restored - v->trigger);
        if (v->via == CK_RESCALE_VIA_CHECKPOINT && v->stopped != CK_TIME_NEVER)
            cJSON_AddBoolToObject(o, "waited_for_checkpoint", v->waited);
        else
            cJSON_AddNullToObject(o, "waited_for_checkpoint");
        if (v->checkpoint)
            cJSON_AddNumberToObject(o, "checkpoint", (double)v->checkpoint);
        else
            cJSON_AddNullToObject(o, "checkpoint");
        if (v->attempt)
            cJSON_AddNumberToObject(o, "attempt", v->attempt);
        else
            cJSON_AddNullToObject(o, "attempt");
        /* where the generation it deployed took over the input */
        if (i < r->ncuts && r->cuts[i]) {
            cJSON *cut = cJSON_AddArrayToObject(o, "cut");
            for (int p = 0; p < r->wl.spec.partitions; p++)
                cJSON_AddItemToArray(cut, cJSON_CreateNumber((double)r->cuts[i][p]));
        } else {
            cJSON_AddNullToObject(o, "cut");
        }
        cJSON_AddNumberToObject(o, "lag_before_s", secs(v->lag_before));
        cJSON *rst = cJSON_AddObjectToObject(o, "restore");
        if (v->restored == CK_TIME_NEVER) {
            cJSON_AddNullToObject(rst, "download_s");
            cJSON_AddNullToObject(rst, "rebuild_s");
            cJSON_AddNullToObject(rst, "channel_state_s");
        } else {
            cJSON_AddNumberToObject(rst, "download_s", secs(v->restore_download));
            cJSON_AddNumberToObject(rst, "rebuild_s", secs(v->restore_load));
            cJSON_AddNumberToObject(rst, "channel_state_s", secs(v->restore_channels));
        }
        cJSON_AddNumberToObject(rst, "bytes", (double)v->restore_bytes);
        cJSON_AddNumberToObject(rst, "records_replayed", (double)v->restore_records);
        /* the keyed-state instances rebuilt for their new key groups */
        cJSON *rb = cJSON_AddObjectToObject(rst, "rebuild");
        cJSON_AddNumberToObject(rb, "instances", v->rebuild.rebuilds);
        cJSON *paths = cJSON_AddObjectToObject(rb, "paths");
        for (int p = 0; p < CK_KS_REBUILD_NPATHS; p++)
            cJSON_AddNumberToObject(paths, ck_ks_rebuild_path_name(p), v->rebuild_paths[p]);
        cJSON_AddNumberToObject(rb, "keys_iterated", (double)v->rebuild.keys_iterated);
        cJSON_AddNumberToObject(rb, "keys_written", (double)v->rebuild.keys_written);
        cJSON_AddNumberToObject(rb, "bytes_written", (double)v->rebuild.bytes_written);
        cJSON_AddNumberToObject(rb, "files_linked", v->rebuild.files_linked);
        cJSON_AddNumberToObject(rb, "files_deleted", v->rebuild.files_deleted);
        cJSON_AddNumberToObject(rb, "files_imported", v->rebuild.files_imported);
        cJSON_AddNumberToObject(rb, "ranges_deleted", v->rebuild.ranges_deleted);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *faults_arr(const ck_run *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < r->res.nfaults; i++) {
        const ck_fault_run *f = &r->res.faults[i];
        const ck_fault *sp = f->spec;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "action", ck_fault_name(sp->kind));
        if (sp->moment != CK_MOMENT_NONE) {
            cJSON *after = cJSON_AddObjectToObject(o, "after");
            cJSON_AddStringToObject(after, "moment", ck_moment_name(sp->moment));
            cJSON_AddNumberToObject(after, "nth", sp->nth);
            cJSON_AddNumberToObject(after, "delay_s", secs(sp->at));
        }
        char host[16];
        switch (sp->kind) {
        case CK_FAULT_CRASH:
        case CK_FAULT_SLOW_CPU:
        case CK_FAULT_SLOW_LINK:
        case CK_FAULT_LINK_DOWN:
            ck_host_name(sp->host, r->job.ntm, host, sizeof(host));
            cJSON_AddStringToObject(o, "host", host);
            if (sp->kind == CK_FAULT_CRASH)
                cJSON_AddStringToObject(o, "kind", ck_crash_kind_names[sp->crash]);
            break;
        case CK_FAULT_PARTITION:
            for (int side = 0; side < 2; side++) {
                cJSON *g = cJSON_CreateArray();
                for (int k = 0; k < sp->nside; k++) {
                    if (sp->side[k] != side)
                        continue;
                    ck_host_name(sp->side_host[k], r->job.ntm, host, sizeof(host));
                    cJSON_AddItemToArray(g, cJSON_CreateString(host));
                }
                cJSON_AddItemToObject(o, side ? "side_b" : "side_a", g);
            }
            break;
        case CK_FAULT_SLOW_OPERATOR:
        case CK_FAULT_SLOW_SINK:
            if (sp->op >= 0 && sp->op < r->job.env.g->spec.nops)
                cJSON_AddStringToObject(o, "operator", r->job.env.g->spec.ops[sp->op].name);
            break;
        case CK_FAULT_HOT_KEY:
            cJSON_AddNumberToObject(o, "share", sp->factor);
            break;
        case CK_FAULT_RESCALE:
            cJSON_AddStringToObject(o, "via", ck_rescale_via_names[sp->via ? 1 : 0]);
            cJSON_AddItemToObject(o, "parallelism", par_obj(r->job.env.g, sp->par));
            break;
        case CK_FAULT_STORE_ERRORS:
        case CK_FAULT_STORE_DELAY:
        case CK_FAULT_ALLOC_FAILURE:
            if (sp->host >= 0) {
                ck_host_name(sp->host, r->job.ntm, host, sizeof(host));
                cJSON_AddStringToObject(o, "host", host);
            } else {
                cJSON_AddNullToObject(o, "host"); /* every host's */
            }
            if (sp->kind == CK_FAULT_STORE_ERRORS) {
                cJSON *ops = cJSON_AddArrayToObject(o, "ops");
                for (int k = 0; ck_store_op_names[k]; k++)
                    if (sp->ops & (1 << k))
                        cJSON_AddItemToArray(ops, cJSON_CreateString(ck_store_op_names[k]));
            } else if (sp->kind == CK_FAULT_ALLOC_FAILURE) {
                cJSON_AddStringToObject(o, "point", ck_alloc_point_names[sp->point - 1]);
            } else {
                cJSON_AddNumberToObject(o, "delay_max_s", secs(sp->delay));
            }
            cJSON_AddNumberToObject(o, "probability", sp->prob);
            break;
        case CK_FAULT_SINK_DUPLICATE:
        case CK_FAULT_SINK_DROP:
        case CK_FAULT_SINK_CORRUPT:
            if (sp->op >= 0 && sp->op < r->job.env.g->spec.nops)
                cJSON_AddStringToObject(o, "sink", r->job.env.g->spec.ops[sp->op].name);
            if (f->out_done) {
                /* the transaction it hit, and how many records it touched */
                cJSON *t = cJSON_AddObjectToObject(o, "transaction");
                cJSON_AddNumberToObject(t, "subtask", f->out.sink & 0xffff);
                cJSON_AddNumberToObject(t, "id", (double)f->out.txn);
                add_time(t, "committed_s", f->out.at);
                cJSON_AddNumberToObject(t, "records", (double)f->out.records);
                if (sp->kind == CK_FAULT_SINK_CORRUPT) {
                    cJSON_AddNumberToObject(t, "value_before", (double)f->out.before);
                    cJSON_AddNumberToObject(t, "value_after", (double)f->out.after);
                }
            } else {
                cJSON_AddNullToObject(o, "transaction");
            }
            break;
        default:
            break;
        }
        if (sp->kind == CK_FAULT_SLOW_CPU || sp->kind == CK_FAULT_SLOW_LINK ||
            sp->kind == CK_FAULT_SLOW_OPERATOR || sp->kind == CK_FAULT_SLOW_SINK)
            cJSON_AddNumberToObject(o, "factor", sp->factor);
        if (sp->kind == CK_FAULT_SLOW_LINK)
            cJSON_AddNumberToObject(o, "added_latency_s", secs(sp->latency));
        add_time(o, "at_s", f->applied ? f->applied_at : CK_TIME_NEVER);
        if (sp->kind == CK_FAULT_CRASH)
            add_time(o, "restarted_s", f->ended ? f->ended_at : CK_TIME_NEVER);
        else if (ck_fault_end(sp) != CK_TIME_NEVER)
            add_time(o, "ended_s", f->ended ? f->ended_at : CK_TIME_NEVER);
        cJSON_AddBoolToObject(o, "applied", f->applied && !f->failed);
        if (sp->kind == CK_FAULT_STORE_ERRORS || sp->kind == CK_FAULT_ALLOC_FAILURE)
            cJSON_AddNumberToObject(o, "ops_failed", (double)f->hits);
        else if (sp->kind == CK_FAULT_STORE_DELAY)
            cJSON_AddNumberToObject(o, "ops_delayed", (double)f->hits);
        if (f->detail[0])
            cJSON_AddStringToObject(o, "detail", f->detail);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* The changelog backends' materializations, as the job manager heard of them. */
static cJSON *materializations_arr(const ck_run *r)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; r->res.jm_ready && i < r->res.jm.nmats; i++) {
        const ck_materialization *m = &r->res.jm.mats[i];
        int v, s;
        const ck_graph *g = graph_of(r, m->gen);
        ck_graph_locate(g, m->subtask, &v, &s);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "vertex", g->v[v].name);
        cJSON_AddNumberToObject(o, "subtask", s);
        cJSON_AddNumberToObject(o, "operator", m->op);
        cJSON_AddNumberToObject(o, "changes", (double)m->seq);
        add_time(o, "started_s", m->started);
        cJSON_AddNumberToObject(o, "duration_s", secs(m->duration));
        cJSON_AddNumberToObject(o, "bytes", (double)m->bytes);
        cJSON_AddNumberToObject(o, "state_bytes", (double)m->state_bytes);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1 when key is the key of one of hs's handles. */
static int refers(const ck_handles *hs, const char *key)
{
    for (uint32_t i = 0; i < hs->n; i++)
        if (!strcmp(hs->v[i].key, key))
            return 1;
    return 0;
}

/* The files under the job's shared/ at the end that no checkpoint the run
 * retains (nor the one it started from, still adopted) refers to: what a
 * subtask's process that was killed after its upload landed, before it
 * acknowledged, left behind (Flink leaks those too). */
static void orphans(const ck_run *r, uint64_t *files, uint64_t *bytes)
{
    const ck_cc *cc = &r->res.jm.cc;
    char root[900], prefix[200];
    snprintf(root, sizeof(root), "%s/store", r->outdir);
    ck_store_entry *e;
    size_t n;
    *files = *bytes = 0;
    if (ck_sk_shared_dir(prefix, sizeof(prefix), cc->job_id) ||
        ck_storefs_list(root, prefix, &e, &n))
        return;
    for (size_t k = 0; k < n; k++) {
        int ref = 0;
        for (size_t i = 0; i < cc->ncps && !ref; i++) {
            const ck_cp_record *c = &cc->cps[i];
            if (c->status != CK_CP_COMPLETED || c->retired || !c->tasks)
                continue;
            for (uint32_t s = 0; s < c->g->nsubtasks && !ref; s++)
                ref = refers(&c->tasks[s].handles, e[k].key);
        }
        for (uint32_t s = 0; cc->adopted && s < cc->nadopted && !ref; s++)
            ref = refers(&cc->adopted[s], e[k].key);
        if (!ref) {
            (*files)++;
            *bytes += e[k].size;
        }
    }
    ck_store_entries_free(e, n);
}

static cJSON *checkpoint_summary(const ck_run *r)
{
    const ck_cc *cc = &r->res.jm.cc;
    cJSON *o = cJSON_CreateObject();
    int counts[5] = {0};
    int64_t *dur = malloc((cc->ncps + 1) * sizeof(int64_t));
    int64_t *sz = malloc((cc->ncps + 1) * sizeof(int64_t));
    size_t nd = 0, triggered = 0;
    uint64_t bytes = 0, full = 0;
    for (size_t i = 0; i < cc->ncps; i++) {
        const ck_cp_record *c = &cc->cps[i];
        if (c->flags & CK_CP_FLAG_SAVEPOINT)
            continue; /* listed under "savepoints" */
        triggered++;
        counts[c->status]++;
        if (c->status == CK_CP_COMPLETED && dur && sz) {
            sz[nd] = (int64_t)c->bytes_new;
            dur[nd++] = c->complete - c->trigger;
            bytes = c->bytes_new;
            full = c->bytes;
        }
    }
    cJSON_AddBoolToObject(o, "enabled", cc->enabled);
    cJSON_AddStringToObject(o, "mode", ck_cfg(r->job.env.cfg, CK_CFG_CP_MODE) == CK_CP_EXACTLY_ONCE
                                           ? "EXACTLY_ONCE"
                                           : "AT_LEAST_ONCE");
    cJSON_AddNumberToObject(o, "triggered", (double)triggered);
    for (int s = 0; s < 5; s++)
        if (s != CK_CP_PENDING)
            cJSON_AddNumberToObject(o, ck_cp_status_name((ck_cp_status)s), counts[s]);
    if (nd && dur && sz) {
        qsort(dur, nd, sizeof(*dur), cmp_i64);
        qsort(sz, nd, sizeof(*sz), cmp_i64);
        /* Nearest rank, as the reports take percentiles. */
        size_t p99 = (nd * 99 + 99) / 100 - 1;
        cJSON_AddNumberToObject(o, "duration_p50_s", secs(dur[(nd + 1) / 2 - 1]));
        cJSON_AddNumberToObject(o, "duration_p99_s", secs(dur[p99]));
        cJSON_AddNumberToObject(o, "duration_max_s", secs(dur[nd - 1]));
        cJSON_AddNumberToObject(o, "bytes_p50", (double)sz[(nd + 1) / 2 - 1]);
        cJSON_AddNumberToObject(o, "bytes_p99", (double)sz[p99]);
        cJSON_AddNumberToObject(o, "last_bytes", (double)bytes);
        cJSON_AddNumberToObject(o, "last_bytes_full", (double)full);
    }
    free(dur);
    free(sz);
    uint64_t of, ob;
    orphans(r, &of, &ob);
    cJSON_AddNumberToObject(o, "orphaned_files", (double)of);
    cJSON_AddNumberToObject(o, "orphaned_bytes", (double)ob);
    return o;
}

cJSON *ck_runjson_build(const ck_run *r, const ck_verdict *v)
{
    const ck_graph *g = run_graph(r);
    const ck_metrics *job = &r->res.jm.job;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "chandy_version", CHANDY_VERSION);
    cJSON_AddStringToObject(root, "scenario", r->sc->name);
    cJSON_AddStringToObject(root, "scenario_file", r->sc->path);
    cJSON_AddNumberToObject(root, "seed", (double)r->seed);
    cJSON_AddStringToObject(root, "backend", ck_backend_name(r->backend));
    if (r->backend == CK_BACKEND_SIMGRID) {
        cJSON_AddStringToObject(root, "network_model", r->res.network_model);
        cJSON_AddStringToObject(root, "transfer_model", r->res.transfer_model);
        cJSON_AddStringToObject(root, "transfer_model_why", r->res.transfer_model_why);
    }
    double sim_s = secs(r->res.jm.end);
    cJSON_AddNumberToObject(root, "sim_time_s", sim_s);
    cJSON_AddNumberToObject(root, "wall_time_s", round_to(r->res.wall_s, 3));
    cJSON_AddNumberToObject(root, "sim_speed",
                            r->res.wall_s > 0 ? round_to(sim_s / r->res.wall_s, 2) : 0);

    /* subtasks of earlier generations the job no longer has count too */
    uint64_t in = 0, out = 0, late = r->res.jm.retired.late_dropped,
             bytes = r->res.jm.retired.bytes_out, bufs = r->res.jm.retired.buffers_out;
    for (uint32_t i = 0; i < g->nsubtasks; i++) {
        const ck_task_stats *t = &r->res.jm.tasks[i].task;
        late += t->late_dropped;
        bytes += t->bytes_out;
        bufs += t->buffers_out;
    }
    for (uint32_t s = 0; s < job->nsec; s++) {
        in += job->sec[s].in;
        out += job->sec[s].out;
    }
    cJSON_AddNumberToObject(root, "records_in", (double)in);
    cJSON_AddNumberToObject(root, "records_out", (double)out);
    cJSON_AddNumberToObject(root, "throughput_in_rps", sim_s > 0 ? round_to((double)in / sim_s, 1) : 0);
    cJSON_AddNumberToObject(root, "throughput_out_rps", sim_s > 0 ? round_to((double)out / sim_s, 1) : 0);
    ck_hist *total = calloc(1, sizeof(*total));
    if (total && ck_metrics_total_latency(job, total)) {
        free(total); /* out of memory: no latency figures */
        total = NULL;
    }
    cJSON_AddItemToObject(root, "latency_ms", latency_obj(total));
    free(total);
    cJSON_AddNumberToObject(root, "late_dropped", (double)late);

    cJSON *net = cJSON_AddObjectToObject(root, "network");
    if (r->backend == CK_BACKEND_SIMGRID) {
        /* Every message of the run; the socket backend only sees its own process's. */
        const ck_msgcount *m = &r->res.msgs;
        cJSON_AddNumberToObject(net, "messages", (double)m->messages);
        cJSON_AddNumberToObject(net, "message_bytes", (double)m->bytes);
        cJSON_AddNumberToObject(net, "data_messages", (double)m->data);
        cJSON_AddNumberToObject(net, "credit_messages", (double)m->credit);
        cJSON_AddNumberToObject(net, "control_messages", (double)(m->messages - m->data - m->credit));
        cJSON_AddNumberToObject(net, "transfers", (double)r->res.transfers);
        cJSON *mem = cJSON_AddObjectToObject(net, "memory");
        cJSON_AddNumberToObject(mem, "segment_bytes", (double)r->res.seg_bytes);
        cJSON_AddNumberToObject(mem, "segments_per_taskmanager", (double)r->res.segs_total);
        cJSON_AddNumberToObject(mem, "reserved_max", (double)r->res.segs_reserved_max);
        cJSON_AddNumberToObject(mem, "used_max", (double)r->res.segs_used_max);
    }
    cJSON_AddNumberToObject(net, "buffers", (double)bufs);
    cJSON_AddNumberToObject(net, "buffer_bytes", (double)bytes);

    cJSON *ts = cJSON_AddArrayToObject(root, "timeseries");
    for (uint32_t s = 0; s < job->nsec; s++) {
        const ck_sec *sec = &job->sec[s];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "t_s", s);
        cJSON_AddNumberToObject(o, "in_rps", (double)sec->in);
        cJSON_AddNumberToObject(o, "out_rps", (double)sec->out);
        if (sec->lat && sec->lat->n) {
            cJSON_AddNumberToObject(o, "latency_p50_ms", ms(ck_hist_quantile(sec->lat, 0.5)));
            cJSON_AddNumberToObject(o, "latency_p99_ms", ms(ck_hist_quantile(sec->lat, 0.99)));
        } else {
            cJSON_AddNullToObject(o, "latency_p50_ms");
            cJSON_AddNullToObject(o, "latency_p99_ms");
        }
        /* Flink's backpressured time in this second: over every subtask, and
         * per vertex (its subtasks' time added up). */
        double life = (double)(sec->busy_ns + sec->bp_ns + sec->idle_ns);
        if (life > 0)
            cJSON_AddNumberToObject(o, "backpressured_ratio", round_to(sec->bp_ns / life, 4));
        else
            cJSON_AddNullToObject(o, "backpressured_ratio");
        /* In flight: over the subtasks, the most each held in this second;
         * the buffer size: the mean over the subtasks debloating. */
        double inflight = 0, bsum = 0;
        int nb = 0, any = 0;
        for (uint32_t i = 0; r->res.jm_ready && i < g->nsubtasks; i++) {
            const ck_metrics *tm = &r->res.jm.tasks[i];
            if (s >= tm->nsec)
                continue;
            const ck_sec *q = &tm->sec[s];
            inflight += (double)(q->inflight_in + q->inflight_out);
            any |= q->inflight_in || q->inflight_out || q->buf_size;
            if (q->buf_size) {
                bsum += (double)q->buf_size;
                nb++;
            }
        }
        if (any)
            cJSON_AddNumberToObject(o, "inflight_bytes", inflight);
        if (nb)
            cJSON_AddNumberToObject(o, "buffer_size_bytes", round_to(bsum / nb, 0));
        cJSON *vb = cJSON_AddObjectToObject(o, "vertex_backpressured_ratio");
        for (int vi = 0; r->res.jm_ready && vi < g->nv; vi++) {
            const ck_metrics *vm = &r->res.jm.vertices[vi];
            if (s >= vm->nsec)
                continue;
            const ck_sec *vs = &vm->sec[s];
            double vl = (double)(vs->busy_ns + vs->bp_ns + vs->idle_ns);
            if (vl > 0)
                cJSON_AddNumberToObject(vb, g->v[vi].name, round_to(vs->bp_ns / vl, 4));
        }
        cJSON_AddItemToArray(ts, o);
    }

    cJSON *tasks = cJSON_AddArrayToObject(root, "tasks");
    uint32_t *region = malloc((size_t)g->nsubtasks * sizeof(*region) + 1);
    int nregions = region ? ck_graph_regions(g, region) : CK_ENOMEM;
    if (nregions < 0) {
        free(region);
        region = NULL;
    }
    for (uint32_t i = 0; i < g->nsubtasks; i++) {
        const ck_task_stats *t = &r->res.jm.tasks[i].task;
        int vtx, sub;
        ck_graph_locate(g, i, &vtx, &sub);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "vertex", g->v[vtx].name);
        cJSON_AddNumberToObject(o, "subtask", sub);
        char host[32];
        snprintf(host, sizeof(host), "tm%d", ck_graph_host(g, i));
        cJSON_AddStringToObject(o, "host", host);
        cJSON_AddNumberToObject(o, "records_in", (double)t->records_in);
        cJSON_AddNumberToObject(o, "records_out", (double)t->records_out);
        cJSON_AddNumberToObject(o, "bytes_in", (double)t->bytes_in);
        cJSON_AddNumberToObject(o, "bytes_out", (double)t->bytes_out);
        double life = (double)t->busy_ns + (double)t->backpressured_ns + (double)t->idle_ns;
        cJSON_AddNumberToObject(o, "busy_ratio", life > 0 ? round_to(t->busy_ns / life, 4) : 0);
        cJSON_AddNumberToObject(o, "backpressured_ratio",
                                life > 0 ? round_to(t->backpressured_ns / life, 4) : 0);
        cJSON_AddNumberToObject(o, "idle_ratio", life > 0 ? round_to(t->idle_ns / life, 4) : 0);
        cJSON_AddNumberToObject(o, "finished_s", secs(t->end_ns));
        if (region)
            cJSON_AddNumberToObject(o, "region", region[i]);
        /* Per second: the most in flight in its input and output queues
         * (payload bytes), and its input buffer size when debloating. */
        const ck_metrics *tm = &r->res.jm.tasks[i];
        cJSON *nets = NULL;
        for (uint32_t s = 0; s < tm->nsec; s++) {
            const ck_sec *q = &tm->sec[s];
            if (!q->inflight_in && !q->inflight_out && !q->buf_size)
                continue;
            if (!nets)
                nets = cJSON_AddArrayToObject(o, "network");
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, "t_s", s);
            cJSON_AddNumberToObject(p, "inflight_in_bytes", (double)q->inflight_in);
            cJSON_AddNumberToObject(p, "inflight_out_bytes", (double)q->inflight_out);
            if (q->buf_size)
                cJSON_AddNumberToObject(p, "buffer_size_bytes", (double)q->buf_size);
            cJSON_AddItemToArray(nets, p);
        }
        cJSON_AddItemToArray(tasks, o);
    }

    cJSON *c = cJSON_AddObjectToObject(root, "correctness");
    cJSON_AddStringToObject(c, "guarantee", ck_guarantee_name(v->guarantee));
    cJSON_AddBoolToObject(c, "partial", v->partial);
    if (r->prior_output[0])
        cJSON_AddStringToObject(c, "includes_output_of", r->prior_output);
    else
        cJSON_AddNullToObject(c, "includes_output_of");
    if (r->prior_output[0] && r->prior_cut) {
        cJSON_AddStringToObject(c, "includes_output_before", r->start_path);
        cJSON_AddNumberToObject(c, "committed_after_start", (double)r->prior_after);
    } else {
        cJSON_AddNullToObject(c, "includes_output_before");
        cJSON_AddNullToObject(c, "committed_after_start");
    }
    cJSON_AddNumberToObject(c, "expected", (double)v->expected);
    cJSON_AddNumberToObject(c, "received", (double)v->received);
    cJSON_AddNumberToObject(c, "lost", (double)v->lost);
    cJSON_AddNumberToObject(c, "duplicated", (double)v->duplicated);
    cJSON_AddNumberToObject(c, "unexpected", (double)v->unexpected);
    cJSON_AddNumberToObject(c, "wrong_totals", (double)v->wrong_totals);
    cJSON_AddBoolToObject(c, "ok", v->ok);
    if (v->first_wrong[0])
        cJSON_AddStringToObject(c, "first_wrong", v->first_wrong);
    else
        cJSON_AddNullToObject(c, "first_wrong");
    if (r->degraded[0])
        cJSON_AddStringToObject(c, "degraded", r->degraded);
    else
        cJSON_AddNullToObject(c, "degraded");
    if (r->unexplained[0])
        cJSON_AddStringToObject(c, "unexplained_fallback", r->unexplained);
    else
        cJSON_AddNullToObject(c, "unexplained_fallback");
    cJSON_AddItemToObject(c, "fallbacks", fallbacks_arr(r));
    if (r->injected.faults) {
        /* what the output faults injected, which the counts above must show */
        cJSON *inj = cJSON_AddObjectToObject(c, "injected");
        cJSON_AddNumberToObject(inj, "faults", r->injected.faults);
        cJSON_AddNumberToObject(inj, "records", (double)r->injected.records);
        cJSON_AddNumberToObject(inj, "duplicated", (double)r->injected.duplicated);
        cJSON_AddNumberToObject(inj, "lost", (double)r->injected.lost);
        cJSON_AddNumberToObject(inj, "unexpected", (double)r->injected.unexpected);
        cJSON_AddNumberToObject(inj, "wrong_totals", (double)r->injected.wrong_totals);
        cJSON_AddBoolToObject(c, "checker_ok", r->checker_ok);
    } else {
        cJSON_AddNullToObject(c, "injected");
        cJSON_AddNullToObject(c, "checker_ok");
    }
    if (r->checker_failure[0])
        cJSON_AddStringToObject(c, "checker_failure", r->checker_failure);
    else
        cJSON_AddNullToObject(c, "checker_failure");

    if (r->res.error[0])
        cJSON_AddStringToObject(root, "error", r->res.error);
    else
        cJSON_AddNullToObject(root, "error");

    cJSON_AddItemToObject(root, "faults", faults_arr(r));
    cJSON_AddItemToObject(root, "recoveries", recoveries_arr(r));
    cJSON_AddItemToObject(root, "rescales", rescales_arr(r));
    cJSON_AddItemToObject(root, "savepoints", savepoints_arr(r));
    cJSON_AddItemToObject(root, "checkpoints", checkpoints_arr(r));
    cJSON_AddItemToObject(root, "checkpoint_summary", checkpoint_summary(r));
    cJSON_AddItemToObject(root, "materializations", materializations_arr(r));
    cJSON_AddItemToObject(root, "job", job_obj(r, nregions));
    free(region);
    cJSON_AddItemToObject(root, "workload", workload_obj(r));
    cJSON_AddItemToObject(root, "config", config_obj(&r->sc->cfg));
    cJSON *warn = cJSON_CreateArray();
    for (int i = 0; i < r->sc->warnings.n; i++)
        cJSON_AddItemToArray(warn, cJSON_CreateString(r->sc->warnings.v[i]));
    cJSON_AddItemToObject(root, "warnings", warn);
    return root;
}

int ck_runjson_write(const cJSON *root, const char *path)
{
    char *text = cJSON_Print(root);
    if (!text)
        return CK_ENOMEM;
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.part", path);
    FILE *f = fopen(tmp, "w");
    int rc = CK_OK, e = 0;
    if (!f) {
        rc = CK_EIO;
        e = errno;
    } else {
        if (fputs(text, f) < 0 || fputc('\n', f) < 0) {
            rc = CK_EIO;
            e = errno;
        }
        if (fclose(f) && !rc) {
            rc = CK_EIO;
            e = errno;
        }
        if (!rc && rename(tmp, path)) {
            rc = CK_EIO;
            e = errno;
        }
        if (rc)
            unlink(tmp); /* no half-written run.json.part left behind */
    }
    free(text);
    errno = e;
    return rc;
}
