/* wsgi.c — one WSGI call (PEP 3333), run in a greenlet on the worker's
 * main stack: environ, start_response (validated: a bad status or header is
 * a 500, never a crash), the write() callable, and the response iterable,
 * whose close() is always called. A one-element list is measured and sent
 * with Content-Length in the same writev as the head; a Content-Length the
 * app gives is trusted and never exceeded; otherwise the body is chunked
 * (HTTP/1.1) or close-delimited (HTTP/1.0). */
#include "wsgi/wsgi.h"

#include "http/http_chars.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall; /* sr_vectorcall: calls without a tuple */
    pyjob *j;                                /* NULL once the call is over */
    PyObject *status;                        /* str */
    PyObject *headers;                       /* tuple of (str, str): start_response's copy */
    PyObject *write_fn; /* the write callable start_response returns, made once */
    int called;
    int64_t content_length; /* the app's Content-Length, or -1 */
    uint64_t sent;
} sr_obj;

static PyTypeObject sr_type;

/* The head goes into the response (not on the wire yet: the coroutine sends
 * it with the first body bytes). body_len: the whole body's length when the
 * server knows it, else -1. */
static int commit_head(sr_obj *sr, int64_t body_len) {
    sp_res *res = sr->j->res;
    if (!sr->called) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the WSGI application returned without calling start_response");
        return -1;
    }
    Py_ssize_t sl;
    PyObject *hold;
    const char *st = latin1_of(sr->status, &sl, &hold);
    if (!st)
        return -1;
    int status = (st[0] - '0') * 100 + (st[1] - '0') * 10 + (st[2] - '0');
    Py_XDECREF(hold);
    /* spindle.session's Set-Cookie was added first: it stays. */
    res_clear_head_to(res, sr->j->sess_mark);
    if (sp_res_status(res, status) < 0) {
        PyErr_Format(PyExc_ValueError, "invalid WSGI status %R", sr->status);
        return -1;
    }
    sr->content_length = -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sr->headers); i++) {
        PyObject *t = PyTuple_GET_ITEM(sr->headers, i);
        Py_ssize_t nl, vl;
        PyObject *hn, *hv;
        const char *n = latin1_of(PyTuple_GET_ITEM(t, 0), &nl, &hn);
        const char *v = n ? latin1_of(PyTuple_GET_ITEM(t, 1), &vl, &hv) : NULL;
        if (!v) {
            Py_XDECREF(hn);
            return -1;
        }
        int rc = 0;
        if (http_ieq(n, (size_t)nl, "content-length", 14)) {
            char *end;
            unsigned long long cl = strtoull(v, &end, 10);
            if (vl == 0 || *end || v[0] < '0' || v[0] > '9')
                rc = -EINVAL;
            else if (sr->content_length >= 0 && (uint64_t)sr->content_length != cl)
                rc = -EINVAL;
            else
                sr->content_length = (int64_t)cl;
        } else if (http_ieq(n, (size_t)nl, "date", 4)) {
            /* the server's Date is sent; a second one would be invalid */
        } else {
            /* Surrounding whitespace is not part of a field value (RFC 9110
             * §5.5); apps send it (Django's cookies do): trim, as gunicorn. */
            while (vl && (v[0] == ' ' || v[0] == '\t')) {
                v++;
                vl--;
            }
            Py_ssize_t tl = vl;
            while (tl && (v[tl - 1] == ' ' || v[tl - 1] == '\t'))
                tl--;
            if (tl == vl) {
                rc = sp_res_header(res, n, v);
            } else {
                char *copy = PyMem_Malloc((size_t)tl + 1);
                if (!copy) {
                    rc = -ENOMEM;
                } else {
                    memcpy(copy, v, (size_t)tl);
                    copy[tl] = '\0';
                    rc = sp_res_header(res, n, copy);
                    PyMem_Free(copy);
                }
            }
        }
        Py_XDECREF(hn);
        Py_XDECREF(hv);
        if (rc < 0) {
            PyErr_Format(PyExc_ValueError, "cannot send WSGI header %R: %s", t,
                         rc == -ENOSPC ? "too many or too large headers" : "invalid value");
            return -1;
        }
    }
    if (sr->content_length >= 0)
        sp_res_length(res, (uint64_t)sr->content_length);
    else if (body_len >= 0)
        sp_res_length(res, (uint64_t)body_len);
    return 0;
}

