"""Slow ASGI apps for test_client_gone.py: they answer only after a pause
(or after the whole upload), so the client can leave first. A bare app and
the same routes on FastAPI."""
import asyncio


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/upload":
        more = True
        while more:  # the app works on each chunk; the client goes meanwhile
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            more = msg.get("more_body", False)
            await asyncio.sleep(0.6)
    else:
        await asyncio.sleep(0.6)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"late\n"})


try:
    from fastapi import FastAPI, Request
    from fastapi.responses import PlainTextResponse

    fast = FastAPI()

    @fast.get("/slow", response_class=PlainTextResponse)
    async def slow():
        await asyncio.sleep(0.6)
        return "late\n"

    @fast.post("/upload", response_class=PlainTextResponse)
    async def upload(request: Request):
        n = 0
        async for chunk in request.stream():
            n += len(chunk)
            await asyncio.sleep(0.6)  # the client goes meanwhile
        return "%d\n" % n
except ImportError:  # FastAPI is optional: its test is skipped
    fast = None
