/*
 * expect.h - a scenario's assertions on its own run.json.
 *
 *   "expect": {
 *     "correctness.ok": true,                  equality
 *     "records_out": {">=": 1000},             comparisons: == != < <= > >=
 *     "timeseries[-1].latency_p99_ms": {"<": 50}
 *   }
 *
 * A path is dotted keys with [i] indices (negative from the end), and
 * ["key"] for a key with dots in it (config["execution.buffer-timeout"]).
 * Its form is checked with the scenario, before the run; a value absent
 * from run.json fails its assertion. A run whose assertions fail exits
 * with status 1.
 */
#ifndef CK_EXPECT_H
#define CK_EXPECT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/*
 * Checks the form of an expect object, each path's syntax included. On
 * error returns CK_EINVAL, points *at to the offending key (or NULL) and
 * explains in why.
 */
int ck_expect_check(const cJSON *expect, const char **at, char *why, size_t len);

/*
 * Evaluates every assertion (checked by ck_expect_check) against run.
 * Writes one line per failed assertion into report: a value that differs,
 * or a path that names nothing in run.json (saying which part is absent).
 * Returns the number of failed comparisons.
 */
int ck_expect_eval(const cJSON *expect, const cJSON *run, char *report, size_t len);

/* Looks a dotted path up in a JSON tree; NULL when absent or malformed. */
const cJSON *ck_expect_lookup(const cJSON *root, const char *path);

#endif
