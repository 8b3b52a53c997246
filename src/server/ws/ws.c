/* ws.c — WebSockets over a connection taken over from HTTP, or an HTTP/2
 * stream (RFC 8441, through the exchange's tunnel; the handshake is
 * ws_upgrade.c): whole messages
 * reassembled from frames read through the connection's own buffer
 * (ws_frame.c checks them; ws_deflate.c inflates), pings answered, the
 * closing handshake, whole frames sent under a writer lock so several
 * coroutines may send, keep-alive pings and a 1001 close after the idle
 * timeout (ws_keepalive.c), and a 1001 close for every WebSocket when the
 * server stops. Waiting for bytes, a plain connection holds
 * no read buffer (wait_unbuffered). */
#include "base/list.h"
#include "http/http_chars.h"
#include "loop/sync.h"
#include "net/net.h"
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
#include <sys/socket.h>

/* ---- the transport: the connection, or an HTTP/2 stream (ws->tun) ------ */

ssize_t ws_read(sp_ws *ws, void *buf, size_t len, int64_t deadline) {
    if (ws->tun)
        return ws->tun->read(ws->tx, buf, len, deadline);
    return conn_read(ws->l, ws->c, buf, len, deadline);
}

/* Shuts our sending side: the TCP half-close, or the stream's end. */
static int ws_shut(sp_ws *ws) {
    if (ws->tun) {
        ws->tun->close(ws->tx, 0);
        return 0;
    }
    return shutdown(ws->c->w.fd, SHUT_WR);
}

/* A sender parked on a full socket (or a shut stream window) gives up. */
static void ws_wake_writer(sp_ws *ws, int result) {
    if (ws->tun)
        ws->tun->wake_writer(ws->tx, result);
    else if (ws->c->w.writer)
        loop_wake(ws->l, ws->c->w.writer, result);
}

/* ---- the server's WebSockets, told when it stops (ws_registry.c) -------- */

void ws_on_stop(list_node *member) {
    sp_ws *ws = container_of(member, sp_ws, reg_node);
    if (ws->recv_task)
        loop_wake(ws->l, ws->recv_task, -ESHUTDOWN);
}

static void reg_remove(sp_ws *ws) {
    if (ws->reg)
        ws_registry_remove(ws->reg, &ws->reg_node);
    ws->reg = NULL;
}

/* ---- sending ---------------------------------------------------------- */

static int64_t send_deadline(const sp_ws *ws) {
    return server_deadline(ws->s, server_options(ws->s)->send_timeout_ms);
}

/* The connection cannot go on (a frame may be half out, or could not be
 * sent in time): done, and the handler's sp_ws_recv and a sender parked on
 * the full socket are told at once, so a peer that does not keep up
 * leaves at once. */
static void lost(sp_ws *ws) {
    ws->state = WS_DONE;
    if (!ws->close_code)
        ws->close_code = WS_CLOSE_ABNORMAL;
    if (ws->recv_task)
        loop_wake(ws->l, ws->recv_task, -ECONNRESET);
    ws_wake_writer(ws, -EPIPE);
}

/* Sends one whole frame under the writer lock by deadline (the lock
 * included), only while WS_OPEN; a close frame moves the state to
 * WS_CLOSE_SENT, a failed or late write to WS_DONE. */
