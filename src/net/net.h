/* net.h — sockets with deadlines, in blocking style: listen (TCP v4/v6,
 * unix:/path), accept in bounded batches, and read/write/writev/sendfile/
 * connect that park the calling task on EAGAIN. Every function returns a
 * count or a negative errno; nothing prints, nothing exits. */
#ifndef SPINDLE_NET_H
#define SPINDLE_NET_H

#include "loop/loop.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>

typedef struct net_addr {
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        struct sockaddr_un un;
        struct sockaddr_storage ss;
    } u;
    socklen_t len;
} net_addr;

/* Parses a listen/connect address: "HOST:PORT", "[V6]:PORT", ":PORT" (all
 * IPv4 interfaces) or "unix:/path". HOST may be a name (resolved with
 * getaddrinfo: blocking, so for start-up only). 0, -EINVAL (malformed) or
 * -EADDRNOTAVAIL (name not found). */
int net_parse_addr(const char *spec, net_addr *out);

/* Formats a as "1.2.3.4:80", "[::1]:80" or "unix:/path" into buf. */
void net_format_addr(const net_addr *a, char *buf, size_t cap);

enum { NET_REUSEPORT = 1 };

/* A non-blocking, close-on-exec listening socket bound to a with TCP_NODELAY
 * (inherited by accepted sockets, so accepting costs no setsockopt) and
 * SO_REUSEADDR; IPv6 sockets are v6-only. A stale unix socket file nobody
 * listens on is replaced. Returns the fd or -errno. */
int net_listen(const net_addr *a, int backlog, int flags);

/* Accepts up to max connections (non-blocking, close-on-exec), calling
 * on_conn for each. Returns how many were accepted (0 when none waited), or
 * -errno for an error that needs the caller's attention (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM: back off). Aborted connections are skipped. */
typedef void (*net_accept_fn)(int fd, const net_addr *peer, void *ud);
int net_accept_batch(int lfd, int max, net_accept_fn on_conn, void *ud);

/* Cooperative I/O on a registered connection watch (BACKEND_CONN). Each
 * tries the syscall first and parks on EAGAIN until ready, hang-up or the
 * deadline (absolute loop ms, LOOP_NO_DEADLINE for none): -ETIMEDOUT.
 * Outside a task they return -EAGAIN instead of parking. */
ssize_t net_read(loop *l, loop_watch *w, void *buf, size_t len, int64_t deadline);
/* Write everything (MSG_NOSIGNAL): the full count, or -errno. */
ssize_t net_write(loop *l, loop_watch *w, const void *buf, size_t len, int64_t deadline);
/* Write every iovec; iov is consumed (advanced) as bytes go out. */
ssize_t net_writev(loop *l, loop_watch *w, struct iovec *iov, int iovcnt, int64_t deadline);
/* net_writev with extra send flags (MSG_MORE: more follows at once, so a
 * head and the sendfile after it leave in full segments). */
ssize_t net_writev_flags(loop *l, loop_watch *w, struct iovec *iov, int iovcnt, int64_t deadline,
                         int flags);
/* Send count bytes of file_fd from *off (advanced) with sendfile. */
ssize_t net_sendfile(loop *l, loop_watch *w, int file_fd, off_t *off, size_t count,
                     int64_t deadline);

/* Connects a new non-blocking socket to a, registers it in w (w->fd set,
 * BACKEND_CONN) and waits for the handshake until the deadline. 0 or
 * -errno; on failure nothing is left open. */
int net_connect(loop *l, loop_watch *w, const net_addr *a, int64_t deadline);

/* Closes w's fd (which also takes it out of epoll) and wakes its waiters. */
void net_close(loop *l, loop_watch *w);

#endif
