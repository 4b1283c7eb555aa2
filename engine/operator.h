/*
 * operator.h - the operators of one subtask, chained: records flow from
 * the head operator through direct calls to the chained ones, and leave the
 * chain through result partitions (one per outgoing edge).
 *
 * Operators: source (emits what the task reads from its topic), map,
 * filter, keyed aggregate (running count or sum per key, one update per
 * record), keyed tumbling event-time window (count or sum per key and
 * window, emitted when the watermark passes the window's end), buffer,
 * sink.
 *
 * A buffer keeps operator state (not keyed), as Flink's documented
 * BufferingSink (a CheckpointedFunction): the records it holds are its
 * split-distribute list state CK_BUFFER_LIST, one entry per record in the
 * element encoding (element.h), in arrival order. It passes them on, in
 * order, once it holds `count` of them, or at the maximum watermark (the
 * end of input). While it holds records it holds the watermark back too
 * (passed on after them), so that they are never late downstream. With
 * buffer_seen it also counts the records it saw, in union list state
 * CK_BUFFER_SEEN (one entry per subtask: u32 subtask | u64 count; on
 * restore subtask j sums the entries of old subtasks i with i % p == j,
 * as Flink's examples of union state pick their share).
 *
 * Keyed state lives in a state backend instance per keyed operator
 * (kstate.h), holding exactly the key groups of this subtask: an aggregate
 * keeps a value state of its running value per key, a window one of its
 * result and latest ingest time per key and window (the namespace). A window registers an event-time timer at
 * its maximum timestamp (end - 1) when its state is created; a watermark w
 * fires every timer <= w, in timestamp order, then moves on downstream.
 * A record whose window's maximum timestamp is <= the operator's watermark
 * is late: dropped and counted, as Flink does with zero allowed lateness.
 *
 * A record keeps its provenance (element.h) through map, filter and
 * aggregate; a window's result has the provenance CK_PROV_WINDOW.
 *
 * A sink does not write directly: it stages its output and the ingest time
 * of every record in the chain, and the task publishes the batch (and
 * measures latency) once the batch's CPU cost has been charged.
 */
#ifndef CK_OPERATOR_H
#define CK_OPERATOR_H

#include "graph.h"
#include "changelog.h"
#include "kstate.h"
#include "partition.h"
#include "snapshot.h"
#include "timers.h"

typedef struct ck_chain ck_chain;

typedef struct ck_op ck_op;

/*
 * A sink transaction waiting for its checkpoint. For the latency to commit
 * it keeps its records' ingest times counted per 2^CK_TXN_SHIFT ns (about
 * a millisecond), from bucket `base` on: bounded by how long the
 * transaction stays open, not by how many records it holds.
 */
#define CK_TXN_SHIFT 20
#define CK_TXN_MAX_BUCKETS (1u << 24) /* 4.9 hours; older ones share the first */
typedef struct ck_txn {
    uint64_t txn, cp;
    int64_t base;  /* ingest >> CK_TXN_SHIFT of cnt[0] */
    uint32_t *cnt; /* records per bucket */
    size_t nb, cap;
    uint64_t n;    /* records */
} ck_txn;

/* What an operator does with one record (chosen by kind at init). */
typedef int (*ck_op_fn)(ck_op *op, ck_rec *r);

