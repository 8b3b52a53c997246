/* hello.c — the seed's hello world as a standalone program: one route,
 * one process, linked with libspindle.a. Build: make (→ build/examples/hello);
 * run: build/examples/hello [ADDR], then curl http://127.0.0.1:8080/ */
#include "spindle.h"

#include <stdio.h>
#include <string.h>

static int hello(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, 200, "text/plain", "Hello world!", 12);
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    sp_server *s = sp_server_new(NULL);
    if (!s)
        return 1;
    int rc = sp_server_listen(s, addr);
    if (rc < 0) {
        fprintf(stderr, "hello: cannot listen on %s: %s\n", addr, strerror(-rc));
        return 1;
    }
    sp_route(s, "GET", "/", hello, NULL);
    rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0;
}
