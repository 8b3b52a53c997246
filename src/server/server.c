/* server.c — a server on one loop: options, listeners, the connection
 * table (one slot per fd) that accepted connections enter, idle keep-alive
 * connections (no coroutine, no buffer: a watch callback and a timer), and
 * starting and stopping. Accepting itself is server_accept.c. */
#include "server/server.h"

#include "base/log.h"
#include "net/tls.h"
#include "server/access_log.h"
#include "server/exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long a quiet keep-alive connection keeps the buffers of a busy one:
 * TLS's record buffers, HTTP/2's frame buffer. */
#define IDLE_KEEP_BUFFERS_MS 100

void sp_server_options_init(sp_server_options *o) {
    *o = (sp_server_options){
        .head_max = HTTP_HEAD_MAX_DEFAULT,
        .target_max = HTTP_TARGET_MAX_DEFAULT,
        .fields_max = HTTP_FIELDS_MAX_DEFAULT,
        .body_max = 0,
        .drain_max = 256 * 1024,
        .header_timeout_ms = 10000,
        .body_timeout_ms = 30000,
        .body_min_rate = 1024,
        .send_timeout_ms = 30000,
        .keepalive_timeout_ms = 5000,
        .linger_timeout_ms = 2000,
        .ws_ping_interval_ms = 20000,
        .ws_idle_timeout_ms = 60000,
        .max_connections = 10000,
        .backlog = 4096,
        .pipeline_burst = 16,
        .stack_size = 65536,
    };
}

_Static_assert((int)FWD_HDR_XFF == (int)SP_FORWARDED_X_FORWARDED_FOR &&
                   (int)FWD_HDR_FORWARDED == (int)SP_FORWARDED_FORWARDED,
               "forwarded.h and spindle.h name the header families alike");

int server_set_options(sp_server *s, const sp_server_options *o) {
    sp_server_options n, d;
    if (o)
        n = *o;
    else
        sp_server_options_init(&n);
    sp_server_options_init(&d);
    /* Zero means "the default" for every limit. */
    if (!n.head_max)
        n.head_max = d.head_max;
    if (!n.target_max)
        n.target_max = d.target_max;
    if (!n.fields_max)
        n.fields_max = d.fields_max;
    if (!n.header_timeout_ms)
        n.header_timeout_ms = d.header_timeout_ms;
    if (!n.body_timeout_ms)
        n.body_timeout_ms = d.body_timeout_ms;
    if (!n.send_timeout_ms)
        n.send_timeout_ms = d.send_timeout_ms;
    if (!n.keepalive_timeout_ms)
        n.keepalive_timeout_ms = d.keepalive_timeout_ms;
    if (!n.linger_timeout_ms)
        n.linger_timeout_ms = d.linger_timeout_ms;
    if (!n.ws_ping_interval_ms)
        n.ws_ping_interval_ms = d.ws_ping_interval_ms;
    if (!n.ws_idle_timeout_ms)
        n.ws_idle_timeout_ms = d.ws_idle_timeout_ms;
    if (!n.max_connections)
        n.max_connections = d.max_connections;
    if (!n.backlog)
        n.backlog = d.backlog;
    if (!n.pipeline_burst)
        n.pipeline_burst = d.pipeline_burst;
    if (!n.stack_size)
        n.stack_size = d.stack_size;
    if (n.fields_max > 1000)
        n.fields_max = 1000;
    /* Parsed aside: a refused list (a failed reload) leaves the old one. */
    fwd_nets fwd = {.header = n.forwarded_header};
    if (n.forwarded_header != SP_FORWARDED_X_FORWARDED_FOR &&
        n.forwarded_header != SP_FORWARDED_FORWARDED)
        return -EINVAL;
    if (n.forwarded_allow_ips && fwd_parse_nets(&fwd, n.forwarded_allow_ips) < 0)
        return -EINVAL;
    s->fwd = fwd;
    n.forwarded_allow_ips = NULL; /* parsed; the caller's string is not kept */
    s->opt = n;
    server_refresh_alpn(s);
    /* The buffer holds a whole head plus what follows it in the same read. */
    s->buf_size = n.head_max < 16384 ? 16384 : n.head_max + 4096;
    return 0;
}

