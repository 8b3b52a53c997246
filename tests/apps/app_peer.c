/* app_peer.c — a test application for the client address a C handler
 * sees: GET /peer answers "sp_req_peer sp_req_client_addr\n", so a test can
 * check what a PROXY protocol header (--proxy-protocol) or a trusted
 * proxy's forwarded header made of them. */
#include "spindle.h"

#include <stdio.h>

static int peer(sp_req *req, sp_res *res, void *ud) {
    char body[160];
    int n = snprintf(body, sizeof body, "%s %s\n", sp_req_peer(req), sp_req_client_addr(req));
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int init(sp_server *s) {
    return sp_route(s, "GET", "/peer", peer, NULL);
}

SP_APP_MODULE(init)
