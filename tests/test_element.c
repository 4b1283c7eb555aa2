/*
 * test_element.c - stream elements through real buffers and back: records
 * of every size (empty, tiny, larger than a buffer), watermarks and the end
 * of partition, written by a result partition into buffers as small as
 * 256 bytes (so that elements span several buffers) and read back by the
 * element reader. Malformed input is refused without crashing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buffer.h"
#include "element.h"
#include "error.h"
#include "fakeplat.h"
#include "partition.h"
#include "rng.h"
#include "keygroup.h"
#include "wire.h"

static uint8_t payload[70000];

static ck_elem make_record(ck_rng *r, char *keybuf, int i)
{
    ck_elem e = {.tag = CK_EL_RECORD};
    int klen = (int)ck_rng_below(r, 40);
    for (int k = 0; k < klen; k++)
        keybuf[k] = (char)('a' + ck_rng_below(r, 26));
    e.u.rec.key = keybuf;
    e.u.rec.klen = (uint32_t)klen;
    e.u.rec.ts = (int64_t)ck_rng_next(r);
    e.u.rec.value = (int64_t)ck_rng_next(r) - i;
    e.u.rec.ingest = i * 1000;
    e.u.rec.prov = i % 5 == 0 ? CK_PROV_WINDOW : ck_prov_of((int)ck_rng_below(r, 100000), i);
    uint32_t plen;
    switch (ck_rng_below(r, 4)) {
    case 0:
        plen = 0;
        break;
    case 1:
        plen = (uint32_t)ck_rng_below(r, 16);
        break;
    case 2:
        plen = (uint32_t)ck_rng_below(r, 600);
        break;
    default:
        plen = (uint32_t)ck_rng_below(r, sizeof(payload) - 64);
    }
    e.u.rec.plen = plen;
    e.u.rec.payload = payload + (i % 64);
    return e;
}

static void roundtrip(uint32_t segment)
{
    fake_world w = {0};
    fake_plat fp;
    fake_init(&fp, &w, 1);
    ck_rp_config cfg = {.segment_size = segment, .buffers_per_channel = 2,
                        .floating_per_gate = 8, .max_per_channel = 10, .max_overdraft = 5};
    uint32_t dst = 2;
    ck_rp rp;
    assert_int_equal(ck_rp_init(&rp, &fp.plat, 3, 0, 1, &dst, &cfg), 0);
    rp.subs[0].credit = 1 << 30; /* this test is about bytes, not credit */

    ck_rng r;
    ck_rng_init(&r, 7, segment);
    enum { N = 400 };
    static ck_elem sent[N + 2];
    static char keys[N][40];
    for (int i = 0; i < N; i++) {
        if (i % 37 == 5) {
            sent[i].tag = CK_EL_WATERMARK;
            sent[i].u.wm = (int64_t)ck_rng_next(&r);
        } else {
            sent[i] = make_record(&r, keys[i], i);
        }
        assert_int_equal(ck_rp_emit(&rp, 0, &sent[i]), 0);
        if (i % 50 == 0)
            ck_rp_flush(&rp); /* partially filled buffers too */
        ck_rp_send(&rp);
    }
    ck_elem eop = {.tag = CK_EL_END_OF_PARTITION};
    assert_int_equal(ck_rp_emit(&rp, 0, &eop), 0);
    ck_rp_send(&rp);
    assert_true(ck_rp_drained(&rp));

    ck_elem_reader rd;
    ck_elem_reader_init(&rd);
    int got = 0, seen_eop = 0;
    uint32_t seq = 0;
    fake_msg *m;
    while ((m = fake_pop(&w))) {
        ck_wire_hdr h;
        assert_int_equal(ck_wire_decode(m->data, m->len, &h), 0);
        assert_int_equal(h.type, CK_MSG_DATA);
        assert_int_equal(h.seq, seq++);
        assert_true(h.len <= segment);
        assert_int_equal(m->dst, 2);
        ck_elem_reader_feed(&rd, m->data + CK_WIRE_HDR, h.len);
        ck_elem e;
        int rc;
        while ((rc = ck_elem_reader_next(&rd, &e)) == 1) {
            assert_false(seen_eop);
            if (e.tag == CK_EL_END_OF_PARTITION) {
                seen_eop = 1;
                continue;
            }
            const ck_elem *x = &sent[got++];
            assert_int_equal(e.tag, x->tag);
            if (e.tag == CK_EL_WATERMARK) {
                assert_true(e.u.wm == x->u.wm);
                continue;
            }
            assert_true(e.u.rec.ts == x->u.rec.ts);
            assert_true(e.u.rec.value == x->u.rec.value);
            assert_true(e.u.rec.ingest == x->u.rec.ingest);
            assert_true(e.u.rec.prov == x->u.rec.prov);
            assert_int_equal(e.u.rec.klen, x->u.rec.klen);
            assert_memory_equal(e.u.rec.key, x->u.rec.key, x->u.rec.klen);
            assert_int_equal(e.u.rec.plen, x->u.rec.plen);
            if (x->u.rec.plen)
                assert_memory_equal(e.u.rec.payload, x->u.rec.payload, x->u.rec.plen);
        }
        assert_int_equal(rc, 0);
        free(m->data);
        free(m);
    }
    assert_int_equal(got, N);
    assert_true(seen_eop);
    assert_false(ck_elem_reader_partial(&rd));
    ck_elem_reader_free(&rd);
    ck_rp_free(&rp);
    fake_clear(&w);
}

