#include "jsonin.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

const ck_jin_unit ck_units_bandwidth[] = {
    {"Bps", 1},      {"kBps", 1e3},   {"KBps", 1e3},    {"MBps", 1e6},
    {"GBps", 1e9},   {"TBps", 1e12},  {"KiBps", 1024.0}, {"MiBps", 1048576.0},
    {"GiBps", 1073741824.0},          {"bps", 0.125},   {"kbps", 125.0},
    {"Kbps", 125.0}, {"Mbps", 125e3}, {"Gbps", 125e6},  {"Tbps", 125e9},
    {NULL, 0},
};

const ck_jin_unit ck_units_speed[] = {
    {"f", 1}, {"kf", 1e3}, {"Mf", 1e6}, {"Gf", 1e9}, {"Tf", 1e12}, {NULL, 0},
};

const ck_jin_unit ck_units_size[] = {
    {"B", 1},        {"kB", 1e3},     {"KB", 1e3},      {"MB", 1e6},
    {"GB", 1e9},     {"TB", 1e12},    {"KiB", 1024.0},  {"MiB", 1048576.0},
    {"GiB", 1073741824.0},            {"TiB", 1099511627776.0},
    {NULL, 0},
};

const ck_jin_unit ck_units_flops[] = {
    {"f", 1}, {"kf", 1e3}, {"Mf", 1e6}, {"Gf", 1e9}, {NULL, 0},
};

static void pos_of(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Length of the UTF-8 sequence at p (NUL-terminated), or 0 when it is
 * not one: a stray continuation byte, a truncated sequence, an overlong
 * form, a surrogate (U+D800 to U+DFFF) or a code point past U+10FFFF. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0; /* a continuation byte, or a lead byte no valid text has */
    }
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) /* the NUL at the end too: never read past it */
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* The first string of a JSON text (keys included, in the order they
 * appear) that cJSON would not keep whole: one with a \u0000 escape,
 * which it cuts at the NUL, or one with bytes that are not UTF-8. Its
 * number among the text's strings (from 0) in *k, where it starts and
 * ends (its quotes) in *at and *end, what is wrong in *why; 0 when there
 * is none. The text is one cJSON parsed. */
static int bad_string(const char *text, size_t *k, const char **at, const char **end,
                      const char **why)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t n = 0; *p; p++) {
        if (*p != '"')
            continue; /* outside strings, only a string opens with a quote */
        const unsigned char *open = p++;
        const char *wrong = NULL;
        while (*p && *p != '"') {
            if (*p == '\\') {
                p++;
                if (*p == 'u' && !wrong && p[1] == '0' && p[2] == '0' && p[3] == '0' &&
                    p[4] == '0')
                    wrong = "a \\u0000 (NUL) would cut it short";
                if (*p)
                    p++;
                continue;
            }
            size_t len = utf8_len(p);
            if (!len) {
                if (!wrong)
                    wrong = "it holds bytes that are not UTF-8";
                len = 1;
            }
            p += len;
        }
        if (wrong) {
            *k = n;
            *at = (const char *)open;
            *end = (const char *)p;
            *why = wrong;
            return 1;
        }
        n++;
        if (!*p)
            break;
    }
    return 0;
}

/* Walks v's strings in the order they appear in the text (an object's
 * keys before their values), with j's path at each, to the k-th (*seen
 * counts them); 1 when found, with j->path where it is and *is_key. */
static int find_string(ck_jin *j, const cJSON *v, size_t k, size_t *seen, int *is_key)
{
    if (cJSON_IsString(v))
        return (*seen)++ == k;
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        size_t saved;
        if (cJSON_IsObject(v)) {
            if ((*seen)++ == k) {
                *is_key = 1;
                return 1;
            }
            saved = ck_jin_push_key(j, c->string);
        } else {
            saved = ck_jin_push_index(j, i);
        }
        if (find_string(j, c, k, seen, is_key))
            return 1;
        ck_jin_pop(j, saved);
    }
    return 0;
}

