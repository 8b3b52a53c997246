/* test_coro.c — unit tests for coro.c: switching and argument passing,
 * preserved registers and FP control state, nesting, stack pooling and
 * reuse, destroy, no-guard mode, and the stack-overflow death. */
#include "coro/coro.h"
#include "unit.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#endif

#ifdef TEST_ASAN
/* ASan ignores sigaction(SIGSEGV) unless allowed; the runner sets this in
 * ASAN_OPTIONS too, this keeps the binary right when run by hand. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allow_user_segv_handler=1";
}
#endif

static coro_pool *new_pool(size_t stack_size, int no_guard, size_t max_free) {
    coro_pool_options o = {.stack_size = stack_size, .no_guard = no_guard, .max_free = max_free};
    coro_pool *p = coro_pool_create(&o);
    CHECK(p != NULL);
    return p;
}

/* ---- switching and arguments ------------------------------------------- */

typedef struct counter {
    coro *self;
    long value;
    long seen[8];
} counter;

static void count_up(void *arg) {
    counter *k = arg;
    for (long i = 0; i < 5; i++) {
        long local = i * 100 + 7; /* lives on the coroutine stack */
        k->value = i;
        coro_yield(k->self);
        k->seen[i] = local + k->value;
    }
}

TEST(resume_yield_passes_values) {
    coro_pool *p = new_pool(0, 0, 0);
    counter k = {0};
    k.self = coro_create(p, count_up, &k);
    CHECK(k.self != NULL);
    for (long i = 0; i < 5; i++) {
        CHECK_EQ(coro_resume(k.self), 1);
        CHECK_EQ(k.value, i);
        k.value = 1000 + i; /* read by the coroutine after the yield */
    }
    CHECK_EQ(coro_resume(k.self), 0);
    for (long i = 0; i < 5; i++)
        CHECK_EQ(k.seen[i], i * 100 + 7 + 1000 + i);
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.free, 1);
    coro_pool_destroy(p);
}

static void run_once(void *arg) {
    *(int *)arg += 1;
}

TEST(finishes_without_yielding) {
    coro_pool *p = new_pool(0, 0, 0);
    int ran = 0;
    coro *c = coro_create(p, run_once, &ran);
    CHECK(c != NULL);
    CHECK_EQ(ran, 0); /* created, not started */
    CHECK_EQ(coro_resume(c), 0);
    CHECK_EQ(ran, 1);
    coro_pool_destroy(p);
}

/* ---- registers and FP state -------------------------------------------- */

/* Puts junk in the callee-saved registers (the compiler saves its own
 * values around it); a switch that failed to restore them shows up as
 * corrupted live values on the other side. */
#if defined(__x86_64__)
#define CLOBBER_CALLEE_SAVED()                                                                     \
    __asm__ volatile("movq $-1, %%rbx\n\tmovq $-1, %%r12\n\tmovq $-1, %%r13\n\t"                   \
                     "movq $-1, %%r14\n\tmovq $-1, %%r15" ::                                       \
                         : "rbx", "r12", "r13", "r14", "r15")
#elif defined(__aarch64__)
#define CLOBBER_CALLEE_SAVED()                                                                     \
    __asm__ volatile("mov x19, #-1\n\tmov x20, #-1\n\tmov x21, #-1\n\tmov x22, #-1\n\t"            \
                     "mov x23, #-1\n\tmov x24, #-1\n\tmov x25, #-1\n\tmov x26, #-1\n\t"            \
                     "mov x27, #-1\n\tmov x28, #-1\n\tfmov d8, #-1.0\n\tfmov d9, #-1.0\n\t"        \
                     "fmov d10, #-1.0\n\tfmov d11, #-1.0\n\tfmov d12, #-1.0\n\t"                   \
                     "fmov d13, #-1.0\n\tfmov d14, #-1.0\n\tfmov d15, #-1.0" ::                    \
                         : "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",   \
                           "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15")
#else
#define CLOBBER_CALLEE_SAVED() ((void)0)
#endif

/* Clobbers, then yields: the resumer's live values must survive. */
static void clobber_and_yield(coro *self) {
    CLOBBER_CALLEE_SAVED();
    coro_yield(self);
}

static void clobber_loop(void *arg) {
    coro **self = arg;
    for (int i = 0; i < 100; i++)
        clobber_and_yield(*self);
}

/* The coroutine keeps many values live across yields (in callee-saved
 * registers) while the resumer clobbers those registers in between. */
