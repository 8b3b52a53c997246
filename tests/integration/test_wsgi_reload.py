"""--reload (issue 19): a change to a source file of an imported module (or
a --reload-extra-file) restarts the workers through the graceful reload;
a change that fails to import is logged in one line (file and line) while the
previous code keeps serving, until the next change fixes it."""
import os
import re
import shutil
import signal
import subprocess
import time

from lib.procutil import APP_BLOCKING, APP_MODULE, APP_WRONG_VERSION, BIN, http_get
from lib.proctools import free_port
from lib.client import HTTPError
from lib.wsgiutil import WsgiServer, wait_for

APP = '''import helper_mod
import os


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [helper_mod.BODY + open(os.path.join(os.path.dirname(__file__), "extra.txt"),
                                   "rb").read()]
'''


def body(srv):
    try:
        return srv.get("/", timeout=3).body
    except OSError:
        return None


def serves(srv, want, timeout=6):
    """The new body served, and the master done replacing the workers."""
    n = srv.stderr().count("the new workers serve")
    return wait_for(lambda: body(srv) == want, timeout) and \
        wait_for(lambda: srv.stderr().count("the new workers serve") > n, timeout)


def test_reload_on_change_keeps_serving_through_a_broken_edit(tmp_path):
    d = tmp_path / "app"
    d.mkdir()
    (d / "reload_app.py").write_text(APP)
    helper = d / "helper_mod.py"
    helper.write_text('BODY = b"one"\n')
    extra = d / "extra.txt"
    extra.write_text("-a")
    # Not the wsgi_server fixture: this test provokes a traceback on purpose.
    srv = WsgiServer("reload_app:application", ["--reload", "--reload-extra-file", str(extra),
                                                "--graceful-timeout", "1"],
                     workers=2, chdir=d, logdir=tmp_path).start()
    try:
        assert body(srv) == b"one-a", srv.stderr()
        time.sleep(0.3)  # the workers reported their files; the master watches them
        helper.write_text('BODY = b"two"\n')
        assert serves(srv, b"two-a"), srv.stderr()
        assert "reload: %s changed" % helper in srv.stderr()

        helper.write_text('BODY = b"three\n')  # a syntax error
        assert wait_for(lambda: "could not load the changed code" in srv.stderr(), 6), \
            srv.stderr()
        err = srv.stderr()
        # One line naming the file and line (the traceback: --log-level debug).
        assert re.search(r"critical: cannot load the application 'reload_app:application': "
                         r"SyntaxError: .*\(helper_mod\.py, line 1\)", err), err
        for _ in range(5):
            assert body(srv) == b"two-a", srv.stderr()  # the previous code serves on
        assert srv.alive()

        helper.write_text('BODY = b"four"\n')
        assert serves(srv, b"four-a"), srv.stderr()
        extra.write_text("-b")  # not a module: watched because it was named
        assert serves(srv, b"four-b"), srv.stderr()
    finally:
        assert srv.stop() == 0, srv.stderr()


def _status(port, path):
    try:
        return http_get(("127.0.0.1", port), path, timeout=3).status
    except (OSError, HTTPError):
        return None


def _kill_masters(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, TypeError):
            pass


def test_binary_reload_reexecutes_on_a_new_app_module(tmp_path):
    """The binary's --app module is loaded by the master before the fork:
    a change re-executes the master (the USR2 path); a module that fails to
    load leaves the running one serving."""
    so = tmp_path / "app.so"
    shutil.copy(APP_BLOCKING, so)
    port, pidf = free_port(), tmp_path / "pid"
    log = open(tmp_path / "bin.stderr", "wb")
    p = subprocess.Popen([os.path.abspath(BIN), "--app", str(so), "--reload", "--bind",
                          "127.0.0.1:%d" % port, "--workers", "1", "--pid", str(pidf),
                          "--graceful-timeout", "1"], stdout=log, stderr=log,
                         start_new_session=True)
    masters = [p.pid]
    err = lambda: (tmp_path / "bin.stderr").read_text()  # noqa: E731
    try:
        assert wait_for(lambda: _status(port, "/pid") == 200, 5), err()
        time.sleep(0.3)
        for bad_then_good in (APP_WRONG_VERSION, APP_MODULE):
            tmp = tmp_path / "next.so"
            shutil.copy(bad_then_good, tmp)
            os.rename(tmp, so)  # as a build replaces it
            if bad_then_good == APP_WRONG_VERSION:
                assert wait_for(lambda: "this master keeps serving" in err(), 5), err()
                assert "was built against spindle API" in err()
                assert _status(port, "/pid") == 200, err()  # the old module serves on
        assert wait_for(lambda: _status(port, "/hello/x") == 200, 6), err()
        assert "re-executing the master" in err()
        # The old master's worker may still take a connection for a moment after
        # the new one serves, until it is told to stop: wait for the old master.
        assert wait_for(lambda: p.poll() is not None, 5), err()  # the old master drained
        assert _status(port, "/pid") == 404
        masters.append(int(pidf.read_text()))
    finally:
        _kill_masters(masters)
        p.wait(5)
        log.close()


def test_reload_extra_file_repeats_and_prints():
    out = subprocess.run([BIN, "--reload", "--reload-extra-file", "a.html", "--reload-extra-file",
                          "b.txt", "--print-config"], capture_output=True, text=True, timeout=5)
    assert out.returncode == 0, out.stderr
    # A repeatable row: one line per value, as --bind and --static-map print.
    assert "reload-extra-file = a.html  # flag\nreload-extra-file = b.txt  # flag" in out.stdout, \
        out.stdout
    assert "reload = true  # flag" in out.stdout, out.stdout
