"""Redis over TLS with a password and a database number (rediss://), for the
bus and the session store alike, against Debian's redis-server listening
only on a TLS port with --requirepass: two instances share a topic in the
named database; sessions count across instances in theirs; a certificate
from another CA, or a wrong password, is refused with a log line that says
so (the publish a 503, the session request a 500), never served in clear."""
import os
import pathlib

import pytest

from lib.server import BIN
from lib.sessutil import APP as SESS_APP
from lib.sessutil import REDIS, Redis, visit
from test_bus_redis import ids_increase, pub, sub, topic
from lib.tlsutil import certs  # noqa: F401  (fixture)

BUS_APP = str(pathlib.Path(BIN).parent / "tests" / "fixtures" / "c" / "app_bus.so")
PASSWORD = "pw-with:and@in-it"


@pytest.fixture
def tls_redis(tmp_path, certs):  # noqa: F811
    if not pathlib.Path(REDIS).exists():
        pytest.skip("redis-server is not installed (scripts/deps.sh)")
    r = Redis(tmp_path, certs=certs, password=PASSWORD)
    yield r
    r.stop()


def test_bus_over_tls_with_password_and_db(spindle, monkeypatch, tls_redis, certs):  # noqa: F811
    monkeypatch.delenv("BUS_SPEC", raising=False)
    spec = "rediss://:%s@localhost:%d/2?tls_ca=%s" % (PASSWORD, tls_redis.port, certs.ca)
    a = spindle("--app", BUS_APP, "--workers", "2", "--bus", spec)
    b = spindle("--app", BUS_APP, "--workers", "1", "--bus", spec)
    t = topic()
    st, first = pub(a, t, "first")
    assert st == 200, first
    ids = [first]
    for i in range(5):
        st, i_d = pub(b if i % 2 else a, t, "m%d" % i)
        assert st == 200
        ids.append(i_d)
    lines, _ = sub(b, t, "0", n=6, timeout_ms=3000)
    assert [d for _, d in lines] == ["first"] + ["m%d" % i for i in range(5)]
    assert ids_increase(ids) and [i for i, _ in lines] == ids
    # In database 2, behind the password: the stream is there, not in 0.
    assert tls_redis.command("XLEN", "spindle:bus:" + t, db=2).strip() == b":6"
    assert tls_redis.command("EXISTS", "spindle:bus:" + t).strip() == b":0"
    assert "over TLS" in a.stderr()


def test_bus_refuses_a_server_from_another_ca(spindle, monkeypatch, tls_redis, certs):  # noqa: F811
    monkeypatch.delenv("BUS_SPEC", raising=False)
    other = certs.path("otherca.pem")
    a = spindle("--app", BUS_APP, "--workers", "1", "--bus",
                "rediss://:%s@localhost:%d/2?tls_ca=%s" % (PASSWORD, tls_redis.port, other))
    st, body = pub(a, topic(), "x")
    assert st == 503, body
    err = a.stderr()
    assert "TLS to Redis at localhost:%d failed" % tls_redis.port in err, err
    assert "certificate verify failed" in err


def test_bus_wrong_password_is_named(spindle, monkeypatch, tls_redis, certs):  # noqa: F811
    monkeypatch.delenv("BUS_SPEC", raising=False)
    a = spindle("--app", BUS_APP, "--workers", "1", "--bus",
                "rediss://:nope@localhost:%d?tls_ca=%s" % (tls_redis.port, certs.ca))
    assert pub(a, topic(), "x")[0] == 503
    assert "refused the password" in a.stderr()


def test_sessions_over_tls_with_password_and_db(spindle, monkeypatch, tls_redis, certs, tmp_path):  # noqa: F811
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(24).hex().encode() + b"\n")
    monkeypatch.setenv("SESSIONS_STORE", "rediss://:%s@localhost:%d/3?tls_ca=%s"
                       % (PASSWORD, tls_redis.port, certs.ca))
    monkeypatch.setenv("SESSIONS_SECRET", str(secret))
    a, b = spindle("--app", SESS_APP, "--workers", "2"), spindle("--app", SESS_APP)
    jar = tmp_path / "a.jar"
    counts = [visit(srv, "/count", jar).count for srv in (a, b, a, b)]
    assert counts == [1, 2, 3, 4], counts  # one session, seen by both instances
    v = visit(a, "/count", jar)
    key = "spindle:session:" + v.fields["id"]
    assert b"count\x005\x00" in tls_redis.command("GET", key, db=3)
    assert tls_redis.command("EXISTS", key).strip() == b":0"
    assert "over TLS" in a.stderr()


def test_sessions_refuse_a_server_from_another_ca(spindle, monkeypatch, tls_redis, certs, tmp_path):  # noqa: F811
    monkeypatch.setenv("SESSIONS_STORE", "rediss://:%s@localhost:%d?tls_ca=%s"
                       % (PASSWORD, tls_redis.port, certs.path("otherca.pem")))
    monkeypatch.delenv("SESSIONS_SECRET", raising=False)
    a = spindle("--app", SESS_APP)
    assert visit(a, "/count", tmp_path / "j").status == 500
    err = a.stderr()
    assert "sessions: TLS to Redis at localhost:%d failed" % tls_redis.port in err, err
    assert "certificate verify failed" in err
