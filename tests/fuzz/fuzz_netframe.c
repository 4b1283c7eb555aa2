/*
 * fuzz_netframe - the frame parser (backend/netframe.h) on
 * arbitrary bytes, as a connection receives them, and the admission of
 * every frame it hands out.
 *
 * Input: u8 c | u8 self | u8 peer | c % 8 cut points, u16 each | the
 * bytes. The bytes are parsed twice: fed whole, and fed in pieces at the
 * cut points (taken modulo the length), taking frames after each piece as
 * the backend does after each read(). c's top bit parses with a small cap
 * (a peer that floods is cut off).
 *
 * Checked: both parsings give the same frames (same endpoints and bytes)
 * and the same outcome (clean end, bytes left over, or an error) unless the
 * small cap refused a feed; a frame lies inside what was fed; unconsumed
 * bytes never exceed the cap; the parser keeps its invariants
 * (ck_netframe_parser_check) after each piece; after an error it stays failed; the
 * endpoint check and admission of every frame of the fuzz job give a
 * verdict and never read outside the frame.
 */
#include "fuzz_common.h"

#include "netframe.h"

typedef struct parsed {
    uint8_t *out; /* every frame as dst | src | len | message */
    size_t len, cap;
    int rc;       /* 0, or the error a feed or a take failed with */
    size_t left;  /* bytes fed and not handed out */
} parsed;

static void keep(parsed *r, const ck_netframe_msg *f)
{
    size_t n = 12 + f->len;
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->out = realloc(r->out, r->cap);
        FUZZ_CHECK(r->out);
    }
    ck_put_u32(r->out + r->len, f->dst);
    ck_put_u32(r->out + r->len + 4, f->src);
    ck_put_u32(r->out + r->len + 8, (uint32_t)f->len);
    memcpy(r->out + r->len + 12, f->msg, f->len);
    r->len += n;
}

/* Where the fuzz job's endpoints live (two task managers, the job
 * manager as host 2): attempt 0's subtasks placed by the graph; subtasks
 * of later attempts are unknown. */
static int host_of(void *ctx, uint32_t ep)
{
    const ck_graph *g = ctx;
    uint32_t attempt, global;
    if (ep == CK_EP_JM)
        return 2;
    if (ep >= CK_EP_TM0 && ep < CK_EP_TM0 + 2)
        return (int)(ep - CK_EP_TM0);
    if (ck_ep_task_split(g, ep, &attempt, &global) && attempt == 0)
        return ck_graph_host(g, global);
    return -1;
}

static void parse(const uint8_t *data, const size_t *cuts, int npieces, size_t cap, int self,
                  int peer, parsed *out)
{
    const ck_graph *g = &fuzz_job_get()->sc.graph;
    ck_netframe p;
    ck_netframe_init(&p, cap);
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < npieces && !out->rc; i++) {
        int rc = ck_netframe_feed(&p, data + cuts[i], cuts[i + 1] - cuts[i]);
        if (rc) {
            FUZZ_CHECK(rc == CK_ETOOBIG || rc == CK_ECORRUPT);
            out->rc = rc;
            break;
        }
        FUZZ_CHECK(ck_netframe_pending(&p) <= cap);
        ck_netframe_msg f;
        while ((rc = ck_netframe_next(&p, &f)) == 1) {
            FUZZ_CHECK(f.len <= CK_NETFRAME_MAX && f.msg);
            keep(out, &f);
            int check = ck_netframe_check(g, f.src, f.dst, f.msg, f.len);
            FUZZ_CHECK(check == 0 || check == CK_ECORRUPT || check == CK_EPROTO);
            ck_netframe_verdict v =
                ck_netframe_admit(g, self, peer, host_of, (void *)g, 0, &f);
            FUZZ_CHECK(v >= CK_NETFRAME_DELIVER && v <= CK_NETFRAME_UNKNOWN);
            FUZZ_CHECK(ck_netframe_verdict_name(v) != NULL);
        }
        FUZZ_CHECK(ck_netframe_parser_check(&p, NULL) == 0); /* netframe.h's invariants */
        if (rc) {
            FUZZ_CHECK(rc == CK_ECORRUPT);
            out->rc = rc;
            /* failed for good */
            ck_netframe_msg again;
            FUZZ_CHECK(ck_netframe_next(&p, &again) == rc);
        }
    }
    out->left = ck_netframe_pending(&p);
    ck_netframe_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int c = data[0], self = data[1] % 3, peer = data[2] % 3;
    int ncuts = c % 8;
    size_t head = 3 + 2 * (size_t)ncuts;
    if (size < head)
        return 0;
    const uint8_t *bytes = data + head;
    size_t n = size - head;
    if (n > CK_NETFRAME_CAP / 2)
        return 0; /* fed whole, it must fit under the cap */
    size_t cuts[10];
    cuts[0] = 0;
    for (int i = 0; i < ncuts; i++)
        cuts[i + 1] = n ? (size_t)(data[3 + 2 * i] | data[4 + 2 * i] << 8) % (n + 1) : 0;
    cuts[ncuts + 1] = n;
    /* sorted cut points: pieces in order */
    for (int i = 1; i <= ncuts; i++)
        for (int j = i + 1; j <= ncuts; j++)
            if (cuts[j] < cuts[i]) {
                size_t t = cuts[i];
                cuts[i] = cuts[j];
                cuts[j] = t;
            }
    size_t cap = c & 0x80 ? CK_NETFRAME_HDR + CK_WIRE_HDR + 64 : CK_NETFRAME_CAP;
    size_t whole[2] = {0, n};
    parsed a, b;
    parse(bytes, whole, 1, CK_NETFRAME_CAP, self, peer, &a);
    parse(bytes, cuts, ncuts + 1, cap, self, peer, &b);
    if (cap == CK_NETFRAME_CAP) {
        FUZZ_CHECK(a.rc == b.rc);
        FUZZ_CHECK(a.len == b.len && (a.len == 0 || memcmp(a.out, b.out, a.len) == 0));
        FUZZ_CHECK(a.rc || a.left == b.left);
    } else if (!b.rc) {
        /* the small cap refused nothing: the same frames */
        FUZZ_CHECK(a.len == b.len && (a.len == 0 || memcmp(a.out, b.out, a.len) == 0));
    }
    free(a.out);
    free(b.out);
    return 0;
}
