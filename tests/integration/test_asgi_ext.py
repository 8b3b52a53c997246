"""The ASGI extensions spindle serves (asgiref's extensions.rst and the TLS
spec), each declared in scope["extensions"] only where it is served, against
real clients: raw sockets for HTTP/1.1, python h2 for HTTP/2, python ssl
for TLS, and hypercorn side by side for early hints and trailers over h2.
tests/fixtures/asgi/asgi_ext.py is the application."""
import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import time

import h2.events
import pytest

from lib.asgiutil import APPS, PYPATH, asgi  # noqa: F401
from lib.h2util import h2_client
from lib.proctools import connect_probe, free_port
from lib.tlsutil import certs  # noqa: F401 (the session fixture)
from lib.client import read_until_close

BLOB = os.urandom(300_000)


@pytest.fixture
def ext(asgi, tmp_path):  # noqa: F811
    blob = tmp_path / "blob.bin"
    blob.write_bytes(BLOB)

    def start(*flags):
        return asgi("asgi_ext:app", *flags, env={"EXT_BLOB": str(blob)}, expect_tracebacks=True)  # the refusals are logged
    return start


def raw(port, path, extra="", version="1.1", tls=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if tls:
        s = tls.wrap_socket(s, server_hostname="localhost")
    s.sendall(("GET %s HTTP/%s\r\nHost: x\r\n%sConnection: close\r\n\r\n"
               % (path, version, extra)).encode())
    out = read_until_close(s)
    s.close()
    return out


def split(out):
    """The final response of raw bytes: (head, body); interim heads dropped."""
    while out.startswith(b"HTTP/1.1 1"):
        out = out.split(b"\r\n\r\n", 1)[1]
    head, body = out.split(b"\r\n\r\n", 1)
    return head, body


def h2_events(port, path, extra=(), tls=None):
    """One GET over HTTP/2 (python h2): the events of its stream, in order."""
    s, c = h2_client(port, tls=tls)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "GET"), (":scheme", "https" if tls else "http"),
                         (":path", path), (":authority", "localhost")] + list(extra),
                   end_stream=True)
    s.sendall(c.data_to_send())
    evs, end = [], time.monotonic() + 5
    while time.monotonic() < end:
        data = s.recv(65536)
        if not data:
            break
        for ev in c.receive_data(data):
            if getattr(ev, "stream_id", None) != sid:
                continue
            evs.append(ev)
            if isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, sid)
        s.sendall(c.data_to_send())
        if any(isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) for e in evs):
            break
    s.close()
    return evs


def summary(evs):
    """(kind, headers-or-data) per event: what a comparison can look at."""
    out = []
    for e in evs:
        if isinstance(e, h2.events.InformationalResponseReceived):
            out.append(("interim", [h for h in e.headers if h[0] not in ("date", "server")]))
        elif isinstance(e, h2.events.ResponseReceived):
            out.append(("response", [h for h in e.headers if h[0] not in ("date", "server")]))
        elif isinstance(e, h2.events.DataReceived):
            if out and out[-1][0] == "data":
                out[-1] = ("data", out[-1][1] + e.data)
            else:
                out.append(("data", e.data))
        elif isinstance(e, h2.events.TrailersReceived):
            out.append(("trailers", list(e.headers)))
        elif isinstance(e, h2.events.StreamReset):
            out.append(("reset", e.error_code))
    return out


def keys(port, **kw):
    return json.loads(split(raw(port, "/ext", **kw))[1])["keys"]


BASE = ["http.response.pathsend", "http.response.zerocopysend"]


def test_extensions_declared_only_where_served(ext):
    srv = ext()
    assert keys(srv.port) == sorted(BASE + ["http.response.early_hint"])
    assert keys(srv.port, extra="TE: trailers\r\n") == sorted(
        BASE + ["http.response.early_hint", "http.response.trailers"])
    assert keys(srv.port, version="1.0") == BASE  # no 1xx, no chunked trailers on HTTP/1.0
    ev = summary(h2_events(srv.port, "/ext"))
    assert json.loads(ev[1][1])["keys"] == sorted(BASE + ["http.response.early_hint"])
    ev = summary(h2_events(srv.port, "/ext", extra=[("te", "trailers")]))
    assert "http.response.trailers" in json.loads(ev[1][1])["keys"]
    assert json.loads(ev[1][1])["tls"] is None  # a plain connection has no tls extension


