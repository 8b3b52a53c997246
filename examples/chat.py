"""chat.py — the chat room of examples/chat as a WSGI app on spindle's Python
toolkit, for any number of workers and instances: a posted message is
spindle.publish'ed on the room's topic; each worker reads the topic once
(a spindle.spawn'ed greenlet) into a ring of the last messages, wakes its
long polls (spindle.Event) and sends to its WebSockets (spindle.websocket);
the nickname is in spindle.session; who is online is counted across
workers on the same topic (see Presence). The page and its script are
examples/chat/static, served by spindle in C (--root):

    python3 -m spindle chat:app --chdir examples --root chat/static \\
        --workers 4 --bus redis://127.0.0.1:6379 --sessions redis://127.0.0.1:6379

(--bus memory and --sessions memory are one process: --workers 0.) The same
HTTP API as the C chat (examples/chat/chat.c): GET /ws?since=ID,
GET /poll?since=ID, POST /send, POST /nick, GET /me, GET /stats; ids are the
bus's ("MS-SEQ"), so a page that reconnects anywhere with ?since= misses
nothing the bus retains. CHAT_ANNOUNCE_MS (10000) and CHAT_POLL_MS (25000)
tune the timers.

A broadcast never waits on one slow reader: each WebSocket gets its copy
with send(timeout=0), so one whose socket is full is dropped at once (it may
reconnect with ?since=ID) instead of stalling the room. A post the bus
cannot take is a 503 saying so, never a silent drop.
"""
import collections
import json
import os
import sys
import time
import urllib.parse

import spindle

TOPIC = "chat:room"
RING = 256  # messages kept in each worker for pollers and new pages
HISTORY = 50  # sent to a new WebSocket without ?since
NICK_MAX = 32
TEXT_MAX = 1000
ANNOUNCE_MS = int(os.environ.get("CHAT_ANNOUNCE_MS", "10000"))
POLL_MS = int(os.environ.get("CHAT_POLL_MS", "25000"))
PERIOD = min(ANNOUNCE_MS, 5000) / 1000.0  # presence
EXPIRE = 3 * PERIOD


def id_key(i):
    ms, _, seq = i.partition("-")
    return int(ms), int(seq or 0)


def bus_down(e):
    return ("the chat's message bus is unavailable (%s): nothing was posted or lost; try "
            "again shortly\n" % (e.strerror or e)).encode()


class Presence:
    """Who is online, once across workers and instances: every PERIOD each
    worker publishes {"w": WORKER, "a": ANONYMOUS, "v": [session ids]} on
    the room's topic (the reader hands it here; clients never see it); each
    keeps the latest of every worker it hears and forgets those silent for
    three periods. A new worker hears them with the history at start. The
    worker with the smallest id announces the count."""

    def __init__(self):
        self.me = os.urandom(8).hex()
        self.peers = {}  # worker -> (monotonic seen, set of ids, anonymous)

    def heard(self, msg_id, d):
        if d["w"] != self.me and id_key(msg_id)[0] / 1000.0 >= time.time() - EXPIRE:
            self.peers[d["w"]] = (time.monotonic(), set(d["v"]), int(d["a"]))

    def live(self):
        cutoff = time.monotonic() - EXPIRE
        self.peers = {w: p for w, p in self.peers.items() if p[0] >= cutoff}
        return self.peers

    def online(self):
        ids, anon = set(room.local_ids()), 0
        for _, v, a in self.live().values():
            ids |= v
            anon += a
        return len(ids) + anon

    def leader(self):
        return all(self.me < w for w in self.live())


