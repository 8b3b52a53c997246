"""The one raw HTTP/1.x client of the integration tests: `Conn` sends bytes
and reads whole responses (status line, headers, Content-Length, chunked or
until-close bodies), byte by byte so that a test sees exactly what the server
framed; `read_until_close` collects a bare socket's bytes until EOF.

Every read has a timeout. A response that cannot be read whole raises an
HTTPError whose kind says why ('eof': a clean close before any byte of it,
'reset' before any byte, 'cut': a close or reset after part of it, 'timeout',
'bad'); each is also the matching built-in exception (EOFError,
ConnectionResetError, BrokenPipeError, socket.timeout, ValueError), so a test
may catch either. `Conn.response` is the lenient reading (a cut body is
returned with .complete False, a reset counts as a close), for tests that
compare what servers send rather than require it whole."""
import socket
import time

import pytest


class HTTPError(Exception):
    def __init__(self, kind, detail="", got=b""):
        super().__init__("%s: %s (got %d bytes: %r)" % (kind, detail, len(got), got[:200]))
        self.kind = kind
        self.got = got


class Closed(HTTPError, EOFError):
    pass


class Reset(HTTPError, ConnectionResetError):
    pass


class Broken(HTTPError, BrokenPipeError):
    pass


class Timeout(HTTPError, socket.timeout):
    pass


class BadResponse(HTTPError, ValueError):
    pass


class Response:
    def __init__(self, version, status, reason, headers, raw_head):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value), in order, names as sent
        self.body = b""
        self.raw_head = raw_head  # the status line and headers, with the blank line
        self.complete = True      # the body's framing was complete (see Conn.response)

    def header(self, name, default=None):
        vals = self.all(name)
        return vals[0] if vals else default

    def all(self, name):
        n = name.lower()
        return [v for k, v in self.headers if k.lower() == n]

    def connection_close(self):
        return any("close" in [t.strip().lower() for t in v.split(",")] for v in self.all("Connection"))

    @property
    def raw(self):
        return self.raw_head + self.body

    def text(self):
        return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return "<Response %s %s %r body=%r>" % (self.status, self.reason, self.headers, self.body[:300])


