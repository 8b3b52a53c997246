/* test_net.c — cooperative sockets: address parsing, listening on v4, v6
 * and unix sockets, bounded accept batches, TCP_NODELAY inheritance, large
 * writev and sendfile with partial writes, connect errors and deadlines. */
#include "loop/loop.h"
#include "net/net.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(parse_addresses) {
    net_addr a;
    char buf[128];
    CHECK_EQ(net_parse_addr("127.0.0.1:8080", &a), 0);
    net_format_addr(&a, buf, sizeof buf);
    CHECK_STR(buf, "127.0.0.1:8080");
    CHECK_EQ(net_parse_addr("[::1]:443", &a), 0);
    net_format_addr(&a, buf, sizeof buf);
    CHECK_STR(buf, "[::1]:443");
    CHECK_EQ(net_parse_addr(":80", &a), 0);
    net_format_addr(&a, buf, sizeof buf);
    CHECK_STR(buf, "0.0.0.0:80");
    CHECK_EQ(net_parse_addr("localhost:1", &a), 0);
    CHECK_EQ(net_parse_addr("unix:/tmp/x.sock", &a), 0);
    net_format_addr(&a, buf, sizeof buf);
    CHECK_STR(buf, "unix:/tmp/x.sock");
    CHECK_EQ(net_parse_addr("127.0.0.1", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("127.0.0.1:", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("127.0.0.1:99999", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("127.0.0.1:8x", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("[::1:80", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("unix:", &a), -EINVAL);
    CHECK_EQ(net_parse_addr("no.such.host.invalid:80", &a), -EADDRNOTAVAIL);
}

static int listen_any(const char *spec, net_addr *bound) {
    net_addr a;
    CHECK_EQ(net_parse_addr(spec, &a), 0);
    int fd = net_listen(&a, 128, 0);
    CHECK(fd >= 0);
    bound->len = sizeof bound->u;
    CHECK_EQ(getsockname(fd, &bound->u.sa, &bound->len), 0);
    return fd;
}

typedef struct accepted {
    int fds[16];
    int n;
} accepted;

static void on_conn(int fd, const net_addr *peer, void *ud) {
    accepted *a = ud;
    a->fds[a->n++] = fd;
}

typedef struct client {
    net_addr to;
    loop_watch w;
    int rc;
    int done;
} client;

static void connect_task(void *arg) {
    client *c = arg;
    loop *l = loop_current();
    c->rc = net_connect(l, &c->w, &c->to, loop_now(l) + 2000);
    if (c->rc == 0)
        CHECK_EQ(net_write(l, &c->w, "ping", 4, LOOP_NO_DEADLINE), 4);
    c->done = 1;
}

static void round_trip(const char *spec) {
    sp_loop *l = sp_loop_new(NULL);
    net_addr bound;
    int lfd = listen_any(spec, &bound);
    client c = {.to = bound};
    CHECK_EQ(sp_spawn(connect_task, &c), 0);
    while (!c.done)
        CHECK(sp_poll(-1) >= 0);
    CHECK_EQ(c.rc, 0);
    accepted acc = {0};
    CHECK_EQ(net_accept_batch(lfd, 4, on_conn, &acc), 1);
    char buf[8];
    CHECK_EQ(read(acc.fds[0], buf, sizeof buf), 4);
    CHECK_MEM(buf, 4, "ping");
    if (bound.u.sa.sa_family != AF_UNIX) {
        int v = 0;
        socklen_t len = sizeof v;
        CHECK_EQ(getsockopt(acc.fds[0], IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
        CHECK(v != 0); /* inherited from the listener */
    }
    net_close(l, &c.w);
    close(acc.fds[0]);
    close(lfd);
    sp_loop_free(l);
}

TEST(tcp4_connect_accept_round_trip) {
    round_trip("127.0.0.1:0");
}

TEST(tcp6_connect_accept_round_trip) {
    round_trip("[::1]:0");
}

TEST(unix_socket_round_trip_and_stale_file) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/spindle-test-%d.sock", (int)getpid());
    unlink(path);
    char spec[80];
    snprintf(spec, sizeof spec, "unix:%s", path);
    net_addr a;
    CHECK_EQ(net_parse_addr(spec, &a), 0);
    int fd = net_listen(&a, 8, 0);
    CHECK(fd >= 0);
    close(fd); /* leaves a stale socket file behind */
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    round_trip(spec); /* listening again replaces it */
    unlink(path);
}

TEST(accept_batch_is_bounded) {
    net_addr bound;
    int lfd = listen_any("127.0.0.1:0", &bound);
    int clients[10];
    for (int i = 0; i < 10; i++) {
        clients[i] = socket(AF_INET, SOCK_STREAM, 0);
        CHECK_EQ(connect(clients[i], &bound.u.sa, bound.len), 0);
    }
    accepted acc = {0};
    CHECK_EQ(net_accept_batch(lfd, 4, on_conn, &acc), 4);
    CHECK_EQ(net_accept_batch(lfd, 4, on_conn, &acc), 4);
    CHECK_EQ(net_accept_batch(lfd, 4, on_conn, &acc), 2);
    CHECK_EQ(net_accept_batch(lfd, 4, on_conn, &acc), 0);
    CHECK_EQ(acc.n, 10);
    for (int i = 0; i < acc.n; i++) {
        int fl = fcntl(acc.fds[i], F_GETFL);
        CHECK(fl & O_NONBLOCK);
        close(acc.fds[i]);
        close(clients[i]);
    }
    close(lfd);
}

TEST(listen_on_busy_port_fails_with_errno) {
    net_addr bound;
    int lfd = listen_any("127.0.0.1:0", &bound);
    CHECK_EQ(net_listen(&bound, 8, 0), -EADDRINUSE);
    close(lfd);
}

/* ---- big writes across a socketpair with a slow reader ---------------- */

enum { BIG = 4 << 20 };

typedef struct xfer {
    loop_watch w[2];
    unsigned char *src, *dst;
    size_t got;
    ssize_t wrote;
    int file_fd;
} xfer;

static void make_xfer(loop *l, xfer *x) {
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    for (int i = 0; i < 2; i++) {
        x->w[i] = (loop_watch){.fd = sv[i]};
        CHECK_EQ(loop_watch_add(l, &x->w[i], BACKEND_CONN), 0);
    }
    x->src = malloc(BIG);
    x->dst = malloc(BIG);
    CHECK(x->src && x->dst);
    for (size_t i = 0; i < BIG; i++)
        x->src[i] = (unsigned char)(i * 131 + (i >> 12));
}

static void slow_reader(void *arg) {
    xfer *x = arg;
    loop *l = loop_current();
    while (x->got < BIG) {
        ssize_t n = net_read(l, &x->w[1], x->dst + x->got, 65536, loop_now(l) + 5000);
        CHECK(n > 0);
        x->got += (size_t)n;
        if ((x->got / 65536) % 16 == 0)
            sp_yield();
    }
}

static void writev_task(void *arg) {
    xfer *x = arg;
    loop *l = loop_current();
    struct iovec iov[3] = {{x->src, 1000}, {x->src + 1000, BIG / 2}, {x->src + 1000 + BIG / 2, 0}};
    iov[2].iov_len = BIG - 1000 - BIG / 2;
    x->wrote = net_writev(l, &x->w[0], iov, 3, loop_now(l) + 5000);
}

TEST(writev_large_with_partial_writes) {
    sp_loop *l = sp_loop_new(NULL);
    xfer x = {0};
    make_xfer(l, &x);
    CHECK_EQ(sp_spawn(writev_task, &x), 0);
    CHECK_EQ(sp_spawn(slow_reader, &x), 0);
    while (x.got < BIG || x.wrote == 0)
        CHECK(sp_poll(1000) >= 0);
    CHECK_EQ(x.wrote, BIG);
    CHECK(memcmp(x.src, x.dst, BIG) == 0);
    sp_loop_free(l);
}

static void sendfile_task(void *arg) {
    xfer *x = arg;
    loop *l = loop_current();
    off_t off = 0;
    x->wrote = net_sendfile(l, &x->w[0], x->file_fd, &off, BIG, loop_now(l) + 5000);
    CHECK_EQ(off, BIG);
}

TEST(sendfile_large_file) {
    sp_loop *l = sp_loop_new(NULL);
    xfer x = {0};
    make_xfer(l, &x);
    char path[] = "/tmp/spindle-sendfile-XXXXXX";
    x.file_fd = mkstemp(path);
    CHECK(x.file_fd >= 0);
    unlink(path);
    CHECK_EQ(write(x.file_fd, x.src, BIG), BIG);
    CHECK_EQ(sp_spawn(sendfile_task, &x), 0);
    CHECK_EQ(sp_spawn(slow_reader, &x), 0);
    while (x.got < BIG || x.wrote == 0)
        CHECK(sp_poll(1000) >= 0);
    CHECK_EQ(x.wrote, BIG);
    CHECK(memcmp(x.src, x.dst, BIG) == 0);
    sp_loop_free(l);
}

static void stuck_writer(void *arg) {
    xfer *x = arg;
    loop *l = loop_current();
    x->wrote = net_write(l, &x->w[0], x->src, BIG, loop_now(l) + 100);
}

TEST(write_to_peer_that_stops_reading_times_out) {
    sp_loop *l = sp_loop_new(NULL);
    xfer x = {0};
    make_xfer(l, &x);
    CHECK_EQ(sp_spawn(stuck_writer, &x), 0);
    int64_t t0 = loop_clock_ms();
    while (x.wrote == 0)
        CHECK(sp_poll(1000) >= 0);
    CHECK_EQ(x.wrote, -ETIMEDOUT);
    CHECK(loop_clock_ms() - t0 >= 99);
    sp_loop_free(l);
}

static void writer_to_closed(void *arg) {
    xfer *x = arg;
    loop *l = loop_current();
    x->wrote = net_write(l, &x->w[0], x->src, BIG, loop_now(l) + 5000);
}

TEST(write_to_closed_peer_is_epipe_not_sigpipe) {
    sp_loop *l = sp_loop_new(NULL);
    xfer x = {0};
    make_xfer(l, &x);
    net_close(l, &x.w[1]);
    CHECK_EQ(sp_spawn(writer_to_closed, &x), 0);
    while (x.wrote == 0)
        CHECK(sp_poll(1000) >= 0);
    CHECK(x.wrote == -EPIPE || x.wrote == -ECONNRESET);
    sp_loop_free(l);
}

TEST(connect_refused) {
    sp_loop *l = sp_loop_new(NULL);
    net_addr bound;
    int lfd = listen_any("127.0.0.1:0", &bound);
    close(lfd); /* nobody listens on that port now */
    client c = {.to = bound};
    CHECK_EQ(sp_spawn(connect_task, &c), 0);
    while (!c.done)
        CHECK(sp_poll(1000) >= 0);
    CHECK_EQ(c.rc, -ECONNREFUSED);
    sp_loop_free(l);
}

static void connect_deadline_task(void *arg) {
    client *c = arg;
    loop *l = loop_current();
    c->rc = net_connect(l, &c->w, &c->to, loop_now(l) + 100);
    c->done = 1;
}

TEST(connect_deadline_on_full_backlog) {
    /* A listener with a full accept queue drops further SYNs, so the next
     * connect hangs until its deadline. */
    sp_loop *l = sp_loop_new(NULL);
    net_addr a, bound;
    CHECK_EQ(net_parse_addr("127.0.0.1:0", &a), 0);
    int lfd = net_listen(&a, 0, 0);
    CHECK(lfd >= 0);
    bound.len = sizeof bound.u;
    CHECK_EQ(getsockname(lfd, &bound.u.sa, &bound.len), 0);
    int filler[4];
    for (int i = 0; i < 4; i++) {
        filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(filler[i], &bound.u.sa, bound.len);
    }
    usleep(50 * 1000);
    client c = {.to = bound};
    CHECK_EQ(sp_spawn(connect_deadline_task, &c), 0);
    int64_t t0 = loop_clock_ms();
    while (!c.done)
        CHECK(sp_poll(1000) >= 0);
    CHECK_EQ(c.rc, -ETIMEDOUT);
    CHECK(loop_clock_ms() - t0 >= 99);
    CHECK_EQ(c.w.fd, -1); /* nothing left open */
    sp_loop_free(l);
}
