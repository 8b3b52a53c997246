/* loop.h — the per-worker event loop (internal side): coroutine tasks with a
 * ready queue, parking on fds with deadlines, timers in a heap, callbacks
 * for waiters that hold no coroutine, and the blocking-call thread pool.
 * One loop per thread; `loop_current()` is that thread's loop. */
#ifndef SPINDLE_LOOP_H
#define SPINDLE_LOOP_H

#include "coro/coro.h"
#include "loop/loop_backend.h"
#include "loop/timer_heap.h"
#include "spindle.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct sp_loop loop;
typedef struct task task;
typedef void (*loop_timer_cb)(loop *l, loop_timer *t);

/* No deadline, for the deadline_ms arguments below. */
#define LOOP_NO_DEADLINE INT64_MAX

/* ---- timers: embedded in their owner, no allocation (timer_heap.h) ---- */
/* Arms (or re-arms) t to call cb at `when`. 0 or -ENOMEM (heap growth). */
int loop_timer_arm(loop *l, loop_timer *t, int64_t when, loop_timer_cb cb, void *data);
/* Disarms t if armed; harmless otherwise. */
void loop_timer_cancel(loop *l, loop_timer *t);
static inline int loop_timer_armed(const loop_timer *t) {
    return t->heap_idx != 0;
}

/* ---- fd watches ----------------------------------------------------------
 * A watch is embedded in its owner (a connection, a listener). Readiness
 * goes to the task parked for that direction; if none is, to cb (if set),
 * which is how waiters without a coroutine (an idle keep-alive connection,
 * a listener, a Python greenlet) are told. */
typedef struct loop_watch loop_watch;
typedef void (*loop_watch_cb)(loop *l, loop_watch *w, uint32_t events);
struct loop_watch {
    int fd;
    uint8_t registered;
    uint8_t mode;     /* backend_mode */
    uint8_t lazy;     /* register in `mode` only when someone first waits */
    uint32_t hup;     /* LOOP_RDHUP / LOOP_HUP seen so far (latched) */
    task *reader;     /* parked waiting to read */
    task *writer;     /* parked waiting to write */
    task *hup_waiter; /* parked elsewhere (a timer, a channel), told of hang-up */
    loop_watch_cb cb;
    void *data;
};

/* Registers w (fd, cb, data filled in by the caller) with the backend in
 * the given mode. Connections: once, for their whole life. 0 or -errno. */
int loop_watch_add(loop *l, loop_watch *w, backend_mode mode);
/* Marks w (fd, cb, data filled in) to be registered in `mode` only when a
 * task first parks on it, or loop_watch_ensure is called: a connection
 * whose request is already readable when accepted never costs an
 * epoll_ctl. */
void loop_watch_lazy(loop_watch *w, backend_mode mode);
/* Registers a lazy watch now (no-op if registered). 0 or -errno. */
int loop_watch_ensure(loop *l, loop_watch *w);
/* Unregisters w (before closing its fd), waking any parked task with
 * -ECANCELED. 0 or -errno. */
int loop_watch_del(loop *l, loop_watch *w);

/* Unregisters w for an fd its owner is about to close(2) (epoll: nothing
 * to do, the close leaves epoll by itself). Wakes parked tasks with
 * -ECANCELED. */
void loop_watch_forget(loop *l, loop_watch *w);

/* Closes w's fd through the backend (registered or not), waking parked
 * tasks with -ECANCELED: epoll closes it at once; io_uring removes its poll
 * (which holds the file open) and queues the close with the next submit. */
void loop_watch_close(loop *l, loop_watch *w);

/* ---- tasks and parking (only from inside a task's coroutine) ------------ */

/* The loop of the calling thread, or NULL. */
loop *loop_current(void);
/* The running task, or NULL on the loop's own stack. */
task *loop_task(loop *l);

/* Parks the running task until w is ready for `dir` (LOOP_READ or
 * LOOP_WRITE), w hangs up, or deadline_ms passes. Returns the LOOP_* bits
 * that woke it (> 0), -ETIMEDOUT, -ECANCELED (watch removed), or -EAGAIN
 * when called outside a task (the caller cannot park). */
int loop_wait_fd(loop *l, loop_watch *w, uint32_t dir, int64_t deadline_ms);

/* Sends msg on w's fd through the backend's queue (io_uring: in the next
 * submit, with every other send of this loop turn), parking the running
 * task until it completes or deadline_ms passes. Returns the bytes sent
 * (maybe fewer than asked), -errno (-EAGAIN: wait for writability and
 * retry), -ETIMEDOUT, or -ENOSYS when the backend queues no sends, no
 * task runs, or w is not the task's own connection (its hup watch): then
 * the caller calls sendmsg itself. */
struct msghdr;
ssize_t loop_send(loop *l, loop_watch *w, const struct msghdr *msg, int flags, int64_t deadline_ms);

/* Parks the running task until woken with loop_wake or deadline_ms passes
 * (-ETIMEDOUT). If hup is non-NULL the task is also woken with -ECONNRESET
 * when that watch hangs up. Returns the value given to loop_wake. */
int loop_park(loop *l, int64_t deadline_ms, loop_watch *hup);
/* Makes a parked task ready with `result` (the first wake wins). */
void loop_wake(loop *l, task *t, int result);

