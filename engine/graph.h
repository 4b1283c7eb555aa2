/*
 * graph.h - the job graph: operators as the user wrote them (ck_job_spec),
 * and the graph the runtime executes (ck_graph): operators chained into
 * vertices, vertices joined by edges, and the placement of every subtask.
 *
 * Chaining follows Flink's rule: an operator joins its input's vertex when
 * the edge is forward, the parallelisms are equal and chaining is enabled.
 * A keyed operator (aggregate, window) is always fed by a hash edge and so
 * always heads its vertex.
 *
 * Numbering: subtask i of vertex v has the global index v.base + i. Every
 * attempt of the job (a restart is a new attempt) has its own endpoints:
 * subtask g of attempt a is CK_EP_TASK0 + a * ep_stride + g, so that a
 * message of an old attempt never reaches a new one. The job manager is
 * CK_EP_JM, task manager h is CK_EP_TM0 + h.
 *
 * Generations: a rescale redeploys the job at other parallelisms, a graph
 * of its own (the job's generation 1 + the rescale's number; 0 is the job
 * as submitted). Every generation has the same vertices and edges (a
 * chain keeps one parallelism: forward edges join equal ones), and all
 * share one ep_stride, the most subtasks any has, so that an endpoint
 * names its attempt and subtask whatever generation the attempt runs.
 * Placement follows Flink's slot sharing: subtask i of every vertex shares
 * slot i, and slot s lives on the (s / slots-per-task-manager)-th task
 * manager the job manager has.
 */
#ifndef CK_GRAPH_H
#define CK_GRAPH_H

#include "common.h"
#include "config.h"
#include "udf.h"

#define CK_MAX_OPS 64
#define CK_NAME_MAX 48
#define CK_EP_JM 0u
#define CK_EP_TM0 1u
#define CK_MAX_TM 4096
#define CK_EP_TASK0 (CK_EP_TM0 + CK_MAX_TM)
#define CK_EP_CLIENT 0xfffffffeu /* a client of the job manager (the CLI, the fault timeline) */

typedef enum ck_op_kind {
    CK_OP_SOURCE,
    CK_OP_MAP,
    CK_OP_FILTER,
    CK_OP_AGGREGATE,
    CK_OP_WINDOW,
    CK_OP_SINK,
    CK_OP_DISTINCT, /* keyed: a record whose value its key has not had before */
    CK_OP_BUFFER,   /* holds records in list operator state until it has `count`
                     * (Flink's documented BufferingSink), then passes them on */
} ck_op_kind;
#define CK_OP_KIND_MAX CK_OP_BUFFER /* the last kind: a file's kind above it is corrupt */

/* How records reach an operator (Flink's partitioners). Forward and
 * rescale are pointwise: a producer subtask has channels to some consumer
 * subtasks only (ck_graph_edge_outputs); the others join every pair. */
typedef enum ck_ship {
    CK_SHIP_FORWARD,   /* subtask i feeds subtask i (equal parallelism) */
    CK_SHIP_HASH,      /* keyBy: by key group */
    CK_SHIP_REBALANCE, /* round robin over every consumer subtask */
    CK_SHIP_RESCALE,   /* round robin over the consumers a pointwise edge connects */
    CK_SHIP_BROADCAST, /* every record to every consumer subtask */
} ck_ship;


#define CK_BUFFER_MAX 100000 /* a buffer operator's largest count */

typedef struct ck_op_spec {
    char name[CK_NAME_MAX];
    char uid[CK_NAME_MAX]; /* its stable identity, as Flink's uid(): a snapshot's state
                            * is matched to the job's operators by it ("": the name) */
    ck_op_kind kind;
    int parallelism;     /* 0: parallelism.default */
    int max_parallelism; /* 0: pipeline.max-parallelism or Flink's default */
    int max_parallelism_set; /* resolved: the job set it (the operator's own or
                              * pipeline.max-parallelism), rather than Flink's default */
    int input;           /* index of the input operator; -1 for a source */
    ck_ship ship;        /* how records reach this operator */
    double cpu_flops;    /* CPU cost per record processed */
    ck_map_fn map_fn;
    int64_t map_arg;
    uint32_t filter_keep_ppm;
    ck_agg_fn agg_fn;
    int64_t window_ms;      /* window: tumbling window size */
    int64_t ooo_ms;         /* source: bounded out-of-orderness of watermarks */
    int64_t write_ns;       /* sink: time its external system takes to accept a record
                             * (waited, not computed: no core; 0: at once) */
    int buffer_count;       /* buffer: records it holds before passing them on */
    int buffer_seen;        /* buffer: counts the records it saw in union list state */
    uint64_t value_size;    /* keyed: the bytes each entry of its state weighs beyond
                             * what it holds, modelled (handle.h CK_HANDLE_MODELLED); 0: none */
} ck_op_spec;

typedef struct ck_job_spec {
    int nops;
    ck_op_spec ops[CK_MAX_OPS];
} ck_job_spec;

typedef struct ck_vertex {
    int id;
    char name[160]; /* "source -> parse" */
    int parallelism;
    int nops;
    int ops[CK_MAX_OPS]; /* chained operators, inputs before outputs */
    int in_edge;         /* -1 for a source vertex */
    int nout;
    int out_edges[CK_MAX_OPS];
    uint32_t base; /* global index of subtask 0 */
} ck_vertex;

