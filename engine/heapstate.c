#include "heapstate.h"

#include <stdlib.h>

#include "bytes.h"
#include "error.h"
#include "invariant.h"
#include "keygroup.h"
#include "rng.h"

/* Keys up to INLINE_KEY bytes live in the slot itself: a lookup then
 * touches one cache line instead of chasing a pointer. */
#define INLINE_KEY 16

typedef struct slot {
    uint32_t hash;
    uint32_t klen1; /* key length + 1; 0 marks an empty slot */
    int64_t ns;
    union {
        char *ptr;
        char inl[INLINE_KEY];
    } key;
    /* value follows, 8-byte aligned */
} slot;

/*
 * A slot array is shared between the live table and the snapshot views
 * taken of it (copy-on-write): it carries a reference count in front of
 * its slots, and owns the out-of-line keys of its slots once it is the
 * last holder.
 */
typedef struct arr {
    uint32_t refs;
    uint32_t pad;
} arr;

#define SLOT_HDR ((sizeof(slot) + 7) & ~(size_t)7)

static inline const char *slot_key(const slot *s)
{
    return s->klen1 - 1 <= INLINE_KEY ? s->key.inl : s->key.ptr;
}

static inline int key_out_of_line(const slot *s)
{
    return s->klen1 - 1 > INLINE_KEY;
}

static inline slot *slot_in(const uint8_t *slots, size_t slot_size, uint32_t i)
{
    return (slot *)(slots + (size_t)i * slot_size);
}

static inline slot *slot_at(const ck_heap *h, const ck_heap_kg *t, uint32_t i)
{
    return slot_in(t->slots, h->slot_size, i);
}

static inline void *slot_val(slot *s)
{
    return (uint8_t *)s + SLOT_HDR;
}

static inline uint32_t mix(int32_t jhash, int64_t ns)
{
    return ck_heap_hash(jhash, ns);
}

static inline arr *arr_of(uint8_t *slots)
{
    return (arr *)(slots - sizeof(arr));
}

static uint8_t *arr_new(uint32_t cap, size_t slot_size)
{
    arr *a = calloc(1, sizeof(arr) + (size_t)cap * slot_size);
    if (!a)
        return NULL;
    a->refs = 1;
    return (uint8_t *)(a + 1);
}

/* Drops one reference; the last one frees the array and the keys it owns. */
static void arr_unref(uint8_t *slots, uint32_t cap, size_t slot_size)
{
    if (!slots)
        return;
    arr *a = arr_of(slots);
    if (--a->refs > 0)
        return;
    for (uint32_t i = 0; i < cap; i++) {
        slot *s = slot_in(slots, slot_size, i);
        if (s->klen1 && key_out_of_line(s))
            free(s->key.ptr);
    }
    free(a);
}

/* Copies out-of-line keys so that a copied slot owns its own. */
static int deep_copy_keys(uint8_t *slots, uint32_t cap, size_t slot_size)
{
    for (uint32_t i = 0; i < cap; i++) {
        slot *s = slot_in(slots, slot_size, i);
        if (!s->klen1 || !key_out_of_line(s))
            continue;
        char *k = malloc(s->klen1 - 1);
        if (!k) {
            /* Keys copied so far belong to the new array; the rest do not. */
            for (uint32_t j = i; j < cap; j++) {
                slot *r = slot_in(slots, slot_size, j);
                if (r->klen1 && key_out_of_line(r))
                    r->klen1 = 0;
            }
            return CK_ENOMEM;
        }
        memcpy(k, s->key.ptr, s->klen1 - 1);
        s->key.ptr = k;
    }
    return CK_OK;
}

/* Before a write: a table whose slots a snapshot still shares gets its own copy. */
static int copy_shared(const ck_heap *h, ck_heap_kg *t)
{
    uint8_t *copy = arr_new(t->cap, h->slot_size);
    if (!copy)
        return CK_ENOMEM;
    memcpy(copy, t->slots, (size_t)t->cap * h->slot_size);
    if (deep_copy_keys(copy, t->cap, h->slot_size)) {
        arr_unref(copy, t->cap, h->slot_size);
        return CK_ENOMEM;
    }
    arr_of(t->slots)->refs--; /* the snapshot keeps the old array */
    t->slots = copy;
    t->priv = 1;
    return CK_OK;
}

/* Before a write. The reference count lives with the slots, a cache line
 * away from the table: look at it only after a view was taken. */
