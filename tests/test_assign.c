/*
 * test_assign.c - the state assignment (assign.h), Flink's
 * StateAssignmentOperation: key-group ranges (C1) by hand, a property
 * over many parallelisms that every key group and every pending
 * transaction of the old snapshot goes to exactly one new subtask, the
 * max-parallelism rules, the operator-state repartitioner against
 * worked examples of Flink's RoundRobinOperatorStateRepartitioner,
 * sources' partitions dealt as split-distribute list state, an
 * old-version _metadata, the refusals (a uid missing, a kind that
 * differs, a changed parallelism the subtasks cannot apply yet), and a
 * vertex that keeps no state starting empty at another parallelism.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "assign.h"
#include "bytes.h"
#include "config.h"
#include "crc32c.h"
#include "error.h"
#include "graph.h"
#include "keygroup.h"
#include "operator.h"
#include "savepoint.h"

/* src(nsrc) => agg(p, max parallelism maxp; 0: the default) -> out(p):
 * two vertices, the sink chained to the keyed aggregate. */
static void job(ck_graph *g, int nsrc, int p, int maxp, const char *agg_uid, ck_op_kind kind)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = nsrc,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "agg", .kind = kind, .parallelism = p, .input = 0,
                               .ship = CK_SHIP_HASH, .max_parallelism = maxp, .window_ms = 1000};
    if (agg_uid)
        snprintf(spec.ops[1].uid, sizeof(spec.ops[1].uid), "%s", agg_uid);
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(g, &spec, &cfg, &bad, e, sizeof(e)), 0);
}

/* The _metadata a run of g would write: per subtask one canonical state
 * file, of its key groups in the keyed vertex. */
static void meta_of(ck_cp_meta *m, const ck_graph *g)
{
    memset(m, 0, sizeof(*m));
    m->version = 4;
    m->id = 7;
    m->nsubtasks = g->nsubtasks;
    m->tasks = calloc(g->nsubtasks, sizeof(*m->tasks));
    assert_non_null(m->tasks);
    assert_int_equal(ck_cp_meta_vertices(m, g), 0);
    for (uint32_t s = 0; s < g->nsubtasks; s++) {
        int v, i;
        ck_graph_locate(g, s, &v, &i);
        char key[64];
        snprintf(key, sizeof(key), "savepoints/sp-7/v%d-%d.state", v, i);
        ck_kgr kgr = CK_KGR_EMPTY;
        const ck_op_spec *head = &g->spec.ops[g->v[v].ops[0]];
        if (ck_op_keyed(head->kind))
            kgr = ck_kg_range(i, g->v[v].parallelism, head->max_parallelism);
        assert_int_equal(ck_handles_add(&m->tasks[s], CK_HANDLE_SNAPSHOT, 0, key, 100, 1, kgr), 0);
    }
}

static void plan_ok(ck_asg *a, const ck_cp_meta *m, const ck_graph *g)
{
    char err[400] = "";
    int rc = ck_asg_plan(a, m, g, NULL, NULL, 0, err, sizeof(err));
    if (rc)
        fprintf(stderr, "plan: %s\n", err);
    assert_int_equal(rc, 0);
    ck_inv inv;
    rc = ck_asg_check(a, m, g, &inv);
    if (rc)
        fprintf(stderr, "check: %s\n", inv.what);
    assert_int_equal(rc, 0);
}

/* The keyed takes of new subtask i of the keyed vertex (vertex 1):
 * "old:start-end" joined by spaces, old as its index in the vertex. */
static void keyed_takes(const ck_asg *a, const ck_graph *g, int i, char *buf, size_t len)
{
    const ck_asg_task *t = &a->tasks[g->v[1].base + (uint32_t)i];
    buf[0] = 0;
    for (uint32_t k = 0; k < t->ntakes; k++) {
        if (!(t->takes[k].what & CK_ASG_KEYED))
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%u:%d-%d", l ? " " : "", t->takes[k].old - a->old_base[1],
                 t->takes[k].kgr.start, t->takes[k].kgr.end);
    }
}

/* C1 by hand: start = (i*maxP + p - 1)/p, end = ((i+1)*maxP - 1)/p
 * (inclusive), new subtask i takes each old range intersected with its. */
static void test_keyed_ranges_by_hand(void **state)
{
    (void)state;
    static const struct {
        int p0, p1, maxp, i;
        const char *want;
    } cases[] = {
        /* 2 -> 3 of 128: new ranges [0,42] [43,85] [86,127] */
        {2, 3, 128, 0, "0:0-42"},
        {2, 3, 128, 1, "0:43-63 1:64-85"},
        {2, 3, 128, 2, "1:86-127"},
        /* 4 -> 3 of 128: old [0,31] [32,63] [64,95] [96,127] */
        {4, 3, 128, 0, "0:0-31 1:32-42"},
        {4, 3, 128, 1, "1:43-63 2:64-85"},
        {4, 3, 128, 2, "2:86-95 3:96-127"},
        /* 3 -> 5 of 10: old [0,3] [4,6] [7,9]; new [0,1] [2,3] [4,5] [6,7] [8,9] */
        {3, 5, 10, 2, "1:4-5"},
        {3, 5, 10, 3, "1:6-6 2:7-7"},
        /* 5 -> 2 of 7: old [0,1] [2,2] [3,4] [5,5] [6,6]; new [0,3] [4,6] */
        {5, 2, 7, 0, "0:0-1 1:2-2 2:3-3"},
        {5, 2, 7, 1, "2:4-4 3:5-5 4:6-6"},
        /* unchanged: each its own, whole */
        {3, 3, 128, 1, "1:43-85"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ck_graph g0, g1;
        job(&g0, 1, cases[c].p0, cases[c].maxp, NULL, CK_OP_AGGREGATE);
        job(&g1, 1, cases[c].p1, cases[c].maxp, NULL, CK_OP_AGGREGATE);
        ck_cp_meta m;
        meta_of(&m, &g0);
        ck_asg a;
        plan_ok(&a, &m, &g1);
        char got[200];
        keyed_takes(&a, &g1, cases[c].i, got, sizeof(got));
        if (strcmp(got, cases[c].want))
            fprintf(stderr, "%d -> %d of %d, subtask %d: got \"%s\"\n", cases[c].p0,
                    cases[c].p1, cases[c].maxp, cases[c].i, got);
        assert_string_equal(got, cases[c].want);
        const ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)cases[c].i];
        assert_int_equal(t->old_subtask, cases[c].p0 == cases[c].p1 ? cases[c].i : -1);
        assert_int_equal(t->old_parallelism, (uint32_t)cases[c].p0);
        ck_asg_free(&a);
        ck_cp_meta_free(&m);
    }
}

/* Every key group of the old snapshot goes to exactly one new subtask,
 * and every old sink subtask's transactions to exactly one, over many
 * (p, p', max parallelism), counted here apart from ck_asg_check. */