sp_server *sp_server_new(const sp_server_options *o) {
    sp_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->http2_max_streams = 100;
    s->kick.fd = -1;
    if (server_set_options(s, o) < 0) {
        free(s);
        errno = EINVAL;
        return NULL;
    }
    return s;
}

int sp_server_listen(sp_server *s, const char *spec) {
    if (s->nlisteners == SERVER_MAX_LISTENERS)
        return -ENOSPC;
    listener *li = &s->listeners[s->nlisteners];
    int rc = net_parse_addr(spec, &li->addr);
    if (rc < 0)
        return rc;
    int fd = net_listen(&li->addr, s->opt.backlog, 0);
    if (fd < 0)
        return fd;
    /* Report the real port when asked for port 0. */
    li->addr.len = sizeof li->addr.u;
    getsockname(fd, &li->addr.u.sa, &li->addr.len);
    li->w = (loop_watch){.fd = fd};
    s->nlisteners++;
    return 0;
}

int server_adopt_listener(sp_server *s, int fd) {
    if (s->nlisteners == SERVER_MAX_LISTENERS)
        return -ENOSPC;
    listener *li = &s->listeners[s->nlisteners];
    li->addr.len = sizeof li->addr.u;
    if (getsockname(fd, &li->addr.u.sa, &li->addr.len) != 0)
        return -errno;
    li->w = (loop_watch){.fd = fd};
    s->nlisteners++;
    return 0;
}

int sp_route(sp_server *s, const char *method, const char *pattern, sp_handler h, void *ud) {
    return router_add(&s->routes, method, pattern, h, ud);
}

int64_t server_deadline(const sp_server *s, int timeout_ms) {
    return loop_now(s->l) + timeout_ms;
}

const char *server_date(sp_server *s) {
    time_t now = time(NULL);
    if (now != s->date.sec)
        http_date_update(&s->date, now);
    return s->date.text;
}

/* ---- connections entering the table (from server_accept.c) -------------- */

static void on_idle_event(loop *l, loop_watch *w, uint32_t events);
static void on_idle_timeout(loop *l, loop_timer *t);

/* Waits for the connection's next bytes with no coroutine: a readiness
 * callback (the watch registered now if it never was) and a timer. */
static int idle_until(sp_server *s, conn *c, int64_t deadline) {
    if (loop_watch_ensure(s->l, &c->w) < 0)
        return -1;
    c->state = CONN_IDLE;
    loop_timer_arm(s->l, &c->idle_timer, deadline, on_idle_timeout, s);
    return 0;
}

/* What a quiet connection gives back: OpenSSL's record buffers, and the
 * buffers of its protocol (HTTP/2's frame buffer). */
static void give_back_buffers(conn *c) {
    if (c->tls)
        tls_release_buffers(c->tls);
    exchange_conn_quiet(c);
}

/* The idle timer's first stop on a TLS or HTTP/2 keep-alive connection:
 * quiet for IDLE_KEEP_BUFFERS_MS, it gives its buffers back and waits on
 * for the rest of its keep-alive time. */
static void on_quiet(loop *l, loop_timer *t) {
    conn *c = container_of(t, conn, idle_timer);
    give_back_buffers(c);
    loop_timer_arm(l, t, loop_now(l) + c->idle_rest_ms, on_idle_timeout, t->data);
}

/* Idle over TLS or HTTP/2. Freeing OpenSSL's two ~17 KB record buffers
 * the moment a keep-alive answer is out made every next request malloc and
 * free them again (~1,300 of ~17,500 instructions per request under
 * callgrind), and HTTP/2's frame buffer would fault its pages back in: a
 * connection keeps them while a next request is likely to come soon, and
 * one that stays quiet costs no buffers. A fresh connection (its first
 * request's deadline is read back from the timer) gives them back at once. */