class Room:
    def __init__(self):
        self.ring = collections.deque(maxlen=RING)  # (id key, id, json text)
        self.total = 0
        self.ready = spindle.Event()
        self.news = spindle.Event()  # set, then replaced, at each message
        self.sockets = {}  # WebSocket -> [visitor id, last id sent]
        self.parked = 0
        self.seen = {}  # visitor id -> last time seen (monotonic s)
        self.next_announce = 0.0

    def last(self):
        return self.ring[-1][1] if self.ring else "0-0"

    def history_start(self):
        return self.ring[-HISTORY - 1][1] if len(self.ring) > HISTORY else "0-0"

    def covers(self, since):
        """The ring has every message after since: it was read from the
        topic's start and dropped nothing, or it reaches back to since."""
        return self.ready.is_set() and (self.total <= RING or self.ring[0][0] <= id_key(since))

    def take(self, m):
        """A message from the bus: presence, or a line for the ring."""
        try:
            d = json.loads(m.data)
        except ValueError:
            return None
        if "w" in d:
            presence.heard(m.id, d)
            return None
        key = id_key(m.id)
        if self.ring and key <= self.ring[-1][0]:
            return None
        text = json.dumps(dict({"id": m.id}, **d), separators=(",", ":"))
        self.ring.append((key, m.id, text))
        self.total += 1
        return text

    def reader(self):
        """The worker's one subscription: resubscribes from its last id
        when cut or when the bus refuses (backing off to 2 s)."""
        since, backoff = "0", 0.1
        while True:
            try:
                sub = spindle.subscribe(TOPIC, since)
            except spindle.BusError as e:
                if e.errno in (errno_of("ESHUTDOWN"), errno_of("ENXIO")):
                    return
                spindle.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.1
            try:
                while True:
                    try:
                        m = sub.recv(timeout=None if self.ready.is_set() else 0)
                    except spindle.BusError as e:
                        if e.errno == errno_of("ECONNRESET"):
                            continue  # Redis away: the subscription resumes by itself
                        raise
                    if m is None:
                        self.ready.set()
                        continue
                    text = self.take(m)
                    if text is not None:
                        self.broadcast(m.id, text)
            except spindle.BusError as e:
                if e.errno == errno_of("ESHUTDOWN"):
                    return
                print("chat: the room's subscription ended (%s); resuming" % e, file=sys.stderr)
            finally:
                since = sub.last_id
                sub.close()

    def broadcast(self, msg_id, text):
        news, self.news = self.news, spindle.Event()
        news.set()  # every parked poller wakes; later ones wait on the new one
        key = id_key(msg_id)
        for ws, st in list(self.sockets.items()):
            if id_key(st[1]) >= key:
                continue
            try:
                ws.send(text, timeout=0)
                st[1] = msg_id
            except (TimeoutError, OSError):
                # Its socket is full (it stopped reading) or it is gone:
                # dropped now; its view sees receive() return None.
                if self.sockets.pop(ws, None) is not None:
                    print("chat: a WebSocket fell behind and was dropped", file=sys.stderr)

    def after(self, since):
        """[(id, text)] of the messages after since, from the ring or, when
        it does not reach back so far, from the bus (BusError if down)."""
        out = []
        if not self.covers(since):
            with spindle.subscribe(TOPIC, since) as sub:
                while not self.covers(since):
                    m = sub.recv(timeout=0)
                    if m is None:
                        break
                    try:
                        d = json.loads(m.data)
                    except ValueError:
                        continue
                    if "w" not in d:
                        out.append((m.id, json.dumps(dict({"id": m.id}, **d), separators=(",", ":"))))
                    since = m.id
        key = id_key(since)
        return out + [(i, t) for k, i, t in self.ring if k > key]

    def local_ids(self):
        cutoff = time.monotonic() - POLL_MS / 1000.0 - 5
        for vid, t in list(self.seen.items()):
            if t < cutoff:
                del self.seen[vid]
        return set(self.seen) | {st[0] for st in self.sockets.values()}

    def tick(self):
        """Every period: this worker's presence; every ANNOUNCE_MS, from the
        leader, the count. A presence the bus refuses waits for the next."""
        try:
            spindle.publish(TOPIC, json.dumps({"w": presence.me, "a": 0,
                                               "v": sorted(self.local_ids())}))
            if time.monotonic() >= self.next_announce:
                self.next_announce = time.monotonic() + ANNOUNCE_MS / 1000.0
                if presence.leader():
                    post({"type": "online", "n": presence.online()})
        except spindle.BusError as e:
            print("chat: cannot publish who is online: %s" % e, file=sys.stderr)


