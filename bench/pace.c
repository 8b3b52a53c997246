/* pace.c — an open-loop load generator for the latency workload of
 * bench/run, in the manner of wrk2's constant throughput: each of C
 * keep-alive connections has its own schedule at RATE/C requests/s, and a
 * request's latency is measured from the time it was *scheduled*, not sent,
 * so a server that stalls is charged for every request that queued behind
 * the stall (no coordinated omission). Prints the same BENCH line as
 * harness/wrk_report.lua.
 *   build/bench/pace PORT CONNECTIONS RATE SECONDS [PATH] */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct conn {
    int fd;
    int busy;         /* a request is out, its answer not complete */
    int64_t due;      /* when its next request is scheduled (ns) */
    int64_t sent_due; /* what the latency of the request out is counted from */
    int64_t done_at;  /* when the previous answer completed */
    size_t got;       /* bytes of the answer so far */
    char buf[4096];
} conn;

static struct sockaddr_in addr;
static char request[512];
static size_t request_len;
static int epfd;
static int64_t interval_ns; /* between two requests of one connection */
static int64_t *lat;        /* latencies, µs */
static size_t nlat, cap;
static long errs_connect, errs_read, errs_write, errs_status;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int open_conn(conn *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
        int e = -errno;
        close(c->fd);
        c->fd = -1;
        return e;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    c->busy = 0;
    c->got = 0;
    return 0;
}

static void reopen(conn *c, long *counter) {
    (*counter)++;
    close(c->fd);
    c->fd = -1;
    if (open_conn(c) < 0)
        errs_connect++;
}

static void record(int64_t us) {
    if (nlat == cap) {
        cap = cap ? cap * 2 : 65536;
        int64_t *n = realloc(lat, cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "pace: out of memory for %zu latencies\n", cap);
            exit(1);
        }
        lat = n;
    }
    lat[nlat++] = us;
}

/* Is the answer in c->buf complete? 1 yes, 0 not yet, 2 when the server
 * closes (neither Content-Length nor chunked), -1 too large to tell. Sets
 * *close_after when the connection ends with this answer. */
static int answer_complete(conn *c, int *close_after, int *status) {
    c->buf[c->got] = '\0';
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end)
        return c->got >= sizeof c->buf - 1 ? -1 : 0;
    size_t head = (size_t)(end - c->buf) + 4;
    *status = atoi(c->buf + 9);
    *close_after = 0;
    long clen = -1;
    int chunked = 0;
    for (char *l = strstr(c->buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
        char *f = l + 2;
        if (!strncasecmp(f, "content-length:", 15))
            clen = strtol(f + 15, NULL, 10);
        else if (!strncasecmp(f, "transfer-encoding:", 18) &&
                 strstr(f, "chunked") < strstr(f, "\r\n"))
            chunked = 1;
        else if (!strncasecmp(f, "connection:", 11) &&
                 !strncasecmp(f + 11 + strspn(f + 11, " "), "close", 5))
            *close_after = 1;
    }
    if (clen >= 0)
        return c->got >= head + (size_t)clen ? 1 : (head + (size_t)clen >= sizeof c->buf ? -1 : 0);
    if (chunked)
        return strstr(c->buf + head - 2, "\r\n0\r\n\r\n") ? 1
                                                          : (c->got >= sizeof c->buf - 1 ? -1 : 0);
    *close_after = 1;
    return 2; /* the body ends when the server closes (RFC 9112 §6.3) */
}

static void send_request(conn *c, int64_t now) {
    ssize_t n = send(c->fd, request, request_len, MSG_NOSIGNAL);
    if (n != (ssize_t)request_len) {
        reopen(c, &errs_write);
        return;
    }
    c->busy = 1;
    /* Late because the server was still answering the previous request:
     * the wait is the server's, count from the schedule. Late only by our
     * own wake-up: count from the send, or every figure would carry the
     * generator's timer slack. */
    c->sent_due = c->done_at > c->due ? c->due : now;
    c->due += interval_ns;
    c->got = 0;
}

static void finish(conn *c, int64_t now, int status) {
    record((now - c->sent_due) / 1000);
    if (status < 200 || status > 399)
        errs_status++;
    c->busy = 0;
    c->done_at = now;
}

