/* ws.h — what the WebSocket layer (ws.c) needs from the connection driver:
 * taking a connection over from HTTP. Implemented in response.c and
 * http_conn.c. */
#ifndef SPINDLE_WS_H
#define SPINDLE_WS_H

#include "server/server.h"

/* Called by a handler before it writes anything on the connection itself
 * (the head not yet sent). From then on:
 *  - the sp_res_* functions on res do nothing but return -EALREADY, and
 *    the driver neither sends nor finishes a response nor drains a body;
 *  - the caller owns the connection's read buffer (c->buf, with the bytes
 *    from c->buf_off to c->buf_len still unconsumed; it may read into it
 *    and move buf_off/buf_len) and writes on c->w itself;
 *  - when the handler returns, whatever it returns, the driver calls
 *    release(arg) on the handler's coroutine (it may park), then closes
 *    the connection at once (server_conn_close: no lingering, no reuse). */
void res_take_over(sp_res *res, void (*release)(void *arg), void *arg);

#endif
