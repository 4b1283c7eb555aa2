#include "rocksshim.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/utilities/checkpoint.h>

extern "C" {
#include "error.h"
}

/* The C API's handles wrap the C++ objects and nothing more
 * (rocksdb/db/c.cc: struct rocksdb_t { DB* rep; }, and likewise). */
struct rocksdb_t {
    rocksdb::DB *rep;
};
struct rocksdb_column_family_handle_t {
    rocksdb::ColumnFamilyHandle *rep;
};
struct rocksdb_options_t {
    rocksdb::Options rep;
};

struct ck_rocks_export {
    rocksdb::ExportImportFilesMetaData *md;
};

static void say(char *err, size_t errlen, const std::string &s)
{
    if (errlen)
        std::snprintf(err, errlen, "%s", s.c_str());
}

extern "C" void ck_rocks_db_close(ck_rocks_dbh *h)
{
    for (int i = 0; i < h->ncf; i++) {
        if (h->cf[i])
            rocksdb_column_family_handle_destroy(h->cf[i]);
        std::free(h->name[i]);
    }
    if (h->db)
        rocksdb_close(h->db);
    std::memset(h, 0, sizeof(*h));
}

extern "C" int ck_rocks_db_open(const rocksdb_options_t *opts, const char *dir, int read_only,
                                int create, ck_rocks_dbh *h, char *err, size_t errlen)
{
    std::memset(h, 0, sizeof(*h));
    char *e = nullptr;
    size_t n = 0;
    char **names = rocksdb_list_column_families(opts, dir, &n, &e);
    if (e) { /* no database there (or no readable one) */
        std::string why = e;
        rocksdb_free(e);
        if (names) /* the C API allocates the list even then */
            rocksdb_list_column_families_destroy(names, n);
        if (!create) {
            say(err, errlen, why);
            return CK_ECORRUPT;
        }
        rocksdb_options_t *o = rocksdb_options_create_copy(const_cast<rocksdb_options_t *>(opts));
        rocksdb_options_set_create_if_missing(o, 1);
        const char *def[1] = {"default"};
        const rocksdb_options_t *defo[1] = {o};
        e = nullptr;
        h->db = rocksdb_open_column_families(o, dir, 1, def, defo, h->cf, &e);
        rocksdb_options_destroy(o);
        if (e || !h->db) {
            say(err, errlen, e ? e : "cannot create the database");
            rocksdb_free(e);
            h->db = nullptr;
            h->cf[0] = nullptr;
            return CK_EIO;
        }
        h->ncf = 1;
        if (!(h->name[0] = strdup("default"))) {
            ck_rocks_db_close(h);
            return CK_ENOMEM;
        }
        return CK_OK;
    }
    if (n > CK_ROCKS_MAX_CF) {
        rocksdb_list_column_families_destroy(names, n);
        say(err, errlen, "more column families than an instance has");
        return CK_ETOOBIG;
    }
    const rocksdb_options_t *cfo[CK_ROCKS_MAX_CF];
    for (size_t i = 0; i < n; i++)
        cfo[i] = opts;
    h->db = read_only
                ? rocksdb_open_for_read_only_column_families(opts, dir, (int)n, names, cfo, h->cf,
                                                            0, &e)
                : rocksdb_open_column_families(opts, dir, (int)n, names, cfo, h->cf, &e);
    int rc = CK_OK;
    if (e || !h->db) {
        say(err, errlen, e ? e : "cannot open the database");
        rocksdb_free(e);
        h->db = nullptr;
        std::memset(h->cf, 0, sizeof(h->cf));
        rc = CK_ECORRUPT;
    } else {
        h->ncf = (int)n;
        int def = -1, data = -1;
        for (size_t i = 0; i < n && !rc; i++) {
            if (!(h->name[i] = strdup(names[i])))
                rc = CK_ENOMEM;
            else if (!std::strcmp(names[i], CK_ROCKS_DATA_CF))
                data = (int)i;
            else if (!std::strcmp(names[i], "default"))
                def = (int)i;
        }
        h->data = data >= 0 ? data : def >= 0 ? def : 0;
    }
    rocksdb_list_column_families_destroy(names, n);
    if (rc)
        ck_rocks_db_close(h);
    return rc;
}

extern "C" int ck_rocks_compact_files(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                                      const char *const *names, int n, int level,
                                      uint64_t file_limit, char *err, size_t errlen)
{
    try {
        std::vector<std::string> in(names, names + n);
        rocksdb::CompactionOptions co;
        co.output_file_size_limit = file_limit;
        co.max_subcompactions = 1;
        rocksdb::Status s = db->rep->CompactFiles(co, cf->rep, in, level);
        if (s.ok())
            return 0;
        say(err, errlen, s.ToString());
    } catch (const std::exception &e) {
        say(err, errlen, e.what());
    }
    return -1;
}

extern "C" int ck_rocks_delete_files_in_range(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                                              const char *begin, size_t blen, const char *end,
                                              size_t elen, char *err, size_t errlen)
{
    try {
        rocksdb::Slice b(begin, blen), e(end, elen);
        rocksdb::RangePtr r(&b, &e);
        rocksdb::Status s = rocksdb::DeleteFilesInRanges(db->rep, cf->rep, &r, 1, false);
        if (s.ok())
            return 0;
        say(err, errlen, s.ToString());
    } catch (const std::exception &x) {
        say(err, errlen, x.what());
    }
    return -1;
}

