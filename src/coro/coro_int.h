/* coro_int.h — what coro.c and coro_guard.c share and nobody else sees: the
 * coroutine struct, the per-thread running pointer and the sanitizer switch.
 * Not part of coro.h's interface. */
#ifndef SPINDLE_CORO_INT_H
#define SPINDLE_CORO_INT_H

#include "coro/coro.h"

#ifdef SP_CORO_UCONTEXT
#include <ucontext.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#endif

struct coro {
#ifdef SP_CORO_UCONTEXT
    ucontext_t ctx;         /* c's own context while it is suspended */
    ucontext_t resumer_ctx; /* the resumer's while c runs */
#else
    void *sp;         /* c's saved stack pointer while it is suspended */
    void *resumer_sp; /* the resumer's while c runs */
#endif
    coro_fn fn;
    void *arg;
    coro *prev; /* what ran on this thread before c was resumed */
    coro_pool *pool;
    coro *next_free; /* link in the pool's free list */
    char *map;       /* the whole mapping, guard page included */
    size_t map_size;
    char *stack_lo; /* lowest usable byte; the guard page lies just below */
    size_t stack_size;
    int finished;
#ifdef SP_HAVE_VALGRIND
    unsigned vg_id;
#endif
#ifdef CORO_ASAN
    void *asan_fake; /* c's fake stack while it is suspended */
    const void *resumer_bottom;
    size_t resumer_size;
#endif
};

/* Per-thread: the coroutine running on this thread, NULL on its own stack. */
extern _Thread_local coro *coro_running;

/* A broken invariant (misuse of the API, munmap failing): message, abort. */
_Noreturn void coro_bug(const char *what);

#endif
