/* coro.c — stackful asymmetric coroutines: create, resume, yield, and the
 * pool of mmap'ed stacks they run on, with the sanitizer/valgrind notes a
 * stack switch needs. The register switch itself is in coro_switch_<arch>.S
 * (or ucontext with -DSP_CORO_UCONTEXT); overflow detection is coro_guard.c. */
#include "coro/coro.h"
#include "coro/coro_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef CORO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef SP_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

#define CORO_DEFAULT_STACK    (64 * 1024)
#define CORO_DEFAULT_MAX_FREE 1024

#ifdef SP_CORO_UCONTEXT
const char coro_switch_name[] = "ucontext";
#elif defined(__x86_64__)
const char coro_switch_name[] = "asm (x86_64)";
#else
const char coro_switch_name[] = "asm (aarch64)";
#endif

#ifndef SP_CORO_UCONTEXT
/* In coro_switch_<arch>.S. coro_switch_asm pushes the callee-saved state on
 * the current stack, stores the stack pointer in *save_sp and pops the other
 * side's state from load_sp. coro_trampoline_asm is where the first switch
 * into a new coroutine lands; it calls entry(c) from the initial frame. */
void coro_switch_asm(void **save_sp, void *load_sp);
void coro_trampoline_asm(void);
#endif

/* The coroutine running on this thread (NULL on the thread's own stack).
 * Per-thread state: each thread resumes only its own coroutines; the fault
 * handler in coro_guard.c reads it to know whose guard page was hit. */
_Thread_local coro *coro_running;

struct coro_pool {
    size_t stack_size; /* usable bytes, whole pages */
    size_t guard;      /* guard bytes below each stack: a page or 0 */
    size_t max_free;
    size_t live;
    size_t nfree;
    size_t trims;    /* coro_trim_stack calls that released pages */
    size_t page;     /* the page size, for coro_trim_stack */
    coro *free_list; /* finished stacks, each still owning its coro struct */
};

_Noreturn void coro_bug(const char *what) {
    fprintf(stderr, "spindle: coroutine invariant broken: %s\n", what);
    abort();
}

/* ---- stacks ------------------------------------------------------------ */

/* Maps c's stack: one mapping, whose lowest page becomes PROT_NONE (a
 * second mapping) unless the pool has no guard. Returns 0 or -errno. */
static int stack_map(const coro_pool *p, coro *c) {
    size_t len = p->guard + p->stack_size;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    if (p->guard && mprotect(m, p->guard, PROT_NONE) != 0) {
        int err = errno;
        if (munmap(m, len) != 0)
            coro_bug("munmap of a fresh stack failed");
        return -err;
    }
    c->map = m;
    c->map_size = len;
    c->stack_lo = m + p->guard;
    c->stack_size = p->stack_size;
#ifdef SP_HAVE_VALGRIND
    c->vg_id = VALGRIND_STACK_REGISTER(c->stack_lo, c->stack_lo + c->stack_size);
#endif
    return 0;
}

static void stack_unmap(coro *c) {
#ifdef SP_HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(c->vg_id);
#endif
    if (munmap(c->map, c->map_size) != 0)
        coro_bug("munmap of a coroutine stack failed");
}

/* c is done (finished or destroyed): its stack goes back to the pool, or
 * is unmapped when the pool already keeps max_free. */
static void coro_release(coro *c) {
    coro_pool *p = c->pool;
    p->live--;
#ifdef CORO_ASAN
    /* Frames abandoned on the stack (the entry frame, or a destroyed
     * coroutine's whole chain) leave poisoned redzones behind. */
    __asan_unpoison_memory_region(c->stack_lo, c->stack_size);
#endif
    if (p->nfree < p->max_free) {
        c->next_free = p->free_list;
        p->free_list = c;
        p->nfree++;
        return;
    }
    stack_unmap(c);
    free(c);
}

