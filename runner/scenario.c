#include "scenario.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "expect.h"
#include "jobmanager.h"
#include "jsonin.h"
#include "keygroup.h"
#include "segpool.h"
#include "sweep.h"

#define S_NS INT64_C(1000000000)
#define MAX_DURATION (INT64_C(24) * 3600 * S_NS)

static const char *const top_keys[] = {"name",   "description", "seed",   "cluster",
                                       "workload", "job",       "config", "events",
                                       "expect", "sweep",       NULL};

static void cluster_defaults(ck_cluster_spec *c)
{
    memset(c, 0, sizeof(*c));
    c->cores = 2;
    c->speed = 1e9;
    c->link_bw = 1.25e9; /* 10 Gbit/s */
    c->link_lat = 50 * 1000;
    c->store_bw = 250e6; /* 2 Gbit/s to the object store */
    c->store_lat = 1000 * 1000;
    c->disk_read_bw = 500e6;
    c->disk_write_bw = 300e6;
    c->local_disk_bw = 500e6;
    snprintf(c->network_model, sizeof(c->network_model), "CM02");
    snprintf(c->transfer_model, sizeof(c->transfer_model), "auto");
}

/* A SimGrid platform file: a readable regular file that starts as XML does
 * (what SimGrid then finds wrong in it, the run reports at load). */
