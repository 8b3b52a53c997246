/* wsgi_input.c — wsgi.input: the request body as a file-like object
 * (read, readline, readlines, iteration). Bytes already in the connection's
 * buffer are copied without leaving the greenlet; otherwise the request's
 * coroutine reads (and the greenlet waits in the hub), so a body streams
 * and is never held whole. Dead once its request has been answered. */
#include "wsgi/wsgi.h"

#include <errno.h>
#include <string.h>

#define READ_PIECE 65536

typedef struct {
    PyObject_HEAD pyjob *j; /* NULL once the request is over */
    PyObject *pushback;     /* bytes read ahead by readline, not yet returned */
} input_obj;

static PyTypeObject input_type;

/* The last request's input when nothing else held it at its end: the next
 * request takes it instead of a new object (one worker thread). */
static input_obj *spare;

PyObject *input_new(pyjob *j) {
    input_obj *o = spare ? spare : PyObject_New(input_obj, &input_type);
    spare = NULL;
    if (!o)
        return NULL;
    o->j = j;
    o->pushback = NULL;
    return (PyObject *)o;
}

void input_reuse(PyObject *input, pyjob *j) {
    input_obj *o = (input_obj *)input;
    o->j = j;
    Py_CLEAR(o->pushback);
}

int input_reusable(PyObject *input) {
    return input && Py_REFCNT(input) == 2 && !((input_obj *)input)->j;
}

void input_detach(PyObject *input) {
    ((input_obj *)input)->j = NULL;
}

void input_release(PyObject *input) {
    input_obj *o = (input_obj *)input;
    if (o && Py_REFCNT(o) == 1 && !spare && !o->j) {
        Py_CLEAR(o->pushback);
        spare = o;
        return;
    }
    Py_XDECREF(o);
}

static void input_dealloc(input_obj *o) {
    Py_XDECREF(o->pushback);
    PyObject_Free(o);
}

/* A copy of p[0..n) that is ours alone. PyBytes_FromStringAndSize hands out
 * one shared object for every single byte, and _PyBytes_Resize refuses a
 * shared object (SystemError): pushback is resized later, so it is built
 * here, never shared. */
static PyObject *own_bytes(const char *p, Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, n);
    if (b && n)
        memcpy(PyBytes_AS_STRING(b), p, (size_t)n);
    return b;
}

/* Reads up to n body bytes into dst (heap memory). Returns the count, 0 at
 * the end, or -1 with a Python error set. */
static Py_ssize_t read_some(input_obj *o, char *dst, size_t n) {
    pyjob *j = o->j;
    if (!j)
        return 0;
    ssize_t r = req_read_buffered(j->req, dst, n);
    if (r == -EAGAIN) {
        j->rbuf = dst;
        j->len = n;
        r = hub_op(j, OP_READ);
    }
    if (r < 0) {
        if (PyErr_Occurred())
            return -1;
        PyErr_Format(PyExc_OSError, "reading the request body failed: %s%s", strerror((int)-r),
                     r == -ETIMEDOUT ? " (the client was silent longer than --body-timeout)" : "");
        return -1;
    }
    return r;
}

