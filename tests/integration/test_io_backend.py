"""The io_uring loop backend (issue 23): --io-backend uring serves
keep-alive, pipelined and Connection: close requests, large uploads and
downloads, a WebSocket and a static file; a close really closes (EOF, and
the fd count comes back down); two workers share the listener; a HUP reload
loses no request; the log names the backend; where io_uring_setup is
forbidden (a seccomp filter, tests/tools/no_uring) each worker logs one line
and serves over epoll; a bogus --io-backend exits 2."""
import os
import pathlib
import signal
import socket
import struct
import subprocess
import time

import pytest

from lib.client import Conn

from lib.server import BIN, ROOT
from lib.opsutil import Load, ops_spindle, wait_for  # noqa: F401
from lib.procutil import APP_BLOCKING, w_spindle_factory
from lib.client import Conn as PConn
from lib.backend import uring_available

URING = ["--io-backend", "uring"]
APP_WS = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_ws.so")
NO_URING = str(ROOT / "build" / "tests" / "tools" / "no_uring")  # the release tree: ASan runs use it too


needs_uring = pytest.mark.skipif(not uring_available(),
                                 reason="io_uring is unavailable on this machine (forbidden or "
                                        "missing): only the fallback is tested")


@pytest.fixture
def w_spindle(tmp_path):
    yield from w_spindle_factory(tmp_path)


def wait_log(srv, text, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in srv.stderr():
            return True
        time.sleep(0.05)
    return False


@needs_uring
def test_uring_keepalive_pipelined_and_close(spindle):
    srv = spindle(*URING)
    assert wait_log(srv, "event loop io_uring"), srv.stderr()
    with srv.connect() as c:
        for _ in range(5):  # keep-alive
            c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.read_response()
            assert r.status == 200 and r.body == b"Hello world!", r
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 8)  # pipelined, one write
        for _ in range(8):
            assert c.read_response().body == b"Hello world!"
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        r = c.read_response()
        assert r.status == 200 and r.connection_close(), r
        c.sock.settimeout(2)
        assert c.sock.recv(1) == b"", "no EOF after Connection: close"


@needs_uring
def test_uring_large_upload(spindle):
    srv = spindle(*URING, "--send-timeout", "5", "--body-timeout", "5")
    with srv.connect(timeout=10) as c:
        body = os.urandom(2 << 20)
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        c.send(body)
        r = c.read_response()
        assert r.status == 200 and r.body == body, (r.status, len(r.body))
    # (a streamed echo answers before the whole body is read: it closes, on
    # either backend)


