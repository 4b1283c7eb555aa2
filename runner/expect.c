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

int ck_expect_check(const cJSON *expect, const char **at, char *why, size_t len)
{
    *at = NULL;
    if (!cJSON_IsObject(expect)) {
        snprintf(why, len, "expected an object of run.json paths and expected values");
        return CK_EINVAL;
    }
    for (const cJSON *c = expect->child; c; c = c->next) {
        *at = c->string;
        if (!c->string[0]) {
            snprintf(why, len, "empty path");
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

const cJSON *ck_expect_lookup(const cJSON *root, const char *path)
{
    const cJSON *cur = root;
    const char *p = path;
    char key[256];
    while (*p && cur) {
        if (*p == '.') {
            p++;
            continue;
        }
        if (*p == '[') {
            char *end;
            long i = strtol(p + 1, &end, 10);
            if (*end != ']' || !cJSON_IsArray(cur))
                return NULL;
            int n = cJSON_GetArraySize(cur);
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return NULL;
            cur = cJSON_GetArrayItem(cur, (int)i);
            p = end + 1;
            continue;
        }
        size_t k = 0;
        while (*p && *p != '.' && *p != '[' && k + 1 < sizeof(key))
            key[k++] = *p++;
        key[k] = 0;
        if (!cJSON_IsObject(cur))
            return NULL;
        cur = cJSON_GetObjectItemCaseSensitive(cur, key);
    }
    return cur;
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
        const cJSON *got = ck_expect_lookup(run, c->string);
        if (!got) {
            snprintf(report, len, "expect.%s: no such value in run.json", c->string);
            return CK_EINVAL;
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
