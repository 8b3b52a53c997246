"""The chat example (examples/chat, issue 9): its HTTP API on raw sockets —
long polling parked and woken, its 204 timeout, a poller that hangs up
freed at once; WebSockets through chatutil.WS, a small RFC 6455 client in
Python on plain sockets (not node's ws); the nickname cookie; the online
announcements of the periodic timer — and, in headless Chromium driven over
the DevTools protocol (tests/integration/lib/chat_browser.py), two pages in separate
browser contexts, one on WebSockets and one on long polling, each seeing
what the other sends."""
import json
import os
import pathlib
import socket
import sys
import time

import pytest

from lib.client import Conn
from lib.chatutil import CHAT_BIN, ROOT, ChatServer, WS, WSClosed, id_key, non_reader

CHROMIUM = "/usr/bin/chromium"
QUIET = ["--announce-ms", "600000"]  # no announcement gets in the way


@pytest.fixture
def chat_factory(tmp_path):
    if not os.path.exists(CHAT_BIN):
        pytest.fail("%s is not built (Makefile: $(B)/examples/chat)" % CHAT_BIN)
    servers = []

    def start(*flags):
        srv = ChatServer(tmp_path, *flags)
        servers.append(srv)
        return srv

    yield start
    problems = []
    for srv in servers:
        died = srv.proc.poll()
        srv.stop()
        err = srv.stderr()
        if died is not None:
            problems.append("chat exited by itself with %s: %s" % (died, err[-2000:]))
        if "failed" in err or "error" in err.lower():
            problems.append("chat logged an error:\n" + err[-3000:])
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def chat_server(chat_factory):
    return chat_factory(*QUIET)


def http(srv, method, path, body=b"", headers=(), timeout=5.0):
    if isinstance(body, str):
        body = body.encode()
    with Conn(srv.addr, timeout) as c:
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method, path, srv.port)
        for k, v in headers:
            head += "%s: %s\r\n" % (k, v)
        if method == "POST":
            head += "Content-Length: %d\r\nContent-Type: text/plain\r\n" % len(body)
        c.send(head.encode("utf-8") + b"\r\n" + body)
        return c.read_response(method)


def get_json(srv, path, headers=()):
    r = http(srv, "GET", path, headers=headers)
    assert r.status == 200, r
    return json.loads(r.body)


def stats(srv):
    return get_json(srv, "/stats")


def cookie_of(resp, name):
    for v in resp.all("Set-Cookie"):
        k, _, rest = v.partition("=")
        if k == name:
            return rest.split(";")[0]
    return None


def visitor(srv, nick):
    """A visitor's Cookie header value, after setting its nickname."""
    r = http(srv, "POST", "/nick", nick)
    assert r.status == 200, r
    assert json.loads(r.body) == {"nick": nick}
    return "nick=%s; chat_id=%s" % (cookie_of(r, "nick"), cookie_of(r, "chat_id"))