static void test_every_key_group_once(void **state)
{
    (void)state;
    static const int maxps[] = {9, 10, 16, 31, 128, 1000};
    int runs = 0;
    for (size_t x = 0; x < sizeof(maxps) / sizeof(maxps[0]); x++)
        for (int p0 = 1; p0 <= 9; p0++)
            for (int p1 = 1; p1 <= 9; p1++) {
                int maxp = maxps[x];
                ck_graph g0, g1;
                job(&g0, 2, p0, maxp, NULL, CK_OP_AGGREGATE);
                job(&g1, 3, p1, maxp, NULL, CK_OP_AGGREGATE);
                ck_cp_meta m;
                meta_of(&m, &g0);
                ck_asg a;
                plan_ok(&a, &m, &g1);
                uint32_t *seen = calloc((size_t)maxp, sizeof(*seen));
                uint32_t txns[16] = {0};
                assert_non_null(seen);
                for (int i = 0; i < p1; i++) {
                    const ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)i];
                    for (uint32_t k = 0; k < t->ntakes; k++) {
                        const ck_asg_take *tk = &t->takes[k];
                        assert_true(tk->old >= m.nsubtasks - (uint32_t)p0);
                        if (tk->what & CK_ASG_KEYED)
                            for (int32_t kg = tk->kgr.start; kg <= tk->kgr.end; kg++)
                                seen[kg]++;
                        if (tk->what & CK_ASG_TXNS)
                            txns[tk->old - a.old_base[1]]++;
                    }
                }
                for (int kg = 0; kg < maxp; kg++)
                    assert_int_equal(seen[kg], 1);
                for (int k = 0; k < p0; k++)
                    assert_int_equal(txns[k], 1);
                free(seen);
                ck_asg_free(&a);
                ck_cp_meta_free(&m);
                runs++;
            }
    assert_int_equal(runs, 6 * 81);
}

/* C1's max-parallelism rules: adopted when the job set none; refused
 * when it set another, or when the snapshot's is below the new
 * parallelism. */
static void test_max_parallelism_rules(void **state)
{
    (void)state;
    ck_graph g0, g1;
    job(&g0, 1, 2, 0, NULL, CK_OP_AGGREGATE); /* default: 128 */
    assert_int_equal(g0.spec.ops[1].max_parallelism, 128);
    ck_cp_meta m;
    meta_of(&m, &g0);
    ck_asg a;
    char err[400];
    /* p 100: its default would be 256; unset, so the snapshot's 128 is adopted */
    job(&g1, 1, 100, 0, NULL, CK_OP_AGGREGATE);
    assert_int_equal(g1.spec.ops[1].max_parallelism, 256);
    assert_false(g1.spec.ops[1].max_parallelism_set);
    plan_ok(&a, &m, &g1);
    assert_true(a.adopted[1]);
    assert_int_equal(a.max_parallelism[1], 128);
    /* and the ranges are those of 128 key groups: subtask 99 of 100 has
     * [(99*128 + 99)/100, (100*128 - 1)/100] = [127, 127] */
    assert_int_equal(a.tasks[g1.v[1].base + 99].kgr.start, 127);
    assert_int_equal(a.tasks[g1.v[1].base + 99].kgr.end, 127);
    ck_asg_adopt(&a, &g1);
    assert_int_equal(g1.spec.ops[1].max_parallelism, 128);
    assert_int_equal(g1.e[g1.v[1].in_edge].dst_max_parallelism, 128);
    ck_asg_free(&a);
    /* set explicitly to another: refused */
    job(&g1, 1, 100, 256, NULL, CK_OP_AGGREGATE);
    assert_true(g1.spec.ops[1].max_parallelism_set);
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "operator \"agg\" (uid \"agg\"): the job sets max parallelism 256"));
    assert_non_null(strstr(err, "128 key groups"));
    assert_null(strchr(err, '\n'));
    /* the same, by pipeline.max-parallelism */
    {
        ck_config cfg;
        ck_config_defaults(&cfg);
        cfg.v[CK_CFG_MAX_PARALLELISM] = 256;
        ck_job_spec spec = g1.spec;
        spec.ops[1].max_parallelism = 0;
        spec.ops[0].max_parallelism = spec.ops[2].max_parallelism = 0;
        int bad;
        assert_int_equal(ck_graph_build(&g1, &spec, &cfg, &bad, err, sizeof(err)), 0);
        assert_true(g1.spec.ops[1].max_parallelism_set);
        assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
        assert_non_null(strstr(err, "sets max parallelism 256"));
    }
    /* set to the snapshot's own: fine */
    job(&g1, 1, 3, 128, NULL, CK_OP_AGGREGATE);
    plan_ok(&a, &m, &g1);
    assert_false(a.adopted[1]);
    ck_asg_free(&a);
    /* the snapshot's 128 below the new parallelism 200: refused */
    job(&g1, 1, 200, 0, NULL, CK_OP_AGGREGATE);
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
    assert_non_null(
        strstr(err, "operator \"agg\" (uid \"agg\"): the snapshot's max parallelism 128 is below "
                    "the job's parallelism 200"));
    assert_null(a.tasks);
    ck_cp_meta_free(&m);
}

/* "old:first+n" of each chunk, joined by spaces. */
static void chunks_str(const ck_asg_chunk *c, uint32_t n, char *buf, size_t len)
{
    buf[0] = 0;
    for (uint32_t k = 0; k < n; k++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%u:%u+%u", l ? " " : "", c[k].old, c[k].first, c[k].n);
    }
}

/*
 * Split-distribute, worked by Flink's RoundRobinOperatorStateRepartitioner
 * (repartitionSplitState): three state names over 2 old subtasks to 3.
 *   A: entries 3 + 2 = 5: base 1, remainder 2, start 0: subtask 0 gets 2
 *      (old 0's 0,1), subtask 1 gets 2 (old 0's 2, old 1's 0), subtask 2
 *      gets 1 (old 1's 1) and is the first without an extra: next start 2.
 *   B: 1 + 1 = 2: base 0, remainder 2, from subtask 2: subtask 2 gets old
 *      0's, subtask 0 old 1's, subtask 1 none (first without one): start 1.
 *   C: 2 + 2 = 4: base 1, remainder 1, from subtask 1: subtask 1 gets 2
 *      (old 0's 0,1), subtask 2 gets 1 (old 1's 0): start 2; subtask 0
 *      gets old 1's 1.
 */
static void test_split_distribute_worked_example(void **state)
{
    (void)state;
    const uint32_t counts[] = {3, 2, /* A */ 1, 1, /* B */ 2, 2 /* C */};
    ck_asg_chunk *out[9];
    uint32_t nout[9];
    assert_int_equal(ck_asg_repartition(CK_ASG_SPLIT_DISTRIBUTE, 3, 2, 3, counts, out, nout), 0);
    static const char *const want[9] = {
        "0:0+2", "0:2+1 1:0+1", "1:1+1", /* A */
        "1:0+1", "",            "0:0+1", /* B */
        "1:1+1", "0:0+2",       "1:0+1", /* C */
    };
    for (int k = 0; k < 9; k++) {
        char got[100];
        chunks_str(out[k], nout[k], got, sizeof(got));
        if (strcmp(got, want[k]))
            fprintf(stderr, "name %d subtask %d: got \"%s\"\n", k / 3, k % 3, got);
        assert_string_equal(got, want[k]);
    }
    ck_asg_chunks_free(out, 9);
    /* unchanged parallelism: each keeps its own */
    ck_asg_chunk *o2[2];
    uint32_t n2[2];
    assert_int_equal(ck_asg_repartition(CK_ASG_SPLIT_DISTRIBUTE, 1, 2, 2, counts, o2, n2), 0);
    char got[100];
    chunks_str(o2[0], n2[0], got, sizeof(got));
    assert_string_equal(got, "0:0+3");
    chunks_str(o2[1], n2[1], got, sizeof(got));
    assert_string_equal(got, "1:0+2");
    ck_asg_chunks_free(o2, 2);
    /* every entry dealt exactly once, over many counts and parallelisms */
    for (uint32_t op = 1; op <= 6; op++)
        for (uint32_t np = 1; np <= 7; np++) {
            uint32_t c[3 * 6], total[3] = {0};
            for (uint32_t s = 0; s < 3; s++)
                for (uint32_t k = 0; k < op; k++) {
                    c[s * op + k] = (s * 7 + k * 3 + op + np) % 5;
                    total[s] += c[s * op + k];
                }
            ck_asg_chunk *o[3 * 7];
            uint32_t n[3 * 7];
            assert_int_equal(ck_asg_repartition(CK_ASG_SPLIT_DISTRIBUTE, 3, op, np, c, o, n), 0);
            for (uint32_t s = 0; s < 3; s++) {
                uint8_t seen[6][5] = {{0}};
                uint32_t got_total = 0;
                for (uint32_t j = 0; j < np; j++) {
                    uint32_t mine = 0;
                    for (uint32_t q = 0; q < n[s * np + j]; q++) {
                        const ck_asg_chunk *ch = &o[s * np + j][q];
                        assert_true(ch->first + ch->n <= c[s * op + ch->old]);
                        for (uint32_t e = ch->first; e < ch->first + ch->n; e++)
                            seen[ch->old][e]++;
                        mine += ch->n;
                    }
                    if (op != np) /* within one of an even share */
                        assert_true(mine == total[s] / np || mine == total[s] / np + 1);
                    got_total += mine;
                }
                assert_int_equal(got_total, total[s]);
                for (uint32_t k = 0; k < op; k++)
                    for (uint32_t e = 0; e < c[s * op + k]; e++)
                        assert_int_equal(seen[k][e], 1);
            }
            ck_asg_chunks_free(o, 3 * np);
        }
}

