"""A bare ASGI 3 application (no framework), mounted by starlette_app.py at
/raw: /raw/file answers with the http.response.pathsend extension when the
server offers it (spindle) and with body chunks otherwise (uvicorn 0.17), so
the comparison checks that both give the same bytes."""
import os

import common


async def app(scope, receive, send):
    assert scope["type"] == "http"
    path = scope["path"]
    if path.endswith("/file"):
        size = os.path.getsize(common.BLOB)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/octet-stream"),
                                (b"content-length", str(size).encode())]})
        if "http.response.pathsend" in scope.get("extensions", {}):
            await send({"type": "http.response.pathsend", "path": common.BLOB})
            return
        with open(common.BLOB, "rb") as f:
            while True:
                piece = f.read(65536)
                await send({"type": "http.response.body", "body": piece, "more_body": bool(piece)})
                if not piece:
                    return
    elif path.endswith("/big"):
        # 4 MiB in 64 KiB pieces: the client reads slower than this is
        # written, so send() must wait (backpressure) and lose nothing.
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/octet-stream")]})
        for i in range(64):
            await send({"type": "http.response.body", "body": bytes([i]) * 65536, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    elif path.endswith("/pieces"):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain"), (b"x-raw", b"1")]})
        for i in range(3):
            await send({"type": "http.response.body", "body": b"piece %d;" % i, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"no such raw path"})
