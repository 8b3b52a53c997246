"""Fixtures and helpers for spindle's integration tests.

`spindle` (factory) starts the real binary (build/spindle, or $SPINDLE_BIN,
e.g. build/asan/spindle) on 127.0.0.1 with a free port (one worker when the
binary has --workers), waits (5 s at most) until it answers a request, and
at teardown stops it by its own PID (SIGTERM, then SIGKILL after 2 s, then
its process group) and fails the test if its stderr shows an
AddressSanitizer or UBSan report or a worker that died. `server` is a
default instance with short timeouts.

`Conn` wraps a raw socket (every read has a timeout) and parses responses
byte by byte: status line, headers, Content-Length / chunked / until-close
bodies, and checks that a connection ends in a clean EOF (not a reset).
"""
import os
import pathlib
import resource
import socket
import subprocess
import time

import pytest

from proctools import (ServerProcess, children, fd_count, free_port, http_probe, proc_status,  # noqa: F401
                       start_on_free_port)

ROOT = pathlib.Path(os.environ.get("SPINDLE_ROOT") or pathlib.Path(__file__).resolve().parents[2])
BIN = os.environ.get("SPINDLE_BIN", "build/spindle")
if not os.path.isabs(BIN):
    BIN = str(ROOT / BIN)
CURL = "/usr/bin/curl"

# Short timeouts so waits stay short; a test that needs others passes them.
FAST = ["--header-timeout", "1", "--keepalive-timeout", "1", "--body-timeout", "1",
        "--send-timeout", "1", "--linger-timeout", "0.5"]


def _help_text():
    try:
        return subprocess.run([BIN, "--help"], capture_output=True, timeout=10).stdout.decode()
    except (OSError, subprocess.SubprocessError):
        return ""


HELP = _help_text()
# Later issues add worker processes: these tests are about one serving
# process, so run a single worker and make TERM stop it quickly.
PROCESS_FLAGS = (["--workers", "1"] if "--workers" in HELP else []) + \
    (["--graceful-timeout", "1"] if "--graceful-timeout" in HELP else [])

SANITIZER_MARKS = ("AddressSanitizer", "runtime error", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "; starting a new one")  # the last: a worker died and was replaced


class Server(ServerProcess):
    """A running spindle process (proctools.ServerProcess), in its own
    session so that workers it may fork can be killed as a group."""

    name = "spindle"

    def __init__(self, args, stderr_path, binds, port, env=None, preexec_fn=None):
        super().__init__([BIN] + args, stderr_path, port=port, env=env, cwd=str(ROOT),
                         preexec_fn=preexec_fn)
        self.args = args
        self.binds = binds

    def wait_ready(self, timeout=5.0):
        """Until every bind answers a whole request."""
        end = time.monotonic() + timeout
        for b in self.binds:
            self.wait_until(lambda: http_probe(b), max(0.0, end - time.monotonic()))

    def serving_pids(self):
        """The processes that serve: the workers if it forked any, else itself."""
        return sorted(children(self.pid)) or [self.pid]

    def _status(self, key):
        return max([proc_status(pid, key) or 0 for pid in self.serving_pids()] + [0])

    def rss_kb(self):
        """Largest VmRSS among the serving processes, in KiB."""
        return self._status("VmRSS")

    def hwm_kb(self):
        return self._status("VmHWM")

    def fd_count(self):
        """Open fds of the master and its serving processes together."""
        return sum(max(fd_count(pid), 0) for pid in set(self.serving_pids()) | {self.pid})

    def connect(self, timeout=5.0):
        return Conn(socket.create_connection(self.addr, timeout=timeout), timeout)

    def stop(self):
        # any worker left behind: the group is this server's own
        super().stop(grace=2, after_kill=5, group=True)


def stop_servers(servers):
    """Stops every Server; returns the problems seen: a sanitizer report or
    crash in its stderr, or an exit of its own before the stop."""
    problems = []
    for srv in servers:
        crashed = srv.proc.poll()
        srv.stop()
        err = srv.stderr()
        if any(m in err for m in SANITIZER_MARKS):
            problems.append("sanitizer report or crash in spindle %s:\n%s" % (srv.args, err[-6000:]))
        if crashed is not None and crashed != 0:
            problems.append("spindle exited on its own with %s:\n%s" % (crashed, err[-3000:]))
    return problems


