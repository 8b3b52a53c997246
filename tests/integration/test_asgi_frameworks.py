"""Real ASGI frameworks, requirements.txt's releases in build/venv,
unmodified (tests/fixtures/asgi/: Starlette, FastAPI, Django's async
views, Quart, Litestar): each framework's app runs once for the module under
uvicorn (the reference) and under spindle; every row of the request matrix
goes to both and the status, the application's headers and the body must be
the same (and what the row expects); "proxied" is the Starlette app again
behind a proxy (--root-path, X-Forwarded-*). Then lifespan state, background tasks,
a client that leaves mid-stream, keep-alive and WebSocket sessions, compared
alike. Rows spindle gets wrong are strict xfails naming the bug."""
import hashlib
import json
import os
import re
import socket
import time

import pytest

from lib.asgi_pair import AsgiServer, chunked, fetch, length_problem, norm, trickle, ws_session

FRAMEWORKS = {"starlette": "starlette_app:app", "fastapi": "fastapi_app:app",
              "django": "django_app:application", "quart": "quart_app:app",
              "litestar": "litestar_app:app", "proxied": "starlette_app:app"}
# "proxied": Starlette behind a proxy that strips /api and sends
# X-Forwarded-For/-Proto: root_path and client/scheme through a trusted proxy.
PROXIED = {"uvicorn": ["--root-path", "/api", "--proxy-headers", "--forwarded-allow-ips", "127.0.0.1"],
           "spindle": ["--root-path", "/api", "--forwarded-allow-ips", "127.0.0.1"]}
FORWARDED = {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}
# SPINDLE_ASGI_VS=uvicorn-h11 compares uvicorn with itself on its other
# parser: a check of the matrix, not of spindle.
KINDS = ("uvicorn", os.environ.get("SPINDLE_ASGI_VS", "spindle"))


def blob_bytes():
    out, i = [], 0
    while len(out) * 32 < 200 * 1024 + 17:
        out.append(hashlib.sha256(b"%d" % i).digest())
        i += 1
    return b"".join(out)[:200 * 1024 + 17]


BLOB = blob_bytes()
BIG = hashlib.sha256(b"seed").digest() * (1 << 15)   # 1 MiB upload
SMALL = b"0123456789abcdef" * 300
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
CHUNKED = {"Transfer-Encoding": "chunked", "Content-Type": "application/octet-stream"}
OCTETS = {"Content-Type": "application/octet-stream"}
HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT")


class Servers:
    """Every framework under both servers, started at once; ready() waits
    for one framework's pair (an error there fails only its tests)."""

    def __init__(self, logdir):
        blob = logdir / "blob.bin"
        blob.write_bytes(BLOB)
        self.procs = {(fw, k): AsgiServer(k, spec, logdir, {"ASGI_TEST_BLOB": str(blob)},
                                          PROXIED.get(k, PROXIED["uvicorn"]) if fw == "proxied" else ())
                      for fw, spec in FRAMEWORKS.items() for k in KINDS}
        self.state = {}

    def ready(self, fw):
        if fw not in self.state:
            try:
                self.state[fw] = [self.procs[fw, k].wait_ready() for k in KINDS]
            except AssertionError as e:
                self.state[fw] = e
        if isinstance(self.state[fw], Exception):
            raise self.state[fw]
        return self.state[fw]

    def stop(self):
        problems = []
        crashed = {key: p.proc.poll() for key, p in self.procs.items()}
        for p in self.procs.values():  # all at once, then each by its PID
            if p.alive():
                p.proc.terminate()
        for key, p in self.procs.items():
            p.stop()
            problems += p.problems()
            if crashed[key] is not None and p.kind != "uvicorn":
                problems.append("%s exited on its own (%s):\n%s" % (p.name, crashed[key], p.stderr()[-3000:]))
        return problems


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    s = Servers(tmp_path_factory.mktemp("asgi-frameworks"))
    yield s
    problems = s.stop()
    assert not problems, "\n\n".join(problems)


