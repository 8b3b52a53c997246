/* chat_room.c — the chat's room in one worker: one bus subscription to the
 * room's topic (read from "0" at start, so the ring holds the retained
 * history), the last RING messages, the fan-out to this worker's
 * WebSockets, and the catch-up of a client from the id it last saw. */
#include "chat_room.h"

#include "chat_presence.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FANOUT_HELPERS 8 /* coroutines per broadcast, for the syscalls of big rooms */

static struct {
    sp_server *server;
    msg *ring[RING];
    uint64_t nmsgs; /* received since start: ring[(nmsgs - 1) % RING] is the newest */
    int ready;      /* the history read at start is in */
    int started;
    sp_mutex *mu;     /* only because sp_cond_wait wants one */
    sp_cond *news;    /* each message (and readiness) */
    client **clients; /* this worker's WebSockets */
    size_t nclients, cap_clients;
    int parked;
    uint64_t broadcasts;
    int64_t fanout_max_us;
} room;

static void msg_unref(msg *m) {
    if (m && --m->refs == 0)
        free(m);
}

static size_t ring_count(void) {
    return room.nmsgs < RING ? (size_t)room.nmsgs : RING;
}

/* The k-th oldest message of the ring, 0 <= k < ring_count(). */
static msg *ring_at(size_t k) {
    return room.ring[(room.nmsgs - ring_count() + k) % RING];
}

chat_id room_last(void) {
    return room.nmsgs ? ring_at(ring_count() - 1)->id : (chat_id){0, 0};
}

chat_id room_history_start(void) {
    size_t n = ring_count();
    return n > HISTORY ? ring_at(n - HISTORY - 1)->id : (chat_id){0, 0};
}

/* The ring holds every message after `from` the bus still has: it was read
 * from the topic's start and has dropped nothing, or it reaches back to
 * `from` itself. (The subscription resumes from its last id after a cut or
 * an outage, so the ring has no hole.) */
static int ring_covers(chat_id from) {
    if (!room.ready)
        return 0;
    if (room.nmsgs <= RING)
        return 1;
    return id_cmp(ring_at(0)->id, from) <= 0;
}

/* The first message of the ring after from, or NULL. */
static msg *ring_after(chat_id from) {
    size_t n = ring_count();
    for (size_t k = 0; k < n; k++)
        if (id_cmp(ring_at(k)->id, from) > 0)
            return ring_at(k);
    return NULL;
}

/* ---- fan-out to this worker's WebSockets -------------------------------------- */

void client_unref(client *c) {
    if (--c->refs == 0)
        free(c);
}

