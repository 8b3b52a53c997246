/* listen_fds.c — adopting inherited listening sockets (see listen_fds.h). */
#include "process/listen_fds.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int is_listener(int fd) {
    int v = 0;
    socklen_t len = sizeof v;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v;
}

static int take(int fd, int *fds, int n, int max) {
    if (n >= max || !is_listener(fd))
        return n;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fds[n] = fd;
    return n + 1;
}

int listen_fds_inherited(int *fds, int max, int *from_systemd) {
    int n = 0;
    *from_systemd = 0;
    const char *pid = getenv("LISTEN_PID"), *count = getenv("LISTEN_FDS");
    if (pid && count && atol(pid) == (long)getpid()) {
        int k = atoi(count);
        for (int i = 0; i < k; i++)
            n = take(3 + i, fds, n, max);
        *from_systemd = n > 0;
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    const char *up = getenv("SPINDLE_LISTEN_FDS");
    if (up) {
        for (const char *p = up; *p;) {
            char *end;
            long fd = strtol(p, &end, 10);
            if (end == p)
                break;
            n = take((int)fd, fds, n, max);
            p = *end == ',' ? end + 1 : end;
        }
        unsetenv("SPINDLE_LISTEN_FDS");
    }
    return n;
}
