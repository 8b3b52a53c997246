/* spindle.h — the public C API of spindle, a coroutine-based HTTP/1.1
 * server. Types are opaque; every function's contract is stated here: what
 * it returns, who owns what, and whether it may yield (park the calling
 * coroutine while the loop serves others). Errors are negative errno values. */
#ifndef SPINDLE_H
#define SPINDLE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_API __attribute__((visibility("default")))

/* The API version a module is built against (--app modules declare it).
 * 2: sp_server_options and sp_ws_options grew (forwarded_header,
 * body_min_rate, the WebSocket keep-alive); a module built for 1 passes
 * structs of the old size, so it is refused. Still 2 with the bus
 * (sp_bus_*): it only added functions, no struct changed size; a module
 * that uses them, loaded into an older spindle, fails at load time naming
 * the missing symbol. */
#define SPINDLE_API_VERSION 2

/* ---- The loop: one per worker thread ------------------------------------
 * Each thread that serves runs one loop. Coroutines spawned on it run one at
 * a time; any function marked "yields" parks the calling coroutine and lets
 * the loop run others until what it waits for happens. */

typedef struct sp_loop sp_loop;

typedef struct sp_loop_options {
    size_t stack_size;    /* coroutine stack, bytes; 0 = 64 KiB */
    int no_guard_pages;   /* 1: stacks without guard pages (one mapping each
                             instead of two; see README "Limits") */
    int blocking_threads; /* threads for sp_run_blocking; 0 = 4 */
} sp_loop_options;

/* Creates the calling thread's loop (opt may be NULL). The thread must not
 * already have one. Returns NULL with errno set on failure. */
SP_API sp_loop *sp_loop_new(const sp_loop_options *opt);

/* Destroys a loop created on this thread: stops its thread pool (waiting for
 * running blocking calls), releases parked coroutines without resuming them. */
SP_API void sp_loop_free(sp_loop *l);

/* Runs the calling thread's loop until sp_loop_stop() or until nothing is
 * left to do (no coroutine, timer or watched fd). Returns 0 or -errno. */
SP_API int sp_loop_run(sp_loop *l);

/* Asks sp_loop_run to return after the current turn. */
SP_API void sp_loop_stop(sp_loop *l);

/* One step of the calling thread's loop, so it can be driven from outside:
 * runs ready coroutines, waits up to timeout_ms (-1: until something
 * happens; 0: not at all) for I/O or a timer, runs what that woke. Returns
 * the number of coroutines resumed, or -errno. Not from inside a coroutine. */
SP_API int sp_poll(int timeout_ms);

/* Monotonic clock of the loop, in milliseconds (cached per loop turn). */
SP_API int64_t sp_now_ms(void);

/* Starts fn(arg) on a new coroutine of the calling thread's loop; it first
 * runs at the loop's next turn. Returns 0, or -ENOMEM (no stack could be
 * mapped) or -ENXIO (this thread has no loop). Does not yield. */
SP_API int sp_spawn(void (*fn)(void *arg), void *arg);

/* Parks the calling coroutine for ms milliseconds (yields). Returns 0, or
 * -ECONNRESET if the client of the coroutine's connection hung up meanwhile
 * (only for coroutines that serve a connection), or -EPERM outside a
 * coroutine. */
SP_API int sp_sleep(int64_t ms);

/* Lets every other ready coroutine run once, then continues (yields). A
 * coroutine that computes for a long stretch calls it now and then. */
SP_API void sp_yield(void);

/* Runs fn(arg) on the loop's small thread pool and parks the calling
 * coroutine until it returns (yields); for blocking C calls (a file read,
 * a C database client, getaddrinfo) that would otherwise stall the loop.
 * fn must not touch the loop. Returns fn's result, or -EPERM outside a
 * coroutine, or -EAGAIN if no thread could be started. */
SP_API int sp_run_blocking(int (*fn)(void *arg), void *arg);

/* ---- The HTTP server -----------------------------------------------------
 * A server owns listeners, routes and limits. sp_server_run serves on the
 * calling thread's loop until stopped. Each request runs its handler on a
 * coroutine: reading the body, writing the response and sp_sleep park it
 * while the loop serves other connections. */