static int send_frame_by(sp_ws *ws, int opcode, const void *data, size_t len, int64_t deadline) {
    if (!loop_task(ws->l))
        return -EPERM;
    ws->senders++;
    int rc = mutex_lock(ws->l, &ws->wlock, deadline, NULL);
    if (rc == -EAGAIN || rc == -ETIMEDOUT) {
        rc = -ETIMEDOUT; /* another sender is stuck on a full socket */
        lost(ws);
    }
    if (rc < 0)
        goto out;
    if (ws->state != WS_OPEN) {
        rc = -EPIPE;
        goto unlock;
    }
    /* Compressed here, under the lock: the compressor's history must be
     * the order the frames leave in. */
    const uint8_t *payload = data;
    size_t plen = len;
    int rsv1 = 0;
    ws_blob *hold = NULL;
    if (ws->dfl && opcode < 8 &&
        (rc = ws_deflate_encode(ws->s, ws->dfl, data, len, &payload, &plen, &rsv1, &hold)) < 0)
        goto unlock;
    uint8_t head[WS_HEAD_MAX];
    struct iovec iov[2] = {
        {head, ws_write_head(head, 1, opcode | (rsv1 ? WS_RSV1 : 0), plen, NULL)},
        {(void *)payload, plen}};
    ssize_t n = ws->tun ? ws->tun->writev(ws->tx, iov, plen ? 2 : 1, deadline)
                        : conn_writev(ws->l, ws->c, iov, plen ? 2 : 1, deadline, 0);
    ws_blob_put(hold);
    if (opcode == WS_OP_CLOSE)
        ws->state = WS_CLOSE_SENT;
    if (n < 0) {
        lost(ws); /* a frame may be half out: nothing more can follow it */
        rc = (int)n;
    }
unlock:
    mutex_unlock(ws->l, &ws->wlock);
    if (rc == 0)
        loop_charge(ws->l, len); /* fairness, outside the lock (loop.h) */
out:
    ws->senders--;
    if (ws->releaser && ws->senders == 0)
        loop_wake(ws->l, ws->releaser, 0);
    return rc;
}

static int send_frame(sp_ws *ws, int opcode, const void *data, size_t len) {
    return send_frame_by(ws, opcode, data, len, send_deadline(ws));
}

static int send_close(sp_ws *ws, uint16_t code, const char *reason, size_t rlen) {
    uint8_t payload[WS_CONTROL_MAX];
    size_t n = 0;
    if (code) {
        payload[0] = (uint8_t)(code >> 8);
        payload[1] = (uint8_t)code;
        if (rlen)
            memcpy(payload + 2, reason, rlen);
        n = 2 + rlen;
    }
    return send_frame(ws, WS_OP_CLOSE, payload, n);
}

int sp_ws_send_timeout(sp_ws *ws, int opcode, const void *data, size_t len, int64_t timeout_ms) {
    switch (opcode) {
    case SP_WS_TEXT:
        if (!ws_utf8_valid(data, len))
            return -EILSEQ;
        break;
    case SP_WS_BINARY:
        break;
    case SP_WS_PING:
    case SP_WS_PONG:
        if (len > WS_CONTROL_MAX)
            return -EMSGSIZE;
        break;
    default:
        return -EINVAL;
    }
    if (ws->state != WS_OPEN)
        return -EPIPE;
    int64_t now = loop_clock_ms(), deadline = send_deadline(ws);
    if (timeout_ms >= 0)
        deadline = timeout_ms < LOOP_NO_DEADLINE - now ? now + timeout_ms : LOOP_NO_DEADLINE;
    return send_frame_by(ws, opcode, data, len, deadline);
}

int sp_ws_send(sp_ws *ws, int opcode, const void *data, size_t len) {
    return sp_ws_send_timeout(ws, opcode, data, len, -1);
}

/* ---- ending ------------------------------------------------------------- */

/* Fails the connection (RFC 6455 §7.1.7): a close with code, our side shut,
 * then what the peer still sends is dropped until it closes or the close
 * timeout passes, so it reads our close rather than a reset. */
static int fail(sp_ws *ws, int code, int err) {
    int sent = ws->state != WS_OPEN || send_close(ws, (uint16_t)code, NULL, 0) == 0;
    ws->state = WS_DONE;
    if (!ws->close_code)
        ws->close_code = code;
    if (sent && ws_shut(ws) == 0) {
        int64_t deadline = loop_clock_ms() + ws->close_timeout_ms;
        char scratch[4096];
        while (ws_read(ws, scratch, sizeof scratch, deadline) > 0)
            ;
    }
    return err;
}

static int code_errno(int code) {
    switch (code) {
    case WS_CLOSE_BAD_DATA:
        return -EILSEQ;
    case WS_CLOSE_TOO_BIG:
        return -EMSGSIZE;
    default:
        return -EPROTO;
    }
}

