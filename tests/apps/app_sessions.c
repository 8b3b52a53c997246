/* app_sessions.c — the test application for sessions: GET /count adds one
 * to the visitor's counter and answers "count=N pid=P id=ID"; /get?k=K,
 * /set?k=K&v=V, /clear, /ttl?s=S, /regen and /retry exercise the rest of the API;
 * /dumpable tells whether the worker may dump core. Its init
 * reads SESSIONS_STORE and SESSIONS_SECRET (a secret file) from the
 * environment, until the CLI has flags for them. */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int fail(sp_res *res, int err) {
    char body[128];
    int n = snprintf(body, sizeof body, "session error: %s\n", strerror(err));
    return sp_res_send(res, 500, "text/plain", body, (size_t)n);
}

static int reply(sp_res *res, sp_session *s, const char *what) {
    char body[256];
    int n = snprintf(body, sizeof body, "%s pid=%d id=%s\n", what, (int)getpid(), sp_session_id(s));
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int count(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    const char *v = sp_session_get(s, "count");
    char next[32], what[48];
    snprintf(next, sizeof next, "%ld", (v ? atol(v) : 0) + 1);
    int rc = sp_session_set(s, "count", next);
    if (rc < 0)
        return fail(res, -rc);
    snprintf(what, sizeof what, "count=%s", next);
    return reply(res, sp_session_of(req, res), what); /* the same session again */
}

/* A query parameter as a C string (not percent-decoded: tests send plain
 * words). */
static void param(sp_req *req, const char *name, char *out, size_t cap) {
    sp_str v = sp_req_query_param(req, name);
    size_t n = v.ptr ? (v.len < cap - 1 ? v.len : cap - 1) : 0;
    memcpy(out, v.ptr ? v.ptr : "", n);
    out[n] = '\0';
}

static int get(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    char k[64], what[256];
    param(req, "k", k, sizeof k);
    const char *v = sp_session_get(s, k);
    snprintf(what, sizeof what, "%s=%s", k, v ? v : "(none)");
    return reply(res, s, what);
}

static int set(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    char k[64], v[128];
    param(req, "k", k, sizeof k);
    param(req, "v", v, sizeof v);
    int rc = v[0] ? sp_session_set(s, k, v) : sp_session_del(s, k);
    return rc < 0 ? fail(res, -rc) : reply(res, s, "ok");
}

static int clear(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    int rc = sp_session_clear(s);
    return rc < 0 ? fail(res, -rc) : reply(res, s, "cleared");
}

static int ttl(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    char v[32];
    param(req, "s", v, sizeof v);
    int rc = sp_session_set_ttl(s, atol(v));
    return rc < 0 ? fail(res, -rc) : reply(res, s, "ttl");
}

/* The first sp_session_of must fail (the response has no room for its
 * Set-Cookie); a second call must fail too, never hand out the half-made
 * session, and the calls on it must not write through its missing cookie
 * field. Answers what each step returned. */
static int retry(sp_req *req, sp_res *res, void *ud) {
    char fill[16];
    int nfill = 0;
    for (; nfill < 256; nfill++) {
        snprintf(fill, sizeof fill, "X-F%d", nfill);
        if (sp_res_header(res, fill, "1") < 0)
            break;
    }
    sp_session *a = sp_session_of(req, res);
    int ea = a ? 0 : errno;
    sp_session *b = sp_session_of(req, res);
    int eb = b ? 0 : errno;
    int ttl = b ? sp_session_set_ttl(b, 60) : 0, clr = b ? sp_session_clear(b) : 0;
    /* errno values as numbers: 0 means a session came back. */
    char body[160];
    int n = snprintf(body, sizeof body, "filled=%d first=%d second=%d ttl=%d clear=%d\n", nfill, ea,
                     eb, ttl, clr);
    return sp_res_send(res, 200, NULL, body, (size_t)n);
}

/* Log-in: the session keeps its data under a new id. */
static int regen(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return fail(res, errno);
    int rc = sp_session_regenerate(s);
    return rc < 0 ? fail(res, -rc) : reply(res, s, "regenerated");
}

/* Blocks this worker's loop for ms (what a handler must never do): the
 * tests use it to make the other worker take the next connection. */
static int block(sp_req *req, sp_res *res, void *ud) {
    char v[32];
    param(req, "ms", v, sizeof v);
    usleep((useconds_t)atol(v) * 1000);
    char body[32];
    int n = snprintf(body, sizeof body, "pid=%d\n", (int)getpid());
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

/* Whether this worker may dump core (the session key would be in it). */
static int dumpable(sp_req *req, sp_res *res, void *ud) {
    char body[32];
    int n = snprintf(body, sizeof body, "dumpable=%d\n", prctl(PR_GET_DUMPABLE));
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int hello(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, 200, "text/plain", "Hello world!", 12);
}

static int init(sp_server *s) {
    int rc = sp_sessions_configure(s, getenv("SESSIONS_STORE"), getenv("SESSIONS_SECRET"));
    if (rc < 0)
        return rc;
    static const struct {
        const char *path;
        sp_handler h;
    } routes[] = {{"/", hello},      {"/count", count},      {"/get", get},     {"/set", set},
                  {"/clear", clear}, {"/ttl", ttl},          {"/block", block}, {"/retry", retry},
                  {"/regen", regen}, {"/dumpable", dumpable}};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if ((rc = sp_route(s, "GET", routes[i].path, routes[i].h, NULL)) < 0)
            return rc;
    return 0;
}

SP_APP_MODULE(init)
