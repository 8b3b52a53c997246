/* loop.c — the per-worker event loop: tasks (a coroutine each) on a ready
 * queue, parking on fds and deadlines, timers, fd callbacks, one step at a
 * time (sp_poll) or until stopped (sp_loop_run). One loop per thread; the
 * thread's loop is found through a thread-local pointer (per-worker state). */
#include "loop/loop.h"

#include "base/clock.h"
#include "base/list.h"
#include "loop/blocking_pool.h"
#include "loop/loop_int.h"
#include "loop/loop_choose.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Thread_local loop *tls_loop;

int64_t loop_clock_ms(void) {
    return clock_mono_ms();
}

int64_t loop_now(const loop *l) {
    return l->now;
}

loop *loop_current(void) {
    return tls_loop;
}

task *loop_task(loop *l) {
    return l->current;
}

void loop_ref(loop *l) {
    l->refs++;
}

void loop_unref(loop *l) {
    l->refs--;
}

void loop_task_set_hup_watch(task *t, loop_watch *w) {
    t->hup_watch = w;
}

loop_watch *loop_task_hup_watch(const task *t) {
    return t ? t->hup_watch : NULL;
}

void loop_task_set_park(task *t, loop_park_hook hook, void *arg, int trimmable) {
    t->park_hook = hook;
    t->park_arg = arg;
    t->trimmable = (uint8_t)(trimmable != 0);
}

int loop_long_wait_begin(loop *l) {
    task *t = l->current;
    if (!t || !t->park_hook)
        return 0;
    t->park_hook(t->park_arg, 1);
    return 1;
}

void loop_trim_when_parked(loop *l) {
    task *t = l->current;
    if (t)
        t->trim = t->trimmable; /* run_task trims once the task has parked */
}

void loop_long_wait_end(loop *l) {
    task *t = l->current;
    if (t)
        t->trim = 0;
    if (t && t->park_hook)
        t->park_hook(t->park_arg, 0);
}

/* ---- timers ---------------------------------------------------------- */

int loop_timer_arm(loop *l, loop_timer *t, int64_t when, loop_timer_cb cb, void *data) {
    if (t->heap_idx)
        timer_heap_remove(&l->timers, t);
    t->when = when;
    t->cb = cb;
    t->data = data;
    return timer_heap_push(&l->timers, t);
}

void loop_timer_cancel(loop *l, loop_timer *t) {
    if (t->heap_idx)
        timer_heap_remove(&l->timers, t);
}

/* Runs the timers that are due. Timers armed while this runs (a periodic
 * timer re-arming itself) wait for the next turn, so none can spin. */
static void run_timers(loop *l) {
    uint64_t limit = l->timers.next_seq;
    loop_timer *t;
    while ((t = timer_heap_top(&l->timers)) && t->when <= l->now && t->seq < limit) {
        timer_heap_remove(&l->timers, t);
        t->cb(l, t);
    }
}

/* ---- tasks ----------------------------------------------------------- */

static void enqueue(loop *l, task *t) {
    t->next = NULL;
    if (l->ready_tail)
        l->ready_tail->next = t;
    else
        l->ready_head = t;
    l->ready_tail = t;
}

void loop_wake(loop *l, task *t, int result) {
    if (!t->parked)
        return; /* already woken: the first wake wins */
    t->parked = 0;
    t->wake = result;
    enqueue(l, t);
}

static void task_main(void *arg) {
    task *t = arg;
    t->fn(t->arg);
}

static void task_release(loop *l, task *t) {
    list_remove(&l->all, &t->all_node);
    l->ntasks--;
    if (l->nfree_tasks >= TASKS_KEPT) {
        free(t);
        return;
    }
    t->next = l->free_tasks;
    l->free_tasks = t;
    l->nfree_tasks++;
}

