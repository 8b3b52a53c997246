/* blocking_pool.h — a small per-loop thread pool for calls that would block
 * the loop (sp_run_blocking). Jobs live on the parked caller's stack; a
 * finished job is handed back through a list and an eventfd the loop
 * watches. Knows nothing of coroutines: the loop wakes the waiter. */
#ifndef SPINDLE_BLOCKING_POOL_H
#define SPINDLE_BLOCKING_POOL_H

typedef struct blocking_job {
    int (*fn)(void *arg);
    void *arg;
    int result;
    void *waiter; /* the loop's task to wake; opaque here */
    struct blocking_job *next;
} blocking_job;

typedef struct blocking_pool blocking_pool;

/* A pool of at most max_threads threads, started on demand. *efd_out is an
 * eventfd that becomes readable when jobs are done. NULL, errno on failure. */
blocking_pool *blocking_pool_create(int max_threads, int *efd_out);
/* Queues job. 0, or -EAGAIN if no thread runs and none could be started. */
int blocking_pool_submit(blocking_pool *p, blocking_job *job);
/* Reads the eventfd and returns the finished jobs (a list), or NULL. */
blocking_job *blocking_pool_take_done(blocking_pool *p);
/* Lets queued and running jobs finish, joins the threads, frees the pool. */
void blocking_pool_destroy(blocking_pool *p);

#endif