struct ck_op {
    const ck_op_spec *spec;
    ck_chain *chain;
    ck_op_fn process;
    uint64_t nproc; /* records processed since the CPU was last charged */
    int nnext;
    struct ck_op *next[CK_MAX_OPS]; /* chained successors */
    int nrp;
    int rp[CK_MAX_OPS]; /* indices into chain->rps */
    /* keyed operators; hint: where the record being processed lives,
     * worked out ahead by the task (ck_chain_record_at), or NULL */
    ck_kgr kgr;
    const ck_keyloc *hint;
    ck_kstate *ks; /* its states, in the job's state backend (kstate.h) */
    ck_kstate_work charged; /* of ks->work, what was charged already */
    double heavy; /* what a byte of ks's files weighs, modelled (value_size: its
                   * native snapshots' weight over their bytes); 0 or 1: itself */
    ck_clog *clog;          /* state.changelog.enabled: ks writes into it */
    int64_t *scratch; /* a median window's values, sorted */
    size_t scratch_cap;
    ck_timerq timers;
    int64_t wm;
    /* sink: output id and what the batch staged */
    uint32_t sink_id;
    uint8_t *out;
    size_t out_len, out_cap;
    int64_t *ingest;
    size_t n_ingest, cap_ingest;
    /* sink with two-phase commit: the open transaction and the ingest times
     * of its records (latency is measured at commit), and the transactions
     * pre-committed at checkpoints, awaiting their checkpoint's completion */
    int two_phase;
    uint64_t txn;
    ck_txn open;
    int npend;
    ck_txn pend[CK_SNAP_MAX_PENDING];
    /* buffer: the records held (the list state's entries, owned), the
     * records seen, and whether a watermark waits for them */
    ck_oplist held;
    size_t held_cap;
    uint64_t seen;
    int wm_held;
};

#define CK_BUFFER_LIST "buffered"
#define CK_BUFFER_SEEN "seen"


/* The output a sink subtask writes to: operator index and subtask. */
static inline uint32_t ck_sink_id(int op_index, int subtask)
{
    return ((uint32_t)op_index << 16) | (uint32_t)subtask;
}

typedef struct ck_rp_out {
    ck_rp rp;
    const ck_edge *edge;
    uint16_t *kg_sub; /* hash edges: subtask of each key group, precomputed */
    int rr;           /* rebalance, rescale: the subpartition of the next record */
} ck_rp_out;

/* The subpartition record r goes to over o by its edge's partitioner: by
 * key group (hash; r's key hash set if it was not), round robin
 * (rebalance, rescale), the one (forward); broadcast edges send to every
 * subpartition, which the caller does. */
int ck_rp_out_route(ck_rp_out *o, ck_rec *r);

/* A slow_operator fault: operator `op` (its index in the job) costs
 * `factor` times its CPU per record from `from` to `to` (the run's time:
 * both backends' clocks start at the run's start). Overlapping ones on one
 * operator: the largest factor, as slow_cpu faults combine. */
typedef struct ck_op_slowdown {
    int op;
    ck_time from, to;
    double factor;
    int write; /* slow_sink: it multiplies the sink's write time, not its CPU */
} ck_op_slowdown;

struct ck_chain {
    const ck_graph *g;
    const ck_op_slowdown *slow; /* the job's slow_operator faults (ck_job_env) */
    int nslow;
    int vertex, subtask;
    int nops;
    ck_op ops[CK_MAX_OPS];
    int nrps;
    ck_rp_out *rps; /* owned by the task */
    uint64_t records_out; /* records leaving the subtask (network + sink) */
    uint64_t late_dropped;
    uint64_t state_entries;
    int keyed_head; /* the head operator keeps keyed state */
};

/* The keyed states operator s keeps (*n of them; none for an operator
 * that keeps no keyed state). */
const ck_state_desc *ck_op_states(const ck_op_spec *s, int *n);

/* Builds the chain of (vertex, subtask); rps are the task's partitions;
 * keyed state in backend `state_backend` (CK_BACKEND_*). */
/* Where a chain's keyed operators keep their state (NULL: the heap). */
typedef struct ck_chain_state {
    int type;              /* state.backend.type: CK_BACKEND_* */
    uint64_t write_buffer; /* state.backend.rocksdb.writebuffer.size */
    uint64_t target_file;  /* ...compaction.level.target-file-size-base */
    uint64_t level_base;   /* ...compaction.level.max-size-level-base */
    ck_kstate_rescale rescale; /* how a rescale rebuilds an instance (kstate.h) */
    ck_platform *plat;     /* opens the backends that do I/O (kstate_open) */
    uint32_t attempt;
    int changelog;         /* state.changelog.enabled: wrap it (changelog.h) */
} ck_chain_state;

/* Returns 0, CK_ENOMEM, or another CK_E* code with one line in err (a
 * backend that could not open). On failure every operator set up so far
 * is freed and c holds none (ck_chain_free on it does nothing). */