static void test_roundtrip_default_segment(void **state)
{
    (void)state;
    roundtrip(32768);
}

static void test_roundtrip_min_segment(void **state)
{
    (void)state;
    roundtrip(256);
}

static void test_roundtrip_odd_segment(void **state)
{
    (void)state;
    roundtrip(1031);
}

static void test_decode_rejects(void **state)
{
    (void)state;
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "key";
    e.u.rec.klen = 3;
    uint8_t buf[64];
    size_t n = ck_elem_size(&e);
    ck_elem_encode(buf, &e);
    ck_elem out;
    assert_int_equal(ck_elem_decode(buf, n, &out), 0);
    assert_int_equal(ck_elem_decode(buf, n - 1, &out), CK_ECORRUPT); /* short */
    buf[4] = 9;                                                      /* unknown tag */
    assert_int_equal(ck_elem_decode(buf, n, &out), CK_ECORRUPT);
    buf[4] = CK_EL_RECORD;
    ck_put_u16(buf + CK_ELEM_PREFIX + CK_REC_AT_KLEN, 50); /* key longer than the body */
    assert_int_equal(ck_elem_decode(buf, n, &out), CK_ECORRUPT);
}

/* A record carries its key's Java hash: computed when encoded if it was not
 * known, taken as it is when it was, and known after decoding. */
static void test_record_carries_key_hash(void **state)
{
    (void)state;
    ck_elem e = {.tag = CK_EL_RECORD};
    e.u.rec.key = "user-42";
    e.u.rec.klen = 7;
    uint8_t buf[64];
    size_t n = ck_elem_size(&e);
    assert_int_equal(n, CK_ELEM_PREFIX + CK_REC_FIXED + 7);
    ck_elem_encode(buf, &e);
    ck_elem out;
    assert_int_equal(ck_elem_decode(buf, n, &out), 0);
    assert_true(out.u.rec.hashed);
    assert_int_equal(out.u.rec.jhash, ck_kg_java_hash("user-42", 7));
    /* The reader's inline path gives the same. */
    ck_elem_reader rd;
    ck_elem_reader_init(&rd);
    ck_elem_reader_feed(&rd, buf, n);
    assert_int_equal(ck_elem_reader_next(&rd, &out), 1);
    assert_int_equal(out.u.rec.jhash, ck_kg_java_hash("user-42", 7));
    ck_elem_reader_free(&rd);
    /* A known hash is not computed again. */
    e.u.rec.jhash = 12345;
    e.u.rec.hashed = 1;
    ck_elem_encode(buf, &e);
    assert_int_equal(ck_elem_decode(buf, n, &out), 0);
    assert_int_equal(out.u.rec.jhash, 12345);
}

