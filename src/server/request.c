/* request.c — the handler's view of a request: accessors over the parsed
 * head, the body's rate budget, and sp_read, which the request's protocol
 * (exchange_ops, handler.h) serves: HTTP/1.1 from the connection
 * (http1_ops.c), HTTP/2 from the stream (h2_stream.c). */
#include "server/server.h"

#include "http/http_chars.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

void req_init(sp_req *r, sp_server *s, conn *c, const exchange_ops *ops, void *ctx) {
    r->srv = s;
    r->c = c;
    r->xops = ops;
    r->xctx = ctx;
    r->head.nfields = 0;
    r->head.method = r->head.target = NULL;
    r->head.method_len = r->head.target_len = 0;
    r->head.framing = HTTP_BODY_NONE;
    r->head.minor_version = 1;
    r->head.method_id = HTTP_M_OTHER;
    r->match = NULL;
    r->body_left = 0;
    r->pend = NULL;
    r->pend_len = 0;
    r->body_done = 0;
    r->expect_pending = 0;
    r->ndefer = 0;
    r->body_error = 0;
    r->body_errno = 0;
    r->body_credit_us = (int64_t)s->opt.body_timeout_ms * 1000;
    r->drain_deadline = 0;
    r->sliced = 0;
    r->path_taken = 0;
    r->head_copy = r->park_copy = NULL;
    r->peer_text[0] = '\0';
    r->client_text[0] = '\0';
}

/* A slice into the connection's buffer goes out: from now on a long wait
 * keeps the buffer where it is (req_park.c). The flag is bookkeeping on a
 * request that is never const itself. */
static inline void sliced(const sp_req *r) {
    ((sp_req *)r)->sliced = 1;
}

sp_str sp_req_method(const sp_req *r) {
    sliced(r);
    return (sp_str){r->head.method, r->head.method_len};
}

sp_str sp_req_target(const sp_req *r) {
    sliced(r);
    return (sp_str){r->head.target, r->head.target_len};
}

/* The path is in the buffer's front (http_conn.c): a long wait keeps the
 * buffer where it is once the handler holds a slice of it (req_park.c). */
static inline void path_taken(const sp_req *r) {
    ((sp_req *)r)->path_taken = 1;
}

sp_str sp_req_path(const sp_req *r) {
    path_taken(r);
    return r->path;
}

sp_str sp_req_query(const sp_req *r) {
    sliced(r);
    return r->query;
}

int sp_req_minor_version(const sp_req *r) {
    return r->head.minor_version;
}

int64_t sp_req_content_length(const sp_req *r) {
    switch (r->head.framing) {
    case HTTP_BODY_LENGTH:
        return (int64_t)r->head.content_length;
    case HTTP_BODY_CHUNKED:
        return -1;
    default:
        return 0;
    }
}

sp_str sp_req_param(const sp_req *r, const char *name) {
    path_taken(r); /* the parameters are slices of the path */
    if (r->match) {
        size_t n = strlen(name);
        for (size_t i = 0; i < r->match->nparams; i++) {
            const route_param *p = &r->match->params[i];
            if (p->name_len == n && memcmp(p->name, name, n) == 0)
                return (sp_str){p->value, p->value_len};
        }
    }
    return (sp_str){NULL, 0};
}

sp_str sp_req_query_param(const sp_req *r, const char *name) {
    sliced(r);
    size_t n = strlen(name);
    const char *q = r->query.ptr, *end = q + r->query.len;
    while (q && q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        if ((size_t)(stop - q) >= n && memcmp(q, name, n) == 0 && (q + n == stop || q[n] == '=')) {
            const char *v = q + n == stop ? stop : q + n + 1;
            return (sp_str){v, (size_t)(stop - v)};
        }
        q = amp ? amp + 1 : end;
    }
    return (sp_str){NULL, 0};
}

sp_str sp_req_header(const sp_req *r, const char *name) {
    sliced(r);
    size_t n = strlen(name);
    for (size_t i = 0; i < r->head.nfields; i++) {
        const http_field *f = &r->head.fields[i];
        if (f->name_len != n)
            continue;
        size_t j = 0;
        while (j < n && http_lower((unsigned char)f->name[j]) == http_lower((unsigned char)name[j]))
            j++;
        if (j == n)
            return (sp_str){f->value, f->value_len};
    }
    return (sp_str){NULL, 0};
}

int sp_req_header_at(const sp_req *r, size_t i, sp_str *name, sp_str *value) {
    if (i >= r->head.nfields)
        return 0;
    sliced(r); /* slices of the buffer, as sp_req_header's: kept through a long wait */
    const http_field *f = &r->head.fields[i];
    *name = (sp_str){f->name, f->name_len};
    *value = (sp_str){f->value, f->value_len};
    return 1;
}

sp_str sp_req_host(const sp_req *r) {
    sliced(r);
    return (sp_str){r->head.host, r->head.host_len}; /* the parser chose it */
}

