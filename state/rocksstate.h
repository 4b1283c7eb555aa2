/*
 * rocksstate.h - keyed state in RocksDB (Flink's EmbeddedRocksDBStateBackend)
 * behind the engine's backend interface (kstate.h): state.backend.type
 * rocksdb.
 *
 * One RocksDB instance per operator subtask, in a working directory on its
 * host's local disk that the platform gives (ck_platform_ops.kstate_open);
 * it is destroyed with the instance, as Flink disposes of its local
 * directory.
 *
 * Key layout, so that a key-group range is one contiguous range of keys:
 *   u16 key group (big-endian) | u8 state | u32 key length (BE) | key |
 *   u64 namespace (BE, sign bit flipped: namespaces sort as numbers) |
 *   MAP state: the user key
 * Values: nfields 64-bit fields, little-endian; a LIST's elements are
 * concatenated, oldest first.
 *
 * Determinism: RocksDB's writes must not depend on its threads' timing.
 * The write-ahead log is off (Flink's too: checkpoints are the durability),
 * automatic compactions are off, and the memtable is sized so that RocksDB
 * never flushes it by itself; instead the instance flushes when its
 * memtable passes state.backend.rocksdb.writebuffer.size (checked every
 * CK_ROCKS_CHECK_EVERY writes, so at the same write whatever the timing)
 * and when a checkpoint's synchronous phase asks (ck_kstate_ops.flush),
 * and it compacts every level into the last one when level 0 holds
 * CK_ROCKS_L0_TRIGGER files (RocksDB's level0_file_num_compaction_trigger).
 * Flushes wait for their files: what is on disk after a call is the same
 * on every run.
 *
 * Access: acquire reads a copy into the instance's scratch, release writes
 * it back when it changed (or was created); list_add reads the list and
 * writes it back longer. The count of entries is kept exactly (a list
 * counts once), as the heap backend's.
 */
#ifndef CK_ROCKSSTATE_H
#define CK_ROCKSSTATE_H

#include <stddef.h>

#include "kstate.h"

#define CK_ROCKS_CHECK_EVERY 256
#define CK_ROCKS_L0_TRIGGER 4

/* Opens a fresh instance in directory dir (created; what was there is
 * destroyed first). write_buffer: bytes of memtable before a flush. NULL
 * with a one-line reason in err. */
ck_kstate *ck_rocks_open(const char *dir, uint64_t write_buffer, int kg_start, int kg_end,
                         const ck_state_desc *d, int n, char *err, size_t errlen);

#endif
