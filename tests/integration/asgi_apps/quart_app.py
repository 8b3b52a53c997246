"""A Quart 0.18 application written the usual way (routes, before_serving
for the lifespan, streamed responses, send_file, background tasks, a
WebSocket), served under uvicorn and spindle by
tests/integration/test_asgi_frameworks.py."""
import asyncio
import hashlib

from quart import Quart, abort, jsonify, make_response, request, send_file, websocket

import common

events = common.Events()
app = Quart(__name__)


@app.before_serving
async def startup():
    app.config["STARTED"] = "quart up"
    events.add("startup")


@app.route("/")
async def home():
    return "Hello from Quart", 200, {"Content-Type": "text/plain; charset=utf-8"}


@app.route("/items/<int:item_id>")
async def item(item_id):
    return jsonify(id=item_id, q=request.args.getlist("q"), path=request.path,
                   host=request.host, scheme=request.scheme)


@app.route("/echo", methods=["POST"])
async def echo():
    data = await request.get_json()
    if data is None:
        abort(400)
    return jsonify(echo=data)


@app.route("/upload", methods=["POST", "PUT"])
async def upload():
    digest, size = hashlib.sha256(), 0
    async for chunk in request.body:
        digest.update(chunk)
        size += len(chunk)
    return jsonify(size=size, sha=digest.hexdigest())


@app.route("/form", methods=["POST"])
async def form():
    f = await request.form
    return jsonify({k: f.getlist(k) for k in f})


@app.route("/stream")
async def stream():
    n = int(request.args.get("n", "10"))

    async def gen():
        for i in range(n):
            yield b"line %d\n" % i
            await asyncio.sleep(0)
    return gen(), 200, {"Content-Type": "text/plain"}


@app.route("/sse")
async def sse():
    async def gen():
        for i in range(4):
            yield ("event: n\ndata: %d\n\n" % i).encode()
    r = await make_response(gen(), 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    r.timeout = None
    return r


@app.route("/endless")
async def endless():
    tag = request.args["tag"]

    async def gen():
        try:
            for i in range(100000):
                yield b"x" * 1024
                await asyncio.sleep(0.001)
            events.add("endless %s finished" % tag)
        finally:
            events.add("endless %s closed" % tag)
    r = await make_response(gen(), 200, {"Content-Type": "application/octet-stream"})
    r.timeout = None
    return r


@app.route("/file")
async def file():
    return await send_file(common.BLOB, mimetype="application/octet-stream", conditional=True)


@app.route("/background")
async def background():
    app.add_background_task(events.add, "bg " + request.args["tag"])
    return "queued"


@app.route("/state")
async def state():
    return jsonify(started=app.config["STARTED"], events=events.snapshot())


@app.route("/boom")
async def boom():
    raise RuntimeError("boom on purpose")


@app.route("/teapot")
async def teapot():
    abort(418)


@app.websocket("/ws")
async def ws_echo():
    offered = websocket.requested_subprotocols
    await websocket.accept(subprotocol="chat.v2" if "chat.v2" in offered else None)
    while True:
        msg = await websocket.receive()
        if isinstance(msg, str) and msg.startswith("close:"):
            code = int(msg.split(":")[1])
            await websocket.close(code, "bye %d" % code)
            return
        await websocket.send(("echo:" + msg) if isinstance(msg, str) else msg[::-1])


@app.websocket("/ws-reject")
async def ws_reject():
    abort(403)
