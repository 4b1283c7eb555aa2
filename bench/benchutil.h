/*
 * benchutil.h - what the benchmark programs share: running the chandy
 * binary, reading figures out of run.json, writing a scenario variant.
 */
#ifndef CK_BENCHUTIL_H
#define CK_BENCHUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Parses a JSON file; NULL when it cannot. */
static inline cJSON *bench_read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[got] = 0;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}

/* A number at a dotted path of depth 1 or 2, or -1. */
static inline double bench_field(const cJSON *j, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* Runs `chandy <args>` quietly; returns its exit status. */
static inline int bench_chandy(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s > /dev/null", CHANDY_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A scratch directory in memory (tmpfs) when there is one. */
static inline int bench_tmpdir(char *dir, size_t len)
{
    snprintf(dir, len, "%s/chandy-bench-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

/* Writes doc to path. Returns 0 or -1. */
static inline int bench_write_json(const cJSON *doc, const char *path)
{
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    int rc = (text && f && fputs(text, f) >= 0) ? 0 : -1;
    if (f)
        fclose(f);
    free(text);
    return rc;
}

#endif
