/*
 * bnode.h - a node on a backend: the engine's platform (platform.h) for
 * one endpoint, written once for both backends over the few things that
 * really differ between them (ck_bnode_io): the clock, how a message
 * travels, how the store is reached, and how subtasks are deployed and
 * routed. What the two backends do alike lives here:
 *
 *   - CPU is virtual time on the host's cores (drive.h): a node that
 *     charges work is busy, and what it sends meanwhile waits in its
 *     outbox until the busy spell ends;
 *   - work beside the node (an asynchronous snapshot) takes a core of its
 *     host and completes, as a timed completion, at its end;
 *   - the sinks' external system is files with two-phase commit
 *     (io/sinkfs.h); a write that fails is reported to the backend, which
 *     fails the run (it could not record what it did); a commit of a sink
 *     that an output fault of the timeline is for applies the fault if
 *     the backend armed it (the sink's system misbehaves);
 *   - listing and deleting in the store are the store directory's
 *     (io/storefs.h); uploads and downloads are the backend's, since their
 *     bytes travel;
 *   - a log line carries the backend's time and the node's name;
 *   - the faults inside the processes (buggify.h): a store operation that
 *     fails with an I/O error answers so, with a completion (a delete at
 *     once), and nothing reaches the store; a store completion a
 *     store_delay hits comes late, and the node's completions after it
 *     wait behind it, so that a node's completions keep the order its
 *     backend gave them; an allocation point of the engine
 *     (ck_platform_ops.fault) fails as the plan draws it.
 *
 * A backend's node type starts with a ck_bnode, so that the ck_platform *
 * the engine holds is the backend's node as well. Each host has a
 * ck_bhost: its cores, the background work finishing on them, and the
 * slow_cpu factor in force, which the backend keeps up to date.
 *
 * Invariants (ck_bnode_check, ck_bhost_check):
 *   (1) n->plat.ops is ck_bnode_ops, or ck_bnode_ops_files (the same with
 *       store_put_files) where the backend has store_put_files, and the
 *       network pool the engine sees is its host's;
 *   (2) n->host and n->bw outlive n (by construction);
 *   (3) a node's clock (ck_bnode_now) never reads earlier than the
 *       backend's (by construction);
 *   (4) a host's slow_cpu factor is positive, its local disk's bandwidth
 *       not negative; its cores, timed completions and network buffer
 *       pool keep their invariants (drive.h, segpool.h);
 *   (5) a store completion reaches the node's inbox no earlier than
 *       late_until (the latest one a fault delayed), in the order
 *       ck_bnode_store_done was called (by construction).
 */
#ifndef CK_BNODE_H
#define CK_BNODE_H

#include <stddef.h>
#include <stdint.h>

#include "buggify.h"
#include "drive.h"
#include "faults.h"
#include "platform.h"
#include "sinkfs.h"
#include "storefs.h"
#include "task.h"
#include "taskmanager.h"

typedef struct ck_bnode ck_bnode;

/* What differs between the backends (each pointer required, but wake,
 * io_failed, store_put_files, moment and mail_waiting may be NULL). */
typedef struct ck_bnode_io {
    /* The backend's time, in ns. */
    ck_time (*clock)(const ck_bnode *n);
    /* Sends msg (taken) to endpoint dst now: the node is not busy. */
    CK_MUST_CHECK int (*send)(ck_bnode *n, uint32_t dst, uint8_t *msg, size_t len);
    /* An upload (data taken; at > 0: an append at that offset) or a
     * download of a checked key (the len bytes at offset at; len
     * CK_STOREFS_WHOLE: the object), answered by a completion with the
     * token (platform.h). */
    CK_MUST_CHECK int (*store_put)(ck_bnode *n, const char *key, uint64_t at, uint8_t *data,
                                   size_t len, uint64_t token);
    CK_MUST_CHECK int (*store_get)(ck_bnode *n, const char *key, uint64_t at, uint64_t len,
                                   uint64_t token);
    /* Optional (NULL: the node's platform has no store_put_files, and
     * the engine puts the bytes itself): an upload of local files,
     * read where the store writes, answered by a completion with the
     * token and CK_PUT_FILE_RESULT bytes per file. */
    CK_MUST_CHECK int (*store_put_files)(ck_bnode *n, const char *key, uint64_t at,
                                         const char *const *paths, uint32_t nf, uint64_t token);
    /* A task manager's deployment of subtasks (platform.h). */
    CK_MUST_CHECK int (*deploy)(ck_bnode *n, uint32_t attempt, uint32_t global,
                                const struct ck_restore_point *from);
    void (*undeploy)(ck_bnode *n, uint32_t attempt, uint32_t global);
    void (*set_routes)(ck_bnode *n, uint32_t attempt, int gen, uint32_t count,
                       const uint16_t *hosts);
    /* Something was put in the node's host's timed completions. */
    void (*wake)(ck_bnode *n);
    /* A write under the run's output directory failed; errno says why. */
    void (*io_failed)(ck_bnode *n, const char *what);
    /* Optional: a moment a triggered fault may wait for happened on the
     * node (its engine's ck_platform_ops.note). */
    void (*moment)(ck_bnode *n, int moment);
    /* Optional (NULL: never): the node's ck_platform_ops.mail_waiting. */
    int (*mail_waiting)(ck_bnode *n);
} ck_bnode_io;

