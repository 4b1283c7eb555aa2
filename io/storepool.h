/*
 * storepool.h - the durable store's uploads and downloads on a thread of
 * their own, as Flink's asynchronous snapshot threads do: the process that
 * asks goes on with its records while files are written, synced and read.
 *
 * One worker thread per pool. Requests wait in a FIFO; the worker takes
 * all that wait at once and serves them in order, each run of puts as one
 * group commit (ck_storefs_put_many: one sync per file, one per directory,
 * none per rename), a get after a put of its key sees it. Results wait in
 * a second FIFO, in the order asked, and a pipe becomes readable while
 * any wait: the owner polls ck_storepool_fd() and collects them with
 * ck_storepool_reap(). Nothing calls back.
 *
 * Invariants: a request is in exactly one of queued, being served, done
 * (collected or not); the data of a put belongs to the pool from the call
 * on and is freed by it; the data of a get belongs to whoever reaps it.
 *
 *   put/get --> [queued] --worker takes all--> [serving] --> [done] --reap--> owner
 *                  |                                          |
 *                  +------ ck_storepool_free: dropped --------+ (freed)
 *
 * A process that forks with a pool running must not touch it in the child
 * (its thread is not there): ck_storepool_forsake() lets go of it.
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
    int status;       /* 0, CK_EINVAL, CK_ENOTFOUND, CK_EIO */
    int err;          /* the errno of a CK_EIO */
    uint8_t *data;    /* a get's object (the reaper's to free) */
    size_t len;       /* its length, or the bytes a put wrote */
    int64_t stamp;    /* a put's: as given (the owner's, e.g. a time) */
    char key[256];    /* CK_STORE_KEY_MAX */
} ck_storepool_done;

/* Starts a pool over the store directory root. NULL: out of memory, or no
 * thread or pipe (errno says which). */
ck_storepool *ck_storepool_new(const char *root);

/* Readable while results wait to be reaped. */
int ck_storepool_fd(const ck_storepool *p);

/* Queues a put (takes data, even on failure; stamp comes back with its
 * result) or a get. 0, CK_EINVAL (bad key), CK_ENOMEM. */
int ck_storepool_put(ck_storepool *p, const char *key, uint8_t *data, size_t len, void *ctx,
                     uint64_t token, int64_t stamp);
int ck_storepool_get(ck_storepool *p, const char *key, void *ctx, uint64_t token);

/* Moves up to max results, oldest first, to out; returns how many. */
size_t ck_storepool_reap(ck_storepool *p, ck_storepool_done *out, size_t max);

/* Requests asked and not reaped yet. */
size_t ck_storepool_pending(const ck_storepool *p);

/* Waits for what the worker is serving, drops what still waits (queued
 * requests and results not reaped, their data freed), ends the thread. */
void ck_storepool_free(ck_storepool *p);

/* In a child after fork: closes the pool's descriptors and forgets it
 * (its memory stays: the child's copy may be mid-change). */
void ck_storepool_forsake(ck_storepool *p);

#endif