int loop_spawn(loop *l, coro_fn fn, void *arg) {
    task *t = l->free_tasks;
    if (t) {
        l->free_tasks = t->next;
        l->nfree_tasks--;
    } else {
        t = malloc(sizeof *t);
        if (!t)
            return -ENOMEM;
    }
    *t = (task){.fn = fn, .arg = arg};
    t->co = coro_create(l->stacks, task_main, t);
    if (!t->co) {
        t->next = l->free_tasks;
        l->free_tasks = t;
        l->nfree_tasks++;
        return -ENOMEM;
    }
    list_push_front(&l->all, &t->all_node);
    l->ntasks++;
    enqueue(l, t);
    return 0;
}

static void run_task(loop *l, task *t) {
    l->current = t;
    l->head.spent = 0; /* a fresh budget each time a task is resumed */
    int alive = coro_resume(t->co);
    l->current = NULL;
    if (!alive) {
        task_release(l, t);
    } else if (t->trim) {
        t->trim = 0; /* parked for a long wait: what lies below costs nothing */
        if (t->parked)
            (void)coro_trim_stack(t->co);
    }
}

/* Runs the tasks that are ready now; tasks made ready meanwhile (sp_yield)
 * wait for the next pass, so I/O is polled between passes. */
static int run_ready(loop *l) {
    task *last = l->ready_tail;
    int n = 0;
    while (l->ready_head) {
        task *t = l->ready_head;
        l->ready_head = t->next;
        if (!l->ready_head)
            l->ready_tail = NULL;
        int was_last = t == last;
        run_task(l, t);
        n++;
        if (was_last)
            break;
    }
    return n;
}

/* Switches from the running task back to the loop until woken. */
static int park_current(loop *l, task *t) {
    t->parked = 1;
    coro_yield(t->co);
    return t->wake;
}

static void park_timeout(loop *l, loop_timer *tm) {
    loop_wake(l, tm->data, -ETIMEDOUT);
}

int loop_park(loop *l, int64_t deadline_ms, loop_watch *hup) {
    task *t = l->current;
    if (!t)
        return -EAGAIN;
    if (hup && hup->lazy && loop_watch_ensure(l, hup) < 0)
        hup = NULL; /* cannot watch it: the park just is not interrupted */
    if (hup && (hup->hup & (LOOP_HUP | LOOP_RDHUP)))
        return -ECONNRESET;
    loop_timer tm = {0};
    if (deadline_ms != LOOP_NO_DEADLINE && loop_timer_arm(l, &tm, deadline_ms, park_timeout, t))
        return -ENOMEM;
    if (hup)
        hup->hup_waiter = t;
    int rc = park_current(l, t);
    loop_timer_cancel(l, &tm);
    if (hup && hup->hup_waiter == t)
        hup->hup_waiter = NULL;
    return rc;
}

int loop_wait_fd(loop *l, loop_watch *w, uint32_t dir, int64_t deadline_ms) {
    task *t = l->current;
    if (!t)
        return -EAGAIN;
    if (!w->registered) {
        int rc = loop_watch_ensure(l, w);
        if (rc < 0)
            return rc;
    }
    if (w->hup & LOOP_HUP)
        return LOOP_HUP; /* the caller's next syscall reports the error */
    task **slot = dir == LOOP_WRITE ? &w->writer : &w->reader;
    loop_timer tm = {0};
    if (deadline_ms != LOOP_NO_DEADLINE && loop_timer_arm(l, &tm, deadline_ms, park_timeout, t))
        return -ENOMEM;
    *slot = t;
    int rc = park_current(l, t);
    loop_timer_cancel(l, &tm);
    if (*slot == t)
        *slot = NULL;
    return rc;
}

/* ---- readiness ----------------------------------------------------- */

/* Hands one readiness report to whoever waits on w. cb may free w, so
 * nothing touches w after it. */
static void dispatch(loop *l, loop_watch *w, uint32_t ev) {
    w->hup |= ev & (LOOP_RDHUP | LOOP_HUP);
    uint32_t rest = ev;
    if (w->reader && (ev & (LOOP_READ | LOOP_RDHUP | LOOP_HUP))) {
        loop_wake(l, w->reader, (int)ev);
        w->reader = NULL;
        rest &= ~(uint32_t)(LOOP_READ | LOOP_RDHUP | LOOP_HUP);
    }
    if (w->writer && (ev & (LOOP_WRITE | LOOP_HUP))) {
        loop_wake(l, w->writer, (int)ev);
        w->writer = NULL;
        rest &= ~(uint32_t)(LOOP_WRITE | LOOP_HUP);
    }
    if (w->hup_waiter && (ev & (LOOP_RDHUP | LOOP_HUP))) {
        loop_wake(l, w->hup_waiter, -ECONNRESET);
        w->hup_waiter = NULL;
    }
    if (rest && w->cb)
        w->cb(l, w, rest);
}

