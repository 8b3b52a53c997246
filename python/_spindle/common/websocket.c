/* websocket.c — spindle.websocket(environ): a WSGI app accepts a WebSocket
 * handshake and talks over it. The protocol is the C layer's (sp_ws_*: framing,
 * UTF-8, fragments, pings, sizes); every sp_ws call yields, so it runs on a
 * request's coroutine as a hub op while the greenlet waits. Receiving and
 * closing run on the owner's coroutine; a send runs on the sender's own (one
 * started for it when the sender is a spawned greenlet). */
#include "common/binding.h"

#include <structmember.h>

#include <errno.h>
#include <string.h>

typedef struct {
    PyObject_HEAD pyjob *j; /* the owner's job; NULL once its app returned */
    sp_ws *ws;              /* NULL once the owner is done: sends get EPIPE */
    PyObject *subprotocol;  /* str or None */
    int closed;             /* receive returns None from now on */
    int close_code;         /* kept when ws goes */
} ws_obj;

static PyTypeObject ws_type;
static PyObject *ws_error; /* spindle.WebSocketError */

/* ---- the coroutine side ------------------------------------------------ */

/* OP_WS_*, on the coroutine: runs the op, returns its result. */
static ssize_t ws_do_op(pyjob *j) {
    ws_obj *o = j->ws_target;
    if (j->op == OP_WS_UPGRADE) {
        sp_ws_options wo = {.max_message = j->h->ws_max_message};
        sp_ws *ws = sp_ws_upgrade(j->req, j->res, &wo);
        if (!ws)
            return -errno;
        o->ws = ws;
        return 0;
    }
    if (!o->ws)
        return -EPIPE; /* queued before its owner finished: never touch it */
    switch (j->op) {
    case OP_WS_RECV:
        return sp_ws_recv(o->ws, &j->ws_msg, j->ws_timeout);
    case OP_WS_SEND:
        return sp_ws_send_timeout(o->ws, j->ws_opcode, j->data, j->len, j->ws_timeout);
    default:
        return sp_ws_close(o->ws, (uint16_t)j->len, j->ws_reason);
    }
}

/* ---- helpers ----------------------------------------------------------- */

static void mark_closed(ws_obj *o) {
    o->closed = 1;
    if (o->ws)
        o->close_code = sp_ws_close_code(o->ws);
}

/* The owner's job when the current greenlet is the owner, else NULL with
 * an error naming what: receive and close belong to the accepting view. */
static pyjob *owner_job(ws_obj *o, const char *what) {
    pyjob *j = hub_current_job();
    if (o->j && j == o->j)
        return j;
    PyErr_Format(PyExc_RuntimeError,
                 o->j ? "WebSocket.%s() works only in the request that accepted the WebSocket"
                      : "WebSocket.%s(): the request that accepted the WebSocket has ended",
                 what);
    return NULL;
}

static PyObject *raise_errno(ssize_t r, const char *what) {
    if (PyErr_Occurred())
        return NULL;
    if (r == -EPIPE || r == -ECONNRESET)
        PyErr_Format(PyExc_BrokenPipeError, "WebSocket %s: the WebSocket is closed", what);
    else if (r == -ETIMEDOUT)
        PyErr_Format(PyExc_TimeoutError,
                     "WebSocket %s: the client did not read for --send-timeout; the connection "
                     "was dropped",
                     what);
    else
        PyErr_Format(PyExc_OSError, "WebSocket %s failed: %s", what, strerror((int)-r));
    return NULL;
}

/* A send from a greenlet that serves no request (spindle.spawn, every):
 * it has no coroutine of its own, so one is started for the send. Heap
 * memory: the greenlet's stack is copied away while it waits. */
typedef struct side_send {
    hub_wake wake;
    ws_obj *o; /* kept alive by the waiting caller */
    int opcode;
    const char *p;
    size_t n;
    int64_t timeout_ms;
} side_send;

static void side_send_main(void *arg) {
    side_send *s = arg;
    /* o->ws is cleared on the main stack before its owner's handler returns,
     * and the C layer fails sends still waiting then: checked at the start. */
    int r = s->o->ws ? sp_ws_send_timeout(s->o->ws, s->opcode, s->p, s->n, s->timeout_ms) : -EPIPE;
    s->wake.result = r;
    hub_queue(the_hub, &s->wake);
}

