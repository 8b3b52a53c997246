/* hints.c — 103 Early Hints from Python: the Link values checked once for
 * both interfaces (bytes or latin-1 str, no CR, LF, NUL or other control,
 * surrounding whitespace trimmed, 1 to 16 of them), and WSGI's callable,
 * environ["spindle.early_hints"] (also spindle.early_hints), which asks
 * the request's coroutine for sp_res_early_hints before the head goes out. */
#include "common/binding.h"
#include "common/hints.h"

#include "http/http_chars.h"

#include <errno.h>
#include <string.h>

/* One link as bytes without surrounding whitespace (a new reference), or
 * NULL with ValueError/TypeError saying what is wrong with it. */
static PyObject *one_link(PyObject *v) {
    PyObject *b = PyUnicode_Check(v) ? PyUnicode_AsLatin1String(v) : NULL;
    if (!b && PyUnicode_Check(v))
        return NULL;
    if (!b && !PyBytes_Check(v)) {
        PyErr_Format(PyExc_TypeError, "an early hint link is bytes (or str), not %.100s",
                     Py_TYPE(v)->tp_name);
        return NULL;
    }
    if (!b)
        b = Py_NewRef(v);
    const char *p = PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b), s = 0;
    while (s < n && (p[s] == ' ' || p[s] == '\t'))
        s++;
    while (n > s && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    int good = n > s;
    for (Py_ssize_t i = s; good && i < n; i++)
        good = http_is((unsigned char)p[i], HTTP_C_VALUE);
    if (!good) {
        PyErr_Format(PyExc_ValueError,
                     "invalid early hint link %R: a Link field value, not empty, with no CR, LF, "
                     "NUL or other control character",
                     v);
        Py_DECREF(b);
        return NULL;
    }
    if (s || n < PyBytes_GET_SIZE(b))
        Py_SETREF(b, PyBytes_FromStringAndSize(p + s, n - s));
    return b;
}

int hints_collect(PyObject *links, hints_list *out) {
    out->keep = NULL;
    out->v = NULL;
    out->n = 0;
    PyObject *seq = PySequence_Fast(links, "early hint links are an iterable of bytes");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > HINTS_MAX_LINKS) {
        PyErr_Format(PyExc_ValueError, "at most %d links per early hint, not %zd", HINTS_MAX_LINKS,
                     n);
        Py_DECREF(seq);
        return -1;
    }
    PyObject *keep = PyList_New(0);
    const char **v = n ? PyMem_Malloc((size_t)n * sizeof *v) : NULL;
    if (!keep || (n && !v)) {
        Py_DECREF(seq);
        Py_XDECREF(keep);
        PyMem_Free(v);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = one_link(PySequence_Fast_GET_ITEM(seq, i));
        if (!b || PyList_Append(keep, b) < 0) {
            Py_XDECREF(b);
            Py_DECREF(seq);
            Py_DECREF(keep);
            PyMem_Free(v);
            return -1;
        }
        v[i] = PyBytes_AS_STRING(b); /* alive while keep holds it */
        Py_DECREF(b);
    }
    Py_DECREF(seq);
    out->keep = keep;
    out->v = v;
    out->n = (size_t)n;
    return 0;
}

void hints_release(hints_list *l) {
    Py_CLEAR(l->keep);
    PyMem_Free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* spindle.early_hints(links) -> bool: True when a 103 went out, False when
 * the client cannot take one (HTTP/1.0: RFC 9110 §15.2) or links is empty. */
static PyObject *py_early_hints(PyObject *self, PyObject *links) {
    pyjob *j = hub_current_job();
    if (!j) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.early_hints() works inside a request served by spindle (in "
                        "its own greenlet)");
        return NULL;
    }
    if (j->wsobj || res_get_head_sent(j->res)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.early_hints() after the response head went out: a 103 comes "
                        "before the answer (call it before the first body bytes)");
        return NULL;
    }
    hints_list l;
    if (hints_collect(links, &l) < 0)
        return NULL;
    if (l.n == 0 || (req_get_http_major(j->req) == 1 && sp_req_minor_version(j->req) == 0)) {
        hints_release(&l);
        Py_RETURN_FALSE;
    }
    j->hints = l.v;
    j->nhints = l.n;
    ssize_t r = hub_op(j, OP_HINTS);
    j->hints = NULL;
    j->nhints = 0;
    hints_release(&l);
    if (r < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_OSError, "early hints not sent: %s", strerror((int)-r));
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef hints_def = {
    "early_hints", py_early_hints, METH_O,
    "early_hints(links) -> bool: sends 103 Early Hints now, a Link field per item (bytes or "
    "str, at most 16), before the answer; False when the client cannot take one (HTTP/1.0); "
    "RuntimeError once the response head went out"};

PyObject *hints_function(void) {
    static PyObject *fn;
    if (!fn)
        fn = PyCFunction_New(&hints_def, NULL);
    return fn;
}
