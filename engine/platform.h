/*
 * platform.h - everything the engine asks of the world.
 *
 * The engine is sans-I/O: it never calls SimGrid, sockets, a clock,
 * rand() or the file system. Each endpoint (a subtask, the job manager) is
 * given a ck_platform handle by the backend that hosts it, and does all of
 * its I/O through that handle. Two backends implement it: sim/ (SimGrid,
 * simulated time) and net/ (one process per host, TCP on loopback, real
 * time).
 *
 * Inputs come the other way, through the ck_node interface (node.h): the
 * backend feeds messages, store completions and deadlines to the node, and
 * asks it to do work. Timers are pulled, not pushed: a node reports its
 * next deadline and the backend calls it back at or after that time (the
 * ngtcp2 get_expiry/handle_expiry shape).
 *
 * Ownership: send and store_put take ownership of the malloc'd block they
 * are given, whatever they return. Completions hand a malloc'd block to the
 * node, which then owns it.
 */
#ifndef CK_PLATFORM_H
#define CK_PLATFORM_H

#include "common.h"

typedef struct ck_platform ck_platform;

typedef struct ck_store_entry {
    char *key;     /* malloc'd */
    uint64_t size; /* bytes */
} ck_store_entry;

void ck_store_entries_free(ck_store_entry *e, size_t n);

typedef enum ck_log_level { CK_LOG_ERROR, CK_LOG_WARN, CK_LOG_INFO, CK_LOG_DEBUG } ck_log_level;

#define CK_ATTEMPT_ALL UINT32_MAX
/* In a route table: the attempt does not deploy this subtask. */
#define CK_HOST_NONE 0xffffu
/* Appends start at multiples of this (direct I/O's block). */
#define CK_STORE_APPEND_ALIGN 4096
/* The end of the key of an object appends may go to (store_append). */
#define CK_STORE_APPENDABLE ".seg"
static inline int ck_store_appendable(const char *key)
{
    size_t n = strlen(key), m = sizeof(CK_STORE_APPENDABLE) - 1;
    return n > m && !memcmp(key + n - m, CK_STORE_APPENDABLE, m);
}
/* Bytes of a store_put_files result per file: u64 bytes | u32 crc32c. */
#define CK_PUT_FILE_RESULT 12

struct ck_restore_point; /* coordinator.h */
struct ck_kstate;        /* kstate.h */
struct ck_kstate_spec;

/* Points of the engine where an allocation may be made to fail by the
 * platform (ck_platform_ops.fault): a subtask loading a file it restores,
 * serializing a snapshot (its asynchronous phase), being created by a
 * deployment. */
enum { CK_POINT_RESTORE = 1, CK_POINT_SNAPSHOT, CK_POINT_DEPLOY };

/* What ck_platform_ops.note reports. */
enum {
    CK_NOTE_STATE_FLUSH = 1,      /* a state backend flushed its memtable to a file */
    CK_NOTE_STATE_COMPACTION,     /* ...and compacted files (right after a flush) */
    CK_NOTE_MATERIALIZATION,      /* a changelog backend started a materialization */
    CK_NOTE_CHANGELOG_UPLOAD      /* ...started uploading a changelog segment */
};

