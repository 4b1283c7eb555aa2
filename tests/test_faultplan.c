/*
 * test_faultplan.c - the timeline as both backends play it
 * (backend/faultplan.h): when each fault starts and ends, triggered
 * faults waiting for their moment, and the conditions in force when
 * faults overlap; output faults armed in the sinks' directory and what
 * the backend then records of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "bytes.h"
#include "element.h"
#include "error.h"
#include "faultplan.h"
#include "graph.h"
#include "taskmanager.h"
#include "wire.h"
#include "invcheck.h"

#define MS INT64_C(1000000)

/* 2 task managers: hosts tm0 0, tm1 1, jm 2, store 3. */
enum { TM0, TM1, JM, STORE, NTM = 2 };

static ck_fault faults[8];
static ck_fault_run runs[8];
static ck_plan plan;

static void setup_plan(int n)
{
    memset(runs, 0, sizeof(runs));
    for (int i = 0; i < n; i++)
        runs[i].spec = &faults[i];
    assert_int_equal(ck_plan_init(&plan, faults, n, NTM, runs), CK_OK);
}

static ck_fault slow_link(ck_time at, ck_time dur, int host, double factor, ck_time lat)
{
    return (ck_fault){.kind = CK_FAULT_SLOW_LINK, .at = at, .duration = dur, .host = host,
                      .factor = factor, .latency = lat};
}

/* Plays every change due up to t; returns how many. */
static int play_until(ck_time t)
{
    int which, end, waiting, n = 0;
    ck_time next;
    while ((next = ck_plan_next(&plan, &which, &end, &waiting)) <= t && which >= 0) {
        if (end)
            ck_plan_end(&plan, which, next);
        else
            ck_plan_start(&plan, which, next);
        assert_int_equal(ck_plan_check(&plan, NULL), 0); /* faultplan.h, at every change */
        n++;
    }
    return n;
}

static void test_overlapping_slowdowns(void **state)
{
    (void)state;
    faults[0] = slow_link(10 * MS, 100 * MS, TM0, 0.5, 1 * MS);
    faults[1] = slow_link(20 * MS, 30 * MS, TM0, 0.1, 2 * MS);
    faults[2] = (ck_fault){.kind = CK_FAULT_SLOW_CPU, .at = 15 * MS, .duration = 50 * MS,
                           .host = TM1, .factor = 0.25};
    faults[3] = (ck_fault){.kind = CK_FAULT_SLOW_CPU, .at = 16 * MS, .duration = 10 * MS,
                           .host = TM1, .factor = 0.5};
    setup_plan(4);
    assert_true(plan.bw[TM0] == 1.0 && plan.lat[TM0] == 0 && plan.cpu[TM1] == 1.0);
    assert_int_equal(play_until(10 * MS), 1);
    assert_true(plan.bw[TM0] == 0.5);
    assert_int_equal(plan.lat[TM0], 1 * MS);
    /* Both in force: the lowest bandwidth factor, the latencies added. */
    assert_int_equal(play_until(25 * MS), 3);
    assert_true(plan.bw[TM0] == 0.1);
    assert_int_equal(plan.lat[TM0], 3 * MS);
    /* The slowest CPU wins, and says which fault sets it. */
    assert_true(plan.cpu[TM1] == 0.25);
    assert_int_equal(plan.cpu_by[TM1], 2);
    assert_true(plan.bw[TM1] == 1.0 && plan.cpu[TM0] == 1.0); /* other hosts untouched */
    /* 26 ms: fault 3 ends; 50 ms: fault 1 ends, fault 0 alone again. */
    assert_int_equal(play_until(50 * MS), 2);
    assert_true(plan.cpu[TM1] == 0.25);
    assert_true(plan.bw[TM0] == 0.5);
    assert_int_equal(plan.lat[TM0], 1 * MS);
    assert_int_equal(play_until(1000 * MS), 2);
    assert_true(plan.bw[TM0] == 1.0 && plan.lat[TM0] == 0 && plan.cpu[TM1] == 1.0);
    assert_int_equal(plan.cpu_by[TM1], -1);
    for (int i = 0; i < 4; i++) {
        assert_true(runs[i].applied && runs[i].ended);
        assert_int_equal(runs[i].applied_at, faults[i].at);
        assert_int_equal(runs[i].ended_at, faults[i].at + faults[i].duration);
    }
    ck_plan_free(&plan);
}

