"""Helpers for the operations tests (test_ops_*.py): reload, binary upgrade,
worker count, socket activation, sd_notify, access log, stats, config.

An `OpsServer` (a proctools.ServerProcess) is one spindle master started on 127.0.0.1 (a free port
unless told otherwise) in its own session, with its own environment and
stderr in a file. It remembers every master it has seen (the original, and
after a USR2 upgrade the new one found through the pid file or the
master's children) and every worker under them; teardown (`kill_all`)
SIGKILLs each of them by PID, then the original process group (the new
master of an upgrade stays in it), before the original master is reaped.
Every wait is bounded, every socket has a timeout.

HTTP over raw sockets is lib/client.py's Conn (procutil.http_get: one GET).
"""
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

from lib.client import Conn, HTTPError

from lib.procutil import BIN, ROOT, children, free_port, http_get, pid_alive, wait_for
from lib.proctools import ServerProcess, start_on_free_port

SANITIZER_MARKS = ("AddressSanitizer", "runtime error", "LeakSanitizer",
                   "UndefinedBehaviorSanitizer")
PYTHON = sys.executable
LAUNCHER = str(pathlib.Path(__file__).resolve().parent / "socket_launcher.py")

# Short timeouts; a test that measures one of them passes its own.
OPS_FAST = ["--header-timeout", "2", "--body-timeout", "2", "--send-timeout", "2",
            "--linger-timeout", "0.5", "--graceful-timeout", "3", "--worker-timeout", "5"]

__all__ = ["BIN", "ROOT", "children", "free_port", "http_get", "pid_alive",
           "wait_for", "OpsServer", "ops_factory", "Load", "Notify", "listening_inodes",
           "tcp_listen_ports", "read_pid", "PYTHON", "LAUNCHER", "OPS_FAST", "run_spindle",
           "ops_spindle"]


def read_pid(path):
    try:
        return int(pathlib.Path(path).read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _is_spindle(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return argv0 == BIN.encode() or argv0.endswith(b"/spindle")


def _socket_inodes(pid):
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            m = re.match(r"socket:\[(\d+)\]", t)
            if m:
                out.add(int(m.group(1)))
    except OSError:
        pass
    return out


def _tcp_listeners():
    """{inode: (ip hex, port)} of every listening TCP socket (IPv4 and IPv6)."""
    out = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = pathlib.Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) < 10 or f[3] != "0A":
                continue
            ip, port = f[1].rsplit(":", 1)
            out[int(f[9])] = (ip, int(port, 16))
    return out


def listening_inodes(pid, port=None):
    """Inodes of the listening TCP sockets that pid holds (on port, if given)."""
    lst = _tcp_listeners()
    return {i for i in _socket_inodes(pid) if i in lst and (port is None or lst[i][1] == port)}


def tcp_listen_ports(pid):
    lst = _tcp_listeners()
    return {lst[i][1] for i in _socket_inodes(pid) if i in lst}


def run_spindle(args, env=None, timeout=10, cwd=None):
    """Runs spindle to completion (e.g. --print-config); returns CompletedProcess (text)."""
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("SPINDLE_") and k != "SPINDLE_BIN" and k != "SPINDLE_ROOT":
            del e[k]
    e.update(env or {})
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=cwd or str(ROOT), stdin=subprocess.DEVNULL)


