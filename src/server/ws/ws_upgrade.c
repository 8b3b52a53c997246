/* ws_upgrade.c — the WebSocket handshake: over HTTP/1.1 the Upgrade
 * request checked and answered with a 101 written on the connection taken
 * over; over HTTP/2 an extended CONNECT (RFC 8441) answered with a 200 on
 * its stream, which then carries the frames (the exchange's tunnel).
 * permessage-deflate is negotiated by ws_ext.c either way. */
#include "http/http_chars.h"
#include "server/conn_io.h"
#include "server/handler.h"
#include "server/ws/ws_deflate.h"
#include "server/ws/ws_ext.h"
#include "server/ws/ws_frame.h"
#include "server/ws/ws_int.h"
#include "server/ws/ws_keepalive.h"
#include "server/ws/ws_limits.h"
#include "server/ws/ws_registry.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t send_deadline(const sp_ws *ws) {
    return server_deadline(ws->s, server_options(ws->s)->send_timeout_ms);
}

/* 1 if any instance of a repeated header (name in lower case) has the
 * token (ws_has_token). */
static int header_has_token(const sp_req *req, const char *name, const char *tok) {
    sp_str n, v;
    for (size_t i = 0; sp_req_header_at(req, i, &n, &v); i++)
        if (http_ieq(n.ptr, n.len, name, strlen(name)) && v.ptr && ws_has_token(v.ptr, v.len, tok))
            return 1;
    return 0;
}

/* Tries each Sec-WebSocket-Extensions header in turn for an offer of
 * permessage-deflate we accept (ws_ext.c). 1 with *p and resp, else 0. */
static int negotiate(const sp_req *req, int bits, ws_deflate_params *p, char *resp) {
    sp_str n, v;
    for (size_t i = 0; sp_req_header_at(req, i, &n, &v); i++)
        if (http_ieq(n.ptr, n.len, "sec-websocket-extensions", 24) && v.ptr &&
            ws_ext_negotiate(v.ptr, v.len, bits, p, resp))
            return 1;
    return 0;
}

static sp_ws *upgrade_fail(int err) {
    errno = err;
    return NULL;
}

/* The handshake's request over HTTP/1.1 (RFC 6455 §4.2.1): a GET with
 * Upgrade, Connection and a key; over HTTP/2 (RFC 8441 §5), an extended
 * CONNECT (h2_head.c made it a GET, websocket_connect) on an exchange with
 * a tunnel, no key. */
static int handshake_ok(sp_req *req, const exchange_tunnel *tun, sp_str key) {
    if (req_http_major(req) == 2)
        return req->head.websocket_connect && tun;
    return req->head.method_id == HTTP_M_GET && req->head.minor_version >= 1 && req->body_done &&
           header_has_token(req, "upgrade", "websocket") &&
           header_has_token(req, "connection", "upgrade") && key.ptr &&
           ws_key_valid(key.ptr, key.len);
}

/* Over HTTP/2 the answer is a 200 HEADERS with the handler's fields, ours
 * for the extension replacing its own (no Sec-WebSocket-Accept: RFC 8441
 * §5), and frames go on the stream. 0 or -errno. */
static int answer_on_stream(sp_ws *ws, sp_res *res, const char *ext) {
    if (ext) {
        size_t out = 0;
        for (size_t i = 0; i < res->nfields; i++)
            if (!http_ieq(res->fields[i].name, res->fields[i].name_len, "sec-websocket-extensions",
                          24))
                res->fields[out++] = res->fields[i];
        res->nfields = out;
        if (sp_res_header(res, "Sec-WebSocket-Extensions", ext) < 0)
            return -ENOMEM;
    }
    conn *own = (conn *)(ws + 1); /* allocated with it (sp_ws_upgrade) */
    if (!(own->buf = server_buf_get(ws->s)))
        return -ENOMEM;
    own->w.fd = -1;
    int rc = ws->tun->open(res);
    if (rc < 0) {
        server_buf_put(ws->s, own->buf);
        return rc;
    }
    ws->c = own; /* frames are read into a buffer of its own, from 0 */
    return 0;
}

