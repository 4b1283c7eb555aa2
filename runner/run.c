#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "error.h"
#include "expect.h"
#include "jsonin.h"
#include "memory.h"
#include "nemesis.h"
#include "rng.h"
#include "runjson.h"
#include "summary.h"
#include "savepoint.h"
#include "simgrid.h"
#include "snapshot.h"
#include "sockets.h"
#include "storefs.h"
#include "storekey.h"
#include "verify.h"

/* Whether a run checks invariants unless told (CMake's CHANDY_INVARIANTS). */
#ifndef CK_INVARIANTS_DEFAULT
#define CK_INVARIANTS_DEFAULT 0
#endif

/* Empties what an earlier run left in the output directory: its store, its
 * sinks' output and its run.json must not be mistaken for this run's (a
 * run that cannot write its own must not leave the last one's standing). */
/* What a run empties in its output directory: the directories first. */
static const char *const cleared[] = {"store", "sink", "output", "local", "run.json",
                                      "run.json.part"};
#define CLEARED_DIRS 4

static int clean_outdir(const char *outdir)
{
    const char *const *parts = cleared;
    for (size_t i = 0; i < sizeof(cleared) / sizeof(cleared[0]); i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/%s", outdir, parts[i]);
        if (ck_storefs_rmtree(path))
            return CK_EIO;
    }
    return CK_OK;
}

/*
 * A run directory is recognised by its marker file, written at the start
 * of every run before anything is emptied, or by the run.json (or
 * run.json.part) of a run made before markers existed. A run only ever
 * empties store/, sink/ and output/ of a run directory, or of a directory
 * that is empty or does not exist yet.
 */
#define CK_RUN_MARKER ".chandy-run"

/* 1 when dir/name is a run.json chandy wrote (it names chandy_version early on). */
static int is_runjson(const char *dir, const char *name)
{
    char path[700], head[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    const char *why;
    int fd = ck_jin_open_file(path, &st, &why);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, sizeof(head) - 1);
    close(fd);
    head[n > 0 ? n : 0] = 0;
    return strstr(head, "\"chandy_version\"") != NULL;
}

/* 0 when dir may be used as the output directory (or does not exist);
 * CK_EINVAL with one line in err when it must not. */
static int check_outdir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st)) {
        if (errno == ENOENT)
            return CK_OK; /* created by the run */
        snprintf(err, errlen, "%s: cannot use as the output directory: %s", dir, strerror(errno));
        return CK_EINVAL;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory (the output directory of a run is one)", dir);
        return CK_EINVAL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: cannot use as the output directory: %s", dir, strerror(errno));
        return CK_EINVAL;
    }
    int empty = 1, run = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        empty = 0;
        if (!strcmp(e->d_name, CK_RUN_MARKER) ||
            ((!strcmp(e->d_name, "run.json") || !strcmp(e->d_name, "run.json.part")) &&
             is_runjson(dir, e->d_name)))
            run = 1;
    }
    closedir(d);
    if (!empty && !run) {
        snprintf(err, errlen,
                 "%s: not empty and not a chandy run directory (no " CK_RUN_MARKER
                 " or run.json in it): a run empties its store/, sink/ and output/, so it "
                 "writes only into a new, empty or earlier run directory",
                 dir);
        return CK_EINVAL;
    }
    return CK_OK;
}

/* Writes the marker; errno says why when it cannot. A link planted in its
 * place is not followed. */
static int write_marker(const char *dir, const char *scenario)
{
    char path[700], text[200];
    snprintf(path, sizeof(path), "%s/" CK_RUN_MARKER, dir);
    int n = snprintf(text, sizeof(text), "chandy run directory (scenario %s)\n", scenario);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return CK_EIO;
    ssize_t w = write(fd, text, (size_t)n);
    int e = w < 0 ? errno : ENOSPC;
    if (close(fd) == 0 && w == n)
        return CK_OK;
    errno = w == n ? errno : e;
    return CK_EIO;
}

/* 1 when path lies in (or is) one of the directories a run into dir empties. */
static int inside_cleared(const char *path, const char *dir)
{
    char rp[PATH_MAX], rd[PATH_MAX];
    if (!realpath(path, rp) || !realpath(dir, rd))
        return 0; /* the savepoint was read, so it exists; a new dir holds nothing */
    const char *const *parts = cleared;
    size_t dl = strlen(rd);
    if (strncmp(rp, rd, dl) || (rp[dl] != '/' && dl > 1))
        return 0;
    const char *rest = rp + dl + (dl > 1);
    for (size_t i = 0; i < CLEARED_DIRS; i++) {
        size_t pl = strlen(parts[i]);
        if (!strncmp(rest, parts[i], pl) && (rest[pl] == '/' || !rest[pl]))
            return 1;
    }
    return 0;
}

