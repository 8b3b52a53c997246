"""Cooperative waits (tests/fixtures/wsgi/coop_app.py), large bodies
(stream_app.py), the core's rejections in front of Python (count_app.py),
and workers (pid_app.py)."""
import hashlib
import json
import threading
import time

import pytest

from lib.wsgiutil import concurrent_get as concurrent, http_get as get, proc_status, wsgi_server  # noqa: F401,E501  (fixture)


def state(s):
    return json.loads(s.get("/max").body)


# ---- cooperative ----------------------------------------------------------------

@pytest.mark.parametrize("path", ["/tsleep?s=0.5", "/ssleep?s=0.5"])
def test_100_sleeping_requests_one_worker(wsgi_server, path):
    s = wsgi_server("coop_app:application", "--worker-timeout", "60")
    elapsed, results = concurrent(s.port, [path] * 100)
    assert all(r == (200, b"slept") for r in results), [r for r in results if r != (200, b"slept")]
    assert elapsed < 10, elapsed            # serialized it would be 50 s
    assert elapsed >= 0.5
    st = state(s)
    assert st["calls"] == 100
    assert st["max"] >= 50, st              # they really were in the app together


def test_patched_socket_client_inside_requests(wsgi_server):
    backend = wsgi_server("coop_app:application")
    front = wsgi_server("coop_app:application", "--worker-timeout", "60")
    elapsed, results = concurrent(front.port,
                                  ["/fetch?port=%d&path=/ssleep%%3Fs%%3D0.5" % backend.port] * 100)
    bad = [r for r in results if r != (200, b"fetched:slept")]
    assert not bad, bad[:5]
    assert elapsed < 10, elapsed
    assert state(front)["max"] >= 50, state(front)
    assert state(backend)["calls"] == 100


def test_max_concurrent_app_calls_bounds_concurrency(wsgi_server):
    s = wsgi_server("coop_app:application", "--max-concurrent-app-calls", "2")
    elapsed, results = concurrent(s.port, ["/ssleep?s=0.3"] * 10)
    assert all(r == (200, b"slept") for r in results), results
    assert elapsed >= 1.5 - 0.05, elapsed   # 5 rounds of 2
    assert elapsed < 2.9, elapsed           # but 2 at a time, not 1
    assert state(s)["max"] == 2


def test_max_concurrent_app_calls_flag_rejects_nonsense(tmp_path):
    import subprocess
    from lib.wsgiutil import PY, env_for, APPS
    r = subprocess.run([PY, "-m", "spindle", "coop_app:application", "--bind", "127.0.0.1:1",
                        "--max-concurrent-app-calls", "0"], env=env_for(), cwd=str(APPS),
                       capture_output=True, timeout=20)
    assert r.returncode != 0
    assert b"--max-concurrent-app-calls" in r.stderr


# ---- streaming --------------------------------------------------------------------

MB = 1 << 20


def worker_of(s):
    w = s.worker_pids()
    assert len(w) == 1
    return w[0]


