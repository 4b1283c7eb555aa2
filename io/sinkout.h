/*
 * sinkout.h - what the sinks committed, one byte stream per sink subtask
 * (ck_sink_id) of encoded records (key, event time, value, provenance,
 * ingest time), as the verification reads it. A backend fills it from the
 * sinks' external system once the job ends (io/sinkfs.h); the run saves it
 * as its output and loads an earlier run's.
 */
#ifndef CK_SINKOUT_H
#define CK_SINKOUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ck_sinkout_stream {
    uint32_t sink_id;
    uint8_t *data;
    size_t len, cap;
} ck_sinkout_stream;

typedef struct ck_sinkout {
    int n, cap;
    ck_sinkout_stream *s;
} ck_sinkout;

void ck_sinkout_init(ck_sinkout *o);
void ck_sinkout_free(ck_sinkout *o);

/* Appends bytes to the stream of sink_id. 0 or CK_ENOMEM. */
int ck_sinkout_append(ck_sinkout *o, uint32_t sink_id, const uint8_t *data, size_t len);

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
