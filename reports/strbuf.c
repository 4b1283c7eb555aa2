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

/* A decimal number as a spreadsheet reads one: [+-]digits[.digits][e[+-]digits]. */
static int csv_number(const char *s)
{
    const char *p = s + (*s == '+' || *s == '-');
    int digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        p += *p == '+' || *p == '-';
        if (!(*p >= '0' && *p <= '9'))
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == 0;
}

void ck_sb_csv(ck_sb *b, const char *s)
{
    if (!s)
        return;
    int formula = strchr("=+-@\t\r", s[0]) && s[0] && !csv_number(s);
    if (!formula && !strpbrk(s, ",\"\r\n")) {
        ck_sb_puts(b, s);
        return;
    }
    ck_sb_puts(b, formula ? "\"'" : "\"");
    for (; *s; s++) {
        if (*s == '"')
            ck_sb_putn(b, "\"", 1);
        ck_sb_putn(b, s, 1);
    }
    ck_sb_putn(b, "\"", 1);
}

static void md_text(ck_sb *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            ck_sb_putn(b, " ", 1);
        else if (strchr("\\`*_[]<>|&~$", c))
            ck_sb_printf(b, "\\%c", c);
        else
            ck_sb_putn(b, s, 1);
    }
}

void ck_sb_md(ck_sb *b, const char *s)
{
    md_text(b, s);
}

void ck_sb_md_block(ck_sb *b, const char *s)
{
    if (!s)
        return;
    /* Leading blanks only indent (four make a code block): left out. */
    while (*s && ((unsigned char)*s <= 0x20 || *s == 0x7f))
        s++;
    size_t d = strspn(s, "0123456789"), h = strspn(s, "#");
    char after = s[0] ? s[1] : 0;
    int ends = after == 0 || after == ' ' || (unsigned char)after < 0x20;
    int heading = h && h <= 6 && (s[h] == 0 || s[h] == ' ' || (unsigned char)s[h] < 0x20);
    if (heading || ((s[0] == '-' || s[0] == '+') && ends) ||
        ((s[0] == '-' || s[0] == '=') && strspn(s, "-= ") == strlen(s))) {
        /* a heading, a list item, a setext underline or a thematic break */
        ck_sb_printf(b, "\\%c", s[0]);
        s++;
    } else if (d && d <= 9 && (s[d] == '.' || s[d] == ')')) {
        /* an ordered list item */
        ck_sb_putn(b, s, d);
        ck_sb_printf(b, "\\%c", s[d]);
        s += d + 1;
    }
    md_text(b, s);
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
