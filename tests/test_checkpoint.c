/*
 * test_checkpoint.c - asynchronous barrier snapshotting, piece by piece:
 * barrier alignment in the input gate (exactly-once blocks, at-least-once
 * does not, a newer barrier abandons an older alignment, an ending channel
 * completes one), the checkpoint coordinator's life cycle against a
 * scripted platform (trigger, acknowledgements, metadata written last,
 * completion, retention, expiry, declines, tolerable failures, min pause,
 * max concurrent), and the two-phase-commit sink's transactions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bytes.h"
#include "coordinator.h"
#include "crc32c.h"
#include "rng.h"
#include "snapshot.h"
#include "error.h"
#include "fakeplat.h"
#include "gate.h"
#include "invcheck.h"
#include "jobmanager.h"
#include "keygroup.h"
#include "metrics.h"
#include "operator.h"
#include "partition.h"
#include "task.h"
#include "taskmanager.h"
#include "testgraph.h"

/* ---- alignment ------------------------------------------------------------- */

typedef struct rig {
    fake_world w;
    fake_plat pp[2], cp;
    ck_rp rp[2];
    ck_gate gate;
    uint64_t snapshot; /* the checkpoint an EVENT barrier made the consumer snapshot */
} rig;

static void rig_init(rig *r, int exactly_once)
{
    memset(r, 0, sizeof(*r));
    ck_rp_config cfg = {.segment_size = 4096, .buffers_per_channel = 2, .floating_per_gate = 8,
                        .max_per_channel = 10, .max_overdraft = 5};
    uint32_t consumer = 10;
    for (int i = 0; i < 2; i++) {
        fake_init(&r->pp[i], &r->w, 20 + (uint32_t)i);
        assert_int_equal(ck_rp_init(&r->rp[i], &r->pp[i].plat, 1, (uint32_t)i, 1, &consumer, &cfg), 0);
    }
    fake_init(&r->cp, &r->w, 10);
    uint32_t eps[2] = {20, 21};
    assert_int_equal(ck_gate_init(&r->gate, &r->cp.plat, 1, 0, 2, eps, 2, 8), 0);
    ck_gate_set_exactly_once(&r->gate, exactly_once);
    ck_gate_announce(&r->gate);
}

static void pump(rig *r)
{
    for (int i = 0; i < 2; i++) {
        ck_rp_flush(&r->rp[i]);
        ck_rp_send(&r->rp[i]);
    }
    fake_msg *m;
    while ((m = fake_pop(&r->w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DATA)
            assert_int_equal(ck_gate_on_data(&r->gate, &h, m->data), 0);
        else if (h.type == CK_MSG_EVENT) {
            ck_barrier b;
            int rc = ck_gate_on_event(&r->gate, &h, m->data + CK_WIRE_HDR, &b);
            assert_true(rc == 0 || rc == 1);
            if (rc == 1)
                r->snapshot = b.id;
            free(m->data);
        } else {
            assert_int_equal(ck_rp_on_credit(&r->rp[h.src], (int)h.dst, h.arg), 0);
            free(m->data);
        }
        free(m);
    }
    for (int i = 0; i < 2; i++)
        ck_rp_send(&r->rp[i]);
    ck_gate_announce(&r->gate);
}

static void put_rec(rig *r, int p, int64_t v)
{
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "k";
    e.u.rec.klen = 1;
    e.u.rec.ts = p;
    e.u.rec.value = v;
    assert_int_equal(ck_rp_emit(&r->rp[p], 0, &e), 0);
}

static void put_barrier(rig *r, int p, uint64_t id)
{
    ck_elem e = {.tag = CK_EL_BARRIER};
    e.u.barrier.id = id;
    e.u.barrier.ts = 5;
    assert_int_equal(ck_rp_emit(&r->rp[p], 0, &e), 0);
}

/* Reads everything available; writes a trace like "0:1 0:2 B1 1:1". */
static void drain(rig *r, char *trace, size_t len)
{
    ck_elem e;
    int released, rc;
    size_t off = strlen(trace);
    while ((rc = ck_gate_next(&r->gate, &e, &released)) == 1) {
        if (e.tag == CK_EL_RECORD)
            off += (size_t)snprintf(trace + off, len - off, "%d:%d ", (int)e.u.rec.ts,
                                    (int)e.u.rec.value);
        else if (e.tag == CK_EL_BARRIER)
            off += (size_t)snprintf(trace + off, len - off, "B%d ", (int)e.u.barrier.id);
        else if (e.tag == CK_EL_CANCEL)
            off += (size_t)snprintf(trace + off, len - off, "C%d ", (int)e.u.barrier.id);
        else if (e.tag == CK_EL_END_OF_PARTITION)
            off += (size_t)snprintf(trace + off, len - off, "EOP ");
    }
    assert_int_equal(rc, 0);
}

static void rig_free(rig *r)
{
    for (int i = 0; i < 2; i++)
        ck_rp_free(&r->rp[i]);
    ck_gate_free(&r->gate);
    fake_clear(&r->w);
}

static void test_exactly_once_blocks(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    pump(&r);
    put_rec(&r, 0, 1);
    put_barrier(&r, 0, 1);
    put_rec(&r, 0, 2); /* after the barrier: must wait */
    put_rec(&r, 1, 1);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 1:1 ");
    put_rec(&r, 1, 2);
    put_barrier(&r, 1, 1);
    put_rec(&r, 1, 3);
    pump(&r);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    /* Channel 1 catches up, the barrier goes up once, then both flow. */
    assert_true(strstr(trace, "1:2 B1 ") == trace);
    assert_non_null(strstr(trace, "0:2"));
    assert_non_null(strstr(trace, "1:3"));
    assert_true(r.gate.done_id == 1);
    rig_free(&r);
}

static void test_at_least_once_does_not_block(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 0);
    pump(&r);
    put_barrier(&r, 0, 1);
    put_rec(&r, 0, 2); /* flows on although channel 1 has no barrier yet */
    put_rec(&r, 1, 1);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_non_null(strstr(trace, "0:2"));
    assert_null(strstr(trace, "B1"));
    put_barrier(&r, 1, 1);
    pump(&r);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "B1 ");
    rig_free(&r);
}

static void test_newer_barrier_abandons(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    pump(&r);
    put_barrier(&r, 0, 1); /* channel 1 never sends barrier 1 (say it was lost) */
    put_barrier(&r, 1, 2);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_true(r.gate.abandoned == 1); /* the task declines checkpoint 1 */
    put_barrier(&r, 0, 2);
    put_barrier(&r, 1, 1); /* stale by now: dropped */
    pump(&r);
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "B2 ");
    rig_free(&r);
}

static void test_ending_channel_completes_alignment(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    pump(&r);
    put_barrier(&r, 0, 3);
    put_rec(&r, 0, 9);
    ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
    assert_int_equal(ck_rp_emit(&r.rp[1], 0, &eop), 0);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "B3 0:9 ");
    rig_free(&r);
}

/* A cancel marker (checkpoint 3 declined upstream) ends the alignment at
 * once: the blocked channel's records flow, the marker is handed up once,
 * and checkpoint 3's barrier arriving late on the other channel is
 * dropped; checkpoint 4 aligns as usual. */
static void test_cancel_marker_ends_alignment(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    pump(&r);
    put_barrier(&r, 0, 3);
    put_rec(&r, 0, 9);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, ""); /* channel 0 waits for channel 1 */
    ck_elem ce = {.tag = CK_EL_CANCEL};
    ce.u.barrier.id = 3;
    assert_int_equal(ck_rp_emit(&r.rp[1], 0, &ce), 0);
    put_rec(&r, 1, 1);
    put_barrier(&r, 1, 3); /* late: dropped */
    put_barrier(&r, 0, 4);
    put_barrier(&r, 1, 4);
    pump(&r);
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "C3 1:1 0:9 B4 "); /* channel 0 back in the ring behind 1 */
    rig_free(&r);
}

/* Pipelined regions (Flink's PipelinedRegionComputeUtil): a keyBy joins
 * everything; forward-only chains are one region per subtask index; two
 * independent pipelines do not share one. */
/* The elements in channel-state bytes, as drain writes them. */
static void trace_bytes(const ck_wbuf *w, char *trace, size_t len)
{
    ck_elem_reader rd;
    ck_elem_reader_init(&rd);
    ck_elem_reader_feed(&rd, w->p, w->len);
    ck_elem e;
    size_t off = 0;
    trace[0] = 0;
    while (ck_elem_reader_next(&rd, &e) == 1)
        off += (size_t)snprintf(trace + off, len - off, "%d:%d ", (int)e.u.rec.ts,
                                (int)e.u.rec.value);
    assert_int_equal(rd.pos, rd.len); /* whole elements only */
    ck_elem_reader_free(&rd);
}

/*
 * Unaligned checkpoint 1 through one gate: producer 0's barrier overtakes
 * its queued record 0:4 (its output state) and reaches the gate first,
 * which snapshots at once; channel 0's state is what it had not read,
 * channel 1's that plus what arrives until its own barrier (1:3), not
 * what comes after (1:4, producer 1's output state). Nothing blocks: the
 * records are read as usual meanwhile. Replayed into a new gate, the
 * state comes before anything the channels receive. A newer barrier gives
 * up a checkpoint whose state is still being collected.
 */
static void test_unaligned_channel_state(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    r.gate.uc_edge = 1;
    pump(&r);
    for (int v = 1; v <= 3; v++)
        put_rec(&r, 0, v);
    put_rec(&r, 1, 1);
    put_rec(&r, 1, 2);
    pump(&r);
    char trace[256] = "";
    put_rec(&r, 0, 4); /* being filled at the barrier */
    ck_elem be = {.tag = CK_EL_BARRIER};
    be.u.barrier.id = 1;
    be.u.barrier.flags = CK_BARRIER_UNALIGNED;
    ck_wbuf out0 = {0}, out1 = {0};
    assert_int_equal(ck_rp_priority_barrier(&r.rp[0], &be, &out0), 0);
    trace_bytes(&out0, trace, sizeof(trace));
    assert_string_equal(trace, "0:4 ");
    pump(&r); /* the EVENT, then 0:4 */
    assert_int_equal(r.snapshot, 1);
    assert_int_equal(r.gate.uc_id, 1);
    assert_false(ck_gate_uc_complete(&r.gate));
    put_rec(&r, 1, 3);
    pump(&r); /* before producer 1's barrier: spilled */
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 0:2 0:3 1:1 1:2 0:4 1:3 ");
    put_rec(&r, 1, 4);
    assert_int_equal(ck_rp_priority_barrier(&r.rp[1], &be, &out1), 0);
    pump(&r);
    assert_true(ck_gate_uc_complete(&r.gate));
    ck_wbuf *st = ck_gate_uc_take(&r.gate);
    assert_int_equal(r.gate.uc_id, 0);
    trace_bytes(&st[0], trace, sizeof(trace));
    assert_string_equal(trace, "0:1 0:2 0:3 ");
    trace_bytes(&st[1], trace, sizeof(trace));
    assert_string_equal(trace, "1:1 1:2 1:3 ");
    trace_bytes(&out1, trace, sizeof(trace));
    assert_string_equal(trace, "1:4 ");
    pump(&r); /* credit for 1:4 reaches producer 1, which sends it */
    pump(&r);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "1:4 ");

    /* Restored: input state, then producer 1's output state, then new. */
    static rig q;
    rig_init(&q, 1);
    q.gate.uc_edge = 1;
    assert_int_equal(ck_gate_replay(&q.gate, 1, st[1].p, st[1].len), 0);
    assert_int_equal(ck_gate_replay(&q.gate, 2, st[0].p, st[0].len), CK_ECORRUPT);
    assert_int_equal(ck_rp_replay(&q.rp[1], 0, out1.p, out1.len), 0);
    put_rec(&q, 1, 5);
    pump(&q); /* credit reaches the producers, which send */
    pump(&q);
    trace[0] = 0;
    drain(&q, trace, sizeof(trace));
    assert_string_equal(trace, "1:1 1:2 1:3 1:4 1:5 ");
    for (int i = 0; i < 2; i++)
        free(st[i].p);
    free(st);
    free(out0.p);
    free(out1.p);

    /* Checkpoint 2 collecting, checkpoint 3's barrier comes: 2 is given up. */
    ck_wbuf o = {0};
    be.u.barrier.id = 2;
    assert_int_equal(ck_rp_priority_barrier(&q.rp[0], &be, &o), 0);
    pump(&q);
    assert_int_equal(q.snapshot, 2);
    be.u.barrier.id = 3;
    assert_int_equal(ck_rp_priority_barrier(&q.rp[1], &be, &o), 0);
    pump(&q);
    assert_int_equal(q.gate.uc_abandoned, 2);
    assert_int_equal(q.snapshot, 3);
    free(o.p);
    rig_free(&q);
    rig_free(&r);
}

/* Record v of producer p with a 300-byte payload: it spans buffers of
 * 256 bytes. */
static void put_big(rig *r, int p, int64_t v)
{
    static const uint8_t pad[300];
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "k";
    e.u.rec.klen = 1;
    e.u.rec.ts = p;
    e.u.rec.value = v;
    e.u.rec.payload = pad;
    e.u.rec.plen = sizeof(pad);
    assert_int_equal(ck_rp_emit(&r->rp[p], 0, &e), 0);
}

static void put_recovered(rig *r, int p)
{
    ck_elem e = {.tag = CK_EL_BARRIER};
    e.u.barrier.id = 7;
    e.u.barrier.flags = CK_BARRIER_RECOVERED;
    assert_int_equal(ck_rp_emit(&r->rp[p], 0, &e), 0);
}

/*
 * Channel state holds whole elements, as a restore at another parallelism
 * needs to route them one by one: producer 0 cuts records of 340 bytes
 * into buffers of 256 and sends two (record 1 and the first part of
 * record 2) before its unaligned barrier overtakes the rest. Its output
 * state is records 2 and 3 whole (the part of record 2 it sent kept
 * aside), and the gate's input state record 1 alone: the part of record 2
 * it got is left out. Restored where parallelisms changed, the input state
 * of old producer 2 is read on channel 2 mod 2 = 0, and a gate that
 * expects recovered markers holds a channel that delivered its marker
 * until every one did: the old records routed by producer 1 (0:2, 0:3)
 * come before producer 0's new 0:9, whichever channel is read first.
 */
static void test_channel_state_whole_elements(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    r.gate.uc_edge = 1;
    assert_int_equal(ck_rp_set_buffer_size(&r.rp[0], 0, 256), 0);
    for (int v = 1; v <= 3; v++)
        put_big(&r, 0, v);
    pump(&r); /* the two exclusive credits: 512 bytes go */
    assert_int_equal(r.rp[0].subs[0].bufs_sent, 2);
    assert_true(r.rp[0].subs[0].head_len > 0); /* record 2 sent in part */
    assert_int_equal(ck_rp_check(&r.rp[0], NULL), 0);
    ck_elem be = {.tag = CK_EL_BARRIER};
    be.u.barrier.id = 1;
    be.u.barrier.flags = CK_BARRIER_UNALIGNED;
    ck_wbuf out0 = {0}, out1 = {0};
    assert_int_equal(ck_rp_priority_barrier(&r.rp[0], &be, &out0), 0);
    char trace[256] = "";
    trace_bytes(&out0, trace, sizeof(trace));
    assert_string_equal(trace, "0:2 0:3 ");
    pump(&r);
    assert_int_equal(r.snapshot, 1);
    assert_int_equal(ck_rp_priority_barrier(&r.rp[1], &be, &out1), 0);
    pump(&r);
    assert_true(ck_gate_uc_complete(&r.gate));
    ck_wbuf *st = ck_gate_uc_take(&r.gate);
    trace_bytes(&st[0], trace, sizeof(trace));
    assert_string_equal(trace, "0:1 ");
    assert_int_equal(st[1].len, 0);
    for (int i = 0; i < 4; i++)
        pump(&r);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 0:2 0:3 "); /* the stream itself unchanged */
    assert_int_equal(ck_gate_check(&r.gate, NULL), 0);
    assert_int_equal(ck_rp_check(&r.rp[0], NULL), 0);

    static rig q;
    rig_init(&q, 1);
    q.gate.uc_edge = 1;
    ck_gate_replay_moved(&q.gate);
    ck_gate_expect_recovered(&q.gate);
    assert_int_equal(ck_gate_replay(&q.gate, 2, st[0].p, st[0].len), 0);
    assert_int_equal(ck_rp_replay(&q.rp[1], 0, out0.p, out0.len), 0);
    put_recovered(&q, 0);
    put_rec(&q, 0, 9);
    put_recovered(&q, 1);
    put_rec(&q, 1, 7);
    trace[0] = 0;
    for (int i = 0; i < 6; i++) {
        pump(&q);
        drain(&q, trace, sizeof(trace));
        assert_int_equal(ck_gate_check(&q.gate, NULL), 0);
    }
    assert_int_equal(q.gate.rec_left, 0);
    /* old records first; then the new ones, in either order */
    assert_true(!strcmp(trace, "0:1 0:2 0:3 0:9 1:7 ") || !strcmp(trace, "0:1 0:2 0:3 1:7 0:9 "));
    /* a gate that expects none drops a marker */
    static rig n;
    rig_init(&n, 1);
    put_recovered(&n, 0);
    put_rec(&n, 0, 5);
    pump(&n);
    pump(&n);
    trace[0] = 0;
    drain(&n, trace, sizeof(trace));
    assert_string_equal(trace, "0:5 ");
    for (int i = 0; i < 2; i++)
        free(st[i].p);
    free(st);
    free(out0.p);
    free(out1.p);
    rig_free(&n);
    rig_free(&q);
    rig_free(&r);
}

/* A gate restored with channel state announces no credit until it has
 * read that state through (Flink requests a gate's partitions once its
 * recovered state is consumed): nothing new can arrive before it. */
