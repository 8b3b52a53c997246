/* server.h — the server core's own side, shared by server.c (listeners,
 * accepting, the connection table, idle connections, setters), http_conn.c
 * (the per-request driver), http1_ops.c, request.c, response.c, stats.c and
 * forwarded.c.
 * Only those files touch struct sp_server's members; the process layer and
 * the command line set what they need through the setters below. */
#ifndef SPINDLE_SERVER_H
#define SPINDLE_SERVER_H

#include "base/buf_pool.h"
#include "loop/loop.h"
#include "net/net.h"
#include "net/tls_ctx.h"
#include "server/embed.h"
#include "server/forwarded.h"
#include "server/handler.h"
#include "server/router.h"
#include "spindle.h"

#include <netinet/in.h>
#include <stddef.h>

#define SERVER_MAX_LISTENERS       16
#define SERVER_ACCEPT_BATCH        64
#define SERVER_ACCEPT_BATCH_SHARED 4
/* The longest a worker over its share leaves the same waiting clients to
 * the others (say none of them can take them yet: still starting, or busy
 * in a long handler) before it takes them itself. */
#define SERVER_ASIDE_MAX_MS 1000
/* A connection's read buffer carries, in its pool front (in the page of the
 * head's first bytes), room for this many header fields of its request (the
 * default --max-header-count; more are malloc'ed) and the normalized path
 * after them: off the coroutine's stack, so a handler that parks keeps its
 * frames in the stack's top page, and given back with the buffer at a long
 * wait (req_park.c). */
#define CONN_FIELDS      HTTP_FIELDS_MAX_DEFAULT
#define CONN_FRONT_BYTES (CONN_FIELDS * 32) /* a multiple of the pool's 64 */

typedef struct listener {
    loop_watch w;
    net_addr addr;
    int paused;
    int own_routes; /* routes holds this listener's own table (server_listener_route) */
    int proxy;      /* its connections begin with a PROXY header (--bind proxy://) */
    tls_ctx *tls;   /* its connections speak TLS with these contexts (not owned), or NULL */
    router routes;
} listener;

/* What the server tells whoever supervises it (the process layer's shared
 * counters and accept balancing), without knowing who that is. Every
 * member may be NULL. */
enum { SERVER_H2_STREAM, SERVER_H2_RESET, SERVER_H2_GOAWAY };
enum { SERVER_TLS_FULL, SERVER_TLS_RESUMED, SERVER_TLS_FAILED };
enum { SERVER_ACCEPT_STEPPED_ASIDE, SERVER_ACCEPT_KICK_TAKEN };

typedef struct server_observer {
    /* The number of open connections changed. */
    void (*conns_open)(void *ud, int nconns);
    /* With several workers sharing the listeners and more than 8
     * connections here: 1 to let the others accept for a moment. */
    int (*accept_step_aside)(void *ud, int nconns);
    /* This worker stepped aside (and kicked another), or took a kick
     * (what: SERVER_ACCEPT_*). */
    void (*accept_event)(void *ud, int what);
    /* A handler is about to run for h, and has returned. */
    void (*request_begin)(void *ud, const http_request *h);
    void (*request_end)(void *ud);
    /* One request answered (status 0: none was sent); us its time from a
     * complete head, when timed. */
    void (*request_done)(void *ud, int status, uint64_t bytes_in, uint64_t bytes_out, uint64_t us,
                         int timed);
    /* HTTP/2: a stream began, one was reset (by either side), a GOAWAY
     * went out (what: SERVER_H2_*). */
    void (*h2_event)(void *ud, int what);
    /* A TLS handshake ended: SERVER_TLS_FULL, _RESUMED or _FAILED. */
    void (*tls_handshake)(void *ud, int outcome);
    void *ud;
} server_observer;

