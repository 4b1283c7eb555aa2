/*
 * test_injected.c - the known answer of output faults (verify/injected.h):
 * for each fault (a transaction duplicated, dropped, a value changed) on
 * each kind of sink (records passed through, a running count in order,
 * running counts behind a reordering edge, windows over those), the
 * counts it predicts, worked out here by hand, and the output check
 * (verify.c) finding exactly those; at least once, the bounds; and the
 * judge naming the count that is off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "element.h"
#include "error.h"
#include "injected.h"
#include "operator.h"
#include "scenario.h"

static const char *job =
    "{\"name\": \"i\", \"seed\": 5,\n"
    " \"workload\": {\"duration\": \"1 s\", \"rate\": 400, \"keys\": 5, \"partitions\": 2},\n"
    " \"config\": {\"parallelism.default\": 2},\n"
    " \"job\": {\"operators\": [\n"
    "   {\"name\": \"src\", \"type\": \"source\"},\n"
    "   {\"name\": \"pass\", \"type\": \"sink\"},\n"
    "   {\"name\": \"cnt\", \"type\": \"aggregate\", \"fn\": \"count\", \"input\": \"src\"},\n"
    "   {\"name\": \"counts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"spread\", \"type\": \"map\", \"input\": \"src\", \"partition\": \"rebalance\"},\n"
    "   {\"name\": \"rcnt\", \"type\": \"aggregate\", \"fn\": \"count\"},\n"
    "   {\"name\": \"rcounts\", \"type\": \"sink\"},\n"
    "   {\"name\": \"rsum\", \"type\": \"window\", \"size\": \"500 ms\", \"fn\": \"sum\",\n"
    "    \"input\": \"rcnt\"},\n"
    "   {\"name\": \"rsums\", \"type\": \"sink\"}]}}\n";

enum { PASS = 1, COUNTS = 3, RCOUNTS = 6, RSUMS = 8 };

typedef struct orec {
    int sink;
    uint32_t key;
    int64_t ts, value;
    uint64_t prov;
} orec;

static ck_scenario sc;
static ck_workload wl;
static orec *out;
static int64_t nout;

/* The job's right output, in the reference's order (partition by
 * partition, then the windows). */
static void build(void)
{
    char err[1200];
    assert_int_equal(ck_scenario_parse(&sc, "i.json", job, err, sizeof(err)), 0);
    assert_int_equal(ck_workload_generate(&wl, &sc.workload, sc.seed), 0);
    int64_t keys = wl.nkeys, nwin = 4;
    int64_t *cnt = calloc((size_t)keys, sizeof(*cnt));
    int64_t *sum = calloc((size_t)(keys * nwin), sizeof(*sum));
    out = malloc((size_t)(3 * wl.total + keys * nwin) * sizeof(*out));
    assert_true(cnt && sum && out);
    for (int p = 0; p < wl.spec.partitions; p++)
        for (int64_t i = 0; i < wl.parts[p].n; i++) {
            uint32_t k = wl.parts[p].key[i];
            int64_t ts = wl.parts[p].ts[i];
            uint64_t pv = (uint64_t)p << 40 | (uint64_t)i;
            cnt[k]++;
            out[nout++] = (orec){PASS, k, ts, wl.parts[p].value[i], pv};
            out[nout++] = (orec){COUNTS, k, ts, cnt[k], pv};
            out[nout++] = (orec){RCOUNTS, k, ts, cnt[k], pv};
            assert_true(ts >= 0 && ts / 500 < nwin);
            sum[k * nwin + ts / 500] += cnt[k];
        }
    for (int64_t x = 0; x < nwin; x++)
        for (int64_t k = 0; k < keys; k++)
            if (sum[k * nwin + x])
                out[nout++] = (orec){RSUMS, (uint32_t)k, (x + 1) * 500 - 1, sum[k * nwin + x],
                                     CK_PROV_WINDOW};
    free(cnt);
    free(sum);
}

