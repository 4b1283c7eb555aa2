/*
 * test_simnet.c - which model times the job's transfers between hosts
 * (sim/simnet.h): the rule on topologies built by hand, on platforms
 * SimGrid loads (the generated one, one with a backbone, a Full zone with
 * a link two pairs of hosts share), and whole runs: the backbone
 * reproducer (tests/scenarios/backbone.json) limited by its backbone
 * under "auto" and "simgrid" and refused under "fast", the same job on
 * the generated platform left to the fast model, and a run under the
 * SimGrid model twice (the same run.json).
 *
 * SimGrid loads one platform per process: each platform is checked in a
 * child process.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "error.h"
#include "runutil.h"
#include "simnet.h"
#include "simplatform.h"

/* ---- the rule on topologies built by hand ------------------------------------------- */

#define MAXH 8
#define MAXL 64

/* Hosts 0 .. njob-1 and the store (njob); routes as lists of links. */
typedef struct hand {
    int njob;
    const char *names[MAXH + 1];
    ck_simnet_link links[MAXL];
    char lnames[MAXL][16];
    int nlinks;
    int route[MAXH + 1][MAXH + 1][8];
    int len[MAXH + 1][MAXH + 1];
    double lat[MAXH + 1][MAXH + 1];
} hand;

static int hand_route(void *ctx, int a, int b, int *links, int cap, double *lat)
{
    const hand *h = ctx;
    for (int i = 0; i < h->len[a][b] && i < cap; i++)
        links[i] = h->route[a][b][i];
    *lat = h->lat[a][b];
    return h->len[a][b];
}

static int add_link(hand *h, const char *name, double bw, int policy)
{
    int l = h->nlinks++;
    snprintf(h->lnames[l], sizeof(h->lnames[l]), "%s", name);
    h->links[l] = (ck_simnet_link){.bw = bw, .policy = policy, .name = h->lnames[l]};
    return l;
}

static void add_to_route(hand *h, int a, int b, int l, double lat)
{
    h->route[a][b][h->len[a][b]++] = l;
    h->lat[a][b] += lat;
}

/* The generated platform's shape: every host (the store too) has its own
 * link up (bandwidth up[h]) and down (down[h]), 50 us each. */
static void star(hand *h, int njob, const double *up, const double *down)
{
    static const char *const names[] = {"tm0", "tm1", "tm2", "tm3", "tm4", "tm5", "tm6", "tm7"};
    memset(h, 0, sizeof(*h));
    h->njob = njob;
    for (int i = 0; i < njob; i++)
        h->names[i] = names[i];
    h->names[njob] = "store";
    int lup[MAXH + 1], ldown[MAXH + 1];
    for (int i = 0; i <= njob; i++) {
        char n[16];
        snprintf(n, sizeof(n), "%s_UP", h->names[i]);
        lup[i] = add_link(h, n, up[i], CK_SIMNET_SHARED);
        snprintf(n, sizeof(n), "%s_DOWN", h->names[i]);
        ldown[i] = add_link(h, n, down[i], CK_SIMNET_SHARED);
    }
    for (int a = 0; a <= njob; a++)
        for (int b = 0; b <= njob; b++)
            if (a != b) {
                add_to_route(h, a, b, lup[a], 50e-6);
                add_to_route(h, a, b, ldown[b], 50e-6);
            }
}

/* A link every route between two hosts crosses, between the two own links. */
static void backbone(hand *h, double bw, int policy)
{
    int l = add_link(h, "backbone", bw, policy);
    for (int a = 0; a <= h->njob; a++)
        for (int b = 0; b <= h->njob; b++)
            if (a != b) {
                int *r = h->route[a][b];
                r[2] = r[1];
                r[1] = l;
                h->len[a][b] = 3;
                h->lat[a][b] += 50e-6;
            }
}

static int check(hand *h, double gamma, double *up, double *down, char *why, size_t whylen)
{
    ck_simnet_topo t = {.njob = h->njob, .names = h->names, .nlinks = h->nlinks,
                        .links = h->links, .route = hand_route, .ctx = h, .tcp_gamma = gamma};
    why[0] = 0;
    return ck_simnet_check(&t, up, down, why, whylen);
}

