/* hub.c — the hub: the worker's main greenlet drives the loop. Between
 * loop turns it runs the first new job (a WSGI call) itself (run_inline: no greenlet
 * switch for a call that never waits; if it waits, the hub drives the loop
 * from inside that wait), starts a pooled greenlet for each other one and
 * resumes greenlets whose wait is over; greenlets switch back to it (to
 * hub->driver: whoever drives the loop) whenever they wait (for a
 * coroutine's I/O, a timer, an fd). The GIL is released
 * while the loop waits. All greenlet calls live in this file (greenlet's C
 * API table is per translation unit; green_wait.c goes through hub_wait). */
#include "common/binding.h"

#include "greenlet.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

hub *the_hub;
hub_jobs hub_job_fns;

int hub_import_greenlet(void);
int hub_import_greenlet(void) {
    PyGreenlet_Import();
    return _PyGreenlet_API ? 0 : -1;
}

int hub_in_greenlet(const hub *h) {
    /* Another thread of the app (an exporter, a ThreadPoolExecutor) has its
     * own greenlets: switching to the hub from there would fail. */
    if (!h || !h->hub_g || PyThread_get_thread_ident() != h->thread)
        return 0;
    PyGreenlet *cur = PyGreenlet_GetCurrent();
    int in = cur && ((PyObject *)cur != h->driver || h->inline_active);
    Py_XDECREF(cur);
    return in;
}

void hub_queue(hub *h, hub_wake *w) {
    if (w->queued)
        return;
    w->queued = 1;
    w->next = NULL;
    if (h->ready_tail)
        h->ready_tail->next = w;
    else
        h->ready_head = w;
    h->ready_tail = w;
}

void hub_unqueue(hub *h, hub_wake *w) {
    if (!w->queued)
        return;
    w->queued = 0;
    hub_wake **pp = &h->ready_head;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (!*pp)
        return;
    *pp = w->next;
    if (h->ready_tail == w) {
        h->ready_tail = NULL;
        for (hub_wake *x = h->ready_head; x; x = x->next)
            h->ready_tail = x;
    }
}

/* Keeps a reference to drop later; called by coroutines, without the GIL. */
static void hub_garbage(hub *h, PyObject *o) {
    if (h->ngarbage == h->garbage_cap) {
        size_t cap = h->garbage_cap ? h->garbage_cap * 2 : 64;
        PyObject **v = realloc(h->garbage, cap * sizeof *v);
        if (!v)
            return; /* leak one reference rather than touch Python here */
        h->garbage = v;
        h->garbage_cap = cap;
    }
    h->garbage[h->ngarbage++] = o;
}

pyjob *hub_current_job(void) {
    hub *h = the_hub;
    if (!hub_in_greenlet(h))
        return NULL;
    PyObject *cur = (PyObject *)PyGreenlet_GetCurrent();
    pyjob *j = !cur ? NULL : cur == h->hub_g ? h->inline_job : job_table_get(cur);
    Py_XDECREF(cur);
    return j;
}

PyObject *hub_current(void) {
    return (PyObject *)PyGreenlet_GetCurrent();
}

static long nested_wait(hub *h, hub_wake *w);

long hub_wait(hub_wake *w) {
    hub *h = the_hub;
    /* While the hub runs an inline call's app code, nobody drives the loop:
     * the waiting greenlet (the hub, or one the app switched to) does. */
    if (h->inline_active)
        return nested_wait(h, w);
    PyObject *r = PyGreenlet_Switch((PyGreenlet *)h->driver, NULL, NULL);
    if (!r)
        return -1;
    Py_DECREF(r);
    return w->result;
}

ssize_t hub_op(pyjob *j, int op) {
    j->op = op; /* j->wake.greenlet is the current greenlet (start_job) */
    loop_wake(j->h->l, j->t, 0);
    if (hub_wait(&j->wake) < 0 && PyErr_Occurred())
        return -ECANCELED;
    return j->result;
}

void hub_op_last(pyjob *j, int op, PyObject *keep) {
    j->op = op;
    j->finish_after = 1;
    j->app_done = 1;
    Py_XINCREF(keep);
    j->keep = keep;
    loop_wake(j->h->l, j->t, 0);
}

/* ---- the coroutine side of a job ------------------------------------------ */

static int64_t coarse_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An app that blocked the loop (time.sleep, a slow query without green
 * I/O) kept the hang-up from being seen: before its head goes out, a peek
 * asks the socket (EOF or a reset: the client left, as nginx decides it).
 * Only an HTTP/1 call that took a while pays for the syscall. */
