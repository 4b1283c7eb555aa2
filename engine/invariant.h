/*
 * invariant.h - what a module's check function reports when one of the
 * invariants its header numbers does not hold.
 *
 * Every stateful module numbers the invariants of its header comment
 * ("(1) ...", "(2) ...", as SQLite's pager.c) and has a check function,
 * ck_<module>_check(const T *, ck_inv *), that verifies each one it can
 * and returns 0, or CK_EINVARIANT with the module, the invariant's number
 * and what it saw in the ck_inv (which may be NULL). A check reads and
 * never writes, so that a run with checks on is the same run as one
 * without: they must cost time only.
 *
 * A node's check (node.h: ck_node_ops.check) calls its modules' checks;
 * backend/drive.c runs it after every step when the run asks for checks
 * (chandy run --check-invariants), and a violation ends the run with one
 * line and exit status CK_EXIT_INVARIANT.
 */
#ifndef CK_INVARIANT_H
#define CK_INVARIANT_H

#include "common.h"

/* The exit status of a run that found an invariant violated (sysexits.h's
 * EX_SOFTWARE: an internal software error). */
#define CK_EXIT_INVARIANT 70

typedef struct ck_inv {
    const char *module; /* whose invariant: "gate", "partition", ... */
    int num;            /* its number in the module's header comment */
    char what[320];     /* what was seen, and where ("channel 3: ...") */
} ck_inv;

/* Records a violation of invariant num of module into v (may be NULL);
 * returns CK_EINVARIANT. */
int ck_inv_fail(ck_inv *v, const char *module, int num, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Puts "<where>: " in front of v->what (a node's check saying which
 * subtask, channel or checkpoint); returns CK_EINVARIANT. */
int ck_inv_where(ck_inv *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shorthand for a check: invariant num of MODULE (a macro the .c file
 * defines) fails with the message unless cond holds. */
#define CK_INV(v, num, cond, ...)                                                                 \
    do {                                                                                          \
        if (!(cond))                                                                              \
            return ck_inv_fail((v), CK_INV_MODULE, (num), __VA_ARGS__);                           \
    } while (0)

#endif
