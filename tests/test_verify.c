/*
 * test_verify.c - the output check: sink outputs written here by hand from
 * the generated input (not by the engine, not by the reference), then
 * damaged in known ways; the verdict must count exactly that damage.
 * Enough records that the comparison partitions them (more than a
 * partition's worth), and a workload with many identical records.
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

/* source -> sink, or source -> count -> sink; keys and rate set per test. */
static const char *passthrough =
    "{\"name\": \"v\", \"seed\": 5,\n"
    " \"workload\": {\"duration\": \"2 s\", \"rate\": %d, \"keys\": %d, \"partitions\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"out\", \"type\": \"sink\"}]}}\n";
static const char *counting =
    "{\"name\": \"v\", \"seed\": 5,\n"
    " \"workload\": {\"duration\": \"2 s\", \"rate\": %d, \"keys\": %d, \"partitions\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\"},\n"
    "   {\"name\": \"out\", \"type\": \"sink\"}]}}\n";

typedef struct fixture {
    ck_scenario sc;
    ck_workload w;
    /* the right output, in input order: key id, ts, value */
    int64_t n;
    uint32_t *key;
    int64_t *ts, *value;
} fixture;

static void setup(fixture *f, const char *fmt, int rate, int keys, int count)
{
    char text[2048], err[1200];
    snprintf(text, sizeof(text), fmt, rate, keys);
    memset(f, 0, sizeof(*f));
    assert_int_equal(ck_scenario_parse(&f->sc, "v.json", text, err, sizeof(err)), 0);
    assert_int_equal(ck_workload_generate(&f->w, &f->sc.workload, f->sc.seed), 0);
    f->key = malloc((size_t)f->w.total * sizeof(*f->key));
    f->ts = malloc((size_t)f->w.total * sizeof(*f->ts));
    f->value = malloc((size_t)f->w.total * sizeof(*f->value));
    int64_t *acc = calloc((size_t)keys, sizeof(*acc));
    assert_non_null(acc);
    for (int p = 0; p < f->w.spec.partitions; p++) {
        const ck_wl_part *part = &f->w.parts[p];
        for (int64_t i = 0; i < part->n; i++, f->n++) {
            f->key[f->n] = part->key[i];
            f->ts[f->n] = part->ts[i];
            f->value[f->n] = count ? ++acc[part->key[i]] : part->value[i];
        }
    }
    free(acc);
    assert_int_equal(f->n, f->w.total);
}

static void teardown(fixture *f)
{
    free(f->key);
    free(f->ts);
    free(f->value);
    ck_workload_free(&f->w);
    ck_scenario_free(&f->sc);
}

static void put(ck_sinkout *o, const fixture *f, int64_t i, int64_t value)
{
    ck_rec r = {.ts = f->ts[i], .value = value};
    r.key = ck_workload_key(&f->w, f->key[i], &r.klen);
    uint8_t buf[256];
    size_t n = ck_rec_size(&r, 0);
    ck_rec_encode(buf, &r, 0, n);
    int sink = f->sc.graph.spec.nops - 1;
    assert_int_equal(ck_sinkout_append(o, ck_sink_id(sink, 0), 0, buf, n), 0);
}

enum { NONE, DROP, DUP, CHANGE };

/* Writes the right output with one record (index at) damaged, and checks. */
static ck_verdict check(const fixture *f, int damage, int64_t at, ck_guarantee g, int partial)
{
    ck_sinkout o;
    ck_sinkout_init(&o);
    for (int64_t i = 0; i < f->n; i++) {
        if (i == at && damage == DROP)
            continue;
        put(&o, f, i, i == at && damage == CHANGE ? f->value[i] + 1000000 : f->value[i]);
        if (i == at && damage == DUP)
            put(&o, f, i, f->value[i]);
    }
    ck_verdict v;
    char err[300];
    assert_int_equal(ck_verify(&f->sc.graph, &f->w, &o, g, partial, &v, err, sizeof(err)), 0);
    ck_sinkout_free(&o);
    return v;
}

static void test_exact_passthrough(void **state)
{
    (void)state;
    fixture f;
    setup(&f, passthrough, 50000, 7, 0); /* 100 000 records */
    ck_verdict v = check(&f, NONE, 0, CK_EXACTLY_ONCE, 0);
    assert_true(v.ok);
    assert_int_equal(v.expected, f.n);
    assert_int_equal(v.received, f.n);
    assert_int_equal(v.lost + v.duplicated + v.unexpected, 0);

    v = check(&f, DROP, 777, CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.duplicated + v.unexpected, 0);
    assert_int_equal(v.received, f.n - 1);

    v = check(&f, DUP, f.n - 1, CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.duplicated, 1);
    assert_int_equal(v.lost + v.unexpected, 0);

    v = check(&f, CHANGE, 12345, CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.unexpected, 1);
    assert_int_equal(v.duplicated, 0);

    /* Part of the output (a savepoint cut the run): missing is allowed... */
    v = check(&f, DROP, 0, CK_EXACTLY_ONCE, 1);
    assert_true(v.ok);
    assert_int_equal(v.lost, 1);
    /* ...wrong is not. */
    v = check(&f, CHANGE, 0, CK_EXACTLY_ONCE, 1);
    assert_false(v.ok);
    teardown(&f);
}

