/* coro_guard.c — turns a coroutine stack overflow into a clear death: a
 * process-wide SIGSEGV/SIGBUS handler, run on a per-thread alternate signal
 * stack, recognises a fault just below the running coroutine's stack, says
 * so on stderr and lets the process die of SIGSEGV. Other faults go on to
 * the previous handler (or the default) unchanged. */
#include "coro/coro.h"
#include "coro/coro_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How far below the usable stack a fault still counts as an overflow: a
 * single frame with a large local array can step over the guard page, and
 * with no_guard nothing marks the edge at all. */
#define CORO_OVERFLOW_REACH (64 * 1024)
#define CORO_ALTSTACK_SIZE  (64 * 1024)

/* Process-wide by nature (signal dispositions are per process): written
 * once under pthread_once, read by the handler. */
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_err;
static struct sigaction old_segv, old_bus;

/* Per-thread: set once the thread has an alternate signal stack. */
static _Thread_local int thread_ready;

/* Async-signal-safe string building for the message. */
static size_t put_str(char *buf, size_t len, size_t cap, const char *s) {
    while (*s && len < cap)
        buf[len++] = *s++;
    return len;
}

static size_t put_size(char *buf, size_t len, size_t cap, size_t v) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n && len < cap)
        buf[len++] = digits[--n];
    return len;
}

static void write_all(const char *buf, size_t len) {
    while (len) {
        ssize_t n = write(STDERR_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere left to say it; dying anyway */
        buf += n;
        len -= (size_t)n;
    }
}

static void set_default(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    /* Cannot fail for SIGSEGV/SIGBUS with a valid struct; if it somehow
     * did, returning re-runs the fault into this handler, which is no
     * worse than the crash being reported. */
    (void)sigaction(sig, &sa, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uctx) {
    (void)uctx;
    int saved_errno = errno;
    const coro *c = coro_running;
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (c && si->si_code > 0) {
        uintptr_t lo = (uintptr_t)c->stack_lo;
        uintptr_t reach = (uintptr_t)(c->stack_lo - c->map) + CORO_OVERFLOW_REACH;
        if (addr < lo && lo - addr <= reach) {
            char msg[200];
            size_t n = put_str(msg, 0, sizeof msg, "spindle: coroutine stack overflow (stack of ");
            n = put_size(msg, n, sizeof msg, c->stack_size);
            n = put_str(msg, n, sizeof msg, " bytes); raise the stack size (--stack-size)\n");
            write_all(msg, n);
            /* Returning re-runs the faulting access, which now kills the
             * process with SIGSEGV whichever signal reported it. */
            set_default(SIGSEGV);
            set_default(SIGBUS);
            errno = saved_errno;
            return;
        }
    }
    /* Not ours: hand the signal to whoever had it before (ASan, a crash
     * reporter, or the default action) as if we had never been here. */
    const struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
    if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN)
        set_default(sig);
    else
        (void)sigaction(sig, old, NULL);
    if (si->si_code <= 0)
        (void)raise(sig); /* sent by kill(): there is no fault to re-run */
    errno = saved_errno;
}

static void install_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0 || sigaction(SIGBUS, &sa, &old_bus) != 0)
        handler_err = errno;
}

int coro_thread_init(void) {
    if (thread_ready)
        return 0;
    int rc = pthread_once(&handler_once, install_handler);
    if (rc)
        return -rc;
    if (handler_err)
        return -handler_err;
    /* An overflowed stack has no room for a signal frame; the handler runs
     * on this one. Keep an existing one (ASan installs its own). */
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0)
        return -errno;
    size_t size = CORO_ALTSTACK_SIZE;
    if ((size_t)SIGSTKSZ > size)
        size = (size_t)SIGSTKSZ;
    if ((cur.ss_flags & SS_DISABLE) || cur.ss_size < (size_t)MINSIGSTKSZ) {
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                       -1, 0);
        if (m == MAP_FAILED)
            return -errno;
        stack_t ss = {.ss_sp = m, .ss_size = size, .ss_flags = 0};
        if (sigaltstack(&ss, NULL) != 0) {
            int err = errno;
            if (munmap(m, size) != 0)
                coro_bug("munmap of an unused signal stack failed");
            return -err;
        }
    }
    thread_ready = 1;
    return 0;
}
