/* sessions.c — Eurasia's session demo: every visitor gets a session and a
 * counter in it, shown on each visit; GET /login?user=NAME rotates the id
 * (sp_session_regenerate) as a log-in must. GET /hello is a plain hello
 * world beside it (bench/sessions.sh compares the two).
 *   build/examples/sessions [ADDR] [STORE] [SECRET_FILE]
 *   STORE: memory (default), sqlite:/tmp/sessions.db or redis://127.0.0.1:6379 */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int visit(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res); /* adds the Set-Cookie: before any write */
    if (!s)
        return -errno; /* the store failed: a 500 */
    const char *seen = sp_session_get(s, "visits");
    char n[24];
    snprintf(n, sizeof n, "%ld", (seen ? atol(seen) : 0) + 1);
    int rc = sp_session_set(s, "visits", n); /* stored before it returns */
    if (rc < 0)
        return rc;
    /* The id's last 8 digits: it begins with the time it was made, so
     * sessions made about the same time share their first ones. */
    const char *id = sp_session_id(s);
    size_t idn = strlen(id);
    char body[128];
    int len =
        snprintf(body, sizeof body, "visit %s of session ...%s\n", n, id + (idn > 8 ? idn - 8 : 0));
    return sp_res_send(res, 200, "text/plain", body, (size_t)len);
}

/* GET /login?user=NAME (a demo: no password). The id is rotated before
 * the session holds the user: an id planted in the visitor's browser, or
 * seen before, is worth nothing after the log-in. */
static int login(sp_req *req, sp_res *res, void *ud) {
    sp_session *s = sp_session_of(req, res);
    if (!s)
        return -errno;
    sp_str who = sp_req_query_param(req, "user");
    char name[64];
    snprintf(name, sizeof name, "%.*s", who.ptr ? (int)who.len : 0, who.ptr ? who.ptr : "");
    int rc = sp_session_regenerate(s);
    if (rc < 0 || (rc = sp_session_set(s, "user", name)) < 0)
        return rc;
    return sp_res_send(res, 200, "text/plain", "logged in\n", 10);
}

static int hello(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, 200, "text/plain", "Hello world!", 12);
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    const char *store = argc > 2 ? argv[2] : "memory";
    const char *secret = argc > 3 ? argv[3] : NULL;
    sp_server *s = sp_server_new(NULL);
    if (!s || sp_server_listen(s, addr) < 0 || sp_route(s, "GET", "/", visit, NULL) < 0 ||
        sp_route(s, "GET", "/hello", hello, NULL) < 0 ||
        sp_route(s, "GET", "/login", login, NULL) < 0) {
        fprintf(stderr, "sessions: cannot serve on %s\n", addr);
        return 1;
    }
    /* The store is opened by the first request that needs it (on the
     * loop's thread pool, for SQLite and Redis). */
    if (sp_sessions_configure(s, store, secret) < 0)
        return 1; /* the reason was logged */
    fprintf(stderr, "sessions: http://%s/ (store %s)\n", addr, store);
    int rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0 ? 1 : 0;
}