static void check_platform_file(ck_jin *j, const char *path)
{
    struct stat st;
    const char *why;
    int fd = ck_jin_open_file(path, &st, &why);
    if (fd < 0 && (errno == EINVAL || errno == EISDIR)) {
        ck_jin_fail(j, "%s: %s (a SimGrid platform file was expected)", path, why);
        return;
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        ck_jin_fail(j, "%s: %s", path, fd < 0 ? why : strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    char head[256];
    size_t n = fread(head, 1, sizeof(head), f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        ck_jin_fail(j, "%s: cannot read", path);
        return;
    }
    size_t i = 0;
    if (n >= 3 && !memcmp(head, "\xef\xbb\xbf", 3))
        i = 3; /* a UTF-8 byte order mark */
    while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
        i++;
    if (i == n || head[i] != '<')
        ck_jin_fail(j, "%s: not XML (a SimGrid platform file was expected)", path);
}

static void parse_cluster(ck_jin *j, const cJSON *o, ck_cluster_spec *c, const char *scenario_path)
{
    static const char *const keys[] = {"taskmanagers", "cores", "speed", "link", "store",
                                       "local_disk", "network_model", "transfer_model",
                                       "platform", NULL};
    static const char *const link_keys[] = {"bandwidth", "latency", NULL};
    static const char *const store_keys[] = {"bandwidth", "latency", "disk_read",
                                             "disk_write", NULL};
    static const char *const models[] = {"CM02", "LV08", NULL};
    static const char *const transfer_models[] = {"auto", "fast", "simgrid", NULL};
    if (!o)
        return;
    size_t saved = ck_jin_push_key(j, "cluster");
    ck_jin_object(j, o, keys);
    int64_t v;
    v = c->taskmanagers;
    ck_jin_int(j, o, "taskmanagers", 0, 1, 4096, &v);
    c->taskmanagers = (int)v;
    v = c->cores;
    ck_jin_int(j, o, "cores", 0, 1, 1024, &v);
    c->cores = (int)v;
    ck_jin_quantity(j, o, "speed", 0, ck_units_speed, "a CPU speed in flops/s", 1e3, 1e15,
                    &c->speed);
    ck_jin_quantity(j, o, "local_disk", 0, ck_units_bandwidth, "a bandwidth", 1e3, 1e13,
                    &c->local_disk_bw);
    const cJSON *link = cJSON_GetObjectItemCaseSensitive(o, "link");
    if (link && !j->failed) {
        size_t s2 = ck_jin_push_key(j, "link");
        ck_jin_object(j, link, link_keys);
        ck_jin_quantity(j, link, "bandwidth", 0, ck_units_bandwidth, "a bandwidth", 1e3,
                        1e13, &c->link_bw);
        ck_jin_duration(j, link, "latency", 0, 0, 10 * S_NS, &c->link_lat);
        ck_jin_pop(j, s2);
    }
    const cJSON *store = cJSON_GetObjectItemCaseSensitive(o, "store");
    if (store && !j->failed) {
        size_t s2 = ck_jin_push_key(j, "store");
        ck_jin_object(j, store, store_keys);
        ck_jin_quantity(j, store, "bandwidth", 0, ck_units_bandwidth, "a bandwidth", 1e3,
                        1e13, &c->store_bw);
        ck_jin_duration(j, store, "latency", 0, 0, 10 * S_NS, &c->store_lat);
        ck_jin_quantity(j, store, "disk_read", 0, ck_units_bandwidth, "a bandwidth", 1e3,
                        1e13, &c->disk_read_bw);
        ck_jin_quantity(j, store, "disk_write", 0, ck_units_bandwidth, "a bandwidth", 1e3,
                        1e13, &c->disk_write_bw);
        ck_jin_pop(j, s2);
    }
    int m = 0;
    if (ck_jin_enum(j, o, "network_model", 0, models, &m) == 0 &&
        cJSON_GetObjectItemCaseSensitive(o, "network_model"))
        snprintf(c->network_model, sizeof(c->network_model), "%s", models[m]);
    if (ck_jin_enum(j, o, "transfer_model", 0, transfer_models, &m) == 0 &&
        cJSON_GetObjectItemCaseSensitive(o, "transfer_model"))
        snprintf(c->transfer_model, sizeof(c->transfer_model), "%s", transfer_models[m]);
    char plat[400] = "";
    ck_jin_string(j, o, "platform", 0, plat, sizeof(plat));
    if (plat[0] && !j->failed) {
        if (plat[0] == '/') {
            snprintf(c->platform, sizeof(c->platform), "%s", plat);
        } else {
            const char *slash = strrchr(scenario_path, '/');
            int dirlen = slash ? (int)(slash - scenario_path) + 1 : 0;
            if ((size_t)dirlen + strlen(plat) >= sizeof(c->platform)) {
                size_t s2 = ck_jin_push_key(j, "platform");
                ck_jin_fail(j, "the platform file's path, next to the scenario, is longer than "
                               "%zu bytes", sizeof(c->platform) - 1);
                ck_jin_pop(j, s2);
            }
            snprintf(c->platform, sizeof(c->platform), "%.*s%s", dirlen, scenario_path, plat);
        }
    }
    if (plat[0] && !j->failed) {
        size_t s2 = ck_jin_push_key(j, "platform");
        check_platform_file(j, c->platform);
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

static void workload_defaults(ck_workload_spec *w)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->topic, sizeof(w->topic), "events");
    w->partitions = 4;
    w->keys = 1000;
    w->dist = CK_KEYS_UNIFORM;
    w->zipf_s = 1.0;
    w->record_bytes = 100;
}

static void parse_rate_list(ck_jin *j, const cJSON *arr, const char *key, ck_workload_spec *w)
{
    static const char *const step_keys[] = {"at", "rate", NULL};
    static const char *const burst_keys[] = {"at", "duration", "rate", NULL};
    int bursts = strcmp(key, "bursts") == 0;
    size_t saved = ck_jin_push_key(j, key);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > CK_WL_MAX_STEPS ||
        (!bursts && cJSON_GetArraySize(arr) == 0)) {
        ck_jin_fail(j, "expected %s list of 1 to %d {%s} objects", bursts ? "a" : "a",
                    CK_WL_MAX_STEPS, bursts ? "at, duration, rate" : "at, rate");
        ck_jin_pop(j, saved);
        return;
    }
    int i = 0;
    for (const cJSON *e = arr->child; e && !j->failed; e = e->next, i++) {
        size_t s2 = ck_jin_push_index(j, i);
        ck_jin_object(j, e, bursts ? burst_keys : step_keys);
        int64_t at = 0, dur = 0;
        double rps = 0;
        ck_jin_duration(j, e, "at", 1, 0, MAX_DURATION, &at);
        ck_jin_number(j, e, "rate", 1, 0, 1e9, &rps);
        if (bursts) {
            ck_jin_duration(j, e, "duration", 1, 1, MAX_DURATION, &dur);
            w->bursts[w->nbursts++] = (ck_burst){at, dur, rps};
        } else {
            if (w->nsteps > 0 && at <= w->steps[w->nsteps - 1].at)
                ck_jin_fail(j, "steps must be in increasing order of \"at\"");
            w->steps[w->nsteps++] = (ck_rate_step){at, rps};
        }
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

/* workload.partition_durations: one duration per partition, each at most
 * the workload's. */
static void parse_partition_durations(ck_jin *j, const cJSON *arr, ck_workload_spec *w)
{
    size_t saved = ck_jin_push_key(j, "partition_durations");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != w->partitions ||
        w->partitions > CK_WL_MAX_PART_ENDS) {
        if (w->partitions > CK_WL_MAX_PART_ENDS)
            ck_jin_fail(j, "takes at most %d partitions (the topic has %d)", CK_WL_MAX_PART_ENDS,
                        w->partitions);
        else
            ck_jin_fail(j, "expected a list of %d durations, one per partition", w->partitions);
        ck_jin_pop(j, saved);
        return;
    }
    int i = 0;
    for (const cJSON *e = arr->child; e && !j->failed; e = e->next, i++) {
        size_t s2 = ck_jin_push_index(j, i);
        ck_jin_duration_value(j, e, 0, w->duration, &w->part_end[i]);
        ck_jin_pop(j, s2);
    }
    w->npart_ends = j->failed ? 0 : w->partitions;
    ck_jin_pop(j, saved);
}

static void parse_workload(ck_jin *j, const cJSON *o, ck_workload_spec *w)
{
    static const char *const keys[] = {"topic", "duration", "rate", "bursts", "partitions",
                                       "keys", "distribution", "zipf_exponent",
                                       "record_bytes", "disorder", "mode", "arrivals",
                                       "partition_durations", NULL};
    static const char *const dists[] = {"uniform", "zipf", NULL};
    static const char *const modes[] = {"live", "backlog", NULL};
    static const char *const arrivals[] = {"uniform", "poisson", NULL};
    size_t saved = ck_jin_push_key(j, "workload");
    if (!o) {
        ck_jin_fail(j, "missing (required)");
        ck_jin_pop(j, saved);
        return;
    }
    ck_jin_object(j, o, keys);
    ck_jin_string(j, o, "topic", 0, w->topic, sizeof(w->topic));
    ck_jin_duration(j, o, "duration", 1, 0, MAX_DURATION, &w->duration);
    const cJSON *rate = cJSON_GetObjectItemCaseSensitive(o, "rate");
    if (!j->failed) {
        if (!rate) {
            size_t s2 = ck_jin_push_key(j, "rate");
            ck_jin_fail(j, "missing (required): records per second, or a list of steps");
            ck_jin_pop(j, s2);
        } else if (cJSON_IsNumber(rate)) {
            double rps = 0;
            ck_jin_number(j, o, "rate", 1, 0, 1e9, &rps);
            w->steps[0] = (ck_rate_step){0, rps};
            w->nsteps = 1;
        } else {
            parse_rate_list(j, rate, "rate", w);
        }
    }
    const cJSON *bursts = cJSON_GetObjectItemCaseSensitive(o, "bursts");
    if (bursts && !j->failed)
        parse_rate_list(j, bursts, "bursts", w);
    int64_t v = w->partitions;
    ck_jin_int(j, o, "partitions", 0, 1, 100000, &v);
    w->partitions = (int)v;
    ck_jin_int(j, o, "keys", 0, 1, 100000000, &w->keys);
    int d = 0;
    ck_jin_enum(j, o, "distribution", 0, dists, &d);
    w->dist = d ? CK_KEYS_ZIPF : CK_KEYS_UNIFORM;
    ck_jin_number(j, o, "zipf_exponent", 0, 0.01, 10, &w->zipf_s);
    v = w->record_bytes;
    ck_jin_int(j, o, "record_bytes", 0, 1, CK_REC_MAX_PAYLOAD, &v);
    w->record_bytes = (uint32_t)v;
    int64_t dis = 0;
    ck_jin_duration(j, o, "disorder", 0, 0, 3600 * S_NS, &dis);
    w->disorder_ms = dis / 1000000;
    int m = 0;
    ck_jin_enum(j, o, "mode", 0, modes, &m);
    w->backlog = m == 1;
    int a = 0;
    ck_jin_enum(j, o, "arrivals", 0, arrivals, &a);
    w->poisson = a == 1;
    const cJSON *ends = cJSON_GetObjectItemCaseSensitive(o, "partition_durations");
    if (ends && !j->failed)
        parse_partition_durations(j, ends, w);
    ck_jin_pop(j, saved);
}

static int find_op(const ck_job_spec *job, const char *name, int before)
{
    for (int i = 0; i < before; i++)
        if (strcmp(job->ops[i].name, name) == 0)
            return i;
    return -1;
}

/* A value's modelled weight at most (1 GB), a state's (100 TB): their
 * products with a count of entries stay far within 64 bits. */
#define MAX_VALUE_SIZE 1e9
#define MAX_STATE_SIZE 1e14

/* An aggregate's state_size (held in value_size by parse_operator) becomes
 * the value_size that its one value per key weighs once every key of the
 * workload was seen: state_size / keys, rounded up. */
static void scenario_state_sizes(ck_jin *j, const cJSON *ops, ck_job_spec *job, int64_t keys)
{
    for (int i = 0; i < job->nops && !j->failed; i++) {
        const cJSON *o = cJSON_GetArrayItem(ops, i);
        if (!o || !cJSON_GetObjectItemCaseSensitive(o, "state_size"))
            continue;
        uint64_t ss = job->ops[i].value_size, k = keys > 0 ? (uint64_t)keys : 1;
        uint64_t vs = (ss + k - 1) / k;
        if (vs > (uint64_t)MAX_VALUE_SIZE) {
            size_t s1 = ck_jin_push_key(j, "job");
            size_t s2 = ck_jin_push_key(j, "operators");
            size_t s3 = ck_jin_push_index(j, i);
            size_t s4 = ck_jin_push_key(j, "state_size");
            ck_jin_fail(j, "%llu bytes over %lld keys is %llu bytes a value, more than 1e9: "
                           "raise workload.keys",
                        (unsigned long long)ss, (long long)keys, (unsigned long long)vs);
            ck_jin_pop(j, s4);
            ck_jin_pop(j, s3);
            ck_jin_pop(j, s2);
            ck_jin_pop(j, s1);
            return;
        }
        job->ops[i].value_size = vs;
    }
}

static void parse_operator(ck_jin *j, const cJSON *o, ck_job_spec *job, int i)
{
    static const char *const keys[] = {
        "name",           "type", "input", "partition", "parallelism", "max_parallelism",
        "cpu_per_record", "fn",   "factor", "keep",     "size",        "out_of_orderness",
        "write_time",     "count", "count_seen", "value_size", "state_size", "uid", NULL};
    static const char *const types[] = {"source", "map", "filter", "aggregate", "window",
                                        "sink", "distinct", "buffer", NULL};
    static const char *const ships[] = {"forward", "hash", "rebalance", "rescale", "broadcast",
                                        NULL};
    static const char *const map_fns[] = {"identity", "drop_payload", "scale", NULL};
    static const char *const agg_fns[] = {"count", "sum", "median", NULL};
    ck_op_spec *op = &job->ops[i];
    memset(op, 0, sizeof(*op));
    ck_jin_object(j, o, keys);
    int type = 0;
    ck_jin_enum(j, o, "type", 1, types, &type);
    op->kind = (ck_op_kind)type;
    /* Unnamed operators are called after their type ("map", then "map-3"). */
    snprintf(op->name, sizeof(op->name), "%s", types[type]);
    if (find_op(job, op->name, i) >= 0)
        snprintf(op->name, sizeof(op->name), "%s-%d", types[type], i);
    ck_jin_string(j, o, "name", 0, op->name, sizeof(op->name));
    if (j->failed)
        return;
    if (find_op(job, op->name, i) >= 0) {
        size_t s2 = ck_jin_push_key(j, "name");
        ck_jin_fail(j, "operator name \"%s\" is used twice", op->name);
        ck_jin_pop(j, s2);
        return;
    }
    /* Its stable identity (Flink's uid()): the name unless given. */
    memcpy(op->uid, op->name, sizeof(op->uid));
    ck_jin_string(j, o, "uid", 0, op->uid, sizeof(op->uid));
    if (j->failed)
        return;
    for (int k = 0; k < i; k++)
        if (strcmp(job->ops[k].uid, op->uid) == 0) {
            size_t s2 = ck_jin_push_key(j, "uid");
            ck_jin_fail(j, "expected a uid no other operator has, got \"%s\" (that of \"%s\")",
                        op->uid, job->ops[k].name);
            ck_jin_pop(j, s2);
            return;
        }
    /* Which keys make sense for which type. */
    static const struct {
        const char *key;
        unsigned kinds; /* bit per ck_op_kind */
    } only[] = {
        {"input", ~(1u << CK_OP_SOURCE)},
        {"partition", ~(1u << CK_OP_SOURCE)},
        {"fn", (1u << CK_OP_MAP) | (1u << CK_OP_AGGREGATE) | (1u << CK_OP_WINDOW)},
        {"factor", 1u << CK_OP_MAP},
        {"keep", 1u << CK_OP_FILTER},
        {"size", 1u << CK_OP_WINDOW},
        {"out_of_orderness", 1u << CK_OP_SOURCE},
        {"write_time", 1u << CK_OP_SINK},
        {"count", 1u << CK_OP_BUFFER},
        {"count_seen", 1u << CK_OP_BUFFER},
        {"value_size", (1u << CK_OP_AGGREGATE) | (1u << CK_OP_WINDOW) | (1u << CK_OP_DISTINCT)},
        {"state_size", 1u << CK_OP_AGGREGATE},
    };
    for (size_t k = 0; k < sizeof(only) / sizeof(only[0]); k++)
        if (cJSON_GetObjectItemCaseSensitive(o, only[k].key) && !(only[k].kinds & (1u << type))) {
            size_t s2 = ck_jin_push_key(j, only[k].key);
            ck_jin_fail(j, "not a setting of %s operators", types[type]);
            ck_jin_pop(j, s2);
            return;
        }
    op->input = -1;
    if (op->kind != CK_OP_SOURCE) {
        char in[CK_NAME_MAX] = "";
        ck_jin_string(j, o, "input", 0, in, sizeof(in));
        if (j->failed)
            return;
        if (in[0]) {
            op->input = find_op(job, in, i);
            if (op->input < 0) {
                size_t s2 = ck_jin_push_key(j, "input");
                ck_jin_fail(j, "expected the name of an operator listed before this one, got \"%s\"", in);
                ck_jin_pop(j, s2);
                return;
            }
        } else if (i == 0) {
            ck_jin_fail(j, "the first operator must be a source");
            return;
        } else {
            op->input = i - 1;
        }
        int ship = ck_op_keyed(op->kind) ? CK_SHIP_HASH : CK_SHIP_FORWARD;
        ck_jin_enum(j, o, "partition", 0, ships, &ship);
        op->ship = (ck_ship)ship;
    }
    int64_t v = 0;
    ck_jin_int(j, o, "parallelism", 0, 1, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &v);
    op->parallelism = (int)v;
    v = 0;
    ck_jin_int(j, o, "max_parallelism", 0, 1, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &v);
    op->max_parallelism = (int)v;
    ck_jin_quantity(j, o, "cpu_per_record", 0, ck_units_flops, "a CPU cost in flops", 0,
                    1e12, &op->cpu_flops);
    ck_jin_duration(j, o, "write_time", 0, 0, 10 * S_NS, &op->write_ns);
    /* What its state weighs in production, modelled (value_size), or the
     * whole of it (state_size: scenario_state_sizes turns it into a
     * value_size once the workload's keys are known; kept here in bytes). */
    double vs = 0, ss = 0;
    ck_jin_quantity(j, o, "value_size", 0, ck_units_size, "a size in bytes", 0, MAX_VALUE_SIZE,
                    &vs);
    ck_jin_quantity(j, o, "state_size", 0, ck_units_size, "a size in bytes", 1, MAX_STATE_SIZE,
                    &ss);
    if (!j->failed && cJSON_GetObjectItemCaseSensitive(o, "value_size") &&
        cJSON_GetObjectItemCaseSensitive(o, "state_size")) {
        size_t s2 = ck_jin_push_key(j, "state_size");
        ck_jin_fail(j, "give value_size or state_size, not both");
        ck_jin_pop(j, s2);
        return;
    }
    op->value_size = (uint64_t)(ss > 0 ? ss : vs);
    int fn = 0;
    switch (op->kind) {
    case CK_OP_MAP:
        ck_jin_enum(j, o, "fn", 0, map_fns, &fn);
        op->map_fn = (ck_map_fn)fn;
        op->map_arg = 1;
        ck_jin_int(j, o, "factor", 0, -1000000, 1000000, &op->map_arg);
        if (cJSON_GetObjectItemCaseSensitive(o, "factor") && op->map_fn != CK_MAP_SCALE) {
            size_t s2 = ck_jin_push_key(j, "factor");
            ck_jin_fail(j, "only a map with \"fn\": \"scale\" takes a factor");
            ck_jin_pop(j, s2);
        }
        break;
    case CK_OP_FILTER: {
        double keep = 1.0;
        ck_jin_number(j, o, "keep", 0, 0, 1, &keep);
        op->filter_keep_ppm = (uint32_t)(keep * 1e6 + 0.5);
        break;
    }
    case CK_OP_AGGREGATE:
    case CK_OP_WINDOW:
        ck_jin_enum(j, o, "fn", 0, agg_fns, &fn);
        op->agg_fn = (ck_agg_fn)fn;
        if (!j->failed && op->kind == CK_OP_AGGREGATE && op->agg_fn == CK_AGG_MEDIAN) {
            size_t s2 = ck_jin_push_key(j, "fn");
            ck_jin_fail(j, "median is for windows (a running median would keep every value "
                           "of a key forever); expected count or sum");
            ck_jin_pop(j, s2);
        }
        if (op->kind == CK_OP_WINDOW) {
            int64_t size = 0;
            ck_jin_duration(j, o, "size", 1, 1000000, MAX_DURATION, &size);
            if (!j->failed && size % 1000000) {
                size_t s2 = ck_jin_push_key(j, "size");
                ck_jin_fail(j, "expected a whole number of milliseconds");
                ck_jin_pop(j, s2);
            }
            op->window_ms = size / 1000000;
        }
        break;
    case CK_OP_SOURCE: {
        int64_t ooo = 0;
        ck_jin_duration(j, o, "out_of_orderness", 0, 0, 3600 * S_NS, &ooo);
        op->ooo_ms = ooo / 1000000;
        break;
    }
    case CK_OP_BUFFER: {
        int64_t count = 0;
        ck_jin_int(j, o, "count", 1, 1, CK_BUFFER_MAX, &count);
        op->buffer_count = (int)count;
        ck_jin_bool(j, o, "count_seen", 0, &op->buffer_seen);
        break;
    }
    case CK_OP_SINK:
    case CK_OP_DISTINCT:
        break;
    }
}

static void parse_job(ck_jin *j, const cJSON *o, ck_job_spec *job)
{
    static const char *const keys[] = {"operators", NULL};
    size_t saved = ck_jin_push_key(j, "job");
    if (!o) {
        ck_jin_fail(j, "missing (required)");
        ck_jin_pop(j, saved);
        return;
    }
    ck_jin_object(j, o, keys);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(o, "operators");
    size_t s2 = ck_jin_push_key(j, "operators");
    if (!j->failed && (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) < 2 ||
                       cJSON_GetArraySize(ops) > CK_MAX_OPS))
        ck_jin_fail(j, "expected a list of 2 to %d operators, from sources to sinks", CK_MAX_OPS);
    int i = 0;
    for (const cJSON *e = ops ? ops->child : NULL; e && !j->failed; e = e->next, i++) {
        size_t s3 = ck_jin_push_index(j, i);
        parse_operator(j, e, job, i);
        ck_jin_pop(j, s3);
    }
    job->nops = i;
    ck_jin_pop(j, s2);
    ck_jin_pop(j, saved);
}

/* "after": {"moment": ..., "nth": N}: the event starts `at` after it. */
static void parse_after(ck_jin *j, const cJSON *e, ck_fault *f)
{
    static const char *const keys[] = {"moment", "nth", NULL};
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "after");
    if (!a)
        return;
    size_t saved = ck_jin_push_key(j, "after");
    if (!cJSON_IsObject(a)) {
        ck_jin_fail(j, "expected an object {\"moment\": ..., \"nth\": N}");
        ck_jin_pop(j, saved);
        return;
    }
    ck_jin_object(j, a, keys);
    int m = 0;
    ck_jin_enum(j, a, "moment", 1, ck_moment_names, &m);
    int64_t nth = 1;
    ck_jin_int(j, a, "nth", 0, 1, 1000000, &nth);
    f->moment = (ck_moment)(m + 1);
    f->nth = (int)nth;
    ck_jin_pop(j, saved);
}

