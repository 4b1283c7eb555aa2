/*
 * test_verify.c - the output check. The right output is written here by
 * hand from the generated input (not by the engine, not by the reference):
 * every input record goes to a pass-through sink as it is and to a running
 * count per key, and every (key, 100 ms window) to a window count. Then it
 * is damaged in every field and in known ways; the verdict must count
 * exactly that damage. Enough records that the comparison partitions them
 * (more than a partition's worth), and a workload with many records alike
 * but for their provenance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "runutil.h"

#include "element.h"
#include "error.h"
#include "operator.h"
#include "scenario.h"
#include "verify.h"

/* Operator indices: 0 source, 1 pass sink, 2 count, 3 count sink, 4 window,
 * 5 window sink. */
enum { PASS = 1, COUNTS = 3, WINDOWS = 5 };
#define WINDOW_MS 100

static const char *three_sinks =
    "{\"name\": \"v\", \"seed\": 5,\n"
    " \"workload\": {\"duration\": \"2 s\", \"rate\": %d, \"keys\": %d, \"partitions\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"pass\", \"type\": \"sink\"},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"src\"},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"win\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"count\",\n"
    "    \"input\": \"src\"},\n"
    "   {\"name\": \"windows\", \"type\": \"sink\"}]}}\n";

/* One output record, as a sink would write it. */
typedef struct orec {
    int sink;
    uint32_t key;
    int64_t ts, value;
    uint64_t prov;
} orec;

typedef struct fixture {
    ck_scenario sc;
    ck_workload w;
    int64_t n; /* output records */
    orec *out;
} fixture;

/* Provenance as element.h documents it, written out here. */
static uint64_t prov(int partition, int64_t offset)
{
    return (uint64_t)partition << 40 | (uint64_t)offset;
}

static void setup(fixture *f, int rate, int keys)
{
    char text[2048], err[1200];
    snprintf(text, sizeof(text), three_sinks, rate, keys);
    memset(f, 0, sizeof(*f));
    assert_int_equal(ck_scenario_parse(&f->sc, "v.json", text, err, sizeof(err)), 0);
    assert_int_equal(ck_workload_generate(&f->w, &f->sc.workload, f->sc.seed), 0);
    int64_t nwin = 2000 / WINDOW_MS + 1; /* 2 s of event time, no disorder */
    int64_t *count = calloc((size_t)keys, sizeof(*count));
    int64_t *win = calloc((size_t)(keys * nwin), sizeof(*win));
    f->out = malloc((size_t)(2 * f->w.total + keys * nwin) * sizeof(*f->out));
    assert_true(count && win && f->out);
    for (int p = 0; p < f->w.spec.partitions; p++) {
        const ck_wl_part *part = &f->w.parts[p];
        for (int64_t i = 0; i < part->n; i++) {
            uint32_t k = part->key[i];
            int64_t ts = part->ts[i];
            assert_true(ts >= 0 && ts / WINDOW_MS < nwin);
            f->out[f->n++] = (orec){PASS, k, ts, part->value[i], prov(p, i)};
            f->out[f->n++] = (orec){COUNTS, k, ts, ++count[k], prov(p, i)};
            win[k * nwin + ts / WINDOW_MS]++;
        }
    }
    for (int64_t k = 0; k < keys; k++)
        for (int64_t x = 0; x < nwin; x++)
            if (win[k * nwin + x])
                f->out[f->n++] = (orec){WINDOWS, (uint32_t)k, (x + 1) * WINDOW_MS - 1,
                                        win[k * nwin + x], CK_PROV_WINDOW};
    free(count);
    free(win);
}

static void teardown(fixture *f)
{
    free(f->out);
    ck_workload_free(&f->w);
    ck_scenario_free(&f->sc);
}

/* Writes r into sink subtask sub's stream of o. */
static void put(ck_sinkout *o, const fixture *f, orec r, int sub)
{
    ck_rec rec = {.ts = r.ts, .value = r.value, .prov = r.prov};
    rec.key = ck_workload_key(&f->w, r.key, &rec.klen);
    uint8_t buf[256];
    size_t n = ck_rec_size(&rec, 0);
    ck_rec_encode(buf, &rec, 0, n);
    assert_int_equal(ck_sinkout_append(o, ck_sink_id(r.sink, sub), buf, n), 0);
}

enum { NONE, DROP, DUP, VALUE_UP, VALUE_DOWN, KEY, TS, SINK, PROV, SWAP, DROP_DUP };

/* Damage to output record `at` (and, for SWAP and DROP_DUP, `at2`). */
typedef struct damage {
    int kind;
    int64_t at, at2;
} damage;

static ck_verdict verdict(const fixture *f, const ck_sinkout *o, ck_guarantee g, int partial)
{
    ck_verdict v;
    char err[300];
    assert_int_equal(ck_verify(&f->sc.graph, &f->w, o, g, partial, &v, err, sizeof(err)), 0);
    /* Every record received is an expected one, a duplicate or unexpected. */
    assert_true(v.received == v.expected - v.lost + v.duplicated + v.unexpected);
    return v;
}

/* The sink subtask that writes output i, and its transaction: the outputs
 * of a sink, which come in pairs (pass-through and count) or one by one
 * (windows), alternate between two of each. */
static int stream_of(int64_t i)
{
    return (int)(i / 2 % 2);
}

static uint64_t txn_of(int64_t i)
{
    return 1 + (uint64_t)(i / 4 % 2);
}

/*
 * Writes the right output with damage d, and checks it. The output is cut
 * into two streams per sink and, in each, two committed transactions.
 */
static ck_verdict check(const fixture *f, damage d, ck_guarantee g, int partial)
{
    /* Each transaction staged apart, then committed in order: 1, then 2. */
    ck_sinkout o, txns[2];
    ck_sinkout_init(&o);
    ck_sinkout_init(&txns[0]);
    ck_sinkout_init(&txns[1]);
    for (int64_t i = 0; i < f->n; i++) {
        orec r = f->out[i];
        int sub = stream_of(i);
        ck_sinkout *txn = &txns[txn_of(i) - 1];
        if (i == d.at) {
            switch (d.kind) {
            case DROP:
            case DROP_DUP:
                continue;
            case VALUE_UP:
                r.value++;
                break;
            case VALUE_DOWN:
                r.value--;
                break;
            case KEY:
                r.key = (r.key + 1) % (uint32_t)f->w.nkeys;
                break;
            case TS:
                r.ts++;
                break;
            case SINK:
                r.sink = r.sink == PASS ? COUNTS : PASS;
                break;
            case PROV:
                r.prov++;
                break;
            case SWAP:
                r.value = f->out[d.at2].value;
                break;
            }
        }
        if (i == d.at2 && d.kind == SWAP)
            r.value = f->out[d.at].value;
        put(txn, f, r, sub);
        if ((i == d.at && d.kind == DUP) || (i == d.at2 && d.kind == DROP_DUP))
            put(txn, f, r, 1 - sub);
    }
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < txns[t].n; i++)
            assert_int_equal(ck_sinkout_append(&o, txns[t].s[i].sink_id, txns[t].s[i].data,
                                               txns[t].s[i].len),
                             0);
        ck_sinkout_free(&txns[t]);
    }
    ck_verdict v = verdict(f, &o, g, partial);
    ck_sinkout_free(&o);
    return v;
}

static damage dmg(int kind, int64_t at)
{
    return (damage){kind, at, -1};
}

/* The index of the n-th output (from 0) of sink, from position from on. */
static int64_t nth(const fixture *f, int sink, int64_t from, int n)
{
    for (int64_t i = from; i < f->n; i++)
        if (f->out[i].sink == sink && n-- == 0)
            return i;
    fail_msg("no such output");
    return -1;
}

