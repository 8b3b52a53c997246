"""socketio_fanout.py — the python-socketio peer of bench/run's fanout
workload: an AsyncServer with AsyncRedisManager (FANOUT_REDIS), every
client in the default namespace; POST /publish emits event "msg" with the
body to all (through Redis, to every process). Run: uvicorn socketio_fanout:app"""
import os

import socketio

sio = socketio.AsyncServer(async_mode="asgi", client_manager=socketio.AsyncRedisManager(os.environ["FANOUT_REDIS"]),
                           cors_allowed_origins="*")


async def publish(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    await sio.emit("msg", body.decode())
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


app = socketio.ASGIApp(sio, other_asgi_app=publish)
