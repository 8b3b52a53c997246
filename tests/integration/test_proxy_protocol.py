"""--proxy-protocol: a load balancer's PROXY protocol header (v1 text, v2
binary) at the start of a connection names the client for the whole
connection: a C handler's sp_req_peer / sp_req_client_addr (the peer app),
the access log's %h, and WSGI's REMOTE_ADDR / REMOTE_PORT. UNKNOWN and
LOCAL leave the proxy's own address. A connection without a valid header,
or from a peer outside --forwarded-allow-ips, is closed without a byte of
HTTP. Raw sockets throughout: the header is what a proxy would send."""
import json
import pathlib
import socket
import struct
import subprocess
import time

from lib import server as spindle_server
import pytest
from lib.client import Conn
from lib.server import BIN
from lib.proctools import connect_bind, free_port, http_probe
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

APP = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_peer.so")
SIG = b"\r\n\r\n\x00\r\nQUIT\n"
V1 = b"PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\n"


def v2(cmd, fam, body):
    return SIG + bytes([0x20 | cmd, fam]) + struct.pack("!H", len(body)) + body


V2_INET = v2(1, 0x11, socket.inet_pton(socket.AF_INET, "192.0.2.8") +
             socket.inet_pton(socket.AF_INET, "198.51.100.1") + struct.pack("!HH", 40001, 443))
# IPv6 with TLVs after the addresses (ALPN, AUTHORITY, a NOOP): skipped.
V2_INET6_TLV = v2(1, 0x21, socket.inet_pton(socket.AF_INET6, "2001:db8::5") +
                  socket.inet_pton(socket.AF_INET6, "2001:db8::1") + struct.pack("!HH", 8080, 443) +
                  b"\x01\x00\x02h2" + b"\x02\x00\x0bexample.com" + b"\x04\x00\x03\x00\x00\x00")
V2_LOCAL = v2(0, 0x00, b"")


def _ready(srv, timeout=5.0):
    """Ready once a request behind a PROXY UNKNOWN header is answered."""
    def probe():
        with connect_bind(srv.binds[0], 1.0) as s:
            s.sendall(b"PROXY UNKNOWN\r\nGET / HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/1.")
    srv.wait_until(probe, timeout)


@pytest.fixture
def proxied(spindle, monkeypatch, tmp_path):
    """The peer app behind --proxy-protocol, a proxy on 127.0.0.1, logging "%h %r"."""
    monkeypatch.setattr(spindle_server.Server, "wait_ready", _ready)
    log = tmp_path / "access.log"
    srv = spindle("--app", APP, "--proxy-protocol", "--forwarded-allow-ips", "127.0.0.1",
                  "--access-log", str(log), "--access-log-format", "%h %r")
    srv.log = log
    return srv


def _conn(srv):
    return Conn(srv.addr, 5)


def _peer(c, close=False):
    c.send(b"GET /peer HTTP/1.1\r\nHost: x\r\n%s\r\n" % (b"Connection: close\r\n" if close else b""))
    r = c.read_response()
    assert r.status == 200, r
    return r.body.decode().split()


def _unanswered(data, addr, wait=5):
    """Sends data; the server closes (FIN or reset) without a byte back."""
    s = socket.create_connection(addr, timeout=wait)
    got = b""
    try:
        s.sendall(data)
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        s.close()
    assert got == b"", got[:200]


def _logged(log, n, timeout=3.0):
    end = time.monotonic() + timeout
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        mine = [ln.split(" ")[0] for ln in lines if " /peer" in ln]
        if len(mine) >= n or time.monotonic() > end:
            return mine


def test_v1_names_the_client_for_the_whole_connection(proxied):
    with _conn(proxied) as c:
        c.send(V1)
        assert _peer(c) == ["192.0.2.7:56324", "192.0.2.7"]
        # Keep-alive: the header was the connection's, not the request's.
        assert _peer(c, close=True) == ["192.0.2.7:56324", "192.0.2.7"]
    with _conn(proxied) as c:
        c.send(b"PROXY TCP6 2001:db8::7 2001:db8::1 1234 443\r\n")
        assert _peer(c, close=True) == ["[2001:db8::7]:1234", "2001:db8::7"]
    assert _logged(proxied.log, 3) == ["192.0.2.7", "192.0.2.7", "2001:db8::7"]


