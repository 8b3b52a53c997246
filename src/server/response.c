/* response.c — the handler's response: status and headers kept until the
 * first write, then the head goes out in the same writev as the first body
 * bytes; Content-Length when declared (or when the whole body is given to
 * sp_res_send), chunked otherwise on HTTP/1.1, close-delimited on 1.0. */
#include "server/server.h"
#include "server/conn_io.h"

#include "base/log.h"
#include "http/http_chars.h"
#include "http/http_trailer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_CAP (RES_FIELD_BYTES + 1024)

void res_clear_head(sp_res *res) {
    res->nfields = 0;
    res->field_bytes = 0;
    res->declared = -1;
}

void res_init(sp_res *res, sp_req *req, conn *c) {
    res->req = req;
    res->c = c;
    res->status = 200;
    res_clear_head(res);
    res->written = 0;
    res->head_sent = res->finished = res->failed = res->force_close = res->taken_over = 0;
    res->status_refused = 0;
    res->out = (http_out){0};
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
static void keep_head(sp_req *r) {
    http_request *h = &r->head;
    const char *lo = h->method, *hi = h->method + h->method_len;
    span(h->target, h->target_len, &lo, &hi);
    for (size_t i = 0; i < h->nfields; i++) {
        span(h->fields[i].name, h->fields[i].name_len, &lo, &hi);
        span(h->fields[i].value, h->fields[i].value_len, &lo, &hi);
    }
    char *copy = malloc((size_t)(hi - lo));
    if (!copy)
        return; /* the log line may show the taker's bytes: nothing worse */
    if (req_defer(r, free, copy) < 0) {
        free(copy);
        return;
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
}

void res_take_over(sp_res *res, void (*release)(void *arg), void *arg) {
    /* Nothing of HTTP is sent from now on: the sp_res_* calls see a
     * finished response, and the driver closes after the handler. */
    if (!res->req->xops)
        keep_head(res->req); /* an HTTP/2 stream's head is its own, not in c->buf */
    res->taken_over = 1;
    res->head_sent = 1;
    res->finished = 1;
    res->release = release;
    res->release_arg = arg;
}

/* RFC 9110 §15.2: a 1xx is interim; the exchange ends with a 2xx-5xx. A
 * handler's 1xx as its answer would go out with no body framing and the
 * connection open, so the next response would be read as this one's (a
 * pooling proxy hands it to another client), and a 101 would let a client
 * tunnel past a proxy. Refused: logged, and the answer becomes a 500. The
 * server sends its own interims: 100 Continue (sp_read), and the WebSocket
 * upgrade its 101, after res_take_over. */
__attribute__((cold, noinline)) static int refuse_interim(sp_res *r, int status) {
    const http_request *h = &r->req->head;
    log_msg(LOG_ERROR,
            "handler for %.*s %.*s set status %d: a 1xx is an interim response, never the "
            "answer (the server sends 100 Continue and the WebSocket 101 itself); answered 500",
            (int)h->method_len, h->method, (int)h->target_len, h->target, status);
    r->status = 500;
    r->status_refused = 1;
    return -EINVAL;
}

#define HINTS_MAX 16

static int send_raw(sp_res *r, const void *p, size_t len);

/* RFC 8297: 103 Early Hints, an interim response before the answer, so the
 * client may start fetching the linked resources while the handler works. */
int sp_res_early_hints(sp_res *r, const char *const *links, size_t n) {
    if (r->head_sent)
        return -EALREADY;
    if (n == 0 || n > HINTS_MAX)
        return -EINVAL;
    if (r->req->head.minor_version == 0)
        return 0; /* RFC 9110 §15.2: no 1xx to an HTTP/1.0 client */
    http_field f[HINTS_MAX];
    for (size_t i = 0; i < n; i++)
        f[i] = (http_field){"Link", 4, links[i], strlen(links[i])};
    /* The writer checks the values (fields_checked 0) and frames no body. */
    http_response hr = {.status = 103,
                        .minor_version = 1,
                        .keep_alive = 1,
                        .content_length = -1,
                        .fields = f,
                        .nfields = n};
    char head[2048];
    http_out o;
    int h = http_write_head(&hr, head, sizeof head, &o); /* also the values' check */
    if (h >= 0 && r->req->xops)
        return r->req->xops->interim(r, 103, f, n);
    return h < 0 ? h : send_raw(r, head, (size_t)h);
}

int sp_res_status(sp_res *r, int status) {
    if (r->head_sent)
        return -EALREADY;
    if (status < 100 || status > 599)
        return -EINVAL;
    if (status < 200)
        return refuse_interim(r, status);
    r->status = status;
    return 0;
}

static int owned_by_server(const char *name, size_t n) {
    return http_ieq(name, n, "content-length", 14) || http_ieq(name, n, "transfer-encoding", 17) ||
           http_ieq(name, n, "date", 4) || http_ieq(name, n, "connection", 10);
}

/* Checks the value and stores name: value (name already checked). */
static int add_field(sp_res *r, const char *name, size_t nl, const char *value) {
    if (r->head_sent)
        return -EALREADY;
    size_t vl = strlen(value);
    for (size_t i = 0; i < vl; i++)
        if (!http_is((unsigned char)value[i], HTTP_C_VALUE))
            return -EINVAL; /* CR, LF, NUL or another control: injection */
    if (vl &&
        (value[0] == ' ' || value[0] == '\t' || value[vl - 1] == ' ' || value[vl - 1] == '\t'))
        return -EINVAL;
    if (r->nfields == RES_MAX_FIELDS || r->field_bytes + nl + vl > RES_FIELD_BYTES)
        return -ENOSPC;
    /* From the top end down: next to the frames above, where a parked
     * handler's stack is touched anyway (handler.h). */
    char *p = r->store + RES_FIELD_BYTES - r->field_bytes - (nl + vl);
    memcpy(p, name, nl);
    memcpy(p + nl, value, vl);
    r->fields[r->nfields++] = (http_field){p, nl, p + nl, vl};
    r->field_bytes += nl + vl;
    return 0;
}

int sp_res_header(sp_res *r, const char *name, const char *value) {
    if (r->head_sent)
        return -EALREADY;
    size_t nl = strlen(name);
    if (nl == 0 || owned_by_server(name, nl))
        return -EINVAL;
    for (size_t i = 0; i < nl; i++)
        if (!http_is((unsigned char)name[i], HTTP_C_TCHAR))
            return -EINVAL;
    return add_field(r, name, nl, value);
}

int sp_res_length(sp_res *r, uint64_t len) {
    if (r->head_sent)
        return -EALREADY;
    if (len > INT64_MAX)
        return -EINVAL;
    r->declared = (int64_t)len;
    return 0;
}

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
    if (__builtin_expect(r->req->xops != NULL, 0))
        return r->req->xops->send(r, data, len, (flags & SEND_LAST) != 0);
    char head[HEAD_CAP];
    char line[HTTP_CHUNK_LINE_MAX];
    struct iovec iov[4];
    int n = 0;
    if (!r->head_sent) {
        sp_req *q = r->req;
        if (r->status < 200)
            refuse_interim(r, r->status); /* set directly, not through sp_res_status */
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

ssize_t sp_res_write(sp_res *r, const void *buf, size_t len) {
    if (r->failed)
        return -EPIPE;
    if (r->finished)
        return -EALREADY;
    if (r->declared >= 0 && r->written + len > (uint64_t)r->declared)
        return -EFBIG;
    int rc = send_data(r, buf, len, 0);
    if (rc < 0)
        return rc;
    r->written += len;
    return (ssize_t)len;
}

ssize_t sp_res_vprintf(sp_res *r, const char *fmt, va_list ap) {
    char small[1024];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return -EINVAL;
    }
    if ((size_t)n < sizeof small) {
        va_end(ap2);
        return sp_res_write(r, small, (size_t)n);
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        va_end(ap2);
        return -ENOMEM;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    ssize_t rc = sp_res_write(r, big, (size_t)n);
    free(big);
    return rc;
}

ssize_t sp_res_printf(sp_res *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ssize_t rc = sp_res_vprintf(r, fmt, ap);
    va_end(ap);
    return rc;
}

int sp_res_send(sp_res *r, int status, const char *content_type, const void *body, size_t len) {
    if (r->head_sent)
        return -EALREADY;
    int rc = sp_res_status(r, status);
    if (rc == 0 && content_type)
        rc = add_field(r, "Content-Type", 12, content_type); /* the name is known good */
    if (rc < 0)
        return rc;
    r->declared = (int64_t)len;
    rc = send_data(r, body, len, SEND_LAST);
    if (rc < 0)
        return rc;
    r->written = len;
    r->finished = 1;
    return 0;
}

int sp_res_sendfile(sp_res *r, int fd, int64_t off, size_t count) {
    if (r->failed)
        return -EPIPE;
    if (r->finished)
        return -EALREADY;
    if (!r->head_sent && r->declared < 0)
        r->declared = (int64_t)count;
    if (r->declared >= 0 && r->written + count > (uint64_t)r->declared)
        return -EFBIG;
    if (r->req->xops)
        return r->req->xops->sendfile(r, fd, off, count);
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

int sp_res_finish(sp_res *r) {
    if (r->finished)
        return 0;
    if (r->failed)
        return -EPIPE;
    if (r->req->xops)
        return r->req->xops->finish(r);
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

int sp_res_trailers_possible(const sp_res *r) {
    const sp_req *q = r->req;
    if (r->finished || r->failed || q->head.method_id == HTTP_M_HEAD || r->status == 204 ||
        r->status == 304)
        return 0;
    if (q->xops)
        return 1; /* HTTP/2: a HEADERS frame after the DATA, whatever the length */
    if (r->head_sent)
        return r->out.framing == HTTP_OUT_CHUNKED;
    return q->head.minor_version >= 1 && r->declared < 0;
}

#define TRAILERS_MAX      16
#define TRAILER_BYTES_MAX 4096

static int trailers_checked(const sp_field *f, size_t n) {
    size_t bytes = 0;
    if (n > TRAILERS_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(f[i].name), vl = strlen(f[i].value);
        if (!http_trailer_name_ok(f[i].name, nl))
            return -EINVAL;
        for (size_t k = 0; k < vl; k++)
            if (!http_is((unsigned char)f[i].value[k], HTTP_C_VALUE))
                return -EINVAL; /* CR, LF, NUL: a trailer must not end the section early */
        bytes += nl + vl + 4;
    }
    return bytes > TRAILER_BYTES_MAX ? -ENOSPC : 0;
}

/* RFC 9110 §6.5: fields known only once the body is out (a checksum, a
 * status after streaming, gRPC's grpc-status). */
int sp_res_finish_trailers(sp_res *r, const sp_field *f, size_t n) {
    if (r->finished)
        return -EALREADY;
    if (r->failed)
        return -EPIPE;
    int rc = trailers_checked(f, n);
    if (rc < 0)
        return rc;
    if (!sp_res_trailers_possible(r)) {
        rc = sp_res_finish(r);
        return rc < 0 ? rc : 1;
    }
    if (r->req->xops)
        return r->req->xops->trailers(r, f, n);
    if (!r->head_sent && (rc = send_data(r, NULL, 0, 0)) < 0) /* the head: chunked */
        return rc;
    const char *names[TRAILERS_MAX], *values[TRAILERS_MAX];
    for (size_t i = 0; i < n; i++) {
        names[i] = f[i].name;
        values[i] = f[i].value;
    }
    char last[TRAILER_BYTES_MAX + 8];
    long len = http_write_last_chunk(names, values, n, last, sizeof last);
    if (len < 0)
        return -ENOSPC;
    rc = send_raw(r, last, (size_t)len);
    r->finished = 1;
    return rc;
}

int res_send_error(sp_res *r, int status, int close, const char *allow) {
    if (r->head_sent) {
        r->force_close = 1;
        return 0;
    }
    res_clear_head(r);
    r->force_close = (uint8_t)close;
    if (allow && allow[0])
        sp_res_header(r, "Allow", allow);
    char body[64];
    int n = snprintf(body, sizeof body, "%d %s\n", status, http_reason(status));
    return sp_res_send(r, status, "text/plain", body, (size_t)n);
}
