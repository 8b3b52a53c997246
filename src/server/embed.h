/* embed.h — the whole of what a binding that drives the server's loop
 * itself (the Python hub) may use of the server beside spindle.h: serving in
 * steps, the hooks a binding installs (who drives the loop, start-up in
 * each worker, the fork), and accessor functions for the request and the
 * response (embed.c), whose structs stay behind handler.h: a binding sees
 * sp_req and sp_res as opaque, as libuv's users see a request's private
 * fields only through uv_req_get_data and the like. The loop it drives
 * (loop/loop.h) and the parsed head (http/http_parse.h, a pure codec's
 * types) come along. scripts/check_layers.py keeps handler.h, conn.h and
 * server.h out of everything a binding includes. */
#ifndef SPINDLE_EMBED_H
#define SPINDLE_EMBED_H

#include "http/http_parse.h"
#include "loop/loop.h"
#include "spindle.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Serving on loop l, in steps: start (listeners on, connection table),
 * then the caller turns the loop until server_done, then finish. */
int server_start(sp_server *s, loop *l);
int server_done(const sp_server *s);
void server_finish(sp_server *s);

/* Who drives the loop in sp_server_run: NULL for the plain loop, or a
 * binding's own (the Python hub), which calls server_start/done/finish. */
void server_set_drive(sp_server *s, int (*drive)(sp_server *s, void *ud), void *ud);
/* Called in each worker process after the fork, before serving (the
 * Python binding imports the application there). fn returns 0 or -errno. */
void server_set_worker_init(sp_server *s, int (*fn)(sp_server *s, void *ud), void *ud);
int server_worker_init(sp_server *s);
/* Around the master's fork (the Python binding tells the interpreter):
 * FORK_BEFORE, then FORK_PARENT in the master or FORK_CHILD in the new
 * worker. */
enum { FORK_BEFORE, FORK_PARENT, FORK_CHILD };
void server_set_fork_hook(sp_server *s, void (*fn)(int phase, void *ud), void *ud);
void server_fork_hook(sp_server *s, int phase);

/* Serves an already connected socket as if just accepted (fuzzing and
 * tests drive the real connection code through a socketpair). The server
 * must be started (server_start). 0 or -errno. */
int server_adopt_conn(sp_server *s, int fd);

/* ---- the handler API's functions a binding calls (declared in handler.h
 * too, for features: the compiler checks the two agree in every file of
 * src/server/, which sees both) ------------------------------------------- */
loop *server_loop(const sp_server *s);
int server_on_stop(sp_server *s, void (*fn)(sp_server *s, void *ud), void *ud);
ssize_t req_read_buffered(sp_req *r, void *buf, size_t len);
void res_clear_head(sp_res *res);
int res_send_error(sp_res *res, int status, int close, const char *allow);

/* ---- the request (embed.c) ---------------------------------------------- */

/* The parsed head: method, target, version, host, fields, framing. */
const http_request *req_get_head(const sp_req *r);
/* req_http_major and req_protocol_label (handler.h): 2 for an HTTP/2
 * stream, else 1; "HTTP/2.0", or NULL for HTTP/1.x. */
int req_get_http_major(const sp_req *r);
const char *req_get_protocol_label(const sp_req *r);
/* The body: all of it read; Content-Length bytes still to come; what
 * sp_read returned when it failed (0: it did not). */
int req_get_body_done(const sp_req *r);
uint64_t req_get_body_left(const sp_req *r);
int req_get_body_errno(const sp_req *r);

/* The connection a request came on, as a binding needs it (the environ's
 * REMOTE_ADDR/PORT, the scope's client, their caches). A copy. */
typedef struct req_conn_info {
    uint8_t peer_ip[16];
    uint16_t peer_port;
    uint8_t peer_family;  /* AF_INET, AF_INET6, AF_UNIX */
    uint8_t peer_trusted; /* forwarded_allow_ips matched the peer */
    uint8_t listener;     /* 1 + the index of the listener that accepted it */
    uint8_t tls;          /* a TLS connection */
    int fd;
} req_conn_info;
void req_get_conn(const sp_req *r, req_conn_info *out);
/* What a binding reads of every request, in one call (a WSGI call keeps it
 * in its job): the head (its address: valid while the request is), the
 * version (req_get_http_major, req_get_protocol_label), the connection. */
typedef struct req_info {
    const http_request *head;
    const char *protocol_label;
    int http_major;
    req_conn_info conn;
} req_info;
void req_get_info(const sp_req *r, req_info *out);
/* Whether the request's connection is TLS (without the rest of the copy). */
int req_get_tls(const sp_req *r);
/* sp_req_query and sp_req_host for a binding that copies what they give at
 * once (the environ, the scope): no slice is kept, so a long wait may still
 * move the buffer's bytes (req_park.c: a parked WebSocket's whole buffer). */
sp_str req_get_query(const sp_req *r);
sp_str req_get_host(const sp_req *r);
/* sp_req_path, likewise (the path moves with the fields at a long wait). */
sp_str req_get_path(const sp_req *r);
/* Asks the socket whether the client has left (EOF or a reset seen by a
 * peek), latching it as the loop would: for a call that blocked the loop a
 * while. 1 if it left, else 0. HTTP/1 only (0 for an HTTP/2 stream). */
int req_client_left(sp_req *r);

/* ---- the response (embed.c) --------------------------------------------- */

int res_get_head_sent(const sp_res *res);
int res_get_failed(const sp_res *res);
/* The Content-Length given (sp_res_length), or -1. */
int64_t res_get_declared(const sp_res *res);
/* The connection closes after this response (1), or need not (0). */
void res_set_force_close(sp_res *res, int close);
/* A mark in the head's fields (how many, their bytes), and res_clear_head
 * back to it: the fields added before the mark stay (spindle.session's
 * Set-Cookie across a WSGI start_response). */
typedef struct res_fields_mark {
    size_t nfields, field_bytes;
} res_fields_mark;
res_fields_mark res_get_fields_mark(const sp_res *res);
void res_clear_head_to(sp_res *res, res_fields_mark m);

#endif