struct sp_server {
    /* options and routes (server.c, router.c, forwarded.c) */
    sp_server_options opt;
    size_t buf_size; /* a read buffer's bytes (its front before them: CONN_FIELDS) */
    router routes;
    fwd_nets fwd; /* forwarded_allow_ips and forwarded_header, parsed */
    /* listening and accepting (server.c) */
    listener listeners[SERVER_MAX_LISTENERS];
    int nlisteners;
    int accept_exclusive; /* several workers share the listeners: EPOLLEXCLUSIVE */
    int accept_paused;    /* max_connections reached or out of fds */
    int64_t aside_since;  /* over its share, it has left waiting clients to the others since
                             (loop ms; 0: not) */
    loop_watch kick;      /* shared listeners: the eventfd a worker stepping aside wakes
                             another with (fd -1: none) */
    loop_timer accept_timer;
    /* the connection table and serving (server.c, http_conn.c) */
    loop *l;
    conn *conns; /* indexed by fd */
    int nconns_cap;
    int nconns;
    int stopping;
    int stop_early; /* sp_server_stop came before server_start: it stops as it starts */
    /* HTTP/2 (server_set_http2; not in sp_server_options, whose size is ABI):
     * off, and the concurrent streams per connection (100) */
    int http2_off, http2_max_streams;
    size_t h2_out_held; /* the HTTP/2 streams' response buffers in this worker (h2_stream.c) */
    loop_timer tick;    /* once a second: date, buffer trim */
    buf_pool bufs;
    http_date_cache date;
    int64_t log_last;
    uint64_t log_suppressed;
    list_head h2_conns;           /* the HTTP/2 connections (h2_conn.c), for the GOAWAY at stop */
    uint64_t max_requests;        /* stop gracefully after this many (--max-requests) */
    int tls_handshake_timeout_ms; /* conn_tls.c: ClientHello to Finished */
    const char *alpn;             /* offered on TLS listeners, preferred first */
    uint64_t served;
    /* accounting (stats.c): the access log and the observer */
    struct access_log *access_log; /* opened in each worker */
    const char *access_log_path, *access_log_format;
    int pid;   /* the worker's, for %p (set when the log opens) */
    int timed; /* requests are timed: an access log or --stats is on */
    server_observer obs;
    /* embedding (embed.h setters) */
    int (*drive)(sp_server *s, void *ud);
    void *drive_ud;
    int (*worker_init)(sp_server *s, void *ud);
    void *worker_init_ud;
    void (*fork_hook)(int phase, void *ud);
    void *fork_hook_ud;
    /* hooks and feature slots (handler.h) */
    struct {
        int (*fn)(sp_server *s, void *ud);
        void *ud;
    } on_start[8]; /* sp_server_on_worker_start */
    int non_start;
    struct {
        void (*fn)(sp_server *s, void *ud);
        void *ud;
    } on_stop[4]; /* server_on_stop */
    int non_stop;
    struct {
        const void *key;
        void *data;
        void (*free_fn)(void *data);
    } ext[SERVER_MAX_EXT];
};

/* Where c's request fields go: its buffer's front (c->buf not NULL). */
static inline http_field *conn_fields(const sp_server *s, const conn *c) {
    _Static_assert(CONN_FRONT_BYTES == CONN_FIELDS * sizeof(http_field) &&
                       CONN_FRONT_BYTES % 64 == 0,
                   "the buffer's front holds CONN_FIELDS fields, aligned as the pool aligns it");
    return (http_field *)(void *)(c->buf - CONN_FRONT_BYTES); /* the pool's front: a constant */
}

/* ---- setters for the process layer and the command line (server.c) ---- */

/* Sets (or, on reload, replaces) the options, zero meaning the default.
 * 0, or -EINVAL for a bad forwarded_allow_ips list or forwarded_header
 * (the server keeps its trust list then). */
int server_set_options(sp_server *s, const sp_server_options *o);
void server_set_observer(sp_server *s, const server_observer *o);
/* Several workers share the listeners (EPOLLEXCLUSIVE, balanced accept). */
void server_set_accept_shared(sp_server *s, int shared);
/* The eventfd the workers sharing the listeners wake one another with
 * (created before they fork; -1: none). */