static void test_reader_survives_garbage(void **state)
{
    (void)state;
    ck_rng r;
    ck_rng_init(&r, 99, 1);
    uint8_t junk[512];
    int refused = 0, wanting = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)ck_rng_below(&r, sizeof(junk));
        for (size_t i = 0; i < n; i++)
            junk[i] = (uint8_t)ck_rng_next(&r);
        if (round % 2 && n >= 4) /* plausible length prefixes too */
            ck_put_u32(junk, (uint32_t)ck_rng_below(&r, 100));
        ck_elem_reader rd;
        ck_elem_reader_init(&rd);
        ck_elem_reader_feed(&rd, junk, n);
        ck_elem e;
        int rc, steps = 0;
        while ((rc = ck_elem_reader_next(&rd, &e)) == 1 && steps++ < 1000)
            ;
        /* It stops: every element takes at least its 5-byte prefix, so the
         * bytes run out (0: it waits for more) unless it refuses them. */
        assert_true(steps <= (int)(n / CK_ELEM_PREFIX));
        assert_true(rc == 0 || rc == CK_ECORRUPT);
        if (rc == CK_ECORRUPT)
            refused++;
        else
            wanting++;
        ck_elem_reader_free(&rd);
    }
    assert_true(refused > 100 && wanting > 100);
}

/* Reading in runs gives what reading one element at a time gives: the
 * same records, stopping before the first thing that is not a whole
 * record (a watermark, a cut or damaged element), which next() then reads
 * or refuses. */
static void test_reader_run_agrees(void **state)
{
    (void)state;
    ck_rng r;
    ck_rng_init(&r, 5, 3);
    static uint8_t buf[4096];
    char keys[40][64];
    for (int round = 0; round < 500; round++) {
        size_t len = 0;
        int nrec = (int)ck_rng_below(&r, 40);
        for (int i = 0; i < nrec; i++) {
            ck_elem e;
            if (ck_rng_below(&r, 8) == 0) {
                e = (ck_elem){.tag = CK_EL_WATERMARK};
                e.u.wm = (int64_t)i;
            } else {
                e = make_record(&r, keys[i], i);
                e.u.rec.plen = e.u.rec.plen % 32; /* small: many fit */
            }
            size_t n = ck_elem_size(&e);
            if (len + n > sizeof(buf))
                break;
            ck_elem_encode(buf + len, &e);
            len += n;
        }
        if (len > 0 && ck_rng_below(&r, 3) == 0)
            buf[ck_rng_below(&r, len)] ^= (uint8_t)(1 + ck_rng_below(&r, 255)); /* damage */
        size_t cut = len - (len > 0 ? ck_rng_below(&r, len / 4 + 1) : 0); /* cut short */
        ck_elem_reader a, b;
        ck_elem_reader_init(&a);
        ck_elem_reader_init(&b);
        ck_elem_reader_feed(&a, buf, cut);
        ck_elem_reader_feed(&b, buf, cut);
        for (;;) {
            ck_rec run[8];
            size_t ends[8];
            int m = ck_elem_reader_run(&a, run, ends, 8);
            for (int i = 0; i < m; i++) {
                ck_elem e;
                assert_int_equal(ck_elem_reader_next(&b, &e), 1);
                assert_int_equal(e.tag, CK_EL_RECORD);
                assert_int_equal(e.u.rec.ts, run[i].ts);
                assert_int_equal(e.u.rec.value, run[i].value);
                assert_true(e.u.rec.prov == run[i].prov);
                assert_int_equal(e.u.rec.jhash, run[i].jhash);
                assert_int_equal(e.u.rec.klen, run[i].klen);
                assert_ptr_equal(e.u.rec.key, run[i].key);
                assert_int_equal(b.pos, ends[i]);
            }
            if (m > 0) {
                ck_elem_reader_take(&a, ends[m - 1]);
                continue;
            }
            /* Not a whole record next: both read on one element at a time. */
            ck_elem ea, eb;
            int ra = ck_elem_reader_next(&a, &ea), rb = ck_elem_reader_next(&b, &eb);
            assert_int_equal(ra, rb);
            if (ra != 1)
                break;
            assert_int_equal(ea.tag, eb.tag);
            assert_true(ea.tag != CK_EL_RECORD || ea.u.rec.ts == eb.u.rec.ts);
        }
        ck_elem_reader_free(&a);
        ck_elem_reader_free(&b);
    }
}

