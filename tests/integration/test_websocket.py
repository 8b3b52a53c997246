"""WebSockets (issue 9): RFC 6455 conformance of sp_ws_* against a real
client, PyPI's `websockets` (tests/integration/lib/ws_client.py), and raw sockets for
what a well-behaved client never sends: each bad frame must be answered
with a close frame carrying the right code, then the connection closes.
The server is build/spindle --app build/tests/fixtures/c/app_ws.so --workers 1."""
import base64
import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

from lib import ws_client
from lib.server import BIN

APP_WS = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_ws.so")
KEY = "dGhlIHNhbXBsZSBub25jZQ=="


@pytest.fixture
def ws_server(spindle):
    if not os.path.exists(APP_WS):
        pytest.fail("%s is not built (make builds tests/fixtures/c/*.c)" % APP_WS)
    return spindle("--app", APP_WS)


# ---- with a real client ------------------------------------------------------

@pytest.mark.parametrize("scenario", sorted(ws_client.SCENARIOS))
def test_ws_client(ws_server, scenario):
    ws_client.run("ws://127.0.0.1:%d/ws" % ws_server.port, scenario)
    assert ws_server.alive()


# ---- raw sockets -------------------------------------------------------------

def handshake(srv, extra=b"", key=KEY, version=b"13", path=b"/ws"):
    s = socket.create_connection(srv.addr, timeout=5)
    s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
              b"Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: " + key.encode() +
              b"\r\nSec-WebSocket-Version: " + version + b"\r\n\r\n" + extra)
    return s


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode(), rest


def frame(op, payload=b"", fin=True, mask=True, rsv=0, length=None):
    b0 = (0x80 if fin else 0) | rsv << 4 | op
    n = len(payload) if length is None else length
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = b"\x11\x22\x33\x44"
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


class Reader:
    def __init__(self, s, buf=b""):
        self.s, self.buf = s, buf

    def need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed with %d of %d bytes" % (len(self.buf), n))
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self):
        b0, b1 = self.need(2)
        assert not b1 & 0x80, "server frames are never masked"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.need(8))[0]
        return b0 & 0x0F, bool(b0 & 0x80), self.need(n)

    def eof(self):
        """The server closed (a clean end of stream, not a reset)."""
        self.s.settimeout(5)
        assert self.buf == b"" and self.s.recv(1) == b""


def expect_close(r, code):
    op, fin, payload = r.frame()
    assert op == 8 and fin, (op, payload)
    assert struct.unpack("!H", payload[:2])[0] == code, payload
    r.eof()


