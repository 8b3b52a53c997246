"""proctools.py — the process and port helpers every integration helper
module shares: a free 127.0.0.1 port, a master's workers, stopping a
process by its PID, whether a pid lives, polling until a condition holds,
/proc status fields."""

import os
import signal
import socket
import subprocess
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