static void test_overlapping_cuts(void **state)
{
    (void)state;
    /* tm0's link down 10..40 ms; jm and tm0 apart from tm1 20..60 ms. */
    faults[0] = (ck_fault){.kind = CK_FAULT_LINK_DOWN, .at = 10 * MS, .duration = 30 * MS,
                           .host = TM0};
    faults[1] = (ck_fault){.kind = CK_FAULT_PARTITION, .at = 20 * MS, .duration = 40 * MS,
                           .nside = 3, .side_host = {JM, TM0, TM1}, .side = {0, 0, 1}};
    setup_plan(2);
    assert_false(ck_plan_is_cut(&plan, TM0, JM));
    play_until(10 * MS);
    for (int h = 0; h < 4; h++)
        if (h != TM0)
            assert_true(ck_plan_is_cut(&plan, TM0, h) && ck_plan_is_cut(&plan, h, TM0));
    assert_false(ck_plan_is_cut(&plan, TM1, JM));
    assert_false(ck_plan_is_cut(&plan, TM0, TM0));
    play_until(20 * MS);
    assert_int_equal(plan.cut[TM0 * plan.nh + TM1], 2); /* cut twice */
    assert_true(ck_plan_is_cut(&plan, TM1, JM));
    assert_false(ck_plan_is_cut(&plan, TM1, STORE)); /* the store is on neither side */
    play_until(40 * MS); /* the link is back; the partition still holds tm0 from tm1 */
    assert_true(ck_plan_is_cut(&plan, TM0, TM1));
    assert_false(ck_plan_is_cut(&plan, TM0, JM));
    assert_false(ck_plan_is_cut(&plan, TM0, STORE));
    play_until(60 * MS);
    for (int a = 0; a < plan.nh * plan.nh; a++)
        assert_int_equal(plan.cut[a], 0);
    ck_plan_free(&plan);
    /* A cut the backend could not apply is lifted. */
    faults[0].at = 0;
    faults[0].duration = 0; /* for good */
    setup_plan(1);
    play_until(0);
    assert_true(ck_plan_is_cut(&plan, TM0, TM1));
    ck_plan_failed(&plan, 0, "no such link");
    assert_false(ck_plan_is_cut(&plan, TM0, TM1));
    assert_string_equal(runs[0].detail, "no such link");
    ck_plan_free(&plan);
}

static void test_order_and_triggers(void **state)
{
    (void)state;
    /* Two at 5 ms (ties: timeline order), one triggered 2 ms after the
     * second checkpoint completes, lasting 10 ms. */
    faults[0] = (ck_fault){.kind = CK_FAULT_SAVEPOINT, .at = 5 * MS};
    faults[1] = slow_link(5 * MS, 1 * MS, TM1, 0.5, 0);
    faults[2] = slow_link(2 * MS, 10 * MS, TM0, 1.0, 5 * MS);
    faults[2].moment = CK_MOMENT_CHECKPOINT_COMPLETED;
    faults[2].nth = 2;
    setup_plan(3);
    assert_int_equal(plan.ntriggered, 1);
    int which, end, waiting;
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), 5 * MS);
    assert_int_equal(which, 0);
    assert_int_equal(end, 0);
    assert_int_equal(waiting, 1);
    ck_plan_start(&plan, 0, 5 * MS);
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), 5 * MS);
    assert_int_equal(which, 1);
    ck_plan_start(&plan, 1, 5 * MS);
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), 6 * MS);
    assert_true(which == 1 && end == 1);
    ck_plan_end(&plan, 1, 6 * MS);
    /* The savepoint is instant: nothing ends it. Fault 2 waits. */
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), CK_TIME_NEVER);
    assert_int_equal(which, -1);
    assert_int_equal(waiting, 1);
    /* Checkpoint 7 completes: the first occurrence, told to many subtasks. */
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 7, 1, 100 * MS), 0);
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 7, 1, 101 * MS), 0);
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_TRIGGERED, 8, 1, 110 * MS), 0);
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), CK_TIME_NEVER);
    /* Checkpoint 8 completes: the second; due 2 ms later. */
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 8, 1, 200 * MS), 1);
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 8, 1, 200 * MS), 0);
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), 202 * MS);
    assert_int_equal(which, 2);
    assert_int_equal(waiting, 0);
    ck_plan_start(&plan, 2, 202 * MS);
    assert_int_equal(plan.lat[TM0], 5 * MS);
    /* A triggered fault ends `duration` after it started. */
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), 212 * MS);
    assert_true(which == 2 && end == 1);
    /* A third completion makes nothing due again. */
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 9, 1, 300 * MS), 0);
    ck_plan_free(&plan);
}

