/* h2_stream.c — one HTTP/2 stream: its request runs in a coroutine of its
 * own through the same steps as an HTTP/1.1 request (path normalisation,
 * limits, router, stats, access log), with an exchange_ops that reads the
 * body from the stream's window-bounded buffer and queues the response for
 * nghttp2 (HEADERS, then DATA through a deferred data source: the
 * response buffer and its caps are h2_stream_out.c). */
#include "server/h2.h"

#include "base/log.h"
#include "http/http_chars.h"
#include "server/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PATH_STACK       2048 /* normalized paths longer than this are malloc'ed */
#define NV(n, nl, v, vl) ((nghttp2_nv){(uint8_t *)(n), (uint8_t *)(v), (nl), (vl), 0})

#define SPARES_KEPT 8 /* freed streams a busy connection keeps for its next ones */

h2_stream *h2_stream_new(h2_conn *hc, int32_t id) {
    const sp_server_options *o = &hc->s->opt;
    size_t fcap = o->fields_max + 1;                          /* + the Host an :authority becomes */
    size_t scratch = fcap * sizeof(http_field) + o->head_max; /* (a reload may change them) */
    if (hc->hscratch_len != scratch) {
        /* Only written before it is read: a head is up to --max-head-size. */
        free(hc->hscratch);
        hc->hscratch_len = (hc->hscratch = malloc(scratch)) ? scratch : 0;
        if (!hc->hscratch)
            return NULL;
    }
    h2_stream *st = hc->spares;
    char *out = NULL;
    size_t out_cap = 0;
    if (st) {
        hc->spares = st->spare_next; /* one of this connection's */
        hc->nspares--;
        out = st->out;
        out_cap = st->out_cap;
    } else if (!(st = malloc(sizeof *st))) {
        return NULL;
    }
    memset(st, 0, offsetof(h2_stream, hinline));
    st->out = out;
    st->out_cap = out_cap;
    st->hc = hc;
    h2_stream_out_held(st, (ssize_t)out_cap);
    st->id = id;
    loop_watch_init_virtual(&st->gone);
    st->hcap = o->head_max;
    st->head.fields = (http_field *)(void *)hc->hscratch;
    st->head.fields_cap = fcap;
    st->hbuf = hc->hscratch + fcap * sizeof(http_field);
    h2_head_init(&st->hh, &st->head, o->target_max);
    st->hh.chars_checked = 1; /* nghttp2 checked names and values (its HTTP messaging) */
    list_push_back(&hc->streams, &st->node);
    hc->nstreams++;
    return st;
}

int h2_stream_keep_head(h2_stream *st) {
    http_request *h = &st->head;
    size_t fb = h->nfields * sizeof(http_field);
    char *b = (char *)st->hinline;
    if (fb + st->hlen + 1 > sizeof st->hinline && !(b = st->hkept = malloc(fb + st->hlen + 1)))
        return -ENOMEM;
    http_field *f = (http_field *)(void *)b;
    char *bytes = b + fb;
    memcpy(bytes, st->hbuf, st->hlen);
    memcpy(f, h->fields, fb);
    h->fields = f;
    h->fields_cap = h->nfields;
    /* (an extended CONNECT's method, "GET", is no slice: it stays) */
    http_request_rebase(h, st->hbuf, st->hlen, bytes);
    st->hbuf = bytes;
    st->hcap = st->hlen;
    return 0;
}

void h2_stream_free(h2_stream *st) {
    h2_conn *hc = st->hc;
    list_remove(&hc->streams, &st->node);
    hc->nstreams--;
    if (hc->nstreams == 0)
        hc->quiet_since = loop_now(hc->s->l); /* idle from here (--keepalive-timeout) */
    free(st->in);
    st->in = NULL;
    free(st->trailers); /* a stream reset before its last DATA went out */
    st->trailers = NULL;
    free(st->hkept);
    st->hkept = NULL;
    if (hc->nspares < SPARES_KEPT && !hc->dead) {
        if (st->out_cap > 4096) /* a small response buffer is kept, not a big one */
            h2_stream_out_free(st);
        else
            h2_stream_out_held(st, -(ssize_t)st->out_cap); /* a spare's is not counted */
        st->spare_next = hc->spares;
        hc->spares = st;
        hc->nspares++;
        return;
    }
    h2_stream_out_free(st);
    free(st);
}

