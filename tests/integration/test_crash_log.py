"""A worker that dies keeps its access-log lines, and --stats counts the
restart by cause: the lines a worker formatted before a SIGKILL, a segfault,
an abort, a non-zero exit or the watchdog's kill reach the log (the master
writes what the dead worker left in its shared buffer), each exactly once;
a worker that stops cleanly (--max-requests, --max-worker-memory) flushes
them itself and nothing is written twice; and
spindle_worker_restarts_total{cause=...} is the same on every worker's page.

The ops fixture (not conftest's `spindle`), because its teardown can allow
the worker deaths these tests cause on purpose."""
import os
import re
import signal
import time

import pytest

from lib.client import Conn

from lib.opsutil import BIN, ROOT, http_get, ops_spindle, wait_for  # noqa: F401

APP_CRASH = str(ROOT / "build" / "tests" / "fixtures" / "c" / "app_crash.so")
N = 40
ASAN = "asan" in BIN  # ASan reports a segfault itself: that run skips it
CAUSES = ("crashed", "exited", "recycled", "watchdog", "memory")


def start(ops_spindle, tmp_path, *flags, workers=1):
    log = tmp_path / "access.log"
    srv = ops_spindle("--app", APP_CRASH, "--access-log", str(log), "--access-log-format", "%r %s %p",
                      "--stats", "/metrics", "--keepalive-timeout", "10", *flags, workers=workers,
                      allow_worker_deaths=True)
    return srv, log


def serve_n(srv, tag, n=N):
    """n requests on one keep-alive connection; the connection (still open)
    and the pid of the worker that answered them all."""
    c = Conn(srv.addr, timeout=5)
    pids = set()
    for i in range(n):
        r = c.exchange("/pid?%s=%d" % (tag, i))
        assert r.status == 200, r
        pids.add(int(r.body))
    assert len(pids) == 1, pids
    return c, pids.pop()


def logged(log, tag):
    """The indexes of the tag's lines in the log, in order, repeats kept."""
    try:
        text = log.read_text()
    except FileNotFoundError:
        return []
    return [int(m.group(1)) for m in re.finditer(r"^GET /pid\?%s=(\d+) HTTP/1\.1 200 \d+$" % tag, text, re.M)]


def wait_lines(log, tag, n=N, timeout=5.0):
    got = wait_for(lambda: len(logged(log, tag)) >= n and logged(log, tag), timeout, step=0.05)
    return got or logged(log, tag)


