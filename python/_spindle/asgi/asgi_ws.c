/* asgi_ws.c — the ASGI websocket scope over the C WebSocket layer (sp_ws_*:
 * framing, masking, UTF-8, fragments, pings, limits). The handshake, the
 * receives and the close run on the request's coroutine (the one receiver
 * the C layer allows); each send runs on a short coroutine of its own, so
 * an app may send while a receive waits. Denial (websocket.http.response)
 * and a close before accept (403) answer plain HTTP instead. */
#include "asgi/asgi.h"
#include "asgi/asgi_send.h"

#include "base/log.h"
#include "http/http_chars.h"

#include <errno.h>
#include <string.h>

#define WS_SEND_AHEAD 65536 /* bytes a send may leave on their way without waiting */

static PyObject *s_type, *s_connect, *s_receive, *s_disconnect, *s_text, *s_bytes, *s_code,
    *s_reason, *s_accept, *s_send, *s_close, *s_subprotocol, *s_headers, *s_deny_start,
    *s_deny_body;

static int init_names(void) {
    if (s_type)
        return 0;
    s_type = asgi_str("type");
    s_connect = asgi_str("websocket.connect");
    s_receive = asgi_str("websocket.receive");
    s_disconnect = asgi_str("websocket.disconnect");
    s_text = asgi_str("text");
    s_bytes = asgi_str("bytes");
    s_code = asgi_str("code");
    s_reason = asgi_str("reason");
    s_accept = asgi_str("websocket.accept");
    s_send = asgi_str("websocket.send");
    s_close = asgi_str("websocket.close");
    s_subprotocol = asgi_str("subprotocol");
    s_headers = asgi_str("headers");
    s_deny_start = asgi_str("websocket.http.response.start");
    s_deny_body = asgi_str("websocket.http.response.body");
    return s_deny_body ? 0 : -1;
}

int asgi_ws_is_upgrade(const sp_req *req) {
    const http_request *h = req_get_head(req);
    if (h->websocket_connect)
        return 1; /* HTTP/2's extended CONNECT (RFC 8441) */
    for (size_t i = 0; i < h->nfields; i++)
        if (http_ieq(h->fields[i].name, h->fields[i].name_len, "upgrade", 7) &&
            http_ieq(h->fields[i].value, h->fields[i].value_len, "websocket", 9))
            return 1;
    return 0;
}

static aws *ws_of(acycle *c) {
    if (init_names() < 0)
        return NULL;
    if (!c->ws) {
        c->ws = PyMem_Calloc(1, sizeof(aws));
        if (!c->ws)
            PyErr_NoMemory();
    }
    return c->ws;
}

void asgi_ws_free(acycle *c) {
    if (c->ws) {
        Py_XDECREF(c->ws->skeep);
        Py_XDECREF(c->ws->squeue);
        PyMem_Free(c->ws);
        c->ws = NULL;
    }
}

/* ---- the coroutines ------------------------------------------------------ */

ssize_t asgi_ws_op(acycle *c) {
    aws *w = c->ws;
    if (c->op & A_WS_ACCEPT) {
        c->op &= ~A_WS_ACCEPT;
        sp_ws_options o = {.max_message = the_ahub.ws_max_message};
        w->ws = sp_ws_upgrade(c->req, c->res, &o);
        w->accept_rc = w->ws ? 0 : -errno;
        w->done |= W_ACCEPTED;
        asgi_queue(c, EV_WS);
        if (!w->ws)
            return 1;
    }
    if (c->op & A_WS_CLOSE) {
        c->op = 0;
        if (w->ws)
            sp_ws_close(w->ws, (uint16_t)w->close_code, w->reason[0] ? w->reason : NULL);
        else
            res_send_error(c->res, 403, 1, NULL);
        return 1;
    }
    if (c->op & A_WS_RECV) {
        c->op &= ~A_WS_RECV;
        w->in_recv = 1;
        w->recv_rc = sp_ws_recv(w->ws, &w->msg, -1);
        w->in_recv = 0;
        if (w->recv_rc == -EINTR && (c->op & A_WS_CLOSE))
            return 0; /* interrupted for the app's close: it runs next */
        w->done |= W_RECEIVED;
        asgi_queue(c, EV_WS);
        if (w->recv_rc < 0)
            return 1; /* the conversation is over */
    }
    return 0;
}

