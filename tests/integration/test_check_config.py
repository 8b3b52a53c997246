"""--check-config (issue 19): the configuration and the application are
loaded and checked, problems reported, exit 0 or 1, nothing bound or served
(the check passes on a port another socket holds)."""
import socket
import subprocess

from lib.wsgiutil import APPS, BIN, PY, env_for


def run(cmd, timeout=20):
    p = subprocess.run(cmd, cwd=str(APPS), env=env_for(), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stderr


def held_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, "127.0.0.1:%d" % s.getsockname()[1]


def test_python_good_app_and_config_pass_without_binding():
    s, addr = held_port()
    with s:
        rc, err = run([PY, "-m", "spindle", "stall_app:application", "--check-config",
                       "--bind", addr, "--workers", "2"])
    assert rc == 0, err
    assert "nothing wrong found" in err and "listening" not in err, err


def test_python_bad_apps_and_settings_fail_with_a_reason(tmp_path):
    bad_syntax = tmp_path / "broken_mod.py"
    bad_syntax.write_text("def application(environ, start_response)\n    return []\n")
    cases = [
        (["nosuch_module:app"], "No module named 'nosuch_module'"),
        (["stall_app:missing"], "has no attribute 'missing'"),
        (["stall_app:os"], "not callable"),
        (["broken_mod:application", "--chdir", str(tmp_path)], "SyntaxError"),
        (["stall_app:application", "--workers", "many"], "--workers wants a whole number"),
        (["stall_app:application", "--bind", "nowhere"], "--bind nowhere"),
        (["stall_app:application", "--user", "no-such-user-xyz"], "no such user"),
    ]
    for args, why in cases:
        rc, err = run([PY, "-m", "spindle"] + args[:1] + ["--check-config"] + args[1:])
        assert rc == 1, (args, rc, err)
        assert why in err and "nothing wrong found" not in err, (args, err)


def test_binary_checks_its_app_module(tmp_path):
    s, addr = held_port()
    with s:
        rc, err = run([BIN, "--check-config", "--bind", addr])
    assert rc == 0 and "nothing wrong found" in err, err
    rc, err = run([BIN, "--check-config", "--app", str(tmp_path / "none.so")])
    assert rc == 1 and "cannot load" in err, err
    conf = tmp_path / "bad.conf"
    conf.write_text("workers = -3\n")
    rc, err = run([BIN, "--check-config", "--config", str(conf)])
    assert rc == 1 and "--workers" in err, err