static const double GBPS10 = 1.25e9;

static void test_rule_star(void **state)
{
    (void)state;
    static hand h;
    double up[4] = {GBPS10, 2 * GBPS10, GBPS10, 250e6}, down[4] = {GBPS10, GBPS10, 3e9, 250e6};
    double gu[3], gd[3];
    char why[400];
    /* Three job hosts and the store, each with its own links: exact, and
     * each host's own bandwidth is its links'. */
    star(&h, 3, up, down);
    assert_int_equal(check(&h, 4194304, gu, gd, why, sizeof(why)), 1);
    for (int i = 0; i < 3; i++) {
        assert_true(gu[i] == up[i]);
        assert_true(gd[i] == down[i]);
    }
    /* A slow link that only the store's routes cross does not matter. */
    star(&h, 3, up, down);
    int slow = add_link(&h, "store_only", 1e3, CK_SIMNET_SHARED);
    for (int a = 0; a < 3; a++) {
        add_to_route(&h, a, 3, slow, 0);
        add_to_route(&h, 3, a, slow, 0);
    }
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    /* Two own links in series up: the slower one counts. */
    star(&h, 3, up, down);
    int nic = add_link(&h, "nic0", 0.5e9, CK_SIMNET_SHARED);
    for (int b = 1; b <= 3; b++)
        add_to_route(&h, 0, b, nic, 0);
    assert_int_equal(check(&h, 0, gu, gd, why, sizeof(why)), 1);
    assert_true(gu[0] == 0.5e9);
}

static void test_rule_backbone(void **state)
{
    (void)state;
    static hand h;
    double up[4] = {GBPS10, GBPS10, GBPS10, 250e6};
    char why[400];
    /* A shared backbone slower than the hosts' links together: it binds. */
    star(&h, 3, up, up);
    backbone(&h, 4e6, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "link \"backbone\""));
    assert_non_null(strstr(why, "from tm0 to tm1"));
    /* As fast as the hosts' own links can send into it, store included
     * (3 x 1.25e9 + 0.25e9): it cannot bind. One byte less: it can. */
    star(&h, 3, up, up);
    backbone(&h, 4e9, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    star(&h, 3, up, up);
    backbone(&h, 4e9 - 1, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    /* Each source or destination counts once, however many routes it
     * sends (takes) through the link: hosts that take 100 MB/s each can
     * take 400 MB/s from a backbone of 500 MB/s, not 1.2 GB/s; and the
     * same the other way round. */
    double slow[4] = {100e6, 100e6, 100e6, 100e6};
    star(&h, 3, up, slow);
    backbone(&h, 500e6, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    star(&h, 3, slow, up);
    backbone(&h, 500e6, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    star(&h, 3, slow, up);
    backbone(&h, 399e6, CK_SIMNET_SHARED);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    /* A FATPIPE backbone limits each transfer by itself: slower than a
     * host's link, it binds however few use it; as fast, never. */
    star(&h, 3, up, up);
    backbone(&h, 1e9, CK_SIMNET_FATPIPE);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "FATPIPE"));
    star(&h, 3, up, up);
    backbone(&h, GBPS10, CK_SIMNET_FATPIPE);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    /* Any other sharing policy: not honoured. */
    star(&h, 3, up, up);
    backbone(&h, 1e12, CK_SIMNET_OTHER);
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
}

static void test_rule_not_own(void **state)
{
    (void)state;
    static hand h;
    double up[4] = {GBPS10, GBPS10, GBPS10, 250e6};
    char why[400];
    /* One link per host for both directions (SHARED, not split): traffic
     * up and down shares it, which the fast model's two sides do not. */
    star(&h, 3, up, up);
    for (int a = 0; a <= 3; a++)
        for (int b = 0; b <= 3; b++)
            if (a != b)
                h.route[a][b][1] = h.route[b][a][0]; /* b's link up, used down */
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "crosses no link of"));
    /* A link of its own per pair (a full mesh): no link is all of a
     * host's routes', so no host has a link of its own. */
    memset(&h, 0, sizeof(h));
    h.njob = 2;
    h.names[0] = "tm0";
    h.names[1] = "jm";
    h.names[2] = "store";
    for (int a = 0; a <= 2; a++)
        for (int b = 0; b <= 2; b++)
            if (a != b) {
                char n[16];
                snprintf(n, sizeof(n), "l%d%d", a, b);
                add_to_route(&h, a, b, add_link(&h, n, GBPS10, CK_SIMNET_SHARED), 1e-4);
            }
    /* With two job hosts, a pair's link is its source's and its
     * destination's own: exact. */
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
    static const char *const three[] = {"tm0", "tm1", "jm", "store"};
    memset(&h, 0, sizeof(h));
    h.njob = 3;
    for (int i = 0; i < 4; i++)
        h.names[i] = three[i];
    for (int a = 0; a <= 3; a++)
        for (int b = 0; b <= 3; b++)
            if (a != b) {
                char n[16];
                snprintf(n, sizeof(n), "l%d%d", a, b);
                add_to_route(&h, a, b, add_link(&h, n, GBPS10, CK_SIMNET_SHARED), 1e-4);
            }
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "the route from tm0 to tm1 crosses no link of tm0's own"));
    /* A route SimGrid cannot give. */
    star(&h, 3, up, up);
    h.len[1][2] = -1;
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "no route from tm1 to tm2"));
}

