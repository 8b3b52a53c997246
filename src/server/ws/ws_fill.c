/* ws_fill.c — a WebSocket's reads into its connection's buffer (ws_fill),
 * above the request's head (ws->floor), and the long wait: while the
 * handler waits in sp_ws_recv with nothing to read, the request's park
 * hook gives the buffer back (req_park.c: to the pool, its bytes in a
 * block of their own, when the handler took no slice into it; else only
 * its unused pages, the buffer and its bytes staying put). */
#include "net/net.h"
#include "server/conn_io.h"
#include "server/ws/ws_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A long wait between messages: the last message's buffer (valid only
 * until this receive, sp_ws_recv) goes, for the next message to make
 * another: what an idle WebSocket holds is then the same whatever it was
 * last sent. Kept while a fragmented message is being put together. */
static void drop_message_buffer(sp_ws *ws) {
    if (ws->msg_len)
        return;
    free(ws->msg);
    ws->msg = NULL;
    ws->msg_cap = 0;
}

/* Waits until the socket is readable; a long wait (trim) first gives back
 * the buffer (the park hook: the request's head below ws->floor and at most
 * a partial frame head above move to a block of their size, and come back
 * at the same offsets when the wait ends; a handler's slices keep the
 * buffer where it is, only its pages past the bytes go) and the stack
 * below. 0 when readable, or -errno (-ENOMEM: no buffer came back). */
static int wait_unbuffered(sp_ws *ws, int64_t deadline, int trim) {
    conn *c = ws->c;
    ws->recv_task = loop_task(ws->l);
    if (trim) {
        drop_message_buffer(ws);
        if (!loop_long_wait_begin(ws->l))
            server_buf_shed(ws->s, c->buf, c->buf_len); /* a task without the hook */
        loop_trim_when_parked(ws->l);
    }
    int rc = loop_wait_fd(ws->l, &c->w, LOOP_READ, deadline);
    if (trim)
        loop_long_wait_end(ws->l);
    ws->recv_task = NULL;
    if (!c->buf)
        return -ENOMEM; /* the connection is shut (req_park.c) */
    return rc < 0 ? rc : 0;
}

/* An HTTP/2 stream's DATA into the buffer (h2_tunnel.c), as the socket's
 * above: silent for LOOP_LONG_WAIT_MS, the rest is a long wait, in which
 * the buffer goes back to the pool (with no partial frame in it; else only
 * its pages past the bytes), so does the last message's, the stream frees
 * its own buffers (h2_tunnel.c) and the stack below is trimmed; each
 * comes back when DATA do. */
static ssize_t tunnel_read_in(sp_ws *ws, int64_t deadline) {
    conn *c = ws->c;
    return ws->tun->read(ws->tx, c->buf + c->buf_len, server_buf_size(ws->s) - c->buf_len,
                         deadline);
}

static ssize_t tunnel_fill(sp_ws *ws, int64_t deadline) {
    conn *c = ws->c;
    int64_t soon = loop_clock_ms() + LOOP_LONG_WAIT_MS;
    int can_be_long = deadline > soon;
    ws->recv_task = loop_task(ws->l);
    ssize_t n = tunnel_read_in(ws, can_be_long ? soon : deadline);
    if (n == -ETIMEDOUT && can_be_long) {
        (void)loop_long_wait_begin(ws->l); /* a stream's task has no park hook */
        drop_message_buffer(ws);
        if (c->buf_len) {
            server_buf_shed(ws->s, c->buf, c->buf_len);
        } else {
            server_buf_put_cold(ws->s, c->buf);
            c->buf = NULL;
        }
        loop_trim_when_parked(ws->l);
        int rc = ws->tun->wait(ws->tx, deadline);
        loop_long_wait_end(ws->l);
        if (!c->buf && !(c->buf = server_buf_get(ws->s)))
            rc = -ENOMEM;
        n = rc < 0 ? rc : tunnel_read_in(ws, deadline);
    }
    ws->recv_task = NULL;
    return n;
}

ssize_t ws_fill(sp_ws *ws, int64_t deadline) {
    conn *c = ws->c;
    if (!c->buf)
        return -ENOMEM; /* the connection has none (it is closing) */
    if (c->buf_off == c->buf_len) {
        c->buf_off = c->buf_len = ws->floor;
    } else if (c->buf_off > ws->floor) {
        memmove(c->buf + ws->floor, c->buf + c->buf_off, c->buf_len - c->buf_off);
        c->buf_len -= c->buf_off - ws->floor;
        c->buf_off = ws->floor;
    }
    if (server_stopping(ws->s))
        return -ESHUTDOWN; /* the stop came while we yielded, not parked */
    ssize_t n;
    int hups = 0, waited = 0;
    for (;;) {
        if (ws->tun) { /* an HTTP/2 stream: its DATA, waited for there */
            n = tunnel_fill(ws, deadline);
            break;
        }
        if (c->tls) {
            /* OpenSSL may want to write before it can read: its own read
             * waits for whichever it needs (the buffer stays). */
            ws->recv_task = loop_task(ws->l);
            n = conn_read(ws->l, c, c->buf + c->buf_len, server_buf_size(ws->s) - c->buf_len,
                          deadline);
            ws->recv_task = NULL;
            break;
        }
        n = conn_try_read(c, c->buf + c->buf_len, server_buf_size(ws->s) - c->buf_len);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -errno;
        /* Silent for LOOP_LONG_WAIT_MS, the rest is a long wait: the
         * stack below is trimmed too (loop.h); a busy WebSocket pays no
         * syscall. The socket is read again in between: a timeout may
         * have won over the readiness that came with it. */
        int64_t soon = loop_clock_ms() + LOOP_LONG_WAIT_MS;
        int long_wait = waited && deadline > soon;
        int rc = wait_unbuffered(ws, long_wait || deadline < soon ? deadline : soon, long_wait);
        if (rc == -ETIMEDOUT && !waited && deadline > soon) {
            waited = 1;
            continue;
        }
        if (rc < 0)
            return rc;
        if ((c->w.hup & LOOP_HUP) && ++hups > 1)
            return -ECONNRESET; /* hung up, yet nothing to read: would spin */
    }
    if (n > 0) {
        c->buf_len += (uint32_t)n;
        ws_keepalive_heard(&ws->ka, loop_clock_ms());
        loop_charge(ws->l, (size_t)n); /* not while recv_task names us */
    }
    return n == 0 ? -ECONNRESET : n;
}