/* The next output of the same sink and key as output i, after i. */
static int64_t next_of_key(const fixture *f, int64_t i)
{
    for (int64_t j = i + 1; j < f->n; j++)
        if (f->out[j].sink == f->out[i].sink && f->out[j].key == f->out[i].key)
            return j;
    fail_msg("no later output of the key");
    return -1;
}

/* A later output of the same sink and key as output i, with another value,
 * in the other stream and the other transaction. */
static int64_t swap_partner(const fixture *f, int64_t i)
{
    for (int64_t j = i + 1; j < f->n; j++)
        if (f->out[j].sink == f->out[i].sink && f->out[j].key == f->out[i].key &&
            f->out[j].value != f->out[i].value && stream_of(j) != stream_of(i) &&
            txn_of(j) != txn_of(i))
            return j;
    fail_msg("no output to swap with");
    return -1;
}

static void test_right_output(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 30000, 7); /* 60 000 records, 120 000 + windows outputs */
    for (int g = CK_EXACTLY_ONCE; g <= CK_AT_LEAST_ONCE; g++) {
        ck_verdict v = check(&f, dmg(NONE, -1), (ck_guarantee)g, 0);
        assert_true(v.ok);
        assert_int_equal(v.expected, f.n);
        assert_int_equal(v.received, f.n);
        assert_int_equal(v.lost + v.duplicated + v.unexpected, 0);
    }
    teardown(&f);
}

/* Exactly once, each kind of damage to each sink is caught, and counted. */
static void test_exact_damage(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 30000, 7);
    const int sinks[] = {PASS, COUNTS, WINDOWS};
    for (int s = 0; s < 3; s++) {
        int64_t at = nth(&f, sinks[s], f.n / 3, 0);
        ck_verdict v = check(&f, dmg(DROP, at), CK_EXACTLY_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.duplicated + v.unexpected, 0);
        assert_int_equal(v.received, f.n - 1);

        v = check(&f, dmg(DUP, at), CK_EXACTLY_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.duplicated, 1);
        assert_int_equal(v.lost + v.unexpected, 0);

        /* A field changed: the right record is lost, the changed one unexpected. */
        const int fields[] = {VALUE_UP, VALUE_DOWN, KEY, TS, PROV};
        for (int k = 0; k < 5; k++) {
            v = check(&f, dmg(fields[k], at), CK_EXACTLY_ONCE, 0);
            assert_false(v.ok);
            assert_int_equal(v.lost, 1);
            assert_int_equal(v.unexpected, 1);
            assert_int_equal(v.duplicated, 0);
        }

        /* Two outputs of one key (in different streams and transactions)
         * with their values exchanged: both lost, both unexpected. */
        v = check(&f, (damage){SWAP, at, swap_partner(&f, at)}, CK_EXACTLY_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.lost, 2);
        assert_int_equal(v.unexpected, 2);
    }
    /* A record written to the other sink. */
    ck_verdict v = check(&f, dmg(SINK, nth(&f, PASS, 100, 0)), CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.unexpected, 1);
    v = check(&f, dmg(SINK, nth(&f, COUNTS, 100, 0)), CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.unexpected, 1);

    /* Part of the output (a savepoint cut the run): missing is allowed... */
    v = check(&f, dmg(DROP, 0), CK_EXACTLY_ONCE, 1);
    assert_true(v.ok);
    assert_int_equal(v.lost, 1);
    /* ...wrong is not. */
    v = check(&f, dmg(VALUE_UP, 0), CK_EXACTLY_ONCE, 1);
    assert_false(v.ok);
    teardown(&f);
}

/* At least once: nothing may be lost, duplicates are counted; a running
 * count or a window may overshoot after a replay, never fall short. */
static void test_at_least_once(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 20000, 50); /* 40 000 records */
    const int sinks[] = {PASS, COUNTS, WINDOWS};
    for (int s = 0; s < 3; s++) {
        int64_t at = nth(&f, sinks[s], f.n / 2, 0);
        /* A record dropped is lost, even when later outputs of its key
         * carry higher counts. */
        ck_verdict v = check(&f, dmg(DROP, at), CK_AT_LEAST_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.duplicated + v.unexpected, 0);

        /* A pure duplicate (a replay): allowed, and counted. */
        v = check(&f, dmg(DUP, at), CK_AT_LEAST_ONCE, 0);
        assert_true(v.ok);
        assert_int_equal(v.duplicated, 1);
        assert_int_equal(v.lost + v.unexpected, 0);

        /* One output of a key dropped, another of the same key duplicated:
         * as many records as expected, and the same group, yet one lost. */
        v = check(&f, (damage){DROP_DUP, at, next_of_key(&f, at)}, CK_AT_LEAST_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.duplicated, 1);
        assert_int_equal(v.unexpected, 0);
        assert_int_equal(v.received, f.n);

        /* A value below the expected one is wrong whatever the guarantee. */
        v = check(&f, dmg(VALUE_DOWN, at), CK_AT_LEAST_ONCE, 0);
        assert_false(v.ok);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.unexpected, 1);

        /* A provenance, key or time changed: lost and unexpected. */
        const int fields[] = {KEY, TS, PROV};
        for (int k = 0; k < 3; k++) {
            v = check(&f, dmg(fields[k], at), CK_AT_LEAST_ONCE, 0);
            assert_false(v.ok);
            assert_int_equal(v.lost, 1);
            assert_int_equal(v.unexpected, 1);
        }
    }
    /* A higher count or window (a replay counted a record twice) is allowed;
     * a passed-through record must be exact. */
    ck_verdict v = check(&f, dmg(VALUE_UP, nth(&f, COUNTS, 10, 0)), CK_AT_LEAST_ONCE, 0);
    assert_true(v.ok);
    v = check(&f, dmg(VALUE_UP, nth(&f, WINDOWS, 0, 3)), CK_AT_LEAST_ONCE, 0);
    assert_true(v.ok);
    v = check(&f, dmg(VALUE_UP, nth(&f, PASS, 10, 0)), CK_AT_LEAST_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.unexpected, 1);

    /* A key the reference never had is unexpected whatever the guarantee. */
    ck_sinkout o;
    ck_sinkout_init(&o);
    for (int64_t i = 0; i < f.n; i++)
        put(&o, &f, f.out[i], 0);
    ck_rec r = {.ts = 1, .value = 1, .key = "no-such-key", .klen = 11};
    uint8_t buf[128];
    size_t n = ck_rec_size(&r, 0);
    ck_rec_encode(buf, &r, 0, n);
    assert_int_equal(ck_sinkout_append(&o, ck_sink_id(COUNTS, 0), buf, n), 0);
    v = verdict(&f, &o, CK_AT_LEAST_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.unexpected, 1);
    assert_int_equal(v.lost, 0);
    ck_sinkout_free(&o);
    teardown(&f);
}

/* Counters cannot wrap: more received than expected while records are lost
 * and unexpected ones arrive (received - expected - unexpected would be
 * negative), and one record received a hundred thousand times. */
static void test_counters_do_not_wrap(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1000, 5);
    ck_sinkout o;
    ck_sinkout_init(&o);
    for (int64_t i = 2; i < f.n; i++) /* two lost */
        put(&o, &f, f.out[i], 0);
    for (int k = 0; k < 3; k++) { /* three unexpected */
        ck_rec r = {.ts = k, .value = 1, .key = "stranger", .klen = 8};
        uint8_t buf[128];
        size_t n = ck_rec_size(&r, 0);
        ck_rec_encode(buf, &r, 0, n);
        assert_int_equal(ck_sinkout_append(&o, ck_sink_id(PASS, 0), buf, n), 0);
    }
    ck_verdict v = verdict(&f, &o, CK_AT_LEAST_ONCE, 0);
    assert_int_equal(v.received, f.n + 1);
    assert_int_equal(v.lost, 2);
    assert_int_equal(v.unexpected, 3);
    assert_int_equal(v.duplicated, 0);
    assert_false(v.ok);

    for (int k = 0; k < 100000; k++)
        put(&o, &f, f.out[5], 1);
    v = verdict(&f, &o, CK_AT_LEAST_ONCE, 0);
    assert_int_equal(v.received, f.n + 100001);
    assert_int_equal(v.duplicated, 100000);
    assert_int_equal(v.lost, 2);
    ck_sinkout_free(&o);
    teardown(&f);
}

