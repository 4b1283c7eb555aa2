/*
 * test_cli.c - the chandy command given bad input, as a new user would:
 * names and paths that point elsewhere, output directories that are not a
 * run's, savepoints that are special files or of another job, a full disk,
 * numbers with junk around them. Each must end in one line naming what is
 * wrong and the documented exit status (2: wrong scenario or option; 1: the
 * run failed), and must never delete or overwrite what is not a run's.
 *
 * A full disk is played with RLIMIT_FSIZE (`ulimit -f`, with SIGXFSZ
 * ignored): a write past the limit fails with EFBIG as it would with
 * ENOSPC, for the run and every process it forks, without root, a
 * filesystem of our own or interposed libc calls. The limit sits above
 * platform.xml and run.json and below the sinks' output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "runutil.h"
#include "scenario.h"

/* Runs `sh -c "<prefix> chandy <args>"` in dir (NULL: the source tree);
 * output in <tmp>/<tag>.{out,err}. */
static int run_sh(const char *dir, const char *prefix, const char *tag, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "cd '%s' && %s timeout 60 %s %s > %s/%s.out 2> %s/%s.err",
             dir ? dir : CHANDY_SOURCE_DIR, prefix, CHANDY_BIN, args, tmp, tag, tmp, tag);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* <tmp>/<tag>.err holds one line that contains every one of the strings. */
static void err_says(const char *tag, const char *a, const char *b)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *text = slurp(path);
    assert_non_null(text);
    if ((a && !strstr(text, a)) || (b && !strstr(text, b)))
        fprintf(stderr, "%s.err: %s\n", tag, text);
    assert_non_null(strstr(text, a));
    if (b)
        assert_non_null(strstr(text, b));
    free(text);
}

static int exists(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, rel);
    struct stat st;
    return lstat(path, &st) == 0;
}

static void mkdir_in(const char *rel)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", tmp, rel);
    assert_int_equal(system(cmd), 0);
}

/* The small test scenario with "name" (and only it) replaced; written to
 * <tmp>/<file>. */
static const char *small_named(const char *file, const char *name_json)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small.json");
    assert_non_null(text);
    const char *at = strstr(text, "\"name\": \"small\"");
    assert_non_null(at);
    char *out = malloc(strlen(text) + strlen(name_json) + 16);
    sprintf(out, "%.*s\"name\": %s%s", (int)(at - text), text, name_json,
            at + strlen("\"name\": \"small\""));
    const char *path = put_file(file, out);
    free(out);
    free(text);
    assert_non_null(path);
    return path;
}

/* 1. A name that climbs out of out/ must not pick the output directory. */
static void test_name_is_a_file_name(void **state)
{
    (void)state;
    mkdir_in("a/b");
    mkdir_in("a/victim/store");
    assert_non_null(put_file("a/victim/store/keep", "precious\n"));
    small_named("a/b/evil.json", "\"../../victim\"");
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/a/b", tmp);
    assert_int_equal(run_sh(dir, "", "evil", "run evil.json --quiet"), 2);
    err_says("evil", "evil.json: name: expected a plain file name", "../../victim");
    assert_true(exists("a/victim/store/keep"));
    assert_false(exists("a/b/out"));

    static const char *const bad[] = {"\".\"", "\"..\"", "\"a/b\"", "\"/abs\"", "\"x\\ny\"",
                                      "\"tab\\there\""};
    static ck_scenario sc;
    char err[1200];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *path = small_named("bad-name.json", bad[i]);
        assert_int_equal(ck_scenario_load(&sc, path, err, sizeof(err)), CK_EINVAL);
        assert_non_null(strstr(err, ": name: "));
        assert_null(strchr(err, '\n')); /* one line, even for a name with a newline */
    }
    /* A name as long as allowed, and one byte longer. */
    char longname[80];
    snprintf(longname, sizeof(longname), "\"%063d\"", 7);
    assert_int_equal(ck_scenario_load(&sc, small_named("n63.json", longname), err, sizeof(err)),
                     0);
    ck_scenario_free(&sc);
    snprintf(longname, sizeof(longname), "\"%064d\"", 7);
    assert_int_equal(ck_scenario_load(&sc, small_named("n64.json", longname), err, sizeof(err)),
                     CK_EINVAL);
    /* The default name comes from the file name: "..json" would be ".". */
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small.json");
    char *nm = strstr(text, "\"name\": \"small\",");
    memset(nm, ' ', strlen("\"name\": \"small\","));
    assert_non_null(put_file("..json", text));
    free(text);
    char path[300];
    snprintf(path, sizeof(path), "%s/..json", tmp);
    assert_int_equal(ck_scenario_load(&sc, path, err, sizeof(err)), CK_EINVAL);
    assert_non_null(strstr(err, "name"));
}

