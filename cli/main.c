/*
 * main.c - the chandy command line.
 *
 *   chandy run SCENARIO.json [--seed N] [--out DIR] [--backend simgrid|sockets]
 *              [--from-savepoint DIR [--claim-mode CLAIM|NO_CLAIM|LEGACY]]
 *              [--check-invariants | --no-check-invariants]
 *   chandy swarm SCENARIO.json --seeds A..B [--mode safety|liveness] [--jobs N]
 *                [--shard I/N] [--timeout S] [--keep] [--no-check-invariants] --out DIR
 *   chandy swarm --merge DIR... --out DIR
 *   chandy sweep SCENARIO.json --out DIR [--jobs N] [--timeout S]
 *   chandy suite SUITE.json --out DIR [--jobs N]
 *   chandy fidelity SCENARIO.json --out DIR [--seed N] [--band F]
 *   chandy report RUN_DIR... -o OUT_DIR
 *   chandy savepoint DIR
 *   chandy validate SCENARIO.json...
 *   chandy keygroup --parallelism P [--max-parallelism M]
 *   chandy config
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "fidelity.h"
#include "keygroup.h"
#include "nemesis.h"
#include "report.h"
#include "run.h"
#include "savepoint.h"
#include "snapshot.h"
#include "swarm.h"
#include "suite.h"
#include "sweep.h"
#include "scenario.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  chandy run SCENARIO.json [--seed N] [--out DIR] [--backend simgrid|sockets]\n"
            "             [--from-savepoint DIR [--claim-mode CLAIM|NO_CLAIM|LEGACY]]\n"
            "             [--swarm safety|liveness] [--quiet] [--verbose]\n"
            "             [--check-invariants | --no-check-invariants]\n"
            "      run a scenario, write DIR/run.json (default DIR: out/<scenario name>);\n"
            "      with --from-savepoint (or -s), start the job from a savepoint or a\n"
            "      retained checkpoint (its directory; or a run directory: the last\n"
            "      savepoint its run took; or a directory of savepoints: the latest),\n"
            "      which --claim-mode (default: the scenario's\n"
            "      execution.state-recovery.claim-mode, NO_CLAIM) says who owns; with\n"
            "      --swarm, replace its events by the fault schedule the seed draws;\n"
            "      --check-invariants checks every module's invariants after each step\n"
            "      (the default in Debug and sanitizer builds) and ends a run that breaks\n"
            "      one with exit status 70\n"
            "  chandy swarm SCENARIO.json --seeds A..B [--mode safety|liveness] [--jobs N]\n"
            "               [--shard I/N] [--timeout S] [--keep] [--no-check-invariants]\n"
            "               --out DIR\n"
            "      run the scenario once per seed, each with a random fault schedule;\n"
            "      write DIR/swarm.json, exit 1 if any seed broke the oracle\n"
            "  chandy swarm --merge DIR... --out DIR\n"
            "      combine the swarm.json files of shards into one\n"
            "  chandy sweep SCENARIO.json --out DIR [--jobs N] [--timeout S]\n"
            "      run every point of the scenario's \"sweep\" (settings crossed, each\n"
            "      over its seeds), then write DIR/report/; run again to resume\n"
            "  chandy suite SUITE.json --out DIR [--jobs N]\n"
            "      run a suite's comparisons (suites/demo.json: the default demo) and\n"
            "      write DIR/index.html with each one's chart, key figures and report\n"
            "  chandy fidelity SCENARIO.json --out DIR [--seed N] [--band F]\n"
            "      run the scenario under SimGrid and over sockets, and write each\n"
            "      figure side by side with its ratio and a verdict (+-25 %% by default)\n"
            "  chandy report RUN_DIR... -o OUT_DIR\n"
            "      put runs side by side: OUT_DIR/index.html (plots, tables),\n"
            "      OUT_DIR/summary.md and a CSV file per series\n"
            "  chandy savepoint DIR\n"
            "      check a savepoint (or retained checkpoint) and list what it holds;\n"
            "      DIR as for --from-savepoint\n"
            "  chandy validate SCENARIO.json...\n"
            "      check scenario files without running them\n"
            "  chandy keygroup --parallelism P [--max-parallelism M]\n"
            "      read keys from standard input, one a line, and print\n"
            "      key<TAB>key group<TAB>subtask as Flink assigns them\n"
            "  chandy config\n"
            "      list the Flink configuration keys chandy understands\n");
}

/* A decimal number and nothing else: no sign, no spaces, no other characters. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Flushes standard output; on a write error (a full disk, /dev/full, a
 * closed pipe) says so in one line. Returns the exit status: status, or 1. */
