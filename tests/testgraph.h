/*
 * testgraph.h - the small keyed job several unit tests play a part of:
 * source(nsrc) => aggregate(2) -> sink(2), hash-partitioned into the
 * aggregate, forward to the sink. Subtasks are numbered sources first.
 */
#ifndef CK_TESTGRAPH_H
#define CK_TESTGRAPH_H

#include "config.h"
#include "graph.h"

static inline void test_graph_keyed(ck_graph *g, const ck_config *cfg, int nsrc)
{
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = nsrc,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "agg", .kind = CK_OP_AGGREGATE, .parallelism = 2,
                               .input = 0, .ship = CK_SHIP_HASH};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 1};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, e, sizeof(e)), 0);
}

#endif