/* A host named in an event: "tm<i>", or "jm" and "store" where allowed. */
static int parse_host(ck_jin *j, const char *name, int ntm, int tm_only)
{
    int h = -1, used = 0;
    if (sscanf(name, "tm%d%n", &h, &used) == 1 && !name[used] && h >= 0 && h < ntm)
        return h;
    if (!tm_only && !strcmp(name, "jm"))
        return ntm;
    if (!tm_only && !strcmp(name, "store"))
        return ntm + 1;
    if (tm_only)
        ck_jin_fail(j, "expected a task manager, tm0 to tm%d, got \"%s\"", ntm - 1, name);
    else
        ck_jin_fail(j, "expected a host: tm0 to tm%d, jm or store, got \"%s\"", ntm - 1, name);
    return -1;
}

static void parse_partition(ck_jin *j, const cJSON *e, ck_fault *f, int ntm)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "groups");
    size_t saved = ck_jin_push_key(j, "groups");
    if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) != 2) {
        ck_jin_fail(j, "expected two lists of hosts, e.g. [[\"jm\", \"tm0\"], [\"tm1\"]]");
        ck_jin_pop(j, saved);
        return;
    }
    for (int side = 0; side < 2 && !j->failed; side++) {
        const cJSON *list = cJSON_GetArrayItem(g, side);
        size_t s2 = ck_jin_push_index(j, side);
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
            ck_jin_fail(j, "expected a non-empty list of hosts");
        int i = 0;
        for (const cJSON *x = list ? list->child : NULL; x && !j->failed; x = x->next, i++) {
            size_t s3 = ck_jin_push_index(j, i);
            if (!cJSON_IsString(x)) {
                ck_jin_fail(j, "expected a host name");
            } else {
                int h = parse_host(j, x->valuestring, ntm, 0);
                for (int k = 0; k < f->nside && !j->failed; k++)
                    if (f->side_host[k] == h)
                        ck_jin_fail(j, "\"%s\" is named twice", x->valuestring);
                if (!j->failed && f->nside == CK_MAX_PARTITION_HOSTS)
                    ck_jin_fail(j, "a partition names at most %d hosts",
                                CK_MAX_PARTITION_HOSTS);
                if (!j->failed) {
                    f->side_host[f->nside] = h;
                    f->side[f->nside++] = (uint8_t)side;
                }
            }
            ck_jin_pop(j, s3);
        }
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

/* "ops" of a store_errors: one of "put", "get", "delete", or a list of
 * them (default: all three). */
static void parse_store_ops(ck_jin *j, const cJSON *e, ck_fault *f)
{
    const int all = CK_STORE_OP_ALL;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "ops");
    f->ops = all;
    if (!o)
        return;
    size_t saved = ck_jin_push_key(j, "ops");
    f->ops = 0;
    int n = cJSON_IsArray(o) ? cJSON_GetArraySize(o) : cJSON_IsString(o) ? 1 : 0;
    if (n == 0)
        ck_jin_fail(j, "expected \"put\", \"get\", \"delete\" or a non-empty list of them");
    for (int i = 0; i < n && !j->failed; i++) {
        const cJSON *x = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, i) : o;
        size_t s2 = cJSON_IsArray(o) ? ck_jin_push_index(j, i) : 0;
        int k = -1;
        for (int m = 0; cJSON_IsString(x) && ck_store_op_names[m]; m++)
            if (!strcmp(x->valuestring, ck_store_op_names[m]))
                k = m;
        if (k < 0) {
            char got[96];
            ck_jin_describe(x, got, sizeof(got));
            ck_jin_fail(j, "expected \"put\", \"get\" or \"delete\", got %s", got);
        } else if (f->ops & (1 << k)) {
            ck_jin_fail(j, "\"%s\" is named twice", ck_store_op_names[k]);
        }
        f->ops |= k >= 0 ? 1 << k : 0;
        if (cJSON_IsArray(o))
            ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

/* A rescale's "parallelism": operator names to their new parallelism.
 * Each rescale starts from the parallelism the one before it in the
 * timeline left (the job's for the first); f->par gets every operator's
 * parallelism after it. The job it makes must build (graph.c's rules: an
 * operator whose parallelism differs from its input's leaves their chain,
 * a forward edge needs equal parallelism) and fit the cluster's slots. */
static void parse_rescale(ck_jin *j, const cJSON *e, ck_scenario *s, ck_fault *f)
{
    const ck_fault *prev = NULL;
    for (int k = 0; k < s->nfaults; k++)
        if (s->faults[k].kind == CK_FAULT_RESCALE)
            prev = &s->faults[k], f->rescale++;
    for (int k = 0; k < s->graph.spec.nops; k++)
        f->par[k] = prev ? prev->par[k] : (uint16_t)s->graph.spec.ops[k].parallelism;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "parallelism");
    size_t saved = ck_jin_push_key(j, "parallelism");
    if (!cJSON_IsObject(o) || !o->child) {
        ck_jin_fail(j, "expected an object of operator names and their new parallelism, "
                       "e.g. {\"count\": 8}");
        ck_jin_pop(j, saved);
        return;
    }
    for (const cJSON *x = o->child; x && !j->failed; x = x->next) {
        size_t s2 = ck_jin_push_key(j, x->string);
        int op = -1;
        for (int k = 0; k < s->graph.spec.nops; k++)
            if (!strcmp(s->graph.spec.ops[k].name, x->string))
                op = k;
        if (op < 0) {
            ck_jin_fail(j, "no operator named \"%s\" in the job", x->string);
            break;
        }
        int maxp = s->graph.spec.ops[op].max_parallelism;
        if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int64_t)x->valuedouble ||
            x->valuedouble < 1 || x->valuedouble > maxp) {
            char got[96];
            ck_jin_describe(x, got, sizeof(got));
            ck_jin_fail(j, "expected a parallelism from 1 to %d (the max parallelism of \"%s\"), "
                           "got %s",
                        maxp, x->string, got);
            break;
        }
        f->par[op] = (uint16_t)x->valuedouble;
        ck_jin_pop(j, s2);
    }
    /* A forward edge (a chain, Flink's vertex) keeps one parallelism: the
     * adaptive scheduler rescales whole vertices, and a forward edge
     * between two parallelisms is refused by Flink. */
    if (!j->failed) {
        s->own_rescales++;
        for (int k = 0; k < s->graph.spec.nops; k++) {
            uint16_t was = f->rescale ? s->rescale_hi[k]
                                      : (uint16_t)s->graph.spec.ops[k].parallelism;
            s->rescale_hi[k] = f->par[k] > was ? f->par[k] : was;
        }
    }
    for (int k = 0; k < s->graph.spec.nops && !j->failed; k++) {
        const ck_op_spec *op = &s->graph.spec.ops[k];
        if (op->kind != CK_OP_SOURCE && op->ship == CK_SHIP_FORWARD && op->input >= 0 &&
            f->par[k] != f->par[op->input])
            ck_jin_fail(j,
                        "\"%s\" (%d) reads \"%s\" (%d) over a forward edge: give both the same "
                        "parallelism (a chain, Flink's job vertex, has one)",
                        op->name, f->par[k], s->graph.spec.ops[op->input].name,
                        f->par[op->input]);
    }
    if (!j->failed) {
        ck_job_spec *spec = malloc(sizeof(*spec));
        ck_graph *g = malloc(sizeof(*g));
        int bad = -1;
        char why[300];
        if (!spec || !g) {
            ck_jin_fail(j, "out of memory");
        } else {
            *spec = s->graph.spec; /* resolved: each max parallelism as the job first had it */
            for (int k = 0; k < spec->nops; k++)
                spec->ops[k].parallelism = f->par[k];
            if (ck_graph_build(g, spec, &s->cfg, &bad, why, sizeof(why))) {
                ck_jin_fail(j, "the job at this parallelism does not build: %s%s%s",
                            bad >= 0 ? s->graph.spec.ops[bad].name : "",
                            bad >= 0 ? ": " : "", why);
            } else {
                int need = ck_graph_hosts_needed(g), ntm = ck_scenario_taskmanagers(s);
                if (need > ntm)
                    ck_jin_fail(j,
                                "the job needs %d slots at this parallelism, and the cluster's "
                                "%d task managers with taskmanager.numberOfTaskSlots = %d hold "
                                "%d: raise cluster.taskmanagers (idle ones wait for a rescale)",
                                g->nslots, ntm, g->slots_per_host, ntm * g->slots_per_host);
            }
        }
        free(spec);
        free(g);
    }
    ck_jin_pop(j, saved);
}

