/*
 * faultplan.h - the events timeline as it plays out, and the conditions
 * the faults in force put on the cluster: one policy for both backends.
 *
 * A backend owns the clock and the hosts; the plan tells it when the next
 * fault starts or ends and, once the backend has started or ended it,
 * what is in force. The conditions are a pure function of which faults
 * are in force (ck_plan_conditions), combined one way for both backends:
 *   - slow_cpu on one host: the lowest factor in force (the slowest wins);
 *   - slow_link on one host: the lowest bandwidth factor in force, and the
 *     sum of the latencies added (each delays what crosses the link);
 *   - link_down and partition: a pair of hosts is cut while at least one
 *     fault in force cuts it (a count per ordered pair, so that overlapping
 *     cuts end cleanly); link_down cuts its host from every other host;
 *   - crash: the task manager is down until it restarts.
 *
 * Hosts are numbered as in faults.h: task managers 0..ntm-1, the job
 * manager ntm, the store ntm+1.
 *
 * Each fault is, in its ck_fault_run:
 *
 *   PENDING --due (its time, or `at` after its moment's nth occurrence)--> ACTIVE
 *   ACTIVE  --its duration passed-->                                        ENDED
 *   ACTIVE  --the backend could not apply it (failed)-->                    done
 *   (instant faults, and those for good, stay ACTIVE: nothing ends them)
 *
 * Invariants (ck_plan_check):
 *   (1) cut[a][b] counts the ACTIVE, not failed, faults that cut a from b;
 *   (2) cpu, bw and lat are as the rules above make them from those same
 *       faults;
 *   (3) a task manager is down exactly while a crash of it is in force;
 *   (4) a triggered fault is due exactly once, at its moment's nth
 *       occurrence (a checkpoint's messages to many subtasks are one
 *       occurrence): it has a due time iff its moment occurred n times.
 */
#ifndef CK_FAULTPLAN_H
#define CK_FAULTPLAN_H

#include "backend.h"
#include "invariant.h"

typedef struct ck_plan {
    const ck_fault *faults;
    ck_fault_run *runs; /* the result's records, one per fault */
    int n, ntm, nh;     /* faults; task managers; hosts (ntm + 2) */
    /* when each fault is due: its time, or CK_TIME_NEVER while its moment has not come */
    ck_time *due;
    int ntriggered;
    int count[CK_MOMENT_COUNT];
    uint64_t last_id[CK_MOMENT_COUNT];
    int seen_id[CK_MOMENT_COUNT];
    /* the conditions in force */
    int *cut;          /* nh * nh: faults cutting a from b */
    double *cpu;       /* nh: speed factor (1: not slowed) */
    int *cpu_by;       /* nh: the fault that sets it, or -1 */
    double *bw;        /* nh: bandwidth factor of the host's link (1: not slowed) */
    ck_time *lat;      /* nh: latency added to the host's link */
    uint8_t *down;     /* ntm: crashed and not back */
} ck_plan;

/* runs: n records, their spec set (ck_backend_result_init). 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_plan_init(ck_plan *p, const ck_fault *faults, int n, int ntm, ck_fault_run *runs);
void ck_plan_free(ck_plan *p);

/* 1 when the fault cuts host a from host b (link_down: its host from all). */
int ck_plan_fault_cuts(const ck_fault *f, int a, int b);

/* 1 when a and b are cut from each other now. */
static inline int ck_plan_is_cut(const ck_plan *p, int a, int b)
{
    return p->cut && a >= 0 && b >= 0 && a < p->nh && b < p->nh && p->cut[a * p->nh + b] > 0;
}

/*
 * The next change of the timeline: fault *which starts (*end = 0) or ends
 * (*end = 1) at the time returned; ties go in timeline order.
 * CK_TIME_NEVER (and *which = -1) when none is known; *waiting counts the
 * faults still waiting for their moment.
 */
ck_time ck_plan_next(const ck_plan *p, int *which, int *end, int *waiting);

/* A moment of the run happened at `now` (id: the checkpoint's, when
 * has_id). 1 when it made a fault due. */
int ck_plan_moment(ck_plan *p, ck_moment m, uint64_t id, int has_id, ck_time now);

/* The moment a message sent by endpoint src is, if any (1; *m and *id
 * set): the job manager's trigger of a checkpoint at a source, or its
 * completion on the way to a subtask (*id: the checkpoint's), or a
 * subtask's report that it finished (*id: its endpoint, which reports
 * that once). Both backends watch the messages they carry with it. */
int ck_plan_msg_moment(uint32_t src, const uint8_t *msg, size_t len, ck_moment *m, uint64_t *id);

/* Fault i starts or ends now: its record, and the conditions. A backend
 * that then cannot apply a started fault calls ck_plan_failed. */
void ck_plan_start(ck_plan *p, int i, ck_time now);
void ck_plan_end(ck_plan *p, int i, ck_time now);
void ck_plan_failed(ck_plan *p, int i, const char *why);

/* Recomputes the conditions from the faults in force (all of them but
 * the crashes' down flags, which follow start and end). */
void ck_plan_conditions(ck_plan *p);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT.
 * O(faults x hosts^2). */
CK_MUST_CHECK
int ck_plan_check(const ck_plan *p, ck_inv *v);

#endif
