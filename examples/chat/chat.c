/* chat.c — a chat room on spindle: the page and its script are static files
 * served by spindle itself; messages go out over WebSockets (/ws), with long
 * polling (/poll, POST /send) as the fallback; the nickname is kept in a
 * cookie; a periodic timer announces how many people are online.
 *   build/examples/chat --bind 127.0.0.1:8090 [--announce-ms N] [--poll-ms N]
 *                       [--ws-ping-ms N] [--ws-idle-ms N]
 *
 * A WebSocket that does not keep up (its socket stays full: it stopped
 * reading) is disconnected at the first message its socket cannot take, so
 * the broadcast never waits on it; it may reconnect with ?since=N. A silent
 * one is pinged every --ws-ping-ms (20000) and closed with 1001 after
 * --ws-idle-ms (60000) without a byte, pong included.
 *
 * One process, one loop: the room (the message log, the WebSockets, the
 * parked pollers) lives in this process's memory. Several workers would each
 * have a room of their own, and a message posted on one would need a broker
 * (Redis pub/sub, say) to reach the visitors of the others, so this example
 * has its own main and no --workers.
 *
 * Sessions: sp_session was not in spindle.h when this was written, so the
 * visitor's nickname is a cookie of its own ("nick", percent-encoded), and
 * "chat_id" (random) tells visitors apart when counting who is online.
 *
 * Routes:
 *   GET  /ws?since=N   WebSocket: every message after N (default: the last
 *                      50), then each new one; a text message posts it
 *   GET  /poll?since=N JSON {"seq":S,"messages":[...]} of the messages after
 *                      N, parked until there is one (204 after --poll-ms)
 *   POST /send         the body (text) posted under the visitor's nickname
 *   POST /nick         the body is the new nickname (a cookie remembers it)
 *   GET  /me           {"nick":..,"seq":..,"online":..}
 *   GET  /stats        counters (WebSockets, parked pollers, fan-out time)
 *   GET  /...          examples/chat/static (--static DIR)
 * Every message is a JSON object with "seq" (1, 2, ...), "type" ("msg" with
 * "nick" and "text", or "online" with "n") and "ts" (wall clock, ms).
 * Beside this file: chat_text.c (buffers, JSON, cookies, text checks) and
 * chat_visitors.c (who is online). */
#include "chat_text.h"
#include "chat_visitors.h"
#include "spindle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING           256 /* messages kept for late pollers and new pages */
#define HISTORY        50  /* sent to a new WebSocket without ?since */
#define FANOUT_HELPERS 8   /* coroutines per broadcast, for the syscalls of big rooms */

/* ---- the room --------------------------------------------------------------- */

typedef struct msg {
    int refs;
    uint64_t seq;
    size_t len;
    char json[];
} msg;

typedef struct client {
    int refs;
    sp_ws *ws; /* NULL once the handler is returning */
    uint64_t last_sent;
    size_t idx; /* in room.clients */
} client;

static struct room {
    int announce_ms, poll_ms;
    msg *ring[RING];
    uint64_t last_seq;
    sp_mutex *mu; /* only because sp_cond_wait wants one: coroutines of one
                     loop do not run at the same time */
    sp_cond *news;
    sp_chan *out; /* seq numbers for the broadcaster */
    client **clients;
    size_t nclients, cap_clients;
    int anon_ws, anon_parked, parked;
    int started;
    uint64_t broadcasts;
    int64_t fanout_last_us, fanout_max_us;
} room;

static void msg_unref(msg *m) {
    if (m && --m->refs == 0)
        free(m);
}

static msg *ring_get(uint64_t seq) {
    if (seq == 0 || seq > room.last_seq || room.last_seq - seq >= RING)
        return NULL;
    return room.ring[seq % RING];
}

static uint64_t ring_oldest(void) {
    return room.last_seq >= RING ? room.last_seq - RING + 1 : 1;
}

/* Appends a message (built by fill, with the seq and ts added) to the log,
 * wakes the pollers and hands it to the broadcaster. */
