"""What spindle says at start-up, with the real binary and `python -m
spindle`: an application that cannot load in one line (the user's file and
line, the interface when known), the banner, app factories, --env-file,
--log-config and --error-log-format json. Servers run on free 127.0.0.1
ports and are stopped by PID; every wait is bounded."""
import json
import re
import subprocess
import time

import pytest

from lib.backend import expected_backend
from lib.proctools import wait_for
from lib.wsgiutil import APPS, BIN, PY, ROOT, env_for, free_port, wsgi_server  # noqa: F401


def run(args, cwd=APPS, timeout=20, env=None, cmd=None):
    """One run to its end (a failing load stops the master): (rc, stderr)."""
    r = subprocess.run((cmd or [PY, "-m", "spindle"]) + args, env=env_for(env), cwd=str(cwd),
                       capture_output=True, timeout=timeout)
    return r.returncode, r.stderr.decode()


def serve_args():
    return ["--bind", "127.0.0.1:%d" % free_port(), "--workers", "1"]


# ---- 1. a failed load is one line ------------------------------------------------------------

@pytest.fixture
def broken(tmp_path):
    (tmp_path / "app.py").write_text("import no_such_module_xyz\n")
    return tmp_path


def test_worker_import_error_is_one_line_with_the_users_line(broken):
    rc, err = run(["app:app", "--interface", "asgi"] + serve_args(), cwd=broken)
    assert rc != 0, err
    line = ("critical: cannot load the ASGI application 'app:app': ModuleNotFoundError: "
            "No module named 'no_such_module_xyz' (app.py, line 1)")
    assert line in err, err
    assert "Traceback" not in err and "_load.py" not in err, err
    assert "starting a new one" not in err and "could not start" in err, err  # the master stops


def test_the_interface_unknown_yet_is_the_application(broken):
    rc, err = run(["app:app"] + serve_args(), cwd=broken)
    assert rc != 0
    assert "cannot load the application 'app:app': ModuleNotFoundError:" in err, err
    assert "WSGI application" not in err, err
    rc, err = run(["app:app", "--interface", "wsgi", "--check-config"], cwd=broken)
    assert rc == 1
    assert ("spindle: cannot load the WSGI application 'app:app': ModuleNotFoundError: No module "
            "named 'no_such_module_xyz' (app.py, line 1)") in err, err


def test_debug_log_level_adds_the_whole_traceback(broken):
    rc, err = run(["app:app", "--log-level", "debug"] + serve_args(), cwd=broken)
    assert rc != 0
    assert "cannot load the application 'app:app'" in err, err
    assert "debug: Traceback (most recent call last):" in err, err
    assert 'app.py", line 1' in err, err


def test_syntax_error_names_its_file_and_line(tmp_path):
    (tmp_path / "bad.py").write_text("x = 1\ndef application(environ, start_response)\n")
    rc, err = run(["bad:application", "--check-config"], cwd=tmp_path)
    assert rc == 1
    assert re.search(r"spindle: cannot load the application 'bad:application': SyntaxError: .* "
                     r"\(bad\.py, line 2\)\n", err), err


@pytest.mark.parametrize("mode", ["worker", "preload", "check"])
def test_missing_attribute_lists_what_the_module_has(mode):
    args = {"worker": serve_args(), "preload": ["--preload"] + serve_args(),
            "check": ["--check-config"]}[mode]
    rc, err = run(["msg_app:ap"] + args)
    assert rc != 0
    assert ("cannot load the application 'msg_app:ap': AttributeError: module 'msg_app' has no "
            "attribute 'ap'; it has: app, asgi_app, create_app\n") in err, err
    assert "Traceback" not in err
    lines = [l for l in err.splitlines() if "cannot load" in l]
    assert len(lines) == 1, err


def test_not_callable_is_one_line():
    rc, err = run(["msg_app:NOT_CALLABLE"] + serve_args())
    assert rc != 0
    assert ("cannot load the application 'msg_app:NOT_CALLABLE': it is an int, which is not "
            "callable") in err, err


# ---- 2. the banner ---------------------------------------------------------------------------