static void test_union_and_broadcast(void **state)
{
    (void)state;
    const uint32_t counts[] = {2, 0, 3};
    ck_asg_chunk *out[4];
    uint32_t nout[4];
    char got[100];
    /* union: every subtask every entry, at any parallelism (also an unchanged one) */
    for (uint32_t np = 3; np <= 4; np++) {
        assert_int_equal(ck_asg_repartition(CK_ASG_UNION, 1, 3, np, counts, out, nout), 0);
        for (uint32_t j = 0; j < np; j++) {
            chunks_str(out[j], nout[j], got, sizeof(got));
            assert_string_equal(got, "0:0+2 2:0+3");
        }
        ck_asg_chunks_free(out, np);
    }
    /* broadcast: new j takes old j % oldP's copy */
    const uint32_t bc[] = {4, 4, 4};
    assert_int_equal(ck_asg_repartition(CK_ASG_BROADCAST, 1, 3, 4, bc, out, nout), 0);
    static const char *const want[4] = {"0:0+4", "1:0+4", "2:0+4", "0:0+4"};
    for (int j = 0; j < 4; j++) {
        chunks_str(out[j], nout[j], got, sizeof(got));
        assert_string_equal(got, want[j]);
    }
    ck_asg_chunks_free(out, 4);
    assert_int_equal(ck_asg_repartition(CK_ASG_BROADCAST, 1, 0, 4, bc, out, nout), CK_EINVAL);
}

/* Sources keep their partitions as split-distribute list state (FLIP-27):
 * 2 source subtasks of 3 partitions each, to 4. */
static void test_source_partitions_dealt(void **state)
{
    (void)state;
    ck_graph g0, g1;
    job(&g0, 2, 2, 0, NULL, CK_OP_AGGREGATE);
    job(&g1, 4, 2, 0, NULL, CK_OP_AGGREGATE);
    ck_cp_meta m;
    meta_of(&m, &g0);
    const uint32_t parts[] = {3, 3};
    ck_asg_opstate os = {.op = 0, .name = CK_ASG_SOURCE_STATE, .mode = CK_ASG_SPLIT_DISTRIBUTE,
                         .counts = parts};
    ck_asg a;
    char err[300];
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, &os, 1, err, sizeof(err)), 0);
    assert_true(a.opstate_dealt);
    static const char *const want[4] = {"0:0+2", "0:2+1 1:0+1", "1:1+1", "1:2+1"};
    static const char *const files[4] = {"0", "0 1", "1", "1"};
    for (uint32_t j = 0; j < 4; j++) {
        const ck_asg_task *t = &a.tasks[j];
        assert_int_equal(t->nops, 1);
        char got[100];
        chunks_str(t->ops[0].v, t->ops[0].n, got, sizeof(got));
        assert_string_equal(got, want[j]);
        /* it takes the state files of the old subtasks its partitions come from */
        got[0] = 0;
        for (uint32_t k = 0; k < t->ntakes; k++)
            if (t->takes[k].what & CK_ASG_OPSTATE) {
                size_t l = strlen(got);
                snprintf(got + l, sizeof(got) - l, "%s%u", l ? " " : "", t->takes[k].old);
            }
        assert_string_equal(got, files[j]);
    }
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
}

/* src(2) -rebalance-> buf(p) -> out(p): a buffer of 10. */
static void buffer_job(ck_graph *g, int p)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "buf", .kind = CK_OP_BUFFER, .parallelism = p,
                               .input = 0, .ship = CK_SHIP_REBALANCE, .buffer_count = 10};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(g, &spec, &cfg, &bad, e, sizeof(e)), 0);
}

/* The refusals name the uid: state of an operator the job does not
 * have; an operator whose kind changed; a changed parallelism of a
 * buffer whose list state the snapshot does not count (ck_asg_applicable),
 * where keyed state and a counted buffer's list move. A uid of
 * its own restores under another name. */
static void test_refusals_name_the_uid(void **state)
{
    (void)state;
    ck_graph g0, g1;
    job(&g0, 1, 2, 0, "count-v1", CK_OP_AGGREGATE);
    ck_cp_meta m;
    meta_of(&m, &g0);
    ck_asg a;
    char err[400];
    job(&g1, 1, 2, 0, "count-v2", CK_OP_AGGREGATE);
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "operator uid \"count-v1\", which the job does not have"));
    assert_null(strchr(err, '\n'));
    job(&g1, 1, 2, 0, "count-v1", CK_OP_WINDOW);
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "operator uid \"count-v1\" is a aggregate in the snapshot"));
    /* the same uid under another name: matched */
    job(&g1, 1, 2, 0, "count-v1", CK_OP_AGGREGATE);
    snprintf(g1.spec.ops[1].name, sizeof(g1.spec.ops[1].name), "counter");
    plan_ok(&a, &m, &g1);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    ck_asg_free(&a);
    /* another parallelism: keyed state moves */
    job(&g1, 1, 3, 0, "count-v1", CK_OP_AGGREGATE);
    plan_ok(&a, &m, &g1);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
    /* a buffer's list state, its entries counted: it moves, each new
     * subtask dealt its chunks */
    buffer_job(&g0, 2);
    meta_of(&m, &g0);
    buffer_job(&g1, 3);
    const uint32_t held[2] = {4, 5};
    ck_asg_opstate os = {.op = 1, .name = CK_BUFFER_LIST, .mode = CK_ASG_SPLIT_DISTRIBUTE,
                         .counts = held};
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, &os, 1, err, sizeof(err)), 0);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    uint32_t dealt = 0;
    for (uint32_t s = 0; s < a.ntasks; s++)
        for (uint32_t q = 0; q < a.tasks[s].nops; q++)
            for (uint32_t c = 0; c < a.tasks[s].ops[q].n; c++)
                dealt += a.tasks[s].ops[q].v[c].n;
    assert_int_equal(dealt, 9);
    ck_asg_free(&a);
    /* uncounted (an older _metadata): it does not, refused, named */
    plan_ok(&a, &m, &g1);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "operator \"buf\" (uid \"buf\")"));
    assert_non_null(strstr(err, "the snapshot holds it at parallelism 2, the job has 3, and it "
                                "keeps a buffer's list state, whose entries the snapshot does not "
                                "count, which does not move to another parallelism yet"));
    assert_null(strchr(err, '\n'));
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
}

/* src(2) -rebalance-> map(mp) -hash-> agg(3) -> out(3): a middle vertex
 * that keeps no state. */