static inline int make_private(const ck_heap *h, ck_heap_kg *t)
{
    if (t->priv || !t->slots)
        return CK_OK;
    if (arr_of(t->slots)->refs == 1) {
        t->priv = 1;
        return CK_OK;
    }
    return copy_shared(h, t);
}

/* Equality of keys of 4 to 16 bytes (most keys), in two word compares
 * that overlap when the length is not twice the word. */
static inline int key_eq_short(const char *a, const char *b, uint32_t n)
{
    uint64_t x, y, u, v;
    if (n >= 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        memcpy(&u, a + n - 8, 8);
        memcpy(&v, b + n - 8, 8);
    } else {
        uint32_t x4, y4, u4, v4;
        memcpy(&x4, a, 4);
        memcpy(&y4, b, 4);
        memcpy(&u4, a + n - 4, 4);
        memcpy(&v4, b + n - 4, 4);
        x = x4, y = y4, u = u4, v = v4;
    }
    return x == y && u == v;
}

/* Key equality, any length. */
static inline int key_eq(const char *a, const char *b, uint32_t n)
{
    if (n >= 4 && n <= 16)
        return key_eq_short(a, b, n);
    return memcmp(a, b, n) == 0;
}

int ck_heap_init(ck_heap *h, ck_kgr kgr, size_t vsize)
{
    if (ck_kgr_empty(kgr) || kgr.start < 0 || vsize > 64)
        return CK_EINVAL;
    memset(h, 0, sizeof(*h));
    h->kgs = calloc((size_t)ck_kgr_size(kgr), sizeof(*h->kgs));
    if (!h->kgs)
        return CK_ENOMEM;
    h->kgr = kgr;
    h->vsize = vsize;
    h->slot_size = SLOT_HDR + ((vsize + 7) & ~(size_t)7);
    return CK_OK;
}

void ck_heap_free(ck_heap *h)
{
    if (!h->kgs)
        return;
    for (int g = 0; g <= h->kgr.end - h->kgr.start; g++)
        arr_unref(h->kgs[g].slots, h->kgs[g].cap, h->slot_size);
    free(h->kgs);
    memset(h, 0, sizeof(*h));
}

static inline ck_heap_kg *table(ck_heap *h, int kg)
{
    if (kg < h->kgr.start || kg > h->kgr.end)
        return NULL;
    return &h->kgs[kg - h->kgr.start];
}

/* Index of (key, ns) in t, or of the empty slot where it would go. */
static uint32_t probe(const ck_heap *h, const ck_heap_kg *t, uint32_t hash,
                      const char *key, uint32_t klen, int64_t ns, int *found)
{
    uint32_t mask = t->cap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        slot *s = slot_at(h, t, i);
        if (!s->klen1) {
            *found = 0;
            return i;
        }
        if (s->hash == hash && s->ns == ns && s->klen1 == klen + 1 &&
            key_eq(slot_key(s), key, klen)) {
            *found = 1;
            return i;
        }
    }
}

/* Doubles a private table; slots (and the keys they own) move over. */
static int grow(ck_heap *h, ck_heap_kg *t)
{
    uint32_t ncap = t->cap ? t->cap * 2 : 8;
    uint8_t *ns = arr_new(ncap, h->slot_size);
    if (!ns)
        return CK_ENOMEM;
    ck_heap_kg nt = {ns, ncap, t->n, 1};
    for (uint32_t i = 0; i < t->cap; i++) {
        slot *s = slot_at(h, t, i);
        if (!s->klen1)
            continue;
        uint32_t mask = ncap - 1, j = s->hash & mask;
        while (slot_at(h, &nt, j)->klen1)
            j = (j + 1) & mask;
        memcpy(slot_at(h, &nt, j), s, h->slot_size);
    }
    if (t->slots)
        free(arr_of(t->slots)); /* private: its keys now belong to the new array */
    *t = nt;
    return CK_OK;
}

void *ck_heap_get(ck_heap *h, int kg, int32_t jhash, const char *key,
                  uint32_t klen, int64_t ns)
{
    return ck_heap_get_h(h, kg, mix(jhash, ns), key, klen, ns);
}

void *ck_heap_get_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                    int64_t ns)
{
    ck_heap_kg *t = table(h, kg);
    if (!t || t->n == 0)
        return NULL;
    int found;
    uint32_t i = probe(h, t, hash, key, klen, ns, &found);
    return found ? slot_val(slot_at(h, t, i)) : NULL;
}

