"""Sends a WebSocket's scope as JSON (bytes as latin-1) once accepted."""
import json


def plain(v):
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


async def app(scope, receive, send):
    if scope["type"] != "websocket":
        return
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": json.dumps(plain(dict(scope)))})
    while (await receive())["type"] != "websocket.disconnect":
        pass
