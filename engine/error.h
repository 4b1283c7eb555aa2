/*
 * error.h - error codes of chandy.
 *
 * Every fallible function returns 0 (CK_OK) or a negative code below; the
 * table is the single source of the codes and their messages (the libuv
 * UV_ERRNO_MAP habit). Codes from CK_EFATAL_BEGIN down are fatal to the
 * object that returned them: it must be torn down, not retried.
 */
#ifndef CK_ERROR_H
#define CK_ERROR_H

#define CK_ERRNO_MAP(X)                                                        \
    X(ENOMEM, -1, "out of memory")                                             \
    X(EINVAL, -2, "invalid argument")                                          \
    X(ERANGE, -3, "value out of range")                                        \
    X(EAGAIN, -4, "resource temporarily unavailable")                          \
    X(ENOTFOUND, -5, "not found")                                              \
    X(EEXIST, -6, "already exists")                                            \
    X(ESTATE, -7, "operation not allowed in this state")                       \
    X(ETOOBIG, -8, "too large")                                                \
    X(EIO, -9, "input/output error")                                           \
    X(ECLOSED, -10, "closed")                                                  \
    X(EUNREACH, -11, "peer unreachable")                                       \
    X(ENOBUFS, -12, "insufficient network buffers")                            \
    X(ECORRUPT, -100, "malformed or corrupt data")                             \
    X(ECHECKSUM, -101, "checksum mismatch")                                    \
    X(EPROTO, -102, "protocol violation")                                      \
    X(EINTERNAL, -103, "internal error")                                       \
    X(EAUTH, -104, "authentication failed")                                    \
    X(EINVARIANT, -105, "invariant violated")

enum {
    CK_OK = 0,
#define CK_ERR_ENUM(name, code, msg) CK_##name = (code),
    CK_ERRNO_MAP(CK_ERR_ENUM)
#undef CK_ERR_ENUM
};

/* Codes at or below this one are fatal to the object that returned them. */
#define CK_EFATAL_BEGIN (-100)
#define ck_err_is_fatal(rc) ((rc) <= CK_EFATAL_BEGIN)

/* Returns a static message for an error code; never NULL. */
const char *ck_strerror(int rc);

/* Returns the symbolic name ("CK_ENOMEM") of an error code; never NULL. */
const char *ck_errname(int rc);

#endif