static void test_restored_gate_credit_after_state(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    fake_clear(&r.w); /* rig_init's initial credit: a gate restored fresh below */
    ck_gate_free(&r.gate);
    uint32_t eps[2] = {20, 21};
    assert_int_equal(ck_gate_init(&r.gate, &r.cp.plat, 1, 0, 2, eps, 2, 8), 0);
    r.gate.uc_edge = 1;
    ck_wbuf st = {0};
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "k";
    e.u.rec.klen = 1;
    for (int v = 1; v <= 2; v++) {
        e.u.rec.value = v;
        ck_elem_encode(ck_wbuf_room(&st, ck_elem_size(&e)), &e);
    }
    assert_int_equal(ck_gate_replay(&r.gate, 0, st.p, st.len), 0);
    assert_false(ck_gate_recovered(&r.gate));
    ck_gate_announce(&r.gate);
    assert_int_equal(r.w.nmsgs, 0); /* no credit while restored state is unread */
    char trace[64] = "";
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 0:2 ");
    assert_true(ck_gate_recovered(&r.gate));
    ck_gate_announce(&r.gate);
    assert_int_equal(r.w.nmsgs, 2); /* every channel's initial credit, now */
    put_rec(&r, 1, 3);
    pump(&r); /* the credit reaches producer 1, which sends */
    pump(&r);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "1:3 ");
    free(st.p);
    rig_free(&r);
}

/*
 * Restored at another parallelism over a hash edge (assign.h: an old
 * subtask's input channel state goes to every new subtask whose key
 * groups overlap its), each new subtask keeps the restored records of its
 * own key groups: the same state of 20 keys replayed into the gates of
 * new subtasks 0..2 of 3 (max parallelism 128) comes out of exactly one
 * of them per record, in order, the others counted as filtered; what the
 * channels receive afterwards is never filtered, and without the filter
 * (an unchanged parallelism) every restored record is read.
 */
static void test_restored_state_key_group_filter(void **state)
{
    (void)state;
    static const char keys[] = "abcdefghijklmnopqrst";
    ck_wbuf st = {0};
    for (int v = 0; v < 20; v++) {
        ck_elem e = {.tag = CK_EL_RECORD};
        e.u.rec.key = &keys[v];
        e.u.rec.klen = 1;
        e.u.rec.value = v;
        ck_elem_encode(ck_wbuf_room(&st, ck_elem_size(&e)), &e);
    }
    int owner[20], seen[20] = {0};
    for (int v = 0; v < 20; v++)
        owner[v] = ck_kg_subtask(ck_kg_of_key(&keys[v], 1, 128), 3, 128);
    int live_owner = ck_kg_subtask(ck_kg_of_key("k", 1, 128), 3, 128), foreign_live = 0;
    for (int i = 0; i <= 3; i++) { /* 3: no filter */
        static rig r;
        rig_init(&r, 1);
        fake_clear(&r.w);
        ck_gate_free(&r.gate);
        uint32_t eps[2] = {20, 21};
        assert_int_equal(ck_gate_init(&r.gate, &r.cp.plat, 1, 0, 2, eps, 2, 8), 0);
        if (i < 3)
            ck_gate_replay_filter(&r.gate, ck_kg_range(i, 3, 128), 128);
        assert_int_equal(ck_gate_replay(&r.gate, 0, st.p, st.len), 0);
        char trace[512] = "", want[512] = "";
        drain(&r, trace, sizeof(trace));
        int kept = 0;
        for (int v = 0; v < 20; v++)
            if (i == 3 || owner[v] == i) {
                size_t l = strlen(want);
                snprintf(want + l, sizeof(want) - l, "0:%d ", v);
                kept++;
                if (i < 3)
                    seen[v]++;
            }
        assert_string_equal(trace, want);
        assert_int_equal(r.gate.replay_filtered, (uint64_t)(20 - kept));
        assert_true(ck_gate_recovered(&r.gate));
        /* what arrives now is another matter: never filtered, even a key
         * group the subtask does not own (key "k" is one new subtask's) */
        ck_gate_announce(&r.gate);
        put_rec(&r, 1, 99);
        pump(&r);
        pump(&r);
        trace[0] = 0;
        drain(&r, trace, sizeof(trace));
        assert_string_equal(trace, "1:99 ");
        foreign_live += i < 3 && i != live_owner;
        rig_free(&r);
    }
    for (int v = 0; v < 20; v++)
        assert_int_equal(seen[v], 1); /* exactly one owner each */
    assert_int_equal(foreign_live, 2);
    free(st.p);
}

/*
 * The aligned-checkpoint timeout. In the gate: checkpoint 1 aligns in the
 * data (channel 0 blocked behind its barrier) until the timeout turns it
 * unaligned: channel 0 is unblocked and keeps nothing (what follows its
 * barrier is not state), channel 1 keeps what it had not read up to its
 * barrier, which was already there in the data, and stops there. In the
 * partition: a timeoutable barrier waits in a buffer of its own until the
 * timeout sends it ahead of what was queued before it, which becomes
 * output state; what came after it stays queued.
 */
static void test_aligned_timeout(void **state)
{
    (void)state;
    static rig r;
    rig_init(&r, 1);
    r.gate.uc_edge = 1;
    pump(&r);
    ck_elem be = {.tag = CK_EL_BARRIER};
    be.u.barrier.id = 1;
    be.u.barrier.ts = 5;
    be.u.barrier.flags = CK_BARRIER_TIMEOUTABLE;
    put_rec(&r, 0, 1);
    assert_int_equal(ck_rp_emit(&r.rp[0], 0, &be), 0);
    put_rec(&r, 0, 2);
    put_rec(&r, 1, 1);
    pump(&r);
    char trace[256] = "";
    drain(&r, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 1:1 "); /* channel 0 blocked behind its barrier */
    assert_int_equal(r.gate.align_id, 1);
    put_rec(&r, 1, 2);
    assert_int_equal(ck_rp_emit(&r.rp[1], 0, &be), 0);
    put_rec(&r, 1, 3);
    pump(&r);
    ck_barrier b;
    assert_int_equal(ck_gate_timeout(&r.gate, &b), 1);
    assert_true(b.id == 1 && (b.flags & CK_BARRIER_UNALIGNED));
    assert_int_equal(r.gate.align_id, 0);
    assert_true(ck_gate_uc_complete(&r.gate)); /* channel 1's barrier was in its data */
    ck_wbuf *st = ck_gate_uc_take(&r.gate);
    assert_int_equal(st[0].len, 0);
    trace_bytes(&st[1], trace, sizeof(trace));
    assert_string_equal(trace, "1:2 ");
    free(st[0].p);
    free(st[1].p);
    free(st);
    trace[0] = 0;
    drain(&r, trace, sizeof(trace)); /* the late barrier is dropped */
    assert_string_equal(trace, "1:2 1:3 0:2 ");
    assert_int_equal(ck_gate_timeout(&r.gate, &b), 0); /* nothing aligning */

    /* The partition: no credit yet, so everything waits in its queue. */
    static rig q;
    rig_init(&q, 1);
    q.gate.uc_edge = 1;
    put_rec(&q, 0, 1);
    be.u.barrier.id = 2;
    assert_int_equal(ck_rp_emit_timeoutable(&q.rp[0], &be), 0);
    put_rec(&q, 0, 2);
    ck_rp_flush(&q.rp[0]);
    assert_int_equal(q.rp[0].bar_pending, 1);
    assert_int_equal(q.rp[0].subs[0].queue.n, 3);
    ck_wbuf o = {0};
    assert_int_equal(ck_rp_timeout_barrier(&q.rp[0], &o), 1);
    trace_bytes(&o, trace, sizeof(trace));
    assert_string_equal(trace, "0:1 ");
    assert_int_equal(q.rp[0].bar_pending, 0);
    assert_int_equal(q.rp[0].subs[0].queue.n, 2); /* 0:1 and 0:2 stay, to be sent */
    assert_int_equal(ck_rp_timeout_barrier(&q.rp[0], &o), 0);
    pump(&q);
    assert_int_equal(q.snapshot, 2); /* the EVENT overtook them */
    free(o.p);
    rig_free(&q);
    rig_free(&r);
}

/* Generations of one job (a rescale's graphs): one endpoint stride, the
 * most subtasks any has; a graph of other vertices is none. (What each
 * subtask of a generation restores: test_assign.) */
static void test_graph_generations(void **state)
{
    (void)state;
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 5};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "m", .kind = CK_OP_MAP, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_REBALANCE};
    spec.ops[2] = (ck_op_spec){.name = "f", .kind = CK_OP_FILTER, .parallelism = 2, .input = 1};
    spec.ops[3] = (ck_op_spec){.name = "agg", .kind = CK_OP_AGGREGATE, .parallelism = 3,
                               .input = 2, .ship = CK_SHIP_HASH};
    spec.ops[4] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 3, .input = 3};
    ck_graph gens[3];
    int bad;
    char e[200];
    for (int k = 0; k < 3; k++) {
        spec.ops[1].parallelism = spec.ops[2].parallelism = k == 1 ? 4 : k == 2 ? 1 : 2;
        assert_int_equal(ck_graph_build(&gens[k], &spec, &cfg, &bad, e, sizeof(e)), 0);
        assert_int_equal(gens[k].nv, 3);
        assert_int_equal(gens[k].ep_stride, gens[k].nsubtasks);
    }
    assert_int_equal(ck_graph_share_stride(gens, 3), 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(gens[k].generation, k);
        assert_int_equal(gens[k].ep_stride, 9); /* 2 + 4 + 3 */
    }
    /* a graph of other vertices is no generation of the job */
    spec.ops[2].ship = CK_SHIP_REBALANCE;
    assert_int_equal(ck_graph_build(&gens[2], &spec, &cfg, &bad, e, sizeof(e)), 0);
    assert_int_equal(ck_graph_share_stride(gens, 3), CK_EINVAL);
}

static void test_pipelined_regions(void **state)
{
    (void)state;
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_graph g;
    uint32_t reg[16];
    test_graph_keyed(&g, &cfg, 3);
    assert_int_equal(ck_graph_regions(&g, reg), 1);
    for (uint32_t i = 0; i < g.nsubtasks; i++)
        assert_int_equal(reg[i], 0);
    /* Two pipelines, a: src(3) -> map -> out, b: src(2) -> out; chaining
     * off, so that the forward edges are edges. */
    cfg.v[CK_CFG_CHAINING] = 0;
    ck_job_spec spec = {.nops = 5};
    spec.ops[0] = (ck_op_spec){.name = "a", .kind = CK_OP_SOURCE, .parallelism = 3, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "am", .kind = CK_OP_MAP, .parallelism = 3, .input = 0};
    spec.ops[2] = (ck_op_spec){.name = "ao", .kind = CK_OP_SINK, .parallelism = 3, .input = 1};
    spec.ops[3] = (ck_op_spec){.name = "b", .kind = CK_OP_SOURCE, .parallelism = 2, .input = -1};
    spec.ops[4] = (ck_op_spec){.name = "bo", .kind = CK_OP_SINK, .parallelism = 2, .input = 3};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(&g, &spec, &cfg, &bad, e, sizeof(e)), 0);
    assert_int_equal((int)g.nsubtasks, 13);
    assert_int_equal(ck_graph_regions(&g, reg), 5);
    /* Pipeline a's subtask i of every vertex share region i. */
    for (int v = 0; v < 3; v++)
        for (uint32_t i = 0; i < 3; i++)
            assert_int_equal(reg[g.v[g.op_vertex[v]].base + i], i);
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(reg[g.v[g.op_vertex[3]].base + i], reg[g.v[g.op_vertex[4]].base + i]);
    assert_true(reg[g.v[g.op_vertex[3]].base] >= 3 && reg[g.v[g.op_vertex[3]].base + 1] >= 3);
    assert_true(reg[g.v[g.op_vertex[3]].base] != reg[g.v[g.op_vertex[3]].base + 1]);
}

/* Channels of each partitioner, as Flink's EdgeManagerBuildUtil connects
 * them (its pointwise rounding worked out by hand), and the regions they
 * make. */
static void test_edge_channels(void **state)
{
    (void)state;
    ck_config cfg;
    ck_config_defaults(&cfg);
    static const struct {
        ck_ship ship;
        int S, T;
        int out[4][2]; /* per producer: first consumer, how many */
        int in[4][2];  /* per consumer: first producer, how many */
        int regions;   /* of source(S) -ship-> map(T) -> sink(T), unchained */
    } cases[] = {
        {CK_SHIP_RESCALE, 4, 2, {{0, 1}, {0, 1}, {1, 1}, {1, 1}}, {{0, 2}, {2, 2}}, 2},
        {CK_SHIP_RESCALE, 2, 4, {{0, 2}, {2, 2}}, {{0, 1}, {0, 1}, {1, 1}, {1, 1}}, 2},
        {CK_SHIP_RESCALE, 3, 2, {{0, 1}, {1, 1}, {1, 1}}, {{0, 1}, {1, 2}}, 2},
        {CK_SHIP_RESCALE, 2, 3, {{0, 2}, {2, 1}}, {{0, 1}, {0, 1}, {1, 1}}, 2},
        {CK_SHIP_RESCALE, 3, 3, {{0, 1}, {1, 1}, {2, 1}}, {{0, 1}, {1, 1}, {2, 1}}, 3},
        {CK_SHIP_REBALANCE, 2, 3, {{0, 3}, {0, 3}}, {{0, 2}, {0, 2}, {0, 2}}, 1},
        {CK_SHIP_BROADCAST, 3, 2, {{0, 2}, {0, 2}, {0, 2}}, {{0, 3}, {0, 3}}, 1},
    };
    cfg.v[CK_CFG_CHAINING] = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ck_job_spec spec = {.nops = 3};
        spec.ops[0] = (ck_op_spec){.name = "s", .kind = CK_OP_SOURCE, .parallelism = cases[c].S,
                                   .input = -1};
        spec.ops[1] = (ck_op_spec){.name = "m", .kind = CK_OP_MAP, .parallelism = cases[c].T,
                                   .input = 0, .ship = cases[c].ship};
        spec.ops[2] = (ck_op_spec){.name = "o", .kind = CK_OP_SINK, .parallelism = cases[c].T,
                                   .input = 1};
        static ck_graph g;
        int bad;
        char e[200];
        assert_int_equal(ck_graph_build(&g, &spec, &cfg, &bad, e, sizeof(e)), 0);
        const ck_edge *edge = &g.e[0];
        for (int p = 0; p < cases[c].S; p++) {
            int f, n;
            ck_graph_edge_outputs(&g, edge, p, &f, &n);
            assert_int_equal(f, cases[c].out[p][0]);
            assert_int_equal(n, cases[c].out[p][1]);
        }
        for (int q = 0; q < cases[c].T; q++) {
            int f, n;
            ck_graph_edge_inputs(&g, edge, q, &f, &n);
            assert_int_equal(f, cases[c].in[q][0]);
            assert_int_equal(n, cases[c].in[q][1]);
        }
        uint32_t reg[16];
        assert_int_equal(ck_graph_regions(&g, reg), cases[c].regions);
    }
}

/* ---- the coordinator --------------------------------------------------------- */

typedef struct cc_rig {
    fake_world w;
    fake_plat jp;
    ck_graph g;
    ck_config cfg;
    ck_cc cc;
    int puts, deletes;
    char last_put[256], last_delete[256];
    char seg_deleted[8][128]; /* appendable files deleted, in order */
    int nseg_deleted;
    char watch[128]; /* a key whose deletes deleted_watched counts */
    int deleted_watched;
    ck_store_entry *listed; /* what store_list answers (borrowed) */
    size_t nlisted;
} cc_rig;

static cc_rig *the_rig;

static int rig_store_put(ck_platform *p, const char *key, uint8_t *data, size_t len, uint64_t t)
{
    (void)p, (void)len, (void)t;
    the_rig->puts++;
    snprintf(the_rig->last_put, sizeof(the_rig->last_put), "%s", key);
    free(data);
    return 0;
}

static int rig_store_delete(ck_platform *p, const char *key)
{
    (void)p;
    the_rig->deletes++;
    snprintf(the_rig->last_delete, sizeof(the_rig->last_delete), "%s", key);
    the_rig->deleted_watched += the_rig->watch[0] && !strcmp(key, the_rig->watch);
    if (ck_store_appendable(key) && the_rig->nseg_deleted < 8)
        snprintf(the_rig->seg_deleted[the_rig->nseg_deleted++], 128, "%s", key);
    return 0;
}

static int rig_store_list(ck_platform *p, const char *prefix, ck_store_entry **out, size_t *n)
{
    (void)p;
    *out = calloc(the_rig->nlisted + 1, sizeof(**out));
    *n = 0;
    for (size_t i = 0; i < the_rig->nlisted; i++)
        if (!strncmp(the_rig->listed[i].key, prefix, strlen(prefix))) {
            (*out)[*n].key = strdup(the_rig->listed[i].key);
            (*out)[(*n)++].size = the_rig->listed[i].size;
        }
    return 0;
}

static ck_platform_ops rig_ops;

/* source(1) => agg(2): three subtasks; the source is subtask 0. */
static void cc_setup(cc_rig *r, int64_t interval_ms, int tolerable, int retained)
{
    memset(r, 0, sizeof(*r));
    the_rig = r;
    rig_ops = fake_ops;
    rig_ops.store_put = rig_store_put;
    rig_ops.store_delete = rig_store_delete;
    rig_ops.store_list = rig_store_list;
    fake_init(&r->jp, &r->w, CK_EP_JM);
    r->jp.plat.ops = &rig_ops;
    ck_config_defaults(&r->cfg);
    r->cfg.v[CK_CFG_CP_INTERVAL] = interval_ms * CK_NS_PER_MS;
    r->cfg.v[CK_CFG_CP_TOLERABLE] = tolerable;
    r->cfg.v[CK_CFG_CP_RETAINED] = retained;
    r->cfg.v[CK_CFG_CP_TIMEOUT] = 500 * CK_NS_PER_MS;
    test_graph_keyed(&r->g, &r->cfg, 1);
    assert_int_equal(ck_cc_init(&r->cc, &r->jp.plat, &r->g, &r->cfg, "job", 1, 1), 0);
}