/* 2 and 6. --out: a user's directory, a file, an empty path. */
static void test_out_must_be_a_run_directory(void **state)
{
    (void)state;
    mkdir_in("user/store");
    assert_non_null(put_file("user/notes", "mine\n"));
    assert_non_null(put_file("user/store/f", "mine too\n"));
    char args[600];
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/user", tmp);
    assert_int_equal(run_sh(NULL, "", "user", args), 2);
    err_says("user", "/user: not empty and not a chandy run directory", NULL);
    assert_true(exists("user/store/f"));
    assert_true(exists("user/notes"));

    /* A file: exit 2 naming it (not platform.xml, not 1). */
    assert_non_null(put_file("afile", "x\n"));
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/afile", tmp);
    assert_int_equal(run_sh(NULL, "", "afile", args), 2);
    err_says("afile", "/afile: not a directory", NULL);
    assert_int_equal(run_sh(NULL, "", "empty", "run tests/scenarios/small.json --out ''"), 2);
    err_says("empty", "--out", NULL);

    /* A new directory, then the same again: a run directory may be reused. */
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/mine", tmp);
    assert_int_equal(run_sh(NULL, "", "mine1", args), 0);
    assert_true(exists("mine/.chandy-run"));
    assert_int_equal(run_sh(NULL, "", "mine2", args), 0);
    /* An empty directory is fine too. */
    mkdir_in("emptydir");
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/emptydir", tmp);
    assert_int_equal(run_sh(NULL, "", "emptydir", args), 0);
}

/* 3. A full disk under the output directory fails the run, under both backends. */
static void test_full_disk_fails_the_run(void **state)
{
    (void)state;
    /* Under sockets small-cp restarts after a failure: without failing at
     * once it would run to its 64 s limit (and the 60 s timeout, 124). */
    static const struct {
        const char *backend, *scenario;
    } runs[] = {{"simgrid", "small"}, {"sockets", "small"}, {"sockets", "small-cp"}};
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        char args[600], dir[64];
        snprintf(dir, sizeof(dir), "full-%s-%s", runs[i].backend, runs[i].scenario);
        snprintf(args, sizeof(args),
                 "run tests/scenarios/%s.json --quiet --backend %s --out %s/%s",
                 runs[i].scenario, runs[i].backend, tmp, dir);
        /* 20 KiB: platform.xml (3 KB) and run.json (9 to 12 KB, more on a
         * loaded machine, where a failing run lasts longer) fit; the output
         * (sink files of 27 KB and more) does not. */
        assert_int_equal(run_sh(NULL, "trap '' XFSZ; ulimit -f 20;", dir, args), 1);
        cJSON *run = try_load_run(dir);
        if (run) {
            const cJSON *e = cJSON_GetObjectItem(run, "error");
            if (!cJSON_IsString(e))
                fprintf(stderr, "%s: run.json has no error\n", dir);
            assert_true(cJSON_IsString(e));
            cJSON_Delete(run);
            err_says(dir, "File too large", NULL);
        } else {
            /* A run slowed down (a loaded machine, a sanitizer) samples
             * more and its run.json may not fit either: it says so. */
            err_says(dir, "run.json: cannot write: File too large", NULL);
        }
    }
    /* 8 KiB: run.json cannot be written either; stderr says so. */
    char args[600];
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/full-8k", tmp);
    assert_int_equal(run_sh(NULL, "trap '' XFSZ; ulimit -f 8;", "full-8k", args), 1);
    err_says("full-8k", "run.json: cannot write: File too large", NULL);
    assert_null(try_load_run("full-8k"));
    assert_false(exists("full-8k/run.json.part"));
    /* Again into a directory with an earlier run.json: it must not stay to
     * tell the earlier run's story as this one's. */
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/full-again",
             tmp);
    assert_int_equal(run_sh(NULL, "", "full-again", args), 0);
    cJSON *earlier = try_load_run("full-again");
    assert_non_null(earlier);
    cJSON_Delete(earlier);
    assert_int_equal(run_sh(NULL, "trap '' XFSZ; ulimit -f 8;", "full-again", args), 1);
    assert_null(try_load_run("full-again"));
}

/* Runs savepoint-stop into <tmp>/stop once; returns its savepoint path. */
static const char *stop_savepoint(void)
{
    static char sp[600];
    if (sp[0])
        return sp;
    char args[600];
    snprintf(args, sizeof(args), "run scenarios/savepoint-stop.json --quiet --out %s/stop", tmp);
    assert_int_equal(run_sh(NULL, "", "stop", args), 0);
    cJSON *run = load_run("stop");
    const cJSON *p =
        cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "stopped_with_savepoint");
    assert_true(cJSON_IsString(p));
    snprintf(sp, sizeof(sp), "%s", p->valuestring);
    cJSON_Delete(run);
    return sp;
}