static void job_with_map(ck_graph *g, int mp)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 4};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "m", .kind = CK_OP_MAP, .parallelism = mp, .input = 0,
                               .ship = CK_SHIP_REBALANCE};
    spec.ops[2] = (ck_op_spec){.name = "agg", .kind = CK_OP_AGGREGATE, .parallelism = 3,
                               .input = 1, .ship = CK_SHIP_HASH};
    spec.ops[3] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 3, .input = 2};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(g, &spec, &cfg, &bad, e, sizeof(e)), 0);
    assert_int_equal(g->nv, 3);
}

/* What a vertex keeps decides whether it may start empty at another
 * parallelism (ck_asg_vertex_state), and the plan follows that one rule:
 * the map rescaled 2 -> 4 starts empty, taking nothing, the source and
 * the aggregate restore their own state, the plan holds its invariants
 * and the subtasks can apply it. With unaligned checkpoints the map keeps
 * channel state: it does not start empty, and from a checkpoint taken
 * unaligned every take of channel state is marked to move (7); one output
 * state taken twice breaks (6). A subtask of the rescaled map that
 * restored would break invariant (5). */
static void test_stateless_vertex_starts_empty(void **state)
{
    (void)state;
    ck_graph g0, g1;
    job_with_map(&g0, 2);
    job_with_map(&g1, 4);
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CP_INTERVAL] = 100 * CK_NS_PER_MS;
    assert_null(ck_asg_vertex_state(&g0, 1, &cfg));
    assert_string_equal(ck_asg_vertex_state(&g0, 0, &cfg), "a source's partition offsets");
    assert_string_equal(ck_asg_vertex_state(&g0, 2, &cfg), "keyed state");
    cfg.v[CK_CFG_CP_MODE] = CK_CP_AT_LEAST_ONCE;
    assert_string_equal(ck_asg_vertex_state(&g0, 2, &cfg), "keyed state");
    cfg.v[CK_CFG_CP_MODE] = CK_CP_EXACTLY_ONCE;
    ck_cp_meta m;
    meta_of(&m, &g0);
    ck_asg a;
    char err[400];
    assert_int_equal(ck_asg_plan(&a, &m, &g1, &cfg, NULL, 0, err, sizeof(err)), 0);
    ck_inv inv;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    assert_true(a.fresh[1] && !a.fresh[0] && !a.fresh[2]);
    for (uint32_t s = 0; s < g1.nsubtasks; s++) {
        const ck_asg_task *t = &a.tasks[s];
        if (t->vertex == 1) {
            assert_true(t->empty);
            assert_int_equal(t->ntakes, 0);
            assert_int_equal(t->old_subtask, -1);
            assert_int_equal(t->old_parallelism, 2);
        } else {
            assert_false(t->empty);
            assert_int_equal(t->old_subtask, t->subtask);
            assert_int_equal(t->ntakes, 1);
            assert_int_equal(t->takes[0].old, a.old_base[t->old_vertex] + (uint32_t)t->subtask);
        }
    }
    /* invariant (5): a rescaled stateless subtask that restores */
    a.tasks[g1.v[1].base].empty = 0;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), CK_EINVARIANT);
    assert_non_null(strstr(inv.what, "keeps no state and was rescaled"));
    ck_asg_free(&a);
    /* unaligned checkpoints: the map keeps channel state */
    cfg.v[CK_CFG_CP_UNALIGNED] = 1;
    assert_string_equal(ck_asg_vertex_state(&g0, 1, &cfg),
                        "channel state (unaligned checkpoints)");
    assert_int_equal(ck_asg_plan(&a, &m, &g1, &cfg, NULL, 0, err, sizeof(err)), 0);
    assert_false(a.fresh[1] || a.tasks[g1.v[1].base].empty);
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    ck_asg_free(&a);
    /* taken unaligned: every vertex's channel state moves (the map's
     * parallelism changed, and it is at the other end of the source's
     * and the aggregate's edges), each take of it marked so */
    m.flags = CK_CP_FLAG_UNALIGNED;
    assert_int_equal(ck_asg_plan(&a, &m, &g1, &cfg, NULL, 0, err, sizeof(err)), 0);
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
    assert_int_equal(ck_asg_applicable(&a, &m, &g1, err, sizeof(err)), 0);
    uint32_t marked[3] = {0};
    for (uint32_t s = 0; s < g1.nsubtasks; s++)
        for (uint32_t x = 0; x < a.tasks[s].ntakes; x++) {
            uint32_t w = a.tasks[s].takes[x].what;
            assert_int_equal(!(w & CK_ASG_REROUTE), !(w & (CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS)));
            marked[a.tasks[s].vertex] += (w & CK_ASG_REROUTE) != 0;
        }
    /* the map's old subtasks 0 and 1 go to new 0 and 1 (round robin in,
     * arbitrary out); new 2 and 3 read no channel state */
    assert_true(marked[0] == 2 && marked[1] == 2 && marked[2] == 3);
    /* invariant (7): a take of moving channel state not marked */
    a.tasks[g1.v[2].base].takes[0].what &= ~CK_ASG_REROUTE;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), CK_EINVARIANT);
    assert_non_null(strstr(inv.what, "is not marked to move channels"));
    a.tasks[g1.v[2].base].takes[0].what |= CK_ASG_REROUTE;
    /* invariant (6): the map's old subtask 0's output state (new 0 takes
     * it) taken by new 1 too would send its records twice */
    ck_asg_task *t1 = &a.tasks[g1.v[1].base + 1];
    assert_int_equal(t1->ntakes, 1);
    t1->takes[0].old = a.old_base[1];
    t1->takes[0].what = CK_ASG_OUT_CHANNELS | CK_ASG_REROUTE;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), CK_EINVARIANT);
    assert_non_null(strstr(inv.what, "output channel state is taken by 2 subtasks"));
    ck_asg_free(&a);
    /* the same snapshot into a job with unaligned checkpoints turned off:
     * the map's in-flight data is still restored, not dropped with a
     * fresh start */
    cfg.v[CK_CFG_CP_UNALIGNED] = 0;
    assert_null(ck_asg_vertex_state(&g0, 1, &cfg));
    assert_int_equal(ck_asg_plan(&a, &m, &g1, &cfg, NULL, 0, err, sizeof(err)), 0);
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
    assert_false(a.fresh[1] || a.tasks[g1.v[1].base].empty);
    assert_string_equal(a.keeps[1], "channel state (the snapshot's in-flight data)");
    assert_int_equal(a.tasks[g1.v[1].base].ntakes, 1);
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
}

/* The old encoder (_metadata version 3, "CKP3"), kept here to make the
 * files old runs left: u32 magic | u64 id | i64 trigger | u32 flags |
 * u64 input fingerprint | u32 subtasks | per subtask: u32 index | handles |
 * u32 crc32c. */
static void encode_v3(const ck_cp_meta *m, uint8_t **out, size_t *len)
{
    ck_wbuf w = {0};
    ck_wbuf_u32(&w, 0x33504b43u);
    ck_wbuf_u64(&w, m->id);
    ck_wbuf_u64(&w, (uint64_t)m->trigger);
    ck_wbuf_u32(&w, m->flags);
    ck_wbuf_u64(&w, m->input_fp);
    ck_wbuf_u32(&w, m->nsubtasks);
    for (uint32_t s = 0; s < m->nsubtasks; s++) {
        ck_wbuf_u32(&w, s);
        ck_handles_put(&w, &m->tasks[s]);
    }
    assert_int_equal(ck_wbuf_seal_crc(&w, out, len), 0);
}

/* An old-version _metadata still restores at the job's own parallelism,
 * each subtask its own handles, as before; at another it is refused. */
