/* fanout.c — bench/run's fanout load generator: N WebSocket (or Engine.IO v4)
 * subscribers over K ports, numbered timestamped POSTs to one instance;
 * deliveries/s, publish-to-LAST-subscriber p50/p99, losses. One thread, epoll.
 *   build/bench/fanout --ports P1,P2 --subscribers N [options]  (see usage) */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fanout_util.h"

#define MAX_MSGS  2000000
#define MAX_PUBS  16
#define CBUF      4096
#define IN_FLIGHT 256 /* handshakes at once: no backlog overflow on the servers */

enum { K_SUB, K_PUB, K_STDIN };

typedef struct sub {
    int kind, fd;
    int state;        /* 0 handshaking, 1 101 seen (sio: waiting for "40"), 2 ready */
    int64_t last_seq; /* out-of-order check */
    size_t got;
    char buf[CBUF];
} sub;

typedef struct pub {
    int kind, fd;
    int busy; /* a POST is out */
    size_t got;
    char buf[2048];
} pub;

static struct {
    int ports[64], nports, n, sio, npub, pub_port, size;
    const char *path, *pub_path;
    double rate, seconds, warmup_s, drain_s, connect_s, step_s, ladder[16];
    int nladder, server_cpu;
    long count;
} o = {.n = 100,
       .npub = 4,
       .size = 64,
       .path = "/ws",
       .pub_path = "/publish",
       .seconds = 10,
       .warmup_s = 30,
       .drain_s = 5,
       .connect_s = 120,
       .count = 1000,
       .step_s = 5};

static int epfd, stdin_kind = K_STDIN;
static sub *subs;
static pub pubs[MAX_PUBS];
static int64_t *pub_ns, *last_ns; /* per seq: when published, when its last subscriber got it */
static int32_t *cnt;              /* per seq: deliveries */
static long nseq, base_seq = MAX_MSGS, deliveries, dups, stray, closed_subs, pub_errors, pub_behind;
static int nready, go_seen;
static int64_t last_delivery_ns;
static double connect_took;
static char hs[512], frame_tmp[256];
static size_t hs_len;

static void watch(int fd, void *ptr, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = ptr};
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void sub_drop(sub *c) {
    if (c->fd < 0)
        return;
    if (c->state == 2) {
        nready--;
        closed_subs++;
    }
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
}

/* A masked client frame (small payloads only: pongs and Socket.IO packets). */
static void sub_send(sub *c, int opcode, const char *p, size_t n) {
    if (n > 125 || c->fd < 0)
        return;
    static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
    frame_tmp[0] = (char)(0x80 | opcode);
    frame_tmp[1] = (char)(0x80 | n);
    memcpy(frame_tmp + 2, mask, 4);
    for (size_t i = 0; i < n; i++)
        frame_tmp[6 + i] = (char)(p[i] ^ mask[i % 4]);
    /* A few bytes on a socket whose peer reads: it fits, or the peer is gone. */
    if (send(c->fd, frame_tmp, 6 + n, MSG_NOSIGNAL) != (ssize_t)(6 + n))
        sub_drop(c);
}

/* A delivered message: its seq says which publish it was. */
static void delivered(sub *c, const char *p, size_t n) {
    long seq = num_after(p, n, "\"seq");
    int64_t t = now_ns();
    if (seq < 0 || seq >= nseq) {
        stray++;
        return;
    }
    if (seq <= c->last_seq)
        dups++;
    c->last_seq = seq;
    cnt[seq]++;
    last_ns[seq] = t;
    last_delivery_ns = t;
    if (seq >= base_seq)
        deliveries++;
}

static void sub_ready(sub *c) {
    c->state = 2;
    nready++;
}

static void on_text(sub *c, const char *p, size_t n) {
    if (!o.sio) {
        delivered(c, p, n);
        return;
    }
    /* Engine.IO v4 packets, one per frame: 0 open, 2 ping, 4 message (with
     * Socket.IO's 0 connect, 2 event, 1 disconnect after it). */
    if (n >= 1 && p[0] == '0') {
        sub_send(c, 1, "40", 2);
    } else if (n == 1 && p[0] == '2') {
        sub_send(c, 1, "3", 1);
    } else if (n >= 2 && p[0] == '4' && p[1] == '0') {
        if (c->state == 1)
            sub_ready(c);
    } else if (n >= 2 && p[0] == '4' && p[1] == '2') {
        delivered(c, p, n);
    } else if (n >= 2 && p[0] == '4' && p[1] == '1') {
        sub_drop(c);
    }
}

