/* bus_resp.c — a Redis connection on the loop (bus_resp.h): commands
 * formatted by hiredis, written and read through the cooperative socket,
 * replies parsed by hiredis' reader as the bytes come. */
#include "server/bus/bus_resp.h"

#include "base/log.h"
#include "net/sock_tls.h"
#include "net/tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void rconn_close(rconn *c) {
    sp_sock_close(c->sock);
    c->sock = NULL;
    if (c->rd)
        redisReaderFree(c->rd);
    c->rd = NULL;
    c->used = 0;
}

static int64_t left(int64_t deadline) {
    int64_t now = loop_clock_ms();
    return deadline > now ? deadline - now : 0;
}

int rconn_call(rconn *c, redisReply **out, int64_t timeout_ms, int argc, const char **argv,
               const size_t *lens) {
    *out = NULL;
    if (!c->sock)
        return -ENOTCONN;
    int64_t deadline = loop_clock_ms() + timeout_ms;
    char *cmd = NULL;
    long long n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0)
        return -ENOMEM;
    ssize_t w = sp_sock_write(c->sock, cmd, (size_t)n, timeout_ms);
    redisFreeCommand(cmd);
    int rc = w < 0 ? (int)w : 0;
    while (rc == 0) {
        void *reply = NULL;
        if (redisReaderGetReply(c->rd, &reply) != REDIS_OK) {
            rc = -EPROTO;
            break;
        }
        if (reply) {
            *out = reply;
            c->used = 1;
            return 0;
        }
        char buf[8192];
        ssize_t r = sp_sock_read(c->sock, buf, sizeof buf, left(deadline));
        if (r <= 0)
            rc = r == 0 ? -ECONNRESET : (int)r;
        else if (redisReaderFeed(c->rd, buf, (size_t)r) != REDIS_OK)
            rc = -ENOMEM;
    }
    rconn_close(c);
    return rc;
}

/* A command whose only good answer is +OK. */
static int expect_ok(rconn *c, int64_t timeout_ms, int argc, const char **argv) {
    size_t lens[4];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r;
    int rc = rconn_call(c, &r, timeout_ms, argc, argv, lens);
    if (rc < 0)
        return rc;
    int ok = r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    freeReplyObject(r);
    return ok ? 0 : -EACCES;
}

int rconn_open(rconn *c, const bus *b, int64_t timeout_ms) {
    int err = 0;
    rconn_close(c);
    if (!(c->sock = sp_connect(b->url.host, b->url.port, timeout_ms, &err)))
        return err ? err : -ECONNREFUSED;
    if (!(c->rd = redisReaderCreate())) {
        rconn_close(c);
        return -ENOMEM;
    }
    int rc = 0;
    if (b->tls && (rc = sock_start_tls(c->sock, b->tls, b->url.host, timeout_ms)) < 0) {
        if (rc == -EPROTO)
            log_msg(LOG_ERROR,
                    "bus: TLS to Redis at %s:%d failed: %s (is it rediss:// on a TLS port, "
                    "and is its certificate for that name, signed by ?tls_ca= or the "
                    "system's CAs?)",
                    b->url.host, b->url.port, tls_last_error());
        rconn_close(c);
        return rc;
    }
    if (b->url.password) {
        const char *argv[] = {"AUTH", b->url.user ? b->url.user : b->url.password, b->url.password};
        rc = expect_ok(c, timeout_ms, b->url.user ? 3 : 2, argv);
        if (rc == -EACCES)
            log_msg(LOG_ERROR, "bus: Redis at %s:%d refused the password%s%s", b->url.host,
                    b->url.port, b->url.user ? " of user " : "", b->url.user ? b->url.user : "");
    }
    if (rc == 0 && b->url.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", b->url.db);
        const char *argv[] = {"SELECT", db};
        rc = expect_ok(c, timeout_ms, 2, argv);
    }
    if (rc < 0)
        rconn_close(c);
    c->used = 0;
    return rc;
}
