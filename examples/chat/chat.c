/* chat.c — a chat room on spindle, for any number of workers and
 * instances: a posted message is published on the bus (ROOM_TOPIC); each
 * worker reads the topic once and hands it to its WebSockets (/ws) and
 * parked long polls (/poll, POST /send) (chat_room.c); who is online is
 * counted across workers on a presence topic (chat_presence.c). The
 * nickname is a cookie, so every instance sees it. Run it under spindle:
 *   build/spindle --app build/examples/chat.so --root examples/chat/static \
 *       --workers 4 --bus redis://127.0.0.1:6379 --bind 127.0.0.1:8090
 * (--bus memory, the default, is one process: --workers 0 or 1), or
 * alone in one process: build/examples/chat (chat_main.c).
 * CHAT_ANNOUNCE_MS (10000) and CHAT_POLL_MS (25000) tune the timers.
 *
 * Ids are the bus's ("MS-SEQ"), so a page that reconnects to any worker
 * or instance with ?since=ID misses nothing the bus retains. A WebSocket
 * whose socket stays full (it stopped reading) is disconnected at the first
 * message it cannot take, so the fan-out never waits on it. A post the bus
 * cannot take (Redis down) is a 503 saying so, never a silent drop.
 *
 * Routes:
 *   GET  /ws?since=ID   WebSocket: every message after ID (default: the last
 *                       50), then each new one; a text message posts it;
 *                       its 101 names the worker (X-Chat-Worker: PID)
 *   GET  /poll?since=ID JSON {"id":LAST,"messages":[...]} of the messages
 *                       after ID, parked until there is one (204 after
 *                       CHAT_POLL_MS); without since, from now on
 *   POST /send          the body (text) posted under the visitor's nickname
 *   POST /nick          the body is the new nickname (a cookie remembers it)
 *   GET  /me            {"nick":..,"id":..,"history":..,"online":..}
 *   GET  /stats         this worker's counters (WebSockets, parked polls, pid)
 * Every message is a JSON object with "id", "type" ("msg" with "nick" and
 * "text", or "online" with "n") and "ts" (wall clock, ms). */
#include "chat.h"

#include "chat_presence.h"
#include "chat_room.h"
#include "chat_visitors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

chat_config chat_cfg = {10000, 25000};
static sp_server *server;
static int anon_ws, anon_parked;

/* Publishes {"ts":..,FIELDS} on the room's topic; the id into id_out. */
static int post(const char *fields, size_t len, char id_out[SP_BUS_ID_MAX]) {
    buf b = {0};
    int rc = -ENOMEM;
    if (buf_fmt(&b, "{\"ts\":%" PRId64 ",", wall_ms()) == 0 && buf_add(&b, fields, len) == 0 &&
        buf_add(&b, "}", 1) == 0)
        rc = sp_bus_publish(server, ROOM_TOPIC, b.p, b.len, id_out);
    free(b.p);
    return rc;
}

static int post_line(const char *nick, const char *text, size_t len, char id_out[SP_BUS_ID_MAX]) {
    buf b = {0};
    int rc = -ENOMEM;
    if (buf_str(&b, "\"type\":\"msg\",\"nick\":") == 0 &&
        buf_json_str(&b, nick, strlen(nick)) == 0 && buf_str(&b, ",\"text\":") == 0 &&
        buf_json_str(&b, text, len) == 0)
        rc = post(b.p, b.len, id_out);
    free(b.p);
    return rc;
}

static int local_anon(void) {
    return anon_ws + anon_parked;
}

static void announce(int online) {
    char f[64];
    int n = snprintf(f, sizeof f, "\"type\":\"online\",\"n\":%d", online);
    int rc = post(f, (size_t)n, NULL);
    if (rc < 0 && rc != -ESHUTDOWN)
        fprintf(stderr, "chat: cannot announce who is online: %s\n", strerror(-rc));
}

/* Per-worker start-up: the room's reader and the presence. */
int chat_worker_start(sp_server *s, void *ud) {
    static int started;
    if (started++)
        return 0;
    int presence_ms = chat_cfg.announce_ms < 5000 ? chat_cfg.announce_ms : 5000;
    int rc = room_start(s);
    if (rc == 0)
        rc = presence_start(s, presence_ms, chat_cfg.announce_ms, chat_cfg.poll_ms, local_anon,
                            announce);
    return rc;
}

/* ---- handlers --------------------------------------------------------------- */

static int send_json(sp_res *res, int status, buf *b) {
    sp_res_header(res, "Cache-Control", "no-store");
    int rc = sp_res_send(res, status, "application/json", b->p ? b->p : "", b->len);
    free(b->p);
    return rc;
}

static int text_reply(sp_res *res, int status, const char *text) {
    sp_res_header(res, "Cache-Control", "no-store");
    return sp_res_send(res, status, "text/plain", text, strlen(text));
}

