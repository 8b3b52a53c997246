/* server.h — the server's internal side, shared by server.c (listeners,
 * accepting, the connection table, idle connections), http_conn.c (the
 * per-request driver), request.c and response.c (the handler API). */
#ifndef SPINDLE_SERVER_H
#define SPINDLE_SERVER_H

#include "base/buf_pool.h"
#include "http/http_chunked.h"
#include "http/http_parse.h"
#include "http/http_write.h"
#include "loop/loop.h"
#include "net/net.h"
#include "server/forwarded.h"
#include "server/router.h"
#include "process/worker_slot.h"
#include "spindle.h"

#include <netinet/in.h>
#include <stddef.h>

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define SERVER_MAX_LISTENERS       16
#define SERVER_ACCEPT_BATCH        64
#define SERVER_ACCEPT_BATCH_SHARED 4
#define RES_MAX_FIELDS             64
#define RES_FIELD_BYTES            8192
#define REQ_MAX_DEFER              4

typedef enum conn_state {
    CONN_FREE = 0, /* table slot unused */
    CONN_IDLE,     /* open, no coroutine, no buffer: waiting for bytes */
    CONN_ACTIVE,   /* a coroutine serves it */
} conn_state;

/* One connection, in the table indexed by fd. Small on purpose: an idle
 * keep-alive connection costs this and its kernel socket, nothing more. */
typedef struct conn {
    loop_watch w;          /* w.data is the server */
    loop_timer idle_timer; /* keep-alive / first-request timeout; data: the server */
    char *buf;             /* read buffer from the pool, only while active */
    uint32_t buf_len;      /* bytes in buf */
    uint32_t buf_off;      /* first unconsumed byte */
    uint32_t nreq;         /* requests served */
    uint8_t state;
    uint8_t maybe_more; /* the last read filled the buffer: the socket may hold
                           more that no new edge will announce */
    uint8_t peer_family;
    uint8_t peer_trusted; /* forwarded_allow_ips matched the peer */
    uint16_t peer_port;
    uint8_t peer_ip[16];
} conn;
_Static_assert(sizeof(conn) <= 160, "conn is in a table of one per fd: keep it small");

typedef struct listener {
    loop_watch w;
    net_addr addr;
    int paused;
} listener;

struct sp_server {
    sp_server_options opt;
    router routes;
    listener listeners[SERVER_MAX_LISTENERS];
    int nlisteners;
    loop *l;
    conn *conns; /* indexed by fd */
    int nconns_cap;
    int nconns;
    int stopping;
    int accept_paused; /* max_connections reached or out of fds */
    loop_timer accept_timer;
    loop_timer tick; /* once a second: date, buffer trim */
    buf_pool bufs;
    size_t buf_size;
    http_date_cache date;
    fwd_nets fwd; /* forwarded_allow_ips, parsed */
    int64_t log_last;
    uint64_t log_suppressed;
    int accept_exclusive;  /* several workers share the listeners: EPOLLEXCLUSIVE */
    uint64_t max_requests; /* stop gracefully after this many (--max-requests) */
    uint64_t served;
    worker_slot *slot;      /* this worker's slot in the master's shared memory, or NULL */
    worker_slot *slots_all; /* every worker's, for --stats */
    int nslots;
    volatile int *slots_used;      /* slots ever used (<= nslots), in shared memory */
    worker_stats *retired;         /* dead workers' counters, folded by the master */
    struct access_log *access_log; /* opened in each worker */
    const char *access_log_path, *access_log_format;
    int timed; /* requests are timed: an access log or --stats is on */
    /* Who drives the loop in sp_server_run: NULL for the plain loop, or a
     * binding's own (the Python hub), which calls server_start/done/finish. */
    int (*drive)(sp_server *s, void *ud);
    void *drive_ud;
    /* Called in each worker process after the fork, before serving (the
     * Python binding imports the application there). 0 or -errno. */
    int (*worker_init)(sp_server *s, void *ud);
    void *worker_init_ud;
    /* Around the master's fork (the Python binding tells the interpreter):
     * FORK_BEFORE, then FORK_PARENT in the master or FORK_CHILD in the new
     * worker. */
    void (*fork_hook)(int phase, void *ud);
    void *fork_hook_ud;
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
    struct sess_cfg *sessions; /* sp_sessions_configure, or NULL */
};

enum { FORK_BEFORE, FORK_PARENT, FORK_CHILD };