/* 1 when a and b are the same existing directory. */
static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Appends to prior the output of the run in `dir`: all it committed, or,
 * with a snapshot sp it took (a checkpoint older than its latest, or a
 * savepoint taken without stopping), what it committed in transactions
 * that began before sp's cut; a run started from sp produces the rest
 * again (Flink's output holds it twice), and *after counts its records.
 * CK_EINVAL (why says it): a sink wrote outside transactions, so that no
 * cut divides its output. */
static int load_prior(ck_sinkout *prior, const char *dir, const ck_savepoint *sp, uint64_t *after,
                      char *why, size_t whylen)
{
    char path[700];
    int rc;
    if (!sp) {
        snprintf(path, sizeof(path), "%s/output", dir);
        if ((rc = ck_sinkout_load_dir(prior, path)))
            snprintf(why, whylen, "%s: %s", path, ck_strerror(rc));
        return rc;
    }
    ck_sinkfs_cut *cut;
    size_t ncut;
    why[0] = 0;
    if ((rc = ck_sp_sink_cut(sp, &cut, &ncut, why, whylen)))
        return rc;
    ck_sinkout rest;
    ck_sinkout_init(&rest);
    snprintf(path, sizeof(path), "%s/sink", dir);
    rc = ck_sinkfs_load_cut(path, cut, ncut, prior, &rest);
    free(cut);
    if (rc == CK_EINVAL)
        snprintf(why, whylen, "%s: a sink wrote outside transactions, so %s cannot cut its output",
                 path, sp->path);
    else if (rc)
        snprintf(why, whylen, "%s: %s", path, ck_strerror(rc));
    for (int i = 0; !rc && i < rest.n; i++) /* records: u32 length-prefixed elements */
        for (size_t pos = 0; pos + 4 <= rest.s[i].len; (*after)++)
            pos += 4 + (size_t)ck_get_u32(rest.s[i].data + pos);
    ck_sinkout_free(&rest);
    return rc;
}

/* The output of the runs before `dir`'s (whose own is loaded): a run that
 * started from a savepoint was checked with the output of the run that
 * took it (its run.json's includes_output_of), and that one perhaps with
 * another's, so a chain of runs (b from a's savepoint, c from b's) checks
 * c's output with b's and a's. Appends them to prior; CK_OK when the
 * chain ends at a run that started from nothing, else an error (a run
 * started from a savepoint without the output before it, a run.json or an
 * output that cannot be read, a loop) with the reason in why. */
static int load_chain(ck_sinkout *prior, const char *dir, char *why, size_t whylen)
{
    char at[600], path[700];
    snprintf(at, sizeof(at), "%s", dir);
    for (int depth = 0;; depth++) {
        snprintf(path, sizeof(path), "%s/run.json", at);
        int rc;
        char *text = ck_jin_read(path, 256u << 20, "a run.json", &rc, why, whylen);
        if (!text)
            return CK_EINVAL; /* why says it */
        cJSON *run = cJSON_Parse(text);
        free(text);
        if (!run) {
            snprintf(why, whylen, "%s: not a JSON text", path);
            return CK_EINVAL;
        }
        const cJSON *from =
            cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "started_from");
        const cJSON *inc =
            cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "includes_output_of");
        rc = CK_OK;
        if (!cJSON_IsString(from)) {
            cJSON_Delete(run);
            return CK_OK; /* it started from nothing: the chain is whole */
        }
        if (!cJSON_IsString(inc)) {
            snprintf(why, whylen, "%s: that run started from %s without the output before it",
                     path, from->valuestring);
            rc = CK_ENOTFOUND;
        } else if (depth >= 64 || same_dir(inc->valuestring, dir)) {
            snprintf(why, whylen, "%s: the runs' includes_output_of go round in a loop", path);
            rc = CK_EINVAL;
        } else {
            /* what it was checked with: all of that run's output, or what
             * came before the cut of the snapshot it started from */
            const cJSON *cut =
                cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "includes_output_before");
            snprintf(at, sizeof(at), "%s", inc->valuestring);
            static ck_savepoint sp; /* large: off the stack */
            uint64_t after = 0;
            if (cJSON_IsString(cut) && (rc = ck_sp_open(&sp, cut->valuestring, why, whylen)))
                rc = CK_ENOTFOUND; /* why says it */
            else if (cJSON_IsString(cut)) {
                rc = load_prior(prior, at, &sp, &after, why, whylen);
                ck_sp_free(&sp);
            } else
                rc = load_prior(prior, at, NULL, &after, why, whylen);
        }
        cJSON_Delete(run);
        if (rc)
            return rc;
    }
}

const char *ck_backend_name(ck_backend b)
{
    return b == CK_BACKEND_SOCKETS ? "sockets" : "simgrid";
}

