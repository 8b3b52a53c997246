/* reload_watch.c — --reload's eyes: the master watches files with inotify
 * (their directories, so that an editor's write-then-rename is seen), and
 * the workers tell it which files their application loaded, one path a
 * line through a pipe they inherit (a write under PIPE_BUF is atomic). */
#include "process/master.h"

#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MAX 4096

typedef struct watched {
    int wd;     /* the directory's watch */
    char *path; /* the file */
    const char *base;
} watched;

static int ino_fd = -1, pipe_r = -1, pipe_w = -1, nwatched;
static watched files[WATCH_MAX];
static char pending[PATH_MAX + 1]; /* a line the last read cut */
static size_t npending;

int reload_watch_open(void) {
    int p[2];
    ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ino_fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
        log_msg(LOG_ERROR, "--reload: cannot watch files: %s", strerror(errno));
        return -1;
    }
    pipe_r = p[0];
    pipe_w = p[1];
    fcntl(pipe_r, F_SETFL, O_NONBLOCK);
    return 0;
}

void reload_watch_add(const char *path) {
    if (ino_fd < 0 || !path[0] || path[0] != '/')
        return;
    for (int i = 0; i < nwatched; i++)
        if (strcmp(files[i].path, path) == 0)
            return;
    if (nwatched == WATCH_MAX) {
        log_msg(LOG_WARNING, "--reload: more than %d files; %s is not watched", WATCH_MAX, path);
        return;
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t dl = slash == path ? 1 : (size_t)(slash - path);
    if (dl >= sizeof dir)
        return;
    memcpy(dir, path, dl);
    dir[dl] = '\0';
    int wd = inotify_add_watch(ino_fd, dir,
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB);
    char *copy = strdup(path);
    if (wd < 0 || !copy) {
        log_msg(LOG_WARNING, "--reload: cannot watch %s: %s", path, strerror(errno));
        free(copy);
        return;
    }
    files[nwatched++] = (watched){.wd = wd, .path = copy, .base = copy + (slash - path) + 1};
    log_msg(LOG_DEBUG, "--reload: watching %s", path);
}

void reload_watch_report(const char *path) {
    char line[PATH_MAX + 2];
    size_t n = strlen(path);
    if (pipe_w < 0 || n == 0 || n > PATH_MAX)
        return;
    memcpy(line, path, n);
    line[n] = '\n';
    /* Non-blocking: a full pipe (the master drains it every tick) is
     * waited for a bounded second, so a stopping master cannot wedge us. */
    for (int tries = 0; tries < 100; tries++) {
        if (write(pipe_w, line, n + 1) >= 0)
            return;
        if (errno != EINTR && errno != EAGAIN)
            return;
        if (errno == EAGAIN) {
            struct timespec t = {0, 10 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
    }
    log_msg(LOG_WARNING, "--reload: the master is not reading; %s is not watched", path);
}

void reload_watch_child(void) {
    if (ino_fd >= 0)
        close(ino_fd);
    if (pipe_r >= 0)
        close(pipe_r);
    ino_fd = pipe_r = -1;
    if (pipe_w >= 0)
        fcntl(pipe_w, F_SETFL, O_NONBLOCK);
}

/* The workers' lines since the last call: each a file to watch. */
static void read_reports(void) {
    char buf[8192];
    ssize_t n;
    while ((n = read(pipe_r, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (npending < PATH_MAX)
                    pending[npending++] = buf[i];
                continue;
            }
            pending[npending] = '\0';
            reload_watch_add(pending);
            npending = 0;
        }
    }
}

const char *reload_watch_changed(void) {
    if (ino_fd < 0)
        return NULL;
    read_reports();
    static char changed[PATH_MAX];
    const char *hit = NULL;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(ino_fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            for (int i = 0; !hit && ev->len && i < nwatched; i++)
                if (files[i].wd == ev->wd && strcmp(files[i].base, ev->name) == 0) {
                    snprintf(changed, sizeof changed, "%s", files[i].path);
                    hit = changed;
                }
            p += sizeof *ev + ev->len;
        }
    }
    return hit;
}
