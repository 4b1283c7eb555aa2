/*
 * node.h - what a backend hosts: an endpoint's event-driven core.
 *
 * A node is a sans-I/O state machine (a subtask, the job manager). Its
 * backend loop looks the same everywhere:
 *
 *   while (!finished(node)) {
 *       if (deadline(node) <= now)   on_deadline(node);
 *       for each arrived message:    on_message(node, msg, len);
 *       for each completion:         on_complete(node, token, status, data, len);
 *       if (work(node) == 0)         wait for a message or the deadline;
 *   }
 *
 * work() does a bounded amount of processing and returns 1 when it could
 * do more right away, 0 when it waits for input, credit or time.
 */
#ifndef CK_NODE_H
#define CK_NODE_H

#include "common.h"
#include "invariant.h"

/* on_peer_lost: the connection is refused by a host that came back, not
 * reset by a process that died. */
#define CK_PEER_REFUSED (1 << 24)

typedef struct ck_node_ops {
    /* Takes ownership of msg. Returns 0, or a CK_E* code (node failed). */
    int (*on_message)(void *self, uint8_t *msg, size_t len);
    /* An asynchronous operation it started (a store put or get, background
     * CPU work) finished; takes ownership of data (store get only). */
    int (*on_complete)(void *self, uint64_t token, int status, uint8_t *data,
                       size_t len);
    /* The backend saw the connection to host `host` (a task manager index)
     * break: its process is gone. With CK_PEER_REFUSED or'ed in, the host
     * came back after it was lost and its new kernel refuses the old
     * connections: whoever uses one finds out (the job manager through its
     * heartbeat RPCs). */
    int (*on_peer_lost)(void *self, int host);
    /* Earliest time the node wants on_deadline; CK_TIME_NEVER for none. */
    ck_time (*deadline)(void *self);
    int (*on_deadline)(void *self);
    /* Returns 1 (more to do now), 0 (idle), or a CK_E* code (node failed). */
    int (*work)(void *self);
    /* True when the node has nothing left to do and its loop may end. */
    int (*finished)(void *self);
    /* Optional (NULL: nothing to check): checks the invariants of the node
     * and of the modules it holds, reading only (invariant.h). 0, or
     * CK_EINVARIANT with v saying which, where, and what was seen. The
     * backend calls it after a step when the run checks invariants. */
    int (*check)(const void *self, ck_inv *v);
} ck_node_ops;

typedef struct ck_node {
    const ck_node_ops *ops;
    void *self;
} ck_node;

#endif
