/* access_log.c — the buffered access log (see access_log.h): lines are
 * formatted (access_format.c) straight into a per-worker buffer, written
 * out when it fills, once a second and at exit. */
#include "server/access_log.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCESS_BUF  (64 * 1024)
#define ACCESS_LINE (32 * 1024) /* room kept for one line: a JSON line always fits */
#define COMBINED    "%h %l %u %t \"%r\" %s %b \"%f\" \"%a\""

struct access_log {
    int fd;
    int own_fd; /* opened here (not stdout) */
    char *path;
    char *fmt;
    char *buf;
    size_t len;
    int json;
    access_clock clock;
    int64_t err_last;
    uint64_t err_suppressed;
};

static int open_path(access_log *a) {
    if (strcmp(a->path, "-") == 0) {
        a->fd = STDOUT_FILENO;
        a->own_fd = 0;
        return 0;
    }
    int fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    a->fd = fd;
    a->own_fd = 1;
    return 0;
}

access_log *access_log_open(const char *path, const char *fmt) {
    access_log *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->path = strdup(path);
    a->fmt = strdup(fmt ? fmt : COMBINED);
    a->json = fmt && strcmp(fmt, ACCESS_FORMAT_JSON) == 0;
    a->buf = malloc(ACCESS_BUF);
    if (!a->path || !a->fmt || !a->buf || open_path(a) < 0) {
        int err = errno;
        free(a->path);
        free(a->fmt);
        free(a->buf);
        free(a);
        errno = err;
        return NULL;
    }
    return a;
}

void access_log_flush(access_log *a) {
    size_t off = 0;
    while (off < a->len) {
        ssize_t w = write(a->fd, a->buf + off, a->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_ratelimited(&a->err_last, &a->err_suppressed, LOG_ERROR,
                            "access log %s: %s; dropping %zu bytes of log lines (free some "
                            "space; logging resumes by itself)",
                            a->path, w < 0 ? strerror(errno) : "short write", a->len - off);
            break;
        }
        off += (size_t)w;
    }
    a->len = 0;
}

void access_log_reopen(access_log *a) {
    access_log_flush(a);
    if (!a->own_fd)
        return;
    int old = a->fd;
    if (open_path(a) < 0) {
        log_msg(LOG_ERROR, "access log: cannot reopen %s: %s; still writing to the old file",
                a->path, strerror(errno));
        a->fd = old;
        return;
    }
    close(old);
}

void access_log_close(access_log *a) {
    if (!a)
        return;
    access_log_flush(a);
    if (a->own_fd)
        close(a->fd);
    free(a->path);
    free(a->fmt);
    free(a->buf);
    free(a);
}

void access_log_write(access_log *a, const access_entry *e) {
    if (ACCESS_BUF - a->len < ACCESS_LINE)
        access_log_flush(a);
    char *out = a->buf + a->len;
    size_t cap = ACCESS_BUF - a->len;
    a->len += a->json ? access_format_json(e, &a->clock, out, cap)
                      : access_format_text(a->fmt, e, &a->clock, out, cap);
}
