"""--app (issue 5): a C application built as a shared object is loaded and
serves its routes in every worker; a module built against another API
version, a missing file, or a library that is not a spindle module is
refused with exit status 1 and a clear message, before anything listens."""
import glob
import socket
import subprocess

import pytest

from lib.client import Conn

from lib.procutil import (APP_MODULE, APP_WRONG_VERSION, BIN, ROOT, api_version, free_port, http_get, is_refused, w_spindle_factory)


@pytest.fixture
def w_spindle(tmp_path):
    yield from w_spindle_factory(tmp_path)


def test_app_module_serves_its_routes(w_spindle):
    srv = w_spindle("--app", APP_MODULE, workers=2, ready_path="/hello/x")
    assert len(srv.children()) == 2
    r = http_get(srv.addr, "/hello/World")
    assert r.status == 200 and r.body == b"Hello, World!\n", r
    with Conn(srv.addr) as c:
        for name in ("spindle", "a%20b", "x" * 100):
            r = c.exchange("/hello/" + name)
            assert r.status == 200, r
            assert r.body.startswith(b"Hello, ") and r.body.endswith(b"!\n"), r
            assert name.encode()[:3] in r.body
        # The demo routes are not served when an application is loaded.
        assert c.exchange("/").status == 404
        assert c.exchange("/sleep?ms=1").status == 404
    srv.signal(15)
    assert srv.wait_exit(5) == 0


def run_refused(*args):
    port = free_port()
    p = subprocess.run([BIN, "--bind", "127.0.0.1:%d" % port, "--workers", "1"] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=5, cwd=str(ROOT))
    # Nothing is left listening.
    with pytest.raises(OSError) as ei:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert is_refused(ei.value)
    return p.returncode, p.stderr.decode(errors="replace")


def test_wrong_api_version_refused():
    rc, err = run_refused("--app", APP_WRONG_VERSION)
    v = api_version()
    assert rc == 1, (rc, err)
    assert "app_wrong_version.so" in err, err
    assert "API %d" % (v + 1) in err and "API %d" % v in err, \
        "the message must name both versions (%d and %d): %s" % (v + 1, v, err)
    assert err.count("\n") <= 3, err


def test_missing_module_refused(tmp_path):
    missing = str(tmp_path / "no_such_app.so")
    rc, err = run_refused("--app", missing)
    assert rc == 1, (rc, err)
    assert missing in err, err
    assert "No such file" in err or "not found" in err or "cannot" in err, err


def test_relative_missing_module_refused():
    rc, err = run_refused("--app", "no_such_app_module.so")
    assert rc == 1, (rc, err)
    assert "no_such_app_module.so" in err, err


def test_library_that_is_not_a_module_refused():
    libs = sorted(glob.glob("/lib/*/libm.so.6") + glob.glob("/usr/lib/*/libm.so.6"))
    assert libs, "no libm.so.6 found to load"
    rc, err = run_refused("--app", libs[0])
    assert rc == 1, (rc, err)
    assert libs[0] in err and "sp_app_init" in err, err