int ck_run_fallback_cause(const ck_run *r, size_t i)
{
    if (!r->res.jm_ready || i >= r->res.jm.nfallbacks)
        return -1;
    const ck_fallback *fb = &r->res.jm.fallbacks[i];
    if (fb->code != CK_FAIL_RESTORE_DAMAGED || !fb->key[0])
        return -1;
    for (int k = 0; k < r->res.nfaults; k++) {
        const ck_fault_run *f = &r->res.faults[k];
        if (f->spec->kind == CK_FAULT_CORRUPT_CHECKPOINT && f->applied && !f->failed &&
            f->applied_at <= fb->at && !strcmp(f->key, fb->key))
            return k;
    }
    return -1;
}

int ck_run_judge_fallbacks(ck_run *r)
{
    r->degraded[0] = r->unexplained[0] = 0;
    if (!r->res.jm_ready)
        return 0;
    const ck_fallback *first = NULL;
    int first_cause = -1;
    for (size_t i = 0; i < r->res.jm.nfallbacks; i++) {
        const ck_fallback *fb = &r->res.jm.fallbacks[i];
        char to[48];
        if (fb->to)
            snprintf(to, sizeof(to), "checkpoint %llu", (unsigned long long)fb->to);
        else
            snprintf(to, sizeof(to), "none (the job failed)");
        int cause = ck_run_fallback_cause(r, i);
        if (cause < 0) {
            snprintf(r->unexplained, sizeof(r->unexplained),
                     "the job fell back from checkpoint %llu to %s, and no corrupt_checkpoint "
                     "event damaged the file its restore failed on (%s: %.250s)",
                     (unsigned long long)fb->from, to, ck_fail_name(fb->code), fb->why);
            return 1;
        }
        if (!first && fb->to) {
            first = fb;
            first_cause = cause;
        }
    }
    if (first)
        snprintf(r->degraded, sizeof(r->degraded),
                 "fell back from damaged checkpoint %llu to checkpoint %llu (the "
                 "corrupt_checkpoint at %.6f s damaged its file), replaying input whose output "
                 "checkpoint %llu had committed",
                 (unsigned long long)first->from, (unsigned long long)first->to,
                 (double)r->res.faults[first_cause].applied_at / 1e9,
                 (unsigned long long)first->from);
    return 0;
}

static int run_generations(const ck_run *r, const ck_graph *g, ck_verify_gen *gens);

int ck_run_judge_injected(ck_run *r, const ck_verdict *v, int whole)
{
    memset(&r->injected, 0, sizeof(r->injected));
    r->checker_ok = 0;
    r->checker_failure[0] = 0;
    ck_injected_fault f[CK_MAX_FAULTS];
    ck_sinkout recs[CK_MAX_FAULTS];
    int n = 0, rc = CK_OK;
    char dir[700], err[600];
    snprintf(dir, sizeof(dir), "%s/sink", r->outdir);
    for (int i = 0; i < r->res.nfaults && !rc; i++) {
        const ck_fault_run *fr = &r->res.faults[i];
        if (!fr->out_done)
            continue;
        ck_sinkout_init(&recs[n]);
        f[n] = (ck_injected_fault){fr->out, &recs[n]};
        if ((rc = ck_sinkfs_fault_records(dir, &fr->out, &recs[n])))
            snprintf(err, sizeof(err), "%s: the records event %d touched cannot be read: %s",
                     dir, i, ck_strerror(rc));
        n++;
    }
    /* the generations the verdict was given */
    ck_verify_gen *gens = NULL;
    if (!rc && n &&
        !(gens = malloc((size_t)(1 + (r->res.jm_ready ? r->res.jm.neras : 0)) * sizeof(*gens)))) {
        rc = CK_ENOMEM;
        snprintf(err, sizeof(err), "out of memory");
    }
    if (!rc && n)
        rc = ck_injected_expect_gens(gens, run_generations(r, &r->sc->graph, gens), &r->wl,
                                     &r->res.out, v->guarantee, v->partial, f, n, &r->injected,
                                     err, sizeof(err));
    free(gens);
    for (int i = 0; i < n; i++)
        ck_sinkout_free(&recs[i]);
    if (!n)
        return 0;
    if (rc) {
        r->injected.faults = n;
        snprintf(r->checker_failure, sizeof(r->checker_failure),
                 "the damage the output faults injected cannot be worked out: %.500s", err);
        return 1;
    }
    char why[600];
    r->checker_ok = ck_injected_judge(&r->injected, v, whole, why, sizeof(why));
    if (!r->checker_ok)
        snprintf(r->checker_failure, sizeof(r->checker_failure), "%s", why);
    return !r->checker_ok;
}

/*
 * Where the snapshot that rescale v restored cut the input: per source
 * partition, the offset its source read up to (malloc'd). Read from the
 * subtasks' state files the checkpoint coordinator recorded (a source's
 * is small: inline in the acknowledgement; else from the run's store).
 * NULL when the run cannot say: no snapshot, a file gone from the store
 * (a checkpoint retention dropped) or that does not decode, in-flight
 * data (an unaligned cut: records before it were processed after the
 * restore), or a partition no source lists while its sources were still
 * reading.
 */
