/*
 * gate.h - an input gate: the consuming side of one job-graph edge in one
 * subtask, with one input channel per producer subtask.
 *
 * Credit-based flow control, as in Flink: each channel owns `exclusive`
 * buffers; the gate holds a pool of `floating` buffers lent to channels
 * whose producer reports a backlog. A buffer the channel owns and that
 * holds no data is announced to the producer as one credit. When a buffer
 * has been read through it is released: it becomes a credit again, or, if
 * it was a floating buffer the channel no longer needs, goes back to the
 * pool for the next channel waiting for one. A buffer received is copied
 * into a segment of the host's network buffer pool (ck_gate.pool,
 * buffer.h): what the gate holds is what its credits promised, and no DATA
 * message may carry more than a segment.
 *
 * Invariants (ck_gate_check), per channel c:
 *   (1) c.owned = exclusive + c.floating;
 *   (2) c.outstanding + c.unannounced + held(c) <= c.owned
 *       (held = buffers received and not yet released);
 *   (3) a DATA message arrives only against an outstanding credit, and
 *       with the next sequence number (ck_gate_on_data refuses anything
 *       else as a protocol violation): next_seq = bufs_in;
 *   (4) credit is not forgotten: an open channel with unannounced credit
 *       is in the announce set (whose count is its bits');
 * per gate:
 *   (5) pool_free + sum(c.floating) = floating;
 *   (6) nended = the channels ENDED, and END_OF_PARTITION went up only
 *       once every one had;
 *   (7) held_bytes = the payload bytes the channels hold: received and not
 *       released, and restored channel state not read through;
 *   (8) the available ring holds avail_n distinct channels, exactly those
 *       marked in_avail, and every channel with something to read that is
 *       not blocked is on it; the waiters ring holds wait_n channels, those
 *       marked waiting;
 *   (9) wm_min is the lowest watermark of an open channel (CK_WM_MAX: none
 *       open), and wm_min_n the open channels at it;
 *   (10) while aligning, align_id > done_id and align_have = the open
 *       channels that delivered its barrier; a channel is blocked only
 *       while aligning in exactly-once mode, after delivering the barrier,
 *       or held after its recovered marker (rec_held) while rec_left > 0,
 *       rec_left being the open channels not held;
 *   (11) uc_pending = the channels spilling; a channel spills only while
 *       checkpoint uc_id collects channel state, and not once it ended;
 *   (12) replay_left = sum(c.replay.n + c.cur_replay): the restored
 *       buffers not read yet (the gate announces no credit until 0).
 *
 * Channel states:
 *
 *   OPEN --END_OF_PARTITION read--> ENDED
 *
 * and the gate delivers END_OF_PARTITION once, when every channel ended.
 * The gate's watermark is the minimum over its open channels' watermarks;
 * ck_gate_next hands a WATERMARK element up only when that minimum rises.
 *
 * Checkpoint barriers (asynchronous barrier snapshotting): the gate hands a
 * BARRIER up once every open channel has delivered it (alignment). In
 * exactly-once mode a channel that delivered barrier n is blocked until
 * then: its later buffers wait unread (and so hold back credit). In
 * at-least-once mode nothing is blocked. A barrier of a newer checkpoint
 * abandons the alignment in progress (ck_gate.abandoned says which, for the
 * task to decline it); barriers of checkpoints already handed up or
 * abandoned are dropped.
 *
 *   IDLE --first barrier n--> ALIGNING(n) --barrier n on every open channel,
 *        or the last missing channel ends--> IDLE (BARRIER n handed up)
 *   ALIGNING(n) --barrier m > n--> ALIGNING(m) (n abandoned)
 *   IDLE or ALIGNING(<= n) --cancel marker n (checkpoint n declined
 *        upstream)--> IDLE (CANCEL n handed up, once; the channels unblocked;
 *        later barriers and markers of n dropped)
 *
 * Unaligned checkpoints (on an edge that allows them: hash and rebalance,
 * not pointwise or broadcast ones, as in Flink): the barrier comes as an
 * EVENT message that overtook the data queued at its producer. The first
 * one of checkpoint n makes the task snapshot at once (ck_gate_on_event
 * returns 1); nothing is blocked. What the barrier overtook is channel
 * state: on the channel it came on, the data received and not yet read;
 * on every other open channel, the data not yet read plus whatever
 * arrives until that channel's barrier does (or it ends). The data is
 * still read and processed as usual meanwhile. Channel state holds whole
 * elements: when the barrier comes as an EVENT in the middle of an
 * element (its producer sent the element's first buffers, then the
 * barrier overtook the rest), the part received is left out, and the
 * producer's output channel state holds the element whole (partition.h),
 * so that a restore at another parallelism can route each element on its
 * own.
 *
 *   IDLE --EVENT barrier n--> COLLECTING(n) (handed up; channels without
 *        their barrier spilling)
 *   COLLECTING(n) --barrier n on every open channel, or the last spilling
 *        one ends--> COMPLETE(n) (ck_gate_uc_take takes the state)--> IDLE
 *   COLLECTING(n) --barrier m > n, a cancel marker >= n, or
 *        ck_gate_uc_cancel--> IDLE (uc_abandoned = n for the task)
 *
 * With the aligned-checkpoint timeout, a barrier starts aligned (in the
 * data, blocking as above) and the alignment turns unaligned once it has
 * lasted past the checkpoint's start plus the timeout (ck_gate_timeout),
 * or when the barrier of a channel not yet aligned comes as an EVENT
 * (its producer timed out first): the channels that delivered the barrier
 * are unblocked, the others spill until theirs, which may still come in
 * the data: a spilling channel's bytes are scanned element by element,
 * and the spill ends at its barrier or its END_OF_PARTITION, neither of
 * them kept.
 *
 *   ALIGNING(n) --timeout, or an EVENT barrier n--> COLLECTING(n)
 *
 * Restored channel state (ck_gate_replay) is read before anything the
 * channel receives; it takes no credit. The gate announces no credit at
 * all until every channel's restored state has been read through
 * (ck_gate_recovered), so that nothing new arrives before: Flink's gate
 * requests its partitions only once its recovered input channel state is
 * consumed (SingleInputGate.requestPartitions after the state-consumed
 * future), and its task reports running only then.
 */
