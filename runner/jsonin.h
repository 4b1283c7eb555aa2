/*
 * jsonin.h - reading user JSON with errors a person can act on.
 *
 * Every accessor knows the file and the JSON path it is reading
 * ("job.operators[2].parallelism") and, when the value is missing, of the
 * wrong type or out of range, writes one line such as
 *
 *   demo.json: job.operators[2].parallelism: expected an integer from 1 to
 *   32768, got "four"
 *
 * into the context and returns CK_EINVAL. The first error wins; later
 * calls return at once, so a loader can read field after field and check
 * once at the end.
 */
#ifndef CK_JSONIN_H
#define CK_JSONIN_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct ck_jin {
    const char *file;
    char path[512];
    char err[1024];
    int failed;
} ck_jin;

/*
 * Opens path for reading a file the user named (a scenario, a run.json, a
 * savepoint's file), never blocking on it: it is opened with O_NONBLOCK and
 * checked with fstat before anything is read, so that a FIFO, a device or
 * a directory is refused at once (a FIFO opened for reading would wait for
 * a writer forever, a device could be read forever). Returns the
 * descriptor, in blocking mode again and close-on-exec, with *st filled;
 * or -1 with *why: the system's reason (errno kept), or what the path is
 * instead of a regular file ("a FIFO, not a regular file"; errno EINVAL,
 * or EISDIR for a directory). Every reader of the runner's layer uses it.
 */
int ck_jin_open_file(const char *path, struct stat *st, const char **why);

/*
 * Reads the whole file at path into a malloc'd, NUL-terminated text of at
 * most max bytes. NULL on error, with a one-line reason naming the file in
 * err (when err is not NULL): cannot open or read it, not a regular file
 * (ck_jin_open_file), larger than max, or a NUL byte in it (not a JSON
 * text). `what` names what was expected ("a scenario") in the messages.
 * *rc (when rc is not NULL): CK_EIO when the file could not be read,
 * CK_EINVAL when it is not what was expected.
 */
char *ck_jin_read(const char *path, size_t max, const char *what, int *rc, char *err,
                  size_t errlen);

/* Parses text; on a syntax error reports the line and column. NULL on
 * error. Every string in it, keys included, must be UTF-8 text without a
 * \u0000 escape (cJSON would cut the string at the NUL): the first that
 * is not fails with its JSON path and the string as written. */
cJSON *ck_jin_parse(ck_jin *j, const char *text);

/* Path handling: push ".key" or "[i]", pop back to a saved length. */
size_t ck_jin_push_key(ck_jin *j, const char *key);
size_t ck_jin_push_index(ck_jin *j, int i);
void ck_jin_pop(ck_jin *j, size_t saved);

/* Fails with "path: <message>". Returns CK_EINVAL. */
int ck_jin_fail(ck_jin *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Checks that obj is an object whose keys are all in allowed (a
 * NULL-terminated list) and appear once.
 */
int ck_jin_object(ck_jin *j, const cJSON *obj, const char *const *allowed);

/* Each getter: absent and !required -> keeps *out (the default), returns 0. */
int ck_jin_int(ck_jin *j, const cJSON *obj, const char *key, int required,
               int64_t min, int64_t max, int64_t *out);
int ck_jin_number(ck_jin *j, const cJSON *obj, const char *key, int required,
                  double min, double max, double *out);
int ck_jin_bool(ck_jin *j, const cJSON *obj, const char *key, int required, int *out);
/* Copies a string of at most cap-1 bytes. */
int ck_jin_string(ck_jin *j, const cJSON *obj, const char *key, int required,
                  char *out, size_t cap);
/* One of the NULL-terminated choices; *out is its index. */
int ck_jin_enum(ck_jin *j, const cJSON *obj, const char *key, int required,
                const char *const *choices, int *out);
/* A duration: "100 ms", "1.5 s", "2 min" or a number of milliseconds; in ns. */
int ck_jin_duration(ck_jin *j, const cJSON *obj, const char *key, int required,
                    int64_t min, int64_t max, int64_t *out);
/* The same of a value v (a list's element; its path pushed already). */
int ck_jin_duration_value(ck_jin *j, const cJSON *v, int64_t min, int64_t max, int64_t *out);
/* A quantity with SI units from the table (e.g. "1GBps", "1Gf") or a plain number. */
typedef struct ck_jin_unit {
    const char *name;
    double mult;
} ck_jin_unit;
int ck_jin_quantity(ck_jin *j, const cJSON *obj, const char *key, int required,
                    const ck_jin_unit *units, const char *what, double min, double max,
                    double *out);

/* Short text for a value in an error message ("\"four\"", "3.5", "an object"). */
void ck_jin_describe(const cJSON *v, char *buf, size_t len);

/* Parses a duration string; returns 0 or CK_EINVAL. */
int ck_jin_parse_duration(const char *text, int64_t *ns);

extern const ck_jin_unit ck_units_bandwidth[]; /* bytes per second */
extern const ck_jin_unit ck_units_speed[];     /* flops per second */
extern const ck_jin_unit ck_units_flops[];     /* flops */
extern const ck_jin_unit ck_units_size[];      /* bytes ("4 KB", "40 GB", "1 GiB") */

#endif
