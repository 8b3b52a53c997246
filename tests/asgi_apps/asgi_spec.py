"""A raw ASGI 3 application for tests/integration/test_asgi_*.py: one route
per rule of the spec (scope, streamed bodies, disconnects, backpressure,
pathsend, invalid messages, failures, asyncio inside a handler, WebSockets)
and lifespan whose behaviour ASGI_LIFESPAN picks (ok, fail, raise, ignore,
slow: a startup of 1.5 s)."""
import asyncio
import json
import os

EVENTS = []  # what the app saw, for /events
STATE = {}


def jsonable(v):
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v


async def respond(send, status=200, body=b"", headers=()):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain")] + list(headers)})
    await send({"type": "http.response.body", "body": body})


async def lifespan(scope, receive, send):
    mode = os.environ.get("ASGI_LIFESPAN", "ok")
    if mode == "raise":
        raise RuntimeError("no lifespan here")
    if mode == "ignore":
        return
    while True:
        m = await receive()
        if m["type"] == "lifespan.startup":
            if mode == "fail":
                await send({"type": "lifespan.startup.failed", "message": "database unreachable"})
                return
            scope["state"]["greeting"] = "hello from lifespan"
            await asyncio.sleep(1.5 if mode == "slow" else 0.01)  # slow: a TERM comes meanwhile
            await send({"type": "lifespan.startup.complete"})
        elif m["type"] == "lifespan.shutdown":
            path = os.environ.get("ASGI_SHUTDOWN_FILE")
            if path:
                with open(path, "w") as f:
                    f.write("shutdown ran\n")
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive):
    chunks = []
    while True:
        m = await receive()
        assert m["type"] == "http.request", m
        chunks.append((len(m["body"]), m["more_body"]))
        yield m["body"]
        if not m["more_body"]:
            break
    EVENTS.append({"chunks": chunks})