def upload(s, total, chunked, sampler):
    block = bytes(range(256)) * 4096   # 1 MB
    h = hashlib.sha256()
    with s.connect(timeout=60) as c:
        if chunked:
            c.send(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                   b"Connection: close\r\n\r\n")
        else:
            c.send(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                   b"Connection: close\r\n\r\n" % total)
        sent = 0
        i = 0
        while sent < total:
            piece = block[i % 7:] + block[:i % 7]
            h.update(piece)
            c.send(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            sent += len(piece)
            i += 1
            sampler()
        if chunked:
            c.send(b"0\r\n\r\n")
        r = c.response()
    assert r.status == 200, r
    n, digest, biggest = r.body.decode().split()
    assert int(n) == total and digest == h.hexdigest()
    assert 0 < int(biggest) <= 65536


@pytest.mark.parametrize("chunked", [False, True])
def test_50mb_upload_streams_with_bounded_rss(wsgi_server, chunked):
    s = wsgi_server("stream_app:application", "--body-timeout", "30")
    pid = worker_of(s)
    samples = []
    upload(s, 50 * MB, chunked, lambda: samples.append(proc_status(pid, "VmRSS") or 0))
    hwm = proc_status(pid, "VmHWM")
    assert max(samples) < 80 * 1024, max(samples)
    assert hwm < 80 * 1024, "worker peak RSS %d kB" % hwm


def test_50mb_streamed_response_intact(wsgi_server):
    s = wsgi_server("stream_app:application", "--send-timeout", "30")
    pid = worker_of(s)

    def chunk(i):   # as stream_app.chunk
        return hashlib.sha256(b"%d" % i).digest() * 32768
    want = hashlib.sha256()
    for i in range(50):
        want.update(chunk(i))
    got = hashlib.sha256()
    size = [0]

    def sink(b):
        got.update(b)
        size[0] += len(b)

    with s.connect(timeout=60) as c:
        c.request("GET", "/download?mb=50")
        r = c.response(sink=sink)
        assert r.status == 200 and r.complete
        c.request("GET", "/download?mb=1")   # keep-alive still in step
        r2 = c.response()
        assert r2.body == chunk(0)
    assert size[0] == 50 * MB
    assert got.hexdigest() == want.hexdigest()
    assert proc_status(pid, "VmHWM") < 80 * 1024


# ---- the core's rejections hold in front of Python ---------------------------------

H = b"Host: x\r\n"
HOSTILE = [
    ("bare_lf", b"GET /a HTTP/1.1\n" + H + b"\r\n"),
    ("bare_lf_field", b"GET /a HTTP/1.1\r\nHost: x\nX: y\r\n\r\n"),
    ("te_and_cl", b"POST /a HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n"
                  b"Content-Length: 5\r\n\r\n0\r\n\r\n"),
    ("cl_and_te", b"POST /a HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("obs_fold", b"GET /a HTTP/1.1\r\n" + H + b"X: a\r\n b\r\n\r\n"),
    ("dup_cl", b"POST /a HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n"
               b"hello!"),
    ("space_before_colon", b"GET /a HTTP/1.1\r\nHost : x\r\n\r\n"),
    ("nul_in_value", b"GET /a HTTP/1.1\r\n" + H + b"X: a\x00b\r\n\r\n"),
    ("bad_percent", b"GET /a%zz HTTP/1.1\r\n" + H + b"\r\n"),
]


def test_hostile_input_rejected_before_the_app(wsgi_server):
    s = wsgi_server("count_app:application")
    for name, data in HOSTILE:
        raw = s.raw(data, timeout=5)
        assert raw.startswith(b"HTTP/1.1 400 "), (name, raw[:200])
    assert s.get("/count").body == b"0"
    # and a valid request is counted (the counter works)
    assert s.get("/a").body == b"called"
    assert s.get("/count").body == b"1"


# ---- workers ------------------------------------------------------------------------

def pids_from_two_workers(s, tries=5):
    """One request blocks its worker (an unpatched sleep); meanwhile the
    other worker must answer. Returns the two /pid answers. Tried again a
    few times when one worker answered both: on a loaded machine the other
    may still be importing, or one wake may accept both queued connections."""
    for _ in range(tries):
        a, b = pids_once(s)
        if a["pid"] != b["pid"]:
            break
    return a, b


def pids_once(s):
    out = {}

    def blocker():
        out["block"] = json.loads(get(s.port, "/block?s=1.0")[1])

    t = threading.Thread(target=blocker, daemon=True)
    t.start()
    time.sleep(0.3)
    out["other"] = json.loads(get(s.port, "/pid", timeout=5)[1])
    t.join(10)
    return out["block"], out["other"]


def test_two_workers_import_after_fork(wsgi_server):
    s = wsgi_server("pid_app:application", workers=2)
    workers = s.worker_pids()
    assert len(workers) == 2
    a, b = pids_from_two_workers(s)
    assert a["pid"] != b["pid"], (a, b)
    assert {a["pid"], b["pid"]} == set(workers)
    for r in (a, b):
        assert r["import_pid"] == r["pid"], r      # imported in the worker, after the fork
        assert r["import_pid"] != s.pid
        assert r["multiprocess"] is True


def test_two_workers_preload_imports_in_master(wsgi_server):
    s = wsgi_server("pid_app:application", "--preload", workers=2)
    workers = s.worker_pids()
    a, b = pids_from_two_workers(s)
    assert a["pid"] != b["pid"], (a, b)
    assert {a["pid"], b["pid"]} == set(workers)
    for r in (a, b):
        assert r["import_pid"] == s.pid, (r, s.pid)  # imported once, in the master
        assert r["pid"] != s.pid
