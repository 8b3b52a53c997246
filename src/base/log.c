/* log.c — the error log (see log.h): one write(2) per line, so lines from
 * several workers sharing stderr never interleave mid-line. */
#include "base/log.h"

#include "base/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static log_level min_level = LOG_INFO; /* set once at start-up, before workers fork */

static const char *const level_names[] = {"debug", "info", "warning", "error", "critical"};

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
