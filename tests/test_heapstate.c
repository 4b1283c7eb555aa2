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
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "changelog.h"
#include "error.h"
#include "heapstate.h"
#include "invcheck.h"
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
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(0, MAXP - 1), sizeof(int64_t)), 0);
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
        if (step % 10000 == 0) /* heapstate.h's invariants, removals' shifts among them */
            assert_int_equal(ck_heap_check(&h, NULL), 0);
    }
    assert_int_equal(ck_heap_check(&h, NULL), 0);
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
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(10, 20), 8), 0);
    int created;
    assert_null(ck_heap_upsert(&h, 9, 1, "x", 1, 0, &created));
    assert_null(ck_heap_upsert(&h, 21, 1, "x", 1, 0, &created));
    assert_non_null(ck_heap_upsert(&h, 10, 1, "x", 1, 0, &created));
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(5, 4), 8), CK_EINVAL);
    ck_heap_free(&h);
}

/* Keys that differ in one byte and share a hash (a collision, which the
 * caller may present): every length, every position, including the
 * lengths the fast path compares in overlapping words. */
static void test_colliding_near_keys(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(0, MAXP - 1), sizeof(int64_t)), 0);
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
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(0, MAXP - 1), sizeof(int64_t)), 0);
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
    assert_int_equal(ck_heap_check(&h, NULL), 0); /* copy-on-write kept the counts */
    ck_heap_view_release(&v1);
    /* The live heap is unaffected by releasing views, in any order. */
    ck_heap_free(&h);
    int64_t again[3] = {0};
    for (int kg = 0; kg < MAXP; kg++)
        ck_heap_view_foreach(&v2, kg, sum_visit, again);
    assert_memory_equal(again, seen2, sizeof(seen2)); /* a view outlives its heap */
    ck_heap_view_release(&v2);
}

/* Slot i of key group table t (heapstate.c's layout: u32 hash | u32 key
 * length + 1, 0 when empty | ...): the test moves slots. */
static uint8_t *slot_of(const ck_heap *h, const ck_heap_kg *t, uint32_t i)
{
    return t->slots + (size_t)i * h->slot_size;
}

static int slot_full(const ck_heap *h, const ck_heap_kg *t, uint32_t i)
{
    uint32_t klen1;
    memcpy(&klen1, slot_of(h, t, i) + 4, 4);
    return klen1 != 0;
}

/* The check functions of the heap (heapstate.h), of a keyed-state backend
 * (kstate.h) and of the changelog (changelog.h): valid ones pass; each
 * numbered invariant, broken by one field, fails with its number. */
