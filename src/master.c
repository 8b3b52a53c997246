/* master.c — the master only supervises: signal handlers set flags, the
 * master sleeps in sigsuspend and acts on them. It forks the workers (which
 * inherit the listening sockets), restarts one that dies (with a backoff,
 * logging how it died and what it was serving), kills one whose loop stopped
 * turning (--worker-timeout), and forwards TERM/INT/QUIT. */
#include "master.h"

#include "log.h"
#include "loop.h"
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS    256
#define TICK_MS        200
#define BACKOFF_MAX_MS 10000

typedef struct child {
    pid_t pid;          /* 0: not running */
    int64_t started;    /* ms */
    int64_t restart_at; /* when to start it again (0: not waiting) */
    int fails;          /* quick deaths in a row, for the backoff */
} child;

static volatile sig_atomic_t got_chld, got_term, got_int, got_quit, got_tick;

static void on_signal(int sig) {
    switch (sig) {
    case SIGCHLD:
        got_chld = 1;
        break;
    case SIGTERM:
        got_term = 1;
        break;
    case SIGINT:
        got_int++;
        break;
    case SIGQUIT:
        got_quit = 1;
        break;
    case SIGALRM:
        got_tick = 1;
        break;
    default:
        break;
    }
}

static const int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGQUIT, SIGALRM};
#define NHANDLED (int)(sizeof handled / sizeof handled[0])

static pid_t spawn(sp_server *s, worker_slot *slot, const master_options *mo, sigset_t *orig) {
    pid_t master = getpid();
    if (s->fork_hook)
        s->fork_hook(FORK_BEFORE, s->fork_hook_ud);
    pid_t pid = fork();
    if (pid != 0) {
        if (s->fork_hook)
            s->fork_hook(FORK_PARENT, s->fork_hook_ud);
        return pid;
    }
    if (s->fork_hook)
        s->fork_hook(FORK_CHILD, s->fork_hook_ud);
    /* The worker: default dispositions, its own signal handling (worker.c),
     * and it stops if the master dies without telling it. */
    for (int i = 0; i < NHANDLED; i++)
        signal(handled[i], SIG_DFL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master)
        _exit(0);
    /* Stop signals stay blocked: worker_run reads them from a signalfd. */
    sigset_t mask = *orig;
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGQUIT);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    memset(slot, 0, sizeof *slot);
    slot->pid = getpid();
    s->accept_exclusive = 1;
    int rc = worker_run(s, slot, mo->graceful_timeout_ms);
    log_msg(LOG_INFO, "worker %d exiting after %llu requests", (int)getpid(),
            (unsigned long long)slot->requests);
    _exit(rc);
}

static void describe_exit(int status, char *out, size_t cap) {
    if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
}

static void signal_all(child *kids, int n, int sig) {
    for (int i = 0; i < n; i++)
        if (kids[i].pid > 0)
            kill(kids[i].pid, sig);
}

static int alive(const child *kids, int n) {
    int a = 0;
    for (int i = 0; i < n; i++)
        a += kids[i].pid > 0;
    return a;
}

