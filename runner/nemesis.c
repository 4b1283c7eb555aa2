/*
 * nemesis.c - random fault schedules and the swarm verdict (nemesis.h).
 *
 * Invariants of a drawn schedule (what keeps it valid and recoverable):
 *   - every event would pass ck_scenario_parse: hosts exist, crashes hit
 *     task managers only, factors and durations are in range, timed events
 *     are in order of `at` (triggered ones follow them);
 *   - a crash is for good only while a spare task manager is left;
 *   - one damaged checkpoint at most, only when the configuration keeps
 *     an older one (execution.checkpointing.num-retained >= 2), and none
 *     in liveness mode (with none left to restore, the job fails);
 *   - disruptive faults (crashes, links of task managers or the job
 *     manager down, partitions; inside the processes, failing uploads,
 *     downloads and allocations: may_fail_over) stay below what the
 *     restart strategy tolerates; the others are drawn instead;
 *   - at most two faults inside the processes, each on a host in use,
 *     the job manager (not an allocation) or every host, its window
 *     bounded, with a probability from a fixed set (text reads back);
 *   - in liveness mode, every timed fault starts in the first 40 % of the
 *     input and lasts a bounded time;
 *   - times are whole microseconds, so that the scenario text written for
 *     a seed reads back to the same schedule;
 *   - a focused pair (safety mode, a third of the seeds) is a skew at
 *     checkpoint n's trigger and a crash at its completion, for the same
 *     n, counted among the disruptive faults;
 *   - a fault waits for a subtask's finish only where subtasks finish
 *     apart (the workload's partitions end at different times), and the
 *     nth finish is one of the job's subtasks'.
 */
#include "nemesis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "assign.h"
#include "error.h"
#include "jobmanager.h"
#include "rng.h"

#define US INT64_C(1000)
#define MS INT64_C(1000000)
#define S INT64_C(1000000000)

/* The generator's stream for schedules: apart from the workload's and the engine's. */
#define NEMESIS_STREAM UINT64_C(0x6e656d6573697300)

static const char *const mode_names[] = {"off", "safety", "liveness"};

const char *ck_nemesis_mode_name(ck_nemesis_mode m)
{
    return (unsigned)m <= CK_NEMESIS_LIVENESS ? mode_names[m] : "?";
}

int ck_nemesis_mode_parse(const char *s, ck_nemesis_mode *m)
{
    for (int i = CK_NEMESIS_SAFETY; s && i <= CK_NEMESIS_LIVENESS; i++)
        if (!strcmp(s, mode_names[i])) {
            *m = (ck_nemesis_mode)i;
            return CK_OK;
        }
    return CK_EINVAL;
}

/* ---- drawing ------------------------------------------------------------------------ */

static ck_time round_us(double ns)
{
    ck_time t = (ck_time)llround(ns / 1e3) * US;
    return t < 0 ? 0 : t;
}

/* Uniform in [lo, hi], whole microseconds. */
static ck_time uniform(ck_rng *g, ck_time lo, ck_time hi)
{
    if (hi <= lo)
        return round_us((double)lo);
    return round_us((double)lo + ck_rng_double(g) * (double)(hi - lo));
}

/* Log-uniform in [lo, hi] (short ones as likely as long ones), at least 1 us. */
static ck_time log_uniform(ck_rng *g, ck_time lo, ck_time hi)
{
    if (lo < US)
        lo = US;
    if (hi <= lo)
        return round_us((double)lo);
    double l = log((double)lo), h = log((double)hi);
    ck_time t = round_us(exp(l + ck_rng_double(g) * (h - l)));
    return t < US ? US : t;
}

static ck_time tmin(ck_time a, ck_time b)
{
    return a < b ? a : b;
}

static ck_time tmax(ck_time a, ck_time b)
{
    return a > b ? a : b;
}

/* Restart strategy of the scenario, resolved as the job manager does. */
static int restart_type(const ck_scenario *sc)
{
    int t = (int)ck_cfg(&sc->cfg, CK_CFG_RS_TYPE);
    if (t == CK_RS_DEFAULT)
        t = ck_cfg(&sc->cfg, CK_CFG_CP_INTERVAL) > 0 ? CK_RS_EXPONENTIAL_DELAY : CK_RS_NONE;
    return t;
}

/* How many disruptive faults a schedule may hold: fewer than the failures
 * the restart strategy tolerates (a fault may cause more than one). */
static int disruption_cap(const ck_scenario *sc)
{
    int64_t n;
    switch (restart_type(sc)) {
    case CK_RS_FIXED_DELAY:
        n = ck_cfg(&sc->cfg, CK_CFG_RS_FD_ATTEMPTS) - 1;
        break;
    case CK_RS_FAILURE_RATE:
        n = ck_cfg(&sc->cfg, CK_CFG_RS_FR_MAX) - 1;
        break;
    case CK_RS_EXPONENTIAL_DELAY:
        n = ck_cfg(&sc->cfg, CK_CFG_RS_EXP_ATTEMPTS) - 1;
        break;
    default:
        n = 0;
    }
    return n < 0 ? 0 : n > 8 ? 8 : (int)n;
}

/* The longest wait the restart strategy puts before a restart. */
static ck_time restart_wait(const ck_scenario *sc)
{
    switch (restart_type(sc)) {
    case CK_RS_FIXED_DELAY:
        return ck_cfg(&sc->cfg, CK_CFG_RS_FD_DELAY);
    case CK_RS_FAILURE_RATE:
        return ck_cfg(&sc->cfg, CK_CFG_RS_FR_DELAY);
    case CK_RS_EXPONENTIAL_DELAY:
        return ck_cfg(&sc->cfg, CK_CFG_RS_EXP_MAX);
    default:
        return 0;
    }
}

/* 1 when subtasks of the job finish at different times: the workload's
 * partitions end apart. */
static int finishes_apart(const ck_scenario *sc)
{
    const ck_workload_spec *w = &sc->workload;
    for (int p = 1; p < w->npart_ends; p++)
        if (w->part_end[p] != w->part_end[0])
            return 1;
    return 0;
}

/* Relative weights of the kinds, in the order of ck_fault_kind. */
static const int kind_weight[] = {30, 10, 12, 12, 12, 14, 10};

static ck_fault_kind draw_kind(ck_rng *g, int checkpoints)
{
    int total = 0;
    for (int k = 0; k <= CK_FAULT_CORRUPT_CHECKPOINT; k++)
        if (checkpoints || (k != CK_FAULT_SAVEPOINT && k != CK_FAULT_CORRUPT_CHECKPOINT))
            total += kind_weight[k];
    int x = (int)ck_rng_below(g, (uint64_t)total);
    for (int k = 0; k <= CK_FAULT_CORRUPT_CHECKPOINT; k++) {
        if (!checkpoints && (k == CK_FAULT_SAVEPOINT || k == CK_FAULT_CORRUPT_CHECKPOINT))
            continue;
        if (x < kind_weight[k])
            return (ck_fault_kind)k;
        x -= kind_weight[k];
    }
    return CK_FAULT_SLOW_LINK;
}

/* A partition: the job manager and a random half of the task managers on
 * one side, the others (at least one) on the other; the store on either
 * side or on none. */
