/* loop_epoll.c — the epoll backend behind loop_backend.h. Connections are
 * registered once, edge-triggered for both directions with EPOLLRDHUP, so a
 * request costs no epoll_ctl; listeners are level-triggered. */
#include "loop/loop_backend.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

const char backend_name[] = "epoll";

int backend_open(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int backend_add(int bfd, int fd, backend_mode mode, void *data) {
    struct epoll_event ev = {.data.ptr = data};
    switch (mode) {
    case BACKEND_CONN:
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        break;
    case BACKEND_LISTEN:
        ev.events = EPOLLIN;
        break;
    case BACKEND_LISTEN_EXCL:
        ev.events = EPOLLIN | EPOLLEXCLUSIVE;
        break;
    case BACKEND_READ_LEVEL:
        ev.events = EPOLLIN;
        break;
    case BACKEND_WRITE_LEVEL:
        ev.events = EPOLLOUT;
        break;
    case BACKEND_RW_LEVEL:
        ev.events = EPOLLIN | EPOLLOUT;
        break;
    }
    return epoll_ctl(bfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int backend_del(int bfd, int fd) {
    /* A non-NULL event pointer keeps pre-2.6.9 kernels happy; harmless. */
    struct epoll_event ev = {0};
    return epoll_ctl(bfd, EPOLL_CTL_DEL, fd, &ev) == 0 ? 0 : -errno;
}

int backend_wait(int bfd, backend_event *out, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256)
        max = 256;
    int n = epoll_wait(bfd, evs, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        uint32_t e = evs[i].events, bits = 0;
        if (e & EPOLLIN)
            bits |= LOOP_READ;
        if (e & EPOLLOUT)
            bits |= LOOP_WRITE;
        if (e & EPOLLRDHUP)
            bits |= LOOP_RDHUP;
        if (e & (EPOLLHUP | EPOLLERR))
            bits |= LOOP_HUP;
        out[i].data = evs[i].data.ptr;
        out[i].events = bits;
    }
    return n;
}
