/* bus.h — the bus's insides, shared by the front (bus.c: configuration,
 * subscribers' queues, recv) and its backends (bus_memory.c, bus_shm.c,
 * bus_redis.c):
 * refcounted messages, the subscriber, and what a backend does. */
#ifndef SPINDLE_BUS_H
#define SPINDLE_BUS_H

#include "base/list.h"
#include "base/redis_url.h"
#include "loop/loop.h"
#include "server/handler.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The defaults of the limits (spindle.h documents them). */
#define BUS_RETAIN       10000
#define BUS_RETAIN_BYTES (16u << 20)
#define BUS_MAX_MESSAGE  (1u << 20)
#define BUS_QUEUE        1000
#define BUS_QUEUE_BYTES  (1u << 20)
#define BUS_HIST_BATCH   64 /* history messages fetched per step */

typedef struct bus_limits {
    size_t retain, retain_bytes, max_message, queue, queue_bytes;
} bus_limits;

/* An id, "ms-seq", as two numbers: compared in that order. */
typedef struct bus_id {
    uint64_t ms, seq;
} bus_id;

static inline int bus_id_cmp(bus_id a, bus_id b) {
    return a.ms != b.ms ? (a.ms < b.ms ? -1 : 1) : a.seq != b.seq ? (a.seq < b.seq ? -1 : 1) : 0;
}
/* Parses "ms-seq" or "ms" (seq 0); "0" is 0-0. 0 or -EINVAL. */
int bus_id_parse(const char *s, size_t len, bus_id *out);
void bus_id_format(bus_id id, char out[SP_BUS_ID_MAX]);
/* The id Redis would give after last: the wall clock's ms, or last's ms
 * with the next sequence when the clock has not moved on (or went back). */
bus_id bus_id_next(bus_id last);

/* One message, shared by the retained ring, the queues and the receivers
 * holding it; freed with its last reference. data is NUL-terminated. */
typedef struct bus_msg {
    unsigned refs;
    bus_id id;
    char ids[SP_BUS_ID_MAX];
    size_t len;
    char data[];
} bus_msg;

bus_msg *bus_msg_new(bus_id id, const void *data, size_t len); /* refs 1; NULL: no memory */
static inline bus_msg *bus_msg_ref(bus_msg *m) {
    m->refs++;
    return m;
}
void bus_msg_unref(bus_msg *m);

/* A topic as a backend keeps it in this process: its name and its
 * subscribers here. A backend's own topic struct begins with one, in a
 * table of the backend's (bus_topics.c). */
typedef struct bus_topic {
    struct bus_topic *next; /* in its bucket */
    char *name;
    size_t namelen;
    list_head subs;
    size_t nsubs;
} bus_topic;

#define BUS_TOPIC_BUCKETS 256
typedef struct bus_topics {
    bus_topic *buckets[BUS_TOPIC_BUCKETS];
    size_t count;
} bus_topics;

bus_topic *bus_topics_find(const bus_topics *ts, const char *name, size_t n);
/* The topic called name, added (size bytes, zeroed, a bus_topic at their
 * start) when it is not there yet. NULL: no memory. */
bus_topic *bus_topics_get(bus_topics *ts, const char *name, size_t n, size_t size);
/* Frees the topics nobody here reads (all: every topic), fin first given
 * each to free the backend's own parts. The count of those left. */
