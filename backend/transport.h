/*
 * transport.h - one connection's sending side, as both backends shape it:
 * the frames queued for one peer host, when they may leave, and how fast.
 *
 * Between two hosts there is one connection per direction, as Flink's
 * task managers share one Netty (TCP) connection per pair: the frames of
 * every channel and control message between them go through it in the
 * order they were sent, whatever their channel. A frame is
 *
 *   u32 length (of what follows) | u32 destination | u32 source | message
 *
 * (netframe.h parses it on the other side). The policy that both backends
 * follow, and that lives only here:
 *   - FIFO: bytes leave in the order they were queued, never reordered;
 *   - latency: a frame queued while a slow link adds latency `lat` leaves
 *     no earlier than `lat` after it was queued, and never before a frame
 *     queued before it (a mark per frame, kept in order);
 *   - pacing: with a rate (bytes per second, 0: none), bytes leave in
 *     slices of 10 ms worth of the rate, each after the previous one's
 *     time at that rate (the socket backend paces itself; SimGrid's link
 *     model times whole batches, so it passes 0); what was queued before
 *     a link slowed is paced too, once it is;
 *   - holding: while the plan cuts the two hosts, nothing leaves (the
 *     caller asks ck_plan_is_cut and does not call ck_tp_due); the bytes
 *     wait, as TCP retransmits until the network heals;
 *   - a crash of either host loses what is queued (ck_tp_reset).
 * Whatever leaves together is one transfer for the backend (a write on a
 * socket, a simulated transfer in SimGrid), so the number of transfers
 * grows with host pairs and time, not with channels and records.
 *
 *   EMPTY --ck_tp_put--> QUEUED --ck_tp_due (end > off), ck_tp_sent--> EMPTY
 *                          |  (or QUEUED while bytes remain)
 *                          +--ck_tp_reset--> EMPTY
 *
 * Invariants (ck_tp_check):
 *   (1) off <= len <= cap, and a connection with nothing waiting is at
 *       its start (off = len = 0);
 *   (2) 0 <= mhead <= mtail <= mcap;
 *   (3) marks[mhead..mtail) are in order of both end (strictly) and at,
 *       and cover bytes past off: the first ends past off, the last at
 *       len;
 *   (4) next_ok is 0 unless paced (the caller's rate: not checked here).
 */
#ifndef CK_TRANSPORT_H
#define CK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "invariant.h"

/* Bytes of a frame before its message: length, destination, source. */
#define CK_TP_HDR 12

typedef struct ck_tp_mark {
    size_t end; /* the bytes up to here... */
    ck_time at; /* ...may leave at this time */
} ck_tp_mark;

typedef struct ck_tp_out {
    uint8_t *buf;
    size_t off, len, cap; /* bytes [off, len) wait to leave */
    ck_tp_mark *marks;
    int mhead, mtail, mcap;
    ck_time next_ok; /* paced: nothing leaves before then */
} ck_tp_out;

/* Queues one frame: msg (len bytes) from endpoint src to endpoint dst, at
 * time now, delayed by lat, on a link paced at rate (0: not paced).
 * Returns 0 or CK_ENOMEM (nothing queued). */
CK_MUST_CHECK
int ck_tp_put(ck_tp_out *o, uint32_t dst, uint32_t src, const uint8_t *msg, size_t len,
              ck_time now, ck_time lat, int64_t rate);

/* How far the queued bytes may leave at time now: an offset end, with
 * off <= end <= len (end == off: none yet). With rate > 0 the slice is
 * charged to the pace: call it only when that much will be written, and
 * ck_tp_sent what was. */
size_t ck_tp_due(ck_tp_out *o, ck_time now, int64_t rate);

/* A connection's queue starts this big, doubles as needed, and is let go
 * when it empties above CK_TP_KEEP. */
#define CK_TP_FIRST 4096
#define CK_TP_KEEP 65536

/* The bytes up to offset end left (off <= end <= len). */
void ck_tp_sent(ck_tp_out *o, size_t end);

/* Bytes waiting to leave. */
static inline size_t ck_tp_pending(const ck_tp_out *o)
{
    return o->len - o->off;
}

/* When ck_tp_due may next give more than it does now: a time after now,
 * or CK_TIME_NEVER when nothing waits or what waits may leave now. */
ck_time ck_tp_wake(const ck_tp_out *o, ck_time now);

/* When bytes queued next may leave: now if some may leave now (whether or
 * not ck_tp_due was asked since they came due), the time a latency or the
 * pace holds them until, or CK_TIME_NEVER when nothing waits. For a loop
 * whose clock runs on while it works (sockets). */
ck_time ck_tp_next(const ck_tp_out *o, ck_time now);

/* Drops everything queued (the connection broke). */
void ck_tp_reset(ck_tp_out *o);

void ck_tp_free(ck_tp_out *o);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_tp_check(const ck_tp_out *o, ck_inv *v);

#endif
