/*
 * wire.h - framing of every message between endpoints.
 *
 * A message is a fixed 28-byte header followed by a body:
 *
 *   off size field
 *     0    1 type     (CK_MSG_*)
 *     1    1 version  (CK_WIRE_VERSION)
 *     2    2 edge     (job-graph edge of a DATA or CREDIT message)
 *     4    4 src      (sender: producer subtask, or endpoint)
 *     8    4 dst      (receiver: consumer subtask, or endpoint)
 *    12    4 seq      (per-channel sequence number of DATA)
 *    16    4 arg      (DATA: backlog; CREDIT: credits; others: per type)
 *    20    4 epoch    (the job attempt the sender belongs to)
 *    24    4 len      (body length)
 *
 * Every message that arrives from a platform goes through ck_wire_decode
 * before the engine looks at it: a frame from a peer is untrusted input.
 */
#ifndef CK_WIRE_H
#define CK_WIRE_H

#include "common.h"
#include "handle.h"
#include "kstate.h"

#define CK_WIRE_HDR 28

/* The body of a task manager's first heartbeat: it registers. */
#define CK_HB_REGISTER 1
#define CK_WIRE_VERSION 2
/* Largest body accepted: a buffer is at most 16 MiB; metrics can be more. */
#define CK_WIRE_MAX_BODY (64u << 20)

/* A new type must also be placed in ck_netframe_check (net/netframe.c):
 * the socket backend drops a type it does not know who may send. */
typedef enum ck_msg_type {
    CK_MSG_DATA = 1,          /* a network buffer of serialized elements */
    CK_MSG_CREDIT = 2,        /* consumer grants credits to a producer */
    CK_MSG_TASK_FINISHED = 3, /* task -> job manager, body = metrics */
    CK_MSG_TASK_FAILED = 4,   /* task -> job manager, body: see CK_FAIL_* in task.h */
    CK_MSG_CP_TRIGGER = 5,    /* job manager -> source task: start checkpoint */
    CK_MSG_CP_ACK = 6,        /* task -> job manager: its state is stored */
    CK_MSG_CP_DECLINE = 7,    /* task -> job manager: it cannot take part */
    CK_MSG_CP_COMPLETE = 8,   /* job manager -> tasks: checkpoint completed */
    CK_MSG_CP_ABORT = 9,      /* job manager -> tasks: checkpoint failed */
    CK_MSG_DEPLOY = 10,       /* job manager -> task manager: run an attempt */
    CK_MSG_CANCEL = 11,       /* job manager -> task manager: stop an attempt */
    CK_MSG_HEARTBEAT = 12,    /* task manager -> job manager: alive (and the answer back), arg = host;
                               * body u8: CK_HB_REGISTER on a process's first one */
    CK_MSG_TASK_RUNNING = 13, /* task -> job manager: restored and running, body =
                               * CK_RUNNING_BODY */
    CK_MSG_METRICS = 14,      /* task -> job manager: metrics since the last report */
    CK_MSG_SAVEPOINT = 15,    /* client -> job manager: take a savepoint, arg = 1 to stop */
    CK_MSG_TASK_ENDED = 16,   /* task -> job manager: input over, awaiting the final checkpoint */
    CK_MSG_BUFFER_SIZE = 17,  /* consumer -> producer: cut buffers at arg bytes (debloating) */
    CK_MSG_EVENT = 18,        /* producer -> consumer: a priority event (an unaligned
                               * barrier) that overtakes the channel's data, without credit */
    CK_MSG_MATERIALIZED = 19, /* task -> job manager: a changelog materialization is in the
                               * store, body = CK_MATERIALIZED_BODY */
    CK_MSG_RESCALE = 20,      /* client -> job manager: rescale the job, arg = the rescale's
                               * number in the timeline, body = CK_RESCALE_BODY */
    CK_MSG_TYPE_MAX = 20
} ck_msg_type;

/* TASK_RUNNING's body: u64 download ns | u64 load ns | u64 bytes restored |
 * u64 ns reading the input channel state it restored | its keyed-state
 * instances rebuilt for a new key-group range (kstate.h ck_kstate_rebuild,
 * CK_REBUILD_WIRE bytes: ck_kstate_rebuild_put) | u64 in-flight records
 * it replayed from channel state (read again, or sent again). */
#define CK_RUNNING_BODY (40 + CK_REBUILD_WIRE)
/* MATERIALIZED's body: u32 operator | u64 changes it holds (the changelog's
 * sequence number) | i64 started | i64 duration ns | u64 bytes uploaded |
 * u64 bytes of state it covers. */
#define CK_MATERIALIZED_BODY 44
/* RESCALE's body: u32 via (CK_RESCALE_VIA_*, jobmanager.h). */
#define CK_RESCALE_BODY 4

/*
 * Checkpoint message bodies (little-endian):
 *   TRIGGER : u64 id | i64 trigger time | u32 flags
 *   ACK     : u64 id | i64 sync ns | i64 async ns | i64 alignment ns |
 *             i64 upload ns | u32 flags | u64 channel state bytes | the snapshot's state
 *             handles (handle.h)
 *   DECLINE : u64 id | reason text
 *   COMPLETE, ABORT: u64 id
 */
typedef struct ck_cp_ack {
    uint64_t id;
    int64_t sync_ns, async_ns, align_ns;
    int64_t upload_ns; /* of async_ns, from its first upload asked to its last done */
    uint32_t flags;    /* CK_ACK_* */
    uint64_t inflight; /* bytes of channel state in its files (unaligned) */
    ck_handles handles; /* what the snapshot stored */
} ck_cp_ack;

/* The snapshot was taken with the subtask's input over (FLIP-147): once
 * its checkpoint completes, the subtask finishes. */
#define CK_ACK_INPUT_ENDED 1u
/* A barrier of the snapshot overtook data (an unaligned checkpoint). */
#define CK_ACK_UNALIGNED 2u

/* Builds a malloc'd message of `type` from src to dst, stamped with epoch,
 * with a body; NULL when out of memory. */
uint8_t *ck_wire_msg(int type, uint32_t src, uint32_t dst, uint32_t epoch, const void *body,
                     size_t len, size_t *total);

/* 1 when the n bytes at p can be a store key read from a message or file:
 * no NUL (it would cut the key short) and no control character (a key
 * ends up in one-line messages). */
static inline int ck_wire_key_ok(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] == 0x7f)
            return 0;
    return 1;
}

/* Encodes an ACK body into a malloc'd buffer: 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_cp_ack_encode(const ck_cp_ack *a, uint8_t **out, size_t *len);
/* Decodes an ACK body (a's handles are malloc'd: ck_cp_ack_free). 0,
 * CK_ECORRUPT when the lengths do not add up, a handle is bad (handle.h),
 * there is none, or the channel state is larger than the files; CK_ENOMEM. */
CK_MUST_CHECK
int ck_cp_ack_decode(const uint8_t *p, size_t len, ck_cp_ack *a);
void ck_cp_ack_free(ck_cp_ack *a);

typedef struct ck_wire_hdr {
    uint8_t type;
    uint16_t edge;
    uint32_t src, dst, seq, arg, epoch, len;
} ck_wire_hdr;

void ck_wire_encode(uint8_t *dst, const ck_wire_hdr *h);

/*
 * Decodes and checks the header of a message of n bytes.
 * Returns 0, or CK_ECORRUPT if the frame is too short, has an unknown type
 * or version, or its body length does not match n.
 */
CK_MUST_CHECK
int ck_wire_decode(const uint8_t *msg, size_t n, ck_wire_hdr *h);

const char *ck_wire_type_name(int type);

#endif