static int post(int (*fill)(buf *b, const void *arg), const void *arg) {
    buf b = {0};
    uint64_t seq = room.last_seq + 1;
    if (buf_fmt(&b, "{\"seq\":%" PRIu64 ",\"ts\":%" PRId64 ",", seq, wall_ms()) < 0 ||
        fill(&b, arg) < 0 || buf_add(&b, "}", 1) < 0) {
        free(b.p);
        return -ENOMEM;
    }
    msg *m = malloc(sizeof *m + b.len + 1);
    if (!m) {
        free(b.p);
        return -ENOMEM;
    }
    m->refs = 1;
    m->seq = seq;
    m->len = b.len;
    memcpy(m->json, b.p, b.len + 1);
    free(b.p);
    msg_unref(room.ring[seq % RING]);
    room.ring[seq % RING] = m;
    room.last_seq = seq;
    sp_cond_broadcast(room.news);
    /* Unbounded: never waits, so it works from any context. */
    return sp_chan_send(room.out, &seq, 0);
}

typedef struct chat_line {
    const char *nick;
    const char *text;
    size_t text_len;
} chat_line;

static int fill_line(buf *b, const void *arg) {
    const chat_line *l = arg;
    if (buf_str(b, "\"type\":\"msg\",\"nick\":") < 0 ||
        buf_json_str(b, l->nick, strlen(l->nick)) < 0 || buf_str(b, ",\"text\":") < 0)
        return -ENOMEM;
    return buf_json_str(b, l->text, l->text_len);
}

/* Online: the visitors (chat_visitors.c), and each connection without a
 * cookie while it is open or parked. */
static int online_count(void) {
    return room.anon_ws + room.anon_parked + visitors_online(room.poll_ms);
}

static int fill_online(buf *b, const void *arg) {
    return buf_fmt(b, "\"type\":\"online\",\"n\":%d", online_count());
}

/* ---- broadcasting to the WebSockets ------------------------------------------- */

static void client_unref(client *c) {
    if (--c->refs == 0)
        free(c);
}

