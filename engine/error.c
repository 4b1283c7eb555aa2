#include "error.h"

const char *ck_strerror(int rc)
{
    switch (rc) {
    case CK_OK:
        return "success";
#define CK_ERR_MSG(name, code, msg)                                            \
    case CK_##name:                                                            \
        return msg;
        CK_ERRNO_MAP(CK_ERR_MSG)
#undef CK_ERR_MSG
    }
    return "unknown error";
}

const char *ck_errname(int rc)
{
    switch (rc) {
    case CK_OK:
        return "CK_OK";
#define CK_ERR_NAME(name, code, msg)                                           \
    case CK_##name:                                                            \
        return "CK_" #name;
        CK_ERRNO_MAP(CK_ERR_NAME)
#undef CK_ERR_NAME
    }
    return "CK_EUNKNOWN";
}