def both(servers, fw, method, path, headers=None, body=None, send=None, mask=None):
    """The request on uvicorn and on spindle; fails on any difference.
    Returns spindle's response."""
    ref, sp = servers.ready(fw)
    hs = list((headers or {}).items())
    a = fetch(ref.port, method, path, hs, body, send() if send else None)
    b = fetch(sp.port, method, path, hs, body, send() if send else None)
    na, nb = norm(a, mask), norm(b, mask)
    assert na == nb, "%s %s differs:\n  uvicorn: %r\n  spindle: %r" % (method, path, na, nb)
    assert length_problem(b, method) is None, length_problem(b, method)
    return b


def upload_ok(body):
    def check(resp):
        got = json.loads(resp[2])
        assert got["size"] == len(body) and got["sha"] == hashlib.sha256(body).hexdigest(), got
    return check


def body_is(want):
    def check(resp):
        assert resp[2] == want, resp[2][:300]
    return check


def mask_dates(s):
    return HTTP_DATE.sub("DATE", s)


def multipart(note, filename, data, boundary="----spindle-asgi-7MA4YWxkTrZu0gW"):
    body = ("--%s\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\n%s\r\n"
            "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n" % (boundary, note, boundary, filename)).encode()
    return body + data + ("\r\n--%s--\r\n" % boundary).encode(), \
        {"Content-Type": "multipart/form-data; boundary=%s" % boundary}


MULTIPART, MULTIPART_HEADERS = multipart("a note", "blob.bin", BIG)


def multipart_ok(resp):
    got = json.loads(resp[2])
    assert (got["note"], got["filename"], got["size"], got["sha"]) == (
        "a note", "blob.bin", len(BIG), hashlib.sha256(BIG).hexdigest()), got


