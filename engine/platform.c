#include "platform.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ck_store_entries_free(ck_store_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].key);
    free(e);
}

void ck_logf(ck_platform *p, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    p->ops->log(p, level, line);
}