static int client_add(client *c) {
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

static void client_remove(client *c) {
    client *last = room.clients[--room.nclients];
    room.clients[c->idx] = last;
    last->idx = c->idx;
}

/* Sends m to c unless it has it already; per client, messages go out in
 * order because broadcasts run one after another. Without waiting: a
 * client whose socket cannot take m now has fallen a socket buffer behind
 * and is disconnected, rather than holding up the room. */
static void deliver(client *c, msg *m) {
    if (!c->ws || m->seq <= c->last_sent)
        return;
    int rc = sp_ws_send_timeout(c->ws, SP_WS_TEXT, m->json, m->len, 0);
    if (rc == 0)
        c->last_sent = m->seq;
    else if (rc == -ETIMEDOUT)
        fprintf(stderr,
                "chat: disconnected a WebSocket client that fell behind (its socket "
                "stayed full at message %" PRIu64 ")\n",
                m->seq);
    /* On failure the connection is done: its handler's sp_ws_recv ends at
     * once and it leaves the room. */
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

/* The broadcaster: one coroutine taking seq numbers from room.out. Each
 * message is sent to a snapshot of the clients by a few helper coroutines;
 * no send waits on a client (deliver), so one that stops reading cannot
 * hold up the others. */
static void broadcaster(void *arg) {
    sp_wg *wg = sp_wg_new();
    client **snap = NULL;
    size_t snap_cap = 0;
    uint64_t seq;
    while (wg && sp_chan_recv(room.out, &seq, -1) == 0) {
        msg *m = ring_get(seq);
        if (!m || room.nclients == 0)
            continue;
        int64_t t0 = mono_us();
        m->refs++;
        if (snap_cap < room.nclients) {
            client **p = realloc(snap, room.nclients * sizeof *p);
            if (!p) {
                msg_unref(m);
                continue;
            }
            snap = p;
            snap_cap = room.nclients;
        }
        size_t n = room.nclients;
        for (size_t i = 0; i < n; i++) {
            snap[i] = room.clients[i];
            snap[i]->refs++;
        }
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
        room.fanout_last_us = mono_us() - t0;
        if (room.fanout_last_us > room.fanout_max_us)
            room.fanout_max_us = room.fanout_last_us;
    }
    free(snap);
    sp_wg_free(wg);
}

static void announce(void *arg) {
    if (post(fill_online, NULL) < 0)
        fprintf(stderr, "chat: cannot announce: out of memory\n");
}

/* Per-worker start-up: the broadcaster and the announcement timer. */
static int room_start(sp_server *s, void *ud) {
    if (room.started)
        return 0;
    room.started = 1;
    room.mu = sp_mutex_new();
    room.news = sp_cond_new();
    room.out = sp_chan_new(0, sizeof(uint64_t));
    if (!room.mu || !room.news || !room.out || sp_spawn(broadcaster, NULL) < 0 ||
        !sp_every(room.announce_ms, announce, NULL))
        return -ENOMEM;
    return 0;
}

/* ---- handlers --------------------------------------------------------------- */

static int send_json(sp_res *res, int status, buf *b) {
    sp_res_header(res, "Cache-Control", "no-store");
    int rc = sp_res_send(res, status, "application/json", b->p ? b->p : "", b->len);
    free(b->p);
    return rc;
}

static int forbidden(sp_res *res) {
    return sp_res_send(res, 403, "text/plain", "cross-origin request refused\n", 29);
}

static int h_poll(sp_req *req, sp_res *res, void *ud) {
    uint64_t since = query_u64(req, "since", room.last_seq);
    visitor *v = visitor_get(req, room.poll_ms);
    ensure_id(req, res);
    buf b = {0};
    if (since > room.last_seq) { /* the server restarted: start over */
        buf_fmt(&b, "{\"seq\":%" PRIu64 ",\"reset\":true,\"messages\":[]}", room.last_seq);
        return send_json(res, 200, &b);
    }
    int rc = 0;
    if (room.last_seq == since) {
        int64_t deadline = sp_now_ms() + room.poll_ms;
        room.parked++;
        if (v)
            v->parked++;
        else
            room.anon_parked++;
        sp_mutex_lock(room.mu, -1);
        while (room.last_seq == since) {
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
        if (v) {
            v->parked--;
            v->last_poll = sp_now_ms();
        } else {
            room.anon_parked--;
        }
        if (rc == -ECONNRESET)
            return rc; /* the client left: nobody to answer */
        if (room.last_seq == since) {
            sp_res_header(res, "Cache-Control", "no-store");
            return sp_res_send(res, 204, NULL, "", 0);
        }
    }
    if (v)
        v->last_poll = sp_now_ms();
    uint64_t from = since + 1 > ring_oldest() ? since + 1 : ring_oldest();
    buf_fmt(&b, "{\"seq\":%" PRIu64 ",\"messages\":[", room.last_seq);
    for (uint64_t s = from; s <= room.last_seq; s++) {
        msg *m = ring_get(s);
        if (s != from)
            buf_add(&b, ",", 1);
        buf_add(&b, m->json, m->len);
    }
    if (buf_str(&b, "]}") < 0) {
        free(b.p);
        return -ENOMEM;
    }
    return send_json(res, 200, &b);
}

static int h_send(sp_req *req, sp_res *res, void *ud) {
    if (!same_origin(req))
        return forbidden(res);
    char text[TEXT_MAX + 2];
    ssize_t n = read_text(req, text, TEXT_MAX + 1);
    if (n == -EMSGSIZE || (n >= 0 && !text_ok(text, (size_t)n)))
        return sp_res_send(res, 400, "text/plain", "1 to 1000 bytes of UTF-8 text\n", 30);
    if (n < 0)
        return (int)n;
    char nick[NICK_MAX + 1];
    nickname(req, nick);
    chat_line l = {nick, text, (size_t)n};
    if (post(fill_line, &l) < 0)
        return -ENOMEM;
    buf b = {0};
    buf_fmt(&b, "{\"seq\":%" PRIu64 "}", room.last_seq);
    return send_json(res, 200, &b);
}

static int h_nick(sp_req *req, sp_res *res, void *ud) {
    if (!same_origin(req))
        return forbidden(res);
    char nick[NICK_MAX + 2];
    ssize_t n = read_text(req, nick, NICK_MAX + 1);
    if (n == -EMSGSIZE || (n >= 0 && (n == 0 || !utf8_ok((unsigned char *)nick, (size_t)n))))
        return sp_res_send(res, 400, "text/plain", "1 to 32 bytes of UTF-8, no controls\n", 36);
    if (n < 0)
        return (int)n;
    static const char keep[] = "-_.~";
    char hdr[3 * NICK_MAX + 80];
    size_t k = (size_t)snprintf(hdr, sizeof hdr, "nick=");
    for (ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)nick[i];
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c && strchr(keep, c)))
            hdr[k++] = (char)c;
        else
            k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%%%02X", c);
    }
    snprintf(hdr + k, sizeof hdr - k, "; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000");
    sp_res_header(res, "Set-Cookie", hdr);
    ensure_id(req, res);
    buf b = {0};
    buf_str(&b, "{\"nick\":");
    buf_json_str(&b, nick, (size_t)n);
    buf_str(&b, "}");
    return send_json(res, 200, &b);
}

