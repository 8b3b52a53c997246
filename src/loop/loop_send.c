/* loop_send.c — a send queued on the loop's backend (io_uring: it goes in
 * with the turn's one io_uring_enter), the task parked until it completes;
 * and the backend's name. */
#include "loop/loop.h"

#include <errno.h>

const char *loop_backend_name(const loop *l) {
    void *be;
    return loop_backend(l, &be)->name;
}

ssize_t loop_send(loop *l, loop_watch *w, const struct msghdr *msg, int flags,
                  int64_t deadline_ms) {
    void *be;
    const backend_ops *ops = loop_backend(l, &be);
    task *t = loop_task(l);
    /* Only on the connection the task serves (its hup watch): a task that
     * writes to many sockets (a WebSocket broadcast) would wait a loop
     * turn for each; those sends stay plain syscalls. */
    if (!t || !ops->send || loop_task_hup_watch(t) != w)
        return -ENOSYS;
    backend_op op = {.waiter = t};
    int rc = ops->send(be, w->fd, msg, flags, &op);
    if (rc < 0)
        return -ENOSYS; /* not queued (no SQE to be had): the plain syscall */
    int timed_out = 0;
    /* The kernel reads msg and its buffers until the completion (which
     * wakes the task with 0): never return before it, whatever woke us. */
    while (!op.done) {
        rc = loop_park(l, timed_out ? LOOP_NO_DEADLINE : deadline_ms, NULL);
        if (rc == -ENOMEM)
            deadline_ms = LOOP_NO_DEADLINE; /* no timer to be had: wait anyway */
        else if (rc == -ETIMEDOUT && !op.done) {
            timed_out = 1;
            ops->cancel(be, &op);
        }
    }
    return timed_out && op.res == -ECANCELED ? -ETIMEDOUT : op.res;
}
