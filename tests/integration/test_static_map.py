"""--static-map PREFIX=DIR (repeatable), for the spindle binary and python3 -m
spindle alike: the C static server answers under each PREFIX (type, Range,
ETag/304), the longest prefix wins, a missing file is a 404 and another
method a 405 that never reach the application, traversal out of DIR is
refused, every other path still reaches the demo routes or the WSGI app, and
bad maps stop the start with a message naming them."""
import os
import socket
import subprocess

import pytest

from lib.client import Conn

from lib.wsgiutil import BIN, PY, env_for, free_port, wsgi_server  # noqa: F401

CSS = b"body { color: red }\n" * 10
DEEP = b"deeper map\n"
SECRET = b"SECRET outside the maps\n"

APP = '''
SEEN = []

def application(environ, start_response):
    SEEN.append(environ["REQUEST_METHOD"] + " " + environ["PATH_INFO"])
    body = ("app saw: " + ",".join(SEEN)).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
'''


@pytest.fixture
def tree(tmp_path):
    """Two directories to map (one mounted inside the other's prefix), a
    secret beside them and a symlink pointing at it."""
    (tmp_path / "secret.txt").write_bytes(SECRET)
    assets = tmp_path / "assets"
    (assets / "css").mkdir(parents=True)
    (assets / "css" / "site.css").write_bytes(CSS)
    (assets / "escape.txt").symlink_to(tmp_path / "secret.txt")
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "note.txt").write_bytes(DEEP)
    (tmp_path / "maps_app.py").write_text(APP)
    return tmp_path


def fetch(port, path, method="GET", headers=(), body=None):
    with Conn(port, timeout=5) as c:
        c.request(method, path, headers=list(headers) + [("Connection", "close")], body=body)
        return c.response(head=(method == "HEAD"))


