/*
 * replay.c - runs a fuzz target over files and directories of inputs
 * without libFuzzer, so that a gcc build (CHANDY_SANITIZE) replays the
 * committed corpora under ASan and UBSan: the same check as libFuzzer's
 * -runs=0, and no clang needed.
 *
 * Usage: fuzz_<target> FILE|DIR...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb)
                break;
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b)
        return 1;
    LLVMFuzzerTestOneInput(b, n);
    free(b);
    return 0;
}


int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int bad = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            runs++;
            continue;
        }
        struct dirent **list;
        int n = scandir(argv[i], &list, NULL, alphasort);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], list[k]->d_name);
            if (list[k]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode)) {
                bad |= run_file(path);
                runs++;
            }
            free(list[k]);
        }
        free(list);
    }
    printf("replayed %d inputs\n", runs);
    return bad;
}
