/* asgi_soon.c — call_soon and get_debug in C for the worker's asyncio loop
 * (mixed into spindle._asgi.Loop): every task start, wake-up and future
 * callback goes through them, and asyncio's Python frames were a large part
 * of a small request. The same Handle; debug or closed: asyncio's path. */
#include "asgi/asgi.h"

#include <structmember.h>

static PyObject *handle_type, *copy_context, *base_call_soon;
static PyObject *s_closed, *s_debug, *s_ready, *s_append, *s_callback, *s_args, *s_cancelled,
    *s_loop, *s_source_tb, *s_repr, *s_context;

/* Handle's __slots__ are member descriptors: their offsets let a new
 * Handle be filled in place (its memory starts zeroed). Without them (a
 * Python whose Handle differs) the attributes are set one by one. */
enum { H_CALLBACK, H_ARGS, H_CANCELLED, H_LOOP, H_SOURCE_TB, H_REPR, H_CONTEXT, H_N };
static Py_ssize_t offsets[H_N];
static int use_offsets;

static void slot_offsets(void) {
    PyObject *const names[H_N] = {s_callback,  s_args, s_cancelled, s_loop,
                                  s_source_tb, s_repr, s_context};
    use_offsets = 1;
    for (int i = 0; i < H_N; i++) {
        PyObject *d = PyObject_GetAttr(handle_type, names[i]);
        if (d && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
            ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX)
            offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        else
            use_offsets = 0;
        Py_XDECREF(d);
    }
    PyErr_Clear();
}

static int fill(PyObject *h, PyObject *const vals[H_N]) {
    if (use_offsets) {
        for (int i = 0; i < H_N; i++)
            *(PyObject **)((char *)h + offsets[i]) = Py_NewRef(vals[i]);
        return 0;
    }
    PyObject *const names[H_N] = {s_callback,  s_args, s_cancelled, s_loop,
                                  s_source_tb, s_repr, s_context};
    for (int i = 0; i < H_N; i++)
        if (PyObject_SetAttr(h, names[i], vals[i]) < 0)
            return -1;
    return 0;
}

/* loop._ready.append, kept for the loop last seen (a worker has one). */
static PyObject *append_of(PyObject *loop) {
    static PyObject *last_loop, *last_append;
    if (loop != last_loop) {
        PyObject *ready = PyObject_GetAttr(loop, s_ready);
        PyObject *ap = ready ? PyObject_GetAttr(ready, s_append) : NULL;
        Py_XDECREF(ready);
        if (!ap)
            return NULL;
        Py_XSETREF(last_append, ap);
        Py_XSETREF(last_loop, Py_NewRef(loop));
    }
    return last_append;
}

static int soon_init(void) {
    if (handle_type)
        return 0;
    PyObject *ev = PyImport_ImportModule("asyncio.events");
    PyObject *be = PyImport_ImportModule("asyncio.base_events");
    PyObject *cv = PyImport_ImportModule("contextvars");
    PyObject *bel = be ? PyObject_GetAttrString(be, "BaseEventLoop") : NULL;
    handle_type = ev ? PyObject_GetAttrString(ev, "Handle") : NULL;
    copy_context = cv ? PyObject_GetAttrString(cv, "copy_context") : NULL;
    base_call_soon = bel ? PyObject_GetAttrString(bel, "call_soon") : NULL;
    Py_XDECREF(ev);
    Py_XDECREF(be);
    Py_XDECREF(cv);
    Py_XDECREF(bel);
    s_closed = PyUnicode_InternFromString("_closed");
    s_debug = PyUnicode_InternFromString("_debug");
    s_ready = PyUnicode_InternFromString("_ready");
    s_append = PyUnicode_InternFromString("append");
    s_callback = PyUnicode_InternFromString("_callback");
    s_args = PyUnicode_InternFromString("_args");
    s_cancelled = PyUnicode_InternFromString("_cancelled");
    s_loop = PyUnicode_InternFromString("_loop");
    s_source_tb = PyUnicode_InternFromString("_source_traceback");
    s_repr = PyUnicode_InternFromString("_repr");
    s_context = PyUnicode_InternFromString("_context");
    if (!handle_type || !copy_context || !base_call_soon || !s_context) {
        Py_CLEAR(handle_type);
        return -1;
    }
    slot_offsets();
    return 0;
}