static void test_rule_racks(void **state)
{
    (void)state;
    static hand h;
    double up[5] = {GBPS10, GBPS10, GBPS10, GBPS10, 250e6};
    char why[400];
    /* Two racks, {tm0, tm1} and {tm2, tm3 (here the job manager's place),
     * store}, each behind an uplink that the routes leaving it cross. A
     * 100 Gbit/s uplink cannot bind (2 x 10 Gbit/s behind it); a 10 Gbit/s
     * one can. */
    for (int k = 0; k < 2; k++) {
        double bw = k ? GBPS10 : 12.5e9;
        star(&h, 4, up, up);
        int ua = add_link(&h, "uplinkA", bw, CK_SIMNET_SHARED);
        int ub = add_link(&h, "uplinkB", bw, CK_SIMNET_SHARED);
        for (int a = 0; a <= 4; a++)
            for (int b = 0; b <= 4; b++) {
                int ra = a < 2, rb = b < 2;
                if (a == b || ra == rb)
                    continue;
                add_to_route(&h, a, b, ra ? ua : ub, 1e-5);
            }
        int rc = check(&h, 4194304, NULL, NULL, why, sizeof(why));
        assert_int_equal(rc, k ? 0 : 1);
        if (k)
            assert_non_null(strstr(why, "uplinkA"));
    }
}

static void test_rule_window(void **state)
{
    (void)state;
    static hand h;
    double up[3] = {GBPS10, GBPS10, 250e6};
    char why[400];
    /* 50 us a link: a 200 us round trip lets a 4 MiB window carry 21 GB/s. */
    star(&h, 2, up, up);
    assert_int_equal(check(&h, 4194304, NULL, NULL, why, sizeof(why)), 1);
    /* 10 ms a link: 40 ms, 105 MB/s, below the 1.25 GB/s links. */
    for (int a = 0; a <= 2; a++)
        for (int b = 0; b <= 2; b++)
            h.lat[a][b] = a == b ? 0 : 20e-3;
    assert_int_equal(check(&h, 4194304, NULL, NULL, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "TCP window"));
    /* Without SimGrid's window bound (gamma 0): exact. */
    assert_int_equal(check(&h, 0, NULL, NULL, why, sizeof(why)), 1);
}

/* ---- platforms SimGrid loads --------------------------------------------------------------- */

/* Checks platform file `path` with job hosts tm0..tm<ntm-1> and jm in a
 * child (SimGrid loads one platform per process); returns the rule's
 * answer, with why and tm0's own bandwidth up. */
