/* wsgi_check.c — what start_response is given, checked (PEP 3333, RFC 9110):
 * the status, and each header a (str, str) pair with a token name, a value
 * without control characters, not hop-by-hop; and the latin-1 bytes of the
 * strs they are made of (wsgi.h's latin1_of, its slow path here). */
#include "wsgi/wsgi.h"

#include "http/http_chars.h"

#include <string.h>

/* The str's latin-1 bytes when it is not compact ASCII (see latin1_of). */
const char *latin1_slow(PyObject *s, Py_ssize_t *len, PyObject **hold) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "WSGI status and headers must be str, not %.100s",
                     Py_TYPE(s)->tp_name);
        return NULL;
    }
    if (PyUnicode_IS_COMPACT_ASCII(s)) { /* its own bytes, NUL-terminated */
        *len = PyUnicode_GET_LENGTH(s);
        return (const char *)PyUnicode_DATA(s);
    }
    if (PyUnicode_IS_ASCII(s))
        return PyUnicode_AsUTF8AndSize(s, len); /* ASCII: the same bytes, cached */
    *hold = PyUnicode_AsLatin1String(s);
    if (!*hold)
        return NULL;
    *len = PyBytes_GET_SIZE(*hold);
    return PyBytes_AS_STRING(*hold);
}

/* By length first: most names match none, at the cost of a switch. */
static int is_hop_by_hop(const char *n, size_t len) {
    switch (len) {
    case 2:
        return http_ieq(n, len, "te", 2);
    case 7:
        return http_ieq(n, len, "upgrade", 7);
    case 8:
        return http_ieq(n, len, "trailers", 8);
    case 10:
        return http_ieq(n, len, "connection", 10) || http_ieq(n, len, "keep-alive", 10);
    case 17:
        return http_ieq(n, len, "transfer-encoding", 17);
    case 18:
        return http_ieq(n, len, "proxy-authenticate", 18);
    case 19:
        return http_ieq(n, len, "proxy-authorization", 19);
    }
    return 0;
}

/* The status: "NNN reason", code 1xx-5xx, no control characters. */
static int validate_status(PyObject *status) {
    Py_ssize_t sl;
    PyObject *hold;
    const char *st = latin1_of(status, &sl, &hold);
    if (!st)
        return -1;
    int ok = sl >= 4 && st[0] >= '1' && st[0] <= '5' && st[1] >= '0' && st[1] <= '9' &&
             st[2] >= '0' && st[2] <= '9' && st[3] == ' ';
    for (Py_ssize_t i = 4; ok && i < sl; i++)
        ok = http_is((unsigned char)st[i], HTTP_C_VALUE);
    int interim = ok && st[0] == '1'; /* refused by sp_res_status too; said here */
    Py_XDECREF(hold);
    if (!ok || interim) {
        PyErr_Format(PyExc_ValueError,
                     interim ? "WSGI status %R is interim (1xx): an answer is 200-599"
                             : "invalid WSGI status %R: want '200 OK' form",
                     status);
        return -1;
    }
    return 0;
}

/* A status and header pairs found valid before, by identity: an app's
 * literal ('Content-Type', 'text/plain') is one constant object, so its
 * checks run once. Only exact strs and exact tuples of exact strs (immutable:
 * their verdict cannot change), and each slot holds its object, so its
 * address cannot come back as another one's. */
#define VALID_SLOTS 64 /* a power of two */
static PyObject *valid_status, *valid_pairs[VALID_SLOTS];

static PyObject **pair_slot(PyObject *t) {
    return &valid_pairs[((uintptr_t)t >> 4) & (VALID_SLOTS - 1)];
}

static void remember_pair(PyObject *t) {
    if (PyTuple_CheckExact(t) && PyUnicode_CheckExact(PyTuple_GET_ITEM(t, 0)) &&
        PyUnicode_CheckExact(PyTuple_GET_ITEM(t, 1))) {
        Py_INCREF(t);
        Py_XSETREF(*pair_slot(t), t);
    }
}

/* Each header of the tuple: a (str, str) pair, a token name, a value
 * without control characters, not hop-by-hop. */
static int validate_headers(PyObject *headers) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(headers); i++) {
        PyObject *t = PyTuple_GET_ITEM(headers, i);
        if (*pair_slot(t) == t)
            continue; /* checked before, and unchangeable */
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) {
            PyErr_Format(PyExc_TypeError, "WSGI header %R is not a (name, value) tuple", t);
            return -1;
        }
        Py_ssize_t nl, vl;
        PyObject *hn, *hv;
        const char *n = latin1_of(PyTuple_GET_ITEM(t, 0), &nl, &hn);
        if (!n)
            return -1;
        const char *v = latin1_of(PyTuple_GET_ITEM(t, 1), &vl, &hv);
        if (!v) {
            Py_XDECREF(hn);
            return -1;
        }
        int good = nl > 0;
        for (Py_ssize_t k = 0; good && k < nl; k++)
            good = http_is((unsigned char)n[k], HTTP_C_TCHAR);
        for (Py_ssize_t k = 0; good && k < vl; k++)
            good = http_is((unsigned char)v[k], HTTP_C_VALUE);
        int hop = good && is_hop_by_hop(n, (size_t)nl);
        Py_XDECREF(hn);
        Py_XDECREF(hv);
        if (!good) {
            PyErr_Format(PyExc_ValueError,
                         "invalid WSGI header %R: names are tokens, values have no control "
                         "characters (CR, LF, NUL)",
                         t);
            return -1;
        }
        if (hop) {
            PyErr_Format(PyExc_ValueError,
                         "WSGI header %R is hop-by-hop: the server owns it (PEP 3333)", t);
            return -1;
        }
        remember_pair(t);
    }
    return 0;
}

/* Checks what start_response was given and returns a private tuple of its
 * headers (a new reference), or NULL with a Python error. The response is
 * built from that copy only: the app may change its own list afterwards, and
 * a late (name,) or a late Upgrade must neither crash nor reach the wire. */
PyObject *validated_headers(PyObject *status, PyObject *headers) {
    if (status != valid_status) {
        if (validate_status(status) < 0)
            return NULL;
        if (PyUnicode_CheckExact(status)) {
            Py_INCREF(status);
            Py_XSETREF(valid_status, status);
        }
    }
    if (!PyList_Check(headers)) {
        PyErr_Format(PyExc_TypeError, "WSGI headers must be a list, not %.100s",
                     Py_TYPE(headers)->tp_name);
        return NULL;
    }
    PyObject *copy = PyList_AsTuple(headers);
    if (copy && validate_headers(copy) < 0)
        Py_CLEAR(copy);
    return copy;
}
