/* binding.h — the binding's common room: the hub, its jobs and their ops,
 * and what both interfaces share (wsgi/ and asgi/ include it; it includes
 * neither: an interface plugs into the hub's table of functions, hub_jobs).
 * The binding drives the server's loop itself (a hub greenlet on the
 * worker's main stack), so it needs the embedding side of the server
 * (src/server/embed.h: serving in steps, the drive and fork hooks, and
 * accessor functions for the request and the response, which are opaque
 * here) beside the public API; nothing else reaches inside. Python never
 * runs on a coroutine stack: a request's coroutine hands the call to the
 * hub and parks; the app runs in a greenlet on the main stack and asks the
 * coroutine for each I/O. */
#ifndef SPINDLE_PY_BINDING_H
#define SPINDLE_PY_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "server/embed.h"

/* What a greenlet asks its request's coroutine to do. */
typedef enum job_op {
    OP_NONE,
    OP_WRITE,
    OP_READ,
    OP_SENDFILE,
    OP_FINISH,
    OP_SESSION,    /* session.c: the sp_session_* calls, which may yield */
    OP_WS_UPGRADE, /* websocket.c: the sp_ws_* calls, which yield */
    OP_WS_RECV,
    OP_WS_SEND,
    OP_WS_CLOSE,
    OP_BUS,   /* bus.c: an sp_bus_* call, which may yield (Redis) */
    OP_HINTS, /* hints.c: sp_res_early_hints */
    OP_COUNT
} job_op;

/* OP_SESSION's calls (session.c): the store may yield, so they run on the
 * request's coroutine. */
typedef enum sess_op { SESS_OPEN, SESS_SET, SESS_DEL, SESS_CLEAR, SESS_REGEN, SESS_TTL } sess_op;

/* A wake-up for a greenlet parked in the hub: queued by C code that holds no
 * GIL (a coroutine, a timer, an fd callback), consumed by the hub. Never on
 * a greenlet's stack: greenlet copies stacks, so such pointers go stale. */
typedef struct hub_wake {
    PyObject *greenlet; /* borrowed: whoever queues it keeps it alive */
    long result;
    int queued;
    struct hub_wake *next;
} hub_wake;

/* One greenlet job (a WSGI call), on its coroutine's stack (mmap'ed:
 * stable while parked). */
typedef struct pyjob {
    sp_req *req;
    sp_res *res;
    req_info ri; /* read once as the job is made (embed.h) */
    task *t;
    struct hub *h;
    int op;
    const char *data; /* OP_WRITE: bytes owned by a Python object */
    size_t len;
    char *rbuf; /* OP_READ: heap memory */
    int fd;     /* OP_SENDFILE */
    int64_t off;
    size_t count;
    int finish_after;         /* end the response after the op */
    const char *const *hints; /* OP_HINTS: the Link values (hints.c) */
    size_t nhints;
    ssize_t result;
    int app_done;     /* the greenlet is finished with this request */
    int app_rc;       /* the handler's return: 0, or -errno to close */
    int gone;         /* the client hung up while the app ran: nothing is sent */
    int64_t began_ms; /* CLOCK_MONOTONIC_COARSE at the call's start */
    PyObject *keep;   /* kept alive for a last op nobody waits for */
    /* OP_SESSION (session.c): the call, its arguments (owned by Python
     * objects the waiting greenlet holds), the session once opened, and the
     * head fields it added (kept by commit_head: its Set-Cookie). */
    int sess_op;
    const char *skey, *sval;
    int64_t sttl;
    struct sp_session *sess;
    res_fields_mark sess_mark;
    PyObject *sess_obj; /* environ's spindle.request handle (owned) */
    int sr_called;      /* start_response was called (too late for a WebSocket) */
    /* spindle.websocket: the object this job's greenlet accepted (owned),
     * and the one an OP_WS_* targets (another job's, for a broadcast). */
    PyObject *wsobj;
    void *ws_target;
    int ws_opcode;         /* OP_WS_SEND: SP_WS_TEXT/BINARY/PING */
    int64_t ws_timeout;    /* OP_WS_RECV: ms, -1 none */
    sp_ws_msg ws_msg;      /* OP_WS_RECV: data points into the sp_ws (heap) */
    const char *ws_reason; /* OP_WS_CLOSE */
    /* spindle.publish/subscribe (bus.c): the call OP_BUS runs, and the
     * subscriptions this request made (closed when it ends). */
    struct bus_call *bus_call;
    struct bus_sub_obj *bus_subs;
    hub_wake wake;
    struct pyjob *next;
} pyjob;

