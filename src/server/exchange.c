/* exchange.c — the exchange's cold parts (exchange.h): OPTIONS answers,
 * a connection's coroutine choosing its protocol (TLS handshake and ALPN
 * first), and the table of the protocols that drive connections of their
 * own, through which the server closes and stops them without naming them. */
#include "server/exchange.h"

#include "server/h2.h"

#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

/* Every method some route answers, for "OPTIONS *". */
static void all_methods(const router *rt, char *out, size_t cap) {
    out[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < rt->n; i++) {
        const char *m = rt->v[i].method ? rt->v[i].method : "GET, HEAD, POST, PUT, DELETE, PATCH";
        if (strstr(out, m))
            continue;
        int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", m);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        if (strcmp(m, "GET") == 0 && !strstr(out, "HEAD")) {
            w = snprintf(out + len, cap - len, ", HEAD");
            if (w > 0 && (size_t)w < cap - len)
                len += (size_t)w;
        }
    }
}

int exchange_answer_options(sp_server *s, sp_req *req, sp_res *res, const char *allow, int star) {
    char every[256], list[272]; /* allow (at most 255) + ", OPTIONS" */
    if (star) {
        all_methods(server_routes_for(s, req->c), every, sizeof every);
        allow = every;
    }
    snprintf(list, sizeof list, "%s%sOPTIONS", allow, allow[0] ? ", " : "");
    res->status = 204;
    int rc = sp_res_header(res, "Allow", list);
    return rc < 0 ? rc : sp_res_finish(res);
}

/* ---- a connection's coroutine: the choice of protocol ------------------- */

void exchange_main(void *arg) {
    conn *c = arg;
    sp_server *s = c->w.data;
    task *me = loop_task(s->l);
    loop_task_set_hup_watch(me, &c->w);
    /* A long wait in a handler gives back the read buffer (req_park.c, the
     * request the driver names in parked) and the stack below it (loop.h).
     * Under a binding that drives the loop too: the coroutine runs C only
     * (the binding's Python and its greenlets live on the main stack), so
     * nothing lives below its stack pointer while it waits, and the binding
     * reads the head through the request (req_get_info: rebased with it) or
     * copies it (the environ, the scope), never keeping a slice. */
    sp_req *parked = NULL;
    loop_task_set_park(me, req_park_hook, &parked, 1);
    /* A TLS connection's first coroutine shakes hands, before it holds a
     * buffer: a client stalling there costs a stack, for a bounded time. */
    int h2 = 0;
    if (c->tls && !SSL_is_init_finished(c->tls)) {
        if (conn_tls_accept(s, c) < 0)
            return;
        unsigned alen;
        const char *proto = server_conn_alpn(c, &alen);
        h2 = !s->http2_off && proto && alen == 2 && memcmp(proto, "h2", 2) == 0;
    }
    if (!c->buf) {
        c->buf = buf_pool_get(&s->bufs);
        if (!c->buf) {
            server_conn_close(s, c);
            return;
        }
        c->buf_len = c->buf_off = 0;
    }
    /* ALPN chose h2 (the preface comes over TLS), or an idle HTTP/2
     * connection woke; else HTTP/1.1, which hands the connection to HTTP/2
     * itself if its first bytes are the preface (prior knowledge, h2c). */
    if (h2 || !exchange_is_plain(c))
        h2_serve(s, c);
    else
        http_conn_serve(s, c, &parked);
}

/* ---- the protocols ------------------------------------------------------ */

static const exchange_protocol *const protocols[] = {&h2_protocol};

const exchange_protocol *exchange_owner(const conn *c) {
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        if (protocols[i]->owns(c))
            return protocols[i];
    return NULL;
}

void exchange_server_stop(sp_server *s) {
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        protocols[i]->server_stop(s);
}
