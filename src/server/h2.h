/* h2.h — HTTP/2 in the server core: the connection driver (h2_conn.c: one
 * coroutine reads frames into nghttp2 and writes what it has to send) and
 * its streams (h2_stream.c: each request in a coroutine of its own, through
 * the same dispatch as HTTP/1.1, with an exchange_ops sink and source)
 * and its clocks (h2_limits.c: the read deadline, what ends when it passes).
 * nghttp2 frames and compresses; the socket I/O is ours, through conn_io. */
#ifndef SPINDLE_H2_H
#define SPINDLE_H2_H

#include "base/list.h"
#include "http/h2_head.h"
#include "server/exchange.h"
#include "server/server.h"

#include <nghttp2/nghttp2.h>

#define H2_STREAM_WINDOW  65535      /* a stream's receive window: its body buffer */
#define H2_HEAD_INLINE    544        /* a stream's own room for its head's fields and bytes */
#define H2_CONN_WINDOW    (1 << 20)  /* the connection's: all its streams' buffers */
#define H2_OUT_MAX        65536      /* response bytes a stream holds before its handler waits */
#define H2_OUT_MIN        4096       /* ... at least, when its connection or worker holds much */
#define H2_CONN_OUT_MAX   (1 << 20)  /* response buffers a connection holds before they shrink */
#define H2_WORKER_OUT_MAX (64 << 20) /* ... and all of a worker's connections */
#define H2_KICK           (-EINTR)   /* the reader's read, interrupted: output is pending */
#define H2_WBUF           (4 * 16393 + 64) /* the write buffer: four full DATA frames and more */
#define H2_MEM_BIG        16384            /* nghttp2 blocks this large: its frame buffers */
#define H2_MEM_SLOTS      4                /* ... remembered per connection (a session keeps one) */

/* nghttp2's allocator for one connection (h2_mem.c): its large blocks
 * page-aligned and remembered, so that a quiet connection gives their
 * pages back (a session's frame buffer, where each DATA frame is copied,
 * is 16 KB it keeps for life: after a large answer, all of it resident). */
typedef struct h2_mem {
    void *big[H2_MEM_SLOTS];
    size_t big_len[H2_MEM_SLOTS];
} h2_mem;
/* The table for nghttp2_session_server_new3 (nghttp2 copies it). */
nghttp2_mem h2_mem_table(h2_mem *m);
/* Hands the large blocks' whole pages back (MADV_DONTNEED); the blocks
 * stay. Only while nghttp2 has nothing to send: their bytes are dead then,
 * and each is written before it is read again. */
void h2_mem_quiet(h2_mem *m);

typedef struct h2_conn h2_conn;

typedef struct h2_bucket {
    double tokens;
    int64_t when; /* loop ms of the last refill; 0: full */
} h2_bucket;

typedef struct h2_stream {
    list_node node;               /* in hc->streams */
    struct h2_stream *spare_next; /* in hc->spares, once freed */
    h2_conn *hc;
    int32_t id;
    task *waiter;  /* its handler, parked for body bytes or output room */
    task *rwaiter; /* a tunnel's reader, parked for DATA (h2_tunnel.c) */
    /* Its handler's hang-up watch (loop_task_set_hup_watch): a reset of the
     * stream or the connection's end wakes a handler parked anywhere (a
     * sleep, a channel, the bus), not only in the stream's own waits. */
    loop_watch gone;
    /* The request head: decoded into the connection's scratch (hc->hscratch,
     * one header block at a time, RFC 9113 §6.10), then its fields and bytes
     * moved to hinline when they fit (most heads: no allocation), else to
     * a block of their size (hkept), so a stream that lives long (a
     * WebSocket, a long poll) holds only what its head used. */
    http_request head;
    h2_head hh;
    char *hbuf;
    size_t hcap; /* hbuf's size: --max-head-size when the block began */
    size_t hlen, head_bytes;
    void *hkept;
    int refuse; /* a status to answer instead of running the handler */
    /* the body in: at most a window's worth, consumed as the handler reads */
    char *in;
    size_t in_len;
    uint64_t in_total;
    int64_t out_since; /* loop ms of its output's last progress (bytes taken) or start */
    /* the response out: what the handler wrote and nghttp2 has not taken */
    char *out;
    size_t out_off, out_len, out_cap;
    uint8_t in_eof, closed, running, spawned, out_eof, no_body;
    uint8_t expect;   /* "expect: 100-continue": a 100 goes out before the first wait */
    uint8_t eof_wait; /* the end of the body is queued, not taken (no bytes left) */
    uint8_t tunnel;   /* a WebSocket runs on it (RFC 8441): DATA are its bytes, no body limit */
    /* trailer fields to send after the last DATA (one block: the array,
     * then the names and values), or NULL */
    nghttp2_nv *trailers;
    size_t ntrailers;
    /* Last, left out of the clearing of a new stream: a head's fields and
     * bytes when they fit (the struct stays within one 1 KiB allocation). */
    http_field hinline[H2_HEAD_INLINE / sizeof(http_field)];
} h2_stream;