/* cc_setup(r, 100, 0, 1) for a job started from checkpoint first_id - 1:
 * its checkpoint ids go on from first_id. */
static void cc_setup_from(cc_rig *r, uint64_t first_id)
{
    cc_setup(r, 100, 0, 1);
    ck_cc_free(&r->cc);
    assert_int_equal(ck_cc_init(&r->cc, &r->jp.plat, &r->g, &r->cfg, "job", first_id, 1), 0);
}

/* cc_setup(r, 100, 0, 1) with up to max checkpoints at once, no pause
 * between them. */
static void cc_setup_concurrent(cc_rig *r, int max)
{
    cc_setup(r, 100, 0, 1);
    ck_cc_free(&r->cc);
    r->cfg.v[CK_CFG_CP_MAX_CONCURRENT] = max;
    r->cfg.v[CK_CFG_CP_MIN_PAUSE] = 0;
    assert_int_equal(ck_cc_init(&r->cc, &r->jp.plat, &r->g, &r->cfg, "job", 1, 1), 0);
}

/* Counts messages of a type sent since the last call, and to whom. */
static int sent(cc_rig *r, int type, uint32_t *first_dst)
{
    int n = 0;
    fake_msg *m;
    while ((m = fake_pop(&r->w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == type) {
            if (n == 0 && first_dst)
                *first_dst = m->dst;
            n++;
        }
        free(m->data);
        free(m);
    }
    return n;
}

static void ack(cc_rig *r, uint32_t subtask, uint64_t id)
{
    ck_cp_ack a = {.id = id, .sync_ns = 1, .async_ns = 2};
    char key[64];
    snprintf(key, sizeof(key), "checkpoints/job/chk-%llu/s%u", (unsigned long long)id, subtask);
    assert_int_equal(
        ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 100 + subtask, 7, CK_KGR_EMPTY), 0);
    ck_cc_on_ack(&r->cc, subtask, &a);
    ck_cp_ack_free(&a);
}

/* Checkpoint id's acknowledgements, subtask 1's with a segment of each
 * file keys[0..n) (appendable files under shared/), completed. */
static void advance(cc_rig *r, ck_time to);

static void complete_with(cc_rig *r, uint64_t id, const char *const *keys, int n)
{
    for (int k = 0; k < 10 && !ck_cc_find(&r->cc, id); k++)
        advance(r, r->w.now + 100 * CK_NS_PER_MS);
    assert_non_null(ck_cc_find(&r->cc, id));
    for (uint32_t s = 0; s < 3; s++) {
        if (s != 1) {
            ack(r, s, id);
            continue;
        }
        ck_cp_ack a = {.id = id, .sync_ns = 1, .async_ns = 2};
        for (int k = 0; k < n; k++) {
            char key[128];
            snprintf(key, sizeof(key), "checkpoints/job/shared/%s", keys[k]);
            assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED, key, 100, 7,
                                                   ck_kgr_make(0, 63), 1, "000009.sst"),
                             0);
            assert_int_equal(ck_handles_segment_last(&a.handles, 4096 * id), 0);
        }
        ck_cc_on_ack(&r->cc, s, &a);
        ck_cp_ack_free(&a);
    }
    ck_cc_on_stored(&r->cc, id, CK_OK);
    assert_int_equal(ck_cc_find(&r->cc, id)->status, CK_CP_COMPLETED);
    assert_int_equal(ck_cc_check(&r->cc, NULL), 0);
}

/* Files merged across checkpoints (coordinator.h, seg_live): one nothing
 * refers to any more is kept while its subtask may still append to it
 * (its attempt runs and no completed checkpoint referred to a newer file
 * of it), and deleted once sealed: by a newer file in a completed
 * checkpoint, or by the attempt's end (then those no acknowledgement
 * named too, found in the store). Another subtask's, or another
 * attempt's, are not held. */
static void test_coordinator_appendable_files(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 2, 0);
    const char *f1[] = {"v1-0-a2-c1-m0.seg"}, *f4[] = {"v1-0-a2-c4-m0.seg"},
               *old[] = {"v1-0-a1-c1-m0.seg"};
    complete_with(&r, 1, f1, 1);
    complete_with(&r, 2, f1, 1); /* checkpoint 1 retired: the file still referred to */
    assert_int_equal(r.nseg_deleted, 0);
    complete_with(&r, 3, NULL, 0); /* nothing refers to it: the subtask may append */
    assert_int_equal(r.nseg_deleted, 0);
    assert_int_equal(r.cc.nlimbo, 1);
    complete_with(&r, 4, f4, 1); /* a newer file: the first is sealed */
    assert_int_equal(r.nseg_deleted, 1);
    assert_string_equal(r.seg_deleted[0], "checkpoints/job/shared/v1-0-a2-c1-m0.seg");
    assert_int_equal(r.cc.nlimbo, 0);
    complete_with(&r, 5, old, 1); /* an earlier attempt's: deleted once let go */
    const char *other[] = {"v1-1-a2-c6-m0.seg"}; /* the other count subtask's */
    complete_with(&r, 6, other, 1);
    assert_int_equal(r.nseg_deleted, 2);
    assert_string_equal(r.seg_deleted[1], "checkpoints/job/shared/v1-0-a1-c1-m0.seg");
    assert_int_equal(r.cc.nlimbo, 1); /* c4: its subtask may append */
    /* the attempt ends: the file in limbo goes, and the store's appendable
     * files nothing refers to (one no acknowledgement named); not what the
     * retained checkpoint refers to, nor what is not appendable */
    ck_store_entry listed[] = {{"checkpoints/job/shared/v1-1-a2-c6-m0.seg", 10},
                               {"checkpoints/job/shared/v1-1-a2-c8-m0.seg", 10},
                               {"checkpoints/job/shared/op1-0-a2-c8-000010.sst", 10}};
    r.listed = listed;
    r.nlisted = 3;
    ck_cc_abort_all(&r.cc, "the job failed over");
    assert_int_equal(r.nseg_deleted, 4);
    assert_string_equal(r.seg_deleted[2], "checkpoints/job/shared/v1-0-a2-c4-m0.seg");
    assert_string_equal(r.seg_deleted[3], "checkpoints/job/shared/v1-1-a2-c8-m0.seg");
    assert_int_equal(r.cc.nlimbo, 0);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* A job started from checkpoint 4 (ids go on from 5): the files of
     * the run that made it are nobody's to append to (sealed at once when
     * let go), and its sweep lists only its own. */
    cc_setup_from(&r, 5);
    ck_cc_start_attempt(&r.cc, 2, 0);
    const char *earlier[] = {"v1-0-a2-c3-m0.seg"}, *own[] = {"v1-0-a2-c5-m0.seg"};
    complete_with(&r, 5, earlier, 1);
    complete_with(&r, 6, own, 1);
    assert_int_equal(r.nseg_deleted, 1);
    assert_string_equal(r.seg_deleted[0], "checkpoints/job/shared/v1-0-a2-c3-m0.seg");
    complete_with(&r, 7, NULL, 0); /* c5 in limbo: its subtask may append */
    assert_int_equal(r.cc.nlimbo, 1);
    ck_store_entry mine[] = {{"checkpoints/job/shared/v1-1-a2-c2-m0.seg", 10},
                             {"checkpoints/job/shared/v1-1-a2-c6-m0.seg", 10}};
    r.listed = mine;
    r.nlisted = 2;
    ck_cc_abort_all(&r.cc, "the job finished");
    assert_int_equal(r.nseg_deleted, 3);
    assert_string_equal(r.seg_deleted[1], "checkpoints/job/shared/v1-0-a2-c5-m0.seg");
    assert_string_equal(r.seg_deleted[2], "checkpoints/job/shared/v1-1-a2-c6-m0.seg");
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

static void advance(cc_rig *r, ck_time to)
{
    r->w.now = to;
    if (ck_cc_deadline(&r->cc) <= to)
        ck_cc_on_deadline(&r->cc);
    assert_int_equal(ck_cc_check(&r->cc, NULL), 0); /* coordinator.h, at every turn */
}

static void test_coordinator_lifecycle(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 2);
    assert_true(ck_cc_deadline(&r.cc) == 100 * CK_NS_PER_MS);
    advance(&r, 99 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 0);
    uint32_t dst = 0;
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 1);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1); /* to the one source */
    assert_int_equal(dst, CK_EP_TASK0 + 0);
    /* Acks: the metadata is written only after the last one, and the
     * checkpoint completes only when that write is done. */
    ack(&r, 0, 1);
    ack(&r, 1, 1);
    ack(&r, 1, 1); /* repeated: ignored */
    assert_int_equal(r.puts, 0);
    ack(&r, 2, 1);
    assert_int_equal(r.puts, 1);
    assert_string_equal(r.last_put, "checkpoints/job/chk-1/_metadata");
    assert_int_equal(r.cc.cps[0].status, CK_CP_PENDING);
    r.w.now = 120 * CK_NS_PER_MS;
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    assert_int_equal(r.cc.cps[0].status, CK_CP_COMPLETED);
    assert_true(r.cc.cps[0].bytes == 303);
    assert_int_equal(sent(&r, CK_MSG_CP_COMPLETE, NULL), 3); /* every subtask hears */
    /* Three more complete: with two retained, the older ones are deleted. */
    for (uint64_t id = 2; id <= 4; id++) {
        advance(&r, (ck_time)(100 * id) * CK_NS_PER_MS);
        for (uint32_t s = 0; s < 3; s++)
            ack(&r, s, id);
        ck_cc_on_stored(&r.cc, id, CK_OK);
    }
    assert_int_equal(r.cc.cps[3].status, CK_CP_COMPLETED);
    assert_true(r.cc.cps[0].retired && r.cc.cps[1].retired);
    assert_false(r.cc.cps[2].retired || r.cc.cps[3].retired);
    assert_int_equal(r.deletes, 2 * (3 + 1)); /* state files + metadata of two */
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* Two checkpoints at once, the newer one's metadata stored first: it
 * completes and subsumes the older, whose metadata then lands. That
 * _metadata (and its directory) goes at once: a checkpoint that did not
 * complete leaves none. */
static void test_coordinator_overtaken_metadata(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup_concurrent(&r, 2);
    advance(&r, 100 * CK_NS_PER_MS);
    advance(&r, 200 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 2);
    for (uint64_t id = 1; id <= 2; id++)
        for (uint32_t s = 0; s < 3; s++)
            ack(&r, s, id);
    assert_int_equal(r.puts, 2); /* both metadata writes on their way */
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 2)->status, CK_CP_COMPLETED);
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_ABORTED);
    int deletes = r.deletes;
    ck_store_entry landed[] = {{.key = "checkpoints/job/chk-1/_metadata", .size = 10},
                               {.key = "checkpoints/job/chk-2/_metadata", .size = 10}};
    r.listed = landed;
    r.nlisted = 2;
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    assert_int_equal(r.deletes, deletes + 1);
    assert_string_equal(r.last_delete, "checkpoints/job/chk-1/_metadata");
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_ABORTED);
    /* a failed write of it deletes nothing; the completed one stays */
    ck_cc_on_stored(&r.cc, 1, CK_EIO);
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(r.deletes, deletes + 1);
    assert_int_equal(ck_cc_find(&r.cc, 2)->status, CK_CP_COMPLETED);
    r.listed = NULL;
    r.nlisted = 0;
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* Subtask s's acknowledgement of checkpoint id with one shared file. */
static void ack_shared(cc_rig *r, uint32_t s, uint64_t id, const char *key, uint32_t flags)
{
    ck_cp_ack a = {.id = id, .sync_ns = 1, .async_ns = 2};
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED | flags, key, 100, 7,
                                           ck_kgr_make(0, 63), 1, "000009.sst"),
                     0);
    ck_cc_on_ack(&r->cc, s, &a);
    ck_cp_ack_free(&a);
}

/* Checkpoints in flight at once: a snapshot may take an older completed
 * checkpoint's files as its base after a newer one retired it. A reused
 * file nothing refers to any more (deleted) declines the checkpoint,
 * which does not count as a failure; one still referred to is fine. */
static void test_coordinator_reuse_of_discarded(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup_concurrent(&r, 3);
    const char *a = "checkpoints/job/shared/a", *b = "checkpoints/job/shared/b";
    advance(&r, 100 * CK_NS_PER_MS);
    ack(&r, 0, 1);
    ack(&r, 2, 1);
    ack_shared(&r, 1, 1, a, 0);
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    advance(&r, 200 * CK_NS_PER_MS);
    advance(&r, 300 * CK_NS_PER_MS);
    advance(&r, 400 * CK_NS_PER_MS);
    assert_non_null(ck_cc_find(&r.cc, 4));
    /* 2 re-uploads a's file as b and completes: 1 retired, a deleted */
    ack(&r, 0, 2);
    ack(&r, 2, 2);
    ack_shared(&r, 1, 2, b, 0);
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(ck_sreg_count(&r.cc.shared, a), 0);
    assert_int_equal(ck_sreg_count(&r.cc.shared, b), 1);
    /* 3 took 1 as its base: declined, not counted */
    ack(&r, 0, 3);
    ack_shared(&r, 1, 3, a, CK_HANDLE_REUSED);
    assert_int_equal(ck_cc_find(&r.cc, 3)->status, CK_CP_DECLINED);
    assert_non_null(strstr(ck_cc_find(&r.cc, 3)->reason, "already discarded"));
    assert_int_equal(r.cc.consecutive_failures, 0);
    /* 4 took 2 as its base: completes */
    ack(&r, 0, 4);
    ack(&r, 2, 4);
    ack_shared(&r, 1, 4, b, CK_HANDLE_REUSED);
    ck_cc_on_stored(&r.cc, 4, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 4)->status, CK_CP_COMPLETED);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* A region restart: pending checkpoints abort without counting as
 * failures, no checkpoint starts until the restarted subtasks run, the
 * trigger then keeps the interval's grid, and every subtask is addressed
 * at its own attempt's endpoint. */
