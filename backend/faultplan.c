#include "faultplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "taskmanager.h"
#include "wire.h"

static int in_force(const ck_fault_run *r)
{
    return r->applied && !r->ended && !r->failed;
}

int ck_plan_init(ck_plan *p, const ck_fault *faults, int n, int ntm, ck_fault_run *runs)
{
    memset(p, 0, sizeof(*p));
    p->faults = faults;
    p->runs = runs;
    p->n = n;
    p->ntm = ntm;
    p->nh = ntm + 2;
    size_t nh = (size_t)p->nh;
    p->due = calloc((size_t)n + 1, sizeof(*p->due));
    p->cut = calloc(nh * nh, sizeof(*p->cut));
    p->cpu = calloc(nh, sizeof(*p->cpu));
    p->cpu_by = calloc(nh, sizeof(*p->cpu_by));
    p->bw = calloc(nh, sizeof(*p->bw));
    p->lat = calloc(nh, sizeof(*p->lat));
    p->down = calloc((size_t)ntm + 1, 1);
    if (!p->due || !p->cut || !p->cpu || !p->cpu_by || !p->bw || !p->lat || !p->down) {
        ck_plan_free(p);
        return CK_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (faults[i].moment == CK_MOMENT_NONE) {
            p->due[i] = faults[i].at;
        } else {
            p->due[i] = CK_TIME_NEVER;
            p->ntriggered++;
        }
    }
    ck_plan_conditions(p);
    return CK_OK;
}

void ck_plan_free(ck_plan *p)
{
    free(p->due);
    free(p->cut);
    free(p->cpu);
    free(p->cpu_by);
    free(p->bw);
    free(p->lat);
    free(p->down);
    memset(p, 0, sizeof(*p));
}

int ck_plan_fault_cuts(const ck_fault *f, int a, int b)
{
    if (a == b)
        return 0;
    if (f->kind == CK_FAULT_LINK_DOWN)
        return a == f->host || b == f->host;
    return ck_fault_cuts(f, a, b);
}

/* When fault i next changes: it starts, or it ends (duration after it
 * started: a timed fault's end is on the timeline, a triggered one's
 * follows its start); CK_TIME_NEVER when neither is to come. */
static ck_time fault_next(const ck_plan *p, int i, int *end)
{
    const ck_fault_run *r = &p->runs[i];
    const ck_fault *f = &p->faults[i];
    *end = r->applied;
    if (!r->applied)
        return p->due[i];
    if (r->ended || r->failed || f->duration <= 0)
        return CK_TIME_NEVER;
    return f->moment == CK_MOMENT_NONE ? ck_fault_end(f) : r->applied_at + f->duration;
}

ck_time ck_plan_next(const ck_plan *p, int *which, int *end, int *waiting)
{
    ck_time next = CK_TIME_NEVER;
    *which = -1;
    *end = 0;
    *waiting = 0;
    for (int i = 0; i < p->n; i++) {
        int e;
        ck_time t = fault_next(p, i, &e);
        *waiting += !p->runs[i].applied && t == CK_TIME_NEVER;
        if (t < next) {
            next = t;
            *which = i;
            *end = e;
        }
    }
    return next;
}

int ck_plan_moment(ck_plan *p, ck_moment m, uint64_t id, int has_id, ck_time now)
{
    if (!p->ntriggered || m <= CK_MOMENT_NONE || m >= CK_MOMENT_COUNT)
        return 0;
    if (has_id) {
        if (p->seen_id[m] && p->last_id[m] == id)
            return 0; /* the same checkpoint, to another subtask */
        p->seen_id[m] = 1;
        p->last_id[m] = id;
    }
    p->count[m]++;
    int woke = 0;
    for (int i = 0; i < p->n; i++) {
        const ck_fault *f = &p->faults[i];
        if (f->moment == m && f->nth == p->count[m] && p->due[i] == CK_TIME_NEVER) {
            p->due[i] = now + f->at;
            woke = 1;
        }
    }
    return woke;
}

static void recut(ck_plan *p, const ck_fault *f, int delta)
{
    for (int a = 0; a < p->nh; a++)
        for (int b = 0; b < p->nh; b++)
            if (ck_plan_fault_cuts(f, a, b))
                p->cut[a * p->nh + b] += delta;
}

void ck_plan_conditions(ck_plan *p)
{
    for (int h = 0; h < p->nh; h++) {
        p->cpu[h] = 1.0;
        p->cpu_by[h] = -1;
        p->bw[h] = 1.0;
        p->lat[h] = 0;
    }
    for (int i = 0; i < p->n; i++) {
        const ck_fault *f = &p->faults[i];
        if (!in_force(&p->runs[i]) || f->host < 0 || f->host >= p->nh)
            continue;
        if (f->kind == CK_FAULT_SLOW_CPU && f->factor < p->cpu[f->host]) {
            p->cpu[f->host] = f->factor;
            p->cpu_by[f->host] = i;
        } else if (f->kind == CK_FAULT_SLOW_LINK) {
            if (f->factor < p->bw[f->host])
                p->bw[f->host] = f->factor;
            p->lat[f->host] += f->latency;
        }
    }
}

/* Fault f comes into force (delta 1) or out of it (-1). */
static void change(ck_plan *p, const ck_fault *f, int delta)
{
    switch (f->kind) {
    case CK_FAULT_CRASH:
        p->down[f->host] = delta > 0;
        break;
    case CK_FAULT_LINK_DOWN:
    case CK_FAULT_PARTITION:
        recut(p, f, delta);
        break;
    case CK_FAULT_SLOW_CPU:
    case CK_FAULT_SLOW_LINK:
        ck_plan_conditions(p);
        break;
    default:
        break;
    }
}