static void on_sub(sub *c) {
    ssize_t r = recv(c->fd, c->buf + c->got, sizeof c->buf - c->got, 0);
    if (r <= 0) {
        if (r < 0 && errno == EAGAIN)
            return;
        sub_drop(c);
        return;
    }
    c->got += (size_t)r;
    size_t at = 0;
    if (c->state == 0) {
        char *end = memmem(c->buf, c->got, "\r\n\r\n", 4);
        if (!end)
            return;
        if (c->got < 12 || memcmp(c->buf, "HTTP/1.1 101", 12) != 0) {
            sub_drop(c);
            return;
        }
        at = (size_t)(end + 4 - c->buf);
        c->state = 1;
        if (!o.sio)
            sub_ready(c);
    }
    for (;;) {
        unsigned char *b = (unsigned char *)c->buf + at;
        size_t avail = c->got - at, len, head = 2;
        if (avail < 2)
            break;
        len = b[1] & 0x7f;
        if (len == 126) {
            if (avail < 4)
                break;
            len = ((size_t)b[2] << 8) | b[3];
            head = 4;
        } else if (len == 127) {
            sub_drop(c); /* never this large here */
            return;
        }
        if (head + len > sizeof c->buf) {
            sub_drop(c);
            return;
        }
        if (avail < head + len)
            break;
        int op = b[0] & 0x0f;
        const char *payload = (const char *)b + head;
        at += head + len;
        if (op == 1 || op == 2)
            on_text(c, payload, len);
        else if (op == 9)
            sub_send(c, 10, payload, len);
        else if (op == 8) {
            sub_drop(c);
            return;
        }
        if (c->fd < 0)
            return;
    }
    memmove(c->buf, c->buf + at, c->got - at);
    c->got -= at;
}

static int pub_open(pub *p) {
    p->kind = K_PUB;
    p->fd = dial(o.pub_port);
    p->busy = 0;
    p->got = 0;
    if (p->fd < 0)
        return -1;
    watch(p->fd, p, EPOLLIN);
    return 0;
}

/* An answer to a POST: status line, headers, Content-Length bytes. */
static void on_pub(pub *p) {
    ssize_t r = recv(p->fd, p->buf + p->got, sizeof p->buf - p->got - 1, 0);
    if (r <= 0) {
        if (r < 0 && errno == EAGAIN)
            return;
        if (p->busy)
            pub_errors++;
        epoll_ctl(epfd, EPOLL_CTL_DEL, p->fd, NULL);
        close(p->fd);
        pub_open(p); /* an idle keep-alive closed by the server: dial again */
        return;
    }
    p->got += (size_t)r;
    p->buf[p->got] = '\0';
    char *end = strstr(p->buf, "\r\n\r\n");
    if (!end)
        return;
    char *cl = strcasestr(p->buf, "\r\ncontent-length:");
    size_t body = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
    size_t whole = (size_t)(end + 4 - p->buf) + body;
    char *te = strcasestr(p->buf, "\r\ntransfer-encoding: chunked");
    if (te && te < end) { /* a short chunked answer: up to its last chunk */
        char *last = strstr(end + 2, "\r\n0\r\n\r\n");
        if (!last && strncmp(end + 4, "0\r\n\r\n", 5) != 0)
            return;
        whole = last ? (size_t)(last + 7 - p->buf) : (size_t)(end + 9 - p->buf);
    }
    if (p->got < whole)
        return;
    if (strncmp(p->buf + 9, "200", 3) != 0 && strncmp(p->buf + 9, "204", 3) != 0)
        pub_errors++;
    memmove(p->buf, p->buf + whole, p->got - whole);
    p->got -= whole;
    p->busy = 0;
}

static pub *free_pub(void) {
    for (int i = 0; i < o.npub; i++)
        if (pubs[i].fd >= 0 && !pubs[i].busy)
            return &pubs[i];
    return NULL;
}

/* POSTs message seq (its body carries seq and the monotonic clock). */
static int publish(pub *p, long seq) {
    char body[1024], req[1536];
    int64_t t = now_ns();
    int bl = snprintf(body, sizeof body, "{\"seq\":%ld,\"ts\":%lld,\"pad\":\"", seq, (long long)t);
    while (bl < o.size - 2 && bl < (int)sizeof body - 3)
        body[bl++] = 'x';
    bl += snprintf(body + bl, sizeof body - (size_t)bl, "\"}");
    int rl = snprintf(req, sizeof req,
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      o.pub_path, bl, body);
    pub_ns[seq] = t;
    if (send(p->fd, req, (size_t)rl, MSG_NOSIGNAL) != rl) {
        pub_errors++;
        return -1;
    }
    p->busy = 1;
    return 0;
}

