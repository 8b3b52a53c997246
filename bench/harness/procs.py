"""Processes for the bench harness: free ports, a server started pinned to
CPUs and stopped by its own PID, readiness read from the kernel's socket
table (no probe connection), and the CPU time and memory of a process tree
read from /proc."""
import os
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """Is something LISTENing on PORT (IPv4 or IPv6)? Read from /proc, so the
    server sees no probe connection."""
    want = ":%04X" % port
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[1].endswith(want) and parts[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def tree(pid):
    """PID and all its descendants."""
    out = [pid]
    for c in children(pid):
        out += tree(c)
    return out


def ticks(pid):
    """utime+stime of one process, in clock ticks (0 if it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def tree_cpu_seconds(pid):
    return sum(ticks(p) for p in tree(pid)) / CLK_TCK


def tree_memory_kb(pid):
    """(RSS, PSS) in KiB summed over PID's process tree; PSS counts pages the
    processes share once."""
    rss = pss = 0
    for p in tree(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            pass
    return rss, pss


def cpu_times():
    """{cpu index: (busy ticks, total ticks)} from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:9]]
                total = sum(v)
                out[int(line.split()[0][3:])] = (total - v[3] - v[4], total)
    return out


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


class Server:
    """One server under test: a command started under `taskset -c CPUS` in
    its own session (a ^C to the harness does not reach it), logging to
    DIR/server.log, stopped by PID."""

    def __init__(self, name, argv, port, cpus, workdir, env=None, cwd=None, user=None):
        self.name, self.argv, self.port, self.cpus = name, argv, port, cpus
        self.user = user
        self.workdir, self.env, self.cwd = workdir, env, cwd or workdir
        self.log = os.path.join(workdir, "server.log")
        self.proc = None

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        env = dict(os.environ)
        env.update(self.env or {})
        with open(os.path.join(self.workdir, "cmd"), "w") as f:
            f.write(" ".join(self.argv) + "\n")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(["taskset", "-c", cpu_list(self.cpus)] + self.argv,
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.cwd, env=env, start_new_session=True,
                                         user=self.user)
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def wait_listening(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError("%s exited with status %s before listening:\n%s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            if listening(self.port):
                return
            time.sleep(0.05)
        raise RuntimeError("%s did not listen on port %d within %d s:\n%s"
                           % (self.name, self.port, timeout, self.log_tail()))

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """SIGTERM, then SIGKILL to every process of the tree (by PID) if it
        has not exited within TIMEOUT seconds."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pids = tree(self.proc.pid)
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            for p in reversed(pids):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait(5)
        # Orphaned workers (a master that died before its children).
        for p in pids[1:]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def redis_server(port, cpus, workdir, *extra):
    """A throwaway redis-server on 127.0.0.1:PORT, nothing kept on disk."""
    return Server("redis", ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", *extra], port, cpus, workdir)


def stop_all(servers):
    """TERM to every server at once, then wait for each (a gunicorn master
    takes seconds to stop its worker)."""
    for s in servers:
        if s.alive():
            try:
                os.kill(s.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for s in servers:
        s.stop()
