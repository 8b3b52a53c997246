/* server_accept.c — the listeners' watches: bounded accept batches, the
 * pause at max_connections or when out of fds, and the balancing of
 * workers sharing the listeners (a worker well over its share steps aside
 * and kicks another awake for the clients it alone was woken for). */
#include "server/server.h"

#include "base/list.h"
#include "base/log.h"

#include <string.h>
#include <unistd.h>

static void on_listener(loop *l, loop_watch *w, uint32_t events);
static void on_kick(loop *l, loop_watch *w, uint32_t events);

/* The supervisor's counters: a step-aside, a kick taken (SERVER_ACCEPT_*). */
static void tell(sp_server *s, int what) {
    if (s->obs.accept_event)
        s->obs.accept_event(s->obs.ud, what);
}

/* The kick is paused with the listeners: a worker that steps aside must
 * not take its own kick. */
void server_listeners_pause(sp_server *s) {
    for (int i = 0; i < s->nlisteners; i++)
        if (!s->listeners[i].paused) {
            loop_watch_del(s->l, &s->listeners[i].w);
            s->listeners[i].paused = 1;
        }
    if (s->kick.fd >= 0)
        loop_watch_del(s->l, &s->kick);
}

void server_listeners_resume(sp_server *s) {
    for (int i = 0; i < s->nlisteners; i++) {
        listener *li = &s->listeners[i];
        if (!li->paused || li->w.fd < 0)
            continue;
        li->w.cb = on_listener;
        li->w.data = s;
        if (loop_watch_add(s->l, &li->w,
                           s->accept_exclusive ? BACKEND_LISTEN_EXCL : BACKEND_LISTEN) == 0)
            li->paused = 0;
    }
    if (s->kick.fd >= 0 && s->accept_exclusive && !s->kick.registered) {
        s->kick.cb = on_kick;
        s->kick.data = s;
        loop_watch_add(s->l, &s->kick, BACKEND_LISTEN_EXCL); /* failed: no kicks, 5 ms waits */
    }
}

static void accept_retry(loop *l, loop_timer *t) {
    sp_server *s = t->data;
    s->accept_paused = 0;
    if (!s->stopping && s->nconns < s->opt.max_connections)
        server_listeners_resume(s);
}

/* EPOLLEXCLUSIVE wakes the first idle worker, so a worker that keeps up
 * would take every connection while the others idle: the supervisor's
 * policy may tell one holding well over its share to step aside for a
 * moment, as nginx's accept_mutex does. No worker can be over its share
 * with 8 connections or fewer, so the common case asks nothing.
 * The wake-up for the clients waiting now went to this worker alone, so
 * no other worker knows of them: it kicks one (the shared eventfd, one
 * idle worker woken) each time it steps aside. Clients no other worker
 * has taken after SERVER_ASIDE_MAX_MS are its to take until the backlog
 * is empty: a wait, never a hang. */
static int over_share(const sp_server *s) {
    return s->accept_exclusive && s->nconns > 8 &&
           (!s->aside_since || loop_now(s->l) - s->aside_since < SERVER_ASIDE_MAX_MS) &&
           s->obs.accept_step_aside && s->obs.accept_step_aside(s->obs.ud, s->nconns);
}

static void on_listener(loop *l, loop_watch *w, uint32_t events) {
    sp_server *s = w->data;
    if (w->fd < 0 || s->stopping)
        return; /* closed by a stop handled earlier in the same batch of events */
    if (over_share(s)) {
        server_listeners_pause(s);
        s->accept_paused = 1;
        if (!s->aside_since)
            s->aside_since = loop_now(l);
        uint64_t one = 1;
        if (s->kick.fd >= 0 && write(s->kick.fd, &one, sizeof one) < 0) {
            /* EAGAIN: kicks pending already, another worker will look */
        }
        tell(s, SERVER_ACCEPT_STEPPED_ASIDE);
        loop_timer_arm(l, &s->accept_timer, loop_now(l) + 5, accept_retry, s);
        return;
    }
    int room = s->opt.max_connections - s->nconns;
    /* Workers sharing a listener take a few connections per wake-up, so a
     * burst spreads over them (EPOLLEXCLUSIVE wakes waiters in turn); alone,
     * a larger batch saves wake-ups. */
    int max = s->accept_exclusive ? SERVER_ACCEPT_BATCH_SHARED : SERVER_ACCEPT_BATCH;
    int batch = room < max ? room : max;
    if (batch > 0) {
        accept_ctx ax = {s, (int)(container_of(w, listener, w) - s->listeners) + 1};
        int n = net_accept_batch(w->fd, batch, server_accept_conn, &ax);
        if (n < batch)
            s->aside_since = 0; /* the backlog is empty: its share counts again */
        if (n < 0) {
            /* Out of fds or memory: stop accepting for a moment; clients
             * wait in the backlog meanwhile. */
            log_ratelimited(&s->log_last, &s->log_suppressed, LOG_ERROR,
                            "accept: %s; pausing accept for 100 ms (raise ulimit -n or lower "
                            "--max-connections)",
                            strerror(-n));
            server_listeners_pause(s);
            s->accept_paused = 1;
            loop_timer_arm(l, &s->accept_timer, loop_now(l) + 100, accept_retry, s);
            return;
        }
    }
    if (s->nconns >= s->opt.max_connections)
        server_listeners_pause(s);
}

/* Another worker stepped aside from clients it alone was woken for: the
 * worker that reads the kick first looks at the listeners for them. */
static void on_kick(loop *l, loop_watch *w, uint32_t events) {
    sp_server *s = w->data;
    uint64_t n;
    if (read(w->fd, &n, sizeof n) != (ssize_t)sizeof n || s->stopping)
        return; /* another worker took this kick, or this one stops */
    tell(s, SERVER_ACCEPT_KICK_TAKEN);
    for (int i = 0; i < s->nlisteners && !s->listeners[i].paused; i++)
        on_listener(l, &s->listeners[i].w, LOOP_READ);
}

/* Take what already waits in the backlog (each gets its answer, with
 * Connection: close), then close, not pause: once every process has
 * closed its copy, new clients are refused at once instead of queueing
 * for nobody and being reset. */
void server_accept_stop(sp_server *s) {
    for (int i = 0; i < s->nlisteners; i++) {
        accept_ctx ax = {s, i + 1};
        if (s->listeners[i].w.fd >= 0)
            net_accept_batch(s->listeners[i].w.fd, 4096, server_accept_conn, &ax);
    }
    server_close_listeners(s);
    if (s->kick.fd >= 0)
        loop_watch_del(s->l, &s->kick); /* kicks are for the workers that accept */
}

void server_close_listeners(sp_server *s) {
    for (int i = 0; i < s->nlisteners; i++) {
        listener *li = &s->listeners[i];
        if (li->w.fd < 0)
            continue;
        if (s->l && !li->paused)
            loop_watch_del(s->l, &li->w);
        li->paused = 1;
        close(li->w.fd);
        li->w.fd = -1;
    }
}
