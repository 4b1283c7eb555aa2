/*
 * test_heapstate.c - the heap keyed-state backend against a plain array
 * model: random upserts, lookups and removals (which exercise
 * backward-shift deletion), per-key-group iteration, namespaces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "heapstate.h"
#include "keygroup.h"
#include "rng.h"

enum { NKEYS = 3000, MAXP = 128 };

static int64_t model[NKEYS][2]; /* per key, per namespace: value, or -1 absent */

static void key_of(int i, char *buf, uint32_t *len)
{
    *len = (uint32_t)snprintf(buf, 32, "key-%d", i);
}

static void count_visit(void *arg, const char *key, uint32_t klen, int64_t ns,
                        const void *value)
{
    (void)key, (void)klen, (void)ns, (void)value;
    (*(int *)arg)++;
}

static void test_against_model(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, 0, MAXP - 1, sizeof(int64_t)), 0);
    for (int i = 0; i < NKEYS; i++)
        model[i][0] = model[i][1] = -1;
    ck_rng r;
    ck_rng_init(&r, 5, 5);
    for (int step = 0; step < 200000; step++) {
        int i = (int)ck_rng_below(&r, NKEYS);
        int ns = (int)ck_rng_below(&r, 2);
        char key[32];
        uint32_t klen;
        key_of(i, key, &klen);
        int32_t jh = ck_kg_java_hash(key, klen);
        int kg = ck_kg_of_hash(jh, MAXP);
        switch (ck_rng_below(&r, 3)) {
        case 0: {
            int created;
            int64_t *v = ck_heap_upsert(&h, kg, jh, key, klen, ns, &created);
            assert_non_null(v);
            assert_int_equal(created, model[i][ns] < 0);
            *v = step;
            model[i][ns] = step;
            break;
        }
        case 1: {
            int64_t *v = ck_heap_get(&h, kg, jh, key, klen, ns);
            if (model[i][ns] < 0)
                assert_null(v);
            else
                assert_true(v && *v == model[i][ns]);
            break;
        }
        default: {
            int rc = ck_heap_remove(&h, kg, jh, key, klen, ns);
            assert_int_equal(rc, model[i][ns] < 0 ? CK_ENOTFOUND : 0);
            model[i][ns] = -1;
        }
        }
    }
    uint64_t live = 0;
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        uint32_t klen;
        key_of(i, key, &klen);
        int32_t jh = ck_kg_java_hash(key, klen);
        int kg = ck_kg_of_hash(jh, MAXP);
        for (int ns = 0; ns < 2; ns++) {
            int64_t *v = ck_heap_get(&h, kg, jh, key, klen, ns);
            if (model[i][ns] < 0)
                assert_null(v);
            else
                assert_true(v && *v == model[i][ns]);
            live += model[i][ns] >= 0;
        }
    }
    assert_int_equal(h.n, live);
    int visited = 0;
    for (int kg = 0; kg < MAXP; kg++)
        ck_heap_foreach(&h, kg, count_visit, &visited);
    assert_int_equal((uint64_t)visited, live);
    ck_heap_free(&h);
}

static void test_key_group_range_enforced(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, 10, 20, 8), 0);
    int created;
    assert_null(ck_heap_upsert(&h, 9, 1, "x", 1, 0, &created));
    assert_null(ck_heap_upsert(&h, 21, 1, "x", 1, 0, &created));
    assert_non_null(ck_heap_upsert(&h, 10, 1, "x", 1, 0, &created));
    assert_int_equal(ck_heap_init(&h, 5, 4, 8), CK_EINVAL);
    ck_heap_free(&h);
}

/* Keys that differ in one byte and share a hash (a collision, which the
 * caller may present): every length, every position, including the
 * lengths the fast path compares in overlapping words. */