def test_early_hints_over_http11(ext):
    srv = ext()
    out = raw(srv.port, "/hints")
    first, rest = out.split(b"\r\n\r\n", 1)
    assert first == (b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n"
                     b"Link: </app.js>; rel=preload"), out  # trimmed, as a field value is
    second, rest = rest.split(b"\r\n\r\n", 1)
    assert second == b"HTTP/1.1 103 Early Hints\r\nLink: </late-but-ok.css>", out
    head, body = split(rest)
    assert head.startswith(b"HTTP/1.1 200 OK") and b"\r\nSet-Cookie" not in out, out
    r = json.loads(body.split(b"\r\n")[3])  # the second chunk
    assert "no CR, LF, NUL" in r["bad"], r
    assert "after the response head went out" in r["late"], r
    # HTTP/1.0: no 1xx at all (RFC 9110 §15.2), the answer as usual
    out = raw(srv.port, "/hints", version="1.0")
    assert out.startswith(b"HTTP/1.0 200 OK") and b"Early Hints" not in out, out


def test_early_hints_over_h2(ext):
    ev = summary(h2_events(ext().port, "/hints"))
    assert ev[0] == ("interim", [(":status", "103"), ("link", "</style.css>; rel=preload; as=style"),
                                 ("link", "</app.js>; rel=preload")]), ev
    assert ev[1] == ("interim", [(":status", "103"), ("link", "</late-but-ok.css>")]), ev
    assert ev[2][0] == "response" and (":status", "200") in ev[2][1], ev


def test_trailers_over_http11_need_te(ext):
    srv = ext()
    head, body = split(raw(srv.port, "/trailers", extra="TE: trailers\r\n"))
    assert b"Transfer-Encoding: chunked" in head and b"Content-Length" not in head, head
    assert b"Trailer: x-checksum, grpc-status" in head, head
    assert body.startswith(b"9\r\npart one \r\n0\r\nx-checksum: abc\r\ngrpc-status: 0\r\n"), body
    assert b"x-bad-was: invalid trailer" in body and body.endswith(b"\r\n\r\n"), body
    # no TE: trailers: the extension is not declared and the trailers are dropped
    head, body = split(raw(srv.port, "/trailers"))
    assert b"Content-Length: 9" in head and b"Trailer" not in head and body == b"part one ", head
    # announced, never sent: the body ends as it is
    head, body = split(raw(srv.port, "/trailers-none", extra="TE: trailers\r\n"))
    assert body == b"10\r\nno trailers came\r\n0\r\n\r\n", body
    # trailers asked but not served (no TE): framed as any other whole body
    head, body = split(raw(srv.port, "/trailers-none"))
    assert b"Content-Length: 16" in head and body == b"no trailers came", head


def test_trailers_over_h2(ext):
    ev = summary(h2_events(ext().port, "/trailers", extra=[("te", "trailers")]))
    assert ev[0][0] == "response" and ("content-length", "9") in ev[0][1], ev
    assert ev[1] == ("data", b"part one "), ev
    assert ev[2][0] == "trailers" and ev[2][1][:2] == [("x-checksum", "abc"), ("grpc-status", "0")]


def test_zerocopysend(ext):
    srv = ext()
    head, body = split(raw(srv.port, "/zerocopy"))
    assert b"Content-Length: 300000" in head and body == BLOB
    assert split(raw(srv.port, "/zerocopy?mode=range"))[1] == BLOB[10:30]
    body = split(raw(srv.port, "/zerocopy?mode=position"))[1]
    assert body == b"5\r\n%s\r\n5\r\n%s\r\n9\r\n|tell=110\r\n0\r\n\r\n" % (BLOB[100:105], BLOB[105:110])
    assert b"past the end of the file" in split(raw(srv.port, "/zerocopy?mode=past"))[1]
    for path in ("/zerocopy", "/pathsend"):  # HTTP/2: read into DATA frames
        ev = summary(h2_events(srv.port, path))
        assert ev[1] == ("data", BLOB), (path, [e[0] for e in ev])