static void parse_events(ck_jin *j, const cJSON *o, ck_scenario *s)
{
    /* The fields each action takes besides "at" and "action". */
    const char *const *actions = ck_fault_names;
    static const char *const fields[][6] = {
        {"host", "restart_after", "kind", NULL},
        {"host", "factor", "duration", NULL},
        {"host", "factor", "latency", "duration", NULL},
        {"host", "duration", NULL},
        {"groups", "duration", NULL},
        {"stop", "resume_after", NULL},
        {"how", "file", NULL},
        {"operator", "factor", "duration", NULL},
        {"share", "duration", NULL},
        {"operator", "factor", "duration", NULL},
        {"host", "ops", "probability", "duration", NULL},
        {"host", "probability", "delay", "duration", NULL},
        {"host", "point", "probability", "duration", NULL},
        {"sink", NULL},
        {"sink", NULL},
        {"sink", NULL},
        {"parallelism", "via", NULL},
    };
    static const char *const damages[] = {"bitflip", "truncate", NULL};
    if (!o)
        return;
    size_t saved = ck_jin_push_key(j, "events");
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) > CK_MAX_FAULTS) {
        ck_jin_fail(j, "expected a list of at most %d events {at, action, ...}", CK_MAX_FAULTS);
        ck_jin_pop(j, saved);
        return;
    }
    int i = 0;
    int ntm = ck_scenario_taskmanagers(s);
    for (const cJSON *e = o->child; e && !j->failed; e = e->next, i++) {
        size_t s2 = ck_jin_push_index(j, i);
        ck_fault *f = &s->faults[s->nfaults];
        memset(f, 0, sizeof(*f));
        f->factor = 1.0;
        int a = 0;
        if (!cJSON_IsObject(e))
            ck_jin_fail(j, "expected an object {at, action, ...}");
        ck_jin_enum(j, e, "action", 1, actions, &a);
        f->kind = (ck_fault_kind)a;
        if (!j->failed) {
            const char *allowed[10] = {"at", "action", "after"};
            int n = 3;
            for (int k = 0; fields[a][k]; k++)
                allowed[n++] = fields[a][k];
            allowed[n] = NULL;
            ck_jin_object(j, e, allowed);
        }
        ck_jin_duration(j, e, "at", 1, 0, MAX_DURATION, &f->at);
        if (!j->failed)
            parse_after(j, e, f);
        if (!j->failed && cJSON_GetObjectItemCaseSensitive(e, "host") == NULL &&
            (f->kind == CK_FAULT_CRASH || f->kind == CK_FAULT_SLOW_CPU ||
             f->kind == CK_FAULT_SLOW_LINK || f->kind == CK_FAULT_LINK_DOWN))
            ck_jin_fail(j, "action \"%s\" needs a \"host\"", actions[a]);
        char host[32] = "";
        ck_jin_string(j, e, "host", 0, host, sizeof(host));
        if (host[0] && !j->failed) {
            size_t s3 = ck_jin_push_key(j, "host");
            /* Only task managers crash: job manager high availability is not modelled. */
            f->host = parse_host(j, host, ntm, f->kind == CK_FAULT_CRASH);
            /* The faults inside the processes hit a host's own operations:
             * the store is what answers them (no host: every host's). */
            if (!j->failed && ck_fault_in_process(f->kind) &&
                (f->host == ntm + 1 || (f->kind == CK_FAULT_ALLOC_FAILURE && f->host == ntm)))
                ck_jin_fail(j, "expected %s, got \"%s\" (no \"host\": every host's %s)",
                            f->kind == CK_FAULT_ALLOC_FAILURE
                                ? "a task manager, where subtasks run"
                                : "a task manager or jm, whose store operations fail",
                            host,
                            f->kind == CK_FAULT_ALLOC_FAILURE ? "subtasks" : "operations");
            ck_jin_pop(j, s3);
        } else if (ck_fault_in_process(f->kind)) {
            f->host = -1; /* every host's */
        }
        switch (f->kind) {
        case CK_FAULT_CRASH:
            ck_jin_duration(j, e, "restart_after", 0, 1, MAX_DURATION, &f->duration);
            ck_jin_enum(j, e, "kind", 0, ck_crash_kind_names, &f->crash);
            break;
        case CK_FAULT_SLOW_CPU:
            ck_jin_number(j, e, "factor", 1, 0.001, 1.0, &f->factor);
            ck_jin_duration(j, e, "duration", 0, 1, MAX_DURATION, &f->duration);
            break;
        case CK_FAULT_SLOW_LINK:
            ck_jin_number(j, e, "factor", 0, 0.0001, 1.0, &f->factor);
            ck_jin_duration(j, e, "latency", 0, 0, 100 * S_NS, &f->latency);
            if (!j->failed && f->factor == 1.0 && f->latency == 0)
                ck_jin_fail(j, "action \"slow_link\" needs a \"factor\" below 1 or a \"latency\"");
            ck_jin_duration(j, e, "duration", 0, 1, MAX_DURATION, &f->duration);
            break;
        case CK_FAULT_LINK_DOWN:
            ck_jin_duration(j, e, "duration", 0, 1, MAX_DURATION, &f->duration);
            break;
        case CK_FAULT_PARTITION:
            if (!j->failed)
                parse_partition(j, e, f, ntm);
            ck_jin_duration(j, e, "duration", 0, 1, MAX_DURATION, &f->duration);
            break;
        case CK_FAULT_SAVEPOINT:
            ck_jin_bool(j, e, "stop", 0, &f->stop);
            ck_jin_duration(j, e, "resume_after", 0, 1, MAX_DURATION, &f->resume_after);
            if (!j->failed && f->resume_after && !f->stop)
                ck_jin_fail(j, "\"resume_after\" needs \"stop\": true");
            break;
        case CK_FAULT_CORRUPT_CHECKPOINT:
            ck_jin_enum(j, e, "how", 0, damages, &f->how);
            ck_jin_enum(j, e, "file", 0, ck_damage_file_names, &f->file);
            break;
        case CK_FAULT_SLOW_OPERATOR:
        case CK_FAULT_SLOW_SINK: {
            f->host = -1; /* no host: the operator's subtasks, wherever they run */
            char name[CK_NAME_MAX] = "";
            ck_jin_string(j, e, "operator", 1, name, sizeof(name));
            f->op = -1;
            for (int k = 0; k < s->job.nops && !j->failed; k++)
                if (!strcmp(s->job.ops[k].name, name))
                    f->op = k;
            if (!j->failed && f->op < 0) {
                size_t s3 = ck_jin_push_key(j, "operator");
                ck_jin_fail(j, "no operator named \"%s\" in the job", name);
                ck_jin_pop(j, s3);
            }
            if (!j->failed && f->kind == CK_FAULT_SLOW_SINK &&
                (s->job.ops[f->op].kind != CK_OP_SINK || s->job.ops[f->op].write_ns == 0)) {
                size_t s3 = ck_jin_push_key(j, "operator");
                ck_jin_fail(j, "\"%s\" is not a sink with a \"write_time\" (the time its external "
                               "system takes per record, which slow_sink multiplies)",
                            name);
                ck_jin_pop(j, s3);
            }
            ck_jin_number(j, e, "factor", 1, 1.001, 10000.0, &f->factor);
            ck_jin_duration(j, e, "duration", 1, 1, MAX_DURATION, &f->duration);
            /* The engine applies it by its clock: a time, not a moment. */
            if (!j->failed && f->moment != CK_MOMENT_NONE)
                ck_jin_fail(j, "\"%s\" starts at a time (\"at\"), not \"after\" a moment",
                            ck_fault_name(f->kind));
            break;
        }
        case CK_FAULT_STORE_ERRORS:
        case CK_FAULT_STORE_DELAY:
        case CK_FAULT_ALLOC_FAILURE:
            f->prob = 1.0;
            ck_jin_number(j, e, "probability", 0, 1e-6, 1.0, &f->prob);
            if (f->kind == CK_FAULT_ALLOC_FAILURE) {
                int p = 0;
                ck_jin_enum(j, e, "point", 1, ck_alloc_point_names, &p);
                f->point = p + 1; /* CK_POINT_* */
            } else if (f->kind == CK_FAULT_STORE_ERRORS && !j->failed) {
                parse_store_ops(j, e, f);
            }
            if (f->kind == CK_FAULT_STORE_DELAY)
                ck_jin_duration(j, e, "delay", 1, 1000, 100 * S_NS, &f->delay);
            ck_jin_duration(j, e, "duration", 0, 1, MAX_DURATION, &f->duration);
            break;
        case CK_FAULT_SINK_DUPLICATE:
        case CK_FAULT_SINK_DROP:
        case CK_FAULT_SINK_CORRUPT: {
            /* The sink's external system misbehaves with its next commit. */
            f->host = -1;
            f->op = -1;
            char name[CK_NAME_MAX] = "";
            ck_jin_string(j, e, "sink", 1, name, sizeof(name));
            for (int k = 0; k < s->job.nops && !j->failed; k++)
                if (!strcmp(s->job.ops[k].name, name))
                    f->op = k;
            if (!j->failed && (f->op < 0 || s->job.ops[f->op].kind != CK_OP_SINK)) {
                size_t s3 = ck_jin_push_key(j, "sink");
                ck_jin_fail(j, "expected the name of a sink of the job, got \"%s\"", name);
                ck_jin_pop(j, s3);
            }
            break;
        }
        case CK_FAULT_RESCALE:
            f->host = -1;
            f->op = -1;
            ck_jin_enum(j, e, "via", 0, ck_rescale_via_names, &f->via);
            if (!j->failed && f->via == CK_RESCALE_VIA_CHECKPOINT &&
                ck_cfg(&s->cfg, CK_CFG_CP_INTERVAL) <= 0) {
                size_t s3 = ck_jin_push_key(j, "via");
                ck_jin_fail(j, "\"checkpoint\" restarts from the latest completed checkpoint, "
                               "and execution.checkpointing.interval is 0 (no checkpoints): "
                               "use \"savepoint\"");
                ck_jin_pop(j, s3);
            }
            if (!j->failed)
                parse_rescale(j, e, s, f);
            break;
        case CK_FAULT_HOT_KEY:
            f->host = -1;
            ck_jin_number(j, e, "share", 1, 0.0, 1.0, &f->factor);
            ck_jin_duration(j, e, "duration", 1, 1, MAX_DURATION, &f->duration);
            /* The input is generated before the run: a time, not a moment. */
            if (!j->failed && f->moment != CK_MOMENT_NONE)
                ck_jin_fail(j, "\"hot_key\" starts at a time (\"at\"), not \"after\" a moment");
            break;
        }
        /* Timed events in order; triggered ones may stand anywhere. */
        if (!j->failed && f->moment == CK_MOMENT_NONE)
            for (int k = s->nfaults - 1; k >= 0; k--)
                if (s->faults[k].moment == CK_MOMENT_NONE) {
                    if (f->at < s->faults[k].at)
                        ck_jin_fail(j, "events must be in order of \"at\"");
                    break;
                }
        s->nfaults++;
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

/* Rules between keys, or beyond a key's range, that Flink checks too. */
static void check_config(ck_jin *j, const ck_config *cfg)
{
    if (j->failed)
        return;
    size_t saved = ck_jin_push_key(j, "config");
    char a[32], b[32];
    int64_t seg = ck_cfg(cfg, CK_CFG_SEGMENT_SIZE);
    int64_t cpi = ck_cfg(cfg, CK_CFG_CP_INTERVAL);
    int64_t hbi = ck_cfg(cfg, CK_CFG_HB_INTERVAL), hbt = ck_cfg(cfg, CK_CFG_HB_TIMEOUT);
    if (!ck_cfg(cfg, CK_CFG_BUFFER_TIMEOUT_ENABLED) && ck_cfg(cfg, CK_CFG_BUFFER_TIMEOUT) == 0) {
        size_t s2 = ck_jin_push_key(j, "execution.buffer-timeout.enabled");
        ck_jin_fail(j, "false contradicts a buffer timeout of 0 (flush after every record)");
        ck_jin_pop(j, s2);
    }
    if (seg & (seg - 1)) { /* NettyShuffleEnvironmentOptions: a power of two */
        size_t s2 = ck_jin_push_key(j, "taskmanager.memory.segment-size");
        ck_config_format(CK_CFG_SEGMENT_SIZE, seg, a, sizeof(a));
        ck_jin_fail(j, "expected a power of two from 4 kb to 16 mb, got %s", a);
        ck_jin_pop(j, s2);
    } else if (cpi > 0 && cpi < 10 * CK_MS_) { /* CheckpointConfig: the least interval */
        size_t s2 = ck_jin_push_key(j, "execution.checkpointing.interval");
        ck_config_format(CK_CFG_CP_INTERVAL, cpi, a, sizeof(a));
        ck_jin_fail(j, "expected 0 (no checkpoints) or at least 10 ms, got %s", a);
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_RS_EXP_INITIAL) > ck_cfg(cfg, CK_CFG_RS_EXP_MAX)) {
        /* ExponentialDelayRestartBackoffTimeStrategy's precondition */
        size_t s2 = ck_jin_push_key(j, "restart-strategy.exponential-delay.initial-backoff");
        ck_config_format(CK_CFG_RS_EXP_INITIAL, ck_cfg(cfg, CK_CFG_RS_EXP_INITIAL), a,
                         sizeof(a));
        ck_config_format(CK_CFG_RS_EXP_MAX, ck_cfg(cfg, CK_CFG_RS_EXP_MAX), b, sizeof(b));
        ck_jin_fail(j, "%s is more than max-backoff (%s)", a, b);
        ck_jin_pop(j, s2);
    } else if (hbt < hbi) { /* HeartbeatServicesImpl: the timeout covers an interval */
        size_t s2 = ck_jin_push_key(j, "heartbeat.timeout");
        ck_config_format(CK_CFG_HB_TIMEOUT, hbt, a, sizeof(a));
        ck_config_format(CK_CFG_HB_INTERVAL, hbi, b, sizeof(b));
        ck_jin_fail(j, "%s is shorter than heartbeat.interval (%s): a task manager would be "
                       "declared lost between two of its heartbeats",
                    a, b);
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_NET_MIN) > ck_cfg(cfg, CK_CFG_NET_MAX)) {
        /* TaskExecutorFlinkMemoryUtils: the network range must not be empty */
        size_t s2 = ck_jin_push_key(j, "taskmanager.memory.network.min");
        ck_config_format(CK_CFG_NET_MIN, ck_cfg(cfg, CK_CFG_NET_MIN), a, sizeof(a));
        ck_config_format(CK_CFG_NET_MAX, ck_cfg(cfg, CK_CFG_NET_MAX), b, sizeof(b));
        ck_jin_fail(j, "%s is more than taskmanager.memory.network.max (%s)", a, b);
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_NET_MIN) > ck_cfg(cfg, CK_CFG_TM_FLINK_SIZE)) {
        /* TaskExecutorFlinkMemoryUtils: network memory is part of the
         * Flink memory (the max is unbounded by default: the min decides) */
        size_t s2 = ck_jin_push_key(j, "taskmanager.memory.network.min");
        ck_config_format(CK_CFG_NET_MIN, ck_cfg(cfg, CK_CFG_NET_MIN), a, sizeof(a));
        ck_config_format(CK_CFG_TM_FLINK_SIZE, ck_cfg(cfg, CK_CFG_TM_FLINK_SIZE), b, sizeof(b));
        ck_jin_fail(j, "%s is more than taskmanager.memory.flink.size (%s), which holds the "
                       "network memory",
                    a, b);
        ck_jin_pop(j, s2);
    } else if (ck_segpool_segments(cfg) < 1) {
        size_t s2 = ck_jin_push_key(j, "taskmanager.memory.network.max");
        ck_jin_fail(j, "the network memory holds no segment of taskmanager.memory.segment-size");
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_MIN_SEGMENT_SIZE) > seg) {
        /* BufferDebloatConfiguration: the least buffer no larger than a segment */
        size_t s2 = ck_jin_push_key(j, "taskmanager.memory.min-segment-size");
        ck_config_format(CK_CFG_MIN_SEGMENT_SIZE, ck_cfg(cfg, CK_CFG_MIN_SEGMENT_SIZE), a,
                         sizeof(a));
        ck_config_format(CK_CFG_SEGMENT_SIZE, seg, b, sizeof(b));
        ck_jin_fail(j, "%s is more than taskmanager.memory.segment-size (%s)", a, b);
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_CLOG_MATERIALIZE) >= 0 &&
               ck_cfg(cfg, CK_CFG_CLOG_MATERIALIZE) < 10 * CK_MS_) {
        /* PeriodicMaterializationManager: a negative interval turns it off;
         * 0 would divide by zero there, and chandy takes 10 ms as the least */
        size_t s2 = ck_jin_push_key(j, "state.changelog.periodic-materialize.interval");
        ck_config_format(CK_CFG_CLOG_MATERIALIZE, ck_cfg(cfg, CK_CFG_CLOG_MATERIALIZE), a,
                         sizeof(a));
        ck_jin_fail(j, "expected a negative duration (no materialization) or at least 10 ms, "
                       "got %s",
                    a);
        ck_jin_pop(j, s2);
    } else if (ck_cfg(cfg, CK_CFG_HB_RPC_FAILURES) == 0) { /* HeartbeatManagerOptions */
        size_t s2 = ck_jin_push_key(j, "heartbeat.rpc-failure-threshold");
        ck_jin_fail(j, "expected a positive number of failed RPCs, or -1 to turn it off, got 0");
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

static void parse_config(ck_jin *j, const cJSON *o, ck_config *cfg,
                         ck_scenario_warnings *warnings)
{
    if (!o)
        return;
    size_t saved = ck_jin_push_key(j, "config");
    if (!cJSON_IsObject(o)) {
        ck_jin_fail(j, "expected an object of Flink configuration keys");
        ck_jin_pop(j, saved);
        return;
    }
    const char *given[CK_CFG_COUNT] = {0}; /* the name each key was set under */
    for (const cJSON *c = o->child; c && !j->failed; c = c->next) {
        size_t s2 = ck_jin_push_key(j, c->string);
        int id = ck_config_find(c->string);
        int flink = 0, old = ck_config_deprecated(c->string, &flink) >= 0;
        if (id < 0) {
            const char *near = ck_config_suggest(c->string);
            if (near)
                ck_jin_fail(j, "unknown configuration key: did you mean `%s`? (`chandy config` "
                               "lists the supported keys)",
                            near);
            else
                ck_jin_fail(j, "unknown configuration key (`chandy config` lists the supported "
                               "keys)");
        } else if (cfg->set[id]) {
            if (strcmp(given[id], c->string))
                ck_jin_fail(j, "key given twice: %s and %s are names of %s", given[id],
                            c->string, ck_config_def((ck_cfg_id)id)->key);
            else
                ck_jin_fail(j, "key given twice");
        } else {
            given[id] = c->string;
            if (old && warnings && warnings->n < CK_SCENARIO_MAX_WARNINGS)
                snprintf(warnings->v[warnings->n++], sizeof(warnings->v[0]),
                         "%s: %s: deprecated, use %s instead%s", j->file, j->path,
                         ck_config_def((ck_cfg_id)id)->key,
                         flink ? " (Flink 1.20 takes the old name too, with a warning)"
                               : " (a name from Flink's development of 1.20 that no Flink "
                                 "release takes)");
            const ck_cfg_def *d = ck_config_def((ck_cfg_id)id);
            char text[128];
            int ok = 1;
            if (d->type == CK_CFG_PATH) {
                if (!cJSON_IsString(c) || !c->valuestring[0] ||
                    strlen(c->valuestring) >= sizeof(cfg->path)) {
                    ck_jin_fail(j, "expected a path (a non-empty string of at most %zu bytes)",
                                sizeof(cfg->path) - 1);
                } else {
                    snprintf(cfg->path, sizeof(cfg->path), "%s", c->valuestring);
                    cfg->v[id] = 1;
                    cfg->set[id] = 1;
                }
                ck_jin_pop(j, s2);
                continue;
            }
            if (cJSON_IsString(c))
                snprintf(text, sizeof(text), "%s", c->valuestring);
            else if (cJSON_IsBool(c) && d->type == CK_CFG_BOOL)
                snprintf(text, sizeof(text), "%s", cJSON_IsTrue(c) ? "true" : "false");
            else if (cJSON_IsNumber(c) && d->type == CK_CFG_DECIMAL)
                snprintf(text, sizeof(text), "%.17g", c->valuedouble);
            else if (cJSON_IsNumber(c) && d->type != CK_CFG_BOOL &&
                     c->valuedouble > -9e18 && c->valuedouble < 9e18 &&
                     c->valuedouble == (double)(int64_t)c->valuedouble)
                snprintf(text, sizeof(text), "%lld", (long long)c->valuedouble);
            else
                ok = 0;
            int64_t v;
            int rc = ok ? ck_config_parse((ck_cfg_id)id, text, &v) : CK_EINVAL;
            if (rc) {
                char lo[32], hi[32], got[96];
                ck_config_format((ck_cfg_id)id, d->min, lo, sizeof(lo));
                ck_config_format((ck_cfg_id)id, d->max, hi, sizeof(hi));
                ck_jin_describe(c, got, sizeof(got));
                static const char *const what[] = {"an integer", "true or false",
                                                   "a duration", "a memory size", "",
                                                   "a decimal number"};
                if (d->type == CK_CFG_BOOL) {
                    ck_jin_fail(j, "expected true or false, got %s", got);
                } else if (d->type == CK_CFG_ENUM) {
                    char list[200] = "";
                    size_t off = 0;
                    const char *const *ch = ck_config_choices((ck_cfg_id)id);
                    /* restart-strategy.type's "default" is the key unset, not a value. */
                    int first = id == CK_CFG_RS_TYPE ? 1 : 0;
                    for (int k = first; ch && ch[k] && off < sizeof(list); k++)
                        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s\"%s\"",
                                                k > first ? ", " : "", ch[k]);
                    ck_jin_fail(j, "expected one of %s%s, got %s", list,
                                id == CK_CFG_RS_TYPE
                                    ? " (or Flink's other names: off, disable, fixeddelay, "
                                      "failurerate, exponentialdelay)"
                                    : "",
                                got);
                }
                else
                    ck_jin_fail(j, "expected %s from %s to %s, got %s", what[d->type], lo, hi,
                                got);
            } else {
                cfg->v[id] = v;
                cfg->set[id] = 1;
            }
        }
        ck_jin_pop(j, s2);
    }
    ck_jin_pop(j, saved);
}

