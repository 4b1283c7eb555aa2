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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_right_output),
        cmocka_unit_test(test_exact_damage),
        cmocka_unit_test(test_at_least_once),
        cmocka_unit_test(test_counters_do_not_wrap),
        cmocka_unit_test(test_identical_records),
        cmocka_unit_test(test_reordering_edges),
        cmocka_unit_test(test_malformed_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