static void test_invariants(void **state)
{
    (void)state;
    ck_heap h;
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(0, 3), sizeof(int64_t)), 0);
    char key[64];
    for (int i = 0; i < 40; i++) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), i % 2 ? "k%d" : "a-long-key-%d", i);
        int32_t jh = ck_kg_java_hash(key, klen);
        int created;
        *(int64_t *)ck_heap_upsert(&h, i % 4, jh, key, klen, 0, &created) = i;
    }
    ck_heap_view view;
    assert_int_equal(ck_heap_view_take(&h, &view), 0);
    assert_int_equal(ck_heap_check(&h, NULL), 0);
    ck_heap_kg *t = &h.kgs[1];
    INV_BREAK(t->n, t->n + 1, ck_heap_check(&h, &V), "heapstate", 2);
    INV_BREAK(t->cap, t->cap + 1, ck_heap_check(&h, &V), "heapstate", 2);
    INV_BREAK(h.n, h.n - 1, ck_heap_check(&h, &V), "heapstate", 2);
    INV_BREAK(h.key_bytes, 0, ck_heap_check(&h, &V), "heapstate", 2);
    INV_BREAK(t->priv, 1, ck_heap_check(&h, &V), "heapstate", 4); /* the view shares it */
    /* An entry moved past an empty slot: its probe would stop before it. */
    uint32_t from = t->cap;
    for (uint32_t i = 0; i < t->cap && from == t->cap; i++)
        if (slot_full(&h, t, i) && !slot_full(&h, t, (i + 1) % t->cap) &&
            !slot_full(&h, t, (i + 2) % t->cap))
            from = i;
    assert_true(from < t->cap);
    ck_heap_view_release(&view); /* the table is the heap's alone: it may be edited */
    uint32_t to = (from + 2) % t->cap;
    memcpy(slot_of(&h, t, to), slot_of(&h, t, from), h.slot_size);
    memset(slot_of(&h, t, from), 0, h.slot_size);
    ck_inv v;
    inv_broken(ck_heap_check(&h, &v), &v, "heapstate", 3);
    memcpy(slot_of(&h, t, from), slot_of(&h, t, to), h.slot_size);
    memset(slot_of(&h, t, to), 0, h.slot_size);
    assert_int_equal(ck_heap_check(&h, NULL), 0);
    ck_heap_free(&h);

    /* A heap past CK_HEAP_CHECK_SLOTS: after every step a run reads one
     * key group's slots, and the sums and every table's shape. */
    assert_int_equal(ck_heap_init(&h, ck_kgr_make(0, MAXP - 1), sizeof(int64_t)), 0);
    for (int i = 0; i < 60000; i++) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "k%d", i);
        int32_t jh = ck_kg_java_hash(key, klen);
        int created;
        *(int64_t *)ck_heap_upsert(&h, ck_kg_of_hash(jh, MAXP), jh, key, klen, 0, &created) = i;
    }
    assert_int_equal(ck_heap_check_some(&h, NULL), 0);
    INV_BREAK(h.n, h.n + 1, ck_heap_check_some(&h, &V), "heapstate", 2);
    INV_BREAK(h.kgs[5].cap, 3, ck_heap_check_some(&h, &V), "heapstate", 2);
    ck_heap_free(&h);

    ck_state_desc d[2] = {{"count", CK_STATE_VALUE, 1}, {"seen", CK_STATE_MAP, 2}};
    ck_kstate *ks = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(0, 7), d, 2);
    assert_non_null(ks);
    ck_clog log;
    ck_clog_init(&log, 3, d, 2);
    ck_kstate *cks = ck_clog_kstate_new(ks, &log);
    assert_non_null(cks);
    for (int i = 0; i < 10; i++) {
        uint32_t klen = (uint32_t)snprintf(key, sizeof(key), "user-%d", i);
        ck_kkey k = {.loc = {ck_kg_java_hash(key, klen), i % 8, 0, 0}, .key = key, .klen = klen};
        ck_ks_locate(cks, 0, &k);
        int created;
        int64_t *val = ck_ks_acquire(cks, 0, &k, 1, &created);
        assert_non_null(val);
        *val = i;
        assert_int_equal(ck_ks_release(cks, 0, &k, val, 1), 0);
        k.ukey = (const uint8_t *)"u";
        k.uklen = 1;
        ck_ks_locate(cks, 1, &k);
        assert_non_null(val = ck_ks_acquire(cks, 1, &k, 1, &created));
        assert_int_equal(ck_ks_release(cks, 1, &k, val, 1), 0);
        if (i % 3 == 0)
            assert_int_equal(ck_ks_remove(cks, 1, &k), 0);
    }
    assert_int_equal(log.nbuf, 24);
    assert_int_equal(ck_ks_check(cks, NULL), 0);
    INV_BREAK(cks->kgr.start, 8, ck_ks_check(cks, &V), "kstate", 1);
    INV_BREAK(log.nbuf, log.nbuf + 1, ck_ks_check(cks, &V), "changelog", 2);
    INV_BREAK(log.appended, 1, ck_clog_check(&log, &V), "changelog", 2);
    INV_BREAK(log.buf.p[0], 9, ck_clog_check(&log, &V), "changelog", 2);
    INV_BREAK(log.buf.len, log.buf.len - 1, ck_clog_check(&log, &V), "changelog", 2);
    INV_BREAK(log.nstates, 9, ck_clog_check(&log, &V), "changelog", 4);
    uint8_t *seg;
    size_t len;
    uint64_t first;
    uint32_t n;
    assert_int_equal(ck_clog_cut(&log, &seg, &len, &first, &n), 0);
    assert_int_equal(n, 24);
    free(seg);
    assert_int_equal(ck_clog_check(&log, NULL), 0); /* nothing buffered after the cut */
    ck_kstate_free(cks);
    ck_clog_free(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_key_group_range_enforced),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_colliding_near_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
