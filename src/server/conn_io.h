/* conn_io.h — the one way the driver and the features read and write a
 * client connection: the plain socket calls of net/, or, on a connection
 * of a TLS listener (c->tls set), the TLS transport of net/tls.h. One
 * branch per call, so no caller has to know which one it talks to. */
#ifndef SPINDLE_CONN_IO_H
#define SPINDLE_CONN_IO_H

#include "net/net.h"
#include "net/tls.h"
#include "server/conn.h"

#include <errno.h>
#include <unistd.h>

/* Cooperative reads and writes with a deadline, as net_read & co. */
static inline ssize_t conn_read(loop *l, conn *c, void *buf, size_t len, int64_t deadline) {
    if (c->tls)
        return tls_read(l, &c->w, c->tls, buf, len, deadline);
    return net_read(l, &c->w, buf, len, deadline);
}

static inline ssize_t conn_write(loop *l, conn *c, const void *buf, size_t len, int64_t deadline) {
    if (c->tls)
        return tls_write(l, &c->w, c->tls, buf, len, deadline);
    return net_write(l, &c->w, buf, len, deadline);
}

/* flags (MSG_MORE) apply to the plain socket; TLS gathers small buffers
 * into one record instead. */
static inline ssize_t conn_writev(loop *l, conn *c, struct iovec *iov, int iovcnt, int64_t deadline,
                                  int flags) {
    if (c->tls)
        return tls_writev(l, &c->w, c->tls, iov, iovcnt, deadline);
    return net_writev_flags(l, &c->w, iov, iovcnt, deadline, flags);
}

static inline ssize_t conn_sendfile(loop *l, conn *c, int file_fd, off_t *off, size_t count,
                                    int64_t deadline) {
    if (c->tls)
        return tls_sendfile(l, &c->w, c->tls, file_fd, off, count, deadline);
    return net_sendfile(l, &c->w, file_fd, off, count, deadline);
}

/* One read without waiting: the count, 0 at end of stream, or -1 with
 * errno (EAGAIN when nothing is there yet). Over TLS a short count does not
 * mean the socket is drained (one record per call): conn_more_may_wait says. */
static inline ssize_t conn_try_read(conn *c, void *buf, size_t len) {
    if (c->tls)
        return tls_try_read(c->tls, buf, len);
    return read(c->w.fd, buf, len);
}

/* After a read of n bytes into room: whether the socket may hold more
 * that no edge will announce (plain: the read filled room; TLS: what
 * OpenSSL holds or its last socket read said), so the driver looks again
 * before it goes idle. A TLS read returns one record, so its count alone
 * says nothing. */
static inline uint8_t conn_more_may_wait(conn *c, size_t n, size_t room) {
    if (c->tls)
        return (uint8_t)tls_more_may_wait(c->tls);
    return n == room;
}

#endif
