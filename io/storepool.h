/*
 * storepool.h - the durable store's uploads and downloads on threads of
 * their own, as Flink's asynchronous snapshot threads do: the process that
 * asks goes on with its records while files are written, synced and read.
 *
 * A pool has a few worker threads (CK_STOREPOOL_THREADS at most), as
 * Flink uploads a snapshot's files on several transfer threads
 * (state.backend.rocksdb.checkpoint.transfer.thread.num, 4 by default)
 * and each task's asynchronous snapshot on a thread of its own: a small
 * file is written beside a large one instead of after it, and the syncs
 * of files written at once overlap (the file system commits them
 * together). Requests wait in a FIFO; a worker takes the oldest one whose
 * key no earlier request still holds, so that the requests of one key are
 * served one at a time in the order asked (a get after a put of its key
 * sees it). A put is
 * written, synced, renamed into place and its directory synced; a worker
 * that takes a small put takes the small puts queued after it along and
 * commits them together (ck_storefs_put_many), as a checkpoint's small
 * files are asked at once: their syncs, one per file on as many workers,
 * queued behind one another in the file system's journal. Results
 * are handed back in the order each requester (its ctx) asked: a result
 * waits for that requester's earlier ones (what it learns keeps its
 * order, e.g. two checkpoints' metadata), never for another's (a
 * source's snapshot of a few bytes does not wait for the SST files
 * another task of the process asked before it, as Flink's tasks upload
 * on threads of their own). A pipe is readable while a result may be
 * reaped: the owner polls ck_storepool_fd() and collects them with
 * ck_storepool_reap().
 * Nothing calls back.
 *
 * Invariants: a request is in exactly one of queued, being served, served
 * (until reaped), and stays in the one list in the order asked until it is
 * reaped; the data of a put belongs to the pool from the call
 * on and is freed by it; the data of a get belongs to whoever reaps it.
 *
 *   put/get --> [queued] --a worker takes one--> [serving] --> [served]
 *                  |                                              |
 *                  |            reap, each requester in order ---+--> owner
 *                  +------ ck_storepool_free: dropped ------------+ (freed)
 *
 * A process that forks with a pool running must not touch it in the child
 * (its threads are not there): ck_storepool_forsake() lets go of it.
 */
#ifndef CK_STOREPOOL_H
#define CK_STOREPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ck_storepool ck_storepool;

/* One request served. */
typedef struct ck_storepool_done {
    void *ctx;        /* as given */
    uint64_t token;   /* as given */
    int get;          /* 1: a get (data, len: what was read) */
    int file;         /* 1: a put of local files (data: what was read of each) */
    int status;       /* 0, CK_EINVAL, CK_ENOTFOUND (a get's object, a put's local
                       * file), CK_EIO (the store's), CK_ENOMEM */
    int err;          /* the errno of a CK_EIO or of a file's CK_ENOTFOUND */
    uint8_t *data;    /* a get's object, or a put of files': per file
                       * CK_STOREPOOL_FILE_RESULT bytes (the reaper's to free) */
    size_t len;       /* data's length, or the bytes a put of bytes wrote */
    int64_t stamp;    /* a put's: as given (the owner's, e.g. a time) */
    uint64_t at;      /* an append's or a ranged get's offset (0: a put or a get) */
    char key[256];    /* CK_STORE_KEY_MAX */
} ck_storepool_done;

/* Worker threads a pool may have, and the scratch buffer each keeps for
 * direct I/O (storepool.c says why its size). */
#define CK_STOREPOOL_THREADS 4
#define CK_STOREPOOL_SCRATCH ((size_t)4 << 20)
/* A worker that takes a put of at most CK_STOREPOOL_GROUP_BYTES takes the
 * puts queued after it along while they fit in as many bytes together, up
 * to CK_STOREPOOL_GROUP of them, and commits them as one group. */
#define CK_STOREPOOL_GROUP 8
#define CK_STOREPOOL_GROUP_BYTES ((size_t)1 << 20)

/* Starts a pool of nthreads workers (1 to CK_STOREPOOL_THREADS) over the
 * store directory root; with `direct`, each worker keeps a scratch buffer
 * (CK_STOREPOOL_SCRATCH bytes, made and written through by the worker as it
 * starts) through which it writes puts of 1 MiB or more
 * with direct I/O (storefs.h): for a process whose puts are large, such as
 * a task manager's; without, every put goes through the page cache. NULL:
 * out of memory, no thread or pipe, or nthreads out of range (errno says
 * which: EINVAL for the last). */
ck_storepool *ck_storepool_new(const char *root, int nthreads, int direct);

/* Readable while results wait to be reaped. */
int ck_storepool_fd(const ck_storepool *p);

/* Queues a put (takes data, even on failure; stamp comes back with its
 * result) or a get. 0, CK_EINVAL (bad key), CK_ENOMEM. */
int ck_storepool_put(ck_storepool *p, const char *key, uint8_t *data, size_t len, void *ctx,
                     uint64_t token, int64_t stamp);
int ck_storepool_get(ck_storepool *p, const char *key, void *ctx, uint64_t token);
/* A get of the len bytes at offset at (ck_storefs_get_range; its result's
 * `at` says where they start). */
int ck_storepool_get_range(ck_storepool *p, const char *key, uint64_t at, uint64_t len,
                           void *ctx, uint64_t token);

/* Queues a put of the local files paths[0..n) (copied), back to back as
 * one object of about len bytes (their size now: a small one joins a
 * group as a small put does): a worker reads them as it writes the
 * object, through its scratch buffer, and its result's data says, per
 * file, the bytes read and their CRC-32C (u64 | u32, little-endian:
 * CK_STOREPOOL_FILE_RESULT bytes each; storefs.h, ck_storefs_src).
 * 0, CK_EINVAL (bad key, no file), CK_ENOMEM. */
#define CK_STOREPOOL_FILE_RESULT 12
int ck_storepool_put_files(ck_storepool *p, const char *key, const char *const *paths,
                           uint32_t n, size_t len, void *ctx, uint64_t token, int64_t stamp);

/* The same as appends at offset at (> 0) into an object that exists
 * (storefs.h: in place, never creating it; CK_ENOTFOUND when it is not
 * there). Served after the requests of the same key asked before. */
int ck_storepool_append(ck_storepool *p, const char *key, uint64_t at, uint8_t *data,
                        size_t len, void *ctx, uint64_t token, int64_t stamp);
int ck_storepool_append_files(ck_storepool *p, const char *key, uint64_t at,
                              const char *const *paths, uint32_t n, size_t len, void *ctx,
                              uint64_t token, int64_t stamp);

/* Moves up to max results to out, each requester's in the order it asked
 * (older ones of different requesters first); returns how many. */
size_t ck_storepool_reap(ck_storepool *p, ck_storepool_done *out, size_t max);

/* Group commits served so far: a put alone, or small puts together. */
uint64_t ck_storepool_commits(ck_storepool *p);

/* Requests asked and not reaped yet. */
size_t ck_storepool_pending(const ck_storepool *p);

/* Whether a result may be reaped (ck_storepool_reap would return one): a
 * lock-free read, for a thread that asks between records. */
int ck_storepool_ready(const ck_storepool *p);

/* Waits for what the workers are serving, drops what still waits (queued
 * requests and results not reaped, their data freed), ends the threads. */
void ck_storepool_free(ck_storepool *p);

/* In a child after fork: closes the pool's descriptors and forgets it
 * (its memory stays: the child's copy may be mid-change). */
void ck_storepool_forsake(ck_storepool *p);

#endif