static void test_coordinator_region_restart(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 1);
    ack(&r, 0, 1);
    sent(&r, CK_MSG_CP_TRIGGER, NULL);
    /* Subtask 2 ended its input; 1 and 2 fail over as one region. */
    ck_cc_task_ended(&r.cc, 2);
    r.w.now = 130 * CK_NS_PER_MS;
    ck_cc_hold(&r.cc, "a region failed over");
    assert_int_equal(r.cc.cps[0].status, CK_CP_ABORTED);
    assert_int_equal(r.cc.consecutive_failures, 0);
    assert_int_equal(sent(&r, CK_MSG_CP_ABORT, NULL), 3);
    assert_true(ck_cc_deadline(&r.cc) == CK_TIME_NEVER);
    assert_int_equal(ck_cc_trigger_savepoint(&r.cc, 0), 0); /* refused meanwhile */
    advance(&r, 350 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 1); /* the ticks at 200 and 300 ms are skipped */
    uint8_t mask[3] = {0, 1, 1};
    ck_cc_restart_subtasks(&r.cc, 4, mask);
    assert_int_equal(r.cc.attempts[0], 0);
    assert_int_equal(r.cc.attempts[1], 4);
    assert_int_equal(r.cc.attempts[2], 4);
    assert_int_equal(r.cc.ended[2], 0);
    ck_cc_release(&r.cc, 360 * CK_NS_PER_MS);
    assert_true(ck_cc_deadline(&r.cc) == 400 * CK_NS_PER_MS); /* the interval's grid */
    uint32_t dst = 0;
    advance(&r, 400 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 2);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1);
    assert_int_equal(dst, ck_ep_task(&r.g, 0, 0)); /* the source kept attempt 0 */
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, 2);
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(r.cc.cps[1].status, CK_CP_COMPLETED);
    /* COMPLETE reaches each subtask at its own attempt's endpoint. */
    int to_new = 0, total = 0;
    fake_msg *m;
    while ((m = fake_pop(&r.w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_CP_COMPLETE) {
            uint32_t a, gl;
            assert_true(ck_ep_task_split(&r.g, m->dst, &a, &gl));
            assert_int_equal(a, gl == 0 ? 0 : 4);
            assert_int_equal(h.epoch, a);
            to_new += a == 4;
            total++;
        }
        free(m->data);
        free(m);
    }
    assert_int_equal(total, 3);
    assert_int_equal(to_new, 2);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

static void test_coordinator_failures(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 1, 1);
    advance(&r, 100 * CK_NS_PER_MS); /* checkpoint 1 */
    ack(&r, 0, 1);
    /* Timeout 500 ms: checkpoint 1 expires at 600 ms. Max concurrent 1:
     * no new trigger meanwhile. */
    advance(&r, 300 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 1);
    advance(&r, 600 * CK_NS_PER_MS);
    assert_int_equal(r.cc.cps[0].status, CK_CP_EXPIRED);
    assert_true(sent(&r, CK_MSG_CP_ABORT, NULL) == 3);
    /* A subtask still uploading acknowledges late: its file is deleted
     * (nothing refers to it), and the checkpoint stays expired. */
    int deletes = r.deletes;
    ack(&r, 1, 1);
    assert_int_equal(r.deletes, deletes + 1);
    assert_int_equal(r.cc.cps[0].status, CK_CP_EXPIRED);
    /* ...but never a file outside that checkpoint's directory. */
    ck_cp_ack bad = {.id = 1};
    assert_int_equal(ck_handles_add(&bad.handles, CK_HANDLE_SNAPSHOT, 0, "checkpoints/job/chk-0/s1",
                                    1, 1, CK_KGR_EMPTY),
                     0);
    ck_cc_on_ack(&r.cc, 2, &bad);
    ck_cp_ack_free(&bad);
    assert_int_equal(ck_handles_add(&bad.handles, CK_HANDLE_SNAPSHOT, 0,
                                    "checkpoints/job/chk-1/../chk-0/s1", 1, 1, CK_KGR_EMPTY),
                     0);
    ck_cc_on_ack(&r.cc, 2, &bad);
    ck_cp_ack_free(&bad);
    assert_int_equal(r.deletes, deletes + 1);
    assert_false(r.cc.failed); /* one failure tolerated */
    /* A decline that is not a failure (not ready) does not count... */
    advance(&r, 700 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 2);
    ck_cc_on_decline(&r.cc, 0, 2, CK_DECLINE_NOT_READY, "finished");
    assert_int_equal(r.cc.cps[1].status, CK_CP_ABORTED);
    assert_false(r.cc.failed);
    /* ...a failing one does: two in a row exceed the tolerance. */
    advance(&r, 800 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 3);
    ck_cc_on_decline(&r.cc, 1, 3, CK_DECLINE_FAILURE, "disk full");
    assert_int_equal(r.cc.cps[2].status, CK_CP_DECLINED);
    assert_true(r.cc.failed);
    assert_non_null(strstr(r.cc.failure, "tolerable failure threshold (1)"));
    assert_true(ck_cc_deadline(&r.cc) == CK_TIME_NEVER); /* no more triggers */
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

static void test_coordinator_min_pause_and_finish(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    r.cc.min_pause = 250 * CK_NS_PER_MS;
    advance(&r, 100 * CK_NS_PER_MS);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, 1);
    r.w.now = 150 * CK_NS_PER_MS;
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    /* The next trigger waits for 150 + 250 ms. */
    advance(&r, 200 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 1);
    assert_true(ck_cc_deadline(&r.cc) == 400 * CK_NS_PER_MS);
    advance(&r, 400 * CK_NS_PER_MS);
    assert_int_equal(r.cc.ncps, 2);
    /* Without checkpoints after tasks finish: a subtask finishes, what it
     * did not ack is aborted, nothing new starts. */
    r.cc.after_finish = 0;
    ck_cc_task_finished(&r.cc, 2);
    assert_int_equal(r.cc.cps[1].status, CK_CP_ABORTED);
    assert_false(r.cc.failed);
    advance(&r, 10 * CK_NS_PER_S);
    assert_int_equal(r.cc.ncps, 2);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* Checkpoints after tasks finish (FLIP-147). Subtask 2 finishes: the
 * pending checkpoint counts it as finished, its "finished" state file is
 * stored before the metadata (with no memory threshold: else it goes
 * inline, test_coordinator_finished_inline); checkpoints go on, triggered
 * at the source only. Subtask 1 ends its input while checkpoint 2 is
 * pending: it is triggered for it directly, and for every later
 * checkpoint. */
static void test_coordinator_after_tasks_finish(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_free(&r.cc);
    r.cfg.v[CK_CFG_CP_MEMORY_THRESHOLD] = 0;
    assert_int_equal(ck_cc_init(&r.cc, &r.jp.plat, &r.g, &r.cfg, "job", 1, 1), 0);
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS);
    uint32_t dst;
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1);
    assert_int_equal(dst, CK_EP_TASK0);
    ck_cc_task_finished(&r.cc, 2);
    ack(&r, 0, 1);
    ack(&r, 1, 1);
    /* The marker first; the metadata only once it is stored. */
    assert_string_equal(r.last_put, "checkpoints/job/chk-1/v1-1.state");
    assert_int_equal(r.puts, 1);
    ck_cc_on_stored(&r.cc, (UINT64_C(1) << 62) | 1, CK_OK);
    assert_string_equal(r.last_put, "checkpoints/job/chk-1/_metadata");
    r.w.now = 120 * CK_NS_PER_MS;
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_COMPLETED);
    assert_true(ck_cc_find(&r.cc, 1)->tasks[2].finished);
    assert_int_equal(sent(&r, CK_MSG_CP_COMPLETE, NULL), 3);
    /* Checkpoint 2 at the source only; subtask 1 ends before its barrier. */
    advance(&r, 200 * CK_NS_PER_MS);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1);
    assert_int_equal(dst, CK_EP_TASK0);
    ck_cc_task_ended(&r.cc, 1);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1);
    assert_int_equal(dst, CK_EP_TASK0 + 1);
    /* A late decline of finished subtask 2 changes nothing. */
    ck_cc_on_decline(&r.cc, 2, 2, CK_DECLINE_NOT_READY, "the subtask is not running");
    assert_int_equal(ck_cc_find(&r.cc, 2)->status, CK_CP_PENDING);
    ack(&r, 0, 2);
    ack(&r, 1, 2);
    ck_cc_on_stored(&r.cc, (UINT64_C(1) << 62) | 2, CK_OK);
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 2)->status, CK_CP_COMPLETED);
    sent(&r, CK_MSG_CP_COMPLETE, NULL);
    /* Checkpoint 3: the source and ended subtask 1. */
    advance(&r, 300 * CK_NS_PER_MS);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, NULL), 2);
    /* A marker that cannot be stored fails the checkpoint. */
    ack(&r, 0, 3);
    ack(&r, 1, 3);
    ck_cc_on_stored(&r.cc, (UINT64_C(1) << 62) | 3, CK_EIO);
    assert_int_equal(ck_cc_find(&r.cc, 3)->status, CK_CP_DECLINED);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* With state.storage.fs.memory-threshold at Flink's 20 kb, a finished
 * subtask's state file (a few dozen bytes) is not stored: it goes inline
 * in the checkpoint's _metadata, the only put, and decodes there as a
 * finished subtask's state. */
static void test_coordinator_finished_inline(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    assert_int_equal(r.cfg.v[CK_CFG_CP_MEMORY_THRESHOLD], 20 << 10); /* Flink's default */
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, NULL), 1);
    ck_cc_task_finished(&r.cc, 2);
    ack(&r, 0, 1);
    ack(&r, 1, 1);
    assert_int_equal(r.puts, 1);
    assert_string_equal(r.last_put, "checkpoints/job/chk-1/_metadata");
    const ck_handles *hs = &ck_cc_find(&r.cc, 1)->tasks[2].handles;
    assert_int_equal(hs->n, 1);
    assert_int_equal(hs->v[0].flags, CK_HANDLE_INLINE);
    assert_non_null(hs->v[0].data);
    assert_string_equal(hs->v[0].key, "checkpoints/job/chk-1/v1-1.state");
    ck_snapshot snap;
    const char *why;
    assert_int_equal(ck_snap_decode(hs->v[0].data, hs->v[0].bytes, &snap, &why), 0);
    assert_true(snap.finished);
    assert_int_equal(snap.vertex, 1);
    ck_snapshot_free(&snap);
    r.w.now = 120 * CK_NS_PER_MS;
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_COMPLETED);
    /* Subsumed, it deletes its stored files, never the inline one's key. */
    snprintf(r.watch, sizeof(r.watch), "%s", hs->v[0].key);
    int deletes = r.deletes;
    advance(&r, 300 * CK_NS_PER_MS);
    ack(&r, 0, 2);
    ack(&r, 1, 2);
    ck_cc_on_stored(&r.cc, 2, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, 2)->status, CK_CP_COMPLETED);
    assert_int_equal(ck_cc_find(&r.cc, 1)->retired, 1);
    assert_int_equal(r.deleted_watched, 0);
    assert_int_equal(r.deletes, deletes + 3); /* s0, s1 and _metadata */
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* The final checkpoint: every subtask has ended; it is triggered at all
 * three subtasks (not only the source), carries its flag, and completes
 * and commits like a checkpoint. */
static void test_coordinator_final(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    for (uint32_t s = 0; s < 3; s++)
        ck_cc_task_ended(&r.cc, s);
    uint64_t id = ck_cc_trigger_final(&r.cc);
    assert_int_equal(id, 1);
    uint32_t seen = 0;
    fake_msg *m;
    while ((m = fake_pop(&r.w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        assert_int_equal(h.type, CK_MSG_CP_TRIGGER);
        assert_int_equal(ck_get_u32(m->data + CK_WIRE_HDR + 16), CK_CP_FLAG_FINAL);
        assert_true(m->dst >= CK_EP_TASK0 && m->dst < CK_EP_TASK0 + 3);
        seen |= 1u << (m->dst - CK_EP_TASK0);
        free(m->data);
        free(m);
    }
    assert_int_equal(seen, 7);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, id);
    assert_string_equal(r.last_put, "checkpoints/job/chk-1/_metadata");
    ck_cc_on_stored(&r.cc, id, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, id)->status, CK_CP_COMPLETED);
    assert_int_equal(sent(&r, CK_MSG_CP_COMPLETE, NULL), 3);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* The triggers sent since the last call: a bit per subtask reached at
 * its attempt in `attempts` (another attempt's endpoint fails the test). */
static uint32_t triggered_at(cc_rig *r, const uint32_t *attempts)
{
    uint32_t seen = 0;
    fake_msg *m;
    while ((m = fake_pop(&r->w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_CP_TRIGGER) {
            uint32_t a, gl;
            assert_true(ck_ep_task_split(&r->g, m->dst, &a, &gl));
            assert_int_equal(a, attempts[gl]);
            seen |= 1u << gl;
        }
        free(m->data);
        free(m);
    }
    return seen;
}

/*
 * Found by swarming swarm-region.json with a slow keyed count (seed 190):
 * a task manager's heartbeat timed out when every subtask had ended its
 * input. The region failover aborted the pending checkpoint, and the
 * final checkpoint was triggered at the same instant, while the failed
 * region waited for its restart: at the cancelled attempts. The
 * restarted subtasks were never triggered for it, it stayed pending (at
 * most one at a time: nothing else started) and the job never ended.
 * As Flink's checkpoint plan refuses to trigger while a task is not
 * running (NOT_ALL_REQUIRED_TASKS_RUNNING), no checkpoint starts while
 * part of the job restarts, the final one included; once the restarted
 * subtasks have ended too, it reaches each subtask at its own attempt.
 */
static void test_coordinator_final_during_region_restart(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    for (uint32_t s = 0; s < 3; s++)
        ck_cc_task_ended(&r.cc, s);
    r.w.now = 50 * CK_NS_PER_MS;
    ck_cc_hold(&r.cc, "a region of the job failed over");
    assert_true(ck_cc_needs_final(&r.cc));
    assert_int_equal(ck_cc_trigger_final(&r.cc), 0); /* refused while restoring */
    assert_int_equal(r.cc.ncps, 0);
    assert_int_equal(r.cc.npending, 0);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, NULL), 0);
    uint8_t mask[3] = {0, 1, 1};
    r.w.now = 150 * CK_NS_PER_MS;
    ck_cc_restart_subtasks(&r.cc, 1, mask);
    ck_cc_release(&r.cc, 160 * CK_NS_PER_MS);
    r.w.now = 170 * CK_NS_PER_MS;
    sent(&r, CK_MSG_CP_TRIGGER, NULL);
    ck_cc_task_ended(&r.cc, 1);
    ck_cc_task_ended(&r.cc, 2);
    uint64_t id = ck_cc_trigger_final(&r.cc);
    assert_int_equal(id, 1);
    const uint32_t attempts[3] = {0, 1, 1};
    assert_int_equal(triggered_at(&r, attempts), 7);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, id);
    ck_cc_on_stored(&r.cc, id, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, id)->status, CK_CP_COMPLETED);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/*
 * Siblings of the above. A restart, of regions or of the whole job,
 * aborts every checkpoint still pending (not a failure), as Flink's
 * scheduler does when it restores state (JOB_FAILOVER_REGION): one would
 * wait for acknowledgements from attempts that are gone. And a final
 * checkpoint aborted by a region failure leaves periodic checkpoints on:
 * the restarted subtasks read their input again, and are checkpointed on
 * the interval once they run, as before the final one stopped them.
 */
static void test_coordinator_restart_aborts_pending(void **state)
{
    (void)state;
    static cc_rig r;
    const uint8_t mask[3] = {0, 1, 1};
    /* A periodic checkpoint pending when regions restart. */
    cc_setup(&r, 100, 0, 1);
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(r.cc.npending, 1);
    ack(&r, 0, 1);
    r.w.now = 120 * CK_NS_PER_MS;
    ck_cc_restart_subtasks(&r.cc, 1, mask);
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_ABORTED);
    assert_int_equal(r.cc.npending, 0);
    assert_int_equal(r.cc.consecutive_failures, 0);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* ...when the whole job restarts. */
    cc_setup(&r, 100, 0, 1);
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(r.cc.npending, 1);
    ck_cc_start_attempt(&r.cc, 1, 120 * CK_NS_PER_MS);
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_ABORTED);
    assert_int_equal(r.cc.npending, 0);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* The final checkpoint pending when a region fails. */
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    for (uint32_t s = 0; s < 3; s++)
        ck_cc_task_ended(&r.cc, s);
    assert_int_equal(ck_cc_trigger_final(&r.cc), 1);
    r.w.now = 10 * CK_NS_PER_MS;
    ck_cc_hold(&r.cc, "a region of the job failed over");
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_ABORTED);
    r.w.now = 200 * CK_NS_PER_MS;
    ck_cc_restart_subtasks(&r.cc, 1, mask);
    ck_cc_release(&r.cc, 210 * CK_NS_PER_MS);
    ck_time d = ck_cc_deadline(&r.cc);
    assert_true(d > 210 * CK_NS_PER_MS && d <= 310 * CK_NS_PER_MS);
    sent(&r, CK_MSG_CP_TRIGGER, NULL);
    advance(&r, d);
    assert_int_equal(r.cc.ncps, 2);
    assert_int_equal(ck_cc_find(&r.cc, 2)->flags & CK_CP_FLAG_FINAL, 0);
    const uint32_t attempts[3] = {0, 1, 1};
    assert_int_equal(triggered_at(&r, attempts), 1); /* the ended source, at attempt 0 */
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* ---- the job manager's first deployment ---------------------------------------------- */

static void jm_heartbeat(ck_jm *jm, int h)
{
    size_t n;
    uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, CK_EP_TM0 + (uint32_t)h, CK_EP_JM, 0, NULL, 0, &n);
    assert_non_null(m);
    ck_put_u32(m + 16, (uint32_t)h);
    ck_node nd = ck_jm_node(jm);
    nd.ops->on_message(nd.self, m, n);
}

/* A task manager process's first heartbeat: it registers. */
static void jm_register(ck_jm *jm, int h)
{
    size_t n;
    uint8_t body[1] = {CK_HB_REGISTER};
    uint8_t *m = ck_wire_msg(CK_MSG_HEARTBEAT, CK_EP_TM0 + (uint32_t)h, CK_EP_JM, 0, body, 1, &n);
    assert_non_null(m);
    ck_put_u32(m + 16, (uint32_t)h);
    ck_node nd = ck_jm_node(jm);
    nd.ops->on_message(nd.self, m, n);
}

