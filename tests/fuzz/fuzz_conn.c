/* fuzz_conn.c — libFuzzer target for the whole connection: arbitrary bytes,
 * split arbitrarily, through the real connection driver (http_conn.c, the
 * request/response API, the demo routes) without a network.
 *
 * One loop and one server (demo routes, short timeouts) live for the whole
 * run. Each input gets a socketpair: one end is handed to the server through
 * server_adopt_conn (as if just accepted), the other is the client. The
 * first byte of the input gives the number of pieces (1..16), the next ones
 * the piece sizes; the rest is the stream. The client writes a piece, the
 * loop turns, and so on; then the client half-closes (SHUT_WR) and the loop
 * turns until the server has closed its end, reading and discarding what
 * the server answers. A connection the server never closes, even after the
 * client has gone entirely, is a hang: abort. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loop/loop.h"
#include "server/server.h"
#include "spindle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sp_server *srv;

static void setup(void) {
    if (!sp_loop_new(NULL))
        abort();
    sp_server_options o;
    sp_server_options_init(&o);
    o.header_timeout_ms = 200;
    o.body_timeout_ms = 200;
    o.send_timeout_ms = 200;
    o.keepalive_timeout_ms = 200;
    o.linger_timeout_ms = 50;
    o.body_max = 1 << 20;
    srv = sp_server_new(&o);
    if (!srv || sp_demo_routes(srv) != 0)
        abort();
    /* server_start wants a listener; nobody ever connects to it. */
    if (sp_server_listen(srv, "127.0.0.1:0") != 0)
        abort();
    if (server_start(srv, loop_current()) != 0)
        abort();
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drain(int fd) {
    char sink[16384];
    for (int i = 0; i < 64; i++) {
        ssize_t n = read(fd, sink, sizeof sink);
        if (n <= 0)
            return;
    }
}

/* The server's end is closed (its slot free) — or reused by nobody else, as
 * this target adopts one connection at a time. */
static int server_closed(int sfd) {
    return srv->conns[sfd].state == CONN_FREE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!srv)
        setup();
    if (size < 1)
        return 0;
    size_t npieces = (size_t)(data[0] & 15) + 1;
    size_t hdr = 1 + npieces < size ? 1 + npieces : size;
    const uint8_t *sizes = data + 1;
    const uint8_t *body = data + hdr;
    size_t len = size - hdr;

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    int cfd = sv[0], sfd = sv[1];
    fcntl(cfd, F_SETFL, O_NONBLOCK);
    fcntl(sfd, F_SETFL, O_NONBLOCK);
    if (server_adopt_conn(srv, sfd) != 0)
        abort();

    size_t off = 0;
    for (size_t i = 0; i + 1 < hdr && off < len; i++) {
        size_t want = (size_t)sizes[i] * 8 + 1;
        if (i + 2 == hdr || want > len - off)
            want = len - off; /* the last piece takes the rest */
        size_t put = 0;
        for (int tries = 0; put < want && tries < 200; tries++) {
            ssize_t n = write(cfd, body + off + put, want - put);
            if (n > 0)
                put += (size_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                break; /* the server closed: later bytes go nowhere */
            drain(cfd);
            sp_poll(0);
        }
        off += want;
        drain(cfd);
        sp_poll(0);
        sp_poll(0);
    }
    shutdown(cfd, SHUT_WR);

    /* Until the server closes: quick turns first, then waits for timers
     * (/sleep, lingering close) — bounded in time. */
    int64_t start = now_ms();
    int client_open = 1;
    for (int step = 0; !server_closed(sfd); step++) {
        if (client_open)
            drain(cfd);
        sp_poll(step < 64 ? 0 : 10);
        int64_t t = now_ms() - start;
        if (client_open && t > 2000) {
            close(cfd); /* gone entirely: any handler must notice now */
            client_open = 0;
        }
        if (t > 5000)
            abort(); /* the connection was never closed: a hang or a leak */
    }
    if (client_open)
        close(cfd);
    return 0;
}
