"""Request bodies: echo with Content-Length and chunked, `Expect:
100-continue` (sent only when the handler reads; a refused body is never
parsed as a request), unread bodies drained up to --drain-limit, and
100 MB uploads streamed through /echo in bounded server memory."""
import hashlib
import os
import threading
import time

from lib.client import get

from lib.server import HELLO

MB = 1 << 20


def test_echo_content_length_and_type(server):
    body = os.urandom(50000)
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: image/x-test; q=1\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body) + body)
        r = c.read_response()
        assert r.status == 200
        assert r.header("Content-Type") == "image/x-test; q=1"
        assert r.header("Content-Length") == str(len(body))
        assert r.header("Transfer-Encoding") is None
        assert r.body == body


def test_echo_chunked_answers_chunked(server):
    with server.connect() as c:
        c.send(b"PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"1\r\na\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n")
        r = c.read_response()
        assert r.status == 200
        assert r.header("Transfer-Encoding") == "chunked"
        assert r.header("Content-Length") is None
        assert r.body == b"a0123456789abcdef"


def test_expect_100_continue(server):
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
               b"Expect: 100-continue\r\n\r\n")
        r = c.read_response(allow_interim=True)
        assert r.status == 100
        assert r.raw_head == b"HTTP/1.1 100 Continue\r\n\r\n"
        c.send(b"hello world")
        r = c.read_response()
        assert (r.status, r.body) == (200, b"hello world")
        c.send(get("/"))  # the connection goes on
        assert c.read_response().body == HELLO


def test_expect_100_continue_chunked(server):
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"Expect: 100-continue\r\n\r\n")
        assert c.read_response(allow_interim=True).status == 100
        c.send(b"5\r\nhello\r\n0\r\n\r\n")
        r = c.read_response()
        assert (r.status, r.body) == (200, b"hello")


def _refused_body_case(server, method, path, status):
    """Expect: 100-continue to a handler that never reads: the answer comes
    without a 100, says Connection: close, and the body we send anyway (a
    valid request itself) is never answered."""
    body = get("/")
    with server.connect() as c:
        c.send(b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n"
               % (method, path, len(body)))
        r = c.read_response(allow_interim=True)
        assert r.status == status, r
        assert r.connection_close(), r.headers
        try:
            c.send(body)
        except OSError:
            pass  # already closed: fine
        c.assert_closed()
    return r


def test_expect_to_route_that_does_not_read(server):
    r = _refused_body_case(server, b"GET", b"/", 200)
    assert r.body == HELLO


def test_expect_to_unknown_path(server):
    _refused_body_case(server, b"POST", b"/nope", 404)


def test_expect_to_wrong_method(server):
    r = _refused_body_case(server, b"POST", b"/", 405)
    assert "GET" in r.header("Allow")


def test_expect_ignored_for_http10(server):
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello")
        r = c.read_response(allow_interim=True)
        assert (r.status, r.body) == (200, b"hello")  # no interim 100 for 1.0
        c.assert_closed()


def test_unread_body_is_drained(server):
    body = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 370  # ~10 KB that looks like requests
    with server.connect() as c:
        c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        r = c.read_response()
        assert r.status == 405
        assert set(t.strip() for t in r.header("Allow").split(",")) >= {"GET", "HEAD"}
        assert not r.connection_close()
        c.send(get("/"))
        r = c.read_response()
        assert (r.status, r.body) == (200, HELLO)
        c.assert_open(0.2)


