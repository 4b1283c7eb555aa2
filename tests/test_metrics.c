/*
 * test_metrics.c - latency histograms (precision, merge), per-second
 * series and the encoding subtasks send to the job manager, including
 * truncated and corrupted blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "error.h"
#include "metrics.h"
#include "rng.h"

static void test_quantiles(void **state)
{
    (void)state;
    ck_hist *h = calloc(1, sizeof(*h));
    for (int64_t v = 1; v <= 100000; v++)
        ck_hist_add(h, v * 1000); /* 1 us .. 100 ms, uniform */
    int64_t p50 = ck_hist_quantile(h, 0.5), p99 = ck_hist_quantile(h, 0.99);
    /* Within the histogram's 1/32 relative precision. */
    assert_true(p50 > 50000000 * 0.96 && p50 < 50000000 * 1.04);
    assert_true(p99 > 99000000 * 0.96 && p99 < 99000000 * 1.04);
    assert_true(h->max == 100000000);
    assert_true(ck_hist_quantile(h, 1.0) <= h->max);
    ck_hist *g = calloc(1, sizeof(*g));
    ck_hist_add(g, 5);
    ck_hist_merge(h, g);
    assert_int_equal(h->n, 100001);
    free(h);
    free(g);
}

static void test_encode_roundtrip_and_corruption(void **state)
{
    (void)state;
    ck_metrics m;
    ck_metrics_init(&m);
    m.task.vertex = 3;
    m.task.records_in = 12345;
    m.task.busy_ns = 777;
    ck_rng r;
    ck_rng_init(&r, 1, 1);
    for (int i = 0; i < 5000; i++) {
        ck_time t = (ck_time)ck_rng_below(&r, 7 * CK_NS_PER_S);
        assert_int_equal(ck_metrics_in(&m, t, 2), 0);
        assert_int_equal(ck_metrics_out(&m, t, (int64_t)ck_rng_below(&r, 1000000000)), 0);
    }
    uint8_t *buf;
    size_t len;
    assert_int_equal(ck_metrics_encode(&m, &buf, &len), 0);
    ck_metrics d;
    assert_int_equal(ck_metrics_decode(&d, buf, len), 0);
    assert_int_equal(d.task.vertex, 3);
    assert_int_equal(d.task.records_in, 12345);
    assert_int_equal(d.nsec, m.nsec);
    for (uint32_t s = 0; s < m.nsec; s++) {
        assert_int_equal(d.sec[s].in, m.sec[s].in);
        assert_int_equal(d.sec[s].out, m.sec[s].out);
        assert_int_equal(d.sec[s].lat->n, m.sec[s].lat->n);
        assert_true(ck_hist_quantile(d.sec[s].lat, 0.99) == ck_hist_quantile(m.sec[s].lat, 0.99));
    }
    /* Merging doubles the counts. */
    ck_metrics sum;
    ck_metrics_init(&sum);
    assert_int_equal(ck_metrics_merge(&sum, &m), 0);
    assert_int_equal(ck_metrics_merge(&sum, &d), 0);
    ck_hist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_int_equal(ck_metrics_total_latency(&sum, a), 0);
    assert_int_equal(ck_metrics_total_latency(&m, b), 0);
    assert_int_equal(b->n, 5000);
    assert_int_equal(a->n, 2 * b->n);
    free(a);
    free(b);
    ck_metrics_free(&sum);
    ck_metrics_free(&d);
    /* Every truncation is refused. */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 7)
        assert_int_equal(ck_metrics_decode(&d, buf, cut), CK_ECORRUPT);
    /* Random damage never crashes; it decodes or is refused. */
    for (int k = 0; k < 3000; k++) {
        uint8_t *bad = malloc(len);
        memcpy(bad, buf, len);
        for (int j = 0; j < 4; j++)
            bad[ck_rng_below(&r, len)] = (uint8_t)ck_rng_next(&r);
        int rc = ck_metrics_decode(&d, bad, len);
        assert_true(rc == 0 || rc == CK_ECORRUPT);
        if (rc == 0)
            ck_metrics_free(&d);
        free(bad);
    }
    free(buf);
    ck_metrics_free(&m);
}

/* Found by reading the decoder while fuzzing it: each per-second
 * histogram decodes to 5 KiB from a dozen bytes, so a block of a peer
 * could make the job manager allocate gigabytes. At most
 * CK_METRICS_MAX_HISTS are accepted. */
static void test_decode_bounds_histograms(void **state)
{
    (void)state;
    for (uint32_t nsec = CK_METRICS_MAX_HISTS; nsec <= CK_METRICS_MAX_HISTS + 1; nsec++) {
        ck_metrics m;
        ck_metrics_init(&m);
        for (uint32_t s = 0; s < nsec; s++)
            assert_int_equal(ck_metrics_out(&m, (ck_time)s * CK_NS_PER_S, 1000), 0);
        uint8_t *buf;
        size_t len;
        assert_int_equal(ck_metrics_encode(&m, &buf, &len), 0);
        ck_metrics d;
        int rc = ck_metrics_decode(&d, buf, len);
        if (nsec <= CK_METRICS_MAX_HISTS) {
            assert_int_equal(rc, 0);
            assert_int_equal(d.nsec, nsec);
            ck_metrics_free(&d);
        } else {
            assert_int_equal(rc, CK_ECORRUPT);
        }
        free(buf);
        ck_metrics_free(&m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_encode_roundtrip_and_corruption),
        cmocka_unit_test(test_decode_bounds_histograms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
