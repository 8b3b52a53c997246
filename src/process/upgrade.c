/* upgrade.c — the binary upgrade on USR2, nginx's way: the master forks
 * and execs its own binary (read from /proc/self) with the listening
 * sockets inherited (SPINDLE_LISTEN_FDS); the new master tells the old one
 * to drain once its workers serve, or dies and the old one keeps serving. */
#include "process/master_int.h"

#include "base/log.h"
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

void master_upgrade(master *m) {
    if (m->upgrade_pid > 0) {
        log_msg(LOG_WARNING, "USR2: an upgrade (pid %d) is already under way", (int)m->upgrade_pid);
        return;
    }
    if (!m->cmdline) {
        log_msg(LOG_ERROR, "USR2: this master could not read its command line; cannot upgrade");
        return;
    }
    const char *pidf = m->mo->pid_file;
    char old[PATH_MAX + 8];
    if (pidf) {
        snprintf(old, sizeof old, "%s.oldbin", pidf);
        if (rename(pidf, old) != 0)
            log_msg(LOG_WARNING, "USR2: cannot move %s to %s: %s", pidf, old, strerror(errno));
    }
    char fds[256] = "", self[32];
    size_t len = 0;
    for (int i = 0; i < server_nlisteners(m->s); i++)
        if (server_listener_fd(m->s, i) >= 0)
            len += (size_t)snprintf(fds + len, sizeof fds - len, "%s%d", len ? "," : "",
                                    server_listener_fd(m->s, i));
    snprintf(self, sizeof self, "%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        for (int k = 0; k < NHANDLED; k++)
            signal(master_signals[k], SIG_DFL);
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        sigprocmask(SIG_SETMASK, &m->orig, NULL);
        for (int i = 0; i < server_nlisteners(m->s); i++) {
            int fd = server_listener_fd(m->s, i);
            if (fd >= 0)
                fcntl(fd, F_SETFD, 0); /* the new binary inherits the sockets */
        }
        setenv("SPINDLE_LISTEN_FDS", fds, 1);
        setenv("SPINDLE_OLD_MASTER", self, 1);
        char *argv[256];
        int argc = 0;
        for (size_t off2 = 0; off2 < m->cmdline_len && argc < 255;) {
            argv[argc++] = m->cmdline + off2;
            off2 += strlen(m->cmdline + off2) + 1;
        }
        argv[argc] = NULL;
        execv(m->exe, argv);
        log_msg(LOG_ERROR, "USR2: cannot run %s: %s", m->exe, strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        log_msg(LOG_ERROR, "USR2: fork: %s", strerror(errno));
        if (pidf)
            rename(old, pidf);
        return;
    }
    m->upgrade_pid = pid;
    log_msg(LOG_INFO, "USR2: started the new master %d from %s; this one drains once it is ready",
            (int)pid, m->exe);
}

/* The new master failed before taking over: keep serving, restore the pid file. */
void master_upgrade_failed(master *m, int status) {
    char how[96];
    master_describe_exit(status, how, sizeof how);
    log_msg(LOG_ERROR, "USR2: the new master %d %s; this master keeps serving", (int)m->upgrade_pid,
            how);
    m->upgrade_pid = 0;
    if (m->mo->pid_file) {
        char old[PATH_MAX + 8];
        snprintf(old, sizeof old, "%s.oldbin", m->mo->pid_file);
        rename(old, m->mo->pid_file);
    }
}

void master_read_self(master *m) {
    ssize_t n = readlink("/proc/self/exe", m->exe, sizeof m->exe - 1);
    m->exe[n > 0 ? n : 0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 65536;
    m->cmdline = malloc(cap);
    ssize_t r = m->cmdline ? read(fd, m->cmdline, cap - 1) : -1;
    close(fd);
    if (r <= 0) {
        free(m->cmdline);
        m->cmdline = NULL;
        return;
    }
    m->cmdline[r] = '\0';
    m->cmdline_len = (size_t)r;
}