/* The part of a chunk that may be sent: never past the app's Content-Length. */
static size_t allowed(sr_obj *sr, size_t n) {
    if (sr->content_length < 0)
        return n;
    uint64_t room = (uint64_t)sr->content_length - sr->sent;
    return n < room ? n : (size_t)room;
}

/* Sends one body chunk now (the head first if not yet sent), waiting for the
 * coroutine. -1 with an error set, or when the client is gone. */
static int send_chunk(sr_obj *sr, const char *p, size_t n) {
    pyjob *j = sr->j;
    if (j->wsobj) {
        PyErr_SetString(PyExc_RuntimeError,
                        "write() after spindle.websocket(): the connection is a WebSocket now");
        return -1;
    }
    if (!res_get_head_sent(j->res) && commit_head(sr, -1) < 0)
        return -1;
    size_t take = allowed(sr, n);
    if (take < n)
        log_msg(LOG_WARNING,
                "WSGI application sent more than its Content-Length of %lld; "
                "the rest is dropped",
                (long long)sr->content_length);
    if (!take && res_get_head_sent(j->res))
        return 0;
    j->data = p;
    j->len = take;
    ssize_t r = hub_op(j, OP_WRITE);
    if (r < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_OSError, "the client is gone: %s", strerror((int)-r));
        return -1;
    }
    sr->sent += take;
    return 0;
}

static PyObject *sr_write(sr_obj *sr, PyObject *data);
static PyMethodDef sr_write_def = {"write", (PyCFunction)sr_write, METH_O,
                                   "write(data): the legacy write callable"};

static PyObject *sr_start(sr_obj *sr, PyObject *status, PyObject *headers, PyObject *exc_info);

/* start_response(...) with keywords or a wrong count: the format parser
 * says what is wrong. */
static PyObject *sr_call(sr_obj *sr, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"status", "headers", "exc_info", NULL};
    PyObject *status, *headers, *exc_info = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:start_response", kwlist, &status, &headers,
                                     &exc_info))
        return NULL;
    return sr_start(sr, status, headers, exc_info);
}

/* The usual call, start_response(status, headers[, exc_info]), without an
 * argument tuple; anything else goes through sr_call. */
static PyObject *sr_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (!kwnames && (n == 2 || n == 3))
        return sr_start((sr_obj *)self, args[0], args[1], n == 3 ? args[2] : Py_None);
    PyObject *t = PyTuple_New(n), *kw = NULL, *r = NULL;
    if (!t)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(t, i, args[i]);
    }
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nk && !(kw = PyDict_New()))
        goto out;
    for (Py_ssize_t i = 0; i < nk; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[n + i]) < 0)
            goto out;
    r = sr_call((sr_obj *)self, t, kw);
out:
    Py_DECREF(t);
    Py_XDECREF(kw);
    return r;
}

static PyObject *sr_start(sr_obj *sr, PyObject *status, PyObject *headers, PyObject *exc_info) {
    if (!sr->j) {
        PyErr_SetString(PyExc_RuntimeError, "start_response called after the response ended");
        return NULL;
    }
    if (exc_info != Py_None) {
        if (res_get_head_sent(sr->j->res)) {
            /* Too late to change the response: re-raise (PEP 3333). */
            PyObject *t, *v, *tb;
            if (!PyArg_ParseTuple(exc_info, "OOO", &t, &v, &tb))
                return NULL;
            Py_INCREF(t);
            Py_INCREF(v);
            Py_INCREF(tb);
            PyErr_Restore(t, v, tb);
            return NULL;
        }
    } else if (sr->called) {
        PyErr_SetString(PyExc_RuntimeError, "start_response called a second time without exc_info");
        return NULL;
    }
    PyObject *copy = validated_headers(status, headers);
    if (!copy)
        return NULL;
    Py_INCREF(status);
    Py_XSETREF(sr->status, status);
    Py_XSETREF(sr->headers, copy);
    sr->called = 1;
    sr->j->sr_called = 1;
    /* What getattr(sr, "write") gives, made once per object: it holds sr,
     * and drop_sr breaks that cycle unless sr is kept for the next call. */
    if (!sr->write_fn && !(sr->write_fn = PyCFunction_New(&sr_write_def, (PyObject *)sr)))
        return NULL;
    Py_INCREF(sr->write_fn);
    return sr->write_fn;
}