static CK_NOINLINE void *upsert_slow(ck_heap *h, ck_heap_kg *t, uint32_t hash,
                                     const char *key, uint32_t klen, int64_t ns, int *created);

/* Finds (key, ns) in key group kg for a write: its table, made private
 * first if a view shares it (the copy keeps the layout: *i stays its
 * slot). CK_OK, CK_ENOTFOUND or CK_ENOMEM. */
static int find_for_write(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                          int64_t ns, ck_heap_kg **tp, uint32_t *i)
{
    ck_heap_kg *t = table(h, kg);
    if (!t || t->n == 0)
        return CK_ENOTFOUND;
    int found;
    *i = probe(h, t, hash, key, klen, ns, &found);
    if (!found)
        return CK_ENOTFOUND;
    *tp = t;
    return make_private(h, t);
}

void *ck_heap_get_mut_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                        int64_t ns)
{
    ck_heap_kg *t;
    uint32_t i;
    if (find_for_write(h, kg, hash, key, klen, ns, &t, &i))
        return NULL;
    return slot_val(slot_at(h, t, i));
}

void *ck_heap_upsert(ck_heap *h, int kg, int32_t jhash, const char *key,
                     uint32_t klen, int64_t ns, int *created)
{
    return ck_heap_upsert_h(h, kg, mix(jhash, ns), key, klen, ns, created);
}

void *ck_heap_upsert_h(ck_heap *h, int kg, uint32_t hash, const char *key,
                       uint32_t klen, int64_t ns, int *created)
{
    ck_heap_kg *t = table(h, kg);
    if (!t)
        return NULL;
    if (t->priv && klen >= 4 && klen <= INLINE_KEY) {
        /* Fast path, the common case: an existing entry with a key of 4 to
         * 16 bytes (kept in the slot, compared without a call) in a table
         * no snapshot shares. */
        uint32_t mask = t->cap - 1;
        for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
            slot *s = slot_at(h, t, i);
            if (!s->klen1)
                break;
            if (s->hash == hash && s->klen1 == klen + 1 && s->ns == ns &&
                key_eq_short(s->key.inl, key, klen)) {
                *created = 0;
                return slot_val(s);
            }
        }
    }
    return upsert_slow(h, t, hash, key, klen, ns, created);
}

/* Inserts, or finds in a table that may need its own copy first. */
static CK_NOINLINE void *upsert_slow(ck_heap *h, ck_heap_kg *t, uint32_t hash,
                                     const char *key, uint32_t klen, int64_t ns, int *created)
{
    if (make_private(h, t))
        return NULL;
    if ((t->n + 1) * 4 > t->cap * 3 && grow(h, t))
        return NULL;
    int found;
    uint32_t i = probe(h, t, hash, key, klen, ns, &found);
    slot *s = slot_at(h, t, i);
    if (found) {
        *created = 0;
        return slot_val(s);
    }
    if (klen > INLINE_KEY) {
        char *k = malloc(klen);
        if (!k)
            return NULL;
        memcpy(k, key, klen);
        s->key.ptr = k;
    } else {
        memcpy(s->key.inl, key, klen);
    }
    s->hash = hash;
    s->klen1 = klen + 1;
    s->ns = ns;
    memset(slot_val(s), 0, h->vsize);
    t->n++;
    h->n++;
    h->key_bytes += klen;
    *created = 1;
    return slot_val(s);
}

/* The prefetch, forced inline where it is used (CK_ALWAYS_INLINE). */
static CK_ALWAYS_INLINE void prefetch_slot(const ck_heap *h, int kg, uint32_t hash)
{
    if (kg < h->kgr.start || kg > h->kgr.end)
        return;
    const ck_heap_kg *t = &h->kgs[kg - h->kgr.start];
    if (!t->slots)
        return;
    const uint8_t *s = (const uint8_t *)slot_at(h, t, hash & (t->cap - 1));
    __builtin_prefetch(s, 1);
    __builtin_prefetch(s + h->slot_size - 1, 1); /* a slot may straddle two lines */
}

void ck_heap_prefetch(const ck_heap *h, int kg, uint32_t hash)
{
    prefetch_slot(h, kg, hash);
}

int ck_heap_remove(ck_heap *h, int kg, int32_t jhash, const char *key,
                   uint32_t klen, int64_t ns)
{
    return ck_heap_remove_h(h, kg, mix(jhash, ns), key, klen, ns);
}

