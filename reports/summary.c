#include "summary.h"

#include <stdlib.h>
#include <string.h>

#include "runfile.h"

/* Strings from the run are printed through txt: a control character
 * (an escape sequence a terminal would act on, a line break that would
 * forge a line) shows as '?'. Each call returns its own copy (up to 8
 * live at once, freed with txt_free); NULL shows as "?". */
typedef struct txts {
    char *v[8];
    int n;
} txts;

static const char *txt(txts *t, const char *s)
{
    if (!s)
        return "?";
    if (t->n == 8)
        return "?";
    char *c = strdup(s);
    if (!c)
        return "?";
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return t->v[t->n++] = c;
}

static void txt_free(txts *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->v[i]);
    t->n = 0;
}

static int is_savepoint(const char *kind)
{
    return kind && (!strcmp(kind, "savepoint") || !strcmp(kind, "stop-with-savepoint"));
}

static const cJSON *savepoint_entry(const cJSON *run, double id)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, ck_rf_arr(run, "savepoints")) if (ck_rf_num(e, "id", -1) == id) return e;
    return NULL;
}

static void checkpoints(FILE *f, const cJSON *run)
{
    const cJSON *cps = ck_rf_arr(run, "checkpoints");
    if (!cJSON_GetArraySize(cps))
        return;
    /* The totals are run.json's own (checkpoint_summary: savepoints apart). */
    const cJSON *sum = ck_rf_get(run, "checkpoint_summary");
    fprintf(f, "  checkpts   %.0f completed, %.0f failed, longest %.1f ms, last %.0f bytes\n",
            ck_rf_num(sum, "completed", 0),
            ck_rf_num(sum, "expired", 0) + ck_rf_num(sum, "declined", 0),
            ck_rf_num(sum, "duration_max_s", 0) * 1e3, ck_rf_num(sum, "last_bytes", 0));
    const cJSON *c;
    cJSON_ArrayForEach(c, cps)
    {
        const char *kind = ck_rf_str(c, "kind"), *status = ck_rf_str(c, "status");
        if (!is_savepoint(kind) || !status || strcmp(status, "completed"))
            continue;
        double id = ck_rf_num(c, "id", 0);
        txts t = {0};
        fprintf(f, "  savepoint  %.0f%s at %.3f s: %s\n", id,
                !strcmp(kind, "stop-with-savepoint") ? " (stop)" : "",
                ck_rf_num(c, "trigger_s", 0), txt(&t, ck_rf_str(savepoint_entry(run, id), "path")));
        txt_free(&t);
    }
}

static void recoveries(FILE *f, const cJSON *run)
{
    const cJSON *rv;
    cJSON_ArrayForEach(rv, ck_rf_arr(run, "recoveries"))
    {
        double failure = ck_rf_num(rv, "failure_s", 0);
        fprintf(f, "  recovery   failure at %.3f s, detected +%.0f ms", failure,
                (ck_rf_num(rv, "detected_s", failure) - failure) * 1e3);
        if (ck_rf_has_num(rv, "restored_s"))
            fprintf(f, ", restored +%.0f ms", (ck_rf_num(rv, "restored_s", 0) - failure) * 1e3);
        if (ck_rf_has_num(rv, "caught_up_s"))
            fprintf(f, ", caught up +%.0f ms", (ck_rf_num(rv, "caught_up_s", 0) - failure) * 1e3);
        if (ck_rf_has_num(rv, "checkpoint"))
            fprintf(f, " (checkpoint %.0f)", ck_rf_num(rv, "checkpoint", 0));
        fprintf(f, "\n");
    }
}

int ck_summary_rescaled(const cJSON *before, const cJSON *after, int max, char *buf, size_t len)
{
    const cJSON *op;
    int changed = 0;
    size_t at = 0;
    if (len)
        buf[0] = 0;
    const cJSON *ops = cJSON_IsObject(after) ? after : NULL;
    cJSON_ArrayForEach(op, ops)
    {
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(before, op->string);
        if (!cJSON_IsNumber(op) || !cJSON_IsNumber(was) || was->valuedouble == op->valuedouble)
            continue;
        if (changed++ < max && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s %.0f->%.0f", at ? ", " : "",
                                   op->string, was->valuedouble, op->valuedouble);
    }
    if (changed > max && at < len)
        snprintf(buf + at, len - at, ", %d more", changed - max);
    return changed;
}

