/*
 * test_sinkfs.c - the transactional file sink (io/sinkfs.h): what is read
 * back is exactly what was committed, in order; in-progress and aborted
 * transactions never are; commit and abort are idempotent; a failed write
 * to the committed stream leaves no torn record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "sinkfs.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ck-sinkfs-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const ck_sinkout_stream *stream_of(const ck_sinkout *o, uint32_t id)
{
    for (int i = 0; i < o->n; i++)
        if (o->s[i].sink_id == id)
            return &o->s[i];
    return NULL;
}

static void w(ck_sinkfs *f, uint32_t sink, uint64_t txn, const char *text)
{
    assert_int_equal(ck_sinkfs_write(f, sink, txn, (const uint8_t *)text, strlen(text)), CK_OK);
}

static void test_committed_in_order(void **state)
{
    (void)state;
    ck_sinkfs f;
    assert_int_equal(ck_sinkfs_init(&f, dir), CK_OK);
    w(&f, 7, 0, "direct;");
    w(&f, 7, 12, "t12a;");
    w(&f, 7, 3, "t3;");       /* another transaction: the first part is closed */
    w(&f, 7, 12, "t12b;");    /* and reopened, appending */
    w(&f, 7, 5, "t5;");
    w(&f, 9, 1, "nine;");
    w(&f, 9, 2, "open;");
    assert_int_equal(ck_sinkfs_commit(&f, 7, 12), CK_OK);
    assert_int_equal(ck_sinkfs_commit(&f, 7, 3), CK_OK);
    assert_int_equal(ck_sinkfs_abort(&f, 7, 5), CK_OK);
    assert_int_equal(ck_sinkfs_commit(&f, 9, 1), CK_OK);
    /* Again, or a transaction that wrote nothing: no-ops. */
    assert_int_equal(ck_sinkfs_commit(&f, 7, 12), CK_OK);
    assert_int_equal(ck_sinkfs_commit(&f, 7, 99), CK_OK);
    assert_int_equal(ck_sinkfs_abort(&f, 7, 5), CK_OK);
    assert_int_equal(ck_sinkfs_abort(&f, 8, 1), CK_OK);
    ck_sinkfs_close(&f);

    ck_sinkout o;
    ck_sinkout_init(&o);
    assert_int_equal(ck_sinkfs_load(dir, &o), CK_OK);
    const ck_sinkout_stream *s7 = stream_of(&o, 7), *s9 = stream_of(&o, 9);
    assert_non_null(s7);
    assert_non_null(s9);
    /* .out, then committed parts by transaction; not the aborted one. */
    assert_int_equal(s7->len, strlen("direct;t3;t12a;t12b;"));
    assert_memory_equal(s7->data, "direct;t3;t12a;t12b;", s7->len);
    /* The open transaction is not output. */
    assert_int_equal(s9->len, strlen("nine;"));
    assert_memory_equal(s9->data, "nine;", s9->len);
    assert_null(stream_of(&o, 8));
    ck_sinkout_free(&o);

    /* A later commit of the open one (a restore re-committing) shows it. */
    assert_int_equal(ck_sinkfs_init(&f, dir), CK_OK);
    assert_int_equal(ck_sinkfs_commit(&f, 9, 2), CK_OK);
    ck_sinkfs_close(&f);
    ck_sinkout_init(&o);
    assert_int_equal(ck_sinkfs_load(dir, &o), CK_OK);
    s9 = stream_of(&o, 9);
    assert_int_equal(s9->len, strlen("nine;open;"));
    assert_memory_equal(s9->data, "nine;open;", s9->len);
    ck_sinkout_free(&o);
}

static void test_errors(void **state)
{
    (void)state;
    ck_sinkout o;
    ck_sinkout_init(&o);
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/none", dir);
    assert_int_equal(ck_sinkfs_load(missing, &o), CK_ENOTFOUND);
    ck_sinkfs f;
    assert_int_equal(ck_sinkfs_init(&f, missing), CK_OK);
    /* The directory does not exist: writes fail, not crash. */
    assert_int_equal(ck_sinkfs_write(&f, 1, 0, (const uint8_t *)"x", 1), CK_EIO);
    assert_int_equal(ck_sinkfs_write(&f, 1, 4, (const uint8_t *)"x", 1), CK_EIO);
    ck_sinkfs_close(&f);
    char longdir[700];
    memset(longdir, 'd', sizeof(longdir) - 1);
    longdir[sizeof(longdir) - 1] = 0;
    assert_int_equal(ck_sinkfs_init(&f, longdir), CK_EINVAL);
    /* A full disk: the write fails, said as an error. */
    if (access("/dev/full", W_OK) == 0) {
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/full", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        char link[160];
        snprintf(link, sizeof(link), "%s/00000001.out", sub);
        assert_int_equal(symlink("/dev/full", link), 0);
        assert_int_equal(ck_sinkfs_init(&f, sub), CK_OK);
        assert_int_equal(ck_sinkfs_write(&f, 1, 0, (const uint8_t *)"abc", 3), CK_EIO);
        ck_sinkfs_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed_in_order),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
