#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Run files stay far below this; a bigger one is not a run.json. */
#define MAX_RUNFILE (256u << 20)

/* Opens a run.json for reading without ever blocking on it: opened with
 * O_NONBLOCK and checked with fstat first, so that a FIFO (which would
 * wait for a writer forever), a device or a directory is refused before
 * anything is read. The runner's readers do the same (ck_jin_open_file);
 * this layer links nothing of chandy's, so it has its own few lines.
 * NULL with one line in err. */
static FILE *open_regular(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: %s, not a regular file (a run.json was expected)", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                : "a special file");
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = open_regular(path, err, errlen);
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= MAX_RUNFILE) {
            snprintf(err, errlen, "%s: larger than %u MiB: not a run.json", path,
                     MAX_RUNFILE >> 20);
            free(buf);
            fclose(f);
            return NULL;
        }
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    if (bad) {
        snprintf(err, errlen, "%s: cannot read: I/O error", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Line and column of byte offset at in text. */
static void line_col(const char *text, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int ck_runfile_load(ck_runfile *rf, const char *path, char *err, size_t errlen)
{
    memset(rf, 0, sizeof(*rf));
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(rf->dir, sizeof(rf->dir), "%s", path);
        if (snprintf(rf->path, sizeof(rf->path), "%s/run.json", path) >= (int)sizeof(rf->path)) {
            snprintf(err, errlen, "%.200s...: path too long", path);
            return -1;
        }
    } else {
        if (snprintf(rf->path, sizeof(rf->path), "%s", path) >= (int)sizeof(rf->path)) {
            snprintf(err, errlen, "%.200s...: path too long", path);
            return -1;
        }
        snprintf(rf->dir, sizeof(rf->dir), "%s", path);
        char *slash = strrchr(rf->dir, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(rf->dir, sizeof(rf->dir), ".");
    }
    size_t len = 0;
    char *text = read_all(rf->path, &len, err, errlen);
    if (!text)
        return -1;
    const char *end = NULL;
    rf->root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!rf->root) {
        int line, col;
        line_col(text, end ? (size_t)(end - text) : 0, &line, &col);
        snprintf(err, errlen, "%s:%d:%d: not valid JSON (a run.json was expected)", rf->path,
                 line, col);
        free(text);
        return -1;
    }
    free(text);
    static const char *const need[] = {"scenario", "backend"};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        if (!ck_rf_str(rf->root, need[i])) {
            snprintf(err, errlen, "%s: not a run.json: expected a string \"%s\" at the top level",
                     rf->path, need[i]);
            ck_runfile_free(rf);
            return -1;
        }
    if (!ck_rf_has_num(rf->root, "seed")) {
        snprintf(err, errlen, "%s: not a run.json: expected a number \"seed\" at the top level",
                 rf->path);
        ck_runfile_free(rf);
        return -1;
    }
    return 0;
}

void ck_runfile_free(ck_runfile *rf)
{
    cJSON_Delete(rf->root);
    rf->root = NULL;
}

const cJSON *ck_rf_get(const cJSON *o, const char *k)
{
    char part[128];
    while (o && k && *k) {
        const char *dot = strchr(k, '.');
        size_t n = dot ? (size_t)(dot - k) : strlen(k);
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, k, n);
        part[n] = 0;
        if (cJSON_IsArray(o) && n && strspn(part, "0123456789") == n)
            o = cJSON_GetArrayItem(o, atoi(part));
        else if (cJSON_IsObject(o))
            o = cJSON_GetObjectItemCaseSensitive(o, part);
        else
            return NULL;
        k = dot ? dot + 1 : NULL;
    }
    return o;
}

double ck_rf_num(const cJSON *o, const char *k, double def)
{
    const cJSON *x = ck_rf_get(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : def;
}

int ck_rf_has_num(const cJSON *o, const char *k)
{
    return cJSON_IsNumber(ck_rf_get(o, k));
}

const char *ck_rf_str(const cJSON *o, const char *k)
{
    const cJSON *x = ck_rf_get(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

int ck_rf_bool(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(ck_rf_get(o, k));
}

const cJSON *ck_rf_arr(const cJSON *o, const char *k)
{
    const cJSON *x = ck_rf_get(o, k);
    return cJSON_IsArray(x) ? x : NULL;
}