typedef struct ck_platform_ops {
    /* The current time on the platform clock. */
    ck_time (*now)(ck_platform *p);

    /*
     * Sends msg[0..len) to endpoint dst, asynchronously; messages from one
     * endpoint to another arrive in the order they were sent. Takes
     * ownership of msg. Returns 0, or CK_EUNREACH when dst is known to be
     * gone, or CK_ENOMEM when the platform could not keep it: the message
     * is then dropped, as on a connection that broke. A sender that can
     * fail passes such an error up (the task fails and the job fails
     * over); the job manager's and task managers' messages are retried
     * by their protocols (a checkpoint expires, a heartbeat is periodic),
     * so they drop the result (CK_IGNORE).
     */
    CK_MUST_CHECK int (*send)(ck_platform *p, uint32_t dst, uint8_t *msg, size_t len);

    /*
     * Charges CPU work to this endpoint's host. It never blocks: the
     * endpoint is busy for flops / (host speed x slow factor) on one of its
     * host's cores (virtual time on both backends); meanwhile its clock
     * (now) reads the end of that work, what it sends leaves then, and the
     * backend gives it no input until then.
     */
    void (*cpu)(ck_platform *p, double flops);

    /*
     * The endpoint waits ns for something outside the cluster (a sink's
     * external system accepting writes): busy as after cpu, but on no core,
     * since a thread blocked on I/O leaves its core to others.
     */
    void (*wait)(ck_platform *p, ck_time ns);

    /*
     * Starts work that runs beside this endpoint's own (an asynchronous
     * snapshot thread, RocksDB's flush and compaction threads in Flink):
     * `flops` on one of the host's cores (virtual time, after the
     * endpoint's own work charged so far), then `disk_bytes` read or
     * written on the host's local disk (one queue per host, at
     * cluster.local_disk); it completes through on_complete with `token`
     * when both ended. The real work was already done by the caller,
     * which began it at `since` (its clock then: now at most): the virtual
     * CPU starts there. Under simulated time that is now, as real work
     * takes none; over a real clock the work's own time is not counted
     * twice, and the model is a floor (as a paced link is), so that the
     * work completes when the model says or at once, whichever is later.
     */
    void (*background)(ck_platform *p, ck_time since, double flops, uint64_t disk_bytes,
                       uint64_t token);

    /*
     * Optional (NULL: ignored): the endpoint reached a point of its state
     * backend's work (CK_NOTE_*) that a fault may wait for, as the
     * backend sees checkpoint messages and store transfers go by. Changes
     * nothing in the engine.
     */
    void (*note)(ck_platform *p, int what);
    /*
     * Optional (NULL: never). Whether something waits for the endpoint
     * that it should see soon (over sockets: an upload or a download has
     * landed): a task ends its input step early to let its node deliver
     * it, as a Flink task looks at its mailbox between two records. Asked
     * every few dozen records, so it must be cheap (no system call).
     */
    int (*mail_waiting)(ck_platform *p);
    /*
     * Optional (NULL: never). Whether the allocation the engine makes now
     * at `point` (CK_POINT_*) fails, as if memory ran out: a fault the
     * backend injects (FoundationDB's BUGGIFY; faults.h alloc_failure).
     * The engine then takes the path a failed malloc takes there.
     */
    int (*fault)(ck_platform *p, int point);

    /*
     * The durable object store (checkpoint storage). put and get are
     * asynchronous: the result arrives through ck_node_ops.on_complete with
     * the same token. put takes ownership of data. list and delete are
     * immediate. Keys are relative paths such as "job/chk-3/_metadata".
     * Return 0 or a CK_E* code (on error no completion follows).
     */
    CK_MUST_CHECK int (*store_put)(ck_platform *p, const char *key, uint8_t *data, size_t len,
                                   uint64_t token);
    CK_MUST_CHECK int (*store_get)(ck_platform *p, const char *key, uint64_t token);
    /*
     * Optional (NULL: a caller gets the whole object). A ranged get: as
     * store_get, of the len bytes at offset `at` of the object, fewer
     * where it ends first (none past its end): a restore reads the
     * segments of a merged file it needs, as Flink seeks to a
     * SegmentFileStateHandle's offset, not the whole file.
     */
    CK_MUST_CHECK int (*store_get_range)(ck_platform *p, const char *key, uint64_t at, uint64_t len,
                                         uint64_t token);
    /*
     * Optional (NULL: every transfer costs its real bytes). The next put,
     * append or get (ranged or not) of `key` this endpoint asks for is
     * charged as `bytes` bytes wherever it costs time (the network, the
     * store's disk) instead of its real length: a file whose state weighs
     * more than it holds (handle.h, CK_HANDLE_MODELLED). Nothing else
     * changes: the bytes stored and returned are the real ones. Only the
     * simulation charges it; over sockets a transfer takes the time its
     * real bytes take.
     */
    void (*store_weigh)(ck_platform *p, const char *key, uint64_t bytes);
    /*
     * Optional (NULL: the caller reads the files and puts their bytes).
     * Uploads the local files paths[0..n) (a state
     * backend's files on this host's disk, immutable until the
     * completion), back to back, as one object under key, as store_put
     * would their bytes, read where the upload runs: Flink's transfer
     * threads upload a RocksDB instance's files from their paths, and the
     * task's thread never holds a copy. The completion's data is, per
     * file, CK_PUT_FILE_RESULT bytes: u64 bytes | u32 crc32c of them
     * (little-endian), the node's to free; none on failure.
     */
    CK_MUST_CHECK int (*store_put_files)(ck_platform *p, const char *key, const char *const *paths,
                                         uint32_t n, uint64_t token);
    /*
     * Optional (NULL: none; file merging across checkpoints then merges
     * within each). An append: as store_put and store_put_files, but the
     * bytes go into the object key, which a put made, at offset `at` (> 0,
     * a multiple of CK_STORE_APPEND_ALIGN), in place; it is never made
     * again (a completion with CK_ENOTFOUND when it was deleted). Only an
     * object whose key ends in ".seg" is appended to (a subtask's file
     * that checkpoints' merged files go into one after another).
     */
    CK_MUST_CHECK int (*store_append)(ck_platform *p, const char *key, uint64_t at, uint8_t *data,
                                      size_t len, uint64_t token);
    CK_MUST_CHECK int (*store_append_files)(ck_platform *p, const char *key, uint64_t at,
                                            const char *const *paths, uint32_t n, uint64_t token);
    CK_MUST_CHECK int (*store_list)(ck_platform *p, const char *prefix, ck_store_entry **out,
                                    size_t *n);
    CK_MUST_CHECK int (*store_delete)(ck_platform *p, const char *key);

    /*
     * The external system a sink writes to, with transactions (a Kafka
     * topic, a file system with staged files). `output` appends bytes to
     * transaction `txn` of sink subtask `sink`; transaction 0 is committed
     * at once (a sink without two-phase commit). Only committed bytes are
     * visible. `commit` of a transaction already committed, or unknown,
     * succeeds (commits are retried after a restore); `abort` discards.
     * Return 0 or CK_EIO.
     */
    CK_MUST_CHECK int (*output)(ck_platform *p, uint32_t sink, uint64_t txn, const uint8_t *data,
                                size_t len);
    CK_MUST_CHECK int (*output_commit)(ck_platform *p, uint32_t sink, uint64_t txn);
    CK_MUST_CHECK int (*output_abort)(ck_platform *p, uint32_t sink, uint64_t txn);

    /*
     * Task managers only. deploy starts subtask `global` of attempt
     * `attempt` on this host, to restore checkpoint or savepoint `from`
     * first (NULL: start fresh);
     * undeploy stops subtask `global` of `attempt` on this host if it runs
     * here (attempt CK_ATTEMPT_ALL: every subtask of every attempt);
     * set_routes tells the backend where the subtasks of an attempt run
     * (host index per global subtask, CK_HOST_NONE for one the attempt does
     * not deploy: region failover restarts part of the job), for backends
     * that route by host, and the graph's generation the attempt runs (n
     * is that generation's subtasks; deploy builds its subtasks from it).
     * Return 0 or CK_E*.
     */
    CK_MUST_CHECK int (*deploy)(ck_platform *p, uint32_t attempt, uint32_t global,
                                const struct ck_restore_point *from);
    void (*undeploy)(ck_platform *p, uint32_t attempt, uint32_t global);
    void (*set_routes)(ck_platform *p, uint32_t attempt, int gen, uint32_t n,
                       const uint16_t *hosts);

    /* One line of diagnostics (no newline). */
    void (*log)(ck_platform *p, int level, const char *line);

    /*
     * Opens a keyed-state backend instance that does I/O (RocksDB), in a
     * working directory of its own on this host's local disk (Flink's
     * state.backend.rocksdb.localdir); freeing it deletes the directory.
     * NULL (optional op): the platform has none. Returns 0, or a CK_E*
     * code with one line in err.
     */
    CK_MUST_CHECK int (*kstate_open)(ck_platform *p, const struct ck_kstate_spec *spec,
                                     struct ck_kstate **out, char *err, size_t errlen);
} ck_platform_ops;

struct ck_segpool; /* segpool.h */

struct ck_platform {
    const ck_platform_ops *ops;
    uint32_t endpoint; /* the endpoint this handle belongs to */
    int host;          /* its host index */
    /* The host's network buffer pool, shared by the subtasks on it (one
     * thread per host drives them); NULL: each subtask has its own. */
    struct ck_segpool *netpool;
};

static inline ck_time ck_now(ck_platform *p)
{
    return p->ops->now(p);
}

/* Whether the allocation at `point` fails now (ck_platform_ops.fault). */
static inline int ck_alloc_fails(ck_platform *p, int point)
{
    return p->ops->fault && p->ops->fault(p, point);
}

void ck_logf(ck_platform *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