cJSON *ck_jin_parse(ck_jin *j, const char *text)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        int line, col;
        pos_of(text, end ? end : text, &line, &col);
        snprintf(j->err, sizeof(j->err), "%s: line %d, column %d: invalid JSON", j->file,
                 line, col);
        j->failed = 1;
        return NULL;
    }
    /* Every string the file holds is text: cut short by a \u0000, or not
     * UTF-8, it would be checked as one thing and written (run.json, the
     * reports) as another. */
    size_t k, seen = 0;
    const char *at, *stop, *why;
    if (bad_string(text, &k, &at, &stop, &why)) {
        int is_key = 0;
        size_t saved = strlen(j->path);
        if (!find_string(j, root, k, &seen, &is_key))
            ck_jin_pop(j, saved); /* cannot be: cJSON read the same strings */
        /* the string as written, its bytes past ASCII as \\xNN, cut at 80 */
        char got[100];
        size_t o = 0;
        const unsigned char *p = (const unsigned char *)at;
        for (; p <= (const unsigned char *)stop && *p && o < 80; p++)
            o += (size_t)snprintf(got + o, sizeof(got) - o, *p < 0x80 ? "%c" : "\\x%02x", *p);
        if (p <= (const unsigned char *)stop && *p)
            snprintf(got + o, sizeof(got) - o, "...");
        ck_jin_fail(j, "expected %s of UTF-8 text without \\u0000, got %s: %s",
                    is_key ? "a key" : "a string", got, why);
        ck_jin_pop(j, saved);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

size_t ck_jin_push_key(ck_jin *j, const char *key)
{
    size_t saved = strlen(j->path);
    snprintf(j->path + saved, sizeof(j->path) - saved, "%s%s", saved ? "." : "", key);
    return saved;
}

size_t ck_jin_push_index(ck_jin *j, int i)
{
    size_t saved = strlen(j->path);
    snprintf(j->path + saved, sizeof(j->path) - saved, "[%d]", i);
    return saved;
}

void ck_jin_pop(ck_jin *j, size_t saved)
{
    j->path[saved] = 0;
}

int ck_jin_fail(ck_jin *j, const char *fmt, ...)
{
    if (j->failed)
        return CK_EINVAL;
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char raw[sizeof(j->err)];
    snprintf(raw, sizeof(raw), "%s: %s: %s", j->file, j->path[0] ? j->path : "(top level)", msg);
    /* One line, whatever the file holds: control characters are escaped. */
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 5 < sizeof(j->err); p++) {
        if (*p >= 0x20 && *p != 0x7f)
            j->err[o++] = (char)*p;
        else if (*p == '\n')
            o += (size_t)snprintf(j->err + o, sizeof(j->err) - o, "\\n");
        else
            o += (size_t)snprintf(j->err + o, sizeof(j->err) - o, "\\x%02x", *p);
    }
    j->err[o] = 0;
    j->failed = 1;
    return CK_EINVAL;
}

void ck_jin_describe(const cJSON *v, char *buf, size_t len)
{
    if (!v)
        snprintf(buf, len, "nothing");
    else if (cJSON_IsString(v))
        snprintf(buf, len, "\"%.60s\"", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(buf, len, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, len, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, len, "an array");
    else
        snprintf(buf, len, "an object");
}

int ck_jin_object(ck_jin *j, const cJSON *obj, const char *const *allowed)
{
    if (j->failed)
        return CK_EINVAL;
    if (!cJSON_IsObject(obj)) {
        char got[96];
        ck_jin_describe(obj, got, sizeof(got));
        return ck_jin_fail(j, "expected an object, got %s", got);
    }
    for (const cJSON *c = obj->child; c; c = c->next) {
        int known = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, c->string) == 0)
                known = 1;
        if (!known) {
            char list[400] = "";
            size_t off = 0;
            for (const char *const *a = allowed; *a && off < sizeof(list); a++)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
                                        a == allowed ? "" : ", ", *a);
            size_t saved = ck_jin_push_key(j, c->string);
            int rc = ck_jin_fail(j, "unknown key (expected one of: %s)", list);
            ck_jin_pop(j, saved);
            return rc;
        }
        for (const cJSON *d = c->next; d; d = d->next)
            if (strcmp(c->string, d->string) == 0) {
                size_t saved = ck_jin_push_key(j, c->string);
                int rc = ck_jin_fail(j, "key given twice");
                ck_jin_pop(j, saved);
                return rc;
            }
    }
    return CK_OK;
}

/* Fetches obj[key]; 1 present, 0 absent (fails if required), -1 failed. */
static int fetch(ck_jin *j, const cJSON *obj, const char *key, int required,
                 const cJSON **v, size_t *saved)
{
    if (j->failed)
        return -1;
    *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *saved = ck_jin_push_key(j, key);
    if (!*v) {
        if (required) {
            ck_jin_fail(j, "missing (required)");
            ck_jin_pop(j, *saved);
            return -1;
        }
        ck_jin_pop(j, *saved);
        return 0;
    }
    return 1;
}

