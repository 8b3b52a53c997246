"""The raw ASGI 3 app of bench/run's asgi workload, no framework: GET
anything answers the hello world (200, text/plain, Content-Length), a
WebSocket on any path echoes every message back; lifespan is acknowledged
so every server starts it the same way."""
BODY = b"Hello world!"
HEAD = {"type": "http.response.start", "status": 200,
        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"12")]}
MSG = {"type": "http.response.body", "body": BODY}


async def app(scope, receive, send):
    kind = scope["type"]
    if kind == "http":
        await send(HEAD)
        await send(MSG)
    elif kind == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while True:
            m = await receive()
            if m["type"] != "websocket.receive":
                return
            if m.get("text") is not None:
                await send({"type": "websocket.send", "text": m["text"]})
            else:
                await send({"type": "websocket.send", "bytes": m["bytes"]})
    elif kind == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
