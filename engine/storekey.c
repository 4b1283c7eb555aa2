#include "storekey.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "platform.h"

/* A savepoint's directory names its job by the id's first characters. */
#define SK_SAVEPOINT_JOB 6

/* ---- building ---------------------------------------------------------------- */

/* Writes what fmt says into buf: 0, or CK_EINVAL ("" in buf) when it
 * does not fit. */
static int put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = len ? vsnprintf(buf, len, fmt, ap) : -1;
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        if (len)
            buf[0] = 0;
        return CK_EINVAL;
    }
    return CK_OK;
}

static int fail(char *buf, size_t len)
{
    if (len)
        buf[0] = 0;
    return CK_EINVAL;
}

/* A job id, a file name: 1..max bytes, none a '/'. */
static int segment_ok(const char *s, size_t max)
{
    size_t l = s ? strlen(s) : 0;
    return l >= 1 && l <= max && !strchr(s, '/');
}

/* A directory a key goes in: ends in '/'. */
static int dir_ok(const char *dir)
{
    size_t l = strlen(dir);
    return l && dir[l - 1] == '/';
}

int ck_sk_dir(char *buf, size_t len, const char *job, uint64_t id, int savepoint)
{
    if (!segment_ok(job, CK_SK_JOB_MAX))
        return fail(buf, len);
    if (savepoint)
        return put(buf, len, "savepoints/savepoint-%.*s-%llu/", SK_SAVEPOINT_JOB, job,
                   (unsigned long long)id);
    return put(buf, len, "checkpoints/%s/chk-%llu/", job, (unsigned long long)id);
}

int ck_sk_shared_dir(char *buf, size_t len, const char *job)
{
    if (!segment_ok(job, CK_SK_JOB_MAX))
        return fail(buf, len);
    return put(buf, len, "checkpoints/%s/shared/", job);
}

int ck_sk_job_dir(char *buf, size_t len, const char *job)
{
    if (!segment_ok(job, CK_SK_JOB_MAX))
        return fail(buf, len);
    return put(buf, len, "checkpoints/%s/", job);
}

int ck_sk_metadata(char *buf, size_t len, const char *dir)
{
    if (!dir_ok(dir))
        return fail(buf, len);
    return put(buf, len, "%s" CK_SK_METADATA, dir);
}

int ck_sk_state(char *buf, size_t len, const char *dir, int vertex, int subtask)
{
    if (!dir_ok(dir) || vertex < 0 || subtask < 0)
        return fail(buf, len);
    return put(buf, len, "%sv%d-%d.state", dir, vertex, subtask);
}

int ck_sk_private(char *buf, size_t len, const char *dir, int vertex, int subtask, int op,
                  const char *name)
{
    if (!dir_ok(dir) || vertex < 0 || subtask < 0 || op < 0 || !segment_ok(name, CK_SK_NAME_MAX))
        return fail(buf, len);
    return put(buf, len, "%sv%d-%d-op%d-%s", dir, vertex, subtask, op, name);
}

int ck_sk_shared_native(char *buf, size_t len, const char *shared, int op, int subtask,
                        uint32_t attempt, uint64_t id, const char *name)
{
    if (!dir_ok(shared) || op < 0 || subtask < 0 || !segment_ok(name, CK_SK_NAME_MAX))
        return fail(buf, len);
    return put(buf, len, "%sop%d-%d-a%u-c%llu-%s", shared, op, subtask, attempt,
               (unsigned long long)id, name);
}

int ck_sk_merged(char *buf, size_t len, const char *shared, int vertex, int subtask,
                 uint32_t attempt, uint64_t id, uint32_t n, int appendable)
{
    if (!dir_ok(shared) || vertex < 0 || subtask < 0)
        return fail(buf, len);
    return put(buf, len, "%sv%d-%d-a%u-c%llu-m%u%s", shared, vertex, subtask, attempt,
               (unsigned long long)id, n, appendable ? CK_STORE_APPENDABLE : "");
}

int ck_sk_clog_segment(char *buf, size_t len, const char *shared, int op, int subtask,
                       uint32_t attempt, uint64_t seq)
{
    if (!dir_ok(shared) || op < 0 || subtask < 0)
        return fail(buf, len);
    return put(buf, len, "%sop%d-%d-a%u-log%llu", shared, op, subtask, attempt,
               (unsigned long long)seq);
}