static void keep_values(void *arg) {
    coro **self = arg;
    volatile long seed_v = 3;
    long seed = seed_v;
    long a = seed, b = seed * 2, c = seed * 3, d = seed * 5, e = seed * 7, f = seed * 11;
    double x = (double)seed / 3.0, y = x * 1.5;
    for (int i = 0; i < 100; i++) {
        coro_yield(*self);
        a += 1, b += 2, c += 3, d += 5, e += 7, f += 11;
        x += 1.0, y += 0.5;
    }
    CHECK_EQ(a, seed + 100);
    CHECK_EQ(b, seed * 2 + 200);
    CHECK_EQ(c, seed * 3 + 300);
    CHECK_EQ(d, seed * 5 + 500);
    CHECK_EQ(e, seed * 7 + 700);
    CHECK_EQ(f, seed * 11 + 1100);
    CHECK(x == 101.0 && y == 51.5);
}

static void resume_with_clobber(coro *c) {
    CLOBBER_CALLEE_SAVED();
    coro_resume(c);
}

TEST(callee_saved_registers_survive) {
    coro_pool *p = new_pool(0, 0, 0);
    /* Resumer side: live values across coro_resume, coroutine clobbers. */
    coro *c = NULL;
    c = coro_create(p, clobber_loop, &c);
    CHECK(c != NULL);
    volatile long seed_v = 5;
    long seed = seed_v;
    long a = seed, b = seed * 2, d = seed * 3, e = seed * 5, f = seed * 7, g = seed * 11;
    double x = (double)seed, y = x * 2.0;
    int n = 0;
    while (coro_resume(c)) {
        a += 1, b += 2, d += 3, e += 5, f += 7, g += 11;
        x += 1.0, y += 2.0;
        n++;
    }
    CHECK_EQ(n, 100);
    CHECK_EQ(a, seed + 100);
    CHECK_EQ(b, seed * 2 + 200);
    CHECK_EQ(d, seed * 3 + 300);
    CHECK_EQ(e, seed * 5 + 500);
    CHECK_EQ(f, seed * 7 + 700);
    CHECK_EQ(g, seed * 11 + 1100);
    CHECK(x == seed + 100.0 && y == seed * 2.0 + 200.0);

    /* Coroutine side: it keeps live values, the resumer clobbers. */
    coro *k = NULL;
    k = coro_create(p, keep_values, &k);
    CHECK(k != NULL);
    for (int i = 0; i <= 100; i++)
        resume_with_clobber(k);
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.live, 0); /* keep_values returned after its checks */
    coro_pool_destroy(p);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The FP control state a call preserves: on x86-64 the MXCSR control bits
 * and the x87 control word, on AArch64 the FPCR. */
typedef struct fp_ctl {
    uint32_t a; /* mxcsr / fpcr */
    uint16_t b; /* x87 control word; 0 on aarch64 */
} fp_ctl;

static fp_ctl fp_get(void) {
    fp_ctl s = {0, 0};
#if defined(__x86_64__)
    __asm__ volatile("stmxcsr %0" : "=m"(s.a));
    __asm__ volatile("fnstcw %0" : "=m"(s.b));
#else
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    s.a = (uint32_t)v;
#endif
    return s;
}

static void fp_set(fp_ctl s) {
#if defined(__x86_64__)
    __asm__ volatile("ldmxcsr %0" ::"m"(s.a));
    __asm__ volatile("fldcw %0" ::"m"(s.b));
#else
    uint64_t v = s.a;
    __asm__ volatile("msr fpcr, %0" ::"r"(v));
#endif
}

/* Rounding toward zero in every control field we have. */
static fp_ctl fp_round_to_zero(fp_ctl s) {
#if defined(__x86_64__)
    s.a |= 3u << 13; /* MXCSR.RC */
    s.b |= 3u << 10; /* x87 CW.RC */
#else
    s.a |= 3u << 22; /* FPCR.RMode */
#endif
    return s;
}

static void fp_coroutine(void *arg) {
    fp_ctl *out = arg;
    coro *self = coro_current();
    fp_ctl mine = fp_round_to_zero(fp_get());
    fp_set(mine);
    coro_yield(self);
    out[0] = fp_get(); /* must still be ours after the resumer ran */
    fp_set(mine);
}

