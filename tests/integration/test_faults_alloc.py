"""Fault injection: allocation failure (issue 11).

build/spindle --workers 0 runs with tests/fault/failmalloc.c preloaded. After
startup the test switches failures on through the shim's shared control
file: every allocation (malloc family and anonymous mmap, i.e. coroutine
stacks) fails, or one in three. Meanwhile bursts of concurrent requests that
need fresh buffers, coroutines and allocations on the request path (a long
target, many fields) arrive. Each must get a response (200, or 500/503) or
see its connection closed; the process stays up, and once failures stop it
serves every request again.
"""
import socket
import threading
import time

import pytest

from lib.faultutil import FailCtl, build_failmalloc, launch, read_one, stop_all


@pytest.fixture
def servers():
    lst = []
    yield lst
    problems = stop_all(lst)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def _burst(addr, n, timeout=4.0):
    """n concurrent clients with mixed requests; returns their outcomes."""
    long_path = "/" + "a/" * 2500  # over the 4 KiB path stack buffer: malloc'ed
    many = "".join("X-F%d: v\r\n" % i for i in range(90))
    reqs = [
        "GET /sleep?ms=150 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % long_path,
        "GET / HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % many,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\nConnection: close\r\n\r\n" + "e" * 70000,
    ]
    out = [None] * n

    def one(i):
        try:
            with socket.create_connection(addr, timeout=timeout) as s:
                s.sendall(reqs[i % len(reqs)].encode())
                out[i] = read_one(s)[0]
        except socket.timeout:
            out[i] = "timeout"
        except (OSError, EOFError):
            out[i] = "closed"

    th = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout + 5)
    return out


def _normal(n):
    """What _burst's requests get without faults: the long target has no route."""
    return [404 if i % 4 == 1 else 200 for i in range(n)]


@pytest.mark.parametrize("every", [1, 3])
def test_allocation_failure_never_crashes(tmp_path, servers, every):
    so = build_failmalloc(tmp_path)
    ctl = FailCtl(tmp_path / "failctl")
    srv = launch(tmp_path, servers, "--header-timeout", "3", "--body-timeout", "3",
                 env={"LD_PRELOAD": so, "FAILMALLOC_CTL": ctl.path}, workers=0)
    assert _burst(srv.addr, 8) == _normal(8)  # the shim alone changes nothing

    time.sleep(1.2)  # idle buffers are trimmed once a second: the next ones are allocated
    ctl.set(every)
    results = []
    for _ in range(3):
        results += _burst(srv.addr, 40)
        assert srv.alive(), "spindle died under allocation failure:\n" + srv.stderr()[-3000:]
    calls, failed = ctl.counts()
    ctl.set(0)
    assert failed > 0, "no allocation was made to fail (calls %d)" % calls
    bad = [r for r in results if r not in (200, 404, 500, 503, "closed")]
    assert not bad, "unexpected outcomes under allocation failure: %r (all: %r)" % (bad, results)

    # Failures over: everything is served again.
    time.sleep(0.5)
    after = _burst(srv.addr, 40)
    assert after == _normal(40), after
    assert srv.alive()
