/* asgi_http.c — one ASGI request cycle: the coroutine side (asgi_handler:
 * queue the request, park, run the ops the main stack asks for) and the
 * Python side (receive and send, C callables whose awaitables are done at
 * once when they can be: a buffered body, a final write handed over; else
 * an asyncio future the coroutine's completion resolves). Messages are
 * checked (asgi_send.c); an app that fails gets a 500 or a cut connection. */
#include "asgi/asgi.h"
#include "asgi/asgi_send.h"
#include "common/bus_py.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536 /* one receive's body bytes at most: the read-ahead bound */

/* ---- an awaitable that is already done ---------------------------------- */

/* `await` on it gives its value at once: am_send returns PYGEN_RETURN, so
 * the interpreter takes the value without a StopIteration being made (the
 * tp_iternext path, for other callers, raises one). None results share
 * one object. */
typedef struct {
    PyObject_HEAD PyObject *value;
} ready_obj;

static PyTypeObject ready_type;
static ready_obj ready_none;

PyObject *asgi_ready(PyObject *v) {
    if (!v)
        return NULL;
    if (v == Py_None) {
        Py_DECREF(v);
        return Py_NewRef((PyObject *)&ready_none);
    }
    ready_obj *r = PyObject_New(ready_obj, &ready_type);
    if (!r) {
        Py_DECREF(v);
        return NULL;
    }
    r->value = v;
    return (PyObject *)r;
}

static PyObject *ready_await(PyObject *self) {
    return Py_NewRef(self);
}

static PySendResult ready_am_send(ready_obj *r, PyObject *arg, PyObject **result) {
    *result = Py_NewRef(r->value ? r->value : Py_None);
    return PYGEN_RETURN;
}

static PyObject *ready_next(ready_obj *r) {
    PyObject *v = r->value ? r->value : Py_None;
    if (v == Py_None)
        return NULL;                                           /* exhausted: StopIteration(None) */
    PyObject *e = PyObject_CallOneArg(PyExc_StopIteration, v); /* a tuple stays whole */
    if (e) {
        PyErr_SetObject(PyExc_StopIteration, e);
        Py_DECREF(e);
    }
    return NULL;
}

static PyObject *ready_send(ready_obj *r, PyObject *arg) {
    return ready_next(r);
}

static void ready_dealloc(ready_obj *r) {
    Py_XDECREF(r->value);
    PyObject_Free(r);
}

static PyAsyncMethods ready_async = {.am_await = ready_await, .am_send = (sendfunc)ready_am_send};
static PyMethodDef ready_methods[] = {{"send", (PyCFunction)ready_send, METH_O, NULL},
                                      {NULL, NULL, 0, NULL}};

static PyTypeObject ready_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle._Ready",
    .tp_basicsize = sizeof(ready_obj),
    .tp_dealloc = (destructor)ready_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_async = &ready_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)ready_next,
    .tp_methods = ready_methods,
};

/* ---- the coroutine side --------------------------------------------------- */

static PyTypeObject cycle_type;

