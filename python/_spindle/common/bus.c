/* bus.c — the bus from Python: the calls (sp_bus_* may yield with Redis,
 * so each runs on a coroutine: the request's, as OP_BUS with its greenlet
 * parked, or one started for the call in a greenlet outside any request),
 * the subscription object, BusError, and closing a request's subscriptions
 * when it ends. asgi_bus.c gives the same calls as awaitables. */
#include "common/bus_py.h"

#include "server/bus/bus_embed.h"

#include <errno.h>
#include <string.h>

static PyObject *bus_error; /* spindle.BusError, an OSError */
static PyTypeObject sub_type;
static Py_ssize_t nopen; /* subscription objects not closed (for _bus_stats) */

/* ---- the calls, on a coroutine -------------------------------------------- */

void bus_call_run(bus_call *c) {
    sp_server *s = the_hub->s;
    switch (c->what) {
    case BUS_PUBLISH:
        c->rc = sp_bus_publish(s, c->topic, c->data, c->len, c->id);
        break;
    case BUS_SUBSCRIBE:
        c->sub = sp_bus_subscribe(s, c->topic, c->since);
        c->rc = c->sub ? 0 : -errno;
        break;
    case BUS_RECV:
        c->rc = c->so->sub ? sp_bus_recv(c->so->sub, &c->msg, c->timeout_ms) : -EBADF;
        if (c->rc == -ECONNRESET) {
            /* The same errno says "Redis went away": the hang-up of the
             * task's connection tells the two apart. */
            loop_watch *hw = loop_task_hup_watch(loop_task(loop_current()));
            c->client_left = hw && (hw->hup & (LOOP_HUP | LOOP_RDHUP));
        }
        break;
    default:
        c->rc = -EINVAL;
    }
}

bus_call *bus_call_new(int what, PyObject *keep) {
    bus_call *c = PyMem_Calloc(1, sizeof *c);
    if (!c) {
        Py_XDECREF(keep);
        PyErr_NoMemory();
        return NULL;
    }
    c->what = what;
    c->keep = keep;
    c->timeout_ms = -1;
    return c;
}

void bus_call_free(bus_call *c) {
    if (!c)
        return;
    Py_XDECREF(c->keep);
    Py_XDECREF(c->wake.greenlet);
    Py_XDECREF(c->fut);
    PyMem_Free(c);
}

/* ---- errors ------------------------------------------------------------------ */

static PyObject *raise_bus(int rc, const bus_call *c) {
    const char *why;
    int e = -rc;
    switch (e) {
    case ENXIO:
        why = "no bus is configured (the server was started with --bus off): start it "
              "without that, or with --bus memory (this machine's workers) or "
              "--bus redis://HOST[:PORT] (several machines)";
        break;
    case EINVAL:
        why = "invalid topic (1 to 200 bytes, no spaces or control characters) or since id "
              "(\"MS-SEQ\", \"MS\" or \"0\")";
        break;
    case EMSGSIZE:
        why = "the message is over the bus's max_message (--bus ...?max_message=BYTES); it "
              "was not published";
        break;
    case ECONNREFUSED:
    case ETIMEDOUT:
        why = "Redis is unreachable; nothing was published or subscribed";
        break;
    case ECONNRESET:
        why = c && c->what == BUS_RECV
                  ? c->client_left ? "the client hung up while the subscription waited"
                                   : "Redis became unreachable; the subscription stays and "
                                     "resumes from its last id once Redis is back: recv again"
                  : "Redis is unreachable; nothing was published or subscribed";
        break;
    case EIO:
        why = "Redis answered with an error (see the server's log); nothing was published";
        break;
    case EPIPE:
        why = "the subscription was cut for being slow (its queue filled): subscribe again "
              "from its last_id to catch up";
        break;
    case ESHUTDOWN:
        why = "the server is stopping";
        break;
    case EBADF:
        why = "the subscription is closed";
        break;
    case ENOMEM:
        why = "out of memory";
        break;
    default:
        why = strerror(e);
    }
    PyObject *v = Py_BuildValue("(is)", e, why);
    if (v) {
        PyErr_SetObject(bus_error, v);
        Py_DECREF(v);
    }
    return NULL;
}

