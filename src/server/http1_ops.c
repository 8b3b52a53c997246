/* http1_ops.c — HTTP/1.1's side of the exchange (exchange_ops, handler.h):
 * the request body streamed from the connection's buffer and socket
 * (Content-Length or chunked, 100 Continue first when the client waits for
 * it), and the response framed on the connection — Content-Length when
 * declared, chunked otherwise on 1.1, close-delimited on 1.0 — with 103
 * Early Hints, trailers in the last chunk, and the takeover after a 101. */
#include "server/server.h"
#include "server/conn_io.h"

#include "http/http_trailer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the body in (exchange_ops.read) ----------------------------------- */

/* Reads body bytes from the socket; a client that closes or stalls mid-body
 * (req_body_deadline) is a body error (400, 408). A drain also ends at its
 * deadline, whatever the rate. */
static ssize_t socket_read(sp_req *r, void *dst, size_t len) {
    sp_server *s = r->srv;
    int64_t now = loop_now(s->l);
    int64_t deadline = req_body_deadline(r, now);
    if (r->drain_deadline && r->drain_deadline < deadline)
        deadline = r->drain_deadline;
    ssize_t n = conn_read(s->l, r->c, dst, len, deadline);
    req_body_charge(r, now, n > 0 ? (size_t)n : 0);
    if (n == 0)
        return req_body_fail(r, -ECONNRESET, 400);
    if (n < 0)
        return req_body_fail(r, (int)n, n == -ETIMEDOUT ? 408 : 400);
    return n;
}

/* One chunked-decoding step over the buffered bytes: consumes them and
 * leaves the body data it found in r->pend. 0, or the body error. */
static ssize_t decode_step(sp_req *r) {
    conn *c = r->c;
    const char *data;
    size_t dlen = 0;
    long used = http_chunked_decode(&r->chunked, c->buf + c->buf_off, c->buf_len - c->buf_off,
                                    &data, &dlen);
    if (used < 0)
        return req_body_fail(r, used == -413 ? -EFBIG : -EBADMSG, (int)-used);
    c->buf_off += (uint32_t)used;
    if (dlen) {
        r->pend = data;
        r->pend_len = dlen;
    }
    return 0;
}

static ssize_t read_length(sp_req *r, void *buf, size_t len) {
    conn *c = r->c;
    size_t want = len < r->body_left ? len : (size_t)r->body_left;
    size_t avail = c->buf_len - c->buf_off;
    ssize_t n;
    if (avail) {
        n = (ssize_t)(want < avail ? want : avail);
        memcpy(buf, c->buf + c->buf_off, (size_t)n);
        c->buf_off += (uint32_t)n;
    } else {
        /* Nothing buffered: read straight into the handler's buffer. */
        n = socket_read(r, buf, want);
        if (n < 0)
            return n;
    }
    r->body_left -= (uint64_t)n;
    if (r->body_left == 0)
        r->body_done = 1;
    return n;
}

/* Copies what is decoded already (r->pend), then decodes the buffered bytes
 * straight into buf: a body of tiny chunks comes out a buffer at a time,
 * not one chunk per call. 0 if nothing was there. */
static ssize_t copy_buffered(sp_req *r, char *buf, size_t len) {
    conn *c = r->c;
    size_t got = len < r->pend_len ? len : r->pend_len;
    if (got) {
        memcpy(buf, r->pend, got);
        r->pend += got;
        r->pend_len -= got;
    }
    if (got < len && c->buf_len > c->buf_off) {
        size_t more;
        long used = http_chunked_decode_copy(&r->chunked, c->buf + c->buf_off,
                                             c->buf_len - c->buf_off, buf + got, len - got, &more);
        if (used < 0)
            return req_body_fail(r, used == -413 ? -EFBIG : -EBADMSG, (int)-used);
        c->buf_off += (uint32_t)used;
        got += more;
    }
    return (ssize_t)got;
}

