/* session.c — spindle.session's C side: a per-request handle in the
 * environ ("spindle.request") whose calls run sp_session_* on the request's
 * coroutine (OP_SESSION: SQLite and Redis stores yield there), and which
 * stops working when the app is done (the C session lives until then). */
#include "common/binding.h"

#include <errno.h>
#include <string.h>

typedef struct {
    PyObject_HEAD pyjob *j; /* NULL once the app is done with the request */
} sess_obj;

static PyTypeObject sess_type;

static void remember_fields(pyjob *j) {
    j->sess_mark = res_get_fields_mark(j->res);
}

/* OP_SESSION, on the coroutine: runs j->sess_op; 0 or -errno. */
static ssize_t session_do(pyjob *j) {
    sp_session *s = j->sess;
    int rc = 0;
    switch (j->sess_op) {
    case SESS_OPEN:
        if (!(j->sess = sp_session_of(j->req, j->res)))
            return -errno;
        remember_fields(j);
        return 0;
    case SESS_SET:
        rc = sp_session_set(s, j->skey, j->sval);
        break;
    case SESS_DEL:
        rc = sp_session_del(s, j->skey);
        break;
    case SESS_CLEAR:
        rc = sp_session_clear(s);
        break;
    case SESS_REGEN:
        rc = sp_session_regenerate(s);
        break;
    case SESS_TTL:
        rc = sp_session_set_ttl(s, j->sttl);
        break;
    default:
        rc = -EINVAL;
    }
    return rc;
}

/* A detached request object, still ours until session_recycle, and the one
 * kept for the next request once nothing else held it (one worker thread). */
static sess_obj *detached, *spare;

int session_attach(pyjob *j, PyObject *env) {
    sess_obj *o = spare ? spare : PyObject_New(sess_obj, &sess_type);
    spare = NULL;
    if (!o)
        return -1;
    o->j = j;
    j->sess_obj = (PyObject *)o;
    /* The key made once: SetItemString would build and intern it anew each
     * request (~700 instructions). */
    static PyObject *key;
    if (!key && !(key = PyUnicode_InternFromString("spindle.request")))
        return -1;
    return PyDict_SetItem(env, key, (PyObject *)o);
}

void session_reattach(pyjob *j, PyObject *o) {
    ((sess_obj *)o)->j = j;
    Py_INCREF(o); /* j's reference, as session_attach's: session_detach moves it */
    j->sess_obj = o;
}

int session_reusable(PyObject *o) {
    return Py_REFCNT(o) == 2 && (PyObject *)detached == o && !((sess_obj *)o)->j;
}

void session_detach(pyjob *j) {
    sess_obj *o = (sess_obj *)j->sess_obj;
    if (!o)
        return;
    o->j = NULL;
    j->sess_obj = NULL;
    j->sess = NULL;
    Py_XSETREF(detached, o); /* our reference, until session_recycle */
}

void session_recycle(void) {
    sess_obj *o = detached;
    detached = NULL;
    if (o && Py_REFCNT(o) == 1 && !spare)
        spare = o;
    else
        Py_XDECREF(o);
}

/* Raises the error for -rc of a session call (NULL). */
static PyObject *sess_error(int rc, const char *what) {
    switch (-rc) {
    case ENXIO:
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.session: no session store is configured; start the server "
                        "with --sessions memory (one worker), --sessions sqlite:PATH or "
                        "--sessions redis://HOST:PORT");
        break;
    case EALREADY:
        PyErr_Format(PyExc_RuntimeError,
                     "spindle.session: %s must happen before the response body is first "
                     "written (its Set-Cookie goes in the response head)",
                     what);
        break;
    case E2BIG:
        PyErr_SetString(PyExc_ValueError, "spindle.session: the session is over 64 KiB");
        break;
    case EINVAL:
        PyErr_Format(PyExc_ValueError, "spindle.session: invalid argument to %s", what);
        break;
    default:
        errno = -rc;
        PyErr_SetFromErrno(PyExc_OSError);
    }
    return NULL;
}

/* The handle's job if the request is still running in this greenlet. */
static pyjob *live(sess_obj *o) {
    PyObject *cur = hub_in_greenlet(the_hub) ? hub_current() : NULL;
    Py_XDECREF(cur); /* only compared: the request's job holds it */
    if (!o->j || !cur || cur != o->j->wake.greenlet) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.session: not in this session's request (use the session "
                        "only in the greenlet handling its request, until it returns)");
        return NULL;
    }
    return o->j;
}

static PyObject *run_op(pyjob *j, int op, const char *what) {
    j->sess_op = op;
    ssize_t rc = hub_op(j, OP_SESSION);
    if (rc == -ECANCELED && PyErr_Occurred())
        return NULL;
    if (rc < 0)
        return sess_error((int)rc, what);
    Py_RETURN_NONE;
}

