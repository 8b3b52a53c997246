"""Parked Python handlers for bench/wsgi_apps/parked_py.py: /ws accepts a
WebSocket, says "hello" and waits in receive; /poll (a long poll) sends
"hello" as its first chunk and waits on a spindle.Event that nobody sets."""
import spindle

_never = spindle.Event()


def application(environ, start_response):
    if environ["PATH_INFO"] == "/ws":
        ws = spindle.websocket(environ)
        ws.send("hello")
        for _ in ws:
            pass
        return []
    start_response("200 OK", [("Content-Type", "text/plain")])
    return _poll()


def _poll():
    yield b"hello"  # the client knows its request is parked
    _never.wait(3600)
    yield b"done"
