"""Sessions (issue 9): a counter per visitor kept across visits (curl
cookie jars), visitors isolated, forged / truncated / expired cookies given
a fresh session (never another visitor's), the SQLite store shared by two
workers and surviving a restart with a secret file, and the Redis store
against a real redis-server on a free port. The test application
(tests/fixtures/c/app_sessions.c) takes its store from SESSIONS_STORE and its key
file from SESSIONS_SECRET."""
import concurrent.futures
import errno
import os
import re
import subprocess
import time

import pytest

from lib.proctools import free_port

from lib.server import BIN, ROOT
from lib.sessutil import APP, REDIS, Redis, sid_of, visit

COOKIE_RE = re.compile(r"^spindle_sid=[0-9a-f]{32}\.[0-9]{10}\.[0-9a-f]{64}; Path=/; "
                       r"Expires=\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT; HttpOnly; SameSite=Lax$")


@pytest.fixture
def sess_env(monkeypatch, tmp_path):
    """Sets the app's store (and secret file) for the servers a test starts."""
    def setenv(store, secret=None):
        monkeypatch.setenv("SESSIONS_STORE", store)
        if secret:
            monkeypatch.setenv("SESSIONS_SECRET", str(secret))
        else:
            monkeypatch.delenv("SESSIONS_SECRET", raising=False)
    return setenv


@pytest.fixture
def sess_secret(tmp_path):
    p = tmp_path / "secret"
    p.write_bytes(os.urandom(24).hex().encode() + b"\n")
    return p


@pytest.fixture
def sess_server(spindle, sess_env):
    sess_env("memory")
    return spindle("--app", APP)


def test_counter_per_visitor(sess_server, tmp_path):
    jar = tmp_path / "a.jar"
    visits = [visit(sess_server, "/count", jar) for _ in range(5)]
    assert [v.count for v in visits] == [1, 2, 3, 4, 5], visits
    assert len({v.fields["id"] for v in visits}) == 1
    for v in visits:
        cookies = v.header("Set-Cookie")
        assert len(cookies) == 1 and COOKIE_RE.match(cookies[0]), cookies
    assert "not survive a restart" in sess_server.stderr()


def test_visitors_isolated(sess_server, tmp_path):
    a, b = tmp_path / "a.jar", tmp_path / "b.jar"
    assert visit(sess_server, "/set?k=name&v=alice", a).status == 200
    assert visit(sess_server, "/set?k=name&v=bob", b).status == 200
    seen = []
    for i in range(3):
        seen.append(visit(sess_server, "/count", a))
        seen.append(visit(sess_server, "/count", b))
        seen.append(visit(sess_server, "/count", b))
    assert [v.count for v in seen[0::3]] == [1, 2, 3]
    assert [v.count for v in seen[2::3]] == [2, 4, 6]
    assert seen[0].fields["id"] != seen[1].fields["id"]
    assert visit(sess_server, "/get?k=name", a).fields["name"] == "alice"
    assert visit(sess_server, "/get?k=name", b).fields["name"] == "bob"
    # No cookie at all: a new, empty session every time.
    fresh = [visit(sess_server, "/count") for _ in range(3)]
    assert [v.count for v in fresh] == [1, 1, 1]
    assert len({v.fields["id"] for v in fresh}) == 3


def _flip(s, i):
    c = s[i]
    return s[:i] + ("0" if c != "0" else "1") + s[i + 1:]


def test_bad_cookies_get_fresh_sessions(sess_server, tmp_path):
    jar = tmp_path / "a.jar"
    for _ in range(3):
        v = visit(sess_server, "/count", jar)
    assert v.count == 3
    good, owner = sid_of(v), v.fields["id"]
    ident, exp, mac = good.split(".")
    other = visit(sess_server, "/count")  # another visitor, for a spliced cookie
    o_ident, o_exp, o_mac = sid_of(other).split(".")
    bad = {
        "id changed": _flip(good, 5),
        "mac changed": _flip(good, len(good) - 1),
        "expiry extended": "%s.%s.%s" % (ident, "9999999999", mac),
        "truncated by one": good[:-1],
        "truncated to the id": ident,
        "id only, no mac": "%s.%s" % (ident, exp),
        "spliced: my id, another's mac": "%s.%s.%s" % (ident, o_exp, o_mac),
        "extended": good + "0",
        "empty": "",
        "garbage": "../../etc/passwd",
        "uppercase": good.upper(),
    }
    ids = set()
    for what, cookie in bad.items():
        r = visit(sess_server, "/count", cookie="spindle_sid=" + cookie)
        assert r.status == 200, (what, r)
        assert r.count == 1, (what, r)
        assert r.fields["id"] not in (owner, other.fields["id"]), what
        ids.add(r.fields["id"])
    assert len(ids) == len(bad)
    # A good cookie after a bad one in the same header still counts; the
    # owner's session was not disturbed.
    r = visit(sess_server, "/count", cookie="a=b; spindle_sid=%s; spindle_sid=%s" % (_flip(good, 0), good))
    assert r.count == 4 and r.fields["id"] == owner, r
    assert visit(sess_server, "/count", jar).count == 5