/* DEPLOYs sent since the last call; the placement of the last one in out. */
static int deploys(fake_world *w, uint16_t *out, uint32_t nsub)
{
    int k = 0;
    fake_msg *m;
    while ((m = fake_pop(w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_DEPLOY) {
            const uint8_t *b = m->data + CK_WIRE_HDR;
            assert_int_equal(ck_get_u32(b + 12), nsub);
            for (uint32_t i = 0; i < nsub; i++)
                out[i] = ck_get_u16(b + 16 + 2 * i);
            k++;
        }
        free(m->data);
        free(m);
    }
    return k;
}

/* Three task managers, two slots needed: the job manager waits for the
 * third to register (up to the start-up grace), so the job lands on tm0
 * and tm1 whichever registered first; without the third, it deploys on
 * what it has once the grace is over. */
static void test_jm_startup_waits_for_the_cluster(void **state)
{
    (void)state;
    static cc_rig r;
    for (int late = 0; late < 2; late++) {
        cc_setup(&r, 0, 0, 1);
        ck_cc_free(&r.cc);
        ck_job_env env = {.g = &r.g, .cfg = &r.cfg, .job_id = "job"};
        static ck_jm jm;
        assert_int_equal(ck_jm_init(&jm, &r.jp.plat, &env, 3, 1), 0);
        ck_node nd = ck_jm_node(&jm);
        uint16_t place[8];
        jm_heartbeat(&jm, 2);
        jm_heartbeat(&jm, 0);
        assert_int_equal(deploys(&r.w, place, r.g.nsubtasks), 0);
        r.w.now = CK_STARTUP_GRACE / 2;
        if (nd.ops->deadline(nd.self) <= r.w.now)
            nd.ops->on_deadline(nd.self);
        assert_int_equal(deploys(&r.w, place, r.g.nsubtasks), 0);
        if (!late) {
            jm_heartbeat(&jm, 1); /* the whole cluster: at once, in order */
            assert_int_equal(deploys(&r.w, place, r.g.nsubtasks), 3);
            assert_true(place[0] == 0 && place[1] == 0 && place[2] == 1);
        } else {
            assert_true(nd.ops->deadline(nd.self) <= CK_STARTUP_GRACE);
            r.w.now = CK_STARTUP_GRACE;
            nd.ops->on_deadline(nd.self);
            assert_int_equal(deploys(&r.w, place, r.g.nsubtasks), 2);
            assert_true(place[0] == 0 && place[1] == 0 && place[2] == 2);
        }
        ck_jm_free(&jm);
        fake_clear(&r.w);
    }
}

/* Found by fuzz_wire: a subtask's metrics named a vertex out of range
 * (0xffff0000 read as a negative index). The job manager now takes the
 * vertex from the graph: a subtask cannot report for another one. */
static void jm_metrics(ck_jm *jm, uint32_t g, uint32_t vertex, int64_t lag)
{
    ck_metrics m;
    ck_metrics_init(&m);
    m.task.vertex = vertex;
    m.task.lag_ns = lag;
    m.task.records_in = 10;
    uint8_t *body;
    size_t len, n;
    assert_int_equal(ck_metrics_encode(&m, &body, &len), 0);
    uint8_t *msg = ck_wire_msg(CK_MSG_METRICS, g, CK_EP_JM, jm->attempt, body, len, &n);
    ck_node nd = ck_jm_node(jm);
    nd.ops->on_message(nd.self, msg, n);
    free(body);
    ck_metrics_free(&m);
}

static void test_jm_metrics_vertex_from_graph(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 0, 0, 1);
    ck_cc_free(&r.cc);
    ck_job_env env = {.g = &r.g, .cfg = &r.cfg, .job_id = "job"};
    static ck_jm jm;
    assert_int_equal(ck_jm_init(&jm, &r.jp.plat, &env, 2, 1), 0);
    jm_heartbeat(&jm, 0);
    jm_heartbeat(&jm, 1);
    assert_int_equal(jm.state, CK_JOB_RUNNING);
    jm_metrics(&jm, 0, 0xffff0000u, 123); /* the source, claiming a bogus vertex */
    assert_true(jm.lag_ns[0] == 123);
    jm_metrics(&jm, 1, 0, 77);            /* an aggregate, claiming the source's */
    assert_true(jm.lag_ns[1] == 0);
    assert_int_equal(jm.state, CK_JOB_RUNNING);
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

/* What a subtask that started without restoring reports running with. */
static const uint8_t running_body[CK_RUNNING_BODY];

/* A message of `type` from subtask g of the current attempt. */
static void jm_from_task(ck_jm *jm, int type, uint32_t g, const uint8_t *body, size_t len)
{
    size_t n;
    uint8_t *msg = ck_wire_msg(type, g, CK_EP_JM, jm->attempt, body, len, &n);
    assert_non_null(msg);
    ck_node nd = ck_jm_node(jm);
    nd.ops->on_message(nd.self, msg, n);
}

/* A job manager over two task managers running the rig's job, every
 * subtask running; fixed-delay restarts after 100 ms, checkpoints off
 * (the rig's coordinator is replaced by the job manager's). */
static void jm_running(cc_rig *r, ck_jm *jm)
{
    cc_setup(r, 0, 0, 1);
    ck_cc_free(&r->cc);
    r->cfg.v[CK_CFG_RS_TYPE] = CK_RS_FIXED_DELAY;
    r->cfg.v[CK_CFG_RS_FD_DELAY] = 100 * CK_NS_PER_MS;
    ck_job_env env = {.g = &r->g, .cfg = &r->cfg, .job_id = "job"};
    assert_int_equal(ck_jm_init(jm, &r->jp.plat, &env, 2, 1), 0);
    jm_heartbeat(jm, 0);
    jm_heartbeat(jm, 1);
    assert_int_equal(jm->state, CK_JOB_RUNNING);
    for (uint32_t g = 0; g < r->g.nsubtasks; g++)
        jm_from_task(jm, CK_MSG_TASK_RUNNING, g, running_body, CK_RUNNING_BODY);
}

/* Found by a review: after a restart the job manager kept the old
 * attempt's source lag, so a report from any other subtask found the job
 * caught up at once, while the new sources were replaying their backlog.
 * Caught up now waits for every source of the new attempt to report a lag
 * back at its level before the failure. */
static void test_jm_caught_up_from_the_new_attempt(void **state)
{
    (void)state;
    static cc_rig r;
    static ck_jm jm;
    jm_running(&r, &jm);
    ck_node nd = ck_jm_node(&jm);
    jm_metrics(&jm, 0, 0, 2 * CK_NS_PER_MS); /* the source keeps up */
    /* Subtask 1 fails: failover, restart after 100 ms. */
    uint8_t body[CK_FAIL_BODY_MIN + 4] = {0};
    memcpy(body + CK_FAIL_BODY_MIN, "boom", 4);
    r.w.now = CK_NS_PER_S;
    jm_from_task(&jm, CK_MSG_TASK_FAILED, 1, body, sizeof(body));
    assert_int_equal(jm.state, CK_JOB_RESTARTING);
    assert_int_equal((int)jm.nrecoveries, 1);
    r.w.now = CK_NS_PER_S + 200 * CK_NS_PER_MS;
    jm_heartbeat(&jm, 0);
    jm_heartbeat(&jm, 1);
    if (nd.ops->deadline(nd.self) <= r.w.now)
        nd.ops->on_deadline(nd.self);
    assert_int_equal(jm.state, CK_JOB_RUNNING);
    assert_int_equal((int)jm.attempt, 1);
    for (uint32_t g = 0; g < r.g.nsubtasks; g++)
        jm_from_task(&jm, CK_MSG_TASK_RUNNING, g, running_body, CK_RUNNING_BODY);
    const ck_recovery *rv = &jm.recoveries[0];
    assert_true(rv->restored != CK_TIME_NEVER);
    /* Another subtask reports first: the new source's lag is not known. */
    r.w.now += CK_NS_PER_MS;
    jm_metrics(&jm, 1, 0, 0);
    assert_true(rv->caught_up == CK_TIME_NEVER);
    /* The source replays: 5 s behind. */
    r.w.now += CK_NS_PER_MS;
    jm_metrics(&jm, 0, 0, 5 * CK_NS_PER_S);
    assert_true(rv->caught_up == CK_TIME_NEVER);
    /* Back at its level: caught up, now. */
    r.w.now += CK_NS_PER_S;
    jm_metrics(&jm, 0, 0, CK_NS_PER_MS);
    assert_true(rv->caught_up == r.w.now);
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

static void jm_at(cc_rig *r, ck_jm *jm, ck_time t)
{
    r->w.now = t;
    ck_node nd = ck_jm_node(jm);
    if (nd.ops->deadline(nd.self) <= t)
        nd.ops->on_deadline(nd.self);
}

/* How the job manager notices a task manager (Flink's HeartbeatMonitorImpl):
 * a connection reset (its process died) loses it at once; a connection
 * refused by a host that came back makes its heartbeat RPCs fail, one per
 * interval, and heartbeat.rpc-failure-threshold of them in a row lose it
 * (-1: only the timeout does); a heartbeat that gets through resets the
 * count; a new process that registers while the earlier one runs
 * subtasks is another instance, whose heartbeats do not keep the earlier
 * one alive. */
static void test_jm_heartbeat_rpc_failures_and_registration(void **state)
{
    (void)state;
    static cc_rig r;
    for (int mode = 0; mode < 3; mode++) { /* threshold 2, -1, and a re-registration */
        cc_setup(&r, 0, 0, 1);
        ck_cc_free(&r.cc);
        r.cfg.v[CK_CFG_HB_RPC_FAILURES] = mode == 1 ? -1 : 2;
        ck_job_env env = {.g = &r.g, .cfg = &r.cfg, .job_id = "job"};
        static ck_jm jm;
        assert_int_equal(ck_jm_init(&jm, &r.jp.plat, &env, 3, 1), 0);
        ck_node nd = ck_jm_node(&jm);
        uint16_t place[8];
        for (int h = 0; h < 3; h++)
            jm_register(&jm, h);
        assert_int_equal(deploys(&r.w, place, r.g.nsubtasks), 3);
        assert_true(place[0] == 0 && place[2] == 1); /* tm2 is spare */
        for (uint32_t g = 0; g < r.g.nsubtasks; g++)
            jm_from_task(&jm, CK_MSG_TASK_RUNNING, g, running_body, CK_RUNNING_BODY);
        if (mode == 2) {
            /* tm1's host came back at 5 s with a new process: it registers
             * (and keeps sending heartbeats), its old connections are
             * refused; the one the job ran on is lost after 2 failed RPCs. */
            jm_at(&r, &jm, 5 * CK_NS_PER_S);
            nd.ops->on_peer_lost(nd.self, 1 | CK_PEER_REFUSED);
            jm_register(&jm, 1);
            jm_at(&r, &jm, 10 * CK_NS_PER_S);
            jm_heartbeat(&jm, 1);
            jm_at(&r, &jm, 14 * CK_NS_PER_S);
            assert_int_equal((int)jm.nrecoveries, 0);
            jm_at(&r, &jm, 15 * CK_NS_PER_S);
            assert_int_equal((int)jm.nrecoveries, 1);
            assert_non_null(strstr(jm.recoveries[0].cause, "2 heartbeat RPCs failed"));
            jm_heartbeat(&jm, 1); /* the new process is there */
            assert_true(jm.tm_seen[1] == 15 * CK_NS_PER_S);
            /* A reset connection (tm0's process died): lost at once. */
            jm_at(&r, &jm, 16 * CK_NS_PER_S);
            nd.ops->on_peer_lost(nd.self, 0);
            assert_true(jm.tm_seen[0] == CK_TIME_NEVER);
            ck_jm_free(&jm);
            fake_clear(&r.w);
            continue;
        }
        /* The spare's connection is refused at 1 s: lost at 11 s (2 RPCs). */
        jm_at(&r, &jm, CK_NS_PER_S);
        nd.ops->on_peer_lost(nd.self, 2 | CK_PEER_REFUSED);
        jm_at(&r, &jm, 10 * CK_NS_PER_S);
        assert_true(jm.tm_seen[2] != CK_TIME_NEVER);
        jm_at(&r, &jm, 11 * CK_NS_PER_S);
        assert_true(mode == 1 ? jm.tm_seen[2] != CK_TIME_NEVER : jm.tm_seen[2] == CK_TIME_NEVER);
        assert_int_equal((int)jm.nrecoveries, 0); /* it ran nothing */
        /* tm1's connection is refused, then a heartbeat gets through. */
        jm_at(&r, &jm, 12 * CK_NS_PER_S);
        nd.ops->on_peer_lost(nd.self, 1 | CK_PEER_REFUSED);
        jm_at(&r, &jm, 15 * CK_NS_PER_S);
        jm_heartbeat(&jm, 1);
        jm_at(&r, &jm, 25 * CK_NS_PER_S);
        assert_int_equal(jm.state, CK_JOB_RUNNING);
        /* Refused again, and nothing gets through: the job fails over. */
        jm_at(&r, &jm, 30 * CK_NS_PER_S);
        nd.ops->on_peer_lost(nd.self, 1 | CK_PEER_REFUSED);
        jm_at(&r, &jm, 40 * CK_NS_PER_S);
        if (mode == 0) {
            assert_int_equal((int)jm.nrecoveries, 1);
            assert_non_null(strstr(jm.recoveries[0].cause, "2 heartbeat RPCs failed"));
            assert_true(jm.recoveries[0].detected == 40 * CK_NS_PER_S);
        } else {
            /* Only timeouts lose task managers: first tm0, unheard since 0 s. */
            assert_int_equal((int)jm.nrecoveries, 0);
            jm_at(&r, &jm, nd.ops->deadline(nd.self));
            assert_int_equal((int)jm.nrecoveries, 1);
            assert_non_null(strstr(jm.recoveries[0].cause, "heartbeat timed out"));
            assert_true(jm.recoveries[0].detected == 50 * CK_NS_PER_S + 1); /* tm0: never heard since 0 */
        }
        ck_jm_free(&jm);
        fake_clear(&r.w);
    }
}

/* records_in counts what every attempt read: the last report of a
 * cancelled subtask, arriving after the failover, adds to its counts
 * (and changes nothing else). */
static void test_jm_counts_cancelled_attempts(void **state)
{
    (void)state;
    static cc_rig r;
    static ck_jm jm;
    jm_running(&r, &jm);
    jm_metrics(&jm, 0, 0, 2 * CK_NS_PER_MS);
    uint64_t before = jm.tasks[0].task.records_in;
    uint8_t body[CK_FAIL_BODY_MIN + 4] = {0};
    memcpy(body + CK_FAIL_BODY_MIN, "boom", 4);
    r.w.now = CK_NS_PER_S;
    jm_from_task(&jm, CK_MSG_TASK_FAILED, 1, body, sizeof(body));
    assert_int_equal(jm.state, CK_JOB_RESTARTING);
    /* The cancelled source's last report, while the job restarts. */
    jm_metrics(&jm, 0, 0, 7 * CK_NS_PER_S);
    assert_true(jm.tasks[0].task.records_in > before);
    assert_true(jm.tasks[0].task.lag_ns == 2 * CK_NS_PER_MS); /* its lag is not taken */
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

/* The job manager's next checkpoint, acknowledged by every subtask and
 * its metadata stored: completed. Returns its id. */
static uint64_t jm_checkpoint(cc_rig *r, ck_jm *jm)
{
    ck_node nd = ck_jm_node(jm);
    uint64_t id = jm->cc.next_id;
    for (int k = 0; k < 100 && !ck_cc_find(&jm->cc, id); k++)
        jm_at(r, jm, r->w.now + 10 * CK_NS_PER_MS);
    assert_non_null(ck_cc_find(&jm->cc, id));
    for (uint32_t g = 0; g < r->g.nsubtasks; g++) {
        ck_cp_ack a = {.id = id, .sync_ns = 1, .async_ns = 2};
        char key[64];
        snprintf(key, sizeof(key), "checkpoints/job/chk-%llu/s%u", (unsigned long long)id, g);
        assert_int_equal(
            ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 100, 7, CK_KGR_EMPTY), 0);
        uint8_t *body;
        size_t len;
        assert_int_equal(ck_cp_ack_encode(&a, &body, &len), 0);
        jm_from_task(jm, CK_MSG_CP_ACK, g, body, len);
        free(body);
        ck_cp_ack_free(&a);
    }
    nd.ops->on_complete(nd.self, id, CK_OK, NULL, 0); /* the _metadata landed */
    assert_int_equal(ck_cc_find(&jm->cc, id)->status, CK_CP_COMPLETED);
    return id;
}

/* Subtask g of the current attempt reports that its restore of checkpoint
 * cp failed (code) on the file key. */
static void jm_restore_failed(ck_jm *jm, uint32_t g, uint32_t code, uint64_t cp, const char *key)
{
    uint8_t body[CK_FAIL_BODY_MIN + 64 + 32];
    size_t kl = strlen(key);
    const char *why = "it broke";
    ck_put_u32(body, code);
    ck_put_u64(body + 4, cp);
    ck_put_u16(body + 12, (uint16_t)kl);
    memcpy(body + CK_FAIL_BODY_MIN, key, kl);
    memcpy(body + CK_FAIL_BODY_MIN + kl, why, strlen(why));
    jm_from_task(jm, CK_MSG_TASK_FAILED, g, body, CK_FAIL_BODY_MIN + kl + strlen(why));
}

/* The job fails over and, after the restart delay, deploys again: returns
 * the checkpoint the new attempt restores (every subtask then runs). */
static uint64_t jm_redeployed(cc_rig *r, ck_jm *jm)
{
    assert_int_equal(jm->state, CK_JOB_RESTARTING);
    jm_at(r, jm, r->w.now + 200 * CK_NS_PER_MS);
    jm_heartbeat(jm, 0);
    jm_heartbeat(jm, 1);
    jm_at(r, jm, r->w.now);
    assert_int_equal(jm->state, CK_JOB_RUNNING);
    for (uint32_t g = 0; g < r->g.nsubtasks; g++)
        jm_from_task(jm, CK_MSG_TASK_RUNNING, g, running_body, CK_RUNNING_BODY);
    return jm->restore_cp;
}

/* A restore that fails on its checkpoint (state missing, a file damaged)
 * makes the job manager fall back to the checkpoint before, and it
 * records which one it left, for which, on which file and why: the run's
 * judge allows only a fallback past a file the timeline damaged. A
 * restore that failed for a reason of its own (memory, an I/O error) is
 * an ordinary failure: the next attempt restores the same checkpoint. */
static void test_jm_records_fallbacks(void **state)
{
    (void)state;
    static cc_rig r;
    static ck_jm jm;
    cc_setup(&r, 0, 0, 1);
    ck_cc_free(&r.cc);
    r.cfg.v[CK_CFG_CP_INTERVAL] = 100 * CK_NS_PER_MS;
    r.cfg.v[CK_CFG_CP_RETAINED] = 3;
    r.cfg.v[CK_CFG_RS_TYPE] = CK_RS_FIXED_DELAY;
    r.cfg.v[CK_CFG_RS_FD_DELAY] = 100 * CK_NS_PER_MS;
    r.cfg.v[CK_CFG_RS_FD_ATTEMPTS] = 10;
    ck_job_env env = {.g = &r.g, .cfg = &r.cfg, .job_id = "job"};
    assert_int_equal(ck_jm_init(&jm, &r.jp.plat, &env, 2, 1), 0);
    jm_heartbeat(&jm, 0);
    jm_heartbeat(&jm, 1);
    for (uint32_t g = 0; g < r.g.nsubtasks; g++)
        jm_from_task(&jm, CK_MSG_TASK_RUNNING, g, running_body, CK_RUNNING_BODY);
    uint64_t c1 = jm_checkpoint(&r, &jm), c2 = jm_checkpoint(&r, &jm);
    assert_true(c2 == c1 + 1);
    uint8_t body[CK_FAIL_BODY_MIN + 4] = {0};
    memcpy(body + CK_FAIL_BODY_MIN, "boom", 4);
    jm_from_task(&jm, CK_MSG_TASK_FAILED, 2, body, sizeof(body));
    assert_true(jm_redeployed(&r, &jm) == c2);
    /* Out of memory restoring c2: c2 again, nothing recorded. */
    jm_restore_failed(&jm, 1, CK_FAIL_RESTORE_IO, c2, "checkpoints/job/chk-2/s1");
    assert_true(jm_redeployed(&r, &jm) == c2);
    assert_int_equal((int)jm.nfallbacks, 0);
    /* c2 holds no state for subtask 1: back to c1, recorded. */
    jm_restore_failed(&jm, 1, CK_FAIL_RESTORE_MISSING, c2, "checkpoints/job/chk-2/");
    assert_int_equal((int)jm.nfallbacks, 1);
    const ck_fallback *f = &jm.fallbacks[0];
    assert_true(f->from == c2 && f->to == c1 && f->subtask == 1);
    assert_int_equal(f->code, CK_FAIL_RESTORE_MISSING);
    assert_string_equal(f->key, "checkpoints/job/chk-2/");
    assert_string_equal(f->why, "it broke");
    assert_true(f->at == r.w.now);
    assert_true(jm_redeployed(&r, &jm) == c1);
    /* Another subtask's report on c2, late: nothing new. */
    jm_restore_failed(&jm, 0, CK_FAIL_RESTORE_DAMAGED, c2, "checkpoints/job/chk-2/s0");
    assert_int_equal((int)jm.nfallbacks, 1);
    assert_true(jm_redeployed(&r, &jm) == c1);
    /* c1 damaged: none left, the job fails, and the fallback says so. */
    jm_restore_failed(&jm, 2, CK_FAIL_RESTORE_DAMAGED, c1, "checkpoints/job/chk-1/s2");
    assert_int_equal((int)jm.nfallbacks, 2);
    assert_true(jm.fallbacks[1].from == c1 && jm.fallbacks[1].to == 0);
    assert_int_equal(jm.fallbacks[1].code, CK_FAIL_RESTORE_DAMAGED);
    assert_int_equal(jm.state, CK_JOB_FAILED);
    assert_int_equal(jm.failed_because, CK_JOBFAIL_NO_CHECKPOINT);
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

/* A stop-with-savepoint that a subtask declines (it failed on a task
 * manager) fails the job over, as Flink's StopWithSavepointTermination-
 * Handler; one that expires lets the job go on. */
static void test_jm_stop_with_savepoint_failures(void **state)
{
    (void)state;
    static cc_rig r;
    for (int declined = 0; declined < 2; declined++) {
        static ck_jm jm;
        jm_running(&r, &jm);
        ck_node nd = ck_jm_node(&jm);
        uint8_t sb[CK_SAVEPOINT_BODY] = {0};
        size_t n;
        uint8_t *m = ck_wire_msg(CK_MSG_SAVEPOINT, CK_EP_CLIENT, CK_EP_JM, 0, sb, sizeof(sb), &n);
        ck_put_u32(m + 16, 1); /* stop */
        nd.ops->on_message(nd.self, m, n);
        uint64_t id = jm.stop_id;
        assert_true(id != 0);
        if (declined) {
            uint8_t body[12 + 6];
            ck_put_u64(body, id);
            ck_put_u32(body + 8, CK_DECLINE_FAILURE);
            memcpy(body + 12, "boom!!", 6);
            jm_from_task(&jm, CK_MSG_CP_DECLINE, 1, body, sizeof(body));
        } else {
            r.w.now = 2 * CK_NS_PER_S; /* it expires */
            nd.ops->on_deadline(nd.self);
        }
        if (declined) {
            assert_int_equal((int)jm.nrecoveries, 1);
            assert_non_null(strstr(jm.recoveries[0].cause, "stop-with-savepoint"));
            assert_int_equal(jm.state, CK_JOB_RESTARTING);
        } else {
            assert_int_equal((int)jm.nrecoveries, 0);
            assert_int_equal(jm.state, CK_JOB_RUNNING);
        }
        assert_true(jm.stop_id == 0);
        ck_jm_free(&jm);
        fake_clear(&r.w);
    }
}

/* A message of `type` from subtask g's attempt `attempt`. */
static void jm_from_attempt(ck_jm *jm, int type, uint32_t g, uint32_t attempt,
                            const uint8_t *body, size_t len)
{
    size_t n;
    uint8_t *msg = ck_wire_msg(type, g, CK_EP_JM, attempt, body, len, &n);
    assert_non_null(msg);
    ck_node nd = ck_jm_node(jm);
    nd.ops->on_message(nd.self, msg, n);
}

/* Subtask g of attempt `attempt` reports TASK_ENDED or TASK_FINISHED. */
static void jm_report(ck_jm *jm, int type, uint32_t g, uint32_t attempt)
{
    ck_metrics m;
    ck_metrics_init(&m);
    uint8_t *body;
    size_t len;
    assert_int_equal(ck_metrics_encode(&m, &body, &len), 0);
    jm_from_attempt(jm, type, g, attempt, body, len);
    free(body);
    ck_metrics_free(&m);
}

/* Subtask g of attempt `attempt` acknowledges checkpoint id. */
static void jm_ack(ck_jm *jm, uint32_t g, uint32_t attempt, uint64_t id)
{
    ck_cp_ack a = {.id = id, .sync_ns = 1, .async_ns = 2, .flags = CK_ACK_INPUT_ENDED};
    char key[64];
    snprintf(key, sizeof(key), "checkpoints/job/chk-%llu/s%u", (unsigned long long)id, g);
    assert_int_equal(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 100, 7, CK_KGR_EMPTY),
                     0);
    uint8_t *body;
    size_t len;
    assert_int_equal(ck_cp_ack_encode(&a, &body, &len), 0);
    jm_from_attempt(jm, CK_MSG_CP_ACK, g, attempt, body, len);
    free(body);
    ck_cp_ack_free(&a);
}

/*
 * The job manager at the interleaving test_coordinator_final_during_
 * region_restart found (swarm-region.json, seed 190): two pipelined
 * regions (a source chained to a sink, parallelism 2, one subtask on
 * each of tm0 and tm1, tm2 spare), both subtasks ended their input while
 * a checkpoint is pending, and tm1's heartbeat times out. The failover
 * aborts that checkpoint and starts none; the region restarts on tm2 and
 * the final checkpoint, triggered once it has ended again, reaches both
 * subtasks at their attempts; the job finishes.
 */
/* The rig's configuration and job replaced by a job of two pipelined
 * regions (a source chained to a sink, parallelism 2), deployed by jm on
 * three task managers (subtask 0 on tm0, 1 on tm1, tm2 spare), both
 * subtasks running; region failover, fixed-delay restarts after 100 ms
 * unless the test sets a strategy after cc_setup. */
static void jm_two_regions(cc_rig *r, ck_jm *jm, ck_graph *g)
{
    r->cfg.v[CK_CFG_FAILOVER] = CK_FAILOVER_REGION;
    if (!r->cfg.set[CK_CFG_RS_TYPE]) {
        r->cfg.v[CK_CFG_RS_TYPE] = CK_RS_FIXED_DELAY;
        r->cfg.v[CK_CFG_RS_FD_DELAY] = 100 * CK_NS_PER_MS;
    }
    ck_job_spec spec = {.nops = 2};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 2,
                               .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_FORWARD};
    int bad;
    char e[200];
    assert_int_equal(ck_graph_build(g, &spec, &r->cfg, &bad, e, sizeof(e)), 0);
    assert_int_equal(g->nsubtasks, 2);
    ck_job_env env = {.g = g, .cfg = &r->cfg, .job_id = "job"};
    assert_int_equal(ck_jm_init(jm, &r->jp.plat, &env, 3, 1), 0);
    uint16_t place[2];
    for (int h = 0; h < 3; h++)
        jm_register(jm, h);
    assert_int_equal(deploys(&r->w, place, 2), 3);
    assert_true(place[0] == 0 && place[1] == 1);
    for (uint32_t s = 0; s < 2; s++)
        jm_from_attempt(jm, CK_MSG_TASK_RUNNING, s, 0, running_body, CK_RUNNING_BODY);
}

static void test_jm_final_checkpoint_at_a_region_failover(void **state)
{
    (void)state;
    static cc_rig r;
    static ck_jm jm;
    static ck_graph g;
    cc_setup(&r, 100, 0, 1);
    ck_cc_free(&r.cc);
    r.cfg.v[CK_CFG_CP_TIMEOUT] = 10 * CK_NS_PER_S;
    r.cfg.v[CK_CFG_HB_INTERVAL] = 100 * CK_NS_PER_MS;
    r.cfg.v[CK_CFG_HB_TIMEOUT] = 500 * CK_NS_PER_MS;
    jm_two_regions(&r, &jm, &g);
    ck_node nd = ck_jm_node(&jm);
    /* Heartbeats every 100 ms until a checkpoint is pending. */
    ck_time t = 0;
    while (jm.cc.npending == 0) {
        t += 10 * CK_NS_PER_MS;
        assert_true(t < CK_NS_PER_S);
        for (int h = 0; h < 3; h++)
            if (t % (100 * CK_NS_PER_MS) == 0)
                jm_heartbeat(&jm, h);
        jm_at(&r, &jm, t);
    }
    uint64_t pending = jm.cc.cps[jm.cc.ncps - 1].id;
    jm_report(&jm, CK_MSG_TASK_ENDED, 0, 0);
    jm_report(&jm, CK_MSG_TASK_ENDED, 1, 0);
    assert_int_equal(jm.cc.npending, 1); /* the final one waits for it */
    /* tm1 falls silent: lost at its heartbeat timeout. */
    size_t ncps = jm.cc.ncps;
    while (jm.nrecoveries == 0) {
        t += 10 * CK_NS_PER_MS;
        assert_true(t < 3 * CK_NS_PER_S);
        if (t % (100 * CK_NS_PER_MS) == 0) {
            jm_heartbeat(&jm, 0);
            jm_heartbeat(&jm, 2);
        }
        jm_at(&r, &jm, t);
        if (jm.nrecoveries == 0 && nd.ops->deadline(nd.self) < t + 10 * CK_NS_PER_MS)
            jm_at(&r, &jm, t = nd.ops->deadline(nd.self));
    }
    assert_non_null(strstr(jm.recoveries[0].cause, "heartbeat timed out"));
    assert_int_equal(jm.state, CK_JOB_RUNNING);
    assert_int_equal(ck_cc_find(&jm.cc, pending)->status, CK_CP_ABORTED);
    assert_int_equal(jm.cc.npending, 0); /* no final checkpoint at the cancelled attempts */
    assert_int_equal(jm.cc.ncps, ncps);
    /* The region restarts on tm2 after 100 ms. */
    while (jm.attempt == 0) {
        t += 10 * CK_NS_PER_MS;
        assert_true(t < 5 * CK_NS_PER_S);
        if (t % (100 * CK_NS_PER_MS) == 0) {
            jm_heartbeat(&jm, 0);
            jm_heartbeat(&jm, 2);
        }
        jm_at(&r, &jm, t);
    }
    assert_int_equal(jm.placement[1], 2);
    fake_clear(&r.w);
    jm_from_attempt(&jm, CK_MSG_TASK_RUNNING, 1, 1, running_body, CK_RUNNING_BODY);
    assert_int_equal(jm.cc.restoring, 0);
    assert_int_equal(jm.cc.npending, 0);
    jm_report(&jm, CK_MSG_TASK_ENDED, 1, 1);
    /* The final checkpoint, at each subtask's own attempt. */
    assert_int_equal(jm.cc.npending, 1);
    const ck_cp_record *fin = &jm.cc.cps[jm.cc.ncps - 1];
    uint64_t id = fin->id;
    assert_true(fin->flags & CK_CP_FLAG_FINAL);
    int reached = 0;
    fake_msg *m;
    while ((m = fake_pop(&r.w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        if (h.type == CK_MSG_CP_TRIGGER) {
            uint32_t a, gl;
            assert_true(ck_ep_task_split(&g, m->dst, &a, &gl));
            assert_int_equal(a, gl == 1 ? 1u : 0u);
            reached |= 1 << gl;
        }
        free(m->data);
        free(m);
    }
    assert_int_equal(reached, 3);
    jm_ack(&jm, 0, 0, id);
    jm_ack(&jm, 1, 1, id);
    nd.ops->on_complete(nd.self, id, CK_OK, NULL, 0);
    assert_int_equal(ck_cc_find(&jm.cc, id)->status, CK_CP_COMPLETED);
    jm_report(&jm, CK_MSG_TASK_FINISHED, 0, 0);
    jm_report(&jm, CK_MSG_TASK_FINISHED, 1, 1);
    assert_int_equal(jm.state, CK_JOB_FINISHED);
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

/*
 * Exponential-delay restarts as Flink 1.20's notifyFailure: a failure
 * before the pending restart's time merges into it. Subtask 0's region
 * fails at 1 s (restart due at 1.1 s, the initial backoff), subtask 1's
 * at 1.05 s: it joins (the restart now covers every region), is not
 * counted, and both regions restart at 1.1 s, the first failure's time,
 * in one recovery.
 */
static void test_jm_failure_merges_into_pending_restart(void **state)
{
    (void)state;
    static cc_rig r;
    static ck_jm jm;
    static ck_graph g;
    cc_setup(&r, 0, 0, 1);
    ck_cc_free(&r.cc);
    r.cfg.v[CK_CFG_RS_TYPE] = CK_RS_EXPONENTIAL_DELAY;
    r.cfg.set[CK_CFG_RS_TYPE] = 1;
    r.cfg.v[CK_CFG_RS_EXP_INITIAL] = 100 * CK_NS_PER_MS;
    r.cfg.v[CK_CFG_RS_EXP_MAX] = CK_NS_PER_S;
    r.cfg.v[CK_CFG_RS_EXP_JITTER] = 0;
    jm_two_regions(&r, &jm, &g);
    uint8_t body[12 + 4] = {0};
    memcpy(body + 12, "boom", 4);
    r.w.now = CK_NS_PER_S;
    jm_from_attempt(&jm, CK_MSG_TASK_FAILED, 0, 0, body, sizeof(body));
    assert_int_equal(jm.nrestarting, 1);
    r.w.now = CK_NS_PER_S + 50 * CK_NS_PER_MS;
    jm_from_attempt(&jm, CK_MSG_TASK_FAILED, 1, 0, body, sizeof(body));
    assert_int_equal(jm.state, CK_JOB_RESTARTING); /* every region: a full restart */
    assert_int_equal((int)jm.nrecoveries, 1);
    assert_int_equal(jm.rs.restarts, 1);
    assert_true(jm.restart_at == CK_NS_PER_S + 100 * CK_NS_PER_MS);
    fake_clear(&r.w);
    jm_at(&r, &jm, CK_NS_PER_S + 99 * CK_NS_PER_MS);
    assert_int_equal((int)jm.attempt, 0);
    jm_at(&r, &jm, CK_NS_PER_S + 100 * CK_NS_PER_MS);
    assert_int_equal((int)jm.attempt, 1);
    assert_int_equal(jm.sub_attempt[0], 1);
    assert_int_equal(jm.sub_attempt[1], 1);
    assert_true(jm.recoveries[0].restarted == CK_NS_PER_S + 100 * CK_NS_PER_MS);
    ck_jm_free(&jm);
    fake_clear(&r.w);
}

/* _metadata: what is encoded decodes back. Found by fuzz_metadata: a
 * state file's key with a newline in it was accepted, and the error about
 * it (`chandy savepoint`, `run -s`) came out on two lines; keys with
 * control characters are refused as malformed. */
static void test_metadata_roundtrip_and_bad_keys(void **state)
{
    (void)state;
    ck_cp_meta m = {.id = 7, .trigger = 5, .flags = CK_CP_FLAG_SAVEPOINT, .input_fp = 99,
                    .nsubtasks = 2, .nvertices = 1};
    m.tasks = calloc(2, sizeof(*m.tasks));
    m.vertices = calloc(1, sizeof(*m.vertices));
    assert_non_null(m.tasks);
    assert_non_null(m.vertices);
    m.vertices[0].parallelism = 2;
    m.vertices[0].nops = 1;
    m.vertices[0].ops[0] = (ck_cp_meta_op){.uid = "count", .kind = CK_OP_AGGREGATE,
                                           .max_parallelism = 128};
    for (int s = 0; s < 2; s++) {
        char key[64];
        snprintf(key, sizeof(key), "savepoints/sp-7/v0-%d.state", s);
        assert_int_equal(ck_handles_add(&m.tasks[s], CK_HANDLE_SNAPSHOT, 0, key, 100u + (unsigned)s,
                                        0xabcu + (unsigned)s,
                                        ck_kgr_make(64u * (unsigned)s, 64u * (unsigned)s + 64 - 1)),
                         0);
    }
    for (int bad = 0; bad < 4; bad++) {
        if (bad == 1)
            m.tasks[1].v[0].key[4] = '\n';
        if (bad == 2)
            m.tasks[1].v[0].key[4] = 0x7f;
        if (bad == 3) { /* a subtask without state handles (beside one with two) */
            m.tasks[1].v[0].key[4] = 'p';
            m.tasks[1].n = 0;
            assert_int_equal(ck_handles_add(&m.tasks[0], CK_HANDLE_SNAPSHOT, 0,
                                            "savepoints/sp-7/v0-0.more", 1, 1, CK_KGR_EMPTY),
                             0);
        }
        uint8_t *p;
        size_t len;
        assert_int_equal(ck_cp_meta_encode(&m, &p, &len), 0);
        ck_cp_meta d;
        const char *why;
        int rc = ck_cp_meta_decode(p, len, &d, &why);
        if (bad) {
            assert_int_equal(rc, CK_ECORRUPT);
            if (bad == 3)
                assert_string_equal(why, "a subtask without state handles");
        } else {
            assert_int_equal(rc, 0);
            assert_true(d.id == 7 && d.trigger == 5 && d.input_fp == 99 && d.nsubtasks == 2);
            assert_true(d.version == 5 && d.nvertices == 1 && d.vertices[0].parallelism == 2 &&
                        d.vertices[0].nops == 1 && d.vertices[0].ops[0].kind == CK_OP_AGGREGATE &&
                        d.vertices[0].ops[0].max_parallelism == 128);
            assert_string_equal(d.vertices[0].ops[0].uid, "count");
            assert_int_equal(d.flags, CK_CP_FLAG_SAVEPOINT);
            assert_int_equal(d.tasks[1].n, 1);
            assert_string_equal(d.tasks[1].v[0].key, m.tasks[1].v[0].key);
            assert_true(d.tasks[1].v[0].bytes == 101 && d.tasks[1].v[0].crc == 0xabd &&
                        d.tasks[1].v[0].kgr.start == 64 && d.tasks[1].v[0].kgr.end == 127);
            ck_cp_meta_free(&d);
        }
        free(p);
    }
    m.tasks[1].n = 1;
    ck_cp_meta_free(&m);
}

/* Rewrites a _metadata image's magic to version v's and seals it again. */
static void meta_as_version(uint8_t *p, size_t len, int v)
{
    p[3] = (uint8_t)('0' + v);
    ck_put_u32(p + len - 4, ck_crc32c(0, p, len - 4));
}

/* Version 5 carries each canonical handle's operator-state counts (per
 * operator and state name, its mode and entries; with an inline file
 * too) there and back; a version-4 file still reads, without them, and
 * one that holds counts is corrupt; bad counts are refused when made and
 * when read (a mode past broadcast), and every truncation of a valid file
 * (sealed again, so that the parser meets it) is one clear refusal. */
static void test_metadata_opcounts(void **state)
{
    (void)state;
    ck_cp_meta m = {.id = 3, .nsubtasks = 2, .nvertices = 1};
    m.tasks = calloc(2, sizeof(*m.tasks));
    m.vertices = calloc(1, sizeof(*m.vertices));
    assert_non_null(m.tasks);
    assert_non_null(m.vertices);
    m.vertices[0].parallelism = 2;
    m.vertices[0].nops = 1;
    m.vertices[0].ops[0] = (ck_cp_meta_op){.uid = "buf", .kind = CK_OP_BUFFER,
                                           .max_parallelism = 128, .index = 1};
    ck_handle_opcount c[2];
    memset(c, 0, sizeof(c));
    c[0] = (ck_handle_opcount){.op = 1, .mode = 1, .entries = 500};
    snprintf(c[0].name, sizeof(c[0].name), "buffered");
    c[1] = (ck_handle_opcount){.op = 1, .mode = 2, .entries = 1};
    snprintf(c[1].name, sizeof(c[1].name), "count_seen");
    for (int s = 0; s < 2; s++) {
        char key[64];
        snprintf(key, sizeof(key), "checkpoints/j/chk-3/v0-%d.state", s);
        assert_int_equal(ck_handles_add(&m.tasks[s], CK_HANDLE_SNAPSHOT, 0, key, 4, 7,
                                        CK_KGR_EMPTY),
                         0);
        c[0].entries = 500u + (uint32_t)s;
        assert_int_equal(ck_handles_opcounts_last(&m.tasks[s], c, 2), 0);
    }
    uint8_t *data = malloc(4);
    memcpy(data, "abcd", 4);
    assert_int_equal(ck_handles_inline_last(&m.tasks[1], data, 4), 0); /* after the counts */
    /* bad counts are not made */
    ck_handle_opcount bad[2];
    memcpy(bad, c, sizeof(bad));
    bad[1].mode = 4;
    assert_int_equal(ck_handles_opcounts_last(&m.tasks[0], bad, 2), CK_EINVAL);
    memcpy(bad, c, sizeof(bad));
    snprintf(bad[1].name, sizeof(bad[1].name), "buffered");
    assert_int_equal(ck_handles_opcounts_last(&m.tasks[0], bad, 2), CK_EINVAL); /* twice */
    bad[1].name[0] = 0;
    assert_int_equal(ck_handles_opcounts_last(&m.tasks[0], bad, 2), CK_EINVAL);
    uint8_t *p;
    size_t len;
    assert_int_equal(ck_cp_meta_encode(&m, &p, &len), 0);
    assert_int_equal(memcmp(p, "CKP5", 4), 0);
    ck_cp_meta d;
    const char *why = "";
    int drc = ck_cp_meta_decode(p, len, &d, &why);
    if (drc)
        fprintf(stderr, "decode: %s\n", why);
    assert_int_equal(drc, 0);
    assert_int_equal(d.version, 5);
    for (int s = 0; s < 2; s++) {
        const ck_handle *h = &d.tasks[s].v[0];
        assert_true(h->flags & CK_HANDLE_OPCOUNTS);
        assert_int_equal(h->nopc, 2);
        assert_int_equal(h->opc[0].op, 1);
        assert_int_equal(h->opc[0].mode, 1);
        assert_int_equal(h->opc[0].entries, 500u + (uint32_t)s);
        assert_string_equal(h->opc[0].name, "buffered");
        assert_int_equal(h->opc[1].mode, 2);
        assert_string_equal(h->opc[1].name, "count_seen");
    }
    assert_true(d.tasks[1].v[0].flags & CK_HANDLE_INLINE);
    assert_memory_equal(d.tasks[1].v[0].data, "abcd", 4);
    /* a copy keeps them */
    ck_handles cp;
    assert_int_equal(ck_handles_copy(&cp, &d.tasks[1]), 0);
    assert_int_equal(cp.v[0].nopc, 2);
    ck_handles like = {0};
    assert_int_equal(ck_handles_add_like(&like, &d.tasks[0].v[0], 0), 0);
    assert_int_equal(like.v[0].nopc, 2);
    assert_string_equal(like.v[0].opc[1].name, "count_seen");
    ck_handles_free(&like);
    ck_handles_free(&cp);
    ck_cp_meta_free(&d);
    /* version 4 with counts: corrupt, one clear reason */
    uint8_t *q = malloc(len);
    memcpy(q, p, len);
    meta_as_version(q, len, 4);
    assert_int_equal(ck_cp_meta_decode(q, len, &d, &why), CK_ECORRUPT);
    assert_string_equal(why, "operator-state counts in a _metadata of a version before 5");
    /* a mode past broadcast on the wire: the first count's mode byte is
     * 10 bytes before its name ("buffered") */
    memcpy(q, p, len);
    uint8_t *at = memmem(q, len, "buffered", 8);
    assert_non_null(at);
    assert_int_equal(at[-6], 1);
    at[-6] = 9;
    ck_put_u32(q + len - 4, ck_crc32c(0, q, len - 4));
    assert_int_equal(ck_cp_meta_decode(q, len, &d, &why), CK_ECORRUPT);
    assert_non_null(strstr(why, "operator-state counts"));
    /* every truncation, sealed again */
    for (size_t cut = 8; cut < len; cut++) {
        memcpy(q, p, cut - 4);
        ck_put_u32(q + cut - 4, ck_crc32c(0, q, cut - 4));
        int rc = ck_cp_meta_decode(q, cut, &d, &why);
        assert_int_equal(rc, CK_ECORRUPT);
        assert_non_null(why);
    }
    free(q);
    free(p);
    /* version 4 without counts still reads */
    for (int s = 0; s < 2; s++) {
        ck_handles_truncate(&m.tasks[s], 0);
        assert_int_equal(ck_handles_add(&m.tasks[s], CK_HANDLE_SNAPSHOT, 0, "checkpoints/j/x", 4,
                                        7, CK_KGR_EMPTY),
                         0);
    }
    assert_int_equal(ck_cp_meta_encode(&m, &p, &len), 0);
    meta_as_version(p, len, 4);
    assert_int_equal(ck_cp_meta_decode(p, len, &d, &why), 0);
    assert_int_equal(d.version, 4);
    assert_false(d.tasks[0].v[0].flags & CK_HANDLE_OPCOUNTS);
    assert_int_equal(d.tasks[0].v[0].nopc, 0);
    ck_cp_meta_free(&d);
    free(p);
    ck_cp_meta_free(&m);
}

/* The shared-state registry against a plain array of counts: random
 * references and releases over keys that collide in its table, through
 * growth and deletions (found: a slot a deletion moved kept its count, so
 * the next key put there started above zero and its file was never
 * deleted). */
static void test_shared_registry(void **state)
{
    (void)state;
    enum { NK = 3000 };
    static uint32_t model[NK];
    memset(model, 0, sizeof(model));
    ck_sreg r = {0};
    ck_rng g;
    ck_rng_init(&g, 3, 9);
    char k[80];
    for (int step = 0; step < 300000; step++) {
        uint32_t i = (uint32_t)ck_rng_below(&g, NK);
        snprintf(k, sizeof(k), "checkpoints/j/shared/op2-%u-a0-c%u-%06u.sst", i % 4, i % 17, i);
        if (ck_rng_below(&g, 2)) {
            assert_int_equal(ck_sreg_ref(&r, k), ++model[i]);
        } else {
            if (model[i])
                model[i]--;
            assert_int_equal(ck_sreg_unref(&r, k), model[i]);
        }
    }
    uint32_t live = 0;
    for (uint32_t i = 0; i < NK; i++) {
        snprintf(k, sizeof(k), "checkpoints/j/shared/op2-%u-a0-c%u-%06u.sst", i % 4, i % 17, i);
        assert_int_equal(ck_sreg_count(&r, k), model[i]);
        live += model[i] > 0;
    }
    assert_int_equal(r.n, live);
    ck_sreg_free(&r);
}

/* ---- two-phase-commit sink transactions ------------------------------------------- */

/* Savepoints: forced, in their own directory, never retired, never a
 * failure; an intermediate one commits nothing, a stop does and pauses
 * periodic checkpoints; ids go on from the savepoint a job started from. */
static void test_coordinator_savepoints(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS); /* checkpoint 1, pending */
    sent(&r, CK_MSG_CP_TRIGGER, NULL);
    r.w.now = 110 * CK_NS_PER_MS;
    /* max-concurrent is 1, yet a savepoint goes. */
    uint64_t sp = ck_cc_trigger_savepoint(&r.cc, 0);
    assert_int_equal(sp, 2);
    uint32_t dst;
    fake_msg *m = fake_pop(&r.w);
    assert_non_null(m);
    ck_wire_hdr h;
    assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
    assert_int_equal(h.type, CK_MSG_CP_TRIGGER);
    assert_int_equal(ck_get_u32(m->data + CK_WIRE_HDR + 16), CK_CP_FLAG_SAVEPOINT);
    free(m->data);
    free(m);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, sp);
    assert_string_equal(r.last_put, "savepoints/savepoint-job-2/_metadata");
    ck_cc_on_stored(&r.cc, sp, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, sp)->status, CK_CP_COMPLETED);
    assert_int_equal(sent(&r, CK_MSG_CP_COMPLETE, NULL), 0); /* no side effects */
    assert_int_equal(ck_cc_find(&r.cc, 1)->status, CK_CP_PENDING); /* not subsumed */
    /* Checkpoint 1 completes; with one retained, the savepoint stays. */
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, 1);
    ck_cc_on_stored(&r.cc, 1, CK_OK);
    advance(&r, 300 * CK_NS_PER_MS); /* checkpoint 3 */
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, 3);
    ck_cc_on_stored(&r.cc, 3, CK_OK);
    assert_true(ck_cc_find(&r.cc, 1)->retired);
    assert_false(ck_cc_find(&r.cc, sp)->retired);
    /* A savepoint that expires is not a checkpoint failure. */
    r.w.now = 310 * CK_NS_PER_MS;
    uint64_t sp2 = ck_cc_trigger_savepoint(&r.cc, 0);
    advance(&r, 900 * CK_NS_PER_MS);
    assert_int_equal(ck_cc_find(&r.cc, sp2)->status, CK_CP_EXPIRED);
    assert_false(r.cc.failed);
    sent(&r, 0, NULL);
    /* A stop commits, and no periodic checkpoint starts meanwhile. */
    uint64_t stop = ck_cc_trigger_savepoint(&r.cc, 1);
    assert_true(r.cc.next_trigger == CK_TIME_NEVER);
    assert_true(ck_cc_deadline(&r.cc) == 1400 * CK_NS_PER_MS); /* only its timeout */
    advance(&r, 1000 * CK_NS_PER_MS);
    assert_int_equal(sent(&r, CK_MSG_CP_TRIGGER, &dst), 1); /* the stop's own */
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, stop);
    ck_cc_on_stored(&r.cc, stop, CK_OK);
    assert_int_equal(sent(&r, CK_MSG_CP_COMPLETE, NULL), 3);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* Started from savepoint 41: the next id is 42. */
    cc_setup_from(&r, 42);
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS);
    assert_int_equal(r.cc.cps[0].id, 42);
    assert_non_null(ck_cc_find(&r.cc, 42));
    assert_null(ck_cc_find(&r.cc, 1));
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

