"""Process and HTTP helpers for the master/worker tests (test_workers.py,
test_signals.py, test_app_module.py).

Self-contained on purpose: it does not use conftest.py. A `WServer` (a
proctools.ServerProcess) is one spindle master started on a free 127.0.0.1
port in its own session (so a Ctrl-C can be simulated with killpg), with its
stderr in a file. Teardown
(`kill_all`) SIGKILLs the master by its PID and every worker found under it.
Every socket has a timeout; every wait is bounded.
"""
import errno
import os
import pathlib
import re
import signal
import socket
import subprocess

from proctools import ServerProcess, children, free_port, pid_alive, wait_for  # noqa: F401 (re-exported)

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPINDLE_BIN", "build/spindle")
if not os.path.isabs(BIN):
    BIN = str(ROOT / BIN)
BUILD = ROOT / "build"
APP_MODULE = str(BUILD / "examples" / "app_module.so")
APP_BLOCKING = str(BUILD / "tests" / "apps" / "app_blocking.so")
APP_WRONG_VERSION = str(BUILD / "tests" / "apps" / "app_wrong_version.so")

# Short timeouts everywhere; a test passes others when it needs them.
W_FAST = ["--header-timeout", "2", "--keepalive-timeout", "1", "--body-timeout", "2",
          "--send-timeout", "2", "--linger-timeout", "0.5", "--graceful-timeout", "5",
          "--worker-timeout", "2"]

SANITIZER_MARKS = ("AddressSanitizer", "runtime error", "LeakSanitizer",
                   "UndefinedBehaviorSanitizer")


def api_version():
    m = re.search(r"#define\s+SPINDLE_API_VERSION\s+(\d+)",
                  (ROOT / "include" / "spindle.h").read_text())
    return int(m.group(1))


