#include "udf.h"

#include <stdlib.h>

#include "keygroup.h"
#include "rng.h"

void ck_udf_map(ck_map_fn fn, int64_t arg, ck_rec *r)
{
    switch (fn) {
    case CK_MAP_IDENTITY:
        break;
    case CK_MAP_DROP_PAYLOAD:
        r->plen = 0;
        r->payload = NULL;
        break;
    case CK_MAP_SCALE:
        r->value = (int64_t)((uint64_t)r->value * (uint64_t)arg);
        break;
    }
}

int ck_udf_filter(uint32_t keep_ppm, const ck_rec *r)
{
    uint64_t h = (uint64_t)(uint32_t)ck_rec_jhash(r);
    h = ck_mix64(h ^ ck_mix64((uint64_t)r->ts) ^ ((uint64_t)r->value << 32));
    return (uint32_t)(h % 1000000u) < keep_ppm;
}

const char *ck_map_fn_name(ck_map_fn fn)
{
    switch (fn) {
    case CK_MAP_IDENTITY:
        return "identity";
    case CK_MAP_DROP_PAYLOAD:
        return "drop_payload";
    case CK_MAP_SCALE:
        return "scale";
    }
    return "?";
}

const char *ck_agg_fn_name(ck_agg_fn fn)
{
    return fn == CK_AGG_COUNT ? "count" : fn == CK_AGG_SUM ? "sum" : "median";
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t ck_udf_median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    return v[(n - 1) / 2];
}