size_t bus_topics_prune(bus_topics *ts, int all, void (*fin)(bus_topic *t));
/* Each topic of ts as t (a bus_topic *), in the table's order. */
#define bus_topics_each(ts, t)                                                                     \
    for (int t##_b = 0; t##_b < BUS_TOPIC_BUCKETS; t##_b++)                                        \
        for (bus_topic *t = (ts)->buckets[t##_b]; t; t = t->next)

typedef struct bus bus;
typedef struct bus_backend bus_backend;

struct sp_bus_sub {
    bus *b;
    list_node node; /* in its topic's subscribers (the backend's) */
    list_node all;  /* in the process's subscribers (stop, outages) */
    void *topic;    /* the backend's topic */
    char *name;     /* the topic's name */
    loop *l;        /* the loop it belongs to */
    task *waiter;   /* the receiver, while parked */
    bus_id last;    /* the last delivered (or the starting point) */
    char last_s[SP_BUS_ID_MAX];
    bus_id hist_to;                /* history still to fetch: (last, hist_to]; */
    int hist;                      /* 1 while some may be left */
    bus_msg *hbuf[BUS_HIST_BATCH]; /* fetched history, in order */
    size_t hhead, hlen;
    uint64_t hpos; /* the shared ring: where the history walk goes on */
    bus_msg **q;   /* the live queue: a ring of qcap */
    size_t qcap, qhead, qlen, qbytes;
    bus_msg *cur; /* what the caller holds since the last recv */
    int cut;      /* cut for being slow: -EPIPE from now on */
    int down;     /* Redis went away: one -ECONNRESET to tell */
    int stopping; /* the server is stopping: -ESHUTDOWN */
};

struct bus_backend {
    const char *name;
    /* Publishes (the limits are checked). 0 with *id, or -errno. */
    int (*publish)(bus *b, const char *topic, const void *data, size_t len, bus_id *id);
    /* Attaches sub to its topic: sets sub->last (from since, NULL: the
     * topic's newest), sub->hist and hist_to. 0 or -errno (not attached). */
    int (*subscribe)(bus *b, sp_bus_sub *sub, const char *since);
    /* Fills sub->hbuf with the next history after sub->last (at most
     * hist_to); clears sub->hist when none is left. May park. 0 or -errno. */
    int (*fetch)(bus *b, sp_bus_sub *sub);
    /* Detaches sub from its topic. */
    void (*unsubscribe)(bus *b, sp_bus_sub *sub);
    /* Frees the backend's state (be). */
    void (*free)(bus *b);
};

struct bus {
    const bus_backend *ops;
    bus_limits lim;
    redis_url url;          /* Redis */
    char *tls_ca;           /* rediss://: ?tls_ca=PATH, else the system's CAs */
    struct ssl_ctx_st *tls; /* rediss://: the client context, made at the configure */
    void *be;               /* the backend's state in this process; NULL until used */
    pid_t be_pid;           /* the process be belongs to: a forked child makes its own */
    list_head subs;         /* this process's subscribers */
    int stopping;           /* the server is stopping */
    struct shm_ring *ring;  /* memory: shared by the workers forked after the configure */
    pid_t config_pid;       /* where sp_bus_configure ran */
};

extern const bus_backend bus_memory_backend;
extern const bus_backend bus_redis_backend;
extern const bus_backend bus_shm_backend;

/* s's bus (bus_config.c), or NULL when not configured. */
bus *bus_of(sp_server *s);

/* Gives m to sub's queue (if newer than what sub has), or cuts sub when
 * the queue is full; wakes its receiver. Does not take m's reference. */
void bus_deliver(sp_bus_sub *sub, bus_msg *m);
/* A worker's reader (shared ring, Redis) gives m to the subscribers of t
 * here. It may have been kept from running (the worker's loop blocked, the
 * process descheduled) while more than a queue's worth landed, which it now
 * hands over in one pass: so a subscriber whose queue m finds full is given
 * the chance to catch up first. The reader parks a millisecond at a time
 * while the full queues drain, and cuts only those that made no room for
 * BUS_ROOM_IDLE_MS (or after BUS_ROOM_MAX_MS in all): one that never reads
 * delays the topic's delivery here by that once, then is gone. From a task;
 * t stays valid across the parks (only the reader frees its topics). */
#define BUS_ROOM_IDLE_MS 20
#define BUS_ROOM_MAX_MS  1000
void bus_fan_out(bus *b, bus_topic *t, bus_msg *m);
/* Cuts sub (its recv returns -EPIPE from now on), with a log line that
 * ends with why. */
void bus_cut(sp_bus_sub *sub, const char *why);
/* Tells every subscriber of the process that Redis went away (once each). */
void bus_mark_down(bus *b);
/* Wakes sub's receiver, if parked. */
void bus_wake(sp_bus_sub *sub);

#endif
