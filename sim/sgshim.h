/*
 * sgshim.h - the few SimGrid calls C cannot make safely (SIMGRID-NOTES.md,
 * traps 1 and 2): blocking transfers that report a failed peer as an error
 * code instead of throwing a C++ exception through C frames (to a mailbox,
 * or from host to host), loading a platform file that SimGrid refuses, and
 * a link's sharing policy.
 */
#ifndef CK_SGSHIM_H
#define CK_SGSHIM_H

#include <stddef.h>

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one payload. Returns 0, or -1 when the transfer failed. */
int ck_sg_get(sg_mailbox_t mb, void **payload);

/* Sends one payload of `size` simulated bytes and waits until it is received.
 * Returns 0, or -1 when the transfer failed (the payload is then not received). */
int ck_sg_put(sg_mailbox_t mb, void *payload, long size);

/* Sends `size` simulated bytes from host `from` to host `to` over the
 * platform's route (SimGrid's flow model), no mailbox or receiver, and
 * waits until they arrived. Returns 0, or -1 when the transfer failed (a
 * host at either end went off). */
int ck_sg_sendto(sg_host_t from, sg_host_t to, double size);

/* A link's sharing policy: 0 FATPIPE, 1 SHARED, 2 and up anything else
 * (SimGrid's SharingPolicy values). */
int ck_sg_link_policy(const_sg_link_t link);

/* Loads a platform file. Returns 0, or -1 with SimGrid's reason (one line)
 * in err when it throws (no such file, not XML, an unknown link...). */
int ck_sg_load_platform(const char *file, char *err, size_t errlen);

/* The link of that name, or NULL (sg_link_by_name aborts on unknown names). */
sg_link_t ck_sg_link_or_null(const char *name);

#ifdef __cplusplus
}
#endif

#endif
