/* privileges.c — --user and --group: resolved once in the master, then
 * each worker switches right after the fork (the master keeps its rights,
 * so HUP can reread root-only keys the workers can never open), or, with
 * --workers 0, the process itself; the session store and the error log are
 * made the workers'. Core dumps stay off unless --core-dumps. */
#include "cli/cli.h"

#include "base/log.h"
#include "server/session/session.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* --user / --group, resolved once in the master: the ids and the user's
 * supplementary groups, so that a worker switches right after the fork with
 * plain system calls (no user database lookup in a just-forked child). */
typedef struct run_as {
    int set;      /* --user or --group given */
    int has_user; /* --user: its groups and uid too, not only the gid */
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t *groups;
} run_as;

static run_as the_run_as; /* read by drop_worker in every worker */

/* c's --user/--group into r. 0, or -1 with a message printed. */
static int resolve_run_as(const cli_config *c, run_as *r) {
    *r = (run_as){0};
    if (!c->user && !c->group)
        return 0;
    struct passwd *pw = NULL;
    if (c->user) {
        pw = getpwnam(c->user);
        if (!pw) {
            fprintf(stderr, "spindle: --user %s: no such user\n", c->user);
            return -1;
        }
    }
    r->gid = pw ? pw->pw_gid : getgid();
    if (c->group) {
        struct group *gr = getgrnam(c->group);
        if (!gr) {
            fprintf(stderr, "spindle: --group %s: no such group\n", c->group);
            return -1;
        }
        r->gid = gr->gr_gid;
    }
    r->set = 1;
    if (!pw)
        return 0;
    r->has_user = 1;
    r->uid = pw->pw_uid;
    /* initgroups's list, taken now: getgrouplist says how many on a miss. */
    int n = 32;
    for (int tries = 0; tries < 2; tries++) {
        gid_t *g = realloc(r->groups, (size_t)n * sizeof *g);
        if (!g)
            break;
        r->groups = g;
        if (getgrouplist(pw->pw_name, r->gid, g, &n) >= 0) {
            r->ngroups = n;
            return 0;
        }
    }
    fprintf(stderr, "spindle: --user %s: cannot list its groups\n", c->user);
    return -1;
}

/* Switches this process to r: groups, gid, then uid (after which the
 * others could not be changed). 0, or -1 with errno set. */
static int apply_run_as(const run_as *r) {
    if (!r->set)
        return 0;
    if (r->has_user && setgroups((size_t)r->ngroups, r->groups) != 0)
        return -1;
    if (setgid(r->gid) != 0)
        return -1;
    return r->has_user && setuid(r->uid) != 0 ? -1 : 0;
}

static void switch_failed(const cli_config *c, int err) {
    fprintf(stderr,
            "spindle: cannot switch to user %s / group %s: %s (start as root to "
            "use --user and --group)\n",
            c->user ? c->user : "-", c->group ? c->group : "-", strerror(err));
}

/* Core dumps off unless --core-dumps: a worker's core would hold the
 * session signing key and the requests in flight. In the master (inherited
 * by the workers), and again after a switch to --user (which resets it). */
static void set_dumpable(const cli_config *c) {
    if (prctl(PR_SET_DUMPABLE, c->core_dumps ? 1 : 0) != 0)
        log_msg(LOG_WARNING, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
}

/* master_options.worker_setup: each worker becomes --user/--group right
 * after the fork, before its hooks and the application; the master stays
 * as started, so a HUP can reread a root-only (0600) key, and the workers,
 * which serve the requests, can never open it. */
static int drop_worker(void *ud) {
    const cli_config *c = ud;
    if (apply_run_as(&the_run_as) < 0) {
        log_msg(LOG_CRITICAL,
                "worker %d cannot switch to user %s / group %s: %s; it exits without "
                "serving (the master stops, as for a failed start)",
                (int)getpid(), c->user ? c->user : "-", c->group ? c->group : "-", strerror(errno));
        return -1;
    }
    set_dumpable(c);
    return 0;
}

/* The SQLite store's first open as the workers' user (a database made now
 * must be theirs), in a short-lived child that switches first: the master
 * keeps its rights, and no connection crosses the fork. That the switch
 * works is checked by the same child, so a bad --user fails the start with
 * a message, not each worker. 0, or -1 with a message printed. */
static int check_store_as_user(const cli_config *c, sp_server *s) {
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "spindle: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (apply_run_as(&the_run_as) < 0) {
            switch_failed(c, errno);
            _exit(2);
        }
        if (sess_check_store(s) < 0) {
            fprintf(stderr, "spindle: --sessions: see the error above (the store is opened as "
                            "the --user)\n");
            _exit(1);
        }
        _exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* After the listeners and the keys: the switch, as described at the top.
 * 0, or 1 with a message printed. */
int cli_switch_user(cli_config *c, sp_server *s) {
    if (resolve_run_as(c, &the_run_as) < 0)
        return 1;
    if (the_run_as.set && c->mo.workers > 0) {
        /* Only the workers switch (drop_worker); the master keeps its
         * rights for HUP's reread of the certificates and keys. */
        if (check_store_as_user(c, s) < 0)
            return 1;
        c->mo.worker_setup = drop_worker;
        c->mo.worker_setup_ud = c;
        set_dumpable(c);
        log_set_owner(the_run_as.has_user ? (long)the_run_as.uid : (long)getuid(),
                      (long)the_run_as.gid);
        log_reopen(); /* the file opened at start becomes the workers' too */
        return 0;
    }
    /* --workers 0: no master to keep them; this process switches now
     * (with no master, HUP rereads nothing anyway). */
    if (apply_run_as(&the_run_as) < 0) {
        switch_failed(c, errno);
        return 1;
    }
    set_dumpable(c);
    /* As the user the workers run as: a database made now is theirs. */
    if (sess_check_store(s) < 0) {
        fprintf(stderr, "spindle: --sessions: see the error above%s\n",
                c->user ? " (the store is opened as the --user)" : "");
        return 1;
    }
    return 0;
}
