/* wsgi.h — the WSGI side of the binding: environ, wsgi.input,
 * start_response and the call itself (wsgi.c, wsgi_input.c, environ.c). */
#ifndef SPINDLE_PY_WSGI_H
#define SPINDLE_PY_WSGI_H

#include "binding.h"

PyObject *input_new(pyjob *j);
void input_detach(PyObject *input);
/* Drops the caller's reference (NULL: nothing), keeping an input nothing
 * else holds for the next request. */
void input_release(PyObject *input);
int input_init_type(void);
int start_response_init_type(void);

#endif
