/* chan.c — channels between coroutines of one loop: a ring of fixed-size
 * elements (bounded, or growing when unbounded) and two FIFO wait queues.
 * An element goes straight to the oldest waiting receiver, and a freed slot
 * straight to the oldest waiting sender, so waiting order is serving order. */
#include "loop/sync.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHAN_FIRST_CAP 8 /* ring slots an unbounded channel starts with */

struct sp_chan {
    size_t elem_size;
    size_t capacity; /* 0: unbounded */
    char *ring;
    size_t ring_cap; /* slots allocated */
    size_t head;     /* oldest element */
    size_t len;      /* elements buffered */
    int closed;
    waitq senders;   /* waiter.elem: the element to send */
    waitq receivers; /* waiter.elem: where to put one */
};

sp_chan *sp_chan_new(size_t capacity, size_t elem_size) {
    if (elem_size == 0 || (capacity && capacity > SIZE_MAX / elem_size)) {
        errno = EINVAL;
        return NULL;
    }
    sp_chan *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->elem_size = elem_size;
    ch->capacity = capacity;
    ch->ring_cap = capacity ? capacity : CHAN_FIRST_CAP;
    ch->ring = malloc(ch->ring_cap * elem_size);
    if (!ch->ring) {
        free(ch);
        return NULL;
    }
    return ch;
}

static char *slot(sp_chan *ch, size_t i) {
    return ch->ring + ((ch->head + i) % ch->ring_cap) * ch->elem_size;
}

/* Makes room for one more element in an unbounded channel. */
static int grow(sp_chan *ch) {
    if (ch->ring_cap > SIZE_MAX / 2 / ch->elem_size)
        return -ENOMEM;
    size_t ncap = ch->ring_cap * 2;
    char *n = malloc(ncap * ch->elem_size);
    if (!n)
        return -ENOMEM;
    for (size_t i = 0; i < ch->len; i++)
        memcpy(n + i * ch->elem_size, slot(ch, i), ch->elem_size);
    free(ch->ring);
    ch->ring = n;
    ch->ring_cap = ncap;
    ch->head = 0;
    return 0;
}

static void push(sp_chan *ch, const void *elem) {
    memcpy(slot(ch, ch->len), elem, ch->elem_size);
    ch->len++;
}

static void pop(sp_chan *ch, void *elem) {
    memcpy(elem, slot(ch, 0), ch->elem_size);
    ch->head = (ch->head + 1) % ch->ring_cap;
    ch->len--;
}

static int full(const sp_chan *ch) {
    return ch->capacity ? ch->len == ch->capacity : 0;
}

int sp_chan_send(sp_chan *ch, const void *elem, int64_t timeout_ms) {
    loop *l = loop_current();
    if (ch->closed)
        return -EPIPE;
    waiter *r = waitq_pop(&ch->receivers);
    if (r) { /* receivers wait only on an empty channel */
        memcpy(r->elem, elem, ch->elem_size);
        waitq_serve(l, r, 0);
        return 0;
    }
    if (!full(ch)) {
        if (ch->len == ch->ring_cap) {
            int rc = grow(ch);
            if (rc < 0)
                return rc;
        }
        push(ch, elem);
        return 0;
    }
    if (timeout_ms == 0)
        return -EAGAIN;
    if (!l)
        return -EPERM;
    waiter w = {.elem = (void *)elem};
    return waitq_wait(l, &ch->senders, &w, sync_deadline(timeout_ms),
                      loop_task_hup_watch(loop_task(l)));
}

int sp_chan_recv(sp_chan *ch, void *elem, int64_t timeout_ms) {
    loop *l = loop_current();
    if (ch->len) {
        pop(ch, elem);
        /* The freed slot goes to the oldest waiting sender at once. */
        waiter *s = waitq_pop(&ch->senders);
        if (s) {
            push(ch, s->elem);
            waitq_serve(l, s, 0);
        }
        return 0;
    }
    if (ch->closed)
        return -EPIPE;
    if (timeout_ms == 0)
        return -EAGAIN;
    if (!l)
        return -EPERM;
    waiter w = {.elem = elem};
    return waitq_wait(l, &ch->receivers, &w, sync_deadline(timeout_ms),
                      loop_task_hup_watch(loop_task(l)));
}

void sp_chan_close(sp_chan *ch) {
    if (ch->closed)
        return;
    ch->closed = 1;
    loop *l = loop_current();
    waitq_serve_all(l, &ch->senders, -EPIPE);
    waitq_serve_all(l, &ch->receivers, -EPIPE);
}

size_t sp_chan_len(const sp_chan *ch) {
    return ch->len;
}

void sp_chan_free(sp_chan *ch) {
    if (!ch)
        return;
    sp_chan_close(ch);
    free(ch->ring);
    free(ch);
}
