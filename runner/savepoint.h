/*
 * savepoint.h - a savepoint (or retained checkpoint) on disk, for a run to
 * start from and for `chandy savepoint` to inspect.
 *
 * A savepoint directory holds its _metadata and one state file per
 * subtask, named as in the store (savepoints/savepoint-<job>-<id>/v<vertex>-
 * <subtask>.state); the format is chandy's canonical snapshot format
 * (snapshot.h), whatever the state backend. Opening one reads and checks
 * everything: the metadata's checksum, that every state file is there,
 * has the size the metadata says and its own checksum matches. Errors
 * name the file and what is wrong with it.
 */
#ifndef CK_SAVEPOINT_H
#define CK_SAVEPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "coordinator.h"

typedef struct ck_sp_file {
    uint8_t *data;
    size_t len;
} ck_sp_file;

typedef struct ck_savepoint {
    char path[600];      /* the directory */
    ck_cp_meta meta;
    uint8_t *metadata;   /* the _metadata file's bytes */
    size_t metadata_len;
    ck_sp_file *files;   /* per subtask, as meta.tasks */
    char dir[160];       /* its directory in a store, with a trailing slash */
} ck_savepoint;

/* Opens the savepoint at path (its directory, or its _metadata file).
 * Returns 0, or CK_EIO / CK_ECORRUPT / CK_ENOMEM with one line in err. */
int ck_sp_open(ck_savepoint *sp, const char *path, char *err, size_t errlen);

/* Writes it into the store rooted at store_root, under its own keys. */
int ck_sp_install(const ck_savepoint *sp, const char *store_root, char *err, size_t errlen);

void ck_sp_free(ck_savepoint *sp);

/* The run directory that took the savepoint (path ends with
 * <run>/store/<dir>), or 0 when the path does not have that shape. */
int ck_sp_run_dir(const ck_savepoint *sp, char *buf, size_t len);

#endif
