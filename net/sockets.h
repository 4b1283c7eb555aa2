/*
 * sockets.h - the socket backend: a job on one process per host of this
 * machine, talking over TCP on loopback (net/sockets.c says how).
 */
#ifndef CK_SOCKETS_H
#define CK_SOCKETS_H

#include "backend.h"

extern const ck_backend_ops ck_backend_sockets;

#endif
