/* sleep.c — a handler that waits without blocking anyone: sp_sleep parks
 * only its coroutine, so a thousand clients asking for /?ms=1000 at once are
 * all answered after about one second, by one thread. Run:
 * build/examples/sleep [ADDR]; curl 'http://127.0.0.1:8080/?ms=500' */
#include "spindle.h"

#include <stdio.h>
#include <stdlib.h>

static int slow(sp_req *req, sp_res *res, void *ud) {
    sp_str v = sp_req_query_param(req, "ms");
    long ms = v.ptr ? strtol(v.ptr, NULL, 10) : 100;
    if (ms < 0 || ms > 60000)
        return sp_res_send(res, 400, "text/plain", "ms: 0..60000\n", 13);
    int rc = sp_sleep(ms);
    if (rc < 0)
        return rc; /* the client hung up meanwhile: nobody to answer */
    return (int)sp_res_printf(res, "slept %ld ms\n", ms);
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    sp_server *s = sp_server_new(NULL);
    if (!s || sp_server_listen(s, addr) < 0) {
        fprintf(stderr, "sleep: cannot listen on %s\n", addr);
        return 1;
    }
    sp_route(s, "GET", "/", slow, NULL);
    int rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0;
}
