"""Fault injection: file descriptor exhaustion (issue 11).

The worker runs with a small RLIMIT_NOFILE. --max-connections is clamped to
the limit less 32 (server_start), so with a plain `ulimit -n 64` accept
would never reach EMFILE; the test lowers the running worker's limit a
little above the fds it holds (prlimit), as a handler that opens files or
outbound sockets would eat them, so accept does hit EMFILE. Then: the
connections already open keep being served, new clients wait in the backlog,
the error log says so at most about once a second, and once clients close
the server accepts again (the waiting ones included).
"""
import resource
import re
import socket
import time

import pytest

from lib.faultutil import fd_count, launch, read_one, stop_all


@pytest.fixture
def servers():
    lst = []
    yield lst
    problems = stop_all(lst)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def _low_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def _req(s, close=False):
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n%s\r\n" % (b"Connection: close\r\n" if close else b""))
    return read_one(s)


def test_fd_exhaustion_pauses_accept_and_recovers(tmp_path, servers):
    srv = launch(tmp_path, servers, "--max-connections", "1000", "--keepalive-timeout", "30",
                 "--header-timeout", "30", preexec_fn=_low_nofile, fast=False)
    err = srv.stderr()
    assert "--max-connections 1000 is more than the open-files limit allows" in err, err
    worker = srv.serving_pids()[0]

    # Five keep-alive clients, served.
    old = []
    for _ in range(5):
        s = socket.create_connection(srv.addr, timeout=3)
        assert _req(s)[0] == 200
        old.append(s)
    time.sleep(0.2)
    base = fd_count(worker)
    assert base > 0
    # Room for three more connections, then EMFILE.
    limit = base + 3
    resource.prlimit(worker, resource.RLIMIT_NOFILE, (limit, 64))

    new = []
    try:
        for _ in range(20):
            s = socket.create_connection(srv.addr, timeout=3)  # the backlog takes it
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            new.append(s)
        t0 = time.monotonic()
        served = []
        waiting = []
        for s in new:
            s.settimeout(0.3)
            try:
                served.append((s, read_one(s)[0]))
            except socket.timeout:
                waiting.append(s)
        assert all(st == 200 for _, st in served), served
        assert len(served) <= 3, "more connections served than fds allow: %d" % len(served)
        assert len(waiting) >= 17, "clients past the fd limit must wait, %d did" % len(waiting)

        # The old connections are still served meanwhile.
        for s in old:
            assert _req(s)[0] == 200
        assert srv.alive()

        # Logged, at most about once a second.
        time.sleep(max(0.0, 3.0 - (time.monotonic() - t0)))
        elapsed = time.monotonic() - t0
        lines = [ln for ln in srv.stderr().splitlines() if "Too many open files" in ln]
        assert lines, "EMFILE was not logged:\n" + srv.stderr()[-2000:]
        assert any("pausing accept" in ln for ln in lines), lines
        assert len(lines) <= elapsed + 2, "logged %d times in %.1f s:\n%s" % (
            len(lines), elapsed, "\n".join(lines))

        # Free fds: the waiting clients are then served, and new ones too.
        for s in old + [s for s, _ in served]:
            s.close()
        old = []
        got = 0
        for s in waiting:
            s.settimeout(5)
            try:
                st, _ = read_one(s)
            except (OSError, EOFError):
                continue
            if st == 200:
                got += 1
            s.close()  # frees its fd for the next waiting one
        assert got >= len(waiting) - 1, "only %d of %d waiting clients served after fds were freed" % (
            got, len(waiting))
        for _ in range(10):
            with socket.create_connection(srv.addr, timeout=3) as s:
                assert _req(s, close=True)[0] == 200
        assert srv.alive()
    finally:
        for s in old + new:
            s.close()
