/* http_conn.c — the connection driver: the coroutine that serves a
 * connection while it has bytes to read. It parses heads from the read
 * buffer, routes, runs the handler, finishes the response, drains what the
 * handler left of the body, and serves pipelined requests from the buffer
 * without another read; with nothing buffered it goes back to idle (no
 * stack, no buffer). Every close it starts while the client may still be
 * sending is a lingering close. */
#include "server/server.h"
#include "server/conn_io.h"

#include "base/log.h"
#include "server/exchange.h"
#include "server/h2.h"
#include "server/stats.h"
#include "http/path_norm.h"
#include "http/proxy_proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINGER_MAX_BYTES (1u << 20)

void http_conn_linger_close(sp_server *s, conn *c) {
    /* Our response is out; stop sending, read and drop what the client is
     * still sending so its kernel does not see a reset and discard our
     * answer, for a bounded time and amount. */
    if (shutdown(c->w.fd, SHUT_WR) == 0) {
        char scratch[4096];
        char *b = c->buf ? c->buf : scratch;
        size_t cap = c->buf ? s->buf_size : sizeof scratch;
        int64_t deadline = server_deadline(s, s->opt.linger_timeout_ms);
        size_t dropped = 0;
        while (dropped < LINGER_MAX_BYTES) {
            ssize_t n = conn_read(s->l, c, b, cap, deadline);
            if (n <= 0)
                break;
            dropped += (size_t)n;
        }
    }
    server_conn_close(s, c);
}

/* Answers a request that could not be parsed or accepted, then closes. */
static void refuse(sp_server *s, conn *c, sp_req *req, int status) {
    /* The head may be half parsed: answer as HTTP/1.1, with a body. */
    req->head.minor_version = 1;
    req->head.method_id = HTTP_M_OTHER;
    req->head.nfields = 0;
    if (!req->head.method_len)
        req->head.method = NULL;
    sp_res res;
    res_init(&res, req, c);
    int rc = res_send_error(&res, status, 1, NULL);
    stats_record(s, req, &res, status, 0, res.written, 0);
    if (rc < 0) {
        server_conn_close(s, c);
        return;
    }
    http_conn_linger_close(s, c);
}

#define HEAD_IDLE (-1) /* read_head: nothing to read yet, go idle */

/* --proxy-protocol: the header at the start of the buffer names the client,
 * who then stands as the peer for everything after it (sp_req_peer, the
 * access log, REMOTE_ADDR, and --forwarded-allow-ips for its own forwarded
 * headers). 1 when taken, 0 when more bytes must come, -1 when the
 * connection must close: the peer does not speak the protocol, so no HTTP
 * answer would be understood. Out of line: only the first read calls it. */
__attribute__((noinline)) static int take_proxy_header(sp_server *s, conn *c, size_t avail) {
    static int64_t last;
    static uint64_t suppressed;
    proxy_hdr h;
    int n = proxy_parse((const uint8_t *)c->buf + c->buf_off, avail, &h);
    if (n == PROXY_NEED_MORE)
        return 0;
    if (n < 0) {
        char ip[INET6_ADDRSTRLEN] = "unix";
        if (c->peer_family == AF_INET || c->peer_family == AF_INET6)
            inet_ntop(c->peer_family, c->peer_ip, ip, sizeof ip);
        log_ratelimited(&last, &suppressed, LOG_WARNING,
                        "connection from %s closed: it did not begin with a valid PROXY "
                        "protocol header (with --proxy-protocol or --bind proxy:// the proxy "
                        "must send one: HAProxy's send-proxy or send-proxy-v2)",
                        ip);
        return -1;
    }
    c->buf_off += (uint32_t)n;
    c->proxy_wait = 0;
    if (h.family == AF_INET || h.family == AF_INET6) {
        memcpy(c->peer_ip, h.src, sizeof c->peer_ip);
        c->peer_port = h.src_port;
    } else if (h.family == AF_UNIX) {
        memset(c->peer_ip, 0, sizeof c->peer_ip);
        c->peer_port = 0;
    }
    if (h.family != AF_UNSPEC) {
        c->peer_family = (uint8_t)h.family;
        c->peer_trusted = (uint8_t)fwd_peer_trusted(&s->fwd, c->peer_family, c->peer_ip);
    } else {
        /* UNKNOWN, LOCAL: the proxy stays the peer, but it names no client
         * (its own health check, or a connection it cannot describe), so it
         * vouches for nothing: the request's forwarded headers came from
         * whoever is on the far side and must not name the client. */
        c->peer_trusted = 0;
    }
    return 1;
}