def errno_of(name):
    import errno
    return getattr(errno, name)


def post(fields):
    """Publishes a line; its id. BusError when the bus cannot take it."""
    return spindle.publish(TOPIC, json.dumps(dict(fields, ts=int(time.time() * 1000)),
                                             separators=(",", ":")))


room = Room()
presence = Presence()


@spindle.on_worker_start
def _start():
    room.next_announce = time.monotonic() + ANNOUNCE_MS / 1000.0
    spindle.spawn(room.reader)
    room.timer = spindle.every(PERIOD, room.tick)


@spindle.on_worker_stop
def _stop():
    room.news.set()  # release the long polls before the graceful timeout


# ---- helpers ---------------------------------------------------------------


def clean(text, limit):
    """The text stripped, or None if empty, too long or with control chars."""
    text = text.strip(" \r\n")
    if not text or len(text) > limit or any(ord(c) < 32 or ord(c) == 127 for c in text):
        return None
    return text


def same_origin(environ):
    origin = environ.get("HTTP_ORIGIN")
    if origin is None:
        return True
    host = environ.get("HTTP_HOST", "")
    return origin in ("http://" + host, "https://" + host)


def since_arg(environ, default):
    """The ?since= id, default when absent; ValueError if malformed."""
    q = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    if "since" not in q:
        return default
    since = q["since"][0]
    id_key(since)
    return since


def visitor(environ):
    """The visitor's session (the nickname lives there) and its id, marked seen.
    A new session is stored at once: an empty one is not kept, and each later
    request would get a fresh id and cookie — one answered late (a long poll)
    would then replace the cookie a POST /nick just set."""
    s = spindle.session(environ)
    if not s:
        s["joined"] = str(int(time.time()))
    room.seen[s.id] = time.monotonic()
    return s, s.id


def nick_of(sess):
    return sess.get("nick", "anonymous")


def body_text(environ, limit=4096):
    try:
        n = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        n = 0
    data = environ["wsgi.input"].read(min(max(n, 0), limit))
    return data.decode("utf-8", "replace")


def reply(start_response, status, body, ctype="application/json"):
    if not isinstance(body, bytes):
        body = json.dumps(body, separators=(",", ":")).encode()
    start_response(status, [("Content-Type", ctype), ("Cache-Control", "no-store"),
                            ("Content-Length", str(len(body)))])
    return [body]


# ---- routes ----------------------------------------------------------------


def ws_view(environ, start_response):
    sess, vid = visitor(environ)
    nick = nick_of(sess)
    room.ready.wait(2)
    since = since_arg(environ, room.history_start())
    try:
        backlog = room.after(since)
    except spindle.BusError as e:
        return reply(start_response, "503 Service Unavailable", bus_down(e), "text/plain")
    ws = spindle.websocket(environ)
    last = since
    for msg_id, text in backlog:
        ws.send(text)
        last = msg_id
    # What came meanwhile, until a look finds nothing: that look (the ring
    # only) and the join have no yield between them, so nothing is missed.
    while more := room.after(last):
        for msg_id, text in more:
            ws.send(text)
            last = msg_id
    room.sockets[ws] = [vid, last]
    try:
        for text in ws:
            if isinstance(text, str) and (text := clean(text, TEXT_MAX)):
                try:
                    post({"type": "msg", "nick": nick, "text": text})
                except spindle.BusError as e:
                    ws.send(json.dumps({"type": "error", "text": bus_down(e).decode().strip()}),
                            timeout=0)
    finally:
        room.sockets.pop(ws, None)
    return []


