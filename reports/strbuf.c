#include "strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ck_sb_free(ck_sb *b)
{
    free(b->p);
    *b = (ck_sb){0};
}

static int reserve(ck_sb *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void ck_sb_putn(ck_sb *b, const char *s, size_t n)
{
    if (reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void ck_sb_puts(ck_sb *b, const char *s)
{
    ck_sb_putn(b, s, strlen(s));
}

void ck_sb_printf(ck_sb *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        ck_sb_putn(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ck_sb_html(ck_sb *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            ck_sb_puts(b, "&amp;");
            break;
        case '<':
            ck_sb_puts(b, "&lt;");
            break;
        case '>':
            ck_sb_puts(b, "&gt;");
            break;
        case '"':
            ck_sb_puts(b, "&quot;");
            break;
        case '\'':
            ck_sb_puts(b, "&#39;");
            break;
        default:
            ck_sb_putn(b, s, 1);
        }
    }
}

void ck_sb_csv(ck_sb *b, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        ck_sb_puts(b, s);
        return;
    }
    ck_sb_putn(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"')
            ck_sb_putn(b, "\"", 1);
        ck_sb_putn(b, s, 1);
    }
    ck_sb_putn(b, "\"", 1);
}

void ck_sb_md(ck_sb *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            ck_sb_puts(b, "\\|");
        else if (*s == '\n' || *s == '\r')
            ck_sb_putn(b, " ", 1);
        else
            ck_sb_putn(b, s, 1);
    }
}

int ck_sb_write(const ck_sb *b, const char *path)
{
    if (b->oom) {
        errno = ENOMEM;
        return -1;
    }
    char tmp[1200];
    if (snprintf(tmp, sizeof(tmp), "%s.part", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int e = 0;
    if (b->len && fwrite(b->p, 1, b->len, f) != b->len)
        e = errno ? errno : EIO;
    if (fclose(f) && !e)
        e = errno;
    if (!e && rename(tmp, path))
        e = errno;
    if (e) {
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}