typedef struct sp_server sp_server;
typedef struct sp_req sp_req; /* the request being served: valid during the handler */
typedef struct sp_res sp_res; /* its response: valid during the handler */

/* A slice of bytes; not NUL-terminated unless said. ptr is NULL for "absent". */
typedef struct sp_str {
    const char *ptr;
    size_t len;
} sp_str;

/* A request handler. Returns 0 when it has answered (anything not finished
 * is finished for it: an empty 200 if nothing was sent), or a negative errno
 * on failure: before anything was sent the client gets a 500 (or the status
 * a failed body read calls for: 400, 408, 413), after that the connection
 * is closed, since the response cannot be completed. May yield. */
typedef int (*sp_handler)(sp_req *req, sp_res *res, void *ud);

typedef struct sp_server_options {
    size_t head_max;                 /* request line + header bytes; 8192 (431 beyond) */
    size_t target_max;               /* request-target bytes; 8000 (414 beyond) */
    size_t fields_max;               /* header fields; 100 (431 beyond) */
    uint64_t body_max;               /* request body bytes; 0 = no limit (413 beyond) */
    uint64_t drain_max;              /* unread body discarded to keep the connection;
                                        262144 (beyond: the connection closes) */
    int header_timeout_ms;           /* whole head, however trickled; 10000 (408) */
    int body_timeout_ms;             /* between body bytes; 30000 (408) */
    uint64_t body_min_rate;          /* slowest body, bytes/s, once body_timeout_ms of
                                        waiting is used up; 1024 (408); 0: none */
    int send_timeout_ms;             /* client not reading the response; 30000 (close) */
    int keepalive_timeout_ms;        /* idle between requests; 5000 (silent close) */
    int linger_timeout_ms;           /* lingering close after an error; 2000 */
    int ws_ping_interval_ms;         /* WebSocket silence before a ping; 20000; < 0 no */
    int ws_idle_timeout_ms;          /* WebSocket silence, pings unanswered; 60000 (1001
                                        close); < 0 never; see sp_ws_recv */
    int max_connections;             /* per worker; 10000 (more wait in the backlog) */
    int backlog;                     /* listen backlog; 4096 */
    int pipeline_burst;              /* pipelined requests served before yielding; 16 */
    size_t stack_size;               /* coroutine stack; 65536 */
    int no_guard_pages;              /* stacks without guard pages (README, "Limits") */
    const char *forwarded_allow_ips; /* proxies trusted for the forwarded_header:
                                        "ip,cidr,...", "unix" for peers on a unix
                                        socket, "*" for all; NULL: none */
    int forwarded_header;            /* SP_FORWARDED_*: the one header family the
                                        trusted proxy sets, the only one read */
    int proxy_protocol;              /* 1: every connection on a listener (not an own-
                                        route one such as --stats-bind) begins with a
                                        PROXY protocol v1 or v2 header from a peer in
                                        forwarded_allow_ips, whose client address and
                                        port then stand as the peer's; a connection
                                        without one, or from another peer, is closed
                                        unanswered; 0: off */
} sp_server_options;

/* forwarded_header: X-Forwarded-For (with X-Forwarded-Proto), the default,
 * or Forwarded (RFC 7239, for= and proto=). */
enum { SP_FORWARDED_X_FORWARDED_FOR = 0, SP_FORWARDED_FORWARDED = 1 };

/* Fills o with the defaults above. */
SP_API void sp_server_options_init(sp_server_options *o);

/* A new server (o may be NULL for defaults; it is copied). NULL with errno. */
SP_API sp_server *sp_server_new(const sp_server_options *o);

/* Binds and listens now: "HOST:PORT", "[V6]:PORT", ":PORT", "unix:/path".
 * 0 or -errno (-EINVAL for a malformed address). */
SP_API int sp_server_listen(sp_server *s, const char *addr);

/* Adds a route: method ("GET", ... ; NULL or "*" for any; a GET route also
 * answers HEAD) and a pattern matched against the normalized path (percent-
 * decoding of unreserved characters, dot-segments removed, runs of '/'
 * merged): "/exact", "/users/{id}" (one segment), or a prefix: "/static/"
 * followed by an asterisk (the prefix and everything below it).
 * Exact patterns win, then the first added. OPTIONS without a
 * route of its own is answered 204 with Allow. 0, -EINVAL or -ENOMEM. */