static void test_wire_rejects(void **state)
{
    (void)state;
    uint8_t m[CK_WIRE_HDR + 4];
    ck_wire_hdr h = {.type = CK_MSG_CREDIT, .edge = 1, .src = 2, .dst = 3, .arg = 4, .len = 4};
    ck_wire_encode(m, &h);
    ck_wire_hdr out;
    assert_int_equal(ck_wire_decode(m, sizeof(m), &out), 0);
    assert_int_equal(out.arg, 4);
    assert_int_equal(ck_wire_decode(m, sizeof(m) - 1, &out), CK_ECORRUPT);
    assert_int_equal(ck_wire_decode(m, 3, &out), CK_ECORRUPT);
    m[0] = 99;
    assert_int_equal(ck_wire_decode(m, sizeof(m), &out), CK_ECORRUPT);
    m[0] = CK_MSG_CREDIT;
    m[1] = 7; /* version */
    assert_int_equal(ck_wire_decode(m, sizeof(m), &out), CK_ECORRUPT);
}

/* An ACK carries the snapshot's state handles and decodes back. Found by
 * fuzz_wire: an ACK whose key holds a NUL byte was accepted, and the
 * coordinator then saw a shorter key, naming another file. */
static void test_ack_handles_and_bad_keys(void **state)
{
    (void)state;
    ck_cp_ack a = {.id = 3, .sync_ns = 4, .async_ns = 5, .align_ns = 6, .upload_ns = 2,
                   .flags = CK_ACK_UNALIGNED, .inflight = 10};
    const char *key = "checkpoints/j/chk-3/v0-0.state";
    assert_int_equal(
        ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 100, 7, ck_kgr_make(0, 63)), 0);
    assert_int_equal(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, CK_HANDLE_SHARED,
                                    "checkpoints/j/shared/a", 20, 8, ck_kgr_make(64, 127)),
                     0);
    /* what could not be decoded is refused when it is built */
    assert_int_equal(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, "a\nb", 1, 1, CK_KGR_EMPTY),
                     CK_EINVAL);
    assert_int_equal(ck_handles_add(&a.handles, 9, 0, "k", 1, 1, CK_KGR_EMPTY), CK_EINVAL);
    assert_int_equal(
        ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, "k", 1, 1, ck_kgr_make(5, 3)), CK_EINVAL);
    assert_int_equal(a.handles.n, 2);
    uint8_t *b;
    size_t n;
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(n, 52 + 4 + 2 * 29 + strlen(key) + strlen("checkpoints/j/shared/a"));
    ck_cp_ack out;
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    assert_true(out.id == 3 && out.sync_ns == 4 && out.async_ns == 5 && out.align_ns == 6 &&
                out.upload_ns == 2 && out.flags == CK_ACK_UNALIGNED && out.inflight == 10);
    assert_int_equal(out.handles.n, 2);
    assert_string_equal(out.handles.v[0].key, key);
    assert_true(out.handles.v[0].bytes == 100 && out.handles.v[0].crc == 7 &&
                out.handles.v[0].kgr.start == 0 && out.handles.v[0].kgr.end == 63 &&
                out.handles.v[0].flags == 0);
    assert_true(out.handles.v[1].flags == CK_HANDLE_SHARED && out.handles.v[1].kgr.end == 127);
    assert_int_equal(ck_handles_bytes(&out.handles), 120);
    ck_cp_ack_free(&out);
    /* the first key starts after the fixed fields, the count and kind|flags|length */
    b[60 + 5] = 0;
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    b[60 + 5] = '\n'; /* nor a control character: keys end up in log lines */
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    b[60 + 5] = 'x';
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    ck_cp_ack_free(&out);
    for (size_t cut = 0; cut < n; cut++) /* every truncation is refused */
        assert_int_equal(ck_cp_ack_decode(b, cut, &out), CK_ECORRUPT);
    b[48] = 7; /* an unknown kind */
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    /* more channel state than the files hold; no handle at all */
    a.inflight = 121;
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    ck_handles_free(&a.handles);
    a.inflight = 0;
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    /* a key-group range past the largest max parallelism */
    assert_int_equal(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, key, 100, 7,
                                    ck_kgr_make(0, CK_KG_UPPER_BOUND_MAX_PARALLELISM)),
                     0);
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    ck_handles_free(&a.handles);
    /* A native file: its operator and local name travel with it. */
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED | CK_HANDLE_REUSED,
                                           "checkpoints/j/shared/op3-0-a1-000012.sst", 4096, 9,
                                           ck_kgr_make(0, 63), 3, "000012.sst"),
                     0);
    assert_int_equal(ck_handles_add_native(&a.handles, 0, "k", 1, 1, CK_KGR_EMPTY, 3, "../x"),
                     CK_EINVAL);
    assert_int_equal(ck_handles_add_native(&a.handles, 0, "k", 1, 1, CK_KGR_EMPTY, 3, ""),
                     CK_EINVAL);
    assert_int_equal(
        ck_handles_add_native(&a.handles, 0, "k", 1, 1, CK_KGR_EMPTY, CK_HANDLE_NO_OP, "a"),
        CK_EINVAL);
    assert_int_equal(ck_handles_add_native(&a.handles, 4, "k", 1, 1, CK_KGR_EMPTY, 3, "a"),
                     CK_EINVAL);
    assert_int_equal(ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, "k2", 10, 1, CK_KGR_EMPTY),
                     0);
    assert_int_equal(ck_handles_bytes(&a.handles), 4106);
    assert_int_equal(ck_handles_bytes_new(&a.handles), 10);
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    assert_int_equal(out.handles.n, 2);
    assert_true(out.handles.v[0].kind == CK_HANDLE_NATIVE && out.handles.v[0].op == 3 &&
                out.handles.v[0].flags == (CK_HANDLE_SHARED | CK_HANDLE_REUSED));
    assert_string_equal(out.handles.v[0].local, "000012.sst");
    assert_true(out.handles.v[1].op == CK_HANDLE_NO_OP && !out.handles.v[1].local[0]);
    ck_cp_ack_free(&out);
    /* the first handle ends with its local name: a '/' in it is refused */
    size_t at = 44 + 4 + 29 + strlen(a.handles.v[0].key) + 2;
    b[at] = '/';
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    ck_handles_free(&a.handles);
    /* An inline file (under the memory threshold): its bytes travel with
     * it, copies keep them, and only a private handle of its own size
     * with no more than CK_HANDLE_INLINE_MAX bytes can be one. */
    uint8_t *d = malloc(5);
    memcpy(d, "state", 5);
    assert_int_equal(
        ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, 0, "c/v1-0.state", 5, 3, ck_kgr_make(0, 7)),
        0);
    assert_int_equal(ck_handles_inline_last(&a.handles, d, 5), 0);
    assert_int_equal(
        ck_handles_add(&a.handles, CK_HANDLE_SNAPSHOT, CK_HANDLE_INLINE, "k", 1, 1, CK_KGR_EMPTY),
        CK_EINVAL); /* only ck_handles_inline_last makes one */
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED, "s/x.sst", 2, 1,
                                           ck_kgr_make(0, 7), 3, "x.sst"),
                     0);
    d = malloc(2);
    assert_int_equal(ck_handles_inline_last(&a.handles, d, 2), CK_EINVAL); /* shared */
    d = malloc(3);
    assert_int_equal(
        ck_handles_add_native(&a.handles, 0, "c/MANIFEST", 2, 1, ck_kgr_make(0, 7), 3, "MANIFEST"),
        0);
    assert_int_equal(ck_handles_inline_last(&a.handles, d, 3), CK_EINVAL); /* not its size */
    assert_false(ck_handle_stored(&a.handles.v[0]));
    assert_true(ck_handle_stored(&a.handles.v[1]));
    assert_int_equal(ck_handles_bytes_inline(&a.handles), 5);
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    assert_int_equal(out.handles.n, 3);
    assert_int_equal(out.handles.v[0].flags, CK_HANDLE_INLINE);
    assert_memory_equal(out.handles.v[0].data, "state", 5);
    assert_null(out.handles.v[1].data);
    ck_handles copy;
    assert_int_equal(ck_handles_copy(&copy, &out.handles), 0);
    assert_ptr_not_equal(copy.v[0].data, out.handles.v[0].data);
    assert_memory_equal(copy.v[0].data, "state", 5);
    ck_handles_truncate(&copy, 1);
    assert_int_equal(copy.n, 1);
    ck_handles_free(&copy);
    ck_cp_ack_free(&out);
    /* cut inside the inline bytes, or claiming more than the most */
    assert_int_equal(ck_cp_ack_decode(b, n - 3, &out), CK_ECORRUPT);
    uint8_t *big = memmem(b, n, "c/v1-0.state", 12); /* the first handle's key */
    assert_non_null(big);
    big += 12; /* then its u64 bytes */
    assert_int_equal(ck_get_u64(big), 5);
    ck_put_u64(big, CK_HANDLE_INLINE_MAX + 1);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    ck_handles_free(&a.handles);
}

