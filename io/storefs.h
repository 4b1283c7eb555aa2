/*
 * storefs.h - the durable object store kept in a directory: one file per
 * key, keys being relative paths ("job/chk-3/_metadata").
 *
 * A put writes a temporary file next to the target and renames it into
 * place, so a reader never sees a half-written object (a large one
 * overwrites the file of one deleted before, as a log recycles segments); with `durable` it
 * also fsyncs the file before the rename and its directory after it (the
 * socket backend; the simulation charges time instead). A delete removes
 * the directories it leaves empty, and processes put and delete at once:
 * a put makes again a directory that went before its temporary file was
 * there (which then keeps it).
 *
 * An append (an item's `at` above 0) writes its bytes into an object
 * that exists, at offset `at`, in place: no temporary file, no rename, and
 * with `durable` an fdatasync alone, which commits nothing to the file
 * system's journal beyond the file's new size (a checkpoint's files
 * appended to a file the subtask keeps across checkpoints, Flink's file
 * merging across checkpoint boundaries). It never creates the object: an
 * object deleted meanwhile stays deleted (CK_ENOTFOUND). An appendable
 * object's key ends in CK_STORE_APPENDABLE (platform.h), and its file is never set
 * aside for recycling when deleted: a late append holding it open would
 * write into another object's bytes.
 */
#ifndef CK_STOREFS_H
#define CK_STOREFS_H

#include <stddef.h>
#include <stdint.h>

#include "platform.h"

#define CK_STORE_KEY_MAX 256

/* True for a relative path without "." or ".." parts, empty parts or NULs. */
int ck_storefs_key_ok(const char *key);

/* mkdir -p. Returns 0 or CK_EIO (errno says why). */
int ck_storefs_mkdirs(const char *dir);

/* Deletes path and, if a directory, all below it (symbolic links are
 * deleted, not followed). 0 when it is gone (or never was), or CK_EIO. */
int ck_storefs_rmtree(const char *path);

/* Deletes the files process pid's puts were writing when it died (a put
 * writes "<key>.<pid>.part" before renaming it into place): they will
 * never be renamed. Returns how many. No list ever shows such a file. */
int ck_storefs_drop_parts(const char *root, long pid);

/* Writes p[0..m) to fd, whatever the short writes; 0, or -1 (errno set;
 * a write of nothing: ENOSPC). The store's and the sinks' files. */
int ck_storefs_write_full(int fd, const uint8_t *p, size_t m);

/* Returns 0, CK_EINVAL (bad key), CK_EIO (errno says why). */
int ck_storefs_put(const char *root, const char *key, const uint8_t *data, size_t len,
                   int durable);

/* Direct I/O: a put of CK_STOREFS_DIRECT_MIN bytes or more given a
 * scratch buffer (aligned to CK_STOREFS_ALIGN, a multiple of it long,
 * the caller's and kept between puts) is copied through it into the file
 * with O_DIRECT, past the page cache, where the file system has direct
 * I/O (else as any other put). On a virtual machine whose freed memory
 * goes back to its host, a buffered write of a new file copies into page
 * frames the host must fault in again, one by one (bench_state's puts of
 * 48 MB into new files: 889-893 MB/s so against 1338-1346 through a kept
 * scratch buffer, on the same disk); a checkpoint is not read again on
 * the host that wrote it, so caching it buys nothing. */
#define CK_STOREFS_ALIGN 4096
#define CK_STOREFS_DIRECT_MIN ((size_t)1 << 20)

/* A scratch buffer of len bytes for the above, written through once (so
 * that no put pays for its first touch), or NULL (out of memory). With
 * `huge` (a task manager's pool; without, 4 KiB pages, which bench_state
 * times beside), it is aligned to a huge page and asked to be backed by
 * transparent huge pages:
 * a direct write goes to the disk from the buffer's physical pages, and
 * a virtual disk takes a few hundred of them per request (254 on the
 * machine that measured this), so that 4 MiB from 4 KiB pages travels as
 * several requests, and from 2 MiB pages as one. A store's puts of 48 MB
 * ran twice as fast from huge pages (1 500-1 600 MB/s against 660-730,
 * the same disk; bench_state prints both). Where huge pages cannot be had,
 * the buffer works all the same. free() releases it. */
uint8_t *ck_storefs_scratch_new(size_t len, int huge);
#define CK_STOREFS_HUGE ((size_t)2 << 20)

