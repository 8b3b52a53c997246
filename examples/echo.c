/* echo.c — streams the request body back as it arrives, in blocking style:
 * sp_read parks this coroutine until bytes come, sp_res_write until the
 * client takes them; a 2 GB upload never sits in memory. Run:
 * build/examples/echo [ADDR]; curl --data-binary @file http://127.0.0.1:8080/ */
#include "spindle.h"

#include <stdio.h>
#include <string.h>

static int echo(sp_req *req, sp_res *res, void *ud) {
    char buf[16384];
    int64_t len = sp_req_content_length(req);
    if (len >= 0)
        sp_res_length(res, (uint64_t)len); /* else chunked */
    sp_res_header(res, "Content-Type", "application/octet-stream");
    for (;;) {
        ssize_t n = sp_read(req, buf, sizeof buf);
        if (n < 0)
            return (int)n; /* the server answers 400/408/413, or closes */
        if (n == 0)
            return sp_res_finish(res);
        if (sp_res_write(res, buf, (size_t)n) < 0)
            return -1;
    }
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    sp_server *s = sp_server_new(NULL);
    if (!s || sp_server_listen(s, addr) < 0) {
        fprintf(stderr, "echo: cannot listen on %s\n", addr);
        return 1;
    }
    sp_route(s, "POST", "/", echo, NULL);
    sp_route(s, "PUT", "/", echo, NULL);
    int rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0;
}
