"""A Starlette 1.x application written the usual way (routes, a lifespan
context manager, StreamingResponse, FileResponse, BackgroundTask, WebSocket),
served by tests/integration/test_asgi_frameworks.py under uvicorn and under
spindle. Also mounts raw.py's bare ASGI app at /raw (pathsend, pieces, 4 MiB)."""
import asyncio
import contextlib
import hashlib
import json

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import (FileResponse, JSONResponse, PlainTextResponse, RedirectResponse,
                                 Response, StreamingResponse)
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

import common
import raw

events = common.Events()


@contextlib.asynccontextmanager
async def lifespan(app):
    # Starlette 1.0 removed on_startup/on_shutdown: a lifespan is the way.
    app.state.started = "starlette up, pid-independent"
    events.add("startup")
    yield


async def home(request: Request):
    return PlainTextResponse("Hello from Starlette")


async def item(request: Request):
    return JSONResponse({"id": request.path_params["item_id"],
                         "q": request.query_params.getlist("q"),
                         "raw_query": request.url.query,
                         "path": request.url.path})


async def echo(request: Request):
    data = await request.json()
    return JSONResponse({"echo": data, "type": request.headers.get("content-type")},
                        headers={"X-Echo": "yes"})


async def upload(request: Request):
    digest, size, chunks = hashlib.sha256(), 0, 0
    async for chunk in request.stream():
        digest.update(chunk)
        size += len(chunk)
        chunks += bool(chunk)
    return JSONResponse({"size": size, "sha": digest.hexdigest(), "got_chunks": chunks > 0})


async def stream(request: Request):
    n = int(request.query_params.get("n", "10"))

    async def gen():
        for i in range(n):
            yield "line %d\n" % i
            await asyncio.sleep(0)
    return StreamingResponse(gen(), media_type="text/plain")


async def sse(request: Request):
    async def gen():
        for i in range(5):
            yield "id: %d\nevent: tick\ndata: %s\n\n" % (i, json.dumps({"n": i}))
    return StreamingResponse(gen(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


async def endless(request: Request):
    """Streams until the client goes; the generator's end is recorded."""
    tag = request.query_params["tag"]

    async def gen():
        try:
            for i in range(100000):
                yield b"x" * 1024
                await asyncio.sleep(0.001)
            events.add("endless %s finished" % tag)
        finally:
            events.add("endless %s closed" % tag)
    return StreamingResponse(gen(), media_type="application/octet-stream")


async def file(request: Request):
    return FileResponse(common.BLOB, media_type="application/octet-stream", filename="blob.bin")


async def background(request: Request):
    tag = request.query_params["tag"]
    return PlainTextResponse("queued", background=BackgroundTask(events.add, "bg " + tag))


async def state(request: Request):
    return JSONResponse({"started": request.app.state.started, "events": events.snapshot()})


async def headers(request: Request):
    r = PlainTextResponse("headers", status_code=201, headers={"X-One": "1", "X-Two": "two"})
    r.set_cookie("a", "1", path="/")
    r.set_cookie("b", "2", httponly=True)
    return r


async def scope_view(request: Request):
    s = request.scope
    return JSONResponse({"method": s["method"], "http_version": s["http_version"], "scheme": s["scheme"],
                         "path": s["path"], "raw_path": s["raw_path"].decode("latin-1"),
                         "query_string": s["query_string"].decode("latin-1"), "root_path": s["root_path"],
                         "client_host": s["client"][0], "server_host": s["server"][0],
                         "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in s["headers"]
                                     if k not in (b"user-agent",)]})


async def boom(request: Request):
    raise RuntimeError("boom on purpose")


async def redirect(request: Request):
    return RedirectResponse("/", status_code=302)


async def empty(request: Request):
    return Response(status_code=204)


async def ws_echo(ws: WebSocket):
    offered = ws.scope.get("subprotocols") or []
    await ws.accept(subprotocol="chat.v2" if "chat.v2" in offered else None,
                    headers=[(b"x-accepted-by", b"starlette")])
    try:
        while True:
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                events.add("ws disconnect %s" % msg.get("code"))
                return
            if msg.get("text") is not None:
                text = msg["text"]
                if text.startswith("close:"):
                    code = int(text.split(":")[1])
                    await ws.close(code=code, reason="bye %d" % code)
                    return
                await ws.send_text("echo:" + text)
            else:
                await ws.send_bytes(msg["bytes"][::-1])
    except WebSocketDisconnect:
        pass


async def ws_reject(ws: WebSocket):
    await ws.close(code=1008)


app = Starlette(routes=[
    Route("/", home),
    Route("/items/{item_id:int}", item),
    Route("/echo", echo, methods=["POST"]),
    Route("/upload", upload, methods=["POST", "PUT"]),
    Route("/stream", stream),
    Route("/sse", sse),
    Route("/endless", endless),
    Route("/file", file),
    Route("/background", background),
    Route("/state", state),
    Route("/headers", headers),
    Route("/scope/{rest:path}", scope_view, methods=["GET", "POST"]),
    Route("/boom", boom),
    Route("/redirect", redirect),
    Route("/empty", empty),
    WebSocketRoute("/ws", ws_echo),
    WebSocketRoute("/ws-reject", ws_reject),
    Mount("/raw", app=raw.app),
], lifespan=lifespan)
