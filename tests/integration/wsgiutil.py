"""Helpers for the WSGI binding's tests (tests/integration/test_wsgi_*.py).

Self-contained: no conftest.py. A `WsgiServer` (a proctools.ServerProcess) is one
`python -m spindle MODULE:CALLABLE` master (the interpreter running the tests) on a free 127.0.0.1
port, started in its own session with stdout and stderr in files, and
stopped by its own PID (SIGTERM, then SIGKILL of its workers and itself).
The `wsgi_server` fixture starts servers for a test and, at teardown, fails
the test if a server's stderr shows a Python traceback, an AssertionError
(wsgiref.validate), or a worker that died, unless the test said it expected
them. Every socket has a timeout; every wait is bounded.
"""
import hashlib
import http.client
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from proctools import ServerProcess, children, connect_probe, free_port, proc_status, wait_for  # noqa: F401

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The servers run on the interpreter that runs the tests: build/venv's (make
# test's main pass), or Debian's /usr/bin/python3 (its smoke pass), each with
# the binding built for it (make python, make python-system).
PY = sys.executable
APPS = ROOT / "tests" / "wsgi_apps"


def _binding_dir():
    if pathlib.Path(sys.prefix).resolve() == (ROOT / "build" / "venv").resolve():
        return ROOT / "build" / "python"
    if pathlib.Path(sys.executable).resolve() == pathlib.Path("/usr/bin/python3").resolve():
        return ROOT / "build" / "python-system"
    return ROOT / "build" / "python"


# SPINDLE_PYTHONPATH: test another build of the binding
PYPATH = os.environ.get("SPINDLE_PYTHONPATH", str(_binding_dir()))
BIN = str(ROOT / "build" / "spindle")

# Short timeouts so that stopping never waits long.
FAST = ["--graceful-timeout", "3", "--keepalive-timeout", "5", "--linger-timeout", "0.5"]

# What must not appear in a server's stderr unless the test expects it.
BAD_MARKS = ("Traceback", "AssertionError", "] error: ", "] critical: ", "starting a new one",
             "Fatal Python error", "Segmentation fault", "AddressSanitizer", "runtime error:",
             "WSGIWarning")
# What a test that provokes application errors may see.
EXPECTABLE = ("Traceback", "AssertionError", "] error: ")


def env_for(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYPATH + os.pathsep + str(APPS)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in tests/wsgi_apps
    env.pop("PYTHONSTARTUP", None)
    if extra:
        env.update(extra)
    return env


class WsgiServer(ServerProcess):
    """`python -m spindle SPEC` (or cmd) on a free port: a proctools.ServerProcess
    that starts when start() is called."""

    name = "spindle WSGI server"

    def __init__(self, spec, args=(), workers=1, chdir=APPS, env=None, logdir="/tmp",
                 expect_tracebacks=False, cmd=None, fast=True, expect_exit=False):
        super().__init__()
        self.spec = spec
        self.args = list(args)
        self.workers = workers
        self.chdir = chdir
        self.env = env
        self.expect_tracebacks = expect_tracebacks
        self.expect_exit = expect_exit  # a non-zero exit status after SIGTERM is fine
        self.cmd = cmd
        self.fast = fast
        self.logdir = pathlib.Path(logdir)

    def start(self, timeout=15):
        self.port = free_port()
        if self.cmd is None:
            cmd = [PY, "-m", "spindle", self.spec, "--bind", "127.0.0.1:%d" % self.port,
                   "--workers", str(self.workers)]
            if self.chdir is not None:
                cmd += ["--chdir", str(self.chdir)]
            cmd += (FAST if self.fast else []) + self.args
        else:
            cmd = [c.replace("{port}", str(self.port)) for c in self.cmd]
        tag = "%s-%d" % (re.sub(r"[^A-Za-z0-9]+", "_", self.spec)[:40], self.port)
        self.launch(cmd, self.logdir / ("wsgi-%s.stderr" % tag), self.logdir / ("wsgi-%s.stdout" % tag),
                    env=env_for(self.env), cwd=str(APPS))
        self.close_files()  # the server has them; stderr() reads the file
        try:
            self.wait_until(self._listening, timeout, error=AssertionError)
        except AssertionError as e:
            if not self.exited():
                self.stop()
                raise AssertionError("spindle WSGI server %r did not start listening:\n%s"
                                     % (cmd, self.stderr())) from e
            raise
        if self.workers:
            # the workers are forked after the master listens
            wait_for(lambda: len(children(self.pid)) >= self.workers or not self.alive(), 10)
        return self

    def _listening(self):
        return connect_probe(("127.0.0.1", self.port), 0.5)

    def worker_pids(self):
        return sorted(children(self.pid))

    def stop(self, timeout=8):
        """SIGTERM, then SIGKILL of the workers and the master; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            workers = children(self.pid)
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                for w in workers | children(self.pid):
                    try:
                        os.kill(w, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(5)
        return self.proc.returncode

    def problems(self):
        """Unexpected marks in stderr (a list of strings)."""
        err = self.stderr()
        if self.expect_tracebacks is True:
            marks = [m for m in BAD_MARKS if m not in EXPECTABLE]
        else:
            marks = list(BAD_MARKS)
        found = [m for m in marks if m in err]
        if found:
            return ["%s (%s): %s in stderr:\n%s" % (self.spec, " ".join(self.argv), found,
                                                   err[-6000:])]
        return []

    # ---- HTTP ----------------------------------------------------------

    def connect(self, timeout=10):
        return Conn(self.port, timeout)

    def get(self, path, headers=(), timeout=10, method="GET", body=None, version="1.1"):
        """One request on a fresh connection (Connection: close)."""
        with self.connect(timeout) as c:
            c.request(method, path, headers=list(headers) + [("Connection", "close")], body=body,
                      version=version)
            return c.response(head=(method == "HEAD"))

    def raw(self, data, timeout=10):
        """Sends data, returns everything until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(data)
            return read_until_close(s, timeout)


def read_until_close(s, timeout=10, limit=1 << 30):
    end = time.monotonic() + timeout
    chunks = []
    total = 0
    while time.monotonic() < end and total < limit:
        try:
            b = s.recv(1 << 16)
        except ConnectionResetError:
            break
        except socket.timeout:
            break
        if not b:
            break
        chunks.append(b)
        total += len(b)
    return b"".join(chunks)


class Response:
    def __init__(self, status, reason, headers, body, raw_head, version, complete=True):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value), as sent
        self.body = body
        self.raw_head = raw_head
        self.version = version
        self.complete = complete  # the body's framing was complete

    def header(self, name, default=None):
        for n, v in self.headers:
            if n.lower() == name.lower():
                return v
        return default

    def headers_all(self, name):
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def text(self):
        return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return "<Response %s %r %r body=%r>" % (self.status, self.reason, self.headers,
                                                 self.body[:300])