/* 4. Special files in a savepoint are refused at once, never read. */
static void test_savepoint_special_files(void **state)
{
    (void)state;
    const char *sp = stop_savepoint();
    mkdir_in("spz");
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "ln -s /dev/zero %s/spz/_metadata && mkdir %s/spf && mkfifo "
                               "%s/spf/_metadata && cp -r %s %s/spl && ln -sf /dev/zero "
                               "%s/spl/v2-0.state",
             tmp, tmp, tmp, sp, tmp, tmp);
    assert_int_equal(system(cmd), 0);
    static const char *const dirs[] = {"spz", "spf", "spl"};
    for (int i = 0; i < 3; i++) {
        char args[600];
        snprintf(args, sizeof(args), "savepoint %s/%s", tmp, dirs[i]);
        assert_int_equal(run_sh(NULL, "", dirs[i], args), 1); /* timeout would give 124 */
        err_says(dirs[i], "not a regular file", NULL);
    }
    /* A copy that is sound is read. */
    snprintf(cmd, sizeof(cmd), "cp -r %s %s/spc", sp, tmp);
    assert_int_equal(system(cmd), 0);
    char args[600];
    snprintf(args, sizeof(args), "savepoint %s/spc", tmp);
    assert_int_equal(run_sh(NULL, "", "spc", args), 0);
}

/* Writes savepoint-restore.json with edits to <tmp>/<file>, without its recovery path. */
static void restore_variant(const char *file, void (*edit)(cJSON *root))
{
    char *text = slurp(CHANDY_SOURCE_DIR "/scenarios/savepoint-restore.json");
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "config"),
                               "execution.state-recovery.path");
    cJSON_DeleteItemFromObject(root, "expect");
    edit(root);
    char *out = cJSON_Print(root);
    assert_non_null(put_file(file, out));
    free(out);
    cJSON_Delete(root);
}

static cJSON *op(cJSON *root, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "job"), "operators"), i);
}

static void set_num(cJSON *o, const char *k, double v)
{
    cJSON_DeleteItemFromObject(o, k);
    cJSON_AddNumberToObject(o, k, v);
}

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObject(o, k);
    cJSON_AddStringToObject(o, k, v);
}

/* The same 8 subtasks: count and its sink at 2, the window and its sink at 4. */
static void moved_parallelism(cJSON *root)
{
    set_num(op(root, 3), "parallelism", 2);
    set_num(op(root, 4), "parallelism", 2);
    set_num(op(root, 5), "parallelism", 4);
    set_num(op(root, 6), "parallelism", 4);
}

/* "count" becomes a window, "per-second" an aggregate. */
static void swapped_kinds(cJSON *root)
{
    cJSON *a = op(root, 3), *w = op(root, 5);
    set_str(a, "type", "window");
    set_str(a, "size", "1 s");
    set_str(w, "type", "aggregate");
    cJSON_DeleteItemFromObject(w, "size");
}

static void other_max_parallelism(cJSON *root)
{
    set_num(cJSON_GetObjectItem(root, "config"), "pipeline.max-parallelism", 64);
}

static void other_partitions(cJSON *root)
{
    set_num(cJSON_GetObjectItem(root, "workload"), "partitions", 3);
}

static void unchanged(cJSON *root)
{
    (void)root;
}

