#include "sharedreg.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

struct ck_sreg_slot {
    char *key; /* NULL: empty */
    uint32_t count;
};

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static struct ck_sreg_slot *find(const ck_sreg *r, const char *key)
{
    if (!r->cap)
        return NULL;
    for (uint32_t i = hash(key) & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
        struct ck_sreg_slot *s = &r->slots[i];
        if (!s->key || !strcmp(s->key, key))
            return s;
    }
}

static int grow(ck_sreg *r)
{
    uint32_t cap = r->cap ? 2 * r->cap : 64;
    struct ck_sreg_slot *old = r->slots, *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    uint32_t ocap = r->cap;
    r->slots = slots;
    r->cap = cap;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i].key)
            *find(r, old[i].key) = old[i];
    free(old);
    return 0;
}

uint32_t ck_sreg_ref(ck_sreg *r, const char *key)
{
    if ((r->n + 1) * 2 > r->cap && grow(r))
        return 0;
    struct ck_sreg_slot *s = find(r, key);
    if (!s->key) {
        size_t n = strlen(key) + 1;
        if (!(s->key = malloc(n)))
            return 0;
        memcpy(s->key, key, n);
        r->n++;
    }
    return ++s->count;
}

uint32_t ck_sreg_count(const ck_sreg *r, const char *key)
{
    const struct ck_sreg_slot *s = find(r, key);
    return s && s->key ? s->count : 0;
}

uint32_t ck_sreg_unref(ck_sreg *r, const char *key)
{
    struct ck_sreg_slot *s = find(r, key);
    if (!s || !s->key)
        return 0;
    if (--s->count)
        return s->count;
    /* Deletion with linear probing: put back the run that follows. */
    free(s->key);
    s->key = NULL;
    r->n--;
    uint32_t i = (uint32_t)(s - r->slots);
    for (uint32_t j = (i + 1) & (r->cap - 1); r->slots[j].key; j = (j + 1) & (r->cap - 1)) {
        struct ck_sreg_slot moved = r->slots[j];
        r->slots[j] = (struct ck_sreg_slot){NULL, 0}; /* a slot reused starts at 0 */
        *find(r, moved.key) = moved;
    }
    return 0;
}

void ck_sreg_free(ck_sreg *r)
{
    for (uint32_t i = 0; i < r->cap; i++)
        free(r->slots[i].key);
    free(r->slots);
    memset(r, 0, sizeof(*r));
}

void ck_sreg_foreach(const ck_sreg *r, void (*fn)(void *arg, const char *key, uint32_t count),
                     void *arg)
{
    for (uint32_t i = 0; i < r->cap; i++)
        if (r->slots[i].key)
            fn(arg, r->slots[i].key, r->slots[i].count);
}

#define CK_INV_MODULE "sharedreg"

int ck_sreg_check(const ck_sreg *r, ck_inv *v)
{
    CK_INV(v, 2, (r->cap & (r->cap - 1)) == 0 && (uint64_t)r->n * 2 <= r->cap,
           "%u keys in %u slots", r->n, r->cap);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->cap; i++) {
        const struct ck_sreg_slot *s = &r->slots[i];
        if (!s->key) {
            CK_INV(v, 1, s->count == 0, "an empty slot counts %u", s->count);
            continue;
        }
        n++;
        CK_INV(v, 1, s->count > 0, "%s: in the table with count 0", s->key);
        for (uint32_t j = hash(s->key) & (r->cap - 1); j != i; j = (j + 1) & (r->cap - 1))
            CK_INV(v, 3, r->slots[j].key != NULL,
                   "%s: in slot %u, past the empty slot %u its probe stops at", s->key, i, j);
    }
    CK_INV(v, 2, n == r->n, "%u keys in the table, counted %u", n, r->n);
    return 0;
}
