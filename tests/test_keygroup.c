/*
 * test_keygroup.c - key groups exactly as Flink assigns them.
 *
 * The vectors below were computed with the JDK (17): String.hashCode of
 * new String(bytes, UTF_8) and Flink's MathUtils.murmurHash written out
 * from its definition, then keyGroup = murmur % maxParallelism and
 * subtask = keyGroup * parallelism / maxParallelism. They include
 * non-ASCII keys, supplementary characters (surrogate pairs) and malformed
 * UTF-8, where Java substitutes U+FFFD by its own rules.
 *
 * Worked through for "a" (hashCode 97), 32-bit arithmetic:
 *   97 * 0xcc9e2d51 = 0x87ef2bb1, rotl 15 = 0x95d8c3f7,
 *   * 0x1b873593 = 0x504ba9d5, rotl 13 = 0x753aaa09,
 *   * 5 + 0xe6546b64 = 0x3079bd91, ^ 4 = 0x3079bd95;
 *   fmix: ^ >>>16 = 0x30798dec, * 0x85ebca6b = 0x106e89a4,
 *   ^ >>>13 = 0x106e0ad0, * 0xc2b2ae35 = 0x56c19d10, ^ >>>16 = 0x56c1cbd1
 *   = 1455541201 (positive, kept as is);
 *   1455541201 = 11371415 * 128 + 81 -> key group 81 of 128;
 *   81 * 4 / 128 = 2 -> subtask 2 of 4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "keygroup.h"

typedef struct vec {
    const char *hex;
    int32_t hash;
    int kg128, sub4of128, kg1000, sub7of1000;
} vec;

static const vec vectors[] = {
    {"", 0, 94, 2, 54, 0},
    {"61", 97, 81, 2, 201, 1},
    {"68656c6c6f", 99162322, 35, 1, 179, 1},
    {"757365722d3432", -147182656, 20, 0, 524, 3},
    {"c39c6ec3af63c3b664c3a9", 1055431381, 63, 1, 223, 1},
    {"f09f9880", 1772899, 54, 1, 14, 0},
    {"e4b8ade69687", 646394, 39, 1, 671, 4},
    {"ff61", 2031620, 62, 1, 470, 3},
    {"e282", 65533, 108, 3, 812, 5},
    {"c0af", 2097056, 59, 1, 451, 3},
    {"eda080", 65533, 108, 3, 812, 5},
    {"6b65790d", 3288462, 94, 2, 526, 3},
    {"6b0965", 103207, 18, 0, 146, 1},
    {"20202020", 985088, 30, 0, 518, 3},
    {"7fedf3c2c1", 2134655039, 45, 1, 213, 1},
    {"80c1e1bf40", 2017302403, 73, 2, 857, 5},
    {"f4497269", 1952367395, 48, 1, 848, 5},
    {"ce6ff5f1", 1954497330, 92, 2, 964, 6},
    {"718028deff", 2058786972, 67, 2, 699, 4},
    {"e091c8", 65074269, 40, 1, 112, 0},
    {"f4eff4ed", 2017367872, 90, 2, 506, 3},
    {"bff82a8035", -1949042206, 17, 0, 705, 4},
    {"d3c0f1", 65074269, 40, 1, 112, 0},
    {"a6e109c2c7", -1949008439, 104, 3, 584, 4},
    {"f31bbbf580", 457438175, 118, 3, 334, 2},
    {"54f172", 2112361, 32, 1, 56, 0},
    {"fff5c28f", 65008879, 114, 3, 906, 6},
    {"e1edbf9f57ef", 2015339046, 13, 0, 973, 6},
    {"90f4f57fe0", -1888067461, 10, 0, 610, 4},
    {"bff3f5c7d7", -1886039875, 0, 0, 312, 2},
    {"5accfb5241", 2098390313, 41, 1, 201, 1},
    {"9ff5c228", 2017302379, 18, 0, 234, 1},
    {"ecec09", 65008745, 45, 1, 813, 5},
    {"f3c2ec", 65074269, 40, 1, 112, 0},
    {"0f46a0", 82118, 46, 1, 126, 0},
    {"9041bf02908e", 1267865577, 10, 0, 890, 6},
    {"9fbfb9f0", 2017367872, 90, 2, 506, 3},
    {"eef701f8f1", -1949016127, 93, 2, 397, 2},
};

static size_t unhex(const char *hex, char *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    return n;
}

static void test_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const vec *v = &vectors[i];
        char key[64];
        size_t n = unhex(v->hex, key);
        int32_t h = ck_kg_java_hash(key, n);
        if (h != v->hash)
            print_error("key %s: hash %d, want %d\n", v->hex, h, v->hash);
        assert_int_equal(h, v->hash);
        assert_int_equal(ck_kg_of_key(key, n, 128), v->kg128);
        assert_int_equal(ck_kg_subtask(v->kg128, 4, 128), v->sub4of128);
        assert_int_equal(ck_kg_of_key(key, n, 1000), v->kg1000);
        assert_int_equal(ck_kg_subtask(v->kg1000, 7, 1000), v->sub7of1000);
    }
}

static void test_murmur_edges(void **state)
{
    (void)state;
    /* The result is never negative, whatever the input. */
    for (int64_t x = INT32_MIN; x <= INT32_MAX; x += 65537)
        assert_true(ck_kg_murmur((int32_t)x) >= 0);
    assert_int_equal(ck_kg_murmur(0), 593689054);  /* "".hashCode() == 0 */
    assert_int_equal(ck_kg_murmur(97), 1455541201); /* "a" */
}

