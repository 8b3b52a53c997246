/* log.c — the error log (see log.h): one write(2) per line, so lines from
 * several workers sharing stderr never interleave mid-line; --error-log
 * FILE is opened onto fd 2 itself, so every stderr write lands there. */
#include "base/log.h"

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static log_level min_level = LOG_INFO; /* set once at start-up, before workers fork */

static const char *const level_names[] = {"debug", "info", "warning", "error", "critical"};

static const char *log_path; /* --error-log FILE; NULL: stderr as inherited */

/* Opens path (O_APPEND: the processes sharing it never overwrite each
 * other's lines) and puts it on fd 2; its own fd is closed. */
static int open_onto_stderr(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (fd != STDERR_FILENO) {
        int rc = dup2(fd, STDERR_FILENO) < 0 ? -errno : 0;
        close(fd);
        return rc;
    }
    return 0;
}

int log_open(const char *path) {
    if (!path || strcmp(path, "-") == 0)
        return 0;
    int rc = open_onto_stderr(path);
    if (rc == 0)
        log_path = path;
    return rc;
}

void log_reopen(void) {
    if (!log_path)
        return;
    int rc = open_onto_stderr(log_path);
    if (rc < 0)
        log_msg(LOG_ERROR, "error log: cannot reopen %s: %s; still writing to the old file",
                log_path, strerror(-rc));
}

void log_set_level(log_level level) {
    min_level = level;
}

int log_parse_level(const char *name) {
    for (int i = 0; i <= LOG_CRITICAL; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

static void vlog(log_level level, const char *fmt, va_list ap) {
    char line[2048];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, " [%d] %s: ", (int)getpid(),
                  level_names[level]);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        m = 0;
    n = n + m >= (int)sizeof line - 1 ? (int)sizeof line - 2 : n + m;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w; /* nowhere left to report a failing error log */
}

void log_msg(log_level level, const char *fmt, ...) {
    if (level < min_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void log_ratelimited(int64_t *last, uint64_t *suppressed, log_level level, const char *fmt, ...) {
    if (level < min_level)
        return;
    int64_t now = clock_mono_ms();
    if (*last && now - *last < 1000) {
        (*suppressed)++;
        return;
    }
    if (*suppressed)
        log_msg(level, "(%llu similar messages suppressed)", (unsigned long long)*suppressed);
    *last = now;
    *suppressed = 0;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}
