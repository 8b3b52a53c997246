"""Helpers for the chat example's tests (test_chat.py) and its browser driver
(tests/integration/lib/chat_browser.py): a minimal RFC 6455 client on plain sockets (masked
frames, fragments reassembled, pings answered), ChatServer, which runs
build/examples/chat on a free 127.0.0.1 port and stops it by its PID, and
ChatApp, the chat module (build/examples/chat.so) under build/spindle with
its workers and a bus, and id_key (bus ids "MS-SEQ" in order)."""
import base64
import json
import os
import pathlib
import socket
import struct

from lib.client import Conn
from lib.proctools import ServerProcess, free_port, http_probe

ROOT = pathlib.Path(os.environ.get("SPINDLE_ROOT") or pathlib.Path(__file__).resolve().parents[3])
CHAT_BIN = os.environ.get("CHAT_BIN") or str(ROOT / "build" / "examples" / "chat")
CHAT_SO = str(ROOT / "build" / "examples" / "chat.so")
SPINDLE = str(ROOT / "build" / "spindle")


def id_key(i):
    """A bus id as a sortable pair."""
    ms, _, seq = i.partition("-")
    return int(ms), int(seq or 0)


class WSClosed(Exception):
    def __init__(self, code, reason=b""):
        super().__init__("closed with %s %r" % (code, reason))
        self.code = code


class WS:
    """A WebSocket client. recv() returns (opcode, payload bytes)."""

    def __init__(self, host, port, path="/", headers=(), timeout=5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (host, port), "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
        lines += ["%s: %s" % h for h in headers]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the handshake: %r" % self.buf)
            self.buf += chunk
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ", 2)[1])
        if self.status != 101:
            self.sock.close()
            raise ConnectionError("handshake refused: " + self.head.splitlines()[0])

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise WSClosed(1006)
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self):
        b0, b1 = self._exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._exact(8))[0]
        mask = self._exact(4) if b1 & 0x80 else None
        data = self._exact(n)
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return bool(b0 & 0x80), b0 & 0x0F, data

    def send(self, opcode, data):
        if isinstance(data, str):
            data = data.encode()
        head = bytes([0x80 | opcode])
        n = len(data)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        body = bytes(c ^ mask[i % 4] for i, c in enumerate(data)) if n < 4096 else \
            (int.from_bytes(data, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        self.sock.sendall(head + mask + body)

    def send_text(self, text):
        self.send(1, text)

    def recv(self, timeout=5.0):
        self.sock.settimeout(timeout)
        parts, first = [], None
        while True:
            fin, op, data = self._frame()
            if op == 9:
                self.send(10, data)
                continue
            if op == 10:
                continue
            if op == 8:
                code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005
                try:
                    self.send(8, data[:2])
                except OSError:
                    pass
                raise WSClosed(code, data[2:])
            if first is None:
                first = op
            parts.append(data)
            if fin:
                return first, b"".join(parts)

    def recv_json(self, timeout=5.0):
        op, data = self.recv(timeout)
        assert op == 1, op
        return json.loads(data)

    def close(self, code=1000):
        try:
            self.send(8, struct.pack("!H", code))
            self.recv(2.0)
        except (WSClosed, OSError):
            pass
        self.sock.close()


class ChatServer(ServerProcess):
    """build/examples/chat on 127.0.0.1:<free port>, started and stopped by PID
    (a proctools.ServerProcess)."""

    name = "chat"

    def __init__(self, tmp_path, *flags):
        super().__init__(port=free_port())
        self.err_path = str(pathlib.Path(tmp_path) / ("chat-%d.err" % self.port))
        self.launch([CHAT_BIN, "--bind", "127.0.0.1:%d" % self.port] + list(flags), self.err_path,
                    cwd=str(ROOT), new_session=False)
        self.wait_until(lambda: http_probe("127.0.0.1:%d" % self.port, "/stats", b"HTTP/1.1 200"), 5)

    @property
    def url(self):
        return "http://127.0.0.1:%d/" % self.port

    def ws(self, path="/ws", headers=(), timeout=5.0):
        return WS(self.host, self.port, path, headers, timeout)

    def stop(self):
        super().stop(3, 5)


def worker_census(port, n=32, rounds=8):
    """{pid: /stats} of each worker: n connections opened at once (so the
    workers share them), one request each, until every pid seen answered
    twice in a row or rounds pass."""
    out = {}
    for _ in range(rounds):
        before = len(out)
        conns = [Conn(port, timeout=5) for _ in range(n)]
        try:
            for c in conns:
                c.send(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            for c in conns:
                d = json.loads(c.read_response().body)
                out[d["pid"]] = d
        finally:
            for c in conns:
                c.close()
        if len(out) == before and len(out) > 1:
            break
    return out


def non_reader(srv, rcvbuf=4096):
    """A WebSocket that reads its 101 and then nothing: a small receive buffer,
    so the server's socket to it fills soon. srv: any server with .addr."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(5)
    s.connect(srv.addr)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)  # byte by byte: nothing past the head is read
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def ws_worker(w):
    """The pid of the worker that holds a WebSocket: the C chat's
    X-Chat-Worker header, else None."""
    for line in w.head.split("\r\n"):
        k, _, v = line.partition(":")
        if k.strip().lower() == "x-chat-worker":
            return v.strip()
    return None


def open_spread(open_one, port, batch=8, rounds=4):
    """WebSockets opened batch at a time, all at once (threads), until at
    least two workers hold some, by X-Chat-Worker or else by asking each
    worker's /stats (or rounds pass): the list."""
    import threading
    socks = []
    for _ in range(rounds):
        got = [None] * batch
        def one(k):
            got[k] = open_one(len(socks) + k)
        threads = [threading.Thread(target=one, args=(k,)) for k in range(batch)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        socks += [w for w in got if w]
        holders = {ws_worker(w) for w in socks}
        if None not in holders:
            if len(holders) >= 2:
                break
        elif sum(1 for d in worker_census(port).values() if d["ws"]) >= 2:
            break
    return socks


class ChatApp(ServerProcess):
    """build/spindle --app build/examples/chat.so on 127.0.0.1:<free port>
    (or the port given: a restart in place), with --workers, --bus and more
    flags; env: CHAT_ANNOUNCE_MS, CHAT_POLL_MS. Stopped by its master's PID."""

    name = "chat-app"

    def __init__(self, tmp_path, workers=0, bus="memory", flags=(), env=None, port=None):
        super().__init__(port=port or free_port())
        self.err_path = str(pathlib.Path(tmp_path) / ("chat-app-%d.err" % self.port))
        argv = [SPINDLE, "--app", CHAT_SO, "--root", "examples/chat/static", "--bind",
                "127.0.0.1:%d" % self.port, "--workers", str(workers), "--bus", bus] + list(flags)
        full_env = dict(os.environ, **(env or {}))
        self.launch(argv, self.err_path, env=full_env, cwd=str(ROOT))
        self.wait_until(lambda: http_probe("127.0.0.1:%d" % self.port, "/stats", b"HTTP/1.1 200"), 10)

    @property
    def url(self):
        return "http://127.0.0.1:%d/" % self.port

    def ws(self, path="/ws", headers=(), timeout=5.0):
        return WS(self.host, self.port, path, headers, timeout)

    def kill9(self):
        """SIGKILL to the master and its whole session (its workers)."""
        import signal
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait(5)

    def stop(self):
        super().stop(3, 5, group=True)
