#include "sgshim.h"

#include <cstdio>
#include <exception>

#include <simgrid/Exception.hpp>
#include <simgrid/engine.h>
#include <simgrid/s4u/Comm.hpp>
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

extern "C" int ck_sg_sendto(sg_host_t from, sg_host_t to, double size)
{
    try {
        simgrid::s4u::Comm::sendto(from, to, (uint64_t)size);
        return 0;
    } catch (const simgrid::NetworkFailureException &) {
        return -1;
    } catch (const simgrid::TimeoutException &) {
        return -1;
    }
}

extern "C" int ck_sg_link_policy(const_sg_link_t link)
{
    return (int)link->get_sharing_policy();
}

extern "C" sg_link_t ck_sg_link_or_null(const char *name)
{
    return simgrid::s4u::Link::by_name_or_null(name);
}

extern "C" int ck_sg_load_platform(const char *file, char *err, size_t errlen)
{
    try {
        simgrid_load_platform(file);
        return 0;
    } catch (const std::exception &e) {
        /* SimGrid's message often names the file already; keep one line. */
        std::snprintf(err, errlen, "%s", e.what());
    } catch (...) {
        std::snprintf(err, errlen, "SimGrid cannot load it");
    }
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return -1;
}