/* Runs the asked ops; 1 when the handler is finished (*rc its return). */
static int run_ops(acycle *c, int *rc) {
    sp_res *res = c->res;
    if (c->op & A_ABORT) {
        /* -ECONNRESET tells the server the client left (a 499, not a
         * failure: a long poll's, say); -EIO that the app broke a response
         * it had started. */
        *rc = (c->op & A_GONE) || c->disconnected ? -ECONNRESET : -EIO;
        return 1;
    }
    if (c->op & A_ERROR500) {
        c->op = 0;
        if (!res_get_head_sent(res)) {
            res_clear_head(res);
            *rc = sp_res_send(res, 500, "text/plain", "500 Internal Server Error\n", 26);
        } else {
            *rc = -EIO;
        }
        return 1;
    }
    if (c->op & (A_HINTS | A_TRAILERS)) {
        int last = (c->op & A_TRAILERS) != 0;
        int r = last ? sp_res_finish_trailers(res, c->xarg, c->xn)
                     : sp_res_early_hints(res, c->xarg, c->xn);
        c->op &= ~(A_HINTS | A_TRAILERS);
        c->wresult = r < 0 ? r : 0;
        asgi_queue(c, EV_WRITTEN);
        if (r < 0 || last) {
            *rc = r < 0 ? r : 0;
            return 1;
        }
    }
    if (c->op & (A_WRITE | A_SENDFILE)) {
        ssize_t r = 0;
        /* A file with more to come: the head first, so that its length is
         * not taken for the whole body's (chunked, or HTTP/2 DATA). */
        if ((c->op & A_SENDFILE) && !c->wfinal && !res_get_head_sent(res))
            r = sp_res_write(res, "", 0);
        if ((c->op & A_SENDFILE) && r >= 0)
            r = sp_res_sendfile(res, c->fd, c->off, c->count);
        else if (!(c->op & A_SENDFILE))
            r = c->wlen || !res_get_head_sent(res) ? sp_res_write(res, c->wdata, c->wlen) : 0;
        if (r >= 0 && c->wfinal)
            r = sp_res_finish(res);
        c->op &= ~(A_WRITE | A_SENDFILE);
        c->wresult = r;
        asgi_queue(c, EV_WRITTEN);
        if (r < 0 || c->wfinal) {
            *rc = r < 0 ? (int)r : 0;
            return 1;
        }
    }
    if (c->op & A_READ) {
        c->op &= ~A_READ;
        c->rresult = sp_read(c->req, PyBytes_AS_STRING(c->rbytes), c->rlen);
        asgi_queue(c, EV_READ);
        if (c->rresult < 0 && c->rresult != -ECONNRESET) {
            *rc = (int)c->rresult; /* the core answers 400/408/413 */
            return 1;
        }
    }
    if (c->op & (A_WS_ACCEPT | A_WS_RECV | A_WS_SEND | A_WS_CLOSE)) {
        ssize_t r = asgi_ws_op(c);
        if (r == 1) {
            *rc = 0;
            return 1;
        }
    }
    return 0;
}

int asgi_handler(sp_req *req, sp_res *res, void *ud) {
    ahub *a = &the_ahub;
    loop *l = a->h->l;
    anew n = {.req = req, .res = res, .t = loop_task(l)};
    if (a->new_tail)
        a->new_tail->next = &n;
    else
        a->new_head = &n;
    a->new_tail = &n;
    loop_watch *hw = loop_task_hup_watch(n.t);
    while (!n.cycle) {
        int r = loop_park(l, LOOP_NO_DEADLINE, n.hup ? NULL : hw);
        if (r == -ECONNRESET)
            n.hup = 1;
        else if (r < 0 && !n.cycle)
            return r; /* the cycle could not be made (dispatch_new said so) */
    }
    acycle *c = n.cycle;
    c->parked = 0;
    int rc = 0;
    for (;;) {
        if (c->op && run_ops(c, &rc))
            break;
        if (c->op)
            continue;
        c->parked = 1;
        int r = loop_park(l, LOOP_NO_DEADLINE, c->disconnected ? NULL : hw);
        c->parked = 0;
        if (r == -ECONNRESET && !c->disconnected) {
            c->disconnected = 1;
            asgi_queue(c, EV_HUP);
        }
    }
    if (c->ws && c->ws->ws) /* the C layer frees it when we return */
        c->ws->close_code = sp_ws_close_code(c->ws->ws), c->ws->ws = NULL;
    c->req = NULL;
    c->res = NULL;
    c->t = NULL;
    c->gone = 1;
    asgi_queue(c, EV_END);
    return rc;
}

/* ---- the main stack: completions ----------------------------------------- */

static PyObject *s_type, *s_body, *s_more_body, *s_http_request, *s_http_disconnect;

PyObject *asgi_disconnect_msg(void) {
    PyObject *d = PyDict_New();
    if (d && PyDict_SetItem(d, s_type, s_http_disconnect) < 0)
        Py_CLEAR(d);
    return d;
}

static PyObject *body_msg(PyObject *body, int more) {
    PyObject *d = _PyDict_NewPresized(3);
    if (d &&
        (PyDict_SetItem(d, s_type, s_http_request) < 0 || PyDict_SetItem(d, s_body, body) < 0 ||
         PyDict_SetItem(d, s_more_body, more ? Py_True : Py_False) < 0))
        Py_CLEAR(d);
    return d;
}

/* The message for a read of n bytes into c->rbytes (consumed). */
static PyObject *read_msg(acycle *c, ssize_t n) {
    PyObject *b = c->rbytes;
    c->rbytes = NULL;
    if (n < 0) {
        Py_XDECREF(b);
        c->body_done = 1;
        c->disconnected = 1;
        return asgi_disconnect_msg();
    }
    if (_PyBytes_Resize(&b, n) < 0)
        return NULL;
    int more = c->req && !req_get_body_done(c->req) && n > 0;
    if (!more)
        c->body_done = 1;
    PyObject *m = body_msg(b, more);
    Py_DECREF(b);
    return m;
}

