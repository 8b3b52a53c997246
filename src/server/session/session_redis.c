/* session_redis.c — the Redis session store, for several machines behind a
 * load balancer: one key per session ("spindle:session:ID") with the
 * expiry set on the key, through hiredis' blocking API on the thread pool.
 * A broken connection is dropped and made again on the next call. */
#include "server/session/session_store.h"

#include "base/log.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_PREFIX "spindle:session:"

static void rd_close(sess_store *st) {
    if (st->impl)
        redisFree(st->impl);
    st->impl = NULL;
}

static int rd_open(sess_store *st) {
    if (st->impl)
        return 0;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(st->where, st->port, tv);
    if (!c)
        return -ENOMEM;
    if (c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        int err = c->err == REDIS_ERR_IO && errno ? -errno : -ECONNREFUSED;
        redisFree(c);
        return err;
    }
    st->impl = c;
    return 0;
}

/* An outage is logged when it begins and when it ends, not per request:
 * each request meanwhile gets its error (the handler answers 500). */
static void went_down(sess_store *st, int err) {
    if (!st->down)
        log_msg(LOG_ERROR,
                "sessions: Redis at %s:%d is unreachable (%s): requests that use a session "
                "fail (500) until it is back; each one tries to reconnect",
                st->where, st->port, strerror(-err));
    st->down = 1;
}

/* Runs a command; NULL (and the connection dropped) on a transport error. */
static redisReply *cmd(sess_store *st, int argc, const char **argv, const size_t *lens, int *err) {
    int rc = rd_open(st);
    if (rc < 0) {
        went_down(st, rc);
        *err = rc;
        return NULL;
    }
    redisReply *r = redisCommandArgv(st->impl, argc, argv, lens);
    if (!r) {
        int e = ((redisContext *)st->impl)->err == REDIS_ERR_IO && errno ? -errno : -ECONNRESET;
        rd_close(st);
        went_down(st, e);
        *err = -EIO;
        return NULL;
    }
    if (st->down)
        log_msg(LOG_INFO, "sessions: Redis at %s:%d is back", st->where, st->port);
    st->down = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        *err = -EIO;
        return NULL;
    }
    return r;
}

static void key_of(const char *id, char *key) {
    strcpy(key, KEY_PREFIX);
    strcat(key, id);
}

static int rd_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    char key[64];
    key_of(id, key);
    const char *argv[] = {"GET", key};
    size_t lens[] = {3, strlen(key)};
    int err = 0;
    redisReply *r = cmd(st, 2, argv, lens, &err);
    if (!r)
        return err;
    int out = -ENOENT;
    if (r->type == REDIS_REPLY_STRING) {
        *len = r->len;
        *blob = NULL;
        out = 0;
        if (r->len && !(*blob = malloc(r->len)))
            out = -ENOMEM;
        else if (r->len)
            memcpy(*blob, r->str, r->len);
    }
    freeReplyObject(r);
    return out;
}

static int rd_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                   int64_t now) {
    char key[64], ttl[24];
    key_of(id, key);
    snprintf(ttl, sizeof ttl, "%lld", (long long)(expiry > now ? expiry - now : 1));
    const char *argv[] = {"SET", key, len ? blob : "", "EX", ttl};
    size_t lens[] = {3, strlen(key), len, 2, strlen(ttl)};
    int err = 0;
    redisReply *r = cmd(st, 5, argv, lens, &err);
    if (!r)
        return err;
    freeReplyObject(r);
    return 0;
}

static int rd_del(sess_store *st, const char *id) {
    char key[64];
    key_of(id, key);
    const char *argv[] = {"DEL", key};
    size_t lens[] = {3, strlen(key)};
    int err = 0;
    redisReply *r = cmd(st, 2, argv, lens, &err);
    if (!r)
        return err;
    freeReplyObject(r);
    return 0;
}

const sess_store_ops sess_redis_ops = {"redis", 1, rd_open, rd_load, rd_save, rd_del, rd_close};
