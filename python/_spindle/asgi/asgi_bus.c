/* asgi_bus.c — the bus calls as awaitables for ASGI: the asyncio loop runs
 * on the main stack, so each call gets a coroutine of its own (request or
 * not: a lifespan task may publish too) and an asyncio future, resolved on
 * the loop's next turn (asgi_bus_drain, from _asgi_select) once it is done.
 * A subscription made in a request is closed at that request's EV_END. */
#include "asgi/asgi.h"
#include "common/bus_py.h"

#include "server/bus/bus_embed.h"

#include <errno.h>

static bus_call *done_head, *done_tail; /* finished on a coroutine, not yet resolved */

static void call_main(void *arg) {
    bus_call *c = arg;
    for (;;) {
        bus_call_run(c);
        /* A recv taken over (take_over) was interrupted, or ran out of its
         * old time: it goes on with the new caller's timeout. */
        if (!c->restart || (c->rc != -ESHUTDOWN && c->rc != 0) || c->so->closing || !c->so->sub)
            break;
        c->restart = 0;
        bus_sub_resume(c->so->sub);
    }
    c->next = NULL;
    if (done_tail)
        done_tail->next = c;
    else
        done_head = c;
    done_tail = c;
}

int asgi_bus_pending(void) {
    return done_head != NULL;
}

/* Starts c on a new coroutine: its future (a new reference), or NULL. */
static PyObject *start(bus_call *c, const char *what) {
    if (!the_ahub.loop || !the_ahub.h || !the_ahub.h->l ||
        PyThread_get_thread_ident() != the_ahub.h->thread) {
        PyErr_Format(PyExc_RuntimeError,
                     "spindle.a%s works in an ASGI application's event loop, in a worker (a "
                     "request, or a task of the lifespan); in a WSGI application, call "
                     "spindle.%s()",
                     what, what);
        goto fail;
    }
    if (!the_ahub.h->s) { /* the lifespan startup: the server is not serving yet */
        PyErr_Format(PyExc_RuntimeError,
                     "spindle.a%s works once the server serves (in a request, or a task the "
                     "lifespan startup created), not during the lifespan startup itself",
                     what);
        goto fail;
    }
    if (!(c->fut = asgi_future()))
        goto fail;
    int rc = loop_spawn(the_ahub.h->l, call_main, c);
    if (rc < 0) {
        errno = -rc;
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    return Py_NewRef(c->fut);
fail:
    if (c->what == BUS_RECV)
        c->so->inflight = NULL;
    bus_call_free(c);
    return NULL;
}

static int cancelled(PyObject *fut) {
    PyObject *r = PyObject_CallMethod(fut, "cancelled", NULL);
    int yes = r == Py_True;
    Py_XDECREF(r);
    PyErr_Clear();
    return yes;
}

static void resolve(bus_call *c) {
    PyObject *fut = c->fut;
    int gone = cancelled(fut);
    PyObject *v = bus_call_result(c);
    if (gone) {
        /* Nobody awaits it (asyncio.wait_for's timeout, a cancelled task):
         * a received message is kept for the next recv, not lost. */
        if (v && v != Py_None && c->what == BUS_RECV && !c->so->stash)
            c->so->stash = Py_NewRef(v);
        Py_XDECREF(v);
        PyErr_Clear();
        return;
    }
    acycle *owner = c->owner;
    if (v && c->what == BUS_SUBSCRIBE && owner && !owner->gone)
        bus_sub_own((bus_sub_obj *)v, owner, (bus_sub_obj **)&owner->bus_subs);
    PyObject *r;
    if (v) {
        r = PyObject_CallMethod(fut, "set_result", "(O)", v); /* v may be a tuple */
        Py_DECREF(v);
    } else {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        if (tb)
            PyException_SetTraceback(ev, tb);
        r = PyObject_CallMethod(fut, "set_exception", "(O)", ev);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    }
    if (!r)
        PyErr_Clear();
    Py_XDECREF(r);
}

int asgi_bus_drain(void) {
    int did = done_head != NULL;
    while (done_head) {
        bus_call *c = done_head;
        done_head = c->next;
        if (!done_head)
            done_tail = NULL;
        resolve(c);
        bus_call_free(c);
    }
    return did;
}

/* _bus_apublish(topic, data) -> awaitable of the id */
PyObject *py_bus_apublish(PyObject *self, PyObject *args) {
    PyObject *topic, *data;
    if (!PyArg_ParseTuple(args, "OO:apublish", &topic, &data))
        return NULL;
    bus_call *c = bus_call_new(BUS_PUBLISH, Py_NewRef(args));
    if (!c)
        return NULL;
    if (bus_args_publish(c, topic, data) < 0) {
        bus_call_free(c);
        return NULL;
    }
    return start(c, "publish");
}

/* _bus_asubscribe(topic, since, cycle) -> awaitable of the subscription,
 * which belongs to cycle's request (None: to nobody). */
PyObject *py_bus_asubscribe(PyObject *self, PyObject *args) {
    PyObject *topic, *since, *cycle;
    if (!PyArg_ParseTuple(args, "OOO:asubscribe", &topic, &since, &cycle))
        return NULL;
    bus_call *c = bus_call_new(BUS_SUBSCRIBE, Py_NewRef(args)); /* keeps cycle alive */
    if (!c)
        return NULL;
    if (bus_args_subscribe(c, topic, since) < 0) {
        bus_call_free(c);
        return NULL;
    }
    if (cycle != Py_None)
        c->owner = (acycle *)cycle; /* only spindle._asgi passes one: its cycle */
    return start(c, "subscribe");
}

/* A recv whose awaiter was cancelled (asyncio.wait_for) is still parked
 * on its coroutine: a new recv takes it over — its future now, its
 * timeout once the parked one is interrupted (the bus's stop flag, reset
 * by call_main) — so the message it may get is this caller's, not lost. */
static PyObject *take_over(bus_sub_obj *so, PyObject *timeout) {
    bus_call *c = so->inflight;
    double ms;
    if (hub_timeout_ms(timeout, &ms) < 0)
        return NULL;
    PyObject *fut = asgi_future();
    if (!fut)
        return NULL;
    Py_SETREF(c->fut, fut);
    c->timeout_ms = ms < 0 ? -1 : (int64_t)ms;
    c->restart = 1;
    bus_sub_interrupt(so->sub);
    return Py_NewRef(fut);
}

PyObject *bus_sub_arecv(bus_sub_obj *so, PyObject *args) {
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTuple(args, "|O:arecv", &timeout))
        return NULL;
    if (so->stash) {
        PyObject *m = so->stash;
        so->stash = NULL;
        return asgi_ready(m);
    }
    if (so->inflight && so->inflight->fut && so->sub && !so->closing &&
        cancelled(so->inflight->fut))
        return take_over(so, timeout);
    bus_call *c;
    if (bus_recv_prepare(so, timeout, &c) < 0)
        return NULL;
    return start(c, "subscribe (its recv)");
}