@needs_uring
def test_uring_static_download(spindle, tmp_path):
    big = os.urandom(3 << 20)
    (tmp_path / "big.bin").write_bytes(big)
    (tmp_path / "small.txt").write_bytes(b"static over io_uring\n")
    srv = spindle(*URING, "--root", str(tmp_path), "--send-timeout", "5")
    with srv.connect(timeout=10) as c:
        c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.read_response()
        assert r.status == 200 and r.body == big, (r.status, len(r.body))
        c.send(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().body == b"static over io_uring\n"


def ws_frame(op, payload):
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return struct.pack("!BB", 0x80 | op, 0x80 | len(payload)) + mask + masked


@needs_uring
def test_uring_websocket_echo(spindle):
    if not os.path.exists(APP_WS):
        pytest.fail("%s is not built" % APP_WS)
    srv = spindle(*URING, "--app", APP_WS)
    s = socket.create_connection(srv.addr, timeout=5)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    for msg in (b"hello", b"io_uring" * 10):
        s.sendall(ws_frame(1, msg))
        want = 2 + len(msg)
        while len(rest) < want:
            rest += s.recv(4096)
        assert rest[:2] == bytes([0x81, len(msg)]) and rest[2:want] == msg, rest
        rest = rest[want:]
    s.sendall(ws_frame(8, struct.pack("!H", 1000)))
    end = time.monotonic() + 3
    while time.monotonic() < end:  # the close frame, then EOF
        chunk = s.recv(4096)
        if not chunk:
            break
    else:
        pytest.fail("no EOF after the WebSocket close")
    s.close()


@needs_uring
def test_uring_close_really_closes(spindle):
    srv = spindle(*URING)
    with srv.connect() as c:  # one warm connection: the pools are made
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        c.read_response()
    time.sleep(0.2)
    base = srv.fd_count()
    socks = []
    for _ in range(200):
        s = socket.create_connection(srv.addr, timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        socks.append(s)
    for s in socks:
        data = b""
        while True:  # every one ends in EOF: the server's close took effect
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"Hello world!"), data
        s.close()
    # A poll left armed would hold each socket open behind a closed fd
    # number; a close never submitted would leave the fd itself.
    assert wait_for(lambda: srv.fd_count() <= base + 2, 3), (base, srv.fd_count())


@needs_uring
def test_uring_two_workers_share_the_listener(w_spindle):
    srv = w_spindle(*URING, "--app", APP_BLOCKING, workers=2, ready_path="/pid")
    kids = srv.children()
    assert len(kids) == 2
    first = PConn(srv.addr, timeout=3)
    busy = int(first.exchange("/pid").body)
    # One worker busy for 1 s: a new connection is served by the other one.
    first.send(b"GET /block?s=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.1)
    t0 = time.monotonic()
    other = PConn(srv.addr, timeout=3)
    pid = int(other.exchange("/pid").body)
    assert pid != busy and pid in kids, (pid, busy, kids)
    assert time.monotonic() - t0 < 0.8, "the new connection waited for the busy worker"
    assert first.read_response().status == 200
    err = srv.stderr()
    assert err.count("event loop io_uring") == 2, err
    first.close()
    other.close()


@needs_uring
def test_uring_hup_reload_loses_nothing(ops_spindle):
    srv = ops_spindle(*URING, "--keepalive-timeout", "2", workers=2)
    gen1 = srv.workers_now()
    load = Load(srv.addr, keepalive=4, fresh=2, interval=0.05).start()
    try:
        time.sleep(0.8)
        srv.signal(signal.SIGHUP)
        gen2 = wait_for(lambda: (lambda w: w if len(w - gen1) >= 2 else None)(srv.workers_now()), 5)
        assert gen2, "no new generation 5 s after HUP:\n" + srv.stderr()
        time.sleep(1.0)
    finally:
        load.stop()
    assert not load.failures, "lost requests across a reload (%d ok):\n%s" % (
        load.ok, "\n".join(load.failures[:10]))
    assert load.ok >= 40, load.ok
    assert srv.stderr().count("event loop io_uring") >= 4, srv.stderr()[-2000:]


def test_fallback_to_epoll_when_io_uring_is_forbidden(ops_spindle):
    if not os.access(NO_URING, os.X_OK):
        pytest.fail("%s is not built (make builds tests/tools/*.c)" % NO_URING)
    srv = ops_spindle(*URING, workers=2, argv_prefix=[NO_URING])
    with Conn(srv.addr) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().body == b"Hello world!"
    assert wait_for(lambda: srv.stderr().count("event loop epoll") >= 2, 3), srv.stderr()
    err = srv.stderr()
    lines = [ln for ln in err.splitlines() if "io_uring unavailable" in ln]
    assert len(lines) == 2, err  # exactly one per worker
    assert "forbidden" in lines[0] and "using epoll" in lines[0], lines[0]
    # asked for by name, its absence is a warning; the banner names what runs
    assert all(" warning: worker " in ln for ln in lines), lines
    assert "with 2 workers, epoll" in err, err
    assert len({ln.split("[")[1].split("]")[0] for ln in lines}) == 2, lines
    assert "event loop io_uring" not in err


def test_bogus_io_backend_exits_2():
    p = subprocess.run([BIN, "--io-backend", "bogus", "--bind", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=10, cwd=str(ROOT))
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "--io-backend is epoll, uring or auto, not 'bogus'" in p.stderr, p.stderr
    env = dict(os.environ, SPINDLE_IO_BACKEND="bogus")
    p = subprocess.run([BIN, "--bind", "127.0.0.1:1"], capture_output=True, text=True,
                       timeout=10, cwd=str(ROOT), env=env)
    assert p.returncode == 2 and "bogus" in p.stderr, (p.returncode, p.stderr)


@needs_uring
def test_auto_picks_io_uring_and_falls_back(ops_spindle):
    srv = ops_spindle("--io-backend", "auto", workers=1)
    assert wait_for(lambda: "event loop io_uring" in srv.stderr(), 3), srv.stderr()
    fb = ops_spindle("--io-backend", "auto", workers=1, argv_prefix=[NO_URING])
    assert wait_for(lambda: "event loop epoll" in fb.stderr(), 3), fb.stderr()
    err = fb.stderr()
    lines = [ln for ln in err.splitlines() if "io_uring unavailable" in ln]
    assert len(lines) == 1, err
    # the default falling back is how this machine is: info, not a warning
    assert " info: worker " in lines[0], lines[0]
    assert "with 1 worker, epoll" in err, err  # the banner names what runs
    assert "with 1 worker, io_uring" in srv.stderr(), srv.stderr()
