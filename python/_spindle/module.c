/* module.c — the _spindle extension module: serve() parses the flags shared
 * with the spindle binary and runs the shared start-up sequence (cli_serve)
 * with the WSGI application as the catch-all (imported in each worker after
 * the fork, or once before with --preload); plus sleep/wait_readable/
 * wait_writable for applications. */
#include "asgi.h"
#include "binding.h"
#include "wsgi.h"

#include "cli/cli.h"
#include "base/log.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

int hub_import_greenlet(void);

static void fork_hook(int phase, void *ud) {
    hub *h = ud;
    switch (phase) {
    case FORK_BEFORE:
        PyOS_BeforeFork();
        break;
    case FORK_PARENT:
        PyOS_AfterFork_Parent();
        break;
    default:
        PyOS_AfterFork_Child();
        h->forked = 1;
        break;
    }
}

/* MODULE.NAME(args...) of the spindle package: 0 (the result in *result
 * when asked, else dropped), or -1 with the exception printed. */
static int call_py(const char *module, const char *name, PyObject **result, const char *fmt,
                   va_list ap) {
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *fn = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    PyObject *r = NULL;
    if (fn) {
        PyObject *args = Py_VaBuildValue(fmt, ap);
        r = args ? PyObject_CallObject(fn, args) : NULL;
        Py_XDECREF(args);
        Py_DECREF(fn);
    }
    if (!r) {
        PyErr_Print();
        return -1;
    }
    if (result)
        *result = r;
    else
        Py_DECREF(r);
    return 0;
}

/* spindle._dev.NAME(args...). */
static int call_dev(const char *name, PyObject **result, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = call_py("spindle._dev", name, result, fmt, ap);
    va_end(ap);
    return rc;
}

