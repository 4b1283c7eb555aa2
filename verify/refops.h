/*
 * refops.h - the reference computation's own operator functions: maps,
 * the filter's keep test (with Java's String.hashCode of the key and a
 * 64-bit mix), count and sum, and Flink's tumbling window start.
 *
 * They duplicate on purpose what engine/udf.c, engine/keygroup.c and
 * engine/rng.h compute. The reference must not call the engine: a bug in a
 * shared function would change the engine's output and the expected output
 * alike, and the check would pass (a count that added 2 did). So these are
 * written again from the definitions, in the plainest form rather than the
 * fastest, and tests/test_refops.c checks them against values worked out
 * by hand (Java's hash codes among them), not against the engine.
 */
#ifndef CK_REFOPS_H
#define CK_REFOPS_H

#include <stddef.h>
#include <stdint.h>

#include "udf.h" /* the enums that name the functions in a job spec, nothing else */

/* The value after map function fn (drop_payload and identity leave the
 * value alone; scale multiplies, wrapping around as Java's long does). */
int64_t ck_ref_map(ck_map_fn fn, int64_t arg, int64_t value);

/*
 * Java's String.hashCode of the string Java builds from the UTF-8 bytes
 * key[0..len) (new String(bytes, UTF_8): malformed input becomes U+FFFD),
 * computed over its UTF-16 code units.
 */
int32_t ck_ref_java_hash(const char *key, size_t len);

/* The splitmix64 finalizer. */
uint64_t ck_ref_mix64(uint64_t x);

/* True when a filter keeping keep_ppm parts per million keeps the record
 * (key, ts, value). */
int ck_ref_filter_keeps(uint32_t keep_ppm, const char *key, size_t klen, int64_t ts,
                        int64_t value);

/* What one record with this value adds to a count or a sum. */
int64_t ck_ref_agg_add(ck_agg_fn fn, int64_t value);

/* The lower median of v[0..n) (n >= 1): the ((n + 1) / 2)-th smallest. */
int64_t ck_ref_lower_median(const int64_t *v, uint32_t n);

/* Start of the tumbling window of size ms (> 0) that holds time ts, as
 * Flink's TimeWindow.getWindowStartWithOffset with offset 0: the largest
 * multiple of size that is <= ts (also for negative ts). */
int64_t ck_ref_window_start(int64_t ts, int64_t size);

#endif
