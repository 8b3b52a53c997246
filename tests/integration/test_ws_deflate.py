"""permessage-deflate (RFC 7692, issue 31): negotiation, compressed echo of
many sizes and fragmentations under every parameter set against PyPI's
`websockets` (the equivalent of Autobahn's cases 12 and 13: Autobahn's
test suite is Python 2 only), the C app, spindle.websocket and ASGI; what a
broken client sends, from a raw client of our own (zclient.py): RSV1 in the
wrong places (1002), data that is not DEFLATE (1002), text that inflates to
bad UTF-8 (1007), bombs (1009, without the worker's memory growing past
the limit); --ws-deflate off; and the bytes on the wire beside uvicorn."""
import asyncio
import functools
import os
import pathlib
import random
import resource
import time
import zlib

import pytest
from websockets.asyncio.client import connect
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory as Offer

from lib.asgi_pair import AsgiServer
from lib.server import BIN, ROOT
from lib.proctools import children, proc_status
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)
from lib.zclient import ZClient

# The test app beside the binary; under the ASan binary (whose tree has no
# app modules) the release build's, loaded into it.
APP_WS = next((str(p) for p in (pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_ws.so",
                                ROOT / "build" / "tests" / "fixtures" / "c" / "app_ws.so") if p.exists()),
              "app_ws.so is not built (make)")


@pytest.fixture
def ws_server(spindle):
    return spindle("--app", APP_WS)


# ---- payloads: Autobahn 12.1-12.5's kinds ------------------------------------

@functools.lru_cache(maxsize=None)
def payload(kind, n, seed):
    rnd = random.Random(seed * 7919 + n)
    out, size = [], 0
    if kind == "jpeg":  # 12.5: a JPEG: incompressible
        return rnd.randbytes(n)
    if kind == "bitmap":  # 12.2: a black-and-white picture: runs
        while size < n:
            out.append(bytes([rnd.choice((0, 255))]) * rnd.randrange(1, 64))
            size += len(out[-1])
        return b"".join(out)[:n]
    words = ["Habe", "nun", "ach", "Philosophie", "Juristerei", "und", "Medizin", "Größe", "für", "Faust"]
    while size < n:
        if kind == "json":  # 12.1: JSON
            piece = '{"id":%d,"user":"%s","text":"%s","ts":%d},' % (
                len(out), rnd.choice(["alice", "bob", "carol"]),
                rnd.choice(["hi", "hello there", "ok", "see you"]), 1700000000 + rnd.randrange(1000))
        elif kind == "prose":  # 12.3: human-readable text, non-ASCII too
            piece = rnd.choice(words) + rnd.choice([" ", ", ", ". "])
        else:  # 12.4: HTML
            piece = '<div class="row"><a href="/item/%d">item %d</a></div>\n' % (
                rnd.randrange(999), rnd.randrange(99))
        out.append(piece)
        size += len(piece.encode())
    return "".join(out).encode()[:n].decode("utf-8", "ignore")


KINDS = ["json", "bitmap", "prose", "html", "jpeg"]
SIZES = [16, 64, 256, 1024, 4096, 8192, 16384, 32768, 65536, 131072]  # Autobahn's

# Autobahn 13.x: the same messages under each parameter set the client offers.
# (13.3 and 13.5 offer client_max_window_bits=8; Python's zlib cannot
# compress with it, so 9 here.)
PARAM_SETS = {
    "13.1 plain": [Offer(client_max_window_bits=None)],
    "13.2 client_no_context_takeover": [Offer(client_no_context_takeover=True)],
    "13.3 client_max_window_bits=9": [Offer(client_max_window_bits=9)],
    "13.4 client_max_window_bits=15": [Offer(client_max_window_bits=15)],
    "13.5 both, 9": [Offer(client_no_context_takeover=True, client_max_window_bits=9)],
    "13.6 both, 15": [Offer(client_no_context_takeover=True, client_max_window_bits=15)],
    "13.7 several offers": [Offer(server_max_window_bits=8), Offer(client_no_context_takeover=True),
                            Offer()],
    "server_no_context_takeover": [Offer(server_no_context_takeover=True)],
    "server_max_window_bits=9": [Offer(server_max_window_bits=9)],
    "all four": [Offer(server_no_context_takeover=True, client_no_context_takeover=True,
                       server_max_window_bits=10, client_max_window_bits=11)],
}
WANT = {  # what the server's answer must say
    "13.1 plain": "permessage-deflate; server_max_window_bits=12",
    "13.3 client_max_window_bits=9": "client_max_window_bits=9",
    "13.7 several offers": "permessage-deflate; client_no_context_takeover; server_max_window_bits=12",
    "server_max_window_bits=9": "server_max_window_bits=9",
    "all four": "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=10; client_max_window_bits=11",
}