int ck_heap_remove_h(ck_heap *h, int kg, uint32_t hash, const char *key, uint32_t klen,
                     int64_t ns)
{
    ck_heap_kg *t;
    uint32_t i;
    int rc = find_for_write(h, kg, hash, key, klen, ns, &t, &i);
    if (rc)
        return rc;
    slot *s = slot_at(h, t, i);
    if (key_out_of_line(s))
        free(s->key.ptr);
    h->key_bytes -= s->klen1 - 1;
    s->klen1 = 0;
    t->n--;
    h->n--;
    /* Backward-shift deletion keeps every probe chain unbroken. */
    uint32_t mask = t->cap - 1, hole = i;
    for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        slot *sj = slot_at(h, t, j);
        if (!sj->klen1)
            break;
        uint32_t home = sj->hash & mask;
        /* Move sj into the hole unless its home lies in (hole, j]. */
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            memcpy(slot_at(h, t, hole), sj, h->slot_size);
            sj->klen1 = 0;
            hole = j;
        }
    }
    return CK_OK;
}

static void visit_slots(const uint8_t *slots, uint32_t cap, size_t slot_size,
                        ck_heap_visit fn, void *arg)
{
    for (uint32_t i = 0; i < cap; i++) {
        slot *s = slot_in(slots, slot_size, i);
        if (s->klen1)
            fn(arg, slot_key(s), s->klen1 - 1, s->ns, slot_val(s));
    }
}

void ck_heap_foreach(const ck_heap *h, int kg, ck_heap_visit fn, void *arg)
{
    if (kg < h->kgr.start || kg > h->kgr.end)
        return;
    const ck_heap_kg *t = &h->kgs[kg - h->kgr.start];
    visit_slots(t->slots, t->cap, h->slot_size, fn, arg);
}

uint64_t ck_heap_bytes(const ck_heap *h)
{
    return h->key_bytes + h->n * (h->vsize + 8);
}

int ck_heap_view_take(ck_heap *h, ck_heap_view *v)
{
    int nkg = h->kgr.end - h->kgr.start + 1;
    v->kgs = malloc((size_t)nkg * sizeof(*v->kgs));
    if (!v->kgs)
        return CK_ENOMEM;
    v->kgr.start = h->kgr.start;
    v->kgr.end = h->kgr.end;
    v->vsize = h->vsize;
    v->slot_size = h->slot_size;
    v->n = h->n;
    for (int g = 0; g < nkg; g++) {
        v->kgs[g] = h->kgs[g];
        if (h->kgs[g].slots)
            arr_of(h->kgs[g].slots)->refs++;
        h->kgs[g].priv = 0; /* shared now, until the next write copies */
    }
    return CK_OK;
}

void ck_heap_view_foreach(const ck_heap_view *v, int kg, ck_heap_visit fn, void *arg)
{
    if (kg < v->kgr.start || kg > v->kgr.end)
        return;
    const ck_heap_kg *t = &v->kgs[kg - v->kgr.start];
    visit_slots(t->slots, t->cap, v->slot_size, fn, arg);
}

const void *ck_heap_view_get_h(const ck_heap_view *v, int kg, uint32_t hash, const char *key,
                              uint32_t klen, int64_t ns)
{
    if (kg < v->kgr.start || kg > v->kgr.end)
        return NULL;
    const ck_heap_kg *t = &v->kgs[kg - v->kgr.start];
    if (!t->slots || t->n == 0)
        return NULL;
    uint32_t mask = t->cap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        slot *s = slot_in(t->slots, v->slot_size, i);
        if (!s->klen1)
            return NULL;
        if (s->hash == hash && s->ns == ns && s->klen1 == klen + 1 &&
            key_eq(slot_key(s), key, klen))
            return slot_val(s);
    }
}

uint32_t ck_heap_view_count(const ck_heap_view *v, int kg)
{
    if (kg < v->kgr.start || kg > v->kgr.end)
        return 0;
    return v->kgs[kg - v->kgr.start].n;
}

void ck_heap_view_release(ck_heap_view *v)
{
    if (!v->kgs)
        return;
    for (int g = 0; g <= v->kgr.end - v->kgr.start; g++)
        arr_unref(v->kgs[g].slots, v->kgs[g].cap, v->slot_size);
    free(v->kgs);
    v->kgs = NULL;
}

/* ---- the heap as a keyed-state backend (kstate.h) -------------------------- */

/*
 * One heap per state. A map state's entry is filed under a key made of the
 * record's key and the user key (u32 key length | key | user key), in the
 * same key group and namespace, with a hash that mixes the user key in:
 * the heap's copy-on-write views then cover map states as they cover
 * value states. A list state keeps its length under (key, ns) in the
 * state's heap and element i in a second heap (elems) under (u32 key
 * length | key | u32 i), so that its views cover lists too.
 */