/* ---- arguments ---------------------------------------------------------------- */

static const char *topic_of(PyObject *t) {
    if (!PyUnicode_Check(t)) {
        PyErr_Format(PyExc_TypeError, "a bus topic is a str, not %.80s", Py_TYPE(t)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(t, &n);
    if (p && strlen(p) != (size_t)n) {
        raise_bus(-EINVAL, NULL);
        return NULL;
    }
    return p;
}

int bus_args_publish(bus_call *c, PyObject *topic, PyObject *data) {
    if (!(c->topic = topic_of(topic)))
        return -1;
    Py_ssize_t n;
    if (PyUnicode_Check(data)) {
        c->data = PyUnicode_AsUTF8AndSize(data, &n);
    } else if (PyBytes_Check(data)) {
        c->data = PyBytes_AS_STRING(data);
        n = PyBytes_GET_SIZE(data);
    } else {
        PyErr_Format(PyExc_TypeError, "spindle.publish: data is bytes or str, not %.80s",
                     Py_TYPE(data)->tp_name);
        return -1;
    }
    if (!c->data)
        return -1;
    c->len = (size_t)n;
    return 0;
}

int bus_args_subscribe(bus_call *c, PyObject *topic, PyObject *since) {
    if (!(c->topic = topic_of(topic)))
        return -1;
    if (since == Py_None)
        return 0;
    if (!PyUnicode_Check(since)) {
        PyErr_Format(PyExc_TypeError, "spindle.subscribe: since is an id (str) or None, not %.80s",
                     Py_TYPE(since)->tp_name);
        return -1;
    }
    return (c->since = PyUnicode_AsUTF8(since)) ? 0 : -1;
}

/* ---- subscriptions -------------------------------------------------------------- */

PyObject *bus_sub_new(PyObject *topic, sp_bus_sub *sub) {
    bus_sub_obj *so = PyObject_New(bus_sub_obj, &sub_type);
    if (!so) {
        sp_bus_unsubscribe(sub);
        return NULL;
    }
    memset((char *)so + sizeof(PyObject), 0, sizeof *so - sizeof(PyObject));
    so->sub = sub;
    so->topic = Py_NewRef(topic);
    nopen++;
    return (PyObject *)so;
}

void bus_sub_own(bus_sub_obj *so, void *owner, bus_sub_obj **list) {
    so->owner = owner;
    so->list = list;
    so->prev = NULL;
    so->next = *list;
    if (*list)
        (*list)->prev = so;
    *list = so;
}

static void unlist(bus_sub_obj *so) {
    if (!so->list)
        return;
    if (so->prev)
        so->prev->next = so->next;
    else
        *so->list = so->next;
    if (so->next)
        so->next->prev = so->prev;
    so->list = NULL;
    so->owner = NULL;
    so->prev = so->next = NULL;
}

/* Ends the C subscription now, or, with a recv waiting on a coroutine,
 * makes that recv return (-ESHUTDOWN, the bus's own stop) and ends it
 * when it does (recv_done): freeing it under a parked recv would crash. */
static void sub_close(bus_sub_obj *so) {
    unlist(so);
    if (!so->sub || so->closing)
        return;
    memcpy(so->last, sp_bus_last_id(so->sub), sizeof so->last);
    if (so->inflight) {
        so->closing = 1;
        bus_sub_interrupt(so->sub);
        return;
    }
    sp_bus_unsubscribe(so->sub);
    so->sub = NULL;
    nopen--;
}

void bus_release_list(bus_sub_obj **list) {
    while (*list)
        sub_close(*list);
}

void bus_hangup_list(bus_sub_obj **list) {
    for (bus_sub_obj *so = *list; so; so = so->next)
        so->hup = 1;
    bus_release_list(list);
}

void bus_release_job(pyjob *j) {
    bus_release_list(&j->bus_subs);
}

/* A recv's coroutine is done with so. */
static void recv_done(bus_sub_obj *so) {
    so->inflight = NULL;
    if (so->closing) {
        so->closing = 0;
        sp_bus_unsubscribe(so->sub);
        so->sub = NULL;
        nopen--;
    }
}

int bus_recv_prepare(bus_sub_obj *so, PyObject *timeout, bus_call **out) {
    double ms;
    if (hub_timeout_ms(timeout, &ms) < 0)
        return -1;
    if (so->inflight) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Subscription.recv: another recv of this subscription is waiting");
        return -1;
    }
    if (!so->sub || so->closing) {
        raise_bus(-EBADF, NULL);
        return -1;
    }
    bus_call *c = bus_call_new(BUS_RECV, Py_NewRef((PyObject *)so));
    if (!c)
        return -1;
    c->so = so;
    c->timeout_ms = ms < 0 ? -1 : (int64_t)ms;
    so->inflight = c;
    *out = c;
    return 0;
}

PyObject *bus_call_result(bus_call *c) {
    if (c->what == BUS_RECV) {
        bus_sub_obj *so = c->so;
        PyObject *r = NULL;
        if (c->rc == 1)
            r = Py_BuildValue("(sOy#)", c->msg.id, so->topic, (const char *)c->msg.data,
                              (Py_ssize_t)c->msg.len);
        recv_done(so);
        if (c->rc == 0)
            Py_RETURN_NONE;
        if (c->rc == -ESHUTDOWN && !so->sub) { /* closed while it waited */
            c->client_left = so->hup;
            return raise_bus(so->hup ? -ECONNRESET : -EBADF, c);
        }
        return c->rc < 0 ? raise_bus(c->rc, c) : r;
    }
    if (c->rc < 0)
        return raise_bus(c->rc, c);
    if (c->what == BUS_PUBLISH)
        return PyUnicode_FromString(c->id);
    PyObject *topic = PyTuple_GET_ITEM(c->keep, 0);
    PyObject *so = bus_sub_new(topic, c->sub);
    c->sub = NULL;
    return so;
}

/* ---- WSGI: the call on a coroutine, the greenlet waiting ---------------------- */

static void side_main(void *arg) {
    bus_call *c = arg;
    bus_call_run(c);
    hub_queue(the_hub, &c->wake);
}

/* Runs c for the current greenlet: on its request's coroutine, or on one
 * started for it (spindle.spawn, spindle.every: no request). 0, or -1
 * raised (not in a greenlet of a worker, or the wait was interrupted). */
static int run_here(bus_call *c, const char *what) {
    pyjob *j = hub_current_job();
    if (j) {
        j->bus_call = c;
        ssize_t r = hub_op(j, OP_BUS);
        j->bus_call = NULL;
        return r == -ECANCELED && PyErr_Occurred() ? -1 : 0;
    }
    if (!hub_in_greenlet(the_hub)) {
        PyErr_Format(PyExc_RuntimeError,
                     "spindle.%s works in a worker's greenlets (a WSGI request, spindle.spawn, "
                     "spindle.every), not at import, in a worker hook or on another thread; in "
                     "an ASGI application, await spindle.a%s()",
                     what, what);
        return -1;
    }
    c->wake.greenlet = hub_current();
    int rc = loop_spawn(the_hub->l, side_main, c);
    if (rc < 0) {
        c->rc = rc;
        return 0;
    }
    return hub_wait(&c->wake) < 0 && PyErr_Occurred() ? -1 : 0;
}

static ssize_t bus_do_op(pyjob *j) { /* OP_BUS, on the coroutine */
    bus_call_run(j->bus_call);
    return 0;
}

/* Runs a prepared call and frees it: its result, or NULL raised. */
static PyObject *finish(bus_call *c, const char *what) {
    PyObject *r = run_here(c, what) < 0 ? NULL : bus_call_result(c);
    if (!r && c->what == BUS_RECV && c->so->inflight == c)
        c->so->inflight = NULL; /* never ran: nothing holds the subscription */
    bus_call_free(c);
    return r;
}

PyObject *py_bus_publish(PyObject *self, PyObject *args) {
    PyObject *topic, *data;
    if (!PyArg_ParseTuple(args, "OO:publish", &topic, &data))
        return NULL;
    bus_call *c = bus_call_new(BUS_PUBLISH, Py_NewRef(args));
    if (!c)
        return NULL;
    if (bus_args_publish(c, topic, data) < 0) {
        bus_call_free(c);
        return NULL;
    }
    return finish(c, "publish");
}

PyObject *py_bus_subscribe(PyObject *self, PyObject *args) {
    PyObject *topic, *since = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:subscribe", &topic, &since))
        return NULL;
    bus_call *c = bus_call_new(BUS_SUBSCRIBE, Py_NewRef(args));
    if (!c)
        return NULL;
    if (bus_args_subscribe(c, topic, since) < 0) {
        bus_call_free(c);
        return NULL;
    }
    pyjob *j = hub_current_job();
    PyObject *so = finish(c, "subscribe");
    if (so && j) /* the request's until it ends */
        bus_sub_own((bus_sub_obj *)so, j, &j->bus_subs);
    return so;
}

/* ---- the object ------------------------------------------------------------------ */

static PyObject *sub_recv(bus_sub_obj *so, PyObject *args) {
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTuple(args, "|O:recv", &timeout))
        return NULL;
    if (so->stash) {
        PyObject *m = so->stash;
        so->stash = NULL;
        return m;
    }
    bus_call *c;
    if (bus_recv_prepare(so, timeout, &c) < 0)
        return NULL;
    return finish(c, "subscribe (its recv)");
}

