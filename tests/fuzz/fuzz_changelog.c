/*
 * fuzz_changelog - the state changelog's segment decoder (ck_clog_replay),
 * as a restore meets a segment file: replayed into a heap backend of the
 * three kinds of state (value of two fields, map, list), of key groups
 * 32..95 of 128.
 *
 * Input: u8 mode | the file. Mode bit 0 set: the file's last four bytes
 * are replaced by the CRC-32C of the rest, so that the fuzzer gets past
 * the checksum into the records.
 *
 * Checked: no crash, leak or undefined behaviour (ASan, UBSan); a refused
 * segment says why; nothing but corruption or memory is refused.
 */
#include "fuzz_common.h"

#include "changelog.h"
#include "crc32c.h"

static const ck_state_desc descs[] = {
    {"value", CK_STATE_VALUE, 2},
    {"map", CK_STATE_MAP, 1},
    {"list", CK_STATE_LIST, 1},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len;
    uint8_t *p = fuzz_file(data, size, &len);
    ck_kstate *ks = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(32, 95), descs, 3);
    FUZZ_CHECK(ks);
    uint64_t first;
    uint32_t n;
    const char *why = NULL;
    int rc = ck_clog_replay(p, len, ks, 128, &first, &n, &why);
    if (rc == CK_ECORRUPT || rc == CK_ECHECKSUM)
        FUZZ_CHECK(why && why[0]);
    else
        FUZZ_CHECK(rc == CK_OK || rc == CK_ENOMEM);
    ck_kstate_free(ks);
    free(p);
    return 0;
}
