/* wsgi.h — the WSGI side of the binding: environ, wsgi.input,
 * start_response and the call itself (wsgi.c, wsgi_check.c, wsgi_input.c,
 * environ.c). */
#ifndef SPINDLE_PY_WSGI_H
#define SPINDLE_PY_WSGI_H

#include "common/binding.h"

PyObject *input_new(pyjob *j);
void input_detach(PyObject *input);
/* Drops the caller's reference (NULL: nothing), keeping an input nothing
 * else holds for the next request. */
void input_release(PyObject *input);
int input_init_type(void);
/* environ_reuse: a kept environ's input serves j now. */
void input_reuse(PyObject *input, pyjob *j);
/* The input is detached and held by its caller and one more (the environ). */
int input_reusable(PyObject *input);

/* wsgi_check.c: start_response's checks. A private tuple of the headers (a
 * new reference) once status and headers are valid, else NULL with the
 * Python error saying what is wrong. */
PyObject *validated_headers(PyObject *status, PyObject *headers);
const char *latin1_slow(PyObject *s, Py_ssize_t *len, PyObject **hold);

/* Latin-1 bytes of a str with only code points < 256, NUL-terminated (a
 * bytes object owns them when it is not compact ASCII: *hold). NULL with an
 * error otherwise. */
static inline const char *latin1_of(PyObject *s, Py_ssize_t *len, PyObject **hold) {
    *hold = NULL;
    if (PyUnicode_CheckExact(s) && PyUnicode_IS_COMPACT_ASCII(s)) { /* its own bytes, NUL-ended */
        *len = PyUnicode_GET_LENGTH(s);
        return (const char *)PyUnicode_DATA(s);
    }
    return latin1_slow(s, len, hold);
}

int start_response_init_type(void);

#endif