static int finish_stdout(const char *cmd, int status)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return status;
    int e = errno;
    fprintf(stderr, "chandy %s: writing to standard output: %s\n", cmd,
            e ? strerror(e) : "write error");
    return 1;
}

static int cmd_run(int argc, char **argv)
{
    ck_run_opts o = {0};
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed")) {
            if (parse_u64(val, UINT64_C(9007199254740991), &o.seed)) {
                fprintf(stderr, "chandy run: --seed: expected a non-negative integer\n");
                return 2;
            }
            o.have_seed = 1;
            i++;
        } else if (!strcmp(a, "--out")) {
            if (!val) {
                fprintf(stderr, "chandy run: --out: expected a directory\n");
                return 2;
            }
            o.outdir = val;
            i++;
        } else if (!strcmp(a, "--backend")) {
            if (val && !strcmp(val, "simgrid"))
                o.backend = CK_BACKEND_SIMGRID;
            else if (val && !strcmp(val, "sockets"))
                o.backend = CK_BACKEND_SOCKETS;
            else {
                fprintf(stderr, "chandy run: --backend: expected simgrid or sockets\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--from-savepoint") || !strcmp(a, "-s")) {
            if (!val) {
                fprintf(stderr, "chandy run: %s: expected a savepoint directory (or a run "
                                "directory, or a directory of savepoints)\n",
                        a);
                return 2;
            }
            o.from_savepoint = val;
            i++;
        } else if (!strcmp(a, "--claim-mode") || !strcmp(a, "-claimMode")) {
            int64_t v;
            if (!val || ck_config_parse(CK_CFG_CLAIM_MODE, val, &v)) {
                fprintf(stderr, "chandy run: %s: expected CLAIM, NO_CLAIM or LEGACY\n", a);
                return 2;
            }
            o.claim_mode = (int)v + 1;
            i++;
        } else if (!strcmp(a, "--swarm")) {
            ck_nemesis_mode m;
            if (ck_nemesis_mode_parse(val, &m)) {
                fprintf(stderr, "chandy run: --swarm: expected safety or liveness\n");
                return 2;
            }
            o.swarm = (int)m;
            i++;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--verbose")) {
            o.verbose = 1;
        } else if (!strcmp(a, "--check-invariants")) {
            o.check_invariants = 1;
        } else if (!strcmp(a, "--no-check-invariants")) {
            o.check_invariants = -1;
        } else if (a[0] == '-') {
            fprintf(stderr, "chandy run: unknown option %s\n", a);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "chandy run: one scenario at a time (got %s and %s)\n", path, a);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    return finish_stdout("run", ck_run_main(path, &o));
}