static int64_t *rescale_cut(const ck_run *r, const ck_rescale *v)
{
    const ck_cc *cc = &r->res.jm.cc;
    const ck_cp_record *rec = NULL;
    for (size_t i = 0; i < cc->ncps && !rec; i++)
        if (cc->cps[i].id == v->checkpoint && cc->cps[i].status == CK_CP_COMPLETED &&
            cc->cps[i].tasks)
            rec = &cc->cps[i];
    int nparts = r->wl.spec.partitions;
    if (!rec || nparts <= 0)
        return NULL;
    char root[700];
    snprintf(root, sizeof(root), "%s/store", r->outdir);
    int64_t *from = malloc((size_t)nparts * sizeof(*from));
    uint8_t *set = calloc((size_t)nparts, 1);
    int ok = from && set, finished = 0;
    for (uint32_t st = 0; ok && st < rec->g->nsubtasks; st++) {
        const ck_handles *hs = &rec->tasks[st].handles;
        for (uint32_t k = 0; ok && k < hs->n; k++) {
            const ck_handle *h = &hs->v[k];
            if (h->kind != CK_HANDLE_SNAPSHOT)
                continue;
            uint8_t *data = NULL;
            size_t len = 0;
            if (h->flags & CK_HANDLE_INLINE) {
                data = h->data;
                len = (size_t)h->bytes;
            } else if (ck_storefs_get_range(root, h->key, h->offset, h->bytes, &data, &len) ||
                       len != h->bytes) {
                free(data);
                ok = 0;
                break;
            }
            ck_snapshot sn;
            const char *why;
            if (ck_snap_decode(data, len, &sn, &why)) {
                ok = 0;
            } else {
                ok = sn.nchans == 0;
                finished |= sn.finished;
                for (int i = 0; ok && sn.has_source && i < sn.source.nparts; i++) {
                    int p = sn.source.parts[i];
                    if (p < 0 || p >= nparts) {
                        ok = 0;
                    } else {
                        from[p] = sn.source.offsets[i];
                        set[p] = 1;
                    }
                }
                ck_snapshot_free(&sn);
            }
            if (!(h->flags & CK_HANDLE_INLINE))
                free(data);
        }
    }
    /* A partition no source lists: read whole by one that finished. */
    for (int p = 0; ok && p < nparts; p++)
        if (!set[p]) {
            ok = finished;
            from[p] = r->wl.parts[p].n;
        }
    free(set);
    if (ok)
        return from;
    free(from);
    return NULL;
}

/* r->cuts: each deployed rescale's (rescale_cut). 0 or CK_ENOMEM. */
static int read_cuts(ck_run *r)
{
    if (!r->res.jm_ready || !r->res.jm.nrescales)
        return CK_OK;
    r->cuts = calloc(r->res.jm.nrescales, sizeof(*r->cuts));
    if (!r->cuts)
        return CK_ENOMEM;
    r->ncuts = r->res.jm.nrescales;
    for (size_t i = 0; i < r->ncuts; i++)
        if (r->res.jm.rescales[i].deployed != CK_TIME_NEVER)
            r->cuts[i] = rescale_cut(r, &r->res.jm.rescales[i]);
    return CK_OK;
}

/*
 * The generations the job ran, for the verdict: each era of the job
 * manager's (a graph deployed), the first from the job's start, each
 * later one from the cut of the rescale that deployed it (its first
 * attempt). gens has room for 1 + the eras. Returns how many.
 */
static int run_generations(const ck_run *r, const ck_graph *g, ck_verify_gen *gens)
{
    gens[0] = (ck_verify_gen){g, NULL};
    if (!r->res.jm_ready || r->res.jm.neras < 2)
        return 1;
    int n = 0;
    for (int e = 0; e < r->res.jm.neras; e++) {
        const ck_jm_era *era = &r->res.jm.eras[e];
        gens[n] = (ck_verify_gen){era->g, NULL};
        for (size_t i = 0; e > 0 && i < r->ncuts; i++)
            if (r->res.jm.rescales[i].deployed != CK_TIME_NEVER &&
                r->res.jm.rescales[i].attempt == era->first_attempt)
                gens[n].from = r->cuts[i];
        n++;
    }
    return n;
}

