/* environ.c — builds the PEP 3333 environ for a request: a copy of a
 * template holding the constant entries (built once per worker), then the
 * request's own: method, PATH_INFO (percent-decoded, as latin-1), query,
 * protocol, addresses, CONTENT_*, and HTTP_* (repeats joined with ", ",
 * cookies with "; "; names containing '_' dropped so X_Forwarded_For cannot
 * pose as X-Forwarded-For). The keys come from header_keys.c; the part
 * the request's bytes decide is reused from env_cache.c when they repeat. */
#include "wsgi/wsgi.h"
#include "common/hints.h"

#include "http/http_chars.h"
#include "http/path_norm.h"

#include <sys/socket.h>
#include <string.h>

static PyObject *s_get, *s_head, *s_post, *s_put, *s_http10, *s_http11, *s_empty;
static PyObject *k_method, *k_path, *k_query, *k_proto, *k_sname, *k_sport, *k_raddr, *k_rport,
    *k_ctype, *k_clen, *k_input, *k_raw_uri, *k_scheme, *k_ssl_protocol, *k_ssl_cipher,
    *k_ssl_verify, *k_ssl_s_dn, *k_ssl_sni, *s_on;

static PyObject *intern(const char *s) {
    return PyUnicode_InternFromString(s);
}

static PyObject *environ_template; /* the constant entries, built once per worker */

void environ_release(void) {
    Py_CLEAR(environ_template);
}

int environ_init(hub *h) {
    k_method = intern("REQUEST_METHOD");
    k_path = intern("PATH_INFO");
    k_query = intern("QUERY_STRING");
    k_proto = intern("SERVER_PROTOCOL");
    k_sname = intern("SERVER_NAME");
    k_sport = intern("SERVER_PORT");
    k_raddr = intern("REMOTE_ADDR");
    k_rport = intern("REMOTE_PORT");
    k_ctype = intern("CONTENT_TYPE");
    k_clen = intern("CONTENT_LENGTH");
    k_input = intern("wsgi.input");
    k_raw_uri = intern("RAW_URI");
    k_scheme = intern("wsgi.url_scheme");
    k_ssl_protocol = intern("SSL_PROTOCOL");
    k_ssl_cipher = intern("SSL_CIPHER");
    k_ssl_verify = intern("SSL_CLIENT_VERIFY");
    k_ssl_s_dn = intern("SSL_CLIENT_S_DN");
    k_ssl_sni = intern("SSL_TLS_SNI");
    s_on = intern("on");
    s_get = intern("GET");
    s_head = intern("HEAD");
    s_post = intern("POST");
    s_put = intern("PUT");
    s_http10 = intern("HTTP/1.0");
    s_http11 = intern("HTTP/1.1");
    s_empty = intern("");
    if (header_keys_init() < 0)
        return -1;
    if (!k_method || !k_path || !k_query || !k_proto || !k_sname || !k_sport || !k_raddr ||
        !k_rport || !k_ctype || !k_clen || !k_input || !k_raw_uri || !k_scheme || !s_get ||
        !s_head || !s_post || !s_put || !s_http10 || !s_http11 || !s_empty)
        return -1;

    /* Presized for a whole environ: PyDict_Copy clones the table as it is,
     * so each request's copy takes its keys without ever growing. */
    PyObject *t = _PyDict_NewPresized(40);
    if (!t)
        return -1;
    PyObject *sys_stderr = PySys_GetObject("stderr"); /* borrowed */
    PyObject *version = Py_BuildValue("(ii)", 1, 0);
    int bad =
        !version || PyDict_SetItemString(t, "wsgi.version", version) < 0 ||
        PyDict_SetItemString(t, "wsgi.multithread", Py_False) < 0 ||
        PyDict_SetItemString(t, "wsgi.multiprocess", h->workers > 1 ? Py_True : Py_False) < 0 ||
        PyDict_SetItemString(t, "wsgi.run_once", Py_False) < 0 ||
        PyDict_SetItemString(t, "wsgi.input_terminated", Py_True) < 0 ||
        PyDict_SetItem(t, k_scheme, PyUnicode_FromString("http")) < 0 ||
        PyDict_SetItemString(t, "wsgi.errors", sys_stderr ? sys_stderr : Py_None) < 0 ||
        PyDict_SetItemString(t, "SCRIPT_NAME", h->root_path) < 0 ||
        PyDict_SetItemString(t, "SERVER_SOFTWARE", PyUnicode_FromString("spindle")) < 0 ||
        !hints_function() || PyDict_SetItemString(t, "spindle.early_hints", hints_function()) < 0;
    Py_XDECREF(version);
    if (!bad && h->file_wrapper_type)
        bad = PyDict_SetItemString(t, "wsgi.file_wrapper", h->file_wrapper_type) < 0;
    if (bad) {
        Py_DECREF(t);
        return -1;
    }
    environ_template = t;
    return 0;
}

