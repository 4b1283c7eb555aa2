/*
 * fuzz_snapshot - the state-file decoder (ck_snap_decode), and a subtask
 * restoring from the file as it does after a failure.
 *
 * Input: u8 mode | the file. Mode bit 0 set: the file's last four bytes
 * are replaced by the CRC-32C of the rest, so that the fuzzer gets past
 * the checksum into the structure. Bits 1..: which subtask of the job of
 * fuzz_common.h restores the file, when the file's header does not name
 * one of them.
 *
 * Checked: a refused file says why; an accepted one, put back into
 * keyed state (the hashmap backend, through kstate.h), timers, source offsets,
 * operator state and sink transactions and encoded again (ck_snap_encode), decodes to the same
 * content (entries compared as sets: the file's order within a key group
 * is the heap's). Then a subtask restores the file through its store: it
 * must start or fail the restore, never crash.
 */
#include "fuzz_common.h"

#include "crc32c.h"
#include "bytes.h"
#include "kstate.h"
#include "keygroup.h"
#include "snapshot.h"

static int cmp_entry(const void *a, const void *b)
{
    const ck_snap_entry *x = a, *y = b;
    if (x->kg != y->kg)
        return x->kg < y->kg ? -1 : 1;
    if (x->st != y->st)
        return x->st < y->st ? -1 : 1;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    if (x->uklen != y->uklen)
        return x->uklen < y->uklen ? -1 : 1;
    int c = memcmp(x->key, y->key, x->klen);
    return c ? c : x->uklen ? memcmp(x->ukey, y->ukey, x->uklen) : 0;
}

static char names[CK_MAX_OPS][CK_KS_MAX_STATES][256];

/* Puts a decoded snapshot back into a capture; 0 when the content has
 * duplicates the backend would merge (no round trip to check then). */
static int to_capture(const ck_snapshot *s, ck_capture *c, ck_kstate **ks)
{
    memset(c, 0, sizeof(*c));
    c->checkpoint_id = s->checkpoint_id;
    c->vertex = s->vertex;
    c->subtask = s->subtask;
    c->parallelism = s->parallelism;
    int ok = 1;
    for (int i = 0; i < s->nkeyed; i++) {
        const ck_snap_keyed *k = &s->keyed[i];
        int lo = k->max_parallelism, hi = 0;
        for (size_t e = 0; e < k->nentries; e++) {
            lo = CK_MIN(lo, k->entries[e].kg);
            hi = CK_MAX(hi, k->entries[e].kg);
        }
        if (lo > hi)
            lo = hi = 0;
        ck_state_desc d[CK_KS_MAX_STATES];
        for (int st = 0; st < k->nstates; st++) {
            memcpy(names[i][st], k->states[st].name, k->states[st].name_len);
            names[i][st][k->states[st].name_len] = 0;
            d[st] = (ck_state_desc){names[i][st], k->states[st].kind, k->states[st].nfields};
        }
        ks[i] = ck_kstate_new(CK_BACKEND_HASHMAP, ck_kgr_make(lo, hi), d, k->nstates);
        FUZZ_CHECK(ks[i]);
        uint64_t before = 0;
        for (size_t e = 0; e < k->nentries; e++) {
            const ck_snap_entry *en = &k->entries[e];
            FUZZ_CHECK(ck_snap_put_entry(ks[i], k, en, ck_kg_java_hash(en->key, en->klen)) ==
                       CK_OK);
            uint64_t after = ks[i]->ops->entries(ks[i]);
            ok &= after == before + 1; /* not merged into an entry before it */
            before = after;
        }
        ck_keyed_capture *kc = &c->keyed[c->nkeyed++];
        kc->op = k->op;
        kc->kind = k->kind;
        kc->max_parallelism = k->max_parallelism;
        kc->kgr = ck_kgr_make(lo, hi);
        kc->nstates = k->nstates;
        memcpy(kc->states, d, sizeof(d));
        kc->ops = ks[i]->ops;
        FUZZ_CHECK(kc->ops->view_take(ks[i], &kc->view) == CK_OK);
        kc->timers = calloc(k->ntimers + 1, sizeof(ck_timer));
        FUZZ_CHECK(kc->timers);
        for (size_t t = 0; t < k->ntimers; t++) {
            kc->timers[t] = k->timers[t];
            kc->timers[t].key = malloc(k->timers[t].klen + 1);
            FUZZ_CHECK(kc->timers[t].key);
            memcpy(kc->timers[t].key, k->timers[t].key, k->timers[t].klen);
            kc->ntimers++;
        }
    }
    if (s->has_source) {
        int n = s->source.nparts;
        c->has_source = 1;
        c->source.op = s->source.op;
        c->source.nparts = n;
        c->source.parts = calloc((size_t)n + 1, sizeof(int));
        c->source.offsets = calloc((size_t)n + 1, sizeof(int64_t));
        c->source.maxts = calloc((size_t)n + 1, sizeof(int64_t));
        FUZZ_CHECK(c->source.parts && c->source.offsets && c->source.maxts);
        memcpy(c->source.parts, s->source.parts, (size_t)n * sizeof(int));
        memcpy(c->source.offsets, s->source.offsets, (size_t)n * sizeof(int64_t));
        memcpy(c->source.maxts, s->source.maxts, (size_t)n * sizeof(int64_t));
        c->source.known = s->source.known < 0 ? 0 : s->source.known; /* version 3: none */
    }
    for (int i = 0; i < s->nopstates; i++) {
        const ck_opstate *o = &s->opstates[i];
        if (s->has_source && o->op == s->source.op)
            continue; /* the source's lists: written from c->source */
        ck_opstate *co = ck_capture_opstate(c, o->op);
        FUZZ_CHECK(co);
        for (int l = 0; l < o->nlists; l++) {
            ck_oplist *cl = ck_opstate_add_list(co, o->lists[l].name, o->lists[l].mode);
            FUZZ_CHECK(cl);
            size_t pos = 0;
            const uint8_t *e;
            uint32_t elen;
            while (ck_oplist_next(&o->lists[l], &pos, &e, &elen))
                FUZZ_CHECK(ck_oplist_add(cl, e, elen) == CK_OK);
        }
    }
    c->nsinks = s->nsinks;
    memcpy(c->sinks, s->sinks, sizeof(c->sinks));
    return ok;
}

