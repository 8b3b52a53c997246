"""`python3 -m spindle`: --help, a bad MODULE:CALLABLE, and spindle.run()
from a script (tests/fixtures/wsgi/run_script.py)."""
import re
import subprocess

import pytest

from lib.wsgiutil import APPS, BIN, PY, env_for, free_port, wsgi_server  # noqa: F401


def run(args, timeout=20, **kw):
    return subprocess.run([PY, "-m", "spindle"] + args, env=env_for(), cwd=str(APPS),
                          capture_output=True, timeout=timeout, **kw)


def test_help_lists_wsgi_and_binary_flags():
    r = run(["--help"])
    assert r.returncode == 0, r
    out = r.stdout.decode() + r.stderr.decode()
    for flag in ("--preload", "--root-path", "--max-concurrent-app-calls", "--chdir"):
        assert flag in out, flag
    binary = subprocess.run([BIN, "--help"], capture_output=True, timeout=10)
    flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", binary.stdout.decode() + binary.stderr.decode(),
                           re.M))
    assert {"--bind", "--workers", "--header-timeout", "--max-body-size"} <= flags, flags
    missing = [f for f in sorted(flags) if f not in out]
    assert not missing, missing
    assert "MODULE:CALLABLE" in out


@pytest.mark.parametrize("preload", [False, True])
@pytest.mark.parametrize("spec,words", [
    ("no_such_module_xyz:application", ["no_such_module_xyz"]),
    ("errors_app:no_such_callable", ["no_such_callable"]),
    ("errors_app:ROUTES", ["not callable"]),
])
def test_bad_app_spec_is_a_clear_error(spec, words, preload):
    port = free_port()
    args = [spec, "--bind", "127.0.0.1:%d" % port, "--workers", "1"]
    if preload:
        args.append("--preload")
    r = run(args, timeout=20)
    err = r.stderr.decode()
    assert r.returncode != 0, err
    for w in words:
        assert w in err, err
    assert "starting a new one" not in err      # no respawn loop


def test_first_argument_must_name_the_app():
    r = run(["--bind", "127.0.0.1:1"])
    assert r.returncode != 0
    assert b"MODULE:CALLABLE" in r.stderr


def test_spindle_run_from_a_script(wsgi_server):
    s = wsgi_server("run_script", workers=1, cmd=[PY, str(APPS / "run_script.py"), "{port}"])
    r = s.get("/x/y")
    assert r.status == 200 and r.body == b"served by spindle.run, path /x/y"
    assert len(s.worker_pids()) == 1
    assert s.stop() == 0
