"""Fault injection: clients that reset (SO_LINGER 0, then close) mid-head,
mid-body and mid-response (issue 11). No crash, the worker's fd count
returns to its baseline, and the server keeps serving.

(kill -9 of a worker under load is tests/integration/test_workers.py's.)
"""
import socket
import time

from lib.server import FAST  # noqa: F401  (the fixture's short timeouts apply)
from lib.faultutil import fd_count, read_one, reset_close, wait_fds


def _baseline(srv):
    worker = srv.serving_pids()[0]
    with socket.create_connection(srv.addr, timeout=3) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_one(s)[0] == 200
    time.sleep(0.3)
    return worker, fd_count(worker)


def _still_serves(srv):
    for _ in range(5):
        with socket.create_connection(srv.addr, timeout=3) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert read_one(s) == (200, b"Hello world!")


def _check(srv, worker, base):
    n = wait_fds(worker, base, timeout=5)
    assert n <= base, "fds %d after resets, baseline %d" % (n, base)
    assert srv.alive()
    _still_serves(srv)


def test_reset_mid_head(spindle):
    srv = spindle("--header-timeout", "10")
    worker, base = _baseline(srv)
    for i in range(50):
        s = socket.create_connection(srv.addr, timeout=3)
        s.sendall(b"GET /sleep?ms=1 HTTP/1.1\r\nHost: x\r\nX-Part: " + b"y" * (i * 37))
        if i % 2:
            time.sleep(0.005)  # sometimes after the server has read it
        reset_close(s)
    _check(srv, worker, base)


def test_reset_mid_body(spindle):
    srv = spindle("--body-timeout", "10")
    worker, base = _baseline(srv)
    for i in range(40):
        s = socket.create_connection(srv.addr, timeout=3)
        if i % 2:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"b" * (i * 500))
        else:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"1000\r\n" + b"c" * (i * 50))
        time.sleep(0.01)
        reset_close(s)
    _check(srv, worker, base)


def test_reset_mid_response(spindle):
    """A large /echo: the client sends all of the body, reads a little of the
    answer (the server is blocked writing) and resets."""
    srv = spindle("--send-timeout", "10", "--body-timeout", "10")
    worker, base = _baseline(srv)
    size = 8 << 20
    body = b"r" * size
    for i in range(8):
        s = socket.create_connection(srv.addr, timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size)
        # Send while the server echoes; the echo fills our small receive buffer.
        sent = 0
        s.settimeout(0.2)
        try:
            while sent < size:
                sent += s.send(body[sent:sent + 65536])
        except socket.timeout:
            pass  # the server stopped reading: it is blocked writing to us
        s.settimeout(5)
        got = s.recv(1000 + i * 3000)
        assert got.startswith(b"HTTP/1.1 200"), got[:100]
        reset_close(s)
    # Pipelined keep-alive requests, reset while their answers are queued.
    for i in range(20):
        s = socket.create_connection(srv.addr, timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 200)
        time.sleep(0.002 * (i % 5))
        reset_close(s)
    _check(srv, worker, base)
