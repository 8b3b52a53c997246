"""Fault injection: a full disk under the access log (issue 11). Requests
keep being answered and the error log says the access log is failing, at
most about once a second. Two disks: /dev/full (every write is ENOSPC) and a
64 KiB tmpfs that fills up while the server runs (skipped if it cannot be
mounted: needs root).
"""
import os
import socket
import subprocess
import time

import pytest

from lib.faultutil import read_one


def _hammer(srv, seconds):
    """Keep-alive requests for `seconds`; returns how many got 200."""
    ok = 0
    end = time.monotonic() + seconds
    s = socket.create_connection(srv.addr, timeout=3)
    try:
        while time.monotonic() < end:
            for _ in range(50):
                s.sendall(b"GET /?pad=" + b"p" * 400 + b" HTTP/1.1\r\nHost: x\r\nUser-Agent: disk-test\r\n\r\n")
                st, body = read_one(s)
                assert st == 200 and body == b"Hello world!"
                ok += 1
            time.sleep(0.01)
    finally:
        s.close()
    return ok


def _log_failures(srv):
    return [ln for ln in srv.stderr().splitlines()
            if "access log" in ln.lower() and "suppressed" not in ln]


def _check(srv, seconds):
    t0 = time.monotonic()
    n = _hammer(srv, seconds)
    time.sleep(1.2)  # the access log is flushed at least once a second
    elapsed = time.monotonic() - t0
    assert n > 100
    assert srv.alive()
    lines = _log_failures(srv)
    assert lines, "the error log does not say the access log fails:\n" + srv.stderr()[-2000:]
    assert any("No space left" in ln for ln in lines), lines
    assert len(lines) <= elapsed + 2, "logged %d times in %.1f s:\n%s" % (len(lines), elapsed, "\n".join(lines))


def test_access_log_dev_full(spindle):
    srv = spindle("--access-log", "/dev/full")
    _check(srv, 3.0)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    d = tmp_path / "tiny"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a 64 KiB tmpfs (needs root): %s" % r.stderr.strip())
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_access_log_disk_fills_up(spindle, tiny_tmpfs):
    log = tiny_tmpfs / "access.log"
    # Most of the 64 KiB taken already; the log fills the rest within a second.
    with open(tiny_tmpfs / "ballast", "wb") as f:
        f.write(b"\0" * (48 << 10))
    srv = spindle("--access-log", str(log))
    _check(srv, 3.0)
    assert os.path.getsize(log) > 0  # it logged until the disk was full