int ck_run_main(const char *scenario_path, const ck_run_opts *o)
{
    static ck_scenario sc; /* large: keep it off the stack */
    char err[1200];
    int rc = ck_scenario_load(&sc, scenario_path, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "chandy: %s\n", err);
        return 2;
    }
    ck_scenario_print_warnings(&sc, stderr);
    if (o->claim_mode) {
        sc.cfg.v[CK_CFG_CLAIM_MODE] = o->claim_mode - 1;
        sc.cfg.set[CK_CFG_CLAIM_MODE] = 1;
    }
    /* Everything the run holds grows with its input: refuse what cannot fit. */
    ck_mem_estimate me;
    ck_mem_estimate_run(&sc, &me);
    double have = ck_mem_machine();
    if (have > 0 && me.bytes > have) {
        fprintf(stderr,
                "chandy: %s: workload: needs about %.0f GB of memory for %.0f records "
                "(rate x duration); this machine has %.0f GB\n",
                scenario_path, me.bytes / 1e9 + 0.5, me.records, have / 1e9);
        ck_scenario_free(&sc);
        return 2;
    }
    static ck_run r;
    memset(&r, 0, sizeof(r));
    r.sc = &sc;
    r.seed = o->have_seed ? o->seed : sc.seed;
    if (o->swarm) {
        /* The seed's schedule instead of the scenario's own events, judged
         * by the swarm's verdict instead of its expect block. */
        ck_nemesis_draw(&sc, r.seed, (ck_nemesis_mode)o->swarm);
        cJSON_Delete(sc.expect);
        sc.expect = NULL;
    }
    r.backend = o->backend;
    r.verbose = o->verbose;
    r.job.ntm = ck_scenario_taskmanagers(&sc);
    if (o->outdir && !o->outdir[0]) {
        fprintf(stderr, "chandy: --out: expected a directory, got an empty path\n");
        ck_scenario_free(&sc);
        return 2;
    }
    if (o->outdir && strlen(o->outdir) >= sizeof(r.outdir)) {
        fprintf(stderr, "chandy: %.200s...: the output directory's path is longer than %zu bytes\n",
                o->outdir, sizeof(r.outdir) - 1);
        ck_scenario_free(&sc);
        return 2;
    }
    if (o->outdir)
        snprintf(r.outdir, sizeof(r.outdir), "%s", o->outdir);
    else
        snprintf(r.outdir, sizeof(r.outdir), "out/%s", sc.name);
    if (check_outdir(r.outdir, err, sizeof(err))) {
        fprintf(stderr, "chandy: %s\n", err);
        ck_scenario_free(&sc);
        return 2;
    }
    /* The timeline's hot keys are part of the input (after a swarm drew
     * its own timeline, that one's). */
    sc.workload.nhot = 0;
    for (int i = 0; i < sc.nfaults && sc.workload.nhot < CK_WL_MAX_STEPS; i++)
        if (sc.faults[i].kind == CK_FAULT_HOT_KEY)
            sc.workload.hot[sc.workload.nhot++] =
                (ck_hot_key){sc.faults[i].at, sc.faults[i].at + sc.faults[i].duration,
                             sc.faults[i].factor};
    rc = ck_workload_generate(&r.wl, &sc.workload, r.seed);
    if (rc) {
        fprintf(stderr, "chandy: %s: generating the workload: %s\n", scenario_path,
                ck_strerror(rc));
        ck_scenario_free(&sc);
        return 1;
    }
    r.job.env.input_fp = ck_workload_fingerprint(&r.wl);

    /* A savepoint to start from (flink run -s): read and checked before the
     * output directory is emptied, since it may live in there. */
    static ck_savepoint sp;
    static ck_sinkout prior;
    ck_sinkout_init(&prior);
    const char *sp_path = o->from_savepoint ? o->from_savepoint
                          : sc.cfg.v[CK_CFG_RECOVERY_PATH] ? sc.cfg.path
                                                           : NULL;
    int have_sp = 0, carry = 0;
    char prior_sink[620] = "";
    if (sp_path) {
        if (ck_sp_open(&sp, sp_path, err, sizeof(err)) == 0) {
            have_sp = 1;
            rc = ck_sp_check_job(&sp, &sc.graph, &sc.cfg, &r.wl.topic, err, sizeof(err));
            if (!rc && ck_cfg(&sc.cfg, CK_CFG_CLOG_ENABLED) &&
                ck_cfg(&sc.cfg, CK_CFG_CLAIM_MODE) == CK_NO_CLAIM) {
                /* Flink restores, then fails its first checkpoint: the
                 * changelog cannot take the full one NO_CLAIM forces. */
                snprintf(err, sizeof(err),
                         "%s: config: state.changelog.enabled cannot start from a snapshot "
                         "with execution.state-recovery.claim-mode NO_CLAIM (the default): "
                         "the changelog cannot take the full checkpoint NO_CLAIM forces after "
                         "a restore, and Flink fails it; expected CLAIM or LEGACY "
                         "(--claim-mode)",
                         scenario_path);
                rc = CK_EINVAL;
            }
            char took[600];
            if (!rc && (inside_cleared(sp.path, r.outdir) ||
                        (ck_sp_run_dir(&sp, took, sizeof(took)) && same_dir(took, r.outdir)))) {
                snprintf(err, sizeof(err),
                         "%s: the savepoint lies in what a run into %s empties (its store/, "
                         "sink/ and output/), with the output of the run that took it: run "
                         "into another --out",
                         sp.path, r.outdir);
                rc = CK_EINVAL;
            }
        } else {
            rc = CK_EINVAL;
        }
        if (rc) {
            fprintf(stderr, "chandy: %s\n", err);
            if (have_sp)
                ck_sp_free(&sp);
            ck_workload_free(&r.wl);
            ck_scenario_free(&sc);
            return 2;
        }
        snprintf(r.start_path, sizeof(r.start_path), "%s", sp.path);
        /* Stopped with this savepoint, or failed for good after this
         * checkpoint (its latest), over the same input: check our output
         * together with what that run committed before it; the
         * transactions it had pre-committed come over with the state, as
         * they would stay in Kafka. */
        char prev[600];
        carry = !(sp.meta.flags & CK_CP_FLAG_STOP) && ck_sp_is_latest_checkpoint(&sp);
        /* Any other (an older checkpoint, a savepoint taken without
         * stopping): that run committed output after it, which ours
         * holds again; what it committed before the cut is checked with
         * ours, and what it committed after is counted. */
        int older = !(sp.meta.flags & CK_CP_FLAG_STOP) && !carry;
        if (sp.meta.input_fp == r.job.env.input_fp && ck_sp_run_dir(&sp, prev, sizeof(prev))) {
            char why[900];
            int lrc = load_prior(&prior, prev, older ? &sp : NULL, &r.prior_after, why,
                                 sizeof(why));
            if (lrc != CK_OK) {
                fprintf(stderr, "chandy: %s: the output of the run that took it cannot be "
                                "checked with ours (%s); the output is checked as partial\n",
                        sp.path, why);
                lrc = CK_ENOTFOUND; /* said */
            } else if ((lrc = load_chain(&prior, prev, why, sizeof(why)))) {
                fprintf(stderr, "chandy: the output before %s's cannot all be read (%s); "
                                "the output is checked as partial\n", prev, why);
                lrc = CK_ENOTFOUND; /* said */
                snprintf(prior_sink, sizeof(prior_sink), "%s/sink", prev);
            }
            if (lrc == CK_OK) {
                snprintf(r.prior_output, sizeof(r.prior_output), "%s", prev);
                snprintf(prior_sink, sizeof(prior_sink), "%s/sink", prev);
                r.prior_cut = older;
            } else {
                /* None of it, rather than part of it: our output is then checked as partial. */
                ck_sinkout_free(&prior);
                ck_sinkout_init(&prior);
                r.prior_after = 0;
            }
        }
        if (sp.meta.input_fp != r.job.env.input_fp)
            fprintf(stderr, "chandy: %s: the savepoint was taken over other input; the "
                            "output is checked as partial\n", sp.path);
    }
    if (ck_storefs_mkdirs(r.outdir) || write_marker(r.outdir, sc.name) ||
        clean_outdir(r.outdir)) {
        fprintf(stderr, "chandy: %s: cannot prepare the output directory: %s\n", r.outdir,
                strerror(errno));
        if (have_sp)
            ck_sp_free(&sp);
        ck_sinkout_free(&prior);
        ck_workload_free(&r.wl);
        ck_scenario_free(&sc);
        return 2;
    }
    if (have_sp) {
        char store[700];
        snprintf(store, sizeof(store), "%s/store", r.outdir);
        rc = ck_sp_install(&sp, store, err, sizeof(err));
        if (!rc && carry && prior_sink[0]) {
            char sinkd[700];
            snprintf(sinkd, sizeof(sinkd), "%s/sink", r.outdir);
            rc = ck_sp_carry_sinks(&sp, prior_sink, sinkd, &r.job.env.txn_epoch, err,
                                   sizeof(err));
        }
        r.job.env.start.id = sp.meta.id;
        r.job.env.start.flags = sp.meta.flags;
        snprintf(r.job.env.start.dir, sizeof(r.job.env.start.dir), "%s", sp.dir);
        r.start_meta = sp.meta; /* the job manager deploys its handles */
        memset(&sp.meta, 0, sizeof(sp.meta));
        r.job.env.start_meta = &r.start_meta;
        ck_sp_free(&sp);
        if (rc) {
            fprintf(stderr, "chandy: %s\n", err);
            ck_cp_meta_free(&r.start_meta);
            ck_sinkout_free(&prior);
            ck_workload_free(&r.wl);
            ck_scenario_free(&sc);
            return 1;
        }
    }
    /* A job id in Flink's form (32 hex digits), from the seed: stable across reruns. */
    snprintf(r.job_id, sizeof(r.job_id), "%016llx%016llx",
             (unsigned long long)ck_mix64(r.seed), (unsigned long long)ck_mix64(r.seed + 1));
    char gerr[700];
    if (ck_scenario_generations(&sc, &r.gens, &r.ngens, gerr, sizeof(gerr))) {
        fprintf(stderr, "chandy: %s\n", gerr);
        ck_cp_meta_free(&r.start_meta);
        ck_sinkout_free(&prior);
        ck_workload_free(&r.wl);
        ck_scenario_free(&sc);
        return 2;
    }
    r.job.env.g = &r.gens[0];
    r.job.env.gens = r.gens;
    r.job.env.ngens = r.ngens;
    r.job.env.cfg = &sc.cfg;
    r.job.env.topic = &r.wl.topic;
    r.job.env.job_id = r.job_id;
    r.job.cluster = &sc.cluster;
    r.job.faults = sc.faults;
    r.job.nfaults = sc.nfaults;
    /* The engine applies slow_operator faults itself, by its clock. */
    for (int i = 0; i < sc.nfaults; i++)
        if (sc.faults[i].kind == CK_FAULT_SLOW_OPERATOR || sc.faults[i].kind == CK_FAULT_SLOW_SINK)
            r.slowdowns[r.job.env.nslowdowns++] = (ck_op_slowdown){
                sc.faults[i].op, sc.faults[i].at, sc.faults[i].at + sc.faults[i].duration,
                sc.faults[i].factor, sc.faults[i].kind == CK_FAULT_SLOW_SINK};
    r.job.env.slowdowns = r.slowdowns;
    r.job.input_duration = sc.workload.duration;
    r.job.outdir = r.outdir;
    r.job.seed = r.seed;
    r.job.verbose = r.verbose;
    r.job.check_invariants = o->check_invariants ? o->check_invariants > 0 : CK_INVARIANTS_DEFAULT;
    ck_backend_result_init(&r.res, &r.job);

    int status = 0;
    for (int i = 0; i < sc.job.nops && r.backend == CK_BACKEND_SOCKETS; i++)
        if (sc.job.ops[i].value_size) { /* said, never narrowed silently */
            fprintf(stderr,
                    "chandy: %s: job.operators[%d]: a modelled state size (value_size or "
                    "state_size) is charged only under SimGrid: over sockets transfers take "
                    "the time of their real bytes, while run.json's sizes report the "
                    "modelled ones\n",
                    scenario_path, i);
            break;
        }
    const ck_backend_ops *be =
        r.backend == CK_BACKEND_SIMGRID ? &ck_backend_simgrid : &ck_backend_sockets;
    rc = be->run(&r.job, &r.res, err, sizeof(err));
    char store[700]; /* what the store set aside for reuse is garbage now */
    snprintf(store, sizeof(store), "%s/store", r.outdir);
    ck_storefs_recycle_clear(store);
    if (rc) {
        fprintf(stderr, "chandy: %s: %s\n", scenario_path, err);
        status = rc == CK_EINVAL ? 2 : 1; /* the scenario asks what the backend cannot do */
        goto out;
    }
    /* What the output must satisfy: exactly once with exactly-once checkpoints
     * (or when nothing failed); at least once otherwise (at-least-once
     * checkpoints, or a restart from the beginning without checkpoints). */
    ck_guarantee guarantee = CK_EXACTLY_ONCE;
    if (r.res.jm.nrecoveries > 0 &&
        (ck_cfg(&sc.cfg, CK_CFG_CP_INTERVAL) == 0 ||
         ck_cfg(&sc.cfg, CK_CFG_CP_MODE) == CK_CP_AT_LEAST_ONCE))
        guarantee = CK_AT_LEAST_ONCE;
    /* A restore that fell back to an older checkpoint replays output the
     * newer one committed: at least once, if the timeline damaged what it
     * could not restore; otherwise the run failed, whatever its output. */
    int unexplained = ck_run_judge_fallbacks(&r);
    if (r.degraded[0])
        guarantee = CK_AT_LEAST_ONCE; /* run.json says why */
    /* The run's own output is kept; a run started from a savepoint is then
     * checked together with the output of the run that took it. */
    char outd[700];
    snprintf(outd, sizeof(outd), "%s/output", r.outdir);
    if (ck_sinkout_save(&r.res.out, outd)) {
        /* A run that could not record its output failed, whatever the verdict. */
        snprintf(r.res.error, sizeof(r.res.error), "%s: cannot write the output: %s", outd,
                 strerror(errno));
        fprintf(stderr, "chandy: %s\n", r.res.error);
    }
    for (int i = 0; i < prior.n; i++) {
        const ck_sinkout_stream *st = &prior.s[i];
        if (ck_sinkout_append(&r.res.out, st->sink_id, st->data, st->len))
            fprintf(stderr, "chandy: out of memory merging %s\n", r.prior_output);
    }
    /* A job stopped at the time limit wrote part of its output: what it
     * wrote must be right (its state says it did not finish). */
    int partial = (r.res.jm_ready && r.res.jm.stopped_with) || (r.job.env.start.id && !r.prior_output[0]) ||
                  r.res.unfinished;
    ck_verdict v;
    /* A rescaled job is verified generation by generation where its output
     * depends on parallelism (verify.h). */
    ck_verify_gen *gens = NULL;
    int ngens = 1;
    rc = read_cuts(&r);
    if (!rc && !(gens = malloc((size_t)(1 + (r.res.jm_ready ? r.res.jm.neras : 0)) *
                               sizeof(*gens))))
        rc = CK_ENOMEM;
    if (!rc) {
        ngens = run_generations(&r, &sc.graph, gens);
        rc = ck_verify_gens(gens, ngens, &r.wl, &r.res.out, guarantee, partial, &v, err,
                            sizeof(err));
    } else {
        snprintf(err, sizeof(err), "out of memory");
    }
    free(gens);
    if (rc) {
        /* Output that cannot be checked is not correct; run.json still says what happened. */
        fprintf(stderr, "chandy: %s: verifying the output: %s\n", scenario_path, err);
        if (!r.res.error[0])
            snprintf(r.res.error, sizeof(r.res.error), "verifying the output: %s", err);
        v = (ck_verdict){.guarantee = guarantee, .partial = partial, .ok = 0};
    }
    if (unexplained)
        v.ok = 0; /* run.json's correctness.unexplained_fallback says why */
    /* Output faults damaged the committed output on purpose: the verdict
     * must count exactly that damage, or the output check is wrong. */
    int finished = r.res.jm_ready && r.res.jm.state == CK_JOB_FINISHED;
    int checker_failed = !rc && ck_run_judge_injected(&r, &v, finished && !partial);
    /* Wrong output all of which the output faults explain */
    int explained = !v.ok && r.injected.faults && r.checker_ok && !unexplained;
    cJSON *run = ck_runjson_build(&r, &v);
    ck_nemesis_verdict nv;
    if (o->swarm && run) {
        ck_nemesis_judge(&r, &v, (ck_nemesis_mode)o->swarm, &nv);
        cJSON *sw = ck_nemesis_report(&r, (ck_nemesis_mode)o->swarm, &nv);
        if (sw)
            cJSON_AddItemToObject(run, "swarm", sw);
    }
    char path[700];
    snprintf(path, sizeof(path), "%s/run.json", r.outdir);
    if (!run || (rc = ck_runjson_write(run, path))) {
        fprintf(stderr, "chandy: %s: cannot write: %s\n", path,
                !run || rc == CK_ENOMEM ? "out of memory" : strerror(errno));
        cJSON_Delete(run);
        status = 1;
        goto out;
    }
    if (!o->quiet)
        ck_summary_print(stdout, run, path);
    if (o->swarm) {
        /* The schedule's verdict decides (a job that did not finish is a violation). */
        if (!nv.ok) {
            fprintf(stderr, "chandy: %s: seed %llu: swarm %s violation: %s\n", scenario_path,
                    (unsigned long long)r.seed, ck_nemesis_mode_name((ck_nemesis_mode)o->swarm),
                    nv.why);
            status = 1;
        }
    } else if (unexplained) {
        /* Whatever "expect" says: the job went back past a checkpoint it had
         * committed, and nothing the timeline did allowed it. */
        fprintf(stderr, "chandy: %s: %s\n", scenario_path, r.unexplained);
        status = 1;
    } else if (checker_failed) {
        /* Whatever "expect" says: the output check missed or over-counted
         * the damage the timeline injected into the output. */
        fprintf(stderr, "chandy: %s: the output check is wrong: %s\n", scenario_path,
                r.checker_failure);
        status = 1;
    } else if (r.res.unfinished) {
        /* Whatever "expect" says, a run stopped before the job ended did not complete. */
        fprintf(stderr, "chandy: %s: the job did not finish: %s\n", scenario_path, r.res.jm.failure);
        status = 1;
    } else if (sc.expect) {
        char report[4096];
        int failures = ck_expect_eval(sc.expect, run, report, sizeof(report));
        if (failures > 0) {
            fprintf(stderr, "%s\n", report);
            status = 1;
        } else if (!o->quiet) {
            printf("  expect     %d assertion%s held\n", cJSON_GetArraySize(sc.expect),
                   cJSON_GetArraySize(sc.expect) == 1 ? "" : "s");
        }
    } else if (r.res.jm.state != CK_JOB_FINISHED || (!v.ok && !explained)) {
        /* Without an "expect" block, a run must finish with correct output. */
        fprintf(stderr, "chandy: %s: %s\n", scenario_path,
                r.res.jm.state != CK_JOB_FINISHED ? "the job did not finish"
                                              : "the output broke its guarantee");
        status = 1;
    }
    if (r.res.error[0])
        status = 1; /* said above; run.json says it too */
    cJSON_Delete(run);
out:
    ck_cp_meta_free(&r.start_meta);
    for (size_t i = 0; i < r.ncuts; i++)
        free(r.cuts[i]);
    free(r.cuts);
    r.cuts = NULL;
    r.ncuts = 0;
    ck_backend_result_free(&r.res); /* before the graphs its job manager's arrays follow */
    free(r.gens);
    ck_sinkout_free(&prior);
    ck_workload_free(&r.wl);
    ck_scenario_free(&sc);
    return status;
}
