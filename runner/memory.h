/*
 * memory.h - what a run will hold in memory, estimated before it starts,
 * and what the machine has.
 *
 * A run keeps its whole input (the generated topic), what its sinks
 * committed and, to check it, a 32-byte tuple per expected and per received
 * output record, all at once, and state per channel between subtasks (a
 * hash edge has producers x consumers of them). The estimate adds these up
 * from the scenario (records = rate x duration) so that a run that cannot
 * fit is refused before it starts instead of being killed by the kernel
 * part-way.
 */
#ifndef CK_MEMORY_H
#define CK_MEMORY_H

#include "scenario.h"

typedef struct ck_mem_estimate {
    double records;   /* input records the workload will generate (its mean) */
    double outputs;   /* output records, over every sink (at most) */
    double bytes;     /* memory the run needs, about */
} ck_mem_estimate;

/* Estimates the memory a run of the scenario needs. */
void ck_mem_estimate_run(const ck_scenario *sc, ck_mem_estimate *e);

/* The machine's physical memory in bytes (0 when unknown). */
double ck_mem_machine(void);

#endif
