/*
 * fuzz_common.h - what the libFuzzer targets of tests/fuzz/ and the seed
 * generator (gen_corpus.c) share: a small job parsed from an inline
 * scenario (its graph and configuration), an input topic for its sources,
 * and a scripted platform (tests/fakeplat.h) whose store hands a target's
 * bytes to a restoring subtask.
 *
 * The job: source(2) -> map -> filter, then a keyed running sum (3) into a
 * sink and a keyed 200 ms window count (2) into another sink, exactly once,
 * on two task managers of two slots: seven subtasks in three vertices,
 * both keyed state kinds, timers, and two-phase-commit sinks.
 */
#ifndef CK_FUZZ_COMMON_H
#define CK_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "error.h"
#include "../fakeplat.h"
#include "scenario.h"
#include "task.h"
#include "topic.h"
#include "wire.h"

/* Stops the fuzzer with a finding: an invariant the decoders must keep. */
#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

static const char fuzz_job_json[] =
    "{\"name\": \"fuzz\", \"seed\": 1,"
    " \"cluster\": {\"taskmanagers\": 2, \"cores\": 2},"
    " \"workload\": {\"duration\": \"1 s\", \"rate\": 100, \"partitions\": 3, \"keys\": 20},"
    " \"job\": {\"operators\": ["
    "  {\"name\": \"source\", \"type\": \"source\", \"parallelism\": 2,"
    "   \"out_of_orderness\": \"100 ms\"},"
    "  {\"name\": \"double\", \"type\": \"map\", \"fn\": \"scale\", \"factor\": 2,"
    "   \"parallelism\": 2},"
    "  {\"name\": \"some\", \"type\": \"filter\", \"keep\": 0.8, \"parallelism\": 2},"
    "  {\"name\": \"total\", \"type\": \"aggregate\", \"fn\": \"sum\", \"parallelism\": 3},"
    "  {\"name\": \"totals\", \"type\": \"sink\", \"parallelism\": 3},"
    "  {\"name\": \"per-200ms\", \"type\": \"window\", \"input\": \"some\", \"size\": \"200 ms\","
    "   \"fn\": \"median\", \"parallelism\": 2},"
    "  {\"name\": \"windows\", \"type\": \"sink\", \"parallelism\": 2},"
    "  {\"name\": \"firsts\", \"type\": \"distinct\", \"input\": \"some\", \"parallelism\": 2},"
    "  {\"name\": \"first-out\", \"type\": \"sink\", \"parallelism\": 2}]},"
    " \"config\": {\"taskmanager.numberOfTaskSlots\": 2,"
    "  \"execution.buffer-timeout\": \"20 ms\","
    "  \"execution.checkpointing.interval\": \"300 ms\","
    "  \"execution.checkpointing.unaligned.enabled\": true,"
    "  \"taskmanager.network.memory.buffer-debloat.enabled\": true}}";

/* ---- the input topic: 3 partitions of 8 records, one every 10 ms ------------- */

#define FUZZ_PARTS 3
#define FUZZ_RECS 8

static const char *const fuzz_keys[] = {"k0", "k1", "key-2", "a-much-longer-key-3"};

static int fuzz_topic_nparts(const void *ctx)
{
    (void)ctx;
    return FUZZ_PARTS;
}

static int64_t fuzz_topic_size(const void *ctx, int partition)
{
    (void)ctx, (void)partition;
    return FUZZ_RECS;
}

static ck_time fuzz_topic_append(const void *ctx, int partition, int64_t offset)
{
    (void)ctx, (void)partition;
    return offset * 10 * CK_NS_PER_MS;
}

static void fuzz_topic_read(const void *ctx, int partition, int64_t offset, ck_rec *out)
{
    (void)ctx;
    memset(out, 0, sizeof(*out));
    out->key = fuzz_keys[(partition + offset) % 4];
    out->klen = (uint32_t)strlen(out->key);
    out->ts = offset * 10;
    out->value = partition + offset;
    out->ingest = offset * 10 * CK_NS_PER_MS;
}

static const ck_topic_ops fuzz_topic_ops = {
    .npartitions = fuzz_topic_nparts,
    .size = fuzz_topic_size,
    .append_time = fuzz_topic_append,
    .read = fuzz_topic_read,
};