static int check_in_child(const char *path, int ntm, char *why, size_t whylen, double *up0)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        int argc = 2;
        char *argv[] = {"test_simnet", "--log=root.thres:critical", NULL};
        simgrid_init(&argc, argv);
        simgrid_load_platform(path);
        sg_host_t hosts[MAXH];
        for (int i = 0; i < ntm; i++) {
            char n[16];
            snprintf(n, sizeof(n), "tm%d", i);
            hosts[i] = sg_host_by_name(n);
        }
        hosts[ntm] = sg_host_by_name("jm");
        double up[MAXH] = {0}, down[MAXH];
        char w[400] = "";
        int rc = ck_simnet_check_platform(hosts, ntm + 1, sg_host_by_name("store"), up, down, w,
                                          sizeof(w));
        char out[512];
        int n = snprintf(out, sizeof(out), "%d %.17g %s", rc, up[0], w);
        ssize_t wr = write(fd[1], out, (size_t)n);
        _exit(wr == n ? 0 : 1);
    }
    close(fd[1]);
    char buf[512];
    ssize_t n = 0, r;
    while ((r = read(fd[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
        n += r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    buf[n] = 0;
    int rc, off = 0;
    assert_int_equal(sscanf(buf, "%d %lg %n", &rc, up0, &off), 2);
    snprintf(why, whylen, "%s", buf + off);
    return rc;
}

#define DOCTYPE "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"

static void test_platform_generated(void **state)
{
    (void)state;
    /* The platform chandy writes: exact, as sim/simgrid.c assumes without
     * reading its routes; a host's own bandwidth is cluster.link's. */
    ck_cluster_spec c = {.cores = 2, .speed = 1e9, .link_bw = 1.25e9, .link_lat = 50000,
                         .store_bw = 250e6, .store_lat = 1000000, .disk_read_bw = 5e8,
                         .disk_write_bw = 3e8};
    char path[300], why[400];
    snprintf(path, sizeof(path), "%s/gen.xml", tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(ck_simplat_write(f, &c, NULL, 0, 3), CK_OK);
    assert_int_equal(fclose(f), 0);
    double up0 = 0;
    assert_int_equal(check_in_child(path, 3, why, sizeof(why), &up0), 1);
    assert_true(up0 == 1.25e9);
    assert_int_equal(ck_simnet_check_file(path, why, sizeof(why)), 0);
    /* The same with a 4 MB/s backbone in its zone: SimGrid's model. */
    char *text = slurp(path);
    assert_non_null(text);
    const char *zone = "routing=\"Cluster\">\n";
    char *at = strstr(text, zone);
    assert_non_null(at);
    at += strlen(zone);
    char bb[8192];
    snprintf(bb, sizeof(bb), "%.*s  <backbone id=\"bb\" bandwidth=\"4MBps\" latency=\"50us\"/>\n%s",
             (int)(at - text), text, at);
    free(text);
    assert_non_null(put_file("bb.xml", bb));
    snprintf(path, sizeof(path), "%s/bb.xml", tmp);
    assert_int_equal(check_in_child(path, 3, why, sizeof(why), &up0), 0);
    assert_non_null(strstr(why, "link \"bb\" (4e+06 B/s) is shared by"));
}

static void test_platform_full_zone(void **state)
{
    (void)state;
    /* A Full zone: every host has its own link (nic_*), and the routes
     * tm0 -> tm1 and tm2 -> jm also cross one link "shared" of 1 Gbit/s. */
    static const char *hosts[] = {"tm0", "tm1", "tm2", "jm", "store"};
    char xml[16384];
    for (int k = 0; k < 2; k++) {
        size_t off = (size_t)snprintf(xml, sizeof(xml),
                                      "<?xml version='1.0'?>\n" DOCTYPE
                                      "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n");
        for (int i = 0; i < 5; i++)
            off += (size_t)snprintf(xml + off, sizeof(xml) - off,
                                    "<host id=\"%s\" speed=\"1Gf\">%s</host>\n"
                                    "<link id=\"up_%s\" bandwidth=\"1GBps\" latency=\"10us\"/>\n"
                                    "<link id=\"down_%s\" bandwidth=\"1GBps\" latency=\"10us\"/>\n",
                                    hosts[i],
                                    i == 4 ? "<disk id=\"d\" read_bw=\"1GBps\" write_bw=\"1GBps\"/>"
                                           : "",
                                    hosts[i], hosts[i]);
        off += (size_t)snprintf(xml + off, sizeof(xml) - off,
                                "<link id=\"shared\" bandwidth=\"125MBps\" latency=\"10us\"/>\n");
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++) {
                if (a == b)
                    continue;
                int through = k && ((a == 0 && b == 1) || (a == 2 && b == 3));
                off += (size_t)snprintf(xml + off, sizeof(xml) - off,
                                        "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">"
                                        "<link_ctn id=\"up_%s\"/>%s<link_ctn id=\"down_%s\"/>"
                                        "</route>\n",
                                        hosts[a], hosts[b], hosts[a],
                                        through ? "<link_ctn id=\"shared\"/>" : "", hosts[b]);
            }
        snprintf(xml + off, sizeof(xml) - off, "</zone>\n</platform>\n");
        assert_non_null(put_file("full.xml", xml));
        char path[300], why[400];
        snprintf(path, sizeof(path), "%s/full.xml", tmp);
        double up0 = 0;
        int rc = check_in_child(path, 3, why, sizeof(why), &up0);
        if (!k) {
            /* Own links only: exact. */
            assert_int_equal(rc, 1);
            assert_true(up0 == 1e9);
        } else {
            assert_int_equal(rc, 0);
            assert_non_null(strstr(why, "link \"shared\""));
            assert_non_null(strstr(why, "from tm0 to tm1 and from tm2 to jm"));
        }
    }
}

static void test_platform_file_text(void **state)
{
    (void)state;
    char why[400];
    static const struct {
        const char *text, *want;
    } marks[] = {
        {"<link id=\"l\" bandwidth=\"1GBps\" bandwidth_file=\"bw.txt\"/>", "bandwidth_file"},
        {"<link id=\"l\" bandwidth=\"1GBps\" latency_file=\"lat.txt\"/>", "latency_file"},
        {"<trace_connect kind='LATENCY' trace=\"t\" element=\"l\"/>", "LATENCY trace"},
        {"<config><prop id=\"network/TCP-gamma\" value=\"0\"/></config>", "<config>"},
    };
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
        /* Deep in a long file: past the first chunk the reader takes. */
        size_t n = 200000;
        char *text = malloc(n + 200);
        assert_non_null(text);
        memset(text, ' ', n);
        snprintf(text + 65530, n + 200 - 65530, "%s", marks[i].text);
        text[65530 + strlen(marks[i].text)] = ' ';
        text[n] = 0;
        assert_non_null(put_file("marks.xml", text));
        free(text);
        char path[300];
        snprintf(path, sizeof(path), "%s/marks.xml", tmp);
        assert_int_equal(ck_simnet_check_file(path, why, sizeof(why)), 1);
        assert_non_null(strstr(why, marks[i].want));
    }
    assert_int_equal(ck_simnet_check_file("/nonexistent.xml", why, sizeof(why)), -1);
}

/* ---- whole runs ------------------------------------------------------------------------ */

static const char *str(const cJSON *j, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    assert_true(cJSON_IsString(x));
    return x->valuestring;
}

/* tests/scenarios/backbone.json with cluster.transfer_model set (NULL:
 * left out) and, when `platform` is 0, without its platform file (the
 * generated one). Returns the path of the variant. */
static const char *backbone_variant(const char *name, const char *model, int platform)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/backbone.json");
    assert_non_null(text);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    assert_non_null(sc);
    cJSON *cl = cJSON_GetObjectItemCaseSensitive(sc, "cluster");
    if (platform)
        cJSON_ReplaceItemInObjectCaseSensitive(
            cl, "platform", cJSON_CreateString(CHANDY_SOURCE_DIR "/tests/scenarios/backbone.xml"));
    else
        cJSON_DeleteItemFromObjectCaseSensitive(cl, "platform");
    if (model)
        cJSON_AddStringToObject(cl, "transfer_model", model);
    cJSON_DeleteItemFromObjectCaseSensitive(sc, "expect");
    char *out = cJSON_Print(sc);
    cJSON_Delete(sc);
    const char *path = put_file(name, out);
    free(out);
    assert_non_null(path);
    return path;
}

static double vertex_backpressure(const cJSON *run, const char *vertex)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(run, "job"), "vertices"))
    {
        if (!strcmp(str(v, "name"), vertex))
            return num(v, "backpressured_ratio", NULL);
    }
    fail_msg("no vertex %s", vertex);
    return -1;
}

