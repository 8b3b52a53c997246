"""Helpers for the WSGI binding's tests (tests/integration/test_wsgi_*.py).

Self-contained: not lib.server. A `WsgiServer` (a proctools.ServerProcess) is one
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

from lib.client import Conn, read_until_close
from lib.proctools import ServerProcess, children, connect_probe, free_port, proc_status, wait_for  # noqa: F401

ROOT = pathlib.Path(__file__).resolve().parents[3]
# The servers run on the interpreter that runs the tests: build/venv's (make
# test's main pass), or Debian's /usr/bin/python3 (its smoke pass), each with
# the binding built for it (make python, make python-system).
PY = sys.executable
APPS = ROOT / "tests" / "fixtures" / "wsgi"


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
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in tests/fixtures/wsgi
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
            # A master that says it is stopping or stopped (the test sent its
            # own SIGTERM) is on its way out, and once in Python's
            # finalization SIGTERM is back to its default: another one would
            # kill it (-15) instead of letting it exit with its status. Just
            # wait for it.
            err = self.stderr()
            stopped = ("master %d stopped" % self.pid in err
                       or "[%d] info: graceful stop" % self.pid in err)
            try:
                if not stopped:
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