#ifndef CK_GATE_H
#define CK_GATE_H

#include "bitset.h"
#include "buffer.h"
#include "bytes.h"
#include "element.h"
#include "invariant.h"
#include "platform.h"

typedef struct ck_chan {
    uint32_t producer_ep; /* where CREDIT messages go */
    ck_bufq queue;        /* received buffers not yet read */
    ck_buf *cur;          /* buffer being read */
    ck_elem_reader reader;
    uint32_t owned, floating;
    uint32_t outstanding; /* credits the producer holds */
    uint32_t unannounced; /* credits to send at the next announce */
    uint32_t backlog;     /* last backlog the producer reported */
    uint32_t next_seq;
    int64_t wm;
    uint8_t ended, in_avail, waiting;
    uint64_t bytes_in, bufs_in;
    uint64_t barrier; /* highest checkpoint barrier it delivered */
    uint8_t blocked;  /* exactly-once alignment holds it back */
    uint8_t spilling; /* an unaligned checkpoint keeps what arrives until its barrier */
    uint8_t cur_replay; /* cur is restored channel state (not one of the owned buffers) */
    uint8_t rec_held; /* blocked after its producer's recovered marker, until every one's */
    ck_elem_reader scan; /* a spilling channel's bytes, element by element */
    ck_bufq replay;   /* restored channel state, read before the queue */
} ck_chan;

