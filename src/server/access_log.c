/* access_log.c — the buffered access log (see access_log.h). Format
 * letters follow Apache's: %h client, %l and %u "-", %t [time], %r request
 * line, %s status, %b bytes (or -), %f referer, %a user agent, %D request
 * time in microseconds, %p pid, %% a percent sign. */
#include "server/access_log.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCESS_BUF   (64 * 1024)
#define ACCESS_FLUSH (48 * 1024) /* flush early past this, so a line always fits */
#define COMBINED     "%h %l %u %t \"%r\" %s %b \"%f\" \"%a\""

struct access_log {
    int fd;
    int own_fd; /* opened here (not stdout) */
    char *path;
    char *fmt;
    char *buf;
    size_t len;
    time_t tsec; /* the second cached in ttext */
    char ttext[40];
    int64_t err_last;
    uint64_t err_suppressed;
};

int access_log_check_format(const char *fmt, char *bad) {
    for (const char *p = fmt; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        if (!*p || !strchr("hlutrsbfaDp%", *p)) {
            *bad = *p ? *p : '%';
            return -1;
        }
    }
    return 0;
}

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

static void put(access_log *a, const char *s, size_t n) {
    if (a->len + n > ACCESS_BUF)
        n = ACCESS_BUF - a->len;
    memcpy(a->buf + a->len, s, n);
    a->len += n;
}

/* Client-supplied text, with quotes, backslashes and non-printables
 * escaped so a request cannot forge log lines. At most 1 KiB of it. */
static void put_escaped(access_log *a, const char *s, size_t n) {
    if (!s || !n) {
        put(a, "-", 1);
        return;
    }
    if (n > 1024)
        n = 1024;
    for (size_t i = 0; i < n && a->len + 4 < ACCESS_BUF; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            a->buf[a->len++] = (char)c;
        } else {
            static const char hex[] = "0123456789abcdef";
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            put(a, e, 4);
        }
    }
}

static void put_num(access_log *a, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(a, tmp + sizeof tmp - n, (size_t)n);
}

void access_log_write(access_log *a, const access_entry *e) {
    if (a->len > ACCESS_FLUSH)
        access_log_flush(a);
    for (const char *p = a->fmt; *p; p++) {
        if (*p != '%') {
            put(a, p, 1);
            continue;
        }
        switch (*++p) {
        case 'h':
            put(a, e->client, strlen(e->client));
            break;
        case 'l':
        case 'u':
            put(a, "-", 1);
            break;
        case 't': {
            time_t now = time(NULL);
            if (now != a->tsec) {
                struct tm tm;
                localtime_r(&now, &tm);
                strftime(a->ttext, sizeof a->ttext, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
                a->tsec = now;
            }
            put(a, a->ttext, strlen(a->ttext));
            break;
        }
        case 'r':
            put_escaped(a, e->method, e->method_len);
            put(a, " ", 1);
            put_escaped(a, e->target, e->target_len);
            put(a, e->minor_version ? " HTTP/1.1" : " HTTP/1.0", 9);
            break;
        case 's':
            put_num(a, (uint64_t)e->status);
            break;
        case 'b':
            if (e->bytes)
                put_num(a, e->bytes);
            else
                put(a, "-", 1);
            break;
        case 'f':
            put_escaped(a, e->referer, e->referer_len);
            break;
        case 'a':
            put_escaped(a, e->agent, e->agent_len);
            break;
        case 'D':
            put_num(a, e->duration_us);
            break;
        case 'p':
            put_num(a, (uint64_t)getpid());
            break;
        case '%':
            put(a, "%", 1);
            break;
        default:
            p--; /* checked at start-up; keep going */
            break;
        }
        if (!*p)
            break;
    }
    put(a, "\n", 1);
}
