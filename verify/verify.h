/*
 * verify.h - is the output right? The reference computation runs the job's
 * operators over the whole generated input as a plain single-threaded
 * loop (no partitions, buffers, channels or time), and the result is
 * compared with what the sinks wrote, as multisets of (sink, key, event
 * time, value):
 *
 *   lost       = expected occurrences missing from the output
 *   duplicated = occurrences of expected records beyond their count
 *   unexpected = output records the reference never produced
 *
 * At least once, records may be processed twice, so a running aggregate
 * can overshoot and a window can over-count. Then outputs are compared by
 * group instead: per (sink, key) for a running aggregate, per (sink, key,
 * window) for a window, an expected record is lost only when no output of
 * its group reached its value; outputs beyond what is expected count as
 * duplicated; groups the reference never produced are unexpected.
 * Records passed through without aggregation are compared one by one.
 *
 * The reference assumes no record is late (the watermark bound covers the
 * generator's disorder); records the engine dropped as late therefore show
 * up as lost or unexpected, and are reported separately by the run.
 */
#ifndef CK_VERIFY_H
#define CK_VERIFY_H

#include "graph.h"
#include "sinkout.h"
#include "workload.h"

typedef enum ck_guarantee {
    CK_EXACTLY_ONCE, /* every expected record exactly once */
    CK_AT_LEAST_ONCE /* nothing lost; duplicates counted, allowed */
} ck_guarantee;

typedef struct ck_verdict {
    ck_guarantee guarantee;
    int partial; /* the run produced part of the job's output: lost is allowed */
    uint64_t expected, received;
    uint64_t lost, duplicated, unexpected;
    int ok;
} ck_verdict;

/*
 * Computes the reference output of job g over workload w, compares it with
 * out and fills v. Returns 0, CK_ENOMEM, or CK_ECORRUPT (an output stream
 * does not parse; err says which).
 *
 * partial: the output is only part of the job's (the job stopped with a
 * savepoint, or started from one without the output from before it); what
 * is there must still be right, and what is missing is counted as lost
 * without failing the check.
 */
int ck_verify(const ck_graph *g, const ck_workload *w, const ck_sinkout *out,
              ck_guarantee guarantee, int partial, ck_verdict *v, char *err, size_t errlen);

const char *ck_guarantee_name(ck_guarantee g);

#endif