static void test_old_version_metadata(void **state)
{
    (void)state;
    ck_graph g;
    job(&g, 2, 3, 0, NULL, CK_OP_AGGREGATE);
    ck_cp_meta m;
    meta_of(&m, &g);
    uint8_t *p;
    size_t len;
    encode_v3(&m, &p, &len);
    ck_cp_meta d;
    const char *why;
    assert_int_equal(ck_cp_meta_decode(p, len, &d, &why), 0);
    free(p);
    assert_int_equal(d.version, 3);
    assert_int_equal(d.nvertices, 0);
    assert_int_equal(d.nsubtasks, g.nsubtasks);
    ck_asg a;
    char err[400];
    plan_ok(&a, &d, &g);
    assert_int_equal(ck_asg_applicable(&a, &d, &g, err, sizeof(err)), 0);
    for (uint32_t s = 0; s < g.nsubtasks; s++) {
        int v, i;
        ck_graph_locate(&g, s, &v, &i);
        assert_int_equal(a.tasks[s].old_vertex, v);
        assert_int_equal(a.tasks[s].old_subtask, i);
        assert_int_equal(a.tasks[s].ntakes, 1);
        assert_int_equal(a.tasks[s].takes[0].old, s);
        assert_int_equal(a.tasks[s].takes[0].handle, 0);
    }
    ck_asg_free(&a);
    /* re-encoded, it is version 4, with the operators it was taken to have */
    assert_int_equal(ck_cp_meta_encode(&d, &p, &len), CK_EINVAL); /* none: not written blind */
    ck_graph g1;
    job(&g1, 2, 4, 0, NULL, CK_OP_AGGREGATE);
    assert_int_equal(ck_asg_plan(&a, &d, &g1, NULL, NULL, 0, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "old format (version 3"));
    ck_cp_meta_free(&d);
    ck_cp_meta_free(&m);
}

/* Version 4 keeps the operators' uids, kinds, max parallelism and
 * positions; a file with two operators of one uid is corrupt. */
static void test_metadata_v4_operators(void **state)
{
    (void)state;
    ck_graph g;
    job(&g, 2, 3, 0, "counter", CK_OP_AGGREGATE);
    ck_cp_meta m;
    meta_of(&m, &g);
    uint8_t *p;
    size_t len;
    assert_int_equal(ck_cp_meta_encode(&m, &p, &len), 0);
    ck_cp_meta d;
    const char *why;
    assert_int_equal(ck_cp_meta_decode(p, len, &d, &why), 0);
    assert_int_equal(d.version, 5);
    assert_int_equal(d.nvertices, 2);
    assert_int_equal(d.vertices[1].parallelism, 3);
    assert_int_equal(d.vertices[1].nops, 2);
    assert_string_equal(d.vertices[1].ops[0].uid, "counter");
    assert_string_equal(d.vertices[1].ops[1].uid, "out");
    assert_int_equal(d.vertices[1].ops[0].kind, CK_OP_AGGREGATE);
    assert_int_equal(d.vertices[1].ops[0].max_parallelism, 128);
    assert_int_equal(d.vertices[1].ops[1].index, 2);
    assert_int_equal(d.nsubtasks, 5);
    ck_cp_meta_free(&d);
    free(p);
    snprintf(m.vertices[1].ops[1].uid, sizeof(m.vertices[1].ops[1].uid), "counter");
    assert_int_equal(ck_cp_meta_encode(&m, &p, &len), 0);
    assert_int_equal(ck_cp_meta_decode(p, len, &d, &why), CK_ECORRUPT);
    assert_string_equal(why, "two operators of the same uid or index");
    free(p);
    ck_cp_meta_free(&m);
}

/* run.json of run directory dir, without the fields that are the
 * machine's (wall_time_s, sim_speed) and the paths that name the run's
 * own directory: malloc'd. */
static char *run_json(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "grep -v -e '\"wall_time_s\"' -e '\"sim_speed\"' %s/run.json | sed 's|%s||g'", dir,
             dir);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    size_t got;
    while ((got = fread(b + n, 1, cap - 1 - n, f)) > 0) {
        n += got;
        if (n == cap - 1) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
    }
    b[n] = 0;
    assert_int_equal(pclose(f), 0);
    return b;
}

/* chandy run -s through the assignment: a job whose operators do not
 * match the savepoint's uids, or at another parallelism, is refused with
 * one line naming the uid; and a savepoint written in the old format (its
 * _metadata rewritten by the old encoder above) still restores, exactly
 * as the same savepoint in the new format does: the same run.json. */
static void test_old_version_savepoint_run(void **state)
{
    (void)state;
    char tmp[] = "/tmp/chandy-assign-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char cmd[2400];
    snprintf(cmd, sizeof(cmd), "cd %s && %s run scenarios/savepoint-stop.json --out %s/stop -q",
             CHANDY_SOURCE_DIR, CHANDY_BIN, tmp);
    assert_int_equal(system(cmd), 0);
    char stop[600], err[600];
    snprintf(stop, sizeof(stop), "%s/stop", tmp);
    static ck_savepoint sp;
    assert_int_equal(ck_sp_open(&sp, stop, err, sizeof(err)), 0);
    assert_int_equal(sp.meta.version, 5);
    char meta[700];
    snprintf(meta, sizeof(meta), "%s/_metadata", sp.path);
    /* restored from the new format */
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s run scenarios/savepoint-restore.json -s %s --out %s/new -q",
             CHANDY_SOURCE_DIR, CHANDY_BIN, stop, tmp);
    assert_int_equal(system(cmd), 0);
    /* The job's operators must match the snapshot's by uid: renamed, the
     * aggregate is refused, its uid named; renamed with its old name as
     * its uid, it restores; at another parallelism (4 -> 3) it restores
     * too: its keyed state moves. */
    static const struct {
        const char *sed, *want;
        int status;
    } variants[] = {
        {"s/\"name\": \"count\",/\"name\": \"counter\",/",
         "operator uid \"count\", which the job does not have", 2},
        {"s/\"name\": \"count\",/\"name\": \"counter\", \"uid\": \"count\",/", NULL, 0},
        {"s/\"parallelism\": 4/\"parallelism\": 3/g", NULL, 0}, /* keyed state moves */
    };
    for (size_t k = 0; k < sizeof(variants) / sizeof(variants[0]); k++) {
        snprintf(cmd, sizeof(cmd),
                 "sed '%s' %s/scenarios/savepoint-restore.json > %s/v%zu.json && cd %s && "
                 "%s run %s/v%zu.json -s %s --out %s/v%zu -q 2> %s/v%zu.err",
                 variants[k].sed, CHANDY_SOURCE_DIR, tmp, k, CHANDY_SOURCE_DIR, CHANDY_BIN, tmp,
                 k, stop, tmp, k, tmp, k);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), variants[k].status);
        if (variants[k].want) {
            snprintf(cmd, sizeof(cmd), "grep -qF '%s' %s/v%zu.err", variants[k].want, tmp, k);
            if (system(cmd)) {
                snprintf(cmd, sizeof(cmd), "cat %s/v%zu.err >&2", tmp, k);
                CK_IGNORE(system(cmd));
            }
            snprintf(cmd, sizeof(cmd), "grep -qF '%s' %s/v%zu.err && test $(wc -l < %s/v%zu.err) = 1",
                     variants[k].want, tmp, k, tmp, k);
            assert_int_equal(system(cmd), 0);
        }
    }
    /* rewritten in the old, and restored again (its handles without the
     * operator-state counts, which came with version 5) */
    uint8_t *p;
    size_t len;
    for (uint32_t s = 0; s < sp.meta.nsubtasks; s++)
        for (uint32_t h = 0; h < sp.meta.tasks[s].n; h++)
            sp.meta.tasks[s].v[h].flags &= (uint8_t)~CK_HANDLE_OPCOUNTS;
    encode_v3(&sp.meta, &p, &len);
    ck_sp_free(&sp);
    FILE *f = fopen(meta, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(p);
    assert_int_equal(ck_sp_open(&sp, stop, err, sizeof(err)), 0);
    assert_int_equal(sp.meta.version, 3);
    ck_sp_free(&sp);
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s run scenarios/savepoint-restore.json -s %s --out %s/old -q",
             CHANDY_SOURCE_DIR, CHANDY_BIN, stop, tmp);
    assert_int_equal(system(cmd), 0);
    char a[700], b[700];
    snprintf(a, sizeof(a), "%s/new", tmp);
    snprintf(b, sizeof(b), "%s/old", tmp);
    char *ja = run_json(a), *jb = run_json(b);
    assert_true(strlen(ja) > 1000);
    assert_string_equal(ja, jb);
    free(ja);
    free(jb);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    assert_int_equal(system(cmd), 0);
}


