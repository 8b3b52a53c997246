/* ws_keepalive.h — when a WebSocket's keep-alive pings and when it gives up:
 * a pure clock over the last time the peer sent anything and the pings we
 * sent since. ws.c acts on it while the handler waits in sp_ws_recv. */
#ifndef SPINDLE_WS_KEEPALIVE_H
#define SPINDLE_WS_KEEPALIVE_H

#include <stdint.h>

#define WS_KA_NEVER INT64_MAX /* no deadline */

enum { WS_KA_WAIT, WS_KA_PING, WS_KA_CLOSE };

typedef struct ws_keepalive {
    int64_t ping_ms;    /* silence before a ping; 0: none */
    int64_t idle_ms;    /* silence before giving up; 0: never */
    int64_t last_rx;    /* when the peer last sent a byte (ms) */
    int64_t last_ping;  /* when we last pinged (or the start) */
    int64_t first_ping; /* the first ping since last_rx, if pending */
    int pending;        /* a ping is unanswered */
} ws_keepalive;

/* Starts the clock at now (ping_ms, idle_ms <= 0: none). A ping interval
 * not below the idle timeout would never ping in time: it is taken as half
 * the idle timeout. */
void ws_keepalive_init(ws_keepalive *k, int ping_ms, int idle_ms, int64_t now);

/* The peer sent something at now: it is alive. */
void ws_keepalive_heard(ws_keepalive *k, int64_t now);

/* When the next step is due (WS_KA_NEVER: nothing ever is). */
int64_t ws_keepalive_due(const ws_keepalive *k);

/* What is due at now: WS_KA_PING after ping_ms of silence since the peer's
 * last byte and our last ping (the ping is taken as sent at now);
 * WS_KA_CLOSE once the peer has been silent idle_ms and has had idle_ms -
 * ping_ms to answer our first ping (so a handler that came back to
 * sp_ws_recv late gives the peer that long, not nothing); without pings,
 * after idle_ms of silence; else WS_KA_WAIT. */
int ws_keepalive_step(ws_keepalive *k, int64_t now);

#endif
