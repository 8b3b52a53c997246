/* session_redis.c — the Redis session store, for several machines behind a
 * load balancer: one key per session ("spindle:session:ID") with the
 * expiry set on the key. Blocking calls on the thread pool, on a socket of
 * its own (TLS for rediss://), hiredis only formatting commands and
 * parsing replies; AUTH and SELECT at each connect. A broken connection is
 * dropped and made again on the next call. A group of calls made at once
 * (session_writes.c) is pipelined: its commands go in one send and their
 * replies are read after, one round trip a group instead of one a call. */
#include "server/session/session_store.h"
#include "server/session/session_writes.h"

#include "base/log.h"
#include "net/sock_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY_PREFIX "spindle:session:"
#define TIMEOUT_MS 2000

typedef struct rd_conn {
    int fd;
    SSL *ssl;
    redisReader *rd;
    char *pipe; /* a group's commands, formatted, before the one send */
    size_t pipe_len, pipe_cap;
} rd_conn;

static void rd_close(sess_store *st) {
    rd_conn *c = st->impl;
    if (!c)
        return;
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    if (c->fd >= 0)
        close(c->fd);
    if (c->rd)
        redisReaderFree(c->rd);
    free(c->pipe);
    free(c);
    st->impl = NULL;
}

/* A non-blocking connect waited for with poll, then a blocking socket
 * whose reads and writes give up after TIMEOUT_MS. The fd or -errno. */
static int dial_one(const struct addrinfo *a) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        socklen_t el = sizeof err;
        err = poll(&p, 1, TIMEOUT_MS) != 1                          ? ETIMEDOUT
              : getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ? errno
                                                                    : err;
    }
    struct timeval tv = {TIMEOUT_MS / 1000, (TIMEOUT_MS % 1000) * 1000};
    if (err == 0 && (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 ||
                     setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
                     setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0))
        err = errno;
    if (err) {
        close(fd);
        return -err;
    }
    return fd;
}

static int dial(const char *host, int port) {
    char serv[8];
    snprintf(serv, sizeof serv, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, serv, &hints, &res) != 0)
        return -EHOSTUNREACH;
    int fd = -ECONNREFUSED;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next)
        fd = dial_one(a);
    freeaddrinfo(res);
    return fd;
}

