"""The bus from Python (spindle.publish/subscribe for WSGI, apublish/
asubscribe for ASGI): tests/fixtures/wsgi/bus_app.py and tests/fixtures/asgi/
asgi_bus.py serve POST /pub and the long poll GET /sub. On --bus memory:
order, since-id resume, a timeout giving None, iteration, subscriptions
left open closed with their request (the worker's C subscriber count stays
0 over 500 requests), the calls outside a request; on --bus redis:// (a
real redis-server, test_bus_redis's): a WSGI instance and an ASGI one share
topics in order both ways, resume from an id, and a publish while Redis is
down is a 503 (BusError), not a silent drop."""
import concurrent.futures
import errno
import json
import time
import urllib.error
import urllib.request
import uuid

import pytest

from lib.asgiutil import asgi  # noqa: F401  (fixture)
from test_bus_redis import Redis, redis  # noqa: F401  (the fixture, and what it starts)
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

WSGI = "bus_app:application"
ASGI = "asgi_bus:app"


@pytest.fixture(params=["wsgi", "asgi"])
def kind(request):
    return request.param


@pytest.fixture
def start(kind, wsgi_server, asgi):
    """start(*flags) -> a server of this test's kind (WSGI or ASGI app)."""
    def go(*flags):
        return wsgi_server(WSGI, *flags) if kind == "wsgi" else asgi(ASGI, *flags)
    return go


def url(srv, path):
    return "http://127.0.0.1:%d%s" % (srv.port, path)