/* Subtask s declines checkpoint id for a failure. */
static void decline_failure(cc_rig *r, uint32_t s, uint64_t id)
{
    ck_cc_on_decline(&r->cc, s, id, CK_DECLINE_FAILURE, "the upload failed");
}

/*
 * Tolerable checkpoint failures as Flink 1.20's CheckpointFailureManager
 * counts them for savepoints: an intermediate savepoint a task fails
 * (it declined) counts as a checkpoint does (handleTaskLevelCheckpoint-
 * Exception: a failover may help); one that expires on the job manager's
 * side does not, nor a stop-with-savepoint a task declined (the job
 * manager fails the job over for it); a completed savepoint ends a run of
 * failures (handleCheckpointSuccess), and the failure of a checkpoint
 * older than the last that completed does not count.
 */
static void test_coordinator_savepoint_failures(void **state)
{
    (void)state;
    static cc_rig r;
    /* With none tolerated, a task's failure of an intermediate savepoint
     * fails the job. */
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    r.w.now = 10 * CK_NS_PER_MS;
    uint64_t sp = ck_cc_trigger_savepoint(&r.cc, 0);
    ack(&r, 0, sp);
    decline_failure(&r, 1, sp);
    assert_int_equal(ck_cc_find(&r.cc, sp)->status, CK_CP_DECLINED);
    assert_int_equal(r.cc.consecutive_failures, 1);
    assert_true(r.cc.failed);
    assert_non_null(strstr(r.cc.failure, "tolerable failure threshold (0)"));
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* Expired, it does not count; a stop-with-savepoint declined neither. */
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    r.w.now = 10 * CK_NS_PER_MS;
    sp = ck_cc_trigger_savepoint(&r.cc, 0);
    advance(&r, 10 * CK_NS_PER_MS + r.cc.timeout);
    assert_int_equal(ck_cc_find(&r.cc, sp)->status, CK_CP_EXPIRED);
    uint64_t stop = ck_cc_trigger_savepoint(&r.cc, 1);
    decline_failure(&r, 2, stop);
    assert_int_equal(ck_cc_find(&r.cc, stop)->status, CK_CP_DECLINED);
    assert_true(ck_cc_find(&r.cc, stop)->task_declined); /* the job manager fails over */
    assert_int_equal(r.cc.consecutive_failures, 0);
    assert_false(r.cc.failed);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* One tolerated: a checkpoint fails, a savepoint completes, the next
     * checkpoint fails: not two in a row. */
    cc_setup(&r, 100, 1, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS); /* checkpoint 1 */
    uint64_t c1 = r.cc.cps[r.cc.ncps - 1].id;
    decline_failure(&r, 1, c1);
    assert_int_equal(r.cc.consecutive_failures, 1);
    r.w.now = 150 * CK_NS_PER_MS;
    sp = ck_cc_trigger_savepoint(&r.cc, 0);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, sp);
    ck_cc_on_stored(&r.cc, sp, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, sp)->status, CK_CP_COMPLETED);
    assert_int_equal(r.cc.consecutive_failures, 0);
    advance(&r, 200 * CK_NS_PER_MS);
    uint64_t c3 = r.cc.cps[r.cc.ncps - 1].id;
    assert_true(c3 > sp);
    decline_failure(&r, 0, c3);
    assert_int_equal(r.cc.consecutive_failures, 1);
    assert_false(r.cc.failed);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
    /* A checkpoint pending while a newer savepoint completes (savepoints
     * subsume nothing), then expiring: older than the last success, it
     * does not count. */
    cc_setup(&r, 100, 0, 1);
    ck_cc_start_attempt(&r.cc, 0, 0);
    advance(&r, 100 * CK_NS_PER_MS);
    c1 = r.cc.cps[r.cc.ncps - 1].id;
    r.w.now = 150 * CK_NS_PER_MS;
    sp = ck_cc_trigger_savepoint(&r.cc, 0);
    for (uint32_t s = 0; s < 3; s++)
        ack(&r, s, sp);
    ck_cc_on_stored(&r.cc, sp, CK_OK);
    assert_int_equal(ck_cc_find(&r.cc, c1)->status, CK_CP_PENDING);
    advance(&r, 100 * CK_NS_PER_MS + r.cc.timeout);
    assert_int_equal(ck_cc_find(&r.cc, c1)->status, CK_CP_EXPIRED);
    assert_int_equal(r.cc.consecutive_failures, 0);
    assert_false(r.cc.failed);
    ck_cc_free(&r.cc);
    fake_clear(&r.w);
}

