/*
 * fuzz_scenario - the scenario loader (ck_scenario_parse) on arbitrary
 * text, as `chandy run` and `chandy validate` read a file.
 *
 * Checked: a refused scenario gives CK_EINVAL and one line that names the
 * file; an accepted one answers the questions a run asks of it (task
 * managers, each fault's hosts and end) and is freed cleanly.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text);
    memcpy(text, data, size);
    text[size] = 0;
    static ck_scenario sc;
    char err[512] = "";
    int rc = ck_scenario_parse(&sc, "fuzz.json", text, err, sizeof(err));
    if (rc) {
        FUZZ_CHECK(rc == CK_EINVAL);
        FUZZ_CHECK(strncmp(err, "fuzz.json", 9) == 0 && !strchr(err, '\n'));
    } else {
        int ntm = ck_scenario_taskmanagers(&sc);
        FUZZ_CHECK(ntm >= 1);
        for (int i = 0; i < sc.nfaults; i++) {
            const ck_fault *f = &sc.faults[i];
            (void)ck_fault_end(f);
            (void)ck_fault_name(f->kind);
            for (int h = 0; h < ntm; h++)
                (void)ck_fault_involves(f, h);
        }
        ck_scenario_free(&sc);
    }
    free(text);
    return 0;
}
