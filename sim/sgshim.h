/*
 * sgshim.h - the few SimGrid calls C cannot make safely (SIMGRID-NOTES.md,
 * traps 1 and 2): blocking transfers that report a failed peer as an error
 * code instead of throwing a C++ exception through C frames.
 */
#ifndef CK_SGSHIM_H
#define CK_SGSHIM_H

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one payload. Returns 0, or -1 when the transfer failed. */
int ck_sg_get(sg_mailbox_t mb, void **payload);

/* Sends one payload of `size` simulated bytes and waits until it is received.
 * Returns 0, or -1 when the transfer failed (the payload is then not received). */
int ck_sg_put(sg_mailbox_t mb, void *payload, long size);

/* The link of that name, or NULL (sg_link_by_name aborts on unknown names). */
sg_link_t ck_sg_link_or_null(const char *name);

#ifdef __cplusplus
}
#endif

#endif
