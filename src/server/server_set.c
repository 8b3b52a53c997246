/* server_set.c — the server as others see it: read-only getters for
 * features, the setters through which the process layer, the command line
 * and bindings configure it (no file outside src/server/ writes a member of
 * sp_server), the per-server feature slots, and the start and stop hooks. */
#include "server/server.h"

#include <errno.h>

loop *server_loop(const sp_server *s) {
    return s->l;
}

int server_stopping(const sp_server *s) {
    return s->stopping;
}

const sp_server_options *server_options(const sp_server *s) {
    return &s->opt;
}

size_t server_buf_size(const sp_server *s) {
    return s->buf_size;
}

char *server_buf_get(sp_server *s) {
    return buf_pool_get(&s->bufs);
}

void server_buf_put(sp_server *s, char *b) {
    buf_pool_put(&s->bufs, b);
}

void server_buf_put_cold(sp_server *s, char *b) {
    buf_pool_put_cold(&s->bufs, b);
}

void server_buf_shed(sp_server *s, char *b, size_t used) {
    buf_pool_shed(&s->bufs, b, used);
}

int server_nconns(const sp_server *s) {
    return s->nconns;
}

void server_set_observer(sp_server *s, const server_observer *o) {
    s->obs = o ? *o : (server_observer){0};
}

void server_set_accept_shared(sp_server *s, int shared) {
    s->accept_exclusive = shared;
}

void server_set_accept_kick(sp_server *s, int fd) {
    s->kick.fd = fd;
}

void server_set_max_requests(sp_server *s, uint64_t n) {
    s->max_requests = n;
}

void server_set_drive(sp_server *s, int (*drive)(sp_server *s, void *ud), void *ud) {
    s->drive = drive;
    s->drive_ud = ud;
}

void server_set_worker_init(sp_server *s, int (*fn)(sp_server *s, void *ud), void *ud) {
    s->worker_init = fn;
    s->worker_init_ud = ud;
}

int server_worker_init(sp_server *s) {
    return s->worker_init ? s->worker_init(s, s->worker_init_ud) : 0;
}

void server_set_fork_hook(sp_server *s, void (*fn)(int phase, void *ud), void *ud) {
    s->fork_hook = fn;
    s->fork_hook_ud = ud;
}

void server_fork_hook(sp_server *s, int phase) {
    if (s->fork_hook)
        s->fork_hook(phase, s->fork_hook_ud);
}

int server_nlisteners(const sp_server *s) {
    return s->nlisteners;
}

int server_listener_fd(const sp_server *s, int i) {
    return s->listeners[i].w.fd;
}

const net_addr *server_listener_addr(const sp_server *s, int i) {
    return &s->listeners[i].addr;
}

void server_set_listener_fd(sp_server *s, int i, int fd) {
    s->listeners[i].w.fd = fd;
}

int server_ext_set(sp_server *s, const void *key, void *data, void (*free_fn)(void *data)) {
    int slot = -1;
    for (int i = 0; i < SERVER_MAX_EXT; i++) {
        if (s->ext[i].key == key) {
            if (s->ext[i].free_fn && s->ext[i].data && s->ext[i].data != data)
                s->ext[i].free_fn(s->ext[i].data);
            slot = i;
            break;
        }
        if (slot < 0 && !s->ext[i].key)
            slot = i;
    }
    if (slot < 0)
        return data ? -ENOSPC : 0;
    if (!data) {
        s->ext[slot].key = NULL;
        s->ext[slot].data = NULL;
        s->ext[slot].free_fn = NULL;
        return 0;
    }
    s->ext[slot].key = key;
    s->ext[slot].data = data;
    s->ext[slot].free_fn = free_fn;
    return 0;
}

void *server_ext_get(const sp_server *s, const void *key) {
    for (int i = 0; i < SERVER_MAX_EXT; i++)
        if (s->ext[i].key == key)
            return s->ext[i].data;
    return NULL;
}

int server_on_stop(sp_server *s, void (*fn)(sp_server *s, void *ud), void *ud) {
    for (int i = 0; i < s->non_stop; i++)
        if (s->on_stop[i].fn == fn && s->on_stop[i].ud == ud)
            return 0;
    if (s->non_stop == 4)
        return -ENOSPC;
    s->on_stop[s->non_stop].fn = fn;
    s->on_stop[s->non_stop].ud = ud;
    s->non_stop++;
    return 0;
}

int sp_server_on_worker_start(sp_server *s, int (*fn)(sp_server *s, void *ud), void *ud) {
    if (s->non_start == 8)
        return -ENOSPC;
    s->on_start[s->non_start].fn = fn;
    s->on_start[s->non_start].ud = ud;
    s->non_start++;
    return 0;
}

void server_set_listener_proxy(sp_server *s, int i) {
    if (i >= 0 && i < s->nlisteners)
        s->listeners[i].proxy = 1;
}

/* What TLS listeners offer: the list set, else h2 (unless --http2 off)
 * before http/1.1. */
static const char *alpn_list(const sp_server *s) {
    return s->alpn ? s->alpn : s->http2_off ? "http/1.1" : "h2,http/1.1";
}

void server_refresh_alpn(sp_server *s) {
    for (int i = 0; i < s->nlisteners; i++)
        if (s->listeners[i].tls)
            tls_ctx_set_alpn(s->listeners[i].tls, alpn_list(s));
}

int server_set_listener_tls(sp_server *s, int i, tls_ctx *t) {
    if (i < 0 || i >= s->nlisteners)
        return -EINVAL;
    if (t && tls_ctx_set_alpn(t, alpn_list(s)) < 0)
        return -EINVAL;
    s->listeners[i].tls = t;
    return 0;
}

tls_ctx *server_listener_tls(const sp_server *s, int i) {
    return i >= 0 && i < s->nlisteners ? s->listeners[i].tls : NULL;
}

void server_set_tls_handshake_timeout(sp_server *s, int ms) {
    s->tls_handshake_timeout_ms = ms;
}

int server_set_alpn(sp_server *s, const char *list) {
    for (int i = 0; i < s->nlisteners; i++)
        if (s->listeners[i].tls && tls_ctx_set_alpn(s->listeners[i].tls, list) < 0)
            return -EINVAL;
    s->alpn = list;
    return 0;
}

void server_set_http2(sp_server *s, int off, int max_streams) {
    s->http2_off = off;
    s->http2_max_streams = max_streams > 0 ? max_streams : 100;
}