static void put(ck_sinkout *o, orec r, int sub)
{
    ck_rec rec = {.ts = r.ts, .value = r.value, .prov = r.prov};
    rec.key = ck_workload_key(&wl, r.key, &rec.klen);
    uint8_t buf[256];
    size_t n = ck_rec_size(&rec, 0);
    ck_rec_encode(buf, &rec, 0, n);
    assert_int_equal(ck_sinkout_append(o, ck_sink_id(r.sink, sub), buf, n), 0);
}

/* The last output of a sink (its key's final running value, for rcounts)
 * and one before it of the same key (not the final). */
static void pick(int sink, int64_t *last, int64_t *earlier)
{
    *last = *earlier = -1;
    for (int64_t i = nout - 1; i >= 0 && *last < 0; i--)
        if (out[i].sink == sink)
            *last = i;
    for (int64_t i = *last - 1; i >= 0 && *earlier < 0; i--)
        if (out[i].sink == sink && out[i].key == out[*last].key)
            *earlier = i;
    assert_true(*last >= 0 && *earlier >= 0);
}

typedef struct outcome {
    ck_injected e;
    ck_verdict v;
    int judged;
} outcome;

/*
 * The output with fault `kind` on the records out[from..to] of sink
 * `sink` (the others of the range untouched), under g: what the known
 * answer expects, what the check finds, and whether they agree.
 */
static outcome run_case(int kind, int sink, const int64_t *hit, int nhit, ck_guarantee g,
                        int replay)
{
    ck_sinkout o, touched;
    ck_sinkout_init(&o);
    ck_sinkout_init(&touched);
    for (int64_t i = 0; i < nout; i++) {
        int is_hit = 0;
        for (int h = 0; h < nhit; h++)
            is_hit |= hit[h] == i;
        orec r = out[i];
        if (!is_hit) {
            put(&o, r, 0);
            if (replay && r.sink == sink && i % 7 == 0)
                put(&o, r, 1); /* at least once: a copy replayed */
            continue;
        }
        put(&touched, r, 1);
        if (kind == CK_SINKFS_DROP)
            continue;
        if (kind == CK_SINKFS_CORRUPT)
            r.value = ck_sinkfs_corrupted(r.value);
        put(&o, r, 1);
        if (kind == CK_SINKFS_DUPLICATE)
            put(&o, r, 1);
    }
    outcome c;
    char err[300], why[600];
    ck_injected_fault f = {{.kind = kind, .sink = ck_sink_id(sink, 1), .txn = 3,
                            .records = (uint64_t)nhit},
                           &touched};
    assert_int_equal(ck_verify(&sc.graph, &wl, &o, g, 0, &c.v, err, sizeof(err)), 0);
    assert_int_equal(ck_injected_expect(&sc.graph, &wl, &o, g, 0, &f, 1, &c.e, err, sizeof(err)),
                     0);
    c.judged = ck_injected_judge(&c.e, &c.v, 1, why, sizeof(why));
    if (!c.judged)
        fprintf(stderr, "sink %d kind %d: %s\n", sink, kind, why);
    ck_sinkout_free(&o);
    ck_sinkout_free(&touched);
    return c;
}

static void expect_counts(outcome c, uint64_t dup, uint64_t lost, uint64_t unexp,
                          uint64_t wrong)
{
    assert_int_equal(c.e.duplicated, dup);
    assert_int_equal(c.e.lost, lost);
    assert_int_equal(c.e.unexpected, unexp);
    assert_int_equal(c.e.wrong_totals, wrong);
    assert_true(c.judged);
}

/* Exactly once, every sink kind, every fault: the counts by hand, and the
 * check's the same. */