/* One turn of the loop: at most timeout_ms waiting. */
static void turn(int timeout_ms) {
    static struct epoll_event evs[512];
    int k = epoll_wait(epfd, evs, 512, timeout_ms);
    for (int i = 0; i < k; i++) {
        int *kind = evs[i].data.ptr;
        if (*kind == K_SUB)
            on_sub((sub *)kind);
        else if (*kind == K_PUB)
            on_pub((pub *)kind);
        else {
            char line[64];
            if (read(0, line, sizeof line) <= 0 || line[0] == 'g')
                go_seen = 1;
            epoll_ctl(epfd, EPOLL_CTL_DEL, 0, NULL);
        }
    }
}

static void connect_all(void) {
    int started = 0;
    int64_t end = now_ns() + (int64_t)(o.connect_s * 1e9);
    while (now_ns() < end) {
        int pending = 0;
        for (int i = 0; i < started; i++)
            pending += subs[i].fd >= 0 && subs[i].state < 2;
        while (started < o.n && pending < IN_FLIGHT) {
            sub *c = &subs[started];
            c->kind = K_SUB;
            c->last_seq = -1;
            c->fd = dial(o.ports[started % o.nports]);
            started++;
            if (c->fd < 0)
                continue;
            /* Loopback connects complete at once: the handshake goes now. */
            if (send(c->fd, hs, hs_len, MSG_NOSIGNAL) != (ssize_t)hs_len) {
                close(c->fd);
                c->fd = -1;
                continue;
            }
            watch(c->fd, c, EPOLLIN);
            pending++;
        }
        if (started == o.n && pending == 0)
            return;
        turn(20);
    }
}

/* Publishes seq and waits (the loop running) until it reached every ready
 * subscriber or wait_s passed. */
static int publish_wait(long seq, double wait_s) {
    pub *p;
    int64_t end = now_ns() + (int64_t)(wait_s * 1e9);
    while (!(p = free_pub()) && now_ns() < end)
        turn(1);
    if (!p)
        return -1;
    if (publish(p, seq) < 0)
        return -2; /* the publishing instance is gone */
    while (cnt[seq] < nready && now_ns() < end)
        turn(1);
    return cnt[seq] >= nready ? 0 : -1;
}

typedef struct phase {
    long next_seq, lost;
    double pub_rate;
    long long p99_us;
    int ok;
} phase;

/* One measured phase from seq first: closed loop (rate 0: the next publish
 * once the previous reached everyone) or open loop at rate; prints its
 * FANOUT line. */
