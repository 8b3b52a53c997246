"""WebSockets from WSGI (tests/integration/test_py_websocket.py): an echo
with commands (close codes, receive timeout, ping), a room whose every
message is broadcast to all members, and the errors outside a handshake."""
import spindle

room = set()


def echo(environ):
    ws = spindle.websocket(environ, subprotocols=("chat", "superchat"))
    ws.send("proto=%s" % ws.subprotocol)
    for msg in ws:
        if msg == "close":
            ws.close(4001, "bye")
        elif msg == "timeout":
            try:
                ws.receive(timeout=0.2)
                ws.send("no timeout")
            except TimeoutError:
                ws.send("timed out")
        elif msg == "ping":
            ws.ping(b"hi")
            ws.send("pinged")
        else:
            ws.send(msg)
    # the client closed: receive said None, the code is the client's
    assert ws.receive() is None and ws.close_code is not None


def join(environ):
    ws = spindle.websocket(environ)
    room.add(ws)
    try:
        ws.send("hello")
        for msg in ws:
            for other in list(room):
                try:
                    other.send(msg)
                except OSError:
                    room.discard(other)
    finally:
        room.discard(ws)


def flood(environ):
    """Sends to a client that never reads: send waits, then --send-timeout."""
    ws = spindle.websocket(environ)
    blob = b"x" * 65536
    sent = 0
    try:
        for _ in range(2000):  # 128 MiB at most: far beyond any socket buffer
            ws.send(blob)
            sent += 1
    except TimeoutError as e:
        print("flood: dropped after %d sends: %s" % (sent, e), flush=True)


def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/late":
        start_response("200 OK", [("Content-Type", "text/plain")])
    try:
        if path == "/flood":
            flood(environ)
        elif path == "/boom":
            spindle.websocket(environ)
            raise KeyError("the app failed after accepting")
        elif path == "/once":
            spindle.websocket(environ).send("bye now")
        elif path == "/room":
            join(environ)
        else:
            echo(environ)
    except spindle.WebSocketError as e:
        if path == "/late":
            return [str(e).encode()]
        start_response("400 Bad Request", [("Content-Type", "text/plain")])
        return [str(e).encode()]
    return []