int ck_sk_clog_mat(char *buf, size_t len, const char *shared, int op, int subtask,
                   uint32_t attempt, uint64_t seq, const char *name)
{
    if (!dir_ok(shared) || op < 0 || subtask < 0 || (name && !segment_ok(name, CK_SK_NAME_MAX)))
        return fail(buf, len);
    return put(buf, len, "%sop%d-%d-a%u-mat%llu%s%s", shared, op, subtask, attempt,
               (unsigned long long)seq, name ? "-" : "", name ? name : "");
}

int ck_sk_format(char *buf, size_t len, const ck_sk_key *k)
{
    char dir[CK_HANDLE_KEY_MAX + 1];
    int in_dir = k->kind == CK_SK_METADATA_FILE || k->kind == CK_SK_STATE ||
                 k->kind == CK_SK_PRIVATE;
    if (in_dir ? ck_sk_dir(dir, sizeof(dir), k->job, k->id, k->savepoint)
               : k->savepoint || ck_sk_shared_dir(dir, sizeof(dir), k->job))
        return fail(buf, len);
    switch (k->kind) {
    case CK_SK_METADATA_FILE:
        return ck_sk_metadata(buf, len, dir);
    case CK_SK_STATE:
        return ck_sk_state(buf, len, dir, k->vertex, k->subtask);
    case CK_SK_PRIVATE:
        return ck_sk_private(buf, len, dir, k->vertex, k->subtask, k->op, k->name);
    case CK_SK_SHARED_NATIVE:
        return ck_sk_shared_native(buf, len, dir, k->op, k->subtask, k->attempt, k->id, k->name);
    case CK_SK_MERGED:
        return ck_sk_merged(buf, len, dir, k->vertex, k->subtask, k->attempt, k->id, k->n,
                            k->appendable);
    case CK_SK_CLOG_SEGMENT:
        return ck_sk_clog_segment(buf, len, dir, k->op, k->subtask, k->attempt, k->seq);
    case CK_SK_CLOG_MAT:
        return ck_sk_clog_mat(buf, len, dir, k->op, k->subtask, k->attempt, k->seq,
                              k->name[0] ? k->name : NULL);
    }
    return fail(buf, len);
}

/* ---- parsing ----------------------------------------------------------------- */

/* Consumes literal s at *p. */
static int lit(const char **p, const char *s)
{
    size_t l = strlen(s);
    if (strncmp(*p, s, l))
        return 0;
    *p += l;
    return 1;
}

/* Consumes a decimal number <= max at *p: at least one digit, no sign,
 * no leading zero. */
static int num(const char **p, uint64_t max, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    *p = s;
    return 1;
}

static int num32(const char **p, int32_t *out)
{
    uint64_t v;
    if (!num(p, INT32_MAX, &v))
        return 0;
    *out = (int32_t)v;
    return 1;
}

static int numu32(const char **p, uint32_t *out)
{
    uint64_t v;
    if (!num(p, UINT32_MAX, &v))
        return 0;
    *out = (uint32_t)v;
    return 1;
}

/* The rest of the key as a file name. */
static int name_rest(const char *p, ck_sk_key *k)
{
    if (!segment_ok(p, CK_SK_NAME_MAX))
        return 0;
    memcpy(k->name, p, strlen(p) + 1);
    return 1;
}

/* A file of a checkpoint's or savepoint's directory. */
static int parse_in_dir(const char *p, ck_sk_key *k)
{
    if (!strcmp(p, CK_SK_METADATA)) {
        k->kind = CK_SK_METADATA_FILE;
        return 1;
    }
    if (!lit(&p, "v") || !num32(&p, &k->vertex) || !lit(&p, "-") || !num32(&p, &k->subtask))
        return 0;
    if (!strcmp(p, ".state")) {
        k->kind = CK_SK_STATE;
        return 1;
    }
    k->kind = CK_SK_PRIVATE;
    return lit(&p, "-op") && num32(&p, &k->op) && lit(&p, "-") && name_rest(p, k);
}

/* A file of the job's shared/ directory. */
static int parse_in_shared(const char *p, ck_sk_key *k)
{
    if (lit(&p, "v")) {
        k->kind = CK_SK_MERGED;
        if (!num32(&p, &k->vertex) || !lit(&p, "-") || !num32(&p, &k->subtask) ||
            !lit(&p, "-a") || !numu32(&p, &k->attempt) || !lit(&p, "-c") ||
            !num(&p, UINT64_MAX, &k->id) || !lit(&p, "-m") || !numu32(&p, &k->n))
            return 0;
        k->appendable = lit(&p, CK_STORE_APPENDABLE);
        return !*p;
    }
    if (!lit(&p, "op") || !num32(&p, &k->op) || !lit(&p, "-") || !num32(&p, &k->subtask) ||
        !lit(&p, "-a") || !numu32(&p, &k->attempt) || !lit(&p, "-"))
        return 0;
    if (lit(&p, "log")) {
        k->kind = CK_SK_CLOG_SEGMENT;
        return num(&p, UINT64_MAX, &k->seq) && !*p;
    }
    if (lit(&p, "mat")) {
        k->kind = CK_SK_CLOG_MAT;
        if (!num(&p, UINT64_MAX, &k->seq))
            return 0;
        return !*p || (lit(&p, "-") && name_rest(p, k));
    }
    k->kind = CK_SK_SHARED_NATIVE;
    return lit(&p, "c") && num(&p, UINT64_MAX, &k->id) && lit(&p, "-") && name_rest(p, k);
}