/* Checks a savepoint and prints what it holds. 0: sound; 1: damaged. */
static int cmd_savepoint(int argc, char **argv)
{
    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    static ck_savepoint sp;
    char err[1200];
    int rc = ck_sp_open(&sp, argv[0], err, sizeof(err));
    if (rc) {
        fprintf(stderr, "chandy savepoint: %s\n", err);
        return rc == CK_EINVAL ? 2 : 1; /* no path given, or a damaged savepoint */
    }
    const ck_cp_meta *m = &sp.meta;
    printf("%s\n  %s %llu, taken at %.3f s, input %016llx, %u subtasks\n", sp.path,
           (m->flags & CK_CP_FLAG_STOP)        ? "stop-with-savepoint"
           : (m->flags & CK_CP_FLAG_SAVEPOINT) ? "savepoint"
           : (m->flags & CK_CP_FLAG_FINAL)     ? "final checkpoint"
                                               : "checkpoint",
           (unsigned long long)m->id, (double)m->trigger / 1e9,
           (unsigned long long)m->input_fp, m->nsubtasks);
    /* its operators, by vertex (a version-3 _metadata has none: restored,
     * it is taken to be of the job's own) */
    if (!m->nvertices)
        printf("  _metadata of version %u: no operator ids (restores only at the job's own "
               "parallelism)\n", m->version);
    for (uint32_t v = 0; v < m->nvertices; v++) {
        printf("  vertex %u, parallelism %u:", v, m->vertices[v].parallelism);
        for (uint32_t k = 0; k < m->vertices[v].nops; k++) {
            const ck_cp_meta_op *o = &m->vertices[v].ops[k];
            printf("%s uid \"%s\" (%s, max parallelism %u)", k ? " ->" : "", o->uid,
                   ck_op_kind_name((ck_op_kind)o->kind), o->max_parallelism);
        }
        printf("\n");
    }
    int status = 0;
    for (uint32_t i = 0; i < sp.nfiles; i++) {
        const ck_handle *h = sp.files[i].h;
        const char *name = strrchr(h->key, '/') + 1;
        if (h->kind != CK_HANDLE_SNAPSHOT) { /* checked by its checksum when opened */
            if (h->flags & CK_HANDLE_SEGMENT) /* a segment of a merged file */
                printf("  %-16s %9llu bytes  %s of operator %u, key groups %d to %d, at %llu "
                       "of %s (in ../shared)\n",
                       h->local, (unsigned long long)h->bytes, ck_handle_kind_name(h->kind),
                       h->op, h->kgr.start, h->kgr.end, (unsigned long long)h->offset, name);
            else
                printf("  %-16s %9llu bytes  %s of operator %u, key groups %d to %d%s\n", name,
                       (unsigned long long)h->bytes, ck_handle_kind_name(h->kind), h->op,
                       h->kgr.start, h->kgr.end,
                       (h->flags & CK_HANDLE_SHARED)   ? " (in ../shared)"
                       : (h->flags & CK_HANDLE_INLINE) ? " (inline in _metadata)"
                                                       : "");
            continue;
        }
        ck_snapshot snap;
        const char *why;
        if (ck_snap_decode(sp.files[i].data, sp.files[i].len, &snap, &why)) {
            fprintf(stderr, "chandy savepoint: %s/%s: %s\n", sp.path, name, why);
            status = 1;
            continue;
        }
        if (snap.finished) {
            printf("  %-16s %9zu bytes  vertex %d subtask %d/%d: finished (restored, it stays "
                   "so)%s\n",
                   name, sp.files[i].len, snap.vertex, snap.subtask + 1, snap.parallelism,
                   ck_handle_stored(h) ? "" : ", inline in _metadata");
            ck_snapshot_free(&snap);
            continue;
        }
        size_t entries = 0, timers = 0;
        for (int k = 0; k < snap.nkeyed; k++) {
            entries += snap.keyed[k].nentries;
            timers += snap.keyed[k].ntimers;
        }
        printf("  %-16s %9zu bytes  vertex %d subtask %d/%d: %zu keyed entries, %zu timers",
               name, sp.files[i].len, snap.vertex, snap.subtask + 1, snap.parallelism, entries,
               timers);
        if (snap.has_source)
            printf(", offsets of %d partitions", snap.source.nparts);
        for (int k = 0; k < snap.nopstates; k++) {
            const ck_opstate *o = &snap.opstates[k];
            if (snap.has_source && o->op == snap.source.op)
                continue; /* its partitions, above */
            static const char *const modes[] = {"", "split", "union", "broadcast"};
            for (int l = 0; l < o->nlists; l++)
                printf(", operator %d list \"%s\" (%s): %u entr%s", o->op, o->lists[l].name,
                       modes[o->lists[l].mode], o->lists[l].n, o->lists[l].n == 1 ? "y" : "ies");
        }
        if (snap.nsinks)
            printf(", %d sink%s", snap.nsinks, snap.nsinks == 1 ? "" : "s");
        printf("%s\n", ck_handle_stored(h) ? "" : ", inline in _metadata");
        ck_snapshot_free(&snap);
    }
    ck_sp_free(&sp);
    return finish_stdout("savepoint", status);
}

static int cmd_validate(int argc, char **argv)
{
    if (argc == 0) {
        usage(stderr);
        return 2;
    }
    int status = 0;
    for (int i = 0; i < argc; i++) {
        static ck_scenario sc;
        char err[1200];
        if (ck_scenario_load(&sc, argv[i], err, sizeof(err))) {
            fprintf(stderr, "chandy: %s\n", err);
            status = 2;
            continue;
        }
        ck_scenario_print_warnings(&sc, stderr);
        printf("%s: ok\n", argv[i]);
        ck_scenario_free(&sc);
    }
    return finish_stdout("validate", status);
}

