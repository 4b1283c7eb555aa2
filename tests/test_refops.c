/*
 * test_refops.c - the reference computation's own operator functions,
 * against values worked out by hand: Java's String.hashCode of well-formed
 * strings (31 * h + c over the UTF-16 code units) and of malformed UTF-8
 * (each malformed sequence one U+FFFD, as the JDK's String(byte[], UTF_8)
 * decides), splitmix64's published outputs, Flink's window starts.
 * Then the engine: its key hash must agree with the reference's on
 * arbitrary bytes, or keys would land in different key groups and filters;
 * and verify/ must call no function of the engine's but the record decoder.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keygroup.h"
#include "refops.h"
#include "rng.h"

static int32_t jh(const char *bytes, size_t n)
{
    return ck_ref_java_hash(bytes, n);
}

#define JH(lit) jh(lit, sizeof(lit) - 1)

static void test_java_hash_well_formed(void **state)
{
    (void)state;
    assert_int_equal(JH(""), 0);
    assert_int_equal(JH("a"), 97);
    assert_int_equal(JH("hello"), 99162322);
    assert_int_equal(JH("Hello, World!"), 1498789909);
    assert_int_equal(JH("user-42"), -147182656); /* wraps around like Java's int */
    assert_int_equal(JH("\xc3\xa9"), 233);       /* U+00E9, two bytes */
    assert_int_equal(JH("\xe2\x82\xac"), 8364);  /* U+20AC, three bytes */
    assert_int_equal(JH("\xef\xbf\xbd"), 65533); /* U+FFFD itself */
    /* Beyond the BMP: a surrogate pair, D83D DE00 for U+1F600. */
    assert_int_equal(JH("\xf0\x9f\x98\x80"), 0xD83D * 31 + 0xDE00);
    assert_int_equal(JH("\xf0\x9f\x98\x80"), 1772899);
    assert_int_equal(JH("a\xf0\x9f\x98\x80" "b"), 57849694);
    assert_int_equal(JH("\xf4\x8f\xbf\xbf"), 1803232); /* U+10FFFF, the last */
}

/* "\uFFFD" = 65533, two of them 2097056, three 65074269, four 2017367872;
 * "a\uFFFDb" = 2124838, "\uFFFDb" = 2031621. */
static void test_java_hash_malformed(void **state)
{
    (void)state;
    assert_int_equal(JH("\xff"), 65533);               /* never a UTF-8 byte */
    assert_int_equal(JH("a\x80" "b"), 2124838);        /* a lone continuation byte */
    assert_int_equal(JH("\xc3"), 65533);               /* two bytes, cut by the end */
    assert_int_equal(JH("\xc0\xaf"), 2097056);         /* overlong lead C0: each byte */
    assert_int_equal(JH("\xe2\x82"), 65533);           /* three bytes cut: one U+FFFD */
    assert_int_equal(JH("\xe2\x82" "b"), 2031621);     /* E2 82 malformed, then b */
    assert_int_equal(JH("\xe0\x80\x80"), 65074269);    /* overlong: E0, 80, 80 apart */
    assert_int_equal(JH("\xe0\x9f"), 2097056);         /* cut, and E0 9F is overlong */
    assert_int_equal(JH("\xe1\x80"), 65533);           /* cut, well begun: one */
    assert_int_equal(JH("\xed\xa0\x80"), 65533);       /* a surrogate: all three bytes */
    assert_int_equal(JH("\xf0\x9f\x98"), 65533);       /* four bytes cut: one */
    assert_int_equal(JH("\xf0\x9f"), 65533);
    assert_int_equal(JH("\xf0\x9f" "b"), 2031621);     /* cut, third not a continuation */
    assert_int_equal(JH("\xf0\x9f\x98" "b"), 2031621); /* F0 9F 98 malformed, then b */
    assert_int_equal(JH("\xf0\x80\x80\x80"), 2017367872); /* overlong: four apart */
    assert_int_equal(JH("\xf4\x90\x80\x80"), 2017367872); /* above U+10FFFF */
    assert_int_equal(JH("\xf5\x80"), 2097056);            /* F5 never starts one */
    assert_int_equal(JH("\xf8" "b"), 2031621);
    assert_int_equal(JH("x\xef\xbf\xbd"), 69253);
}

/* splitmix64's outputs for seeds 0 and 1234567 (its reference code). */
static void test_mix64(void **state)
{
    (void)state;
    assert_true(ck_ref_mix64(0) == UINT64_C(0xe220a8397b1dcdaf));
    assert_true(ck_ref_mix64(UINT64_C(0x9e3779b97f4a7c15)) == UINT64_C(0x6e789e6aa1b965f4));
    assert_true(ck_ref_mix64(1234567) == UINT64_C(6457827717110365317));
    assert_true(ck_ref_mix64(1234567 + UINT64_C(0x9e3779b97f4a7c15)) ==
                UINT64_C(3203168211198807973));
}

/* ("user-42", ts 1000, value 5): mix64(hash ^ mix64(1000) ^ 5 << 32) has
 * 796962 as its remainder by a million, worked out by hand from the above. */
static void test_filter(void **state)
{
    (void)state;
    assert_true(ck_ref_filter_keeps(796963, "user-42", 7, 1000, 5));
    assert_false(ck_ref_filter_keeps(796962, "user-42", 7, 1000, 5));
    assert_true(ck_ref_filter_keeps(438995, "user-42", 7, 0, 1));
    assert_false(ck_ref_filter_keeps(438994, "user-42", 7, 0, 1));
    assert_true(ck_ref_filter_keeps(609137, "user-42", 7, -5, 100));
    assert_false(ck_ref_filter_keeps(609136, "user-42", 7, -5, 100));
    assert_false(ck_ref_filter_keeps(0, "user-42", 7, 1000, 5));
    assert_true(ck_ref_filter_keeps(1000000, "user-42", 7, 1000, 5));
}

