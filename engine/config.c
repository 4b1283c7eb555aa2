#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>

#include "error.h"

static const ck_cfg_def defs[CK_CFG_COUNT] = {
#define CK_CFG_DEF(id, key, type, def, min, max, desc) {key, type, def, min, max, desc},
    CK_CONFIG_KEYS(CK_CFG_DEF)
#undef CK_CFG_DEF
};

void ck_config_defaults(ck_config *c)
{
    for (int i = 0; i < CK_CFG_COUNT; i++) {
        c->v[i] = defs[i].def;
        c->set[i] = 0;
    }
    c->path[0] = 0;
}

const ck_cfg_def *ck_config_def(ck_cfg_id id)
{
    if ((int)id < 0 || id >= CK_CFG_COUNT)
        return NULL;
    return &defs[id];
}

/* Keys Flink renamed: the old name still works, as in Flink. */
static const struct {
    const char *old;
    ck_cfg_id id;
    int flink;
} deprecated[] = {
#define CK_CFG_OLD(name, id, flink) {name, CK_CFG_##id, flink},
    CK_CONFIG_DEPRECATED(CK_CFG_OLD)
#undef CK_CFG_OLD
};
#define NDEPRECATED (sizeof(deprecated) / sizeof(deprecated[0]))

const char *ck_config_deprecated_name(ck_cfg_id id, int i)
{
    for (size_t k = 0; k < NDEPRECATED; k++)
        if (deprecated[k].id == id && i-- == 0)
            return deprecated[k].old;
    return NULL;
}

int ck_config_deprecated(const char *key, int *flink)
{
    for (size_t k = 0; k < NDEPRECATED; k++)
        if (strcmp(deprecated[k].old, key) == 0) {
            if (flink)
                *flink = deprecated[k].flink;
            return (int)deprecated[k].id;
        }
    return -1;
}

int ck_config_find(const char *key)
{
    for (int i = 0; i < CK_CFG_COUNT; i++)
        if (strcmp(defs[i].key, key) == 0)
            return i;
    return ck_config_deprecated(key, NULL);
}

/* Damerau-Levenshtein distance (optimal string alignment) of a and b,
 * at most 63 bytes each counted; longer ones are not compared. */
static int distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return 1000;
    int d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *ck_config_suggest(const char *key)
{
    const char *best = NULL;
    int bd = 1000;
    for (int i = 0; i < CK_CFG_COUNT; i++) {
        int dd = distance(key, defs[i].key);
        if (dd < bd) {
            bd = dd;
            best = defs[i].key;
        }
    }
    for (size_t k = 0; k < NDEPRECATED; k++) {
        int dd = distance(key, deprecated[k].old);
        if (dd < bd) {
            bd = dd;
            best = defs[deprecated[k].id].key;
        }
    }
    /* Close enough to be a slip: a third of the key's length, and at least
     * a few edits for short keys. */
    size_t len = strlen(key);
    int limit = (int)(len / 3 > 3 ? len / 3 : 3);
    return bd <= limit ? best : NULL;
}

static const char *const cp_modes[] = {"EXACTLY_ONCE", "AT_LEAST_ONCE", NULL};
static const char *const rs_types[] = {"default", "none", "fixed-delay", "failure-rate",
                                       "exponential-delay", NULL};
static const char *const failover[] = {"full", "region", NULL};
static const char *const state_backends[] = {"hashmap", "rocksdb", NULL};
static const char *const claim_modes[] = {"CLAIM", "NO_CLAIM", "LEGACY", NULL};

const char *const *ck_config_choices(ck_cfg_id id)
{
    switch (id) {
    case CK_CFG_CP_MODE:
        return cp_modes;
    case CK_CFG_RS_TYPE:
        return rs_types;
    case CK_CFG_FAILOVER:
        return failover;
    case CK_CFG_STATE_BACKEND:
        return state_backends;
    case CK_CFG_CLAIM_MODE:
        return claim_modes;
    default:
        return NULL;
    }
}