struct h2_conn {
    list_node node; /* in the server's h2_conns */
    sp_server *s;
    conn *c;
    nghttp2_session *ng;
    list_head streams;
    int nstreams;             /* stream objects */
    int nlive;                /* handlers running */
    task *reader;             /* the driver, parked in teardown until nlive is 0 */
    char *wb;                 /* frames gathered for one write (flush), while active */
    struct h2_stream *spares; /* freed streams kept for the next ones, while active */
    int nspares;
    char *hscratch;       /* a header block's fields, then its bytes (h2_stream.c), while active */
    size_t hscratch_len;  /* its size: (--max-header-count + 1) fields and --max-head-size */
    uint8_t in_read;      /* the driver waits in conn_read: a kick wakes it */
    uint8_t idle;         /* no stream, nothing to send: no coroutine, no buffer */
    uint8_t dead;         /* tearing down: handlers' calls fail */
    uint8_t goaway;       /* a graceful GOAWAY is out */
    uint8_t peer_gone;    /* the client closed (or the socket failed) */
    int64_t progress;     /* loop ms of the last byte read or written */
    int64_t quiet_since;  /* loop ms the last stream ended: idle (keep-alive) from there */
    int64_t head_since;   /* loop ms a header block began, while it is incomplete; else 0 */
    size_t out_held;      /* its streams' response buffers (h2_stream.c) */
    int32_t last_id;      /* the highest stream id a HEADERS named */
    int32_t last_refused; /* the last stream refused (REFUSED_STREAM) */
    h2_bucket ctl;        /* PING, SETTINGS, PRIORITY, empty DATA frames */
    h2_bucket resets;     /* RST_STREAM frames */
    h2_mem mem;           /* nghttp2's large blocks (h2_mem.c) */
};

/* h2_conn.c: serves c as HTTP/2 from its read buffer (the preface at
 * c->buf_off, or nothing yet after ALPN) until it closes, or, with no
 * stream open and nothing to send, until it goes idle (server_conn_idle:
 * no coroutine, no buffer); the driver's coroutine calls it again when
 * bytes come (c->h2 set), at the keep-alive timeout (GOAWAY, close) and at
 * stop. The one entry point: prior knowledge on a plain listener and ALPN
 * "h2" on TLS both end here. */
void h2_serve(sp_server *s, conn *c);
/* 1 if the buffered bytes begin an HTTP/2 preface ("PRI * HTTP/2.0"). */
int h2_is_preface(const conn *c);
/* HTTP/2 in the exchange's table of protocols: a connection closed
 * without its driver frees its session; at the server's stop every HTTP/2
 * connection sends GOAWAY, lets its streams finish, and closes. */
extern const exchange_protocol h2_protocol;
/* Wakes the driver to send what the streams queued. */
void h2_kick(h2_conn *hc);
/* Tells the observer (--stats) of a stream, a reset or a GOAWAY. */
void h2_event(h2_conn *hc, int what);

/* h2_limits.c: a frame budget spent (GOAWAY ENHANCE_YOUR_CALM when it is
 * out); the next read's deadline with streams open; what ends when it
 * passes (1: the connection, GOAWAY queued); the idle connection's end. */
void h2_spend(h2_conn *hc, h2_bucket *b, double burst, double rate);
int64_t h2_read_deadline(const h2_conn *hc);
int h2_deadline_passed(h2_conn *hc);
int64_t h2_idle_deadline(const h2_conn *hc);

/* h2_stream.c */
h2_stream *h2_stream_new(h2_conn *hc, int32_t id);
void h2_stream_free(h2_stream *st);
/* Frees what the connection keeps for its next streams, the freed streams
 * and the head scratch (the connection goes idle or ends). */
void h2_stream_spares_free(h2_conn *hc);
/* The head is whole: its fields and bytes leave the connection's scratch
 * (for the next header block) for the stream's own room, or a block of
 * their size when they do not fit. 0 or -ENOMEM. */
int h2_stream_keep_head(h2_stream *st);
/* Starts the stream's handler coroutine once its head is whole. */
int h2_stream_start(h2_stream *st);
/* Wakes the stream's handler if it waits (body bytes, room, a reset). */
void h2_stream_wake(h2_stream *st, int result);
/* The stream is closed: marked so, its own waits woken (-ECONNRESET), and
 * with hang_up (a reset, or the connection's end) its hang-up watch too, so
 * a handler parked anywhere else hears of it. */
void h2_stream_closed(h2_stream *st, int hang_up);
/* What h2_tunnel.c shares with the response path: the stream gone (reset,
 * or its connection), a reset sent, the head submitted (body: DATA
 * follow), the handler parked for the driver, room in the output buffer
 * (see there) and bytes put in it queued for nghttp2. */
int h2_stream_gone(const h2_stream *st);
/* Up to len of the DATA st holds into buf, the stream's window reopened by
 * as much: the count (st->in_len > 0). A handler's body read and the
 * tunnel's read (h2_tunnel.c) take the same way. */
size_t h2_stream_take_in(h2_stream *st, void *buf, size_t len);
void h2_stream_reset(h2_stream *st, uint32_t code);
int h2_stream_submit_head(h2_stream *st, sp_res *res, int body);
int h2_stream_wait(h2_stream *st, int64_t deadline);
/* h2_stream_out.c: the response buffer held (delta bytes more or less),
 * counted per connection and per worker. */
void h2_stream_out_held(h2_stream *st, ssize_t delta);
/* The response buffer goes, uncounted (the next write makes another). */
void h2_stream_out_free(h2_stream *st);
char *h2_stream_out_room(h2_stream *st, size_t want, size_t *room, int *rc, int64_t deadline);
void h2_stream_out_queued(h2_stream *st, size_t n);
/* h2_tunnel.c: a stream as a byte stream both ways (a WebSocket). */
extern const exchange_tunnel h2_tunnel;
/* nghttp2's data source: copies the stream's pending response bytes. */
ssize_t h2_stream_data(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *ud);

#endif
