/*
 * injected.h - the known answer: what the output check must find when the
 * run's timeline damaged the sinks' committed output on purpose (the
 * output faults: sink_duplicate, sink_drop, sink_corrupt; io/sinkfs.h).
 * As Jepsen validates its checkers with histories known to be bad, a run
 * that injected such damage checks the checker: the counts of the
 * verdict (verify.h) must be the damage injected, no more and no less.
 *
 * The expected counts come from the records each fault touched (the copy
 * it committed again, the transaction it dropped, the record it altered)
 * and the sink's grouping, by rules written here apart from the
 * comparison in verify.c, so that a comparison that stops counting
 * something shows up as a mismatch. With the engine right, exactly once:
 *
 *   duplicate of n records: n duplicated, whatever the grouping;
 *   drop of n records:      n lost;
 *   corrupt of one record:  its value lowered by 2^62, so no grouping
 *                           takes it for a right one: 1 unexpected and
 *                           1 lost, except a window over running values
 *                           behind a reordering edge (its value is never
 *                           checked) and a running value of a key without
 *                           bounds (a record of it took something away);
 *   and for a running aggregate behind a reordering edge, a key whose
 *   final value the dropped or altered records carried, and no other
 *   output of it carries, is a wrong total.
 *
 * At least once, where copies may be legitimate: the unexpected count is
 * the same, duplicated is at least the injected, and lost and wrong
 * totals at most (a replayed copy of a dropped record is right). Output
 * that is partial (or a job that failed) has more lost than injected.
 */
#ifndef CK_INJECTED_H
#define CK_INJECTED_H

#include "sinkfs.h"
#include "verify.h"

/* One output fault as it happened: what it did and the records it touched
 * (ck_sinkfs_fault_records: one stream, the sink subtask's). */
typedef struct ck_injected_fault {
    ck_sinkfs_fault what;
    const ck_sinkout *records;
} ck_injected_fault;

/* What the verdict must show. */
typedef struct ck_injected {
    int faults;    /* output faults that damaged committed output */
    uint64_t duplicated, lost, unexpected, wrong_totals;
    uint64_t records; /* records the faults touched */
} ck_injected;

/*
 * The counts the output check must find for faults f[0..n) of a run of g
 * over w whose committed output (as damaged) is out, under guarantee;
 * partial as ck_verify's. Returns 0, CK_ENOMEM, or CK_ECORRUPT (a fault's
 * records do not parse), with one line in err.
 */
int ck_injected_expect(const ck_graph *g, const ck_workload *w, const ck_sinkout *out,
                       ck_guarantee guarantee, int partial, const ck_injected_fault *f, int n,
                       ck_injected *e, char *err, size_t errlen);
/* The same for a run over generations gens[0..ngens) (ck_verify_gens). */
int ck_injected_expect_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w,
                            const ck_sinkout *out, ck_guarantee guarantee, int partial,
                            const ck_injected_fault *f, int n, ck_injected *e, char *err,
                            size_t errlen);

/*
 * Whether verdict v explains the injected damage e exactly (at least once,
 * within its bounds). whole: the output is all the job's (it finished, not
 * partial); otherwise lost and wrong totals are not compared. Returns 1
 * when it does; else 0, with one line in why naming the count that is off.
 */
int ck_injected_judge(const ck_injected *e, const ck_verdict *v, int whole, char *why,
                      size_t len);

#endif
