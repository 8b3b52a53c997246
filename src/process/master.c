/* master.c — the master only supervises: signal handlers set flags, the
 * master sleeps in sigsuspend and acts on them. It forks the workers (which
 * inherit the listening sockets), restarts one that dies (with a backoff,
 * logging how it died and what it was serving), kills one whose loop stopped
 * turning (--worker-timeout), reloads (HUP: new workers first, then the old
 * ones drain), upgrades the binary (USR2), adds and removes workers
 * (TTIN/TTOU), and forwards TERM/INT/QUIT. */
#include "process/master_int.h"

#include "base/log.h"
#include "loop/loop.h"
#include "process/sd_notify.h"
#include "process/slot_log.h"
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_chld, got_term, got_int, got_quit, got_tick, got_hup, got_usr1,
    got_usr2, got_ttin, got_ttou;

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
    case SIGHUP:
        got_hup = 1;
        break;
    case SIGUSR1:
        got_usr1 = 1;
        break;
    case SIGUSR2:
        got_usr2 = 1;
        break;
    case SIGTTIN:
        got_ttin++;
        break;
    case SIGTTOU:
        got_ttou++;
        break;
    default:
        break;
    }
}

const int master_signals[NHANDLED] = {SIGCHLD, SIGTERM, SIGINT,  SIGQUIT, SIGALRM,
                                      SIGHUP,  SIGUSR1, SIGUSR2, SIGTTIN, SIGTTOU};

/* Gives a worker its own SO_REUSEPORT sockets (--reuse-port). */
static int own_listeners(sp_server *s) {
    for (int i = 0; i < server_nlisteners(s); i++) {
        const net_addr *addr = server_listener_addr(s, i);
        int fd = net_listen(addr, server_options(s)->backlog, NET_REUSEPORT);
        if (fd < 0) {
            char a[128];
            net_format_addr(addr, a, sizeof a);
            log_msg(LOG_CRITICAL, "worker cannot listen on %s: %s", a, strerror(-fd));
            return -1;
        }
        server_set_listener_fd(s, i, fd);
    }
    return 0;
}

static pid_t spawn(master *m, int i) {
    sp_server *s = m->s;
    worker_slot *slot = &m->slots[i];
    pid_t parent = getpid();
    server_fork_hook(s, FORK_BEFORE);
    pid_t pid = fork();
    if (pid != 0) {
        server_fork_hook(s, FORK_PARENT);
        return pid;
    }
    /* Before the fork hook (Python's at-fork callbacks) and everything
     * after it: no code but ours runs with the master's rights. The switch
     * clears PR_SET_PDEATHSIG, so that is set below, after it. */
    if (m->mo->worker_setup && m->mo->worker_setup(m->mo->worker_setup_ud) < 0)
        _exit(MASTER_BOOT_FAILED);
    server_fork_hook(s, FORK_CHILD);
    /* The worker: default dispositions, its own signal handling (worker.c),
     * and it stops if the master dies without telling it. */
    for (int k = 0; k < NHANDLED; k++)
        signal(master_signals[k], SIG_DFL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(0);
    /* Stop signals (and USR1, log reopening) stay blocked: worker_run reads
     * them from a signalfd. */
    sigset_t mask = m->orig;
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGUSR1);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    memset(slot, 0, sizeof *slot);
    slot->pid = getpid();
    slot->max_rss = m->mo->max_worker_memory;
    slot->log = slot_log_buffer(i); /* the access log formats into the master's memory */
    stall_install(slot);
    if (m->mo->reload_on_change)
        reload_watch_child();
    server_set_accept_shared(s, !m->mo->reuse_port);
    server_set_accept_kick(s, m->kick_fd);
    if (m->mo->reuse_port && own_listeners(s) < 0)
        _exit(MASTER_BOOT_FAILED);
    if (m->mo->max_requests) {
        int jitter = m->mo->max_requests_jitter;
        srand((unsigned)getpid());
        server_set_max_requests(s, (uint64_t)m->mo->max_requests +
                                       (uint64_t)(jitter ? rand() % (jitter + 1) : 0));
    }
    int rc = worker_run(s, slot, &m->mo->board, m->mo->graceful_timeout_ms);
    log_msg(LOG_INFO, "worker %d exiting after %llu requests", (int)getpid(),
            (unsigned long long)slot->requests);
    _exit(rc);
}

