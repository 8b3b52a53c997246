"""test_h2_ops.py — HTTP/2 in operation: --stats counts streams, resets
and GOAWAYs; a graceful stop (TERM) and a reload (HUP) send GOAWAY and let
the streams in flight finish before the connection closes.
"""
import os
import re
import signal
import socket
import time

from hyperframe.frame import DataFrame, GoAwayFrame

from lib.h2util import NO_ERROR, PING, RST_STREAM, Raw, h2_get, raw_frame, start


def metrics(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    text = data.decode()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(spindle_http2_\w+) (\d+)$", text, re.M)}


def test_stats_count_streams_resets_goaways(tmp_path_factory):
    srv, stop = start(tmp_path_factory, "--stats", "/metrics")
    try:
        before = metrics(srv.port)
        assert before == {"spindle_http2_streams_total": 0, "spindle_http2_resets_total": 0,
                          "spindle_http2_goaways_total": 0}
        r = Raw(srv.port)
        r.response(r.headers())
        r.response(r.headers())
        sid = r.headers(path="/sleep?ms=300")
        r.send(raw_frame(RST_STREAM, 0, sid, b"\0\0\0\x08"))
        r.send(raw_frame(PING, 0, 1, b"\0" * 8))  # a connection error: GOAWAY
        assert r.goaway() is not None
        m = metrics(srv.port)
        assert m["spindle_http2_streams_total"] == 3
        assert m["spindle_http2_resets_total"] == 1
        assert m["spindle_http2_goaways_total"] == 1
    finally:
        stop()


def in_flight_finishes(srv, sig):
    """A stream sleeping when sig reaches the master: GOAWAY (NO_ERROR,
    naming it), then its answer, then the close; an idle connection beside
    it gets its GOAWAY at once."""
    idle = Raw(srv.port)
    idle.response(idle.headers())
    r = Raw(srv.port)
    r.response(r.headers())
    sid = r.headers(path="/sleep?ms=500")
    time.sleep(0.1)
    os.kill(srv.pid, sig)
    fs = r.until(lambda f: isinstance(f, DataFrame) and f.stream_id == sid and "END_STREAM" in f.flags,
                 timeout=4)
    goaways = [f for f in fs if isinstance(f, GoAwayFrame)]
    assert goaways and goaways[0].error_code == NO_ERROR and goaways[0].last_stream_id >= sid
    assert fs and isinstance(fs[-1], DataFrame) and b"slept 500 ms" in b"".join(
        f.data for f in fs if isinstance(f, DataFrame) and f.stream_id == sid)
    assert r.closed(timeout=3)
    g = idle.goaway(timeout=1)
    assert g is not None and g.error_code == NO_ERROR and g.last_stream_id == 1
    assert idle.closed(timeout=1)


def test_idle_connection_wakes_then_says_goodbye(tmp_path_factory):
    # idle between requests (no coroutine, no buffer), woken by the next one;
    # after --keepalive-timeout (1 s) of nothing: GOAWAY NO_ERROR, then close
    srv, stop = start(tmp_path_factory)
    try:
        r = Raw(srv.port)
        h, body, _ = r.response(r.headers())
        time.sleep(0.4)
        h, body, _ = r.response(r.headers())
        assert body == b"Hello world!"
        t0 = time.monotonic()
        g = r.goaway(timeout=3)
        assert g is not None and g.error_code == NO_ERROR and g.last_stream_id == 3
        assert 0.5 < time.monotonic() - t0 < 2.5
        assert r.closed(timeout=2)
    finally:
        stop()


def test_graceful_stop_sends_goaway_and_finishes_streams(tmp_path_factory):
    srv, stop = start(tmp_path_factory, "--graceful-timeout", "3")
    try:
        in_flight_finishes(srv, signal.SIGTERM)
        srv.wait_exit(5)
    finally:
        stop()


def test_reload_sends_goaway_and_finishes_streams(tmp_path_factory):
    srv, stop = start(tmp_path_factory, "--graceful-timeout", "3")
    try:
        in_flight_finishes(srv, signal.SIGHUP)
        status, _, body = h2_get(srv.port)  # the new worker serves
        assert status == 200 and body == b"Hello world!"
    finally:
        stop()
