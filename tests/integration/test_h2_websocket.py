"""WebSockets over HTTP/2 (RFC 8441): SETTINGS_ENABLE_CONNECT_PROTOCOL
advertised, an extended CONNECT with :protocol websocket answered 200 (no
Sec-WebSocket-Accept) and the stream then carrying the frames, for the C
handler (tests/fixtures/c/app_ws.c), WSGI's spindle.websocket (ws_app.py) and an
ASGI app (ws_echo_app.py, side by side with Hypercorn, which serves RFC 8441
too), over h2c prior knowledge and TLS with ALPN h2. Two WebSockets and a
plain request on one connection at once, a message bigger than the stream
window, bad requests (no :path, an unknown :protocol, a plain CONNECT), a
client RST_STREAM, a client that stops reading (its stream reset at the send
timeout, the others going on), a server stop (1001), permessage-deflate.
The client is python3-h2 (the H2 class below), frames masked by hand."""
import json
import os
import pathlib
import signal
import socket
import ssl
import struct
import time
import zlib

import h2.events
import h2.settings
import pytest

from lib.asgi_pair import AsgiServer
from lib.asgiutil import asgi  # noqa: F401 (the fixture)
from lib.server import BIN
from lib.h2util import CANCEL, Raw, h2_client
from hyperframe.frame import DataFrame, GoAwayFrame, HeadersFrame
from lib.tlsutil import certs  # noqa: F401 (the session fixture)
from lib.wsgiutil import wsgi_server  # noqa: F401 (the fixture)

# beside the binary under test (build/ or build/asan/), as test_websocket.py has it
APP_WS = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_ws.so")


class H2:
    """One python3-h2 client connection with any number of streams; every
    read is bounded by a deadline."""

    def __init__(self, port, tls=None):
        self.s, self.c = h2_client(port, tls=tls)
        self.inbox, self.heads, self.ended, self.resets = {}, {}, set(), {}
        self.remote_settings = {}
        self.eof = False

    def flush(self):
        data = self.c.data_to_send()
        if data:
            self.s.sendall(data)

    def pump(self, timeout=0.2, ack=True):
        """Reads once (up to timeout) and files the events; with ack the
        received DATA are acknowledged (the windows reopen; "conn": only the
        connection's)."""
        self.flush()
        self.s.settimeout(timeout)
        try:
            data = self.s.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            return
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            self.eof = True
            return
        for ev in self.c.receive_data(data):
            sid = getattr(ev, "stream_id", None)
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.remote_settings.update({k: v.new_value for k, v in ev.changed_settings.items()})
            elif isinstance(ev, h2.events.ResponseReceived):
                self.heads[sid] = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                self.inbox.setdefault(sid, bytearray()).extend(ev.data)
                if ack == "conn" and ev.flow_controlled_length:
                    self.c.increment_flow_control_window(ev.flow_controlled_length)
                elif ack:
                    self.c.acknowledge_received_data(ev.flow_controlled_length, sid)
            elif isinstance(ev, h2.events.StreamEnded):
                self.ended.add(sid)
            elif isinstance(ev, h2.events.StreamReset):
                self.resets[sid] = ev.error_code
        self.flush()

    def until(self, pred, timeout=5.0, ack=True):
        end = time.monotonic() + timeout
        while not pred() and not self.eof and time.monotonic() < end:
            self.pump(min(0.2, max(0.01, end - time.monotonic())), ack)
        return pred()

    def connect(self, path, extra=(), scheme="http"):
        """An extended CONNECT for a WebSocket; returns its stream id."""
        sid = self.c.get_next_available_stream_id()
        self.c.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"),
                                  (":scheme", scheme), (":path", path), (":authority", "localhost"),
                                  ("sec-websocket-version", "13")] + list(extra))
        self.flush()
        return sid

    def request(self, path):
        sid = self.c.get_next_available_stream_id()
        self.c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                  (":authority", "localhost")], end_stream=True)
        self.flush()
        return sid

    def send(self, sid, data, timeout=5.0):
        """All of data on sid as the windows allow."""
        end = time.monotonic() + timeout
        data = bytes(data)
        while data:
            n = min(len(data), self.c.local_flow_control_window(sid), self.c.max_outbound_frame_size)
            if n == 0:
                assert time.monotonic() < end, "the server never opened its window"
                self.pump(0.1)
                continue
            self.c.send_data(sid, data[:n])
            data = data[n:]
        self.flush()

    def close(self):
        self.s.close()


