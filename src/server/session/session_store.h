/* session_store.h — what a session store does, whichever engine holds the
 * data (memory, SQLite, Redis): load, save and delete one session's blob by
 * id, with an absolute expiry in unix seconds. Blocking stores are called on
 * the loop's thread pool (session_writes.c); each serializes its own calls. */
#ifndef SPINDLE_SESSION_STORE_H
#define SPINDLE_SESSION_STORE_H

#include "base/redis_url.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sess_store sess_store;
struct sess_write;

typedef struct sess_store_ops {
    const char *name;
    int blocking; /* 1: may sleep (disk, network): never call on the loop */
    /* Connects / opens in this process. 0 or -errno. */
    int (*open)(sess_store *st);
    /* 0 with *blob (malloc'd, may be NULL when len is 0) and *len; -ENOENT
     * if absent or expired at now; -errno. */
    int (*load)(sess_store *st, const char *id, int64_t now, char **blob, size_t *len);
    /* Stores blob under id until expiry. 0 or -errno. */
    int (*save)(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                int64_t now);
    /* Forgets id (absent is fine). 0 or -errno. */
    int (*del)(sess_store *st, const char *id);
    /* Closes what open opened (this process's only). */
    void (*close)(sess_store *st);
    /* Optional (NULL: every write stands alone): a transaction around a
     * group of saves and deletes (session_writes.c), so a group pays one
     * commit. begin: 0 or -errno; end(ok 1) commits, end(ok 0) rolls back
     * (also when the store already rolled back on its own); 0 or -errno. */
    int (*begin)(sess_store *st);
    int (*end)(sess_store *st, int ok);
    /* Optional, instead of begin/end: runs a group of loads, saves and
     * deletes (a list, session_writes.h) in order as one round trip (Redis:
     * pipelined), each call's rc and a load's blob filled in. 0, or -errno
     * when the group as a whole failed: each call is then run again alone
     * (which frees the blob a failed attempt left). */
    int (*group)(sess_store *st, struct sess_write *first);
} sess_store_ops;

struct sess_store {
    const sess_store_ops *ops;
    char *where;            /* the path (SQLite) or host (Redis) */
    int port;               /* Redis */
    void *impl;             /* the engine's handle; NULL until opened */
    pid_t pid;              /* the process that opened impl (a forked child reopens) */
    pthread_mutex_t mu;     /* serializes the pool threads' calls on impl */
    unsigned long saves;    /* for periodic purges of expired entries */
    int down;               /* Redis: unreachable since the last call (logged once) */
    redis_url url;          /* Redis: the address, password, database, TLS */
    char *tls_ca;           /* rediss://: ?tls_ca=PATH, else the system's CAs */
    struct ssl_ctx_st *tls; /* rediss://: the client context, made at the configure */
};

extern const sess_store_ops sess_memory_ops;
extern const sess_store_ops sess_sqlite_ops;
extern const sess_store_ops sess_redis_ops;

#endif