/* Reads until a whole head is in the buffer. Returns the head length (> 0),
 * minus a status to answer, HEAD_IDLE when no byte of a request has come
 * yet, or 0 when the connection was closed quietly. */
static int read_head(sp_server *s, conn *c, http_request *head) {
    http_limits lim = {.head_max = s->opt.head_max,
                       .target_max = s->opt.target_max,
                       .fields_max = s->opt.fields_max};
    /* The whole head within header_timeout, however it trickles in; a fresh
     * connection's clock started at accept (its idle timer's deadline). */
    int64_t deadline =
        c->nreq == 0 ? c->idle_timer.when : server_deadline(s, s->opt.header_timeout_ms);
    size_t prev = 0;
    for (;;) {
        size_t avail = c->buf_len - c->buf_off;
        if (__builtin_expect(c->proxy_wait, 0)) {
            int taken = avail ? take_proxy_header(s, c, avail) : 0;
            if (taken < 0) {
                server_conn_close(s, c);
                return 0;
            }
            if (taken)
                continue; /* the client's own bytes may follow in the buffer */
        } else if (avail) {
            int rc = http_parse_request(c->buf + c->buf_off, avail, prev, head, &lim);
            if (rc != HTTP_NEED_MORE)
                return rc;
            prev = avail;
        }
        if (c->buf_off) {
            memmove(c->buf, c->buf + c->buf_off, avail);
            c->buf_off = 0;
            c->buf_len = (uint32_t)avail;
        }
        size_t room = s->buf_size - c->buf_len;
        if (room == 0) {
            if (!c->proxy_wait)
                return -431;
            server_conn_close(s, c); /* a PROXY header longer than the buffer */
            return 0;
        }
        if (c->buf_len == 0) {
            /* Nothing of this request yet: look without waiting; if nothing
             * is there, wait as an idle connection (no stack, no buffer). */
            ssize_t n = conn_try_read(c, c->buf, room);
            if (n > 0) {
                c->buf_len = (uint32_t)n;
                c->maybe_more = conn_more_may_wait(c, (size_t)n, room);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                c->maybe_more = 0;
                return HEAD_IDLE;
            }
            server_conn_close(s, c);
            return 0;
        }
        ssize_t n = conn_read(s->l, c, c->buf + c->buf_len, room, deadline);
        if (n > 0) {
            c->buf_len += (uint32_t)n;
            c->maybe_more = conn_more_may_wait(c, (size_t)n, room);
            continue;
        }
        if (n == -ETIMEDOUT && avail && !c->proxy_wait)
            return -408; /* part of a head, then silence: slowloris */
        /* End of stream, an error, or a timeout with nothing sent: there
         * is nobody to answer. */
        server_conn_close(s, c);
        return 0;
    }
}

/* Accounts one request: stats, access log. */
static uint64_t record_bytes_in(const sp_req *req, uint32_t head_len) {
    const http_request *h = &req->head;
    uint64_t body_in = h->framing == HTTP_BODY_LENGTH    ? h->content_length - req->body_left
                       : h->framing == HTTP_BODY_CHUNKED ? req->chunked.total
                                                         : 0;
    return head_len + body_in;
}

static void record(sp_server *s, const sp_req *req, const sp_res *res, uint32_t head_len,
                   uint64_t t0) {
    stats_record(s, req, res, res->head_sent ? res->status : 0, record_bytes_in(req, head_len),
                 res->written, t0);
}

