/*
 * partition.h - a result partition: the producing side of one job-graph
 * edge in one subtask, with one subpartition per consumer subtask.
 *
 * Elements are serialized into the subpartition's current buffer; a buffer
 * is finished when it is full, on flush (buffer timeout, events), and then
 * waits in the subpartition's queue until the consumer has granted credit:
 * one credit is one buffer (credit-based flow control). Each DATA message
 * tells the consumer the backlog still queued behind it. Buffers are
 * segments of the host's network buffer pool (buffer.h, segpool.h); the
 * partition's share of it is pool_size (the task reserves it), plus
 * max_overdraft for a record in progress.
 *
 * Invariants (ck_rp_check):
 *   (1) a subpartition sends only while credit > 0; credit never goes
 *       below 0 (nor past what any consumer can own, 2^20);
 *   (2) sequence numbers of a subpartition are 0, 1, 2, ... without gaps:
 *       seq = bufs_sent;
 *   (3) pool_used = sum over subpartitions of (queued + has current buffer),
 *       the buffers taken from the task's output pool and not yet sent;
 *   (4) a subpartition is full (nfull) when its queued buffers reach
 *       max_per_channel;
 *   (5) ck_rp_available() is false when the pool or any subpartition's
 *       share is exhausted: the task must stop producing (backpressure).
 *       The record in progress may still finish, using up to max_overdraft
 *       extra buffers (the task keeps this one: task.h);
 *   (6) a subpartition with credit and a finished buffer is in the ready
 *       set (whose count is its bits'): nothing sendable waits unseen;
 *   (7) nended = the subpartitions ENDED, which fill no buffer any more;
 *   (8) queued_bytes = the payload bytes of the finished buffers queued;
 *       a queued buffer is not empty, and no buffer holds more than its
 *       cap, nor its cap more than the segment size; a subpartition cuts
 *       new buffers at a size in [CK_RP_MIN_BUFFER, segment size];
 *   (9) bar_pending = the subpartitions whose bar_buf is set, and a set
 *       bar_buf is one of its queued buffers;
 *  (10) a buffer's cont (the bytes that go on with an element begun in
 *       the buffer before it) is at most its len, and its open_at within
 *       it; head_len <= head_cap, and a held head is the start of the
 *       element that the first queued or current buffer goes on with.
 *
 * Barriers of unaligned checkpoints do not queue: ck_rp_priority_barrier
 * sends one as an EVENT at once, without credit, and copies what it
 * overtook (the queued buffers) as output channel state. An element that
 * spans buffers may have been sent in part: the subpartition keeps a copy
 * of the part sent (head) until the rest goes, and the output state starts
 * with it, whole, where the consumer's input state leaves the part it got
 * out (gate.h): each state holds whole elements, so that a restore at
 * another parallelism can route them one by one. A barrier of the
 * aligned-checkpoint timeout queues in a buffer of its own (bar_buf) that
 * ck_rp_timeout_barrier can still pull out and send ahead. A consumer's
 * BUFFER_SIZE caps the size at which new buffers are finished.
 *
 * Subpartition states (per subpartition):
 *
 *   OPEN --ck_rp_emit(EOP)/ck_rp_end--> ENDED --queue sent--> DRAINED
 */
#ifndef CK_PARTITION_H
#define CK_PARTITION_H

#include "bitset.h"
#include "buffer.h"
#include "bytes.h"
#include "element.h"
#include "invariant.h"
#include "platform.h"

typedef struct ck_subpart {
    ck_bufq queue;     /* finished buffers waiting for credit */
    ck_buf *cur;       /* buffer being filled, or NULL */
    int32_t credit;    /* buffers the consumer can take now */
    uint32_t seq;      /* sequence number of the next DATA message */
    uint32_t dst_ep;   /* consumer endpoint */
    uint32_t buf_size; /* payload capacity of new buffers */
    int ended;         /* END_OF_PARTITION serialized */
    ck_buf *bar_buf;   /* the queued buffer holding only a timeoutable barrier, or NULL */
    /* the bytes sent of an element whose rest is still queued: output
     * channel state starts with them (head_cap: at least that element's
     * size, reserved when it was cut) */
    uint8_t *head;
    uint32_t head_len, head_cap;
    uint64_t bytes_sent, bufs_sent;
} ck_subpart;

typedef struct ck_rp_config {
    uint32_t segment_size;         /* taskmanager.memory.segment-size */
    uint32_t buffers_per_channel;  /* taskmanager.network.memory.buffers-per-channel */
    uint32_t floating_per_gate;    /* taskmanager.network.memory.floating-buffers-per-gate */
    uint32_t max_per_channel;      /* taskmanager.network.memory.max-buffers-per-channel */
    uint32_t max_overdraft;        /* taskmanager.network.memory.max-overdraft-buffers-per-gate */
    ck_segpool *pool;              /* the host's network buffers; NULL: a pool of its own */
} ck_rp_config;

