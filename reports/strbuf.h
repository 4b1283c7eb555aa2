/*
 * strbuf.h - a growing string, for the text reports/ writes (HTML, SVG,
 * Markdown, CSV).
 *
 * Invariant: p is NUL-terminated whenever len > 0; after a failed
 * allocation the buffer keeps what it had and oom stays set, so a writer
 * appends freely and checks once at the end.
 */
#ifndef CK_STRBUF_H
#define CK_STRBUF_H

#include <stddef.h>

typedef struct ck_sb {
    char *p;
    size_t len, cap;
    int oom; /* an append failed: out of memory */
} ck_sb;

void ck_sb_free(ck_sb *b);

void ck_sb_puts(ck_sb *b, const char *s);
void ck_sb_putn(ck_sb *b, const char *s, size_t n);
void ck_sb_printf(ck_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* s escaped for HTML text and attribute values (& < > " '). */
void ck_sb_html(ck_sb *b, const char *s);

/*
 * s as one CSV field: quoted when it holds a comma, a quote or a line
 * break. A field a spreadsheet would take for a formula (OWASP's CSV
 * injection rule: it starts with =, +, -, @, a tab or a carriage return)
 * is written as text: a single quote before it, and quoted; a number
 * ("-1.5", "+2e3") stays a number.
 */
void ck_sb_csv(ck_sb *b, const char *s);

/*
 * s as literal text within a line of Markdown (a table cell, a heading,
 * after a list marker): every character CommonMark or GitHub's Markdown
 * would read as markup (\ ` * _ [ ] < > | & ~ $) is backslash-escaped, so
 * no link, image, raw HTML, code span, emphasis or math comes of it and
 * a | does not end a cell; line breaks and other control characters
 * become spaces.
 */
void ck_sb_md(ck_sb *b, const char *s);

/* The same for text that starts a line (a paragraph, a list item's text):
 * also a first character that would open a block (# - + = > a digit's
 * "1." or "1)") is escaped. */
void ck_sb_md_block(ck_sb *b, const char *s);

/* Writes the buffer to path (through path.part renamed into place).
 * Returns 0, or -1 with errno set (ENOMEM when oom). */
int ck_sb_write(const ck_sb *b, const char *path);

#endif