/* Closes after a request: lingering while an unread body may still come. */
static void close_after(sp_server *s, conn *c, const sp_req *req) {
    if (!req->body_done)
        http_conn_linger_close(s, c);
    else
        server_conn_close(s, c);
}

/* Ends the exchange after the handler returned rc: an error answer, the
 * end of the response, the accounting, and whether the connection stays.
 * 1 to keep it, 0 when it has been closed. */
static int end_exchange(sp_server *s, conn *c, sp_req *req, sp_res *res, int rc, uint32_t head_len,
                        uint64_t t0) {
    const http_request *h = &req->head;
    if (res->taken_over) {
        /* A WebSocket (or another protocol) had the connection: let it
         * clean up, then close; it is never reused for HTTP. */
        if (res->release)
            res->release(res->release_arg);
        record(s, req, res, head_len, t0);
        server_conn_close(s, c);
        return 0;
    }
    if (rc == -ECONNRESET && ((c->w.hup & (LOOP_RDHUP | LOOP_HUP) && !req->body_error) ||
                              req->body_errno == -ECONNRESET)) {
        /* The handler gave up because the client hung up while it waited
         * (or closed mid-body): nobody to answer, and no error to report.
         * Logged as nginx does, 499, so the access log and --stats tell a
         * departed client from a request that was never answered. */
        stats_record(s, req, res, res->head_sent ? res->status : SP_STATUS_CLIENT_CLOSED,
                     record_bytes_in(req, head_len), res->written, t0);
        server_conn_close(s, c);
        return 0;
    }
    if (rc < 0 && !res->head_sent && !res->failed) {
        int status = req->body_error ? req->body_error : 500;
        if (!req->body_error && !res->status_refused)
            log_msg(LOG_ERROR, "handler for %.*s %.*s failed: %s; answered 500", (int)h->method_len,
                    h->method, (int)h->target_len, h->target, strerror(-rc));
        res_send_error(res, status, req->body_error != 0, NULL);
    } else if (rc < 0 && !res->failed) {
        /* The response started and cannot be completed: closing is the only
         * honest end (a last chunk would make a cut body look complete). */
        record(s, req, res, head_len, t0);
        close_after(s, c, req);
        return 0;
    }
    if (!res->finished && !res->failed)
        sp_res_finish(res);
    record(s, req, res, head_len, t0);
    if (res->failed) {
        server_conn_close(s, c); /* the client is gone or not reading */
        return 0;
    }
    if (res->out.framing == HTTP_OUT_LENGTH && res->written < (uint64_t)res->declared)
        res->force_close = 1;
    /* A response that went out promising keep-alive keeps its promise even
     * if the stop came meanwhile (the handler yielded after its head): the
     * client may already be sending its next request on it. The connection
     * is then like any idle one at a stop: answered once more, with
     * Connection: close, or closed at its keep-alive timeout. Closing it
     * here cost a reload under wrk one request in 100,000. */
    int keep = res->out.keep_alive && !res->force_close;
    if (keep && !req->body_done)
        keep = !req->expect_pending && req_drain(req, s->opt.drain_max);
    if (!keep)
        close_after(s, c, req);
    return keep;
}

/* Serves one request whose bytes are (at least partly) buffered. Returns 1
 * to keep the connection, 0 when it has been closed after a request, -1
 * when no request came (the connection went back to idle, or closed). */
