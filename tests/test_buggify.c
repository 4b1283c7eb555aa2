/*
 * test_buggify.c - the faults inside the processes (backend/buggify.c)
 * and whole runs under them.
 *
 * The draws: a fault acts only while in force, only on its host's
 * operations (or every host's), as often as its probability says; the
 * same seed draws the same hits, each host from a stream of its own (a
 * fault on one host leaves another's draws alone), and a late completion
 * is late by up to the fault's delay.
 *
 * Runs of tests/scenarios/buggify-*.json: downloads that fail and
 * restores that cannot allocate restart the job from the same checkpoint
 * each time, never falling back; uploads and metadata writes that fail
 * and snapshots that cannot allocate decline their checkpoints (one
 * tolerated, the second in a row failing the job over); deletes that
 * fail are logged and left; late completions make a checkpoint longer;
 * deployments that fail fail the job over until they go through. Every
 * run finishes with its output exactly once, run.json counts what each
 * fault did, the same seed gives the same run.json, and the socket
 * backend plays the same events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buggify.h"
#include "error.h"
#include "platform.h"
#include "runutil.h"

/* ---- the draws ------------------------------------------------------------------- */

static void test_draws(void **state)
{
    (void)state;
    ck_fault f[4] = {
        {.kind = CK_FAULT_STORE_ERRORS, .host = 1, .ops = CK_STORE_OP_PUT, .prob = 0.5},
        {.kind = CK_FAULT_STORE_DELAY, .host = -1, .prob = 1.0, .delay = 30 * CK_NS_PER_MS},
        {.kind = CK_FAULT_ALLOC_FAILURE, .host = 0, .point = CK_POINT_SNAPSHOT, .prob = 1.0},
        {.kind = CK_FAULT_CRASH, .host = 0},
    };
    ck_buggify b, c;
    assert_int_equal(ck_buggify_init(&b, f, 4, 2, 42), 0);
    /* nothing in force: nothing hit, nothing drawn */
    assert_false(ck_buggify_any(&b));
    assert_int_equal(ck_buggify_store_error(&b, 1, CK_STORE_OP_PUT), -1);
    assert_int_equal(ck_buggify_store_delay(&b, 1), 0);
    assert_int_equal(ck_buggify_alloc(&b, 0, CK_POINT_SNAPSHOT), 0);
    ck_buggify_set(&b, 3, 1); /* not a fault of its kinds */
    assert_false(ck_buggify_any(&b));
    for (int i = 0; i < 3; i++)
        ck_buggify_set(&b, i, 1);
    assert_int_equal(b.non, 3);
    /* its host's operations of its kinds only */
    int hits = 0;
    for (int i = 0; i < 2000; i++) {
        assert_int_equal(ck_buggify_store_error(&b, 0, CK_STORE_OP_PUT), -1);
        assert_int_equal(ck_buggify_store_error(&b, -1, CK_STORE_OP_PUT), -1); /* the jm */
        assert_int_equal(ck_buggify_store_error(&b, 1, CK_STORE_OP_GET), -1);
        hits += ck_buggify_store_error(&b, 1, CK_STORE_OP_PUT) == 0;
    }
    assert_in_range(hits, 900, 1100); /* probability 0.5: 1000 expected, sd 22 */
    assert_true(b.hits[0] == (uint64_t)hits);
    /* every host's completions, late by up to the delay */
    for (int h = -1; h < 2; h++)
        for (int i = 0; i < 100; i++) {
            ck_time d = ck_buggify_store_delay(&b, h);
            assert_true(d >= CK_NS_PER_US && d <= 30 * CK_NS_PER_MS);
        }
    assert_true(b.hits[1] == 300);
    /* its point, on its host */
    assert_int_equal(ck_buggify_alloc(&b, 0, CK_POINT_RESTORE), 0);
    assert_int_equal(ck_buggify_alloc(&b, 1, CK_POINT_SNAPSHOT), 0);
    assert_int_equal(ck_buggify_alloc(&b, 0, CK_POINT_SNAPSHOT), 1);
    assert_true(b.hits[2] == 1);
    /* out of force: nothing */
    ck_buggify_set(&b, 0, 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ck_buggify_store_error(&b, 1, CK_STORE_OP_PUT), -1);

    /* The same seed hits the same operations; a host's draws do not move
     * with another's. */
    ck_fault g[2] = {
        {.kind = CK_FAULT_STORE_ERRORS, .host = -1, .ops = CK_STORE_OP_ALL, .prob = 0.3},
        {.kind = CK_FAULT_STORE_ERRORS, .host = -1, .ops = CK_STORE_OP_ALL, .prob = 0.3},
    };
    char a1[200], a2[200];
    for (int run = 0; run < 2; run++) {
        assert_int_equal(ck_buggify_init(&c, g, 2, 3, 7), 0);
        ck_buggify_set(&c, 0, 1);
        ck_buggify_set(&c, 1, 1);
        char *out = run ? a2 : a1;
        for (int i = 0; i < 199; i++) {
            if (run == 1 && i % 3 == 0) /* host 2 busy too, in the second run only */
                ck_buggify_store_error(&c, 2, CK_STORE_OP_PUT);
            out[i] = (char)('a' + 1 + ck_buggify_store_error(&c, 0, CK_STORE_OP_GET));
        }
        out[199] = 0;
        ck_buggify_free(&c);
    }
    assert_string_equal(a1, a2);
    assert_non_null(strchr(a1, 'a')); /* some missed, */
    assert_non_null(strchr(a1, 'b')); /* some the first fault hit, */
    assert_non_null(strchr(a1, 'c')); /* and some only the second */
    assert_int_equal(ck_buggify_init(&c, g, 2, 3, 8), 0); /* another seed, other hits */
    ck_buggify_set(&c, 0, 1);
    ck_buggify_set(&c, 1, 1);
    for (int i = 0; i < 199; i++)
        a2[i] = (char)('a' + 1 + ck_buggify_store_error(&c, 0, CK_STORE_OP_GET));
    assert_string_not_equal(a1, a2);
    ck_buggify_free(&c);
    ck_buggify_free(&b);
}

