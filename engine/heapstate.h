/*
 * heapstate.h - the heap keyed-state backend (Flink's "hashmap" backend).
 *
 * One ck_heap holds one keyed state of one operator subtask: a map from
 * (key, namespace) to a fixed-size value, organised by key group as in
 * Flink's StateTable, so that a key group can be snapshotted, moved or
 * dropped as a unit. Each key group is an open-addressing hash table with
 * linear probing and backward-shift deletion.
 *
 * Snapshots are copy-on-write per key group (ck_heap_view_take): a view
 * shares every key group's slot array with the live table; the first write
 * to a shared key group after that copies its array, so the view keeps
 * seeing the state as it was. Taking a view costs O(key groups); the
 * copying is paid only by key groups written while the view lives.
 *
 * Invariants (ck_heap_check):
 *   (1) every entry's key group lies in kgr and is the
 *       group of its key (the caller passes both; the heap trusts that
 *       pairing, and cannot check it);
 *   (2) a table's capacity is a power of two and it is at most 3/4 full;
 *       an empty slot has key length 0; a table holds n entries, and the
 *       heap the sum of them (n), their key lengths summing to key_bytes;
 *   (3) every entry is found from its hash: no empty slot lies between
 *       the slot its hash names and the slot it is in (backward-shift
 *       deletion keeps the chains whole);
 *   (4) a slot array's reference count is 1 (the live table) + the views
 *       that share it; only a table whose array has count 1 is ever
 *       written (priv: known to have count 1);
 *   (5) value pointers returned stay valid until the next put or remove
 *       on the same key group (by construction).
 * ck_heap_check reads every slot: O(entries); ck_heap_check_some, what
 * a run checks after every step, reads them while the heap has at most
 * CK_HEAP_CHECK_SLOTS slots, and beyond that one key group's per call
 * (a different one as the heap changes), checking the sums of (2) only
 * when it reads them all.
 */
#ifndef CK_HEAPSTATE_H
#define CK_HEAPSTATE_H

#include "common.h"
#include "kstate.h"
#include "rng.h"

typedef struct ck_heap_kg {
    uint8_t *slots;
    uint32_t cap, n;
    uint32_t priv; /* known to be the only reference to its slots (no
                    * snapshot view shares them): writes need not look */
} ck_heap_kg;

typedef struct ck_heap {
    ck_kgr kgr;
    size_t vsize, slot_size;
    ck_heap_kg *kgs;
    uint64_t n;         /* entries */
    uint64_t key_bytes; /* sum of key lengths */
} ck_heap;

/* Returns 0, CK_ENOMEM, CK_EINVAL. Values are vsize bytes (<= 64). */
CK_MUST_CHECK
int ck_heap_init(ck_heap *h, ck_kgr kgr, size_t vsize);
void ck_heap_free(ck_heap *h);

/* The value of (key, ns) in key group kg, or NULL. jhash is the key's Java hash. */
void *ck_heap_get(ck_heap *h, int kg, int32_t jhash, const char *key,
                  uint32_t klen, int64_t ns);

/*
 * The value of (key, ns), inserted zero-filled when absent (*created = 1).
 * Returns NULL when out of memory.
 */
void *ck_heap_upsert(ck_heap *h, int kg, int32_t jhash, const char *key,
                     uint32_t klen, int64_t ns, int *created);

/* The hash a heap files (key, ns) under, from the key's Java hash. */
static inline uint32_t ck_heap_hash(int32_t jhash, int64_t ns)
{
    return (uint32_t)ck_mix64(((uint64_t)(uint32_t)jhash << 32) ^ (uint64_t)ns);
}

/* ck_heap_get and ck_heap_remove with the hash computed already (any hash
 * a caller files the entry under consistently: ck_heap_hash(jhash, ns), or
 * one that mixes in more, as the backend's map state does). */
void *ck_heap_get_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                    int64_t ns);
int ck_heap_remove_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                     int64_t ns);
/* ck_heap_get_h for a value the caller will write: a table a view shares
 * (copy-on-write) gets its own copy first. NULL: absent or out of memory. */
void *ck_heap_get_mut_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                        int64_t ns);

/* ck_heap_upsert with hash = ck_heap_hash(jhash, ns) computed already. */
void *ck_heap_upsert_h(ck_heap *h, int kg, uint32_t hash, const char *key,
                       uint32_t klen, int64_t ns, int *created);

/*
 * A hint that an entry of key group kg with hash ck_heap_hash(jhash, ns)
 * is about to be looked up: starts loading the slot where its probe
 * begins. Changes nothing; kg may be out of range.
 */
void ck_heap_prefetch(const ck_heap *h, int kg, uint32_t hash);

/* Removes (key, ns). Returns 0 or CK_ENOTFOUND. */
int ck_heap_remove(ck_heap *h, int kg, int32_t jhash, const char *key,
                   uint32_t klen, int64_t ns);

typedef void (*ck_heap_visit)(void *arg, const char *key, uint32_t klen,
                              int64_t ns, const void *value);

/* Visits every entry of key group kg, in table order. */
void ck_heap_foreach(const ck_heap *h, int kg, ck_heap_visit fn, void *arg);

/* Approximate bytes of state: keys + values + namespaces. */
uint64_t ck_heap_bytes(const ck_heap *h);

/* Checks the invariants above (invariant.h): 0 or CK_EINVARIANT. */
CK_MUST_CHECK
int ck_heap_check(const ck_heap *h, ck_inv *v);
#define CK_HEAP_CHECK_SLOTS 4096u
CK_MUST_CHECK
int ck_heap_check_some(const ck_heap *h, ck_inv *v);

/* A consistent, read-only view of a heap at one moment. */
typedef struct ck_heap_view {
    ck_kgr kgr;
    size_t vsize, slot_size;
    uint64_t n;
    ck_heap_kg *kgs;
} ck_heap_view;

/* Takes a view (copy-on-write). Returns 0 or CK_ENOMEM. */
CK_MUST_CHECK
int ck_heap_view_take(ck_heap *h, ck_heap_view *v);
void ck_heap_view_foreach(const ck_heap_view *v, int kg, ck_heap_visit fn, void *arg);
uint32_t ck_heap_view_count(const ck_heap_view *v, int kg);
/* The value of (key, ns) filed under hash in the view, or NULL. */
const void *ck_heap_view_get_h(const ck_heap_view *v, int kg, uint32_t hash, const char *key,
                              uint32_t klen, int64_t ns);
/* Drops the view; the heap may then write its key groups in place again. */
void ck_heap_view_release(ck_heap_view *v);

/* The heap as a keyed-state backend (kstate.h, "hashmap"): one heap per
 * state, a map state's entries under (key, user key) composite keys.
 * NULL when out of memory. */
ck_kstate *ck_heap_kstate_new(ck_kgr kgr, const ck_state_desc *d, int n);

#endif