CK_MUST_CHECK
int ck_chain_init(ck_chain *c, const ck_graph *g, int vertex, int subtask,
                  ck_rp_out *rps, int nrps, const ck_chain_state *st, char *err, size_t errlen);
void ck_chain_free(ck_chain *c);

/* Feeds a record to the head operator. Returns 0, CK_ENOMEM. */
CK_MUST_CHECK
int ck_chain_record(ck_chain *c, ck_rec *r);

/* True when the head operator keeps keyed state (the three below apply). */
static inline int ck_chain_keyed(const ck_chain *c)
{
    return c->keyed_head;
}

/* Where record r's state lives in the keyed head operator. */
ck_keyloc ck_chain_locate(const ck_chain *c, const ck_rec *r);

/* Starts loading the state at l (a hint: changes nothing). */
void ck_chain_prefetch(const ck_chain *c, const ck_keyloc *l);

/* ck_chain_record, with where r's state lives worked out already (l from
 * ck_chain_locate; a location that is not r's is ignored). */
CK_MUST_CHECK
int ck_chain_record_at(ck_chain *c, ck_rec *r, const ck_keyloc *l);

/* The CPU cost (scenario flops) of the records processed since the last
 * call, which starts counting again; an operator slowed at `now`
 * (ck_op_slowdown) costs its factor times more. *wait_ns: the time the
 * sinks' external systems took to accept them (write_ns each, times a
 * slow_sink's factor). */
double ck_chain_take_flops(ck_chain *c, ck_time now, ck_time *wait_ns);

/*
 * Cost model of a state backend's own work (kstate.h's ck_kstate_work; 0
 * for the heap, whose accesses are part of an operator's cpu_flops):
 * RocksDB's gets and puts cost the operator's thread about a microsecond
 * and a half and one on a 1 Gflop/s core (memtable and block-cache hits,
 * WAL off: RocksDB's own db_bench figures for small values); flushing
 * and compacting run on a background thread, charged per byte written
 * (kstate.h's CK_STATE_FLUSH_FLOPS_PER_BYTE, CK_STATE_COMPACT_FLOPS_PER_BYTE).
 */
#define CK_STATE_READ_FLOPS 1500.0
#define CK_STATE_WRITE_FLOPS 1000.0

/* The background work of the state backends' flushes and compactions
 * since the last call, and of their rescale rebuilds (ck_kstate_work.rebuild,
 * by ck_kstate_rebuild_cost): CPU (flops, returned) and bytes read and
 * written on the local disk (*disk_bytes: a flush writes its bytes, a
 * compaction reads its inputs and writes as much back); *notes gets bit
 * CK_NOTE_STATE_FLUSH / CK_NOTE_STATE_COMPACTION (platform.h) when there
 * were any (NULL: not wanted). */
double ck_chain_take_background(ck_chain *c, uint64_t *disk_bytes, int *notes);

/* What one record costs the chain if every operator takes it: CPU flops
 * (returned) and its sinks' external systems' time (*wait_ns), with the
 * slowdowns in force at `now`: what bounds a task's step. */
double ck_chain_record_cost(const ck_chain *c, ck_time now, double *wait_ns);

/* The CPU cost of the records processed since ck_chain_take_flops, before
 * slowdowns: what the batch in progress will charge, about. */
static inline double ck_chain_pending_flops(const ck_chain *c)
{
    double f = 0;
    for (int k = 0; k < c->nops; k++)
        f += (double)c->ops[k].nproc * c->ops[k].spec->cpu_flops;
    return f;
}

/* The time the sinks' external systems will take for the records
 * processed since ck_chain_take_flops, before slowdowns. */
static inline ck_time ck_chain_pending_wait(const ck_chain *c)
{
    ck_time w = 0;
    for (int k = 0; k < c->nops; k++)
        w += (ck_time)c->ops[k].nproc * c->ops[k].spec->write_ns;
    return w;
}

/* Feeds a watermark to the head operator (and everything after it). */
CK_MUST_CHECK
int ck_chain_watermark(ck_chain *c, int64_t wm);

