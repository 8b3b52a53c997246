/* env_cache.c — the request-independent part of recent environs, found
 * again by the bytes that made them: a keep-alive client, or many clients of
 * one kind, send the same head again and again, and decoding it into ~25
 * dict entries is most of a hello world's cost. A base is reused only for
 * the same request line and fields, byte for byte, from the same kind of
 * peer (listener, address family, address, trusted or not); the caller
 * copies it and adds what is the request's own (wsgi.input, REMOTE_PORT).
 * Direct-mapped and bounded: ENV_SLOTS bases, heads up to ENV_HEAD_MAX. */
#include "common/binding.h"

#include <stdlib.h>
#include <string.h>

#define ENV_SLOTS    16 /* a power of two */
#define ENV_HEAD_MAX 4096

typedef struct env_slot {
    PyObject *base; /* NULL: empty */
    char *head;
    size_t len;
    uint8_t listener, family, trusted;
    uint8_t ip[16];
} env_slot;

static env_slot slots[ENV_SLOTS];

/* The bytes the base is made of: the request line and the fields up to the
 * end of the last value (what lies beyond is trimmed OWS and CRLFs). */
static const char *head_bytes(const http_request *hd, size_t *len) {
    const char *end =
        hd->nfields ? hd->fields[hd->nfields - 1].value + hd->fields[hd->nfields - 1].value_len
                    : hd->target + hd->target_len + 9; /* " HTTP/1.x" */
    *len = (size_t)(end - hd->method);
    return hd->method;
}

static uint64_t word(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* A slot from the length and three words of the head and the peer's
 * address: a few instructions; the full compare decides. */
static env_slot *slot_for(const req_conn_info *c, const char *h, size_t n) {
    uint64_t x = n * 0x9e3779b97f4a7c15u ^ word((const char *)c->peer_ip + 8) ^ c->listener;
    if (n >= 16)
        x ^=
            word(h) * 0xc2b2ae3d27d4eb4fu ^ word(h + n / 2) ^ word(h + n - 8) * 0x165667b19e3779f9u;
    x ^= word((const char *)c->peer_ip) * 0x27d4eb2f165667c5u;
    return &slots[(x ^ x >> 29 ^ x >> 47) & (ENV_SLOTS - 1)];
}

static int same_peer(const env_slot *s, const req_conn_info *c) {
    return s->listener == c->listener && s->family == c->peer_family &&
           s->trusted == c->peer_trusted && memcmp(s->ip, c->peer_ip, sizeof s->ip) == 0;
}

PyObject *env_cache_get(const req_info *ri) {
    size_t n;
    const char *h = head_bytes(ri->head, &n);
    if (n > ENV_HEAD_MAX)
        return NULL;
    env_slot *s = slot_for(&ri->conn, h, n);
    if (s->base && s->len == n && same_peer(s, &ri->conn) && memcmp(s->head, h, n) == 0)
        return s->base; /* borrowed */
    return NULL;
}

void env_cache_put(const req_info *ri, PyObject *base) {
    size_t n;
    const char *h = head_bytes(ri->head, &n);
    if (n > ENV_HEAD_MAX)
        return;
    const req_conn_info *c = &ri->conn;
    env_slot *s = slot_for(c, h, n);
    if (!s->head || s->len < n) {
        char *nh = realloc(s->head, n ? n : 1);
        if (!nh)
            return; /* not cached: the next request builds its own */
        s->head = nh;
    }
    memcpy(s->head, h, n);
    s->len = n;
    s->listener = c->listener;
    s->family = c->peer_family;
    s->trusted = c->peer_trusted;
    memcpy(s->ip, c->peer_ip, sizeof s->ip);
    Py_INCREF(base);
    Py_XSETREF(s->base, base);
}
