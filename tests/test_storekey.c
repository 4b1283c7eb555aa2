/*
 * test_storekey.c - the store's key formats and their parser.
 *
 * Every kind of key is built, compared with the bytes it has always had
 * (a run's store layout must not change), parsed back to the same fields
 * and formatted again to the same key; malformed, too long and
 * overflowing keys are refused; the largest ids still fit a handle's key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "handle.h"
#include "storekey.h"

#define JOB "1d0b14e4db018fed6e73e372e2338aca"

/* key parses to kind, formats back to itself. */
static ck_sk_key roundtrip(const char *key, ck_sk_kind kind)
{
    ck_sk_key k;
    char again[CK_HANDLE_KEY_MAX + 1];
    assert_int_equal(ck_sk_parse(key, &k), CK_OK);
    assert_int_equal(k.kind, kind);
    assert_int_equal(ck_sk_format(again, sizeof(again), &k), CK_OK);
    assert_string_equal(again, key);
    return k;
}

static void test_directories(void **state)
{
    (void)state;
    char b[CK_HANDLE_KEY_MAX + 1];
    assert_int_equal(ck_sk_dir(b, sizeof(b), JOB, 16, 0), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/chk-16/");
    assert_int_equal(ck_sk_dir(b, sizeof(b), JOB, 3, 1), CK_OK);
    assert_string_equal(b, "savepoints/savepoint-1d0b14-3/");
    assert_int_equal(ck_sk_shared_dir(b, sizeof(b), JOB), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/");
    assert_int_equal(ck_sk_job_dir(b, sizeof(b), JOB), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/");
    /* a job id that makes no directory */
    assert_int_equal(ck_sk_dir(b, sizeof(b), "", 1, 0), CK_EINVAL);
    assert_string_equal(b, "");
    assert_int_equal(ck_sk_shared_dir(b, sizeof(b), "a/b"), CK_EINVAL);
    assert_int_equal(ck_sk_job_dir(b, sizeof(b), "0123456789012345678901234567890123456789"),
                     CK_EINVAL);
    /* too small a buffer: refused, never cut */
    assert_int_equal(ck_sk_dir(b, 20, JOB, 16, 0), CK_EINVAL);
    assert_string_equal(b, "");
}

static void test_every_kind_round_trips(void **state)
{
    (void)state;
    char dir[200], sp[200], shared[200], b[CK_HANDLE_KEY_MAX + 1];
    assert_int_equal(ck_sk_dir(dir, sizeof(dir), JOB, 16, 0), CK_OK);
    assert_int_equal(ck_sk_dir(sp, sizeof(sp), JOB, 7, 1), CK_OK);
    assert_int_equal(ck_sk_shared_dir(shared, sizeof(shared), JOB), CK_OK);

    assert_int_equal(ck_sk_metadata(b, sizeof(b), dir), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/chk-16/_metadata");
    ck_sk_key k = roundtrip(b, CK_SK_METADATA_FILE);
    assert_string_equal(k.job, JOB);
    assert_int_equal(k.id, 16);
    assert_false(k.savepoint);

    assert_int_equal(ck_sk_metadata(b, sizeof(b), sp), CK_OK);
    assert_string_equal(b, "savepoints/savepoint-1d0b14-7/_metadata");
    k = roundtrip(b, CK_SK_METADATA_FILE);
    assert_true(k.savepoint);
    assert_string_equal(k.job, "1d0b14");
    assert_int_equal(k.id, 7);

    assert_int_equal(ck_sk_state(b, sizeof(b), dir, 4, 2), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/chk-16/v4-2.state");
    k = roundtrip(b, CK_SK_STATE);
    assert_int_equal(k.vertex, 4);
    assert_int_equal(k.subtask, 2);

    assert_int_equal(ck_sk_private(b, sizeof(b), dir, 4, 0, 7, "MANIFEST-000157"), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/chk-16/v4-0-op7-MANIFEST-000157");
    k = roundtrip(b, CK_SK_PRIVATE);
    assert_int_equal(k.op, 7);
    assert_string_equal(k.name, "MANIFEST-000157");

    assert_int_equal(ck_sk_shared_native(b, sizeof(b), shared, 2, 0, 1, 16, "000113.sst"), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/op2-0-a1-c16-000113.sst");
    k = roundtrip(b, CK_SK_SHARED_NATIVE);
    assert_int_equal(k.op, 2);
    assert_int_equal(k.attempt, 1);
    assert_int_equal(k.id, 16);
    assert_string_equal(k.name, "000113.sst");

    assert_int_equal(ck_sk_merged(b, sizeof(b), shared, 1, 2, 1, 16, 0, 0), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/v1-2-a1-c16-m0");
    k = roundtrip(b, CK_SK_MERGED);
    assert_false(k.appendable);
    assert_int_equal(ck_sk_merged(b, sizeof(b), shared, 1, 2, 3, 16, 5, 1), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/v1-2-a3-c16-m5.seg");
    k = roundtrip(b, CK_SK_MERGED);
    assert_true(k.appendable);
    assert_int_equal(k.vertex, 1);
    assert_int_equal(k.subtask, 2);
    assert_int_equal(k.attempt, 3);
    assert_int_equal(k.n, 5);

    assert_int_equal(ck_sk_clog_segment(b, sizeof(b), shared, 2, 0, 1, 16251), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/op2-0-a1-log16251");
    k = roundtrip(b, CK_SK_CLOG_SEGMENT);
    assert_int_equal(k.seq, 16251);

    assert_int_equal(ck_sk_clog_mat(b, sizeof(b), shared, 2, 0, 1, 16251, NULL), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/op2-0-a1-mat16251");
    k = roundtrip(b, CK_SK_CLOG_MAT);
    assert_string_equal(k.name, "");
    assert_int_equal(ck_sk_clog_mat(b, sizeof(b), shared, 2, 0, 1, 16251, "000093.sst"), CK_OK);
    assert_string_equal(b, "checkpoints/" JOB "/shared/op2-0-a1-mat16251-000093.sst");
    k = roundtrip(b, CK_SK_CLOG_MAT);
    assert_string_equal(k.name, "000093.sst");
}

/* The largest ids of every field still make keys a handle holds. */
static void test_largest_fit(void **state)
{
    (void)state;
    const char *job = "012345678901234567890123456789012345678"; /* CK_SK_JOB_MAX */
    char name[CK_SK_NAME_MAX + 1];
    memset(name, 'n', CK_SK_NAME_MAX);
    name[CK_SK_NAME_MAX] = 0;
    char dir[200], sp[200], shared[200], b[CK_HANDLE_KEY_MAX + 1];
    assert_int_equal(strlen(job), CK_SK_JOB_MAX);
    assert_int_equal(ck_sk_dir(dir, sizeof(dir), job, UINT64_MAX, 0), CK_OK);
    assert_int_equal(ck_sk_dir(sp, sizeof(sp), job, UINT64_MAX, 1), CK_OK);
    assert_int_equal(ck_sk_shared_dir(shared, sizeof(shared), job), CK_OK);
    assert_int_equal(ck_sk_metadata(b, sizeof(b), sp), CK_OK);
    roundtrip(b, CK_SK_METADATA_FILE);
    assert_int_equal(ck_sk_state(b, sizeof(b), dir, INT32_MAX, INT32_MAX), CK_OK);
    roundtrip(b, CK_SK_STATE);
    assert_int_equal(ck_sk_private(b, sizeof(b), dir, INT32_MAX, INT32_MAX, INT32_MAX, name),
                     CK_OK);
    roundtrip(b, CK_SK_PRIVATE);
    assert_int_equal(ck_sk_shared_native(b, sizeof(b), shared, INT32_MAX, INT32_MAX, UINT32_MAX,
                                         UINT64_MAX, name),
                     CK_OK);
    ck_sk_key k = roundtrip(b, CK_SK_SHARED_NATIVE);
    assert_true(k.id == UINT64_MAX);
    assert_true(k.attempt == UINT32_MAX);
    assert_int_equal(ck_sk_merged(b, sizeof(b), shared, INT32_MAX, INT32_MAX, UINT32_MAX,
                                  UINT64_MAX, UINT32_MAX, 1),
                     CK_OK);
    k = roundtrip(b, CK_SK_MERGED);
    assert_true(k.n == UINT32_MAX);
    assert_int_equal(
        ck_sk_clog_segment(b, sizeof(b), shared, INT32_MAX, INT32_MAX, UINT32_MAX, UINT64_MAX),
        CK_OK);
    roundtrip(b, CK_SK_CLOG_SEGMENT);
    assert_int_equal(
        ck_sk_clog_mat(b, sizeof(b), shared, INT32_MAX, INT32_MAX, UINT32_MAX, UINT64_MAX, name),
        CK_OK);
    assert_true(strlen(b) <= CK_HANDLE_KEY_MAX);
    roundtrip(b, CK_SK_CLOG_MAT);
}

static void test_builders_refuse(void **state)
{
    (void)state;
    char b[CK_HANDLE_KEY_MAX + 1], name[CK_SK_NAME_MAX + 2];
    const char *dir = "checkpoints/j/chk-1/", *shared = "checkpoints/j/shared/";
    memset(name, 'n', CK_SK_NAME_MAX + 1);
    name[CK_SK_NAME_MAX + 1] = 0;
    assert_int_equal(ck_sk_state(b, sizeof(b), "checkpoints/j/chk-1", 0, 0), CK_EINVAL);
    assert_int_equal(ck_sk_state(b, sizeof(b), dir, -1, 0), CK_EINVAL);
    assert_int_equal(ck_sk_state(b, sizeof(b), dir, 0, -1), CK_EINVAL);
    assert_int_equal(ck_sk_private(b, sizeof(b), dir, 0, 0, -1, "x"), CK_EINVAL);
    assert_int_equal(ck_sk_private(b, sizeof(b), dir, 0, 0, 0, ""), CK_EINVAL);
    assert_int_equal(ck_sk_private(b, sizeof(b), dir, 0, 0, 0, "a/b"), CK_EINVAL);
    assert_int_equal(ck_sk_private(b, sizeof(b), dir, 0, 0, 0, name), CK_EINVAL);
    assert_int_equal(ck_sk_shared_native(b, sizeof(b), shared, 0, 0, 0, 0, name), CK_EINVAL);
    assert_int_equal(ck_sk_clog_mat(b, sizeof(b), shared, 0, 0, 0, 0, ""), CK_EINVAL);
    assert_int_equal(ck_sk_merged(b, 10, shared, 0, 0, 0, 0, 0, 0), CK_EINVAL);
    assert_string_equal(b, "");
    assert_int_equal(ck_sk_metadata(b, 0, dir), CK_EINVAL);
}

static void test_parser_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "_metadata",
        "chk-1/_metadata",
        "checkpoints//chk-1/_metadata",                     /* no job */
        "checkpoints/j/chk-/_metadata",                     /* no id */
        "checkpoints/j/chk-01/_metadata",                   /* a leading zero */
        "checkpoints/j/chk-+1/_metadata",                   /* a sign */
        "checkpoints/j/chk- 1/_metadata",                   /* a space */
        "checkpoints/j/chk-1x/_metadata",                   /* trailing junk in the id */
        "checkpoints/j/chk-18446744073709551616/_metadata", /* 2^64 */
        "checkpoints/j/chk-1/_metadata2",
        "checkpoints/j/chk-1/_metadata/",
        "checkpoints/j/chk-1/x/_metadata", /* a directory too deep */
        "checkpoints/j/chk-1/v0-0.state ",
        "checkpoints/j/chk-1/v0-0.statex",
        "checkpoints/j/chk-1/v0-0",
        "checkpoints/j/chk-1/v-1-0.state",
        "checkpoints/j/chk-1/v0--1.state",
        "checkpoints/j/chk-1/v2147483648-0.state", /* INT32_MAX + 1 */
        "checkpoints/j/chk-1/v0-0-op1-",           /* no name */
        "checkpoints/j/chk-1/v0-0-op-x",
        "checkpoints/j/chk-1/v0-0-opx-y",
        "checkpoints/j/shared/_metadata", /* not a shared file */
        "checkpoints/j/shared/v0-0.state",
        "checkpoints/j/shared/v0-0-a1-c2-m3.seg.seg",
        "checkpoints/j/shared/v0-0-a1-c2-m3x",
        "checkpoints/j/shared/v0-0-a4294967296-c2-m3", /* UINT32_MAX + 1 */
        "checkpoints/j/shared/v0-0-a1-c2-m4294967296",
        "checkpoints/j/shared/v0-0-a1-c2",
        "checkpoints/j/shared/v0-0-a1-c99999999999999999999-m0",
        "checkpoints/j/shared/op1-0-a1-log",
        "checkpoints/j/shared/op1-0-a1-log12x",
        "checkpoints/j/shared/op1-0-a1-log012",
        "checkpoints/j/shared/op1-0-a1-mat3-",
        "checkpoints/j/shared/op1-0-a1-mat3x",
        "checkpoints/j/shared/op1-0-a1-c2",
        "checkpoints/j/shared/op1-0-a1-c2-",
        "checkpoints/j/shared/op1-0-a1-x2-y",
        "checkpoints/j/shared/op1-0-a1-c2-a/b",
        "checkpoints/j/shared/sub/op1-0-a1-c2-a",
        "checkpoints/j/other/_metadata",
        "checkpoints/0123456789012345678901234567890123456789/chk-1/_metadata", /* job too long */
        "savepoints/savepoint-1/_metadata",                                     /* no job */
        "savepoints/savepoint--1/_metadata",
        "savepoints/savepoint-1234567-1/_metadata", /* longer than its name keeps */
        "savepoints/savepoint-j-/_metadata",
        "savepoints/savepoint-j-01/_metadata",
        "savepoints/savepoint-j-1/v0-0-a1-c2-m0", /* a shared file in a savepoint */
        "savepoints/shared/op1-0-a1-c2-x",
        "savepoints/chk-1/_metadata",
        "checkpoints/j/chk-1/../chk-0/_metadata",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_sk_key k;
        if (ck_sk_parse(bad[i], &k) != CK_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
    }
    /* a name one byte too long, a key one byte longer than a handle's */
    char key[CK_HANDLE_KEY_MAX + 40], name[CK_SK_NAME_MAX + 2];
    memset(name, 'n', CK_SK_NAME_MAX + 1);
    name[CK_SK_NAME_MAX + 1] = 0;
    snprintf(key, sizeof(key), "checkpoints/j/chk-1/v0-0-op1-%s", name);
    ck_sk_key k;
    assert_int_equal(ck_sk_parse(key, &k), CK_EINVAL);
    name[CK_SK_NAME_MAX] = 0;
    snprintf(key, sizeof(key), "checkpoints/j/chk-1/v0-0-op1-%s", name);
    assert_int_equal(ck_sk_parse(key, &k), CK_OK);
    memset(key, 'a', sizeof(key));
    memcpy(key, "checkpoints/j/chk-1/v0-0-op1-", 29);
    key[CK_HANDLE_KEY_MAX + 1] = 0;
    assert_int_equal(ck_sk_parse(key, &k), CK_EINVAL);
}

static void test_dir_names(void **state)
{
    (void)state;
    uint64_t id;
    int sp;
    assert_int_equal(ck_sk_parse_dir_name("chk-12", &id, &sp), CK_OK);
    assert_int_equal(id, 12);
    assert_false(sp);
    assert_int_equal(ck_sk_parse_dir_name("savepoint-1d0b14-3", &id, &sp), CK_OK);
    assert_int_equal(id, 3);
    assert_true(sp);
    assert_int_equal(ck_sk_parse_dir_name("savepoint-a-b-9", &id, &sp), CK_OK);
    assert_int_equal(id, 9);
    static const char *const bad[] = {"chk-",
                                      "chk-1/",
                                      "chk-01",
                                      "chk-1a",
                                      "chk--1",
                                      "shared",
                                      "savepoint-",
                                      "savepoint-1",
                                      "savepoint--1",
                                      "savepoint-j-",
                                      "savepoint-j-1x",
                                      "savepoint-j/k-1",
                                      "savepoint-j-18446744073709551616",
                                      ".",
                                      ".."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (ck_sk_parse_dir_name(bad[i], &id, &sp) != CK_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
}

static void test_dirs_of(void **state)
{
    (void)state;
    char dir[160], shared[170];
    assert_int_equal(ck_sk_dirs_of("checkpoints/" JOB "/chk-4/v0-1.state", dir, sizeof(dir), shared,
                                   sizeof(shared)),
                     CK_OK);
    assert_string_equal(dir, "checkpoints/" JOB "/chk-4/");
    assert_string_equal(shared, "checkpoints/" JOB "/shared/");
    assert_int_equal(ck_sk_dirs_of("savepoints/savepoint-1d0b14-5/v0-1-op2-CURRENT", dir,
                                   sizeof(dir), shared, sizeof(shared)),
                     CK_OK);
    assert_string_equal(dir, "savepoints/savepoint-1d0b14-5/");
    assert_string_equal(shared, "");
    assert_int_equal(
        ck_sk_dirs_of("checkpoints/" JOB "/chk-4/v0-1.state", dir, sizeof(dir), NULL, 0), CK_OK);
    /* a shared file is in no checkpoint's directory */
    assert_int_equal(ck_sk_dirs_of("checkpoints/" JOB "/shared/op1-0-a1-log3", dir, sizeof(dir),
                                   shared, sizeof(shared)),
                     CK_EINVAL);
    assert_string_equal(dir, "");
    assert_int_equal(ck_sk_dirs_of("v0-1.state", dir, sizeof(dir), shared, sizeof(shared)),
                     CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directories),    cmocka_unit_test(test_every_kind_round_trips),
        cmocka_unit_test(test_largest_fit),    cmocka_unit_test(test_builders_refuse),
        cmocka_unit_test(test_parser_refuses), cmocka_unit_test(test_dir_names),
        cmocka_unit_test(test_dirs_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
