/*
 * netframe.h - the frames of a connection between two hosts (both
 * backends: transport.h queues them): a sans-I/O parser of the bytes one
 * connection received, and for the socket backend the check that a
 * frame's engine message names the endpoints the frame carries.
 *
 * A frame on a connection between two hosts is
 *
 *   u32 length (of what follows) | u32 destination endpoint |
 *   u32 source endpoint | engine message (wire.h: 28-byte header, body)
 *
 * little-endian. The parser is fed whatever a read() returned, in pieces
 * of any size, and hands back whole frames; it never touches a socket, a
 * clock or a global, so a fuzzer or a test drives it with a byte buffer:
 *
 *   ck_netframe p;
 *   ck_netframe_init(&p, CK_NETFRAME_CAP);
 *   ck_netframe_feed(&p, data, n);            // CK_ETOOBIG: over the cap
 *   ck_netframe_msg f;
 *   while ((rc = ck_netframe_next(&p, &f)) == 1)
 *       use(f.dst, f.src, f.msg, f.len);       // valid until the next call
 *   // rc == 0: needs more bytes; rc < 0 (CK_ECORRUPT): close the connection
 *   ck_netframe_free(&p);
 *
 * Invariants (ck_netframe_parser_check):
 *  (1) the buffer never holds more than `cap` unconsumed bytes: a feed that
 *      would go past it fails with CK_ETOOBIG and adds nothing (a peer that
 *      floods is cut off; memory stays bounded): off <= len <= size <= cap;
 *  (2) a frame's length is checked as soon as its first 4 bytes are in, and
 *      its header fields (message header, type, version, body length) as
 *      soon as its first 40 bytes are in, before the rest is waited for: a
 *      bad frame is refused without buffering it (unless failed, what waits
 *      starts with a sound head);
 *  (3) after an error the parser stays failed: every later call returns it
 *      (err is 0 or CK_ECORRUPT).
 */
#ifndef CK_NETFRAME_H
#define CK_NETFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "invariant.h"
#include "wire.h"

/* Bytes before the engine message: length, destination, source. */
#define CK_NETFRAME_HDR 12
/* The largest frame, its length field included. */
#define CK_NETFRAME_MAX ((size_t)CK_NETFRAME_HDR + CK_WIRE_HDR + CK_WIRE_MAX_BODY)
/* The default cap of one connection's unconsumed bytes: one largest frame
 * and the start of the next. */
#define CK_NETFRAME_CAP (CK_NETFRAME_MAX + 65536)

typedef struct ck_netframe {
    uint8_t *buf;
    size_t off;  /* consumed bytes at the front of buf */
    size_t len;  /* bytes in buf, consumed ones included */
    size_t size; /* allocated */
    size_t cap;  /* most unconsumed bytes held */
    int err;     /* the error it failed with, or 0 */
} ck_netframe;

/* One frame: msg points into the parser's buffer (the engine message,
 * len bytes), valid until the next call on the parser. */
typedef struct ck_netframe_msg {
    uint32_t dst, src;
    const uint8_t *msg;
    size_t len;
} ck_netframe_msg;

/* Starts an empty parser holding at most cap unconsumed bytes (at least
 * CK_NETFRAME_HDR + CK_WIRE_HDR; a smaller cap only refuses large frames early). */
void ck_netframe_init(ck_netframe *p, size_t cap);

/* Frees the buffer; the parser may be initialized again. */
void ck_netframe_free(ck_netframe *p);

/* Appends n received bytes. Returns 0, CK_ETOOBIG (more than cap bytes
 * would wait unconsumed; nothing is added) or CK_ENOMEM. */
CK_MUST_CHECK
int ck_netframe_feed(ck_netframe *p, const uint8_t *data, size_t n);

/* Room to read into without a copy: at least `want` bytes (less when the
 * cap leaves less) at *space; 0 when the cap is reached. CK_ENOMEM: none.
 * Follow with ck_netframe_wrote(p, bytes actually written). */
CK_MUST_CHECK
int ck_netframe_reserve(ck_netframe *p, size_t want, uint8_t **space, size_t *room);
void ck_netframe_wrote(ck_netframe *p, size_t n);

/* The next whole frame: 1 (f filled), 0 (needs more bytes) or CK_ECORRUPT
 * (a bad length or message header: the connection cannot be trusted). */
CK_MUST_CHECK
int ck_netframe_next(ck_netframe *p, ck_netframe_msg *f);

/* Bytes received and not yet handed out as frames. */
size_t ck_netframe_pending(const ck_netframe *p);

/* Checks the parser's invariants above (invariant.h): 0 or CK_EINVARIANT.
 * (ck_netframe_check below checks a frame's endpoints.) */
CK_MUST_CHECK
int ck_netframe_parser_check(const ck_netframe *p, ck_inv *v);

/*
 * Whether a frame's engine message names the same endpoints as the frame
 * (the engine believes the message's header; the backend checks the
 * frame's source against the authenticated peer, so both must agree):
 *  - DATA and CREDIT: the producer and consumer subtasks of the message's
 *    edge and attempt are the frame's source and destination;
 *  - from the job manager (checkpoint control, DEPLOY, CANCEL, the answer
 *    to a HEARTBEAT): source CK_EP_JM in both;
 *  - a task manager's HEARTBEAT: source task manager `arg`, to the job
 *    manager;
 *  - a subtask's reports to the job manager: the subtask of the message's
 *    attempt is the frame's source;
 *  - a client's request (SAVEPOINT) never comes over a connection: the
 *    only client is the job manager's own process.
 * Returns 0, CK_ECORRUPT (the message header is bad) or CK_EPROTO.
 */
int ck_netframe_check(const ck_graph *g, uint32_t src, uint32_t dst, const uint8_t *msg,
                      size_t len);

/* What a host process does with a frame that came over a connection. */
typedef enum ck_netframe_verdict {
    CK_NETFRAME_DELIVER, /* to a node of this process */
    CK_NETFRAME_HOLD,    /* for a subtask of an attempt not deployed here yet: decide again
                          * (ck_netframe_admit) once it is */
    CK_NETFRAME_BAD,     /* the message does not name the frame's endpoints (ck_netframe_check) */
    CK_NETFRAME_SPOOFED, /* its source does not live on the peer that authenticated */
    CK_NETFRAME_UNKNOWN, /* its destination is not here and is not expected here, or its
                          * source is an endpoint no host has */
} ck_netframe_verdict;

/* Where an endpoint lives as this process knows it: a host number
 * (0..ntm-1 task managers, ntm the job manager), or -1 when unknown (a
 * subtask of an attempt whose placement has not reached this process). */
typedef int (*ck_netframe_host_fn)(void *ctx, uint32_t ep);

/*
 * Decides on frame f, received by host `self` over a connection on which
 * host `peer` authenticated. newest_attempt is the newest attempt whose
 * placement this process knows (-1: none): a frame for a subtask of a
 * newer attempt may be held until it is deployed (deployment and the
 * first data of the attempt race between processes); a frame for an
 * attempt that is known, or older, and not placed here is dropped.
 */
ck_netframe_verdict ck_netframe_admit(const ck_graph *g, int self, int peer,
                                      ck_netframe_host_fn host_of, void *ctx,
                                      int64_t newest_attempt, const ck_netframe_msg *f);

const char *ck_netframe_verdict_name(ck_netframe_verdict v);

#endif