coro_pool *coro_pool_create(const coro_pool_options *opt) {
    int err = coro_thread_init();
    if (err) {
        errno = -err;
        return NULL;
    }
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    size_t size = opt && opt->stack_size ? opt->stack_size : CORO_DEFAULT_STACK;
    if (size > SIZE_MAX / 2) {
        errno = EINVAL;
        return NULL;
    }
    coro_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->stack_size = (size + page - 1) / page * page;
    p->guard = opt && opt->no_guard ? 0 : page;
    p->page = page;
    p->max_free = opt && opt->max_free ? opt->max_free : CORO_DEFAULT_MAX_FREE;
    return p;
}

void coro_pool_destroy(coro_pool *p) {
    if (!p)
        return;
    if (p->live)
        coro_bug("coro_pool_destroy with coroutines still alive");
    while (p->free_list) {
        coro *c = p->free_list;
        p->free_list = c->next_free;
        stack_unmap(c);
        free(c);
    }
    free(p);
}

void coro_pool_get_stats(const coro_pool *p, coro_pool_stats *out) {
    out->live = p->live;
    out->free = p->nfree;
    out->mapped = p->live + p->nfree;
    out->trims = p->trims;
}

/* Below the saved stack pointer nothing is live; the margin is for what
 * an ABI lets a suspended frame keep just under it (x86_64's red zone is
 * 128 bytes; the switch pushes its registers above the saved pointer). */
#define CORO_TRIM_MARGIN 512

long coro_trim_stack(coro *c) {
    if (c == coro_running || c->finished)
        coro_bug("coro_trim_stack of a running or finished coroutine");
#ifdef SP_CORO_UCONTEXT
    return 0;
#else
    uintptr_t lo = (uintptr_t)c->stack_lo, sp = (uintptr_t)c->sp;
    if (sp < lo + CORO_TRIM_MARGIN)
        return 0;
    uintptr_t end = (sp - CORO_TRIM_MARGIN) & ~(uintptr_t)(c->pool->page - 1);
    if (end <= lo)
        return 0;
    if (madvise((void *)lo, end - lo, MADV_DONTNEED) != 0)
        return -errno;
    c->pool->trims++;
    return (long)(end - lo);
#endif
}

/* ---- switching --------------------------------------------------------- */

/* ASan keeps one stack per thread in mind; around every switch it is told
 * which stack comes next (start_switch_fiber) and, once there, that the
 * switch is done (finish_switch_fiber, which also reports the stack we came
 * from, needed to switch back). A NULL fake-stack slot on the final exit
 * tells ASan the coroutine's fake frames can be released. */
#ifdef CORO_ASAN
#define ASAN_START(save, bottom, size)  __sanitizer_start_switch_fiber((save), (bottom), (size))
#define ASAN_FINISH(fake, bottom, size) __sanitizer_finish_switch_fiber((fake), (bottom), (size))
#else
#define ASAN_START(save, bottom, size)  ((void)0)
#define ASAN_FINISH(fake, bottom, size) ((void)0)
#endif

#ifdef SP_CORO_UCONTEXT
static void switch_in(coro *c) {
    if (swapcontext(&c->resumer_ctx, &c->ctx) != 0)
        coro_bug("swapcontext into a coroutine failed");
}
static void switch_out(coro *c) {
    if (swapcontext(&c->ctx, &c->resumer_ctx) != 0)
        coro_bug("swapcontext out of a coroutine failed");
}
#else
static inline void switch_in(coro *c) {
    coro_switch_asm(&c->resumer_sp, c->sp);
}
static inline void switch_out(coro *c) {
    coro_switch_asm(&c->sp, c->resumer_sp);
}
#endif

/* First code run on a new stack: runs fn(arg), marks c finished and leaves
 * for good; coro_resume on the other side releases the stack. */
_Noreturn static void coro_run(coro *c) {
    ASAN_FINISH(NULL, &c->resumer_bottom, &c->resumer_size);
    c->fn(c->arg);
    c->finished = 1;
    ASAN_START(NULL, c->resumer_bottom, c->resumer_size);
    switch_out(c);
    coro_bug("a finished coroutine was resumed");
}