static void draw_partition(ck_rng *g, ck_fault *f, int ntm)
{
    int side[CK_MAX_PARTITION_HOSTS];
    int n = ntm < CK_MAX_PARTITION_HOSTS - 2 ? ntm : CK_MAX_PARTITION_HOSTS - 2;
    int nb = 0;
    for (int h = 0; h < n; h++) {
        side[h] = (int)ck_rng_below(g, 2);
        nb += side[h];
    }
    if (nb == 0)
        side[ck_rng_below(g, (uint64_t)n)] = 1;
    f->nside = 0;
    f->side_host[f->nside] = ntm; /* jm */
    f->side[f->nside++] = 0;
    for (int h = 0; h < n; h++) {
        f->side_host[f->nside] = h;
        f->side[f->nside++] = (uint8_t)side[h];
    }
    int st = (int)ck_rng_below(g, 3);
    if (st < 2) {
        f->side_host[f->nside] = ntm + 1; /* store */
        f->side[f->nside++] = (uint8_t)st;
    }
}

/* The first fault of a focused pair: within a millisecond of checkpoint
 * nth's trigger, a task manager in use gets a slow link (tens of
 * milliseconds of latency: longer than a buffer timeout, so that records
 * after the barrier on its peers' channels arrive while the barrier on
 * its own is still on the way) or a slow CPU, for 20 to 200 ms. */
static void draw_skew(ck_rng *g, ck_fault *f, const ck_scenario *sc, int nth, ck_time longest)
{
    static const ck_time lats[] = {5 * MS, 10 * MS, 20 * MS, 50 * MS};
    static const double cpu[] = {0.1, 0.02};
    int inuse = ck_graph_hosts_needed(&sc->graph);
    memset(f, 0, sizeof(*f));
    f->factor = 1.0;
    f->host = (int)ck_rng_below(g, (uint64_t)(inuse > 0 ? inuse : 1));
    if (ck_rng_below(g, 4) != 0) {
        f->kind = CK_FAULT_SLOW_LINK;
        f->latency = lats[ck_rng_below(g, 4)];
    } else {
        f->kind = CK_FAULT_SLOW_CPU;
        f->factor = cpu[ck_rng_below(g, 2)];
    }
    f->duration = log_uniform(g, 20 * MS, tmin(200 * MS, longest));
    f->moment = CK_MOMENT_CHECKPOINT_TRIGGERED;
    f->nth = nth;
    f->at = ck_rng_below(g, 4) == 0 ? 0 : log_uniform(g, 1 * US, 1 * MS);
}

/* The second: a crash of a task manager once checkpoint nth completes,
 * mostly before its commit reaches the sinks (within a millisecond),
 * else before the next checkpoint completes, so that nth is the one
 * restored. With a restart, or for good while a spare is left. */
static void draw_crash_at_completion(ck_rng *g, ck_fault *f, const ck_scenario *sc, int nth,
                                     int *spare, ck_time longest)
{
    ck_time I = ck_cfg(&sc->cfg, CK_CFG_CP_INTERVAL);
    int inuse = ck_graph_hosts_needed(&sc->graph);
    memset(f, 0, sizeof(*f));
    f->factor = 1.0;
    f->kind = CK_FAULT_CRASH;
    f->host = (int)ck_rng_below(g, (uint64_t)(inuse > 0 ? inuse : 1));
    if (*spare > 0 && ck_rng_below(g, 3) == 0)
        (*spare)--;
    else
        f->duration = log_uniform(g, 20 * MS, longest);
    f->moment = CK_MOMENT_CHECKPOINT_COMPLETED;
    f->nth = nth;
    int y = (int)ck_rng_below(g, 100);
    f->at = y < 25   ? 0
            : y < 70 ? log_uniform(g, 1 * US, 1 * MS)
                     : log_uniform(g, 1 * MS, tmax(2 * MS, I / 2));
}

/* Whether fault f may make the job fail over (counted against the
 * restart strategy: disruption_cap). A fault inside the processes that
 * fails uploads, downloads or allocations may (a declined checkpoint past
 * the tolerable ones, a restore or a deployment that fails); one that
 * fails deletes or delays completions does not. */
static int may_fail_over(const ck_fault *f, int ntm)
{
    switch (f->kind) {
    case CK_FAULT_CRASH:
    case CK_FAULT_PARTITION:
        return 1;
    case CK_FAULT_LINK_DOWN:
        return f->host <= ntm;
    case CK_FAULT_STORE_ERRORS:
        return (f->ops & (CK_STORE_OP_PUT | CK_STORE_OP_GET)) != 0;
    case CK_FAULT_ALLOC_FAILURE:
        return 1;
    default:
        return 0;
    }
}

/* The stream of rescales: apart from the rest of the schedule's, so that
 * a scenario whose timeline does not rescale draws as it did before. */
#define RESCALE_STREAM (NEMESIS_STREAM + 0x500)

/* What a scenario's own timeline says of rescales (scenario.h, kept when
 * the events are replaced): whether it has one, and per operator the
 * largest parallelism the job or any of them gives it (the most a drawn
 * rescale gives it: the cluster is sized for it). */
static int own_rescales(const ck_scenario *sc, int *hi)
{
    for (int k = 0; k < sc->graph.spec.nops; k++)
        hi[k] = sc->own_rescales ? sc->rescale_hi[k] : sc->graph.spec.ops[k].parallelism;
    return sc->own_rescales > 0;
}

/* The forward group of operator k: the first operator of the run of
 * forward edges it is in (a forward edge keeps one parallelism on both
 * ends, scenario.c's rule). */
static int forward_root(const ck_job_spec *js, int k)
{
    while (js->ops[k].kind != CK_OP_SOURCE && js->ops[k].ship == CK_SHIP_FORWARD &&
           js->ops[k].input >= 0)
        k = js->ops[k].input;
    return k;
}

/*
 * The parallelism of every operator after a drawn rescale, from cur:
 * each forward group takes, with even odds, a parallelism from 1 to the most the scenario's
 * timeline gives it; at least one changes. The job must build and need
 * at most `hosts` task managers (*need: how many it does); 0, or -1 when
 * eight draws found none.
 */
static int draw_parallelism(ck_rng *g, const ck_scenario *sc, const int *hi,
                            const uint16_t *cur, int hosts, uint16_t *out, int *need)
{
    const ck_job_spec *js = &sc->graph.spec;
    ck_job_spec *spec = malloc(sizeof(*spec));
    ck_graph *gr = malloc(sizeof(*gr));
    int rc = -1;
    for (int attempt = 0; spec && gr && attempt < 8 && rc; attempt++) {
        int changed = 0, any = -1;
        for (int k = 0; k < js->nops; k++)
            out[k] = cur[k];
        for (int k = 0; k < js->nops; k++) {
            if (forward_root(js, k) != k)
                continue;
            int top = 1;
            for (int q = 0; q < js->nops; q++)
                if (forward_root(js, q) == k)
                    top = hi[q] > top ? hi[q] : top;
            if (top < 2)
                continue;
            any = k;
            if (ck_rng_below(g, 2) == 0)
                continue;
            int p = 1 + (int)ck_rng_below(g, (uint64_t)top);
            for (int q = 0; q < js->nops; q++)
                if (forward_root(js, q) == k) {
                    changed |= p != cur[q];
                    out[q] = (uint16_t)p;
                }
        }
        if (any < 0)
            break; /* nothing may rescale */
        if (!changed) { /* the last group that may: to another parallelism */
            int top = hi[any] > 1 ? hi[any] : 2;
            int p = 1 + (int)ck_rng_below(g, (uint64_t)top - 1);
            if (p >= cur[any])
                p++;
            for (int q = 0; q < js->nops; q++)
                if (forward_root(js, q) == any)
                    out[q] = (uint16_t)p;
        }
        *spec = *js;
        for (int k = 0; k < js->nops; k++)
            spec->ops[k].parallelism = out[k];
        int bad = -1;
        char why[200];
        if (!ck_graph_build(gr, spec, &sc->cfg, &bad, why, sizeof(why)) &&
            (*need = ck_graph_hosts_needed(gr)) <= hosts)
            rc = 0;
    }
    free(spec);
    free(gr);
    return rc;
}