int ck_config_check(ck_cfg_id id, int64_t v)
{
    return (v < defs[id].min || v > defs[id].max) ? CK_ERANGE : CK_OK;
}

typedef struct unit {
    const char *name;
    int64_t mult;
} unit;

/* Flink's TimeUtils units; the first listed is how we print. */
static const unit time_units[] = {
    {"ns", 1}, {"nano", 1}, {"nanos", 1}, {"nanosecond", 1}, {"nanoseconds", 1},
    {"us", 1000}, {"µs", 1000}, {"micro", 1000}, {"micros", 1000},
    {"microsecond", 1000}, {"microseconds", 1000},
    {"ms", CK_MS_}, {"milli", CK_MS_}, {"millis", CK_MS_},
    {"millisecond", CK_MS_}, {"milliseconds", CK_MS_},
    {"s", 1000 * CK_MS_}, {"sec", 1000 * CK_MS_}, {"secs", 1000 * CK_MS_},
    {"second", 1000 * CK_MS_}, {"seconds", 1000 * CK_MS_},
    {"min", 60000 * CK_MS_}, {"m", 60000 * CK_MS_}, {"minute", 60000 * CK_MS_},
    {"minutes", 60000 * CK_MS_},
    {"h", 3600000 * CK_MS_}, {"hour", 3600000 * CK_MS_}, {"hours", 3600000 * CK_MS_},
    {"d", 86400000 * CK_MS_}, {"day", 86400000 * CK_MS_}, {"days", 86400000 * CK_MS_},
};

/* Flink's MemorySize units (case-insensitive). */
static const unit mem_units[] = {
    {"b", 1}, {"bytes", 1},
    {"k", 1 << 10}, {"kb", 1 << 10}, {"kibibytes", 1 << 10},
    {"m", 1 << 20}, {"mb", 1 << 20}, {"mebibytes", 1 << 20},
    {"g", 1 << 30}, {"gb", 1 << 30}, {"gibibytes", 1 << 30},
    {"t", INT64_C(1) << 40}, {"tb", INT64_C(1) << 40}, {"tebibytes", INT64_C(1) << 40},
};

/* Parses "<integer> [unit]"; a missing unit uses bare_mult. */
static int parse_with_unit(const char *text, const unit *units, size_t nunits,
                           int case_insensitive, int64_t bare_mult, int64_t *out)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    errno = 0;
    char *end;
    long long n = strtoll(p, &end, 10);
    if (end == p || errno == ERANGE)
        return CK_EINVAL;
    while (isspace((unsigned char)*end))
        end++;
    size_t ulen = strlen(end);
    while (ulen > 0 && isspace((unsigned char)end[ulen - 1]))
        ulen--;
    int64_t mult = bare_mult;
    if (ulen > 0) {
        mult = 0;
        for (size_t i = 0; i < nunits; i++) {
            if (strlen(units[i].name) != ulen)
                continue;
            int eq = case_insensitive ? strncasecmp(units[i].name, end, ulen) == 0
                                      : strncmp(units[i].name, end, ulen) == 0;
            if (eq) {
                mult = units[i].mult;
                break;
            }
        }
        if (mult == 0)
            return CK_EINVAL;
    }
    if (n != 0 && (n > INT64_MAX / mult || n < INT64_MIN / mult))
        return CK_ERANGE;
    *out = (int64_t)n * mult;
    return CK_OK;
}

