/* asgi.h — the ASGI side of the binding: one asyncio loop per worker whose
 * selector is spindle's loop (asgi_loop.c), a request cycle object whose
 * receive/send are C callables (asgi_http.c), the scope (asgi_scope.c) and
 * WebSockets (asgi_ws.c). As for WSGI, Python runs only on the main stack:
 * a request's coroutine queues it and parks; the main stack turns it into
 * an asyncio task and hands each I/O back to the coroutine as an op. */
#ifndef SPINDLE_PY_ASGI_H
#define SPINDLE_PY_ASGI_H

#include "common/binding.h"
#include "common/bus_py.h"

/* Ops the main stack asks of a request's coroutine (acycle.op bits). */
enum {
    A_WRITE = 1,    /* wdata/wlen, then finish if wfinal */
    A_READ = 2,     /* into rbytes */
    A_SENDFILE = 4, /* fd/off/count, then finish */
    A_ERROR500 = 8, /* the app failed before starting the response */
    A_ABORT = 16,   /* the app failed after: cut the connection */
    A_WS_ACCEPT = 32,
    A_WS_RECV = 64,
    A_WS_SEND = 128,
    A_WS_CLOSE = 256,
    A_GONE = 512,      /* with A_ABORT: the client left, no fault of the app's */
    A_HINTS = 1024,    /* 103 Early Hints: xarg/xn the links (asgi_ext.c) */
    A_TRAILERS = 2048, /* the end with trailer fields: xarg/xn an sp_field array */
};

/* Events the coroutine queues for the main stack (acycle.ev bits). */
enum {
    EV_WRITTEN = 1, /* a write (or sendfile) finished: wresult */
    EV_READ = 2,    /* a read finished: rresult */
    EV_HUP = 4,     /* the client went away */
    EV_END = 8,     /* the handler returned: req/res are gone */
    EV_WS = 16,     /* a WebSocket op finished (asgi_ws.c) */
};

/* A request waiting for the main stack to start its application call. */
typedef struct anew {
    sp_req *req;
    sp_res *res;
    task *t;
    struct acycle *cycle; /* set by the main stack when it dispatched it */
    int hup;              /* the client left before it was dispatched */
    struct anew *next;
} anew;

/* A WebSocket cycle's state (asgi_ws.c). W_*: what finished on a coroutine. */
enum { W_ACCEPTED = 1, W_RECEIVED = 2, W_SENT = 4 };

typedef struct aws {
    sp_ws *ws;
    uint8_t connect_given, accept_asked, accepted, closed, close_asked, denied;
    uint8_t in_recv; /* the coroutine is inside sp_ws_recv */
    uint32_t done;   /* W_* finished on a coroutine, not yet seen by the main stack */
    int accept_rc, recv_rc, send_rc;
    sp_ws_msg msg;
    int close_code;
    char reason[124];
    /* the send in flight, and those waiting for it: [(str|bytes, future)] */
    PyObject *skeep;
    PyObject *squeue;
    size_t qbytes;      /* bytes in squeue */
    int close_deferred; /* the close waits for the sends before it */
    const char *sdata;
    size_t slen;
    int sop;
} aws;

/* One request (HTTP or WebSocket) seen from both sides. A Python object
 * (the receive/send callables are its methods); the coroutine holds a
 * reference from dispatch to EV_END, dropped by the main stack. The
 * coroutine touches only its C fields, never a reference count. */
typedef struct acycle {
    PyObject_HEAD sp_req *req; /* NULL once the handler returned */
    sp_res *res;
    task *t;
    int parked;          /* the coroutine waits in its own park: wake it for an op */
    int op;              /* A_* asked, not yet done */
    uint32_t ev;         /* EV_* to tell the main stack */
    int queued;          /* on the event list */
    struct acycle *next; /* the event list */
    uint8_t is_ws, started, finished, body_done, disconnected, app_done, gone, failed;
    /* A_WRITE / A_SENDFILE */
    const char *wdata;
    size_t wlen;
    PyObject *wkeep; /* the bytes being written (dropped on EV_WRITTEN) */
    int wfinal;
    int fd;
    int64_t off;
    size_t count;
    ssize_t wresult;
    /* A_READ */
    PyObject *rbytes;
    size_t rlen;
    ssize_t rresult;
    /* the futures the app awaits, when it must wait */
    PyObject *recv_fut, *send_fut;
    PyObject *stash; /* a message whose waiter was cancelled: the next receive's */
    /* WebSocket state (asgi_ws.c) */
    struct aws *ws;
    struct acycle *ws_prev, *ws_next; /* the worker's accepted WebSockets */
    int ws_listed;
    void *bus_subs; /* the subscriptions it made (asgi_bus.c), closed at EV_END */
    /* the extensions (asgi_ext.c): trailers asked by http.response.start,
     * served for this request (declared in its scope), due (the last body
     * went); the pairs gathered; an A_HINTS/A_TRAILERS op's C array (PyMem)
     * over bytes wkeep holds */
    uint8_t tr_want, tr_served, tr_wait, hints_served;
    PyObject *tr_list;
    void *xarg;
    size_t xn;
} acycle;