def ws_frame(op, payload=b"", fin=True, rsv1=False):
    """A client frame (masked)."""
    mask = os.urandom(4)
    b0 = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | op
    n = len(payload)
    head = bytes([b0]) + (bytes([0x80 | n]) if n < 126 else
                          bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                          bytes([0x80 | 127]) + struct.pack(">Q", n))
    return head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


class WS:
    """A WebSocket on one stream of an H2 connection."""

    def __init__(self, conn, path="/ws", extra=(), check=True):
        self.h, self.sid = conn, conn.connect(path, extra)
        assert conn.until(lambda: self.sid in conn.heads or self.sid in conn.resets)
        self.head = conn.heads.get(self.sid, {})
        if check:
            assert self.head.get(":status") == "200", (self.head, conn.resets)
        self.inflater = None
        if "permessage-deflate" in self.head.get("sec-websocket-extensions", ""):
            self.inflater = zlib.decompressobj(-15)

    def frame(self, op, payload=b"", **kw):
        self.h.send(self.sid, ws_frame(op, payload, **kw))

    def send(self, msg):
        self.frame(1 if isinstance(msg, str) else 2, msg.encode() if isinstance(msg, str) else msg)

    def send_deflated(self, msg):
        z = zlib.compressobj(wbits=-15)
        data = z.compress(msg.encode()) + z.flush(zlib.Z_SYNC_FLUSH)
        assert data.endswith(b"\x00\x00\xff\xff")
        self.frame(1, data[:-4], rsv1=True)

    def recv_frame(self, timeout=5.0):
        """(opcode, rsv1, payload) of the next server frame (unmasked)."""
        buf = self.h.inbox.setdefault(self.sid, bytearray())

        def whole():
            if len(buf) < 2:
                return None
            n, at = buf[1] & 0x7F, 2
            if n == 126:
                n, at = (struct.unpack(">H", buf[2:4])[0], 4) if len(buf) >= 4 else (None, 0)
            elif n == 127:
                n, at = (struct.unpack(">Q", buf[2:10])[0], 10) if len(buf) >= 10 else (None, 0)
            return None if n is None or len(buf) < at + n else (at, n)
        assert self.h.until(lambda: whole() is not None, timeout), \
            "no whole frame (%d bytes, ended %s, reset %s)" % (
                len(buf), self.sid in self.h.ended, self.h.resets.get(self.sid))
        at, n = whole()
        op, rsv1, payload = buf[0] & 0x0F, bool(buf[0] & 0x40), bytes(buf[at:at + n])
        self.fin = bool(buf[0] & 0x80)
        del buf[:at + n]
        return op, rsv1, payload

    def recv(self, timeout=5.0):
        """The next data message, its fragments joined."""
        op, rsv1, payload = self.recv_frame(timeout)
        while not self.fin:
            more = self.recv_frame(timeout)
            assert more[0] == 0, more
            payload += more[2]
        if rsv1:
            payload = self.inflater.decompress(payload + b"\x00\x00\xff\xff")
        return payload.decode() if op == 1 else (op, payload) if op != 2 else payload

    def close(self, code=1000, how=False):
        """Our close; the server's close code, and whether it ended the stream
        (with how: "end", "reset N" or None, whichever came within 3 s)."""
        self.frame(8, struct.pack(">H", code))
        op, _, payload = self.recv_frame()
        assert op == 8, (op, payload)
        self.h.until(lambda: self.sid in self.h.ended or self.sid in self.h.resets, 3)
        end = "end" if self.sid in self.h.ended else \
            "reset %d" % self.h.resets[self.sid] if self.sid in self.h.resets else None
        return struct.unpack(">H", payload[:2])[0], end if how else end == "end"