static ssize_t read_chunked(sp_req *r, void *buf, size_t len) {
    conn *c = r->c;
    sp_server *s = r->srv;
    for (;;) {
        ssize_t got = copy_buffered(r, buf, len);
        if (got != 0)
            return got; /* data, or the body error */
        if (http_chunked_done(&r->chunked)) {
            r->body_done = 1;
            return 0;
        }
        /* Everything buffered is consumed (and no data is pending in it). */
        c->buf_off = c->buf_len = 0;
        ssize_t n = socket_read(r, c->buf, s->buf_size);
        if (n < 0)
            return n;
        c->buf_len = (uint32_t)n;
        c->maybe_more = conn_more_may_wait(c, (size_t)n, s->buf_size);
    }
}

/* req_read_buffered: what the buffer holds, -EAGAIN where I/O would be
 * needed. */
static ssize_t read_buffered(sp_req *r, void *buf, size_t len) {
    if (r->expect_pending)
        return -EAGAIN; /* 100 Continue must go out first: that is I/O */
    conn *c = r->c;
    size_t avail = c->buf_len - c->buf_off;
    if (r->head.framing == HTTP_BODY_CHUNKED) {
        /* Decode only what is buffered; stop where I/O would be needed. */
        while (!r->pend_len && !http_chunked_done(&r->chunked) && c->buf_len > c->buf_off) {
            ssize_t rc = decode_step(r);
            if (rc < 0)
                return rc;
        }
        if (r->pend_len || http_chunked_done(&r->chunked))
            return read_chunked(r, buf, len); /* served from memory, no I/O */
        return -EAGAIN;
    }
    if (!avail)
        return -EAGAIN;
    return read_length(r, buf, len);
}

static ssize_t h1_read(sp_req *r, void *buf, size_t len, int wait) {
    if (!wait) /* a binding's read while the coroutine is in a long wait: the
                * buffer is away (req_park.c), its bytes come back with it */
        return r->c->buf ? read_buffered(r, buf, len) : -EAGAIN;
    if (r->expect_pending) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        r->expect_pending = 0;
        ssize_t n = conn_write(r->srv->l, r->c, cont, sizeof cont - 1,
                               server_deadline(r->srv, r->srv->opt.send_timeout_ms));
        if (n < 0)
            return req_body_fail(r, (int)n, 400);
    }
    ssize_t n =
        r->head.framing == HTTP_BODY_CHUNKED ? read_chunked(r, buf, len) : read_length(r, buf, len);
    /* A client that sends as fast as we read never lets us wait: yield now
     * and then (the budget in loop.h). Each call reads the socket at most
     * once for data, so this also bounds the syscalls. */
    if (n > 0)
        loop_charge(r->srv->l, (size_t)n);
    return n;
}

/* ---- the response out (exchange_ops.send, sendfile, finish) ------------ */

#define HEAD_CAP (RES_FIELD_BYTES + 1024)

/* Whether the head may promise keep-alive: not when we already know the
 * connection will close after this response. */
static int want_keep_alive(const sp_res *r) {
    const sp_req *q = r->req;
    const sp_server *s = q->srv;
    if (!q->head.keep_alive || r->force_close || s->stopping)
        return 0;
    if (!q->body_done) {
        if (q->expect_pending || q->body_errno)
            return 0; /* a refused body is never parsed as a request */
        if (q->head.framing == HTTP_BODY_LENGTH && q->body_left > s->opt.drain_max)
            return 0;
    }
    return 1;
}

/* Marks the response failed when a write fails: the client is gone or not
 * reading, and the connection is closed. Returns rc. */
static int failed_if(sp_res *r, ssize_t rc) {
    if (rc < 0)
        r->failed = 1;
    return rc < 0 ? (int)rc : 0;
}

static int64_t send_deadline(const sp_res *r) {
    return server_deadline(r->req->srv, r->req->srv->opt.send_timeout_ms);
}

/* Bytes that already carry their framing (a last chunk, a chunk line). */
static int send_raw(sp_res *r, const void *p, size_t len) {
    loop *l = r->req->srv->l;
    int rc = failed_if(r, conn_write(l, r->c, p, len, send_deadline(r)));
    loop_charge(l, len); /* fairness: yields once its budget is spent */
    return rc;
}

