/* loop_uring.c — the io_uring backend behind loop_backend.h: readiness by
 * poll requests (multishot for connections, one-shot re-armed for the level
 * modes), removals, sends and closes queued as SQEs, and one io_uring_enter
 * per loop turn that submits them all and waits. */
#include "loop/loop_backend.h"
#include "loop/uring_reg.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define URING_SQ_ENTRIES 1024
#define URING_CQ_ENTRIES 16384

typedef struct uring_be {
    struct io_uring ring;
    uring_reg reg;      /* fd -> (generation, data, mode): CQEs name an entry */
    unsigned sqe_flags; /* IOSQE_CQE_SKIP_SUCCESS where the kernel has it */
} uring_be;

static void *ur_open(int *err) {
    uring_be *u = calloc(1, sizeof *u);
    if (!u) {
        *err = ENOMEM;
        return NULL;
    }
    /* One thread submits and reaps (the loop's), and completions are only
     * needed when it asks: no interrupts into the task otherwise. Older
     * kernels refuse the newer flags with EINVAL: try fewer. */
    static const unsigned tries[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int rc = -EINVAL;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0] && rc == -EINVAL; i++) {
        struct io_uring_params p = {.flags = tries[i] | IORING_SETUP_CQSIZE,
                                    .cq_entries = URING_CQ_ENTRIES};
        rc = io_uring_queue_init_params(URING_SQ_ENTRIES, &u->ring, &p);
        if (rc == 0 && !(p.features & IORING_FEAT_EXT_ARG)) {
            io_uring_queue_exit(&u->ring); /* no timed wait in one enter: use epoll */
            rc = -EOPNOTSUPP;
        }
        if (rc == 0 && (p.features & IORING_FEAT_CQE_SKIP))
            u->sqe_flags = IOSQE_CQE_SKIP_SUCCESS;
    }
    if (rc < 0) {
        free(u);
        *err = -rc;
        return NULL;
    }
    return u;
}

/* A free SQE; when the queue is full, what is queued goes in first. */
static struct io_uring_sqe *sqe_get(uring_be *u) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    while (!sqe) {
        int rc = io_uring_submit(&u->ring); /* liburing: -errno, errno untouched */
        if (rc < 0 && rc != -EINTR)
            return NULL;
        sqe = io_uring_get_sqe(&u->ring);
    }
    return sqe;
}

static void ur_free(void *b) {
    uring_be *u = b;
    io_uring_submit(&u->ring); /* queued closes must still happen */
    io_uring_queue_exit(&u->ring);
    uring_reg_free(&u->reg);
    free(u);
}

static unsigned poll_mask(backend_mode mode) {
    switch (mode) {
    case BACKEND_CONN:
        return POLLIN | POLLOUT | POLLRDHUP;
    case BACKEND_LISTEN:
    case BACKEND_LISTEN_EXCL:
    case BACKEND_READ_LEVEL:
        /* No EPOLLEXCLUSIVE for a shared listener: epoll passes an
         * exclusive wake-up on when that worker is not in epoll_wait (busy
         * in a handler), but an armed io_uring poll takes it whatever its
         * worker is doing, and the connection would wait for the busy one.
         * Every worker's poll fires instead; the losers' accept4 finds
         * EAGAIN (and the accept balancing in worker_slot.c still holds). */
        return POLLIN;
    case BACKEND_WRITE_LEVEL:
        return POLLOUT;
    case BACKEND_RW_LEVEL:
        return POLLIN | POLLOUT;
    }
    return POLLIN;
}

/* Arms the poll for fd's live entry. Connections get one multishot poll for
 * their life (each wake-up is one CQE: epoll's edge); the level modes a
 * one-shot poll re-armed after its CQE was handed out, so a listener whose
 * batch left connections queued is reported again next turn. */
static int arm(uring_be *u, int fd) {
    const uring_entry *e = uring_reg_get(&u->reg, fd);
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe)
        return -EBUSY;
    if (e->mode == BACKEND_CONN)
        io_uring_prep_poll_multishot(sqe, fd, poll_mask(BACKEND_CONN));
    else
        io_uring_prep_poll_add(sqe, fd, poll_mask((backend_mode)e->mode));
    io_uring_sqe_set_data64(sqe, uring_reg_tag(&u->reg, fd));
    return 0;
}

static int ur_add(void *b, int fd, backend_mode mode, void *data) {
    uring_be *u = b;
    int rc = uring_reg_add(&u->reg, fd, (uint8_t)mode, data);
    if (rc < 0)
        return rc;
    rc = arm(u, fd);
    if (rc < 0)
        uring_reg_del(&u->reg, fd);
    return rc;
}

