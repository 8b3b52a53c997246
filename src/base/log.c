/* log.c — the error log (see log.h): one write(2) per line, so lines from
 * several workers sharing stderr never interleave mid-line; --error-log
 * FILE is opened onto fd 2 itself, so every stderr write lands there. Text
 * lines, or JSON ones (--error-log-format json) for log collectors. */
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

static int json_lines; /* --error-log-format json; set before the workers fork */

static const char *log_path;                /* --error-log FILE; NULL: stderr as inherited */
static long owner_uid = -1, owner_gid = -1; /* log_set_owner */

void log_set_owner(long uid, long gid) {
    owner_uid = uid;
    owner_gid = gid;
}

/* Opens path (O_APPEND: the processes sharing it never overwrite each
 * other's lines) and puts it on fd 2; its own fd is closed. */
static int open_onto_stderr(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    /* A file the master made as root after logrotate moved the old one
     * would refuse the workers' own reopen: it becomes theirs. */
    if (owner_uid >= 0 && geteuid() == 0 && fchown(fd, (uid_t)owner_uid, (gid_t)owner_gid) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
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

log_level log_get_level(void) {
    return min_level;
}

void log_set_json(int on) {
    json_lines = on;
}

int log_parse_level(const char *name) {
    for (int i = 0; i <= LOG_CRITICAL; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

/* The length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates), or 0. */
static int utf8_len(const unsigned char *s) {
    unsigned char c = s[0];
    int len = c >= 0xc2 && c <= 0xdf   ? 2
              : c >= 0xe0 && c <= 0xef ? 3
              : c >= 0xf0 && c <= 0xf4 ? 4
                                       : 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (!len || s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* s as a JSON string's inside into out[n..cap): quotes, backslashes and
 * control characters escaped, valid UTF-8 kept, any other byte written as
 * \u00XX (read as Latin-1, as the access log does: a request line in a
 * message may hold anything), so every line parses. The new length; it
 * stops short rather than split an escape. */
static int json_escape(char *out, int n, int cap, const char *s) {
    static const char hex[] = "0123456789abcdef";
    for (; *s && n < cap - 7; s++) {
        unsigned char c = (unsigned char)*s;
        int l;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else if (c >= 0x20 && c < 0x7f) {
            out[n++] = (char)c;
        } else if (c >= 0x80 && (l = utf8_len((const unsigned char *)s)) > 0) {
            memcpy(out + n, s, (size_t)l);
            n += l;
            s += l - 1;
        } else
            n += snprintf(out + n, (size_t)(cap - n), "\\u00%c%c", hex[c >> 4], hex[c & 15]);
    }
    return n;
}

static void vlog(log_level level, const char *fmt, va_list ap) {
    char line[2560], msg[2048]; /* on coroutine stacks too: kept small */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        msg[0] = '\0';
    if (json_lines) {
        /* The access log's JSON shape: ISO 8601 UTC time with ms. */
        char time_s[40];
        memcpy(time_s, line, (size_t)n);
        snprintf(time_s + n, sizeof time_s - (size_t)n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
        n = snprintf(line, sizeof line,
                     "{\"time\":\"%s\",\"level\":\"%s\",\"pid\":%d,\"message\":\"", time_s,
                     level_names[level], (int)getpid());
        n = json_escape(line, n, (int)sizeof line - 3, msg);
        line[n++] = '"';
        line[n++] = '}';
    } else {
        n += snprintf(line + n, sizeof line - (size_t)n, "Z [%d] %s: %s", (int)getpid(),
                      level_names[level], msg);
        if (n > (int)sizeof line - 2)
            n = (int)sizeof line - 2;
    }
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
