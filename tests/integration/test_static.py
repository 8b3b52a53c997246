"""Static files (`spindle --root DIR`): whole files small and large, HEAD,
single ranges (206/416) and If-Range, ETag / Last-Modified with
If-None-Match / If-Modified-Since (304) and If-Match (412), MIME types,
index.html and the directory redirect, precompressed .gz negotiation, and
traversal attempts (raw dot-segments, encoded dots and slashes, NUL,
symlinks out of the root, absolute-form targets) that must never reach a
file outside the root. One server for the module, on a temp directory."""
import email.utils
import gzip
import os
import socket
import time

import pytest

from lib.proctools import free_port

from lib.server import BIN, FAST, HELP, PROCESS_FLAGS, SANITIZER_MARKS, Server

pytestmark = pytest.mark.skipif("--root" not in HELP, reason="spindle has no --root yet")

MTIME = 1_600_000_000  # Sun, 13 Sep 2020 12:26:40 GMT: long past, so dates are strong validators
SMALL = b"hello static\n"
JS = b"function f() { return 42; }\n" * 200
PAGE = b"<!doctype html><title>t</title>\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><rect width="9" height="9"/></svg>\n' * 20


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    base = tmp_path_factory.mktemp("static")
    root = base / "root"
    root.mkdir()
    (base / "outside_secret").write_bytes(b"SECRET outside the root\n")
    files = {
        "small.txt": SMALL,
        "large.bin": os.urandom(3 * 1024 * 1024 + 17),
        "page.html": PAGE,
        "style.css": b"body { color: red }\n",
        "data.json": b'{"a": 1}\n',
        "img.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 32,
        "noext": b"no extension\n",
        "file.unknownext": b"?\n",
        "app.js": JS,
        "a b.txt": b"space\n",
        "empty.txt": b"",
        "sub/index.html": b"<p>index of sub</p>\n",
        "sub/deeper/x.txt": b"deeper\n",
        ".env": b"SECRET=1\n",
        ".git/config": b"[core]\n",
        "plain/only.txt": b"only\n",
    }
    for name, data in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    (root / "emptydir").mkdir()
    (root / "app.js.gz").write_bytes(gzip.compress(JS, mtime=0))
    # An image's .gz is never looked for (test_no_gz_of_compressed_types);
    # an SVG, text, still has its .gz served.
    (root / "img.png.gz").write_bytes(gzip.compress(files["img.png"], mtime=0))
    (root / "icon.svg").write_bytes(SVG)
    (root / "icon.svg.gz").write_bytes(gzip.compress(SVG, mtime=0))
    os.symlink("/etc", root / "etc")
    os.symlink(str(base / "outside_secret"), root / "outside")
    os.symlink("../outside_secret", root / "outside_rel")
    os.symlink("small.txt", root / "inside")
    os.mkfifo(root / "fifo")
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p) and n != "fifo":
                os.utime(p, (MTIME, MTIME))
    return root, files


@pytest.fixture(scope="module")
def static_server(static_root, tmp_path_factory):
    root, _ = static_root
    port = free_port()
    binds = ["127.0.0.1:%d" % port]
    err = tmp_path_factory.mktemp("static-log") / "spindle.err"
    srv = Server(["--bind", binds[0]] + PROCESS_FLAGS + FAST + ["--root", str(root)], str(err),
                 binds, port)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()
    log = srv.stderr()
    assert not any(m in log for m in SANITIZER_MARKS), log[-4000:]


def req(srv, path, method="GET", headers=(), raw=None):
    """One request on a fresh connection: the Response."""
    data = raw or ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (
        method, path, "".join("%s: %s\r\n" % h for h in headers))).encode("latin-1")
    with srv.connect() as c:
        c.send(data)
        return c.read_response(method)


# ---------------------------------------------------------------- whole files

def test_small_file(static_server):
    r = req(static_server, "/small.txt")
    assert r.status == 200
    assert r.body == SMALL
    assert r.header("Content-Length") == str(len(SMALL))
    assert r.header("Content-Type") == "text/plain"
    assert r.header("Accept-Ranges") == "bytes"
    assert r.header("Last-Modified") == "Sun, 13 Sep 2020 12:26:40 GMT"
    etag = r.header("ETag")
    assert etag and etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")