static phase run_phase(long first, double rate, double seconds, long count) {
    base_seq = first; /* deliveries count from here */
    deliveries = dups = stray = closed_subs = pub_errors = pub_behind = 0;
    int expect_subs = nready;
    double cpu0 = cpu_s();
    long long sb0, st0, sb1, st1;
    cpu_ticks(o.server_cpu, &sb0, &st0);
    int64_t t0 = now_ns(), stop = t0 + (int64_t)(seconds * 1e9);
    long published = 0;
    while (published < count && now_ns() < stop) {
        if (rate <= 0) { /* closed loop: the next once this one reached all */
            int rc = publish_wait(base_seq + published, 10);
            if (rc == -2 || (rc < 0 && !free_pub()))
                break;
            published++;
            continue;
        }
        int64_t due = t0 + (int64_t)((double)published * 1e9 / rate), t = now_ns();
        if (t < due) {
            int ms = (int)((due - t) / 1000000);
            turn(ms > 0 ? ms : 1);
            continue;
        }
        pub *p = free_pub();
        if (!p) { /* every publisher's POST still out: the rate slips */
            pub_behind++;
            turn(1);
            continue;
        }
        if (publish(p, base_seq + published) < 0)
            break;
        published++;
        turn(0);
    }
    int64_t t_pub_end = now_ns();
    /* Drain: until everything reached everyone, or --drain s without a
     * delivery (bounded: at most 6 × --drain). */
    long last_seen = -1, want = base_seq + published;
    int64_t quiet_since = now_ns(), hard = now_ns() + (int64_t)(o.drain_s * 6e9);
    while (now_ns() < hard) {
        long done = 0;
        for (long s = base_seq; s < want; s++)
            done += cnt[s] >= expect_subs;
        if (done == published)
            break;
        if (deliveries != last_seen) {
            last_seen = deliveries;
            quiet_since = now_ns();
        } else if (now_ns() - quiet_since > (int64_t)(o.drain_s * 1e9)) {
            break;
        }
        turn(5);
    }
    double cpu_used = cpu_s() - cpu0;
    cpu_ticks(o.server_cpu, &sb1, &st1);
    long complete = 0, lost = 0;
    int64_t *lat = calloc((size_t)published + 1, sizeof *lat);
    for (long s = base_seq; s < want; s++) {
        if (cnt[s] >= expect_subs)
            lat[complete++] = (last_ns[s] - pub_ns[s]) / 1000;
        lost += cnt[s] < expect_subs ? expect_subs - cnt[s] : 0;
    }
    qsort(lat, (size_t)complete, sizeof *lat, cmp64);
#define PCT(p) (complete ? (long long)lat[(size_t)((double)(complete - 1) * (p))] : -1LL)
    double span = (double)((last_delivery_ns > t0 ? last_delivery_ns : now_ns()) - t0) / 1e9;
    printf("FANOUT mode=%s rate=%.1f subscribers=%d open=%d warmup_msgs=%ld published=%ld "
           "pub_seconds=%.3f pub_rate=%.1f expected=%lld delivered=%ld lost=%ld complete=%ld "
           "span_s=%.3f deliveries_per_s=%.0f p50_us=%lld p90_us=%lld p99_us=%lld max_us=%lld "
           "dups=%ld stray=%ld closed=%ld pub_errors=%ld pub_behind=%ld connect_s=%.2f "
           "lg_cpu_pct=%.0f cpu%d_busy_pct=%.0f\n",
           rate > 0 ? "open" : "closed", rate, o.n, expect_subs, base_seq, published,
           (double)(t_pub_end - t0) / 1e9, published / ((double)(t_pub_end - t0) / 1e9),
           (long long)published * expect_subs, deliveries, lost, complete, span,
           span > 0 ? (double)deliveries / span : 0.0, PCT(0.5), PCT(0.9), PCT(0.99), PCT(1.0),
           dups, stray, closed_subs, pub_errors, pub_behind, connect_took,
           100.0 * cpu_used / ((double)(now_ns() - t0) / 1e9), o.server_cpu,
           st1 > st0 ? 100.0 * (double)(sb1 - sb0) / (double)(st1 - st0) : -1.0);
    fflush(stdout);
    phase r = {.next_seq = want,
               .lost = lost,
               .pub_rate = published / ((double)(t_pub_end - t0) / 1e9),
               .p99_us = PCT(0.99),
               .ok = lost == 0 && published > 0};
    free(lat);
    return r;
}

static void usage(void) {
    fprintf(stderr,
            "usage: fanout --ports P1,P2,.. --subscribers N [--path /ws] [--sio]\n"
            "  [--publish-port P] [--publish-path /publish] [--publishers 4]\n"
            "  [--rate R (0: closed loop)] [--count M] [--seconds S] [--size BYTES]\n"
            "  [--warmup S] [--drain S] [--connect S] [--wait-go]\n"
            "  [--ladder F1,F2,.. (open-loop steps at F x the closed loop's rate)] [--step S]\n"
            "  [--server-cpu C (its busy share is reported)]\n");
    exit(2);
}