/* The stream of the faults inside the processes: apart from the rest of
 * the schedule's, so that a seed draws the rest as it did before they
 * existed. */
#define IN_PROCESS_STREAM (NEMESIS_STREAM + 0x300)

/*
 * Two schedules in five get one or two faults inside the processes
 * (buggify.h), added to what the seed drew: store operations that fail
 * (uploads, downloads, deletes), store completions that come late, an
 * allocation that fails while a subtask restores, snapshots or is
 * deployed. Each is on one host in use (or the job manager, whose puts
 * are the metadata) or on every host, with a probability of 0.1 to 1 per
 * operation, for a window of 10 ms to 1 s (a quarter of the input at
 * most; a failing deployment's a tenth to a half of the input, failing
 * deletes' one to four checkpoint intervals: windows that hold a failover
 * or a completion), at a time or after the moment that makes it bite: a
 * restore for a download or the restore point, a checkpoint's trigger or
 * an upload for an upload or the snapshot point, a completion for
 * deletes. Those that may fail the job over count against the restart
 * strategy as the disruptive faults do; past its cap only late
 * completions are drawn.
 */
static void draw_in_process(ck_scenario *sc, uint64_t seed, ck_nemesis_mode mode)
{
    static const double probs[] = {0.1, 0.25, 0.5, 1.0};
    ck_rng g;
    ck_rng_init(&g, seed, IN_PROCESS_STREAM + (uint64_t)mode);
    if (ck_rng_below(&g, 5) >= 2)
        return;
    int live = mode == CK_NEMESIS_LIVENESS;
    int n = ck_rng_below(&g, 10) < 7 ? 1 : 2;
    int ntm = ck_scenario_taskmanagers(sc);
    int inuse = ck_graph_hosts_needed(&sc->graph);
    int nsub = (int)sc->graph.nsubtasks;
    ck_time T = sc->workload.duration > 0 ? sc->workload.duration : S;
    ck_time I = ck_cfg(&sc->cfg, CK_CFG_CP_INTERVAL);
    ck_time w0 = T / 20, w1 = live ? T * 2 / 5 : T * 9 / 10;
    int cap = disruption_cap(sc), disruptive = 0;
    for (int i = 0; i < sc->nfaults; i++)
        disruptive += may_fail_over(&sc->faults[i], ntm);
    for (int k = 0; k < n && sc->nfaults < CK_MAX_FAULTS; k++) {
        ck_fault f;
        memset(&f, 0, sizeof(f));
        f.factor = 1.0;
        int x = (int)ck_rng_below(&g, 100);
        f.kind = x < 45 ? CK_FAULT_STORE_ERRORS : x < 75 ? CK_FAULT_STORE_DELAY
                                                         : CK_FAULT_ALLOC_FAILURE;
        /* Without checkpoints nothing is stored: only deployments can fail. */
        if (I <= 0 && f.kind != CK_FAULT_STORE_DELAY)
            f.kind = CK_FAULT_ALLOC_FAILURE;
        if (f.kind == CK_FAULT_STORE_ERRORS) {
            int y = (int)ck_rng_below(&g, 100);
            f.ops = y < 40   ? CK_STORE_OP_PUT
                    : y < 75 ? CK_STORE_OP_GET
                    : y < 85 ? CK_STORE_OP_DELETE
                             : CK_STORE_OP_ALL;
        } else if (f.kind == CK_FAULT_ALLOC_FAILURE) {
            int y = (int)ck_rng_below(&g, 100);
            f.point = I <= 0 ? CK_POINT_DEPLOY
                      : y < 40 ? CK_POINT_RESTORE
                      : y < 80 ? CK_POINT_SNAPSHOT
                               : CK_POINT_DEPLOY;
        }
        if (may_fail_over(&f, ntm)) {
            if (disruptive >= cap) {
                f.kind = CK_FAULT_STORE_DELAY; /* the restart strategy would give up */
                f.ops = f.point = 0;
            } else {
                disruptive++;
            }
        }
        /* a host in use, the job manager (not for allocations), or every host */
        int h = (int)ck_rng_below(&g, (uint64_t)(inuse > 0 ? inuse : 1) + 2);
        f.host = h < inuse ? h : h == inuse && f.kind != CK_FAULT_ALLOC_FAILURE ? ntm : -1;
        if (f.kind == CK_FAULT_STORE_ERRORS && f.ops == CK_STORE_OP_DELETE && f.host >= 0)
            f.host = ntm; /* the coordinator deletes, the subtasks hardly */
        else if (f.kind == CK_FAULT_STORE_ERRORS && f.ops == CK_STORE_OP_GET && f.host == ntm)
            f.host = -1; /* the job manager reads nothing: the subtasks restore */
        f.prob = probs[ck_rng_below(&g, 4)];
        if (f.kind == CK_FAULT_STORE_DELAY)
            f.delay = log_uniform(&g, 1 * MS, tmin(500 * MS, tmax(2 * MS, T / 4)));
        f.duration = log_uniform(&g, 10 * MS, tmin(1 * S, tmax(20 * MS, T / 4)));
        /* Deployments happen at failovers, deletes at completions: windows
         * long enough to hold one. */
        if (f.kind == CK_FAULT_ALLOC_FAILURE && f.point == CK_POINT_DEPLOY)
            f.duration = log_uniform(&g, tmax(10 * MS, T / 10), tmax(20 * MS, T / 2));
        else if (f.kind == CK_FAULT_STORE_ERRORS && f.ops == CK_STORE_OP_DELETE && I > 0)
            f.duration = log_uniform(&g, I, 4 * I);
        /* When: at a time, or after the moment that makes it bite. */
        int reads_only = (f.kind == CK_FAULT_STORE_ERRORS && f.ops == CK_STORE_OP_GET) ||
                         (f.kind == CK_FAULT_ALLOC_FAILURE && f.point == CK_POINT_RESTORE);
        if (I > 0 && ck_rng_below(&g, 4) < (reads_only ? 3u : 2u)) {
            int ncp = (int)tmax(1, w1 / I);
            int reads = f.kind == CK_FAULT_STORE_ERRORS ? (f.ops & CK_STORE_OP_GET) != 0
                        : f.kind == CK_FAULT_ALLOC_FAILURE
                            ? f.point != CK_POINT_SNAPSHOT
                            : (int)ck_rng_below(&g, 2);
            if (f.kind == CK_FAULT_STORE_ERRORS && f.ops == CK_STORE_OP_DELETE) {
                f.moment = CK_MOMENT_CHECKPOINT_COMPLETED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp);
            } else if (reads) {
                f.moment = CK_MOMENT_RESTORE_STARTED;
                f.nth = 1 + (int)ck_rng_below(&g, 2 * (uint64_t)nsub);
            } else if (ck_rng_below(&g, 2)) {
                f.moment = CK_MOMENT_CHECKPOINT_TRIGGERED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp);
            } else {
                f.moment = CK_MOMENT_UPLOAD_STARTED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp * (uint64_t)nsub);
            }
            f.at = ck_rng_below(&g, 4) == 0 ? 0 : log_uniform(&g, 1 * US, 1 * MS);
            sc->faults[sc->nfaults++] = f;
        } else {
            /* among the timed faults, in order of `at` (triggered ones follow) */
            f.at = uniform(&g, w0, w1);
            int i = 0;
            while (i < sc->nfaults && sc->faults[i].moment == CK_MOMENT_NONE &&
                   sc->faults[i].at <= f.at)
                i++;
            memmove(&sc->faults[i + 1], &sc->faults[i],
                    (size_t)(sc->nfaults - i) * sizeof(sc->faults[0]));
            sc->faults[i] = f;
            sc->nfaults++;
        }
    }
}