/* SEND_LAST: data is the whole response (hold it for the FIN if the
 * connection closes next). Other flags go to sendmsg (MSG_MORE when a
 * sendfile follows). */
#define SEND_LAST (1 << 30)

/* Sends the head if it is not out yet, then data framed as the head says:
 * a chunk when chunked, as is for a length or a close-delimited body,
 * nothing for HEAD, 204 and 304 — all in one writev. The framing is decided
 * once, by the writer, when the head is made. */
static int send_data(sp_res *r, const void *data, size_t len, int flags) {
    char head[HEAD_CAP];
    char line[HTTP_CHUNK_LINE_MAX];
    struct iovec iov[4];
    int n = 0;
    if (!r->head_sent) {
        sp_req *q = r->req;
        if (r->status < 200)
            res_refuse_interim(r, r->status); /* set directly, not through sp_res_status */
        http_response hr = {
            .status = r->status,
            .minor_version = q->head.minor_version,
            .head_request = q->head.method_id == HTTP_M_HEAD,
            .keep_alive = want_keep_alive(r),
            .content_length = r->declared,
            .fields = r->fields,
            .nfields = r->nfields,
            .date = server_date(q->srv),
            .fields_checked = 1, /* sp_res_header validated each one */
        };
        int h = http_write_head(&hr, head, sizeof head, &r->out);
        if (h < 0)
            return h;
        /* The whole response, and the connection closes next: hold it so
         * close() sends it with the FIN, one segment fewer per connection. */
        if ((flags & SEND_LAST) && !r->out.keep_alive)
            flags |= MSG_MORE;
        r->head_sent = 1;
        iov[n++] = (struct iovec){head, (size_t)h};
    }
    flags &= ~SEND_LAST;
    if (len && r->out.framing == HTTP_OUT_CHUNKED)
        n += http_chunk_iov(line, data, len, iov + n);
    else if (len && r->out.framing != HTTP_OUT_NONE)
        iov[n++] = (struct iovec){(void *)data, len};
    if (n == 0)
        return 0;
    loop *l = r->req->srv->l;
    ssize_t w = conn_writev(l, r->c, iov, n, send_deadline(r), flags);
    loop_charge(l, len); /* a client that reads as fast as we write never blocks us */
    return failed_if(r, w);
}

static int h1_send(sp_res *r, const void *data, size_t len, int last) {
    return send_data(r, data, len, last ? SEND_LAST : 0);
}

static int h1_sendfile(sp_res *r, int fd, int64_t off, size_t count) {
    int rc = send_data(r, NULL, 0, count ? MSG_MORE : 0);
    if (rc < 0)
        return rc;
    if (r->out.framing == HTTP_OUT_NONE || count == 0) {
        r->written += count;
        return 0;
    }
    int chunked = r->out.framing == HTTP_OUT_CHUNKED;
    char line[HTTP_CHUNK_LINE_MAX];
    if (chunked && (rc = send_raw(r, line, http_chunk_line(line, count))) < 0)
        return rc;
    /* Large files: the send timeout is for progress, so renew it per piece. */
    off_t pos = (off_t)off;
    for (size_t left = count; left;) {
        size_t piece = left < (1u << 20) ? left : (1u << 20);
        rc = failed_if(r, conn_sendfile(r->req->srv->l, r->c, fd, &pos, piece, send_deadline(r)));
        if (rc < 0)
            return rc;
        loop_charge(r->req->srv->l, piece);
        left -= piece;
    }
    if (chunked && (rc = send_raw(r, "\r\n", 2)) < 0)
        return rc;
    r->written += count;
    return 0;
}

static int h1_finish(sp_res *r) {
    int rc = 0;
    if (!r->head_sent) {
        if (r->declared < 0)
            r->declared = 0; /* nothing was written: an empty body */
        rc = send_data(r, NULL, 0, 0);
    } else if (r->out.framing == HTTP_OUT_CHUNKED) {
        rc = send_raw(r, HTTP_LAST_CHUNK, HTTP_LAST_CHUNK_LEN);
    }
    if (r->declared >= 0 && r->written < (uint64_t)r->declared && r->out.framing == HTTP_OUT_LENGTH)
        r->force_close = 1; /* fewer bytes than promised: only closing says so */
    if (r->out.framing == HTTP_OUT_CLOSE)
        r->force_close = 1;
    r->finished = 1;
    return rc;
}