static int cmd_keygroup(int argc, char **argv)
{
    uint64_t p = 0, m = 0;
    for (int i = 0; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--parallelism")) {
            if (parse_u64(val, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &p) || p == 0) {
                fprintf(stderr, "chandy keygroup: --parallelism: expected 1 to %d\n",
                        CK_KG_UPPER_BOUND_MAX_PARALLELISM);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--max-parallelism")) {
            if (parse_u64(val, CK_KG_UPPER_BOUND_MAX_PARALLELISM, &m) || m == 0) {
                fprintf(stderr, "chandy keygroup: --max-parallelism: expected 1 to %d\n",
                        CK_KG_UPPER_BOUND_MAX_PARALLELISM);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "chandy keygroup: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (p == 0) {
        fprintf(stderr, "chandy keygroup: --parallelism is required\n");
        return 2;
    }
    int maxp = m ? (int)m : ck_kg_default_max_parallelism((int)p);
    if (ck_kg_check((int)p, maxp)) {
        fprintf(stderr, "chandy keygroup: parallelism %llu exceeds max parallelism %d\n",
                (unsigned long long)p, maxp);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0 && !ferror(stdout)) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--; /* the separator only: the key is taken verbatim */
        int kg = ck_kg_of_key(line, len, maxp);
        fwrite(line, 1, len, stdout);
        printf("\t%d\t%d\n", kg, ck_kg_subtask(kg, (int)p, maxp));
    }
    free(line);
    if (ferror(stdin)) {
        fprintf(stderr, "chandy keygroup: error reading standard input\n");
        return 1;
    }
    return finish_stdout("keygroup", 0);
}

static int cmd_config(void)
{
    static const char *const types[] = {"integer", "boolean", "duration", "memory", "one of",
                                        "decimal", "path"};
    for (int i = 0; i < CK_CFG_COUNT; i++) {
        const ck_cfg_def *d = ck_config_def((ck_cfg_id)i);
        char def[32], lo[32], hi[32];
        ck_config_format((ck_cfg_id)i, d->def, def, sizeof(def));
        ck_config_format((ck_cfg_id)i, d->min, lo, sizeof(lo));
        ck_config_format((ck_cfg_id)i, d->max, hi, sizeof(hi));
        if (d->type == CK_CFG_ENUM) {
            const char *const *ch = ck_config_choices((ck_cfg_id)i);
            printf("%s\n    one of", d->key);
            for (int k = 0; ch && ch[k]; k++)
                printf("%s %s", k ? "," : "", ch[k]);
            printf("; default %s", def);
        } else {
            printf("%s\n    %s, default %s", d->key, types[d->type], def);
        }
        if (d->type != CK_CFG_BOOL && d->type != CK_CFG_ENUM && d->type != CK_CFG_PATH)
            printf(", from %s to %s", lo, hi);
        printf("\n    %s\n", d->desc);
        /* Its older names: taken, with a warning naming this one. */
        for (int k = 0; ck_config_deprecated_name((ck_cfg_id)i, k); k++) {
            const char *old = ck_config_deprecated_name((ck_cfg_id)i, k);
            int flink = 0;
            (void)ck_config_deprecated(old, &flink);
            printf("    deprecated name: %s%s\n", old,
                   flink ? "" : " (from Flink's development of 1.20, never released)");
        }
    }
    return finish_stdout("config", 0);
}

static int cmd_report(int argc, char **argv)
{
    const char *out = NULL;
    const char *runs[CK_REPORT_MAX_RUNS];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "chandy report: %s: expected a directory after it\n", argv[i]);
                return 2;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "chandy report: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (n == CK_REPORT_MAX_RUNS) {
            fprintf(stderr, "chandy report: at most %d runs in one report\n", CK_REPORT_MAX_RUNS);
            return 2;
        } else {
            runs[n++] = argv[i];
        }
    }
    if (!n || !out) {
        fprintf(stderr, "chandy report: expected RUN_DIR... -o OUT_DIR\n");
        usage(stderr);
        return 2;
    }
    char err[1200];
    if (ck_report_make(runs, n, out, err, sizeof(err))) {
        fprintf(stderr, "chandy report: %s\n", err);
        return 1;
    }
    printf("wrote %s/index.html, %s/summary.md and CSV files (%d run%s)\n", out, out, n,
           n == 1 ? "" : "s");
    return finish_stdout("report", 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "swarm"))
        return ck_swarm_main(argc - 2, argv + 2, argv[0]);
    if (!strcmp(cmd, "validate"))
        return cmd_validate(argc - 2, argv + 2);
    if (!strcmp(cmd, "savepoint"))
        return cmd_savepoint(argc - 2, argv + 2);
    if (!strcmp(cmd, "fidelity"))
        return finish_stdout("fidelity", ck_fidelity_main(argc - 2, argv + 2));
    if (!strcmp(cmd, "suite"))
        return finish_stdout("suite", ck_suite_main(argc - 2, argv + 2));
    if (!strcmp(cmd, "sweep"))
        return finish_stdout("sweep", ck_sweep_main(argc - 2, argv + 2));
    if (!strcmp(cmd, "report"))
        return cmd_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "keygroup"))
        return cmd_keygroup(argc - 2, argv + 2);
    if (!strcmp(cmd, "config"))
        return cmd_config();
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return finish_stdout("help", 0);
    }
    fprintf(stderr, "chandy: unknown command %s\n", cmd);
    usage(stderr);
    return 2;
}
