/* h2_limits.c — the HTTP/2 driver's clocks: what the next read may wait
 * for, and what to end when it waited too long. Each is judged by its own
 * progress, not by bytes read, so frames a client can send at will (PING,
 * SETTINGS, WINDOW_UPDATE) keep nothing open (CVE-2019-9517 class). */
#include "server/h2.h"

/* A frame budget: a token bucket refilled with time; spent, GOAWAY. */
void h2_spend(h2_conn *hc, h2_bucket *b, double burst, double rate) {
    int64_t now = loop_now(hc->s->l);
    if (b->when == 0)
        b->tokens = burst;
    b->tokens += (double)(now - b->when) * rate / 1000.0;
    if (b->tokens > burst)
        b->tokens = burst;
    b->when = now;
    if (--b->tokens < 0)
        nghttp2_session_terminate_session(hc->ng, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* Output the client's window holds back: queued bytes (or the end of the
 * body) nghttp2 has not taken. */
static int blocked(const h2_stream *st) {
    return (st->out_len || st->eof_wait) && !st->closed;
}

/* With streams open: the earliest of
 *  - the header block in progress: --header-timeout from its HEADERS (a
 *    head trickled in CONTINUATIONs has one deadline, as on HTTP/1.1);
 *  - each stream whose output is blocked: --send-timeout from its last
 *    progress (bytes nghttp2 took: the client's window credit spent), as
 *    nginx's per-stream send_timeout;
 *  - no handler running and none of those: --send-timeout from the last
 *    byte read or written (a state that lasts a frame or two).
 * Running handlers time their own waits (body, room in their buffer). */
int64_t h2_read_deadline(const h2_conn *hc) {
    const sp_server_options *o = &hc->s->opt;
    int64_t d = LOOP_NO_DEADLINE;
    if (hc->head_since)
        d = hc->head_since + o->header_timeout_ms;
    for (const list_node *n = hc->streams.head; n; n = n->next) {
        const h2_stream *st = container_of(n, h2_stream, node);
        if (blocked(st) && st->out_since + o->send_timeout_ms < d)
            d = st->out_since + o->send_timeout_ms;
    }
    if (d == LOOP_NO_DEADLINE && hc->nlive == 0)
        d = hc->progress + o->send_timeout_ms;
    return d;
}

/* The read's deadline passed. Streams stalled past --send-timeout are
 * reset (CANCEL), their buffers freed once the reset is out; the whole
 * connection ends (GOAWAY, 1) if the head in progress ran out of time, if
 * the connection's own window is shut (no stream can move), or if nothing
 * at all moved. 0: the connection goes on. */
int h2_deadline_passed(h2_conn *hc) {
    const sp_server_options *o = &hc->s->opt;
    int64_t now = loop_now(hc->s->l);
    uint32_t code = NGHTTP2_CANCEL;
    if (hc->head_since && now >= hc->head_since + o->header_timeout_ms)
        goto end;
    int reset = 0;
    for (list_node *n = hc->streams.head; n; n = n->next) {
        h2_stream *st = container_of(n, h2_stream, node);
        if (!blocked(st) || now < st->out_since + o->send_timeout_ms)
            continue;
        if (nghttp2_session_get_remote_window_size(hc->ng) <= 0)
            goto end;
        nghttp2_submit_rst_stream(hc->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
        st->out_since = now; /* (not again before the reset is out) */
        reset++;
    }
    if (reset || hc->nlive > 0 || now < hc->progress + o->send_timeout_ms)
        return 0;
end:
    nghttp2_session_terminate_session(hc->ng, code);
    return 1;
}

/* Idle means no stream: from the end of the last one (or the preface),
 * whatever frames come meanwhile, so PINGs alone do not keep it open. */
int64_t h2_idle_deadline(const h2_conn *hc) {
    return hc->quiet_since + hc->s->opt.keepalive_timeout_ms;
}