def test_expired_cookie_replayed_gets_fresh_session(sess_server, tmp_path):
    jar = tmp_path / "a.jar"
    assert visit(sess_server, "/count", jar).count == 1
    v = visit(sess_server, "/ttl?s=2", jar)  # expires in 1..2 s (whole seconds)
    assert v.status == 200
    short = sid_of(v)
    assert visit(sess_server, "/count", cookie="spindle_sid=" + short).count == 2
    time.sleep(2.2)
    r = visit(sess_server, "/count", cookie="spindle_sid=" + short)
    assert r.count == 1 and r.fields["id"] != v.fields["id"], r


def test_clear_gives_new_id(sess_server, tmp_path):
    jar = tmp_path / "a.jar"
    visit(sess_server, "/count", jar)
    before = visit(sess_server, "/count", jar)
    assert before.count == 2
    old_cookie = sid_of(before)
    cleared = visit(sess_server, "/clear", jar)
    assert cleared.fields["id"] != before.fields["id"]
    assert visit(sess_server, "/count", jar).count == 1
    # The old cookie is still validly signed, but its data is gone.
    r = visit(sess_server, "/count", cookie="spindle_sid=" + old_cookie)
    assert r.count == 1, r


def test_sqlite_shared_by_two_workers(spindle, sess_env, sess_secret, tmp_path):
    sess_env("sqlite:%s" % (tmp_path / "sessions.db"), sess_secret)
    srv = spindle("--app", APP, "--workers", "2")
    jar = tmp_path / "a.jar"
    counts, pids = [], set()
    # Each visit is a new connection. Every other one is made while a
    # request blocks one worker's loop (/block sleeps in the handler), so
    # the other worker must accept it: visits alternate between workers.
    for i in range(12):
        blocked = None
        if i % 2:
            blocked = concurrent.futures.ThreadPoolExecutor(1)
            fut = blocked.submit(visit, srv, "/block?ms=500")
            time.sleep(0.15)  # accepted, and now blocking its worker
        v = visit(srv, "/count", jar)
        if blocked:
            assert fut.result().fields["pid"] != v.fields["pid"]
            blocked.shutdown()
        counts.append(v.count)
        pids.add(v.fields["pid"])
    assert counts == list(range(1, 13)), counts
    assert len(pids) == 2, "visits were all served by one worker: %s" % pids
    db = tmp_path / "sessions.db"
    assert (tmp_path / "sessions.db-wal").exists() or db.exists()


def test_sqlite_many_first_visits_at_once_are_all_kept(spindle, sess_env, sess_secret, tmp_path):
    """The SQLite store groups the writes made at once into one transaction
    (session_writes.c): 160 first visits, 40 at a time on two workers, then
    each visitor back once. Every session was stored, with its own data."""
    sess_env("sqlite:%s" % (tmp_path / "sessions.db"), sess_secret)
    srv = spindle("--app", APP, "--workers", "2")
    with concurrent.futures.ThreadPoolExecutor(40) as ex:
        first = list(ex.map(lambda i: visit(srv, "/set?k=n&v=%d" % i), range(160)))
        assert [v.status for v in first] == [200] * 160, first
        cookies = [sid_of(v) for v in first]
        assert len(set(cookies)) == 160
        back = list(ex.map(lambda c: visit(srv, "/count", cookie="spindle_sid=" + c), cookies))
        names = list(ex.map(lambda c: visit(srv, "/get?k=n", cookie="spindle_sid=" + c), cookies))
    assert [v.count for v in back] == [1] * 160, back
    assert [v.fields.get("n") for v in names] == [str(i) for i in range(160)], names


