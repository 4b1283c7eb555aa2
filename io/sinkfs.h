/*
 * sinkfs.h - a transactional sink on a file system, as Flink's FileSink
 * does two-phase commit: the external system the socket backend's sinks
 * write to (one process per host, so the output lives in files that the
 * run reads back once the job ends).
 *
 * In a directory, per sink subtask (its ck_sink_id, 8 hex digits):
 *   <id>.out                              what transaction 0 wrote: committed at once
 *   <id>.part-<txn, 20 digits>.inprogress an open or pre-committed transaction
 *   <id>.part-<txn, 20 digits>            a committed one
 *   <id>.part-<txn, 20 digits>.dup        a committed one applied twice (below)
 *
 * A transaction:
 *
 *   (none) --write--> IN PROGRESS --commit (rename)--> COMMITTED
 *                          |
 *                          +-----abort (unlink)------> (none)
 *
 * Invariants: the committed output of a sink is its .out file followed by
 * its committed parts in transaction order (their names sort that way);
 * an in-progress part is never read back; committing or aborting a
 * transaction that has no part (empty, or committed before) does nothing,
 * so that a restore may commit again what a failed attempt committed; a
 * failed write to .out leaves no torn record (it is truncated back).
 *
 * Held writes (ck_sinkfs_hold, the simulation: one process, whose files
 * nobody reads while it runs): a sink's small writes gather in a buffer
 * of its own, for one transaction at a time, and reach the file when it
 * fills, before a write to another transaction, and at commit, flush and
 * close; an abort drops what its transaction holds. A sink at parallelism
 * 256 writes a record or two a step, and a write() each took a sixth of
 * the run. What is read back is the same; over sockets, where a process
 * dies with its buffers, writes are never held.
 */
#ifndef CK_SINKFS_H
#define CK_SINKFS_H

#include <stddef.h>
#include <stdint.h>

#include "sinkout.h"

typedef struct ck_sinkfs_slot {
    uint32_t sink;
    int fd;            /* <id>.out, opened on first use, or -1 */
    int part_fd;       /* the part being written, or -1 */
    uint64_t part_txn; /* its transaction */
    uint8_t *held;     /* held writes (ck_sinkfs_hold), or NULL */
    size_t nheld;      /* bytes in it, all of transaction held_txn */
    uint64_t held_txn;
} ck_sinkfs_slot;

typedef struct ck_sinkfs {
    char dir[600];
    ck_sinkfs_slot *s;
    int n, cap;
    size_t hold; /* bytes a sink may hold before writing (0: none) */
} ck_sinkfs;

/* Writes into dir (which exists). 0, or CK_EINVAL when its path is too long. */
int ck_sinkfs_init(ck_sinkfs *f, const char *dir);

/* Lets each sink hold up to `bytes` of writes before they reach its file
 * (above; 0: every write at once, the default). */
void ck_sinkfs_hold(ck_sinkfs *f, size_t bytes);

/* Writes what every sink holds. 0, or CK_EIO with errno set (the first). */
int ck_sinkfs_flush(ck_sinkfs *f);

/* Writes what the sinks hold and closes every file (what is in progress
 * stays in progress). 0, or CK_EIO as ck_sinkfs_flush. */
int ck_sinkfs_close(ck_sinkfs *f);

/* Appends to transaction txn of sink (0: committed at once). 0, CK_ENOMEM,
 * or CK_EIO with errno set. */
int ck_sinkfs_write(ck_sinkfs *f, uint32_t sink, uint64_t txn, const uint8_t *data, size_t len);

/* Commits or aborts transaction txn of sink. 0, or CK_EIO with errno set. */
int ck_sinkfs_commit(ck_sinkfs *f, uint32_t sink, uint64_t txn);
int ck_sinkfs_abort(ck_sinkfs *f, uint32_t sink, uint64_t txn);

/* Carries transaction txn of sink, pre-committed and not yet committed in
 * directory from (another run's), over into directory to (which exists),
 * as an external system keeps a transaction across a job's restart: a
 * copy of its part, for the restored sink to commit. 0 (also when there is
 * none: committed before, or empty), CK_EIO with errno set, or CK_ENOMEM. */
int ck_sinkfs_carry(const char *from, const char *to, uint32_t sink, uint64_t txn);

