/*
 * sharedreg.h - the shared-state registry (Flink's SharedStateRegistry): a
 * reference count per file under shared/ that incremental checkpoints
 * refer to.
 *
 * The coordinator takes a reference for every shared handle of every
 * acknowledgement it accepts, and drops a checkpoint's references when the
 * checkpoint is discarded (subsumed past num-retained, or failed); a file
 * whose count falls to zero is deleted from the store (a file a subtask
 * may still append to, once it may not: coordinator.h, seg_live). A file
 * a completed, retained checkpoint refers to is never deleted.
 *
 * Invariants (ck_sreg_check):
 *   (1) a key is in the table iff its count is positive;
 *   (2) the table holds n keys, at most half as many as it has slots (a
 *       power of two: linear probing);
 *   (3) every key is found from its hash: no empty slot lies between the
 *       slot its hash names and the slot it is in.
 * What the counts must be (the references the coordinator's records hold)
 * is the coordinator's invariant (coordinator.h).
 */
#ifndef CK_SHAREDREG_H
#define CK_SHAREDREG_H

#include "common.h"
#include "invariant.h"

typedef struct ck_sreg {
    struct ck_sreg_slot *slots;
    uint32_t cap, n;
} ck_sreg;

/* Takes a reference to key. Returns its new count, or 0 when out of memory. */
uint32_t ck_sreg_ref(ck_sreg *r, const char *key);
/* Drops one; returns the count left (0: unknown, or the last one went). */
uint32_t ck_sreg_unref(ck_sreg *r, const char *key);
/* The count of key (0: not referenced). */
uint32_t ck_sreg_count(const ck_sreg *r, const char *key);
void ck_sreg_free(ck_sreg *r);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_sreg_check(const ck_sreg *r, ck_inv *v);

/* Visits every key with its count, in table order. */
void ck_sreg_foreach(const ck_sreg *r, void (*fn)(void *arg, const char *key, uint32_t count),
                     void *arg);

#endif
