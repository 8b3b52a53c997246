"""Helpers for the ASGI tests (tests/integration/test_asgi_*.py): an
AsgiServer is a wsgiutil.WsgiServer (`python3 -m spindle SPEC` on a free
port, stopped by its PID, stderr checked) serving tests/fixtures/asgi; `asgi`
starts them per test, `shared_asgi` one per module for the many read-only
checks. Every socket has a timeout; every wait is bounded."""
import json
import os
import socket
import time

import pytest

from lib.wsgiutil import PYPATH, ROOT, WsgiServer, wait_for  # noqa: F401

APPS = ROOT / "tests" / "fixtures" / "asgi"


class AsgiServer(WsgiServer):
    name = "spindle ASGI server"

    def __init__(self, spec, args=(), env=None, **kw):
        env = dict(env or {})
        env.setdefault("PYTHONPATH", PYPATH + os.pathsep + str(APPS))
        kw.setdefault("chdir", APPS)
        super().__init__(spec, args, env=env, **kw)

    def json(self, path, **kw):
        r = self.get(path, **kw)
        assert r.status == 200, (path, r.status, r.body)
        return json.loads(r.body)

    def events(self):
        return self.json("/events")

    def request(self, data, timeout=5):
        """Raw bytes in, everything until the server closes out."""
        return self.raw(data, timeout)


def _starter(logdir, servers):
    def start(spec="asgi_spec:app", *args, **kw):
        kw.setdefault("logdir", logdir)
        s = AsgiServer(spec, args, **kw)
        servers.append(s)
        s.start()
        return s
    return start


def _finish(servers):
    problems = []
    for s in servers:
        rc = s.stop()
        problems += s.problems()
        if rc not in (0, None) and not s.expect_exit:
            problems.append("%s exited with %s after SIGTERM:\n%s" % (s.spec, rc, s.stderr()[-3000:]))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def asgi(tmp_path):
    """asgi(spec='asgi_spec:app', *flags, env=None, expect_tracebacks=False, ...)"""
    servers = []
    yield _starter(tmp_path, servers)
    _finish(servers)


@pytest.fixture(scope="module")
def shared_asgi(tmp_path_factory):
    """One asgi_spec:app server for a module (tracebacks expected: the
    error tests provoke them)."""
    servers = []
    s = _starter(tmp_path_factory.mktemp("asgi"), servers)("asgi_spec:app",
                                                             expect_tracebacks=True)
    yield s
    _finish(servers)


def connect(port, timeout=5):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def recv_until(s, marker, timeout=5, limit=1 << 24):
    """Reads until marker is in the data (or the peer closes)."""
    data = b""
    end = time.monotonic() + timeout
    while marker not in data and len(data) < limit and time.monotonic() < end:
        d = s.recv(65536)
        if not d:
            break
        data += d
    return data


class WS:
    """A minimal RFC 6455 client on a raw socket (masked frames). After
    the handshake `head` holds the response head; `ok` says it was a 101."""

    def __init__(self, port, path, protocols=None, timeout=5):
        import base64
        self.s = connect(port, timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "Sec-WebSocket-Protocol: %s\r\n" % protocols if protocols else ""
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
                        % (path, key, extra)).encode())
        self.buf = recv_until(self.s, b"\r\n\r\n")
        self.head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        self.ok = self.head.startswith(b"HTTP/1.1 101")

    def frame(self, opcode, payload=b"", fin=True):
        import struct
        mask = os.urandom(4)
        n = len(payload)
        h = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            h += bytes([0x80 | n])
        elif n < 65536:
            h += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            h += bytes([0x80 | 127]) + struct.pack("!Q", n)
        self.s.sendall(h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, msg):
        self.frame(1, msg.encode()) if isinstance(msg, str) else self.frame(2, msg)

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_frame(self):
        import struct
        b0, b1 = self._need(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._need(8))[0]
        return b0 & 0x0F, self._need(n)

    def recv(self):
        op, data = self.recv_frame()
        return data.decode() if op == 1 else data if op == 2 else (op, data)

    def close_code(self, answer=True):
        """Reads up to the server's close frame: (code, reason); answers it
        (the closing handshake) unless told not to."""
        import struct
        while True:
            op, data = self.recv_frame()
            if op == 8:
                if answer:
                    try:
                        self.frame(8, data[:2])
                    except OSError:
                        pass
                    self.s.close()
                return (struct.unpack("!H", data[:2])[0] if data else None), data[2:]

    def close(self, code=1000):
        import struct
        self.frame(8, struct.pack("!H", code))
        c = self.close_code(answer=False)
        self.s.close()
        return c
