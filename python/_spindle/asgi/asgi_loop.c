/* asgi_loop.c — asyncio on spindle's loop. spindle._asgi.Selector's select()
 * is _asgi_select here: one turn of spindle's loop (the worker's epoll and
 * timers; asyncio's own fds are level-triggered watches in the same epoll,
 * its next timer is the turn's timeout), then, on the main stack, what the
 * turn produced for Python: new requests become tasks, finished reads and
 * writes resolve the futures their callers await. No thread, no polling. */
#include "asgi/asgi.h"
#include "common/bus_py.h"

#include "base/log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

ahub the_ahub;

/* ---- asyncio's fds as loop watches ------------------------------------- */

typedef struct pywatch {
    loop_watch w;
    uint32_t got;
    int listed;
    struct pywatch *next; /* the ready list */
} pywatch;

static pywatch **watches; /* by fd */
static int nwatches;
static pywatch *ready_head;

static void on_ready(loop *l, loop_watch *w, uint32_t events) {
    pywatch *p = w->data;
    p->got |= events;
    if (!p->listed) {
        p->listed = 1;
        p->next = ready_head;
        ready_head = p;
    }
}

static void unwatch(int fd) {
    if (fd < 0 || fd >= nwatches || !watches[fd])
        return;
    pywatch *p = watches[fd];
    if (p->listed) {
        pywatch **pp = &ready_head;
        while (*pp && *pp != p)
            pp = &(*pp)->next;
        if (*pp)
            *pp = p->next;
    }
    loop_watch_del(loop_current(), &p->w);
    watches[fd] = NULL;
    PyMem_Free(p);
}

/* _asgi_watch(fd, events): watch fd for selectors' EVENT_READ (1) and/or
 * EVENT_WRITE (2), replacing an earlier watch of it. */