/*
 * A fifth of the safety schedules damage the committed output on purpose:
 * one output fault (a transaction applied twice, lost, or a value
 * changed) on a sink of the job drawn uniformly, so that every grouping
 * of the output check the job has is met across seeds, at a time or just
 * after a checkpoint completes (its commit is the transaction hit). The
 * verdict must then count exactly that damage (nemesis.h). Drawn from a
 * stream of its own, after the rest, so that the other faults of a seed
 * stay as they were.
 */
/* The stream of the output faults: apart from the rest's too. */
#define OUTPUT_STREAM (NEMESIS_STREAM + 0x400)

static void draw_output(ck_scenario *sc, uint64_t seed, ck_nemesis_mode mode)
{
    static const ck_fault_kind kinds[] = {CK_FAULT_SINK_DUPLICATE, CK_FAULT_SINK_DROP,
                                          CK_FAULT_SINK_CORRUPT};
    ck_rng g;
    ck_rng_init(&g, seed, OUTPUT_STREAM + (uint64_t)mode);
    int sinks[CK_MAX_OPS], ns = 0;
    for (int k = 0; k < sc->job.nops; k++)
        if (sc->job.ops[k].kind == CK_OP_SINK)
            sinks[ns++] = k;
    if (!ns || ck_rng_below(&g, 5) != 0 || sc->nfaults >= CK_MAX_FAULTS)
        return;
    ck_time T = sc->workload.duration > 0 ? sc->workload.duration : S;
    ck_time I = ck_cfg(&sc->cfg, CK_CFG_CP_INTERVAL);
    ck_fault f;
    memset(&f, 0, sizeof(f));
    f.factor = 1.0;
    f.host = -1;
    f.kind = kinds[ck_rng_below(&g, 3)];
    f.op = sinks[ck_rng_below(&g, (uint64_t)ns)];
    if (I > 0 && ck_rng_below(&g, 2)) {
        f.moment = CK_MOMENT_CHECKPOINT_COMPLETED;
        f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)tmax(1, T * 9 / 10 / I));
        f.at = ck_rng_below(&g, 2) ? 0 : log_uniform(&g, 1 * US, 1 * MS);
        sc->faults[sc->nfaults++] = f;
        return;
    }
    f.at = uniform(&g, T / 10, T * 9 / 10);
    int i = 0; /* among the timed faults, in order of `at` */
    while (i < sc->nfaults && sc->faults[i].moment == CK_MOMENT_NONE && sc->faults[i].at <= f.at)
        i++;
    memmove(&sc->faults[i + 1], &sc->faults[i], (size_t)(sc->nfaults - i) * sizeof(f));
    sc->faults[i] = f;
    sc->nfaults++;
}