typedef struct heap_ks {
    ck_kstate base;
    ck_heap heaps[CK_KS_MAX_STATES];
    ck_heap elems[CK_KS_MAX_STATES]; /* list states' elements */
    char *scratch; /* a map entry's or a list element's key, built per access */
    size_t scratch_cap;
    int64_t *gather; /* list_get's answer */
    size_t gather_cap;
} heap_ks;

struct ck_kstate_view {
    int nstates;
    ck_state_kind kinds[CK_KS_MAX_STATES];
    uint32_t nfields[CK_KS_MAX_STATES];
    ck_heap_view views[CK_KS_MAX_STATES];
    ck_heap_view elem_views[CK_KS_MAX_STATES];
    char *scratch;
    size_t scratch_cap;
    int64_t *gather;
    size_t gather_cap;
};

/* List element i of (key, ns): its key in *scratch, its hash. */
static const char *elem_key(char **scratch, size_t *cap, const char *key, uint32_t klen,
                            uint32_t i, uint32_t *len)
{
    if (ck_reserve(scratch, cap, 8 + (size_t)klen))
        return NULL;
    ck_put_u32((uint8_t *)*scratch, klen);
    memcpy(*scratch + 4, key, klen);
    ck_put_u32((uint8_t *)*scratch + 4 + klen, i);
    *len = klen + 8;
    return *scratch;
}

static inline uint32_t elem_hash(int32_t jhash, int64_t ns, uint32_t i)
{
    return (uint32_t)ck_mix64(((uint64_t)(uint32_t)jhash << 32) ^ (uint64_t)ns ^
                              ((uint64_t)(i + 1) * UINT64_C(0xc2b2ae3d27d4eb4f)));
}

static inline uint32_t map_hash(const ck_kkey *k)
{
    uint32_t u = (uint32_t)ck_kg_java_hash((const char *)k->ukey, k->uklen);
    return (uint32_t)ck_mix64(((uint64_t)(uint32_t)k->loc.jhash << 32) ^ (uint64_t)k->loc.ns ^
                              ((uint64_t)u * UINT64_C(0x9e3779b97f4a7c15)) ^ k->uklen);
}

/* The key k is filed under in state st: the record's key, or for a map
 * state the composite key (in the scratch buffer). NULL: out of memory. */
static const char *filed_key(heap_ks *h, int st, const ck_kkey *k, uint32_t *len)
{
    if (h->base.states[st].kind != CK_STATE_MAP) {
        *len = k->klen;
        return k->key;
    }
    size_t n = 4 + (size_t)k->klen + k->uklen;
    if (ck_reserve(&h->scratch, &h->scratch_cap, n))
        return NULL;
    ck_put_u32((uint8_t *)h->scratch, k->klen);
    memcpy(h->scratch + 4, k->key, k->klen);
    if (k->uklen)
        memcpy(h->scratch + 4 + k->klen, k->ukey, k->uklen);
    *len = (uint32_t)n;
    return h->scratch;
}

static void hks_free(ck_kstate *s)
{
    heap_ks *h = (heap_ks *)s;
    for (int i = 0; i < s->nstates; i++) {
        ck_heap_free(&h->heaps[i]);
        ck_heap_free(&h->elems[i]);
    }
    free(h->scratch);
    free(h->gather);
    free(h);
}

static void hks_locate(const ck_kstate *s, int st, ck_kkey *k)
{
    k->loc.hash = s->states[st].kind == CK_STATE_MAP ? map_hash(k)
                                                     : ck_heap_hash(k->loc.jhash, k->loc.ns);
}

static void hks_prefetch(const ck_kstate *s, int st, const ck_kkey *k)
{
    prefetch_slot(&((const heap_ks *)s)->heaps[st], k->loc.kg, k->loc.hash);
}

static int64_t *hks_acquire(ck_kstate *s, int st, const ck_kkey *k, int create, int *created)
{
    heap_ks *h = (heap_ks *)s;
    uint32_t len;
    const char *key = filed_key(h, st, k, &len);
    if (!key)
        return NULL;
    *created = 0;
    if (create)
        return ck_heap_upsert_h(&h->heaps[st], k->loc.kg, k->loc.hash, key, len, k->loc.ns,
                                created);
    /* the caller may edit it: never in a table a view shares */
    return ck_heap_get_mut_h(&h->heaps[st], k->loc.kg, k->loc.hash, key, len, k->loc.ns);
}