int ck_scenario_parse(ck_scenario *s, const char *path, const char *text, char *err,
                      size_t errlen)
{
    memset(s, 0, sizeof(*s));
    if (strlen(path) >= sizeof(s->path)) {
        snprintf(err, errlen, "%.200s...: the path is longer than %zu bytes", path,
                 sizeof(s->path) - 1);
        return CK_EINVAL;
    }
    snprintf(s->path, sizeof(s->path), "%s", path);
    ck_jin j = {.file = path};
    cJSON *root = ck_jin_parse(&j, text);
    if (!root) {
        snprintf(err, errlen, "%s", j.err);
        return CK_EINVAL;
    }
    ck_jin_object(&j, root, top_keys);
    /* Default name: the file name without directory and ".json". */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t blen = strlen(base);
    if (blen > 5 && strcmp(base + blen - 5, ".json") == 0)
        blen -= 5;
    snprintf(s->name, sizeof(s->name), "%.*s", (int)CK_MIN(blen, sizeof(s->name) - 1), base);
    int named = cJSON_GetObjectItemCaseSensitive(root, "name") != NULL;
    ck_jin_string(&j, root, "name", 0, s->name, sizeof(s->name));
    if (!j.failed && !ck_scenario_name_ok(s->name)) {
        /* It names the default output directory, out/<name>, which a run empties. */
        char got[96];
        snprintf(got, sizeof(got), "\"%.60s\"", s->name); /* ck_jin_fail escapes control characters */
        size_t s2 = ck_jin_push_key(&j, "name");
        ck_jin_fail(&j, "expected a plain file name (no '/', not \".\" or \"..\", no control "
                        "characters)%s, got %s",
                    named ? "" : " (the default comes from the file name: give one)", got);
        ck_jin_pop(&j, s2);
    }
    ck_jin_string(&j, root, "description", 0, s->description, sizeof(s->description));
    const cJSON *sweep = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    char sweep_why[400];
    if (sweep && !j.failed && ck_sweep_check(sweep, sweep_why, sizeof(sweep_why))) {
        size_t s3 = ck_jin_push_key(&j, "sweep");
        ck_jin_fail(&j, "%s", sweep_why);
        ck_jin_pop(&j, s3);
    }
    int64_t seed = 1;
    ck_jin_int(&j, root, "seed", 0, 0, INT64_C(9007199254740991), &seed);
    s->seed = (uint64_t)seed;
    cluster_defaults(&s->cluster);
    parse_cluster(&j, cJSON_GetObjectItemCaseSensitive(root, "cluster"), &s->cluster, path);
    workload_defaults(&s->workload);
    parse_workload(&j, cJSON_GetObjectItemCaseSensitive(root, "workload"), &s->workload);
    ck_config_defaults(&s->cfg);
    parse_config(&j, cJSON_GetObjectItemCaseSensitive(root, "config"), &s->cfg, &s->warnings);
    check_config(&j, &s->cfg);
    parse_job(&j, cJSON_GetObjectItemCaseSensitive(root, "job"), &s->job);
    if (!j.failed) {
        const cJSON *jo = cJSON_GetObjectItemCaseSensitive(root, "job");
        scenario_state_sizes(&j, jo ? cJSON_GetObjectItemCaseSensitive(jo, "operators") : NULL,
                             &s->job, s->workload.keys);
    }
    if (!j.failed) {
        int bad = -1;
        char why[300];
        if (ck_graph_build(&s->graph, &s->job, &s->cfg, &bad, why, sizeof(why))) {
            if (bad >= 0) {
                snprintf(j.path, sizeof(j.path), "job.operators[%d]", bad);
            } else {
                snprintf(j.path, sizeof(j.path), "job.operators");
            }
            ck_jin_fail(&j, "%s", why);
        }
    }
    if (!j.failed) {
        /* The cluster must hold the job. */
        int need = ck_graph_hosts_needed(&s->graph);
        if (s->cluster.taskmanagers && s->cluster.taskmanagers < need) {
            snprintf(j.path, sizeof(j.path), "cluster.taskmanagers");
            ck_jin_fail(&j,
                        "the job needs %d slots (its largest parallelism), and %d task "
                        "managers with taskmanager.numberOfTaskSlots = %d hold %d",
                        s->graph.nslots, s->cluster.taskmanagers, s->graph.slots_per_host,
                        s->cluster.taskmanagers * s->graph.slots_per_host);
        } else if (!s->cluster.taskmanagers && need > CK_MAX_TM) {
            /* Left out, the count follows from the job: it must fit too. */
            snprintf(j.path, sizeof(j.path), "job.operators");
            ck_jin_fail(&j,
                        "the job needs %d slots (its largest parallelism), which with "
                        "taskmanager.numberOfTaskSlots = %d takes %d task managers, more than "
                        "the %d a cluster may have: raise taskmanager.numberOfTaskSlots",
                        s->graph.nslots, s->graph.slots_per_host, need, CK_MAX_TM);
        }
    }
    if (!j.failed)
        parse_events(&j, cJSON_GetObjectItemCaseSensitive(root, "events"), s);
    cJSON *expect = cJSON_GetObjectItemCaseSensitive(root, "expect");
    if (expect && !j.failed) {
        snprintf(j.path, sizeof(j.path), "expect");
        char why[300];
        const char *at = NULL;
        if (ck_expect_check(expect, &at, why, sizeof(why))) {
            if (at)
                ck_jin_push_key(&j, at);
            ck_jin_fail(&j, "%s", why);
        }
    }
    if (j.failed) {
        snprintf(err, errlen, "%s", j.err);
        cJSON_Delete(root);
        return CK_EINVAL;
    }
    if (expect)
        s->expect = cJSON_DetachItemFromObjectCaseSensitive(root, "expect");
    cJSON_Delete(root);
    return CK_OK;
}