static int forbidden(sp_res *res) {
    return text_reply(res, 403, "cross-origin request refused\n");
}

/* A failed publish or catch-up, for people: what is wrong and what to do. */
static int bus_failed(sp_res *res, int err) {
    char t[200];
    snprintf(t, sizeof t,
             "the chat's message bus is unavailable (%s): nothing was posted or lost; try again "
             "shortly\n",
             strerror(err));
    return text_reply(res, 503, t);
}

static int bad_since(sp_res *res) {
    return text_reply(res, 400, "since: a message id such as 1700000000000-0\n");
}

static int emit_json(msg *m, void *arg) {
    buf *b = arg;
    if (b->len && b->p[b->len - 1] != '[' && buf_add(b, ",", 1) < 0)
        return -ENOMEM;
    return buf_add(b, m->json, m->len);
}

static int h_poll(sp_req *req, sp_res *res, void *ud) {
    visitor *v = visitor_get(req, chat_cfg.poll_ms);
    ensure_id(req, res);
    room_wait_ready(2000);
    chat_id since, from;
    int has = query_id(req, "since", &since);
    if (has < 0)
        return bad_since(res);
    if (!has)
        since = room_last();
    buf b = {0};
    char ids[SP_BUS_ID_MAX];
    if (buf_str(&b, "[") < 0)
        return -ENOMEM;
    from = since;
    int n = room_catch_up(&from, emit_json, &b);
    if (n == 0) {
        if (v)
            v->parked++;
        else
            anon_parked++;
        int rc = room_wait_news(since, chat_cfg.poll_ms);
        if (v) {
            v->parked--;
            v->last_poll = sp_now_ms();
        } else {
            anon_parked--;
        }
        if (rc == -ECONNRESET) {
            free(b.p);
            return rc; /* the client left: nobody to answer */
        }
        n = rc > 0 ? room_catch_up(&from, emit_json, &b) : 0;
    }
    if (v)
        v->last_poll = sp_now_ms();
    if (n < 0) {
        free(b.p);
        return n == -ENOMEM ? n : bus_failed(res, -n);
    }
    if (n == 0) {
        free(b.p);
        sp_res_header(res, "Cache-Control", "no-store");
        return sp_res_send(res, 204, NULL, "", 0);
    }
    buf out = {0};
    id_format(from, ids);
    int rc = buf_fmt(&out, "{\"id\":\"%s\",\"messages\":", ids);
    if (rc == 0)
        rc = buf_add(&out, b.p, b.len);
    free(b.p);
    if (rc < 0 || buf_str(&out, "]}") < 0) {
        free(out.p);
        return -ENOMEM;
    }
    return send_json(res, 200, &out);
}

static int h_send(sp_req *req, sp_res *res, void *ud) {
    if (!same_origin(req))
        return forbidden(res);
    char text[TEXT_MAX + 2];
    ssize_t n = read_text(req, text, TEXT_MAX + 1);
    if (n == -EMSGSIZE)
        return text_reply(res, 413, "a message is at most 1000 bytes of UTF-8 text\n");
    if (n >= 0 && !text_ok(text, (size_t)n))
        return text_reply(res, 400, "1 to 1000 bytes of UTF-8 text\n");
    if (n < 0)
        return (int)n;
    char nick[NICK_MAX + 1], id[SP_BUS_ID_MAX];
    nickname(req, nick);
    int rc = post_line(nick, text, (size_t)n, id);
    if (rc < 0)
        return rc == -ENOMEM ? rc : bus_failed(res, -rc);
    buf b = {0};
    buf_fmt(&b, "{\"id\":\"%s\"}", id);
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
    char nick[NICK_MAX + 1], last[SP_BUS_ID_MAX], hist[SP_BUS_ID_MAX];
    nickname(req, nick);
    ensure_id(req, res);
    room_wait_ready(2000);
    id_format(room_last(), last);
    id_format(room_history_start(), hist);
    buf b = {0};
    buf_str(&b, "{\"nick\":");
    buf_json_str(&b, nick, strlen(nick));
    buf_fmt(&b, ",\"id\":\"%s\",\"history\":\"%s\",", last, hist);
    buf_fmt(&b, "\"online\":%d}", presence_online());
    return send_json(res, 200, &b);
}

static int h_stats(sp_req *req, sp_res *res, void *ud) {
    char last[SP_BUS_ID_MAX];
    id_format(room_last(), last);
    buf b = {0};
    buf_fmt(&b, "{\"ws\":%zu,\"parked\":%d,\"visitors\":%zu,", room_clients(), room_parked(),
            visitors_known());
    buf_fmt(&b, "\"id\":\"%s\",\"pid\":%d,\"broadcasts\":%" PRIu64 ",", last, (int)getpid(),
            room_broadcasts());
    buf_fmt(&b, "\"fanout_max_us\":%" PRId64 "}", room_fanout_max_us());
    return send_json(res, 200, &b);
}

