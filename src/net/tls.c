/* tls.c — the TLS transport (see tls.h). The pattern of net.c: call
 * OpenSSL first, and only when it wants the socket (WANT_READ/WANT_WRITE:
 * the underlying read or write said EAGAIN) park the task on the fd's
 * edge-triggered watch. Every error path clears OpenSSL's error queue, so
 * the next SSL_get_error on this thread sees only its own call. */
#include "net/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TLS_EOF        1         /* again(): the peer closed the TLS stream */
#define COALESCE       4096      /* writev gathers small buffers up to this */
#define SENDFILE_CHUNK (1 << 16) /* pread + SSL_write: four full records */

static char last_error[200] = "no reason given";

/* What the last successful tls_read / tls_try_read on this thread says
 * about its socket (tls_more_may_wait), asked right after it returns. */
static _Thread_local int more_may_wait = 1;

/* Before a read: what OpenSSL has buffered, and its socket BIO's count. */
typedef struct read_mark {
    uint64_t taken;
    int pending;
} read_mark;

static read_mark mark(SSL *ssl) {
    return (read_mark){BIO_number_read(SSL_get_rbio(ssl)), SSL_has_pending(ssl)};
}

/* After a read that returned bytes: may the socket hold more that no edge
 * will announce? With read-ahead OpenSSL asks read() for all the free room
 * of its record buffer, which holds a whole record (16 KB and more). A read
 * that filled it means more may wait; one that filled it from empty took at
 * least a record's worth, so under TLS_FULL_READ bytes taken by a read that
 * began with nothing buffered prove every read() was short: the socket was
 * drained, and what comes later brings a new edge. Anything else (bytes
 * were or still are buffered, no read-ahead, a smaller negotiated record
 * size) looks again, as before. */
#define TLS_FULL_READ 16384
static int read_left_more(SSL *ssl, read_mark m) {
    if (m.pending || SSL_has_pending(ssl) || !SSL_get_read_ahead(ssl))
        return 1;
    SSL_SESSION *sess = SSL_get_session(ssl);
    if (sess && SSL_SESSION_get_max_fragment_length(sess) != TLSEXT_max_fragment_length_DISABLED)
        return 1;
    return BIO_number_read(SSL_get_rbio(ssl)) - m.taken >= TLS_FULL_READ;
}

const char *tls_last_error(void) {
    return last_error;
}

/* Keeps the queue's last reason for tls_last_error, and empties it. */
static void take_error(void) {
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, last_error, sizeof last_error);
    ERR_clear_error();
}

/* After an SSL call returned ret: 0 to call again (once the fd is ready),
 * TLS_EOF, or an error (< 0). A watch that reports hang-up while OpenSSL
 * still wants to read would spin: the second time is an error. */