# (framework, what, method, path, headers, body or a send() factory, status, check)
ROWS = [
    ("starlette", "hello", "GET", "/", None, None, 200, body_is(b"Hello from Starlette")),
    ("starlette", "head", "HEAD", "/", None, None, 200, None),
    ("starlette", "path-param-query", "GET", "/items/42?q=a&q=b%20c&z", None, None, 200, None),
    ("starlette", "path-param-no-match", "GET", "/items/abc", None, None, 404, None),
    ("starlette", "redirect-slash", "GET", "/items/42/?q=1", None, None, 307, None),
    ("starlette", "not-found", "GET", "/nowhere", None, None, 404, None),
    ("starlette", "method-not-allowed", "GET", "/echo", None, None, 405, None),
    ("starlette", "json-body", "POST", "/echo", JSON, json.dumps({"a": [1, 2], "\u00e9": "\u00fc"}).encode(),
     200, None),
    ("starlette", "upload-1MiB", "POST", "/upload", OCTETS, BIG, 200, upload_ok(BIG)),
    ("starlette", "upload-streamed", "PUT", "/upload", dict(OCTETS, **{"Content-Length": str(len(SMALL))}),
     lambda: trickle(SMALL), 200, upload_ok(SMALL)),
    ("starlette", "upload-chunked", "POST", "/upload", CHUNKED, lambda: chunked(BIG, pieces=8), 200,
     upload_ok(BIG)),
    ("starlette", "upload-empty", "POST", "/upload", None, None, 200, upload_ok(b"")),
    ("starlette", "streaming-response", "GET", "/stream?n=50", None, None, 200,
     body_is("".join("line %d\n" % i for i in range(50)).encode())),
    ("starlette", "server-sent-events", "GET", "/sse", None, None, 200, None),
    ("starlette", "file-response", "GET", "/file", None, None, 200, body_is(BLOB)),
    ("starlette", "file-response-head", "HEAD", "/file", None, None, 200, None),
    ("starlette", "raw-pathsend", "GET", "/raw/file", None, None, 200, body_is(BLOB)),
    ("starlette", "raw-4MiB-backpressure", "GET", "/raw/big", None, None, 200,
     body_is(b"".join(bytes([i]) * 65536 for i in range(64)))),
    ("starlette", "expect-100-continue", "POST", "/upload", dict(OCTETS, Expect="100-continue"), SMALL, 200,
     upload_ok(SMALL)),
    ("starlette", "raw-pieces", "GET", "/raw/pieces", None, None, 200, body_is(b"piece 0;piece 1;piece 2;")),
    ("starlette", "headers-cookies", "GET", "/headers", None, None, 201, None),
    ("starlette", "scope", "GET", "/scope/caf%C3%A9/a%2Fb?x=1&y=%20&x=2", {"X-Custom": "yes", "X-Dup": "1"},
     None, 200, None),
    ("starlette", "scope-post", "POST", "/scope/p", FORM, b"k=v", 200, None),
    # passed on as sent (no normalization): the app and its router decide
    ("starlette", "scope-dot-segments-encoded-slash", "GET", "/scope/a/../b//c/./%2e%2e/%2F?q=%ZZ", None, None,
     200, None),
    ("starlette", "scope-8k-cookie", "GET", "/scope/c", {"Cookie": "a=" + "x" * 8000}, None, 200, None),
    ("starlette", "exception-500", "GET", "/boom", None, None, 500, None),
    ("starlette", "redirect", "GET", "/redirect", None, None, 302, None),
    ("starlette", "no-content", "GET", "/empty", None, None, 204, None),

    ("proxied", "scope-root-path-forwarded", "GET", "/scope/a%20b?x=1", FORWARDED, None, 200, None),
    ("proxied", "redirect-slash-https-root-path", "GET", "/items/42/", FORWARDED, None, 307, None),
    ("proxied", "forwarded-two-hops", "GET", "/scope/x", {"X-Forwarded-For": "203.0.113.7, 198.51.100.2"},
     None, 200, None),

    ("fastapi", "hello", "GET", "/", None, None, 200, body_is(b"Hello from FastAPI")),
    ("fastapi", "path-query-header", "GET", "/items/5?q=x&limit=3", {"X-Token": "tok"}, None, 200, None),
    ("fastapi", "422-path-type", "GET", "/items/abc", None, None, 422, None),
    ("fastapi", "422-query-limit", "GET", "/items/5?limit=1000", None, None, 422, None),
    ("fastapi", "model-valid", "POST", "/items", JSON,
     json.dumps({"name": "pen", "price": 2.5, "tags": ["a"]}).encode(), 201, None),
    ("fastapi", "422-model-invalid", "POST", "/items", JSON, json.dumps({"name": "", "price": -1}).encode(),
     422, None),
    ("fastapi", "422-not-json", "POST", "/items", JSON, b"{not json", 422, None),
    ("fastapi", "422-no-body", "POST", "/items", None, None, 422, None),
    ("fastapi", "http-exception", "GET", "/fail/409", None, None, 409, None),
    ("fastapi", "openapi", "GET", "/openapi.json", None, None, 200, None),
    ("fastapi", "docs", "GET", "/docs", None, None, 200, None),
    ("fastapi", "not-found", "GET", "/nowhere", None, None, 404, None),
    ("fastapi", "head-405", "HEAD", "/", None, None, 405, None),
    ("fastapi", "upload-streamed", "POST", "/upload", dict(OCTETS, **{"Content-Length": str(len(BIG))}),
     lambda: trickle(BIG, pieces=6), 200, upload_ok(BIG)),
    ("fastapi", "upload-chunked", "POST", "/upload", CHUNKED, lambda: chunked(SMALL), 200, upload_ok(SMALL)),
    ("fastapi", "multipart-upload-1MiB", "POST", "/form-upload", MULTIPART_HEADERS, MULTIPART, 200, multipart_ok),
    ("fastapi", "multipart-upload-streamed", "POST", "/form-upload",
     dict(MULTIPART_HEADERS, **{"Content-Length": str(len(MULTIPART))}), lambda: trickle(MULTIPART, pieces=5),
     200, multipart_ok),
    ("fastapi", "422-multipart-missing-field", "POST", "/form-upload", MULTIPART_HEADERS,
     MULTIPART.replace(b'name="note"', b'name="other"'), 422, None),
    ("fastapi", "streaming-response", "GET", "/stream?n=20", None, None, 200, None),
    ("fastapi", "server-sent-events", "GET", "/sse", None, None, 200, body_is(
        b"".join(b"event: n\ndata: %d\n\n" % i for i in range(4)))),
    ("fastapi", "file-response", "GET", "/file", None, None, 200, body_is(BLOB)),
    ("fastapi", "exception-500", "GET", "/boom", None, None, 500, None),

    ("django", "hello", "GET", "/", None, None, 200, body_is(b"Hello from Django")),
    ("django", "head", "HEAD", "/", None, None, 200, None),
    ("django", "path-param-query", "GET", "/items/7/?q=a&q=b", {"X-Test": "t"}, None, 200, None),
    ("django", "append-slash", "GET", "/items/7?q=1", None, None, 301, None),
    ("django", "not-found", "GET", "/nowhere/", None, None, 404, None),
    ("django", "http404", "GET", "/missing/", None, None, 404, None),
    ("django", "json-body", "POST", "/echo/", JSON, json.dumps({"k": ["v", 1]}).encode(), 200, None),
    ("django", "bad-json", "POST", "/echo/", JSON, b"{nope", 400, None),
    ("django", "form", "POST", "/upload/", FORM, b"a=1&a=2&b=%C3%A9", 200, None),
    ("django", "upload-streamed", "POST", "/upload/", dict(OCTETS, **{"Content-Length": str(len(SMALL))}),
     lambda: trickle(SMALL), 200, upload_ok(SMALL)),
    ("django", "upload-chunked", "POST", "/upload/", CHUNKED, lambda: chunked(BIG), 200, upload_ok(BIG)),
    ("django", "streaming-response", "GET", "/stream/?n=30", None, None, 200,
     body_is("".join("row %d\n" % i for i in range(30)).encode())),
    ("django", "server-sent-events", "GET", "/sse/", None, None, 200, None),
    ("django", "file-response", "GET", "/file/", None, None, 200, body_is(BLOB)),
    ("django", "cookies", "GET", "/cookies/", None, None, 201, None),
    ("django", "async-sleep", "GET", "/slow/", None, None, 200, body_is(b"slept")),
    ("django", "exception-500", "GET", "/boom/", None, None, 500, None),
    ("django", "disallowed-host", "GET", "/", {"Host": "evil.example"}, None, 400, None),

    ("quart", "hello", "GET", "/", None, None, 200, body_is(b"Hello from Quart")),
    ("quart", "head", "HEAD", "/", None, None, 200, None),
    ("quart", "path-param-query", "GET", "/items/3?q=z&q=y", None, None, 200, None),
    ("quart", "not-found", "GET", "/nowhere", None, None, 404, None),
    ("quart", "method-not-allowed", "GET", "/echo", None, None, 405, None),
    ("quart", "json-body", "POST", "/echo", JSON, json.dumps({"x": 1}).encode(), 200, None),
    ("quart", "bad-json", "POST", "/echo", JSON, b"{nope", 400, None),
    ("quart", "form", "POST", "/form", FORM, b"a=1&a=2&b=%C3%A9", 200, None),
    ("quart", "upload-1MiB", "POST", "/upload", OCTETS, BIG, 200, upload_ok(BIG)),
    ("quart", "upload-streamed", "PUT", "/upload", dict(OCTETS, **{"Content-Length": str(len(SMALL))}),
     lambda: trickle(SMALL), 200, upload_ok(SMALL)),
    ("quart", "upload-chunked", "POST", "/upload", CHUNKED, lambda: chunked(SMALL), 200, upload_ok(SMALL)),
    ("quart", "streaming-response", "GET", "/stream?n=40", None, None, 200,
     body_is(b"".join(b"line %d\n" % i for i in range(40)))),
    ("quart", "server-sent-events", "GET", "/sse", None, None, 200, None),
    ("quart", "send-file", "GET", "/file", None, None, 200, body_is(BLOB)),
    ("quart", "send-file-range", "GET", "/file", {"Range": "bytes=100-1123"}, None, 206, body_is(BLOB[100:1124])),
    ("quart", "send-file-head", "HEAD", "/file", None, None, 200, None),
    ("quart", "send-file-not-modified", "GET", "/file", {"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
     None, 304, body_is(b"")),
    ("quart", "abort-418", "GET", "/teapot", None, None, 418, None),
    ("quart", "exception-500", "GET", "/boom", None, None, 500, None),

    # Litestar answers HEAD only where a @head handler says so (405 on /),
    # routes /items/42/ to /items/42 itself (no slash redirect), and its File
    # has no Range or conditional requests (a Range is ignored: 200, whole).
    ("litestar", "hello", "GET", "/", None, None, 200, body_is(b"Hello from Litestar")),
    ("litestar", "head-405", "HEAD", "/", None, None, 405, None),
    ("litestar", "path-param-query", "GET", "/items/42?q=a&q=b%20c&z", None, None, 200, None),
    ("litestar", "path-param-no-match", "GET", "/items/abc", None, None, 404, None),
    ("litestar", "trailing-slash-same-route", "GET", "/items/42/?q=1", None, None, 200, None),
    ("litestar", "not-found", "GET", "/nowhere", None, None, 404, None),
    ("litestar", "method-not-allowed", "GET", "/echo", None, None, 405, None),
    ("litestar", "options-auto", "OPTIONS", "/upload", None, None, 204, body_is(b"")),
    ("litestar", "json-body", "POST", "/echo", JSON, json.dumps({"a": [1, 2], "\u00e9": "\u00fc"}).encode(),
     200, None),
    ("litestar", "400-bad-json", "POST", "/echo", JSON, b"{nope", 400, None),
    ("litestar", "400-no-body", "POST", "/echo", JSON, None, 400, None),
    ("litestar", "form", "POST", "/form", FORM, b"a=1&a=2&b=%C3%A9", 200,
     body_is('{"a":["1","2"],"b":["\u00e9"]}'.encode())),
    ("litestar", "upload-1MiB", "POST", "/upload", OCTETS, BIG, 200, upload_ok(BIG)),
    ("litestar", "upload-streamed", "PUT", "/upload", dict(OCTETS, **{"Content-Length": str(len(SMALL))}),
     lambda: trickle(SMALL), 200, upload_ok(SMALL)),
    ("litestar", "upload-chunked", "POST", "/upload", CHUNKED, lambda: chunked(BIG, pieces=8), 200,
     upload_ok(BIG)),
    ("litestar", "upload-empty", "POST", "/upload", None, None, 200, upload_ok(b"")),
    ("litestar", "expect-100-continue", "POST", "/upload", dict(OCTETS, Expect="100-continue"), SMALL, 200,
     upload_ok(SMALL)),
    ("litestar", "multipart-upload-1MiB", "POST", "/form-upload", MULTIPART_HEADERS, MULTIPART, 200, multipart_ok),
    ("litestar", "multipart-upload-streamed", "POST", "/form-upload",
     dict(MULTIPART_HEADERS, **{"Content-Length": str(len(MULTIPART))}), lambda: trickle(MULTIPART, pieces=5),
     200, multipart_ok),
    ("litestar", "400-multipart-missing-field", "POST", "/form-upload", MULTIPART_HEADERS,
     MULTIPART.replace(b'name="note"', b'name="other"'), 400, None),
    ("litestar", "streaming-response", "GET", "/stream?n=50", None, None, 200,
     body_is("".join("line %d\n" % i for i in range(50)).encode())),
    ("litestar", "server-sent-events", "GET", "/sse", None, None, 200, body_is(
        b"".join(b"id: %d\r\nevent: n\r\ndata: %d\r\n\r\n" % (i, i) for i in range(4)))),
    ("litestar", "file-response", "GET", "/file", None, None, 200, body_is(BLOB)),
    ("litestar", "file-response-head", "HEAD", "/file", None, None, 200, body_is(b"")),
    ("litestar", "file-range-ignored", "GET", "/file", {"Range": "bytes=100-1123"}, None, 200, body_is(BLOB)),
    ("litestar", "headers-cookies", "GET", "/headers", None, None, 201, None),
    ("litestar", "exception-500", "GET", "/boom", None, None, 500, None),
    ("litestar", "http-exception-418", "GET", "/teapot", None, None, 418, None),
    ("litestar", "redirect", "GET", "/redirect", None, None, 302, None),
    ("litestar", "no-content", "GET", "/empty", None, None, 204, body_is(b"")),
]


# Rows spindle is known to get wrong, each an xfail(strict=True) with its
# reason (none now: the lost app 500 was fixed in asgi_http.c's cycle_failed).
KNOWN_BUGS = {}


def row_params(rows):
    out = []
    for r in rows:
        rid = "%s-%s" % (r[0], r[1])
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[rid])] if rid in KNOWN_BUGS else []
        out.append(pytest.param(r, id=rid, marks=marks))
    return out