static int hks_list_add(ck_kstate *s, int st, const ck_kkey *k, const int64_t *v)
{
    heap_ks *h = (heap_ks *)s;
    int created;
    int64_t *n = ck_heap_upsert_h(&h->heaps[st], k->loc.kg, k->loc.hash, k->key, k->klen,
                                  k->loc.ns, &created);
    if (!n)
        return CK_ENOMEM;
    uint32_t i = (uint32_t)*n, len;
    const char *ek = elem_key(&h->scratch, &h->scratch_cap, k->key, k->klen, i, &len);
    if (!ek)
        return CK_ENOMEM;
    int64_t *e = ck_heap_upsert_h(&h->elems[st], k->loc.kg, elem_hash(k->loc.jhash, k->loc.ns, i),
                                  ek, len, k->loc.ns, &created);
    if (!e)
        return CK_ENOMEM;
    memcpy(e, v, s->states[st].nfields * sizeof(int64_t));
    (*n)++; /* counted once the element is in */
    return CK_OK;
}

static const int64_t *hks_list_get(ck_kstate *s, int st, const ck_kkey *k, uint32_t *count)
{
    heap_ks *h = (heap_ks *)s;
    *count = 0;
    const int64_t *n = ck_heap_get_h(&h->heaps[st], k->loc.kg, k->loc.hash, k->key, k->klen,
                                     k->loc.ns);
    if (!n || *n <= 0)
        return NULL;
    uint32_t nf = s->states[st].nfields, len;
    if (ck_reserve(&h->gather, &h->gather_cap, (size_t)*n * nf * sizeof(int64_t))) {
        *count = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < (uint32_t)*n; i++) {
        const char *ek = elem_key(&h->scratch, &h->scratch_cap, k->key, k->klen, i, &len);
        const int64_t *e = ek ? ck_heap_get_h(&h->elems[st], k->loc.kg,
                                              elem_hash(k->loc.jhash, k->loc.ns, i), ek, len,
                                              k->loc.ns)
                              : NULL;
        if (!e) {
            *count = 1;
            return NULL;
        }
        memcpy(h->gather + (size_t)i * nf, e, nf * sizeof(int64_t));
    }
    *count = (uint32_t)*n;
    return h->gather;
}

static int hks_remove(ck_kstate *s, int st, const ck_kkey *k)
{
    heap_ks *h = (heap_ks *)s;
    if (s->states[st].kind == CK_STATE_LIST) {
        const int64_t *n = ck_heap_get_h(&h->heaps[st], k->loc.kg, k->loc.hash, k->key,
                                         k->klen, k->loc.ns);
        if (!n)
            return CK_ENOTFOUND;
        uint32_t count = (uint32_t)*n, len;
        for (uint32_t i = 0; i < count; i++) {
            const char *ek = elem_key(&h->scratch, &h->scratch_cap, k->key, k->klen, i, &len);
            if (!ek)
                return CK_ENOMEM;
            ck_heap_remove_h(&h->elems[st], k->loc.kg, elem_hash(k->loc.jhash, k->loc.ns, i), ek,
                             len, k->loc.ns);
        }
        return ck_heap_remove_h(&h->heaps[st], k->loc.kg, k->loc.hash, k->key, k->klen,
                                k->loc.ns);
    }
    uint32_t len;
    const char *key = filed_key(h, st, k, &len);
    if (!key)
        return CK_ENOMEM;
    return ck_heap_remove_h(&h->heaps[st], k->loc.kg, k->loc.hash, key, len, k->loc.ns);
}

static uint64_t hks_entries(const ck_kstate *s)
{
    uint64_t n = 0;
    for (int i = 0; i < s->nstates; i++)
        n += ((const heap_ks *)s)->heaps[i].n;
    return n;
}

static void hks_view_release(ck_kstate_view *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->nstates; i++) {
        ck_heap_view_release(&v->views[i]);
        ck_heap_view_release(&v->elem_views[i]);
    }
    free(v->scratch);
    free(v->gather);
    free(v);
}

