/* handler.h — what a feature module built on the handler API may use
 * (static files, WebSockets, sessions): the request and response as the
 * driver keeps them, request-scoped cleanups, a per-server slot, a stop
 * hook, and taking a connection over. Features include this, never
 * server.h, and the server core never includes a feature. */
#ifndef SPINDLE_HANDLER_H
#define SPINDLE_HANDLER_H

#include "http/http_chunked.h"
#include "http/http_parse.h"
#include "http/http_write.h"
#include "server/conn.h"
#include "server/router.h"
#include "spindle.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define RES_MAX_FIELDS  64
#define RES_FIELD_BYTES 8192
/* What a response holds in itself: past these, its fields and their bytes
 * move to a block of RES_MAX_FIELDS and RES_FIELD_BYTES (response.c), so
 * the response is small on the stack of a handler that parks. */
#define RES_INLINE_FIELDS 12
#define RES_INLINE_BYTES  512
#define REQ_MAX_DEFER     4

/* ---- the request and response, on the serving coroutine's stack ------- */

/* An exchange's stream as bytes both ways once a feature took it over (a
 * WebSocket over HTTP/2, RFC 8441), on x, the request's exchange state
 * (req_tunnel). Each may park the calling coroutine. */
typedef struct exchange_tunnel {
    /* The 2xx head from res (status, fields), the stream left open. 0 or -errno. */
    int (*open)(sp_res *res);
    /* Up to len bytes by deadline: > 0, 0 at the peer's end of the stream,
     * -ECONNRESET when it is reset or gone, -ETIMEDOUT, or the result a
     * loop_wake on the reading task gave. Read bytes reopen the window. */
    ssize_t (*read)(void *x, void *buf, size_t len, int64_t deadline);
    /* A long wait, after read timed out once: by deadline until read would
     * not wait (bytes in, the peer's end, a reset), 0, -ETIMEDOUT or the
     * result a loop_wake gave. With no bytes in, the stream's own buffer
     * for them gives its pages back meanwhile (the reader's has gone). */
    int (*wait)(void *x, int64_t deadline);
    /* All of iov queued by deadline (each piece waiting for the peer's
     * window): the byte count, or -EPIPE (gone), -ETIMEDOUT (the stream is
     * reset then), or the result a wake_writer gave. */
    ssize_t (*writev)(void *x, const struct iovec *iov, int n, int64_t deadline);
    /* Wakes a writer parked in writev with result (< 0: it gives up). */
    void (*wake_writer)(void *x, int result);
    /* Ends our side once: the stream's end after what was queued (abort 0)
     * or a reset (1). */
    void (*close)(void *x, int abort);
} exchange_tunnel;

/* The exchange's protocol: where a request's body comes from and its
 * response goes. Each protocol fills one table — HTTP/1.1 on the connection
 * (http1_ops, http1_ops.c), HTTP/2 on a stream (h2_ops, h2_stream.c) — and
 * every request points at one (req->xops, never NULL), so request.c and
 * response.c keep the handler API's checks and call through the table with
 * no test of which protocol it is. The sink sees the response's status,
 * fields and declared length in res when the head goes out. */
typedef struct exchange_ops {
    /* The head if it is not out yet, then data; last: nothing follows. */
    int (*send)(sp_res *res, const void *data, size_t len, int last);
    /* count bytes of fd from off (counted in res->written), head first. */
    int (*sendfile)(sp_res *res, int fd, int64_t off, size_t count);
    /* The end of the response (the head first if it is not out yet). */
    int (*finish)(sp_res *res);
    /* An interim response (103 Early Hints) with these fields, checked. */
    int (*interim)(sp_res *res, int status, const http_field *f, size_t n);
    /* The end of the response with trailer fields (checked, n <= 16). */
    int (*trailers)(sp_res *res, const sp_field *f, size_t n);
    /* sp_read (wait 1) and req_read_buffered (wait 0: -EAGAIN, no I/O),
     * once request.c has ruled out a failed or ended body and len 0. */
    ssize_t (*read)(sp_req *r, void *buf, size_t len, int wait);
    /* -- added with HTTP/1.1's own table (issue 29): -- */
    /* Whether trailers can still follow this response's body (response.c
     * has ruled out HEAD, 204, 304 and a finished response). */
    int (*trailers_possible)(const sp_res *res);
    /* res_take_over: the transport becomes the handler's (HTTP/1.1: the
     * connection, after the 101 it writes itself). 0, or -ENOTSUP where the
     * protocol has no such takeover (HTTP/2: only its RFC 8441 streams,
     * whose bytes then go through tunnel). */
    int (*upgrade)(sp_res *res);
    const exchange_tunnel *tunnel; /* or NULL: no stream to take over (HTTP/1.1) */
    int major;                     /* the HTTP version's major: 1 or 2 (req_http_major) */
    const char *proto;             /* the access log's protocol field ("HTTP/2.0"), or
                                    * NULL: written from head.minor_version (HTTP/1.x) */
} exchange_ops;