static void ws_sender(void *arg) {
    acycle *c = arg;
    aws *w = c->ws;
    w->send_rc = !c->gone && w->ws ? sp_ws_send(w->ws, w->sop, w->sdata, w->slen) : -EPIPE;
    w->done |= W_SENT;
    asgi_queue(c, EV_WS);
}

/* ---- the main stack ----------------------------------------------------- */

static PyObject *disconnect_msg(acycle *c) {
    aws *w = c->ws;
    int code = w && w->ws && !c->gone ? sp_ws_close_code(w->ws) : 0;
    if (!code)
        code = w && w->close_code ? w->close_code : 1006;
    return Py_BuildValue("{sOsi}", "type", s_disconnect, "code", code);
}

static PyObject *message_of(aws *w) {
    const sp_ws_msg *m = &w->msg;
    int text = m->opcode == SP_WS_TEXT;
    PyObject *v = text ? PyUnicode_DecodeUTF8(m->data, (Py_ssize_t)m->len, "strict")
                       : PyBytes_FromStringAndSize(m->data, (Py_ssize_t)m->len);
    PyObject *d = v ? _PyDict_NewPresized(2) : NULL;
    if (d && (PyDict_SetItem(d, s_type, s_receive) < 0 ||
              PyDict_SetItem(d, text ? s_text : s_bytes, v) < 0))
        Py_CLEAR(d);
    Py_XDECREF(v);
    return d;
}

static void send_next(acycle *c, aws *w);

static void list_ws(acycle *c) {
    ahub *a = &the_ahub;
    c->ws_prev = NULL;
    c->ws_next = a->ws_open;
    if (a->ws_open)
        a->ws_open->ws_prev = c;
    a->ws_open = c;
    c->ws_listed = 1;
    if (a->stop_told) /* accepted as the stop began */
        asgi_ws_stop_all();
}

void asgi_ws_unlist(acycle *c) {
    ahub *a = &the_ahub;
    if (!c->ws_listed)
        return;
    if (c->ws_prev)
        c->ws_prev->ws_next = c->ws_next;
    else
        a->ws_open = c->ws_next;
    if (c->ws_next)
        c->ws_next->ws_prev = c->ws_prev;
    c->ws_listed = 0;
}

void asgi_ws_stop_all(void) {
    for (acycle *c = the_ahub.ws_open; c; c = c->ws_next) {
        aws *w = c->ws;
        if (!w || c->gone || w->closed || w->close_asked || w->in_recv)
            continue;
        w->close_asked = 1;
        w->close_code = 1001;
        strcpy(w->reason, "server stopping");
        c->op |= A_WS_CLOSE;
        asgi_wake(c);
    }
}

/* The connection is gone (a send failed, the client hung up) while the
 * app may not be receiving: the coroutine closes and ends now, so the
 * connection is not held until the app returns; later sends just return. */
void asgi_ws_dead(acycle *c) {
    aws *w = c->ws;
    if (!w || c->gone || !w->accepted)
        return;
    w->closed = 1;
    c->op |= A_WS_CLOSE;
    if (w->in_recv && w->ws)
        sp_ws_interrupt(w->ws);
    else
        asgi_wake(c);
}

void asgi_ws_event(acycle *c) {
    aws *w = c->ws;
    if (!w)
        return;
    uint32_t d = w->done;
    w->done = 0;
    if (d & W_ACCEPTED) {
        if (w->accept_rc == 0) {
            w->accepted = 1;
            list_ws(c);
            if (c->recv_fut) { /* a receive made while the accept was under way */
                c->op |= A_WS_RECV;
                asgi_wake(c);
            }
        } else {
            w->closed = 1;
            int gone = w->accept_rc == -ECONNRESET || w->accept_rc == -EPIPE;
            log_msg(gone ? LOG_DEBUG : LOG_WARNING, "ASGI websocket.accept failed: %s",
                    w->accept_rc == -EINVAL ? "not a valid WebSocket handshake"
                                            : strerror(-w->accept_rc));
        }
        asgi_resolve(&c->send_fut, Py_NewRef(Py_None));
    }
    if (d & W_RECEIVED) {
        PyObject *m;
        if (w->recv_rc == 0) {
            m = message_of(w);
        } else {
            m = disconnect_msg(c);
            w->closed = 1;
        }
        if (c->recv_fut)
            asgi_resolve(&c->recv_fut, m);
        else
            Py_XSETREF(c->stash, m);
    }
    if (d & W_SENT) {
        Py_CLEAR(w->skeep);
        if (w->send_rc < 0)
            asgi_ws_dead(c);
        asgi_resolve(&c->send_fut, Py_NewRef(Py_None));
        send_next(c, w);
        Py_DECREF(c); /* the finished sender's reference */
        return;       /* c may be gone: nothing after this */
    }
    if (c->gone && c->recv_fut) {
        w->closed = 1;
        asgi_resolve(&c->recv_fut, disconnect_msg(c));
    }
}