/* The slow path: BaseEventLoop.call_soon(self, *args, **kw). */
static PyObject *base(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[16];
    PyObject **stack =
        n + nk + 1 <= 16 ? small : PyMem_Malloc((size_t)(n + nk + 1) * sizeof *stack);
    if (!stack)
        return PyErr_NoMemory();
    stack[0] = self;
    for (Py_ssize_t i = 0; i < n + nk; i++)
        stack[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(base_call_soon, stack, (size_t)(n + 1), kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return r;
}

PyObject *asgi_loop_attr(PyObject *loop, PyObject *name) {
    static PyObject *last_loop, *last_dict;
    if (loop != last_loop) {
        PyObject *d = PyObject_GenericGetDict(loop, NULL);
        if (!d || !PyDict_Check(d)) {
            PyErr_Clear();
            Py_XDECREF(d);
            return PyObject_GetAttr(loop, name);
        }
        Py_XSETREF(last_dict, d);
        Py_XSETREF(last_loop, Py_NewRef(loop));
    }
    PyObject *v = PyDict_GetItemWithError(last_dict, name);
    if (v)
        return Py_NewRef(v);
    return PyErr_Occurred() ? NULL : PyObject_GetAttr(loop, name);
}

static int flag(PyObject *self, PyObject *name) {
    PyObject *v = asgi_loop_attr(self, name);
    int r = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(v);
    return r;
}

/* call_soon(callback, *args, context=None) -> Handle */
static PyObject *soon_call_soon(PyObject *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    if (soon_init() < 0)
        return NULL;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *context = Py_None;
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "context") != 0)
            return base(self, args, nargsf, kwnames); /* let asyncio say what is wrong */
        context = args[n + i];
    }
    int closed = flag(self, s_closed), debug = closed ? 0 : flag(self, s_debug);
    if (n < 1 || closed != 0 || debug != 0) {
        if (closed < 0 || debug < 0)
            PyErr_Clear();
        return base(self, args, nargsf, kwnames);
    }
    PyObject *cb_args = PyTuple_New(n - 1);
    PyObject *ctx = context == Py_None ? PyObject_CallNoArgs(copy_context) : Py_NewRef(context);
    PyObject *h = cb_args && ctx
                      ? ((PyTypeObject *)handle_type)->tp_alloc((PyTypeObject *)handle_type, 0)
                      : NULL;
    for (Py_ssize_t i = 1; cb_args && i < n; i++)
        PyTuple_SET_ITEM(cb_args, i - 1, Py_NewRef(args[i]));
    PyObject *const vals[H_N] = {args[0], cb_args, Py_False, self, Py_None, Py_None, ctx};
    int bad = !h || fill(h, vals) < 0;
    Py_XDECREF(cb_args);
    Py_XDECREF(ctx);
    PyObject *append = bad ? NULL : append_of(self);
    PyObject *r = append ? PyObject_CallOneArg(append, h) : NULL;
    if (!r) {
        Py_XDECREF(h);
        return NULL;
    }
    Py_DECREF(r);
    return h;
}

/* get_debug() -> bool: BaseEventLoop's is a Python frame (return
 * self._debug), and every Task and Future made on the loop asks it. */
static PyObject *soon_get_debug(PyObject *self, PyObject *unused) {
    if (soon_init() < 0)
        return NULL;
    return asgi_loop_attr(self, s_debug);
}

static PyMethodDef soon_methods[] = {
    {"get_debug", soon_get_debug, METH_NOARGS, "get_debug() -> bool (self._debug, read in C)"},
    {"call_soon", (PyCFunction)(void (*)(void))soon_call_soon, METH_FASTCALL | METH_KEYWORDS,
     "call_soon(callback, *args, context=None) -> Handle (asyncio's, made in C)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject soon_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "spindle._CallSoon",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "a mixin of spindle._asgi.Loop: call_soon in C",
    .tp_methods = soon_methods,
    .tp_new = PyType_GenericNew,
};

int asgi_soon_init(PyObject *module) {
    if (PyType_Ready(&soon_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "_CallSoon", (PyObject *)&soon_type);
}
