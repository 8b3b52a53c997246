/* app_ws.c — the WebSocket test application (spindle --app): GET /ws echoes
 * every message back with its opcode; a few text commands make the server
 * act first: "close" (a 1000 close with a reason), "ping" (a server ping),
 * "spam N" (N messages sent by another coroutine while the handler keeps
 * receiving), "sleep" (the handler parks, to test hang-up). GET
 * /ws-unlimited is the same with max_message = SIZE_MAX ("no limit"). */
#include "spindle.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spam {
    sp_ws *ws;
    sp_wg *wg;
    int n;
} spam;

/* Another coroutine sending on the handler's WebSocket. */
static void spammer(void *arg) {
    spam *s = arg;
    char msg[32];
    for (int i = 0; i < s->n; i++) {
        int len = snprintf(msg, sizeof msg, "spam %d", i);
        if (sp_ws_send(s->ws, SP_WS_TEXT, msg, (size_t)len) < 0)
            break;
        if (i % 16 == 0)
            sp_yield(); /* interleave with the handler's own sends */
    }
    sp_wg_done(s->wg);
    free(s);
}

static int is_cmd(const sp_ws_msg *m, const char *cmd) {
    size_t n = strlen(cmd);
    return m->opcode == SP_WS_TEXT && m->len >= n && memcmp(m->data, cmd, n) == 0;
}

static int ws_echo(sp_req *req, sp_res *res, void *ud) {
    sp_ws *ws = sp_ws_upgrade(req, res, ud);
    if (!ws) {
        if (errno == EINVAL)
            return sp_res_send(res, 400, "text/plain", "not a WebSocket upgrade\n", 24);
        return -errno;
    }
    sp_wg *wg = sp_wg_new();
    if (!wg)
        return -ENOMEM;
    sp_ws_msg m;
    int rc;
    while ((rc = sp_ws_recv(ws, &m, 30000)) == 0) {
        if (is_cmd(&m, "close")) {
            sp_ws_close(ws, 1000, "bye");
            break;
        }
        if (is_cmd(&m, "ping")) {
            rc = sp_ws_send(ws, SP_WS_PING, "hello", 5);
        } else if (is_cmd(&m, "spam ")) {
            spam *s = malloc(sizeof *s);
            if (!s)
                break;
            *s = (spam){ws, wg, atoi((const char *)m.data + 5)};
            sp_wg_add(wg, 1);
            if (sp_spawn(spammer, s) < 0) {
                sp_wg_done(wg);
                free(s);
            }
            rc = sp_ws_send(ws, SP_WS_TEXT, "spamming", 8);
        } else if (is_cmd(&m, "sleep")) {
            /* Parks until the client hangs up (-ECONNRESET) or 10 s pass. */
            rc = sp_sleep(10000);
            fprintf(stderr, "app_ws: sleep ended with %d\n", rc);
            break;
        } else {
            rc = sp_ws_send(ws, m.opcode, m.data, m.len);
        }
        if (rc < 0)
            break;
    }
    /* Other coroutines must be done with ws before the handler returns. */
    sp_wg_wait(wg, -1);
    sp_wg_free(wg);
    return 0;
}

static sp_ws_options unlimited = {.max_message = SIZE_MAX};

static int init(sp_server *s) {
    int rc = sp_route(s, "GET", "/ws", ws_echo, NULL);
    return rc < 0 ? rc : sp_route(s, "GET", "/ws-unlimited", ws_echo, &unlimited);
}

SP_APP_MODULE(init)