/* 5. A savepoint of another job with as many subtasks is refused up front. */
static void test_savepoint_of_another_job(void **state)
{
    (void)state;
    const char *sp = stop_savepoint();
    static const struct {
        const char *file;
        void (*edit)(cJSON *);
        const char *where, *says;
    } cases[] = {
        /* the state assignment's refusals name the operator by its uid */
        {"kinds.json", swapped_kinds, ": operator uid \"count\" ",
         "is a aggregate in the snapshot, and the job's \"count\" is a window"},
        {"maxp.json", other_max_parallelism, ": operator \"source\" (uid \"source\"): ",
         "the job sets max parallelism 64, and the snapshot's state has 128 key groups"},
        /* a state file's own check names the file */
        {"parts.json", other_partitions, ".state: ", "partition 3"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        restore_variant(cases[i].file, cases[i].edit);
        char args[1200];
        snprintf(args, sizeof(args), "run %s/%s --quiet -s %s --out %s/other", tmp,
                 cases[i].file, sp, tmp);
        assert_int_equal(run_sh(NULL, "", "other", args), 2);
        err_says("other", cases[i].where, cases[i].says);
    }
    /* Its keyed operators at other parallelisms restore: their key
     * groups are dealt out. */
    restore_variant("moved.json", moved_parallelism);
    char margs[1200];
    snprintf(margs, sizeof(margs), "run %s/moved.json --quiet -s %s --out %s/rescaled", tmp, sp,
             tmp);
    assert_int_equal(run_sh(NULL, "", "rescaled", margs), 0);
    /* The job itself is accepted. */
    restore_variant("same.json", unchanged);
    char args[1200];
    snprintf(args, sizeof(args), "run %s/same.json --quiet -s %s --out %s/same", tmp, sp, tmp);
    assert_int_equal(run_sh(NULL, "", "same", args), 0);
    cJSON *run = load_run("same");
    assert_true(cJSON_IsString(
        cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "includes_output_of")));
    cJSON_Delete(run);

    /* The output of the run that took it, read to check ours with, is a
     * link to /dev/zero: not read (it would never end); ours is checked as
     * partial instead, and says so. */
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "mkdir %s/z && cp -r %s/stop/store %s/stop/output %s/z/ && "
                               "ln -sf /dev/zero %s/z/output/00040000.out",
             tmp, tmp, tmp, tmp, tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args), "run %s/same.json --quiet -s %s/z/store/%s --out %s/same-z", tmp,
             tmp, strstr(sp, "/store/") + 7, tmp);
    assert_int_equal(run_sh(NULL, "", "same-z", args), 0);
    err_says("same-z", "the output of the run that took it cannot be checked with ours", "/z/output");
    run = load_run("same-z");
    const cJSON *c = cJSON_GetObjectItem(run, "correctness");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(c, "includes_output_of")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "partial")));
    cJSON_Delete(run);
}

/* 11. Starting from a savepoint inside --out would empty the run that took it. */
static void test_savepoint_inside_out(void **state)
{
    (void)state;
    const char *sp = stop_savepoint();
    char before[300];
    snprintf(before, sizeof(before), "%s/stop/run.json", tmp);
    char *runjson = slurp(before);
    char args[1200];
    snprintf(args, sizeof(args), "run scenarios/savepoint-restore.json --quiet -s %s --out %s/stop",
             sp, tmp);
    assert_int_equal(run_sh(NULL, "", "inside", args), 2);
    err_says("inside", "the savepoint lies in what a run into", NULL);
    /* Relative, from inside the directory. */
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/stop", tmp);
    snprintf(args, sizeof(args),
             "run %s/scenarios/savepoint-restore.json --quiet -s ./store/%s --out .",
             CHANDY_SOURCE_DIR, strstr(sp, "/store/") + 7);
    assert_int_equal(run_sh(dir, "", "inside2", args), 2);
    char *after = slurp(before);
    assert_string_equal(runjson, after); /* the stopping run is untouched */
    free(runjson);
    free(after);
    assert_true(exists("stop/output/00040000.out"));
    assert_true(exists("stop/store/savepoints"));

    /* A run directory whose store/ is a link elsewhere: emptying it would
     * still delete the output of the run that took the savepoint. */
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "mkdir %s/w && cp -r %s/stop/output %s/stop/run.json %s/w/ && "
                               "cp -r %s/stop/store %s/w-store && ln -s ../w-store %s/w/store",
             tmp, tmp, tmp, tmp, tmp, tmp, tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args),
             "run scenarios/savepoint-restore.json --quiet -s %s/w/store/%s --out %s/w", tmp,
             strstr(sp, "/store/") + 7, tmp);
    assert_int_equal(run_sh(NULL, "", "inside3", args), 2);
    err_says("inside3", "the savepoint lies in what a run into", NULL);
    assert_true(exists("w/output/00040000.out"));
}

/* A run directory or a directory of savepoints stands for the savepoint
 * it holds (-s, execution.state-recovery.path, chandy savepoint): the last
 * one the run's run.json lists as completed, wherever the run directory
 * now is; the highest id of a directory of savepoints, unless two jobs'
 * share it. Nothing else is guessed: a run without a savepoint, or an
 * ambiguous directory, is refused in one line. */
