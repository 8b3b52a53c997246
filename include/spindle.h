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

/* The API version a module is built against (--app modules declare it). */
#define SPINDLE_API_VERSION 1

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
    int send_timeout_ms;             /* client not reading the response; 30000 (close) */
    int keepalive_timeout_ms;        /* idle between requests; 5000 (silent close) */
    int linger_timeout_ms;           /* lingering close after an error; 2000 */
    int max_connections;             /* per worker; 10000 (more wait in the backlog) */
    int backlog;                     /* listen backlog; 4096 */
    int pipeline_burst;              /* pipelined requests served before yielding; 16 */
    size_t stack_size;               /* coroutine stack; 65536 */
    int no_guard_pages;              /* stacks without guard pages (README, "Limits") */
    const char *forwarded_allow_ips; /* proxies trusted for X-Forwarded-For and
                                        Forwarded: "ip,cidr,...", "*" for all;
                                        NULL: none */
} sp_server_options;

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
/* 0 for HTTP/1.0, 1 for HTTP/1.1. */
SP_API int sp_req_minor_version(const sp_req *r);
/* The body length from Content-Length; -1 if chunked; 0 if no body. */
SP_API int64_t sp_req_content_length(const sp_req *r);
/* The peer's address ("1.2.3.4:5678", "[::1]:80", "unix"), NUL-terminated. */
SP_API const char *sp_req_peer(const sp_req *r);
/* The client's address: the peer's, or, when the peer is a trusted proxy
 * (forwarded_allow_ips), the nearest untrusted address in Forwarded or
 * X-Forwarded-For. NUL-terminated, without a port. */
SP_API const char *sp_req_client_addr(const sp_req *r);

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

/* Sets the status (100..599). -EINVAL, or -EALREADY once the head is sent. */
SP_API int sp_res_status(sp_res *r, int status);
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

#ifdef __cplusplus
}
#endif

#endif