static PyObject *sr_write(sr_obj *sr, PyObject *data) {
    if (!sr->j) {
        PyErr_SetString(PyExc_RuntimeError, "write() called after the response ended");
        return NULL;
    }
    Py_buffer b;
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "write() takes bytes, not %.100s", Py_TYPE(data)->tp_name);
        return NULL;
    }
    if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    int rc = send_chunk(sr, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static void sr_dealloc(sr_obj *sr) {
    /* write_fn is NULL here: while it lives it holds sr. */
    Py_XDECREF(sr->status);
    Py_XDECREF(sr->headers);
    PyObject_Free(sr);
}

static PyMethodDef sr_methods[] = {
    {"write", (PyCFunction)sr_write, METH_O, "write(data): the legacy write callable"},
    {NULL, NULL, 0, NULL},
};
_Static_assert(sizeof sr_methods[0] == sizeof sr_write_def, "write is sr_methods[0]");

static PyTypeObject sr_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle.StartResponse",
    .tp_basicsize = sizeof(sr_obj),
    .tp_dealloc = (destructor)sr_dealloc,
    .tp_vectorcall_offset = offsetof(sr_obj, vectorcall),
    .tp_call = PyVectorcall_Call, /* what a vectorcall type must have: sr_vectorcall */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_methods = sr_methods,
};

int start_response_init_type(void) {
    return PyType_Ready(&sr_type);
}

/* ---- the call ---------------------------------------------------------- */

static const char error_body[] = "500 Internal Server Error\n";

static void log_app_error(pyjob *j) {
    const http_request *h = req_get_head(j->req);
    log_msg(LOG_ERROR, "the WSGI application failed serving '%.*s %.*s':", (int)h->method_len,
            h->method, (int)(h->target_len > 200 ? 200 : h->target_len), h->target);
    PyErr_Print(); /* the traceback, to stderr: the error log */
}

static int call_close(PyObject *result) {
    if (!result || PyList_CheckExact(result) || PyTuple_CheckExact(result))
        return 0;
    PyObject *close = PyObject_GetAttrString(result, "close");
    if (!close) {
        PyErr_Clear();
        return 0;
    }
    PyObject *r = PyObject_CallNoArgs(close);
    Py_DECREF(close);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* A file_wrapper around a regular file goes out with sendfile. Returns 1 if
 * it did, 0 if the wrapper must be iterated instead, -1 on error. */
static int try_sendfile(hub *h, sr_obj *sr, PyObject *result) {
    if (!h->file_wrapper_type || !PyObject_TypeCheck(result, (PyTypeObject *)h->file_wrapper_type))
        return 0;
    PyObject *filelike = PyObject_GetAttrString(result, "filelike");
    if (!filelike) {
        PyErr_Clear();
        return 0;
    }
    int fd = PyObject_AsFileDescriptor(filelike);
    Py_DECREF(filelike);
    if (fd < 0) {
        PyErr_Clear();
        return 0;
    }
    struct stat st;
    off_t pos = lseek(fd, 0, SEEK_CUR);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pos < 0)
        return 0;
    size_t count = st.st_size > pos ? (size_t)(st.st_size - pos) : 0;
    if (commit_head(sr, (int64_t)count) < 0)
        return -1;
    count = allowed(sr, count);
    pyjob *j = sr->j;
    j->fd = fd;
    j->off = pos;
    j->count = count;
    ssize_t r = hub_op(j, OP_SENDFILE);
    if (r < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_OSError, "sending the file failed: %s", strerror((int)-r));
        return -1;
    }
    sr->sent += count;
    return 1;
}

/* The body from an iterable of bytes (or a file_wrapper through
 * sendfile), chunk by chunk, stopping once a promised length is out. 0, or
 * -1 with a Python error set. */