/* Names the watch whose hang-up interrupts this task's sleeps and parks
 * (the connection it serves, or its HTTP/2 stream's), or NULL. */
void loop_task_set_hup_watch(task *t, loop_watch *w);
/* A watch no fd backs, for loop_task_set_hup_watch: an HTTP/2 stream's,
 * which loop_watch_hang_up hangs up when the client resets the stream or
 * the connection ends. Many streams share one connection, and a watch
 * tells one parked task of its hang-up: each stream needs its own. */
void loop_watch_init_virtual(loop_watch *w);
/* Latches a hang-up on w and wakes whoever waits on it, as the backend's
 * report of one would (the task parked elsewhere with -ECONNRESET). */
void loop_watch_hang_up(loop *l, loop_watch *w);
/* That watch, or NULL (t may be NULL). */
loop_watch *loop_task_hup_watch(const task *t);

/* ---- long waits: what a parked task gives back ----------------------------
 * A wait that may be long (a WebSocket with nothing to read, a long poll on
 * a condition) is bracketed by loop_long_wait_begin/_end, which run the
 * task's park hook (the server's: the connection's read buffer goes back to
 * the pool; no syscall). Once it has lasted LOOP_LONG_WAIT_MS, the waiter
 * calls loop_trim_when_parked before parking again: if the task allows it,
 * the loop gives back its stack pages below where it waits once it has
 * parked (coro_trim_stack: one madvise), so short waits pay no syscall.
 * Tasks with neither hook nor trimming cost nothing. */
#define LOOP_LONG_WAIT_MS 25 /* a wait that has lasted this long is worth a syscall */
typedef void (*loop_park_hook)(void *arg, int parking);
/* Once per task: hook(arg, 1) before each long wait, hook(arg, 0) after it
 * (NULL: none); trimmable 1 when nothing below the task's stack pointer is
 * live while it waits (plain C frames; not a stack that greenlets copy
 * slices of), so its stack may be trimmed. */
void loop_task_set_park(task *t, loop_park_hook hook, void *arg, int trimmable);
/* 1 when the task has a park hook (it ran), else 0. */
int loop_long_wait_begin(loop *l);
void loop_long_wait_end(loop *l);
void loop_trim_when_parked(loop *l);

/* ---- fairness: the work budget -------------------------------------------
 * A coroutine gives the loop back only when it waits, and a client whose
 * reads and writes never block (tiny chunks, tiny WebSocket frames, a fast
 * upload) would keep it from ever waiting. So the server's handler API
 * (sp_read, the response writers, sp_ws_recv/sp_ws_send) charges the running
 * task for each call that did something — one unit plus one per 16 KiB
 * moved — and once it has spent LOOP_BUDGET units since it was last resumed
 * it yields (sp_yield): the I/O poll, the timers and every other ready task
 * run before it goes on. Parking resets the count (it is per resume). */
#define LOOP_BUDGET       64
#define LOOP_BUDGET_SHIFT 14 /* one more unit per 2^14 bytes */

/* The first member of struct sp_loop, read inline by loop_charge. */
typedef struct loop_head {
    uint32_t spent; /* units the running task has spent since resumed */
} loop_head;

/* Yields the running task (the budget is spent), or only resets the count
 * outside a task. */
void loop_budget_yield(loop *l);

/* Charges the running task for one call that moved `bytes`. */
static inline void loop_charge(loop *l, size_t bytes) {
    loop_head *h = (loop_head *)l;
    h->spent += 1 + (uint32_t)(bytes >> LOOP_BUDGET_SHIFT);
    if (h->spent >= LOOP_BUDGET)
        loop_budget_yield(l);
}

/* Starts fn(arg) in a new task (ready at once). 0 or -ENOMEM. */
int loop_spawn(loop *l, coro_fn fn, void *arg);

/* Loop time in ms (cached per turn) and a fresh read of the clock. */
int64_t loop_now(const loop *l);
int64_t loop_clock_ms(void);

/* Runs the tasks that are ready, without polling for I/O (a driver that
 * has just woken tasks uses it to avoid a syscall) — unless a task yielded
 * since the last poll, or LOOP_BUDGET tasks ran through here since then:
 * then it is one whole step (tasks, a poll without waiting, timers), so a
 * driver that never runs out of ready work cannot starve I/O and timers.
 * Returns how many ran. Not from inside a task. */
int loop_run_pending(loop *l);
/* 1 if some task is ready to run. */
int loop_has_ready(const loop *l);

/* Counters, for tests and the worker watchdog. */
typedef struct loop_stats {
    uint64_t turns;     /* loop iterations so far */
    size_t tasks;       /* live tasks */
    size_t timers;      /* armed timers */
    size_t watches;     /* registered watches */
    size_t stacks_free; /* pooled coroutine stacks */
    size_t stacks_mapped;
} loop_stats;
void loop_get_stats(const loop *l, loop_stats *out);

/* The backend l runs on: "epoll" or "io_uring". */
const char *loop_backend_name(const loop *l);
/* Its ops and handle, for the loop's own files (loop_send.c). */
const backend_ops *loop_backend(const loop *l, void **be);

/* Keeps sp_loop_run going while something outside tasks/timers/watches is
 * pending (the thread pool's jobs). */
void loop_ref(loop *l);
void loop_unref(loop *l);

#endif
