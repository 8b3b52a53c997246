/* wait_fds.c — one cooperative wait on many fds, the primitive under the
 * patched select.select, select.poll and selectors (spindle.patch()). The
 * greenlet parks until any fd is ready or the timeout passes; the caller
 * then asks the real select with a zero timeout which objects are ready. */
#include "common/binding.h"

#include <errno.h>

typedef struct fdwait fdwait;

typedef struct multiwait {
    hub_wake wake;
    loop_timer timer;
    size_t n;
    fdwait *fds;
} multiwait;

struct fdwait {
    loop_watch watch;
    multiwait *m;
    int want; /* 1 read, 2 write */
    uint32_t got;
    int registered;
};

static void multi_ready(loop *l, loop_watch *w, uint32_t events) {
    fdwait *f = w->data;
    f->got |= events;
    f->m->wake.result = 1;
    hub_queue(the_hub, &f->m->wake);
}

static void multi_timeout(loop *l, loop_timer *t) {
    multiwait *m = t->data;
    m->wake.result = 0;
    hub_queue(the_hub, &m->wake);
}

/* Adds fd with bit want (1 read, 2 write), merging with an earlier entry. */
static int add_fd(multiwait *m, size_t cap, PyObject *item, int want) {
    int fd = PyObject_AsFileDescriptor(item);
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (m->fds[i].watch.fd == fd) {
            m->fds[i].want |= want;
            return 0;
        }
    if (m->n == cap) {
        PyErr_SetString(PyExc_ValueError, "wait_fds: too many fds");
        return -1;
    }
    m->fds[m->n++] = (fdwait){.watch = {.fd = fd}, .m = m, .want = want};
    return 0;
}

static int collect(multiwait *m, PyObject *rseq, PyObject *wseq) {
    Py_ssize_t nr = PySequence_Fast_GET_SIZE(rseq), nw = PySequence_Fast_GET_SIZE(wseq);
    size_t cap = (size_t)(nr + nw);
    m->fds = PyMem_Calloc(cap ? cap : 1, sizeof *m->fds);
    if (!m->fds) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < nr; i++)
        if (add_fd(m, cap, PySequence_Fast_GET_ITEM(rseq, i), 1) < 0)
            return -1;
    for (Py_ssize_t i = 0; i < nw; i++)
        if (add_fd(m, cap, PySequence_Fast_GET_ITEM(wseq, i), 2) < 0)
            return -1;
    return 0;
}

static int watch_all(hub *h, multiwait *m) {
    for (size_t i = 0; i < m->n; i++) {
        fdwait *f = &m->fds[i];
        f->watch.cb = multi_ready;
        f->watch.data = f;
        backend_mode mode = f->want == 3   ? BACKEND_RW_LEVEL
                            : f->want == 2 ? BACKEND_WRITE_LEVEL
                                           : BACKEND_READ_LEVEL;
        int rc = loop_watch_add(h->l, &f->watch, mode);
        if (rc < 0) {
            errno = -rc;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        f->registered = 1;
    }
    return 0;
}

/* (readable fds, writable fds) as lists; an fd that hung up is in both its
 * wanted lists, so the caller's read or write sees the error. */
static PyObject *result(multiwait *m) {
    PyObject *r = PyList_New(0), *w = PyList_New(0);
    for (size_t i = 0; r && w && i < m->n; i++) {
        fdwait *f = &m->fds[i];
        uint32_t hup = f->got & (LOOP_HUP | LOOP_RDHUP);
        PyObject *fd = PyLong_FromLong(f->watch.fd);
        if (!fd)
            break;
        if ((f->want & 1) && (f->got & LOOP_READ || hup))
            PyList_Append(r, fd);
        if ((f->want & 2) && (f->got & LOOP_WRITE || hup))
            PyList_Append(w, fd);
        Py_DECREF(fd);
    }
    PyObject *t = r && w && !PyErr_Occurred() ? PyTuple_Pack(2, r, w) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(w);
    return t;
}

PyObject *py_wait_fds(PyObject *self, PyObject *args) {
    PyObject *robj, *wobj, *tobj = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:wait_fds", &robj, &wobj, &tobj))
        return NULL;
    double ms;
    if (hub_timeout_ms(tobj, &ms) < 0)
        return NULL;
    hub *h = the_hub;
    if (!hub_in_greenlet(h)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle wait_fds works inside a request served by spindle; outside "
                        "one, use select");
        return NULL;
    }
    PyObject *rseq = PySequence_Fast(robj, "wait_fds: read_fds must be a sequence");
    PyObject *wseq = rseq ? PySequence_Fast(wobj, "wait_fds: write_fds must be a sequence") : NULL;
    /* On the heap: greenlet copies stacks, so the loop must not point here. */
    multiwait *m = wseq ? PyMem_Calloc(1, sizeof *m) : NULL;
    PyObject *out = NULL;
    if (m && collect(m, rseq, wseq) == 0 && watch_all(h, m) == 0) {
        m->wake.greenlet = hub_current();
        if (ms >= 0)
            loop_timer_arm(h->l, &m->timer, loop_clock_ms() + (int64_t)(ms + 0.999), multi_timeout,
                           m);
        long r = hub_wait(&m->wake);
        loop_timer_cancel(h->l, &m->timer);
        hub_unqueue(h, &m->wake);
        Py_XDECREF(m->wake.greenlet);
        if (r >= 0)
            out = result(m);
    } else if (wseq && !m) {
        PyErr_NoMemory();
    }
    if (m) {
        for (size_t i = 0; m->fds && i < m->n; i++)
            if (m->fds[i].registered)
                loop_watch_del(h->l, &m->fds[i].watch);
        PyMem_Free(m->fds);
        PyMem_Free(m);
    }
    Py_XDECREF(rseq);
    Py_XDECREF(wseq);
    return out;
}