/* Clears a sink's staging after the task published it. */
static inline void ck_op_clear_output(ck_op *op)
{
    op->out_len = 0;
    op->n_ingest = 0;
}

/*
 * The synchronous phase of a snapshot: copy-on-write views of every keyed
 * operator's state and copies of its timers, copies of the buffers'
 * operator state, into cap (whose other parts
 * the task fills). `how` (0 for a savepoint: canonical views only):
 * CK_CAPTURE_CHANGELOG: an operator under the changelog leaves its entries
 * to its materialization and changelog; CK_CAPTURE_NATIVE: any other takes
 * its backend's native snapshot if it has one (an incremental checkpoint:
 * RocksDB's files). Returns 0 or CK_ENOMEM (cap is then released).
 */
#define CK_CAPTURE_NATIVE 1
#define CK_CAPTURE_CHANGELOG 2
CK_MUST_CHECK
int ck_chain_capture(ck_chain *c, ck_capture *cap, int how);

/*
 * Loads keyed state and timers from a snapshot: every entry whose key
 * group this subtask owns (all of them when the parallelism is unchanged),
 * and the operator state of its buffers (the source's is the task's).
 * Returns 0, CK_ECORRUPT (an entry's key is not in the key group the file
 * says, operator state of an operator that keeps none or a buffered entry
 * that is not a record, or the operators do not match), CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_chain_restore(ck_chain *c, const ck_snapshot *s);
/* The operator state entries the assignment dealt a subtask restoring at
 * another parallelism (coordinator.h ck_restore_chunk, assign.h), as one
 * old subtask's file gives them: of that file's lists, the chunks naming
 * old subtask `old` (nv chunks in v, any old subtask's), in their order.
 * applied counts the entries taken. */
struct ck_restore_chunk;
typedef struct ck_chain_deal {
    uint32_t old;
    const struct ck_restore_chunk *v;
    uint32_t nv;
    uint64_t applied;
} ck_chain_deal;

/* The same for one take of a restore at another parallelism (assign.h):
 * keyed entries and timers of the key groups in *only alone (NULL: every
 * one this subtask owns), and, when opstate, its buffers' operator state:
 * the entries deal gives (NULL: every list whole). Each list's chunks
 * are taken in order: split-distribute entries [first, first + n) are
 * appended to the records held; a union list (every old subtask's whole,
 * dealt to every new subtask) counts the records each old subtask saw,
 * the new subtask keeping old subtask k's when k % its parallelism is its
 * index. Over several files of several old subtasks the state
 * accumulates: nothing already restored is reset. CK_ECORRUPT also for
 * a chunk past its list's end. */
CK_MUST_CHECK
int ck_chain_restore_part(ck_chain *c, const ck_snapshot *s, const ck_kgr *only, int opstate,
                          ck_chain_deal *deal);

/* Job operator op in this chain, or NULL. */
ck_op *ck_chain_op(ck_chain *c, int op);
/* The state backend instance of job operator op in this chain, or NULL. */
ck_kstate *ck_chain_kstate(ck_chain *c, int op);

/* ---- two-phase commit sinks ---------------------------------------------- */

/* Records that a batch of n records went into the open transaction. */
CK_MUST_CHECK
int ck_sink_txn_add(ck_op *sink, const int64_t *ingest, size_t n);

/*
 * Pre-commits the open transaction for checkpoint cp and opens the next.
 * Returns 0, CK_ETOOBIG (too many transactions await commit), CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_sink_precommit(ck_op *sink, uint64_t cp);

/*
 * Takes the oldest pre-committed transaction whose checkpoint is <= cp
 * (all of them with cp = UINT64_MAX): returns 1 and moves it to *out (the
 * caller commits it and frees out->ingest), or 0.
 */
CK_MUST_CHECK
int ck_sink_take_committable(ck_op *sink, uint64_t cp, ck_txn *out);

/* Keyed state entries held by the chain's operators. */
uint64_t ck_chain_state_entries(const ck_chain *c);

#endif