static void test_map_and_aggregates(void **state)
{
    (void)state;
    assert_int_equal(ck_ref_map(CK_MAP_IDENTITY, 9, 7), 7);
    assert_int_equal(ck_ref_map(CK_MAP_DROP_PAYLOAD, 9, 7), 7);
    assert_int_equal(ck_ref_map(CK_MAP_SCALE, 3, 7), 21);
    assert_int_equal(ck_ref_map(CK_MAP_SCALE, -3, -5), 15);
    assert_int_equal(ck_ref_map(CK_MAP_SCALE, 0, 5), 0);
    assert_true(ck_ref_map(CK_MAP_SCALE, 2, INT64_MAX) == -2); /* wraps as Java's long */
    assert_true(ck_ref_map(CK_MAP_SCALE, -1, INT64_MIN) == INT64_MIN);
    assert_int_equal(ck_ref_agg_add(CK_AGG_COUNT, 42), 1);
    assert_int_equal(ck_ref_agg_add(CK_AGG_COUNT, -42), 1);
    assert_int_equal(ck_ref_agg_add(CK_AGG_SUM, 42), 42);
    assert_int_equal(ck_ref_agg_add(CK_AGG_SUM, -42), -42);
}

static void test_window_start(void **state)
{
    (void)state;
    assert_int_equal(ck_ref_window_start(0, 1000), 0);
    assert_int_equal(ck_ref_window_start(999, 1000), 0);
    assert_int_equal(ck_ref_window_start(1000, 1000), 1000);
    assert_int_equal(ck_ref_window_start(123456, 1000), 123000);
    assert_int_equal(ck_ref_window_start(-1, 1000), -1000);
    assert_int_equal(ck_ref_window_start(-1000, 1000), -1000);
    assert_int_equal(ck_ref_window_start(-1001, 1000), -2000);
    assert_int_equal(ck_ref_window_start(7, 3), 6);
    assert_int_equal(ck_ref_window_start(-7, 3), -9);
    assert_int_equal(ck_ref_window_start(5, 1), 5);
}

/* The engine's hash (a fast path for ASCII, its own decoder) must give
 * what the reference gives, on bytes chosen to hit every branch. */
static void test_engine_agrees(void **state)
{
    (void)state;
    static const uint8_t pick[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0,
                                   0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0,
                                   0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xfe, 0xff};
    ck_rng r;
    ck_rng_init(&r, 8, 0);
    char buf[16];
    for (int i = 0; i < 500000; i++) {
        size_t n = (size_t)ck_rng_below(&r, sizeof(buf) + 1);
        for (size_t k = 0; k < n; k++)
            buf[k] = ck_rng_below(&r, 4) == 0 ? (char)ck_rng_next(&r)
                                               : (char)pick[ck_rng_below(&r, sizeof(pick))];
        assert_int_equal(ck_ref_java_hash(buf, n), ck_kg_java_hash(buf, n));
    }
}

/* Functions verify/ may call: its own (ck_ref_, ck_verify_, ck_running_,
 * ck_injected_), the record decoder (and the byte reader for an
 * element's length prefix), and the workload's key table, which is input,
 * not engine. */
static int allowed(const char *name)
{
    static const char *const ok[] = {"ck_elem_decode", "ck_get_u32", "ck_workload_key",
                                     "ck_verify", "ck_guarantee_name", NULL};
    if (strncmp(name, "ck_ref_", 7) == 0 || strncmp(name, "ck_verify_", 10) == 0 ||
        strncmp(name, "ck_injected_", 12) == 0 || strncmp(name, "ck_running_", 11) == 0)
        return 1;
    for (int i = 0; ok[i]; i++)
        if (strcmp(name, ok[i]) == 0)
            return 1;
    return 0;
}

/* Every call in verify/'s sources (an identifier ck_... followed by a
 * parenthesis) is to verify's own functions or to the ones above. */
static void test_verify_calls_no_engine_function(void **state)
{
    (void)state;
    static const char *const files[] = {"verify/verify.c", "verify/verify.h", "verify/refops.c",
                                        "verify/refops.h", "verify/injected.c",
                                        "verify/injected.h", NULL};
    for (int f = 0; files[f]; f++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", CHANDY_SOURCE_DIR, files[f]);
        FILE *in = fopen(path, "rb");
        assert_non_null(in);
        static char text[1 << 18];
        size_t n = fread(text, 1, sizeof(text) - 1, in);
        fclose(in);
        assert_true(n > 0 && n < sizeof(text) - 1);
        text[n] = 0;
        int calls = 0;
        for (size_t i = 0; i + 3 < n; i++) {
            int starts = i == 0 || !(isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_');
            if (!starts || strncmp(text + i, "ck_", 3) != 0)
                continue;
            size_t e = i;
            while (isalnum((unsigned char)text[e]) || text[e] == '_')
                e++;
            size_t p = e;
            while (text[p] == ' ')
                p++;
            if (text[p] != '(')
                continue;
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(e - i), text + i);
            if (!allowed(name))
                fail_msg("%s calls %s", files[f], name);
            calls++;
        }
        assert_true(calls > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_well_formed),
        cmocka_unit_test(test_java_hash_malformed),
        cmocka_unit_test(test_mix64),
        cmocka_unit_test(test_filter),
        cmocka_unit_test(test_map_and_aggregates),
        cmocka_unit_test(test_window_start),
        cmocka_unit_test(test_engine_agrees),
        cmocka_unit_test(test_verify_calls_no_engine_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