static int send_iterable(hub *h, sr_obj *sr, PyObject *result) {
    int sent_file = try_sendfile(h, sr, result);
    if (sent_file != 0)
        return sent_file < 0 ? -1 : 0;
    PyObject *iter = PyObject_GetIter(result), *item;
    if (!iter)
        return -1;
    int rc = 0;
    while ((item = PyIter_Next(iter))) {
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "WSGI response items must be bytes, not %.100s",
                         Py_TYPE(item)->tp_name);
            rc = -1;
        } else if (PyBytes_GET_SIZE(item) &&
                   send_chunk(sr, PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item)) < 0) {
            rc = -1;
        }
        Py_DECREF(item);
        if (rc < 0 || (sr->content_length >= 0 && sr->sent >= (uint64_t)sr->content_length))
            break; /* an error, or the promised length is out: stop asking for more */
    }
    Py_DECREF(iter);
    return rc < 0 || PyErr_Occurred() ? -1 : 0;
}

/* The app failed (exception set): log it, then a 500 if nothing was sent,
 * else close (a started response cannot be completed honestly). */
static void fail_request(hub *h, pyjob *j, PyObject *result, PyObject *input, sr_obj *sr) {
    /* The client left: its write failed, it hung up while the app ran, or
     * its body was cut (wsgi.input raised). Not the application's fault. */
    int left = res_get_failed(j->res) || j->gone || req_get_body_errno(j->req) == -ECONNRESET;
    if (left) {
        /* The client went away mid-response: not the application's fault. */
        PyErr_Clear();
        log_msg(LOG_DEBUG, "client left during '%.*s %.*s'", (int)req_get_head(j->req)->method_len,
                req_get_head(j->req)->method, (int)req_get_head(j->req)->target_len,
                req_get_head(j->req)->target);
    } else {
        log_app_error(j);
    }
    if (call_close(result) < 0)
        log_app_error(j);
    if (input)
        input_detach(input);
    if (sr)
        sr->j = NULL;
    session_detach(j);
    if (!res_get_head_sent(j->res) && !left) {
        sp_res *res = j->res;
        res_clear_head(res);
        sp_res_length(res, sizeof error_body - 1);
        sp_res_status(res, 500);
        res_set_force_close(res, 0);
        sp_res_header(res, "Content-Type", "text/plain");
        j->data = error_body;
        j->len = sizeof error_body - 1;
        hub_op_last(j, OP_WRITE, NULL);
    } else {
        j->app_rc = left ? -ECONNRESET : -EIO;
        j->app_done = 1;
        loop_wake(h->l, j->t, 0);
    }
}

/* The app accepted a WebSocket: its return value is not a response (its
 * close() is still called); the socket closes (1000, or 1011 if the app
 * failed) and the coroutine ends, the server closing the connection. */
static void websocket_done(hub *h, pyjob *j, PyObject *result, PyObject *input, sr_obj *sr) {
    int failed = !result;
    ws_finish(j, failed ? 1011 : 1000);
    if (failed)
        log_app_error(j);
    if (call_close(result) < 0)
        log_app_error(j);
    input_detach(input);
    sr->j = NULL;
    session_detach(j);
    j->app_done = 1;
    loop_wake(h->l, j->t, 0);
}

/* One bytes item and nothing written yet: measure it, one writev. 1 when
 * it is that case (the body is in j->data), 0 when not, -1 on error. */
static int single_item(sr_obj *sr, pyjob *j, PyObject *result) {
    if (!(PyList_CheckExact(result) || PyTuple_CheckExact(result)) ||
        PySequence_Fast_GET_SIZE(result) != 1 || res_get_head_sent(j->res) || sr->sent != 0)
        return 0;
    PyObject *only = PySequence_Fast_GET_ITEM(result, 0);
    if (!PyBytes_Check(only)) {
        PyErr_Format(PyExc_TypeError, "WSGI response items must be bytes, not %.100s",
                     Py_TYPE(only)->tp_name);
        return -1;
    }
    if (commit_head(sr, PyBytes_GET_SIZE(only)) < 0)
        return -1;
    j->data = PyBytes_AS_STRING(only);
    j->len = allowed(sr, (size_t)PyBytes_GET_SIZE(only));
    return 1;
}

