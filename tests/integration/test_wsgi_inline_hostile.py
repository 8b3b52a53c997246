"""The inline WSGI call (python/_spindle/common/hub.c, run_inline) under hostile
apps and clients (issue 23's review): a failure after start_response, a
generator waiting between chunks, an app blocked reading a slow upload, an
app switching to greenlets of its own, clients resetting while the call
waits, 100 concurrent sleepers (each answered exactly once, none served
twice), and what per-request state sees: a ContextVar stays the request's
own across concurrent waits, and so does a threading.local under
spindle.patch() (per greenlet; python/spindle/green/local.py)
(tests/fixtures/wsgi/hostile_inline_app.py)."""
import hashlib
import json
import os
import socket
import struct
import threading
import time

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("hostile_inline_app:application", logdir=tmp_path_factory.mktemp("hostile"),
                   expect_tracebacks=True, args=["--body-timeout", "5"])
    s.start()
    yield s
    s.stop()
    assert not s.problems(), s.problems()


def body_of(s, path, timeout=10):
    r = s.get(path, timeout=timeout)
    assert r.status == 200, (path, r.status, r.body[:200])
    return json.loads(r.body)


def quick(s):
    t0 = time.monotonic()
    assert "n" in body_of(s, "/count")
    return time.monotonic() - t0


def test_failure_after_start_response_is_a_500_and_the_connection_goes_on(srv):
    for path in ("/raise_after_sr", "/raise_after_sr_wait"):
        with srv.connect() as c:
            c.request("GET", path)
            c.request("GET", "/count")  # pipelined behind the failing call
            assert c.response().status == 500
            r = c.response()
            assert r.status == 200 and b'"n"' in r.body, r.body


def test_a_failure_inside_the_iterable_cuts_the_answer(srv):
    r = srv.raw(b"GET /raise_in_iter HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
    assert r.startswith(b"HTTP/1.1 200") and b"first" in r
    assert not r.endswith(b"0\r\n\r\n"), "a failed body must not end as if complete"
    quick(srv)


def test_generator_waiting_between_chunks_beside_quick_requests(srv):
    got = {}
    t = threading.Thread(target=lambda: got.update(r=srv.get("/gen?n=6&s=0.05")))
    t.start()
    time.sleep(0.05)
    worst = max(quick(srv) for _ in range(10))
    t.join(10)
    assert got["r"].status == 200
    assert got["r"].body == b"".join(b"chunk%d;" % i for i in range(6))
    assert worst < 0.2, "a quick request waited %.3f s behind the streaming one" % worst


def test_slow_upload_read_by_the_app_while_others_are_served(srv):
    data = os.urandom(30000)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data))
    worst = 0.0
    for i in range(15):
        s.sendall(data[i * 2000:(i + 1) * 2000])
        worst = max(worst, quick(srv))
        time.sleep(0.02)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    body = json.loads(out.partition(b"\r\n\r\n")[2])
    assert body == {"n": len(data), "sha": hashlib.sha256(data).hexdigest()}
    assert worst < 0.2, worst


def test_greenlets_the_app_switches_to_and_spawns(srv):
    assert body_of(srv, "/greens") == {"rs": [0, 10, 20, 30], "out": [0, 1, 2, 3],
                                        "dead": [True] * 4}
    assert body_of(srv, "/spawn") == {"box": ["ran"]}
    assert body_of(srv, "/spawn_in_green") == {"got": "set", "box": ["ran"], "dead": True}


def test_clients_resetting_while_the_call_waits(srv):
    before = body_of(srv, "/count")["n"]
    for path in (b"/sleep?s=0.3", b"/gen?n=20&s=0.05"):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.08)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        assert quick(srv) < 0.2
    time.sleep(0.4)
    # The worker lived through it: its counter went on (the /sleep call and
    # the quick ones counted), no restart reset it.
    assert body_of(srv, "/count")["n"] >= before + 4


def test_hundred_concurrent_sleepers_each_answered_once(srv):
    results = {}

    def one(i):
        try:
            r = srv.get("/sleep?s=0.01&id=%d" % i, headers=[("X-Id", str(i))])
            results[i] = json.loads(r.body) if r.status == 200 else r.status
        except Exception as e:  # noqa: BLE001 - reported below
            results[i] = repr(e)

    for rnd in range(3):
        threads = [threading.Thread(target=one, args=(rnd * 1000 + i,)) for i in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
    assert len(results) == 300
    bad = {i: v for i, v in results.items()
           if not isinstance(v, dict) or v["id"] != str(i) or v["hdr"] != str(i)}
    assert not bad, sorted(bad.items())[:5]
    numbers = [v["n"] for v in results.values()]
    assert len(set(numbers)) == 300, "a call ran twice or two requests shared one"


def concurrent_ctx(srv, n=5):
    out = {}

    def one(i):
        out[i] = body_of(srv, "/ctx?id=r%d&s=0.2" % i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_a_contextvar_stays_the_requests_own_across_concurrent_waits(srv):
    out = concurrent_ctx(srv)
    assert {i: b["after_cv"] for i, b in out.items()} == {i: "r%d" % i for i in range(5)}
    assert len({b["g"] for b in out.values()}) == 5  # each waited in a greenlet of its own


def test_a_threading_local_stays_the_requests_own_across_concurrent_waits(srv):
    out = concurrent_ctx(srv)
    assert {i: b["after_tl"] for i, b in out.items()} == {i: "r%d" % i for i in range(5)}