typedef struct ck_gate {
    ck_platform *plat;
    uint16_t edge;
    uint32_t consumer; /* consumer subtask index */
    uint32_t first;    /* producer subtask of channel 0 (0; a pointwise edge has one
                        * channel, from the producer of its own index) */
    int nchan;
    ck_chan *chans;
    uint32_t exclusive, floating, pool_free;
    ck_segpool *pool; /* received buffers are copied into its segments; NULL:
                       * they stay in the messages that brought them */
    int *avail; /* ring of channel indices with data, FIFO */
    int avail_head, avail_n;
    int *waiters; /* ring of channels waiting for a floating buffer */
    int wait_head, wait_n;
    int nended;
    int eop_delivered;
    ck_bitset announce; /* channels that may have credit to announce */
    int64_t wm;
    int64_t wm_min;  /* the lowest watermark of an open channel (CK_WM_MAX: none open) */
    int wm_min_n;    /* open channels at wm_min: the minimum is scanned again only
                      * when the last of them moves on or ends */
    uint64_t bytes_in;
    uint64_t bytes_read;   /* payload bytes of the buffers read through */
    uint64_t held_bytes;   /* payload bytes received and not yet released (in flight) */
    /* barrier alignment */
    int exactly_once;
    uint64_t align_id;      /* checkpoint being aligned, 0 when idle */
    int align_have;         /* open channels that delivered its barrier */
    ck_barrier align_barrier;
    ck_time align_start;    /* when its first barrier was read */
    uint64_t done_id;       /* highest checkpoint handed up or abandoned */
    uint64_t abandoned;     /* set when an alignment was abandoned; the task clears it */
    ck_time last_align_ns;  /* alignment time of the barrier last handed up */
    uint32_t epoch;         /* stamped on every message */
    /* unaligned checkpoints */
    int uc_edge;            /* the edge takes unaligned barriers */
    uint64_t uc_id;         /* checkpoint whose channel state is being collected, 0: none */
    int uc_pending;         /* channels still spilling */
    ck_wbuf *uc_state;      /* per channel: the bytes the barrier overtook */
    uint64_t uc_abandoned;  /* an unaligned checkpoint given up; the task clears it */
    uint32_t replay_left;   /* restored buffers not read through yet (no credit until 0) */
    /* restored at another parallelism (ck_gate_replay_filter): the key
     * groups whose records of restored state it keeps; rf_maxp 0: all */
    ck_kgr rf_kgr;
    int rf_maxp;
    uint64_t replay_filtered; /* records of restored state dropped: not its key groups */
    /* restored state of old channels (ck_gate_replay_moved): on channel
     * peer mod nchan, its watermarks dropped */
    int rf_moved;
    uint64_t replay_wm_dropped;
    int rec_left; /* channels whose recovered marker is still to come */
} ck_gate;

/*
 * Initializes a gate with nchan channels fed by the producers at endpoints
 * producer_eps[0..nchan). Returns 0, CK_ENOMEM, CK_EINVAL.
 */
CK_MUST_CHECK
int ck_gate_init(ck_gate *g, ck_platform *plat, uint16_t edge, uint32_t consumer,
                 int nchan, const uint32_t *producer_eps, uint32_t exclusive,
                 uint32_t floating);
void ck_gate_free(ck_gate *g);

/* Exactly-once (block channels while aligning) or at-least-once. */
static inline void ck_gate_set_exactly_once(ck_gate *g, int on)
{
    g->exactly_once = on;
}

/*
 * Takes a DATA message (header already decoded into h; msg owned by the
 * gate from now on). Returns 0, CK_EPROTO (no credit, wrong sequence,
 * unknown channel), CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_gate_on_data(ck_gate *g, const ck_wire_hdr *h, uint8_t *msg);

/*
 * Reads the next element. Returns 1 with *e set, 0 when no channel has
 * data, CK_ECORRUPT. *released is set to 1 when the call read a buffer
 * through and released it (a natural place to pause and charge CPU).
 * Records stay valid until the next call.
 */
CK_MUST_CHECK
int ck_gate_next(ck_gate *g, ck_elem *e, int *released);

/*
 * The run of records that ck_gate_next would return next, lying whole in
 * the buffer being read: decoded into out[0..n) without being taken (see
 * ck_elem_reader_run), n returned; 0 when ck_gate_next must be called
 * (buffer read through, another element next, channel blocked). Take the
 * first k with ck_gate_take(g, ends[k - 1]) before the next call.
 */
static inline int ck_gate_run(ck_gate *g, ck_rec *out, size_t *ends, int max)
{
    if (g->avail_n == 0)
        return 0;
    const ck_chan *c = &g->chans[g->avail[g->avail_head]];
    if (!c->cur || c->blocked || (c->cur_replay && (g->rf_maxp || g->rf_moved)))
        return 0; /* restored state filtered (ck_gate_next) */
    return ck_elem_reader_run(&c->reader, out, ends, max);
}

static inline void ck_gate_take(ck_gate *g, size_t end)
{
    ck_elem_reader_take(&g->chans[g->avail[g->avail_head]].reader, end);
}

static inline int ck_gate_has_data(const ck_gate *g)
{
    return g->avail_n > 0;
}

/*
 * Takes an EVENT message (a priority barrier; the header decoded into h,
 * the body after it). Returns 1 with *b set when it is the first barrier
 * of its checkpoint: the task snapshots now. 0 when there is nothing to do,
 * CK_EPROTO (not an unaligned edge, unknown or ended channel), CK_ECORRUPT
 * (not a barrier), CK_ENOMEM.
 */
CK_MUST_CHECK
int ck_gate_on_event(ck_gate *g, const ck_wire_hdr *h, const uint8_t *body, ck_barrier *b);