static void test_default_max_parallelism(void **state)
{
    (void)state;
    /* min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768), from the JDK. */
    static const int table[][2] = {{1, 128},     {2, 128},      {3, 128},
                                   {85, 128},    {86, 256},     {100, 256},
                                   {1000, 2048}, {21845, 32768}, {21846, 32768},
                                   {32768, 32768}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        assert_int_equal(ck_kg_default_max_parallelism(table[i][0]), table[i][1]);
    /* By hand: p = 86 -> 86 + 43 = 129 -> next power of two 256. */
    assert_int_equal(ck_kg_default_max_parallelism(86), 256);
}

static void test_ranges_partition_groups(void **state)
{
    (void)state;
    static const int maxps[] = {1, 7, 128, 129, 1000, 32768};
    for (size_t m = 0; m < sizeof(maxps) / sizeof(maxps[0]); m++) {
        int maxp = maxps[m];
        for (int p = 1; p <= maxp && p <= 40; p++) {
            int next = 0;
            for (int i = 0; i < p; i++) {
                ck_kgr r = ck_kg_range(i, p, maxp);
                assert_int_equal(r.start, next); /* contiguous, no gaps, no overlap */
                for (int kg = r.start; kg <= r.end; kg++)
                    assert_int_equal(ck_kg_subtask(kg, p, maxp), i);
                next = r.end + 1;
            }
            assert_int_equal(next, maxp);
        }
    }
    /* By hand: p = 3, maxp = 128 -> [0,42] [43,85] [86,127]. */
    ck_kgr r = ck_kg_range(1, 3, 128);
    assert_int_equal(r.start, 43);
    assert_int_equal(r.end, 85);
    r = ck_kg_range(2, 3, 128);
    assert_int_equal(r.start, 86);
    assert_int_equal(r.end, 127);
}

/* The range operations, Flink's KeyGroupRange: inclusive, empty when
 * start > end. */
static void test_range_operations(void **state)
{
    (void)state;
    ck_kgr a = ck_kgr_make(10, 20), b = ck_kgr_make(15, 30), one = ck_kgr_make(7, 7);
    assert_false(ck_kgr_empty(a));
    assert_int_equal(ck_kgr_size(a), 11);
    assert_int_equal(ck_kgr_size(one), 1);
    assert_true(ck_kgr_contains(a, 10));
    assert_true(ck_kgr_contains(a, 20));
    assert_false(ck_kgr_contains(a, 9));
    assert_false(ck_kgr_contains(a, 21));
    ck_kgr x = ck_kgr_intersect(a, b);
    assert_int_equal(x.start, 15);
    assert_int_equal(x.end, 20);
    assert_true(ck_kgr_equal(x, ck_kgr_intersect(b, a)));
    assert_true(ck_kgr_within(x, a));
    assert_true(ck_kgr_within(x, b));
    assert_false(ck_kgr_within(a, b));
    /* touching ranges share one key group; adjacent ones none */
    x = ck_kgr_intersect(a, ck_kgr_make(20, 25));
    assert_int_equal(ck_kgr_size(x), 1);
    assert_int_equal(x.start, 20);
    x = ck_kgr_intersect(a, ck_kgr_make(21, 25));
    assert_true(ck_kgr_empty(x));
    assert_int_equal(ck_kgr_size(x), 0);
    assert_int_equal(x.start, 0); /* the one empty range */
    assert_int_equal(x.end, -1);
    /* empty ranges: all equal, in every range, containing nothing */
    ck_kgr e1 = CK_KGR_EMPTY, e2 = ck_kgr_make(5, 4);
    assert_true(ck_kgr_empty(e1));
    assert_true(ck_kgr_empty(e2));
    assert_true(ck_kgr_equal(e1, e2));
    assert_false(ck_kgr_equal(e1, one));
    assert_false(ck_kgr_equal(a, b));
    assert_true(ck_kgr_equal(a, ck_kgr_make(10, 20)));
    assert_true(ck_kgr_within(e2, one));
    assert_false(ck_kgr_contains(e2, 4));
    assert_false(ck_kgr_contains(e2, 5));
    assert_int_equal(ck_kgr_size(e2), 0);
    assert_true(ck_kgr_empty(ck_kgr_intersect(e2, a)));
    assert_true(ck_kgr_empty(ck_kgr_intersect(a, e1)));
}

/* maxP 32768, Flink's upper bound: every parallelism's ranges cover it
 * once, and a rescale's old and new ranges intersect as the key groups
 * say. */
static void test_ranges_at_max(void **state)
{
    (void)state;
    const int maxp = CK_KG_UPPER_BOUND_MAX_PARALLELISM;
    static const int ps[] = {1, 2, 3, 7, 1000, 32767, 32768};
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        int p = ps[k];
        int64_t total = 0;
        for (int i = 0; i < p; i++) {
            ck_kgr r = ck_kg_range(i, p, maxp);
            assert_false(ck_kgr_empty(r));
            assert_true(ck_kgr_within(r, ck_kgr_make(0, maxp - 1)));
            assert_int_equal(ck_kg_subtask(r.start, p, maxp), i);
            assert_int_equal(ck_kg_subtask(r.end, p, maxp), i);
            total += ck_kgr_size(r);
        }
        assert_int_equal(total, maxp);
    }
    assert_int_equal(ck_kgr_size(ck_kg_range(32767, 32768, maxp)), 1);
    assert_int_equal(ck_kg_range(32767, 32768, maxp).start, 32767);
    /* 3 -> 4: new subtask j takes from the old ranges exactly its own */
    for (int j = 0; j < 4; j++) {
        ck_kgr nr = ck_kg_range(j, 4, maxp);
        int32_t got = 0;
        for (int i = 0; i < 3; i++)
            got += ck_kgr_size(ck_kgr_intersect(nr, ck_kg_range(i, 3, maxp)));
        assert_int_equal(got, ck_kgr_size(nr));
    }
}

static void test_check(void **state)
{
    (void)state;
    assert_int_equal(ck_kg_check(4, 128), 0);
    assert_int_not_equal(ck_kg_check(0, 128), 0);
    assert_int_not_equal(ck_kg_check(200, 128), 0);
    assert_int_not_equal(ck_kg_check(4, 40000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_murmur_edges),
        cmocka_unit_test(test_default_max_parallelism),
        cmocka_unit_test(test_ranges_partition_groups),
        cmocka_unit_test(test_range_operations),
        cmocka_unit_test(test_ranges_at_max),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
