/* module.c — the _spindle extension module: serve() parses the flags shared
 * with the spindle binary and runs the shared start-up sequence (cli_serve)
 * with the WSGI or ASGI application as the catch-all (imported in each
 * worker after the fork, or once before with --preload; spindle/_load.py
 * finds it and words a failure); plus sleep/wait_readable/wait_writable. */
#include "asgi/asgi.h"
#include "common/binding.h"
#include "wsgi/wsgi.h"
#include "common/hints.h"

#include "cli/cli.h"
#include "base/log.h"

#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
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

/* How the application is loaded: the flags read in the master (one server
 * per process, so module state). */
static struct {
    int factory;            /* --factory */
    const char *log_config; /* --log-config FILE, applied once per process */
    int log_configured;     /* applied (in the master with --preload: inherited) */
    int resolved;           /* the_hub->app is the application (loaded, checked) */
    int *announced;         /* shared by the workers: the interface said once */
} ld;

/* The exception raised, taken (NULL if none), with its traceback attached. */
static PyObject *take_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    if (val && tb)
        PyException_SetTraceback(val, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return val;
#endif
}

/* spindle._load.NAME(args...): the result, or NULL with the exception set
 * (the caller words it). */
static PyObject *load_call(const char *name, const char *fmt, ...) {
    PyObject *mod = PyImport_ImportModule("spindle._load");
    PyObject *fn = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    if (!fn)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *args = Py_VaBuildValue(fmt, ap);
    va_end(ap);
    PyObject *r = args ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(args);
    Py_DECREF(fn);
    return r;
}

/* One line of the error log (a worker: to_log) or of stderr after
 * "spindle: " (the master's --preload and --check-config, before serving). */
static void say(int to_log, log_level level, const char *text) {
    if (to_log)
        log_msg(level, "%s", text);
    else
        fprintf(stderr, "spindle: %s\n", text);
}

/* The application did not load (the exception raised): the one line of
 * spindle._load.failure, and at --log-level debug the traceback too, a
 * line each; with --reload its files are watched (fixing them is the
 * change awaited). */