static void give_message(acycle *c, PyObject *m) {
    if (!c->recv_fut) {
        Py_XSETREF(c->stash, m);
        return;
    }
    asgi_resolve(&c->recv_fut, m);
}

void asgi_events(acycle *c, uint32_t ev) {
    if (ev & EV_WS)
        asgi_ws_event(c);
    if (ev & EV_WRITTEN) {
        Py_CLEAR(c->wkeep);
        PyMem_Free(c->xarg); /* an A_HINTS / A_TRAILERS array */
        c->xarg = NULL;
        if (c->fd >= 0) {
            close(c->fd);
            c->fd = -1;
        }
        if (c->wresult < 0)
            c->disconnected = 1; /* later sends return at once, as ASGI asks */
        asgi_resolve(&c->send_fut, Py_NewRef(Py_None));
    }
    if (ev & EV_READ)
        give_message(c, read_msg(c, c->rresult));
    if ((ev & EV_HUP) && c->is_ws)
        asgi_ws_dead(c);
    if (ev & EV_HUP) /* a recv waiting for nobody would hold its subscription */
        bus_hangup_list((bus_sub_obj **)&c->bus_subs);
    if ((ev & (EV_HUP | EV_END)) && c->recv_fut && !c->is_ws) {
        if (c->rbytes) /* a read cut short */
            give_message(c, read_msg(c, -ECONNRESET));
        else
            asgi_resolve(&c->recv_fut, asgi_disconnect_msg());
    }
    if (ev & EV_END) {
        bus_release_list((bus_sub_obj **)&c->bus_subs); /* nothing outlives its request */
        Py_CLEAR(c->rbytes);
        asgi_resolve(&c->send_fut, Py_NewRef(Py_None));
        if (c->is_ws) {
            asgi_ws_event(c);
            asgi_ws_unlist(c);
        }
        Py_DECREF(c); /* the coroutine's reference */
    }
}

/* ---- receive ---------------------------------------------------------------- */

/* A future for c's next message; RuntimeError if one is awaited already. */
static PyObject *wait_message(acycle *c) {
    if (c->recv_fut) {
        /* A waiter cancelled meanwhile (Starlette's listen_for_disconnect
         * when its stream ends) leaves its place to this one. */
        PyObject *done = PyObject_CallMethod(c->recv_fut, "done", NULL);
        int was = done == Py_True;
        Py_XDECREF(done);
        PyErr_Clear();
        if (was)
            Py_CLEAR(c->recv_fut);
    }
    if (c->recv_fut) {
        PyErr_SetString(PyExc_RuntimeError,
                        "ASGI receive() called while another receive() is still waiting");
        return NULL;
    }
    c->recv_fut = asgi_future();
    return Py_XNewRef(c->recv_fut);
}

static PyObject *cycle_receive(acycle *c, PyObject *unused) {
    if (c->stash) {
        PyObject *m = c->stash;
        c->stash = NULL;
        return asgi_ready(m);
    }
    if (c->body_done || c->gone || c->disconnected) {
        if (c->gone || c->disconnected || c->finished)
            return asgi_ready(asgi_disconnect_msg());
        return wait_message(c); /* until the response is out or the client leaves */
    }
    if (c->recv_fut || c->rbytes) /* a read is under way */
        return wait_message(c);
    sp_req *r = c->req;
    size_t want = READ_CHUNK;
    if (req_get_head(r)->framing != HTTP_BODY_CHUNKED && req_get_body_left(r) < want)
        want = (size_t)req_get_body_left(r);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)want);
    if (!b)
        return NULL;
    ssize_t n = req_read_buffered(r, PyBytes_AS_STRING(b), want);
    if (n == -EAGAIN) {
        c->rbytes = b;
        c->rlen = want;
        PyObject *f = wait_message(c);
        if (f) {
            c->op |= A_READ;
            asgi_wake(c);
        }
        return f;
    }
    c->rbytes = b;
    return asgi_ready(read_msg(c, n));
}

/* ---- send --------------------------------------------------------------- */

