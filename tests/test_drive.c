/*
 * test_drive.c - how both backends drive a host's nodes
 * (backend/drive.h): CPU as virtual time on the host's cores, input and
 * output held while a node is busy, a finished node kept until its last
 * output is sent, timed completions, completions ahead of waiting
 * messages, which nodes a pass must step, and work beside a node
 * (backend/bnode.h: ck_platform_ops.background) as a floor under the real
 * work's own time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bnode.h"
#include "drive.h"
#include "error.h"
#include "invcheck.h"

#define MS INT64_C(1000000)

/* A node that records what it was given and does what the test says. */
typedef struct fake {
    ck_dnode *d;
    ck_cores *cores;
    int messages, completions, lost, works, deadlines;
    double cpu_per_message; /* flops charged by each message */
    int more;               /* work() returns this */
    int finished;
    int send_in_work;       /* messages work() sends (through ck_drive_hold when busy) */
    ck_time deadline;
    ck_time now;            /* the time the test steps at */
    int sent_now;           /* messages that went at once */
} fake;

static int f_message(void *self, uint8_t *msg, size_t len)
{
    fake *f = self;
    (void)len;
    free(msg);
    f->messages++;
    ck_drive_cpu(f->d, f->cores, f->now, f->cpu_per_message, 1.0);
    return 0;
}

static int f_complete(void *self, uint64_t token, int status, uint8_t *data, size_t len)
{
    fake *f = self;
    (void)token, (void)status, (void)len;
    free(data);
    f->completions++;
    return 0;
}

static int f_lost(void *self, int host)
{
    fake *f = self;
    (void)host;
    f->lost++;
    return 0;
}

static ck_time f_deadline(void *self)
{
    return ((fake *)self)->deadline;
}

static int f_on_deadline(void *self)
{
    fake *f = self;
    f->deadlines++;
    f->deadline = CK_TIME_NEVER;
    return 0;
}

static int f_work(void *self)
{
    fake *f = self;
    f->works++;
    for (int i = 0; i < f->send_in_work; i++) {
        uint8_t *m = malloc(4);
        assert_non_null(m);
        if (ck_drive_busy(f->d, f->now))
            assert_int_equal(ck_drive_hold(f->d, 7, m, 4), CK_OK);
        else {
            free(m);
            f->sent_now++;
        }
    }
    f->send_in_work = 0;
    return f->more;
}

static int f_finished(void *self)
{
    return ((fake *)self)->finished;
}

static const ck_node_ops fake_ops = {f_message, f_complete, f_lost, f_deadline,
                                     f_on_deadline, f_work, f_finished, NULL};

static int released;
static void count_send(void *ctx, ck_dnode *d, uint32_t dst, uint8_t *msg, size_t len)
{
    (void)ctx, (void)d, (void)len;
    assert_int_equal(dst, 7);
    free(msg);
    released++;
}

static void setup(fake *f, ck_dnode *d, ck_cores *c)
{
    memset(f, 0, sizeof(*f));
    memset(d, 0, sizeof(*d));
    f->d = d;
    f->cores = c;
    f->deadline = CK_TIME_NEVER;
    d->node = (ck_node){&fake_ops, f};
    d->again = 1;
}

static void test_cores_are_virtual_time(void **state)
{
    (void)state;
    ck_cores c;
    assert_int_equal(ck_cores_init(&c, 2, 1e9), CK_OK); /* 2 cores of 1 Gflop/s */
    /* Three jobs of 10 ms at once: two run side by side, the third after. */
    assert_int_equal(ck_cores_run(&c, 0, 1e7, 1.0), 10 * MS);
    assert_int_equal(ck_cores_run(&c, 0, 1e7, 1.0), 10 * MS);
    assert_int_equal(ck_cores_run(&c, 0, 1e7, 1.0), 20 * MS);
    /* A slow_cpu factor of 0.5 doubles the time. */
    assert_int_equal(ck_cores_run(&c, 30 * MS, 1e7, 0.5), 50 * MS);
    ck_cores_free(&c);
}