static void test_savepoint_by_run_directory(void **state)
{
    (void)state;
    const char *sp = stop_savepoint();
    const char *name = strrchr(sp, '/') + 1;
    char args[1400], cmd[1400];
    /* The run directory, moved elsewhere. */
    snprintf(cmd, sizeof(cmd), "cp -r %s/stop %s/moved", tmp, tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args), "savepoint %s/moved", tmp);
    assert_int_equal(run_sh(NULL, "", "by-run", args), 0);
    char want[700];
    snprintf(want, sizeof(want), "%s/moved/store/savepoints/%s\n", tmp, name);
    char path[300];
    snprintf(path, sizeof(path), "%s/by-run.out", tmp);
    char *out = slurp(path);
    assert_non_null(out);
    assert_int_equal(strncmp(out, want, strlen(want)), 0);
    free(out);
    snprintf(args, sizeof(args), "run scenarios/savepoint-restore.json --quiet -s %s/moved --out "
                                 "%s/from-run", tmp, tmp);
    assert_int_equal(run_sh(NULL, "", "from-run", args), 0);
    cJSON *run = load_run("from-run");
    want[strlen(want) - 1] = 0;
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(run, "job"), "started_from")->valuestring, want);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "ok")));
    cJSON_Delete(run);
    /* Into the run directory it names: refused, as the savepoint's own path is. */
    snprintf(args, sizeof(args), "run scenarios/savepoint-restore.json --quiet -s %s/moved --out "
                                 "%s/moved", tmp, tmp);
    assert_int_equal(run_sh(NULL, "", "into-run", args), 2);
    err_says("into-run", "the savepoint lies in what a run into", NULL);

    /* A directory of savepoints: the highest id. */
    mkdir_in("sps");
    snprintf(cmd, sizeof(cmd), "cp -r %s %s/sps/ && cp -r %s %s/sps/savepoint-bdd732-3 && "
                               "mkdir %s/sps/savepoint-bdd732-9 && mkdir %s/sps/other",
             sp, tmp, sp, tmp, tmp, tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args), "savepoint %s/sps", tmp);
    assert_int_equal(run_sh(NULL, "", "by-dir", args), 0);
    snprintf(path, sizeof(path), "%s/by-dir.out", tmp);
    out = slurp(path);
    snprintf(want, sizeof(want), "%s/sps/%s\n", tmp, name);
    assert_int_equal(strncmp(out, want, strlen(want)), 0); /* -9 has no _metadata */
    free(out);
    /* Two jobs' savepoints of the same id: which one? */
    char twin[200];
    snprintf(twin, sizeof(twin), "%s", name);
    memcpy(strchr(twin, '-') + 1, "000000", 6);
    snprintf(cmd, sizeof(cmd), "cp -r %s %s/sps/%s", sp, tmp, twin);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args), "run scenarios/savepoint-restore.json --quiet -s %s/sps --out "
                                 "%s/tie", tmp, tmp);
    assert_int_equal(run_sh(NULL, "", "tie", args), 2);
    err_says("tie", twin, "of two jobs: give the path of the one to start from");

    /* A run that took no savepoint. */
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet --out %s/nosp", tmp);
    assert_int_equal(run_sh(NULL, "", "nosp", args), 0);
    snprintf(args, sizeof(args), "run tests/scenarios/small.json --quiet -s %s/nosp --out "
                                 "%s/nosp2", tmp, tmp);
    assert_int_equal(run_sh(NULL, "", "nosp2", args), 2);
    err_says("nosp2", "nosp/run.json: savepoints: none completed", "a savepoint");
    /* Its savepoint deleted: named, not guessed. */
    snprintf(cmd, sizeof(cmd), "rm -r %s/moved/store/savepoints/%s", tmp, name);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof(args), "savepoint %s/moved", tmp);
    assert_int_equal(run_sh(NULL, "", "gone", args), 1);
    err_says("gone", name, "the savepoint the run's run.json names is gone");
}

/* The small scenario with its expect block replaced (JSON text). */
static const char *small_expecting(const char *file, const char *expect)
{
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small.json");
    assert_non_null(text);
    const char *at = strstr(text, "\"expect\": {");
    assert_non_null(at);
    const char *end = strchr(at, '}');
    char *out = malloc(strlen(text) + strlen(expect) + 32);
    sprintf(out, "%.*s\"expect\": %s%s", (int)(at - text), text, expect, end + 1);
    const char *path = put_file(file, out);
    free(out);
    free(text);
    assert_non_null(path);
    return path;
}

/* 12. An expect path absent from the finished run's run.json is a failed
 * assertion (exit 1, naming what is absent), not a bad scenario; a path
 * that cannot name anything is refused before the run (exit 2). */
static void test_expect_absent_and_malformed_paths(void **state)
{
    (void)state;
    const char *sc = small_expecting("absent.json", "{\"job.state\": \"FINISHED\", "
                                                    "\"checkpoints[999].id\": 1}");
    char args[800];
    snprintf(args, sizeof(args), "run %s --quiet --out %s/absent", sc, tmp);
    assert_int_equal(run_sh(NULL, "", "absent", args), 1);
    err_says("absent",
             "expect failed: checkpoints[999].id is absent from run.json (checkpoints has ",
             " entries)");
    assert_true(exists("absent/run.json")); /* the run itself went through */

    sc = small_expecting("malformed.json", "{\"job.state\": \"FINISHED\", \"records_out..x\": 1}");
    snprintf(args, sizeof(args), "run %s --quiet --out %s/malformed", sc, tmp);
    assert_int_equal(run_sh(NULL, "", "malformed", args), 2);
    err_says("malformed", "malformed.json: expect.records_out..x: not a run.json path", NULL);
    assert_false(exists("malformed")); /* refused before anything ran */
}