/* The moments the backends see in the messages they carry: the job
 * manager's checkpoint trigger and completion (the checkpoint's id), and
 * a subtask's report that it finished (its endpoint: each attempt of a
 * subtask finishes once); nothing else, and nothing from anyone else. */
static void test_message_moments(void **state)
{
    (void)state;
    uint8_t body[8];
    ck_put_u64(body, 42);
    size_t n;
    ck_moment m;
    uint64_t id;
    uint32_t task = CK_EP_TASK0 + 7;
    uint8_t *trig = ck_wire_msg(CK_MSG_CP_TRIGGER, CK_EP_JM, task, 0, body, 8, &n);
    assert_int_equal(ck_plan_msg_moment(CK_EP_JM, trig, n, &m, &id), 1);
    assert_true(m == CK_MOMENT_CHECKPOINT_TRIGGERED && id == 42);
    assert_int_equal(ck_plan_msg_moment(task, trig, n, &m, &id), 0); /* not the JM's */
    free(trig);
    uint8_t *fin = ck_wire_msg(CK_MSG_TASK_FINISHED, task, CK_EP_JM, 0, NULL, 0, &n);
    assert_int_equal(ck_plan_msg_moment(task, fin, n, &m, &id), 1);
    assert_true(m == CK_MOMENT_SUBTASK_FINISHED && id == task);
    assert_int_equal(ck_plan_msg_moment(CK_EP_JM, fin, n, &m, &id), 0);
    assert_int_equal(ck_plan_msg_moment(CK_EP_TM0, fin, n, &m, &id), 0);
    assert_string_equal(ck_moment_name(CK_MOMENT_SUBTASK_FINISHED), "subtask_finished");
    free(fin);
    uint8_t *ended = ck_wire_msg(CK_MSG_TASK_ENDED, task, CK_EP_JM, 0, NULL, 0, &n);
    assert_int_equal(ck_plan_msg_moment(task, ended, n, &m, &id), 0);
    free(ended);
    /* A DEPLOY of a generation after the first is a rescale's: its
     * generation is the id (its DEPLOYs to each task manager, and a
     * restart of it, count once); the first generation's is none, and
     * one too short to say is none. */
    uint16_t hosts[3] = {0, 1, 1};
    for (int gen = 0; gen < 3; gen++) {
        size_t blen;
        uint8_t *b = ck_tm_deploy_body(4, gen, NULL, 3, hosts, NULL, NULL, 0, &blen);
        assert_non_null(b);
        assert_int_equal(ck_tm_deploy_generation(b, blen), gen);
        /* attempt, checkpoint, n, 3 hosts, flags: the generation cut short */
        assert_int_equal(ck_tm_deploy_generation(b, 4 + 8 + 4 + 6 + 4 + 3), -1);
        assert_int_equal(ck_tm_deploy_generation(b, 4 + 8 + 4 + 6 + 4 + 4), gen);
        uint8_t *dm = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0 + 1, 4, b, blen, &n);
        assert_int_equal(ck_plan_msg_moment(CK_EP_JM, dm, n, &m, &id), gen > 0);
        if (gen > 0)
            assert_true(m == CK_MOMENT_RESCALE_DEPLOYED && id == (uint64_t)gen);
        assert_int_equal(ck_plan_msg_moment(CK_EP_TM0, dm, n, &m, &id), 0);
        free(dm);
        dm = ck_wire_msg(CK_MSG_DEPLOY, CK_EP_JM, CK_EP_TM0, 4, b, 10, &n);
        assert_int_equal(ck_plan_msg_moment(CK_EP_JM, dm, n, &m, &id), 0);
        free(dm);
        free(b);
    }
    assert_string_equal(ck_moment_name(CK_MOMENT_RESCALE_DEPLOYED), "rescale_deployed");
    /* Two subtasks finishing are two occurrences: the second is due. */
    faults[0] = (ck_fault){.kind = CK_FAULT_SAVEPOINT, .host = -1, .at = 5 * MS,
                           .moment = CK_MOMENT_SUBTASK_FINISHED, .nth = 2};
    setup_plan(1);
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_SUBTASK_FINISHED, task, 1, 100 * MS), 0);
    assert_int_equal(ck_plan_moment(&plan, CK_MOMENT_SUBTASK_FINISHED, task + 1, 1, 120 * MS), 1);
    int which, end, waiting;
    assert_true(ck_plan_next(&plan, &which, &end, &waiting) == 125 * MS && which == 0);
    ck_plan_free(&plan);
}