static int h_me(sp_req *req, sp_res *res, void *ud) {
    char nick[NICK_MAX + 1];
    nickname(req, nick);
    ensure_id(req, res);
    buf b = {0};
    buf_str(&b, "{\"nick\":");
    buf_json_str(&b, nick, strlen(nick));
    buf_fmt(&b, ",\"seq\":%" PRIu64 ",\"online\":%d}", room.last_seq, online_count());
    return send_json(res, 200, &b);
}

static int h_stats(sp_req *req, sp_res *res, void *ud) {
    buf b = {0};
    buf_fmt(&b, "{\"ws\":%zu,\"parked\":%d,\"visitors\":%zu,", room.nclients, room.parked,
            visitors_known());
    buf_fmt(&b, "\"seq\":%" PRIu64 ",\"broadcasts\":%" PRIu64 ",", room.last_seq, room.broadcasts);
    buf_fmt(&b, "\"fanout_last_us\":%" PRId64 ",\"fanout_max_us\":%" PRId64 "}",
            room.fanout_last_us, room.fanout_max_us);
    return send_json(res, 200, &b);
}

static int h_ws(sp_req *req, sp_res *res, void *ud) {
    if (!same_origin(req))
        return forbidden(res);
    char nick[NICK_MAX + 1];
    nickname(req, nick);
    uint64_t since = query_u64(req, "since", room.last_seq > HISTORY ? room.last_seq - HISTORY : 0);
    visitor *v = visitor_get(req, room.poll_ms);
    ensure_id(req, res);
    sp_ws *ws = sp_ws_upgrade(req, res, &(sp_ws_options){.max_message = 4096});
    if (!ws)
        return errno == EINVAL ? sp_res_send(res, 400, "text/plain", "WebSocket only\n", 15)
                               : -errno;
    client *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->refs = 1;
    c->ws = ws;
    c->last_sent = since > room.last_seq ? room.last_seq : since;
    int rc = 0;
    /* Catch up with the log, then join the broadcasts: the last check and
     * joining happen without a yield between them, so nothing falls in the
     * gap, and deliver() skips what was sent here. */
    while (rc == 0 && c->last_sent < room.last_seq) {
        uint64_t s = c->last_sent + 1 > ring_oldest() ? c->last_sent + 1 : ring_oldest();
        msg *m = ring_get(s);
        m->refs++;
        rc = sp_ws_send(ws, SP_WS_TEXT, m->json, m->len);
        c->last_sent = m->seq;
        msg_unref(m);
    }
    if (rc == 0 && client_add(c) == 0) {
        if (v)
            v->ws++;
        else
            room.anon_ws++;
        sp_ws_msg in;
        while (sp_ws_recv(ws, &in, -1) == 0) {
            if (in.opcode != SP_WS_TEXT)
                continue;
            const char *t = in.data;
            size_t len = in.len;
            while (len && (t[len - 1] == ' ' || t[len - 1] == '\n' || t[len - 1] == '\r'))
                len--;
            while (len && (*t == ' ' || *t == '\n' || *t == '\r'))
                t++, len--;
            if (!text_ok(t, len))
                continue;
            chat_line l = {nick, t, len};
            post(fill_line, &l);
        }
        client_remove(c);
        if (v)
            v->ws--;
        else
            room.anon_ws--;
    }
    /* A helper may be sending to us: it fails with -EPIPE when we return;
     * none starts another send once ws is NULL. */
    c->ws = NULL;
    client_unref(c);
    return 0;
}