/* 7. An empty savepoint path is refused, however it is given (and an empty scenario path). */
static void test_empty_savepoint_path(void **state)
{
    (void)state;
    assert_int_equal(run_sh(NULL, "", "sp-empty", "savepoint ''"), 2);
    err_says("sp-empty", "savepoint path is empty", NULL);
    assert_int_equal(run_sh(NULL, "", "s-empty", "run tests/scenarios/small.json -s ''"), 2);
    err_says("s-empty", "savepoint path is empty", NULL);
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small.json");
    char *cfg = strstr(text, "\"config\": {");
    assert_non_null(cfg);
    char out[8192];
    snprintf(out, sizeof(out), "%.*s\"config\": {\"execution.state-recovery.path\": \"\", %s",
             (int)(cfg - text), text, cfg + strlen("\"config\": {"));
    free(text);
    const char *path = put_file("rp-empty.json", out);
    char args[400];
    snprintf(args, sizeof(args), "validate %s", path);
    assert_int_equal(run_sh(NULL, "", "rp-empty", args), 2);
    err_says("rp-empty", "config.execution.state-recovery.path: expected a path", NULL);
    assert_int_equal(run_sh(NULL, "", "sc-empty", "validate ''"), 2);
    err_says("sc-empty", "the scenario path is empty", NULL);
}

/* 8. Paths too long for chandy are errors naming them, never cut short. */
static void test_long_paths(void **state)
{
    (void)state;
    char longdir[800];
    int n = snprintf(longdir, sizeof(longdir), "%s/", tmp);
    while (n < 620)
        n += snprintf(longdir + n, sizeof(longdir) - (size_t)n, "dddddddddd/");
    longdir[n - 1] = 0;
    static const struct {
        const char *name, *before, *after;
    } uses[] = {
        {"long-out", "run tests/scenarios/small.json --quiet --out ", ""},
        {"long-sp", "savepoint ", ""},
        {"long-s", "run tests/scenarios/small.json -s ", ""},
        {"long-sc", "validate ", "/x.json"},
    };
    for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
        char args[1200];
        snprintf(args, sizeof(args), "%s%s%s", uses[i].before, longdir, uses[i].after);
        assert_int_equal(run_sh(NULL, "", uses[i].name, args), 2);
        err_says(uses[i].name, "longer than", NULL);
    }
}

/* 9. The system's reason, not "input/output error". */
static void test_errno_is_reported(void **state)
{
    (void)state;
    assert_non_null(put_file("plain", "x\n"));
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "ln -s loop %s/loop", tmp);
    assert_int_equal(system(cmd), 0);
    char args[400];
    snprintf(args, sizeof(args), "savepoint %s/plain/x", tmp);
    assert_int_equal(run_sh(NULL, "", "enotdir", args), 1);
    err_says("enotdir", "Not a directory", NULL);
    snprintf(args, sizeof(args), "savepoint %s/loop", tmp);
    assert_int_equal(run_sh(NULL, "", "eloop", args), 1);
    err_says("eloop", "Too many levels of symbolic links", NULL);
}

/* 10. Numbers are digits only; write errors on standard output are said. */
static void test_numbers_and_write_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"' 4'", "'4 '", "+4", "4x", "0x4", "''", "-4"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char args[200];
        snprintf(args, sizeof(args), "keygroup --parallelism %s < /dev/null", bad[i]);
        assert_int_equal(run_sh(NULL, "", "kg-bad", args), 2);
        err_says("kg-bad", "--parallelism", NULL);
        snprintf(args, sizeof(args), "run tests/scenarios/small.json --seed %s", bad[i]);
        assert_int_equal(run_sh(NULL, "", "seed-bad", args), 2);
    }
    assert_int_equal(run_sh(NULL, "", "kg-ok", "keygroup --parallelism 4 < /dev/null"), 0);
    /* /dev/full: every write fails with ENOSPC. */
    static const char *const writers[] = {
        "keygroup --parallelism 4 < tests/scenarios/small.json", "config",
        "validate tests/scenarios/small.json", "help"};
    for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
        char args[200], tag[32];
        snprintf(args, sizeof(args), "%s", writers[i]);
        snprintf(tag, sizeof(tag), "full%zu", i);
        char cmd[4096];
        snprintf(cmd, sizeof(cmd), "cd %s && %s %s > /dev/full 2> %s/%s.err", CHANDY_SOURCE_DIR,
                 CHANDY_BIN, args, tmp, tag);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 1);
        err_says(tag, "writing to standard output: No space left on device", NULL);
    }
}

