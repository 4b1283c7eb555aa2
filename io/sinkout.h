/*
 * sinkout.h - the external system sinks write to: one append-only byte
 * stream per sink subtask (ck_sink_id), holding encoded records (key, event
 * time, value, ingest time). The SimGrid backend appends to it in memory;
 * the socket backend writes one file per sink subtask and reads them back.
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

/* Appends bytes to the stream of sink_id. Returns 0 or CK_ENOMEM. */
int ck_sinkout_append(ck_sinkout *o, uint32_t sink_id, const uint8_t *data, size_t len);

/* Reads a whole file into the stream of sink_id. Returns 0, CK_EIO, CK_ENOMEM. */
int ck_sinkout_load(ck_sinkout *o, uint32_t sink_id, const char *path);

#endif