/* Up to size bytes (all, when size < 0), filling unless the body ends. */
static PyObject *input_read(input_obj *o, PyObject *args) {
    Py_ssize_t size = -1;
    if (!PyArg_ParseTuple(args, "|n:read", &size))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t have = 0;
    if (o->pushback) {
        Py_ssize_t pl = PyBytes_GET_SIZE(o->pushback);
        if (size >= 0 && pl > size) {
            PyObject *rest = own_bytes(PyBytes_AS_STRING(o->pushback) + size, pl - size);
            PyObject *head = PyBytes_FromStringAndSize(PyBytes_AS_STRING(o->pushback), size);
            if (!rest || !head) {
                Py_XDECREF(rest);
                Py_XDECREF(head);
                return NULL;
            }
            Py_SETREF(o->pushback, rest);
            return head;
        }
        out = o->pushback;
        o->pushback = NULL;
        have = pl;
    }
    /* Start small and grow: read(huge) of a short body must not allocate huge. */
    size_t cap = (size_t)have + READ_PIECE;
    if (size >= 0 && (size_t)size < cap)
        cap = (size_t)size;
    if (!out) {
        out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
        if (!out)
            return NULL;
    } else if ((size_t)have < cap && _PyBytes_Resize(&out, (Py_ssize_t)cap) < 0) {
        return NULL;
    }
    for (;;) {
        if (size >= 0 && have >= size)
            break;
        if ((size_t)have == cap) {
            cap *= 2;
            if (size >= 0 && cap > (size_t)size)
                cap = (size_t)size;
            if (_PyBytes_Resize(&out, (Py_ssize_t)cap) < 0)
                return NULL;
        }
        Py_ssize_t n = read_some(o, PyBytes_AS_STRING(out) + have, cap - (size_t)have);
        if (n < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (n == 0)
            break;
        have += n;
    }
    if (_PyBytes_Resize(&out, have) < 0)
        return NULL;
    return out;
}

/* One line (up to and including b"\n"), at most limit bytes. */
static PyObject *readline_impl(input_obj *o, Py_ssize_t limit) {
    PyObject *acc = o->pushback ? o->pushback : PyBytes_FromStringAndSize(NULL, 0);
    o->pushback = NULL;
    if (!acc)
        return NULL;
    Py_ssize_t scanned = 0;
    for (;;) {
        Py_ssize_t len = PyBytes_GET_SIZE(acc);
        const char *p = PyBytes_AS_STRING(acc);
        const char *nl = memchr(p + scanned, '\n', (size_t)(len - scanned));
        Py_ssize_t cut = -1;
        if (nl)
            cut = nl - p + 1;
        if (limit >= 0 && (cut < 0 || cut > limit) && len >= limit)
            cut = limit;
        if (cut >= 0) {
            if (cut < len) {
                o->pushback = own_bytes(p + cut, len - cut);
                if (!o->pushback) {
                    Py_DECREF(acc);
                    return NULL;
                }
                if (_PyBytes_Resize(&acc, cut) < 0)
                    return NULL;
            }
            return acc;
        }
        scanned = len;
        size_t want = limit >= 0 && limit - len < 8192 ? (size_t)(limit - len) : 8192;
        if (_PyBytes_Resize(&acc, len + (Py_ssize_t)want) < 0)
            return NULL;
        Py_ssize_t n = read_some(o, PyBytes_AS_STRING(acc) + len, want);
        if (n < 0) {
            Py_DECREF(acc);
            return NULL;
        }
        if (_PyBytes_Resize(&acc, len + n) < 0)
            return NULL;
        if (n == 0)
            return acc; /* the body ended without a newline */
    }
}

static PyObject *input_readline(input_obj *o, PyObject *args) {
    Py_ssize_t limit = -1;
    PyObject *lim = Py_None;
    if (!PyArg_ParseTuple(args, "|O:readline", &lim))
        return NULL;
    if (lim != Py_None) {
        limit = PyLong_AsSsize_t(lim);
        if (limit == -1 && PyErr_Occurred())
            return NULL;
    }
    return readline_impl(o, limit);
}

static PyObject *input_readlines(input_obj *o, PyObject *args) {
    Py_ssize_t hint = -1;
    if (!PyArg_ParseTuple(args, "|n:readlines", &hint))
        return NULL;
    PyObject *lines = PyList_New(0);
    if (!lines)
        return NULL;
    Py_ssize_t total = 0;
    for (;;) {
        PyObject *line = readline_impl(o, -1);
        if (!line) {
            Py_DECREF(lines);
            return NULL;
        }
        Py_ssize_t n = PyBytes_GET_SIZE(line);
        if (n == 0) {
            Py_DECREF(line);
            break;
        }
        int rc = PyList_Append(lines, line);
        Py_DECREF(line);
        if (rc < 0) {
            Py_DECREF(lines);
            return NULL;
        }
        total += n;
        if (hint > 0 && total >= hint)
            break;
    }
    return lines;
}

static PyObject *input_iternext(input_obj *o) {
    PyObject *line = readline_impl(o, -1);
    if (line && PyBytes_GET_SIZE(line) == 0) {
        Py_DECREF(line);
        return NULL; /* StopIteration */
    }
    return line;
}

static PyObject *input_iter(PyObject *o) {
    Py_INCREF(o);
    return o;
}

static PyMethodDef input_methods[] = {
    {"read", (PyCFunction)input_read, METH_VARARGS, "read([size]) -> bytes"},
    {"readline", (PyCFunction)input_readline, METH_VARARGS, "readline([limit]) -> bytes"},
    {"readlines", (PyCFunction)input_readlines, METH_VARARGS, "readlines([hint]) -> list"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject input_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle.Input",
    .tp_basicsize = sizeof(input_obj),
    .tp_dealloc = (destructor)input_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "wsgi.input: the request body",
    .tp_iter = input_iter,
    .tp_iternext = (iternextfunc)input_iternext,
    .tp_methods = input_methods,
};

int input_init_type(void) {
    return PyType_Ready(&input_type);
}
