/* wsgi.h — the WSGI room of the binding: environ (+ its cache and header
 * keys), wsgi.input, start_response and the call itself (wsgi.c,
 * wsgi_check.c, wsgi_input.c, environ.c, env_cache.c, header_keys.c). Each
 * request is a hub job (common/): wsgi_init_types registers wsgi_run as the
 * hub's hub_job_fns.run. */
#ifndef SPINDLE_PY_WSGI_H
#define SPINDLE_PY_WSGI_H

#include "common/binding.h"

/* wsgi.c: the types (start_response's, wsgi.input's), and wsgi_run as the
 * hub's hub_job_fns.run. */
int wsgi_init_types(void);
/* environ.c: the constant entries, built once per worker (and dropped). */
int environ_init(hub *h);
void environ_release(void);
PyObject *environ_build(hub *h, pyjob *j, PyObject *input);
/* The last call's environ, kept by environ_keep, when this request has the
 * same base: made this request's (its wsgi.input, spindle.request and
 * REMOTE_PORT; *input gets a new reference), else NULL (build one). */
PyObject *environ_reuse(pyjob *j, PyObject **input);
/* At the call's end, before the coroutine runs again (its head is still
 * in the buffer): takes env (1) if nobody else holds it and its version is
 * still the one taken before the app ran (nothing changed it), else 0 (the
 * caller drops it). */
int environ_keep(pyjob *j, PyObject *env, PyObject *input, PyObject *sess, uint64_t version);
uint64_t environ_version(PyObject *env);
/* env_cache.c: the environ base made from this request's head and peer
 * before (borrowed), or NULL; put keeps base (a dict never changed after). */
PyObject *env_cache_get(const req_info *ri);
void env_cache_put(const req_info *ri, PyObject *base);

/* header_keys.c */
int header_keys_init(void);
/* "HTTP_" + the upper-case name with '-' as '_' (a new reference); NULL
 * and *skip for names that must not reach the app (containing '_'), NULL
 * with an error on failure. */
PyObject *header_key(const char *name, size_t n, int *skip);
/* _header_key_cache() -> {"common": n, "recent": used, "recent_slots": n} */
PyObject *py_header_key_cache(PyObject *self, PyObject *unused);

/* wsgi_input.c */
PyObject *input_new(pyjob *j);
void input_detach(PyObject *input);
/* Drops the caller's reference (NULL: nothing), keeping an input nothing
 * else holds for the next request. */
void input_release(PyObject *input);
int input_init_type(void);
int start_response_init_type(void);
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

#endif
