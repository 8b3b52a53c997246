/* h2_conn.c — the HTTP/2 connection driver. One coroutine (the one that
 * read the preface) owns the socket: it feeds what it reads to nghttp2
 * (mem_recv) and writes what nghttp2 has to send (mem_send), and a stream
 * that queued output kicks it out of its read. Each request runs in its own
 * coroutine (h2_stream.c). The limits against the known floods live here:
 * concurrent streams, resets, header blocks, control frames. */
#include "server/h2.h"
#include "server/conn_io.h"

#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Budgets generous for browsers (a page left with hundreds of streams in
 * flight resets them all; Firefox sends PRIORITY frames per stream) and
 * far below what a flood sends (hundreds of thousands a second). Beyond
 * one: GOAWAY ENHANCE_YOUR_CALM.
 *  - RST_STREAMs received: 1000, then 33 a second (CVE-2023-44487; the
 *    defaults of nghttp2's own limit, which sees only open streams);
 *  - PING, SETTINGS, PRIORITY and empty DATA frames: 500 (below the 1000
 *    queued ACKs nghttp2 calls a flood), then 100 a second;
 *  - a header block decoding past 4 x --max-head-size (an HPACK bomb). */
#define H2_RESET_BURST 1000
#define H2_RESET_RATE  33
#define H2_CTL_BURST   500
#define H2_CTL_RATE    100
#define H2_BOMB_FACTOR 4

static const char PREFACE[] = "PRI * HTTP/2.0\r\n";

int h2_is_preface(const conn *c) {
    return c->buf_len - c->buf_off >= sizeof PREFACE - 1 &&
           memcmp(c->buf + c->buf_off, PREFACE, sizeof PREFACE - 1) == 0;
}

void h2_kick(h2_conn *hc) {
    if (hc->in_read && hc->c->w.reader)
        loop_wake(hc->s->l, hc->c->w.reader, H2_KICK);
}

void h2_event(h2_conn *hc, int what) {
    if (hc->s->obs.h2_event)
        hc->s->obs.h2_event(hc->s->obs.ud, what);
}

static void h2_server_stop(sp_server *s) {
    for (list_node *n = s->h2_conns.head; n; n = n->next) {
        h2_conn *hc = container_of(n, h2_conn, node);
        if (hc->idle)
            server_conn_wake(s, hc->c); /* its driver sends the GOAWAY */
        else
            h2_kick(hc);
    }
}

/* Ends the connection for misbehaving: GOAWAY with code, nothing more read. */
static void calm_down(h2_conn *hc, uint32_t code) {
    nghttp2_session_terminate_session(hc->ng, code);
}

static void ctl_spend(h2_conn *hc) {
    h2_spend(hc, &hc->ctl, H2_CTL_BURST, H2_CTL_RATE);
}

static h2_stream *stream_of(nghttp2_session *ng, int32_t id) {
    return nghttp2_session_get_stream_user_data(ng, id);
}

/* ---- nghttp2's callbacks: the reader's coroutine, inside mem_recv ------ */

/* RFC 9113 §5.1.1: a HEADERS on a stream id below the last one opened, for
 * no stream that is still open, is an id out of order or a closed stream;
 * nghttp2 drops it silently (it cannot remember every closed id). One we
 * refused a moment ago may still see the client's trailers: those pass. */
static int on_begin_frame(nghttp2_session *ng, const nghttp2_frame_hd *hd, void *ud) {
    h2_conn *hc = ud;
    /* Every RST_STREAM counts, to a stream open, refused or gone: nghttp2's
     * own limit sees only the open ones (CVE-2023-44487). */
    if (hd->type == NGHTTP2_RST_STREAM)
        h2_spend(hc, &hc->resets, H2_RESET_BURST, H2_RESET_RATE);
    /* The head's clock (--header-timeout) runs from its HEADERS through its
     * CONTINUATIONs; any other frame means no block is in progress. A
     * final frame for a stream nghttp2 will ignore (trailers after our
     * reset) gets no on_frame_recv to stop it: it is not timed. */
    if (hd->type == NGHTTP2_HEADERS)
        hc->head_since = (hd->flags & NGHTTP2_FLAG_END_HEADERS) && hd->stream_id <= hc->last_id &&
                                 !nghttp2_session_find_stream(ng, hd->stream_id)
                             ? 0
                             : loop_now(hc->s->l);
    else if (hd->type != NGHTTP2_CONTINUATION)
        hc->head_since = 0;
    if (hd->type != NGHTTP2_HEADERS || !(hd->stream_id & 1))
        return 0;
    if (hd->stream_id > hc->last_id) {
        hc->last_id = hd->stream_id;
        return 0;
    }
    if (!nghttp2_session_find_stream(ng, hd->stream_id) && hd->stream_id != hc->last_refused)
        calm_down(hc, NGHTTP2_PROTOCOL_ERROR);
    return 0;
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    /* Streams whose handlers still run count too: a reset does not free
     * the coroutine it started (the rapid-reset attack's lever). */
    h2_stream *st = NULL;
    if (hc->nstreams < hc->s->http2_max_streams && !hc->goaway)
        st = h2_stream_new(hc, f->hd.stream_id);
    if (!st) {
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        hc->last_refused = f->hd.stream_id;
        return 0;
    }
    nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, st);
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud) {
    h2_conn *hc = ud;
    h2_stream *st = stream_of(ng, f->hd.stream_id);
    if (!st || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    size_t max = hc->s->opt.head_max;
    st->head_bytes += nl + vl + 4; /* as "name: value\r\n" in an HTTP/1.1 head */
    if (st->head_bytes > max * H2_BOMB_FACTOR) {
        calm_down(hc, NGHTTP2_ENHANCE_YOUR_CALM); /* an HPACK bomb, not a big cookie */
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (f->headers.cat != NGHTTP2_HCAT_REQUEST || st->refuse)
        return 0; /* trailers are not kept; a refused head only counts */
    if (st->head_bytes > max || st->head_bytes > st->hcap) { /* (a reload may change max) */
        st->refuse = 431;
        return 0;
    }
    char *n = st->hbuf + st->hlen;
    memcpy(n, name, nl);
    memcpy(n + nl, value, vl);
    st->hlen += nl + vl;
    if (nl == 6 && memcmp(n, "expect", 6) == 0 && vl == 12 &&
        strncasecmp(n + nl, "100-continue", 12) == 0)
        st->expect = 1;
    int rc = h2_head_add(&st->hh, n, nl, n + nl, vl);
    if (rc < 0)
        st->refuse = -rc;
    return 0;
}

/* RFC 9113 §8.2.3: a client may split Cookie into one field per pair; an
 * HTTP/1.1 application reads one, so they are joined with "; ". */
static void join_cookies(h2_stream *st) {
    http_request *h = &st->head;
    size_t n = 0, len = 0, first = 0;
    for (size_t i = 0; i < h->nfields; i++)
        if (h->fields[i].name_len == 6 && memcmp(h->fields[i].name, "cookie", 6) == 0) {
            if (n++ == 0)
                first = i;
            len += h->fields[i].value_len + 2;
        }
    if (n < 2)
        return;
    if (st->hlen + len > st->hcap) {
        st->refuse = 431;
        return;
    }
    char *v = st->hbuf + st->hlen;
    size_t at = 0, out = 0;
    for (size_t i = 0; i < h->nfields; i++) {
        http_field f = h->fields[i];
        if (f.name_len == 6 && memcmp(f.name, "cookie", 6) == 0) {
            if (at)
                v[at++] = ';', v[at++] = ' ';
            memcpy(v + at, f.value, f.value_len);
            at += f.value_len;
            if (i != first)
                continue;
        }
        h->fields[out++] = f;
    }
    h->nfields = out;
    h->fields[first].value = v;
    h->fields[first].value_len = at;
    st->hlen += at;
}

static void on_request_head(h2_conn *hc, h2_stream *st, const nghttp2_frame *f) {
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        st->in_eof = 1;
    if (!st->refuse)
        join_cookies(st);
    if (!st->refuse) {
        int rc = h2_head_end(&st->hh, st->in_eof);
        if (rc < 0)
            st->refuse = -rc;
    }
    h2_event(hc, SERVER_H2_STREAM);
    if (h2_stream_keep_head(st) < 0 || h2_stream_start(st) < 0)
        nghttp2_submit_rst_stream(hc->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    h2_stream *st = stream_of(ng, f->hd.stream_id);
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        hc->head_since = 0; /* the block is whole */
        if (st && f->headers.cat == NGHTTP2_HCAT_REQUEST)
            on_request_head(hc, st, f);
        else if (st && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
            st->in_eof = 1; /* after trailers */
            h2_stream_wake(st, 0);
        }
        break;
    case NGHTTP2_DATA:
        if (f->hd.length == 0 && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
            ctl_spend(hc); /* an empty DATA frame carries nothing: a flood's favourite */
        if (st && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
            st->in_eof = 1;
            h2_stream_wake(st, 0);
        }
        break;
    case NGHTTP2_PING:
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK))
            ctl_spend(hc);
        break;
    case NGHTTP2_PRIORITY: /* read and ignored (RFC 9113 §5.3.2), but budgeted */
        ctl_spend(hc);
        break;
    case NGHTTP2_RST_STREAM:
        h2_event(hc, SERVER_H2_RESET);
        break;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud) {
    h2_stream *st = stream_of(ng, id);
    sp_server *s = ((h2_conn *)ud)->s;
    if (!st || !st->running || st->refuse ||
        (s->opt.body_max && !st->tunnel && st->in_total + len > s->opt.body_max)) {
        if (st)
            st->in_total += len; /* past --max-body-size: the handler's next read says 413 */
        nghttp2_session_consume(ng, id, len); /* nobody reads it: keep the windows open */
        if (st)
            h2_stream_wake(st, 0);
        return 0;
    }
    if (!st->in && !(st->in = malloc(H2_STREAM_WINDOW)))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (st->in_len + len > H2_STREAM_WINDOW) /* more than the window we gave */
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    memcpy(st->in + st->in_len, data, len);
    st->in_len += len;
    st->in_total += len;
    h2_stream_wake(st, 0);
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud) {
    h2_stream *st = stream_of(ng, id);
    if (!st)
        return 0;
    /* A stream that ended both ways (NO_ERROR) leaves a handler still at
     * work after its answer alone, as a kept-alive HTTP/1.1 connection
     * does; a reset hangs up on it. */
    h2_stream_closed(st, code != NGHTTP2_NO_ERROR);
    if (!st->running)
        h2_stream_free(st);
    return 0;
}

static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    if (f->hd.type == NGHTTP2_GOAWAY)
        h2_event(hc, SERVER_H2_GOAWAY);
    else if (f->hd.type == NGHTTP2_RST_STREAM)
        h2_event(hc, SERVER_H2_RESET);
    else if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
             (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS)) {
        h2_stream *st = stream_of(ng, f->hd.stream_id);
        if (st && !st->running && !st->in_eof) /* answered; the rest of the body is not wanted */
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
    }
    return 0;
}

