"""Client addresses behind a trusted proxy (--forwarded-allow-ips,
--forwarded-header): the review's three forgeries, sent from 127.0.0.1 as a
proxy there passes them on (the client's own header, then the proxy's
line), log the proxy-appended address and not the client's; the WSGI
environ gets the same REMOTE_ADDR and a wsgi.url_scheme only the proxy sets,
over TCP and from a proxy on a unix socket (--forwarded-allow-ips unix)."""
import json
import socket
import subprocess
import time

from lib.client import Conn

from lib.server import BIN
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

PROXY = "203.0.113.9"  # what the proxy appended: the real client


def _logged_clients(log, n, timeout=3.0):
    """The %h field of the log's "%h %r" lines for /f... (not the readiness
    probes' GET /), once there are n (the log is at most a second behind)."""
    end = time.monotonic() + timeout
    while True:
        try:
            lines = log.read_text().splitlines()
        except OSError:
            lines = []
        mine = [ln.split(" ")[0] for ln in lines if " /f" in ln]
        if len(mine) >= n or time.monotonic() > end:
            return mine


def _send(srv, path, fields):
    with Conn(srv.addr, 5) as c:
        c.send(b"GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % (path, fields))
        r = c.read_response()
    assert r.status in (200, 404), r.status


def test_forged_x_forwarded_for_is_not_logged(spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = spindle("--forwarded-allow-ips", "127.0.0.1", "--access-log", str(log),
                  "--access-log-format", "%h %r")
    # 1. nginx passes the client's Forwarded on beside its X-Forwarded-For.
    _send(srv, b"/f1", b"Forwarded: for=6.6.6.6\r\nX-Forwarded-For: " + PROXY.encode() + b"\r\n")
    # 2. HAProxy, Envoy: the proxy's line follows the client's own.
    _send(srv, b"/f2", b"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: " + PROXY.encode() + b"\r\n")
    # Only the selected header is read: a Forwarded alone names nobody.
    _send(srv, b"/f3", b"Forwarded: for=6.6.6.6\r\n")
    assert _logged_clients(log, 3) == [PROXY, PROXY, "127.0.0.1"]


def test_forged_forwarded_is_not_logged(spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = spindle("--forwarded-allow-ips", "127.0.0.1", "--forwarded-header", "forwarded",
                  "--access-log", str(log), "--access-log-format", "%h %r")
    # 3. Two Forwarded lines: the client's, then the proxy's.
    _send(srv, b"/f4", b"Forwarded: for=6.6.6.6\r\nForwarded: for=" + PROXY.encode() + b"\r\n")
    # An obfuscated hop names nobody, and X-Forwarded-For is not read instead.
    _send(srv, b"/f5", b"Forwarded: for=_hidden\r\nX-Forwarded-For: 6.6.6.6\r\n")
    assert _logged_clients(log, 2) == [PROXY, "127.0.0.1"]


def test_bad_settings_refused():
    for flags, msg in ((["--forwarded-header", "x-real-ip"],
                        b"--forwarded-header is x-forwarded-for or forwarded"),
                       (["--forwarded-allow-ips", "10.0.0.1, localhost"],
                        b"--forwarded-allow-ips wants IP addresses, CIDR networks, unix or *")):
        p = subprocess.run([BIN] + flags + ["--workers", "0"], capture_output=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and msg in p.stderr, (flags, p.stderr)


def _env(srv, fields, unix=None):
    head = b"GET /env HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % fields
    if unix:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(unix)
    else:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    with Conn(s, 5) as c:
        c.send(head)
        r = c.read_response()
    assert r.status == 200, r.status
    e = json.loads(r.body)
    return e["REMOTE_ADDR"], e["wsgi.url_scheme"]


def test_wsgi_remote_addr_and_scheme(wsgi_server):
    srv = wsgi_server("validated:application", "--forwarded-allow-ips", "127.0.0.1")
    forged = b"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: " + PROXY.encode() + b"\r\n" \
             b"X-Forwarded-Proto: https\r\nX-Forwarded-Proto: http\r\n"
    assert _env(srv, forged) == (PROXY, "http")
    genuine = b"Forwarded: for=6.6.6.6\r\nX-Forwarded-For: " + PROXY.encode() + b"\r\n" \
              b"X-Forwarded-Proto: https\r\n"
    assert _env(srv, genuine) == (PROXY, "https")
    assert _env(srv, b"") == ("127.0.0.1", "http")


def test_wsgi_proxy_on_a_unix_socket(wsgi_server, tmp_path):
    sock = str(tmp_path / "s.sock")
    srv = wsgi_server("validated:application", "--forwarded-allow-ips", "unix",
                      "--bind", "unix:" + sock)
    genuine = b"X-Forwarded-For: " + PROXY.encode() + b"\r\nX-Forwarded-Proto: https\r\n"
    assert _env(srv, genuine, unix=sock) == (PROXY, "https")
    assert _env(srv, b"", unix=sock) == ("127.0.0.1", "http")
    # "unix" trusts no TCP peer, 127.0.0.1 included.
    assert _env(srv, genuine) == ("127.0.0.1", "http")