void ck_nemesis_draw(ck_scenario *sc, uint64_t seed, ck_nemesis_mode mode)
{
    ck_rng g;
    ck_rng_init(&g, seed, NEMESIS_STREAM + (uint64_t)mode);
    int live = mode == CK_NEMESIS_LIVENESS;
    ck_time T = sc->workload.duration > 0 ? sc->workload.duration : S;
    int ntm = ck_scenario_taskmanagers(sc);
    int spare = ntm - ck_graph_hosts_needed(&sc->graph);
    ck_time I = ck_cfg(&sc->cfg, CK_CFG_CP_INTERVAL);
    ck_time hb = ck_cfg(&sc->cfg, CK_CFG_HB_TIMEOUT);
    int nsub = (int)sc->graph.nsubtasks;
    int cap = disruption_cap(sc), disruptive = 0, corrupted = 0;
    /* a state backend with work of its own: half the triggered faults
     * wait for its flushes, compactions, materializations, uploads */
    int state_work = ck_cfg(&sc->cfg, CK_CFG_STATE_BACKEND) == 1 ||
                     ck_cfg(&sc->cfg, CK_CFG_CLOG_ENABLED);
    /* Timed faults start within [w0, w1]. */
    ck_time w0 = T / 20, w1 = live ? T * 2 / 5 : T * 9 / 10;
    ck_time longest = tmax(10 * MS, T / 2);          /* slowness, crashes */
    ck_time cut_longest = tmax(10 * MS, tmin(T / 2, 3 * hb)); /* network cuts */
    int n = 1 + (int)ck_rng_below(&g, live ? 4 : 5);

    ck_fault timed[CK_MAX_FAULTS], trig[CK_MAX_FAULTS];
    int ntimed = 0, ntrig = 0;
    /* Rescales, when the scenario's own timeline rescales (its cluster is
     * sized for what it gives each operator): drawn first, on a stream of
     * their own, so that the task managers they take are no spares. */
    int hi[CK_MAX_OPS];
    if (own_rescales(sc, hi)) {
        ck_rng rg;
        ck_rng_init(&rg, seed, RESCALE_STREAM + (uint64_t)mode);
        int inuse = ck_graph_hosts_needed(&sc->graph);
        int budget = ntm > inuse ? ntm - 1 : ntm; /* one spare kept, if there was one */
        uint16_t cur[CK_FAULT_MAX_OPS], par[CK_FAULT_MAX_OPS];
        for (int k = 0; k < sc->graph.spec.nops; k++)
            cur[k] = (uint16_t)sc->graph.spec.ops[k].parallelism;
        int nres = 1 + (int)ck_rng_below(&rg, 2);
        for (int k = 0; k < nres; k++) {
            /* its parallelism is drawn here to know the hosts it takes;
             * the schedule's order may put it after another rescale,
             * and each says every operator's parallelism, so it holds */
            int need;
            if (draw_parallelism(&rg, sc, hi, cur, budget, par, &need))
                break;
            ck_fault f;
            memset(&f, 0, sizeof(f));
            f.factor = 1.0;
            f.kind = CK_FAULT_RESCALE;
            f.host = f.op = -1;
            memcpy(f.par, par, sizeof(par));
            memcpy(cur, par, sizeof(par));
            f.via = I > 0 && ck_rng_below(&rg, 2) ? CK_RESCALE_VIA_CHECKPOINT
                                                   : CK_RESCALE_VIA_SAVEPOINT;
            if (I > 0 && ck_rng_below(&rg, 3) == 0) {
                f.moment = CK_MOMENT_CHECKPOINT_COMPLETED;
                f.nth = 1 + (int)ck_rng_below(&rg, (uint64_t)tmax(1, w1 / I));
                f.at = log_uniform(&rg, 1 * US, tmax(2 * MS, I));
                trig[ntrig++] = f;
            } else {
                f.at = uniform(&rg, w0, w1);
                int i = ntimed++;
                while (i > 0 && timed[i - 1].at > f.at) {
                    timed[i] = timed[i - 1];
                    i--;
                }
                timed[i] = f;
            }
            /* Half of them with a crash while the job rebuilds at its new
             * parallelism: from the moment its deployment goes out, within
             * microseconds (the downloads) to a tenth of a second (the
             * rebuild, the first records). */
            if (disruptive < cap && ck_rng_below(&rg, 2)) {
                ck_fault c;
                memset(&c, 0, sizeof(c));
                c.factor = 1.0;
                c.kind = CK_FAULT_CRASH;
                c.host = (int)ck_rng_below(&rg, (uint64_t)need); /* one it runs on */
                c.duration = log_uniform(&rg, 20 * MS, longest);
                c.moment = CK_MOMENT_RESCALE_DEPLOYED;
                c.nth = 1 + k;
                int y = (int)ck_rng_below(&rg, 100);
                c.at = y < 25   ? 0
                       : y < 65 ? log_uniform(&rg, 1 * US, 1 * MS)
                                : log_uniform(&rg, 1 * MS, 100 * MS);
                trig[ntrig++] = c;
                disruptive++;
            }
        }
        spare = ntm - budget;
    }
    /* A third of the safety schedules start with a focused pair: the
     * channels of checkpoint n skewed as it is triggered, then a crash as
     * it completes. The rest is drawn as usual, up to 3 faults more. */
    if (!live && I > 0 && cap >= 1 && ck_rng_below(&g, 3) == 0) {
        int ncp = (int)tmax(2, w1 / I);
        int nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp - 1);
        draw_skew(&g, &trig[ntrig++], sc, nth, longest);
        draw_crash_at_completion(&g, &trig[ntrig++], sc, nth, &spare, longest);
        disruptive++;
        n = (int)ck_rng_below(&g, 4);
    }
    for (int k = 0; k < n; k++) {
        ck_fault f;
        memset(&f, 0, sizeof(f));
        f.factor = 1.0;
        f.kind = draw_kind(&g, I > 0);
        /* One damaged checkpoint at most, and only with an older one kept
         * to fall back to: with none left the job fails, as Flink's would
         * (so none in liveness mode, where the job must finish). */
        if (f.kind == CK_FAULT_CORRUPT_CHECKPOINT) {
            if (live || corrupted || ck_cfg(&sc->cfg, CK_CFG_CP_RETAINED) < 2)
                f.kind = CK_FAULT_SLOW_CPU;
            corrupted = 1;
        }
        /* The host first: whether the fault disrupts the job depends on it. */
        switch (f.kind) {
        case CK_FAULT_CRASH:
        case CK_FAULT_SLOW_CPU:
            f.host = (int)ck_rng_below(&g, (uint64_t)ntm);
            break;
        case CK_FAULT_SLOW_LINK:
        case CK_FAULT_LINK_DOWN:
            f.host = (int)ck_rng_below(&g, (uint64_t)ntm + 2);
            break;
        default:
            break;
        }
        int disrupts = f.kind == CK_FAULT_CRASH || f.kind == CK_FAULT_PARTITION ||
                       (f.kind == CK_FAULT_LINK_DOWN && f.host <= ntm);
        if (disrupts && disruptive >= cap) {
            /* The restart strategy would give up: slow the host down instead. */
            f.kind = CK_FAULT_SLOW_LINK;
            f.host = (int)ck_rng_below(&g, (uint64_t)ntm + 2);
        } else if (disrupts) {
            disruptive++;
        }
        switch (f.kind) {
        case CK_FAULT_CRASH:
            if (spare > 0 && ck_rng_below(&g, 3) == 0)
                spare--; /* for good: a spare takes its place */
            else
                f.duration = log_uniform(&g, 20 * MS, longest);
            break;
        case CK_FAULT_SLOW_CPU: {
            static const double factors[] = {0.5, 0.25, 0.1, 0.02, 0.005};
            f.factor = factors[ck_rng_below(&g, 5)];
            f.duration = log_uniform(&g, 10 * MS, longest);
            break;
        }
        case CK_FAULT_SLOW_LINK: {
            static const double factors[] = {0.5, 0.1, 0.01};
            /* Tens of milliseconds too: alignment must outlast a buffer
             * timeout for records to overtake a late barrier. */
            static const ck_time lats[] = {100 * US, 1 * MS, 5 * MS, 20 * MS, 50 * MS};
            int what = (int)ck_rng_below(&g, 3); /* bandwidth, latency, both */
            if (what != 1)
                f.factor = factors[ck_rng_below(&g, 3)];
            if (what != 0)
                f.latency = lats[ck_rng_below(&g, 5)];
            f.duration = log_uniform(&g, 10 * MS, longest);
            break;
        }
        case CK_FAULT_LINK_DOWN:
            f.duration = log_uniform(&g, 1 * MS, cut_longest);
            break;
        case CK_FAULT_PARTITION:
            draw_partition(&g, &f, ntm);
            f.duration = log_uniform(&g, 1 * MS, cut_longest);
            break;
        case CK_FAULT_SAVEPOINT:
            if (ck_rng_below(&g, 3) == 0) {
                f.stop = 1;
                f.resume_after = log_uniform(&g, 10 * MS, 500 * MS);
            }
            break;
        case CK_FAULT_CORRUPT_CHECKPOINT:
            f.how = (int)ck_rng_below(&g, 2);
            break;
        case CK_FAULT_SLOW_OPERATOR:
        case CK_FAULT_SLOW_SINK:
        case CK_FAULT_HOT_KEY:
            break; /* not drawn (draw_kind): they slow, they do not break */
        case CK_FAULT_STORE_ERRORS:
        case CK_FAULT_STORE_DELAY:
        case CK_FAULT_ALLOC_FAILURE:
            break; /* drawn apart (draw_in_process) */
        case CK_FAULT_SINK_DUPLICATE:
        case CK_FAULT_SINK_DROP:
        case CK_FAULT_SINK_CORRUPT:
            break; /* drawn apart (draw_output) */
        case CK_FAULT_RESCALE:
            break; /* not drawn yet */
        }
        /* When: at a time, or at a moment (with checkpoints on). */
        if (I > 0 && ck_rng_below(&g, 2)) {
            int x = (int)ck_rng_below(&g, 100);
            int ncp = (int)tmax(1, w1 / I);
            if (state_work && ck_rng_below(&g, 2)) {
                static const ck_moment st[] = {CK_MOMENT_STATE_FLUSH, CK_MOMENT_STATE_COMPACTION,
                                               CK_MOMENT_MATERIALIZATION,
                                               CK_MOMENT_CHANGELOG_UPLOAD};
                int changelog = ck_cfg(&sc->cfg, CK_CFG_CLOG_ENABLED) != 0;
                int rocks = ck_cfg(&sc->cfg, CK_CFG_STATE_BACKEND) == 1;
                int sm = (int)ck_rng_below(&g, 4);
                if (!changelog)
                    sm = sm % 2;     /* flushes and compactions only */
                else if (!rocks)
                    sm = 2 + sm % 2; /* materializations and segments only */
                f.moment = st[sm];
                /* about one per subtask and checkpoint (flushes, segments),
                 * fewer compactions and materializations */
                uint64_t span = (uint64_t)ncp * (uint64_t)nsub;
                f.nth = 1 + (int)ck_rng_below(&g, sm == 0 || sm == 3 ? span : span / 4 + 1);
            } else if (x < 30) {
                f.moment = CK_MOMENT_CHECKPOINT_TRIGGERED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp);
            } else if (x < 60) {
                f.moment = CK_MOMENT_CHECKPOINT_COMPLETED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp);
            } else if (x < 85) {
                f.moment = CK_MOMENT_UPLOAD_STARTED;
                f.nth = 1 + (int)ck_rng_below(&g, (uint64_t)ncp * (uint64_t)nsub);
            } else {
                f.moment = CK_MOMENT_RESTORE_STARTED;
                f.nth = 1 + (int)ck_rng_below(&g, 2 * (uint64_t)nsub);
            }
            /* Mostly within microseconds to a millisecond of it: barriers
             * align, commits travel and uploads run in such windows. */
            int y = (int)ck_rng_below(&g, 100);
            f.at = y < 25 ? 0
                   : y < 65 ? log_uniform(&g, 1 * US, 1 * MS)
                            : log_uniform(&g, 1 * MS, tmax(2 * MS, tmin(I, 200 * MS)));
            trig[ntrig++] = f;
        } else {
            f.at = uniform(&g, w0, w1);
            int i = ntimed++;
            while (i > 0 && timed[i - 1].at > f.at) {
                timed[i] = timed[i - 1];
                i--;
            }
            timed[i] = f;
        }
    }
    sc->nfaults = 0;
    for (int i = 0; i < ntimed; i++)
        sc->faults[sc->nfaults++] = timed[i];
    for (int i = 0; i < ntrig; i++)
        sc->faults[sc->nfaults++] = trig[i];
    /* rescales numbered in the schedule's order, as the scenario's
     * parser numbers them (generations, graph.h) */
    for (int i = 0, r = 0; i < sc->nfaults; i++)
        if (sc->faults[i].kind == CK_FAULT_RESCALE)
            sc->faults[i].rescale = r++;
    /* A third of the crashes lose the host rather than kill the process:
     * drawn from a stream of their own, so that a seed's schedule is
     * otherwise the one it drew before crashes had kinds. */
    ck_rng kinds;
    ck_rng_init(&kinds, seed, NEMESIS_STREAM + 0x100 + (uint64_t)mode);
    for (int i = 0; i < sc->nfaults; i++)
        if (sc->faults[i].kind == CK_FAULT_CRASH && ck_rng_below(&kinds, 3) == 0)
            sc->faults[i].crash = CK_CRASH_HOST;
    /* Where subtasks finish apart (partitions that end at different
     * times), a third of the triggered faults wait for the nth subtask's
     * finish instead, from a microsecond to three checkpoint intervals
     * after it: before and after the checkpoints that go on record it
     * finished, which a failover then restores. Drawn from a stream of
     * their own too, so that other scenarios' schedules stay as they
     * were. */
    if (I > 0 && finishes_apart(sc)) {
        ck_rng fin;
        ck_rng_init(&fin, seed, NEMESIS_STREAM + 0x200 + (uint64_t)mode);
        for (int i = 0; i < sc->nfaults; i++) {
            ck_fault *f = &sc->faults[i];
            if (f->moment == CK_MOMENT_NONE || ck_rng_below(&fin, 3) != 0)
                continue;
            f->moment = CK_MOMENT_SUBTASK_FINISHED;
            f->nth = 1 + (int)ck_rng_below(&fin, (uint64_t)nsub);
            f->at = log_uniform(&fin, 1 * US, 3 * I);
        }
    }
    if (mode == CK_NEMESIS_SAFETY)
        draw_output(sc, seed, mode);
    draw_in_process(sc, seed, mode);
}

