#include "netauth.h"

#include <string.h>

#include <sodium.h>

#include "common.h"
#include "error.h"

_Static_assert(CK_NETAUTH_KEY == crypto_auth_KEYBYTES, "key size");
_Static_assert(CK_NETAUTH_TAG == crypto_auth_BYTES, "tag size");

static const uint8_t magic_hello[4] = {'C', 'K', 'A', '1'};
static const uint8_t magic_reply[4] = {'C', 'K', 'A', '2'};
#define LABEL_SERVER "chandy server"
#define LABEL_CLIENT "chandy client"

int ck_netauth_global_init(void)
{
    return sodium_init() < 0 ? CK_EINTERNAL : CK_OK;
}

void ck_netauth_secret(uint8_t key[CK_NETAUTH_KEY])
{
    crypto_auth_keygen(key);
}

#define TRANSCRIPT (16 + 8 + 2 * CK_NETAUTH_NONCE)

/* What `prover` proves: a label (who proves), both hosts, both nonces. */
static void transcript(const ck_netauth *a, const char *label, int prover, int other,
                       uint8_t m[TRANSCRIPT])
{
    memset(m, 0, 16);
    memcpy(m, label, strlen(label)); /* labels are shorter than 16 */
    ck_put_u32(m + 16, (uint32_t)prover);
    ck_put_u32(m + 20, (uint32_t)other);
    memcpy(m + 24, a->nonce_client, CK_NETAUTH_NONCE);
    memcpy(m + 24 + CK_NETAUTH_NONCE, a->nonce_server, CK_NETAUTH_NONCE);
}

static void prove(const ck_netauth *a, const char *label, int prover, int other,
                  uint8_t tag[CK_NETAUTH_TAG])
{
    uint8_t m[TRANSCRIPT];
    transcript(a, label, prover, other, m);
    crypto_auth(tag, m, sizeof(m), a->key);
}

/* 1 when tag is prover's proof. */
static int verify(const ck_netauth *a, const char *label, int prover, int other,
                  const uint8_t tag[CK_NETAUTH_TAG])
{
    uint8_t m[TRANSCRIPT];
    transcript(a, label, prover, other, m);
    return crypto_auth_verify(tag, m, sizeof(m), a->key) == 0;
}

static void start(ck_netauth *a, const uint8_t *key, int self, int nhosts)
{
    memset(a, 0, sizeof(*a));
    a->key = key;
    a->self = self;
    a->peer = -1;
    a->nhosts = nhosts;
}

void ck_netauth_client(ck_netauth *a, const uint8_t *key, int self, int server, int nhosts)
{
    start(a, key, self, nhosts);
    a->state = CK_NETAUTH_SEND_HELLO;
    a->peer = server;
    randombytes_buf(a->nonce_client, CK_NETAUTH_NONCE);
    memcpy(a->out, magic_hello, 4);
    ck_put_u32(a->out + 4, (uint32_t)self);
    memcpy(a->out + 8, a->nonce_client, CK_NETAUTH_NONCE);
    a->out_len = CK_NETAUTH_HELLO;
}

void ck_netauth_server(ck_netauth *a, const uint8_t *key, int self, int nhosts)
{
    start(a, key, self, nhosts);
    a->state = CK_NETAUTH_WAIT_HELLO;
}

static int fail(ck_netauth *a, const char *why)
{
    a->state = CK_NETAUTH_FAILED;
    a->why = why;
    sodium_memzero(a->nonce_client, sizeof(a->nonce_client));
    sodium_memzero(a->nonce_server, sizeof(a->nonce_server));
    a->out_len = 0;
    return CK_EAUTH;
}

/* The size of the message the state waits for. */
static size_t expected(const ck_netauth *a)
{
    switch (a->state) {
    case CK_NETAUTH_SEND_HELLO:
        return CK_NETAUTH_REPLY;
    case CK_NETAUTH_WAIT_HELLO:
        return CK_NETAUTH_HELLO;
    case CK_NETAUTH_WAIT_PROOF:
        return CK_NETAUTH_PROOF;
    default:
        return 0;
    }
}

/* A whole message of the state is in a->in. */
static int step(ck_netauth *a)
{
    switch (a->state) {
    case CK_NETAUTH_SEND_HELLO:
        if (memcmp(a->in, magic_reply, 4))
            return fail(a, "not a chandy handshake reply");
        if (ck_get_u32(a->in + 4) != (uint32_t)a->peer)
            return fail(a, "reached another host than the one dialled");
        memcpy(a->nonce_server, a->in + 8, CK_NETAUTH_NONCE);
        if (!verify(a, LABEL_SERVER, a->peer, a->self, a->in + 8 + CK_NETAUTH_NONCE))
            return fail(a, "the server's proof is wrong (another secret)");
        prove(a, LABEL_CLIENT, a->self, a->peer, a->out);
        a->out_len = CK_NETAUTH_PROOF;
        a->state = CK_NETAUTH_DONE;
        return CK_OK;
    case CK_NETAUTH_WAIT_HELLO: {
        if (memcmp(a->in, magic_hello, 4))
            return fail(a, "not a chandy handshake");
        uint32_t host = ck_get_u32(a->in + 4);
        if (host >= (uint32_t)a->nhosts || host == (uint32_t)a->self)
            return fail(a, "the peer claims a host number that is not another host of the run");
        a->peer = (int)host;
        memcpy(a->nonce_client, a->in + 8, CK_NETAUTH_NONCE);
        randombytes_buf(a->nonce_server, CK_NETAUTH_NONCE);
        memcpy(a->out, magic_reply, 4);
        ck_put_u32(a->out + 4, (uint32_t)a->self);
        memcpy(a->out + 8, a->nonce_server, CK_NETAUTH_NONCE);
        prove(a, LABEL_SERVER, a->self, a->peer, a->out + 8 + CK_NETAUTH_NONCE);
        a->out_len = CK_NETAUTH_REPLY;
        a->state = CK_NETAUTH_WAIT_PROOF;
        return CK_OK;
    }
    case CK_NETAUTH_WAIT_PROOF:
        if (!verify(a, LABEL_CLIENT, a->peer, a->self, a->in))
            return fail(a, "the client's proof is wrong (another secret, or a replay)");
        a->state = CK_NETAUTH_DONE;
        return CK_OK;
    default:
        return CK_OK;
    }
}

int ck_netauth_feed(ck_netauth *a, const uint8_t *data, size_t n, size_t *used)
{
    *used = 0;
    if (a->state == CK_NETAUTH_FAILED)
        return CK_EAUTH;
    while (*used < n && a->state != CK_NETAUTH_DONE) {
        size_t want = expected(a) - a->in_len;
        size_t take = CK_MIN(want, n - *used);
        memcpy(a->in + a->in_len, data + *used, take);
        a->in_len += take;
        *used += take;
        if (a->in_len < expected(a))
            break;
        int rc = step(a);
        a->in_len = 0;
        if (rc)
            return rc;
    }
    return CK_OK;
}
