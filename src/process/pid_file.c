/* pid_file.c — the master's pid file: written once the workers serve,
 * removed at exit only if it still names this process (after an upgrade
 * the new master owns it). */
#include "process/master_int.h"

#include "base/log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void pid_file_write(const char *path) {
    if (!path)
        return;
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        log_msg(LOG_ERROR, "cannot write the pid file %s: %s", path, strerror(errno));
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