def echo_transcript(port, path, tls=None, extra=(), greeting=False):
    """The same conversation on any server: what came back, in order (the
    close: our code echoed, and how the stream ended). greeting: the app
    speaks first."""
    conn = H2(port, tls=tls)
    try:
        ws = WS(conn, path, extra)
        out = [ws.head[":status"], "sec-websocket-accept" in ws.head]
        if greeting:
            out.append(ws.recv())
        for msg in ("hello", "h\u00e9llo", b"\x00\x01\x02", "x" * 70000, bytes(range(256)) * 600):
            ws.send(msg)
            out.append(ws.recv())
        out.append(ws.close(1000, how=True))
        return out
    finally:
        conn.close()


@pytest.fixture
def ws_server(spindle):
    assert os.path.exists(APP_WS), "build it with make all"
    return spindle("--app", APP_WS)


# ---- the C handler ---------------------------------------------------------


def test_settings_advertise_extended_connect(ws_server):
    conn = H2(ws_server.port)
    assert conn.until(lambda: h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL in conn.remote_settings)
    assert conn.remote_settings[h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL] == 1
    conn.close()


def test_c_echo_over_h2c(ws_server):
    conn = H2(ws_server.port)
    ws = WS(conn)
    assert "sec-websocket-accept" not in ws.head and "upgrade" not in ws.head
    ws.send("hello")
    assert ws.recv() == "hello"
    ws.send(b"\xff\x00bin")
    assert ws.recv() == b"\xff\x00bin"
    ws.frame(1, b"frag", fin=False)
    ws.frame(9, b"mid")  # a ping between fragments: answered at once
    assert ws.recv_frame() == (10, False, b"mid")
    ws.frame(0, b"ment")
    assert ws.recv() == "fragment"
    ws.send("ping")  # the handler pings us
    assert ws.recv_frame() == (9, False, b"hello")
    assert ws.close(1000) == (1000, True)  # the closing handshake, then END_STREAM
    conn.close()


def test_c_echo_over_tls_alpn_h2(spindle, certs):  # noqa: F811
    srv = spindle(*(certs.flags("localhost") + ["--app", APP_WS]))
    out = echo_transcript(srv.port, "/ws", tls=certs.context(alpn=["h2", "http/1.1"]))
    assert out[:2] == ["200", False] and out[-1] == (1000, "end")
    assert out[5] == "x" * 70000


def test_two_websockets_and_a_request_on_one_connection(ws_server):
    conn = H2(ws_server.port)
    a, b = WS(conn), WS(conn)
    plain = conn.request("/nope")
    a.send("to a")
    b.send("to b")
    assert b.recv() == "to b" and a.recv() == "to a"
    assert conn.until(lambda: plain in conn.ended)
    assert conn.heads[plain][":status"] == "404"
    a.send("spam 50")  # another coroutine sends on a while both receive
    assert a.recv() == "spamming"
    b.send("still here")
    assert b.recv() == "still here"
    assert [a.recv() for _ in range(50)] == ["spam %d" % i for i in range(50)]
    assert a.close() == (1000, True) and b.close() == (1000, True)
    conn.close()


def test_a_message_bigger_than_the_window(spindle):
    # --max-body-size is a body's limit: a WebSocket's DATA are none
    srv = spindle("--app", APP_WS, "--max-body-size", "1000")
    conn = H2(srv.port)
    ws = WS(conn)
    big = os.urandom(300000)  # the stream window is 65535: it must reopen as the server reads
    ws.send(big)
    assert ws.recv(timeout=10) == big
    assert ws.close() == (1000, True)
    conn.close()


def test_bad_extended_connects(ws_server):
    r = Raw(ws_server.port)
    base = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
            (":authority", "localhost")]
    # RFC 8441 §4: :path is required (nghttp2 resets it, PROTOCOL_ERROR, or we say 400)
    sid = r.headers(headers=base, end_stream=False)
    hdrs, _, code = r.response(sid)
    assert code == 1 or hdrs.get(":status") == "400", (hdrs, code)
    # a protocol other than websocket
    sid = r.headers(headers=[(":method", "CONNECT"), (":protocol", "chat"), (":scheme", "http"),
                             (":path", "/ws"), (":authority", "localhost")], end_stream=False)
    hdrs, body, code = r.response(sid)
    assert hdrs.get(":status") == "501", (hdrs, code)
    # a plain CONNECT (a tunnel): refused as before
    sid = r.headers(headers=[(":method", "CONNECT"), (":authority", "example.com:443")],
                    end_stream=False)
    hdrs, _, code = r.response(sid)
    assert hdrs.get(":status") == "501", (hdrs, code)
    # a GET where a WebSocket is routed: the handler's 400, as over HTTP/1.1
    sid = r.headers(path="/ws")
    hdrs, _, code = r.response(sid)
    assert hdrs.get(":status") == "400", (hdrs, code)
    r.close()
    # and the server still serves WebSockets
    assert echo_transcript(ws_server.port, "/ws")[-1] == (1000, "end")