static int hks_view_take(ck_kstate *s, ck_kstate_view **out)
{
    heap_ks *h = (heap_ks *)s;
    ck_kstate_view *v = calloc(1, sizeof(*v));
    if (!v)
        return CK_ENOMEM;
    for (int i = 0; i < s->nstates; i++) {
        v->nstates = i + 1; /* released on failure from here */
        if (ck_heap_view_take(&h->heaps[i], &v->views[i]) ||
            (s->states[i].kind == CK_STATE_LIST &&
             ck_heap_view_take(&h->elems[i], &v->elem_views[i]))) {
            hks_view_release(v);
            return CK_ENOMEM;
        }
        v->kinds[i] = s->states[i].kind;
        v->nfields[i] = s->states[i].nfields;
    }
    *out = v;
    return CK_OK;
}

static uint64_t hks_view_count(const ck_kstate_view *v, int kg)
{
    uint64_t n = 0;
    for (int i = 0; i < v->nstates; i++)
        n += ck_heap_view_count(&v->views[i], kg);
    return n;
}

typedef struct visit_ctx {
    ck_kentry e;
    int map;
    ck_kstate_view *v; /* for a list state's elements */
    int kg;
    ck_kentry_fn fn;
    void *arg;
    int rc;
} visit_ctx;

/* Gathers list (key, ns) of state st, n elements, from the view. */
static int gather_list(ck_kstate_view *v, int st, int kg, const char *key, uint32_t klen,
                       int64_t ns, uint32_t n)
{
    uint32_t nf = v->nfields[st], len;
    if (ck_reserve(&v->gather, &v->gather_cap, (size_t)n * nf * sizeof(int64_t) + 8))
        return CK_ENOMEM;
    int32_t jh = ck_kg_java_hash(key, klen);
    for (uint32_t i = 0; i < n; i++) {
        const char *ek = elem_key(&v->scratch, &v->scratch_cap, key, klen, i, &len);
        if (!ek)
            return CK_ENOMEM;
        const int64_t *e = ck_heap_view_get_h(&v->elem_views[st], kg, elem_hash(jh, ns, i), ek,
                                              len, ns);
        if (!e)
            return CK_EINTERNAL; /* a list without its element: cannot be */
        memcpy(v->gather + (size_t)i * nf, e, nf * sizeof(int64_t));
    }
    return CK_OK;
}

static void visit_one(void *arg, const char *key, uint32_t klen, int64_t ns, const void *value)
{
    visit_ctx *c = arg;
    if (c->rc)
        return;
    c->e.ns = ns;
    c->e.value = value;
    c->e.count = 1;
    if (c->v) { /* a list: value is its length */
        c->e.key = key;
        c->e.klen = klen;
        c->e.count = (uint32_t)*(const int64_t *)value;
        if ((c->rc = gather_list(c->v, c->e.st, c->kg, key, klen, ns, c->e.count)))
            return;
        c->e.value = c->v->gather;
    } else if (c->map) {
        uint32_t kl = ck_get_u32((const uint8_t *)key);
        c->e.key = key + 4;
        c->e.klen = kl;
        c->e.ukey = (const uint8_t *)key + 4 + kl;
        c->e.uklen = klen - 4 - kl;
    } else {
        c->e.key = key;
        c->e.klen = klen;
    }
    c->rc = c->fn(c->arg, &c->e);
}

static int hks_view_visit(ck_kstate_view *v, int kg, ck_kentry_fn fn, void *arg)
{
    for (int i = 0; i < v->nstates; i++) {
        visit_ctx c = {.e = {.st = i},
                       .map = v->kinds[i] == CK_STATE_MAP,
                       .v = v->kinds[i] == CK_STATE_LIST ? v : NULL,
                       .kg = kg,
                       .fn = fn,
                       .arg = arg};
        ck_heap_view_foreach(&v->views[i], kg, visit_one, &c);
        if (c.rc)
            return c.rc;
    }
    return CK_OK;
}

static int hks_check(const ck_kstate *s, ck_inv *v)
{
    const heap_ks *h = (const heap_ks *)s;
    for (int i = 0; i < s->nstates; i++) {
        int rc = ck_heap_check_some(&h->heaps[i], v);
        if (!rc && s->states[i].kind == CK_STATE_LIST)
            rc = ck_heap_check_some(&h->elems[i], v);
        if (rc)
            return ck_inv_where(v, "state %s", s->states[i].name);
    }
    return 0;
}

static const ck_kstate_ops heap_kstate_ops = {
    .name = "hashmap",
    .free = hks_free,
    .locate = hks_locate,
    .prefetch = hks_prefetch,
    .acquire = hks_acquire,
    .release = NULL, /* values are edited where they live */
    .remove = hks_remove,
    .list_add = hks_list_add,
    .list_get = hks_list_get,
    .entries = hks_entries,
    .view_take = hks_view_take,
    .view_count = hks_view_count,
    .view_visit = hks_view_visit,
    .view_release = hks_view_release,
    .check = hks_check,
};

