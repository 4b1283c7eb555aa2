/*
 * test_netsec.c - a stranger on the machine against a run in socket mode.
 *
 * The test starts `chandy run --backend sockets` and, while the job runs,
 * finds the run's listening ports (the launching process holds them all:
 * its socket inodes, looked up in /proc/net/tcp) and connects to each as
 * a stranger: frames with no handshake, a handshake with a wrong secret,
 * a server's proof reflected back, an oversized frame header, a partial
 * handshake left hanging, a flood of bytes and a flood of connections.
 * Each must be refused (the run logs why, the connection is closed); the
 * run must still finish with correct exactly-once output; and the flood
 * must be cut off, so that memory stays bounded.
 *
 * Spoofed sources need an authenticated peer, which a stranger cannot be:
 * test_netframe covers them at the unit level.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "runutil.h"

#define MAX_PORTS 16

static void sleep_ms(int ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The TCP ports process pid listens on, and whether each is on 127.0.0.1. */
static int listening_ports(pid_t pid, int *ports, int *loopback, int max)
{
    unsigned long inodes[256];
    int ni = 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && ni < 256) {
        char link[128], target[128];
        snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (sscanf(target, "socket:[%lu]", &inodes[ni]) == 1)
            ni++;
    }
    closedir(d);
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return 0;
    char line[512];
    int np = 0;
    while (fgets(line, sizeof(line), f) && np < max) {
        unsigned addr, port, st;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %8x:%4x %*8x:%*4x %2x %*s %*s %*s %*d %*d %lu", &addr, &port, &st,
                   &inode) != 4 ||
            st != 0x0a) /* LISTEN */
            continue;
        for (int i = 0; i < ni; i++)
            if (inodes[i] == inode) {
                ports[np] = (int)port;
                loopback[np] = addr == 0x0100007fu; /* 127.0.0.1 as /proc prints it */
                np++;
            }
    }
    fclose(f);
    return np;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

/* 1 when the other end closed fd (a read sees the end or a reset), 0 when
 * it is still open after the receive timeout. Discards what arrives. */
static int closed_by_peer(int fd)
{
    uint8_t b[256];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof(b), 0);
        if (n > 0)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return 1;
        if (errno != EINTR)
            return 0;
    }
}

static int send_all(int fd, const void *p, size_t n)
{
    return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Sends a HELLO claiming host `host` and reads the server's reply (72
 * bytes). 1 when it came; 0 when the server closed instead. */
