/* bus_memory.c — the memory backend: topics in this process, each a ring
 * of its newest messages (retain, retain_bytes) and a list of subscribers,
 * fanned out synchronously at publish; history is read from the ring. */
#include "server/bus/bus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct mtopic {
    bus_topic t;    /* its name and subscribers, in the table */
    bus_msg **ring; /* the retained messages, oldest at head */
    size_t cap, head, len, bytes;
    bus_id last; /* the newest id given (0-0: none yet) */
} mtopic;

static bus_topics *state(bus *b) {
    if (!b->be && (b->be = calloc(1, sizeof(bus_topics))))
        b->be_pid = getpid();
    return b->be;
}

static mtopic *topic_get(bus_topics *ts, const char *name) {
    return (mtopic *)bus_topics_get(ts, name, strlen(name), sizeof(mtopic));
}

static bus_msg *at(const mtopic *t, size_t i) {
    return t->ring[(t->head + i) % t->cap];
}

static void evict_oldest(mtopic *t) {
    bus_msg *m = t->ring[t->head];
    t->head = (t->head + 1) % t->cap;
    t->len--;
    t->bytes -= m->len;
    bus_msg_unref(m);
}

/* Keeps m as the newest, dropping the oldest beyond the limits (the newest
 * is always kept, whatever its size). */
static int retain(mtopic *t, const bus_limits *lim, bus_msg *m) {
    while (t->len && (t->len >= lim->retain || t->bytes + m->len > lim->retain_bytes))
        evict_oldest(t);
    if (t->len == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        if (ncap > lim->retain)
            ncap = lim->retain;
        bus_msg **nr = malloc(ncap * sizeof *nr);
        if (!nr)
            return -ENOMEM;
        for (size_t i = 0; i < t->len; i++)
            nr[i] = at(t, i);
        free(t->ring);
        t->ring = nr;
        t->cap = ncap;
        t->head = 0;
    }
    t->ring[(t->head + t->len++) % t->cap] = m;
    t->bytes += m->len;
    return 0;
}

static int mem_publish(bus *b, const char *topic, const void *data, size_t len, bus_id *id) {
    bus_topics *st = state(b);
    mtopic *t = st ? topic_get(st, topic) : NULL;
    if (!t)
        return -ENOMEM;
    bus_msg *m = bus_msg_new(bus_id_next(t->last), data, len);
    if (!m)
        return -ENOMEM;
    if (retain(t, &b->lim, m) < 0) {
        bus_msg_unref(m);
        return -ENOMEM;
    }
    t->last = m->id;
    *id = m->id;
    for (list_node *n = t->t.subs.head; n; n = n->next)
        bus_deliver(container_of(n, sp_bus_sub, node), m);
    return 0;
}

static int mem_subscribe(bus *b, sp_bus_sub *sub, const char *since) {
    bus_topics *st = state(b);
    mtopic *t = st ? topic_get(st, sub->name) : NULL;
    if (!t)
        return -ENOMEM;
    sub->last = t->last;
    if (since) {
        bus_id_parse(since, strlen(since), &sub->last); /* checked by the caller */
        sub->hist_to = t->last;
        sub->hist = bus_id_cmp(sub->last, t->last) < 0;
    }
    sub->topic = t;
    list_push_back(&t->t.subs, &sub->node);
    t->t.nsubs++;
    return 0;
}

/* The next retained messages after sub->last, up to hist_to: the ring is
 * in id order, so a binary search finds where to start. */
static int mem_fetch(bus *b, sp_bus_sub *sub) {
    mtopic *t = sub->topic;
    size_t lo = 0, hi = t->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bus_id_cmp(at(t, mid)->id, sub->last) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->len && sub->hlen < BUS_HIST_BATCH; lo++) {
        bus_msg *m = at(t, lo);
        if (bus_id_cmp(m->id, sub->hist_to) > 0)
            break;
        sub->hbuf[sub->hlen++] = bus_msg_ref(m);
    }
    if (!sub->hlen)
        sub->hist = 0;
    return 0;
}

static void mem_unsubscribe(bus *b, sp_bus_sub *sub) {
    mtopic *t = sub->topic;
    list_remove(&t->t.subs, &sub->node);
    t->t.nsubs--; /* kept: its retained messages are its history */
}

static void topic_fin(bus_topic *bt) {
    mtopic *t = (mtopic *)bt;
    while (t->len)
        evict_oldest(t);
    free(t->ring);
}

static void mem_free(bus *b) {
    bus_topics_prune(b->be, 1, topic_fin);
    free(b->be);
    b->be = NULL;
}

const bus_backend bus_memory_backend = {"memory",  mem_publish,     mem_subscribe,
                                        mem_fetch, mem_unsubscribe, mem_free};
