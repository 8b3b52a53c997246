/* h2_stream_out.c — a stream's response buffer: its room, bounded per
 * stream, per connection and per worker so that clients that never open
 * their windows cannot make the server hold 64 KB for each stream; bytes
 * queued for nghttp2; and the data source that drains it into DATA frames
 * (the handler's response, h2_stream.c, and a WebSocket's, h2_tunnel.c). */
#include "server/h2.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Response buffers held, counted per connection and per worker (out_cap
 * of every live stream) so that clients that never open their windows
 * cannot make the server hold 64 KB for each of their streams. */
void h2_stream_out_held(h2_stream *st, ssize_t delta) {
    st->hc->out_held += (size_t)delta;
    st->hc->s->h2_out_held += (size_t)delta;
}

void h2_stream_out_free(h2_stream *st) {
    h2_stream_out_held(st, -(ssize_t)st->out_cap);
    free(st->out);
    st->out = NULL;
    st->out_cap = st->out_off = 0;
}

/* The most response bytes this stream may hold: H2_OUT_MAX while the
 * connection (H2_CONN_OUT_MAX) and the worker (H2_WORKER_OUT_MAX) have room,
 * what is left of it beyond, never less than H2_OUT_MIN or than it holds,
 * so every stream still moves, a buffer at a time. */
static size_t out_limit(const h2_stream *st) {
    const h2_conn *hc = st->hc;
    size_t lim = H2_OUT_MAX, others = hc->out_held - st->out_cap;
    size_t conn_left = H2_CONN_OUT_MAX > others ? H2_CONN_OUT_MAX - others : 0;
    size_t wothers = hc->s->h2_out_held - st->out_cap;
    size_t worker_left = H2_WORKER_OUT_MAX > wothers ? H2_WORKER_OUT_MAX - wothers : 0;
    if (conn_left < lim)
        lim = conn_left;
    if (worker_left < lim)
        lim = worker_left;
    if (lim < H2_OUT_MIN)
        lim = H2_OUT_MIN;
    return lim > st->out_cap ? lim : st->out_cap;
}

/* Room for up to want more response bytes: a pointer into the stream's
 * buffer and its size, waiting while it is full (each wait up to the send
 * timeout, or until deadline when not 0), as a socket would make a writer
 * wait. NULL when the stream is gone, the client stopped taking (its
 * window stayed shut: reset) or the writer was woken with an error: rc
 * says which (-EPIPE, -ETIMEDOUT, that error). */
char *h2_stream_out_room(h2_stream *st, size_t want, size_t *room, int *rc, int64_t deadline) {
    sp_server *s = st->hc->s;
    for (;;) {
        if (h2_stream_gone(st)) {
            *rc = -EPIPE;
            return NULL;
        }
        if (st->out_off) {
            memmove(st->out, st->out + st->out_off, st->out_len);
            st->out_off = 0;
        }
        size_t max = out_limit(st);
        if (st->out_len < max) {
            size_t need = st->out_len + want < max ? st->out_len + want : max;
            if (need > st->out_cap) {
                size_t cap = need < H2_OUT_MIN ? H2_OUT_MIN : need;
                char *p = realloc(st->out, cap);
                if (!p) {
                    *rc = -ENOMEM;
                    return NULL;
                }
                st->out = p;
                h2_stream_out_held(st, (ssize_t)(cap - st->out_cap));
                st->out_cap = cap;
            }
            *room = st->out_cap - st->out_len;
            return st->out + st->out_len;
        }
        int w = h2_stream_wait(st, deadline ? deadline : loop_now(s->l) + s->opt.send_timeout_ms);
        if (w == -ETIMEDOUT) {
            h2_stream_reset(st, NGHTTP2_CANCEL); /* the client never opened its window */
            *rc = -ETIMEDOUT;
            return NULL;
        }
        if (w < 0 && w != -ECONNRESET) { /* woken to give up (a WebSocket lost) */
            *rc = w;
            return NULL;
        }
    }
}

/* The bytes are queued: nghttp2 takes them when the window allows. */
void h2_stream_out_queued(h2_stream *st, size_t n) {
    if (st->out_len == 0 && !st->eof_wait)
        st->out_since = loop_now(st->hc->s->l); /* blocked from now if the window is shut */
    st->out_len += n;
    if (n == 0 && st->out_eof)
        st->eof_wait = 1; /* an empty END_STREAM DATA: a shut window holds it back too */
    if (!h2_stream_gone(st)) {
        nghttp2_session_resume_data(st->hc->ng, st->id);
        h2_kick(st->hc);
    }
}

ssize_t h2_stream_data(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *ud) {
    h2_stream *st = src->ptr;
    size_t n = len < st->out_len ? len : st->out_len;
    if (n) /* (nothing queued yet: out may be NULL, a tunnel's first call) */
        memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    st->out_len -= n;
    if (st->out_len == 0)
        st->out_off = 0;
    if (n)
        st->out_since = loop_now(st->hc->s->l); /* output progress (the driver's send timeout) */
    if (n && st->waiter)
        h2_stream_wake(st, 0); /* room again */
    if (st->out_len == 0 && st->out_eof) {
        st->eof_wait = 0;
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (st->trailers) { /* nghttp2 copies the fields: the block goes now */
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            int rc = nghttp2_submit_trailer(ng, id, st->trailers, st->ntrailers);
            free(st->trailers);
            st->trailers = NULL;
            if (rc != 0)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
        }
        return (ssize_t)n;
    }
    return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}