def route_of(scope):
    """The path the app routes on: the ASGI spec puts root_path at the start
    of path, and an app strips it (as Starlette does)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


async def http(scope, receive, send):
    path = route_of(scope)
    q = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p)
    if path.startswith("/scope"):
        s = {k: v for k, v in scope.items()}
        await respond(send, body=json.dumps(jsonable(s)).encode())
    elif path == "/echo":
        body = b""
        n = 0
        async for b in read_body(receive):
            body += b
            n += 1
        await respond(send, body=body, headers=[(b"x-chunks", str(n).encode())])
    elif path == "/count":  # reads the body without keeping it: for big uploads
        total = 0
        async for b in read_body(receive):
            total += len(b)
        await respond(send, body=str(total).encode())
    elif path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for i in range(int(q.get("n", "3"))):
            await send({"type": "http.response.body", "body": b"part%d\n" % i, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    elif path == "/head_first":  # the head goes out with an empty chunk
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        await asyncio.sleep(0.5)
        await send({"type": "http.response.body", "body": b"data: late\n\n"})
    elif path == "/flood":  # backpressure: chunks until the client stops reading
        await send({"type": "http.response.start", "status": 200, "headers": []})
        sent = 0
        chunk = b"x" * 65536
        STATE["flood"] = 0
        for _ in range(int(q.get("chunks", "4096"))):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)
            STATE["flood"] = sent
        await send({"type": "http.response.body", "body": b""})
    elif path == "/wait_disconnect":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"started\n", "more_body": True})
        m = await receive()
        m2 = await receive()
        EVENTS.append({"disconnect": [m["type"], m2["type"]]})
        try:  # ASGI 2.4: a send after the client left raises an OSError
            await send({"type": "http.response.body", "body": b"after\n", "more_body": True})
            EVENTS.append({"send_after_disconnect": None})
        except OSError as e:
            EVENTS.append({"send_after_disconnect": type(e).__name__})
    elif path == "/after_response":
        await respond(send, body=b"done")
        m = await receive()
        m2 = await receive()
        EVENTS.append({"after_response": [m["type"], m2["type"]]})
    elif path == "/flood_state":
        await respond(send, body=str(STATE.get(q.get("k", "flood"), -1)).encode())
    elif path == "/cancelled_receive":  # a receive cancelled while it waits
        try:
            await asyncio.wait_for(receive(), 0.05)
            got = b"early"
        except asyncio.TimeoutError:
            m = await receive()
            got = m["body"]
        await respond(send, body=got)
    elif path == "/events":
        await respond(send, body=json.dumps(EVENTS).encode())
        EVENTS.clear()
    elif path == "/pathsend":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/octet-stream")]})
        await send({"type": "http.response.pathsend", "path": q["file"]})
    elif path == "/raise_before":
        raise ValueError("boom before start")
    elif path == "/raise_after":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
        raise ValueError("boom after start")
    elif path == "/raise_after_complete":  # Starlette's error middleware does this
        await send({"type": "http.response.start", "status": 500,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"error":"mine"}'})
        raise ValueError("boom after the response")
    elif path == "/no_response":
        return
    elif path == "/unfinished":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    elif path.startswith("/bad/"):
        what = path[5:]
        if what == "type":
            await send({"type": "http.response.nonsense"})
        elif what == "header_str":
            await send({"type": "http.response.start", "status": 200, "headers": [("a", "b")]})
        elif what == "header_crlf":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"x-a", b"1\r\nx-injected: 1")]})
        elif what == "header_nul":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1\0")]})
        elif what == "second_start":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.start", "status": 200, "headers": []})
        elif what == "body_first":
            await send({"type": "http.response.body", "body": b"x"})
        elif what == "status":
            await send({"type": "http.response.start", "status": 99, "headers": []})
        elif what == "body_str":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": "text"})
        await respond(send, body=b"not reached")
    elif path == "/sleep":
        await asyncio.sleep(float(q.get("s", "0.05")))
        await respond(send, body=b"slept")
    elif path == "/connect":  # asyncio.open_connection on the loop: to ourselves
        r, w = await asyncio.open_connection("127.0.0.1", int(q["port"]))
        w.write(b"GET /sleep?s=0.01 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await w.drain()
        data = await r.read()
        w.close()
        await w.wait_closed()
        await respond(send, body=data.split(b"\r\n\r\n", 1)[1])
    elif path == "/state":
        await respond(send, body=json.dumps(scope.get("state")).encode())
    elif path == "/slow":  # for stop tests: answers after s seconds
        await asyncio.sleep(float(q.get("s", "1")))
        await respond(send, body=b"finished")
    else:
        await respond(send, 404, b"no route")


async def websocket(scope, receive, send):
    path = route_of(scope)
    m = await receive()
    assert m["type"] == "websocket.connect", m
    if path == "/ws/echo":
        sub = scope["subprotocols"][0] if scope["subprotocols"] else None
        await send({"type": "websocket.accept", "subprotocol": sub,
                    "headers": [(b"x-extra", b"yes")]})
        while True:
            m = await receive()
            if m["type"] == "websocket.disconnect":
                EVENTS.append({"ws_disconnect": m["code"]})
                return
            if m.get("text") == "close-me":
                await send({"type": "websocket.close", "code": 4001, "reason": "asked"})
                continue
            await send({"type": "websocket.send", "text": m.get("text"), "bytes": m.get("bytes")})
    elif path == "/ws/concurrent":
        # Quart's pattern: a receive() made before the accept is done; then a
        # close from another task while a receive() waits
        first = asyncio.ensure_future(receive())
        await send({"type": "websocket.accept"})
        m = await first
        await send({"type": "websocket.send", "text": "got " + m["text"]})
        pending = asyncio.ensure_future(receive())
        await asyncio.sleep(0.05)
        await send({"type": "websocket.close", "code": 4002, "reason": "while receiving"})
        m = await pending
        EVENTS.append({"concurrent": m["type"]})
    elif path == "/ws/sender":  # sends without ever receiving
        await send({"type": "websocket.accept"})
        for i in range(400):
            await send({"type": "websocket.send", "text": "tick%d" % i})
            await asyncio.sleep(0.05)
    elif path == "/ws/fanout":  # sends from many tasks at once: in order, none refused
        await send({"type": "websocket.accept"})
        await asyncio.gather(*[send({"type": "websocket.send", "text": "m%d" % i})
                               for i in range(50)])
        await send({"type": "websocket.close", "code": 1000})
    elif path == "/ws/burst_close":  # sends that return at once, then a close: all arrive first
        await send({"type": "websocket.accept"})
        for i in range(20):
            await send({"type": "websocket.send", "bytes": b"%d" % i * 1000})
        await send({"type": "websocket.close", "code": 4003})
    elif path == "/ws/flood":  # backpressure: sends until the client stops reading
        await send({"type": "websocket.accept"})
        STATE["ws_flood"] = 0
        for i in range(400):
            await send({"type": "websocket.send", "bytes": b"z" * 262144})
            STATE["ws_flood"] = i + 1
    elif path == "/ws/reject":
        await send({"type": "websocket.close"})
    elif path == "/ws/deny":
        await send({"type": "websocket.http.response.start", "status": 401,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "websocket.http.response.body", "body": b"go away"})
    elif path == "/ws/raise":
        await send({"type": "websocket.accept"})
        raise RuntimeError("ws boom")
    elif path == "/ws/return":
        return


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await lifespan(scope, receive, send)
    elif scope["type"] == "http":
        await http(scope, receive, send)
    else:
        await websocket(scope, receive, send)


class AppObject:  # detection: an object whose __call__ is a coroutine function
    async def __call__(self, scope, receive, send):
        await app(scope, receive, send)


app_object = AppObject()


def wsgi_app(environ, start_response):  # detection: WSGI
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"wsgi here"]


async def _with_arg(extra, scope, receive, send):
    await app(scope, receive, send)

app_partial = __import__("functools").partial(_with_arg, "x")  # detection: partial unwrapped
