"""The C chat scaled out on the bus (issue 30, items 3 and 4): chat.so under
build/spindle with --workers 4 (the memory bus across them, and Redis), two instances behind Debian's
nginx as a load balancer, and the faults — Redis restarted mid-chat, an
instance killed with kill -9, workers recycled by --max-requests with
WebSockets on them, a flood of small messages — each checked for no gap:
every message accepted reaches every client, in order, once."""
import json
import os
import socket
import subprocess
import time

import pytest

from lib.chatutil import CHAT_SO, ROOT, ChatApp, WSClosed, id_key, non_reader, open_spread, ws_worker
from lib.client import Conn
from lib.proctools import free_port
from lib.sessutil import Redis

NGINX = "/usr/sbin/nginx"
CHROMIUM = "/usr/bin/chromium"
FAST = {"CHAT_ANNOUNCE_MS": "300", "CHAT_POLL_MS": "4000"}


@pytest.fixture
def redis(tmp_path):
    r = Redis(tmp_path, appendonly=True)
    yield r
    r.stop()


@pytest.fixture
def apps(tmp_path):
    if not os.path.exists(CHAT_SO):
        pytest.fail("%s is not built (Makefile: $(B)/examples/chat.so)" % CHAT_SO)
    started = []

    def start(**kw):
        kw.setdefault("env", FAST)
        a = ChatApp(tmp_path, **kw)
        started.append(a)
        return a

    yield start
    problems = []
    for a in started:
        a.stop()
        err = a.stderr()
        for mark in ("killed by signal", "free():", "AddressSanitizer", "refused XREAD"):
            if mark in err:
                problems.append("%s in the chat's log:\n%s" % (mark, err[-3000:]))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def http(port, method, path, body=b"", headers=(), timeout=5.0):
    if isinstance(body, str):
        body = body.encode()
    with Conn(("127.0.0.1", port), timeout) as c:
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method, path, port)
        for k, v in headers:
            head += "%s: %s\r\n" % (k, v)
        if method == "POST":
            head += "Content-Length: %d\r\nContent-Type: text/plain\r\n" % len(body)
        c.send(head.encode() + b"\r\n" + body)
        return c.read_response(method)


def post(port, text, headers=()):
    r = http(port, "POST", "/send", text, headers)
    assert r.status == 200, r
    return json.loads(r.body)["id"]


def visitor(port, nick):
    r = http(port, "POST", "/nick", nick)
    assert r.status == 200, r
    jar = {}
    for v in r.all("Set-Cookie"):
        k, _, rest = v.partition("=")
        jar[k] = rest.split(";")[0]
    return "nick=%s; chat_id=%s" % (jar["nick"], jar["chat_id"])


def texts_until(ws, last_text, timeout=5.0, kind="msg"):
    """The chat lines a WebSocket gets until last_text; ids must increase."""
    out, prev, end = [], None, time.monotonic() + timeout
    while time.monotonic() < end:
        m = ws.recv_json(max(0.1, end - time.monotonic()))
        assert prev is None or id_key(m["id"]) > id_key(prev), (prev, m)
        prev = m["id"]
        if m["type"] == kind:
            out.append(m["text"])
            if m["text"] == last_text:
                return out, prev
    pytest.fail("no %r within %.0f s; got %r" % (last_text, timeout, out[-5:]))


def poll(port, since, timeout=6.0):
    r = http(port, "GET", "/poll?since=%s" % since, timeout=timeout)
    assert r.status in (200, 204), r
    return json.loads(r.body) if r.status == 200 else {"id": since, "messages": []}


def poll_texts_until(port, since, last_text, timeout=8.0):
    out, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        d = poll(port, since)
        out += [m["text"] for m in d["messages"] if m["type"] == "msg"]
        since = d["id"]
        if last_text in out:
            return out, since
    pytest.fail("poll: no %r; got %r" % (last_text, out[-5:]))


def open_poll(port, since):
    c = Conn(("127.0.0.1", port), 8)
    c.send("GET /poll?since=%s HTTP/1.1\r\nHost: x\r\n\r\n" % since)
    return c