class OpsServer(ServerProcess):
    """A running spindle master started directly (or through argv_prefix, e.g.
    the socket launcher, which execs spindle keeping its own pid): a
    proctools.ServerProcess."""

    name = "spindle"

    def __init__(self, flags, workdir, workers=2, env=None, bind=True, port=None, fast=True,
                 argv_prefix=(), name=None):
        super().__init__(port=port or free_port())
        self.workers = workers
        args = []
        if bind:
            args += ["--bind", "%s:%d" % (self.host, self.port)]
        if workers is not None:
            args += ["--workers", str(workers)]
        self.args = args + (OPS_FAST if fast else []) + list(flags)
        tag = name or str(self.port)
        e = dict(os.environ)
        for k in list(e):  # the caller's SPINDLE_* must not leak into the server's settings
            if k.startswith("SPINDLE_") or k in ("LISTEN_PID", "LISTEN_FDS", "NOTIFY_SOCKET"):
                del e[k]
        if os.environ.get("SPINDLE_IO_BACKEND"):  # but make test's epoll pass does
            e["SPINDLE_IO_BACKEND"] = os.environ["SPINDLE_IO_BACKEND"]
        e.update(env or {})
        self.launch(list(argv_prefix) + [BIN] + self.args,
                    pathlib.Path(workdir) / ("spindle-%s.err" % tag),
                    pathlib.Path(workdir) / ("spindle-%s.out" % tag), env=e, cwd=str(ROOT))
        self.master = self.pid          # the current master (changes after USR2); self.pid,
        self.pid_file = None            # the original master, is the group id
        self.masters = {self.pid}
        self.seen = set()               # every worker seen under any master

    # ---- processes ---------------------------------------------------------

    def children(self, master=None):
        c = children(master or self.master)
        self.seen |= c
        return c

    def workers_now(self, master=None):
        """Live spindle worker processes of the (current) master."""
        m = master or self.master
        out = set()
        for k in self.children(m):
            if pid_alive(k) and _is_spindle(k) and k not in self.masters:
                out.add(k)
        return out

    def note_master(self, pid):
        if pid:
            self.masters.add(pid)
            self.master = pid

    def signal(self, sig, pid=None):
        os.kill(pid or self.master, sig)

    def exited(self):
        # After a USR2 upgrade the original master exits and the new one serves.
        return self.proc.poll() is not None and self.master == self.pid

    def wait_ready(self, timeout=6.0, workers=None):
        """Until the wanted number of workers run and one answers a request."""
        want = self.workers if workers is None else workers

        def ready():
            if not want or len(self.workers_now()) >= want:
                r = http_get(self.addr, "/", timeout=1.0)
                if r.status:
                    return r
            return None
        return self.wait_until(ready, timeout, step=0.03, errors=(OSError, HTTPError))

    def kill_all(self):
        self.final_stderr = self.stderr()  # before any kill makes a master log a death
        pids = set(self.masters)
        if self.pid_file:
            for p in (read_pid(self.pid_file), read_pid(str(self.pid_file) + ".oldbin")):
                if p and _is_spindle(p):
                    pids.add(p)
        for m in list(pids):
            pids |= children(m)
        pids |= self.seen
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        # Masters first (so none logs its workers' deaths), then the workers;
        # only our own spindle processes (a pid may have been reused).
        for p in sorted(pids - {self.pid}, key=lambda p: p not in self.masters):
            if _is_spindle(p) and pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        try:
            # Before reaping the original master: its pid (the group id) stays ours.
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.close_files()

    def problems(self, allow_worker_deaths=False):
        err = getattr(self, "final_stderr", None) or self.stderr()
        out = []
        if any(m in err for m in SANITIZER_MARKS):
            out.append("sanitizer report:\n" + err[-6000:])
        if not allow_worker_deaths and re.search(r"worker \d+ (was killed|exited with status [1-9])", err):
            out.append("a worker died:\n" + err[-3000:])
        return out


def ops_factory(tmp_path):
    """Generator body for fixtures: yields start(*flags, workers=2, env=None,
    ready=True, ...) and kills every server it started at teardown."""
    started = []

    def start(*flags, workers=2, env=None, ready=True, allow_worker_deaths=False, **kw):
        def make():
            s = OpsServer(flags, tmp_path, workers=workers, env=env, **kw)
            s.allow_worker_deaths = allow_worker_deaths
            started.append(s)
            return s

        def discard(s):
            s.kill_all()
            started.remove(s)
        return start_on_free_port(make, OpsServer.wait_ready if ready else None, discard,
                                  retry=not kw.get("port"))

    yield start
    reports = []
    for s in started:
        s.kill_all()
        reports += s.problems(s.allow_worker_deaths)
    if reports:
        pytest.fail("\n\n".join(reports), pytrace=False)


# ---- clients ---------------------------------------------------------------