/* ---- the session ------------------------------------------------------- */

static nghttp2_session *session_new(h2_conn *hc) {
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    nghttp2_session *ng = NULL;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cb);
        return NULL;
    }
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    /* The window reopens only as handlers read (nghttp2_session_consume). */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_stream_reset_rate_limit(opt, H2_RESET_BURST, H2_RESET_RATE);
    nghttp2_option_set_max_outbound_ack(opt, 1000); /* ACKs queued for a client not reading */
    nghttp2_option_set_max_continuations(opt, 8);   /* CONTINUATION flood (CVE-2024-27316) */
    nghttp2_option_set_max_settings(opt, 32);
    nghttp2_mem mem = h2_mem_table(&hc->mem);
    if (nghttp2_session_server_new3(&ng, cb, hc, opt, &mem) != 0)
        ng = NULL;
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    if (!ng)
        return NULL;
    const sp_server_options *o = &hc->s->opt;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)hc->s->http2_max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)o->head_max},
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1}, /* WebSockets (RFC 8441) */
    };
    if (nghttp2_submit_settings(ng, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0 ||
        nghttp2_session_set_local_window_size(ng, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0) {
        nghttp2_session_del(ng);
        return NULL;
    }
    return ng;
}

static int put(h2_conn *hc, const void *p, size_t n) {
    sp_server *s = hc->s;
    if (conn_write(s->l, hc->c, p, n, server_deadline(s, s->opt.send_timeout_ms)) < 0)
        return -1;
    hc->progress = loop_now(s->l);
    return 0;
}

/* Writes everything nghttp2 has to send, gathered into one buffer (kept
 * while the connection is active) so a burst of small frames, or four full
 * DATA frames, is one write. 0, or -1 when the client is gone or stopped
 * reading for the send timeout. */
static int flush(h2_conn *hc) {
    size_t wl = 0, cap = H2_WBUF;
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(hc->ng, &p);
        if (n < 0 || (n == 0 && wl && put(hc, hc->wb, wl) < 0))
            return -1;
        if (n == 0 && wl == 0)
            return 0; /* (a stream may have queued more while we wrote: asked again) */
        if (n == 0 || wl + (size_t)n > cap) {
            if (wl && n && put(hc, hc->wb, wl) < 0)
                return -1;
            wl = 0;
            if (n == 0)
                continue;
        }
        if ((size_t)n > cap) { /* bigger than the buffer: as it is */
            if (put(hc, p, (size_t)n) < 0)
                return -1;
            continue;
        }
        if (!hc->wb && !(hc->wb = malloc(H2_WBUF)))
            return -1;
        memcpy(hc->wb + wl, p, (size_t)n);
        wl += (size_t)n;
    }
}