/* One line per rescale: when, how, and its phases from its trigger. */
static void rescales(FILE *f, const cJSON *run)
{
    const cJSON *rv;
    txts t = {0};
    cJSON_ArrayForEach(rv, ck_rf_arr(run, "rescales"))
    {
        double at = ck_rf_num(rv, "trigger_s", 0);
        const char *outcome = ck_rf_str(rv, "outcome");
        fprintf(f, "  rescale    via %s at %.3f s", txt(&t, ck_rf_str(rv, "via")), at);
        /* the operators it changes: "(count 2->4, counts 2->4)" */
        char ops[600];
        if (ck_summary_rescaled(ck_rf_get(rv, "parallelism_before"),
                                ck_rf_get(rv, "parallelism_after"), 4, ops, sizeof(ops)))
            fprintf(f, " (%s)", txt(&t, ops));
        if (outcome && strcmp(outcome, "done") && strcmp(outcome, "under_way")) {
            fprintf(f, ": %s (%s)\n", txt(&t, outcome), txt(&t, ck_rf_str(rv, "why")));
            txt_free(&t);
            continue;
        }
        if (ck_rf_has_num(rv, "snapshot_s"))
            fprintf(f, ", snapshot +%.0f ms", (ck_rf_num(rv, "snapshot_s", 0) - at) * 1e3);
        if (ck_rf_has_num(rv, "restored_s"))
            fprintf(f, ", restored +%.0f ms (download %.0f ms, rebuild %.0f ms)",
                    (ck_rf_num(rv, "restored_s", 0) - at) * 1e3,
                    ck_rf_num(rv, "restore.download_s", 0) * 1e3,
                    ck_rf_num(rv, "restore.rebuild_s", 0) * 1e3);
        else
            fprintf(f, ", not restored");
        if (ck_rf_has_num(rv, "caught_up_s"))
            fprintf(f, ", caught up +%.0f ms", (ck_rf_num(rv, "caught_up_s", 0) - at) * 1e3);
        fprintf(f, "\n");
        txt_free(&t); /* a line's strings are printed: the next line has 8 of its own */
    }
    txt_free(&t);
}

