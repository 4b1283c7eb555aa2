/*
 * sinkout.h - the external system sinks write to: one append-only byte
 * stream per sink subtask (ck_sink_id) of committed output, holding encoded
 * records (key, event time, value, ingest time), plus the transactions
 * still open or pre-committed (two-phase commit). Only committed bytes are
 * visible to the verification. The SimGrid backend keeps it in memory; the
 * socket backend keeps it in files and loads the committed streams back.
 */
#ifndef CK_SINKOUT_H
#define CK_SINKOUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ck_sinkout_txn {
    uint64_t txn;
    uint8_t *data;
    size_t len, cap;
} ck_sinkout_txn;

typedef struct ck_sinkout_stream {
    uint32_t sink_id;
    uint8_t *data; /* committed */
    size_t len, cap;
    int ntxn, txn_cap;
    ck_sinkout_txn *txns; /* not yet committed */
    uint64_t commits, aborts;
} ck_sinkout_stream;

typedef struct ck_sinkout {
    int n, cap;
    ck_sinkout_stream *s;
} ck_sinkout;

void ck_sinkout_init(ck_sinkout *o);
void ck_sinkout_free(ck_sinkout *o);

/* Appends bytes to transaction txn of sink_id (0: committed at once).
 * Returns 0 or CK_ENOMEM. */
int ck_sinkout_append(ck_sinkout *o, uint32_t sink_id, uint64_t txn, const uint8_t *data,
                      size_t len);

/* Makes a transaction's bytes visible; unknown transactions are a no-op. */
int ck_sinkout_commit(ck_sinkout *o, uint32_t sink_id, uint64_t txn);

/* Discards a transaction. */
int ck_sinkout_abort(ck_sinkout *o, uint32_t sink_id, uint64_t txn);

/* Reads a whole regular file into the committed stream of sink_id (a
 * device or a FIFO is CK_EIO, never read). Returns 0, CK_EIO, CK_ENOMEM. */
int ck_sinkout_load(ck_sinkout *o, uint32_t sink_id, const char *path);

/* Writes every committed stream to dir/<sink id, 8 hex digits>.out (the
 * run's output, for a later run to be checked together with). Returns 0 or
 * CK_EIO. */
int ck_sinkout_save(const ck_sinkout *o, const char *dir);

/* Loads every <sink id>.out file of dir into the committed streams.
 * Returns 0, CK_ENOTFOUND (no such directory), CK_EIO, CK_ENOMEM. */
int ck_sinkout_load_dir(ck_sinkout *o, const char *dir);

#endif