def conn_poll_until(c, text, tries=5):
    """A parked poll's answers, polling again (keep-alive) past "online"
    announcements, until a chat line comes: the lines."""
    for _ in range(tries):
        r = c.read_response()
        assert r.status in (200, 204), r
        d = json.loads(r.body) if r.status == 200 else None
        lines = [m["text"] for m in d["messages"] if m["type"] == "msg"] if d else []
        if lines:
            return lines
        c.send("GET /poll?since=%s HTTP/1.1\r\nHost: x\r\n\r\n" % d["id"])
    pytest.fail("no %r in %d polls" % (text, tries))


def worker_stats(port, n=32):
    """Each worker's /stats, by pid: n connections opened at once (so the
    workers share them), one request on each."""
    conns = [Conn(("127.0.0.1", port), 5) for _ in range(n)]
    out = {}
    try:
        for c in conns:
            c.send("GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
        for c in conns:
            d = json.loads(c.read_response().body)
            out[d["pid"]] = d
    finally:
        for c in conns:
            c.close()
    return out


def worker_pids(port, n=32):
    return set(worker_stats(port, n))


def wait_online(ws, n, timeout=6.0):
    end, seen = time.monotonic() + timeout, []
    while time.monotonic() < end:
        try:
            m = ws.recv_json(max(0.1, end - time.monotonic()))
        except socket.timeout:
            break
        if m["type"] == "online":
            seen.append(m["n"])
            if m["n"] == n:
                return
    pytest.fail("online never %d: %r" % (n, seen[-8:]))


# ---- one instance, four workers ------------------------------------------------

@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_four_workers_every_ws_and_poll_gets_every_message(apps, tmp_path, kind):
    # memory: the bus in shared memory across the workers of the machine
    redis = Redis(tmp_path) if kind == "redis" else None
    try:
        four_workers(apps(workers=4, bus="redis://127.0.0.1:%d" % redis.port if redis else "memory"))
    finally:
        if redis:
            redis.stop()


def four_workers(app):
    cookies = [visitor(app.port, "v%d" % i) for i in range(6)]
    # two tabs per visitor, spread over the workers (handshakes sent together,
    # in batches until two workers or more hold some)
    socks = open_spread(lambda k: app.ws("/ws", [("Cookie", cookies[(k // 2) % 6])]), app.port,
                        batch=12)
    holders = {ws_worker(w) for w in socks}
    assert len(holders) >= 2, "all the WebSockets are on one worker: %r" % holders
    since = json.loads(http(app.port, "GET", "/me").body)["id"]
    polls = [open_poll(app.port, since) for _ in range(8)]
    time.sleep(0.3)
    post(app.port, "to all four workers")
    for w in socks:
        assert texts_until(w, "to all four workers")[0][-1] == "to all four workers"
    for c in polls:
        assert conn_poll_until(c, "to all four workers") == ["to all four workers"]
        c.close()
    # six visitors with two tabs each on whatever workers: six online, once each
    wait_online(socks[0], 6)
    for w in socks:
        w.close()


# ---- two instances behind nginx ----------------------------------------------------

def nginx(tmp_path, backends):
    port = free_port()
    d = tmp_path / "nginx"
    d.mkdir()
    ups = "".join("    server 127.0.0.1:%d;\n" % b for b in backends)
    (d / "nginx.conf").write_text("""
worker_processes 1;
daemon off;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/proxy;
  fastcgi_temp_path %(d)s/fcgi; uwsgi_temp_path %(d)s/uwsgi; scgi_temp_path %(d)s/scgi;
  upstream chat {
%(ups)s  }
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:%(port)d;
    location / {
      proxy_pass http://chat;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 60s;
      proxy_next_upstream error timeout;
    }
  }
}
""" % {"d": d, "ups": ups, "port": port})
    proc = subprocess.Popen([NGINX, "-p", str(d), "-c", str(d / "nginx.conf")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(d / "stderr.log", "wb"))
    end = time.monotonic() + 5
    while True:
        try:
            if http(port, "GET", "/stats").status == 200:
                break
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < end, (d / "stderr.log").read_text()
        time.sleep(0.05)
    return proc, port


def stop_pid(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(3)


@pytest.mark.skipif(not os.path.exists(NGINX), reason="Debian's nginx is not installed")
def test_two_instances_behind_nginx(apps, redis, tmp_path):
    bus = "redis://127.0.0.1:%d" % redis.port
    a, b = apps(workers=2, bus=bus), apps(workers=2, bus=bus)
    lb, lb_port = nginx(tmp_path, [a.port, b.port])
    try:
        ck = visitor(a.port, "zoé")  # set on A ...
        for port in (b.port, lb_port):  # ... seen on B and through the balancer
            assert json.loads(http(port, "GET", "/me", headers=[("Cookie", ck)]).body)["nick"] == "zoé"
        ck2, ck3 = visitor(b.port, "yann"), visitor(lb_port, "xu")
        # zoé only on A, yann only on B, xu wherever nginx sends them
        socks = [a.ws("/ws", [("Cookie", ck)]), a.ws("/ws", [("Cookie", ck)]),
                 b.ws("/ws", [("Cookie", ck2)])]
        socks += [lb_ws(lb_port, ck3) for _ in range(4)]
        since = json.loads(http(a.port, "GET", "/me").body)["id"]
        polls = [open_poll(p, since) for p in (a.port, b.port, lb_port, lb_port)]
        time.sleep(0.3)
        post(lb_port, "via nginx", [("Cookie", ck)])
        post(b.port, "via B", [("Cookie", ck2)])
        for w in socks:
            assert texts_until(w, "via B")[0][-2:] == ["via nginx", "via B"]
        for c in polls:
            assert conn_poll_until(c, "via nginx")[0] == "via nginx"
            c.close()
        for p in (a.port, b.port, lb_port):
            out, _ = poll_texts_until(p, since, "via B")
            assert out == ["via nginx", "via B"]
        # three visitors, seven WebSockets on two instances: three online
        wait_online(socks[0], 3)
        assert json.loads(http(b.port, "GET", "/me").body)["online"] == 3
        for w in socks:
            w.close()
    finally:
        stop_pid(lb)


def lb_ws(port, cookie):
    from lib.chatutil import WS
    return WS("127.0.0.1", port, "/ws", [("Cookie", cookie)])


# ---- faults ------------------------------------------------------------------------

def test_redis_restarted_mid_chat_nothing_accepted_is_lost(apps, redis):
    app = apps(workers=2, bus="redis://127.0.0.1:%d" % redis.port)
    w = app.ws()
    since = json.loads(http(app.port, "GET", "/me").body)["id"]
    post(app.port, "before")
    assert texts_until(w, "before")[0] == ["before"]
    redis.stop()
    r = http(app.port, "POST", "/send", "while down")
    assert r.status == 503 and b"unavailable" in r.body and b"try again" in r.body, r
    redis.start()
    accepted, end = [], time.monotonic() + 8
    while len(accepted) < 5 and time.monotonic() < end:  # posts succeed again soon
        r = http(app.port, "POST", "/send", "after %d" % len(accepted))
        if r.status == 200:
            accepted.append("after %d" % len(accepted))
        else:
            assert r.status == 503, r
            time.sleep(0.1)
    assert len(accepted) == 5, "posting never came back after Redis did"
    # the WebSocket stayed and got every accepted message; a poll from the
    # old id gets them all too; the one refused is nowhere
    got, _ = texts_until(w, accepted[-1], timeout=8)
    assert got == accepted, got
    out, _ = poll_texts_until(app.port, since, accepted[-1])
    assert out == ["before"] + accepted
    w.close()


@pytest.mark.skipif(not os.path.exists(NGINX), reason="Debian's nginx is not installed")
def test_instance_killed_clients_resume_on_another(apps, redis, tmp_path):
    bus = "redis://127.0.0.1:%d" % redis.port
    a, b = apps(workers=2, bus=bus), apps(workers=2, bus=bus)
    w = a.ws()
    post(b.port, "one")
    _, last = texts_until(w, "one")
    a.kill9()
    with pytest.raises((WSClosed, OSError)):
        w.recv_json(3)
    # while the page is away, the room goes on
    for t in ("two", "three", "four"):
        post(b.port, t)
    w2 = b.ws("/ws?since=%s" % last)  # the page's reconnect, to the other instance
    assert texts_until(w2, "four")[0] == ["two", "three", "four"]
    out, _ = poll_texts_until(b.port, last, "four")
    assert out == ["two", "three", "four"]
    w2.close()


def test_workers_recycled_by_max_requests_clients_resume(apps, redis):
    app = apps(workers=2, bus="redis://127.0.0.1:%d" % redis.port, flags=["--max-requests", "15"])
    socks = [app.ws() for _ in range(4)]
    last = [None] * len(socks)
    closed = [False] * len(socks)
    sent = []
    for i in range(40):  # enough requests to recycle both workers at least once
        sent.append(post(app.port, "n%d" % i) and "n%d" % i)
    pids_after = worker_pids(app.port, 6)
    # each WebSocket: what it got until its worker went, then a reconnect
    # from its last id gets the rest, in order, no gap, no repeat
    for k, w in enumerate(socks):
        got = []
        try:
            while not got or got[-1] != sent[-1]:
                m = w.recv_json(3)
                if m["type"] == "msg":
                    got.append(m["text"])
                last[k] = m["id"]
        except (WSClosed, OSError):
            closed[k] = True
            w2 = app.ws("/ws?since=%s" % last[k] if last[k] else "/ws?since=0")
            more, _ = texts_until(w2, sent[-1])
            got += more
            w2.close()
        assert got == sent, (k, got[:3], len(got))
    assert any(closed), "no WebSocket was on a recycled worker (pids now %r)" % pids_after
    assert "max-requests" in app.stderr() or "recycl" in app.stderr() or any(closed)


def test_flood_of_small_messages_in_order_none_lost(apps, redis):
    app = apps(workers=2, bus="redis://127.0.0.1:%d" % redis.port)
    sender, reader = app.ws(), app.ws()
    time.sleep(0.2)
    n = 400
    for i in range(n):
        sender.send_text("f%d" % i)
    got, _ = texts_until(reader, "f%d" % (n - 1), timeout=15)
    assert got == ["f%d" % i for i in range(n)]
    # a WebSocket message over the chat's limit is refused with 1009, the
    # others unaffected
    sender.send_text("x" * 5000)
    with pytest.raises(WSClosed) as e:
        while True:
            sender.recv(3)
    assert e.value.code == 1009
    post(app.port, "still fine")
    assert texts_until(reader, "still fine")[0][-1] == "still fine"
    reader.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_two_browsers_on_two_instances(apps, redis, tmp_path):
    from lib import chat_browser
    bus = "redis://127.0.0.1:%d" % redis.port
    a, b = apps(workers=2, bus=bus), apps(workers=2, bus=bus)
    result = chat_browser.run_two(a.url, b.url, str(tmp_path / "chromium"), timeout=35.0)
    assert result["ok"], result


def test_websocket_that_never_reads_is_cut_others_unaffected(apps, redis):
    app = apps(workers=2, bus="redis://127.0.0.1:%d" % redis.port)
    stuck = non_reader(app)
    others = [app.ws() for _ in range(3)]
    sender = app.ws()
    time.sleep(0.2)
    text, sent, t0 = "x" * 990, 0, time.monotonic()
    # bounded in count and time: batches of 25 until the server gives up on stuck
    # (20 s: on a loaded machine the batches go slower, and the cut takes a
    # fixed number of them, a full socket buffer and queue, not a time)
    while sent < 4000 and time.monotonic() - t0 < 20 and "fell behind" not in app.stderr():
        t1 = time.monotonic()
        batch = [text + str(sent + i) for i in range(25)]
        for t in batch:
            sender.send_text(t)
        sent += len(batch)
        for w in others + [sender]:
            got = []
            while len(got) < len(batch):
                m = w.recv_json(2.0)
                if m["type"] == "msg":
                    got.append(m["text"])
            assert got == batch
        assert time.monotonic() - t1 < 1.0, "the room slowed down at message %d" % sent
    assert "fell behind" in app.stderr(), "the client that never reads was never cut"
    for w in others + [sender]:
        w.close()
    stuck.close()