/* True when the channel state of checkpoint g->uc_id is complete. */
static inline int ck_gate_uc_complete(const ck_gate *g)
{
    return g->uc_id && g->uc_pending == 0;
}

/* Takes the complete channel state: the per-channel bytes (nchan of them,
 * caller frees each .p and the array), and goes back to IDLE. */
ck_wbuf *ck_gate_uc_take(ck_gate *g);

/* The alignment in progress (a barrier with CK_BARRIER_TIMEOUTABLE, on an
 * edge that allows unaligned ones) turns unaligned: returns 1 with *b set
 * (flagged CK_BARRIER_UNALIGNED) for the task to snapshot now, 0 when
 * there is none, CK_ENOMEM. The caller decides when: at the checkpoint's
 * start plus the timeout. */
CK_MUST_CHECK
int ck_gate_timeout(ck_gate *g, ck_barrier *b);

/* Stops collecting checkpoint id (aborted); no-op for another id. */
void ck_gate_uc_cancel(ck_gate *g, uint64_t id);

/* Restores the channel state of the channel from producer subtask peer:
 * read before anything the channel receives. 0, CK_ECORRUPT (no such
 * channel), CK_ENOMEM. */
CK_MUST_CHECK
int ck_gate_replay(ck_gate *g, uint32_t peer, const uint8_t *data, size_t len);

/*
 * Restored at another parallelism over a hash edge, whose input channel
 * state maps ambiguously (assign.h: RANGE gives an old subtask's state to
 * every new subtask whose key groups overlap its): a record read from
 * restored state whose key group (of max parallelism maxp) is outside
 * kgr is dropped, counted in replay_filtered, as Flink's recipient drops
 * the records of key groups it does not own (InflightDataRescalingDescriptor,
 * RecordFilter): the old subtask's other new owners read them. maxp 0
 * turns it off (the default; at an unchanged parallelism a subtask owns
 * every record of its own state). What the channels receive is never
 * filtered: new producers route by the new ranges.
 */
void ck_gate_replay_filter(ck_gate *g, ck_kgr kgr, int maxp);

/*
 * Restored at another parallelism, of this gate's or of its producers'
 * vertex: the channel state of an old channel (from old producer subtask
 * peer, which may be past the new producers) is replayed on channel peer
 * mod nchan, behind any other old channel's dealt to it; each holds whole
 * elements, so that their records follow each other intact. Their
 * watermarks are dropped (counted in replay_wm_dropped): an old channel's
 * watermark says nothing of the new channel's producer, and a watermark
 * held back is safe where one raised too early is not. Call before
 * ck_gate_replay.
 */
void ck_gate_replay_moved(ck_gate *g);

/*
 * Restored where the producers' or this gate's parallelism changed: each
 * producer sends, after the output channel state it restored and before
 * anything new, a recovered marker (a barrier flagged
 * CK_BARRIER_RECOVERED). A channel that delivered its marker is held, as
 * in an alignment, until every open channel did: the old in-flight
 * records, whichever new producer routes them, are read before any new
 * one, so that records of one source partition stay in order across
 * producers whose partitions moved. A gate that expects none drops them.
 */
void ck_gate_expect_recovered(ck_gate *g);

/* True once every buffer of restored channel state has been read through
 * (or there was none). */
static inline int ck_gate_recovered(const ck_gate *g)
{
    return g->replay_left == 0;
}

/* Sends CREDIT messages for every channel with unannounced credit; none
 * while restored channel state is left to read (ck_gate_recovered). */
void ck_gate_announce(ck_gate *g);

/* Buffers received and not yet read, over all channels. */
uint32_t ck_gate_queued(const ck_gate *g);

/* Payload bytes read so far: the buffers read through and the part read
 * of those being read. */
uint64_t ck_gate_bytes_consumed(const ck_gate *g);

/* Buffers in use for buffer debloating, as Flink counts them: over the
 * open channels, the buffers held plus the backlog their producers
 * reported. */
uint32_t ck_gate_buffers_in_use(const ck_gate *g);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. Reads
 * every channel and the buffers they hold. */
CK_MUST_CHECK
int ck_gate_check(const ck_gate *g, ck_inv *v);

/* Announces a new buffer size to the producer of every open channel
 * (BUFFER_SIZE, arg = size): they cut their buffers at it from now on.
 * 0, or CK_ENOMEM (the rest are told at the next announcement). */
CK_MUST_CHECK
int ck_gate_announce_size(ck_gate *g, uint32_t size);

#endif
