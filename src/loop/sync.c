/* sync.c — FIFO wait queues of parked tasks, and on them the coroutine
 * wait group, mutex and condition variable. A waker hands the result to
 * the waiter (its state) before waking it, so a wake-up that races a
 * timeout or a hang-up never loses a hand-off. */
#include "loop/sync.h"

#include <errno.h>
#include <stdlib.h>

/* ---- wait queues --------------------------------------------------------- */

waiter *waitq_pop(waitq *q) {
    list_node *n = list_pop_front(&q->waiters);
    return n ? container_of(n, waiter, node) : NULL;
}

void waitq_serve(loop *l, waiter *w, int state) {
    w->state = state;
    loop_wake(l, w->t, 0);
}

void waitq_serve_all(loop *l, waitq *q, int state) {
    waiter *w;
    while ((w = waitq_pop(q)))
        waitq_serve(l, w, state);
}

int waitq_wait(loop *l, waitq *q, waiter *w, int64_t deadline, loop_watch *hup) {
    w->t = loop_task(l);
    if (!w->t)
        return -EPERM;
    w->state = WAIT_PENDING;
    list_push_back(&q->waiters, &w->node);
    /* A wait that may be long (a long poll on a condition) gives back the
     * connection's buffer at once, and once it has lasted, the stack pages
     * below it too (loop.h): one served quickly pays no syscall. */
    int64_t soon = loop_clock_ms() + LOOP_LONG_WAIT_MS;
    int rc;
    if (deadline <= soon) {
        rc = loop_park(l, deadline, hup);
    } else {
        loop_long_wait_begin(l);
        rc = loop_park(l, soon, hup);
        if (rc == -ETIMEDOUT && w->state == WAIT_PENDING) {
            loop_trim_when_parked(l);
            rc = loop_park(l, deadline, hup);
        }
        loop_long_wait_end(l);
    }
    if (w->state != WAIT_PENDING)
        return w->state; /* served: whatever else woke us came second */
    list_remove(&q->waiters, &w->node);
    return rc < 0 ? rc : -EINTR;
}

int64_t sync_deadline(int64_t timeout_ms) {
    if (timeout_ms < 0)
        return LOOP_NO_DEADLINE;
    return loop_clock_ms() + timeout_ms;
}

/* The running task's connection watch: its hang-up ends the wait. */
static loop_watch *current_hup(loop *l) {
    return loop_task_hup_watch(loop_task(l));
}

/* ---- mutex ----------------------------------------------------------------- */

int mutex_lock(loop *l, struct sp_mutex *m, int64_t deadline, loop_watch *hup) {
    task *me = loop_task(l);
    if (!me)
        return -EPERM;
    if (!m->owner) {
        m->owner = me;
        return 0;
    }
    if (m->owner == me)
        return -EDEADLK;
    if (deadline != LOOP_NO_DEADLINE && deadline <= loop_clock_ms())
        return -EAGAIN;
    waiter w = {0};
    return waitq_wait(l, &m->q, &w, deadline, hup); /* on 0 the unlocker made us owner */
}

int mutex_unlock(loop *l, struct sp_mutex *m) {
    if (!m->owner || m->owner != loop_task(l))
        return -EPERM;
    waiter *w = waitq_pop(&m->q);
    m->owner = w ? w->t : NULL;
    if (w)
        waitq_serve(l, w, 0);
    return 0;
}

sp_mutex *sp_mutex_new(void) {
    return calloc(1, sizeof(sp_mutex));
}

int sp_mutex_lock(sp_mutex *m, int64_t timeout_ms) {
    loop *l = loop_current();
    if (!l)
        return -EPERM;
    int64_t deadline = timeout_ms == 0 ? loop_clock_ms() : sync_deadline(timeout_ms);
    return mutex_lock(l, m, deadline, current_hup(l));
}

int sp_mutex_unlock(sp_mutex *m) {
    loop *l = loop_current();
    return l ? mutex_unlock(l, m) : -EPERM;
}

void sp_mutex_free(sp_mutex *m) {
    free(m);
}

/* ---- condition ----------------------------------------------------------- */

struct sp_cond {
    waitq q;
};

sp_cond *sp_cond_new(void) {
    return calloc(1, sizeof(sp_cond));
}

int sp_cond_wait(sp_cond *c, sp_mutex *m, int64_t timeout_ms) {
    loop *l = loop_current();
    if (!l || !loop_task(l) || m->owner != loop_task(l))
        return -EPERM;
    waiter w = {0};
    int64_t deadline = sync_deadline(timeout_ms);
    /* Unlocking only makes the next owner ready; it runs after we park, so
     * no signal can come between the unlock and the wait. */
    mutex_unlock(l, m);
    int rc = waitq_wait(l, &c->q, &w, deadline, current_hup(l));
    int lrc = mutex_lock(l, m, LOOP_NO_DEADLINE, NULL);
    (void)lrc; /* without deadline or hang-up watch, it can only succeed */
    return rc;
}

void sp_cond_signal(sp_cond *c) {
    loop *l = loop_current();
    waiter *w = waitq_pop(&c->q);
    if (w)
        waitq_serve(l, w, 0);
}

void sp_cond_broadcast(sp_cond *c) {
    waitq_serve_all(loop_current(), &c->q, 0);
}

void sp_cond_free(sp_cond *c) {
    if (!c)
        return;
    if (!list_empty(&c->q.waiters))
        waitq_serve_all(loop_current(), &c->q, 0);
    free(c);
}

/* ---- wait group ---------------------------------------------------------- */

struct sp_wg {
    long count;
    waitq q;
};

sp_wg *sp_wg_new(void) {
    return calloc(1, sizeof(sp_wg));
}

int sp_wg_add(sp_wg *wg, int n) {
    if (wg->count + n < 0)
        return -EINVAL;
    wg->count += n;
    if (wg->count == 0 && !list_empty(&wg->q.waiters))
        waitq_serve_all(loop_current(), &wg->q, 0);
    return 0;
}

int sp_wg_done(sp_wg *wg) {
    return sp_wg_add(wg, -1);
}

int sp_wg_wait(sp_wg *wg, int64_t timeout_ms) {
    if (wg->count == 0)
        return 0;
    if (timeout_ms == 0)
        return -EAGAIN;
    loop *l = loop_current();
    if (!l)
        return -EPERM;
    waiter w = {0};
    return waitq_wait(l, &wg->q, &w, sync_deadline(timeout_ms), current_hup(l));
}

void sp_wg_free(sp_wg *wg) {
    if (!wg)
        return;
    if (!list_empty(&wg->q.waiters))
        waitq_serve_all(loop_current(), &wg->q, -EPIPE);
    free(wg);
}
