/* test_sock.c — outbound TCP: sp_connect to a listener served by a
 * coroutine of the same loop (by address and by "localhost"), an echo round
 * trip with a large write, end of stream, read timeouts, refused
 * connections, unknown names and calls outside a coroutine. */
#include "loop/loop.h"
#include "net/net.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

/* An echo server: accepts one connection and echoes until end of stream. */
typedef struct echo_server {
    loop_watch lw;
    loop_watch cw;
    int port;
    int accepted;
} echo_server;

static void on_conn(int fd, const net_addr *peer, void *ud) {
    echo_server *e = ud;
    e->cw = (loop_watch){.fd = fd};
    e->accepted = 1;
}

static void echo_main(void *arg) {
    echo_server *e = arg;
    loop *l = loop_current();
    while (!e->accepted) {
        int rc = loop_wait_fd(l, &e->lw, LOOP_READ, loop_now(l) + 5000);
        CHECK(rc > 0);
        CHECK(net_accept_batch(e->lw.fd, 1, on_conn, e) >= 0);
    }
    CHECK_EQ(loop_watch_add(l, &e->cw, BACKEND_CONN), 0);
    static char buf[65536];
    ssize_t n;
    while ((n = net_read(l, &e->cw, buf, sizeof buf, loop_now(l) + 5000)) > 0)
        CHECK_EQ(net_write(l, &e->cw, buf, (size_t)n, loop_now(l) + 5000), n);
    net_close(l, &e->cw);
    net_close(l, &e->lw);
}

static void start_echo(loop *l, echo_server *e) {
    net_addr a;
    CHECK_EQ(net_parse_addr("127.0.0.1:0", &a), 0);
    int fd = net_listen(&a, 16, 0);
    CHECK(fd >= 0);
    net_addr bound = {.len = sizeof bound.u};
    CHECK_EQ(getsockname(fd, &bound.u.sa, &bound.len), 0);
    e->port = ntohs(bound.u.in.sin_port);
    e->lw = (loop_watch){.fd = fd};
    CHECK_EQ(loop_watch_add(l, &e->lw, BACKEND_LISTEN), 0);
    CHECK_EQ(sp_spawn(echo_main, e), 0);
}

typedef struct client_case {
    const char *host;
    int port;
    int done;
} client_case;

static void client_main(void *arg) {
    client_case *c = arg;
    int err = 1;
    sp_sock *s = sp_connect(c->host, c->port, 2000, &err);
    CHECK(s != NULL);
    CHECK_EQ(err, 0);
    CHECK_EQ(sp_sock_write(s, "ping", 4, 1000), 4);
    char buf[16];
    ssize_t n = sp_sock_read(s, buf, sizeof buf, 1000);
    CHECK_EQ(n, 4);
    CHECK_MEM(buf, 4, "ping");
    /* 1 MiB: more than the socket buffers, so both sides park. */
    size_t big = 1 << 20;
    char *out = malloc(big), *in = malloc(big);
    for (size_t i = 0; i < big; i++)
        out[i] = (char)(i * 7);
    CHECK_EQ(sp_sock_write(s, out, big, 5000), (ssize_t)big);
    size_t got = 0;
    while (got < big) {
        n = sp_sock_read(s, in + got, big - got, 5000);
        CHECK(n > 0);
        got += (size_t)n;
    }
    CHECK(memcmp(in, out, big) == 0);
    free(out);
    free(in);
    /* Nothing more comes: a read times out. */
    CHECK_EQ(sp_sock_read(s, buf, sizeof buf, 30), -ETIMEDOUT);
    CHECK_EQ(sp_sock_shutdown(s), 0);
    CHECK_EQ(sp_sock_read(s, buf, sizeof buf, 1000), 0); /* the echo server closed */
    sp_sock_close(s);
    c->done = 1;
}

static void round_trip(const char *host) {
    sp_loop *l = new_loop();
    echo_server e = {0};
    start_echo(l, &e);
    client_case c = {host, e.port, 0};
    CHECK_EQ(sp_spawn(client_main, &c), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK(c.done);
    sp_loop_free(l);
}

TEST(connect_by_address_and_echo) {
    round_trip("127.0.0.1");
}

TEST(connect_by_name_resolved_off_the_loop) {
    /* "localhost" may come back as ::1 first: that is refused and the next
     * address tried. */
    round_trip("localhost");
}

static int fail_rc;
static void connect_fails(void *arg) {
    client_case *c = arg;
    int err = 0;
    CHECK(sp_connect(c->host, c->port, 2000, &err) == NULL);
    fail_rc = err;
}

static int closed_port(void) {
    net_addr a;
    CHECK_EQ(net_parse_addr("127.0.0.1:0", &a), 0);
    int fd = net_listen(&a, 1, 0);
    net_addr bound = {.len = sizeof bound.u};
    CHECK_EQ(getsockname(fd, &bound.u.sa, &bound.len), 0);
    close(fd);
    return ntohs(bound.u.in.sin_port);
}

TEST(connect_refused) {
    sp_loop *l = new_loop();
    client_case c = {"127.0.0.1", closed_port(), 0};
    CHECK_EQ(sp_spawn(connect_fails, &c), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(fail_rc, -ECONNREFUSED);
    sp_loop_free(l);
}

TEST(unknown_name) {
    sp_loop *l = new_loop();
    client_case c = {"no-such-host.invalid", 80, 0};
    CHECK_EQ(sp_spawn(connect_fails, &c), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(fail_rc, -EADDRNOTAVAIL);
    sp_loop_free(l);
}

TEST(bad_arguments_and_outside_a_coroutine) {
    int err = 0;
    CHECK(sp_connect("127.0.0.1", 80, 100, &err) == NULL);
    CHECK_EQ(err, -EPERM);
    sp_loop *l = new_loop();
    CHECK(sp_connect("127.0.0.1", 80, 100, &err) == NULL);
    CHECK_EQ(err, -EPERM);
    client_case c = {"127.0.0.1", 0, 0};
    CHECK_EQ(sp_spawn(connect_fails, &c), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(fail_rc, -EINVAL);
    sp_loop_free(l);
}
