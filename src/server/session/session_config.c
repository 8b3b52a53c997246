/* session_config.c — which store and signing key a server's sessions use:
 * sp_sessions_configure (in the master, before the fork, so every worker
 * shares the key), the per-worker hook that opens the store after the
 * fork, and store calls moved to the thread pool when the store may block. */
#include "server/session/session.h"

#include "base/log.h"
#include "net/sock_tls.h"
#include "server/handler.h"
#include "server/session/session_hmac.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Sessions live in their own slot of the server (handler.h): the server
 * core knows nothing of them, and frees the slot with cfg_free. */
static const char cfg_key;

sess_cfg *sess_cfg_of(const sp_server *s) {
    return server_ext_get(s, &cfg_key);
}

int sess_store_parse(const char *spec, sess_store *st) {
    st->where = NULL;
    st->port = 0;
    if (!strcmp(spec, "memory")) {
        st->ops = &sess_memory_ops;
        return 0;
    }
    if (!strncmp(spec, "sqlite:", 7) && spec[7]) {
        st->ops = &sess_sqlite_ops;
        st->where = strdup(spec + 7);
        return st->where ? 0 : -ENOMEM;
    }
    const char *q = strchr(spec, '?');
    int rc = redis_url_parse(spec, q ? (size_t)(q - spec) : strlen(spec), &st->url);
    if (rc < 0)
        return rc;
    if (q && (strncmp(q + 1, "tls_ca=", 7) || !q[8] || !st->url.tls || strchr(q, '&'))) {
        redis_url_free(&st->url);
        return -EINVAL; /* the one parameter there is, for rediss:// */
    }
    st->ops = &sess_redis_ops;
    st->port = st->url.port;
    if (!(st->where = strdup(st->url.host)) || (q && !(st->tls_ca = strdup(q + 8)))) {
        sess_store_spec_free(st);
        return -ENOMEM;
    }
    return 0;
}

void sess_store_spec_free(sess_store *st) {
    free(st->where);
    free(st->tls_ca);
    redis_url_free(&st->url);
    st->where = st->tls_ca = NULL;
}

int sess_key_from_file(const char *path, uint8_t key[64], size_t *key_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[4096];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = -errno;
            close(fd);
            return err;
        }
        if (r == 0 || (n += (size_t)r) == sizeof buf)
            break;
    }
    close(fd);
    while (n && strchr(" \t\r\n", buf[n - 1]))
        n--;
    if (n < 16) {
        explicit_bzero(buf, sizeof buf);
        return -EINVAL;
    }
    if (n > 64) {
        sha256(buf, n, key); /* what HMAC would do with it anyway */
        *key_len = SHA256_LEN;
    } else {
        memcpy(key, buf, n);
        *key_len = n;
    }
    explicit_bzero(buf, sizeof buf);
    return 0;
}

/* In this process: drop a handle inherited through fork (it belongs to the
 * parent; SQLite and hiredis handles must not cross a fork), open if none. */
int sess_store_open_here(sess_store *st) {
    if (st->impl && st->pid != getpid())
        st->impl = NULL;
    if (st->impl)
        return 0;
    int rc = st->ops->open(st);
    if (rc == 0)
        st->pid = getpid();
    return rc;
}

/* A blocking store's calls go through the worker's queue to the thread
 * pool, grouped when made at once (session_writes.c); the memory store's
 * are made here, on the loop. */
static int run(sess_cfg *c, sess_write *w) {
    sess_store *st = &c->store;
    if (st->ops->blocking)
        return sess_writes_run(&c->writes, st, w);
    int rc = sess_store_open_here(st);
    return rc < 0 ? rc : sess_write_one(st, w);
}

int sess_store_load(sess_cfg *c, const char *id, int64_t now, char **blob, size_t *len) {
    sess_write w = {.op = SESS_WRITE_LOAD, .id = id, .now = now};
    int rc = run(c, &w);
    *blob = w.out;
    *len = w.out_len;
    return rc;
}

int sess_store_save(sess_cfg *c, const char *id, const char *blob, size_t len, int64_t expiry,
                    int64_t now) {
    sess_write w = {
        .op = SESS_WRITE_SAVE, .id = id, .blob = blob, .len = len, .expiry = expiry, .now = now};
    return run(c, &w);
}

