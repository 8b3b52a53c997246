/* sock_tls.h — TLS on an outbound socket (sp_sock), for clients inside
 * spindle such as the bus's Redis connection (rediss://): a client context
 * that verifies the server, and the handshake on a connected socket. */
#ifndef SPINDLE_NET_SOCK_TLS_H
#define SPINDLE_NET_SOCK_TLS_H

#include "net/net.h"
#include "spindle.h"

#include <openssl/ssl.h>

/* A client context: TLS 1.2 or later, the server's certificate verified
 * against ca_file (PEM), or the system's CA certificates when NULL. NULL
 * with why filled on failure. */
SSL_CTX *sock_tls_client_ctx(const char *ca_file, char *why, size_t whylen);

/* A client session on the connected socket fd (not yet shaken hands):
 * SNI, and the certificate checked against host (a name, or a literal IP
 * against the certificate's addresses). NULL: no memory. The cooperative
 * sockets use it through sock_start_tls; a blocking client (the session
 * store's Redis connection) runs SSL_connect on it itself. */
SSL *sock_tls_client_new(SSL_CTX *ctx, int fd, const char *host);

/* Runs the client side of a handshake on s, checking that the certificate
 * names host; from then on sp_sock_read/write/close go through TLS. 0,
 * -ETIMEDOUT, -ECONNRESET, or -EPROTO (tls_last_error() says why: an
 * unknown CA, a name that does not match). Yields. */
int sock_start_tls(sp_sock *s, SSL_CTX *ctx, const char *host, int64_t timeout_ms);

#endif
