"""An ASGI WebSocket echo (test_ws_deflate.py): the same app under uvicorn
(websockets, permessage-deflate on by default) and spindle, to compare the
bytes each puts on the wire for the same messages. GET / answers 200."""


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            await send({"type": m["type"] + ".complete"})  # startup, then shutdown
            if m["type"] == "lifespan.shutdown":
                return
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        return await send({"type": "http.response.body", "body": b"ok"})
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    while True:
        m = await receive()
        if m["type"] == "websocket.disconnect":
            return
        await send({"type": "websocket.send", "text": m.get("text"), "bytes": m.get("bytes")})
