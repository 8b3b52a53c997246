"""The demo routes and routing: OPTIONS, 404, 405 with Allow, absolute-form
targets, path normalization (dot-segments, unreserved percent-escapes),
and the listeners: IPv4, IPv6 ([::1]) and unix:/path, driven by curl."""
import socket
import subprocess

import pytest

from lib.client import get

from lib.proctools import free_port

from lib.server import CURL, HELLO


def _allow(r):
    return {t.strip() for t in r.header("Allow", "").split(",") if t.strip()}


def _req(srv, data, method="GET"):
    with srv.connect() as c:
        c.send(data)
        return c.read_response(method)


def test_options_star(server):
    r = _req(server, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
    assert r.status == 204
    assert _allow(r) >= {"GET", "HEAD", "POST", "PUT", "OPTIONS"}
    assert r.body == b"" and r.header("Content-Length") in (None, "0")


def test_options_root(server):
    r = _req(server, b"OPTIONS / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert r.status == 204
    assert _allow(r) >= {"GET", "HEAD", "OPTIONS"}
    assert "POST" not in _allow(r)


def test_not_found(server):
    r = _req(server, get("/no/such/thing"))
    assert (r.status, r.body) == (404, b"404 Not Found\n")
    assert not r.connection_close()


@pytest.mark.parametrize("method,path,allowed,refused", [
    (b"DELETE", b"/echo", {"POST", "PUT"}, "GET"),
    (b"GET", b"/echo", {"POST", "PUT"}, "GET"),
    (b"POST", b"/sleep", {"GET", "HEAD"}, "POST"),
    (b"PATCH", b"/", {"GET", "HEAD"}, "PATCH"),
])
def test_method_not_allowed(server, method, path, allowed, refused):
    r = _req(server, b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % (method, path))
    assert r.status == 405
    assert _allow(r) >= allowed
    assert refused not in _allow(r)


def test_head_on_unknown_path_has_no_body(server):
    with server.connect() as c:
        c.send(b"HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n" + get("/"))
        r = c.read_response("HEAD")
        assert r.status == 404
        r = c.read_response()
        assert r.body == HELLO


@pytest.mark.parametrize("target,status,body", [
    (b"http://x/", 200, HELLO),
    (b"http://example.com:81/sleep?ms=3", 200, b"slept 3 ms\n"),
    (b"/x/../", 200, HELLO),
    (b"/x/y/../../", 200, HELLO),
    (b"/../", 200, HELLO),
    (b"/%2e%2e/", 200, HELLO),
    (b"/a/%2E%2E/%2e/", 200, HELLO),
    (b"/./", 200, HELLO),
    (b"//", 200, HELLO),
    (b"/?a=b", 200, HELLO),
    (b"/%73leep?ms=2", 200, b"slept 2 ms\n"),
    (b"/x/../sleep?ms=4", 200, b"slept 4 ms\n"),
    (b"/%2e%2e%2f", 404, None),  # %2F is reserved: not a separator
    (b"/%zz", 400, None),
    (b"x", 400, None),
    (b"*", 400, None),  # asterisk-form is only for OPTIONS
])
def test_targets(server, target, status, body):
    r = _req(server, b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target)
    assert r.status == status, r
    if body is not None:
        assert r.body == body


def test_post_through_dot_segments_reaches_echo(server):
    r = _req(server, b"POST /nothing/../%65cho HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
    assert (r.status, r.body) == (200, b"hi")


def _curl(*args):
    p = subprocess.run([CURL, "-sS", "--max-time", "5"] + list(args), capture_output=True, timeout=15)
    return p


def test_curl_ipv4(server):
    p = _curl("-D", "-", "http://127.0.0.1:%d/" % server.port)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith(b"HTTP/1.1 200 ")
    assert out.endswith(b"\r\n\r\n" + HELLO)


def test_curl_echo_post(server):
    data = "x=1&y=" + "z" * 5000
    p = _curl("--data-binary", data, "-H", "Content-Type: text/x-demo",
              "http://127.0.0.1:%d/echo" % server.port)
    assert p.returncode == 0, p.stderr
    assert p.stdout == data.encode()


def test_curl_expect_100_continue(server):
    data = "q" * 2_000_000  # curl asks for 100-continue on large bodies
    p = subprocess.run([CURL, "-sS", "-v", "--max-time", "10", "--data-binary", "@-",
                        "-H", "Expect: 100-continue", "http://127.0.0.1:%d/echo" % server.port],
                       input=data.encode(), capture_output=True, timeout=20)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == data.encode()
    assert b"HTTP/1.1 100 Continue" in p.stderr


def test_ipv6_listener(spindle):
    port = free_port("::1")
    srv = spindle(binds=["[::1]:%d" % port])
    with socket.create_connection(("::1", port), timeout=5) as s:
        s.sendall(get("/", extra="Connection: close\r\n"))
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(HELLO)
    p = _curl("-g", "http://[::1]:%d/" % port)
    assert p.returncode == 0, p.stderr
    assert p.stdout == HELLO
    assert srv.alive()


def test_unix_listener_and_tcp_together(spindle, tmp_path):
    path = str(tmp_path / "spindle.sock")
    tport = free_port()
    srv = spindle(binds=["unix:" + path, "127.0.0.1:%d" % tport])
    p = _curl("--unix-socket", path, "http://localhost/")
    assert p.returncode == 0, p.stderr
    assert p.stdout == HELLO
    p = _curl("--unix-socket", path, "--data-binary", "over unix", "http://localhost/echo")
    assert p.stdout == b"over unix"
    p = _curl("http://127.0.0.1:%d/" % tport)
    assert p.stdout == HELLO
    assert srv.alive()
