/*
 * assign.h - which state of a snapshot each subtask of a new job restores,
 * as Flink's StateAssignmentOperation: one pure function over a decoded
 * _metadata (coordinator.h: the old vertices, their parallelism, their
 * operators' uids, kinds and max parallelisms, and per old subtask its
 * state handles) and the new job's graph. No I/O, no clock.
 *
 * The job manager calls it when it deploys an attempt that restores, and
 * the savepoint pre-check (runner/savepoint.h) calls the same function, so
 * that "can this restore?" and "how does it restore?" are one piece of
 * code. ck_asg_applicable then says whether the subtasks can apply the
 * plan (one place for what they cannot do yet). A rescale's redeployment
 * is such a restore too: the job manager plans it from the snapshot (of
 * the generation of the job's graph that took it) into the new
 * generation's graph (graph.h).
 *
 * The rules (Flink 1.20's, FLINK-RESCALE notes C1 and C2):
 *  - matching: every operator of the snapshot is found in the job by its
 *    uid, of the same kind; an old vertex's operators must form one vertex
 *    of the job, chained alike (a subtask's canonical file holds its whole
 *    chain's state); every vertex of the job must have one (a state file
 *    per subtask); else the restore is refused, the uid named;
 *  - max parallelism, per operator: the snapshot's below the job's new
 *    parallelism is refused; one that differs from the job's is adopted
 *    when the job did not set its own (ck_op_spec.max_parallelism_set),
 *    refused when it did. A version-3 _metadata (no vertices) is taken to
 *    be of the job's own operators at their own max parallelism, and
 *    restores only at the job's own parallelism;
 *  - keyed state: new subtask i of a keyed vertex owns the key groups
 *    [start, end] of C1 (ck_kg_range) for the new parallelism and the
 *    adopted max parallelism; it takes every old keyed handle (a handle
 *    with a non-empty key-group range) intersected with that range, when
 *    the intersection is not empty. With the range unchanged, the old
 *    subtask's handles come whole, as they are;
 *  - operator state, per (operator, state name) by its mode
 *    (ck_asg_repartition): split-distribute (contiguous chunks, the
 *    rotating start carried across state names), union (all to all, at
 *    any parallelism), broadcast (new j takes old j % oldP's copy); at an
 *    unchanged parallelism split-distribute and broadcast state stay with
 *    their subtask. Entry counts come from the caller (ck_asg_opstate):
 *    the job manager (which reads no file) and the pre-check both take
 *    them from the _metadata's canonical handles
 *    (ck_asg_opstate_from_meta), or of an older _metadata the sources'
 *    from the topic; without them no operator state is dealt. At an
 *    unchanged parallelism a subtask's takes are its own file: its
 *    chunks (ops) still say what Flink deals it of other subtasks' union
 *    state;
 *  - source partitions are a source's split-distribute list state
 *    (FLIP-27): the caller passes their counts as a state named
 *    CK_ASG_SOURCE_STATE;
 *  - pending sink transactions: old sink subtask k's go to new subtask
 *    k % newP, so that each is committed exactly once;
 *  - channel state (unaligned): at an unchanged parallelism a subtask's
 *    own; otherwise old subtask k's input channel state goes to the new
 *    subtasks its input edge's partitioner maps it to, and its output
 *    (result subpartition) state to those its output edges' map it to:
 *    ck_asg_channel_reads, Flink's SubtaskStateMapper (below); where a
 *    vertex at either end of an edge changed parallelism, the takes say
 *    so (CK_ASG_REROUTE) and the state goes to the new channels;
 *  - a vertex that keeps no state but its place in the data flow
 *    (ck_asg_vertex_state: a map, a filter, a sink without transactions;
 *    from a snapshot that may hold channel state, one without a hash or
 *    rebalance edge, whatever the new job's checkpoints are) and whose
 *    parallelism changed: its new subtasks start empty, take nothing,
 *    and lose nothing.
 *
 * A plan's invariants (ck_asg_check):
 *   (1) tasks[g] is new global subtask g; its old_vertex is the old vertex
 *       matched to its vertex; old_subtask is its own index when the
 *       parallelism is unchanged, -1 otherwise;
 *   (2) over the new subtasks of a keyed vertex, the key-group ranges of
 *       the keyed takes from each old keyed handle are disjoint and their
 *       union is the handle's range: every key group of the snapshot is
 *       taken by exactly one new subtask;
 *   (3) every old sink subtask's transactions are taken by exactly one
 *       new subtask of its vertex (none where its subtasks start empty);
 *   (4) a take names an old subtask of the matched old vertex and one of
 *       its handles, with a range inside that handle's;
 *   (5) a subtask starts empty (takes nothing) exactly when its vertex
 *       keeps no state and its parallelism changed;
 *   (6) in a snapshot that may hold channel state (taken unaligned, or
 *       aligned with the aligned-checkpoint timeout), every old subtask's
 *       input channel state, where its input edge carries any, is taken
 *       by at least one new subtask of its vertex, and output channel
 *       state, where an output edge does, by exactly one (its records
 *       are sent again: by two, they would arrive twice); none where its
 *       subtasks start empty; from any other snapshot no take is for
 *       channel state alone, so no subtask downloads a file it needs
 *       nothing from;
 *   (7) a take of channel state is marked CK_ASG_REROUTE exactly when its
 *       vertex, or the vertex at the other end of one of its edges,
 *       changed parallelism, and only a take of channel state is.
 */