PyObject *py_asgi_watch(PyObject *self, PyObject *args) {
    int fd, events;
    if (!PyArg_ParseTuple(args, "ii:_asgi_watch", &fd, &events))
        return NULL;
    if (fd < 0 || !loop_current()) {
        PyErr_SetString(PyExc_ValueError, "_asgi_watch: a bad fd, or no loop in this process");
        return NULL;
    }
    if (fd >= nwatches) {
        int n = fd + 64;
        pywatch **v = PyMem_Realloc(watches, (size_t)n * sizeof *v);
        if (!v)
            return PyErr_NoMemory();
        for (int i = nwatches; i < n; i++)
            v[i] = NULL;
        watches = v;
        nwatches = n;
    }
    unwatch(fd);
    pywatch *p = PyMem_Calloc(1, sizeof *p);
    if (!p)
        return PyErr_NoMemory();
    p->w = (loop_watch){.fd = fd, .cb = on_ready, .data = p};
    backend_mode mode = (events & 3) == 3 ? BACKEND_RW_LEVEL
                        : events & 2      ? BACKEND_WRITE_LEVEL
                                          : BACKEND_READ_LEVEL;
    int rc = loop_watch_add(loop_current(), &p->w, mode);
    if (rc < 0) {
        PyMem_Free(p);
        errno = -rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    watches[fd] = p;
    Py_RETURN_NONE;
}

PyObject *py_asgi_unwatch(PyObject *self, PyObject *arg) {
    int fd = PyLong_AsLong(arg);
    if (fd == -1 && PyErr_Occurred())
        return NULL;
    unwatch(fd);
    Py_RETURN_NONE;
}

/* [(fd, events)] of the watches the turn saw ready; a hang-up or error
 * counts as both (the read or write then sees it). */
static PyObject *ready_list(void) {
    PyObject *out = PyList_New(0);
    while (out && ready_head) {
        pywatch *p = ready_head;
        ready_head = p->next;
        p->listed = 0;
        uint32_t g = p->got;
        p->got = 0;
        int ev = 0;
        if (g & (LOOP_READ | LOOP_HUP | LOOP_RDHUP))
            ev |= 1;
        if (g & (LOOP_WRITE | LOOP_HUP))
            ev |= 2;
        PyObject *t = Py_BuildValue("(ii)", p->w.fd, ev);
        if (!t || PyList_Append(out, t) < 0)
            Py_CLEAR(out);
        Py_XDECREF(t);
    }
    return out;
}

/* ---- the coroutine and the main stack ------------------------------------ */

void asgi_queue(acycle *c, uint32_t ev) {
    ahub *a = &the_ahub;
    c->ev |= ev;
    if (c->queued)
        return;
    c->queued = 1;
    c->next = NULL;
    if (a->ev_tail)
        a->ev_tail->next = c;
    else
        a->ev_head = c;
    a->ev_tail = c;
}

void asgi_wake(acycle *c) {
    if (c->parked && c->t) {
        c->parked = 0;
        loop_wake(the_ahub.h->l, c->t, 0);
    }
}

/* loop.create_future() without its Python frame: asyncio.Future(loop=loop). */
PyObject *asgi_future(void) {
    static PyObject *future_type, *kwnames;
    if (!future_type) {
        PyObject *asyncio = PyImport_ImportModule("asyncio");
        future_type = asyncio ? PyObject_GetAttrString(asyncio, "Future") : NULL;
        Py_XDECREF(asyncio);
        kwnames = future_type ? Py_BuildValue("(s)", "loop") : NULL;
        if (!kwnames)
            return NULL;
    }
    PyObject *args[] = {the_ahub.loop};
    return PyObject_Vectorcall(future_type, args, 0, kwnames);
}

void asgi_resolve(PyObject **fut, PyObject *v) {
    static PyObject *name;
    PyObject *f = *fut;
    *fut = NULL;
    if (!f) {
        Py_XDECREF(v);
        return;
    }
    if (!name)
        name = PyUnicode_InternFromString("set_result");
    PyObject *r = v && name ? PyObject_CallMethodOneArg(f, name, v) : NULL;
    if (!r)
        PyErr_Clear(); /* cancelled meanwhile: nobody waits */
    Py_XDECREF(r);
    Py_XDECREF(v);
    Py_DECREF(f);
}

/* The task's name, "spindle-http-N" or "spindle-websocket-N" (N counts the
 * worker's application calls): written here, since CPython 3.11's Task
 * formats "Task-N" with PyUnicode_FromFormat when given none, about 1,400
 * instructions of a ~33,000-instruction hello world. It also says what the
 * task is in asyncio.all_tasks() and in a "Task was destroyed" report. */
static PyObject *task_name(int ws) {
    static unsigned long long calls;
    char digits[20];
    int nd = 0;
    for (unsigned long long v = ++calls; v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    const char *pre = ws ? "spindle-websocket-" : "spindle-http-";
    size_t np = strlen(pre);
    PyObject *s = PyUnicode_New((Py_ssize_t)(np + (size_t)nd), 127);
    if (!s)
        return NULL;
    char *d = PyUnicode_DATA(s);
    memcpy(d, pre, np);
    for (int i = 0; i < nd; i++)
        d[np + (size_t)i] = digits[nd - 1 - i];
    return s;
}

/* The task of one application call: asyncio.Task(coro, loop=loop, name=...)
 * as loop.create_task makes it, without its Python frame, unless the app
 * set a task factory (then create_task, which calls it; asyncio names it). */
static PyObject *new_task(ahub *a, PyObject *coro, int ws) {
    static PyObject *factory_name, *kwnames;
    if (!factory_name) {
        factory_name = PyUnicode_InternFromString("_task_factory");
        kwnames = Py_BuildValue("(ss)", "loop", "name");
        if (!factory_name || !kwnames)
            return NULL;
    }
    PyObject *f = asgi_loop_attr(a->loop, factory_name);
    if (!f)
        PyErr_Clear();
    int plain = f == Py_None && a->task_type;
    Py_XDECREF(f);
    if (!plain)
        return PyObject_CallOneArg(a->create_task, coro);
    PyObject *name = task_name(ws);
    if (!name)
        return NULL;
    PyObject *args[] = {coro, a->loop, name};
    PyObject *t = PyObject_Vectorcall(a->task_type, args, 1, kwnames);
    Py_DECREF(name);
    return t;
}

/* Starts the application call of each request waiting for one (after the
 * lifespan startup, within --max-concurrent-app-calls). */
static int dispatch_new(ahub *a) {
    int did = 0;
    while (a->accepting && a->new_head && a->busy < a->h->max_busy) {
        anew *n = a->new_head;
        a->new_head = n->next;
        if (!a->new_head)
            a->new_tail = NULL;
        did = 1;
        PyObject *cyc = asgi_cycle_new(n);
        if (!cyc) {
            PyErr_Print();
            loop_wake(a->h->l, n->t, -ENOMEM);
            continue;
        }
        acycle *c = (acycle *)cyc;
        PyObject *scope = asgi_scope(c);
        PyObject *run_args[] = {a->h->app, scope, cyc};
        PyObject *coro = scope ? PyObject_Vectorcall(a->run, run_args, 3, NULL) : NULL;
        PyObject *t = coro ? new_task(a, coro, c->is_ws) : NULL;
        Py_XDECREF(coro);
        Py_XDECREF(scope);
        if (!t) {
            log_msg(LOG_ERROR, "cannot start the ASGI application call:");
            PyErr_Print();
            c->app_done = 1;
            c->op |= A_ERROR500;
        } else {
            a->busy++;
        }
        Py_XDECREF(t);
        n->cycle = c;  /* the coroutine's reference, dropped at EV_END */
        c->parked = 1; /* in its first park, until an op wakes it */
        if (n->hup)
            c->disconnected = 1;
        if (c->op)
            asgi_wake(c);
    }
    return did;
}

static void drain_events(ahub *a) {
    while (a->ev_head) {
        acycle *c = a->ev_head;
        a->ev_head = c->next;
        if (!a->ev_head)
            a->ev_tail = NULL;
        c->queued = 0;
        uint32_t ev = c->ev;
        c->ev = 0;
        asgi_events(c, ev); /* may drop the coroutine's reference (EV_END) */
    }
}

/* The server is done (stopped, every connection closed): the worker's
 * asyncio main may go on to the lifespan shutdown. Not before it said it
 * serves (on_done): a stop that came while the worker started (a TERM in
 * its lifespan startup) makes the server done at once, and the news must
 * wait for someone to hear it. */
static void tell_done(ahub *a) {
    if (a->started && !a->done_told && a->on_done && server_done(a->h->s)) {
        a->done_told = 1;
        if (a->on_done) {
            PyObject *r = PyObject_CallNoArgs(a->on_done);
            if (!r)
                PyErr_Print();
            Py_XDECREF(r);
        }
    }
}

/* _asgi_select(timeout) -> [(fd, events)]: one turn. Work already queued
 * for Python makes it a turn without waiting, and without even polling
 * (epoll) unless 8 turns went by so: I/O is never starved. */
PyObject *py_asgi_select(PyObject *self, PyObject *arg) {
    ahub *a = &the_ahub;
    loop *l = a->h->l;
    int ms = -1;
    if (arg != Py_None) {
        double t = PyFloat_AsDouble(arg);
        if (t == -1 && PyErr_Occurred())
            return NULL;
        ms = t <= 0 ? 0 : t > 86400 ? 86400000 : (int)ceil(t * 1000.0);
    }
    if (loop_has_ready(l))
        loop_run_pending(l);
    int work = a->ev_head || asgi_bus_pending() ||
               (a->accepting && a->new_head && a->busy < a->h->max_busy);
    if (work)
        ms = 0;
    if (!work || ++a->polls_skipped >= 8) {
        a->polls_skipped = 0;
        int rc;
        if (ms != 0) {
            Py_BEGIN_ALLOW_THREADS rc = sp_poll(ms);
            Py_END_ALLOW_THREADS
        } else {
            rc = sp_poll(0);
        }
        if (rc < 0 && rc != -EINTR) {
            errno = -rc;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    for (int i = 0; i < 4 && loop_has_ready(l); i++)
        loop_run_pending(l);
    dispatch_new(a);
    drain_events(a);
    asgi_bus_drain();
    if (a->h->stop_asked && !a->stop_told) {
        a->stop_told = 1;
        asgi_ws_stop_all();
    }
    tell_done(a);
    return ready_list();
}

/* _asgi_serving(state, on_done): the lifespan startup is over; requests
 * are dispatched from now on (with scope["state"] copied from state, a
 * dict or None), and on_done() is called once the server is done. */
PyObject *py_asgi_serving(PyObject *self, PyObject *args) {
    ahub *a = &the_ahub;
    PyObject *state, *on_done;
    if (!PyArg_ParseTuple(args, "OO:_asgi_serving", &state, &on_done))
        return NULL;
    Py_XSETREF(a->state, state == Py_None ? NULL : Py_NewRef(state));
    Py_XSETREF(a->on_done, Py_NewRef(on_done));
    a->accepting = 1;
    Py_RETURN_NONE;
}

/* ---- the worker ----------------------------------------------------------- */

static PyObject *asgi_mod(void) {
    return PyImport_ImportModule("spindle._asgi");
}

/* In each worker, after the import: the asyncio loop and the lifespan
 * startup. A failed startup (with --lifespan on, or the app's own
 * lifespan.startup.failed) stops the worker: the master does not restart
 * a worker that cannot boot. */
int asgi_worker_init(hub *h) {
    ahub *a = &the_ahub;
    a->h = h;
    h->l = loop_current();
    if (asgi_scope_init() < 0)
        return -1;
    PyObject *mod = asgi_mod();
    PyObject *r = mod ? PyObject_CallMethod(mod, "worker_start", "Os", h->app,
                                            h->lifespan ? h->lifespan : "auto")
                      : NULL;
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 3) {
        a->loop = Py_NewRef(PyTuple_GET_ITEM(r, 0));
        a->run = Py_NewRef(PyTuple_GET_ITEM(r, 1));
        a->create_task = PyObject_GetAttrString(a->loop, "create_task");
        PyObject *asyncio = PyImport_ImportModule("asyncio");
        a->task_type = asyncio ? PyObject_GetAttrString(asyncio, "Task") : NULL;
        Py_XDECREF(asyncio);
        PyErr_Clear(); /* without it, create_task does */
    }
    int ok = r && PyObject_IsTrue(PyTuple_GET_ITEM(r, 2)) == 1 && a->create_task;
    if (!ok && PyErr_Occurred())
        PyErr_Print();
    Py_XDECREF(r);
    Py_XDECREF(mod);
    return ok ? 0 : -1;
}

int asgi_drive(sp_server *s, void *ud) {
    hub *h = ud;
    ahub *a = &the_ahub;
    h->s = s;
    h->l = loop_current();
    h->thread = PyThread_get_thread_ident();
    int rc = server_start(s, h->l);
    if (rc < 0)
        return rc;
    a->started = 1;
    PyObject *mod = asgi_mod();
    PyObject *r = mod ? PyObject_CallMethod(mod, "worker_serve", NULL) : NULL;
    if (!r)
        PyErr_Print();
    Py_XDECREF(r);
    Py_XDECREF(mod);
    /* Whatever asyncio did, the connections still open end here. */
    while (!server_done(s)) {
        Py_BEGIN_ALLOW_THREADS rc = sp_poll(100);
        Py_END_ALLOW_THREADS if (rc < 0) break;
        drain_events(a);
    }
    if (server_loop(s))
        server_finish(s);
    return 0;
}
