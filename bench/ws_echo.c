/* ws_echo.c — the WebSocket load generator of bench/run's asgi workload:
 * CLIENTS WebSockets (RFC 6455, masked text frames) each send a small
 * message, wait for its echo, and send the next, for SECONDS once all are
 * open. Prints the same BENCH line as harness/wrk_report.lua (requests are
 * round trips, latencies per round trip), so the harness parses it alike.
 *   build/bench/ws_echo PORT CLIENTS SECONDS [PATH] [MESSAGE] */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct client {
    int fd;
    int open;       /* the handshake's 101 arrived */
    int64_t sent;   /* when the message out was sent (ns) */
    size_t got;     /* bytes of the current answer so far */
    char buf[4096]; /* the handshake answer, then one frame */
} client;

static struct sockaddr_in addr;
static char handshake[512];
static size_t handshake_len;
static unsigned char frame[256];
static size_t frame_len, message_len;
static int epfd;
static int64_t *lat; /* round-trip latencies, µs */
static size_t nlat, cap;
static long errs_connect, errs_read, errs_write, errs_status;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void note_latency(int64_t us) {
    if (nlat == cap) {
        cap = cap ? cap * 2 : 1 << 16;
        lat = realloc(lat, cap * sizeof *lat);
        if (!lat) {
            perror("realloc");
            exit(1);
        }
    }
    lat[nlat++] = us;
}

static int send_all(int fd, const void *p, size_t n) {
    /* Small writes on a socket with room: one send each. */
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    return w == (ssize_t)n ? 0 : -1;
}

static void drop(client *c, long *counter) {
    (*counter)++;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
}

static void send_message(client *c) {
    c->sent = now_ns();
    c->got = 0;
    if (send_all(c->fd, frame, frame_len) < 0)
        drop(c, &errs_write);
}

/* Bytes arrived: the handshake's answer, or (part of) an echo. Returns 1
 * when an echo completed. */
static int on_readable(client *c, int measuring) {
    ssize_t r = recv(c->fd, c->buf + c->got, sizeof c->buf - c->got, 0);
    if (r <= 0) {
        if (r < 0 && errno == EAGAIN)
            return 0;
        drop(c, &errs_read);
        return 0;
    }
    c->got += (size_t)r;
    if (!c->open) {
        char *end = memmem(c->buf, c->got, "\r\n\r\n", 4);
        if (!end)
            return 0;
        if (c->got < 12 || memcmp(c->buf, "HTTP/1.1 101", 12) != 0) {
            drop(c, &errs_status);
            return 0;
        }
        c->open = 1;
        c->got = 0;
        return 0;
    }
    for (;;) {
        /* One server frame: 2-byte head (small payloads), unmasked. */
        if (c->got < 2)
            return 0;
        unsigned char *b = (unsigned char *)c->buf;
        size_t len = b[1] & 0x7f, head = 2;
        if (len == 126) {
            if (c->got < 4)
                return 0;
            len = ((size_t)b[2] << 8) | b[3];
            head = 4;
        }
        if (c->got < head + len)
            return 0;
        int opcode = b[0] & 0x0f;
        size_t rest = c->got - head - len;
        memmove(c->buf, c->buf + head + len, rest);
        c->got = rest;
        if (opcode == 1 || opcode == 2) {
            if (len != message_len)
                errs_status++;
            if (measuring)
                note_latency((now_ns() - c->sent) / 1000);
            return 1;
        }
        if (opcode == 8) {
            drop(c, &errs_read);
            return 0;
        }
        /* ping/pong from the server: not an echo, keep waiting */
    }
}

static void build(const char *path, const char *message) {
    handshake_len =
        (size_t)snprintf(handshake, sizeof handshake,
                         "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n",
                         path);
    message_len = strlen(message);
    if (message_len > 125) {
        fprintf(stderr, "ws_echo: the message must be at most 125 bytes\n");
        exit(2);
    }
    static const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    frame[0] = 0x81;
    frame[1] = (unsigned char)(0x80 | message_len);
    memcpy(frame + 2, mask, 4);
    for (size_t i = 0; i < message_len; i++)
        frame[6 + i] = (unsigned char)message[i] ^ mask[i % 4];
    frame_len = 6 + message_len;
}

static int open_client(client *c) {
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        send_all(c->fd, handshake, handshake_len) < 0) {
        close(c->fd);
        c->fd = -1;
        errs_connect++;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    return 0;
}

/* Until every client's handshake is answered (or dropped), 10 s at most. */
static int wait_open(client *cs, int n) {
    int64_t end = now_ns() + 10 * 1000000000LL;
    struct epoll_event evs[256];
    for (;;) {
        int open = 0, live = 0;
        for (int i = 0; i < n; i++) {
            open += cs[i].fd >= 0 && cs[i].open;
            live += cs[i].fd >= 0;
        }
        if (open == live)
            return open;
        if (now_ns() > end)
            return open;
        int k = epoll_wait(epfd, evs, 256, 100);
        for (int i = 0; i < k; i++)
            on_readable(evs[i].data.ptr, 0);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ws_echo PORT CLIENTS SECONDS [PATH] [MESSAGE]\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    double seconds = atof(argv[3]);
    build(argc > 4 ? argv[4] : "/ws", argc > 5 ? argv[5] : "Hello world!");
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(0x7f000001);
    epfd = epoll_create1(0);
    client *cs = calloc((size_t)n, sizeof *cs);
    if (n <= 0 || !cs || epfd < 0) {
        fprintf(stderr, "ws_echo: bad CLIENTS or out of memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++)
        open_client(&cs[i]);
    int open = wait_open(cs, n);
    for (int i = 0; i < n; i++)
        if (cs[i].fd >= 0 && !cs[i].open)
            drop(&cs[i], &errs_status); /* no 101 within the wait */
    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    long trips = 0;
    for (int i = 0; i < n; i++)
        if (cs[i].fd >= 0 && cs[i].open)
            send_message(&cs[i]);
    struct epoll_event evs[256];
    while (now_ns() < end) {
        int k = epoll_wait(epfd, evs, 256, 50);
        for (int i = 0; i < k; i++) {
            client *c = evs[i].data.ptr;
            if (c->fd >= 0 && on_readable(c, 1)) {
                trips++;
                send_message(c);
            }
        }
    }
    int64_t dur = now_ns() - t0;
    qsort(lat, nlat, sizeof *lat, cmp64);
#define PCT(p) (nlat ? lat[(size_t)((double)(nlat - 1) * (p))] : 0)
    printf(
        "BENCH requests=%ld duration_us=%lld connect=%ld read=%ld write=%ld timeout=0 status=%ld "
        "p50=%lld p90=%lld p99=%lld p999=%lld max=%lld open=%d\n",
        trips, (long long)(dur / 1000), errs_connect, errs_read, errs_write, errs_status,
        (long long)PCT(0.5), (long long)PCT(0.9), (long long)PCT(0.99), (long long)PCT(0.999),
        (long long)PCT(1.0), open);
    return 0;
}