/* The old subtasks new subtask i reads under (ship, out): "a b c". */
static void reads_str(ck_ship ship, int out, uint32_t p0, uint32_t p1, uint32_t i, char *buf,
                      size_t len)
{
    buf[0] = 0;
    for (uint32_t k = 0; k < p0; k++) {
        int r = ck_asg_channel_reads(ship, out, p0, p1, k, i);
        assert_true(r == 0 || r == 1);
        if (r) {
            size_t l = strlen(buf);
            snprintf(buf + l, len - l, "%s%u", l ? " " : "", k);
        }
    }
}

/* Flink's SubtaskStateMapper per partitioner, by hand: a hash edge's
 * input channel state by key-group range overlap (RANGE, 32768 key
 * groups), its output state and a rebalance edge's both sides round
 * robin (ARBITRARY, ROUND_ROBIN), pointwise and broadcast edges refused
 * at a changed parallelism and their own at an unchanged one. */
static void test_channel_mappers_by_hand(void **state)
{
    (void)state;
    static const struct {
        ck_ship ship;
        int out;
        uint32_t p0, p1, i;
        const char *want;
    } cases[] = {
        /* hash input, 2 -> 3: new [0,10922] [10923,21845] [21846,32767] */
        {CK_SHIP_HASH, 0, 2, 3, 0, "0"},
        {CK_SHIP_HASH, 0, 2, 3, 1, "0 1"},
        {CK_SHIP_HASH, 0, 2, 3, 2, "1"},
        /* hash input, 3 -> 2 */
        {CK_SHIP_HASH, 0, 3, 2, 0, "0 1"},
        {CK_SHIP_HASH, 0, 3, 2, 1, "1 2"},
        /* hash output (ARBITRARY: round robin) */
        {CK_SHIP_HASH, 1, 3, 2, 0, "0 2"},
        {CK_SHIP_HASH, 1, 3, 2, 1, "1"},
        {CK_SHIP_HASH, 1, 2, 3, 2, ""},
        /* rebalance, both sides round robin: 10 -> 4 and 2 -> 5 */
        {CK_SHIP_REBALANCE, 0, 10, 4, 0, "0 4 8"},
        {CK_SHIP_REBALANCE, 0, 10, 4, 3, "3 7"},
        {CK_SHIP_REBALANCE, 1, 10, 4, 1, "1 5 9"},
        {CK_SHIP_REBALANCE, 0, 2, 5, 1, "1"},
        {CK_SHIP_REBALANCE, 0, 2, 5, 4, ""},
        /* unchanged parallelism: its own, whatever the edge */
        {CK_SHIP_BROADCAST, 0, 3, 3, 1, "1"},
        {CK_SHIP_FORWARD, 1, 2, 2, 0, "0"},
        {CK_SHIP_HASH, 0, 4, 4, 2, "2"},
    };
    char got[200];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        reads_str(cases[c].ship, cases[c].out, cases[c].p0, cases[c].p1, cases[c].i, got,
                  sizeof(got));
        if (strcmp(got, cases[c].want))
            fprintf(stderr, "case %zu: %s %s %u -> %u, new %u: got \"%s\", want \"%s\"\n", c,
                    ck_ship_name(cases[c].ship), cases[c].out ? "output" : "input", cases[c].p0,
                    cases[c].p1, cases[c].i, got, cases[c].want);
        assert_string_equal(got, cases[c].want);
    }
    assert_int_equal(ck_asg_channel_mapper(CK_SHIP_HASH, 0), CK_ASG_MAP_RANGE);
    assert_int_equal(ck_asg_channel_mapper(CK_SHIP_HASH, 1), CK_ASG_MAP_ARBITRARY);
    assert_int_equal(ck_asg_channel_mapper(CK_SHIP_REBALANCE, 0), CK_ASG_MAP_ROUND_ROBIN);
    assert_true(ck_asg_mapper_ambiguous(CK_ASG_MAP_RANGE));
    assert_false(ck_asg_mapper_ambiguous(CK_ASG_MAP_ROUND_ROBIN));
    ck_ship refused[] = {CK_SHIP_FORWARD, CK_SHIP_RESCALE, CK_SHIP_BROADCAST};
    for (int k = 0; k < 3; k++)
        for (int out = 0; out < 2; out++) {
            assert_int_equal(ck_asg_channel_mapper(refused[k], out), CK_ASG_MAP_UNSUPPORTED);
            assert_int_equal(ck_asg_channel_reads(refused[k], out, 2, 3, 0, 0), CK_EINVAL);
        }
    assert_int_equal(ck_asg_channel_reads(CK_SHIP_HASH, 0, 2, 3, 2, 0), CK_EINVAL);
    assert_int_equal(ck_asg_channel_reads(CK_SHIP_HASH, 0, 2, 3, 0, 3), CK_EINVAL);
    assert_int_equal(ck_asg_channel_reads(CK_SHIP_HASH, 0, 0, 3, 0, 0), CK_EINVAL);
}

/* Over many parallelisms and max parallelisms: every old subtask's
 * channel state goes to at least one new subtask, on both sides of hash
 * and rebalance edges; over a hash edge, a record of key group kg held
 * in old subtask k's input channel state (k owned kg) is read by kg's
 * new owner, and after the recipients' key-group filter lands in exactly
 * that one. */
static void test_channel_state_every_record_lands_once(void **state)
{
    (void)state;
    static const int maxps[] = {128, 7, 100, 32768};
    ck_ship ships[] = {CK_SHIP_HASH, CK_SHIP_REBALANCE};
    for (uint32_t p0 = 1; p0 <= 9; p0++)
        for (uint32_t p1 = 1; p1 <= 9; p1++) {
            for (int s = 0; s < 2; s++)
                for (int out = 0; out < 2; out++)
                    for (uint32_t k = 0; k < p0; k++) {
                        int n = 0;
                        for (uint32_t i = 0; i < p1; i++)
                            n += ck_asg_channel_reads(ships[s], out, p0, p1, k, i) == 1;
                        assert_true(n >= 1);
                        if (!(s == 0 && out == 0)) /* round robin: unique */
                            assert_int_equal(n, 1);
                    }
            for (size_t mi = 0; mi < sizeof(maxps) / sizeof(maxps[0]); mi++) {
                int maxp = maxps[mi];
                if ((int)p0 > maxp || (int)p1 > maxp)
                    continue;
                for (int kg = 0; kg < maxp; kg++) {
                    uint32_t k = (uint32_t)ck_kg_subtask(kg, (int)p0, maxp);
                    int landed = 0;
                    for (uint32_t i = 0; i < p1; i++) {
                        if (ck_asg_channel_reads(CK_SHIP_HASH, 0, p0, p1, k, i) != 1)
                            continue;
                        /* the recipient's filter: its own key groups only */
                        landed += ck_kgr_contains(ck_kg_range((int)i, (int)p1, maxp), kg);
                    }
                    if (landed != 1)
                        fprintf(stderr, "%u -> %u, max parallelism %d: key group %d of old "
                                "subtask %u lands in %d subtasks\n", p0, p1, maxp, kg, k, landed);
                    assert_int_equal(landed, 1);
                }
            }
        }
}