static void test_busy_holds_input_and_output(void **state)
{
    (void)state;
    ck_cores c;
    assert_int_equal(ck_cores_init(&c, 1, 1e9), CK_OK);
    fake f;
    ck_dnode d;
    setup(&f, &d, &c);
    f.cpu_per_message = 5e6; /* 5 ms each */
    for (int i = 0; i < 3; i++)
        assert_int_equal(ck_drive_post(&d, CK_DMSG_MESSAGE, 0, 0, malloc(1), 1), CK_OK);
    f.now = 0;
    assert_true(ck_drive_wants(&d, 0));
    assert_int_equal(ck_drive_step(&d, 0), 0);
    /* The first message made it busy: the others wait, and so does work(). */
    assert_int_equal(f.messages, 1);
    assert_int_equal(f.works, 0);
    assert_int_equal(ck_drive_now(&d, 0), 5 * MS);
    assert_false(ck_drive_wants(&d, 1 * MS));
    assert_int_equal(ck_drive_next(&d, 1 * MS), 5 * MS);
    /* Work that sends while busy holds the messages until the spell ends. */
    f.now = 5 * MS;
    f.send_in_work = 0;
    assert_int_equal(ck_drive_step(&d, 5 * MS), 0);
    assert_int_equal(f.messages, 2);
    f.now = 10 * MS;
    assert_int_equal(ck_drive_step(&d, 10 * MS), 0);
    assert_int_equal(f.messages, 3);
    assert_int_equal(f.works, 0);
    f.send_in_work = 2;
    f.now = 12 * MS; /* still busy until 15 ms: work() is not called */
    assert_int_equal(ck_drive_step(&d, 12 * MS), 0);
    assert_int_equal(f.works, 0);
    f.now = 15 * MS;
    assert_true(ck_drive_wants(&d, 15 * MS)); /* it ended busy: stepped again */
    assert_int_equal(ck_drive_step(&d, 15 * MS), 0);
    assert_int_equal(f.works, 1);
    assert_int_equal(f.sent_now, 2); /* not busy any more: they went at once */
    ck_drive_clear(&d);
    ck_cores_free(&c);
}

static void test_finished_node_sends_its_last_output(void **state)
{
    (void)state;
    ck_cores c;
    assert_int_equal(ck_cores_init(&c, 1, 1e9), CK_OK);
    fake f;
    ck_dnode d;
    setup(&f, &d, &c);
    /* Its last work costs 2 ms and sends 3 messages, then it is finished. */
    f.now = 0;
    ck_drive_cpu(&d, &c, 0, 2e6, 1.0);
    f.send_in_work = 3;
    assert_int_equal(ck_drive_step(&d, 0), 0); /* busy: nothing yet */
    f.now = 2 * MS;
    assert_int_equal(ck_drive_step(&d, 2 * MS), 0);
    assert_int_equal(f.sent_now, 3);
    /* The same, finished while busy with held output: not ended until sent. */
    ck_drive_cpu(&d, &c, 2 * MS, 2e6, 1.0);
    released = 0;
    d.again = 1;
    assert_int_equal(ck_drive_step(&d, 3 * MS), 0); /* busy until 4 ms */
    for (int i = 0; i < 2; i++)
        assert_int_equal(ck_drive_hold(&d, 7, malloc(4), 4), CK_OK);
    f.finished = 1;
    assert_int_equal(ck_drive_step(&d, 3 * MS), 0);
    assert_int_equal(ck_drive_next(&d, 3 * MS), 4 * MS);
    assert_true(ck_drive_wants(&d, 4 * MS));
    assert_int_equal(ck_drive_step(&d, 4 * MS), 0); /* its outbox first */
    ck_drive_release(&d, count_send, NULL);
    assert_int_equal(released, 2);
    assert_int_equal(ck_drive_step(&d, 4 * MS), -1);
    assert_int_equal(ck_drive_next(&d, 4 * MS), CK_TIME_NEVER);
    ck_cores_free(&c);
}

