/*
 * runutil.h - helpers for tests that run the chandy binary: a fresh
 * temporary directory per test program, running `chandy <args>` with its
 * output captured, and reading the run.json it wrote.
 *
 * Each run is a separate process (SimGrid runs one simulation per process).
 */
#ifndef CK_RUNUTIL_H
#define CK_RUNUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

static char tmp[64];

static inline int ru_setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof(tmp), "/tmp/chandy-test-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static inline int ru_teardown(void **state)
{
    (void)state;
    if (getenv("CHANDY_KEEP_TEST_DIR")) { /* to look at what a failing test ran */
        fprintf(stderr, "kept %s\n", tmp);
        return 0;
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs `chandy <args>` from the source tree; returns its exit status.
 * Output goes to <tmp>/<tag>.{out,err}. */
static inline int chandy(const char *tag, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "cd %s && %s %s > %s/%s.out 2> %s/%s.err", CHANDY_SOURCE_DIR,
             CHANDY_BIN, args, tmp, tag, tmp, tag);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A whole file, NUL-terminated (malloc'd; NULL: it cannot be read); its
 * length in *len. */
static inline char *slurp_n(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    *len = got;
    return s;
}

static inline char *slurp(const char *path)
{
    size_t len;
    return slurp_n(path, &len);
}

/* Prints the end of what `chandy` run as <tag> wrote to stderr, so that a
 * test that fails on its exit status shows why the run ended so. */
static inline void chandy_show_err(const char *tag, int got, int want)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    fprintf(stderr, "chandy run '%s' exited %d, expected %d; the end of its stderr:\n", tag, got,
            want);
    size_t len;
    char *err = slurp_n(path, &len);
    if (err)
        fprintf(stderr, "%s\n", err + (len > 4000 ? len - 4000 : 0));
    free(err);
}

/* Runs `chandy <args>` and asserts its exit status, showing its stderr's
 * end when the status is another. */
#define assert_chandy(tag, args, want)                                                             \
    do {                                                                                           \
        int st_ = chandy((tag), (args)), want_ = (want);                                           \
        if (st_ != want_)                                                                          \
            chandy_show_err((tag), st_, want_);                                                    \
        assert_int_equal(st_, want_);                                                              \
    } while (0)

/* Writes text to <tmp>/<name>; returns the path (static buffer). */
static inline const char *put_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f))
        return NULL;
    return path;
}

/* <tmp>/<dir>/run.json, parsed; NULL when missing or malformed. */
static inline cJSON *try_load_run(const char *dir)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s/run.json", tmp, dir);
    char *text = slurp(path);
    if (!text)
        return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static inline cJSON *load_run(const char *dir)
{
    cJSON *j = try_load_run(dir);
    assert_non_null(j);
    return j;
}

/* j.a(.b) as a number; fails the test when it is not one. */
static inline double num(const cJSON *j, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    assert_true(cJSON_IsNumber(x));
    return x->valuedouble;
}

/* How many times needle occurs in s. */
static inline int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Renders page with scripts/render.sh (headless Chromium: nothing on the
 * console, no request) into <tmp>/<shot>; fails the test with what it said. */
static inline void render_ok(const char *page, const char *shot)
{
    char cmd[1400], out[300];
    snprintf(out, sizeof(out), "%s/%s.out", tmp, shot);
    snprintf(cmd, sizeof(cmd), "%s/scripts/render.sh %s %s/%s > %s 2>&1", CHANDY_SOURCE_DIR, page,
             tmp, shot, out);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        char *text = slurp(out);
        fail_msg("render.sh failed on %s:\n%s", page, text ? text : "");
    }
}

#endif
