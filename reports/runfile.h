/*
 * runfile.h - reading run.json files, the only input of reports/.
 *
 * reports/ knows a run only by its run.json (docs/RUN-JSON.md): it
 * includes nothing from runner/ or engine/. A run file is loaded whole,
 * checked for the few fields every reader relies on, and then read
 * through the accessors below, which treat a missing or mistyped field as
 * absent (a default, or NULL) rather than failing: a run.json from a run
 * that stopped early lacks some, and a report must still show the rest.
 */
#ifndef CK_RUNFILE_H
#define CK_RUNFILE_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct ck_runfile {
    char path[512];  /* the run.json read */
    char dir[512];   /* its run directory */
    cJSON *root;
} ck_runfile;

/*
 * Loads path, which is a run.json or a run directory holding one.
 * Returns 0, or -1 with a one-line reason naming the file in err (missing,
 * unreadable, not JSON, not a run.json: no "scenario", "backend", "seed").
 */
int ck_runfile_load(ck_runfile *rf, const char *path, char *err, size_t errlen);
void ck_runfile_free(ck_runfile *rf);

/* The field k of o; NULL when absent. A dotted path is followed through
 * objects, a number in it indexes an array ("recoveries.0.detected_s").
 * Configuration keys hold dots themselves: look them up in "config" with
 * cJSON_GetObjectItemCaseSensitive. */
const cJSON *ck_rf_get(const cJSON *o, const char *k);

/* A number, string, boolean or array field; def / NULL / 0 when absent or
 * of another type (null included). */
double ck_rf_num(const cJSON *o, const char *k, double def);
const char *ck_rf_str(const cJSON *o, const char *k);
int ck_rf_bool(const cJSON *o, const char *k);
const cJSON *ck_rf_arr(const cJSON *o, const char *k);

/* 1 when the field is present and a number. */
int ck_rf_has_num(const cJSON *o, const char *k);

#endif
