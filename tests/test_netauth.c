/*
 * test_netauth.c - the handshake of the socket backend (net/netauth.c),
 * driven byte by byte with no socket: two sides with the secret agree;
 * another secret, a replayed proof, a reflected proof, a wrong host
 * number and junk all fail; what follows the handshake is left over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"
#include "error.h"
#include "netauth.h"

static uint8_t key[CK_NETAUTH_KEY], other_key[CK_NETAUTH_KEY];

static int setup(void **state)
{
    (void)state;
    if (ck_netauth_global_init())
        return -1;
    ck_netauth_secret(key);
    ck_netauth_secret(other_key);
    return memcmp(key, other_key, sizeof(key)) ? 0 : -1;
}

/* Moves what `from` queued into `to`, one byte at a time; returns the
 * first failure, and copies the bytes to `log` if given. */
static int pass(ck_netauth *from, ck_netauth *to, uint8_t *log, size_t *loglen)
{
    uint8_t b[CK_NETAUTH_REPLY];
    size_t n = from->out_len;
    memcpy(b, from->out, n);
    from->out_len = 0;
    if (log) {
        memcpy(log, b, n);
        *loglen = n;
    }
    for (size_t i = 0; i < n; i++) {
        size_t used;
        int rc = ck_netauth_feed(to, b + i, 1, &used);
        if (rc)
            return rc;
        assert_int_equal(used, 1);
    }
    return CK_OK;
}

static void test_handshake(void **state)
{
    (void)state;
    ck_netauth c, s;
    ck_netauth_client(&c, key, 1, 3, 4);
    ck_netauth_server(&s, key, 3, 4);
    assert_int_equal(c.out_len, CK_NETAUTH_HELLO);
    assert_int_equal(pass(&c, &s, NULL, NULL), 0);
    assert_int_equal(s.state, CK_NETAUTH_WAIT_PROOF);
    assert_int_equal(s.out_len, CK_NETAUTH_REPLY);
    assert_int_equal(pass(&s, &c, NULL, NULL), 0);
    assert_int_equal(c.state, CK_NETAUTH_DONE);
    assert_int_equal(c.out_len, CK_NETAUTH_PROOF);
    /* the proof and the first frame's bytes arrive in one read */
    uint8_t b[CK_NETAUTH_PROOF + 5];
    memcpy(b, c.out, CK_NETAUTH_PROOF);
    memcpy(b + CK_NETAUTH_PROOF, "frame", 5);
    size_t used;
    assert_int_equal(ck_netauth_feed(&s, b, sizeof(b), &used), 0);
    assert_int_equal(used, CK_NETAUTH_PROOF);
    assert_int_equal(s.state, CK_NETAUTH_DONE);
    assert_int_equal(s.peer, 1);
}

static void test_wrong_secret(void **state)
{
    (void)state;
    /* a client with another secret is refused by the server... */
    ck_netauth c, s;
    ck_netauth_client(&c, other_key, 0, 1, 3);
    ck_netauth_server(&s, key, 1, 3);
    assert_int_equal(pass(&c, &s, NULL, NULL), 0);
    /* ...and refuses the server first: it cannot check its proof */
    assert_int_equal(pass(&s, &c, NULL, NULL), CK_EAUTH);
    assert_int_equal(c.state, CK_NETAUTH_FAILED);
    assert_int_equal(c.out_len, 0);
    /* a client that answers anyway with a proof made with its own secret */
    uint8_t proof[CK_NETAUTH_PROOF];
    memset(proof, 0x5a, sizeof(proof));
    size_t used;
    assert_int_equal(ck_netauth_feed(&s, proof, sizeof(proof), &used), CK_EAUTH);
    assert_int_equal(s.state, CK_NETAUTH_FAILED);
    assert_non_null(s.why);
    /* failed stays failed */
    assert_int_equal(ck_netauth_feed(&s, proof, 1, &used), CK_EAUTH);
}