static void same_content(const ck_snapshot *a, const ck_snapshot *b)
{
    FUZZ_CHECK(a->checkpoint_id == b->checkpoint_id && a->vertex == b->vertex &&
               a->subtask == b->subtask && a->parallelism == b->parallelism);
    FUZZ_CHECK(a->nkeyed == b->nkeyed && a->nsinks == b->nsinks &&
               a->has_source == b->has_source);
    for (int i = 0; i < a->nkeyed; i++) {
        const ck_snap_keyed *x = &a->keyed[i], *y = &b->keyed[i];
        FUZZ_CHECK(x->op == y->op && x->kind == y->kind &&
                   x->max_parallelism == y->max_parallelism && x->nstates == y->nstates);
        for (int st = 0; st < x->nstates; st++)
            FUZZ_CHECK(x->states[st].kind == y->states[st].kind &&
                       x->states[st].nfields == y->states[st].nfields &&
                       x->states[st].name_len == y->states[st].name_len &&
                       memcmp(x->states[st].name, y->states[st].name, x->states[st].name_len) ==
                           0);
        FUZZ_CHECK(x->nentries == y->nentries && x->ntimers == y->ntimers);
        qsort(x->entries, x->nentries, sizeof(*x->entries), cmp_entry);
        qsort(y->entries, y->nentries, sizeof(*y->entries), cmp_entry);
        for (size_t e = 0; e < x->nentries; e++) {
            FUZZ_CHECK(cmp_entry(&x->entries[e], &y->entries[e]) == 0);
            FUZZ_CHECK(x->entries[e].count == y->entries[e].count);
            FUZZ_CHECK(memcmp(x->entries[e].value, y->entries[e].value,
                              8 * (size_t)x->entries[e].count *
                                  x->states[x->entries[e].st].nfields) == 0);
        }
        for (size_t t = 0; t < x->ntimers; t++) {
            const ck_timer *p = &x->timers[t], *q = &y->timers[t];
            FUZZ_CHECK(p->ts == q->ts && p->kg == q->kg && p->ns == q->ns &&
                       p->klen == q->klen && memcmp(p->key, q->key, p->klen) == 0);
        }
    }
    if (a->has_source) {
        const ck_source_capture *x = &a->source, *y = &b->source;
        FUZZ_CHECK(x->op == y->op && x->nparts == y->nparts);
        for (int p = 0; p < x->nparts; p++)
            FUZZ_CHECK(x->parts[p] == y->parts[p] && x->offsets[p] == y->offsets[p] &&
                       x->maxts[p] == y->maxts[p]);
    }
    if (a->has_source && a->source.known >= 0)
        FUZZ_CHECK(a->source.known == b->source.known);
    /* Operator state but the source's (a version 3 file's is a SOURCE
     * section, written again as operator state; compared above). */
    int na = 0, nb = 0;
    for (int i = 0; i < a->nopstates; i++)
        na += !a->has_source || a->opstates[i].op != a->source.op;
    for (int i = 0; i < b->nopstates; i++)
        nb += !b->has_source || b->opstates[i].op != b->source.op;
    FUZZ_CHECK(na == nb);
    for (int i = 0; i < a->nopstates; i++) {
        if (a->has_source && a->opstates[i].op == a->source.op)
            continue;
        const ck_opstate *x = &a->opstates[i], *y = ck_snap_opstate(b, x->op);
        FUZZ_CHECK(y && x->nlists == y->nlists);
        for (int l = 0; l < x->nlists; l++) {
            const ck_oplist *xl = &x->lists[l], *yl = ck_opstate_list(y, xl->name);
            FUZZ_CHECK(yl && xl->mode == yl->mode && xl->n == yl->n && xl->len == yl->len &&
                       memcmp(xl->data, yl->data, xl->len) == 0);
        }
    }
    for (int i = 0; i < a->nsinks; i++) {
        const ck_sink_capture *x = &a->sinks[i], *y = &b->sinks[i];
        FUZZ_CHECK(x->op == y->op && x->open_txn == y->open_txn && x->npending == y->npending);
        for (int k = 0; k < x->npending; k++)
            FUZZ_CHECK(x->pending[k] == y->pending[k]);
    }
}