static void test_backbone_reproducer(void **state)
{
    (void)state;
    char args[600];
    /* The scenario as written: its own expect block holds. */
    snprintf(args, sizeof(args), "run tests/scenarios/backbone.json --out %s/bb --quiet", tmp);
    assert_chandy("bb", args, 0);
    cJSON *bb = load_run("bb");
    /* auto, and simgrid asked for: the backbone limits the job. 8000
     * records/s of 1 KB over two rebalance edges would send 12 MB/s
     * between hosts; 4 MB/s carry about 2600 a second. */
    const char *path = backbone_variant("bb-simgrid.json", "simgrid", 1);
    snprintf(args, sizeof(args), "run %s --out %s/bbs --quiet", path, tmp);
    assert_chandy("bbs", args, 0);
    cJSON *bbs = load_run("bbs");
    cJSON *runs[] = {bb, bbs};
    for (int i = 0; i < 2; i++) {
        assert_string_equal(str(runs[i], "transfer_model"), "simgrid");
        assert_true(num(runs[i], "throughput_in_rps", NULL) < 3000);
        assert_true(num(runs[i], "throughput_in_rps", NULL) > 2000);
        assert_true(vertex_backpressure(runs[i], "source") > 0.9);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(runs[i], "correctness"), "ok")));
    }
    assert_non_null(strstr(str(bb, "transfer_model_why"), "auto: link \"backbone\""));
    assert_string_equal(str(bbs, "transfer_model_why"), "asked for (cluster.transfer_model)");
    /* The same job on the generated platform: no backbone, the fast
     * model, every record read when it comes. */
    path = backbone_variant("gen.json", NULL, 0);
    snprintf(args, sizeof(args), "run %s --out %s/gen --quiet", path, tmp);
    assert_chandy("gen", args, 0);
    cJSON *gen = load_run("gen");
    assert_string_equal(str(gen, "transfer_model"), "fast");
    assert_true(num(gen, "throughput_in_rps", NULL) > 7900);
    assert_true(vertex_backpressure(gen, "source") < 0.1);
    assert_true(num(gen, "latency_ms", "p99") < 0.02 * num(bb, "latency_ms", "p99"));
    /* "fast" forced on the backbone: refused in one line naming the
     * scenario, the key, the platform file and the link, exit 2, no run. */
    path = backbone_variant("bb-fast.json", "fast", 1);
    snprintf(args, sizeof(args), "run %s --out %s/bbf", path, tmp);
    assert_chandy("bbf", args, 2);
    char errp[300];
    snprintf(errp, sizeof(errp), "%s/bbf.err", tmp);
    char *err = slurp(errp);
    assert_non_null(err);
    assert_non_null(strstr(err, "bb-fast.json: cluster.transfer_model: \"fast\" cannot honour "
                                "the platform " CHANDY_SOURCE_DIR "/tests/scenarios/backbone.xml: "
                                "link \"backbone\" (4e+06 B/s) is shared by"));
    assert_true(strchr(err, '\n') == err + strlen(err) - 1);
    free(err);
    assert_null(try_load_run("bbf"));
    cJSON_Delete(bb);
    cJSON_Delete(bbs);
    cJSON_Delete(gen);
}