static int quiet_idle_until(sp_server *s, conn *c, int64_t deadline) {
    int64_t quiet = loop_now(s->l) + IDLE_KEEP_BUFFERS_MS;
    if (c->nreq == 0 || deadline <= quiet || deadline - quiet > UINT32_MAX) {
        give_back_buffers(c);
        return idle_until(s, c, deadline);
    }
    if (loop_watch_ensure(s->l, &c->w) < 0)
        return -1;
    c->state = CONN_IDLE;
    c->idle_rest_ms = (uint32_t)(deadline - quiet);
    loop_timer_arm(s->l, &c->idle_timer, quiet, on_quiet, s);
    return 0;
}

void server_conn_idle(sp_server *s, conn *c) {
    if (c->tls && SSL_pending(c->tls) > 0) {
        /* OpenSSL holds decrypted bytes no edge will announce: serve them. */
        if (loop_spawn(s->l, exchange_main, c) < 0)
            server_conn_close(s, c);
        return;
    }
    if (c->buf) {
        buf_pool_put(&s->bufs, c->buf);
        c->buf = NULL;
    }
    c->buf_len = c->buf_off = 0;
    /* A fresh connection keeps the deadline it got at accept; HTTP/2 counts
     * from its last stream, not its last frame (its protocol says). */
    int64_t deadline = exchange_idle_deadline(
        c, c->nreq == 0 ? c->idle_timer.when : loop_now(s->l) + s->opt.keepalive_timeout_ms);
    if ((c->tls || !exchange_is_plain(c) ? quiet_idle_until(s, c, deadline)
                                         : idle_until(s, c, deadline)) < 0)
        server_conn_close(s, c);
}

/* --proxy-protocol: only a trusted proxy may tell us who the client is, so
 * a connection from any other peer is closed before a byte is read. */
static void refuse_untrusted_proxy(conn *c) {
    static int64_t last;
    static uint64_t suppressed;
    char ip[INET6_ADDRSTRLEN] = "unix";
    if (c->peer_family == AF_INET || c->peer_family == AF_INET6)
        inet_ntop(c->peer_family, c->peer_ip, ip, sizeof ip);
    log_ratelimited(&last, &suppressed, LOG_WARNING,
                    "connection from %s closed: behind --proxy-protocol (or --bind proxy://) "
                    "only the proxies in --forwarded-allow-ips may connect (add this address "
                    "there if it is one)",
                    ip);
    close(c->w.fd);
    *c = (conn){.w = {.fd = -1}};
}

void server_accept_conn(int fd, const net_addr *peer, void *ud) {
    const accept_ctx *ax = ud;
    sp_server *s = ax->s;
    if (fd >= s->nconns_cap) {
        /* The table covers RLIMIT_NOFILE at start; only a raised limit gets here. */
        close(fd);
        return;
    }
    conn *c = &s->conns[fd];
    *c = (conn){.w = {.fd = fd, .cb = on_idle_event, .data = s}};
    c->peer_family = (uint8_t)peer->u.sa.sa_family;
    if (peer->u.sa.sa_family == AF_INET) {
        memcpy(c->peer_ip, &peer->u.in.sin_addr, 4);
        c->peer_port = ntohs(peer->u.in.sin_port);
    } else if (peer->u.sa.sa_family == AF_INET6) {
        memcpy(c->peer_ip, &peer->u.in6.sin6_addr, 16);
        c->peer_port = ntohs(peer->u.in6.sin6_port);
    }
    c->peer_trusted = (uint8_t)fwd_peer_trusted(&s->fwd, c->peer_family, c->peer_ip);
    c->listener = (uint8_t)ax->listener;
    /* A side door with its own routes (--stats-bind) is not behind the proxy. */
    const listener *li = ax->listener ? &s->listeners[ax->listener - 1] : NULL;
    if (li && (li->proxy || (s->opt.proxy_protocol && !li->own_routes))) {
        if (!c->peer_trusted) {
            refuse_untrusted_proxy(c);
            return;
        }
        c->proxy_wait = 1;
    }
    if (li && li->tls && !(c->tls = tls_ctx_new_ssl(li->tls, fd))) {
        close(fd); /* out of memory: shed this one */
        *c = (conn){.w = {.fd = -1}};
        return;
    }
    s->nconns++;
    if (s->obs.conns_open)
        s->obs.conns_open(s->obs.ud, s->nconns);
    /* The whole first head must come within header_timeout of now. */
    c->idle_timer.when = loop_now(s->l) + s->opt.header_timeout_ms;
    /* Most clients send at once: try the read before paying for epoll.
     * The coroutine reads once; with nothing there it goes back to idle
     * (registering the watch then), holding no stack while it waits. */
    loop_watch_lazy(&c->w, BACKEND_CONN);
    c->state = CONN_ACTIVE;
    if (loop_spawn(s->l, exchange_main, c) < 0 && idle_until(s, c, c->idle_timer.when) < 0)
        server_conn_close(s, c);
}

