/* app_http_edge.c — a test application for the response layer's and the
 * body reader's refusals: /status/{code} sets a status the way a careless
 * handler would (return value ignored), /send/{code} sends one, /slurp
 * reads the whole body before answering, /host answers sp_req_host, /hints
 * sends 103 Early Hints (sp_res_early_hints) before its answer, /trailers
 * ends a streamed body with trailer fields (sp_res_finish_trailers). */
#include "spindle.h"

#include <stdio.h>
#include <stdlib.h>

static int code_of(sp_req *req) {
    sp_str c = sp_req_param(req, "code");
    char num[8];
    snprintf(num, sizeof num, "%.*s", (int)(c.len < 7 ? c.len : 7), c.ptr);
    return atoi(num);
}

static int status(sp_req *req, sp_res *res, void *ud) {
    sp_res_status(res, code_of(req)); /* ignored on purpose */
    sp_res_header(res, "Content-Type", "text/plain");
    return sp_res_write(res, "app body\n", 9) < 0 ? -1 : 0;
}

static int send(sp_req *req, sp_res *res, void *ud) {
    return sp_res_send(res, code_of(req), "text/plain", "sent\n", 5);
}

static int slurp(sp_req *req, sp_res *res, void *ud) {
    char buf[4096];
    long total = 0;
    for (;;) {
        ssize_t n = sp_read(req, buf, sizeof buf);
        if (n < 0)
            return (int)n;
        if (n == 0)
            break;
        total += n;
    }
    char body[32];
    int len = snprintf(body, sizeof body, "%ld\n", total);
    return sp_res_send(res, 200, "text/plain", body, (size_t)len);
}

static int host(sp_req *req, sp_res *res, void *ud) {
    sp_str h = sp_req_host(req);
    return sp_res_send(res, 200, "text/plain", h.ptr ? h.ptr : "(none)", h.ptr ? h.len : 6);
}

/* Early hints, then the answer; ?bad sends an injected value (refused). */
static int hints(sp_req *req, sp_res *res, void *ud) {
    const char *good[] = {"</a.css>; rel=preload; as=style", "</b.js>; rel=preload; as=script"};
    const char *bad[] = {"</a.css>\r\nX-Evil: 1"};
    int rc = sp_req_query_param(req, "bad").ptr ? sp_res_early_hints(res, bad, 1)
                                                : sp_res_early_hints(res, good, 2);
    char body[32];
    int len = snprintf(body, sizeof body, "rc=%d\n", rc);
    return sp_res_send(res, 200, "text/plain", body, (size_t)len);
}

/* A streamed body, then trailers; ?bad offers a refused one first (its rc
 * is the body), ?len declares the length first (the trailers are dropped).
 * X-Possible: sp_res_trailers_possible before the head. */
static int trailers(sp_req *req, sp_res *res, void *ud) {
    const sp_field good[] = {{"X-Checksum", "sha256=abc"}, {"grpc-status", "0"}};
    const sp_field bad[] = {{"Content-Length", "3"}};
    if (sp_req_query_param(req, "len").ptr)
        sp_res_length(res, 10); /* "rc=0 body\n" */
    sp_res_header(res, "X-Possible", sp_res_trailers_possible(res) ? "1" : "0");
    int rc = sp_req_query_param(req, "bad").ptr ? sp_res_finish_trailers(res, bad, 1) : 0;
    if (sp_res_printf(res, "rc=%d ", rc) < 0 || sp_res_write(res, "body\n", 5) < 0)
        return -1;
    rc = sp_res_finish_trailers(res, good, 2);
    return rc < 0 ? rc : 0;
}

/* Answers, then goes on working (sp_sleep) before it returns: bytes of the
 * client's next request arrive while nobody waits to read them. */
static int answer_then_work(sp_req *req, sp_res *res, void *ud) {
    int rc = sp_res_send(res, 200, "text/plain", "done\n", 5);
    sp_sleep(100);
    return rc;
}

static int init(sp_server *s) {
    int rc;
    if ((rc = sp_route(s, "GET", "/status/{code}", status, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/send/{code}", send, NULL)) < 0 ||
        (rc = sp_route(s, "POST", "/slurp", slurp, NULL)) < 0)
        return rc;
    if ((rc = sp_route(s, "GET", "/hints", hints, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/answer-then-work", answer_then_work, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/trailers", trailers, NULL)) < 0)
        return rc;
    return sp_route(s, "GET", "/host", host, NULL);
}

SP_APP_MODULE(init)