/* 12. A FIFO wherever chandy reads a file is refused at once with one line
 * naming it: opened for reading the usual way it would wait for a writer
 * forever (run_sh's timeout would give 124). */
static void test_fifos_refused(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "cd %s && mkfifo x.fifo && mkdir fifo-run fifo-swarm && mkfifo fifo-run/run.json && "
             "mkfifo fifo-swarm/swarm.json",
             tmp);
    assert_int_equal(system(cmd), 0);
    assert_non_null(put_file("fifo-suite.json",
                             "{\"name\": \"s\", \"comparisons\": [{\"title\": \"t\", \"plot\": "
                             "\"latency\", \"runs\": [{\"scenario\": \"x.fifo\", \"label\": "
                             "\"a\"}]}]}\n"));
    /* a scenario whose platform file is one */
    char *text = slurp(CHANDY_SOURCE_DIR "/tests/scenarios/small.json");
    char *cl = strstr(text, "\"cluster\": {");
    assert_non_null(cl);
    char plat[8192];
    snprintf(plat, sizeof(plat), "%.*s\"cluster\": {\"platform\": \"x.fifo\", %s",
             (int)(cl - text), text, cl + strlen("\"cluster\": {"));
    free(text);
    assert_non_null(put_file("fifo-plat.json", plat));
    static const struct {
        const char *tag, *args; /* %s: the temporary directory */
        int status;
        const char *want;
    } uses[] = {
        {"ff-validate", "validate %s/x.fifo", 2, "x.fifo: a FIFO, not a regular file (a scenario"},
        {"ff-run", "run %s/x.fifo --quiet --out %s/ff-run", 2, "x.fifo: a FIFO, not a regular"},
        {"ff-swarm", "swarm %s/x.fifo --seeds 1..2 --out %s/ff-swarm", 2, "x.fifo: a FIFO"},
        {"ff-sweep", "sweep %s/x.fifo --out %s/ff-sweep", 2, "x.fifo: a FIFO"},
        {"ff-suite", "suite %s/x.fifo --out %s/ff-suite", 2, "x.fifo: a FIFO, not a regular "
                                                            "file (a suite"},
        {"ff-suite-sc", "suite %s/fifo-suite.json --out %s/ff-suite-sc", 2,
         "runs[0]: %s/x.fifo: a FIFO"},
        {"ff-fidelity", "fidelity %s/x.fifo --out %s/ff-fid", 2, "x.fifo: a FIFO"},
        {"ff-platform", "validate %s/fifo-plat.json", 2,
         "cluster.platform: %s/x.fifo: a FIFO, not a regular file (a SimGrid platform"},
        {"ff-report", "report %s/x.fifo -o %s/ff-rep", 1, "x.fifo: a FIFO, not a regular file "
                                                           "(a run.json"},
        {"ff-report-dir", "report %s/fifo-run -o %s/ff-rep2", 1,
         "fifo-run/run.json: a FIFO, not a regular file"},
        {"ff-merge", "swarm --merge %s/fifo-swarm --out %s/ff-merged", 2, "fifo-swarm/swarm.json"},
    };
    for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
        char args[800], want[300];
        snprintf(args, sizeof(args), uses[i].args, tmp, tmp);
        snprintf(want, sizeof(want), uses[i].want, tmp);
        int st = run_sh(NULL, "", uses[i].tag, args);
        if (st != uses[i].status)
            fprintf(stderr, "%s: exit %d, expected %d\n", uses[i].tag, st, uses[i].status);
        assert_int_equal(st, uses[i].status);
        err_says(uses[i].tag, want, NULL);
    }
}

/* 13. A retained checkpoint's or a savepoint's file is never read further
 * than its _metadata declares. A merged file (file merging) grown to
 * 3 GiB, sparse, is read up to its last listed segment: quickly, in
 * little memory, and the run started from it installs no more than that;
 * cut short of its segments it is refused. A plain state file of 3 GiB is
 * refused by its size, unread. The time and memory bounds are hang and
 * blow-up guards (reading it whole took seconds and 3 GB), not a
 * benchmark. */
