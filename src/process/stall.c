/* stall.c — a worker's answer to MASTER_STALL_SIGNAL, which the master's
 * watchdog sends a grace before it kills a worker whose loop stopped
 * turning: the request line and the C stack of the blocking code, written
 * to stderr from the signal handler (async-signal-safe calls only). */
#include "process/master.h"

#include <errno.h>
#include <execinfo.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static worker_slot *stall_slot;

static void put(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_stall(int sig) {
    (void)sig;
    char pid[16], *p = pid + sizeof pid;
    *--p = '\0';
    for (unsigned v = (unsigned)getpid(); p == pid + sizeof pid - 1 || v; v /= 10)
        *--p = (char)('0' + v % 10);
    put("spindle: worker ");
    put(p);
    put(" stalled serving '");
    /* The slot is ours alone: the loop that writes it is the one stuck. */
    char req[sizeof stall_slot->request];
    memcpy(req, (const char *)stall_slot->request, sizeof req);
    req[sizeof req - 1] = '\0';
    put(req);
    put("'; its C stack (the frames of a Python worker's traceback are above):\n");
    void *frames[32];
    int n = backtrace(frames, 32);
    backtrace_symbols_fd(frames, n, 2);
    /* Frozen until the SIGKILL that follows: the interrupted call (a sleep
     * cut short by EINTR) must not let the doomed worker serve on. Bounded:
     * a master that died meanwhile sends no SIGKILL. */
    struct timespec left = {5, 0};
    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
    _exit(1);
}

void stall_install(worker_slot *slot) {
    stall_slot = slot;
    /* backtrace loads libgcc on its first call: not in the handler. */
    void *warm[1];
    backtrace(warm, 1);
    struct sigaction sa = {.sa_handler = on_stall, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(MASTER_STALL_SIGNAL, &sa, NULL);
}