void h2_stream_spares_free(h2_conn *hc) {
    while (hc->spares) {
        h2_stream *st = hc->spares;
        hc->spares = st->spare_next;
        free(st->out);
        free(st);
    }
    hc->nspares = 0;
    free(hc->hscratch);
    hc->hscratch = NULL;
    hc->hscratch_len = 0;
}

void h2_stream_wake(h2_stream *st, int result) {
    if (st->waiter)
        loop_wake(st->hc->s->l, st->waiter, result);
    if (st->rwaiter) /* a tunnel's reader (h2_tunnel.c) */
        loop_wake(st->hc->s->l, st->rwaiter, result);
}

void h2_stream_closed(h2_stream *st, int hang_up) {
    st->closed = 1;
    h2_stream_wake(st, -ECONNRESET);
    if (hang_up)
        loop_watch_hang_up(st->hc->s->l, &st->gone);
}

/* Parks the handler until the driver wakes it or the deadline passes. */
int h2_stream_wait(h2_stream *st, int64_t deadline) {
    sp_server *s = st->hc->s;
    st->waiter = loop_task(s->l);
    int rc = loop_park(s->l, deadline, &st->gone);
    st->waiter = NULL;
    return rc;
}

int h2_stream_gone(const h2_stream *st) {
    return st->closed || st->hc->dead;
}

void h2_stream_reset(h2_stream *st, uint32_t code) {
    if (!h2_stream_gone(st)) {
        nghttp2_submit_rst_stream(st->hc->ng, NGHTTP2_FLAG_NONE, st->id, code);
        h2_kick(st->hc);
    }
}

/* ---- the body in (exchange_ops.read) ---------------------------------- */

size_t h2_stream_take_in(h2_stream *st, void *buf, size_t len) {
    size_t n = len < st->in_len ? len : st->in_len;
    memcpy(buf, st->in, n);
    st->in_len -= n;
    memmove(st->in, st->in + n, st->in_len);
    if (!h2_stream_gone(st)) { /* the window reopens as the reader takes */
        nghttp2_session_consume(st->hc->ng, st->id, n);
        h2_kick(st->hc);
    }
    return n;
}

/* request.c has ruled out a failed or ended body and len 0. */
static ssize_t h2_read(sp_req *r, void *buf, size_t len, int wait) {
    h2_stream *st = r->xctx;
    sp_server *s = st->hc->s;
    for (;;) {
        if (st->in_len) {
            size_t n = h2_stream_take_in(st, buf, len);
            if (r->head.framing == HTTP_BODY_LENGTH)
                r->body_left -= n < r->body_left ? n : r->body_left;
            if (st->in_eof && st->in_len == 0)
                r->body_done = 1;
            req_body_charge(r, loop_now(s->l), n); /* the bytes' credit: no waiting here */
            loop_charge(s->l, n);
            return (ssize_t)n;
        }
        if (st->in_eof) {
            r->body_done = 1;
            return 0;
        }
        if (s->opt.body_max && st->in_total > s->opt.body_max)
            return req_body_fail(r, -EFBIG, 413);
        if (h2_stream_gone(st))
            return req_body_fail(r, -ECONNRESET, 400);
        if (!wait)
            return -EAGAIN;
        if (st->expect) { /* the client waits for a 100 before it sends the body */
            static const nghttp2_nv cont[] = {NV(":status", 7, "100", 3)};
            st->expect = 0;
            nghttp2_submit_headers(st->hc->ng, NGHTTP2_FLAG_NONE, st->id, NULL, cont, 1, NULL);
            h2_kick(st->hc);
        }
        /* The same budget as an HTTP/1.1 body (--body-min-rate): each
         * stream's waits are charged, so a trickle on many streams of one
         * connection is cut as it is on as many connections. */
        int64_t t0 = loop_now(s->l);
        int rc = h2_stream_wait(st, req_body_deadline(r, t0));
        req_body_charge(r, t0, 0);
        if (rc == -ETIMEDOUT) {
            h2_stream_reset(st, NGHTTP2_CANCEL);
            return req_body_fail(r, -ETIMEDOUT, 408);
        }
    }
}

/* ---- the response out (exchange_ops.send, sendfile, finish) ------------ */

