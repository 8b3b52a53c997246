/* access_log.c — the buffered access log (see access_log.h): lines are
 * formatted (access_format.c) straight into a per-worker buffer (its own,
 * or one the caller owns: shared memory that outlives a crash), written
 * out when it fills, once a second and at exit; and a server's log in a
 * worker (opened after the fork, reopened on USR1, flushed, closed). */
#include "server/access_log.h"

#include "server/server.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCESS_LINE (32 * 1024) /* room kept for one line: a JSON line always fits */
_Static_assert(ACCESS_BUFFER_MIN >= 2 * ACCESS_LINE, "a buffer holds two of the longest lines");
#define COMBINED "%h %l %u %t \"%r\" %s %b \"%f\" \"%a\""

struct access_log {
    int fd;
    int own_fd; /* opened here (not stdout) */
    char *path;
    char *fmt;
    access_buffer *b; /* own (malloc'd, own_buf) or the caller's */
    int own_buf;
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

static access_buffer *provided; /* for the next open (access_log_use_buffer) */

void access_log_use_buffer(access_buffer *b) {
    provided = b;
}

/* An own buffer: the struct and its bytes in one allocation. */
static access_buffer *own_buffer(void) {
    access_buffer *b = malloc(sizeof *b + ACCESS_BUFFER_MIN);
    if (!b)
        return NULL;
    b->cap = ACCESS_BUFFER_MIN;
    atomic_init(&b->len, 0);
    b->path[0] = '\0';
    return b;
}

access_log *access_log_open(const char *path, const char *fmt) {
    access_log *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->path = strdup(path);
    a->fmt = strdup(fmt ? fmt : COMBINED);
    a->json = fmt && strcmp(fmt, ACCESS_FORMAT_JSON) == 0;
    a->own_buf = !provided || provided->cap < ACCESS_BUFFER_MIN;
    a->b = a->own_buf ? own_buffer() : provided;
    if (!a->path || !a->fmt || !a->b || open_path(a) < 0) {
        int err = errno;
        free(a->path);
        free(a->fmt);
        if (a->own_buf)
            free(a->b);
        free(a);
        errno = err;
        return NULL;
    }
    if (!a->own_buf) {
        /* Whoever holds the buffer writes out what a crash left there. */
        size_t n = strlen(path);
        if (n < sizeof a->b->path) {
            memcpy(a->b->path, path, n + 1);
        } else {
            a->b->path[0] = '\0';
            log_msg(LOG_WARNING, "access log: its path is too long for the lines of a "
                                 "crashed worker to be recovered");
        }
    }
    return a;
}

/* Writes len bytes at p to fd; 0, or the bytes not written (errno set,
 * or 0 for a short write). */
static size_t write_all(int fd, const char *p, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = 0;
            return len - off;
        }
        off += (size_t)w;
    }
    return 0;
}

/* The published length goes to 0 only once the bytes are written: a writer
 * killed in between has its lines written twice, never lost. */
void access_log_flush(access_log *a) {
    access_buffer *b = a->b;
    size_t len = atomic_load_explicit(&b->len, memory_order_relaxed);
    size_t left = write_all(a->fd, b->base, len);
    if (left)
        log_ratelimited(&a->err_last, &a->err_suppressed, LOG_ERROR,
                        "access log %s: %s; dropping %zu bytes of log lines (free some "
                        "space; logging resumes by itself)",
                        a->path, errno ? strerror(errno) : "short write", left);
    atomic_store_explicit(&b->len, 0, memory_order_release);
}

ssize_t access_buffer_salvage(access_buffer *b) {
    size_t len = access_buffer_pending(b);
    if (!len)
        return 0;
    if (len > b->cap) /* not a length the writer published: keep to the buffer */
        len = b->cap;
    int fd = STDOUT_FILENO;
    if (!b->path[0])
        return -ENAMETOOLONG;
    if (strcmp(b->path, "-") != 0)
        fd = open(b->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t left = write_all(fd, b->base, len);
    int err = errno;
    if (fd != STDOUT_FILENO)
        close(fd);
    atomic_store_explicit(&b->len, 0, memory_order_release);
    if (left)
        return err ? -err : -EIO;
    return (ssize_t)len;
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
    if (a->own_buf)
        free(a->b);
    free(a);
}

/* The line is formatted past the published length, then published whole
 * (release: its bytes are visible before the length that covers them; on
 * x86 a plain store). The buffer's size is the constant, not b->cap: one
 * load fewer per request. */
void access_log_write(access_log *a, const access_entry *e) {
    access_buffer *b = a->b;
    size_t len = atomic_load_explicit(&b->len, memory_order_relaxed);
    if (ACCESS_BUFFER_MIN - len < ACCESS_LINE) {
        access_log_flush(a);
        len = 0;
    }
    char *out = b->base + len;
    size_t cap = ACCESS_BUFFER_MIN - len;
    size_t n = a->json ? access_format_json(e, &a->clock, out, cap)
                       : access_format_text(a->fmt, e, &a->clock, out, cap);
    /* Read again rather than kept across the call: fewer registers saved. */
    b = a->b;
    len = atomic_load_explicit(&b->len, memory_order_relaxed);
    atomic_store_explicit(&b->len, len + n, memory_order_release);
}

/* ---- a server's access log, in each worker ------------------------------ */

void server_set_access_log(sp_server *s, const char *path, const char *format) {
    s->access_log_path = path;
    s->access_log_format = format;
}

int server_open_access_log(sp_server *s) {
    if (!s->access_log_path || s->access_log)
        return 0;
    s->pid = (int)getpid(); /* in the worker, after the fork */
    s->access_log = access_log_open(s->access_log_path, s->access_log_format);
    if (s->access_log)
        return 0;
    int rc = -errno;
    log_msg(LOG_CRITICAL, "cannot open the access log %s: %s", s->access_log_path, strerror(-rc));
    return rc;
}

void server_reopen_access_log(sp_server *s) {
    if (s->access_log)
        access_log_reopen(s->access_log); /* logrotate moved the file */
}

void server_flush_access_log(sp_server *s) {
    if (s->access_log)
        access_log_flush(s->access_log);
}

void server_close_access_log(sp_server *s) {
    access_log_close(s->access_log);
    s->access_log = NULL;
}