static void test_wants_and_due(void **state)
{
    (void)state;
    ck_cores c;
    assert_int_equal(ck_cores_init(&c, 1, 1e9), CK_OK);
    fake f;
    ck_dnode d;
    setup(&f, &d, &c);
    assert_int_equal(ck_drive_step(&d, 0), 0); /* its first step */
    assert_int_equal(f.works, 1);
    f.deadline = 10 * MS;
    assert_int_equal(ck_drive_next(&d, 0), 10 * MS);
    assert_false(ck_drive_wants(&d, 5 * MS)); /* idle: nothing to do */
    /* A deadline that moves away when its time comes (a source's next
     * record) is still due at the time ck_drive_next gave. */
    f.deadline = 100 * MS;
    assert_true(ck_drive_wants(&d, 10 * MS));
    assert_int_equal(ck_drive_step(&d, 10 * MS), 0);
    assert_int_equal(f.works, 2);
    assert_int_equal(ck_drive_next(&d, 10 * MS), 100 * MS);
    assert_false(ck_drive_wants(&d, 50 * MS));
    /* Mail, a completion and a lost peer each want a step, in order. */
    assert_int_equal(ck_drive_post(&d, CK_DMSG_PEER_LOST, 3, 0, NULL, 0), CK_OK);
    assert_int_equal(ck_drive_post(&d, CK_DMSG_COMPLETE, 1, 0, NULL, 0), CK_OK);
    assert_true(ck_drive_wants(&d, 50 * MS));
    assert_int_equal(ck_drive_step(&d, 50 * MS), 0);
    assert_int_equal(f.lost, 1);
    assert_int_equal(f.completions, 1);
    /* work() saying it could do more wants another step at once. */
    f.more = 1;
    d.again = 1;
    assert_int_equal(ck_drive_step(&d, 60 * MS), 1);
    assert_true(ck_drive_wants(&d, 60 * MS));
    assert_int_equal(ck_drive_next(&d, 60 * MS), 60 * MS);
    /* A dead node drops its mail. */
    d.dead = 1;
    assert_int_equal(ck_drive_post(&d, CK_DMSG_MESSAGE, 0, 0, malloc(1), 1), CK_OK);
    assert_null(d.head);
    assert_int_equal(ck_drive_step(&d, 60 * MS), -1);
    ck_cores_free(&c);
}

static void test_timed_completions(void **state)
{
    (void)state;
    ck_cores c;
    assert_int_equal(ck_cores_init(&c, 1, 1e9), CK_OK);
    fake f;
    ck_dnode d;
    setup(&f, &d, &c);
    ck_dlater l = {0};
    ck_time due[3] = {30 * MS, 10 * MS, 20 * MS};
    for (int i = 0; i < 3; i++) {
        ck_dmsg *m = calloc(1, sizeof(*m));
        assert_non_null(m);
        m->kind = CK_DMSG_COMPLETE;
        m->token = (uint64_t)due[i];
        m->to = &d;
        ck_dlater_add(&l, m, due[i]);
    }
    assert_int_equal(ck_dlater_run(&l, 5 * MS), 10 * MS);
    assert_null(d.head);
    assert_int_equal(ck_dlater_run(&l, 20 * MS), 30 * MS);
    assert_non_null(d.head);
    assert_int_equal(d.head->token, 10 * MS); /* in due order */
    assert_int_equal(d.head->next->token, 20 * MS);
    assert_null(d.head->next->next);
    ck_dlater_clear(&l);
    assert_null(l.head);
    ck_drive_clear(&d);
    ck_cores_free(&c);
}

/* A completion goes ahead of the messages waiting, behind the
 * completions and notices already ahead of them; anything else keeps
 * arrival order. */
static void test_completions_go_ahead_of_messages(void **state)
{
    (void)state;
    ck_dnode d;
    memset(&d, 0, sizeof(d));
    struct {
        int kind;
        uint64_t token;
    } in[] = {{CK_DMSG_MESSAGE, 1},  {CK_DMSG_MESSAGE, 2}, {CK_DMSG_COMPLETE, 3},
              {CK_DMSG_PEER_LOST, 4}, {CK_DMSG_COMPLETE, 5}, {CK_DMSG_MESSAGE, 6}};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        assert_int_equal(ck_drive_post(&d, in[i].kind, in[i].token, 0, NULL, 0), CK_OK);
    uint64_t want[] = {3, 5, 1, 2, 4, 6};
    const ck_dmsg *m = d.head;
    for (size_t i = 0; i < 6; i++, m = m->next) {
        assert_non_null(m);
        assert_int_equal(m->token, want[i]);
    }
    assert_null(m);
    assert_int_equal(d.tail->token, 6);
    ck_drive_clear(&d);
    /* With no message waiting, a completion goes last. */
    assert_int_equal(ck_drive_post(&d, CK_DMSG_PEER_LOST, 1, 0, NULL, 0), CK_OK);
    assert_int_equal(ck_drive_post(&d, CK_DMSG_COMPLETE, 2, 0, NULL, 0), CK_OK);
    assert_int_equal(d.head->token, 1);
    assert_int_equal(d.tail->token, 2);
    ck_drive_clear(&d);
    assert_null(d.head);
}

