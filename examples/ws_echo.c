/* ws_echo.c — the smallest WebSocket server: GET /echo upgrades and sends
 * every message back; GET / serves a page that talks to it. A periodic
 * timer logs how many clients are connected.
 *   build/examples/ws_echo 127.0.0.1:8080   then open http://127.0.0.1:8080/ */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int clients;

static const char page[] =
    "<!doctype html><meta charset=utf-8><title>echo</title>\n"
    "<input id=m autofocus><pre id=log></pre>\n"
    "<script>\n"
    "const ws = new WebSocket(`ws://${location.host}/echo`);\n"
    "const log = t => document.getElementById('log').textContent += t + '\\n';\n"
    "ws.onmessage = e => log('< ' + e.data);\n"
    "ws.onclose = e => log('closed ' + e.code);\n"
    "document.getElementById('m').onkeydown = e => {\n"
    "  if (e.key === 'Enter') { ws.send(e.target.value); e.target.value = ''; }\n"
    "};\n"
    "</script>\n";

static int index_page(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, 200, "text/html; charset=utf-8", page, sizeof page - 1);
}

static int echo(sp_req *req, sp_res *res, void *ud) {
    sp_ws *ws = sp_ws_upgrade(req, res, NULL);
    if (!ws)
        return errno == EINVAL ? sp_res_send(res, 400, "text/plain", "WebSocket only\n", 15)
                               : -errno;
    clients++;
    sp_ws_msg m;
    /* -1: no deadline of ours, yet a silent client is pinged after the
     * server's ws_ping_interval_ms and closed (1001) after its
     * ws_idle_timeout_ms, so a peer gone without a FIN frees its slot. */
    while (sp_ws_recv(ws, &m, -1) == 0)
        if (sp_ws_send(ws, m.opcode, m.data, m.len) < 0)
            break;
    clients--;
    return 0; /* the connection closes when the handler returns */
}

static void report(void *arg) {
    fprintf(stderr, "ws_echo: %d client(s)\n", clients);
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    sp_server *s = sp_server_new(NULL);
    if (!s || sp_server_listen(s, addr) < 0 || sp_route(s, "GET", "/", index_page, NULL) < 0 ||
        sp_route(s, "GET", "/echo", echo, NULL) < 0) {
        fprintf(stderr, "ws_echo: cannot serve on %s\n", addr);
        return 1;
    }
    /* The loop first, so the periodic timer has one to run on; the server
     * then serves on it. */
    sp_loop *l = sp_loop_new(NULL);
    sp_timer *t = l ? sp_every(10000, report, NULL) : NULL;
    if (!t) {
        fprintf(stderr, "ws_echo: no loop: %s\n", strerror(errno));
        return 1;
    }
    fprintf(stderr, "ws_echo: http://%s/\n", addr);
    int rc = sp_server_run(s);
    sp_timer_cancel(t);
    sp_server_free(s);
    sp_loop_free(l);
    return rc < 0 ? 1 : 0;
}