static int hello(int fd, int host, uint8_t *reply)
{
    uint8_t h[40];
    memcpy(h, "CKA1", 4);
    put32(h + 4, (uint32_t)host);
    randombytes_buf(h + 8, 32);
    if (send_all(fd, h, sizeof(h)))
        return 0;
    size_t got = 0;
    while (got < 72) {
        ssize_t n = recv(fd, reply + got, 72 - got, 0);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return memcmp(reply, "CKA2", 4) == 0;
}

/* A connection that got a server's reply (claiming some other host). */
static int hello_any(int port, uint8_t *reply)
{
    for (int host = 0; host < 3; host++) {
        int fd = dial(port);
        if (hello(fd, host, reply))
            return fd;
        close(fd);
    }
    fail_msg("port %d never answered a HELLO", port);
    return -1;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void test_stranger(void **state)
{
    (void)state;
    assert_true(sodium_init() >= 0);
    char out[256], err[256], dir[256];
    snprintf(dir, sizeof(dir), "%s/sec", tmp);
    snprintf(out, sizeof(out), "%s/sec.out", tmp);
    snprintf(err, sizeof(err), "%s/sec.err", tmp);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || chdir(CHANDY_SOURCE_DIR))
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        execl(CHANDY_BIN, "chandy", "run", "tests/scenarios/small-cp.json", "--backend", "sockets",
              "--out", dir, (char *)NULL);
        _exit(127);
    }
    /* The launching process binds a port per host (2 task managers and the
     * job manager) before the job starts. */
    int ports[MAX_PORTS], lo[MAX_PORTS], np = 0;
    for (int i = 0; i < 1000 && np < 3; i++) {
        np = listening_ports(pid, ports, lo, MAX_PORTS);
        if (np < 3)
            sleep_ms(5);
    }
    assert_int_equal(np, 3);
    for (int i = 0; i < np; i++)
        assert_true(lo[i]); /* loopback only */

    /* A handshake left hanging: closed when its time is up. */
    int hanging = dial(ports[0]);
    assert_int_equal(send_all(hanging, "CKA1\0\0", 6), 0);

    long flood_max = 0;
    for (int i = 0; i < np; i++) {
        /* 1. A stranger's frames with no handshake: a request to stop with
         * a savepoint, as a client would send it to the job manager. */
        uint8_t f[12 + 28 + 8] = {0};
        put32(f, 8 + 28 + 8);
        put32(f + 4, 0);           /* to the job manager */
        put32(f + 8, 0xfffffffeu); /* from a client */
        f[12] = 15;                /* SAVEPOINT */
        f[13] = 2;                 /* wire version */
        put32(f + 12 + 4, 0xfffffffeu);
        put32(f + 12 + 16, 1); /* stop */
        put32(f + 12 + 24, 8);
        int fd = dial(ports[i]);
        assert_int_equal(send_all(fd, f, sizeof(f)), 0);
        assert_true(closed_by_peer(fd));
        close(fd);

        /* 2. A handshake with another secret. */
        uint8_t reply[72], key[32], tag[32];
        fd = hello_any(ports[i], reply);
        randombytes_buf(key, sizeof(key));
        crypto_auth(tag, reply, sizeof(reply), key);
        assert_int_equal(send_all(fd, tag, sizeof(tag)), 0);
        assert_true(closed_by_peer(fd));
        close(fd);

        /* 3. The server's own proof sent back as the client's. */
        fd = hello_any(ports[i], reply);
        assert_int_equal(send_all(fd, reply + 40, 32), 0);
        assert_true(closed_by_peer(fd));
        close(fd);

        /* 4. An oversized frame header where the handshake should be. */
        uint8_t big[64];
        memset(big, 0xff, sizeof(big));
        fd = dial(ports[i]);
        assert_int_equal(send_all(fd, big, sizeof(big)), 0);
        assert_true(closed_by_peer(fd));
        close(fd);

        /* 5. A flood: cut off after a few bytes, long before 64 MiB. */
        fd = dial(ports[i]);
        static uint8_t junk[1 << 16];
        memset(junk, 'x', sizeof(junk));
        long sent = 0;
        while (sent < (64L << 20)) {
            ssize_t n = send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
            if (n <= 0)
                break;
            sent += n;
        }
        close(fd);
        assert_true(sent < (64L << 20));
        if (sent > flood_max)
            flood_max = sent;
    }

    /* 6. A flood of connections that never authenticate: the oldest are
     * closed, the run goes on. (The run's own processes connected by now:
     * a handshake of theirs caught in the middle of the flood could be
     * cut short, which the job would survive as a failover.) */
    sleep_ms(300);
    int many[48];
    for (int i = 0; i < 48; i++)
        many[i] = dial(ports[1]);
    int closed = 0;
    for (int i = 0; i < 48; i++) {
        closed += closed_by_peer(many[i]);
        close(many[i]);
    }
    assert_int_equal(closed, 48); /* evicted, or timed out */
    assert_true(closed_by_peer(hanging));
    close(hanging);

    int status;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* No process of the run grew (wait4 reports the largest of the
     * launching process and the task managers' processes it waited for):
     * about 35 MiB in a run without attacks; one flood of 64 MiB buffered
     * would go past 80. */
    assert_true(ru.ru_maxrss < 80 * 1024);

    /* The run is correct, exactly once, and no stranger stopped it. */
    cJSON *run = load_run("sec");
    const cJSON *job = cJSON_GetObjectItem(run, "job");
    assert_string_equal(cJSON_GetObjectItem(job, "state")->valuestring, "FINISHED");
    int recovered = cJSON_GetArraySize(cJSON_GetObjectItem(run, "recoveries")) > 0;
    if (!recovered)
        assert_true(num(run, "records_in", NULL) == 6000);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "correctness"), "ok")));
    assert_true(num(run, "correctness", "lost") == 0);
    assert_true(num(run, "correctness", "duplicated") == 0);
    const cJSON *sps = cJSON_GetObjectItem(run, "savepoints");
    assert_true(sps == NULL || cJSON_GetArraySize(sps) == 0);
    cJSON_Delete(run);

    /* Each attack was refused, and said why. */
    char *log = slurp(err);
    assert_non_null(log);
    assert_true(count(log, "refused a connection: not a chandy handshake") >= 2 * np);
    assert_true(count(log, "refused a connection: the client's proof is wrong") >= 2 * np);
    assert_true(count(log, "refused a connection: no handshake in time") +
                    count(log, "refused a connection: too many connections trying") >=
                1);
    assert_true(count(log, "too many connections trying to authenticate") >= 1);
    /* the run's own frames all passed admission (a failover may leave
     * frames of the cancelled attempt behind, which are dropped) */
    if (!recovered)
        assert_int_equal(count(log, "dropped a frame"), 0);
    assert_int_equal(count(log, "closed the connection from host"), 0);
    /* the job manager's process counts what it refused */
    const char *sum = strstr(log, "chandy: job manager's process: ");
    assert_non_null(sum);
    unsigned long long refused = 0;
    assert_int_equal(sscanf(sum, "chandy: job manager's process: %llu connections refused",
                            &refused), 1);
    assert_true(refused >= 5);
    free(log);
    printf("flood cut off after %ld bytes (kernel buffers included); launching process's "
           "peak RSS %ld KiB\n", flood_max, ru.ru_maxrss);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stranger),
    };
    return cmocka_run_group_tests(tests, ru_setup, ru_teardown);
}
