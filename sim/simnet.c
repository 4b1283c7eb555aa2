#include "simnet.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/config.h>
#include <xbt/dynar.h>

#include "error.h"
#include "sgshim.h"

#define NONE (-1)
#define MANY (-2)

/* What the routes say of one link. */
typedef struct lstat {
    int src, dst;       /* the one host the routes through it start (end) at; NONE; MANY */
    int to_job;         /* routes through it that end at a job host */
    int from_job;       /* routes through it that start at a job host */
    int on_job;         /* routes between two job hosts through it */
    int pa, pb, qa, qb; /* the first two of those, to say which */
    int own_up, own_down; /* a SHARED link of its source's (destination's) own: rule 1 */
    int last;           /* pass 2: the last source counted */
    long dsts;          /* pass 2: where its bitset of destinations counted starts (-1: none) */
    double sum_up, sum_down; /* own bandwidth of its distinct sources (destinations) */
} lstat;

const char *ck_simnet_model_name(ck_simnet_model m)
{
    switch (m) {
    case CK_SIMNET_FAST:
        return "fast";
    case CK_SIMNET_SIMGRID:
        return "simgrid";
    default:
        return "auto";
    }
}

/* Reads the route from a to b into links (and its latency into lat, unless
 * NULL); n links, or -1 with why said. */
static int read_route(const ck_simnet_topo *t, int a, int b, int *links, double *lat, char *why,
                      size_t whylen)
{
    double ignored;
    int n = t->route(t->ctx, a, b, links, CK_SIMNET_ROUTE_MAX, lat ? lat : &ignored);
    if (n < 0) {
        snprintf(why, whylen, "SimGrid gives no route from %s to %s", t->names[a], t->names[b]);
        return -1;
    }
    if (n > CK_SIMNET_ROUTE_MAX) {
        snprintf(why, whylen, "the route from %s to %s crosses %d links, more than the %d the "
                 "fast model reads", t->names[a], t->names[b], n, CK_SIMNET_ROUTE_MAX);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (links[i] < 0 || links[i] >= t->nlinks) {
            snprintf(why, whylen, "the route from %s to %s crosses a link SimGrid does not list",
                     t->names[a], t->names[b]);
            return -1;
        }
        for (int k = 0; k < i; k++)
            if (links[k] == links[i]) {
                snprintf(why, whylen, "the route from %s to %s crosses link \"%s\" twice",
                         t->names[a], t->names[b], t->links[links[i]].name);
                return -1;
            }
    }
    return n;
}

static void note_host(int *slot, int h)
{
    if (*slot == NONE)
        *slot = h;
    else if (*slot != h)
        *slot = MANY;
}

/* Rate of the pair (a, b) in the fast model: its own links' least. */
static double pair_rate(const double *up, const double *down, int a, int b)
{
    return up[a] < down[b] ? up[a] : down[b];
}