ck_kstate *ck_heap_kstate_new(ck_kgr kgr, const ck_state_desc *d, int n)
{
    heap_ks *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->base.ops = &heap_kstate_ops;
    h->base.kgr = kgr;
    for (int i = 0; i < n; i++) {
        int list = d[i].kind == CK_STATE_LIST;
        if (ck_heap_init(&h->heaps[i], kgr, list ? 8 : 8 * (size_t)d[i].nfields) ||
            (list && ck_heap_init(&h->elems[i], kgr, 8 * (size_t)d[i].nfields))) {
            hks_free(&h->base);
            return NULL;
        }
        h->base.states[i] = d[i];
        h->base.nstates++;
    }
    return &h->base;
}

/* ---- invariants (heapstate.h) -------------------------------------------------------- */

#define CK_INV_MODULE "heapstate"

static int check_table(const ck_heap *h, int kg, const ck_heap_kg *t, uint64_t *key_bytes,
                       ck_inv *v)
{
    CK_INV(v, 2, (t->cap & (t->cap - 1)) == 0 && (uint64_t)t->n * 4 <= (uint64_t)t->cap * 3 &&
                     (t->slots != NULL) == (t->cap != 0),
           "key group %d: %u entries in %u slots", kg, t->n, t->cap);
    if (!t->slots)
        return 0;
    uint32_t refs = arr_of(t->slots)->refs;
    CK_INV(v, 4, refs >= 1 && (!t->priv || refs == 1),
           "key group %d: its slots have %u references%s", kg, refs,
           t->priv ? ", yet it writes them in place" : "");
    uint32_t n = 0, mask = t->cap - 1;
    for (uint32_t i = 0; i < t->cap; i++) {
        const slot *s = slot_at(h, t, i);
        if (!s->klen1)
            continue;
        n++;
        *key_bytes += s->klen1 - 1;
        for (uint32_t j = s->hash & mask; j != i; j = (j + 1) & mask)
            CK_INV(v, 3, slot_at(h, t, j)->klen1 != 0,
                   "key group %d: the entry in slot %u lies past the empty slot %u", kg, i, j);
    }
    CK_INV(v, 2, n == t->n, "key group %d: %u entries, counted %u", kg, n, t->n);
    return 0;
}

/* The invariants of every table (all: their slots too, else only those
 * of table `only`'s), and the heap's sums when all slots were read. */
static int check_heap(const ck_heap *h, int all, int only, ck_inv *v)
{
    uint64_t n = 0, key_bytes = 0;
    for (int g = 0; g <= h->kgr.end - h->kgr.start; g++) {
        const ck_heap_kg *t = &h->kgs[g];
        int rc;
        if (all || g == only) {
            rc = check_table(h, h->kgr.start + g, t, &key_bytes, v);
            if (rc)
                return rc;
        } else {
            CK_INV(v, 2, (t->cap & (t->cap - 1)) == 0 &&
                             (uint64_t)t->n * 4 <= (uint64_t)t->cap * 3,
                   "key group %d: %u entries in %u slots", h->kgr.start + g, t->n, t->cap);
            CK_INV(v, 4, !t->slots || !t->priv || arr_of(t->slots)->refs == 1,
                   "key group %d: written in place while shared", h->kgr.start + g);
        }
        n += t->n;
    }
    CK_INV(v, 2, n == h->n && (!all || key_bytes == h->key_bytes),
           "%llu entries of %llu key bytes, counted %llu of %llu", (unsigned long long)n,
           (unsigned long long)key_bytes, (unsigned long long)h->n,
           (unsigned long long)h->key_bytes);
    return 0;
}

int ck_heap_check(const ck_heap *h, ck_inv *v)
{
    return check_heap(h, 1, 0, v);
}

int ck_heap_check_some(const ck_heap *h, ck_inv *v)
{
    uint64_t slots = 0;
    int nkg = h->kgr.end - h->kgr.start + 1;
    for (int g = 0; g < nkg; g++)
        slots += h->kgs[g].cap;
    if (slots <= CK_HEAP_CHECK_SLOTS)
        return check_heap(h, 1, 0, v);
    /* A key group that moves on as entries come and go. */
    return check_heap(h, 0, (int)(ck_mix64(h->n ^ h->key_bytes << 20) % (uint64_t)nkg), v);
}