@pytest.fixture
def spindle(tmp_path, request):
    """Factory: spindle(*flags, binds=None) -> Server (already accepting).

    With binds=None it listens on 127.0.0.1:<free port>; otherwise binds is
    a list of --bind values (the first TCP one gives .port/.host)."""
    servers = []

    def start(*flags, binds=None, fast=True):
        # With a port of our choosing, a port taken before spindle binds it
        # means another try on a fresh one.
        def discard(srv):
            srv.stop()
            servers.remove(srv)
        return start_on_free_port(lambda: _start_once(flags, binds, fast), Server.wait_ready, discard,
                                  retry=binds is None)

    def _start_once(flags, binds, fast):
        if binds is None:
            binds = ["127.0.0.1:%d" % free_port()]
        port = None
        host = "127.0.0.1"
        for b in binds:
            if not b.startswith("unix:"):
                h, _, p = b.rpartition(":")
                host, port = h.strip("[]"), int(p)
                break
        args = []
        for b in binds:
            args += ["--bind", b]
        args += PROCESS_FLAGS + (FAST if fast else []) + list(flags)
        srv = Server(args, str(tmp_path / ("spindle-%d.err" % len(servers))), binds, port)
        srv.host = host
        servers.append(srv)
        return srv

    yield start
    problems = stop_servers(servers)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def server(spindle):
    return spindle()


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------- raw HTTP

class Response:
    def __init__(self, version, status, reason, headers, body, raw_head):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value), in order
        self.body = body
        self.raw_head = raw_head

    def header(self, name, default=None):
        vals = self.all(name)
        return vals[0] if vals else default

    def all(self, name):
        n = name.lower()
        return [v for k, v in self.headers if k.lower() == n]

    def connection_close(self):
        return any("close" in [t.strip().lower() for t in v.split(",")] for v in self.all("Connection"))

    def __repr__(self):
        return "<Response %s %s %r body=%r>" % (self.status, self.reason, self.headers, self.body[:80])


class Conn:
    """A raw client connection with a read buffer."""

    def __init__(self, sock, timeout=5.0):
        self.sock = sock
        self.sock.settimeout(timeout)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        self.sock.sendall(data)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed by server")
        self.buf += chunk

    def _line(self, limit=65536):
        while b"\r\n" not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("line too long")
            self._fill()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, method="GET", allow_interim=False, sink=None):
        """Reads one response. 1xx responses are skipped unless allow_interim.
        With sink (a callable), body bytes go to it instead of .body."""
        while True:
            status_line = self._line()
            parts = status_line.decode("latin-1").split(" ", 2)
            version, status = parts[0], int(parts[1])
            reason = parts[2] if len(parts) > 2 else ""
            assert version.startswith("HTTP/1."), status_line
            headers = []
            raw = [status_line]
            while True:
                line = self._line()
                raw.append(line)
                if not line:
                    break
                k, sep, v = line.decode("latin-1").partition(":")
                assert sep and k == k.strip(), "bad header line %r" % line
                headers.append((k, v.strip()))
            resp = Response(version, status, reason, headers, b"", b"\r\n".join(raw) + b"\r\n")
            if 100 <= status < 200:
                if allow_interim:
                    return resp
                continue
            break
        if method == "HEAD" or status in (204, 304):
            return resp
        te = resp.header("Transfer-Encoding")
        cl = resp.header("Content-Length")
        parts = []
        out = sink or parts.append
        if te is not None:
            assert te.lower() == "chunked", te
            self._chunked(out)
        elif cl is not None:
            self._counted(int(cl), out)
        else:
            out(self.read_until_close())
        resp.body = b"".join(parts)
        return resp

    def _counted(self, n, out):
        while n:
            if not self.buf:
                self._fill()
            piece, self.buf = self.buf[:n], self.buf[n:]
            n -= len(piece)
            out(piece)

    def _chunked(self, out):
        while True:
            size_line = self._line()
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while self._line():  # trailers
                    pass
                return
            self._counted(size, out)
            assert self._exact(2) == b"\r\n"

    def read_until_close(self, limit=64 << 20):
        """Everything until EOF; a reset fails the test."""
        while len(self.buf) < limit:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                pytest.fail("connection reset instead of a clean close (buffered %r)" % self.buf[:200])
            if not chunk:
                break
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def assert_closed(self, timeout=None):
        """The server closed cleanly: nothing more buffered, then EOF (no reset)."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        rest = self.read_until_close()
        assert rest == b"", "unexpected bytes before close: %r" % rest[:300]

    def assert_open(self, wait=0.2):
        """Nothing arrives and the connection is not closed for `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return
        finally:
            self.sock.settimeout(5)
        assert False, "expected the connection open and silent, got %r" % chunk[:200]


def request(srv, data, method="GET", timeout=5.0):
    """One raw request on a fresh connection; returns (response, conn)."""
    c = srv.connect(timeout)
    c.send(data)
    return c.read_response(method), c


def get(path="/", host="x", extra=""):
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, host, extra)).encode("latin-1")


HELLO = b"Hello world!"
