"""test_h2_tls.py — HTTP/2 by ALPN on TLS listeners: "h2" offered before
"http/1.1" (unless --http2 off), the same driver as h2c behind it
(python3-h2 over ssl, curl and nghttp over https://), HTTP/1.1 still
chosen by clients that ask for it.
"""
import os
import socket
import subprocess

import pytest

from lib.server import CURL
from hyperframe.frame import SettingsFrame

from lib.h2util import Raw, ended_despite_pings, h2_requests
from lib.tlsutil import certs  # noqa: F401 (the session fixture)


def ctx(certs, alpn):  # noqa: F811
    return certs.context(alpn=alpn)


@pytest.fixture
def tls(spindle, certs):  # noqa: F811
    def start(*flags):
        return spindle(*(certs.flags("localhost") + list(flags)))
    return start


def test_alpn_h2_streams(tls, certs):  # noqa: F811
    srv = tls()
    body = os.urandom(300000)
    out = h2_requests(srv.port, [("GET", "/", (), b""), ("POST", "/echo", (), body),
                                 ("GET", "/nope", (), b"")], tls=ctx(certs, ["h2", "http/1.1"]))
    assert out[0][0] == 200 and out[0][2] == b"Hello world!"
    assert out[1][0] == 200 and out[1][2] == body
    assert out[2][0] == 404


def test_curl_and_nghttp_over_https(tls, certs):  # noqa: F811
    srv = tls()
    url = "https://localhost:%d/" % srv.port
    r = subprocess.run([CURL, "-sS", "--max-time", "5", "--http2", "--cacert", certs.ca, "--resolve",
                        "localhost:%d:127.0.0.1" % srv.port, "-w", " %{http_version}", url],
                       capture_output=True, timeout=10)
    assert r.stdout == b"Hello world! 2", r.stderr
    r = subprocess.run(["nghttp", "-n", "--stat", url], capture_output=True, timeout=10,
                       env=dict(os.environ, SSL_CERT_FILE=str(certs.ca)))
    assert r.returncode == 0 and b" 200 " in r.stdout, r.stderr


def test_http11_when_asked_or_http2_off(tls, certs):  # noqa: F811
    srv = tls()
    s = ctx(certs, ["http/1.1"]).wrap_socket(socket.create_connection(
        ("127.0.0.1", srv.port), timeout=5), server_hostname="localhost")
    assert s.selected_alpn_protocol() == "http/1.1"
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    s.close()
    off = tls("--http2", "off")
    s = ctx(certs, ["h2", "http/1.1"]).wrap_socket(socket.create_connection(
        ("127.0.0.1", off.port), timeout=5), server_hostname="localhost")
    assert s.selected_alpn_protocol() == "http/1.1"
    s.close()


def test_idle_h2_over_tls_wakes_for_the_next_request(tls, certs):  # noqa: F811
    # between requests the connection is idle (no coroutine; OpenSSL's
    # buffers given back); the next request's record wakes it
    import time
    import h2.connection
    import h2.config
    import h2.events
    srv = tls()
    s = ctx(certs, ["h2"]).wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=5),
                                       server_hostname="localhost")
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    c.initiate_connection()
    bodies = []
    for i in range(3):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "GET"), (":scheme", "https"), (":path", "/"),
                             (":authority", "localhost")], end_stream=True)
        s.sendall(c.data_to_send())
        body, done = b"", False
        while not done:
            for ev in c.receive_data(s.recv(65536)):
                if isinstance(ev, h2.events.DataReceived):
                    body += ev.data
                elif isinstance(ev, h2.events.StreamEnded):
                    done = True
            s.sendall(c.data_to_send())
        bodies.append(body)
        time.sleep(0.3)
    assert bodies == [b"Hello world!"] * 3
    s.close()


def test_zero_window_streams_end_despite_pings(tls, certs):  # noqa: F811
    # The send timeout judges output progress over TLS too: PINGs (each a
    # TLS record read) do not keep streams whose window is shut.
    srv = tls("--send-timeout", "1")
    sock = ctx(certs, ["h2"]).wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=3),
                                          server_hostname="localhost")
    assert sock.selected_alpn_protocol() == "h2"
    r = Raw(srv.port, sock=sock, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    ids = [r.headers() for _ in range(4)]
    assert ended_despite_pings(r, ids) >= set(ids)


@pytest.mark.parametrize("case", ["head_deadline_ends_it", "trickled_bodies_are_cut",
                                  "pings_alone_end_in_goaway"])
def test_http11_clocks_over_tls(tls, certs, case):  # noqa: F811
    """The HTTP/1.1 clocks applied to HTTP/2 (test_h2_attacks.py's h2c cases)
    hold over h2 with TLS too, with the fixture's 1 s header, body and
    keep-alive limits."""
    import test_h2_attacks
    srv = tls()
    sock = ctx(certs, ["h2"]).wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=3),
                                          server_hostname="localhost")
    assert sock.selected_alpn_protocol() == "h2"
    getattr(test_h2_attacks, case)(Raw(srv.port, sock=sock))


def test_stream_and_body_limits_over_tls(tls, certs):  # noqa: F811
    """--http2-max-streams and --max-body-size hold over h2 with TLS as over
    h2c (test_h2_attacks.py): the fifth concurrent stream is refused while
    four finish, and a declared body over the limit is a 413."""
    from lib.h2util import REFUSED_STREAM
    from hyperframe.frame import DataFrame

    srv = tls("--http2-max-streams", "4", "--max-body-size", "100000")

    def raw():
        sock = ctx(certs, ["h2"]).wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=3),
                                              server_hostname="localhost")
        return Raw(srv.port, sock=sock)
    r = raw()
    ids = [r.headers(path="/sleep?ms=400") for _ in range(5)]
    assert r.reset_code(ids[4], timeout=2) == REFUSED_STREAM
    done = sum(1 for f in r.until(lambda f: False, timeout=1.5)
               if isinstance(f, DataFrame) and "END_STREAM" in f.flags)
    assert done == 4
    r = raw()
    sid = r.headers(method="POST", path="/echo", end_stream=False, extra=[("content-length", "200000")])
    h, _, _ = r.response(sid)
    assert h[":status"] == "413"
