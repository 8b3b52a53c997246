/* asgi_send.c — checking ASGI send() messages and turning
 * http.response.start into the response head: status 200-599, headers
 * as (bytes, bytes) pairs with token names and values free of CR, LF and
 * NUL; Content-Length is the server's framing, hop-by-hop fields are the
 * server's own. A refused message raises in send() and is logged. */
#include "asgi/asgi_send.h"

#include "base/log.h"
#include "http/http_chars.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static PyObject *s_type, *s_status, *s_headers, *s_body, *s_more_body, *s_path, *s_start,
    *s_resp_body, *s_pathsend, *s_trailers;
static PyObject *s_kinds[ASEND_ZEROCOPY + 1]; /* the names of the extensions' messages */
static PyObject *client_disconnected;         /* spindle.ClientDisconnected */

PyObject *asend_gone(void) {
    PyErr_SetString(client_disconnected, "the client has closed the connection");
    return NULL;
}

int asend_init(PyObject *module) {
    client_disconnected = PyErr_NewExceptionWithDoc(
        "spindle.ClientDisconnected",
        "Raised by an ASGI send() once the client has gone (ASGI 2.4): stop sending.",
        PyExc_OSError, NULL);
    if (!client_disconnected ||
        PyModule_AddObjectRef(module, "ClientDisconnected", client_disconnected) < 0)
        return -1;
    s_type = PyUnicode_InternFromString("type");
    s_status = PyUnicode_InternFromString("status");
    s_headers = PyUnicode_InternFromString("headers");
    s_body = PyUnicode_InternFromString("body");
    s_more_body = PyUnicode_InternFromString("more_body");
    s_path = PyUnicode_InternFromString("path");
    s_start = PyUnicode_InternFromString("http.response.start");
    s_resp_body = PyUnicode_InternFromString("http.response.body");
    s_pathsend = PyUnicode_InternFromString("http.response.pathsend");
    s_trailers = PyUnicode_InternFromString("trailers");
    s_kinds[ASEND_HINT] = PyUnicode_InternFromString("http.response.early_hint");
    s_kinds[ASEND_TRAILERS] = PyUnicode_InternFromString("http.response.trailers");
    s_kinds[ASEND_ZEROCOPY] = PyUnicode_InternFromString("http.response.zerocopysend");
    return s_type && s_status && s_headers && s_body && s_more_body && s_path && s_start &&
                   s_resp_body && s_pathsend && s_trailers && s_kinds[ASEND_HINT] &&
                   s_kinds[ASEND_TRAILERS] && s_kinds[ASEND_ZEROCOPY] && asgi_ext_init() == 0
               ? 0
               : -1;
}

PyObject *asend_refuse(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *m = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (!m)
        return NULL;
    const char *t = PyUnicode_AsUTF8(m);
    log_msg(LOG_ERROR, "ASGI send() refused: %s", t ? t : "?");
    PyErr_SetObject(PyExc_RuntimeError, m);
    Py_DECREF(m);
    return NULL;
}

/* The message's type: a str, compared by identity first (interned). */
int asend_kind(PyObject *msg) {
    if (!PyDict_Check(msg)) {
        asend_refuse("an ASGI message is a dict, not %.100s", Py_TYPE(msg)->tp_name);
        return -1;
    }
    PyObject *t = PyDict_GetItemWithError(msg, s_type);
    if (!t) {
        if (!PyErr_Occurred())
            asend_refuse("an ASGI message needs a 'type'");
        return -1;
    }
    if (t == s_resp_body)
        return ASEND_BODY;
    if (t == s_start)
        return ASEND_START;
    if (PyUnicode_Check(t)) {
        if (PyUnicode_Compare(t, s_resp_body) == 0)
            return ASEND_BODY;
        if (PyUnicode_Compare(t, s_start) == 0)
            return ASEND_START;
        if (PyUnicode_Compare(t, s_pathsend) == 0)
            return ASEND_PATHSEND;
        for (int k = ASEND_HINT; k <= ASEND_ZEROCOPY; k++)
            if (PyUnicode_Compare(t, s_kinds[k]) == 0)
                return k;
    }
    asend_refuse("unknown ASGI message type %R for an http scope (want http.response.start, "
                 "http.response.body, or an extension of the scope's: http.response.pathsend, "
                 "http.response.zerocopysend, http.response.early_hint, http.response.trailers)",
                 t);
    return -1;
}

