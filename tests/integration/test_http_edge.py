"""The response layer's and the head parser's edges, through the real binary
with tests/fixtures/c/app_http_edge.c: a 1xx status from an application is refused
with 500 and a log line (the exchange stays framed, so the next pipelined
request gets its own answer), the host of an absolute-form request is its
authority, an overlong method is 501, and a body trickled below
--body-min-rate is cut off (408 to a reading handler; a drain closes)."""
import os
import pathlib
import threading
import time

import pytest

from lib.server import BIN

APP = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_http_edge.so")


@pytest.fixture
def edge(spindle):
    if not os.path.exists(APP):
        pytest.fail("%s is not built (make builds tests/fixtures/c/*.c)" % APP)
    return spindle("--app", APP)


@pytest.fixture
def edge_rate(spindle):
    return spindle("--app", APP, *RATE)


def req(path, host="x", extra=""):
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, host, extra)).encode()


def wait_log(srv, text, timeout=2.0):
    end = time.monotonic() + timeout
    while text not in srv.stderr() and time.monotonic() < end:
        time.sleep(0.05)
    return srv.stderr()


@pytest.mark.parametrize("code", [100, 101, 103])
def test_1xx_from_a_handler_is_500_and_framed(edge, code):
    with edge.connect() as c:
        # Pipelined: the refused exchange must end where it should.
        c.send(req("/status/%d" % code) + req("/send/%d" % code) + req("/host", host="h.example"))
        r1 = c.read_response(allow_interim=True)
        assert r1.status == 500, r1
        assert not r1.connection_close(), r1
        r2 = c.read_response(allow_interim=True)
        assert r2.status == 500, r2
        r3 = c.read_response(allow_interim=True)
        assert (r3.status, r3.body) == (200, b"h.example"), r3
    err = wait_log(edge, "status %d" % code)
    assert "/status/%d set status %d" % (code, code) in err, err[-2000:]
    assert "/send/%d set status %d" % (code, code) in err, err[-2000:]


def test_absolute_form_authority_wins_over_host(edge):
    with edge.connect() as c:
        c.send(req("http://a.example:8080/host", host="b.example") + req("/host", host="b.example"))
        r = c.read_response()
        assert (r.status, r.body) == (200, b"a.example:8080"), r
        r = c.read_response()
        assert (r.status, r.body) == (200, b"b.example"), r


def test_empty_host_is_400(edge):
    with edge.connect() as c:
        c.send(b"GET /host HTTP/1.1\r\nHost:\r\n\r\n")
        r = c.read_response()
        assert r.status == 400 and r.connection_close(), r