static int left_meanwhile(const pyjob *j) {
    if (j->gone || coarse_ms() - j->began_ms < 10)
        return j->gone;
    return req_client_left(j->req); /* 0 for an HTTP/2 stream */
}

static void do_op(pyjob *j) {
    ssize_t r = 0;
    switch (j->op) {
    case OP_WRITE:
    case OP_SENDFILE:
        if (!res_get_head_sent(j->res) && (j->gone = left_meanwhile(j))) {
            /* The client hung up while the app ran: no answer to give,
             * and -ECONNRESET has the server log a 499, not a failure. */
            r = -ECONNRESET;
            break;
        }
        if (j->op == OP_SENDFILE) {
            r = sp_res_sendfile(j->res, j->fd, j->off, j->count);
            break;
        }
        r = j->len || !res_get_head_sent(j->res) ? sp_res_write(j->res, j->data, j->len) : 0;
        break;
    case OP_READ:
        r = sp_read(j->req, j->rbuf, j->len);
        break;
    case OP_FINISH:
        r = sp_res_finish(j->res);
        break;
    case OP_HINTS:
        r = sp_res_early_hints(j->res, j->hints, j->nhints);
        break;
    default: /* the ops of sessions, WebSockets, the bus: their own files' */
        if (j->op > OP_NONE && j->op < OP_COUNT && hub_job_fns.op[j->op])
            r = hub_job_fns.op[j->op](j);
        break;
    }
    if (r >= 0 && j->finish_after && j->op != OP_FINISH)
        r = sp_res_finish(j->res);
    j->result = r;
    j->op = OP_NONE;
}

int hub_handler(sp_req *req, sp_res *res, void *ud) {
    hub *h = ud;
    pyjob j = {.req = req, .res = res, .t = loop_task(h->l), .h = h, .began_ms = coarse_ms()};
    req_get_info(req, &j.ri);
    if (h->pending_tail)
        h->pending_tail->next = &j;
    else
        h->pending_head = &j;
    h->pending_tail = &j;
    loop_watch *hw = loop_task_hup_watch(j.t);
    for (;;) {
        /* Watching for a hang-up while the app runs (as ASGI does): a
         * client gone before the answer is not answered. */
        if (loop_park(h->l, LOOP_NO_DEADLINE, j.gone ? NULL : hw) == -ECONNRESET)
            j.gone = 1;
        if (j.op != OP_NONE) {
            do_op(&j);
            if (j.keep) {
                hub_garbage(h, j.keep);
                j.keep = NULL;
            }
            if (j.result < 0 && j.app_done && j.app_rc == 0)
                j.app_rc = (int)j.result;
            if (!j.app_done) {
                hub_queue(h, &j.wake);
                continue;
            }
        }
        if (j.app_done)
            return j.app_rc;
    }
}

/* ---- greenlets ---------------------------------------------------------- */

/* The first request waiting for a greenlet, taken off the queue, if the
 * --max-concurrent bound allows one more; else NULL. */
static pyjob *next_pending(hub *h) {
    pyjob *j = h->pending_head;
    if (!j || h->busy >= h->max_busy)
        return NULL;
    h->pending_head = j->next;
    if (!h->pending_head)
        h->pending_tail = NULL;
    j->next = NULL;
    return j;
}

/* The body of every pooled greenlet: serve the assigned job, go back to the
 * pool, wait for the next one. While the hub is starting the waiting
 * requests (run_python), a greenlet whose call ended takes the next one
 * itself: the hub would give it this same greenlet (the pool is a stack)
 * with nothing done in between, so only the two switches are saved. */
static PyObject *greenlet_jobs(void) {
    hub *h = the_hub;
    pyjob *next = NULL;
    for (;;) {
        pyjob *j = next ? next : h->assign;
        if (!next)
            h->assign = NULL;
        next = NULL;
        /* The job held the reference that kept this greenlet alive while it
         * was parked; the pool takes it over. j is still valid here: its
         * coroutine runs only after we switch back to the hub. */
        PyObject *me = j->wake.greenlet;
        (void)job_table_put(me, j); /* only spindle.websocket needs it: it says so */
        hub_job_fns.run(h, j);
        bus_release_job(j);
        frame_chunk_after_call(0);
        job_table_del(me);
        j->wake.greenlet = NULL;
        h->busy--;
        if (h->starting && (next = next_pending(h))) {
            h->busy++;
            next->wake.greenlet = me; /* the reference passes to the next job */
            continue;
        }
        if (h->nidle == h->idle_cap) {
            size_t cap = h->idle_cap ? h->idle_cap * 2 : 32;
            PyObject **v = PyMem_Realloc(h->idle_g, cap * sizeof *v);
            if (!v) {
                Py_DECREF(me);
                return PyErr_NoMemory();
            }
            h->idle_g = v;
            h->idle_cap = cap;
        }
        h->idle_g[h->nidle++] = me;
        PyObject *r = PyGreenlet_Switch((PyGreenlet *)h->driver, NULL, NULL);
        if (!r)
            return NULL; /* GreenletExit: the worker is stopping */
        Py_DECREF(r);
    }
}