/* Hands the coroutine a write; a final one is not waited for (the bytes
 * stay alive until it is done), a streamed chunk is (backpressure). */
static PyObject *submit_write(acycle *c, PyObject *body, int final) {
    if (asgi_send_busy(c)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "ASGI send() called while an earlier send() is still in progress "
                        "(await each send)");
        return NULL;
    }
    c->wkeep = Py_NewRef(body);
    c->wdata = PyBytes_AS_STRING(body);
    c->wlen = (size_t)PyBytes_GET_SIZE(body);
    c->wfinal = final;
    c->op |= A_WRITE;
    asgi_wake(c);
    if (final)
        return asgi_ready(Py_NewRef(Py_None));
    c->send_fut = asgi_future();
    return Py_XNewRef(c->send_fut);
}

PyObject *asgi_http_send(acycle *c, PyObject *msg) {
    int kind = asend_kind(msg);
    if (kind < 0)
        return NULL;
    if (kind == ASEND_START) {
        if (asend_start(c, msg) < 0)
            return NULL;
        return asgi_ready(Py_NewRef(Py_None));
    }
    if (kind == ASEND_HINT)
        return asend_early_hint(c, msg);
    if (kind == ASEND_TRAILERS)
        return asend_trailers(c, msg);
    if (!c->started || c->finished || c->tr_wait)
        return asend_misplaced(c, kind);
    if (kind == ASEND_ZEROCOPY)
        return asend_zerocopy(c, msg);
    if (kind == ASEND_PATHSEND) {
        if (asend_pathsend(c, msg) < 0)
            return NULL;
        return asgi_ready(Py_NewRef(Py_None));
    }
    PyObject *body;
    int more;
    if (asend_body(msg, &body, &more) < 0)
        return NULL;
    if (!more && c->tr_want)
        c->tr_wait = 1; /* http.response.trailers ends the response */
    else if (!more)
        c->finished = 1;
    if (c->gone || c->disconnected) { /* the client left: nothing to send */
        end_cut(c);
        return asend_gone();
    }
    if (!more && !(c->tr_want && c->tr_served) && !res_get_head_sent(c->res) &&
        res_get_declared(c->res) < 0)
        sp_res_length(c->res, (uint64_t)PyBytes_GET_SIZE(body));
    if (c->tr_wait && !more)
        return submit_write(c, body, 0); /* waited for: the trailers follow */
    /* An empty chunk sends nothing, but the first one sends the head (an
     * event stream's client is waiting for it). */
    if (more && PyBytes_GET_SIZE(body) == 0 && res_get_head_sent(c->res))
        return asgi_ready(Py_NewRef(Py_None));
    return submit_write(c, body, !more);
}

/* ---- the end of the application call -------------------------------------- */

void end_cut(acycle *c) {
    if (c->gone)
        return;
    c->op |= A_ABORT | A_GONE; /* the coroutine ends; the connection closes */
    asgi_wake(c);
}

void asgi_log_failure(acycle *c, const char *what) {
    const http_request *h = c->req ? req_get_head(c->req) : NULL;
    if (h)
        log_msg(LOG_ERROR, "the ASGI application %s serving '%.*s %.*s'", what, (int)h->method_len,
                h->method, (int)(h->target_len > 200 ? 200 : h->target_len), h->target);
    else
        log_msg(LOG_ERROR, "the ASGI application %s", what);
}

void asgi_app_over(acycle *c) {
    if (!c->app_done) {
        c->app_done = 1;
        the_ahub.busy--;
    }
}

/* _failed(exc): the app raised. Logged with its traceback; a 500 if nothing
 * was started, the connection cut if the response was not finished, and a
 * finished response stands. */
static PyObject *cycle_failed(acycle *c, PyObject *exc) {
    asgi_app_over(c);
    if (!c->gone && !c->disconnected && c->finished) {
        /* The response is whole (its last body went with more_body False):
         * it stands, as in uvicorn, and the error is the log's. Starlette's
         * error middleware sends its 500 page, then re-raises. */
        asgi_log_failure(c, "raised after its response was complete (the response stands)");
    } else if (!c->gone && !c->disconnected) {
        asgi_log_failure(c, c->started
                                ? "failed after starting its response (the connection is cut)"
                                : "failed; answered 500");
        c->op |= c->started ? A_ABORT : A_ERROR500;
        asgi_wake(c);
    } else {
        end_cut(c);
        return Py_NewRef(Py_False); /* the client left: not worth a traceback */
    }
    return Py_NewRef(Py_True);
}

