/*
 * simplatform.h - the SimGrid platform of a scenario's cluster.
 *
 * Hosts: tm0 .. tm<N-1> (the task managers: `cores` cores of `speed`
 * flops/s each), jm (the job manager) and store (the durable object store,
 * with one disk `store_disk`). Every host has its own link into a
 * non-blocking switch (bandwidth and latency from the scenario; the store's
 * link has its own); a route between two hosts crosses both hosts' links.
 * Each host also has a loopback for traffic between its own subtasks. The
 * zone is SimGrid's Cluster (a star in 3.32: links attached with host_link),
 * so that the file grows with the hosts, not with their pairs.
 *
 * A host that a slow_cpu event slows gets one extra power state (pstate)
 * per distinct factor, after its normal speed (pstate 0).
 *
 * A scenario may bring its own platform file instead: it must declare the
 * same host names and the disk (and the pstates and links its events use).
 */
#ifndef CK_SIMPLATFORM_H
#define CK_SIMPLATFORM_H

#include <stdio.h>

#include "faults.h"

/* Writes the platform of cluster c with `ntm` task managers, and the
 * power states the slow_cpu faults need, to f. Returns 0 or CK_EIO. */
int ck_simplat_write(FILE *f, const ck_cluster_spec *c, const ck_fault *faults, int nfaults,
                     int ntm);

#endif
