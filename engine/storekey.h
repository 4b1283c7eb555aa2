/*
 * storekey.h - the durable store's keys: every format, and its parser.
 *
 * The one place that knows how a key of the store is spelled. Every
 * module that names a file of a checkpoint or savepoint builds its key
 * here, and every module that reads a key back for its fields (which
 * subtask, which attempt, which checkpoint) parses it here. The store's
 * tree, as Flink's file-system checkpoint storage lays it out:
 *
 *   checkpoints/<job>/chk-<id>/                 a checkpoint's exclusive directory
 *       _metadata                               the checkpoint's metadata
 *       v<vertex>-<subtask>.state               a subtask's canonical state file
 *       v<vertex>-<subtask>-op<op>-<name>       a private native file (RocksDB's
 *                                               MANIFEST, CURRENT, OPTIONS...)
 *   checkpoints/<job>/shared/                   files later checkpoints share
 *       op<op>-<subtask>-a<attempt>-c<id>-<name>        an immutable native file
 *                                                       (an SST) of checkpoint id
 *       v<vertex>-<subtask>-a<attempt>-c<id>-m<n>       merged object n of
 *                                                       checkpoint id (file merging)
 *       v<vertex>-<subtask>-a<attempt>-c<id>-m<n>.seg   the same, that later
 *                                                       checkpoints append to
 *                                                       (CK_STORE_APPENDABLE)
 *       op<op>-<subtask>-a<attempt>-log<seq>            a changelog segment
 *                                                       starting at sequence seq
 *       op<op>-<subtask>-a<attempt>-mat<seq>            materialization seq's
 *       op<op>-<subtask>-a<attempt>-mat<seq>-<name>     canonical file, or its
 *                                                       native file name
 *   savepoints/savepoint-<job6>-<id>/           a savepoint's directory (job6: the
 *                                               job id's first six characters);
 *                                               the same files as chk-<id>/
 *
 * <vertex>, <subtask> and <op> are indexes (0..INT32_MAX), <attempt> a
 * 32-bit count, <id>, <seq> and <n> decimal numbers; every number is
 * written without sign or leading zero. <job> is 1..CK_SK_JOB_MAX
 * characters without '/', <name> 1..CK_SK_NAME_MAX characters without
 * '/'. Every key fits CK_HANDLE_KEY_MAX bytes for the largest numbers.
 *
 * Builders take the directory the key goes in (as ck_sk_dir or
 * ck_sk_shared_dir build it, ending in '/'), write the key into buf and
 * return 0, or CK_EINVAL when a field is out of range or the key does not
 * fit len bytes (buf then holds ""). Parsers accept exactly what the
 * builders write: a number with a sign, a leading zero, trailing bytes or
 * more than its width, an empty or too long field is refused with
 * CK_EINVAL, leaving the result undefined.
 */
#ifndef CK_STOREKEY_H
#define CK_STOREKEY_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define CK_SK_JOB_MAX 39  /* a job id (ck_cc.job_id) */
#define CK_SK_NAME_MAX 63 /* a native file's name (ck_native_file.name) */
#define CK_SK_METADATA "_metadata"

typedef enum ck_sk_kind {
    CK_SK_METADATA_FILE, /* <dir>_metadata */
    CK_SK_STATE,         /* <dir>v<vertex>-<subtask>.state */
    CK_SK_PRIVATE,       /* <dir>v<vertex>-<subtask>-op<op>-<name> */
    CK_SK_SHARED_NATIVE, /* <shared>op<op>-<subtask>-a<attempt>-c<id>-<name> */
    CK_SK_MERGED,        /* <shared>v<vertex>-<subtask>-a<attempt>-c<id>-m<n>[.seg] */
    CK_SK_CLOG_SEGMENT,  /* <shared>op<op>-<subtask>-a<attempt>-log<seq> */
    CK_SK_CLOG_MAT,      /* <shared>op<op>-<subtask>-a<attempt>-mat<seq>[-<name>] */
} ck_sk_kind;

