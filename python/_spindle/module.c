/* module.c — the _spindle extension module: serve() turns the same flags as
 * the spindle binary into a server whose one catch-all route hands each
 * request to the WSGI application, then runs the master and workers (the
 * app is imported in each worker after the fork, or once before with
 * --preload); plus sleep/wait_readable/wait_writable for applications. */
#include "binding.h"
#include "wsgi.h"

#include "cli/cli.h"
#include "base/log.h"
#include "process/master.h"

#include <errno.h>
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

/* In each worker: import the application unless --preload did already. */
static int worker_init(sp_server *s, void *ud) {
    hub *h = ud;
    if (!h->app) {
        h->app = PyObject_CallNoArgs(h->loader);
        if (!h->app) {
            log_msg(LOG_CRITICAL, "cannot load the WSGI application:");
            PyErr_Print();
            return -1;
        }
    }
    if (!PyCallable_Check(h->app)) {
        log_msg(LOG_CRITICAL, "the WSGI application is not callable (a %s)",
                Py_TYPE(h->app)->tp_name);
        return -1;
    }
    if (environ_init(h) < 0) {
        PyErr_Print();
        return -1;
    }
    return 0;
}

/* serve(argv, loader, app=None, root_path="", max_concurrent=0,
 *       file_wrapper=None) -> exit status */
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
    Py_ssize_t argc = PyList_GET_SIZE(argv_list);
    char **argv = PyMem_Calloc((size_t)argc + 2, sizeof *argv);
    if (!argv)
        return PyErr_NoMemory();
    argv[0] = (char *)prog;
    for (Py_ssize_t i = 0; i < argc; i++) {
        PyObject *a = PyList_GET_ITEM(argv_list, i);
        argv[i + 1] = a && PyUnicode_Check(a) ? (char *)PyUnicode_AsUTF8(a) : NULL;
        if (!argv[i + 1]) {
            PyMem_Free(argv);
            PyErr_SetString(PyExc_TypeError, "serve(): argv must be a list of str");
            return NULL;
        }
    }
    static cli_config c; /* lives as long as serving: reload re-parses into it */
    c.prog = prog;
    int rc = cli_parse((int)argc + 1, argv, &c);
    if (rc != 0) {
        PyMem_Free(argv);
        return PyLong_FromLong(rc > 0 ? 0 : 2);
    }
    if (c.app) {
        PyMem_Free(argv);
        fprintf(stderr, "spindle: --app loads C modules into the spindle binary; here the "
                        "application is the WSGI callable named first\n");
        return PyLong_FromLong(2);
    }
    hub *h = PyMem_Calloc(1, sizeof *h);
    if (!h) {
        PyMem_Free(argv);
        return PyErr_NoMemory();
    }
    h->loader = loader;
    h->app = app == Py_None ? NULL : app;
    Py_XINCREF(h->app);
    h->root_path = root_path ? root_path : PyUnicode_FromString("");
    if (root_path)
        Py_INCREF(root_path);
    h->file_wrapper_type = file_wrapper == Py_None ? NULL : file_wrapper;
    Py_XINCREF(h->file_wrapper_type);
    h->max_busy = max_concurrent > 0 ? max_concurrent : 1 << 30;
    h->workers = c.mo.workers;
    h->master_pid = getpid();
    the_hub = h;

    int status = 1;
    sp_server *s = sp_server_new(&c.o);
    if (!s) {
        fprintf(stderr, "spindle: %s\n",
                errno == EINVAL ? "--forwarded-allow-ips: not a list of IPs and CIDRs"
                                : strerror(errno));
        goto out;
    }
    /* Every method and path goes to the application (OPTIONS * excepted). */
    if (cli_setup_server(&c, s) < 0 || sp_route(s, NULL, "/*", wsgi_handler, h) < 0 ||
        cli_listen(&c, s) < 0 || cli_drop_privileges(&c) < 0)
        goto out_server;
    c.mo.reload = cli_reload;
    c.mo.reload_ud = &c;
    server_set_drive(s, hub_drive, h);
    server_set_worker_init(s, worker_init, h);
    server_set_fork_hook(s, fork_hook, h);
    status = master_run(s, &c.mo);
out_server:
    sp_server_free(s);
out:
    PyMem_Free(argv);
    the_hub = NULL;
    Py_XDECREF(h->app);
    Py_XDECREF(h->root_path);
    Py_XDECREF(h->file_wrapper_type);
    Py_XDECREF(h->environ_template);
    PyMem_Free(h);
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
    {"in_request", py_in_request, METH_NOARGS,
     "in_request() -> bool: running inside a request's greenlet (cooperative waits work)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_spindle",
                                    "spindle's C core: the WSGI server and its hub", -1, methods};

PyMODINIT_FUNC PyInit__spindle(void);
PyMODINIT_FUNC PyInit__spindle(void) {
    if (hub_import_greenlet() < 0)
        return NULL;
    if (input_init_type() < 0 || start_response_init_type() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "API_VERSION", SPINDLE_API_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