/* RFC 9113 §8.2.2: fields that mean something only on an HTTP/1.1 hop. */
static int hop_field(const char *n, size_t nl) {
    return (nl == 10 && (strncmp(n, "keep-alive", 10) == 0 || strncmp(n, "connection", 10) == 0)) ||
           (nl == 16 && strncmp(n, "proxy-connection", 16) == 0) ||
           (nl == 7 && strncmp(n, "upgrade", 7) == 0) ||
           (nl == 17 && strncmp(n, "transfer-encoding", 17) == 0);
}

/* The response head as HEADERS: :status, the handler's fields (names in
 * lower case, as HTTP/2 requires: they are the response's own copies),
 * content-length when declared, date. body: DATA follow. */
int h2_stream_submit_head(h2_stream *st, sp_res *res, int body) {
    nghttp2_nv nva[RES_MAX_FIELDS + 3];
    size_t n = 0;
    char status[4], clen[24];
    if (res->status < 200 || res->status > 599)
        res->status = 500;
    status[0] = (char)('0' + res->status / 100);
    status[1] = (char)('0' + res->status / 10 % 10);
    status[2] = (char)('0' + res->status % 10);
    nva[n++] = NV(":status", 7, status, 3);
    for (size_t i = 0; i < res->nfields; i++) {
        http_field *f = &res->fields[i];
        char *name = (char *)f->name; /* in res->store (add_field) */
        for (size_t k = 0; k < f->name_len; k++)
            if (name[k] >= 'A' && name[k] <= 'Z')
                name[k] = (char)(name[k] + 32);
        if (!hop_field(name, f->name_len))
            nva[n++] = NV(name, f->name_len, f->value, f->value_len);
    }
    if (res->declared >= 0 && res->status != 204 && res->status != 304) {
        char *e = clen + sizeof clen, *d = e;
        uint64_t v = (uint64_t)res->declared;
        do
            *--d = (char)('0' + v % 10);
        while (v /= 10);
        nva[n++] = NV("content-length", 14, d, (size_t)(e - d));
    }
    const char *date = server_date(st->hc->s);
    nva[n++] = NV("date", 4, date, strlen(date));
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = h2_stream_data};
    res->head_sent = 1;
    int rc = nghttp2_submit_response(st->hc->ng, st->id, nva, n, body ? &prd : NULL);
    if (rc != 0) {
        res->failed = 1;
        return -EPIPE;
    }
    h2_kick(st->hc);
    return 0;
}

static int h2_send(sp_res *res, const void *data, size_t len, int last) {
    h2_stream *st = res->req->xctx;
    if (h2_stream_gone(st)) {
        res->failed = 1;
        return -EPIPE;
    }
    if (!res->head_sent) {
        st->no_body =
            res->req->head.method_id == HTTP_M_HEAD || res->status == 204 || res->status == 304;
        int body = !st->no_body && !(last && len == 0);
        if (!body)
            st->out_eof = 1;
        int rc = h2_stream_submit_head(st, res, body);
        if (rc < 0 || !body)
            return rc;
    }
    if (st->no_body)
        return 0;
    const char *p = data;
    while (len) {
        size_t room;
        int rc;
        char *dst = h2_stream_out_room(st, len, &room, &rc, 0);
        if (!dst) {
            res->failed = 1;
            return rc;
        }
        size_t n = len < room ? len : room;
        memcpy(dst, p, n);
        p += n;
        len -= n;
        if (last && len == 0)
            st->out_eof = 1;
        h2_stream_out_queued(st, n);
        loop_charge(st->hc->s->l, n);
    }
    if (last && !st->out_eof) {
        st->out_eof = 1;
        h2_stream_out_queued(st, 0);
    }
    return 0;
}

/* A file in pieces: pread into the stream's buffer, as the window drains. */
static int h2_sendfile(sp_res *res, int fd, int64_t off, size_t count) {
    h2_stream *st = res->req->xctx;
    int rc = h2_send(res, NULL, 0, 0);
    if (rc < 0)
        return rc;
    for (size_t left = count; left && !st->no_body;) {
        size_t room;
        char *dst = h2_stream_out_room(st, left, &room, &rc, 0);
        if (!dst) {
            res->failed = 1;
            return rc;
        }
        ssize_t n = pread(fd, dst, left < room ? left : room, (off_t)off);
        if (n <= 0) {
            h2_stream_reset(st, NGHTTP2_INTERNAL_ERROR); /* the file shrank under us */
            res->failed = 1;
            return n < 0 ? -errno : -EIO;
        }
        off += n;
        left -= (size_t)n;
        h2_stream_out_queued(st, (size_t)n);
        loop_charge(st->hc->s->l, (size_t)n);
    }
    res->written += count;
    return 0;
}

