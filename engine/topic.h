/*
 * topic.h - the source's view of its input: a replayable, partitioned log,
 * like a Kafka topic. Records are addressed by (partition, offset); a
 * record can be read once the platform clock has passed its append time.
 *
 * The log itself lives outside the engine (workload/ fills it from the
 * scenario's seeded generator); the engine only reads it through this
 * interface.
 */
#ifndef CK_TOPIC_H
#define CK_TOPIC_H

#include "element.h"

typedef struct ck_topic_ops {
    int (*npartitions)(const void *ctx);
    /* Records the partition holds by the end of the workload. */
    int64_t (*size)(const void *ctx, int partition);
    /* Time the record at offset is appended (readable from then on). */
    ck_time (*append_time)(const void *ctx, int partition, int64_t offset);
    /* Reads a record; its key and payload stay valid while the topic lives. */
    void (*read)(const void *ctx, int partition, int64_t offset, ck_rec *out);
    /* Optional (NULL: worked out with the two above), for reading in runs:
     * the end of the run of records in [offset, limit) appended by time
     * now, and reading n records from offset on. */
    int64_t (*readable)(const void *ctx, int partition, int64_t offset, int64_t limit,
                        ck_time now);
    void (*read_n)(const void *ctx, int partition, int64_t offset, int n, ck_rec *out);
} ck_topic_ops;

typedef struct ck_topic {
    const ck_topic_ops *ops;
    const void *ctx;
    const char *name;
} ck_topic;

/* The first offset in [offset, limit) not yet appended at time now (limit
 * when all are). */
static inline int64_t ck_topic_readable(const ck_topic *t, int partition, int64_t offset,
                                        int64_t limit, ck_time now)
{
    if (t->ops->readable)
        return t->ops->readable(t->ctx, partition, offset, limit, now);
    while (offset < limit && t->ops->append_time(t->ctx, partition, offset) <= now)
        offset++;
    return offset;
}

/* Reads records offset .. offset + n - 1 into out[0..n). */
static inline void ck_topic_read_n(const ck_topic *t, int partition, int64_t offset, int n,
                                   ck_rec *out)
{
    if (t->ops->read_n) {
        t->ops->read_n(t->ctx, partition, offset, n, out);
        return;
    }
    for (int i = 0; i < n; i++)
        t->ops->read(t->ctx, partition, offset + i, &out[i]);
}

/*
 * The source subtask that reads a partition, as Flink's KafkaSource assigns
 * splits: ((topic.hashCode() * 31) & 0x7FFFFFFF) % readers, plus the
 * partition number, modulo readers.
 */
int ck_topic_owner(const char *topic, int partition, int readers);

#endif