static void load_failed(hub *h, int to_log) {
    PyObject *exc = take_exception();
    if (to_log && h->reload)
        report_files(exc);
    PyObject *spec =
        h->loader && h->loader != Py_None ? PyObject_GetAttrString(h->loader, "spec") : NULL;
    PyErr_Clear();
    PyObject *line =
        load_call("failure", "(OOz)", spec ? spec : Py_None, exc ? exc : Py_None, h->interface);
    const char *text = line ? PyUnicode_AsUTF8(line) : NULL;
    if (text)
        say(to_log, LOG_CRITICAL, text);
    else { /* the formatter itself failed: Python's own words, then */
        PyErr_Clear();
        say(to_log, LOG_CRITICAL, "cannot load the application:");
        if (exc) {
            Py_INCREF(exc);
#if PY_VERSION_HEX >= 0x030C0000
            PyErr_SetRaisedException(exc);
#else
            Py_INCREF(Py_TYPE(exc));
            PyErr_Restore((PyObject *)Py_TYPE(exc), exc, PyException_GetTraceback(exc));
#endif
            PyErr_Print();
        }
    }
    if (text && exc && log_get_level() == LOG_DEBUG) {
        PyObject *tb = load_call("traceback_text", "(O)", exc);
        const char *t = tb ? PyUnicode_AsUTF8(tb) : NULL;
        for (const char *p = t; p && *p;) {
            size_t n = strcspn(p, "\n");
            if (to_log)
                log_msg(LOG_DEBUG, "%.*s", (int)n, p);
            else
                fprintf(stderr, "%.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
        Py_XDECREF(tb);
    }
    PyErr_Clear();
    Py_XDECREF(line);
    Py_XDECREF(spec);
    Py_XDECREF(exc);
}

/* --log-config, before the application is imported. 0, or -1 with the
 * reason said (to_log as for say). */
static int configure_logging(int to_log) {
    if (!ld.log_config || ld.log_configured)
        return 0;
    ld.log_configured = 1;
    PyObject *r = load_call("apply_log_config", "(s)", ld.log_config);
    if (r) {
        Py_DECREF(r);
        return 0;
    }
    PyObject *exc = take_exception();
    PyObject *why = exc ? PyObject_Str(exc) : NULL;
    const char *w = why ? PyUnicode_AsUTF8(why) : NULL;
    PyErr_Clear();
    char text[1024];
    if (w && strncmp(w, "--log-config", 12) == 0)
        snprintf(text, sizeof text, "%s", w);
    else
        snprintf(text, sizeof text, "--log-config %s: %s: %s", ld.log_config,
                 exc ? Py_TYPE(exc)->tp_name : "error", w ? w : "");
    say(to_log, LOG_CRITICAL, text);
    Py_XDECREF(why);
    Py_XDECREF(exc);
    return -1;
}

/* h->app made the application: imported by the loader unless given,
 * called if --factory, checked callable (spindle._load.resolve). 0, or -1
 * with the failure said. */
static int resolve_app(hub *h, int to_log) {
    PyObject *app = load_call("resolve", "(OOi)", h->loader ? h->loader : Py_None,
                              h->app ? h->app : Py_None, ld.factory);
    if (!app) {
        load_failed(h, to_log);
        return -1;
    }
    Py_XSETREF(h->app, app);
    ld.resolved = 1;
    return 0;
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

/* The first worker to find out says the interface, when the master could
 * not say it in the banner (it imports nothing without --preload). */
static void announce(hub *h) {
    if (!ld.announced || __atomic_exchange_n(ld.announced, 1, __ATOMIC_RELAXED))
        return;
    PyObject *spec =
        h->loader && h->loader != Py_None ? PyObject_GetAttrString(h->loader, "spec") : NULL;
    const char *sp = spec && PyUnicode_Check(spec) ? PyUnicode_AsUTF8(spec) : NULL;
    PyErr_Clear();
    log_msg(LOG_INFO, "%s is %s application", sp ? sp : "the application",
            h->asgi ? "an ASGI" : "a WSGI");
    Py_XDECREF(spec);
}

/* In each worker: import the application unless --preload did already. */
static int worker_init(sp_server *s, void *ud) {
    hub *h = ud;
    /* The watchdog's stall signal dumps the Python traceback of the code
     * that holds the loop, before the kill. */
    call_dev("install_stall_dump", NULL, "(i)", MASTER_STALL_SIGNAL);
    if (configure_logging(1) < 0 || (!ld.resolved && resolve_app(h, 1) < 0))
        return -1; /* the worker's boot-failed status: the master stops */
    if (h->reload)
        report_files(NULL);
    if ((h->asgi = is_asgi(h)) < 0)
        return -1;
    announce(h);
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
    return ((hub *)ud)->asgi ? asgi_handler(req, res, ud) : hub_handler(req, res, ud);
}

static int app_drive(sp_server *s, void *ud) {
    return ((hub *)ud)->asgi ? asgi_drive(s, ud) : hub_drive(s, ud);
}

/* The banner's "app:app (ASGI)": the interface when the master knows it
 * (--preload, an application object, --interface), else the workers say. */
static void describe(const cli_config *c, void *ud, char *out, size_t n) {
    hub *h = ud;
    PyObject *spec =
        h->loader && h->loader != Py_None ? PyObject_GetAttrString(h->loader, "spec") : NULL;
    const char *sp = spec && PyUnicode_Check(spec) ? PyUnicode_AsUTF8(spec) : NULL;
    PyErr_Clear();
    const char *kind = NULL;
    if (ld.resolved) {
        int a = is_asgi(h);
        kind = a < 0 ? NULL : a ? "ASGI" : "WSGI";
    } else if (h->interface && strcmp(h->interface, "auto") != 0)
        kind = strcmp(h->interface, "asgi") == 0 ? "ASGI" : "WSGI";
    snprintf(out, n, "%s (%s)", sp ? sp : "the application object",
             kind ? kind : "WSGI or ASGI, as the workers find it");
    Py_XDECREF(spec);
    if (!kind) {
        /* Said once by the first worker: a shared word, before the fork. */
        void *m =
            mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ld.announced = m == MAP_FAILED ? NULL : m;
    }
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
    ld.factory = c->factory;
    ld.log_config = c->log_config;
    /* --check-config imports it here too: that is what it checks. A given
     * application object is checked (and --factory called) here as well. */
    int here = (c->preload && !c->reload) || c->check_config || h->app;
    if (here && (h->app || h->loader != Py_None)) {
        if (!h->app && configure_logging(0) < 0)
            return 1;
        if (resolve_app(h, 0) < 0)
            return 1;
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

/* --env-file (or SPINDLE_ENV_FILE) loaded before the flags are parsed, so
 * the SPINDLE_* variables it sets count as the environment's; a bad file
 * is said by the flag's own parse, after. */
static void load_env_file(char **argv) {
    const char *path = getenv("SPINDLE_ENV_FILE");
    for (int i = 1; argv[i] && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--env-file") == 0 && argv[i + 1])
            path = argv[++i];
        else if (strncmp(argv[i], "--env-file=", 11) == 0)
            path = argv[i] + 11;
    }
    if (path)
        cli_env_file_load(path, 1);
}

/* os.environ is a copy Python took at start: the variables an env file put
 * into the C environment since are added to it (none is changed). */
static void sync_os_environ(void) {
    extern char **environ;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *env = os ? PyObject_GetAttrString(os, "environ") : NULL;
    for (char **e = environ; env && *e; e++) {
        const char *eq = strchr(*e, '=');
        PyObject *k = eq ? PyUnicode_DecodeFSDefaultAndSize(*e, eq - *e) : NULL;
        PyObject *v = k ? PyUnicode_DecodeFSDefault(eq + 1) : NULL;
        if (v && PyMapping_HasKey(env, k) == 0)
            PyObject_SetItem(env, k, v);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    PyErr_Clear();
    Py_XDECREF(env);
    Py_XDECREF(os);
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
    environ_release();
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
    load_env_file(argv);
    static cli_config c; /* lives as long as serving: reload re-parses into it */
    c.prog = prog;
    int rc = cli_parse((int)PyList_GET_SIZE(argv_list) + 1, argv, &c);
    if (c.env_file)
        sync_os_environ();
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
    int status = h->root_path ? cli_serve(&c, &(cli_app){wsgi_setup, app_handler, h, describe}) : 1;
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

/* log(level, message): one line of the error log, in its format (text or
 * --error-log-format json), for spindle's own Python code. */
static PyObject *py_log(PyObject *self, PyObject *args) {
    const char *level, *text;
    if (!PyArg_ParseTuple(args, "ss:log", &level, &text))
        return NULL;
    int lv = log_parse_level(level);
    if (lv < 0) {
        PyErr_Format(PyExc_ValueError, "log(): unknown level %s", level);
        return NULL;
    }
    log_msg((log_level)lv, "%s", text);
    Py_RETURN_NONE;
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
    {"start_greenlet_threadsafe", py_start_greenlet_threadsafe, METH_O,
     "start_greenlet_threadsafe(fn): start_greenlet from any thread of the process: wakes "
     "the worker's loop"},
    {"on_loop_thread", py_on_loop_thread, METH_NOARGS,
     "on_loop_thread() -> bool: the calling thread is the worker loop's (or no loop drives "
     "yet)"},
    {"log", py_log, METH_VARARGS,
     "log(level, message): a line of spindle's error log (debug, info, warning, error, "
     "critical)"},
    {"in_request", py_in_request, METH_NOARGS,
     "in_request() -> bool: running inside a request's greenlet (cooperative waits work)"},
    {"_session_open", py_session_open, METH_O,
     "_session_open(environ) -> the request's session handle (spindle.session wraps it)"},
    {"_bus_publish", py_bus_publish, METH_VARARGS, "_bus_publish(topic, data) -> id"},
    {"_bus_subscribe", py_bus_subscribe, METH_VARARGS, "_bus_subscribe(topic, since=None)"},
    {"_bus_apublish", py_bus_apublish, METH_VARARGS, "_bus_apublish(topic, data) -> awaitable"},
    {"_bus_asubscribe", py_bus_asubscribe, METH_VARARGS, "_bus_asubscribe(topic, since, cycle)"},
    {"_bus_stats", py_bus_stats, METH_NOARGS, "_bus_stats() -> dict (for tests)"},
    {"_asgi_select", py_asgi_select, METH_O, "_asgi_select(timeout) -> [(fd, events)]"},
    {"_asgi_watch", py_asgi_watch, METH_VARARGS, "_asgi_watch(fd, events)"},
    {"_asgi_unwatch", py_asgi_unwatch, METH_O, "_asgi_unwatch(fd)"},
    {"_asgi_serving", py_asgi_serving, METH_VARARGS, "_asgi_serving(state, on_done)"},
    {"_frame_chunks", py_frame_chunks, METH_NOARGS,
     "_frame_chunks() -> dict: pooled greenlets on a small frame chunk (for tests)"},
    {"_header_key_cache", py_header_key_cache, METH_NOARGS,
     "_header_key_cache() -> dict: how many environ keys the worker keeps (for tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_spindle",
                                    "spindle's C core: the WSGI server and its hub", -1, methods};

PyMODINIT_FUNC PyInit__spindle(void);
PyMODINIT_FUNC PyInit__spindle(void) {
    if (hub_import_greenlet() < 0 || frame_chunk_init() < 0)
        return NULL;
    if (wsgi_init_types() < 0 || session_init_type() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "API_VERSION", SPINDLE_API_VERSION) < 0 ||
        websocket_init(m) < 0 || asgi_types_init(m) < 0 || asgi_soon_init(m) < 0 ||
        bus_init(m) < 0 || !hints_function() ||
        PyModule_AddObjectRef(m, "early_hints", hints_function()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