/* ---- work beside a node (bnode.c's background) ---------------------------------- */

static ck_time bg_clock_now;
static ck_time bg_clock(const ck_bnode *n)
{
    (void)n;
    return bg_clock_now;
}

/* When the background work asked at `now`, begun at `since`, completes. */
static ck_time bg_due(ck_bhost *h, ck_bnode *n, ck_time now, ck_time since, double flops,
                      uint64_t disk)
{
    bg_clock_now = now;
    ck_bnode_ops.background(&n->plat, since, flops, disk, 7);
    assert_non_null(h->later.head);
    ck_dmsg *m = h->later.head;
    assert_int_equal(m->token, 7);
    assert_int_equal(m->kind, CK_DMSG_COMPLETE);
    ck_time due = m->due;
    ck_dlater_clear(&h->later);
    return due;
}

/* Background work takes a core of the host from when its caller began the
 * real work: under simulated time that is now and the model is its whole
 * time; over a real clock the real work took time already, and the model
 * is a floor under it (completing at once once passed), not added to it.
 * The local disk comes after the CPU, in order. */
static void test_background_from_since(void **state)
{
    (void)state;
    static const ck_bnode_io io = {.clock = bg_clock};
    ck_bworld bw = {.io = &io};
    ck_bhost h;
    assert_int_equal(ck_bhost_init(&h, 1, 1e9, 1e9, NULL), CK_OK); /* 1 Gflop/s, 1 GB/s */
    ck_bnode n;
    memset(&n, 0, sizeof(n)); /* as the backends' nodes are made */
    ck_bnode_init(&n, &bw, &h, 1, 0, "t");
    /* simulated: begun now, 10 Mflop = 10 ms */
    assert_int_equal(bg_due(&h, &n, 100 * MS, 100 * MS, 1e7, 0), 110 * MS);
    /* real: begun 4 ms ago, the model ends 6 ms from now */
    assert_int_equal(bg_due(&h, &n, 200 * MS, 196 * MS, 1e7, 0), 206 * MS);
    /* real: begun 30 ms ago, longer than the model: at once */
    assert_int_equal(bg_due(&h, &n, 300 * MS, 270 * MS, 1e7, 0), 300 * MS);
    /* a `since` after now is taken as now */
    assert_int_equal(bg_due(&h, &n, 400 * MS, 450 * MS, 1e7, 0), 410 * MS);
    /* the disk after the CPU: 5 MB at 1 GB/s, from since, floored at now */
    assert_int_equal(bg_due(&h, &n, 500 * MS, 490 * MS, 1e7, 5000000), 505 * MS);
    assert_int_equal(bg_due(&h, &n, 600 * MS, 500 * MS, 1e7, 5000000), 600 * MS);
    /* the core the last work took is busy until it ends: the next waits */
    assert_int_equal(bg_due(&h, &n, 700 * MS, 700 * MS, 1e7, 0), 710 * MS);
    assert_int_equal(bg_due(&h, &n, 700 * MS, 700 * MS, 1e7, 0), 720 * MS);
    ck_bnode_clear(&n);
    ck_bhost_free(&h);
}

/* ---- invariants (drive.h, bnode.h) ----------------------------------------------- */

static int bad_check; /* the checked node's check reports invariant 3 of "fake" */
static int f_check(const void *self, ck_inv *v)
{
    (void)self;
    return bad_check ? ck_inv_fail(v, "fake", 3, "as the test said") : 0;
}

static const ck_node_ops checked_ops = {f_message, f_complete, f_lost, f_deadline,
                                        f_on_deadline, f_work, f_finished, f_check};

/* The drive's checks (drive.h), the host's and the node's (bnode.h): a node
 * busy with output held, mail waiting and timed completions passes them;
 * each numbered invariant, broken by one field, fails with its number;
 * the node's own check is called through the drive's. */