/* One key at 100 000 records/s: values 1..100 in 1 ms ticks, so many
 * records are alike in key, time and value; provenance tells them apart. */
static void test_identical_records(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 100000, 1);
    int64_t same = -1;
    for (int64_t i = 1; i < f.n && same < 0; i++)
        for (int64_t j = i - 1; j >= 0 && f.out[j].ts == f.out[i].ts && same < 0; j--)
            if (f.out[j].sink == PASS && f.out[i].sink == PASS &&
                f.out[j].value == f.out[i].value)
                same = i;
    assert_true(same > 0); /* the workload has records alike */
    assert_true(check(&f, dmg(NONE, -1), CK_EXACTLY_ONCE, 0).ok);
    ck_verdict v = check(&f, dmg(DROP, same), CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.duplicated + v.unexpected, 0);
    v = check(&f, dmg(DUP, same), CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.duplicated, 1);
    assert_int_equal(v.lost + v.unexpected, 0);
    /* At least once, dropping one and duplicating its twin is a loss. */
    int64_t twin = -1;
    for (int64_t j = same - 1; j >= 0 && twin < 0; j--)
        if (f.out[j].sink == PASS && f.out[j].ts == f.out[same].ts &&
            f.out[j].value == f.out[same].value)
            twin = j;
    v = check(&f, (damage){DROP_DUP, same, twin}, CK_AT_LEAST_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.duplicated, 1);
    teardown(&f);
}

/* src -rebalance-> spread => cnt -> counts; src -broadcast-> copy(3) -> copies */
static const char *reordering =
    "{\"name\": \"r\", \"seed\": 9,\n"
    " \"workload\": {\"duration\": \"1 s\", \"rate\": 5000, \"keys\": 40, \"partitions\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\", \"parallelism\": 2},\n"
    "   {\"name\": \"spread\", \"type\": \"map\", \"partition\": \"rebalance\", \"parallelism\": 3},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"parallelism\": 2},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\", \"parallelism\": 2},\n"
    "   {\"name\": \"copy\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"broadcast\",\n"
    "    \"parallelism\": 3},\n"
    "   {\"name\": \"copies\", \"type\": \"sink\", \"parallelism\": 3}]}}\n";

/*
 * A running count behind a rebalance: its values depend on the order a
 * key's records arrive in, so any order is right as long as every record
 * is counted once and the key's last count is there; a broadcast edge
 * makes one copy per consumer subtask. Written by hand: each key's counts
 * in reverse order, each record three times at the broadcast's sink.
 */
static void test_reordering_edges(void **state)
{
    (void)state;
    fixture f;
    char err[1200];
    memset(&f, 0, sizeof(f));
    assert_int_equal(ck_scenario_parse(&f.sc, "r.json", reordering, err, sizeof(err)), 0);
    assert_int_equal(ck_workload_generate(&f.w, &f.sc.workload, f.sc.seed), 0);
    int64_t keys = f.w.nkeys, total = f.w.total;
    int64_t *n = calloc((size_t)keys, sizeof(*n)), *seen = calloc((size_t)keys, sizeof(*seen));
    f.out = malloc((size_t)(4 * total) * sizeof(*f.out));
    assert_true(n && seen && f.out);
    for (int p = 0; p < f.w.spec.partitions; p++)
        for (int64_t i = 0; i < f.w.parts[p].n; i++)
            n[f.w.parts[p].key[i]]++;
    int64_t last_of_k0 = -1; /* the output carrying key 0's final count */
    for (int p = 0; p < f.w.spec.partitions; p++) {
        const ck_wl_part *part = &f.w.parts[p];
        for (int64_t i = 0; i < part->n; i++) {
            uint32_t k = part->key[i];
            int64_t value = n[k] - seen[k]++; /* n, n-1, ..., 1 */
            if (k == 0 && value == n[0])
                last_of_k0 = f.n;
            f.out[f.n++] = (orec){3, k, part->ts[i], value, prov(p, i)};
            for (int c = 0; c < 3; c++)
                f.out[f.n++] = (orec){5, k, part->ts[i], part->value[i], prov(p, i)};
        }
    }
    assert_true(n[0] > 1 && last_of_k0 >= 0);
    for (int g = CK_EXACTLY_ONCE; g <= CK_AT_LEAST_ONCE; g++) {
        for (int bad = 0; bad <= 1; bad++) {
            /* bad: key 0's final count is missing (one less instead) */
            ck_sinkout o;
            ck_sinkout_init(&o);
            for (int64_t i = 0; i < f.n; i++) {
                orec r = f.out[i];
                if (bad && i == last_of_k0)
                    r.value--;
                put(&o, &f, r, (int)(i % 2));
            }
            ck_verdict v = verdict(&f, &o, (ck_guarantee)g, 0);
            assert_int_equal(v.expected, f.n);
            assert_int_equal(v.lost + v.duplicated + v.unexpected, 0);
            assert_int_equal(v.wrong_totals, bad);
            assert_int_equal(v.ok, !bad);
            ck_sinkout_free(&o);
        }
    }
    free(n);
    free(seen);
    teardown(&f);
}

/*
 * Every way the verifier groups a sink's output, each with one record
 * duplicated, one lost, one unexpected, the three at once, a value one
 * higher or lower and a key's highest value one lower, under both
 * guarantees; every count and the verdict are asserted (the table below).
 * One job holds one sink of each kind:
 *
 *   pass      the records as they are (the value is part of the identity)
 *   counts    a running count per key, in log order (at least once: a
 *             value may be higher, never lower)
 *   windows   a 100 ms window count per key (the same)
 *   medians   a 100 ms window's lower median (list state; the same)
 *   dists     a distinct in log order: the first record of each (key,
 *             value) passes (its identity, provenance included, is exact)
 *   rpass     records behind a rebalance: still exact
 *   rcounts   a running count behind a rebalance: values depend on arrival
 *             order; matched without them, and the key's final count must
 *             be there ("final value only")
 *   rwindows  a window count behind a rebalance: order does not matter
 *   rsums     a window summing the rcounts' running values: order-dependent
 *             values and no final one (matched without values)
 *   rdists    a distinct behind a rebalance: which record of a (key,
 *             value) passes depends on order; matched by (key, value)
 *   copies    behind a broadcast to 3: every record three times
 *
 * The right output is written by hand from the input, in an order the
 * engine could produce but the reference does not: rcounts count each
 * key's records backwards, rdists pass the last record of each (key,
 * value) rather than the first.
 */