static PyObject *latin1(const char *p, size_t n) {
    return PyUnicode_DecodeLatin1(p, (Py_ssize_t)n, NULL);
}

/* Sets env[key] = value (a new reference, consumed). */
static int set_new(PyObject *env, PyObject *key, PyObject *value) {
    if (!value)
        return -1;
    int rc = PyDict_SetItem(env, key, value);
    Py_DECREF(value);
    return rc;
}

static int add_header(PyObject *env, const http_field *f) {
    int skip;
    if (http_ieq(f->name, f->name_len, "content-type", 12))
        return set_new(env, k_ctype, latin1(f->value, f->value_len));
    if (http_ieq(f->name, f->name_len, "content-length", 14))
        return set_new(env, k_clen, latin1(f->value, f->value_len));
    PyObject *key = header_key(f->name, f->name_len, &skip);
    if (!key)
        return skip ? 0 : -1;
    PyObject *value = latin1(f->value, f->value_len);
    if (!value) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *old = PyDict_GetItemWithError(env, key); /* borrowed */
    if (old) {
        int cookie = http_ieq(f->name, f->name_len, "cookie", 6);
        PyObject *joined = PyUnicode_FromFormat("%U%s%U", old, cookie ? "; " : ", ", value);
        Py_DECREF(value);
        value = joined;
        if (!value) {
            Py_DECREF(key);
            return -1;
        }
    } else if (PyErr_Occurred()) {
        Py_DECREF(key);
        Py_DECREF(value);
        return -1;
    }
    int rc = PyDict_SetItem(env, key, value);
    Py_DECREF(key);
    Py_DECREF(value);
    return rc;
}

static PyObject *method_str(const http_request *h) {
    PyObject *m;
    switch (h->method_id) {
    case HTTP_M_GET:
        m = s_get;
        break;
    case HTTP_M_HEAD:
        m = s_head;
        break;
    case HTTP_M_POST:
        m = s_post;
        break;
    case HTTP_M_PUT:
        m = s_put;
        break;
    default:
        return latin1(h->method, h->method_len);
    }
    Py_INCREF(m);
    return m;
}

/* PATH_INFO: the router's path (the target's, normalized: dot-segments
 * removed, runs of '/' merged), percent-decoded, as latin-1 (PEP 3333), less
 * SCRIPT_NAME when the path starts with it. The same split as the router's
 * and QUERY_STRING's, so "http://h?/admin" is "/" with the query "/admin". */
static PyObject *path_info(hub *h, const sp_req *r) {
    sp_str path = req_get_path(r); /* copied below: no slice kept */
    const char *t = path.ptr;
    size_t n = path.len;
    char stack[1024];
    char *buf = n < sizeof stack ? stack : PyMem_Malloc(n + 1);
    if (!buf)
        return PyErr_NoMemory();
    long len = path_percent_decode(t, n, buf, n + 1);
    PyObject *res;
    if (len < 0) {
        res = latin1(t, n); /* cannot happen: the server refused bad escapes */
    } else {
        size_t off = 0;
        Py_ssize_t rl = PyUnicode_GET_LENGTH(h->root_path);
        if (rl && (size_t)len >= (size_t)rl &&
            memcmp(buf, PyUnicode_DATA(h->root_path), (size_t)rl) == 0 &&
            ((size_t)len == (size_t)rl || buf[rl] == '/'))
            off = (size_t)rl;
        res = latin1(buf + off, (size_t)len - off);
    }
    if (buf != stack)
        PyMem_Free(buf);
    return res;
}

