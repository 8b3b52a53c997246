/* timer_heap.h — a binary min-heap of timers ordered by deadline, then by
 * arming order, so timers with equal deadlines fire first-armed first.
 * Timers are embedded in their owners and know their heap slot, so
 * cancelling is O(log n) and allocation-free. */
#ifndef SPINDLE_TIMER_HEAP_H
#define SPINDLE_TIMER_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct sp_loop;

typedef struct loop_timer {
    int64_t when;    /* absolute deadline, loop milliseconds */
    uint64_t seq;    /* arming order, the tie-break */
    size_t heap_idx; /* 1-based slot in the heap; 0 = not armed */
    void (*cb)(struct sp_loop *l, struct loop_timer *t);
    void *data;
} loop_timer;

typedef struct timer_heap {
    loop_timer **v;
    size_t n, cap;
    uint64_t next_seq;
} timer_heap;

/* Inserts t (not armed) with its `when` already set. 0 or -ENOMEM. */
int timer_heap_push(timer_heap *h, loop_timer *t);
/* Removes an armed t. */
void timer_heap_remove(timer_heap *h, loop_timer *t);
/* The earliest timer, or NULL. */
static inline loop_timer *timer_heap_top(const timer_heap *h) {
    return h->n ? h->v[0] : NULL;
}
void timer_heap_free(timer_heap *h);

#endif