void ck_plan_start(ck_plan *p, int i, ck_time now)
{
    ck_fault_run *r = &p->runs[i];
    const ck_fault *f = &p->faults[i];
    r->applied = 1;
    r->applied_at = now;
    if (f->kind == CK_FAULT_CRASH && (f->host < 0 || f->host >= p->ntm))
        ck_plan_failed(p, i, "no such task manager");
    else if (f->kind == CK_FAULT_CRASH && p->down[f->host])
        /* Down already (an earlier crash): this one neither crashes nor
         * restarts it. */
        ck_plan_failed(p, i, "the host was down already");
    else
        change(p, f, 1);
}

void ck_plan_end(ck_plan *p, int i, ck_time now)
{
    ck_fault_run *r = &p->runs[i];
    if (!in_force(r))
        return;
    r->ended = 1;
    r->ended_at = now;
    change(p, &p->faults[i], -1);
}

void ck_plan_failed(ck_plan *p, int i, const char *why)
{
    ck_fault_run *r = &p->runs[i];
    const ck_fault *f = &p->faults[i];
    if (in_force(r) && (f->kind == CK_FAULT_LINK_DOWN || f->kind == CK_FAULT_PARTITION))
        recut(p, f, -1);
    r->failed = 1;
    snprintf(r->detail, sizeof(r->detail), "%s", why);
    if (f->kind == CK_FAULT_SLOW_CPU || f->kind == CK_FAULT_SLOW_LINK)
        ck_plan_conditions(p);
}

int ck_plan_msg_moment(uint32_t src, const uint8_t *msg, size_t len, ck_moment *m, uint64_t *id)
{
    if (len >= CK_WIRE_HDR && msg[0] == CK_MSG_TASK_FINISHED && src >= CK_EP_TASK0 &&
        src < CK_EP_CLIENT) {
        *m = CK_MOMENT_SUBTASK_FINISHED;
        *id = src;
        return 1;
    }
    if (src != CK_EP_JM || len < CK_WIRE_HDR + 8)
        return 0;
    if (msg[0] == CK_MSG_DEPLOY) {
        /* a rescale's: of a generation after the first, counted once
         * (its DEPLOYs to every task manager, and a restart of it, have
         * one id) */
        int gen = ck_tm_deploy_generation(msg + CK_WIRE_HDR, len - CK_WIRE_HDR);
        if (gen <= 0)
            return 0;
        *m = CK_MOMENT_RESCALE_DEPLOYED;
        *id = (uint64_t)gen;
        return 1;
    }
    if (msg[0] == CK_MSG_CP_TRIGGER)
        *m = CK_MOMENT_CHECKPOINT_TRIGGERED;
    else if (msg[0] == CK_MSG_CP_COMPLETE)
        *m = CK_MOMENT_CHECKPOINT_COMPLETED;
    else
        return 0;
    *id = ck_get_u64(msg + CK_WIRE_HDR);
    return 1;
}

#define CK_INV_MODULE "faultplan"

int ck_plan_check(const ck_plan *p, ck_inv *v)
{
    if (!p->cut)
        return 0; /* not set up */
    for (int a = 0; a < p->nh; a++)
        for (int b = 0; b < p->nh; b++) {
            int n = 0;
            for (int i = 0; i < p->n; i++) {
                const ck_fault *f = &p->faults[i];
                n += in_force(&p->runs[i]) &&
                     (f->kind == CK_FAULT_LINK_DOWN || f->kind == CK_FAULT_PARTITION) &&
                     ck_plan_fault_cuts(f, a, b);
            }
            CK_INV(v, 1, p->cut[a * p->nh + b] == n,
                   "hosts %d and %d: cut by %d faults in force, counted %d", a, b, n,
                   p->cut[a * p->nh + b]);
        }
    for (int h = 0; h < p->nh; h++) {
        double cpu = 1.0, bw = 1.0;
        ck_time lat = 0;
        for (int i = 0; i < p->n; i++) {
            const ck_fault *f = &p->faults[i];
            if (!in_force(&p->runs[i]) || f->host != h)
                continue;
            if (f->kind == CK_FAULT_SLOW_CPU && f->factor < cpu)
                cpu = f->factor;
            else if (f->kind == CK_FAULT_SLOW_LINK) {
                bw = f->factor < bw ? f->factor : bw;
                lat += f->latency;
            }
        }
        CK_INV(v, 2, p->cpu[h] == cpu && p->bw[h] == bw && p->lat[h] == lat,
               "host %d: cpu %g, bandwidth %g, latency %lld ns in force; %g, %g, %lld kept", h,
               cpu, bw, (long long)lat, p->cpu[h], p->bw[h], (long long)p->lat[h]);
    }
    for (int h = 0; h < p->ntm; h++) {
        int crashed = 0;
        for (int i = 0; i < p->n; i++)
            crashed |= p->faults[i].kind == CK_FAULT_CRASH && p->faults[i].host == h &&
                       in_force(&p->runs[i]);
        CK_INV(v, 3, !p->down[h] == !crashed, "tm%d: %s, %s", h, p->down[h] ? "down" : "up",
               crashed ? "a crash in force" : "no crash in force");
    }
    for (int i = 0; i < p->n; i++) {
        const ck_fault *f = &p->faults[i];
        if (f->moment <= CK_MOMENT_NONE || f->moment >= CK_MOMENT_COUNT)
            continue;
        CK_INV(v, 4, (p->due[i] != CK_TIME_NEVER) == (p->count[f->moment] >= f->nth),
               "event %d: waits for occurrence %d of its moment, %d so far, %s", i, f->nth,
               p->count[f->moment], p->due[i] == CK_TIME_NEVER ? "not due" : "due");
    }
    return 0;
}