def restarts(srv):
    """spindle_worker_restarts_total by cause, from one scrape."""
    r = http_get(srv.addr, "/metrics")
    assert r.status == 200, r
    out = {}
    for m in re.finditer(r'^spindle_worker_restarts_total\{cause="(\w+)"\} (\d+)$', r.body.decode(), re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def wait_restarted(srv, old, cause, timeout=8.0):
    """Until a worker other than old serves and the page counts one restart
    of cause (and none of another)."""
    def seen():
        if not (srv.workers_now() - {old}) or old in srv.workers_now():
            return None
        try:
            got = restarts(srv)
        except OSError:
            return None
        return got if got.get(cause) == 1 else None
    got = wait_for(seen, timeout, step=0.05)
    assert got, "no restart counted as %s; page says %s\n%s" % (cause, restarts(srv), srv.stderr())
    assert sorted(got) == sorted(CAUSES), got
    assert all(v == 0 for k, v in got.items() if k != cause), got
    return got


def test_stats_page_lists_every_restart_cause(ops_spindle, tmp_path):
    srv, _ = start(ops_spindle, tmp_path)
    r = http_get(srv.addr, "/metrics")
    body = r.body.decode()
    assert "# TYPE spindle_worker_restarts_total counter" in body, body
    assert restarts(srv) == {c: 0 for c in CAUSES}


def test_sigkill_loses_no_line_and_any_worker_counts_it(ops_spindle, tmp_path):
    srv, log = start(ops_spindle, tmp_path, workers=2)
    c, victim = serve_n(srv, "k")
    # One more request on the connection: the N lines are then written (a
    # line is formatted after its answer is sent, so a kill right after the
    # last answer could beat the last line, which no server can keep).
    assert c.exchange("/pid?sync=1").status == 200
    os.kill(victim, signal.SIGKILL)  # well inside the second before its flush
    c.close()
    got = wait_lines(log, "k")
    assert got == list(range(N)), "lines lost or doubled by the SIGKILL: %s\n%s" % (got, srv.stderr())
    wait_restarted(srv, victim, "crashed")
    assert re.search(r"worker %d was killed by signal 9" % victim, srv.stderr()), srv.stderr()
    # Both workers read the master's counters: every answer says 1.
    for _ in range(12):
        assert restarts(srv)["crashed"] == 1


@pytest.mark.parametrize("how,cause,mark", [
    ("segv", "crashed", "was killed by signal 11"),
    ("abort", "crashed", "was killed by signal 6"),
    ("exit", "exited", "exited with status 7"),
])
def test_a_request_that_kills_its_worker_loses_no_line(ops_spindle, tmp_path, how, cause, mark):
    if how == "segv" and ASAN:
        pytest.skip("AddressSanitizer reports the segfault as an error of its own")
    srv, log = start(ops_spindle, tmp_path)
    c, victim = serve_n(srv, how)
    c.send(b"GET /crash?how=" + how.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(Exception):
        c.read_response()
    c.close()
    got = wait_lines(log, how)
    assert got == list(range(N)), "lines lost or doubled: %s\n%s" % (got, srv.stderr())
    wait_restarted(srv, victim, cause)
    assert re.search(r"worker %d %s" % (victim, mark), srv.stderr()), srv.stderr()


def test_the_watchdogs_kill_loses_no_line(ops_spindle, tmp_path):
    srv, log = start(ops_spindle, tmp_path, "--worker-timeout", "1")
    c, victim = serve_n(srv, "w")
    c.send(b"GET /block?s=10 HTTP/1.1\r\nHost: x\r\n\r\n")
    got = wait_lines(log, "w", timeout=6)
    c.close()
    assert got == list(range(N)), "lines lost or doubled: %s\n%s" % (got, srv.stderr())
    wait_restarted(srv, victim, "watchdog")


def test_recycled_worker_writes_each_line_once(ops_spindle, tmp_path):
    srv, log = start(ops_spindle, tmp_path, "--max-requests", "30")
    c = Conn(srv.addr, timeout=5)
    first = int(c.exchange("/pid").body)
    for i in range(N):  # the worker stops after its 30th; the rest go to the next one
        try:
            r = c.exchange("/pid?r=%d" % i)
        except Exception:
            c.close()
            c = Conn(srv.addr, timeout=5)
            r = c.exchange("/pid?r=%d" % i)
        assert r.status == 200, r
        if r.header("connection") == "close":
            c.close()
            c = Conn(srv.addr, timeout=5)
    c.close()
    wait_restarted(srv, first, "recycled")
    srv.signal(signal.SIGTERM)  # the second worker flushes at its exit
    srv.proc.wait(10)
    got = logged(log, "r")
    assert got == list(range(N)), "lines lost or doubled: %s\n%s" % (got, srv.stderr())


def test_memory_recycling_is_counted_as_memory(ops_spindle, tmp_path):
    srv, log = start(ops_spindle, tmp_path, "--max-worker-memory", "40m")
    c, victim = serve_n(srv, "m", n=10)
    r = c.exchange("/grow?mb=64")
    assert r.status == 200, r
    c.close()
    wait_restarted(srv, victim, "memory")
    got = wait_lines(log, "m", n=10)
    assert got == list(range(10)), "lines lost or doubled: %s\n%s" % (got, srv.stderr())