extern "C" int ck_rocks_export_cf(rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                                  const char *dir, ck_rocks_export **out, uint32_t *files,
                                  uint64_t *bytes, char *err, size_t errlen)
{
    *out = nullptr;
    try {
        rocksdb::Checkpoint *cp = nullptr;
        rocksdb::Status s = rocksdb::Checkpoint::Create(db->rep, &cp);
        std::unique_ptr<rocksdb::Checkpoint> guard(cp);
        rocksdb::ExportImportFilesMetaData *md = nullptr;
        if (s.ok())
            s = cp->ExportColumnFamily(cf->rep, dir, &md);
        if (!s.ok()) {
            delete md;
            say(err, errlen, s.ToString());
            return -1;
        }
        ck_rocks_export *e = new ck_rocks_export{md};
        *files = (uint32_t)md->files.size();
        *bytes = 0;
        for (const auto &f : md->files)
            *bytes += f.size;
        *out = e;
        return 0;
    } catch (const std::exception &x) {
        say(err, errlen, x.what());
    }
    return -1;
}

extern "C" void ck_rocks_export_free(ck_rocks_export *e)
{
    if (e) {
        delete e->md;
        delete e;
    }
}

/* e's files in tiers, newest first: level 0's one each (newest first),
 * then each non-empty level below. */
static std::vector<std::vector<const rocksdb::LiveFileMetaData *>>
tiers_of(const ck_rocks_export *e)
{
    std::vector<const rocksdb::LiveFileMetaData *> l0;
    int deepest = 0;
    for (const auto &f : e->md->files) {
        if (f.level == 0)
            l0.push_back(&f);
        deepest = std::max(deepest, f.level);
    }
    std::sort(l0.begin(), l0.end(), [](const rocksdb::LiveFileMetaData *a,
                                       const rocksdb::LiveFileMetaData *b) {
        if (a->largest_seqno != b->largest_seqno)
            return a->largest_seqno > b->largest_seqno;
        return a->smallest_seqno > b->smallest_seqno;
    });
    std::vector<std::vector<const rocksdb::LiveFileMetaData *>> t;
    for (const auto *f : l0)
        t.push_back({f});
    for (int lv = 1; lv <= deepest; lv++) {
        std::vector<const rocksdb::LiveFileMetaData *> in;
        for (const auto &f : e->md->files)
            if (f.level == lv)
                in.push_back(&f);
        if (!in.empty())
            t.push_back(in);
    }
    return t;
}

extern "C" int ck_rocks_export_tiers(const ck_rocks_export *e)
{
    return (int)tiers_of(e).size();
}

/* Opens file f and reads its first and last entries, as an import's
 * preparation does: 0, or -1 with the reason. */
static int probe(const rocksdb::Options &o, const rocksdb::LiveFileMetaData &f, char *err,
                 size_t errlen)
{
    /* as the import names it (7.8's exports fill name, "/<number>.sst") */
    std::string path = f.db_path + f.name;
    rocksdb::SstFileReader rd(o);
    rocksdb::Status s = rd.Open(path);
    if (s.ok()) {
        std::unique_ptr<rocksdb::Iterator> it(rd.NewIterator(rocksdb::ReadOptions()));
        it->SeekToFirst();
        if (it->status().ok())
            it->SeekToLast();
        s = it->status();
    }
    if (s.ok())
        return 0;
    say(err, errlen, path + ": " + s.ToString());
    return -1;
}

extern "C" int ck_rocks_import(rocksdb_t *db, const rocksdb_options_t *opts, const char *name,
                               ck_rocks_export *const *ex, int n, int nlevels,
                               rocksdb_column_family_handle_t **out, uint32_t *files,
                               uint64_t *bytes, char *err, size_t errlen)
{
    *out = nullptr;
    try {
        rocksdb::ExportImportFilesMetaData md;
        for (int i = 0; i < n; i++) {
            md.db_comparator_name = ex[i]->md->db_comparator_name;
            if (n == 1) {
                md.files = ex[i]->md->files;
                break;
            }
            auto t = tiers_of(ex[i]);
            int nt = (int)t.size();
            if (nt > nlevels - 1) {
                say(err, errlen, "an export has more tiers than the levels below 0");
                return -2;
            }
            for (int k = 0; k < nt; k++)
                for (const auto *f : t[k]) {
                    md.files.push_back(*f);
                    md.files.back().level = nlevels - nt + k;
                }
        }
        *files = (uint32_t)md.files.size();
        *bytes = 0;
        for (const auto &f : md.files) {
            if (probe(opts->rep, f, err, errlen))
                return -1;
            *bytes += f.size;
        }
        rocksdb::ImportColumnFamilyOptions io;
        io.move_files = true;
        rocksdb::ColumnFamilyHandle *h = nullptr;
        rocksdb::Status s = db->rep->CreateColumnFamilyWithImport(
            rocksdb::ColumnFamilyOptions(opts->rep), name, io, md, &h);
        if (!s.ok()) {
            say(err, errlen, s.ToString());
            return -1;
        }
        *out = new rocksdb_column_family_handle_t{h};
        return 0;
    } catch (const std::exception &x) {
        say(err, errlen, x.what());
    }
    return -1;
}