TEST(fp_control_state_is_per_context) {
    coro_pool *p = new_pool(0, 0, 0);
    fp_ctl out[1];
    fp_ctl before = fp_get();
    coro *c = coro_create(p, fp_coroutine, out);
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 1);
    fp_ctl after = fp_get();
    CHECK_EQ(after.a, before.a);
    CHECK_EQ(after.b, before.b);
    CHECK_EQ(coro_resume(c), 0);
    fp_ctl expect = fp_round_to_zero(before);
    CHECK_EQ(out[0].a, expect.a);
    CHECK_EQ(out[0].b, expect.b);
    after = fp_get();
    CHECK_EQ(after.a, before.a);
    CHECK_EQ(after.b, before.b);
    coro_pool_destroy(p);
}
#endif

/* A coroutine's stack pointer at entry must be ABI-aligned: 16 bytes. */
static void check_alignment(void *arg) {
    _Alignas(16) volatile char probe[16];
    *(uintptr_t *)arg = (uintptr_t)probe;
    /* -mstackrealign would hide a misaligned entry; SSE stores would fault. */
    volatile long double ld = 1.0L;
    ld *= 2.0L;
    CHECK(ld == 2.0L);
}

TEST(entry_stack_is_aligned) {
    coro_pool *p = new_pool(0, 0, 0);
    uintptr_t addr = 1;
    coro *c = coro_create(p, check_alignment, &addr);
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 0);
    CHECK_EQ(addr % 16, 0);
    coro_pool_destroy(p);
}

/* ---- nesting and coro_current ------------------------------------------ */

typedef struct nest {
    coro_pool *pool;
    coro *outer, *inner;
    char log[32];
    int n;
    int current_ok;
} nest;

static void inner_fn(void *arg) {
    nest *t = arg;
    t->current_ok += coro_current() == t->inner;
    t->log[t->n++] = 'i';
    coro_yield(t->inner);
    t->current_ok += coro_current() == t->inner;
    t->log[t->n++] = 'j';
}

static void outer_fn(void *arg) {
    nest *t = arg;
    t->current_ok += coro_current() == t->outer;
    t->log[t->n++] = 'o';
    t->inner = coro_create(t->pool, inner_fn, t);
    CHECK(t->inner != NULL);
    CHECK_EQ(coro_resume(t->inner), 1);
    t->current_ok += coro_current() == t->outer;
    t->log[t->n++] = 'p';
    coro_yield(t->outer); /* to main, with inner still suspended */
    t->log[t->n++] = 'q';
    CHECK_EQ(coro_resume(t->inner), 0);
    t->current_ok += coro_current() == t->outer;
    t->log[t->n++] = 'r';
}

TEST(nested_resume_and_current) {
    nest t = {0};
    t.pool = new_pool(0, 0, 0);
    CHECK(coro_current() == NULL);
    t.outer = coro_create(t.pool, outer_fn, &t);
    CHECK(t.outer != NULL);
    CHECK_EQ(coro_resume(t.outer), 1);
    CHECK(coro_current() == NULL);
    t.log[t.n++] = 'M';
    CHECK_EQ(coro_resume(t.outer), 0);
    CHECK(coro_current() == NULL);
    t.log[t.n] = '\0';
    CHECK_STR(t.log, "oipMqjr");
    CHECK_EQ(t.current_ok, 5);
    coro_pool_stats s;
    coro_pool_get_stats(t.pool, &s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.free, 2);
    coro_pool_destroy(t.pool);
}

/* ---- pooling ----------------------------------------------------------- */

static void yield_once(void *arg) {
    coro *self = coro_current();
    /* Touch some stack so reused stacks are really written. */
    volatile char buf[2048];
    buf[0] = (char)(uintptr_t)arg;
    buf[sizeof buf - 1] = buf[0];
    coro_yield(self);
    CHECK_EQ(buf[sizeof buf - 1], (char)(uintptr_t)arg);
}

TEST_T(thousands_run_and_reuse_stacks, 30) {
    enum { N = 3000 };
    coro_pool *p = new_pool(16 * 1024, 0, N);
    static coro *cs[N];
    for (int round = 0; round < 3; round++) {
        for (uintptr_t i = 0; i < N; i++) {
            cs[i] = coro_create(p, yield_once, (void *)i);
            CHECK(cs[i] != NULL);
        }
        coro_pool_stats s;
        coro_pool_get_stats(p, &s);
        CHECK_EQ(s.live, N);
        CHECK_EQ(s.free, 0);
        for (int i = 0; i < N; i++)
            CHECK_EQ(coro_resume(cs[i]), 1);
        for (int i = N - 1; i >= 0; i--)
            CHECK_EQ(coro_resume(cs[i]), 0);
        coro_pool_get_stats(p, &s);
        CHECK_EQ(s.live, 0);
        CHECK_EQ(s.free, N);
        CHECK_EQ(s.mapped, N); /* rounds 2 and 3 mapped nothing new */
    }
    /* One at a time: always the same stack. */
    coro *first = NULL;
    for (int i = 0; i < 10000; i++) {
        coro *c = coro_create(p, yield_once, NULL);
        CHECK(c != NULL);
        if (!first)
            first = c;
        CHECK(c == first); /* LIFO reuse: cache-warm stack */
        CHECK_EQ(coro_resume(c), 1);
        CHECK_EQ(coro_resume(c), 0);
    }
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.mapped, N);
    coro_pool_destroy(p);
}

