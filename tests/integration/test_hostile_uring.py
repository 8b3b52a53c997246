"""Hostile traffic on the io_uring backend (issue 23's review): a crowd of
idle keep-alive connections closed at once, resets in the middle of a large
static file, clients that never read a large answer beside fast ones, 1,000
requests pipelined in one write, a connect-and-close flood, more wake-ups
while the worker is blocked than the completion queue holds, and
--max-connections far below the clients. Each ends with the fds back where
they were and the server still answering."""
import os
import socket
import struct
import threading
import time

from lib.client import Conn
from lib.server import raise_nofile
from lib.opsutil import wait_for
from lib.procutil import APP_BLOCKING
from test_io_backend import URING, needs_uring

pytestmark = needs_uring

GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def rst(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def drain(sock, limit=1 << 30, deadline=10.0):
    """Reads to EOF (or limit bytes); the bytes read."""
    sock.settimeout(deadline)
    n = 0
    while n < limit:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        n += len(chunk)
    return n


def fresh_get(srv, path="/"):
    with Conn(srv.addr, 5) as c:
        c.send(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        return c.read_response().raw  # a reset is an OSError (the callers count them)


def settle(srv):
    with srv.connect() as c:  # one warm connection: the pools are made
        c.send(GET)
        c.read_response()
    time.sleep(0.2)
    return srv.fd_count()


def test_idle_crowd_closed_at_once(spindle):
    n = min(2000, raise_nofile() - 100)
    srv = spindle(*URING, "--keepalive-timeout", "30")
    base = settle(srv)
    socks = [socket.create_connection(srv.addr, timeout=5) for _ in range(n)]
    for s in socks:
        s.sendall(GET)
    for s in socks:
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
    assert srv.fd_count() >= base + n - 10
    for i, s in enumerate(socks):  # all at once: half FIN, half RST
        rst(s) if i % 2 else s.close()
    assert wait_for(lambda: srv.fd_count() <= base + 2, 3), (base, srv.fd_count())
    assert fresh_get(srv).endswith(b"Hello world!")


def test_resets_in_the_middle_of_a_large_static_file(spindle, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "big").write_bytes(os.urandom(8 << 20))
    srv = spindle(*URING, "--root", str(root), "--send-timeout", "3")
    base = settle(srv)

    def one(i):
        s = socket.create_connection(srv.addr, timeout=5)
        s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        drain(s, limit=(i % 4 + 1) * 65536, deadline=5)
        rst(s)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert wait_for(lambda: srv.fd_count() <= base + 2, 5), (base, srv.fd_count())
    s = socket.create_connection(srv.addr, timeout=5)
    s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert drain(s) > 8 << 20  # the whole file and its head, after all that
    s.close()


def test_never_reading_clients_are_closed_while_others_are_served(spindle):
    srv = spindle(*URING, "--send-timeout", "1", "--body-timeout", "5")
    base = settle(srv)
    body = b"y" * (32 << 20)
    ends = {}

    def never_reads(i):
        # The default buffers (a 4 KB SO_RCVBUF can wedge loopback TCP itself:
        # the peer's ACKs ride on segments the full buffer drops).
        s = socket.create_connection(srv.addr, timeout=5)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        t0 = time.monotonic()
        s.settimeout(6)
        try:
            s.sendall(body)  # the echo fills our window, then its send waits
            ends[i] = "sent all"
        except OSError:
            ends[i] = time.monotonic() - t0
        s.close()

    threads = [threading.Thread(target=never_reads, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    worst = 0.0
    t0 = time.monotonic()
    while any(t.is_alive() for t in threads) and time.monotonic() - t0 < 8:
        t1 = time.monotonic()
        assert fresh_get(srv).endswith(b"Hello world!")
        worst = max(worst, time.monotonic() - t1)
    for t in threads:
        t.join(1)
    # Closed by the send timeout (1 s, a loop turn or two late at most).
    assert all(isinstance(v, float) and v < 3 for v in ends.values()), ends
    assert len(ends) == 4, ends
    assert worst < 0.5, "a fast client waited %.3f s beside the stalled ones" % worst
    assert wait_for(lambda: srv.fd_count() <= base + 2, 3), (base, srv.fd_count())


def test_a_thousand_requests_pipelined_in_one_write(spindle):
    srv = spindle(*URING)
    s = socket.create_connection(srv.addr, timeout=5)
    s.sendall(GET * 1000)
    data = b""
    end = time.monotonic() + 5
    while data.count(b"Hello world!") < 1000 and time.monotonic() < end:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 1000 and data.endswith(b"Hello world!")
    s.close()


def test_connect_and_close_flood(spindle):
    srv = spindle(*URING)
    base = settle(srv)
    end = time.monotonic() + 1.5
    n = 0
    while time.monotonic() < end and n < 4000:
        s = socket.create_connection(srv.addr, timeout=5)
        if n % 3 == 0:
            s.send(b"GET / HTTP/1.1\r\nHo")  # a head cut short
        elif n % 3 == 1:
            s.send(GET)  # closed before reading the answer
        rst(s) if n % 2 else s.close()
        n += 1
    assert n > 200
    assert wait_for(lambda: srv.fd_count() <= base + 2, 3), (base, srv.fd_count())
    assert fresh_get(srv).endswith(b"Hello world!")


def test_more_wake_ups_than_the_completion_queue_holds(spindle):
    """6,000 connections each send a request in three pieces while the worker
    is blocked: 18,000 poll completions against a 16,384-entry CQ (the
    multishot polls overflow and end; each must be armed again)."""
    n = min(6000, raise_nofile() - 100)
    srv = spindle(*URING, "--app", APP_BLOCKING, "--keepalive-timeout", "30", "--header-timeout", "10",
                  "--worker-timeout", "0")
    socks = [socket.create_connection(srv.addr, timeout=10) for _ in range(n)]
    blocker = socket.create_connection(srv.addr, timeout=10)
    blocker.sendall(b"GET /block?s=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.1)
    for piece in (b"GET /pid HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"):
        for s in socks:
            s.send(piece)
        time.sleep(0.02)
    answered = 0
    for s in socks:
        s.settimeout(10)
        answered += s.recv(4096).startswith(b"HTTP/1.1 200")
        s.close()
    assert answered == n
    blocker.close()


def test_max_connections_far_below_the_clients(spindle):
    srv = spindle(*URING, "--max-connections", "20", "--keepalive-timeout", "0.3")
    got = []

    def one():
        try:
            got.append(fresh_get(srv)[:15])
        except OSError as e:
            got.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert got == [b"HTTP/1.1 200 OK"] * 200, sorted(set(got))
