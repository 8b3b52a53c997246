"""A Litestar 2.x application written the usual way (route handlers, a
lifespan context manager, Stream and ServerSentEvent, File, BackgroundTask,
a multipart dataclass, WebSocket handlers), served under uvicorn and spindle
by tests/integration/test_asgi_frameworks.py."""
import asyncio
import contextlib
import dataclasses
import hashlib
from typing import Annotated, Any, Dict

from litestar import Litestar, MediaType, Request, Response, WebSocket, get, head, post, route, websocket
from litestar.background_tasks import BackgroundTask
from litestar.datastructures import Cookie, UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException, WebSocketDisconnect
from litestar.params import Body
from litestar.response import File, Redirect, ServerSentEvent, Stream
from litestar.response.sse import ServerSentEventMessage

import common

events = common.Events()


@contextlib.asynccontextmanager
async def lifespan(app: Litestar):
    app.state.started = "litestar up"
    events.add("startup")
    yield


@get("/", media_type=MediaType.TEXT)
async def home() -> str:
    return "Hello from Litestar"


@get("/items/{item_id:int}")
async def item(request: Request, item_id: int) -> Dict[str, Any]:
    return {"id": item_id, "q": request.query_params.getall("q", []),
            "raw_query": request.scope["query_string"].decode("latin-1"), "path": request.url.path}


@post("/echo", status_code=200)
async def echo(request: Request, data: Dict[str, Any]) -> Response:
    return Response({"echo": data, "type": request.headers.get("content-type")}, headers={"X-Echo": "yes"})


@route("/upload", http_method=["POST", "PUT"], status_code=200)
async def upload(request: Request) -> Dict[str, Any]:
    digest, size = hashlib.sha256(), 0
    async for chunk in request.stream():
        digest.update(chunk)
        size += len(chunk)
    return {"size": size, "sha": digest.hexdigest()}


@post("/form", status_code=200)
async def form(request: Request) -> Dict[str, Any]:
    f = await request.form()
    return {k: f.getall(k) for k in f}


@dataclasses.dataclass
class Upload:
    note: str
    file: UploadFile


@post("/form-upload", status_code=200)
async def form_upload(data: Annotated[Upload, Body(media_type=RequestEncodingType.MULTI_PART)]) -> Dict[str, Any]:
    content = await data.file.read()
    return {"note": data.note, "filename": data.file.filename, "type": data.file.content_type,
            "size": len(content), "sha": hashlib.sha256(content).hexdigest()}


@get("/stream")
async def stream(n: int = 10) -> Stream:
    async def gen():
        for i in range(n):
            yield "line %d\n" % i
            await asyncio.sleep(0)
    return Stream(gen(), media_type=MediaType.TEXT)


@get("/sse")
async def sse() -> ServerSentEvent:
    async def gen():
        for i in range(4):
            yield ServerSentEventMessage(data=str(i), event="n", id=i)
    return ServerSentEvent(gen())


@get("/endless")
async def endless(tag: str) -> Stream:
    """Streams until the client goes (Litestar cancels it on http.disconnect)."""
    async def gen():
        try:
            for i in range(100000):
                yield b"x" * 1024
                await asyncio.sleep(0.001)
            events.add("endless %s finished" % tag)
        finally:
            events.add("endless %s closed" % tag)
    return Stream(gen(), media_type="application/octet-stream")


@get("/file")
async def file() -> File:
    return File(common.BLOB, filename="blob.bin", media_type="application/octet-stream")


@head("/file")
async def file_head() -> File:
    """Litestar answers HEAD only where a handler says so (a File may)."""
    return File(common.BLOB, filename="blob.bin", media_type="application/octet-stream")


@get("/background")
async def background(tag: str) -> Response:
    return Response("queued", media_type=MediaType.TEXT, background=BackgroundTask(events.add, "bg " + tag))


@get("/state")
async def state(request: Request) -> Dict[str, Any]:
    return {"started": request.app.state.started, "events": events.snapshot()}


@get("/headers")
async def headers() -> Response:
    return Response("headers", status_code=201, media_type=MediaType.TEXT, headers={"X-One": "1", "X-Two": "two"},
                    cookies=[Cookie(key="a", value="1", path="/"), Cookie(key="b", value="2", httponly=True)])


@get("/boom")
async def boom() -> None:
    raise RuntimeError("boom on purpose")


@get("/teapot")
async def teapot() -> None:
    raise HTTPException(status_code=418, detail="I'm a teapot")


@get("/redirect")
async def redirect() -> Redirect:
    return Redirect("/", status_code=302)


@get("/empty", status_code=204)
async def empty() -> None:
    return None


@websocket("/ws")
async def ws_echo(socket: WebSocket) -> None:
    offered = socket.scope.get("subprotocols") or []
    await socket.accept(subprotocols="chat.v2" if "chat.v2" in offered else None,
                        headers=[(b"x-accepted-by", b"litestar")])
    try:
        while True:
            msg = await socket.receive()
            if msg["type"] == "websocket.disconnect":
                events.add("ws disconnect %s" % msg.get("code"))
                return
            if msg.get("text") is not None:
                text = msg["text"]
                if text.startswith("close:"):
                    code = int(text.split(":")[1])
                    await socket.close(code=code, reason="bye %d" % code)
                    return
                await socket.send_text("echo:" + text)
            else:
                await socket.send_bytes(msg["bytes"][::-1])
    except WebSocketDisconnect:
        pass


@websocket("/ws-reject")
async def ws_reject(socket: WebSocket) -> None:
    await socket.close(code=1008)


app = Litestar(route_handlers=[home, item, echo, upload, form, form_upload, stream, sse, endless, file, file_head,
                               background, state, headers, boom, teapot, redirect, empty, ws_echo, ws_reject],
               lifespan=[lifespan])