static void format_ip(const conn *c, char *out, size_t cap, int with_port) {
    char ip[INET6_ADDRSTRLEN];
    if (c->peer_family == AF_INET) {
        inet_ntop(AF_INET, c->peer_ip, ip, sizeof ip);
        if (with_port)
            snprintf(out, cap, "%s:%u", ip, c->peer_port);
        else
            snprintf(out, cap, "%s", ip);
    } else if (c->peer_family == AF_INET6) {
        inet_ntop(AF_INET6, c->peer_ip, ip, sizeof ip);
        if (with_port)
            snprintf(out, cap, "[%s]:%u", ip, c->peer_port);
        else
            snprintf(out, cap, "%s", ip);
    } else {
        snprintf(out, cap, "unix");
    }
}

const char *sp_req_peer(const sp_req *r) {
    sp_req *m = (sp_req *)r; /* a cache filled on first use */
    if (!m->peer_text[0])
        format_ip(r->c, m->peer_text, sizeof m->peer_text, 1);
    return r->peer_text;
}

const char *sp_req_client_addr(const sp_req *r) {
    sp_req *m = (sp_req *)r;
    if (!m->client_text[0]) {
        if (r->c->peer_trusted)
            fwd_client(&r->head, &r->srv->fwd, m->client_text, sizeof m->client_text);
        if (!m->client_text[0])
            format_ip(r->c, m->client_text, sizeof m->client_text, 0);
    }
    return r->client_text;
}

const char *sp_req_scheme(const sp_req *r) {
    if (r->c->tls)
        return "https";
    return r->c->peer_trusted && fwd_https(&r->head, &r->srv->fwd) ? "https" : "http";
}

/* ---- the body ---------------------------------------------------------- */

/* The body's rate budget, shared by HTTP/1.1 (http1_ops.c) and HTTP/2
 * streams (h2_stream.c) so both hold a trickle to one rule: silences longer
 * than the body timeout, or a body slower than body_min_rate. That rate is
 * a budget of waiting (body_credit_us): the first body_timeout of it is
 * free, each byte buys 1/rate s more, at most body_timeout is banked, and
 * only the time spent waiting for the client is charged, never the
 * handler's own pace. A trickle of one byte per gap shorter than the
 * timeout so runs out within about one body timeout, as mod_reqtimeout's
 * MinRate would have it. */
int64_t req_body_deadline(const sp_req *r, int64_t now) {
    const sp_server *s = r->srv;
    int64_t wait_ms = s->opt.body_timeout_ms;
    if (s->opt.body_min_rate && r->body_credit_us / 1000 < wait_ms)
        wait_ms = r->body_credit_us > 0 ? r->body_credit_us / 1000 : 0;
    return now + wait_ms;
}

void req_body_charge(sp_req *r, int64_t since, size_t n) {
    const sp_server *s = r->srv;
    uint64_t rate = s->opt.body_min_rate;
    if (!rate)
        return;
    int64_t cap = (int64_t)s->opt.body_timeout_ms * 1000;
    r->body_credit_us -= (loop_now(s->l) - since) * 1000;
    r->body_credit_us += (int64_t)((uint64_t)n * 1000000 / rate);
    if (r->body_credit_us > cap)
        r->body_credit_us = cap;
}

ssize_t req_body_fail(sp_req *r, int err, int status) {
    r->body_errno = err;
    r->body_error = status;
    return err;
}

/* The same for every protocol, so asked before the protocol is: a failed
 * body repeats its error, and past its end nothing more comes (the read
 * that finds the end costs no call through the table). */
ssize_t req_read_buffered(sp_req *r, void *buf, size_t len) {
    if (r->body_errno)
        return r->body_errno;
    if (r->body_done || len == 0)
        return 0;
    return r->xops->read(r, buf, len, 0);
}

ssize_t sp_read(sp_req *r, void *buf, size_t len) {
    if (r->body_errno)
        return r->body_errno;
    if (r->body_done || len == 0)
        return 0;
    return r->xops->read(r, buf, len, 1);
}

int req_defer(sp_req *r, void (*fn)(void *arg), void *arg) {
    if (r->ndefer == REQ_MAX_DEFER)
        return -ENOSPC;
    r->defer[r->ndefer].fn = fn;
    r->defer[r->ndefer].arg = arg;
    r->ndefer++;
    return 0;
}

void *req_deferred(const sp_req *r, void (*fn)(void *arg)) {
    for (int i = 0; i < r->ndefer; i++)
        if (r->defer[i].fn == fn)
            return r->defer[i].arg;
    return NULL;
}

void req_run_deferred(sp_req *r) {
    while (r->ndefer > 0) {
        r->ndefer--;
        r->defer[r->ndefer].fn(r->defer[r->ndefer].arg);
    }
    if (r->head_copy || r->park_copy)
        req_park_done(r); /* a long wait moved the head's bytes (req_park.c) */
}

int req_drain(sp_req *r, uint64_t max) {
    char scratch[4096];
    uint64_t dropped = 0;
    /* A whole deadline: a client that cannot send what is left within the
     * linger time loses its connection, not a worker's slot for longer. */
    r->drain_deadline = server_deadline(r->srv, r->srv->opt.linger_timeout_ms);
    while (!r->body_done && dropped <= max) {
        ssize_t n = sp_read(r, scratch, sizeof scratch);
        if (n <= 0)
            break;
        dropped += (uint64_t)n;
    }
    return r->body_done && !r->body_errno;
}
