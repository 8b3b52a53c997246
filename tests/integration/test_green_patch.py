"""spindle.patch() with real clients inside requests (tests/fixtures/wsgi/
green_app.py, one worker): N concurrent requests each waiting DELAY on an
outbound call finish in about one DELAY, not N, so the worker served the
others meanwhile. The app's own threads see the stdlib's behaviour."""
import urllib.parse

import pytest

from lib.greenutil import SlowServer, concurrent_json, get_json, self_signed
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

N = 8
DELAY = 0.5


def all_ok(results, expect):
    bad = [r for r in results if r != (200, expect)]
    assert not bad, bad[:3]


def q(s):
    return urllib.parse.quote(s, safe="")


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_urllib_outbound_calls_cooperate(wsgi_server, tmp_path, tls):
    cert = self_signed(tmp_path) if tls else None
    slow = SlowServer(cert)
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        scheme = "https://localhost" if tls else "http://127.0.0.1"
        path = "/http?url=%s" % q("%s:%d/x" % (scheme, slow.port))
        if tls:
            path += "&ca=" + q(cert[0])
        elapsed, results = concurrent_json(s.port, [path] * N)
        all_ok(results, "slow:/x")
        assert elapsed < N * DELAY / 2, elapsed   # serialized: N * DELAY
    finally:
        slow.stop()


@pytest.mark.parametrize("how", ["select", "poll", "selectors"])
def test_select_poll_selectors_wait_cooperatively(wsgi_server, how):
    slow = SlowServer()
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        elapsed, results = concurrent_json(s.port, ["/wait?how=%s&port=%d&path=/y" %
                                                    (how, slow.port)] * N)
        all_ok(results, "slow:/y")
        assert elapsed < N * DELAY / 2, elapsed
    finally:
        slow.stop()


def test_app_timeouts_still_fire(wsgi_server):
    slow = SlowServer()   # answers after DELAY; the client gives up after 0.2 s
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        url = q("http://127.0.0.1:%d/t" % slow.port)
        elapsed, results = concurrent_json(s.port, ["/timeout?t=0.2&url=" + url] * N)
        for status, r in results:
            assert status == 200 and r["timeout"] == "TimeoutError", r
            assert 0.19 <= r["after"] < DELAY, r
        assert elapsed < DELAY + 0.3, elapsed
    finally:
        slow.stop()


def test_lock_held_across_a_wait_is_handed_on(wsgi_server):
    """Five requests queue on one threading.Lock, each holding it 0.1 s
    while it sleeps: one after the other, woken at each release (with a
    plain lock the second request would block the worker for ever)."""
    s = wsgi_server("green_app:application", "--worker-timeout", "30")
    elapsed, results = concurrent_json(s.port, ["/lock?s=0.1"] * 5, timeout=10)
    assert all(st == 200 for st, _ in results), results
    waits = sorted(w for _, w in results)
    assert waits[-1] >= 0.35, waits
    assert 0.5 <= elapsed < 0.9, elapsed


def test_greenlet_spawned_in_request_cooperates(wsgi_server):
    slow = SlowServer()
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        elapsed, results = concurrent_json(s.port, ["/spawn?port=%d" % slow.port] * N)
        all_ok(results, "slow:/z")
        assert elapsed < N * DELAY / 2, elapsed
    finally:
        slow.stop()


def test_select_one_fd_both_ways(wsgi_server):
    s = wsgi_server("green_app:application", "--worker-timeout", "30")
    elapsed, results = concurrent_json(s.port, ["/rw"] * 4)
    for status, r in results:
        assert status == 200 and r["first"] == [0, 0, 0] and r["second"] == [1, 0, 0], r
        assert r["waited"] >= 0.19, r
    assert elapsed < 0.6, elapsed   # the four waits overlapped


def test_getaddrinfo_runs_on_resolver_threads(wsgi_server):
    s = wsgi_server("green_app:application", "--worker-timeout", "30")
    assert get_json(s.port, "/dns?host=localhost")[1]["addr"] == "127.0.0.1"
    # slow.test blocks its resolver thread 0.3 s: four at once take ~0.3 s.
    elapsed, results = concurrent_json(s.port, ["/dns?host=slow.test"] * 4)
    assert all(r[0] == 200 and r[1]["addr"] == "127.0.0.1" for r in results), results
    assert elapsed < 0.9, elapsed
    threads = get_json(s.port, "/dns?host=localhost")[1]["threads"]
    assert len(threads) == 4 and all(t.startswith("spindle-resolver") for t in threads), threads


def test_app_threads_behave_as_unpatched(wsgi_server):
    """A ThreadPoolExecutor job and a daemon thread sleep, connect, resolve
    and select after patch() (before the fix: greenlet.error)."""
    s = wsgi_server("green_app:application", "--worker-timeout", "30")
    status, out = get_json(s.port, "/threads?port=%d" % s.port)
    assert status == 200, out
    for who in ("pool", "daemon"):
        r = out[who]
        assert r.get("body") == '"hello"', (who, r)
        assert r["slept"] >= 0.05 and r["addr"][1] == s.port, (who, r)


def test_redis_py_cooperates(wsgi_server, tmp_path):
    from lib.sessutil import Redis
    pytest.importorskip("redis", reason="redis-py missing (Debian: python3-redis)")
    red = Redis(tmp_path)
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        # BLPOP on an empty list: the server holds each client DELAY seconds.
        paths = ["/redis?port=%d&key=k%d&s=%s" % (red.port, i, DELAY) for i in range(N)]
        elapsed, results = concurrent_json(s.port, paths)
        all_ok(results, {"blpop": None, "ping": True})
        assert elapsed < N * DELAY / 2, elapsed
    finally:
        red.stop()


def test_psycopg2_and_sqlalchemy_cooperate(wsgi_server):
    """psycopg2 through the wait callback patch() installs: N concurrent
    pg_sleep(DELAY) queries on one worker take ~1x DELAY; the same through
    SQLAlchemy's pool."""
    from lib import pgutil
    why = pgutil.missing()
    if why:
        pytest.skip(why)
    pytest.importorskip("psycopg2", reason="psycopg2 missing (Debian: python3-psycopg2)")
    pg = pgutil.Postgres()
    try:
        s = wsgi_server("green_app:application", "--worker-timeout", "30")
        elapsed, results = concurrent_json(s.port, ["/pg?s=%s&dsn=%s" % (DELAY, q(pg.dsn))] * N)
        all_ok(results, 42)
        assert elapsed < N * DELAY / 2, elapsed
        # A cold engine: its first connect holds a threading lock the other
        # requests wait for (a deadlock unless patch() makes locks green).
        pytest.importorskip("sqlalchemy", reason="SQLAlchemy missing (Debian: python3-sqlalchemy)")
        elapsed, results = concurrent_json(s.port, ["/sqla?s=%s&url=%s" % (DELAY, q(pg.url))] * N)
        all_ok(results, 7)
        assert elapsed < N * DELAY / 2 + 0.5, elapsed
    finally:
        pg.stop()