typedef struct ck_rp {
    ck_platform *plat;
    uint16_t edge;
    uint32_t producer; /* producer subtask index */
    uint32_t first;    /* consumer subtask of subpartition 0 (0; a pointwise edge has one
                        * subpartition, for the consumer of its own index) */
    int nsub;
    ck_subpart *subs;
    uint32_t pool_size, pool_used; /* its share of the host's segments, counted */
    ck_segpool *pool;  /* where its buffers' segments come from */
    ck_segpool own;    /* the pool when it was given none */
    uint32_t max_per_channel, max_overdraft;
    int nfull;        /* subpartitions at their max_per_channel share */
    ck_bitset ready;  /* subpartitions with credit and a finished buffer */
    int nended;
    uint8_t *scratch; /* for elements that span buffers */
    size_t scratch_cap;
    uint64_t bytes_out; /* payload bytes sent */
    uint64_t queued_bytes; /* payload bytes of finished buffers not yet sent */
    uint64_t bar_id;       /* the timeoutable barrier queued in bar_buf of some subpartitions */
    int bar_pending;       /* subpartitions whose bar_buf is still queued */
    uint32_t segment_size;
    uint32_t epoch;     /* stamped on every message */
} ck_rp;

/*
 * Initializes a partition with nsub subpartitions whose consumers are the
 * endpoints dst_eps[0..nsub). Returns 0, CK_ENOMEM, CK_EINVAL.
 */
CK_MUST_CHECK
int ck_rp_init(ck_rp *rp, ck_platform *plat, uint16_t edge, uint32_t producer,
               int nsub, const uint32_t *dst_eps, const ck_rp_config *cfg);
void ck_rp_free(ck_rp *rp);

/* Serializes e into subpartition sub. Returns 0, CK_ENOMEM, CK_ESTATE (ended). */
CK_MUST_CHECK
int ck_rp_emit(ck_rp *rp, int sub, const ck_elem *e);

/* Serializes record r into subpartition sub (ck_rp_emit for a record). */
CK_MUST_CHECK
int ck_rp_emit_rec(ck_rp *rp, int sub, const ck_rec *r);

/* Serializes e into every subpartition. */
CK_MUST_CHECK
int ck_rp_broadcast(ck_rp *rp, const ck_elem *e);

/*
 * An unaligned barrier: on every open subpartition, the barrier e goes out
 * at once as an EVENT message, without credit, ahead of the buffers
 * queued there (the one being filled is finished first); their bytes are
 * appended to state[sub] (output channel state) and they are sent after
 * it as credit allows. Returns 0 or CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_rp_priority_barrier(ck_rp *rp, const ck_elem *e, ck_wbuf *state);

/*
 * A barrier of the aligned-checkpoint timeout: e goes into every open
 * subpartition in a buffer of its own, and the partition remembers where,
 * until it is sent (aligned) or ck_rp_timeout_barrier overtakes with it.
 * A newer one makes the partition forget an older one (it stays aligned).
 * Returns 0, CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_rp_emit_timeoutable(ck_rp *rp, const ck_elem *e);

/*
 * The timeout of barrier rp->bar_id passed: on every subpartition where it
 * is still queued, it leaves at once as an EVENT, ahead of the buffers
 * before it, whose bytes are appended to state[sub]. Returns the number
 * of subpartitions it overtook on, or CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_rp_timeout_barrier(ck_rp *rp, ck_wbuf *state);

/* Restores a subpartition's output channel state (consumer subtask
 * `consumer`): queued to be sent before anything else. 0, CK_ECORRUPT (no
 * such subpartition), CK_ENOMEM. */
CK_MUST_CHECK
int ck_rp_replay(ck_rp *rp, uint32_t consumer, const uint8_t *data, size_t len);

/* Finishes every non-empty current buffer so that it can be sent. */
void ck_rp_flush(ck_rp *rp);

/* Adds credit granted by consumer subtask `consumer` (its subpartition's). */
CK_MUST_CHECK
int ck_rp_on_credit(ck_rp *rp, int consumer, uint32_t credits);

/*
 * Sends every queued buffer that has credit. Returns the number of
 * buffers sent.
 */
int ck_rp_send(ck_rp *rp);

/* True when the task may produce more output (no backpressure). */
static inline int ck_rp_available(const ck_rp *rp)
{
    return rp->nfull == 0 && rp->pool_used < rp->pool_size;
}

/* True while the record in progress may take another buffer. */
static inline int ck_rp_overdraft_ok(const ck_rp *rp)
{
    return rp->pool_used < rp->pool_size + rp->max_overdraft;
}

/* True when every subpartition has ended and sent all of its buffers. */
int ck_rp_drained(const ck_rp *rp);

/*
 * The consumer of subpartition `consumer` announced a buffer size
 * (debloating): buffers are cut at it from now on, the one being filled
 * too. Returns 0, or CK_EPROTO (no such subpartition, a size outside
 * [CK_RP_MIN_BUFFER, segment size]).
 */
#define CK_RP_MIN_BUFFER 256u
CK_MUST_CHECK
int ck_rp_set_buffer_size(ck_rp *rp, int consumer, uint32_t size);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. Reads
 * every subpartition and the buffers queued. */
CK_MUST_CHECK
int ck_rp_check(const ck_rp *rp, ck_inv *v);

/* Payload bytes in the output queues: finished and being filled. */
uint64_t ck_rp_inflight(const ck_rp *rp);

/* Buffers queued (finished, unsent) over all subpartitions. */
uint32_t ck_rp_queued(const ck_rp *rp);

#endif