#define DRIVE_DONE 0
#define DRIVE_IDLE 1

#define READ_IDLE (-1) /* nothing there: the connection may wait without a coroutine */
#define READ_BYE  (-2) /* idle past the keep-alive timeout: GOAWAY sent */

/* No stream open: one look without waiting. The count read, 0 when the
 * client is gone, or READ_IDLE, READ_BYE. */
static ssize_t idle_read(h2_conn *hc) {
    sp_server *s = hc->s;
    ssize_t n = conn_try_read(hc->c, hc->c->buf, s->buf_size);
    if (n >= 0)
        return n;
    if (errno != EAGAIN && errno != EINTR)
        return 0;
    if (loop_now(s->l) < h2_idle_deadline(hc)) /* streams count, PINGs do not */
        return READ_IDLE;
    calm_down(hc, NGHTTP2_NO_ERROR); /* idle too long: GOAWAY, then close */
    flush(hc);
    return READ_BYE;
}

/* Reads and answers until the session is over (DRIVE_DONE) or idle. */
static int drive(h2_conn *hc) {
    sp_server *s = hc->s;
    conn *c = hc->c;
    ssize_t rv = 0;
    if (c->buf_len > c->buf_off)
        rv = nghttp2_session_mem_recv(hc->ng, (const uint8_t *)c->buf + c->buf_off,
                                      c->buf_len - c->buf_off);
    c->buf_off = c->buf_len = 0;
    while (rv >= 0) {
        if (flush(hc) < 0)
            return DRIVE_DONE;
        if (s->stopping && !hc->goaway) {
            hc->goaway = 1; /* in-flight streams finish; no new ones */
            nghttp2_submit_goaway(hc->ng, NGHTTP2_FLAG_NONE,
                                  nghttp2_session_get_last_proc_stream_id(hc->ng), NGHTTP2_NO_ERROR,
                                  NULL, 0);
            continue;
        }
        if (!nghttp2_session_want_read(hc->ng) && !nghttp2_session_want_write(hc->ng))
            return DRIVE_DONE;
        if (hc->goaway && hc->nstreams == 0)
            return DRIVE_DONE;
        ssize_t n;
        if (hc->nstreams == 0) {
            n = idle_read(hc);
            if (n == READ_IDLE)
                return DRIVE_IDLE;
            if (n == READ_BYE)
                return DRIVE_DONE;
        } else {
            hc->in_read = 1;
            n = conn_read(s->l, c, c->buf, s->buf_size, h2_read_deadline(hc));
            hc->in_read = 0;
            if (n == H2_KICK)
                continue;
            if (n == -ETIMEDOUT) {
                if (!h2_deadline_passed(hc))
                    continue; /* stalled streams reset: the others go on */
                flush(hc);    /* a client that stopped taking what it asked for */
                return DRIVE_DONE;
            }
        }
        if (n <= 0) {
            hc->peer_gone = 1;
            return DRIVE_DONE;
        }
        hc->progress = loop_now(s->l);
        rv = nghttp2_session_mem_recv(hc->ng, (const uint8_t *)c->buf, (size_t)n);
        loop_charge(s->l, (size_t)n); /* a client that never makes us wait still yields */
    }
    /* A protocol error: nghttp2 queued its GOAWAY (a flood: none, it says). */
    if (rv != NGHTTP2_ERR_FLOODED && rv != NGHTTP2_ERR_BAD_CLIENT_MAGIC)
        flush(hc);
    return DRIVE_DONE;
}

