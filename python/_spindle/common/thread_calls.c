/* thread_calls.c — the app's other threads hand work to the worker's loop
 * (spindle.Event.set, Channel.put/get from a thread): the callable joins
 * the hub's spawn list under the GIL and an eventfd the loop watches wakes
 * it from epoll_wait, so the loop runs it in a new greenlet on its turn. */
#include "common/binding.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

static loop_watch wake_watch = {.fd = -1};

/* Runs in the loop without the GIL: only empties the eventfd; the spawn
 * list is run by the hub once the poll returns. */
static void on_wake(loop *l, loop_watch *w, uint32_t events) {
    uint64_t n;
    while (read(w->fd, &n, sizeof n) == (ssize_t)sizeof n)
        ;
}

int thread_calls_start(hub *h) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    wake_watch = (loop_watch){.fd = fd, .cb = on_wake, .data = h};
    int rc = loop_watch_add(h->l, &wake_watch, BACKEND_READ_LEVEL);
    if (rc < 0) {
        close(fd);
        wake_watch.fd = -1;
    }
    return rc;
}

void thread_calls_stop(hub *h) {
    if (wake_watch.fd < 0)
        return;
    loop_watch_del(h->l, &wake_watch);
    close(wake_watch.fd);
    wake_watch.fd = -1;
}

PyObject *py_start_greenlet_threadsafe(PyObject *self, PyObject *fn) {
    hub *h = the_hub;
    if (!h) {
        PyErr_SetString(PyExc_RuntimeError, "no spindle worker runs in this process");
        return NULL;
    }
    if (!h->starts && !(h->starts = PyList_New(0)))
        return NULL;
    if (PyList_Append(h->starts, fn) < 0)
        return NULL;
    /* The GIL orders this after the append; a loop thread that has not
     * started polling yet runs the list before its first poll anyway. */
    if (wake_watch.fd >= 0 && PyThread_get_thread_ident() != h->thread) {
        uint64_t one = 1;
        if (write(wake_watch.fd, &one, sizeof one) < 0 && errno != EAGAIN)
            return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

PyObject *py_on_loop_thread(PyObject *self, PyObject *unused) {
    hub *h = the_hub;
    /* Before the loop drives (at import) every thread is treated as its. */
    return PyBool_FromLong(!h || !h->hub_g || PyThread_get_thread_ident() == h->thread);
}