int sp_ws_close_code(const sp_ws *ws) {
    return ws->close_code;
}

/* ---- receiving ------------------------------------------------------------ */

/* Makes room for len more message bytes (and a NUL). -EMSGSIZE for what no
 * buffer can hold (max_message may be SIZE_MAX: "no limit"), so neither the
 * sum nor the doubling below can overflow. */
static int reserve(sp_ws *ws, uint64_t len) {
    if (len > SIZE_MAX / 2 - 1 - ws->msg_len)
        return -EMSGSIZE;
    size_t need = ws->msg_len + (size_t)len + 1;
    if (need <= ws->msg_cap)
        return 0;
    size_t cap = ws->msg_cap ? ws->msg_cap : 4096;
    while (cap < need)
        cap *= 2;
    uint8_t *m = realloc(ws->msg, cap);
    if (!m)
        return -ENOMEM;
    ws->msg = m;
    ws->msg_cap = cap;
    return 0;
}

/* Inflates n more bytes of a compressed message into ws->msg (last: the
 * message ends), checking text as UTF-8. 0 or minus a close code. */
static int inflate_part(sp_ws *ws, const uint8_t *src, size_t n, int last) {
    size_t before = ws->msg_len;
    ws_sink o = {&ws->msg, &ws->msg_len, &ws->msg_cap, ws->max_message};
    int rc = ws_deflate_inflate(ws->dfl, src, n, last, &o);
    if (rc == -ENOMEM)
        return -WS_CLOSE_TOO_BIG; /* as reserve's: the message does not fit */
    if (rc == 0 && ws->p.msg_opcode == WS_OP_TEXT) {
        ws->zutf8 = ws_utf8_feed(ws->zutf8, ws->msg + before, ws->msg_len - before);
        if (ws->zutf8 == WS_UTF8_BAD || (last && ws->zutf8))
            rc = -WS_CLOSE_BAD_DATA;
    }
    return rc;
}

/* A control frame has arrived whole. 1 to go on reading, or what recv
 * returns. */
static int on_control(sp_ws *ws) {
    switch (ws->p.cur_opcode) {
    case WS_OP_PING:
        if (ws->state == WS_OPEN) {
            int rc = send_frame(ws, WS_OP_PONG, ws->ctl, ws->ctl_len);
            if (ws->state == WS_DONE)
                return -ECONNRESET; /* lost meanwhile (lost()) */
            if (rc < 0 && rc != -EPIPE)
                return rc;
        }
        return 1;
    case WS_OP_PONG:
        return 1;
    default: { /* close */
        uint16_t code;
        int rc = ws_parse_close(ws->ctl, ws->ctl_len, &code);
        if (rc < 0)
            return fail(ws, -rc, code_errno(-rc));
        ws->close_code = code;
        if (ws->state == WS_OPEN) {
            /* Echo the code (RFC 6455 §5.5.1); none if none came. */
            send_close(ws, code == WS_CLOSE_NO_STATUS ? 0 : code, NULL, 0);
        }
        ws->state = WS_DONE;
        return -EPIPE;
    }
    }
}

/* Reads until a whole data message or a control frame that ends the
 * conversation. 0 with the message in ws->msg, or -errno. */