/* ---- the request and response, on the serving coroutine's stack ------- */
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
    uint8_t expect_pending; /* 100-continue not yet sent */
    int body_error;         /* status a failed body read calls for */
    int body_errno;         /* what sp_read returned then */
    char peer_text[64];
    char client_text[64];
    /* run when the request is over, last registered first (req_defer) */
    struct {
        void (*fn)(void *arg);
        void *arg;
    } defer[REQ_MAX_DEFER];
    int ndefer;
};

struct sp_res {
    sp_req *req;
    conn *c;
    int status;
    http_field fields[RES_MAX_FIELDS];
    size_t nfields;
    size_t field_bytes;
    int64_t declared; /* Content-Length given, or -1 */
    uint64_t written;
    uint8_t head_sent, finished, failed;
    uint8_t force_close; /* the connection must close after this response */
    uint8_t taken_over;  /* a handler owns the connection now (WebSocket) */
    void (*release)(void *arg);
    void *release_arg;
    http_out out;
    char store[RES_FIELD_BYTES];
};

/* How many of slots_all are worth scanning. */
static inline int server_slots_used(const sp_server *s) {
    return s->slots_used ? *s->slots_used : s->nslots;
}

/* server.c */
/* Sets (or, on reload, replaces) the options, zero meaning the default.
 * 0, or -EINVAL for a bad forwarded_allow_ips list. */
int server_set_options(sp_server *s, const sp_server_options *o);
/* Serving on loop l, in steps: start (listeners on, connection table),
 * then the caller turns the loop until server_done, then finish. */
int server_start(sp_server *s, loop *l);
int server_done(const sp_server *s);
void server_finish(sp_server *s);
/* Serves an already connected socket as if just accepted (fuzzing and
 * tests drive the real connection code through a socketpair). The server
 * must be started (server_start). 0 or -errno. */
int server_adopt_conn(sp_server *s, int fd);
/* Adds an inherited listening socket (socket activation, upgrade). */
int server_adopt_listener(sp_server *s, int fd);
/* Calls fn(s, ud) when s begins to stop (sp_server_stop), for modules that
 * hold connections the driver does not see (WebSockets). Registering the
 * same fn and ud again is a no-op. 0, or -ENOSPC beyond 4. */
int server_on_stop(sp_server *s, void (*fn)(sp_server *s, void *ud), void *ud);
/* Closes this process's listening sockets (a stopping server). */
void server_close_listeners(sp_server *s);
void server_conn_close(sp_server *s, conn *c);
/* From the connection's coroutine, about to end: back to idle (buffer
 * returned, keep-alive timer armed). */
void server_conn_idle(sp_server *s, conn *c);
int64_t server_deadline(const sp_server *s, int timeout_ms);
const char *server_date(sp_server *s);

/* http_conn.c: the coroutine that serves a connection with bytes to read. */
void http_conn_main(void *arg);
/* Closes after an error: shut down writing, discard input for a bounded
 * time, close. From the connection's coroutine. */
void http_conn_linger_close(sp_server *s, conn *c);

/* request.c */
void req_init(sp_req *r, sp_server *s, conn *c);
/* sp_read without I/O: what the buffer holds (count), 0 at the end of the
 * body, -EAGAIN when reading would need the socket, or the body error. */
ssize_t req_read_buffered(sp_req *r, void *buf, size_t len);
/* Runs fn(arg) when the request is over, whatever the handler did: the
 * request-scoped cleanups of modules built on the API (sessions). 0, or
 * -ENOSPC beyond REQ_MAX_DEFER. */
int req_defer(sp_req *r, void (*fn)(void *arg), void *arg);
/* The arg of the first cleanup registered with fn, or NULL: a module finds
 * the object it made for this request. */
void *req_deferred(const sp_req *r, void (*fn)(void *arg));
/* Runs and forgets the cleanups (the connection driver, at the end). */
void req_run_deferred(sp_req *r);
/* Discards the rest of the body, at most max bytes: 1 if it all went. */
int req_drain(sp_req *r, uint64_t max);

/* response.c */
void res_init(sp_res *res, sp_req *req, conn *c);
/* Forgets the header fields and declared length set so far (the head is
 * not out yet): an error answer or a WSGI start_response replaces them. */
void res_clear_head(sp_res *res);
/* A complete error response (text body), with Connection: close when asked. */
int res_send_error(sp_res *res, int status, int close, const char *allow);

#endif
