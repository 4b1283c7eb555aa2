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

/* The operators whose parallelism differs between before and after (a
 * rescale's parallelism_before and parallelism_after: operator names to
 * numbers), in after's order, as "double 2->4, some 2->4": at most max of
 * them, then ", N more". Writes buf (truncated to len); returns how many
 * operators changed. */
int ck_summary_rescaled(const cJSON *before, const cJSON *after, int max, char *buf, size_t len);

#endif