/* Found while fuzzing the element reader: a prefix claiming a 16 MiB
 * element made the reader allocate all of it before any of it arrived. */
static void test_reader_spill_grows_with_data(void **state)
{
    (void)state;
    uint8_t b[9] = {0};
    ck_put_u32(b, CK_REC_MAX_PAYLOAD); /* within the limit: waits for the rest */
    b[4] = CK_EL_RECORD;
    ck_elem_reader rd;
    ck_elem_reader_init(&rd);
    ck_elem e;
    for (int i = 0; i < 3; i++) {
        ck_elem_reader_feed(&rd, b, sizeof(b));
        assert_int_equal(ck_elem_reader_next(&rd, &e), 0);
        assert_true(ck_elem_reader_partial(&rd));
    }
    assert_true(rd.spill_cap <= 1024);
    ck_elem_reader_free(&rd);
}

/* A segment of a merged file (file merging): its offset travels with it,
 * a copy keeps it, and a handle whose offset is cut off, or whose segment
 * would end past 2^64, is refused. */
static void test_segment_handles(void **state)
{
    (void)state;
    ck_cp_ack a = {.id = 4}, out;
    const char *key = "checkpoints/j/shared/v1-0-a1-c4-m0";
    assert_int_equal(ck_handles_segment_last(&a.handles, 0), CK_EINVAL); /* none yet */
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED | CK_HANDLE_SEGMENT, key,
                                           10, 1, ck_kgr_make(0, 63), 3, "a.sst"),
                     CK_EINVAL); /* made by ck_handles_segment_last only */
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED, key, 4096, 9,
                                           ck_kgr_make(0, 63), 3, "000012.sst"),
                     0);
    assert_int_equal(ck_handles_segment_last(&a.handles, 0), 0);
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED, key, 16, 5,
                                           ck_kgr_make(0, 63), 3, "CURRENT"),
                     0);
    assert_int_equal(ck_handles_segment_last(&a.handles, UINT64_MAX - 15), CK_EINVAL);
    ck_handles priv = {0}; /* a segment is shared: its object outlives a checkpoint */
    assert_int_equal(ck_handles_add_native(&priv, 0, key, 16, 5, ck_kgr_make(0, 63), 3, "CURRENT"),
                     0);
    assert_int_equal(ck_handles_segment_last(&priv, 0), CK_EINVAL);
    ck_handles_free(&priv);
    assert_int_equal(ck_handles_segment_last(&a.handles, 4096), 0);
    assert_true(a.handles.v[1].offset == 4096 &&
                a.handles.v[1].flags == (CK_HANDLE_SHARED | CK_HANDLE_SEGMENT));
    /* a copy with the flag keeps the offset; one without it is a whole file */
    ck_handles c = {0};
    assert_int_equal(ck_handles_add_like(&c, &a.handles.v[1], a.handles.v[1].flags), 0);
    assert_int_equal(ck_handles_add_like(&c, &a.handles.v[1], CK_HANDLE_SHARED), 0);
    assert_true(c.v[0].offset == 4096 && c.v[1].offset == 0 && c.v[1].flags == CK_HANDLE_SHARED);
    assert_string_equal(c.v[0].local, "CURRENT");
    ck_handles_free(&c);
    assert_int_equal(ck_handles_copy(&c, &a.handles), 0);
    assert_true(c.v[1].offset == 4096);
    ck_handles_free(&c);
    uint8_t *b;
    size_t n;
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    assert_int_equal(out.handles.n, 2);
    assert_true(out.handles.v[0].offset == 0 && out.handles.v[1].offset == 4096 &&
                out.handles.v[1].bytes == 16 && out.handles.v[1].crc == 5 &&
                (out.handles.v[1].flags & CK_HANDLE_SEGMENT));
    assert_string_equal(out.handles.v[1].key, key);
    ck_cp_ack_free(&out);
    free(b);
    /* the offset is the wire form's last field of a segment: a segment
     * that would end past 2^64 is corrupt */
    ck_handles_free(&a.handles);
    assert_int_equal(ck_handles_add_native(&a.handles, CK_HANDLE_SHARED, key, 16, 5,
                                           ck_kgr_make(0, 63), 3, "CURRENT"),
                     0);
    assert_int_equal(ck_handles_segment_last(&a.handles, 7), 0);
    assert_int_equal(ck_cp_ack_encode(&a, &b, &n), 0);
    assert_int_equal(ck_cp_ack_decode(b, n, &out), 0);
    ck_cp_ack_free(&out);
    /* the one handle's offset is the body's last 8 bytes */
    assert_int_equal(ck_cp_ack_decode(b, n - 1, &out), CK_ECORRUPT); /* cut off */
    size_t flags_at = 52 + 4 + 1; /* the ACK's fields, the count, the kind */
    assert_int_equal(b[flags_at], CK_HANDLE_SHARED | CK_HANDLE_SEGMENT);
    b[flags_at] = CK_HANDLE_SHARED; /* no segment: the offset is 8 bytes too many */
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    b[flags_at] = CK_HANDLE_SEGMENT; /* a segment not shared */
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    b[flags_at] = CK_HANDLE_SHARED | CK_HANDLE_SEGMENT;
    memset(b + n - 8, 0xff, 8); /* offset 2^64 - 1: the segment ends past 2^64 */
    assert_int_equal(ck_cp_ack_decode(b, n, &out), CK_ECORRUPT);
    free(b);
    ck_handles_free(&a.handles);
}

