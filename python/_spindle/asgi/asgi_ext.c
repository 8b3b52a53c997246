/* asgi_ext.c — the ASGI extensions beyond pathsend: the scope's
 * "extensions" for each request (early hints and trailers where the client
 * can take them, zero-copy send, tls on a TLS connection), and the send()
 * messages they add: http.response.early_hint, http.response.trailers and
 * http.response.zerocopysend, checked here and run as coroutine ops. */
#include "asgi/asgi.h"
#include "asgi/asgi_send.h"
#include "common/hints.h"

#include "http/http_chars.h"
#include "http/http_trailer.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static PyObject *s_links, *s_headers, *s_more_trailers, *s_file, *s_offset, *s_count, *s_more_body,
    *v_empty_tuple;
static PyObject *ext_http[4]; /* bit 0: early hints, bit 1: trailers */
static PyObject *ext_ws;

static PyObject *ext_dict(int hints, int trailers) {
    PyObject *d = Py_BuildValue("{s{}s{}}", "http.response.pathsend", "http.response.zerocopysend");
    const char *more[2] = {hints ? "http.response.early_hint" : NULL,
                           trailers ? "http.response.trailers" : NULL};
    for (int i = 0; d && i < 2; i++) {
        PyObject *e = more[i] ? PyDict_New() : NULL;
        if (more[i] && (!e || PyDict_SetItemString(d, more[i], e) < 0))
            Py_CLEAR(d);
        Py_XDECREF(e);
    }
    return d;
}

int asgi_ext_init(void) {
    s_links = asgi_str("links");
    s_headers = asgi_str("headers");
    s_more_trailers = asgi_str("more_trailers");
    s_file = asgi_str("file");
    s_offset = asgi_str("offset");
    s_count = asgi_str("count");
    s_more_body = asgi_str("more_body");
    v_empty_tuple = PyTuple_New(0);
    for (int i = 0; i < 4; i++)
        if (!(ext_http[i] = ext_dict(i & 1, i & 2)))
            return -1;
    ext_ws = Py_BuildValue("{s{}}", "websocket.http.response");
    return s_links && s_headers && s_more_trailers && s_file && s_offset && s_count &&
                   s_more_body && v_empty_tuple && ext_ws
               ? 0
               : -1;
}

/* ---- the tls extension (ASGI TLS spec 0.2) ------------------------------- */

/* Certificate `which` as a str (sp_req_tls_cert_pem), or NULL without an
 * error when there is none. */
static PyObject *cert_pem(const sp_req *r, int which, int *err) {
    char stack[8192];
    int n = sp_req_tls_cert_pem(r, which, stack, sizeof stack);
    if (n < 0)
        return NULL;
    PyObject *s = NULL;
    if ((size_t)n < sizeof stack) {
        if (!(s = PyUnicode_DecodeASCII(stack, n, NULL)))
            *err = 1;
        return s;
    }
    char *big = PyMem_Malloc((size_t)n + 1);
    if (big && sp_req_tls_cert_pem(r, which, big, (size_t)n + 1) == n)
        s = PyUnicode_DecodeASCII(big, n, NULL);
    PyMem_Free(big);
    if (!s)
        *err = 1;
    return s;
}

/* The server's certificate repeats on every request: its str is kept while
 * the PEM is the same. */
static PyObject *server_cert(const sp_req *r, int *err) {
    static PyObject *last;
    PyObject *s = cert_pem(r, -1, err);
    if (!s)
        return *err ? NULL : Py_NewRef(Py_None);
    if (last && PyUnicode_Compare(last, s) == 0) {
        Py_DECREF(s);
        return Py_NewRef(last);
    }
    Py_XSETREF(last, Py_NewRef(s));
    return s;
}

static PyObject *tls_dict(const sp_req *r) {
    int err = 0;
    PyObject *chain = NULL;
    for (int i = 0; !err; i++) {
        PyObject *c = cert_pem(r, i, &err);
        if (!c)
            break;
        if ((!chain && !(chain = PyList_New(0))) || PyList_Append(chain, c) < 0)
            err = 1;
        Py_DECREF(c);
    }
    char subject[1024], verify[256];
    int sl = sp_req_tls_client_subject(r, subject, sizeof subject);
    int vl = sp_req_tls_client_verify(r, verify, sizeof verify);
    const char *failed = vl > 7 && strncmp(verify, "FAILED:", 7) == 0 ? verify + 7 : NULL;
    PyObject *cert = err ? NULL : server_cert(r, &err);
    PyObject *d =
        err ? NULL
            : Py_BuildValue(
                  "{sNsOsNsNsisi}", "server_cert", cert, "client_cert_chain",
                  chain ? chain : v_empty_tuple, "client_cert_name",
                  sl >= 0 ? PyUnicode_DecodeUTF8(subject, sl, "replace") : Py_NewRef(Py_None),
                  "client_cert_error", failed ? PyUnicode_FromString(failed) : Py_NewRef(Py_None),
                  "tls_version", sp_req_tls_version_id(r), "cipher_suite", sp_req_tls_cipher_id(r));
    Py_XDECREF(chain); /* the N values are the dict's, or released when it failed */
    return d;
}