async def echo_all(url, offers, reps=4):
    async with connect(url, extensions=offers, compression=None, max_size=None, ping_interval=None,
                       open_timeout=5, close_timeout=5) as ws:
        ext = ws.response.headers.get("Sec-WebSocket-Extensions")
        assert ws.protocol.extensions, "nothing negotiated: %r" % ext
        n = 0
        for kind in KINDS:
            for size in SIZES:
                for rep in range(reps):
                    data = payload(kind, size, rep)
                    if rep % 2:  # fragmented (Autobahn's auto-fragment), a piece per size/7
                        step = max(16, size // 7)
                        await ws.send([data[i:i + step] for i in range(0, len(data), step)])
                    else:
                        await ws.send(data)
                    got = await asyncio.wait_for(ws.recv(), 10)
                    assert got == data, (kind, size, rep)
                    n += 1
        await ws.close()
        return ext, n


@pytest.mark.parametrize("name", sorted(PARAM_SETS))
def test_autobahn_12_13_equivalent(ws_server, name):
    ext, n = asyncio.run(echo_all("ws://127.0.0.1:%d/ws" % ws_server.port, PARAM_SETS[name]))
    assert n == len(KINDS) * len(SIZES) * 4
    if name in WANT:
        assert WANT[name] in ext, ext
    assert ws_server.alive()


def test_declined_offers_mean_no_compression(ws_server):
    # An offer spindle cannot take (server window 8) alone: declined; the
    # conversation goes on uncompressed.
    z = ZClient(ws_server.port, offer="permessage-deflate; server_max_window_bits=8")
    assert z.ext is None
    z.send("plain", compress=False)
    assert z.recv() == "plain"
    # A compressed frame after a decline: RSV1 not negotiated, 1002.
    z.send("zipped")
    assert z.close_code() == 1002
    for bad in ["permessage-deflate; foo", "permessage-deflate; client_max_window_bits=16",
                "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                "permessage-deflate; client_max_window_bits=\"1 0\"", "x-webkit-deflate-frame"]:
        z = ZClient(ws_server.port, offer=bad)
        assert z.ext is None, (bad, z.ext)
        z.close()
    # Two header lines: the second's offer is taken when the first has none.
    z = ZClient(ws_server.port, offer="foo\r\nSec-WebSocket-Extensions: permessage-deflate")
    assert z.ext == "permessage-deflate; server_max_window_bits=12", z.ext
    z.send("héllo" * 50)
    assert z.recv() == "héllo" * 50


def test_flags_off_and_window(spindle):
    srv = spindle("--app", APP_WS, "--ws-deflate", "off")
    z = ZClient(srv.port)
    assert z.ext is None
    srv = spindle("--app", APP_WS, "--ws-deflate-window", "10", "--ws-deflate-mem-level", "9")
    z = ZClient(srv.port)
    assert z.params == {"server_max_window_bits": 10, "client_max_window_bits": 10}, z.ext
    big = payload("html", 100000, 1)
    z.send(big)
    assert z.recv() == big
    assert z.wire_in < len(big) / 3


def test_server_compresses_with_context_takeover(ws_server):
    z = ZClient(ws_server.port)
    msg = payload("json", 2000, 3)
    z.send(msg)
    assert z.recv() == msg
    first = z.wire_in
    z.send(msg)
    assert z.recv() == msg
    assert z.wire_in - first < first / 4  # the second refers back to the first
    # Incompressible data goes as it is (no RSV1), and the next compressed
    # message still inflates with the client's window.
    noise = os.urandom(5000)
    z.send(noise)
    assert z.recv() == noise
    z.send(msg)
    assert z.recv() == msg


# ---- what a broken client sends -----------------------------------------------

@pytest.mark.parametrize("name", ["rsv1 on a continuation", "rsv1 on a ping", "rsv1 on a close",
                                  "rsv2", "rsv3", "not deflate", "bad utf-8 inside", "cut utf-8"])
def test_bad_compressed_frames(ws_server, name):
    z = ZClient(ws_server.port)
    assert z.params is not None
    want = 1002
    if name == "rsv1 on a continuation":
        body = z.compress(b"hello world")
        z.raw_frame(1, body[:3], fin=False, rsv=0x40)
        z.raw_frame(0, body[3:], fin=True, rsv=0x40)
    elif name == "rsv1 on a ping":
        z.raw_frame(9, b"", rsv=0x40)
    elif name == "rsv1 on a close":
        z.raw_frame(8, b"\x03\xe8", rsv=0x40)
    elif name == "rsv2":
        z.raw_frame(1, z.compress(b"x"), rsv=0x40 | 0x20)
    elif name == "rsv3":
        z.raw_frame(2, b"x", rsv=0x10)
    elif name == "not deflate":
        z.raw_frame(2, b"\xff\xff\xff\xff\xff", rsv=0x40)
    elif name == "bad utf-8 inside":
        z.raw_frame(1, z.compress(b"ok \xc3\x28 no"), rsv=0x40)
        want = 1007
    else:  # the message ends inside a character
        z.raw_frame(1, z.compress("é".encode()[:1]), rsv=0x40)
        want = 1007
    assert z.close_code() == want
    assert ws_server.alive()


def worker_hwm(srv):
    (pid,) = children(srv.pid)
    return pid, proc_status(pid, "VmHWM")


def test_bombs_close_1009_within_the_limit(spindle):
    # A 1 KB frame inflates to at most about 1 MB (DEFLATE's ratio is at
    # most 1032:1): past a 100 KB limit it is closed with 1009.
    srv = spindle("--app", APP_WS, "--ws-max-message", "100k")
    z = ZClient(srv.port)
    small = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = small.compress(bytes(1 << 20)) + small.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < 1100
    z.raw_frame(2, bomb[:-4], rsv=0x40)
    assert z.close_code() == 1009
    # 1 GB of zeros in about 1 MB of DEFLATE (eight 128 KB frames), against
    # the default 1 MiB limit: closed with 1009, and the worker's peak RSS
    # grows by about the limit, not by a gigabyte.
    srv = spindle("--app", APP_WS)
    pid, before = worker_hwm(srv)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(64 << 20)
    big = b"".join(c.compress(chunk) for _ in range(16)) + c.flush(zlib.Z_SYNC_FLUSH)[:-4]
    assert len(big) < 1100 * 1024, len(big)
    z = ZClient(srv.port)
    step = len(big) // 8 + 1
    try:
        for i in range(0, len(big), step):
            z.raw_frame(2 if i == 0 else 0, big[i:i + step], fin=i + step >= len(big),
                        rsv=0x40 if i == 0 else 0)
    except OSError:
        pass  # closed before the whole bomb was in
    assert z.close_code() == 1009
    grown = proc_status(pid, "VmHWM") - before
    assert grown < 12 * 1024, "the worker's peak RSS grew by %d kB" % grown
    # Just under the limit is fine.
    z = ZClient(srv.port)
    ok = bytes(1 << 20)
    z.send(ok)
    assert z.recv() == ok


# ---- the Python bindings ------------------------------------------------------

async def py_echo(url, n=30):
    async with connect(url, max_size=None, open_timeout=5, ping_interval=None) as ws:
        assert ws.protocol.extensions, ws.response.headers
        greeting = None
        if url.endswith("/echo") and "ws/echo" not in url:
            greeting = await ws.recv()  # ws_app's echo says its subprotocol first
        for i in range(n):
            m = payload(KINDS[i % 5], SIZES[i % 10], i)
            await ws.send(m)
            assert await ws.recv() == m
        return greeting


def test_wsgi_websocket_compressed(wsgi_server):
    s = wsgi_server("ws_app:application")
    assert asyncio.run(py_echo("ws://127.0.0.1:%d/echo" % s.port)) == "proto=None"


def test_wsgi_broadcast_to_compressed_members(wsgi_server):
    # A room's message goes to every member: compressed once for all of
    # them (ws_deflate.c's share), each member's own history kept in step.
    s = wsgi_server("ws_app:application")
    members = [ZClient(s.port, "/room") for _ in range(5)]
    for m in members:
        assert m.ext and m.recv() == "hello"
    for k in range(6):
        msg = payload("json", 3000, k)
        members[k % 5].send(msg)
        for m in members:
            assert m.recv() == msg
    sizes = [m.wire_in for m in members]
    assert max(sizes) < 6 * 3000 / 2, sizes


def test_asgi_websocket_compressed(tmp_path):
    srv = AsgiServer("spindle", "ws_echo_app:app", tmp_path, {}).wait_ready()
    try:
        asyncio.run(py_echo("ws://127.0.0.1:%d/ws" % srv.port))
        assert not srv.problems()
    finally:
        srv.stop()


# ---- beside uvicorn: the bytes on the wire -------------------------------------

def chat_session(port, n):
    z = ZClient(port, offer="permessage-deflate; client_max_window_bits")
    raw = 0
    t0 = time.monotonic()
    for i in range(n):
        m = payload("json", 200 + (i * 37) % 600, i)
        raw += len(m)
        z.send(m)
        assert z.recv() == m
    took = time.monotonic() - t0
    z.close()
    return z.ext, raw, z.wire_in, took


def test_wire_bytes_beside_uvicorn(tmp_path):
    n = int(os.environ.get("SPINDLE_WS_BENCH_N", "400"))  # echoes, one at a time
    res = {}
    for kind in ("uvicorn", "spindle"):
        srv = AsgiServer(kind, "ws_echo_app:app", tmp_path, {}).wait_ready()
        try:
            res[kind] = chat_session(srv.port, n)
        finally:
            srv.stop()
    for kind, (ext, raw, wire, took) in res.items():
        print("%-8s %s: %d bytes of JSON came back as %d bytes (%.0f%%), %d echoes in %.2f s"
              % (kind, ext, raw, wire, 100.0 * wire / raw, n, took))
    assert res["uvicorn"][0], "uvicorn did not negotiate permessage-deflate"
    assert res["spindle"][2] < res["spindle"][1] / 2
    assert res["spindle"][2] < res["uvicorn"][2] * 1.25


# ---- memory per connection ------------------------------------------------------

NO_TAKEOVER = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"


def rss_per_socket(srv, n, offer="permessage-deflate; client_max_window_bits", busy=False):
    """The worker's RSS growth per WebSocket, each parked in sp_ws_recv after
    one 300-byte message each way, or (busy) eight of 4 KB: windows touched."""
    (pid,) = children(srv.pid)
    time.sleep(0.3)
    before = proc_status(pid, "VmRSS")
    socks = []
    msgs = [payload("json", 4096, k) for k in range(8)] if busy else [payload("json", 300, 1)]
    for _ in range(n):
        z = ZClient(srv.port, offer=offer)
        for m in msgs:
            z.send(m, compress=z.params is not None)
            assert z.recv() == m
        socks.append(z)
    time.sleep(0.5)
    after = proc_status(pid, "VmRSS")
    for z in socks:
        z.close()
    return (after - before) * 1024 / n


def test_memory_per_idle_socket(spindle):
    n = int(os.environ.get("SPINDLE_WS_MEM_N", "300"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * n + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(2 * n + 200, hard), hard))
    flags = ("--app", APP_WS, "--max-connections", str(n + 100))
    zlib_defaults = flags + ("--ws-deflate-window", "15", "--ws-deflate-mem-level", "8")
    kb = {
        "off": rss_per_socket(spindle(*flags, "--ws-deflate", "off"), n, busy=True),
        "on, one small message": rss_per_socket(spindle(*flags), n),
        "on": rss_per_socket(spindle(*flags), n, busy=True),
        "on, no context takeover": rss_per_socket(spindle(*flags), n, NO_TAKEOVER, busy=True),
        "on, zlib's 15/8": rss_per_socket(spindle(*zlib_defaults), n, busy=True),
    }
    for k, v in kb.items():
        print("per idle WebSocket (N=%d), %-24s %6.1f KB" % (n, k, v / 1024))
    assert kb["on"] - kb["off"] < 56 * 1024, kb  # 12-bit windows, memLevel 5
    assert kb["on, zlib's 15/8"] > 3 * kb["on"], kb  # what the defaults save
    assert kb["on, no context takeover"] - kb["off"] < 4 * 1024, kb  # no zlib state while idle
