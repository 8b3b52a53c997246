"""`python3 -m spindle`'s flags come from the one flag table: the WSGI ones
(--preload, --root-path, --max-concurrent-app-calls) parsed on the C side,
--chdir before the import, --root serving the files that exist beside the
application, --sessions set up (and checked; spindle.session uses it:
test_py_sessions.py), and flags of the spindle binary refused."""
import os
import re
import signal
import sqlite3
import subprocess

import pytest

from lib.wsgiutil import APPS, PY, env_for, free_port, wait_for, wsgi_server  # noqa: F401

from test_cli import _table_flags

APP = '''
import os
IMPORTED_IN = os.getpid()

def application(environ, start_response):
    body = ("app %s %s|%s|%s imported-in-worker=%s" % (
        environ["REQUEST_METHOD"], environ["SCRIPT_NAME"], environ["PATH_INFO"],
        os.path.basename(os.getcwd()), IMPORTED_IN == os.getpid())).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
'''


@pytest.fixture
def appdir(tmp_path):
    """A directory holding flags_app.py (not on PYTHONPATH: only --chdir finds
    it) and a static tree for --root."""
    d = tmp_path / "appdir"
    d.mkdir()
    (d / "flags_app.py").write_text(APP)
    www = tmp_path / "www"
    (www / "docs").mkdir(parents=True)
    (www / "empty").mkdir()
    (www / "hello.txt").write_text("hello from a file\n")
    (www / "docs" / "index.html").write_text("<p>docs index</p>\n")
    return d


