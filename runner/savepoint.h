/*
 * savepoint.h - a savepoint (or retained checkpoint) on disk, for a run to
 * start from and for `chandy savepoint` to inspect.
 *
 * A savepoint directory holds its _metadata and the files its state
 * handles name (handle.h), in the store's layout (savepoints/savepoint-
 * <job>-<id>/v<vertex>-<subtask>.state); a savepoint's are in chandy's
 * canonical snapshot format (snapshot.h), whatever the state backend. A
 * retained checkpoint's are too, except those of an incremental or a
 * changelog checkpoint: RocksDB's files, changelog segments and
 * materializations, under the job's shared/ directory beside the
 * checkpoint's (checkpoints/<job>/shared/), read from there; a run that
 * starts from one refers to them as a restart after a failure does.
 * Opening one reads and checks everything: the metadata's checksum, that
 * every file it lists is there, has the size the metadata says and its
 * checksum matches. Errors name the file and what is wrong with it.
 */
#ifndef CK_SAVEPOINT_H
#define CK_SAVEPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "coordinator.h"
#include "graph.h"
#include "sinkfs.h"
#include "topic.h"

typedef struct ck_sp_file {
    uint8_t *data;       /* the file as read (NULL: another's, holder) */
    size_t len;
    uint32_t holder;     /* the file whose data holds this handle's bytes: itself,
                          * or the first segment of the same merged file */
    uint32_t subtask;    /* the global subtask whose handle it is */
    const ck_handle *h;  /* in meta.tasks[subtask] */
} ck_sp_file;

typedef struct ck_savepoint {
    char path[600];      /* the directory */
    ck_cp_meta meta;
    uint8_t *metadata;   /* the _metadata file's bytes */
    size_t metadata_len;
    ck_sp_file *files;   /* per handle, subtask by subtask */
    uint32_t nfiles;
    char dir[160];       /* its directory in a store, with a trailing slash */
    char shared[170];    /* the job's shared/ beside it in the store */
} ck_savepoint;

/* Opens the savepoint at path: its directory or its _metadata file; or a
 * run directory (a run.json there): the last savepoint its run.json lists
 * as completed, in the run directory's store/savepoints/; or a directory
 * of savepoints (savepoint-<job>-<id>/ with a _metadata): the highest id,
 * refused when two jobs' savepoints share it. sp->path is the savepoint's
 * directory found. Reads regular files only: the _metadata (at most
 * 256 MiB), then each state file, of exactly the size the _metadata
 * declares, or of a merged file the part up to the end of the last
 * segment it lists (never more, whatever the file's length); a device or
 * a FIFO is refused without being read. Returns 0, or CK_EINVAL (an empty
 * or too long path), CK_EIO (with the system's reason), CK_ECORRUPT,
 * CK_ENOMEM, with one line in err naming the file. */
int ck_sp_open(ck_savepoint *sp, const char *path, char *err, size_t errlen);

/* Checks up front that the savepoint restores into this job, with the
 * state assignment the job manager makes when it deploys (assign.h:
 * ck_asg_plan, then ck_asg_applicable): its operators matched by uid,
 * of the same kinds, max parallelisms adopted or refused; then that each
 * state file is of the subtask the _metadata lists it for, keyed state
 * in that subtask's key groups, source offsets of partitions of the
 * input, each in one subtask's file (the enumerator dealt them: after a
 * rescale not by the owner formula), within it, sink transactions only
 * where the sinks write in transactions; then the whole plan, sources'
 * partitions dealt, against its invariants. On success g takes the max
 * parallelisms adopted from the snapshot (ck_asg_adopt). Returns 0,
 * CK_EINVAL (another job, or
 * what the subtasks cannot restore yet), CK_ECORRUPT (a state file does
 * not decode), CK_ENOMEM, with one line in err naming the file or the
 * operator and what differs. */
int ck_sp_check_job(ck_savepoint *sp, ck_graph *g, const ck_config *cfg,
                    const ck_topic *topic, char *err, size_t errlen);

/* 1 when the savepoint is a checkpoint, the latest in its directory of
 * checkpoints (none with a higher id has a _metadata there): the one a
 * failed job leaves, whose run committed no output after it. */
int ck_sp_is_latest_checkpoint(const ck_savepoint *sp);

/* Carries the transactions its sinks had pre-committed from the sink
 * directory of the run that took it (from) into this run's (to, created
 * if missing): the external system they live in, as Kafka keeps a
 * transaction across a job's restart, for the restored sinks to commit.
 * *epoch: where this run's transactions must start (ck_job_env.txn_epoch),
 * above every one the checkpoint names. 0, or CK_EIO / CK_ECORRUPT /
 * CK_ENOMEM with one line in err. */
int ck_sp_carry_sinks(const ck_savepoint *sp, const char *from, const char *to, uint32_t *epoch,
                      char *err, size_t errlen);

/* Where the savepoint cut its sinks' transactions (io/sinkfs.h), one entry
 * per sink subtask in it: the transaction each had open, which began at
 * the cut (malloc'd; free it). 0, or CK_ECORRUPT / CK_ENOMEM with one line
 * in err. */
int ck_sp_sink_cut(const ck_savepoint *sp, ck_sinkfs_cut **cut, size_t *n, char *err,
                   size_t errlen);

/* Writes it into the store rooted at store_root, under its own keys. */
int ck_sp_install(const ck_savepoint *sp, const char *store_root, char *err, size_t errlen);

void ck_sp_free(ck_savepoint *sp);

/* The run directory that took the savepoint (path ends with
 * <run>/store/<dir>), or 0 when the path does not have that shape. */
int ck_sp_run_dir(const ck_savepoint *sp, char *buf, size_t len);

#endif