#ifndef CK_ASSIGN_H
#define CK_ASSIGN_H

#include "common.h"
#include "config.h"
#include "coordinator.h"
#include "graph.h"
#include "invariant.h"
#include "snapshot.h"

/* Operator state redistribution modes (Flink's OperatorStateHandle.Mode). */
typedef enum ck_asg_mode {
    CK_ASG_SPLIT_DISTRIBUTE, /* getListState */
    CK_ASG_UNION,            /* getUnionListState */
    CK_ASG_BROADCAST,        /* broadcast state */
} ck_asg_mode;

/* The state name under which a source's partitions (its offsets) are
 * dealt, as FLIP-27 sources keep their splits: the list its snapshots
 * keep them in (snapshot.h). */
#define CK_ASG_SOURCE_STATE CK_SOURCE_SPLITS

/* A run of entries of one old subtask's list: entries [first, first + n)
 * of old subtask `old` (its index in its vertex). */
typedef struct ck_asg_chunk {
    uint32_t old, first, n;
} ck_asg_chunk;

/*
 * Flink's RoundRobinOperatorStateRepartitioner, over entry counts alone:
 * counts[s * old_p + k] = entries old subtask k holds of state name s
 * (nnames names, in a stable order). Writes into out[s * new_p + j] the
 * chunks new subtask j gets of name s (malloc'd arrays, nout[...] of them;
 * free with ck_asg_chunks_free). Split-distribute: the names' entries,
 * concatenated in old-subtask order, in contiguous chunks of total / new_p,
 * one more for total % new_p of them, the subtasks with one more starting
 * where the last name's left off; at an unchanged parallelism each keeps
 * its own. Union: every entry to every subtask. Broadcast: subtask j gets
 * old subtask j % old_p's. 0, CK_EINVAL (a parallelism below 1), CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_asg_repartition(ck_asg_mode mode, uint32_t nnames, uint32_t old_p, uint32_t new_p,
                       const uint32_t *counts, ck_asg_chunk **out, uint32_t *nout);
void ck_asg_chunks_free(ck_asg_chunk **out, uint32_t nslots);

/* Operator state the caller knows of: state `name` of job operator `op`
 * (an index in the new job), in mode `mode`, with counts[k] entries in
 * old subtask k of the old vertex matched to op's (old parallelism of
 * them). */