#ifdef SP_CORO_UCONTEXT
/* makecontext passes only ints; the coroutine being started is the one
 * coro_resume just made current. */
static void coro_uc_entry(void) {
    coro_run(coro_running);
}

static int context_init(coro *c) {
    if (getcontext(&c->ctx) != 0)
        return -errno;
    c->ctx.uc_stack.ss_sp = c->stack_lo;
    c->ctx.uc_stack.ss_size = c->stack_size;
    c->ctx.uc_link = NULL;
    makecontext(&c->ctx, coro_uc_entry, 0);
    return 0;
}
#else
static void coro_asm_entry(void *c) {
    coro_run(c);
}

/* Builds the frame coro_switch_asm pops on the first switch into c: it
 * continues in coro_trampoline_asm with the stack pointer 16-byte aligned,
 * entry and c in callee-saved registers, and this thread's current FP
 * control state (so a coroutine starts with the creator's rounding mode). */
static int context_init(coro *c) {
    uintptr_t top = ((uintptr_t)c->stack_lo + c->stack_size) & ~(uintptr_t)15;
#if defined(__x86_64__)
    /* Lowest first: mxcsr + x87 cw, r15, r14, r13, r12, rbx, rbp, return. */
    uint64_t *f = (uint64_t *)top - 8;
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    f[0] = mxcsr | (uint64_t)fpucw << 32;
    f[1] = 0;
    f[2] = 0;
    f[3] = (uintptr_t)c;              /* r13: entry's argument */
    f[4] = (uintptr_t)coro_asm_entry; /* r12: called by the trampoline */
    f[5] = 0;
    f[6] = 0; /* rbp: ends frame-pointer walks */
    f[7] = (uintptr_t)coro_trampoline_asm;
#elif defined(__aarch64__)
    /* x19..x28, x29, x30, d8..d15, fpcr, padding: 22 slots, 176 bytes. */
    uint64_t *f = (uint64_t *)top - 22;
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    for (int i = 0; i < 22; i++)
        f[i] = 0;
    f[0] = (uintptr_t)coro_asm_entry; /* x19: called by the trampoline */
    f[1] = (uintptr_t)c;              /* x20: entry's argument */
    f[11] = (uintptr_t)coro_trampoline_asm;
    f[20] = fpcr;
#else
#error "no coroutine switch for this architecture: build with CORO=ucontext"
#endif
    c->sp = f;
    return 0;
}
#endif

coro *coro_create(coro_pool *p, coro_fn fn, void *arg) {
    int err = coro_thread_init();
    if (err) {
        errno = -err;
        return NULL;
    }
    coro *c = p->free_list;
    if (c) {
        p->free_list = c->next_free;
        p->nfree--;
    } else {
        c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        err = stack_map(p, c);
        if (err) {
            free(c);
            errno = -err;
            return NULL;
        }
        c->pool = p;
    }
    c->fn = fn;
    c->arg = arg;
    c->finished = 0;
    p->live++;
    err = context_init(c);
    if (err) {
        coro_release(c);
        errno = -err;
        return NULL;
    }
    return c;
}

int coro_resume(coro *c) {
    if (c == coro_running || c->finished)
        coro_bug("coro_resume of a running or finished coroutine");
    c->prev = coro_running;
    coro_running = c;
#ifdef CORO_ASAN
    void *fake = NULL;
#endif
    ASAN_START(&fake, c->stack_lo, c->stack_size);
    switch_in(c);
    ASAN_FINISH(fake, NULL, NULL);
    coro_running = c->prev;
    if (!c->finished)
        return 1;
    coro_release(c);
    return 0;
}

void coro_yield(coro *self) {
    ASAN_START(&self->asan_fake, self->resumer_bottom, self->resumer_size);
    switch_out(self);
    ASAN_FINISH(self->asan_fake, &self->resumer_bottom, &self->resumer_size);
}

coro *coro_current(void) {
    return coro_running;
}

void coro_destroy(coro *c) {
    if (c == coro_running || c->finished)
        coro_bug("coro_destroy of a running or finished coroutine");
    coro_release(c);
}