static void test_invariants(void **state)
{
    (void)state;
    static const ck_bnode_io io = {.clock = bg_clock};
    ck_bworld bw = {.io = &io, .check = 1};
    ck_bhost h;
    assert_int_equal(ck_bhost_init(&h, 2, 1e9, 1e9, NULL), CK_OK);
    ck_bnode n;
    memset(&n, 0, sizeof(n));
    ck_bnode_init(&n, &bw, &h, 1, 0, "t");
    assert_int_equal(n.d.check, 1);
    assert_string_equal(n.d.name, "t");
    fake f;
    ck_dnode *d = &n.d;
    setup(&f, d, &h.cores);
    d->check = 1;
    d->name = n.name;
    d->node.ops = &checked_ops;
    f.cpu_per_message = 5e6;
    assert_int_equal(ck_drive_post(d, CK_DMSG_MESSAGE, 0, 0, malloc(1), 1), CK_OK);
    assert_int_equal(ck_drive_step(d, 0), 0); /* busy until 5 ms */
    assert_true(ck_drive_busy(d, 0));
    for (int i = 0; i < 2; i++) /* what it sends meanwhile is held */
        assert_int_equal(ck_drive_hold(d, 7, malloc(4), 4), CK_OK);
    assert_int_equal(ck_drive_post(d, CK_DMSG_MESSAGE, 0, 0, malloc(1), 1), CK_OK);
    bg_clock_now = 0;
    ck_bnode_ops.background(&n.plat, 0, 1e7, 0, 7);
    ck_bnode_ops.background(&n.plat, 0, 2e7, 0, 8);
    assert_int_equal(ck_drive_check(d, 0, NULL), 0);
    assert_int_equal(ck_bhost_check(&h, NULL), 0);
    assert_int_equal(ck_bnode_check(&n, NULL), 0);

    INV_BREAK(d->busy_until, 0, ck_drive_check(d, 0, &V), "drive", 2);
    INV_BREAK(d->head->kind, CK_DMSG_SEND, ck_drive_check(d, 0, &V), "drive", 3);
    INV_BREAK(d->tail, NULL, ck_drive_check(d, 0, &V), "drive", 3);
    INV_BREAK(d->obox->kind, CK_DMSG_MESSAGE, ck_drive_check(d, 0, &V), "drive", 3);
    INV_BREAK(d->obox_tail, d->obox, ck_drive_check(d, 0, &V), "drive", 3);
    INV_BREAK(bad_check, 1, ck_drive_check(d, 0, &V), "fake", 3);
    INV_BREAK(h.cores.free[1], -1, ck_bhost_check(&h, &V), "drive", 4);
    INV_BREAK(h.later.head->due, 50 * MS, ck_bhost_check(&h, &V), "drive", 5);
    INV_BREAK(h.slow, 0, ck_bhost_check(&h, &V), "bnode", 4);
    INV_BREAK(h.pool.used, 1, ck_bhost_check(&h, &V), "segpool", 2);
    INV_BREAK(n.plat.ops, &ck_bnode_ops_files, ck_bnode_check(&n, &V), "bnode", 1);
    INV_BREAK(n.plat.netpool, NULL, ck_bnode_check(&n, &V), "bnode", 1);

    /* Checked steps: a violation ends the process with one line and status
     * CK_EXIT_INVARIANT (a child here, its standard error a pipe). */
    ck_drive_release(d, count_send, NULL); /* as a backend does before a step */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        bad_check = 1;
        ck_drive_step(d, 5 * MS);
        _exit(0);
    }
    close(fds[1]);
    char line[512] = {0};
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(line) - 1 && (k = read(fds[0], line + got, sizeof(line) - 1 - got)) > 0)
        got += (size_t)k;
    close(fds[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), CK_EXIT_INVARIANT);
    assert_string_equal(line, "chandy: invariant violated: fake (3) at 0.005000000 s on t: as "
                              "the test said\n");
    /* Unchecked, the same step goes on. */
    d->check = 0;
    bad_check = 1;
    assert_int_equal(ck_drive_step(d, 5 * MS), 0);
    assert_int_equal(f.messages, 2);
    bad_check = 0;
    ck_bnode_clear(&n);
    ck_bhost_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cores_are_virtual_time),
        cmocka_unit_test(test_busy_holds_input_and_output),
        cmocka_unit_test(test_finished_node_sends_its_last_output),
        cmocka_unit_test(test_wants_and_due),
        cmocka_unit_test(test_timed_completions),
        cmocka_unit_test(test_completions_go_ahead_of_messages),
        cmocka_unit_test(test_background_from_since),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
