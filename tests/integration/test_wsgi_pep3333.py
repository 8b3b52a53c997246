"""PEP 3333 through wsgiref.validate.validator (tests/fixtures/wsgi/validated.py):
environ, wsgi.input, start_response and exc_info, write(), close(),
wsgi.file_wrapper, Content-Length trust, chunked/close-delimited framing,
HEAD. A validator assertion is a 500 and a traceback in stderr, which the
wsgi_server fixture turns into a failure."""
import base64
import io
import json
import os
import socket
import time

import pytest

from lib.wsgiutil import sha256, wait_for, wsgi_server  # noqa: F401  (fixture)

BODY_LINES = b"line1\nline22\n\n" + b"x" * 300 + b"\nlast-without-newline"


@pytest.fixture
def srv(wsgi_server, tmp_path):
    return wsgi_server("validated:application", env={"WSGI_TEST_FILES": str(tmp_path)})


def jget(s, path, **kw):
    r = s.get(path, **kw)
    assert r.status == 200, r
    return json.loads(r.body)


def pieces(d):
    return [base64.b64decode(p) for p in d["pieces"]]


def chunked(body, sizes=(1, 3, 100, 7)):
    """body as chunked encoding with varying chunk sizes."""
    out, i, k = [], 0, 0
    while i < len(body):
        n = sizes[k % len(sizes)]
        part = body[i:i + n]
        out.append(b"%x\r\n%s\r\n" % (len(part), part))
        i += n
        k += 1
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def post(s, path, body, mode="cl", trickle=False):
    """POSTs body (Content-Length or chunked), optionally in pieces with
    pauses so the app has to wait for it; returns the parsed JSON."""
    with s.connect() as c:
        if mode == "cl":
            head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" \
                   b"Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n" \
                   % (path.encode(), len(body))
            data = body
        else:
            head = b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" \
                   b"Connection: close\r\n\r\n" % path.encode()
            data = chunked(body)
        c.send(head)
        if trickle:
            for i in range(0, len(data), max(1, len(data) // 5)):
                time.sleep(0.03)
                c.send(data[i:i + max(1, len(data) // 5)])
        else:
            c.send(data)
        r = c.response()
    assert r.status == 200, r
    return json.loads(r.body)


# ---- environ ----------------------------------------------------------------

def test_environ_required_keys(srv):
    with srv.connect() as c:
        local_port = c.sock.getsockname()[1]
        c.request("GET", "/env/a%20b?x=1&y=%41+z", headers=[
            ("Host", "127.0.0.1:%d" % srv.port), ("Cookie", "a=1"), ("Cookie", "b=2"),
            ("X-Multi", "one"), ("X-Multi", "two"), ("X_Under", "evil"),
            ("X-Forwarded-For", "10.9.9.9"), ("X_Forwarded_For", "6.6.6.6"),
            ("Accept", "text/a"), ("accept", "text/b")])
        r = c.response()
    assert r.status == 200, r
    e = json.loads(r.body)
    assert e["REQUEST_METHOD"] == "GET"
    assert e["SCRIPT_NAME"] == ""
    assert e["PATH_INFO"] == "/env/a b"
    assert e["QUERY_STRING"] == "x=1&y=%41+z"
    assert e["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert e["SERVER_NAME"] == "127.0.0.1"
    assert e["SERVER_PORT"] == str(srv.port)
    assert e["REMOTE_ADDR"] == "127.0.0.1"
    assert e["REMOTE_PORT"] == str(local_port)
    assert "CONTENT_TYPE" not in e["_keys"] and "CONTENT_LENGTH" not in e["_keys"]
    assert e["HTTP_COOKIE"] == "a=1; b=2"
    assert e["HTTP_X_MULTI"] == "one, two"
    assert e["HTTP_ACCEPT"] == "text/a, text/b"
    assert e["HTTP_X_FORWARDED_FOR"] == "10.9.9.9"   # the '_' impostor is dropped
    assert not any("UNDER" in k for k in e["_keys"]), e["_keys"]
    assert e["wsgi.url_scheme"] == "http"
    assert e["_version"] == [1, 0]
    assert e["_flags"] == [False, False, False, True]
    assert e["_errors"] == [True, True, True]
    for k in ("wsgi.input", "wsgi.errors", "wsgi.file_wrapper"):
        assert k in e["_keys"]
    assert "wsgi.errors works" in srv.stderr()


def test_environ_http10_and_no_host(srv):
    with srv.connect() as c:
        c.send(b"GET /env?q HTTP/1.0\r\n\r\n")
        r = c.response()
    e = json.loads(r.body)
    assert e["SERVER_PROTOCOL"] == "HTTP/1.0"
    assert e["QUERY_STRING"] == "q"
    assert e["SERVER_NAME"] and e["SERVER_PORT"].isdigit()
    assert "HTTP_HOST" not in e["_keys"]


def test_environ_content_type_and_length_only_when_present(srv):
    with srv.connect() as c:
        c.request("POST", "/env", headers=[("Content-Type", "text/x; a=b"),
                                           ("Connection", "close")], body=b"hello")
        r = c.response()
    e = json.loads(r.body)
    assert e["REQUEST_METHOD"] == "POST"
    assert e["CONTENT_TYPE"] == "text/x; a=b"
    assert e["CONTENT_LENGTH"] == "5"
    assert "HTTP_CONTENT_TYPE" not in e["_keys"] and "HTTP_CONTENT_LENGTH" not in e["_keys"]
    # chunked: no Content-Length at all
    with srv.connect() as c:
        c.send(b"PUT /env HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        e = json.loads(c.response().body)
    assert e["REQUEST_METHOD"] == "PUT"
    assert "CONTENT_LENGTH" not in e["_keys"] and "CONTENT_TYPE" not in e["_keys"]
    assert "HTTP_TRANSFER_ENCODING" in e["_keys"]


def test_path_info_percent_decoded_as_latin1(srv):
    e = jget(srv, "/caf%C3%A9?x=%C3%A9")
    assert e["PATH_INFO"] == "/caf\u00c3\u00a9"   # '/café' as UTF-8 bytes read as latin-1
    assert base64.b64decode(e["_path_bytes"]) == b"/caf\xc3\xa9"
    assert e["QUERY_STRING"] == "x=%C3%A9"  # the query stays raw
    e = jget(srv, "/env/%7Euser/%41")
    assert e["PATH_INFO"] == "/env/~user/A"


def test_script_name_from_root_path(wsgi_server):
    s = wsgi_server("validated:application", "--root-path", "/mount/")
    e = jget(s, "/mount/env/x?y=1")
    assert e["SCRIPT_NAME"] == "/mount"
    assert e["PATH_INFO"] == "/env/x"
    assert e["QUERY_STRING"] == "y=1"
    r = s.get("/mount/hello")
    assert r.status == 200 and r.body == b"Hello world!"


# ---- wsgi.input ---------------------------------------------------------------

BIG = bytes(range(256)) * 1000 + b"tail"  # 256,004 bytes


@pytest.mark.parametrize("mode", ["cl", "chunked"])
@pytest.mark.parametrize("n", [7, 65536])
def test_input_read_n(srv, mode, n):
    d = post(srv, "/read_n?n=%d" % n, BIG, mode)
    assert d["len"] == len(BIG) and d["sha"] == sha256(BIG)
    if n == 7:
        ps = pieces(d)
        assert all(len(p) == 7 for p in ps[:-1])  # read(n) fills unless the body ends


@pytest.mark.parametrize("mode", ["cl", "chunked"])
def test_input_read_n_trickled(srv, mode):
    body = b"0123456789" * 50
    d = post(srv, "/read_n?n=64", body, mode, trickle=True)
    assert d["len"] == len(body) and d["sha"] == sha256(body)
    assert all(len(p) == 64 for p in pieces(d)[:-1])


@pytest.mark.parametrize("mode", ["cl", "chunked"])
@pytest.mark.parametrize("first", [0, 5])
def test_input_read_all(srv, mode, first):
    d = post(srv, "/read_all?first=%d" % first, BIG, mode)
    assert d["len"] == len(BIG) and d["sha"] == sha256(BIG)
    if first:
        assert pieces(d)[0] == BIG[:5]


def expected_readline(body, limit=None):
    f, out = io.BytesIO(body), []
    while True:
        b = f.readline(limit) if limit else f.readline()
        if not b:
            return out
        out.append(b)


@pytest.mark.parametrize("mode", ["cl", "chunked"])
@pytest.mark.parametrize("limit", [None, 1, 4, 5, 6, 1000])
def test_input_readline(srv, mode, limit):
    path = "/readline" + ("?limit=%d" % limit if limit else "")
    d = post(srv, path, BODY_LINES, mode)
    assert pieces(d) == expected_readline(BODY_LINES, limit)


@pytest.mark.parametrize("mode", ["cl", "chunked"])
@pytest.mark.parametrize("hint", [None, 10])
def test_input_readlines(srv, mode, hint):
    d = post(srv, "/readlines" + ("?hint=%d" % hint if hint else ""), BODY_LINES, mode)
    f = io.BytesIO(BODY_LINES)
    want = f.readlines(hint) if hint else f.readlines()
    assert pieces(d) == want
    assert base64.b64decode(d["rest"]) == f.read()


@pytest.mark.parametrize("mode", ["cl", "chunked"])
@pytest.mark.parametrize("raw", [False, True])
def test_input_iteration(srv, mode, raw):
    d = post(srv, "/iter" + ("?raw=1" if raw else ""), BODY_LINES, mode, trickle=True)
    assert pieces(d) == io.BytesIO(BODY_LINES).readlines()


def test_input_empty_body(srv):
    d = post(srv, "/read_n?n=10", b"", "cl")
    assert d["len"] == 0
    with srv.connect() as c:   # GET: no body at all
        c.request("GET", "/read_all", headers=[("Connection", "close")])
        assert json.loads(c.response().body)["len"] == 0


# ---- start_response, exc_info, write() ------------------------------------

def test_exc_info_before_head_replaces_response(srv):
    r = srv.get("/exc_early")
    assert r.status == 503, r
    assert r.header("X-Second") == "1" and r.header("X-First") is None
    assert r.body == b"replaced"


def test_exc_info_after_head_reraises(srv):
    r = srv.get("/exc_late")
    assert r.status == 200, r
    assert r.body == b"part1;reraised-same"


def test_header_value_whitespace_is_trimmed_not_an_error(srv):
    r = srv.get("/padded")
    assert r.status == 200, r
    assert r.header("X-Padded") == "v" and r.header("Set-Cookie") == "a=1; Path=/"
    assert r.body == b"padded"


def test_write_callable(srv):
    with srv.connect() as c:
        c.request("GET", "/write")
        r = c.response()
        assert r.status == 200 and r.body == b"one,two,three,four", r
        assert r.header("Content-Length") is None
        assert r.header("Transfer-Encoding") == "chunked" and r.complete
        c.request("GET", "/write_only")
        r = c.response()
        assert r.body == b"abcdefghi" and r.header("Content-Length") == "9"
        c.request("GET", "/hello")   # the connection is still in step
        assert c.response().body == b"Hello world!"


# ---- close() --------------------------------------------------------------------

def closed_state(s, ident):
    return jget(s, "/closed?id=" + ident)


@pytest.mark.parametrize("bare", [False, True])
def test_close_called_when_exhausted(srv, bare):
    r = srv.get("/gen?id=ok&n=4" + ("&bare=1" if bare else ""))
    assert r.body == b"000001002003"
    st = closed_state(srv, "ok")
    assert st["ended"] == "exhausted"
    if not bare:
        assert st["closed"] == 1


def test_close_called_for_iterable_class(srv):
    r = srv.get("/iter_close?id=cls")
    assert r.body == b"abc"
    assert closed_state(srv, "cls")["closed"] == 1


@pytest.mark.parametrize("bare", [False, True])
def test_close_called_when_content_length_reached(srv, bare):
    with srv.connect() as c:
        c.request("GET", "/gen?id=cl&mode=cl&n=50" + ("&bare=1" if bare else ""))
        r = c.response()
        assert r.body == b"000001" and r.header("Content-Length") == "6"
        c.request("GET", "/hello")
        assert c.response().body == b"Hello world!"
    st = closed_state(srv, "cl")
    assert st["ended"] == "generator-exit", st   # closed while suspended
    assert st["started"] == 2, st                # not iterated past the length
    if not bare:
        assert st["closed"] == 1


def test_close_called_when_app_raises_mid_iteration(wsgi_server, tmp_path):
    s = wsgi_server("validated:application", expect_tracebacks=True)
    with s.connect() as c:
        c.request("GET", "/gen?id=raise&mode=raise&n=5")
        r = c.response()
        # the head and two chunks were out: the response is cut, never completed
        assert r.status == 200
        assert not r.complete, r
        assert r.body == b"000001"
    st = closed_state(s, "raise")
    assert st == {"closed": 1, "ended": "raised", "started": 3}, st
    assert "boom mid-iteration" in s.stderr()
    assert "AssertionError" not in s.stderr()   # the validator saw nothing wrong
    # the worker keeps serving
    assert s.get("/hello").body == b"Hello world!"


def test_close_called_when_client_disconnects(wsgi_server):
    s = wsgi_server("validated:application", expect_tracebacks=True)
    c = s.connect()
    c.request("GET", "/gen?id=gone&mode=slow")
    c.sock.recv(1000)   # the response has started
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()           # RST
    wait_for(lambda: closed_state(s, "gone")["closed"], 10, step=0.1)
    st = closed_state(s, "gone")
    assert st["closed"] == 1, st
    assert st["ended"] == "generator-exit", st
    assert st["started"] < 2000, st
    assert s.get("/hello").body == b"Hello world!"
    # a client going away is logged, but it is not an application traceback
    err = s.stderr()
    assert "Traceback" not in err and "AssertionError" not in err, err


# ---- wsgi.file_wrapper ------------------------------------------------------------

@pytest.fixture
def datafile(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    (tmp_path / "data.bin").write_bytes(data)
    return data


@pytest.mark.parametrize("spec", ["validated:application", "validated:plain"])
def test_file_wrapper_whole_file(wsgi_server, tmp_path, datafile, spec):
    s = wsgi_server(spec, env={"WSGI_TEST_FILES": str(tmp_path)})
    with s.connect() as c:
        c.request("GET", "/file?name=data.bin")
        r = c.response()
        assert r.status == 200 and r.complete
        assert len(r.body) == len(datafile) and sha256(r.body) == sha256(datafile)
        if spec == "validated:plain":   # sendfile: the length is known
            assert r.header("Content-Length") == str(len(datafile))
        c.request("GET", "/file?name=data.bin&seek=1000")
        r = c.response()
        assert sha256(r.body) == sha256(datafile[1000:])
        c.request("GET", "/file?name=data.bin&cl=5000")
        r = c.response()
        assert r.header("Content-Length") == "5000" and r.body == datafile[:5000]
        c.request("HEAD", "/file?name=data.bin")
        r = c.response(head=True)
        assert r.status == 200
        c.request("GET", "/hello")
        r = c.response()
        assert r.body == b"Hello world!", r


# ---- Content-Length, chunked, close-delimited, HEAD ---------------------------------

@pytest.mark.parametrize("mode", ["gen", "list", "many"])
def test_app_content_length_trusted_never_exceeded(srv, mode):
    with srv.connect() as c:
        c.request("GET", "/cl_over?mode=" + mode)
        r = c.response()
        assert r.header("Content-Length") == "10"
        assert r.body == b"0123456789"
        # no stray bytes: the next response on the connection parses
        c.request("GET", "/hello")
        r2 = c.response()
        assert r2.status == 200 and r2.body == b"Hello world!", r2
        c.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            extra = c.sock.recv(100)
            assert not extra


def test_no_content_length_chunked_on_http11(srv):
    with srv.connect() as c:
        c.request("GET", "/no_cl")
        r = c.response()
        assert b"\r\ntransfer-encoding: chunked" in r.raw_head.lower(), r.raw_head
        assert r.header("Content-Length") is None
        assert r.complete and r.body == b"first,second,third"
        c.request("GET", "/hello")    # keep-alive holds after a chunked body
        r = c.response()
        assert r.body == b"Hello world!"


def test_one_item_list_measured(wsgi_server):
    # (without the validator, whose wrapper hides the list)
    s = wsgi_server("validated:plain")
    with s.connect() as c:
        c.request("GET", "/hello")
        r = c.response()
        assert r.header("Content-Length") == "12" and r.header("Transfer-Encoding") is None
        assert r.body == b"Hello world!"
        c.request("GET", "/no_cl")
        r = c.response()
        assert r.header("Transfer-Encoding") == "chunked" and r.body == b"first,second,third"


def test_no_content_length_close_delimited_on_http10(srv):
    raw = srv.raw(b"GET /no_cl HTTP/1.0\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1."), raw
    assert b" 200 " in head.split(b"\r\n")[0]
    low = head.lower()
    assert b"transfer-encoding" not in low and b"content-length" not in low, head
    assert body == b"first,second,third"


@pytest.mark.parametrize("path", ["/hello", "/no_cl", "/write", "/cl_over"])
def test_head_has_no_body(srv, path):
    with srv.connect() as c:
        c.request("HEAD", path)
        r = c.response(head=True)
        assert r.status == 200
        if path == "/hello" and r.header("Content-Length") is not None:
            assert r.header("Content-Length") == "12"
        c.request("GET", "/hello")
        r = c.response()
        assert r.status == 200 and r.body == b"Hello world!", r
        c.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            assert not c.sock.recv(100)


def test_204_has_no_body(srv):
    with srv.connect() as c:
        c.request("GET", "/empty")
        r = c.response()
        assert r.status == 204
        c.request("GET", "/hello")
        assert c.response().body == b"Hello world!"