@pytest.mark.parametrize("row", row_params(ROWS))
def test_matrix(servers, row):
    fw, _, method, path, headers, body, status, check = row
    send = body if callable(body) else None
    resp = both(servers, fw, method, path, headers, None if send else body, send,
                mask=mask_dates if fw == "quart" else None)
    assert resp[0] == status, resp
    assert resp[3], "spindle's body framing was cut off: %r" % (resp,)
    if check:
        check(resp)


def state(port, path):
    return json.loads(fetch(port, "GET", path)[2])


@pytest.mark.parametrize("fw", ["starlette", "fastapi", "quart", "litestar"])
def test_lifespan_state(servers, fw):
    got = [state(s.port, "/state") for s in servers.ready(fw)]
    assert got[0]["started"] == got[1]["started"], got
    assert [e for e in got[1]["events"] if e == "startup"] == ["startup"], got[1]


@pytest.mark.parametrize("fw,method,path", [("starlette", "GET", "/background?tag=%s"),
                                            ("fastapi", "POST", "/background?tag=%s"),
                                            ("quart", "GET", "/background?tag=%s"),
                                            ("litestar", "GET", "/background?tag=%s")])
def test_background_task(servers, fw, method, path):
    tag = "t%d" % time.monotonic_ns()
    resp = both(servers, fw, method, path % tag)
    assert resp[0] in (200, 202)
    for srv in servers.ready(fw):
        end = time.monotonic() + 5
        while "bg " + tag not in state(srv.port, "/state")["events"]:
            assert time.monotonic() < end, "%s: the background task never ran" % srv.name
            time.sleep(0.02)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


