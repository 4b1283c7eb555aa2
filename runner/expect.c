#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jsonin.h"

static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", NULL};

static int op_index(const char *s)
{
    for (int i = 0; ops[i]; i++)
        if (strcmp(ops[i], s) == 0)
            return i;
    return -1;
}

/* The longest key a path step may name. */
#define KEY_MAX 255

/*
 * Reads the step of a path at *p: a key (the first step, or after a dot,
 * or in brackets and quotes: ["a.b"], for keys with dots such as config
 * keys) or an index ([i], negative from the end). Returns 1 (a key, into
 * key), 2 (an index, into *index), 0 (the end) or -1 (malformed: *why
 * says what was expected).
 */
static int path_step(const char **p, int first, char *key, long *index, const char **why)
{
    const char *c = *p;
    if (!*c)
        return 0;
    if (*c == '[' && c[1] == '"') {
        const char *end = strchr(c + 2, '"');
        if (!end || end[1] != ']' || end == c + 2 || end - (c + 2) > KEY_MAX) {
            *why = "expected [\"key\"]: a non-empty key of at most 255 bytes in quotes";
            return -1;
        }
        memcpy(key, c + 2, (size_t)(end - (c + 2)));
        key[end - (c + 2)] = 0;
        *p = end + 2;
        return 1;
    }
    if (*c == '[') {
        const char *d = c + 1 + (c[1] == '-');
        size_t digits = strspn(d, "0123456789");
        if (!digits || digits > 9 || d[digits] != ']') {
            *why = "expected [i]: an index, negative from the end, of at most 9 digits";
            return -1;
        }
        *index = strtol(c + 1, NULL, 10);
        *p = d + digits + 1;
        return 2;
    }
    if (!first) {
        if (*c != '.') {
            *why = "expected a dot or [ after a key or an index";
            return -1;
        }
        c++;
    }
    size_t n = 0;
    while (c[n] && c[n] != '.' && c[n] != '[' && c[n] != ']' && (unsigned char)c[n] > ' ' &&
           c[n] != 0x7f)
        n++;
    if (n == 0 || n > KEY_MAX || (c[n] && c[n] != '.' && c[n] != '[')) {
        *why = n > KEY_MAX ? "a key longer than 255 bytes"
               : n == 0    ? "expected a key (an empty one, or a dot or [ out of place)"
                           : "a key holds no space, control character or ]";
        return -1;
    }
    memcpy(key, c, n);
    key[n] = 0;
    *p = c + n;
    return 1;
}

/* Checks a path's form; 0, or CK_EINVAL with why. */
static int path_check(const char *path, const char **why)
{
    char key[KEY_MAX + 1];
    long index;
    int rc, first = 1;
    while ((rc = path_step(&path, first, key, &index, why)) > 0)
        first = 0;
    return rc < 0 ? CK_EINVAL : CK_OK;
}

int ck_expect_check(const cJSON *expect, const char **at, char *why, size_t len)
{
    *at = NULL;
    if (!cJSON_IsObject(expect)) {
        snprintf(why, len, "expected an object of run.json paths and expected values");
        return CK_EINVAL;
    }
    for (const cJSON *c = expect->child; c; c = c->next) {
        *at = c->string;
        const char *bad;
        if (!c->string[0]) {
            snprintf(why, len, "empty path");
            return CK_EINVAL;
        }
        if (path_check(c->string, &bad)) {
            snprintf(why, len, "not a run.json path: %s (paths are keys with dots, [i] and "
                               "[\"key\"], e.g. checkpoints[-1].bytes)", bad);
            return CK_EINVAL;
        }
        if (cJSON_IsObject(c)) {
            if (!c->child) {
                snprintf(why, len, "expected at least one comparison (== != < <= > >=)");
                return CK_EINVAL;
            }
            for (const cJSON *o = c->child; o; o = o->next) {
                if (op_index(o->string) < 0) {
                    snprintf(why, len, "unknown comparison \"%s\" (expected == != < <= > >=)",
                             o->string);
                    return CK_EINVAL;
                }
                if (op_index(o->string) >= 2 && !cJSON_IsNumber(o)) {
                    snprintf(why, len, "\"%s\" compares numbers: expected a number", o->string);
                    return CK_EINVAL;
                }
                if (cJSON_IsObject(o) || cJSON_IsArray(o)) {
                    snprintf(why, len, "expected a number, string, boolean or null to compare with");
                    return CK_EINVAL;
                }
            }
        } else if (cJSON_IsArray(c)) {
            snprintf(why, len, "expected a value or an object of comparisons, got an array");
            return CK_EINVAL;
        }
    }
    *at = NULL;
    return CK_OK;
}