/* SERVER_NAME and SERVER_PORT from Host (RFC 9112 §3.2), else the defaults. */
static int server_name(PyObject *env, const sp_req *r) {
    const char *host = req_get_head(r)->host;
    size_t n = req_get_head(r)->host_len;
    if (!host || !n)
        return set_new(env, k_sname, PyUnicode_FromString("localhost")) < 0 ||
                       set_new(env, k_sport, PyUnicode_FromString("80")) < 0
                   ? -1
                   : 0;
    size_t name_end = n;
    const char *port = NULL;
    size_t port_len = 0;
    if (host[0] == '[') {
        const char *close = memchr(host, ']', n);
        if (close && close + 1 < host + n && close[1] == ':') {
            name_end = (size_t)(close + 1 - host);
            port = close + 2;
            port_len = (size_t)(host + n - port);
        }
    } else {
        const char *colon = memchr(host, ':', n);
        if (colon) {
            name_end = (size_t)(colon - host);
            port = colon + 1;
            port_len = (size_t)(host + n - port);
        }
    }
    if (set_new(env, k_sname, latin1(host, name_end)) < 0)
        return -1;
    return set_new(env, k_sport, port ? latin1(port, port_len) : PyUnicode_FromString("80"));
}

/* The client's address as a str: the peer's, cached for the last peer seen
 * (most requests come from the address before them: keep-alive, a proxy),
 * or the forwarded one when the peer is a trusted proxy. */
static PyObject *remote_addr(const sp_req *r) {
    static uint8_t last_ip[16];
    static int last_family;
    static PyObject *last;
    req_conn_info ci;
    req_get_conn(r, &ci);
    const req_conn_info *c = &ci;
    if (c->peer_trusted)
        return PyUnicode_FromString(sp_req_client_addr(r));
    size_t n = c->peer_family == AF_INET ? 4 : 16;
    if (last && last_family == c->peer_family && memcmp(last_ip, c->peer_ip, n) == 0) {
        Py_INCREF(last);
        return last;
    }
    PyObject *a = PyUnicode_FromString(sp_req_client_addr(r));
    if (!a)
        return NULL;
    Py_XSETREF(last, a);
    Py_INCREF(a);
    memcpy(last_ip, c->peer_ip, n);
    last_family = c->peer_family;
    return a;
}

static PyObject *port_text(unsigned port) {
    char buf[8];
    int n = 0;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + port % 10);
        port /= 10;
    } while (port);
    return PyUnicode_FromStringAndSize(buf + sizeof buf - n, n);
}

/* A TLS connection's variables, named as mod_ssl names them: HTTPS,
 * SSL_PROTOCOL, SSL_CIPHER, SSL_CLIENT_VERIFY, SSL_CLIENT_S_DN, SSL_TLS_SNI. */
static int tls_environ(PyObject *env, const sp_req *r) {
    char buf[1024];
    if (set_new(env, k_scheme, PyUnicode_FromString("https")) < 0 ||
        PyDict_SetItemString(env, "HTTPS", s_on) < 0 ||
        set_new(env, k_ssl_protocol, PyUnicode_FromString(sp_req_tls_version(r))) < 0 ||
        set_new(env, k_ssl_cipher, PyUnicode_FromString(sp_req_tls_cipher(r))) < 0)
        return -1;
    if (sp_req_tls_client_verify(r, buf, sizeof buf) >= 0 &&
        set_new(env, k_ssl_verify, PyUnicode_FromString(buf)) < 0)
        return -1;
    const char *sni = sp_req_tls_sni(r);
    if (sni && set_new(env, k_ssl_sni, PyUnicode_DecodeUTF8(sni, strlen(sni), "replace")) < 0)
        return -1;
    int n = sp_req_tls_client_subject(r, buf, sizeof buf);
    if (n >= 0 && set_new(env, k_ssl_s_dn, PyUnicode_DecodeUTF8(buf, n, "replace")) < 0)
        return -1;
    return 0;
}

