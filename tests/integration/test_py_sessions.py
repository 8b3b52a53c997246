"""spindle.session(environ) from WSGI (tests/fixtures/wsgi/session_app.py):
the counter across requests through the cookie, clear(), ttl, regenerate(),
the error without --sessions or after the first body write, and a SQLite
store that outlives a killed worker (and one opened as --user)."""
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import time

import pytest

from lib.proctools import free_port, wait_for
from lib.sessutil import REDIS, Redis, sid_of, visit
from lib.wsgiutil import APPS, PY, WsgiServer, env_for, wsgi_server  # noqa: F401  (fixture)

APP = "session_app:application"


@pytest.fixture
def secret(tmp_path):
    p = tmp_path / "secret"
    p.write_text("0123456789abcdef0123456789abcdef\n")
    return str(p)


def test_counter_round_trip(wsgi_server, tmp_path):
    srv = wsgi_server(APP, "--sessions", "memory")
    jar = tmp_path / "jar"
    first = visit(srv, "/count", jar)
    assert first.status == 200 and first.count == 1, first
    assert first.fields["id"] in sid_of(first)  # the cookie carries the id
    for n in (2, 3):
        v = visit(srv, "/count", jar)
        assert v.count == n and v.fields["id"] == first.fields["id"], v
    other = visit(srv, "/count", tmp_path / "jar2")  # another visitor starts at 1
    assert other.count == 1 and other.fields["id"] != first.fields["id"]
    assert "cannot use" not in srv.stderr()  # the old "not for WSGI" warning is gone


def test_clear_ttl_regenerate(wsgi_server, tmp_path):
    srv = wsgi_server(APP, "--sessions", "memory")
    jar = tmp_path / "jar"
    visit(srv, "/count", jar)
    v = visit(srv, "/count", jar)
    assert v.count == 2 and 86000 < int(v.fields["ttl"]) <= 86400
    sid = v.fields["id"]
    # regenerate: the same data under a new id; the old id is worth nothing
    r = visit(srv, "/regen", jar)
    assert r.fields["id"] != sid and r.fields["old"] == sid and r.count == 2, r
    assert visit(srv, "/count", jar).count == 3
    assert visit(srv, "/", cookie="spindle_sid=" + sid).count == 0
    # ttl: the cookie and the store follow
    t = visit(srv, "/ttl?120", jar)
    assert 110 <= int(t.fields["ttl"]) <= 120, t
    assert any("Max-Age=120" in h or "Expires=" in h for h in t.header("Set-Cookie"))
    assert 110 <= int(visit(srv, "/", jar).fields["ttl"]) <= 120
    # clear: empty, under a new id
    c = visit(srv, "/clear", jar)
    assert c.count == 0 and c.fields["keys"] == "" and c.fields["id"] != r.fields["id"], c
    assert visit(srv, "/count", jar).count == 1


def test_errors(wsgi_server, tmp_path):
    srv = wsgi_server(APP)  # no --sessions
    v = visit(srv, "/count")
    assert v.status == 500 and "--sessions memory" in v.body, v
    srv2 = wsgi_server(APP, "--sessions", "memory")
    late = visit(srv2, "/late")
    assert "before the response body is first written" in late.body, late
    assert not late.header("Set-Cookie")
    srv3 = wsgi_server("session_app:misuse", "--sessions", "memory")
    assert "a value must be str, not int" in visit(srv3, "/").body


@pytest.mark.skipif(not os.path.exists(REDIS), reason="redis-server is not installed")
def test_redis_store(wsgi_server, tmp_path, secret):
    """Two workers share the Redis store; with Redis gone the visitor gets a
    500 (the store's OSError), not an empty session."""
    r = Redis(tmp_path)
    try:
        srv = wsgi_server(APP, "--sessions", "redis://127.0.0.1:%d" % r.port,
                          "--session-secret-file", secret, workers=2, expect_tracebacks=True)
        jar = tmp_path / "jar"
        got = [visit(srv, "/count", jar).count for _ in range(4)]
        assert got == [1, 2, 3, 4], got
        v = visit(srv, "/", jar)
        assert b"count\x004\x00" in r.command("GET", "spindle:session:" + v.fields["id"])
        r.stop()
        assert visit(srv, "/count", jar).status == 500
    finally:
        r.stop()


def _restart_counter(tmp_path, secret, db, extra=()):
    srv = WsgiServer(APP, ["--sessions", "sqlite:%s" % db, "--session-secret-file", secret]
                     + list(extra), logdir=tmp_path)
    srv.start()
    try:
        jar = tmp_path / "jar"
        assert visit(srv, "/count", jar).count == 1
        v = visit(srv, "/count", jar)
        assert v.count == 2, v
        old = int(v.fields["pid"])
        os.kill(old, signal.SIGKILL)  # the master starts a new worker
        assert wait_for(lambda: srv.worker_pids() and old not in srv.worker_pids(), 10)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            v = visit(srv, "/count", jar)
            if v.status == 200:
                break
            time.sleep(0.1)
        assert v.count == 3 and int(v.fields["pid"]) != old, v
    finally:
        srv.stop()
    return srv


def test_sqlite_survives_worker_restart(tmp_path, secret):
    _restart_counter(tmp_path, secret, tmp_path / "sess.db")


def _others_can_read(path):
    """Every folder down to PATH lets other users in (o+x), as a worker
    running as nobody needs to import from it."""
    p = pathlib.Path(path).resolve()
    return all(d.stat().st_mode & 0o001 for d in [p, *p.parents])


@pytest.mark.skipif(os.geteuid() != 0, reason="--user needs root")
@pytest.mark.skipif(not _others_can_read(sysconfig.get_paths()["stdlib"]),
                    reason="this Python's standard library is not readable by nobody (a Python under "
                           "/root); make test runs this test on Debian's /usr/bin/python3 too")
def test_sqlite_as_user(tmp_path, secret):
    """The workers run as nobody: the database is theirs, in a directory
    they can reach (pytest's tmp_path is not)."""
    nobody = pwd.getpwnam("nobody")
    d = pathlib.Path(tempfile.mkdtemp(prefix="spindle-pysess-", dir="/tmp"))
    try:
        os.chown(d, nobody.pw_uid, nobody.pw_gid)
        _restart_counter(tmp_path, secret, d / "sess.db", ["--user", "nobody"])
        assert (d / "sess.db").stat().st_uid == nobody.pw_uid
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_memory_sessions_with_several_workers_are_refused(tmp_path):
    """The user's report: a Flask-style app with --sessions memory on two
    workers lost values silently. Now python -m spindle refuses to start."""
    p = subprocess.run([PY, "-m", "spindle", APP, "--sessions", "memory", "--workers", "2",
                        "--bind", "127.0.0.1:%d" % free_port()], env=env_for(), cwd=str(APPS),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0, p.stderr[-2000:]
    assert "--sessions memory" in p.stderr and "sqlite:PATH" in p.stderr, p.stderr
    assert "listening" not in p.stderr