typedef struct ck_asg_opstate {
    int op;
    char name[CK_HANDLE_STATE_NAME_MAX];
    ck_asg_mode mode;
    const uint32_t *counts;
} ck_asg_opstate;

/* The most operator states a job's snapshot deals (per operator, its
 * lists: snapshot.h). */
#define CK_ASG_MAX_OPSTATES CK_HANDLE_MAX_OPCOUNTS

/*
 * The operator state of snapshot m that a restore into job g deals, for
 * ck_asg_plan: one policy for the job manager (which reads no state file)
 * and the savepoint pre-check. From the snapshot's canonical handles'
 * counts (CK_HANDLE_OPCOUNTS, a version-5 _metadata): per (operator,
 * state name) of an old vertex every one of whose subtasks' canonical
 * handles lists its counts, the mode it was written with and each old
 * subtask's entries (0 where a subtask lists none) - a buffer's
 * `buffered` list, a source's `source-splits` and
 * `source-known-partitions`, and the rest. Of an old vertex without
 * them (a version-4 or -3 _metadata), only a source's partitions, by the
 * topic's rule (old source subtask k of parallelism p read the partitions
 * ck_topic_owner gives reader k of p: topic `topic` of nparts partitions;
 * none without a topic), as split-distribute state CK_ASG_SOURCE_STATE.
 * An old operator the job does not have (by uid) is left out: the plan
 * refuses it. Writes up to max into os, their counts into *counts
 * (malloc'd: free it once the plan is made; os points into it). Returns
 * how many; CK_EINVAL with one line in err when the counts contradict the
 * snapshot (an operator its vertex does not have, a state listed in two
 * modes, more than max); CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_asg_opstate_from_meta(const ck_cp_meta *m, const ck_graph *g, const char *topic,
                             int nparts, ck_asg_opstate *os, int max, uint32_t **counts,
                             char *err, size_t errlen);

/* What a take is for (bits). */
#define CK_ASG_KEYED 1u   /* key groups kgr of its keyed state */
#define CK_ASG_OPSTATE 2u /* operator state (chunks say which entries) */
#define CK_ASG_CHANNELS 4u /* its input channel state (its gate's) */
#define CK_ASG_TXNS 8u    /* its sinks' pending transactions, to commit */
#define CK_ASG_OUT_CHANNELS 16u /* its output (result subpartition) channel state */
/* Its channel state moves to other channels: its vertex, or the vertex at
 * the other end of one of its edges, changed parallelism. Its input state
 * is replayed on channel (old producer mod producers), its watermarks
 * dropped (ck_gate_replay_moved); its output state's records are routed
 * again by their edge's partitioner over the new consumers. */
#define CK_ASG_REROUTE 32u