def test_v2_ipv4_and_ipv6_with_tlvs(proxied):
    with _conn(proxied) as c:
        c.send(V2_INET)
        assert _peer(c) == ["192.0.2.8:40001", "192.0.2.8"]
        assert _peer(c, close=True) == ["192.0.2.8:40001", "192.0.2.8"]
    with _conn(proxied) as c:
        c.send(V2_INET6_TLV)
        assert _peer(c, close=True) == ["[2001:db8::5]:8080", "2001:db8::5"]


def test_header_alone_then_the_request_later(proxied):
    """A proxy sends its header on connect; the client's bytes come after
    (the connection goes idle in between), in pieces."""
    with _conn(proxied) as c:
        c.send(V1[:9])
        time.sleep(0.05)
        c.send(V1[9:])
        time.sleep(0.1)
        assert _peer(c, close=True) == ["192.0.2.7:56324", "192.0.2.7"]


def test_unknown_and_local_keep_the_proxys_address(proxied):
    for hdr in (b"PROXY UNKNOWN\r\n", b"PROXY UNKNOWN whatever follows\r\n", V2_LOCAL,
                v2(1, 0x00, b"")):
        with _conn(proxied) as c:
            port = c.sock.getsockname()[1]
            c.send(hdr)
            assert _peer(c, close=True) == ["127.0.0.1:%d" % port, "127.0.0.1"], hdr


def test_client_named_by_the_header_is_not_a_trusted_proxy(proxied):
    """The header's client stands as the peer for --forwarded-allow-ips too:
    its own X-Forwarded-For is not believed."""
    with _conn(proxied) as c:
        c.send(V1 + b"GET /peer HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\n"
               b"Connection: close\r\n\r\n")
        r = c.read_response()
        assert r.body.decode().split() == ["192.0.2.7:56324", "192.0.2.7"]


def test_missing_or_bad_header_closes_unanswered(proxied):
    req = b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n"
    for data in (req,                                           # no header at all
                 b"\x16\x03\x01\x00\x05hello",                  # TLS
                 b"PROXY TCP4 192.0.2.7 198.51.100.1 65536 443\r\n" + req,  # port > 65535
                 b"PROXY TCP4 ::1 198.51.100.1 1 443\r\n" + req,            # wrong family
                 b"PROXY UNKNOWN " + b"x" * 100 + b"\r\n" + req,            # over 107 bytes
                 b"PROXY TCP4 192.0.2.7 198.51.100.1 1 443\n" + req,        # bare LF
                 SIG + b"\x31\x11\x00\x0c" + b"\x00" * 12 + req,            # v2, version 3
                 v2(1, 0x11, b"\x00" * 11) + req,                           # v2, short block
                 v2(1, 0x12, b"\x00" * 12) + req,                           # v2, datagram
                 # v2 with 64 KiB of TLVs: valid, but longer than the read buffer.
                 v2(1, 0x11, b"\x00" * 12 + b"\x04\xff\xf0" + b"\x00" * 0xfff0) + req):
        _unanswered(data, proxied.addr)
    # A header cut short, then silence: closed at the header timeout (1 s),
    # with no 408: the peer does not speak HTTP to us.
    _unanswered(V1[:20], proxied.addr)
    proxied.wait_until(lambda: "connection from 127.0.0.1 closed: it did not begin with a "
                       "valid PROXY protocol header" in proxied.stderr(), 3)
    # The server is still fine.
    with _conn(proxied) as c:
        c.send(V1)
        assert _peer(c, close=True)[1] == "192.0.2.7"


