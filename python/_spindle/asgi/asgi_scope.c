/* asgi_scope.c — the http and websocket scopes (ASGI spec 2.4), built in
 * C: interned keys, constant values made once (asgi, methods, versions,
 * extensions), lower-cased header names from a small cache of the names
 * seen, the client through trusted proxies (sp_req_client_addr, as the
 * WSGI environ), and a shallow copy of the lifespan state. */
#include "asgi/asgi.h"

#include "http/http_chars.h"
#include "http/path_norm.h"

#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static PyObject *k_type, *k_asgi, *k_http_version, *k_method, *k_scheme, *k_path, *k_raw_path,
    *k_query, *k_root_path, *k_headers, *k_client, *k_server, *k_state, *k_extensions,
    *k_subprotocols;
static PyObject *v_http, *v_websocket, *v_asgi, *v_10, *v_11, *v_2, *v_http_s, *v_https, *v_ws,
    *v_wss, *v_ext_http, *v_ext_ws, *v_empty_bytes;
static PyObject *methods[HTTP_M_OTHER + 16];

PyObject *asgi_str(const char *s) {
    return PyUnicode_InternFromString(s);
}

int asgi_scope_init(void) {
    if (k_type)
        return 0;
    k_type = asgi_str("type");
    k_asgi = asgi_str("asgi");
    k_http_version = asgi_str("http_version");
    k_method = asgi_str("method");
    k_scheme = asgi_str("scheme");
    k_path = asgi_str("path");
    k_raw_path = asgi_str("raw_path");
    k_query = asgi_str("query_string");
    k_root_path = asgi_str("root_path");
    k_headers = asgi_str("headers");
    k_client = asgi_str("client");
    k_server = asgi_str("server");
    k_state = asgi_str("state");
    k_extensions = asgi_str("extensions");
    k_subprotocols = asgi_str("subprotocols");
    v_http = asgi_str("http");
    v_websocket = asgi_str("websocket");
    v_10 = asgi_str("1.0");
    v_11 = asgi_str("1.1");
    v_2 = asgi_str("2");
    v_http_s = v_http;
    v_https = asgi_str("https");
    v_ws = asgi_str("ws");
    v_wss = asgi_str("wss");
    v_empty_bytes = PyBytes_FromStringAndSize("", 0);
    v_asgi = Py_BuildValue("{ssss}", "version", "3.0", "spec_version", "2.4");
    v_ext_http = Py_BuildValue("{s{}}", "http.response.pathsend");
    v_ext_ws = Py_BuildValue("{s{}}", "websocket.http.response");
    static const char *const names[] = {"GET",     "HEAD",  "POST",    "PUT",  "DELETE",
                                        "OPTIONS", "PATCH", "CONNECT", "TRACE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(methods[i] = asgi_str(names[i])))
            return -1;
    return k_extensions && k_subprotocols && v_wss && v_empty_bytes && v_asgi && v_ext_http &&
                   v_ext_ws
               ? 0
               : -1;
}

static PyObject *method_of(const http_request *h) {
    const char *m = h->method;
    size_t n = h->method_len;
    for (size_t i = 0; methods[i]; i++) {
        const char *c = PyUnicode_DATA(methods[i]);
        if ((size_t)PyUnicode_GET_LENGTH(methods[i]) == n && memcmp(c, m, n) == 0)
            return Py_NewRef(methods[i]);
    }
    return PyUnicode_DecodeLatin1(m, (Py_ssize_t)n, NULL);
}

/* Header names as sent -> lower-cased bytes, for the names seen recently. */
#define NAME_CACHE 256
static struct {
    char name[48];
    size_t len;
    PyObject *lower;
} names_cache[NAME_CACHE];

static PyObject *lower_name(const char *p, size_t n) {
    unsigned hsh = (unsigned)n * 31u;
    for (size_t i = 0; i < n; i++)
        hsh = hsh * 33u ^ (unsigned char)p[i];
    unsigned slot = hsh % NAME_CACHE;
    if (n < sizeof names_cache[0].name && names_cache[slot].lower && names_cache[slot].len == n &&
        memcmp(names_cache[slot].name, p, n) == 0)
        return Py_NewRef(names_cache[slot].lower);
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (!b)
        return NULL;
    char *d = PyBytes_AS_STRING(b);
    for (size_t i = 0; i < n; i++)
        d[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
    if (n < sizeof names_cache[0].name) {
        Py_XSETREF(names_cache[slot].lower, Py_NewRef(b));
        memcpy(names_cache[slot].name, p, n);
        names_cache[slot].len = n;
    }
    return b;
}

static PyObject *headers_of(const http_request *h) {
    PyObject *list = PyList_New((Py_ssize_t)h->nfields);
    for (size_t i = 0; list && i < h->nfields; i++) {
        const http_field *f = &h->fields[i];
        PyObject *n = lower_name(f->name, f->name_len);
        PyObject *v = n ? PyBytes_FromStringAndSize(f->value, (Py_ssize_t)f->value_len) : NULL;
        PyObject *t = v ? PyTuple_New(2) : NULL;
        if (!t) {
            Py_XDECREF(n);
            Py_XDECREF(v);
            Py_CLEAR(list);
            break;
        }
        PyTuple_SET_ITEM(t, 0, n);
        PyTuple_SET_ITEM(t, 1, v);
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

/* The target's path (before '?') as sent, and percent-decoded as UTF-8
 * (invalid sequences as U+FFFD, as urllib's unquote and uvicorn do).
 * An absolute-form target ("http://h/p") gives the router's path. */
static int path_of(const sp_req *r, PyObject **path, PyObject **raw) {
    const http_request *hd = req_get_head(r);
    const char *t = hd->target;
    size_t n = hd->target_len;
    if (n && t[0] == '/') {
        const char *q = memchr(t, '?', n);
        if (q)
            n = (size_t)(q - t);
    } else {
        sp_str p = req_get_path(r); /* copied below: no slice kept */
        t = p.ptr;
        n = p.len;
    }
    *raw = PyBytes_FromStringAndSize(t, (Py_ssize_t)n);
    if (!*raw)
        return -1;
    char stack[1024];
    char *buf = n < sizeof stack ? stack : PyMem_Malloc(n + 1);
    if (!buf)
        return -1;
    long len = path_percent_decode(t, n, buf, n + 1);
    *path = len < 0 ? PyUnicode_DecodeLatin1(t, (Py_ssize_t)n, NULL)
                    : PyUnicode_DecodeUTF8(buf, len, "replace");
    if (buf != stack)
        PyMem_Free(buf);
    if (!*path)
        return -1;
    /* The ASGI spec (and uvicorn since 0.26) puts root_path at the start of
     * path and raw_path: the proxy stripped it, the app routes on the full
     * path and builds URLs from it (Starlette 1.x strips root_path itself). */
    PyObject *root = the_ahub.h->root_path;
    if (PyUnicode_GET_LENGTH(root)) {
        PyObject *full = PyUnicode_Concat(root, *path);
        Py_SETREF(*path, full);
        PyObject *rb = full ? PyUnicode_AsUTF8String(root) : NULL;
        if (rb) {
            PyBytes_Concat(&rb, *raw);
            Py_SETREF(*raw, rb);
        }
        if (!full || !rb || !*raw)
            return -1;
    }
    return 0;
}

/* (host, port): an untrusted peer's address str is cached for the last
 * peer seen (keep-alive and proxies repeat it); a trusted proxy's client
 * is what its forwarded header says, with port 0. */
static PyObject *client_of(const sp_req *r) {
    static uint8_t last_ip[16];
    static int last_family;
    static PyObject *last;
    req_conn_info ci;
    req_get_conn(r, &ci);
    const req_conn_info *c = &ci;
    if (c->peer_family == AF_UNIX && !c->peer_trusted)
        return Py_NewRef(Py_None);
    PyObject *host;
    size_t n = c->peer_family == AF_INET ? 4 : 16;
    if (c->peer_trusted) {
        const char *a = sp_req_client_addr(r);
        if (strcmp(a, "unix") == 0)
            return Py_NewRef(Py_None);
        host = PyUnicode_FromString(a);
    } else if (last && last_family == c->peer_family && memcmp(last_ip, c->peer_ip, n) == 0) {
        host = Py_NewRef(last);
    } else {
        host = PyUnicode_FromString(sp_req_client_addr(r));
        if (host) {
            Py_XSETREF(last, Py_NewRef(host));
            memcpy(last_ip, c->peer_ip, n);
            last_family = c->peer_family;
        }
    }
    PyObject *port = host ? PyLong_FromLong(c->peer_trusted ? 0 : c->peer_port) : NULL;
    PyObject *t = port ? PyTuple_Pack(2, host, port) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(port);
    return t;
}

/* The local address of the connection: getsockname once per connection,
 * remembered in a slot by fd with what names the connection (its listener
 * and peer: a later connection on the same fd differs in its peer port),
 * and the tuple reused while the address repeats. */
#define SERVER_SLOTS 1024
static struct {
    int fd;
    uint8_t listener, family;
    uint16_t port;
    uint8_t ip[16];
    PyObject *addr;
} server_slots[SERVER_SLOTS];

static PyObject *local_addr(int fd) {
    static struct sockaddr_storage last_ss;
    static socklen_t last_len;
    static PyObject *last;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return Py_NewRef(Py_None);
    if (last && sl == last_len && memcmp(&ss, &last_ss, sl) == 0)
        return Py_NewRef(last);
    char text[INET6_ADDRSTRLEN];
    PyObject *v;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        v = Py_BuildValue("(si)", text, ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        v = Py_BuildValue("(si)", text, ntohs(in6->sin6_port));
    } else if (ss.ss_family == AF_UNIX) { /* [path, None], as the spec says */
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        return sl > offsetof(struct sockaddr_un, sun_path) && un->sun_path[0]
                   ? Py_BuildValue("(sO)", un->sun_path, Py_None)
                   : Py_NewRef(Py_None);
    } else {
        return Py_NewRef(Py_None);
    }
    if (v) {
        Py_XSETREF(last, Py_NewRef(v));
        memcpy(&last_ss, &ss, sl);
        last_len = sl;
    }
    return v;
}

static PyObject *server_of(const sp_req *r) {
    req_conn_info ci;
    req_get_conn(r, &ci);
    const req_conn_info *c = &ci;
    int fd = c->fd;
    __typeof__(server_slots[0]) *e = &server_slots[(unsigned)fd % SERVER_SLOTS];
    if (e->addr && e->fd == fd && e->listener == c->listener && e->family == c->peer_family &&
        e->port == c->peer_port && memcmp(e->ip, c->peer_ip, sizeof e->ip) == 0)
        return Py_NewRef(e->addr);
    PyObject *v = local_addr(fd);
    if (v && c->peer_family != AF_UNIX) {
        Py_XSETREF(e->addr, Py_NewRef(v));
        e->fd = fd;
        e->listener = c->listener;
        e->family = c->peer_family;
        e->port = c->peer_port;
        memcpy(e->ip, c->peer_ip, sizeof e->ip);
    }
    return v;
}

/* The offered subprotocols: Sec-WebSocket-Protocol's comma-separated
 * tokens, in order, over every field line. */
static PyObject *subprotocols_of(const http_request *h) {
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < h->nfields; i++) {
        const http_field *f = &h->fields[i];
        if (!http_ieq(f->name, f->name_len, "sec-websocket-protocol", 22))
            continue;
        const char *p = f->value, *end = f->value + f->value_len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
                p++;
            const char *s = p;
            while (p < end && *p != ',' && *p != ' ' && *p != '\t')
                p++;
            if (p > s) {
                PyObject *t = PyUnicode_DecodeLatin1(s, p - s, NULL);
                if (!t || PyList_Append(list, t) < 0)
                    Py_CLEAR(list);
                Py_XDECREF(t);
                if (!list)
                    break;
            }
        }
    }
    return list;
}

static int set_new(PyObject *d, PyObject *k, PyObject *v) {
    if (!v)
        return -1;
    int rc = PyDict_SetItem(d, k, v);
    Py_DECREF(v);
    return rc;
}

/* The scope's constant entries, and the others' keys (None for now): a
 * copy of it is a clone of the table, and the per-request values only
 * replace entries, which is cheaper than inserting them. */
static PyObject *scope_template(int ws) {
    static PyObject *t[2];
    if (t[ws])
        return t[ws];
    PyObject *d = PyDict_New();
    PyObject *const keys[] = {k_type,
                              k_asgi,
                              k_http_version,
                              k_scheme,
                              k_path,
                              k_raw_path,
                              k_query,
                              k_root_path,
                              k_headers,
                              k_client,
                              k_server,
                              k_extensions,
                              ws ? k_subprotocols : k_method};
    PyObject *const vals[] = {ws ? v_websocket : v_http,
                              v_asgi,
                              v_11,
                              ws ? v_ws : v_http_s,
                              Py_None,
                              Py_None,
                              Py_None,
                              the_ahub.h->root_path,
                              Py_None,
                              Py_None,
                              Py_None,
                              ws ? v_ext_ws : v_ext_http,
                              Py_None};
    for (size_t i = 0; d && i < sizeof keys / sizeof keys[0]; i++)
        if (PyDict_SetItem(d, keys[i], vals[i]) < 0)
            Py_CLEAR(d);
    t[ws] = d;
    return d;
}

PyObject *asgi_scope(acycle *c) {
    const sp_req *r = c->req;
    const http_request *h = req_get_head(r);
    sp_str query = req_get_query(r); /* copied below: no slice kept */
    ahub *a = &the_ahub;
    PyObject *tmpl = scope_template(c->is_ws);
    PyObject *s = tmpl ? PyDict_Copy(tmpl) : NULL;
    if (!s)
        return NULL;
    int https = strcmp(sp_req_scheme(r), "https") == 0;
    PyObject *path = NULL, *raw = NULL;
    int bad = (!h->minor_version && PyDict_SetItem(s, k_http_version, v_10) < 0) ||
              (req_get_http_major(r) == 2 &&
               PyDict_SetItem(s, k_http_version, v_2) < 0) || /* an HTTP/2 stream */
              (https && PyDict_SetItem(s, k_scheme, c->is_ws ? v_wss : v_https) < 0) ||
              path_of(r, &path, &raw) < 0 || PyDict_SetItem(s, k_path, path) < 0 ||
              PyDict_SetItem(s, k_raw_path, raw) < 0 ||
              set_new(s, k_query,
                      query.len ? PyBytes_FromStringAndSize(query.ptr, (Py_ssize_t)query.len)
                                : Py_NewRef(v_empty_bytes)) < 0 ||
              set_new(s, k_headers, headers_of(h)) < 0 || set_new(s, k_client, client_of(r)) < 0 ||
              set_new(s, k_extensions, asgi_extensions(c)) < 0 ||
              set_new(s, k_server, server_of(r)) < 0 ||
              set_new(s, c->is_ws ? k_subprotocols : k_method,
                      c->is_ws ? subprotocols_of(h) : method_of(h)) < 0;
    Py_XDECREF(path);
    Py_XDECREF(raw);
    if (!bad && a->state)
        bad = set_new(s, k_state, PyDict_Copy(a->state)) < 0;
    if (bad)
        Py_CLEAR(s);
    return s;
}