int room_join(client *c) {
    if (room.nclients == room.cap_clients) {
        size_t cap = room.cap_clients ? room.cap_clients * 2 : 64;
        client **p = realloc(room.clients, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        room.clients = p;
        room.cap_clients = cap;
    }
    c->idx = room.nclients;
    room.clients[room.nclients++] = c;
    return 0;
}

void room_leave(client *c) {
    client *last = room.clients[--room.nclients];
    room.clients[c->idx] = last;
    last->idx = c->idx;
}

/* Sends m to c unless it has it already. Without waiting: a client whose
 * socket cannot take m now has fallen a socket buffer behind and is
 * disconnected (it reconnects with ?since= and misses nothing), rather
 * than holding up the room. */
static void deliver(client *c, msg *m) {
    if (!c->ws || id_cmp(m->id, c->last_sent) <= 0)
        return;
    int rc = sp_ws_send_timeout(c->ws, SP_WS_TEXT, m->json, m->len, 0);
    if (rc == 0)
        c->last_sent = m->id;
    else if (rc == -ETIMEDOUT)
        fprintf(stderr,
                "chat: disconnected a WebSocket client that fell behind (its socket "
                "stayed full at message %s); it may reconnect with ?since=\n",
                m->json + 7);
}

typedef struct fanout {
    client **snap;
    size_t n, first, step;
    msg *m;
    sp_wg *wg;
} fanout;

static void fanout_helper(void *arg) {
    fanout *f = arg;
    for (size_t i = f->first; i < f->n; i += f->step)
        deliver(f->snap[i], f->m);
    sp_wg_done(f->wg);
}

/* Sends m to a snapshot of the clients with a few helper coroutines; no
 * send waits on a client, so one that stops reading holds up nobody. */
static void broadcast(msg *m, sp_wg *wg) {
    static client **snap;
    static size_t snap_cap;
    size_t n = room.nclients;
    if (n == 0)
        return;
    int64_t t0 = mono_us();
    if (snap_cap < n) {
        client **p = realloc(snap, n * sizeof *p);
        if (!p)
            return;
        snap = p;
        snap_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        snap[i] = room.clients[i];
        snap[i]->refs++;
    }
    m->refs++;
    fanout f[FANOUT_HELPERS];
    size_t helpers = n < 64 ? 1 : FANOUT_HELPERS;
    for (size_t k = 0; k < helpers; k++) {
        f[k] = (fanout){snap, n, k, helpers, m, wg};
        sp_wg_add(wg, 1);
        if (sp_spawn(fanout_helper, &f[k]) < 0)
            fanout_helper(&f[k]); /* no stack to spare: do it here */
    }
    sp_wg_wait(wg, -1);
    for (size_t i = 0; i < n; i++)
        client_unref(snap[i]);
    msg_unref(m);
    room.broadcasts++;
    int64_t us = mono_us() - t0;
    if (us > room.fanout_max_us)
        room.fanout_max_us = us;
}

/* ---- the worker's subscription ---------------------------------------------------- */

/* {"id":"MS-SEQ", then the published object's fields. NULL if the data is
 * not an object (not the chat's) or memory is short. */
static msg *msg_from(const sp_bus_msg *bm) {
    const char *d = bm->data;
    if (bm->len < 2 || d[0] != '{' || d[bm->len - 1] != '}' || presence_is(d, bm->len))
        return NULL;
    chat_id id;
    if (id_parse(bm->id, strlen(bm->id), &id) < 0)
        return NULL;
    buf b = {0};
    if (buf_fmt(&b, "{\"id\":\"%s\",", bm->id) < 0 || buf_add(&b, d + 1, bm->len - 1) < 0) {
        free(b.p);
        return NULL;
    }
    msg *m = malloc(sizeof *m + b.len + 1);
    if (m) {
        m->refs = 1;
        m->id = id;
        m->len = b.len;
        memcpy(m->json, b.p, b.len + 1);
    }
    free(b.p);
    return m;
}

static void ring_add(msg *m) {
    msg **slot = &room.ring[room.nmsgs % RING];
    msg_unref(*slot);
    *slot = m;
    room.nmsgs++;
}

/* The worker's one reader of the room: everything the bus delivers goes
 * into the ring, wakes the pollers and goes out to the WebSockets. Cut
 * for being slow, or the bus gone at subscribe time: it subscribes again
 * from its last id (backing off to 2 s), so the ring never has a hole. */
static void room_reader(void *arg) {
    char from[SP_BUS_ID_MAX] = "0";
    int64_t backoff = 100;
    int said = 0;
    sp_wg *wg = sp_wg_new();
    while (wg) {
        sp_bus_sub *sub = sp_bus_subscribe(room.server, ROOM_TOPIC, from);
        if (!sub) {
            if (errno == ESHUTDOWN || errno == ENXIO || errno == EINVAL)
                break;
            if (!said++)
                fprintf(stderr, "chat: cannot subscribe to the room (%s); retrying\n",
                        strerror(errno));
            sp_sleep(backoff);
            backoff = backoff < 1000 ? backoff * 2 : 2000;
            continue;
        }
        backoff = 100;
        said = 0;
        int rc;
        for (;;) {
            sp_bus_msg bm;
            rc = sp_bus_recv(sub, &bm, room.ready ? -1 : 0);
            if (rc == 0 && !room.ready) {
                room.ready = 1;
                sp_cond_broadcast(room.news);
            } else if (rc == 1) {
                if (presence_is(bm.data, bm.len)) {
                    presence_heard(bm.id, bm.data, bm.len);
                    continue;
                }
                msg *m = msg_from(&bm);
                if (!m || (room.nmsgs && id_cmp(m->id, room_last()) <= 0)) {
                    msg_unref(m);
                    continue;
                }
                ring_add(m);
                sp_cond_broadcast(room.news);
                broadcast(m, wg);
            } else if (rc != -ECONNRESET) {
                break; /* cut (-EPIPE) or stopping (-ESHUTDOWN) */
            }
            /* -ECONNRESET: Redis went away; the subscription resumes by itself */
        }
        snprintf(from, sizeof from, "%s", sp_bus_last_id(sub));
        sp_bus_unsubscribe(sub);
        if (rc == -ESHUTDOWN)
            break;
        fprintf(stderr, "chat: the room's subscription ended (%s); resuming from %s\n",
                strerror(-rc), from);
    }
    sp_wg_free(wg);
}

int room_start(sp_server *s) {
    if (room.started)
        return 0;
    room.started = 1;
    room.server = s;
    room.mu = sp_mutex_new();
    room.news = sp_cond_new();
    if (!room.mu || !room.news || sp_spawn(room_reader, NULL) < 0)
        return -ENOMEM;
    return 0;
}

int room_wait_ready(int64_t ms) {
    int64_t deadline = sp_now_ms() + ms;
    sp_mutex_lock(room.mu, -1);
    while (!room.ready) {
        int64_t left = deadline - sp_now_ms();
        if (left <= 0 || sp_cond_wait(room.news, room.mu, left) == -ECONNRESET)
            break;
    }
    sp_mutex_unlock(room.mu);
    return room.ready;
}

/* ---- catching up ------------------------------------------------------------------ */

/* What the ring does not reach: read from the bus after *from until what
 * it gives is in the ring (or it has nothing more right now). */
static int catch_up_from_bus(chat_id *from, int (*emit)(msg *m, void *arg), void *arg) {
    char since[SP_BUS_ID_MAX];
    id_format(*from, since);
    sp_bus_sub *sub = sp_bus_subscribe(room.server, ROOM_TOPIC, since);
    if (!sub)
        return -errno;
    int n = 0, rc;
    sp_bus_msg bm;
    while ((rc = sp_bus_recv(sub, &bm, 0)) == 1) {
        msg *m = msg_from(&bm);
        if (!m)
            continue;
        if (ring_covers(*from)) {
            msg_unref(m); /* the ring has the rest (or the reader brings it) */
            break;
        }
        rc = emit(m, arg);
        *from = m->id;
        msg_unref(m);
        if (rc < 0)
            break;
        n++;
    }
    sp_bus_unsubscribe(sub);
    return rc < 0 ? rc : n;
}

int room_catch_up(chat_id *from, int (*emit)(msg *m, void *arg), void *arg) {
    int n = 0;
    if (!ring_covers(*from)) {
        n = catch_up_from_bus(from, emit, arg);
        if (n < 0)
            return n;
    }
    /* Each emit may yield; the loop's last look and the caller's join do not. */
    for (msg *m; (m = ring_after(*from));) {
        m->refs++;
        int rc = emit(m, arg);
        *from = m->id;
        msg_unref(m);
        if (rc < 0)
            return rc;
        n++;
    }
    return n;
}

int room_wait_news(chat_id since, int64_t ms) {
    int64_t deadline = sp_now_ms() + ms;
    int rc = 0;
    room.parked++;
    sp_mutex_lock(room.mu, -1);
    while (id_cmp(room_last(), since) <= 0) {
        int64_t left = deadline - sp_now_ms();
        if (left <= 0) {
            rc = -ETIMEDOUT;
            break;
        }
        rc = sp_cond_wait(room.news, room.mu, left);
        if (rc == -ECONNRESET || rc == -ETIMEDOUT)
            break;
    }
    sp_mutex_unlock(room.mu);
    room.parked--;
    if (rc == -ECONNRESET)
        return rc;
    return id_cmp(room_last(), since) > 0;
}

size_t room_clients(void) {
    return room.nclients;
}
uint64_t room_broadcasts(void) {
    return room.broadcasts;
}
int64_t room_fanout_max_us(void) {
    return room.fanout_max_us;
}
int room_parked(void) {
    return room.parked;
}