static int read_message(sp_ws *ws, int64_t deadline) {
    conn *c = ws->c;
    for (;;) {
        if (!ws->in_frame) {
            ws_frame f;
            int rc =
                ws_parse_head(&ws->p, (uint8_t *)c->buf + c->buf_off, c->buf_len - c->buf_off, &f);
            if (rc < 0)
                return fail(ws, -rc, code_errno(-rc));
            if (rc == 0) {
                ssize_t n = ws_fill(ws, deadline);
                if (n < 0)
                    return (int)n;
                continue;
            }
            c->buf_off += (uint32_t)rc;
            ws->in_frame = 1;
            if (f.opcode >= 8)
                ws->ctl_len = 0;
            else if (ws->p.compressed)
                ws->zutf8 = f.opcode == WS_OP_CONT ? ws->zutf8 : 0;
            else if (reserve(ws, f.len) < 0)
                return fail(ws, WS_CLOSE_TOO_BIG, -EMSGSIZE);
        }
        int control = ws->p.cur_opcode >= 8, zipped = !control && ws->p.compressed;
        while (ws->p.left) {
            uint8_t *dst = control ? ws->ctl + ws->ctl_len : ws->msg + ws->msg_len;
            size_t avail = c->buf_len - c->buf_off;
            size_t take;
            if (avail && zipped) {
                /* Unmasked and inflated where it lies: the message limit
                 * counts what it inflates to. */
                uint8_t *src = (uint8_t *)c->buf + c->buf_off;
                take = avail < ws->p.left ? avail : (size_t)ws->p.left;
                c->buf_off += (uint32_t)take;
                int rc = ws_parse_payload(&ws->p, src, take);
                if (rc == 0)
                    rc = inflate_part(ws, src, take, 0);
                if (rc < 0)
                    return fail(ws, -rc, code_errno(-rc));
                continue;
            }
            if (avail) {
                take = avail < ws->p.left ? avail : (size_t)ws->p.left;
                memcpy(dst, c->buf + c->buf_off, take);
                c->buf_off += (uint32_t)take;
            } else if (!control && !zipped && ws->p.left >= WS_DIRECT_READ) {
                /* A large payload: straight into the message, no copy. */
                if (server_stopping(ws->s))
                    return -ESHUTDOWN;
                ws->recv_task = loop_task(ws->l);
                ssize_t n = ws_read(ws, dst, (size_t)ws->p.left, deadline);
                ws->recv_task = NULL;
                if (n <= 0)
                    return n == 0 ? -ECONNRESET : (int)n;
                loop_charge(ws->l, (size_t)n);
                take = (size_t)n;
                ws_keepalive_heard(&ws->ka, loop_clock_ms());
            } else {
                ssize_t n = ws_fill(ws, deadline);
                if (n < 0)
                    return (int)n;
                continue;
            }
            int rc = ws_parse_payload(&ws->p, dst, take);
            if (control)
                ws->ctl_len += take;
            else
                ws->msg_len += take;
            if (rc < 0)
                return fail(ws, -rc, code_errno(-rc));
        }
        ws->in_frame = 0;
        if (zipped && ws->p.cur_fin) {
            int rc = inflate_part(ws, NULL, 0, 1);
            if (rc < 0)
                return fail(ws, -rc, code_errno(-rc));
        }
        if (control) {
            int rc = on_control(ws);
            if (rc <= 0)
                return rc;
            continue;
        }
        if (ws->p.cur_fin)
            return 0;
    }
}

/* read_message that keeps the connection alive meanwhile: a ping after
 * each stretch of silence, a 1001 close once the peer has been silent for
 * the idle timeout (however long the handler would wait). -ETIMEDOUT only
 * at the handler's own deadline. */
static int read_alive(sp_ws *ws, int64_t deadline) {
    for (;;) {
        if (ws->interrupt)
            return -EINTR;
        int64_t due = ws_keepalive_due(&ws->ka);
        int rc = read_message(ws, due < deadline ? due : deadline);
        if (rc != -ETIMEDOUT)
            return rc;
        int64_t now = loop_clock_ms();
        switch (ws_keepalive_step(&ws->ka, now)) {
        case WS_KA_CLOSE:
            return fail(ws, WS_CLOSE_GOING_AWAY, -ECONNABORTED);
        case WS_KA_PING: {
            /* Within the peer's time to answer: one that cannot even take
             * a ping by then is gone. */
            int64_t by = ws->ka.idle_ms ? now + ws->ka.idle_ms - ws->ka.ping_ms : send_deadline(ws);
            rc = send_frame_by(ws, WS_OP_PING, NULL, 0, by);
            if (rc < 0 && rc != -EPIPE)
                return -ECONNRESET;
            break;
        }
        default:
            break;
        }
        if (now >= deadline)
            return -ETIMEDOUT;
    }
}