/* What neither backend can honour is refused before anything runs. */
static void test_refused(void **state)
{
    (void)state;
    char args[600], errp[300];
    /* A model that does not exist. */
    const char *path = backbone_variant("bb-slow.json", "slow", 1);
    snprintf(args, sizeof(args), "validate %s", path);
    assert_chandy("bbv", args, 2);
    snprintf(errp, sizeof(errp), "%s/bbv.err", tmp);
    char *err = slurp(errp);
    assert_non_null(err);
    assert_non_null(strstr(err, "bb-slow.json: cluster.transfer_model: expected one of"));
    free(err);
    /* A platform over sockets, whose links are paced at cluster.link. */
    snprintf(args, sizeof(args), "run tests/scenarios/backbone.json --backend sockets --out %s/bbk",
             tmp);
    assert_chandy("bbk", args, 2);
    snprintf(errp, sizeof(errp), "%s/bbk.err", tmp);
    err = slurp(errp);
    assert_non_null(err);
    assert_non_null(strstr(err, "backbone.json: cluster.platform: the sockets backend cannot "
                                "honour a SimGrid platform"));
    assert_true(strchr(err, '\n') == err + strlen(err) - 1);
    free(err);
    /* SimGrid's model for 155 task managers and the job manager: up to
     * 24 180 transfers in flight, an actor each, more than a process
     * holds; 154 (23 870) run. */
    for (int k = 0; k < 2; k++) {
        char sc[1200];
        snprintf(sc, sizeof(sc),
                 "{\"cluster\": {\"taskmanagers\": %d, \"transfer_model\": \"simgrid\"},\n"
                 " \"workload\": {\"duration\": \"100 ms\", \"rate\": 10, \"partitions\": 1},\n"
                 " \"job\": {\"operators\": [{\"type\": \"source\"}, {\"type\": \"sink\"}]}}\n",
                 k ? 154 : 155);
        path = put_file(k ? "many-ok.json" : "many.json", sc);
        snprintf(args, sizeof(args), "run %s --out %s/many%d --quiet", path, tmp, k);
        assert_chandy(k ? "many1" : "many0", args, k ? 0 : 2);
    }
    snprintf(errp, sizeof(errp), "%s/many0.err", tmp);
    err = slurp(errp);
    assert_non_null(err);
    assert_non_null(strstr(err, "many.json: cluster.transfer_model: SimGrid's flow model (asked "
                                "for) keeps an actor per transfer in flight, up to 24180 between "
                                "these 156 hosts, more than the 24000 one process can hold"));
    free(err);
}