int master_run(sp_server *s, const master_options *mo) {
    if (mo->workers <= 0)
        return worker_run(s, NULL, mo->graceful_timeout_ms);
    int n = mo->workers > MAX_WORKERS ? MAX_WORKERS : mo->workers;
    worker_slot *slots = mmap(NULL, sizeof(worker_slot) * (size_t)n, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED) {
        log_msg(LOG_ERROR, "cannot map the workers' shared memory: %s", strerror(errno));
        return 1;
    }
    child kids[MAX_WORKERS] = {{0}};

    sigset_t block, orig, wait_mask;
    sigemptyset(&block);
    for (int i = 0; i < NHANDLED; i++)
        sigaddset(&block, handled[i]);
    sigprocmask(SIG_BLOCK, &block, &orig);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NHANDLED; i++)
        sigaction(handled[i], &sa, NULL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    wait_mask = orig;
    for (int i = 0; i < NHANDLED; i++)
        sigdelset(&wait_mask, handled[i]);
    struct itimerval tick = {{0, TICK_MS * 1000}, {0, TICK_MS * 1000}};
    setitimer(ITIMER_REAL, &tick, NULL);

    for (int i = 0; i < n; i++) {
        kids[i].pid = spawn(s, &slots[i], mo, &orig);
        kids[i].started = loop_clock_ms();
        if (kids[i].pid < 0) {
            log_msg(LOG_ERROR, "fork: %s", strerror(errno));
            kids[i].pid = 0;
            kids[i].restart_at = loop_clock_ms() + 1000;
        }
    }
    log_msg(LOG_INFO, "master %d started %d worker(s)", (int)getpid(), n);

    int stopping = 0; /* 1 graceful, 2 immediate */
    int boot_failed = 0;
    int64_t stop_deadline = 0;
    for (;;) {
        sigsuspend(&wait_mask);
        int64_t now = loop_clock_ms();
        if (got_chld) {
            got_chld = 0;
            int status;
            pid_t pid;
            while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                for (int i = 0; i < n; i++) {
                    if (kids[i].pid != pid)
                        continue;
                    kids[i].pid = 0;
                    if (stopping)
                        break;
                    if (WIFEXITED(status) && WEXITSTATUS(status) == MASTER_BOOT_FAILED) {
                        /* Restarting would fail the same way: stop, as gunicorn does. */
                        log_msg(LOG_CRITICAL, "worker %d could not load the application; stopping",
                                (int)pid);
                        boot_failed = 1;
                        stopping = 2;
                        signal_all(kids, n, SIGQUIT);
                        stop_deadline = now + 2000;
                        break;
                    }
                    char how[96];
                    describe_exit(status, how, sizeof how);
                    worker_slot *sl = &slots[i];
                    log_msg(LOG_ERROR, "worker %d %s %s '%s'; starting a new one", (int)pid, how,
                            sl->busy ? "while serving" : "after serving",
                            sl->request[0] ? sl->request : "no request yet");
                    /* Quick deaths in a row back off: 100 ms, 200 ms, ... 10 s. */
                    kids[i].fails = now - kids[i].started < 1000 ? kids[i].fails + 1 : 0;
                    int64_t delay =
                        kids[i].fails ? 100LL << (kids[i].fails < 7 ? kids[i].fails - 1 : 6) : 0;
                    kids[i].restart_at = now + (delay > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay);
                    break;
                }
            }
        }
        if (got_quit || (got_int >= 2)) {
            got_quit = 0;
            if (stopping != 2)
                log_msg(LOG_INFO, "immediate stop");
            stopping = 2;
            signal_all(kids, n, SIGQUIT);
            stop_deadline = now + 2000;
        } else if ((got_term || got_int) && !stopping) {
            log_msg(LOG_INFO, "graceful stop: finishing in-flight requests (up to %d ms)",
                    mo->graceful_timeout_ms);
            got_term = 0;
            stopping = 1;
            signal_all(kids, n, SIGTERM);
            stop_deadline = now + mo->graceful_timeout_ms + 2000;
        }
        if (got_tick) {
            got_tick = 0;
            for (int i = 0; i < n; i++) {
                if (!stopping && kids[i].pid == 0 && kids[i].restart_at &&
                    now >= kids[i].restart_at) {
                    kids[i].restart_at = 0;
                    kids[i].started = now;
                    kids[i].pid = spawn(s, &slots[i], mo, &orig);
                    if (kids[i].pid < 0) {
                        kids[i].pid = 0;
                        kids[i].restart_at = now + 1000;
                    }
                }
                /* The watchdog: a heartbeat older than worker_timeout means a
                 * handler has blocked the loop (parked coroutines do not). */
                worker_slot *sl = &slots[i];
                if (!stopping && kids[i].pid > 0 && mo->worker_timeout_ms > 0 && sl->heartbeat_ms &&
                    now - sl->heartbeat_ms > mo->worker_timeout_ms) {
                    log_msg(LOG_ERROR,
                            "worker %d: its loop has not turned for %lld ms, blocked %s '%s'; "
                            "killing it (a handler must not block: use sp_run_blocking)",
                            (int)kids[i].pid, (long long)(now - sl->heartbeat_ms),
                            sl->busy ? "serving" : "after", sl->request);
                    kill(kids[i].pid, SIGKILL);
                    sl->heartbeat_ms = 0;
                }
            }
        }
        if (stopping && alive(kids, n) == 0)
            break;
        if (stopping && now > stop_deadline) {
            log_msg(LOG_WARNING, "workers did not stop in time; killing them");
            signal_all(kids, n, SIGKILL);
            stop_deadline = now + 60000;
        }
    }
    log_msg(LOG_INFO, "master %d stopped", (int)getpid());
    munmap(slots, sizeof(worker_slot) * (size_t)n);
    return boot_failed ? 1 : 0;
}
