/* conn_io.h — the one way the driver and the features read and write a
 * client connection. Today each call is the plain socket call of net/;
 * a connection with a transport of its own (TLS) is dispatched here, so no
 * caller has to know which one it talks to. */
#ifndef SPINDLE_CONN_IO_H
#define SPINDLE_CONN_IO_H

#include "net/net.h"
#include "server/conn.h"

#include <errno.h>
#include <unistd.h>

/* Cooperative reads and writes with a deadline, as net_read & co. */
static inline ssize_t conn_read(loop *l, conn *c, void *buf, size_t len, int64_t deadline) {
    return net_read(l, &c->w, buf, len, deadline);
}

static inline ssize_t conn_write(loop *l, conn *c, const void *buf, size_t len, int64_t deadline) {
    return net_write(l, &c->w, buf, len, deadline);
}

static inline ssize_t conn_writev(loop *l, conn *c, struct iovec *iov, int iovcnt, int64_t deadline,
                                  int flags) {
    return net_writev_flags(l, &c->w, iov, iovcnt, deadline, flags);
}

static inline ssize_t conn_sendfile(loop *l, conn *c, int file_fd, off_t *off, size_t count,
                                    int64_t deadline) {
    return net_sendfile(l, &c->w, file_fd, off, count, deadline);
}

/* One read without waiting: the count, 0 at end of stream, or -1 with
 * errno (EAGAIN when nothing is there yet). */
static inline ssize_t conn_try_read(conn *c, void *buf, size_t len) {
    return read(c->w.fd, buf, len);
}

#endif
