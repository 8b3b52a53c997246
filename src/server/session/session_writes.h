/* session_writes.h — a blocking store's calls grouped, each time the thread
 * pool is free for them: saves and deletes in one transaction (group
 * commit), or loads and writes in one pipelined round trip (Redis). The
 * worker's queue, and the call a handler's coroutine makes. Used by
 * session_config.c for every blocking store (session_store.h). */
#ifndef SPINDLE_SESSION_WRITES_H
#define SPINDLE_SESSION_WRITES_H

#include "server/session/session_store.h"

#include <stddef.h>
#include <stdint.h>

enum { SESS_WRITE_SAVE, SESS_WRITE_DEL, SESS_WRITE_LOAD };

/* One call (a write, or a load), on its caller's stack until it is done. */
typedef struct sess_write {
    int op; /* SESS_WRITE_* */
    const char *id;
    const char *blob;
    size_t len;
    int64_t expiry, now;
    char *out; /* a load's blob (malloc'd, may be NULL when out_len is 0) */
    size_t out_len;
    int rc;            /* the store's answer, once done (a load: -ENOENT if absent) */
    int done;          /* its group has committed (or failed) */
    struct task *wait; /* the writer, while it waits for that */
    struct sess_write *next;
} sess_write;

/* A worker's queue: writes not yet in a group, and whether a group is on
 * the pool now. Zeroed, it is empty (each forked worker starts so). */
typedef struct sess_writes {
    sess_write *head, **tail;
    int busy;
    unsigned long groups, writes; /* how many groups took how many writes */
} sess_writes;

/* At most this many writes in one transaction, so that one worker never
 * holds the database's write lock long while others wait for it. */
#define SESS_WRITES_GROUP_MAX 256

/* Runs w on st through q: joins the queue, and either takes the queue to
 * the pool itself (no group running) or waits for the group that takes it.
 * Returns w's own result, as the store's save or del would have. Only in a
 * task (-EPERM otherwise, like sp_run_blocking). */
int sess_writes_run(sess_writes *q, sess_store *st, sess_write *w);

/* Runs w on st at once, on this thread, and returns its result (a load's
 * blob in w->out, freed first if an earlier attempt left one). */
int sess_write_one(sess_store *st, sess_write *w);

#endif