void server_set_accept_kick(sp_server *s, int fd);
/* Stop gracefully after n requests (0: never). */
void server_set_max_requests(sp_server *s, uint64_t n);
/* The access log's file and format (NULL: none), opened in each worker by
 * server_open_access_log; timed: requests are timed (for --stats). */
void server_set_access_log(sp_server *s, const char *path, const char *format);
void server_set_timed(sp_server *s, int timed);
/* 0, or -errno (the log could not be opened); reopen after logrotate;
 * flush; close (idempotent). */
int server_open_access_log(sp_server *s);
void server_reopen_access_log(sp_server *s);
void server_flush_access_log(sp_server *s);
void server_close_access_log(sp_server *s);
/* Listeners: how many, one's fd and address, to close all. */
int server_nlisteners(const sp_server *s);
int server_listener_fd(const sp_server *s, int i);
const net_addr *server_listener_addr(const sp_server *s, int i);
void server_set_listener_fd(sp_server *s, int i, int fd);
/* Adds a route to listener i's own table; the first call makes the table
 * its own: requests on the connections it accepts are then routed only
 * through that table, never the server's (sp_route), and the server's
 * listeners never reach these routes. A side door for an endpoint that must
 * not be on the public address (--stats-bind). 0, -EINVAL (no such
 * listener, bad pattern) or -ENOMEM. */
int server_listener_route(sp_server *s, int i, const char *method, const char *pattern,
                          sp_handler fn, void *ud);
/* The route table for requests on c: its listener's own, or the server's. */
static inline const router *server_routes_for(const sp_server *s, const conn *c) {
    const listener *li = c->listener ? &s->listeners[c->listener - 1] : NULL;
    return li && li->own_routes ? &li->routes : &s->routes;
}
/* Listener i's connections begin with a PROXY protocol header (--bind
 * proxy://ADDR), whatever opt.proxy_protocol says. */
void server_set_listener_proxy(sp_server *s, int i);
/* Listener i speaks TLS with t (NULL: plain again). The server does not own
 * t: on a reload the caller installs the new contexts, then frees the old
 * (workers forked before keep their own copy). t gets the server's ALPN
 * list. 0, or -EINVAL (no such listener). */
int server_set_listener_tls(sp_server *s, int i, tls_ctx *t);
tls_ctx *server_listener_tls(const sp_server *s, int i);
/* The whole handshake within ms (0: 10 s). */
void server_set_tls_handshake_timeout(sp_server *s, int ms);
/* The ALPN protocols every TLS listener offers, comma-separated, preferred
 * first ("h2,http/1.1"; the default "http/1.1"); kept, not copied. 0, or
 * -EINVAL (too long). */
int server_set_alpn(sp_server *s, const char *list);
/* Offers the ALPN list again on every TLS listener (the options changed:
 * --http2 on or off decides whether "h2" is on it when none was set). */
void server_refresh_alpn(sp_server *s);
/* The protocol ALPN chose on c ("http/1.1", "h2"), len set; NULL if none
 * (plain, or the client offered none). */
const char *server_conn_alpn(const conn *c, unsigned *len);
/* Adds an inherited listening socket (socket activation, upgrade). */
int server_adopt_listener(sp_server *s, int fd);
/* --http2 and --http2-max-streams: off (1: the h2c preface gets 505, TLS
 * offers only http/1.1) and the concurrent streams per HTTP/2 connection
 * (SETTINGS_MAX_CONCURRENT_STREAMS; more are refused; <= 0: 100). */
void server_set_http2(sp_server *s, int off, int max_streams);
/* Closes this process's listening sockets (a stopping server). */
void server_close_listeners(sp_server *s);
int server_nconns(const sp_server *s);

/* ---- inside the core ---------------------------------------------------- */