class WServer(ServerProcess):
    """A running spindle master (and its workers): a proctools.ServerProcess."""

    name = "spindle"

    def __init__(self, flags, workdir, workers=2, fast=True):
        super().__init__(port=free_port())
        self.workers = workers
        args = ["--bind", "%s:%d" % (self.host, self.port)]
        if workers is not None:
            args += ["--workers", str(workers)]
        self.args = args + (W_FAST if fast else []) + list(flags)
        self.launch([BIN] + self.args, pathlib.Path(workdir) / ("spindle-%d.err" % self.port),
                    cwd=str(ROOT))
        self.seen_children = set()

    def children(self):
        c = children(self.pid)
        self.seen_children |= c
        return c

    def wait_ready(self, timeout=5.0, path="/"):
        """Until all workers run and one answers an HTTP request."""
        def ready():
            if self.workers is None or len(self.children()) >= max(self.workers, 0):
                r = http_get(self.addr, path, timeout=1.0)
                if r.status:
                    return r
            return None
        return self.wait_until(ready, timeout, step=0.03, errors=(OSError, HTTPError))

    def signal(self, sig):
        os.kill(self.pid, sig)

    def kill_all(self):
        """Teardown: SIGKILL the master by its PID and every worker seen under it."""
        kids = self.children() if self.proc.poll() is None else set()
        kids |= self.seen_children
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for k in kids:
            # Only our workers: a pid seen as our child that is still a spindle process.
            try:
                with open("/proc/%d/cmdline" % k, "rb") as f:
                    if not f.read().startswith(BIN.encode()):
                        continue
                with open("/proc/%d/stat" % k) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[2])
                if ppid not in (self.pid, 1) and not pid_alive(self.pid):
                    continue
                os.kill(k, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.close_files()

    def sanitizer_report(self):
        err = self.stderr()
        return any(m in err for m in SANITIZER_MARKS) and err


# ---- HTTP over raw sockets ---------------------------------------------------

class HTTPError(Exception):
    """A response that could not be read whole. kind: 'eof' (clean EOF before
    any byte of the response), 'reset' (ECONNRESET/EPIPE before any byte),
    'cut' (EOF or reset after part of the response), 'timeout', 'bad'."""

    def __init__(self, kind, detail="", got=b""):
        super().__init__("%s: %s (got %d bytes: %r)" % (kind, detail, len(got), got[:200]))
        self.kind = kind
        self.got = got


class Response:
    def __init__(self, status, headers, body, raw):
        self.status = status
        self.headers = headers  # list of (lower name, value)
        self.body = body
        self.raw = raw

    def header(self, name, default=None):
        for k, v in self.headers:
            if k == name.lower():
                return v
        return default

    @property
    def close(self):
        return "close" in (self.header("connection") or "").lower()

    def __repr__(self):
        return "<Response %s close=%s body=%r>" % (self.status, self.close, self.body[:80])


class Conn:
    """One client connection; reads whole responses (Content-Length or chunked)."""

    def __init__(self, addr, timeout=5.0):
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.responses = 0  # complete responses read on this connection
        self.sent = 0
        self.pid = None      # set by callers that learn which worker serves it

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        try:
            self.sock.sendall(data)
        except socket.timeout:
            raise HTTPError("timeout", "send")
        except (ConnectionResetError, BrokenPipeError) as e:
            raise HTTPError("reset", "send: %s" % e)
        self.sent += 1

    def _fill(self, got_so_far):
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            raise HTTPError("timeout", "recv", got_so_far)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise HTTPError("cut" if got_so_far else "reset", "recv: %s" % e, got_so_far)
        if not d:
            raise HTTPError("cut" if got_so_far else "eof", "EOF", got_so_far)
        self.buf += d

    def read_response(self, method="GET"):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > 65536:
                raise HTTPError("bad", "head too long", self.buf)
            self._fill(self.buf)
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise HTTPError("bad", "status line %r" % lines[0], self.buf)
        status = int(parts[1])
        headers = []
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers.append((k.strip().lower(), v.strip()))
        hd = dict(headers)
        raw_head = head + b"\r\n\r\n"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
            self.buf = rest
        elif "chunked" in hd.get("transfer-encoding", "").lower():
            body = b""
            self.buf = rest
            while True:
                while b"\r\n" not in self.buf:
                    self._fill(raw_head + body + self.buf)
                size_line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    while b"\r\n" not in self.buf:
                        self._fill(raw_head + body + self.buf)
                    # no trailers expected; skip to the final CRLF
                    while not self.buf.startswith(b"\r\n"):
                        _, self.buf = self.buf.split(b"\r\n", 1)
                        while b"\r\n" not in self.buf:
                            self._fill(raw_head + body + self.buf)
                    self.buf = self.buf[2:]
                    break
                while len(self.buf) < size + 2:
                    self._fill(raw_head + body + self.buf)
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
        elif "content-length" in hd:
            n = int(hd["content-length"])
            self.buf = rest
            while len(self.buf) < n:
                self._fill(raw_head + self.buf)
            body, self.buf = self.buf[:n], self.buf[n:]
        else:
            # until close
            self.buf = rest
            while True:
                try:
                    self._fill(raw_head + self.buf)
                except HTTPError as e:
                    if e.kind in ("cut", "eof") and "EOF" in str(e):
                        break
                    raise
            body, self.buf = self.buf, b""
        self.responses += 1
        return Response(status, headers, body, raw_head + body)

    def request(self, path, method="GET", body=None, close=False, host="x"):
        req = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, host)
        if close:
            req += "Connection: close\r\n"
        data = req.encode()
        if body is not None:
            data += b"Content-Length: %d\r\n\r\n" % len(body) + body
        else:
            data += b"\r\n"
        self.send(data)
        return self.read_response(method)

    def wait_eof(self, timeout=3.0):
        """'eof' for a clean close, 'reset', 'timeout', or 'data' if bytes came instead."""
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(1)
        except socket.timeout:
            return "timeout"
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        return "data" if d else "eof"


def http_get(addr, path, timeout=5.0):
    """One request on a new connection (Connection: close)."""
    with Conn(addr, timeout=timeout) as c:
        return c.request(path, close=True)


def is_refused(exc):
    return isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED


def w_spindle_factory(tmp_path):
    """Body of the w_spindle fixtures: yields start(*flags, workers=2, fast=True,
    ready=True, ready_path='/') and kills every server it started at teardown."""
    started = []

    def start(*flags, workers=2, fast=True, ready=True, ready_path="/"):
        s = WServer(flags, tmp_path, workers=workers, fast=fast)
        started.append(s)
        if ready:
            s.wait_ready(path=ready_path)
        return s

    yield start
    reports = []
    for s in started:
        s.kill_all()
        rep = s.sanitizer_report()
        if rep:
            reports.append(rep)
    assert not reports, "sanitizer report in spindle's stderr:\n" + "\n".join(reports)
