/* master_int.h — the master's state, shared by master.c (supervision),
 * upgrade.c (USR2) and pid_file.c; nothing outside process/ sees it. */
#ifndef SPINDLE_MASTER_INT_H
#define SPINDLE_MASTER_INT_H

#include "process/master.h"

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_WORKERS    256
#define TICK_MS        200
#define BACKOFF_MAX_MS 10000
#define RETIRING       (-1) /* a child's generation once told to stop */
/* A stalled worker gets this long to dump its stack before SIGKILL. */
#define STALL_GRACE_MS 300

typedef struct child {
    pid_t pid;          /* 0: slot free or waiting to restart */
    int gen;            /* the generation it serves, or RETIRING */
    int64_t started;    /* ms */
    int64_t restart_at; /* when to start it again (0: not waiting) */
    int fails;          /* quick deaths in a row, for the backoff */
    int64_t kill_at;    /* stalled: SIGKILL then (0: not stalled) */
} child;

typedef struct master {
    sp_server *s;
    master_options *mo;
    worker_slot *slots;
    child kids[MAX_WORKERS];
    int target; /* workers wanted (TTIN/TTOU change it) */
    int gen;
    sigset_t orig;
    int stopping; /* 1 graceful, 2 immediate */
    int boot_failed;
    int64_t stop_deadline;
    pid_t upgrade_pid;  /* the new master of a binary upgrade in flight */
    pid_t old_master;   /* the master we replace (we are its upgrade) */
    int announced;      /* readiness told (pid file, old master, systemd) */
    int kick_fd;        /* shared listeners: the workers' eventfd to wake one another (server.c) */
    int dev_pending;    /* --reload: a new generation is starting */
    int good_gen;       /* --reload: the generation that serves meanwhile */
    char exe[PATH_MAX]; /* our binary, for USR2 */
    char *cmdline;      /* our argv, NUL-separated, for USR2 */
    size_t cmdline_len;
} master;

/* The signals the master handles (master.c). */
#define NHANDLED 10
extern const int master_signals[NHANDLED];

/* "exited with status N" or "was killed by signal N (...)". */
void master_describe_exit(int status, char *out, size_t cap);

/* upgrade.c: USR2; the new master died before taking over; our binary
 * and command line, read once at start. */
void master_upgrade(master *m);
void master_upgrade_failed(master *m, int status);
void master_read_self(master *m);

/* master.c: starts or retires workers until the current generation has
 * the target count. */
void master_keep_count(master *m, int64_t now);

/* dev_reload.c (--reload): the workers of every generation but the
 * current told to drain; each tick, a changed file starts a generation
 * that replaces the serving one once it serves; a worker of it that could
 * not load its application. */
void master_retire_others(master *m);
void master_dev_tick(master *m, int64_t now);
void master_dev_boot_failed(master *m, child *k, pid_t pid);

/* pid_file.c */
void pid_file_write(const char *path);
void pid_file_remove(const char *path);

#endif
