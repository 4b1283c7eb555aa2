/*
 * invcheck.h - unit tests of the check functions (invariant.h): a valid
 * object passes its check; one field set wrong breaks it with the number
 * of the invariant it stands for; put back, the check passes again.
 */
#ifndef CK_INVCHECK_H
#define CK_INVCHECK_H

#include <string.h>

#include "error.h"
#include "invariant.h"

/* rc and v say invariant num of module broke. */
static inline void inv_broken(int rc, const ck_inv *v, const char *module, int num)
{
    if (rc != CK_EINVARIANT || !v->module || strcmp(v->module, module) || v->num != num)
        fail_msg("expected %s (%d) broken, got rc %d, %s (%d): %s", module, num, rc,
                 v->module ? v->module : "-", v->num, v->what);
}

/* Sets lvalue lv to val; the check expression chk (which reports into the
 * ck_inv named V) must fail with invariant num of module; lv is put back
 * and chk must pass again. */
#define INV_BREAK(lv, val, chk, module, num)                                                      \
    do {                                                                                          \
        __typeof__(lv) inv_keep_ = (lv);                                                          \
        ck_inv V;                                                                                 \
        memset(&V, 0, sizeof(V));                                                                 \
        (lv) = (val);                                                                             \
        inv_broken((chk), &V, (module), (num));                                                   \
        (lv) = inv_keep_;                                                                         \
        memset(&V, 0, sizeof(V));                                                                 \
        assert_int_equal((chk), 0);                                                               \
    } while (0)

#endif
