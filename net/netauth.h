/*
 * netauth.h - mutual authentication of a connection between two host
 * processes of one run, with the run's cluster secret (sans-I/O).
 *
 * The launching process draws a 32-byte secret per run
 * (ck_netauth_secret); the processes it forks inherit it in memory. It is
 * never on a command line, in the environment or in a file. Every
 * connection starts with a challenge-response over it, before any byte is
 * read as a frame:
 *
 *   client -> server  HELLO  "CKA1" | u32 client host | client nonce (32)
 *   server -> client  REPLY  "CKA2" | u32 server host | server nonce (32) |
 *                            HMAC(secret, "chandy server" | server host |
 *                                 client host | client nonce | server nonce)
 *   client -> server  PROOF  HMAC(secret, "chandy client" | client host |
 *                                 server host | client nonce | server nonce)
 *
 * HMAC is libsodium's crypto_auth (HMAC-SHA-512-256), checked with
 * crypto_auth_verify (constant time); nonces come from randombytes_buf.
 * Each side proves the secret over a nonce the other just drew, so a
 * recorded transcript does not pass again (replay); the two proofs carry
 * different labels, so a server's proof sent back as a client's fails
 * (reflection); both host numbers are inside, so a proof made for one
 * pair of hosts is worth nothing for another. The client also checks that
 * it reached the host it dialled.
 *
 * State machine (ck_netauth_feed drives every transition):
 *
 *   client: SEND_HELLO --REPLY ok--> DONE (PROOF queued)
 *   server: WAIT_HELLO --HELLO ok--> WAIT_PROOF (REPLY queued)
 *                      --PROOF ok--> DONE
 *   any    --bad bytes--> FAILED (CK_EAUTH; the caller closes)
 *
 * Bytes to send are in out[0..out_len) after init and after each feed;
 * the caller sends them before any frame. A state never reads more bytes
 * than its message has: what follows the handshake is left to the caller.
 */
#ifndef CK_NETAUTH_H
#define CK_NETAUTH_H

#include <stddef.h>
#include <stdint.h>

#define CK_NETAUTH_KEY 32
#define CK_NETAUTH_NONCE 32
#define CK_NETAUTH_TAG 32
#define CK_NETAUTH_HELLO (8 + CK_NETAUTH_NONCE)
#define CK_NETAUTH_REPLY (8 + CK_NETAUTH_NONCE + CK_NETAUTH_TAG)
#define CK_NETAUTH_PROOF CK_NETAUTH_TAG

typedef enum ck_netauth_state {
    CK_NETAUTH_SEND_HELLO, /* client: HELLO sent, waiting for the REPLY */
    CK_NETAUTH_WAIT_HELLO, /* server */
    CK_NETAUTH_WAIT_PROOF, /* server: REPLY sent */
    CK_NETAUTH_DONE,
    CK_NETAUTH_FAILED,
} ck_netauth_state;

typedef struct ck_netauth {
    ck_netauth_state state;
    int self, peer; /* host numbers; peer: the one dialled, or the one that proved itself */
    int nhosts;     /* host numbers are 0..nhosts-1 */
    const uint8_t *key; /* CK_NETAUTH_KEY bytes, owned by the caller */
    uint8_t nonce_client[CK_NETAUTH_NONCE], nonce_server[CK_NETAUTH_NONCE];
    uint8_t in[CK_NETAUTH_REPLY];
    size_t in_len;
    uint8_t out[CK_NETAUTH_REPLY];
    size_t out_len;
    const char *why; /* FAILED: what was wrong */
} ck_netauth;

/* Initializes libsodium (once per process; later calls do nothing).
 * Returns 0 or CK_EINTERNAL. */
int ck_netauth_global_init(void);

/* Draws a fresh secret. */
void ck_netauth_secret(uint8_t key[CK_NETAUTH_KEY]);

/* Starts the dialling side: host self connects to host server. HELLO is
 * queued in out. */
void ck_netauth_client(ck_netauth *a, const uint8_t *key, int self, int server, int nhosts);

/* Starts the accepting side of host self. */
void ck_netauth_server(ck_netauth *a, const uint8_t *key, int self, int nhosts);

/*
 * Feeds n received bytes; *used tells how many belong to the handshake
 * (the rest, once DONE, are frames). The caller takes the bytes queued in
 * out and sets out_len to 0. Returns 0 (DONE or needs more), or CK_EAUTH
 * (FAILED: why says what; every later call fails too).
 */
int ck_netauth_feed(ck_netauth *a, const uint8_t *data, size_t n, size_t *used);

#endif