static int again(loop *l, loop_watch *w, SSL *ssl, int ret, int64_t deadline, int *hups) {
    uint32_t dir;
    switch (SSL_get_error(ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        dir = LOOP_READ;
        break;
    case SSL_ERROR_WANT_WRITE:
        dir = LOOP_WRITE;
        break;
    case SSL_ERROR_ZERO_RETURN:
        return TLS_EOF;
    case SSL_ERROR_SYSCALL: {
        int err = errno;
        ERR_clear_error();
        if (err == EINTR)
            return 0;
        return err ? -err : -ECONNRESET;
    }
    default:
        take_error();
        return -EPROTO;
    }
    int rc = loop_wait_fd(l, w, dir, deadline);
    if (rc < 0)
        return rc;
    if ((rc & LOOP_HUP) && ++*hups > 1)
        return -ECONNRESET;
    return 0;
}

int tls_handshake(loop *l, loop_watch *w, SSL *ssl, int64_t deadline) {
    int hups = 0;
    ERR_clear_error(); /* whatever an earlier caller on this thread left */
    for (;;) {
        int r = SSL_do_handshake(ssl);
        if (r == 1)
            return 0;
        int rc = again(l, w, ssl, r, deadline, &hups);
        if (rc == TLS_EOF)
            return -ECONNRESET;
        if (rc < 0)
            return rc;
    }
}

ssize_t tls_read(loop *l, loop_watch *w, SSL *ssl, void *buf, size_t len, int64_t deadline) {
    int hups = 0;
    for (;;) {
        size_t n;
        read_mark m = mark(ssl);
        int r = SSL_read_ex(ssl, buf, len, &n);
        if (r > 0) {
            more_may_wait = read_left_more(ssl, m);
            return (ssize_t)n;
        }
        int rc = again(l, w, ssl, r, deadline, &hups);
        if (rc == TLS_EOF)
            return 0;
        if (rc < 0)
            return rc;
    }
}

ssize_t tls_write(loop *l, loop_watch *w, SSL *ssl, const void *buf, size_t len, int64_t deadline) {
    int hups = 0;
    if (len == 0)
        return 0;
    /* Without partial writes SSL_write_ex sends all of buf or wants to be
     * called again with the same arguments. */
    for (;;) {
        size_t n;
        int r = SSL_write_ex(ssl, buf, len, &n);
        if (r > 0)
            return (ssize_t)len;
        int rc = again(l, w, ssl, r, deadline, &hups);
        if (rc == TLS_EOF)
            return -EPIPE;
        if (rc < 0)
            return rc;
    }
}

ssize_t tls_writev(loop *l, loop_watch *w, SSL *ssl, struct iovec *iov, int iovcnt,
                   int64_t deadline) {
    /* A response head and a small body leave as one record; a large buffer
     * is written in place once the gathered bytes before it are out. The
     * gather buffer is on this task's stack, so it is still there when a
     * parked SSL_write is called again. */
    char tmp[COALESCE];
    size_t fill = 0;
    ssize_t total = 0, rc;
    for (int i = 0; i < iovcnt; i++) {
        const char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        total += (ssize_t)left;
        while (left > 0) {
            if (fill == 0 && left >= sizeof tmp) {
                if ((rc = tls_write(l, w, ssl, p, left, deadline)) < 0)
                    return rc;
                break;
            }
            size_t k = left < sizeof tmp - fill ? left : sizeof tmp - fill;
            memcpy(tmp + fill, p, k);
            fill += k;
            p += k;
            left -= k;
            if (fill == sizeof tmp) {
                if ((rc = tls_write(l, w, ssl, tmp, fill, deadline)) < 0)
                    return rc;
                fill = 0;
            }
        }
    }
    if (fill && (rc = tls_write(l, w, ssl, tmp, fill, deadline)) < 0)
        return rc;
    for (int i = 0; i < iovcnt; i++) {
        iov[i].iov_base = (char *)iov[i].iov_base + iov[i].iov_len;
        iov[i].iov_len = 0;
    }
    return total;
}

int tls_ktls_send(SSL *ssl) {
#if defined(BIO_get_ktls_send)
    return BIO_get_ktls_send(SSL_get_wbio(ssl)) > 0;
#else
    return 0;
#endif
}

/* The kernel encrypts: the file's pages go to the socket as with plain
 * sendfile. */
static ssize_t ktls_sendfile(loop *l, loop_watch *w, SSL *ssl, int file_fd, off_t *off,
                             size_t count, int64_t deadline) {
    size_t left = count;
    int hups = 0;
    while (left > 0) {
        ossl_ssize_t n = SSL_sendfile(ssl, file_fd, *off, left, 0);
        if (n > 0) {
            *off += n;
            left -= (size_t)n;
            continue;
        }
        if (n == 0)
            return -ENODATA;
        int rc = again(l, w, ssl, (int)n, deadline, &hups);
        if (rc == TLS_EOF)
            return -EPIPE;
        if (rc < 0)
            return rc;
    }
    return (ssize_t)count;
}

ssize_t tls_sendfile(loop *l, loop_watch *w, SSL *ssl, int file_fd, off_t *off, size_t count,
                     int64_t deadline) {
    if (tls_ktls_send(ssl))
        return ktls_sendfile(l, w, ssl, file_fd, off, count, deadline);
    size_t cap = count < SENDFILE_CHUNK ? count : SENDFILE_CHUNK;
    char *buf = malloc(cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    size_t left = count;
    ssize_t rc = (ssize_t)count;
    while (left > 0) {
        ssize_t n = pread(file_fd, buf, left < cap ? left : cap, *off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -ENODATA; /* ENODATA: shorter than promised */
            break;
        }
        ssize_t wr = tls_write(l, w, ssl, buf, (size_t)n, deadline);
        if (wr < 0) {
            rc = wr;
            break;
        }
        *off += n;
        left -= (size_t)n;
    }
    free(buf);
    return rc;
}

ssize_t tls_try_read(SSL *ssl, void *buf, size_t len) {
    size_t n;
    read_mark m = mark(ssl);
    int r = SSL_read_ex(ssl, buf, len, &n);
    if (r > 0) {
        more_may_wait = read_left_more(ssl, m);
        return (ssize_t)n;
    }
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL: {
        int err = errno ? errno : ECONNRESET;
        ERR_clear_error();
        errno = err;
        return -1;
    }
    default:
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

int tls_more_may_wait(SSL *ssl) {
    (void)ssl;
    return more_may_wait;
}

int tls_release_buffers(SSL *ssl) {
    if (SSL_has_pending(ssl))
        return 0;
    return SSL_free_buffers(ssl);
}