int server_adopt_conn(sp_server *s, int fd) {
    if (!s->conns || fd < 0 || fd >= s->nconns_cap)
        return -EINVAL;
    net_addr peer = {.len = sizeof(sa_family_t)};
    peer.u.sa.sa_family = AF_UNIX;
    int before = s->nconns;
    accept_ctx ax = {s, 0};
    server_accept_conn(fd, &peer, &ax);
    return s->nconns > before ? 0 : -EIO;
}

/* ---- idle connections ---------------------------------------------------- */

static void wake_idle(sp_server *s, conn *c);

static void on_idle_event(loop *l, loop_watch *w, uint32_t events) {
    conn *c = container_of(w, conn, w);
    if (c->state == CONN_ACTIVE && (events & LOOP_READ)) {
        /* Bytes came while the serving coroutine was not waiting to read
         * (it yielded, or waited on something else): the edge is spent, so
         * the driver must look once more before the connection goes idle. */
        c->maybe_more = 1;
        return;
    }
    if (c->state != CONN_IDLE || !(events & (LOOP_READ | LOOP_RDHUP | LOOP_HUP)))
        return; /* a writable edge while idle means nothing */
    wake_idle(w->data, c);
}

/* Runs the driver of an idle connection now (its bytes came, its time ran
 * out on HTTP/2, the server stops). */
static inline void wake_idle(sp_server *s, conn *c) {
    loop_timer_cancel(s->l, &c->idle_timer);
    c->state = CONN_ACTIVE;
    if (loop_spawn(s->l, exchange_main, c) < 0)
        server_conn_close(s, c); /* no stack could be mapped: shed this one */
}

void server_conn_wake(sp_server *s, conn *c) {
    if (c->state == CONN_IDLE)
        wake_idle(s, c);
}

static void on_idle_timeout(loop *l, loop_timer *t) {
    conn *c = container_of(t, conn, idle_timer);
    if (c->h2)
        wake_idle(t->data, c); /* HTTP/2 says goodbye with a GOAWAY */
    else
        server_conn_close(t->data, c); /* a silent close, as RFC 9112 §9.5 allows */
}

void server_conn_close(sp_server *s, conn *c) {
    loop_timer_cancel(s->l, &c->idle_timer);
    exchange_conn_drop(c); /* a protocol's own state (HTTP/2's session) */
    if (c->tls)
        conn_tls_free(c);
    net_close(s->l, &c->w);
    if (c->buf) {
        buf_pool_put(&s->bufs, c->buf);
        c->buf = NULL;
    }
    c->state = CONN_FREE;
    s->nconns--;
    if (s->obs.conns_open)
        s->obs.conns_open(s->obs.ud, s->nconns);
    if (!s->stopping && !s->accept_paused && s->nconns < s->opt.max_connections)
        server_listeners_resume(s);
}

/* ---- running ---------------------------------------------------------- */

static void on_tick(loop *l, loop_timer *t) {
    sp_server *s = t->data;
    buf_pool_trim(&s->bufs, loop_now(l));
    server_flush_access_log(s); /* at most a second behind */
    if (!s->stopping)
        loop_timer_arm(l, t, loop_now(l) + 1000, on_tick, s);
}

