/*
 * test_sinkfs.c - the transactional file sink (io/sinkfs.h): what is read
 * back is exactly what was committed, in order; in-progress and aborted
 * transactions never are; commit and abort are idempotent; a failed write
 * to the committed stream leaves no torn record; held writes reach the
 * files in the same order, and an aborted transaction's never do; an
 * output fault armed applies once, to the next commit of a transaction
 * with records, and says exactly what it did.
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

#include "element.h"
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

/* Sink id's committed stream in o is exactly text. */
static void expect_stream(const ck_sinkout *o, uint32_t id, const char *text)
{
    const ck_sinkout_stream *st = stream_of(o, id);
    assert_non_null(st);
    assert_int_equal(st->len, strlen(text));
    assert_memory_equal(st->data, text, st->len);
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
    /* .out, then committed parts by transaction; not the aborted one. */
    expect_stream(&o, 7, "direct;t3;t12a;t12b;");
    /* The open transaction is not output. */
    expect_stream(&o, 9, "nine;");
    assert_null(stream_of(&o, 8));
    ck_sinkout_free(&o);

    /* A later commit of the open one (a restore re-committing) shows it. */
    assert_int_equal(ck_sinkfs_init(&f, dir), CK_OK);
    assert_int_equal(ck_sinkfs_commit(&f, 9, 2), CK_OK);
    ck_sinkfs_close(&f);
    ck_sinkout_init(&o);
    assert_int_equal(ck_sinkfs_load(dir, &o), CK_OK);
    expect_stream(&o, 9, "nine;open;");
    ck_sinkout_free(&o);
}

static off_t size_of(const char *name)
{
    char path[160];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) ? -1 : st.st_size;
}

