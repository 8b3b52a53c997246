"""Configuration (issue 7): --config FILE ('name = value' lines), SPINDLE_*
environment variables, precedence flags > env > file > defaults as printed by
--print-config and as the server behaves, errors naming file and line, and
HUP re-reading the file.
"""
import re
import signal
import time

from lib.client import Conn, HTTPError

from lib.opsutil import (free_port, http_get, ops_spindle, pid_alive, run_spindle, tcp_listen_ports, wait_for)  # noqa: F401


def _settings(out):
    """--print-config output -> {name: [(value, source)]}."""
    got = {}
    for ln in out.splitlines():
        m = re.match(r"^([a-z-]+) = (.*?)  # (default|config file|environment|flag)$", ln)
        if m:
            got.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
    return got


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_print_config_sources_and_precedence(tmp_path):
    p1, p2, p3, p4 = "127.0.0.1:18001", "127.0.0.1:18002", "127.0.0.1:18003", "127.0.0.1:18004"
    cfg = _write(tmp_path / "spindle.conf",
                 "# a comment\n\nkeepalive-timeout = 7\n  bind = %s\nbind=%s   \n"
                 "max-requests = \"50\"\nworkers = 3  \n" % (p1, p2))
    # Defaults only.
    r = run_spindle(["--print-config"])
    assert r.returncode == 0, r.stderr
    s = _settings(r.stdout)
    assert s["bind"] == [("127.0.0.1:8080", "default")], r.stdout
    assert "keepalive-timeout" not in s or s["keepalive-timeout"][0][1] == "default", r.stdout
    # The file.
    r = run_spindle(["--config", cfg, "--print-config"])
    assert r.returncode == 0, r.stderr
    s = _settings(r.stdout)
    assert s["keepalive-timeout"] == [("7", "config file")], r.stdout
    assert s["bind"] == [(p1, "config file"), (p2, "config file")], r.stdout
    assert s["max-requests"] == [("50", "config file")]
    assert s["workers"] == [("3", "config file")]
    # The environment overrides the file (SPINDLE_BIND: a list).
    env = {"SPINDLE_KEEPALIVE_TIMEOUT": "3", "SPINDLE_BIND": "%s %s" % (p3, p4)}
    r = run_spindle(["--config", cfg, "--print-config"], env=env)
    s = _settings(r.stdout)
    assert s["keepalive-timeout"] == [("3", "environment")], r.stdout
    assert s["bind"] == [(p3, "environment"), (p4, "environment")], r.stdout
    assert s["workers"] == [("3", "config file")]
    # Flags override both.
    r = run_spindle(["--config", cfg, "--keepalive-timeout", "4", "--bind", p4, "--print-config"], env=env)
    s = _settings(r.stdout)
    assert s["keepalive-timeout"] == [("4", "flag")], r.stdout
    assert s["bind"] == [(p4, "flag")], r.stdout
    assert s["max-requests"] == [("50", "config file")]
    # SPINDLE_CONFIG names the file too; --config wins over it.
    r = run_spindle(["--print-config"], env={"SPINDLE_CONFIG": cfg})
    assert _settings(r.stdout)["keepalive-timeout"] == [("7", "config file")], r.stdout
    other = _write(tmp_path / "other.conf", "keepalive-timeout = 9\n")
    r = run_spindle(["--config", other, "--print-config"], env={"SPINDLE_CONFIG": cfg})
    assert _settings(r.stdout)["keepalive-timeout"] == [("9", "config file")], r.stdout


def test_unknown_name_names_file_and_line(tmp_path):
    cfg = _write(tmp_path / "bad.conf", "# ok\nworkers = 1\nno-such-setting = 5\n")
    r = run_spindle(["--config", cfg])
    assert r.returncode == 2, r
    assert "%s:3" % cfg in r.stderr and "no-such-setting" in r.stderr, r.stderr
    cfg = _write(tmp_path / "bad2.conf", "workers = 1\nthis line has no equals sign\n")
    r = run_spindle(["--config", cfg])
    assert r.returncode == 2 and "%s:2" % cfg in r.stderr, r
    # A meta flag is not a setting.
    cfg = _write(tmp_path / "bad3.conf", "config = /etc/other\n")
    r = run_spindle(["--config", cfg])
    assert r.returncode == 2 and "%s:1" % cfg in r.stderr, r
    # A bad value names the setting.
    cfg = _write(tmp_path / "bad4.conf", "\nkeepalive-timeout = soon\n")
    r = run_spindle(["--config", cfg])
    assert r.returncode == 2 and "keepalive-timeout" in r.stderr, r
    r = run_spindle(["--config", str(tmp_path / "missing.conf")])
    assert r.returncode == 2 and "missing.conf" in r.stderr, r
    r = run_spindle(["--bind", "127.0.0.1:%d" % free_port()], env={"SPINDLE_WORKERS": "many"})
    assert r.returncode == 2 and "workers" in r.stderr.lower() and "many" in r.stderr, r


def _refused(port):
    try:
        http_get(("127.0.0.1", port), "/", timeout=1)
    except ConnectionRefusedError:
        return True
    except (OSError, HTTPError):
        return False
    return False


