/*
 * fuzz_metadata - the decoder of a checkpoint's or savepoint's _metadata
 * (ck_cp_meta_decode), directly and as `chandy run --from-savepoint` and
 * `chandy savepoint` meet it (ck_sp_open on a directory holding the file).
 *
 * Input: u8 mode | the file. Mode bit 0 set: the file's last four bytes
 * are replaced by the CRC-32C of the rest, so that the fuzzer gets past
 * the checksum into the structure.
 *
 * Checked: a refused file says why; an accepted one of version 5 encodes
 * back (ck_cp_meta_encode) to exactly its bytes (the format has one
 * encoding); one of version 4 (no operator-state counts) or 3 is read,
 * never written again;
 * ck_sp_open refuses with one line naming the file, or opens it.
 */
#include "fuzz_common.h"

#include <unistd.h>

#include "coordinator.h"
#include "crc32c.h"
#include "savepoint.h"

static char dir[64];
static char file[96];

static void cleanup(void)
{
    unlink(file);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    snprintf(dir, sizeof(dir), "/tmp/chandy-fuzz-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/_metadata", dir);
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len;
    uint8_t *p = fuzz_file(data, size, &len);

    ck_cp_meta m;
    const char *why = NULL;
    int rc = ck_cp_meta_decode(p, len, &m, &why);
    if (rc) {
        FUZZ_CHECK(rc == CK_ECORRUPT || rc == CK_ENOMEM);
        FUZZ_CHECK(why && why[0]);
    } else if (m.version == 5) {
        uint8_t *again;
        size_t alen;
        FUZZ_CHECK(ck_cp_meta_encode(&m, &again, &alen) == CK_OK);
        FUZZ_CHECK(alen == len && memcmp(again, p, len) == 0);
        free(again);
        ck_cp_meta_free(&m);
    } else if (m.version == 4) { /* read, never written again: no counts */
        FUZZ_CHECK(m.nvertices > 0 && m.nsubtasks > 0);
        for (uint32_t s = 0; s < m.nsubtasks; s++)
            for (uint32_t h = 0; h < m.tasks[s].n; h++)
                FUZZ_CHECK(!(m.tasks[s].v[h].flags & CK_HANDLE_OPCOUNTS));
        ck_cp_meta_free(&m);
    } else { /* an old-version file: read, never written again */
        FUZZ_CHECK(m.version == 3 && m.nvertices == 0 && m.nsubtasks > 0);
        ck_cp_meta_free(&m);
    }

    FILE *f = fopen(file, "wb");
    FUZZ_CHECK(f);
    FUZZ_CHECK(fwrite(p, 1, len, f) == len);
    FUZZ_CHECK(fclose(f) == 0);
    ck_savepoint sp;
    char err[400] = "";
    rc = ck_sp_open(&sp, dir, err, sizeof(err));
    if (rc) {
        FUZZ_CHECK(err[0] && !strchr(err, '\n'));
        FUZZ_CHECK(rc == CK_ENOMEM || strncmp(err, dir, strlen(dir)) == 0); /* names the file */
    } else {
        char run[600];
        ck_sp_run_dir(&sp, run, sizeof(run));
        ck_sp_free(&sp);
    }
    free(p);
    return 0;
}
