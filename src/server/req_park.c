/* req_park.c — a request whose handler waits for long (a long poll, a
 * condition, a bus subscription: loop_long_wait_begin) gives back its
 * connection's read buffer meanwhile. If the handler took no slice into
 * the buffer (sp_req_header, sp_req_query_param...: r->sliced) nor of the
 * path (sp_req_path, sp_req_param: r->path_taken), the bytes move to a
 * block of their own size, the fields and path from the buffer's front to
 * another, and the buffer goes to the pool;
 * woken, the connection gets a pool buffer again with the same bytes at
 * the same offsets, the request's own slices staying on the block until
 * it ends. If it did, the buffer stays where it is and only its pages past
 * the bytes go back to the kernel, so those slices keep their bytes and
 * nothing of the buffer can reach another connection. (Handing it to the
 * pool regardless let a slice taken before the wait read what the next
 * client's request put there.) */
#include "server/server.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static void rebase_request(sp_req *r, const char *old, size_t len, const char *nb) {
    http_request_rebase(&r->head, old, len, nb);
    http_slice_rebase(&r->path.ptr, old, len, nb);
    http_slice_rebase(&r->query.ptr, old, len, nb);
    http_slice_rebase(&r->pend, old, len, nb);
}

/* Whether p is in the buffer's front, where the request's fields and path
 * are (http_conn.c). */
static int in_front(const sp_req *r, const void *p) {
    const char *f = (const char *)conn_fields(r->srv, r->c);
    return p && (const char *)p >= f && (const char *)p < f + CONN_FIELDS * sizeof(http_field);
}

/* The bytes of the buffer's front the request's fields and path use (they
 * are there the first time it parks, unless malloc'ed), 0 if none. The
 * path counts only if the handler holds no slice of it (r->path_taken). */
static size_t front_used(const sp_req *r) {
    const http_request *h = &r->head;
    size_t n = in_front(r, h->fields) ? h->nfields * sizeof *h->fields : 0;
    if (in_front(r, r->path.ptr))
        n = (size_t)(r->path.ptr - (const char *)conn_fields(r->srv, r->c)) + r->path.len + 1;
    return n;
}

/* Parking: the buffer's bytes to a block of their own (the first time,
 * with the fields and path from its front after them: the handler never
 * holds a field, only slices of the bytes they name, rebased with the
 * buffer's, and no slice of the path, the match's parameters being its
 * only other slices), the buffer to the pool. Out of memory, the buffer
 * simply stays. */
static void give_back(sp_req *r) {
    conn *c = r->c;
    sp_server *s = r->srv;
    size_t len = c->buf_len;
    size_t fl = r->head_copy ? 0 : front_used(r);
    size_t at = (len + 15) & ~(size_t)15; /* the front's copy, aligned */
    char *b = malloc(fl ? at + fl : len ? len : 1);
    if (!b)
        return;
    memcpy(b, c->buf, len);
    if (!r->head_copy) {
        if (fl) {
            const char *front = (const char *)conn_fields(s, c);
            memcpy(b + at, front, fl);
            if (in_front(r, r->head.fields))
                r->head.fields = (http_field *)(void *)(b + at);
            if (in_front(r, r->path.ptr)) {
                const char *p = r->path.ptr;
                route_match *m = (route_match *)r->match; /* the driver's, on its stack */
                for (size_t i = 0; m && i < m->nparams; i++)
                    http_slice_rebase(&m->params[i].value, p, r->path.len, b + at + (p - front));
                r->path.ptr = b + at + (p - front);
            }
        }
        rebase_request(r, c->buf, len, b);
        r->head_copy = b; /* the request's slices live here now */
    }
    r->park_copy = b;
    buf_pool_put_cold(&s->bufs, c->buf); /* its pages too: the wait is long */
    c->buf = NULL;
}

/* Woken: a pool buffer again, with the bytes where they were. */
static void take_again(sp_req *r) {
    conn *c = r->c;
    sp_server *s = r->srv;
    if (!r->park_copy)
        return;
    c->buf = buf_pool_get(&s->bufs);
    if (c->buf) {
        memcpy(c->buf, r->park_copy, c->buf_len);
    } else {
        /* No memory for a buffer: the connection cannot go on. Its next
         * read or write fails, and the driver closes it (no buffer). */
        c->buf_len = c->buf_off = 0;
        (void)shutdown(c->w.fd, SHUT_RDWR);
    }
    if (r->park_copy != r->head_copy)
        free(r->park_copy);
    r->park_copy = NULL;
}

void req_park_hook(void *arg, int parking) {
    sp_req *r = *(sp_req **)arg; /* the request being served, or NULL */
    if (!r)
        return;
    conn *c = r->c;
    if (!parking)
        take_again(r);
    else if (!c->buf)
        return;
    else if (!r->head_copy && (r->sliced || (r->path_taken && in_front(r, r->path.ptr))))
        buf_pool_shed(&r->srv->bufs, c->buf, c->buf_len); /* slices point into it */
    else
        give_back(r);
}

void req_park_done(sp_req *r) {
    if (r->park_copy && r->park_copy != r->head_copy)
        free(r->park_copy);
    free(r->head_copy);
    r->park_copy = r->head_copy = NULL;
}