def test_client_reset_ends_the_handler_and_the_connection_goes_on(ws_server):
    conn = H2(ws_server.port)
    ws = WS(conn)
    ws.send("one")
    assert ws.recv() == "one"
    conn.c.reset_stream(ws.sid, CANCEL)
    conn.flush()
    other = WS(conn)  # the same connection serves a new one
    other.send("two")
    assert other.recv() == "two"
    assert other.close() == (1000, True)
    conn.close()


def test_a_dropped_connection_ends_its_websockets(spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = spindle("--app", APP_WS, "--access-log", str(log), "--access-log-format", "%m %U %H %s")
    conn = H2(srv.port)
    a, b = WS(conn), WS(conn)
    for ws in (a, b):
        ws.send("x")
        assert ws.recv() == "x"
    conn.s.shutdown(socket.SHUT_RDWR)  # both handlers must end (ASan: nothing leaks)
    conn.close()
    # each handler's return logs its exchange: the 200 that began the WebSocket
    t0 = time.monotonic()
    while (not log.exists() or log.read_text().count("GET /ws HTTP/2.0 200") < 2) and \
            time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert log.read_text().count("GET /ws HTTP/2.0 200") == 2, log.read_text()
    assert echo_transcript(srv.port, "/ws")[-1] == (1000, "end")


def _sleep_ends(srv, count, within):
    """Waits up to WITHIN s for COUNT "sleep ended with -104" lines (app_ws's
    sleep command, interrupted by -ECONNRESET) in the server's stderr."""
    t0 = time.monotonic()
    while srv.stderr().count("sleep ended with -104") < count and time.monotonic() - t0 < within:
        time.sleep(0.05)
    return srv.stderr().count("sleep ended with -104")


def test_a_dropped_connection_wakes_every_handler_parked_in_a_sleep(spindle):
    # Every stream's handler has its own hang-up watch: with one shared by
    # the connection, only the last handler to park heard of the hang-up
    # and the others slept their 10 s out, holding the connection.
    srv = spindle("--app", APP_WS)
    conn = H2(srv.port)
    socks = [WS(conn) for _ in range(3)]
    for ws in socks:
        ws.send("sleep")
    time.sleep(0.5)  # all three parked in sp_sleep
    conn.s.shutdown(socket.SHUT_RDWR)
    conn.close()
    assert _sleep_ends(srv, 3, 3) == 3, srv.stderr()
    assert echo_transcript(srv.port, "/ws")[-1] == (1000, "end")


def test_a_reset_stream_wakes_its_handler_parked_in_a_sleep(spindle):
    srv = spindle("--app", APP_WS)
    conn = H2(srv.port)
    sleeper, other = WS(conn), WS(conn)
    sleeper.send("sleep")
    time.sleep(0.3)
    conn.c.reset_stream(sleeper.sid, CANCEL)
    conn.flush()
    assert _sleep_ends(srv, 1, 3) == 1, srv.stderr()
    other.send("still here")  # the connection and the other stream go on
    assert other.recv() == "still here"
    assert other.close() == (1000, True)
    conn.close()


def test_a_client_that_stops_reading_loses_only_its_stream(spindle):
    srv = spindle("--app", APP_WS, "--send-timeout", "1")
    conn = H2(srv.port)
    stuck, fine = WS(conn), WS(conn)
    stuck.send("spam 20000")  # ~200 KB: past the window and the stream's buffer
    t0 = time.monotonic()
    # the connection's window given back, the stream's never: it stays shut
    assert conn.until(lambda: stuck.sid in conn.resets, timeout=6, ack="conn")
    assert conn.resets[stuck.sid] == CANCEL and time.monotonic() - t0 < 5
    fine.send("after")
    assert fine.recv() == "after"
    assert fine.close() == (1000, True)
    conn.close()


# Measured 14.7-16.7 KB per idle WebSocket on a stream alone, its buffer
# going back cold (its stack's page or two, the stream with its head and the
# WebSocket; 15.3-19.8 KB while the buffer went back warm, 21.0 KB once under
# a parallel suite, hence 22 KiB: a kept buffer adds 16 KiB or more), 50.2
# KB before a long wait gave back the WebSocket's read buffer, the stream's
# window and response buffers, the last message's buffer and the stack below,
# and before the stream's head moved out of its 12 KB decoding block.
IDLE_WS_PER_STREAM = 22 * 1024


def test_idle_websockets_on_streams_give_their_buffers_back(ws_server):
    """An idle WebSocket on an HTTP/2 stream, after one 3 KB message each way,
    costs at most IDLE_WS_PER_STREAM of the worker's RSS: 300 more on four
    more connections, once 300 others are idle (what those gave back serves
    these), as one on a connection of its own gives its buffer back
    (test_parked_memory.py); and each still echoes after."""
    conns = []
    msg = "m" * 3000

    def open_some(n):
        mine = [H2(ws_server.port) for _ in range(4)]
        conns.extend(mine)
        out = [WS(mine[i % len(mine)]) for i in range(n)]
        for ws in out:
            ws.send(msg)
        for ws in out:
            assert ws.recv() == msg
        return out

    try:
        first = open_some(300)
        time.sleep(0.3)  # past LOOP_LONG_WAIT_MS (25 ms): every one in its long wait
        before = ws_server.rss_kb()
        idle = open_some(300)
        time.sleep(0.3)
        per = (ws_server.rss_kb() - before) * 1024 / len(idle)
        assert per <= IDLE_WS_PER_STREAM, "%.0f bytes of RSS per idle WebSocket on a stream" % per
        for ws in first[::30] + idle[::30]:  # their buffers come back with the next DATA
            ws.send("again " + msg)
            assert ws.recv() == "again " + msg
    finally:
        for c in conns:
            c.close()


def test_server_stop_closes_with_1001(ws_server):
    # frames by hand: python3-h2 takes nothing after the GOAWAY that comes first
    r = Raw(ws_server.port)
    sid = r.headers(headers=[(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                             (":path", "/ws"), (":authority", "localhost"),
                             ("sec-websocket-version", "13")], end_stream=False)
    fs = r.until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == sid)
    assert fs and dict(fs[-1].fields)[":status"] == "200"
    r.data(sid, ws_frame(1, b"ok"))
    fs = r.until(lambda f: isinstance(f, DataFrame) and f.stream_id == sid)
    assert fs and fs[-1].data == b"\x81\x02ok"
    t0 = time.monotonic()
    os.kill(ws_server.pid, signal.SIGTERM)
    fs = r.until(lambda f: isinstance(f, DataFrame) and f.stream_id == sid and f.data, timeout=3)
    assert any(isinstance(f, GoAwayFrame) for f in fs)  # no new streams, this one finishes
    assert fs[-1].data[:4] == b"\x88\x02\x03\xe9", fs  # a close frame, 1001
    r.data(sid, ws_frame(8, b"\x03\xe9"), end_stream=True)  # our answer, and our end
    assert r.closed(3) and time.monotonic() - t0 < 3
    r.close()


def test_permessage_deflate_over_h2(ws_server):
    conn = H2(ws_server.port)
    ws = WS(conn, extra=[("sec-websocket-extensions", "permessage-deflate; client_max_window_bits")])
    assert ws.head.get("sec-websocket-extensions", "").startswith("permessage-deflate"), ws.head
    text = "compress me " * 200
    ws.send_deflated(text)
    op, rsv1, payload = ws.recv_frame()
    assert op == 1 and rsv1 and len(payload) < len(text) // 4
    assert ws.inflater.decompress(payload + b"\x00\x00\xff\xff").decode() == text
    assert ws.close() == (1000, True)
    conn.close()


# ---- the Python bindings -----------------------------------------------------


def test_wsgi_spindle_websocket_over_h2(wsgi_server):  # noqa: F811
    s = wsgi_server("ws_app:application")
    out = echo_transcript(s.port, "/echo", extra=[("sec-websocket-protocol", "chat")], greeting=True)
    assert out[:4] == ["200", False, "proto=chat", "hello"] and out[-1] == (1000, "end"), out
    assert out[6] == "x" * 70000 and out[7] == bytes(range(256)) * 600


def test_asgi_echo_beside_hypercorn(tmp_path):
    got = {}
    for kind in ("hypercorn", "spindle"):
        srv = AsgiServer(kind, "ws_echo_app:app", tmp_path, {}).wait_ready()
        try:
            got[kind] = echo_transcript(srv.port, "/")
        finally:
            srv.stop()
    assert got["spindle"][:3] == ["200", False, "hello"], got["spindle"]
    # the stream's end after the closing handshake: ours END_STREAM (RFC 8441
    # §5: an orderly close); Hypercorn's may differ, and is not compared
    assert got["spindle"][-1] == (1000, "end")
    got["spindle"][-1], got["hypercorn"][-1] = got["spindle"][-1][0], got["hypercorn"][-1][0]
    for i, (a, b) in enumerate(zip(got["spindle"], got["hypercorn"])):
        assert a == b, "item %d: spindle %r, hypercorn %r" % (i, str(a)[:80], str(b)[:80])
    assert len(got["spindle"]) == len(got["hypercorn"])


def test_asgi_websocket_scope_over_h2(asgi):  # noqa: F811
    srv = asgi("asgi_ws_scope:app")
    conn = H2(srv.port)
    ws = WS(conn, "/chat?room=1", extra=[("sec-websocket-protocol", "a, b")])
    s = json.loads(ws.recv())
    assert s["type"] == "websocket" and s["scheme"] == "ws" and s["http_version"] == "2"
    assert s["path"] == "/chat" and s["query_string"] == "room=1" and s["subprotocols"] == ["a", "b"]
    assert ws.close() == (1000, True)
    conn.close()


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="Debian's chromium is not installed")
def test_chromium_opens_its_websocket_on_the_h2_connection(spindle, certs, tmp_path):  # noqa: F811
    """A browser, not a library: headless Chromium loads a page over TLS with
    ALPN h2, then `new WebSocket("wss://…")` on the same origin; it takes the
    stream (the access log says HTTP/2.0 for /ws, a 200, not a 101), echoes
    and negotiates permessage-deflate on it."""
    from lib import chromium as cb
    root = tmp_path / "www"
    root.mkdir()
    (root / "index.html").write_text("<html><body>ready</body></html>")
    log = tmp_path / "access.log"
    srv = spindle(*(certs.flags("localhost") + ["--app", APP_WS, "--root", str(root), "--access-log",
                                                str(log), "--access-log-format", "%m %U %H %s"]))
    proc, blog, cdp = cb.start(str(tmp_path / "chromium"), time.monotonic() + 30,
                               flags=["--ignore-certificate-errors"])  # the test CA
    try:
        page = cdp.page("https://localhost:%d/index.html" % srv.port)
        cdp.wait(page, "document.readyState === 'complete' && document.body.textContent === 'ready'",
                 "the page")
        proto = cdp.eval(page, "performance.getEntriesByType('navigation')[0].nextHopProtocol")
        got = cdp.eval(page, """new Promise((ok, bad) => {
            const w = new WebSocket('wss://localhost:%d/ws');
            w.onopen = () => w.send('over a stream');
            w.onmessage = e => { ok([e.data, w.extensions]); w.close(1000); };
            w.onerror = () => bad('error'); setTimeout(() => bad('timeout'), 5000); })""" % srv.port)
    finally:
        cb.stop(proc, blog)
    assert proto == "h2", proto
    assert got[0] == "over a stream" and got[1].startswith("permessage-deflate"), got
    t0 = time.monotonic()
    while (not log.exists() or "GET /ws HTTP/2.0 200" not in log.read_text()) and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    text = log.read_text()
    assert "GET /ws HTTP/2.0 200" in text and "/ws HTTP/1.1" not in text, text