static int send_all(rd_conn *c, const char *p, size_t n) {
    while (n) {
        ssize_t w;
        if (c->ssl) {
            size_t done = 0;
            w = SSL_write_ex(c->ssl, p, n, &done) == 1 ? (ssize_t)done : -1;
            if (w < 0)
                errno = EPIPE;
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w == 0 ? -EPIPE : (errno == EAGAIN ? -ETIMEDOUT : -errno);
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The next reply on c (NULL: the transport failed, *err says how). */
static redisReply *read_reply(rd_conn *c, int *err) {
    while (*err == 0) {
        void *reply = NULL;
        if (redisReaderGetReply(c->rd, &reply) != REDIS_OK) {
            *err = -EPROTO;
            break;
        }
        if (reply)
            return reply;
        char buf[8192];
        ssize_t r;
        if (c->ssl) {
            size_t got = 0;
            r = SSL_read_ex(c->ssl, buf, sizeof buf, &got) == 1 ? (ssize_t)got : 0;
            ERR_clear_error();
        } else {
            do
                r = recv(c->fd, buf, sizeof buf, 0);
            while (r < 0 && errno == EINTR);
        }
        if (r <= 0)
            *err = r == 0 ? -ECONNRESET : (errno == EAGAIN ? -ETIMEDOUT : -errno);
        else if (redisReaderFeed(c->rd, buf, (size_t)r) != REDIS_OK)
            *err = -ENOMEM;
    }
    return NULL;
}

/* Adds a command to c's pipe (a group's, or a lone call's). 0 or -ENOMEM. */
static int pipe_add(rd_conn *c, int argc, const char **argv, const size_t *lens) {
    char *one = NULL;
    long long n = redisFormatCommandArgv(&one, argc, argv, lens);
    if (n < 0)
        return -ENOMEM;
    if (c->pipe_len + (size_t)n > c->pipe_cap) {
        size_t cap = c->pipe_cap ? c->pipe_cap : 4096;
        while (cap < c->pipe_len + (size_t)n)
            cap *= 2;
        char *p = realloc(c->pipe, cap);
        if (!p) {
            redisFreeCommand(one);
            return -ENOMEM;
        }
        c->pipe = p;
        c->pipe_cap = cap;
    }
    memcpy(c->pipe + c->pipe_len, one, (size_t)n);
    c->pipe_len += (size_t)n;
    redisFreeCommand(one);
    return 0;
}

/* One command and its reply (NULL: the transport failed, *err says how). */
static redisReply *call(rd_conn *c, int argc, const char **argv, const size_t *lens, int *err) {
    c->pipe_len = 0;
    if ((*err = pipe_add(c, argc, argv, lens)) == 0)
        *err = send_all(c, c->pipe, c->pipe_len);
    return read_reply(c, err);
}

/* A command whose only good answer is +OK; -EACCES for any other. */
static int expect_ok(rd_conn *c, int argc, const char **argv) {
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    int err;
    redisReply *r = call(c, argc, argv, lens, &err);
    if (!r)
        return err;
    int ok = r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    freeReplyObject(r);
    return ok ? 0 : -EACCES;
}

static int start_tls(sess_store *st, rd_conn *c) {
    const redis_url *u = &st->url;
    if (!(c->ssl = sock_tls_client_new(st->tls, c->fd, u->host)))
        return -ENOMEM;
    if (SSL_connect(c->ssl) == 1)
        return 0;
    char why[256] = "the connection closed";
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, why, sizeof why);
    ERR_clear_error();
    log_msg(LOG_ERROR,
            "sessions: TLS to Redis at %s:%d failed: %s (is it rediss:// on a TLS port, and is "
            "its certificate for that name, signed by ?tls_ca= or the system's CAs?)",
            u->host, u->port, why);
    return -EPROTO;
}

static int rd_open(sess_store *st) {
    if (st->impl)
        return 0;
    const redis_url *u = &st->url;
    rd_conn *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    st->impl = c;
    c->fd = dial(u->host, u->port); /* < 0 on failure: rd_close skips it */
    int rc = c->fd < 0 ? c->fd : 0;
    if (rc == 0 && !(c->rd = redisReaderCreate()))
        rc = -ENOMEM;
    if (rc == 0 && u->tls)
        rc = start_tls(st, c);
    if (rc == 0 && u->password) {
        const char *argv[] = {"AUTH", u->user ? u->user : u->password, u->password};
        if ((rc = expect_ok(c, u->user ? 3 : 2, argv)) == -EACCES)
            log_msg(LOG_ERROR, "sessions: Redis at %s:%d refused the password%s%s", u->host,
                    u->port, u->user ? " of user " : "", u->user ? u->user : "");
    }
    if (rc == 0 && u->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", u->db);
        const char *argv[] = {"SELECT", db};
        if ((rc = expect_ok(c, 2, argv)) == -EACCES)
            log_msg(LOG_ERROR, "sessions: Redis at %s:%d refused SELECT %d", u->host, u->port,
                    u->db);
    }
    if (rc < 0)
        rd_close(st);
    return rc;
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

static void came_back(sess_store *st) {
    if (st->down)
        log_msg(LOG_INFO, "sessions: Redis at %s:%d is back", st->where, st->port);
    st->down = 0;
}

/* Runs a command; NULL (and the connection dropped) on a transport error. */
static redisReply *cmd(sess_store *st, int argc, const char **argv, const size_t *lens, int *err) {
    int rc = rd_open(st);
    if (rc < 0) {
        went_down(st, rc);
        *err = rc;
        return NULL;
    }
    redisReply *r = call(st->impl, argc, argv, lens, &rc);
    if (!r) {
        rd_close(st);
        went_down(st, rc);
        *err = -EIO;
        return NULL;
    }
    came_back(st);
    if (r->type == REDIS_REPLY_ERROR) {
        log_msg(LOG_ERROR, "sessions: Redis at %s:%d refused %s: %s", st->where, st->port, argv[0],
                r->str);
        freeReplyObject(r);
        *err = -EIO;
        return NULL;
    }
    return r;
}

/* A call's command: its argv, with room for the key and the TTL. */
typedef struct rd_cmd {
    const char *argv[5];
    size_t lens[5];
    int argc;
    char key[64], ttl[24];
} rd_cmd;

static void cmd_of(rd_cmd *k, int op, const char *id, const char *blob, size_t len, int64_t expiry,
                   int64_t now) {
    snprintf(k->key, sizeof k->key, "%s%s", KEY_PREFIX, id);
    static const char *const names[] = {
        [SESS_WRITE_SAVE] = "SET", [SESS_WRITE_DEL] = "DEL", [SESS_WRITE_LOAD] = "GET"};
    k->argv[0] = names[op];
    k->lens[0] = 3;
    k->argv[1] = k->key;
    k->lens[1] = strlen(k->key);
    k->argc = 2;
    if (op == SESS_WRITE_SAVE) {
        snprintf(k->ttl, sizeof k->ttl, "%lld", (long long)(expiry > now ? expiry - now : 1));
        k->argv[2] = len ? blob : "";
        k->lens[2] = len;
        k->argv[3] = "EX";
        k->lens[3] = 2;
        k->argv[4] = k->ttl;
        k->lens[4] = strlen(k->ttl);
        k->argc = 5;
    }
}

/* A GET's reply as a load's result: 0 with a copy, or -ENOENT. */
static int loaded(const redisReply *r, char **blob, size_t *len) {
    *blob = NULL;
    *len = 0;
    if (r->type != REDIS_REPLY_STRING)
        return -ENOENT;
    if (r->len) {
        if (!(*blob = malloc(r->len)))
            return -ENOMEM;
        memcpy(*blob, r->str, r->len);
    }
    *len = r->len;
    return 0;
}

/* A call alone, its own round trip; blob and len take a GET's value. */
static int alone(sess_store *st, rd_cmd *k, char **blob, size_t *len) {
    int err = 0;
    redisReply *r = cmd(st, k->argc, k->argv, k->lens, &err);
    if (!r)
        return err;
    int out = blob ? loaded(r, blob, len) : 0;
    freeReplyObject(r);
    return out;
}

static int rd_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    rd_cmd k;
    cmd_of(&k, SESS_WRITE_LOAD, id, NULL, 0, 0, now);
    return alone(st, &k, blob, len);
}

static int rd_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                   int64_t now) {
    rd_cmd k;
    cmd_of(&k, SESS_WRITE_SAVE, id, blob, len, expiry, now);
    return alone(st, &k, NULL, NULL);
}

static int rd_del(sess_store *st, const char *id) {
    rd_cmd k;
    cmd_of(&k, SESS_WRITE_DEL, id, NULL, 0, 0, 0);
    return alone(st, &k, NULL, NULL);
}

/* A group in one round trip: every command in one send, then each reply in
 * order. Any failure fails the group, and session_writes.c runs each call
 * again alone (a SET or DEL done twice is the same), so each caller gets
 * its own answer, and a refusal is logged by the call that gets it. */
static int rd_group(sess_store *st, sess_write *first) {
    int err = rd_open(st);
    if (err < 0)
        return err;
    rd_conn *c = st->impl;
    c->pipe_len = 0;
    for (sess_write *w = first; w && err == 0; w = w->next) {
        rd_cmd k;
        cmd_of(&k, w->op, w->id, w->blob, w->len, w->expiry, w->now);
        err = pipe_add(c, k.argc, k.argv, k.lens);
    }
    int io = err == 0, refused = 0; /* io: the connection was used (a failure breaks it) */
    if (io)
        err = send_all(c, c->pipe, c->pipe_len);
    for (sess_write *w = first; w && err == 0; w = w->next) {
        redisReply *r = read_reply(c, &err);
        if (!r)
            break;
        if (r->type == REDIS_REPLY_ERROR)
            refused = 1;
        else if (w->op == SESS_WRITE_LOAD)
            w->rc = loaded(r, &w->out, &w->out_len);
        freeReplyObject(r);
    }
    if (c->pipe_cap > 65536) { /* a big group's buffer is not kept */
        free(c->pipe);
        c->pipe = NULL;
        c->pipe_cap = 0;
    }
    if (err && io) {
        rd_close(st); /* replies may be left unread: a new connection next */
        went_down(st, err);
    } else if (!err) {
        came_back(st);
    }
    return err ? -EIO : refused ? -EPROTO : 0;
}

const sess_store_ops sess_redis_ops = {
    .name = "redis",
    .blocking = 1,
    .open = rd_open,
    .load = rd_load,
    .save = rd_save,
    .del = rd_del,
    .close = rd_close,
    .group = rd_group,
};
