/* app_bus.c — the test application for the bus: POST /pub?topic=T
 * publishes the body and answers its id (503 with the error when the bus
 * cannot take it); GET /sub?topic=T&since=ID&n=K&timeout_ms=M[&slow_ms=S]
 * long-polls up to K messages, one "id data" line each (&block_ms=B: the
 * worker's loop is held B ms after the subscribe, as a stalled worker's
 * would be). Its init reads the spec from BUS_SPEC when set, else the
 * --bus flag's configuration is used. */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sp_server *server;

static void param(sp_req *req, const char *name, char *out, size_t cap) {
    sp_str v = sp_req_query_param(req, name);
    size_t n = v.ptr ? (v.len < cap - 1 ? v.len : cap - 1) : 0;
    memcpy(out, v.ptr ? v.ptr : "", n);
    out[n] = '\0';
}

static int fail(sp_res *res, int status, const char *what, int err) {
    char body[160];
    int n = snprintf(body, sizeof body, "%s: %s\n", what, strerror(err));
    return sp_res_send(res, status, "text/plain", body, (size_t)n);
}

static int publish(sp_req *req, sp_res *res, void *ud) {
    char topic[256], id[SP_BUS_ID_MAX];
    param(req, "topic", topic, sizeof topic);
    size_t cap = 4096, len = 0;
    char *body = malloc(cap);
    for (;;) {
        if (!body)
            return -ENOMEM;
        ssize_t r = sp_read(req, body + len, cap - len);
        if (r < 0) {
            free(body);
            return (int)r;
        }
        if (r == 0)
            break;
        if ((len += (size_t)r) == cap && cap < (4u << 20))
            body = realloc(body, cap *= 2);
    }
    int rc = sp_bus_publish(server, topic, body, len, id);
    free(body);
    if (rc < 0)
        return fail(res, rc == -EMSGSIZE ? 413 : rc == -EINVAL ? 400 : 503, "publish failed", -rc);
    strcat(id, "\n");
    return sp_res_send(res, 200, "text/plain", id, strlen(id));
}

static int subscribe(sp_req *req, sp_res *res, void *ud) {
    char topic[256], since[SP_BUS_ID_MAX], num[24];
    param(req, "topic", topic, sizeof topic);
    param(req, "since", since, sizeof since);
    param(req, "n", num, sizeof num);
    long want = num[0] ? atol(num) : 1;
    param(req, "timeout_ms", num, sizeof num);
    int64_t timeout = num[0] ? atol(num) : 5000;
    param(req, "slow_ms", num, sizeof num);
    long slow = atol(num);
    param(req, "block_ms", num, sizeof num);
    long block = atol(num);
    sp_bus_sub *sub = sp_bus_subscribe(server, topic, since[0] ? since : NULL);
    if (!sub)
        return fail(res, 503, "subscribe failed", errno);
    if (block > 0)
        usleep((useconds_t)block * 1000); /* not sp_sleep: nothing else of this worker runs */
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    int downs = 0, cut = 0, last_rc = 0;
    int64_t deadline = sp_now_ms() + timeout;
    for (long got = 0; out && got < want;) {
        if (slow)
            sp_sleep(slow); /* a subscriber that reads slowly: its queue fills */
        int64_t left = deadline - sp_now_ms();
        sp_bus_msg m;
        int rc = sp_bus_recv(sub, &m, left > 0 ? left : 0);
        if (rc == 0)
            break;
        if (rc == -EPIPE) {
            cut = 1;
            break;
        }
        if (rc == -ECONNRESET) {
            if (last_rc == -ECONNRESET)
                break; /* twice running: the client left, not Redis */
            downs++;
            last_rc = rc;
            continue;
        }
        if (rc < 0) {
            last_rc = rc;
            break;
        }
        last_rc = rc;
        while (out && len + m.len + SP_BUS_ID_MAX + 2 > cap)
            out = realloc(out, cap *= 2);
        if (!out)
            break;
        len += (size_t)sprintf(out + len, "%s ", m.id);
        memcpy(out + len, m.data, m.len);
        len += m.len;
        out[len++] = '\n';
        got++;
    }
    char hdr[SP_BUS_ID_MAX + 8];
    snprintf(hdr, sizeof hdr, "%d", downs);
    sp_res_header(res, "X-Bus-Down", hdr);
    sp_res_header(res, "X-Bus-Cut", cut ? "1" : "0");
    sp_res_header(res, "X-Bus-Stopping", last_rc == -ESHUTDOWN ? "1" : "0");
    sp_res_header(res, "X-Bus-Last", sp_bus_last_id(sub));
    snprintf(hdr, sizeof hdr, "%d", (int)getpid());
    sp_res_header(res, "X-Pid", hdr);
    sp_bus_unsubscribe(sub);
    int rc = out ? sp_res_send(res, 200, "text/plain", out, len) : -ENOMEM;
    free(out);
    return rc;
}

/* The bus is the --bus flag's, or $BUS_SPEC's when set (an application
 * that configures its own). */
static int init(sp_server *s) {
    const char *spec = getenv("BUS_SPEC");
    server = s;
    int rc = spec ? sp_bus_configure(s, spec) : 0;
    if (rc < 0)
        return rc;
    if ((rc = sp_route(s, "POST", "/pub", publish, NULL)) < 0)
        return rc;
    return sp_route(s, "GET", "/sub", subscribe, NULL);
}

SP_APP_MODULE(init)
