/* ws_keepalive.c — the WebSocket keep-alive clock (see ws_keepalive.h):
 * pings after a stretch of silence, a close after a longer one. Pure: the
 * caller passes the time and does the sending. */
#include "server/ws/ws_keepalive.h"

void ws_keepalive_init(ws_keepalive *k, int ping_ms, int idle_ms, int64_t now) {
    k->ping_ms = ping_ms > 0 ? ping_ms : 0;
    k->idle_ms = idle_ms > 0 ? idle_ms : 0;
    if (k->idle_ms && k->ping_ms >= k->idle_ms)
        k->ping_ms = k->idle_ms / 2 ? k->idle_ms / 2 : 1;
    k->last_rx = k->last_ping = now;
}

void ws_keepalive_heard(ws_keepalive *k, int64_t now) {
    k->last_rx = now;
}

static int64_t ping_due(const ws_keepalive *k) {
    if (!k->ping_ms)
        return WS_KA_NEVER;
    return (k->last_rx > k->last_ping ? k->last_rx : k->last_ping) + k->ping_ms;
}

int64_t ws_keepalive_due(const ws_keepalive *k) {
    int64_t idle = k->idle_ms ? k->last_rx + k->idle_ms : WS_KA_NEVER, ping = ping_due(k);
    return idle < ping ? idle : ping;
}

int ws_keepalive_step(ws_keepalive *k, int64_t now) {
    if (k->idle_ms && now >= k->last_rx + k->idle_ms)
        return WS_KA_CLOSE;
    if (now >= ping_due(k)) {
        k->last_ping = now;
        return WS_KA_PING;
    }
    return WS_KA_WAIT;
}
