"""Operations hardening (issue "Hardening, round 2"): the pid file is
written without following a planted symlink; Ctrl-C (SIGINT to the whole
process group) stops the master without restarting its workers; --group
alone as root is refused; workers do not dump core (the session key would
be in it) unless --core-dumps; --sessions sqlite:PATH works after --user;
--stats-bind serves the counters on their own address only."""
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from lib.opsutil import free_port, http_get, ops_spindle, read_pid, run_spindle, wait_for  # noqa: F401
from lib.sessutil import APP, sid_of, visit


def test_pid_file_does_not_follow_a_planted_symlink(ops_spindle, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    pidf = tmp_path / "spindle.pid"
    os.symlink(victim, str(pidf) + ".tmp")  # what a local user could plant
    srv = ops_spindle("--pid", str(pidf), workers=1)
    srv.pid_file = str(pidf)
    assert wait_for(lambda: read_pid(pidf) == srv.pid, 3), srv.stderr()
    assert victim.read_text() == "precious\n"
    assert not pidf.is_symlink() and pidf.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("spindle.pid.")] == \
        ["spindle.pid.tmp"], "a temporary file was left behind"


def test_ctrl_c_stops_without_restarting_workers(ops_spindle):
    for _ in range(3):  # a race: the workers exit while the master handles its own SIGINT
        srv = ops_spindle(workers=2)
        os.killpg(srv.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        srv.proc.wait(timeout=6)
        err = srv.stderr()
        assert "recycled" not in err and "starting a new one" not in err, err
        assert "master %d stopped" % srv.pid in err, err


def test_group_without_user_refused_as_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: --group is refused only when it would leave uid 0")
    r = run_spindle(["--bind", "127.0.0.1:0", "--workers", "1", "--group", "nogroup"])
    assert r.returncode != 0 and "--group without --user" in r.stderr, r.stderr


def _dumpable(srv):
    r = http_get(srv.addr, "/dumpable", timeout=2)
    return r.body.decode().strip()


def test_workers_do_not_dump_core_unless_asked(ops_spindle, monkeypatch):
    env = {"SESSIONS_STORE": "memory"}
    srv = ops_spindle("--app", APP, workers=1, env=env)
    assert _dumpable(srv) == "dumpable=0"
    srv = ops_spindle("--app", APP, "--core-dumps", workers=1, env=env)
    assert _dumpable(srv) == "dumpable=1"


def test_sqlite_sessions_after_user_drop(ops_spindle, tmp_path):
    """The database is created by the user the workers run as, not by root
    before the drop (then every session write failed with EACCES)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: --user switches from root")
    nobody = pwd.getpwnam("nobody")
    d = pathlib.Path(tempfile.mkdtemp(prefix="spindle-sess-", dir="/tmp"))  # reachable by nobody
    try:
        os.chown(d, nobody.pw_uid, nobody.pw_gid)
        db = d / "sessions.db"
        srv = ops_spindle("--app", APP, "--sessions", "sqlite:%s" % db, "--user", "nobody",
                          workers=1, env={"SESSIONS_STORE": "memory"})
        jar = tmp_path / "a.jar"
        first = visit(srv, "/count", jar)
        assert first.status == 200 and first.count == 1, (first, srv.stderr())
        second = visit(srv, "/count", jar)
        assert second.count == 2 and second.fields["id"] == first.fields["id"], second
        assert db.stat().st_uid == nobody.pw_uid
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_stats_on_its_own_address_only(ops_spindle):
    """--stats-bind: the counters on their own listener; the main one has
    no /_stats under any spelling that normalizes to it."""
    p2 = free_port()
    srv = ops_spindle("--stats", "/_stats", "--stats-bind", "127.0.0.1:%d" % p2, workers=2)
    for path in ("/_stats", "/%5fstats", "/%5Fstats", "/x/../_stats", "//_stats"):
        assert http_get(srv.addr, path).status == 404, path
    r = http_get(("127.0.0.1", p2), "/_stats")
    assert r.status == 200 and b"spindle_requests_total" in r.body, r
    assert http_get(("127.0.0.1", p2), "/%5fstats").status == 200
    # Only the stats: the application's routes are not on that address.
    assert http_get(("127.0.0.1", p2), "/").status == 404
    assert http_get(srv.addr, "/").status == 200


def test_stats_bind_needs_stats(tmp_path):
    r = run_spindle(["--bind", "127.0.0.1:0", "--stats-bind", "127.0.0.1:0", "--workers", "1"])
    assert r.returncode == 2 and "--stats-bind needs --stats PATH" in r.stderr, r.stderr