static void test_crashes(void **state)
{
    (void)state;
    /* tm0 crashes for good at 1 ms; a second crash of it at 2 ms finds it
     * down; tm1 crashes at 3 ms and is back at 8 ms. */
    faults[0] = (ck_fault){.kind = CK_FAULT_CRASH, .at = 1 * MS, .host = TM0};
    faults[1] = (ck_fault){.kind = CK_FAULT_CRASH, .at = 2 * MS, .duration = 1 * MS, .host = TM0};
    faults[2] = (ck_fault){.kind = CK_FAULT_CRASH, .at = 3 * MS, .duration = 5 * MS, .host = TM1};
    setup_plan(3);
    play_until(3 * MS);
    assert_true(plan.down[TM0] && plan.down[TM1]);
    assert_false(runs[0].failed);
    assert_true(runs[1].failed);
    assert_string_equal(runs[1].detail, "the host was down already");
    play_until(100 * MS);
    assert_true(plan.down[TM0]);           /* for good, and the failed one restarts nothing */
    assert_false(plan.down[TM1]);
    assert_false(runs[1].ended);
    assert_true(runs[2].ended && runs[2].ended_at == 8 * MS);
    int which, end, waiting;
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), CK_TIME_NEVER);
    ck_plan_free(&plan);
}

/* Commits one record of key k to (sink, txn) in f, with the output
 * faults of the timeline for the sink, as bnode.c does. */
static void commit_one(ck_sinkfs *f, uint32_t sink, uint64_t txn, const int *fault,
                       const int *kind, int nf)
{
    ck_rec r = {.ts = 1, .value = 7, .key = "k", .klen = 1};
    uint8_t b[64];
    size_t len = ck_rec_size(&r, 0);
    ck_rec_encode(b, &r, 0, len);
    int applied;
    assert_int_equal(ck_sinkfs_write(f, sink, txn, b, len), CK_OK);
    assert_int_equal(ck_sinkfs_commit_faults(f, sink, txn, fault, kind, nf, 5 * MS, &applied),
                     CK_OK);
}

/*
 * Output faults are instant: a timed one starts at its time, a triggered
 * one at its moment, neither ends nor changes the conditions in force.
 * Started, a backend arms it in the sinks' directory; after the run it
 * records what each did (ck_backend_output_faults): the one a commit of
 * its sink claimed, its transaction and records; the one no commit of its
 * sink came after, nothing: failed, saying so.
 */
