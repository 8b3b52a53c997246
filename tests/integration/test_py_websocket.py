"""spindle.websocket(environ) from WSGI apps (tests/fixtures/wsgi/ws_app.py,
flask_ws_app.py): echo of text and binary, a fragmented message, ping/pong,
close codes, a receive timeout, 1,000 WebSockets in one worker with a
broadcast reaching all, the error outside a handshake, a Flask view. The
client is a minimal RFC 6455 one on raw sockets (frames masked)."""
import base64
import os
import resource
import socket
import struct
import time
import urllib.request

from lib.wsgiutil import wait_for, wsgi_server  # noqa: F401  (fixture)


class WS:
    def __init__(self, port, path, protocols=None, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "Sec-WebSocket-Protocol: %s\r\n" % protocols if protocols else ""
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n%s\r\n" % (path, key, extra)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(4096)
            assert d, "closed during the handshake: %r" % self.buf
            self.buf += d
        self.head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert self.head.startswith(b"HTTP/1.1 101"), self.head

    def frame(self, opcode, payload=b"", fin=True):
        mask = os.urandom(4)
        n = len(payload)
        h = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            h += bytes([0x80 | n])
        elif n < 65536:
            h += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            h += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.s.sendall(h + mask + masked)

    def send(self, msg):
        if isinstance(msg, str):
            self.frame(1, msg.encode())
        else:
            self.frame(2, msg)

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_frame(self):
        b0, b1 = self._need(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._need(8))[0]
        assert not b1 & 0x80, "server frames are not masked"
        return b0 & 0x0F, self._need(n)

    def recv(self):
        """The next data message (str or bytes); answers nothing."""
        op, data = self.recv_frame()
        if op == 1:
            return data.decode()
        if op == 2:
            return data
        return (op, data)

    def close(self, code=1000):
        self.frame(8, struct.pack("!H", code))
        op, data = self.recv_frame()
        assert op == 8, (op, data)
        self.s.close()
        return struct.unpack("!H", data[:2])[0] if data else None


def test_echo_text_binary_fragments_ping_close(wsgi_server):
    s = wsgi_server("ws_app:application")
    c = WS(s.port, "/echo", protocols="superchat, chat")
    assert b"Sec-WebSocket-Protocol: chat" in c.head
    assert c.recv() == "proto=chat"
    c.send("héllo")
    assert c.recv() == "héllo"
    blob = bytes(range(256)) * 300  # 76800 bytes: a 64-bit length frame
    c.send(blob)
    assert c.recv() == blob
    c.frame(1, b"frag", fin=False)  # a fragmented text message
    c.frame(0, b"men", fin=False)
    c.frame(9, b"mid")              # a control frame between fragments
    assert c.recv_frame() == (10, b"mid")
    c.frame(0, b"ted", fin=True)
    assert c.recv() == "fragmented"
    c.send("ping")
    assert c.recv_frame() == (9, b"hi")
    assert c.recv() == "pinged"
    c.send("timeout")
    assert c.recv() == "timed out"
    c.send("close")  # the app closes with 4001 "bye"
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 4001 and data[2:] == b"bye"
    c.frame(8, data[:2])
    c.s.settimeout(5)
    assert c.s.recv(100) == b""  # the server closes the TCP connection after the handshake


def test_client_close_code_and_app_return_closes(wsgi_server):
    s = wsgi_server("ws_app:application")
    c = WS(s.port, "/echo")
    assert c.recv() == "proto=None"
    assert c.close(4321) == 4321  # the server answers the client's close with its code
    # an app that returns without closing: the server closes with 1000
    c = WS(s.port, "/once")
    assert c.recv() == "bye now"
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 1000
    c.frame(8, data[:2])
    c.s.close()


def test_app_failure_closes_1011(wsgi_server):
    s = wsgi_server("ws_app:application", expect_tracebacks=True)
    c = WS(s.port, "/boom")
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 1011
    c.s.close()


def test_slow_reader_dropped_after_send_timeout(wsgi_server):
    s = wsgi_server("ws_app:application", "--send-timeout", "1")
    c = WS(s.port, "/flood")
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    time.sleep(2.5)  # never read: the server's sends wait, then time out
    total, t0 = len(c.buf), time.monotonic()
    try:
        while time.monotonic() - t0 < 10:
            d = c.s.recv(1 << 20)
            if not d:
                break
            total += len(d)
    except ConnectionResetError:
        pass
    assert total < 32 << 20, "the server buffered %d bytes for a client that never read" % total
    assert time.monotonic() - t0 < 10
    assert wait_for(lambda: "flood: dropped after" in s.stdout(), 5)


def test_not_a_handshake_and_too_late(wsgi_server):
    s = wsgi_server("ws_app:application")
    r = s.get("/echo")
    assert r.status == 400 and b"not a WebSocket handshake" in r.body
    r = s.get("/late", headers=[("Upgrade", "websocket"), ("Connection", "Upgrade"),
                               ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                               ("Sec-WebSocket-Version", "13")])
    assert r.status == 200 and b"before start_response" in r.body


def test_1000_websockets_one_broadcast(wsgi_server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:  # 1,000 sockets here and in the server, which inherits it
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    s = wsgi_server("ws_app:application", "--max-connections", "1100")
    t0 = time.monotonic()
    clients = [WS(s.port, "/room") for _ in range(1000)]
    for c in clients:
        assert c.recv() == "hello"  # every one is in the room
    clients[0].send("to all")
    for c in clients:
        assert c.recv() == "to all"
    for c in clients:
        c.s.close()
    assert time.monotonic() - t0 < 10


def test_flask_view_holds_a_websocket(wsgi_server):
    s = wsgi_server("flask_ws_app:app")
    c = WS(s.port, "/ws/ann")
    c.send("hi")
    assert c.recv() == "ann: hi"
    c.send(b"\x00\x01")
    assert c.recv() == "ann: b'\\x00\\x01'"
    assert c.close(1000) == 1000


def test_c_layer_checks_reach_python_apps(wsgi_server):
    s = wsgi_server("ws_app:application")
    c = WS(s.port, "/echo")
    assert c.recv() == "proto=None"
    c.frame(1, b"\xff\xfe")  # invalid UTF-8 in a text message: 1007
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 1007
    c.s.close()
    c = WS(s.port, "/echo")
    assert c.recv() == "proto=None"
    # a header announcing more than the 1 MiB message limit: 1009 at once
    c.s.sendall(bytes([0x82, 0x80 | 127]) + struct.pack("!Q", (1 << 20) + 1) + b"mask")
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 1009
    c.s.close()


def test_access_log_line_of_a_websocket_survives_its_frames(wsgi_server, tmp_path):
    # The WebSocket reads its frames into the connection's buffer, where the
    # request head was: the line logged when it ends must still name the
    # request (it showed frame bytes as the request line, and status 200).
    log = tmp_path / "access.log"
    s = wsgi_server("ws_app:application", "--access-log", str(log))
    c = WS(s.port, "/echo")
    assert c.recv() == "proto=None"
    for i in range(5):
        c.send("m%d " % i + "x" * 300)
        assert c.recv().startswith("m%d " % i)
    assert c.close(1000) == 1000
    wait_for(lambda: log.exists() and "/echo" in log.read_text(), 5)
    line = [ln for ln in log.read_text().splitlines() if "/echo" in ln][-1]
    assert '"GET /echo HTTP/1.1" 101 ' in line, line


def test_ping_and_idle_flags_apply_to_python_websockets(wsgi_server):
    # --ws-ping-interval and --ws-idle-timeout were the binary's only
    # (refused by python3 -m spindle) though Python apps hold WebSockets.
    s = wsgi_server("ws_app:application", "--ws-ping-interval", "0.3", "--ws-idle-timeout", "1")
    c = WS(s.port, "/echo")
    assert c.recv() == "proto=None"
    c.s.settimeout(3)
    t0 = time.monotonic()
    op, _ = c.recv_frame()  # silence: the server pings
    assert op == 9 and time.monotonic() - t0 < 1.5
    while op == 9:  # pings unanswered: closed with 1001 after the idle timeout
        op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 1001
    assert 0.8 < time.monotonic() - t0 < 2.5
    c.s.close()


def test_django_view_holds_a_websocket(wsgi_server):
    s = wsgi_server("django_ws_app:application")
    c = WS(s.port, "/ws/dora/", protocols="chat")
    assert c.recv() == "hello dora over chat"
    c.send("hi")
    assert c.recv() == "dora: hi"
    c.send("bye")
    op, data = c.recv_frame()
    assert op == 8 and struct.unpack("!H", data[:2])[0] == 4000 and data[2:] == b"see you"
    c.s.close()
    # the worker goes on serving plain Django views
    r = urllib.request.urlopen("http://127.0.0.1:%d/plain/" % s.port, timeout=5)
    assert r.read() == b"plain Django view"
