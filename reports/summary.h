/*
 * summary.h - the short summary printed after a run, read from its
 * run.json (the same tree the run wrote): a terminal's view of the figures
 * a report plots.
 */
#ifndef CK_SUMMARY_H
#define CK_SUMMARY_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* Prints the summary of the run whose run.json tree is run, written to
 * runjson_path. */
void ck_summary_print(FILE *f, const cJSON *run, const char *runjson_path);

#endif