PyObject *asgi_ws_receive(acycle *c) {
    aws *w = ws_of(c);
    if (!w)
        return NULL;
    if (!w->connect_given) {
        w->connect_given = 1;
        return asgi_ready(Py_BuildValue("{sO}", "type", s_connect));
    }
    if (c->recv_fut) {
        PyObject *done = PyObject_CallMethod(c->recv_fut, "done", NULL);
        int was = done == Py_True;
        Py_XDECREF(done);
        PyErr_Clear();
        if (!was) {
            PyErr_SetString(PyExc_RuntimeError,
                            "ASGI receive() called while another receive() is still waiting");
            return NULL;
        }
        Py_CLEAR(c->recv_fut); /* cancelled: a receive under way delivers here */
        c->recv_fut = asgi_future();
        return Py_XNewRef(c->recv_fut);
    }
    if (w->closed || c->gone || (c->disconnected && !w->accepted))
        return asgi_ready(disconnect_msg(c));
    c->recv_fut = asgi_future();
    if (!c->recv_fut)
        return NULL;
    if (w->accepted) {
        c->op |= A_WS_RECV;
        asgi_wake(c);
    }
    return Py_NewRef(c->recv_fut);
}

static PyObject *ws_accept(acycle *c, aws *w, PyObject *msg) {
    if (w->accept_asked || c->started)
        return asend_refuse("websocket.accept after the WebSocket was accepted or answered");
    PyObject *sub = PyDict_GetItemWithError(msg, s_subprotocol);
    PyObject *hdrs = PyDict_GetItemWithError(msg, s_headers);
    if (PyErr_Occurred())
        return NULL;
    if (sub && sub != Py_None && !PyUnicode_Check(sub))
        return asend_refuse("websocket.accept 'subprotocol' is a str or None, not %.100s",
                            Py_TYPE(sub)->tp_name);
    if (c->gone)
        return asgi_ready(Py_NewRef(Py_None));
    /* The extra headers go through the http.response.start checks. */
    PyObject *fake = Py_BuildValue("{sisO}", "status", 200, "headers", hdrs ? hdrs : Py_None);
    if (!fake)
        return NULL;
    int rc = asend_start(c, fake);
    Py_DECREF(fake);
    c->started = 0;
    if (rc < 0)
        return NULL;
    if (sub && sub != Py_None) {
        const char *sp = PyUnicode_AsUTF8(sub);
        if (!sp || sp_res_header(c->res, "Sec-WebSocket-Protocol", sp) < 0)
            return asend_refuse("websocket.accept subprotocol %R is not a valid token", sub);
    }
    w->accept_asked = 1;
    c->op |= A_WS_ACCEPT;
    asgi_wake(c);
    c->send_fut = asgi_future();
    return Py_XNewRef(c->send_fut);
}

/* Hands data (str or bytes) to a new sender coroutine; fut (consumed, may
 * be NULL) is resolved when it is out. 0, or -1 with an error (fut dropped). */
