/* h2_tunnel.c — an HTTP/2 stream as a byte stream both ways, for a feature
 * that took the exchange over (a WebSocket, RFC 8441): a 200 head with the
 * stream left open, DATA in through the stream's window-bounded buffer (the
 * window reopens as they are read), DATA out through its response buffer
 * (waiting on the client's window), END_STREAM or RST_STREAM as the end. */
#include "server/h2.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int tunnel_open(sp_res *res) {
    h2_stream *st = res->req->xctx;
    if (h2_stream_gone(st))
        return -EPIPE;
    st->tunnel = 1; /* its DATA are no body: --max-body-size does not apply */
    res->status = 200;
    res->declared = -1;
    return h2_stream_submit_head(st, res, 1);
}

/* Parks the reader until the stream has bytes in, its end, or is gone. */
static int until_readable(h2_stream *st, int64_t deadline) {
    h2_conn *hc = st->hc;
    while (!st->in_len && !st->in_eof && !h2_stream_gone(st)) {
        st->rwaiter = loop_task(hc->s->l);
        int rc = loop_park(hc->s->l, deadline, &hc->c->w);
        st->rwaiter = NULL;
        if (rc < 0)
            return rc;
    }
    return 0;
}

static ssize_t tunnel_read(void *x, void *buf, size_t len, int64_t deadline) {
    h2_stream *st = x;
    int rc = until_readable(st, deadline);
    if (rc < 0)
        return rc;
    if (st->in_len)
        return (ssize_t)h2_stream_take_in(st, buf, len);
    return st->in_eof ? 0 : -ECONNRESET;
}

/* A long wait: the stream's window buffer (H2_STREAM_WINDOW octets,
 * h2_conn.c makes it at the first DATA) goes while it is empty, and its
 * response buffer once nghttp2 has taken all of it (a sender makes
 * another, h2_stream_out.c), so an idle WebSocket on a stream holds
 * neither, and the next DATA reuse what idle streams freed. */
static int tunnel_wait(void *x, int64_t deadline) {
    h2_stream *st = x;
    if (!st->in_len) {
        free(st->in);
        st->in = NULL;
    }
    if (st->out && !st->out_len && !st->eof_wait)
        h2_stream_out_free(st);
    return until_readable(st, deadline);
}

static ssize_t tunnel_writev(void *x, const struct iovec *iov, int n, int64_t deadline) {
    h2_stream *st = x;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const char *p = iov[i].iov_base;
        size_t len = iov[i].iov_len;
        while (len) {
            size_t room;
            int rc;
            char *dst = h2_stream_out_room(st, len, &room, &rc, deadline);
            if (!dst)
                return rc;
            size_t k = len < room ? len : room;
            memcpy(dst, p, k);
            p += k;
            len -= k;
            total += k;
            h2_stream_out_queued(st, k);
        }
    }
    return (ssize_t)total;
}

static void tunnel_wake_writer(void *x, int result) {
    h2_stream *st = x;
    if (st->waiter)
        loop_wake(st->hc->s->l, st->waiter, result);
}

static void tunnel_close(void *x, int abort) {
    h2_stream *st = x;
    if (st->out_eof || h2_stream_gone(st))
        return;
    st->out_eof = 1;
    if (abort)
        h2_stream_reset(st, NGHTTP2_CANCEL);
    else
        h2_stream_out_queued(st, 0); /* END_STREAM after what is queued */
}

const exchange_tunnel h2_tunnel = {.open = tunnel_open,
                                   .read = tunnel_read,
                                   .wait = tunnel_wait,
                                   .writev = tunnel_writev,
                                   .wake_writer = tunnel_wake_writer,
                                   .close = tunnel_close};