static int h2_finish(sp_res *res) {
    h2_stream *st = res->req->xctx;
    int rc = 0;
    if (!res->head_sent) {
        if (res->declared < 0)
            res->declared = 0; /* nothing was written: an empty body */
        rc = h2_send(res, NULL, 0, 1);
    } else if (!st->no_body && res->declared >= 0 && res->written < (uint64_t)res->declared) {
        h2_stream_reset(st, NGHTTP2_INTERNAL_ERROR); /* fewer bytes than promised: say it was cut */
    } else if (!st->out_eof) {
        st->out_eof = 1;
        h2_stream_out_queued(st, 0);
    }
    res->finished = 1;
    return rc;
}

/* 103 Early Hints: a HEADERS frame before the response's own. */
static int h2_interim(sp_res *res, int status, const http_field *f, size_t n) {
    h2_stream *st = res->req->xctx;
    nghttp2_nv nva[17];
    char code[4];
    if (h2_stream_gone(st) || n > 16)
        return h2_stream_gone(st) ? -EPIPE : -EINVAL;
    snprintf(code, sizeof code, "%d", status);
    nva[0] = NV(":status", 7, code, 3);
    for (size_t i = 0; i < n; i++)
        nva[i + 1] = NV("link", 4, f[i].value, f[i].value_len);
    if (nghttp2_submit_headers(st->hc->ng, NGHTTP2_FLAG_NONE, st->id, NULL, nva, n + 1, NULL) < 0)
        return -EPIPE;
    h2_kick(st->hc);
    return 0;
}

/* Trailers: kept (copied, names lower-cased) until the data source hands
 * out the last DATA without END_STREAM; the HEADERS that ends the stream
 * is submitted there (nghttp2's order: trailers only after the body). */
static int h2_trailers(sp_res *res, const sp_field *f, size_t n) {
    h2_stream *st = res->req->xctx;
    size_t bytes = n * sizeof(nghttp2_nv);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(f[i].name) + strlen(f[i].value);
    nghttp2_nv *nv = h2_stream_gone(st) ? NULL : malloc(bytes ? bytes : 1);
    if (!nv) {
        res->failed = 1;
        return h2_stream_gone(st) ? -EPIPE : -ENOMEM;
    }
    char *d = (char *)(nv + n);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(f[i].name), vl = strlen(f[i].value);
        for (size_t k = 0; k < nl; k++)
            d[k] = (char)http_lower((unsigned char)f[i].name[k]);
        memcpy(d + nl, f[i].value, vl);
        nv[i] = NV(d, nl, d + nl, vl);
        d += nl + vl;
    }
    int rc = res->head_sent ? 0 : h2_send(res, NULL, 0, 0); /* the head, with a body to come */
    if (rc < 0 || st->no_body || (res->declared >= 0 && res->written < (uint64_t)res->declared)) {
        free(nv);
        return rc < 0 ? rc : h2_finish(res);
    }
    free(st->trailers);
    st->trailers = nv;
    st->ntrailers = n;
    st->out_eof = 1;
    h2_stream_out_queued(st, 0);
    res->finished = 1;
    return 0;
}

/* A HEADERS frame can follow the DATA whatever the body's length. */
static int h2_trailers_possible(const sp_res *res) {
    return 1;
}

/* Only an RFC 8441 stream (extended CONNECT) is taken over, its bytes then
 * going through the tunnel (h2_tunnel.c); its head is the stream's own
 * memory, not the connection's buffer, so nothing needs keeping. */
static int h2_upgrade(sp_res *res) {
    return res->req->head.websocket_connect ? 0 : -ENOTSUP;
}

static const exchange_ops h2_ops = {
    .send = h2_send,
    .sendfile = h2_sendfile,
    .finish = h2_finish,
    .interim = h2_interim,
    .trailers = h2_trailers,
    .read = h2_read,
    .trailers_possible = h2_trailers_possible,
    .upgrade = h2_upgrade,
    .major = 2,
    .tunnel = &h2_tunnel,
    .proto = "HTTP/2.0",
};

