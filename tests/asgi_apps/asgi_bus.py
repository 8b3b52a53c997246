"""The bus from ASGI (tests/integration/test_py_bus.py), the routes of
tests/wsgi_apps/bus_app.py: POST /pub, GET /sub long poll, /iter (async
for), /leak and /leak_waiting (subscriptions left open when the app
returns), /stats (the worker's subscriber count), /sync (the WSGI call
from the event loop: an error)."""
import asyncio
import json
import os
import urllib.parse

import spindle
from spindle import _spindle

KEPT = []
TASKS = set()


async def read_body(receive):
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            return body


async def reply(send, status, body, headers=()):
    if isinstance(body, str):
        body = body.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain")] +
                [(k.encode(), v.encode()) for k, v in headers]})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    q = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
    topic = q.get("topic", "t")
    if path == "/pub":
        body = await read_body(receive)
        try:
            return await reply(send, 200, await spindle.apublish(topic, body))
        except spindle.BusError as e:
            return await reply(send, 503, "publish failed: errno %d: %s" % (e.errno, e.strerror))
    if path == "/sub":
        timeout = float(q.get("timeout", "5"))
        lines, timed_out = [], 0
        async with await spindle.asubscribe(topic, q.get("since")) as sub:
            for _ in range(int(q.get("n", "1"))):
                try:
                    m = await sub.recv(timeout)
                except spindle.BusError as e:  # the client hung up (ECONNRESET)
                    lines.append("error %d\n" % e.errno)
                    break
                if m is None:
                    timed_out = 1
                    break
                assert m.topic == topic and isinstance(m.data, bytes)
                lines.append("%s %s\n" % (m.id, m.data.decode()))
            last = sub.last_id
        return await reply(send, 200, "".join(lines),
                           [("x-bus-last", last), ("x-bus-timeout", str(timed_out)),
                            ("x-pid", str(os.getpid()))])
    if path == "/iter":
        out = []
        sub = await spindle.asubscribe(topic, q.get("since", "0"))
        async for m in sub:
            out.append(m.data.decode())
            if len(out) == int(q.get("n", "1")):
                break
        return await reply(send, 200, " ".join(out))
    if path == "/wait_for":  # a recv cancelled by asyncio.wait_for loses nothing
        sub = await spindle.asubscribe(topic, q.get("since"))
        try:
            await asyncio.wait_for(sub.recv(), 0.05)
            first = "early"
        except asyncio.TimeoutError:
            first = "cancelled"
        m = await sub.recv(5)
        return await reply(send, 200, "%s %s" % (first, m.data.decode() if m else None))
    if path == "/leak":
        sub = await spindle.asubscribe(topic)
        KEPT.append(sub)
        del KEPT[:-5]
        return await reply(send, 200, "left open")
    if path == "/leak_waiting":
        sub = await spindle.asubscribe(topic)

        async def wait():
            try:
                await sub.recv()
            except spindle.BusError:
                pass
        t = asyncio.get_running_loop().create_task(wait())
        TASKS.add(t)
        t.add_done_callback(TASKS.discard)
        await asyncio.sleep(0)
        return await reply(send, 200, "left waiting")
    if path == "/kept":
        return await reply(send, 200, json.dumps([s.closed for s in KEPT]))
    if path == "/stats":
        return await reply(send, 200, json.dumps(_spindle._bus_stats()))
    if path == "/sync":
        try:
            spindle.publish(topic, b"x")
            return await reply(send, 200, "no error")
        except RuntimeError as e:
            return await reply(send, 200, str(e))
    return await reply(send, 404, "no such path")