struct sp_req {
    sp_server *srv;
    conn *c;
    http_request head;
    sp_str path, query;
    const route_match *match;
    /* body */
    uint64_t body_left;   /* Content-Length framing: bytes still to come */
    http_chunked chunked; /* chunked framing */
    const char *pend;     /* decoded chunk data not yet handed out */
    size_t pend_len;
    uint8_t body_done;
    uint8_t expect_pending;   /* 100-continue not yet sent */
    int body_error;           /* status a failed body read calls for */
    int body_errno;           /* what sp_read returned then */
    int64_t body_credit_us;   /* waiting for body bytes the client has paid for (request.c) */
    int64_t drain_deadline;   /* when draining: the whole drain's end (loop ms), else 0 */
    const exchange_ops *xops; /* its protocol (never NULL: req_init) */
    void *xctx;               /* the protocol's own state (the h2 stream) */
    char peer_text[64];
    char client_text[64];
    /* run when the request is over, last registered first (req_defer) */
    struct {
        void (*fn)(void *arg);
        void *arg;
    } defer[REQ_MAX_DEFER];
    int ndefer;
    char *head_copy; /* the head's bytes (fields, path) while the buffer went back (req_park.c) */
    char *park_copy; /* the buffer's bytes during a long wait */
    uint8_t sliced;  /* a slice into the buffer went to the handler (request.c) */
    uint8_t path_taken; /* a slice of the path did (sp_req_path, sp_req_param) */
};

/* Small (a parked handler's frames and its request and response fit the
 * stack's top page, http_conn.c): the fields start in fields_in, their
 * bytes in store_in filled from its top end (add_field), and move to a
 * malloc'ed block when they outgrow them. */
struct sp_res {
    sp_req *req;
    conn *c;
    int status;
    size_t nfields;
    size_t field_bytes;
    int64_t declared; /* Content-Length given, or -1 */
    uint64_t written;
    uint8_t head_sent, finished, failed;
    uint8_t force_close;    /* the connection must close after this response */
    uint8_t taken_over;     /* a handler owns the connection now (WebSocket) */
    uint8_t status_refused; /* the handler asked for a 1xx: 500, already logged */
    void (*release)(void *arg);
    void *release_arg;
    http_out out;
    http_field *fields; /* fields_in, or the block's RES_MAX_FIELDS */
    char *store_end;    /* the last field_bytes bytes before it are in use */
    http_field fields_in[RES_INLINE_FIELDS];
    char store_in[RES_INLINE_BYTES];
};

/* ---- the server, as a feature sees it (server.c) ------------------------ */

/* The loop s serves on (NULL before server_start), whether it is stopping,
 * its options, the size of a connection's read buffer. */
loop *server_loop(const sp_server *s);
int server_stopping(const sp_server *s);
const sp_server_options *server_options(const sp_server *s);
size_t server_buf_size(const sp_server *s);
/* A read buffer of server_buf_size bytes from the pool (NULL: no memory),
 * and back: for a feature that waits without holding the connection's. */
char *server_buf_get(sp_server *s);
void server_buf_put(sp_server *s, char *b);
/* The same for a buffer given up for a long wait: its pages go back to the
 * kernel too (buf_pool_put_cold). */