const char *asend_kind_name(int kind) {
    return kind == ASEND_PATHSEND ? "http.response.pathsend"
           : kind >= ASEND_HINT   ? PyUnicode_AsUTF8(s_kinds[kind])
                                  : "http.response.body";
}

PyObject *asend_misplaced(acycle *c, int kind) {
    if (!c->started)
        return asend_refuse("%s before http.response.start", asend_kind_name(kind));
    if (c->tr_wait && !c->finished)
        return asend_refuse("%s after the last body: http.response.trailers is due (the start "
                            "said trailers: True)",
                            asend_kind_name(kind));
    return asend_refuse("%s after the response ended (more_body was False)", asend_kind_name(kind));
}

/* By length first: every header of every response is asked. */
static int is_hop_by_hop(const char *n, size_t len) {
    switch (len) {
    case 2:
        return http_ieq(n, len, "te", 2);
    case 7:
        return http_ieq(n, len, "upgrade", 7) || http_ieq(n, len, "trailer", 7);
    case 10:
        return http_ieq(n, len, "connection", 10) || http_ieq(n, len, "keep-alive", 10);
    case 16:
        return http_ieq(n, len, "proxy-connection", 16);
    case 17:
        return http_ieq(n, len, "transfer-encoding", 17);
    default:
        return 0;
    }
}

/* One (name, value) pair into the head. 0, or -1 with the error raised. */
static int add_header(acycle *c, PyObject *pair) {
    PyObject *n = NULL, *v = NULL;
    if ((PyTuple_Check(pair) || PyList_Check(pair)) && PySequence_Fast_GET_SIZE(pair) == 2) {
        n = PySequence_Fast_GET_ITEM(pair, 0);
        v = PySequence_Fast_GET_ITEM(pair, 1);
    }
    if (!n || !PyBytes_Check(n) || !PyBytes_Check(v)) {
        asend_refuse("ASGI header %R is not a pair of bytes (name, value)", pair);
        return -1;
    }
    const char *np = PyBytes_AS_STRING(n), *vp = PyBytes_AS_STRING(v);
    size_t nl = (size_t)PyBytes_GET_SIZE(n), vl = (size_t)PyBytes_GET_SIZE(v);
    int good = nl > 0;
    for (size_t k = 0; good && k < nl; k++)
        good = http_is((unsigned char)np[k], HTTP_C_TCHAR);
    for (size_t k = 0; good && k < vl; k++)
        good = http_is((unsigned char)vp[k], HTTP_C_VALUE);
    if (!good) {
        asend_refuse("invalid ASGI header %R: names are tokens, values have no CR, LF, NUL or "
                     "other control characters",
                     pair);
        return -1;
    }
    sp_res *res = c->res;
    if (!res)
        return 0;
    if (http_ieq(np, nl, "content-length", 14)) {
        if (c->tr_want && c->tr_served && req_get_http_major(c->req) == 1)
            return 0; /* trailers on HTTP/1.1 need chunked framing: the length goes */
        char *end;
        unsigned long long cl = strtoull(vp, &end, 10);
        if (!vl || *end || vp[0] < '0' || vp[0] > '9' ||
            (res_get_declared(res) >= 0 && (uint64_t)res_get_declared(res) != cl)) {
            asend_refuse("invalid ASGI content-length %R", v);
            return -1;
        }
        sp_res_length(res, cl);
        return 0;
    }
    if (http_ieq(np, nl, "date", 4))
        return 0; /* the server's Date goes out; two would be invalid */
    if (c->tr_want && c->tr_served && http_ieq(np, nl, "trailer", 7) &&
        sp_res_header(res, "Trailer", vp) == 0)
        return 0; /* names the trailers that will come (the app's to say, as ASGI asks) */
    if (is_hop_by_hop(np, nl)) {
        /* The connection's framing is the server's; "close" is honoured. */
        if (http_ieq(np, nl, "connection", 10) && http_ieq(vp, vl, "close", 5))
            res_set_force_close(res, 1);
        return 0;
    }
    /* Surrounding whitespace is not part of a value (RFC 9110 §5.5). */
    while (vl && (vp[0] == ' ' || vp[0] == '\t'))
        vp++, vl--;
    size_t tl = vl;
    while (tl && (vp[tl - 1] == ' ' || vp[tl - 1] == '\t'))
        tl--;
    int rc;
    if (tl == vl) {
        rc = sp_res_header(res, np, vp);
    } else {
        char *copy = strndup(vp, tl);
        rc = copy ? sp_res_header(res, np, copy) : -ENOMEM;
        free(copy);
    }
    if (rc < 0) {
        asend_refuse("cannot send ASGI header %R: %s", pair,
                     rc == -ENOSPC ? "too many or too large headers" : "invalid");
        return -1;
    }
    return 0;
}

