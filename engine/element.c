#include "element.h"

#include <stdlib.h>

#include "error.h"

/* Upper bound on one element: the largest record plus its prefix. */
#define ELEM_MAX (CK_ELEM_PREFIX + CK_REC_FIXED + CK_REC_MAX_KEY + CK_REC_MAX_PAYLOAD)

int ck_elem_decode(const uint8_t *p, size_t n, ck_elem *e)
{
    if (n < CK_ELEM_PREFIX || ck_get_u32(p) != n - 4)
        return CK_ECORRUPT;
    const uint8_t *b = p + CK_ELEM_PREFIX;
    size_t blen = n - CK_ELEM_PREFIX;
    e->tag = p[4];
    switch (e->tag) {
    case CK_EL_RECORD: {
        if (blen < CK_REC_FIXED)
            return CK_ECORRUPT;
        return ck_rec_decode_body(b, blen, &e->u.rec);
    }
    case CK_EL_WATERMARK:
        if (blen != 8)
            return CK_ECORRUPT;
        e->u.wm = ck_get_i64(b);
        return CK_OK;
    case CK_EL_END_OF_PARTITION:
        return blen == 0 ? CK_OK : CK_ECORRUPT;
    case CK_EL_BARRIER:
    case CK_EL_CANCEL:
        if (blen != 20)
            return CK_ECORRUPT;
        e->u.barrier.id = ck_get_u64(b);
        e->u.barrier.ts = ck_get_i64(b + 8);
        e->u.barrier.flags = ck_get_u32(b + 16);
        return e->u.barrier.id ? CK_OK : CK_ECORRUPT;
    }
    return CK_ECORRUPT;
}

void ck_elem_reader_init(ck_elem_reader *r)
{
    memset(r, 0, sizeof(*r));
}

void ck_elem_reader_free(ck_elem_reader *r)
{
    free(r->spill);
    memset(r, 0, sizeof(*r));
}

void ck_elem_reader_feed(ck_elem_reader *r, const uint8_t *data, size_t len)
{
    r->data = data;
    r->len = len;
    r->pos = 0;
}

int ck_elem_reader_partial(const ck_elem_reader *r)
{
    return r->spill_len > 0;
}

static int spill_reserve(ck_elem_reader *r, size_t want)
{
    if (want <= r->spill_cap)
        return CK_OK;
    size_t cap = r->spill_cap ? r->spill_cap : 256;
    while (cap < want)
        cap *= 2;
    uint8_t *p = realloc(r->spill, cap);
    if (!p)
        return CK_ENOMEM;
    r->spill = p;
    r->spill_cap = cap;
    return CK_OK;
}

/* Appends up to `want - spill_len` bytes of the current buffer to the spill.
 * The spill grows with the bytes that arrived, not with the length an
 * element's prefix claims: nine bytes of a peer must not cost 16 MiB. */
static int spill_take(ck_elem_reader *r, size_t want)
{
    size_t take = CK_MIN(want - r->spill_len, r->len - r->pos);
    int rc = spill_reserve(r, r->spill_len + take);
    if (rc)
        return rc;
    if (take)
        memcpy(r->spill + r->spill_len, r->data + r->pos, take);
    r->spill_len += take;
    r->pos += take;
    return CK_OK;
}

int ck_elem_reader_next_slow(ck_elem_reader *r, ck_elem *e)
{
    int rc;
    if (r->spill_len > 0) {
        /* Continue an element that spans buffers. */
        if (r->spill_want == 0) {
            if ((rc = spill_take(r, 4)))
                return rc;
            if (r->spill_len < 4)
                return 0;
            size_t n = (size_t)ck_get_u32(r->spill) + 4;
            if (n < CK_ELEM_PREFIX || n > ELEM_MAX)
                return CK_ECORRUPT;
            r->spill_want = n;
        }
        if ((rc = spill_take(r, r->spill_want)))
            return rc;
        if (r->spill_len < r->spill_want)
            return 0;
        size_t n = r->spill_want;
        r->spill_len = 0;
        r->spill_want = 0;
        if ((rc = ck_elem_decode(r->spill, n, e)))
            return rc;
        return 1;
    }
    size_t avail = r->len - r->pos;
    if (avail == 0)
        return 0;
    if (avail >= 4) {
        size_t n = (size_t)ck_get_u32(r->data + r->pos) + 4;
        if (n < CK_ELEM_PREFIX || n > ELEM_MAX)
            return CK_ECORRUPT;
        if (n <= avail) {
            rc = ck_elem_decode(r->data + r->pos, n, e);
            r->pos += n;
            return rc ? rc : 1;
        }
        r->spill_want = n;
        if ((rc = spill_take(r, n)))
            return rc;
        return 0;
    }
    r->spill_want = 0;
    if ((rc = spill_take(r, 4)))
        return rc;
    return 0;
}