def raw(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        out = b""
        while len(out) < 1 << 20:
            b = s.recv(65536)
            if not b:
                break
            out += b
        return out


def maps(tree):
    return ["--static-map", "/assets=%s" % (tree / "assets"),
            "--static-map", "/assets/deep/=%s" % (tree / "deep")]


def check_maps(port):
    """What both commands must do under the two maps."""
    r = fetch(port, "/assets/css/site.css")
    assert r.status == 200 and r.body == CSS, r
    assert r.header("Content-Type", "").startswith("text/css"), r
    etag = r.header("ETag")
    assert etag and r.header("Accept-Ranges") == "bytes", r
    r = fetch(port, "/assets/css/site.css", headers=[("If-None-Match", etag)])
    assert r.status == 304 and r.body == b"", r
    r = fetch(port, "/assets/css/site.css", headers=[("Range", "bytes=5-9")])
    assert r.status == 206 and r.body == CSS[5:10], r
    assert r.header("Content-Range") == "bytes 5-9/%d" % len(CSS), r
    # the longer prefix wins, whatever the order of the flags
    r = fetch(port, "/assets/deep/note.txt")
    assert r.status == 200 and r.body == DEEP, r
    assert fetch(port, "/assets/deep/css/site.css").status == 404
    # what is missing is the static server's 404; other methods its 405
    for path in ("/assets/missing.css", "/assets/deep/missing.txt", "/assets/css/"):
        r = fetch(port, path)
        assert r.status == 404 and b"app saw" not in r.body, (path, r)
    r = fetch(port, "/assets/css/site.css", method="POST", body=b"x=1")
    assert r.status == 405 and r.header("Allow") == "GET, HEAD", r
    assert fetch(port, "/assets/css/site.css", method="HEAD").status == 200
    # traversal: a symlink out of DIR, encoded slashes, dot-segments that stay under PREFIX
    for target in (b"/assets/escape.txt", b"/assets/..%2fsecret.txt", b"/assets/css/%2e%2e/..%2f"
                   b"secret.txt", b"/assets/deep/..%2f..%2fsecret.txt"):
        out = raw(port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert SECRET not in out, (target, out[:300])
        assert out.startswith((b"HTTP/1.1 404", b"HTTP/1.1 400")), (target, out[:300])


def test_binary_serves_two_maps_beside_the_demo_routes(spindle, tree):
    srv = spindle(*maps(tree))
    check_maps(srv.port)
    r = fetch(srv.port, "/")
    assert r.status == 200 and r.body == b"Hello world!", r
    r = fetch(srv.port, "/echo", method="POST", body=b"ping")
    assert r.status == 200 and r.body == b"ping", r


def test_python_serves_two_maps_before_the_application(wsgi_server, tree):
    s = wsgi_server("maps_app:application", *maps(tree), chdir=tree)
    check_maps(s.port)
    # the app saw none of the requests above, and still gets everything else
    r = s.get("/assetsx/a.css")
    assert r.status == 200 and r.body == b"app saw: GET /assetsx/a.css", r
    r = s.get("/other", method="POST", body=b"x")
    assert r.body == b"app saw: GET /assetsx/a.css,POST /other", r


def test_python_relative_dir_after_chdir_and_run_keyword_list(tree):
    """A relative DIR is read after --chdir; spindle.run takes a list."""
    port = free_port()
    code = ("import spindle, maps_app; spindle.run(maps_app.application, bind='127.0.0.1:%d', "
            "workers=0, static_map=['/a=assets', '/d=deep'], graceful_timeout=1)" % port)
    p = subprocess.Popen([PY, "-c", code], env=env_for({"PYTHONPATH": env_for()["PYTHONPATH"]
                                                        + os.pathsep + str(tree)}),
                         cwd=str(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import time
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                r = fetch(port, "/d/note.txt")
                break
            except OSError:
                assert p.poll() is None, p.stderr.read()
                time.sleep(0.05)
        assert r.status == 200 and r.body == DEEP, r
        assert fetch(port, "/a/css/site.css").body == CSS
    finally:
        p.terminate()
        p.wait(10)


@pytest.mark.parametrize("spec, words", [
    ("/nope=/nonexistent-dir", "DIR must be an existing directory"),
    ("assets=/tmp", "PREFIX=DIR, PREFIX a URL path starting with /"),
    ("/a/../b=/tmp", "PREFIX is not a plain URL path"),
    ("/noequals", "PREFIX=DIR"),
])
def test_bad_maps_stop_the_start(spec, words):
    for cmd in ([BIN], [PY, "-m", "spindle", "maps_app:application"]):
        r = subprocess.run(cmd + ["--static-map", spec, "--bind", "127.0.0.1:%d" % free_port(),
                                  "--workers", "1"], env=env_for(), capture_output=True,
                           timeout=10, stdin=subprocess.DEVNULL)
        err = r.stderr.decode()
        assert r.returncode in (1, 2) and ("--static-map %s" % spec in err or spec in err), err
        assert words in err, err


def test_config_file_and_environment_lists(tmp_path):
    cfg = tmp_path / "s.conf"
    cfg.write_text("static-map = /a=/tmp\nstatic-map = /b=/var\n")
    r = subprocess.run([BIN, "--config", str(cfg), "--print-config"], capture_output=True,
                       timeout=10, env=env_for())
    out = r.stdout.decode()
    assert "static-map = /a=/tmp  # config file" in out and "static-map = /b=/var  # config file" \
        in out, out
    # a stronger source's list replaces the weaker one's
    r = subprocess.run([BIN, "--config", str(cfg), "--print-config"], capture_output=True,
                       timeout=10, env=env_for({"SPINDLE_STATIC_MAP": "/c=/tmp,/d=/tmp"}))
    out = r.stdout.decode()
    assert "static-map = /c=/tmp  # environment" in out and "/d=/tmp  # environment" in out, out
    assert "/a=/tmp" not in out, out
    r = subprocess.run([BIN, "--print-config"], capture_output=True, timeout=10, env=env_for())
    assert "# static-map: default" in r.stdout.decode()