def test_overlong_method_is_501(edge):
    with edge.connect() as c:
        try:
            c.send(b"A" * 100000 + b" / HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            pass  # the answer may come, and the close, before all is sent
        r = c.read_response()
        assert r.status == 501 and r.connection_close(), r


# ---- --body-min-rate: a body trickled below the rate is cut off ----------

def _trickle(c, data, piece, every, stop):
    """Sends data piece bytes at a time, every seconds, until done or stopped."""
    for i in range(0, len(data), piece):
        if stop.is_set():
            return
        try:
            c.send(data[i:i + piece])
        except OSError:
            return
        time.sleep(every)


def _trickled(c, data, piece, every):
    stop = threading.Event()
    t = threading.Thread(target=_trickle, args=(c, data, piece, every, stop), daemon=True)
    t.start()
    return stop, t


RATE = ["--body-timeout", "1", "--body-min-rate", "1000"]


def test_slow_body_to_a_reading_handler_is_408(edge_rate):
    with edge_rate.connect() as c:
        c.send(b"POST /slurp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        t0 = time.monotonic()
        stop, t = _trickled(c, b"y" * 100, 1, 0.2)  # 5 bytes/s, each gap < --body-timeout
        try:
            r = c.read_response()
            dt = time.monotonic() - t0
            assert r.status == 408 and r.connection_close(), r
            assert 0.7 <= dt <= 2.5, dt
        finally:
            stop.set()
            t.join(2)


def test_slow_body_on_a_404_is_not_drained(edge_rate):
    with edge_rate.connect() as c:
        c.send(b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        r = c.read_response()
        assert r.status == 404, r
        t0 = time.monotonic()
        stop, t = _trickled(c, b"y" * 100, 1, 0.2)
        try:
            c.sock.settimeout(4)
            assert c.read_until_close() == b""  # the drain gave up: closed, no answer
            assert time.monotonic() - t0 <= 2.5
        finally:
            stop.set()
            t.join(2)


def test_body_above_the_rate_is_served(edge_rate):
    with edge_rate.connect() as c:
        # 2000 bytes/s for longer than --body-timeout: slow, but above the rate.
        c.send(b"POST /slurp HTTP/1.1\r\nHost: x\r\nContent-Length: 3000\r\n\r\n")
        stop, t = _trickled(c, b"y" * 3000, 200, 0.1)
        try:
            r = c.read_response()
            assert (r.status, r.body) == (200, b"3000\n"), r
        finally:
            stop.set()
            t.join(2)
        c.send(b"POST /slurp HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + b"z" * 200000)
        r = c.read_response()
        assert (r.status, r.body) == (200, b"200000\n"), r


def test_early_hints_are_interim_then_the_answer(edge):
    with edge.connect() as c:
        c.send(req("/hints") + req("/hints?bad") + b"GET /hints HTTP/1.0\r\n\r\n")
        hint = c.read_response(allow_interim=True)
        assert hint.status == 103, hint
        assert hint.all("Link") == ["</a.css>; rel=preload; as=style",
                                    "</b.js>; rel=preload; as=script"], hint
        assert hint.header("Content-Length") is None and hint.header("Connection") is None
        r = c.read_response(allow_interim=True)
        assert (r.status, r.body) == (200, b"rc=0\n"), r
        # An injected value is refused: no interim at all, the answer says why.
        r = c.read_response(allow_interim=True)
        assert (r.status, r.body) == (200, b"rc=%d\n" % -22), r
        # No 1xx to an HTTP/1.0 client (RFC 9110 §15.2).
        r = c.read_response(allow_interim=True)
        assert (r.status, r.body) == (200, b"rc=0\n"), r


def test_request_arriving_while_the_handler_works_on_is_served(edge):
    """The next request's bytes arrive after the answer, while the handler
    still works (their readiness edge comes when nobody waits to read): the
    driver must read them before it parks the connection, not leave them to
    the keep-alive timeout."""
    with edge.connect() as c:
        for i in range(3):
            t0 = time.monotonic()
            c.send(req("/answer-then-work"))
            r = c.read_response()
            assert (r.status, r.body) == (200, b"done\n"), r
            # Each answer comes at once; a lost edge waited for --keepalive-timeout.
            assert time.monotonic() - t0 < 1.0, "request %d waited %.2f s" % (i, time.monotonic() - t0)


def _raw_exchange(srv, data):
    import socket
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(data)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return out


def test_trailers_end_a_chunked_body(edge):
    """sp_res_finish_trailers: the last chunk carries the trailer section
    (RFC 9112 §7.1.2); a refused name sends nothing; a declared length or
    HTTP/1.0 leaves no place for them (dropped, the body still whole)."""
    te = b"Host: x\r\nTE: trailers\r\nConnection: close\r\n\r\n"
    out = _raw_exchange(edge, b"GET /trailers HTTP/1.1\r\n" + te)
    head, body = out.split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding: chunked" in head and b"X-Possible: 1" in head, out
    assert body == (b"5\r\nrc=0 \r\n5\r\nbody\n\r\n0\r\nX-Checksum: sha256=abc\r\n"
                    b"grpc-status: 0\r\n\r\n"), out
    out = _raw_exchange(edge, b"GET /trailers?bad HTTP/1.1\r\n" + te)
    assert b"7\r\nrc=-22 \r\n" in out and out.count(b"Content-Length") == 0, out
    out = _raw_exchange(edge, b"GET /trailers?len HTTP/1.1\r\n" + te)
    assert out.endswith(b"Content-Length: 10\r\nConnection: close\r\n\r\nrc=0 body\n"), out
    assert b"X-Possible: 0" in out and b"X-Checksum" not in out, out
    out = _raw_exchange(edge, b"GET /trailers HTTP/1.0\r\n\r\n")
    assert out.endswith(b"\r\n\r\nrc=0 body\n") and b"X-Checksum" not in out, out