def test_tls_scope_extension(ext, certs):  # noqa: F811
    srv = ext(*certs.flags(), "--ca-certs", certs.ca, "--cert-reqs", "optional")
    for client in (None, "client"):
        ctx = certs.context(client=client)
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=5),
                            server_hostname="localhost")
        s.sendall(b"GET /ext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        cipher, version = s.cipher()[0], s.version()
        out = read_until_close(s)
        s.close()
        t = json.loads(split(out)[1])["tls"]
        with open(certs.cert("localhost")) as f:
            assert t["server_cert"] == f.read(), t["server_cert"]
        assert t["tls_version"] == {"TLSv1.3": 0x0304, "TLSv1.2": 0x0303}[version]
        ids = {"TLS_AES_128_GCM_SHA256": 0x1301, "TLS_AES_256_GCM_SHA384": 0x1302,
               "TLS_CHACHA20_POLY1305_SHA256": 0x1303}
        assert t["cipher_suite"] == ids[cipher], (cipher, t["cipher_suite"])
        assert t["client_cert_error"] is None
        if client is None:
            assert t["client_cert_chain"] == [] and t["client_cert_name"] is None, t
        else:
            # the client's certificate first, then what the client sent after it: OpenSSL's
            # client builds the chain from its trust store, so here the CA
            with open(certs.cert("client")) as f, open(certs.ca) as ca:
                assert t["client_cert_chain"] == [f.read(), ca.read()], t["client_cert_chain"]
            assert "CN=client" in t["client_cert_name"], t
    # client_cert_error is None in every scope because a failed certificate is
    # never let through: one of another CA is refused at the handshake, even
    # with --cert-reqs optional, so no scope is made for it
    raw_sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    try:  # (TLS 1.3: the refusal may come after the client's handshake ends)
        s = certs.context(client="stranger").wrap_socket(raw_sock, server_hostname="localhost")
        s.sendall(b"GET /ext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        out = read_until_close(s)
    except (ssl.SSLError, ConnectionError):
        out = b""
    raw_sock.close()
    assert out == b"", out
    # a wss:// scope has it too
    s = certs.context().wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=5),
                                    server_hostname="localhost")
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    out = read_until_close(s)
    s.close()
    assert out.startswith(b"HTTP/1.1 101"), out
    frame = out.split(b"\r\n\r\n", 1)[1]
    n = frame[1] & 0x7F  # a short text frame from the server: not masked
    assert json.loads(frame[2:2 + n]) == {"keys": ["tls", "websocket.http.response"],
                                          "tls_version": 0x0304}, frame
    # the core's TLS sendfile path (or its fallback) serves zero-copy send too
    for path in ("/zerocopy", "/pathsend"):
        assert split(raw(srv.port, path, tls=certs.context()))[1] == BLOB, path


@pytest.fixture
def hypercorn(tmp_path):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=PYPATH + os.pathsep + str(APPS))
    p = subprocess.Popen([sys.executable, "-m", "hypercorn", "asgi_ext:app", "--bind",
                          "127.0.0.1:%d" % port], cwd=APPS, env=env,
                         stdout=subprocess.DEVNULL, stderr=open(tmp_path / "hyp.err", "wb"))
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            connect_probe(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    yield port
    p.terminate()
    p.wait(5)


def test_side_by_side_with_hypercorn_over_h2(ext, hypercorn):
    """The same application's hint and trailers, over h2c, from spindle and
    from hypercorn 0.18 (which serves both only over HTTP/2): the same
    frames, apart from the content-length spindle adds to a known body."""
    srv = ext()
    for path in ("/peer/hints", "/peer/trailers"):
        ours = summary(h2_events(srv.port, path, extra=[("te", "trailers")]))
        theirs = summary(h2_events(hypercorn, path, extra=[("te", "trailers")]))
        strip = [(k, [h for h in v if h[0] != "content-length"] if k == "response" else v)
                 for k, v in ours]
        assert strip == theirs, (path, ours, theirs)