SP_API int sp_route(sp_server *s, const char *method, const char *pattern, sp_handler h, void *ud);

/* The demo routes: GET / (Hello world!), POST and PUT /echo (the body
 * streamed back), GET /sleep?ms=N (answers after N ms). 0 or -errno. */
SP_API int sp_demo_routes(sp_server *s);

/* Serves on the calling thread (creating its loop) until sp_server_stop.
 * 0 or -errno. */
SP_API int sp_server_run(sp_server *s);

/* Asks sp_server_run to stop gracefully: no new connections are accepted,
 * in-flight requests finish, and each keep-alive connection's next request
 * is answered with Connection: close (or it closes at its keep-alive
 * timeout); sp_server_run returns when no connection is left. Callable
 * from a handler or a loop callback. */
SP_API void sp_server_stop(sp_server *s);

/* Runs fn(s, ud) in each worker process once its loop exists, before it
 * serves (with --workers 0, or a program calling sp_server_run itself, in
 * the one process; sp_server_run then returns -ECANCELED if fn fails): where to start periodic
 * timers (sp_every), background coroutines (sp_spawn) and per-process
 * clients (a database connection opened after the fork). An --app
 * module's init runs in the master, before the fork, so it registers its
 * per-worker start-up here. A negative return stops the worker (it is
 * reported and the server stops, as for an application that cannot load).
 * Up to 8 per server. 0, or -ENOSPC. */
SP_API int sp_server_on_worker_start(sp_server *s, int (*fn)(sp_server *s, void *ud), void *ud);

/* Frees a server that is not running; closes its listeners. */
SP_API void sp_server_free(sp_server *s);

/* ---- The request (all slices valid until the handler returns) ---------- */

SP_API sp_str sp_req_method(const sp_req *r);
/* The request-target as sent. */
SP_API sp_str sp_req_target(const sp_req *r);
/* The normalized path the route matched (NUL-terminated). */
SP_API sp_str sp_req_path(const sp_req *r);
/* The query, after '?' (empty, not absent, when there is none). */
SP_API sp_str sp_req_query(const sp_req *r);
/* The value of a {name} segment of the route's pattern, still percent-
 * encoded as sent; ptr NULL if the pattern has no such name. */
SP_API sp_str sp_req_param(const sp_req *r, const char *name);
/* A query parameter's raw value (not decoded): first "name=value" of the
 * query; ptr NULL if absent. */
SP_API sp_str sp_req_query_param(const sp_req *r, const char *name);
/* The first value of a header field (name compared case-insensitively);
 * ptr NULL if absent. Repeats: use sp_req_header_at. */
SP_API sp_str sp_req_header(const sp_req *r, const char *name);
/* Header field i (0-based, in the order received; repeats kept). 1 if it
 * exists, else 0. */
SP_API int sp_req_header_at(const sp_req *r, size_t i, sp_str *name, sp_str *value);
/* The host asked for, "name[:port]" as sent, never empty: an absolute-form
 * target's authority, which wins over Host (RFC 9112 §3.2.2), else Host;
 * ptr NULL without either (HTTP/1.0). Route by this, not by the Host field. */
SP_API sp_str sp_req_host(const sp_req *r);
/* 0 for HTTP/1.0, 1 for HTTP/1.1. */
SP_API int sp_req_minor_version(const sp_req *r);
/* The body length from Content-Length; -1 if chunked; 0 if no body. */
SP_API int64_t sp_req_content_length(const sp_req *r);
/* The peer's address ("1.2.3.4:5678", "[::1]:80", "unix"), NUL-terminated:
 * behind a PROXY protocol header (proxy_protocol), the client it named. */
SP_API const char *sp_req_peer(const sp_req *r);
/* The client's address: the peer's, or, when the peer is a trusted proxy
 * (forwarded_allow_ips), the address its forwarded_header reports: all the
 * header's field lines as one list, walked from the right past trusted
 * hops to the first untrusted one (the leftmost if all are trusted). A hop
 * that names nobody ("unknown", an obfuscated "_name", no for=) gives the
 * peer's address. NUL-terminated, without a port. */