static void test_colliding_near_keys(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, 0, MAXP - 1, sizeof(int64_t)), 0);
    const int32_t jh = 7;
    const int kg = ck_kg_of_hash(jh, MAXP);
    int64_t tag = 0;
    for (uint32_t n = 1; n <= 24; n++) {
        char key[32];
        memset(key, 'a', sizeof(key));
        int created;
        int64_t *v = ck_heap_upsert(&h, kg, jh, key, n, 0, &created);
        assert_non_null(v);
        assert_true(created);
        *v = ++tag;
        int64_t base = tag;
        for (uint32_t p = 0; p < n; p++) {
            key[p] = 'b';
            ck_heap_prefetch(&h, kg, ck_heap_hash(jh, 0)); /* a hint: changes nothing */
            int64_t *w = ck_heap_upsert_h(&h, kg, ck_heap_hash(jh, 0), key, n, 0, &created);
            assert_non_null(w);
            assert_true(created); /* not mistaken for the base key */
            *w = ++tag;
            int64_t *again = ck_heap_upsert(&h, kg, jh, key, n, 0, &created);
            assert_non_null(again);
            assert_false(created);
            assert_int_equal(*again, tag);
            key[p] = 'a';
        }
        /* The base key still finds its own value, through both entry points. */
        int64_t *b = ck_heap_get(&h, kg, jh, key, n, 0);
        assert_non_null(b);
        assert_int_equal(*b, base);
        b = ck_heap_upsert_h(&h, kg, ck_heap_hash(jh, 0), key, n, 0, &created);
        assert_non_null(b);
        assert_false(created);
        assert_int_equal(*b, base);
    }
    assert_int_equal(h.n, (uint64_t)tag);
    /* Hints for key groups out of range or not yet used are harmless. */
    ck_heap_prefetch(&h, -1, 0);
    ck_heap_prefetch(&h, MAXP, 0);
    ck_heap_prefetch(&h, (kg + 1) % MAXP, 0);
    ck_heap_free(&h);
}

static void sum_visit(void *arg, const char *key, uint32_t klen, int64_t ns, const void *value)
{
    (void)key, (void)ns;
    int64_t *acc = arg;
    acc[0] += *(const int64_t *)value;
    acc[1] += klen;
    acc[2]++;
}

/* Copy-on-write views: writes after the view never show through it. */
static void test_views(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, 0, MAXP - 1, sizeof(int64_t)), 0);
    char key[64];
    /* Short keys inline, long ones out of line. */
    for (int i = 0; i < 2000; i++) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), i % 3 ? "k%d" : "a-rather-long-key-%d", i);
        int32_t jh = ck_kg_java_hash(key, klen);
        int created;
        int64_t *v = ck_heap_upsert(&h, ck_kg_of_hash(jh, MAXP), jh, key, klen, 0, &created);
        *v = i;
    }
    int64_t before[3] = {0};
    for (int kg = 0; kg < MAXP; kg++)
        ck_heap_foreach(&h, kg, sum_visit, before);
    ck_heap_view v1, v2;
    assert_int_equal(ck_heap_view_take(&h, &v1), 0);
    /* Update, remove and insert after the view. */
    for (int i = 0; i < 2000; i += 2) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), i % 3 ? "k%d" : "a-rather-long-key-%d", i);
        int32_t jh = ck_kg_java_hash(key, klen);
        int kg = ck_kg_of_hash(jh, MAXP);
        if (i % 4 == 0) {
            assert_int_equal(ck_heap_remove(&h, kg, jh, key, klen, 0), 0);
        } else {
            int created;
            int64_t *v = ck_heap_upsert(&h, kg, jh, key, klen, 0, &created);
            *v += 1000000;
        }
    }
    assert_int_equal(ck_heap_view_take(&h, &v2), 0); /* a second view on top */
    for (int i = 5000; i < 9000; i++) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "a-rather-long-new-key-%d", i);
        int32_t jh = ck_kg_java_hash(key, klen);
        int created;
        *(int64_t *)ck_heap_upsert(&h, ck_kg_of_hash(jh, MAXP), jh, key, klen, 0, &created) = 1;
    }
    int64_t seen1[3] = {0}, seen2[3] = {0}, live[3] = {0};
    for (int kg = 0; kg < MAXP; kg++) {
        ck_heap_view_foreach(&v1, kg, sum_visit, seen1);
        ck_heap_view_foreach(&v2, kg, sum_visit, seen2);
        ck_heap_foreach(&h, kg, sum_visit, live);
    }
    assert_memory_equal(seen1, before, sizeof(before)); /* the first view did not move */
    assert_true(seen2[2] == 2000 - 500);               /* 500 removed before the second */
    assert_true(live[2] == 2000 - 500 + 4000);
    assert_true(v1.n == 2000 && v2.n == 1500);
    ck_heap_view_release(&v1);
    /* The live heap is unaffected by releasing views, in any order. */
    ck_heap_free(&h);
    int64_t again[3] = {0};
    for (int kg = 0; kg < MAXP; kg++)
        ck_heap_view_foreach(&v2, kg, sum_visit, again);
    assert_memory_equal(again, seen2, sizeof(seen2)); /* a view outlives its heap */
    ck_heap_view_release(&v2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_key_group_range_enforced),
        cmocka_unit_test(test_colliding_near_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