static const char *every_grouping =
    "{\"name\": \"g\", \"seed\": 11,\n"
    " \"workload\": {\"duration\": \"1 s\", \"rate\": 3000, \"keys\": 12, \"partitions\": 2},\n"
    " \"config\": {\"parallelism.default\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"pass\", \"type\": \"sink\"},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"src\"},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"win\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"count\",\n"
    "    \"input\": \"src\"},\n"
    "   {\"name\": \"windows\", \"type\": \"sink\"},\n"
    "   {\"name\": \"med\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"median\",\n"
    "    \"input\": \"src\"},\n"
    "   {\"name\": \"medians\", \"type\": \"sink\"},\n"
    "   {\"name\": \"dist\", \"type\": \"distinct\", \"input\": \"src\"},\n"
    "   {\"name\": \"dists\", \"type\": \"sink\"},\n"
    "   {\"name\": \"spread\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"rebalance\",\n"
    "    \"parallelism\": 3},\n"
    "   {\"name\": \"rpass\", \"type\": \"sink\", \"parallelism\": 3},\n"
    "   {\"name\": \"rcnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"spread\"},\n"
    "   {\"name\": \"rcounts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"rwin\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"count\",\n"
    "    \"input\": \"spread\"},\n"
    "   {\"name\": \"rwindows\", \"type\": \"sink\"},\n"
    "   {\"name\": \"rsum\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"sum\",\n"
    "    \"input\": \"rcnt\"},\n"
    "   {\"name\": \"rsums\", \"type\": \"sink\"},\n"
    "   {\"name\": \"rdist\", \"type\": \"distinct\", \"input\": \"spread\"},\n"
    "   {\"name\": \"rdists\", \"type\": \"sink\"},\n"
    "   {\"name\": \"copy\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"broadcast\",\n"
    "    \"parallelism\": 3},\n"
    "   {\"name\": \"copies\", \"type\": \"sink\", \"parallelism\": 3}]}}\n";

/* The sinks' operator indices in every_grouping. */
enum {
    G_PASS = 1, G_COUNTS = 3, G_WINDOWS = 5, G_MEDIANS = 7, G_DISTS = 9, G_RPASS = 11,
    G_RCOUNTS = 13, G_RWINDOWS = 15, G_RSUMS = 17, G_RDISTS = 19, G_COPIES = 21
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Writes every_grouping's right output into f->out, by hand. */
static void grouping_output(fixture *f)
{
    int64_t keys = f->w.nkeys, total = f->w.total;
    int64_t nwin = 1000 / WINDOW_MS + 1;
    int64_t *n = calloc((size_t)keys, sizeof(*n));
    int64_t *cnt = calloc((size_t)keys, sizeof(*cnt));
    int64_t *back = calloc((size_t)keys, sizeof(*back));
    int64_t *win = calloc((size_t)(keys * nwin), sizeof(*win));
    int64_t *sum = calloc((size_t)(keys * nwin), sizeof(*sum));
    int64_t *vals = malloc((size_t)total * sizeof(*vals));
    /* (key, value) -> the first and the last record with it */
    int64_t *first = malloc((size_t)(keys * 101) * sizeof(*first));
    int64_t *last = malloc((size_t)(keys * 101) * sizeof(*last));
    f->out = malloc((size_t)(9 * total + 4 * keys * nwin + 2 * keys * 101) * sizeof(*f->out));
    assert_true(n && cnt && back && win && sum && vals && first && last && f->out);
    for (int64_t i = 0; i < keys * 101; i++)
        first[i] = last[i] = -1;
    for (int p = 0; p < f->w.spec.partitions; p++)
        for (int64_t i = 0; i < f->w.parts[p].n; i++)
            n[f->w.parts[p].key[i]]++;
    for (int p = 0; p < f->w.spec.partitions; p++) {
        const ck_wl_part *part = &f->w.parts[p];
        for (int64_t i = 0; i < part->n; i++) {
            uint32_t k = part->key[i];
            int64_t ts = part->ts[i], v = part->value[i];
            uint64_t pv = prov(p, i);
            assert_true(ts >= 0 && ts / WINDOW_MS < nwin && v >= 1 && v <= 100);
            int64_t rc = n[k] - back[k]++; /* n, n-1, ..., 1 */
            f->out[f->n++] = (orec){G_PASS, k, ts, v, pv};
            f->out[f->n++] = (orec){G_COUNTS, k, ts, ++cnt[k], pv};
            f->out[f->n++] = (orec){G_RPASS, k, ts, v, pv};
            f->out[f->n++] = (orec){G_RCOUNTS, k, ts, rc, pv};
            for (int c = 0; c < 3; c++)
                f->out[f->n++] = (orec){G_COPIES, k, ts, v, pv};
            win[k * nwin + ts / WINDOW_MS]++;
            sum[k * nwin + ts / WINDOW_MS] += rc;
            int64_t kv = k * 101 + v;
            if (first[kv] < 0)
                first[kv] = (int64_t)p << 40 | i;
            last[kv] = (int64_t)p << 40 | i;
        }
    }
    for (int64_t kv = 0; kv < keys * 101; kv++) {
        for (int which = 0; which < 2 && first[kv] >= 0; which++) {
            int64_t at = which ? last[kv] : first[kv];
            int p = (int)(at >> 40);
            int64_t i = at & ((1LL << 40) - 1);
            f->out[f->n++] = (orec){which ? G_RDISTS : G_DISTS, (uint32_t)(kv / 101),
                                    f->w.parts[p].ts[i], kv % 101, prov(p, i)};
        }
    }
    for (int64_t k = 0; k < keys; k++) {
        for (int64_t x = 0; x < nwin; x++) {
            if (!win[k * nwin + x])
                continue;
            int64_t end = (x + 1) * WINDOW_MS - 1, nv = 0;
            for (int p = 0; p < f->w.spec.partitions; p++)
                for (int64_t i = 0; i < f->w.parts[p].n; i++)
                    if (f->w.parts[p].key[i] == k && f->w.parts[p].ts[i] / WINDOW_MS == x)
                        vals[nv++] = f->w.parts[p].value[i];
            qsort(vals, (size_t)nv, sizeof(*vals), cmp_i64);
            uint32_t key = (uint32_t)k;
            int64_t c = win[k * nwin + x];
            f->out[f->n++] = (orec){G_WINDOWS, key, end, c, CK_PROV_WINDOW};
            f->out[f->n++] = (orec){G_MEDIANS, key, end, vals[(nv - 1) / 2], CK_PROV_WINDOW};
            f->out[f->n++] = (orec){G_RWINDOWS, key, end, c, CK_PROV_WINDOW};
            f->out[f->n++] = (orec){G_RSUMS, key, end, sum[k * nwin + x], CK_PROV_WINDOW};
        }
    }
    free(n);
    free(cnt);
    free(back);
    free(win);
    free(sum);
    free(vals);
    free(first);
    free(last);
}

/* The damage of one check of the table. */
enum { G_NONE, G_DUP, G_DROP, G_EXTRA, G_ALL3, G_UP, G_DOWN, G_TOP_DOWN, G_ABOVE, G_ZERO,
       G_NDAMAGE };
static const char *const g_damage_name[] = {"none", "dup",      "drop",  "extra", "all3",
                                            "up",   "down",     "top-down", "above", "zero"};

/* What a check must find. */
typedef struct g_expect {
    int8_t lost, dup, unexp, wrong_totals;
    int8_t ok; /* -1: the damage does not apply to the kind */
} g_expect;

/* E(lost, duplicated, unexpected, ok); W: the same with one wrong total;
 * NA: not applicable. */
#define E(l, d, u, k) {l, d, u, 0, k}
#define W(l, d, u, k) {l, d, u, 1, k}
#define NA {0, 0, 0, 0, -1}

typedef struct g_row {
    int sink;
    const char *name;
    ck_guarantee g;
    g_expect e[G_NDAMAGE];
} g_row;

#define EO CK_EXACTLY_ONCE
#define ALO CK_AT_LEAST_ONCE

/*
 * The table. Damage to output `at` of the sink (never the first output of
 * its key, so never an rcounts' final count), and for all3 also to `at2`,
 * the next output of the key with another identity:
 *   dup    `at` written twice (the copy in another subtask's stream)
 *   drop   `at` left out
 *   extra  a record added that no output had: `at` a thousand seconds later
 *          and its value 1000 higher
 *   all3   `at` left out, `at2` written twice and an extra made from `at2`
 *   up     `at`'s value one higher, down: one lower
 *   top-down  the value of `top`, the first output of `at`'s key with the
 *          key's highest value (rcounts: the one with its final count), one
 *          lower
 *   above  `at`'s value one above `top`'s (rcounts: above the final count,
 *          which no arrival order reaches exactly once)
 *   zero   `at`'s value 0 (rcounts: below any count)
 * A value changed on rdists names another (key, value), which the key may
 * or may not have had: not applicable.
 */
static const g_row g_table[] = {
    /* sink, guarantee: none, then dup, drop, extra, all3 / up, down, top-down, above, zero */
    {G_PASS,     "pass",     EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_PASS,     "pass",     ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    /* At least once, an aggregate or a window may carry more, never less. */
    {G_COUNTS,   "counts",   EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_COUNTS,   "counts",   ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(1,0,1,0), E(1,0,1,0), E(0,0,0,1), E(1,0,1,0)}},
    {G_WINDOWS,  "windows",  EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_WINDOWS,  "windows",  ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(1,0,1,0), E(1,0,1,0), E(0,0,0,1), E(1,0,1,0)}},
    {G_MEDIANS,  "medians",  EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_MEDIANS,  "medians",  ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(1,0,1,0), E(1,0,1,0), E(0,0,0,1), E(1,0,1,0)}},
    {G_DISTS,    "dists",    EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_DISTS,    "dists",    ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_RPASS,    "rpass",    EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_RPASS,    "rpass",    ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    /* Values that depend on arrival order: the key's final count must be
     * there (missing when the top value is lowered), and every count lie
     * within [1, the final count] (at least once: at least 1). */
    {G_RCOUNTS,  "rcounts",  EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(0,0,0,1), W(0,0,0,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_RCOUNTS,  "rcounts",  ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(0,0,0,1), W(0,0,0,0), E(0,0,0,1), E(1,0,1,0)}},
    {G_RWINDOWS, "rwindows", EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_RWINDOWS, "rwindows", ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(1,0,1,0), E(1,0,1,0), E(0,0,0,1), E(1,0,1,0)}},
    /* Windows over order-dependent values: matched without them. */
    {G_RSUMS,    "rsums",    EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(0,0,0,1), E(0,0,0,1), E(0,0,0,1), E(0,0,0,1)}},
    {G_RSUMS,    "rsums",    ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(0,0,0,1), E(0,0,0,1), E(0,0,0,1), E(0,0,0,1), E(0,0,0,1)}},
    {G_RDISTS,   "rdists",   EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   NA        , NA        , NA        , NA        , NA}},
    {G_RDISTS,   "rdists",   ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   NA        , NA        , NA        , NA        , NA}},
    {G_COPIES,   "copies",   EO,  {E(0,0,0,1), E(0,1,0,0), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
    {G_COPIES,   "copies",   ALO, {E(0,0,0,1), E(0,1,0,1), E(1,0,0,0), E(0,0,1,0), E(1,1,1,0),
                                   E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0), E(1,0,1,0)}},
};