SP_API const char *sp_req_client_addr(const sp_req *r);
/* "https" on a connection of a TLS listener, or when the peer is a trusted
 * proxy whose forwarded_header family says the client came over https (the
 * proto= of the client's Forwarded hop, or the rightmost X-Forwarded-Proto);
 * else "http". */
SP_API const char *sp_req_scheme(const sp_req *r);

/* On a connection of a TLS listener (these say nothing of a TLS proxy in
 * front): the protocol version ("TLSv1.3", "TLSv1.2") and the cipher suite
 * (OpenSSL's name, "TLS_AES_128_GCM_SHA256"); NULL on a plain connection.
 * Static strings. */
SP_API const char *sp_req_tls_version(const sp_req *r);
SP_API const char *sp_req_tls_cipher(const sp_req *r);
/* The server name the client asked for in the handshake (SNI), as mod_ssl's
 * SSL_TLS_SNI; NULL when it sent none, or not TLS. Valid for the request. */
SP_API const char *sp_req_tls_sni(const sp_req *r);
/* The client certificate's subject, RFC 2253 ("CN=alice,O=Example"), as
 * mod_ssl's SSL_CLIENT_S_DN, into buf (NUL-terminated, cut to cap - 1
 * bytes). Its length, or -1: no client certificate (or not TLS). */
SP_API int sp_req_tls_client_subject(const sp_req *r, char *buf, size_t cap);
/* The client certificate's verification, as mod_ssl's SSL_CLIENT_VERIFY:
 * "SUCCESS", "FAILED:reason" (OpenSSL's words), or "NONE" (no certificate,
 * or not TLS), into buf (NUL-terminated, cut to cap - 1). Its length, or
 * -1 (cap 0). A certificate that fails verification under --cert-reqs
 * optional or required ends the handshake, so handlers see SUCCESS or NONE
 * unless the server was told to accept failures. */
SP_API int sp_req_tls_client_verify(const sp_req *r, char *buf, size_t cap);
/* The same connection's numbers, as the wire and IANA give them (the ASGI
 * TLS extension's): the protocol version (0x0304 for TLS 1.3, 0x0303 for
 * 1.2) and the cipher suite (0x1301 for TLS_AES_128_GCM_SHA256); -1 on a
 * plain connection. */
SP_API int sp_req_tls_version_id(const sp_req *r);
SP_API int sp_req_tls_cipher_id(const sp_req *r);
/* A certificate of the connection, PEM-encoded, into buf (NUL-terminated
 * when cap > 0): which -1 is the server's own (the one this handshake
 * sent), 0 the client's, 1 and on the chain the client sent after it (not
 * kept by a resumed session: then only the client's own). Returns the
 * PEM's whole length, as snprintf does (call again with more room when it
 * is >= cap), or -1: no such certificate, or not TLS. */
SP_API int sp_req_tls_cert_pem(const sp_req *r, int which, char *buf, size_t cap);

/* Reads up to len bytes of the request body (de-chunked). Returns the
 * count, 0 at the end of the body, or -errno: -ETIMEDOUT (body timeout),
 * -EFBIG (over body_max), -EBADMSG (malformed chunked coding), -ECONNRESET
 * (the client went away). Sends "100 Continue" first if the client asked.
 * Yields while waiting for bytes. */
SP_API ssize_t sp_read(sp_req *r, void *buf, size_t len);

/* ---- The response ---------------------------------------------------------
 * Nothing is sent until the first write, send or finish: until then status
 * and headers can change. Without sp_res_length, a streamed body is chunked
 * on HTTP/1.1 and close-delimited on HTTP/1.0. HEAD gets the head only. */

/* Sets the status (200..599). -EINVAL, or -EALREADY once the head is sent.
 * A 1xx is interim, never the answer (RFC 9110 §15.2): -EINVAL, logged, and
 * the answer becomes 500 (100 Continue and the WebSocket 101 are the server's). */
SP_API int sp_res_status(sp_res *r, int status);
/* Sends "103 Early Hints" now, before the answer (RFC 8297), with a Link
 * field per links[i], n from 1 to 16 (values as for sp_res_header, else
 * -EINVAL, nothing sent); to HTTP/1.0 nothing (RFC 9110 §15.2), returning 0.
 * 0, -EALREADY once the head is sent, or a write's -errno. */
