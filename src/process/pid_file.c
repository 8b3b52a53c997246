/* pid_file.c — the master's pid file: written once the workers serve,
 * removed at exit only if it still names this process (after an upgrade
 * the new master owns it). Written to a fresh, randomly named file in the
 * same directory (O_EXCL|O_NOFOLLOW: never through a planted symlink, never
 * into someone else's file), then renamed over FILE. */
#include "process/master_int.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates PATH.<six random letters> exclusively; its fd, name in tmp. */
static int create_tmp(const char *path, char *tmp, size_t cap) {
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int tries = 0; tries < 100; tries++) {
        unsigned char r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return -1;
        char sfx[sizeof r + 1];
        for (size_t i = 0; i < sizeof r; i++)
            sfx[i] = abc[r[i] % (sizeof abc - 1)];
        sfx[sizeof r] = '\0';
        if (snprintf(tmp, cap, "%s.%s", path, sfx) >= (int)cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

void pid_file_write(const char *path) {
    if (!path)
        return;
    char tmp[PATH_MAX + 16], line[24];
    int fd = create_tmp(path, tmp, sizeof tmp);
    if (fd < 0) {
        log_msg(LOG_ERROR, "cannot write the pid file %s: %s", path, strerror(errno));
        return;
    }
    int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    /* 0644 whatever the umask: whoever reads the pid file may read it. */
    int ok = fchmod(fd, 0644) == 0 && write(fd, line, (size_t)n) == n;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        log_msg(LOG_ERROR, "cannot write the pid file %s: %s", path, strerror(err));
    }
}

void pid_file_remove(const char *path) {
    if (!path)
        return;
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    if (pid == (int)getpid())
        unlink(path);
}
