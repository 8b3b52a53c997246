/* sync.h — the internal side of the coroutine toolkit: FIFO wait queues of
 * parked tasks (used by channels, wait groups, mutexes, conditions and the
 * WebSocket writer lock), and the mutex struct so other modules can embed
 * one without an allocation. */
#ifndef SPINDLE_SYNC_H
#define SPINDLE_SYNC_H

#include "base/list.h"
#include "loop/loop.h"

/* The watch whose hang-up interrupts t's parks (loop_task_set_hup_watch),
 * or NULL; t may be NULL. Implemented in loop.c. */
loop_watch *loop_task_hup_watch(const task *t);

enum { WAIT_PENDING = 1 }; /* waiter.state while parked */

/* A parked task in a wait queue; lives on that task's stack. A waker
 * unlinks it, sets state (0: served, < 0: an errno to return) and wakes
 * the task; the task decides from state, not from how it was woken, so a
 * hand-off that races a timeout is never lost. */
typedef struct waiter {
    list_node node; /* in its waitq */
    task *t;
    void *elem; /* channels: the element to take or fill */
    int state;
} waiter;

typedef struct waitq {
    list_head waiters; /* oldest first */
} waitq;

/* Unlinks and returns the oldest waiter, or NULL. */
waiter *waitq_pop(waitq *q);
/* Unlinks w, sets its state to `state` and makes its task ready. */
void waitq_serve(loop *l, waiter *w, int state);
/* Serves every waiter with `state`, oldest first. */
void waitq_serve_all(loop *l, waitq *q, int state);
/* Parks the running task in q (w filled by the caller except links and
 * state) until served, the deadline passes (-ETIMEDOUT) or the task's
 * connection hangs up (-ECONNRESET, only when hup is non-NULL). Returns
 * the state it was served with (0 or -errno). -EPERM outside a task. */
int waitq_wait(loop *l, waitq *q, waiter *w, int64_t deadline, loop_watch *hup);

/* An absolute deadline for a timeout in ms (< 0: none). */
int64_t sync_deadline(int64_t timeout_ms);

struct sp_mutex {
    task *owner; /* NULL when free */
    waitq q;
};

/* Locks m for the running task, waiting until `deadline`; the lock is
 * handed to waiters in FIFO order. 0, -ETIMEDOUT, -ECONNRESET (hup),
 * -EDEADLK (already the owner), -EPERM (outside a task). */
int mutex_lock(loop *l, struct sp_mutex *m, int64_t deadline, loop_watch *hup);
/* Unlocks m (must be the owner): -EPERM otherwise. */
int mutex_unlock(loop *l, struct sp_mutex *m);

#endif
