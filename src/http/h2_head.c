/* h2_head.c — an HTTP/2 request's header list as an HTTP/1.1 head (see
 * h2_head.h). nghttp2 checks most of RFC 9113 §8.3 already; these rules
 * stand on their own so the head the handlers see never depends on it. */
#include "http/h2_head.h"

#include "http/http_chars.h"

#include <stdint.h>
#include <string.h>

void h2_head_init(h2_head *h, http_request *req, size_t target_max) {
    *h = (h2_head){.req = req, .target_max = target_max};
    req->nfields = 0;
    req->method = req->target = req->host = NULL;
    req->method_len = req->target_len = req->host_len = 0;
    req->method_id = HTTP_M_OTHER;
    req->minor_version = 1;
    req->framing = HTTP_BODY_NONE;
    req->content_length = 0;
    req->keep_alive = 1;
    req->conn_close = req->conn_upgrade = req->expect_continue = req->host_from_target = 0;
    req->websocket_connect = 0;
}

/* Each pseudo-header at most once: the slot it fills must be empty. */
static int take_once(const char **slot, size_t *len, const char *v, size_t vl) {
    if (*slot)
        return -400;
    *slot = v;
    *len = vl;
    return 0;
}

static int pseudo(h2_head *h, const char *name, size_t nl, const char *v, size_t vl) {
    http_request *r = h->req;
    if (h->regular_seen)
        return -400; /* §8.3: pseudo-headers come first */
    if (http_ieq(name, nl, ":method", 7))
        return take_once(&r->method, &r->method_len, v, vl);
    if (http_ieq(name, nl, ":scheme", 7))
        return take_once(&h->scheme, &h->scheme_len, v, vl);
    if (http_ieq(name, nl, ":authority", 10))
        return take_once(&h->authority, &h->authority_len, v, vl);
    if (http_ieq(name, nl, ":path", 5)) {
        if (h->target_max && vl > h->target_max)
            return -414;
        return take_once(&r->target, &r->target_len, v, vl);
    }
    if (http_ieq(name, nl, ":protocol", 9)) /* RFC 8441 §4: extended CONNECT */
        return take_once(&h->protocol, &h->protocol_len, v, vl);
    return -400; /* :status in a request, or unknown */
}

/* RFC 9113 §8.2.2: fields that only mean something on one HTTP/1.1 hop. */
static int connection_specific(const char *n, size_t nl) {
    return http_ieq(n, nl, "connection", 10) || http_ieq(n, nl, "keep-alive", 10) ||
           http_ieq(n, nl, "proxy-connection", 16) || http_ieq(n, nl, "transfer-encoding", 17) ||
           http_ieq(n, nl, "upgrade", 7);
}

static int content_length(h2_head *h, const char *v, size_t vl) {
    if (vl == 0 || vl > 19)
        return -400;
    uint64_t n = 0;
    for (size_t i = 0; i < vl; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -400;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    if (h->cl_seen && n != h->req->content_length)
        return -400; /* two different lengths: which one frames the body? */
    h->cl_seen = 1;
    h->req->content_length = n;
    return 0;
}

int h2_head_add(h2_head *h, const char *name, size_t nl, const char *value, size_t vl) {
    if (nl == 0)
        return -400;
    if (!h->chars_checked) {
        for (size_t i = 0; i < nl; i++)
            if (name[i] >= 'A' && name[i] <= 'Z')
                return -400; /* §8.2.1: names are lower case */
        for (size_t i = 0; i < vl; i++)
            if (value[i] == '\0' || value[i] == '\r' || value[i] == '\n')
                return -400; /* §8.2.1: they would split the field in HTTP/1.1 */
    }
    if (name[0] == ':')
        return pseudo(h, name, nl, value, vl);
    h->regular_seen = 1;
    if (connection_specific(name, nl))
        return -400;
    if (http_ieq(name, nl, "te", 2) && !http_ieq(value, vl, "trailers", 8))
        return -400;
    int rc = 0;
    if (http_ieq(name, nl, "content-length", 14))
        rc = content_length(h, value, vl);
    else if (http_ieq(name, nl, "host", 4))
        rc = take_once(&h->host, &h->host_len, value, vl);
    if (rc < 0)
        return rc;
    http_request *r = h->req;
    if (r->nfields == r->fields_cap)
        return -431;
    r->fields[r->nfields++] = (http_field){name, nl, value, vl};
    return 0;
}

static int same_host(const char *a, size_t al, const char *b, size_t bl) {
    if (al != bl)
        return 0;
    for (size_t i = 0; i < al; i++)
        if (http_lower((unsigned char)a[i]) != http_lower((unsigned char)b[i]))
            return 0;
    return 1;
}

static int path_ok(const http_request *r) {
    if (r->target_len == 0)
        return 0;
    if (r->target[0] == '/')
        return 1;
    return r->target_len == 1 && r->target[0] == '*' && r->method_id == HTTP_M_OPTIONS;
}

int h2_head_end(h2_head *h, int end_stream) {
    http_request *r = h->req;
    if (!r->method || r->method_len == 0)
        return -400;
    r->method_id = http_method_of(r->method, r->method_len);
    if (r->method_id == HTTP_M_CONNECT && !h->protocol)
        return -501; /* a plain CONNECT: no tunnels */
    if (h->protocol && r->method_id != HTTP_M_CONNECT)
        return -400; /* RFC 8441 §4: :protocol only with CONNECT */
    if (!h->scheme || h->scheme_len == 0 || !r->target || !path_ok(r))
        return -400; /* an extended CONNECT needs both too (RFC 8441 §4) */
    if (h->protocol) {
        if (!http_ieq(h->protocol, h->protocol_len, "websocket", 9))
            return -501; /* a protocol we do not carry */
        if (!h->authority)
            return -400;
        /* Handlers see a WebSocket handshake as over HTTP/1.1: a GET. */
        r->method = "GET";
        r->method_len = 3;
        r->method_id = HTTP_M_GET;
        r->websocket_connect = 1;
    }
    if (h->authority && h->host && !same_host(h->host, h->host_len, h->authority, h->authority_len))
        return -400; /* §8.3.1: they must name the same origin */
    if (h->authority) {
        if (h->authority_len == 0)
            return -400;
        r->host = h->authority;
        r->host_len = h->authority_len;
        if (!h->host) { /* handlers and apps read Host: give them the authority as one */
            if (r->nfields == r->fields_cap)
                return -431;
            r->fields[r->nfields++] = (http_field){"host", 4, h->authority, h->authority_len};
        }
    } else if (h->host && h->host_len) {
        r->host = h->host;
        r->host_len = h->host_len;
    } else {
        return -400;
    }
    if (r->websocket_connect) {
        if (h->cl_seen || end_stream)
            return -400; /* the stream carries the WebSocket: no body, no end */
        r->framing = HTTP_BODY_NONE;
    } else if (h->cl_seen) {
        if (end_stream && r->content_length)
            return -400; /* a length promised, and the stream ended without it */
        r->framing = HTTP_BODY_LENGTH;
    } else {
        r->framing = end_stream ? HTTP_BODY_NONE : HTTP_BODY_CHUNKED;
    }
    return 0;
}