def banners(err):
    return [l for l in err.splitlines() if re.search(r"info: spindle( [\w.~-]+)? serving ", l)]


def test_banner_once_from_the_master_and_the_interface_once(wsgi_server):
    s = wsgi_server("msg_app:app", workers=2)
    assert s.get("/").body == b"msg_app"
    err = s.stderr()
    b = banners(err)
    assert len(b) == 1, err
    assert "[%d] info: spindle" % s.pid in b[0], b
    assert b[0].endswith("serving msg_app:app (WSGI or ASGI, as the workers find it) on "
                         "http://127.0.0.1:%d with 2 workers, %s" % (s.port, expected_backend())), b
    # The worker that wins the announce may write its line after the other
    # one has served this request: wait for it (bounded), then for no second.
    line = "msg_app:app is a WSGI application"
    wait_for(lambda: line in s.stderr(), 10)
    time.sleep(0.3)
    assert s.stderr().count(line) == 1, s.stderr()


def test_banner_knows_the_interface_with_preload(wsgi_server):
    s = wsgi_server("msg_app:asgi_app", "--preload", workers=1)
    assert s.get("/").body == b"asgi msg_app"
    b = banners(s.stderr())
    assert len(b) == 1 and b[0].endswith("serving msg_app:asgi_app (ASGI) on http://127.0.0.1:%d "
                                         "with 1 worker, %s" % (s.port, expected_backend())), b


def test_banner_of_the_binary(wsgi_server, tmp_path):
    sock = tmp_path / "s.sock"
    s = wsgi_server("binary", workers=1, cmd=[BIN, "--bind", "127.0.0.1:{port}", "--bind",
                                              "unix:%s" % sock, "--workers", "1"])
    b = banners(s.stderr())
    assert len(b) == 1 and b[0].endswith(
        "spindle %s serving the demo routes (C) on http://127.0.0.1:%d, unix:%s with 1 worker, %s"
        % ((ROOT / "VERSION").read_text().strip(), s.port, sock, expected_backend())), b
    site = tmp_path / "site"
    site.mkdir()
    s2 = wsgi_server("binary-root", workers=0, cmd=[BIN, "--bind", "127.0.0.1:{port}", "--root",
                                                    str(site), "--workers", "0"])
    b = banners(s2.stderr())
    assert len(b) == 1 and ("serving the files of %s (static) on http://127.0.0.1:%d in this "
                            "process (--workers 0), %s" % (site, s2.port, expected_backend())) in b[0], b


def test_banner_says_https_for_tls(wsgi_server, tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost", "-days", "1",
                    "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem")],
                   check=True, capture_output=True, timeout=20)
    s = wsgi_server("msg_app:app", "--certfile", str(tmp_path / "c.pem"), "--keyfile",
                    str(tmp_path / "k.pem"), workers=1)
    b = banners(s.stderr())
    assert len(b) == 1 and "on https://127.0.0.1:%d with" % s.port in b[0], b


# ---- 3. factories ----------------------------------------------------------------------------

@pytest.mark.parametrize("preload", [False, True])
def test_factory_flag_and_call_form(wsgi_server, preload):
    extra = ("--preload",) if preload else ()
    s = wsgi_server("msg_app:create_app", "--factory", *extra)
    assert s.get("/").body == b"made by the factory"
    s = wsgi_server("msg_app:create_app('said in the spec')", *extra)
    assert s.get("/").body == b"said in the spec"


def test_factory_that_returns_no_app_is_one_line():
    rc, err = run(["msg_app:NOT_CALLABLE", "--factory", "--check-config"])
    assert rc == 1
    assert ("cannot load the application 'msg_app:NOT_CALLABLE': --factory: the factory is an "
            "int, which cannot be called") in err, err


def test_factory_is_no_longer_answered_differently():
    rc, err = run(["--factory", "--help"], cmd=[BIN])
    assert rc == 2 and "applies to python3 -m spindle only" in err, err


# ---- 4. --env-file ---------------------------------------------------------------------------