PyObject *py_session_open(PyObject *self, PyObject *env) {
    PyObject *o = PyDict_Check(env) ? PyDict_GetItemString(env, "spindle.request") : NULL;
    if (!o || Py_TYPE(o) != &sess_type) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.session(environ) needs the environ of a request served by "
                        "spindle (python3 -m spindle or spindle.run)");
        return NULL;
    }
    pyjob *j = live((sess_obj *)o);
    if (!j)
        return NULL;
    if (!j->sess) {
        PyObject *r = run_op(j, SESS_OPEN, "opening the session");
        if (!r)
            return NULL;
        Py_DECREF(r);
    }
    Py_INCREF(o);
    return o;
}

static pyjob *opened(sess_obj *o) {
    pyjob *j = live(o);
    if (j && !j->sess) {
        PyErr_SetString(PyExc_RuntimeError, "spindle.session: call spindle.session(environ) first");
        return NULL;
    }
    return j;
}

static const char *text(PyObject *s, const char *what);

static PyObject *h_get(sess_obj *o, PyObject *key) {
    pyjob *j = opened(o);
    const char *k = j ? text(key, "a key") : NULL;
    if (!k)
        return NULL;
    const char *v = sp_session_get(j->sess, k);
    if (!v)
        Py_RETURN_NONE;
    return PyUnicode_FromString(v);
}

static PyObject *h_keys(sess_obj *o, PyObject *unused) {
    pyjob *j = opened(o);
    if (!j)
        return NULL;
    PyObject *l = PyList_New(0);
    const char *k;
    for (size_t i = 0; l && (k = sp_session_key(j->sess, i)); i++) {
        PyObject *s = PyUnicode_FromString(k);
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(s);
    }
    return l;
}

/* UTF-8 of a str without NUL (the store keeps NUL-terminated strings). */
static const char *text(PyObject *s, const char *what) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "spindle.session: %s must be str, not %.80s", what,
                     Py_TYPE(s)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(s, &n);
    if (p && strlen(p) != (size_t)n) {
        PyErr_Format(PyExc_ValueError, "spindle.session: %s contains NUL", what);
        return NULL;
    }
    return p;
}

static PyObject *h_set(sess_obj *o, PyObject *args) {
    PyObject *key, *val;
    if (!PyArg_ParseTuple(args, "OO:set", &key, &val))
        return NULL;
    pyjob *j = opened(o);
    const char *k = j ? text(key, "a key") : NULL;
    const char *v = k ? text(val, "a value") : NULL;
    if (!v)
        return NULL;
    j->skey = k;
    j->sval = v;
    return run_op(j, SESS_SET, "setting a key");
}

static PyObject *h_delete(sess_obj *o, PyObject *key) {
    pyjob *j = opened(o);
    const char *k = j ? text(key, "a key") : NULL;
    if (!k)
        return NULL;
    j->skey = k;
    return run_op(j, SESS_DEL, "deleting a key");
}

static PyObject *h_clear(sess_obj *o, PyObject *unused) {
    pyjob *j = opened(o);
    return j ? run_op(j, SESS_CLEAR, "clear()") : NULL;
}

static PyObject *h_regenerate(sess_obj *o, PyObject *unused) {
    pyjob *j = opened(o);
    return j ? run_op(j, SESS_REGEN, "regenerate()") : NULL;
}

static PyObject *h_set_ttl(sess_obj *o, PyObject *arg) {
    pyjob *j = opened(o);
    long long secs = j ? PyLong_AsLongLong(arg) : -1;
    if (!j || (secs == -1 && PyErr_Occurred()))
        return NULL;
    j->sttl = secs;
    return run_op(j, SESS_TTL, "setting ttl");
}

static PyObject *h_id(sess_obj *o, PyObject *unused) {
    pyjob *j = opened(o);
    return j ? PyUnicode_FromString(sp_session_id(j->sess)) : NULL;
}

static PyObject *h_expiry(sess_obj *o, PyObject *unused) {
    pyjob *j = opened(o);
    return j ? PyLong_FromLongLong(sp_session_expiry(j->sess)) : NULL;
}

static PyMethodDef sess_methods[] = {
    {"get", (PyCFunction)h_get, METH_O, NULL},
    {"keys", (PyCFunction)h_keys, METH_NOARGS, NULL},
    {"set", (PyCFunction)h_set, METH_VARARGS, NULL},
    {"delete", (PyCFunction)h_delete, METH_O, NULL},
    {"clear", (PyCFunction)h_clear, METH_NOARGS, NULL},
    {"regenerate", (PyCFunction)h_regenerate, METH_NOARGS, NULL},
    {"set_ttl", (PyCFunction)h_set_ttl, METH_O, NULL},
    {"id", (PyCFunction)h_id, METH_NOARGS, NULL},
    {"expiry", (PyCFunction)h_expiry, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject sess_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_spindle.RequestHandle",
    .tp_basicsize = sizeof(sess_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = sess_methods,
    .tp_doc = "the request's session calls (spindle.session wraps them)",
};

int session_init_type(void) {
    hub_job_fns.op[OP_SESSION] = session_do;
    return PyType_Ready(&sess_type);
}
