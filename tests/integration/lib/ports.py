"""ports.py — the one source of free TCP ports for servers the tests start
(proctools.free_port, and tests/suites/lib/preamble.sh's free_port through it).

A port from the kernel (bind to port 0, close) is racy: another process can
be handed the same one before our server binds it, and it lies in the
ephemeral range (ip_local_port_range, 32768-60999 here), where any client's
connect() may take it meanwhile. So ports come from fixed ranges below the
ephemeral one instead: each pytest-xdist worker (PYTEST_XDIST_WORKER=gwN) has
its own slice of WORKER_RANGE, everything else (plain pytest, the shell
suites) shares SOLO_RANGE. Within a range the ports are handed out in turn
through a cursor file under the temp directory, locked while it moves, so
processes that share a range (a suite's successive `free_port` calls, a
test's subprocesses, another checkout's run) never get the same port twice
in one lap; a port that fails a bind probe (someone holds it) is skipped."""

import fcntl
import os
import socket
import tempfile

SOLO_RANGE = (10000, 20000)
WORKER_RANGE = (20000, 32000)  # split evenly among PYTEST_XDIST_WORKER_COUNT workers


def port_range(env=None):
    """(first, end) of this process's ports and its name, from the xdist
    worker it runs in (inherited by the subprocesses it starts)."""
    env = os.environ if env is None else env
    worker = env.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return SOLO_RANGE[0], SOLO_RANGE[1], "solo"
    n = int(worker[2:])
    count = max(int(env.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0), n + 1)
    width = (WORKER_RANGE[1] - WORKER_RANGE[0]) // count
    first = WORKER_RANGE[0] + n * width
    return first, first + width, worker


def _bindable(host, port):
    """True if nothing holds host:port now (a plain bind, no SO_REUSEADDR:
    a port still in TIME_WAIT is skipped too)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _cursor_path(name):
    return os.path.join(tempfile.gettempdir(), "spindle-ports-%d-%s" % (os.getuid(), name))


def next_port(host="127.0.0.1", env=None):
    """The next port of this process's range that host can bind now."""
    first, end, name = port_range(env)
    fd = os.open(_cursor_path(name), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 32).strip()
        cur = int(raw) if raw.isdigit() else first
        for _ in range(end - first):
            if not first <= cur < end:
                cur = first
            port, cur = cur, cur + 1
            if _bindable(host, port):
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, b"%d\n" % cur)
                return port
        raise RuntimeError("no free port in %d-%d (%s)" % (first, end - 1, name))
    finally:
        os.close(fd)  # releases the lock