/* A local file whose bytes make (part of) an object, and what was read
 * of it: len bytes (its size when the put began), their CRC-32C. */
typedef struct ck_storefs_src {
    const char *path;
    uint64_t len;
    uint32_t crc;
} ck_storefs_src;

/* One object of a batch of puts, and how its put ended: status 0,
 * CK_EINVAL (bad key), CK_ENOTFOUND (an append's object is not there) or
 * CK_EIO (err: the errno). scratch: NULL, or a
 * buffer for direct I/O (above) of scratch_len bytes.
 *
 * The object's bytes are data[0..len), or, with nsrc > 0, local files'
 * back to back: src[0..nsrc) (the caller's; each file's len and crc set
 * by the put), read as the put writes, through scratch when there is one
 * (else through a bounce buffer of its own), so that no buffer of the
 * files' size is ever taken (a RocksDB instance's SST files, uploaded
 * from their paths as Flink's transfer threads do; several of them in
 * one merged object). len is then the sum of what was read. A file that
 * cannot be opened or read whole is CK_ENOTFOUND (err: the errno): the
 * local file's trouble (its owner gone, say), not the store's. */
typedef struct ck_storefs_item {
    const char *key;
    uint64_t at; /* 0: a put; else an append at this offset (a multiple of
                  * CK_STOREFS_ALIGN for direct I/O; padding stays) */
    const uint8_t *data;
    size_t len;
    ck_storefs_src *src;
    uint32_t nsrc;
    uint8_t *scratch;
    size_t scratch_len;
    int status, err;
} ck_storefs_item;

/* Puts items[0..n) as one group commit: every file is written, then (if
 * durable) each is synced, all are renamed into place, and each directory
 * they went to is synced once, instead of two syncs per object. Each
 * item's outcome is its own; in the order given, a later put of a key
 * wins. */
void ck_storefs_put_many(const char *root, ck_storefs_item *items, size_t n, int durable);

/* An append of data[0..len) into key at offset at (> 0), as above.
 * Returns 0, CK_EINVAL, CK_ENOTFOUND (no such object), CK_EIO. */
int ck_storefs_append(const char *root, const char *key, uint64_t at, const uint8_t *data,
                      size_t len, int durable);

/* Reads an object into a malloc'd block. Returns 0, CK_ENOTFOUND, CK_EIO, CK_EINVAL. */
int ck_storefs_get(const char *root, const char *key, uint8_t **data, size_t *len);
/* Reads the `want` bytes at offset at of an object (CK_STOREFS_WHOLE:
 * to its end) into a malloc'd block; *len is fewer where the object ends
 * first, 0 past its end. Returns as ck_storefs_get. */
#define CK_STOREFS_WHOLE UINT64_MAX
int ck_storefs_get_range(const char *root, const char *key, uint64_t at, uint64_t want,
                         uint8_t **data, size_t *len);

/* Lists the keys that start with prefix, sorted. Returns 0, CK_ENOMEM, CK_EIO. */
int ck_storefs_list(const char *root, const char *prefix, ck_store_entry **out, size_t *n);

/* Returns 0, CK_ENOTFOUND, CK_EIO, CK_EINVAL. An object of 1 MiB or more
 * is set aside for a later put to overwrite (a few at most; storefs.c),
 * but for an appendable one. */
int ck_storefs_delete(const char *root, const char *key);

/* Deletes the files set aside for reuse (at the end of a run). 0 or CK_EIO. */
int ck_storefs_recycle_clear(const char *root);

/*
 * Damages the latest completed checkpoint under prefix (the newest chk-<n>
 * with a _metadata): its largest state file is cut to half its length
 * (cut) or has one bit flipped in the middle. The key damaged goes to key.
 * Returns 0, CK_ENOTFOUND (no completed checkpoint), CK_EIO. A fault to
 * inject, for the restore path's checksums to catch.
 */
int ck_storefs_damage(const char *root, const char *prefix, int cut, char *key,
                      size_t keylen);
/* Of entries e (ck_storefs_list), the newest checkpoint with its
 * _metadata (chk-<n>/_metadata): returns n (0: none) and sets *meta to
 * that _metadata's index. */
uint64_t ck_storefs_latest(const ck_store_entry *e, size_t n, size_t *meta);

/* The same for the file of key (CK_ENOTFOUND: none, or empty). */
int ck_storefs_damage_key(const char *root, const char *key, int cut);

#endif