static void round_trip(const ck_snapshot *s)
{
    static ck_capture c;
    static ck_kstate *ks[CK_MAX_OPS];
    static ck_snapshot again;
    int exact = to_capture(s, &c, ks);
    uint8_t *file;
    size_t len;
    FUZZ_CHECK(ck_snap_encode(&c, &file, &len) == CK_OK);
    const char *why;
    int rc = ck_snap_decode(file, len, &again, &why);
    if (rc)
        fprintf(stderr, "re-encoded snapshot refused: %s\n", why);
    FUZZ_CHECK(rc == CK_OK);
    if (exact)
        same_content(s, &again);
    ck_snapshot_free(&again);
    free(file);
    int nkeyed = c.nkeyed;
    ck_capture_free(&c);
    for (int i = 0; i < nkeyed; i++) {
        ck_kstate_free(ks[i]);
        ks[i] = NULL;
    }
}

/* A subtask of the job restores the file from its store. */
static void restore(const uint8_t *file, size_t len, const ck_snapshot *s, int decoded,
                    uint8_t mode)
{
    fuzz_job *job = fuzz_job_get();
    const ck_graph *g = job->env.g;
    uint32_t global = (uint32_t)(mode >> 1) % g->nsubtasks;
    uint64_t id = 1;
    if (decoded) {
        id = s->checkpoint_id;
        if (s->vertex >= 0 && s->vertex < g->nv && s->subtask >= 0 &&
            s->subtask < g->v[s->vertex].parallelism)
            global = g->v[s->vertex].base + (uint32_t)s->subtask;
    }
    ck_restore_point from = {.id = id};
    snprintf(from.dir, sizeof(from.dir), "checkpoints/fuzzjob/chk-%llu/",
             (unsigned long long)id);
    /* The handle the checkpoint recorded for this very file: the restore
     * reaches the decoder (a file of another size or checksum is refused
     * before it). */
    ck_handles hs = {0};
    char key[CK_HANDLE_KEY_MAX + 1];
    snprintf(key, sizeof(key), "%sstate", from.dir);
    FUZZ_CHECK(ck_handles_add(&hs, CK_HANDLE_SNAPSHOT, 0, key, len,
                              len >= 4 ? ck_get_u32(file + len - 4) : 0, CK_KGR_EMPTY) == CK_OK);
    from.handles = &hs;
    fake_world w = {0};
    fuzz_plat fp;
    fuzz_plat_init(&fp, &w, ck_ep_task(g, 0, global), ck_graph_host(g, global));
    ck_task *t = ck_task_new(&job->env, &fp.fp.plat, global, 0, &from);
    ck_handles_free(&hs);
    FUZZ_CHECK(t);
    ck_node n = ck_task_node(t);
    fuzz_settle(n, &w);
    if (fp.get_pending) {
        uint8_t *data = malloc(len ? len : 1);
        FUZZ_CHECK(data);
        memcpy(data, file, len);
        n.ops->on_complete(n.self, fp.get_token, CK_OK, data, len);
        w.now += 50 * CK_NS_PER_MS;
        fuzz_settle(n, &w);
    }
    ck_task_state st = ck_task_get_state(t);
    FUZZ_CHECK(st != CK_TASK_FINISHED);
    ck_task_del(t);
    fake_clear(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    size_t len = size - 1;
    uint8_t *file = malloc(len ? len : 1);
    FUZZ_CHECK(file);
    memcpy(file, data + 1, len);
    if ((mode & 1) && len >= 4)
        ck_put_u32(file + len - 4, ck_crc32c(0, file, len - 4));

    static ck_snapshot s;
    const char *why = NULL;
    int rc = ck_snap_decode(file, len, &s, &why);
    if (rc) {
        FUZZ_CHECK(rc == CK_ECHECKSUM || rc == CK_ECORRUPT || rc == CK_ENOMEM);
        FUZZ_CHECK(why && why[0]);
    } else {
        round_trip(&s);
    }
    restore(file, len, &s, rc == CK_OK, mode);
    if (rc == CK_OK)
        ck_snapshot_free(&s);
    free(file);
    return 0;
}