TEST(max_free_is_respected) {
    coro_pool *p = new_pool(0, 0, 4);
    coro *cs[10];
    for (int i = 0; i < 10; i++) {
        cs[i] = coro_create(p, yield_once, NULL);
        CHECK(cs[i] != NULL);
        CHECK_EQ(coro_resume(cs[i]), 1);
    }
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.live, 10);
    CHECK_EQ(s.mapped, 10);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(coro_resume(cs[i]), 0);
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.free, 4);
    CHECK_EQ(s.mapped, 4);
    coro_pool_destroy(p);
}

TEST(destroy_suspended_returns_stack) {
    coro_pool *p = new_pool(0, 0, 0);
    coro *c = coro_create(p, yield_once, NULL);
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 1);
    coro_destroy(c);
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.free, 1);
    /* The stack is reused and runs cleanly from the top again. */
    int ran = 0;
    coro *d = coro_create(p, run_once, &ran);
    CHECK(d != NULL);
    CHECK_EQ(coro_resume(d), 0);
    CHECK_EQ(ran, 1);
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.mapped, 1);
    /* A never-started coroutine can be destroyed too. */
    coro_destroy(coro_create(p, run_once, &ran));
    CHECK_EQ(ran, 1);
    coro_pool_destroy(p);
}

/* Lines in /proc/self/maps: one per mapping. */
static long count_mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    long n = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static void fill_stack(void *arg) {
    /* Use most of a 16 KiB stack: no guard page does not mean less room. */
    volatile char buf[12 * 1024];
    for (size_t i = 0; i < sizeof buf; i += 512)
        buf[i] = 1;
    coro_yield(coro_current());
    *(int *)arg += buf[0];
}

TEST(guard_costs_a_mapping_and_no_guard_does_not) {
    enum { N = 64 };
    coro *cs[N];
    int sum = 0;
    for (int no_guard = 0; no_guard <= 1; no_guard++) {
        coro_pool *p = new_pool(16 * 1024, no_guard, 0);
        long before = count_mappings();
        for (int i = 0; i < N; i++) {
            cs[i] = coro_create(p, fill_stack, &sum);
            CHECK(cs[i] != NULL);
            CHECK_EQ(coro_resume(cs[i]), 1);
        }
        long grown = count_mappings() - before;
        if (no_guard)
            CHECK(grown <= N); /* at most one each; adjacent ones merge */
        else
            CHECK(grown >= 2 * N - 2); /* guard + stack each (allocator noise aside) */
        for (int i = 0; i < N; i++)
            CHECK_EQ(coro_resume(cs[i]), 0);
        coro_pool_destroy(p);
    }
    CHECK_EQ(sum, 2 * N);
}

/* ---- threads ----------------------------------------------------------- */

static void *thread_body(void *arg) {
    CHECK_EQ(coro_thread_init(), 0);
    coro_pool *p = new_pool(0, 0, 0);
    long total = 0;
    for (int i = 0; i < 1000; i++) {
        counter k = {0};
        k.self = coro_create(p, count_up, &k);
        CHECK(k.self != NULL);
        while (coro_resume(k.self)) {
            CHECK(coro_current() == NULL);
            total += k.value;
        }
    }
    coro_pool_destroy(p);
    *(long *)arg = total;
    return NULL;
}

