/* access_log.h — the access log: lines formatted per request into a
 * per-worker buffer, written at most once a second (and when the buffer
 * fills, and at exit), so logging never waits on the disk per request;
 * reopened on USR1 for logrotate. */
#ifndef SPINDLE_ACCESS_LOG_H
#define SPINDLE_ACCESS_LOG_H

#include "server/access_format.h"

typedef struct access_log access_log;

/* path "-" is stdout. fmt NULL: the combined log format; "json": JSON lines. Opened in each
 * worker after the fork. NULL, errno set, on failure. */
access_log *access_log_open(const char *path, const char *fmt);

void access_log_write(access_log *a, const access_entry *e);
/* Writes what is buffered. Errors (a full disk) drop the lines and are
 * logged at most once a second. */
void access_log_flush(access_log *a);
/* Flushes, then opens the path again (after logrotate moved the file). */
void access_log_reopen(access_log *a);
void access_log_close(access_log *a);

#endif
