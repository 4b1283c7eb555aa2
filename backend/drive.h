/*
 * drive.h - how a backend drives the nodes of one host (node.h), the same
 * on both backends: their inboxes, their CPU as virtual time on the host's
 * cores, and one step of a node's loop.
 *
 * A host has a number of cores of one speed. CPU work that the engine
 * charges (ck_platform_ops.cpu: an operator's cpu_per_record, a snapshot's
 * synchronous part) does not block: it makes the node busy on the
 * earliest free core for flops / (speed x slow factor) seconds, as a task
 * thread would be in Flink. Meanwhile the node takes no input and fires no
 * timer, its clock reads the end of the busy spell (ck_drive_now), and
 * what it sends waits in its outbox until then; the host's other nodes run
 * on. Work beside a node (a snapshot's asynchronous part, a state
 * backend's flush: ck_platform_ops.background) takes a core the same way,
 * then the host's local disk (a queue of its own: bytes / bandwidth after
 * what is queued before), and completes at its end.
 * Time and work are inputs and outputs, as in ngtcp2: the backend gives
 * a step `now`, and the step tells it when the node wants the next.
 *
 * A node's inbox holds, in arrival order, messages, completions and
 * "peer lost" notices, except that a completion goes ahead of the
 * messages already waiting (the end of work done beside the node, as an
 * upload on Flink's asynchronous snapshot threads, is not input to queue
 * behind); a step hands them all over after the deadline, and then asks
 * for work:
 *
 *   IDLE --message, completion, deadline--> RUNNABLE --step--> IDLE
 *   RUNNABLE --step charges CPU--> BUSY --busy_until passes--> RUNNABLE
 *   any --the node is stopped (dead)--> DEAD (its inbox is dropped)
 *
 * Invariants (ck_drive_check, ck_cores_check, ck_dlater_check):
 *   (1) a node is stepped only when busy_until <= now (ck_drive_step);
 *   (2) its outbox is empty whenever it is not busy (ck_drive_release runs
 *       before a step): after a step, something held means busy_until >
 *       now;
 *   (3) its inbox and outbox are well-formed queues (each tail the last of
 *       its list, an inbox entry is a message, a completion or a notice);
 *   (4) core free[i] is when core i is next free: never negative;
 *   (5) a timed completion is delivered at its due time, in due order: the
 *       list is sorted by due time.
 *
 * Checked runs: with n->check set (the run asks for invariant checks:
 * chandy run --check-invariants), ck_drive_step checks the node's drive
 * state and calls its check (node.h) after every step that did something;
 * a violation ends the process with one line naming the module, the
 * invariant, the node and the time, and status CK_EXIT_INVARIANT
 * (ck_drive_violated).
 */
#ifndef CK_DRIVE_H
#define CK_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "invariant.h"
#include "node.h"

enum { CK_DMSG_MESSAGE, CK_DMSG_COMPLETE, CK_DMSG_PEER_LOST, CK_DMSG_SEND };

/* An inbox entry (or, in the outbox, a message to send: kind CK_DMSG_SEND,
 * token the destination endpoint). */
typedef struct ck_dmsg {
    struct ck_dmsg *next;
    int kind;
    uint64_t token; /* completion: its token; peer lost: the host; send: the destination */
    int status;
    uint8_t *data;  /* owned */
    size_t len;
    ck_time due;    /* a timed completion: when it is done */
    struct ck_dnode *to;
} ck_dmsg;

typedef struct ck_dnode {
    ck_node node;
    ck_dmsg *head, *tail; /* inbox */
    ck_dmsg *obox, *obox_tail; /* sent while busy */
    ck_time busy_until;
    int dead;
    int again; /* its last step could do more, or ended busy: step it again */
    ck_time due; /* when ck_drive_next last said it wants a step */
    int check;   /* check invariants after each step (drive.h, invariant.h) */
    const char *name; /* in the line a violation prints (NULL: unnamed) */
} ck_dnode;

/* A host's cores, as virtual time. */
typedef struct ck_cores {
    ck_time *free; /* per core: busy until then */
    int n;
    double speed;  /* flops per second of one core */
} ck_cores;

CK_MUST_CHECK
int ck_cores_init(ck_cores *c, int n, double speed);
void ck_cores_free(ck_cores *c);

/* Runs flops of work from `start` on the earliest free core at speed x
 * factor (a slow_cpu fault's); returns when it ends. */
