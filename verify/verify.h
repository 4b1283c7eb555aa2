/*
 * verify.h - is the output right? The reference computation runs the job's
 * operators over the whole generated input as a plain single-threaded
 * loop (no partitions, buffers, channels or time), with operator functions
 * of its own (refops.h): it calls nothing in engine/ but the record
 * decoder it reads the sinks' output with, so that a bug in the engine's
 * functions cannot change the expected output along with the real one.
 *
 * Every output record carries its provenance (element.h): the source
 * partition and offset of the input record that caused it, or, for a
 * window's result, a marker (the window is named by key and end time).
 * Each input record that passes the filters on its way to a sink causes
 * exactly one output there, and each (key, window) one result, so an
 * expected output is identified by (sink, key, event time, provenance).
 *
 * Exactly once, the output must equal the reference's as multisets of
 * (sink, key, event time, value, provenance):
 *
 *   lost       = expected occurrences missing from the output
 *   duplicated = occurrences of expected records beyond their count
 *   unexpected = output records the reference never produced
 *
 * At least once, every expected output must be received at least once:
 * one missing is lost, even when other outputs of its key arrived (a drop
 * and a duplicate do not cancel out); copies beyond the first are counted
 * as duplicated and allowed. A record replayed after a restore may be
 * counted twice by a running aggregate or a window, so for a sink after an
 * aggregate or window an output may carry more than the expected value,
 * never less (less is unexpected, and the output counts as lost when no
 * copy was right). That assumes replays only add: the values aggregated
 * are not negative (counts; sums of the workload's values, scaled by a
 * factor that is not negative) and no filter follows an aggregate or
 * window (which outputs pass it would depend on replayed values). A job
 * outside that may be reported wrong at least once when it is not.
 * Records passed through without aggregation must be exact.
 *
 * A running aggregate behind an edge that may reorder a key's records
 * (rebalance, broadcast, rescale to more consumers) emits values that
 * depend on arrival order, as in Flink. Its outputs are matched by
 * identity without their values, and for each key the reference's final
 * value (the same in any order: counts and sums commute) must be carried
 * by some output of that key (at least once: that value or more);
 * wrong_totals counts the keys where none does. Every value must also be
 * one some arrival order gives: where each record of the key adds to it
 * (counts; sums of values that are not negative), the values rise from
 * what the first record to arrive adds, so each lies within [the least
 * one record of the key adds, the final value] (at least once, when a
 * replay may count a record twice: at least the former). A value outside
 * is unexpected, and the output it stood for is lost unless a copy was
 * right. A key some record takes away from has no such bounds. A
 * broadcast edge hands each consumer subtask a copy, and the reference
 * does the same.
 *
 * Every received record is an expected occurrence, a duplicate or
 * unexpected: received = expected - lost + duplicated + unexpected, and
 * no counter is computed by a subtraction that could wrap.
 *
 * The reference assumes no record is late (the watermark bound covers the
 * generator's disorder); records the engine dropped as late therefore show
 * up as lost or unexpected, and are reported separately by the run. Which
 * subtask of a sink wrote a record, and in what order, is not checked.
 *
 * Rescales. A job that changed its parallelism ran as generations of its
 * graph (graph.h), each from a cut: the snapshot it restored, which says
 * per source partition the offset it read from. The reference does not
 * depend on parallelism: it reads every partition whole, keeps one state
 * per key (not per subtask or key group) and does not look at which sink
 * subtask wrote what, so the same input gives the same expected output at
 * any parallelism and across any rescale, and a key whose state a rescale
 * lost shows as a running value that restarts (below what the reference
 * has: lost and unexpected, or, behind a reordering edge, a final value
 * never reached), one whose state it doubled as a value that jumps
 * (exactly once: unexpected). Where the output does depend on
 * parallelism, the reference takes each generation's:
 *   - a broadcast edge makes as many copies of a record as its consumer
 *     had subtasks in the generation that processed the record: the one
 *     whose cut the record's source offset is at or after (records still
 *     in flight at an unaligned cut are not: broadcast edges never carry
 *     channel state). A window's result, which a watermark fires in
 *     whichever generation it passed the window's end, and a record
 *     around a cut the run could not say, may have the copies of any
 *     generation it could be in: between the fewest and the most, the
 *     copies beyond the fewest optional (an aggregate, window or distinct
 *     behind such a broadcast edge counts only the fewest: the job is
 *     then outside what the check decides);
 *   - a rescale edge reorders a key's records when, in any generation, it
 *     had more consumers than producers.
 * ck_verdict.first_wrong names the first wrong output (the one caused by
 * the earliest input), its sink and key: where a key's state went wrong.
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
    uint64_t wrong_totals; /* keys whose final running value no output carried (below) */
    int ok;
    /* Not ok: what is wrong first ("sink \"s\" key \"k\": ..."), the wrong
     * output caused by the earliest input (a window's or a final value's
     * after every record's); "" when ok */
    char first_wrong[320];
} ck_verdict;

/* One generation of the job the run went through (a rescale starts the
 * next): its graph, of which only the operators' parallelism may differ
 * from the first's, and its cut: per source partition, the offset of the
 * first record it read (the snapshot it restored); NULL for the first
 * generation, or when the run could not say. */
typedef struct ck_verify_gen {
    const ck_graph *g;
    const int64_t *from;
} ck_verify_gen;

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

/* The same over the ngens generations gens[] the run went through, in
 * order (above); ck_verify is this with g alone. CK_EINVAL with a line in
 * err when the generations are not of one job. */
int ck_verify_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w,
                   const ck_sinkout *out, ck_guarantee guarantee, int partial, ck_verdict *v,
                   char *err, size_t errlen);

const char *ck_guarantee_name(ck_guarantee g);

/* How the output of a sink is compared (above). */
typedef enum ck_grouping {
    CK_GROUPING_EXACT = 0,    /* as multisets of whole records, value included */
    CK_GROUPING_AT_LEAST = 1, /* at least once after an aggregate or window: the value or more */
    CK_GROUPING_RUNNING = 2,  /* a running aggregate behind a reordering edge: by identity
                               * without the value; the final value and the bounds checked */
    CK_GROUPING_FIRST = 3,    /* a distinct behind a reordering edge: by (key, value) */
} ck_grouping;

/* The grouping of sink (an operator index of g) under guarantee. */
ck_grouping ck_verify_grouping(const ck_graph *g, int sink, ck_guarantee guarantee);
ck_grouping ck_verify_grouping_gens(const ck_verify_gen *gens, int ngens, int sink,
                                    ck_guarantee guarantee);

/* The reference's running values of a CK_GROUPING_RUNNING sink, per key
 * id: whether the key reached the sink (has), its final value, and
 * whether its values are bounded (bounded: every record added to it) by
 * least, the least one record added. */
typedef struct ck_running {
    int64_t nkeys;
    uint8_t *has, *bounded;
    int64_t *final, *least;
} ck_running;

/* Computes rv for sink (the reference computation over w). 0, CK_ENOMEM
 * or CK_EINVAL (not such a sink). */
int ck_verify_running(const ck_graph *g, const ck_workload *w, int sink, ck_running *rv);
int ck_verify_running_gens(const ck_verify_gen *gens, int ngens, const ck_workload *w, int sink,
                           ck_running *rv);
void ck_running_free(ck_running *rv);

#endif
