"""What a parked WebSocket costs in a Python worker (tests/fixtures/wsgi/
ws_probe_app.py: ws_app's room): 1,000 handlers each waiting in receive;
the Python memory they hold (tracemalloc: the environ, the greenlet and its
saved stack copy, the request's objects) stays under a bound, and each
holds exactly one environ (a cached base or a reused environ held per
socket would show here). RSS is printed, not bounded: most of it is the C
core's (the coroutine stack, the read buffer)."""
import json
import resource
import time
import urllib.request

from test_py_websocket import WS
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

N = 1000
TRACED_MAX = 4600  # bytes per parked WebSocket; 4,113 measured (CPython 3.11, greenlet 2.0)


def probe(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/probe" % port, timeout=10) as r:
        return json.loads(r.read())


def test_parked_websockets_python_memory(wsgi_server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:  # 1,000 sockets here and in the server, which inherits it
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    s = wsgi_server("ws_probe_app:application", "--max-connections", "1100",
                    env={"PYTHONTRACEMALLOC": "1"})
    t0 = time.monotonic()
    warm = [WS(s.port, "/room") for _ in range(20)]  # pools and caches filled once
    for c in warm:
        assert c.recv() == "hello"
        c.s.close()
    time.sleep(0.3)
    before = probe(s.port)
    clients = [WS(s.port, "/room") for _ in range(N)]
    for c in clients:
        assert c.recv() == "hello"  # every handler is parked in its receive
    after = probe(s.port)
    per = (after["traced"] - before["traced"]) / N
    rss = (after["rss"] - before["rss"]) / N
    print("parked WebSocket: %.0f bytes traced by tracemalloc, %.0f bytes of RSS" % (per, rss))
    assert after["environs"] - before["environs"] <= N + 5, (before, after)
    assert per <= TRACED_MAX, "%.0f bytes of Python memory per parked WebSocket (RSS %.0f)" % (
        per, rss)
    for c in clients:
        c.s.close()
    assert time.monotonic() - t0 < 15