void master_describe_exit(int status, char *out, size_t cap) {
    if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
}

static void signal_all(master *m, int sig) {
    for (int i = 0; i < MAX_WORKERS; i++)
        if (m->kids[i].pid > 0)
            kill(m->kids[i].pid, sig);
}

static int alive(const master *m) {
    int a = 0;
    for (int i = 0; i < MAX_WORKERS; i++)
        a += m->kids[i].pid > 0;
    return a;
}

/* Current-generation workers, running or about to be restarted. */
static int current(const master *m) {
    int n = 0;
    for (int i = 0; i < MAX_WORKERS; i++)
        n += m->kids[i].gen == m->gen && (m->kids[i].pid > 0 || m->kids[i].restart_at);
    return n;
}

static int free_slot(const master *m) {
    for (int i = 0; i < MAX_WORKERS; i++)
        if (m->kids[i].pid == 0 && !m->kids[i].restart_at)
            return i;
    return -1;
}

static void start_worker(master *m, int i, int64_t now) {
    child *k = &m->kids[i];
    if (*m->mo->board.slots_used < i + 1)
        *m->mo->board.slots_used = i + 1;
    k->gen = m->gen;
    k->started = now;
    k->restart_at = 0;
    k->kill_at = 0;
    m->slots[i].heartbeat_ms = 0; /* not ready until the new worker beats */
    k->pid = spawn(m, i);
    if (k->pid < 0) {
        log_msg(LOG_ERROR, "fork: %s; trying again in 1 s", strerror(errno));
        k->pid = 0;
        k->restart_at = now + 1000;
    }
}

/* Starts or retires workers until the current generation has `target`. */
void master_keep_count(master *m, int64_t now) {
    while (current(m) < m->target) {
        int i = free_slot(m);
        if (i < 0)
            break;
        m->kids[i].fails = 0;
        start_worker(m, i, now);
    }
    for (int i = MAX_WORKERS - 1; i >= 0 && current(m) > m->target; i--) {
        child *k = &m->kids[i];
        if (k->gen != m->gen)
            continue;
        if (k->pid > 0)
            kill(k->pid, SIGTERM);
        k->gen = RETIRING;
        k->restart_at = 0;
    }
}

/* ---- reload and upgrade -------------------------------------------------- */

static void reload(master *m, int64_t now) {
    sd_notify_send("RELOADING=1");
    if (m->mo->reload && m->mo->reload(m->s, m->mo, m->mo->reload_ud) < 0) {
        log_msg(LOG_ERROR, "reload: the configuration has errors (see above); keeping the "
                           "running workers");
        sd_notify_send("READY=1");
        return;
    }
    /* New workers first, so nothing stops accepting; then the old ones
     * finish what they serve and answer their keep-alive clients'
     * next request with Connection: close. */
    m->gen++;
    m->target = m->mo->workers > 0 ? m->mo->workers : 1;
    master_keep_count(m, now);
    /* Every older generation: a --reload one still serving included. */
    m->dev_pending = 0;
    master_retire_others(m);
    log_msg(LOG_INFO, "reload: %d new worker(s) started, the old ones are draining", m->target);
    sd_notify_send("READY=1");
}

/* Once every worker has started its loop: the pid file, systemd, and the
 * old master (if we are an upgrade) are told we serve. */
static void announce_when_ready(master *m) {
    if (m->announced)
        return;
    for (int i = 0; i < MAX_WORKERS; i++)
        if (m->kids[i].gen == m->gen && m->kids[i].pid > 0 && !m->slots[i].heartbeat_ms)
            return;
    m->announced = 1;
    pid_file_write(m->mo->pid_file);
    char msg[64];
    snprintf(msg, sizeof msg, "MAINPID=%d\nREADY=1", (int)getpid());
    sd_notify_send(msg);
    if (m->old_master > 0) {
        log_msg(LOG_INFO, "upgrade: serving; asking the old master %d to drain",
                (int)m->old_master);
        kill(m->old_master, SIGTERM);
        m->old_master = 0;
    }
}

/* ---- the supervision loop ------------------------------------------------ */

