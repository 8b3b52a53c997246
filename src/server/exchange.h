/* exchange.h — a request's life from its parsed head to its answer, the
 * same for every protocol: its path, query and body framing (prepare), and
 * routing it to its handler or answering 404/405/OPTIONS/421 (dispatch).
 * The protocols' drivers (http_conn.c, h2_stream.c) call these; the hot
 * parts are inline so HTTP/1.1's serve_one folds them in. The protocols a
 * connection may speak, and what the server asks of them at a close and at
 * a stop, are behind exchange_protocols (exchange.c). */
#ifndef SPINDLE_SERVER_EXCHANGE_H
#define SPINDLE_SERVER_EXCHANGE_H

#include "http/path_norm.h"
#include "server/server.h"

/* ---- the request's steps ------------------------------------------------ */

/* OPTIONS without a route of its own: 204 with what the path allows (for
 * "*": every method some route answers). */
int exchange_answer_options(sp_server *s, sp_req *req, sp_res *res, const char *allow, int star);

/* The request's path, query and body framing, from its parsed head. 0, or
 * the status to refuse it with. pb holds at least target_len + 1 bytes. */
__attribute__((always_inline)) static inline int exchange_prepare(sp_server *s, sp_req *req,
                                                                  char *pb) {
    const http_request *h = &req->head;
    const char *q;
    size_t qlen;
    long plen = path_normalize(h->target, h->target_len, pb, h->target_len + 1, &q, &qlen);
    if (plen < 0)
        return 400;
    req->path = (sp_str){pb, (size_t)plen};
    req->query = (sp_str){q, qlen};
    switch (h->framing) {
    case HTTP_BODY_LENGTH:
        if (s->opt.body_max && h->content_length > s->opt.body_max)
            return 413;
        req->body_left = h->content_length;
        req->body_done = h->content_length == 0;
        break;
    case HTTP_BODY_CHUNKED:
        http_chunked_init(&req->chunked, s->opt.body_max ? s->opt.body_max : UINT64_MAX, 0, 0);
        break;
    default:
        req->body_done = 1;
    }
    /* RFC 9110 §10.1.1: 100-continue from an HTTP/1.0 client is ignored. */
    req->expect_pending = h->expect_continue && !req->body_done && h->minor_version >= 1;
    return 0;
}

/* Routes the request and runs its handler (or answers 404/405/OPTIONS),
 * with the observer told around the handler. The handler's return. */
__attribute__((always_inline)) static inline int exchange_dispatch(sp_server *s, sp_req *req,
                                                                   sp_res *res) {
    char allow[256];
    const http_request *h = &req->head;
    int is_options = h->method_id == HTTP_M_OPTIONS;
    const router *rt = server_routes_for(s, req->c); /* its listener's own, or the server's */
    /* RFC 9110 §15.5.20: a connection whose SNI chose one certificate may
     * not be reused for a host that another certificate of ours serves. */
    if (req->c->tls && conn_tls_misdirected(req))
        return res_send_error(res, 421, 0, NULL);
    if (req->path.len == 1 && req->path.ptr[0] == '*') {
        if (!is_options)
            return res_send_error(res, 400, 1, NULL);
        return exchange_answer_options(s, req, res, "", 1);
    }
    route_match m;
    int st = router_match(rt, h->method, h->method_len, req->path.ptr, req->path.len, &m, allow,
                          sizeof allow);
    if (st == 0) {
        req->match = &m;
        if (s->obs.request_begin)
            s->obs.request_begin(s->obs.ud, h);
        int rc = m.r->fn(req, res, m.r->ud);
        if (s->obs.request_end)
            s->obs.request_end(s->obs.ud);
        req->match = NULL;
        return rc;
    }
    if (st == 405 && is_options)
        return exchange_answer_options(s, req, res, allow, 0);
    return res_send_error(res, st, 0, st == 405 ? allow : NULL);
}

/* ---- the protocols ------------------------------------------------------ */

/* The coroutine of a connection with bytes to read (spawned at accept and
 * when an idle one wakes): the TLS handshake if it is due, then the
 * protocol — HTTP/2 when ALPN chose h2 or the connection already is, else
 * HTTP/1.1 (http_conn_serve). */
void exchange_main(void *arg);

/* What the server asks of a protocol that drives connections of its own
 * (HTTP/1.1 is the connection's plain state and needs nothing here). */
typedef struct exchange_protocol {
    const char *name;
    /* Whether c is this protocol's now. */
    int (*owns)(const conn *c);
    /* c closes: free the protocol's state (before the socket goes). */
    void (*drop)(conn *c);
    /* The server begins to stop: tell the peers (HTTP/2's GOAWAY). */
    void (*server_stop)(sp_server *s);
    /* When idle c times out (HTTP/2 counts from its last stream, not its
     * last frame). */
    int64_t (*idle_deadline)(const conn *c);
    /* Idle c has been quiet a while (server.c's IDLE_KEEP_BUFFERS_MS): give
     * back the memory only a busy connection needs. Does not yield. */
    void (*quiet)(conn *c);
} exchange_protocol;

/* The protocol that owns c, or NULL for HTTP/1.1 (a connection's state of
 * its own, c->h2, tells: checked inline, so HTTP/1.1 pays one test). */
const exchange_protocol *exchange_owner(const conn *c);
static inline int exchange_is_plain(const conn *c) {
    return c->h2 == NULL;
}

/* Runs the drop of the protocol that owns c. */
static inline void exchange_conn_drop(conn *c) {
    if (!exchange_is_plain(c))
        exchange_owner(c)->drop(c);
}
/* Runs each protocol's server_stop. */
void exchange_server_stop(sp_server *s);
/* The idle deadline of the protocol that owns c, or fallback (HTTP/1.1). */
static inline int64_t exchange_idle_deadline(const conn *c, int64_t fallback) {
    return exchange_is_plain(c) ? fallback : exchange_owner(c)->idle_deadline(c);
}
/* Runs the quiet of the protocol that owns c (HTTP/1.1 keeps nothing). */
static inline void exchange_conn_quiet(conn *c) {
    if (!exchange_is_plain(c))
        exchange_owner(c)->quiet(c);
}

#endif