static PyObject *sub_close_m(bus_sub_obj *so, PyObject *unused) {
    sub_close(so);
    Py_RETURN_NONE;
}

static PyObject *sub_last_id(bus_sub_obj *so, void *unused) {
    return PyUnicode_FromString(so->sub && !so->closing ? sp_bus_last_id(so->sub) : so->last);
}

static PyObject *sub_closed(bus_sub_obj *so, void *unused) {
    return PyBool_FromLong(!so->sub || so->closing);
}

static PyObject *sub_topic(bus_sub_obj *so, void *unused) {
    return Py_NewRef(so->topic);
}

static void sub_dealloc(bus_sub_obj *so) {
    sub_close(so); /* never inflight here: the call holds a reference */
    Py_XDECREF(so->topic);
    Py_XDECREF(so->stash);
    PyObject_Free(so);
}

PyObject *(*bus_arecv)(bus_sub_obj *so, PyObject *args);

static PyObject *sub_arecv(bus_sub_obj *so, PyObject *args) {
    if (!bus_arecv) {
        PyErr_SetString(PyExc_RuntimeError, "arecv needs the ASGI side of the binding");
        return NULL;
    }
    return bus_arecv(so, args);
}

static PyMethodDef sub_methods[] = {
    {"recv", (PyCFunction)sub_recv, METH_VARARGS,
     "recv(timeout=None) -> (id, topic, data) or None on timeout"},
    {"arecv", (PyCFunction)sub_arecv, METH_VARARGS,
     "arecv(timeout=None) -> awaitable of (id, topic, data) or None"},
    {"close", (PyCFunction)sub_close_m, METH_NOARGS, "close(): ends the subscription"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef sub_getset[] = {
    {"last_id", (getter)sub_last_id, NULL, "the id of the last message received", NULL},
    {"closed", (getter)sub_closed, NULL, NULL, NULL},
    {"topic", (getter)sub_topic, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject sub_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle._BusSubscription",
    .tp_basicsize = sizeof(bus_sub_obj),
    .tp_dealloc = (destructor)sub_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = sub_methods,
    .tp_getset = sub_getset,
};

/* _bus_stats() -> {"subscribers": the C bus's subscribers in this process,
 * "open": subscription objects not closed}: how tests see leaks. */
PyObject *py_bus_stats(PyObject *self, PyObject *unused) {
    long n = (long)bus_subscriber_count(the_hub ? the_hub->s : NULL);
    return Py_BuildValue("{sl,sn}", "subscribers", n, "open", nopen);
}

int bus_init(PyObject *module) {
    hub_job_fns.op[OP_BUS] = bus_do_op;
    if (PyType_Ready(&sub_type) < 0)
        return -1;
    bus_error = PyErr_NewExceptionWithDoc(
        "spindle.BusError",
        "a bus call failed; errno says why (ENXIO: no --bus, ECONNREFUSED/ECONNRESET/"
        "ETIMEDOUT: Redis unreachable, EMSGSIZE, EINVAL, EPIPE: cut for being slow)",
        PyExc_OSError, NULL);
    return bus_error ? PyModule_AddObjectRef(module, "BusError", bus_error) : -1;
}
