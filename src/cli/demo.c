/* demo.c — the demo routes the binary serves with no application, which
 * tests, examples and benchmarks rely on: the seed's hello world, an echo
 * that streams the body back, and a sleep that parks its coroutine. */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int hello(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, 200, "text/plain", "Hello world!", 12);
}

/* Streams the body back as it arrives: never more than one buffer held. */
static int echo(sp_req *req, sp_res *res, void *ud) {
    char buf[16384];
    int64_t len = sp_req_content_length(req);
    sp_str ctype = sp_req_header(req, "Content-Type");
    char type[256];
    snprintf(type, sizeof type, "%.*s", ctype.ptr ? (int)ctype.len : 24,
             ctype.ptr ? ctype.ptr : "application/octet-stream");
    int rc = sp_res_header(res, "Content-Type", type);
    if (rc < 0)
        return rc;
    if (len >= 0 && (rc = sp_res_length(res, (uint64_t)len)) < 0)
        return rc;
    for (;;) {
        ssize_t n = sp_read(req, buf, sizeof buf);
        if (n < 0)
            return (int)n;
        if (n == 0)
            break;
        ssize_t w = sp_res_write(res, buf, (size_t)n);
        if (w < 0)
            return (int)w;
    }
    return sp_res_finish(res);
}

static int sleep_ms(sp_req *req, sp_res *res, void *ud) {
    sp_str v = sp_req_query_param(req, "ms");
    char num[16] = "0";
    if (v.ptr && v.len < sizeof num)
        snprintf(num, sizeof num, "%.*s", (int)v.len, v.ptr);
    char *end;
    long ms = strtol(num, &end, 10);
    if (*end || ms < 0 || ms > 600000)
        return sp_res_send(res, 400, "text/plain", "ms must be 0..600000\n", 21);
    int rc = sp_sleep(ms);
    if (rc < 0)
        return rc; /* the client left while we slept */
    char body[64];
    int n = snprintf(body, sizeof body, "slept %ld ms\n", ms);
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

int sp_demo_routes(sp_server *s) {
    int rc;
    if ((rc = sp_route(s, "GET", "/", hello, NULL)) < 0 ||
        (rc = sp_route(s, "POST", "/echo", echo, NULL)) < 0 ||
        (rc = sp_route(s, "PUT", "/echo", echo, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/sleep", sleep_ms, NULL)) < 0)
        return rc;
    return 0;
}