void server_buf_put_cold(sp_server *s, char *b);
/* Gives back the whole pages of b (in use) past its first used bytes, b
 * and its bytes staying put (buf_pool_shed): for a long wait. */
void server_buf_shed(sp_server *s, char *b, size_t used);
int64_t server_deadline(const sp_server *s, int timeout_ms);

/* A feature's own per-server state, found by key (the address of a static
 * object of the module, so keys never clash). Setting a key again replaces
 * the data, freeing the old with its free_fn; sp_server_free frees them
 * all. data NULL removes the key (freeing its data). 0, or -ENOSPC beyond
 * SERVER_MAX_EXT. */
#define SERVER_MAX_EXT 8
int server_ext_set(sp_server *s, const void *key, void *data, void (*free_fn)(void *data));
void *server_ext_get(const sp_server *s, const void *key);

/* Calls fn(s, ud) when s begins to stop (sp_server_stop), for modules that
 * hold connections the driver does not see (WebSockets). Registering the
 * same fn and ud again is a no-op. 0, or -ENOSPC beyond 4. */
int server_on_stop(sp_server *s, void (*fn)(sp_server *s, void *ud), void *ud);

/* ---- the request (request.c) -------------------------------------------- */

/* The request's HTTP version as the exchange carries it: 2 for an HTTP/2
 * stream, else 1 (HTTP/1.0 or 1.1 on the connection: head.minor_version).
 * Features and bindings ask this rather than how the exchange is wired. */
static inline int req_http_major(const sp_req *r) {
    return r->xops->major;
}
/* Its protocol as the access log and SERVER_PROTOCOL write it for HTTP/2
 * ("HTTP/2.0"), or NULL for HTTP/1.x (written from head.minor_version). */
static inline const char *req_protocol_label(const sp_req *r) {
    return r->xops->proto;
}

/* The exchange's tunnel (HTTP/2) and its state in *x, or NULL (HTTP/1.1,
 * whose connection a feature takes over itself). */
static inline const exchange_tunnel *req_tunnel(const sp_req *r, void **x) {
    *x = r->xctx;
    return r->xops->tunnel;
}

/* Runs fn(arg) when the request is over, whatever the handler did: the
 * request-scoped cleanups of modules built on the API (sessions). 0, or
 * -ENOSPC beyond REQ_MAX_DEFER. */
int req_defer(sp_req *r, void (*fn)(void *arg), void *arg);
/* The arg of the first cleanup registered with fn, or NULL: a module finds
 * the object it made for this request. */
void *req_deferred(const sp_req *r, void (*fn)(void *arg));
/* sp_read without I/O: what the buffer holds (count), 0 at the end of the
 * body, -EAGAIN when reading would need the socket, or the body error. */
ssize_t req_read_buffered(sp_req *r, void *buf, size_t len);

/* ---- the response (response.c) ------------------------------------------ */

/* Forgets the header fields and declared length set so far (the head is
 * not out yet): an error answer or a WSGI start_response replaces them. */
void res_clear_head(sp_res *res);
/* A complete error response (text body), with Connection: close when asked. */
int res_send_error(sp_res *res, int status, int close, const char *allow);

/* Called by a handler before it writes anything on the connection itself
 * (the head not yet sent). From then on:
 *  - the sp_res_* functions on res do nothing but return -EALREADY, and
 *    the driver neither sends nor finishes a response nor drains a body;
 *  - the caller owns the connection's read buffer (c->buf, with the bytes
 *    from c->buf_off to c->buf_len still unconsumed; it may read into it
 *    and move buf_off/buf_len) and writes on c->w itself;
 *  - when the handler returns, whatever it returns, the driver calls
 *    release(arg) on the handler's coroutine (it may park), then closes
 *    the connection at once (server_conn_close: no lingering, no reuse).
 * 0, or -ENOTSUP (nothing changed) when the request's protocol has no such
 * takeover (exchange_ops.upgrade: an HTTP/2 stream). */
int res_take_over(sp_res *res, void (*release)(void *arg), void *arg);

#endif