ck_time ck_cores_run(ck_cores *c, ck_time start, double flops, double factor);

/* The node's clock: now, or the end of its busy spell. */
static inline ck_time ck_drive_now(const ck_dnode *n, ck_time now)
{
    return n->busy_until > now ? n->busy_until : now;
}

/* The node charged flops at time now (ck_platform_ops.cpu). */
void ck_drive_cpu(ck_dnode *n, ck_cores *c, ck_time now, double flops, double factor);

/* The node waits ns from time now, on no core (ck_platform_ops.wait). */
void ck_drive_wait(ck_dnode *n, ck_time now, ck_time ns);

/* Whether a message the node sends at time now must wait for its busy
 * spell to end (ck_drive_hold it then). */
static inline int ck_drive_busy(const ck_dnode *n, ck_time now)
{
    return n->obox != NULL || n->busy_until > now;
}

/* Keeps a message (taken) to dst until the node's busy spell ends.
 * 0 or CK_ENOMEM (msg freed). */
CK_MUST_CHECK
int ck_drive_hold(ck_dnode *n, uint32_t dst, uint8_t *msg, size_t len);

/* Hands what the node held to send(ctx, n, dst, msg, len) in order
 * (dropped if it died meanwhile: it never sent them). */
typedef void (*ck_drive_send_fn)(void *ctx, ck_dnode *n, uint32_t dst, uint8_t *msg, size_t len);
void ck_drive_release(ck_dnode *n, ck_drive_send_fn send, void *ctx);

/* Appends to the node's inbox (takes it; dropped if the node is dead). */
void ck_drive_push(ck_dnode *n, ck_dmsg *m);

/* Makes and appends an entry; data is taken. 0 or CK_ENOMEM (data freed). */
CK_MUST_CHECK
int ck_drive_post(ck_dnode *n, int kind, uint64_t token, int status, uint8_t *data, size_t len);

/* One step of the node at time now, if it is not busy and its outbox is
 * empty (ck_drive_release first): its deadline, its inbox, then work().
 * Returns 1 when it could do more at once, 0 when it waits (ck_drive_next
 * says until when), -1 when it is dead, or finished with its last work
 * done and sent (its inbox dropped). */
int ck_drive_step(ck_dnode *n, ck_time now);

/* Whether a step at time now has anything to do: the node is not busy,
 * and its inbox or outbox holds something, the time ck_drive_next last
 * gave has come (a source's deadline is its next record's time only until
 * that time comes), or its last step could do more or made it busy. A
 * node's work() waits only for input, credit or time (node.h), and its
 * deadline and state change only in its own steps, so this needs no call
 * into the node; the caller asks ck_drive_next after every step. It is
 * what keeps a host of many idle nodes cheap. */
int ck_drive_wants(const ck_dnode *n, ck_time now);

/* When the node next wants a step: the end of its busy spell, its
 * deadline, now if its inbox has something, or CK_TIME_NEVER; remembered
 * for ck_drive_wants. */
ck_time ck_drive_next(ck_dnode *n, ck_time now);

/* Drops everything in the node's inbox and outbox. */
void ck_drive_clear(ck_dnode *n);

/* Checks the node's invariants above ((2), (3)) at time now, then, when
 * the node has a check, its own (node.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_drive_check(const ck_dnode *n, ck_time now, ck_inv *v);

/* A host's cores (4). */
CK_MUST_CHECK
int ck_cores_check(const ck_cores *c, ck_inv *v);

/* Ends the process on a violated invariant: prints "chandy: invariant
 * violated: <module> (<n>) at <time> s on <where>: <what>" to standard
 * error and exits with CK_EXIT_INVARIANT. where names the node or host. */
__attribute__((noreturn)) void ck_drive_violated(const char *where, ck_time now,
                                                 const ck_inv *v);

/* Timed completions, in due order (a host's background work). */
typedef struct ck_dlater {
    ck_dmsg *head;
} ck_dlater;

/* Delivers (to m->to) at time due. */
void ck_dlater_add(ck_dlater *l, ck_dmsg *m, ck_time due);
/* Moves those due by now to their nodes' inboxes; returns the next due time. */
ck_time ck_dlater_run(ck_dlater *l, ck_time now);
void ck_dlater_clear(ck_dlater *l);
/* The timed completions' order (5): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_dlater_check(const ck_dlater *l, ck_inv *v);

#endif