PyObject *asgi_extensions(acycle *c) {
    const sp_req *r = c->req;
    int h1_1 = req_get_http_major(r) == 2 || sp_req_minor_version(r) >= 1; /* HTTP/2, or HTTP/1.1 */
    PyObject *base = ext_ws;
    if (!c->is_ws) {
        /* No 1xx to an HTTP/1.0 client (RFC 9110 §15.2); trailers only to a
         * client that said TE: trailers, as the ASGI extension asks. */
        c->hints_served = (uint8_t)h1_1;
        c->tr_served = (uint8_t)(h1_1 && http_te_trailers(req_get_head(r)));
        base = ext_http[c->hints_served | c->tr_served << 1];
    }
    if (!req_get_tls(r))
        return Py_NewRef(base);
    PyObject *d = PyDict_Copy(base);
    PyObject *t = d ? tls_dict(r) : NULL;
    if (!t || PyDict_SetItemString(d, "tls", t) < 0)
        Py_CLEAR(d);
    Py_XDECREF(t);
    return d;
}

/* ---- the messages ---------------------------------------------------------- */

int asgi_send_busy(const acycle *c) {
    return c->wkeep || (c->op & (A_WRITE | A_SENDFILE | A_HINTS | A_TRAILERS));
}

static PyObject *busy_error(void) {
    PyErr_SetString(PyExc_RuntimeError,
                    "ASGI send() called while an earlier send() is still in progress "
                    "(await each send)");
    return NULL;
}

static PyObject *op_future(acycle *c, int op) {
    c->op |= op;
    asgi_wake(c);
    c->send_fut = asgi_future();
    return Py_XNewRef(c->send_fut);
}

/* RFC 8297 through the extension (asgiref's extensions.rst): links are Link
 * field values; before the head goes out (before or after the start: the
 * head waits for the first body), never after. */
PyObject *asend_early_hint(acycle *c, PyObject *msg) {
    if (c->finished || c->tr_wait || (c->res && res_get_head_sent(c->res)))
        return asend_refuse("http.response.early_hint after the response head went out: a 103 "
                            "comes before the answer");
    if (asgi_send_busy(c))
        return busy_error();
    PyObject *links = PyDict_GetItemWithError(msg, s_links);
    if (!links) {
        if (PyErr_Occurred())
            return NULL;
        return asend_refuse("http.response.early_hint needs 'links', an iterable of bytes");
    }
    hints_list l;
    if (hints_collect(links, &l) < 0) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyObject *why = v ? PyObject_Str(v) : NULL;
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        PyObject *rc = asend_refuse("http.response.early_hint refused: %S", why ? why : Py_None);
        Py_XDECREF(why);
        return rc;
    }
    if (l.n == 0 || !c->hints_served || c->gone || c->disconnected) {
        hints_release(&l); /* nothing to send, or a client that cannot take a 1xx */
        return asgi_ready(Py_NewRef(Py_None));
    }
    c->wkeep = l.keep;
    c->xarg = (void *)l.v;
    c->xn = l.n;
    return op_future(c, A_HINTS);
}

/* The pairs of one http.response.trailers message appended to tr_list. */
static int gather_trailers(acycle *c, PyObject *headers) {
    PyObject *seq = headers && headers != Py_None
                        ? PySequence_Fast(headers, "http.response.trailers 'headers'")
                        : PyTuple_New(0);
    if (!seq)
        return -1;
    if (!c->tr_list && !(c->tr_list = PyList_New(0))) {
        Py_DECREF(seq);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i), *n = NULL, *v = NULL;
        if ((PyTuple_Check(p) || PyList_Check(p)) && PySequence_Fast_GET_SIZE(p) == 2) {
            n = PySequence_Fast_GET_ITEM(p, 0);
            v = PySequence_Fast_GET_ITEM(p, 1);
        }
        int good = n && PyBytes_Check(n) && PyBytes_Check(v) &&
                   http_trailer_name_ok(PyBytes_AS_STRING(n), (size_t)PyBytes_GET_SIZE(n));
        for (Py_ssize_t k = 0; good && k < PyBytes_GET_SIZE(v); k++)
            good = http_is((unsigned char)PyBytes_AS_STRING(v)[k], HTTP_C_VALUE);
        if (!good) {
            asend_refuse("invalid trailer %R: a pair of bytes, the name a token that may be a "
                         "trailer (not content-length, transfer-encoding, host, te, trailer, "
                         "content-type, ...), the value free of CR, LF, NUL and controls",
                         p);
            rc = -1;
        } else if (PyList_GET_SIZE(c->tr_list) == 16) {
            asend_refuse("at most 16 trailer fields");
            rc = -1;
        } else {
            PyObject *t = PyTuple_Pack(2, n, v);
            rc = t ? PyList_Append(c->tr_list, t) : -1;
            Py_XDECREF(t);
        }
    }
    Py_DECREF(seq);
    return rc;
}