static int serve_one(sp_server *s, conn *c, sp_req **parked) {
    /* The request and response are small (the response's fields start in
     * a store of their own, handler.h), and the request's fields and path
     * are in the buffer's front (CONN_FIELDS, server.h): a handler that
     * parks keeps the stack's top page only, its frames and these. */
    sp_req x_req;
    sp_res x_res;
    sp_req *const reqp = &x_req;
    sp_res *const resp = &x_res;
    http_field *const fields = conn_fields(s, c);
    http_field *fv = fields;
    size_t fcap = CONN_FIELDS;
    if (s->opt.fields_max > fcap) {
        fcap = s->opt.fields_max;
        fv = malloc(fcap * sizeof *fv);
        if (!fv) {
            server_conn_close(s, c);
            return 0;
        }
    }
#define req (*reqp)
    req_init(&req, s, c, &http1_ops, NULL);
    req.head.fields = fv;
    req.head.fields_cap = fcap;
    int keep = 0;
    char *pb, *pb_heap = NULL; /* the normalized path: after the fields, or malloc'ed */

    int rc = read_head(s, c, &req.head);
    if (rc == 0) {
        keep = -1; /* closed before a request came: nothing was served */
        goto out;
    }
    if (rc == HEAD_IDLE) {
        server_conn_idle(s, c);
        keep = -1; /* the coroutine ends; the connection waits, idle */
        goto out;
    }
    if (rc < 0) {
        if (c->nreq == 0 && h2_is_preface(c)) {
            if (!s->http2_off) {
                h2_serve(s, c); /* the HTTP/2 preface: the connection is h2c now */
                keep = -1;
                goto out;
            }
            rc = -505; /* --http2 off: the version is not supported */
        }
        refuse(s, c, &req, -rc);
        goto out;
    }
    c->buf_off += (uint32_t)rc;
    uint32_t head_len = (uint32_t)rc;
    uint64_t t0 = s->timed ? stats_clock_ns() : 0;
    /* The path goes just after the fields the head used, not in a 4 KiB
     * array of its own: its bytes sit with the request's fields. */
    size_t room = (fcap - req.head.nfields) * sizeof *fv;
    if (req.head.target_len < room) {
        pb = (char *)(fv + req.head.nfields);
    } else if (!(pb = pb_heap = malloc(req.head.target_len + 1))) {
        refuse(s, c, &req, 503);
        goto out;
    }
    int status = exchange_prepare(s, &req, pb);
    if (status) {
        refuse(s, c, &req, status);
        goto out;
    }
#define res (*resp)
    res_init(&res, &req, c);
    *parked = &req; /* a long wait in the handler gives the buffer back (req_park.c) */
    rc = exchange_dispatch(s, &req, &res);
    *parked = NULL;
    keep = end_exchange(s, c, &req, &res, rc, head_len, t0);
out:
    req_run_deferred(&req);
    if (pb_heap)
        free(pb_heap);
    if (fv != fields)
        free(fv);
    return keep;
#undef req
#undef res
}

/* Serves c as HTTP/1.1 on the calling coroutine (the exchange's, which
 * chose the protocol and holds the buffer), request after request, until
 * it closes, goes idle, or a preface hands it to HTTP/2. */
void http_conn_serve(sp_server *s, conn *c, sp_req **parked) {
    int burst = 0;
    for (;;) {
        int kept = serve_one(s, c, parked);
        if (kept < 0)
            return; /* idle: nothing was served */
        if (s->max_requests && ++s->served == s->max_requests && !s->stopping) {
            log_msg(LOG_INFO, "served %llu requests (--max-requests): stopping to be replaced",
                    (unsigned long long)s->served);
            sp_server_stop(s);
        }
        if (!kept)
            return;
        if (!c->buf) { /* a long wait could not get a buffer back (req_park.c) */
            server_conn_close(s, c);
            return;
        }
        c->nreq++;
        if (c->buf_off < c->buf_len) {
            /* Pipelined: parse the next one from the buffer, yielding now and
             * then so one client cannot starve the others. */
            if (++burst >= s->opt.pipeline_burst) {
                burst = 0;
                sp_yield();
            }
            continue;
        }
        c->buf_off = c->buf_len = 0;
        /* The last read filled the buffer, so more may sit in the socket
         * with no edge to announce it: read_head looks once, and goes idle
         * itself if there is nothing. */
        if (c->maybe_more)
            continue;
        server_conn_idle(s, c);
        return;
    }
}