/* The plan at a changed parallelism of a vertex behind a hash edge with
 * unaligned checkpoints: the aggregate 2 -> 3 takes its input channel
 * state by key-group overlap (new 1 from old 0 and 1) and holds
 * invariant (6); a plan that drops one old subtask's channel state
 * breaks it. */
static void test_plan_channel_takes(void **state)
{
    (void)state;
    ck_graph g0, g1;
    job(&g0, 1, 2, 128, "agg", CK_OP_AGGREGATE);
    job(&g1, 1, 3, 128, "agg", CK_OP_AGGREGATE);
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CP_INTERVAL] = 100 * CK_NS_PER_MS;
    cfg.v[CK_CFG_CP_UNALIGNED] = 1;
    ck_cp_meta m;
    meta_of(&m, &g0);
    m.flags = CK_CP_FLAG_UNALIGNED; /* a checkpoint taken unaligned */
    ck_asg a;
    char err[400];
    assert_int_equal(ck_asg_plan(&a, &m, &g1, &cfg, NULL, 0, err, sizeof(err)), 0);
    ck_inv inv;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
    const char *want[] = {"0", "0 1", "1"};
    for (int i = 0; i < 3; i++) {
        const ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)i];
        char got[64] = "";
        for (uint32_t k = 0; k < t->ntakes; k++)
            if (t->takes[k].what & CK_ASG_CHANNELS) {
                size_t l = strlen(got);
                snprintf(got + l, sizeof(got) - l, "%s%u", l ? " " : "",
                         t->takes[k].old - a.old_base[1]);
            }
        assert_string_equal(got, want[i]);
    }
    /* new 2 no longer reads old 1's channel state: old 1's is still read by
     * new 1, so drop new 1's too */
    for (int i = 1; i < 3; i++) {
        ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)i];
        for (uint32_t k = 0; k < t->ntakes; k++)
            if (t->takes[k].old == a.old_base[1] + 1)
                t->takes[k].what &= ~CK_ASG_CHANNELS;
    }
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), CK_EINVARIANT);
    assert_non_null(strstr(inv.what, "input channel state is taken by no subtask"));
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
}


/* An aligned snapshot holds no channel state: the aggregate rescaled
 * 8 -> 4 in front of a rebalance edge (a ROUND_ROBIN output mapping)
 * takes from an aligned checkpoint only the files of the old subtasks
 * whose key groups it gets (2i and 2i + 1), none for channel state, so
 * none of its subtasks downloads a file it needs nothing from; a plan
 * that takes channel state from such a snapshot breaks invariant (6).
 * From a checkpoint taken unaligned the same plan also takes the output
 * channel state dealt round robin. */
static void test_aligned_snapshot_no_channel_takes(void **state)
{
    (void)state;
    ck_graph g0, g1;
    ck_graph *gs[2] = {&g0, &g1};
    for (int k = 0; k < 2; k++) {
        ck_config cfg;
        ck_config_defaults(&cfg);
        ck_job_spec spec = {.nops = 3};
        spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 4,
                                   .input = -1};
        spec.ops[1] = (ck_op_spec){.name = "agg", .kind = CK_OP_AGGREGATE,
                                   .parallelism = k ? 4 : 8, .input = 0, .ship = CK_SHIP_HASH,
                                   .max_parallelism = 128};
        spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = k ? 4 : 8,
                                   .input = 1, .ship = CK_SHIP_REBALANCE};
        int bad;
        char e[200];
        assert_int_equal(ck_graph_build(gs[k], &spec, &cfg, &bad, e, sizeof(e)), 0);
    }
    ck_cp_meta m;
    meta_of(&m, &g0);
    ck_asg a;
    ck_inv inv;
    plan_ok(&a, &m, &g1);
    for (int i = 0; i < 4; i++) {
        const ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)i];
        assert_int_equal(t->ntakes, 2);
        for (uint32_t k = 0; k < t->ntakes; k++) {
            assert_int_equal(t->takes[k].old - a.old_base[1], (uint32_t)(2 * i) + k);
            assert_int_equal(t->takes[k].what & (CK_ASG_CHANNELS | CK_ASG_OUT_CHANNELS), 0);
        }
    }
    a.tasks[g1.v[1].base].takes[0].what |= CK_ASG_OUT_CHANNELS;
    assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), CK_EINVARIANT);
    assert_non_null(strstr(inv.what, "takes channel state from a snapshot that holds none"));
    ck_asg_free(&a);
    m.flags = CK_CP_FLAG_UNALIGNED;
    plan_ok(&a, &m, &g1);
    uint32_t outs = 0, takes = 0;
    for (int i = 0; i < 4; i++) {
        const ck_asg_task *t = &a.tasks[g1.v[1].base + (uint32_t)i];
        takes += t->ntakes;
        for (uint32_t k = 0; k < t->ntakes; k++)
            outs += (t->takes[k].what & CK_ASG_OUT_CHANNELS) != 0;
    }
    assert_true(outs >= 8 && takes > 8);
    ck_asg_free(&a);
    ck_cp_meta_free(&m);
}

/* src(nsrc) -> buf (a buffer, counting what it saw, p) -> out(p), over a
 * rebalance edge: two vertices, the sink chained to the buffer. */
static void job_buf(ck_graph *g, int nsrc, int p)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = nsrc,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "buf", .kind = CK_OP_BUFFER, .parallelism = p, .input = 0,
                               .ship = CK_SHIP_REBALANCE, .buffer_count = 10,
                               .buffer_seen = 1};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = p, .input = 1};
    int bad;
    char e[200];
    if (ck_graph_build(g, &spec, &cfg, &bad, e, sizeof(e)))
        fprintf(stderr, "job_buf: %s\n", e);
    assert_int_equal(g->nv, 2);
}

/* Lists on each canonical handle of m (of job_buf's g) its operator
 * state as a run's subtasks would: the sources' partitions (parts[k]) and
 * the partitions known, the buffer's `buffered` (buffered[k]) and its
 * union `count_seen`. */
static void add_counts(ck_cp_meta *m, const ck_graph *g, const uint32_t *parts,
                       const uint32_t *buffered)
{
    for (uint32_t s = 0; s < m->nsubtasks; s++) {
        int v, i;
        ck_graph_locate(g, s, &v, &i);
        ck_handle_opcount c[2];
        memset(c, 0, sizeof(c));
        if (v == 0) {
            c[0] = (ck_handle_opcount){.op = 0, .mode = 1, .entries = parts[i]};
            snprintf(c[0].name, sizeof(c[0].name), "%s", CK_SOURCE_SPLITS);
            c[1] = (ck_handle_opcount){.op = 0, .mode = 3, .entries = 1};
            snprintf(c[1].name, sizeof(c[1].name), "%s", CK_SOURCE_KNOWN);
        } else {
            c[0] = (ck_handle_opcount){.op = 1, .mode = 1, .entries = buffered[i]};
            snprintf(c[0].name, sizeof(c[0].name), "buffered");
            c[1] = (ck_handle_opcount){.op = 1, .mode = 2, .entries = 1};
            snprintf(c[1].name, sizeof(c[1].name), "count_seen");
        }
        assert_int_equal(ck_handles_opcounts_last(&m->tasks[s], c, 2), 0);
    }
}

/* The chunks new subtask j of vertex v gets of operator state `name`. */
static void chunks_of(const ck_asg *a, const ck_graph *g, const ck_asg_opstate *os, int v,
                      int j, const char *name, char *buf, size_t len)
{
    const ck_asg_task *t = &a->tasks[g->v[v].base + (uint32_t)j];
    buf[0] = 0;
    for (uint32_t k = 0; k < t->nops; k++)
        if (!strcmp(os[t->ops[k].state].name, name))
            chunks_str(t->ops[k].v, t->ops[k].n, buf, len);
}