static void test_sink_transactions(void **state)
{
    (void)state;
    ck_op sink;
    memset(&sink, 0, sizeof(sink));
    sink.two_phase = 1;
    sink.txn = 1;
    int64_t ing[3] = {1, 2, 3};
    assert_int_equal(ck_sink_txn_add(&sink, ing, 3), 0);
    assert_int_equal(ck_sink_precommit(&sink, 10), 0); /* txn 1 for checkpoint 10 */
    assert_int_equal(ck_sink_txn_add(&sink, ing, 1), 0);
    assert_int_equal(ck_sink_precommit(&sink, 11), 0); /* txn 2 for 11 */
    assert_true(sink.txn == 3);
    ck_txn x;
    assert_int_equal(ck_sink_take_committable(&sink, 9, &x), 0); /* nothing covered yet */
    /* Checkpoint 11 completes (10 failed, say): both commit, in order. */
    assert_int_equal(ck_sink_take_committable(&sink, 11, &x), 1);
    assert_true(x.txn == 1 && x.cp == 10 && x.n == 3);
    free(x.cnt);
    assert_int_equal(ck_sink_take_committable(&sink, 11, &x), 1);
    assert_true(x.txn == 2 && x.n == 1);
    free(x.cnt);
    assert_int_equal(ck_sink_take_committable(&sink, 11, &x), 0);
    for (int i = 0; i < CK_SNAP_MAX_PENDING; i++)
        assert_int_equal(ck_sink_precommit(&sink, 20 + (uint64_t)i), 0);
    assert_int_equal(ck_sink_precommit(&sink, 99), CK_ETOOBIG);
    while (ck_sink_take_committable(&sink, UINT64_MAX, &x))
        free(x.cnt);
    free(sink.open.cnt);
}

/* A transaction counts its records' ingest times per ~1 ms bucket, in
 * whatever order they come; at commit each bucket's records get the latency
 * from the bucket's middle. */