static void test_output_faults(void **state)
{
    (void)state;
    faults[0] = (ck_fault){.kind = CK_FAULT_SINK_DROP, .at = 1 * MS, .op = 1, .host = -1};
    faults[1] = (ck_fault){.kind = CK_FAULT_SINK_DUPLICATE, .at = 0, .op = 2, .host = -1,
                           .moment = CK_MOMENT_CHECKPOINT_COMPLETED, .nth = 2};
    setup_plan(2);
    assert_int_equal(play_until(10 * MS), 1);
    assert_true(runs[0].applied && !runs[0].ended && !runs[0].failed);
    assert_false(runs[1].applied);
    ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 1, 1, 11 * MS);
    ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 2, 1, 12 * MS);
    assert_int_equal(play_until(100 * MS), 1);
    assert_true(runs[1].applied && runs[1].applied_at == 12 * MS && !runs[1].ended);
    int which, end, waiting;
    assert_int_equal(ck_plan_next(&plan, &which, &end, &waiting), CK_TIME_NEVER);
    for (int h = 0; h < NTM + 2; h++)
        assert_true(plan.cpu[h] == 1.0 && plan.bw[h] == 1.0 && plan.lat[h] == 0);
    assert_false(plan.down[TM0] || plan.down[TM1] || ck_plan_is_cut(&plan, TM0, TM1));
    assert_int_equal(ck_plan_check(&plan, NULL), 0);

    char dir[64], detail[300];
    snprintf(dir, sizeof(dir), "/tmp/ck-faultplan-XXXXXX");
    assert_non_null(mkdtemp(dir));
    for (int i = 0; i < 2; i++)
        assert_int_equal(ck_fault_output_arm(i, dir, detail, sizeof(detail)), CK_OK);
    /* sink 1's subtask 1 commits transaction 4; sink 2 commits nothing */
    ck_sinkfs f;
    assert_int_equal(ck_sinkfs_init(&f, dir), CK_OK);
    int fault = 0, kind = CK_SINKFS_DROP;
    commit_one(&f, 1u << 16 | 1, 4, &fault, &kind, 1);
    ck_sinkfs_close(&f);
    static ck_backend_result r;
    static ck_graph g;
    memset(&r, 0, sizeof(r));
    memset(&g, 0, sizeof(g));
    g.spec.nops = 3;
    snprintf(g.spec.ops[1].name, sizeof(g.spec.ops[1].name), "counts");
    snprintf(g.spec.ops[2].name, sizeof(g.spec.ops[2].name), "totals");
    r.nfaults = 2;
    memcpy(r.faults, runs, 2 * sizeof(*runs));
    ck_backend_output_faults(&r, &g, dir);
    assert_true(r.faults[0].out_done && !r.faults[0].failed);
    assert_int_equal(r.faults[0].out.sink, 1u << 16 | 1);
    assert_int_equal(r.faults[0].out.txn, 4);
    assert_int_equal(r.faults[0].out.records, 1);
    assert_string_equal(r.faults[0].detail,
                        "lost transaction 4 of counts[1] at 0.005000 s: 1 record dropped");
    assert_true(!r.faults[1].out_done && r.faults[1].failed);
    assert_string_equal(r.faults[1].detail,
                        "totals committed no transaction with records after it");
    ck_plan_free(&plan);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The check function (faultplan.h): a plan with a cut, slowdowns, a crash
 * and a triggered fault in force passes it; each numbered invariant,
 * broken by one field, fails with its number. */
static void test_invariants(void **state)
{
    (void)state;
    faults[0] = (ck_fault){.kind = CK_FAULT_PARTITION, .at = 1 * MS, .duration = 40 * MS,
                           .nside = 2, .side_host = {TM0, TM1}, .side = {0, 1}};
    faults[1] = (ck_fault){.kind = CK_FAULT_SLOW_CPU, .at = 2 * MS, .duration = 40 * MS,
                           .host = TM1, .factor = 0.25};
    faults[2] = slow_link(3 * MS, 40 * MS, JM, 0.5, 2 * MS);
    faults[3] = (ck_fault){.kind = CK_FAULT_CRASH, .at = 4 * MS, .duration = 40 * MS,
                           .host = TM0};
    faults[4] = slow_link(1 * MS, 10 * MS, TM0, 0.5, 0);
    faults[4].moment = CK_MOMENT_CHECKPOINT_COMPLETED;
    faults[4].nth = 2;
    setup_plan(5);
    play_until(10 * MS);
    assert_int_equal(ck_plan_check(&plan, NULL), 0);
    INV_BREAK(plan.cut[TM0 * plan.nh + TM1], 2, ck_plan_check(&plan, &V), "faultplan", 1);
    INV_BREAK(plan.cut[TM1 * plan.nh + JM], 1, ck_plan_check(&plan, &V), "faultplan", 1);
    INV_BREAK(plan.cpu[TM1], 1.0, ck_plan_check(&plan, &V), "faultplan", 2);
    INV_BREAK(plan.lat[JM], 0, ck_plan_check(&plan, &V), "faultplan", 2);
    INV_BREAK(plan.down[TM0], 0, ck_plan_check(&plan, &V), "faultplan", 3);
    INV_BREAK(plan.due[4], 20 * MS, ck_plan_check(&plan, &V), "faultplan", 4);
    ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 1, 1, 11 * MS);
    ck_plan_moment(&plan, CK_MOMENT_CHECKPOINT_COMPLETED, 2, 1, 12 * MS);
    assert_int_equal(ck_plan_check(&plan, NULL), 0);
    INV_BREAK(plan.due[4], CK_TIME_NEVER, ck_plan_check(&plan, &V), "faultplan", 4);
    ck_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlapping_slowdowns),
        cmocka_unit_test(test_overlapping_cuts),
        cmocka_unit_test(test_order_and_triggers),
        cmocka_unit_test(test_crashes),
        cmocka_unit_test(test_message_moments),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_output_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