/* Operator state dealt from the _metadata's counts alone, as the job
 * manager does (it reads no state file): through a version-5 _metadata
 * and back, the buffer's split-distribute list 3 -> 2 and 2 -> 5 in
 * Flink's contiguous chunks, its union list to every subtask, the
 * sources' broadcast list j % oldP and their partitions split; without
 * counts (a version-4 file) the sources' partitions by the topic's rule
 * and nothing else; counts that contradict the snapshot refused. */
static void test_opstate_from_meta(void **state)
{
    (void)state;
    static const struct {
        int s0, p0, s1, p1;
        uint32_t parts[3], buffered[3];
        const char *want[5];
    } cases[] = {
        {1, 3, 1, 2, {4}, {3, 1, 2}, {"0:0+3", "1:0+1 2:0+2"}},
        {1, 2, 1, 5, {4}, {4, 3}, {"0:0+2", "0:2+2", "1:0+1", "1:1+1", "1:2+1"}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ck_graph g0, g1;
        job_buf(&g0, cases[c].s0, cases[c].p0);
        job_buf(&g1, 3, cases[c].p1); /* the source 1 -> 3 too */
        ck_cp_meta m0, m;
        meta_of(&m0, &g0);
        add_counts(&m0, &g0, cases[c].parts, cases[c].buffered);
        uint8_t *p;
        size_t len;
        const char *why;
        assert_int_equal(ck_cp_meta_encode(&m0, &p, &len), 0);
        assert_int_equal(ck_cp_meta_decode(p, len, &m, &why), 0);
        free(p);
        assert_int_equal(m.version, 5);
        ck_asg_opstate os[CK_ASG_MAX_OPSTATES];
        uint32_t *counts;
        char err[300];
        int nos = ck_asg_opstate_from_meta(&m, &g1, "clicks", 4, os, CK_ASG_MAX_OPSTATES,
                                           &counts, err, sizeof(err));
        assert_int_equal(nos, 4);
        ck_asg a;
        assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, os, nos, err, sizeof(err)), 0);
        ck_inv inv;
        assert_int_equal(ck_asg_check(&a, &m, &g1, &inv), 0);
        char got[200], want[200];
        for (int j = 0; j < cases[c].p1; j++) {
            chunks_of(&a, &g1, os, 1, j, "buffered", got, sizeof(got));
            assert_string_equal(got, cases[c].want[j]);
            chunks_of(&a, &g1, os, 1, j, "count_seen", got, sizeof(got));
            want[0] = 0;
            for (int k = 0; k < cases[c].p0; k++) {
                size_t l = strlen(want);
                snprintf(want + l, sizeof(want) - l, "%s%d:0+1", k ? " " : "", k);
            }
            assert_string_equal(got, want);
        }
        for (int j = 0; j < 3; j++) { /* the source 1 -> 3 */
            chunks_of(&a, &g1, os, 0, j, CK_SOURCE_KNOWN, got, sizeof(got));
            assert_string_equal(got, "0:0+1");
            chunks_of(&a, &g1, os, 0, j, CK_SOURCE_SPLITS, got, sizeof(got));
            snprintf(want, sizeof(want), "0:%d+%d", j == 0 ? 0 : j + 1, j == 0 ? 2 : 1);
            assert_string_equal(got, want);
        }
        ck_asg_free(&a);
        free(counts);
        /* without counts (version 4): the sources' partitions, by the topic */
        for (uint32_t s = 0; s < m.nsubtasks; s++)
            m.tasks[s].v[0].flags &= (uint8_t)~CK_HANDLE_OPCOUNTS;
        nos = ck_asg_opstate_from_meta(&m, &g1, "clicks", 4, os, CK_ASG_MAX_OPSTATES, &counts,
                                       err, sizeof(err));
        assert_int_equal(nos, 1);
        assert_string_equal(os[0].name, CK_ASG_SOURCE_STATE);
        assert_int_equal(os[0].op, 0);
        assert_int_equal(os[0].counts[0], 4);
        free(counts);
        /* no topic: nothing */
        assert_int_equal(ck_asg_opstate_from_meta(&m, &g1, NULL, 0, os, CK_ASG_MAX_OPSTATES,
                                                  &counts, err, sizeof(err)),
                         0);
        free(counts);
        ck_cp_meta_free(&m);
        ck_cp_meta_free(&m0);
    }
    /* broadcast state j % oldP: the source 2 -> 3 */
    ck_graph g0, g1;
    job_buf(&g0, 2, 2);
    job_buf(&g1, 3, 2);
    ck_cp_meta m;
    meta_of(&m, &g0);
    const uint32_t parts[] = {2, 2}, buffered[] = {1, 1};
    add_counts(&m, &g0, parts, buffered);
    ck_asg_opstate os[CK_ASG_MAX_OPSTATES];
    uint32_t *counts;
    char err[300], got[100];
    int nos = ck_asg_opstate_from_meta(&m, &g1, "clicks", 4, os, CK_ASG_MAX_OPSTATES, &counts,
                                       err, sizeof(err));
    assert_int_equal(nos, 4);
    ck_asg a;
    assert_int_equal(ck_asg_plan(&a, &m, &g1, NULL, os, nos, err, sizeof(err)), 0);
    static const char *const known[3] = {"0:0+1", "1:0+1", "0:0+1"};
    for (int j = 0; j < 3; j++) {
        chunks_of(&a, &g1, os, 0, j, CK_SOURCE_KNOWN, got, sizeof(got));
        assert_string_equal(got, known[j]);
    }
    ck_asg_free(&a);
    free(counts);
    /* counts that contradict the snapshot: one state in two modes, an
     * operator its vertex does not have */
    m.tasks[3].v[0].opc[1].mode = 1;
    snprintf(m.tasks[3].v[0].opc[1].name, sizeof(m.tasks[3].v[0].opc[1].name), "buffered");
    m.tasks[3].v[0].opc[0].mode = 2;
    snprintf(m.tasks[3].v[0].opc[0].name, sizeof(m.tasks[3].v[0].opc[0].name), "count_seen");
    m.tasks[2].v[0].opc[1].mode = 1;
    assert_int_equal(ck_asg_opstate_from_meta(&m, &g1, "clicks", 4, os, CK_ASG_MAX_OPSTATES,
                                              &counts, err, sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "operator uid \"buf\": the snapshot lists its state "
                                "\"count_seen\" as"));
    assert_null(counts);
    m.tasks[2].v[0].opc[1].mode = 2;
    m.tasks[2].v[0].opc[0].op = 0;
    assert_int_equal(ck_asg_opstate_from_meta(&m, &g1, "clicks", 4, os, CK_ASG_MAX_OPSTATES,
                                              &counts, err, sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "lists operator state \"buffered\" of operator 0, which its "
                                "vertex does not have"));
    ck_cp_meta_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyed_ranges_by_hand),
        cmocka_unit_test(test_every_key_group_once),
        cmocka_unit_test(test_max_parallelism_rules),
        cmocka_unit_test(test_split_distribute_worked_example),
        cmocka_unit_test(test_union_and_broadcast),
        cmocka_unit_test(test_source_partitions_dealt),
        cmocka_unit_test(test_refusals_name_the_uid),
        cmocka_unit_test(test_stateless_vertex_starts_empty),
        cmocka_unit_test(test_old_version_metadata),
        cmocka_unit_test(test_metadata_v4_operators),
        cmocka_unit_test(test_old_version_savepoint_run),
        cmocka_unit_test(test_channel_mappers_by_hand),
        cmocka_unit_test(test_channel_state_every_record_lands_once),
        cmocka_unit_test(test_plan_channel_takes),
        cmocka_unit_test(test_aligned_snapshot_no_channel_takes),
        cmocka_unit_test(test_opstate_from_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
