/*
 * rocksshim.h - what the RocksDB state layer (rocksstate, rocksrescale)
 * needs of RocksDB beyond the plain use of its C API:
 *
 *   - opening an instance with every column family it has, and finding
 *     the one that holds keyed state (ck_rocks_db_open): an instance
 *     made by ck_rocks_open keeps its state in the default column family;
 *     one a rescale imported keeps it in CK_ROCKS_DATA_CF (RocksDB
 *     imports into a new column family only, as Flink's imports go into
 *     its states' column families);
 *   - compacting chosen files into a chosen level (DB::CompactFiles), so
 *     that the engine, not RocksDB's background threads, decides when
 *     and what to compact;
 *   - deleting the files that lie wholly in a key range
 *     (DeleteFilesInRanges, with Flink's exclusive end);
 *   - exporting a column family (Checkpoint::ExportColumnFamily) and
 *     importing several exports into one new column family
 *     (DB::CreateColumnFamilyWithImport), which RocksDB 7.8 offers in C++
 *     only, and for one export at a time (ck_rocks_import says how
 *     several become one).
 */
#ifndef CK_ROCKSSHIM_H
#define CK_ROCKSSHIM_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The column family an import creates and keyed state then lives in. */
#define CK_ROCKS_DATA_CF "kstate"
/* Column families an instance may have: the default and the data one,
 * with room for what a later version adds. */
#define CK_ROCKS_MAX_CF 8

/* An open instance: the database and every column family's handle. */
typedef struct ck_rocks_dbh {
    rocksdb_t *db;
    int ncf;
    rocksdb_column_family_handle_t *cf[CK_ROCKS_MAX_CF];
    char *name[CK_ROCKS_MAX_CF]; /* malloc'd */
    int data;                    /* the index of the column family holding keyed state */
} ck_rocks_dbh;

/* Opens the instance in dir with options opts (for every column family):
 * every column family it has, or (create: the directory holds no
 * database) a new one with the default alone; read_only opens it for
 * reading (nothing is written to dir). The keyed state's column family
 * is CK_ROCKS_DATA_CF when the instance has it, else the default.
 * Returns 0, CK_ECORRUPT (what is in dir is not a database: RocksDB's
 * reason in err), CK_EIO (a new one could not be made), CK_ETOOBIG (more
 * than CK_ROCKS_MAX_CF column families), CK_ENOMEM. On failure *h is left
 * closed. */
int ck_rocks_db_open(const rocksdb_options_t *opts, const char *dir, int read_only, int create,
                     ck_rocks_dbh *h, char *err, size_t errlen);

/* Closes what ck_rocks_db_open opened (h zeroed); h may be zeroed already. */
void ck_rocks_db_close(ck_rocks_dbh *h);

/* Compacts files names[0..n) of column family cf (as
 * rocksdb_livefiles_name gives them) into output level `level`, in this
 * thread, into files of at most file_limit bytes; RocksDB adds the files
 * of that level they overlap. 0, or -1 with RocksDB's reason in err. */
int ck_rocks_compact_files(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                           const char *const *names, int n, int level, uint64_t file_limit,
                           char *err, size_t errlen);

/* Deletes the files of column family cf (levels 1 and below: RocksDB
 * leaves level 0 alone) whose keys all lie in [begin, end), as Flink's
 * deleteFilesInRanges(cf, ranges, false). 0, or -1 with the reason. */
int ck_rocks_delete_files_in_range(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                                   const char *begin, size_t blen, const char *end,
                                   size_t elen, char *err, size_t errlen);

/* One column family exported: its files (hard links in the export's
 * directory) and where each lay in its instance's LSM tree. */
typedef struct ck_rocks_export ck_rocks_export;

/* Exports column family cf of db into directory dir (which must not
 * exist; RocksDB flushes the column family first and hard-links its
 * files there). *files and *bytes get what it holds. 0, or -1 with the
 * reason in err (*out NULL). */
int ck_rocks_export_cf(rocksdb_t *db, rocksdb_column_family_handle_t *cf, const char *dir,
                       ck_rocks_export **out, uint32_t *files, uint64_t *bytes, char *err,
                       size_t errlen);

/* Frees an export's description (the files stay). NULL: nothing. */
void ck_rocks_export_free(ck_rocks_export *e);

/* Tiers of an export: its level-0 files one each (they may overlap),
 * then each non-empty level below. An export with more tiers than an
 * instance has levels below 0 cannot be imported beside others. */
int ck_rocks_export_tiers(const ck_rocks_export *e);

/*
 * Imports exports ex[0..n), whose keys lie in disjoint ranges, into a new
 * column family `name` of db, with options opts; the files are moved
 * (hard links) into db's directory. *out gets the new handle.
 *
 * RocksDB 7.8 imports one export per column family and checks that level
 * 0's files have sequence numbers that do not interleave; exports of
 * different instances do interleave. So with n > 1 each export's tiers
 * (ck_rocks_export_tiers) go, in their order, to the deepest levels
 * (the newest tier highest): within an export a newer entry still sits
 * above an older one, and files of different exports never overlap, as
 * their key ranges are disjoint. With n == 1 the export goes in as it
 * was. Every file is opened and its first and last keys read before the
 * import starts: RocksDB 7.8 does not return from a failed import (it
 * deadlocks dropping the column family it made), so a file that would
 * fail it fails here.
 *
 * Returns 0, or -1 with the reason in err (-2: an export has too many
 * tiers for the instance's levels: nothing was done).
 */
int ck_rocks_import(rocksdb_t *db, const rocksdb_options_t *opts, const char *name,
                    ck_rocks_export *const *ex, int n, int nlevels,
                    rocksdb_column_family_handle_t **out, uint32_t *files, uint64_t *bytes,
                    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
