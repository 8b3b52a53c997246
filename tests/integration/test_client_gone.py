"""A client that leaves before its answer (it closes, or resets with
SO_LINGER 0, while the app is still sleeping or waiting for the rest of
the upload) is logged as nginx does, 499 "client closed request", and
counted in --stats under class="client_closed": never a 500, a 5xx or a
handler failure in the error log. ASGI (bare and FastAPI), WSGI, and an
HTTP/2 stream the client resets with RST_STREAM CANCEL."""
import os
import re
import socket
import struct
import time

import pytest

from lib.asgiutil import AsgiServer
from lib.h2util import CANCEL, Raw, raw_frame, RST_STREAM
from lib.wsgiutil import PYPATH, WsgiServer, wait_for

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "gone")


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(kind, spec):
        log = tmp_path / ("access-%d.log" % len(servers))
        cls = AsgiServer if kind == "asgi" else WsgiServer
        s = cls(spec, ["--access-log", str(log), "--access-log-format", "%s %r",
                       "--stats", "/stats"], chdir=HERE, logdir=tmp_path,
                env={"PYTHONPATH": PYPATH + os.pathsep + HERE})
        s.access = log
        servers.append(s)
        return s.start()

    yield start
    problems = []
    for s in servers:
        s.stop()
        problems += s.problems()
    assert not problems, problems


def _leave(port, data, reset):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    time.sleep(0.2)  # the app is running, awaiting its sleep or the upload
    if reset:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _stats(srv):
    body = srv.get("/stats").body.decode()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'spindle_requests_total\{class="(\w+)"\} (\d+)', body)}


def _check(srv, n):
    """n departures: n 499 lines, none else, no 5xx, no failure logged."""
    def lines():
        return [ln for ln in srv.access.read_text().splitlines()
                if "/stats" not in ln] if srv.access.exists() else []
    wait_for(lambda: len(lines()) >= n, 5)
    time.sleep(0.8)  # the app's late answer had its chance to be miscounted
    assert [ln.split()[0] for ln in lines()] == ["499"] * n, lines()
    st = _stats(srv)
    assert st.get("5xx", 0) == 0 and st.get("client_closed") == n, st
    err = srv.stderr()
    assert "failed" not in err and "answered 500" not in err, err[-2000:]


SLOW = b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
UPLOAD = b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"a" * 10


@pytest.mark.parametrize("kind,spec", [("asgi", "gone_asgi:app"), ("asgi", "gone_asgi:fast"),
                                       ("wsgi", "gone_wsgi:application")])
def test_client_gone_before_the_answer_is_499(serve, kind, spec):
    if spec.endswith(":fast"):
        pytest.importorskip("fastapi")
    srv = serve(kind, spec)
    for reset in (False, True):
        _leave(srv.port, SLOW, reset)
        _leave(srv.port, UPLOAD, reset)
    _check(srv, 4)


def test_h2_stream_cancelled_during_a_slow_answer_is_499(serve):
    srv = serve("asgi", "gone_asgi:app")
    # The worker answers only once it has imported the app: a stream sent
    # before would have its HEADERS and RST_STREAM read together, and a
    # stream reset before it runs is never a request (nothing to log).
    _stats(srv)
    c = Raw(srv.port)
    c.headers(1, c.req_headers("/slow"))
    time.sleep(0.2)
    c.send(raw_frame(RST_STREAM, 0, 1, struct.pack("!I", CANCEL)))
    # The connection lives on: a next stream is answered.
    c.headers(3, c.req_headers("/slow"))
    hdrs, _, reset = c.response(3)
    c.close()
    assert hdrs.get(":status") == "200" and reset is None, (hdrs, reset)
    def lines():
        return [ln for ln in srv.access.read_text().splitlines()
                if "/stats" not in ln] if srv.access.exists() else []
    wait_for(lambda: len(lines()) >= 2, 5)
    time.sleep(0.8)
    assert sorted(ln.split()[0] for ln in lines()) == ["200", "499"], lines()
    st = _stats(srv)
    assert st.get("5xx", 0) == 0 and st.get("client_closed") == 1, st
    err = srv.stderr()
    assert "failed" not in err and "answered 500" not in err, err[-2000:]