def run(args, timeout=20, cwd=APPS, env=None):
    return subprocess.run([PY, "-m", "spindle"] + args, env=env_for(env), cwd=str(cwd),
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_help_lists_every_python_row_of_the_table():
    out = run(["--help"]).stdout.decode()
    listed = set(re.findall(r"^\s+(--[a-z0-9-]+)", out, re.M))
    want = _table_flags("ROLE_PY")
    assert "--preload" in want and "--root-path" in want and "--bind" in want
    missing = [f for f in want if f not in listed]
    assert not missing, missing
    assert out.startswith("usage: python3 -m spindle MODULE:CALLABLE")
    assert "Python options:" in out  # WSGI and ASGI alike


def test_chdir_before_the_import(wsgi_server, appdir):
    s = wsgi_server("flags_app:application", chdir=appdir)
    r = s.get("/a/b")
    assert r.status == 200, r
    assert r.body == b"app GET |/a/b|appdir imported-in-worker=True", r.body


def test_preload_imports_in_the_master_after_chdir(wsgi_server, appdir):
    s = wsgi_server("flags_app:application", "--preload", chdir=appdir)
    r = s.get("/x")
    assert r.body == b"app GET |/x|appdir imported-in-worker=False", r.body


def test_preload_import_error_is_one_clear_line(appdir):
    r = run(["flags_app:nope", "--preload", "--chdir", str(appdir), "--bind",
             "127.0.0.1:%d" % free_port(), "--workers", "1"])
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert ("spindle: cannot load the application 'flags_app:nope': AttributeError: module "
            "'flags_app' has no attribute 'nope'") in err, err
    assert "nope" in err and "Traceback" not in err


def test_root_path_flag_and_run_keyword(wsgi_server, appdir):
    s = wsgi_server("flags_app:application", "--root-path", "/mount/", chdir=appdir)
    r = s.get("/mount/page")
    assert r.body.startswith(b"app GET /mount|/page|"), r.body


def test_max_concurrent_app_calls_is_parsed_by_the_table(appdir):
    r = run(["flags_app:application", "--max-concurrent-app-calls", "0"])
    assert r.returncode == 2
    assert b"--max-concurrent-app-calls wants a whole number from 1 up, not '0'" in r.stderr


def test_max_concurrent_app_calls_serves(wsgi_server, appdir):
    s = wsgi_server("flags_app:application", "--max-concurrent-app-calls", "1", chdir=appdir)
    assert s.get("/").status == 200


def test_root_serves_files_that_exist_and_the_app_the_rest(wsgi_server, appdir):
    www = appdir.parent / "www"
    s = wsgi_server("flags_app:application", "--root", str(www), chdir=appdir)
    r = s.get("/hello.txt")
    assert r.status == 200 and r.body == b"hello from a file\n", r
    assert r.header("Content-Type", "").startswith("text/plain")
    r = s.get("/hello.txt", method="HEAD")
    assert r.status == 200 and r.header("Content-Length") == "18", r
    # A directory with index.html: redirected to its slash, then the index.
    r = s.get("/docs")
    assert r.status == 301 and r.header("Location") == "/docs/", r
    assert s.get("/docs/").body == b"<p>docs index</p>\n"
    # What names no file goes to the application: missing paths, a directory
    # without index.html, the root itself, and every method but GET/HEAD.
    assert s.get("/missing.txt").body.startswith(b"app GET |/missing.txt|")
    assert s.get("/empty").body.startswith(b"app GET |/empty|")
    assert s.get("/empty/").body.startswith(b"app GET |/empty/|")
    assert s.get("/").body.startswith(b"app GET |/|")
    assert s.get("/hello.txt/").body.startswith(b"app GET |/hello.txt/|")
    r = s.get("/hello.txt", method="POST", body=b"x")
    assert r.body.startswith(b"app POST |/hello.txt|"), r.body


def test_root_that_is_not_a_directory_fails_the_start(appdir):
    r = run(["flags_app:application", "--chdir", str(appdir), "--root", "/nonexistent-dir",
             "--bind", "127.0.0.1:%d" % free_port(), "--workers", "1"])
    assert r.returncode == 1
    assert b"--root /nonexistent-dir" in r.stderr


def test_sessions_store_is_set_up(wsgi_server, appdir, tmp_path):
    db = tmp_path / "sessions.db"
    s = wsgi_server("flags_app:application", "--sessions", "sqlite:%s" % db, chdir=appdir)
    assert s.get("/").status == 200
    assert db.exists()  # opened and checked in the master
    sqlite3.connect(str(db)).close()
    assert "cannot use it yet" not in s.stderr()  # spindle.session reaches it


def test_bad_sessions_store_fails_the_start(appdir):
    r = run(["flags_app:application", "--chdir", str(appdir), "--sessions", "nowhere:x",
             "--bind", "127.0.0.1:%d" % free_port(), "--workers", "1"])
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "--sessions nowhere:x" in err and "unknown store" in err


def test_binary_flags_are_refused_from_a_flag():
    r = run(["flags_app:application", "--app", "x.so"])
    assert r.returncode == 2
    assert b"--app loads C modules into the spindle binary" in r.stderr


def test_binary_rows_in_a_file_or_the_environment_are_skipped_with_a_warning(tmp_path):
    conf = tmp_path / "shared.conf"
    conf.write_text("app = build/app.so\nroot-path = /x\n")
    r = run(["flags_app:application", "--config", str(conf), "--print-config"],
            env={"SPINDLE_APP": "other.so"})
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, err
    assert "%s:1: app applies to the spindle binary only; skipped" % conf in err, err
    assert "SPINDLE_APP: app applies to the spindle binary only; skipped" in err, err
    assert "root-path = /x  # config file" in out
    assert "app =" not in out and "# app:" not in out


def test_hup_reparses_the_python_rows(wsgi_server, appdir, tmp_path):
    """The reload of python3 -m spindle is the binary's: a changed row that
    is not reloadable (--root-path) is named and keeps its running value."""
    conf = tmp_path / "py.conf"
    conf.write_text("root-path = /a\n")
    s = wsgi_server("flags_app:application", "--config", str(conf), chdir=appdir)
    old = set(s.worker_pids())
    conf.write_text("root-path = /b\n")
    os.kill(s.pid, signal.SIGHUP)
    assert wait_for(lambda: "--root-path changed: it takes a restart to apply" in s.stderr(), 5)
    assert wait_for(lambda: s.worker_pids() and not set(s.worker_pids()) & old, 10), s.stderr()
    assert s.get("/a/x").body.startswith(b"app GET /a|/x|")
