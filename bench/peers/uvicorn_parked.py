"""bench/peers/uvicorn_parked.py — the Python peer of bench/run's parked
workload: the part of examples/chat's API that bench/parked_client.py uses,
as a plain ASGI app served by uvicorn with httptools, uvloop and websockets
(what `pip install uvicorn[standard]` gives), so that memory per parked
connection and the broadcast's delivery time are measured beside spindle's
on one machine. It replaces the node peer (node's http and npm's `ws`) and
does what that one did:
  GET /ws            a WebSocket: every announcement, as the chat sends it
  GET /poll?since=N  {"seq":S,"messages":[...]} after N, parked until there
                     is one (204 after --poll-ms)
  GET /stats         {"ws":..,"parked":..,"seq":..,"fanout_max_us":..}
and an {"seq","ts","type":"online","n"} announcement every --announce-ms,
sent to every WebSocket in turn and answering every parked poll.
  python uvicorn_parked.py --port P [--announce-ms N] [--poll-ms N]
No WebSocket pings and no permessage-deflate (the node peer had neither);
HTTP keep-alive 60 s, as node's keepAliveTimeout was."""
import argparse
import asyncio
import json
import time

RING = 256
ring = []          # [(seq, json)]
last_seq = 0
parked = []        # [(future, since, timer handle)]
sockets = set()    # the open WebSockets' send callables
fanout_max_us = 0
POLL_S = 25.0

JSON_HEAD = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


def answer_body(since):
    msgs = ",".join(j for s, j in ring if s > since)
    return ('{"seq":%d,"messages":[%s]}' % (last_seq, msgs)).encode()


async def post(fields):
    global last_seq, fanout_max_us
    last_seq += 1
    m = {"seq": last_seq, "ts": int(time.time() * 1000)}
    m.update(fields)
    text = json.dumps(m, separators=(",", ":"))
    ring.append((last_seq, text))
    if len(ring) > RING:
        del ring[0]
    t0 = time.perf_counter()
    msg = {"type": "websocket.send", "text": text}
    for send in list(sockets):
        try:
            await send(msg)
        except Exception:  # noqa: BLE001 -- gone meanwhile: its handler removes it
            sockets.discard(send)
    us = (time.perf_counter() - t0) * 1e6
    fanout_max_us = max(fanout_max_us, us)
    waiting = parked[:]
    del parked[:]
    for fut, since, timer in waiting:
        timer.cancel()
        if not fut.done():
            fut.set_result(True)


async def announcer(every_s):
    while True:
        await asyncio.sleep(every_s)
        await post({"type": "online", "n": len(sockets) + len(parked)})


async def send_json(send, status, body, head=JSON_HEAD):
    await send({"type": "http.response.start", "status": status,
                "headers": head + [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    kind = scope["type"]
    if kind == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                asyncio.get_running_loop().create_task(announcer(ARGS.announce_ms / 1000.0))
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    if kind == "websocket":
        await receive()  # websocket.connect
        if not path.startswith("/ws"):
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "websocket.accept"})
        sockets.add(send)
        try:
            while (await receive())["type"] != "websocket.disconnect":
                pass
        finally:
            sockets.discard(send)
        return
    if path == "/stats":
        body = json.dumps({"ws": len(sockets), "parked": len(parked), "seq": last_seq,
                           "fanout_max_us": round(fanout_max_us)}).encode()
        await send_json(send, 200, body, [(b"content-type", b"application/json")])
        return
    if path != "/poll":
        await send_json(send, 404, b"", [])
        return
    since = last_seq
    for kv in scope["query_string"].decode().split("&"):
        k, _, v = kv.partition("=")
        if k == "since" and v.lstrip("-").isdigit():
            since = int(v)
    if since < last_seq:
        await send_json(send, 200, answer_body(since))
        return
    # Parked until the next announcement (or the poll timeout). A client
    # that leaves meanwhile is answered into the void at the next one (at
    # most --announce-ms later), as a listener of http.disconnect per
    # request would cost every parked poll a task.
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    timer = loop.call_later(POLL_S, lambda: fut.done() or fut.set_result(False))
    entry = (fut, since, timer)
    parked.append(entry)
    if await fut:
        await send_json(send, 200, answer_body(since))
    else:
        try:
            parked.remove(entry)
        except ValueError:
            pass
        await send({"type": "http.response.start", "status": 204, "headers": [(b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b""})


def main():
    global ARGS, POLL_S
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--announce-ms", type=int, default=1000)
    ap.add_argument("--poll-ms", type=int, default=25000)
    ARGS = ap.parse_args()
    POLL_S = ARGS.poll_ms / 1000.0
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=ARGS.port, http="httptools", loop="uvloop", ws="websockets",
                lifespan="on", access_log=False, log_level="warning", timeout_keep_alive=60, backlog=4096,
                ws_ping_interval=None, ws_ping_timeout=None, ws_per_message_deflate=False)


ARGS = None
if __name__ == "__main__":
    main()