int ck_scenario_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > CK_SCENARIO_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c < 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

int ck_scenario_load(ck_scenario *s, const char *path, char *err, size_t errlen)
{
    if (!path[0]) {
        snprintf(err, errlen, "the scenario path is empty: expected a scenario file");
        return CK_EINVAL;
    }
    if (strlen(path) >= sizeof(s->path)) {
        snprintf(err, errlen, "%.200s...: the path is longer than %zu bytes", path,
                 sizeof(s->path) - 1);
        return CK_EINVAL;
    }
    int rc;
    char *text = ck_jin_read(path, 16u << 20, "a scenario", &rc, err, errlen);
    if (!text)
        return rc;
    rc = ck_scenario_parse(s, path, text, err, errlen);
    free(text);
    return rc;
}

void ck_scenario_print_warnings(const ck_scenario *s, FILE *f)
{
    for (int i = 0; i < s->warnings.n; i++)
        fprintf(f, "chandy: warning: %s\n", s->warnings.v[i]);
}

void ck_scenario_free(ck_scenario *s)
{
    cJSON_Delete(s->expect);
    s->expect = NULL;
}

int ck_scenario_generations(ck_scenario *s, ck_graph **gens, int *ngens, char *err,
                            size_t errlen)
{
    int n = 1;
    for (int i = 0; i < s->nfaults; i++)
        if (s->faults[i].kind == CK_FAULT_RESCALE && s->faults[i].rescale + 2 > n)
            n = s->faults[i].rescale + 2;
    ck_graph *g = calloc((size_t)n, sizeof(*g));
    ck_job_spec *spec = malloc(sizeof(*spec));
    if (!g || !spec) {
        free(g), free(spec);
        snprintf(err, errlen, "out of memory");
        return CK_ENOMEM;
    }
    for (int k = 0; k < n; k++)
        g[k] = s->graph; /* a rescale the timeline does not have: the job's own */
    for (int i = 0; i < s->nfaults; i++) {
        const ck_fault *f = &s->faults[i];
        if (f->kind != CK_FAULT_RESCALE)
            continue;
        *spec = s->graph.spec;
        for (int k = 0; k < spec->nops; k++)
            spec->ops[k].parallelism = f->par[k];
        int bad = -1;
        char why[300];
        if (ck_graph_build(&g[f->rescale + 1], spec, &s->cfg, &bad, why, sizeof(why))) {
            snprintf(err, errlen, "%s: events[%d].parallelism: the job at this parallelism "
                                  "does not build: %s",
                     s->path, i, why);
            free(g), free(spec);
            return CK_EINVAL;
        }
    }
    free(spec);
    if (ck_graph_share_stride(g, n)) {
        snprintf(err, errlen, "%s: a rescale changes the job's vertices", s->path);
        free(g);
        return CK_EINVAL;
    }
    s->graph.ep_stride = g[0].ep_stride;
    *gens = g;
    *ngens = n;
    return CK_OK;
}

int ck_scenario_taskmanagers(const ck_scenario *s)
{
    return s->cluster.taskmanagers ? s->cluster.taskmanagers : ck_graph_hosts_needed(&s->graph);
}