/* ---- whole runs --------------------------------------------------------------------- */

static const cJSON *item(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v)
        fprintf(stderr, "run.json has no \"%s\"\n", k);
    assert_non_null(v);
    return v;
}

/* Runs tests/scenarios/buggify-<name>.json under backend (tag: the run's
 * name here); asserts it finished, exactly once, and returns run.json. */
static cJSON *bug_run(const char *name, const char *backend, const char *tag)
{
    char args[600], path[300];
    snprintf(args, sizeof(args), "run tests/scenarios/buggify-%s.json --backend %s --out %s/%s",
             name, backend, tmp, tag);
    int st = chandy(tag, args);
    if (st)
        chandy_show_err(tag, st, 0);
    assert_int_equal(st, 0);
    snprintf(path, sizeof(path), "%s/%s/run.json", tmp, tag);
    char *text = slurp(path);
    assert_non_null(text);
    cJSON *run = cJSON_Parse(text);
    free(text);
    assert_non_null(run);
    assert_string_equal(item(item(run, "job"), "state")->valuestring, "FINISHED");
    const cJSON *c = item(run, "correctness");
    assert_true(cJSON_IsTrue(item(c, "ok")));
    assert_string_equal(item(c, "guarantee")->valuestring, "exactly-once");
    assert_true(cJSON_IsNull(item(c, "degraded")));
    assert_true(item(c, "lost")->valuedouble == 0 && item(c, "duplicated")->valuedouble == 0 &&
                item(c, "unexpected")->valuedouble == 0);
    return run;
}

/* What fault i of the run did: ops_failed or ops_delayed. */
static double fault_hits(const cJSON *run, int i)
{
    const cJSON *f = cJSON_GetArrayItem(item(run, "faults"), i);
    assert_non_null(f);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(f, "ops_failed");
    if (!n)
        n = item(f, "ops_delayed");
    return n->valuedouble;
}

/* Checkpoint id's entry. */
static const cJSON *checkpoint(const cJSON *run, int id)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, item(run, "checkpoints"))
        if (item(c, "id")->valuedouble == id)
            return c;
    fail_msg("no checkpoint %d in run.json", id);
    return NULL;
}

/* Whether the run's stderr holds s. */
static int said(const char *tag, const char *s)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s.err", tmp, tag);
    char *text = slurp(path);
    int yes = text && strstr(text, s);
    free(text);
    return yes;
}

/* Downloads fail for 300 ms from the first restore on, and restores'
 * allocations a third of the time for a second: every restart restores
 * the checkpoint the crash left as the latest, again and again, until the
 * restore goes through. */
