"""Fairness (hardening round 2): one connection whose reads and writes never
block — a client streaming tiny chunks, tiny WebSocket frames, or a fast
upload to a WSGI app — must not freeze the worker. Another client's request
is answered within PROBE_MAX while the hog runs, and the worker's heartbeat
still beats, so the watchdog (--worker-timeout 1) never kills it."""
import socket
import threading
import time

from lib.server import BIN  # noqa: F401
from test_websocket import APP_WS
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

HOG_SECONDS = 1.5
PROBE_MAX = 0.1  # seconds; a few ms with the fix, 0.6 s to seconds before it
PROBES = 5


class Hog:
    """One connection sending `head` then `block` over and over for
    HOG_SECONDS, then `tail`, while a second thread drains what comes back
    (the echo), so neither direction ever blocks the server."""

    def __init__(self, addr, head, block, tail, half_close=True):
        # half_close: shut the sending side when done (ends a keep-alive
        # echo). Not for a request that waits for its answer: a half-closed
        # client counts as gone while its request runs (as nginx and uvicorn
        # take it), so its answer is not sent.
        self.half_close = half_close
        self.sock = socket.create_connection(addr, timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head, self.block, self.tail = head, block, tail
        self.received = 0
        self.errors = []
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)

    def start(self):
        self.writer.start()
        self.reader.start()
        return self

    def _write(self):
        try:
            self.sock.sendall(self.head)
            end = time.monotonic() + HOG_SECONDS
            while time.monotonic() < end:
                self.sock.sendall(self.block)
            self.sock.sendall(self.tail)
        except OSError as e:
            self.errors.append(e)

    def _read(self):
        try:
            while True:
                b = self.sock.recv(1 << 20)
                if not b:
                    return
                self.received += len(b)
        except OSError:
            return

    def finish(self):
        self.writer.join(HOG_SECONDS + 10)
        if self.half_close:
            try:
                self.sock.shutdown(socket.SHUT_WR)  # ends a keep-alive echo
            except OSError:
                pass
        self.reader.join(5)
        self.sock.close()


def probe(addr, path):
    """Seconds one request on a fresh connection takes to be answered."""
    t0 = time.monotonic()
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 ")
    return time.monotonic() - t0


def probe_during(hog, addr, path):
    """Times PROBES requests spread over the hog's run."""
    time.sleep(0.2)  # the hog is under way
    times = []
    for _ in range(PROBES):
        times.append(probe(addr, path))
        time.sleep(0.15)
    hog.finish()
    return times


def check(times, hog, pids_before, pids_after, err):
    assert not hog.errors, hog.errors
    assert hog.received > 0, "the hog got nothing back: it did not run"
    assert max(times) < PROBE_MAX, "a request waited behind the hog: %s s" % [round(t, 3) for t in times]
    assert pids_after == pids_before, "the worker was replaced: %s -> %s\n%s" % (pids_before, pids_after, err)
    assert "killing it" not in err, err


def test_tiny_chunks_to_echo_do_not_freeze_the_worker(spindle):
    srv = spindle("--worker-timeout", "1", "--body-timeout", "5")
    pids = srv.serving_pids()
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    hog = Hog(srv.addr, head, b"1\r\nx\r\n" * 20000, b"0\r\n\r\n").start()
    times = probe_during(hog, srv.addr, b"/")
    check(times, hog, pids, srv.serving_pids(), srv.stderr())


def ws_frames(n):
    """n masked one-byte text frames (client frames are masked)."""
    mask = b"\x01\x02\x03\x04"
    return (b"\x81\x81" + mask + bytes([ord("x") ^ mask[0]])) * n


def test_tiny_websocket_frames_do_not_freeze_the_worker(spindle):
    srv = spindle("--app", APP_WS, "--worker-timeout", "1")
    pids = srv.serving_pids()
    head = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    close = b"\x88\x82\x01\x02\x03\x04" + bytes([0x03 ^ 1, 0xe8 ^ 2])  # close 1000
    hog = Hog(srv.addr, head, ws_frames(20000), close).start()
    times = probe_during(hog, srv.addr, b"/ws")  # not an upgrade: a quick 400
    check(times, hog, pids, srv.serving_pids(), srv.stderr())


def test_fast_upload_to_wsgi_app_does_not_freeze_the_worker(wsgi_server):
    srv = wsgi_server("stream_app:application", "--worker-timeout", "1")
    pids = srv.worker_pids()
    addr = ("127.0.0.1", srv.port)
    head = b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    hog = Hog(addr, head, b"1\r\nx\r\n" * 20000, b"0\r\n\r\n", half_close=False).start()
    times = probe_during(hog, addr, b"/other")  # the app answers 404 at once
    check(times, hog, pids, srv.worker_pids(), srv.stderr())


def test_sp_read_coalesces_buffered_tiny_chunks(spindle):
    """sp_read with a large buffer returns the data of many buffered chunks
    at once: /echo writes each read as one chunk, so its chunks are long."""
    srv = spindle()
    body = b"1\r\nx\r\n" * 2000 + b"0\r\n\r\n"
    with socket.create_connection(srv.addr, timeout=5) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  b"Connection: close\r\n\r\n" + body)
        data = b""
        while not data.endswith(b"\r\n0\r\n\r\n"):
            b = s.recv(1 << 16)
            assert b, data[-200:]
            data += b
    rest = data.split(b"\r\n\r\n", 1)[1]
    sizes = []
    while True:
        line, rest = rest.split(b"\r\n", 1)
        n = int(line, 16)
        if n == 0:
            break
        sizes.append(n)
        rest = rest[n + 2:]
    assert sum(sizes) == 2000
    assert len(sizes) < 100, "one chunk per read: %d reads for 2000 bytes" % len(sizes)
