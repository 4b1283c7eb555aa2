/*
 * simgrid.h - the SimGrid backend as a host for any nodes.
 *
 * ck_backend_simgrid runs a job on it (backend/backend.h); tests use it
 * to put a single node of their own on a simulated platform. SimGrid
 * allows one simulation per process.
 *
 *   ck_sim *s = ck_sim_new(platform.xml, "CM02", store_dir, verbose, ...);
 *   ck_platform *p = ck_sim_endpoint(s, ep, "tm0", 0);   per endpoint
 *   ck_sim_attach(s, ep, node, "name", ends_run);        per endpoint
 *   ck_sim_run_all(s, 0);                                until done
 *   ck_sim_del(s);
 */
#ifndef CK_SIMGRID_H
#define CK_SIMGRID_H

#include "backend.h"
#include "node.h"
#include "platform.h"

/* The backend: a job on a simulated cluster (backend.h). */
extern const ck_backend_ops ck_backend_simgrid;

typedef struct ck_sim ck_sim;

/* Starts SimGrid on a platform file. NULL on error (err says why). */
ck_sim *ck_sim_new(const char *platform_file, const char *network_model, const char *store_dir,
                   int verbose, char *err, size_t errlen);

/* The directory the sinks write to (made if missing), as a transactional
 * file sink (io/sinkfs.h); without it, output fails with CK_EIO. 0 or
 * CK_EIO. */
int ck_sim_set_sink_dir(ck_sim *s, const char *dir);

/* Creates endpoint ep on a host (replacing an earlier incarnation of it); its
 * platform handle lives as long as s. NULL if the host is unknown. */
ck_platform *ck_sim_endpoint(ck_sim *s, uint32_t ep, const char *host, int host_index);

/* Runs node at endpoint ep. When a node with ends_run finishes, every other
 * actor is stopped and the simulation ends. */
int ck_sim_attach(ck_sim *s, uint32_t ep, ck_node node, const char *name, int ends_run);

/* Runs the simulation to its end, or when limit_s > 0 at most to limit_s of
 * simulated time, where every actor is stopped; returns the wall-clock
 * seconds it took. */
double ck_sim_run_all(ck_sim *s, double limit_s);

/* 1 when ck_sim_run_all stopped the simulation at its limit. */
int ck_sim_reached_limit(const ck_sim *s);

/* Fills r's platform figures: engine messages sent and their bytes,
 * simulated transfers (batches of frames between hosts, and store
 * answers), and the task managers' network buffer pools. */
void ck_sim_stats(const ck_sim *s, ck_backend_result *r);
void ck_sim_del(ck_sim *s);

#endif