/* The greenlet's run: its jobs, its frames in a small chunk meanwhile. */
static PyObject *greenlet_main(PyObject *self, PyObject *unused) {
    frame_chunk_enter();
    PyObject *r = greenlet_jobs();
    frame_chunk_after_call(1);
    return r;
}

static PyMethodDef greenlet_main_def = {"_spindle_greenlet", greenlet_main, METH_NOARGS, NULL};

static void start_job(hub *h, pyjob *j) {
    PyObject *g;
    if (h->nidle) {
        g = h->idle_g[--h->nidle];
    } else {
        g = (PyObject *)PyGreenlet_New(h->worker_main, (PyGreenlet *)h->hub_g);
        if (!g) {
            PyErr_Print();
            j->app_rc = -ENOMEM;
            j->app_done = 1;
            loop_wake(h->l, j->t, 0);
            return;
        }
    }
    h->assign = j;
    h->busy++;
    j->wake.greenlet = g; /* the job owns it while the call runs */
    PyObject *r = PyGreenlet_Switch((PyGreenlet *)g, NULL, NULL);
    if (!r) {
        PyErr_Print(); /* a bug in the binding, not the app: keep serving */
        if (!j->app_done) {
            j->app_rc = -EIO;
            j->app_done = 1;
            loop_wake(h->l, j->t, 0);
        }
    } else {
        Py_DECREF(r);
    }
}

/* The first request of a turn runs on the hub greenlet itself: a call that
 * never waits (a hello world) then costs no greenlet switch at all. If it
 * waits, nested_wait drives the loop meanwhile. */
static void run_inline(hub *h, pyjob *j) {
    h->inline_job = j;
    h->inline_active = 1;
    h->busy++;
    j->wake.greenlet = h->hub_g; /* borrowed: the hub outlives its calls */
    hub_job_fns.run(h, j);
    bus_release_job(j);
    j->wake.greenlet = NULL;
    h->busy--;
    h->inline_active = 0;
    h->inline_job = NULL;
}

/* A spawned callable's body: fn(), then back to whoever drives the loop
 * then (its parent, set last: the hub may be inside an inline call). */
static PyObject *spawned_main(PyObject *fn, PyObject *unused) {
    PyObject *r = PyObject_CallNoArgs(fn);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyGreenlet *cur = PyGreenlet_GetCurrent();
    hub *h = the_hub;
    if (cur && (PyObject *)cur != h->driver &&
        PyGreenlet_SetParent(cur, (PyGreenlet *)h->driver) < 0)
        PyErr_Clear(); /* keeps the hub: the parent it had */
    Py_XDECREF(cur);
    PyErr_Restore(et, ev, tb);
    return r;
}

static PyMethodDef spawned_main_def = {"_spindle_spawned", spawned_main, METH_NOARGS, NULL};

/* spindle.spawn: each callable starts in a new greenlet whose parent is
 * the hub, so it comes back here when it parks or ends. */
static int start_spawned(hub *h) {
    if (!h->starts || !PyList_GET_SIZE(h->starts))
        return 0;
    PyObject *todo = h->starts;
    h->starts = NULL; /* spawns made meanwhile go to a new list */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(todo); i++) {
        PyObject *run = PyCFunction_New(&spawned_main_def, PyList_GET_ITEM(todo, i));
        PyObject *g = run ? (PyObject *)PyGreenlet_New(run, (PyGreenlet *)h->hub_g) : NULL;
        Py_XDECREF(run); /* the greenlet holds it */
        PyObject *r = g ? PyGreenlet_Switch((PyGreenlet *)g, NULL, NULL) : NULL;
        if (!r)
            PyErr_Print();
        Py_XDECREF(r);
        Py_XDECREF(g); /* a parked greenlet is kept by its wait */
    }
    Py_DECREF(todo);
    return 1;
}

PyObject *py_start_greenlet(PyObject *self, PyObject *fn) {
    hub *h = the_hub;
    if (!h || PyThread_get_thread_ident() != h->thread) {
        PyErr_SetString(PyExc_RuntimeError,
                        "spindle.spawn works on a worker's loop thread (at import, in an "
                        "on_worker_start hook, in a request or a spawned function)");
        return NULL;
    }
    if (!h->starts && !(h->starts = PyList_New(0)))
        return NULL;
    if (PyList_Append(h->starts, fn) < 0)
        return NULL;
    Py_RETURN_NONE;
}