def test_sqlite_survives_restart_with_secret(spindle, sess_env, sess_secret, tmp_path):
    sess_env("sqlite:%s" % (tmp_path / "sessions.db"), sess_secret)
    jar = tmp_path / "a.jar"
    srv = spindle("--app", APP)
    assert [visit(srv, "/count", jar).count for _ in range(3)] == [1, 2, 3]
    assert "not survive" not in srv.stderr()
    srv.stop()
    srv2 = spindle("--app", APP)
    v = visit(srv2, "/count", jar)
    assert v.count == 4, v
    # Without the secret file a new random key: the old cookie no longer
    # verifies, and the visitor starts over.
    srv2.stop()
    sess_env("sqlite:%s" % (tmp_path / "sessions.db"))
    srv3 = spindle("--app", APP)
    assert visit(srv3, "/count", jar).count == 1


def _refused(env, tmp_path):
    port = free_port()
    p = subprocess.run([BIN, "--bind", "127.0.0.1:%d" % port, "--workers", "1", "--app", APP],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=10, cwd=str(ROOT),
                       env=dict(os.environ, **env))
    return p.returncode, p.stderr.decode(errors="replace")


def test_bad_configuration_refused(tmp_path):
    rc, err = _refused({"SESSIONS_STORE": "mysql://x"}, tmp_path)
    assert rc != 0 and "unknown store" in err, err
    rc, err = _refused({"SESSIONS_STORE": "sqlite:%s/no/such/dir/s.db" % tmp_path}, tmp_path)
    assert rc != 0 and "cannot open the SQLite database" in err, err
    short = tmp_path / "short"
    short.write_text("tooshort\n")
    rc, err = _refused({"SESSIONS_STORE": "memory", "SESSIONS_SECRET": str(short)}, tmp_path)
    assert rc != 0 and "at least 16 bytes" in err, err


@pytest.fixture
def sess_redis(tmp_path):
    if not os.path.exists(REDIS):
        pytest.skip("redis-server is not installed (scripts/deps.sh)")
    r = Redis(tmp_path, appendonly=True)  # a restart keeps the sessions
    yield r
    r.stop()


def test_redis_store(spindle, sess_env, sess_secret, sess_redis, tmp_path):
    sess_env("redis://127.0.0.1:%d" % sess_redis.port, sess_secret)
    srv = spindle("--app", APP, "--workers", "2")
    a, b = tmp_path / "a.jar", tmp_path / "b.jar"
    got = [(visit(srv, "/count", a).count, visit(srv, "/count", b).count) for _ in range(4)]
    assert got == [(1, 1), (2, 2), (3, 3), (4, 4)], got
    v = visit(srv, "/count", a)
    assert v.count == 5
    key = "spindle:session:" + v.fields["id"]
    assert b"count\x005\x00" in sess_redis.command("GET", key)
    ttl = int(sess_redis.command("TTL", key)[1:].split(b"\r\n")[0])
    assert 86000 < ttl <= 86400, ttl
    # Sessions live in Redis, not in the server: a restarted server (same
    # secret) carries on.
    srv.stop()
    srv2 = spindle("--app", APP)
    assert visit(srv2, "/count", a).count == 6
    # Redis gone: the handler's sp_session_of fails and the visitor gets a
    # 500, not someone else's (or an empty) session, with one log line.
    sess_redis.stop()
    assert visit(srv2, "/count", a).status == 500
    assert visit(srv2, "/count", a).status == 500
    err = srv2.stderr()
    assert err.count("sessions: Redis at 127.0.0.1:%d is unreachable" % sess_redis.port) == 1, err
    # Back (its data kept on disk): the session carries on where it was.
    sess_redis.start()
    assert visit(srv2, "/count", a).count == 7
    assert "sessions: Redis at 127.0.0.1:%d is back" % sess_redis.port in srv2.stderr()


def test_second_session_of_after_failure_refused(sess_server):
    """The first sp_session_of fails (no room left for the Set-Cookie): a
    second call fails the same way instead of returning the half-made
    session, whose set_ttl/clear wrote through a missing field index (run
    this against build/asan/spindle too: SPINDLE_BIN=build/asan/spindle)."""
    for _ in range(2):  # the second on a reused (spare) session object
        r = visit(sess_server, "/retry")
        assert r.status == 200, r
        assert r.fields["first"] == str(errno.ENOSPC), r
        assert r.fields["second"] == str(errno.ENOSPC), r
        assert not r.header("Set-Cookie"), r
    assert visit(sess_server, "/count").count == 1