def test_handshake_answer(ws_server):
    s = handshake(ws_server)
    head, rest = read_head(s)
    lines = head.split("\r\n")
    assert lines[0] == "HTTP/1.1 101 Switching Protocols"
    fields = {k.lower(): v for k, v in (l.split(": ", 1) for l in lines[1:])}
    want = base64.b64encode(hashlib.sha1((KEY + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                         .encode()).digest()).decode()
    assert fields["sec-websocket-accept"] == want == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert fields["upgrade"].lower() == "websocket"
    assert fields["connection"].lower() == "upgrade"
    s.close()


def test_frames_sent_with_the_handshake_are_read(ws_server):
    # The first frames arrive in the same packet as the request head.
    s = handshake(ws_server, extra=frame(1, b"early") + frame(2, b"\x00\x01"))
    _, rest = read_head(s)
    r = Reader(s, rest)
    assert r.frame() == (1, True, b"early")
    assert r.frame() == (2, True, b"\x00\x01")
    s.sendall(frame(8, struct.pack("!H", 1000)))
    expect_close(r, 1000)


@pytest.mark.parametrize("name,request_fix,status", [
    ("no key", lambda h: h.replace(b"Sec-WebSocket-Key: " + KEY.encode() + b"\r\n", b""), 400),
    ("short key", lambda h: h.replace(KEY.encode(), b"abc"), 400),
    ("no upgrade", lambda h: h.replace(b"Upgrade: websocket\r\n", b""), 400),
    ("version 8", lambda h: h.replace(b"Version: 13", b"Version: 8"), 400),
])
def test_bad_handshakes_get_400(ws_server, name, request_fix, status):
    req = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: " + KEY.encode() + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    s = socket.create_connection(ws_server.addr, timeout=5)
    s.sendall(request_fix(req))
    head, _ = read_head(s)
    assert head.startswith("HTTP/1.1 %d" % status), head
    if name == "version 8":
        assert "Sec-WebSocket-Version: 13" in head
    s.close()


BAD_FRAMES = [
    ("unmasked", frame(1, b"hi", mask=False), 1002),
    ("opcode 3", frame(3, b"x"), 1002),
    ("opcode 11", frame(11, b""), 1002),
    ("rsv1", frame(1, b"x", rsv=4), 1002),
    ("rsv3", frame(2, b"x", rsv=1), 1002),
    ("ping of 126 bytes", frame(9, b"p" * 126), 1002),
    ("fragmented ping", frame(9, b"p", fin=False), 1002),
    ("continuation first", frame(0, b"x"), 1002),
    ("new message inside one", frame(1, b"a", fin=False) + frame(1, b"b"), 1002),
    ("close with 1 byte", frame(8, b"\x03"), 1002),
    ("close with code 1005", frame(8, struct.pack("!H", 1005)), 1002),
    ("close with code 999", frame(8, struct.pack("!H", 999)), 1002),
    ("invalid utf-8", frame(1, b"caf\xc3"), 1007),
    ("surrogate", frame(1, b"\xed\xa0\x80"), 1007),
    ("utf-8 cut across fragments", frame(1, b"a\xe2\x82", fin=False) + frame(0, b"(x"), 1007),
    ("close reason not utf-8", frame(8, struct.pack("!H", 1000) + b"\xff"), 1007),
    ("announced 2 MiB", frame(2, b"", length=2 << 20), 1009),
]


@pytest.mark.parametrize("name,data,code", BAD_FRAMES, ids=[b[0] for b in BAD_FRAMES])
def test_bad_frames_close_with_the_right_code(ws_server, name, data, code):
    s = handshake(ws_server)
    head, rest = read_head(s)
    assert head.startswith("HTTP/1.1 101")
    r = Reader(s, rest)
    # A good message first: the connection works until the bad frame.
    s.sendall(frame(1, b"ok"))
    assert r.frame() == (1, True, b"ok")
    s.sendall(data)
    expect_close(r, code)
    s.close()
    assert ws_server.alive()


def test_hang_up_wakes_a_parked_handler(ws_server):
    s = handshake(ws_server)
    _, rest = read_head(s)
    s.sendall(frame(1, b"sleep"))
    time.sleep(0.2)  # the handler parks in sp_sleep(10000)
    t0 = time.monotonic()
    s.close()
    while "sleep ended" not in ws_server.stderr() and time.monotonic() - t0 < 5:
        time.sleep(0.02)
    assert "sleep ended with -%d" % 104 in ws_server.stderr()  # -ECONNRESET, at once
    assert time.monotonic() - t0 < 2


def test_abrupt_end_without_close(ws_server):
    s = handshake(ws_server)
    _, rest = read_head(s)
    s.sendall(frame(1, b"x" * 10, fin=False)[:8])  # half a frame, then gone
    s.close()
    time.sleep(0.1)
    # The worker carries on.
    s = handshake(ws_server)
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.sendall(frame(1, b"again"))
    assert r.frame() == (1, True, b"again")
    s.close()


def test_graceful_stop_closes_websockets_with_1001(ws_server):
    s = handshake(ws_server)
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.sendall(frame(1, b"ok"))
    assert r.frame() == (1, True, b"ok")
    t0 = time.monotonic()
    os.kill(ws_server.pid, signal.SIGTERM)  # graceful stop, passed on to the worker
    s.settimeout(5)
    expect_close(r, 1001)
    assert time.monotonic() - t0 < 3


def test_unlimited_max_message_refuses_a_frame_it_cannot_hold(ws_server):
    # max_message = SIZE_MAX: a continuation announcing 2^63-1 bytes after a
    # first fragment made the buffer's doubling overflow to 0 and spin.
    s = handshake(ws_server, path=b"/ws-unlimited")
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.sendall(frame(1, b"ok"))
    assert r.frame() == (1, True, b"ok")
    t0 = time.monotonic()
    s.sendall(frame(1, b"a", fin=False) + frame(0, b"", length=(1 << 63) - 1))
    s.settimeout(3)
    expect_close(r, 1009)
    assert time.monotonic() - t0 < 3
    # the worker is free: a new WebSocket is served at once
    s = handshake(ws_server)
    _, rest = read_head(s)
    s.sendall(frame(1, b"again"))
    assert Reader(s, rest).frame() == (1, True, b"again")
    s.close()


# ---- keep-alive: --ws-ping-interval, --ws-idle-timeout ------------------------

KEEPALIVE = ["--ws-ping-interval", "0.2", "--ws-idle-timeout", "0.6"]


def open_connections(srv):
    with socket.create_connection(srv.addr, timeout=5) as c:
        c.sendall(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    line = [l for l in data.decode().splitlines() if l.startswith("spindle_open_connections ")]
    return int(line[0].split()[1]) - 1  # less this request's own


def test_ws_client_answering_pings_stays(spindle):
    srv = spindle("--app", APP_WS, *KEEPALIVE)
    s = handshake(srv)
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.settimeout(1)
    t0, pings = time.monotonic(), 0
    while time.monotonic() - t0 < 1.3:  # twice the idle timeout
        op, fin, payload = r.frame()
        assert op == 9, (op, payload)  # the server pings a silent client
        s.sendall(frame(10, payload))
        pings += 1
    assert pings >= 4
    s.sendall(frame(1, b"still here"))
    while True:
        op, fin, payload = r.frame()
        if op != 9:
            break
    assert (op, payload) == (1, b"still here")
    s.close()


def test_ws_silent_client_closed_with_1001_and_freed(spindle):
    srv = spindle("--app", APP_WS, "--stats", "/stats", *KEEPALIVE)
    s = handshake(srv)
    _, rest = read_head(s)
    t0 = time.monotonic()
    assert open_connections(srv) == 1
    # Never read, never answer: the server gives up after the idle timeout,
    # sends a 1001 close, waits its close timeout (2 s) for the answer, and
    # frees the connection.
    while open_connections(srv) and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    assert open_connections(srv) == 0
    assert time.monotonic() - t0 < 4
    r = Reader(s, rest)
    ops = []
    while True:
        op, fin, payload = r.frame()
        ops.append(op)
        if op == 8:
            break
    assert set(ops[:-1]) <= {9} and len(ops) >= 2, ops  # pings, then the close
    assert struct.unpack("!H", payload[:2])[0] == 1001, payload
    r.eof()


def test_ws_max_message_flag_is_the_default_limit(spindle):
    # --ws-max-message applies to upgrades that name no max_message (/ws);
    # a handler's own options win (/ws-unlimited)
    srv = spindle("--app", APP_WS, "--ws-max-message", "100")
    s = handshake(srv)
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.sendall(frame(2, b"x" * 100))
    assert r.frame() == (2, True, b"x" * 100)
    s.sendall(frame(2, b"x" * 101))
    expect_close(r, 1009)
    s = handshake(srv, path=b"/ws-unlimited")
    _, rest = read_head(s)
    r = Reader(s, rest)
    s.sendall(frame(2, b"y" * 1000))
    assert r.frame() == (2, True, b"y" * 1000)