void loop_watch_init_virtual(loop_watch *w) {
    *w = (loop_watch){.fd = -1};
}

void loop_watch_hang_up(loop *l, loop_watch *w) {
    dispatch(l, w, LOOP_HUP);
}

/* ---- the loop ---------------------------------------------------------- */

static int has_work(const loop *l) {
    return l->ntasks || l->timers.n || l->nwatches || l->refs;
}

static int loop_step(loop *l, int timeout_ms) {
    /* Deadlines computed by tasks are loop_now() + timeout: keep the cached
     * time at most one pass old. */
    l->now = loop_clock_ms();
    /* Tasks woken since the last pass run now, before the poll — unless one
     * yielded: it waits behind a poll, so each of its turns lets I/O and
     * timers in (a task that yields forever cannot starve them). */
    int ran = l->yielded ? 0 : run_ready(l);
    int timeout = timeout_ms;
    /* Having run tasks, or with nothing left to wait for, only look. */
    if (ran || l->ready_head || l->stop || !has_work(l)) {
        timeout = 0;
    } else {
        loop_timer *t = timer_heap_top(&l->timers);
        if (t) {
            int64_t d = t->when - loop_clock_ms();
            if (d < 0)
                d = 0;
            if (timeout < 0 || d < timeout)
                timeout = (int)(d > 86400000 ? 86400000 : d);
        }
    }
    l->yielded = 0;
    l->unpolled = 0;
    int n = l->ops->wait(l->be, l->events, LOOP_MAX_EVENTS, timeout);
    l->now = loop_clock_ms();
    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        if (l->events[i].events & LOOP_OP_DONE)
            loop_wake(l, ((backend_op *)l->events[i].data)->waiter, 0);
        else
            dispatch(l, l->events[i].data, l->events[i].events);
    }
    run_timers(l);
    ran += run_ready(l);
    l->turns++;
    return ran;
}

int loop_run_pending(loop *l) {
    if (l->current)
        return -EPERM;
    /* A yielder waits behind one poll; so does a driver that keeps waking
     * tasks (a WSGI app and its coroutine handing each other a fast
     * upload's pieces) once it has run a budget's worth of them. */
    if (l->yielded || l->unpolled >= LOOP_BUDGET)
        return loop_step(l, 0);
    int n = run_ready(l);
    l->unpolled += (uint32_t)n;
    return n;
}

int loop_has_ready(const loop *l) {
    return l->ready_head != NULL;
}

int sp_poll(int timeout_ms) {
    loop *l = tls_loop;
    if (!l)
        return -ENXIO;
    if (l->current)
        return -EPERM;
    return loop_step(l, timeout_ms);
}