int ck_simnet_check(const ck_simnet_topo *t, double *up_out, double *down_out, char *why,
                    size_t whylen)
{
    int nh = t->njob + 1; /* the job's hosts and the store */
    int links[CK_SIMNET_ROUTE_MAX];
    double lat = 0;
    uint8_t *bits = NULL;
    lstat *st = calloc((size_t)(t->nlinks ? t->nlinks : 1), sizeof(*st));
    double *up = malloc((size_t)nh * sizeof(*up)), *down = malloc((size_t)nh * sizeof(*down));
    if (!st || !up || !down) {
        free(st);
        free(up);
        free(down);
        return CK_ENOMEM;
    }
    int exact = 1;
    for (int l = 0; l < t->nlinks; l++) {
        st[l].src = st[l].dst = NONE;
        st[l].pa = st[l].qa = NONE;
        st[l].last = NONE;
    }
    /* Pass 1: who crosses each link. */
    for (int a = 0; a < nh && exact; a++)
        for (int b = 0; b < nh && exact; b++) {
            if (a == b)
                continue;
            int n = read_route(t, a, b, links, NULL, why, whylen);
            if (n < 0) {
                exact = 0;
                break;
            }
            int job = a < t->njob && b < t->njob;
            for (int i = 0; i < n; i++) {
                lstat *s = &st[links[i]];
                note_host(&s->src, a);
                note_host(&s->dst, b);
                s->to_job += b < t->njob;
                s->from_job += a < t->njob;
                if (job) {
                    if (s->pa == NONE) {
                        s->pa = a;
                        s->pb = b;
                    } else if (s->qa == NONE) {
                        s->qa = a;
                        s->qb = b;
                    }
                    s->on_job++;
                }
            }
        }
    /* A host's own links (rule 1), and its own bandwidth each way. */
    for (int h = 0; h < nh; h++)
        up[h] = down[h] = INFINITY;
    for (int l = 0; l < t->nlinks && exact; l++) {
        lstat *s = &st[l];
        if (t->links[l].policy != CK_SIMNET_SHARED)
            continue;
        if (s->src >= 0 && s->to_job == (s->src < t->njob ? t->njob - 1 : t->njob)) {
            s->own_up = 1;
            if (t->links[l].bw < up[s->src])
                up[s->src] = t->links[l].bw;
        }
        if (s->dst >= 0 && s->from_job == (s->dst < t->njob ? t->njob - 1 : t->njob)) {
            s->own_down = 1;
            if (t->links[l].bw < down[s->dst])
                down[s->dst] = t->links[l].bw;
        }
    }
    /* A bitset of the destinations counted for each shared link on a job
     * route (pass 2 counts sources in order, destinations with these). */
    size_t row = ((size_t)nh + 7) / 8, nbits = 0;
    for (int l = 0; l < t->nlinks; l++) {
        lstat *s = &st[l];
        s->dsts = -1;
        if (exact && s->on_job && !s->own_up && !s->own_down) {
            s->dsts = (long)nbits;
            nbits += row;
        }
    }
    if (exact && nbits && !(bits = calloc(nbits, 1))) {
        free(st);
        free(up);
        free(down);
        return CK_ENOMEM;
    }
    /* Pass 2, source by source: every job route has both own links; no
     * other link on it limits a transfer by itself; the TCP window does
     * not bind; what the sources can send into each shared link, and its
     * destinations take from it. */
    for (int a = 0; a < nh && exact; a++)
        for (int b = 0; b < nh && exact; b++) {
            if (a == b)
                continue;
            int job = a < t->njob && b < t->njob, has_up = 0, has_down = 0;
            int n = read_route(t, a, b, links, job ? &lat : NULL, why, whylen);
            if (n < 0) {
                exact = 0;
                break;
            }
            double rate = pair_rate(up, down, a, b);
            for (int i = 0; i < n && exact; i++) {
                const ck_simnet_link *L = &t->links[links[i]];
                lstat *s = &st[links[i]];
                has_up |= s->own_up && s->src == a;
                has_down |= s->own_down && s->dst == b;
                if (s->own_up || s->own_down)
                    continue;
                if (s->last != a) {
                    s->last = a;
                    s->sum_up += up[a];
                }
                if (s->dsts >= 0) {
                    uint8_t *seen = bits + s->dsts + b / 8;
                    if (!(*seen & (1u << (b % 8)))) {
                        *seen |= (uint8_t)(1u << (b % 8));
                        s->sum_down += down[b];
                    }
                }
                if (!job)
                    continue;
                if (L->policy == CK_SIMNET_OTHER) {
                    snprintf(why, whylen,
                             "link \"%s\" on the route from %s to %s shares its bandwidth in a "
                             "way the fast model does not (neither SHARED nor FATPIPE)",
                             L->name, t->names[a], t->names[b]);
                    exact = 0;
                } else if (L->policy == CK_SIMNET_FATPIPE && L->bw < rate && isfinite(rate)) {
                    snprintf(why, whylen,
                             "link \"%s\" (FATPIPE, %.6g B/s) limits each transfer from %s to %s "
                             "below the %.6g B/s of their own links",
                             L->name, L->bw, t->names[a], t->names[b], rate);
                    exact = 0;
                }
            }
            if (!job || !exact)
                continue;
            if (!has_up || !has_down) {
                int h = has_up ? b : a;
                snprintf(why, whylen,
                         "the route from %s to %s crosses no link of %s's own (a link that every "
                         "route %s %s crosses, and no other route)",
                         t->names[a], t->names[b], t->names[h], has_up ? "into" : "from",
                         t->names[h]);
                exact = 0;
            } else if (t->tcp_gamma > 0 && lat > 0 && t->tcp_gamma / (2 * lat) < rate) {
                snprintf(why, whylen,
                         "SimGrid's TCP window (network/TCP-gamma, %.6g bytes) limits a transfer "
                         "from %s to %s over its %.6g s round trip to %.6g B/s, below the "
                         "%.6g B/s of their own links",
                         t->tcp_gamma, t->names[a], t->names[b], 2 * lat,
                         t->tcp_gamma / (2 * lat), rate);
                exact = 0;
            }
        }
    /* A shared link on a job route binds when the hosts around it can
     * push more through it than it carries. */
    for (int l = 0; l < t->nlinks && exact; l++) {
        const lstat *s = &st[l];
        const ck_simnet_link *L = &t->links[l];
        if (!s->on_job || s->own_up || s->own_down || L->policy != CK_SIMNET_SHARED)
            continue;
        double most = s->sum_up < s->sum_down ? s->sum_up : s->sum_down;
        if (most > L->bw) {
            char pairs[200];
            if (s->qa != NONE)
                snprintf(pairs, sizeof(pairs), "the routes from %s to %s and from %s to %s",
                         t->names[s->pa], t->names[s->pb], t->names[s->qa], t->names[s->qb]);
            else
                snprintf(pairs, sizeof(pairs), "the route from %s to %s and the store's",
                         t->names[s->pa], t->names[s->pb]);
            snprintf(why, whylen,
                     "link \"%s\" (%.6g B/s) is shared by %s, whose hosts' own links can move "
                     "%.6g B/s through it",
                     L->name, L->bw, pairs, most);
            exact = 0;
        }
    }
    if (exact) {
        if (up_out)
            memcpy(up_out, up, (size_t)t->njob * sizeof(*up));
        if (down_out)
            memcpy(down_out, down, (size_t)t->njob * sizeof(*down));
    }
    free(bits);
    free(st);
    free(up);
    free(down);
    return exact;
}