static void on_readable(conn *c, int64_t now) {
    ssize_t n = recv(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n == 0 && c->busy) {
        int close_after = 0, status = 0;
        if (answer_complete(c, &close_after, &status) == 2) {
            finish(c, now, status);
            close(c->fd);
            if (open_conn(c) < 0)
                errs_connect++;
            return;
        }
    }
    if (n <= 0) {
        reopen(c, &errs_read);
        return;
    }
    c->got += (size_t)n;
    if (!c->busy) {
        reopen(c, &errs_read); /* bytes nobody asked for */
        return;
    }
    int close_after = 0, status = 0;
    int done = answer_complete(c, &close_after, &status);
    if (done == 0 || done == 2)
        return;
    if (done < 0) {
        fprintf(stderr, "pace: an answer head over %zu bytes\n", sizeof c->buf);
        reopen(c, &errs_read);
        return;
    }
    finish(c, now, status);
    if (close_after) {
        close(c->fd);
        if (open_conn(c) < 0)
            errs_connect++;
    }
}

/* epoll_wait until DEADLINE (ns) at the latest. A request sent late counts
 * its lateness as latency, so the wake-up must be precise: epoll_pwait2's
 * nanosecond timeout with 1 ns timer slack; where the kernel lacks it,
 * millisecond waits rounded down and then polling. */
static int wait_until(struct epoll_event *evs, int max, int64_t deadline) {
    static int no_pwait2;
    int64_t d = deadline - now_ns();
    if (d < 0)
        d = 0;
    if (d > 100000000)
        d = 100000000;
    if (!no_pwait2) {
        struct timespec ts = {.tv_sec = d / 1000000000, .tv_nsec = d % 1000000000};
        int n = epoll_pwait2(epfd, evs, max, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n < 0 ? 0 : n;
        no_pwait2 = 1;
    }
    int n = epoll_wait(epfd, evs, max, (int)(d / 1000000));
    return n < 0 ? 0 : n;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t pct(double p) {
    if (!nlat)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)nlat);
    return lat[i >= nlat ? nlat - 1 : i];
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s PORT CONNECTIONS RATE SECONDS [PATH]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), nconn = atoi(argv[2]);
    double rate = atof(argv[3]), secs = atof(argv[4]);
    const char *path = argc > 5 ? argv[5] : "/";
    if (port <= 0 || nconn <= 0 || rate <= 0 || secs <= 0) {
        fprintf(stderr, "pace: PORT, CONNECTIONS, RATE and SECONDS must be positive\n");
        return 2;
    }
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    request_len = (size_t)snprintf(request, sizeof request,
                                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
    interval_ns = (int64_t)(1e9 * nconn / rate);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    conn *cs = calloc((size_t)nconn, sizeof *cs);
    if (epfd < 0 || !cs) {
        perror("pace");
        return 1;
    }
    int64_t start = now_ns();
    for (int i = 0; i < nconn; i++) {
        if (open_conn(&cs[i]) < 0) {
            fprintf(stderr, "pace: cannot connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
            return 1;
        }
        /* Spread the connections' schedules evenly over one interval. */
        cs[i].due = start + interval_ns * i / nconn;
    }
    int64_t stop = start + (int64_t)(secs * 1e9);
    struct epoll_event evs[256];
    for (;;) {
        int64_t now = now_ns();
        if (now >= stop)
            break;
        int64_t next = stop;
        for (int i = 0; i < nconn; i++) {
            conn *c = &cs[i];
            if (c->fd >= 0 && !c->busy && c->due <= now)
                send_request(c, now);
            if (c->fd >= 0 && !c->busy && c->due < next)
                next = c->due;
        }
        int n = wait_until(evs, 256, next);
        now = now_ns();
        for (int i = 0; i < n; i++)
            on_readable(evs[i].data.ptr, now);
    }
    int64_t elapsed = now_ns() - start;
    /* Requests still out at the end have waited at least this long. */
    long timeouts = 0;
    for (int i = 0; i < nconn; i++)
        if (cs[i].busy && (stop - cs[i].sent_due) > 2000000000)
            timeouts++;
    qsort(lat, nlat, sizeof *lat, cmp64);
    double sum = 0;
    for (size_t i = 0; i < nlat; i++)
        sum += (double)lat[i];
    printf(
        "BENCH requests=%zu duration_us=%lld connect=%ld read=%ld write=%ld status=%ld timeout=%ld "
        "p50=%lld p90=%lld p99=%lld p999=%lld max=%lld mean=%.1f\n",
        nlat, (long long)(elapsed / 1000), errs_connect, errs_read, errs_write, errs_status,
        timeouts, (long long)pct(50), (long long)pct(90), (long long)pct(99), (long long)pct(99.9),
        (long long)(nlat ? lat[nlat - 1] : 0), nlat ? sum / (double)nlat : 0.0);
    return 0;
}