/* ---- writing ------------------------------------------------------------------------ */

/* A duration as the scenario format reads it back exactly. */
static void fmt_dur(char *buf, size_t len, ck_time t)
{
    if (t % US == 0)
        snprintf(buf, len, "%lld us", (long long)(t / US));
    else
        snprintf(buf, len, "%lld ns", (long long)t);
}

static void add_dur(cJSON *o, const char *key, ck_time t)
{
    char buf[48];
    fmt_dur(buf, sizeof(buf), t);
    cJSON_AddStringToObject(o, key, buf);
}

cJSON *ck_nemesis_events_json(const ck_scenario *sc)
{
    static const char *const hows[] = {"bitflip", "truncate"};
    int ntm = ck_scenario_taskmanagers(sc);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < sc->nfaults; i++) {
        const ck_fault *f = &sc->faults[i];
        cJSON *o = cJSON_CreateObject();
        char host[32];
        if (!o) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, o);
        if (f->moment != CK_MOMENT_NONE) {
            cJSON *after = cJSON_AddObjectToObject(o, "after");
            cJSON_AddStringToObject(after, "moment", ck_moment_name(f->moment));
            cJSON_AddNumberToObject(after, "nth", f->nth);
        }
        add_dur(o, "at", f->at);
        cJSON_AddStringToObject(o, "action", ck_fault_name(f->kind));
        switch (f->kind) {
        case CK_FAULT_CRASH:
        case CK_FAULT_SLOW_CPU:
        case CK_FAULT_SLOW_LINK:
        case CK_FAULT_LINK_DOWN:
            ck_host_name(f->host, ntm, host, sizeof(host));
            cJSON_AddStringToObject(o, "host", host);
            if (f->kind == CK_FAULT_CRASH && f->crash == CK_CRASH_HOST)
                cJSON_AddStringToObject(o, "kind", "host");
            break;
        case CK_FAULT_PARTITION: {
            cJSON *groups = cJSON_AddArrayToObject(o, "groups");
            for (int side = 0; side < 2; side++) {
                cJSON *list = cJSON_CreateArray();
                for (int k = 0; k < f->nside; k++)
                    if (f->side[k] == side) {
                        ck_host_name(f->side_host[k], ntm, host, sizeof(host));
                        cJSON_AddItemToArray(list, cJSON_CreateString(host));
                    }
                cJSON_AddItemToArray(groups, list);
            }
            break;
        }
        case CK_FAULT_SAVEPOINT:
            if (f->stop)
                cJSON_AddBoolToObject(o, "stop", 1);
            if (f->resume_after)
                add_dur(o, "resume_after", f->resume_after);
            break;
        case CK_FAULT_CORRUPT_CHECKPOINT:
            cJSON_AddStringToObject(o, "how", hows[f->how ? 1 : 0]);
            if (f->file)
                cJSON_AddStringToObject(o, "file", ck_damage_file_names[f->file]);
            break;
        case CK_FAULT_SLOW_OPERATOR:
        case CK_FAULT_SLOW_SINK:
            if (f->op >= 0 && f->op < sc->job.nops)
                cJSON_AddStringToObject(o, "operator", sc->job.ops[f->op].name);
            cJSON_AddNumberToObject(o, "factor", f->factor);
            break;
        case CK_FAULT_HOT_KEY:
            cJSON_AddNumberToObject(o, "share", f->factor);
            break;
        case CK_FAULT_STORE_ERRORS:
        case CK_FAULT_STORE_DELAY:
        case CK_FAULT_ALLOC_FAILURE:
            if (f->host >= 0) {
                ck_host_name(f->host, ntm, host, sizeof(host));
                cJSON_AddStringToObject(o, "host", host);
            }
            if (f->kind == CK_FAULT_ALLOC_FAILURE) {
                cJSON_AddStringToObject(o, "point", ck_alloc_point_names[f->point - 1]);
            } else if (f->kind == CK_FAULT_STORE_ERRORS) {
                cJSON *ops = cJSON_AddArrayToObject(o, "ops");
                for (int k = 0; ck_store_op_names[k]; k++)
                    if (f->ops & (1 << k))
                        cJSON_AddItemToArray(ops, cJSON_CreateString(ck_store_op_names[k]));
            }
            cJSON_AddNumberToObject(o, "probability", f->prob);
            if (f->kind == CK_FAULT_STORE_DELAY)
                add_dur(o, "delay", f->delay);
            break;
        case CK_FAULT_SINK_DUPLICATE:
        case CK_FAULT_SINK_DROP:
        case CK_FAULT_SINK_CORRUPT:
            if (f->op >= 0 && f->op < sc->job.nops)
                cJSON_AddStringToObject(o, "sink", sc->job.ops[f->op].name);
            break;
        case CK_FAULT_RESCALE: {
            /* every operator's parallelism after it: a valid "parallelism" */
            cJSON *par = cJSON_AddObjectToObject(o, "parallelism");
            for (int k = 0; k < sc->job.nops && k < CK_FAULT_MAX_OPS; k++)
                cJSON_AddNumberToObject(par, sc->job.ops[k].name, f->par[k]);
            cJSON_AddStringToObject(o, "via", ck_rescale_via_names[f->via ? 1 : 0]);
            break;
        }
        }
        if (f->kind == CK_FAULT_SLOW_CPU || (f->kind == CK_FAULT_SLOW_LINK && f->factor != 1.0))
            cJSON_AddNumberToObject(o, "factor", f->factor);
        if (f->kind == CK_FAULT_SLOW_LINK && f->latency)
            add_dur(o, "latency", f->latency);
        if (f->duration)
            add_dur(o, f->kind == CK_FAULT_CRASH ? "restart_after" : "duration", f->duration);
    }
    return a;
}

