/* ws_keepalive.c — the WebSocket keep-alive clock (see ws_keepalive.h):
 * pings after a stretch of silence, a close once a ping went unanswered
 * long enough. Pure: the caller passes the time and does the sending. */
#include "server/ws/ws_keepalive.h"

void ws_keepalive_init(ws_keepalive *k, int ping_ms, int idle_ms, int64_t now) {
    k->ping_ms = ping_ms > 0 ? ping_ms : 0;
    k->idle_ms = idle_ms > 0 ? idle_ms : 0;
    if (k->idle_ms && k->ping_ms >= k->idle_ms)
        k->ping_ms = k->idle_ms / 2 ? k->idle_ms / 2 : 1;
    k->last_rx = k->last_ping = k->first_ping = now;
    k->pending = 0;
}

void ws_keepalive_heard(ws_keepalive *k, int64_t now) {
    k->last_rx = now;
    k->pending = 0;
}

static int64_t ping_due(const ws_keepalive *k) {
    if (!k->ping_ms)
        return WS_KA_NEVER;
    return (k->last_rx > k->last_ping ? k->last_rx : k->last_ping) + k->ping_ms;
}

static int64_t close_due(const ws_keepalive *k) {
    if (!k->idle_ms)
        return WS_KA_NEVER;
    int64_t idle = k->last_rx + k->idle_ms;
    if (!k->ping_ms)
        return idle;
    if (!k->pending)
        return WS_KA_NEVER; /* a ping comes first */
    int64_t answer = k->first_ping + (k->idle_ms - k->ping_ms);
    return idle > answer ? idle : answer;
}

int64_t ws_keepalive_due(const ws_keepalive *k) {
    int64_t c = close_due(k), p = ping_due(k);
    return c < p ? c : p;
}

int ws_keepalive_step(ws_keepalive *k, int64_t now) {
    if (now >= close_due(k))
        return WS_KA_CLOSE;
    if (now >= ping_due(k)) {
        if (!k->pending) {
            k->pending = 1;
            k->first_ping = now;
        }
        k->last_ping = now;
        return WS_KA_PING;
    }
    return WS_KA_WAIT;
}
