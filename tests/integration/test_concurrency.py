"""Concurrency: 1,000 connections answered at once, sleeping handlers that
do not block others, clients that leave while their handler sleeps (no
crash, no leaked fds), and --max-connections (the excess waits in the
backlog rather than being refused)."""
import selectors
import socket
import time

from lib.client import get

from lib.server import HELLO, raise_nofile


def test_thousand_concurrent_connections(spindle):
    n = 1000
    assert raise_nofile() >= n + 100, "RLIMIT_NOFILE too low for this test"
    srv = spindle("--header-timeout", "20", "--keepalive-timeout", "20")  # inherits our limit
    socks = []
    deadline = time.monotonic() + 60
    try:
        for _ in range(n):
            s = socket.create_connection(srv.addr, timeout=10)
            socks.append(s)
        req = get("/")
        for s in socks:
            s.sendall(req)
        sel = selectors.DefaultSelector()
        bufs = {}
        for s in socks:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            bufs[s] = b""
        done = 0
        want = len(b"Hello world!")
        while done < n:
            left = deadline - time.monotonic()
            assert left > 0, "only %d of %d answered in time" % (done, n)
            for key, _ in sel.select(timeout=min(left, 1.0)):
                s = key.fileobj
                chunk = s.recv(4096)
                assert chunk, "a connection closed before its answer: %r" % bufs[s]
                bufs[s] += chunk
                head, sep, body = bufs[s].partition(b"\r\n\r\n")
                if sep and len(body) >= want:
                    assert head.startswith(b"HTTP/1.1 200 "), head
                    assert body == HELLO
                    sel.unregister(s)
                    done += 1
        sel.close()
    finally:
        for s in socks:
            s.close()
    # and it still serves afterwards
    with srv.connect() as c:
        c.send(get("/"))
        assert c.read_response().body == HELLO


def test_sleep_does_not_block_others(server):
    with server.connect() as slow:
        slow.send(get("/sleep?ms=1500"))
        time.sleep(0.05)
        t0 = time.monotonic()
        with server.connect() as c:
            c.send(get("/"))
            assert c.read_response().body == HELLO
        assert time.monotonic() - t0 < 0.5
        r = slow.read_response()
        assert (r.status, r.body) == (200, b"slept 1500 ms\n")


def test_many_sleeps_run_together(server):
    conns = [server.connect() for _ in range(30)]
    try:
        t0 = time.monotonic()
        for c in conns:
            c.send(get("/sleep?ms=500"))
        for c in conns:
            r = c.read_response()
            assert (r.status, r.body) == (200, b"slept 500 ms\n")
        assert time.monotonic() - t0 < 2.0  # not 30 x 0.5 s
    finally:
        for c in conns:
            c.close()


def test_bad_sleep_argument(server):
    with server.connect() as c:
        c.send(get("/sleep?ms=abc"))
        r = c.read_response()
        assert r.status == 400


def _wait_fds(srv, target, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if srv.fd_count() <= target:
            return True
        time.sleep(0.05)
    return srv.fd_count() <= target


def test_disconnect_while_handler_sleeps(server):
    # Warm up the pools and let the count settle.
    with server.connect() as c:
        c.send(get("/sleep?ms=1", extra="Connection: close\r\n"))
        assert c.read_response().status == 200
    assert _wait_fds(server, server.fd_count(), 1)
    time.sleep(0.2)
    base = server.fd_count()
    # 40 at once, then 10 one after another.
    conns = [server.connect() for _ in range(40)]
    for c in conns:
        c.send(get("/sleep?ms=2000"))
    time.sleep(0.1)
    assert server.fd_count() >= base + 40
    for c in conns:
        c.close()
    for _ in range(10):
        with server.connect() as c:
            c.send(get("/sleep?ms=2000"))
            time.sleep(0.1)
    assert server.alive()
    assert _wait_fds(server, base, 4), "fds: %d, baseline %d" % (server.fd_count(), base)
    with server.connect() as c:
        c.send(get("/"))
        assert c.read_response().body == HELLO
    assert server.alive()


def test_max_connections_excess_waits_in_backlog(spindle):
    srv = spindle("--max-connections", "2", "--header-timeout", "5", "--keepalive-timeout", "5")
    a, b = srv.connect(), srv.connect()
    try:
        for c in (a, b):
            c.send(get("/"))
            assert c.read_response().body == HELLO
        third = srv.connect()  # accepted by the kernel, not by spindle yet
        third.send(get("/"))
        third.assert_open(0.7)  # no answer and no reset while two are open
        t0 = time.monotonic()
        a.close()
        r = third.read_response()
        assert (r.status, r.body) == (200, HELLO)
        assert time.monotonic() - t0 < 2
        third.close()
        b.send(get("/"))
        assert b.read_response().body == HELLO
    finally:
        a.close()
        b.close()


def test_idle_connections_hold_no_stack_or_buffer(spindle):
    """1,000 keep-alive connections, each served once (one at a time) and
    then idle: an idle connection holds no coroutine stack and no read
    buffer, so the server grows by far less than a page or two each."""
    n = 1000
    assert raise_nofile() >= n + 100
    srv = spindle("--header-timeout", "20", "--keepalive-timeout", "20")
    base = srv.rss_kb()
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(srv.addr, timeout=5)
            socks.append(s)
            s.sendall(get("/"))
            data = b""
            while not data.endswith(HELLO):
                chunk = s.recv(4096)
                assert chunk
                data += chunk
        time.sleep(0.2)
        grown = srv.rss_kb() - base
        # Holding one 4 KiB stack page and one buffer page each would be 8 MB.
        assert grown < 4096, "RSS grew by %d KiB for %d idle connections" % (grown, n)
        s = socks[0]  # and they still work
        s.sendall(get("/"))
        assert s.recv(4096).endswith(HELLO)
    finally:
        for s in socks:
            s.close()