void hub_on_stop(sp_server *s, void *ud) {
    ((hub *)ud)->stop_asked = 1; /* no Python here: the loop may hold no GIL */
}

/* @spindle.on_worker_stop, once, as the graceful stop begins: in-flight
 * requests still run, so a hook can release long polls (Event.set) before
 * the --graceful-timeout cuts them. */
static int run_stop_hooks(hub *h) {
    if (!h->stop_asked || h->stop_ran)
        return 0;
    h->stop_ran = 1;
    sched_call("_worker_stop", "()");
    return 1;
}

/* Runs everything Python has to do now; returns 1 if it did anything. */
static int run_python(hub *h) {
    int did = start_spawned(h);
    did |= run_stop_hooks(h);
    while (h->ngarbage) {
        PyObject *o = h->garbage[--h->ngarbage];
        Py_DECREF(o);
        did = 1;
    }
    pyjob *j;
    h->starting = 1; /* greenlet_main may take the next ones itself */
    while ((j = next_pending(h))) {
        if (h->inline_job)
            start_job(h, j);
        else
            run_inline(h, j);
        did = 1;
    }
    h->starting = 0;
    while (h->ready_head) {
        hub_wake *w = h->ready_head;
        h->ready_head = w->next;
        if (!h->ready_head)
            h->ready_tail = NULL;
        w->queued = 0;
        PyObject *g = w->greenlet;
        did = 1;
        if (g == h->driver) { /* the inline call's wait is over (nested_wait) */
            h->inline_woken = 1;
            continue;
        }
        Py_INCREF(g);
        PyObject *r = PyGreenlet_Switch((PyGreenlet *)g, NULL, NULL);
        if (!r)
            PyErr_Print();
        else
            Py_DECREF(r);
        Py_DECREF(g);
    }
    return did;
}

/* One pass of driving the loop from the hub's side: Python's own work
 * first, then the tasks that are ready, else a poll that waits with the
 * GIL released. 0, or what sp_poll returned (< 0: the loop failed). */
static int drive_once(hub *h) {
    if (run_python(h))
        return 0;
    if (loop_has_ready(h->l)) {
        loop_run_pending(h->l);
        return 0;
    }
    PyThreadState *ts = PyEval_SaveThread(); /* others may run Python meanwhile */
    int rc = sp_poll(-1);
    PyEval_RestoreThread(ts);
    return rc;
}

/* While the inline call waits, the waiting greenlet (the hub, or one its
 * app switched to) drives the loop from inside the wait as hub_drive does,
 * until that wait's wake comes; requests arriving meanwhile get pooled
 * greenlets, other waits are resumed as usual and come back here
 * (hub->driver). */
static long nested_wait(hub *h, hub_wake *w) {
    int starting = h->starting, rc = 0;
    PyObject *driver = h->driver, *cur = (PyObject *)PyGreenlet_GetCurrent();
    Py_XDECREF(cur);      /* alive: it runs this */
    h->driver = cur;      /* greenlets that wait meanwhile come back here */
    h->inline_active = 0; /* Python the loop runs meanwhile is not the request */
    h->inline_woken = 0;
    while (!h->inline_woken && rc >= 0)
        rc = drive_once(h);
    h->inline_active = 1;
    h->starting = starting;
    h->driver = driver;
    if (!h->inline_woken) {
        errno = -rc;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return w->result;
}

int hub_drive(sp_server *s, void *ud) {
    hub *h = ud;
    h->s = s; /* for calls outside a request (bus.c) */
    h->l = loop_current();
    PyGreenlet *cur = PyGreenlet_GetCurrent();
    h->hub_g = (PyObject *)cur; /* owned */
    h->driver = h->hub_g;
    h->thread = PyThread_get_thread_ident();
    h->worker_main = PyCFunction_New(&greenlet_main_def, NULL);
    if (!h->worker_main)
        return -ENOMEM;
    int rc = server_start(s, h->l);
    if (rc >= 0)
        rc = thread_calls_start(h);
    while (rc >= 0 && !server_done(s))
        rc = drive_once(h);
    thread_calls_stop(h);
    if (server_loop(s))
        server_finish(s);
    h->stop_asked = 1; /* the hooks run even if the loop ended another way */
    run_stop_hooks(h);
    /* Pooled greenlets are dropped: greenlet throws GreenletExit into each
     * as it is collected, ending greenlet_main. */
    while (h->nidle)
        Py_DECREF(h->idle_g[--h->nidle]);
    return rc < 0 ? rc : 0;
}