@pytest.mark.parametrize("fw,path,watched", [("starlette", "/endless?tag=%s", True),
                                             ("quart", "/endless?tag=%s", True),
                                             ("litestar", "/endless?tag=%s", True),
                                             ("django", "/stream/?n=30000&tag=%s", False)])
def test_client_leaves_mid_stream(servers, fw, path, watched):
    """The client reads the head and a little body, then closes: the app's
    generator is closed (Starlette, Quart, Litestar watch http.disconnect),
    the server lets the connection go (its fd count is back where it was), lives on and
    answers the next request."""
    for srv in servers.ready(fw):
        tag = "d%d" % time.monotonic_ns()
        pid = srv.worker_pids()[0]
        fds = fd_count(pid)
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % (path % tag)).encode())
            got = b""
            while len(got) < 8192:
                piece = s.recv(65536)
                assert piece, "%s closed the stream early" % srv.name
                got += piece
            assert got.startswith(b"HTTP/1.1 200"), got[:200]
        if watched:
            end = time.monotonic() + 5
            while True:
                events = state(srv.port, "/state")["events"]
                if "endless %s closed" % tag in events:
                    break
                assert time.monotonic() < end, "%s: the stream's generator was never closed" % srv.name
                time.sleep(0.05)
            assert "endless %s finished" % tag not in events
        end = time.monotonic() + 3
        while fd_count(pid) > fds and time.monotonic() < end:
            time.sleep(0.05)
        assert fd_count(pid) <= fds, "%s still holds the connection: %d fds, %d before" % (
            srv.name, fd_count(pid), fds)
        status, _, body, _ = fetch(srv.port, "GET", "/")
        assert status == 200 and body.startswith(b"Hello from"), (srv.name, status, body[:100])