/* "savepoint-<job>-<id>" at s[0..l): job and id into k. */
static int parse_savepoint_name(const char *s, size_t l, ck_sk_key *k)
{
    const char *end = s + l, *dash = end;
    if (l < 10 || strncmp(s, "savepoint-", 10))
        return 0;
    while (dash > s + 10 && dash[-1] != '-')
        dash--;
    size_t jl = dash > s + 10 ? (size_t)(dash - 1 - (s + 10)) : 0;
    if (jl < 1 || jl > SK_SAVEPOINT_JOB || memchr(s + 10, '/', jl))
        return 0;
    char digits[24];
    size_t dl = (size_t)(end - dash);
    if (dl >= sizeof(digits))
        return 0;
    memcpy(digits, dash, dl);
    digits[dl] = 0;
    const char *p = digits;
    if (!num(&p, UINT64_MAX, &k->id) || *p)
        return 0;
    memcpy(k->job, s + 10, jl);
    k->job[jl] = 0;
    k->savepoint = 1;
    return 1;
}

int ck_sk_parse(const char *key, ck_sk_key *k)
{
    memset(k, 0, sizeof(*k));
    const char *p = key, *slash;
    if (!key || strlen(key) > CK_HANDLE_KEY_MAX)
        return CK_EINVAL;
    if (lit(&p, "savepoints/")) {
        if (!(slash = strchr(p, '/')) || !parse_savepoint_name(p, (size_t)(slash - p), k))
            return CK_EINVAL;
        p = slash + 1;
        return !strchr(p, '/') && parse_in_dir(p, k) ? CK_OK : CK_EINVAL;
    }
    if (!lit(&p, "checkpoints/") || !(slash = strchr(p, '/')) || slash == p ||
        (size_t)(slash - p) > CK_SK_JOB_MAX)
        return CK_EINVAL;
    memcpy(k->job, p, (size_t)(slash - p));
    k->job[slash - p] = 0;
    p = slash + 1;
    if (lit(&p, "shared/"))
        return !strchr(p, '/') && parse_in_shared(p, k) ? CK_OK : CK_EINVAL;
    if (!lit(&p, "chk-") || !num(&p, UINT64_MAX, &k->id) || !lit(&p, "/") || strchr(p, '/'))
        return CK_EINVAL;
    return parse_in_dir(p, k) ? CK_OK : CK_EINVAL;
}

int ck_sk_parse_dir_name(const char *name, uint64_t *id, int *savepoint)
{
    ck_sk_key k;
    memset(&k, 0, sizeof(k));
    const char *p = name;
    if (lit(&p, "chk-")) {
        if (!num(&p, UINT64_MAX, id) || *p)
            return CK_EINVAL;
        *savepoint = 0;
        return CK_OK;
    }
    if (strchr(name, '/') || !parse_savepoint_name(name, strlen(name), &k))
        return CK_EINVAL;
    *id = k.id;
    *savepoint = 1;
    return CK_OK;
}

int ck_sk_dirs_of(const char *key, char *dir, size_t dirlen, char *shared, size_t sharedlen)
{
    ck_sk_key k;
    if (ck_sk_parse(key, &k) ||
        (k.kind != CK_SK_METADATA_FILE && k.kind != CK_SK_STATE && k.kind != CK_SK_PRIVATE)) {
        if (shared)
            fail(shared, sharedlen);
        return fail(dir, dirlen);
    }
    /* A savepoint's name keeps only the job id's first characters, which
     * ck_sk_dir writes back as they are. */
    if (ck_sk_dir(dir, dirlen, k.job, k.id, k.savepoint)) {
        if (shared)
            fail(shared, sharedlen);
        return CK_EINVAL;
    }
    if (!shared || !sharedlen)
        return CK_OK;
    if (k.savepoint) {
        shared[0] = 0;
        return CK_OK;
    }
    return ck_sk_shared_dir(shared, sharedlen, k.job);
}
