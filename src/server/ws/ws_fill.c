/* ws_fill.c — a WebSocket's reads into its connection's buffer (ws_fill),
 * and the wait without one: while the handler waits in sp_ws_recv with
 * nothing to read, a plain connection's buffer is back in the pool and a
 * partial frame head waits in the WebSocket's own few bytes. */
#include "net/net.h"
#include "server/conn_io.h"
#include "server/ws/ws_int.h"

#include <errno.h>
#include <string.h>

/* Waits until the socket is readable without holding the connection's
 * buffer: what it still holds, at most a partial frame head (read_message
 * takes payload bytes out as they come), waits in ws->stash, the buffer in
 * the pool. Woken, the buffer is back with the same bytes.
 * 0 when readable, 1 when the bytes do not fit the stash (the caller reads
 * holding the buffer), or a negative errno. */
static int wait_unbuffered(sp_ws *ws, int64_t deadline, int trim) {
    conn *c = ws->c;
    if (c->buf_len > sizeof ws->stash)
        return 1;
    memcpy(ws->stash, c->buf, c->buf_len);
    ws->stash_len = (uint8_t)c->buf_len;
    server_buf_put(ws->s, c->buf);
    c->buf = NULL;
    ws->recv_task = loop_task(ws->l);
    if (trim)
        loop_trim_when_parked(ws->l);
    int rc = loop_wait_fd(ws->l, &c->w, LOOP_READ, deadline);
    ws->recv_task = NULL;
    c->buf = server_buf_get(ws->s);
    if (!c->buf) {
        c->buf_len = c->buf_off = 0; /* lost with the connection: no memory */
        return -ENOMEM;
    }
    memcpy(c->buf, ws->stash, ws->stash_len);
    c->buf_len = ws->stash_len;
    return rc < 0 ? rc : 0;
}

ssize_t ws_fill(sp_ws *ws, int64_t deadline) {
    conn *c = ws->c;
    if (!c->buf)
        return -ENOMEM; /* wait_unbuffered could not take one back */
    if (c->buf_off == c->buf_len) {
        c->buf_off = c->buf_len = 0;
    } else if (c->buf_off) {
        memmove(c->buf, c->buf + c->buf_off, c->buf_len - c->buf_off);
        c->buf_len -= c->buf_off;
        c->buf_off = 0;
    }
    if (server_stopping(ws->s))
        return -ESHUTDOWN; /* the stop came while we yielded, not parked */
    ssize_t n;
    int hups = 0, waited = 0;
    for (;;) {
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
        if (rc == 1) {
            ws->recv_task = loop_task(ws->l);
            n = conn_read(ws->l, c, c->buf + c->buf_len, server_buf_size(ws->s) - c->buf_len,
                          deadline);
            ws->recv_task = NULL;
            break;
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