/* The session and its stream objects (no handler runs any more). */
static void conn_free(h2_conn *hc) {
    while (!list_empty(&hc->streams))
        h2_stream_free(container_of(hc->streams.head, h2_stream, node));
    h2_stream_spares_free(hc);
    nghttp2_session_del(hc->ng);
    list_remove(&hc->s->h2_conns, &hc->node);
    hc->c->h2 = NULL;
    free(hc);
}

/* Every handler told its stream is gone, and waited for. */
static void teardown(h2_conn *hc) {
    sp_server *s = hc->s;
    hc->dead = 1;
    for (list_node *n = hc->streams.head; n; n = n->next)
        h2_stream_closed(container_of(n, h2_stream, node), 1);
    hc->reader = loop_task(s->l);
    while (hc->nlive > 0)
        loop_park(s->l, LOOP_NO_DEADLINE, NULL);
}

static void h2_conn_drop(conn *c) {
    if (c->h2->nlive == 0)
        conn_free(c->h2); /* idle: nothing runs on it */
}

static int h2_owns(const conn *c) {
    return c->h2 != NULL;
}

static h2_conn *conn_new(sp_server *s, conn *c) {
    h2_conn *hc = calloc(1, sizeof *hc);
    if (!hc)
        return NULL;
    hc->s = s;
    hc->c = c;
    hc->progress = hc->quiet_since = loop_now(s->l);
    if (!(hc->ng = session_new(hc))) {
        free(hc);
        return NULL;
    }
    list_push_back(&s->h2_conns, &hc->node);
    c->h2 = hc;
    if (!c->nreq)
        c->nreq = 1; /* idle from now on means the keep-alive timeout */
    return hc;
}

