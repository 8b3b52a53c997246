"""asgi_fanout.py — the spindle ASGI app of bench/run's fanout workload: a
WebSocket at /ws subscribes to topic "fanout" (spindle.asubscribe) and
forwards every message; POST /publish publishes its body (spindle.apublish).
Run: python -m spindle --bus redis://HOST:PORT asgi_fanout:app"""
import errno

import spindle


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            await send({"type": m["type"] + ".complete"})
            if m["type"] == "lifespan.shutdown":
                return
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        sub = await spindle.asubscribe("fanout")  # before the accept: see app_fanout.c
        await send({"type": "websocket.accept"})
        try:
            async for m in sub:
                await send({"type": "websocket.send", "text": m.data.decode()})
        except spindle.BusError as e:  # ECONNRESET: the client hung up; EPIPE: cut for being slow
            if e.errno not in (errno.ECONNRESET, errno.EPIPE):
                raise
        except OSError:  # a send to a client that is gone
            pass
        finally:
            sub.close()
        return
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    try:
        out, status = (await spindle.apublish("fanout", body)).encode(), 200
    except spindle.BusError as e:
        out, status = str(e).encode(), 503
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(out))]})
    await send({"type": "http.response.body", "body": out})