/* A time, short: "300us", "12.5ms", "1.234s". */
static void fmt_short(char *buf, size_t len, ck_time t)
{
    if (t < MS)
        snprintf(buf, len, "%.4gus", (double)t / 1e3);
    else if (t < S)
        snprintf(buf, len, "%.4gms", (double)t / 1e6);
    else
        snprintf(buf, len, "%.6gs", (double)t / 1e9);
}

void ck_nemesis_describe(const ck_fault *f, int ntm, char *buf, size_t len)
{
    char what[160] = "", when[96], d[32], host[32];
    ck_host_name(f->host, ntm, host, sizeof(host));
    fmt_short(d, sizeof(d), f->duration);
    switch (f->kind) {
    case CK_FAULT_CRASH:
        if (f->duration)
            snprintf(what, sizeof(what), "%s %s, back after %s",
                     f->crash == CK_CRASH_HOST ? "lose host" : "crash", host, d);
        else
            snprintf(what, sizeof(what), "%s %s for good",
                     f->crash == CK_CRASH_HOST ? "lose host" : "crash", host);
        break;
    case CK_FAULT_SLOW_CPU:
        snprintf(what, sizeof(what), "slow_cpu %s x%g for %s", host, f->factor, d);
        break;
    case CK_FAULT_SLOW_LINK: {
        char lat[32];
        fmt_short(lat, sizeof(lat), f->latency);
        snprintf(what, sizeof(what), "slow_link %s x%g +%s for %s", host, f->factor, lat, d);
        break;
    }
    case CK_FAULT_LINK_DOWN:
        snprintf(what, sizeof(what), "link_down %s for %s", host, d);
        break;
    case CK_FAULT_PARTITION: {
        size_t off = (size_t)snprintf(what, sizeof(what), "partition");
        for (int side = 0; side < 2; side++) {
            off += (size_t)snprintf(what + off, sizeof(what) - off, side ? " |" : "");
            for (int k = 0; k < f->nside && off < sizeof(what); k++)
                if (f->side[k] == side) {
                    ck_host_name(f->side_host[k], ntm, host, sizeof(host));
                    off += (size_t)snprintf(what + off, sizeof(what) - off, " %s", host);
                }
        }
        if (off < sizeof(what))
            snprintf(what + off, sizeof(what) - off, " for %s", d);
        break;
    }
    case CK_FAULT_SAVEPOINT:
        if (f->stop) {
            char r[32];
            fmt_short(r, sizeof(r), f->resume_after);
            snprintf(what, sizeof(what), "stop-with-savepoint, resume after %s", r);
        } else {
            snprintf(what, sizeof(what), "savepoint");
        }
        break;
    case CK_FAULT_CORRUPT_CHECKPOINT:
        snprintf(what, sizeof(what), "corrupt_checkpoint %s", f->how ? "truncate" : "bitflip");
        break;
    case CK_FAULT_SLOW_OPERATOR:
    case CK_FAULT_SLOW_SINK:
        snprintf(what, sizeof(what), "%s #%d x%g for %s", ck_fault_name(f->kind), f->op,
                 f->factor, d);
        break;
    case CK_FAULT_HOT_KEY:
        snprintf(what, sizeof(what), "hot_key %g for %s", f->factor, d);
        break;
    case CK_FAULT_STORE_ERRORS:
    case CK_FAULT_STORE_DELAY:
    case CK_FAULT_ALLOC_FAILURE: {
        char on[48] = "", late[48] = "";
        if (f->kind == CK_FAULT_ALLOC_FAILURE) {
            snprintf(on, sizeof(on), " at %s", ck_alloc_point_names[f->point - 1]);
        } else if (f->kind == CK_FAULT_STORE_ERRORS) {
            size_t off = 0;
            for (int k = 0; ck_store_op_names[k] && off < sizeof(on); k++)
                if (f->ops & (1 << k))
                    off += (size_t)snprintf(on + off, sizeof(on) - off, "%s%s", off ? "+" : " ",
                                            ck_store_op_names[k]);
        }
        if (f->kind == CK_FAULT_STORE_DELAY) {
            char dl[32];
            fmt_short(dl, sizeof(dl), f->delay);
            snprintf(late, sizeof(late), " up to %s", dl);
        }
        if (f->host < 0)
            snprintf(host, sizeof(host), "all");
        snprintf(what, sizeof(what), "%s %s%s p%g%s for %s", ck_fault_name(f->kind), host, on,
                 f->prob, late, f->duration ? d : "good");
        break;
    }
    case CK_FAULT_SINK_DUPLICATE:
    case CK_FAULT_SINK_DROP:
    case CK_FAULT_SINK_CORRUPT:
        snprintf(what, sizeof(what), "%s #%d", ck_fault_name(f->kind), f->op);
        break;
    case CK_FAULT_RESCALE: {
        /* the operators' parallelism after it, in the job's order */
        size_t off = (size_t)snprintf(what, sizeof(what), "rescale %d via %s to", f->rescale,
                                      ck_rescale_via_names[f->via ? 1 : 0]);
        for (int k = 0; k < CK_FAULT_MAX_OPS && f->par[k] && off < sizeof(what); k++)
            off += (size_t)snprintf(what + off, sizeof(what) - off, "%s%u", k ? "," : " ",
                                    f->par[k]);
        break;
    }
    }
    char at[32];
    fmt_short(at, sizeof(at), f->at);
    if (f->moment != CK_MOMENT_NONE)
        snprintf(when, sizeof(when), "%s after %s#%d", at, ck_moment_name(f->moment), f->nth);
    else
        snprintf(when, sizeof(when), "at %s", at);
    snprintf(buf, len, "%s %s", when, what);
}

