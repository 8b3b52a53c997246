/* access_log.h — the access log: lines formatted per request into a
 * per-worker buffer, written at most once a second (and when the buffer
 * fills, and at exit), so logging never waits on the disk per request;
 * reopened on USR1 for logrotate. The buffer may be one the caller owns
 * (shared memory), so the lines outlive a worker that crashes. */
#ifndef SPINDLE_ACCESS_LOG_H
#define SPINDLE_ACCESS_LOG_H

#include "server/access_format.h"

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct access_log access_log;

/* Where lines are formatted. Whole lines only are ever published: the
 * writer formats a line past len, then stores the new len (release), so a
 * reader that loads len (acquire) sees only complete lines at base. len
 * goes back to 0 after each flush. One writer; a reader other than the
 * writer reads only when the writer is stopped or gone. */
typedef struct access_buffer {
    _Atomic size_t len;
    size_t cap; /* the bytes at base, set by its owner: at least ACCESS_BUFFER_MIN */
    /* The log's path, written by access_log_open, so that whoever holds the
     * buffer can write out what a dead writer left ("" if too long). */
    char path[PATH_MAX];
    /* The lines, at a fixed offset from len: the hot path reaches both
     * through one pointer. The log uses ACCESS_BUFFER_MIN of cap. */
    char base[];
} access_buffer;

/* The buffer an access log needs: room for two of the longest lines. */
#define ACCESS_BUFFER_MIN (64 * 1024)

/* The next access_log_open in this process formats into b (memory the
 * caller owns and keeps mapped, its cap set; lines already
 * published there are kept and written with the first flush) instead of a
 * buffer of its own. NULL: its own again. */
void access_log_use_buffer(access_buffer *b);

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

/* The reader's view of b: the published bytes (whole lines) at b->base. */
static inline size_t access_buffer_pending(const access_buffer *b) {
    return atomic_load_explicit(&((access_buffer *)b)->len, memory_order_acquire);
}
/* For the holder of a buffer whose writer died: appends the published lines
 * to b->path (O_APPEND, as the writer did; "-": stdout) and empties b.
 * The bytes written (0: nothing was pending), or -errno. */
ssize_t access_buffer_salvage(access_buffer *b);

#endif