void h2_serve(sp_server *s, conn *c) {
    h2_conn *hc = c->h2 ? c->h2 : conn_new(s, c);
    if (!hc) {
        server_conn_close(s, c);
        return;
    }
    hc->idle = 0;
    int idle = drive(hc) == DRIVE_IDLE;
    free(hc->wb); /* idle: nothing but the session is kept */
    hc->wb = NULL;
    h2_stream_spares_free(hc);
    if (idle) {
        hc->idle = 1; /* no coroutine, no buffer until bytes come */
        server_conn_idle(s, c);
        return;
    }
    teardown(hc);
    int linger = !hc->peer_gone;
    conn_free(hc);
    /* The client may still be sending (our GOAWAY crossed its frames): a
     * plain close would reset the connection and lose the GOAWAY. */
    if (linger)
        http_conn_linger_close(s, c);
    else
        server_conn_close(s, c);
}

static int64_t h2_conn_idle_deadline(const conn *c) {
    return h2_idle_deadline(c->h2);
}

/* Quiet: nghttp2's frame buffer holds the last answer's bytes, dead now
 * (idle means nothing is left to send), up to 16 KB resident. */
static void h2_conn_quiet(conn *c) {
    if (c->h2->idle)
        h2_mem_quiet(&c->h2->mem);
}

const exchange_protocol h2_protocol = {
    "h2", h2_owns, h2_conn_drop, h2_server_stop, h2_conn_idle_deadline, h2_conn_quiet};