def test_large_file_and_keepalive(static_server, static_root):
    _, files = static_root
    with static_server.connect(timeout=10) as c:
        for _ in range(2):
            c.send(b"GET /large.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.read_response()
            assert r.status == 200
            assert r.body == files["large.bin"]
        c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().body == SMALL


def test_head(static_server, static_root):
    _, files = static_root
    with static_server.connect() as c:
        c.send(b"HEAD /large.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.read_response("HEAD")
        assert r.status == 200
        assert r.header("Content-Length") == str(len(files["large.bin"]))
        r2 = c.read_response()
        assert r2.status == 200 and r2.body == SMALL  # nothing of large.bin came in between


def test_empty_file(static_server):
    r = req(static_server, "/empty.txt")
    assert (r.status, r.body, r.header("Content-Length")) == (200, b"", "0")
    r = req(static_server, "/empty.txt", headers=[("Range", "bytes=0-")])
    assert r.status == 416 and r.header("Content-Range") == "bytes */0"


def test_space_in_name_and_symlink_inside(static_server):
    assert req(static_server, "/a%20b.txt").body == b"space\n"
    r = req(static_server, "/inside")
    assert r.status == 200 and r.body == SMALL


def test_not_found(static_server):
    for p in ["/nope.txt", "/sub/nope", "/emptydir/", "/small.txt/", "/fifo"]:
        r = req(static_server, p)
        assert r.status == 404, p


def test_method_not_allowed(static_server):
    r = req(static_server, "/small.txt", raw=b"POST /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert r.status == 405
    allow = {t.strip() for t in r.header("Allow", "").split(",")}
    assert {"GET", "HEAD"} <= allow


# ---------------------------------------------------------------- ranges

@pytest.mark.parametrize("spec,start,end", [
    ("bytes=0-4", 0, 4),
    ("bytes=6-", 6, len(SMALL) - 1),
    ("bytes=-3", len(SMALL) - 3, len(SMALL) - 1),
    ("bytes=2-1000", 2, len(SMALL) - 1),
    ("bytes=0-0", 0, 0),
])
def test_range_206(static_server, spec, start, end):
    r = req(static_server, "/small.txt", headers=[("Range", spec)])
    assert r.status == 206
    assert r.body == SMALL[start:end + 1]
    assert r.header("Content-Range") == "bytes %d-%d/%d" % (start, end, len(SMALL))
    assert r.header("Content-Length") == str(end - start + 1)


def test_range_in_large_file(static_server, static_root):
    _, files = static_root
    big = files["large.bin"]
    r = req(static_server, "/large.bin", headers=[("Range", "bytes=1048570-2097160")])
    assert r.status == 206 and r.body == big[1048570:2097161]


@pytest.mark.parametrize("spec", ["bytes=100-", "bytes=5-2", "bytes=-0", "bytes=999999999999999999999999-"])
def test_range_416(static_server, spec):
    with static_server.connect() as c:
        c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\nRange: %s\r\n\r\n" % spec.encode())
        r = c.read_response()
        assert r.status == 416
        assert r.header("Content-Range") == "bytes */%d" % len(SMALL)
        c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")  # the connection lives on
        assert c.read_response().body == SMALL


@pytest.mark.parametrize("spec", ["bytes=0-1,3-4", "bytes=0-1, -2", "items=0-1", "bytes=a-b", "bytes=0 -1"])
def test_range_whole_file(static_server, spec):
    """Several ranges (not served as multipart) and malformed ones: 200."""
    r = req(static_server, "/small.txt", headers=[("Range", spec)])
    assert r.status == 200 and r.body == SMALL and r.header("Content-Range") is None


def test_range_ignored_on_head(static_server):
    r = req(static_server, "/small.txt", "HEAD", headers=[("Range", "bytes=0-1")])
    assert r.status == 200 and r.header("Content-Length") == str(len(SMALL))


def test_if_range(static_server):
    etag = req(static_server, "/small.txt").header("ETag")
    lm = "Sun, 13 Sep 2020 12:26:40 GMT"
    rng = ("Range", "bytes=0-4")
    r = req(static_server, "/small.txt", headers=[rng, ("If-Range", etag)])
    assert r.status == 206 and r.body == SMALL[:5]
    r = req(static_server, "/small.txt", headers=[rng, ("If-Range", '"stale"')])
    assert r.status == 200 and r.body == SMALL
    r = req(static_server, "/small.txt", headers=[rng, ("If-Range", "W/" + etag)])
    assert r.status == 200  # a weak tag never matches If-Range
    r = req(static_server, "/small.txt", headers=[rng, ("If-Range", lm)])
    assert r.status == 206 and r.body == SMALL[:5]
    r = req(static_server, "/small.txt", headers=[rng, ("If-Range", "Sat, 12 Sep 2020 12:26:40 GMT")])
    assert r.status == 200 and r.body == SMALL


# ---------------------------------------------------------------- conditionals

def test_if_none_match(static_server):
    etag = req(static_server, "/small.txt").header("ETag")
    for v in [etag, "W/" + etag, '"x", ' + etag, "*"]:
        with static_server.connect() as c:
            c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\n\r\n" % v.encode())
            r = c.read_response()
            assert r.status == 304, v
            assert r.header("ETag") == etag
            c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")  # no body was sent after the 304
            assert c.read_response().body == SMALL
    r = req(static_server, "/small.txt", headers=[("If-None-Match", '"other"')])
    assert r.status == 200 and r.body == SMALL


def test_if_modified_since(static_server):
    lm = req(static_server, "/small.txt").header("Last-Modified")
    assert req(static_server, "/small.txt", headers=[("If-Modified-Since", lm)]).status == 304
    later = email.utils.formatdate(MTIME + 3600, usegmt=True)
    assert req(static_server, "/small.txt", headers=[("If-Modified-Since", later)]).status == 304
    earlier = email.utils.formatdate(MTIME - 1, usegmt=True)
    r = req(static_server, "/small.txt", headers=[("If-Modified-Since", earlier)])
    assert r.status == 200 and r.body == SMALL
    r = req(static_server, "/small.txt", headers=[("If-Modified-Since", "garbage")])
    assert r.status == 200
    # If-None-Match takes precedence (RFC 9110 §13.2.2).
    r = req(static_server, "/small.txt", headers=[("If-None-Match", '"other"'), ("If-Modified-Since", lm)])
    assert r.status == 200


def test_if_match_412(static_server):
    etag = req(static_server, "/small.txt").header("ETag")
    assert req(static_server, "/small.txt", headers=[("If-Match", etag)]).status == 200
    assert req(static_server, "/small.txt", headers=[("If-Match", '"other"')]).status == 412
    early = email.utils.formatdate(MTIME - 10, usegmt=True)
    assert req(static_server, "/small.txt", headers=[("If-Unmodified-Since", early)]).status == 412


def test_etag_changes_with_file(static_server, static_root):
    root, _ = static_root
    p = root / "changing.txt"
    p.write_bytes(b"one\n")
    os.utime(p, (MTIME, MTIME))
    e1 = req(static_server, "/changing.txt").header("ETag")
    p.write_bytes(b"two!\n")
    os.utime(p, (MTIME + 5, MTIME + 5))
    r = req(static_server, "/changing.txt", headers=[("If-None-Match", e1)])
    assert r.status == 200 and r.body == b"two!\n" and r.header("ETag") != e1


# ---------------------------------------------------------------- types, index, gzip

@pytest.mark.parametrize("path,ctype", [
    ("/page.html", "text/html"),
    ("/style.css", "text/css"),
    ("/data.json", "application/json"),
    ("/img.png", "image/png"),
    ("/small.txt", "text/plain"),
    ("/noext", "application/octet-stream"),
    ("/file.unknownext", "application/octet-stream"),
])
def test_mime_types(static_server, path, ctype):
    r = req(static_server, path)
    assert r.status == 200 and r.header("Content-Type") == ctype


def test_index_and_redirect(static_server):
    r = req(static_server, "/sub/")
    assert r.status == 200 and r.body == b"<p>index of sub</p>\n"
    assert r.header("Content-Type") == "text/html"
    r = req(static_server, "/sub")
    assert r.status == 301 and r.header("Location") == "/sub/"
    r = req(static_server, "/sub/deeper?x=1&y")
    assert r.status == 301 and r.header("Location") == "/sub/deeper/?x=1&y"
    assert req(static_server, "/sub/deeper/x.txt").body == b"deeper\n"
    assert req(static_server, "/plain/").status == 404  # no index.html, no listing


def test_gzip_negotiation(static_server):
    plain = req(static_server, "/app.js")
    assert plain.status == 200 and plain.body == JS and plain.header("Content-Encoding") is None
    for ae in ["gzip", "gzip, deflate, br", "br;q=1, gzip;q=0.5", "*"]:
        r = req(static_server, "/app.js", headers=[("Accept-Encoding", ae)])
        assert r.status == 200, ae
        assert r.header("Content-Encoding") == "gzip", ae
        assert "accept-encoding" in r.header("Vary", "").lower()
        assert r.header("Content-Type") == plain.header("Content-Type")
        assert gzip.decompress(r.body) == JS
        assert r.header("ETag") != plain.header("ETag")
    for ae in ["gzip;q=0", "deflate", "identity"]:
        r = req(static_server, "/app.js", headers=[("Accept-Encoding", ae)])
        assert r.body == JS and r.header("Content-Encoding") is None, ae
    # No .gz beside it: identity even when gzip is welcome.
    r = req(static_server, "/small.txt", headers=[("Accept-Encoding", "gzip")])
    assert r.body == SMALL and r.header("Content-Encoding") is None


def test_no_gz_of_compressed_types(static_server, static_root):
    """A PNG goes out as it is even with a .gz beside it and gzip welcome
    (a browser asks for every image with Accept-Encoding: gzip): its bytes
    are compressed already, and looking for the .gz was a failed open per
    image of a page. An SVG is text: its .gz is still served."""
    png = static_root[1]["img.png"]
    r = req(static_server, "/img.png", headers=[("Accept-Encoding", "gzip, deflate, br")])
    assert r.status == 200 and r.body == png and r.header("Content-Encoding") is None
    assert r.header("Vary") is None and r.header("Content-Type") == "image/png"
    r = req(static_server, "/icon.svg", headers=[("Accept-Encoding", "gzip, deflate, br")])
    assert r.status == 200 and r.header("Content-Encoding") == "gzip" and gzip.decompress(r.body) == SVG


def test_gzip_conditional(static_server):
    gz = req(static_server, "/app.js", headers=[("Accept-Encoding", "gzip")])
    r = req(static_server, "/app.js", headers=[("Accept-Encoding", "gzip"), ("If-None-Match", gz.header("ETag"))])
    assert r.status == 304 and "accept-encoding" in r.header("Vary", "").lower()


# ---------------------------------------------------------------- traversal

TRAVERSALS = [
    b"/../etc/passwd",
    b"/../../../../etc/passwd",
    b"/%2e%2e/%2e%2e/etc/passwd",
    b"/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
    b"/a/%2F..%2F..%2Fetc%2Fpasswd",
    b"/a/%2F..%2F..",
    b"/..%2F..%2F..%2Fetc%2Fpasswd",
    b"/%2F%2Fetc/passwd",
    b"/sub/..%2F..%2F..%2Foutside_secret",
    b"/etc/passwd",                      # a symlink to /etc inside the root
    b"/etc/",
    b"/outside",                         # a symlink to a file outside
    b"/outside_rel",
    b"/.env",
    b"/.git/config",
    b"/%2egit/config",
    b"/sub/%2e%2e/%2e%2e/outside_secret",
    b"/a%00b",
    b"/%00/etc/passwd",
    b"http://x/../../etc/passwd",        # absolute-form
    b"http://x/%2e%2e/%2e%2e/etc/passwd",
    b"http://x/etc/passwd",
    b"/..\\..\\etc\\passwd",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_traversal_refused(static_server, target):
    with socket.create_connection(static_server.addr, timeout=5) as s:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        end = time.monotonic() + 5
        while time.monotonic() < end:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    assert status in (400, 403, 404), (target, data[:200])
    assert b"root:" not in data and b"SECRET" not in data and b"[core]" not in data


def test_server_alive_after_attacks(static_server):
    assert static_server.alive()
    assert req(static_server, "/small.txt").body == SMALL


# ------------------------------------------------------- a site, not the demo

@pytest.mark.parametrize("how", ["--root", "--static-map"])
def test_a_static_root_serves_its_index_not_the_demo(spindle, tmp_path, how):
    """Given a root (or a map of /) and no application, GET / is the site's
    index.html; the demo's routes (hello world, /echo, /sleep) are not there."""
    (tmp_path / "index.html").write_bytes(b"<h1>my site</h1>\n")
    srv = spindle(*(["--root", str(tmp_path)] if how == "--root" else ["--static-map", "/=%s" % tmp_path]))
    r = req(srv, "/")
    assert r.status == 200 and r.body == b"<h1>my site</h1>\n", (r.status, r.body[:100])
    assert req(srv, "/sleep?ms=1").status == 404
    assert req(srv, "/echo", method="POST", headers=[("Content-Length", "0")]).status in (404, 405)


def test_the_demo_answers_without_a_root(spindle):
    r = req(spindle(), "/")
    assert r.status == 200 and r.body == b"Hello world!"
