"""The Python coroutine toolkit (tests/fixtures/wsgi/toolkit_app.py, one worker
unless said): spawn runs outside any request and sleeps cooperatively; every
fires at its period and cancel stops it; an Event wakes many parked long
polls at once; a Channel hands an item from one request to another;
run_blocking keeps an unpatched time.sleep off the loop and brings an
exception back; exceptions in spawned/periodic functions are logged and the
worker lives; on_worker_start/on_worker_stop run once per worker."""
import json
import os
import resource
import selectors
import socket
import threading
import time

from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

APP = "toolkit_app:application"


def get(s, path, timeout=10):
    r = s.get(path, timeout=timeout)
    assert r.status == 200, (path, r.status, r.body)
    return json.loads(r.body)


def test_spawn_runs_outside_a_request_and_sleeps(wsgi_server):
    s = wsgi_server(APP)
    end = time.monotonic() + 2  # spawned at import; it sleeps 0.05 s once the worker serves
    while not get(s, "/state")["import_spawn"]:
        assert time.monotonic() < end
        time.sleep(0.02)
    t0 = time.monotonic()
    assert get(s, "/spawn?d=0.2") == "spawned"
    assert time.monotonic() - t0 < 0.15  # the request did not wait for it
    assert get(s, "/state")["spawn_done"] is False
    time.sleep(0.4)
    assert get(s, "/state")["spawn_done"] is True


def test_every_fires_at_its_period_and_cancel_stops_it(wsgi_server):
    s = wsgi_server(APP)
    get(s, "/every/start?period=0.05")
    time.sleep(0.5)
    n = get(s, "/every/cancel")
    assert 5 <= n <= 11, n  # ~10 in 0.5 s
    time.sleep(0.25)
    assert get(s, "/state")["ticks"] == n


