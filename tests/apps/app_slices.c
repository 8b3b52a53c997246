/* app_slices.c — handlers that keep a slice of their request (the
 * X-Secret header) across a long wait and answer it afterwards, for
 * test_slices_survive_waits.py: GET /cond waits on a condition, GET /bus
 * on a bus subscription, GET /ws upgrades and waits for one message. A
 * slice must keep its own bytes, whatever other clients sent meanwhile. */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static sp_server *server;
static sp_mutex *mu;
static sp_cond *cv;

static int answer(sp_res *res, const char *before, sp_str v) {
    char body[256];
    int n = snprintf(body, sizeof body, "before=%s after=%.*s\n", before, (int)v.len, v.ptr);
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int on_cond(sp_req *req, sp_res *res, void *ud) {
    sp_str v = sp_req_header(req, "X-Secret");
    char before[128];
    snprintf(before, sizeof before, "%.*s", (int)v.len, v.ptr);
    sp_mutex_lock(mu, -1);
    sp_cond_wait(cv, mu, 1200); /* nobody signals: the whole time, a long wait */
    sp_mutex_unlock(mu);
    return answer(res, before, v);
}

static int on_bus(sp_req *req, sp_res *res, void *ud) {
    sp_str v = sp_req_header(req, "X-Secret");
    char before[128];
    snprintf(before, sizeof before, "%.*s", (int)v.len, v.ptr);
    sp_bus_sub *sub = sp_bus_subscribe(server, "slices", NULL);
    sp_bus_msg m;
    if (sub)
        sp_bus_recv(sub, &m, 1200);
    sp_bus_unsubscribe(sub);
    return answer(res, before, v);
}

static int on_ws(sp_req *req, sp_res *res, void *ud) {
    sp_str v = sp_req_header(req, "X-Secret");
    char before[128];
    snprintf(before, sizeof before, "%.*s", (int)v.len, v.ptr);
    sp_ws *ws = sp_ws_upgrade(req, res, NULL);
    if (!ws)
        return -errno;
    sp_ws_msg m;
    int rc = sp_ws_recv(ws, &m, 5000); /* the test waits before it sends */
    if (rc == 0) {
        char body[256];
        int n = snprintf(body, sizeof body, "before=%s after=%.*s msg=%.*s", before, (int)v.len,
                         v.ptr, (int)m.len, (const char *)m.data);
        rc = sp_ws_send(ws, SP_WS_TEXT, body, (size_t)n);
    }
    return rc < 0 ? rc : 0;
}

static int init(sp_server *s) {
    server = s;
    if (!(mu = sp_mutex_new()) || !(cv = sp_cond_new()))
        return -ENOMEM;
    int rc = sp_route(s, "GET", "/cond", on_cond, NULL);
    if (rc == 0)
        rc = sp_route(s, "GET", "/bus", on_bus, NULL);
    return rc == 0 ? sp_route(s, "GET", "/ws", on_ws, NULL) : rc;
}

SP_APP_MODULE(init)