/* ---- the platform SimGrid loaded ------------------------------------------------------ */

typedef struct sg_topo {
    sg_host_t *hosts;      /* njob + 1: the store last */
    sg_link_t *list;       /* every link, in SimGrid's order (by name) */
    size_t nlist;
    sg_link_t *keys;       /* open addressing: link -> its index in list */
    int *vals;
    size_t cap;
    xbt_dynar_t route;
} sg_topo;

static size_t link_slot(const sg_topo *g, sg_link_t l)
{
    uintptr_t x = (uintptr_t)l;
    x ^= x >> 17;
    x *= 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 20) & (g->cap - 1);
}

static int link_index(const sg_topo *g, sg_link_t l)
{
    for (size_t j = link_slot(g, l);; j = (j + 1) & (g->cap - 1)) {
        if (!g->keys[j])
            return -1;
        if (g->keys[j] == l)
            return g->vals[j];
    }
}

static int sg_route(void *ctx, int a, int b, int *links, int cap, double *lat)
{
    sg_topo *g = ctx;
    xbt_dynar_reset(g->route);
    sg_host_get_route(g->hosts[a], g->hosts[b], g->route);
    int n = (int)xbt_dynar_length(g->route);
    *lat = 0;
    for (int i = 0; i < n && i < cap; i++) {
        sg_link_t l = xbt_dynar_get_as(g->route, (unsigned long)i, sg_link_t);
        links[i] = link_index(g, l);
        *lat += sg_link_get_latency(l);
    }
    return n;
}