static ssize_t send_on_new_coroutine(ws_obj *o, int opcode, const char *p, size_t n,
                                     int64_t timeout_ms) {
    side_send *s = PyMem_Calloc(1, sizeof *s);
    if (!s) {
        PyErr_NoMemory();
        return -ENOMEM;
    }
    *s = (side_send){.o = o, .opcode = opcode, .p = p, .n = n, .timeout_ms = timeout_ms};
    s->wake.greenlet = hub_current();
    int rc = loop_spawn(the_hub->l, side_send_main, s);
    long r = rc < 0 ? rc : hub_wait(&s->wake);
    Py_XDECREF(s->wake.greenlet);
    PyMem_Free(s);
    if (r < 0 && PyErr_Occurred())
        return -ECANCELED;
    return r;
}

/* One frame out: on the current request's coroutine, or a coroutine of its
 * own for a greenlet outside any request. */
static PyObject *send_frame(ws_obj *o, int opcode, const char *p, size_t n, const char *what,
                            int64_t timeout_ms) {
    pyjob *j = hub_current_job();
    if (!j && !hub_in_greenlet(the_hub)) {
        PyErr_Format(PyExc_RuntimeError,
                     "WebSocket.%s() works in a worker's greenlets (a request, spindle.spawn, "
                     "spindle.every), not on another thread or at import",
                     what);
        return NULL;
    }
    if (!o->ws || o->closed) /* closed: the C layer would say EPIPE too */
        return raise_errno(-EPIPE, what);
    ssize_t r;
    if (j) {
        j->ws_target = o;
        j->ws_opcode = opcode;
        j->data = p;
        j->len = n;
        j->ws_timeout = timeout_ms;
        r = hub_op(j, OP_WS_SEND);
    } else {
        r = send_on_new_coroutine(o, opcode, p, n, timeout_ms);
    }
    if (r < 0)
        return raise_errno(r, what);
    Py_RETURN_NONE;
}

static PyObject *ws_send(ws_obj *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"data", "timeout", NULL};
    PyObject *data, *tobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:send", kwlist, &data, &tobj))
        return NULL;
    int64_t ms = -1; /* the server's --send-timeout */
    if (tobj != Py_None) {
        double secs = PyFloat_AsDouble(tobj);
        if (secs == -1 && PyErr_Occurred())
            return NULL;
        ms = secs <= 0 ? 0 : (int64_t)(secs * 1000.0 + 0.999);
    }
    if (PyUnicode_Check(data)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(data, &n);
        return p ? send_frame(o, SP_WS_TEXT, p, (size_t)n, "send", ms) : NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "WebSocket.send() takes str (text) or bytes (binary), not "
                     "%.100s",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    PyObject *r = send_frame(o, SP_WS_BINARY, b.buf, (size_t)b.len, "send", ms);
    PyBuffer_Release(&b);
    return r;
}

static PyObject *ws_ping(ws_obj *o, PyObject *args) {
    Py_buffer b = {0};
    if (!PyArg_ParseTuple(args, "|y*:ping", &b))
        return NULL;
    PyObject *r = send_frame(o, SP_WS_PING, b.buf ? b.buf : "", (size_t)b.len, "ping", -1);
    if (b.obj)
        PyBuffer_Release(&b);
    return r;
}

static PyObject *receive_ms(ws_obj *o, int64_t ms);

static PyObject *ws_receive(ws_obj *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"timeout", NULL};
    PyObject *tobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:receive", kwlist, &tobj))
        return NULL;
    int64_t ms = -1;
    if (tobj != Py_None) {
        double secs = PyFloat_AsDouble(tobj);
        if (secs == -1 && PyErr_Occurred())
            return NULL;
        ms = secs <= 0 ? 0 : (int64_t)(secs * 1000.0 + 0.999);
    }
    return receive_ms(o, ms);
}

static PyObject *receive_ms(ws_obj *o, int64_t ms) {
    pyjob *j = owner_job(o, "receive");
    if (!j)
        return NULL;
    if (o->closed || !o->ws)
        Py_RETURN_NONE;
    j->ws_target = o;
    j->ws_timeout = ms;
    ssize_t r = hub_op(j, OP_WS_RECV);
    if (r == -ECANCELED && PyErr_Occurred())
        return NULL;
    if (r == -ETIMEDOUT) {
        PyErr_SetString(PyExc_TimeoutError, "WebSocket.receive(): no message within the timeout");
        return NULL;
    }
    if (r < 0) {
        mark_closed(o);
        Py_RETURN_NONE;
    }
    /* Copied now, on the main stack: the data lives in the sp_ws until the
     * next receive. */
    const sp_ws_msg *m = &j->ws_msg;
    if (m->opcode == SP_WS_TEXT)
        return PyUnicode_DecodeUTF8(m->data, (Py_ssize_t)m->len, "strict");
    return PyBytes_FromStringAndSize(m->data, (Py_ssize_t)m->len);
}