int server_start(sp_server *s, loop *l) {
    if (s->nlisteners == 0)
        return -EDESTADDRREQ;
    s->l = l;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1 << 22)
        rl.rlim_cur = 1 << 16;
    s->nconns_cap = (int)rl.rlim_cur;
    /* Large calloc is mmap'ed: only the slots in use cost memory. */
    s->conns = calloc((size_t)s->nconns_cap, sizeof *s->conns);
    if (!s->conns)
        return -ENOMEM;
    if (s->opt.max_connections > s->nconns_cap - 32) {
        int fit = s->nconns_cap - 32 > 1 ? s->nconns_cap - 32 : 1;
        log_msg(LOG_WARNING,
                "--max-connections %d is more than the open-files limit allows (ulimit -n %d); "
                "using %d",
                s->opt.max_connections, s->nconns_cap, fit);
        s->opt.max_connections = fit;
    }
    buf_pool_init(&s->bufs, s->buf_size, CONN_FRONT_BYTES, 1024);
    s->stopping = 0;
    for (int i = 0; i < s->nlisteners; i++)
        s->listeners[i].paused = 1;
    server_listeners_resume(s);
    loop_timer_arm(l, &s->tick, loop_now(l) + 1000, on_tick, s);
    if (s->stop_early) { /* a TERM while the worker started (an app's import, its lifespan) */
        s->stop_early = 0;
        sp_server_stop(s);
    }
    return 0;
}

int server_done(const sp_server *s) {
    return s->stopping && s->nconns == 0;
}

void server_finish(sp_server *s) {
    server_flush_access_log(s);
    loop_timer_cancel(s->l, &s->tick);
    loop_timer_cancel(s->l, &s->accept_timer);
    server_listeners_pause(s);
    free(s->conns);
    s->conns = NULL;
    buf_pool_destroy(&s->bufs);
    s->l = NULL;
}

int sp_server_run(sp_server *s) {
    sp_loop_options lo = {.stack_size = s->opt.stack_size, .no_guard_pages = s->opt.no_guard_pages};
    loop *l = loop_current();
    int own_loop = 0;
    if (!l) {
        l = sp_loop_new(&lo);
        if (!l)
            return -errno;
        own_loop = 1;
    }
    int rc = 0;
    for (int i = 0; i < s->non_start && rc == 0; i++)
        if (s->on_start[i].fn(s, s->on_start[i].ud) < 0) {
            log_msg(LOG_CRITICAL, "a worker start-up hook failed; not serving");
            rc = -ECANCELED;
        }
    if (rc < 0) {
        /* reported above */
    } else if (s->drive) {
        rc = s->drive(s, s->drive_ud); /* e.g. the Python binding's hub */
    } else {
        rc = server_start(s, l);
        while (rc >= 0 && !server_done(s))
            rc = sp_poll(-1);
        if (s->l)
            server_finish(s);
    }
    if (own_loop)
        sp_loop_free(l);
    return rc < 0 ? rc : 0;
}

void sp_server_stop(sp_server *s) {
    if (!s->l) {
        s->stop_early = 1; /* not serving yet: server_start stops it at once */
        return;
    }
    if (s->stopping)
        return;
    /* Idle keep-alive connections are not closed under a client that may be
     * sending: each is answered once more, with Connection: close, or ends
     * at its keep-alive timeout. */
    s->stopping = 1;
    server_accept_stop(s);
    exchange_server_stop(s); /* HTTP/2's GOAWAY: in-flight streams finish, no new ones */
    for (int k = 0; k < s->non_stop; k++)
        s->on_stop[k].fn(s, s->on_stop[k].ud);
}

void sp_server_free(sp_server *s) {
    if (!s)
        return;
    for (int i = 0; i < SERVER_MAX_EXT; i++)
        if (s->ext[i].key && s->ext[i].free_fn)
            s->ext[i].free_fn(s->ext[i].data);
    for (int i = 0; i < s->nlisteners; i++) {
        if (s->listeners[i].w.fd >= 0)
            close(s->listeners[i].w.fd);
        if (s->listeners[i].addr.u.sa.sa_family == AF_UNIX)
            unlink(s->listeners[i].addr.u.un.sun_path);
        router_free(&s->listeners[i].routes);
    }
    router_free(&s->routes);
    free(s);
}
