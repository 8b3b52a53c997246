"""Process and HTTP helpers for the master/worker tests (test_workers.py,
test_signals.py, test_app_module.py).

Self-contained on purpose: it does not use lib.server. A `WServer` (a
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
import subprocess

from lib.client import Conn, HTTPError
from lib.proctools import ServerProcess, children, free_port, pid_alive, wait_for  # noqa: F401 (re-exported)

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = os.environ.get("SPINDLE_BIN", "build/spindle")
if not os.path.isabs(BIN):
    BIN = str(ROOT / BIN)
BUILD = ROOT / "build"
APP_MODULE = str(BUILD / "examples" / "app_module.so")
APP_BLOCKING = str(BUILD / "tests" / "fixtures" / "c" / "app_blocking.so")
APP_WRONG_VERSION = str(BUILD / "tests" / "fixtures" / "c" / "app_wrong_version.so")

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


def http_get(addr, path, timeout=5.0):
    """One request on a new connection (Connection: close)."""
    with Conn(addr, timeout=timeout) as c:
        return c.exchange(path, close=True)


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
