#include "invariant.h"

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int ck_inv_fail(ck_inv *v, const char *module, int num, const char *fmt, ...)
{
    if (!v)
        return CK_EINVARIANT;
    v->module = module;
    v->num = num;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->what, sizeof(v->what), fmt, ap);
    va_end(ap);
    return CK_EINVARIANT;
}

int ck_inv_where(ck_inv *v, const char *fmt, ...)
{
    if (!v)
        return CK_EINVARIANT;
    char where[160], old[sizeof(v->what)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof(where), fmt, ap);
    va_end(ap);
    memcpy(old, v->what, sizeof(old));
    snprintf(v->what, sizeof(v->what), "%s: %s", where, old);
    return CK_EINVARIANT;
}
