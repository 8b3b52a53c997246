"""Timeouts: a trickled head gets 408 after --header-timeout (a total, not
per byte), a stalled body is cut off by --body-timeout, silent and idle
keep-alive connections are closed quietly, and a client that stops reading
is cut off by --send-timeout while the server keeps serving others."""
import socket
import threading
import time

from lib.client import get

from lib.server import HELLO


def _trickle(conn, data, every, stop):
    """Sends data one byte at a time until done, stopped, or the send fails."""
    for i in range(len(data)):
        if stop.is_set():
            return
        try:
            conn.send(data[i:i + 1])
        except OSError:
            return
        time.sleep(every)


def _closed_within(c, lo, hi, t0):
    """Reads to EOF (no reset); returns the bytes. EOF must come in [lo, hi] s."""
    c.sock.settimeout(hi + 1)
    data = c.read_until_close()
    dt = time.monotonic() - t0
    assert lo <= dt <= hi, "closed after %.2fs, wanted %.1f..%.1f" % (dt, lo, hi)
    return data


def test_slowloris_head_gets_408(server):
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    stop = threading.Event()
    with server.connect() as c:
        t0 = time.monotonic()
        t = threading.Thread(target=_trickle, args=(c, head, 0.2, stop), daemon=True)
        t.start()
        try:
            r = c.read_response()
            dt = time.monotonic() - t0
            assert r.status == 408
            assert r.connection_close()
            assert 0.8 <= dt <= 2.5, dt
            c.sock.settimeout(3)
            c.assert_closed()
        finally:
            stop.set()
            t.join(2)


def test_slowloris_on_second_request(server):
    stop = threading.Event()
    with server.connect() as c:
        c.send(get("/"))
        assert c.read_response().body == HELLO
        t0 = time.monotonic()
        t = threading.Thread(target=_trickle, args=(c, b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"b" * 100, 0.2, stop),
                             daemon=True)
        t.start()
        try:
            r = c.read_response()
            assert r.status == 408
            assert time.monotonic() - t0 <= 2.5
            c.assert_closed()
        finally:
            stop.set()
            t.join(2)


def test_head_sent_slowly_but_in_time_is_served(spindle):
    srv = spindle("--header-timeout", "2")
    with srv.connect() as c:
        for part in (b"GET / HT", b"TP/1.1\r\nHo", b"st: x\r\n", b"\r\n"):
            c.send(part)
            time.sleep(0.2)
        r = c.read_response()
        assert (r.status, r.body) == (200, HELLO)


def test_stalled_body_to_echo_is_cut_off(server):
    with server.connect() as c:
        t0 = time.monotonic()
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"z" * 10)
        data = _closed_within(c, 0.8, 2.5, t0)
    # Either a 408, or the echo's 200 cut short of its 100 bytes.
    if data.startswith(b"HTTP/1.1 408 "):
        return
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), data[:200]
    assert len(body) < 100


def test_trickled_body_with_long_gaps_is_cut_off(server):
    """One byte, then a gap longer than --body-timeout."""
    stop = threading.Event()
    with server.connect() as c:
        c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n")
        r = c.read_response()  # the route does not read: 405 at once
        assert r.status == 405
        t0 = time.monotonic()
        t = threading.Thread(target=_trickle, args=(c, b"y" * 50, 1.6, stop), daemon=True)
        t.start()
        try:
            # The drain's whole deadline (--linger-timeout, 0.5 s) ends it first.
            data = _closed_within(c, 0.3, 4.0, t0)
            assert data == b""  # the drain gave up; no second answer
        finally:
            stop.set()
            t.join(3)


def test_silent_client_closed_quietly(server):
    with server.connect() as c:
        t0 = time.monotonic()
        data = _closed_within(c, 0.8, 2.5, t0)
        assert data == b""  # no 408 for a client that never spoke


def test_idle_keepalive_closed_quietly(server):
    with server.connect() as c:
        c.send(get("/"))
        assert c.read_response().body == HELLO
        t0 = time.monotonic()
        c.assert_open(0.5)
        data = _closed_within(c, 0.8, 2.5, t0)
        assert data == b""


def test_keepalive_timeout_restarts_per_request(server):
    with server.connect() as c:
        for _ in range(4):  # 4 x 0.6 s: longer than one timeout in total
            c.send(get("/"))
            assert c.read_response().body == HELLO
            time.sleep(0.6)
        c.send(get("/"))
        assert c.read_response().body == HELLO


def test_client_that_stops_reading_is_cut_off(spindle):
    srv = spindle("--send-timeout", "1")
    total = 64 << 20
    block = b"r" * 65536
    result = {}

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(15)
    s.connect(srv.addr)

    def sender():
        sent = 0
        try:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % total)
            while sent < total:
                s.sendall(block)
                sent += len(block)
            result["done"] = sent
        except OSError as e:
            result["error"] = e
            result["at"] = time.monotonic()
            result["sent"] = sent

    base_fds = srv.fd_count()
    t0 = time.monotonic()
    t = threading.Thread(target=sender, daemon=True)
    t.start()
    try:
        # While it is stuck, others are served.
        time.sleep(0.5)
        for _ in range(3):
            with srv.connect(3) as c:
                c.send(get("/", extra="Connection: close\r\n"))
                r = c.read_response()
                assert (r.status, r.body) == (200, HELLO)
        t.join(12)
        assert not t.is_alive(), "the server never cut off a client that stopped reading"
        assert "error" in result, "the whole %d bytes went through without reading" % total
        assert result["at"] - t0 < 8, "cut off only after %.1fs" % (result["at"] - t0)
    finally:
        s.close()
    # The connection is gone from the server, and it still serves.
    deadline = time.monotonic() + 3
    while srv.fd_count() > base_fds and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.fd_count() <= base_fds
    with srv.connect() as c:
        c.send(get("/"))
        assert c.read_response().body == HELLO