typedef struct hub {
    sp_server *s;
    loop *l;
    PyObject *app;
    PyObject *loader;      /* imports the app in each worker (None with --preload) */
    PyObject *hub_g;       /* the hub greenlet: the worker's main greenlet */
    PyObject *driver;      /* the greenlet driving the loop: hub_g but in a nested_wait */
    unsigned long thread;  /* the thread driving the loop; others never switch */
    PyObject *worker_main; /* the run callable of pooled greenlets */
    PyObject **idle_g;     /* pooled greenlets waiting for a job */
    size_t nidle, idle_cap;
    pyjob *pending_head, *pending_tail; /* requests waiting for a greenlet */
    hub_wake *ready_head, *ready_tail;  /* greenlets to resume */
    PyObject **garbage;                 /* references to drop, queued without the GIL */
    size_t ngarbage, garbage_cap;
    pyjob *assign; /* the job handed to the greenlet being started */
    int busy, max_busy;
    int starting; /* run_python is starting the pending requests */
    /* The call the hub greenlet runs itself (run_inline in hub.c), whether
     * its app code runs now (not the hub's loop inside its wait), and
     * whether that wait is over. */
    pyjob *inline_job;
    int inline_active, inline_woken;
    int workers;
    int forked;
    int reload; /* --reload: each worker reports its modules' files */
    pid_t master_pid;
    PyObject *file_wrapper_type; /* serve(file_wrapper=): wsgi.file_wrapper, or NULL */
    PyObject *parked;            /* greenlet -> its wait (park/unpark), made on first use */
    PyObject *root_path;         /* SCRIPT_NAME */
    PyObject *starts;            /* callables to run in new greenlets (spindle.spawn), or NULL */
    int blocking_threads;        /* --blocking-threads: spindle.run_blocking's pool; 0 default */
    int stop_asked, stop_ran;    /* the graceful stop began; on_worker_stop hooks ran */
    int asgi;                    /* the application is ASGI (asgi.h), decided in each worker */
    const char *interface;       /* --interface: auto, asgi, wsgi */
    const char *lifespan;        /* --lifespan: auto, on, off */
    size_t ws_max_message;       /* --ws-max-message; 0: the C layer's default */
} hub;

extern hub *the_hub; /* one per process: the worker's */

/* The hub's table of functions. The hub runs each job's app call through
 * run (in a greenlet, or inline on the hub's own), registered by the
 * interface whose requests become jobs (wsgi/: wsgi_init_types), and each op
 * past the response's own (OP_WRITE, OP_READ, OP_SENDFILE, OP_FINISH,
 * OP_HINTS: hub.c's) through op[], registered by the file that owns it
 * (session.c, websocket.c, bus.c): so common/ names no interface. */
typedef struct hub_jobs {
    void (*run)(hub *h, pyjob *j);
    ssize_t (*op[OP_COUNT])(pyjob *j); /* on the job's coroutine */
} hub_jobs;
extern hub_jobs hub_job_fns;

/* hub.c */
int hub_drive(sp_server *s, void *ud);
/* The route's handler for greenlet jobs: queues the request as a job for
 * the hub and runs the ops its greenlet asks for, until the app is done. */
int hub_handler(sp_req *req, sp_res *res, void *ud);
/* From a greenlet: ask j's coroutine for op and wait for the result. */
ssize_t hub_op(pyjob *j, int op);
/* From a greenlet: hand j's coroutine a last op and the end of the app,
 * without waiting (keep is released by the hub once it is done). */
void hub_op_last(pyjob *j, int op, PyObject *keep);
/* Park the current greenlet until w is queued; returns w->result. NULL
 * greenlet switch failures come back as -1 with a Python error set. */
long hub_wait(hub_wake *w);
void hub_queue(hub *h, hub_wake *w);
/* Unqueues w if it is still queued (woken for another reason). */
void hub_unqueue(hub *h, hub_wake *w);
/* The job the current greenlet serves, or NULL (not in a request). */
pyjob *hub_current_job(void);

