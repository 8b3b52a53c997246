/* worker.c — one serving process: its loop, created after the fork, with
 * stop signals read from a signalfd (so they are handled on the loop, not in
 * a handler), a heartbeat for the master's watchdog (which also checks
 * --max-worker-memory), the graceful timeout that ends a drain that
 * takes too long, and its access log in the master's shared memory. */
#include "process/master.h"

#include "base/log.h"
#include "server/access_log.h"
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

typedef struct worker {
    sp_server *s;
    worker_slot *slot; /* the master's, or NULL with --workers 0 */
    worker_watch watch;
    loop_watch sigw;
    loop_timer heartbeat;
    loop_timer graceful;
    int graceful_timeout_ms;
    int stops; /* stop signals seen */
    int beats; /* heartbeats so far: every 4th checks the RSS */
} worker;

/* Well inside the shortest --worker-timeout (1 s): beating once a second
 * against a 1 s timeout, a few ms of lateness under load looked stale. */
#define HEARTBEAT_MS 250

static void on_graceful_timeout(loop *l, loop_timer *t);

/* This process's resident set in bytes from /proc/self/statm (one small
 * read, once a second); 0 when it cannot be read. */
static uint64_t self_rss(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    unsigned long long size, pages;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (sscanf(buf, "%llu %llu", &size, &pages) != 2)
        return 0;
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* --max-worker-memory: past the limit the worker stops as on TERM; its
 * exit 0 makes the master log it as recycled and start another. */
static void check_memory(loop *l, worker *w) {
    uint64_t rss = self_rss();
    if (w->stops || rss <= w->slot->max_rss)
        return;
    log_msg(LOG_WARNING,
            "worker %d uses %.1f MiB of memory (RSS), past --max-worker-memory %.1f MiB; "
            "recycling it gracefully",
            (int)getpid(), (double)rss / (1 << 20), (double)w->slot->max_rss / (1 << 20));
    w->stops++;
    w->slot->ended_by = WORKER_ENDED_MEMORY; /* the master counts why it restarts us */
    sp_server_stop(w->s);
    loop_timer_arm(l, &w->graceful, loop_now(l) + w->graceful_timeout_ms, on_graceful_timeout, w);
}

static void on_heartbeat(loop *l, loop_timer *t) {
    worker *w = t->data;
    w->slot->heartbeat_ms = loop_clock_ms();
    tls_ticket_tick(); /* an idle worker wipes an old ticket secret too (tls_ticket.c) */
    if (w->slot->max_rss && ++w->beats % (1000 / HEARTBEAT_MS) == 0)
        check_memory(l, w);
    loop_timer_arm(l, t, loop_now(l) + HEARTBEAT_MS, on_heartbeat, w);
}

static void on_graceful_timeout(loop *l, loop_timer *t) {
    worker *w = t->data;
    log_msg(LOG_WARNING,
            "graceful timeout: %d connection(s) still open after %d ms; closing them "
            "(raise --graceful-timeout to give slow requests longer)",
            server_nconns(w->s), w->graceful_timeout_ms);
    server_flush_access_log(w->s);
    _exit(0);
}

static void on_signal(loop *l, loop_watch *lw, uint32_t events) {
    worker *w = lw->data;
    struct signalfd_siginfo si;
    while (read(lw->fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGQUIT || (sig == SIGINT && w->stops > 0)) {
            _exit(0); /* immediate stop: in-flight requests are cut */
        }
        if (sig == SIGUSR1) {
            server_reopen_access_log(w->s); /* logrotate moved the file */
            log_reopen();
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT) {
            if (w->stops++ == 0) {
                sp_server_stop(w->s);
                loop_timer_arm(l, &w->graceful, loop_now(l) + w->graceful_timeout_ms,
                               on_graceful_timeout, w);
            }
        }
    }
}

int worker_run(sp_server *s, worker_slot *slot, worker_board *board, int graceful_timeout_ms) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGQUIT);
    sigaddset(&stop, SIGUSR1);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    worker w = {.s = s, .slot = slot, .graceful_timeout_ms = graceful_timeout_ms};
    int sfd = signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        log_msg(LOG_ERROR, "signalfd: %s", strerror(errno));
        return 1;
    }
    const sp_server_options *so = server_options(s);
    sp_loop_options lo = {.stack_size = so->stack_size, .no_guard_pages = so->no_guard_pages};
    loop *l = sp_loop_new(&lo);
    if (!l) {
        log_msg(LOG_ERROR, "cannot create the event loop: %s", strerror(errno));
        close(sfd);
        return 1;
    }
    log_msg(LOG_INFO, "worker %d: event loop %s", (int)getpid(), loop_backend_name(l));
    w.sigw = (loop_watch){.fd = sfd, .cb = on_signal, .data = &w};
    loop_watch_add(l, &w.sigw, BACKEND_READ_LEVEL);
    /* --workers 0: a slot of our own, so --stats counts all the same. */
    w.watch = (worker_watch){.slot = slot ? slot : &board->own, .board = board};
    if (!board->slots) {
        board->slots = &board->own;
        board->nslots = 1;
    }
    board->own.pid = getpid();
    worker_watch_install(s, &w.watch);
    /* Under a master the lines go into its shared memory, so that they
     * reach the log even if this process is killed (slot_log.c). */
    if (slot && slot->log)
        access_log_use_buffer(slot->log);
    int rc = server_open_access_log(s); /* says why it failed */
    if (rc < 0) {
        server_set_observer(s, NULL);
        loop_watch_del(l, &w.sigw);
        close(sfd);
        sp_loop_free(l);
        return MASTER_BOOT_FAILED;
    }
    if (server_worker_init(s) < 0) {
        log_msg(LOG_ERROR, "worker %d could not start its application; exiting", (int)getpid());
        server_set_observer(s, NULL);
        loop_watch_del(l, &w.sigw);
        close(sfd);
        sp_loop_free(l);
        return MASTER_BOOT_FAILED;
    }
    if (slot) {
        slot->heartbeat_ms = loop_clock_ms();
        loop_timer_arm(l, &w.heartbeat, loop_now(l) + HEARTBEAT_MS, on_heartbeat, &w);
    }
    rc = sp_server_run(s);
    server_set_observer(s, NULL); /* w.watch goes with this frame */
    if (rc == -ECANCELED) {
        loop_timer_cancel(l, &w.heartbeat);
        return MASTER_BOOT_FAILED; /* a start-up hook failed: restarting will not help */
    }
    if (rc < 0)
        log_msg(LOG_ERROR, "worker stopped: %s", strerror(-rc));
    loop_timer_cancel(l, &w.heartbeat);
    loop_timer_cancel(l, &w.graceful);
    server_close_access_log(s);
    loop_watch_del(l, &w.sigw);
    close(sfd);
    sp_loop_free(l);
    return rc < 0 ? 1 : 0;
}