def test_unknown_signed_id_gets_a_fresh_one(sess_server, tmp_path):
    """Fixation: a validly signed cookie whose id the store never saw (an
    attacker's, handed to a victim) is not taken on: the visitor gets a new
    id and a new cookie, and what it stores lives under the new id."""
    planted = visit(sess_server, "/get?k=x")  # signed by us, nothing stored
    cookie = "spindle_sid=" + sid_of(planted)
    r = visit(sess_server, "/set?k=user&v=victim", cookie=cookie)
    assert r.status == 200 and r.fields["id"] != planted.fields["id"], r
    assert sid_of(r) != sid_of(planted)
    # The planted cookie still knows nothing of the victim's session.
    again = visit(sess_server, "/get?k=user", cookie=cookie)
    assert again.fields["user"] == "(none)" and again.fields["id"] != r.fields["id"], again
    assert visit(sess_server, "/get?k=user", cookie="spindle_sid=" + sid_of(r)).fields["user"] == "victim"


def test_two_cookies_first_known_wins(sess_server, tmp_path):
    """Several session cookies: the first that verifies and that the store
    holds wins; a signed but unknown one before it is passed over."""
    owner = visit(sess_server, "/count")
    known = sid_of(owner)
    unknown = sid_of(visit(sess_server, "/get?k=x"))
    other = visit(sess_server, "/count")
    r = visit(sess_server, "/count", cookie="spindle_sid=%s; spindle_sid=%s" % (unknown, known))
    assert r.count == 2 and r.fields["id"] == owner.fields["id"], r
    # Two known sessions: the first one.
    r = visit(sess_server, "/count", cookie="spindle_sid=%s; spindle_sid=%s" % (sid_of(other), known))
    assert r.count == 2 and r.fields["id"] == other.fields["id"], r


def test_regenerate_keeps_data_under_a_new_id(sess_server, tmp_path):
    jar = tmp_path / "a.jar"
    before = visit(sess_server, "/set?k=name&v=alice", jar)
    old_cookie = sid_of(before)
    r = visit(sess_server, "/regen", jar)
    assert r.status == 200 and r.fields["id"] != before.fields["id"], r
    assert sid_of(r) != old_cookie
    after = visit(sess_server, "/get?k=name", jar)
    assert after.fields["name"] == "alice" and after.fields["id"] == r.fields["id"], after
    # The old id was deleted from the store: its cookie opens nothing.
    stale = visit(sess_server, "/get?k=name", cookie="spindle_sid=" + old_cookie)
    assert stale.fields["name"] == "(none)" and stale.fields["id"] != before.fields["id"], stale


def test_cookie_secure(spindle, sess_env, tmp_path):
    sess_env("memory")
    srv = spindle("--app", APP, "--forwarded-allow-ips", "127.0.0.1")
    plain = visit(srv, "/count").header("Set-Cookie")[0]
    assert COOKIE_RE.match(plain) and "Secure" not in plain, plain
    # A trusted proxy says the client came over https: Secure, and a
    # rewritten cookie (a new ttl) keeps it.
    tls = visit(srv, "/ttl?s=60", headers=["X-Forwarded-Proto: https"]).header("Set-Cookie")
    assert len(tls) == 1 and tls[0].endswith("; HttpOnly; SameSite=Lax; Secure"), tls
    srv.stop()
    # An untrusted peer cannot claim https; the flag forces Secure anyway.
    srv = spindle("--app", APP)
    assert "Secure" not in visit(srv, "/count", headers=["X-Forwarded-Proto: https"]).header(
        "Set-Cookie")[0]
    srv.stop()
    srv = spindle("--app", APP, "--session-cookie-secure")
    for path in ("/count", "/clear"):
        got = visit(srv, path).header("Set-Cookie")
        assert len(got) == 1 and got[0].endswith("; Secure"), (path, got)


@pytest.mark.parametrize("flags", [["--sessions", "memory"], ["--session-secret-file", "SECRET"]])
def test_memory_sessions_with_several_workers_are_refused(flags, tmp_path):
    """One worker's memory cannot hold a session the next request may need
    on another worker: refused at start-up, naming what works, never split
    silently (the default store is memory too)."""
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    flags = [str(secret) if f == "SECRET" else f for f in flags]
    p = subprocess.run([BIN, "--bind", "127.0.0.1:%d" % free_port(), "--workers", "2", "--app", APP] + flags,
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0, p.stderr[-2000:]
    assert "--sessions memory" in p.stderr and "sqlite:PATH" in p.stderr and "redis://" in p.stderr, p.stderr
    assert "listening" not in p.stderr