int sp_loop_run(loop *l) {
    if (l != tls_loop)
        return -EPERM;
    l->stop = 0;
    while (!l->stop && has_work(l)) {
        int rc = loop_step(l, -1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void sp_loop_stop(loop *l) {
    l->stop = 1;
}

int64_t sp_now_ms(void) {
    return tls_loop ? tls_loop->now : loop_clock_ms();
}

sp_loop *sp_loop_new(const sp_loop_options *opt) {
    if (tls_loop) {
        errno = EBUSY;
        return NULL;
    }
    sp_loop_options o = opt ? *opt : (sp_loop_options){0};
    loop *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    int rc = coro_thread_init();
    if (rc < 0) {
        errno = -rc;
        goto fail_free;
    }
    /* Writes to a closed peer must fail with EPIPE, not kill the worker. */
    signal(SIGPIPE, SIG_IGN);
    coro_pool_options po = {.stack_size = o.stack_size, .no_guard = o.no_guard_pages};
    l->stacks = coro_pool_create(&po);
    if (!l->stacks)
        goto fail_free;
    l->ops = backend_open_chosen(&l->be);
    if (!l->ops)
        goto fail_stacks; /* errno says why */
    l->pool_threads = o.blocking_threads > 0 ? o.blocking_threads : 4;
    l->now = loop_clock_ms();
    tls_loop = l;
    return l;
fail_stacks:
    coro_pool_destroy(l->stacks);
fail_free:
    free(l);
    return NULL;
}

void sp_loop_free(loop *l) {
    if (!l)
        return;
    /* Jobs write into structs on parked coroutines' stacks: finish them
     * before any stack goes away. */
    blocking_pool_destroy(l->pool);
    /* Queued sends read parked tasks' stacks: the ring goes first. */
    l->ops->free(l->be);
    list_node *n;
    while ((n = list_pop_front(&l->all))) {
        task *t = container_of(n, task, all_node);
        coro_destroy(t->co);
        free(t);
    }
    while (l->free_tasks) {
        task *t = l->free_tasks;
        l->free_tasks = t->next;
        free(t);
    }
    timer_heap_free(&l->timers);
    coro_pool_destroy(l->stacks);
    if (tls_loop == l)
        tls_loop = NULL;
    free(l);
}

/* ---- coroutine-facing API ----------------------------------------------- */

int sp_spawn(void (*fn)(void *arg), void *arg) {
    loop *l = tls_loop;
    if (!l)
        return -ENXIO;
    return loop_spawn(l, fn, arg);
}

int sp_sleep(int64_t ms) {
    loop *l = tls_loop;
    if (!l || !l->current)
        return -EPERM;
    int64_t deadline = loop_clock_ms() + (ms > 0 ? ms : 0);
    int rc = loop_park(l, deadline, l->current->hup_watch);
    return rc == -ETIMEDOUT ? 0 : rc;
}

void sp_yield(void) {
    loop *l = tls_loop;
    if (!l || !l->current)
        return;
    task *t = l->current;
    t->parked = 1;
    loop_wake(l, t, 0);
    l->yielded = 1;
    coro_yield(t->co);
}

void loop_budget_yield(loop *l) {
    l->head.spent = 0;
    if (l->current)
        sp_yield();
}

static void pool_done(loop *l, loop_watch *w, uint32_t events) {
    for (blocking_job *j = blocking_pool_take_done(l->pool); j;) {
        blocking_job *next = j->next;
        loop_unref(l);
        loop_wake(l, j->waiter, 0);
        j = next;
    }
}

int sp_run_blocking(int (*fn)(void *arg), void *arg) {
    loop *l = tls_loop;
    if (!l || !l->current)
        return -EPERM;
    if (!l->pool) {
        int efd;
        l->pool = blocking_pool_create(l->pool_threads, &efd);
        if (!l->pool)
            return -EAGAIN;
        l->pool_watch = (loop_watch){.fd = efd, .cb = pool_done};
        int rc = l->ops->add(l->be, efd, BACKEND_READ_LEVEL, &l->pool_watch);
        if (rc < 0) {
            blocking_pool_destroy(l->pool);
            l->pool = NULL;
            return rc;
        }
        /* Not counted in nwatches: an idle pool keeps no loop running. */
        l->pool_watch.registered = 1;
    }
    blocking_job job = {.fn = fn, .arg = arg, .waiter = l->current};
    int rc = blocking_pool_submit(l->pool, &job);
    if (rc < 0)
        return rc;
    loop_ref(l);
    park_current(l, l->current);
    return job.result;
}

const backend_ops *loop_backend(const loop *l, void **be) {
    *be = l->be;
    return l->ops;
}

void loop_get_stats(const loop *l, loop_stats *out) {
    coro_pool_stats cs;
    coro_pool_get_stats(l->stacks, &cs);
    *out = (loop_stats){.turns = l->turns,
                        .tasks = l->ntasks,
                        .timers = l->timers.n,
                        .watches = l->nwatches,
                        .stacks_free = cs.free,
                        .stacks_mapped = cs.mapped};
}