void ck_summary_print(FILE *f, const cJSON *run, const char *runjson_path)
{
    txts t = {0};
    const char *backend = ck_rf_str(run, "backend");
    const char *state = ck_rf_str(run, "job.state"), *failure = ck_rf_str(run, "job.failure");
    const char *graph = ck_rf_str(run, "job.graph");
    int nv = cJSON_GetArraySize(ck_rf_arr(run, "job.vertices"));
    int subtasks = (int)ck_rf_num(run, "job.subtasks", 0);
    int tms = (int)ck_rf_num(run, "job.taskmanagers", 0);
    fprintf(f, "chandy run %s (%s, seed %.0f)\n", txt(&t, ck_rf_str(run, "scenario")),
            txt(&t, backend), ck_rf_num(run, "seed", 0));
    fprintf(f, "  job        %s\n", txt(&t, graph));
    fprintf(f, "             %d vert%s, %d subtask%s on %d task manager%s: %s\n", nv,
            nv == 1 ? "ex" : "ices", subtasks, subtasks == 1 ? "" : "s", tms,
            tms == 1 ? "" : "s", txt(&t, state));
    if (failure)
        fprintf(f, "  failure    %s\n", txt(&t, failure));
    txt_free(&t);
    double sim_s = ck_rf_num(run, "sim_time_s", 0), wall = ck_rf_num(run, "wall_time_s", 0);
    if (backend && !strcmp(backend, "simgrid"))
        fprintf(f, "  time       %.3f s simulated in %.2f s wall (%.1fx)\n", sim_s, wall,
                wall > 0 ? sim_s / wall : 0);
    else
        fprintf(f, "  time       %.3f s\n", sim_s);
    double in = ck_rf_num(run, "records_in", 0), late = ck_rf_num(run, "late_dropped", 0);
    fprintf(f, "  records    %.0f in, %.0f out (%.0f/s in)", in, ck_rf_num(run, "records_out", 0),
            sim_s > 0 ? in / sim_s : 0);
    if (late > 0)
        fprintf(f, ", %.0f late and dropped", late);
    fprintf(f, "\n");
    if (ck_rf_has_num(run, "latency_ms.p50"))
        fprintf(f, "  latency    p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                ck_rf_num(run, "latency_ms.p50", 0), ck_rf_num(run, "latency_ms.p99", 0),
                ck_rf_num(run, "latency_ms.max", 0));
    /* The most backpressured vertex, if any: where a user looks first. */
    double worst = 0;
    const char *worst_v = NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, ck_rf_arr(run, "job.vertices"))
    {
        double bp = ck_rf_num(v, "backpressured_ratio", 0);
        if (bp > worst) {
            worst = bp;
            worst_v = ck_rf_str(v, "name");
        }
    }
    if (worst_v && worst >= 0.01)
        fprintf(f, "  backpress. %s %.0f%% of its time\n", txt(&t, worst_v), worst * 100);
    checkpoints(f, run);
    recoveries(f, run);
    rescales(f, run);
    const cJSON *c = ck_rf_get(run, "correctness");
    const char *g = ck_rf_str(c, "guarantee");
    fprintf(f,
            "  output     %s%s %s: expected %.0f, received %.0f, lost %.0f, duplicated %.0f, "
            "unexpected %.0f\n",
            txt(&t, g), ck_rf_bool(c, "partial") ? " (partial output)" : "",
            ck_rf_bool(c, "ok") ? "correct" : "WRONG", ck_rf_num(c, "expected", 0),
            ck_rf_num(c, "received", 0), ck_rf_num(c, "lost", 0), ck_rf_num(c, "duplicated", 0),
            ck_rf_num(c, "unexpected", 0));
    const char *degraded = ck_rf_str(c, "degraded");
    if (degraded && *degraded)
        fprintf(f, "             (not exactly once: the job %s)\n", txt(&t, degraded));
    const char *unexplained = ck_rf_str(c, "unexplained_fallback");
    if (unexplained && *unexplained)
        fprintf(f, "  FAILED     %s\n", txt(&t, unexplained));
    const cJSON *inj = ck_rf_get(c, "injected");
    if (cJSON_IsObject(inj)) {
        /* The damage was injected on purpose: the counts must be exactly it. */
        const char *cf = ck_rf_str(c, "checker_failure");
        fprintf(f,
                "  injected   %.0f output fault%s: %.0f duplicated, %.0f lost, %.0f unexpected, "
                "%.0f wrong totals: %s\n",
                ck_rf_num(inj, "faults", 0), ck_rf_num(inj, "faults", 0) == 1 ? "" : "s",
                ck_rf_num(inj, "duplicated", 0), ck_rf_num(inj, "lost", 0),
                ck_rf_num(inj, "unexpected", 0), ck_rf_num(inj, "wrong_totals", 0),
                ck_rf_bool(c, "checker_ok") ? "the output check found exactly that"
                                            : "the output check is WRONG");
        if (cf && *cf)
            fprintf(f, "  FAILED     %s\n", txt(&t, cf));
    }
    const char *prior = ck_rf_str(c, "includes_output_of");
    if (prior)
        fprintf(f, "             (with the output of %s, which took the savepoint)\n",
                txt(&t, prior));
    fprintf(f, "  wrote      %s\n", txt(&t, runjson_path));
    const char *error = ck_rf_str(run, "error");
    if (error)
        fprintf(f, "  FAILED     %s\n", txt(&t, error));
    txt_free(&t);
}
