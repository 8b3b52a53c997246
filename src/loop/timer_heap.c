/* timer_heap.c — the loop's timer min-heap (see timer_heap.h). The heap
 * array grows by doubling and is kept; steady state allocates nothing. */
#include "loop/timer_heap.h"

#include <errno.h>
#include <stdlib.h>

static int earlier(const loop_timer *a, const loop_timer *b) {
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void place(timer_heap *h, size_t i, loop_timer *t) {
    h->v[i] = t;
    t->heap_idx = i + 1;
}

static void sift_up(timer_heap *h, size_t i) {
    loop_timer *t = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!earlier(t, h->v[parent]))
            break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, t);
}

static void sift_down(timer_heap *h, size_t i) {
    loop_timer *t = h->v[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && earlier(h->v[child + 1], h->v[child]))
            child++;
        if (!earlier(h->v[child], t))
            break;
        place(h, i, h->v[child]);
        i = child;
    }
    place(h, i, t);
}

int timer_heap_push(timer_heap *h, loop_timer *t) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        loop_timer **v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    t->seq = h->next_seq++;
    h->v[h->n] = t;
    h->n++;
    sift_up(h, h->n - 1);
    return 0;
}

void timer_heap_remove(timer_heap *h, loop_timer *t) {
    size_t i = t->heap_idx - 1;
    t->heap_idx = 0;
    h->n--;
    if (i == h->n)
        return;
    loop_timer *last = h->v[h->n];
    place(h, i, last);
    /* The moved timer may belong above or below the hole. */
    if (i > 0 && earlier(last, h->v[(i - 1) / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

void timer_heap_free(timer_heap *h) {
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