/* The worker's ASGI state (one per process). */
typedef struct ahub {
    hub *h;
    PyObject *loop;        /* the asyncio loop */
    PyObject *create_task; /* loop.create_task */
    PyObject *task_type;   /* asyncio.Task, called directly without a task factory */
    PyObject *run;         /* spindle._asgi._run(app, scope, cycle) */
    PyObject *state;       /* the lifespan state (a dict), or NULL */
    PyObject *on_done;     /* called once the server is done (a future's set_result) */
    int accepting;         /* lifespan startup is over: dispatch requests */
    int started;           /* server_start ran: server_done means something */
    int done_told;
    int busy;                  /* application calls running */
    anew *new_head, *new_tail; /* requests not yet dispatched */
    acycle *ev_head, *ev_tail; /* cycles with events */
    unsigned polls_skipped;    /* turns that skipped the poll because work was ready */
    size_t ws_max_message;     /* --ws-max-message */
    acycle *ws_open;           /* accepted WebSockets, for the stop's 1001 */
    int stop_told;             /* the stop reached them */
} ahub;

extern ahub the_ahub;

/* asgi_loop.c */
int asgi_worker_init(hub *h);
int asgi_drive(sp_server *s, void *ud);
void asgi_queue(acycle *c, uint32_t ev); /* from the coroutine */
void asgi_wake(acycle *c);               /* from the main stack: run c's ops */
PyObject *py_asgi_select(PyObject *self, PyObject *arg);
PyObject *py_asgi_watch(PyObject *self, PyObject *args);
PyObject *py_asgi_unwatch(PyObject *self, PyObject *arg);
PyObject *py_asgi_serving(PyObject *self, PyObject *args);
/* Resolves fut with v (a new reference, consumed); ignores a cancelled one. */
void asgi_resolve(PyObject **fut, PyObject *v);
PyObject *asgi_future(void);

/* asgi_soon.c: spindle._CallSoon, call_soon in C (a mixin of the loop) */
int asgi_soon_init(PyObject *module);
/* A plain attribute of the worker's loop that BaseEventLoop keeps in its
 * instance dict (_closed, _debug, _task_factory), read from that dict:
 * about 70 instructions against PyObject_GetAttr's 240, which searches the
 * loop's long MRO for a descriptor first. Per request it is read three
 * times. Falls back to getattr when the dict lacks it. New reference, or
 * NULL with an error raised. */
PyObject *asgi_loop_attr(PyObject *loop, PyObject *name);

/* asgi_http.c */
int asgi_handler(sp_req *req, sp_res *res, void *ud);
int asgi_types_init(PyObject *module);
PyObject *asgi_cycle_new(anew *n);
void asgi_events(acycle *c, uint32_t ev);
/* The awaitable that is already done: await gives v (a new reference, consumed). */
PyObject *asgi_ready(PyObject *v);
PyObject *asgi_disconnect_msg(void);
/* The client left before the response ended: the coroutine ends and the
 * connection closes (no response to finish). */
void end_cut(acycle *c);
/* The HTTP cycle's send (a websocket denial's http.response.* too). */
PyObject *asgi_http_send(acycle *c, PyObject *msg);
/* What both cycle types share: the app is over (the busy count), its
 * failure logged with the request line, the object freed. */
void asgi_app_over(acycle *c);
void asgi_log_failure(acycle *c, const char *what);
void asgi_cycle_dealloc(acycle *c);

/* asgi_ws_cycle.c: the websocket scope's cycle type (receive, send, ends) */
extern PyTypeObject asgi_ws_cycle_type;

/* asgi_ext.c: the scope's extensions for this request (sets tr_served and
 * hints_served), and the send() messages they add, each returning the
 * awaitable send() gives (NULL with the error raised). */
int asgi_ext_init(void);
PyObject *asgi_extensions(acycle *c);
PyObject *asend_early_hint(acycle *c, PyObject *msg);
PyObject *asend_trailers(acycle *c, PyObject *msg);
PyObject *asend_zerocopy(acycle *c, PyObject *msg);
/* Whether a send op is under way (a second send() before the first ended). */
int asgi_send_busy(const acycle *c);

/* asgi_scope.c */
int asgi_scope_init(void);
PyObject *asgi_scope(acycle *c);
PyObject *asgi_str(const char *s); /* interned constants */

/* asgi_bus.c: the bus calls as awaitables; a subscription's arecv method
 * (common/bus.c's type calls it through bus_arecv, set by asgi_types_init). */
PyObject *py_bus_apublish(PyObject *self, PyObject *args);
PyObject *py_bus_asubscribe(PyObject *self, PyObject *args);
PyObject *bus_sub_arecv(bus_sub_obj *so, PyObject *args);
/* The ASGI loop's turn: resolves the calls done meanwhile. 1 if any. */
int asgi_bus_drain(void);
int asgi_bus_pending(void);

/* asgi_ws.c */
int asgi_ws_is_upgrade(const sp_req *req);
PyObject *asgi_ws_receive(acycle *c);
PyObject *asgi_ws_send(acycle *c, PyObject *msg, PyObject *type);
ssize_t asgi_ws_op(acycle *c); /* on the coroutine */
void asgi_ws_event(acycle *c); /* on the main stack: EV_WS */
void asgi_ws_free(acycle *c);
void asgi_ws_app_done(acycle *c, int failed);
/* The server began to stop: every accepted WebSocket not receiving now is
 * closed with 1001 (a receiving one gets it from the C layer). */
void asgi_ws_stop_all(void);
void asgi_ws_unlist(acycle *c);
void asgi_ws_dead(acycle *c);

#endif