static int do_close(ws_obj *o, pyjob *j, int code, const char *reason) {
    if (o->closed || !o->ws)
        return 0;
    j->ws_target = o;
    j->len = (size_t)code;
    j->ws_reason = reason;
    ssize_t r = hub_op(j, OP_WS_CLOSE);
    mark_closed(o);
    return r == -EINVAL ? -1 : 0;
}

static PyObject *ws_close(ws_obj *o, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"code", "reason", NULL};
    int code = 1000;
    const char *reason = "";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|is:close", kwlist, &code, &reason))
        return NULL;
    if (code < 1000 || code > 4999 || strlen(reason) > 123) {
        PyErr_Format(PyExc_ValueError,
                     "WebSocket.close(code=%d): want a code 1000-4999 and a reason of at most 123 "
                     "UTF-8 bytes",
                     code);
        return NULL;
    }
    pyjob *j = owner_job(o, "close");
    if (!j)
        return NULL;
    if (do_close(o, j, code, reason) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "WebSocket.close(code=%d): a reserved code (1004-1006, "
                     "1015 are never sent)",
                     code);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *ws_iternext(ws_obj *o) {
    PyObject *m = receive_ms(o, -1);
    if (m == Py_None) {
        Py_DECREF(m);
        return NULL; /* StopIteration */
    }
    return m;
}

static PyObject *ws_get_close_code(ws_obj *o, void *unused) {
    if (o->closed || !o->ws)
        return o->close_code ? PyLong_FromLong(o->close_code) : Py_NewRef(Py_None);
    int c = sp_ws_close_code(o->ws);
    return c ? PyLong_FromLong(c) : Py_NewRef(Py_None);
}

int ws_finish(pyjob *j, int code) {
    ws_obj *o = (ws_obj *)j->wsobj;
    if (!o)
        return 0;
    PyObject *et, *ev, *tb; /* an app's error is logged after this */
    PyErr_Fetch(&et, &ev, &tb);
    if (o->ws && !o->closed && sp_ws_close_code(o->ws) == 0)
        do_close(o, j, code, NULL);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    mark_closed(o);
    o->ws = NULL; /* freed by the server once the coroutine returns */
    o->j = NULL;
    Py_CLEAR(j->wsobj);
    return 1;
}

static void ws_dealloc(ws_obj *o) {
    Py_XDECREF(o->subprotocol);
    PyObject_Free(o);
}