/* _cancelled(): the call was cancelled (the worker stops, or the app
 * cancelled itself): no traceback; a response not finished is cut (a 500
 * if nothing was started), an open WebSocket closes with 1001. */
static PyObject *cycle_cancelled(acycle *c, PyObject *unused) {
    asgi_app_over(c);
    if (!c->gone && !c->finished) {
        c->op |= c->started ? A_ABORT : A_ERROR500;
        asgi_wake(c);
    }
    Py_RETURN_NONE;
}

/* _returned(): the app returned. Without a complete response: a 500, or
 * the connection cut. */
static PyObject *cycle_returned(acycle *c, PyObject *unused) {
    asgi_app_over(c);
    if (!c->gone && c->disconnected && !c->finished) {
        end_cut(c); /* the client left first: nothing to say */
    } else if (!c->gone && !c->finished && c->tr_wait && !asgi_send_busy(c)) {
        c->finished = 1; /* the body is whole; no trailers came: end it without */
        c->xn = 0;
        c->op |= A_TRAILERS;
        asgi_wake(c);
    } else if (!c->gone && !c->finished) {
        asgi_log_failure(c, c->started
                                ? "returned before finishing its response (the connection is cut)"
                                : "returned without sending a response; answered 500");
        c->op |= c->started ? A_ABORT : A_ERROR500;
        asgi_wake(c);
    }
    Py_RETURN_NONE;
}

/* ---- the object ------------------------------------------------------------ */

PyObject *asgi_cycle_new(anew *n) {
    /* A websocket scope's cycle is its own type (asgi_ws_cycle.c): its own
     * receive, send and endings, not branches in the HTTP ones. */
    int ws = asgi_ws_is_upgrade(n->req);
    acycle *c = PyObject_New(acycle, ws ? &asgi_ws_cycle_type : &cycle_type);
    if (!c)
        return NULL;
    memset((char *)c + sizeof(PyObject), 0, sizeof *c - sizeof(PyObject));
    c->req = n->req;
    c->res = n->res;
    c->t = n->t;
    c->fd = -1;
    c->is_ws = (uint8_t)ws;
    return (PyObject *)c;
}

void asgi_cycle_dealloc(acycle *c) {
    Py_XDECREF(c->wkeep);
    Py_XDECREF(c->rbytes);
    Py_XDECREF(c->recv_fut);
    Py_XDECREF(c->send_fut);
    Py_XDECREF(c->stash);
    Py_XDECREF(c->tr_list);
    PyMem_Free(c->xarg);
    if (c->fd >= 0)
        close(c->fd);
    asgi_ws_free(c);
    PyObject_Free(c);
}

static PyMethodDef cycle_methods[] = {
    {"receive", (PyCFunction)cycle_receive, METH_NOARGS, "receive() -> awaitable: the next event"},
    {"send", (PyCFunction)asgi_http_send, METH_O, "send(message) -> awaitable"},
    {"_failed", (PyCFunction)cycle_failed, METH_O, NULL},
    {"_returned", (PyCFunction)cycle_returned, METH_NOARGS, NULL},
    {"_cancelled", (PyCFunction)cycle_cancelled, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject cycle_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle._ASGICycle",
    .tp_basicsize = sizeof(acycle),
    .tp_dealloc = (destructor)asgi_cycle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = cycle_methods,
};

int asgi_types_init(PyObject *module) {
    bus_arecv = bus_sub_arecv; /* a subscription's arecv: the awaitable recv */
    s_type = PyUnicode_InternFromString("type");
    s_body = PyUnicode_InternFromString("body");
    s_more_body = PyUnicode_InternFromString("more_body");
    s_http_request = PyUnicode_InternFromString("http.request");
    s_http_disconnect = PyUnicode_InternFromString("http.disconnect");
    if (!s_type || !s_body || !s_more_body || !s_http_request || !s_http_disconnect)
        return -1;
    if (PyType_Ready(&ready_type) < 0 || PyType_Ready(&cycle_type) < 0 ||
        PyType_Ready(&asgi_ws_cycle_type) < 0)
        return -1;
    /* the shared None result: static, never freed */
    Py_SET_TYPE(&ready_none, &ready_type);
    Py_SET_REFCNT(&ready_none, 1);
    ready_none.value = NULL;
    return asend_init(module);
}