int main(int argc, char **argv) {
    /* --name VALUE pairs (and the --sio, --wait-go switches), by table. */
    static const struct {
        const char *name;
        char kind; /* i int, d double, l long, s string, L list */
        void *to;
    } flags[] = {{"ports", 'L', o.ports},
                 {"subscribers", 'i', &o.n},
                 {"path", 's', &o.path},
                 {"publish-port", 'i', &o.pub_port},
                 {"publish-path", 's', &o.pub_path},
                 {"publishers", 'i', &o.npub},
                 {"rate", 'd', &o.rate},
                 {"count", 'l', &o.count},
                 {"seconds", 'd', &o.seconds},
                 {"size", 'i', &o.size},
                 {"warmup", 'd', &o.warmup_s},
                 {"drain", 'd', &o.drain_s},
                 {"connect", 'd', &o.connect_s},
                 {"ladder", 'L', o.ladder},
                 {"step", 'd', &o.step_s},
                 {"server-cpu", 'i', &o.server_cpu}};
    int wait_go = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--sio") || !strcmp(argv[a], "--wait-go")) {
            *(argv[a][2] == 's' ? &o.sio : &wait_go) = 1;
            continue;
        }
        size_t f = 0, nf = sizeof flags / sizeof flags[0];
        while (f < nf && (strncmp(argv[a], "--", 2) || strcmp(argv[a] + 2, flags[f].name)))
            f++;
        if (f == nf || a + 1 == argc)
            usage();
        char *v = argv[++a];
        switch (flags[f].kind) {
        case 'i':
            *(int *)flags[f].to = atoi(v);
            break;
        case 'd':
            *(double *)flags[f].to = atof(v);
            break;
        case 'l':
            *(long *)flags[f].to = atol(v);
            break;
        case 's':
            *(const char **)flags[f].to = v;
            break;
        default: /* a comma list: the ports (ints) or the ladder (doubles) */
            for (char *t = strtok(v, ","); t; t = strtok(NULL, ","))
                if (flags[f].to == o.ports && o.nports < 64)
                    o.ports[o.nports++] = atoi(t);
                else if (flags[f].to == o.ladder && o.nladder < 16)
                    o.ladder[o.nladder++] = atof(t);
        }
    }
    if (!o.nports || o.n <= 0 || o.npub < 1 || o.npub > MAX_PUBS || o.count < 1 || o.size > 900)
        usage();
    if (!o.pub_port)
        o.pub_port = o.ports[0];
    if (o.count > MAX_MSGS - 100000)
        o.count = MAX_MSGS - 100000;
    hs_len =
        (size_t)snprintf(hs, sizeof hs,
                         "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n",
                         o.sio ? "/socket.io/?EIO=4&transport=websocket" : o.path);
    epfd = epoll_create1(0);
    subs = calloc((size_t)o.n, sizeof *subs);
    pub_ns = calloc(MAX_MSGS, sizeof *pub_ns);
    last_ns = calloc(MAX_MSGS, sizeof *last_ns);
    cnt = calloc(MAX_MSGS, sizeof *cnt);
    if (epfd < 0 || !subs || !pub_ns || !last_ns || !cnt) {
        fprintf(stderr, "fanout: out of memory\n");
        return 2;
    }
    nseq = MAX_MSGS;
    int64_t t_conn = now_ns();
    connect_all();
    connect_took = (double)(now_ns() - t_conn) / 1e9;
    for (int i = 0; i < o.n; i++)
        if (subs[i].fd >= 0 && subs[i].state < 2)
            sub_drop(&subs[i]); /* no handshake within the time */
    printf("READY open=%d of %d connect_s=%.2f\n", nready, o.n, connect_took);
    fflush(stdout);
    if (wait_go) { /* the harness measures memory meanwhile; the loop serves pings */
        watch(0, &stdin_kind, EPOLLIN);
        int64_t end = now_ns() + 600LL * 1000000000;
        while (!go_seen && now_ns() < end)
            turn(100);
    }
    if (!nready) {
        printf("FANOUT error=no_subscriber_opened subscribers=%d open=0\n", o.n);
        return 1;
    }
    for (int i = 0; i < o.npub; i++)
        pub_open(&pubs[i]);
    /* Warm-up: until one message reaches every subscriber (all are
     * subscribed), within --warmup seconds; these do not count. */
    long seq = 0, warm_ok = 0;
    int64_t warm_end = now_ns() + (int64_t)(o.warmup_s * 1e9);
    while (now_ns() < warm_end && seq < 100000) {
        double left = (double)(warm_end - now_ns()) / 1e9;
        int rc = publish_wait(seq++, left < 3 ? left : 3);
        if (rc == -2 || (rc == 0 && ++warm_ok >= 2))
            break;
    }
    double closed_rate = 0, closed_p99 = 0;
    phase r = run_phase(seq, o.rate, o.seconds, o.count);
    closed_rate = r.pub_rate;
    closed_p99 = r.p99_us;
    seq = r.next_seq;
    /* The open-loop ladder: rate = factor x the closed loop's, up while a
     * step holds (nothing lost, the rate kept, p99 within the bound). */
    for (int i = 0; i < o.nladder && r.ok; i++) {
        double rate = o.ladder[i] * closed_rate;
        if (rate <= 0)
            break;
        r = run_phase(seq, rate, o.step_s, 1000000);
        seq = r.next_seq;
        double bound = closed_p99 * 2 > 100000 ? closed_p99 * 2 : 100000;
        r.ok = r.lost == 0 && r.pub_rate >= 0.95 * rate && r.p99_us >= 0 && r.p99_us <= bound;
        printf("STEP factor=%g rate=%.1f held=%d\n", o.ladder[i], rate, r.ok);
        fflush(stdout);
    }
    return 0;
}
