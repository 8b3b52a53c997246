/* sched.c — periodic timers (sp_every): a loop timer that, when due, starts
 * the callback on a coroutine of its own; the next tick is armed when the
 * callback returns, at the next due time still ahead, so ticks never
 * overlap. Between ticks a timer holds no coroutine. */
#include "loop/loop.h"

#include <errno.h>
#include <stdlib.h>

struct sp_timer {
    loop_timer tm;
    loop *l;
    int64_t period;
    int64_t due; /* the tick being served or awaited */
    void (*fn)(void *arg);
    void *arg;
    uint8_t running;   /* a tick's coroutine is alive */
    uint8_t cancelled; /* free when the running tick returns */
};

static void on_due(loop *l, loop_timer *tm);

/* Arms the first due time after `now` on the start + k*period grid. */
static void arm_next(sp_timer *t) {
    int64_t now = loop_clock_ms();
    int64_t next = t->due + t->period;
    if (next <= now)
        next += ((now - next) / t->period + 1) * t->period;
    t->due = next;
    /* Only heap growth can fail (-ENOMEM): the timer then stops ticking
     * but stays valid, and sp_timer_cancel still frees it. */
    loop_timer_arm(t->l, &t->tm, next, on_due, t);
}

static void tick_main(void *arg) {
    sp_timer *t = arg;
    if (!t->cancelled) /* cancelled between the spawn and now: no tick */
        t->fn(t->arg);
    t->running = 0;
    if (t->cancelled) {
        free(t);
        return;
    }
    arm_next(t);
}

static void on_due(loop *l, loop_timer *tm) {
    sp_timer *t = tm->data;
    t->running = 1;
    if (loop_spawn(l, tick_main, t) < 0) {
        t->running = 0; /* no stack now: skip this tick, try the next */
        arm_next(t);
    }
}

sp_timer *sp_every(int64_t ms, void (*fn)(void *arg), void *arg) {
    loop *l = loop_current();
    if (!l) {
        errno = ENXIO;
        return NULL;
    }
    if (ms < 1 || !fn) {
        errno = EINVAL;
        return NULL;
    }
    sp_timer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    *t = (sp_timer){.l = l, .period = ms, .due = loop_clock_ms() + ms, .fn = fn, .arg = arg};
    if (loop_timer_arm(l, &t->tm, t->due, on_due, t) < 0) {
        free(t);
        errno = ENOMEM;
        return NULL;
    }
    return t;
}

void sp_timer_cancel(sp_timer *t) {
    if (!t)
        return;
    loop_timer_cancel(t->l, &t->tm);
    if (t->running)
        t->cancelled = 1;
    else
        free(t);
}