/*
 * Output faults: the external system misbehaving (the scenario events
 * sink_duplicate, sink_drop and sink_corrupt). Whatever plays the
 * timeline arms fault n (its index in the timeline) in the directory,
 * as the file fault-<n>.armed; the next commit that renames a part of a
 * sink the fault is for claims it, renaming the file to
 * fault-<n>.claimed (one process wins, however many commit at once), and
 * applies it to the transaction it just committed:
 *
 *   duplicate  a second committed copy, <id>.part-<txn>.dup, read back
 *              right after the part: the transaction applied twice;
 *   drop       the part moved aside to <id>.lost-<txn>, never read back
 *              as output: the transaction lost;
 *   corrupt    the value of the part's first record lowered by 2^62 (no
 *              count or sum of the workload's values comes near it), its
 *              original record kept in <id>.altered-<txn>.
 *
 * It then records what it did in fault-<n> (ck_sinkfs_fault), counting
 * the records by decoding them.
 *
 *   (none) --arm--> ARMED --a commit of its sink claims it--> CLAIMED --applied--> DONE
 */
typedef enum ck_sinkfs_fault_kind {
    CK_SINKFS_DUPLICATE,
    CK_SINKFS_DROP,
    CK_SINKFS_CORRUPT,
} ck_sinkfs_fault_kind;

/* What an output fault did. */
typedef struct ck_sinkfs_fault {
    int kind;              /* ck_sinkfs_fault_kind */
    uint32_t sink;         /* the sink subtask whose transaction it hit (ck_sink_id) */
    uint64_t txn;          /* that transaction */
    uint64_t records;      /* the records it duplicated or dropped; corrupt: 1 */
    int64_t at;            /* when, by the committing node's clock (ns) */
    int64_t before, after; /* corrupt: the record's value before and after */
} ck_sinkfs_fault;

/* The value sink_corrupt gives a record whose value was v. */
static inline int64_t ck_sinkfs_corrupted(int64_t v)
{
    return (int64_t)((uint64_t)v - ((uint64_t)1 << 62));
}

/* Arms fault n in dir. 0, or CK_EIO with errno set. */
int ck_sinkfs_arm(const char *dir, int n);

/*
 * Commits transaction txn of sink as ck_sinkfs_commit does; when that
 * renamed a part and one of the faults fault[0..nf) (of kinds kind[]) is
 * armed in f's directory, claims the first such and applies it, at time
 * now: *applied is then its position in fault[], else -1. 0, or CK_EIO
 * with errno set (the commit, or the fault's files).
 */
int ck_sinkfs_commit_faults(ck_sinkfs *f, uint32_t sink, uint64_t txn, const int *fault,
                            const int *kind, int nf, int64_t now, int *applied);

/* What fault n did in dir. 0, CK_ENOTFOUND (it was applied to no
 * transaction: not armed, or no commit came after), CK_EIO, or
 * CK_ECORRUPT (its record does not parse). */
int ck_sinkfs_fault_read(const char *dir, int n, ck_sinkfs_fault *out);

/* The records a fault touched, appended to out as sink fo->sink's stream:
 * the copy it committed again, the transaction it dropped, or the
 * original of the record it altered. 0, CK_ENOTFOUND, CK_EIO, CK_ENOMEM. */
int ck_sinkfs_fault_records(const char *dir, const ck_sinkfs_fault *fo, ck_sinkout *out);

/* Reads what dir's sinks committed into out's committed streams, in
 * order. 0, CK_ENOTFOUND (no such directory), CK_EIO or CK_ENOMEM. */
int ck_sinkfs_load(const char *dir, ck_sinkout *out);

/* Where a snapshot cut a sink's transactions: those numbered first_after
 * or above began after it (a sink's transactions are numbered in the
 * order they begin, across attempts). */
typedef struct ck_sinkfs_cut {
    uint32_t sink;
    uint64_t first_after;
} ck_sinkfs_cut;

/* As ck_sinkfs_load, split at a snapshot's cut: what the sinks committed
 * in transactions that began before it into before, the rest into after
 * (a sink the cut does not name: all before). CK_EINVAL when a sink the
 * cut names wrote outside transactions (nothing divides that). */
int ck_sinkfs_load_cut(const char *dir, const ck_sinkfs_cut *cut, size_t ncut, ck_sinkout *before,
                       ck_sinkout *after);

#endif
