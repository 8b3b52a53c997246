/* loop_epoll.c — the epoll backend behind loop_backend.h. Connections are
 * registered once, edge-triggered for both directions with EPOLLRDHUP, so a
 * request costs no epoll_ctl; listeners are level-triggered. */
#include "loop/loop_backend.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

/* The epoll fd itself is the backend handle (fd + 1, so 0 is never NULL). */
static int efd(void *b) {
    return (int)(intptr_t)b - 1;
}

static void *ep_open(int *err) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return NULL;
    }
    return (void *)(intptr_t)(fd + 1);
}

static void ep_free(void *b) {
    close(efd(b));
}

static int ep_add(void *b, int fd, backend_mode mode, void *data) {
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
    return epoll_ctl(efd(b), EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

static int ep_del(void *b, int fd) {
    /* A non-NULL event pointer keeps pre-2.6.9 kernels happy; harmless. */
    struct epoll_event ev = {0};
    return epoll_ctl(efd(b), EPOLL_CTL_DEL, fd, &ev) == 0 ? 0 : -errno;
}

/* Closing an fd takes it out of epoll (connection fds are never shared),
 * so an EPOLL_CTL_DEL first would be a wasted syscall. */
static void ep_close_fd(void *b, int fd, int registered) {
    (void)b;
    (void)registered;
    close(fd);
}

static void ep_forget(void *b, int fd) {
    (void)b;
    (void)fd;
}

static int ep_wait(void *b, backend_event *out, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256)
        max = 256;
    int n = epoll_wait(efd(b), evs, max, timeout_ms);
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

const backend_ops backend_epoll_ops = {
    .name = "epoll",
    .open = ep_open,
    .free = ep_free,
    .add = ep_add,
    .del = ep_del,
    .close_fd = ep_close_fd,
    .forget = ep_forget,
    .wait = ep_wait,
};