SP_API int sp_res_early_hints(sp_res *r, const char *const *links, size_t n);
/* Adds a header field (copied). The name must be a token and the value free
 * of CR, LF, NUL and other controls: otherwise -EINVAL and nothing is added.
 * Content-Length, Transfer-Encoding, Date and Connection belong to the
 * server (-EINVAL). -ENOSPC beyond 64 fields or 8 KiB; -EALREADY late. */
SP_API int sp_res_header(sp_res *r, const char *name, const char *value);
/* Declares the body length before streaming it: the head says Content-
 * Length and writing more is -EFBIG; writing less closes the connection. */
SP_API int sp_res_length(sp_res *r, uint64_t len);
/* Sends the head if not yet sent, then len body bytes. len or -errno
 * (-ETIMEDOUT: send timeout; -EPIPE / -ECONNRESET: the client left).
 * Yields while the socket is full. */
SP_API ssize_t sp_res_write(sp_res *r, const void *buf, size_t len);
/* printf-style sp_res_write. The count or -errno. */
SP_API ssize_t sp_res_printf(sp_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SP_API ssize_t sp_res_vprintf(sp_res *r, const char *fmt, va_list ap);
/* A whole response in one writev: status, Content-Type (may be NULL) and
 * body. 0 or -errno. */
SP_API int sp_res_send(sp_res *r, int status, const char *content_type, const void *body,
                       size_t len);
/* Sends count bytes of the open file fd from offset off as the body (with
 * sendfile: no copy through user space), after the head if not yet sent.
 * With no declared length the response is sp_res_length(count). 0 or
 * -errno (-ENODATA: the file is shorter than count). Yields. */
SP_API int sp_res_sendfile(sp_res *r, int fd, int64_t off, size_t count);
/* Ends the response (the last chunk, if chunked). 0 or -errno. */
SP_API int sp_res_finish(sp_res *r);

/* A field given as two NUL-terminated strings (sp_res_finish_trailers). */
typedef struct sp_field {
    const char *name;
    const char *value;
} sp_field;
/* 1 if trailer fields given to sp_res_finish_trailers now would reach the
 * client's side of the connection: on HTTP/2, unless the response has no
 * body (HEAD, 204, 304); on HTTP/1.1 only with chunked framing (no length
 * declared, not HTTP/1.0, not HEAD/204/304). Else 0. It does not look at
 * the request's TE: a client that did not send "TE: trailers" may drop
 * them (RFC 9110 §6.5.1 lets a server send them anyway): check it with
 * sp_req_header when that matters. */
SP_API int sp_res_trailers_possible(const sp_res *r);
/* Ends the response as sp_res_finish does, with n (at most 16) trailer
 * fields after the body (RFC 9110 §6.5): on HTTP/1.1 the last chunk's
 * trailer section, on HTTP/2 a HEADERS frame that ends the stream (names
 * lower-cased). Names are tokens and not fields that frame, route or
 * describe the content (Content-Length, Transfer-Encoding, Host, TE,
 * Trailer, Content-Type, Content-Encoding, Content-Range, Connection and
 * other hop-by-hop fields, Set-Cookie, Authorization, Cache-Control);
 * values as for sp_res_header; at most 4 KiB in all: else -EINVAL (or
 * -ENOSPC), nothing sent, the response not ended. Sends the head first if
 * it is not out (then chunked on HTTP/1.1). 0 when the fields went out;
 * 1 when sp_res_trailers_possible said 0: the fields are dropped and the
 * response ended as by sp_res_finish; or -errno. Yields. */
SP_API int sp_res_finish_trailers(sp_res *r, const sp_field *f, size_t n);

/* ---- Loadable applications (spindle --app module.so) ---------------------
 * A C application built as a shared object needs no main(): it names an
 * init function that adds its routes, with SP_APP_MODULE(init). spindle
 * refuses a module built against another SPINDLE_API_VERSION. Build with
 *   cc -shared -fPIC -I include -o app.so app.c
 * The init function runs once in the master, before the workers fork. */
typedef int (*sp_app_init_fn)(sp_server *s);
#define SP_APP_MODULE(init_fn)                                                                     \
    SP_API extern const int sp_app_api_version;                                                    \
    SP_API const int sp_app_api_version = SPINDLE_API_VERSION;                                     \
    SP_API int sp_app_init(sp_server *s);                                                          \
    SP_API int sp_app_init(sp_server *s) {                                                         \
        return (init_fn)(s);                                                                       \
    }

/* ---- Coroutine toolkit: periodic timers, channels, wait groups, mutexes
 * and conditions, outbound TCP, WebSockets ---------------------------------
 * Timeouts are in milliseconds: a negative timeout waits without limit, 0
 * only tries (-EAGAIN when it would have to wait). Every wait is a park
 * (yields). A coroutine that serves a connection (a request handler) is
 * also woken with -ECONNRESET when its client hangs up, so it does not wait
 * on, only to write into the void. All objects belong to the loop (thread)
 * that created them and are used from that thread only. */

typedef struct sp_timer sp_timer;

/* Runs fn(arg) every ms milliseconds (ms >= 1), each time on a new
 * coroutine, so fn may park. Ticks are due at start + k*ms and never
 * overlap: the next tick is scheduled when fn returns, at the next due
 * time still ahead (ticks that came due while fn ran are skipped, not
 * piled up). The first tick is ms from now. Returns the timer, or NULL
 * with errno (EINVAL, ENOMEM, ENXIO: this thread has no loop). Does not
 * yield. A pending timer keeps sp_loop_run running. */
SP_API sp_timer *sp_every(int64_t ms, void (*fn)(void *arg), void *arg);

/* Stops t: no tick starts after this; a tick that is running finishes and
 * t is freed when it returns (fn may cancel its own timer). t is invalid
 * after the call. Call it at most once, before the loop is freed. */
SP_API void sp_timer_cancel(sp_timer *t);

/* A channel of fixed-size elements between coroutines of one loop, copied
 * in and out. Senders and receivers that must wait are served in FIFO
 * order, and an element is handed to a waiting receiver directly, so a
 * latecomer cannot overtake a coroutine that waited. */
typedef struct sp_chan sp_chan;

/* A channel holding up to capacity elements (0: unbounded) of elem_size
 * bytes (>= 1). NULL with errno (EINVAL, ENOMEM). */
SP_API sp_chan *sp_chan_new(size_t capacity, size_t elem_size);

/* Copies *elem into the channel, waiting while it is full (yields).
 * Returns 0, -EPIPE (closed, now or while waiting), -ETIMEDOUT, -EAGAIN
 * (timeout 0 and full), -ECONNRESET (the handler's client hung up),
 * -ENOMEM (an unbounded channel could not grow) or -EPERM (would wait
 * outside a coroutine). From outside a coroutine it works when it need
 * not wait. */
SP_API int sp_chan_send(sp_chan *ch, const void *elem, int64_t timeout_ms);

/* Takes the oldest element into *elem, waiting while the channel is empty
 * (yields). Returns 0, -EPIPE (closed and drained), -ETIMEDOUT, -EAGAIN,
 * -ECONNRESET or -EPERM as for sp_chan_send. */
SP_API int sp_chan_recv(sp_chan *ch, void *elem, int64_t timeout_ms);

/* Closes ch: sends fail with -EPIPE from now on (waiting senders too, their
 * elements not delivered); receivers get what is buffered, then -EPIPE.
 * Idempotent; does not yield. */
SP_API void sp_chan_close(sp_chan *ch);

/* Elements buffered now. */
SP_API size_t sp_chan_len(const sp_chan *ch);

/* Frees ch (NULL is fine). Coroutines still waiting on it are woken with
 * -EPIPE and do not touch it again; no one may call it afterwards. */
SP_API void sp_chan_free(sp_chan *ch);

/* A wait group: a count of outstanding jobs and coroutines waiting for it
 * to reach zero. */
typedef struct sp_wg sp_wg;
/* A new group with count 0. NULL with errno. */
SP_API sp_wg *sp_wg_new(void);
/* Adds n (may be negative) to the count; at zero every waiter is woken.
 * -EINVAL (and no change) if the count would go below zero. */
SP_API int sp_wg_add(sp_wg *wg, int n);
/* sp_wg_add(wg, -1). */
SP_API int sp_wg_done(sp_wg *wg);
/* Waits until the count is zero (yields): 0 at once if it is. 0,
 * -ETIMEDOUT, -EAGAIN, -ECONNRESET or -EPERM (see the section's head). */
SP_API int sp_wg_wait(sp_wg *wg, int64_t timeout_ms);
/* Frees wg (NULL is fine); waiters are woken with -EPIPE. */
SP_API void sp_wg_free(sp_wg *wg);

/* A mutex between coroutines (not threads): held across parks, handed to
 * waiters in FIFO order. Owned by the coroutine that locked it. */
typedef struct sp_mutex sp_mutex;
SP_API sp_mutex *sp_mutex_new(void);
/* Locks m, waiting while another coroutine holds it (yields). 0,
 * -ETIMEDOUT, -EAGAIN (timeout 0 and held), -ECONNRESET, -EDEADLK (the
 * caller holds it already), -EPERM (outside a coroutine). */
SP_API int sp_mutex_lock(sp_mutex *m, int64_t timeout_ms);
/* Unlocks m; the oldest waiter gets it. 0, or -EPERM if the caller is not
 * the owner. Does not yield. */
SP_API int sp_mutex_unlock(sp_mutex *m);
/* Frees an unlocked mutex nobody waits for (NULL is fine). */
SP_API void sp_mutex_free(sp_mutex *m);

/* A condition variable for coroutines, used with an sp_mutex. */
typedef struct sp_cond sp_cond;
SP_API sp_cond *sp_cond_new(void);
/* Unlocks m (which the caller must hold: -EPERM otherwise), waits for a
 * signal, and locks m again before returning, whatever the result (the
 * re-lock waits without limit). 0 (signalled), -ETIMEDOUT, -ECONNRESET.
 * Signals are not remembered: test the predicate in a loop. Yields. */
SP_API int sp_cond_wait(sp_cond *c, sp_mutex *m, int64_t timeout_ms);
/* Wakes the oldest waiter / every waiter. Do not yield. */
SP_API void sp_cond_signal(sp_cond *c);
SP_API void sp_cond_broadcast(sp_cond *c);
/* Frees c (NULL is fine); waiters are woken as if signalled. */
SP_API void sp_cond_free(sp_cond *c);

/* An outbound TCP connection with cooperative I/O. */
typedef struct sp_sock sp_sock;

/* Connects to host (a name, an IPv4 address, or an IPv6 address with or
 * without brackets) on port, within timeout_ms for everything (< 0: no
 * limit besides the kernel's). A name is resolved with getaddrinfo on the
 * loop's thread pool (sp_run_blocking), which cannot be interrupted: a slow
 * resolver may hold the caller past the timeout. Each address is tried in
 * turn. Returns the socket (TCP_NODELAY set), or NULL with *err (if err is
 * non-NULL) set to -errno: -EPERM (outside a coroutine), -EINVAL,
 * -EADDRNOTAVAIL (name not found), -ETIMEDOUT, -ECONNREFUSED, ... Yields. */
SP_API sp_sock *sp_connect(const char *host, int port, int64_t timeout_ms, int *err);

/* Reads up to len bytes, waiting until some arrive (yields). The count, 0
 * at end of stream, or -errno (-ETIMEDOUT, -ECONNRESET; -EAGAIN when it
 * would wait outside a coroutine). A timeout of 0 gives -ETIMEDOUT at the
 * loop's next turn when nothing has arrived. */
SP_API ssize_t sp_sock_read(sp_sock *s, void *buf, size_t len, int64_t timeout_ms);

/* Writes all len bytes (yields while the socket is full). len or -errno
 * (-ETIMEDOUT: the whole write did not finish in time, part may have gone;
 * -EPIPE, -ECONNRESET). */
SP_API ssize_t sp_sock_write(sp_sock *s, const void *buf, size_t len, int64_t timeout_ms);

/* Shuts down the writing side (the peer reads end of stream). 0 or -errno. */
SP_API int sp_sock_shutdown(sp_sock *s);

/* Closes and frees s (NULL is fine). A coroutine parked on s is woken with
 * -ECANCELED. */
SP_API void sp_sock_close(sp_sock *s);

/* Topics: the bus (sp_bus_*). */
#include "spindle_bus.h"

/* WebSockets, static files and sessions. */
#include "spindle_features.h"

#ifdef __cplusplus
}
#endif

#endif