static void test_held(void **state)
{
    (void)state;
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/held", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    ck_sinkfs f;
    assert_int_equal(ck_sinkfs_init(&f, sub), CK_OK);
    ck_sinkfs_hold(&f, 16);
    w(&f, 4, 0, "aaaa;");
    w(&f, 4, 0, "bbbb;");
    /* Held: no file yet. */
    assert_int_equal(size_of("held/00000004.out"), -1);
    w(&f, 4, 0, "cccccc;"); /* 17 bytes would not fit: the 10 held go first */
    assert_int_equal(size_of("held/00000004.out"), 10);
    w(&f, 4, 7, "t7;"); /* another transaction: the committed stream's 7 go */
    assert_int_equal(size_of("held/00000004.out"), 17);
    assert_int_equal(size_of("held/00000004.part-00000000000000000007.inprogress"), -1);
    w(&f, 4, 7, "a write longer than what is held;"); /* in order, after "t7;" */
    assert_int_equal(size_of("held/00000004.part-00000000000000000007.inprogress"), 36);
    w(&f, 4, 7, "t7 end;");
    assert_int_equal(ck_sinkfs_commit(&f, 4, 7), CK_OK); /* writes what it holds */
    assert_int_equal(size_of("held/00000004.part-00000000000000000007"), 43);
    w(&f, 4, 8, "gone;");
    assert_int_equal(ck_sinkfs_abort(&f, 4, 8), CK_OK); /* never written */
    w(&f, 4, 9, "t9;");
    assert_int_equal(ck_sinkfs_commit(&f, 4, 9), CK_OK);
    w(&f, 5, 0, "five;");
    w(&f, 5, 3, "open;"); /* five; is written, open; held */
    assert_int_equal(size_of("held/00000005.out"), 5);
    assert_int_equal(ck_sinkfs_flush(&f), CK_OK);
    assert_int_equal(size_of("held/00000005.part-00000000000000000003.inprogress"), 5);
    w(&f, 5, 0, "end;");
    assert_int_equal(ck_sinkfs_close(&f), CK_OK); /* writes it too */

    ck_sinkout o;
    ck_sinkout_init(&o);
    assert_int_equal(ck_sinkfs_load(sub, &o), CK_OK);
    expect_stream(&o, 4, "aaaa;bbbb;cccccc;t7;a write longer than what is held;t7 end;t9;");
    expect_stream(&o, 5, "five;end;");
    ck_sinkout_free(&o);

    /* A held write that cannot reach its file fails when it is written. */
    if (access("/dev/full", W_OK) == 0) {
        char full[160], link[200];
        snprintf(full, sizeof(full), "%s/heldfull", dir);
        assert_int_equal(mkdir(full, 0755), 0);
        snprintf(link, sizeof(link), "%s/00000001.out", full);
        assert_int_equal(symlink("/dev/full", link), 0);
        assert_int_equal(ck_sinkfs_init(&f, full), CK_OK);
        ck_sinkfs_hold(&f, 16);
        assert_int_equal(ck_sinkfs_write(&f, 1, 0, (const uint8_t *)"abc", 3), CK_OK);
        assert_int_equal(ck_sinkfs_flush(&f), CK_EIO);
        assert_int_equal(ck_sinkfs_write(&f, 1, 0, (const uint8_t *)"def", 3), CK_OK);
        assert_int_equal(ck_sinkfs_close(&f), CK_EIO);
    }
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

/* Writes n encoded records of key k (values base, base + 1, ...) to (sink, txn). */
static void recs(ck_sinkfs *f, uint32_t sink, uint64_t txn, const char *k, int64_t base, int n)
{
    for (int i = 0; i < n; i++) {
        ck_rec r = {.ts = 10 * i, .value = base + i, .prov = (uint64_t)i, .key = k,
                    .klen = (uint32_t)strlen(k)};
        uint8_t b[128];
        size_t len = ck_rec_size(&r, 0);
        ck_rec_encode(b, &r, 0, len);
        assert_int_equal(ck_sinkfs_write(f, sink, txn, b, len), CK_OK);
    }
}

/* The values of the records of sink id's committed stream in o. */
static int values(const ck_sinkout *o, uint32_t id, int64_t *v, int max)
{
    const ck_sinkout_stream *st = stream_of(o, id);
    int n = 0;
    for (size_t pos = 0; st && pos < st->len && n < max; n++) {
        ck_elem e;
        size_t m = (size_t)ck_get_u32(st->data + pos) + 4;
        assert_int_equal(ck_elem_decode(st->data + pos, m, &e), 0);
        v[n] = e.u.rec.value;
        pos += m;
    }
    return n;
}

static const int kinds[] = {CK_SINKFS_DUPLICATE, CK_SINKFS_DROP, CK_SINKFS_CORRUPT};

/*
 * Each output fault, armed as event 3 (and event 5 for another sink),
 * waits for a commit of its sink that commits records: not a commit of a
 * transaction already committed or empty, not another sink's. It applies
 * once, claimed whichever commit comes first, and records the sink, the
 * transaction and the records it touched, counted by decoding them.
 */
static void test_output_faults(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        char sub[96];
        snprintf(sub, sizeof(sub), "%s/k%d", dir, k);
        assert_int_equal(mkdir(sub, 0755), 0);
        ck_sinkfs f;
        assert_int_equal(ck_sinkfs_init(&f, sub), CK_OK);
        ck_sinkfs_hold(&f, k == 1 ? 4096 : 0); /* held writes: committed all the same */
        int fault[2] = {5, 3}, kind[2] = {kinds[(k + 1) % 3], kinds[k]}, applied;
        recs(&f, 0x10000, 1, "a", 100, 4); /* committed before the fault is armed */
        assert_int_equal(ck_sinkfs_commit_faults(&f, 0x10000, 1, &fault[1], &kind[1], 1, 5,
                                                 &applied), CK_OK);
        assert_int_equal(applied, -1);
        ck_sinkfs_fault o;
        assert_int_equal(ck_sinkfs_fault_read(sub, 3, &o), CK_ENOTFOUND);
        assert_int_equal(ck_sinkfs_arm(sub, 3), CK_OK);
        /* A commit again, an empty one, and another sink's: none claims it. */
        assert_int_equal(ck_sinkfs_commit_faults(&f, 0x10000, 1, &fault[1], &kind[1], 1, 6,
                                                 &applied), CK_OK);
        assert_int_equal(applied, -1);
        assert_int_equal(ck_sinkfs_commit_faults(&f, 0x10000, 2, &fault[1], &kind[1], 1, 7,
                                                 &applied), CK_OK);
        assert_int_equal(applied, -1);
        recs(&f, 0x20001, 1, "b", 0, 2);
        assert_int_equal(ck_sinkfs_commit(&f, 0x20001, 1), CK_OK);
        /* Sink 1's subtask 1 commits 3 records: the fault (second of two
         * the sink has, the first not armed) applies there. */
        recs(&f, 0x10001, 4, "c", 200, 3);
        recs(&f, 0x10000, 5, "d", 300, 2);
        assert_int_equal(ck_sinkfs_commit_faults(&f, 0x10001, 4, fault, kind, 2, 1000, &applied),
                         CK_OK);
        assert_int_equal(applied, 1);
        /* Applied once: the next commit of the sink is left alone. */
        assert_int_equal(ck_sinkfs_commit_faults(&f, 0x10000, 5, fault, kind, 2, 2000, &applied),
                         CK_OK);
        assert_int_equal(applied, -1);
        ck_sinkfs_close(&f);

        assert_int_equal(ck_sinkfs_fault_read(sub, 3, &o), CK_OK);
        assert_int_equal(o.kind, kinds[k]);
        assert_int_equal(o.sink, 0x10001);
        assert_int_equal(o.txn, 4);
        assert_int_equal(o.at, 1000);
        assert_int_equal(o.records, kinds[k] == CK_SINKFS_CORRUPT ? 1 : 3);
        assert_int_equal(ck_sinkfs_fault_read(sub, 5, &o) == CK_ENOTFOUND, 1);
        assert_int_equal(ck_sinkfs_fault_read(sub, 3, &o), CK_OK);

        ck_sinkout out, touched;
        ck_sinkout_init(&out);
        ck_sinkout_init(&touched);
        assert_int_equal(ck_sinkfs_load(sub, &out), CK_OK);
        assert_int_equal(ck_sinkfs_fault_records(sub, &o, &touched), CK_OK);
        int64_t v[16], t[16];
        int n = values(&out, 0x10001, v, 16), nt = values(&touched, 0x10001, t, 16);
        if (kinds[k] == CK_SINKFS_DUPLICATE) {
            /* the transaction twice, the copy right after it */
            assert_int_equal(n, 6);
            for (int i = 0; i < 6; i++)
                assert_int_equal(v[i], 200 + i % 3);
            assert_int_equal(nt, 3);
        } else if (kinds[k] == CK_SINKFS_DROP) {
            assert_int_equal(n, 0); /* lost, kept aside as the record of it */
            assert_int_equal(nt, 3);
            assert_int_equal(t[2], 202);
        } else {
            /* the first record's value lowered by 2^62, its original kept */
            assert_int_equal(n, 3);
            assert_int_equal(v[0], 200 - (INT64_C(1) << 62));
            assert_int_equal(v[1], 201);
            assert_int_equal(o.before, 200);
            assert_int_equal(o.after, v[0]);
            assert_int_equal(nt, 1);
            assert_int_equal(t[0], 200);
        }
        /* Nothing else changed. */
        assert_int_equal(values(&out, 0x10000, v, 16), 6);
        assert_int_equal(values(&out, 0x20001, v, 16), 2);
        ck_sinkout_free(&out);
        ck_sinkout_free(&touched);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed_in_order),
        cmocka_unit_test(test_held),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_output_faults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