static int same_identity(orec a, orec b)
{
    return a.sink == b.sink && a.key == b.key && a.ts == b.ts && a.value == b.value &&
           a.prov == b.prov;
}

/* Writes f's output with damage d to output at (at2, top), and checks it. */
static ck_verdict g_check(const fixture *f, int d, int64_t at, int64_t at2, int64_t top,
                          ck_guarantee g)
{
    ck_sinkout o;
    ck_sinkout_init(&o);
    for (int64_t i = 0; i < f->n; i++) {
        orec r = f->out[i];
        int sub = (int)(i % 2);
        if (i == at && (d == G_DROP || d == G_ALL3))
            continue;
        if (i == at && d == G_UP)
            r.value++;
        if ((i == at && d == G_DOWN) || (i == top && d == G_TOP_DOWN))
            r.value--;
        if (i == at && d == G_ABOVE)
            r.value = f->out[top].value + 1;
        if (i == at && d == G_ZERO)
            r.value = 0;
        put(&o, f, r, sub);
        if ((i == at && d == G_DUP) || (i == at2 && d == G_ALL3))
            put(&o, f, r, 1 - sub);
        if ((i == at && d == G_EXTRA) || (i == at2 && d == G_ALL3)) {
            r.ts += 1000000;
            r.value += 1000;
            put(&o, f, r, sub);
        }
    }
    ck_verdict v;
    char err[300];
    assert_int_equal(ck_verify(&f->sc.graph, &f->w, &o, g, 0, &v, err, sizeof(err)), 0);
    ck_sinkout_free(&o);
    return v;
}

static void test_every_grouping(void **state)
{
    (void)state;
    fixture f;
    char err[1200];
    memset(&f, 0, sizeof(f));
    int prc = ck_scenario_parse(&f.sc, "g.json", every_grouping, err, sizeof(err));
    if (prc)
        print_error("%s\n", err);
    assert_int_equal(prc, 0);
    assert_int_equal(ck_workload_generate(&f.w, &f.sc.workload, f.sc.seed), 0);
    grouping_output(&f);
    int failures = 0;
    for (size_t r = 0; r < sizeof(g_table) / sizeof(g_table[0]); r++) {
        const g_row *row = &g_table[r];
        /* `at`: from the middle of the sink's output on, the first output
         * whose key had an earlier one; `at2`: the key's next output with
         * another identity. */
        int64_t at = -1, at2 = -1, outputs = 0, mid;
        for (int64_t i = 0; i < f.n; i++)
            outputs += f.out[i].sink == row->sink;
        mid = outputs / 2;
        for (int64_t i = 0, seen = 0; i < f.n && at < 0; i++) {
            if (f.out[i].sink != row->sink || seen++ < mid)
                continue;
            for (int64_t j = 0; j < i && at < 0; j++)
                if (f.out[j].sink == row->sink && f.out[j].key == f.out[i].key &&
                    !same_identity(f.out[j], f.out[i]))
                    at = i;
        }
        for (int64_t j = at + 1; at >= 0 && j < f.n && at2 < 0; j++)
            if (f.out[j].sink == row->sink && f.out[j].key == f.out[at].key &&
                !same_identity(f.out[j], f.out[at]))
                at2 = j;
        assert_true(at >= 0 && at2 >= 0);
        int64_t top = at;
        for (int64_t j = 0; j < f.n; j++)
            if (f.out[j].sink == row->sink && f.out[j].key == f.out[at].key &&
                f.out[j].value > f.out[top].value)
                top = j;
        for (int d = G_NONE; d < G_NDAMAGE; d++) {
            g_expect e = row->e[d];
            if (e.ok < 0)
                continue;
            ck_verdict v = g_check(&f, d, at, at2, top, row->g);
            /* Every record received is an expected one, a duplicate or unexpected. */
            if (v.received != v.expected - v.lost + v.duplicated + v.unexpected ||
                v.lost != (uint64_t)e.lost || v.duplicated != (uint64_t)e.dup ||
                v.unexpected != (uint64_t)e.unexp ||
                v.wrong_totals != (uint64_t)e.wrong_totals || v.ok != e.ok) {
                print_error("%s %s %s: received %llu lost %llu duplicated %llu unexpected "
                            "%llu wrong totals %llu ok %d; expected %d %d %d %d ok %d\n",
                            row->name, ck_guarantee_name(row->g), g_damage_name[d],
                            (unsigned long long)v.received,
                            (unsigned long long)v.lost, (unsigned long long)v.duplicated,
                            (unsigned long long)v.unexpected,
                            (unsigned long long)v.wrong_totals, v.ok, e.lost, e.dup, e.unexp,
                            e.wrong_totals, e.ok);
                failures++;
            }
            assert_int_equal(v.expected, f.n);
        }
    }
    assert_int_equal(failures, 0);
    teardown(&f);
}