/* A key's fields; those its kind does not have are 0 (name: ""). */
typedef struct ck_sk_key {
    ck_sk_kind kind;
    int savepoint;                /* under savepoints/ (else checkpoints/<job>/) */
    char job[CK_SK_JOB_MAX + 1];  /* the job id (of a savepoint: as its name has it) */
    uint64_t id;                  /* the checkpoint: chk-<id>, savepoint-..-<id>, c<id> */
    int32_t vertex, subtask, op;
    uint32_t attempt;
    uint32_t n;                   /* merged: object m<n> */
    int appendable;               /* merged: ends in CK_STORE_APPENDABLE */
    uint64_t seq;                 /* changelog: log<seq>, mat<seq> */
    char name[CK_SK_NAME_MAX + 1];
} ck_sk_key;

/* Directories. The directory of checkpoint (or, with savepoint, savepoint)
 * id of job; the job's shared/ directory; the job's checkpoints/<job>/. */
CK_MUST_CHECK int ck_sk_dir(char *buf, size_t len, const char *job, uint64_t id, int savepoint);
CK_MUST_CHECK int ck_sk_shared_dir(char *buf, size_t len, const char *job);
CK_MUST_CHECK int ck_sk_job_dir(char *buf, size_t len, const char *job);

/* Files in a checkpoint's or savepoint's directory dir. */
CK_MUST_CHECK int ck_sk_metadata(char *buf, size_t len, const char *dir);
CK_MUST_CHECK int ck_sk_state(char *buf, size_t len, const char *dir, int vertex, int subtask);
CK_MUST_CHECK int ck_sk_private(char *buf, size_t len, const char *dir, int vertex, int subtask,
                                int op, const char *name);

/* Files in the job's shared/ directory shared. */
CK_MUST_CHECK int ck_sk_shared_native(char *buf, size_t len, const char *shared, int op,
                                      int subtask, uint32_t attempt, uint64_t id,
                                      const char *name);
CK_MUST_CHECK int ck_sk_merged(char *buf, size_t len, const char *shared, int vertex, int subtask,
                               uint32_t attempt, uint64_t id, uint32_t n, int appendable);
CK_MUST_CHECK int ck_sk_clog_segment(char *buf, size_t len, const char *shared, int op,
                                     int subtask, uint32_t attempt, uint64_t seq);
/* name NULL: the materialization's canonical file. */
CK_MUST_CHECK int ck_sk_clog_mat(char *buf, size_t len, const char *shared, int op, int subtask,
                                 uint32_t attempt, uint64_t seq, const char *name);

/* The key of k's fields (its kind's format, in the directory its job, id
 * and savepoint name): what the parser below read it from. */
CK_MUST_CHECK int ck_sk_format(char *buf, size_t len, const ck_sk_key *k);

/* Parses store key key (of any kind above) into *k. Returns 0 or
 * CK_EINVAL. */
CK_MUST_CHECK int ck_sk_parse(const char *key, ck_sk_key *k);

/* Parses a directory's name, a path segment without slashes: "chk-<id>"
 * (savepoint 0) or "savepoint-<job>-<id>" (savepoint 1). Returns 0 with
 * *id and *savepoint set, or CK_EINVAL. */
CK_MUST_CHECK int ck_sk_parse_dir_name(const char *name, uint64_t *id, int *savepoint);

/* Of the key of a file in a checkpoint's or savepoint's directory: that
 * directory (into dir, with its '/'), and the job's shared/ directory its
 * incremental files are in (into shared; "" for a savepoint, which has
 * none; shared NULL: not wanted). Returns 0, or CK_EINVAL when key is not
 * such a file's. */
CK_MUST_CHECK int ck_sk_dirs_of(const char *key, char *dir, size_t dirlen, char *shared,
                                size_t sharedlen);

#endif
