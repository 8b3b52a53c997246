"""Every parser rejection seen end to end: the exact status, `Connection:
close`, then a clean EOF (lingering close, never a reset), and the bytes the
client sent after the bad request are never answered as another request.
Includes the request-smuggling shapes and the limit flags."""
import threading
import time

import pytest

from lib.server import HELLO

TAIL = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"  # must never be answered
H = b"Host: x\r\n"
CHUNKED = b"Transfer-Encoding: chunked\r\n"

CASES = [
    # request smuggling / framing
    ("cl_and_te", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n" + CHUNKED + b"\r\n0\r\n\r\n", 400),
    ("te_and_cl", b"POST /echo HTTP/1.1\r\n" + H + CHUNKED + b"Content-Length: 5\r\n\r\n0\r\n\r\n", 400),
    ("dup_cl_differing", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    ("cl_list_differing", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5, 6\r\n\r\nhello!", 400),
    ("chunked_not_last", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400),
    ("te_twice_chunked", b"POST /echo HTTP/1.1\r\n" + H + CHUNKED + CHUNKED + b"\r\n0\r\n\r\n", 400),
    ("te_without_chunked", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\nhello", 400),
    ("te_unknown_coding", b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\n", 501),
    ("te_in_http10", b"POST /echo HTTP/1.0\r\n" + CHUNKED + b"\r\n5\r\nhello\r\n0\r\n\r\n", 400),
    ("cl_plus_sign", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: +5\r\n\r\nhello", 400),
    ("cl_minus_sign", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: -5\r\n\r\nhello", 400),
    ("cl_inner_space", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5 5\r\n\r\nhello", 400),
    ("cl_hex", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 0x5\r\n\r\nhello", 400),
    ("cl_overflow", b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 99999999999999999999999\r\n\r\n", 400),
    # line and field syntax
    ("bare_lf_request_line", b"GET / HTTP/1.1\n" + H + b"\r\n", 400),
    ("bare_lf_field", b"GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", 400),
    ("bare_cr", b"GET / HTTP/1.1\r\nHost: x\r\nX: y\r\r\n\r\n", 400),
    ("obs_fold", b"GET / HTTP/1.1\r\n" + H + b"X: a\r\n b\r\n\r\n", 400),
    ("space_before_colon", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    ("nul_in_value", b"GET / HTTP/1.1\r\n" + H + b"X: a\x00b\r\n\r\n", 400),
    ("empty_field_name", b"GET / HTTP/1.1\r\n" + H + b": y\r\n\r\n", 400),
    ("double_space_request_line", b"GET  / HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("space_in_target", b"GET /a b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("ctl_in_method", b"G\x01T / HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("missing_host_11", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("duplicate_host", b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
    ("http_2_0", b"GET / HTTP/2.0\r\n" + H + b"\r\n", 505),
    ("expect_unknown", b"GET / HTTP/1.1\r\n" + H + b"Expect: 200-ok\r\n\r\n", 417),
    # limits (defaults: head 8192, target 8000, 100 fields)
    ("target_too_long", b"GET /" + b"a" * 8100 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
    ("too_many_fields", b"GET / HTTP/1.1\r\n" + H + b"X-A: b\r\n" * 150 + b"\r\n", 431),
    ("head_too_large", b"GET / HTTP/1.1\r\n" + H + b"X: " + b"a" * 9000 + b"\r\n\r\n", 431),
    # chunked body syntax, seen by a handler that reads the body
    ("bad_chunk_size", b"POST /echo HTTP/1.1\r\n" + H + CHUNKED + b"\r\nzz\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk_size_overflow", b"POST /echo HTTP/1.1\r\n" + H + CHUNKED + b"\r\n10000000000000000\r\n", 400),
    ("chunk_ext_64k", b"POST /echo HTTP/1.1\r\n" + H + CHUNKED + b"\r\n5;" + b"a" * 65536 + b"\r\nhello\r\n0\r\n\r\n", 400),
    ("bad_path_nul", b"GET /%00 HTTP/1.1\r\n" + H + b"\r\n", 400),
]


def _send_all_threaded(conn, data):
    """Sends in a thread (a big request may block while the server reads)."""
    err = []

    def run():
        try:
            conn.send(data)
        except OSError as e:  # the server may close after its answer
            err.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("name,data,status", CASES, ids=[c[0] for c in CASES])
def test_rejected_with_status_and_closed(server, name, data, status):
    with server.connect() as c:
        t = _send_all_threaded(c, data + TAIL)
        r = c.read_response()
        assert r.status == status, (name, r)
        assert r.connection_close(), r.headers
        assert r.body.startswith(str(status).encode()), r.body
        c.assert_closed()  # the TAIL request is never answered; EOF, not a reset
        t.join(5)
    assert server.alive()


def test_lingering_close_after_extra_bytes(server):
    """The client keeps sending after a bad request and reads only later:
    it must still read the 400, then EOF, not a reset."""
    with server.connect() as c:
        junk = b"X" * (200 * 1024)
        t = _send_all_threaded(c, b"GET / HTTP/1.1\nHost: x\r\n\r\n" + junk)
        time.sleep(0.3)  # the server has answered by now; our junk is in flight
        r = c.read_response()
        assert r.status == 400
        assert r.connection_close()
        c.assert_closed()
        t.join(5)


def test_lingering_close_when_body_of_bad_request_follows(server):
    """A 501 (unknown coding) while the client streams a body in pieces."""
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br, chunked\r\n\r\n")
        for _ in range(5):
            c.send(b"Z" * 4096)
            time.sleep(0.02)
        time.sleep(0.1)
        r = c.read_response()
        assert r.status == 501
        c.assert_closed()


def test_missing_crlf_after_chunk_data_never_looks_complete(server):
    """`5\\r\\nhelloXX0...`: the body is malformed after its first chunk. The
    echo may already have started its 200, but the client must be able to
    tell: either a 400, or a chunked response cut off without its last chunk
    (never a complete, well-framed 200), and the connection closes."""
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhelloXX0\r\n\r\n" + TAIL)
        raw = c.read_until_close()
    head, _, body = raw.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 400 "):
        assert b"Connection: close" in head
        return
    assert head.startswith(b"HTTP/1.1 200 "), raw[:200]
    assert not body.endswith(b"0\r\n\r\n"), \
        "truncated echo was terminated as a complete chunked body: %r" % raw
    assert b"HTTP/1.1 200" not in body  # the TAIL request was not answered


def test_head_size_flag(spindle):
    srv = spindle("--max-head-size", "1024")
    with srv.connect() as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 1100 + b"\r\n\r\n")
        r = c.read_response()
        assert r.status == 431
        c.assert_closed()
    with srv.connect() as c:  # a head under the limit is fine
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 800 + b"\r\nConnection: close\r\n\r\n")
        r = c.read_response()
        assert (r.status, r.body) == (200, HELLO)


def test_target_length_flag(spindle):
    srv = spindle("--max-target-length", "100")
    with srv.connect() as c:
        c.send(b"GET /" + b"a" * 120 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 414
        c.assert_closed()
    with srv.connect() as c:
        c.send(b"GET /" + b"a" * 90 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 404


def test_header_count_flag(spindle):
    srv = spindle("--max-header-count", "5")
    with srv.connect() as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 5 + b"\r\n")
        assert c.read_response().status == 431
        c.assert_closed()
    with srv.connect() as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 4 + b"\r\n")
        assert c.read_response().status == 200


def test_body_size_flag(spindle):
    srv = spindle("--max-body-size", "1000")
    with srv.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n" + b"a" * 1001)
        r = c.read_response()
        assert r.status == 413
        assert r.connection_close()
        c.assert_closed()
    with srv.connect() as c:  # chunked over the limit: found while streaming
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"3e9\r\n" + b"a" * 1001 + b"\r\n0\r\n\r\n")
        raw = c.read_until_close()
        assert raw.startswith(b"HTTP/1.1 413 ") or not raw.endswith(b"0\r\n\r\n"), raw[:300]
    with srv.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"a" * 1000)
        r = c.read_response()
        assert (r.status, r.body) == (200, b"a" * 1000)
