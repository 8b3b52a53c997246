/* response.c — the handler's response: status and headers kept until the
 * first write, checked here for every protocol, then handed to the
 * request's protocol (exchange_ops, handler.h), which sends the head with
 * the first body bytes and frames the body (Content-Length when declared,
 * or when the whole body is given to sp_res_send). */
#include "server/server.h"

#include "base/log.h"
#include "http/http_chars.h"
#include "http/http_trailer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void res_clear_head(sp_res *res) {
    res->nfields = 0;
    res->field_bytes = 0;
    res->declared = -1;
}

void res_init(sp_res *res, sp_req *req, conn *c) {
    res->req = req;
    res->c = c;
    res->fields = res->fields_in;
    res->store_end = res->store_in + RES_INLINE_BYTES;
    res->status = 200;
    res_clear_head(res);
    res->written = 0;
    res->head_sent = res->finished = res->failed = res->force_close = res->taken_over = 0;
    res->status_refused = 0;
    res->out = (http_out){0};
}

int res_take_over(sp_res *res, void (*release)(void *arg), void *arg) {
    int rc = res->req->xops->upgrade(res); /* HTTP/1.1 keeps the head out of the buffer */
    if (rc < 0)
        return rc;
    /* Nothing of HTTP is sent from now on: the sp_res_* calls see a
     * finished response, and the driver closes after the handler. */
    res->taken_over = 1;
    res->head_sent = 1;
    res->finished = 1;
    res->release = release;
    res->release_arg = arg;
    return 0;
}

/* RFC 9110 §15.2: a 1xx is interim; the exchange ends with a 2xx-5xx. A
 * handler's 1xx as its answer would go out with no body framing and the
 * connection open, so the next response would be read as this one's (a
 * pooling proxy hands it to another client), and a 101 would let a client
 * tunnel past a proxy. Refused: logged, and the answer becomes a 500. The
 * server sends its own interims: 100 Continue (sp_read), and the WebSocket
 * upgrade its 101, after res_take_over. */
__attribute__((cold, noinline)) int res_refuse_interim(sp_res *r, int status) {
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

/* RFC 8297: 103 Early Hints, an interim response before the answer, so the
 * client may start fetching the linked resources while the handler works. */
int sp_res_early_hints(sp_res *r, const char *const *links, size_t n) {
    if (r->head_sent)
        return -EALREADY;
    if (n == 0 || n > HINTS_MAX)
        return -EINVAL;
    if (r->req->head.minor_version == 0)
        return 0; /* RFC 9110 §15.2 (semantics, any protocol): no 1xx to an HTTP/1.0 client */
    http_field f[HINTS_MAX];
    for (size_t i = 0; i < n; i++)
        f[i] = (http_field){"Link", 4, links[i], strlen(links[i])};
    /* The values' check, the same for every protocol: the writer's
     * (fields_checked 0), on a head that goes nowhere. */
    http_response hr = {.status = 103,
                        .minor_version = 1,
                        .keep_alive = 1,
                        .content_length = -1,
                        .fields = f,
                        .nfields = n};
    char head[2048];
    http_out o;
    int h = http_write_head(&hr, head, sizeof head, &o);
    return h < 0 ? h : r->req->xops->interim(r, 103, f, n);
}

int sp_res_status(sp_res *r, int status) {
    if (r->head_sent)
        return -EALREADY;
    if (status < 100 || status > 599)
        return -EINVAL;
    if (status < 200)
        return res_refuse_interim(r, status);
    r->status = status;
    return 0;
}

static int owned_by_server(const char *name, size_t n) {
    return http_ieq(name, n, "content-length", 14) || http_ieq(name, n, "transfer-encoding", 17) ||
           http_ieq(name, n, "date", 4) || http_ieq(name, n, "connection", 10);
}

/* The response outgrew its own store (RES_INLINE_*): its fields and their
 * bytes move to a block of the whole caps, freed when the request is over.
 * 0, -ENOMEM, or -ENOSPC (no room to register the free). */
__attribute__((noinline)) static int grow(sp_res *r) {
    char *b = malloc(RES_MAX_FIELDS * sizeof(http_field) + RES_FIELD_BYTES);
    if (!b)
        return -ENOMEM;
    if (req_defer(r->req, free, b) < 0) {
        free(b);
        return -ENOSPC;
    }
    http_field *f = (http_field *)(void *)b;
    char *end = b + RES_MAX_FIELDS * sizeof(http_field) + RES_FIELD_BYTES;
    memcpy(end - r->field_bytes, r->store_end - r->field_bytes, r->field_bytes);
    for (size_t i = 0; i < r->nfields; i++) {
        const http_field *o = &r->fields[i];
        f[i] = (http_field){end - (r->store_end - o->name), o->name_len,
                            end - (r->store_end - o->value), o->value_len};
    }
    r->fields = f;
    r->store_end = end;
    return 0;
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
    int inline_ = r->fields == r->fields_in;
    if (r->nfields == (inline_ ? RES_INLINE_FIELDS : RES_MAX_FIELDS) ||
        r->field_bytes + nl + vl > (inline_ ? RES_INLINE_BYTES : RES_FIELD_BYTES)) {
        if (!inline_ || r->field_bytes + nl + vl > RES_FIELD_BYTES)
            return -ENOSPC; /* past the whole caps */
        int rc = grow(r);
        if (rc < 0)
            return rc;
    }
    char *p = r->store_end - r->field_bytes - (nl + vl);
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

ssize_t sp_res_write(sp_res *r, const void *buf, size_t len) {
    if (r->failed)
        return -EPIPE;
    if (r->finished)
        return -EALREADY;
    if (r->declared >= 0 && r->written + len > (uint64_t)r->declared)
        return -EFBIG;
    int rc = r->req->xops->send(r, buf, len, 0);
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
    rc = r->req->xops->send(r, body, len, 1);
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
    return r->req->xops->sendfile(r, fd, off, count);
}

int sp_res_finish(sp_res *r) {
    if (r->finished)
        return 0;
    if (r->failed)
        return -EPIPE;
    return r->req->xops->finish(r);
}

int sp_res_trailers_possible(const sp_res *r) {
    const sp_req *q = r->req;
    if (r->finished || r->failed || q->head.method_id == HTTP_M_HEAD || r->status == 204 ||
        r->status == 304)
        return 0;
    return q->xops->trailers_possible(r);
}

static int trailers_checked(const sp_field *f, size_t n) {
    size_t bytes = 0;
    if (n > RES_TRAILERS_MAX)
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
    return bytes > RES_TRAILER_BYTES_MAX ? -ENOSPC : 0;
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
    return r->req->xops->trailers(r, f, n);
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