/* frame_chunk.c: a pooled greenlet's frames in a small chunk of its own.
 * init wraps the arena allocator once (at import); enter as the greenlet
 * starts; after_call between its calls (ending: as it ends). */
int frame_chunk_init(void);
void frame_chunk_enter(void);
void frame_chunk_after_call(int ending);
/* _frame_chunks() -> {"enabled", "held", "outgrown"} (for tests) */
PyObject *py_frame_chunks(PyObject *self, PyObject *unused);

/* job_table.c: greenlet -> the pyjob it serves (hub_current_job). put
 * returns -1 when out of memory (the job is then not findable). */
int job_table_put(const void *g, pyjob *j);
pyjob *job_table_get(const void *g);
void job_table_del(const void *g);
/* The current greenlet (a new reference). */
PyObject *hub_current(void);
int hub_in_greenlet(const hub *h);
/* A Python timeout in seconds (None: no limit) as ms: -1 for None, 0 for
 * a negative one. 0, or -1 with a Python error set (not a number). */
int hub_timeout_ms(PyObject *tobj, double *ms);
PyObject *py_sleep(PyObject *self, PyObject *args);
PyObject *py_wait_fd(PyObject *self, PyObject *args, PyObject *kw, int write);
/* park(timeout) -> True if unparked, False on timeout; unpark(greenlet) ->
 * True if it was parked. The greenlet-aware locks of spindle.patch(). */
PyObject *py_park(PyObject *self, PyObject *args);
PyObject *py_unpark(PyObject *self, PyObject *g);
/* wait_fds(read_fds, write_fds, timeout) -> (readable, writable): the fds
 * the loop saw ready (both empty on timeout); for select/poll/selectors. */
PyObject *py_wait_fds(PyObject *self, PyObject *args);
/* start_greenlet(fn): the hub calls fn() in a new greenlet on its next turn
 * (spindle.spawn); fn must catch its own exceptions. */
PyObject *py_start_greenlet(PyObject *self, PyObject *fn);
/* thread_calls.c: start_greenlet from any thread (wakes the loop), and the
 * eventfd that wakes it, watched while the hub drives. */
PyObject *py_start_greenlet_threadsafe(PyObject *self, PyObject *fn);
PyObject *py_on_loop_thread(PyObject *self, PyObject *unused);
int thread_calls_start(hub *h);
void thread_calls_stop(hub *h);
/* server_on_stop callback: the hub runs the on_worker_stop hooks next turn. */
void hub_on_stop(sp_server *s, void *ud);

/* module.c: calls spindle._sched.NAME(args); logs a Python error. */
int sched_call(const char *name, const char *fmt, ...);

/* session.c (its OP_SESSION goes in hub_job_fns: j->sess_op on the coroutine) */
/* From the greenlet: puts the request's handle in env (spindle.request). */
int session_attach(pyjob *j, PyObject *env);
/* environ_reuse: the handle o (held by a kept environ) serves j now. */
void session_reattach(pyjob *j, PyObject *o);
/* o is detached and held only by session_recycle's slot and one more. */
int session_reusable(PyObject *o);
/* From the greenlet, before the last op: the handle stops working. */
void session_detach(pyjob *j);
/* After the environ is dropped: keeps the last detached request object for
 * the next request if nothing else holds it, else releases it. */
void session_recycle(void);
int session_init_type(void);
PyObject *py_session_open(PyObject *self, PyObject *env);
/* websocket.c (its OP_WS_* ops go in hub_job_fns) */
int websocket_init(PyObject *module);
PyObject *py_websocket(PyObject *self, PyObject *args, PyObject *kw);
/* After the app returned (or failed: code 1011): closes j's WebSocket if
 * still open and lets the coroutine end. 1 if j had one, else 0. */
int ws_finish(pyjob *j, int code);

/* bus.c: the bus from Python */
int bus_init(PyObject *module); /* and OP_BUS in hub_job_fns */
/* The request ended (the app is done): its subscriptions close. */
void bus_release_job(pyjob *j);
PyObject *py_bus_publish(PyObject *self, PyObject *args);
PyObject *py_bus_subscribe(PyObject *self, PyObject *args);
PyObject *py_bus_stats(PyObject *self, PyObject *unused);
#endif
