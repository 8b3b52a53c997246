/* loop_int.h — the loop's own structs (a task, the loop), shared by the
 * files that make up the loop (loop.c, loop_watch.c) and by no one else:
 * everything outside goes through loop.h. */
#ifndef SPINDLE_LOOP_INT_H
#define SPINDLE_LOOP_INT_H

#include "base/list.h"
#include "loop/blocking_pool.h"
#include "loop/loop.h"

#define LOOP_MAX_EVENTS 256
#define TASKS_KEPT      4096 /* free task structs kept above this are freed */

struct task {
    coro *co;
    coro_fn fn;
    void *arg;
    task *next;               /* ready queue, or the free list */
    list_node all_node;       /* in the loop's every live task, for sp_loop_free */
    loop_watch *hup_watch;    /* the connection this task serves, if any */
    loop_park_hook park_hook; /* loop_long_wait_begin/_end call it */
    void *park_arg;
    int wake;          /* value handed over by loop_wake */
    uint8_t parked;    /* waiting: loop_wake may make it ready */
    uint8_t trimmable; /* its stack below the stack pointer is dead while it waits */
    uint8_t trim;      /* trim its stack once it has parked (a long wait) */
};

struct sp_loop {
    loop_head head; /* first: loop_charge reads it through loop.h */
    int64_t now;
    const backend_ops *ops; /* epoll or io_uring, chosen at sp_loop_new */
    void *be;
    int stop;
    int yielded;       /* a task yielded since the last poll */
    uint32_t unpolled; /* tasks loop_run_pending ran since the last poll */
    task *current;
    task *ready_head, *ready_tail;
    list_head all; /* every live task */
    task *free_tasks;
    size_t ntasks, nfree_tasks, nwatches, refs;
    uint64_t turns;
    timer_heap timers;
    coro_pool *stacks;
    blocking_pool *pool;
    int pool_threads;
    loop_watch pool_watch;
    backend_event events[LOOP_MAX_EVENTS];
};

#endif