int ck_config_parse(ck_cfg_id id, const char *text, int64_t *out)
{
    const ck_cfg_def *d = &defs[id];
    int64_t v = 0;
    int rc;
    switch (d->type) {
    case CK_CFG_BOOL:
        if (strcasecmp(text, "true") == 0)
            v = 1;
        else if (strcasecmp(text, "false") == 0)
            v = 0;
        else
            return CK_EINVAL;
        break;
    case CK_CFG_INT:
        rc = parse_with_unit(text, NULL, 0, 0, 1, &v);
        if (rc)
            return rc;
        break;
    case CK_CFG_DECIMAL: {
        char *end;
        double x = strtod(text, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == text || *end || !(x > -9e15 && x < 9e15))
            return CK_EINVAL;
        v = (int64_t)llround(x * 1000.0);
        break;
    }
    case CK_CFG_ENUM: {
        const char *const *c = ck_config_choices(id);
        v = -1;
        for (int i = 0; c && c[i]; i++)
            if (strcasecmp(c[i], text) == 0)
                v = i;
        if (id == CK_CFG_RS_TYPE) {
            /* RestartStrategyOptions' other names; "default" is not one of
             * Flink's values (it stands for the key left unset). */
            static const struct {
                const char *alias;
                int is;
            } aliases[] = {{"off", CK_RS_NONE},
                           {"disable", CK_RS_NONE},
                           {"fixeddelay", CK_RS_FIXED_DELAY},
                           {"failurerate", CK_RS_FAILURE_RATE},
                           {"exponentialdelay", CK_RS_EXPONENTIAL_DELAY}};
            for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
                if (strcasecmp(aliases[i].alias, text) == 0)
                    v = aliases[i].is;
            if (v == CK_RS_DEFAULT)
                v = -1;
        }
        if (v < 0)
            return CK_EINVAL;
        break;
    }
    case CK_CFG_PATH:
        v = text[0] != 0; /* the text itself is kept by the caller */
        break;
    case CK_CFG_DURATION:
        rc = parse_with_unit(text, time_units, sizeof(time_units) / sizeof(time_units[0]), 0, CK_MS_, &v);
        if (rc)
            return rc;
        break;
    case CK_CFG_MEMORY:
        if (d->max == CK_CFG_MEMORY_INFINITE && strcasecmp(text, "infinite") == 0) {
            v = CK_CFG_MEMORY_INFINITE; /* as run.json and `chandy config` write it */
            break;
        }
        rc = parse_with_unit(text, mem_units, sizeof(mem_units) / sizeof(mem_units[0]), 1, 1, &v);
        if (rc)
            return rc;
        break;
    }
    if ((rc = ck_config_check(id, v)))
        return rc;
    *out = v;
    return CK_OK;
}

void ck_config_format(ck_cfg_id id, int64_t v, char *buf, unsigned len)
{
    switch (defs[id].type) {
    case CK_CFG_BOOL:
        snprintf(buf, len, "%s", v ? "true" : "false");
        break;
    case CK_CFG_INT:
        snprintf(buf, len, "%lld", (long long)v);
        break;
    case CK_CFG_ENUM: {
        const char *const *c = ck_config_choices(id);
        snprintf(buf, len, "%s", c && v >= 0 && v <= defs[id].max ? c[v] : "?");
        break;
    }
    case CK_CFG_DECIMAL:
        snprintf(buf, len, "%g", (double)v / 1000.0);
        break;
    case CK_CFG_PATH:
        snprintf(buf, len, "%s", v ? "(set)" : "(none)");
        break;
    case CK_CFG_DURATION:
        if (v != 0 && v % (3600000 * CK_MS_) == 0)
            snprintf(buf, len, "%lld h", (long long)(v / (3600000 * CK_MS_)));
        else if (v != 0 && v % (60000 * CK_MS_) == 0)
            snprintf(buf, len, "%lld min", (long long)(v / (60000 * CK_MS_)));
        else if (v != 0 && v % (1000 * CK_MS_) == 0)
            snprintf(buf, len, "%lld s", (long long)(v / (1000 * CK_MS_)));
        else if (v % CK_MS_ == 0)
            snprintf(buf, len, "%lld ms", (long long)(v / CK_MS_));
        else
            snprintf(buf, len, "%lld ns", (long long)v);
        break;
    case CK_CFG_MEMORY:
        if (v == CK_CFG_MEMORY_INFINITE)
            snprintf(buf, len, "infinite");
        else if (v != 0 && v % (1 << 20) == 0)
            snprintf(buf, len, "%lld mb", (long long)(v >> 20));
        else if (v != 0 && v % (1 << 10) == 0)
            snprintf(buf, len, "%lld kb", (long long)(v >> 10));
        else
            snprintf(buf, len, "%lld b", (long long)v);
        break;
    }
}
