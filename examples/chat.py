"""chat.py — the chat room of examples/chat as a WSGI app on spindle's Python
toolkit: WebSockets (spindle.websocket) with long polling as the fallback
(spindle.Event parks the pollers), the nickname in spindle.session, and a
spindle.every timer announcing how many visitors are online. The page and its
script are examples/chat/static, served by spindle in C (--root):

    python3 -m spindle chat:app --chdir examples --root chat/static \\
        --sessions memory --workers 0 --bind 127.0.0.1:8090

The same HTTP API as the C chat (examples/chat/chat.c): GET /ws?since=N,
GET /poll?since=N, POST /send, POST /nick, GET /me, GET /stats. The room is in
the process's memory, so one process serves it (--workers 0 or 1).
CHAT_ANNOUNCE_MS (10000) and CHAT_POLL_MS (25000) tune the timers.

A broadcast never waits on one slow reader: each WebSocket gets its copy
with send(timeout=0), so one whose socket is full is dropped at once (it may
reconnect with ?since=N) instead of stalling the room.
"""
import collections
import json
import os
import sys
import time
import urllib.parse

import spindle

RING = 256  # messages kept for late pollers and new pages
HISTORY = 50  # sent to a new WebSocket without ?since
NICK_MAX = 32
TEXT_MAX = 1000
ANNOUNCE_MS = int(os.environ.get("CHAT_ANNOUNCE_MS", "10000"))
POLL_MS = int(os.environ.get("CHAT_POLL_MS", "25000"))


class Room:
    def __init__(self):
        self.log = collections.deque(maxlen=RING)  # (seq, json text)
        self.seq = 0
        self.news = spindle.Event()  # set, then replaced, at each message
        self.sockets = {}  # WebSocket -> visitor id
        self.parked = 0
        self.seen = {}  # visitor id -> last time seen (monotonic s)
        self.timer = None

    def post(self, fields):
        self.seq += 1
        fields = dict(fields, seq=self.seq, ts=int(time.time() * 1000))
        text = json.dumps(fields, separators=(",", ":"))
        self.log.append((self.seq, text))
        news, self.news = self.news, spindle.Event()
        news.set()  # every parked poller wakes; later ones wait on the new one
        for ws in list(self.sockets):
            try:
                ws.send(text, timeout=0)
            except (TimeoutError, OSError):
                # Its socket is full (it stopped reading) or it is gone:
                # dropped now; its view sees receive() return None.
                if self.sockets.pop(ws, None) is not None:
                    print("chat: a WebSocket fell behind and was dropped", file=sys.stderr)

    def after(self, since):
        return [text for seq, text in self.log if seq > since]

    def online(self):
        cutoff = time.monotonic() - POLL_MS / 1000.0 - 5
        for vid, t in list(self.seen.items()):
            if t < cutoff:
                del self.seen[vid]
        return len(set(self.seen) | set(self.sockets.values()))

    def announce(self):
        self.post({"type": "online", "n": self.online()})


room = Room()


@spindle.on_worker_start
def _start():
    room.timer = spindle.every(ANNOUNCE_MS / 1000.0, room.announce)


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
    q = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    try:
        return max(0, int(q["since"][0]))
    except (KeyError, ValueError):
        return default


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
    since = since_arg(environ, max(0, room.seq - HISTORY))
    ws = spindle.websocket(environ)
    for text in room.after(since):  # catch up, then join: no yield between
        ws.send(text)
    room.sockets[ws] = vid
    try:
        for text in ws:
            if isinstance(text, str) and (text := clean(text, TEXT_MAX)):
                room.post({"type": "msg", "nick": nick, "text": text})
    finally:
        room.sockets.pop(ws, None)
    return []


def poll_view(environ, start_response):
    visitor(environ)
    since = since_arg(environ, room.seq)
    if since > room.seq:  # the server restarted: start over
        return reply(start_response, "200 OK", {"seq": room.seq, "reset": True, "messages": []})
    if since == room.seq:
        room.parked += 1
        try:
            room.news.wait(POLL_MS / 1000.0)
        finally:
            room.parked -= 1
        if since == room.seq:
            start_response("204 No Content", [("Cache-Control", "no-store")])
            return []
    msgs = ",".join(room.after(since))
    body = ('{"seq":%d,"messages":[%s]}' % (room.seq, msgs)).encode()
    return reply(start_response, "200 OK", body)


def send_view(environ, start_response):
    sess, _ = visitor(environ)
    text = clean(body_text(environ), TEXT_MAX)
    if text is None:
        return reply(start_response, "400 Bad Request", b"1 to 1000 characters, no control "
                     b"characters\n", "text/plain")
    room.post({"type": "msg", "nick": nick_of(sess), "text": text})
    return reply(start_response, "200 OK", {"seq": room.seq})


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
    return reply(start_response, "200 OK",
                 {"nick": nick_of(sess), "seq": room.seq, "online": room.online()})


def stats_view(environ, start_response):
    return reply(start_response, "200 OK",
                 {"ws": len(room.sockets), "parked": room.parked, "seq": room.seq})


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
    return view(environ, start_response)