int ck_simnet_check_platform(sg_host_t *hosts, int njob, sg_host_t store, double *up,
                             double *down, char *why, size_t whylen)
{
    sg_topo g = {0};
    ck_simnet_link *links = NULL;
    const char **names = NULL;
    int rc = CK_ENOMEM;
    g.nlist = sg_link_count();
    g.list = sg_link_list();
    for (g.cap = 16; g.cap < 2 * g.nlist + 2;)
        g.cap *= 2;
    g.keys = calloc(g.cap, sizeof(*g.keys));
    g.vals = calloc(g.cap, sizeof(*g.vals));
    g.hosts = malloc((size_t)(njob + 1) * sizeof(*g.hosts));
    names = malloc((size_t)(njob + 1) * sizeof(*names));
    links = calloc(g.nlist ? g.nlist : 1, sizeof(*links));
    if ((g.nlist && !g.list) || !g.keys || !g.vals || !g.hosts || !names || !links)
        goto out;
    g.route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int h = 0; h < njob; h++)
        g.hosts[h] = hosts[h];
    g.hosts[njob] = store;
    for (int h = 0; h <= njob; h++)
        names[h] = sg_host_get_name(g.hosts[h]);
    for (size_t i = 0; i < g.nlist; i++) {
        size_t j = link_slot(&g, g.list[i]);
        while (g.keys[j])
            j = (j + 1) & (g.cap - 1);
        g.keys[j] = g.list[i];
        g.vals[j] = (int)i;
        int p = ck_sg_link_policy(g.list[i]);
        links[i] = (ck_simnet_link){
            .bw = sg_link_get_bandwidth(g.list[i]),
            .policy = p == 1 ? CK_SIMNET_SHARED : p == 0 ? CK_SIMNET_FATPIPE : CK_SIMNET_OTHER,
            .name = sg_link_get_name(g.list[i]),
        };
    }
    ck_simnet_topo t = {
        .njob = njob,
        .names = names,
        .nlinks = (int)g.nlist,
        .links = links,
        .route = sg_route,
        .ctx = &g,
        .tcp_gamma = sg_cfg_get_double("network/TCP-gamma"),
    };
    rc = ck_simnet_check(&t, up, down, why, whylen);
    xbt_dynar_free(&g.route);
out:
    free(g.list);
    free(g.keys);
    free(g.vals);
    free(g.hosts);
    free(names);
    free(links);
    return rc;
}

/* ---- rule 4 on the file's text ---------------------------------------------------------- */

int ck_simnet_check_file(const char *path, char *why, size_t whylen)
{
    static const struct {
        const char *text, *says;
    } marks[] = {
        {"bandwidth_file", "changes a link's bandwidth over time (bandwidth_file)"},
        {"latency_file", "changes a link's latency over time (latency_file)"},
        {"state_file", "turns resources off and on over time (state_file)"},
        {"\"BANDWIDTH\"", "changes a link's bandwidth over time (a BANDWIDTH trace)"},
        {"'BANDWIDTH'", "changes a link's bandwidth over time (a BANDWIDTH trace)"},
        {"\"LATENCY\"", "changes a link's latency over time (a LATENCY trace)"},
        {"'LATENCY'", "changes a link's latency over time (a LATENCY trace)"},
        {"_AVAIL\"", "turns resources off and on over time (an availability trace)"},
        {"_AVAIL'", "turns resources off and on over time (an availability trace)"},
        {"<config", "sets SimGrid's configuration itself (<config>)"},
    };
    enum { CHUNK = 65536, KEEP = 32 };
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, whylen, "cannot read it");
        return -1;
    }
    char *buf = malloc(CHUNK + KEEP + 1);
    if (!buf) {
        fclose(f);
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t kept = 0, n;
    int found = 0;
    while (!found && (n = fread(buf + kept, 1, CHUNK, f)) > 0) {
        size_t len = kept + n;
        buf[len] = 0;
        /* a NUL in the text would hide what follows: search past it */
        for (size_t off = 0; off < len && !found; off += strlen(buf + off) + 1)
            for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]) && !found; m++)
                if (strstr(buf + off, marks[m].text)) {
                    snprintf(why, whylen, "the platform %s", marks[m].says);
                    found = 1;
                }
        kept = len < KEEP ? len : KEEP; /* a mark across two chunks */
        memmove(buf, buf + len - kept, kept);
    }
    int bad = ferror(f);
    fclose(f);
    free(buf);
    if (bad && !found) {
        snprintf(why, whylen, "cannot read it");
        return -1;
    }
    return found;
}