/*
 * Flink's SubtaskStateMapper: which old subtasks' channel state a new
 * subtask reads when the parallelism of one side of an edge changed
 * (StateAssignmentOperation's reDistributeInputChannelStates and
 * reDistributeResultSubpartitionStates). Each partitioner names two:
 * getDownstreamSubtaskStateMapper for the consumer's input channel state
 * and getUpstreamSubtaskStateMapper (ARBITRARY unless overridden) for the
 * producer's output state. Flink 1.20's partitioners and chandy's edges:
 *   hash (KeyGroupStreamPartitioner): input RANGE, output ARBITRARY;
 *   rebalance (RebalancePartitioner; ShufflePartitioner alike): input
 *     ROUND_ROBIN, output ARBITRARY;
 *   forward, rescale (pointwise) and broadcast: UNSUPPORTED on both sides;
 *     such an edge never carries channel state (its barriers stay
 *     aligned: StreamPartitioner.isSupportsUnalignedCheckpoint, gate.h);
 *   (GlobalPartitioner's FIRST and custom partitioners' FULL have no
 *     chandy edge.)
 * The mappers, as getOldSubtasks(new i, oldP, newP):
 *   ROUND_ROBIN: old i, i + newP, i + 2 newP, ... (old k goes to k % newP;
 *     new subtasks past oldP read none); unique;
 *   ARBITRARY: as ROUND_ROBIN (Flink: "may be changed later");
 *   FIRST: every old subtask to new 0; unique;
 *   FULL: every old subtask to every new one; ambiguous;
 *   RANGE: the old subtasks whose key-group ranges overlap new i's, both
 *     computed with 32768 key groups (UPPER_BOUND_MAX_PARALLELISM: "the
 *     actual maxParallelism cancels out"); ambiguous: an old subtask
 *     overlapping two new ones goes to both, and each keeps only the
 *     records of its own key groups (the recipient's filter, gate.h);
 *   UNSUPPORTED: refused ("Cannot rescale the given pointwise
 *     partitioner").
 * Inside a state file the channels are named by the old peer at their
 * other end. Where a side changed its parallelism, an input channel from
 * old producer p is read as from new producer p % newP, the one that takes
 * p's output state (ck_asg_channel_reads(ship, 1, ...)), as Flink's
 * InflightDataRescalingDescriptor renames it; an output subpartition's
 * records are routed again by the edge's partitioner over the new
 * consumers, each to the one that owns it, where Flink sends the buffers
 * to every consumer that took the old consumer's input state and has
 * them filter. Both work because channel state holds whole elements
 * (gate.h, partition.h).
 */
typedef enum ck_asg_mapper {
    CK_ASG_MAP_ARBITRARY,
    CK_ASG_MAP_FIRST,
    CK_ASG_MAP_FULL,
    CK_ASG_MAP_RANGE,
    CK_ASG_MAP_ROUND_ROBIN,
    CK_ASG_MAP_UNSUPPORTED,
} ck_asg_mapper;

/* The mapper of an edge shipping by `ship`, for its producer's output
 * state (out = 1, upstream) or its consumer's input state (out = 0). */
ck_asg_mapper ck_asg_channel_mapper(ck_ship ship, int out);
/* 1 when the mapper may give one old subtask to several new ones (their
 * records are then filtered by the recipient). */
int ck_asg_mapper_ambiguous(ck_asg_mapper m);
/*
 * Whether new subtask i (of new_p) restores the channel state old subtask
 * k (of old_p) kept on its side (out: 1 output, 0 input) of an edge
 * shipping by `ship`: 1 or 0; at an unchanged parallelism its own (k ==
 * i). CK_EINVAL for an index out of range or, at a changed parallelism,
 * an UNSUPPORTED mapper. The one place of the mapping: the plan asks it.
 */
int ck_asg_channel_reads(ck_ship ship, int out, uint32_t old_p, uint32_t new_p, uint32_t k,
                         uint32_t i);

/* One old handle a new subtask restores. */
typedef struct ck_asg_take {
    uint32_t old;    /* the old global subtask (index into the metadata's tasks) */
    uint32_t handle; /* index in its handles */
    ck_kgr kgr;      /* CK_ASG_KEYED: the key groups to take from it; else empty */
    uint32_t what;   /* CK_ASG_* */
} ck_asg_take;

/* Chunks of one operator state a new subtask gets. */
typedef struct ck_asg_opchunks {
    uint32_t state; /* index in the caller's ck_asg_opstate array */
    ck_asg_chunk *v;
    uint32_t n;
} ck_asg_opchunks;

typedef struct ck_asg_task {
    int vertex, subtask;       /* new */
    int old_vertex;            /* the snapshot's vertex it restores */
    uint32_t old_parallelism;  /* of that vertex */
    int old_subtask;           /* unchanged parallelism: the old subtask it is; else -1 */
    ck_kgr kgr;                /* its key groups (a keyed vertex); else empty */
    ck_asg_take *takes;
    uint32_t ntakes, captakes;
    ck_asg_opchunks *ops; /* per caller's operator state of its vertex */
    uint32_t nops;
    int empty; /* it starts empty: its vertex keeps no state and was rescaled */
    /* from a snapshot that may hold channel state, where its input edge's
     * (moved_in) or one of its output edges' (moved_out) two ends are not
     * both at their old parallelism: its gate waits for the producers'
     * recovered markers, it sends its own (gate.h ck_gate_expect_recovered) */
    uint8_t moved_in, moved_out;
} ck_asg_task;