/* ---- interims, trailers, the takeover ----------------------------------- */

/* 103 Early Hints (values checked, never to HTTP/1.0: sp_res_early_hints). */
static int h1_interim(sp_res *r, int status, const http_field *f, size_t n) {
    http_response hr = {.status = status,
                        .minor_version = 1,
                        .keep_alive = 1,
                        .content_length = -1,
                        .fields = f,
                        .nfields = n,
                        .fields_checked = 1};
    char head[2048];
    http_out o;
    int h = http_write_head(&hr, head, sizeof head, &o);
    return h < 0 ? h : send_raw(r, head, (size_t)h);
}

/* Trailers go in the last chunk, so only a chunked body can carry them. */
static int h1_trailers_possible(const sp_res *r) {
    if (r->head_sent)
        return r->out.framing == HTTP_OUT_CHUNKED;
    return r->req->head.minor_version >= 1 && r->declared < 0;
}

static int h1_trailers(sp_res *r, const sp_field *f, size_t n) {
    int rc;
    if (!r->head_sent && (rc = send_data(r, NULL, 0, 0)) < 0) /* the head: chunked */
        return rc;
    const char *names[RES_TRAILERS_MAX], *values[RES_TRAILERS_MAX];
    for (size_t i = 0; i < n; i++) {
        names[i] = f[i].name;
        values[i] = f[i].value;
    }
    char last[RES_TRAILER_BYTES_MAX + 8];
    long len = http_write_last_chunk(names, values, n, last, sizeof last);
    if (len < 0)
        return -ENOSPC;
    rc = send_raw(r, last, (size_t)len);
    r->finished = 1;
    return rc;
}

static void rebase(const char **p, const char *lo, const char *hi, char *copy) {
    if (*p && *p >= lo && *p < hi)
        *p = copy + (*p - lo);
}

static void span(const char *p, size_t len, const char **lo, const char **hi) {
    if (!p)
        return;
    if (p < *lo)
        *lo = p;
    if (p + len > *hi)
        *hi = p + len;
}

/* The taker reads its own bytes into the connection's buffer (a WebSocket
 * its frames), but the request stays readable to its end: the access log
 * writes its line then, and a handler may read a header after the upgrade.
 * So its head moves to memory of its own, freed with the request. */
static int h1_upgrade(sp_res *res) {
    sp_req *r = res->req;
    http_request *h = &r->head;
    const char *lo = h->method, *hi = h->method + h->method_len;
    span(h->target, h->target_len, &lo, &hi);
    for (size_t i = 0; i < h->nfields; i++) {
        span(h->fields[i].name, h->fields[i].name_len, &lo, &hi);
        span(h->fields[i].value, h->fields[i].value_len, &lo, &hi);
    }
    char *copy = malloc((size_t)(hi - lo));
    if (!copy)
        return 0; /* the log line may show the taker's bytes: nothing worse */
    if (req_defer(r, free, copy) < 0) {
        free(copy);
        return 0;
    }
    memcpy(copy, lo, (size_t)(hi - lo));
    rebase(&h->method, lo, hi, copy);
    rebase(&h->target, lo, hi, copy);
    rebase(&h->host, lo, hi, copy);
    for (size_t i = 0; i < h->nfields; i++) {
        rebase(&h->fields[i].name, lo, hi, copy);
        rebase(&h->fields[i].value, lo, hi, copy);
    }
    rebase(&r->query.ptr, lo, hi, copy);
    return 0;
}

const exchange_ops http1_ops = {
    .send = h1_send,
    .sendfile = h1_sendfile,
    .finish = h1_finish,
    .interim = h1_interim,
    .trailers = h1_trailers,
    .read = h1_read,
    .trailers_possible = h1_trailers_possible,
    .upgrade = h1_upgrade,
    .major = 1,
    .proto = NULL, /* HTTP/1.0 or HTTP/1.1: the access log writes head.minor_version */
};