static void test_malformed_output(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1000, 3);
    ck_sinkout o;
    ck_sinkout_init(&o);
    put(&o, &f, f.out[0], 0);
    const uint8_t junk[] = {40, 0, 0, 0, CK_EL_RECORD, 1, 2, 3};
    assert_int_equal(ck_sinkout_append(&o, ck_sink_id(PASS, 0), junk, sizeof(junk)), 0);
    ck_verdict v;
    char err[300];
    assert_int_equal(ck_verify(&f.sc.graph, &f.w, &o, CK_EXACTLY_ONCE, 0, &v, err, sizeof(err)),
                     CK_ECORRUPT);
    assert_non_null(strstr(err, "sink 1 subtask 0: malformed record at byte"));
    ck_sinkout_free(&o);
    teardown(&f);
}


/*
 * Rescales. One job, read at parallelism 2, at 4, and rescaled from 2 to
 * 4 at a cut in the middle of every partition (a second generation of its
 * graph that read each partition from there on). Its sinks:
 *
 *   counts    a running count per key behind a hash edge (exact values)
 *   rcounts   the same behind a rebalance (values depend on arrival
 *             order: matched without them, bounds and final value checked)
 *   copies    behind a broadcast: as many copies of a record as the
 *             broadcast's consumer had subtasks in the generation that
 *             processed it
 *
 * The output is written by hand, each record by the sink subtask that
 * would own its key in the generation that wrote it.
 */
static const char *rescaled_job =
    "{\"name\": \"rs\", \"seed\": 21,\n"
    " \"workload\": {\"duration\": \"1 s\", \"rate\": 2000, \"keys\": 24, \"partitions\": 4},\n"
    " \"config\": {\"parallelism.default\": %d},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"src\"},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"spread\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"rebalance\"},\n"
    "   {\"name\": \"rcnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"spread\"},\n"
    "   {\"name\": \"rcounts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"cp\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"broadcast\"},\n"
    "   {\"name\": \"copies\", \"type\": \"sink\"}]}}\n";

enum { R_COUNTS = 2, R_RCOUNTS = 5, R_COPIES = 7 };

/* Ways the state of one key (or one transaction) goes wrong at the cut. */
enum {
    RS_RIGHT,     /* the right output */
    RS_RESTART,   /* the key's group dropped: its count starts again from 0 after the cut */
    RS_DOUBLE,    /* its handle restored twice: its count jumps to twice what it was */
    RS_TXN_LOST,  /* a removed sink subtask's records between its last commit and the cut */
    RS_NONOWNER,  /* one record after the cut replayed to a subtask that does not own its
                   * key: counted there from nothing, and missing from the owner's count */
    RS_BOTH,      /* ...and to the owner as well: counted twice */
    RS_COPIES_LAST, /* broadcast copies: the last generation's parallelism for every record */
    RS_COPIES_FIRST, /* ...the first generation's for every record */
};

typedef struct rescaled {
    ck_scenario sc[2]; /* the job at parallelism 2 and at 4 */
    ck_workload w;
    int64_t from[8];   /* the cut: per partition, the first offset of the second generation */
    uint32_t victim;   /* the key the damage hits: the first after the cut in partition 0 with
                        * records before it */
} rescaled;

static void rescaled_setup(rescaled *x)
{
    char text[4096], err[1200];
    memset(x, 0, sizeof(*x));
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof(text), rescaled_job, 2 << i);
        assert_int_equal(ck_scenario_parse(&x->sc[i], "rs.json", text, err, sizeof(err)), 0);
    }
    assert_int_equal(ck_workload_generate(&x->w, &x->sc[0].workload, x->sc[0].seed), 0);
    assert_true(x->w.spec.partitions <= 8);
    for (int p = 0; p < x->w.spec.partitions; p++)
        x->from[p] = x->w.parts[p].n / 2;
    const ck_wl_part *p0 = &x->w.parts[0];
    int found = 0;
    for (int64_t i = x->from[0]; i < p0->n && !found; i++)
        for (int64_t j = 0; j < x->from[0] && !found; j++)
            if (p0->key[j] == p0->key[i]) {
                x->victim = p0->key[i];
                found = 1;
            }
    assert_true(found);
}

static void rescaled_teardown(rescaled *x)
{
    ck_workload_free(&x->w);
    ck_scenario_free(&x->sc[0]);
    ck_scenario_free(&x->sc[1]);
}

/* Writes the output of the generations gens (parallelism par[g]) into o,
 * with damage `how` to the sinks in `sinks` (bits 1: counts, 2: rcounts;
 * the RS_COPIES_ kinds damage copies). The removed sink subtask of
 * RS_TXN_LOST is the last of the first generation (a rescale from more
 * to fewer). */
static void rescaled_output(const rescaled *x, const fixture *f, int ngens, const int *par,
                            int how, int sinks, ck_sinkout *o)
{
    int64_t nkeys = x->w.nkeys;
    int64_t *count = calloc((size_t)nkeys, sizeof(*count));
    int64_t *rcount = calloc((size_t)nkeys, sizeof(*rcount));
    assert_true(count && rcount);
    int replayed = 0;
    for (int p = 0; p < x->w.spec.partitions; p++) {
        const ck_wl_part *part = &x->w.parts[p];
        for (int64_t i = 0; i < part->n; i++) {
            uint32_t k = part->key[i];
            int gen = ngens > 1 && i >= x->from[p];
            int sub = (int)(k % (uint32_t)par[gen]);
            if (gen && i == x->from[p] && k == x->victim) {
                if (how == RS_RESTART)
                    count[k] = sinks & 1 ? 0 : count[k], rcount[k] = sinks & 2 ? 0 : rcount[k];
                if (how == RS_DOUBLE)
                    count[k] <<= sinks & 1, rcount[k] <<= (sinks >> 1) & 1;
            }
            ++count[k];
            ++rcount[k];
            orec c = {R_COUNTS, k, part->ts[i], count[k], prov(p, i)};
            orec rc = {R_RCOUNTS, k, part->ts[i], rcount[k], prov(p, i)};
            /* a transaction that never committed, and that no one took over */
            int lost = how == RS_TXN_LOST && !gen && sub == par[0] - 1 && i >= x->from[p] - 40;
            int nonowner = (how == RS_NONOWNER || how == RS_BOTH) && gen && k == x->victim &&
                           !replayed;
            if (nonowner) {
                /* a fresh count at another subtask; the owner's misses it (RS_NONOWNER) */
                replayed = 1;
                orec c1 = c, rc1 = rc;
                c1.value = rc1.value = 1;
                if (sinks & 1)
                    put(o, f, c1, (sub + 1) % par[gen]);
                if (sinks & 2)
                    put(o, f, rc1, (sub + 1) % par[gen]);
                if (how == RS_NONOWNER) {
                    count[k] -= sinks & 1, rcount[k] -= (sinks >> 1) & 1;
                }
            }
            int skip = lost || (nonowner && how == RS_NONOWNER);
            if (!(skip && (sinks & 1)))
                put(o, f, c, sub);
            if (!(skip && (sinks & 2)))
                put(o, f, rc, sub);
            int copies = how == RS_COPIES_LAST ? par[ngens - 1] : how == RS_COPIES_FIRST ? par[0]
                                                                                          : par[gen];
            for (int n = 0; n < copies; n++)
                put(o, f, (orec){R_COPIES, k, part->ts[i], part->value[i], prov(p, i)}, n);
        }
    }
    free(count);
    free(rcount);
}

/* The verdict over generations gens[0..ngens) (par[g]: their parallelism). */
static ck_verdict rescaled_verdict(const rescaled *x, int ngens, const int *par, int cut_known,
                                   int how, int sinks, ck_guarantee g)
{
    fixture f; /* for put(): the workload's keys */
    memset(&f, 0, sizeof(f));
    f.w = x->w;
    ck_verify_gen gens[2];
    for (int i = 0; i < ngens; i++) {
        gens[i].g = &x->sc[par[i] == 4].graph;
        gens[i].from = i && cut_known ? x->from : NULL;
    }
    ck_sinkout o;
    ck_sinkout_init(&o);
    rescaled_output(x, &f, ngens, par, how, sinks, &o);
    ck_verdict v;
    char err[300];
    assert_int_equal(ck_verify_gens(gens, ngens, &x->w, &o, g, 0, &v, err, sizeof(err)), 0);
    assert_true(v.received == v.expected - v.lost + v.duplicated + v.unexpected);
    assert_int_equal(v.ok, v.first_wrong[0] == 0);
    ck_sinkout_free(&o);
    return v;
}