/* ---- judging -------------------------------------------------------------------------- */

/* When the last fault of the run ended, as it happened (its start for
 * the instant ones); 0 when none applied. */
static ck_time last_fault_end(const ck_run *r)
{
    ck_time last = 0;
    for (int i = 0; i < r->res.nfaults; i++) {
        const ck_fault_run *f = &r->res.faults[i];
        if (!f->applied || f->failed)
            continue;
        ck_time t = f->ended ? f->ended_at : f->applied_at;
        if (f->spec->kind == CK_FAULT_SAVEPOINT)
            t = f->applied_at + f->spec->resume_after;
        last = tmax(last, t);
    }
    return last;
}

void ck_nemesis_judge(const ck_run *r, const ck_verdict *v, ck_nemesis_mode mode,
                      ck_nemesis_verdict *out)
{
    const ck_scenario *sc = r->sc;
    memset(out, 0, sizeof(*out));
    int finished = r->res.jm_ready && r->res.jm.state == CK_JOB_FINISHED;
    /* Failures the schedule may cause on purpose: the restart strategy
     * gave up, or every checkpoint left to restore was damaged (each
     * fallback past a file it damaged: an unexplained one fails below). */
    int damaged = 0;
    for (int i = 0; i < r->res.nfaults; i++)
        damaged |= r->res.faults[i].spec->kind == CK_FAULT_CORRUPT_CHECKPOINT &&
                   r->res.faults[i].applied && !r->res.faults[i].failed;
    int gave_up = r->res.jm_ready && r->res.jm.state == CK_JOB_FAILED &&
                  (r->res.jm.failed_because == CK_JOBFAIL_RESTARTS_EXHAUSTED ||
                   (damaged && r->res.jm.failed_because == CK_JOBFAIL_NO_CHECKPOINT));
    ck_time bound = tmax(sc->workload.duration, last_fault_end(r)) + 10 * S +
                    2 * ck_cfg(&sc->cfg, CK_CFG_HB_TIMEOUT) + restart_wait(sc);
    out->bound_s = (double)bound / 1e9;
    const char *g = ck_guarantee_name(v->guarantee);
    /* What is wrong with the output is all the output faults' damage,
     * counted exactly (ck_run_judge_injected). */
    int explained = r->injected.faults > 0 && r->checker_ok;
    if (!r->res.jm_ready) {
        snprintf(out->why, sizeof(out->why), "the job manager never started");
    } else if (r->unexplained[0]) {
        /* Falling back past a committed checkpoint is allowed only past a
         * file the schedule damaged (ck_run_judge_fallbacks). */
        snprintf(out->why, sizeof(out->why), "%.399s", r->unexplained);
    } else if (r->checker_failure[0]) {
        /* The output faults' damage is a known answer: the check missed or
         * over-counted it (ck_run_judge_injected). */
        snprintf(out->why, sizeof(out->why), "the output check is wrong: %.370s",
                 r->checker_failure);
    } else if (finished && !v->ok && !explained) {
        snprintf(out->why, sizeof(out->why),
                 "the output broke its %s guarantee: %llu lost, %llu duplicated, %llu unexpected",
                 g, (unsigned long long)v->lost, (unsigned long long)v->duplicated,
                 (unsigned long long)v->unexpected);
    } else if (gave_up && mode == CK_NEMESIS_SAFETY) {
        if (!explained && (v->unexpected || (v->guarantee == CK_EXACTLY_ONCE && v->duplicated)))
            snprintf(out->why, sizeof(out->why),
                     "the job failed (%.200s) and its committed output broke its %s "
                     "guarantee: %llu duplicated, %llu unexpected",
                     r->res.jm.failure, g, (unsigned long long)v->duplicated,
                     (unsigned long long)v->unexpected);
        else {
            out->ok = 1;
            snprintf(out->why, sizeof(out->why),
                     "the job failed as the schedule allowed (%.200s); the output it committed "
                     "is right",
                     r->res.jm.failure);
        }
    } else if (!finished) {
        snprintf(out->why, sizeof(out->why), "the job did not finish: %.300s", r->res.jm.failure);
    } else if (mode == CK_NEMESIS_LIVENESS && r->res.jm.end > bound) {
        snprintf(out->why, sizeof(out->why),
                 "the job finished at %.3f s, after its bound %.3f s", (double)r->res.jm.end / 1e9,
                 out->bound_s);
    } else {
        out->ok = 1;
        if (mode == CK_NEMESIS_LIVENESS)
            snprintf(out->why, sizeof(out->why), "finished at %.3f s (bound %.3f s), %s held",
                     (double)r->res.jm.end / 1e9, out->bound_s, g);
        else if (explained)
            snprintf(out->why, sizeof(out->why),
                     "finished, %s held but for the damage the output faults injected, which "
                     "the output check counted exactly (%llu duplicated, %llu lost, %llu "
                     "unexpected, %llu wrong totals)",
                     g, (unsigned long long)r->injected.duplicated,
                     (unsigned long long)r->injected.lost,
                     (unsigned long long)r->injected.unexpected,
                     (unsigned long long)r->injected.wrong_totals);
        else
            snprintf(out->why, sizeof(out->why), "finished, %s held", g);
    }
}

cJSON *ck_nemesis_report(const ck_run *r, ck_nemesis_mode mode, const ck_nemesis_verdict *nv)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "mode", ck_nemesis_mode_name(mode));
    cJSON *ev = ck_nemesis_events_json(r->sc);
    if (ev)
        cJSON_AddItemToObject(o, "events", ev);
    cJSON_AddStringToObject(o, "verdict", nv->ok ? "ok" : "violation");
    cJSON_AddStringToObject(o, "why", nv->why);
    if (mode == CK_NEMESIS_LIVENESS)
        cJSON_AddNumberToObject(o, "bound_s", round(nv->bound_s * 1e6) / 1e6);
    else
        cJSON_AddNullToObject(o, "bound_s");
    return o;
}