/* REMOTE_PORT: the str of a port seen lately (a keep-alive connection
 * asks again each request), else a new one. */
static PyObject *port_str(unsigned port) {
    static struct {
        unsigned port;
        PyObject *s;
    } seen[64];
    unsigned k = (port ^ port >> 6) & 63;
    if (seen[k].s && seen[k].port == port) {
        Py_INCREF(seen[k].s);
        return seen[k].s;
    }
    PyObject *s = port_text(port);
    if (s) {
        Py_INCREF(s);
        Py_XSETREF(seen[k].s, s);
        seen[k].port = port;
    }
    return s;
}

/* Everything in the environ that the request's bytes and its peer decide
 * (env_cache.c keys on exactly those: the head's octets, the listener, the
 * peer's address family, address and trust): all but wsgi.input and
 * REMOTE_PORT. Anything else a connection decides (TLS: HTTPS, SSL_*, a
 * client certificate) must not go here but in environ_build after the copy,
 * or into env_cache.c's key: a cached base would hand it to another client. */
static PyObject *environ_base(hub *h, const sp_req *r) {
    PyObject *env = PyDict_Copy(environ_template);
    if (!env)
        return NULL;
    const http_request *hd = req_get_head(r);
    sp_str query = req_get_query(r); /* copied below: no slice kept */
    const char *proto = req_get_protocol_label(r);
    if (set_new(env, k_method, method_str(hd)) < 0 || set_new(env, k_path, path_info(h, r)) < 0 ||
        set_new(env, k_query, latin1(query.ptr, query.len)) < 0 ||
        set_new(env, k_raw_uri, latin1(hd->target, hd->target_len)) < 0 ||
        (proto ? set_new(env, k_proto, PyUnicode_FromString(proto))
               : PyDict_SetItem(env, k_proto, hd->minor_version ? s_http11 : s_http10)) < 0 ||
        server_name(env, r) < 0)
        goto fail;
    req_conn_info ci;
    req_get_conn(r, &ci);
    const req_conn_info *c = &ci;
    if (c->peer_family == AF_UNIX) {
        /* A trusted proxy on the socket may name the client; else (or when
         * it names nobody) the local address frameworks expect. */
        const char *a = c->peer_trusted ? sp_req_client_addr(r) : "unix";
        if (set_new(env, k_raddr, PyUnicode_FromString(strcmp(a, "unix") ? a : "127.0.0.1")) < 0)
            goto fail;
    } else if (set_new(env, k_raddr, remote_addr(r)) < 0) {
        goto fail;
    }
    for (size_t i = 0; i < hd->nfields; i++)
        if (add_header(env, &hd->fields[i]) < 0)
            goto fail;
    if (hd->host_from_target) { /* RFC 9112 §3.2.2: the target's authority, not Host */
        sp_str host = req_get_host(r);
        PyObject *ah = latin1(host.ptr, host.len);
        int rc = ah ? PyDict_SetItemString(env, "HTTP_HOST", ah) : -1;
        Py_XDECREF(ah);
        if (rc < 0)
            goto fail;
    }
    /* A trusted proxy says how the client reached it (--forwarded-header);
     * a TLS connection's own keys are set per call, after the copy. */
    if (!c->tls && c->peer_trusted && strcmp(sp_req_scheme(r), "https") == 0 &&
        set_new(env, k_scheme, PyUnicode_FromString("https")) < 0)
        goto fail;
    return env;
fail:
    Py_DECREF(env);
    return NULL;
}

/* A fresh dict for each call (the app may change it): a copy of the base
 * (the cached one when the same head came from the same kind of peer
 * before), then the request's own entries. */
