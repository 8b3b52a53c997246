"""A FastAPI 0.92 application written the usual way (pydantic models, path
and query parameters, validation errors, StreamingResponse, FileResponse,
BackgroundTasks, startup events, a WebSocket), served under uvicorn and
spindle by tests/integration/test_asgi_frameworks.py."""
import asyncio
import hashlib
from typing import List, Optional

from fastapi import BackgroundTasks, FastAPI, File, Form, Header, HTTPException, Query, Request, UploadFile, WebSocket
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.websockets import WebSocketDisconnect
from pydantic import BaseModel, Field

import common

events = common.Events()
app = FastAPI(title="spindle test app")


class Item(BaseModel):
    name: str = Field(..., min_length=1)
    price: float = Field(..., gt=0)
    tags: List[str] = []
    note: Optional[str] = None


@app.on_event("startup")
async def startup():
    app.state.started = "fastapi up"
    events.add("startup")


@app.get("/", response_class=PlainTextResponse)
async def home():
    return "Hello from FastAPI"


@app.get("/items/{item_id}")
async def read_item(item_id: int, q: Optional[str] = None, limit: int = Query(10, le=100),
                    x_token: Optional[str] = Header(None)):
    return {"item_id": item_id, "q": q, "limit": limit, "x_token": x_token}


@app.post("/items", status_code=201)
async def create_item(item: Item):
    return {"created": item.dict(), "total": round(item.price * 1.2, 2)}


@app.get("/fail/{code}")
async def fail(code: int):
    raise HTTPException(status_code=code, detail="failed with %d" % code, headers={"X-Fail": str(code)})


@app.post("/upload")
async def upload(request: Request):
    digest, size = hashlib.sha256(), 0
    async for chunk in request.stream():
        digest.update(chunk)
        size += len(chunk)
    return {"size": size, "sha": digest.hexdigest()}


@app.post("/form-upload")
async def form_upload(note: str = Form(...), file: UploadFile = File(...)):
    data = await file.read()
    return {"note": note, "filename": file.filename, "type": file.content_type, "size": len(data),
            "sha": hashlib.sha256(data).hexdigest()}


@app.get("/stream")
async def stream(n: int = 10):
    async def gen():
        for i in range(n):
            yield b'{"row": %d}\n' % i
            await asyncio.sleep(0)
    return StreamingResponse(gen(), media_type="application/x-ndjson")


@app.get("/sse")
async def sse():
    async def gen():
        for i in range(4):
            yield "event: n\ndata: %d\n\n" % i
    return StreamingResponse(gen(), media_type="text/event-stream")


@app.get("/file")
async def file():
    return FileResponse(common.BLOB, filename="blob.bin")


@app.post("/background", status_code=202)
async def background(tag: str, tasks: BackgroundTasks):
    tasks.add_task(events.add, "bg " + tag)
    return {"queued": tag}


@app.get("/state")
async def state(request: Request):
    return {"started": request.app.state.started, "events": events.snapshot()}


@app.exception_handler(Exception)
async def on_error(request: Request, exc: Exception):
    """The app's own 500 (Starlette's ServerErrorMiddleware sends it, then
    re-raises for the server to log)."""
    return JSONResponse({"error": type(exc).__name__, "path": request.url.path}, status_code=500)


@app.get("/boom")
async def boom():
    raise ValueError("boom on purpose")


@app.websocket("/ws")
async def ws_echo(ws: WebSocket):
    await ws.accept(subprotocol="chat.v2" if "chat.v2" in ws.scope.get("subprotocols", []) else None)
    try:
        while True:
            data = await ws.receive_json()
            if data.get("close"):
                await ws.close(code=data["close"], reason="asked")
                return
            await ws.send_json({"echo": data})
    except WebSocketDisconnect as e:
        events.add("ws disconnect %s" % e.code)


@app.websocket("/ws-reject")
async def ws_reject(ws: WebSocket):
    await ws.close(code=1008)