/* What server_accept_conn is told: the server, and which listener accepted. */
typedef struct accept_ctx {
    sp_server *s;
    int listener; /* 1 + index; 0: an adopted connection */
} accept_ctx;

/* Takes an accepted fd into the connection table and serves it (server.c;
 * a net_accept_fn, ud an accept_ctx). */
void server_accept_conn(int fd, const net_addr *peer, void *ud);
/* The listeners' watches (server_accept.c): out of epoll and back, and at
 * a stop the backlog taken and the listeners closed. */
void server_listeners_pause(sp_server *s);
void server_listeners_resume(sp_server *s);
void server_accept_stop(sp_server *s);

void server_conn_close(sp_server *s, conn *c);
/* From the connection's coroutine, about to end: back to idle (buffer
 * returned, keep-alive timer armed). */
void server_conn_idle(sp_server *s, conn *c);
const char *server_date(sp_server *s);
/* Runs the driver of an idle connection at once (HTTP/2 at stop: GOAWAY). */
void server_conn_wake(sp_server *s, conn *c);

/* conn_tls.c: from the connection's first coroutine on a TLS listener:
 * the handshake within the handshake timeout (plain HTTP is answered 400
 * and closed). 0, or -1 when the connection has been closed. */
int conn_tls_accept(sp_server *s, conn *c);
/* At close: close_notify if it can go at once, and the SSL freed. */
void conn_tls_free(conn *c);
/* Whether r (on a TLS connection) names in its Host another certificate's
 * host than its SNI name's: it gets 421 (tls_ctx_misdirected). */
int conn_tls_misdirected(const sp_req *r);

/* http_conn.c: serves c as HTTP/1.1 on the exchange's coroutine
 * (exchange_main), *parked naming the request of a long wait. */
void http_conn_serve(sp_server *s, conn *c, sp_req **parked);
/* Closes after an error: shut down writing, discard input for a bounded
 * time, close. From the connection's coroutine. */
void http_conn_linger_close(sp_server *s, conn *c);
/* http1_ops.c: HTTP/1.1's exchange_ops, the body and the response framed
 * on the connection (the HTTP/1.1 driver hands it to req_init). */
extern const exchange_ops http1_ops;

/* request.c: a fresh request of protocol ops (ctx: its own state, xctx). */
void req_init(sp_req *r, sp_server *s, conn *c, const exchange_ops *ops, void *ctx);
/* Runs and forgets the cleanups (the connection driver, at the end). */
void req_run_deferred(sp_req *r);
/* Discards the rest of the body, at most max bytes: 1 if it all went. */
int req_drain(sp_req *r, uint64_t max);
/* The body's rate budget (--body-timeout, --body-min-rate), one rule for
 * HTTP/1.1 and HTTP/2: how long a read may wait from now, and the waiting
 * since then and the n bytes it brought, charged to the request. */
int64_t req_body_deadline(const sp_req *r, int64_t now);
void req_body_charge(sp_req *r, int64_t since, size_t n);
/* Records a body failure (the protocols' reads): every later read repeats
 * err, and the response ends the connection (its framing is lost). err. */
ssize_t req_body_fail(sp_req *r, int err, int status);

/* req_park.c: the park hook (loop.h) of a request's task, arg a pointer to
 * the sp_req being served (NULL between requests): a long wait gives back
 * the read buffer (to the pool if the handler holds no slice into it, else
 * its unused pages, the buffer staying put). req_park_done frees what it
 * kept (req_run_deferred calls it). */
void req_park_hook(void *arg, int parking);
void req_park_done(sp_req *r);

/* response.c */
void res_init(sp_res *res, sp_req *req, conn *c);
/* A 1xx set as the answer: logged, the status becomes 500. -EINVAL. */
int res_refuse_interim(sp_res *r, int status);
/* sp_res_finish_trailers' bounds, checked before exchange_ops.trailers. */
#define RES_TRAILERS_MAX      16
#define RES_TRAILER_BYTES_MAX 4096

#endif
