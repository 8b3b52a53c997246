"""A pooled greenlet's Python frames start in a small chunk of its own
(python/_spindle/common/frame_chunk.c), not CPython's 16 KiB root chunk:
concurrent requests (each past the first of a turn runs in a pooled
greenlet) that park at the bottom of shallow and of deep recursions all
get their right answers; shallow calls keep the small chunks, deep ones
outgrow them and their greenlets go back to CPython's chunks for good;
the worker stops cleanly with greenlets in either state."""
import concurrent.futures
import json

from lib.wsgiutil import http_get, wsgi_server  # noqa: F401  (fixture)


def chunks(port):
    status, body = http_get(port, "/chunks")
    assert status == 200
    return json.loads(body)


def burst(port, depth, n=24):
    """n concurrent GET /deep?n=depth; each must answer depth:sum."""
    want = b"%d:%d" % (depth, depth * (depth + 1) // 2)
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        got = list(ex.map(lambda _: http_get(port, "/deep?n=%d" % depth), range(n)))
    assert all(g == (200, want) for g in got), got[:3]


def test_shallow_frames_stay_on_small_chunks_deep_ones_outgrow_them(wsgi_server):
    s = wsgi_server("frames_app:application")
    for _ in range(3):
        burst(s.port, 3)
    first = chunks(s.port)
    if not first["enabled"]:
        return  # a CPython whose frame stack is not tstate's (outside 3.11-3.13)
    assert first["held"] >= 2, first  # the burst ran on pooled greenlets
    assert first["outgrown"] == 0, first
    for depth in (40, 300):  # ~4 KB and ~30 KB of frames: past 1,000 bytes and past 16 KiB
        for _ in range(2):
            burst(s.port, depth)
    after = chunks(s.port)
    assert after["outgrown"] >= 2, after
    assert after["held"] < first["held"] + 24, after
    for depth in (0, 3, 300, 5):  # the greenlets on CPython's chunks serve on
        burst(s.port, depth)