static void reap(master *m, int64_t now) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == m->upgrade_pid) {
            master_upgrade_failed(m, status);
            continue;
        }
        for (int i = 0; i < MAX_WORKERS; i++) {
            child *k = &m->kids[i];
            if (k->pid != pid)
                continue;
            k->pid = 0;
            k->kill_at = 0;
            /* Its counters live on in the totals, so sums never go back;
             * its access-log lines reach the log, however it died. */
            worker_stats_fold(m->mo->board.retired, (const worker_stats *)&m->slots[i].st);
            slot_log_salvage(i, pid);
            m->slots[i].pid = 0;
            memset((void *)&m->slots[i].st, 0, sizeof m->slots[i].st);
            /* A stop signal still pending counts as stopping (on_flags
             * handles those first; this keeps reap right on its own). */
            if (m->stopping || got_term || got_int || got_quit || k->gen != m->gen) {
                k->gen = 0; /* retired: the slot is free */
                break;
            }
            if (WIFEXITED(status) && WEXITSTATUS(status) == MASTER_BOOT_FAILED &&
                m->mo->reload_on_change) {
                master_dev_boot_failed(m, k, pid); /* serving on: the next change may fix it */
                break;
            }
            if (WIFEXITED(status) && WEXITSTATUS(status) == MASTER_BOOT_FAILED) {
                /* Restarting would fail the same way: stop, as gunicorn does. */
                log_msg(LOG_CRITICAL, "worker %d could not start (see above); stopping", (int)pid);
                m->boot_failed = 1;
                m->stopping = 2;
                signal_all(m, SIGQUIT);
                m->stop_deadline = now + 2000;
                break;
            }
            worker_slot *sl = &m->slots[i];
            m->mo->board.restarts[worker_restart_cause(status, sl)]++;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                /* --max-requests: it stopped itself after its share. */
                log_msg(LOG_INFO, "worker %d recycled after %llu requests; starting a new one",
                        (int)pid, (unsigned long long)sl->requests);
                k->fails = 0;
                k->restart_at = now;
                break;
            }
            char how[96];
            master_describe_exit(status, how, sizeof how);
            log_msg(LOG_ERROR, "worker %d %s %s '%s'; starting a new one", (int)pid, how,
                    sl->busy ? "while serving" : "after serving",
                    sl->request[0] ? sl->request : "no request yet");
            /* Quick deaths in a row back off: 100 ms, 200 ms, ... 10 s. */
            k->fails = now - k->started < 1000 ? k->fails + 1 : 0;
            int64_t delay = k->fails ? 100LL << (k->fails < 7 ? k->fails - 1 : 6) : 0;
            k->restart_at = now + (delay > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay);
            if (!k->restart_at)
                k->restart_at = now;
            break;
        }
    }
}

static void tick(master *m, int64_t now) {
    tls_ticket_tick(); /* the secret new workers inherit steps on too (tls_ticket.c) */
    if (m->mo->reload_on_change && !m->stopping)
        master_dev_tick(m, now);
    for (int i = 0; i < MAX_WORKERS; i++) {
        child *k = &m->kids[i];
        if (!m->stopping && k->pid == 0 && k->restart_at && now >= k->restart_at &&
            k->gen == m->gen)
            start_worker(m, i, now);
        /* The watchdog: a heartbeat older than worker_timeout means a
         * handler has blocked the loop (parked coroutines do not). It is
         * first asked for its stack (MASTER_STALL_SIGNAL: a Python worker
         * dumps its traceback), then killed a grace later. */
        worker_slot *sl = &m->slots[i];
        if (k->pid > 0 && k->kill_at && now >= k->kill_at) {
            kill(k->pid, SIGKILL);
            k->kill_at = 0;
            sl->heartbeat_ms = 0;
        } else if (!m->stopping && k->pid > 0 && !k->kill_at && m->mo->worker_timeout_ms > 0 &&
                   sl->heartbeat_ms && now - sl->heartbeat_ms > m->mo->worker_timeout_ms) {
            log_msg(LOG_ERROR,
                    "worker %d: its loop has not turned for %lld ms, blocked %s '%s'; "
                    "killing it. Its stack follows: the call it shows must not block the loop "
                    "(Python: call spindle.patch() at start, or wrap the call in "
                    "spindle.run_blocking(...); "
                    "C: wrap it in sp_run_blocking)",
                    (int)k->pid, (long long)(now - sl->heartbeat_ms),
                    sl->busy ? "serving" : "after", sl->request);
            sl->ended_by = WORKER_ENDED_WATCHDOG; /* its death is the watchdog's */
            kill(k->pid, MASTER_STALL_SIGNAL);
            k->kill_at = now + STALL_GRACE_MS;
        }
    }
    if (!m->stopping)
        announce_when_ready(m);
}