/* ---- the stream's coroutine -------------------------------------------- */

/* After the handler returned rc: an error answer if nothing was sent, a
 * reset if the response cannot be completed, else its end. */
static void end_stream(h2_stream *st, sp_req *req, sp_res *res, int rc) {
    const http_request *h = &req->head;
    if (rc < 0 && !res->head_sent && !res->failed && !h2_stream_gone(st)) {
        if (!req->body_error && !res->status_refused && rc != -ECONNRESET)
            log_msg(LOG_ERROR, "handler for %.*s %.*s failed: %s; answered 500", (int)h->method_len,
                    h->method, (int)h->target_len, h->target, strerror(-rc));
        res_send_error(res, req->body_error ? req->body_error : 500, 0, NULL);
    } else if (res->taken_over) {
        if (res->release) /* a WebSocket (h2_tunnel.c): it ends the stream */
            res->release(res->release_arg);
        if (!st->out_eof) /* it did not: say it was cut */
            h2_stream_reset(st, NGHTTP2_INTERNAL_ERROR);
        res->failed = 1;
    } else if (rc < 0 && !res->failed) {
        h2_stream_reset(st, NGHTTP2_INTERNAL_ERROR); /* a cut body must not look complete */
        res->failed = 1;
    }
    if (!res->finished && !res->failed)
        sp_res_finish(res);
}

static void serve_stream(h2_stream *st) {
    sp_server *s = st->hc->s;
    sp_req req;
    req_init(&req, s, st->hc->c, &h2_ops, st);
    req.head = st->head;
    uint64_t t0 = s->timed ? stats_clock_ns() : 0;
    char pathbuf[PATH_STACK];
    char *pb = pathbuf;
    int status = st->refuse;
    if (!status && req.head.target_len >= sizeof pathbuf && !(pb = malloc(req.head.target_len + 1)))
        status = 503;
    if (!status)
        status = exchange_prepare(s, &req, pb);
    if (req.head.framing == HTTP_BODY_CHUNKED)
        req.body_done = st->in_eof && !st->in_len;
    sp_res res;
    res_init(&res, &req, st->hc->c);
    int rc = status ? res_send_error(&res, status, 0, NULL) : exchange_dispatch(s, &req, &res);
    end_stream(st, &req, &res, rc);
    /* A stream the client reset (or a connection it dropped) before the
     * head went out: 499, the client closed the request. */
    int logged = res.head_sent ? res.status : h2_stream_gone(st) ? SP_STATUS_CLIENT_CLOSED : 0;
    stats_record(s, &req, &res, logged, st->head_bytes + st->in_total, res.written, t0);
    req_run_deferred(&req);
    if (pb != pathbuf)
        free(pb);
}

static void stream_main(void *arg) {
    h2_stream *st = arg;
    h2_conn *hc = st->hc;
    sp_server *s = hc->s;
    loop_task_set_hup_watch(loop_task(s->l), &st->gone);
    /* Its stack may be trimmed in a long wait (a WebSocket, a long poll):
     * plain C frames, as the connection's coroutine's (exchange.c); no park
     * hook, the stream's buffers being its own (h2_tunnel.c). */
    loop_task_set_park(loop_task(s->l), NULL, NULL, 1);
    if (!h2_stream_gone(st))
        serve_stream(st);
    if (s->max_requests && ++s->served == s->max_requests && !s->stopping) {
        log_msg(LOG_INFO, "served %llu requests (--max-requests): stopping to be replaced",
                (unsigned long long)s->served);
        sp_server_stop(s);
    }
    st->running = 0;
    hc->nlive--;
    if (st->closed)
        h2_stream_free(st);
    else if (!st->in_eof && !hc->dead &&
             nghttp2_session_get_stream_local_close(hc->ng, st->id) == 1)
        h2_stream_reset(st, NGHTTP2_NO_ERROR); /* answered; the rest of the body is not wanted */
    if (hc->dead && hc->nlive == 0 && hc->reader)
        loop_wake(s->l, hc->reader, 0);
    h2_kick(hc);
}

int h2_stream_start(h2_stream *st) {
    st->running = st->spawned = 1;
    st->hc->nlive++;
    if (loop_spawn(st->hc->s->l, stream_main, st) < 0) {
        st->running = 0;
        st->hc->nlive--;
        return -ENOMEM;
    }
    return 0;
}