static void test_savepoint_huge_sparse_files(void **state)
{
    (void)state;
    const char *fm =
        "{\"name\": \"fm\", \"seed\": 3, \"cluster\": {\"taskmanagers\": 1},\n"
        " \"workload\": {\"keys\": 2000, \"partitions\": 2, \"duration\": \"2 s\", \"rate\": 3000},\n"
        " \"job\": {\"operators\": [{\"type\": \"source\", \"parallelism\": 2},\n"
        "   {\"type\": \"aggregate\", \"partition\": \"hash\", \"parallelism\": 2},\n"
        "   {\"type\": \"sink\", \"parallelism\": 2}]},\n"
        " \"config\": {\"taskmanager.numberOfTaskSlots\": 2,\n"
        "   \"execution.checkpointing.interval\": \"500 ms\", \"state.backend.type\": \"rocksdb\",\n"
        "   \"state.backend.rocksdb.writebuffer.size\": \"64 kb\",\n"
        "   \"execution.checkpointing.incremental\": true,\n"
        "   \"execution.checkpointing.file-merging.enabled\": true}}\n";
    const char *path = put_file("fm.json", fm);
    assert_non_null(path);
    char args[1200], cmd[1400];
    snprintf(args, sizeof(args), "run %s --quiet --out %s/fm", path, tmp);
    assert_int_equal(run_sh(NULL, "", "fm", args), 0);
    /* Its retained checkpoint, copied, with its first merged file made
     * 3 GiB long (sparse: no disk used). */
    snprintf(cmd, sizeof(cmd),
             "cd %s && mkdir fmc && cp -r fm/store/checkpoints/*/. fmc/ && "
             "f=$(ls fmc/shared | head -1) && test -n \"$f\" && echo \"$f\" > fmc-name && "
             "truncate -s 3G \"fmc/shared/$f\" && cp -r fmc fmt && "
             "truncate -s 100 \"fmt/shared/$f\"",
             tmp);
    assert_int_equal(system(cmd), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(args, sizeof(args), "savepoint %s/fmc/chk-*", tmp);
    int st = run_sh(NULL, "", "fmc", args);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (st != 0 || secs > 10 || ru.ru_maxrss > 1024 * 1024)
        fprintf(stderr, "savepoint of a 3 GiB merged file: exit %d, %.1f s, %ld KiB at most\n",
                st, secs, ru.ru_maxrss);
    assert_int_equal(st, 0); /* the segments it lists are whole and sound */
    assert_true(secs < 10);
    assert_true(ru.ru_maxrss < 1024 * 1024); /* KiB: under 1 GiB, whoever ran before */
    char outp[300];
    snprintf(outp, sizeof(outp), "%s/fmc.out", tmp);
    char *listing = slurp(outp);
    assert_non_null(listing);
    assert_non_null(strstr(listing, " at 0 of ")); /* its segments, listed */
    free(listing);
    /* A run from it installs the merged file up to its last segment. */
    snprintf(args, sizeof(args), "run %s --quiet -s %s/fmc/chk-* --out %s/fmr", path, tmp, tmp);
    assert_int_equal(run_sh(NULL, "", "fmr", args), 0);
    snprintf(cmd, sizeof(cmd),
             "cd %s && test -z \"$(find fmr/store -name \"$(cat fmc-name)\" -size +1M)\" && "
             "test -n \"$(find fmr/store -name \"$(cat fmc-name)\")\"",
             tmp);
    assert_int_equal(system(cmd), 0);
    /* Cut short of its segments: refused, naming it. */
    snprintf(args, sizeof(args), "savepoint %s/fmt/chk-*", tmp);
    assert_int_equal(run_sh(NULL, "", "fmt", args), 1);
    err_says("fmt", "ends before the segments the _metadata lists (truncated)", NULL);
    /* A savepoint's plain state file of 3 GiB: refused by its size. */
    const char *sp = stop_savepoint();
    snprintf(cmd, sizeof(cmd), "cp -r %s %s/spbig && truncate -s 3G %s/spbig/v2-0.state", sp, tmp,
             tmp);
    assert_int_equal(system(cmd), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(args, sizeof(args), "savepoint %s/spbig", tmp);
    assert_int_equal(run_sh(NULL, "", "spbig", args), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 10);
    err_says("spbig", "v2-0.state: wrong size", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_is_a_file_name),
        cmocka_unit_test(test_out_must_be_a_run_directory),
        cmocka_unit_test(test_full_disk_fails_the_run),
        cmocka_unit_test(test_savepoint_special_files),
        cmocka_unit_test(test_savepoint_huge_sparse_files),
        cmocka_unit_test(test_fifos_refused),
        cmocka_unit_test(test_savepoint_of_another_job),
        cmocka_unit_test(test_savepoint_inside_out),
        cmocka_unit_test(test_savepoint_by_run_directory),
        cmocka_unit_test(test_expect_absent_and_malformed_paths),
        cmocka_unit_test(test_empty_savepoint_path),
        cmocka_unit_test(test_long_paths),
        cmocka_unit_test(test_errno_is_reported),
        cmocka_unit_test(test_numbers_and_write_errors),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