sp_ws *sp_ws_upgrade(sp_req *req, sp_res *res, const sp_ws_options *opt) {
    if (res->head_sent)
        return upgrade_fail(EALREADY);
    void *tx;
    const exchange_tunnel *tun = req_tunnel(req, &tx);
    /* The upgrade's own reads of the head (the key, the version, the offer)
     * end with it: they leave the request as unsliced as they found it, so
     * a handler that took no slice gives its whole buffer back while the
     * WebSocket waits (ws_fill.c, req_park.c). */
    uint8_t sliced = req->sliced;
    sp_str ver = sp_req_header(req, "Sec-WebSocket-Version");
    sp_str key = sp_req_header(req, "Sec-WebSocket-Key");
    if (!handshake_ok(req, tun, key))
        return upgrade_fail(EINVAL);
    if (!ver.ptr || ver.len != 2 || memcmp(ver.ptr, "13", 2) != 0) {
        sp_res_header(res, "Sec-WebSocket-Version", "13");
        return upgrade_fail(EINVAL);
    }
    int bits, mem;
    ws_deflate_settings(req->srv, &bits, &mem);
    ws_deflate_params dp;
    char ext[WS_EXT_RESP_MAX];
    int deflate = bits && negotiate(req, bits, &dp, ext);
    ws_registry *reg = ws_registry_of(req->srv, ws_on_stop);
    /* Over HTTP/2 a conn of its own follows the struct (answer_on_stream). */
    _Static_assert(sizeof(sp_ws) % _Alignof(conn) == 0, "the conn after sp_ws is aligned");
    sp_ws *ws = reg ? calloc(1, sizeof *ws + (tun ? sizeof(conn) : 0)) : NULL;
    if (ws && deflate && !(ws->dfl = ws_deflate_new(&dp, mem))) {
        free(ws);
        ws = NULL;
    }
    if (!ws)
        return upgrade_fail(ENOMEM);
    ws->s = req->srv;
    ws->c = req->c;
    ws->l = server_loop(req->srv);
    /* Frames are read above the request's head, so the handler's slices
     * stay valid (ws_fill.c); a head leaving too little room gives that up. */
    if (!tun && server_buf_size(req->srv) - req->c->buf_off >= WS_FRAMES_ROOM)
        ws->floor = req->c->buf_off;
    ws->max_message = ws_max_message_of(req->srv, opt); /* --ws-max-message */
    ws->close_timeout_ms = opt && opt->close_timeout_ms ? opt->close_timeout_ms : WS_CLOSE_TIMEOUT;
    ws_parser_init(&ws->p, 1, ws->max_message);
    ws->p.rsv1_ok = (uint8_t)deflate;
    const sp_server_options *so = server_options(req->srv);
    ws_keepalive_init(
        &ws->ka, opt && opt->ping_interval_ms ? opt->ping_interval_ms : so->ws_ping_interval_ms,
        opt && opt->idle_timeout_ms ? opt->idle_timeout_ms : so->ws_idle_timeout_ms,
        loop_clock_ms());
    if (tun) {
        ws->tun = tun;
        ws->tx = tx;
        int rc = answer_on_stream(ws, res, deflate ? ext : NULL);
        if (rc < 0) {
            ws_deflate_free(ws->dfl);
            free(ws);
            return upgrade_fail(-rc);
        }
        res_take_over(res, ws_release, ws);
        ws->reg = reg;
        ws_registry_add(reg, &ws->reg_node);
        req->sliced = sliced;
        return ws;
    }

    char accept[WS_ACCEPT_LEN + 1];
    ws_accept_key(key.ptr, key.len, accept);
    char head[RES_FIELD_BYTES + 512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%s%s",
                     accept, deflate ? "Sec-WebSocket-Extensions: " : "", deflate ? ext : "",
                     deflate ? "\r\n" : "");
    size_t len = (size_t)n;
    for (size_t i = 0; i < res->nfields; i++) {
        const http_field *f = &res->fields[i];
        if (deflate && http_ieq(f->name, f->name_len, "sec-websocket-extensions", 24))
            continue; /* ours answers the offer: one answer only */
        if (len + f->name_len + f->value_len + 6 > sizeof head)
            break; /* cannot happen: the fields fit RES_FIELD_BYTES */
        memcpy(head + len, f->name, f->name_len);
        len += f->name_len;
        memcpy(head + len, ": ", 2);
        memcpy(head + len + 2, f->value, f->value_len);
        len += 2 + f->value_len;
        memcpy(head + len, "\r\n", 2);
        len += 2;
    }
    memcpy(head + len, "\r\n", 2);
    len += 2;

    res_take_over(res, ws_release, ws);
    res->status = 101; /* what the access log and the stats say it was */
    ws->reg = reg;
    ws_registry_add(reg, &ws->reg_node);
    ssize_t w = conn_write(ws->l, ws->c, head, len, send_deadline(ws));
    if (w < 0) {
        ws->state = WS_DONE; /* freed by ws_release when the handler returns */
        return upgrade_fail((int)-w);
    }
    req->sliced = sliced;
    return ws;
}