def test_precedence_decides_which_port_is_bound(ops_spindle, tmp_path):
    pf, pe, pflag = free_port(), free_port(), free_port()
    cfg = _write(tmp_path / "spindle.conf", "bind = 127.0.0.1:%d\nworkers = 1\n" % pf)
    # The file's bind.
    a = ops_spindle("--config", cfg, workers=None, bind=False, port=pf)
    assert tcp_listen_ports(a.pid) == {pf}
    a.signal(signal.SIGTERM)
    assert a.wait_exit(5) == 0
    # The environment's bind wins over the file's.
    b = ops_spindle("--config", cfg, workers=None, bind=False, port=pe,
                    env={"SPINDLE_BIND": "127.0.0.1:%d" % pe})
    assert tcp_listen_ports(b.pid) == {pe}
    assert _refused(pf)
    b.signal(signal.SIGTERM)
    assert b.wait_exit(5) == 0
    # The flag's wins over both.
    c = ops_spindle("--config", cfg, "--bind", "127.0.0.1:%d" % pflag, workers=None, bind=False,
                    port=pflag, env={"SPINDLE_BIND": "127.0.0.1:%d" % pe})
    assert tcp_listen_ports(c.pid) == {pflag}
    assert _refused(pf) and _refused(pe)
    assert len(c.workers_now()) == 1  # workers = 1 from the file still applies


def _idle_close_after(addr, limit):
    """Seconds from a response until the server closes the idle connection."""
    with Conn(addr, timeout=limit) as c:
        r = c.exchange("/")
        assert r.status == 200 and not r.connection_close()
        t0 = time.monotonic()
        how = c.wait_eof(limit)
        took = time.monotonic() - t0
    assert how == "eof", "idle connection: %s after %.2f s" % (how, took)
    return took


def test_keepalive_timeout_from_file_env_flag(ops_spindle, tmp_path):
    cfg = _write(tmp_path / "spindle.conf", "keepalive-timeout = 0.4\n")
    a = ops_spindle("--config", cfg, workers=1, fast=False)
    t = _idle_close_after(a.addr, 4)
    assert 0.25 <= t < 1.2, t
    b = ops_spindle("--config", cfg, workers=1, fast=False, env={"SPINDLE_KEEPALIVE_TIMEOUT": "1.5"})
    t = _idle_close_after(b.addr, 4)
    assert 1.3 <= t < 2.4, t


def test_hup_rereads_the_config_file(ops_spindle, tmp_path):
    conf = tmp_path / "spindle.conf"
    _write(conf, "keepalive-timeout = 0.5\n")
    srv = ops_spindle("--config", str(conf), workers=1, fast=False)
    before = _idle_close_after(srv.addr, 4)
    assert 0.3 <= before < 1.3, before
    old = srv.workers_now()
    _write(conf, "# edited\nkeepalive-timeout = 2\n")
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: srv.workers_now() and not (srv.workers_now() & old), 5), srv.stderr()
    assert wait_for(lambda: not any(pid_alive(p) for p in old), 5)
    after = _idle_close_after(srv.addr, 5)
    assert 1.8 <= after < 3.0, "keepalive-timeout after HUP: closed after %.2f s, want ~2" % after
    assert "reload" in srv.stderr()


def test_hup_with_a_broken_config_keeps_serving(ops_spindle, tmp_path):
    conf = tmp_path / "spindle.conf"
    _write(conf, "keepalive-timeout = 0.5\n")
    srv = ops_spindle("--config", str(conf), workers=1, fast=False)
    old = srv.workers_now()
    _write(conf, "keepalive-timeout = 0.5\nbogus-name = 1\n")
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: "configuration has errors" in srv.stderr(), 3), srv.stderr()
    assert "bogus-name" in srv.stderr() and "%s:2" % conf in srv.stderr()
    time.sleep(0.3)
    assert srv.workers_now() == old, "the running workers must be kept"
    assert http_get(srv.addr, "/").status == 200
    assert srv.proc.poll() is None


def test_hup_applies_the_reloadable_rows_and_names_the_others(ops_spindle, tmp_path):
    """HUP applies the reloadable settings (keepalive-timeout); a changed
    setting that is not (root, access-log-format) is named as needing a
    restart, and the running value stays."""
    for d in ("a", "b"):  # a root serves its index at / (no demo routes beside it)
        (tmp_path / d).mkdir()
        (tmp_path / d / "index.html").write_text("root %s\n" % d)
    conf = tmp_path / "spindle.conf"
    _write(conf, "keepalive-timeout = 0.5\nroot = %s\n" % (tmp_path / "a"))
    srv = ops_spindle("--config", str(conf), workers=1, fast=False)
    old = srv.workers_now()
    _write(conf, "keepalive-timeout = 2\nroot = %s\naccess-log-format = %%h\n" % (tmp_path / "b"))
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: srv.workers_now() and not (srv.workers_now() & old), 5), srv.stderr()
    err = srv.stderr()
    assert "--root changed: it takes a restart to apply" in err, err
    assert "--access-log-format changed: it takes a restart to apply" in err, err
    assert "--keepalive-timeout changed" not in err and "--bind changed" not in err, err
    assert wait_for(lambda: not any(pid_alive(p) for p in old), 5)
    after = _idle_close_after(srv.addr, 5)
    assert 1.8 <= after < 3.0, "keepalive-timeout after HUP: closed after %.2f s, want ~2" % after
