/* conn.h — one client connection as the server keeps it: a slot in the
 * table indexed by fd, small on purpose (an idle keep-alive connection costs
 * this and its kernel socket, nothing more). Read by the driver, and by a
 * feature that takes a connection over (WebSockets). */
#ifndef SPINDLE_CONN_H
#define SPINDLE_CONN_H

#include "base/list.h"
#include "loop/loop.h"

#include <stddef.h>
#include <stdint.h>

struct ssl_st; /* OpenSSL's SSL */

typedef enum conn_state {
    CONN_FREE = 0, /* table slot unused */
    CONN_IDLE,     /* open, no coroutine, no buffer: waiting for bytes */
    CONN_ACTIVE,   /* a coroutine serves it */
} conn_state;

typedef struct conn {
    loop_watch w;          /* w.data is the server */
    loop_timer idle_timer; /* keep-alive / first-request timeout; data: the server */
    char *buf;             /* read buffer from the pool, only while active */
    struct ssl_st *tls;    /* the TLS transport on a TLS listener (conn_io.h), else NULL */
    struct h2_conn *h2;    /* the HTTP/2 session once the connection speaks it (h2_conn.c) */
    uint32_t buf_len;      /* bytes in buf */
    uint32_t buf_off;      /* first unconsumed byte */
    uint32_t nreq;         /* requests served */
    uint32_t idle_rest_ms; /* TLS: the keep-alive time left once the buffers go (server.c) */
    uint8_t state;
    uint8_t maybe_more; /* the last read filled the buffer: the socket may hold
                           more that no new edge will announce */
    uint8_t peer_family;
    uint8_t peer_trusted; /* forwarded_allow_ips matched the peer */
    uint8_t listener;     /* 1 + the index of the listener that accepted it; 0 adopted */
    uint8_t proxy_wait;   /* a PROXY protocol header is still to come (--proxy-protocol) */
    uint16_t peer_port;
    uint8_t peer_ip[16];
} conn;
_Static_assert(sizeof(conn) <= 160, "conn is in a table of one per fd: keep it small");

#endif