def test_unread_chunked_body_is_drained(server):
    with server.connect() as c:
        c.send(b"POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"400\r\n" + b"q" * 1024 + b"\r\n" + b"0\r\n\r\n" + get("/"))
        assert c.read_response().status == 404
        r = c.read_response()
        assert (r.status, r.body) == (200, HELLO)


def test_body_beyond_drain_limit_closes(spindle):
    srv = spindle("--drain-limit", "4096")
    body = b"x" * 100000
    with srv.connect() as c:
        t = threading.Thread(target=lambda: _quiet_send(c, b"POST / HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body + get("/")), daemon=True)
        t.start()
        r = c.read_response()
        assert r.status == 405
        c.assert_closed()  # the request after the body is never answered
        t.join(5)
    with srv.connect() as c:  # under the limit, kept
        c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3000\r\n\r\n" + b"y" * 3000 + get("/"))
        assert c.read_response().status == 405
        assert c.read_response().body == HELLO


def _quiet_send(c, data):
    try:
        c.send(data)
    except OSError:
        pass


# ------------------------------------------------------------ big uploads

def _blocks():
    rnd = os.urandom(65536 + 33333 + 7 + 1000)
    return [rnd[:65536], rnd[65536:65536 + 33333], rnd[-1007:-1000], rnd[-1000:]]


class RssWatch:
    """Samples the serving process's RSS every 20 ms."""

    def __init__(self, srv):
        self.srv = srv
        self.peak = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.srv.rss_kb())
            except (OSError, RuntimeError):
                pass
            time.sleep(0.02)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join(2)


def _upload(srv, total, chunked):
    blocks = _blocks()
    sent_hash = hashlib.sha256()
    got_hash = hashlib.sha256()
    got = [0]
    errors = []
    c = srv.connect(timeout=20)
    if chunked:
        head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    else:
        head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % total

    def sender():
        try:
            c.send(head)
            left, i = total, 0
            while left:
                b = blocks[i % len(blocks)][:left]
                i += 1
                left -= len(b)
                sent_hash.update(b)
                c.send(b"%x\r\n" % len(b) + b + b"\r\n" if chunked else b)
            if chunked:
                c.send(b"0\r\n\r\n")
        except OSError as e:
            errors.append(e)

    def sink(piece):
        got[0] += len(piece)
        got_hash.update(piece)

    base = srv.rss_kb()
    t = threading.Thread(target=sender, daemon=True)
    start = time.monotonic()
    with RssWatch(srv) as w:
        t.start()
        r = c.read_response(sink=sink)
        t.join(30)
    elapsed = time.monotonic() - start
    assert not errors, errors
    assert r.status == 200
    assert got[0] == total
    assert got_hash.hexdigest() == sent_hash.hexdigest()
    if r.connection_close():
        # The head went out with more unread body than --drain-limit, so the
        # server could not promise keep-alive: it must then really close.
        c.assert_closed()
    else:
        c.send(get("/"))  # the connection is still good
        assert c.read_response().body == HELLO
    c.close()
    return r, base, max(w.peak, srv.rss_kb()), elapsed


def test_chunked_upload_100mb_bounded_memory(server):
    r, base, peak, elapsed = _upload(server, 100 * MB, chunked=True)
    assert r.header("Transfer-Encoding") == "chunked"
    assert peak - base < 32 * 1024, "RSS grew from %d KiB to %d KiB" % (base, peak)
    assert peak < 64 * 1024 or _asan(), "RSS %d KiB" % peak
    assert elapsed < 60


def test_content_length_upload_100mb_bounded_memory(server):
    r, base, peak, elapsed = _upload(server, 100 * MB, chunked=False)
    assert r.header("Content-Length") == str(100 * MB)
    assert peak - base < 32 * 1024, "RSS grew from %d KiB to %d KiB" % (base, peak)
    assert peak < 64 * 1024 or _asan(), "RSS %d KiB" % peak
    assert elapsed < 60


def _asan():
    from lib.server import BIN
    return "asan" in BIN


def test_valid_framing_variants_accepted(server):
    """Valid per RFC 9112: coding names are case-insensitive, chunk sizes
    may have leading zeros, chunk extensions (quoted too) and trailer fields
    are skipped, OWS around Content-Length is allowed."""
    with server.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
               b"0005\r\nhello\r\n5;a=\"b c\";d\r\nworld\r\nA\r\n0123456789\r\n"
               b"0\r\nX-T: 1\r\nY: 2\r\n\r\n")
        r = c.read_response()
        assert (r.status, r.body) == (200, b"helloworld0123456789")
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length:   5  \r\n\r\nhello")
        r = c.read_response()
        assert (r.status, r.body) == (200, b"hello")
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + get("/"))
        r = c.read_response()
        assert (r.status, r.body) == (200, b"")
        assert c.read_response().body == HELLO


def test_expect_with_body_over_limit_refused_without_100(spindle):
    srv = spindle("--max-body-size", "10")
    with srv.connect() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
        r = c.read_response(allow_interim=True)
        assert r.status == 413  # no 100 Continue first
        assert r.connection_close()
        c.send(get("/"))  # sent as "the body": never answered
        c.assert_closed()


def test_many_tiny_chunks(server):
    """200,000 one-byte chunks: streamed through, in bounded time."""
    n = 200000
    data = (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"1\r\na\r\n" * n + b"0\r\n\r\n")
    with server.connect(20) as c:
        t0 = time.monotonic()
        t = threading.Thread(target=c.send, args=(data,), daemon=True)
        t.start()
        r = c.read_response()
        t.join(10)
        assert (r.status, r.body) == (200, b"a" * n)
        assert time.monotonic() - t0 < 15