static void test_failing_restores(void **state)
{
    (void)state;
    cJSON *run = bug_run("restore", "simgrid", "restore");
    const cJSON *recs = item(run, "recoveries"), *r;
    assert_true(cJSON_GetArraySize(recs) >= 3);
    double cp = -1;
    int io = 0, oom = 0;
    cJSON_ArrayForEach(r, recs)
    {
        double c = item(r, "checkpoint")->valuedouble;
        if (cp < 0)
            cp = c;
        assert_true(c == cp); /* the same one every time */
        const char *cause = item(r, "cause")->valuestring;
        io += strstr(cause, "input/output error") != NULL;
        oom += strstr(cause, "out of memory") != NULL;
    }
    assert_true(cp > 1);
    assert_true(io >= 1 && oom >= 1);
    assert_true(fault_hits(run, 0) > 0); /* alloc_failure restore */
    assert_true(fault_hits(run, 2) > 0); /* store_errors get */
    /* the last recovery restored */
    const cJSON *last = cJSON_GetArrayItem(recs, cJSON_GetArraySize(recs) - 1);
    assert_true(cJSON_IsNumber(item(last, "restored_s")));
    assert_false(said("restore", "falling back"));

    /* The same seed, the same run (but its wall time). */
    cJSON *again = bug_run("restore", "simgrid", "restore-again");
    cJSON_DeleteItemFromObject(run, "wall_time_s");
    cJSON_DeleteItemFromObject(run, "sim_speed");
    cJSON_DeleteItemFromObject(again, "wall_time_s");
    cJSON_DeleteItemFromObject(again, "sim_speed");
    char *a = cJSON_PrintUnformatted(run), *b = cJSON_PrintUnformatted(again);
    cJSON_Delete(again);
    assert_string_equal(a, b);
    free(a);
    free(b);
    cJSON_Delete(run);
}

/* Checkpoints taken while uploads fail: declined (tolerated once), the
 * metadata write failing next (a second failure in a row: failover),
 * a snapshot that cannot allocate (declined); deletes that fail are
 * logged and the files left; late completions make checkpoint 8 longer. */
static void test_failing_uploads(void **state)
{
    (void)state;
    cJSON *run = bug_run("upload", "simgrid", "upload");
    assert_string_equal(item(checkpoint(run, 3), "status")->valuestring, "declined");
    assert_string_equal(item(checkpoint(run, 4), "status")->valuestring, "declined");
    assert_string_equal(item(checkpoint(run, 7), "status")->valuestring, "declined");
    assert_string_equal(item(checkpoint(run, 8), "status")->valuestring, "completed");
    assert_true(item(checkpoint(run, 8), "duration_s")->valuedouble >
                5 * item(checkpoint(run, 2), "duration_s")->valuedouble);
    const cJSON *recs = item(run, "recoveries");
    assert_int_equal(cJSON_GetArraySize(recs), 1);
    const cJSON *r = cJSON_GetArrayItem(recs, 0);
    assert_non_null(strstr(item(r, "cause")->valuestring,
                           "exceeded checkpoint tolerable failure threshold (1): checkpoint 4"));
    assert_true(item(r, "checkpoint")->valuedouble == 2);
    for (int i = 0; i < 5; i++)
        assert_true(fault_hits(run, i) > 0);
    assert_true(said("upload", "could not delete") && said("upload", "left there"));
    cJSON_Delete(run);
}

/* Deployments fail for 400 ms from tm1's crash: each failed subtask tells
 * the job manager, which fails over until one goes through. */
static void test_failing_deployments(void **state)
{
    (void)state;
    cJSON *run = bug_run("deploy", "simgrid", "deploy");
    const cJSON *recs = item(run, "recoveries"), *r;
    int deploys = 0;
    double cp = -1;
    cJSON_ArrayForEach(r, recs)
    {
        deploys += strstr(item(r, "cause")->valuestring, "could not be deployed") != NULL;
        if (cp < 0)
            cp = item(r, "checkpoint")->valuedouble;
        assert_true(item(r, "checkpoint")->valuedouble == cp);
    }
    assert_true(deploys >= 1);
    assert_true(fault_hits(run, 1) > 0);
    cJSON_Delete(run);
}

/* The socket backend plays the same events: the job manager's process
 * starts and ends them, the task managers' processes draw and report
 * what they hit. Real time: what is hit varies, the outcome does not. */
static void test_sockets(void **state)
{
    (void)state;
    static const char *const names[] = {"restore", "upload"};
    for (int i = 0; i < 2; i++) {
        char tag[64];
        snprintf(tag, sizeof(tag), "%s-sockets", names[i]);
        cJSON *run = bug_run(names[i], "sockets", tag);
        double hits = 0;
        const cJSON *f;
        cJSON_ArrayForEach(f, item(run, "faults"))
        {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(f, "ops_failed");
            hits += cJSON_IsNumber(n) ? n->valuedouble : 0;
        }
        assert_true(hits > 0); /* counted in the job manager's process */
        assert_false(said(tag, "falling back"));
        cJSON_Delete(run);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draws),
        cmocka_unit_test(test_failing_restores),
        cmocka_unit_test(test_failing_uploads),
        cmocka_unit_test(test_failing_deployments),
        cmocka_unit_test(test_sockets),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