int asend_start(acycle *c, PyObject *msg) {
    if (c->started) {
        asend_refuse("a second http.response.start (the response has started already)");
        return -1;
    }
    PyObject *st = PyDict_GetItemWithError(msg, s_status);
    long status = st && PyLong_Check(st) ? PyLong_AsLong(st) : -1;
    if (status < 200 || status > 599) {
        if (!PyErr_Occurred())
            asend_refuse("http.response.start needs an int 'status' of 200-599, not %R",
                         st ? st : Py_None);
        return -1;
    }
    PyObject *headers = PyDict_GetItemWithError(msg, s_headers);
    if (!headers && PyErr_Occurred())
        return -1;
    PyObject *tr = PyDict_GetItemWithError(msg, s_trailers);
    int want = tr ? PyObject_IsTrue(tr) : 0;
    if (want < 0 || (!tr && PyErr_Occurred()))
        return -1;
    c->tr_want = (uint8_t)want;
    if (c->res && !c->gone) {
        res_clear_head(c->res);
        sp_res_status(c->res, (int)status);
    }
    if (!headers || headers == Py_None) {
        c->started = 1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(headers, "");
    if (!seq) {
        PyErr_Clear();
        asend_refuse("http.response.start 'headers' is an iterable of (bytes, bytes), not %.100s",
                     Py_TYPE(headers)->tp_name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *fast = PyTuple_Check(p) || PyList_Check(p) ? Py_NewRef(p) : PySequence_Tuple(p);
        if (!fast) {
            PyErr_Clear();
            fast = Py_NewRef(p);
        }
        int rc = add_header(c, fast);
        Py_DECREF(fast);
        if (rc < 0) {
            Py_DECREF(seq);
            if (c->res && !c->gone)
                res_clear_head(c->res); /* not started: the failure is a 500 */
            return -1;
        }
    }
    Py_DECREF(seq);
    c->started = 1;
    return 0;
}

int asend_body(PyObject *msg, PyObject **body, int *more) {
    PyObject *b = PyDict_GetItemWithError(msg, s_body);
    PyObject *m = b || !PyErr_Occurred() ? PyDict_GetItemWithError(msg, s_more_body) : NULL;
    if (PyErr_Occurred())
        return -1;
    static PyObject *empty;
    if (!b) {
        if (!empty && !(empty = PyBytes_FromStringAndSize("", 0)))
            return -1;
        b = empty;
    }
    if (!PyBytes_Check(b)) {
        asend_refuse("http.response.body 'body' must be bytes, not %.100s", Py_TYPE(b)->tp_name);
        return -1;
    }
    *body = b;
    *more = m ? PyObject_IsTrue(m) : 0;
    return *more < 0 ? -1 : 0;
}

int asend_pathsend(acycle *c, PyObject *msg) {
    PyObject *p = PyDict_GetItemWithError(msg, s_path);
    if (!p || !PyUnicode_Check(p)) {
        if (!PyErr_Occurred())
            asend_refuse("http.response.pathsend needs a str 'path'");
        return -1;
    }
    c->finished = 1;
    if (c->gone || c->disconnected) {
        end_cut(c);
        asend_gone();
        return -1;
    }
    PyObject *fs = PyUnicode_EncodeFSDefault(p);
    if (!fs)
        return -1;
    int fd = open(PyBytes_AS_STRING(fs), O_RDONLY | O_CLOEXEC);
    Py_DECREF(fs);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        c->finished = 0;
        asend_refuse("http.response.pathsend %R: %s", p, fd < 0 ? strerror(e) : "not a file");
        return -1;
    }
    if (!res_get_head_sent(c->res) && res_get_declared(c->res) < 0)
        sp_res_length(c->res, (uint64_t)st.st_size);
    c->fd = fd;
    c->off = 0;
    c->count = (size_t)st.st_size;
    c->wfinal = 1;
    c->op |= A_SENDFILE;
    asgi_wake(c);
    return 0;
}
