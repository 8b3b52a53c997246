/* green_wait.c — a greenlet's cooperative waits, for apps and
 * spindle.patch(): spindle.sleep, wait_readable/wait_writable, and the
 * park/unpark pair the green locks and events are made of. Each parks the
 * current greenlet in the hub (hub_wait) until a loop timer, an fd watch or
 * an unpark queues its wake. */
#include "common/binding.h"

#include <errno.h>

typedef struct gwait {
    hub_wake wake;
    loop_timer timer;
    loop_watch watch;
    int watching;
} gwait;

static void gwait_timeout(loop *l, loop_timer *t) {
    gwait *g = t->data;
    g->wake.result = 0;
    hub_queue(the_hub, &g->wake);
}

static void gwait_ready(loop *l, loop_watch *w, uint32_t events) {
    gwait *g = w->data;
    g->wake.result = 1;
    hub_queue(the_hub, &g->wake);
}

/* Parks the current greenlet until the fd is ready (if fd >= 0) or the
 * timeout passes (if ms >= 0). Returns 1 ready, 0 timed out, -1 error. */
static long greenlet_wait(int fd, int write, double ms) {
    hub *h = the_hub;
    gwait *g = PyMem_Calloc(1, sizeof *g);
    if (!g) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *cur = hub_current();
    g->wake.greenlet = cur;
    if (fd >= 0) {
        g->watch = (loop_watch){.fd = fd, .cb = gwait_ready, .data = g};
        int rc = loop_watch_add(h->l, &g->watch, write ? BACKEND_WRITE_LEVEL : BACKEND_READ_LEVEL);
        if (rc < 0) {
            Py_XDECREF(cur);
            PyMem_Free(g);
            errno = -rc;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        g->watching = 1;
    }
    if (ms >= 0)
        loop_timer_arm(h->l, &g->timer, loop_clock_ms() + (int64_t)(ms + 0.999), gwait_timeout, g);
    long r = hub_wait(&g->wake);
    loop_timer_cancel(h->l, &g->timer);
    if (g->watching)
        loop_watch_del(h->l, &g->watch);
    hub_unqueue(h, &g->wake); /* woken for another reason (an exception thrown in) */
    Py_XDECREF(cur);
    PyMem_Free(g);
    return r;
}

PyObject *py_sleep(PyObject *self, PyObject *args) {
    double secs;
    if (!PyArg_ParseTuple(args, "d:sleep", &secs))
        return NULL;
    if (secs < 0) {
        PyErr_SetString(PyExc_ValueError, "sleep length must be non-negative");
        return NULL;
    }
    if (!hub_in_greenlet(the_hub)) {
        /* Not inside a request: plain blocking sleep (start-up code). */
        PyObject *time = PyImport_ImportModule("time");
        if (!time)
            return NULL;
        PyObject *r = PyObject_CallMethod(time, "_spindle_orig_sleep", "d", secs);
        if (!r && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            r = PyObject_CallMethod(time, "sleep", "d", secs);
        }
        Py_DECREF(time);
        return r;
    }
    if (greenlet_wait(-1, 0, secs * 1000.0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Parks the current greenlet, findable by unpark through h->parked. */
static long park_current(hub *h, double ms) {
    gwait *g = PyMem_Calloc(1, sizeof *g);
    if (!g) {
        PyErr_NoMemory();
        return -1;
    }
    if (!h->parked && !(h->parked = PyDict_New())) {
        PyMem_Free(g);
        return -1;
    }
    PyObject *cur = hub_current();
    PyObject *ptr = PyLong_FromVoidPtr(g);
    if (!ptr || PyDict_SetItem(h->parked, cur, ptr) < 0) {
        Py_XDECREF(ptr);
        Py_XDECREF(cur);
        PyMem_Free(g);
        return -1;
    }
    Py_DECREF(ptr);
    g->wake.greenlet = cur;
    if (ms >= 0)
        loop_timer_arm(h->l, &g->timer, loop_clock_ms() + (int64_t)(ms + 0.999), gwait_timeout, g);
    long r = hub_wait(&g->wake);
    loop_timer_cancel(h->l, &g->timer);
    hub_unqueue(h, &g->wake);
    PyObject *et, *ev, *tb; /* keep an exception thrown in (GreenletExit) */
    PyErr_Fetch(&et, &ev, &tb);
    if (PyDict_DelItem(h->parked, cur) < 0)
        PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    Py_DECREF(cur);
    PyMem_Free(g);
    return r;
}

int hub_timeout_ms(PyObject *tobj, double *ms) {
    *ms = -1;
    if (tobj == Py_None)
        return 0;
    *ms = PyFloat_AsDouble(tobj) * 1000.0;
    if (*ms < 0 && PyErr_Occurred())
        return -1;
    if (*ms < 0)
        *ms = 0;
    return 0;
}

PyObject *py_park(PyObject *self, PyObject *args) {
    PyObject *tobj = Py_None;
    if (!PyArg_ParseTuple(args, "|O:park", &tobj))
        return NULL;
    double ms;
    if (hub_timeout_ms(tobj, &ms) < 0)
        return NULL;
    if (!hub_in_greenlet(the_hub)) {
        PyErr_SetString(PyExc_RuntimeError, "spindle park works inside a request only");
        return NULL;
    }
    long r = park_current(the_hub, ms);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

PyObject *py_unpark(PyObject *self, PyObject *target) {
    hub *h = the_hub;
    /* Only the loop's thread touches the ready queue; other threads' wakes
     * are caught by the waiter's bounded park. */
    if (!h || !h->parked || PyThread_get_thread_ident() != h->thread)
        Py_RETURN_FALSE;
    PyObject *ptr = PyDict_GetItemWithError(h->parked, target);
    if (!ptr) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    gwait *g = PyLong_AsVoidPtr(ptr);
    g->wake.result = 1;
    hub_queue(h, &g->wake);
    Py_RETURN_TRUE;
}

PyObject *py_wait_fd(PyObject *self, PyObject *args, PyObject *kw, int write) {
    static char *kwlist[] = {"fd", "timeout", NULL};
    PyObject *fdobj, *tobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &fdobj, &tobj))
        return NULL;
    int fd = PyObject_AsFileDescriptor(fdobj);
    if (fd < 0)
        return NULL;
    double ms;
    if (hub_timeout_ms(tobj, &ms) < 0)
        return NULL;
    if (!hub_in_greenlet(the_hub)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.wait_readable/wait_writable work inside a request served by "
                        "spindle; outside one, use select");
        return NULL;
    }
    long r = greenlet_wait(fd, write, ms);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}
