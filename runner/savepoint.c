#include "savepoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "crc32c.h"
#include "error.h"
#include "storefs.h"

/* Reads a whole file; CK_ENOTFOUND, CK_EIO, CK_ENOMEM. */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? CK_ENOTFOUND : CK_EIO;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    int rc = b ? CK_OK : CK_ENOMEM;
    while (!rc) {
        if (n == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                rc = CK_ENOMEM;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = CK_EIO;
            break;
        }
    }
    fclose(f);
    if (rc) {
        free(b);
        return rc;
    }
    *out = b;
    *len = n;
    return CK_OK;
}

int ck_sp_open(ck_savepoint *sp, const char *path, char *err, size_t errlen)
{
    memset(sp, 0, sizeof(*sp));
    snprintf(sp->path, sizeof(sp->path), "%s", path);
    size_t pl = strlen(sp->path);
    while (pl > 1 && sp->path[pl - 1] == '/')
        sp->path[--pl] = 0;
    if (pl >= 10 && !strcmp(sp->path + pl - 10, "/_metadata"))
        sp->path[pl - 10] = 0;
    char file[800];
    snprintf(file, sizeof(file), "%s/_metadata", sp->path);
    int rc = read_file(file, &sp->metadata, &sp->metadata_len);
    if (rc) {
        snprintf(err, errlen, "%s: %s", file,
                 rc == CK_ENOTFOUND ? "no such file: not a savepoint or checkpoint directory"
                                    : ck_strerror(rc));
        return rc == CK_ENOTFOUND ? CK_EIO : rc;
    }
    const char *why;
    rc = ck_cp_meta_decode(sp->metadata, sp->metadata_len, &sp->meta, &why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", file, rc == CK_ENOMEM ? "out of memory" : why);
        ck_sp_free(sp);
        return rc;
    }
    /* Every state file sits in the same directory of the store. */
    const char *k0 = sp->meta.tasks[0].key, *slash = strrchr(k0, '/');
    if (!slash || (size_t)(slash - k0) + 2 > sizeof(sp->dir)) {
        snprintf(err, errlen, "%s: state file \"%s\" is not in a directory", file, k0);
        ck_sp_free(sp);
        return CK_ECORRUPT;
    }
    memcpy(sp->dir, k0, (size_t)(slash - k0) + 1);
    sp->dir[slash - k0 + 1] = 0;
    sp->files = calloc(sp->meta.nsubtasks, sizeof(*sp->files));
    if (!sp->files) {
        snprintf(err, errlen, "out of memory");
        ck_sp_free(sp);
        return CK_ENOMEM;
    }
    size_t dl = strlen(sp->dir);
    for (uint32_t s = 0; s < sp->meta.nsubtasks; s++) {
        const char *key = sp->meta.tasks[s].key;
        if (strncmp(key, sp->dir, dl) || strchr(key + dl, '/') || !ck_storefs_key_ok(key)) {
            snprintf(err, errlen, "%s: state file \"%s\" is not in %s", file, key, sp->dir);
            ck_sp_free(sp);
            return CK_ECORRUPT;
        }
        snprintf(file, sizeof(file), "%s/%s", sp->path, key + dl);
        ck_sp_file *f = &sp->files[s];
        rc = read_file(file, &f->data, &f->len);
        if (rc) {
            snprintf(err, errlen, "%s: %s", file,
                     rc == CK_ENOTFOUND ? "missing (the _metadata lists it)" : ck_strerror(rc));
            ck_sp_free(sp);
            return rc == CK_ENOTFOUND ? CK_EIO : rc;
        }
        if (f->len != sp->meta.tasks[s].bytes || f->len < 4 ||
            ck_get_u32(f->data + f->len - 4) != sp->meta.tasks[s].crc ||
            ck_crc32c(0, f->data, f->len - 4) != sp->meta.tasks[s].crc) {
            snprintf(err, errlen, "%s: %s", file,
                     f->len != sp->meta.tasks[s].bytes
                         ? "wrong size (truncated, or not this savepoint's file)"
                         : "checksum mismatch (damaged)");
            ck_sp_free(sp);
            return CK_ECORRUPT;
        }
    }
    return CK_OK;
}

int ck_sp_install(const ck_savepoint *sp, const char *store_root, char *err, size_t errlen)
{
    char key[CK_STORE_KEY_MAX];
    for (uint32_t s = 0; s < sp->meta.nsubtasks; s++) {
        if (ck_storefs_put(store_root, sp->meta.tasks[s].key, sp->files[s].data, sp->files[s].len,
                           0)) {
            snprintf(err, errlen, "%s/%s: cannot write", store_root, sp->meta.tasks[s].key);
            return CK_EIO;
        }
    }
    snprintf(key, sizeof(key), "%s_metadata", sp->dir);
    if (ck_storefs_put(store_root, key, sp->metadata, sp->metadata_len, 0)) {
        snprintf(err, errlen, "%s/%s: cannot write", store_root, key);
        return CK_EIO;
    }
    return CK_OK;
}

void ck_sp_free(ck_savepoint *sp)
{
    if (sp->files)
        for (uint32_t s = 0; s < sp->meta.nsubtasks; s++)
            free(sp->files[s].data);
    free(sp->files);
    free(sp->metadata);
    ck_cp_meta_free(&sp->meta);
    sp->files = NULL;
    sp->metadata = NULL;
}

int ck_sp_run_dir(const ck_savepoint *sp, char *buf, size_t len)
{
    /* path = <run>/store/<dir without its slash> */
    char tail[200];
    snprintf(tail, sizeof(tail), "/store/%s", sp->dir);
    size_t tl = strlen(tail), pl = strlen(sp->path);
    tail[--tl] = 0; /* the trailing slash */
    if (pl <= tl || strcmp(sp->path + pl - tl, tail))
        return 0;
    snprintf(buf, len, "%.*s", (int)(pl - tl), sp->path);
    return 1;
}