def test_env_file_sets_the_app_and_spindle_settings(wsgi_server, tmp_path):
    env_file = tmp_path / "app.env"
    env_file.write_text("# settings\n\n"
                        "MSG_FROM_FILE=plain value   # a comment\n"
                        "MSG_QUOTED=\"a # kept\"\n"
                        "export MSG_EXPORTED='single $quoted'\n"
                        "MSG_BOTH=from the file\n"
                        "SPINDLE_WORKERS=2\n")
    s = wsgi_server("msg_app:app", "--env-file", str(env_file), workers=2,
                    env={"MSG_BOTH": "from the environment"})
    assert s.get("/env").body == (b"MSG_FROM_FILE=plain value|MSG_QUOTED=a # kept|"
                                  b"MSG_BOTH=from the environment|"
                                  b"MSG_EXPORTED=single $quoted")
    # The fixture passes --workers itself: the file's SPINDLE_WORKERS is seen here.
    out = subprocess.run([PY, "-m", "spindle", "msg_app:app", "--env-file", str(env_file),
                          "--print-config"], env=env_for(), cwd=str(APPS), capture_output=True,
                         timeout=20).stdout.decode()
    assert "workers = 2  # environment" in out, out


def test_bad_env_file_is_refused(tmp_path):
    f = tmp_path / "bad.env"
    f.write_text("GOOD=1\nthis is not a setting\n")
    rc, err = run(["msg_app:app", "--env-file", str(f), "--check-config"])
    assert rc == 1 and "--env-file %s:2: want KEY=VALUE" % f in err, err
    rc, err = run(["msg_app:app", "--env-file", str(tmp_path / "none.env"), "--check-config"])
    assert rc == 1 and "No such file" in err, err


# ---- 5. --log-config and 6. one line format --------------------------------------------------

def test_log_config_applies_before_the_import(wsgi_server, tmp_path):
    conf = tmp_path / "log.json"
    conf.write_text(json.dumps({
        "version": 1,
        "formatters": {"f": {"format": "APPLOG %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"h": {"class": "logging.StreamHandler", "formatter": "f"}},
        "root": {"handlers": ["h"], "level": "INFO"}}))
    s = wsgi_server("msg_app:app", "--log-config", str(conf))
    assert s.get("/hi").body == b"msg_app"
    err = s.stderr()
    assert "APPLOG WARNING msg_app: msg_app imported" in err, err
    assert "APPLOG WARNING msg_app: msg_app serving /hi" in err, err
    assert re.search(r"Z \[\d+\] info: spindle", err), err  # spindle's own lines keep theirs


def test_bad_log_config_is_one_line(tmp_path):
    conf = tmp_path / "log.json"
    conf.write_text("{not json")
    rc, err = run(["msg_app:app", "--log-config", str(conf)] + serve_args())
    assert rc != 0
    assert "critical: --log-config %s: not JSON:" % conf in err, err
    assert "msg_app imported" not in err, err  # before the import: it never happened


def test_error_log_json_lines(wsgi_server, tmp_path):
    s = wsgi_server("binary-json", workers=1, cmd=[BIN, "--bind", "127.0.0.1:{port}",
                                                   "--workers", "1", "--error-log-format",
                                                   "json"])
    lines = [l for l in s.stderr().splitlines() if l]
    objs = [json.loads(l) for l in lines]
    assert objs and all(set(o) == {"time", "level", "pid", "message"} for o in objs), lines
    assert any(o["message"].startswith("spindle") and " serving " in o["message"] and
               o["pid"] == s.pid for o in objs), lines
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", objs[0]["time"]), objs[0]


def test_error_log_json_holds_a_python_load_failure(broken):
    rc, err = run(["app:app", "--error-log-format", "json", "--log-level", "debug"]
                  + serve_args(), cwd=broken)
    assert rc != 0
    objs = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
    crit = [o for o in objs if o["level"] == "critical" and "cannot load" in o["message"]]
    assert crit and crit[0]["message"].endswith("(app.py, line 1)"), err
    assert any(o["level"] == "debug" and o["message"].startswith("Traceback") for o in objs), err