/* The same input gives the same expected output at parallelism 2, at 4,
 * and rescaled from 2 to 4 in the middle; broadcast copies are those of
 * the generation that processed each record. */
static void test_rescale_reference(void **state)
{
    (void)state;
    rescaled x;
    rescaled_setup(&x);
    int64_t total = x.w.total, before = 0;
    for (int p = 0; p < x.w.spec.partitions; p++)
        before += x.from[p];
    const int two[] = {2}, four[] = {4}, up[] = {2, 4}, down[] = {4, 2};
    for (int g = CK_EXACTLY_ONCE; g <= CK_AT_LEAST_ONCE; g++) {
        /* The same output (but for which sink subtask wrote what) passes at
         * any parallelism and across the rescale: the expected keyed output
         * is the same; the broadcast's copies are each generation's. */
        ck_verdict a, b, c, d;
        a = rescaled_verdict(&x, 1, two, 1, RS_RIGHT, 0, (ck_guarantee)g);
        b = rescaled_verdict(&x, 1, four, 1, RS_RIGHT, 0, (ck_guarantee)g);
        c = rescaled_verdict(&x, 2, up, 1, RS_RIGHT, 0, (ck_guarantee)g);
        d = rescaled_verdict(&x, 2, down, 1, RS_RIGHT, 0, (ck_guarantee)g);
        assert_true(a.ok && b.ok && c.ok && d.ok);
        assert_int_equal(a.expected, 2 * total + 2 * total);
        assert_int_equal(b.expected, 2 * total + 4 * total);
        assert_int_equal(c.expected, 2 * total + 2 * before + 4 * (total - before));
        assert_int_equal(d.expected, 2 * total + 4 * before + 2 * (total - before));
    }
    /* Copies of the wrong generation: the last one's everywhere (too many
     * before the cut of a rescale up, too few before one down), or the
     * first one's everywhere. */
    ck_verdict v = rescaled_verdict(&x, 2, up, 1, RS_COPIES_LAST, 0, CK_EXACTLY_ONCE);
    assert_false(v.ok);
    assert_int_equal(v.duplicated, 2 * before);
    assert_int_equal(v.lost + v.unexpected, 0);
    assert_non_null(strstr(v.first_wrong, "sink \"copies\""));
    v = rescaled_verdict(&x, 2, up, 1, RS_COPIES_FIRST, 0, CK_EXACTLY_ONCE);
    assert_false(v.ok);
    assert_int_equal(v.lost, 2 * (total - before));
    v = rescaled_verdict(&x, 2, down, 1, RS_COPIES_LAST, 0, CK_AT_LEAST_ONCE);
    assert_false(v.ok);
    assert_int_equal(v.lost, 2 * before);
    /* Where the run could not say its cut, a record may have the copies of
     * either generation: both pass, more or fewer do not. */
    v = rescaled_verdict(&x, 2, up, 0, RS_RIGHT, 0, CK_EXACTLY_ONCE);
    assert_true(v.ok);
    assert_int_equal(v.expected, 2 * total + 2 * before + 4 * (total - before));
    v = rescaled_verdict(&x, 2, up, 0, RS_COPIES_LAST, 0, CK_EXACTLY_ONCE);
    assert_true(v.ok);
    rescaled_teardown(&x);
}

/* A rescale edge reorders a key's records once any generation has more
 * consumers than producers: a running aggregate behind it is then
 * matched without its values. */
static void test_rescale_edge_generations(void **state)
{
    (void)state;
    static const char *job =
        "{\"name\": \"re\", \"seed\": 3,\n"
        " \"workload\": {\"duration\": \"1 s\", \"rate\": 100, \"keys\": 4, \"partitions\": 4},\n"
        " \"job\": {\"operators\": [\n"
        "   {\"name\": \"src\", \"type\": \"source\", \"parallelism\": 2},\n"
        "   {\"name\": \"m\", \"type\": \"map\", \"partition\": \"rescale\", \"parallelism\": %d},\n"
        "   {\"name\": \"c\", \"type\": \"aggregate\", \"fn\": \"count\", \"parallelism\": 2},\n"
        "   {\"name\": \"cs\", \"type\": \"sink\", \"parallelism\": 2}]}}\n";
    ck_scenario sc[2];
    char text[2048], err[1200];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof(text), job, i ? 4 : 1);
        assert_int_equal(ck_scenario_parse(&sc[i], "re.json", text, err, sizeof(err)), 0);
    }
    ck_verify_gen down[] = {{&sc[0].graph, NULL}}, both[] = {{&sc[0].graph, NULL},
                                                             {&sc[1].graph, NULL}};
    assert_int_equal(ck_verify_grouping_gens(down, 1, 3, CK_EXACTLY_ONCE), CK_GROUPING_EXACT);
    assert_int_equal(ck_verify_grouping_gens(both, 2, 3, CK_EXACTLY_ONCE), CK_GROUPING_RUNNING);
    both[0].g = &sc[1].graph, both[1].g = &sc[0].graph;
    assert_int_equal(ck_verify_grouping_gens(both, 2, 3, CK_EXACTLY_ONCE), CK_GROUPING_RUNNING);
    /* generations of another job are refused */
    ck_scenario other;
    snprintf(text, sizeof(text), three_sinks, 100, 4);
    assert_int_equal(ck_scenario_parse(&other, "o.json", text, err, sizeof(err)), 0);
    ck_verify_gen mixed[] = {{&sc[0].graph, NULL}, {&other.graph, NULL}};
    ck_workload w;
    assert_int_equal(ck_workload_generate(&w, &sc[0].workload, 1), 0);
    ck_sinkout o;
    ck_sinkout_init(&o);
    ck_verdict v;
    assert_int_equal(ck_verify_gens(mixed, 2, &w, &o, CK_EXACTLY_ONCE, 0, &v, err, sizeof(err)),
                     CK_EINVAL);
    assert_non_null(strstr(err, "generation 1"));
    ck_sinkout_free(&o);
    ck_workload_free(&w);
    ck_scenario_free(&other);
    ck_scenario_free(&sc[0]);
    ck_scenario_free(&sc[1]);
}

/*
 * A key's state lost or doubled at a rescale, seen from the output alone,
 * under both guarantees and on both kinds of running count (exact behind
 * a hash edge; behind a rebalance, by its bounds and final value). Each
 * names the sink and the key.
 */
