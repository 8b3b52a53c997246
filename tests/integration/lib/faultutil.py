"""Helpers for the fault-injection tests (test_faults_*.py).

`launch` starts lib.server's Server with an environment and a preexec
function of our choosing (LD_PRELOAD shims, rlimits) and registers it with
a list the test's finalizer stops.
`build_failmalloc` compiles tests/fault/failmalloc.c once per session.
"""
import os
import pathlib
import socket
import struct
import subprocess
import time

from lib.client import Conn
from lib.proctools import fd_count, free_port  # noqa: F401 (fd_count: re-exported)
from lib.server import BIN, FAST, PROCESS_FLAGS, ROOT, SANITIZER_MARKS, Server, stop_servers


def launch(tmp_path, servers, *flags, env=None, preexec_fn=None, workers=None, fast=True):
    """Starts spindle on a free port; workers=None keeps PROCESS_FLAGS' choice."""
    port = free_port()
    bind = "127.0.0.1:%d" % port
    pflags = list(PROCESS_FLAGS)
    if workers is not None and "--workers" in pflags:
        i = pflags.index("--workers")
        pflags[i + 1] = str(workers)
    args = ["--bind", bind] + pflags + (FAST if fast else []) + list(flags)
    full_env = dict(os.environ)
    full_env.update(env or {})
    srv = Server(args, str(tmp_path / ("fault-%d.err" % len(servers))), [bind], port,
                      env=full_env, preexec_fn=preexec_fn)
    servers.append(srv)
    srv.wait_ready(10)
    return srv


def stop_all(servers):
    """Stops every server; returns the problems found (crash, own exit)."""
    return stop_servers(servers)


def check_clean(srv):
    """No sanitizer report or worker death in the server's stderr."""
    err = srv.stderr()
    bad = [m for m in SANITIZER_MARKS if m in err]
    assert not bad, "crash or sanitizer report %s:\n%s" % (bad, err[-4000:])


def wait_fds(pid, want, timeout=5.0):
    """Waits until pid has at most `want` fds; returns the last count."""
    end = time.monotonic() + timeout
    n = fd_count(pid)
    while n > want and time.monotonic() < end:
        time.sleep(0.05)
        n = fd_count(pid)
    return n


def read_one(s):
    """Reads one response from socket s (lib.client's reader): (status, body);
    raises OSError or EOFError if it does not come whole."""
    r = Conn(s, timeout=None).read_response()
    return r.status, r.body


def reset_close(s):
    """Closes with SO_LINGER 0: the peer gets a RST, not a FIN."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


_FAILMALLOC = None


def build_failmalloc(out_dir):
    global _FAILMALLOC
    if _FAILMALLOC and os.path.exists(_FAILMALLOC):
        return _FAILMALLOC
    so = str(pathlib.Path(out_dir) / "failmalloc.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wall", "-o", so,
                    str(ROOT / "tests/fault/failmalloc.c")], check=True)
    _FAILMALLOC = so
    return so


class FailCtl:
    """The shared control file of failmalloc.so (see its header)."""

    def __init__(self, path):
        self.path = str(path)
        with open(self.path, "wb") as f:
            f.write(b"\0" * 4096)

    def set(self, every, mmap_too=True):
        with open(self.path, "r+b") as f:
            f.seek(4)
            f.write(struct.pack("i", 1 if mmap_too else 0))
            f.seek(0)
            f.write(struct.pack("i", every))

    def counts(self):
        with open(self.path, "rb") as f:
            data = f.read(24)
        _, _, calls, failed = struct.unpack("iiQQ", data)
        return calls, failed
