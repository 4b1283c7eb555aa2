/*
 * udf.h - the per-record functions that map and filter operators apply.
 *
 * They are pure functions of the record. The reference computation in
 * verify/ does not call them: it has its own (verify/refops.h), so that a
 * bug here shows up as wrong output instead of changing the expected
 * output too. A change to what one of them computes must be made there too.
 */
#ifndef CK_UDF_H
#define CK_UDF_H

#include "element.h"

typedef enum ck_map_fn {
    CK_MAP_IDENTITY,     /* the record unchanged */
    CK_MAP_DROP_PAYLOAD, /* projection: keep key, time and value */
    CK_MAP_SCALE,        /* value * arg */
} ck_map_fn;

typedef enum ck_agg_fn {
    CK_AGG_COUNT,
    CK_AGG_SUM,
    CK_AGG_MEDIAN, /* windows only: the lower median of the window's values, which
                    * needs every value (a ProcessWindowFunction over list state) */
} ck_agg_fn;

/* Applies a map function to r in place. */
void ck_udf_map(ck_map_fn fn, int64_t arg, ck_rec *r);

/*
 * True when the filter keeps r: a deterministic hash of the record's key,
 * time and value, compared against keep_ppm parts per million.
 */
int ck_udf_filter(uint32_t keep_ppm, const ck_rec *r);

/* The aggregate's contribution of one record. */
static inline int64_t ck_udf_agg_add(ck_agg_fn fn, const ck_rec *r)
{
    return fn == CK_AGG_COUNT ? 1 : r->value;
}

/* Start of the tumbling window of size `size` (ms) holding ts (Flink's
 * rule); INT64_MIN when that start lies below the int64 range. */
static inline int64_t ck_udf_window_start(int64_t ts, int64_t size)
{
    int64_t rem = ts % size;
    if (rem >= 0)
        return ts - rem;
    return ts - rem < INT64_MIN + size ? INT64_MIN : ts - rem - size;
}

/* The lower median of v[0..n) (n >= 1); reorders v. */
int64_t ck_udf_median(int64_t *v, size_t n);

const char *ck_map_fn_name(ck_map_fn fn);
const char *ck_agg_fn_name(ck_agg_fn fn);

#endif