static void test_replay(void **state)
{
    (void)state;
    /* Record a whole good handshake... */
    ck_netauth c, s;
    ck_netauth_client(&c, key, 0, 2, 3);
    ck_netauth_server(&s, key, 2, 3);
    uint8_t hello[CK_NETAUTH_REPLY], proof[CK_NETAUTH_REPLY];
    size_t hl, pl;
    assert_int_equal(pass(&c, &s, hello, &hl), 0);
    assert_int_equal(pass(&s, &c, NULL, NULL), 0);
    assert_int_equal(pass(&c, &s, proof, &pl), 0);
    assert_int_equal(s.state, CK_NETAUTH_DONE);
    /* ...and play the client's side again to a new server: it draws a new
     * nonce, so the old proof does not pass. */
    ck_netauth s2;
    ck_netauth_server(&s2, key, 2, 3);
    size_t used;
    assert_int_equal(ck_netauth_feed(&s2, hello, hl, &used), 0);
    assert_int_equal(s2.state, CK_NETAUTH_WAIT_PROOF);
    assert_int_equal(ck_netauth_feed(&s2, proof, pl, &used), CK_EAUTH);
    assert_int_equal(s2.state, CK_NETAUTH_FAILED);
}

static void test_reflection(void **state)
{
    (void)state;
    /* A stranger without the secret sends a HELLO, gets the server's
     * proof, and sends it back as its own: the labels differ. */
    ck_netauth s;
    ck_netauth_server(&s, key, 2, 3);
    ck_netauth fake;
    ck_netauth_client(&fake, other_key, 0, 2, 3);
    assert_int_equal(pass(&fake, &s, NULL, NULL), 0);
    uint8_t reply[CK_NETAUTH_REPLY];
    memcpy(reply, s.out, CK_NETAUTH_REPLY);
    s.out_len = 0;
    size_t used;
    assert_int_equal(ck_netauth_feed(&s, reply + 8 + CK_NETAUTH_NONCE, CK_NETAUTH_TAG, &used),
                     CK_EAUTH);

    /* Nor does a server's proof made for one client host pass for
     * another: a HELLO claiming host 1 with the nonce of a session that
     * claimed host 0 gets a different proof. */
    ck_netauth a, b;
    ck_netauth_server(&a, key, 2, 3);
    ck_netauth_server(&b, key, 2, 3);
    uint8_t hello[CK_NETAUTH_HELLO];
    memcpy(hello, "CKA1", 4);
    ck_put_u32(hello + 4, 0);
    memset(hello + 8, 7, CK_NETAUTH_NONCE);
    assert_int_equal(ck_netauth_feed(&a, hello, sizeof(hello), &used), 0);
    ck_put_u32(hello + 4, 1);
    assert_int_equal(ck_netauth_feed(&b, hello, sizeof(hello), &used), 0);
    /* b's proof (for host 1) fed to a (which talks to host 0) fails */
    assert_int_equal(ck_netauth_feed(&a, b.out + 8 + CK_NETAUTH_NONCE, CK_NETAUTH_TAG, &used),
                     CK_EAUTH);
}

static void test_bad_hello(void **state)
{
    (void)state;
    size_t used;
    uint8_t hello[CK_NETAUTH_HELLO] = {0};
    memcpy(hello, "CKA1", 4);
    /* host numbers: the server's own, and one past the run's hosts */
    int hosts[] = {2, 3, -1};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        ck_netauth s;
        ck_netauth_server(&s, key, 2, 3);
        ck_put_u32(hello + 4, (uint32_t)hosts[i]);
        assert_int_equal(ck_netauth_feed(&s, hello, sizeof(hello), &used), CK_EAUTH);
        assert_int_equal(s.out_len, 0);
    }
    /* a frame where a HELLO should be */
    ck_netauth s;
    ck_netauth_server(&s, key, 2, 3);
    uint8_t frame[64] = {0, 0, 0, 40};
    assert_int_equal(ck_netauth_feed(&s, frame, sizeof(frame), &used), CK_EAUTH);
    assert_int_equal(used, CK_NETAUTH_HELLO);
    /* a server that answers as another host than the one dialled */
    ck_netauth c, t;
    ck_netauth_client(&c, key, 0, 1, 3);
    ck_netauth_server(&t, key, 2, 3);
    assert_int_equal(pass(&c, &t, NULL, NULL), 0);
    assert_int_equal(pass(&t, &c, NULL, NULL), CK_EAUTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_reflection),
        cmocka_unit_test(test_bad_hello),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