def get(srv, path, timeout=15):
    try:
        with urllib.request.urlopen(url(srv, path), timeout=timeout) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def pub(srv, topic, data):
    req = urllib.request.Request(url(srv, "/pub?topic=" + topic), data=data.encode(),
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sub(srv, topic, since=None, n=1, timeout=5.0, pid=False):
    """([(id, data)], timed_out, last_id[, the answering pid]) of the long poll."""
    q = "/sub?topic=%s&n=%d&timeout=%s" % (topic, n, timeout)
    if since:
        q += "&since=" + since
    st, body, h = get(srv, q, timeout=timeout * n + 15)
    assert st == 200, body
    lines = [tuple(x.split(" ", 1)) for x in body.splitlines()]
    if pid:
        return lines, h["X-Bus-Timeout"] == "1", h["X-Bus-Last"], h["X-Pid"]
    return lines, h["X-Bus-Timeout"] == "1", h["X-Bus-Last"]


def stats(srv):
    st, body, _ = get(srv, "/stats")
    assert st == 200
    return json.loads(body)


def topic():
    return "t-" + uuid.uuid4().hex[:8]


def ids_increase(ids):
    parsed = [tuple(int(x) for x in i.split("-")) for i in ids]
    return all(a < b for a, b in zip(parsed, parsed[1:]))


# ---- --bus memory ---------------------------------------------------------------


def test_order_since_and_timeout(start):
    srv = start("--bus", "memory")
    t = topic()
    ids = []
    for i in range(5):
        st, i_d = pub(srv, t, "m%d" % i)
        assert st == 200, i_d
        ids.append(i_d)
    assert ids_increase(ids)
    lines, timed_out, last = sub(srv, t, "0", n=5)
    assert lines == [(ids[i], "m%d" % i) for i in range(5)] and not timed_out
    assert last == ids[-1]
    lines, timed_out, last = sub(srv, t, ids[1], n=10, timeout=0.3)  # resume after ids[1]
    assert [d for _, d in lines] == ["m2", "m3", "m4"] and timed_out and last == ids[-1]
    began = time.monotonic()
    lines, timed_out, _ = sub(srv, t, None, n=1, timeout=0.3)  # only new ones: none come
    assert lines == [] and timed_out and time.monotonic() - began < 3
    st, body, _ = get(srv, "/iter?topic=%s&n=3" % t)
    assert (st, body) == (200, "m0 m1 m2")


def test_long_poll_gets_what_is_published_meanwhile(start):
    srv = start("--bus", "memory")
    t = topic()
    st, first = pub(srv, t, "first")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        waiting = ex.submit(sub, srv, t, first, 3, 10.0)
        time.sleep(0.3)
        for i in range(3):
            assert pub(srv, t, "x%d" % i)[0] == 200
        lines, timed_out, _ = waiting.result()
    assert [d for _, d in lines] == ["x0", "x1", "x2"] and not timed_out


def test_memory_bus_spans_the_workers(start):
    """--workers 2: long polls held by both workers get what either publishes."""
    srv = start("--bus", "memory", "--workers", "2")
    t = topic()
    st, first = pub(srv, t, "first")
    with concurrent.futures.ThreadPoolExecutor(56) as ex:
        # enough that one worker holds more than its share (avg * 1.5 + 8) and steps aside
        polls = [ex.submit(sub, srv, t, first, 4, 10.0, True) for _ in range(48)]
        time.sleep(0.5)
        pubs = [ex.submit(pub, srv, t, "x%d" % i) for i in range(3)]
        assert all(f.result()[0] == 200 for f in pubs)
        assert pub(srv, t, "last")[0] == 200
        results = [f.result() for f in polls]
    seqs = {tuple(d for _, d in lines) for lines, _, _, _ in results}
    assert len(seqs) == 1 and sorted(seqs.pop()) == ["last", "x0", "x1", "x2"]
    assert len({p for _, _, _, p in results}) == 2  # both workers held some
    lines, _, _ = sub(srv, t, "0", n=10, timeout=0.3)  # the history, from either
    assert [d for _, d in lines][0] == "first" and len(lines) == 5


def test_subscriptions_left_open_close_with_their_request(start):
    srv = start("--bus", "memory")
    t = topic()
    assert stats(srv)["subscribers"] == 0
    # The count sees a live subscription (so a leak would show):
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        waiting = ex.submit(sub, srv, t, None, 1, 3.0)
        deadline = time.monotonic() + 3
        while stats(srv)["subscribers"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stats(srv)["subscribers"] == 1
        waiting.result()
    for i in range(250):
        assert get(srv, "/leak?topic=" + t)[0] == 200  # kept in a global, never closed
        assert get(srv, "/leak_waiting?topic=" + t)[0] == 200  # a recv still waiting on it
    s = stats(srv)
    assert s == {"subscribers": 0, "open": 0}, s
    st, body, _ = get(srv, "/kept")
    assert json.loads(body) == [True] * 5  # the app's references see them closed


def test_calls_outside_a_request(wsgi_server, asgi):
    w = wsgi_server(WSGI, "--bus", "memory")
    st, body, _ = get(w, "/import")
    assert "spindle.publish works in a worker's greenlets" in body and "not at import" in body
    t = topic()
    st, i_d = pub(w, t, "before")
    st, body, _ = get(w, "/spawned?topic=%s&data=spawned" % t)  # on a coroutine of its own
    assert st == 200 and ids_increase([i_d, body]), body
    lines, _, _ = sub(w, t, i_d, n=1)
    assert lines == [(body, "spawned")]
    a = asgi(ASGI, "--bus", "memory")
    st, body, _ = get(a, "/sync?topic=" + t)
    assert "await spindle.apublish()" in body, body


def test_asgi_recv_cancelled_by_wait_for_loses_nothing(asgi):
    a = asgi(ASGI, "--bus", "memory")
    t = topic()
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        f = ex.submit(get, a, "/wait_for?topic=" + t)
        time.sleep(0.4)  # the first recv was cancelled after 50 ms
        assert pub(a, t, "late")[0] == 200
        st, body, _ = f.result()
    assert (st, body) == (200, "cancelled late")


def test_without_bus_publish_raises(start):
    srv = start("--bus", "off")
    st, body = pub(srv, topic(), "x")
    assert st == 503 and "errno %d" % errno.ENXIO in body and "--bus" in body, body


def test_the_default_bus_is_memory(start):
    srv = start()  # no --bus: topics work, as with --bus memory
    t = topic()
    st, first = pub(srv, t, "a")
    assert st == 200, first
    lines, _, _ = sub(srv, t, "0", n=1, timeout=2)
    assert lines == [(first, "a")]


# ---- --bus redis:// ---------------------------------------------------------------


@pytest.fixture
def pair(wsgi_server, asgi, redis):  # noqa: F811
    spec = "redis://127.0.0.1:%d" % redis.port
    return wsgi_server(WSGI, "--bus", spec, workers=2), asgi(ASGI, "--bus", spec, workers=2)


def test_redis_wsgi_and_asgi_share_topics_in_order(pair):
    w, a = pair
    for src, dst in ((w, a), (a, w)):
        t = topic()
        st, start_id = pub(src, t, "start")
        assert st == 200, start_id
        msgs = ["m%d" % i for i in range(6)]
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            polls = [ex.submit(sub, dst, t, start_id, len(msgs), 10.0) for _ in range(2)]
            time.sleep(0.3)
            ids = []
            for m in msgs:
                st, i_d = pub(src, t, m)
                assert st == 200, i_d
                ids.append(i_d)
            for p in polls:
                lines, timed_out, last = p.result()
                assert lines == list(zip(ids, msgs)) and not timed_out
                assert last == ids[-1]
        # resume from an id, on the other side
        lines, timed_out, _ = sub(src, t, ids[2], n=10, timeout=0.3)
        assert [d for _, d in lines] == msgs[3:] and timed_out


def test_redis_down_publish_is_an_error_not_a_drop(pair, redis):  # noqa: F811
    w, a = pair
    t = topic()
    assert pub(w, t, "before")[0] == 200
    redis.stop()
    for srv in (w, a):
        st, body = pub(srv, t, "lost")
        assert st == 503, body
        assert any("errno %d" % e in body for e in
                   (errno.ECONNREFUSED, errno.ECONNRESET, errno.ETIMEDOUT)), body
        assert "Redis is unreachable" in body
    redis.start()
    deadline = time.monotonic() + 10
    st = None
    while time.monotonic() < deadline:  # the first publishes may race the reconnect
        st, _ = pub(a, t, "after")
        if st == 200:
            break
        time.sleep(0.1)
    assert st == 200
    lines, _, _ = sub(w, t, "0", n=5, timeout=0.5)
    assert [d for _, d in lines] == ["before", "after"]  # "lost" is nowhere


def test_client_hanging_up_ends_a_waiting_recv(start):
    import socket
    srv = start("--bus", "memory")
    t = topic()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(b"GET /sub?topic=%s&timeout=60 HTTP/1.1\r\nHost: x\r\n\r\n" % t.encode())
    deadline = time.monotonic() + 3
    while stats(srv)["subscribers"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stats(srv)["subscribers"] == 1  # waiting, without a timeout before 60 s
    s.close()
    deadline = time.monotonic() + 3
    while stats(srv)["subscribers"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stats(srv) == {"subscribers": 0, "open": 0}