static void begin_stop(master *m, int how, int64_t now) {
    if (how == 2) {
        if (m->stopping != 2)
            log_msg(LOG_INFO, "immediate stop");
        m->stopping = 2;
        server_close_listeners(m->s);
        signal_all(m, SIGQUIT);
        m->stop_deadline = now + 2000;
    } else if (!m->stopping) {
        log_msg(LOG_INFO, "graceful stop: finishing in-flight requests (up to %d ms)",
                m->mo->graceful_timeout_ms);
        m->stopping = 1;
        server_close_listeners(m->s); /* the workers close theirs on TERM */
        signal_all(m, SIGTERM);
        m->stop_deadline = now + m->mo->graceful_timeout_ms + 2000;
    }
    sd_notify_send("STOPPING=1");
}

/* --workers 0: this process serves, with no master. */
static int serve_alone(sp_server *s, master_options *mo) {
    pid_file_write(mo->pid_file);
    sd_notify_send("READY=1");
    int rc = worker_run(s, NULL, &mo->board, mo->graceful_timeout_ms);
    pid_file_remove(mo->pid_file);
    return rc;
}

/* The slots, then the retired workers' folded counters, then the
 * restarts by cause, then how many slots have ever been used (slots are
 * taken lowest first, so readers scan only those), in memory the workers
 * share; and, mapped apart, each slot's access-log buffer. 0, or -1 logged. */
#define SHM_BYTES                                                                                  \
    (sizeof(worker_slot) * MAX_WORKERS + sizeof(worker_stats) +                                    \
     sizeof(uint64_t) * RESTART_CAUSES + sizeof(int))
static int map_board(master *m) {
    m->slots = mmap(NULL, SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m->slots == MAP_FAILED) {
        log_msg(LOG_ERROR, "cannot map the workers' shared memory: %s", strerror(errno));
        return -1;
    }
    if (slot_log_map(MAX_WORKERS) < 0) {
        munmap(m->slots, SHM_BYTES);
        return -1;
    }
    worker_board *b = &m->mo->board;
    b->slots = m->slots;
    b->nslots = MAX_WORKERS;
    b->retired = (worker_stats *)(void *)(m->slots + MAX_WORKERS);
    b->restarts = (volatile uint64_t *)(void *)(b->retired + 1);
    b->slots_used = (volatile int *)(void *)(b->restarts + RESTART_CAUSES);
    return 0;
}

/* The handled signals are blocked except inside sigsuspend(wait_mask),
 * with the 200 ms tick; saved keeps what was there before. */
static void signals_install(master *m, struct sigaction saved[NHANDLED], sigset_t *wait_mask) {
    sigset_t block;
    sigemptyset(&block);
    for (int i = 0; i < NHANDLED; i++)
        sigaddset(&block, master_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &m->orig);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NHANDLED; i++)
        sigaction(master_signals[i], &sa, &saved[i]);
    signal(SIGPIPE, SIG_IGN);
    *wait_mask = m->orig;
    for (int i = 0; i < NHANDLED; i++)
        sigdelset(wait_mask, master_signals[i]);
    struct itimerval tk = {{0, TICK_MS * 1000}, {0, TICK_MS * 1000}};
    setitimer(ITIMER_REAL, &tk, NULL);
}

static void signals_restore(master *m, const struct sigaction saved[NHANDLED]) {
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    /* A tick may already be pending (blocked since the last sigsuspend).
     * Ignoring SIGALRM discards it; otherwise the default disposition
     * restored below would kill the process with it on unblock (seen as
     * an exit by signal 14 after a clean "master stopped"). */
    signal(SIGALRM, SIG_IGN);
    for (int i = 0; i < NHANDLED; i++)
        sigaction(master_signals[i], &saved[i], NULL);
    sigprocmask(SIG_SETMASK, &m->orig, NULL);
}

