"""proctools.py — the process and port helpers every integration helper
module shares: the one free port (`free_port`), the one server launcher
(`ServerProcess`: start a server, wait until it answers, stop it by its PID),
readiness probes, a master's workers, stopping a process by its PID, whether
a pid lives, polling until a condition holds, /proc status fields.

Every server of the integration tests is a ServerProcess: server.Server
(spindle), procutil.WServer and opsutil.OpsServer (spindle masters),
wsgiutil.WsgiServer (python -m spindle), chatutil.ChatServer (the chat
example), sessutil.Redis (redis-server), and test_bench_pace's spindle.
tests/suites/lib/preamble.sh's free_port is this one too."""

import os
import pathlib
import signal
import socket
import subprocess
import time

from . import ports


def free_port(host="127.0.0.1"):
    """A TCP port free on host (127.0.0.1, or an IPv6 address such as ::1)
    now, from this process's own range (lib/ports.py: one per xdist worker,
    below the ephemeral ports, handed out in turn)."""
    return ports.next_port(host)


def connect_bind(bind, timeout):
    """A connected socket to a --bind value: HOST:PORT, [V6]:PORT or unix:PATH."""
    if bind.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(bind[5:])
        except OSError:
            s.close()
            raise
        return s
    host, _, port = bind.rpartition(":")
    return socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)


def http_probe(bind, path="/", expect=b"HTTP/1.", timeout=1.0):
    """True if a whole GET of path on a new connection to bind (see
    connect_bind) gets an answer starting with expect; OSError if it cannot
    connect. A whole request, not just a connect: a master may hold the
    listening socket before any worker serves it."""
    with connect_bind(bind, timeout) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: ready\r\nConnection: close\r\n\r\n" % path.encode())
        return s.recv(16).startswith(expect)


def connect_probe(addr, timeout=0.5):
    """True if a TCP connection to addr (host, port) is accepted."""
    with socket.create_connection(addr, timeout=timeout):
        return True


class ServerProcess:
    """One server process: started by Popen (stdin from /dev/null, stdout and
    stderr to files or /dev/null, in its own session unless told otherwise),
    waited for until a probe says it answers (`wait_until`), and stopped by
    its own PID (`stop`: SIGTERM, then SIGKILL). Subclasses add what their
    server needs (its flags, its workers, its own teardown).

    argv may be given later (`launch`), for a subclass that picks its port
    when it starts."""

    name = "server"  # names the server in errors

    def __init__(self, argv=None, stderr_path=None, stdout_path=None, host="127.0.0.1", port=None,
                 **popen):
        self.host = host
        self.port = port
        self.proc = None
        self.argv = None
        self.stderr_path = self.stdout_path = None
        self._files = []
        if argv is not None:
            self.launch(argv, stderr_path, stdout_path, **popen)

    def launch(self, argv, stderr_path=None, stdout_path=None, env=None, cwd=None, new_session=True,
               preexec_fn=None, merge_stderr=False):
        """Starts argv; stderr (and stdout) go to the files given, else to
        /dev/null; merge_stderr sends stderr to stdout's file."""
        self.argv = list(argv)
        self.stderr_path = pathlib.Path(stderr_path) if stderr_path else None
        self.stdout_path = pathlib.Path(stdout_path) if stdout_path else None
        out = self._open(self.stdout_path)
        err = subprocess.STDOUT if merge_stderr else self._open(self.stderr_path)
        if merge_stderr:
            self.stderr_path = self.stdout_path
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                     env=env, cwd=cwd, start_new_session=new_session,
                                     preexec_fn=preexec_fn)
        return self

    def _open(self, path):
        if path is None:
            return subprocess.DEVNULL
        f = open(path, "wb")
        self._files.append(f)
        return f

    @property
    def pid(self):
        return self.proc.pid

    @property
    def addr(self):
        return (self.host, self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def exited(self):
        """Whether the server has gone (wait_until then fails at once)."""
        return self.proc.poll() is not None

    def _read(self, path):
        try:
            return path.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def stderr(self):
        return self._read(self.stderr_path)

    def stdout(self):
        return self._read(self.stdout_path)

    def wait_exit(self, timeout):
        """The exit status, or None if it still runs after timeout."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_until(self, probe, timeout, step=0.02, errors=(OSError,), error=RuntimeError):
        """Polls probe() (errors count as "not yet") until it returns a true
        value, which it returns. Raises error if the server exits first or
        timeout passes."""
        end = time.monotonic() + timeout
        last = None
        while True:
            if self.exited():
                raise error("%s exited with %s:\n%s" % (self.name, self.proc.returncode, self.stderr()))
            try:
                v = probe()
                if v:
                    return v
            except errors as e:
                last = e
            if time.monotonic() > end:
                raise error("%s not ready within %ss: %r\n%s" % (self.name, timeout, last, self.stderr()))
            time.sleep(step)

    def stop(self, grace=3, after_kill=5, group=False):
        """SIGTERM by PID, SIGKILL after grace seconds; group: then SIGKILL
        whatever is left in its session (its own process group)."""
        if self.proc is not None:
            stop_process(self.proc, grace, after_kill)
            if group:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
        self.close_files()

    def close_files(self):
        for f in self._files:
            f.close()
        self._files = []


def start_on_free_port(make, ready, discard, retry=True, attempts=3):
    """make() -> a started server on a free_port(); ready(srv) waits for it
    (RuntimeError if it does not come up), or None not to wait. Another
    process can take a free port between the probe and the server's bind:
    then (its stderr says "in use") discard(srv) and start another, up to
    attempts times; retry=False (a port the caller chose) never retries."""
    for attempt in range(attempts):
        srv = make()
        if ready is None:
            return srv
        try:
            ready(srv)
            return srv
        except RuntimeError:
            if not retry or attempt == attempts - 1 or "in use" not in srv.stderr():
                raise
            discard(srv)


def children(pid):
    """The direct children of pid (a master's workers), from /proc."""
    out = set()
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                    out.update(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def stop_process(proc, grace=3, after_kill=5):
    """SIGTERM to PROC (a Popen) by its PID; SIGKILL if it has not exited
    within GRACE seconds."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(after_kill)


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(pred, timeout, step=0.02):
    """Poll pred() until it returns a true value or timeout passes; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def proc_status(pid, field):
    """A /proc/PID/status field in kB (VmRSS, VmHWM), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def fd_count(pid):
    """Open file descriptors of pid, or -1."""
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1