typedef struct ck_edge {
    int id;
    int src_v, dst_v;
    int src_op, dst_op;
    ck_ship ship;
    int dst_parallelism, dst_max_parallelism;
} ck_edge;

typedef struct ck_graph {
    ck_job_spec spec; /* resolved: every parallelism set */
    int nv, ne;
    ck_vertex v[CK_MAX_OPS];
    ck_edge e[CK_MAX_OPS];
    int op_vertex[CK_MAX_OPS];
    uint32_t nsubtasks;
    int slots_per_host;
    int nslots; /* slots the job needs: its largest parallelism */
    int generation;     /* 0: the job as submitted; 1 + n: after rescale n */
    uint32_t ep_stride; /* endpoints per attempt: the most subtasks of any generation
                         * (ck_graph_build: nsubtasks; ck_graph_share_stride) */
} ck_graph;

/*
 * Resolves defaults, checks and chains a job. On error returns CK_EINVAL,
 * sets *bad_op to the operator at fault (-1 for the job as a whole) and
 * writes a one-line reason into err.
 */
CK_MUST_CHECK
int ck_graph_build(ck_graph *g, const ck_job_spec *spec, const ck_config *cfg,
                   int *bad_op, char *err, size_t errlen);

/* Gives the n generations gens[0..n-1] of one job (ck_graph_build each)
 * their numbers and one endpoint stride, the most subtasks any has.
 * Returns 0, or CK_EINVAL when they are not of one job (other vertices
 * or edges: a generation changes parallelisms only). */
CK_MUST_CHECK
int ck_graph_share_stride(ck_graph *gens, int n);

/* Vertex and subtask index of a global subtask index. */
void ck_graph_locate(const ck_graph *g, uint32_t global, int *vertex, int *subtask);

/* Task-manager index hosting a global subtask when task managers 0..n-1 are
 * all available (the first placement). */
int ck_graph_host(const ck_graph *g, uint32_t global);

/* The slot a global subtask takes (slot sharing: its subtask index). */
int ck_graph_slot(const ck_graph *g, uint32_t global);

/* Task managers the job needs. */
int ck_graph_hosts_needed(const ck_graph *g);

/*
 * Pipelined regions, as Flink's PipelinedRegionComputeUtil computes them:
 * subtasks joined by pipelined edges (every edge of a streaming job) form
 * one region; a hash (all-to-all) edge joins every subtask of both
 * vertices, a forward edge subtask i to subtask i. A job with a keyBy is
 * one region; forward-only chains are one region per subtask index. Region
 * failover restarts only the failed subtasks' regions. Writes each global
 * subtask's region (numbered densely, in the order of their first
 * subtask) and returns how many there are, or CK_ENOMEM.
 */
int ck_graph_regions(const ck_graph *g, uint32_t *region);

/*
 * The channels of edge e, as Flink's EdgeManagerBuildUtil connects them:
 * producer subtask p sends to the consumer subtasks [*first, *first + *n),
 * consumer subtask c reads from the producer subtasks [*first, *first + *n).
 * All-to-all edges (hash, rebalance, broadcast) connect every pair; a
 * forward edge subtask i to subtask i; a rescale edge is pointwise: with
 * more producers than consumers each consumer reads a run of them, with
 * fewer each producer feeds a run of consumers (Flink's rounding).
 */
void ck_graph_edge_outputs(const ck_graph *g, const ck_edge *e, int p, int *first, int *n);
void ck_graph_edge_inputs(const ck_graph *g, const ck_edge *e, int c, int *first, int *n);

/* Endpoints per attempt (a graph not built by ck_graph_build: its subtasks). */
static inline uint32_t ck_graph_stride(const ck_graph *g)
{
    return g->ep_stride ? g->ep_stride : g->nsubtasks;
}

static inline uint32_t ck_ep_task(const ck_graph *g, uint32_t attempt, uint32_t global)
{
    return CK_EP_TASK0 + attempt * ck_graph_stride(g) + global;
}

static inline uint32_t ck_graph_endpoint(const ck_graph *g, uint32_t attempt, int vertex,
                                         int subtask)
{
    return ck_ep_task(g, attempt, g->v[vertex].base + (uint32_t)subtask);
}

/* Splits a task endpoint into attempt and global subtask; 0 if it is not
 * one. The subtask is of the attempt's generation, which may have fewer
 * than ep_stride. */
static inline int ck_ep_task_split(const ck_graph *g, uint32_t ep, uint32_t *attempt,
                                   uint32_t *global)
{
    if (ep < CK_EP_TASK0)
        return 0;
    *attempt = (ep - CK_EP_TASK0) / ck_graph_stride(g);
    *global = (ep - CK_EP_TASK0) % ck_graph_stride(g);
    return 1;
}

/* True for operators with keyed state (they need a hash input). */
static inline int ck_op_keyed(ck_op_kind k)
{
    return k == CK_OP_AGGREGATE || k == CK_OP_WINDOW || k == CK_OP_DISTINCT;
}

const char *ck_op_kind_name(ck_op_kind k);
const char *ck_ship_name(ck_ship s);

/* Writes "source(2) -> map(2) => count(4) -> sink(4)" style text. */
void ck_graph_describe(const ck_graph *g, char *buf, size_t len);

#endif
