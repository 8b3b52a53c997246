/* asgi_ws_cycle.c — the cycle of a websocket scope as its own Python type
 * (spindle._ASGIWebSocket): receive, send and the app's ends for a
 * WebSocket, over asgi_ws.c's state, so the HTTP cycle's methods
 * (asgi_http.c) carry no WebSocket branches. The struct is the same acycle:
 * the coroutine side and the event list treat both alike. */
#include "asgi/asgi.h"
#include "asgi/asgi_send.h"

static PyObject *ws_receive(acycle *c, PyObject *unused) {
    if (c->stash) { /* a message whose waiter was cancelled */
        PyObject *m = c->stash;
        c->stash = NULL;
        return asgi_ready(m);
    }
    return asgi_ws_receive(c);
}

static PyObject *ws_send(acycle *c, PyObject *msg) {
    return asend_ws(c, msg);
}

/* _failed(exc): logged with its traceback; an open WebSocket closes with
 * 1011, a handshake never answered gets a 500. */
static PyObject *ws_failed(acycle *c, PyObject *exc) {
    asgi_app_over(c);
    asgi_ws_app_done(c, 1);
    asgi_log_failure(c, "failed");
    return Py_NewRef(Py_True);
}

/* _returned(): an open WebSocket closes with 1000, an unanswered
 * handshake gets a 403. */
static PyObject *ws_returned(acycle *c, PyObject *unused) {
    asgi_app_over(c);
    asgi_ws_app_done(c, 0);
    Py_RETURN_NONE;
}

/* _cancelled(): an open WebSocket closes with 1001. */
static PyObject *ws_cancelled(acycle *c, PyObject *unused) {
    asgi_app_over(c);
    asgi_ws_app_done(c, 2);
    Py_RETURN_NONE;
}

static PyMethodDef ws_cycle_methods[] = {
    {"receive", (PyCFunction)ws_receive, METH_NOARGS, "receive() -> awaitable: the next event"},
    {"send", (PyCFunction)ws_send, METH_O, "send(message) -> awaitable"},
    {"_failed", (PyCFunction)ws_failed, METH_O, NULL},
    {"_returned", (PyCFunction)ws_returned, METH_NOARGS, NULL},
    {"_cancelled", (PyCFunction)ws_cancelled, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject asgi_ws_cycle_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle._ASGIWebSocket",
    .tp_basicsize = sizeof(acycle),
    .tp_dealloc = (destructor)asgi_cycle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = ws_cycle_methods,
};