@pytest.mark.parametrize("fw", ["starlette", "fastapi", "django", "quart", "litestar"])
def test_keepalive(servers, fw):
    """Three requests on one connection, the same answers from both."""
    from lib.client import Conn
    seen = []
    for srv in servers.ready(fw):
        with Conn(srv.port) as c:
            out = []
            for path in ("/", "/nowhere/", "/"):
                c.request("GET", path)
                r = c.response()
                out.append((r.status, r.body))
            seen.append(out)
    assert seen[0] == seen[1], seen
    assert seen[1][0][0] == 200 and seen[1][1][0] == 404


WS_TEXT = {"starlette": ["hi", "caf\u00e9", b"\x00\x01\x02\xff", b"\x07" * 200000], "quart": ["hi", b"\x00\x01\x02"],
           "fastapi": ['{"a": 1}', '{"b": [1, 2]}'],
           "litestar": ["hi", "caf\u00e9", b"\x00\x01\x02\xff", b"\x07" * 200000]}
WS_CLOSE = {"starlette": "close:4001", "quart": "close:4001", "fastapi": '{"close": 4001}', "litestar": "close:4001"}
# The apps that send a header with websocket.accept.
WS_ACCEPTED_BY = {"starlette": "starlette", "litestar": "litestar"}


@pytest.mark.parametrize("fw", ["starlette", "fastapi", "quart", "litestar"])
def test_websocket(servers, fw):
    """Echo with a chosen subprotocol, none when none is offered, a close
    code and reason from the app; the app hears the client's close code."""
    sessions = [(WS_TEXT[fw], ["chat.v1", "chat.v2"]), (WS_TEXT[fw][:1], None),
                (WS_TEXT[fw][:1] + [WS_CLOSE[fw]], ["chat.v2"])]
    results = []
    for srv in servers.ready(fw):
        pid = srv.worker_pids()[0]
        fds = fd_count(pid)
        results.append([ws_session(srv.port, "/ws", script, protos) for script, protos in sessions])
        end = time.monotonic() + 3
        while fd_count(pid) > fds and time.monotonic() < end:
            time.sleep(0.05)
        assert fd_count(pid) <= fds, "%s kept WebSocket connections: %d fds, %d before" % (
            srv.name, fd_count(pid), fds)
    for i, (ref, sp) in enumerate(zip(*results)):
        assert ref == sp, "session %d differs:\n  uvicorn: %r\n  spindle: %r" % (i, ref, sp)
    sp = results[1]
    assert sp[0]["subprotocol"] == "chat.v2" and sp[1]["subprotocol"] is None
    assert sp[0]["x-accepted-by"] == WS_ACCEPTED_BY.get(fw)
    assert len(sp[0]["received"]) == len(WS_TEXT[fw]) and sp[0]["close"] == (1000,)
    assert sp[2]["close"][0] == 4001 and sp[2]["received"][-1] == "<closed by the server>", sp[2]
    if fw != "quart":  # the apps that log the websocket.disconnect they get
        heard = []
        for srv in servers.ready(fw):
            end = time.monotonic() + 5
            while True:
                codes = [e for e in state(srv.port, "/state")["events"] if e.startswith("ws disconnect")]
                if len(codes) >= 2 or time.monotonic() > end:
                    break
                time.sleep(0.05)
            heard.append(codes)
        assert heard[0] == heard[1] and heard[1][:2] == ["ws disconnect 1000"] * 2, heard


@pytest.mark.parametrize("fw", ["starlette", "fastapi", "quart", "litestar"])
def test_websocket_refused(servers, fw):
    """The app closes (Starlette, FastAPI, Litestar) or aborts (Quart) before
    accepting: the handshake is refused with 403 by both."""
    got = [ws_session(srv.port, "/ws-reject", [], None) for srv in servers.ready(fw)]
    assert got[0] == got[1] and got[1]["refused"] == 403, got
