/* access_log.h — the access log: lines formatted per request into a
 * per-worker buffer, written at most once a second (and when the buffer
 * fills, and at exit), so logging never waits on the disk per request;
 * reopened on USR1 for logrotate. */
#ifndef SPINDLE_ACCESS_LOG_H
#define SPINDLE_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct access_log access_log;

/* path "-" is stdout. fmt NULL: the combined log format. Opened in each
 * worker after the fork. NULL, errno set, on failure. */
access_log *access_log_open(const char *path, const char *fmt);

/* One line's fields; strings are slices (escaped when written). */
typedef struct access_entry {
    const char *client;
    const char *method, *target;
    size_t method_len, target_len;
    int minor_version;
    int status;
    uint64_t bytes;
    const char *referer, *agent;
    size_t referer_len, agent_len;
    uint64_t duration_us;
} access_entry;

void access_log_write(access_log *a, const access_entry *e);
/* Writes what is buffered. Errors (a full disk) drop the lines and are
 * logged at most once a second. */
void access_log_flush(access_log *a);
/* Flushes, then opens the path again (after logrotate moved the file). */
void access_log_reopen(access_log *a);
void access_log_close(access_log *a);

/* Checks a format string: 0, or -1 with an unknown %-letter. */
int access_log_check_format(const char *fmt, char *bad);

#endif
