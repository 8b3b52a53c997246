/* bus_resp.h — one connection to Redis for the bus, on the worker's loop:
 * a cooperative socket (sp_connect, sp_sock_*) with hiredis used only to
 * format commands and parse replies, never for I/O, so a blocking XREAD
 * parks one coroutine and holds no thread. */
#ifndef SPINDLE_BUS_RESP_H
#define SPINDLE_BUS_RESP_H

#include "server/bus/bus.h"

#include <hiredis/hiredis.h>

typedef struct rconn {
    sp_sock *sock; /* NULL: not connected */
    redisReader *rd;
    int used; /* has answered a command: a failure may be a stale connection */
} rconn;

/* Connects to b's Redis within timeout_ms, with AUTH and SELECT when the
 * spec asks. 0 or -errno (-EACCES: the password was refused). Yields. */
int rconn_open(rconn *c, const bus *b, int64_t timeout_ms);
void rconn_close(rconn *c);
/* Sends one command and waits for its reply (*out, freeReplyObject it),
 * all within timeout_ms. An error reply is a reply (type
 * REDIS_REPLY_ERROR); a transport error closes c and returns -errno
 * (-ECONNRESET for the end of the stream). Yields. */
int rconn_call(rconn *c, redisReply **out, int64_t timeout_ms, int argc, const char **argv,
               const size_t *lens);

#endif
