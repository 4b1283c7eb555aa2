#include "rocksshim.h"

#include <cstdio>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

/* The C API's handle is a pointer to the database, and nothing more
 * (rocksdb/db/c.cc: struct rocksdb_t { DB* rep; }). */
struct rocksdb_t {
    rocksdb::DB *rep;
};

extern "C" int ck_rocks_compact_files(rocksdb_t *db, const char *const *names, int n, int level,
                                      uint64_t file_limit, char *err, size_t errlen)
{
    try {
        std::vector<std::string> in(names, names + n);
        rocksdb::CompactionOptions co;
        co.output_file_size_limit = file_limit;
        co.max_subcompactions = 1;
        rocksdb::Status s = db->rep->CompactFiles(co, in, level);
        if (s.ok())
            return 0;
        std::snprintf(err, errlen, "%s", s.ToString().c_str());
    } catch (const std::exception &e) {
        std::snprintf(err, errlen, "%s", e.what());
    }
    return -1;
}
