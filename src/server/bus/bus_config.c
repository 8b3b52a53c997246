/* bus_config.c — a server's bus configuration: sp_bus_configure parses the
 * spec ("memory", "redis://...", "?limits"), keeps it in the feature's
 * server slot, and hooks the server's start (a worker of the memory bus
 * takes the shared ring) and stop (waking the subscribers). */
#include "server/bus/bus_shm.h"

#include "base/log.h"
#include "net/sock_tls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char bus_key; /* this module's slot in the server */

bus *bus_of(sp_server *s) {
    bus *b = server_ext_get(s, &bus_key);
    if (b && b->be && b->be_pid != getpid()) {
        /* Made before a fork (the master used the bus): the parent's
         * sockets are not ours to use or close; this process starts over. */
        b->be = NULL;
        b->subs = (list_head){NULL, NULL};
    }
    return b;
}

static void bus_free(void *arg) {
    bus *b = arg;
    if (!b)
        return;
    if (b->be && b->be_pid == getpid())
        b->ops->free(b);
    if (b->ring && getpid() == b->config_pid)
        shm_ring_unmap(b->ring); /* a worker's exit leaves it to the others */
    redis_url_free(&b->url);
    free(b->tls_ca);
    SSL_CTX_free(b->tls);
    free(b);
}

static int parse_limit(bus *b, const char *kv, size_t n) {
    static const struct {
        const char *name;
        size_t off;
    } names[] = {{"retain", offsetof(bus_limits, retain)},
                 {"retain_bytes", offsetof(bus_limits, retain_bytes)},
                 {"max_message", offsetof(bus_limits, max_message)},
                 {"queue", offsetof(bus_limits, queue)},
                 {"queue_bytes", offsetof(bus_limits, queue_bytes)}};
    const char *eq = memchr(kv, '=', n);
    if (!eq)
        return -EINVAL;
    size_t kl = (size_t)(eq - kv);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) != kl || memcmp(names[i].name, kv, kl))
            continue;
        bus_id v; /* a plain decimal number: the id parser's first half */
        if (memchr(eq + 1, '-', n - kl - 1) || bus_id_parse(eq + 1, n - kl - 1, &v) < 0 ||
            v.ms < 1 || v.ms > (1ull << 40))
            return -EINVAL;
        *(size_t *)(void *)((char *)&b->lim + names[i].off) = (size_t)v.ms;
        return 0;
    }
    return -EINVAL;
}

static int parse_spec(bus *b, const char *spec) {
    const char *q = strchr(spec, '?');
    size_t n = q ? (size_t)(q - spec) : strlen(spec);
    int rc;
    if (n == 6 && !memcmp(spec, "memory", 6)) {
        b->ops = &bus_memory_backend;
    } else if (!strncmp(spec, "redis://", 8) || !strncmp(spec, "rediss://", 9)) {
        b->ops = &bus_redis_backend;
        if ((rc = redis_url_parse(spec, n, &b->url)) < 0)
            return rc;
    } else {
        return -EINVAL;
    }
    while (q && q[1]) {
        const char *kv = q + 1, *amp = strchr(kv, '&');
        size_t kl = amp ? (size_t)(amp - kv) : strlen(kv);
        if (kl > 7 && !memcmp(kv, "tls_ca=", 7) && b->url.tls) {
            free(b->tls_ca);
            if (!(b->tls_ca = strndup(kv + 7, kl - 7)))
                return -ENOMEM;
        } else if ((rc = parse_limit(b, kv, kl)) < 0) {
            return rc;
        }
        q = amp;
    }
    if (b->url.tls) {
        char why[200];
        if (!(b->tls = sock_tls_client_ctx(b->tls_ca, why, sizeof why))) {
            log_msg(LOG_ERROR, "bus: %s: %s", spec, why);
            return -ENOENT;
        }
    }
    return 0;
}

/* ---- the memory bus across workers -----------------------------------------
 * Configured in the master, the memory bus maps a ring shared with the
 * workers it forks (bus_shm.c); a worker, a process other than the one
 * that configured, switches to it as it starts. The process that
 * configured keeps topics of its own (bus_memory.c): with --workers 0 it
 * is the only one, and no message pays a trip through the ring. */

static int on_worker_start(sp_server *s, void *ud) {
    bus *b = bus_of(s);
    if (b && b->ring && b->ops == &bus_memory_backend && getpid() != b->config_pid)
        b->ops = &bus_shm_backend;
    return 0;
}

/* The ring's size: 4 × retain_bytes (64 MiB by default), at least 4 of
 * the largest message, on whole entries. */
static int map_ring(bus *b) {
    size_t size = b->lim.retain_bytes * 4, least = (b->lim.max_message + 2 * SHM_ALIGN) * 4;
    if (size < least)
        size = least;
    size = (size + SHM_ALIGN - 1) / SHM_ALIGN * SHM_ALIGN;
    if (size > ((size_t)1 << 40) || !(b->ring = shm_ring_map(size)))
        return -ENOMEM;
    return 0;
}

/* The server begins to stop: parked receivers get -ESHUTDOWN at once, so
 * a long poll does not hold the stop until its timeout. */
static void on_server_stop(sp_server *s, void *ud) {
    bus *b = bus_of(s);
    if (!b)
        return;
    b->stopping = 1;
    for (list_node *n = b->subs.head; n; n = n->next) {
        sp_bus_sub *sub = container_of(n, sp_bus_sub, all);
        sub->stopping = 1;
        bus_wake(sub);
    }
}

int sp_bus_configure(sp_server *s, const char *spec) {
    if (!s || !spec)
        return -EINVAL;
    bus *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->lim =
        (bus_limits){BUS_RETAIN, BUS_RETAIN_BYTES, BUS_MAX_MESSAGE, BUS_QUEUE, BUS_QUEUE_BYTES};
    b->config_pid = getpid();
    int rc = parse_spec(b, spec);
    if (rc == -EINVAL)
        log_msg(LOG_ERROR,
                "bus: cannot use \"%s\": the spec is memory or redis[s]://[[USER]:PASSWORD@]"
                "HOST[:PORT][/DB], optionally followed by ?retain=N&retain_bytes=N&"
                "max_message=N&queue=N&queue_bytes=N (each N from 1), and for rediss:// "
                "tls_ca=PATH",
                spec);
    if (rc < 0)
        goto fail;
    if (b->ops == &bus_memory_backend && (rc = map_ring(b)) < 0)
        goto fail;
    int first = server_ext_get(s, &bus_key) == NULL;
    if (first && ((rc = sp_server_on_worker_start(s, on_worker_start, NULL)) < 0 ||
                  (rc = server_on_stop(s, on_server_stop, NULL)) < 0))
        goto fail;
    if ((rc = server_ext_set(s, &bus_key, b, bus_free)) < 0) /* frees the old one */
        goto fail;
    if (b->ops == &bus_redis_backend)
        log_msg(LOG_INFO, "bus: Redis streams at %s:%d db %d%s (retain %zu per topic)", b->url.host,
                b->url.port, b->url.db, b->url.tls ? " over TLS" : "", b->lim.retain);
    else
        log_msg(LOG_INFO,
                "bus: in memory, shared by this machine's workers (a ring of %zu MiB; "
                "retain %zu per topic in one process)",
                (size_t)(b->ring->size >> 20), b->lim.retain);
    return 0;
fail:
    bus_free(b);
    return rc;
}
