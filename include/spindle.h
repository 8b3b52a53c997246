/* spindle.h — the public C API of spindle, a coroutine-based HTTP/1.1
 * server. Types are opaque; every function's contract is stated here: what
 * it returns, who owns what, and whether it may yield (park the calling
 * coroutine while the loop serves others). Errors are negative errno values. */
#ifndef SPINDLE_H
#define SPINDLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_API __attribute__((visibility("default")))

/* The API version a module is built against (--app modules declare it). */
#define SPINDLE_API_VERSION 1

/* ---- The loop: one per worker thread ------------------------------------
 * Each thread that serves runs one loop. Coroutines spawned on it run one at
 * a time; any function marked "yields" parks the calling coroutine and lets
 * the loop run others until what it waits for happens. */

typedef struct sp_loop sp_loop;

typedef struct sp_loop_options {
    size_t stack_size;      /* coroutine stack, bytes; 0 = 64 KiB */
    int no_guard_pages;     /* 1: stacks without guard pages (one mapping each
                               instead of two; see README "Limits") */
    int blocking_threads;   /* threads for sp_run_blocking; 0 = 4 */
} sp_loop_options;

/* Creates the calling thread's loop (opt may be NULL). The thread must not
 * already have one. Returns NULL with errno set on failure. */
SP_API sp_loop *sp_loop_new(const sp_loop_options *opt);

/* Destroys a loop created on this thread: stops its thread pool (waiting for
 * running blocking calls), releases parked coroutines without resuming them. */
SP_API void sp_loop_free(sp_loop *l);

/* Runs the calling thread's loop until sp_loop_stop() or until nothing is
 * left to do (no coroutine, timer or watched fd). Returns 0 or -errno. */
SP_API int sp_loop_run(sp_loop *l);

/* Asks sp_loop_run to return after the current turn. */
SP_API void sp_loop_stop(sp_loop *l);

/* One step of the calling thread's loop, so it can be driven from outside:
 * runs ready coroutines, waits up to timeout_ms (-1: until something
 * happens; 0: not at all) for I/O or a timer, runs what that woke. Returns
 * the number of coroutines resumed, or -errno. Not from inside a coroutine. */
SP_API int sp_poll(int timeout_ms);

/* Monotonic clock of the loop, in milliseconds (cached per loop turn). */
SP_API int64_t sp_now_ms(void);

/* Starts fn(arg) on a new coroutine of the calling thread's loop; it first
 * runs at the loop's next turn. Returns 0, or -ENOMEM (no stack could be
 * mapped) or -ENXIO (this thread has no loop). Does not yield. */
SP_API int sp_spawn(void (*fn)(void *arg), void *arg);

/* Parks the calling coroutine for ms milliseconds (yields). Returns 0, or
 * -ECONNRESET if the client of the coroutine's connection hung up meanwhile
 * (only for coroutines that serve a connection), or -EPERM outside a
 * coroutine. */
SP_API int sp_sleep(int64_t ms);

/* Lets every other ready coroutine run once, then continues (yields). A
 * coroutine that computes for a long stretch calls it now and then. */
SP_API void sp_yield(void);

/* Runs fn(arg) on the loop's small thread pool and parks the calling
 * coroutine until it returns (yields); for blocking C calls (a file read,
 * a C database client, getaddrinfo) that would otherwise stall the loop.
 * fn must not touch the loop. Returns fn's result, or -EPERM outside a
 * coroutine, or -EAGAIN if no thread could be started. */
SP_API int sp_run_blocking(int (*fn)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
