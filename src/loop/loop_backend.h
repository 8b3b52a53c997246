/* loop_backend.h — the OS readiness backends under the loop: an ops table
 * per loop, epoll (loop_epoll.c, the default) or io_uring (loop_uring.c),
 * chosen when the loop is made. The loop core speaks only these ops. */
#ifndef SPINDLE_LOOP_BACKEND_H
#define SPINDLE_LOOP_BACKEND_H

#include <stdint.h>

struct msghdr;

/* Readiness bits the backend reports (and the loop hands to waiters). */
enum {
    LOOP_READ = 1u << 0,    /* readable (or a listener has connections) */
    LOOP_WRITE = 1u << 1,   /* writable */
    LOOP_RDHUP = 1u << 2,   /* the peer shut down its writing side */
    LOOP_HUP = 1u << 3,     /* hang-up or error: both directions are done */
    LOOP_OP_DONE = 1u << 4, /* a queued operation (backend_op) completed */
};

/* An operation queued on the backend (io_uring's send), on its waiter's
 * stack: the waiter stays parked until `done`, so the memory outlives the
 * request. Its completion comes back as an event whose data is the op. */
typedef struct backend_op {
    void *waiter; /* the parked task */
    int res;      /* the syscall's result: bytes or -errno */
    int done;
} backend_op;

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

/* One backend. `b` is what open returned. An fd is registered at most once
 * per backend. */
typedef struct backend_ops {
    const char *name;        /* "epoll", "io_uring": --version and the log */
    void *(*open)(int *err); /* NULL with *err = errno value on failure */
    void (*free)(void *b);   /* submits what is queued, then releases all */
    int (*add)(void *b, int fd, backend_mode mode, void *data); /* 0 or -errno */
    int (*del)(void *b, int fd); /* unregisters; the fd stays open. 0 or -errno */
    /* Closes fd; `registered`: it is registered (and is unregistered first).
     * epoll: close(2) (which leaves epoll by itself); io_uring: the poll is
     * removed and the close queued (a poll holds the file open). */
    void (*close_fd)(void *b, int fd, int registered);
    /* Unregisters an fd its owner is about to close(2) itself. */
    void (*forget)(void *b, int fd);
    /* Waits up to timeout_ms (-1: forever) and fills at most max events.
     * Returns the count (0 on timeout or EINTR) or -errno. */
    int (*wait)(void *b, backend_event *out, int max, int timeout_ms);
    /* Optional (NULL: not queued): queues sendmsg(fd, msg, flags) for the
     * next submit (0 or -errno), and the cancel of one still in flight. */
    int (*send)(void *b, int fd, const struct msghdr *msg, int flags, backend_op *op);
    void (*cancel)(void *b, backend_op *op);
} backend_ops;

extern const backend_ops backend_epoll_ops;
extern const backend_ops backend_uring_ops;

/* The choice for loops made from now on (--io-backend). */
typedef enum backend_kind {
    BACKEND_KIND_EPOLL,
    BACKEND_KIND_URING,
    BACKEND_KIND_AUTO,
} backend_kind;

/* "epoll", "uring" (or "io_uring"), "auto" -> kind; -1 for anything else. */
int backend_kind_parse(const char *name);
/* What `auto` means on this build: the measured winner (README, bench). */
backend_kind backend_kind_auto(void);

#endif