static void test_rescale_state_damage(void **state)
{
    (void)state;
    rescaled x;
    rescaled_setup(&x);
    uint32_t klen;
    const char *kt = ck_workload_key(&x.w, x.victim, &klen);
    char victim[80];
    snprintf(victim, sizeof(victim), "key \"%.*s\"", (int)klen, kt);
    const int up[] = {2, 4}, down[] = {4, 2};
    for (int g = CK_EXACTLY_ONCE; g <= CK_AT_LEAST_ONCE; g++) {
        ck_guarantee gu = (ck_guarantee)g;
        /* a correct rescaled output passes, up and down */
        assert_true(rescaled_verdict(&x, 2, up, 1, RS_RIGHT, 0, gu).ok);
        assert_true(rescaled_verdict(&x, 2, down, 1, RS_RIGHT, 0, gu).ok);
        for (int sinks = 1; sinks <= 2; sinks++) {
            const char *sink = sinks == 1 ? "sink \"counts\"" : "sink \"rcounts\"";
            /* (a) a dropped key group: the count restarts after the cut */
            ck_verdict v = rescaled_verdict(&x, 2, up, 1, RS_RESTART, sinks, gu);
            assert_false(v.ok);
            assert_non_null(strstr(v.first_wrong, victim));
            assert_non_null(strstr(v.first_wrong, sink));
            if (sinks == 2)
                assert_int_equal(v.wrong_totals, 1);
            /* (b) a handle restored twice: the count jumps (at least once, a
             * count may run high: replays) */
            v = rescaled_verdict(&x, 2, up, 1, RS_DOUBLE, sinks, gu);
            assert_int_equal(v.ok, gu == CK_AT_LEAST_ONCE);
            if (gu == CK_EXACTLY_ONCE) {
                assert_true(v.unexpected > 0);
                assert_non_null(strstr(v.first_wrong, victim));
                assert_non_null(strstr(v.first_wrong, sink));
            }
            /* (c) a removed subtask's pending transaction lost */
            v = rescaled_verdict(&x, 2, down, 1, RS_TXN_LOST, sinks, gu);
            assert_false(v.ok);
            assert_true(v.lost > 0);
            assert_non_null(strstr(v.first_wrong, sink));
            /* (d) a record replayed to a subtask that does not own its key,
             * instead of its owner or as well */
            v = rescaled_verdict(&x, 2, up, 1, RS_NONOWNER, sinks, gu);
            assert_false(v.ok);
            assert_non_null(strstr(v.first_wrong, victim));
            v = rescaled_verdict(&x, 2, up, 1, RS_BOTH, sinks, gu);
            assert_int_equal(v.ok, sinks == 2 && gu == CK_AT_LEAST_ONCE);
        }
    }
    rescaled_teardown(&x);
}

/* A window's result behind a broadcast edge whose consumer a rescale
 * changed: a watermark fires it in whichever generation passed its end,
 * which the run does not say, so it may have the copies of either (2 or
 * 4), not fewer, not more. */
static void test_rescale_window_copies(void **state)
{
    (void)state;
    static const char *job =
        "{\"name\": \"wb\", \"seed\": 9,\n"
        " \"workload\": {\"duration\": \"1 s\", \"rate\": 500, \"keys\": 5, \"partitions\": 2},\n"
        " \"config\": {\"parallelism.default\": %d},\n"
        " \"job\": {\"operators\": [\n"
        "   {\"name\": \"src\", \"type\": \"source\"},\n"
        "   {\"name\": \"win\", \"type\": \"window\", \"size\": \"100 ms\", \"fn\": \"count\"},\n"
        "   {\"name\": \"bc\", \"type\": \"map\", \"partition\": \"broadcast\"},\n"
        "   {\"name\": \"ws\", \"type\": \"sink\"}]}}\n";
    ck_scenario sc[2];
    char text[2048], err[1200];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof(text), job, 2 << i);
        assert_int_equal(ck_scenario_parse(&sc[i], "wb.json", text, err, sizeof(err)), 0);
    }
    fixture f;
    memset(&f, 0, sizeof(f));
    assert_int_equal(ck_workload_generate(&f.w, &sc[0].workload, sc[0].seed), 0);
    int64_t nwin = 1000 / WINDOW_MS + 1, keys = f.w.nkeys;
    int64_t *win = calloc((size_t)(keys * nwin), sizeof(*win));
    assert_non_null(win);
    for (int p = 0; p < f.w.spec.partitions; p++)
        for (int64_t i = 0; i < f.w.parts[p].n; i++)
            win[f.w.parts[p].key[i] * nwin + f.w.parts[p].ts[i] / WINDOW_MS]++;
    int64_t from[2] = {f.w.parts[0].n / 2, f.w.parts[1].n / 2};
    ck_verify_gen gens[] = {{&sc[0].graph, NULL}, {&sc[1].graph, from}};
    /* the copies of every result: its generation's (early windows fired by
     * the first), then one too few, then one too many */
    for (int how = 0; how < 3; how++) {
        ck_sinkout o;
        ck_sinkout_init(&o);
        int64_t results = 0;
        for (int64_t k = 0; k < keys; k++)
            for (int64_t x = 0; x < nwin; x++) {
                if (!win[k * nwin + x])
                    continue;
                int copies = x < nwin / 2 ? 2 : 4;
                if (how == 1 && results == 0)
                    copies = 1;
                if (how == 2 && results == 0)
                    copies = 5;
                results++;
                orec r = {3, (uint32_t)k, (x + 1) * WINDOW_MS - 1, win[k * nwin + x],
                          CK_PROV_WINDOW};
                for (int c = 0; c < copies; c++)
                    put(&o, &f, r, c);
            }
        ck_verdict v;
        assert_int_equal(
            ck_verify_gens(gens, 2, &f.w, &o, CK_EXACTLY_ONCE, 0, &v, err, sizeof(err)), 0);
        assert_true(v.received == v.expected - v.lost + v.duplicated + v.unexpected);
        assert_int_equal(v.ok, how == 0);
        assert_int_equal(v.lost, how == 1);
        assert_int_equal(v.duplicated, how == 2);
        if (how)
            assert_non_null(strstr(v.first_wrong, "the window ending at event time"));
        ck_sinkout_free(&o);
    }
    free(win);
    ck_workload_free(&f.w);
    ck_scenario_free(&sc[0]);
    ck_scenario_free(&sc[1]);
}

/*
 * A whole run: a keyed count behind a broadcast edge whose consumer is
 * rescaled 2 -> 4 -> 2 -> 4 -> 2, via savepoints and checkpoints. Its
 * counts are exactly once only if the verdict gives each record the
 * copies of the generation that processed it, from each rescale's cut,
 * which run.json records: per source partition, rising from one rescale
 * to the next.
 */
static void test_rescaled_run(void **state)
{
    (void)state;
    char args[600], dir[200];
    snprintf(dir, sizeof(dir), "%s/rb", tmp);
    snprintf(args, sizeof(args), "run tests/scenarios/rescale-broadcast.json --out %s --quiet",
             dir);
    assert_int_equal(chandy("rb", args), 0);
    cJSON *run = load_run("rb");
    const cJSON *c = cJSON_GetObjectItem(run, "correctness");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "first_wrong")));
    assert_string_equal(cJSON_GetObjectItem(c, "guarantee")->valuestring, "exactly-once");
    assert_true(num(run, "correctness", "expected") > 0);
    const cJSON *rs = cJSON_GetObjectItem(run, "rescales");
    assert_int_equal(cJSON_GetArraySize(rs), 4);
    double last[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        const cJSON *cut = cJSON_GetObjectItem(cJSON_GetArrayItem(rs, i), "cut");
        assert_true(cJSON_IsArray(cut));
        assert_int_equal(cJSON_GetArraySize(cut), 4);
        for (int p = 0; p < 4; p++) {
            double at = cJSON_GetArrayItem(cut, p)->valuedouble;
            assert_true(at >= last[p]);
            last[p] = at;
        }
    }
    assert_true(last[0] > 0);
    cJSON_Delete(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_right_output),
        cmocka_unit_test(test_exact_damage),
        cmocka_unit_test(test_at_least_once),
        cmocka_unit_test(test_counters_do_not_wrap),
        cmocka_unit_test(test_identical_records),
        cmocka_unit_test(test_reordering_edges),
        cmocka_unit_test(test_every_grouping),
        cmocka_unit_test(test_malformed_output),
        cmocka_unit_test(test_rescale_reference),
        cmocka_unit_test(test_rescale_edge_generations),
        cmocka_unit_test(test_rescale_state_damage),
        cmocka_unit_test(test_rescale_window_copies),
        cmocka_unit_test_setup_teardown(test_rescaled_run, ru_setup, ru_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
