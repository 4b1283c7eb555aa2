/*
 * metrics.h - what a run measures: counters, latency histograms and
 * per-second time series, kept per subtask and merged by the job manager.
 *
 * The histogram is log-linear (32 sub-buckets per power of two, about 3 %
 * relative error) over nanoseconds and mergeable by addition, so per-subtask
 * histograms add up to exact job-wide percentiles at that precision.
 *
 * Subtasks ship their metrics to the job manager in TASK_FINISHED; the
 * encoding is checked on decode like any other wire input.
 */
#ifndef CK_METRICS_H
#define CK_METRICS_H

#include "common.h"

#define CK_HIST_SUB 32
#define CK_HIST_MAX_EXP 45 /* values are clamped below 2^46 ns (~19 h) */
#define CK_HIST_BUCKETS ((CK_HIST_MAX_EXP - 4 + 1) * CK_HIST_SUB)

typedef struct ck_hist {
    uint64_t n;
    int64_t max;
    uint32_t c[CK_HIST_BUCKETS];
} ck_hist;

void ck_hist_add(ck_hist *h, int64_t v);
void ck_hist_add_n(ck_hist *h, int64_t v, uint32_t n);
/* Adds the latencies t - ingest[i] of n records. */
void ck_hist_add_lat(ck_hist *h, int64_t t, const int64_t *ingest, size_t n);
void ck_hist_merge(ck_hist *dst, const ck_hist *src);
/* Value at quantile q in [0, 1] (midpoint of its bucket); 0 when empty. */
int64_t ck_hist_quantile(const ck_hist *h, double q);

/* One second of a time series. */
typedef struct ck_sec {
    uint64_t in;   /* records read by sources */
    uint64_t out;  /* records written by sinks */
    ck_hist *lat;  /* end-to-end latency at sinks, or NULL */
    /* Flink's busy / backpressured / idle time spent in this second (ns,
     * added up over the subtasks merged here) */
    int64_t busy_ns, bp_ns, idle_ns;
    /* gauges of one subtask, the most sampled in this second: payload bytes
     * in flight in its input gate and its output queues, and its input
     * buffer size (0: not debloating). Merged by maximum. */
    int64_t inflight_in, inflight_out, buf_size;
} ck_sec;

/* How a subtask spends its time (ck_metrics_time). */
enum { CK_TIME_BUSY = 0, CK_TIME_BACKPRESSURED = 1, CK_TIME_IDLE = 2 };

typedef struct ck_task_stats {
    uint32_t vertex, subtask, host;
    uint64_t records_in, records_out; /* into and out of the subtask */
    uint64_t bytes_in, bytes_out;     /* network payload bytes */
    uint64_t buffers_in, buffers_out;
    uint64_t late_dropped;            /* records behind the watermark */
    int64_t busy_ns, backpressured_ns, idle_ns;
    int64_t start_ns, end_ns;
    /* gauges, as of the report */
    int64_t lag_records;  /* source: records in its partitions not read yet */
    int64_t lag_ns;       /* source: age of the oldest of them */
    int64_t first_out_ns; /* when this attempt's sink output first became visible, or -1 */
} ck_task_stats;

typedef struct ck_metrics {
    ck_task_stats task;
    uint32_t nsec;    /* seconds recorded: sec[0..nsec) */
    uint32_t seccap;  /* seconds sec has room for (grown by doubling) */
    ck_sec *sec;
} ck_metrics;

void ck_metrics_init(ck_metrics *m);
void ck_metrics_free(ck_metrics *m);

/* Counts n records read by a source at time t. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_metrics_in(ck_metrics *m, ck_time t, uint64_t n);

/* Counts one record written by a sink at time t with latency lat_ns. */
CK_MUST_CHECK
int ck_metrics_out(ck_metrics *m, ck_time t, int64_t lat_ns);

/* Counts n records written at time t, which entered the log at ingest[0..n). */
CK_MUST_CHECK
int ck_metrics_out_batch(ck_metrics *m, ck_time t, const int64_t *ingest, size_t n);
/* The same for records counted by ingest time: cnt[i] records entered the
 * source log in bucket base + i, of 2^shift ns each (taken at its middle). */
CK_MUST_CHECK
int ck_metrics_out_buckets(ck_metrics *m, ck_time t, int64_t base, const uint32_t *cnt,
                           size_t nb, int shift);

/* Accounts the span [from, to) as `mode` (CK_TIME_*), split into the
 * seconds it covers. Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_metrics_time(ck_metrics *m, ck_time from, ck_time to, int mode);

/* Samples a subtask's gauges at time t (kept: the most of the second). */
CK_MUST_CHECK
int ck_metrics_gauges(ck_metrics *m, ck_time t, int64_t inflight_in, int64_t inflight_out,
                      int64_t buf_size);

/* Adds src's gauges to dst's series, second by second, by maximum (one
 * subtask's reports into its own series). */
CK_MUST_CHECK
int ck_metrics_merge_gauges(ck_metrics *dst, const ck_metrics *src);

/* The whole run's latency: the sum of the per-second histograms. */
CK_MUST_CHECK
int ck_metrics_total_latency(const ck_metrics *m, ck_hist *out);

/* Adds src's series and histograms to dst (task stats are not merged). */
CK_MUST_CHECK
int ck_metrics_merge(ck_metrics *dst, const ck_metrics *src);

/* The same without the latency histograms: counts and times only. */
CK_MUST_CHECK
int ck_metrics_merge_counts(ck_metrics *dst, const ck_metrics *src);

/* Encodes m into a malloc'd block (*out, *len). Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_metrics_encode(const ck_metrics *m, uint8_t **out, size_t *len);

/* Latency histograms one encoded block may hold. A task reports at least
 * every CK_METRICS_INTERVAL, so its block spans a second or two; a
 * histogram decodes to 5 KiB from a dozen bytes, and a block of a peer
 * with millions of them would take gigabytes. */
#define CK_METRICS_MAX_HISTS 1024

/* The latest second an encoded block may name: 11 days, beyond any run's
 * time limit (a corrupt block cannot make the job manager allocate more). */
#define CK_METRICS_MAX_SECOND 1000000

/* Decodes an encoded block into m (initialized here). 0, or CK_ECORRUPT
 * (malformed, a second past CK_METRICS_MAX_SECOND, or more than
 * CK_METRICS_MAX_HISTS histograms), CK_ENOMEM. */
CK_MUST_CHECK
int ck_metrics_decode(ck_metrics *m, const uint8_t *p, size_t len);

#endif
