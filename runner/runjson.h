/*
 * runjson.h - run.json, the record of one run: the contract between a
 * run and everything that reads it (reports/, swarms, sweeps).
 *
 * run.json is deterministic for a SimGrid run: the same scenario and seed
 * give the same file apart from the wall-clock fields (wall_time_s,
 * sim_speed), which every consumer must ignore when comparing runs. Field
 * names are documented in docs/RUN-JSON.md.
 */
#ifndef CK_RUNJSON_H
#define CK_RUNJSON_H

#include <cjson/cJSON.h>

#include "run.h"
#include "verify.h"

/* Builds the run.json tree of a finished run. NULL when out of memory. */
cJSON *ck_runjson_build(const ck_run *r, const ck_verdict *v);

/* Writes a tree to path (pretty-printed), through path.part renamed into
 * place. Returns 0, CK_ENOMEM or CK_EIO (errno says why). */
int ck_runjson_write(const cJSON *root, const char *path);

#endif