def raise_fd_limit(want=4096):
    """1,000 client sockets here and as many in the server (which inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def test_event_wakes_1000_long_polls(wsgi_server):
    raise_fd_limit()
    s = wsgi_server(APP, "--max-connections", "1100")
    n = 1000
    sel = selectors.DefaultSelector()
    socks = []
    try:
        for i in range(n):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            c.sendall(b"GET /poll?timeout=10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            socks.append(c)
        end = time.monotonic() + 5
        while get(s, "/state")["waiters"] < n and time.monotonic() < end:
            time.sleep(0.02)
        assert get(s, "/state")["waiters"] == n
        t0 = time.monotonic()
        assert get(s, "/set") == n
        bufs = {}
        for c in socks:
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            bufs[c] = b""
        open_ = set(socks)
        while open_ and time.monotonic() - t0 < 2:
            for key, _ in sel.select(0.2):
                b = key.fileobj.recv(4096)
                bufs[key.fileobj] += b
                if not b:
                    sel.unregister(key.fileobj)
                    open_.discard(key.fileobj)
        elapsed = time.monotonic() - t0
        assert not open_, "%d long polls not answered" % len(open_)
        assert elapsed < 1.5, elapsed
        assert all(b.endswith(b'"woken"') for b in bufs.values())
    finally:
        for c in socks:
            c.close()
        sel.close()


def test_event_wait_times_out(wsgi_server):
    s = wsgi_server(APP)
    assert get(s, "/poll?timeout=0.1") == "timeout"


def test_channel_hands_an_item_between_requests(wsgi_server):
    s = wsgi_server(APP)
    got = {}
    t = threading.Thread(target=lambda: got.update(v=get(s, "/chan/get")))
    t.start()
    time.sleep(0.2)  # the get waits in the channel
    assert get(s, "/chan/put?v=hello") == "put"
    t.join(5)
    assert got == {"v": "hello"}
    # The other way: an unbuffered put waits for its getter.
    done = {}
    t = threading.Thread(target=lambda: done.update(v=get(s, "/chan/put?v=second")))
    t.start()
    time.sleep(0.2)
    assert not done
    assert get(s, "/chan/get") == "second"
    t.join(5)
    assert done == {"v": "put"}
    assert get(s, "/chan/get?timeout=0.1").startswith("TimeoutError")
    r = get(s, "/chan/selftest")
    assert r["got"] == [0, 1, 2, 3, 4], r
    assert r["log"][:3] == ["put0", "put1", "len2"] and r["log"][-1] == "closed", r


def test_run_blocking_keeps_the_loop_free(wsgi_server):
    s = wsgi_server(APP, "--blocking-threads", "2")
    res = {}
    t = threading.Thread(target=lambda: res.update(v=get(s, "/blocking?d=0.5")))
    t0 = time.monotonic()
    t.start()
    time.sleep(0.1)
    for _ in range(5):
        get(s, "/fast")
    fast = time.monotonic() - t0
    t.join(5)
    assert fast < 0.4, fast  # served while the blocking call slept
    assert 0.45 <= res["v"] < 1.5, res
    assert get(s, "/blocking/raise") == "ValueError: bad input for the blocking call"


def test_exceptions_in_spawn_and_every_are_logged(wsgi_server):
    s = wsgi_server(APP, expect_tracebacks=True)
    pid = get(s, "/state")["pid"]
    get(s, "/boom")
    time.sleep(0.4)
    st = get(s, "/state")
    assert st["pid"] == pid and st["boom_ticks"] >= 3, st  # every kept calling
    err = s.stderr()
    assert "exception in spawned function _spawn_boom" in err, err[-2000:]
    assert "KeyError: 'boom from a spawned function'" in err
    assert "exception in periodic function _boom" in err
    assert "ValueError: boom from a periodic function" in err
    assert "Traceback" in err


def test_worker_hooks_run_once_per_worker(wsgi_server, tmp_path):
    marks = tmp_path / "marks"
    s = wsgi_server(APP, workers=2, env={"TOOLKIT_MARKS": str(marks)})
    end = time.monotonic() + 5
    while marks.read_text().count("start") < 2 if marks.exists() else True:
        assert time.monotonic() < end
        time.sleep(0.05)
    pids = set(s.worker_pids())
    # A long poll parked at the stop: the stop hook's Event.set() answers it
    # before the graceful timeout, which would cut it.
    c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    c.sendall(b"GET /poll?timeout=30 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    end = time.monotonic() + 5
    while sum(get(s, "/state")["waiters"] for _ in range(4)) == 0:
        assert time.monotonic() < end
        time.sleep(0.02)
    t0 = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - t0 < 2, "the stop waited for the graceful timeout"
    with c:
        assert c.recv(4096).endswith(b'"woken"')
    lines = marks.read_text().split()
    starts = sorted(int(p) for w, p in zip(lines[::2], lines[1::2]) if w == "start")
    stops = sorted(int(p) for w, p in zip(lines[::2], lines[1::2]) if w == "stop")
    assert starts == stops == sorted(pids), (lines, pids)


def test_event_and_channel_from_another_thread(wsgi_server):
    # The app's own threads hand Event.set and Channel.put/get to the loop
    # (an eventfd wakes it): before, they touched greenlets of another thread.
    s = wsgi_server(APP)
    c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    c.sendall(b"GET /poll?timeout=5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    end = time.monotonic() + 5
    while get(s, "/state")["waiters"] < 1 and time.monotonic() < end:
        time.sleep(0.02)
    t0 = time.monotonic()
    assert get(s, "/thread/set?d=0.2") == "thread started"
    body = b""
    while not body.endswith(b'"woken"'):
        chunk = c.recv(4096)
        assert chunk, body
        body += chunk
    assert 0.15 < time.monotonic() - t0 < 1.5
    c.close()
    assert get(s, "/thread/put") == "thread started"
    assert [get(s, "/chan/get") for _ in range(3)] == ["t0", "t1", "t2"]
    assert get(s, "/thread/get") == "thread started"
    time.sleep(0.1)
    assert get(s, "/chan/put?v=hello") == "put"
    end = time.monotonic() + 3
    while get(s, "/state").get("thread_got") != "hello" and time.monotonic() < end:
        time.sleep(0.02)
    assert get(s, "/state").get("thread_got") == "hello"
