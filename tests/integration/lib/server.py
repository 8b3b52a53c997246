"""The spindle binary under test and one running instance of it: where it is
(BIN, $SPINDLE_BIN), the short timeouts and process flags the tests run it
with, `Server` (a proctools.ServerProcess in its own session, stopped by its
PID) and `stop_servers`, which reports sanitizer marks or a crash. The
`spindle` and `server` fixtures (conftest.py) are built on it."""
import os
import pathlib
import resource
import subprocess
import time

from lib.client import Conn
from lib.proctools import ServerProcess, children, fd_count, http_probe, proc_status

ROOT = pathlib.Path(os.environ.get("SPINDLE_ROOT") or pathlib.Path(__file__).resolve().parents[3])
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
        return Conn(self.addr, timeout)

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


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]



HELLO = b"Hello world!"  # what the default handler answers