/* After the last http.response.body of a start with trailers: True. Sent
 * only where the scope declared the extension; elsewhere they are dropped
 * (the ASGI extension: only to a client that sent TE: trailers) and the
 * response ends as it would have. */
PyObject *asend_trailers(acycle *c, PyObject *msg) {
    if (!c->started || !c->tr_want)
        return asend_refuse("http.response.trailers without an http.response.start that said "
                            "trailers: True");
    if (c->finished)
        return asend_misplaced(c, ASEND_TRAILERS);
    if (!c->tr_wait)
        return asend_refuse("http.response.trailers before the last http.response.body "
                            "(more_body False)");
    if (asgi_send_busy(c))
        return busy_error();
    PyObject *m = PyDict_GetItemWithError(msg, s_more_trailers);
    int more = m ? PyObject_IsTrue(m) : 0;
    PyObject *headers =
        more >= 0 && !PyErr_Occurred() ? PyDict_GetItemWithError(msg, s_headers) : NULL;
    if (more < 0 || PyErr_Occurred() || gather_trailers(c, headers) < 0)
        return NULL;
    if (more)
        return asgi_ready(Py_NewRef(Py_None));
    c->finished = 1;
    if (c->gone || c->disconnected) {
        end_cut(c);
        return asend_gone();
    }
    size_t n = c->tr_served ? (size_t)PyList_GET_SIZE(c->tr_list) : 0;
    sp_field *f = PyMem_Malloc((n ? n : 1) * sizeof *f);
    if (!f)
        return PyErr_NoMemory();
    for (size_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(c->tr_list, (Py_ssize_t)i);
        f[i] = (sp_field){PyBytes_AS_STRING(PyTuple_GET_ITEM(t, 0)),
                          PyBytes_AS_STRING(PyTuple_GET_ITEM(t, 1))};
    }
    c->wkeep = c->tr_list; /* the bytes stay alive until the op is done */
    c->tr_list = NULL;
    c->xarg = f;
    c->xn = n;
    c->op |= A_TRAILERS;
    asgi_wake(c);
    return asgi_ready(Py_NewRef(Py_None)); /* the last send: nobody waits for it */
}

/* An optional int key: *v set, 1; absent or None: 0; -1 with an error. */
static int opt_int(PyObject *msg, PyObject *key, long long *v) {
    PyObject *o = PyDict_GetItemWithError(msg, key);
    if (!o || o == Py_None)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyLong_Check(o) || (*v = PyLong_AsLongLong(o)) < 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            asend_refuse("http.response.zerocopysend '%U' is an int >= 0, not %R", key, o);
        }
        return -1;
    }
    return 1;
}

/* asgiref's zero-copy send: count bytes of an open file from offset (else
 * from its position, which then moves on as a read would), through the
 * core's sendfile path. The app keeps its file and closes it: the server
 * sends from a duplicate descriptor, so an early close cannot hit it. */
PyObject *asend_zerocopy(acycle *c, PyObject *msg) {
    if (asgi_send_busy(c))
        return busy_error();
    PyObject *file = PyDict_GetItemWithError(msg, s_file);
    int fd = file ? PyObject_AsFileDescriptor(file) : -1;
    if (fd < 0) {
        PyErr_Clear();
        return asend_refuse("http.response.zerocopysend needs 'file', an open file or its fd");
    }
    long long off = 0, count = 0;
    int has_off = opt_int(msg, s_offset, &off),
        has_count = has_off < 0 ? -1 : opt_int(msg, s_count, &count);
    PyObject *mb = has_count >= 0 ? PyDict_GetItemWithError(msg, s_more_body) : NULL;
    int more = mb ? PyObject_IsTrue(mb) : 0;
    if (has_count < 0 || more < 0 || PyErr_Occurred())
        return NULL;
    struct stat st;
    if (!has_off && (off = lseek(fd, 0, SEEK_CUR)) < 0)
        off = -1;
    if (off < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return asend_refuse("http.response.zerocopysend: fd %d is not a regular file", fd);
    if (!has_count)
        count = st.st_size > off ? st.st_size - off : 0;
    if (off > st.st_size || count > st.st_size - off)
        return asend_refuse("http.response.zerocopysend: offset %lld + count %lld is past the "
                            "end of the file (%lld bytes)",
                            off, count, (long long)st.st_size);
    if (!more && c->tr_want)
        c->tr_wait = 1; /* the trailers end the response */
    else if (!more)
        c->finished = 1;
    if (c->gone || c->disconnected) {
        end_cut(c);
        return asend_gone();
    }
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (!has_off)
        lseek(fd, off + count, SEEK_SET);
    c->fd = dup;
    c->off = off;
    c->count = (size_t)count;
    c->wfinal = c->finished;
    if (c->wfinal) {
        c->op |= A_SENDFILE;
        asgi_wake(c);
        return asgi_ready(Py_NewRef(Py_None));
    }
    return op_future(c, A_SENDFILE);
}
