/* bus_topics.c — the topics a backend keeps in this process (its name, its
 * subscribers here), in one hash table by name: found, added, walked and
 * pruned the same way by the memory, shared-ring and Redis backends, each
 * of whose topic structs begins with a bus_topic. */
#include "server/bus/bus.h"

#include <stdlib.h>
#include <string.h>

static unsigned bucket(const char *name, size_t n) {
    unsigned h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h % BUS_TOPIC_BUCKETS;
}

bus_topic *bus_topics_find(const bus_topics *ts, const char *name, size_t n) {
    for (bus_topic *t = ts->buckets[bucket(name, n)]; t; t = t->next)
        if (t->namelen == n && !memcmp(t->name, name, n))
            return t;
    return NULL;
}

bus_topic *bus_topics_get(bus_topics *ts, const char *name, size_t n, size_t size) {
    bus_topic *t = bus_topics_find(ts, name, n);
    if (t)
        return t;
    if (!(t = calloc(1, size)) || !(t->name = malloc(n + 1))) {
        free(t);
        return NULL;
    }
    memcpy(t->name, name, n);
    t->name[n] = '\0';
    t->namelen = n;
    unsigned h = bucket(name, n);
    t->next = ts->buckets[h];
    ts->buckets[h] = t;
    ts->count++;
    return t;
}

size_t bus_topics_prune(bus_topics *ts, int all, void (*fin)(bus_topic *t)) {
    for (int i = 0; i < BUS_TOPIC_BUCKETS; i++)
        for (bus_topic **p = &ts->buckets[i]; *p;) {
            bus_topic *t = *p;
            if (t->nsubs && !all) {
                p = &t->next;
                continue;
            }
            *p = t->next;
            if (fin)
                fin(t);
            free(t->name);
            free(t);
            ts->count--;
        }
    return ts->count;
}
