"""An ASGI app for tests/integration/test_asgi_ext.py: the extensions
spindle declares (scope echoes them), and one route per message they add:
early hints (before and after the start, refused ones, too late), trailers
(several messages, a refused name, none sent), zero-copy send (whole file,
offset/count, from the file's position, mixed with bodies) and the tls
scope extension."""
import json
import os

BLOB = os.environ.get("EXT_BLOB", "/dev/null")


async def start(send, headers=(), trailers=False):
    await send({"type": "http.response.start", "status": 200, "trailers": trailers,
                "headers": [(b"content-type", b"text/plain")] + list(headers)})


async def body(send, data, more=False):
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def refused(send, msg):
    try:
        await send(msg)
    except RuntimeError as e:
        return str(e)
    return "accepted"


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            await send({"type": m["type"] + ".complete"})
            if m["type"] == "lifespan.shutdown":
                return
    if scope["type"] == "websocket":  # the extensions a WebSocket scope declares
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        ext = scope["extensions"]
        await send({"type": "websocket.send", "text": json.dumps(
            {"keys": sorted(ext), "tls_version": ext.get("tls", {}).get("tls_version")})})
        await send({"type": "websocket.close", "code": 1000})
        return
    path = scope["path"]
    q = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p)
    ext = scope["extensions"]
    if path == "/ext":
        tls = ext.get("tls")
        out = {"keys": sorted(ext), "tls": tls}
        await start(send)
        await body(send, json.dumps(out).encode())
    elif path == "/hints":
        hint = {"type": "http.response.early_hint",
                "links": [b"</style.css>; rel=preload; as=style", b" </app.js>; rel=preload "]}
        await send(hint)  # before the start
        bad = await refused(send, {"type": "http.response.early_hint",
                                   "links": [b"</x>\r\nSet-Cookie: evil=1"]})
        await start(send)
        await send({"type": "http.response.early_hint", "links": [b"</late-but-ok.css>"]})
        await body(send, b"first ", more=True)
        late = await refused(send, hint)
        await body(send, json.dumps({"bad": bad, "late": late}).encode())
    elif path == "/trailers":
        await start(send, headers=[(b"trailer", b"x-checksum, grpc-status"),
                                   (b"content-length", b"9")], trailers=True)
        await body(send, b"part one ", more=True)
        await body(send, b"")
        bad = await refused(send, {"type": "http.response.trailers",
                                   "headers": [(b"content-length", b"1")], "more_trailers": True})
        await send({"type": "http.response.trailers", "headers": [(b"x-checksum", b"abc")],
                    "more_trailers": True})
        await send({"type": "http.response.trailers",
                    "headers": [(b"grpc-status", b"0"), (b"x-bad-was", bad[:40].encode())]})
    elif path == "/trailers-none":  # trailers announced, the app returns without them
        await start(send, trailers=True)
        await body(send, b"no trailers came")
    elif path == "/zerocopy":
        mode = q.get("mode", "whole")
        with open(BLOB, "rb") as f:
            if mode == "whole":
                await start(send)
                await send({"type": "http.response.zerocopysend", "file": f})
            elif mode == "range":
                await start(send)
                await send({"type": "http.response.zerocopysend", "file": f.fileno(),
                            "offset": 10, "count": 20})
            elif mode == "position":  # from the file's position, which moves on
                f.seek(100)
                await start(send)
                await send({"type": "http.response.zerocopysend", "file": f, "count": 5,
                            "more_body": True})
                await send({"type": "http.response.zerocopysend", "file": f, "count": 5,
                            "more_body": True})
                await body(send, b"|tell=%d" % f.tell())
            elif mode == "past":
                await start(send)
                why = await refused(send, {"type": "http.response.zerocopysend", "file": f,
                                           "offset": 1 << 30, "count": 1})
                await body(send, why.encode())
    elif path == "/pathsend":
        await start(send)
        await send({"type": "http.response.pathsend", "path": BLOB})
    elif path == "/peer/hints":  # what hypercorn also serves: a hint before the start
        await send({"type": "http.response.early_hint",
                    "links": [b"</style.css>; rel=preload; as=style"]})
        await start(send)
        await body(send, b"answer")
    elif path == "/peer/trailers":
        await start(send, trailers=True)
        await body(send, b"answer")
        await send({"type": "http.response.trailers", "headers": [(b"grpc-status", b"0")]})
    else:
        await start(send)
        await body(send, b"?")
