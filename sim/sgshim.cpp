#include "sgshim.h"

#include <simgrid/Exception.hpp>
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
