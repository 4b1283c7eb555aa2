#include "sgshim.h"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>

extern "C" int ck_sg_get(sg_mailbox_t mb, void **payload)
{
    try {
        *payload = mb->get<void>();
        return 0;
    } catch (const simgrid::NetworkFailureException &) {
        return -1;
    } catch (const simgrid::TimeoutException &) {
        return -1;
    }
}

extern "C" int ck_sg_put(sg_mailbox_t mb, void *payload, long size)
{
    try {
        mb->put(payload, size);
        return 0;
    } catch (const simgrid::NetworkFailureException &) {
        return -1;
    } catch (const simgrid::TimeoutException &) {
        return -1;
    }
}

extern "C" sg_link_t ck_sg_link_or_null(const char *name)
{
    return simgrid::s4u::Link::by_name_or_null(name);
}
