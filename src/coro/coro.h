/* coro.h — stackful, asymmetric coroutines: stacks and context switches,
 * nothing else. A coroutine is resumed by whoever holds it and yields back
 * to that resumer. Stacks come from a pool (mmap'ed, optional guard page)
 * and are reused; knows nothing of loops, sockets or HTTP. */

/* Memory maps. Each guarded stack costs two memory mappings (the stack and
 * its PROT_NONE guard page), and the kernel's default vm.max_map_count is
 * 65530, so parked coroutines top out near 32,000 per process (minus what
 * the rest of the process maps). Raise it with
 *     sysctl vm.max_map_count=262144
 * or turn guard pages off (no_guard): adjacent unguarded anonymous mappings
 * merge into one, but an overflow then silently corrupts whatever lies
 * below instead of dying with a message.
 *
 * Overflow. A fault on the guard page, or up to 64 KiB below the stack (a
 * large frame can step over the guard), while a coroutine runs on this
 * thread prints "spindle: coroutine stack overflow (stack of N bytes); ..."
 * and kills the process with SIGSEGV. A frame larger than that reach can
 * land in another mapping undetected (-fstack-clash-protection prevents it).
 *
 * Threads. Coroutines are per thread: resume a coroutine only on the thread
 * that created it. The running coroutine is per-thread state (a
 * _Thread_local pointer), read by the fault handler. */
#ifndef SPINDLE_CORO_H
#define SPINDLE_CORO_H

#include <stddef.h>

typedef struct coro coro;
typedef struct coro_pool coro_pool;
typedef void (*coro_fn)(void *arg);

/* The context switch this build uses: "asm (x86_64)", "asm (aarch64)" or
 * "ucontext" (--version says it). */
extern const char coro_switch_name[];

typedef struct coro_pool_options {
    size_t stack_size; /* usable bytes, rounded up to whole pages; 0 = 64 KiB */
    int no_guard;      /* 1: no PROT_NONE guard page (one mapping less per stack) */
    size_t max_free;   /* finished stacks kept for reuse; 0 = 1024; above it they are unmapped */
} coro_pool_options;

/* Per thread that runs coroutines, once: installs the alternate signal stack
 * on which a guard-page fault is recognised as a stack overflow (the SIGSEGV
 * and SIGBUS handler itself is installed once per process; other faults are
 * passed on to the handler that was there before, or the default). Keeps an
 * alternate stack the thread already has; otherwise maps 64 KiB, never
 * freed. coro_pool_create and coro_create call it, so calling it yourself
 * only moves the cost and the failure earlier. Returns 0 or -errno. */
int coro_thread_init(void);

/* A pool of stacks. opt may be NULL for defaults. NULL with errno on failure. */
coro_pool *coro_pool_create(const coro_pool_options *opt);
/* Unmaps every pooled stack. All coroutines of the pool must have finished
 * or been destroyed (aborts otherwise: a live one would point into it). */
void coro_pool_destroy(coro_pool *p);

/* A new coroutine that will run fn(arg) when first resumed. Takes a stack
 * from the pool (maps one if none is free). NULL on failure (ENOMEM). */
coro *coro_create(coro_pool *p, coro_fn fn, void *arg);

/* Switches into c until it yields or fn returns. Returns 1 if c yielded (it
 * can be resumed again), 0 if fn returned: c is then gone (its stack is back
 * in the pool) and must not be used. Must not be called on a running coro. */
int coro_resume(coro *c);

/* From inside the running coroutine self: switches back to its resumer. */
void coro_yield(coro *self);

/* The coroutine running on this thread, or NULL on the thread's own stack. */
coro *coro_current(void);

/* Releases a suspended coroutine that will never be resumed (shutdown): its
 * stack goes back to the pool; frames on it are not unwound. */
void coro_destroy(coro *c);

/* Gives back to the kernel the pages of a suspended coroutine's stack that
 * lie wholly below where it waits (its saved stack pointer, less a small
 * margin), the guard page left as it is: what deeper calls touched before
 * costs no memory while c waits for long, and faults in again, zeroed, if
 * it goes that deep once more. Nothing below the stack pointer is live, so
 * c's state is unchanged. One madvise(MADV_DONTNEED): call it for a long
 * wait, never on every park. Returns the bytes released (0 when nothing
 * lies below, or with the ucontext switch, whose saved stack pointer this
 * does not read), or -errno. c must be suspended, not running. */
long coro_trim_stack(coro *c);

/* Counters for tests and stats. */
typedef struct coro_pool_stats {
    size_t live;   /* created and not finished */
    size_t free;   /* stacks kept for reuse */
    size_t mapped; /* stacks mapped in total (live + free) */
    size_t trims;  /* coro_trim_stack calls that released pages */
} coro_pool_stats;
void coro_pool_get_stats(const coro_pool *p, coro_pool_stats *out);

#endif
