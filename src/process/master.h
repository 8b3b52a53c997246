/* master.h — the process model: a master that only supervises and N
 * workers that serve (or one process serving itself with workers = 0). */
#ifndef SPINDLE_MASTER_H
#define SPINDLE_MASTER_H

#include "process/worker_slot.h"
#include "spindle.h"

#include <signal.h>

typedef struct master_options {
    int workers;             /* 0: serve in this process, no master */
    int worker_timeout_ms;   /* a loop that has not turned for this long is killed */
    int graceful_timeout_ms; /* in-flight requests get this long on TERM */
    int max_requests;        /* recycle a worker after this many requests (0 never) */
    int max_requests_jitter;
    size_t max_worker_memory; /* recycle a worker past this RSS in bytes (0 never) */
    int reuse_port;           /* per-worker SO_REUSEPORT sockets */
    const char *pid_file;
    /* --reload: restart the workers when a watched file changes (reload_watch
     * opened); exec_on_change: by re-executing the master (a C --app). */
    int reload_on_change, exec_on_change;
    /* HUP: re-read the settings into s and mo (binds excepted) before the
     * new workers fork. 0, or -1 to keep the running workers. */
    int (*reload)(sp_server *s, struct master_options *mo, void *ud);
    void *reload_ud;
    /* In each worker, first thing after the fork, before any hook or
     * application code: the cli's switch to --user/--group (the master
     * keeps its own rights, to reread root-only keys on HUP). 0, or -1
     * logged: the worker exits MASTER_BOOT_FAILED. NULL: nothing. */
    int (*worker_setup)(void *ud);
    void *worker_setup_ud;
    /* Every worker's slot, filled by master_run (read by the --stats page,
     * which may be added before: stats_page_add_route). */
    worker_board board;
} master_options;

/* Serves s (listeners bound, routes added) until a stop signal. Returns the
 * exit status for main. */
int master_run(sp_server *s, master_options *mo);

/* Worker side (worker.c): serves s on this process until a stop signal;
 * slot may be NULL. Returns the exit status. */
/* Sent to a worker whose loop stalled, a grace before SIGKILL: its handler
 * (stall.c; a Python worker's faulthandler, chained to it) writes the
 * stack of the blocking code to stderr. Ignored by default, used by none
 * of the worker's other paths, and never blocked in a worker. */
#define MASTER_STALL_SIGNAL SIGURG

/* Worker side (stall.c): installs the C handler of MASTER_STALL_SIGNAL,
 * which writes slot's request line and the C stack to stderr. */
void stall_install(worker_slot *slot);

/* --reload (reload_watch.c). The master: opens the watch (0, or -1
 * logged), adds files to it, and asks which watched file changed since the
 * last call (NULL: none). A worker: reports a file its application loaded
 * (to the master, which watches it), and closes the master's ends. */
int reload_watch_open(void);
void reload_watch_add(const char *path);
const char *reload_watch_changed(void);
void reload_watch_report(const char *path);
void reload_watch_child(void);

/* A worker's exit status when its application could not be loaded. */
#define MASTER_BOOT_FAILED 3

int worker_run(sp_server *s, worker_slot *slot, worker_board *board, int graceful_timeout_ms);

/* What a worker's server tells its slot (worker_slot.c): installed as the
 * server's observer for as long as the worker serves. */
typedef struct worker_watch {
    worker_slot *slot;
    worker_board *board;
} worker_watch;
void worker_watch_install(sp_server *s, worker_watch *ww);

/* The --stats endpoint (stats_page.c): Prometheus text summed over every
 * slot of board, or at PATH?html a page that draws it. 0 or -errno. */
int stats_page_add_route(sp_server *s, const char *path, const worker_board *board);
/* The same on listener i's own route table only (--stats-bind): the
 * server's other listeners do not serve it. */
int stats_page_add_listener_route(sp_server *s, int i, const char *path, const worker_board *board);

#endif
