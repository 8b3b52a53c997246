/* loop_backend.h — the thin OS readiness backend under the loop (epoll on
 * Linux, in loop_epoll.c). The loop core speaks only these functions, so a
 * kqueue backend can be added without touching callers. */
#ifndef SPINDLE_LOOP_BACKEND_H
#define SPINDLE_LOOP_BACKEND_H

#include <stdint.h>

/* Readiness bits the backend reports (and the loop hands to waiters). */
enum {
    LOOP_READ = 1u << 0,  /* readable (or a listener has connections) */
    LOOP_WRITE = 1u << 1, /* writable */
    LOOP_RDHUP = 1u << 2, /* the peer shut down its writing side */
    LOOP_HUP = 1u << 3,   /* hang-up or error: both directions are done */
};

/* How an fd is watched. */
typedef enum backend_mode {
    BACKEND_CONN,        /* edge-triggered read+write+rdhup, registered once */
    BACKEND_LISTEN,      /* level-triggered read: a bounded accept batch never stalls */
    BACKEND_LISTEN_EXCL, /* the same with EPOLLEXCLUSIVE (one worker woken per event) */
    BACKEND_READ_LEVEL,  /* level-triggered read, for eventfds and pipes */
    BACKEND_WRITE_LEVEL, /* level-triggered write, for one-off waits on foreign fds */
    BACKEND_RW_LEVEL,    /* level-triggered read+write (select on one fd for both) */
} backend_mode;

typedef struct backend_event {
    void *data;
    uint32_t events; /* LOOP_* bits */
} backend_event;

/* The backend's name ("epoll"), for --version. */
extern const char backend_name[];

int backend_open(void);                                          /* fd or -errno */
int backend_add(int bfd, int fd, backend_mode mode, void *data); /* 0 or -errno */
int backend_del(int bfd, int fd);                                /* 0 or -errno */
/* Waits up to timeout_ms (-1: forever) and fills at most max events.
 * Returns the count (0 on timeout or EINTR) or -errno. */
int backend_wait(int bfd, backend_event *out, int max, int timeout_ms);

#endif