def test_untrusted_peer_is_closed(spindle, monkeypatch):
    """Only the proxies in --forwarded-allow-ips may send the header."""
    monkeypatch.setattr(spindle_server.Server, "wait_ready", lambda srv, timeout=5.0: None)
    srv = spindle("--app", APP, "--proxy-protocol", "--forwarded-allow-ips", "10.9.9.9")
    srv.wait_until(lambda: socket.create_connection(srv.addr, timeout=1).close() or True, 5)
    time.sleep(0.3)  # the worker is up
    _unanswered(V1 + b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n", srv.addr)
    srv.wait_until(lambda: "connection from 127.0.0.1 closed" in srv.stderr() and
                   "only the proxies in --forwarded-allow-ips" in srv.stderr(), 3)


def test_one_listener_behind_the_proxy(spindle, monkeypatch):
    """--bind proxy://ADDR: that listener takes headers, the others plain HTTP."""
    monkeypatch.setattr(spindle_server.Server, "wait_ready",
                        lambda srv, timeout=5.0: srv.wait_until(lambda: http_probe(srv.binds[0]),
                                                                timeout))
    pport = free_port()
    srv = spindle("--app", APP, "--forwarded-allow-ips", "127.0.0.1",
                  binds=["127.0.0.1:%d" % free_port(), "proxy://127.0.0.1:%d" % pport])
    with _conn(srv) as c:  # the plain listener
        port = c.sock.getsockname()[1]
        assert _peer(c, close=True) == ["127.0.0.1:%d" % port, "127.0.0.1"]
    with Conn(("127.0.0.1", pport), 5) as c:
        c.send(V2_INET)
        assert _peer(c, close=True) == ["192.0.2.8:40001", "192.0.2.8"]
    _unanswered(b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n", ("127.0.0.1", pport))


def test_stats_bind_is_not_behind_the_proxy(spindle, monkeypatch):
    monkeypatch.setattr(spindle_server.Server, "wait_ready", _ready)
    sport = free_port()
    spindle("--app", APP, "--proxy-protocol", "--forwarded-allow-ips", "127.0.0.1",
            "--stats", "/stats", "--stats-bind", "127.0.0.1:%d" % sport)
    with Conn(("127.0.0.1", sport), 5) as c:
        c.send(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert c.read_response().status == 200


def test_needs_forwarded_allow_ips():
    p = subprocess.run([BIN, "--proxy-protocol", "--workers", "0"], capture_output=True,
                       timeout=10, stdin=subprocess.DEVNULL)
    assert p.returncode != 0
    assert b"--proxy-protocol needs --forwarded-allow-ips" in p.stderr, p.stderr
    p = subprocess.run([BIN, "--bind", "proxy://127.0.0.1:1", "--workers", "0"],
                       capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    assert p.returncode != 0
    assert b"--bind proxy:// needs --forwarded-allow-ips" in p.stderr, p.stderr


def _env(srv, hdr):
    with Conn(("127.0.0.1", srv.port), 5) as c:
        port = c.sock.getsockname()[1]
        c.send(hdr)
        out = []
        for close in (b"", b"Connection: close\r\n"):
            c.send(b"GET /env HTTP/1.1\r\nHost: x\r\n%s\r\n" % close)
            r = c.read_response()
            assert r.status == 200, r.status
            e = json.loads(r.body)
            out.append((e["REMOTE_ADDR"], e["REMOTE_PORT"]))
    return out, port


def test_wsgi_remote_addr_and_port(wsgi_server):
    srv = wsgi_server("validated:application", "--proxy-protocol", "--forwarded-allow-ips",
                      "127.0.0.1")
    got, _ = _env(srv, V1)
    assert got == [("192.0.2.7", "56324")] * 2  # both requests of the connection
    got, _ = _env(srv, V2_INET6_TLV)
    assert got == [("2001:db8::5", "8080")] * 2
    got, port = _env(srv, V2_LOCAL)
    assert got == [("127.0.0.1", str(port))] * 2
    _unanswered(b"GET /env HTTP/1.1\r\nHost: x\r\n\r\n", ("127.0.0.1", srv.port))


def test_unknown_and_local_do_not_trust_the_clients_forwarded_headers(proxied):
    """UNKNOWN / LOCAL name no client: the connection is the proxy's own (a
    health check) or one it relays without saying whose. The proxy stays the
    peer, but it is not vouching for the request's X-Forwarded-For, which
    came from whoever is on the other side: ignored, never the client."""
    for hdr in (b"PROXY UNKNOWN\r\n", V2_LOCAL, v2(1, 0x00, b"")):
        with _conn(proxied) as c:
            port = c.sock.getsockname()[1]
            c.send(hdr + b"GET /peer HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 7.7.7.7\r\n"
                   b"Forwarded: for=7.7.7.8\r\nConnection: close\r\n\r\n")
            r = c.read_response()
            assert r.body.decode().split() == ["127.0.0.1:%d" % port, "127.0.0.1"], hdr
    assert _logged(proxied.log, 3) == ["127.0.0.1"] * 3


def test_wsgi_unknown_ignores_forwarded_for(wsgi_server):
    srv = wsgi_server("validated:application", "--proxy-protocol", "--forwarded-allow-ips",
                      "127.0.0.1")
    with Conn(("127.0.0.1", srv.port), 5) as c:
        c.send(b"PROXY UNKNOWN\r\nGET /env HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 7.7.7.7\r\n"
               b"X-Forwarded-Proto: https\r\nConnection: close\r\n\r\n")
        e = json.loads(c.read_response().body)
    assert e["REMOTE_ADDR"] == "127.0.0.1"
    assert e["wsgi.url_scheme"] == "http"