def poll_view(environ, start_response):
    visitor(environ)
    room.ready.wait(2)
    since = since_arg(environ, room.last())
    try:
        msgs = room.after(since)
        if not msgs:
            room.parked += 1
            try:
                news = room.news
                if id_key(room.last()) <= id_key(since):
                    news.wait(POLL_MS / 1000.0)
            finally:
                room.parked -= 1
            msgs = room.after(since)
    except spindle.BusError as e:
        return reply(start_response, "503 Service Unavailable", bus_down(e), "text/plain")
    if not msgs:
        start_response("204 No Content", [("Cache-Control", "no-store")])
        return []
    body = ('{"id":"%s","messages":[%s]}' % (msgs[-1][0], ",".join(t for _, t in msgs))).encode()
    return reply(start_response, "200 OK", body)


def send_view(environ, start_response):
    sess, _ = visitor(environ)
    raw = body_text(environ, 1 << 21)
    if len(raw.encode()) > TEXT_MAX and raw.strip(" \r\n"):
        return reply(start_response, "413 Content Too Large",
                     b"a message is at most 1000 characters\n", "text/plain")
    text = clean(raw, TEXT_MAX)
    if text is None:
        return reply(start_response, "400 Bad Request", b"1 to 1000 characters, no control "
                     b"characters\n", "text/plain")
    try:
        msg_id = post({"type": "msg", "nick": nick_of(sess), "text": text})
    except spindle.BusError as e:
        return reply(start_response, "503 Service Unavailable", bus_down(e), "text/plain")
    return reply(start_response, "200 OK", {"id": msg_id})


def nick_view(environ, start_response):
    sess, _ = visitor(environ)
    nick = clean(body_text(environ, 256), NICK_MAX)
    if nick is None:
        return reply(start_response, "400 Bad Request", b"nicknames are 1 to 32 characters\n",
                     "text/plain")
    sess["nick"] = nick
    return reply(start_response, "200 OK", {"nick": nick})


def me_view(environ, start_response):
    sess, _ = visitor(environ)
    room.ready.wait(2)
    return reply(start_response, "200 OK",
                 {"nick": nick_of(sess), "id": room.last(), "history": room.history_start(),
                  "online": presence.online()})


def stats_view(environ, start_response):
    return reply(start_response, "200 OK", {"ws": len(room.sockets), "parked": room.parked,
                                            "id": room.last(), "pid": os.getpid()})


ROUTES = {("GET", "/ws"): ws_view, ("GET", "/poll"): poll_view, ("POST", "/send"): send_view,
          ("POST", "/nick"): nick_view, ("GET", "/me"): me_view, ("GET", "/stats"): stats_view}


def app(environ, start_response):
    view = ROUTES.get((environ["REQUEST_METHOD"], environ["PATH_INFO"]))
    if view is None:
        return reply(start_response, "404 Not Found", b"not found\n", "text/plain")
    if environ["REQUEST_METHOD"] == "POST" or view is ws_view:
        if not same_origin(environ):
            return reply(start_response, "403 Forbidden", b"cross-origin request refused\n",
                         "text/plain")
    if view is ws_view and environ.get("HTTP_UPGRADE", "").lower() != "websocket":
        return reply(start_response, "400 Bad Request", b"WebSocket only\n", "text/plain")
    try:
        return view(environ, start_response)
    except spindle.BusError as e:
        return reply(start_response, "503 Service Unavailable", bus_down(e), "text/plain")
    except OSError as e:  # spindle.session's store (Redis) is away: nothing was done
        if getattr(e, "errno", None) not in (errno_of("EIO"), errno_of("ECONNREFUSED"),
                                               errno_of("ETIMEDOUT"), errno_of("ECONNRESET")):
            raise
        return reply(start_response, "503 Service Unavailable",
                     ("the chat's session store is unavailable (%s): nothing was posted; try "
                      "again shortly\n" % e.strerror).encode(), "text/plain")
    except ValueError:  # a malformed ?since=
        return reply(start_response, "400 Bad Request",
                     b"since: a message id such as 1700000000000-0\n", "text/plain")
