/* asgi_send.h — the checks and the head of ASGI send() messages
 * (asgi_send.c): each refused message raises in the app's send() and is
 * logged in one line saying what was wrong. */
#ifndef SPINDLE_PY_ASGI_SEND_H
#define SPINDLE_PY_ASGI_SEND_H

#include "asgi/asgi.h"

enum { ASEND_START, ASEND_BODY, ASEND_PATHSEND, ASEND_HINT, ASEND_TRAILERS, ASEND_ZEROCOPY };

int asend_init(PyObject *module);
/* spindle.ClientDisconnected (an OSError): what send() raises once the client
 * has gone (ASGI 2.4), so that a streaming app stops producing. */
PyObject *asend_gone(void);
/* The kind of an http.response.* message, or -1 with an error (not a dict,
 * an unknown type). */
int asend_kind(PyObject *msg);
/* http.response.start: checked and put in the response head. 0 or -1. */
int asend_start(acycle *c, PyObject *msg);
/* http.response.body: its body (borrowed bytes) and more_body. 0 or -1. */
int asend_body(PyObject *msg, PyObject **body, int *more);
/* http.response.pathsend: opens the file and hands it to the coroutine. */
int asend_pathsend(acycle *c, PyObject *msg);
/* The message's type name, for errors. */
const char *asend_kind_name(int kind);
/* A body before the start or after the end: raises, logged (NULL). */
PyObject *asend_misplaced(acycle *c, int kind);
/* Raises RuntimeError with the message, logged too. NULL. */
PyObject *asend_refuse(const char *fmt, ...);
/* websocket.* messages (asgi_ws.c). */
PyObject *asend_ws(acycle *c, PyObject *msg);

#endif