static void test_sink_latency_buckets(void **state)
{
    (void)state;
    ck_op sink;
    memset(&sink, 0, sizeof(sink));
    sink.two_phase = 1;
    sink.txn = 1;
    const int64_t B = (int64_t)1 << CK_TXN_SHIFT;
    int64_t ing[5] = {10 * B + 1, 10 * B + 2, 12 * B, 7 * B + 5, 12 * B + 9};
    assert_int_equal(ck_sink_txn_add(&sink, ing, 3), 0);
    assert_int_equal(ck_sink_txn_add(&sink, ing + 3, 2), 0); /* an older one: grows in front */
    assert_true(sink.open.n == 5 && sink.open.base == 7 && sink.open.nb == 6);
    assert_true(sink.open.cnt[0] == 1 && sink.open.cnt[3] == 2 && sink.open.cnt[5] == 2);
    assert_true(sink.open.cnt[1] == 0 && sink.open.cnt[2] == 0 && sink.open.cnt[4] == 0);
    assert_int_equal(ck_sink_precommit(&sink, 1), 0);
    ck_txn x;
    assert_int_equal(ck_sink_take_committable(&sink, 1, &x), 1);
    ck_metrics m;
    ck_metrics_init(&m);
    ck_time commit = 100 * B;
    assert_int_equal(ck_metrics_out_buckets(&m, commit, x.base, x.cnt, x.nb, CK_TXN_SHIFT), 0);
    const ck_sec *sec = &m.sec[0];
    assert_true(sec->out == 5 && sec->lat->n == 5);
    assert_true(sec->lat->max == commit - 7 * B - B / 2); /* the oldest bucket's middle */
    ck_metrics_free(&m);
    free(x.cnt);
}

/* ---- the changelog's materializations ----------------------------------------- */

/* A store that takes every put and answers when the test says. */
static struct {
    int puts, deletes;
    uint64_t mat_token;  /* the last materialization upload's, or 0 */
    char mat_key[256];   /* and its key */
    char deleted[256];   /* the last key deleted */
} mat_store;

static int mat_put(ck_platform *p, const char *key, uint8_t *data, size_t len, uint64_t token)
{
    (void)p, (void)key, (void)len;
    free(data);
    mat_store.puts++;
    if (token & (UINT64_C(1) << 62)) { /* a materialization's (task_impl.h's CLOG_MAT) */
        mat_store.mat_token = token;
        snprintf(mat_store.mat_key, sizeof(mat_store.mat_key), "%s", key);
    }
    return 0;
}

static int mat_delete(ck_platform *p, const char *key)
{
    (void)p;
    mat_store.deletes++;
    snprintf(mat_store.deleted, sizeof(mat_store.deleted), "%s", key);
    return 0;
}

/* Runs the task's deadlines until a materialization's upload starts or
 * the time until passes; returns its token, or 0. */
static uint64_t next_materialization(ck_node n, fake_world *w, ck_time until)
{
    mat_store.mat_token = 0;
    while (!mat_store.mat_token && !n.ops->finished(n.self)) {
        ck_time d = n.ops->deadline(n.self);
        if (d > until)
            break;
        w->now = d > w->now ? d : w->now;
        assert_int_equal(n.ops->on_deadline(n.self), 0);
        fake_clear(w);
    }
    return mat_store.mat_token;
}

/*
 * state.changelog.max-failures-allowed (Flink's PeriodicMaterialization-
 * Manager): a materialization whose upload fails is dropped (its file
 * deleted) and the next is taken at the next interval; the task fails
 * only once more than the allowed number failed in a row, a success
 * starting the count again. A failed one that would have replaced the
 * last good one with the same file (no change since) leaves that file.
 * A negative interval, or periodic materialization turned off, takes
 * none.
 */
static void test_materialization_failures(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    ck_config_defaults(&cfg);
    cfg.v[CK_CFG_CLOG_ENABLED] = 1;
    cfg.v[CK_CFG_CLOG_MATERIALIZE] = 100 * CK_NS_PER_MS;
    cfg.v[CK_CFG_CLOG_MAX_FAILURES] = 2;
    test_graph_keyed(&g, &cfg, 1);
    static ck_platform_ops ops;
    ops = fake_ops;
    ops.store_put = mat_put;
    ops.store_delete = mat_delete;
    for (int variant = 0; variant < 3; variant++) {
        if (variant == 1)
            cfg.v[CK_CFG_CLOG_MATERIALIZE] = -CK_NS_PER_MS;
        if (variant == 2) {
            cfg.v[CK_CFG_CLOG_MATERIALIZE] = 100 * CK_NS_PER_MS;
            cfg.v[CK_CFG_CLOG_MATERIALIZE_ENABLED] = 0;
        }
        ck_job_env env = {.g = &g, .cfg = &cfg, .job_id = "test-job"};
        fake_world w = {0};
        fake_plat fp;
        fake_init(&fp, &w, CK_EP_TASK0 + 1);
        fp.plat.ops = &ops;
        memset(&mat_store, 0, sizeof(mat_store));
        ck_task *t = ck_task_new(&env, &fp.plat, 1, 0, NULL); /* agg subtask 0 */
        assert_non_null(t);
        ck_node n = ck_task_node(t);
        n.ops->work(n.self);
        assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
        if (variant) { /* none in 10 s */
            assert_int_equal(next_materialization(n, &w, 10 * CK_NS_PER_S), 0);
            assert_int_equal(ck_task_get_state(t), CK_TASK_RUNNING);
        } else {
            /* fail, fail (2 allowed), succeed, fail, fail: running; fail: failed */
            static const int fails[] = {1, 1, 0, 1, 1, 1};
            char good[256] = "";
            for (int k = 0; k < 6; k++) {
                uint64_t tok = next_materialization(n, &w, w.now + CK_NS_PER_S);
                if (!tok)
                    fail_msg("materialization %d never started", k + 1);
                int deletes = mat_store.deletes;
                n.ops->on_complete(n.self, tok, fails[k] ? CK_EIO : CK_OK, NULL, 0);
                if (!fails[k])
                    snprintf(good, sizeof(good), "%s", mat_store.mat_key);
                else if (strcmp(mat_store.mat_key, good)) /* its own file: dropped */
                    assert_true(mat_store.deletes == deletes + 1 &&
                                !strcmp(mat_store.deleted, mat_store.mat_key));
                else /* the last good one's: kept, checkpoints refer to it */
                    assert_int_equal(mat_store.deletes, deletes);
                assert_int_equal(ck_task_get_state(t), k < 5 ? CK_TASK_RUNNING : CK_TASK_FAILED);
            }
        }
        ck_task_del(t);
        fake_clear(&w);
    }
}

/* ---- invariants (coordinator.h, sharedreg.h, jobmanager.h, taskmanager.h) ---------- */

/* A coordinator with a retired, a completed and a pending checkpoint, and
 * shared files, passes its check; each numbered invariant, broken by one
 * field, fails with its number. */
static void test_coordinator_invariants(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    const char *f1[] = {"a.sst"}, *f2[] = {"a.sst", "b.sst"};
    complete_with(&r, 1, f1, 1);
    complete_with(&r, 2, f2, 2); /* checkpoint 1 retired: num-retained 1 */
    advance(&r, r.w.now + 100 * CK_NS_PER_MS);
    ack(&r, 0, 3);
    ck_cc *cc = &r.cc;
    assert_int_equal(cc->ncps, 3);
    ck_cp_record *c1 = &cc->cps[0], *c2 = &cc->cps[1], *c3 = &cc->cps[2];
    assert_true(c1->retired && c2->status == CK_CP_COMPLETED && c3->status == CK_CP_PENDING);
    assert_int_equal(ck_sreg_count(&cc->shared, "checkpoints/job/shared/a.sst"), 1);
    assert_int_equal(ck_cc_check(cc, NULL), 0);

    INV_BREAK(cc->next_id, cc->next_id + 1, ck_cc_check(cc, &V), "coordinator", 1);
    INV_BREAK(c2->id, 7, ck_cc_check(cc, &V), "coordinator", 1);
    INV_BREAK(cc->npending, 2, ck_cc_check(cc, &V), "coordinator", 2);
    INV_BREAK(c3->nacks, 2, ck_cc_check(cc, &V), "coordinator", 3);
    INV_BREAK(c3->metadata_sent, 1, ck_cc_check(cc, &V), "coordinator", 3);
    INV_BREAK(c2->metadata_sent, 0, ck_cc_check(cc, &V), "coordinator", 4);
    INV_BREAK(c2->complete, c2->trigger - 1, ck_cc_check(cc, &V), "coordinator", 4);
    INV_BREAK(c2->retired, 1, ck_cc_check(cc, &V), "coordinator", 5);
    INV_BREAK(c1->retired, 0, ck_cc_check(cc, &V), "coordinator", 5);
    INV_BREAK(c2->tasks[1].handles.v[1].flags, 0, ck_cc_check(cc, &V), "coordinator", 6);
    INV_BREAK(cc->shared.n, cc->shared.n + 1, ck_cc_check(cc, &V), "coordinator", 6);
    /* One reference too many. */
    assert_int_equal(ck_sreg_ref(&cc->shared, "checkpoints/job/shared/a.sst"), 2);
    ck_inv v;
    inv_broken(ck_cc_check(cc, &v), &v, "coordinator", 6);
    assert_int_equal(ck_sreg_unref(&cc->shared, "checkpoints/job/shared/a.sst"), 1);
    assert_int_equal(ck_cc_check(cc, NULL), 0);
    INV_BREAK(cc->nfinished, 1, ck_cc_check(cc, &V), "coordinator", 7);
    INV_BREAK(cc->finished[2], 1, ck_cc_check(cc, &V), "coordinator", 7);
    INV_BREAK(cc->restoring, 1, ck_cc_check(cc, &V), "coordinator", 8);
    ck_cc_free(cc);
}

/* What a slot of the registry is (sharedreg.c): the test breaks slots. */
struct ck_sreg_slot {
    char *key;
    uint32_t count;
};

static void test_sharedreg_invariants(void **state)
{
    (void)state;
    ck_sreg reg = {0};
    const char *keys[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        assert_true(ck_sreg_ref(&reg, keys[i]) > 0);
    assert_int_equal(ck_sreg_ref(&reg, "a"), 2);
    assert_int_equal(ck_sreg_check(&reg, NULL), 0);
    uint32_t full = reg.cap, empty = reg.cap, alone = reg.cap;
    for (uint32_t i = 0; i < reg.cap; i++) {
        if (!reg.slots[i].key)
            empty = i;
        else
            full = i;
        if (reg.slots[i].key && !reg.slots[(i + 1) % reg.cap].key &&
            !reg.slots[(i + 2) % reg.cap].key)
            alone = i; /* the two slots after it are empty */
    }
    assert_true(full < reg.cap && empty < reg.cap && alone < reg.cap);
    INV_BREAK(reg.slots[full].count, 0, ck_sreg_check(&reg, &V), "sharedreg", 1);
    INV_BREAK(reg.slots[empty].count, 3, ck_sreg_check(&reg, &V), "sharedreg", 1);
    INV_BREAK(reg.n, reg.n + 1, ck_sreg_check(&reg, &V), "sharedreg", 2);
    INV_BREAK(reg.cap, 8, ck_sreg_check(&reg, &V), "sharedreg", 2);
    /* An entry moved past an empty slot: its probe would stop before it. */
    uint32_t to = (alone + 2) % reg.cap;
    reg.slots[to] = reg.slots[alone];
    reg.slots[alone] = (struct ck_sreg_slot){NULL, 0};
    ck_inv v;
    inv_broken(ck_sreg_check(&reg, &v), &v, "sharedreg", 3);
    reg.slots[alone] = reg.slots[to];
    reg.slots[to] = (struct ck_sreg_slot){NULL, 0};
    assert_int_equal(ck_sreg_check(&reg, NULL), 0);
    ck_sreg_free(&reg);
}

static void test_jm_tm_invariants(void **state)
{
    (void)state;
    static cc_rig r;
    cc_setup(&r, 100, 0, 1);
    ck_cc_free(&r.cc);
    ck_job_env env = {.g = &r.g, .cfg = &r.cfg, .job_id = "job"};
    static ck_jm jm;
    assert_int_equal(ck_jm_init(&jm, &r.jp.plat, &env, 2, 1), 0);
    assert_int_equal(ck_jm_check(&jm, NULL), 0);
    jm_heartbeat(&jm, 0);
    jm_heartbeat(&jm, 1);
    assert_int_equal(jm.state, CK_JOB_RUNNING);
    assert_int_equal(ck_jm_check(&jm, NULL), 0);
    ck_recovery rec = {.failed = CK_TIME_NEVER, .detected = 10, .restarted = 20,
                       .restored = 30, .first_output = CK_TIME_NEVER, .caught_up = 40};
    jm.recoveries = &rec;
    jm.nrecoveries = 1;
    assert_int_equal(ck_jm_check(&jm, NULL), 0);
    INV_BREAK(rec.restored, 15, ck_jm_check(&jm, &V), "jobmanager", 3);
    INV_BREAK(rec.restarted, CK_TIME_NEVER, ck_jm_check(&jm, &V), "jobmanager", 3);
    INV_BREAK(rec.failed, 11, ck_jm_check(&jm, &V), "jobmanager", 3);
    jm.recoveries = NULL;
    jm.nrecoveries = 0;
    INV_BREAK(jm.sub_attempt[1], 1, ck_jm_check(&jm, &V), "jobmanager", 4);
    INV_BREAK(jm.cc.attempts[1], 1, ck_jm_check(&jm, &V), "jobmanager", 4);
    INV_BREAK(jm.nfinished, 1, ck_jm_check(&jm, &V), "jobmanager", 5);
    INV_BREAK(jm.restarting[0], 1, ck_jm_check(&jm, &V), "jobmanager", 5);
    INV_BREAK(jm.state, CK_JOB_FINISHED, ck_jm_check(&jm, &V), "jobmanager", 5);
    INV_BREAK(jm.cc.ended[2], 1, ck_jm_check(&jm, &V), "jobmanager", 6);
    INV_BREAK(jm.cc.npending, 1, ck_jm_check(&jm, &V), "coordinator", 2);
    ck_jm_free(&jm);

    ck_segpool pool;
    ck_segpool_init(&pool, 1024, 8);
    fake_plat tp;
    fake_init(&tp, &r.w, CK_EP_TM0 + 1);
    tp.plat.netpool = &pool;
    ck_tm tm;
    ck_tm_init(&tm, &tp.plat, &r.g, &r.cfg, 1, 2);
    assert_int_equal(ck_tm_check(&tm, NULL), 0);
    INV_BREAK(tm.connected, 1, ck_tm_check(&tm, &V), "taskmanager", 1);
    ck_node n = ck_tm_node(&tm);
    n.ops->work(n.self); /* registers */
    assert_int_equal(ck_tm_check(&tm, NULL), 0);
    INV_BREAK(tm.next_hb, CK_TIME_NEVER, ck_tm_check(&tm, &V), "taskmanager", 1);
    INV_BREAK(tm.cancelled, 3, ck_tm_check(&tm, &V), "taskmanager", 2);
    INV_BREAK(pool.reserved, 9, ck_tm_check(&tm, &V), "segpool", 1);
    fake_clear(&r.w);
    ck_segpool_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exactly_once_blocks),
        cmocka_unit_test(test_at_least_once_does_not_block),
        cmocka_unit_test(test_newer_barrier_abandons),
        cmocka_unit_test(test_ending_channel_completes_alignment),
        cmocka_unit_test(test_cancel_marker_ends_alignment),
        cmocka_unit_test(test_unaligned_channel_state),
        cmocka_unit_test(test_channel_state_whole_elements),
        cmocka_unit_test(test_restored_gate_credit_after_state),
        cmocka_unit_test(test_aligned_timeout),
        cmocka_unit_test(test_graph_generations),
        cmocka_unit_test(test_pipelined_regions),
        cmocka_unit_test(test_coordinator_lifecycle),
        cmocka_unit_test(test_coordinator_overtaken_metadata),
        cmocka_unit_test(test_coordinator_reuse_of_discarded),
        cmocka_unit_test(test_edge_channels),
        cmocka_unit_test(test_coordinator_region_restart),
        cmocka_unit_test(test_coordinator_failures),
        cmocka_unit_test(test_coordinator_min_pause_and_finish),
        cmocka_unit_test(test_coordinator_savepoints),
        cmocka_unit_test(test_coordinator_savepoint_failures),
        cmocka_unit_test(test_coordinator_after_tasks_finish),
        cmocka_unit_test(test_coordinator_finished_inline),
        cmocka_unit_test(test_coordinator_final),
        cmocka_unit_test(test_coordinator_final_during_region_restart),
        cmocka_unit_test(test_coordinator_restart_aborts_pending),
        cmocka_unit_test(test_jm_startup_waits_for_the_cluster),
        cmocka_unit_test(test_jm_metrics_vertex_from_graph),
        cmocka_unit_test(test_jm_caught_up_from_the_new_attempt),
        cmocka_unit_test(test_jm_heartbeat_rpc_failures_and_registration),
        cmocka_unit_test(test_jm_counts_cancelled_attempts),
        cmocka_unit_test(test_jm_records_fallbacks),
        cmocka_unit_test(test_jm_stop_with_savepoint_failures),
        cmocka_unit_test(test_jm_final_checkpoint_at_a_region_failover),
        cmocka_unit_test(test_jm_failure_merges_into_pending_restart),
        cmocka_unit_test(test_metadata_roundtrip_and_bad_keys),
        cmocka_unit_test(test_metadata_opcounts),
        cmocka_unit_test(test_restored_state_key_group_filter),
        cmocka_unit_test(test_shared_registry),
        cmocka_unit_test(test_coordinator_appendable_files),
        cmocka_unit_test(test_coordinator_invariants),
        cmocka_unit_test(test_sharedreg_invariants),
        cmocka_unit_test(test_jm_tm_invariants),
        cmocka_unit_test(test_sink_transactions),
        cmocka_unit_test(test_sink_latency_buckets),
        cmocka_unit_test(test_materialization_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
