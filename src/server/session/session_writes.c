/* session_writes.c — group commit for a blocking store (SQLite): a save or
 * delete joins the worker's queue; the writer that finds no group on the
 * thread pool takes the whole queue there as one job and one transaction,
 * and wakes each writer when its group has committed. A commit and a pool
 * hand-off are then paid once a group, not once a write. */
#include "server/session/session_writes.h"

#include "loop/loop.h"
#include "server/session/session.h"

#include <errno.h>
#include <pthread.h>

typedef struct group {
    sess_store *st;
    sess_write *first; /* in the order they came, NULL-ended */
} group;

static int one(sess_store *st, const sess_write *w) {
    if (w->op == SESS_WRITE_SAVE)
        return st->ops->save(st, w->id, w->blob, w->len, w->expiry, w->now);
    return st->ops->del(st, w->id);
}

/* On a pool thread: the group's writes in order in one transaction. If one
 * fails, or the commit does, it is all rolled back and each write runs
 * again alone, so every writer gets the answer its own write gets today,
 * and a bad write never takes the others down with it. A lone write needs
 * no transaction of its own. */
static int run_group(void *arg) {
    group *g = arg;
    sess_store *st = g->st;
    pthread_mutex_lock(&st->mu);
    int rc = sess_store_open_here(st);
    if (rc < 0) {
        for (sess_write *w = g->first; w; w = w->next)
            w->rc = rc;
    } else {
        int ok = g->first->next && st->ops->begin(st) == 0;
        if (ok) {
            for (sess_write *w = g->first; w && ok; w = w->next)
                ok = (w->rc = one(st, w)) == 0;
            ok = st->ops->end(st, ok) == 0 && ok;
        }
        for (sess_write *w = g->first; w && !ok; w = w->next)
            w->rc = one(st, w);
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