/* The last call's start_response when nothing else held it at the end: the
 * next call takes it instead of a new object (one worker thread: no lock). */
static sr_obj *spare_sr;

static void drop_sr(sr_obj *sr) {
    if (!sr)
        return;
    /* Held only by us and its own write callable, held only by it. */
    Py_ssize_t own = sr->write_fn ? 2 : 1;
    if (Py_REFCNT(sr) == own && (!sr->write_fn || Py_REFCNT(sr->write_fn) == 1) && !spare_sr) {
        Py_CLEAR(sr->status);
        Py_CLEAR(sr->headers);
        spare_sr = sr;
        return;
    }
    Py_CLEAR(sr->write_fn); /* the app may still hold it, and through it sr */
    Py_DECREF(sr);
}

/* The environ and its wsgi.input: the last call's again (environ_reuse)
 * or new ones. *sess: the spindle.request handle. 0, or -1 on error (what
 * was made is in *env and *input for the caller to drop). */
static int call_environ(hub *h, pyjob *j, PyObject **env, PyObject **input, PyObject **sess) {
    if ((*env = environ_reuse(j, input))) {
        *sess = j->sess_obj;
        return 0;
    }
    if (!(*input = input_new(j)) || !(*env = environ_build(h, j, *input)) ||
        session_attach(j, *env) < 0)
        return -1;
    *sess = j->sess_obj;
    return 0;
}

static void wsgi_run(hub *h, pyjob *j) {
    PyObject *input = NULL, *env = NULL, *sess = NULL, *result = NULL;
    sr_obj *sr = spare_sr;
    spare_sr = NULL;
    if (!sr && (sr = PyObject_New(sr_obj, &sr_type))) {
        sr->vectorcall = sr_vectorcall;
        sr->write_fn = NULL;
    }
    int single = 0;
    if (call_environ(h, j, &env, &input, &sess) < 0 || !sr)
        goto error;
    sr->j = j;
    sr->status = sr->headers = NULL;
    sr->called = 0;
    sr->content_length = -1;
    sr->sent = 0;
    uint64_t version = environ_version(env); /* environ_keep: did anyone change it? */
    PyObject *args[2] = {env, (PyObject *)sr};
    result = PyObject_Vectorcall(h->app, args, 2, NULL);
    if (j->wsobj) {
        websocket_done(h, j, result, input, sr);
        goto out;
    }
    if (!result || (single = single_item(sr, j, result)) < 0)
        goto error;
    if (single) {
        input_detach(input);
        sr->j = NULL;
        session_detach(j);
        /* The bytes object stays alive until the coroutine has sent it
         * (lists have no close()). */
        hub_op_last(j, OP_WRITE, PySequence_Fast_GET_ITEM(result, 0));
        Py_CLEAR(result);
        if (environ_keep(j, env, input, sess, version))
            env = NULL; /* kept for the next call */
        goto out;
    }
    if (send_iterable(h, sr, result) < 0)
        goto error;
    if (!res_get_head_sent(j->res) && commit_head(sr, sr->content_length >= 0 ? -1 : 0) < 0)
        goto error;
    if (call_close(result) < 0) {
        log_app_error(j);
        j->app_rc = -EIO;
    }
    j->data = NULL;
    j->len = 0;
    input_detach(input);
    sr->j = NULL;
    session_detach(j);
    hub_op_last(j, res_get_head_sent(j->res) ? OP_FINISH : OP_WRITE, NULL);
    Py_CLEAR(result);
    if (environ_keep(j, env, input, sess, version))
        env = NULL;
    goto out;

error:
    fail_request(h, j, result, input, sr);
out:
    Py_XDECREF(result);
    Py_XDECREF(env);
    session_recycle();
    input_release(input);
    drop_sr(sr);
}

int wsgi_init_types(void) {
    hub_job_fns.run = wsgi_run; /* each request, a hub job: its app call */
    return start_response_init_type() < 0 || input_init_type() < 0 ? -1 : 0;
}