class Conn:
    """A client connection that can send several requests (keep-alive) and
    parse each response: Content-Length, chunked, or until close."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.timeout = timeout
        self.closed_by_peer = False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def request(self, method, path, headers=(), body=None, version="1.1", host=True):
        lines = ["%s %s HTTP/%s" % (method, path, version)]
        names = {n.lower() for n, _ in headers}
        if host and "host" not in names:
            lines.append("Host: 127.0.0.1")
        for n, v in headers:
            lines.append("%s: %s" % (n, v))
        if body is not None and "content-length" not in names and \
                "transfer-encoding" not in names:
            lines.append("Content-Length: %d" % len(body))
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if body:
            data += body
        self.sock.sendall(data)

    def _fill(self):
        try:
            b = self.sock.recv(1 << 16)
        except ConnectionResetError:
            b = b""
        if not b:
            self.closed_by_peer = True
            return False
        self.buf += b
        return True

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed mid-line: %r" % self.buf[:200])
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise EOFError("connection closed with %d of %d bytes" % (len(self.buf), n))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self, head=False, sink=None):
        """Reads one response. head: no body (HEAD). sink(bytes): receives the
        body in pieces instead of it being kept (for large bodies)."""
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise EOFError("connection closed before a response head: %r" % self.buf[:300])
        raw_head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = raw_head.split(b"\r\n")
        version, _, rest = lines[0].decode("latin-1").partition(" ")
        code, _, reason = rest.partition(" ")
        headers = []
        for ln in lines[1:]:
            n, _, v = ln.decode("latin-1").partition(":")
            headers.append((n, v.strip()))
        status = int(code)
        r = Response(status, reason, headers, b"", raw_head, version)
        pieces = []
        keep = sink or pieces.append
        te = (r.header("Transfer-Encoding") or "").lower()
        cl = r.header("Content-Length")
        if head or status in (204, 304) or 100 <= status < 200:
            pass
        elif "chunked" in te:
            r.complete = False
            try:
                while True:
                    size = int(self._line().split(b";")[0], 16)
                    if size == 0:
                        while self._line():
                            pass
                        r.complete = True
                        break
                    keep(self._exact(size))
                    if self._exact(2) != b"\r\n":
                        raise EOFError("bad chunk end")
            except EOFError:
                pass
        elif cl is not None:
            n = int(cl)
            while n:
                if not self.buf and not self._fill():
                    r.complete = False
                    break
                take = self.buf[:n]
                self.buf = self.buf[len(take):]
                n -= len(take)
                keep(take)
        else:
            while self._fill():
                if sink:
                    sink(self.buf)
                    self.buf = b""
            if not sink:
                keep(self.buf)
            self.buf = b""
        r.body = b"".join(pieces)
        return r


def reference_server(start, spec):
    """wsgiref.simple_server serving spec (the comparison for frameworks);
    start is the wsgi_server fixture."""
    return start(spec, workers=0, expect_exit=True, chdir=None,
                 cmd=[PY, str(APPS / "wsgiref_serve.py"), spec, "{port}"])


def sha256(b):
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def wsgi_server(tmp_path):
    """Starts servers: wsgi_server(spec, *flags, workers=1, expect_tracebacks=False, ...).
    At teardown every server is stopped by PID and its stderr checked."""
    servers = []

    def start(spec, *args, **kw):
        kw.setdefault("logdir", tmp_path)
        s = WsgiServer(spec, args, **kw)
        servers.append(s)
        s.start()
        return s

    yield start
    problems = []
    for s in servers:
        rc = s.stop()
        problems += s.problems()
        if rc not in (0, None) and not s.expect_exit:
            problems.append("%s exited with %s after SIGTERM:\n%s" % (s.spec, rc,
                                                                      s.stderr()[-3000:]))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def http_get(port, path, timeout=30):
    """One GET on a fresh connection: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def concurrent_get(port, paths, timeout=30, get=http_get):
    """GETs every path at once (a thread each, started together); returns
    (seconds, [get(port, path, timeout) or ("error", repr)])."""
    results = [None] * len(paths)
    go = threading.Event()

    def one(i, path):
        go.wait(10)
        try:
            results[i] = get(port, path, timeout)
        except Exception as e:  # reported by the caller's assert
            results[i] = ("error", repr(e))

    threads = [threading.Thread(target=one, args=(i, p), daemon=True) for i, p in enumerate(paths)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    go.set()
    for t in threads:
        t.join(timeout + 5)
    elapsed = time.monotonic() - t0
    assert not any(t.is_alive() for t in threads), "clients still waiting"
    return elapsed, results
