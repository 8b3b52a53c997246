/* ws_int.h — what ws.c, ws_upgrade.c and ws_fill.c share: the WebSocket's state (one per
 * connection taken over from HTTP) and ws_fill, which reads more bytes into
 * the connection's buffer. Not part of spindle.h's interface. */
#ifndef SPINDLE_WS_INT_H
#define SPINDLE_WS_INT_H

#include "base/list.h"
#include "loop/sync.h"
#include "server/handler.h"
#include "server/ws/ws_deflate.h"
#include "server/ws/ws_frame.h"
#include "server/ws/ws_keepalive.h"

#include <stdint.h>
#include <sys/types.h>

#define WS_CLOSE_TIMEOUT 2000
#define WS_DIRECT_READ   4096 /* payload left above which we read past the buffer */
#define WS_FRAMES_ROOM   4096 /* the buffer kept for frames above the request's head */

enum { WS_OPEN, WS_CLOSE_SENT, WS_DONE };

struct sp_ws {
    sp_server *s;
    conn *c;
    loop *l;
    ws_parser p;
    ws_keepalive ka; /* pings and the idle timeout, while the handler receives */
    uint64_t max_message;
    int close_timeout_ms;
    int state;
    int close_code; /* what ended it: the peer's code, ours on failure, 1006 */
    int in_frame;   /* a frame head was parsed, its payload is being read */
    int delivered;  /* msg was handed out: drop it at the next recv */
    int interrupt;  /* sp_ws_interrupt: the receive returns -EINTR */
    uint8_t *msg;   /* the data message being reassembled */
    size_t msg_len, msg_cap;
    uint8_t ctl[WS_CONTROL_MAX + 1];
    size_t ctl_len;
    uint32_t floor;  /* frames go in the buffer from here: below, the request's head,
                        which the handler's slices point into, stays whole */
    int senders;     /* coroutines in sp_ws_send (or waiting for the lock) */
    task *recv_task; /* parked reading, told when the server stops */
    task *releaser;  /* the handler's return, waiting for senders to leave */
    struct sp_mutex wlock;
    list_node reg_node;      /* in its server's registry */
    struct ws_registry *reg; /* that registry, or NULL */
    ws_deflate *dfl;         /* permessage-deflate, when negotiated */
    uint32_t zutf8;          /* UTF-8 state of the compressed text message being inflated */
    /* Over HTTP/2 (RFC 8441): the stream's tunnel and its state, NULL over
     * HTTP/1.1. c is then a conn of the WebSocket's own, allocated after
     * the struct (HTTP/1.1's pay nothing for it), whose only use is its
     * read buffer (a pool buffer, frames from offset 0). */
    const exchange_tunnel *tun;
    void *tx;
};

/* Reads more bytes into the connection buffer, holding none while it
 * waits on a plain socket. > 0, or a negative errno (end of stream is
 * -ECONNRESET: it came without a close frame). */
ssize_t ws_fill(sp_ws *ws, int64_t deadline);
/* Reads up to len bytes past the buffer, through the transport (ws.c):
 * > 0, 0 at its end, -errno. */
ssize_t ws_read(sp_ws *ws, void *buf, size_t len, int64_t deadline);
/* ws.c, for the handshake (ws_upgrade.c): what the server's stop does to a
 * WebSocket in its registry, and the cleanup when its handler returns. */
void ws_on_stop(list_node *member);
void ws_release(void *arg);

#endif