def wait_for(pred, timeout=3.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    pytest.fail("timed out waiting for " + what)


def open_poll(srv, since):
    c = Conn(srv.addr, 5)
    c.send("GET /poll?since=%s HTTP/1.1\r\nHost: x\r\n\r\n" % since)
    return c


# ---- the page ------------------------------------------------------------------

def test_chat_page_served(chat_server):
    r = http(chat_server, "GET", "/")
    assert r.status == 200 and r.header("Content-Type").startswith("text/html")
    assert b'src="chat.js"' in r.body and b"http" not in r.body.split(b"-->", 1)[1].lower()
    js = http(chat_server, "GET", "/chat.js")
    assert js.status == 200 and "javascript" in js.header("Content-Type")
    css = http(chat_server, "GET", "/chat.css")
    assert css.status == 200 and css.header("Content-Type").startswith("text/css")
    assert http(chat_server, "GET", "/nothing").status == 404


# ---- nickname -------------------------------------------------------------------

def test_chat_nick_remembered_in_cookie(chat_server):
    r = http(chat_server, "POST", "/nick", "  Zoé \"<b>\"  ")
    assert r.status == 200, r
    assert json.loads(r.body) == {"nick": 'Zoé "<b>"'}
    nick = cookie_of(r, "nick")
    assert nick == "Zo%C3%A9%20%22%3Cb%3E%22"
    assert all("HttpOnly" in v and "SameSite=Lax" in v for v in r.all("Set-Cookie"))
    me = get_json(chat_server, "/me", [("Cookie", "nick=" + nick)])
    assert me["nick"] == 'Zoé "<b>"'
    assert get_json(chat_server, "/me")["nick"] == "anonymous"
    # a forged cookie that is not UTF-8 or holds controls is not a nickname
    for bad in ("%FF%FE", "a%0Ab", "%"):
        assert get_json(chat_server, "/me", [("Cookie", "nick=" + bad)])["nick"] == "anonymous"


@pytest.mark.parametrize("body", ["", "   ", "x" * 33, "a\x01b", b"\xff\xfe"])
def test_chat_nick_rejected(chat_server, body):
    assert http(chat_server, "POST", "/nick", body).status == 400


# ---- long polling -------------------------------------------------------------

def test_chat_send_then_poll(chat_server):
    ck = visitor(chat_server, "ann")
    r = http(chat_server, "POST", "/send", 'hi "there"\n</script>', [("Cookie", ck)])
    assert r.status == 200, r
    mid = json.loads(r.body)["id"]
    d = get_json(chat_server, "/poll?since=0")
    assert d["id"] == mid
    m = d["messages"][-1]
    assert (m["id"], m["type"], m["nick"], m["text"]) == (mid, "msg", "ann", 'hi "there"\n</script>')
    assert abs(m["ts"] / 1000 - time.time()) < 5
    assert b"</script>" not in http(chat_server, "GET", "/poll?since=0").body
    # a malformed since is refused, saying what an id looks like
    r = http(chat_server, "GET", "/poll?since=abc")
    assert r.status == 400 and b"1700000000000-0" in r.body


@pytest.mark.parametrize("body", ["", " \n ", "a\x00b", b"\xc3"])
def test_chat_send_rejected(chat_server, body):
    assert http(chat_server, "POST", "/send", body).status == 400
    assert stats(chat_server)["id"] == "0-0"


def test_chat_send_too_long_is_413(chat_server):
    for body in ("x" * 1001, "y" * (1 << 20)):  # one byte over, and a whole megabyte
        r = http(chat_server, "POST", "/send", body)
        assert r.status == 413 and b"at most 1000 bytes" in r.body, r
    assert stats(chat_server)["id"] == "0-0"


def test_chat_poll_parks_until_a_message(chat_server):
    c = open_poll(chat_server, stats(chat_server)["id"])
    c.assert_open(0.3)  # parked: nothing yet
    assert stats(chat_server)["parked"] == 1
    t0 = time.monotonic()
    http(chat_server, "POST", "/send", "wake up")
    r = c.read_response()
    assert time.monotonic() - t0 < 1.0
    assert r.status == 200 and r.header("Cache-Control") == "no-store"
    d = json.loads(r.body)
    assert [m["text"] for m in d["messages"]] == ["wake up"]
    # the same connection polls again (keep-alive)
    c.send("GET /poll?since=%s HTTP/1.1\r\nHost: x\r\n\r\n" % d["id"])
    c.assert_open(0.2)
    http(chat_server, "POST", "/send", "again")
    assert [m["text"] for m in json.loads(c.read_response().body)["messages"]] == ["again"]
    c.close()


def test_chat_poll_times_out_with_204(chat_factory):
    srv = chat_factory("--poll-ms", "400", *QUIET)
    c = open_poll(srv, 0)
    t0 = time.monotonic()
    r = c.read_response()
    assert r.status == 204 and 0.3 < time.monotonic() - t0 < 2.0
    c.send("GET /poll?since=0 HTTP/1.1\r\nHost: x\r\n\r\n")  # still usable
    assert c.read_response().status == 204
    c.close()
    assert stats(srv)["parked"] == 0


def test_chat_poller_hangup_frees_waiter(chat_server):
    conns = [open_poll(chat_server, 0) for _ in range(50)]
    wait_for(lambda: stats(chat_server)["parked"] == 50, what="50 parked polls")
    for c in conns[:30]:
        c.close()
    wait_for(lambda: stats(chat_server)["parked"] == 20, what="hung-up polls freed")
    for c in conns[30:]:
        c.close()
    wait_for(lambda: stats(chat_server)["parked"] == 0, what="all polls freed")
    # and the room still works
    http(chat_server, "POST", "/send", "still here")
    assert get_json(chat_server, "/poll?since=0")["messages"][-1]["text"] == "still here"


def test_chat_many_pollers_woken_by_one_message(chat_server):
    conns = [open_poll(chat_server, 0) for _ in range(200)]
    wait_for(lambda: stats(chat_server)["parked"] == 200, what="200 parked polls")
    http(chat_server, "POST", "/send", "to everyone")
    for c in conns:
        r = c.read_response()
        assert r.status == 200 and json.loads(r.body)["messages"][0]["text"] == "to everyone"
        c.close()


# ---- WebSockets ------------------------------------------------------------------

def test_chat_ws_between_visitors_and_pollers(chat_server):
    a_ck, b_ck = visitor(chat_server, "alice"), visitor(chat_server, "bob")
    a = chat_server.ws("/ws", [("Cookie", a_ck)])
    b = chat_server.ws("/ws", [("Cookie", b_ck)])
    wait_for(lambda: stats(chat_server)["ws"] == 2, what="two WebSockets")
    p = open_poll(chat_server, 0)
    a.send_text("  hello bob  ")
    for w in (a, b):
        m = w.recv_json()
        assert (m["type"], m["nick"], m["text"]) == ("msg", "alice", "hello bob")
    first = m["id"]
    assert json.loads(p.read_response().body)["messages"][0]["nick"] == "alice"
    # from a poller's POST /send to the WebSockets
    http(chat_server, "POST", "/send", "hi all", [("Cookie", b_ck)])
    for w in (a, b):
        m = w.recv_json()
        assert (m["nick"], m["text"]) == ("bob", "hi all") and id_key(m["id"]) > id_key(first)
    # bad text is dropped, the connection stays
    a.send_text("\x01")
    a.send_text("x" * 1001)
    a.send_text("ok")
    assert b.recv_json()["text"] == "ok"
    a.close()
    b.close()
    wait_for(lambda: stats(chat_server)["ws"] == 0, what="WebSockets gone")
    p.close()


def test_chat_ws_history(chat_server):
    ids = [json.loads(http(chat_server, "POST", "/send", "m%d" % i).body)["id"] for i in range(60)]
    w = chat_server.ws("/ws?since=%s" % ids[1])
    assert [w.recv_json()["text"] for _ in range(3)] == ["m2", "m3", "m4"]
    for _ in range(55):
        w.recv_json()
    http(chat_server, "POST", "/send", "m60")
    assert w.recv_json()["text"] == "m60"
    w.close()
    w = chat_server.ws("/ws")  # default: the last 50
    got = [w.recv_json()["id"] for _ in range(50)]
    assert got == ids[11:] + [got[-1]] and got[-1] not in ids
    w.close()


def test_chat_ws_hangup_leaves_room(chat_server):
    ws = [chat_server.ws() for _ in range(20)]
    wait_for(lambda: stats(chat_server)["ws"] == 20, what="20 WebSockets")
    for w in ws[:10]:
        w.sock.close()  # no closing handshake
    wait_for(lambda: stats(chat_server)["ws"] == 10, what="reset WebSockets gone")
    http(chat_server, "POST", "/send", "who is left")
    for w in ws[10:]:
        assert w.recv_json()["text"] == "who is left"
        w.close()


def test_chat_cross_origin_refused(chat_server):
    evil = [("Origin", "http://evil.example")]
    with pytest.raises(ConnectionError, match="403"):
        chat_server.ws("/ws", evil)
    assert http(chat_server, "POST", "/send", "x", evil).status == 403
    assert http(chat_server, "POST", "/nick", "x", evil).status == 403
    ok = [("Origin", "http://127.0.0.1:%d" % chat_server.port)]
    assert http(chat_server, "POST", "/send", "x", ok).status == 200
    chat_server.ws("/ws", ok).close()
    assert http(chat_server, "GET", "/ws").status == 400  # not an upgrade


def test_chat_client_that_never_reads_does_not_stall_the_room(chat_server):
    stuck = non_reader(chat_server)
    b = chat_server.ws()
    wait_for(lambda: stats(chat_server)["ws"] == 2, what="two WebSockets")
    text = "x" * 900
    t0 = time.monotonic()
    sent = 0
    # Each message must reach b promptly while stuck's socket fills up, until
    # the server gives up on stuck; bounded in count and time.
    while sent < 6000 and time.monotonic() - t0 < 5:
        t1 = time.monotonic()
        assert http(chat_server, "POST", "/send", text).status == 200
        sent += 1
        try:
            m = b.recv_json(1.0)
        except socket.timeout:
            pytest.fail("message %d did not arrive within 1 s: the room stalled" % sent)
        assert m["text"] == text and time.monotonic() - t1 < 0.2, (sent, time.monotonic() - t1)
        if sent % 50 == 0 and stats(chat_server)["ws"] == 1:
            break
    assert stats(chat_server)["ws"] == 1, "the client that never reads is still in the room"
    assert "fell behind" in chat_server.stderr()
    b.close()
    stuck.close()


def test_chat_silent_websocket_pinged_then_closed_with_1001(chat_factory):
    # The handler waits in sp_ws_recv(ws, &in, -1): the idle timeout bounds it.
    srv = chat_factory("--ws-ping-ms", "200", "--ws-idle-ms", "600", *QUIET)
    w = srv.ws()
    w.sock.settimeout(3)
    t0 = time.monotonic()
    ops = []
    while not ops or ops[-1][0] != 8:
        fin, op, data = w._frame()  # read, never answer (no pong)
        ops.append((op, data))
    assert [op for op, _ in ops[:-1]] == [9] * (len(ops) - 1) and len(ops) >= 2, ops
    assert ops[-1][1][:2] == b"\x03\xe9"  # 1001
    assert 0.5 < time.monotonic() - t0 < 1.5
    w.sock.close()
    wait_for(lambda: stats(srv)["ws"] == 0, what="the idle WebSocket gone")


# ---- the periodic announcement -------------------------------------------------

def test_chat_announces_online_count(chat_factory):
    srv = chat_factory("--announce-ms", "200")
    a = srv.ws("/ws", [("Cookie", visitor(srv, "a"))])
    ck_b = visitor(srv, "b")
    b1 = srv.ws("/ws", [("Cookie", ck_b)])
    b2 = srv.ws("/ws", [("Cookie", ck_b)])  # a second tab: the same person
    anon = srv.ws("/ws")  # no cookie: counted alone
    counts = []
    t0 = time.monotonic()
    while len(counts) < 3:
        m = a.recv_json(2.0)
        if m["type"] == "online":
            counts.append((time.monotonic(), m["n"]))
    assert counts[-1][1] == 3, counts
    assert counts[-1][0] - counts[-2][0] < 0.5  # every 200 ms, give or take
    anon.sock.close()
    b1.close()
    wait_for(lambda: stats(srv)["ws"] == 2, what="two left")
    while True:
        m = a.recv_json(2.0)
        if m["type"] == "online" and m["n"] == 2:
            break
        assert time.monotonic() - t0 < 5
    for w in (a, b2):
        w.close()


# ---- headless Chromium ----------------------------------------------------------

@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")
def test_chat_browser_two_pages(chat_factory, tmp_path):
    from lib import chat_browser
    srv = chat_factory("--announce-ms", "1000")
    t0 = time.monotonic()
    result = chat_browser.run(srv.url, str(tmp_path / "chromium"), timeout=35.0)
    assert result["ok"], result
    assert time.monotonic() - t0 < 40