/* One key at 100 000 records/s: values 1..100 in 1 ms ticks, so many
 * records are identical; each occurrence still counts. */
static void test_identical_records(void **state)
{
    (void)state;
    fixture f;
    setup(&f, passthrough, 100000, 1, 0);
    int64_t same = -1;
    for (int64_t i = 1; i < f.n && same < 0; i++)
        for (int64_t j = i - 1; j >= 0 && f.ts[j] == f.ts[i] && same < 0; j--)
            if (f.value[j] == f.value[i])
                same = i;
    assert_true(same > 0); /* the workload has identical records */
    assert_true(check(&f, NONE, 0, CK_EXACTLY_ONCE, 0).ok);
    ck_verdict v = check(&f, DROP, same, CK_EXACTLY_ONCE, 0);
    assert_int_equal(v.lost, 1);
    assert_int_equal(v.duplicated + v.unexpected, 0);
    v = check(&f, DUP, same, CK_EXACTLY_ONCE, 0);
    assert_int_equal(v.duplicated, 1);
    assert_int_equal(v.lost + v.unexpected, 0);
    teardown(&f);
}

/* A running count at least once: compared per key; a replay overshoots. */
static void test_at_least_once_groups(void **state)
{
    (void)state;
    fixture f;
    setup(&f, counting, 20000, 50, 1); /* 40 000 records */
    ck_verdict v = check(&f, NONE, 0, CK_AT_LEAST_ONCE, 0);
    assert_true(v.ok);
    assert_int_equal(v.expected, f.n);
    assert_int_equal(v.lost + v.duplicated + v.unexpected, 0);

    /* A middle output missing: a later output of its key covers it. */
    int64_t mid = f.n / 2;
    v = check(&f, DROP, mid, CK_AT_LEAST_ONCE, 0);
    assert_true(v.ok);
    assert_int_equal(v.lost, 0);
    /* Exactly once it is lost. */
    v = check(&f, DROP, mid, CK_EXACTLY_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);

    /* The last output of a key missing: nothing reached its count. */
    int64_t last = f.n - 1;
    v = check(&f, DROP, last, CK_AT_LEAST_ONCE, 0);
    assert_false(v.ok);
    assert_int_equal(v.lost, 1);

    /* An output counted twice (at least once, after a replay): allowed, counted. */
    v = check(&f, DUP, mid, CK_AT_LEAST_ONCE, 0);
    assert_true(v.ok);
    assert_int_equal(v.duplicated, 1);

    /* A key the reference never had is unexpected whatever the guarantee. */
    ck_sinkout o;
    ck_sinkout_init(&o);
    for (int64_t i = 0; i < f.n; i++)
        put(&o, &f, i, f.value[i]);
    ck_rec r = {.ts = 1, .value = 1, .key = "no-such-key", .klen = 11};
    uint8_t buf[128];
    size_t n = ck_rec_size(&r, 0);
    ck_rec_encode(buf, &r, 0, n);
    assert_int_equal(ck_sinkout_append(&o, ck_sink_id(2, 0), 0, buf, n), 0);
    char err[300];
    assert_int_equal(ck_verify(&f.sc.graph, &f.w, &o, CK_AT_LEAST_ONCE, 0, &v, err, sizeof(err)), 0);
    assert_false(v.ok);
    assert_int_equal(v.unexpected, 1);
    assert_int_equal(v.lost, 0);
    ck_sinkout_free(&o);
    teardown(&f);
}

static void test_malformed_output(void **state)
{
    (void)state;
    fixture f;
    setup(&f, passthrough, 1000, 3, 0);
    ck_sinkout o;
    ck_sinkout_init(&o);
    put(&o, &f, 0, f.value[0]);
    const uint8_t junk[] = {40, 0, 0, 0, CK_EL_RECORD, 1, 2, 3};
    assert_int_equal(ck_sinkout_append(&o, ck_sink_id(1, 0), 0, junk, sizeof(junk)), 0);
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
        cmocka_unit_test(test_exact_passthrough),
        cmocka_unit_test(test_identical_records),
        cmocka_unit_test(test_at_least_once_groups),
        cmocka_unit_test(test_malformed_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