static void test_exactly_once(void **state)
{
    (void)state;
    const ck_guarantee EO = CK_EXACTLY_ONCE;
    static const int sinks[] = {PASS, COUNTS, RCOUNTS};
    for (size_t s = 0; s < 3; s++) {
        int64_t last, earlier, both[2];
        pick(sinks[s], &last, &earlier);
        both[0] = earlier;
        both[1] = last;
        int running = sinks[s] == RCOUNTS;
        expect_counts(run_case(CK_SINKFS_DUPLICATE, sinks[s], both, 2, EO, 0), 2, 0, 0, 0);
        /* dropping the final running count's record leaves the key without it */
        expect_counts(run_case(CK_SINKFS_DROP, sinks[s], both, 2, EO, 0), 0, 2, 0, running);
        expect_counts(run_case(CK_SINKFS_DROP, sinks[s], &earlier, 1, EO, 0), 0, 1, 0, 0);
        expect_counts(run_case(CK_SINKFS_CORRUPT, sinks[s], &last, 1, EO, 0), 0, 1, 1, running);
        expect_counts(run_case(CK_SINKFS_CORRUPT, sinks[s], &earlier, 1, EO, 0), 0, 1, 1, 0);
    }
    /* A window over running counts: its value is never checked. */
    int64_t last, earlier;
    pick(RSUMS, &last, &earlier);
    expect_counts(run_case(CK_SINKFS_CORRUPT, RSUMS, &last, 1, EO, 0), 0, 0, 0, 0);
    expect_counts(run_case(CK_SINKFS_DROP, RSUMS, &last, 1, EO, 0), 0, 1, 0, 0);
    expect_counts(run_case(CK_SINKFS_DUPLICATE, RSUMS, &last, 1, EO, 0), 1, 0, 0, 0);
}

/* At least once, with replayed copies beside the damage: unexpected
 * exactly, duplicated at least, lost and wrong totals at most. */
static void test_at_least_once(void **state)
{
    (void)state;
    const ck_guarantee ALO = CK_AT_LEAST_ONCE;
    static const int sinks[] = {PASS, COUNTS, RCOUNTS};
    for (size_t s = 0; s < 3; s++) {
        int64_t last, earlier;
        pick(sinks[s], &last, &earlier);
        for (int kind = CK_SINKFS_DUPLICATE; kind <= CK_SINKFS_CORRUPT; kind++) {
            outcome c = run_case(kind, sinks[s], &earlier, 1, ALO, 1);
            assert_true(c.judged);
            assert_true(c.v.duplicated > c.e.duplicated); /* the replayed copies too */
            assert_int_equal(c.v.unexpected, kind == CK_SINKFS_CORRUPT);
            assert_int_equal(c.e.unexpected, kind == CK_SINKFS_CORRUPT);
        }
    }
}

/* The judge names the count that is off, and allows what the guarantee
 * allows. */
static void test_judge(void **state)
{
    (void)state;
    char why[600];
    ck_injected e = {.faults = 1, .duplicated = 40, .lost = 3, .unexpected = 1,
                     .wrong_totals = 1};
    ck_verdict v = {.guarantee = CK_EXACTLY_ONCE, .duplicated = 40, .lost = 3, .unexpected = 1,
                    .wrong_totals = 1};
    assert_true(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "exactly the damage the 1 output fault injected"));
    v.duplicated = 0; /* duplicates behind a reordering edge not counted */
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "counted 0 duplicated where the output faults injected 40"));
    v.duplicated = 40;
    v.lost = 4;
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "counted 4 lost where the output faults injected 3"));
    assert_true(ck_injected_judge(&e, &v, 0, why, sizeof(why))); /* partial: more is lost */
    v.lost = 2;
    assert_false(ck_injected_judge(&e, &v, 0, why, sizeof(why)));
    v.lost = 3;
    v.wrong_totals = 0;
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "wrong totals"));
    v.wrong_totals = 1;
    v.unexpected = 2;
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "counted 2 unexpected"));
    /* At least once: copies beyond, and fewer lost, are allowed. */
    v = (ck_verdict){.guarantee = CK_AT_LEAST_ONCE, .duplicated = 50, .lost = 1, .unexpected = 1};
    assert_true(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    v.duplicated = 39;
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "injected at least 40"));
    v.duplicated = 40;
    v.lost = 4;
    assert_false(ck_injected_judge(&e, &v, 1, why, sizeof(why)));
    assert_non_null(strstr(why, "injected at most 3"));
    assert_null(strchr(why, '\n'));
}

int main(void)
{
    build();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exactly_once),
        cmocka_unit_test(test_at_least_once),
        cmocka_unit_test(test_judge),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(out);
    ck_workload_free(&wl);
    ck_scenario_free(&sc);
    return rc;
}
