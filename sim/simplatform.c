#include "simplatform.h"

#include "error.h"

static void host_name(char *buf, size_t len, int i, int ntm)
{
    ck_host_name(i, ntm, buf, len);
}

/* "speed,speed*f1,speed*f2..." for host h: a pstate per distinct slow_cpu factor. */
static void speeds(char *buf, size_t len, const ck_cluster_spec *c, const ck_fault *faults,
                   int nfaults, int h)
{
    double base = c->speed;
    size_t off = (size_t)snprintf(buf, len, "%.17gf", base);
    for (int i = 0; i < nfaults && off < len; i++) {
        const ck_fault *f = &faults[i];
        if (f->kind != CK_FAULT_SLOW_CPU || f->host != h)
            continue;
        int seen = 0;
        for (int k = 0; k < i; k++)
            seen |= faults[k].kind == CK_FAULT_SLOW_CPU && faults[k].host == h &&
                    faults[k].factor == f->factor;
        if (!seen)
            off += (size_t)snprintf(buf + off, len - off, ",%.17gf", base * f->factor);
    }
}

int ck_simplat_write(FILE *f, const ck_cluster_spec *c, const ck_fault *faults, int nfaults,
                     int ntm)
{
    char sp[2048];
    int nh = ntm + 2;
    char a[32];
    /* A Cluster zone (a star in SimGrid 3.32): each host's route to
     * another is its link up into the switch and the other's link down,
     * without a route per pair of hosts, so that the file grows linearly. */
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "<zone id=\"cluster\" routing=\"Cluster\">\n");
    for (int i = 0; i < nh; i++) {
        host_name(a, sizeof(a), i, ntm);
        speeds(sp, sizeof(sp), c, faults, nfaults, i);
        if (i == ntm + 1) {
            fprintf(f,
                    "  <host id=\"%s\" speed=\"%s\" core=\"%d\">\n"
                    "    <disk id=\"store_disk\" read_bw=\"%.17gBps\" write_bw=\"%.17gBps\"/>\n"
                    "  </host>\n",
                    a, sp, c->cores, c->disk_read_bw, c->disk_write_bw);
        } else {
            fprintf(f, "  <host id=\"%s\" speed=\"%s\" core=\"%d\"/>\n", a, sp, c->cores);
        }
    }
    for (int i = 0; i < nh; i++) {
        host_name(a, sizeof(a), i, ntm);
        int store = i == ntm + 1;
        fprintf(f,
                "  <link id=\"link_%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n",
                a,
                store ? c->store_bw : c->link_bw,
                (double)(store ? c->store_lat : c->link_lat) / 1e9);
        fprintf(f,
                "  <link id=\"lo_%s\" bandwidth=\"100GBps\" latency=\"0s\" "
                "sharing_policy=\"FATPIPE\"/>\n",
                a);
    }
    for (int i = 0; i < nh; i++) {
        host_name(a, sizeof(a), i, ntm);
        fprintf(f, "  <host_link id=\"%s\" up=\"link_%s_UP\" down=\"link_%s_DOWN\"/>\n", a, a,
                a);
    }
    for (int i = 0; i < nh; i++) {
        host_name(a, sizeof(a), i, ntm);
        fprintf(f, "  <route src=\"%s\" dst=\"%s\"><link_ctn id=\"lo_%s\"/></route>\n", a, a, a);
    }
    fprintf(f, "</zone>\n</platform>\n");
    return ferror(f) ? CK_EIO : CK_OK;
}