/* ---- main -------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: chat [--bind HOST:PORT] [--announce-ms N] [--poll-ms N] "
                    "[--ws-ping-ms N] [--ws-idle-ms N] [--static DIR] [--max-connections N] "
                    "[--no-guard-pages]\n");
}

int main(int argc, char **argv) {
    const char *bind = "127.0.0.1:8090", *dir = "examples/chat/static";
    sp_server_options o;
    sp_server_options_init(&o);
    room.announce_ms = 10000;
    room.poll_ms = 25000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-guard-pages") == 0) {
            o.no_guard_pages = 1;
            continue;
        }
        if (!val) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--bind") == 0)
            bind = val;
        else if (strcmp(a, "--announce-ms") == 0)
            room.announce_ms = atoi(val);
        else if (strcmp(a, "--poll-ms") == 0)
            room.poll_ms = atoi(val);
        else if (strcmp(a, "--ws-ping-ms") == 0)
            o.ws_ping_interval_ms = atoi(val);
        else if (strcmp(a, "--ws-idle-ms") == 0)
            o.ws_idle_timeout_ms = atoi(val);
        else if (strcmp(a, "--static") == 0)
            dir = val;
        else if (strcmp(a, "--max-connections") == 0)
            o.max_connections = atoi(val);
        else {
            usage();
            return 2;
        }
    }
    if (room.announce_ms < 1 || room.poll_ms < 1 || o.max_connections < 1 ||
        o.ws_ping_interval_ms < 1 || o.ws_idle_timeout_ms < 1) {
        usage();
        return 2;
    }
    sp_server *s = sp_server_new(&o);
    int rc = s ? sp_server_listen(s, bind) : -errno;
    if (rc < 0) {
        fprintf(stderr, "chat: cannot listen on %s: %s\n", bind, strerror(-rc));
        return 1;
    }
    if (sp_route(s, "GET", "/ws", h_ws, NULL) < 0 ||
        sp_route(s, "GET", "/poll", h_poll, NULL) < 0 ||
        sp_route(s, "POST", "/send", h_send, NULL) < 0 ||
        sp_route(s, "POST", "/nick", h_nick, NULL) < 0 ||
        sp_route(s, "GET", "/me", h_me, NULL) < 0 ||
        sp_route(s, "GET", "/stats", h_stats, NULL) < 0 || (rc = sp_static(s, "/", dir)) < 0) {
        fprintf(stderr, "chat: cannot serve %s: %s\n", dir, strerror(rc < 0 ? -rc : ENOMEM));
        return 1;
    }
    /* The timer and the broadcaster start with the worker. sp_server_run
     * (no master) does not run start-up hooks, so with our own loop we call
     * it here too; room_start runs once either way. */
    sp_server_on_worker_start(s, room_start, NULL);
    sp_loop *l = sp_loop_new(&(sp_loop_options){.no_guard_pages = o.no_guard_pages});
    if (!l || room_start(s, NULL) < 0) {
        fprintf(stderr, "chat: cannot start: %s\n", strerror(errno));
        return 1;
    }
    fprintf(stderr, "chat: http://%s/ (announcing every %d ms)\n", bind, room.announce_ms);
    rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0 ? 1 : 0;
}