static PyMethodDef ws_methods[] = {
    {"receive", (PyCFunction)(void (*)(void))ws_receive, METH_VARARGS | METH_KEYWORDS,
     "receive(timeout=None) -> str | bytes | None: the next message (str for text, bytes for "
     "binary), None once closed; TimeoutError after timeout seconds"},
    {"send", (PyCFunction)(void (*)(void))ws_send, METH_VARARGS | METH_KEYWORDS,
     "send(data, timeout=None): str as a text message, bytes as binary; waits while the "
     "socket is full, up to timeout seconds (None: --send-timeout; 0: only what the socket "
     "takes at once, for a broadcast that must not wait on a slow reader). A send that runs "
     "out of time drops the connection (TimeoutError; the owner's receive then returns "
     "None); BrokenPipeError once closed. Works from any greenlet of the worker: a request, "
     "spindle.spawn, spindle.every"},
    {"ping", (PyCFunction)ws_ping, METH_VARARGS, "ping(data=b''): sends a ping (<= 125 bytes)"},
    {"close", (PyCFunction)(void (*)(void))ws_close, METH_VARARGS | METH_KEYWORDS,
     "close(code=1000, reason=''): the closing handshake (waits for the client's close)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef ws_members[] = {
    {"subprotocol", T_OBJECT, offsetof(ws_obj, subprotocol), READONLY,
     "the subprotocol agreed on, or None"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef ws_getset[] = {
    {"close_code", (getter)ws_get_close_code, NULL,
     "the code that ended the conversation (1006: no close frame), None while open", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ws_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle.WebSocket",
    .tp_basicsize = sizeof(ws_obj),
    .tp_dealloc = (destructor)ws_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A WebSocket accepted by spindle.websocket(environ); iterate for its messages.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)ws_iternext,
    .tp_methods = ws_methods,
    .tp_members = ws_members,
    .tp_getset = ws_getset,
};

/* ---- spindle.websocket(environ, subprotocols=()) ----------------------- */

/* The first of ours (in our order) that the client offered, or None. */
static PyObject *pick_subprotocol(PyObject *environ, PyObject *ours) {
    PyObject *offer = PyMapping_GetItemString(environ, "HTTP_SEC_WEBSOCKET_PROTOCOL");
    if (!offer) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *picked = NULL,
             *parts = PyUnicode_Check(offer) ? PyObject_CallMethod(offer, "split", "s", ",") : NULL;
    PyObject *iter = parts ? PyObject_GetIter(ours) : NULL, *want;
    while (iter && !picked && (want = PyIter_Next(iter))) {
        for (Py_ssize_t i = 0; !picked && i < PyList_GET_SIZE(parts); i++) {
            PyObject *p = PyObject_CallMethod(PyList_GET_ITEM(parts, i), "strip", NULL);
            if (p && PyObject_RichCompareBool(p, want, Py_EQ) == 1)
                picked = Py_NewRef(want);
            Py_XDECREF(p);
        }
        Py_DECREF(want);
    }
    Py_XDECREF(iter);
    Py_XDECREF(parts);
    Py_DECREF(offer);
    PyErr_Clear();
    return picked ? picked : Py_NewRef(Py_None);
}

PyObject *py_websocket(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"environ", "subprotocols", NULL};
    PyObject *environ, *subs = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:websocket", kwlist, &environ, &subs))
        return NULL;
    pyjob *j = hub_current_job();
    if (!j) {
        PyErr_SetString(ws_error, "spindle.websocket() works inside a request served by spindle");
        return NULL;
    }
    if (j->wsobj)
        return Py_NewRef(j->wsobj);
    if (j->sr_called || res_get_head_sent(j->res)) {
        PyErr_SetString(ws_error, "spindle.websocket() must be called before start_response() "
                                  "and write(): the 101 answer replaces the response");
        return NULL;
    }
    PyObject *sub = subs ? pick_subprotocol(environ, subs) : Py_NewRef(Py_None);
    ws_obj *o = PyObject_New(ws_obj, &ws_type);
    if (!o) {
        Py_DECREF(sub);
        return NULL;
    }
    o->j = j;
    o->ws = NULL;
    o->subprotocol = sub;
    o->closed = 0;
    o->close_code = 0;
    const char *sp = sub != Py_None ? PyUnicode_AsUTF8(sub) : NULL;
    if (sp && sp_res_header(j->res, "Sec-WebSocket-Protocol", sp) < 0)
        PyErr_Clear();
    j->ws_target = o;
    ssize_t r = hub_op(j, OP_WS_UPGRADE);
    if (r < 0) {
        res_clear_head(j->res);
        Py_DECREF(o);
        if (PyErr_Occurred())
            return NULL;
        if (r == -EINVAL)
            PyErr_SetString(ws_error,
                            "not a WebSocket handshake: spindle.websocket() needs a GET with "
                            "Upgrade: websocket, Connection: Upgrade, Sec-WebSocket-Version: 13 "
                            "and a Sec-WebSocket-Key (answer plain HTTP requests otherwise)");
        else
            raise_errno(r, "handshake");
        return NULL;
    }
    j->wsobj = Py_NewRef((PyObject *)o);
    return (PyObject *)o;
}

int websocket_init(PyObject *module) {
    for (int op = OP_WS_UPGRADE; op <= OP_WS_CLOSE; op++)
        hub_job_fns.op[op] = ws_do_op;
    if (PyType_Ready(&ws_type) < 0)
        return -1;
    ws_error = PyErr_NewExceptionWithDoc(
        "spindle.WebSocketError",
        "spindle.websocket() was called outside a WebSocket handshake, or too late", NULL, NULL);
    if (!ws_error || PyModule_AddObjectRef(module, "WebSocketError", ws_error) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "WebSocket", (PyObject *)&ws_type);
}