static void strip_wall(cJSON *j)
{
    cJSON_DeleteItemFromObject(j, "wall_time_s");
    cJSON_DeleteItemFromObject(j, "sim_speed");
}

/* A crash, failover and restore with SimGrid's model timing the job's
 * transfers: the same run.json twice. */
static void test_simgrid_model_determinism(void **state)
{
    (void)state;
    char *text = slurp(CHANDY_SOURCE_DIR "/scenarios/crash-recovery.json");
    assert_non_null(text);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(sc, "cluster"), "transfer_model",
                            "simgrid");
    char *out = cJSON_Print(sc);
    cJSON_Delete(sc);
    const char *path = put_file("crash-sg.json", out);
    free(out);
    assert_non_null(path);
    char args[600];
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof(args), "run %s --out %s/crash-sg%d --quiet", path, tmp, i);
        assert_chandy(i ? "crash-sg1" : "crash-sg0", args, 0); /* its expect block held */
    }
    cJSON *a = load_run("crash-sg0"), *b = load_run("crash-sg1");
    assert_string_equal(str(a, "transfer_model"), "simgrid");
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "recoveries")) >= 1);
    strip_wall(a);
    strip_wall(b);
    char *ta = cJSON_Print(a), *tb = cJSON_Print(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_star),
        cmocka_unit_test(test_rule_backbone),
        cmocka_unit_test(test_rule_not_own),
        cmocka_unit_test(test_rule_racks),
        cmocka_unit_test(test_rule_window),
        cmocka_unit_test(test_platform_generated),
        cmocka_unit_test(test_platform_full_zone),
        cmocka_unit_test(test_platform_file_text),
        cmocka_unit_test(test_backbone_reproducer),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_simgrid_model_determinism),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
