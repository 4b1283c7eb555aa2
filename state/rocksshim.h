/*
 * rocksshim.h - what rocksstate needs of RocksDB that its C API lacks:
 * compacting chosen files into a chosen level (DB::CompactFiles), so that
 * the engine, not RocksDB's background threads, decides when and what to
 * compact.
 */
#ifndef CK_ROCKSSHIM_H
#define CK_ROCKSSHIM_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compacts files names[0..n) (as rocksdb_livefiles_name gives them) into
 * output level `level`, in this thread, into files of at most file_limit
 * bytes; RocksDB adds the files of that level they overlap. 0, or -1 with
 * RocksDB's reason in err. */
int ck_rocks_compact_files(rocksdb_t *db, const char *const *names, int n, int level,
                           uint64_t file_limit, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
