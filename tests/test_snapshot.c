/*
 * test_snapshot.c - snapshot files: a subtask's keyed state and timers,
 * captured copy-on-write while processing goes on, encoded, decoded and
 * restored into a fresh subtask give the same results; truncated and
 * damaged files are caught by the checksum, and well-checksummed garbage
 * by the parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bytes.h"
#include "crc32c.h"
#include "element.h"
#include "error.h"
#include "keygroup.h"
#include "operator.h"
#include "rng.h"
#include "snapshot.h"

/* source(1) => win(2) -> out(2); the test plays window subtask 1. */
static void build(ck_graph *g, ck_config *cfg)
{
    ck_config_defaults(cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "win", .kind = CK_OP_WINDOW, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_HASH, .agg_fn = CK_AGG_SUM, .window_ms = 100};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, cfg, &bad, err, sizeof(err)), 0);
}

/* Feeds records of this subtask's keys; returns how many went in. */
static int feed(ck_chain *c, ck_rng *r, int n, int64_t t0)
{
    int fed = 0;
    const ck_op *win = &c->ops[0];
    for (int i = 0; i < n; i++) {
        char key[40];
        int k = (int)ck_rng_below(r, 500);
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), k % 5 ? "k%d" : "a-long-key-beyond-inline-%d", k);
        int kg = ck_kg_of_key(key, klen, win->spec->max_parallelism);
        if (kg < win->kgr.start || kg > win->kgr.end)
            continue;
        ck_rec rec = {.ts = t0 + (int64_t)ck_rng_below(r, 300), .value = 1 + (int64_t)ck_rng_below(r, 9),
                      .key = key, .klen = klen};
        assert_int_equal(ck_chain_record(c, &rec), 0);
        fed++;
    }
    return fed;
}

/* Fires everything and returns the staged output (caller frees). */
static uint8_t *fire_all(ck_chain *c, size_t *len)
{
    assert_int_equal(ck_chain_watermark(c, CK_WM_MAX), 0);
    ck_op *sink = &c->ops[c->nops - 1];
    uint8_t *out = malloc(sink->out_len + 1);
    memcpy(out, sink->out, sink->out_len);
    *len = sink->out_len;
    ck_op_clear_output(sink);
    return out;
}

