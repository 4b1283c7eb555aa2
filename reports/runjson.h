/*
 * runjson.h - run.json, the record of one run, and the short summary
 * printed after it.
 *
 * run.json is deterministic for a SimGrid run: the same scenario and seed
 * give the same file apart from the wall-clock fields (wall_time_s,
 * sim_speed), which every consumer must ignore when comparing runs. Field
 * names are documented in docs/RUN-JSON.md.
 */
#ifndef CK_RUNJSON_H
#define CK_RUNJSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "run.h"
#include "verify.h"

/* Builds the run.json tree of a finished run. NULL when out of memory. */
cJSON *ck_report_runjson(const ck_run *r, const ck_verdict *v);

/* Writes a tree to path (pretty-printed), through path.part renamed into
 * place. Returns 0, CK_ENOMEM or CK_EIO (errno says why). */
int ck_report_write(const cJSON *root, const char *path);

/* Prints the human summary of a run. */
void ck_report_summary(FILE *f, const ck_run *r, const ck_verdict *v, const char *runjson_path);

#endif