typedef struct ck_asg {
    uint32_t ntasks; /* the new job's subtasks */
    ck_asg_task *tasks;
    int old_vertex[CK_MAX_OPS]; /* per new vertex: the old one matched */
    uint32_t old_base[CK_MAX_OPS]; /* per old vertex: its subtask 0's global index */
    int max_parallelism[CK_MAX_OPS]; /* per new operator: what it restores with */
    int adopted[CK_MAX_OPS]; /* per new operator: its max parallelism is the snapshot's,
                              * not the one the job's graph has */
    int opstate_dealt; /* operator state counts were given */
    /* per new vertex: the state it keeps (ck_asg_vertex_state), NULL none */
    const char *keeps[CK_MAX_OPS];
    int fresh[CK_MAX_OPS]; /* per new vertex: keeps none, parallelism changed: starts empty */
    /* per new operator: the caller gave counts of operator state of it */
    int counted[CK_MAX_OPS];
} ck_asg;

/*
 * What state vertex v of job g keeps in a checkpoint under configuration
 * cfg ("keyed state", "a source's partition offsets", ...), or NULL when
 * it keeps none but its place in the data flow, so that at another
 * parallelism a new subtask of v starts empty and nothing is lost: no
 * source (its partitions' offsets), no keyed operator, no buffer (list
 * operator state), no sink writing in transactions (exactly-once
 * checkpoints: its pending ones), and no channel state (unaligned
 * checkpoints: the in-flight records of its channels). The one rule of
 * which vertices a restore at another parallelism may start empty: the
 * plan follows it, and the runner's up-front refusal of a rescale asks it.
 */
const char *ck_asg_vertex_state(const ck_graph *g, int v, const ck_config *cfg);

/*
 * Plans the restore of snapshot m by job g configured by cfg (NULL: the
 * defaults; it says what state each vertex keeps: ck_asg_vertex_state),
 * with nos operator states os, or none: os NULL. 0; CK_EINVAL when the
 * snapshot cannot restore into the job (another job, a uid missing, a
 * kind or a chain that differs, a max parallelism refused), with one line
 * in err; CK_ENOMEM. On error *a is left empty.
 */
CK_MUST_CHECK
int ck_asg_plan(ck_asg *a, const ck_cp_meta *m, const ck_graph *g, const ck_config *cfg,
                const ck_asg_opstate *os, int nos, char *err, size_t errlen);

/*
 * Whether the subtasks can apply plan a as they are: 0, or CK_EINVAL with
 * one line in err naming the operator, for what they cannot do yet: a
 * changed parallelism of a vertex with a buffer's list state that the
 * snapshot does not count (an older _metadata; every other state moves:
 * keyed state, sources' partitions, buffers' lists, sinks' transactions,
 * channel state, and a vertex that keeps none starts empty), or an
 * operator at another position in the
 * job than in the snapshot (state files name operators by position). The
 * one place that refuses what the subtasks cannot restore.
 */
CK_MUST_CHECK
int ck_asg_applicable(const ck_asg *a, const ck_cp_meta *m, const ck_graph *g, char *err,
                      size_t errlen);

/* Gives g the max parallelisms the plan adopted from the snapshot (its
 * operators' and their input edges'). */
void ck_asg_adopt(const ck_asg *a, ck_graph *g);

void ck_asg_free(ck_asg *a);

/* Checks the invariants above (invariant.h) against m and g: 0 or
 * CK_EINVARIANT. */
CK_MUST_CHECK
int ck_asg_check(const ck_asg *a, const ck_cp_meta *m, const ck_graph *g, ck_inv *v);

#endif