static void test_capture_encode_restore(void **state)
{
    (void)state;
    static ck_graph g;
    ck_config cfg;
    build(&g, &cfg);
    ck_chain a, b, ref;
    assert_int_equal(ck_chain_init(&a, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_init(&ref, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    ck_rng r1, r2;
    ck_rng_init(&r1, 9, 9);
    ck_rng_init(&r2, 9, 9);
    feed(&a, &r1, 5000, 0);
    feed(&ref, &r2, 5000, 0);
    assert_true(ck_chain_state_entries(&a) > 100);
    ck_capture cap = {.checkpoint_id = 7, .vertex = 1, .subtask = 1, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&a, &cap, 0), 0);
    /* Processing goes on after the capture: the capture must not see it. */
    feed(&a, &r1, 5000, 200);
    assert_int_equal(ck_chain_watermark(&a, 250), 0);
    uint8_t *file;
    size_t len;
    assert_int_equal(ck_snap_encode(&cap, &file, &len), 0);
    ck_capture_free(&cap);

    ck_snapshot s;
    const char *why;
    assert_int_equal(ck_snap_decode(file, len, &s, &why), 0);
    assert_true(s.checkpoint_id == 7);
    assert_int_equal(s.nkeyed, 1);
    assert_int_equal(ck_chain_init(&b, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_restore(&b, &s), 0);
    ck_snapshot_free(&s);
    /* The restored subtask and the reference (which never stopped at the
     * snapshot) give the same results for the same input from there on. */
    ck_rng r3 = r2;
    feed(&b, &r2, 5000, 200);
    feed(&ref, &r3, 5000, 200);
    size_t lb, lr;
    uint8_t *ob = fire_all(&b, &lb), *orf = fire_all(&ref, &lr);
    assert_true(lb > 0);
    assert_int_equal(lb, lr);
    assert_memory_equal(ob, orf, lb);
    free(ob);
    free(orf);

    /* Damage: every truncation, and random bit flips, fail the checksum. */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 5)
        assert_int_equal(ck_snap_decode(file, cut, &s, &why), CK_ECHECKSUM);
    ck_rng rr;
    ck_rng_init(&rr, 3, 3);
    for (int i = 0; i < 500; i++) {
        size_t at = (size_t)ck_rng_below(&rr, len);
        file[at] ^= (uint8_t)(1u << ck_rng_below(&rr, 8));
        assert_int_equal(ck_snap_decode(file, len, &s, &why), CK_ECHECKSUM);
        file[at] ^= (uint8_t)(1u << ck_rng_below(&rr, 8)); /* may or may not undo it */
        if (ck_snap_decode(file, len, &s, &why) == 0)
            ck_snapshot_free(&s);
    }
    free(file);
    ck_chain_free(&a);
    ck_chain_free(&b);
    ck_chain_free(&ref);
}

/* source(1) => mid(2) -> out(2), mid a keyed operator of kind `kind`
 * with function fn; the tests play subtask 1 of mid. */
static void build_keyed(ck_graph *g, ck_op_kind kind, ck_agg_fn fn)
{
    ck_config cfg;
    ck_config_defaults(&cfg);
    ck_job_spec spec = {.nops = 3};
    spec.ops[0] = (ck_op_spec){.name = "src", .kind = CK_OP_SOURCE, .parallelism = 1, .input = -1};
    spec.ops[1] = (ck_op_spec){.name = "mid", .kind = kind, .parallelism = 2, .input = 0,
                               .ship = CK_SHIP_HASH, .agg_fn = fn, .window_ms = 100};
    spec.ops[2] = (ck_op_spec){.name = "out", .kind = CK_OP_SINK, .parallelism = 2, .input = 1};
    int bad;
    char err[200];
    assert_int_equal(ck_graph_build(g, &spec, &cfg, &bad, err, sizeof(err)), 0);
}

/* Encodes capture cap (then freed) into *file (the caller's) and decodes
 * it into *s. */
static void encode_decode(ck_capture *cap, uint8_t **file, size_t *len, ck_snapshot *s)
{
    assert_int_equal(ck_snap_encode(cap, file, len), 0);
    ck_capture_free(cap);
    const char *why;
    assert_int_equal(ck_snap_decode(*file, *len, s, &why), 0);
}

/* source(1) => distinct(2) -> out(2): map state through the backend
 * interface. Values repeat per key, so most records are dropped; the
 * restored subtask must drop what the snapshot had seen. */
static void test_map_state_distinct(void **state)
{
    (void)state;
    static ck_graph g;
    build_keyed(&g, CK_OP_DISTINCT, CK_AGG_COUNT);
    ck_chain a, b, ref;
    assert_int_equal(ck_chain_init(&a, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_init(&ref, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    ck_rng r1, r2;
    ck_rng_init(&r1, 5, 5);
    ck_rng_init(&r2, 5, 5);
    int fed = feed(&a, &r1, 4000, 0); /* values 1..9 per key: at most 9 pairs a key */
    feed(&ref, &r2, 4000, 0);
    uint64_t pairs = ck_chain_state_entries(&a);
    ck_op *sink = &a.ops[a.nops - 1];
    /* What passed is one record per (key, value) pair seen. */
    size_t out_records = 0;
    for (size_t pos = 0; pos < sink->out_len;) {
        ck_elem e;
        size_t n = (size_t)ck_get_u32(sink->out + pos) + 4;
        assert_int_equal(ck_elem_decode(sink->out + pos, n, &e), 0);
        pos += n;
        out_records++;
    }
    assert_true(pairs > 100 && pairs < (uint64_t)fed);
    assert_int_equal(out_records, pairs);
    ck_op_clear_output(sink);
    ck_op_clear_output(&ref.ops[ref.nops - 1]);

    ck_capture cap = {.checkpoint_id = 3, .vertex = 1, .subtask = 1, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&a, &cap, 0), 0);
    feed(&a, &r1, 4000, 0); /* after the capture (copy-on-write): not in it */
    uint8_t *file;
    size_t len;
    ck_snapshot s;
    encode_decode(&cap, &file, &len, &s);
    assert_int_equal(s.nkeyed, 1);
    const ck_snap_keyed *k = &s.keyed[0];
    assert_int_equal(k->kind, CK_OP_DISTINCT);
    assert_int_equal(k->nstates, 1);
    assert_int_equal(k->states[0].kind, CK_STATE_MAP);
    assert_int_equal(k->states[0].name_len, 4);
    assert_memory_equal(k->states[0].name, "seen", 4);
    assert_int_equal(k->nentries, pairs);
    uint64_t total = 0;
    for (size_t e = 0; e < k->nentries; e++) {
        const ck_snap_entry *en = &k->entries[e];
        assert_int_equal(en->uklen, 8);
        int64_t v = (int64_t)ck_get_u64(en->ukey);
        assert_true(v >= 1 && v <= 9);
        /* Values are little-endian in the file whatever the machine: a
         * count below 256 is its first byte, the rest zero. */
        assert_true(en->value[0] >= 1);
        for (int i = 1; i < 8; i++)
            assert_int_equal(en->value[i], 0);
        total += en->value[0];
    }
    assert_int_equal(total, (uint64_t)fed); /* every record counted once */

    assert_int_equal(ck_chain_init(&b, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_restore(&b, &s), 0);
    ck_snapshot_free(&s);
    assert_int_equal(ck_chain_state_entries(&b), pairs);
    /* From here the restored subtask passes exactly what the reference does. */
    ck_rng r3 = r2;
    feed(&b, &r2, 4000, 0);
    feed(&ref, &r3, 4000, 0);
    ck_op *sb = &b.ops[b.nops - 1], *sr = &ref.ops[ref.nops - 1];
    assert_int_equal(sb->out_len, sr->out_len);
    assert_memory_equal(sb->out, sr->out, sb->out_len);
    free(file);
    ck_chain_free(&a);
    ck_chain_free(&b);
    ck_chain_free(&ref);
}

/* source(1) => median window(2) -> out(2): list state (every value of a
 * window) beside value state, captured while processing goes on, restored,
 * and fired with the same results as a subtask that never stopped. */
static void test_list_state_median(void **state)
{
    (void)state;
    static ck_graph g;
    build_keyed(&g, CK_OP_WINDOW, CK_AGG_MEDIAN);
    ck_chain a, b, ref;
    assert_int_equal(ck_chain_init(&a, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_init(&ref, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    ck_rng r1, r2;
    ck_rng_init(&r1, 11, 11);
    ck_rng_init(&r2, 11, 11);
    int fed = feed(&a, &r1, 3000, 0);
    feed(&ref, &r2, 3000, 0);
    ck_capture cap = {.checkpoint_id = 4, .vertex = 1, .subtask = 1, .parallelism = 2};
    assert_int_equal(ck_chain_capture(&a, &cap, 0), 0);
    feed(&a, &r1, 3000, 200); /* after the capture (copy-on-write): not in it */
    assert_int_equal(ck_chain_watermark(&a, 250), 0); /* fires, removing lists */
    uint8_t *file;
    size_t len;
    ck_snapshot s;
    encode_decode(&cap, &file, &len, &s);
    const ck_snap_keyed *k = &s.keyed[0];
    assert_int_equal(k->nstates, 2);
    assert_int_equal(k->states[1].kind, CK_STATE_LIST);
    assert_memory_equal(k->states[1].name, "elements", 8);
    uint64_t values = 0, lists = 0;
    for (size_t e = 0; e < k->nentries; e++)
        if (k->entries[e].st == 1) {
            lists++;
            values += k->entries[e].count;
            for (uint32_t i = 0; i < k->entries[e].count; i++) {
                int64_t v = (int64_t)ck_get_u64(k->entries[e].value + 8 * i);
                assert_true(v >= 1 && v <= 9); /* feed's values, little-endian */
            }
        }
    assert_true(lists > 50);
    assert_int_equal(values, (uint64_t)fed); /* every value kept, once */
    assert_int_equal(ck_chain_init(&b, &g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    assert_int_equal(ck_chain_restore(&b, &s), 0);
    ck_snapshot_free(&s);
    ck_rng r3 = r2;
    feed(&b, &r2, 3000, 200);
    feed(&ref, &r3, 3000, 200);
    size_t lb, lr;
    uint8_t *ob = fire_all(&b, &lb), *orf = fire_all(&ref, &lr);
    assert_true(lb > 0);
    assert_int_equal(lb, lr);
    assert_memory_equal(ob, orf, lb);
    /* Everything fired: the lists are gone with their windows. */
    assert_int_equal(ck_chain_state_entries(&b), 0);
    free(ob);
    free(orf);
    free(file);
    ck_chain_free(&a);
    ck_chain_free(&b);
    ck_chain_free(&ref);
}

/* CRC-32C: the published check value, and the CPU's instruction against
 * the table at every alignment and length, chained or in one go. */
static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(ck_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(ck_crc32c_portable(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(ck_crc32c(0, "", 0), 0);
    uint8_t buf[300];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof(buf); len += 7) {
            uint32_t want = ck_crc32c_portable(0, buf + off, len);
            assert_int_equal(ck_crc32c(0, buf + off, len), want);
            size_t cut = len / 3;
            assert_int_equal(ck_crc32c(ck_crc32c(0, buf + off, cut), buf + off + cut, len - cut),
                             want);
        }
    uint32_t a = ck_crc32c(0, buf, sizeof(buf));
    buf[150] ^= 4; /* one bit changes it */
    assert_int_not_equal(ck_crc32c(0, buf, sizeof(buf)), a);
}

static void test_checksummed_garbage(void **state)
{
    (void)state;
    ck_rng r;
    ck_rng_init(&r, 4, 4);
    uint8_t buf[600];
    for (int i = 0; i < 3000; i++) {
        size_t n = 36 + (size_t)ck_rng_below(&r, sizeof(buf) - 40);
        for (size_t k = 0; k < n - 4; k++)
            buf[k] = (uint8_t)ck_rng_next(&r);
        if (i % 2) { /* a plausible header */
            ck_put_u32(buf, CK_SNAP_MAGIC);
            ck_put_u32(buf + 4, CK_SNAP_VERSION);
            ck_put_u64(buf + 28, (uint64_t)ck_rng_below(&r, (uint32_t)n + 8));
            ck_put_u64(buf + 36, i % 4 == 1 ? n : (uint64_t)ck_rng_below(&r, (uint32_t)n + 8));
            ck_put_u32(buf + 44, (uint32_t)ck_rng_below(&r, 4));
        }
        ck_put_u32(buf + n - 4, ck_crc32c(0, buf, n - 4));
        ck_snapshot s;
        const char *why;
        int rc = ck_snap_decode(buf, n, &s, &why);
        assert_true(rc == 0 || rc == CK_ECORRUPT);
        if (rc == 0)
            ck_snapshot_free(&s);
        else
            assert_true(why[0] != 0);
    }
}

/* A finished subtask's file (FLIP-147): nothing but its FINISHED section,
 * which stands alone; a file that adds another section is refused. */
static void test_finished_marker(void **state)
{
    (void)state;
    ck_capture c;
    memset(&c, 0, sizeof(c));
    c.checkpoint_id = 9;
    c.vertex = 1;
    c.subtask = 2;
    c.parallelism = 4;
    c.finished = 1;
    uint8_t *p;
    size_t len;
    assert_int_equal(ck_snap_encode(&c, &p, &len), 0);
    ck_snapshot s;
    const char *why;
    assert_int_equal(ck_snap_decode(p, len, &s, &why), 0);
    assert_true(s.finished && s.checkpoint_id == 9 && s.vertex == 1 && s.subtask == 2);
    assert_true(s.nkeyed == 0 && s.nsinks == 0 && !s.has_source);
    ck_snapshot_free(&s);
    /* Two sections, the second a FINISHED one: refused. */
    uint8_t two[128];
    assert_int_equal(len, 88); /* 48 header, 16 section, 16 index, 4 + 4 CRCs */
    memcpy(two, p, 64);
    memcpy(two + 64, p + 48, 16); /* the section again */
    memcpy(two + 80, p + 64, 20);
    ck_put_u32(two + 44, 2);
    ck_put_u64(two + 28, 84 + 16);
    ck_put_u64(two + 36, len + 16);
    ck_put_u64(two + 88, 84 + 16); /* the blocks' start */
    size_t n2 = len - 4 + 16;
    ck_put_u32(two + n2, ck_crc32c(0, two, n2));
    assert_int_equal(ck_snap_decode(two, n2 + 4, &s, &why), CK_ECORRUPT);
    assert_string_equal(why, "unknown or repeated section");
    free(p);
}

/* Channel state (unaligned checkpoints): kept byte for byte with its
 * direction, edge and peer; a file whose channel state claims more bytes
 * than it holds, or a direction that is neither, is refused by its checks,
 * not read past its end. */
static void test_channel_state(void **state)
{
    (void)state;
    ck_capture c;
    memset(&c, 0, sizeof(c));
    c.checkpoint_id = 5;
    c.parallelism = 2;
    c.nchans = 2;
    c.chans = calloc(2, sizeof(*c.chans));
    const char *in = "input bytes", *out = "output channel bytes";
    c.chans[0] = (ck_chan_state){0, 3, 1, (uint8_t *)strdup(in), strlen(in)};
    c.chans[1] = (ck_chan_state){1, 4, 0, (uint8_t *)strdup(out), strlen(out)};
    uint8_t *p;
    size_t len;
    assert_int_equal(ck_snap_encode(&c, &p, &len), 0);
    ck_capture_free(&c);
    ck_snapshot s;
    const char *why;
    assert_int_equal(ck_snap_decode(p, len, &s, &why), 0);
    assert_int_equal(s.nchans, 2);
    assert_true(s.chans[0].out == 0 && s.chans[0].edge == 3 && s.chans[0].peer == 1);
    assert_int_equal(s.chans[0].len, strlen(in));
    assert_memory_equal(s.chans[0].data, in, strlen(in));
    assert_true(s.chans[1].out == 1 && s.chans[1].edge == 4 && s.chans[1].peer == 0);
    assert_memory_equal(s.chans[1].data, out, strlen(out));
    ck_snapshot_free(&s);
    /* The section: type, op, u64 length at 48; count at 64; the first
     * channel's direction|edge at 68, peer at 72, length at 76. */
    uint8_t *bad = malloc(len);
    memcpy(bad, p, len);
    ck_put_u64(bad + 76, 1u << 20); /* more than the file holds */
    ck_put_u32(bad + len - 4, ck_crc32c(0, bad, len - 4));
    assert_int_equal(ck_snap_decode(bad, len, &s, &why), CK_ECORRUPT);
    assert_string_equal(why, "bad channel state");
    memcpy(bad, p, len);
    ck_put_u32(bad + 68, 2u << 16 | 3); /* a direction that is neither */
    ck_put_u32(bad + len - 4, ck_crc32c(0, bad, len - 4));
    assert_int_equal(ck_snap_decode(bad, len, &s, &why), CK_ECORRUPT);
    free(bad);
    free(p);
}

/* ---- operator state ------------------------------------------------------ */

/* A capture with a source's partitions and an operator's three lists, one
 * of each of Flink's modes (one entry empty). */
static void opstate_capture(ck_capture *c)
{
    memset(c, 0, sizeof(*c));
    c->checkpoint_id = 11;
    c->vertex = 0;
    c->subtask = 1;
    c->parallelism = 2;
    c->has_source = 1;
    ck_source_capture *sc = &c->source;
    sc->op = 0;
    sc->known = 8;
    sc->nparts = 3;
    sc->parts = malloc(3 * sizeof(int));
    sc->offsets = malloc(3 * sizeof(int64_t));
    sc->maxts = malloc(3 * sizeof(int64_t));
    for (int i = 0; i < 3; i++) {
        sc->parts[i] = 1 + 2 * i;
        sc->offsets[i] = 100 * i + 7;
        sc->maxts[i] = i == 0 ? CK_WM_MIN : 5000 + i;
    }
    ck_opstate *o = ck_capture_opstate(c, 3);
    assert_non_null(o);
    ck_oplist *sp = ck_opstate_add_list(o, "held", CK_OPSTATE_SPLIT);
    ck_oplist *un = ck_opstate_add_list(o, "counts", CK_OPSTATE_UNION);
    ck_oplist *bc = ck_opstate_add_list(o, "rules", CK_OPSTATE_BROADCAST);
    assert_int_equal(ck_oplist_add(sp, "first", 5), 0);
    assert_int_equal(ck_oplist_add(sp, "", 0), 0);
    assert_int_equal(ck_oplist_add(sp, "third entry", 11), 0);
    assert_int_equal(ck_oplist_add(un, "u", 1), 0);
    assert_int_equal(ck_oplist_add(bc, "rule-1", 6), 0);
    assert_ptr_equal(ck_capture_opstate(c, 3), o);
}

static void test_opstate_round_trip(void **state)
{
    (void)state;
    ck_capture c;
    opstate_capture(&c);
    uint8_t *p;
    size_t len;
    ck_snapshot s;
    encode_decode(&c, &p, &len, &s);
    assert_true(s.has_source);
    assert_int_equal(s.source.op, 0);
    assert_int_equal(s.source.known, 8);
    assert_int_equal(s.source.nparts, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s.source.parts[i], 1 + 2 * i);
        assert_int_equal(s.source.offsets[i], 100 * i + 7);
        assert_true(s.source.maxts[i] == (i == 0 ? CK_WM_MIN : 5000 + i));
    }
    /* The source's partitions are split-distribute list state like any other. */
    assert_int_equal(s.nopstates, 2);
    const ck_opstate *so = ck_snap_opstate(&s, 0);
    assert_non_null(so);
    const ck_oplist *splits = ck_opstate_list(so, CK_SOURCE_SPLITS);
    assert_non_null(splits);
    assert_int_equal(splits->mode, CK_OPSTATE_SPLIT);
    assert_int_equal(splits->n, 3);
    assert_int_equal(ck_opstate_list(so, CK_SOURCE_KNOWN)->mode, CK_OPSTATE_BROADCAST);
    const ck_opstate *o = ck_snap_opstate(&s, 3);
    assert_non_null(o);
    assert_int_equal(o->nlists, 3);
    const ck_oplist *sp = ck_opstate_list(o, "held");
    assert_int_equal(sp->mode, CK_OPSTATE_SPLIT);
    assert_int_equal(sp->n, 3);
    static const char *const want[] = {"first", "", "third entry"};
    size_t pos = 0;
    const uint8_t *e;
    uint32_t elen;
    for (int i = 0; i < 3; i++) {
        assert_true(ck_oplist_next(sp, &pos, &e, &elen));
        assert_int_equal(elen, strlen(want[i]));
        assert_memory_equal(e, want[i], elen);
    }
    assert_false(ck_oplist_next(sp, &pos, &e, &elen));
    assert_int_equal(ck_opstate_list(o, "counts")->mode, CK_OPSTATE_UNION);
    assert_int_equal(ck_opstate_list(o, "rules")->mode, CK_OPSTATE_BROADCAST);
    assert_null(ck_opstate_list(o, "nope"));
    ck_snapshot_free(&s);

    /* Every truncation of the body, checksummed again, is refused by the
     * parser (never read past); so is every byte changed, or decodes. */
    const char *why;
    uint8_t *bad = malloc(len);
    for (size_t cut = 36; cut < len; cut++) {
        memcpy(bad, p, cut - 4);
        ck_put_u32(bad + cut - 4, ck_crc32c(0, bad, cut - 4));
        assert_int_equal(ck_snap_decode(bad, cut, &s, &why), CK_ECORRUPT);
        assert_true(why[0] != 0);
    }
    ck_rng r;
    ck_rng_init(&r, 5, 5);
    for (int i = 0; i < 4000; i++) {
        memcpy(bad, p, len);
        size_t at = 32 + (size_t)ck_rng_below(&r, len - 36); /* the sections */
        bad[at] ^= (uint8_t)(1u << ck_rng_below(&r, 8));
        ck_put_u32(bad + len - 4, ck_crc32c(0, bad, len - 4));
        int rc = ck_snap_decode(bad, len, &s, &why);
        assert_true(rc == 0 || rc == CK_ECORRUPT);
        if (rc == 0)
            ck_snapshot_free(&s);
        else
            assert_true(why[0] != 0);
    }
    /* Targeted: a mode that is none of the three; an entry longer than its
     * list. The second section (the operator's) starts after the source's. */
    size_t sec2 = 48 + 16 + (size_t)ck_get_u64(p + 56);
    assert_int_equal(ck_get_u32(p + sec2), CK_SEC_OPSTATE);
    assert_int_equal(ck_get_u32(p + sec2 + 4), 3);
    memcpy(bad, p, len);
    ck_put_u32(bad + sec2 + 20, 4); /* the first list's mode */
    ck_put_u32(bad + len - 4, ck_crc32c(0, bad, len - 4));
    assert_int_equal(ck_snap_decode(bad, len, &s, &why), CK_ECORRUPT);
    assert_string_equal(why, "bad operator state list header");
    memcpy(bad, p, len);
    /* list 1: mode 20, name length 24, "held" 28, entries 32, bytes 36, first entry 44 */
    ck_put_u32(bad + sec2 + 44, 6);
    ck_put_u32(bad + len - 4, ck_crc32c(0, bad, len - 4));
    assert_int_equal(ck_snap_decode(bad, len, &s, &why), CK_ECORRUPT);
    assert_string_equal(why, "an operator state entry runs past its list");
    free(bad);
    free(p);
}

/* A version 3 file (before operator state): its SOURCE section still
 * reads, with the enumerator's partitions unknown; operator state in a
 * version 3 file, a SOURCE section in a version 4 one, and version 2, do
 * not. */
static size_t v3_file(uint8_t *b, uint32_t version, uint32_t type)
{
    ck_put_u32(b, CK_SNAP_MAGIC);
    ck_put_u32(b + 4, version);
    ck_put_u64(b + 8, 6);
    ck_put_u32(b + 16, 0);
    ck_put_u32(b + 20, 1);
    ck_put_u32(b + 24, 2);
    ck_put_u32(b + 28, 1);
    ck_put_u32(b + 32, type);
    ck_put_u32(b + 36, 0);
    ck_put_u64(b + 40, 4 + 2 * 20);
    ck_put_u32(b + 48, 2);
    for (int i = 0; i < 2; i++) {
        ck_put_u32(b + 52 + 20 * i, (uint32_t)(3 - i));
        ck_put_u64(b + 56 + 20 * i, (uint64_t)(40 + i));
        ck_put_u64(b + 64 + 20 * i, (uint64_t)(900 + i));
    }
    ck_put_u32(b + 92, ck_crc32c(0, b, 92));
    return 96;
}

static void test_version3_read(void **state)
{
    (void)state;
    uint8_t b[128];
    ck_snapshot s;
    const char *why;
    size_t n = v3_file(b, 3, CK_SEC_SOURCE);
    assert_int_equal(ck_snap_decode(b, n, &s, &why), 0);
    assert_true(s.has_source && s.source.nparts == 2 && s.source.known == -1);
    assert_true(s.source.parts[0] == 3 && s.source.offsets[0] == 40 && s.source.maxts[1] == 901);
    assert_int_equal(s.nopstates, 0);
    ck_snapshot_free(&s);
    n = v3_file(b, 4, CK_SEC_SOURCE);
    assert_int_equal(ck_snap_decode(b, n, &s, &why), CK_ECORRUPT);
    n = v3_file(b, 3, CK_SEC_OPSTATE);
    assert_int_equal(ck_snap_decode(b, n, &s, &why), CK_ECORRUPT);
    n = v3_file(b, 2, CK_SEC_SOURCE);
    assert_int_equal(ck_snap_decode(b, n, &s, &why), CK_ECORRUPT);
}

/* A copy of the n bytes at p in a buffer of exactly n (a read past them
 * is the sanitizer's). */
static uint8_t *exact(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    memcpy(c, p, n);
    return c;
}

/* Whole decode's entries and timers of key groups [a, b] against a ranged
 * decode's: the same, in the same order. */
static void same_as_filtered(const ck_snapshot *all, const ck_snapshot *got, int a, int b)
{
    assert_int_equal(all->nkeyed, got->nkeyed);
    for (int i = 0; i < all->nkeyed; i++) {
        const ck_snap_keyed *x = &all->keyed[i], *y = &got->keyed[i];
        size_t n = 0, nt = 0;
        for (size_t e = 0; e < x->nentries; e++) {
            const ck_snap_entry *p = &x->entries[e];
            if (p->kg < a || p->kg > b)
                continue;
            assert_true(n < y->nentries);
            const ck_snap_entry *q = &y->entries[n++];
            assert_true(p->st == q->st && p->kg == q->kg && p->ns == q->ns &&
                        p->klen == q->klen && p->count == q->count && p->uklen == q->uklen);
            assert_memory_equal(p->key, q->key, p->klen);
            assert_memory_equal(p->value, q->value,
                                8 * (size_t)p->count * x->states[p->st].nfields);
        }
        assert_int_equal(n, y->nentries);
        for (size_t t = 0; t < x->ntimers; t++) {
            const ck_timer *p = &x->timers[t];
            if (p->kg < a || p->kg > b)
                continue;
            assert_true(nt < y->ntimers);
            const ck_timer *q = &y->timers[nt++];
            assert_true(p->ts == q->ts && p->kg == q->kg && p->ns == q->ns && p->klen == q->klen);
            assert_memory_equal(p->key, q->key, p->klen);
        }
        assert_int_equal(nt, y->ntimers);
    }
}

/* Subtask 1 of 2 of build()'s job as chain a, fed n random records (r
 * seeded seed, left to the caller), captured as checkpoint 3 into cap and
 * encoded: the file, its length and its decoding. */
static void fed_file(ck_graph *g, ck_chain *a, ck_rng *r, uint64_t seed, int n, ck_capture *cap,
                     uint8_t **file, size_t *len, ck_snapshot *all)
{
    ck_config cfg;
    build(g, &cfg);
    assert_int_equal(ck_chain_init(a, g, 1, 1, NULL, 0, NULL, NULL, 0), 0);
    ck_rng_init(r, seed, seed);
    feed(a, r, n, 0);
    *cap = (ck_capture){.checkpoint_id = 3, .vertex = 1, .subtask = 1, .parallelism = 2};
    assert_int_equal(ck_chain_capture(a, cap, 0), 0);
    encode_decode(cap, file, len, all);
}

/* A file read by key group (a restore that takes some of its key groups):
 * for random ranges [a, b], its head and the one range ck_snap_range
 * names, each in a buffer of exactly its bytes, decode to the whole
 * file's entries and timers of a .. b; the range is exactly their blocks;
 * a byte changed in it or in the head, or the range cut short, fails
 * the checksum. */
static void test_ranged_read(void **state)
{
    (void)state;
    static ck_graph g;
    ck_chain a;
    ck_rng r;
    ck_capture cap;
    uint8_t *file;
    size_t len;
    ck_snapshot all;
    fed_file(&g, &a, &r, 11, 5000, &cap, &file, &len, &all);
    ck_kgr kgr = a.ops[0].kgr;
    assert_true(all.keyed[0].nentries > 100 && all.keyed[0].ntimers > 10);
    assert_true(all.ix_first == kgr.start && all.ix_n == kgr.end - kgr.start + 1);
    uint64_t head;
    assert_int_equal(ck_snap_head_len(file, CK_SNAP_PREFIX, &head), 1);
    assert_true(head < len);
    const char *why;
    for (int i = 0; i < 400; i++) {
        int lo = kgr.start - 2 + (int)ck_rng_below(&r, (uint32_t)(kgr.end - kgr.start + 5));
        int hi = lo + (int)ck_rng_below(&r, (uint32_t)(kgr.end - lo + 3));
        lo = lo < 0 ? 0 : lo;
        uint8_t *h = exact(file, (size_t)head);
        ck_snapshot s;
        assert_int_equal(ck_snap_decode_head(h, (size_t)head, &s, &why), 0);
        uint64_t at, rl;
        ck_snap_range(&s, (ck_kgr){lo, hi}, &at, &rl);
        int a0 = lo > kgr.start ? lo : kgr.start, b0 = hi < kgr.end ? hi : kgr.end;
        if (a0 <= b0) { /* exactly the blocks of a0 .. b0 */
            assert_true(at == all.ix_off[a0 - kgr.start]);
            assert_true(at + rl == all.ix_off[b0 - kgr.start + 1]);
        } else {
            assert_true(rl == 0);
        }
        uint8_t *blk = exact(file + at, (size_t)rl);
        if (rl) { /* cut short by one byte: refused */
            assert_int_equal(ck_snap_decode_range(&s, (ck_kgr){lo, hi}, blk, (size_t)rl - 1, &why),
                             CK_ECHECKSUM);
            size_t d = (size_t)ck_rng_below(&r, (uint32_t)rl);
            blk[d] ^= (uint8_t)(1u << ck_rng_below(&r, 8));
            assert_int_equal(ck_snap_decode_range(&s, (ck_kgr){lo, hi}, blk, (size_t)rl, &why),
                             CK_ECHECKSUM);
            memcpy(blk, file + at, (size_t)rl);
        }
        assert_int_equal(ck_snap_decode_range(&s, (ck_kgr){lo, hi}, blk, (size_t)rl, &why), 0);
        same_as_filtered(&all, &s, lo, hi);
        ck_snapshot_free(&s);
        /* the head damaged, or cut short */
        size_t d = (size_t)ck_rng_below(&r, (uint32_t)head);
        h[d] ^= (uint8_t)(1u << ck_rng_below(&r, 8));
        int rc = ck_snap_decode_head(h, (size_t)head, &s, &why);
        assert_true(rc == CK_ECHECKSUM || rc == CK_ECORRUPT);
        assert_true(why[0] != 0);
        assert_int_equal(ck_snap_decode_head(file, (size_t)head - 1 - (size_t)i % 40, &s, &why),
                         CK_ECHECKSUM);
        free(h);
        free(blk);
    }
    ck_snapshot_free(&all);
    free(file);
    ck_chain_free(&a);
}

/* The head's parser against well-checksummed damage: every byte of the
 * head changed (its CRC made good again) decodes or is refused with a
 * reason, never read past; so is a block's (its CRC in the index made
 * good again), by the ranged decoder. */
static void test_ranged_fuzz(void **state)
{
    (void)state;
    static ck_graph g;
    ck_chain a;
    ck_rng r;
    ck_capture cap;
    uint8_t *file;
    size_t len;
    ck_snapshot all;
    fed_file(&g, &a, &r, 12, 800, &cap, &file, &len, &all);
    uint64_t head = all.head_len;
    const char *why;
    ck_snapshot s;
    for (size_t at = 0; at < head - 4; at++) {
        for (int bit = 0; bit < 8; bit += 3) {
            uint8_t *h = exact(file, (size_t)head);
            h[at] ^= (uint8_t)(1u << bit);
            ck_put_u32(h + head - 4, ck_crc32c(0, h, (size_t)head - 4));
            int rc = ck_snap_decode_head(h, (size_t)head, &s, &why);
            if (at >= 28 && at < 36) /* the head's own length: it no longer fits */
                assert_true(rc == CK_ECHECKSUM || rc == CK_ECORRUPT || rc == 0);
            else
                assert_true(rc == 0 || rc == CK_ECORRUPT);
            if (rc == 0)
                ck_snapshot_free(&s);
            else
                assert_true(why[0] != 0);
            free(h);
        }
    }
    /* blocks: a byte changed, the block's CRC in the index made good */
    for (int i = 0; i < 3000; i++) {
        int g0 = (int)ck_rng_below(&r, (uint32_t)all.ix_n);
        size_t b = (size_t)all.ix_off[g0], e = (size_t)all.ix_off[g0 + 1];
        if (b == e)
            continue;
        uint8_t *blk = exact(file + b, e - b);
        blk[ck_rng_below(&r, (uint32_t)(e - b))] ^= (uint8_t)(1u << ck_rng_below(&r, 8));
        assert_int_equal(ck_snap_decode_head(file, (size_t)head, &s, &why), 0);
        s.ix_crc[g0] = ck_crc32c(0, blk, e - b);
        ck_kgr one = {all.ix_first + g0, all.ix_first + g0};
        int rc = ck_snap_decode_range(&s, one, blk, e - b, &why);
        assert_true(rc == 0 || rc == CK_ECORRUPT);
        if (rc)
            assert_true(why[0] != 0);
        ck_snapshot_free(&s);
        free(blk);
    }
    ck_snapshot_free(&all);
    free(file);
    ck_chain_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_encode_restore),
        cmocka_unit_test(test_channel_state),
        cmocka_unit_test(test_map_state_distinct),
        cmocka_unit_test(test_list_state_median),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_ranged_read),
        cmocka_unit_test(test_ranged_fuzz),
        cmocka_unit_test(test_checksummed_garbage),
        cmocka_unit_test(test_finished_marker),
        cmocka_unit_test(test_opstate_round_trip),
        cmocka_unit_test(test_version3_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