/* spindle._sched.NAME(args...). */
int sched_call(const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = call_py("spindle._sched", name, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

/* --reload: the application's source files to the master, which watches
 * them; exc (or NULL) is a failed import, whose files count too (fixing
 * them is the change awaited). */
static void report_files(PyObject *exc) {
    PyObject *files = NULL;
    if (call_dev("module_files", &files, "(O)", exc ? exc : Py_None) < 0)
        return;
    Py_ssize_t n = PyList_Check(files) ? PyList_GET_SIZE(files) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *f = PyUnicode_AsUTF8(PyList_GET_ITEM(files, i));
        if (f)
            reload_watch_report(f);
        PyErr_Clear();
    }
    Py_DECREF(files);
}

/* The worker's import failed: the traceback, and its files with --reload. */
static void load_failed(hub *h) {
    log_msg(LOG_CRITICAL, "cannot load the WSGI application:");
    if (h->reload) {
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_NormalizeException(&type, &val, &tb);
        if (val && tb)
            PyException_SetTraceback(val, tb);
        report_files(val);
        PyErr_Restore(type, val, tb);
    }
    PyErr_Print();
}

/* 1 if the app is ASGI (--interface, else spindle._asgi.is_asgi), 0 WSGI,
 * -1 with the error printed. */
static int is_asgi(hub *h) {
    PyObject *mod = PyImport_ImportModule("spindle._asgi");
    PyObject *r = mod ? PyObject_CallMethod(mod, "interface_of", "Os", h->app,
                                            h->interface ? h->interface : "auto")
                      : NULL;
    Py_XDECREF(mod);
    if (!r) {
        PyErr_Print();
        return -1;
    }
    int asgi = PyUnicode_Check(r) && PyUnicode_CompareWithASCIIString(r, "asgi") == 0;
    Py_DECREF(r);
    return asgi;
}

/* In each worker: import the application unless --preload did already. */
static int worker_init(sp_server *s, void *ud) {
    hub *h = ud;
    /* The watchdog's stall signal dumps the Python traceback of the code
     * that holds the loop, before the kill. */
    call_dev("install_stall_dump", NULL, "(i)", MASTER_STALL_SIGNAL);
    if (!h->app) {
        h->app = PyObject_CallNoArgs(h->loader);
        if (!h->app) {
            load_failed(h);
            return -1;
        }
    }
    if (h->reload)
        report_files(NULL);
    if (!PyCallable_Check(h->app)) {
        log_msg(LOG_CRITICAL, "the application is not callable (a %s)", Py_TYPE(h->app)->tp_name);
        return -1;
    }
    if ((h->asgi = is_asgi(h)) < 0)
        return -1;
    if (environ_init(h) < 0) {
        PyErr_Print();
        return -1;
    }
    /* The loop's thread, for spawns made by the hooks (hub_drive runs next,
     * on this thread). A failing hook is logged; the worker serves on. */
    h->thread = PyThread_get_thread_ident();
    sched_call("_worker_start", "(i)", h->blocking_threads);
    return h->asgi ? asgi_worker_init(h) : 0;
}

/* The catch-all route and the loop's driver: the interface's. */
static int app_handler(sp_req *req, sp_res *res, void *ud) {
    return ((hub *)ud)->asgi ? asgi_handler(req, res, ud) : wsgi_handler(req, res, ud);
}

static int app_drive(sp_server *s, void *ud) {
    return ((hub *)ud)->asgi ? asgi_drive(s, ud) : hub_drive(s, ud);
}

/* A failed import, said in one line: "spindle: cannot load SPEC: Type: why". */
static void report_load_error(PyObject *loader) {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
#endif
    PyObject *spec = PyObject_GetAttrString(loader, "spec");
    PyObject *why = exc ? PyObject_Str(exc) : NULL;
    PyErr_Clear();
    const char *sp = spec && PyUnicode_Check(spec) ? PyUnicode_AsUTF8(spec) : NULL;
    const char *w = why ? PyUnicode_AsUTF8(why) : NULL;
    PyErr_Clear();
    fprintf(stderr, "spindle: cannot load %s: %s: %s\n", sp ? sp : "the WSGI application",
            exc ? Py_TYPE(exc)->tp_name : "error", w ? w : "");
    Py_XDECREF(why);
    Py_XDECREF(spec);
    Py_XDECREF(exc);
}

/* The application's part of the start-up (cli_serve): --preload imports it
 * here, in the master; the hub drives each worker's loop. */
static int wsgi_setup(sp_server *s, cli_config *c, void *ud) {
    hub *h = ud;
    h->reload = c->reload;
    h->blocking_threads = c->blocking_threads;
    h->interface = c->interface;
    h->lifespan = c->lifespan;
    h->ws_max_message = c->ws_max_message;
    the_ahub.ws_max_message = c->ws_max_message;
    /* A .pyc is checked by the source's mtime in seconds and its size: an
     * edit within the second could be served stale from one written now. */
    if (c->reload)
        PySys_SetObject("dont_write_bytecode", Py_True);
    if (c->reload && c->preload)
        log_msg(LOG_WARNING, "--reload imports the application in each worker: --preload is "
                             "ignored");
    /* --check-config imports it here too: that is what it checks. */
    if (((c->preload && !c->reload) || c->check_config) && !h->app) {
        h->app = h->loader == Py_None ? NULL : PyObject_CallNoArgs(h->loader);
        if (!h->app) {
            report_load_error(h->loader);
            return 1;
        }
        if (!PyCallable_Check(h->app)) {
            fprintf(stderr, "spindle: the WSGI application is not callable (a %s)\n",
                    Py_TYPE(h->app)->tp_name);
            return 1;
        }
    }
    server_set_drive(s, app_drive, h);
    server_set_worker_init(s, worker_init, h);
    server_set_fork_hook(s, fork_hook, h);
    server_on_stop(s, hub_on_stop, h);
    return 0;
}

/* argv for cli_parse: prog, then the list's strings (borrowed UTF-8). */
static char **argv_from_list(PyObject *list, const char *prog) {
    Py_ssize_t argc = PyList_GET_SIZE(list);
    char **argv = PyMem_Calloc((size_t)argc + 2, sizeof *argv);
    if (!argv) {
        PyErr_NoMemory();
        return NULL;
    }
    argv[0] = (char *)prog;
    for (Py_ssize_t i = 0; i < argc; i++) {
        PyObject *a = PyList_GET_ITEM(list, i);
        argv[i + 1] = a && PyUnicode_Check(a) ? (char *)PyUnicode_AsUTF8(a) : NULL;
        if (!argv[i + 1]) {
            PyMem_Free(argv);
            PyErr_SetString(PyExc_TypeError, "serve(): argv must be a list of str");
            return NULL;
        }
    }
    return argv;
}

/* --root-path without its trailing slashes, unless the caller gave one. */
static PyObject *root_path_of(const cli_config *c, PyObject *given) {
    if (given && PyUnicode_GET_LENGTH(given) > 0) {
        Py_INCREF(given);
        return given;
    }
    const char *r = c->root_path ? c->root_path : "";
    size_t n = strlen(r);
    while (n && r[n - 1] == '/')
        n--;
    return PyUnicode_FromStringAndSize(r, (Py_ssize_t)n);
}

static void hub_free(hub *h) {
    Py_XDECREF(h->app);
    Py_XDECREF(h->root_path);
    Py_XDECREF(h->file_wrapper_type);
    Py_XDECREF(h->environ_template);
    Py_XDECREF(h->starts);
    PyMem_Free(h);
}

/* serve(argv, loader, app=None, root_path='', max_concurrent=0,
 *       file_wrapper=None, prog=...) -> exit status. The keyword arguments
 * given (a non-empty root_path, a max_concurrent above 0) win over the
 * flags --root-path and --max-concurrent-app-calls. */
static PyObject *py_serve(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"argv",           "loader",       "app",  "root_path",
                             "max_concurrent", "file_wrapper", "prog", NULL};
    PyObject *argv_list, *loader, *app = Py_None, *root_path = NULL, *file_wrapper = Py_None;
    int max_concurrent = 0;
    const char *prog = "python3 -m spindle";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|OUiOs:serve", kwlist, &PyList_Type, &argv_list,
                                     &loader, &app, &root_path, &max_concurrent, &file_wrapper,
                                     &prog))
        return NULL;
    if (the_hub) {
        PyErr_SetString(PyExc_RuntimeError, "spindle is already serving in this process");
        return NULL;
    }
    char **argv = argv_from_list(argv_list, prog);
    if (!argv)
        return NULL;
    static cli_config c; /* lives as long as serving: reload re-parses into it */
    c.prog = prog;
    int rc = cli_parse((int)PyList_GET_SIZE(argv_list) + 1, argv, &c);
    hub *h = rc == 0 ? PyMem_Calloc(1, sizeof *h) : NULL;
    if (!h) {
        PyMem_Free(argv);
        return rc == 0 ? PyErr_NoMemory() : PyLong_FromLong(rc > 0 ? 0 : c.check_config ? 1 : 2);
    }
    h->loader = loader;
    h->app = app == Py_None ? NULL : app;
    Py_XINCREF(h->app);
    h->root_path = root_path_of(&c, root_path);
    h->file_wrapper_type = file_wrapper == Py_None ? NULL : file_wrapper;
    Py_XINCREF(h->file_wrapper_type);
    max_concurrent = max_concurrent > 0 ? max_concurrent : c.max_concurrent;
    h->max_busy = max_concurrent > 0 ? max_concurrent : 1 << 30;
    h->workers = c.mo.workers;
    h->master_pid = getpid();
    the_hub = h;
    /* Every method and path no --root file claims goes to the application
     * (OPTIONS * excepted). */
    int status = h->root_path ? cli_serve(&c, &(cli_app){wsgi_setup, app_handler, h}) : 1;
    PyMem_Free(argv);
    the_hub = NULL;
    hub_free(h);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(status);
}