static int done(ck_jin *j, size_t saved, int rc)
{
    ck_jin_pop(j, saved);
    return rc;
}

int ck_jin_int(ck_jin *j, const cJSON *obj, const char *key, int required,
               int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)min || d > (double)max) {
        char got[96];
        ck_jin_describe(v, got, sizeof(got));
        return done(j, saved,
                    ck_jin_fail(j, "expected an integer from %lld to %lld, got %s",
                                (long long)min, (long long)max, got));
    }
    *out = (int64_t)d;
    return done(j, saved, CK_OK);
}

int ck_jin_number(ck_jin *j, const cJSON *obj, const char *key, int required,
                  double min, double max, double *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= min && v->valuedouble <= max)) {
        char got[96];
        ck_jin_describe(v, got, sizeof(got));
        return done(j, saved,
                    ck_jin_fail(j, "expected a number from %g to %g, got %s", min, max, got));
    }
    *out = v->valuedouble;
    return done(j, saved, CK_OK);
}

int ck_jin_bool(ck_jin *j, const cJSON *obj, const char *key, int required, int *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    if (!cJSON_IsBool(v)) {
        char got[96];
        ck_jin_describe(v, got, sizeof(got));
        return done(j, saved, ck_jin_fail(j, "expected true or false, got %s", got));
    }
    *out = cJSON_IsTrue(v);
    return done(j, saved, CK_OK);
}

int ck_jin_string(ck_jin *j, const cJSON *obj, const char *key, int required,
                  char *out, size_t cap)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap || !v->valuestring[0]) {
        char got[96];
        ck_jin_describe(v, got, sizeof(got));
        return done(j, saved,
                    ck_jin_fail(j, "expected a non-empty string of at most %zu bytes, got %s",
                                cap - 1, got));
    }
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return done(j, saved, CK_OK);
}

int ck_jin_enum(ck_jin *j, const cJSON *obj, const char *key, int required,
                const char *const *choices, int *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    if (cJSON_IsString(v))
        for (int i = 0; choices[i]; i++)
            if (strcmp(choices[i], v->valuestring) == 0) {
                *out = i;
                return done(j, saved, CK_OK);
            }
    char list[300] = "";
    size_t off = 0;
    for (int i = 0; choices[i] && off < sizeof(list); i++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s\"%s\"", i ? ", " : "",
                                choices[i]);
    char got[96];
    ck_jin_describe(v, got, sizeof(got));
    return done(j, saved, ck_jin_fail(j, "expected one of %s, got %s", list, got));
}

int ck_jin_parse_duration(const char *text, int64_t *ns)
{
    static const struct {
        const char *u;
        double mult;
    } units[] = {
        {"ns", 1},        {"us", 1e3},         {"µs", 1e3},     {"ms", 1e6},
        {"s", 1e9},       {"sec", 1e9},        {"secs", 1e9},   {"second", 1e9},
        {"seconds", 1e9}, {"min", 60e9},       {"minute", 60e9}, {"minutes", 60e9},
        {"h", 3600e9},    {"hour", 3600e9},    {"hours", 3600e9},
    };
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v))
        return CK_EINVAL;
    while (isspace((unsigned char)*end))
        end++;
    size_t len = strlen(end);
    while (len && isspace((unsigned char)end[len - 1]))
        len--;
    double mult = 1e6; /* bare numbers are milliseconds */
    if (len) {
        mult = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (strlen(units[i].u) == len && strncmp(units[i].u, end, len) == 0)
                mult = units[i].mult;
        if (mult == 0)
            return CK_EINVAL;
    }
    double r = v * mult;
    if (r > 9.2e18 || r < -9.2e18)
        return CK_EINVAL;
    *ns = (int64_t)llround(r);
    return CK_OK;
}

int ck_jin_duration(ck_jin *j, const cJSON *obj, const char *key, int required,
                    int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    return done(j, saved, ck_jin_duration_value(j, v, min, max, out));
}

int ck_jin_duration_value(ck_jin *j, const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
    int64_t ns = 0;
    int ok = 0;
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) < 9e12) {
        ns = (int64_t)llround(v->valuedouble * 1e6);
        ok = 1;
    } else if (cJSON_IsString(v)) {
        ok = ck_jin_parse_duration(v->valuestring, &ns) == CK_OK;
    }
    if (!ok || ns < min || ns > max) {
        char got[96];
        ck_jin_describe(v, got, sizeof(got));
        return ck_jin_fail(j,
                           "expected a duration from %g ms to %g ms (\"100 ms\", \"2 s\", or "
                           "a number of ms), got %s",
                           (double)min / 1e6, (double)max / 1e6, got);
    }
    *out = ns;
    return CK_OK;
}

