/* net.c — cooperative sockets (see net.h). The pattern everywhere: try the
 * syscall, and only on EAGAIN park the task on the fd's edge-triggered
 * watch; since the loop only runs between tasks, no edge can be missed. */
#include "net/net.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

/* After a syscall failed with errno: an error to return (< 0), or 0 to try
 * again — at once after EINTR, once the fd is ready after EAGAIN. A watch
 * that reports hang-up yet whose syscall still says EAGAIN would spin: the
 * second time is an error. One helper, so the retry loops cannot drift. */
static int wait_again(loop *l, loop_watch *w, uint32_t dir, int64_t deadline, int *hups) {
    if (errno == EINTR)
        return 0; /* interrupted: just try again */
    if (errno != EAGAIN)
        return -errno;
    int rc = loop_wait_fd(l, w, dir, deadline);
    if (rc < 0)
        return rc;
    if ((rc & LOOP_HUP) && ++*hups > 1)
        return -ECONNRESET;
    return 0;
}

ssize_t net_read(loop *l, loop_watch *w, void *buf, size_t len, int64_t deadline) {
    int hups = 0;
    for (;;) {
        ssize_t n = read(w->fd, buf, len);
        if (n >= 0)
            return n;
        int rc = wait_again(l, w, LOOP_READ, deadline, &hups);
        if (rc < 0)
            return rc;
    }
}

ssize_t net_writev(loop *l, loop_watch *w, struct iovec *iov, int iovcnt, int64_t deadline) {
    return net_writev_flags(l, w, iov, iovcnt, deadline, 0);
}

ssize_t net_writev_flags(loop *l, loop_watch *w, struct iovec *iov, int iovcnt, int64_t deadline,
                         int flags) {
    ssize_t total = 0;
    int hups = 0;
    /* Skip empty leading buffers so the count below means progress. */
    while (iovcnt > 0 && iov->iov_len == 0) {
        iov++;
        iovcnt--;
    }
    while (iovcnt > 0) {
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        /* io_uring: queued with this turn's other sends (one enter for
         * all); epoll, or outside a task: the syscall. */
        ssize_t n = loop_send(l, w, &msg, MSG_NOSIGNAL | flags, deadline);
        if (n == -ENOSYS)
            n = sendmsg(w->fd, &msg, MSG_NOSIGNAL | flags);
        else if (n < 0 && n != -EAGAIN && n != -EINTR)
            return n;
        else if (n < 0)
            errno = (int)-n;
        if (n < 0) {
            int rc = wait_again(l, w, LOOP_WRITE, deadline, &hups);
            if (rc < 0)
                return rc;
            continue;
        }
        total += n;
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov->iov_len = 0;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return total;
}

ssize_t net_write(loop *l, loop_watch *w, const void *buf, size_t len, int64_t deadline) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return net_writev(l, w, &iov, 1, deadline);
}

ssize_t net_sendfile(loop *l, loop_watch *w, int file_fd, off_t *off, size_t count,
                     int64_t deadline) {
    size_t left = count;
    int hups = 0;
    while (left > 0) {
        ssize_t n = sendfile(w->fd, file_fd, off, left);
        if (n < 0) {
            int rc = wait_again(l, w, LOOP_WRITE, deadline, &hups);
            if (rc < 0)
                return rc;
            continue;
        }
        if (n == 0)
            return -ENODATA; /* the file is shorter than promised */
        left -= (size_t)n;
    }
    return (ssize_t)count;
}

