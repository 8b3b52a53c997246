"""What a parked Python WebSocket costs in its worker's resident memory
(issue 34): 1,000 WebSockets waiting in receive, WSGI's spindle.websocket
(tests/fixtures/wsgi/ws_probe_app.py's room) and an idle ASGI echo
(tests/fixtures/asgi/ws_echo_app.py); the worker's VmRSS grows by at most
a bound for each. Their coroutine gives back its stack below the wait and
its read buffer (the head's bytes in a block of their own) as the C core's
do, and keeps one stack page (its frames, its request and response; the
request's fields in the buffer's front), the buffer's pages going back
too, and a WSGI greenlet's frames in a small chunk; before, 28 KB (WSGI)
and 24 KB (ASGI) each, then 16.6 and 12.0 KiB with two stack pages, then
13 and 8 KiB."""
import resource
import time

from lib.asgiutil import WS as AsgiWS
from lib.asgiutil import asgi  # noqa: F401  (fixture)
from test_py_websocket import WS
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)

N = 1000
# Measured (CPython 3.11, greenlet 3.5 and Debian's 2.0): WSGI 9,490-9,750 B
# (the stack's one page 4, the greenlet's saved C stack 1.8, the environ
# and objects 2.2, its 1,000-byte frame chunk: frame_chunk.c); ASGI
# 7,710-7,810 B (stack 4, the task, queues and frames 3.3). 12.7-13.1 KiB
# while each greenlet had CPython's 16 KiB frame chunk (a page resident)
# and buffers went back to the pool warm (a page each); 16.6 and 12.0 KiB
# while the stack kept two pages (the request's fields and the response's
# store on it), 19.7 and 15.2 KiB with the stack given back but the buffer
# kept.
WSGI_MAX = 11.5 * 1024
ASGI_MAX = 10 * 1024


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:  # 1,000 sockets here and in the server, which inherits it
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))


def per_socket(srv, open_one):
    """Bytes of the worker's RSS per open WebSocket, pools warmed first."""
    pid = srv.worker_pids()[0]
    for c in [open_one() for _ in range(50)]:  # pools and arenas filled once
        c.s.close()
    time.sleep(0.5)
    before = rss(pid)
    clients = [open_one() for _ in range(N)]
    time.sleep(1.0)  # every wait is long by now (LOOP_LONG_WAIT_MS)
    per = (rss(pid) - before) / N
    for c in clients:
        c.s.close()
    return per


def test_parked_wsgi_websocket_gives_back_stack_and_buffer(wsgi_server):
    nofile()
    s = wsgi_server("ws_probe_app:application", "--max-connections", "1200")

    def open_one():
        c = WS(s.port, "/room")
        assert c.recv() == "hello"  # its handler is parked in receive
        return c
    per = per_socket(s, open_one)
    print("parked WSGI WebSocket: %.0f bytes of RSS" % per)
    assert per <= WSGI_MAX, "%.0f bytes of RSS per parked WSGI WebSocket" % per


def test_idle_asgi_websocket_gives_back_stack_and_buffer(asgi):
    nofile()
    s = asgi("ws_echo_app:app", "--max-connections", "1200")

    def open_one():
        c = AsgiWS(s.port, "/")
        assert c.ok, c.head
        return c
    per = per_socket(s, open_one)
    print("idle ASGI WebSocket: %.0f bytes of RSS" % per)
    assert per <= ASGI_MAX, "%.0f bytes of RSS per idle ASGI WebSocket" % per