/* Queues the removal of fd's poll (by its tag, before the entry's
 * generation moves on: a later CQE of that poll is then stale). A cancel,
 * not POLL_REMOVE: while a wake-up of the poll waits to be run (bytes or an
 * ACK arrived since the last turn) POLL_REMOVE fails with EALREADY and the
 * poll stays armed, holding the socket open; a cancel marks it and the
 * pending wake-up ends it. */
static int ur_del(void *b, int fd) {
    uring_be *u = b;
    uint64_t tag;
    int rc = uring_reg_del_tag(&u->reg, fd, &tag);
    if (rc < 0)
        return rc;
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe)
        return -EBUSY;
    io_uring_prep_cancel64(sqe, tag, 0);
    io_uring_sqe_set_data64(sqe, URING_TAG_IGNORE);
    sqe->flags |= (uint8_t)u->sqe_flags;
    return 0;
}

static void ur_forget(void *b, int fd) {
    ur_del(b, fd);
}

static void ur_close_fd(void *b, int fd, int registered) {
    uring_be *u = b;
    if (registered)
        ur_del(u, fd);
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe) {
        close(fd);
        return;
    }
    io_uring_prep_close(sqe, fd);
    io_uring_sqe_set_data64(sqe, URING_TAG_IGNORE);
    sqe->flags |= (uint8_t)u->sqe_flags;
}

static uint32_t loop_bits(int res) {
    uint32_t e = (uint32_t)res, bits = 0;
    if (e & POLLIN)
        bits |= LOOP_READ;
    if (e & POLLOUT)
        bits |= LOOP_WRITE;
    if (e & POLLRDHUP)
        bits |= LOOP_RDHUP;
    if (e & (POLLHUP | POLLERR))
        bits |= LOOP_HUP;
    return bits;
}

/* Sends go in with the next submit (one io_uring_enter for every
 * connection's answer of this turn) instead of a sendmsg each. */
static int ur_send(void *b, int fd, const struct msghdr *msg, int flags, backend_op *op) {
    uring_be *u = b;
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe)
        return -EBUSY;
    io_uring_prep_sendmsg(sqe, fd, msg, (unsigned)flags);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | URING_TAG_OP);
    return 0;
}

static void ur_cancel(void *b, backend_op *op) {
    uring_be *u = b;
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe)
        return; /* the send ends by itself: the peer's close or reading */
    io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op | URING_TAG_OP, 0);
    io_uring_sqe_set_data64(sqe, URING_TAG_IGNORE);
    sqe->flags |= (uint8_t)u->sqe_flags;
}

/* One CQE: its event, if it belongs to a live registration or is an
 * operation's completion (1), or 0. */
static int reap(uring_be *u, const struct io_uring_cqe *cqe, backend_event *out) {
    if (cqe->user_data != URING_TAG_IGNORE && (cqe->user_data & URING_TAG_OP)) {
        backend_op *op = (backend_op *)(uintptr_t)(cqe->user_data & ~URING_TAG_OP);
        op->res = cqe->res;
        op->done = 1;
        out->data = op;
        out->events = LOOP_OP_DONE;
        return 1;
    }
    int fd;
    uring_entry *e = uring_reg_lookup(&u->reg, cqe->user_data, &fd);
    if (!e)
        return 0; /* stale: its watch was removed (and the fd maybe reused) */
    int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    if (!more) /* one-shot, or a multishot poll the kernel ended: arm again */
        uring_reg_want_rearm(&u->reg, fd);
    if (cqe->res < 0) {
        if (cqe->res == -ECANCELED || cqe->res == -ENOMEM || cqe->res == -EAGAIN)
            return 0;
        out->events = LOOP_HUP | LOOP_READ | LOOP_WRITE; /* EBADF and the like */
    } else {
        out->events = loop_bits(cqe->res);
        if (!out->events)
            return 0;
    }
    out->data = e->data;
    return 1;
}

static int ur_wait(void *b, backend_event *out, int max, int timeout_ms) {
    uring_be *u = b;
    int fd;
    while ((fd = uring_reg_next_rearm(&u->reg)) >= 0)
        arm(u, fd);
    struct io_uring_cqe *cqe = NULL;
    int rc;
    if (timeout_ms < 0) {
        rc = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, NULL, NULL);
    } else {
        struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
                                       .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};
        rc = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
    }
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
        return rc;
    int n = 0;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&u->ring, head, cqe) {
        if (n >= max)
            break;
        n += reap(u, cqe, &out[n]);
        seen++;
    }
    io_uring_cq_advance(&u->ring, seen);
    return n;
}

const backend_ops backend_uring_ops = {
    .name = "io_uring",
    .open = ur_open,
    .free = ur_free,
    .add = ur_add,
    .del = ur_del,
    .close_fd = ur_close_fd,
    .forget = ur_forget,
    .wait = ur_wait,
    .send = ur_send,
    .cancel = ur_cancel,
};