static int start_send(acycle *c, aws *w, PyObject *data, PyObject *fut) {
    if (PyUnicode_Check(data)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(data, &n);
        if (!p) {
            Py_XDECREF(fut);
            return -1;
        }
        w->sdata = p;
        w->slen = (size_t)n;
        w->sop = SP_WS_TEXT;
    } else {
        w->sdata = PyBytes_AS_STRING(data);
        w->slen = (size_t)PyBytes_GET_SIZE(data);
        w->sop = SP_WS_BINARY;
    }
    w->skeep = Py_NewRef(data);
    c->send_fut = fut;
    Py_INCREF(c); /* the sender's, dropped when its W_SENT is seen */
    if (sp_spawn(ws_sender, c) < 0) {
        Py_DECREF(c);
        Py_CLEAR(w->skeep);
        Py_CLEAR(c->send_fut);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Has the coroutine close (the one receiver's call: a receive under way
 * is interrupted), after the sends asked before it. */
static void ask_close(acycle *c, aws *w) {
    if (w->skeep) {
        w->close_deferred = 1;
        return;
    }
    c->op |= A_WS_CLOSE;
    if (w->in_recv && w->ws)
        sp_ws_interrupt(w->ws);
    else
        asgi_wake(c);
}

/* The next queued send, in the order sent; once closed each just returns. */
static void send_next(acycle *c, aws *w) {
    while (w->squeue && PyList_GET_SIZE(w->squeue)) {
        PyObject *item = Py_NewRef(PyList_GET_ITEM(w->squeue, 0));
        PySequence_DelItem(w->squeue, 0);
        PyObject *data = PyTuple_GET_ITEM(item, 0);
        size_t len =
            (size_t)(PyUnicode_Check(data) ? PyUnicode_GET_LENGTH(data) : PyBytes_GET_SIZE(data));
        w->qbytes = w->qbytes > len ? w->qbytes - len : 0;
        PyObject *fut =
            PyTuple_GET_ITEM(item, 1) == Py_None ? NULL : Py_NewRef(PyTuple_GET_ITEM(item, 1));
        int ok = 0;
        if (!w->closed && !c->gone && (!w->close_asked || w->close_deferred))
            ok = start_send(c, w, PyTuple_GET_ITEM(item, 0), fut) == 0;
        else
            asgi_resolve(&fut, Py_NewRef(Py_None));
        if (!ok && PyErr_Occurred())
            PyErr_Print();
        Py_DECREF(item);
        if (ok)
            return;
    }
    if (w->close_deferred && !w->skeep) { /* the sends before the close are out */
        w->close_deferred = 0;
        ask_close(c, w);
    }
}

static PyObject *ws_send_data(acycle *c, aws *w, PyObject *msg) {
    if (!w->accepted)
        return asend_refuse("websocket.send before websocket.accept");
    PyObject *t = PyDict_GetItemWithError(msg, s_text);
    PyObject *b = t || !PyErr_Occurred() ? PyDict_GetItemWithError(msg, s_bytes) : NULL;
    if (PyErr_Occurred())
        return NULL;
    if (t == Py_None)
        t = NULL;
    if (b == Py_None)
        b = NULL;
    if ((t && b) || (!t && !b) || (t && !PyUnicode_Check(t)) || (b && !PyBytes_Check(b)))
        return asend_refuse("websocket.send needs exactly one of 'text' (str) or 'bytes' (bytes)");
    if (w->closed || c->gone || w->close_asked)
        return asgi_ready(Py_NewRef(Py_None));
    /* A send returns at once while less than WS_SEND_AHEAD bytes are on
     * their way (as a transport's buffer would take them); past that it
     * waits for the sends before it: backpressure, bounded memory. */
    PyObject *data = t ? t : b;
    size_t len = (size_t)(t ? PyUnicode_GET_LENGTH(t) : PyBytes_GET_SIZE(b));
    int wait = (w->skeep ? w->slen : 0) + w->qbytes >= WS_SEND_AHEAD;
    PyObject *fut = wait ? asgi_future() : NULL;
    if (wait && !fut)
        return NULL;
    if (w->skeep) { /* another send is under way: after it, in order */
        PyObject *item = PyTuple_Pack(2, data, fut ? fut : Py_None);
        if (!item || (!w->squeue && !(w->squeue = PyList_New(0))) ||
            PyList_Append(w->squeue, item) < 0) {
            Py_XDECREF(item);
            Py_XDECREF(fut);
            return NULL;
        }
        Py_DECREF(item);
        w->qbytes += len;
        return fut ? fut : asgi_ready(Py_NewRef(Py_None));
    }
    if (start_send(c, w, data, Py_XNewRef(fut)) < 0) {
        Py_XDECREF(fut);
        return NULL;
    }
    return fut ? fut : asgi_ready(Py_NewRef(Py_None));
}

static PyObject *ws_close(acycle *c, aws *w, PyObject *msg) {
    PyObject *code = PyDict_GetItemWithError(msg, s_code);
    PyObject *reason = PyDict_GetItemWithError(msg, s_reason);
    if (PyErr_Occurred())
        return NULL;
    long cd = code && code != Py_None ? PyLong_AsLong(code) : 1000;
    if (cd == -1 && PyErr_Occurred())
        return NULL;
    const char *rs = reason && reason != Py_None ? PyUnicode_AsUTF8(reason) : "";
    if (!rs)
        return NULL;
    if (cd < 1000 || cd > 4999 || cd == 1004 || cd == 1005 || cd == 1006 || cd == 1015 ||
        strlen(rs) > 123)
        return asend_refuse("websocket.close code %ld / reason: want a code of 1000-4999 (not "
                            "1004-1006 or 1015) and a reason of at most 123 UTF-8 bytes",
                            cd);
    if (w->close_asked || w->closed || c->gone)
        return asgi_ready(Py_NewRef(Py_None));
    w->close_asked = 1;
    w->close_code = (int)cd;
    strcpy(w->reason, rs);
    if (!w->accept_asked)
        c->started = 1; /* a 403 answers the handshake */
    ask_close(c, w);
    return asgi_ready(Py_NewRef(Py_None));
}

/* websocket.http.response.*: the denial response, an HTTP answer instead
 * of the upgrade; written as http.response.* messages are. */
static PyObject *ws_deny(acycle *c, aws *w, PyObject *msg, int start) {
    if (w->accept_asked || w->close_asked)
        return asend_refuse("websocket.http.response after websocket.accept or close");
    PyObject *copy = PyDict_Copy(msg);
    if (!copy)
        return NULL;
    PyObject *t = PyUnicode_FromString(start ? "http.response.start" : "http.response.body");
    int rc = t ? PyDict_SetItemString(copy, "type", t) : -1;
    Py_XDECREF(t);
    PyObject *r = rc < 0 ? NULL : asgi_http_send(c, copy);
    w->denied = 1;
    Py_DECREF(copy);
    return r;
}

PyObject *asend_ws(acycle *c, PyObject *msg) {
    if (init_names() < 0)
        return NULL;
    aws *w = ws_of(c);
    if (!w)
        return NULL;
    if (!PyDict_Check(msg))
        return asend_refuse("an ASGI message is a dict, not %.100s", Py_TYPE(msg)->tp_name);
    PyObject *t = PyDict_GetItemWithError(msg, s_type);
    if (!t)
        return PyErr_Occurred() ? NULL : asend_refuse("an ASGI message needs a 'type'");
    if (PyUnicode_Check(t)) {
        if (PyUnicode_Compare(t, s_send) == 0)
            return ws_send_data(c, w, msg);
        if (PyUnicode_Compare(t, s_accept) == 0)
            return ws_accept(c, w, msg);
        if (PyUnicode_Compare(t, s_close) == 0)
            return ws_close(c, w, msg);
        if (PyUnicode_Compare(t, s_deny_start) == 0)
            return ws_deny(c, w, msg, 1);
        if (PyUnicode_Compare(t, s_deny_body) == 0)
            return ws_deny(c, w, msg, 0);
    }
    return asend_refuse("unknown ASGI message type %R for a websocket scope", t);
}

/* The app is done: a WebSocket still open is closed (1000, or 1011 when
 * the app failed, 1001 when it was cancelled: failed == 2); a handshake never answered gets 403
 * (500 on failure). */
void asgi_ws_app_done(acycle *c, int failed) {
    aws *w = ws_of(c);
    if (!w || c->gone)
        return;
    if (w->denied) {
        if (!c->finished) {
            c->op |= c->started ? A_ABORT : A_ERROR500;
            asgi_wake(c);
        }
        return;
    }
    if (!w->accept_asked && !w->close_asked && failed) {
        c->op |= A_ERROR500;
        asgi_wake(c);
        return;
    }
    if (!w->close_asked && !w->closed) {
        w->close_asked = 1;
        w->close_code = failed == 2 ? 1001 : failed ? 1011 : 1000;
    }
    /* Closed or not, the coroutine must end (a WebSocket whose send failed
     * is closed, yet its coroutine still waits for ops): after the sends. */
    ask_close(c, w);
}