static int recv_error(sp_ws *ws, int rc) {
    switch (rc) {
    case -EINTR:
        if (!ws->interrupt)
            break; /* not ours: a failed read */
        ws->interrupt = 0;
        return rc; /* still usable, as after a timeout */
    case -ETIMEDOUT:
        return rc; /* still usable */
    case -ESHUTDOWN:
        return fail(ws, WS_CLOSE_GOING_AWAY, -ESHUTDOWN);
    case -EPIPE:
    case -EPROTO:
    case -EILSEQ:
    case -EMSGSIZE:
    case -ECONNABORTED:
        return rc; /* ended already, with the closing handshake */
    default:
        break;
    }
    /* The TCP connection failed or ended without a close frame. */
    ws->state = WS_DONE;
    if (!ws->close_code)
        ws->close_code = WS_CLOSE_ABNORMAL;
    return -ECONNRESET;
}

void sp_ws_interrupt(sp_ws *ws) {
    ws->interrupt = 1;
    if (ws->recv_task)
        loop_wake(ws->l, ws->recv_task, -EINTR);
}

int sp_ws_recv(sp_ws *ws, sp_ws_msg *out, int64_t timeout_ms) {
    if (ws->delivered) {
        ws->msg_len = 0;
        ws->delivered = 0;
    }
    if (ws->state == WS_DONE)
        return -EPIPE;
    if (!loop_task(ws->l))
        return -EPERM;
    if (server_stopping(ws->s))
        return fail(ws, WS_CLOSE_GOING_AWAY, -ESHUTDOWN);
    int rc = read_alive(ws, sync_deadline(timeout_ms));
    if (rc < 0)
        return recv_error(ws, rc);
    loop_charge(ws->l, ws->msg_len); /* tiny frames as fast as we read them */
    ws->msg[ws->msg_len] = '\0';
    ws->delivered = 1;
    *out = (sp_ws_msg){.opcode = ws->p.cur_opcode, .data = ws->msg, .len = ws->msg_len};
    return 0;
}

int sp_ws_close(sp_ws *ws, uint16_t code, const char *reason) {
    size_t rlen = reason ? strlen(reason) : 0;
    if (code && (!ws_close_code_valid(code) || rlen > WS_CONTROL_MAX - 2 ||
                 !ws_utf8_valid((const uint8_t *)reason, rlen)))
        return -EINVAL;
    if (ws->state != WS_OPEN)
        return -EPIPE;
    int rc = send_close(ws, code, reason, code ? rlen : 0);
    if (rc < 0)
        return rc;
    /* Drop what still comes until the peer's close answers ours. */
    int64_t deadline = loop_clock_ms() + ws->close_timeout_ms;
    for (;;) {
        if (ws->delivered) {
            ws->msg_len = 0;
            ws->delivered = 0;
        }
        int r = read_message(ws, deadline);
        if (r == 0) {
            ws->delivered = 1;
            continue;
        }
        if (r != -EPIPE) {
            ws->state = WS_DONE;
            if (!ws->close_code)
                ws->close_code = WS_CLOSE_ABNORMAL;
        }
        return 0;
    }
}

void ws_release(void *arg) {
    sp_ws *ws = arg;
    ws->state = WS_DONE;
    if (ws->senders) {
        /* Senders parked on a full socket give up now; those waiting for
         * the lock find the state WS_DONE when they get it. */
        ws_wake_writer(ws, -EPIPE);
        ws->releaser = loop_task(ws->l);
        while (ws->senders)
            loop_park(ws->l, LOOP_NO_DEADLINE, NULL);
    }
    if (ws->tun) {
        /* The stream ends as the TCP connection would: END_STREAM after
         * a closing handshake, a reset when it was lost (RFC 8441 §5). */
        ws->tun->close(ws->tx, ws->close_code == WS_CLOSE_ABNORMAL || !ws->close_code);
        if (ws->c->buf) /* none when it failed to come back after a long wait */
            server_buf_put(ws->s, ws->c->buf);
    }
    reg_remove(ws);
    ws_deflate_free(ws->dfl);
    free(ws->msg);
    free(ws);
}