/*
 * Looks path up in root. On a miss returns NULL and says in why (when not
 * NULL) where: the part of the path that was found and what it lacked.
 */
static const cJSON *lookup(const cJSON *root, const char *path, char *why, size_t len)
{
    const cJSON *cur = root;
    const char *p = path, *bad, *before = path;
    char key[KEY_MAX + 1];
    long index;
    int step, first = 1;
    while ((step = path_step(&p, first, key, &index, &bad)) > 0) {
        /* What was found so far: the path up to this step, or run.json. */
        int at = (int)(before - path);
        const char *name = at ? path : "run.json";
        at = at ? at : 8;
        const cJSON *next = NULL;
        if (step == 1 && cJSON_IsObject(cur)) {
            next = cJSON_GetObjectItemCaseSensitive(cur, key);
            if (!next && why)
                snprintf(why, len, "%.*s has no \"%s\"", at, name, key);
        } else if (step == 2 && cJSON_IsArray(cur)) {
            int n = cJSON_GetArraySize(cur);
            long i = index < 0 ? index + n : index;
            next = i >= 0 && i < n ? cJSON_GetArrayItem(cur, (int)i) : NULL;
            if (!next && why)
                snprintf(why, len, "%.*s has %d entr%s", at, name, n, n == 1 ? "y" : "ies");
        } else if (why) {
            char got[96];
            ck_jin_describe(cur, got, sizeof(got));
            snprintf(why, len, "%.*s is %s, not %s", at, name, got,
                     step == 1 ? "an object" : "an array");
        }
        if (!next)
            return NULL;
        cur = next;
        before = p;
        first = 0;
    }
    if (step < 0) {
        if (why)
            snprintf(why, len, "not a run.json path: %s", bad);
        return NULL;
    }
    return cur;
}

const cJSON *ck_expect_lookup(const cJSON *root, const char *path)
{
    return lookup(root, path, NULL, 0);
}

static int equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
        return a->valuedouble == b->valuedouble;
    if (cJSON_IsBool(a) && cJSON_IsBool(b))
        return cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if (cJSON_IsString(a) && cJSON_IsString(b))
        return strcmp(a->valuestring, b->valuestring) == 0;
    return cJSON_IsNull(a) && cJSON_IsNull(b);
}

static int holds(int op, const cJSON *got, const cJSON *want)
{
    switch (op) {
    case 0:
        return equal(got, want);
    case 1:
        return !equal(got, want);
    }
    if (!cJSON_IsNumber(got))
        return 0;
    double g = got->valuedouble, w = want->valuedouble;
    switch (op) {
    case 2:
        return g < w;
    case 3:
        return g <= w;
    case 4:
        return g > w;
    default:
        return g >= w;
    }
}

int ck_expect_eval(const cJSON *expect, const cJSON *run, char *report, size_t len)
{
    int failures = 0;
    size_t off = 0;
    report[0] = 0;
    for (const cJSON *c = expect->child; c; c = c->next) {
        char where[400];
        const cJSON *got = lookup(run, c->string, where, sizeof(where));
        if (!got) {
            /* Absent: the assertion (each of its comparisons) fails. */
            failures += cJSON_IsObject(c) ? cJSON_GetArraySize(c) : 1;
            if (off < len)
                off += (size_t)snprintf(report + off, len - off,
                                        "%sexpect failed: %s is absent from run.json (%s)",
                                        off ? "\n" : "", c->string, where);
            continue;
        }
        char gs[96], ws[96];
        ck_jin_describe(got, gs, sizeof(gs));
        if (cJSON_IsObject(c)) {
            for (const cJSON *o = c->child; o; o = o->next) {
                int op = op_index(o->string);
                if (!holds(op, got, o)) {
                    ck_jin_describe(o, ws, sizeof(ws));
                    failures++;
                    if (off < len)
                        off += (size_t)snprintf(report + off, len - off,
                                                "%sexpect failed: %s = %s, wanted %s %s",
                                                off ? "\n" : "", c->string, gs, o->string, ws);
                }
            }
        } else if (!equal(got, c)) {
            ck_jin_describe(c, ws, sizeof(ws));
            failures++;
            if (off < len)
                off += (size_t)snprintf(report + off, len - off,
                                        "%sexpect failed: %s = %s, wanted %s", off ? "\n" : "",
                                        c->string, gs, ws);
        }
    }
    return failures;
}
