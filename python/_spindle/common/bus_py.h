/* bus_py.h — what common/bus.c (the bus from WSGI, and the calls themselves)
 * and asgi/asgi_bus.c (the same calls as awaitables) share: a call to run on a
 * coroutine, and the Python object of a subscription. */
#ifndef SPINDLE_PY_BUS_H
#define SPINDLE_PY_BUS_H

#include "common/binding.h"

enum { BUS_PUBLISH, BUS_SUBSCRIBE, BUS_RECV };

/* One sp_bus_* call. Heap memory (a greenlet's stack is copied away while
 * it waits); its strings belong to `keep`, held until the call is done. */
typedef struct bus_call {
    int what;
    const char *topic, *since, *data;
    size_t len;
    int64_t timeout_ms;
    struct bus_sub_obj *so; /* BUS_RECV: kept alive by keep */
    PyObject *keep;
    int rc;          /* 0 or 1, or -errno */
    sp_bus_sub *sub; /* BUS_SUBSCRIBE's */
    sp_bus_msg msg;  /* BUS_RECV's: valid until the next recv */
    char id[SP_BUS_ID_MAX];
    /* who waits: a greenlet (wake), or an asyncio future (asgi_bus.c) */
    hub_wake wake;
    PyObject *fut;
    void *owner;     /* ASGI: the request (acycle) a subscription goes to */
    int client_left; /* recv: -ECONNRESET was the client hanging up */
    int restart;     /* ASGI recv: taken over by a new recv (asgi_bus.c) */
    struct bus_call *next;
} bus_call;

/* A subscription. It belongs to the request that made it (owner, or
 * aowner for ASGI: in that request's list) and is closed when it ends. */
typedef struct bus_sub_obj {
    PyObject_HEAD sp_bus_sub *sub; /* NULL once closed */
    PyObject *topic;
    bus_call *inflight; /* a recv running on a coroutine */
    int closing;        /* closed while inflight: unsubscribed when it returns */
    void *owner;        /* the pyjob or acycle, NULL for none */
    struct bus_sub_obj **list, *prev, *next;
    PyObject *stash;          /* a message whose awaiting recv was cancelled */
    int hup;                  /* closed because its request's client hung up */
    char last[SP_BUS_ID_MAX]; /* last_id once closed */
} bus_sub_obj;

/* Runs c on the current coroutine (c->rc). */
void bus_call_run(bus_call *c);
/* A call for what, holding keep (a new reference, consumed); NULL raised. */
bus_call *bus_call_new(int what, PyObject *keep);
void bus_call_free(bus_call *c);
/* The Python result of a finished call (a new reference), or NULL raised. */
PyObject *bus_call_result(bus_call *c);
/* Parses (topic, data) / (topic, since) into c; -1 raised. */
int bus_args_publish(bus_call *c, PyObject *topic, PyObject *data);
int bus_args_subscribe(bus_call *c, PyObject *topic, PyObject *since);
/* Starts a recv of so into c; -1 raised (closed, or one in flight). */
int bus_recv_prepare(bus_sub_obj *so, PyObject *timeout, bus_call **out);
/* Puts so in the list *list (a request's), or none. */
void bus_sub_own(bus_sub_obj *so, void *owner, bus_sub_obj **list);
/* Closes every subscription of a request's list (hup: its client hung
 * up, which a recv waiting on one then says). */
void bus_release_list(bus_sub_obj **list);
void bus_hangup_list(bus_sub_obj **list);
PyObject *bus_sub_new(PyObject *topic, sp_bus_sub *sub);

/* A subscription's arecv (the ASGI recv, an awaitable): set by the ASGI
 * room (asgi/asgi_bus.c); NULL: arecv raises (no ASGI in this binding). */
extern PyObject *(*bus_arecv)(bus_sub_obj *so, PyObject *args);

#endif