TEST(threads_run_their_own_coroutines) {
    pthread_t t[2];
    long totals[2] = {0, 0};
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, thread_body, &totals[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(totals[0], 1000 * (0 + 1 + 2 + 3 + 4));
    CHECK_EQ(totals[1], totals[0]);
}

/* ---- overflow ---------------------------------------------------------- */

/* Far deeper than any stack here; volatile so the compiler cannot see the
 * recursion is endless (or turn it into a loop). */
static volatile int recurse_limit = 1 << 30;

static int recurse(int depth) {
    volatile char frame[512];
    if (depth > recurse_limit)
        return 0;
    frame[0] = (char)depth;
    frame[sizeof frame - 1] = (char)depth;
    return recurse(depth + 1) + frame[0] + frame[sizeof frame - 1];
}

static void overflow_fn(void *arg) {
    *(int *)arg = recurse(0);
}

TEST_DEATH(stack_overflow_is_reported, SIGSEGV,
           "spindle: coroutine stack overflow (stack of 65536 bytes)") {
    coro_pool *p = new_pool(0, 0, 0);
    int r = 0;
    coro *c = coro_create(p, overflow_fn, &r);
    CHECK(c != NULL);
    coro_resume(c);
    unit_fail(__FILE__, __LINE__, "the overflowing coroutine returned");
}

TEST_DEATH(overflow_with_big_frame_is_reported, SIGSEGV, "(stack of 16384 bytes)") {
    coro_pool *p = new_pool(16 * 1024, 0, 0);
    int sum = 0;
    coro *c = coro_create(p, fill_stack, &sum); /* fits */
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 1);
    CHECK_EQ(coro_resume(c), 0);
    c = coro_create(p, overflow_fn, &sum);
    CHECK(c != NULL);
    coro_resume(c);
    unit_fail(__FILE__, __LINE__, "the overflowing coroutine returned");
}

/* Runs fn(arg) on a coroutine in a forked child whose stderr is captured
 * into err; returns the child's wait status. For crashes whose message
 * depends on the machine (page size) or on the build (ASan's report), and
 * for what ASan says about our stacks. */
static int run_in_child(coro_fn fn, void *arg, size_t stack_size, char *err, size_t cap) {
    int pipefd[2];
    CHECK_EQ(pipe(pipefd), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK(dup2(pipefd[1], STDERR_FILENO) >= 0);
        coro_pool *p = new_pool(stack_size, 0, 0);
        coro *c = coro_create(p, fn, arg);
        CHECK(c != NULL);
        coro_resume(c);
        _exit(0);
    }
    close(pipefd[1]);
    size_t len = 0;
    ssize_t n;
    while (len < cap - 1 && (n = read(pipefd[0], err + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    err[len] = '\0';
    close(pipefd[0]);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

TEST(overflow_message_names_rounded_size) {
    if (getenv("UNIT_NO_DEATH"))
        return; /* a provoked crash, like the death tests: not under valgrind */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char err[8192], want[128];
    int r = 0;
    int status = run_in_child(overflow_fn, &r, 2 * page + 1, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    snprintf(want, sizeof want, "coroutine stack overflow (stack of %zu bytes)", 3 * page);
    CHECK(strstr(err, want) != NULL);
}

static void bad_store(void *arg) {
    volatile int *volatile bad = arg;
    *bad = 1;
}

/* Any other crash inside a coroutine must stay what it is: no overflow
 * message, and the process still dies (of SIGSEGV, or ASan's report). */
TEST(other_faults_are_not_called_overflow) {
    if (getenv("UNIT_NO_DEATH"))
        return;
    char err[8192];
    /* Not NULL itself: UBSan would stop at the null store first. */
    int status = run_in_child(bad_store, (void *)(uintptr_t)64, 0, err, sizeof err);
    CHECK(strstr(err, "stack overflow") == NULL);
#ifdef TEST_ASAN
    CHECK(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
    CHECK(strstr(err, "AddressSanitizer") != NULL);
#else
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
#endif
}

/* longjmp makes ASan unpoison "the current stack" from sp to its top; if
 * ASan was not told about the switch to the coroutine's stack, it warns
 * that it is ignoring that request (and may report false positives later).
 * Meaningful under ASan only. */
static void jump_around(void *arg) {
    jmp_buf env;
    volatile int jumped = 0;
    if (setjmp(env) == 0)
        longjmp(env, 1);
    jumped = 1;
    coro_yield(coro_current());
    CHECK_EQ(jumped, 1);
}

static void resume_jumper(void *arg) {
    coro_pool *p = new_pool(0, 0, 0);
    coro *c = coro_create(p, jump_around, arg);
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 1);
    CHECK_EQ(coro_resume(c), 0);
    coro_pool_destroy(p);
}

TEST(sanitizer_follows_the_switches) {
    char err[8192];
    /* Nested: the jumping coroutine is resumed from another coroutine. */
    int status = run_in_child(resume_jumper, NULL, 0, err, sizeof err);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Not a bare "WARNING": ASan always warns that it only partly supports
     * swapcontext, which the ucontext build uses. */
    CHECK(strstr(err, "ignoring requested __asan_handle_no_return") == NULL);
    CHECK(strstr(err, "ERROR") == NULL);
}