/* Acts on the flags the handlers set since the last wake-up. */
static void on_flags(master *m, int64_t now) {
    /* Stop requests before the dead are reaped: on Ctrl-C the terminal
     * sends SIGINT to the whole group, the workers exit 0 at once, and
     * their SIGCHLD can be handled in the same wake-up as our SIGINT. Seen
     * stopping, they are retired, not recycled and restarted. */
    if (got_quit || got_int >= 2) {
        got_quit = 0;
        begin_stop(m, 2, now);
    } else if ((got_term || got_int) && !m->stopping) {
        got_term = 0;
        begin_stop(m, 1, now);
    }
    if (got_chld) {
        got_chld = 0;
        reap(m, now);
    }
    if (got_hup) {
        got_hup = 0;
        if (!m->stopping)
            reload(m, now);
    }
    if (got_usr1) {
        got_usr1 = 0;
        log_reopen(); /* --error-log: ours; each process reopens its own fd 2 */
        log_msg(LOG_INFO, "USR1: reopening the logs");
        signal_all(m, SIGUSR1); /* each worker reopens its access log and error log */
    }
    if (got_usr2) {
        got_usr2 = 0;
        if (!m->stopping)
            master_upgrade(m);
    }
    if (got_ttin || got_ttou) {
        int d = got_ttin - got_ttou;
        got_ttin = got_ttou = 0;
        int want = m->target + d;
        m->target = want < 1 ? 1 : want > MAX_WORKERS ? MAX_WORKERS : want;
        log_msg(LOG_INFO, "now %d worker(s)", m->target);
        if (!m->stopping)
            master_keep_count(m, now);
    }
    if (got_tick) {
        got_tick = 0;
        tick(m, now);
    }
}

int master_run(sp_server *s, master_options *mo) {
    if (mo->workers <= 0)
        return serve_alone(s, mo);
    master *m = calloc(1, sizeof *m);
    if (!m)
        return 1;
    m->s = s;
    m->mo = mo;
    m->target = mo->workers > MAX_WORKERS ? MAX_WORKERS : mo->workers;
    m->gen = 1;
    master_read_self(m);
    const char *old = getenv("SPINDLE_OLD_MASTER");
    if (old) {
        m->old_master = (pid_t)atoi(old);
        unsetenv("SPINDLE_OLD_MASTER");
    }
    if (map_board(m) < 0) {
        free(m->cmdline);
        free(m);
        return 1;
    }
    if (mo->reuse_port)
        server_close_listeners(s); /* each worker binds its own; none left here */
    /* Workers sharing the listeners wake one another through it when one
     * steps aside from clients only it was woken for; without it they wait
     * out its 5 ms instead. */
    m->kick_fd = mo->reuse_port ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct sigaction saved[NHANDLED];
    sigset_t wait_mask;
    signals_install(m, saved, &wait_mask);

    master_keep_count(m, loop_clock_ms());
    log_msg(LOG_INFO, "master %d started %d worker(s)", (int)getpid(), m->target);
    for (;;) {
        sigsuspend(&wait_mask);
        int64_t now = loop_clock_ms();
        on_flags(m, now);
        if (m->stopping && alive(m) == 0)
            break;
        if (m->stopping && now > m->stop_deadline) {
            log_msg(LOG_WARNING, "workers did not stop in time; killing them");
            signal_all(m, SIGKILL);
            m->stop_deadline = now + 60000;
        }
    }
    log_msg(LOG_INFO, "master %d stopped", (int)getpid());
    pid_file_remove(mo->pid_file);
    if (mo->pid_file) {
        /* After an upgrade our pid is in FILE.oldbin: ours to remove. */
        char oldbin[PATH_MAX + 8];
        snprintf(oldbin, sizeof oldbin, "%s.oldbin", mo->pid_file);
        pid_file_remove(oldbin);
    }
    signals_restore(m, saved);
    int rc = m->boot_failed ? 1 : 0;
    munmap(m->slots, SHM_BYTES);
    slot_log_unmap();
    if (m->kick_fd >= 0)
        close(m->kick_fd);
    free(m->cmdline);
    free(m);
    return rc;
}
