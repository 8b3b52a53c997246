/* session_writes.c — grouped calls for a blocking store: a save, delete or
 * load joins the worker's queue; the caller that finds no group on the
 * thread pool takes the whole queue there as one job, and wakes each caller
 * when its group is done. With SQLite a group's writes are one transaction
 * (group commit); with Redis the whole group is one pipelined round trip.
 * A pool hand-off, a commit or a round trip is then paid once a group. */
#include "server/session/session_writes.h"

#include "loop/loop.h"
#include "server/session/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct group {
    sess_store *st;
    sess_write *first; /* in the order they came, NULL-ended */
} group;

int sess_write_one(sess_store *st, sess_write *w) {
    if (w->op == SESS_WRITE_SAVE)
        return st->ops->save(st, w->id, w->blob, w->len, w->expiry, w->now);
    if (w->op == SESS_WRITE_DEL)
        return st->ops->del(st, w->id);
    free(w->out); /* from a failed attempt of its group */
    w->out = NULL;
    w->out_len = 0;
    return st->ops->load(st, w->id, w->now, &w->out, &w->out_len);
}

/* A call's answer that lets its group carry on: a load may find nothing. */
static int fine(const sess_write *w) {
    return w->rc == 0 || (w->op == SESS_WRITE_LOAD && w->rc == -ENOENT);
}

/* SQLite's way: the calls in order in one transaction, when the group has
 * two writes at least (-1 with fewer: loads need none, they only share the
 * job, and each call then runs alone). */
static int in_transaction(sess_store *st, sess_write *first) {
    int writes = 0;
    for (sess_write *w = first; w; w = w->next)
        writes += w->op != SESS_WRITE_LOAD;
    if (writes < 2 || st->ops->begin(st) != 0)
        return -1;
    int ok = 1;
    for (sess_write *w = first; w && ok; w = w->next)
        ok = (w->rc = sess_write_one(st, w), fine(w));
    return st->ops->end(st, ok) == 0 && ok ? 0 : -EIO;
}

/* The group as one round trip (the store's group op) or one transaction;
 * -1 for a lone call or a store with neither: each call then runs alone. */
static int together(sess_store *st, sess_write *first) {
    if (!first->next)
        return -1;
    if (st->ops->group)
        return st->ops->group(st, first);
    return st->ops->begin ? in_transaction(st, first) : -1;
}

/* On a pool thread: the group's calls in order, as one transaction or one
 * round trip. If that fails it is all rolled back and each call runs again
 * alone, so every caller gets the answer its own call gets alone, and a
 * bad write never takes the others down with it. A lone call needs
 * neither. */
static int run_group(void *arg) {
    group *g = arg;
    sess_store *st = g->st;
    pthread_mutex_lock(&st->mu);
    int rc = sess_store_open_here(st);
    if (rc < 0) {
        for (sess_write *w = g->first; w; w = w->next)
            w->rc = rc;
    } else {
        for (sess_write *w = g->first; w; w = w->next)
            w->rc = 0;
        int ok = together(st, g->first) == 0;
        for (sess_write *w = g->first; w && !ok; w = w->next)
            w->rc = sess_write_one(st, w);
    }
    pthread_mutex_unlock(&st->mu);
    return 0;
}

/* Takes up to SESS_WRITES_GROUP_MAX writes off the queue's head to the pool
 * and waits there; then marks them done and wakes their writers, and wakes
 * the writer of the oldest write left, which leads the next group. */
static void lead(loop *l, sess_writes *q, sess_store *st) {
    group g = {st, q->head};
    sess_write **cut = &q->head;
    unsigned long n = 0;
    while (*cut && n < SESS_WRITES_GROUP_MAX) {
        cut = &(*cut)->next;
        n++;
    }
    q->head = *cut;
    *cut = NULL;
    if (!q->head)
        q->tail = &q->head;
    q->busy = 1;
    int rc = sp_run_blocking(run_group, &g);
    q->busy = 0;
    q->groups++;
    q->writes += n;
    for (sess_write *w = g.first, *next; w; w = next) {
        next = w->next; /* w's writer may be gone once woken */
        if (rc < 0)
            w->rc = rc; /* the pool could not take the job */
        w->done = 1;
        if (w->wait)
            loop_wake(l, w->wait, 0);
    }
    if (q->head && q->head->wait)
        loop_wake(l, q->head->wait, 0);
}

int sess_writes_run(sess_writes *q, sess_store *st, sess_write *w) {
    loop *l = loop_current();
    task *me = l ? loop_task(l) : NULL;
    if (!me)
        return -EPERM;
    if (!q->tail)
        q->tail = &q->head;
    w->done = 0;
    w->wait = NULL;
    w->next = NULL;
    *q->tail = w;
    q->tail = &w->next;
    /* No deadline and no hang-up watch: w is on this stack and in the
     * queue, so this writer waits for its group whatever the client does
     * (a group takes as long as one transaction). */
    while (!w->done) {
        if (!q->busy) {
            lead(l, q, st);
            continue;
        }
        w->wait = me;
        loop_park(l, LOOP_NO_DEADLINE, NULL);
        w->wait = NULL;
    }
    return w->rc;
}