int net_connect(loop *l, loop_watch *w, const net_addr *a, int64_t deadline) {
    int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (a->u.sa.sa_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    w->fd = fd;
    int rc = loop_watch_add(l, w, BACKEND_CONN);
    if (rc < 0)
        goto fail_close;
    if (connect(fd, &a->u.sa, a->len) == 0)
        return 0;
    if (errno != EINPROGRESS && errno != EAGAIN) {
        rc = -errno;
        goto fail_del;
    }
    rc = loop_wait_fd(l, w, LOOP_WRITE, deadline);
    if (rc < 0)
        goto fail_del;
    int err = 0;
    socklen_t elen = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
        err = errno;
    if (err) {
        rc = -err;
        goto fail_del;
    }
    return 0;
fail_del:
    loop_watch_del(l, w);
fail_close:
    close(fd);
    w->fd = -1;
    return rc;
}

void net_close(loop *l, loop_watch *w) {
    if (w->fd < 0)
        return;
    /* Through the backend: epoll closes at once (the close leaves epoll by
     * itself); io_uring removes the poll that holds the file open and
     * queues the close, so it costs no syscall of its own. */
    loop_watch_close(l, w);
    w->fd = -1;
}

/* ---- listening ----------------------------------------------------------- */

int net_parse_addr(const char *spec, net_addr *out) {
    memset(out, 0, sizeof *out);
    if (strncmp(spec, "unix:", 5) == 0) {
        const char *path = spec + 5;
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof out->u.un.sun_path)
            return -EINVAL;
        out->u.un.sun_family = AF_UNIX;
        memcpy(out->u.un.sun_path, path, n + 1);
        out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        return 0;
    }
    char host[256];
    const char *port;
    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof host)
            return -EINVAL;
        memcpy(host, spec + 1, (size_t)(end - spec - 1));
        host[end - spec - 1] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (!colon || (size_t)(colon - spec) >= sizeof host)
            return -EINVAL;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        port = colon + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (*port == '\0' || *end != '\0' || p < 0 || p > 65535)
        return -EINVAL;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE,
                             .ai_family = AF_UNSPEC};
    struct addrinfo *res;
    if (getaddrinfo(host[0] ? host : "0.0.0.0", port, &hints, &res) != 0)
        return -EADDRNOTAVAIL;
    memcpy(&out->u.ss, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void net_format_addr(const net_addr *a, char *buf, size_t cap) {
    char host[INET6_ADDRSTRLEN] = "?";
    switch (a->u.sa.sa_family) {
    case AF_UNIX:
        snprintf(buf, cap, "unix:%s", a->u.un.sun_path);
        return;
    case AF_INET:
        inet_ntop(AF_INET, &a->u.in.sin_addr, host, sizeof host);
        snprintf(buf, cap, "%s:%u", host, ntohs(a->u.in.sin_port));
        return;
    case AF_INET6:
        inet_ntop(AF_INET6, &a->u.in6.sin6_addr, host, sizeof host);
        snprintf(buf, cap, "[%s]:%u", host, ntohs(a->u.in6.sin6_port));
        return;
    default:
        snprintf(buf, cap, "?");
    }
}

/* A unix socket file is stale when nobody accepts on it. */
static void remove_stale_unix(const net_addr *a) {
    struct stat st;
    if (stat(a->u.un.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, &a->u.sa, a->len) != 0 && errno == ECONNREFUSED)
        unlink(a->u.un.sun_path);
    close(fd);
}

int net_listen(const net_addr *a, int backlog, int flags) {
    int family = a->u.sa.sa_family;
    if (family == AF_UNIX)
        remove_stale_unix(a);
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    if (family != AF_UNIX) {
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
            goto fail;
        if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
            goto fail;
        if ((flags & NET_REUSEPORT) &&
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            goto fail;
    }
    if (bind(fd, &a->u.sa, a->len) != 0 || listen(fd, backlog) != 0)
        goto fail;
    return fd;
fail:;
    int err = errno;
    close(fd);
    return -err;
}

int net_accept_batch(int lfd, int max, net_accept_fn on_conn, void *ud) {
    int n = 0;
    while (n < max) {
        net_addr peer;
        peer.len = sizeof peer.u;
        int fd = accept4(lfd, &peer.u.sa, &peer.len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            switch (errno) {
            case EAGAIN:
                return n;
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
            case EPERM: /* firewall said no to this one */
                continue;
            default:
                return n ? n : -errno;
            }
        }
        on_conn(fd, &peer, ud);
        n++;
    }
    return n;
}