/* A handle keeps its key groups inclusive (keygroup.h) and writes them
 * half-open, as the wire form always had them: [0, 63] is 0 | 64 on the
 * wire, the empty range 0 | 0; both read back as they were. */
static void test_handle_range_wire(void **state)
{
    (void)state;
    ck_handles hs = {0}, back;
    assert_int_equal(ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0, "k", 1, 1, ck_kgr_make(0, 63)), 0);
    assert_int_equal(ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0, "l", 1, 1, CK_KGR_EMPTY), 0);
    assert_int_equal(
        ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0, "m", 1, 1, ck_kgr_make(32767, 32767)), 0);
    ck_wbuf w = {0};
    ck_handles_put(&w, &hs);
    assert_false(w.err);
    /* count | kind flags klen | key | bytes | crc | first | end */
    size_t at = 4 + 4 + 1 + 8 + 4, step = 4 + 1 + 8 + 4 + 4 + 4 + 4 + 1;
    assert_int_equal(ck_get_u32(w.p + at), 0);
    assert_int_equal(ck_get_u32(w.p + at + 4), 64);
    assert_int_equal(ck_get_u32(w.p + at + step), 0);
    assert_int_equal(ck_get_u32(w.p + at + step + 4), 0);
    assert_int_equal(ck_get_u32(w.p + at + 2 * step), 32767);
    assert_int_equal(ck_get_u32(w.p + at + 2 * step + 4), 32768);
    ck_rbuf r = {w.p, w.len, 0, 0};
    const char *why;
    assert_int_equal(ck_handles_get(&r, &back, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &why), 0);
    assert_int_equal(back.n, 3);
    assert_true(ck_kgr_equal(back.v[0].kgr, ck_kgr_make(0, 63)));
    assert_int_equal(back.v[0].kgr.end, 63);
    assert_true(ck_kgr_empty(back.v[1].kgr));
    assert_int_equal(ck_kgr_size(back.v[2].kgr), 1);
    assert_int_equal(back.v[2].kgr.start, 32767);
    /* written again, the same bytes */
    ck_wbuf w2 = {0};
    ck_handles_put(&w2, &back);
    assert_int_equal(w2.len, w.len);
    assert_memory_equal(w2.p, w.p, w.len);
    ck_handles_free(&back);
    /* a range that starts after its end on the wire is refused */
    ck_put_u32(w.p + at, 65);
    r = (ck_rbuf){w.p, w.len, 0, 0};
    assert_int_equal(ck_handles_get(&r, &back, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &why),
                     CK_ECORRUPT);
    ck_handles_free(&hs);
    free(w.p);
    free(w2.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_default_segment),
        cmocka_unit_test(test_roundtrip_min_segment),
        cmocka_unit_test(test_roundtrip_odd_segment),
        cmocka_unit_test(test_decode_rejects),
        cmocka_unit_test(test_record_carries_key_hash),
        cmocka_unit_test(test_reader_survives_garbage),
        cmocka_unit_test(test_reader_run_agrees),
        cmocka_unit_test(test_wire_rejects),
        cmocka_unit_test(test_ack_handles_and_bad_keys),
        cmocka_unit_test(test_handle_range_wire),
        cmocka_unit_test(test_segment_handles),
        cmocka_unit_test(test_reader_spill_grows_with_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
