"""The environ of a repeated head (python/_spindle/wsgi/env_cache.c reuses the part
its bytes decide): each call still gets its own dict, untouched by what the
app did to the last one, with its own wsgi.input and REMOTE_PORT, and a head
that differs in one octet gets its own values; and the per-request objects
the binding reuses (start_response, its write, wsgi.input, spindle.request)
are never handed out again while the app still holds them; and requests
waiting together, which a pooled greenlet serves one after another without
going back to the hub, each get their own answer (tests/fixtures/wsgi/envcache_app.py)."""
import json
import socket
import time

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    # /hdr?bad makes the app fail (a logged traceback), as meant
    s = WsgiServer("envcache_app:application", logdir=tmp_path_factory.mktemp("envcache"),
                   expect_tracebacks=True)
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


def ask(c, x_test="a", body=None):
    c.request("POST" if body is not None else "GET", "/p/q", headers=[("X-Test", x_test)],
              body=body)
    r = c.response()
    assert r.status == 200, r
    return json.loads(r.body)


def test_a_repeated_head_gets_a_fresh_clean_environ(srv):
    with srv.connect(timeout=5) as c:
        first = ask(c)
        for _ in range(3):
            again = ask(c)
            assert again["fresh_dict"] and again["fresh_input"], again
            assert not again["mutated"], again  # the app's key is gone
            assert again["x_test"] == "a" and again["path"] == "/p/q", again
            assert again["keys"] == first["keys"], again
        # the same head with a body: the input is this request's own
        assert ask(c, body=b"xyz")["body"] == "xyz"
        assert ask(c)["body"] == ""


def test_heads_differing_in_one_octet_keep_their_own_values(srv):
    with srv.connect(timeout=5) as c:
        for want in ("a", "b", "a", "c", "b"):
            got = ask(c, x_test=want)
            assert got["x_test"] == want and not got["mutated"], got


def test_each_connection_has_its_own_remote_port(srv):
    with srv.connect(timeout=5) as c1, srv.connect(timeout=5) as c2:
        for _ in range(2):
            for c in (c1, c2):
                assert ask(c)["remote_port"] == str(c.sock.getsockname()[1])


def test_objects_the_app_keeps_are_not_reused(srv):
    with srv.connect(timeout=5) as c:
        for path in ("/keep", "/late", "/late"):
            c.request("GET", path)
            r = c.response()
            assert r.status == 200, r
        got = json.loads(r.body)
    assert got["reused"] == [], got
    assert got["late_write"] == "write() called after the response ended", got


def test_requests_waiting_together_each_get_their_own_answer(srv):
    """8 connections, each sending 25 requests at once (pipelined), some of
    which sleep: the hub finds several waiting per turn."""
    conns, want = [], []
    for c in range(8):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        paths = ["/echo/%d-%d%s" % (c, i, "/nap" if (c + i) % 5 == 0 else "") for i in range(25)]
        s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: h\r\n\r\n" % p.encode() for p in paths))
        conns.append(s)
        want.append(paths)
    deadline = time.monotonic() + 20
    for s, paths in zip(conns, want):
        data = b""
        while data.count(b"HTTP/1.1 200") < len(paths) or not data.endswith(paths[-1].encode()):
            assert time.monotonic() < deadline, data[-300:]
            chunk = s.recv(65536)
            assert chunk, data[-300:]
            data += chunk
        s.close()
        bodies = [part.split(b"\r\n\r\n", 1)[1] for part in data.split(b"HTTP/1.1 200 OK\r\n")[1:]]
        assert bodies == [p.encode() for p in paths], bodies[:5]


def test_start_response_by_keyword_and_its_wrong_calls(srv):
    """The positional call skips the argument parser; any other still gets it."""
    with srv.connect(timeout=5) as c:
        c.request("GET", "/kw")
        r = c.response()
    assert r.status == 200, r
    assert json.loads(r.body) == ["TypeError"] * 4


def test_a_pair_checked_before_does_not_let_a_bad_one_through(srv):
    with srv.connect(timeout=5) as c:
        for query, want in (("", 200), ("", 200), ("bad", 500), ("", 200)):
            c.request("GET", "/hdr?" + query if query else "/hdr")
            r = c.response()
            assert r.status == want, (query, r)
