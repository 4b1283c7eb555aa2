/*
 * test_workload.c - the generated input (workload/workload.h): partitions
 * that end at times of their own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "workload.h"

static void spec_of(ck_workload_spec *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->topic, sizeof(s->topic), "t");
    s->duration = 2 * CK_NS_PER_S;
    s->steps[0].rps = 5000;
    s->nsteps = 1;
    s->partitions = 4;
    s->keys = 100;
    s->record_bytes = 100;
}

/* A partition that ends early holds the records it would hold without
 * the end, up to its end, and none after; the other partitions hold
 * exactly what they would; the topic's total counts what was appended.
 * An end list of the wrong length is refused. */
static void test_partition_ends(void **state)
{
    (void)state;
    ck_workload_spec s;
    spec_of(&s);
    ck_workload all, ends;
    assert_int_equal(ck_workload_generate(&all, &s, 7), CK_OK);
    s.npart_ends = 4;
    s.part_end[0] = 0;                      /* no record at all */
    s.part_end[1] = 500 * CK_NS_PER_MS;
    s.part_end[2] = 2 * CK_NS_PER_S;        /* the whole duration */
    s.part_end[3] = 1500 * CK_NS_PER_MS;
    assert_int_equal(ck_workload_generate(&ends, &s, 7), CK_OK);
    int64_t total = 0;
    for (int p = 0; p < 4; p++) {
        const ck_wl_part *a = &all.parts[p], *e = &ends.parts[p];
        int64_t n = 0;
        while (n < a->n && a->at[n] < s.part_end[p])
            n++;
        assert_true(e->n == n);
        assert_true(p != 2 || e->n == a->n);
        assert_true(p != 0 || e->n == 0);
        for (int64_t i = 0; i < n; i++)
            assert_true(e->at[i] == a->at[i] && e->key[i] == a->key[i] &&
                        e->value[i] == a->value[i] && e->ts[i] == a->ts[i]);
        total += e->n;
    }
    assert_true(total == ends.total && total < all.total);
    assert_true(ends.parts[1].n > 0 && ends.parts[3].n > ends.parts[1].n / 2);
    ck_workload_free(&all);
    ck_workload_free(&ends);
    s.npart_ends = 3;
    assert_int_equal(ck_workload_generate(&ends, &s, 7), CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
