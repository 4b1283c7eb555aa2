/*
 * fuzz_element - the element reader (ck_elem_reader) on arbitrary bytes cut
 * into buffers.
 *
 * Input: u8 c | c % 8 cut points, u16 each | the bytes. The bytes are read
 * twice: whole, in one buffer, one element at a time (ck_elem_reader_next);
 * and cut into buffers at the cut points (taken modulo the length, so that
 * elements span buffers), read as the gate reads them: the run of whole
 * records first (ck_elem_reader_run/take), then one element at a time.
 *
 * Checked: both readings give the same elements, the same outcome (clean
 * end, a partial element left over, or the same error) and re-encode
 * (ck_elem_encode) to exactly the bytes they were decoded from; a reader
 * never hands back an element after an error.
 */
#include "fuzz_common.h"

#include "element.h"

typedef struct reading {
    uint8_t *out; /* every element re-encoded, in order */
    size_t len, cap;
    int count;
    int rc;       /* 0: the input ended, else the error */
    int partial;  /* a partial element was left over */
} reading;

static void append(reading *r, const ck_elem *e)
{
    size_t n = ck_elem_size(e);
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->out = realloc(r->out, r->cap);
        FUZZ_CHECK(r->out);
    }
    ck_elem_encode(r->out + r->len, e);
    r->len += n;
    r->count++;
}

/* Reads buffers [cuts[i], cuts[i+1]) of data; mixed: the gate's way. */
static void read_cut(const uint8_t *data, const size_t *cuts, int nbufs, int mixed, reading *out)
{
    ck_elem_reader rd;
    ck_elem_reader_init(&rd);
    memset(out, 0, sizeof(*out));
    for (int b = 0; b < nbufs && !out->rc; b++) {
        ck_elem_reader_feed(&rd, data + cuts[b], cuts[b + 1] - cuts[b]);
        for (;;) {
            if (mixed) {
                ck_rec recs[4];
                size_t ends[4];
                int n = ck_elem_reader_run(&rd, recs, ends, 4);
                if (n > 0) {
                    for (int i = 0; i < n; i++) {
                        ck_elem e = {.tag = CK_EL_RECORD, .u.rec = recs[i]};
                        append(out, &e);
                    }
                    ck_elem_reader_take(&rd, ends[n - 1]);
                    continue;
                }
            }
            ck_elem e;
            int rc = ck_elem_reader_next(&rd, &e);
            if (rc < 0) {
                out->rc = rc;
                break;
            }
            if (rc == 0)
                break;
            FUZZ_CHECK(rc == 1);
            FUZZ_CHECK(e.tag >= CK_EL_RECORD && e.tag <= CK_EL_TAG_MAX);
            append(out, &e);
        }
        FUZZ_CHECK(out->rc || rd.pos == rd.len); /* a buffer is read through */
    }
    out->partial = !out->rc && ck_elem_reader_partial(&rd);
    ck_elem_reader_free(&rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int ncuts = data[0] % 8;
    if (size < 1 + 2 * (size_t)ncuts)
        return 0;
    const uint8_t *bytes = data + 1 + 2 * ncuts;
    size_t n = size - 1 - 2 * (size_t)ncuts;

    /* Cut points, sorted (insertion sort of at most 7). */
    size_t cuts[10];
    cuts[0] = 0;
    for (int i = 0; i < ncuts; i++) {
        size_t c = ck_get_u16(data + 1 + 2 * i) % (n + 1);
        int j = i + 1;
        while (j > 1 && cuts[j - 1] > c) {
            cuts[j] = cuts[j - 1];
            j--;
        }
        cuts[j] = c;
    }
    cuts[ncuts + 1] = n;

    /* Copies, so that a read past a buffer's end is caught by ASan. */
    uint8_t *copy = malloc(n ? n : 1);
    FUZZ_CHECK(copy);
    memcpy(copy, bytes, n);

    size_t whole[2] = {0, n};
    reading ref, cut, plain;
    read_cut(copy, whole, 1, 0, &ref);
    read_cut(copy, cuts, ncuts + 1, 1, &cut);
    read_cut(copy, cuts, ncuts + 1, 0, &plain);

    /* The whole reading's elements are the input's first bytes, re-encoded. */
    FUZZ_CHECK(ref.len <= n && (ref.len == 0 || memcmp(ref.out, copy, ref.len) == 0));
    FUZZ_CHECK(ref.rc || ref.partial || ref.len == n);
    const reading *other[2] = {&cut, &plain};
    for (int i = 0; i < 2; i++) {
        FUZZ_CHECK(other[i]->count == ref.count);
        FUZZ_CHECK(other[i]->len == ref.len);
        FUZZ_CHECK(ref.len == 0 || memcmp(other[i]->out, ref.out, ref.len) == 0);
        FUZZ_CHECK(other[i]->rc == ref.rc);
        FUZZ_CHECK(other[i]->partial == ref.partial);
    }
    free(ref.out);
    free(cut.out);
    free(plain.out);
    free(copy);
    return 0;
}