int ck_jin_quantity(ck_jin *j, const cJSON *obj, const char *key, int required,
                    const ck_jin_unit *units, const char *what, double min, double max,
                    double *out)
{
    const cJSON *v;
    size_t saved;
    int r = fetch(j, obj, key, required, &v, &saved);
    if (r <= 0)
        return r < 0 ? CK_EINVAL : CK_OK;
    double x = NAN;
    if (cJSON_IsNumber(v)) {
        x = v->valuedouble;
    } else if (cJSON_IsString(v)) {
        char *end;
        errno = 0;
        double n = strtod(v->valuestring, &end);
        if (end != v->valuestring && errno == 0) {
            while (isspace((unsigned char)*end))
                end++;
            if (!*end)
                x = n;
            for (const ck_jin_unit *u = units; u->name && isnan(x); u++)
                if (strcmp(u->name, end) == 0)
                    x = n * u->mult;
        }
    }
    if (!(x >= min && x <= max)) {
        char got[96], units_list[200] = "";
        size_t off = 0;
        for (const ck_jin_unit *u = units; u->name && off < sizeof(units_list); u++)
            off += (size_t)snprintf(units_list + off, sizeof(units_list) - off, "%s%s",
                                    u == units ? "" : " ", u->name);
        ck_jin_describe(v, got, sizeof(got));
        return done(j, saved,
                    ck_jin_fail(j, "expected %s from %g to %g (units: %s), got %s", what, min,
                                max, units_list, got));
    }
    *out = x;
    return done(j, saved, CK_OK);
}

int ck_jin_open_file(const char *path, struct stat *st, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    if (fstat(fd, st)) {
        int e = errno;
        *why = strerror(e);
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        *why = S_ISDIR(st->st_mode)    ? "a directory, not a regular file"
               : S_ISFIFO(st->st_mode) ? "a FIFO, not a regular file"
               : S_ISCHR(st->st_mode)  ? "a character device, not a regular file"
               : S_ISBLK(st->st_mode)  ? "a block device, not a regular file"
               : S_ISSOCK(st->st_mode) ? "a socket, not a regular file"
                                       : "not a regular file";
        close(fd);
        errno = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
        int e = errno;
        *why = strerror(e);
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

char *ck_jin_read(const char *path, size_t max, const char *what, int *rc, char *err,
                  size_t errlen)
{
    char dummy[8];
    int rc_dummy;
    if (!rc)
        rc = &rc_dummy;
    *rc = CK_EIO;
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    struct stat st;
    const char *why;
    int fd = ck_jin_open_file(path, &st, &why);
    if (fd < 0) {
        if (errno == EINVAL || errno == EISDIR) {
            snprintf(err, errlen, "%s: %s (%s was expected)", path, why, what);
            *rc = CK_EINVAL;
        } else {
            snprintf(err, errlen, "%s: cannot open: %s", path, why);
        }
        return NULL;
    }
    FILE *f = (uint64_t)st.st_size <= max ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        if ((uint64_t)st.st_size > max) {
            snprintf(err, errlen, "%s: larger than %zu MiB: not %s", path, max >> 20, what);
            *rc = CK_EINVAL;
        } else {
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        }
        return NULL;
    }
    size_t cap = 65536, len = 0, n;
    char *text = malloc(cap);
    while (text && (n = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            if (cap > max) { /* it grew while being read */
                fclose(f);
                free(text);
                snprintf(err, errlen, "%s: larger than %zu MiB: not %s", path, max >> 20, what);
                *rc = CK_EINVAL;
                return NULL;
            }
            char *t = realloc(text, cap * 2);
            if (!t) {
                free(text);
                text = NULL;
                break;
            }
            text = t;
            cap *= 2;
        }
    }
    int rd_err = ferror(f), e = errno;
    fclose(f);
    if (!text || rd_err) {
        snprintf(err, errlen, "%s: cannot read: %s", path, text ? strerror(e) : "out of memory");
        free(text);
        return NULL;
    }
    text[len] = 0;
    *rc = CK_OK;
    if (strlen(text) != len) {
        free(text);
        snprintf(err, errlen, "%s: contains a NUL byte: not %s", path, what);
        *rc = CK_EINVAL;
        return NULL;
    }
    return text;
}
