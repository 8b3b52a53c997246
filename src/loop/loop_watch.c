/* loop_watch.c — fd watches: registering an fd with the loop's backend
 * (at once or lazily, on the first wait), forgetting, closing and removing
 * it, each waking whoever was parked on it with -ECANCELED. */
#include "loop/loop_int.h"

#include <errno.h>

void loop_watch_lazy(loop_watch *w, backend_mode mode) {
    w->registered = 0;
    w->lazy = 1;
    w->mode = (uint8_t)mode;
    w->reader = w->writer = w->hup_waiter = NULL;
    w->hup = 0;
}

int loop_watch_ensure(loop *l, loop_watch *w) {
    if (w->registered)
        return 0;
    if (!w->lazy)
        return -ECANCELED;
    return loop_watch_add(l, w, (backend_mode)w->mode);
}

int loop_watch_add(loop *l, loop_watch *w, backend_mode mode) {
    w->lazy = 0;
    w->reader = w->writer = w->hup_waiter = NULL;
    w->hup = 0;
    int rc = l->ops->add(l->be, w->fd, mode, w);
    if (rc < 0)
        return rc;
    w->registered = 1;
    w->mode = (uint8_t)mode;
    l->nwatches++;
    return 0;
}

static void watch_drop(loop *l, loop_watch *w) {
    w->registered = 0;
    l->nwatches--;
    task *waiters[3] = {w->reader, w->writer, w->hup_waiter};
    w->reader = w->writer = w->hup_waiter = NULL;
    for (int i = 0; i < 3; i++)
        if (waiters[i])
            loop_wake(l, waiters[i], -ECANCELED);
}

void loop_watch_forget(loop *l, loop_watch *w) {
    w->lazy = 0;
    if (!w->registered)
        return;
    l->ops->forget(l->be, w->fd); /* io_uring: a poll would keep the file open */
    watch_drop(l, w);
}

void loop_watch_close(loop *l, loop_watch *w) {
    w->lazy = 0;
    int registered = w->registered;
    if (registered)
        watch_drop(l, w);
    l->ops->close_fd(l->be, w->fd, registered);
}

int loop_watch_del(loop *l, loop_watch *w) {
    w->lazy = 0;
    if (!w->registered)
        return 0;
    int rc = l->ops->del(l->be, w->fd);
    watch_drop(l, w);
    return rc;
}