/* ---- the job ---------------------------------------------------------------- */

typedef struct fuzz_job {
    ck_scenario sc;
    ck_topic topic;
    ck_job_env env;
} fuzz_job;


/* A file from a fuzz input "u8 mode | the file" (size >= 1), malloc'd, of
 * *len bytes: with mode bit 0 set, its last four bytes are replaced by the
 * CRC-32C of the rest, so that the fuzzer gets past a file's checksum. */
static inline uint8_t *fuzz_file(const uint8_t *data, size_t size, size_t *len)
{
    *len = size - 1;
    uint8_t *p = malloc(*len ? *len : 1);
    FUZZ_CHECK(p);
    memcpy(p, data + 1, *len);
    if ((data[0] & 1) && *len >= 4)
        ck_put_u32(p + *len - 4, ck_crc32c(0, p, *len - 4));
    return p;
}

/* Parses the inline scenario once; the job lives for the whole process. */
static inline fuzz_job *fuzz_job_get(void)
{
    static fuzz_job job;
    static int ready;
    if (!ready) {
        char err[300];
        if (ck_scenario_parse(&job.sc, "fuzz.json", fuzz_job_json, err, sizeof(err))) {
            fprintf(stderr, "fuzz job: %s\n", err);
            abort();
        }
        job.topic = (ck_topic){&fuzz_topic_ops, NULL, "fuzz"};
        job.env = (ck_job_env){.g = &job.sc.graph, .cfg = &job.sc.cfg, .topic = &job.topic,
                               .job_id = "fuzzjob"};
        ready = 1;
    }
    return &job;
}

/* ---- a platform whose store returns the bytes a target gives it ------------- */

typedef struct fuzz_plat {
    fake_plat fp; /* first: the platform pointer is a fake_plat too */
    uint64_t get_token;
    int get_pending;
} fuzz_plat;

static int fuzz_store_get(ck_platform *p, const char *key, uint64_t token)
{
    (void)key;
    fuzz_plat *f = (fuzz_plat *)p;
    f->get_token = token;
    f->get_pending = 1;
    return CK_OK;
}

static int fuzz_store_put(ck_platform *p, const char *key, uint8_t *data, size_t len,
                          uint64_t token)
{
    (void)p, (void)key, (void)len, (void)token;
    free(data);
    return CK_OK; /* never completes: nothing waits on it here */
}

static int fuzz_deploy(ck_platform *p, uint32_t attempt, uint32_t global,
                       const ck_restore_point *from)
{
    (void)p, (void)attempt, (void)global, (void)from;
    return CK_OK; /* a task manager's deployment: nothing runs here */
}

static void fuzz_undeploy(ck_platform *p, uint32_t attempt, uint32_t global)
{
    (void)p, (void)attempt, (void)global;
}

static inline const ck_platform_ops *fuzz_ops(void)
{
    static ck_platform_ops ops;
    ops = fake_ops;
    ops.store_get = fuzz_store_get;
    ops.store_put = fuzz_store_put;
    ops.deploy = fuzz_deploy;
    ops.undeploy = fuzz_undeploy;
    return &ops;
}

static inline void fuzz_plat_init(fuzz_plat *f, fake_world *w, uint32_t endpoint, int host)
{
    memset(f, 0, sizeof(*f));
    fake_init(&f->fp, w, endpoint);
    f->fp.plat.ops = fuzz_ops();
    f->fp.plat.host = host;
}

/* Every message a node sent must be a well-formed frame: drops them all. */
static inline void fuzz_drain(fake_world *w)
{
    fake_msg *m;
    while ((m = fake_pop(w))) {
        ck_wire_hdr h;
        FUZZ_CHECK(ck_wire_decode(m->data, m->len, &h) == CK_OK);
        free(m->data);
        free(m);
    }
}

/* Lets a node do what it can now: due deadlines, then bounded work. */
static inline void fuzz_settle(ck_node n, fake_world *w)
{
    for (int round = 0; round < 2; round++) {
        if (n.ops->deadline(n.self) <= w->now)
            n.ops->on_deadline(n.self);
        int k = 0;
        while (k++ < 64 && n.ops->work(n.self) > 0)
            ;
        fuzz_drain(w);
    }
}

#endif
