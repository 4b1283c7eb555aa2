#include "memory.h"

#include <unistd.h>

#include "element.h"
#include "workload.h"

/* Per input record: its place in the topic (append time, event time, key
 * id, value). */
#define TOPIC_BYTES 24.0
/* Per output record: the verifier's expected and received tuples. */
#define VERIFY_BYTES 64.0
/* Per output record in the sinks' streams, besides its key: the element
 * prefix, the fixed part of a record, and room for provenance. */
#define OUTPUT_BYTES ((double)(CK_ELEM_PREFIX + CK_REC_FIXED) + 16.0)
/* Per key: its text, offset and partition, and a Zipf table; per key that
 * has records, its state in each keyed operator and in the reference
 * computation. */
#define KEY_BYTES 32.0
#define KEY_STATE_BYTES 192.0
/* Per channel (a producing and a consuming subtask of an edge): its state at
 * both ends and its share of the buffers in flight (8 KiB measured with
 * 256 x 256 subtasks). */
#define CHANNEL_BYTES 8192.0
/* SimGrid, the engine's buffers and the rest that does not grow. */
#define FIXED_BYTES (256.0 * 1024 * 1024)

/* At most how many records sink `k` receives for `records` input records:
 * the share its filters keep, and for a window after them, a result per
 * key and window. */
static double sink_outputs(const ck_scenario *sc, int k, double records)
{
    const ck_job_spec *job = &sc->graph.spec;
    double n = records;
    for (int i = job->ops[k].input; i >= 0; i = job->ops[i].input) {
        const ck_op_spec *o = &job->ops[i];
        if (o->kind == CK_OP_FILTER) {
            n *= (double)o->filter_keep_ppm / 1e6;
        } else if (o->kind == CK_OP_WINDOW && o->window_ms > 0) {
            double windows = (double)sc->workload.duration / 1e6 / (double)o->window_ms + 2;
            double most = windows * (double)sc->workload.keys;
            if (most < n)
                n = most;
        }
    }
    return n;
}

void ck_mem_estimate_run(const ck_scenario *sc, ck_mem_estimate *e)
{
    const ck_job_spec *job = &sc->graph.spec;
    const ck_workload_spec *w = &sc->workload;
    /* Poisson arrivals vary about their mean: leave room. */
    double mean = ck_workload_expected_records(w);
    double records = mean * (w->poisson ? 1.05 : 1.0);
    double keylen = (double)ck_workload_key_bytes(w->keys) / (double)w->keys;
    double outputs = 0;
    int keyed = 0;
    for (int i = 0; i < job->nops; i++) {
        if (job->ops[i].kind == CK_OP_SINK)
            outputs += sink_outputs(sc, i, records);
        keyed += ck_op_keyed(job->ops[i].kind);
    }
    e->records = mean;
    e->outputs = outputs;
    /* A hash edge connects every producer to every consumer. A rescale
     * (of the timeline) deploys the job at its own parallelism: the
     * channels of the widest generation. */
    double channels = 0;
    for (int i = 0; i < sc->graph.ne; i++) {
        const ck_edge *ed = &sc->graph.e[i];
        double up = sc->graph.v[ed->src_v].parallelism, down = ed->dst_parallelism;
        channels += ed->ship == CK_SHIP_HASH ? up * down : down;
    }
    for (int f = 0; f < sc->nfaults; f++) {
        const ck_fault *ft = &sc->faults[f];
        if (ft->kind != CK_FAULT_RESCALE)
            continue;
        double c = 0;
        for (int k = 0; k < job->nops && k < CK_FAULT_MAX_OPS; k++) {
            int in = job->ops[k].input;
            if (in < 0 || (job->ops[k].ship == CK_SHIP_FORWARD && ft->par[k] == ft->par[in]))
                continue; /* a source, or chained to its input */
            c += job->ops[k].ship == CK_SHIP_HASH ? (double)ft->par[in] * ft->par[k]
                                                  : (double)ft->par[k];
        }
        if (c > channels)
            channels = c;
    }
    /* Keys have state once a record of theirs arrives. */
    double keys = (double)w->keys, used = records < keys ? records : keys;
    e->bytes = FIXED_BYTES + channels * CHANNEL_BYTES + records * TOPIC_BYTES +
               outputs * (VERIFY_BYTES + OUTPUT_BYTES + keylen) + keys * (KEY_BYTES + keylen) +
               used * KEY_STATE_BYTES * (keyed + 1);
}

double ck_mem_machine(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}