static PyObject *py_wait_readable(PyObject *self, PyObject *args, PyObject *kw) {
    return py_wait_fd(self, args, kw, 0);
}

static PyObject *py_wait_writable(PyObject *self, PyObject *args, PyObject *kw) {
    return py_wait_fd(self, args, kw, 1);
}

static PyObject *py_in_request(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(hub_in_greenlet(the_hub));
}

static PyMethodDef methods[] = {
    {"serve", (PyCFunction)(void (*)(void))py_serve, METH_VARARGS | METH_KEYWORDS,
     "serve(argv, loader, app=None, root_path='', max_concurrent=0, file_wrapper=None, "
     "prog=...) -> exit status"},
    {"sleep", py_sleep, METH_VARARGS, "sleep(seconds): yields to other requests meanwhile"},
    {"wait_readable", (PyCFunction)(void (*)(void))py_wait_readable, METH_VARARGS | METH_KEYWORDS,
     "wait_readable(fd, timeout=None) -> bool: True when readable, False on timeout"},
    {"wait_writable", (PyCFunction)(void (*)(void))py_wait_writable, METH_VARARGS | METH_KEYWORDS,
     "wait_writable(fd, timeout=None) -> bool: True when writable, False on timeout"},
    {"wait_fds", py_wait_fds, METH_VARARGS,
     "wait_fds(read_fds, write_fds, timeout=None) -> (readable, writable): waits for any"},
    {"park", py_park, METH_VARARGS,
     "park(timeout=None) -> bool: waits for unpark (True) or the timeout"},
    {"unpark", py_unpark, METH_O, "unpark(greenlet) -> bool: wakes a greenlet parked by park()"},
    {"websocket", (PyCFunction)(void (*)(void))py_websocket, METH_VARARGS | METH_KEYWORDS,
     "websocket(environ, subprotocols=()) -> WebSocket: accepts the WebSocket handshake of "
     "this request (before start_response); WebSocketError if it is not one"},
    {"start_greenlet", py_start_greenlet, METH_O,
     "start_greenlet(fn): fn() runs in a new greenlet on the hub's next turn (spindle.spawn)"},
    {"in_request", py_in_request, METH_NOARGS,
     "in_request() -> bool: running inside a request's greenlet (cooperative waits work)"},
    {"_session_open", py_session_open, METH_O,
     "_session_open(environ) -> the request's session handle (spindle.session wraps it)"},
    {"_asgi_select", py_asgi_select, METH_O, "_asgi_select(timeout) -> [(fd, events)]"},
    {"_asgi_watch", py_asgi_watch, METH_VARARGS, "_asgi_watch(fd, events)"},
    {"_asgi_unwatch", py_asgi_unwatch, METH_O, "_asgi_unwatch(fd)"},
    {"_asgi_serving", py_asgi_serving, METH_VARARGS, "_asgi_serving(state, on_done)"},
    {"_header_key_cache", py_header_key_cache, METH_NOARGS,
     "_header_key_cache() -> dict: how many environ keys the worker keeps (for tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_spindle",
                                    "spindle's C core: the WSGI server and its hub", -1, methods};

PyMODINIT_FUNC PyInit__spindle(void);
PyMODINIT_FUNC PyInit__spindle(void) {
    if (hub_import_greenlet() < 0)
        return NULL;
    if (input_init_type() < 0 || start_response_init_type() < 0 || session_init_type() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "API_VERSION", SPINDLE_API_VERSION) < 0 ||
        websocket_init(m) < 0 || asgi_types_init(m) < 0 || asgi_soon_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
