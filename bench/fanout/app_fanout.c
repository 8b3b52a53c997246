/* app_fanout.c — the C handler of bench/run's fanout workload (an --app
 * module, built by the harness): GET /ws subscribes to topic "fanout" and
 * forwards each message to its WebSocket; POST /publish publishes the
 * body on it. Run: build/spindle --app app_fanout.so --bus redis://... */
#include "spindle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static sp_server *server;

static int subscriber(sp_req *req, sp_res *res, void *ud) {
    /* Subscribed before the 101: a client that sees its upgrade is already
     * on the topic, so the harness's first message reaches it. */
    sp_bus_sub *sub = sp_bus_subscribe(server, "fanout", NULL);
    if (!sub)
        return sp_res_send(res, 503, "text/plain", "bus down\n", 9);
    sp_ws *ws = sp_ws_upgrade(req, res, NULL);
    if (!ws) {
        sp_bus_unsubscribe(sub);
        return errno == EINVAL ? sp_res_send(res, 400, "text/plain", "not a WebSocket\n", 16) : 0;
    }
    int last = 0;
    for (;;) {
        sp_bus_msg m;
        int rc = sp_bus_recv(sub, &m, -1);
        if (rc == 1) {
            if (sp_ws_send(ws, SP_WS_TEXT, m.data, m.len) < 0)
                break;
        } else if (rc != -ECONNRESET || last == -ECONNRESET) {
            break; /* cut, stopping, or the client gone (twice running: not Redis) */
        }
        last = rc;
    }
    sp_bus_unsubscribe(sub);
    return 0;
}

static int publisher(sp_req *req, sp_res *res, void *ud) {
    char body[4096], id[SP_BUS_ID_MAX];
    size_t len = 0;
    for (;;) {
        ssize_t r = sp_read(req, body + len, sizeof body - len);
        if (r < 0)
            return (int)r;
        if (r == 0 || (len += (size_t)r) == sizeof body)
            break;
    }
    int rc = sp_bus_publish(server, "fanout", body, len, id);
    if (rc < 0) /* not published: the harness counts a non-200 */
        return sp_res_send(res, 503, "text/plain", strerror(-rc), strlen(strerror(-rc)));
    return sp_res_send(res, 200, "text/plain", id, strlen(id));
}

static int init(sp_server *s) {
    server = s;
    int rc = sp_route(s, "GET", "/ws", subscriber, NULL);
    return rc < 0 ? rc : sp_route(s, "POST", "/publish", publisher, NULL);
}

SP_APP_MODULE(init)