class Load:
    """Background clients, each in a thread, until stop():

    - `keepalive` clients: one GET every `interval` s on the same connection;
      they reconnect only after a complete response that said
      `Connection: close` followed by a clean EOF.
    - `fresh` clients: a new connection per request (Connection: close),
      every `interval` s: any refused connection is a failure.

    Every request must get a complete 200 with the expected body; anything
    else (reset, refused, cut, timeout, other status) is recorded in .failures.
    """

    def __init__(self, addr, keepalive=4, fresh=0, interval=0.3, path="/", body=b"Hello world!"):
        self.addr = addr
        self.interval = interval
        self.path = path
        self.body = body
        self.failures = []
        self.ok = 0
        self.closes = 0   # Connection: close answers seen by keep-alive clients
        self.pids = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._keepalive, args=(i,), daemon=True)
                        for i in range(keepalive)]
        self.threads += [threading.Thread(target=self._fresh, args=(i,), daemon=True)
                         for i in range(fresh)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self, timeout=10):
        self._stop.set()
        for t in self.threads:
            t.join(timeout)
        alive = [t for t in self.threads if t.is_alive()]
        assert not alive, "load threads did not stop"

    def _fail(self, what):
        with self._lock:
            self.failures.append("%.3f %s" % (time.monotonic(), what))

    def _check(self, r, who):
        if r.status != 200 or r.body != self.body:
            self._fail("%s: got %r" % (who, r))
            return False
        with self._lock:
            self.ok += 1
        return True

    def _keepalive(self, i):
        who = "keep-alive client %d" % i
        c = None
        # Staggered, so they do not all send at the same instant.
        self._stop.wait(self.interval * i / max(1, len(self.threads)))
        while not self._stop.is_set():
            try:
                if c is None:
                    c = Conn(self.addr, timeout=5.0)
                r = c.exchange(self.path)
                self._check(r, who)
                if r.connection_close():
                    with self._lock:
                        self.closes += 1
                    how = c.wait_eof(3.0)
                    if how != "eof":
                        self._fail("%s: after Connection: close, %s instead of a clean EOF" % (who, how))
                    c.close()
                    c = None
            except (OSError, HTTPError) as ex:
                self._fail("%s: request %d on its connection: %r" % (who, c.responses if c else 0, ex))
                if c:
                    c.close()
                c = None
            self._stop.wait(self.interval)
        if c:
            c.close()

    def _fresh(self, i):
        who = "new-connection client %d" % i
        while not self._stop.is_set():
            try:
                r = http_get(self.addr, self.path, timeout=5.0)
                self._check(r, who)
            except (OSError, HTTPError) as ex:
                self._fail("%s: %r" % (who, ex))
            self._stop.wait(self.interval)


class Notify:
    """A unix datagram socket standing in for systemd's $NOTIFY_SOCKET.
    path: a filesystem path, or '@name' for the abstract namespace."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + path[1:] if path.startswith("@") else path)
        self.messages = []

    def drain(self, timeout=0.0):
        """Reads what has arrived (waiting up to timeout for the first one)."""
        self.sock.settimeout(timeout if timeout > 0 else 0.001)
        got = []
        while True:
            try:
                d = self.sock.recv(4096)
            except (socket.timeout, BlockingIOError):
                break
            got.append(d.decode())
            self.sock.settimeout(0.001)
        self.messages += got
        return got

    def wait_for(self, pred, timeout, since=0):
        """Until a message at index >= since satisfies pred; returns its
        index (or None)."""
        end = time.monotonic() + timeout
        seen = since
        while True:
            for i in range(seen, len(self.messages)):
                if pred(self.messages[i]):
                    return i
            seen = max(seen, len(self.messages))
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.drain(min(left, 0.2))

    def close(self):
        self.sock.close()
        if not self.path.startswith("@"):
            try:
                os.unlink(self.path)
            except OSError:
                pass


@pytest.fixture
def ops_spindle(tmp_path):
    """Factory fixture: ops_spindle(*flags, workers=2, env=None, ready=True,
    bind=True, port=None, fast=True, argv_prefix=(), allow_worker_deaths=False)."""
    yield from ops_factory(tmp_path)
