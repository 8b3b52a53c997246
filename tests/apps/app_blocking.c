/* app_blocking.c — a test application whose /block handler blocks the loop
 * (what a handler must never do), for the --worker-timeout test, and whose
 * /pid tells which worker answered. */
#include "spindle.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int block(sp_req *req, sp_res *res, void *ud) {
    sp_str s = sp_req_query_param(req, "s");
    int secs = s.ptr ? atoi(s.ptr) : 5;
    sleep((unsigned)secs); /* blocks the whole worker: the watchdog's case */
    return sp_res_send(res, 200, "text/plain", "done\n", 5);
}

static int pid(sp_req *req, sp_res *res, void *ud) {
    char body[32];
    int n = snprintf(body, sizeof body, "%d\n", (int)getpid());
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int init(sp_server *s) {
    int rc = sp_route(s, "GET", "/block", block, NULL);
    return rc < 0 ? rc : sp_route(s, "GET", "/pid", pid, NULL);
}

SP_APP_MODULE(init)