static int emit_ws(msg *m, void *arg) {
    return sp_ws_send(arg, SP_WS_TEXT, m->json, m->len);
}

/* A WebSocket's text: posted; what the bus refuses is said back to it.
 * Not inlined: its buffers would widen the handler's frame, which stays on
 * the stack of every parked WebSocket (two pages, issue 23). */
__attribute__((noinline)) static void ws_post(sp_ws *ws, const char *nick, const sp_ws_msg *in) {
    const char *t = in->data;
    size_t len = in->len;
    while (len && (t[len - 1] == ' ' || t[len - 1] == '\n' || t[len - 1] == '\r'))
        len--;
    while (len && (*t == ' ' || *t == '\n' || *t == '\r'))
        t++, len--;
    if (!text_ok(t, len))
        return;
    int rc = post_line(nick, t, len, NULL);
    if (rc < 0) {
        char note[200];
        int n = snprintf(note, sizeof note,
                         "{\"type\":\"error\",\"text\":\"not sent: the message bus is "
                         "unavailable (%s); try again shortly\"}",
                         strerror(-rc));
        sp_ws_send_timeout(ws, SP_WS_TEXT, note, (size_t)n, 0);
    }
}

static int h_ws(sp_req *req, sp_res *res, void *ud) {
    if (!same_origin(req))
        return forbidden(res);
    char nick[NICK_MAX + 1];
    nickname(req, nick);
    chat_id since;
    int has = query_id(req, "since", &since);
    if (has < 0)
        return bad_since(res);
    visitor *v = visitor_get(req, chat_cfg.poll_ms);
    ensure_id(req, res);
    room_wait_ready(2000);
    if (!has)
        since = room_history_start();
    char pid[16]; /* which worker holds the socket: for operators and tests */
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    sp_res_header(res, "X-Chat-Worker", pid);
    sp_ws *ws = sp_ws_upgrade(req, res, &(sp_ws_options){.max_message = 4096});
    if (!ws)
        return errno == EINVAL ? text_reply(res, 400, "WebSocket only\n") : -errno;
    client *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->refs = 1;
    c->ws = ws;
    c->last_sent = since;
    /* Catch up, then join the fan-out: room_catch_up's last look at the
     * ring and the join have no yield between them, so nothing falls in
     * the gap, and deliver() skips what was sent here. */
    int rc = room_catch_up(&c->last_sent, emit_ws, ws);
    if (rc < 0 && rc != -EPIPE && rc != -ECONNRESET && rc != -ETIMEDOUT)
        sp_ws_close(ws, 1013, "the message bus is unavailable: reconnect shortly");
    else if (rc >= 0 && room_join(c) == 0) {
        if (v)
            v->ws++;
        else
            anon_ws++;
        sp_ws_msg in;
        while (sp_ws_recv(ws, &in, -1) == 0)
            if (in.opcode == SP_WS_TEXT)
                ws_post(ws, nick, &in);
        room_leave(c);
        if (v)
            v->ws--;
        else
            anon_ws--;
    }
    /* A helper may be sending to us: it fails with -EPIPE when we return;
     * none starts another send once ws is NULL. */
    c->ws = NULL;
    client_unref(c);
    return 0;
}

/* ---- start-up ------------------------------------------------------------------ */

static int env_ms(const char *name, int dflt) {
    const char *v = getenv(name);
    int n = v ? atoi(v) : dflt;
    return n > 0 ? n : dflt;
}

int chat_init(sp_server *s) {
    server = s;
    int rc;
    if ((rc = sp_route(s, "GET", "/ws", h_ws, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/poll", h_poll, NULL)) < 0 ||
        (rc = sp_route(s, "POST", "/send", h_send, NULL)) < 0 ||
        (rc = sp_route(s, "POST", "/nick", h_nick, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/me", h_me, NULL)) < 0 ||
        (rc = sp_route(s, "GET", "/stats", h_stats, NULL)) < 0 ||
        (rc = sp_server_on_worker_start(s, chat_worker_start, NULL)) < 0)
        return rc;
    return 0;
}

/* Under spindle --app: the timers from the environment, and a memory bus
 * unless --bus names one (the flag replaces this after init). */
static int app_init(sp_server *s) {
    chat_cfg.announce_ms = env_ms("CHAT_ANNOUNCE_MS", chat_cfg.announce_ms);
    chat_cfg.poll_ms = env_ms("CHAT_POLL_MS", chat_cfg.poll_ms);
    int rc = sp_bus_configure(s, "memory");
    return rc < 0 ? rc : chat_init(s);
}

SP_APP_MODULE(app_init)