class Conn:
    """A client connection with a read buffer. target: a connected socket,
    an (host, port) address, or a port on 127.0.0.1. timeout=None keeps a
    given socket's own."""

    def __init__(self, target, timeout=5.0):
        if isinstance(target, socket.socket):
            self.sock = target
        else:
            addr = ("127.0.0.1", target) if isinstance(target, int) else tuple(target)
            self.sock = socket.create_connection(addr, timeout=timeout)
            if self.sock.family in (socket.AF_INET, socket.AF_INET6):
                # a test's separate writes reach the server as separate segments
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if timeout is not None:
            self.sock.settimeout(timeout)
        self.buf = b""
        self.responses = 0   # complete responses read on this connection
        self.sent = 0
        self.pid = None      # set by callers that learn which worker serves it
        self.closed_by_peer = False
        self._seen = 0       # bytes of the current response taken from buf so far

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # ---- sending -------------------------------------------------------------

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        try:
            self.sock.sendall(data)
        except socket.timeout:
            raise Timeout("timeout", "send")
        except ConnectionResetError as e:
            raise Reset("reset", "send: %s" % e)
        except BrokenPipeError as e:
            raise Broken("reset", "send: %s" % e)
        self.sent += 1

    def request(self, method, path, headers=(), body=None, version="1.1", host=True):
        """Sends one request: a Host header (127.0.0.1, or host if a string)
        unless headers has one, and a Content-Length for body unless headers
        frames it."""
        lines = ["%s %s HTTP/%s" % (method, path, version)]
        names = {n.lower() for n, _ in headers}
        if host and "host" not in names:
            lines.append("Host: %s" % (host if isinstance(host, str) else "127.0.0.1"))
        lines += ["%s: %s" % (n, v) for n, v in headers]
        if body is not None and "content-length" not in names and "transfer-encoding" not in names:
            lines.append("Content-Length: %d" % len(body))
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.send(data + (body.encode("latin-1") if isinstance(body, str) else body or b""))

    def exchange(self, path, method="GET", body=None, close=False, host="x"):
        """Sends one request (Connection: close if close) and reads its response."""
        self.request(method, path, [("Connection", "close")] if close else [], body=body, host=host)
        return self.read_response(method)

    # ---- reading -------------------------------------------------------------

    def _fill(self, lenient=False):
        got = self._seen + len(self.buf)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Timeout("timeout", "recv", self.buf)
        except (ConnectionResetError, BrokenPipeError) as e:
            if not lenient:
                raise Reset("cut" if got else "reset", "recv: %s" % e, self.buf)
            chunk = b""
        if not chunk:
            self.closed_by_peer = True
            raise Closed("cut" if got else "eof", "EOF", self.buf)
        self.buf += chunk

    def _take(self, n):
        out, self.buf = self.buf[:n], self.buf[n:]
        self._seen += len(out)
        return out

    def _line(self, lenient):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 65536:
                raise BadResponse("bad", "line too long", self.buf)
            self._fill(lenient)
        line = self._take(self.buf.index(b"\r\n") + 2)
        return line[:-2]

    def _exact(self, n, lenient):
        while len(self.buf) < n:
            self._fill(lenient)
        return self._take(n)

    def _head(self, lenient):
        status_line = self._line(lenient)
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise BadResponse("bad", "status line %r" % status_line, status_line + self.buf)
        headers, raw = [], [status_line]
        while True:
            line = self._line(lenient)
            raw.append(line)
            if not line:
                break
            k, sep, v = line.decode("latin-1").partition(":")
            if not sep or k != k.strip():
                raise BadResponse("bad", "header line %r" % line, b"\r\n".join(raw))
            headers.append((k, v.strip()))
        return Response(parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "", headers,
                        b"\r\n".join(raw) + b"\r\n")

    def read_response(self, method="GET", allow_interim=False, sink=None, lenient=False):
        """Reads one response. 1xx responses are skipped unless allow_interim.
        With sink (a callable), body bytes go to it instead of .body. lenient:
        see response()."""
        self._seen = 0
        while True:
            resp = self._head(lenient)
            if not 100 <= resp.status < 200 or allow_interim:
                break
            self._seen = 0
        pieces = []
        out = sink or pieces.append
        te, cl = resp.header("Transfer-Encoding"), resp.header("Content-Length")
        try:
            if method == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200:
                pass
            elif te is not None:
                if te.lower().split(",")[-1].strip() != "chunked":
                    raise BadResponse("bad", "Transfer-Encoding %r" % te)
                self._chunked(out, lenient)
            elif cl is not None:
                self._counted(int(cl), out, lenient)
            else:
                self._until_close(out, lenient)
        except Closed:
            if not lenient:
                raise
            resp.complete = False
        resp.body = b"".join(pieces)
        self.responses += 1
        return resp

    def response(self, head=False, sink=None):
        """The lenient reading: one response, 1xx ones included; a body cut
        by a close or reset comes back with .complete False."""
        return self.read_response("HEAD" if head else "GET", allow_interim=True, sink=sink, lenient=True)

    def _counted(self, n, out, lenient):
        while n:
            if not self.buf:
                self._fill(lenient)
            piece = self._take(n)
            n -= len(piece)
            out(piece)

    def _chunked(self, out, lenient):
        while True:
            size = int(self._line(lenient).split(b";")[0], 16)
            if size == 0:
                while self._line(lenient):  # trailers
                    pass
                return
            self._counted(size, out, lenient)
            if self._exact(2, lenient) != b"\r\n":
                raise BadResponse("bad", "chunk not ended by CRLF", self.buf)

    def _until_close(self, out, lenient):
        while True:
            if self.buf:
                out(self._take(len(self.buf)))
            try:
                self._fill(lenient)
            except Closed:
                return

    def read_until_close(self, limit=64 << 20):
        """Everything until EOF; a reset fails the test."""
        while len(self.buf) < limit:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                pytest.fail("connection reset instead of a clean close (buffered %r)" % self.buf[:200])
            if not chunk:
                break
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def assert_closed(self, timeout=None):
        """The server closed cleanly: nothing more buffered, then EOF (no reset)."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        rest = self.read_until_close()
        assert rest == b"", "unexpected bytes before close: %r" % rest[:300]

    def assert_open(self, wait=0.2):
        """Nothing arrives and the connection is not closed for `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return
        finally:
            self.sock.settimeout(5)
        assert False, "expected the connection open and silent, got %r" % chunk[:200]

    def wait_eof(self, timeout=3.0):
        """'eof' for a clean close, 'reset', 'timeout', or 'data' if bytes came instead."""
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(1)
        except socket.timeout:
            return "timeout"
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        return "data" if d else "eof"


def read_until_close(s, timeout=10, limit=1 << 30):
    """A bare socket's bytes until EOF, a reset, the socket's timeout or
    timeout seconds in all, whichever comes first (no error: the caller
    judges what arrived)."""
    end = time.monotonic() + timeout
    chunks = []
    total = 0
    while time.monotonic() < end and total < limit:
        try:
            b = s.recv(1 << 16)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        chunks.append(b)
        total += len(b)
    return b"".join(chunks)


def request(srv, data, method="GET", timeout=5.0):
    """One raw request on a fresh connection to srv (anything with
    .connect(timeout)); returns (response, conn)."""
    c = srv.connect(timeout)
    c.send(data)
    return c.read_response(method), c


def get(path="/", host="x", extra=""):
    """The bytes of a GET request."""
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, host, extra)).encode("latin-1")
