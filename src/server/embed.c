/* embed.c — embed.h's accessors: what a binding reads and sets of a
 * request and a response, so that sp_req and sp_res stay opaque outside
 * src/server/ (handler.h). Each is a plain function: a binding pays a call
 * where it read a field (the WSGI hello world's count: docs/ARCHITECTURE.md). */
#include "server/embed.h"
#include "server/handler.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

const http_request *req_get_head(const sp_req *r) {
    return &r->head;
}

int req_get_http_major(const sp_req *r) {
    return req_http_major(r);
}

const char *req_get_protocol_label(const sp_req *r) {
    return req_protocol_label(r);
}

int req_get_body_done(const sp_req *r) {
    return r->body_done;
}

uint64_t req_get_body_left(const sp_req *r) {
    return r->body_left;
}

int req_get_body_errno(const sp_req *r) {
    return r->body_errno;
}

void req_get_conn(const sp_req *r, req_conn_info *out) {
    const conn *c = r->c;
    memcpy(out->peer_ip, c->peer_ip, sizeof out->peer_ip);
    out->peer_port = c->peer_port;
    out->peer_family = c->peer_family;
    out->peer_trusted = c->peer_trusted;
    out->listener = c->listener;
    out->tls = c->tls != NULL;
    out->fd = c->w.fd;
}

void req_get_info(const sp_req *r, req_info *out) {
    out->head = &r->head;
    out->protocol_label = req_protocol_label(r);
    out->http_major = req_http_major(r);
    req_get_conn(r, &out->conn);
}

sp_str req_get_query(const sp_req *r) {
    uint8_t sliced = r->sliced;
    sp_str q = sp_req_query(r);
    ((sp_req *)r)->sliced = sliced; /* bookkeeping, as request.c's */
    return q;
}

sp_str req_get_host(const sp_req *r) {
    uint8_t sliced = r->sliced;
    sp_str h = sp_req_host(r);
    ((sp_req *)r)->sliced = sliced;
    return h;
}

sp_str req_get_path(const sp_req *r) {
    return r->path; /* copied at once: no slice is kept (path_taken stays) */
}

int req_get_tls(const sp_req *r) {
    return r->c->tls != NULL;
}

int req_client_left(sp_req *r) {
    if (req_http_major(r) == 2)
        return 0;
    char b;
    conn *c = r->c;
    ssize_t n = recv(c->w.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
        c->w.hup |= LOOP_RDHUP; /* as the loop would have latched it */
        return 1;
    }
    return 0;
}

int res_get_head_sent(const sp_res *res) {
    return res->head_sent;
}

int res_get_failed(const sp_res *res) {
    return res->failed;
}

int64_t res_get_declared(const sp_res *res) {
    return res->declared;
}

void res_set_force_close(sp_res *res, int close) {
    res->force_close = (uint8_t)(close != 0);
}

res_fields_mark res_get_fields_mark(const sp_res *res) {
    return (res_fields_mark){res->nfields, res->field_bytes};
}

void res_clear_head_to(sp_res *res, res_fields_mark m) {
    res_clear_head(res); /* the declared length too */
    res->nfields = m.nfields;
    res->field_bytes = m.field_bytes;
}
