/* tls.h — the TLS transport of a connection: one OpenSSL SSL on the
 * socket fd, driven in blocking style like net.h: a handshake, read, write,
 * writev or sendfile that would block parks the calling task on the fd's
 * watch until ready or the deadline. Counts or negative errnos, as net.h;
 * -EPROTO for a TLS failure (the OpenSSL error queue is cleared). */
#ifndef SPINDLE_NET_TLS_H
#define SPINDLE_NET_TLS_H

#include "net/net.h"

#include <openssl/ssl.h>

/* Runs the server side of the handshake to its end. 0, -ETIMEDOUT, or
 * -EPROTO (bad or refused ClientHello, failed client certificate). */
int tls_handshake(loop *l, loop_watch *w, SSL *ssl, int64_t deadline);

/* One read of decrypted bytes: > 0, 0 at the peer's close_notify or end of
 * stream, or -errno. */
ssize_t tls_read(loop *l, loop_watch *w, SSL *ssl, void *buf, size_t len, int64_t deadline);
/* Writes everything: len, or -errno. */
ssize_t tls_write(loop *l, loop_watch *w, SSL *ssl, const void *buf, size_t len, int64_t deadline);
/* Writes every iovec (small ones coalesced into one record); iov is
 * consumed like net_writev's. The total, or -errno. */
ssize_t tls_writev(loop *l, loop_watch *w, SSL *ssl, struct iovec *iov, int iovcnt,
                   int64_t deadline);
/* count bytes of file_fd from *off (advanced): SSL_sendfile when the
 * kernel does the record layer (kTLS), else pread into a buffer and
 * SSL_write. count, -ENODATA for a short file, or -errno. */
ssize_t tls_sendfile(loop *l, loop_watch *w, SSL *ssl, int file_fd, off_t *off, size_t count,
                     int64_t deadline);
/* One read without waiting: the count, 0 at end of stream, or -1 with
 * errno (EAGAIN: nothing decrypted yet and the socket is drained). */
ssize_t tls_try_read(SSL *ssl, void *buf, size_t len);

/* Right after a tls_read or tls_try_read that returned bytes: whether more
 * may be there that no readiness edge will announce (bytes OpenSSL holds,
 * or its socket reads may have stopped at a full buffer), so the caller
 * must look again before it waits. 0 only when every read() was short. */
int tls_more_may_wait(SSL *ssl);

/* Releases OpenSSL's record buffers of an idle connection (nothing pending
 * in them). 1 when released, 0 when decrypted bytes are still held. */
int tls_release_buffers(SSL *ssl);

/* The reason of this thread's last -EPROTO (OpenSSL's error string). */
const char *tls_last_error(void);

/* Whether the kernel does the record layer of ssl's writes (kTLS). */
int tls_ktls_send(SSL *ssl);

#endif