/* What every node of one backend's world shares. */
typedef struct ck_bworld {
    const ck_bnode_io *io;
    const char *store_dir; /* the durable store (io/storefs.h) */
    const char *local_dir; /* the hosts' local disks: tm<host>/ holds the working
                            * directories of state backends (NULL: none) */
    ck_sinkfs *sinks;      /* the sinks' external system; NULL: none here */
    ck_buggify *bug;       /* the faults inside the processes; NULL: none */
    const ck_fault *faults; /* the events timeline (its output faults are applied at */
    int nfaults;           /* the sinks' commits: io/sinkfs.h), or none */
    int verbose;           /* log every line, not only warnings */
    int check;             /* check invariants after every step (invariant.h) */
} ck_bworld;

/* What the nodes of one host share. */
typedef struct ck_bhost {
    ck_cores cores;
    ck_dlater later; /* background work finishing on them */
    double slow;     /* the slow_cpu factor in force (1: none) */
    double disk_bw;  /* its local disk, bytes/s (0: takes no time) */
    ck_time disk_free; /* the local disk is busy until then */
    ck_segpool pool; /* the network buffers of its subtasks (segpool.h) */
} ck_bhost;

struct ck_bnode {
    ck_platform plat;   /* first member: the engine's handle is the node */
    ck_dnode d;         /* its inbox, busy spell and outbox (drive.h) */
    ck_bhost *host;
    const ck_bworld *bw;
    char name[32];      /* in log lines */
    /* what runs on it: a subtask (owned), a task manager (owned), or
     * neither (the job manager, a test's node) */
    ck_task *task;
    ck_tm *tm;
    int is_task;
    uint8_t *talked;    /* bit per host it exchanged messages with over the network */
    uint32_t talked_len;
    uint32_t attempt;   /* a subtask's */
    uint32_t global;    /* ...and its global index */
    ck_time late_until; /* store completions wait behind one a fault delayed until then */
    /* what the next transfer of weigh_key costs (ck_platform_ops.store_weigh);
     * weigh_key empty: none declared */
    char weigh_key[CK_STORE_KEY_MAX];
    uint64_t weigh_bytes;
};

extern const ck_platform_ops ck_bnode_ops, ck_bnode_ops_files;

/* A host of `cores` cores of `speed` flop/s and a local disk of disk_bw
 * bytes/s, its network memory sized by cfg (NULL: the defaults). */
CK_MUST_CHECK
int ck_bhost_init(ck_bhost *h, int cores, double speed, double disk_bw,
                  const ck_config *cfg);
void ck_bhost_free(ck_bhost *h);

/* A node for endpoint ep on host index `host` (-1: none), named in logs. */
void ck_bnode_init(ck_bnode *n, const ck_bworld *bw, ck_bhost *h, uint32_t ep, int host,
                   const char *name);

/* The node's host went down: the node is dead, and a task's share of the
 * host's network buffers is free for what the host runs when it is back. */
void ck_bnode_host_down(ck_bnode *n);

/* Makes the node subtask `global` of `attempt`, restoring `from`
 * (platform.h deploy). 0 or CK_ENOMEM: the node is then dead, and the
 * subtask told the job manager that it failed (ck_task_deploy_failed). */
CK_MUST_CHECK
int ck_bnode_make_task(ck_bnode *n, const ck_job_env *env, uint32_t attempt, uint32_t global,
                       const struct ck_restore_point *from);

/* Node n exchanged a message with host h over the network: it hears when
 * the connection to h breaks (as a Flink task hears of the remote
 * partitions it reads or writes; one that never talked to h does not). */
void ck_bnode_talk_mark(ck_bnode *n, int h);
/* Whether n talked with h; forgets it (the connection is gone). */
int ck_bnode_talk_forget(ck_bnode *n, int h);

/* Whether the node is a live subtask that undeploy(attempt, global) stops
 * (platform.h). */
int ck_bnode_undeploys(const ck_bnode *n, uint32_t attempt, uint32_t global);

/* A put node n asked for landed in the store (status: how it ended; at:
 * an append's offset, else 0). A subtask cancelled or lost meanwhile
 * acknowledges nothing more, and a subtask refers only to what it
 * acknowledged: the file is deleted rather than left behind as garbage.
 * An append's is not: it went into a file that earlier checkpoints'
 * files are in (the coordinator deletes it when nothing refers to it). */
void ck_bnode_put_landed(const ck_bnode *n, const char *store_dir, const char *key, uint64_t at,
                         int status);

/* A store operation node n asked for ended (status; data taken), due at
 * `due` (now or later: a backend may time it): into the node's inbox then,
 * or later when a store_delay in force draws a delay, and never before a
 * completion of the node's that one delayed. 0, or CK_ENOMEM (data freed:
 * the backend cannot keep what it owes the node). */
CK_MUST_CHECK
int ck_bnode_store_done(ck_bnode *n, uint64_t token, int status, uint8_t *data, size_t len,
                        ck_time due);
/* The bytes a transfer of `key` (real length len) that node n asked for
 * now costs: what store_weigh declared for it just before, else len. The
 * backend's store_put and store_get call it; a backend that does not
 * charges real bytes. */
uint64_t ck_bnode_weight(const ck_bnode *n, const char *key, uint64_t len);
/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_bnode_check(const ck_bnode *n, ck_inv *v);
CK_MUST_CHECK
int ck_bhost_check(const ck_bhost *h, ck_inv *v);

/* Frees what the node owns (not the node). */
void ck_bnode_clear(ck_bnode *n);

/* The node's clock: the backend's, or the end of its busy spell. */
static inline ck_time ck_bnode_now(const ck_bnode *n)
{
    return ck_drive_now(&n->d, n->bw->io->clock(n));
}

#endif
