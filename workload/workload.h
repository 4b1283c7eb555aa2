/*
 * workload.h - the input of a run: a partitioned, replayable log (the
 * "topic") filled by a seeded generator, and the topic interface the
 * engine's sources read it through.
 *
 * Generation is a pure function of the spec and its seed: records arrive
 * at the configured rate (steps and bursts over time, evenly spaced or
 * Poisson), each with a key drawn uniformly or from a Zipf distribution,
 * a value in [1, 100], an event time that lags its append time by up to
 * `disorder_ms`, and a payload that brings the encoded record to
 * `record_bytes`. A record goes to the partition Kafka's default
 * partitioner picks for its key (murmur2 of the key bytes), so all records
 * of a key are in one partition, in order.
 *
 * In "backlog" mode every record is already in the log at time 0 (a job
 * catching up on a full topic); in "live" mode a record can be read from
 * its append time on.
 *
 * Partitions may end at different times (part_end: a bounded source with
 * a stopping offset per partition, as Flink's KafkaSource.setBounded
 * takes): a record drawn for a partition past its end is not appended,
 * so the topic's rate falls by that partition's share, and whatever reads
 * only ended partitions finishes while the rest of the job goes on.
 */
#ifndef CK_WORKLOAD_H
#define CK_WORKLOAD_H

#include "topic.h"

#define CK_WL_MAX_STEPS 64
#define CK_WL_MAX_PART_ENDS 256 /* partitions that may each end at a time of their own */

typedef enum ck_key_dist { CK_KEYS_UNIFORM, CK_KEYS_ZIPF } ck_key_dist;

typedef struct ck_rate_step {
    ck_time at;  /* from this time on ... */
    double rps;  /* ... records per second */
} ck_rate_step;

typedef struct ck_burst {
    ck_time at, duration;
    double rps; /* replaces the step rate during the burst */
} ck_burst;

/* A hot_key event: from `from` to `to` (append time), `share` of the
 * records go to key 0, "user-0" (the most frequent one under Zipf) instead
 * of the key drawn. Overlapping ones: the largest share. */
typedef struct ck_hot_key {
    ck_time from, to;
    double share;
} ck_hot_key;

typedef struct ck_workload_spec {
    char topic[64];
    ck_time duration;
    int nsteps;
    ck_rate_step steps[CK_WL_MAX_STEPS];
    int nbursts;
    ck_burst bursts[CK_WL_MAX_STEPS];
    int partitions;
    int64_t keys;
    ck_key_dist dist;
    double zipf_s;
    uint32_t record_bytes; /* encoded size of a record body */
    int64_t disorder_ms;
    int backlog;
    int poisson;
    int nhot;                     /* the timeline's hot_key events */
    ck_hot_key hot[CK_WL_MAX_STEPS];
    int npart_ends;               /* 0, or partitions: when each partition's records stop */
    ck_time part_end[CK_WL_MAX_PART_ENDS]; /* (at most duration) */
} ck_workload_spec;

typedef struct ck_wl_part {
    int64_t n, cap;
    ck_time *at;     /* append time */
    int64_t *ts;     /* event time, ms */
    uint32_t *key;   /* key id */
    int32_t *value;
} ck_wl_part;

typedef struct ck_workload {
    ck_workload_spec spec;
    int64_t nkeys;
    char *key_text;     /* all keys, back to back */
    uint64_t *key_off;  /* offset of key i in key_text; nkeys + 1 entries */
    int *key_part;      /* partition of key i */
    ck_wl_part *parts;
    int64_t total;
    uint8_t *payload;   /* pseudo-random bytes that payloads point into */
    size_t payload_len;
    ck_topic topic;
} ck_workload;

/* A fingerprint of the generated log (every record of every partition and
 * the keys): two runs with the same one read the same input. */
uint64_t ck_workload_fingerprint(const ck_workload *w);

/* Bytes of the texts of keys 0 .. n-1 ("user-0", "user-1", ...), back to
 * back: the size of key_text. */
uint64_t ck_workload_key_bytes(int64_t n);

/* Generates the log. Returns 0, CK_ENOMEM, CK_EINVAL. */
int ck_workload_generate(ck_workload *w, const ck_workload_spec *spec, uint64_t seed);
void ck_workload_free(ck_workload *w);

/* The rate (records/s) in force at time t. */
double ck_workload_rate(const ck_workload_spec *s, ck_time t);

/* The records the log will hold: the rate over the duration (for Poisson
 * arrivals, the mean). */
double ck_workload_expected_records(const ck_workload_spec *s);

/* Kafka's murmur2 of a byte string (the default partitioner's hash). */
int32_t ck_kafka_murmur2(const uint8_t *data, size_t len);

/* Kafka's default partition of a key. */
int ck_kafka_partition(const char *key, size_t len, int partitions);

static inline const char *ck_workload_key(const ck_workload *w, uint32_t id, uint32_t *len)
{
    *len = (uint32_t)(w->key_off[id + 1] - w->key_off[id]);
    return w->key_text + w->key_off[id];
}

#endif