PyObject *environ_build(hub *h, pyjob *j, PyObject *input) {
    const sp_req *r = j->req;
    /* An HTTP/2 stream's head is not one run of bytes (HPACK decoded it
     * into fields of their own): env_cache keys on the bytes, so not there. */
    PyObject *base = j->ri.http_major == 2 ? NULL : env_cache_get(&j->ri), *env;
    if (base) {
        env = PyDict_Copy(base);
    } else {
        if (!(env = environ_base(h, r)))
            return NULL;
        base = j->ri.http_major == 2 ? NULL
                                     : PyDict_Copy(env); /* kept unchanged: env goes to the app */
        if (base) {
            env_cache_put(&j->ri, base);
            Py_DECREF(base);
        } else {
            PyErr_Clear(); /* not cached; this request goes on */
        }
    }
    if (!env)
        return NULL;
    const req_conn_info *c = &j->ri.conn;
    if (PyDict_SetItem(env, k_input, input) < 0 ||
        (c->peer_family != AF_UNIX && set_new(env, k_rport, port_str(c->peer_port)) < 0) ||
        (c->tls && tls_environ(env, r) < 0)) {
        Py_DECREF(env);
        return NULL;
    }
    return env;
}

/* ---- the last environ again -------------------------------------------
 * A call's environ that nobody kept and nobody changed (the dict's version
 * tag moves on every change, PEP 509) holds exactly what a fresh copy of
 * its base would: the next request from the same base gets it back with
 * its REMOTE_PORT, wsgi.input and spindle.request made that request's, and
 * no copy, no deallocation. Nothing can tell it from a new dict: no one
 * else holds it. Plain HTTP/1.1 only (TLS keys are set per call). The base
 * is looked up again at the end, not held through the call (a parked
 * WebSocket would keep it): any base of the same head and peer holds the
 * same entries, environ_base being a function of exactly those. */
#if PY_VERSION_HEX < 0x030C0000 /* ma_version_tag is deprecated from 3.12 */
#define ENV_REUSE     1
#define VERSION_OF(d) (((PyDictObject *)(d))->ma_version_tag)
#else
#define ENV_REUSE     0
#define VERSION_OF(d) 0
#endif

static struct {
    PyObject *env, *base;   /* owned */
    PyObject *input, *sess; /* borrowed: env holds them */
    unsigned port;
} spare_env;

uint64_t environ_version(PyObject *env) {
    return VERSION_OF(env);
}

PyObject *environ_reuse(pyjob *j, PyObject **input) {
    if (!spare_env.env)
        return NULL;
    const req_conn_info *c = &j->ri.conn;
    PyObject *env = spare_env.env, *base = spare_env.base;
    spare_env.env = spare_env.base = NULL;
    if (j->ri.http_major == 2 || c->tls || env_cache_get(&j->ri) != base) {
        Py_DECREF(env);
        Py_DECREF(base);
        return NULL;
    }
    if (c->peer_family != AF_UNIX && c->peer_port != spare_env.port &&
        set_new(env, k_rport, port_str(c->peer_port)) < 0) {
        Py_DECREF(env);
        Py_DECREF(base);
        return NULL;
    }
    input_reuse(spare_env.input, j);
    session_reattach(j, spare_env.sess);
    Py_INCREF(spare_env.input); /* the caller's reference, as input_new's */
    *input = spare_env.input;
    Py_DECREF(base);
    return env;
}

int environ_keep(pyjob *j, PyObject *env, PyObject *input, PyObject *sess, uint64_t version) {
    if (!ENV_REUSE || spare_env.env || !env || !sess || j->ri.http_major == 2 || j->ri.conn.tls ||
        Py_REFCNT(env) != 1 || VERSION_OF(env) != version || !input_reusable(input) ||
        !session_reusable(sess))
        return 0;
    PyObject *base = env_cache_get(&j->ri); /* the head is still in the buffer */
    if (!base)
        return 0;
    Py_INCREF(base);
    spare_env.env = env;
    spare_env.base = base;
    spare_env.input = input;
    spare_env.sess = sess;
    spare_env.port = j->ri.conn.peer_port;
    return 1;
}