int sess_store_del(sess_cfg *c, const char *id) {
    sess_write w = {.op = SESS_WRITE_DEL, .id = id};
    return run(c, &w);
}

/* In each worker, before it serves: open the store now so that a database
 * that cannot be opened stops the worker with a clear message rather than
 * failing every request. Redis may come up later: only a warning. */
static int on_worker_start(sp_server *s, void *ud) {
    sess_cfg *c = sess_cfg_of(s);
    if (!c)
        return 0;
    pthread_mutex_lock(&c->store.mu);
    int rc = sess_store_open_here(&c->store);
    pthread_mutex_unlock(&c->store.mu);
    if (rc < 0 && c->store.ops == &sess_redis_ops) {
        log_msg(LOG_WARNING, "sessions: cannot reach Redis at %s:%d yet (%s); will retry",
                c->store.where, c->store.port, strerror(-rc));
        return 0;
    }
    if (rc < 0)
        log_msg(LOG_ERROR, "sessions: cannot open the %s store %s: %s", c->store.ops->name,
                c->store.where ? c->store.where : "", strerror(-rc));
    return rc;
}

int sess_check_store(sp_server *s) {
    sess_cfg *c = sess_cfg_of(s);
    if (!c || c->store.ops != &sess_sqlite_ops)
        return 0;
    /* Closed again at once: a connection must not cross the fork. */
    int rc = c->store.ops->open(&c->store);
    if (rc < 0) {
        log_msg(LOG_ERROR, "sessions: cannot open the SQLite database %s: %s", c->store.where,
                strerror(-rc));
        return rc;
    }
    c->store.ops->close(&c->store);
    return 0;
}

static void cfg_free(void *arg) {
    sess_cfg *c = arg;
    if (!c)
        return;
    sess_spare_free(c->spare);
    if (c->store.impl && c->store.pid == getpid())
        c->store.ops->close(&c->store);
    pthread_mutex_destroy(&c->store.mu);
    sess_store_spec_free(&c->store);
    SSL_CTX_free(c->store.tls);
    explicit_bzero(c->key, sizeof c->key);
    free(c);
}

int sp_sessions_configure(sp_server *s, const char *store, const char *secret_file) {
    if (!s)
        return -EINVAL;
    sess_cfg *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->ttl = SESS_DEFAULT_TTL;
    pthread_mutex_init(&c->store.mu, NULL);
    int rc = sess_store_parse(store ? store : "memory", &c->store);
    if (rc < 0) {
        log_msg(LOG_ERROR,
                "sessions: unknown store \"%s\" (memory, sqlite:PATH, or "
                "redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB], then ?tls_ca=PATH for rediss://)",
                store);
        goto fail;
    }
    char why[200];
    if (c->store.url.tls &&
        !(c->store.tls = sock_tls_client_ctx(c->store.tls_ca, why, sizeof why))) {
        log_msg(LOG_ERROR, "sessions: %s: %s", store, why);
        rc = -ENOENT;
        goto fail;
    }
    if (secret_file) {
        rc = sess_key_from_file(secret_file, c->key, &c->key_len);
        if (rc < 0) {
            log_msg(LOG_ERROR, "sessions: cannot use the secret file %s: %s", secret_file,
                    rc == -EINVAL ? "it must hold at least 16 bytes" : strerror(-rc));
            goto fail;
        }
    } else {
        if (getrandom(c->key, 32, 0) != 32) {
            rc = -errno;
            goto fail;
        }
        c->key_len = 32;
        log_msg(LOG_WARNING, "sessions: no secret file: signing with a random key made at "
                             "start, so sessions will not survive a restart");
    }
    if (!sess_cfg_of(s) && (rc = sp_server_on_worker_start(s, on_worker_start, NULL)) < 0)
        goto fail;
    if ((rc = server_ext_set(s, &cfg_key, c, cfg_free)) < 0) /* frees the old one */
        goto fail;
    log_msg(LOG_INFO, "sessions: %s store%s%s%s", c->store.ops->name, c->store.where ? " " : "",
            c->store.where ? c->store.where : "", c->store.url.tls ? " over TLS" : "");
    return 0;
fail:
    cfg_free(c);
    return rc;
}

int sp_sessions_cookie_secure(sp_server *s, int always) {
    sess_cfg *c = s ? sess_cfg_of(s) : NULL;
    if (!c)
        return -ENXIO;
    c->cookie_secure = always != 0;
    return 0;
}
