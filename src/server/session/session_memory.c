/* session_memory.c — the in-process session store: a hash table from id to
 * blob, private to one worker (sessions do not survive a restart and are
 * not shared between workers). Expired entries are swept a few buckets at
 * a time on every save. Runs on the loop: it never blocks. */
#include "server/session/session_store.h"

#include "server/session/session_cookie.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *next;
    char id[SESS_ID_HEX + 1];
    int64_t expiry;
    size_t len;
    char *blob;
} entry;

typedef struct table {
    entry **b;
    size_t nb, n, sweep; /* buckets (a power of 2), entries, next bucket to sweep */
} table;

static size_t bucket(const table *t, const char *id) {
    /* An id ends in random hex (it begins with the time, session_cookie.h):
     * its last 16 digits are a fine hash. */
    const char *r = id + SESS_ID_HEX - 16;
    uint64_t h = 0;
    for (int i = 0; i < 16; i++)
        h = h << 4 | (uint64_t)(r[i] <= '9' ? r[i] - '0' : r[i] - 'a' + 10);
    return (size_t)(h & (t->nb - 1));
}

static void drop(table *t, entry **pp) {
    entry *e = *pp;
    *pp = e->next;
    free(e->blob);
    free(e);
    t->n--;
}

static int mem_open(sess_store *st) {
    if (st->impl)
        return 0;
    table *t = calloc(1, sizeof *t);
    if (!t || !(t->b = calloc(1024, sizeof *t->b))) {
        free(t);
        return -ENOMEM;
    }
    t->nb = 1024;
    st->impl = t;
    return 0;
}

static entry **lookup(table *t, const char *id) {
    entry **pp = &t->b[bucket(t, id)];
    while (*pp && memcmp((*pp)->id, id, SESS_ID_HEX) != 0)
        pp = &(*pp)->next;
    return pp;
}

static int mem_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    table *t = st->impl;
    entry **pp = lookup(t, id);
    if (!*pp)
        return -ENOENT;
    if ((*pp)->expiry <= now) {
        drop(t, pp);
        return -ENOENT;
    }
    *len = (*pp)->len;
    *blob = NULL;
    if (*len) {
        if (!(*blob = malloc(*len)))
            return -ENOMEM;
        memcpy(*blob, (*pp)->blob, *len);
    }
    return 0;
}

static void grow(table *t) {
    size_t nb = t->nb * 2;
    entry **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    table nt = {b, nb, t->n, 0};
    for (size_t i = 0; i < t->nb; i++)
        for (entry *e = t->b[i], *next; e; e = next) {
            next = e->next;
            size_t k = bucket(&nt, e->id);
            e->next = b[k];
            b[k] = e;
        }
    free(t->b);
    *t = nt;
}

static void sweep(table *t, int64_t now) {
    for (int i = 0; i < 4; i++) {
        entry **pp = &t->b[t->sweep];
        while (*pp)
            if ((*pp)->expiry <= now)
                drop(t, pp);
            else
                pp = &(*pp)->next;
        t->sweep = (t->sweep + 1) & (t->nb - 1);
    }
}

static int mem_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                    int64_t now) {
    table *t = st->impl;
    sweep(t, now);
    char *copy = NULL;
    if (len && !(copy = malloc(len)))
        return -ENOMEM;
    if (len)
        memcpy(copy, blob, len);
    entry **pp = lookup(t, id);
    entry *e = *pp;
    if (!e) {
        if (!(e = calloc(1, sizeof *e))) {
            free(copy);
            return -ENOMEM;
        }
        memcpy(e->id, id, SESS_ID_HEX);
        *pp = e;
        t->n++;
    }
    free(e->blob);
    e->blob = copy;
    e->len = len;
    e->expiry = expiry;
    if (t->n > 2 * t->nb)
        grow(t);
    return 0;
}

static int mem_del(sess_store *st, const char *id) {
    table *t = st->impl;
    entry **pp = lookup(t, id);
    if (*pp)
        drop(t, pp);
    return 0;
}

static void mem_close(sess_store *st) {
    table *t = st->impl;
    if (!t)
        return;
    for (size_t i = 0; i < t->nb; i++)
        while (t->b[i])
            drop(t, &t->b[i]);
    free(t->b);
    free(t);
    st->impl = NULL;
}

const sess_store_ops sess_memory_ops = {
    .name = "memory",
    .blocking = 0,
    .open = mem_open,
    .load = mem_load,
    .save = mem_save,
    .del = mem_del,
    .close = mem_close,
}; /* no begin/end: each write is done at once, on the loop */
